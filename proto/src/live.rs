//! Matches watched as they are played. A worker keeps the lines of each match it plays
//! (the replay's own lines) and relays them through [`LIVE_EXCHANGE`] only while the
//! coordinator watches that match ([`ControlMessage::Watch`](crate::ControlMessage),
//! renewed every [`WATCH_RENEW_SECS`] and lapsing after [`WATCH_LEASE_SECS`]): a match
//! nobody watches costs no message at all.
//!
//! A frame's body is one replay line as it is stored (the header, a frame with its
//! clock readings, the footer); its headers say which line it is ([`LINE_HEADER`],
//! from 0, the header line), of which attempt ([`ATTEMPT_HEADER`]), and carry the
//! job's delivery token ([`TOKEN_HEADER`]) that only the worker handed the job holds.
//! The last message of a relay that ends with the match has [`END_HEADER`] set and an
//! empty body.

use serde::{Deserialize, Serialize};

/// The exchange live frames travel through: direct, routed by job id, transient (not
/// durable); a frame nobody's queue is bound for is dropped by the broker.
pub const LIVE_EXCHANGE: &str = "farm.live";
/// The frame's line number in its match's replay, from 0 (a long long integer).
pub const LINE_HEADER: &str = "x-line";
/// The attempt of the job the frame is from, from 1 (a long integer).
pub const ATTEMPT_HEADER: &str = "x-attempt";
/// The job's delivery token ([`crate::JobEnvelope::token`]).
pub const TOKEN_HEADER: &str = "x-token";
/// Set (true) on the message that ends a relay: the match is over, footer or not.
pub const END_HEADER: &str = "x-end";
/// The most lines one live message carries; the coordinator refuses a message with
/// more.
pub const MESSAGE_LINES: usize = 1024;
/// How long a watch lasts unless renewed: a coordinator gone stops the relays soon.
pub const WATCH_LEASE_SECS: u64 = 15;
/// How often the coordinator renews the watches it holds.
pub const WATCH_RENEW_SECS: u64 = 5;

/// A match the coordinator watches, and the first line it still needs of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchedMatch {
    /// The match's job id.
    pub job_id: String,
    /// The first line the coordinator has not had: the worker relays from here (or
    /// from its oldest kept line, if it no longer has this one).
    pub from: u64,
}
