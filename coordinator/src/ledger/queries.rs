//! What the API, the pages and the standings read: tournaments, their progress,
//! matches with their outcomes. Reads that only show go through the reading
//! connection, so a long write never holds them up.

use super::*;

impl Ledger {
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
        Ok(self.tournaments_after(None, u32::MAX).await?.unwrap_or_default())
    }

    /// Up to `limit` tournaments that come after tournament `after` (from the first
    /// if `None`) in [`Ledger::tournaments`]' order: a page of it. `None` when there is
    /// no tournament `after`.
    pub async fn tournaments_after(
        &self,
        after: Option<String>,
        limit: u32,
    ) -> Result<Option<Vec<TournamentSummary>>, LedgerError> {
        self.read(move |connection| {
            let created_at: Option<i64> = match &after {
                None => None,
                Some(id) => {
                    let found = connection
                        .query_row("SELECT created_at FROM tournaments WHERE id = ?1", [id], |row| row.get(0))
                        .optional()?;
                    let Some(created_at) = found else { return Ok(None) };
                    Some(created_at)
                }
            };
            let mut select = connection.prepare(
                "SELECT id, name, game, created_at, owner FROM tournaments
                 WHERE ?1 IS NULL OR created_at < ?1 OR (created_at = ?1 AND id > ?2)
                 ORDER BY created_at DESC, id LIMIT ?3",
            )?;
            let rows = select
                .query_map(params![created_at, after, limit], |row| {
                    Ok((row.get::<_, String>(0)?, row.get(1)?, row.get::<_, String>(2)?, row.get(3)?, row.get(4)?))
                })?
                .collect::<Result<Vec<(String, String, String, i64, String)>, _>>()?;
            let mut summaries = Vec::with_capacity(rows.len());
            for (id, name, game, created_at, owner) in rows {
                let Ok(game) = game.parse() else { continue };
                let progress = progress_of(connection, &id)?.unwrap_or_default();
                summaries.push(TournamentSummary { id, name, game, created_at, owner, progress });
            }
            Ok(Some(summaries))
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

    /// The states of those of `job_ids` the ledger has.
    pub async fn job_states(&self, job_ids: Vec<String>) -> Result<Vec<(String, JobState)>, LedgerError> {
        self.read(move |connection| {
            let mut select = connection.prepare_cached("SELECT state FROM jobs WHERE job_id = ?1")?;
            let mut states = Vec::with_capacity(job_ids.len());
            for job_id in job_ids {
                let Some(name) = select.query_row([&job_id], |row| row.get::<_, String>(0)).optional()? else {
                    continue;
                };
                states.push((job_id, known(0, "job state", &name, JobState::from_name)?));
            }
            Ok(states)
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
            let envelope = envelope.as_deref().map(result_envelope).transpose()?;
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

impl Ledger {
    /// The recorded result documents of `job_ids` (those that have one), in one read:
    /// a page of matches' crash reports.
    pub async fn results_of(&self, job_ids: Vec<String>) -> Result<Vec<(String, ResultEnvelope)>, LedgerError> {
        if job_ids.is_empty() {
            return Ok(Vec::new());
        }
        self.read(move |connection| {
            let marks = vec!["?"; job_ids.len()].join(",");
            let mut select =
                connection.prepare(&format!("SELECT job_id, envelope FROM results WHERE job_id IN ({marks})"))?;
            let mut rows = select.query(rusqlite::params_from_iter(job_ids.iter()))?;
            let mut found = Vec::new();
            while let Some(row) = rows.next()? {
                found.push((row.get(0)?, result_envelope(&row.get::<_, String>(1)?)?));
            }
            Ok(found)
        })
        .await
    }

    /// Up to `limit` matches of tournament `id` after position `after` (from the
    /// first if `None`), in position order, with their outcomes and recorded result
    /// documents: a page of an export, read without holding the ledger long.
    pub async fn export_page(
        &self,
        id: &str,
        after: Option<u64>,
        limit: u32,
    ) -> Result<Vec<(MatchRow, Option<ResultEnvelope>)>, LedgerError> {
        let id = id.to_owned();
        self.read(move |connection| {
            let mut select = connection.prepare_cached(
                "SELECT j.job_id, j.position, j.seats, j.map, j.repetition, j.seed, j.state, j.attempts, j.reason,
                        r.envelope
                 FROM jobs j LEFT JOIN results r ON r.job_id = j.job_id AND j.state = 'done'
                 WHERE j.tournament_id = ?1 AND j.position > ?2 ORDER BY j.position LIMIT ?3",
            )?;
            let after = after.map_or(-1, |position| i64::try_from(position).unwrap_or(i64::MAX));
            let mut page = Vec::new();
            let mut rows = select.query(params![id, after, limit])?;
            while let Some(row) = rows.next()? {
                let mut job = match_row(row)?;
                job.outcomes = outcomes_of(connection, &job)?;
                let envelope = row.get::<_, Option<String>>(9)?.as_deref().map(result_envelope).transpose()?;
                page.push((job, envelope));
            }
            Ok(page)
        })
        .await
    }
}

/// A result document as recorded; one that does not read is the ledger's corruption.
fn result_envelope(text: &str) -> Result<ResultEnvelope, LedgerError> {
    serde_json::from_str(text).map_err(|source| LedgerError::Corrupt { what: "result", source })
}

pub(super) fn match_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<MatchRow> {
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
        // The flag alone, from the index of jobs with failures; with a bot, its own
        // failures among them. Only completed matches have seats: a failed job is a
        // failure of every bot in it.
        conditions.push_str(" AND failure = 1");
        if let Some(bot) = filter.bot {
            values.push(Box::new(bot as i64));
            conditions.push_str(&format!(
                " AND (state = 'failed' OR EXISTS (SELECT 1 FROM result_seats s
                    WHERE s.job_id = jobs.job_id AND s.status != 'ok' AND s.bot = ?{}))",
                values.len()
            ));
        }
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
pub(super) fn seat_outcome(row: &rusqlite::Row<'_>, from: usize) -> rusqlite::Result<SeatOutcome> {
    Ok(SeatOutcome {
        bot: row.get::<_, Option<i64>>(from)?.map(|bot| bot as usize),
        score: row.get(from + 1)?,
        rank: row.get(from + 2)?,
        status: known(from + 3, "player status", &row.get::<_, String>(from + 3)?, PlayerStatus::from_name)?,
        timeouts: row.get::<_, i64>(from + 4)? as u64,
    })
}

fn progress_of(connection: &Connection, id: &str) -> Result<Option<Progress>, LedgerError> {
    let header: Option<(i64, i64, bool)> = connection
        .query_row("SELECT jobs, duplicates, open FROM tournaments WHERE id = ?1", [id], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?;
    let Some((total, duplicates, open)) = header else { return Ok(None) };
    let mut progress = Progress { total: total as u64, duplicates: duplicates as u64, open, ..Progress::default() };
    let mut select = connection.prepare_cached("SELECT state, count FROM job_counts WHERE tournament_id = ?1")?;
    let mut rows = select.query([id])?;
    while let Some(row) = rows.next()? {
        let count = row.get::<_, i64>(1)? as u64;
        match known(0, "job state", &row.get::<_, String>(0)?, JobState::from_name)? {
            JobState::Pending => progress.pending = count,
            JobState::Running => progress.running = count,
            JobState::Done => progress.done = count,
            JobState::Failed => progress.failed = count,
            JobState::Cancelled => progress.cancelled = count,
        }
    }
    Ok(Some(progress))
}
