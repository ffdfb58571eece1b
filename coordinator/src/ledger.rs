//! The ledger: tournaments, their jobs and results, in SQLite.
//!
//! A job is `pending` (not yet in the queue), `running` (published and confirmed, no
//! result yet), `done` (a completed result) or `failed` (a failed result, or
//! dead-lettered). A result is recorded once per job id: the first wins, later ones
//! are counted as duplicates and dropped, in the same transaction, so a redelivered
//! result can never change standings. On start the coordinator turns `running` jobs
//! back into `pending` ([`Ledger::requeue_unanswered`]) and publishes them again:
//! their results may already be on the way, which is harmless by the rule above.
//!
//! SQLite calls block, so every call runs on the blocking pool behind one connection.

use std::path::Path;
use std::sync::{Arc, Mutex};

use farm_proto::{MatchResult, PlayerStatus, ResultEnvelope};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::tournament::{PlannedJob, Tournament};

/// Rows inserted per transaction when a tournament's jobs are written: the ledger is
/// held for one batch at a time, so other calls wait at most that long.
const INSERT_BATCH: usize = 2_000;

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
}

impl JobState {
    /// Every state, in order.
    pub const ALL: [JobState; 4] = [JobState::Pending, JobState::Running, JobState::Done, JobState::Failed];

