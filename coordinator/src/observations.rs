//! What a seat was sent at every step of a match, served within bounds: a stored
//! replay re-simulated as it streams from storage (one line and the match in memory,
//! never the whole replay), at most [`ObservationLimits::concurrent`] re-simulations
//! at once (the rest are told to come back: 429), and finished answers cached.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use farm_engine::Seat;
use farm_engine::replay::{ObservationError, Observations};
use farm_runtime::storage::StorageError;
use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use crate::metrics;

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
}

impl Default for ObservationLimits {
    fn default() -> Self {
        ObservationLimits { concurrent: 2, cache_mib: 64 }
    }
}

impl ObservationLimits {
    /// Whether the values are in their ranges; the error names the key.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=64).contains(&self.concurrent) {
            return Err(format!("observations.concurrent must be 1 to 64, not {}", self.concurrent));
        }
        if self.cache_mib > 4096 {
            return Err(format!("observations.cache_mib must be 0 to 4096, not {}", self.cache_mib));
        }
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

/// An answer: JSON Lines of [`farm_engine::replay::StepObservation`], whole (from the
/// cache) or streamed as the re-simulation goes. A stream that fails midway ends
/// with an error, which cuts the response short.
pub enum Answer {
    /// Cached.
    Whole(Bytes),
    /// Being re-simulated.
    Streamed(mpsc::Receiver<Result<Bytes, std::io::Error>>),
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
        let (started_tx, started) = oneshot::channel();
        let (lines_tx, lines) = mpsc::channel(AHEAD);
        let keep = Keep { cache: Arc::clone(&self.cache), key, most: (self.limits.cache_mib << 20) / 4 };
        // Re-simulating is CPU work and the bridge blocks: a thread of the blocking pool.
        tokio::task::spawn_blocking(move || {
            let lines = Lines { sender: lines_tx, stalled: STALLED, runtime: tokio::runtime::Handle::current() };
            resimulate(reader, seat, slot, started_tx, lines, keep);
        });
        match started.await {
            Ok(Ok(())) => {
                metrics::OBSERVATIONS.with_label_values(&["resimulated"]).inc();
                Ok(Answer::Streamed(lines))
            }
            Ok(Err(error)) => Err(error),
            Err(_) => Err(ObserveError::Task("it ended before reading the header".to_owned())),
        }
    }
}

/// Where an answer's lines go: to its client, who has [`Lines::stalled`] to take each.
struct Lines {
    sender: mpsc::Sender<Result<Bytes, std::io::Error>>,
    stalled: Duration,
    runtime: tokio::runtime::Handle,
}

impl Lines {
    /// Sends `line`, waiting for room at most `stalled`; `false` when the client has
    /// left or stopped reading.
    fn send(&self, line: Result<Bytes, std::io::Error>) -> bool {
        self.runtime.block_on(tokio::time::timeout(self.stalled, self.sender.send(line))).is_ok_and(|sent| sent.is_ok())
    }
}

/// Where a finished answer goes, if it is small enough.
struct Keep {
    cache: Arc<Mutex<Cache>>,
    key: String,
    most: usize,
}

