//! What a seat was sent at every step of a match, served within bounds: a stored
//! replay re-simulated as it streams from storage (one line and the match in memory,
//! never the whole replay), at most [`ObservationLimits::concurrent`] re-simulations
//! at once (the rest are told to come back: 429), each cut when its client has not
//! read it whole by [`ObservationLimits::deadline_secs`], and finished answers cached.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use farm_engine::Seat;
use farm_engine::replay::{ObservationError, Observations};
use farm_runtime::storage::StorageError;
use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::time::Instant;

use crate::metrics;
use farm_proto::limits;

/// Lines of an answer produced ahead of the client reading them.
const AHEAD: usize = 16;
/// How long an answer waits for its client to read on: one that stops reading gives
/// its re-simulation slot back after this, instead of holding it while connected.
const STALLED: Duration = Duration::from_secs(30);

/// How much re-simulation the API does for the observations route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ObservationLimits {
    /// Re-simulations at once (1 to 64); one more is answered 429.
    pub concurrent: usize,
    /// MiB of finished answers kept (0 to 4096; 0: none). One answer over a quarter of
    /// it is not kept.
    pub cache_mib: usize,
    /// Seconds a client has to read a re-simulated answer whole (1 to 600): a slow
    /// reader holds a slot this long at most, then its answer is cut short.
    pub deadline_secs: u64,
}

impl Default for ObservationLimits {
    fn default() -> Self {
        ObservationLimits {
            concurrent: limits::OBSERVATIONS_CONCURRENT.default,
            cache_mib: limits::OBSERVATIONS_CACHE_MIB.default,
            deadline_secs: limits::OBSERVATIONS_DEADLINE_SECS.default,
        }
    }
}

impl ObservationLimits {
    /// Whether the values are in their ranges; the error names the key.
    pub fn check(&self) -> Result<(), String> {
        limits::OBSERVATIONS_CONCURRENT.check(self.concurrent)?;
        limits::OBSERVATIONS_CACHE_MIB.check(self.cache_mib)?;
        limits::OBSERVATIONS_DEADLINE_SECS.check(self.deadline_secs)?;
        Ok(())
    }
}

/// Why there is no answer.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// Every re-simulation slot is taken.
    #[error("{0} observation requests are being answered already; try again shortly")]
    Busy(usize),
    /// The replay cannot be read, or the match has no such seat.
    #[error(transparent)]
    Replay(#[from] ObservationError),
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Reading the stored replay failed.
    #[error("reading the replay: {0}")]
    Read(std::io::Error),
    /// The re-simulation task died (a bug).
    #[error("the re-simulation stopped: {0}")]
    Task(String),
}

/// Why a re-simulated answer ended before its last line.
#[derive(Debug, thiserror::Error)]
enum Cut {
    /// The client went away.
    #[error("the client left")]
    Left,
    /// The client read nothing for this long.
    #[error("the client read nothing for {0:?}")]
    Stalled(Duration),
    /// The client had not read the answer whole by its deadline.
    #[error("the answer was not read whole within observations.deadline_secs = {} s", .0.as_secs())]
    Deadline(Duration),
    /// Reading the stored replay failed.
    #[error("reading the replay: {0}")]
    Read(std::io::Error),
    /// The replay does not re-simulate.
    #[error(transparent)]
    Replay(ObservationError),
    /// The re-simulation task died (a bug).
    #[error("the re-simulation stopped")]
    Stopped,
}

/// An answer: JSON Lines of [`farm_engine::replay::StepObservation`], whole (from the
/// cache) or streamed as the re-simulation goes.
pub enum Answer {
    /// Cached.
    Whole(Bytes),
    /// Being re-simulated.
    Streamed(Streamed),
}

/// An answer being re-simulated: its lines as they are made. One cut short ends with
/// an error naming why ([`Cut`]), which cuts the response short; past its deadline it
/// ends so at its next read, whatever was left unread.
pub struct Streamed {
    lines: mpsc::Receiver<Bytes>,
    /// How the re-simulation ended, sent once its slot is free.
    ended: oneshot::Receiver<Result<(), Cut>>,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// What the deadline was, for the error.
    allowed: Duration,
    over: bool,
}

