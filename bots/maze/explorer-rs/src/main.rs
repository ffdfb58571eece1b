//! Example Maze (Code Keeper — The Hero) bot for matchfarm: it explores, fights with
//! the weapon that pays best against the monsters in range, picks up treasure and
//! leaves by the exit in time.
//!
//! Protocol (the farm's `stdio` transport, the original's text format):
//! - every turn the farm writes several lines on stdin:
//!   `x y health score chargesHammer chargesScythe chargesBow`, then the number `n` of
//!   visible entities, then `n` lines `ex ey etype evalue` (etype 0 exit, 1 obstacle,
//!   2 treasure, 3 potion, 4/5/6 hammer/scythe/bow chest, 7 box, 8 skeleton,
//!   9 gargoyle, 10 orc, 11 vampire; evalue is a monster's hp);
//! - the bot answers one line and flushes: `MOVE x y [message]` (one step towards a
//!   target cell; onto a monster it is a sword attack) or `ATTACK w x y [message]`
//!   (w: 0 sword, 1 hammer, 2 scythe, 3 bow);
//! - an invalid line or a late one (1 s for the first turn, 50 ms later) ends the game
//!   with score −10000; stderr is the bot's log;
//! - when stdin closes the game is over and the bot exits with status 0.
//!
//! The bot remembers every cell it has seen. Monsters only move when the hero is
//! within their view, which never exceeds the hero's, so what it remembers of monsters
//! out of sight is exact (but for the rare one that steps out of view).
//!
//! Each turn it picks a goal: the exit when time or health runs short; else the best,
//! by value over path cost, of treasure, a potion when hurt, a chest and the edge of
//! the known maze (only short detours once the exit is known); else the exit. Then it
//! scores every action one turn ahead, simulating the monsters' answer with the rules'
//! pathfinding: progress towards the goal (worth more the longer the bot has not set
//! foot on a new cell), items picked up, monsters killed or hurt (their score plus the
//! damage they will no longer deal), charges spent, the damage taken in the monster
//! phase and the damage threatened for the next turn. Ties are broken by a generator
//! seeded from `FARM_SEED` and `FARM_SEAT`.

use std::collections::BinaryHeap;
use std::io::{self, BufRead, Write};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const WIDTH: i32 = 16;
const HEIGHT: i32 = 12;
const CELLS: usize = (WIDTH * HEIGHT) as usize;
const MAX_TURNS: i32 = 150;
const FOV: i32 = 3;
const MAX_HP: i32 = 20;

const EXIT: i32 = 0;
const OBSTACLE: i32 = 1;
const TREASURE: i32 = 2;
const POTION: i32 = 3;
const BOX: i32 = 7;

/// Damage of the sword, hammer, scythe and bow.
const DAMAGE: [i32; 4] = [10, 6, 7, 8];

/// How much a step closer to the goal is worth, at first.
const PROGRESS: f64 = 3.0;
/// Every this many turns without setting foot on a new cell, progress is worth one
/// `PROGRESS` more: the bot grows bolder instead of dithering.
const BOLDNESS_TURNS: f64 = 6.0;
/// How much the damage threatened for next turn counts against the damage taken now.
const NEXT_TURN: f64 = 1.0;
/// A kill is worth the monster's score plus this much per point of its damage.
const KILL_PER_DAMAGE: f64 = 4.0;
/// Hurting without killing is worth this share of a kill, per share of its hp.
const PARTIAL: f64 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    Unknown,
    Open,
    Wall,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Monster {
    pos: (i32, i32),
    kind: i32,
    hp: i32,
}

impl Monster {
    /// (max hp, view, attack range, damage) of `Monster.java`.
    fn stats(self) -> (i32, i32, i32, i32) {
        match self.kind {
            8 => (6, 1, 1, 1),
            9 => (14, 2, 1, 2),
            10 => (8, 2, 2, 2),
            11 => (10, 3, 1, 3),
            _ => (1, 0, 0, 0),
        }
    }

    fn is_box(self) -> bool {
        self.kind == BOX
    }

