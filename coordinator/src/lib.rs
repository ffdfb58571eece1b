//! The matchfarm coordinator: what users talk to.
//!
//! # Layout
//! - [`tournament`]: tournament files, strictly validated, resolved into a
//!   [`tournament::Tournament`] whose content decides its id and its jobs' ids and seeds;
//!   [`schedule`] expands its format into fixtures.
//! - [`director`]: the formats decided as results come (SPRT, Swiss, ladder, a round
//!   robin that stops once settled), on [`sequential_test`] (the SPRT's statistics), [`swiss`]
//!   (pairing rounds) and [`matchmaking`] (a ladder's next match).
//! - [`ledger`]: tournaments, jobs and results in SQLite; one result per job id.
//! - [`farm`]: the [`farm::Publisher`] (ledger to queue, a bounded window at a time) and
//!   the [`farm::Recorder`] (answers to the ledger), over any [`farm::JobQueue`].
//! - [`broker`]: that queue on RabbitMQ, with confirms; result and dead-letter ingest;
//!   audits published and quarantines announced.
//! - [`vouch`]: who sent an answer (the broker's word) and whether it was given what it
//!   answers (the tokens deliveries carry).
//! - [`audits`]: a share of completed matches re-verified by other workers, each
//!   worker's record, and the quarantine of the untrustworthy.
//! - [`standings`] and [`ratings`]: per-bot results, Elo, Weng-Lin and mean scores.
//! - [`live`]: matches shown to browsers as they are played, relayed by their workers
//!   while watched.
//! - [`api`]: the HTTP API; [`web`]: the web pages it serves; [`api_error`]: the error
//!   answers of both; [`service`]: `serve`;
//!   [`embedded`]: `run`, the farm in one process; [`view`]: `view` and `run --web`,
//!   the API and pages over a run's data, read-only; [`client`]: the CLI's side of the API.
//! - [`accounts`]: users, their tokens, who may change what, and quotas;
//!   [`fair_share`]: the workers shared among users; [`webhooks`]: users told of events,
//!   signed, retried; [`versions`]: bots submitted by their authors, built on workers,
//!   validated, entered in their ladders; [`uploads`]: their sources received within bounds.
//! - [`worker_identities`]: workers' broker users, issued and revoked by the operator.
//! - [`config`], [`metrics`]; [`token`]: how strong the API's bearer token must be.
//!
//! Shutdown, reconnect backoff, the configuration loader, object storage and the
//! RabbitMQ topology are shared with the worker, in `farm-runtime`; bots and matches
//! are the worker's (`farm-worker`), which [`embedded`] plays in process.
#![deny(missing_docs)]

pub mod accounts;
pub mod api;
pub mod api_error;
pub mod audits;
pub mod broker;
pub mod client;
pub mod config;
pub mod director;
pub mod embedded;
pub mod export;
pub mod fair_share;
pub mod farm;
pub mod leases;
pub mod ledger;
pub mod live;
pub mod matchmaking;
pub mod metrics;
pub mod observations;
pub mod ratings;
pub mod schedule;
pub mod season;
pub mod sequential_test;
pub mod service;
pub mod standings;
pub mod swiss;
pub mod token;
pub mod tournament;
pub mod uploads;
pub mod versions;
pub mod view;
pub mod vouch;
pub mod web;
pub mod webhooks;
pub mod worker_identities;

pub use config::CoordinatorConfig;
pub use service::serve;
