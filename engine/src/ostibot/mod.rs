//! Ostibot, as `../shared/games/ostibot.md` binds it: 2 to 9 teams of adventurers
//! loot a dungeon and must escape through portals before the corruption burns them.
//!
//! # Layout
//! - [`rules`]: every constant under its seed name, the item table, the presets.
//! - [`map`]: the map format and its checks; [`vision`]: radius and line of sight.
//! - `world`: moves, `use`, deaths, corruption, spawning; `shop`: the shop phase.
//! - `io`: the call and reply JSON, and the replay snapshot; [`bots`]: built-in bots.
//!
//! # Steps
//! Seat `k` plays team `k + 1`. A round is one **shop step** (every team asked at
//! once) and then turns. With `decisionMode` `"sequential"` (the default) every turn
//! is one step per team with adventurers on the map, in the round's team order, each
//! team seeing the moves of the teams before it; with `"snapshot"` a turn is one step
//! asking all those teams at once. A team whose bot crashed is never asked again; its
//! adventurers idle.
//!
//! # Bot I/O (stdio: one JSON line per call, one JSON line back)
//! Request, with `seq` counting the calls made to this team (1, 2, ...):
//! ```text
//! {"call":"shop","seq":1,"input":{"you":1,"round":1,"rules":{…all rules, items included…},
//!  "teams":[{"id":1,"name":"alpha"},{"id":2,"name":"beta"}],"teamsGold":{"1":3,"2":3},
//!  "adventurers":[ADVENTURER, …],"state":null}}
//! {"call":"play","seq":2,"input":{"you":1,"rules":{…},"teams":[…],
//!  "gameState":{"round":1,"turn":1,"width":23,"height":11,"teamsGold":{"1":1,"2":3},
//!   "map":["#####…", …],"corrupted":[[x,y], …],"entities":[ENTITY, …]},"state":…}}
//! ```
//! `map` is terrain only (`# . 1-9 ^ ~ L R U D H`; doors, chests, vases and portals are
//! entities and show as `.`); `corrupted` is sorted by (y, x); `entities` by (y, x),
//! then kind (adventurer, door, chest, vase, portal, gold, item), then id number.
//! Entity shapes, with their fields in this order:
//! ```text
//! own adventurer  {"id":"a1","type":"adventurer","team":1,"x":1,"y":1,"hp":120,"maxHp":120,"gold":0,
//!                  "damage":25,"armor":0,"vision":5,"spikeImmune":false,
//!                  "equipment":{"weapon":{"id":"i1","itemType":"rusty_sword"},"armor":null,"accessory":null},
//!                  "inventory":[{"id":"i2","itemType":"health_potion"}],"veteran":false}
//! enemy adventurer {"id":"a4","type":"adventurer","team":2,"x":5,"y":4,"hp":120,"maxHp":120,"equipment":{…}}
//! door/chest/vase {"id":"e32","type":"chest","x":11,"y":1,"hp":100}
//! portal          {"id":"e45","type":"portal","x":21,"y":1,"hp":100,"open":false}
//! gold pile       {"id":"g1","type":"gold","x":4,"y":1,"amount":3}
//! ground item     {"id":"i7","type":"item","itemType":"chainmail","x":4,"y":5}
//! ```
//! Own adventurers are always listed; everything else only on cells the team sees.
//! Shop input `adventurers` holds the team's adventurers in the own-adventurer shape.
//!
//! Replies (`seq` echoed; a reply with another `seq` is discarded, one without `seq`
//! is accepted):
//! ```text
//! {"seq":1,"actions":[{"buy":{"adventurerId":"a1","itemType":"rusty_sword","equip":true}},
//!   {"sell":{"adventurerId":"a1","itemId":"i3"}},{"equip":{"adventurerId":"a1","itemId":"i3"}},
//!   {"unequip":{"adventurerId":"a1","itemId":"i3"}},{"transfer":{"from":"a1","to":"a2","itemId":"i3"}}],
//!  "state":{"plan":"rush"}}
//! {"seq":2,"actions":[{"adventurerId":"a1","move":{"direction":"RIGHT","reason":"to chest"}},
//!   {"adventurerId":"a2","use":{"itemId":"i9"}}],"error":null,"state":{"plan":"rush"}}
//! ```
//! A reply that is not a JSON object, whose `actions` is neither an array nor null, or
//! over 2 MiB, does nothing. `state` absent keeps the team's state; present (null
//! too) replaces it unless it is over 1 MiB. Shop and play share the state.
//! Timeouts and invalid replies idle the team for that call; nobody is disqualified.
//! Rejected entries, `reason` and `error` strings go to the replay frame's `log`.

