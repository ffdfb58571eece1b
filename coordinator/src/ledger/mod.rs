//! The ledger: tournaments, their jobs and results, in SQLite.
//!
//! A job is `pending` (not yet in the queue), `running` (published and confirmed, no
//! result yet), `done` (a completed result) or `failed` (a failed result, or
//! dead-lettered). A result is recorded once per job id: the first wins, later ones
//! are counted as duplicates and dropped, in the same transaction, so a redelivered
//! result can never change standings. A `running` job goes back to `pending` to be
//! published again when its lease passes unanswered ([`Ledger::expire_leases`]), when an
//! operator retries its tournament, or when `farm-coordinator run` resumes (its
//! in-process queue died with it, [`Ledger::requeue_unanswered`]): its first
//! publication's result may still come, which is harmless by the rule above.
//!
//! SQLite calls block, so every call runs on the blocking pool: writes (and the reads
//! they depend on) on one connection, reads that only show on another, which WAL
//! never makes wait for a write.
//!
//! # Layout
//! This file: the types the ledger speaks in and opening it; `schema` its tables and
//! migrations; `jobs` tournaments in and jobs out; `results` answers recorded once;
//! `queries` what the API, pages and standings read; `accounts` users and tokens;
//! `webhooks` events and their deliveries; `bots` submitted bots and their versions.

use std::path::Path;
use std::sync::{Arc, Mutex};

use farm_proto::{MatchResult, PlayerStatus, ResultEnvelope};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::tournament::{PlannedJob, Tournament};
use crate::vouch::AnswerKey;

mod accounts;
mod bots;
mod direction;
mod jobs;
mod queries;
mod results;
mod schema;
mod seasons;
#[cfg(test)]
mod tests;
mod versus;
mod webhooks;
mod workers;

pub use accounts::{NewUser, TokenView, Usage, UserView};
pub use bots::{
    BotView, ChallengeView, ImageBot, NewVersion, Playable, ToJudge, VersionRefused, VersionState, VersionView,
    build_log_key, entry_name, entry_version,
};
pub use seasons::Season;
pub use versus::{Meeting, Record};
pub use webhooks::{Delivery, DeliveryView, NewWebhook, WebhookView};
pub use workers::{AuditState, AuditToPublish};

/// A ledger operation that failed. Every one is an infrastructure error: retrying
/// after the cause is fixed (disk space, permissions) may succeed.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// SQLite failed.
    #[error("ledger: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A stored document does not parse (the ledger was edited by hand, or is from a
    /// newer version).
    #[error("ledger: stored {what} does not parse: {source}")]
    Corrupt {
        /// What was being read.
        what: &'static str,
        /// Why.
        source: serde_json::Error,
    },
    /// The ledger's directory cannot be created.
    #[error("ledger directory {path}: {source}")]
    Directory {
        /// The directory.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The blocking task running the call died.
    #[error("ledger call failed: {0}")]
    Task(String),
}

/// A job's state in the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Not yet in the queue.
    Pending,
    /// In the queue or being played.
    Running,
    /// Played; its result is recorded.
    Done,
    /// Cannot be played, or dead-lettered; its reason is recorded.
    Failed,
    /// Never published: its tournament stopped first ([`Ledger::conclude`]).
    Cancelled,
}

impl JobState {
    /// Every state, in order.
    pub const ALL: [JobState; 5] =
        [JobState::Pending, JobState::Running, JobState::Done, JobState::Failed, JobState::Cancelled];

    /// The name stored and shown.
    pub fn name(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// Parses a stored or requested name.
    pub fn from_name(name: &str) -> Option<Self> {
        JobState::ALL.into_iter().find(|state| state.name() == name)
    }
}

/// How many of a tournament's jobs are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Progress {
    /// All jobs.
    pub total: u64,
    /// Not yet published.
    pub pending: u64,
    /// Published, not answered.
    pub running: u64,
    /// Completed.
    pub done: u64,
    /// Failed.
    pub failed: u64,
    /// Never played: the tournament stopped before they were published.
    pub cancelled: u64,
    /// Results dropped because the job already had one.
    pub duplicates: u64,
    /// Whether its director may still add jobs or stop it.
    pub open: bool,
}

impl Progress {
    /// Whether it is over: its director has no more to add, and every job has its
    /// result or was cancelled. A tournament has at least one job: with none counted
    /// yet it is still being inserted, not finished.
    pub fn finished(&self) -> bool {
        !self.open && self.total > 0 && self.done + self.failed + self.cancelled == self.total
    }
}

/// A tournament as listed.
#[derive(Debug, Clone, Serialize)]
pub struct TournamentSummary {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its game.
    pub game: farm_proto::GameKind,
    /// When it was submitted (Unix seconds).
    pub created_at: i64,
    /// Who submitted it ([`crate::accounts`]).
    pub owner: String,
    /// Its jobs by state.
    pub progress: Progress,
}

