//! Audits and quarantine: a share of completed matches (chosen by their job id, so
//! every coordinator chooses the same) is re-verified from its stored replay by a
//! worker other than the one that played it (`farm.audits`; the worker's side is
//! `farm_worker::audit`). Each worker's record (matches, bot failures by status,
//! faults of its own sandbox, audits and mismatches) is kept in the ledger; a
//! worker whose mismatch rate or fault rate passes its threshold is quarantined: every
//! few seconds the coordinator tells the workers through `farm.control` (a restarted
//! worker with that id hears it again), until an operator releases it
//! (`DELETE /api/workers/{id}/quarantine`).
//!
//! A published audit is leased for `lease_secs`: one still unanswered then (lost in a
//! broker restart, which can drop the audits waiting in `farm.audits.wait`) is published
//! again, up to `max_publications` times in all; then it is given up, `skipped` with
//! its reason and counted (`farm_coordinator_audits_given_up_total`), never silently
//! lost. Each publication carries the audit's token ([`crate::vouch`]): only a worker
//! it was delivered to can give its verdict.
//!
//! Here: the settings, which matches are audited and when a worker is quarantined. The
//! ledger applies them as it records results; the broker's audit sweep publishes the
//! audits and announces the quarantines.

use farm_proto::limits;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How many completed matches are audited and when a worker is quarantined (the
/// coordinator's `[audits]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditSettings {
    /// The share of completed matches audited, 0 to 1.
    pub fraction: f64,
    /// Audits of a worker's matches before its mismatch rate counts.
    pub min_audits: u64,
    /// The share of a worker's audited matches that may mismatch; past it, quarantine.
    pub max_mismatch_rate: f64,
    /// Matches (and faults) of a worker before its fault rate counts.
    pub min_matches: u64,
    /// The share of a worker's deliveries its own sandbox may fail (the Docker engine,
    /// starting bots); past it, quarantine.
    pub max_fault_rate: f64,
    /// How often pending audits are published and quarantines announced.
    pub sweep_secs: u64,
    /// Audits published per sweep, at most.
    pub batch: u32,
    /// How long a published audit may go unanswered before it is published again:
    /// seconds, 60 to 86,400. Longer than an audit can circulate while only the worker
    /// that played its match takes it (about five minutes).
    pub lease_secs: u64,
    /// Publications of an audit before it is given up, 1 to 100.
    pub max_publications: u32,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings {
            fraction: limits::AUDITS_FRACTION.default,
            min_audits: limits::AUDITS_MIN_AUDITS.default,
            max_mismatch_rate: limits::AUDITS_MAX_MISMATCH_RATE.default,
            min_matches: limits::AUDITS_MIN_MATCHES.default,
            max_fault_rate: limits::AUDITS_MAX_FAULT_RATE.default,
            sweep_secs: limits::AUDITS_SWEEP_SECS.default,
            batch: limits::AUDITS_BATCH.default,
            lease_secs: limits::AUDITS_LEASE_SECS.default,
            max_publications: limits::AUDITS_MAX_PUBLICATIONS.default,
        }
    }
}

impl AuditSettings {
    /// Checks every number is within bounds, naming the one that is not.
    pub fn check(&self) -> Result<(), String> {
        limits::AUDITS_FRACTION.check(self.fraction)?;
        limits::AUDITS_MAX_MISMATCH_RATE.check(self.max_mismatch_rate)?;
        limits::AUDITS_MAX_FAULT_RATE.check(self.max_fault_rate)?;
        limits::AUDITS_SWEEP_SECS.check(self.sweep_secs)?;
        limits::AUDITS_BATCH.check(self.batch)?;
        limits::AUDITS_LEASE_SECS.check(self.lease_secs)?;
        limits::AUDITS_MAX_PUBLICATIONS.check(self.max_publications)?;
        Ok(())
    }

