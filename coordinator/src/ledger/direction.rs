//! What a tournament's director reads and writes: the tournaments it watches, their
//! whole schedule with outcomes, jobs added as results come, and the end it decides.

use super::*;

impl Ledger {
    /// The tournaments whose director may still add jobs or stop them, oldest first.
    pub async fn open_tournaments(&self) -> Result<Vec<String>, LedgerError> {
        self.read(|connection| {
            let mut select = connection.prepare_cached("SELECT id FROM tournaments WHERE open = 1 ORDER BY rowid")?;
            let ids = select.query_map([], |row| row.get(0))?;
            Ok(ids.collect::<Result<Vec<String>, _>>()?)
        })
        .await
    }

    /// Every job of a tournament in schedule order, each with its outcomes once it
    /// completed: what its director decides from. One query, however many jobs.
    pub async fn schedule(&self, tournament_id: &str) -> Result<Vec<MatchRow>, LedgerError> {
        let tournament_id = tournament_id.to_owned();
        self.read(move |connection| {
            let mut select = connection.prepare_cached(
                "SELECT j.job_id, j.position, j.seats, j.map, j.repetition, j.seed, j.state, j.attempts, j.reason,
                        s.bot, s.score, s.rank, s.status, s.timeouts
                 FROM jobs j LEFT JOIN result_seats s ON s.job_id = j.job_id AND j.state = 'done'
                 WHERE j.tournament_id = ?1 ORDER BY j.position, s.seat",
            )?;
            let mut rows = select.query([&tournament_id])?;
            let mut jobs: Vec<MatchRow> = Vec::new();
            while let Some(row) = rows.next()? {
                let job_id: String = row.get(0)?;
                if jobs.last().is_none_or(|last| last.job_id != job_id) {
                    jobs.push(queries::match_row(row)?);
                }
                if row.get::<_, Option<i64>>(10)?.is_some()
                    && let Some(job) = jobs.last_mut()
                {
                    job.outcomes.push(queries::seat_outcome(row, 9)?);
                }
            }
            Ok(jobs)
        })
        .await
    }

    /// Adds `jobs` to an open tournament as pending, to be published. Returns how many
    /// were added: none once it has concluded (a decision raced with a stop).
    pub async fn extend(&self, tournament_id: &str, jobs: Vec<PlannedJob>) -> Result<u64, LedgerError> {
        let tournament_id = tournament_id.to_owned();
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            let open: bool = transaction
                .query_row("SELECT open FROM tournaments WHERE id = ?1", [&tournament_id], |row| row.get(0))
                .optional()?
                .unwrap_or(false);
            if !open {
                return Ok(0);
            }
            let mut added = 0u64;
            {
                let mut insert = transaction.prepare_cached(
                    "INSERT OR IGNORE INTO jobs (job_id, tournament_id, position, seats, map, repetition, seed, state)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending')",
                )?;
                for job in &jobs {
                    added += insert.execute(params![
                        job.job_id,
                        tournament_id,
                        job.position as i64,
                        seats_text(&job.seats),
                        job.map as i64,
                        job.repetition,
                        job.seed as i64,
                    ])? as u64;
                }
            }
            transaction.execute(
                "UPDATE tournaments SET jobs = jobs + ?1 WHERE id = ?2",
                params![added as i64, tournament_id],
            )?;
            transaction.commit()?;
            Ok(added)
        })
        .await
    }

    /// Ends a tournament: its director adds nothing more, its jobs not yet published
    /// are cancelled (those published finish and count), and `conclusion` says why.
    /// Returns how many jobs were cancelled, or `None` if there is no such tournament
    /// or it had concluded already.
    pub async fn conclude(&self, tournament_id: &str, conclusion: String) -> Result<Option<u64>, LedgerError> {
        let tournament_id = tournament_id.to_owned();
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            let concluded = transaction.execute(
                "UPDATE tournaments SET open = 0, conclusion = ?2 WHERE id = ?1 AND conclusion IS NULL",
                params![tournament_id, conclusion],
            )?;
            if concluded == 0 {
                return Ok(None);
            }
            let cancelled = transaction.execute(
                "UPDATE jobs SET state = 'cancelled' WHERE tournament_id = ?1 AND state = 'pending'",
                [&tournament_id],
            )?;
            transaction.commit()?;
            Ok(Some(cancelled as u64))
        })
        .await
    }

    /// Cancels the jobs of `bot` in tournament `tournament_id` not yet published (it
    /// retired from a ladder). Returns how many.
    pub async fn cancel_pending_of(&self, tournament_id: &str, bot: usize) -> Result<u64, LedgerError> {
        let tournament_id = tournament_id.to_owned();
        self.with(move |connection| {
            let cancelled = connection.execute(
                "UPDATE jobs SET state = 'cancelled' WHERE tournament_id = ?1 AND state = 'pending' AND seats LIKE ?2",
                params![tournament_id, format!("%,{bot},%")],
            )?;
            Ok(cancelled as u64)
        })
        .await
    }

    /// Why a tournament stopped before its schedule ran out, if it did.
    pub async fn conclusion(&self, tournament_id: &str) -> Result<Option<String>, LedgerError> {
        let tournament_id = tournament_id.to_owned();
        self.read(move |connection| {
            let conclusion: Option<Option<String>> = connection
                .query_row("SELECT conclusion FROM tournaments WHERE id = ?1", [&tournament_id], |row| row.get(0))
                .optional()?;
            Ok(conclusion.flatten())
        })
        .await
    }

    /// Stores a tournament's definition again (a ladder's bots changed); its id and
    /// jobs stay as they are.
    pub async fn update_definition(&self, tournament: &Tournament) -> Result<(), LedgerError> {
        let definition =
            serde_json::to_string(tournament).map_err(|source| LedgerError::Corrupt { what: "tournament", source })?;
        let id = tournament.id.clone();
        self.with(move |connection| {
            connection.execute("UPDATE tournaments SET definition = ?2 WHERE id = ?1", params![id, definition])?;
            Ok(())
        })
        .await
    }
}
