//! The matchfarm worker: runs matches between bots.
//!
//! # Layout
//! - [`bots`]: bot sessions and the sandboxes that start them: built-in bots, local
//!   processes and Docker containers, over the stdio or http transport.
//! - [`runner`]: plays one match: deadlines from the rules, the replay streamed as it
//!   is played, every bot ended whatever happens.
//! - [`job`]: one job start to finish: play, store the replay and logs, build the
//!   result; shared by the RabbitMQ [`service`] and the coordinator's in-process farm.
//! - [`service`]: the worker service: jobs from RabbitMQ ([`queue`]), replays and logs
//!   to object storage ([`storage`]), results published with confirms, then the ack;
//!   [`error`] decides what is retried; [`warm`] starts the bots of jobs waiting for
//!   a slot while other matches play.
//! - [`backoff`]: how long to wait before reconnecting to RabbitMQ, the one policy of
//!   the worker service, [`queue`]'s connections and the coordinator's.
//! - [`config`], [`metrics`], [`http`]: configuration, every metric, `/metrics`.
//!
//! The binary `farm-worker` only parses its command line, installs signal handlers
//! and calls into these.
#![deny(missing_docs)]

pub mod backoff;
pub mod bots;
pub mod config;
pub mod error;
pub mod http;
pub mod job;
pub mod metrics;
pub mod queue;
pub mod runner;
pub mod service;
pub mod storage;
pub mod warm;

pub use config::{SandboxKind, WarmPool, WorkerConfig};
pub use job::JobPlayer;
pub use runner::{
    MatchIo, MatchReport, RunError, RunnerOptions, SeatReport, StartedMatch, fill_seats, play_match, start_match,
};
pub use service::{Shutdown, ShutdownTrigger, run, shutdown_channel};
