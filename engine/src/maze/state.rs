//! One hero's copy of the maze: its state, the turn resolution, the pathfinding and
//! the weapons' geometry (`MazeManager`, `Hero`, `Action` of the original).

use std::collections::VecDeque;

use serde::Serialize;

use crate::game::{text_of, write_int, write_json};

use super::codec::{Command, Weapon, clip};
use super::map::{CELLS, Cell, Item, MazeMap, MonsterKind, Pos};
use super::{DEATH_SCORE, ERROR_SCORE, EXIT_SCORE, HERO_FOV, HERO_MAX_HP, POTION_HP, TREASURE_SCORE};
use crate::{GameRng, PlayerStatus};

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

/// The entity type of an obstacle in the protocol (its value is always −1).
pub const OBSTACLE: i32 = 1;

/// One entity a hero sees: a line of its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entity {
    /// Where it is.
    pub pos: Pos,
    /// Its type: 0 exit, 1 obstacle, 2 to 6 items, 7 and up boxes and monsters.
    pub etype: i32,
    /// Its value: an item's worth, a monster's hp, −1 for an obstacle.
    pub evalue: i32,
}

/// What a hero sees at the start of a turn: everything its input holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sight {
    /// Where it stands.
    pub hero: Pos,
    /// Its health.
    pub hp: i32,
    /// Its score.
    pub score: i64,
    /// Charges of the hammer, scythe and bow.
    pub charges: [u32; 3],
    /// The entities in view, in input order.
    pub entities: Vec<Entity>,
}

impl Sight {
    /// Appends the input text (see [`Dungeon::write_observation`]) to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        let [hammer, scythe, bow] = self.charges;
        // Writing to a Vec cannot fail.
        let _ = write!(
            out,
            "{} {} {} {} {hammer} {scythe} {bow}\n{}",
            self.hero.x,
            self.hero.y,
            self.hp,
            self.score,
            self.entities.len()
        );
        for entity in &self.entities {
            let _ = write!(out, "\n{} {} {} {}", entity.pos.x, entity.pos.y, entity.etype, entity.evalue);
        }
    }
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
    let (chebyshev, manhattan) = (hero.chebyshev(target), hero.manhattan(target));
    let valid = target.in_maze()
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
    cells.extend(extra.into_iter().filter(|pos| pos.in_maze()));
    Some(cells)
}

/// One copy of the maze and its hero.
#[derive(Debug, Clone)]
pub struct Dungeon {
    obstacles: Vec<bool>,
    items: Vec<Option<Item>>,
    /// Kept sorted by position, so that the shuffle starts from a fixed order.
    monsters: Vec<Monster>,
    hero: Hero,
    turn: u32,
    max_turns: u32,
    end: Option<End>,
    status: PlayerStatus,
    rng: GameRng,
    last: String,
}

impl Dungeon {
    /// A fresh copy of `map` whose monster shuffles draw from `rng`, ending after
    /// `max_turns` hero actions.
    pub fn new(map: &MazeMap, max_turns: u32, rng: GameRng) -> Self {
        let mut obstacles = vec![false; CELLS];
        let mut items = vec![None; CELLS];
        let mut monsters = Vec::new();
        for (index, cell) in map.cells().iter().enumerate() {
            let pos = Pos::from_index(index);
            match *cell {
                Cell::Obstacle => obstacles[index] = true,
                Cell::Item(item) => items[index] = Some(item),
                Cell::Monster(kind) => monsters.push(Monster { kind, pos, hp: kind.max_hp() }),
                Cell::Floor | Cell::Hero => {}
            }
        }
        monsters.sort_by_key(|monster| monster.pos);
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
    }

    /// The item on `pos`, if any.
    pub fn item_at(&self, pos: Pos) -> Option<Item> {
        if pos.in_maze() { self.items[pos.index()] } else { None }
    }

