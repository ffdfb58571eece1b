//! The warm pool: a job that arrives while every slot is busy has its bots' sandboxes
//! prepared at once (for a container bot, a container of its image and limits whose
//! supervisor waits, see [`crate::bots`]), so that when a slot frees its match starts
//! its bots without waiting for Docker. Container start-up is then hidden whenever jobs
//! are queued.
//!
//! # No bot runs before its match
//! What is prepared is the same for every match of an image: no seed, no seat, no
//! process of the bot. The bots themselves start when the job's slot comes
//! ([`crate::JobPlayer::start`]), and the match's clock starts right after: a bot can
//! compute nothing ahead of its match, and nothing it could leave in a container
//! survives the reset between matches.
//!
//! # Bounds
//! - At most `ahead` waiting matches are prepared for at once; by default one per slot
//!   ([`crate::WarmPool`]). The worker knows the next jobs because it takes that many
//!   jobs beyond its slots from RabbitMQ (the prefetch); a job that has not begun when
//!   the worker stops is requeued.
//! - A waiting match holds its room for at most the idle time; the prepared containers
//!   themselves are the sandbox's, bounded and expired there
//!   ([`crate::bots::DockerSettings`]).

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::metrics;
use crate::runner::StartedMatch;

/// A match's bots, started for it.
pub trait MatchBots {
    /// How many run outside the worker (processes or containers).
    fn external(&self) -> usize;
}

impl MatchBots for StartedMatch {
    fn external(&self) -> usize {
        self.external_bots()
    }
}

/// The worker's slots, and room for matches prepared for while they wait for one.
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
    /// Its bots, started now; or why they could not start.
    pub bots: Result<T, E>,
    /// Whether its sandboxes were prepared ahead, while the job waited.
    pub warm: bool,
}

impl Slots {
    /// `slots` matches played at once; up to `ahead` waiting matches prepared for, each
    /// holding its room for at most `idle`.
    pub fn new(slots: u16, ahead: u16, idle: Duration) -> Self {
        Slots {
            playing: Arc::new(Semaphore::new(usize::from(slots))),
            ahead: Arc::new(Semaphore::new(usize::from(ahead))),
            idle,
        }
    }

    /// Waits for a slot for work that is not a match (a build): held until the permit
    /// is dropped, so that the worker runs no more than its slots at once.
    pub async fn hold(&self) -> OwnedSemaphorePermit {
        Arc::clone(&self.playing).acquire_owned().await.expect("the slots' semaphore is never closed")
    }

    /// Waits for a slot for one job and returns it with the job's bots, started by
    /// `start` once the slot is taken. When no slot is free and the pool has room,
    /// `prepare` runs at once (it prepares the job's sandboxes and returns how many of
    /// its bots are external). `None` if `stop` completes first: the job is not to be
    /// played here.
    pub async fn turn<T, E, F>(
        &self,
        prepare: impl FnOnce() -> usize,
        start: impl FnOnce() -> F,
        stop: impl Future<Output = ()>,
    ) -> Option<Turn<T, E>>
    where
        T: MatchBots,
        F: Future<Output = Result<T, E>>,
    {
        let (slot, warm) = match Arc::clone(&self.playing).try_acquire_owned() {
            Ok(slot) => (slot, false),
            Err(_) => self.wait(prepare, stop).await?,
        };
        let since = Instant::now();
        let bots = start().await;
        if let Ok(bots) = &bots
            && bots.external() > 0
        {
            metrics::WARM_POOL.with_label_values(&[if warm { "hit" } else { "miss" }]).inc();
            metrics::BOTS_READY.observe(since.elapsed().as_secs_f64());
        }
        Some(Turn { slot, bots, warm })
    }

    /// Waits for a slot, preparing the job's sandboxes meanwhile if there is room.
    /// Returns the slot and whether the job was prepared for (and still counted so).
    async fn wait(
        &self,
        prepare: impl FnOnce() -> usize,
        stop: impl Future<Output = ()>,
    ) -> Option<(OwnedSemaphorePermit, bool)> {
        let mut stop = pin!(stop);
        let mut warm = match Arc::clone(&self.ahead).try_acquire_owned() {
            Ok(room) => match prepare() {
                0 => None,
                bots => Some((WarmCount::add(bots), room)),
            },
            Err(_) => None,
        };
        let mut idle = pin!(tokio::time::sleep(self.idle));
        loop {
            tokio::select! {
                biased;
                () = &mut stop => {
                    if warm.take().is_some() {
                        metrics::WARM_DISCARDED.with_label_values(&["shutdown"]).inc();
                    }
                    return None;
                }
                // The semaphore is never closed, so this always gives a slot.
                slot = Arc::clone(&self.playing).acquire_owned() => return Some((slot.ok()?, warm.is_some())),
                () = &mut idle, if warm.is_some() => {
                    warm = None;
                    metrics::WARM_DISCARDED.with_label_values(&["idle"]).inc();
                }
            }
        }
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

    /// Fake bots: two external ones.
    struct FakeBots;

    impl MatchBots for FakeBots {
        fn external(&self) -> usize {
            2
        }
    }

    /// Counts preparations and starts, and reports each preparation.
    #[derive(Clone)]
    struct Launcher {
        prepared: Arc<AtomicUsize>,
        started: Arc<AtomicUsize>,
        prepare_tx: mpsc::UnboundedSender<()>,
    }

    fn launcher() -> (Launcher, mpsc::UnboundedReceiver<()>) {
        let (prepare_tx, prepares) = mpsc::unbounded_channel();
        (Launcher { prepared: Arc::default(), started: Arc::default(), prepare_tx }, prepares)
    }

    impl Launcher {
        fn prepare(&self) -> usize {
            self.prepared.fetch_add(1, Ordering::SeqCst);
            let _ = self.prepare_tx.send(());
            2
        }

        async fn start(&self) -> Result<FakeBots, String> {
            self.started.fetch_add(1, Ordering::SeqCst);
            Ok(FakeBots)
        }

        fn counts(&self) -> (usize, usize) {
            (self.prepared.load(Ordering::SeqCst), self.started.load(Ordering::SeqCst))
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
                .turn(|| launcher.prepare(), || launcher.start(), async {
                    let _ = stop_rx.await;
                })
                .await
        });
        (task, stop_tx)
    }

