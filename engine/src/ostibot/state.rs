//! The match state and how a step changes it. [`World`] is the board in play and the
//! turn rules: moves, `use`, deaths and drops, corruption, spawning ("Move action", "Use
//! action", "Turn resolution" and Settled questions 1–13, 23–24). [`Ostibot`] is the
//! match around it: rounds, the shop step, the order teams are asked in, what their
//! replies do.

use serde_json::value::{RawValue, to_raw_value};

use super::codec::{self, ActionKind, Call, Command, Entries, OstibotAction, PlayEntry, StateChange};
use super::map::{Dir, ObjectKind, OstibotMap, Terrain};
use super::rules::{self, ItemStats, OstibotRules, Slot};
use crate::{GameKind, PlayerOutcome, PlayerStatus, Pos, Seat, SetupError, ranks_by_score};

/// Forced steps (ice, treadmills) one move may take before the loop guard stops it.
pub const MAX_FORCED_STEPS: u32 = 64;

/// An item: an id unique in the game and its type (an index into [`Catalog`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    /// `i{id}` on the wire.
    pub id: u32,
    /// Index of its type in the catalog.
    pub kind: usize,
}

/// An adventurer on the map, or held after escaping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adventurer {
    /// `a{id}` on the wire.
    pub id: u32,
    /// Team id, 1-based.
    pub team: u8,
    /// Where it stands.
    pub pos: Pos,
    /// Hit points; it dies at 0 or below.
    pub hp: i64,
    /// Carried gold (banked on escape, dropped on death).
    pub gold: i64,
    /// Weapon, armor, accessory.
    pub equipment: [Option<Item>; 3],
    /// Carried items, in the order they were added.
    pub inventory: Vec<Item>,
    /// Whether it escaped in the previous round.
    pub veteran: bool,
}

impl Adventurer {
    /// Every item it has: equipment (weapon, armor, accessory), then inventory.
    pub fn items(&self) -> impl Iterator<Item = Item> + '_ {
        self.equipment.iter().flatten().chain(&self.inventory).copied()
    }
}

/// A chest, vase, door or portal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapObject {
    /// `e{id}`: the 1-based row-major index of its cell in the map file.
    pub id: u32,
    /// What it is.
    pub kind: ObjectKind,
    /// Its cell.
    pub pos: Pos,
    /// Hit points, never below 0.
    pub hp: i64,
    /// For portals: opened (hp 0); entering it escapes.
    pub open: bool,
}

impl MapObject {
    /// Whether it stops moves: everything but an open portal.
    pub fn blocks(&self) -> bool {
        !self.open
    }
}

/// Gold lying on a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoldPile {
    /// `g{id}` on the wire.
    pub id: u32,
    /// Its cell.
    pub pos: Pos,
    /// How much.
    pub amount: i64,
}

/// An item lying on a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroundItem {
    /// Its cell.
    pub pos: Pos,
    /// The item.
    pub item: Item,
}

/// The item types of the rules, in item-type order, for lookups by index.
#[derive(Debug, Clone)]
pub struct Catalog {
    names: Vec<String>,
    stats: Vec<ItemStats>,
}

impl Catalog {
    /// The catalog of `rules.items`.
    pub fn new(rules: &OstibotRules) -> Self {
        Catalog { names: rules.items.keys().cloned().collect(), stats: rules.items.values().cloned().collect() }
    }

    /// The index of the item type `name` (exact, case-sensitive).
    pub fn find(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|known| known == name)
    }

    /// The name of item type `kind`.
    pub fn name(&self, kind: usize) -> &str {
        self.names.get(kind).map_or("", String::as_str)
    }

    /// The stats of item type `kind`.
    pub fn stats(&self, kind: usize) -> &ItemStats {
        &self.stats[kind.min(self.stats.len().saturating_sub(1))]
    }
}

/// The map symbol of every cell of `terrain`, as bytes (every symbol is ASCII).
fn symbols(terrain: &[Terrain]) -> Vec<u8> {
    terrain.iter().map(|cell| cell.symbol() as u8).collect()
}

