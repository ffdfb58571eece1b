//! The [`Game`] trait every game implements, and what a setup is checked against: the
//! reply deadlines and turn counts rules may set, and the [`SetupError`]s. Nothing here
//! knows the games: [`AnyGame`](crate::AnyGame) dispatches over them.

use std::ops::RangeInclusive;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::writer::text_of;
use crate::{BotReply, GameKind, GameRng, PlayerOutcome, Seat};
use farm_proto::limits;

/// How long a bot may take to reply, as each game's rules set it.
///
/// The engine has no clock: these are numbers for the runner to enforce. Time to
/// start a bot's process or container is never part of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// For a bot's first request.
    pub first_ms: u64,
    /// For every later request.
    pub turn_ms: u64,
}

/// The range of every reply deadline a game's rules set, in milliseconds: up to ten
/// minutes (Ostibot's original gives each call 300 s).
pub const REPLY_TIMEOUT_MS: RangeInclusive<u64> = limits::REPLY_TIMEOUT_MS.inclusive();

/// The range of every turn count a game's rules set (per round, for Ostibot). With
/// the reply deadlines it bounds a match's length: the worker's wall-clock limit per
/// match is derived from both.
pub const TURNS: RangeInclusive<u64> = limits::TURNS.inclusive();

/// `Ok` when the rules value `key` is within `range`, else what is wrong, naming the
/// key and the range.
pub(crate) fn check_rule(key: &str, value: u64, range: RangeInclusive<u64>) -> Result<(), String> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(format!("{key} must be {} to {}, got {value}", range.start(), range.end()))
    }
}

/// A match that cannot start: bad rules, a bad map or the wrong number of players.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// The rules overrides are not valid for this game.
    #[error("invalid {game} rules: {problem}")]
    Rules {
        /// The game.
        game: GameKind,
        /// What is wrong, naming the key.
        problem: String,
    },
    /// The map does not parse or breaks the game's map rules.
    #[error("invalid {game} map: {problem}")]
    Map {
        /// The game.
        game: GameKind,
        /// What is wrong, with line and column where there is one.
        problem: String,
    },
    /// The game cannot be played by this many bots.
    #[error("{game} is played by {min} to {max} bots, not {given}")]
    Players {
        /// The game.
        game: GameKind,
        /// The smallest number of seats.
        min: usize,
        /// The largest number of seats.
        max: usize,
        /// How many were given.
        given: usize,
    },
}

/// The rules of one game: the single trait the match driver, the conformance harness
/// and the runner rely on.
///
/// A game is a state machine over steps. Each step, [`Game::to_act`] names the seats
/// that must be asked; their replies are parsed with [`Game::parse_reply`] (which
/// never fails: a malformed reply is an action with the outcome the rules give) and
/// applied together by [`Game::apply`]. A step may ask nobody (a crashed Vindinium
/// hero's turn is played by the server) but still advances the game.
pub trait Game: Sized {
    /// Which game this is.
    const KIND: GameKind;
    /// Tunable rules (turn limits, timeouts, ...), with the original's values as default.
    type Rules: Serialize + DeserializeOwned + Default + Clone;
    /// One seat's parsed reply for one step.
    type Action;
    /// Named sets of rules overrides the original defines (Ostibot's `SemiFinal`,
    /// say), each a JSON object's text. Tournaments pick one by name.
    const PRESETS: &'static [(&'static str, &'static str)] = &[];

    /// How many bots can sit at one match.
    fn seats() -> RangeInclusive<usize>;

    /// The map to play when a setup names none, or `None` for games without maps.
    /// Generated maps draw from `rng`.
    fn default_map(rules: &Self::Rules, rng: &mut GameRng) -> Result<Option<String>, SetupError>;

    /// A new match. `map` is a map file's text; `players` names the seats.
    fn new(rules: Self::Rules, map: Option<&str>, players: &[String], seed: u64) -> Result<Self, SetupError>;

    /// The reply deadlines the rules give.
    fn deadlines(rules: &Self::Rules) -> Deadlines;

    /// The most steps a match can take; it is over after at most this many.
    fn max_steps(&self) -> u64;

    /// The seats to ask this step, in seat order. Empty once the match is over.
    fn to_act(&self) -> Vec<Seat>;

    /// Appends to `out` what `seat` is sent this step, in the game's wire format: one
    /// line of text, or for Maze several lines (its protocol says how many), without a
    /// final newline. Written straight into the caller's buffer, which a runner reuses
    /// from step to step.
    fn write_observation(&self, seat: Seat, out: &mut Vec<u8>);

    /// [`Game::write_observation`] as a string of its own.
    fn observation(&self, seat: Seat) -> String {
        text_of(|out| self.write_observation(seat, out))
    }

    /// Reads `seat`'s reply. Malformed or illegal input is an action too.
    fn parse_reply(&self, seat: Seat, reply: &BotReply) -> Self::Action;

    /// Plays one step with an action for every seat of [`Game::to_act`].
    fn apply(&mut self, actions: Vec<(Seat, Self::Action)>, rng: &mut GameRng);

    /// Whether the match has ended.
    fn is_over(&self) -> bool;

    /// Appends to `out` the state after the last step, as recorded in replay frames:
    /// one JSON value.
    fn write_state(&self, out: &mut Vec<u8>);

    /// [`Game::write_state`] as a JSON value of its own.
    fn snapshot(&self) -> Box<RawValue> {
        // `write_state` writes one JSON value; `null` would only stand for a bug there.
        RawValue::from_string(text_of(|out| self.write_state(out))).unwrap_or_else(|_| null_value())
    }

    /// Every seat's score, rank and status; final once [`Game::is_over`].
    fn outcome(&self) -> Vec<PlayerOutcome>;
}

fn null_value() -> Box<RawValue> {
    RawValue::from_string("null".into()).unwrap_or_else(|_| unreachable!("null is JSON"))
}
