//! `raider`: buys a weapon, breaks chests and vases, picks up gold and items, keeps
//! out of the corruption, and heads for a portal before the corruption closes in.
//! Adventurers without a portal of their own hand their gold to one that has one.
//!
//! It remembers what it has seen this round (map objects, gold, items), because the
//! game shows entities only while they are in sight.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use super::super::codec::{Entity, TeamView};
use super::super::map::{Dir, ObjectKind};
use super::super::rules::{OstibotRules, Slot};
use super::super::state::World;
use super::super::vision;
use super::{Order, reply};
use crate::game_bot::GameBot;
use crate::ostibot::Ostibot;
use crate::{Pos, Seat};

/// Below this hp an adventurer drinks a potion or looks for a health tile.
const LOW_HP: i64 = 50;
/// Turns of slack kept between reaching a portal and the corruption reaching it.
const ESCAPE_MARGIN: i64 = 5;
/// Path cost of stepping on spikes without immunity, in moves.
const SPIKE_COST: i64 = 6;
/// Path cost of a cell that is burning when the adventurer would stand on it.
const BURN_COST: i64 = 12;
/// Path cost of a cell a friend stands on: it will likely have moved on, and bumping
/// into it hands it our gold, which is no loss.
const FRIEND_COST: i64 = 4;
/// Value of looking at a cell never seen this round.
const EXPLORE_VALUE: f64 = 0.6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Door,
    Chest,
    Vase,
    Portal,
    Gold,
    Item,
}

/// Something seen this round and not yet seen gone.
#[derive(Debug, Clone, PartialEq)]
struct Known {
    kind: Kind,
    pos: Pos,
    hp: i64,
    open: bool,
    /// Gold amount, or an item's sell value.
    value: i64,
}

/// What the raider remembers between calls.
#[derive(Debug, Default)]
pub(crate) struct Raider {
    you: u64,
    round: u64,
    known: BTreeMap<String, Known>,
    seen: Vec<bool>,
}

/// The parts of a `play` call's `gameState` the raider reads.
struct StateIn<'a> {
    round: u64,
    turn: i64,
    width: i32,
    height: i32,
    /// The `map` rows, one byte a cell, row by row.
    terrain: Vec<u8>,
    corrupted: Vec<[i32; 2]>,
    entities: Vec<Entity<'a>>,
}

impl<'a> StateIn<'a> {
    fn new(view: &TeamView<'a>) -> Self {
        let world = view.world();
        StateIn {
            round: u64::from(view.round()),
            turn: i64::from(view.turn()),
            width: world.map().width,
            height: world.map().height,
            terrain: world.symbols.clone(),
            corrupted: world.corrupted_cells().into_iter().map(|pos| [pos.x, pos.y]).collect(),
            entities: view.entities(),
        }
    }
}

/// One of our adventurers.
#[derive(Debug, Clone)]
struct Mine {
    id: String,
    pos: Pos,
    hp: i64,
    gold: i64,
    damage: i64,
    immune: bool,
    vision: i64,
    /// (item id, item type)
    inventory: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
struct Enemy {
    pos: Pos,
    hp: i64,
    armor: i64,
}

/// Everything one `play` decision needs.
struct Board<'a> {
    width: i32,
    height: i32,
    terrain: Vec<u8>,
    turn: i64,
    rules: &'a OstibotRules,
    known: &'a BTreeMap<String, Known>,
    /// The first map object of `known` (in its order) on each cell.
    objects: Vec<Option<&'a Known>>,
    /// Whether an adventurer (ours or an enemy) stands on each cell.
    occupied: Vec<bool>,
    mine: Vec<Mine>,
    enemies: Vec<Enemy>,
    /// When each cell burns: the end of the turn it is corrupted at (i64::MAX: never).
    burn_at: Vec<i64>,
}