/// The state of play: the map as it is now and everything on it.
#[derive(Debug, Clone)]
pub struct World {
    pub(crate) rules: OstibotRules,
    pub(crate) catalog: Catalog,
    pub(crate) map: OstibotMap,
    pub(crate) terrain: Vec<Terrain>,
    /// `terrain`'s map symbols, row by row, kept in step with it: every frame and every
    /// raider step reads them, and the terrain only changes when a round starts and
    /// when the corruption takes the spawners.
    pub(crate) symbols: Vec<u8>,
    pub(crate) corrupted: Vec<bool>,
    pub(crate) objects: Vec<MapObject>,
    pub(crate) gold: Vec<GoldPile>,
    pub(crate) ground: Vec<GroundItem>,
    /// Adventurers on the map, in spawn order.
    pub(crate) adventurers: Vec<Adventurer>,
    /// Each team's bank (index `team − 1`).
    pub(crate) banks: Vec<i64>,
    /// Each team's adventurers that escaped this round, in order of escape.
    pub(crate) escaped: Vec<Vec<Adventurer>>,
    next_adventurer: u32,
    next_item: u32,
    next_gold: u32,
    /// What happened this step worth a line in the replay.
    pub(crate) log: Vec<String>,
}

impl World {
    pub(crate) fn new(rules: OstibotRules, map: OstibotMap) -> Self {
        let teams = map.teams();
        World {
            catalog: Catalog::new(&rules),
            terrain: map.terrain.clone(),
            symbols: symbols(&map.terrain),
            corrupted: vec![false; map.terrain.len()],
            objects: Vec::new(),
            gold: Vec::new(),
            ground: Vec::new(),
            adventurers: Vec::new(),
            banks: vec![rules.starting_gold; teams],
            escaped: vec![Vec::new(); teams],
            next_adventurer: 1,
            next_item: 1,
            next_gold: 1,
            log: Vec::new(),
            rules,
            map,
        }
    }

    /// Resets the map to its file layout and spawns every team in `order`: last
    /// round's escapees first (they keep ids and items), then fresh adventurers.
    pub(crate) fn start_round(&mut self, order: &[u8]) {
        self.terrain = self.map.terrain.clone();
        self.symbols = symbols(&self.terrain);
        self.corrupted.iter_mut().for_each(|cell| *cell = false);
        let width = self.map.width;
        self.objects = self
            .map
            .objects
            .iter()
            .map(|&(pos, kind)| MapObject {
                id: (pos.y * width + pos.x) as u32 + 1,
                kind,
                pos,
                hp: kind.hp(&self.rules),
                open: false,
            })
            .collect();
        self.gold.clear();
        self.ground.clear();
        self.adventurers.clear();
        let veterans = std::mem::replace(&mut self.escaped, vec![Vec::new(); self.map.teams()]);
        for &team in order {
            let spawners = &self.map.spawners[usize::from(team) - 1];
            let slots = (self.rules.adventurers_per_round as usize).min(spawners.len());
            let mut roster: Vec<Adventurer> = veterans[usize::from(team) - 1]
                .iter()
                .take(slots)
                .map(|veteran| Adventurer { hp: self.rules.adventurer_hp, gold: 0, veteran: true, ..veteran.clone() })
                .collect();
            while roster.len() < slots {
                roster.push(Adventurer {
                    id: self.next_adventurer,
                    team,
                    pos: Pos::new(0, 0),
                    hp: self.rules.adventurer_hp,
                    gold: 0,
                    equipment: [None; 3],
                    inventory: Vec::new(),
                    veteran: false,
                });
                self.next_adventurer += 1;
            }
            for (adventurer, spawner) in roster.iter_mut().zip(spawners) {
                adventurer.pos = *spawner;
            }
            self.adventurers.extend(roster);
        }
    }

    /// The rules in play.
    pub fn rules(&self) -> &OstibotRules {
        &self.rules
    }

    /// The map as loaded.
    pub fn map(&self) -> &OstibotMap {
        &self.map
    }

    /// Adventurers on the map, in spawn order.
    pub fn adventurers(&self) -> &[Adventurer] {
        &self.adventurers
    }

    /// Adventurer `a{id}`, if it is on the map.
    pub fn adventurer(&self, id: u32) -> Option<&Adventurer> {
        self.adventurers.iter().find(|adventurer| adventurer.id == id)
    }

    /// Chests, vases, doors and portals still standing (portals: until used).
    pub fn objects(&self) -> &[MapObject] {
        &self.objects
    }

    /// Gold piles on the map.
    pub fn gold_piles(&self) -> &[GoldPile] {
        &self.gold
    }