    /// What killing it is worth: its score plus the damage it will not deal.
    fn kill_value(self) -> f64 {
        let (max_hp, _, _, damage) = self.stats();
        f64::from(max_hp) + KILL_PER_DAMAGE * f64::from(damage)
    }
}

/// One turn's input.
struct Input {
    hero: (i32, i32),
    hp: i32,
    /// Sword (unlimited), hammer, scythe, bow.
    charges: [i32; 4],
    /// `[x, y, etype, evalue]`.
    entities: Vec<[i32; 4]>,
}

/// A reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Move(i32, i32),
    Attack(usize, i32, i32),
}

fn in_maze((x, y): (i32, i32)) -> bool {
    (0..WIDTH).contains(&x) && (0..HEIGHT).contains(&y)
}

fn index((x, y): (i32, i32)) -> usize {
    (y * WIDTH + x) as usize
}

fn chebyshev(a: (i32, i32), b: (i32, i32)) -> i32 {
    (a.0 - b.0).abs().max((a.1 - b.1).abs())
}

fn manhattan(a: (i32, i32), b: (i32, i32)) -> i32 {
    (a.0 - b.0).abs() + (a.1 - b.1).abs()
}

fn neighbors((x, y): (i32, i32)) -> impl Iterator<Item = (i32, i32)> {
    [(x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)].into_iter().filter(|&pos| in_maze(pos))
}

/// The cells `weapon` hits when the hero at `hero` targets `target`, or `None` when
/// the target is not valid for it (the rules' weapon table).
fn weapon_cells(hero: (i32, i32), weapon: usize, target: (i32, i32)) -> Option<Vec<(i32, i32)>> {
    let (dx, dy) = (target.0 - hero.0, target.1 - hero.1);
    let (cheb, manh) = (chebyshev(hero, target), manhattan(hero, target));
    let valid = in_maze(target)
        && target != hero
        && match weapon {
            0 => manh <= 1,
            1 => cheb <= 1,
            2 => cheb <= 2 && manh != 3,
            _ => cheb <= 3,
        };
    if !valid {
        return None;
    }
    let (tx, ty) = target;
    let extra = match weapon {
        1 if dx == 0 => vec![(tx - 1, ty), (tx + 1, ty)],
        1 if dy == 0 => vec![(tx, ty - 1), (tx, ty + 1)],
        1 => vec![(tx, hero.1), (hero.0, ty)],
        2 if cheb == 1 => vec![(tx + dx, ty + dy)],
        2 => vec![(hero.0 + dx / 2, hero.1 + dy / 2)],
        _ => Vec::new(),
    };
    let mut cells = vec![target];
    cells.extend(extra.into_iter().filter(|&pos| in_maze(pos)));
    Some(cells)
}

/// Everything the bot has seen so far.
struct Memory {
    known: Vec<Known>,
    items: Vec<Option<i32>>,
    monsters: Vec<Monster>,
    /// Turns the hero has stood on each cell.
    visits: Vec<u32>,
    /// Turns in a row the bot has chosen to wait.
    waited: u32,
    /// Turns since the hero last entered a cell for the first time.
    since_new: u32,
    /// The hero's hp this turn.
    hp: i32,
    turn: i32,
}

impl Memory {
    fn new() -> Self {
        Memory {
            known: vec![Known::Unknown; CELLS],
            items: vec![None; CELLS],
            monsters: Vec::new(),
            visits: vec![0; CELLS],
            waited: 0,
            since_new: 0,
            hp: MAX_HP,
            turn: 0,
        }
    }

    fn update(&mut self, input: &Input) {
        self.turn += 1;
        self.hp = input.hp;
        if in_maze(input.hero) {
            self.since_new = if self.visits[index(input.hero)] == 0 { 0 } else { self.since_new + 1 };
            self.visits[index(input.hero)] += 1;
        }
        let seen = |pos: (i32, i32)| chebyshev(pos, input.hero) <= FOV;
        for y in 0..HEIGHT {
            for x in 0..WIDTH {
                if seen((x, y)) {
                    self.known[index((x, y))] = Known::Open;
                    self.items[index((x, y))] = None;
                }
            }
        }
        self.monsters.retain(|monster| !seen(monster.pos));
        for &[x, y, etype, value] in &input.entities {
            if !in_maze((x, y)) {
                continue;
            }
            match etype {
                OBSTACLE => self.known[index((x, y))] = Known::Wall,
                EXIT..=6 => self.items[index((x, y))] = Some(etype),
                _ => self.monsters.push(Monster { pos: (x, y), kind: etype, hp: value }),
            }
        }
    }

