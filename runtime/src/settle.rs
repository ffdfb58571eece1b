//! Settling a delivery: the one way the worker's lanes answer RabbitMQ for what it gave
//! them ([`settle`]: ack, requeue after a delay, or reject to the dead letters), and the
//! one policy for a delivery that failed for the infrastructure's reasons
//! ([`RetryPolicy`]: tried again after a doubling delay, or given up past its delivery
//! limit). The coordinator's in-process farm has no broker, but it follows the same
//! policy ([`RetryPolicy::after_failure`], [`wait_unless_stopped`]), so that a job is
//! tried as often, and as far apart, in one process as on a farm.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt;
use lapin::Acker;
use lapin::options::{BasicAckOptions, BasicRejectOptions};
use tokio::sync::watch;

use crate::backoff::doubled;
use crate::queue::BROKER_CALL;
use farm_proto::limits;

/// How a delivery is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// Done with: the broker forgets it.
    Ack,
    /// Back to the queue after this delay, held meanwhile (which keeps the lane from
    /// taking another), or at once when the worker stops. Past the queue's delivery
    /// limit the broker dead-letters it instead.
    RequeueAfter(Duration),
    /// Dead-lettered: to the queue's dead letters (an audit: to wait for its next round).
    Reject,
}

impl Settlement {
    /// Back to the queue at once.
    pub const REQUEUE: Settlement = Settlement::RequeueAfter(Duration::ZERO);
}

/// Why a delivery was not settled. The broker gives an unsettled delivery again once its
/// channel closes, so none of these loses it.
#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    /// The channel failed under the call.
    #[error("rabbitmq: {0}")]
    Amqp(#[from] lapin::Error),
    /// The broker did not answer within [`BROKER_CALL`].
    #[error("rabbitmq did not answer in time")]
    Unanswered,
    /// It was settled already, or its channel was closed (a consumer timeout, say).
    #[error("the delivery was settled already, or its channel is closed")]
    Spent,
}

/// Settles the delivery `acker` answers: a requeue first waits its delay (cut short, the
/// requeue made at once, when `stop` turns true), then each call to the broker gets
/// [`BROKER_CALL`] at most.
pub async fn settle(acker: &Acker, settlement: Settlement, stop: watch::Receiver<bool>) -> Result<(), SettleError> {
    if let Settlement::RequeueAfter(delay) = settlement {
        wait_unless_stopped(delay, stop).await;
    }
    answer(acker, settlement).await
}

/// Waits `delay`, unless `stop` turns true first (or its sender is gone): `true` when the
/// delay passed, `false` when it was cut short. A zero delay waits nothing.
pub async fn wait_unless_stopped(delay: Duration, mut stop: watch::Receiver<bool>) -> bool {
    if delay.is_zero() {
        return true;
    }
    tokio::select! {
        () = tokio::time::sleep(delay) => true,
        _ = stop.wait_for(|stop| *stop) => false,
    }
}

/// The broker call of `settlement`, now, within [`BROKER_CALL`].
async fn answer(acker: &Acker, settlement: Settlement) -> Result<(), SettleError> {
    let call = async {
        match settlement {
            Settlement::Ack => acker.ack(BasicAckOptions::default()).await,
            // Reject (not nack) so that every broker version counts the redelivery.
            Settlement::RequeueAfter(_) => acker.reject(BasicRejectOptions { requeue: true }).await,
            Settlement::Reject => acker.reject(BasicRejectOptions { requeue: false }).await,
        }
    };
    match tokio::time::timeout(BROKER_CALL, call).await {
        Ok(Ok(true)) => Ok(()),
        Ok(Ok(false)) => Err(SettleError::Spent),
        Ok(Err(error)) => Err(error.into()),
        Err(_) => Err(SettleError::Unanswered),
    }
}

