//! The matchfarm worker: runs matches between bots.
//!
//! # Layout
//! - [`bots`]: bot sessions and the sandboxes that start them: built-in bots, local
//!   processes and Docker containers, over the stdio or http transport.
//! - [`runner`]: plays one match: deadlines from the rules, the replay streamed as it
//!   is played, every bot ended whatever happens.
//! - [`job`]: one job start to finish: play, store the replay and logs, build the
//!   result; shared by the RabbitMQ [`service`] and the coordinator's in-process farm.
//! - [`service`]: the worker service: jobs from RabbitMQ ([`farm_runtime::queue`]),
//!   replays and logs to object storage ([`farm_runtime::storage`]), results published
//!   with confirms, then the ack; [`error`] decides what is retried; [`warm`] starts the
//!   bots of jobs waiting for a slot while other matches play; [`identity`]: which
//!   broker user the worker signs in as (its identity, the one the coordinator believes).
//! - [`live`]: each playing match's lines kept, and relayed while the coordinator
//!   watches it, for its live viewers.
//! - [`audit`]: other workers' matches re-verified from their stored replays;
//!   [`control`]: what the coordinator tells every worker; [`quarantine`]: what it
//!   imposes on a worker whose results it no longer trusts; [`reproduce`]: a finished
//!   match played again from its bundle.
//! - [`build`]: a bot's image built from its source, checked, with no network, from
//!   the farm's own base images, tagged by content digest (`farm-worker build`);
//!   [`builds`]: the build jobs of authors' submissions, built and pushed to the
//!   farm's registry by workers that have one.
//! - [`config`], [`metrics`], [`http`]: the worker's configuration, every metric,
//!   `/metrics`; `docker`: what the Docker sandbox's containers and the builds'
//!   toolchain containers share (their engine log, limits, gVisor).
//!
//! What the worker shares with the coordinator (shutdown, reconnect backoff, the
//! configuration loader, object storage, the RabbitMQ topology) is in `farm-runtime`.
//! The binary `farm-worker` only parses its command line, installs signal handlers
//! and calls into these.
#![deny(missing_docs)]

pub mod audit;
pub mod bots;
pub mod build;
pub mod builds;
mod clock;
pub mod config;
pub mod control;
pub mod crash;
mod docker;
pub mod error;
pub mod http;
pub mod identity;
pub mod job;
pub mod live;
pub mod metrics;
pub mod quarantine;
pub mod reproduce;
pub mod runner;
pub mod service;
pub mod warm;

pub use config::{SandboxKind, WarmPool, WorkerConfig};
pub use job::JobPlayer;
pub use runner::{
    MatchIo, MatchReport, RunError, RunnerOptions, SeatReport, StartedMatch, fill_seats, play_match, start_match,
};
pub use service::run;

/// This worker process: results name it beside the worker's id, so that a restarted
/// worker (another instance) is told apart.
pub fn instance() -> &'static str {
    static INSTANCE: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| uuid::Uuid::new_v4().simple().to_string()[..12].to_owned());
    &INSTANCE
}
