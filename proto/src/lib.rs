//! Wire types shared by every matchfarm component: which games exist, how a bot is
//! launched and spoken to, and how one player fared in a match.
//!
//! # Layout
//! - [`GameKind`]: the closed set of games the engine plays.
//! - [`BotSpec`], [`BotLaunch`], [`Transport`]: how to start a bot and talk to it.
//! - [`PlayerStatus`], [`PlayerOutcome`]: the per-seat part of a match result.
//! - [`MoveClock`]: how a match times its bots' moves.
//! - [`AuditEnvelope`], [`ControlEnvelope`]: audits of stored replays on `farm.audits`,
//!   and what the coordinator tells every worker through `farm.control`.
//! - [`LIVE_EXCHANGE`], [`WatchedMatch`]: matches relayed to viewers as they are played.
//! - [`BuildJob`], [`BuildReport`]: bots built from their authors' sources, on
//!   `farm.builds` and `farm.build-results`.
//! - [`limits`]: every limit on what an outsider can make the farm spend.
//! - [`JobEnvelope`], [`MatchJob`], [`ResultEnvelope`], [`MatchResult`]: what travels on
//!   the `farm.jobs` and `farm.results` queues, with [`SCHEMA_VERSION`].
//!
//! This crate holds data only: serde, no IO, no async runtime.
#![deny(missing_docs)]

mod audit;
mod bot;
mod build;
mod clock;
mod game;
mod job;
pub mod limits;
mod live;
mod outcome;

pub use audit::{
    AUDITS_QUEUE, AuditEnvelope, AuditJob, AuditVerdict, CONTROL_EXCHANGE, ControlEnvelope, ControlMessage,
};
pub use bot::{
    BotLaunch, BotLimits, BotSpec, BotSpecError, MAX_IMAGE_ARG_BYTES, MAX_IMAGE_ARGS, Transport, check_image_args,
    check_transport,
};
pub use build::{
    BUILD_RESULTS_QUEUE, BUILDS_QUEUE, BuildAnswer, BuildJob, BuildOutcome, BuildReport, MAX_BOT_NAME,
    SUBMITTED_REPOSITORY, is_bot_name, is_submitted_image,
};
pub use clock::{ClockKind, ClockProblem, MoveClock};
pub use game::{GameKind, UnknownGame};
pub use job::{
    ContainerIsolation, JOBS_QUEUE, JobEnvelope, MAX_WORKER_NAME, MatchJob, MatchResult, PlayerResult, RESULTS_QUEUE,
    Reproduction, ResultEnvelope, SCHEMA_VERSION, TimeSummary, is_worker_name, schema_of,
};
pub use live::{
    ATTEMPT_HEADER, END_HEADER, LINE_HEADER, LIVE_EXCHANGE, MESSAGE_LINES, TOKEN_HEADER, WATCH_LEASE_SECS,
    WATCH_RENEW_SECS, WatchedMatch,
};
pub use outcome::{CrashReport, PlayerOutcome, PlayerStatus};

/// A seat in a match, counted from 0 in the order the bots were given.
///
/// Bots see it as the `FARM_SEAT` environment variable. Games map it to their own
/// names: Vindinium hero `seat + 1`, Skookum Botwars `r` for seat 0 and `b` for seat 1.
pub type Seat = usize;