impl futures_util::Stream for Streamed {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.over {
            return Poll::Ready(None);
        }
        let past_deadline = this.deadline.as_mut().poll(cx).is_ready();
        if past_deadline {
            // The re-simulation stops at its next line, and gives its slot back.
            this.lines.close();
        } else if let Some(line) = ready!(this.lines.poll_recv(cx)) {
            return Poll::Ready(Some(Ok(line)));
        }
        // The end is told once the slot is free: asked again at once, it is found free.
        let ended = ready!(Pin::new(&mut this.ended).poll(cx));
        this.over = true;
        let cut = match ended {
            _ if past_deadline => Some(Cut::Deadline(this.allowed)),
            Ok(Ok(())) => None,
            Ok(Err(cut)) => Some(cut),
            Err(_) => Some(Cut::Stopped),
        };
        Poll::Ready(cut.map(|cut| Err(std::io::Error::other(cut))))
    }
}

/// The shared re-simulation slots and cache.
#[derive(Clone)]
pub struct Observer {
    limits: ObservationLimits,
    slots: Arc<Semaphore>,
    cache: Arc<Mutex<Cache>>,
}

impl Observer {
    /// An observer within `limits`.
    pub fn new(limits: ObservationLimits) -> Self {
        Observer {
            limits,
            slots: Arc::new(Semaphore::new(limits.concurrent)),
            cache: Arc::new(Mutex::new(Cache::new(limits.cache_mib << 20))),
        }
    }

    /// What `seat` was sent at every step of the replay `replay_key`, which `open`
    /// streams (zstd-compressed, as workers store it).
    pub async fn observe<F>(&self, replay_key: &str, seat: Seat, open: F) -> Result<Answer, ObserveError>
    where
        F: Future<Output = Result<BoxStream<'static, Result<Bytes, StorageError>>, StorageError>>,
    {
        let key = format!("{replay_key}#{seat}");
        if let Some(body) = self.cache.lock().ok().and_then(|mut cache| cache.get(&key)) {
            metrics::OBSERVATIONS.with_label_values(&["cached"]).inc();
            return Ok(Answer::Whole(body));
        }
        let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() else {
            metrics::OBSERVATIONS.with_label_values(&["busy"]).inc();
            return Err(ObserveError::Busy(self.limits.concurrent));
        };
        let compressed = open.await?;
        let reader = tokio_util::io::SyncIoBridge::new(async_compression::tokio::bufread::ZstdDecoder::new(
            tokio_util::io::StreamReader::new(futures_util::TryStreamExt::map_err(compressed, std::io::Error::other)),
        ));
        let keep = Keep { cache: Arc::clone(&self.cache), key, most: (self.limits.cache_mib << 20) / 4 };
        let pace = Pace { ahead: AHEAD, stalled: STALLED, deadline: Duration::from_secs(self.limits.deadline_secs) };
        let (started, streamed) = spawn(reader, seat, slot, keep, pace);
        match started.await {
            Ok(Ok(())) => {
                metrics::OBSERVATIONS.with_label_values(&["resimulated"]).inc();
                Ok(Answer::Streamed(streamed))
            }
            Ok(Err(error)) => Err(error),
            Err(_) => Err(ObserveError::Task("it ended before reading the header".to_owned())),
        }
    }
}

/// How an answer is paced: lines made `ahead` of its client, how long the client may
/// leave the next unread (`stalled`), and by when it must have read them all.
#[derive(Debug, Clone, Copy)]
struct Pace {
    ahead: usize,
    stalled: Duration,
    deadline: Duration,
}