pub mod bots;
mod io;
pub mod map;
pub mod rules;
mod shop;
pub mod vision;
mod world;

use std::ops::RangeInclusive;

use serde_json::value::{RawValue, to_raw_value};

pub use map::{Dir, ObjectKind, OstibotMap, Pos, Terrain};
pub use rules::{DecisionMode, ItemStats, OstibotRules, Slot};
pub use world::{Adventurer, GoldPile, GroundItem, Item, MapObject, World};

use crate::game::write_json;
use crate::{
    AnyGame, BotReply, Deadlines, Game, GameKind, GameRng, PlayerOutcome, PlayerStatus, Seat, SetupError,
    ranks_by_score,
};
use io::{Call, Command, Entries, PlayEntry, StateChange, TeamDoc, ValidReply};

/// The map a match plays when none is named: a 2-team map.
pub const DEFAULT_MAP: &str = include_str!("../../../maps/ostibot/classic-2.txt");

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

/// One team's reply for one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OstibotAction(ActionKind);

#[derive(Debug, Clone, PartialEq, Eq)]
enum ActionKind {
    Reply(Result<ValidReply, String>),
    TimedOut,
    /// The bot is gone, with this status.
    Gone(PlayerStatus),
}

/// An Ostibot match.
#[derive(Debug, Clone)]
pub struct Ostibot {
    // Boxed: the board is most of a match's size, and `AnyGame` holds matches by value.
    world: Box<World>,
    players: Vec<String>,
    rules_json: Box<RawValue>,
    round: u32,
    turn: u32,
    phase: Phase,
    order: Vec<u8>,
    states: Vec<Box<RawValue>>,
    calls: Vec<u64>,
    status: Vec<PlayerStatus>,
    crashed: Vec<bool>,
    /// Map warnings, logged with the first step.
    warnings: Vec<String>,
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
        io::team_vision(&self.world, team)
    }

    /// What happened in the last step: rejected entries, `reason` and `error` strings,
    /// invalid replies, timeouts.
    pub fn log(&self) -> &[String] {
        &self.world.log
    }

    fn teams(&self) -> usize {
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

    fn call(&self) -> Call {
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
}

fn self_log(log: &mut Vec<String>, team: u8, at: usize, problem: &str) {
    log.push(format!("team {team}: action {at} rejected: {problem}"));
}

impl Game for Ostibot {
    const KIND: GameKind = GameKind::Ostibot;
    type Rules = OstibotRules;
    type Action = OstibotAction;
    const PRESETS: &'static [(&'static str, &'static str)] = rules::PRESETS;

    /// Decision A-15: as many teams as the map has spawner digits, 2 to 9.
    fn seats() -> RangeInclusive<usize> {
        2..=9
    }

    fn default_map(_rules: &OstibotRules, _rng: &mut GameRng) -> Result<Option<String>, SetupError> {
        Ok(Some(DEFAULT_MAP.to_owned()))
    }

    fn new(rules: OstibotRules, map: Option<&str>, players: &[String], _seed: u64) -> Result<Self, SetupError> {
        let map_error = |problem: String| SetupError::Map { game: Self::KIND, problem };
        let map = OstibotMap::parse(map.unwrap_or(DEFAULT_MAP)).map_err(|e| map_error(e.to_string()))?;
        Ostibot::from_map(rules, map, players)
    }

    fn deadlines(rules: &OstibotRules) -> Deadlines {
        let ms = rules.timeout_ms();
        Deadlines { first_ms: ms, turn_ms: ms }
    }

    fn max_steps(&self) -> u64 {
        let rules = &self.world.rules;
        let turns = u64::from(rules.max_turns_per_round).saturating_mul(self.teams() as u64);
        u64::from(rules.nb_rounds).saturating_mul(turns.saturating_add(1))
    }

    fn to_act(&self) -> Vec<Seat> {
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

    fn write_observation(&self, seat: Seat, out: &mut Vec<u8>) {
        let team = (seat + 1).min(self.teams()) as u8;
        let index = usize::from(team) - 1;
        let teams: Vec<TeamDoc<'_>> =
            self.players.iter().enumerate().map(|(k, name)| TeamDoc { id: k as u8 + 1, name }).collect();
        let seq = self.calls[index] + 1;
        let state = &self.states[index];
        match self.call() {
            Call::Shop => {
                let adventurers = self
                    .world
                    .adventurers
                    .iter()
                    .filter(|adventurer| adventurer.team == team)
                    .map(|adventurer| io::own_adventurer_doc(&self.world, adventurer))
                    .collect();
                let input = io::ShopInput {
                    you: team,
                    round: self.round,
                    rules: &self.rules_json,
                    teams: &teams,
                    teams_gold: io::teams_gold(&self.world),
                    adventurers,
                    state,
                };
                io::write_call_line(out, Call::Shop, seq, &input);
            }
            Call::Play => {
                let input = io::PlayInput {
                    you: team,
                    rules: &self.rules_json,
                    teams: &teams,
                    game_state: io::game_state(&self.world, self.round, self.turn, Some(team)),
                    state,
                };
                io::write_call_line(out, Call::Play, seq, &input);
            }
        }
    }

    fn parse_reply(&self, seat: Seat, reply: &BotReply) -> OstibotAction {
        let seq = self.calls.get(seat).map_or(1, |calls| calls + 1);
        OstibotAction(match reply {
            BotReply::Line(text) => ActionKind::Reply(io::parse_reply(text, self.call(), seq)),
            BotReply::Unreadable => ActionKind::Reply(Err("unreadable (not UTF-8, or too long)".into())),
            BotReply::Timeout => ActionKind::TimedOut,
            BotReply::Crashed => ActionKind::Gone(PlayerStatus::Crashed),
            BotReply::OutputLimit => ActionKind::Gone(PlayerStatus::OutputLimit),
        })
    }

    fn apply(&mut self, actions: Vec<(Seat, OstibotAction)>, _rng: &mut GameRng) {
        self.world.log = std::mem::take(&mut self.warnings);
        let asked = self.to_act();
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

    fn is_over(&self) -> bool {
        self.phase == Phase::Over
    }

    fn write_state(&self, out: &mut Vec<u8>) {
        let doc = io::SnapshotDoc {
            phase: match self.phase {
                Phase::Shop => "shop",
                Phase::Turn { .. } => "turn",
                Phase::Over => "over",
            },
            order: &self.order,
            state: io::game_state(&self.world, self.round, self.turn, None),
            escaped: io::escaped(&self.world),
            log: &self.world.log,
        };
        write_json(out, &doc);
    }

    fn outcome(&self) -> Vec<PlayerOutcome> {
        let ranks = ranks_by_score(&self.world.banks);
        self.world
            .banks
            .iter()
            .zip(ranks)
            .zip(&self.status)
            .map(|((bank, rank), status)| PlayerOutcome { score: *bank, rank, status: *status })
            .collect()
    }

    fn of(game: &AnyGame) -> Option<&Self> {
        if let AnyGame::Ostibot(game) = game { Some(game) } else { None }
    }
}