/// What [`Ledger::insert_tournament`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Inserted {
    /// False when the same tournament was already there (nothing was added).
    pub created: bool,
    /// Its jobs.
    pub jobs: u64,
}

/// What [`Ledger::retry`] put back to pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Retried {
    /// Published jobs that had no answer.
    pub unanswered: u64,
    /// Failed jobs.
    pub failed: u64,
}

/// What recording one answer did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The job's first answer: recorded.
    New {
        /// Whether it completed (rather than failed).
        completed: bool,
        /// Whether it was the tournament's last missing result.
        tournament_finished: bool,
        /// Milliseconds from the job's first publication to this answer (none for a
        /// job published before the ledger kept the time, or never published).
        latency_ms: Option<u64>,
    },
    /// The job already had an answer: counted and dropped.
    Duplicate,
    /// The job's audit already had a verdict: counted apart from duplicate results, and
    /// dropped.
    DuplicateVerdict,
    /// No such job: dropped (another coordinator's, or a deleted ledger's).
    UnknownJob,
    /// A result that does not fit its job (another tournament, storage keys outside its
    /// attempt's): forged or misrouted, dropped.
    Refused {
        /// What does not fit.
        problem: String,
    },
    /// A worker's notice that it gave a delivery of the job back for a cause outside
    /// the job ([`MatchResult::Returned`]): counted on the job, nothing answered.
    Returned,
    /// The broker dead-lettered the job, but its workers gave some of its deliveries
    /// back for outages: it is pending again, to be published afresh (at most
    /// [`MAX_RESTARTS`] times).
    Restarted,
    /// An audit's verdict on the job's stored replay ([`MatchResult::Audited`]):
    /// recorded on the audit and on the record of the worker that played it.
    Audited {
        /// The verdict's name.
        verdict: &'static str,
    },
}

/// The most times a dead-lettered job some of whose deliveries were given back for
/// outages starts over; the next dead letter fails it. A bound, so that notices
/// (which any worker may send) cannot keep a job that kills its workers alive forever.
pub const MAX_RESTARTS: u32 = 10;

/// An answer to a job, as the ingest path hands it to the ledger.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A result from a worker.
    Result(ResultEnvelope),
    /// The job cannot be played: dead-lettered by the broker, or its bots cannot run
    /// on these workers.
    Failed {
        /// The job.
        job_id: String,
        /// Deliveries it had.
        attempts: u32,
        /// Why.
        reason: String,
        /// Whether the broker dead-lettered it.
        dead_letter: bool,
    },
}

impl Answer {
    /// The job answered.
    pub fn job_id(&self) -> &str {
        match self {
            Answer::Result(envelope) => &envelope.job_id,
            Answer::Failed { job_id, .. } => job_id,
        }
    }
}

/// A job as a publisher reads it.
#[derive(Debug, Clone)]
pub struct PendingJob {
    /// Its tournament.
    pub tournament_id: String,
    /// The job.
    pub planned: PlannedJob,
}

/// One match as listed.
#[derive(Debug, Clone, Serialize)]
pub struct MatchRow {
    /// The job id.
    pub job_id: String,
    /// Position in the schedule.
    pub position: u64,
    /// Bots (indices into the tournament's bots) by seat.
    pub seats: Vec<usize>,
    /// Map index.
    pub map: usize,
    /// Which repetition.
    pub repetition: u32,
    /// The match seed.
    pub seed: u64,
    /// Its state.
    pub state: JobState,
    /// Delivery of the recorded answer.
    pub attempts: u32,
    /// Why it failed.
    pub reason: Option<String>,
    /// Every seat's outcome, in seat order, once the match completed (empty until then).
    pub outcomes: Vec<SeatOutcome>,
}

impl MatchRow {
    /// The tournament's bots and their ranks in a completed match ([`tournament_ranks`];
    /// none before it completed).
    pub fn ranks(&self) -> Vec<(usize, u32)> {
        tournament_ranks(&self.outcomes)
    }
}

/// The tournament's bots in a match with their ranks, in seat order: the seats a game
/// filled itself left out.
pub fn tournament_ranks(seats: &[SeatOutcome]) -> Vec<(usize, u32)> {
    seats.iter().filter_map(|seat| seat.bot.map(|bot| (bot, seat.rank))).collect()
}

/// Which matches to list.
#[derive(Debug, Clone, Default)]
pub struct MatchFilter {
    /// Only matches this bot (index) plays in.
    pub bot: Option<usize>,
    /// Only matches in this state.
    pub state: Option<JobState>,
    /// Only matches on this map (index).
    pub map: Option<usize>,
    /// Only failures: matches that failed, or in which the bot of [`MatchFilter::bot`]
    /// (without one: any seat) timed out, crashed or was disqualified.
    pub failures: bool,
    /// At most this many.
    pub limit: u32,
    /// Skipping this many.
    pub offset: u64,
}