/// Re-simulates the replay `reader` gives for `seat` on the blocking pool (it is CPU
/// work, and the bridge blocks), holding `slot` until the answer ends. Returns whether
/// it started (the header read and the seat exists), and the answer.
fn spawn(
    reader: impl std::io::Read + Send + 'static,
    seat: Seat,
    slot: OwnedSemaphorePermit,
    keep: Keep,
    pace: Pace,
) -> (oneshot::Receiver<Result<(), ObserveError>>, Streamed) {
    let deadline = Instant::now() + pace.deadline;
    let (started_tx, started) = oneshot::channel();
    let (ended_tx, ended) = oneshot::channel();
    let (sender, lines) = mpsc::channel(pace.ahead);
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let lines = Lines { sender, pace, deadline, runtime };
        let outcome = resimulate(reader, seat, started_tx, &lines, keep);
        // Free before the answer's end is told ([`Streamed`]).
        drop(slot);
        let _ = ended_tx.send(outcome);
    });
    let deadline = Box::pin(tokio::time::sleep_until(deadline));
    (started, Streamed { lines, ended, deadline, allowed: pace.deadline, over: false })
}

/// Where an answer's lines go: to its client, who has [`Pace::stalled`] to take each
/// and until `deadline` for them all.
struct Lines {
    sender: mpsc::Sender<Bytes>,
    pace: Pace,
    deadline: Instant,
    runtime: tokio::runtime::Handle,
}

impl Lines {
    /// Sends `line`, waiting for room at most [`Pace::stalled`] and never past the
    /// deadline; why not when the client has left, stopped reading or run out of time.
    fn send(&self, line: Bytes) -> Result<(), Cut> {
        let now = Instant::now();
        if now >= self.deadline {
            return Err(Cut::Deadline(self.pace.deadline));
        }
        let until = self.deadline.min(now + self.pace.stalled);
        match self.runtime.block_on(tokio::time::timeout_at(until, self.sender.send(line))) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(Cut::Left),
            Err(_) if until == self.deadline => Err(Cut::Deadline(self.pace.deadline)),
            Err(_) => Err(Cut::Stalled(self.pace.stalled)),
        }
    }
}

/// Where a finished answer goes, if it is small enough.
struct Keep {
    cache: Arc<Mutex<Cache>>,
    key: String,
    most: usize,
}

/// Runs on a blocking thread. Tells `started` whether the header read and the seat
/// exists, then sends one JSON line per step; returns why the answer was cut short, if
/// it was. An answer that never started is cut as if its client had left: `started`
/// told why, and nobody reads on.
fn resimulate(
    reader: impl std::io::Read,
    seat: Seat,
    started: oneshot::Sender<Result<(), ObserveError>>,
    lines: &Lines,
    keep: Keep,
) -> Result<(), Cut> {
    let mut source = ReadLines { lines: std::io::BufReader::new(reader).lines(), error: None };
    let steps = match Observations::start(&mut source, seat) {
        Ok(steps) => steps,
        Err(error) => {
            let _ = started.send(Err(source.error.take().map_or(ObserveError::Replay(error), ObserveError::Read)));
            return Err(Cut::Left);
        }
    };
    if started.send(Ok(())).is_err() {
        return Err(Cut::Left);
    }
    let mut whole = Some(Vec::new());
    let mut failed = None;
    for step in steps {
        let step = match step {
            Ok(step) => step,
            Err(error) => {
                failed = Some(error);
                break;
            }
        };
        let mut line = serde_json::to_vec(&step).unwrap_or_default();
        line.push(b'\n');
        if let Some(body) = whole.as_mut() {
            body.extend_from_slice(&line);
            if body.len() > keep.most {
                whole = None;
            }
        }
        lines.send(Bytes::from(line))?;
    }
    // A read error ends the lines early, which re-simulates as a replay without its
    // footer: the read error is the reason, not that.
    match (source.error, failed) {
        (Some(error), _) => return Err(Cut::Read(error)),
        (None, Some(error)) => {
            tracing::error!(%error, key = %keep.key, "observations cut short: the replay fails to re-simulate");
            return Err(Cut::Replay(error));
        }
        (None, None) => {}
    }
    if let (Some(body), Ok(mut cache)) = (whole, keep.cache.lock()) {
        cache.insert(keep.key, Bytes::from(body));
    }
    Ok(())
}

/// The lines of a reader; the first read error ends them and is kept, so that the
/// replay is not taken for one cut short.
struct ReadLines<R> {
    lines: std::io::Lines<R>,
    error: Option<std::io::Error>,
}

impl<R: BufRead> Iterator for ReadLines<R> {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        match self.lines.next()? {
            Ok(line) => Some(line),
            Err(error) => {
                self.error = Some(error);
                None
            }
        }
    }
}