/// Runs `job`, the handling of the delivery `acker` answers; if it panics, the
/// delivery goes back to the queue at once (unless it was settled before the panic), so
/// a panic costs that job one attempt and nothing else: after its delivery limit
/// RabbitMQ dead-letters it. Returns whether it panicked.
pub async fn requeue_if_it_panics(acker: &Acker, job: impl Future<Output = ()>) -> bool {
    if AssertUnwindSafe(job).catch_unwind().await.is_ok() {
        return false;
    }
    if let Err(error) = answer(acker, Settlement::REQUEUE).await {
        tracing::warn!(%error, "a job that panicked was not requeued");
    }
    true
}

/// How a delivery that failed for the infrastructure's reasons (not the job's) is tried
/// again: after [`RetryPolicy::delay`], at most `delivery_limit` more times. Without a
/// delay a short outage (Docker restarting, storage unreachable) would burn through
/// every job's delivery limit in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Redeliveries after the first delivery: RabbitMQ's `x-delivery-limit`.
    pub delivery_limit: u32,
    /// The wait after the first attempt; it doubles with each attempt ([`doubled`]).
    pub first_delay: Duration,
    /// The longest wait.
    pub max_delay: Duration,
}

/// What becomes of a delivery that failed for the infrastructure's reasons
/// ([`RetryPolicy::after_failure`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// Tried again after this delay.
    TryAgainAfter(Duration),
    /// That was the last delivery the limit allows: answered as failed, with its cause.
    GiveUp,
}

impl RetryPolicy {
    /// Match jobs': 1 s, 2 s, 4 s, ... up to 30 s, at most `delivery_limit` more times.
    pub const fn jobs(delivery_limit: u32) -> Self {
        RetryPolicy { delivery_limit, first_delay: Duration::from_secs(1), max_delay: Duration::from_secs(30) }
    }

    /// Build jobs': 10 s each time (a registry or an engine that just failed is not asked
    /// again at once), at most [`limits::BUILD_DELIVERY_LIMIT`] more times; a worker that
    /// fails the farm's way on the last delivery reports the failure instead of giving
    /// it back.
    pub const BUILDS: RetryPolicy = RetryPolicy {
        delivery_limit: limits::BUILD_DELIVERY_LIMIT,
        first_delay: Duration::from_secs(10),
        max_delay: Duration::from_secs(10),
    };

    /// How long delivery `attempt` (from 1) waits, after it failed, before it is tried
    /// again.
    pub fn delay(&self, attempt: u32) -> Duration {
        doubled(self.first_delay, self.max_delay, attempt)
    }

    /// What becomes of delivery `attempt` (from 1) after it failed: tried again after its
    /// [`RetryPolicy::delay`], or, past the delivery limit (its last delivery: the
    /// broker would dead-letter it), given up.
    pub fn after_failure(&self, attempt: u32) -> AfterFailure {
        if attempt > self.delivery_limit {
            AfterFailure::GiveUp
        } else {
            AfterFailure::TryAgainAfter(self.delay(attempt))
        }
    }
}

#[cfg(test)]
mod tests {
    use lapin::message::Delivery;
    use tokio::time::Instant;

    use super::*;

    /// An acker that answers without a broker, as lapin's mock delivery has.
    fn acker() -> Acker {
        Delivery::mock(1, "".into(), "q".into(), false, Vec::new()).acker
    }

