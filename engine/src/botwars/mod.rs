//! Skookum Botwars, as the original server plays it (`../shared/games/botwars.md`).
//!
//! The grid is a string of cells, numbered row by row from 0 at the top left: cell
//! `y * cols + x` is [`Pos::index`](crate::Pos::index) of column `x`, row `y`, and
//! the moves of the wire format name cells by these numbers. `.` is empty, `r` and `b`
//! the two sides' botlets, `*` energy, `x` and `X` botlets of side r and b that died
//! last turn. Both sides move at once; a malformed reply, a timeout or a dead bot
//! disqualifies its side and ends the match.
//!
//! - `rules.rs`: [`BotwarsRules`] and their checks.
//! - `state.rs`: the match ([`Botwars`]) and how a turn changes it.
//! - `codec.rs`: a reply read into a [`BotwarsAction`], the request and the state
//!   written as the original's JSON.
//! - [`bots`]: the built-in bots.

pub mod bots;
mod codec;
mod rules;
mod state;

use std::ops::RangeInclusive;

pub use codec::{BotwarsAction, parse_moves};
pub use rules::BotwarsRules;
pub use state::{BOTLET, Botwars, DEAD, EMPTY, ENERGY, Side, Winner};

use crate::{BotReply, Deadlines, Game, GameKind, GameRng, PlayerOutcome, Seat, SetupError};

impl Game for Botwars {
    const KIND: GameKind = GameKind::Botwars;
    type Rules = BotwarsRules;
    type Action = BotwarsAction;

    fn seats() -> RangeInclusive<usize> {
        2..=2
    }

    fn default_map(_rules: &BotwarsRules, _rng: &mut GameRng) -> Result<Option<String>, SetupError> {
        Ok(None)
    }

    fn new(rules: BotwarsRules, map: Option<&str>, _players: &[String], seed: u64) -> Result<Self, SetupError> {
        if map.is_some() {
            return Err(SetupError::Map { game: Self::KIND, problem: "Skookum Botwars has no maps".into() });
        }
        let empty = ".".repeat(rules.check()?);
        Botwars::from_position(rules, &empty, [1, 1], seed)
    }

    fn deadlines(rules: &BotwarsRules) -> Deadlines {
        Deadlines { first_ms: rules.reply_timeout_ms, turn_ms: rules.reply_timeout_ms }
    }

    fn max_steps(&self) -> u64 {
        u64::from(self.rules.max_turns)
    }

    fn to_act(&self) -> Vec<Seat> {
        if self.winner.is_some() { Vec::new() } else { vec![0, 1] }
    }

    /// `{"player":"r"|"b","state":{..},"gameId":..}`, the original's request.
    fn write_observation(&self, seat: Seat, out: &mut Vec<u8>) {
        self.write_request(seat, out);
    }

    fn parse_reply(&self, _seat: Seat, reply: &BotReply) -> BotwarsAction {
        codec::action_of(reply, self.grid.len())
    }

    fn apply(&mut self, actions: Vec<(Seat, BotwarsAction)>, rng: &mut GameRng) {
        self.step(actions, rng);
    }

    fn is_over(&self) -> bool {
        self.winner.is_some()
    }

    fn write_state(&self, out: &mut Vec<u8>) {
        self.write_state_doc(out, true);
    }

    fn outcome(&self) -> Vec<PlayerOutcome> {
        self.player_outcomes()
    }
}