    fn monster_at(&self, pos: (i32, i32)) -> Option<Monster> {
        self.monsters.iter().copied().find(|monster| monster.pos == pos)
    }

    fn exit(&self) -> Option<(i32, i32)> {
        (0..CELLS).find(|&i| self.items[i] == Some(EXIT)).map(|i| ((i as i32) % WIDTH, (i as i32) / WIDTH))
    }

    /// Damage the monsters in range of `pos` deal each turn.
    fn threat(&self, pos: (i32, i32)) -> i32 {
        let in_range = |m: &&Monster| !m.is_box() && chebyshev(m.pos, pos) <= m.stats().2;
        self.monsters.iter().filter(in_range).map(|m| m.stats().3).sum()
    }

    /// The cost of entering `pos` on the way to somewhere: one step, plus the sword
    /// hits a monster there takes, plus the danger of standing there.
    fn enter_cost(&self, pos: (i32, i32)) -> f64 {
        let mut cost = 1.0;
        if let Some(monster) = self.monster_at(pos) {
            cost += f64::from((monster.hp + 9) / 10);
        }
        cost + 0.7 * f64::from(self.threat(pos))
    }

    /// Least costs from `from` to every cell over known open cells; `avoid` is never
    /// entered (the exit, when the bot is not leaving yet).
    fn costs_from(&self, from: (i32, i32), avoid: Option<(i32, i32)>) -> Vec<f64> {
        let mut cost = vec![f64::INFINITY; CELLS];
        cost[index(from)] = 0.0;
        let mut heap = BinaryHeap::new();
        heap.push(Entry(0.0, from));
        while let Some(Entry(at_cost, pos)) = heap.pop() {
            if at_cost > cost[index(pos)] {
                continue;
            }
            for next in neighbors(pos) {
                if self.known[index(next)] != Known::Open || Some(next) == avoid {
                    continue;
                }
                let next_cost = at_cost + self.enter_cost(next);
                if next_cost < cost[index(next)] {
                    cost[index(next)] = next_cost;
                    heap.push(Entry(next_cost, next));
                }
            }
        }
        cost
    }

    /// Least costs from every cell to `goal` (the cost of entering each cell on the
    /// way, the goal's included).
    fn costs_to(&self, goal: (i32, i32), avoid: Option<(i32, i32)>) -> Vec<f64> {
        let mut cost = vec![f64::INFINITY; CELLS];
        cost[index(goal)] = 0.0;
        let mut heap = BinaryHeap::new();
        heap.push(Entry(0.0, goal));
        while let Some(Entry(at_cost, pos)) = heap.pop() {
            if at_cost > cost[index(pos)] {
                continue;
            }
            let step = self.enter_cost(pos);
            for next in neighbors(pos) {
                if self.known[index(next)] != Known::Open || Some(next) == avoid {
                    continue;
                }
                if at_cost + step < cost[index(next)] {
                    cost[index(next)] = at_cost + step;
                    heap.push(Entry(at_cost + step, next));
                }
            }
        }
        cost
    }

    fn is_frontier(&self, pos: (i32, i32)) -> bool {
        self.known[index(pos)] == Known::Open && neighbors(pos).any(|n| self.known[index(n)] == Known::Unknown)
    }
}

/// A Dijkstra queue entry, smallest cost first.
#[derive(PartialEq)]
struct Entry(f64, (i32, i32));

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.0.total_cmp(&self.0).then_with(|| other.1.cmp(&self.1))
    }
}

/// Where the bot is heading and why.
struct Goal {
    cell: (i32, i32),
    why: &'static str,
}