impl Board<'_> {
    fn index(&self, pos: Pos) -> Option<usize> {
        (pos.x >= 0 && pos.y >= 0 && pos.x < self.width && pos.y < self.height)
            .then(|| (pos.y * self.width + pos.x) as usize)
    }

    fn cell(&self, pos: Pos) -> u8 {
        self.index(pos).and_then(|index| self.terrain.get(index).copied()).unwrap_or(b'#')
    }

    fn walkable(&self, pos: Pos) -> bool {
        !matches!(self.cell(pos), b'#' | b'H' | b'1'..=b'9')
    }

    fn burn_at(&self, pos: Pos) -> i64 {
        self.index(pos).map_or(i64::MAX, |index| self.burn_at[index])
    }

    /// The first map object of `known` on `pos`.
    fn object_at(&self, pos: Pos) -> Option<&Known> {
        self.index(pos).and_then(|index| self.objects[index])
    }

    fn adventurer_at(&self, pos: Pos) -> bool {
        self.index(pos).is_some_and(|index| self.occupied[index])
    }

    /// Where a walk from `from` in `dir` ends (ice and treadmills included), and the
    /// spikes hit on the way; `None` for a move that does not walk.
    fn walk(&self, from: Pos, dir: Dir, immune: bool) -> Option<(Pos, i64, bool)> {
        let mut pos = dir.step(from);
        if !self.walkable(pos) || self.adventurer_at(pos) || self.object_at(pos).is_some() {
            return None;
        }
        let (mut spikes, mut dir) = (0, dir);
        for _ in 0..=64 {
            if self.cell(pos) == b'^' && !immune {
                spikes += 1;
            }
            dir = match self.cell(pos) {
                b'~' => dir,
                b'L' => Dir::Left,
                b'R' => Dir::Right,
                b'U' => Dir::Up,
                b'D' => Dir::Down,
                _ => return Some((pos, spikes, false)),
            };
            let next = dir.step(pos);
            if !self.walkable(next) || self.adventurer_at(next) {
                return Some((pos, spikes, false));
            }
            match self.object_at(next) {
                Some(portal) if portal.kind == Kind::Portal && portal.open => return Some((next, spikes, true)),
                Some(_) => return Some((pos, spikes, false)),
                None => pos = next,
            }
        }
        Some((pos, spikes, false))
    }

    /// Hits needed to break `known` with `damage`.
    fn hits(known: &Known, damage: i64) -> i64 {
        if known.open { 0 } else { (known.hp + damage.max(1) - 1) / damage.max(1) }
    }

    /// Cheapest paths from `me`: cost, moves and the first direction per cell. Doors,
    /// chests and vases are passable at the price of breaking them.
    fn paths(&self, me: &Mine) -> Paths {
        let cells = (self.width * self.height).max(0) as usize;
        let mut paths = Paths { cost: vec![i64::MAX; cells], moves: vec![0; cells], first: vec![None; cells] };
        let Some(start) = self.index(me.pos) else { return paths };
        paths.cost[start] = 0;
        let mut queue = BinaryHeap::new();
        queue.push(Reverse((0i64, start)));
        while let Some(Reverse((cost, index))) = queue.pop() {
            if cost > paths.cost[index] {
                continue;
            }
            let pos = Pos::new(index as i32 % self.width, index as i32 / self.width);
            for dir in Dir::ALL {
                let (to, extra) = match self.walk(pos, dir, me.immune) {
                    Some((_, _, true)) => continue,
                    Some((to, spikes, false)) => (to, spikes * SPIKE_COST),
                    None => {
                        let next = dir.step(pos);
                        let friend = self.mine.iter().any(|friend| friend.pos == next && friend.id != me.id);
                        if friend && self.walkable(next) && self.object_at(next).is_none() {
                            (next, FRIEND_COST)
                        } else {
                            match self.object_at(next) {
                                Some(object) if object.kind != Kind::Portal && !self.adventurer_at(next) => {
                                    (next, Self::hits(object, me.damage))
                                }
                                _ => continue,
                            }
                        }
                    }
                };
                let Some(to_index) = self.index(to) else { continue };
                let moves = paths.moves[index] + 1;
                let burning = self.burn_at(to) < self.turn + moves;
                let next_cost = cost + 1 + extra + if burning { BURN_COST } else { 0 };
                if next_cost < paths.cost[to_index] {
                    paths.cost[to_index] = next_cost;
                    paths.moves[to_index] = moves;
                    paths.first[to_index] = if index == start { Some(dir) } else { paths.first[index] };
                    queue.push(Reverse((next_cost, to_index)));
                }
            }
        }
        paths
    }
}

