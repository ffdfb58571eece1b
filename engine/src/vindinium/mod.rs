//! Vindinium, as the original server plays it (`../shared/games/vindinium.md`).
//!
//! Four heroes move one at a time (`turn % 4`); `turn` counts single moves. A hero
//! that times out or goes away is *crashed*: it stays in the game and the rules play
//! `Stay` for it, so it still fights, mines and thirsts (decision V-3).
//!
//! # Layout
//! - [`rules`](VindiniumRules): the tunable rules.
//! - `state`: the match and how one move changes it.
//! - `codec`: a reply read into a move, and the JSON state document, with each
//!   hero's part of it kept from move to move. Positions are [`Pos`](crate::Pos)
//!   everywhere else; the codec writes the original's `x` (the row) and `y`.
//! - [`map`]: the board (which keeps its `tiles` text and mine counts as it changes)
//!   and the map file format; [`generator`]: the original's random maps.
//! - [`bots`]: the built-in bots.

pub mod bots;
mod codec;
pub mod generator;
pub mod map;
mod rules;
mod state;

use std::ops::RangeInclusive;

pub use codec::{parse_dir, parse_form_dir, server_document, server_game_id};
pub use map::{Board, Dir, HeroId, Tile, VindiniumMap, neighbors};
pub use rules::VindiniumRules;
pub use state::{ATTACK_DAMAGE, BEER_GOLD, BEER_LIFE, DAY_LIFE, MAX_LIFE, MINE_DAMAGE, Vindinium, VindiniumAction};

use crate::{BotReply, Deadlines, Game, GameKind, GameRng, PlayerOutcome, Seat, SetupError};

impl Game for Vindinium {
    const KIND: GameKind = GameKind::Vindinium;
    type Rules = VindiniumRules;
    type Action = VindiniumAction;

    fn seats() -> RangeInclusive<usize> {
        4..=4
    }

    fn default_map(_rules: &VindiniumRules, rng: &mut GameRng) -> Result<Option<String>, SetupError> {
        let map = generator::generate(rng).map_err(|e| SetupError::Map { game: Self::KIND, problem: e.to_string() })?;
        Ok(Some(map.to_string()))
    }

    fn new(rules: VindiniumRules, map: Option<&str>, players: &[String], seed: u64) -> Result<Self, SetupError> {
        let map_error = |problem: String| SetupError::Map { game: Self::KIND, problem };
        rules.check().map_err(|problem| SetupError::Rules { game: Self::KIND, problem })?;
        let map = VindiniumMap::parse(map.ok_or_else(|| map_error("Vindinium needs a map".into()))?)
            .map_err(|e| map_error(e.to_string()))?;
        Ok(Vindinium::from_map(rules, map, players, seed))
    }

    fn deadlines(rules: &VindiniumRules) -> Deadlines {
        Deadlines { first_ms: rules.move_timeout_ms, turn_ms: rules.move_timeout_ms }
    }

    fn max_steps(&self) -> u64 {
        self.rules.max_turns
    }

    fn to_act(&self) -> Vec<Seat> {
        self.seat_to_ask().into_iter().collect()
    }

    fn write_observation(&self, seat: Seat, out: &mut Vec<u8>) {
        codec::write_document(self, seat, out);
    }

    fn parse_reply(&self, _seat: Seat, reply: &BotReply) -> VindiniumAction {
        codec::read_reply(reply)
    }

    fn apply(&mut self, actions: Vec<(Seat, VindiniumAction)>, _rng: &mut GameRng) {
        self.step(actions);
    }

    fn is_over(&self) -> bool {
        self.finished
    }

    fn write_state(&self, out: &mut Vec<u8>) {
        codec::write_snapshot(self, out);
    }

    fn outcome(&self) -> Vec<PlayerOutcome> {
        Vindinium::outcome(self)
    }
}