fn choose_goal(memory: &Memory, input: &Input) -> Option<Goal> {
    let hero = input.hero;
    let hp = input.hp;
    let exit = memory.exit();
    let left = f64::from(MAX_TURNS - memory.turn + 1);
    // Paths to anything but the exit go around it: stepping on it ends the game.
    let from_hero = memory.costs_from(hero, exit);
    let exit_cost = exit.map(|cell| memory.costs_from(hero, None)[index(cell)]).filter(|cost| cost.is_finite());
    let leave = exit.map(|cell| Goal { cell, why: "leaving" });
    if let Some(cost) = exit_cost
        && (left <= cost + 12.0 || hp <= 8)
    {
        return leave;
    }
    // Once the exit is known, only short detours are worth the risk of never using it.
    let known = exit_cost.is_some();
    let mut best: Option<(f64, Goal)> = None;
    let mut consider = |cell: (i32, i32), value: f64, reach: f64, why: &'static str| {
        let cost = from_hero[index(cell)];
        if !cost.is_finite() || cell == hero || cost > reach {
            return;
        }
        if let Some(to_exit) = exit_cost
            && left <= cost + to_exit + 20.0
        {
            return;
        }
        let utility = value / (cost + 4.0);
        if best.as_ref().is_none_or(|(u, _)| utility > *u) {
            best = Some((utility, Goal { cell, why }));
        }
    };
    for i in 0..CELLS {
        let cell = ((i as i32) % WIDTH, (i as i32) / WIDTH);
        match memory.items[i] {
            Some(TREASURE) if hp >= 8 => consider(cell, 100.0, if known { 6.0 } else { 10.0 }, "treasure"),
            Some(POTION) if hp <= 12 => consider(cell, f64::from(MAX_HP - hp) * 6.0, 12.0, "potion"),
            Some(4..=6) => consider(cell, 20.0, if known { 3.0 } else { 6.0 }, "chest"),
            _ => {}
        }
        if !known && memory.is_frontier(cell) {
            consider(cell, 80.0, f64::INFINITY, "exploring");
        }
    }
    best.map(|(_, goal)| goal).or(leave)
}

/// The cost of taking `damage` with `hp` left: ruinous if it kills.
fn hurt(damage: i32, hp: i32) -> f64 {
    if damage <= 0 {
        return 0.0;
    }
    let left = hp - damage;
    if left <= 0 { 1e6 } else { f64::from(damage) * (2.0 + 12.0 / f64::from(left)) }
}

/// The step a monster takes towards the hero, as the rules' `monsterPathfinding`: BFS
/// in the order x − 1, x + 1, y − 1, y + 1, within its view of its own cell, around
/// walls (and cells never seen) and the other monsters.
fn monster_step(memory: &Memory, monster: &Monster, hero: (i32, i32), monsters: &[Monster]) -> (i32, i32) {
    let (_, view, _, _) = monster.stats();
    let from = monster.pos;
    let free = |pos: (i32, i32)| {
        memory.known[index(pos)] == Known::Open
            && chebyshev(pos, from) <= view
            && !monsters.iter().any(|other| other.pos == pos)
    };
    let mut first = vec![None; CELLS];
    let mut visited = [false; CELLS];
    visited[index(from)] = true;
    let mut queue = std::collections::VecDeque::new();
    for next in neighbors(from).filter(|&n| free(n)) {
        visited[index(next)] = true;
        first[index(next)] = Some(next);
        queue.push_back(next);
    }
    let (mut best, mut best_distance) = (from, manhattan(from, hero));
    while let Some(pos) = queue.pop_front() {
        let step = first[index(pos)].unwrap_or(from);
        if pos == hero {
            return if step == hero { from } else { step };
        }
        if manhattan(pos, hero) < best_distance {
            (best, best_distance) = (step, manhattan(pos, hero));
        }
        for next in neighbors(pos) {
            if !visited[index(next)] && free(next) {
                visited[index(next)] = true;
                first[index(next)] = Some(step);
                queue.push_back(next);
            }
        }
    }
    best
}

