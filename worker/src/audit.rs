//! Audits: another worker's match re-verified from its stored replay ([`AuditJob`]).
//! The replay is re-simulated from its header and recorded replies; it must reproduce
//! itself line by line, and give the play hash and the outcome its result recorded.
//! Anything else (a missing or unreadable replay included) is a mismatch, held against
//! the worker that played it.

use farm_engine::replay;
use farm_proto::{
    AUDITS_QUEUE, AuditEnvelope, AuditJob, AuditVerdict, MatchResult, RESULTS_QUEUE, ResultEnvelope, SCHEMA_VERSION,
};
use farm_runtime::queue::{self, ConfirmedPublisher};
use farm_runtime::settle::Settlement;
use farm_runtime::storage::{Storage, StorageError};
use lapin::message::Delivery;

use crate::metrics;

/// How many times an audit of its own match a worker sends back to wait for another
/// worker (each round [`queue::AUDIT_WAIT_MS`]) before it reports it skipped: about five
/// minutes, so that a farm of one worker does not circulate its audits for ever.
const MAX_WAITING_ROUNDS: u64 = 150;

/// An audit sent to wait in [`queue::AUDITS_WAIT_QUEUE`] (where its queue dead-letters
/// it) and come back for another try.
const WAIT: Settlement = Settlement::Reject;

/// What auditing needs of the worker.
pub struct Auditor<'a> {
    /// This worker: it does not audit its own matches.
    pub worker_id: &'a str,
    /// Where replays are.
    pub storage: &'a Storage,
    /// The most of a replay it reads ([`crate::runner::RunnerOptions::max_replay_bytes`]).
    pub max_replay_bytes: u64,
    /// Where verdicts go.
    pub publisher: &'a ConfirmedPublisher,
}

impl Auditor<'_> {
    /// Handles one delivery of `farm.audits` and says how to settle it: a match this
    /// worker played goes to wait for another worker; another's is re-verified and its
    /// verdict published, then acked. An audit that cannot be done now (storage or the
    /// broker failing) waits and comes back.
    pub async fn handle(&self, delivery: &Delivery) -> Settlement {
        let (audit, token) = match serde_json::from_slice::<AuditEnvelope>(&delivery.data) {
            Ok(envelope) if envelope.schema == SCHEMA_VERSION => (envelope.audit, envelope.token),
            _ => {
                // No worker of this build reads it: the coordinator publishes it again
                // (it is still pending in its ledger) if it is its own.
                tracing::warn!("dropping an unreadable audit job");
                return Settlement::Ack;
            }
        };
        let verdict = if audit.played_by == self.worker_id {
            let rounds = queue::rounds_through(&delivery.properties, AUDITS_QUEUE);
            if rounds < MAX_WAITING_ROUNDS {
                return WAIT;
            }
            AuditVerdict::Skipped { reason: format!("no other worker took it in {rounds} rounds") }
        } else {
            match verify(self.storage, &audit, self.max_replay_bytes).await {
                Ok(verdict) => verdict,
                Err(error) => {
                    tracing::warn!(job = %audit.job_id, %error, "an audit waits: its replay cannot be read now");
                    return WAIT;
                }
            }
        };
        let envelope = ResultEnvelope {
            schema: SCHEMA_VERSION,
            job_id: audit.job_id.clone(),
            tournament_id: audit.tournament_id.clone(),
            worker_id: self.worker_id.to_owned(),
            token,
            instance: Some(crate::instance().to_owned()),
            attempt: 0,
            result: MatchResult::Audited { verdict: verdict.clone() },
        };
        let Ok(body) = serde_json::to_vec(&envelope) else { return WAIT };
        if let Err(error) = self.publisher.publish(RESULTS_QUEUE, &body).await {
            tracing::warn!(job = %audit.job_id, %error, "an audit's verdict was not sent; it waits to be done again");
            return WAIT;
        }
        metrics::AUDITS.with_label_values(&[verdict.name()]).inc();
        if let AuditVerdict::Mismatch { reason } = &verdict {
            tracing::warn!(job = %audit.job_id, played_by = %audit.played_by, %reason, "an audit found a mismatch");
        }
        Settlement::Ack
    }
}