struct Paths {
    cost: Vec<i64>,
    moves: Vec<i64>,
    first: Vec<Option<Dir>>,
}

/// A way to do something to the thing at `target`: reach `stand`, then act in `dir`.
#[derive(Debug, Clone, Copy)]
struct Approach {
    cost: i64,
    /// The move to make now.
    now: Dir,
}

impl Paths {
    /// The cheapest way to stand next to `target` and then move into it.
    fn approach(&self, board: &Board<'_>, me: &Mine, target: Pos) -> Option<Approach> {
        let mut best: Option<Approach> = None;
        for dir in Dir::ALL {
            let (dx, dy) = dir.delta();
            let stand = Pos::new(target.x - dx, target.y - dy);
            let Some(index) = board.index(stand) else { continue };
            let cost = self.cost[index];
            if cost == i64::MAX {
                continue;
            }
            let now = if stand == me.pos { Some(dir) } else { self.first[index] };
            if let Some(now) = now
                && best.is_none_or(|best| cost < best.cost)
            {
                best = Some(Approach { cost, now });
            }
        }
        best
    }

    /// The cheapest way to stand on `target`.
    fn reach(&self, board: &Board<'_>, target: Pos) -> Option<Approach> {
        let index = board.index(target)?;
        let cost = self.cost[index];
        (cost != i64::MAX).then_some(())?;
        Some(Approach { cost, now: self.first[index]? })
    }
}

impl Raider {
    fn shop(&mut self, view: &TeamView<'_>) -> String {
        let bank = view.bank();
        let adventurers = view.own_adventurers();
        let armed = adventurers.iter().any(|adventurer| adventurer.equipment[0].is_some());
        if armed {
            return reply(view.seq(), &[]);
        }
        // One weapon for the first adventurer: the best one costing at most a quarter
        // of the bank, and a rusty sword at least when the bank allows.
        let budget = (bank / 4).max(bank.min(2));
        let weapon = view
            .rules()
            .items
            .iter()
            .filter(|(_, item)| item.slot == Slot::Weapon && item.cost <= budget)
            .max_by_key(|(name, item)| (item.damage, Reverse(item.cost), Reverse((*name).clone())));
        match (weapon, adventurers.first()) {
            (Some((name, _)), Some(first)) => {
                let id = format!("a{}", first.id);
                reply(view.seq(), &[Order::Buy { adventurer: &id, item_type: name }])
            }
            _ => reply(view.seq(), &[]),
        }
    }