    /// The name stored and shown.
    pub fn name(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
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
    /// Results dropped because the job already had one.
    pub duplicates: u64,
}

impl Progress {
    /// Whether every job has its result. A tournament has at least one job: with none
    /// counted yet it is still being inserted, not finished.
    pub fn finished(&self) -> bool {
        self.total > 0 && self.done + self.failed == self.total
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

/// What recording one answer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// The job's first answer: recorded.
    New {
        /// Whether it completed (rather than failed).
        completed: bool,
        /// Whether it was the tournament's last missing result.
        tournament_finished: bool,
    },
    /// The job already had an answer: counted and dropped.
    Duplicate,
    /// No such job: dropped (another coordinator's, or a deleted ledger's).
    UnknownJob,
}

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

/// The `user_version` from which `job_counts` is kept by triggers.
const COUNTED_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tournaments (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    game TEXT NOT NULL,
    definition TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    jobs INTEGER NOT NULL,
    duplicates INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    tournament_id TEXT NOT NULL REFERENCES tournaments(id),
    position INTEGER NOT NULL,
    seats TEXT NOT NULL,
    map INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    reason TEXT
);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state);
CREATE INDEX IF NOT EXISTS jobs_by_tournament ON jobs(tournament_id, state, position);
-- How many of a tournament's jobs are in each state, kept by the triggers below in
-- the same transaction as the change, so progress is read in constant time however
-- many jobs a tournament has (counting a million-job tournament's rows per request
-- made the API slow while one was being inserted).
CREATE TABLE IF NOT EXISTS job_counts (
    tournament_id TEXT NOT NULL,
    state TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (tournament_id, state)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS job_counts_on_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO job_counts (tournament_id, state, count) VALUES (NEW.tournament_id, NEW.state, 1)
        ON CONFLICT (tournament_id, state) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER IF NOT EXISTS job_counts_on_state AFTER UPDATE OF state ON jobs WHEN OLD.state <> NEW.state BEGIN
    UPDATE job_counts SET count = count - 1 WHERE tournament_id = OLD.tournament_id AND state = OLD.state;
    INSERT INTO job_counts (tournament_id, state, count) VALUES (NEW.tournament_id, NEW.state, 1)
        ON CONFLICT (tournament_id, state) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER IF NOT EXISTS job_counts_on_delete AFTER DELETE ON jobs BEGIN
    UPDATE job_counts SET count = count - 1 WHERE tournament_id = OLD.tournament_id AND state = OLD.state;
END;
CREATE TABLE IF NOT EXISTS results (
    job_id TEXT PRIMARY KEY REFERENCES jobs(job_id),
    envelope TEXT NOT NULL,
    recorded_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS result_seats (
    job_id TEXT NOT NULL REFERENCES jobs(job_id),
    seat INTEGER NOT NULL,
    bot INTEGER,
    score INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    status TEXT NOT NULL,
    timeouts INTEGER NOT NULL,
    PRIMARY KEY (job_id, seat)
);
";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
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
        connection.execute_batch(SCHEMA)?;
        // A ledger written before job_counts existed: count its jobs once.
        let version: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
        if version < COUNTED_VERSION {
            connection.execute_batch(&format!(
                "BEGIN;
                 DELETE FROM job_counts;
                 INSERT INTO job_counts (tournament_id, state, count)
                     SELECT tournament_id, state, count(*) FROM jobs GROUP BY tournament_id, state;
                 PRAGMA user_version = {COUNTED_VERSION};
                 COMMIT;"
            ))?;
        }
        let reader = Connection::open(path)?;
        reader.busy_timeout(std::time::Duration::from_secs(10))?;
        reader.pragma_update(None, "query_only", "ON")?;
        Ok(Ledger { writer: Arc::new(Mutex::new(connection)), reader: Arc::new(Mutex::new(reader)) })
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

    /// Stores `tournament` and all its jobs as pending, unless it is already there.
    ///
    /// The schedule is built off the async runtime and stored a batch per
    /// transaction, the connection released between batches: a million-job
    /// tournament never holds the ledger for more than one batch, so the API and the
    /// recorder go on meanwhile (and the publisher may start on the first jobs).
    pub async fn insert_tournament(&self, tournament: Tournament) -> Result<Inserted, LedgerError> {
        let id = tournament.id.clone();
        let definition =
            serde_json::to_string(&tournament).map_err(|source| LedgerError::Corrupt { what: "tournament", source })?;
        let row = (tournament.name.clone(), tournament.game.name());
        let finished = self
            .with({
                let id = id.clone();
                move |connection| {
                    let existing: Option<i64> = connection
                        .query_row("SELECT jobs FROM tournaments WHERE id = ?1", [&id], |row| row.get(0))
                        .optional()?;
                    // Every tournament has at least one job: a count of 0 is an insertion
                    // that a crash cut short (or one under way). Inserting again finishes
                    // it (the jobs already there are ignored), rather than leave it
                    // without half its jobs for good.
                    if let Some(jobs) = existing.filter(|&jobs| jobs > 0) {
                        return Ok(Some(jobs as u64));
                    }
                    // The tournament row first, with a job count of 0; the count is
                    // written last, once every job is in, so a crash half-way leaves a
                    // count of 0, which the check above resumes from.
                    connection.execute(
                        "INSERT OR IGNORE INTO tournaments (id, name, game, definition, created_at, jobs)
                         VALUES (?1, ?2, ?3, ?4, ?5, 0)",
                        params![id, row.0, row.1, definition, now()],
                    )?;
                    Ok(None)
                }
            })
            .await?;
        if let Some(jobs) = finished {
            return Ok(Inserted { created: false, jobs });
        }
        let plan = tokio::task::spawn_blocking(move || tournament.plan())
            .await
            .map_err(|error| LedgerError::Task(error.to_string()))?
            // Resolved tournaments were scheduled once already; this is a bug.
            .map_err(|error| LedgerError::Task(format!("scheduling {id}: {error}")))?;
        let mut plan = plan.peekable();
        let mut jobs = 0u64;
        loop {
            let id = id.clone();
            let mut rest = plan;
            let inserted;
            (plan, inserted) = self
                .with(move |connection| {
                    let transaction = connection.transaction()?;
                    let mut inserted = 0u64;
                    {
                        let mut insert = transaction.prepare_cached(
                            "INSERT OR IGNORE INTO jobs (job_id, tournament_id, position, seats, map, repetition, seed, state)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending')",
                        )?;
                        for job in rest.by_ref().take(INSERT_BATCH) {
                            insert.execute(params![
                                job.job_id,
                                id,
                                job.position as i64,
                                seats_text(&job.seats),
                                job.map as i64,
                                job.repetition,
                                // SQLite integers are signed: the seed's bits, stored as they are.
                                job.seed as i64,
                            ])?;
                            inserted += 1;
                        }
                    }
                    transaction.commit()?;
                    Ok((rest, inserted))
                })
                .await?;
            jobs += inserted;
            if plan.peek().is_none() {
                break;
            }
        }
        self.with(move |connection| {
            connection.execute("UPDATE tournaments SET jobs = ?1 WHERE id = ?2", params![jobs as i64, id])?;
            Ok(Inserted { created: true, jobs })
        })
        .await
    }

    /// A stored tournament.
    pub async fn tournament(&self, id: &str) -> Result<Option<Tournament>, LedgerError> {
        let id = id.to_owned();
        self.read(move |connection| {
            let definition: Option<String> = connection
                .query_row("SELECT definition FROM tournaments WHERE id = ?1", [&id], |row| row.get(0))
                .optional()?;
            definition
                .map(|text| {
                    serde_json::from_str(&text).map_err(|source| LedgerError::Corrupt { what: "tournament", source })
                })
                .transpose()
        })
        .await
    }

    /// Every tournament, newest first, with its progress.
    pub async fn tournaments(&self) -> Result<Vec<TournamentSummary>, LedgerError> {
        self.read(|connection| {
            let mut select = connection
                .prepare("SELECT id, name, game, created_at FROM tournaments ORDER BY created_at DESC, id")?;
            let rows = select
                .query_map([], |row| {
                    Ok((row.get::<_, String>(0)?, row.get(1)?, row.get::<_, String>(2)?, row.get(3)?))
                })?
                .collect::<Result<Vec<(String, String, String, i64)>, _>>()?;
            let mut summaries = Vec::with_capacity(rows.len());
            for (id, name, game, created_at) in rows {
                let Ok(game) = game.parse() else { continue };
                let progress = progress_of(connection, &id)?.unwrap_or_default();
                summaries.push(TournamentSummary { id, name, game, created_at, progress });
            }
            Ok(summaries)
        })
        .await
    }

    /// A tournament's progress, if it exists.
    pub async fn progress(&self, id: &str) -> Result<Option<Progress>, LedgerError> {
        let id = id.to_owned();
        self.read(move |connection| progress_of(connection, &id)).await
    }

    /// Jobs in each state, over all tournaments.
    pub async fn totals(&self) -> Result<Vec<(JobState, u64)>, LedgerError> {
        let mut totals = Vec::new();
        for state in JobState::ALL {
            totals.push((state, self.count(state, None).await?));
        }
        Ok(totals)
    }

    /// On start: every published job without an answer goes back to pending, to be
    /// published again. Returns how many.
    pub async fn requeue_unanswered(&self) -> Result<u64, LedgerError> {
        self.with(|connection| {
            Ok(connection.execute("UPDATE jobs SET state = 'pending' WHERE state = 'running'", [])? as u64)
        })
        .await
    }

    /// Jobs in `state` (of tournament `only`, if given).
    pub async fn count(&self, state: JobState, only: Option<String>) -> Result<u64, LedgerError> {
        self.read(move |connection| {
            let count: i64 = match only {
                Some(id) => connection.query_row(
                    "SELECT count(*) FROM jobs WHERE tournament_id = ?1 AND state = ?2",
                    params![id, state.name()],
                    |row| row.get(0),
                )?,
                None => connection
                    .query_row("SELECT count(*) FROM jobs WHERE state = ?1", [state.name()], |row| row.get(0))?,
            };
            Ok(count as u64)
        })
        .await
    }

    /// Tournaments with jobs not yet answered.
    pub async fn active_tournaments(&self) -> Result<u64, LedgerError> {
        self.read(|connection| {
            let count: i64 = connection.query_row(
                "SELECT count(DISTINCT tournament_id) FROM jobs WHERE state IN ('pending', 'running')",
                [],
                |row| row.get(0),
            )?;
            Ok(count as u64)
        })
        .await
    }

    /// Up to `limit` pending jobs (of tournament `only`, if given), oldest tournament
    /// first, in schedule order.
    pub async fn pending(&self, limit: u32, only: Option<String>) -> Result<Vec<PendingJob>, LedgerError> {
        self.with(move |connection| {
            let mut select = connection.prepare_cached(
                "SELECT tournament_id, job_id, position, seats, map, repetition, seed FROM jobs
                 WHERE state = 'pending' AND (?2 IS NULL OR tournament_id = ?2) ORDER BY rowid LIMIT ?1",
            )?;
            let rows = select.query_map(params![limit, only], |row| {
                Ok(PendingJob {
                    tournament_id: row.get(0)?,
                    planned: PlannedJob {
                        job_id: row.get(1)?,
                        position: row.get::<_, i64>(2)? as u64,
                        seats: seats_from_text(&row.get::<_, String>(3)?),
                        map: row.get::<_, i64>(4)? as usize,
                        repetition: row.get(5)?,
                        seed: row.get::<_, i64>(6)? as u64,
                    },
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

    /// Marks jobs as published (confirmed by the broker). Jobs answered meanwhile keep
    /// their answer.
    pub async fn mark_running(&self, job_ids: Vec<String>) -> Result<(), LedgerError> {
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            {
                let mut update = transaction
                    .prepare_cached("UPDATE jobs SET state = 'running' WHERE job_id = ?1 AND state = 'pending'")?;
                for job_id in &job_ids {
                    update.execute([job_id])?;
                }
            }
            transaction.commit()?;
            Ok(())
        })
        .await
    }

    /// Records a batch of answers in one transaction, each once per job id; returns
    /// what became of each, in order. Only after this returns may they be acked.
    pub async fn record(&self, answers: Vec<Answer>) -> Result<Vec<Recorded>, LedgerError> {
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            let mut recorded = Vec::with_capacity(answers.len());
            for answer in &answers {
                recorded.push(record_one(&transaction, answer)?);
            }
            transaction.commit()?;
            Ok(recorded)
        })
        .await
    }

    /// A tournament's matches, in schedule order, each with its outcomes.
    pub async fn matches(&self, tournament_id: &str, filter: MatchFilter) -> Result<Vec<MatchRow>, LedgerError> {
        let tournament_id = tournament_id.to_owned();
        self.read(move |connection| {
            let (conditions, mut values) = match_conditions(tournament_id, &filter);
            values.push(Box::new(i64::from(filter.limit)));
            let limit = values.len();
            values.push(Box::new(i64::try_from(filter.offset).unwrap_or(i64::MAX)));
            let offset = values.len();
            let sql = format!(
                "SELECT job_id, position, seats, map, repetition, seed, state, attempts, reason FROM jobs
                 WHERE {conditions} ORDER BY position LIMIT ?{limit} OFFSET ?{offset}"
            );
            let mut select = connection.prepare(&sql)?;
            let rows = select.query_map(rusqlite::params_from_iter(values.iter()), match_row)?;
            let mut rows = rows.collect::<Result<Vec<_>, _>>()?;
            for row in &mut rows {
                row.outcomes = outcomes_of(connection, row)?;
            }
            Ok(rows)
        })
        .await
    }

    /// How many matches [`Ledger::matches`] finds with `filter`, whatever its limit and
    /// offset: the length of the whole list, for paging through it.
    pub async fn count_matches(&self, tournament_id: &str, filter: MatchFilter) -> Result<u64, LedgerError> {
        let tournament_id = tournament_id.to_owned();
        self.read(move |connection| {
            let (conditions, values) = match_conditions(tournament_id, &filter);
            let count: i64 = connection.query_row(
                &format!("SELECT count(*) FROM jobs WHERE {conditions}"),
                rusqlite::params_from_iter(values.iter()),
                |row| row.get(0),
            )?;
            Ok(count as u64)
        })
        .await
    }

    /// One match: its tournament, its row and its recorded result document.
    pub async fn match_detail(
        &self,
        job_id: &str,
    ) -> Result<Option<(String, MatchRow, Option<ResultEnvelope>)>, LedgerError> {
        let job_id = job_id.to_owned();
        self.read(move |connection| {
            let row = connection
                .query_row(
                    "SELECT job_id, position, seats, map, repetition, seed, state, attempts, reason, tournament_id
                     FROM jobs WHERE job_id = ?1",
                    [&job_id],
                    |row| Ok((match_row(row)?, row.get::<_, String>(9)?)),
                )
                .optional()?;
            let Some((mut row, tournament_id)) = row else { return Ok(None) };
            row.outcomes = outcomes_of(connection, &row)?;
            let envelope: Option<String> = connection
                .query_row("SELECT envelope FROM results WHERE job_id = ?1", [&job_id], |row| row.get(0))
                .optional()?;
            let envelope = envelope
                .map(|text| {
                    serde_json::from_str(&text).map_err(|source| LedgerError::Corrupt { what: "result", source })
                })
                .transpose()?;
            Ok(Some((tournament_id, row, envelope)))
        })
        .await
    }

    /// Every completed match of a tournament in schedule order, with its seats: what
    /// standings are computed from (so they never depend on arrival order).
    pub async fn completed(&self, tournament_id: &str) -> Result<Vec<Vec<SeatOutcome>>, LedgerError> {
        let tournament_id = tournament_id.to_owned();
        self.read(move |connection| {
            let mut select = connection.prepare(
                "SELECT s.job_id, s.bot, s.score, s.rank, s.status, s.timeouts FROM jobs j
                 JOIN result_seats s ON s.job_id = j.job_id
                 WHERE j.tournament_id = ?1 AND j.state = 'done' ORDER BY j.position, s.seat",
            )?;
            let mut rows = select.query([&tournament_id])?;
            let mut matches: Vec<Vec<SeatOutcome>> = Vec::new();
            let mut last_job = String::new();
            while let Some(row) = rows.next()? {
                let job_id: String = row.get(0)?;
                if job_id != last_job || matches.is_empty() {
                    matches.push(Vec::new());
                    last_job = job_id;
                }
                let seat = seat_outcome(row, 1)?;
                if let Some(current) = matches.last_mut() {
                    current.push(seat);
                }
            }
            Ok(matches)
        })
        .await
    }
}

fn match_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<MatchRow> {
    Ok(MatchRow {
        job_id: row.get(0)?,
        position: row.get::<_, i64>(1)? as u64,
        seats: seats_from_text(&row.get::<_, String>(2)?),
        map: row.get::<_, i64>(3)? as usize,
        repetition: row.get(4)?,
        seed: row.get::<_, i64>(5)? as u64,
        state: known(6, "job state", &row.get::<_, String>(6)?, JobState::from_name)?,
        attempts: row.get(7)?,
        reason: row.get(8)?,
        outcomes: Vec::new(),
    })
}

/// The conditions on `jobs` that select `filter`'s matches of `tournament_id` (limit
/// and offset aside), with their values, numbered from `?1`.
fn match_conditions(tournament_id: String, filter: &MatchFilter) -> (String, Vec<Box<dyn rusqlite::ToSql>>) {
    let mut conditions = String::from("tournament_id = ?1");
    let mut values: Vec<Box<dyn rusqlite::ToSql>> = vec![Box::new(tournament_id)];
    if let Some(bot) = filter.bot {
        values.push(Box::new(format!("%,{bot},%")));
        conditions.push_str(&format!(" AND seats LIKE ?{}", values.len()));
    }
    if let Some(state) = filter.state {
        values.push(Box::new(state.name()));
        conditions.push_str(&format!(" AND state = ?{}", values.len()));
    }
    if let Some(map) = filter.map {
        values.push(Box::new(map as i64));
        conditions.push_str(&format!(" AND map = ?{}", values.len()));
    }
    if filter.failures {
        // Only completed matches have seats: a failed job is a failure of every bot in it.
        let seat = match filter.bot {
            Some(bot) => {
                values.push(Box::new(bot as i64));
                format!(" AND s.bot = ?{}", values.len())
            }
            None => String::new(),
        };
        conditions.push_str(&format!(
            " AND (state = 'failed' OR EXISTS (SELECT 1 FROM result_seats s
                WHERE s.job_id = jobs.job_id AND s.status != 'ok'{seat}))"
        ));
    }
    (conditions, values)
}

/// The outcomes of `row`'s seats, in seat order (none unless it completed).
fn outcomes_of(connection: &Connection, row: &MatchRow) -> Result<Vec<SeatOutcome>, LedgerError> {
    if row.state != JobState::Done {
        return Ok(Vec::new());
    }
    let mut select = connection.prepare_cached(
        "SELECT bot, score, rank, status, timeouts FROM result_seats WHERE job_id = ?1 ORDER BY seat",
    )?;
    let outcomes = select.query_map([&row.job_id], |row| seat_outcome(row, 0))?;
    Ok(outcomes.collect::<Result<Vec<_>, _>>()?)
}

/// A seat's outcome from the columns `bot, score, rank, status, timeouts` of
/// `result_seats`, the first at index `from`.
fn seat_outcome(row: &rusqlite::Row<'_>, from: usize) -> rusqlite::Result<SeatOutcome> {
    Ok(SeatOutcome {
        bot: row.get::<_, Option<i64>>(from)?.map(|bot| bot as usize),
        score: row.get(from + 1)?,
        rank: row.get(from + 2)?,
        status: known(from + 3, "player status", &row.get::<_, String>(from + 3)?, PlayerStatus::from_name)?,
        timeouts: row.get::<_, i64>(from + 4)? as u64,
    })
}

fn progress_of(connection: &Connection, id: &str) -> Result<Option<Progress>, LedgerError> {
    let header: Option<(i64, i64)> = connection
        .query_row("SELECT jobs, duplicates FROM tournaments WHERE id = ?1", [id], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let Some((total, duplicates)) = header else { return Ok(None) };
    let mut progress = Progress { total: total as u64, duplicates: duplicates as u64, ..Progress::default() };
    let mut select = connection.prepare_cached("SELECT state, count FROM job_counts WHERE tournament_id = ?1")?;
    let mut rows = select.query([id])?;
    while let Some(row) = rows.next()? {
        let count = row.get::<_, i64>(1)? as u64;
        match known(0, "job state", &row.get::<_, String>(0)?, JobState::from_name)? {
            JobState::Pending => progress.pending = count,
            JobState::Running => progress.running = count,
            JobState::Done => progress.done = count,
            JobState::Failed => progress.failed = count,
        }
    }
    Ok(Some(progress))
}

fn record_one(transaction: &rusqlite::Transaction<'_>, answer: &Answer) -> Result<Recorded, LedgerError> {
    let job: Option<(String, String, String)> = transaction
        .query_row("SELECT tournament_id, seats, state FROM jobs WHERE job_id = ?1", [answer.job_id()], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?;
    let Some((tournament_id, seats, state)) = job else { return Ok(Recorded::UnknownJob) };
    if matches!(known(2, "job state", &state, JobState::from_name)?, JobState::Done | JobState::Failed) {
        transaction.execute("UPDATE tournaments SET duplicates = duplicates + 1 WHERE id = ?1", [&tournament_id])?;
        return Ok(Recorded::Duplicate);
    }
    let seats = seats_from_text(&seats);
    let completed = match answer {
        Answer::Result(envelope) => {
            let document =
                serde_json::to_string(envelope).map_err(|source| LedgerError::Corrupt { what: "result", source })?;
            transaction.execute(
                "INSERT INTO results (job_id, envelope, recorded_at) VALUES (?1, ?2, ?3)",
                params![envelope.job_id, document, now()],
            )?;
            match &envelope.result {
                MatchResult::Completed { players, .. } => {
                    let mut insert = transaction.prepare_cached(
                        "INSERT OR REPLACE INTO result_seats (job_id, seat, bot, score, rank, status, timeouts)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    )?;
                    for player in players {
                        // Seats past the tournament's bots are the game's own fillers.
                        let bot = seats.get(player.seat).map(|&bot| bot as i64);
                        insert.execute(params![
                            envelope.job_id,
                            player.seat as i64,
                            bot,
                            player.outcome.score,
                            player.outcome.rank,
                            player.outcome.status.name(),
                            player.timeouts as i64,
                        ])?;
                    }
                    transaction.execute(
                        "UPDATE jobs SET state = 'done', attempts = ?2 WHERE job_id = ?1",
                        params![envelope.job_id, envelope.attempt],
                    )?;
                    true
                }
                MatchResult::Failed { reason } => {
                    transaction.execute(
                        "UPDATE jobs SET state = 'failed', attempts = ?2, reason = ?3 WHERE job_id = ?1",
                        params![envelope.job_id, envelope.attempt, reason],
                    )?;
                    false
                }
            }
        }
        Answer::Failed { job_id, attempts, reason, .. } => {
            transaction.execute(
                "UPDATE jobs SET state = 'failed', attempts = ?2, reason = ?3 WHERE job_id = ?1",
                params![job_id, attempts, reason],
            )?;
            false
        }
    };
    // EXISTS stops at the first open job: cheap even for a million-job tournament.
    let open: bool = transaction.query_row(
        "SELECT EXISTS (SELECT 1 FROM jobs WHERE tournament_id = ?1 AND state IN ('pending', 'running'))",
        [&tournament_id],
        |row| row.get(0),
    )?;
    Ok(Recorded::New { completed, tournament_finished: !open })
}

#[cfg(test)]
mod tests {
    use farm_proto::{PlayerOutcome, PlayerResult, SCHEMA_VERSION};

    use super::*;
    use crate::standings::Standings;
    use crate::tournament::{TournamentFile, TournamentLimits};

    /// A botwars round robin of three builtin bots: 6 jobs per game per pairing.
    fn botwars(name: &str, games_per_pairing: u32) -> Tournament {
        let text = format!(
            r#"
name = "{name}"
game = "botwars"
format = "round-robin"
games_per_pairing = {games_per_pairing}
seed = 11
[[bots]]
name = "a"
builtin = "random"
[[bots]]
name = "b"
builtin = "gatherer"
[[bots]]
name = "c"
builtin = "random"
"#
        );
        TournamentFile::from_toml(&text).expect("parses").resolve(None, TournamentLimits::default()).expect("valid")
    }

    fn jobs(tournament: &Tournament) -> Vec<PlannedJob> {
        tournament.plan().expect("plan").collect()
    }

    fn open(dir: &tempfile::TempDir) -> Ledger {
        Ledger::open(&dir.path().join("ledger").join("ledger.sqlite")).expect("open the ledger")
    }

    /// A completed two-seat result: the higher score ranks first.
    fn envelope(tournament: &Tournament, job_id: &str, worker: &str, scores: [i64; 2]) -> ResultEnvelope {
        let ranks = match scores[0].cmp(&scores[1]) {
            std::cmp::Ordering::Greater => [1, 2],
            std::cmp::Ordering::Less => [2, 1],
            std::cmp::Ordering::Equal => [1, 1],
        };
        let players = (0..2)
            .map(|seat| PlayerResult {
                seat,
                name: format!("seat-{seat}"),
                outcome: PlayerOutcome { score: scores[seat], rank: ranks[seat], status: PlayerStatus::Ok },
                timeouts: seat as u64,
                mean_reply_ms: 1.0,
                max_reply_ms: 2.0,
                exit_code: None,
                oom_killed: false,
                log_key: None,
            })
            .collect();
        ResultEnvelope {
            schema: SCHEMA_VERSION,
            job_id: job_id.to_owned(),
            tournament_id: tournament.id.clone(),
            worker_id: worker.to_owned(),
            attempt: 1,
            result: MatchResult::Completed {
                steps: 42,
                players,
                replay_key: format!("replays/{job_id}"),
                replay_sha256: "0".repeat(64),
                duration_ms: 7,
            },
        }
    }

    fn completed(tournament: &Tournament, job_id: &str, worker: &str, scores: [i64; 2]) -> Answer {
        Answer::Result(envelope(tournament, job_id, worker, scores))
    }

    fn dead_letter(job_id: &str, reason: &str) -> Answer {
        Answer::Failed { job_id: job_id.to_owned(), attempts: 3, reason: reason.to_owned(), dead_letter: true }
    }

    fn new(completed: bool, tournament_finished: bool) -> Recorded {
        Recorded::New { completed, tournament_finished }
    }

    async fn progress(ledger: &Ledger, tournament: &Tournament) -> Progress {
        ledger.progress(&tournament.id).await.expect("progress").expect("the tournament exists")
    }

    async fn standings(ledger: &Ledger, tournament: &Tournament) -> Standings {
        let matches = ledger.completed(&tournament.id).await.expect("completed");
        Standings::compute(tournament, Progress::default(), &matches)
    }

    fn all(limit: u32) -> MatchFilter {
        MatchFilter { limit, ..MatchFilter::default() }
    }

    fn ids(rows: &[MatchRow]) -> Vec<&str> {
        rows.iter().map(|row| row.job_id.as_str()).collect()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn reads_go_on_while_a_write_transaction_is_open() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = open(&dir);
        let tournament = botwars("read beside a write", 1);
        ledger.insert_tournament(tournament.clone()).await.expect("insert");
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let writer = ledger.clone();
        // A write transaction held open, as one batch of a big insert is.
        let holding = tokio::spawn(async move {
            writer
                .with(move |connection| {
                    let transaction = connection.transaction()?;
                    transaction.execute("UPDATE tournaments SET name = 'renamed'", [])?;
                    let _ = held_tx.send(());
                    let _ = release_rx.recv();
                    transaction.commit()?;
                    Ok(())
                })
                .await
        });
        tokio::task::spawn_blocking(move || held_rx.recv()).await.expect("join").expect("the write began");
        // Were reads on the writer's connection, these would wait for the release: a
        // deadlock, which the timeout turns into a failure.
        let reads = async {
            let listed = ledger.tournaments().await.expect("list");
            let progress = ledger.progress(&tournament.id).await.expect("progress").expect("exists");
            (listed, progress)
        };
        let (listed, progress) = tokio::time::timeout(std::time::Duration::from_secs(30), reads)
            .await
            .expect("reads wait for the write transaction");
        assert_eq!(listed[0].name, "read beside a write", "the uncommitted rename is not seen");
        assert_eq!(progress.total, 6);
        release_tx.send(()).expect("release");
        holding.await.expect("join").expect("the write commits");
        assert_eq!(ledger.tournaments().await.expect("list")[0].name, "renamed");
    }

    #[tokio::test]
    async fn inserting_the_same_tournament_twice_adds_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = open(&dir);
        let tournament = botwars("twice", 1);
        let first = ledger.insert_tournament(tournament.clone()).await.expect("insert");
        assert_eq!(first, Inserted { created: true, jobs: 6 });
        let again = ledger.insert_tournament(tournament.clone()).await.expect("insert again");
        assert_eq!(again, Inserted { created: false, jobs: 6 });
        assert_eq!(ledger.count(JobState::Pending, None).await.expect("count"), 6);
        assert_eq!(ledger.count(JobState::Pending, Some(tournament.id.clone())).await.expect("count"), 6);
        assert_eq!(progress(&ledger, &tournament).await, Progress { total: 6, pending: 6, ..Progress::default() });
        assert_eq!(ledger.tournament(&tournament.id).await.expect("read"), Some(tournament.clone()));
        let listed = ledger.tournaments().await.expect("list");
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].id.as_str(), listed[0].name.as_str()), (tournament.id.as_str(), "twice"));
        assert_eq!(listed[0].progress.total, 6);
        assert_eq!(ledger.tournament("t-0000000000000000").await.expect("read"), None);
        assert_eq!(ledger.progress("t-0000000000000000").await.expect("read"), None);
    }

    #[tokio::test]
    async fn an_insertion_cut_short_is_finished_by_inserting_again() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = open(&dir);
        let tournament = botwars("cut short", 1);
        ledger.insert_tournament(tournament.clone()).await.expect("insert");
        // What a crash between two job batches leaves: some jobs, and a count of 0.
        let id = tournament.id.clone();
        ledger
            .with(move |connection| {
                connection.execute("DELETE FROM jobs WHERE tournament_id = ?1 AND position >= 2", [&id])?;
                connection.execute("UPDATE tournaments SET jobs = 0 WHERE id = ?1", [&id])?;
                Ok(())
            })
            .await
            .expect("simulate a crash");
        let resumed = ledger.insert_tournament(tournament.clone()).await.expect("insert again");
        assert_eq!(resumed, Inserted { created: true, jobs: 6 });
        assert_eq!(progress(&ledger, &tournament).await, Progress { total: 6, pending: 6, ..Progress::default() });
        let positions: Vec<u64> =
            ledger.matches(&tournament.id, all(100)).await.expect("matches").iter().map(|row| row.position).collect();
        assert_eq!(positions, [0, 1, 2, 3, 4, 5]);
        assert_eq!(
            ledger.insert_tournament(tournament).await.expect("once more"),
            Inserted { created: false, jobs: 6 }
        );
    }

    #[tokio::test]
    async fn a_result_is_recorded_once_and_the_first_one_wins() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = open(&dir);
        let tournament = botwars("once", 1);
        ledger.insert_tournament(tournament.clone()).await.expect("insert");
        let jobs = jobs(&tournament);
        let (j0, j1) = (jobs[0].job_id.as_str(), jobs[1].job_id.as_str());

        let first = envelope(&tournament, j0, "w1", [5, 1]);
        let recorded = ledger
            .record(vec![
                Answer::Result(first.clone()),
                Answer::Result(first.clone()),
                completed(&tournament, j1, "w1", [2, 2]),
            ])
            .await
            .expect("record");
        assert_eq!(recorded, [new(true, false), Recorded::Duplicate, new(true, false)]);
        let before = standings(&ledger, &tournament).await;
        let seats_before = ledger.completed(&tournament.id).await.expect("completed");
        assert_eq!(seats_before.len(), 2);
        let seat0 = &seats_before[0][0];
        assert_eq!(
            (seat0.bot, seat0.score, seat0.rank, seat0.status),
            (Some(jobs[0].seats[0]), 5, 1, PlayerStatus::Ok)
        );
        assert_eq!((seats_before[0][1].bot, seats_before[0][1].timeouts), (Some(jobs[0].seats[1]), 1));
        assert_eq!(before.rows.iter().map(|row| row.played).sum::<u64>(), 4);

        // The same result again, a different one, and a dead letter: all too late.
        let recorded = ledger
            .record(vec![
                Answer::Result(first.clone()),
                completed(&tournament, j0, "w2", [0, 9]),
                dead_letter(j0, "dead-lettered"),
            ])
            .await
            .expect("record later");
        assert_eq!(recorded, [Recorded::Duplicate; 3]);
        assert_eq!(ledger.completed(&tournament.id).await.expect("completed"), seats_before);
        assert_eq!(standings(&ledger, &tournament).await, before);
        let (tournament_id, row, stored) = ledger.match_detail(j0).await.expect("detail").expect("the job exists");
        assert_eq!(tournament_id, tournament.id);
        assert_eq!((row.state, row.attempts, row.reason), (JobState::Done, 1, None));
        assert_eq!(stored, Some(first));
        let progress = progress(&ledger, &tournament).await;
        assert_eq!(progress, Progress { total: 6, pending: 4, done: 2, duplicates: 4, ..Progress::default() });
    }

