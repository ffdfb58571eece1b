//! The infrastructure both matchfarm services use, the worker (`farm-worker`) and the
//! coordinator (`farm-coordinator`): how they stop, reconnect, load their configuration,
//! store objects and talk to RabbitMQ. Nothing here knows about bots or tournaments.
//!
//! # Layout
//! - [`shutdown`]: the drain-then-abort stop of a service ([`Shutdown`],
//!   [`ShutdownTrigger`]), on the first and second Ctrl-C or SIGTERM.
//! - [`backoff`]: how long to wait before reconnecting to RabbitMQ, the one policy of
//!   both services and of [`queue`]'s connections.
//! - [`config`]: the layered loader (defaults, TOML file, `FARM_*` variables, flags)
//!   each service's configuration goes through, and the object-storage flags both take.
//! - [`storage`]: object storage for replays, bot logs and result documents (a local
//!   directory or S3), and the keys of each run of a job.
//! - [`queue`]: the RabbitMQ topology (`farm.jobs`, its dead letters, `farm.results`),
//!   connections with backoff, publishing with confirms.
//! - [`settle`]: answering a delivery (ack, requeue after a delay, reject), the one
//!   way of every worker lane, and the retry policy of a delivery that failed for the
//!   infrastructure's reasons, which the in-process farm follows too.
//! - [`error`]: the text the binaries print for an error and its causes.
//! - [`secrets`]: the example values no secret may hold.
//!
//! Whether a failure of the infrastructure is worth retrying is decided by its error:
//! [`storage::StorageError::is_retryable`], [`queue::BrokerError::is_retryable`].
#![deny(missing_docs)]

pub mod backoff;
pub mod config;
pub mod error;
pub mod queue;
pub mod secrets;
pub mod settle;
pub mod shutdown;
pub mod storage;

pub use shutdown::{Shutdown, ShutdownTrigger, shutdown_channel};