    /// Updates the memory with what is in sight.
    fn remember(&mut self, state: &StateIn<'_>, world: &World, mine: &[Mine]) {
        let rules = &world.rules;
        if state.round != self.round || self.seen.len() != (state.width * state.height).max(0) as usize {
            self.round = state.round;
            self.known.clear();
            self.seen = vec![false; (state.width * state.height).max(0) as usize];
        }
        let terrain = &state.terrain;
        let wall = |pos: Pos| {
            pos.x < 0
                || pos.y < 0
                || pos.x >= state.width
                || pos.y >= state.height
                || terrain.get((pos.y * state.width + pos.x) as usize) == Some(&b'#')
        };
        // The doors remembered, by cell: sight asks about every cell of every line.
        let mut doors = vec![false; terrain.len()];
        for known in self.known.values().filter(|known| known.kind == Kind::Door) {
            if (0..state.width).contains(&known.pos.x) && (0..state.height).contains(&known.pos.y) {
                doors[(known.pos.y * state.width + known.pos.x) as usize] = true;
            }
        }
        let door = |pos: Pos| {
            (0..state.width).contains(&pos.x)
                && (0..state.height).contains(&pos.y)
                && doors[(pos.y * state.width + pos.x) as usize]
        };
        let mut viewers: Vec<(Pos, i64)> = mine.iter().map(|mine| (mine.pos, mine.vision)).collect();
        for (index, cell) in terrain.iter().enumerate() {
            if cell.is_ascii_digit() && u64::from(cell - b'0') == self.you {
                viewers.push((Pos::new(index as i32 % state.width, index as i32 / state.width), rules.vision_length));
            }
        }
        let visible = vision::visible_cells(state.width, state.height, &viewers, &|pos| wall(pos) || door(pos));
        for (seen, now) in self.seen.iter_mut().zip(&visible) {
            *seen |= *now;
        }
        let in_sight = |pos: Pos| {
            pos.x >= 0
                && pos.y >= 0
                && pos.x < state.width
                && pos.y < state.height
                && visible.get((pos.y * state.width + pos.x) as usize) == Some(&true)
        };
        self.known.retain(|_, known| !in_sight(known.pos));
        for entity in &state.entities {
            let (id, pos, kind, hp, open, value) = match *entity {
                Entity::Adventurer(_) => continue,
                Entity::Object(object) => {
                    let kind = match object.kind {
                        ObjectKind::Door => Kind::Door,
                        ObjectKind::Chest => Kind::Chest,
                        ObjectKind::Vase => Kind::Vase,
                        ObjectKind::Portal => Kind::Portal,
                    };
                    // The call shows `open` for portals only.
                    let open = object.kind == ObjectKind::Portal && object.open;
                    (format!("e{}", object.id), object.pos, kind, object.hp.max(0), open, 0)
                }
                Entity::Gold(pile) => (format!("g{}", pile.id), pile.pos, Kind::Gold, 0, false, pile.amount),
                Entity::Item(ground) => {
                    let name = world.item_type(ground.item);
                    let value = rules.items.get(name).map_or(0, |item| item.cost / 2);
                    (format!("i{}", ground.item.id), ground.pos, Kind::Item, 0, false, value)
                }
            };
            self.known.insert(id, Known { kind, pos, hp, open, value });
        }
    }

    fn play(&mut self, view: &TeamView<'_>) -> String {
        let world = view.world();
        let state = StateIn::new(view);
        let rules = view.rules();
        if state.width <= 0 || state.height <= 0 {
            return reply(view.seq(), &[]);
        }
        let mut mine = Vec::new();
        let mut enemies = Vec::new();
        for entity in &state.entities {
            let Entity::Adventurer(adventurer) = *entity else { continue };
            let pos = adventurer.pos;
            if adventurer.team == view.you() {
                let inventory = adventurer
                    .inventory
                    .iter()
                    .map(|item| (format!("i{}", item.id), world.item_type(*item).to_owned()))
                    .collect();
                mine.push(Mine {
                    id: format!("a{}", adventurer.id),
                    pos,
                    hp: adventurer.hp.max(0),
                    gold: adventurer.gold,
                    damage: world.damage(adventurer).max(1),
                    immune: world.spike_immune(adventurer),
                    vision: world.vision(adventurer),
                    inventory,
                });
            } else {
                let armor = adventurer.equipment[1]
                    .and_then(|item| rules.items.get(world.item_type(item)))
                    .map_or(0, |item| item.armor);
                enemies.push(Enemy { pos, hp: adventurer.hp.max(0), armor });
            }
        }
        self.you = u64::from(view.you());
        self.remember(&state, world, &mine);
        let board = Board {
            width: state.width,
            height: state.height,
            terrain: state.terrain.clone(),
            turn: state.turn,
            rules,
            known: &self.known,
            objects: Vec::new(),
            occupied: Vec::new(),
            mine,
            enemies,
            burn_at: Vec::new(),
        };
        let board = with_cells(board);
        let board = with_burn_times(board, &state.corrupted);
        let actions = decide(&board, &self.seen);
        let orders: Vec<Order<'_>> = actions
            .iter()
            .filter_map(|(k, action)| {
                let adventurer = board.mine[*k].id.as_str();
                match action {
                    Action::Move(dir) => Some(Order::Move { adventurer, dir: *dir }),
                    Action::Use(item) => Some(Order::Use { adventurer, item }),
                    Action::Idle => None,
                }
            })
            .collect();
        reply(view.seq(), &orders)
    }
}