    /// Whether the match `job_id` is audited: the first eight bytes of its id's
    /// SHA-256, as a share of 2^64, below the fraction.
    pub fn selects(&self, job_id: &str) -> bool {
        let digest = Sha256::digest(job_id.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        (u64::from_be_bytes(first) as f64) < self.fraction * (u64::MAX as f64)
    }

    /// Why a worker with this record is to be quarantined, if it is.
    pub fn quarantine_reason(&self, record: &WorkerRecord) -> Option<String> {
        let rate = |part: u64, whole: u64| part as f64 / whole.max(1) as f64;
        if record.audits >= self.min_audits && rate(record.mismatches, record.audits) > self.max_mismatch_rate {
            return Some(format!(
                "{} of its {} audited matches did not re-verify (at most {}% may)",
                record.mismatches,
                record.audits,
                self.max_mismatch_rate * 100.0
            ));
        }
        let deliveries = record.matches + record.faults;
        if deliveries >= self.min_matches && rate(record.faults, deliveries) > self.max_fault_rate {
            return Some(format!(
                "its own sandbox failed {} of its {} deliveries (at most {}% may)",
                record.faults,
                deliveries,
                self.max_fault_rate * 100.0
            ));
        }
        None
    }
}

/// One worker's record, as the ledger keeps it and the API shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WorkerRecord {
    /// The worker's id.
    pub worker_id: String,
    /// Its last process (instance) seen.
    pub instance: Option<String>,
    /// Matches it completed.
    pub matches: u64,
    /// Deliveries it gave back because its own sandbox failed.
    pub faults: u64,
    /// Its matches audited by other workers (confirmed or mismatched).
    pub audits: u64,
    /// Those whose stored replay did not re-verify.
    pub mismatches: u64,
    /// Bots that did not end well in its matches, by status (`timed_out`, `crashed`, ...).
    pub bot_failures: std::collections::BTreeMap<String, u64>,
    /// Why it is quarantined, if it is.
    pub quarantined: Option<String>,
    /// When it last answered, in seconds since the epoch.
    pub last_seen: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_of_matches_is_selected_the_same_way_every_time() {
        let settings = AuditSettings { fraction: 0.1, ..AuditSettings::default() };
        let selected = (0..10_000).filter(|n| settings.selects(&format!("j-{n}"))).count();
        assert!((800..1200).contains(&selected), "about a tenth: {selected}");
        assert!((0..100).all(|n| settings.selects(&format!("j-{n}")) == settings.selects(&format!("j-{n}"))));
        let none = AuditSettings { fraction: 0.0, ..settings };
        let all = AuditSettings { fraction: 1.0, ..settings };
        assert!((0..1000).all(|n| !none.selects(&format!("j-{n}")) && all.selects(&format!("j-{n}"))));
    }

    #[test]
    fn a_worker_is_quarantined_past_a_rate_once_it_has_enough_of_a_record() {
        let settings = AuditSettings {
            min_audits: 4,
            max_mismatch_rate: 0.25,
            min_matches: 10,
            max_fault_rate: 0.5,
            ..AuditSettings::default()
        };
        let record = |audits, mismatches, matches, faults| WorkerRecord {
            audits,
            mismatches,
            matches,
            faults,
            ..WorkerRecord::default()
        };
        assert_eq!(settings.quarantine_reason(&record(3, 3, 100, 0)), None, "too few audits yet");
        assert_eq!(settings.quarantine_reason(&record(4, 1, 100, 0)), None, "a quarter may mismatch");
        let mismatching = settings.quarantine_reason(&record(4, 2, 100, 0)).expect("half mismatch");
        assert!(mismatching.contains("2 of its 4 audited matches"), "{mismatching}");
        assert_eq!(settings.quarantine_reason(&record(0, 0, 4, 5)), None, "too few deliveries yet");
        let faulty = settings.quarantine_reason(&record(0, 0, 4, 6)).expect("6 of 10 failed");
        assert!(faulty.contains("sandbox failed 6 of its 10 deliveries"), "{faulty}");
        assert!(AuditSettings { fraction: 1.5, ..settings }.check().expect_err("over 1").contains("audits.fraction"));
    }
}