    /// Items on the ground.
    pub fn ground_items(&self) -> &[GroundItem] {
        &self.ground
    }

    /// Team `team`'s bank.
    pub fn bank(&self, team: u8) -> i64 {
        self.banks.get(usize::from(team).wrapping_sub(1)).copied().unwrap_or(0)
    }

    /// Team `team`'s adventurers that escaped this round, in order of escape.
    pub fn escaped(&self, team: u8) -> &[Adventurer] {
        self.escaped.get(usize::from(team).wrapping_sub(1)).map_or(&[], Vec::as_slice)
    }

    /// Corrupted cells, row-major.
    pub fn corrupted_cells(&self) -> Vec<Pos> {
        let width = self.map.width;
        (0..self.corrupted.len())
            .filter(|&index| self.corrupted[index])
            .map(|index| Pos::new(index as i32 % width, index as i32 / width))
            .collect()
    }

    /// The item type name of `item`.
    pub fn item_type(&self, item: Item) -> &str {
        self.catalog.name(item.kind)
    }

    /// A new item id.
    pub(crate) fn new_item(&mut self, kind: usize) -> Item {
        let item = Item { id: self.next_item, kind };
        self.next_item += 1;
        item
    }

    /// The row-major index of `pos`, or `None` out of bounds.
    pub(crate) fn index(&self, pos: Pos) -> Option<usize> {
        self.map.index(pos)
    }

    /// The terrain at `pos` now (spawners become floor when corruption starts); out of
    /// bounds is wall.
    pub fn terrain_at(&self, pos: Pos) -> Terrain {
        self.index(pos).map_or(Terrain::Wall, |index| self.terrain[index])
    }

    /// Whether `pos` is corrupted.
    pub fn is_corrupted(&self, pos: Pos) -> bool {
        self.index(pos).is_some_and(|index| self.corrupted[index])
    }

    pub(crate) fn adventurer_index(&self, id: u32) -> Option<usize> {
        self.adventurers.iter().position(|adventurer| adventurer.id == id)
    }

    fn adventurer_at(&self, pos: Pos) -> Option<usize> {
        self.adventurers.iter().position(|adventurer| adventurer.pos == pos)
    }

    fn object_at(&self, pos: Pos) -> Option<usize> {
        self.objects.iter().position(|object| object.pos == pos)
    }

    /// Whether sight stops at `pos`: walls (and the outside) and intact doors.
    pub fn blocks_sight(&self, pos: Pos) -> bool {
        self.terrain_at(pos) == Terrain::Wall
            || self.objects.iter().any(|object| object.pos == pos && object.kind == ObjectKind::Door)
    }