/// Fills in what stands on each cell: the first map object of `known`, and whether an
/// adventurer does. The walks of a path search ask for every cell they try.
fn with_cells(mut board: Board<'_>) -> Board<'_> {
    let cells = (board.width * board.height).max(0) as usize;
    let mut occupied = vec![false; cells];
    for pos in board.mine.iter().map(|mine| mine.pos).chain(board.enemies.iter().map(|enemy| enemy.pos)) {
        if let Some(index) = board.index(pos) {
            occupied[index] = true;
        }
    }
    board.occupied = occupied;
    let mut objects = vec![None; cells];
    for known in board.known.values().filter(|known| !matches!(known.kind, Kind::Gold | Kind::Item)) {
        if let Some(index) = board.index(known.pos)
            && objects[index].is_none()
        {
            objects[index] = Some(known);
        }
    }
    board.objects = objects;
    board
}

/// Fills in when each cell burns: the corrupted set spreads every
/// `corruptionSpreadSpeed` turns; before corruption starts it will start at the spawners.
fn with_burn_times<'a>(mut board: Board<'a>, corrupted: &[[i32; 2]]) -> Board<'a> {
    let cells = (board.width * board.height).max(0) as usize;
    let start = i64::from(board.rules.corruption_start_at).max(1);
    let speed = i64::from(board.rules.corruption_spread_speed).max(1);
    let mut distance = vec![i64::MAX; cells];
    let mut queue = VecDeque::new();
    for [x, y] in corrupted {
        if let Some(index) = board.index(Pos::new(*x, *y)) {
            distance[index] = 0;
            queue.push_back(index);
        }
    }
    let started = !queue.is_empty();
    if !started {
        for (index, cell) in board.terrain.iter().enumerate().take(cells) {
            if cell.is_ascii_digit() {
                distance[index] = 0;
                queue.push_back(index);
            }
        }
    }
    while let Some(index) = queue.pop_front() {
        let pos = Pos::new(index as i32 % board.width, index as i32 / board.width);
        for dir in Dir::ALL {
            let next = dir.step(pos);
            if let Some(next_index) = board.index(next)
                && board.cell(next) != b'#'
                && distance[next_index] == i64::MAX
            {
                distance[next_index] = distance[index] + 1;
                queue.push_back(next_index);
            }
        }
    }
    // The first spread still to come: the end of a turn t ≥ now with t > start and
    // (t − start) divisible by the speed.
    let turn = board.turn;
    let first_spread = if turn <= start { start + speed } else { start + ((turn - start + speed - 1) / speed) * speed };
    board.burn_at = distance
        .iter()
        .map(|&d| match d {
            i64::MAX => i64::MAX,
            0 if started => i64::MIN / 2,
            0 => start,
            d if started => first_spread + (d - 1) * speed,
            d => start + d * speed,
        })
        .collect();
    board
}