    #[test]
    fn job_retries_wait_doubling_from_a_second_up_to_thirty_and_give_up_past_the_limit() {
        let policy = RetryPolicy::jobs(5);
        let decisions: Vec<AfterFailure> = (1..=7).map(|attempt| policy.after_failure(attempt)).collect();
        let after = |secs| AfterFailure::TryAgainAfter(Duration::from_secs(secs));
        let give_up = AfterFailure::GiveUp;
        assert_eq!(decisions, [after(1), after(2), after(4), after(8), after(16), give_up, give_up]);
        let delays: Vec<u64> = (0..=8).map(|attempt| policy.delay(attempt).as_secs()).collect();
        assert_eq!(delays, [1, 1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(policy.delay(u32::MAX), Duration::from_secs(30));
        // A limit of 0: the first delivery is the last.
        assert_eq!(RetryPolicy::jobs(0).after_failure(1), give_up);
    }

    #[test]
    fn build_retries_pause_ten_seconds_and_the_last_delivery_gives_up() {
        let decisions: Vec<AfterFailure> = (1..=4).map(|attempt| RetryPolicy::BUILDS.after_failure(attempt)).collect();
        let pause = AfterFailure::TryAgainAfter(Duration::from_secs(10));
        assert_eq!(decisions, [pause, pause, AfterFailure::GiveUp, AfterFailure::GiveUp]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_requeue_waits_its_delay_and_a_delivery_is_settled_once() {
        let (_stop, stopped) = watch::channel(false);
        let acker = acker();
        let start = Instant::now();
        settle(&acker, Settlement::RequeueAfter(Duration::from_secs(7)), stopped.clone()).await.expect("settled");
        assert_eq!(start.elapsed(), Duration::from_secs(7));
        for settlement in [Settlement::Ack, Settlement::Reject, Settlement::REQUEUE] {
            let again = settle(&acker, settlement, stopped.clone()).await;
            assert!(matches!(again, Err(SettleError::Spent)), "{settlement:?}: {again:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_cuts_a_requeues_delay_short_and_acks_and_rejects_never_wait() {
        let (stop, stopped) = watch::channel(false);
        let start = Instant::now();
        let requeue = settle_owned(Settlement::RequeueAfter(Duration::from_secs(30)), stopped.clone());
        let stopping = async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            stop.send_replace(true);
        };
        let (settled, ()) = tokio::join!(requeue, stopping);
        settled.expect("settled");
        assert_eq!(start.elapsed(), Duration::from_secs(3), "requeued as the stop came");

        // Stopped already: at once.
        settle_owned(Settlement::RequeueAfter(Duration::from_secs(30)), stopped.clone()).await.expect("settled");
        assert_eq!(start.elapsed(), Duration::from_secs(3));

        let (_running, running) = watch::channel(false);
        for settlement in [Settlement::Ack, Settlement::Reject, Settlement::REQUEUE] {
            settle_owned(settlement, running.clone()).await.expect("settled");
        }
        assert_eq!(start.elapsed(), Duration::from_secs(3), "only a delayed requeue waits");
    }

    /// [`settle`] of a fresh delivery.
    async fn settle_owned(settlement: Settlement, stop: watch::Receiver<bool>) -> Result<(), SettleError> {
        settle(&acker(), settlement, stop).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_with_its_delay_or_its_stop_whichever_comes_first() {
        let (stop, stopped) = watch::channel(false);
        let start = Instant::now();
        assert!(wait_unless_stopped(Duration::from_secs(2), stopped.clone()).await);
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        assert!(wait_unless_stopped(Duration::ZERO, stopped.clone()).await, "nothing to cut short");
        stop.send_replace(true);
        assert!(!wait_unless_stopped(Duration::from_secs(60), stopped.clone()).await);
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        drop(stop);
        let (gone, orphaned) = watch::channel(false);
        drop(gone);
        assert!(!wait_unless_stopped(Duration::from_secs(60), orphaned).await, "a stop nobody can send ends it");
    }

    #[tokio::test]
    async fn a_panic_requeues_its_delivery_and_a_settled_one_stays_settled() {
        let acker = acker();
        assert!(!requeue_if_it_panics(&acker, async {}).await);
        assert!(acker.usable(), "a job that did not panic answers for itself");
        assert!(requeue_if_it_panics(&acker, async { panic!("a bug in one job") }).await);
        assert!(!acker.usable(), "requeued");
        assert!(requeue_if_it_panics(&acker, async { panic!("settled before it panicked") }).await);
    }
}
