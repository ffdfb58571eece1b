//! The warm pool: a job that arrives while every slot is busy has its bots started at
//! once, so that when a slot frees its match begins without waiting for them.
//! Container start-up is then hidden whenever jobs are queued.
//!
//! # What is kept warm, and why that is safe
//! A bot's container carries values of its own match: `FARM_SEED` and `FARM_SEAT` in
//! its environment (bots read them when they start), the job id in its labels and
//! name, and the bot's image, transport and limits. So nothing is started for "some
//! future match": the pool holds the bots of particular jobs that the worker already
//! holds, started by the same call that starts them when a match begins
//! ([`crate::JobPlayer::start`]), and owned by that job's task until its match plays
//! them or they are ended. A warm bot has never been asked anything and never serves
//! another match: it is as fresh as one started when the slot comes, and its start-up
//! never counts against its clock (the match's clock starts when it is played).
//!
//! # Bounds
//! - At most `ahead` matches are warm at once; by default one per slot
//!   ([`crate::WarmPool`]). The worker knows the next jobs because it takes that many
//!   jobs beyond its slots from RabbitMQ (the prefetch); a job that has not begun when
//!   the worker stops is requeued.
//! - Warm bots that wait longer than the idle time are ended, and their match starts
//!   them again when its slot comes: a long match ahead never pins idle containers.
//!
//! # No leaks
//! Warm bots are ended, and waited for, when they idle out and when their job is
//! requeued because the worker stops (drain or abort). A waiting task that is dropped
//! (its broker connection lost) ends them in the background. The worker also removes
//! every container carrying its label when it starts and when it stops, for whatever a
//! crash or a failed removal left.

use std::fmt::Display;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::metrics;
use crate::runner::StartedMatch;

/// A match's bots, started and not yet playing.
pub trait WarmBots: Send {
    /// How many run outside the worker (processes or containers).
    fn external(&self) -> usize;

    /// Ends them, waiting until they are gone.
    fn end(self) -> impl Future<Output = ()> + Send;
}

impl WarmBots for StartedMatch {
    fn external(&self) -> usize {
        self.external_bots()
    }

    fn end(self) -> impl Future<Output = ()> + Send {
        StartedMatch::end(self)
    }
}

/// The worker's slots, and room for matches whose bots start while they wait for one.
#[derive(Debug)]
pub struct Slots {
    playing: Arc<Semaphore>,
    ahead: Arc<Semaphore>,
    idle: Duration,
}

/// A job's turn to play.
#[derive(Debug)]
pub struct Turn<T, E> {
    /// Its slot, taken until this is dropped.
    pub slot: OwnedSemaphorePermit,
    /// Its bots, ready; or why they could not start.
    pub bots: Result<T, E>,
    /// Whether the bots were started ahead, while the job waited.
    pub warm: bool,
}

impl Slots {
    /// `slots` matches played at once; the bots of up to `ahead` matches started while
    /// they wait, for at most `idle` each.
    pub fn new(slots: u16, ahead: u16, idle: Duration) -> Self {
        Slots {
            playing: Arc::new(Semaphore::new(usize::from(slots))),
            ahead: Arc::new(Semaphore::new(usize::from(ahead))),
            idle,
        }
    }

    /// Waits for a slot for one job and returns it with the job's bots, started by
    /// `start`. When no slot is free and the pool has room, the bots are started at
    /// once and wait with the job; otherwise, or if that failed (the failure is met
    /// again and reported when the match starts them itself), they are started when
    /// the slot comes. `None` if `stop` completes first: the job is not to be played
    /// here, and its warm bots have been ended.
    pub async fn turn<T, E, F>(&self, start: impl Fn() -> F, stop: impl Future<Output = ()>) -> Option<Turn<T, E>>
    where
        T: WarmBots,
        E: Display,
        F: Future<Output = Result<T, E>>,
    {
        let slot = match Arc::clone(&self.playing).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                let (slot, warm) = self.wait(&start, stop).await?;
                if let Some(warm) = warm {
                    let bots = warm.into_bots();
                    record_ready(bots.external(), "hit", Instant::now());
                    return Some(Turn { slot, bots: Ok(bots), warm: true });
                }
                slot
            }
        };
        let since = Instant::now();
        let bots = start().await;
        if let Ok(bots) = &bots {
            record_ready(bots.external(), "miss", since);
        }
        Some(Turn { slot, bots, warm: false })
    }

    /// Waits for a slot, starting the bots ahead meanwhile if there is room for them.
    async fn wait<T, E, F>(
        &self,
        start: &impl Fn() -> F,
        stop: impl Future<Output = ()>,
    ) -> Option<(OwnedSemaphorePermit, Option<Waiting<T>>)>
    where
        T: WarmBots,
        E: Display,
        F: Future<Output = Result<T, E>>,
    {
        let mut stop = pin!(stop);
        // Not raced against `stop`: a start abandoned half-way could leave a container
        // created but not yet owned by anyone.
        let mut warm = match Arc::clone(&self.ahead).try_acquire_owned() {
            Ok(room) => match start().await {
                Ok(bots) => Some(Waiting::new(bots, room)),
                Err(error) => {
                    tracing::info!(%error, "starting a waiting match's bots failed; they start with the match");
                    None
                }
            },
            Err(_) => None,
        };
        let mut idle = pin!(tokio::time::sleep(self.idle));
        loop {
            tokio::select! {
                biased;
                () = &mut stop => {
                    if let Some(warm) = warm.take() {
                        warm.end("shutdown").await;
                    }
                    return None;
                }
                // The semaphore is never closed, so this always gives a slot.
                slot = Arc::clone(&self.playing).acquire_owned() => return Some((slot.ok()?, warm)),
                () = &mut idle, if warm.is_some() => {
                    if let Some(warm) = warm.take() {
                        warm.end("idle").await;
                    }
                }
            }
        }
    }
}