/// What each adventurer does this turn, in the order of the reply: by index into
/// `board.mine`.
fn decide(board: &Board<'_>, seen: &[bool]) -> Vec<(usize, Action)> {
    let paths: Vec<Paths> = board.mine.iter().map(|me| board.paths(me)).collect();
    // Portals, each claimed by at most one adventurer: the richest pick first.
    let portals: Vec<&Known> = board.known.values().filter(|known| known.kind == Kind::Portal).collect();
    let mut by_wealth: Vec<usize> = (0..board.mine.len()).collect();
    by_wealth.sort_by_key(|&k| (Reverse(board.mine[k].gold), board.mine[k].id.clone()));
    let mut claim: Vec<Option<(Pos, Approach)>> = vec![None; board.mine.len()];
    let mut taken: Vec<Pos> = Vec::new();
    for &k in &by_wealth {
        let me = &board.mine[k];
        let best = portals
            .iter()
            .filter(|portal| !taken.contains(&portal.pos))
            .filter_map(|portal| {
                let approach = paths[k].approach(board, me, portal.pos)?;
                Some((approach.cost + Board::hits(portal, me.damage), portal.pos, approach))
            })
            .min_by_key(|(cost, pos, _)| (*cost, pos.y, pos.x));
        if let Some((_, pos, approach)) = best {
            taken.push(pos);
            claim[k] = Some((pos, approach));
        }
    }
    // A runner leaves when the corruption would otherwise beat it to its portal.
    let leaving: Vec<bool> = (0..board.mine.len())
        .map(|k| {
            let me = &board.mine[k];
            let Some((portal, approach)) = claim[k] else { return false };
            let hits = board.object_at(portal).map_or(0, |known| Board::hits(known, me.damage));
            let eta = board.turn + approach.cost + hits + ESCAPE_MARGIN;
            eta >= board.burn_at(portal) || eta >= board.burn_at(me.pos) + 4 || me.hp <= 30
        })
        .collect();
    let any_leaving = leaving.iter().any(|flag| *flag);

    let mut feeders = Vec::new();
    let mut runners = Vec::new();
    for k in 0..board.mine.len() {
        let entry = match act(board, seen, &paths, &claim, &leaving, any_leaving, k) {
            Action::Idle => continue,
            action => (k, action),
        };
        // Givers and helpers move before the runners, so gold handed over and a
        // portal opened this turn are there for the runner's own move.
        if claim[k].is_some() { runners.push(entry) } else { feeders.push(entry) }
    }
    feeders.extend(runners);
    feeders
}

enum Action {
    Move(Dir),
    Use(String),
    Idle,
}