/// The monster phase after the hero's action: the damage dealt and where the
/// monsters end up (in a fixed order; the real one is random).
fn monster_phase(memory: &Memory, hero: (i32, i32), mut monsters: Vec<Monster>) -> (i32, Vec<Monster>) {
    let mut damage = 0;
    for i in 0..monsters.len() {
        let monster = monsters[i];
        let (_, view, range, dmg) = monster.stats();
        let distance = chebyshev(monster.pos, hero);
        if distance <= range {
            damage += dmg;
        } else if distance <= view {
            monsters[i].pos = monster_step(memory, &monster, hero, &monsters);
        }
    }
    (damage, monsters)
}

/// Whether one attack next turn can kill `monster` from `hero`.
fn killable(monster: &Monster, hero: (i32, i32), charges: &[i32; 4]) -> bool {
    (0..4).any(|weapon| {
        charges[weapon] > 0 && monster.hp <= DAMAGE[weapon] && weapon_cells(hero, weapon, monster.pos).is_some()
    })
}

/// Damage the monsters will deal next turn from where they stand, less the worst one
/// the hero can kill first.
fn next_threat(hero: (i32, i32), monsters: &[Monster], charges: &[i32; 4]) -> i32 {
    let mut total = 0;
    let mut removable = 0;
    for monster in monsters.iter().filter(|m| !m.is_box()) {
        let (_, _, range, damage) = monster.stats();
        if chebyshev(monster.pos, hero) <= range {
            total += damage;
            if killable(monster, hero, charges) {
                removable = removable.max(damage);
            }
        }
    }
    total - removable
}

/// How the state after an action is valued: the damage taken in the monster phase and
/// the damage threatened for the next turn.
fn danger(memory: &Memory, input: &Input, hero: (i32, i32), monsters: Vec<Monster>, charges: &[i32; 4]) -> f64 {
    let (damage, after) = monster_phase(memory, hero, monsters);
    let now = hurt(damage, input.hp);
    now + NEXT_TURN * hurt(next_threat(hero, &after, charges), input.hp - damage)
}