/// Re-verifies `audit`'s stored replay, reading at most `max_replay_bytes` of it.
/// `Err` only for a storage failure worth trying again (elsewhere or later).
pub async fn verify(storage: &Storage, audit: &AuditJob, max_replay_bytes: u64) -> Result<AuditVerdict, StorageError> {
    let text = match storage.read_replay(&audit.replay_key, max_replay_bytes).await {
        Ok(text) => text,
        Err(StorageError::NotFound { key }) => {
            return Ok(AuditVerdict::Mismatch { reason: format!("its replay {key} is not in storage") });
        }
        Err(StorageError::Replay { problem, .. }) => {
            return Ok(AuditVerdict::Mismatch { reason: format!("its replay cannot be read: {problem}") });
        }
        Err(error) => return Err(error),
    };
    let audit = audit.clone();
    // Re-simulation is the engine's work: off the async threads.
    let verdict = tokio::task::spawn_blocking(move || judge(&text, &audit)).await;
    Ok(verdict.unwrap_or_else(|error| AuditVerdict::Mismatch { reason: format!("re-simulating it failed: {error}") }))
}

/// The verdict on a replay's `text` against what `audit` says its result recorded.
fn judge(text: &[u8], audit: &AuditJob) -> AuditVerdict {
    let mismatch = |reason: String| AuditVerdict::Mismatch { reason };
    let Ok(text) = std::str::from_utf8(text) else { return mismatch("its replay is not UTF-8".to_owned()) };
    let check = match replay::verify(text.lines()) {
        Ok(check) => check,
        Err(error) => return mismatch(format!("its replay does not read: {error}")),
    };
    if let Some(line) = check.first_difference {
        return mismatch(format!("line {line} of its replay differs from the re-simulation"));
    }
    if check.sha256 != audit.replay_sha256 {
        return mismatch(format!(
            "its replay's play hashes to {}, its result recorded {}",
            check.sha256, audit.replay_sha256
        ));
    }
    if check.outcome != audit.outcome {
        return mismatch("its replay gives another outcome than its result recorded".to_owned());
    }
    AuditVerdict::Confirmed
}

#[cfg(test)]
mod tests {
    use super::*;
    use farm_engine::{BotReply, GameKind, Match, MatchSetup, builtin};

    /// A short Botwars match of built-in bots: its replay lines and outcome.
    fn played() -> (Vec<String>, Vec<farm_proto::PlayerOutcome>) {
        let players = vec!["a".to_owned(), "b".to_owned()];
        let setup = MatchSetup::new(GameKind::Botwars, &serde_json::json!({ "maxTurns": 20 }), None, 4, players)
            .expect("setup");
        let mut game = Match::new(setup).expect("match");
        let mut bots: Vec<_> =
            (0..2).map(|seat| builtin::create(GameKind::Botwars, "random", 4, seat).expect("bot")).collect();
        let mut lines = vec![game.header_line()];
        while !game.is_over() {
            let replies = game
                .to_act()
                .into_iter()
                .map(|seat| (seat, BotReply::Line(bots[seat].reply(game.game(), seat))))
                .collect();
            lines.push(game.submit(replies).expect("a step").to_owned());
        }
        lines.push(game.footer_line());
        (lines, game.outcome())
    }

    fn audit_of(lines: &[String], outcome: Vec<farm_proto::PlayerOutcome>) -> AuditJob {
        AuditJob {
            job_id: "j".into(),
            tournament_id: "t".into(),
            replay_key: "k".into(),
            replay_sha256: replay::digest(lines.iter().map(String::as_str)),
            outcome,
            played_by: "w".into(),
        }
    }

    #[test]
    fn a_replay_that_re_simulates_to_its_result_is_confirmed_and_any_change_is_a_mismatch() {
        let (lines, outcome) = played();
        let audit = audit_of(&lines, outcome.clone());
        let text = lines.join("\n");
        assert_eq!(judge(text.as_bytes(), &audit), AuditVerdict::Confirmed);

        // A frame's state changed: the re-simulation differs at that line.
        let tampered = text.replacen("\"step\":3,", "\"step\":3,\"x\":1,", 1);
        let verdict = judge(tampered.as_bytes(), &audit);
        assert!(matches!(&verdict, AuditVerdict::Mismatch { reason } if reason.contains("line 4")), "{verdict:?}");

        // A consistent replay of another play (a reply changed, the rest re-simulated
        // from it): it verifies, but it is not the play the result recorded.
        let other = AuditJob { replay_sha256: "0".repeat(64), ..audit.clone() };
        let verdict = judge(text.as_bytes(), &other);
        assert!(matches!(&verdict, AuditVerdict::Mismatch { reason } if reason.contains("hashes to")), "{verdict:?}");

        let mut wrong = outcome;
        wrong[0].score += 1;
        let verdict = judge(text.as_bytes(), &AuditJob { outcome: wrong, ..audit });
        assert!(matches!(&verdict, AuditVerdict::Mismatch { reason } if reason.contains("outcome")), "{verdict:?}");
    }
}