    fn equipped<'a>(&'a self, adventurer: &'a Adventurer) -> impl Iterator<Item = &'a ItemStats> + 'a {
        adventurer.equipment.iter().flatten().map(|item| self.catalog.stats(item.kind))
    }

    /// Base damage plus every equipped item's damage.
    pub fn damage(&self, adventurer: &Adventurer) -> i64 {
        self.rules.adventurer_damage + self.equipped(adventurer).map(|stats| stats.damage).sum::<i64>()
    }

    /// Damage taken from adventurers is reduced by this.
    pub fn armor(&self, adventurer: &Adventurer) -> i64 {
        self.equipped(adventurer).map(|stats| stats.armor).sum()
    }

    /// Vision radius.
    pub fn vision(&self, adventurer: &Adventurer) -> i64 {
        self.rules.vision_length + self.equipped(adventurer).map(|stats| stats.vision).sum::<i64>()
    }

    /// Whether spikes do it no harm.
    pub fn spike_immune(&self, adventurer: &Adventurer) -> bool {
        self.equipped(adventurer).any(|stats| stats.spike_immune)
    }

    /// Plays a `move` of adventurer `id` ("Move action", Settled questions 1–8).
    pub(crate) fn move_adventurer(&mut self, id: u32, dir: Dir) {
        let Some(index) = self.adventurer_index(id) else { return };
        let target = dir.step(self.adventurers[index].pos);
        // 1. Occupant first, whatever the terrain under it.
        if let Some(other) = self.adventurer_at(target) {
            if self.adventurers[other].team == self.adventurers[index].team {
                let gold = std::mem::take(&mut self.adventurers[index].gold);
                self.adventurers[other].gold += gold;
            } else {
                let damage = (self.damage(&self.adventurers[index]) - self.armor(&self.adventurers[other])).max(0);
                self.hurt(other, damage);
            }
            return;
        }
        match self.terrain_at(target) {
            Terrain::Wall | Terrain::Spawner(_) => {
                self.hurt(index, self.rules.block_damage);
                return;
            }
            Terrain::Health => {
                let adventurer = &mut self.adventurers[index];
                if adventurer.gold >= self.rules.heal_cost {
                    adventurer.gold -= self.rules.heal_cost;
                    adventurer.hp = self.rules.adventurer_hp;
                } else {
                    self.hurt(index, self.rules.block_damage);
                }
                return;
            }
            _ => {}
        }
        if let Some(object) = self.object_at(target) {
            if self.objects[object].open {
                self.escape(index, object);
            } else {
                let damage = self.damage(&self.adventurers[index]);
                self.hit_object(object, damage);
            }
            return;
        }
        self.adventurers[index].pos = target;
        self.enter(id, dir);
    }

    /// `enter()`: pick up, spikes, then ice and treadmills force further steps.
    fn enter(&mut self, id: u32, mut dir: Dir) {
        let mut forced = 0;
        loop {
            let Some(index) = self.adventurer_index(id) else { return };
            let pos = self.adventurers[index].pos;
            self.pick_up(index);
            let terrain = self.terrain_at(pos);
            if terrain == Terrain::Spikes
                && !self.spike_immune(&self.adventurers[index])
                && self.hurt(index, self.rules.spike_damage)
            {
                return;
            }
            dir = match terrain {
                Terrain::Ice => dir,
                Terrain::Treadmill(push) => push,
                _ => return,
            };
            if forced == MAX_FORCED_STEPS {
                return;
            }
            let next = dir.step(pos);
            // A forced step never attacks and never costs block damage: it just stops.
            if !self.terrain_at(next).walkable() || self.adventurer_at(next).is_some() {
                return;
            }
            if let Some(object) = self.object_at(next) {
                if self.objects[object].open {
                    self.escape(index, object);
                }
                return;
            }
            self.adventurers[index].pos = next;
            forced += 1;
        }
    }

    fn pick_up(&mut self, index: usize) {
        let pos = self.adventurers[index].pos;
        let gold: i64 = self.gold.iter().filter(|pile| pile.pos == pos).map(|pile| pile.amount).sum();
        self.gold.retain(|pile| pile.pos != pos);
        let items: Vec<Item> =
            self.ground.iter().filter(|ground| ground.pos == pos).map(|ground| ground.item).collect();
        self.ground.retain(|ground| ground.pos != pos);
        let adventurer = &mut self.adventurers[index];
        adventurer.gold += gold;
        adventurer.inventory.extend(items);
    }

    /// Takes `damage` from adventurer `index`; returns whether it died (and dropped everything).
    fn hurt(&mut self, index: usize, damage: i64) -> bool {
        self.adventurers[index].hp -= damage;
        if self.adventurers[index].hp > 0 {
            return false;
        }
        let dead = self.adventurers.remove(index);
        if dead.gold > 0 {
            self.drop_gold(dead.pos, dead.gold);
        }
        let pos = dead.pos;
        self.ground.extend(dead.items().map(|item| GroundItem { pos, item }));
        true
    }

    /// Adds gold to the pile on `pos`, or starts one (a merge keeps the old id).
    fn drop_gold(&mut self, pos: Pos, amount: i64) {
        if amount <= 0 {
            return;
        }
        match self.gold.iter_mut().find(|pile| pile.pos == pos) {
            Some(pile) => pile.amount += amount,
            None => {
                self.gold.push(GoldPile { id: self.next_gold, pos, amount });
                self.next_gold += 1;
            }
        }
    }

    /// Hits map object `index` (armor never applies); an open portal ignores it.
    fn hit_object(&mut self, index: usize, damage: i64) {
        let object = &mut self.objects[index];
        if object.open {
            return;
        }
        object.hp = (object.hp - damage).max(0);
        if object.hp > 0 {
            return;
        }
        let (kind, pos) = (object.kind, object.pos);
        match kind {
            ObjectKind::Portal => object.open = true,
            ObjectKind::Door => {
                self.objects.remove(index);
            }
            ObjectKind::Chest | ObjectKind::Vase => {
                self.objects.remove(index);
                let gold = if kind == ObjectKind::Chest { self.rules.chest_gold } else { self.rules.vase_gold };
                self.drop_gold(pos, gold);
            }
        }
    }

    /// Adventurer `index` leaves through open portal `object`: its gold goes to the
    /// bank, it is held with its items for next round, and the portal is gone.
    fn escape(&mut self, index: usize, object: usize) {
        let mut adventurer = self.adventurers.remove(index);
        self.banks[usize::from(adventurer.team) - 1] += std::mem::take(&mut adventurer.gold);
        self.escaped[usize::from(adventurer.team) - 1].push(adventurer);
        self.objects.remove(object);
    }

    /// Plays a `use`: a consumable heals and is used up; equipment is equipped, and
    /// what was in its slot goes back to the inventory.
    pub(crate) fn use_item(&mut self, id: u32, item_id: u32) -> Result<(), String> {
        let index = self.adventurer_index(id).ok_or("no such adventurer")?;
        let at = self.adventurers[index]
            .inventory
            .iter()
            .position(|item| item.id == item_id)
            .ok_or_else(|| format!("i{item_id} is not in a{id}'s inventory"))?;
        let max_hp = self.rules.adventurer_hp;
        let adventurer = &mut self.adventurers[index];
        let item = adventurer.inventory.remove(at);
        let stats = self.catalog.stats(item.kind);
        match stats.slot.index() {
            None => adventurer.hp = (adventurer.hp + stats.heal).min(max_hp),
            Some(slot) => {
                if let Some(old) = adventurer.equipment[slot].replace(item) {
                    adventurer.inventory.push(old);
                }
            }
        }
        Ok(())
    }

    /// The end-of-turn step: corruption starts, spreads, and burns (Settled question 24).
    pub(crate) fn end_of_turn(&mut self, turn: u32) {
        let (start, speed) = (self.rules.corruption_start_at, self.rules.corruption_spread_speed);
        if turn == start {
            for (cell, corrupted) in self.terrain.iter_mut().zip(&mut self.corrupted) {
                if matches!(cell, Terrain::Spawner(_)) {
                    *cell = Terrain::Floor;
                    *corrupted = true;
                }
            }
            self.symbols = symbols(&self.terrain);
        } else if turn > start && (turn - start).is_multiple_of(speed) {
            let before = self.corrupted.clone();
            for (index, corrupted) in before.iter().enumerate() {
                if !corrupted {
                    continue;
                }
                let pos = Pos::new(index as i32 % self.map.width, index as i32 / self.map.width);
                for dir in Dir::ALL {
                    let next = dir.step(pos);
                    if let Some(next_index) = self.index(next)
                        && self.terrain[next_index] != Terrain::Wall
                    {
                        self.corrupted[next_index] = true;
                    }
                }
            }
        }
        if turn < start {
            return;
        }
        // Burn everything that has hit points, in row-major order of its cell.
        enum Target {
            Adventurer(u32),
            Object(u32),
        }
        let mut targets: Vec<(Pos, Target)> = Vec::new();
        for adventurer in &self.adventurers {
            if self.is_corrupted(adventurer.pos) {
                targets.push((adventurer.pos, Target::Adventurer(adventurer.id)));
            }
        }
        for object in &self.objects {
            if self.is_corrupted(object.pos) && !object.open {
                targets.push((object.pos, Target::Object(object.id)));
            }
        }
        targets.sort_by_key(|(pos, _)| (pos.y, pos.x));
        let damage = self.rules.corruption_damage;
        for (_, target) in targets {
            match target {
                Target::Adventurer(id) => {
                    if let Some(index) = self.adventurer_index(id) {
                        self.hurt(index, damage);
                    }
                }
                Target::Object(id) => {
                    if let Some(index) = self.objects.iter().position(|object| object.id == id) {
                        self.hit_object(index, damage);
                    }
                }
            }
        }
    }

    /// Whether team `team` has an adventurer on the map.
    pub(crate) fn has_adventurers(&self, team: u8) -> bool {
        self.adventurers.iter().any(|adventurer| adventurer.team == team)
    }

    /// What an item type sells for.
    pub(crate) fn sell_price(&self, kind: usize) -> i64 {
        self.rules.sell_price(self.catalog.stats(kind))
    }

    /// The end of the game: every item of the last round's escapees is sold into
    /// its team's bank (Settled question 25).
    pub(crate) fn auto_sell(&mut self) {
        for team in 0..self.escaped.len() {
            let total: i64 =
                self.escaped[team].iter().flat_map(Adventurer::items).map(|item| self.sell_price(item.kind)).sum();
            self.banks[team] += total;
        }
    }

    /// Whether `item` is a consumable.
    pub(crate) fn is_consumable(&self, kind: usize) -> bool {
        self.catalog.stats(kind).slot == Slot::Consumable
    }
}

