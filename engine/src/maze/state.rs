//! The match state and how one step changes it: one copy of the maze per seat, each
//! with its hero, and the turn resolution, the pathfinding and the weapons' geometry
//! (`MazeManager`, `Hero`, `Action` of the original).

use serde::Serialize;

use super::codec::{Command, FrameLists, MazeAction, clip_reason, describe, push_int};
use super::map::{CELLS, Cell, HEIGHT, Item, MazeMap, MonsterKind, WIDTH, all_cells, chebyshev, neighbors};
use super::rules::{DEATH_SCORE, ERROR_SCORE, EXIT_SCORE, HERO_FOV, HERO_MAX_HP, MazeRules, POTION_HP, TREASURE_SCORE};
use crate::{GameRng, PlayerOutcome, PlayerStatus, Pos, Seat, ranks_by_score};

/// A Maze match: one [`Dungeon`] per seat, all from the same map and seed.
#[derive(Debug, Clone)]
pub struct Maze {
    pub(super) rules: MazeRules,
    pub(super) copies: Vec<Dungeon>,
    pub(super) steps: u64,
}

impl Maze {
    /// A match on `map` for `seats` bots. Every copy's monsters are shuffled by its own
    /// generator seeded from `seed`, so copies start out identical (decision M-5).
    pub fn from_map(rules: MazeRules, map: &MazeMap, seats: usize, seed: u64) -> Self {
        let copies =
            (0..seats).map(|_| Dungeon::new(map, rules.max_turns, GameRng::new(seed, GameRng::RULES))).collect();
        Maze { rules, copies, steps: 0 }
    }

    /// The copy of `seat`.
    pub fn dungeon(&self, seat: Seat) -> &Dungeon {
        &self.copies[seat]
    }

    /// The copy of `seat`, to set up test positions.
    pub fn dungeon_mut(&mut self, seat: Seat) -> &mut Dungeon {
        &mut self.copies[seat]
    }

    /// Steps played.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The seats whose copy is still going, in seat order.
    pub(super) fn to_act(&self) -> Vec<Seat> {
        (0..self.copies.len()).filter(|&seat| !self.copies[seat].is_over()).collect()
    }

    /// Plays one turn in every copy still going, with its seat's action.
    pub(super) fn play(&mut self, mut actions: Vec<(Seat, MazeAction)>) {
        if self.is_over() {
            return;
        }
        for (seat, copy) in self.copies.iter_mut().enumerate() {
            if copy.is_over() {
                continue;
            }
            // A seat given twice plays its last action; actions for no seat are ignored.
            let action = actions.iter().rposition(|(given, _)| *given == seat).map(|at| actions.remove(at).1);
            match action {
                Some(MazeAction::Command(command)) => copy.play(&command),
                Some(MazeAction::Fail { status, reason }) => copy.fail(status, &reason),
                // A seat that was asked must answer; no answer is a timeout.
                None => copy.fail(PlayerStatus::TimedOut, "no reply"),
            }
        }
        self.steps += 1;
    }

    /// Whether every copy has ended.
    pub(super) fn is_over(&self) -> bool {
        self.copies.iter().all(Dungeon::is_over)
    }

    /// Every seat's score, rank (by score) and status.
    pub(super) fn outcome(&self) -> Vec<PlayerOutcome> {
        let scores: Vec<i64> = self.copies.iter().map(|copy| copy.hero().score).collect();
        ranks_by_score(&scores)
            .into_iter()
            .zip(&self.copies)
            .map(|(rank, copy)| PlayerOutcome { score: copy.hero().score, rank, status: copy.status() })
            .collect()
    }
}

/// A weapon. Its index is the `w` of `ATTACK w x y`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Weapon {
    /// 10 damage to one cell at Manhattan distance 1; unlimited.
    Sword,
    /// 6 damage to three cells within Chebyshev 1.
    Hammer,
    /// 7 damage to two cells along a queen line within 2.
    Scythe,
    /// 8 damage to any one cell within Chebyshev 3.
    Bow,
}

