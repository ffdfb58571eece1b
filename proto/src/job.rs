use serde::{Deserialize, Serialize};

use crate::{AuditVerdict, BotSpec, CrashReport, GameKind, MoveClock, PlayerOutcome};

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
    /// How its moves are timed. Absent from the document when it is the default (the
    /// wall clock, no bank, idle bots frozen).
    #[serde(default, skip_serializing_if = "MoveClock::is_default")]
    pub clock: MoveClock,
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
    /// The coordinator's token for this job, which only the workers it is delivered
    /// to see: every answer to the job carries it back, so that an answer to a job its
    /// sender never held is refused (empty where nobody checks: `farm-coordinator run`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
}

impl JobEnvelope {
    /// Wraps a job and its token with this build's schema version.
    pub fn new(job: MatchJob, token: String) -> Self {
        JobEnvelope { schema: SCHEMA_VERSION, job, token }
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
    /// The 99th percentile of its times to reply, in milliseconds (0 from workers
    /// older than this field).
    #[serde(default)]
    pub p99_reply_ms: f64,
    /// The CPU time its replies took, when its sandbox measures it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<TimeSummary>,
    /// The exit code of its process or container, when it exited by itself.
    pub exit_code: Option<i64>,
    /// Whether the kernel killed it for using too much memory.
    pub oom_killed: bool,
    /// Object-store key of its stderr log.
    pub log_key: Option<String>,
    /// Why it failed, when it did (from workers that write it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<CrashReport>,
}

/// Mean, 99th percentile and maximum of a seat's per-move times, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeSummary {
    /// The mean.
    pub mean_ms: f64,
    /// The 99th percentile (nearest rank).
    pub p99_ms: f64,
    /// The maximum.
    pub max_ms: f64,
}

impl TimeSummary {
    /// The summary of `times` (in microseconds); `None` for none.
    pub fn of_micros(times: &[u64]) -> Option<Self> {
        if times.is_empty() {
            return None;
        }
        let mut sorted = times.to_vec();
        sorted.sort_unstable();
        // Nearest rank: the smallest time at or above which lie 1% of the times.
        let rank = (sorted.len() * 99).div_ceil(100).max(1);
        let millis = |micros: u64| micros as f64 / 1000.0;
        Some(TimeSummary {
            mean_ms: millis(sorted.iter().sum::<u64>()) / sorted.len() as f64,
            p99_ms: millis(sorted[rank - 1]),
            max_ms: millis(sorted[sorted.len() - 1]),
        })
    }
}

/// What playing a match again exactly takes: the job as it was given, the image each
/// seat's bot ran by content (a tag may since name other content), and the engine that
/// played it. With the match's replay hash, it is the match's reproduction bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reproduction {
    /// The engine that played it, with its replay format.
    pub engine: String,
    /// The job as it was played (its seeds, rules, map, limits and clock).
    pub job: MatchJob,
    /// Per seat (seats the worker filled included), the image id (`sha256:...`) its
    /// bot ran; none for a bot that did not run in a container.
    pub images: Vec<Option<String>>,
}

impl Reproduction {
    /// The job with each container bot pinned to the image it ran: the match again,
    /// with the very same bots.
    pub fn pinned_job(&self) -> MatchJob {
        let mut job = self.job.clone();
        for (bot, image) in job.bots.iter_mut().zip(&self.images) {
            if let (crate::BotLaunch::Image(_), Some(id)) = (&bot.launch, image) {
                bot.launch = crate::BotLaunch::Image(id.clone());
            }
        }
        job
    }
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
        /// What playing it again with the very same bots takes (from workers that
        /// record it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reproduction: Option<Box<Reproduction>>,
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
        /// Whether the worker's own sandbox failed (its Docker engine, starting a bot),
        /// rather than shared storage, the broker, or the worker stopping: what counts
        /// against the worker (absent from older workers: false).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        fault: bool,
    },
    /// An audit of the job's stored replay by another worker than the one that played
    /// it (see [`crate::AuditJob`]); `attempt` is 0.
    Audited {
        /// What it found.
        #[serde(flatten)]
        verdict: AuditVerdict,
    },
}

/// The longest worker name: it labels containers and metrics.
pub const MAX_WORKER_NAME: usize = 64;

/// Whether `name` may name a worker (its broker user, `farm-coordinator workers add`):
/// 1 to [`MAX_WORKER_NAME`] of lower-case letters, digits, '-', '_' and '.', starting
/// with a letter or digit.
pub fn is_worker_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && characters.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
        && name.len() <= MAX_WORKER_NAME
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
    /// The worker that played it: the broker user it signed in as, which RabbitMQ
    /// vouches for in the message's `user_id` (the coordinator refuses one that differs).
    pub worker_id: String,
    /// The token of the job or audit it answers, as its delivery carried it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
    /// The worker's process (a restarted worker is another instance), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// Which delivery of the job this was, from 1.
    pub attempt: u32,
    /// The result.
    pub result: MatchResult,
}

