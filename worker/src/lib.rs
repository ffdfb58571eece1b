//! The matchfarm worker: runs matches between bots.
//!
//! # Layout
//! - [`bots`]: bot sessions: built-in bots and local processes over the stdio
//!   transport (line channel, capped stderr, process groups).
//! - [`runner`]: plays one match: deadlines from the rules, the replay streamed as it
//!   is played, every bot ended whatever happens.
//!
//! The binary `farm-worker` only parses its command line and calls into these.
#![deny(missing_docs)]

pub mod bots;
pub mod runner;

pub use runner::{MatchReport, RunError, RunnerOptions, SeatReport, fill_seats, play_match};