/// Where a match is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Every team's `shop` call of the round is due.
    Shop,
    /// A turn is being played; `next` indexes the round's team order (sequential
    /// mode), or is 0 before and the team count after the snapshot-mode step.
    Turn {
        /// The next team to decide, as an index into the round order.
        next: usize,
    },
    /// The game has ended.
    Over,
}

/// An Ostibot match.
#[derive(Debug, Clone)]
pub struct Ostibot {
    // Boxed: the board is most of a match's size, and `AnyGame` holds matches by value.
    pub(super) world: Box<World>,
    pub(super) players: Vec<String>,
    pub(super) rules_json: Box<RawValue>,
    pub(super) round: u32,
    pub(super) turn: u32,
    pub(super) phase: Phase,
    pub(super) order: Vec<u8>,
    pub(super) states: Vec<Box<RawValue>>,
    pub(super) calls: Vec<u64>,
    pub(super) status: Vec<PlayerStatus>,
    pub(super) crashed: Vec<bool>,
    /// Map warnings, logged with the first step.
    pub(super) warnings: Vec<String>,
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".into()).unwrap_or_else(|_| unreachable!("null is JSON"))
}

impl Ostibot {
    /// A match of `map` for `players` (seat `k` plays team `k + 1`).
    pub fn from_map(rules: OstibotRules, map: OstibotMap, players: &[String]) -> Result<Self, SetupError> {
        rules.check().map_err(|problem| SetupError::Rules { game: GameKind::Ostibot, problem })?;
        if map.teams() != players.len() {
            return Err(SetupError::Map {
                game: GameKind::Ostibot,
                problem: format!("the map is for {} teams, but {} bots were given", map.teams(), players.len()),
            });
        }
        let rules_json =
            to_raw_value(&rules).map_err(|e| SetupError::Rules { game: GameKind::Ostibot, problem: e.to_string() })?;
        let warnings = map.warnings(&rules).into_iter().map(|warning| format!("map: {warning}")).collect();
        let teams = players.len();
        let order: Vec<u8> = (1..=teams as u8).collect();
        let mut world = Box::new(World::new(rules, map));
        world.start_round(&order);
        Ok(Ostibot {
            world,
            players: players.to_vec(),
            rules_json,
            round: 1,
            turn: 0,
            phase: Phase::Shop,
            order,
            states: (0..teams).map(|_| null()).collect(),
            calls: vec![0; teams],
            status: vec![PlayerStatus::Ok; teams],
            crashed: vec![false; teams],
            warnings,
        })
    }