impl ResultEnvelope {
    /// `result` of attempt `attempt` (from 1) at the job `delivered`, played by
    /// `worker_id`, with this build's schema version: the one way a result document is
    /// made.
    pub fn new(delivered: &JobEnvelope, worker_id: &str, attempt: u32, result: MatchResult) -> Self {
        ResultEnvelope {
            schema: SCHEMA_VERSION,
            job_id: delivered.job.job_id.clone(),
            tournament_id: delivered.job.tournament_id.clone(),
            worker_id: worker_id.to_owned(),
            token: delivered.token.clone(),
            instance: None,
            attempt,
            result,
        }
    }

    /// This envelope, naming the worker's process `instance`.
    pub fn from_instance(mut self, instance: &str) -> Self {
        self.instance = Some(instance.to_owned());
        self
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
            clock: MoveClock::default(),
        };
        let text = serde_json::to_string(&JobEnvelope::new(job.clone(), "t0k3n".into())).expect("serialize");
        let back: JobEnvelope = serde_json::from_str(&text).expect("deserialize");
        assert_eq!((&back.job, back.token.as_str()), (&job, "t0k3n"));
        // What a worker answers carries the token back.
        let answer = ResultEnvelope::new(&back, "w1", 1, MatchResult::Failed { reason: "no".into() });
        assert_eq!((answer.token.as_str(), answer.worker_id.as_str()), ("t0k3n", "w1"));
        assert_eq!(back.job.bots[1].transport, Transport::Stdio);
        let extra = text.replacen("{\"schema\":1,", "{\"schema\":1,\"surprise\":true,", 1);
        assert!(serde_json::from_str::<JobEnvelope>(&extra).is_err());
        // A job that asks for fresh containers says so; one that does not, nothing.
        assert!(!text.contains("isolation"), "{text}");
        let fresh = MatchJob { isolation: Some(ContainerIsolation::FreshContainer), ..job };
        let text = serde_json::to_string(&fresh).expect("serialize");
        assert!(text.contains("\"isolation\":\"fresh-container\""), "{text}");
        assert_eq!(serde_json::from_str::<MatchJob>(&text).expect("deserialize"), fresh);
        assert!(!text.contains("clock"), "{text}");
        let cpu = MatchJob { clock: MoveClock { kind: crate::ClockKind::Cpu, ..MoveClock::default() }, ..fresh };
        let text = serde_json::to_string(&cpu).expect("serialize");
        assert!(text.contains("\"clock\":{\"kind\":\"cpu\""), "{text}");
        assert_eq!(serde_json::from_str::<MatchJob>(&text).expect("deserialize"), cpu);
    }

    #[test]
    fn a_summary_has_the_mean_the_nearest_rank_p99_and_the_max() {
        assert_eq!(TimeSummary::of_micros(&[]), None);
        let one = TimeSummary::of_micros(&[1500]).expect("one time");
        assert_eq!((one.mean_ms, one.p99_ms, one.max_ms), (1.5, 1.5, 1.5));
        // 1..=200 ms: the 198th of 200 is the p99.
        let times: Vec<u64> = (1..=200).rev().map(|ms| ms * 1000).collect();
        let summary = TimeSummary::of_micros(&times).expect("times");
        assert_eq!((summary.mean_ms, summary.p99_ms, summary.max_ms), (100.5, 198.0, 200.0));
    }

    #[test]
    fn results_are_tagged_by_status() {
        let failed = MatchResult::Failed { reason: "bad map".into() };
        assert_eq!(serde_json::to_value(&failed).expect("json")["status"], "failed");
        let returned = MatchResult::Returned { reason: "storage".into(), fault: false };
        let text = serde_json::to_string(&returned).expect("json");
        assert_eq!(text, r#"{"status":"returned","reason":"storage"}"#);
        let audited = MatchResult::Audited { verdict: AuditVerdict::Mismatch { reason: "line 3".into() } };
        let audit_text = serde_json::to_string(&audited).expect("json");
        assert_eq!(audit_text, r#"{"status":"audited","verdict":"mismatch","reason":"line 3"}"#);
        assert_eq!(serde_json::from_str::<MatchResult>(&audit_text).expect("reads back"), audited);
        assert_eq!(serde_json::from_str::<MatchResult>(&text).expect("reads back"), returned);
        let player = PlayerResult {
            seat: 0,
            name: "a".into(),
            outcome: PlayerOutcome { score: 3, rank: 1, status: PlayerStatus::TimedOut },
            timeouts: 1,
            mean_reply_ms: 0.5,
            max_reply_ms: 1.0,
            p99_reply_ms: 1.0,
            cpu: None,
            exit_code: None,
            oom_killed: false,
            log_key: None,
            crash: None,
        };
        let value = serde_json::to_value(&player).expect("json");
        assert_eq!(value["status"], "timed_out");
        assert_eq!(value["rank"], 1);
    }
}
