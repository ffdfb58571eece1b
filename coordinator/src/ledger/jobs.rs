//! Tournaments going in and jobs going out: inserting a tournament's schedule, the
//! pending jobs the publisher takes, and their states.

use super::*;

/// Rows inserted per transaction when a tournament's jobs are written: the ledger is
/// held for one batch at a time, so other calls wait at most that long.
const INSERT_BATCH: usize = 2_000;

impl Ledger {
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
        let adaptive = tournament.format.is_adaptive();
        let directed = tournament.format.is_directed();
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
                    // An adaptive tournament starts without jobs: its director adds them.
                    if let Some(jobs) = existing.filter(|&jobs| jobs > 0 || adaptive) {
                        return Ok(Some(jobs as u64));
                    }
                    // The tournament row first, with a job count of 0; the count is
                    // written last, once every job is in, so a crash half-way leaves a
                    // count of 0, which the check above resumes from.
                    connection.execute(
                        "INSERT OR IGNORE INTO tournaments (id, name, game, definition, created_at, jobs, open)
                         VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6)",
                        params![id, row.0, row.1, definition, now(), directed],
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

    /// Every published job without an answer goes back to pending, to be published
    /// again: `farm-coordinator run` resuming, whose in-process queue died with the
    /// run. Returns how many.
    pub async fn requeue_unanswered(&self) -> Result<u64, LedgerError> {
        self.with(|connection| {
            Ok(connection.execute("UPDATE jobs SET state = 'pending' WHERE state = 'running'", [])? as u64)
        })
        .await
    }

    /// An operator's retry of tournament `id`: its published jobs without an answer go
    /// back to pending (a lost job is published again; a late result of the first
    /// publication still counts, first result wins), and with `failed`, its failed jobs
    /// too, their failed results removed. `None`: there is no such tournament.
    pub async fn retry(&self, id: String, failed: bool) -> Result<Option<Retried>, LedgerError> {
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            let exists: bool =
                transaction
                    .query_row("SELECT EXISTS (SELECT 1 FROM tournaments WHERE id = ?1)", [&id], |row| row.get(0))?;
            if !exists {
                return Ok(None);
            }
            let unanswered = transaction
                .execute("UPDATE jobs SET state = 'pending' WHERE tournament_id = ?1 AND state = 'running'", [&id])?
                as u64;
            let mut requeued_failed = 0;
            if failed {
                let failed_jobs = "SELECT job_id FROM jobs WHERE tournament_id = ?1 AND state = 'failed'";
                transaction.execute(&format!("DELETE FROM result_seats WHERE job_id IN ({failed_jobs})"), [&id])?;
                transaction.execute(&format!("DELETE FROM results WHERE job_id IN ({failed_jobs})"), [&id])?;
                requeued_failed = transaction.execute(
                    "UPDATE jobs SET state = 'pending', reason = NULL WHERE tournament_id = ?1 AND state = 'failed'",
                    [&id],
                )? as u64;
            }
            transaction.commit()?;
            Ok(Some(Retried { unanswered, failed: requeued_failed }))
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

    /// Marks jobs as published (confirmed by the broker), each with its lease in
    /// seconds (`(job id, lease)`), numbering them on from the last publication in the
    /// order given. Jobs answered meanwhile keep their answer.
    pub async fn mark_running(&self, leased: Vec<(String, u64)>) -> Result<(), LedgerError> {
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            {
                let last: i64 =
                    transaction.query_row("SELECT coalesce(max(published_seq), 0) FROM jobs", [], |row| row.get(0))?;
                let mut update = transaction.prepare_cached(
                    "UPDATE jobs SET state = 'running', published_seq = ?2, lease_secs = ?3
                     WHERE job_id = ?1 AND state = 'pending'",
                )?;
                for (seq, (job_id, lease_secs)) in (last + 1..).zip(&leased) {
                    update.execute(params![job_id, seq, i64::try_from(*lease_secs).unwrap_or(i64::MAX)])?;
                }
            }
            transaction.commit()?;
            Ok(())
        })
        .await
    }

    /// The number of the last publication (0 before any).
    pub async fn published_mark(&self) -> Result<u64, LedgerError> {
        self.read(|connection| {
            let mark: i64 =
                connection.query_row("SELECT coalesce(max(published_seq), 0) FROM jobs", [], |row| row.get(0))?;
            Ok(mark as u64)
        })
        .await
    }

    /// The distinct leases, in seconds, of the published jobs still unanswered.
    pub async fn running_leases(&self) -> Result<Vec<u64>, LedgerError> {
        self.read(|connection| {
            let mut select = connection.prepare_cached(
                "SELECT DISTINCT lease_secs FROM jobs WHERE state = 'running' AND lease_secs IS NOT NULL",
            )?;
            let leases = select.query_map([], |row| row.get::<_, i64>(0))?;
            Ok(leases.map(|lease| lease.map(|lease| lease as u64)).collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

    /// Puts back to pending, to be published again, up to `limit` unanswered jobs of
    /// lease `lease_secs` published at or before publication `mark`, the earliest
    /// first. Returns how many.
    pub async fn expire_leases(&self, lease_secs: u64, mark: u64, limit: u32) -> Result<u64, LedgerError> {
        self.with(move |connection| {
            let expired = connection.execute(
                "UPDATE jobs SET state = 'pending' WHERE job_id IN (
                     SELECT job_id FROM jobs WHERE state = 'running' AND lease_secs = ?1 AND published_seq <= ?2
                     ORDER BY published_seq LIMIT ?3)",
                params![i64::try_from(lease_secs).unwrap_or(i64::MAX), i64::try_from(mark).unwrap_or(i64::MAX), limit],
            )?;
            Ok(expired as u64)
        })
        .await
    }
}