    /// The board and everything on it.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The round being played, from 1.
    pub fn round(&self) -> u32 {
        self.round
    }

    /// The turn being played (0 during the shop phase).
    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// Where the match is.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// This round's team order.
    pub fn order(&self) -> &[u8] {
        &self.order
    }

    /// The state a team's bot last stored, as JSON text.
    pub fn bot_state(&self, team: u8) -> &str {
        self.states.get(usize::from(team).wrapping_sub(1)).map_or("null", |state| state.get())
    }

    /// Which cells (row-major) team `team` sees now.
    pub fn visible_cells(&self, team: u8) -> Vec<bool> {
        codec::team_vision(&self.world, team)
    }

    /// What happened in the last step: rejected entries, `reason` and `error` strings,
    /// invalid replies, timeouts.
    pub fn log(&self) -> &[String] {
        &self.world.log
    }

    pub(super) fn teams(&self) -> usize {
        self.players.len()
    }

    /// Whether team `team` is asked in the current phase.
    fn askable(&self, team: u8) -> bool {
        let index = usize::from(team) - 1;
        !self.crashed[index]
            && match self.phase {
                Phase::Shop => true,
                Phase::Turn { .. } => self.world.has_adventurers(team),
                Phase::Over => false,
            }
    }

    /// Moves on to the next step that asks somebody, playing the rules' own steps
    /// (ends of turns, ends of rounds) on the way.
    fn advance(&mut self) {
        loop {
            match self.phase {
                Phase::Over => return,
                Phase::Shop => {
                    if self.order.iter().any(|&team| self.askable(team)) {
                        return;
                    }
                    self.turn = 1;
                    self.phase = Phase::Turn { next: 0 };
                }
                Phase::Turn { next } if next >= self.order.len() => self.finish_turn(),
                Phase::Turn { next } => match self.world.rules.decision_mode {
                    rules::DecisionMode::Sequential => {
                        if self.askable(self.order[next]) {
                            return;
                        }
                        self.phase = Phase::Turn { next: next + 1 };
                    }
                    rules::DecisionMode::Snapshot => {
                        if self.order.iter().any(|&team| self.askable(team)) {
                            return;
                        }
                        self.phase = Phase::Turn { next: self.order.len() };
                    }
                },
            }
        }
    }

