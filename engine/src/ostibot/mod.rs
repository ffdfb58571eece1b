//! Ostibot, as `../shared/games/ostibot.md` binds it: 2 to 9 teams of adventurers
//! loot a dungeon and must escape through portals before the corruption burns them.
//!
//! # Layout
//! The engine's game-folder template (see the crate's "One game's folder"):
//! - [`rules`]: every constant under its seed name, the item table, the presets.
//! - `state`: the match ([`Ostibot`]: rounds, the shop step, the team order) and the
//!   board in play ([`World`]: moves, `use`, deaths, corruption, spawning).
//! - `codec`: the call and reply JSON, and the replay snapshot.
//! - [`map`]: the map format and its checks.
//! - [`bots`]: the built-in bots.
//!
//! And two concerns of Ostibot's own: [`vision`] (radius and line of sight) and `shop`
//! (the shop phase's actions).
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
mod codec;
pub mod map;
pub mod rules;
mod shop;
mod state;
pub mod vision;

use std::ops::RangeInclusive;

pub use codec::OstibotAction;
pub use map::{Dir, ObjectKind, OstibotMap, Terrain};
pub use rules::{DecisionMode, ItemStats, OstibotRules, Slot};
pub use state::{Adventurer, GoldPile, GroundItem, Item, MapObject, Ostibot, Phase, World};

use crate::{BotReply, Deadlines, Game, GameKind, GameRng, PlayerOutcome, Seat, SetupError};

/// The map a match plays when none is named: a 2-team map.
pub const DEFAULT_MAP: &str = include_str!("../../../maps/ostibot/classic-2.txt");

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
        self.seats_to_ask()
    }

    fn write_observation(&self, seat: Seat, out: &mut Vec<u8>) {
        codec::write_observation(self, seat, out);
    }

    fn parse_reply(&self, seat: Seat, reply: &BotReply) -> OstibotAction {
        codec::read_reply(self, seat, reply)
    }

    fn apply(&mut self, actions: Vec<(Seat, OstibotAction)>, _rng: &mut GameRng) {
        self.play_step(actions);
    }

    fn is_over(&self) -> bool {
        self.phase == Phase::Over
    }

    fn write_state(&self, out: &mut Vec<u8>) {
        codec::write_state(self, out);
    }

    fn outcome(&self) -> Vec<PlayerOutcome> {
        self.outcomes()
    }
}