    async fn first_turn(slots: &Slots, launcher: &Launcher) -> FakeTurn {
        slots.turn(|| launcher.prepare(), || launcher.start(), std::future::pending()).await.expect("a free slot")
    }

    #[tokio::test]
    async fn with_a_free_slot_the_bots_start_at_once_and_nothing_is_prepared() {
        let slots = Slots::new(1, 1, Duration::from_secs(60));
        let (launcher, _) = launcher();
        let turn = first_turn(&slots, &launcher).await;
        assert!(!turn.warm && turn.bots.is_ok());
        assert_eq!(launcher.counts(), (0, 1));
    }

    #[tokio::test]
    async fn a_job_waiting_for_a_slot_is_prepared_for_and_its_bots_start_only_with_its_turn() {
        let slots = Arc::new(Slots::new(1, 1, Duration::from_secs(60)));
        let (launcher, mut prepares) = launcher();
        let playing = first_turn(&slots, &launcher).await;
        let (waiting, _stop) = queue_job(&slots, &launcher);
        prepares.recv().await.expect("prepared while the slot is busy");
        assert_eq!(launcher.counts(), (1, 1), "prepared, and its bots not started");
        drop(playing);
        let turn = waiting.await.expect("task").expect("a turn");
        assert!(turn.warm, "counted as prepared ahead");
        assert_eq!(launcher.counts(), (1, 2), "its bots started when the slot came");
    }

    #[tokio::test]
    async fn a_build_holds_a_slot_as_a_match_does() {
        let slots = Arc::new(Slots::new(1, 0, Duration::from_secs(60)));
        let (launcher, _) = launcher();
        let build = slots.hold().await;
        let (waiting, _stop) = queue_job(&slots, &launcher);
        // On this one-thread runtime the job's task runs until it waits for the slot.
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the match took the slot the build holds");
        assert_eq!(launcher.counts(), (0, 0), "no bot started while the build holds the slot");
        drop(build);
        let turn = waiting.await.expect("task").expect("the slot, once the build is done");
        let build = tokio::spawn({
            let slots = Arc::clone(&slots);
            async move { slots.hold().await }
        });
        tokio::task::yield_now().await;
        assert!(!build.is_finished(), "the build took the slot the match holds");
        drop(turn);
        let _slot = build.await.expect("the build's slot, once the match is done");
    }

    #[tokio::test(start_paused = true)]
    async fn a_match_waiting_past_the_idle_time_gives_up_its_room() {
        let slots = Arc::new(Slots::new(1, 1, Duration::from_secs(10)));
        let (launcher, mut prepares) = launcher();
        let playing = first_turn(&slots, &launcher).await;
        let (first, _first_stop) = queue_job(&slots, &launcher);
        prepares.recv().await.expect("the first waiting job is prepared for");
        // The paused clock runs on past the idle time once every task waits.
        tokio::time::sleep(Duration::from_secs(11)).await;
        let (second, _second_stop) = queue_job(&slots, &launcher);
        prepares.recv().await.expect("the room went to the next waiting job");
        drop(playing);
        let turn = first.await.expect("task").expect("a turn");
        assert!(!turn.warm, "no longer counted as prepared");
        drop(turn);
        assert!(second.await.expect("task").expect("a turn").warm);
    }

    #[tokio::test]
    async fn a_job_stopped_while_it_waits_gets_no_turn_and_starts_nothing() {
        let slots = Arc::new(Slots::new(1, 1, Duration::from_secs(60)));
        let (launcher, mut prepares) = launcher();
        let _playing = first_turn(&slots, &launcher).await;
        let (waiting, stop) = queue_job(&slots, &launcher);
        prepares.recv().await.expect("prepared");
        stop.send(()).expect("the job waits");
        assert!(waiting.await.expect("task").is_none());
        assert_eq!(launcher.counts(), (1, 1), "its bots never started");
    }

    #[tokio::test]
    async fn no_more_matches_than_the_pool_holds_are_prepared_for() {
        let slots = Arc::new(Slots::new(1, 1, Duration::from_secs(60)));
        let (launcher, mut prepares) = launcher();
        let _playing = first_turn(&slots, &launcher).await;
        let (_first, _first_stop) = queue_job(&slots, &launcher);
        prepares.recv().await.expect("the first waiting job fills the pool");
        let (second, stop) = queue_job(&slots, &launcher);
        stop.send(()).expect("the job waits");
        assert!(second.await.expect("task").is_none());
        assert_eq!(launcher.counts(), (1, 1), "the second waiting job prepared nothing");

        let off = Arc::new(Slots::new(1, 0, Duration::from_secs(60)));
        let _playing = first_turn(&off, &launcher).await;
        let (waiting, stop) = queue_job(&off, &launcher);
        stop.send(()).expect("the job waits");
        assert!(waiting.await.expect("task").is_none());
        assert_eq!(launcher.counts(), (1, 2), "with the pool off nothing is prepared");
    }
}