impl Weapon {
    /// Every weapon, by index.
    pub const ALL: [Weapon; 4] = [Weapon::Sword, Weapon::Hammer, Weapon::Scythe, Weapon::Bow];

    /// The protocol's weapon number, 0 to 3.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The weapon with protocol number `index`.
    pub fn from_index(index: i64) -> Option<Weapon> {
        usize::try_from(index).ok().and_then(|index| Weapon::ALL.get(index)).copied()
    }

    /// Damage to every monster on a hit cell.
    pub fn damage(self) -> i32 {
        match self {
            Weapon::Sword => 10,
            Weapon::Hammer => 6,
            Weapon::Scythe => 7,
            Weapon::Bow => 8,
        }
    }

    /// Charges at the start (the sword's 99999 is as good as unlimited).
    pub fn initial_charges(self) -> u32 {
        match self {
            Weapon::Sword => 99_999,
            Weapon::Hammer | Weapon::Scythe | Weapon::Bow => 5,
        }
    }

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Weapon::Sword => "sword",
            Weapon::Hammer => "hammer",
            Weapon::Scythe => "scythe",
            Weapon::Bow => "bow",
        }
    }
}

/// A monster (or box) in the maze.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Monster {
    /// What it is.
    pub kind: MonsterKind,
    /// Where it stands.
    pub pos: Pos,
    /// Its hp; it is removed when this reaches 0.
    pub hp: i32,
}

/// The hero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hero {
    /// Where it stands.
    pub pos: Pos,
    /// Health, at most 20; the game ends at 0 or below.
    pub hp: i32,
    /// The score.
    pub score: i64,
    /// Charges by weapon index (the sword's 99999 is as good as unlimited).
    pub charges: [u32; 4],
}

/// How a copy's game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum End {
    /// The hero stepped onto the exit.
    Exit,
    /// The hero's hp reached 0.
    Died,
    /// The last allowed hero action was played.
    TurnLimit,
    /// The bot sent an invalid command, timed out or went away; the score is set to
    /// the error score.
    Error,
}

/// Why a valid command did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waste {
    /// The weapon has no charges left.
    NoCharges,
    /// The target is outside the weapon's range, or is the hero's own cell.
    OutOfRange,
}

/// What a command does in the current state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// The hero stays: `MOVE` to its own cell, towards an obstacle next to it, or with
    /// no step that gets closer.
    Wait,
    /// The hero steps onto this neighbouring cell.
    Step(Pos),
    /// The weapon hits these cells (a `MOVE` onto a monster is a sword attack).
    Attack {
        /// The weapon.
        weapon: Weapon,
        /// The cells hit, target first.
        cells: Vec<Pos>,
    },
    /// A turn without effect and without spending a charge.
    Wasted(Waste),
}

/// The cells `weapon` hits when the hero at `hero` targets `target`; `None` when the
/// target is not a valid one for the weapon (out of range, or the hero's own cell).
///
/// | weapon | valid target | cells hit |
/// |---|---|---|
/// | sword | Manhattan 1 | the target |
/// | hammer | Chebyshev 1 | the target, plus its two side cells across the line of attack for a straight target, or the two cells between the hero and a diagonal target |
/// | scythe | the 16 queen cells within 2 | the target plus the next cell on the line (Chebyshev 1) or the cell between (Chebyshev 2) |
/// | bow | Chebyshev 1 to 3 | the target |
///
/// Cells outside the maze are left out.
pub fn weapon_cells(hero: Pos, weapon: Weapon, target: Pos) -> Option<Vec<Pos>> {
    let (dx, dy) = (target.x - hero.x, target.y - hero.y);
    let (chebyshev, manhattan) = (chebyshev(hero, target), hero.manhattan(target));
    let valid = target.on_board(WIDTH, HEIGHT)
        && target != hero
        && match weapon {
            Weapon::Sword => manhattan <= 1,
            Weapon::Hammer => chebyshev <= 1,
            Weapon::Scythe => chebyshev <= 2 && manhattan != 3,
            Weapon::Bow => chebyshev <= 3,
        };
    if !valid {
        return None;
    }
    let (tx, ty) = (target.x, target.y);
    let extra: Vec<Pos> = match weapon {
        Weapon::Sword | Weapon::Bow => Vec::new(),
        Weapon::Hammer if dx == 0 => vec![Pos::new(tx - 1, ty), Pos::new(tx + 1, ty)],
        Weapon::Hammer if dy == 0 => vec![Pos::new(tx, ty - 1), Pos::new(tx, ty + 1)],
        Weapon::Hammer => vec![Pos::new(tx, hero.y), Pos::new(hero.x, ty)],
        Weapon::Scythe if chebyshev == 1 => vec![Pos::new(tx + dx, ty + dy)],
        Weapon::Scythe => vec![Pos::new(hero.x + dx / 2, hero.y + dy / 2)],
    };
    let mut cells = vec![target];
    cells.extend(extra.into_iter().filter(|pos| pos.on_board(WIDTH, HEIGHT)));
    Some(cells)
}