    /// The end-of-turn step, then the end-of-round check (Settled question 23).
    fn finish_turn(&mut self) {
        self.world.end_of_turn(self.turn);
        if !self.world.adventurers.is_empty() && self.turn < self.world.rules.max_turns_per_round {
            self.turn += 1;
            self.phase = Phase::Turn { next: 0 };
            return;
        }
        // Adventurers still on the map at the cap are lost with what they carry.
        let lost = std::mem::take(&mut self.world.adventurers);
        if !lost.is_empty() {
            let ids: Vec<String> = lost.iter().map(|adventurer| format!("a{}", adventurer.id)).collect();
            self.world.log.push(format!("round {} ends at the turn cap; lost: {}", self.round, ids.join(" ")));
        }
        if self.round >= self.world.rules.nb_rounds {
            self.world.auto_sell();
            self.phase = Phase::Over;
            return;
        }
        self.round += 1;
        self.turn = 0;
        // Team ids rotated left by (round − 1).
        let teams = self.teams();
        self.order = (0..teams).map(|k| ((k + self.round as usize - 1) % teams) as u8 + 1).collect();
        let order = self.order.clone();
        self.world.start_round(&order);
        self.phase = Phase::Shop;
    }

    pub(super) fn call(&self) -> Call {
        if self.phase == Phase::Shop { Call::Shop } else { Call::Play }
    }

    /// Applies one team's reply.
    fn handle(&mut self, team: u8, action: OstibotAction) {
        let index = usize::from(team) - 1;
        let reply = match action.0 {
            ActionKind::TimedOut => {
                if self.status[index] == PlayerStatus::Ok {
                    self.status[index] = PlayerStatus::TimedOut;
                }
                self.world.log.push(format!("team {team}: timed out; idle"));
                return;
            }
            ActionKind::Gone(status) => {
                self.status[index] = status;
                self.crashed[index] = true;
                self.world.log.push(format!("team {team}: the bot is gone; idle for the rest of the game"));
                return;
            }
            ActionKind::Reply(Err(problem)) => {
                self.world.log.push(format!("team {team}: invalid reply: {problem}"));
                return;
            }
            ActionKind::Reply(Ok(reply)) => reply,
        };
        for note in &reply.notes {
            self.world.log.push(format!("team {team}: {note}"));
        }
        match reply.state {
            StateChange::Keep => {}
            StateChange::Replace(text) => {
                if let Ok(state) = RawValue::from_string(text) {
                    self.states[index] = state;
                }
            }
            StateChange::TooBig(bytes) => {
                self.world.log.push(format!("team {team}: state of {bytes} bytes is over 1 MiB; kept the old one"));
            }
        }
        match reply.entries {
            Entries::Shop(entries) => {
                for (at, entry) in entries.iter().enumerate() {
                    if let Err(problem) = entry.as_ref().map_err(Clone::clone).and_then(|e| self.world.shop(team, e)) {
                        self.world.log.push(format!("team {team}: shop action {at} rejected: {problem}"));
                    }
                }
            }
            Entries::Play(entries) => self.play(team, &entries),
        }
    }