/// One seat of a completed match, for standings and match lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeatOutcome {
    /// The tournament bot in the seat, or none for a seat the game filled itself.
    pub bot: Option<usize>,
    /// The score.
    pub score: i64,
    /// The rank (1 best).
    pub rank: u32,
    /// How the bot ended.
    pub status: PlayerStatus,
    /// Requests it missed.
    pub timeouts: u64,
}

/// The ledger handle; cheap to clone.
#[derive(Clone)]
pub struct Ledger {
    /// Every write, and the reads that writes depend on.
    writer: Arc<Mutex<Connection>>,
    /// The reads that only show (the API's, the gauges'): in WAL mode a reader never
    /// waits for a write transaction, so inserting a big tournament, a batch at a
    /// time, does not hold them up.
    reader: Arc<Mutex<Connection>>,
    /// Which completed matches are audited, and when a worker is quarantined.
    audits: crate::audits::AuditSettings,
    /// The key of the tokens deliveries carry ([`crate::vouch`]), kept in the ledger so
    /// that a restarted coordinator still knows what it handed out.
    answer_key: AnswerKey,
}

/// Runs `call` with `connection` on the blocking pool.
async fn on_blocking_pool<T, F>(connection: Arc<Mutex<Connection>>, call: F) -> Result<T, LedgerError>
where
    T: Send + 'static,
    F: FnOnce(&mut Connection) -> Result<T, LedgerError> + Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        // A panic inside a call cannot leave a half-done transaction (rusqlite
        // rolls back on drop), so a poisoned lock is still usable.
        let mut connection = connection.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        call(&mut connection)
    })
    .await
    .map_err(|error| LedgerError::Task(error.to_string()))?
}

/// Now, in Unix seconds: the times the ledger stores are these.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
}

/// Milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
}

/// Seats are stored as `,0,3,`: a `LIKE '%,3,%'` finds a bot's matches.
fn seats_text(seats: &[usize]) -> String {
    let mut text = String::from(",");
    for bot in seats {
        text.push_str(&bot.to_string());
        text.push(',');
    }
    text
}

fn seats_from_text(text: &str) -> Vec<usize> {
    text.split(',').filter_map(|part| part.parse().ok()).collect()
}

/// `name`, read from `column` as a `what` (a job state, a player status) by `parse`.
/// A name this build does not know (a newer build wrote it, or the file was edited) is
/// an error, never taken for another.
fn known<T>(column: usize, what: &str, name: &str, parse: impl Fn(&str) -> Option<T>) -> rusqlite::Result<T> {
    parse(name).ok_or_else(|| {
        let problem = format!("unknown {what} {name:?} (written by a newer matchfarm?)");
        rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, problem.into())
    })
}

impl Ledger {
    /// Opens (creating if needed) the ledger at `path`.
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        if let Some(directory) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
            std::fs::create_dir_all(directory)
                .map_err(|source| LedgerError::Directory { path: directory.display().to_string(), source })?;
        }
        let connection = Connection::open(path)?;
        // WAL lets readers (the API) run beside the writer; FULL makes a commit
        // durable before the result it records is acked.
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "FULL")?;
        connection.pragma_update(None, "foreign_keys", "ON")?;
        connection.busy_timeout(std::time::Duration::from_secs(10))?;
        schema::apply(&connection)?;
        let answer_key = AnswerKey::new(connection.query_row("SELECT key FROM answer_key", [], |row| row.get(0))?);
        let reader = Connection::open(path)?;
        reader.busy_timeout(std::time::Duration::from_secs(10))?;
        reader.pragma_update(None, "query_only", "ON")?;
        // No audits unless asked: `farm-coordinator run`'s in-process workers share
        // one engine, and have no other worker to audit them.
        let audits = crate::audits::AuditSettings { fraction: 0.0, ..crate::audits::AuditSettings::default() };
        Ok(Ledger {
            writer: Arc::new(Mutex::new(connection)),
            reader: Arc::new(Mutex::new(reader)),
            audits,
            answer_key,
        })
    }

    /// The key of the tokens this ledger's deliveries carry.
    pub fn answer_key(&self) -> &AnswerKey {
        &self.answer_key
    }

    /// This ledger, auditing and quarantining as `settings` say.
    pub fn with_audits(mut self, settings: crate::audits::AuditSettings) -> Self {
        self.audits = settings;
        self
    }

    /// Runs `call` with the writing connection on the blocking pool.
    async fn with<T, F>(&self, call: F) -> Result<T, LedgerError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, LedgerError> + Send + 'static,
    {
        on_blocking_pool(Arc::clone(&self.writer), call).await
    }

    /// Runs `call`, which only reads, with the reading connection on the blocking pool.
    async fn read<T, F>(&self, call: F) -> Result<T, LedgerError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, LedgerError> + Send + 'static,
    {
        on_blocking_pool(Arc::clone(&self.reader), call).await
    }
}