/// One copy of the maze and its hero.
#[derive(Debug, Clone)]
pub struct Dungeon {
    pub(super) obstacles: Vec<bool>,
    pub(super) items: Vec<Option<Item>>,
    /// Kept sorted by position, so that the shuffle starts from a fixed order.
    pub(super) monsters: Vec<Monster>,
    pub(super) hero: Hero,
    pub(super) turn: u32,
    max_turns: u32,
    pub(super) end: Option<End>,
    status: PlayerStatus,
    rng: GameRng,
    pub(super) last: String,
    /// The item and monster lists as replay frames hold them, kept up to date here.
    pub(super) lists: FrameLists,
}

impl Dungeon {
    /// A fresh copy of `map` whose monster shuffles draw from `rng`, ending after
    /// `max_turns` hero actions.
    pub fn new(map: &MazeMap, max_turns: u32, rng: GameRng) -> Self {
        let mut obstacles = vec![false; CELLS];
        let mut items = vec![None; CELLS];
        let mut monsters = Vec::with_capacity(CELLS);
        // Column by column, so that the monsters come sorted by position.
        for pos in all_cells() {
            let index = pos.index(WIDTH);
            match map.cells()[index] {
                Cell::Obstacle => obstacles[index] = true,
                Cell::Item(item) => items[index] = Some(item),
                Cell::Monster(kind) => monsters.push(Monster { kind, pos, hp: kind.max_hp() }),
                Cell::Floor | Cell::Hero => {}
            }
        }
        let lists = FrameLists::new(&items, &monsters);
        let hero =
            Hero { pos: map.start(), hp: HERO_MAX_HP, score: 0, charges: Weapon::ALL.map(Weapon::initial_charges) };
        Dungeon {
            obstacles,
            items,
            monsters,
            hero,
            turn: 0,
            max_turns,
            end: None,
            status: PlayerStatus::Ok,
            rng,
            last: String::new(),
            lists,
        }
    }

    /// The hero.
    pub fn hero(&self) -> &Hero {
        &self.hero
    }

    /// The hero, to set up test positions.
    pub fn hero_mut(&mut self) -> &mut Hero {
        &mut self.hero
    }

    /// The monsters, sorted by position.
    pub fn monsters(&self) -> &[Monster] {
        &self.monsters
    }

    /// The monster on `pos`, if any.
    pub fn monster_at(&self, pos: Pos) -> Option<&Monster> {
        self.monsters.iter().find(|monster| monster.pos == pos)
    }

    /// Puts a monster on `pos` (replacing any there), to set up test positions.
    pub fn place_monster(&mut self, kind: MonsterKind, pos: Pos, hp: i32) {
        self.monsters.retain(|monster| monster.pos != pos);
        self.monsters.push(Monster { kind, pos, hp });
        self.monsters.sort_by_key(|monster| monster.pos);
        self.lists.set_monsters(&self.monsters);
    }

    /// The item on `pos`, if any.
    pub fn item_at(&self, pos: Pos) -> Option<Item> {
        if pos.on_board(WIDTH, HEIGHT) { self.items[pos.index(WIDTH)] } else { None }
    }