    /// Applies a team's `play` entries in order; only the first entry per adventurer counts.
    fn play(&mut self, team: u8, entries: &[PlayEntry]) {
        let mut seen: Vec<u32> = Vec::new();
        for (at, entry) in entries.iter().enumerate() {
            let mut reject = |problem: String| self_log(&mut self.world.log, team, at, &problem);
            let id = match &entry.adventurer {
                Ok(id) => *id,
                Err(problem) => {
                    reject(problem.clone());
                    continue;
                }
            };
            let owned = self.world.adventurer_index(id).is_some_and(|i| self.world.adventurers[i].team == team);
            if !owned {
                self_log(
                    &mut self.world.log,
                    team,
                    at,
                    &format!("a{id} is not an adventurer of team {team} on the map"),
                );
                continue;
            }
            if seen.contains(&id) {
                self_log(&mut self.world.log, team, at, &format!("a{id} already acted this turn"));
                continue;
            }
            seen.push(id);
            match &entry.command {
                Err(problem) => self_log(&mut self.world.log, team, at, &format!("a{id} idles: {problem}")),
                Ok(Command::Move(dir)) => self.world.move_adventurer(id, *dir),
                Ok(Command::Use(item)) => {
                    let used = match item {
                        Some(item) => self.world.use_item(id, *item),
                        None => Err("itemId is no item id".into()),
                    };
                    if let Err(problem) = used {
                        self_log(&mut self.world.log, team, at, &format!("a{id} idles: {problem}"));
                    }
                }
            }
        }
    }

    /// The seats to ask this step, in seat order (see [`crate::Game::to_act`]).
    pub(super) fn seats_to_ask(&self) -> Vec<Seat> {
        let seats = |teams: &mut dyn Iterator<Item = u8>| {
            let mut seats: Vec<Seat> = teams.map(|team| usize::from(team) - 1).collect();
            seats.sort_unstable();
            seats
        };
        match self.phase {
            Phase::Over => Vec::new(),
            Phase::Turn { next } if self.world.rules.decision_mode == rules::DecisionMode::Sequential => {
                seats(&mut self.order.get(next).copied().filter(|&team| self.askable(team)).into_iter())
            }
            Phase::Shop | Phase::Turn { .. } => seats(&mut self.order.iter().copied().filter(|&t| self.askable(t))),
        }
    }

    /// Plays one step with the actions of the seats asked (see [`crate::Game::apply`]).
    pub(super) fn play_step(&mut self, actions: Vec<(Seat, OstibotAction)>) {
        self.world.log = std::mem::take(&mut self.warnings);
        let asked = self.seats_to_ask();
        let mut actions: Vec<(Seat, OstibotAction)> =
            actions.into_iter().filter(|(seat, _)| asked.contains(seat)).collect();
        for seat in &asked {
            self.calls[*seat] += 1;
        }
        let mut take = |team: u8| {
            let at = actions.iter().position(|(seat, _)| *seat + 1 == usize::from(team))?;
            Some(actions.swap_remove(at).1)
        };
        match self.phase {
            Phase::Over => return,
            Phase::Shop => {
                for team in self.order.clone() {
                    if let Some(action) = take(team) {
                        self.handle(team, action);
                    }
                }
                self.turn = 1;
                self.phase = Phase::Turn { next: 0 };
            }
            Phase::Turn { next } => match self.world.rules.decision_mode {
                rules::DecisionMode::Sequential => {
                    if let Some(action) = self.order.get(next).copied().and_then(&mut take) {
                        self.handle(self.order[next], action);
                    }
                    self.phase = Phase::Turn { next: next + 1 };
                }
                rules::DecisionMode::Snapshot => {
                    for team in self.order.clone() {
                        if let Some(action) = take(team) {
                            self.handle(team, action);
                        }
                    }
                    self.phase = Phase::Turn { next: self.order.len() };
                }
            },
        }
        self.advance();
    }

    /// Every team's score (its bank), rank and status.
    pub(super) fn outcomes(&self) -> Vec<PlayerOutcome> {
        let ranks = ranks_by_score(&self.world.banks);
        self.world
            .banks
            .iter()
            .zip(ranks)
            .zip(&self.status)
            .map(|((bank, rank), status)| PlayerOutcome { score: *bank, rank, status: *status })
            .collect()
    }
}

fn self_log(log: &mut Vec<String>, team: u8, at: usize, problem: &str) {
    log.push(format!("team {team}: action {at} rejected: {problem}"));
}