/// Counts a match with external bots as a warm pool `outcome`, with the time since
/// its slot came.
fn record_ready(external: usize, outcome: &str, since: Instant) {
    if external > 0 {
        metrics::WARM_POOL.with_label_values(&[outcome]).inc();
        metrics::BOTS_READY.observe(since.elapsed().as_secs_f64());
    }
}

/// Bots started ahead while they wait: counted in [`metrics::WARM_BOTS`] and holding
/// their room in the pool until taken or ended. Dropped, they end in the background
/// (each bot session ends itself when dropped).
struct Waiting<T> {
    bots: T,
    _counted: WarmCount,
    _room: OwnedSemaphorePermit,
}

impl<T: WarmBots> Waiting<T> {
    fn new(bots: T, room: OwnedSemaphorePermit) -> Self {
        let counted = WarmCount::add(bots.external());
        Waiting { bots, _counted: counted, _room: room }
    }

    fn into_bots(self) -> T {
        self.bots
    }

    /// Ends the bots unplayed, counting why once they are gone.
    async fn end(self, reason: &str) {
        let Waiting { bots, _counted, _room } = self;
        bots.end().await;
        metrics::WARM_DISCARDED.with_label_values(&[reason]).inc();
    }
}

/// Bots counted in [`metrics::WARM_BOTS`] for as long as this lives.
struct WarmCount(i64);

impl WarmCount {
    fn add(bots: usize) -> Self {
        let bots = i64::try_from(bots).unwrap_or(i64::MAX);
        metrics::WARM_BOTS.add(bots);
        WarmCount(bots)
    }
}