    /// Whether `pos` is an obstacle (cells outside the maze are).
    pub fn is_obstacle(&self, pos: Pos) -> bool {
        !pos.on_board(WIDTH, HEIGHT) || self.obstacles[pos.index(WIDTH)]
    }

    /// Hero actions played.
    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// How the game ended, once it has.
    pub fn end(&self) -> Option<End> {
        self.end
    }

    /// Whether the game has ended.
    pub fn is_over(&self) -> bool {
        self.end.is_some()
    }

    /// How the bot played: `Ok` unless it erred, timed out or crashed.
    pub fn status(&self) -> PlayerStatus {
        self.status
    }

    /// What the last turn did, in words (for replays).
    pub fn last(&self) -> &str {
        &self.last
    }

    /// The first step of the hero's `MOVE` towards `target` (`heroPathfinding`).
    ///
    /// BFS from the hero over 4-neighbours in the order x − 1, x + 1, y − 1, y + 1,
    /// through cells within the hero's view that are not obstacles (monsters do not
    /// block). A target next to the hero is the step, even an obstacle. When the target
    /// is not reached, the step leads to the reached cell closest to it in Manhattan
    /// distance (the first found on a tie), or is the hero's own cell when none is
    /// closer than the hero.
    pub fn hero_step(&self, target: Pos) -> Pos {
        let from = self.hero.pos;
        if neighbors(from).any(|n| n == target) {
            return target;
        }
        // `MOVE` to the hero's own cell, a wait: no cell is closer to it than the hero,
        // so the search would end where it starts.
        if target == from {
            return from;
        }
        let in_view = |pos: Pos| chebyshev(pos, from) <= HERO_FOV;
        self.first_step(from, target, |pos| !self.is_obstacle(pos) && in_view(pos))
    }

    /// The step a monster takes towards the hero (`monsterPathfinding`).
    ///
    /// BFS from the monster over 4-neighbours in the order x − 1, x + 1, y − 1, y + 1,
    /// skipping obstacles, other monsters and cells farther than its view from it.
    /// When the hero's cell is reached, the first step of that path; otherwise the
    /// first step towards the reached cell closest to the hero in Manhattan distance
    /// (the first found on a tie) if it is strictly closer than the monster, else its
    /// own cell.
    pub fn monster_step(&self, monster: &Monster) -> Pos {
        self.monster_step_among(monster, &self.occupied())
    }

    /// The cells a monster stands on.
    fn occupied(&self) -> [bool; CELLS] {
        let mut occupied = [false; CELLS];
        for monster in &self.monsters {
            occupied[monster.pos.index(WIDTH)] = true;
        }
        occupied
    }

    /// [`Dungeon::monster_step`] with the monsters' cells given, so that a monster
    /// phase marks them once rather than searching the list at every cell of every
    /// search.
    fn monster_step_among(&self, monster: &Monster, occupied: &[bool; CELLS]) -> Pos {
        let from = monster.pos;
        let free = |pos: Pos| {
            !self.is_obstacle(pos) && chebyshev(pos, from) <= monster.kind.view() && !occupied[pos.index(WIDTH)]
        };
        let step = self.first_step(from, self.hero.pos, free);
        // The hero's cell is never a step: a monster next to the hero attacks instead.
        if step == self.hero.pos { from } else { step }
    }

    /// The shared BFS of both pathfindings.
    ///
    /// Its buffers are arrays on the stack: it runs for every monster that moves, every
    /// turn, where allocating them cost more than the search.
    fn first_step(&self, from: Pos, target: Pos, passable: impl Fn(Pos) -> bool) -> Pos {
        let mut first = [None; CELLS];
        let mut visited = [false; CELLS];
        visited[from.index(WIDTH)] = true;
        // Every cell enters the queue at most once.
        let mut queue = [from; CELLS];
        let (mut head, mut tail) = (0, 0);
        for next in neighbors(from).filter(|&n| passable(n)) {
            visited[next.index(WIDTH)] = true;
            first[next.index(WIDTH)] = Some(next);
            queue[tail] = next;
            tail += 1;
        }
        let (mut best, mut best_dist) = (from, from.manhattan(target));
        while head < tail {
            let pos = queue[head];
            head += 1;
            let step = first[pos.index(WIDTH)].unwrap_or(from);
            if pos == target {
                return step;
            }
            let dist = pos.manhattan(target);
            if dist < best_dist {
                (best, best_dist) = (step, dist);
            }
            for next in neighbors(pos) {
                if !visited[next.index(WIDTH)] && passable(next) {
                    visited[next.index(WIDTH)] = true;
                    first[next.index(WIDTH)] = Some(step);
                    queue[tail] = next;
                    tail += 1;
                }
            }
        }
        best
    }

