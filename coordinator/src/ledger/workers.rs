//! The workers' records and the audits of their matches (see [`crate::audits`]):
//! kept in the transaction that records each answer, read by the audit sweep and the
//! API.

use std::collections::BTreeMap;

use farm_proto::{AuditJob, AuditVerdict, SCHEMA_VERSION};

use super::*;
use crate::audits::{AuditSettings, WorkerRecord};

/// A completed match of `envelope`'s worker: counted on its record (its bots'
/// failures by status too), and, if `audits` selects it, an audit is made pending.
pub(super) fn count_completed(
    transaction: &rusqlite::Transaction<'_>,
    envelope: &ResultEnvelope,
    audits: &AuditSettings,
) -> Result<(), LedgerError> {
    let MatchResult::Completed { players, replay_key, replay_sha256, .. } = &envelope.result else { return Ok(()) };
    seen(transaction, envelope)?;
    transaction.execute("UPDATE workers SET matches = matches + 1 WHERE worker_id = ?1", [&envelope.worker_id])?;
    let mut failure = transaction.prepare_cached(
        "INSERT INTO worker_bot_failures (worker_id, status, count) VALUES (?1, ?2, 1)
         ON CONFLICT (worker_id, status) DO UPDATE SET count = count + 1",
    )?;
    for player in players.iter().filter(|player| player.outcome.status != PlayerStatus::Ok) {
        failure.execute(params![envelope.worker_id, player.outcome.status.name()])?;
    }
    if audits.selects(&envelope.job_id) {
        let audit = AuditJob {
            job_id: envelope.job_id.clone(),
            tournament_id: envelope.tournament_id.clone(),
            replay_key: replay_key.clone(),
            replay_sha256: replay_sha256.clone(),
            outcome: players.iter().map(|player| player.outcome.clone()).collect(),
            played_by: envelope.worker_id.clone(),
        };
        // Its token is added as it is published (crate::audits).
        let document =
            serde_json::to_string(&farm_proto::AuditEnvelope { schema: SCHEMA_VERSION, audit, token: String::new() })
                .map_err(|source| LedgerError::Corrupt { what: "audit", source })?;
        transaction.execute(
            "INSERT OR IGNORE INTO audits (job_id, played_by, state, document) VALUES (?1, ?2, 'pending', ?3)",
            params![envelope.job_id, envelope.worker_id, document],
        )?;
    }
    Ok(())
}

/// A delivery `envelope`'s worker gave back because its own sandbox failed.
pub(super) fn count_fault(
    transaction: &rusqlite::Transaction<'_>,
    envelope: &ResultEnvelope,
    audits: &AuditSettings,
) -> Result<(), LedgerError> {
    seen(transaction, envelope)?;
    transaction.execute("UPDATE workers SET faults = faults + 1 WHERE worker_id = ?1", [&envelope.worker_id])?;
    judge(transaction, &envelope.worker_id, audits)
}

