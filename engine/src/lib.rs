//! The rules of every matchfarm game: pure, synchronous and deterministic.
//!
//! # Layout
//! - [`Game`]: the one trait every game implements; [`AnyGame`] dispatches over them.
//! - [`Match`]: drives one match: requests out, [`BotReply`]s in, replay lines out.
//! - [`replay`]: the replay format (header, one frame per step, footer) and its verifier.
//! - [`GameRng`]: the only source of randomness, seeded from the match seed.
//! - [`builtin`]: bots compiled into the engine; they read the typed match (only what
//!   their seat's observation holds) and reply in the wire format, so their replies
//!   go through the same parsers and into replays like any bot's.
//! - [`wire`]: how a request and a reply travel over the stdio and HTTP transports.
//! - One module per game: [`vindinium`], [`botwars`], [`ostibot`], [`maze`].
//! - [`MapError`]: what is wrong with a map file, the same shape for every game that
//!   has maps (a line and column where the problem has one).
//! - [`Pos`]: a cell, the same convention in every game (`x` the column, `y` the row).
//!
//! # One game's folder
//! Every game folder has the same files, each for one concern, so that a fix to a
//! game's protocol, say, is found in the same place in all four:
//! - `mod.rs`: the game's summary, its [`Game`] impl (which only wires the files below
//!   together) and what it exports.
//! - `rules.rs`: the tunable rules (the `Rules` type, the original's values as its
//!   default, presets, the checks of every key).
//! - `state.rs`: the match state and how one step changes it: the rules of play.
//! - `codec.rs`: the bot I/O and the replay documents: the observation a seat is sent,
//!   a reply read into an action (malformed input is an action too), the state written
//!   into a frame. Where a game's original protocol has another position convention
//!   than [`Pos`], the conversion is here and nowhere else.
//! - `map.rs`: the map file format (parse, check, render), for games with maps; a
//!   game's generator of default maps sits beside it as `generator.rs`.
//! - `bots.rs`: the built-in bots (a `bots/` folder when they are many files).
//!
//! A game adds a file of its own only for a concern the template has no place for,
//! named for it (Ostibot's `vision.rs` and `shop.rs`).
//!
//! Nothing here does IO, reads the clock or draws unseeded randomness: the same
//! setup and the same replies give the same replay, byte for byte.
//!
//! # A step's cost
//! A game writes its observations ([`Game::write_observation`]) and its state
//! ([`Game::write_state`]) into a buffer it is handed: [`Match::submit`] writes the
//! whole frame line into one buffer it reuses, the state in place, and an observation
//! is only written for a bot outside the engine. The documents written on every step
//! are written field by field where serde's generic path costs most of a step; each
//! such writer has a test comparing it with serde's rendering of the same document.
#![deny(missing_docs)]

mod any_game;
pub mod botwars;
pub mod builtin;
mod game;
mod game_bot;
mod map_error;
mod matches;
pub mod maze;
pub mod ostibot;
mod pos;
mod ranking;
pub mod replay;
mod reply;
mod rng;
pub mod vindinium;
pub mod wire;
mod writer;

pub use any_game::AnyGame;
pub use farm_proto::{GameKind, PlayerOutcome, PlayerStatus, Seat};
pub use game::{Deadlines, Game, REPLY_TIMEOUT_MS, SetupError, TURNS};
pub use map_error::MapError;
pub use matches::{Match, MatchSetup, StepError};
pub use pos::Pos;
pub use ranking::ranks_by_score;
pub use reply::{BotReply, java_trim};
pub use rng::GameRng;

/// This engine, as a result's reproduction bundle names it: its version and the replay
/// format it writes.
pub fn engine_version() -> String {
    format!("farm-engine {} (replay format {})", env!("CARGO_PKG_VERSION"), replay::FORMAT_VERSION)
}