fn decide(memory: &Memory, input: &Input, rng: &mut ChaCha8Rng) -> (Action, &'static str) {
    let hero = input.hero;
    let goal = choose_goal(memory, input);
    let leaving = goal.as_ref().is_some_and(|goal| goal.why == "leaving");
    let avoid = if leaving { None } else { memory.exit() };
    let to_goal = goal.as_ref().map(|goal| memory.costs_to(goal.cell, avoid));
    // Bolder the longer nothing new is reached.
    let boldness = PROGRESS * (1.0 + f64::from(memory.since_new) / BOLDNESS_TURNS);
    let progress = |pos: (i32, i32)| match &to_goal {
        Some(cost) if cost[index(hero)].is_finite() && cost[index(pos)].is_finite() => {
            boldness * (cost[index(hero)] - cost[index(pos)])
        }
        _ => 0.0,
    };
    let why = goal.as_ref().map_or("waiting", |goal| goal.why);
    // Only the monsters that can act this turn matter for the simulation.
    let near: Vec<Monster> = memory.monsters.iter().copied().filter(|m| chebyshev(m.pos, hero) <= FOV + 1).collect();
    let mut options: Vec<(f64, Action, &'static str)> = Vec::new();

    // Staying put.
    // Waiting is never a plan: it costs more with every turn spent waiting.
    let stalling = 8.0 + 6.0 * f64::from(memory.waited);
    let value = -stalling - danger(memory, input, hero, near.clone(), &input.charges);
    options.push((value, Action::Move(hero.0, hero.1), why));

    // Steps.
    for next in neighbors(hero) {
        if memory.known[index(next)] != Known::Open || memory.monster_at(next).is_some() {
            continue;
        }
        let mut value = progress(next) - f64::from(memory.visits[index(next)]).min(6.0);
        let mut charges = input.charges;
        match memory.items[index(next)] {
            Some(EXIT) => value += if leaving { 1e5 } else { -50.0 },
            Some(TREASURE) => value += 100.0,
            Some(POTION) => value += f64::from((MAX_HP - input.hp).min(10)) * 3.0 - 2.0,
            Some(kind @ 4..=6) => {
                value += 10.0;
                charges[(kind - 3) as usize] += 1;
            }
            _ => {}
        }
        if memory.items[index(next)] == Some(EXIT) {
            // The game ends on the exit: no monster phase.
            options.push((value, Action::Move(next.0, next.1), why));
            continue;
        }
        value -= danger(memory, input, next, near.clone(), &charges);
        options.push((value, Action::Move(next.0, next.1), why));
    }

    // Attacks that hit at least one monster.
    for weapon in 0..4 {
        if input.charges[weapon] <= 0 {
            continue;
        }
        let cost = if weapon == 0 { 0.0 } else { 4.0 + 8.0 / f64::from(input.charges[weapon]) };
        let mut charges = input.charges;
        charges[weapon] -= 1;
        for ty in hero.1 - 3..=hero.1 + 3 {
            for tx in hero.0 - 3..=hero.0 + 3 {
                let Some(cells) = weapon_cells(hero, weapon, (tx, ty)) else { continue };
                if !cells.iter().any(|&cell| memory.monster_at(cell).is_some()) {
                    continue;
                }
                let mut value = -cost;
                let mut after = Vec::with_capacity(near.len());
                for monster in &near {
                    if !cells.contains(&monster.pos) {
                        after.push(*monster);
                        continue;
                    }
                    let (max_hp, ..) = monster.stats();
                    let worth = monster.kill_value();
                    if monster.hp <= DAMAGE[weapon] {
                        value += worth;
                        // A monster or box in the way: clearing it is progress.
                        value += 0.5 * progress(monster.pos).max(0.0);
                    } else {
                        if !monster.is_box() {
                            value += PARTIAL * worth * f64::from(DAMAGE[weapon]) / f64::from(max_hp);
                        }
                        after.push(Monster { hp: monster.hp - DAMAGE[weapon], ..*monster });
                    }
                }
                value -= danger(memory, input, hero, after, &charges);
                options.push((value, Action::Attack(weapon, tx, ty), "fighting"));
            }
        }
    }

    let mut best = options[0];
    let mut best_score = f64::NEG_INFINITY;
    for option in options {
        let score = option.0 + rng.random_range(0.0..0.01);
        if score > best_score {
            (best, best_score) = (option, score);
        }
    }
    (best.1, best.2)
}

fn parse_numbers(line: &str) -> Result<Vec<i32>, String> {
    line.split_whitespace().map(|word| word.parse::<i32>().map_err(|e| format!("{word:?}: {e}"))).collect()
}

/// Reads one turn's lines; `Ok(None)` at the end of input.
fn read_input(lines: &mut impl Iterator<Item = io::Result<String>>) -> io::Result<Option<Result<Input, String>>> {
    let Some(head) = lines.next().transpose()? else { return Ok(None) };
    let Some(count) = lines.next().transpose()? else { return Ok(None) };
    let count: usize = match count.trim().parse() {
        Ok(count) => count,
        Err(error) => return Ok(Some(Err(format!("bad entity count {count:?}: {error}")))),
    };
    let mut entities = Vec::with_capacity(count);
    let mut problem = None;
    for _ in 0..count {
        let Some(line) = lines.next().transpose()? else { return Ok(None) };
        match parse_numbers(&line).as_deref() {
            Ok(&[x, y, etype, value]) => entities.push([x, y, etype, value]),
            _ => problem = Some(format!("bad entity line {line:?}")),
        }
    }
    let head = match parse_numbers(&head).as_deref() {
        Ok(&[x, y, hp, _score, hammer, scythe, bow]) => {
            Input { hero: (x, y), hp, charges: [i32::MAX, hammer, scythe, bow], entities }
        }
        _ => return Ok(Some(Err(format!("bad hero line {head:?}")))),
    };
    Ok(Some(problem.map_or(Ok(head), Err)))
}

fn reply(action: Action, why: &str) -> String {
    match action {
        Action::Move(x, y) => format!("MOVE {x} {y} {why}"),
        Action::Attack(weapon, x, y) => format!("ATTACK {weapon} {x} {y} {why}"),
    }
}

fn main() -> io::Result<()> {
    let mut rng = make_rng();
    let mut memory = Memory::new();
    let mut stdout = io::stdout().lock();
    let mut lines = io::stdin().lock().lines();
    let mut last_hero = (0, 0);
    while let Some(input) = read_input(&mut lines)? {
        let line = match input {
            Ok(input) => {
                memory.update(&input);
                last_hero = input.hero;
                let (action, why) = decide(&memory, &input, &mut rng);
                let waiting = action == Action::Move(input.hero.0, input.hero.1);
                memory.waited = if waiting { memory.waited + 1 } else { 0 };
                reply(action, why)
            }
            Err(problem) => {
                // Waiting is always a valid command.
                eprintln!("maze-explorer-bot: {problem}; waiting");
                reply(Action::Move(last_hero.0, last_hero.1), "confused")
            }
        };
        writeln!(stdout, "{line}")?;
        stdout.flush()?;
    }
    eprintln!("maze-explorer-bot: input closed after {} turns", memory.turn);
    Ok(())
}

/// A random generator seeded from the match seed and this bot's seat.
fn make_rng() -> ChaCha8Rng {
    let seed = env_u64("FARM_SEED");
    let seat = env_u64("FARM_SEAT");
    eprintln!("maze-explorer-bot: seed {seed}, seat {seat}");
    ChaCha8Rng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(seat))
}

