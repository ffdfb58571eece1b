//! The matchfarm worker: runs matches between bots.
//!
//! # Layout
//! - [`bots`]: bot sessions and the sandboxes that start them: built-in bots, local
//!   processes and Docker containers, over the stdio or http transport.
//! - [`runner`]: plays one match: deadlines from the rules, the replay streamed as it
//!   is played, every bot ended whatever happens.
//! - [`service`]: the worker service: jobs from RabbitMQ ([`queue`]), replays and logs
//!   to object storage ([`storage`]), results published with confirms, then the ack;
//!   [`error`] decides what is retried.
//! - [`config`], [`metrics`], [`http`]: configuration, every metric, `/metrics`.
//!
//! The binary `farm-worker` only parses its command line, installs signal handlers
//! and calls into these.
#![deny(missing_docs)]

pub mod bots;
pub mod config;
pub mod error;
pub mod http;
pub mod metrics;
pub mod queue;
pub mod runner;
pub mod service;
pub mod storage;

pub use config::{SandboxKind, WorkerConfig};
pub use runner::{MatchIo, MatchReport, RunError, RunnerOptions, SeatReport, fill_seats, play_match};
pub use service::{Shutdown, ShutdownTrigger, run, shutdown_channel};
