//! Leases: a published job that goes unanswered for too long is published again.
//!
//! RabbitMQ keeps a confirmed job until a worker acks it, so a job is lost only by a
//! fault outside the farm's rules: a result set aside as unreadable, a queue purged or
//! recreated, a broker that lost its disk. The coordinator cannot see a job leave the
//! queue, but it can see the queue empty: when `farm.jobs` has no job ready, every job
//! published so far has reached a worker (or is lost). From such a moment, a job still
//! unanswered once its lease has passed is overdue, and goes back to pending.
//!
//! A job's lease is twice its match's wall-clock limit on a worker with default
//! settings ([`crate::farm::lease_secs`], set as the publisher publishes it: it may
//! wait in a worker's warm pool while another match plays its slot, then play), plus
//! the operator's margin for uploads, acks and redelivery. A job that was only slow
//! is answered twice: the first result counts, the second is a duplicate (see
//! [`crate::ledger`]).
//!
//! The sweep runs every `sweep_secs` and puts back at most `batch` jobs of each lease
//! at a time, so even a coordinator that was down for a day republishes at a pace.
//! Nothing is republished for a restart: the moments the queue was seen empty are kept
//! in memory, so after a restart no lease can expire before one has passed again.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use farm_proto::JOBS_QUEUE;
use farm_runtime::queue;
use lapin::Channel;
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use crate::farm::{FarmError, QueueError};
use crate::ledger::Ledger;
use crate::metrics;
use farm_proto::limits;

/// How leases are swept (`[leases]` in the coordinator's configuration).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LeaseSettings {
    /// Added to every lease: time for a result's upload, publication and ingest, and a
    /// redelivery's. Seconds, 0 to 86,400.
    pub margin_secs: u64,
    /// How often the queue is looked at and overdue jobs are put back. Seconds, 1 to
    /// 3,600.
    pub sweep_secs: u64,
    /// The most jobs of one lease put back per sweep. 1 to 100,000.
    pub batch: u32,
}

impl Default for LeaseSettings {
    fn default() -> Self {
        LeaseSettings {
            margin_secs: limits::LEASES_MARGIN_SECS.default,
            sweep_secs: limits::LEASES_SWEEP_SECS.default,
            batch: limits::LEASES_BATCH.default,
        }
    }
}

impl LeaseSettings {
    /// Whether the settings are within their ranges; the problem names the key.
    pub fn check(&self) -> Result<(), String> {
        limits::LEASES_MARGIN_SECS.check(self.margin_secs)?;
        limits::LEASES_SWEEP_SECS.check(self.sweep_secs)?;
        limits::LEASES_BATCH.check(self.batch)?;
        Ok(())
    }
}

/// The moments `farm.jobs` was seen with nothing ready, each with the last
/// publication then: every job published up to it had reached a worker.
#[derive(Debug, Default)]
pub struct Drains {
    seen: VecDeque<(Instant, u64)>,
}

impl Drains {
    /// Notes that at `at` the queue had nothing ready and the last publication was
    /// `mark`.
    pub fn saw_drained(&mut self, at: Instant, mark: u64) {
        self.seen.push_back((at, mark));
    }

    /// The last publication that had reached a worker at least `age` before `now`:
    /// the jobs published up to it and still unanswered are overdue for a lease of
    /// `age`. `None` when the queue has not been seen empty that long ago.
    pub fn mark_before(&self, now: Instant, age: Duration) -> Option<u64> {
        let cutoff = now.checked_sub(age)?;
        self.seen.iter().take_while(|(at, _)| *at <= cutoff).map(|(_, mark)| *mark).max()
    }

    /// Forgets what no lease of at most `longest` can use: of the moments older than
    /// it, all but the newest.
    pub fn forget_older_than(&mut self, now: Instant, longest: Duration) {
        let Some(cutoff) = now.checked_sub(longest) else { return };
        while self.seen.len() > 1 && self.seen[1].0 <= cutoff {
            self.seen.pop_front();
        }
    }
}

/// Sweeps leases every `settings.sweep_secs` until `stop`, over the session's
/// `channel`: wakes `wake_publisher` when it put jobs back.
pub async fn sweep(
    channel: &Channel,
    ledger: &Ledger,
    settings: &LeaseSettings,
    wake_publisher: &Arc<Notify>,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), FarmError> {
    let mut drains = Drains::default();
    let margin = Duration::from_secs(settings.margin_secs);
    let mut ticks = tokio::time::interval(Duration::from_secs(settings.sweep_secs));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stop.wait_for(|stop| *stop) => return Ok(()),
        }
        // The mark is read before the queue: a job published in between is then not
        // taken for one that reached a worker.
        let mark = ledger.published_mark().await?;
        let ready = queue::ready(channel, JOBS_QUEUE).await.map_err(QueueError::Broker)?;
        let now = Instant::now();
        if ready == 0 {
            drains.saw_drained(now, mark);
        }
        let leases = ledger.running_leases().await?;
        let mut expired = 0;
        for &lease in &leases {
            if let Some(mark) = drains.mark_before(now, Duration::from_secs(lease) + margin) {
                expired += ledger.expire_leases(lease, mark, settings.batch).await?;
            }
        }
        if expired > 0 {
            metrics::LEASES_EXPIRED.inc_by(expired);
            tracing::warn!(expired, "published jobs unanswered past their lease: publishing them again");
            wake_publisher.notify_one();
        }
        let longest = leases.iter().max().map_or(Duration::ZERO, |&lease| Duration::from_secs(lease)) + margin;
        drains.forget_older_than(now, longest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_counts_from_the_queue_seen_empty_not_from_publication() {
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut drains = Drains::default();
        assert_eq!(drains.mark_before(at(1000), Duration::from_secs(10)), None, "never seen empty: nothing overdue");
        drains.saw_drained(at(100), 7);
        drains.saw_drained(at(130), 9);
        drains.saw_drained(at(160), 12);
        assert_eq!(drains.mark_before(at(105), Duration::from_secs(10)), None, "empty only 5 s ago");
        assert_eq!(drains.mark_before(at(110), Duration::from_secs(10)), Some(7));
        assert_eq!(drains.mark_before(at(145), Duration::from_secs(10)), Some(9));
        assert_eq!(drains.mark_before(at(1000), Duration::from_secs(10)), Some(12));
        assert_eq!(drains.mark_before(at(150), Duration::from_secs(40)), Some(7), "a longer lease, an older mark");

        drains.forget_older_than(at(200), Duration::from_secs(50));
        assert_eq!(drains.seen.len(), 2, "of those older than 150 s, only the newest is kept");
        assert_eq!(drains.mark_before(at(200), Duration::from_secs(50)), Some(9));
        drains.forget_older_than(at(10_000), Duration::from_secs(50));
        assert_eq!(drains.mark_before(at(10_000), Duration::from_secs(50)), Some(12), "the newest always stays");
    }

    #[test]
    fn settings_out_of_range_are_refused_naming_the_key() {
        assert_eq!(LeaseSettings::default().check(), Ok(()));
        let cases = [
            (LeaseSettings { margin_secs: 86_401, ..LeaseSettings::default() }, "leases.margin_secs"),
            (LeaseSettings { sweep_secs: 0, ..LeaseSettings::default() }, "leases.sweep_secs"),
            (LeaseSettings { batch: 0, ..LeaseSettings::default() }, "leases.batch"),
        ];
        for (settings, key) in cases {
            assert!(settings.check().is_err_and(|problem| problem.starts_with(key)), "{settings:?}");
        }
    }
}