/// Finished answers by key, within a byte budget; the least recently used go first.
struct Cache {
    budget: usize,
    used: usize,
    clock: u64,
    /// Each answer and when it was last used.
    entries: HashMap<String, (Bytes, u64)>,
    /// The keys by when they were last used, oldest first: eviction takes the first,
    /// however many small answers the budget holds.
    by_use: BTreeMap<u64, String>,
}

impl Cache {
    fn new(budget: usize) -> Self {
        Cache { budget, used: 0, clock: 0, entries: HashMap::new(), by_use: BTreeMap::new() }
    }

    fn get(&mut self, key: &str) -> Option<Bytes> {
        let (body, used) = self.entries.get_mut(key)?;
        self.clock += 1;
        let key = self.by_use.remove(used).unwrap_or_else(|| key.to_owned());
        *used = self.clock;
        self.by_use.insert(self.clock, key);
        Some(body.clone())
    }

    fn insert(&mut self, key: String, body: Bytes) {
        if body.len() > self.budget {
            return;
        }
        self.clock += 1;
        self.used += body.len();
        self.by_use.insert(self.clock, key.clone());
        if let Some((old, used)) = self.entries.insert(key, (body, self.clock)) {
            self.used -= old.len();
            self.by_use.remove(&used);
        }
        while self.used > self.budget {
            let Some((_, oldest)) = self.by_use.pop_first() else { break };
            if let Some((body, _)) = self.entries.remove(&oldest) {
                self.used -= body.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_within_its_budget_and_drops_the_least_recently_used() {
        let mut cache = Cache::new(10);
        cache.insert("a".into(), Bytes::from_static(b"aaaa"));
        cache.insert("b".into(), Bytes::from_static(b"bbbb"));
        assert!(cache.get("a").is_some(), "a is now the most recently used");
        cache.insert("c".into(), Bytes::from_static(b"cccc"));
        assert!(cache.get("b").is_none(), "b went first");
        assert_eq!(cache.get("a").as_deref(), Some(&b"aaaa"[..]));
        assert_eq!(cache.used, 8);
        cache.insert("huge".into(), Bytes::from(vec![0; 11]));
        assert!(cache.get("huge").is_none(), "an answer over the whole budget is not kept");
        cache.insert("a".into(), Bytes::from_static(b"a"));
        assert_eq!(cache.used, 5, "a replaced entry gives its bytes back");
        assert_eq!((cache.entries.len(), cache.by_use.len()), (2, 2), "one use order entry per answer");
    }

    /// A reader that gives `bytes`, then fails.
    struct FailsAfter(std::io::Cursor<Vec<u8>>);

    impl std::io::Read for FailsAfter {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.0.read(buf)? {
                0 => Err(std::io::Error::other("the store went away")),
                read => Ok(read),
            }
        }
    }

    /// A short Botwars replay, without its footer when `footer` is false.
    fn botwars_replay(footer: bool) -> Vec<u8> {
        use farm_engine::{BotReply, GameKind, Match, MatchSetup};
        let rules = serde_json::json!({ "maxTurns": 40, "energyEvery": 0 });
        let players = vec!["a".to_owned(), "b".to_owned()];
        let mut game =
            Match::new(MatchSetup::new(GameKind::Botwars, &rules, None, 1, players).expect("setup")).expect("match");
        let mut text = game.header_line() + "\n";
        while !game.is_over() {
            let replies = game.to_act().into_iter().map(|seat| (seat, BotReply::Line("[]".into()))).collect();
            text += game.submit(replies).expect("step");
            text += "\n";
        }
        if footer {
            text += &(game.footer_line() + "\n");
        }
        text.into_bytes()
    }

    /// Starts answering from `reader` at `pace` with a slot of its own; returns the
    /// cache, the answer and the slot's semaphore.
    async fn answer(
        reader: impl std::io::Read + Send + 'static,
        pace: Pace,
    ) -> (Arc<Mutex<Cache>>, Streamed, Arc<Semaphore>) {
        let cache = Arc::new(Mutex::new(Cache::new(1 << 20)));
        let keep = Keep { cache: Arc::clone(&cache), key: "k#0".into(), most: 1 << 20 };
        let slots = Arc::new(Semaphore::new(1));
        let slot = Arc::clone(&slots).try_acquire_owned().expect("a slot");
        let (started, streamed) = spawn(reader, 0, slot, keep, pace);
        assert!(matches!(started.await, Ok(Ok(()))));
        (cache, streamed, slots)
    }

    /// Waits until the answer gave its slot back; were it held for good, the timeout
    /// makes that a failure.
    async fn slot_back(slots: &Semaphore) {
        let freed = tokio::time::timeout(Duration::from_secs(60), slots.acquire()).await;
        assert!(freed.is_ok_and(|permit| permit.is_ok()), "the slot is given back");
    }

    const PACE: Pace =
        Pace { ahead: 64, stalled: STALLED, deadline: Duration::from_secs(limits::OBSERVATIONS_DEADLINE_SECS.default) };

    #[tokio::test(flavor = "multi_thread")]
    async fn a_replay_that_cannot_be_read_to_its_end_says_so_and_is_not_cached() {
        use futures_util::StreamExt;
        // The footer never comes: the store fails where it would be.
        let reader = FailsAfter(std::io::Cursor::new(botwars_replay(false)));
        let (cache, streamed, _) = answer(reader, PACE).await;
        let answered: Vec<_> = streamed.collect().await;
        let (last, steps) = answered.split_last().expect("lines");
        assert!(steps.iter().all(Result::is_ok) && !steps.is_empty(), "the steps read are given");
        let error = last.as_ref().expect_err("then the failure");
        assert!(error.to_string().contains("reading the replay: the store went away"), "{error}");
        assert!(cache.lock().expect("lock").get("k#0").is_none(), "a cut answer is not cached");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_client_that_stops_reading_gives_its_slot_back() {
        use futures_util::StreamExt;
        // Room for two lines, and a client that reads none: the answer gives up.
        let pace = Pace { ahead: 2, stalled: Duration::from_millis(50), ..PACE };
        let (cache, streamed, slots) = answer(std::io::Cursor::new(botwars_replay(true)), pace).await;
        slot_back(&slots).await;
        let answered: Vec<_> = streamed.collect().await;
        assert_eq!(answered.len(), 3, "what fitted was sent, nothing more, then why");
        let error = answered[2].as_ref().expect_err("cut");
        assert!(error.to_string().contains("the client read nothing for 50ms"), "{error}");
        assert!(cache.lock().expect("lock").get("k#0").is_none(), "an answer not given whole is not cached");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn an_answer_not_read_by_its_deadline_is_cut_and_gives_its_slot_back() {
        use futures_util::StreamExt;
        // The client reads nothing, but never long enough to be taken for stalled.
        let pace = Pace { ahead: 2, stalled: STALLED, deadline: Duration::from_millis(200) };
        let (cache, mut streamed, slots) = answer(std::io::Cursor::new(botwars_replay(true)), pace).await;
        slot_back(&slots).await;
        let error = streamed.next().await.expect("an item").expect_err("past its deadline, nothing but why");
        assert!(error.to_string().contains("observations.deadline_secs"), "{error}");
        assert!(streamed.next().await.is_none(), "then the end");
        assert!(cache.lock().expect("lock").get("k#0").is_none(), "an answer not given whole is not cached");
    }

    #[test]
    fn limits_out_of_range_name_their_key() {
        assert!(ObservationLimits::default().check().is_ok());
        let none = ObservationLimits { concurrent: 0, ..Default::default() };
        assert!(none.check().expect_err("no slots").contains("observations.concurrent"));
        let huge = ObservationLimits { cache_mib: 5000, ..Default::default() };
        assert!(huge.check().expect_err("too big").contains("observations.cache_mib"));
        for deadline_secs in [0, limits::OBSERVATIONS_DEADLINE_SECS.range.max.expect("a ceiling") + 1] {
            let wrong = ObservationLimits { deadline_secs, ..Default::default() };
            assert!(wrong.check().expect_err("out of range").contains("observations.deadline_secs must be 1 to 600"));
        }
    }
}