    /// What `command` does in the current state (`Action.newMove` / `newAttack`).
    pub fn resolve(&self, command: &Command) -> Resolved {
        match *command {
            Command::Move { target, .. } => {
                let step = self.hero_step(target);
                if step == self.hero.pos {
                    Resolved::Wait
                } else if self.monster_at(step).is_some() {
                    Resolved::Attack { weapon: Weapon::Sword, cells: vec![step] }
                } else if self.is_obstacle(step) {
                    Resolved::Wait
                } else {
                    Resolved::Step(step)
                }
            }
            Command::Attack { weapon, target, .. } => {
                if self.hero.charges[weapon.index()] < 1 {
                    return Resolved::Wasted(Waste::NoCharges);
                }
                match weapon_cells(self.hero.pos, weapon, target) {
                    Some(cells) => Resolved::Attack { weapon, cells },
                    None => Resolved::Wasted(Waste::OutOfRange),
                }
            }
        }
    }

    /// Ends the game with the error score: an invalid command, a timeout or a crash.
    pub fn fail(&mut self, status: PlayerStatus, reason: &str) {
        if self.is_over() {
            return;
        }
        self.hero.score = ERROR_SCORE;
        self.status = status;
        self.end = Some(End::Error);
        // The reason quotes at most QUOTE_CHARS characters of the reply; this caps
        // anything else that might come in.
        self.last = format!("error: {}", clip_reason(reason));
    }

    /// Plays one turn: the hero's command, then (unless the game ended or this was the
    /// last allowed action) the monsters.
    pub fn play(&mut self, command: &Command) {
        if self.is_over() {
            return;
        }
        self.turn += 1;
        let resolved = self.resolve(command);
        describe(command, &resolved, &mut self.last);
        match resolved {
            Resolved::Wait | Resolved::Wasted(_) => {}
            Resolved::Step(pos) => {
                self.hero.pos = pos;
                if let Some(item) = self.items[pos.index(WIDTH)].take() {
                    self.lists.set_items(&self.items);
                    self.pick_up(item);
                    if item == Item::Exit {
                        self.end = Some(End::Exit);
                        return;
                    }
                }
            }
            Resolved::Attack { weapon, cells } => {
                let charges = &mut self.hero.charges[weapon.index()];
                *charges = charges.saturating_sub(1);
                let (mut gained, mut hit) = (0, false);
                for monster in self.monsters.iter_mut().filter(|monster| cells.contains(&monster.pos)) {
                    hit = true;
                    monster.hp -= weapon.damage();
                    if monster.hp <= 0 {
                        gained += i64::from(monster.kind.max_hp());
                    }
                }
                if hit {
                    self.monsters.retain(|monster| monster.hp > 0);
                    self.lists.set_monsters(&self.monsters);
                }
                self.hero.score += gained;
            }
        }
        if self.turn >= self.max_turns {
            self.end = Some(End::TurnLimit);
            return;
        }
        self.monster_phase();
    }

    fn pick_up(&mut self, item: Item) {
        let hero = &mut self.hero;
        match item {
            Item::Exit => hero.score += EXIT_SCORE,
            Item::Treasure => hero.score += TREASURE_SCORE,
            Item::Potion => hero.hp = (hero.hp + POTION_HP).min(HERO_MAX_HP),
            Item::HammerChest => hero.charges[Weapon::Hammer.index()] += 1,
            Item::ScytheChest => hero.charges[Weapon::Scythe.index()] += 1,
            Item::BowChest => hero.charges[Weapon::Bow.index()] += 1,
        }
    }