    /// Whether `pos` is an obstacle (cells outside the maze are).
    pub fn is_obstacle(&self, pos: Pos) -> bool {
        !pos.in_maze() || self.obstacles[pos.index()]
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

    /// What the hero sees this turn: itself and every entity within its view
    /// (Chebyshev 3, walls ignored), sorted by x, then y, then obstacle, item, monster.
    pub fn sight(&self) -> Sight {
        let hero = &self.hero;
        // The monsters in view, by their cell of the view (at most one per cell; the
        // first in the list, as `monster_at` finds it).
        const SIDE: i32 = 2 * HERO_FOV + 1;
        let mut in_view = [None; (SIDE * SIDE) as usize];
        let view_cell = |pos: Pos| ((pos.x - hero.pos.x + HERO_FOV) * SIDE + pos.y - hero.pos.y + HERO_FOV) as usize;
        for monster in self.monsters.iter().rev().filter(|monster| monster.pos.chebyshev(hero.pos) <= HERO_FOV) {
            in_view[view_cell(monster.pos)] = Some(monster);
        }
        let mut entities = Vec::new();
        for x in hero.pos.x - HERO_FOV..=hero.pos.x + HERO_FOV {
            for pos in (hero.pos.y - HERO_FOV..=hero.pos.y + HERO_FOV).map(|y| Pos::new(x, y)) {
                if !pos.in_maze() {
                    continue;
                }
                if self.obstacles[pos.index()] {
                    entities.push(Entity { pos, etype: OBSTACLE, evalue: -1 });
                }
                if let Some(item) = self.items[pos.index()] {
                    entities.push(Entity { pos, etype: item.type_id(), evalue: item.value() });
                }
                if let Some(monster) = in_view[view_cell(pos)] {
                    entities.push(Entity { pos, etype: monster.kind.type_id(), evalue: monster.hp });
                }
            }
        }
        let [_, hammer, scythe, bow] = hero.charges;
        Sight { hero: hero.pos, hp: hero.hp, score: hero.score, charges: [hammer, scythe, bow], entities }
    }

    /// Appends the input of one turn in the original's format to `out`: the hero line,
    /// the number of entities, then one line per entity of [`Dungeon::sight`]. No final
    /// newline.
    pub fn write_observation(&self, out: &mut Vec<u8>) {
        self.sight().write(out);
    }

    /// [`Dungeon::write_observation`] as a string.
    pub fn observation(&self) -> String {
        text_of(|out| self.write_observation(out))
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
        if from.neighbors().any(|n| n == target) {
            return target;
        }
        let in_view = |pos: Pos| pos.chebyshev(from) <= HERO_FOV;
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
        let from = monster.pos;
        let free = |pos: Pos| {
            !self.is_obstacle(pos) && pos.chebyshev(from) <= monster.kind.view() && self.monster_at(pos).is_none()
        };
        let step = self.first_step(from, self.hero.pos, free);
        // The hero's cell is never a step: a monster next to the hero attacks instead.
        if step == self.hero.pos { from } else { step }
    }

    /// The shared BFS of both pathfindings.
    fn first_step(&self, from: Pos, target: Pos, passable: impl Fn(Pos) -> bool) -> Pos {
        let mut first: Vec<Option<Pos>> = vec![None; CELLS];
        let mut visited = [false; CELLS];
        visited[from.index()] = true;
        let mut queue = VecDeque::new();
        for next in from.neighbors().filter(|&n| passable(n)) {
            visited[next.index()] = true;
            first[next.index()] = Some(next);
            queue.push_back(next);
        }
        let (mut best, mut best_dist) = (from, from.manhattan(target));
        while let Some(pos) = queue.pop_front() {
            let step = first[pos.index()].unwrap_or(from);
            if pos == target {
                return step;
            }
            let dist = pos.manhattan(target);
            if dist < best_dist {
                (best, best_dist) = (step, dist);
            }
            for next in pos.neighbors() {
                if !visited[next.index()] && passable(next) {
                    visited[next.index()] = true;
                    first[next.index()] = Some(step);
                    queue.push_back(next);
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
        self.last = describe(command, &resolved);
        match resolved {
            Resolved::Wait | Resolved::Wasted(_) => {}
            Resolved::Step(pos) => {
                self.hero.pos = pos;
                if let Some(item) = self.items[pos.index()].take() {
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
                let mut gained = 0;
                for monster in self.monsters.iter_mut().filter(|monster| cells.contains(&monster.pos)) {
                    monster.hp -= weapon.damage();
                    if monster.hp <= 0 {
                        gained += i64::from(monster.kind.max_hp());
                    }
                }
                self.monsters.retain(|monster| monster.hp > 0);
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
    fn monster_phase(&mut self) {
        self.monsters.sort_by_key(|monster| monster.pos);
        let mut order: Vec<usize> = (0..self.monsters.len()).collect();
        self.rng.shuffle(&mut order);
        let mut damage = 0;
        for index in order {
            let monster = self.monsters[index];
            let distance = monster.pos.chebyshev(self.hero.pos);
            if distance <= monster.kind.range() {
                damage += monster.kind.damage();
            } else if distance <= monster.kind.view() {
                self.monsters[index].pos = self.monster_step(&monster);
            }
        }
        self.monsters.sort_by_key(|monster| monster.pos);
        if damage > 0 {
            self.hero.hp -= damage;
            self.hero.score -= i64::from(damage);
            self.last.push_str(&format!("; hurt {damage}"));
            if self.hero.hp <= 0 {
                self.hero.score += DEATH_SCORE;
                self.end = Some(End::Died);
            }
        }
    }

    /// Appends the copy's state for replay frames to `out`: `{"turn":..,"hero":{"x":..,
    /// "y":..,"hp":..,"score":..,"charges":[..]},["end":"..",]"last":"..","items":
    /// [[x,y,etype],..],"monsters":[[x,y,etype,hp],..]}`, items in map order.
    ///
    /// Written by hand (it is most of every frame); the strings go through serde_json.
    /// A test checks it against serde's rendering of the same document.
    pub(crate) fn write_state(&self, out: &mut Vec<u8>) {
        let list = |out: &mut Vec<u8>, numbers: &[i32]| {
            out.push(b'[');
            for (index, value) in numbers.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_int(out, *value);
            }
            out.push(b']');
        };
        let hero = &self.hero;
        out.extend_from_slice(b"{\"turn\":");
        write_int(out, self.turn);
        out.extend_from_slice(b",\"hero\":{\"x\":");
        write_int(out, hero.pos.x);
        out.extend_from_slice(b",\"y\":");
        write_int(out, hero.pos.y);
        out.extend_from_slice(b",\"hp\":");
        write_int(out, hero.hp);
        out.extend_from_slice(b",\"score\":");
        write_int(out, hero.score);
        out.extend_from_slice(b",\"charges\":[");
        for (index, weapon) in [1, 2, 3].into_iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            write_int(out, hero.charges[weapon]);
        }
        out.extend_from_slice(b"]}");
        if let Some(end) = self.end {
            out.extend_from_slice(b",\"end\":");
            write_json(out, &end);
        }
        out.extend_from_slice(b",\"last\":");
        write_json(out, &self.last);
        out.extend_from_slice(b",\"items\":[");
        let items = Pos::all().filter_map(|pos| self.items[pos.index()].map(|item| (pos, item)));
        for (index, (pos, item)) in items.enumerate() {
            if index > 0 {
                out.push(b',');
            }
            list(out, &[pos.x, pos.y, item.type_id()]);
        }
        out.extend_from_slice(b"],\"monsters\":[");
        for (index, monster) in self.monsters.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            list(out, &[monster.pos.x, monster.pos.y, monster.kind.type_id(), monster.hp]);
        }
        out.extend_from_slice(b"]}");
    }
}

/// A failure's reason, cut to a few times [`super::codec::QUOTE_CHARS`] characters.
fn clip_reason(reason: &str) -> &str {
    match reason.char_indices().nth(4 * super::codec::QUOTE_CHARS) {
        Some((cut, _)) => &reason[..cut],
        None => reason,
    }
}

fn describe(command: &Command, resolved: &Resolved) -> String {
    let (asked, said) = match command {
        Command::Move { target, message } => (format!("MOVE {} {}", target.x, target.y), message),
        Command::Attack { weapon, target, message } => {
            (format!("ATTACK {} {} {}", weapon.index(), target.x, target.y), message)
        }
    };
    let did = match resolved {
        Resolved::Wait => "wait".to_owned(),
        Resolved::Step(pos) => format!("step to {} {}", pos.x, pos.y),
        Resolved::Attack { weapon, cells } => {
            let cells: Vec<String> = cells.iter().map(|pos| format!("{} {}", pos.x, pos.y)).collect();
            format!("{} hits {}", weapon.name(), cells.join(", "))
        }
        Resolved::Wasted(Waste::NoCharges) => "wasted: no charges".to_owned(),
        Resolved::Wasted(Waste::OutOfRange) => "wasted: out of range".to_owned(),
    };
    if said.is_empty() { format!("{asked}: {did}") } else { format!("{asked} \"{}\": {did}", clip(said)) }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;

    #[derive(Serialize)]
    struct HeroDoc {
        x: i32,
        y: i32,
        hp: i32,
        score: i64,
        charges: [u32; 3],
    }

    /// One copy as serde writes it: what `write_state` must equal.
    #[derive(Serialize)]
    struct DungeonDoc<'a> {
        turn: u32,
        hero: HeroDoc,
        #[serde(skip_serializing_if = "Option::is_none")]
        end: Option<End>,
        last: &'a str,
        items: Vec<[i32; 3]>,
        monsters: Vec<[i32; 4]>,
    }

    fn serde_state(dungeon: &Dungeon) -> String {
        let hero = &dungeon.hero;
        let doc = DungeonDoc {
            turn: dungeon.turn,
            hero: HeroDoc {
                x: hero.pos.x,
                y: hero.pos.y,
                hp: hero.hp,
                score: hero.score,
                charges: [hero.charges[1], hero.charges[2], hero.charges[3]],
            },
            end: dungeon.end,
            last: &dungeon.last,
            items: Pos::all()
                .filter_map(|pos| dungeon.items[pos.index()].map(|item| [pos.x, pos.y, item.type_id()]))
                .collect(),
            monsters: dungeon.monsters.iter().map(|m| [m.pos.x, m.pos.y, m.kind.type_id(), m.hp]).collect(),
        };
        serde_json::to_string(&doc).expect("serializes")
    }

    fn written_state(dungeon: &Dungeon) -> String {
        let mut out = Vec::new();
        dungeon.write_state(&mut out);
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn the_hand_written_state_is_serdes() {
        let mut dungeon = open();
        dungeon.place_monster(MonsterKind::Orc, Pos::new(2, 2), 8);
        dungeon.place_monster(MonsterKind::Box, Pos::new(9, 9), 1);
        assert_eq!(written_state(&dungeon), serde_state(&dungeon));
        let said = Command::Move { target: Pos::new(6, 5), message: "a \"quote\" and \\ \u{1}".into() };
        dungeon.play(&said);
        assert_eq!(written_state(&dungeon), serde_state(&dungeon));
        dungeon.fail(PlayerStatus::TimedOut, "timeout");
        assert!(dungeon.end.is_some());
        assert_eq!(written_state(&dungeon), serde_state(&dungeon));
    }

    /// An open 16x12 floor with the hero at (5, 5) and the exit far away.
    fn open() -> Dungeon {
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

    #[test]
    fn the_observation_lists_the_view_in_order() {
        let mut dungeon = open();
        dungeon.place_monster(MonsterKind::Orc, Pos::new(2, 2), 8);
        dungeon.place_monster(MonsterKind::Box, Pos::new(9, 9), 1);
        assert_eq!(dungeon.observation(), "5 5 20 0 5 5 5\n1\n2 2 10 8");
    }
}
