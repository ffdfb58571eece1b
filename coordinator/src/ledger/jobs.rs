//! Tournaments going in and jobs going out: inserting a tournament's schedule, the
//! pending jobs the publisher takes, and their states.

use super::*;
use crate::fair_share::{self, Claimant};

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
        self.insert_tournament_for(tournament, crate::accounts::OPERATOR.to_owned(), 0).await
    }

    /// [`Ledger::insert_tournament`], submitted by `owner`, whose tournaments of higher
    /// `priority` are published first ([`crate::fair_share`]). The same tournament
    /// submitted again keeps its first owner and priority.
    pub async fn insert_tournament_for(
        &self,
        tournament: Tournament,
        owner: String,
        priority: i32,
    ) -> Result<Inserted, LedgerError> {
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
                        "INSERT OR IGNORE INTO tournaments (id, name, game, definition, created_at, jobs, open, owner, priority)
                         VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7, ?8)",
                        params![id, row.0, row.1, definition, now(), directed, owner, priority],
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

    /// Up to `limit` pending jobs (of tournament `only`, if given), shared among their
    /// owners by [`fair_share::apportion`]; each owner's from their tournament of
    /// highest priority first, then the oldest, in schedule order.
    pub async fn pending(&self, limit: u32, only: Option<String>) -> Result<Vec<PendingJob>, LedgerError> {
        self.with(move |connection| {
            let claimants = claimants(connection, only.as_deref())?;
            let given = fair_share::apportion(&claimants, u64::from(limit));
            let mut pending = Vec::with_capacity(limit as usize);
            let mut tournaments = connection.prepare_cached(
                "SELECT t.id FROM tournaments t
                 JOIN job_counts c ON c.tournament_id = t.id AND c.state = 'pending' AND c.count > 0
                 WHERE t.owner = ?1 AND (?2 IS NULL OR t.id = ?2)
                 ORDER BY t.priority DESC, t.created_at, t.rowid",
            )?;
            let mut jobs = connection.prepare_cached(
                "SELECT job_id, position, seats, map, repetition, seed FROM jobs
                 WHERE tournament_id = ?1 AND state = 'pending' ORDER BY position LIMIT ?2",
            )?;
            for (claimant, mut wanted) in claimants.iter().zip(given) {
                if wanted == 0 {
                    continue;
                }
                let ids: Vec<String> = tournaments
                    .query_map(params![claimant.owner, only], |row| row.get(0))?
                    .collect::<Result<_, _>>()?;
                for tournament_id in ids {
                    let rows = jobs.query_map(params![tournament_id, wanted as i64], |row| {
                        Ok(PlannedJob {
                            job_id: row.get(0)?,
                            position: row.get::<_, i64>(1)? as u64,
                            seats: seats_from_text(&row.get::<_, String>(2)?),
                            map: row.get::<_, i64>(3)? as usize,
                            repetition: row.get(4)?,
                            seed: row.get::<_, i64>(5)? as u64,
                        })
                    })?;
                    for planned in rows {
                        pending.push(PendingJob { tournament_id: tournament_id.clone(), planned: planned? });
                        wanted -= 1;
                    }
                    if wanted == 0 {
                        break;
                    }
                }
            }
            Ok(pending)
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
                // A republished job keeps its first publication's time: its latency is
                // what waiting for it cost, republications included.
                let mut update = transaction.prepare_cached(
                    "UPDATE jobs SET state = 'running', published_seq = ?2, lease_secs = ?3,
                         published_ms = coalesce(published_ms, ?4)
                     WHERE job_id = ?1 AND state = 'pending'",
                )?;
                let published_ms = now_ms();
                for (seq, (job_id, lease_secs)) in (last + 1..).zip(&leased) {
                    let lease_secs = i64::try_from(*lease_secs).unwrap_or(i64::MAX);
                    update.execute(params![job_id, seq, lease_secs, published_ms])?;
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

/// The owners with pending jobs (of tournament `only`, if given), in name order, with
/// their shares (1 for a user without a row: the operator) and published jobs.
fn claimants(connection: &Connection, only: Option<&str>) -> rusqlite::Result<Vec<Claimant>> {
    connection
        .prepare_cached(
            "SELECT t.owner, coalesce(u.share, 1),
                 sum(CASE WHEN c.state = 'running' THEN c.count ELSE 0 END),
                 sum(CASE WHEN c.state = 'pending' THEN c.count ELSE 0 END) AS pending
             FROM job_counts c JOIN tournaments t ON t.id = c.tournament_id
             LEFT JOIN users u ON u.name = t.owner
             WHERE c.state IN ('pending', 'running') AND c.count > 0 AND (?1 IS NULL OR t.id = ?1)
             GROUP BY t.owner HAVING pending > 0 ORDER BY t.owner",
        )?
        .query_map([only], |row| {
            Ok(Claimant {
                owner: row.get(0)?,
                share: row.get(1)?,
                running: row.get::<_, i64>(2)? as u64,
                pending: row.get::<_, i64>(3)? as u64,
            })
        })?
        .collect()
}