fn act(
    board: &Board<'_>,
    seen: &[bool],
    paths: &[Paths],
    claim: &[Option<(Pos, Approach)>],
    leaving: &[bool],
    any_leaving: bool,
    k: usize,
) -> Action {
    let me = &board.mine[k];
    let path = &paths[k];
    // Drink when low.
    if me.hp <= LOW_HP {
        let potion = me
            .inventory
            .iter()
            .filter(|(_, kind)| board.rules.items.get(kind).is_some_and(|item| item.heal > 0))
            .min_by_key(|(_, kind)| board.rules.items.get(kind).map_or(0, |item| item.heal));
        if let Some((id, _)) = potion {
            return Action::Use(id.clone());
        }
    }
    // Equip a better weapon picked up on the way.
    let weapon_damage = me.damage - board.rules.adventurer_damage;
    if let Some((id, _)) = me.inventory.iter().find(|(_, kind)| {
        board.rules.items.get(kind).is_some_and(|item| item.slot == Slot::Weapon && item.damage > weapon_damage)
    }) {
        return Action::Use(id.clone());
    }
    // An enemy next to us that one or two hits kill, or that is much weaker: hit it.
    for dir in Dir::ALL {
        let next = dir.step(me.pos);
        if let Some(enemy) = board.enemies.iter().find(|enemy| enemy.pos == next) {
            let hit = (me.damage - enemy.armor).max(0);
            if hit > 0 && (enemy.hp <= 2 * hit || me.hp >= enemy.hp + 40) && !leaving[k] {
                return Action::Move(dir);
            }
        }
    }
    // The runner: to its portal, break it open, go through.
    if let Some((portal, approach)) = claim[k]
        && leaving[k]
    {
        let open = board.object_at(portal).is_some_and(|known| known.open);
        let adjacent = Dir::ALL.into_iter().find(|dir| dir.step(me.pos) == portal);
        let feeder_close = board.mine.iter().enumerate().any(|(other, friend)| {
            other != k
                && claim[other].is_none()
                && friend.gold > 0
                && (friend.pos.x - me.pos.x).abs() + (friend.pos.y - me.pos.y).abs() <= 3
        });
        return match adjacent {
            Some(_) if open && feeder_close && board.turn + 2 < board.burn_at(me.pos) => Action::Idle,
            Some(dir) => Action::Move(dir),
            None => Action::Move(approach.now),
        };
    }
    // Without a portal, once the others leave: hand the gold to the nearest runner,
    // then help break its portal.
    if claim[k].is_none() && any_leaving {
        let runner = (0..board.mine.len())
            .filter(|&other| claim[other].is_some())
            .filter_map(|other| Some((path.approach(board, me, board.mine[other].pos)?, other)))
            .min_by_key(|(approach, other)| (approach.cost, *other));
        if me.gold > 0
            && let Some((approach, _)) = runner
        {
            return Action::Move(approach.now);
        }
        if let Some((_, other)) = runner
            && let Some((portal, _)) = claim[other]
            && board.object_at(portal).is_some_and(|known| !known.open)
            && let Some(approach) = path.approach(board, me, portal)
        {
            return Action::Move(approach.now);
        }
    }
    // Loot: the best value per move of gold, items, chests and vases, a health tile
    // when hurt, and unseen cells.
    let mut best: Option<(f64, Dir)> = None;
    let consider = |best: &mut Option<(f64, Dir)>, value: f64, cost: i64, now: Dir| {
        let score = value / (cost as f64 + 1.0);
        if best.is_none_or(|(top, _)| score > top) {
            *best = Some((score, now));
        }
    };
    for known in board.known.values() {
        match known.kind {
            Kind::Gold | Kind::Item => {
                if let Some(approach) = path.reach(board, known.pos)
                    && board.burn_at(known.pos) > board.turn + approach.cost
                {
                    consider(&mut best, known.value.max(1) as f64, approach.cost, approach.now);
                }
            }
            Kind::Chest | Kind::Vase => {
                let gold = if known.kind == Kind::Chest { 12.0 } else { 3.0 };
                if let Some(approach) = path.approach(board, me, known.pos) {
                    consider(&mut best, gold, approach.cost + Board::hits(known, me.damage), approach.now);
                }
            }
            Kind::Door | Kind::Portal => {}
        }
    }
    if me.hp <= LOW_HP && me.gold >= board.rules.heal_cost {
        for (index, cell) in board.terrain.iter().enumerate() {
            if *cell == b'H'
                && let Some(approach) =
                    path.approach(board, me, Pos::new(index as i32 % board.width, index as i32 / board.width))
            {
                consider(&mut best, 8.0, approach.cost, approach.now);
            }
        }
    }
    if best.is_none() {
        for (index, cost) in path.cost.iter().enumerate() {
            if *cost != i64::MAX
                && !seen.get(index).copied().unwrap_or(true)
                && let Some(now) = path.first[index]
            {
                consider(&mut best, EXPLORE_VALUE, *cost, now);
            }
        }
    }
    if let Some((_, dir)) = best {
        return Action::Move(dir);
    }
    // Nothing left to do: go for the portal early, or step off a cell about to burn.
    if let Some((_, approach)) = claim[k] {
        return Action::Move(approach.now);
    }
    if board.burn_at(me.pos) <= board.turn + 1 {
        for dir in Dir::ALL {
            if let Some((to, _, false)) = board.walk(me.pos, dir, me.immune)
                && board.burn_at(to) > board.burn_at(me.pos)
            {
                return Action::Move(dir);
            }
        }
    }
    Action::Idle
}

impl GameBot<Ostibot> for Raider {
    fn reply(&mut self, game: &Ostibot, seat: Seat) -> String {
        let view = TeamView::new(game, seat);
        if view.is_shop() { self.shop(&view) } else { self.play(&view) }
    }
}