/// An audit's verdict: recorded on the audit (once: a repeated verdict is dropped) and
/// counted on the record of the worker that played the match.
pub(super) fn record_verdict(
    transaction: &rusqlite::Transaction<'_>,
    envelope: &ResultEnvelope,
    verdict: &AuditVerdict,
    audits: &AuditSettings,
) -> Result<Recorded, LedgerError> {
    let played_by: Option<(String, String)> = transaction
        .query_row("SELECT played_by, state FROM audits WHERE job_id = ?1", [&envelope.job_id], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .optional()?;
    let Some((played_by, state)) = played_by else {
        return Ok(Recorded::Refused {
            problem: format!("an audit of job {:?}, which is not audited", envelope.job_id),
        });
    };
    // The worker that played it may only say that nobody else took it.
    if played_by == envelope.worker_id && !matches!(verdict, AuditVerdict::Skipped { .. }) {
        return Ok(Recorded::Refused { problem: format!("worker {played_by:?} audited its own match") });
    }
    if !matches!(state.as_str(), "pending" | "published") {
        return Ok(Recorded::DuplicateVerdict);
    }
    let detail = match verdict {
        AuditVerdict::Confirmed => None,
        AuditVerdict::Mismatch { reason } | AuditVerdict::Skipped { reason } => Some(reason.as_str()),
    };
    transaction.execute(
        "UPDATE audits SET state = ?2, audited_by = ?3, detail = ?4 WHERE job_id = ?1",
        params![envelope.job_id, verdict.name(), envelope.worker_id, detail],
    )?;
    let counted = match verdict {
        AuditVerdict::Confirmed => "audits = audits + 1",
        AuditVerdict::Mismatch { .. } => "audits = audits + 1, mismatches = mismatches + 1",
        AuditVerdict::Skipped { .. } => return Ok(Recorded::Audited { verdict: verdict.name() }),
    };
    transaction.execute(&format!("UPDATE workers SET {counted} WHERE worker_id = ?1"), [&played_by])?;
    judge(transaction, &played_by, audits)?;
    Ok(Recorded::Audited { verdict: verdict.name() })
}

/// Makes sure `envelope`'s worker has a record, and notes it was seen now (as which
/// instance).
fn seen(transaction: &rusqlite::Transaction<'_>, envelope: &ResultEnvelope) -> Result<(), LedgerError> {
    transaction.execute(
        "INSERT INTO workers (worker_id, instance, last_seen) VALUES (?1, ?2, ?3)
         ON CONFLICT (worker_id) DO UPDATE SET instance = coalesce(excluded.instance, instance), last_seen = excluded.last_seen",
        params![envelope.worker_id, envelope.instance, now()],
    )?;
    Ok(())
}

/// Quarantines `worker_id` if its record now passes a threshold of `audits`.
fn judge(transaction: &rusqlite::Transaction<'_>, worker_id: &str, audits: &AuditSettings) -> Result<(), LedgerError> {
    let Some(record) = worker_record(transaction, worker_id)? else { return Ok(()) };
    if record.quarantined.is_some() {
        return Ok(());
    }
    if let Some(reason) = audits.quarantine_reason(&record) {
        tracing::error!(worker = worker_id, %reason, "quarantining a worker");
        transaction.execute("UPDATE workers SET quarantined = ?2 WHERE worker_id = ?1", params![worker_id, reason])?;
    }
    Ok(())
}

const RECORD_COLUMNS: &str = "worker_id, instance, matches, faults, audits, mismatches, quarantined, last_seen";

fn record_from(row: &rusqlite::Row<'_>) -> rusqlite::Result<WorkerRecord> {
    Ok(WorkerRecord {
        worker_id: row.get(0)?,
        instance: row.get(1)?,
        matches: row.get::<_, i64>(2)? as u64,
        faults: row.get::<_, i64>(3)? as u64,
        audits: row.get::<_, i64>(4)? as u64,
        mismatches: row.get::<_, i64>(5)? as u64,
        bot_failures: BTreeMap::new(),
        quarantined: row.get(6)?,
        last_seen: row.get(7)?,
    })
}

fn worker_record(connection: &Connection, worker_id: &str) -> Result<Option<WorkerRecord>, LedgerError> {
    let sql = format!("SELECT {RECORD_COLUMNS} FROM workers WHERE worker_id = ?1");
    Ok(connection.query_row(&sql, [worker_id], record_from).optional()?)
}

/// An audit due to be published ([`Ledger::audits_to_publish`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditToPublish {
    /// The audited match.
    pub job_id: String,
    /// The audit job as stored: an [`farm_proto::AuditEnvelope`] without its token.
    pub document: String,
    /// How often it was published before.
    pub publications: u32,
}

/// How one match's audit stands, for the API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditState {
    /// `pending`, `published`, `confirmed`, `mismatch` or `skipped`.
    pub state: String,
    /// The worker that audited it.
    pub audited_by: Option<String>,
    /// What a mismatch found, or why it was skipped.
    pub detail: Option<String>,
}

