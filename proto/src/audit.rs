use serde::{Deserialize, Serialize};

use crate::PlayerOutcome;
use crate::live::WatchedMatch;

/// The queue audit jobs are published to and workers consume from.
pub const AUDITS_QUEUE: &str = "farm.audits";
/// The fanout exchange the coordinator tells every worker what it must know through
/// ([`ControlEnvelope`]).
pub const CONTROL_EXCHANGE: &str = "farm.control";

/// A completed match whose stored replay a worker other than the one that played it
/// re-verifies: re-simulated from its recorded replies, it must give the recorded
/// play (hash) and outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditJob {
    /// The match.
    pub job_id: String,
    /// Its tournament.
    pub tournament_id: String,
    /// Object-store key of its compressed replay.
    pub replay_key: String,
    /// The hash of the replay's play its result recorded.
    pub replay_sha256: String,
    /// The outcome its result recorded, seat by seat.
    pub outcome: Vec<PlayerOutcome>,
    /// The worker that played it: it does not audit itself.
    pub played_by: String,
}

/// An [`AuditJob`] as it travels on [`AUDITS_QUEUE`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditEnvelope {
    /// [`crate::SCHEMA_VERSION`] of the sender.
    pub schema: u32,
    /// The audit.
    pub audit: AuditJob,
    /// The coordinator's token for this audit: its verdict carries it back (see
    /// [`crate::JobEnvelope::token`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
}

/// What an audit found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum AuditVerdict {
    /// The replay re-simulates to the recorded play and outcome.
    Confirmed,
    /// It does not (or it is missing, or unreadable): the match and the worker that
    /// played it are marked.
    Mismatch {
        /// What differs.
        reason: String,
    },
    /// No other worker took it in time: the match stays unaudited.
    Skipped {
        /// Why.
        reason: String,
    },
}

impl AuditVerdict {
    /// Its name in the ledger, the API and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            AuditVerdict::Confirmed => "confirmed",
            AuditVerdict::Mismatch { .. } => "mismatch",
            AuditVerdict::Skipped { .. } => "skipped",
        }
    }
}

/// What the coordinator tells the workers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ControlMessage {
    /// The worker `worker_id` must stop taking match and audit jobs: its results are
    /// not to be trusted.
    Quarantine {
        /// The worker.
        worker_id: String,
        /// Why (its audit mismatches or infrastructure faults against its matches).
        reason: String,
    },
    /// The coordinator has viewers for these matches: the worker playing one relays its
    /// lines through [`crate::LIVE_EXCHANGE`] for [`crate::WATCH_LEASE_SECS`] from now.
    /// Every worker hears it; the others keep it in case the match starts with them.
    Watch {
        /// The matches watched (at most [`crate::limits::LIVE_STREAMS`]' ceiling).
        matches: Vec<WatchedMatch>,
    },
}

/// A [`ControlMessage`] as it travels through [`CONTROL_EXCHANGE`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlEnvelope {
    /// [`crate::SCHEMA_VERSION`] of the sender.
    pub schema: u32,
    /// The message.
    pub message: ControlMessage,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_and_control_messages_read_back_as_written() {
        for verdict in [
            AuditVerdict::Confirmed,
            AuditVerdict::Mismatch { reason: "line 4 differs".into() },
            AuditVerdict::Skipped { reason: "no other worker".into() },
        ] {
            let text = serde_json::to_string(&verdict).expect("json");
            assert!(text.contains(&format!("\"verdict\":\"{}\"", verdict.name())), "{text}");
            assert_eq!(serde_json::from_str::<AuditVerdict>(&text).expect("reads back"), verdict);
        }
        let control = ControlEnvelope {
            schema: crate::SCHEMA_VERSION,
            message: ControlMessage::Quarantine { worker_id: "w-1".into(), reason: "3 of 4 audits".into() },
        };
        let text = serde_json::to_string(&control).expect("json");
        assert_eq!(serde_json::from_str::<ControlEnvelope>(&text).expect("reads back"), control);
        assert!(serde_json::from_str::<ControlEnvelope>(&text.replace("quarantine", "release")).is_err());
        let watch = ControlEnvelope {
            schema: crate::SCHEMA_VERSION,
            message: ControlMessage::Watch { matches: vec![WatchedMatch { job_id: "j-1".into(), from: 7 }] },
        };
        let text = serde_json::to_string(&watch).expect("json");
        assert_eq!(serde_json::from_str::<ControlEnvelope>(&text).expect("reads back"), watch);
    }
}