    /// Every monster in a random order attacks, steps towards the hero or stays; the
    /// damage is summed and applied at the end.
    ///
    /// The shuffle starts from the monsters sorted by position, the order every change
    /// to the list keeps.
    fn monster_phase(&mut self) {
        // Monster indices fit a byte: there is at most one monster per cell.
        let mut order = [0u8; CELLS];
        let order = &mut order[..self.monsters.len()];
        for (index, slot) in order.iter_mut().enumerate() {
            *slot = index as u8;
        }
        self.rng.shuffle(order);
        // Only a monster within its view or range of the hero acts, and the list is
        // sorted by column first: those that can act are the run in the columns around
        // the hero's.
        let hero = self.hero.pos;
        let reach = MonsterKind::ALL.into_iter().map(|kind| kind.view().max(kind.range())).max().unwrap_or(0);
        let near = self.monsters.partition_point(|monster| monster.pos.x < hero.x - reach)
            ..self.monsters.partition_point(|monster| monster.pos.x <= hero.x + reach);
        // The monsters' cells, marked when the first monster steps.
        let mut occupied = None;
        let (mut damage, mut moved) = (0, false);
        for index in order.iter().map(|&index| usize::from(index)).filter(|index| near.contains(index)) {
            let monster = self.monsters[index];
            let distance = chebyshev(monster.pos, hero);
            if distance <= monster.kind.range() {
                damage += monster.kind.damage();
            } else if distance <= monster.kind.view() {
                let occupied = occupied.get_or_insert_with(|| self.occupied());
                let step = self.monster_step_among(&monster, occupied);
                if step != monster.pos {
                    occupied[monster.pos.index(WIDTH)] = false;
                    occupied[step.index(WIDTH)] = true;
                    self.monsters[index].pos = step;
                    moved = true;
                }
            }
        }
        if moved {
            self.monsters.sort_by_key(|monster| monster.pos);
            self.lists.set_monsters(&self.monsters);
        }
        if damage > 0 {
            self.hero.hp -= damage;
            self.hero.score -= i64::from(damage);
            self.last.push_str("; hurt ");
            push_int(&mut self.last, damage);
            if self.hero.hp <= 0 {
                self.hero.score += DEATH_SCORE;
                self.end = Some(End::Died);
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// An open 16x12 floor with the hero at (5, 5) and the exit far away.
    pub(in crate::maze) fn open() -> Dungeon {
        let mut text = String::new();
        for y in 0..12 {
            for x in 0..16 {
                text.push(match (x, y) {
                    (5, 5) => 'H',
                    (15, 11) => 'E',
                    _ => '.',
                });
            }
            text.push('\n');
        }
        let map = MazeMap::parse(&text).expect("valid");
        Dungeon::new(&map, 150, GameRng::new(1, GameRng::RULES))
    }

    #[test]
    fn the_scythe_at_distance_one_on_the_edge_hits_only_the_target() {
        let cells = weapon_cells(Pos::new(1, 0), Weapon::Scythe, Pos::new(0, 0)).expect("valid");
        assert_eq!(cells, vec![Pos::new(0, 0)]);
    }

    #[test]
    fn an_attack_damages_every_monster_hit_and_scores_kills() {
        let mut dungeon = open();
        dungeon.place_monster(MonsterKind::Skeleton, Pos::new(6, 5), 6);
        dungeon.place_monster(MonsterKind::Gargoyle, Pos::new(7, 5), 14);
        let scythe = Command::Attack { weapon: Weapon::Scythe, target: Pos::new(6, 5), message: String::new() };
        // Keep the monster phase out: the gargoyle would hit back.
        dungeon.max_turns = 1;
        dungeon.play(&scythe);
        assert_eq!(dungeon.hero().score, 6);
        assert_eq!(dungeon.hero().charges[Weapon::Scythe.index()], 4);
        assert_eq!(dungeon.monsters(), &[Monster { kind: MonsterKind::Gargoyle, pos: Pos::new(7, 5), hp: 7 }]);
        assert_eq!(dungeon.end(), Some(End::TurnLimit));
    }
}
