use serde::{Deserialize, Serialize};

use crate::{BotSpec, GameKind, PlayerOutcome};

/// The version of the job and result documents. A consumer rejects other versions
/// rather than guess at their meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// The schema version a job or result document says it has, read alone: a document of
/// another version may not parse as this build's, and must be told apart from garbage.
pub fn schema_of(document: &[u8]) -> Result<u32, serde_json::Error> {
    #[derive(Deserialize)]
    struct SchemaOnly {
        schema: u32,
    }
    serde_json::from_slice::<SchemaOnly>(document).map(|only| only.schema)
}

/// The queue jobs are published to and workers consume from.
pub const JOBS_QUEUE: &str = "farm.jobs";
/// The queue workers publish results to and the coordinator consumes from.
pub const RESULTS_QUEUE: &str = "farm.results";

/// One match to play: everything a worker needs, nothing it must look up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchJob {
    /// Derived from the job's content by the coordinator: the same match always has
    /// the same id, which is what makes results idempotent.
    pub job_id: String,
    /// The tournament the match belongs to.
    pub tournament_id: String,
    /// The game.
    pub game: GameKind,
    /// Rules overrides (a JSON object), applied to the game's defaults.
    #[serde(default)]
    pub rules: serde_json::Value,
    /// The map file's text, or none for the game's default (generated from the seed).
    #[serde(default)]
    pub map: Option<String>,
    /// The match seed.
    pub seed: u64,
    /// One bot per seat, in seat order.
    pub bots: Vec<BotSpec>,
    /// How its container bots are isolated, when the tournament asks (`None`: as the
    /// worker is configured). Absent from the document when `None`, so jobs that do not
    /// ask read as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<ContainerIsolation>,
}

/// Whether a container serves several matches of its bot's image (reset and verified
/// between them) or one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContainerIsolation {
    /// Several matches, each with a fresh bot process in a verified-clean container.
    #[default]
    Reused,
    /// A never-used container for every match.
    FreshContainer,
}

/// A [`MatchJob`] as it travels on [`JOBS_QUEUE`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobEnvelope {
    /// [`SCHEMA_VERSION`] of the sender.
    pub schema: u32,
    /// The job.
    pub job: MatchJob,
}

impl JobEnvelope {
    /// Wraps a job with this build's schema version.
    pub fn new(job: MatchJob) -> Self {
        JobEnvelope { schema: SCHEMA_VERSION, job }
    }
}

/// One seat's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayerResult {
    /// The seat.
    pub seat: usize,
    /// The bot's name.
    pub name: String,
    /// Score, rank and status.
    #[serde(flatten)]
    pub outcome: PlayerOutcome,
    /// Requests that timed out.
    pub timeouts: u64,
    /// Mean time to reply, in milliseconds.
    pub mean_reply_ms: f64,
    /// Longest time to reply, in milliseconds.
    pub max_reply_ms: f64,
    /// The exit code of its process or container, when it exited by itself.
    pub exit_code: Option<i64>,
    /// Whether the kernel killed it for using too much memory.
    pub oom_killed: bool,
    /// Object-store key of its stderr log.
    pub log_key: Option<String>,
}

/// What came of a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum MatchResult {
    /// The match was played (whatever the bots did).
    Completed {
        /// Steps played.
        steps: u64,
        /// Every seat, in seat order.
        players: Vec<PlayerResult>,
        /// Object-store key of the compressed replay.
        replay_key: String,
        /// SHA-256 of the uncompressed replay.
        replay_sha256: String,
        /// Wall-clock duration of the match.
        duration_ms: u64,
    },
    /// The job cannot be played as written (bad rules, map or bots); retrying would
    /// not help.
    Failed {
        /// What is wrong with it.
        reason: String,
    },
    /// No answer: the worker gave this delivery of the job back for a cause outside
    /// the job (storage or Docker failing, the worker stopping, its broker connection
    /// lost), so that the coordinator does not hold the delivery against the job when
    /// RabbitMQ's delivery limit dead-letters it.
    Returned {
        /// Why the worker gave it back.
        reason: String,
    },
}

/// A [`MatchResult`] as it travels on [`RESULTS_QUEUE`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultEnvelope {
    /// [`SCHEMA_VERSION`] of the sender.
    pub schema: u32,
    /// The job this answers.
    pub job_id: String,
    /// The job's tournament.
    pub tournament_id: String,
    /// The worker that played it.
    pub worker_id: String,
    /// Which delivery of the job this was, from 1.
    pub attempt: u32,
    /// The result.
    pub result: MatchResult,
}

impl ResultEnvelope {
    /// `result` of attempt `attempt` (from 1) at `job`, played by `worker_id`, with this
    /// build's schema version: the one way a result document is made.
    pub fn new(job: &MatchJob, worker_id: &str, attempt: u32, result: MatchResult) -> Self {
        ResultEnvelope {
            schema: SCHEMA_VERSION,
            job_id: job.job_id.clone(),
            tournament_id: job.tournament_id.clone(),
            worker_id: worker_id.to_owned(),
            attempt,
            result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PlayerStatus, Transport};

    #[test]
    fn a_job_round_trips_and_unknown_fields_are_refused() {
        let job = MatchJob {
            job_id: "j1".into(),
            tournament_id: "t1".into(),
            game: GameKind::Botwars,
            rules: serde_json::json!({ "maxTurns": 10 }),
            map: None,
            seed: 3,
            bots: vec!["builtin:random".parse().expect("bot"), "image:matchfarm/x".parse().expect("bot")],
            isolation: None,
        };
        let text = serde_json::to_string(&JobEnvelope::new(job.clone())).expect("serialize");
        let back: JobEnvelope = serde_json::from_str(&text).expect("deserialize");
        assert_eq!(back.job, job);
        assert_eq!(back.job.bots[1].transport, Transport::Stdio);
        let extra = text.replacen("{\"schema\":1,", "{\"schema\":1,\"surprise\":true,", 1);
        assert!(serde_json::from_str::<JobEnvelope>(&extra).is_err());
        // A job that asks for fresh containers says so; one that does not, nothing.
        assert!(!text.contains("isolation"), "{text}");
        let fresh = MatchJob { isolation: Some(ContainerIsolation::FreshContainer), ..job };
        let text = serde_json::to_string(&fresh).expect("serialize");
        assert!(text.contains("\"isolation\":\"fresh-container\""), "{text}");
        assert_eq!(serde_json::from_str::<MatchJob>(&text).expect("deserialize"), fresh);
    }

    #[test]
    fn results_are_tagged_by_status() {
        let failed = MatchResult::Failed { reason: "bad map".into() };
        assert_eq!(serde_json::to_value(&failed).expect("json")["status"], "failed");
        let returned = MatchResult::Returned { reason: "storage".into() };
        let text = serde_json::to_string(&returned).expect("json");
        assert_eq!(text, r#"{"status":"returned","reason":"storage"}"#);
        assert_eq!(serde_json::from_str::<MatchResult>(&text).expect("reads back"), returned);
        let player = PlayerResult {
            seat: 0,
            name: "a".into(),
            outcome: PlayerOutcome { score: 3, rank: 1, status: PlayerStatus::TimedOut },
            timeouts: 1,
            mean_reply_ms: 0.5,
            max_reply_ms: 1.0,
            exit_code: None,
            oom_killed: false,
            log_key: None,
        };
        let value = serde_json::to_value(&player).expect("json");
        assert_eq!(value["status"], "timed_out");
        assert_eq!(value["rank"], 1);
    }
}