impl Drop for WarmCount {
    fn drop(&mut self) {
        metrics::WARM_BOTS.sub(self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::sync::{mpsc, oneshot};

    /// Fake bots: the launcher counts starts and ends, and reports each start.
    struct FakeBots {
        ended: Arc<AtomicUsize>,
        end_tx: mpsc::UnboundedSender<()>,
    }

    impl WarmBots for FakeBots {
        fn external(&self) -> usize {
            2
        }

        async fn end(self) {
            self.ended.fetch_add(1, Ordering::SeqCst);
            let _ = self.end_tx.send(());
        }
    }

    #[derive(Clone)]
    struct Launcher {
        started: Arc<AtomicUsize>,
        ended: Arc<AtomicUsize>,
        failures: Arc<AtomicUsize>,
        start_tx: mpsc::UnboundedSender<()>,
        end_tx: mpsc::UnboundedSender<()>,
    }

    /// A launcher whose first `failures` starts fail, and receivers of its start and
    /// end reports.
    fn launcher(failures: usize) -> (Launcher, mpsc::UnboundedReceiver<()>, mpsc::UnboundedReceiver<()>) {
        let (start_tx, starts) = mpsc::unbounded_channel();
        let (end_tx, ends) = mpsc::unbounded_channel();
        let launcher = Launcher {
            started: Arc::default(),
            ended: Arc::default(),
            failures: Arc::new(AtomicUsize::new(failures)),
            start_tx,
            end_tx,
        };
        (launcher, starts, ends)
    }

    impl Launcher {
        async fn start(&self) -> Result<FakeBots, String> {
            self.started.fetch_add(1, Ordering::SeqCst);
            let _ = self.start_tx.send(());
            if self.failures.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
                return Err("no such image".to_owned());
            }
            Ok(FakeBots { ended: Arc::clone(&self.ended), end_tx: self.end_tx.clone() })
        }

        fn counts(&self) -> (usize, usize) {
            (self.started.load(Ordering::SeqCst), self.ended.load(Ordering::SeqCst))
        }
    }

    type FakeTurn = Turn<FakeBots, String>;

    /// Takes a turn for one job in a task of its own, stopped when `stop` is sent.
    fn queue_job(
        slots: &Arc<Slots>,
        launcher: &Launcher,
    ) -> (tokio::task::JoinHandle<Option<FakeTurn>>, oneshot::Sender<()>) {
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (slots, launcher) = (Arc::clone(slots), launcher.clone());
        let task = tokio::spawn(async move {
            slots
                .turn(|| launcher.start(), async {
                    let _ = stop_rx.await;
                })
                .await
        });
        (task, stop_tx)
    }

    async fn first_turn(slots: &Slots, launcher: &Launcher) -> FakeTurn {
        slots.turn(|| launcher.start(), std::future::pending()).await.expect("a free slot")
    }

    #[tokio::test]
    async fn with_a_free_slot_the_bots_start_when_the_job_takes_it() {
        let slots = Slots::new(1, 1, Duration::from_secs(60));
        let (launcher, _, _) = launcher(0);
        let turn = first_turn(&slots, &launcher).await;
        assert!(!turn.warm && turn.bots.is_ok());
        assert_eq!(launcher.counts(), (1, 0));
    }

    #[tokio::test]
    async fn a_job_waiting_for_a_slot_has_its_bots_started_ahead_and_plays_them() {
        let slots = Arc::new(Slots::new(1, 1, Duration::from_secs(60)));
        let (launcher, mut starts, _) = launcher(0);
        let playing = first_turn(&slots, &launcher).await;
        starts.recv().await;
        let (waiting, _stop) = queue_job(&slots, &launcher);
        starts.recv().await.expect("started while the slot is busy");
        drop(playing);
        let turn = waiting.await.expect("task").expect("a turn");
        assert!(turn.warm, "the waiting job's bots were started ahead");
        assert!(turn.bots.is_ok());
        assert_eq!(launcher.counts(), (2, 0), "not started again, not ended");
    }

    #[tokio::test(start_paused = true)]
    async fn warm_bots_that_wait_past_the_idle_time_are_ended_and_start_again_with_the_match() {
        let slots = Arc::new(Slots::new(1, 1, Duration::from_secs(10)));
        let (launcher, _, mut ends) = launcher(0);
        let playing = first_turn(&slots, &launcher).await;
        let (waiting, _stop) = queue_job(&slots, &launcher);
        // The paused clock runs on to the idle time once every task waits.
        ends.recv().await.expect("idle warm bots are ended");
        assert_eq!(launcher.counts(), (2, 1));
        drop(playing);
        let turn = waiting.await.expect("task").expect("a turn");
        assert!(!turn.warm && turn.bots.is_ok());
        assert_eq!(launcher.counts(), (3, 1), "started again for the match");
    }

    #[tokio::test]
    async fn a_job_stopped_while_it_waits_gets_no_turn_and_its_warm_bots_are_ended() {
        let slots = Arc::new(Slots::new(1, 1, Duration::from_secs(60)));
        let (launcher, mut starts, _) = launcher(0);
        let _playing = first_turn(&slots, &launcher).await;
        starts.recv().await;
        let (waiting, stop) = queue_job(&slots, &launcher);
        starts.recv().await.expect("started ahead");
        stop.send(()).expect("the job waits");
        assert!(waiting.await.expect("task").is_none());
        assert_eq!(launcher.counts(), (2, 1), "ended before the turn gave up");
    }

    #[tokio::test]
    async fn no_more_matches_than_the_pool_holds_are_started_ahead() {
        let slots = Arc::new(Slots::new(1, 1, Duration::from_secs(60)));
        let (launcher, mut starts, _) = launcher(0);
        let _playing = first_turn(&slots, &launcher).await;
        starts.recv().await;
        let (_first, _first_stop) = queue_job(&slots, &launcher);
        starts.recv().await.expect("the first waiting job fills the pool");
        let (second, stop) = queue_job(&slots, &launcher);
        stop.send(()).expect("the job waits");
        assert!(second.await.expect("task").is_none());
        assert_eq!(launcher.counts(), (2, 0), "the second waiting job started nothing");

        let off = Arc::new(Slots::new(1, 0, Duration::from_secs(60)));
        let _playing = first_turn(&off, &launcher).await;
        let (waiting, stop) = queue_job(&off, &launcher);
        stop.send(()).expect("the job waits");
        assert!(waiting.await.expect("task").is_none());
        assert_eq!(launcher.counts(), (3, 0), "with the pool off nothing starts ahead");
    }

    #[tokio::test]
    async fn a_failed_start_ahead_is_tried_again_when_the_slot_comes() {
        let slots = Arc::new(Slots::new(1, 1, Duration::from_secs(60)));
        let (launcher, mut starts, _) = launcher(0);
        let playing = first_turn(&slots, &launcher).await;
        starts.recv().await;
        launcher.failures.store(1, Ordering::SeqCst);
        let (waiting, _stop) = queue_job(&slots, &launcher);
        starts.recv().await.expect("tried ahead");
        drop(playing);
        let turn = waiting.await.expect("task").expect("a turn");
        assert!(!turn.warm && turn.bots.is_ok());
        assert_eq!(launcher.counts(), (3, 0));
    }
}