impl Ledger {
    /// Up to `limit` audits to publish now, oldest first: pending ones, and published
    /// ones whose lease of `lease_secs` has passed unanswered (lost in a broker restart,
    /// say), each with its document and how often it was published before.
    pub async fn audits_to_publish(&self, limit: u32, lease_secs: u64) -> Result<Vec<AuditToPublish>, LedgerError> {
        let expired_before = now() - i64::try_from(lease_secs).unwrap_or(i64::MAX);
        self.read(move |connection| {
            let mut statement = connection.prepare_cached(
                "SELECT job_id, document, publications FROM audits
                 WHERE state = 'pending' OR (state = 'published' AND published_at <= ?2)
                 ORDER BY publications, rowid LIMIT ?1",
            )?;
            let rows = statement.query_map(params![limit, expired_before], |row| {
                Ok(AuditToPublish { job_id: row.get(0)?, document: row.get(1)?, publications: row.get(2)? })
            })?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
        .await
    }

    /// Notes that the audits of `job_ids` are in the queue, leased from now.
    pub async fn mark_audits_published(&self, job_ids: Vec<String>) -> Result<(), LedgerError> {
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            {
                let mut update = transaction.prepare_cached(
                    "UPDATE audits SET state = 'published', published_at = ?2, publications = publications + 1
                     WHERE job_id = ?1 AND state IN ('pending', 'published')",
                )?;
                for job_id in &job_ids {
                    update.execute(params![job_id, now()])?;
                }
            }
            transaction.commit()?;
            Ok(())
        })
        .await
    }

    /// Gives up the audits of `job_ids`, unanswered however often they were published:
    /// they end `skipped` with `reason`, and their matches stay unaudited.
    pub async fn give_up_audits(&self, job_ids: Vec<String>, reason: String) -> Result<(), LedgerError> {
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            {
                let mut update = transaction.prepare_cached(
                    "UPDATE audits SET state = 'skipped', detail = ?2 WHERE job_id = ?1 AND state = 'published'",
                )?;
                for job_id in &job_ids {
                    update.execute(params![job_id, reason])?;
                }
            }
            transaction.commit()?;
            Ok(())
        })
        .await
    }

    /// Every worker's record, by id.
    pub async fn workers(&self) -> Result<Vec<WorkerRecord>, LedgerError> {
        self.workers_after(String::new(), u32::MAX).await
    }

    /// Up to `limit` workers' records whose ids sort after `after`, by id: a page of
    /// [`Ledger::workers`].
    pub async fn workers_after(&self, after: String, limit: u32) -> Result<Vec<WorkerRecord>, LedgerError> {
        self.read(move |connection| {
            let sql = format!("SELECT {RECORD_COLUMNS} FROM workers WHERE worker_id > ?1 ORDER BY worker_id LIMIT ?2");
            let mut records: Vec<WorkerRecord> =
                connection.prepare(&sql)?.query_map(params![after, limit], record_from)?.collect::<Result<_, _>>()?;
            // The page's failures in one query: its ids run from after `after` to its last.
            let Some(last) = records.last().map(|record| record.worker_id.clone()) else { return Ok(records) };
            let mut failures = connection.prepare_cached(
                "SELECT worker_id, status, count FROM worker_bot_failures WHERE worker_id > ?1 AND worker_id <= ?2",
            )?;
            let rows = failures.query_map(params![after, last], |row| {
                Ok((row.get::<_, String>(0)?, row.get(1)?, row.get::<_, i64>(2)?))
            })?;
            for row in rows {
                let (worker_id, status, count) = row?;
                // Records are sorted by id.
                if let Ok(index) = records.binary_search_by(|record| record.worker_id.cmp(&worker_id)) {
                    records[index].bot_failures.insert(status, count as u64);
                }
            }
            Ok(records)
        })
        .await
    }

    /// The audit of match `job_id`, if it is audited.
    pub async fn audit_of(&self, job_id: &str) -> Result<Option<AuditState>, LedgerError> {
        let job_id = job_id.to_owned();
        self.read(move |connection| {
            Ok(connection
                .query_row("SELECT state, audited_by, detail FROM audits WHERE job_id = ?1", [job_id], |row| {
                    Ok(AuditState { state: row.get(0)?, audited_by: row.get(1)?, detail: row.get(2)? })
                })
                .optional()?)
        })
        .await
    }

    /// Releases `worker_id` from quarantine; `false` if it was not quarantined. Its
    /// record starts over, so that the mismatches that quarantined it do not at once
    /// quarantine it again.
    pub async fn release_worker(&self, worker_id: &str) -> Result<bool, LedgerError> {
        let worker_id = worker_id.to_owned();
        self.with(move |connection| {
            let released = connection.execute(
                "UPDATE workers SET quarantined = NULL, matches = 0, faults = 0, audits = 0, mismatches = 0
                 WHERE worker_id = ?1 AND quarantined IS NOT NULL",
                [&worker_id],
            )?;
            Ok(released == 1)
        })
        .await
    }
}
