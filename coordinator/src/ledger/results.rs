//! Answers coming back: each job's result recorded once, the first winning.

use farm_runtime::storage::AttemptKeys;

use super::*;

impl Ledger {
    /// Records a batch of answers in one transaction, each once per job id; returns
    /// what became of each, in order. Only after this returns may they be acked.
    pub async fn record(&self, answers: Vec<Answer>) -> Result<Vec<Recorded>, LedgerError> {
        let audits = self.audits;
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            let mut recorded = Vec::with_capacity(answers.len());
            for answer in &answers {
                recorded.push(record_one(&transaction, answer, &audits)?);
            }
            transaction.commit()?;
            Ok(recorded)
        })
        .await
    }
}

/// `Ok` when `envelope` could have come from a run of its job of `tournament_id`: the
/// same tournament, and every storage key it names under the prefix of its attempt.
/// Anything else was forged or misrouted: recording it would show whatever object its
/// keys name through the API.
fn matches_its_job(envelope: &ResultEnvelope, tournament_id: &str) -> Result<(), String> {
    if envelope.tournament_id != tournament_id {
        return Err(format!("it names tournament {:?}, its job is of {tournament_id:?}", envelope.tournament_id));
    }
    let MatchResult::Completed { replay_key, players, .. } = &envelope.result else { return Ok(()) };
    let keys =
        std::iter::once(replay_key.as_str()).chain(players.iter().filter_map(|player| player.log_key.as_deref()));
    for key in keys {
        if !AttemptKeys::is_key_of(key, tournament_id, &envelope.job_id, envelope.attempt) {
            return Err(format!("its key {key:?} is not one of attempt {} of its job", envelope.attempt));
        }
    }
    Ok(())
}

fn record_one(
    transaction: &rusqlite::Transaction<'_>,
    answer: &Answer,
    audits: &crate::audits::AuditSettings,
) -> Result<Recorded, LedgerError> {
    let job: Option<(String, String, String, Option<i64>)> = transaction
        .query_row(
            "SELECT tournament_id, seats, state, published_ms FROM jobs WHERE job_id = ?1",
            [answer.job_id()],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )
        .optional()?;
    let Some((tournament_id, seats, state, published_ms)) = job else { return Ok(Recorded::UnknownJob) };
    if let Answer::Result(envelope) = answer
        && let Err(problem) = matches_its_job(envelope, &tournament_id)
    {
        return Ok(Recorded::Refused { problem: format!("the result of job {:?}: {problem}", envelope.job_id) });
    }
    let answered = matches!(known(2, "job state", &state, JobState::from_name)?, JobState::Done | JobState::Failed);
    if let Answer::Result(envelope @ ResultEnvelope { result: MatchResult::Returned { fault, .. }, .. }) = answer {
        if !answered {
            transaction.execute("UPDATE jobs SET returns = returns + 1 WHERE job_id = ?1", [answer.job_id()])?;
        }
        if *fault {
            workers::count_fault(transaction, envelope, audits)?;
        }
        return Ok(Recorded::Returned);
    }
    if let Answer::Result(envelope @ ResultEnvelope { result: MatchResult::Audited { verdict }, .. }) = answer {
        return workers::record_verdict(transaction, envelope, verdict, audits);
    }
    if answered {
        transaction.execute("UPDATE tournaments SET duplicates = duplicates + 1 WHERE id = ?1", [&tournament_id])?;
        return Ok(Recorded::Duplicate);
    }
    if let Answer::Failed { dead_letter: true, job_id, .. } = answer {
        let (returns, restarts): (u32, u32) =
            transaction.query_row("SELECT returns, restarts FROM jobs WHERE job_id = ?1", [job_id], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })?;
        // Some of its deliveries were lost to outages, not to the job: it starts over
        // with a delivery count of 0, rather than fail through no fault of its bots.
        if returns > 0 && restarts < MAX_RESTARTS {
            transaction.execute(
                "UPDATE jobs SET state = 'pending', returns = 0, restarts = restarts + 1 WHERE job_id = ?1",
                [job_id],
            )?;
            return Ok(Recorded::Restarted);
        }
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
                    workers::count_completed(transaction, envelope, audits)?;
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
                MatchResult::Returned { .. } | MatchResult::Audited { .. } => {
                    unreachable!("notices and audits are recorded above, never as answers")
                }
            }
        }
        Answer::Failed { job_id, attempts, reason, dead_letter } => {
            let restarts: u32 =
                transaction.query_row("SELECT restarts FROM jobs WHERE job_id = ?1", [job_id], |row| row.get(0))?;
            let reason = if *dead_letter && restarts > 0 {
                format!("{reason}, after {restarts} fresh starts for deliveries lost to outages")
            } else {
                reason.clone()
            };
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
    let latency_ms = published_ms.map(|published| u64::try_from(now_ms() - published).unwrap_or(0));
    Ok(Recorded::New { completed, tournament_finished: !open, latency_ms })
}