/// Reads an unsigned integer from the environment; 0 if it is missing or unparsable.
fn env_u64(name: &str) -> u64 {
    std::env::var(name).ok().and_then(|value| value.trim().parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(text: &str) -> Input {
        let mut lines = text.lines().map(|line| Ok(line.to_owned()));
        read_input(&mut lines).expect("no io error").expect("a turn").expect("parses")
    }

    #[test]
    fn reads_the_spec_example_and_answers_validly() {
        let text = "11 11 20 0 5 5 5\n19\n8 8 8 6\n8 9 1 -1\n8 10 1 -1\n9 8 11 10\n9 9 1 -1\n9 10 1 -1\n\
                    10 10 1 -1\n10 11 2 100\n11 8 1 -1\n11 9 3 10\n11 10 1 -1\n12 9 7 1\n12 10 1 -1\n\
                    13 9 1 -1\n13 10 1 -1\n14 8 1 -1\n14 9 1 -1\n14 10 1 -1\n14 11 8 6";
        let input = input(text);
        assert_eq!(input.entities.len(), 19);
        let mut memory = Memory::new();
        memory.update(&input);
        let (action, _) = decide(&memory, &input, &mut ChaCha8Rng::seed_from_u64(1));
        // The treasure next door is worth more than anything else here.
        assert_eq!(action, Action::Move(10, 11));
    }

    #[test]
    fn a_skeleton_next_door_gets_the_sword() {
        let input = input("5 5 20 0 5 5 5\n1\n5 6 8 6");
        let mut memory = Memory::new();
        memory.update(&input);
        let (action, why) = decide(&memory, &input, &mut ChaCha8Rng::seed_from_u64(1));
        assert_eq!((action, why), (Action::Attack(0, 5, 6), "fighting"));
    }

    #[test]
    fn an_orc_two_cells_away_is_shot() {
        let input = input("5 5 20 0 5 5 5\n1\n7 7 10 8");
        let mut memory = Memory::new();
        memory.update(&input);
        let (action, _) = decide(&memory, &input, &mut ChaCha8Rng::seed_from_u64(1));
        assert_eq!(action, Action::Attack(3, 7, 7));
    }

    #[test]
    fn weapon_geometry_matches_the_rules() {
        assert_eq!(weapon_cells((5, 5), 1, (6, 6)), Some(vec![(6, 6), (6, 5), (5, 6)]));
        assert_eq!(weapon_cells((5, 5), 2, (7, 5)), Some(vec![(7, 5), (6, 5)]));
        assert_eq!(weapon_cells((5, 5), 2, (7, 6)), None);
        assert_eq!(weapon_cells((5, 5), 0, (6, 6)), None);
        assert_eq!(weapon_cells((5, 5), 3, (8, 2)), Some(vec![(8, 2)]));
    }
}