    #[tokio::test]
    async fn answers_to_unknown_jobs_are_dropped() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = open(&dir);
        let tournament = botwars("unknown", 1);
        ledger.insert_tournament(tournament.clone()).await.expect("insert");
        let recorded = ledger
            .record(vec![completed(&tournament, "j-nope", "w1", [1, 0]), dead_letter("j-nope-either", "gone")])
            .await
            .expect("record");
        assert_eq!(recorded, [Recorded::UnknownJob, Recorded::UnknownJob]);
        assert_eq!(progress(&ledger, &tournament).await, Progress { total: 6, pending: 6, ..Progress::default() });
        assert_eq!(ledger.match_detail("j-nope").await.expect("detail").map(|(id, ..)| id), None);
    }

    #[tokio::test]
    async fn a_tournament_finishes_exactly_on_its_last_answer() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = open(&dir);
        let tournament = botwars("finish", 1);
        ledger.insert_tournament(tournament.clone()).await.expect("insert");
        let jobs = jobs(&tournament);
        for (index, job) in jobs[..4].iter().enumerate() {
            let answer = if index == 2 {
                dead_letter(&job.job_id, "poison")
            } else {
                completed(&tournament, &job.job_id, "w1", [index as i64, 1])
            };
            let recorded = ledger.record(vec![answer]).await.expect("record");
            assert_eq!(recorded, [new(index != 2, false)], "job {index}");
            assert!(!progress(&ledger, &tournament).await.finished());
        }
        // The last two in one batch: only the very last finishes it.
        let recorded = ledger
            .record(vec![
                completed(&tournament, &jobs[4].job_id, "w1", [1, 0]),
                completed(&tournament, &jobs[5].job_id, "w2", [0, 1]),
                completed(&tournament, &jobs[5].job_id, "w3", [1, 0]),
            ])
            .await
            .expect("record");
        assert_eq!(recorded, [new(true, false), new(true, true), Recorded::Duplicate]);
        let progress = progress(&ledger, &tournament).await;
        assert!(progress.finished());
        assert_eq!(progress, Progress { total: 6, done: 5, failed: 1, duplicates: 1, ..Progress::default() });
        assert_eq!(ledger.active_tournaments().await.expect("active"), 0);
        let again = ledger.record(vec![completed(&tournament, &jobs[0].job_id, "w1", [1, 0])]).await.expect("again");
        assert_eq!(again, [Recorded::Duplicate], "a finished tournament never finishes twice");
    }

    #[tokio::test]
    async fn failures_keep_their_reason_and_later_results_are_duplicates() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = open(&dir);
        let tournament = botwars("failures", 1);
        ledger.insert_tournament(tournament.clone()).await.expect("insert");
        let jobs = jobs(&tournament);
        let (j0, j1) = (jobs[0].job_id.as_str(), jobs[1].job_id.as_str());
        let failed_result = ResultEnvelope {
            result: MatchResult::Failed { reason: "bad rules".to_owned() },
            attempt: 2,
            ..envelope(&tournament, j1, "w1", [0, 0])
        };
        let recorded = ledger
            .record(vec![dead_letter(j0, "dead-lettered after 3 deliveries"), Answer::Result(failed_result.clone())])
            .await
            .expect("record");
        assert_eq!(recorded, [new(false, false), new(false, false)]);

        let (_, row, stored) = ledger.match_detail(j0).await.expect("detail").expect("exists");
        assert_eq!((row.state, row.attempts), (JobState::Failed, 3));
        assert_eq!(row.reason.as_deref(), Some("dead-lettered after 3 deliveries"));
        assert_eq!(stored, None, "a dead letter has no result document");
        let (_, row, stored) = ledger.match_detail(j1).await.expect("detail").expect("exists");
        assert_eq!((row.state, row.attempts, row.reason.as_deref()), (JobState::Failed, 2, Some("bad rules")));
        assert_eq!(stored, Some(failed_result));

        let failed = MatchFilter { state: Some(JobState::Failed), ..all(100) };
        assert_eq!(ids(&ledger.matches(&tournament.id, failed.clone()).await.expect("matches")), [j0, j1]);

        let recorded = ledger.record(vec![completed(&tournament, j0, "w1", [3, 1])]).await.expect("record late");
        assert_eq!(recorded, [Recorded::Duplicate]);
        let (_, row, stored) = ledger.match_detail(j0).await.expect("detail").expect("exists");
        assert_eq!((row.state, stored), (JobState::Failed, None));
        assert!(ledger.completed(&tournament.id).await.expect("completed").is_empty());
        assert_eq!(ledger.matches(&tournament.id, failed).await.expect("matches").len(), 2);
        let progress = progress(&ledger, &tournament).await;
        assert_eq!((progress.failed, progress.done, progress.duplicates), (2, 0, 1));
    }

    #[tokio::test]
    async fn pending_jobs_come_in_schedule_order_and_unanswered_ones_are_requeued() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = open(&dir);
        let first = botwars("first", 1);
        let second = botwars("second", 1);
        ledger.insert_tournament(first.clone()).await.expect("insert");
        ledger.insert_tournament(second.clone()).await.expect("insert");
        let (first_jobs, second_jobs) = (jobs(&first), jobs(&second));
        let pending_ids = |pending: &[PendingJob]| -> Vec<(String, String)> {
            pending.iter().map(|job| (job.tournament_id.clone(), job.planned.job_id.clone())).collect()
        };
        let expected = |tournament: &Tournament, jobs: &[PlannedJob]| -> Vec<(String, String)> {
            jobs.iter().map(|job| (tournament.id.clone(), job.job_id.clone())).collect()
        };

        let some = ledger.pending(4, None).await.expect("pending");
        assert_eq!(pending_ids(&some), expected(&first, &first_jobs[..4]));
        assert_eq!(some[1].planned, first_jobs[1], "a pending job reads back as planned");
        let every = ledger.pending(100, None).await.expect("pending");
        assert_eq!(pending_ids(&every), [expected(&first, &first_jobs), expected(&second, &second_jobs)].concat());
        let only = ledger.pending(100, Some(second.id.clone())).await.expect("pending");
        assert_eq!(pending_ids(&only), expected(&second, &second_jobs));
        assert!(ledger.pending(100, Some("t-none".to_owned())).await.expect("pending").is_empty());

        let published: Vec<String> = first_jobs[..3].iter().map(|job| job.job_id.clone()).collect();
        ledger.mark_running(published).await.expect("mark running");
        assert_eq!(ledger.count(JobState::Running, None).await.expect("count"), 3);
        assert_eq!(ledger.count(JobState::Running, Some(second.id.clone())).await.expect("count"), 0);
        let rest = ledger.pending(100, Some(first.id.clone())).await.expect("pending");
        assert_eq!(pending_ids(&rest), expected(&first, &first_jobs[3..]));

        // One of them is answered; marking it running again keeps its answer.
        let answered = &first_jobs[1].job_id;
        let recorded = ledger.record(vec![completed(&first, answered, "w1", [1, 0])]).await.expect("record");
        assert_eq!(recorded, [new(true, false)]);
        ledger.mark_running(vec![answered.clone()]).await.expect("mark running");
        assert_eq!(ledger.count(JobState::Done, None).await.expect("count"), 1);

        assert_eq!(ledger.requeue_unanswered().await.expect("requeue"), 2);
        assert_eq!(ledger.count(JobState::Running, None).await.expect("count"), 0);
        let requeued = ledger.pending(100, Some(first.id.clone())).await.expect("pending");
        let positions: Vec<u64> = requeued.iter().map(|job| job.planned.position).collect();
        assert_eq!(positions, [0, 2, 3, 4, 5]);
        assert_eq!(ledger.requeue_unanswered().await.expect("requeue"), 0);
        let totals = ledger.totals().await.expect("totals");
        assert_eq!(
            totals,
            [(JobState::Pending, 11), (JobState::Running, 0), (JobState::Done, 1), (JobState::Failed, 0)]
        );
        assert_eq!(ledger.active_tournaments().await.expect("active"), 2);
    }

    #[tokio::test]
    async fn matches_filter_by_bot_state_map_and_page() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = open(&dir);
        let tournament = botwars("filters", 2);
        ledger.insert_tournament(tournament.clone()).await.expect("insert");
        let jobs = jobs(&tournament);
        assert_eq!(jobs.len(), 12);

        let every = ledger.matches(&tournament.id, all(1000)).await.expect("matches");
        assert_eq!(ids(&every), jobs.iter().map(|job| job.job_id.as_str()).collect::<Vec<_>>());
        let row = &every[5];
        assert_eq!((row.position, &row.seats, row.map, row.repetition), (5, &jobs[5].seats, 0, jobs[5].repetition));
        assert_eq!(
            (row.seed, row.state, row.attempts, row.reason.as_deref()),
            (jobs[5].seed, JobState::Pending, 0, None)
        );

        for bot in 0..3 {
            let rows = ledger.matches(&tournament.id, MatchFilter { bot: Some(bot), ..all(1000) }).await.expect("bot");
            let expected: Vec<&str> =
                jobs.iter().filter(|job| job.seats.contains(&bot)).map(|job| job.job_id.as_str()).collect();
            assert_eq!(ids(&rows), expected, "bot {bot}");
            assert_eq!(rows.len(), 8, "two opponents, both sides, two games");
        }
        assert!(
            ledger.matches(&tournament.id, MatchFilter { bot: Some(3), ..all(1000) }).await.expect("bot").is_empty()
        );

        ledger.mark_running(vec![jobs[0].job_id.clone(), jobs[7].job_id.clone()]).await.expect("mark running");
        ledger.record(vec![completed(&tournament, &jobs[3].job_id, "w1", [1, 0])]).await.expect("record");
        let by_state = |state| MatchFilter { state: Some(state), ..all(1000) };
        let running = ledger.matches(&tournament.id, by_state(JobState::Running)).await.expect("running");
        assert_eq!(ids(&running), [jobs[0].job_id.as_str(), jobs[7].job_id.as_str()]);
        let done = ledger.matches(&tournament.id, by_state(JobState::Done)).await.expect("done");
        assert_eq!(ids(&done), [jobs[3].job_id.as_str()]);
        assert_eq!(done[0].attempts, 1);
        assert_eq!(ledger.matches(&tournament.id, by_state(JobState::Pending)).await.expect("pending").len(), 9);
        let bot_and_state = MatchFilter { bot: Some(jobs[7].seats[0]), state: Some(JobState::Running), ..all(1000) };
        let rows = ledger.matches(&tournament.id, bot_and_state).await.expect("both");
        assert!(rows.iter().all(|row| row.state == JobState::Running && row.seats.contains(&jobs[7].seats[0])));
        assert!(ids(&rows).contains(&jobs[7].job_id.as_str()));

        assert_eq!(
            ledger.matches(&tournament.id, MatchFilter { map: Some(0), ..all(1000) }).await.expect("map").len(),
            12
        );
        assert!(
            ledger.matches(&tournament.id, MatchFilter { map: Some(1), ..all(1000) }).await.expect("map").is_empty()
        );

        let page = |limit, offset| MatchFilter { limit, offset, ..MatchFilter::default() };
        let positions = |rows: Vec<MatchRow>| rows.iter().map(|row| row.position).collect::<Vec<_>>();
        assert_eq!(positions(ledger.matches(&tournament.id, page(5, 0)).await.expect("page")), [0, 1, 2, 3, 4]);
        assert_eq!(positions(ledger.matches(&tournament.id, page(5, 5)).await.expect("page")), [5, 6, 7, 8, 9]);
        assert_eq!(positions(ledger.matches(&tournament.id, page(5, 10)).await.expect("page")), [10, 11]);
        assert!(ledger.matches(&tournament.id, page(5, 12)).await.expect("page").is_empty());
        assert!(ledger.matches(&tournament.id, page(5, u64::MAX)).await.expect("page").is_empty());
        assert!(ledger.matches("t-other", all(1000)).await.expect("other").is_empty());
    }

    #[tokio::test]
    async fn listed_matches_carry_their_outcomes_and_failures_are_found_per_bot() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = open(&dir);
        let tournament = botwars("outcomes", 1);
        ledger.insert_tournament(tournament.clone()).await.expect("insert");
        let jobs = jobs(&tournament);
        // Job 0 completes cleanly, job 1 with seat 1 crashed, job 2 fails outright.
        let mut crashed = envelope(&tournament, &jobs[1].job_id, "w1", [3, 0]);
        if let MatchResult::Completed { players, .. } = &mut crashed.result {
            players[1].outcome.status = PlayerStatus::Crashed;
        }
        ledger
            .record(vec![
                completed(&tournament, &jobs[0].job_id, "w1", [2, 7]),
                Answer::Result(crashed),
                dead_letter(&jobs[2].job_id, "poison"),
            ])
            .await
            .expect("record");

        let every = ledger.matches(&tournament.id, all(100)).await.expect("matches");
        let clean = &every[0].outcomes;
        assert_eq!(clean.len(), 2);
        assert_eq!((clean[0].bot, clean[0].score, clean[0].rank), (Some(jobs[0].seats[0]), 2, 2));
        assert_eq!((clean[1].bot, clean[1].score, clean[1].rank, clean[1].timeouts), (Some(jobs[0].seats[1]), 7, 1, 1));
        assert_eq!(every[1].outcomes[1].status, PlayerStatus::Crashed);
        assert!(every[2..].iter().all(|row| row.outcomes.is_empty()), "no outcomes without a completed result");
        let (_, detail, _) = ledger.match_detail(&jobs[1].job_id).await.expect("detail").expect("exists");
        assert_eq!(detail.outcomes, every[1].outcomes);

        let failures = |bot| MatchFilter { bot, failures: true, ..all(100) };
        let any = ledger.matches(&tournament.id, failures(None)).await.expect("failures");
        assert_eq!(ids(&any), [jobs[1].job_id.as_str(), jobs[2].job_id.as_str()]);
        // Round robin order: job 1 seats [1, 0], job 2 seats [0, 2].
        assert_eq!((&jobs[1].seats[..], &jobs[2].seats[..]), (&[1, 0][..], &[0, 2][..]));
        let (j1, j2) = (jobs[1].job_id.as_str(), jobs[2].job_id.as_str());
        for (bot, expected) in [(0, vec![j1, j2]), (1, vec![]), (2, vec![j2])] {
            let found = ledger.matches(&tournament.id, failures(Some(bot))).await.expect("failures");
            assert_eq!(ids(&found), expected, "bot {bot}: its own crashes and the failed jobs it was in");
        }

        // The count ignores paging and follows every filter.
        let count = |filter| ledger.count_matches(&tournament.id, filter);
        assert_eq!(count(MatchFilter { limit: 1, offset: 4, ..MatchFilter::default() }).await.expect("count"), 6);
        assert_eq!(count(failures(None)).await.expect("count"), 2);
        assert_eq!(count(failures(Some(0))).await.expect("count"), 2);
        assert_eq!(count(MatchFilter { state: Some(JobState::Done), ..all(1) }).await.expect("count"), 2);
        assert_eq!(count(MatchFilter { bot: Some(0), ..all(1) }).await.expect("count"), 4);
        assert_eq!(ledger.count_matches("t-other", all(1)).await.expect("count"), 0);
    }

    #[tokio::test]
    async fn matches_filter_by_map() {
        let text = r#"
name = "maps"
game = "vindinium"
format = "round-robin"
maps = [{ seed = 1 }, { seed = 2, name = "second" }]
[[bots]]
name = "a"
builtin = "random"
[[bots]]
name = "b"
builtin = "greedy"
"#;
        let tournament =
            TournamentFile::from_toml(text).expect("parses").resolve(None, TournamentLimits::default()).expect("valid");
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = open(&dir);
        ledger.insert_tournament(tournament.clone()).await.expect("insert");
        let jobs = jobs(&tournament);
        for map in 0..2 {
            let rows = ledger.matches(&tournament.id, MatchFilter { map: Some(map), ..all(100) }).await.expect("map");
            let expected: Vec<&str> = jobs.iter().filter(|job| job.map == map).map(|job| job.job_id.as_str()).collect();
            assert!(!expected.is_empty());
            assert_eq!(ids(&rows), expected, "map {map}");
            assert!(rows.iter().all(|row| row.map == map));
        }
    }

    #[tokio::test]
    async fn a_reopened_ledger_has_everything() {
        let dir = tempfile::tempdir().expect("temp dir");
        let tournament = botwars("reopen", 1);
        let jobs = jobs(&tournament);
        let first = envelope(&tournament, &jobs[2].job_id, "w1", [4, 2]);
        let (before, matches) = {
            let ledger = open(&dir);
            ledger.insert_tournament(tournament.clone()).await.expect("insert");
            ledger.mark_running(vec![jobs[0].job_id.clone()]).await.expect("mark running");
            ledger
                .record(vec![
                    Answer::Result(first.clone()),
                    Answer::Result(first.clone()),
                    dead_letter(&jobs[1].job_id, "x"),
                ])
                .await
                .expect("record");
            (standings(&ledger, &tournament).await, ledger.matches(&tournament.id, all(100)).await.expect("matches"))
        };
        let ledger = open(&dir);
        assert_eq!(ledger.tournament(&tournament.id).await.expect("read"), Some(tournament.clone()));
        assert_eq!(
            progress(&ledger, &tournament).await,
            Progress { total: 6, pending: 3, running: 1, done: 1, failed: 1, duplicates: 1 }
        );
        assert_eq!(standings(&ledger, &tournament).await, before);
        let reopened = ledger.matches(&tournament.id, all(100)).await.expect("matches");
        assert_eq!(format!("{reopened:?}"), format!("{matches:?}"));
        let (_, _, stored) = ledger.match_detail(&jobs[2].job_id).await.expect("detail").expect("exists");
        assert_eq!(stored, Some(first.clone()));
        assert_eq!(ledger.record(vec![Answer::Result(first)]).await.expect("record"), [Recorded::Duplicate]);
        assert_eq!(ledger.insert_tournament(tournament).await.expect("insert"), Inserted { created: false, jobs: 6 });
    }

    #[tokio::test]
    async fn a_ledger_from_before_the_job_counts_is_counted_once_when_opened() {
        let dir = tempfile::tempdir().expect("temp dir");
        let tournament = botwars("counts", 1);
        let jobs = jobs(&tournament);
        {
            let ledger = open(&dir);
            ledger.insert_tournament(tournament.clone()).await.expect("insert");
            ledger.mark_running(vec![jobs[0].job_id.clone(), jobs[1].job_id.clone()]).await.expect("mark running");
            ledger.record(vec![dead_letter(&jobs[1].job_id, "x")]).await.expect("record");
        }
        // As an older build left it: no counts, version 0.
        let raw = Connection::open(dir.path().join("ledger").join("ledger.sqlite")).expect("raw");
        raw.execute_batch("DELETE FROM job_counts; PRAGMA user_version = 0;").expect("wind back");
        drop(raw);
        let ledger = open(&dir);
        let expected = Progress { total: 6, pending: 4, running: 1, done: 0, failed: 1, duplicates: 0 };
        assert_eq!(progress(&ledger, &tournament).await, expected);
        // And the triggers keep them from there.
        ledger.record(vec![dead_letter(&jobs[0].job_id, "y")]).await.expect("record");
        assert_eq!(progress(&ledger, &tournament).await, Progress { running: 0, failed: 2, ..expected });
    }

    #[test]
    fn a_tournament_without_counted_jobs_is_being_inserted_not_finished() {
        assert!(!Progress::default().finished());
        assert!(Progress { total: 2, done: 1, failed: 1, ..Progress::default() }.finished());
    }

    #[test]
    fn seats_and_states_round_trip_through_their_text() {
        assert_eq!(seats_text(&[0, 11, 3]), ",0,11,3,");
        assert_eq!(seats_from_text(&seats_text(&[0, 11, 3])), [0, 11, 3]);
        assert!(seats_from_text(",").is_empty());
        for state in JobState::ALL {
            assert_eq!(JobState::from_name(state.name()), Some(state));
        }
        assert_eq!(JobState::from_name("Done"), None);
        for status in PlayerStatus::ALL {
            assert_eq!(known(3, "player status", status.name(), PlayerStatus::from_name).ok(), Some(status));
            let serialized = serde_json::to_value(status).expect("json");
            assert_eq!(serialized.as_str(), Some(status.name()), "the name is the serialized one");
        }
        let unknown = known(3, "player status", "a_status_from_a_newer_build", PlayerStatus::from_name);
        let error = unknown.expect_err("an unknown status is an error").to_string();
        assert!(error.contains("unknown player status \"a_status_from_a_newer_build\""), "{error}");
    }
}