/// Runs on a blocking thread, holding `slot` until the answer is sent or its client
/// gone or stalled. Tells `started` whether the header read and the seat exists, then sends one
/// JSON line per step.
fn resimulate(
    reader: impl std::io::Read,
    seat: Seat,
    slot: OwnedSemaphorePermit,
    started: oneshot::Sender<Result<(), ObserveError>>,
    lines: Lines,
    keep: Keep,
) {
    let _slot = slot;
    let mut source = ReadLines { lines: std::io::BufReader::new(reader).lines(), error: None };
    let steps = match Observations::start(&mut source, seat) {
        Ok(steps) => steps,
        Err(error) => {
            let _ = started.send(Err(source.error.take().map_or(ObserveError::Replay(error), ObserveError::Read)));
            return;
        }
    };
    if started.send(Ok(())).is_err() {
        return;
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
        if !lines.send(Ok(Bytes::from(line))) {
            return; // The client left, or stopped reading.
        }
    }
    // A read error ends the lines early, which re-simulates as a replay without its
    // footer: the read error is the reason, not that.
    let failed = match (source.error, failed) {
        (Some(error), _) => Some(std::io::Error::other(format!("reading the replay: {error}"))),
        (None, Some(error)) => {
            tracing::error!(%error, key = %keep.key, "observations cut short: the replay fails to re-simulate");
            Some(std::io::Error::other(error.to_string()))
        }
        (None, None) => None,
    };
    if let Some(error) = failed {
        lines.send(Err(error));
        return;
    }
    if let (Some(body), Ok(mut cache)) = (whole, keep.cache.lock()) {
        cache.insert(keep.key, Bytes::from(body));
    }
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

    /// Runs [`resimulate`] on the blocking pool with `capacity` lines ahead and
    /// `stalled`; returns the cache, the receiver of the lines and whether the slot
    /// was given back once it ended.
    async fn answer(
        reader: impl std::io::Read + Send + 'static,
        capacity: usize,
        stalled: Duration,
    ) -> (Arc<Mutex<Cache>>, mpsc::Receiver<Result<Bytes, std::io::Error>>, bool) {
        let cache = Arc::new(Mutex::new(Cache::new(1 << 20)));
        let keep = Keep { cache: Arc::clone(&cache), key: "k#0".into(), most: 1 << 20 };
        let slots = Arc::new(Semaphore::new(1));
        let slot = Arc::clone(&slots).try_acquire_owned().expect("a slot");
        let (started_tx, started) = oneshot::channel();
        let (sender, receiver) = mpsc::channel(capacity);
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            resimulate(reader, 0, slot, started_tx, Lines { sender, stalled, runtime }, keep);
        })
        .await
        .expect("join");
        assert!(matches!(started.await, Ok(Ok(()))));
        (cache, receiver, slots.available_permits() == 1)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_replay_that_cannot_be_read_to_its_end_says_so_and_is_not_cached() {
        // The footer never comes: the store fails where it would be.
        let reader = FailsAfter(std::io::Cursor::new(botwars_replay(false)));
        let (cache, mut lines, _) = answer(reader, 64, STALLED).await;
        let mut answered = Vec::new();
        while let Some(line) = lines.recv().await {
            answered.push(line);
        }
        let (last, steps) = answered.split_last().expect("lines");
        assert!(steps.iter().all(Result::is_ok) && !steps.is_empty(), "the steps read are given");
        let error = last.as_ref().expect_err("then the failure");
        assert!(error.to_string().contains("reading the replay: the store went away"), "{error}");
        assert!(cache.lock().expect("lock").get("k#0").is_none(), "a cut answer is not cached");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_client_that_stops_reading_gives_its_slot_back() {
        let replay = botwars_replay(true);
        // Room for two lines, and a client that reads none: the answer gives up.
        // Were the wait unbounded, the answer would hang here: the timeout makes it a failure.
        let answering = answer(std::io::Cursor::new(replay), 2, Duration::from_millis(50));
        let (cache, lines, slot_back) =
            tokio::time::timeout(Duration::from_secs(60), answering).await.expect("the answer gave up");
        assert!(slot_back, "the slot is free again");
        assert_eq!(lines.len(), 2, "what fitted was sent, nothing more");
        assert!(cache.lock().expect("lock").get("k#0").is_none(), "an answer not given whole is not cached");
    }

    #[test]
    fn limits_out_of_range_name_their_key() {
        assert!(ObservationLimits::default().check().is_ok());
        let none = ObservationLimits { concurrent: 0, ..Default::default() };
        assert!(none.check().expect_err("no slots").contains("observations.concurrent"));
        let huge = ObservationLimits { cache_mib: 5000, ..Default::default() };
        assert!(huge.check().expect_err("too big").contains("observations.cache_mib"));
    }
}
