//! Matches shown to browsers as they are played: `GET /api/matches/{id}/live`, a
//! stream of Server-Sent Events, one replay line per event (its `id` the line's
//! number, from 0, the header).
//!
//! A match gets a [`Stream`] when its first viewer comes and loses it when its last
//! leaves. While it has one, the coordinator watches it: its worker relays the match's
//! lines (from the first, for the viewers who came late) until the watch lapses
//! ([`farm_proto::WATCH_LEASE_SECS`]; renewed by [`keep_watching`]). The stream keeps
//! the header and the newest lines within [`LiveSettings::buffer_mib`]; each viewer
//! reads it at its own pace from a cursor, so a viewer that reads nothing holds at most
//! one batch of shared lines (about 256 KiB), and one that falls behind the buffer skips
//! what it let go (told, and counted). A stream ends with its match's end, or once the
//! ledger has the match's answer and its lines stopped. Every limit answers 429 naming
//! its key.
//!
//! The lines come from the broker ([`relay_from_broker`], which checks who sent them
//! first) or, in `farm-coordinator run`, from the in-process workers'
//! board directly ([`InProcess`]).

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use farm_proto::{WATCH_LEASE_SECS, WATCH_RENEW_SECS, WatchedMatch, limits};
use farm_runtime::queue::BrokerError;
use farm_worker::live::{FrameOutlet, LiveBoard, LiveLines};
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::ledger::{JobState, Ledger};
use crate::metrics;

mod broker;

pub use broker::relay_from_broker;

/// Lines a viewer is sent at a time before the stream is read again, and about the
/// most bytes (a longer line goes alone): what a viewer that stops reading holds.
const BATCH_LINES: usize = 64;
const BATCH_BYTES: usize = 256 << 10;
/// How long a match's stream stays open after the ledger has its answer and no line
/// came: the relay's last lines may still be on their way.
const QUIET_AFTER_ANSWER: Duration = Duration::from_secs(2);
/// What a kept line costs beside its text (its entry and its allocation): the buffer
/// counts it, so that it bounds how many lines are kept, however short they are.
const LINE_OVERHEAD: usize = 64;
/// A relay silent this long is gone: another worker's later attempt may take over.
const SILENT_RELAY: Duration = Duration::from_secs(WATCH_LEASE_SECS);

/// How many may watch, and how much is kept for them (`[live]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LiveSettings {
    /// Viewers of one match at once (1 to 10,000).
    pub viewers_per_match: usize,
    /// Viewers of all matches at once (1 to 100,000).
    pub viewers: usize,
    /// Matches watched at once (1 to 1000).
    pub streams: usize,
    /// MiB of one watched match's lines kept for its viewers (1 to 1024): the header
    /// and the newest frames.
    pub buffer_mib: usize,
}

impl Default for LiveSettings {
    fn default() -> Self {
        LiveSettings {
            viewers_per_match: limits::LIVE_VIEWERS_PER_MATCH.default,
            viewers: limits::LIVE_VIEWERS.default,
            streams: limits::LIVE_STREAMS.default,
            buffer_mib: limits::LIVE_BUFFER_MIB.default,
        }
    }
}

impl LiveSettings {
    /// Whether the values are in their ranges; the error names the key.
    pub fn check(&self) -> Result<(), String> {
        limits::LIVE_VIEWERS_PER_MATCH.check(self.viewers_per_match)?;
        limits::LIVE_VIEWERS.check(self.viewers)?;
        limits::LIVE_STREAMS.check(self.streams)?;
        limits::LIVE_BUFFER_MIB.check(self.buffer_mib)?;
        Ok(())
    }
}

/// Why a viewer is turned away: which limit is met.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {key} is {limit}; try again later")]
pub struct Full {
    /// The key of the limit met.
    pub key: &'static str,
    /// Its value.
    pub limit: usize,
    what: &'static str,
}

/// What became of a line offered to a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    /// Kept for the viewers.
    Kept,
    /// Nobody watches that match (any more): dropped.
    Unwatched,
    /// A line the stream has already.
    Duplicate,
    /// A line before the header the stream is built from: dropped, and asked for
    /// again by the next watch (which starts from the stream's next line, 0).
    Early,
    /// Refused, for this reason (a [`metrics::LIVE_FRAMES_REFUSED`] label).
    Refused(&'static str),
}

/// One kept line.
#[derive(Debug)]
struct Kept {
    index: u64,
    /// When it arrived: a viewer sees it a broadcast delay later.
    at: Instant,
    line: Arc<str>,
}

/// What a stream holds of its match: the current attempt's header and newest lines.
#[derive(Debug, Default)]
struct Lines {
    attempt: u32,
    /// Bumped when a later attempt starts over: its viewers start over too.
    generation: u64,
    header: Option<Kept>,
    frames: VecDeque<Kept>,
    bytes: usize,
    /// The next line expected.
    next: u64,
    /// When the match's end arrived.
    ended: Option<Instant>,
    /// The broker user relaying this match, once one is believed.
    sender: Option<String>,
    /// When its last line came.
    last_at: Option<Instant>,
    viewers: usize,
}

/// Where a viewer is in a stream.
#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    generation: u64,
    next: u64,
}

/// What a viewer is shown next ([`Viewer::next`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// These lines, by number, after skipping this many the buffer had let go.
    Lines(Vec<(u64, Arc<str>)>, u64),
    /// A later attempt at the match started over: so does the viewer, from line 0.
    Restart,
    /// The match is over, and the viewer has had every line.
    End,
}

/// What a viewer reads next.
enum Read {
    /// Shown now.
    Show(Shown),
    /// Nothing yet: wait for the stream to grow, or until then (a delayed line).
    Wait(Option<Instant>),
}

/// One watched match.
#[derive(Debug)]
pub struct Stream {
    job_id: String,
    /// Which stream of its match this is: a match watched again gets a new one, which
    /// its worker is told to relay from the start.
    serial: u64,
    delay: Duration,
    budget: usize,
    lines: Mutex<Lines>,
    grown: watch::Sender<u64>,
}

impl Stream {
    fn lock(&self) -> MutexGuard<'_, Lines> {
        // Each change is whole before the lock is let go.
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes line `index` of attempt `attempt` (`None`: the end) from `sender`. A
    /// stream is built from its header: a later attempt, or a line before the header,
    /// waits for one. A later attempt is believed from the worker relaying the current
    /// one, or from another once the current one is over or its relay silent for a
    /// watch's lease (a worker that held an earlier delivery of the job still holds its
    /// token, and must not take a match's stream from the worker playing it). A line
    /// that is not one line of text (an empty one is none), or is over the buffer, is
    /// refused. The viewers are
    /// woken by the caller ([`Stream::grew`]), once for all the lines it offers.
    fn offer(&self, attempt: u32, index: u64, line: Option<Arc<str>>, sender: Option<&str>) -> Offered {
        let malformed = |line: &str| line.is_empty() || line.contains(['\n', '\r']) || line.len() > self.budget;
        if line.as_deref().is_some_and(malformed) {
            return Offered::Refused("malformed");
        }
        let mut lines = self.lock();
        let now = Instant::now();
        if attempt < lines.attempt {
            return Offered::Refused("stale");
        }
        if attempt > lines.attempt {
            if index != 0 || line.is_none() {
                return Offered::Early;
            }
            let silent = lines.last_at.is_none_or(|at| now.duration_since(at) >= SILENT_RELAY);
            let relaying = lines.sender.as_deref();
            if !(relaying.is_none() || relaying == sender || lines.ended.is_some() || silent) {
                return Offered::Refused("sender");
            }
            // A new attempt is played from its first line: what the last one showed goes.
            let viewers = lines.viewers;
            let generation = lines.generation + u64::from(lines.attempt > 0);
            *lines = Lines { attempt, generation, viewers, ..Lines::default() };
        }
        match (&lines.sender, sender) {
            (Some(relaying), Some(sender)) if relaying != sender => return Offered::Refused("sender"),
            (None, Some(sender)) => lines.sender = Some(sender.to_owned()),
            _ => {}
        }
        if lines.ended.is_some() || index < lines.next {
            return Offered::Duplicate;
        }
        if lines.header.is_none() && index != 0 {
            return Offered::Early;
        }
        if index > lines.next {
            metrics::LIVE_FRAMES_DROPPED.with_label_values(&["relay"]).inc_by(index - lines.next);
        }
        lines.last_at = Some(now);
        match line {
            None => {
                // The end is no line: the next one expected stays where it is.
                lines.ended = Some(now);
                lines.next = index;
                return Offered::Kept;
            }
            Some(line) if index == 0 => lines.header = Some(Kept { index, at: now, line }),
            Some(line) => {
                lines.bytes += line.len() + LINE_OVERHEAD;
                lines.frames.push_back(Kept { index, at: now, line });
                // The newest line stays, however large: viewers see where the match is.
                while lines.bytes > self.budget && lines.frames.len() > 1 {
                    let gone = lines.frames.pop_front().expect("more than one line");
                    lines.bytes -= gone.line.len() + LINE_OVERHEAD;
                }
            }
        }
        lines.next = index + 1;
        Offered::Kept
    }

    /// Wakes the viewers: the stream has something new for them.
    fn grew(&self) {
        self.grown.send_modify(|version| *version += 1);
    }

    /// Its match, from the first line it still needs.
    fn watched(&self) -> WatchedMatch {
        WatchedMatch { job_id: self.job_id.clone(), from: self.lock().next }
    }

    /// Whether its match's end came.
    fn is_over(&self) -> bool {
        self.lock().ended.is_some()
    }

    /// The ledger has the match's answer: unless its end came, the stream ends once no
    /// line came for [`QUIET_AFTER_ANSWER`] (a relay that lapsed, a worker gone, a
    /// match dead-lettered would leave it open for good).
    fn conclude(&self, now: Instant) {
        let mut lines = self.lock();
        if lines.ended.is_none() && lines.last_at.is_none_or(|at| now.duration_since(at) >= QUIET_AFTER_ANSWER) {
            lines.ended = Some(now);
            drop(lines);
            self.grew();
        }
    }

    /// What the viewer at `cursor` reads next, moving it on.
    fn read(&self, cursor: &mut Cursor, now: Instant) -> Read {
        let lines = self.lock();
        if cursor.generation != lines.generation {
            *cursor = Cursor { generation: lines.generation, next: 0 };
            return Read::Show(Shown::Restart);
        }
        let shown = |kept: &Kept| kept.at + self.delay <= now;
        let (mut out, mut bytes, mut skipped, mut waiting) = (Vec::new(), 0, 0, None);
        if cursor.next == 0
            && let Some(header) = &lines.header
        {
            if !shown(header) {
                return Read::Wait(Some(header.at + self.delay));
            }
            out.push((0, Arc::clone(&header.line)));
            bytes += header.line.len();
            cursor.next = 1;
        }
        let start = lines.frames.partition_point(|kept| kept.index < cursor.next);
        for kept in lines.frames.iter().skip(start) {
            if out.len() == BATCH_LINES || (!out.is_empty() && bytes + kept.line.len() > BATCH_BYTES) {
                break;
            }
            if !shown(kept) {
                waiting = Some(kept.at + self.delay);
                break;
            }
            // Lines between: the buffer let them go, or they never came.
            skipped += kept.index - cursor.next;
            out.push((kept.index, Arc::clone(&kept.line)));
            bytes += kept.line.len();
            cursor.next = kept.index + 1;
        }
        if !out.is_empty() {
            return Read::Show(Shown::Lines(out, skipped));
        }
        if waiting.is_some() {
            return Read::Wait(waiting);
        }
        // Every line kept is read: the end, once it is shown.
        match lines.ended {
            Some(at) if at + self.delay <= now => Read::Show(Shown::End),
            Some(at) => Read::Wait(Some(at + self.delay)),
            None => Read::Wait(None),
        }
    }
}

#[derive(Debug, Default)]
struct HubState {
    streams: HashMap<String, Arc<Stream>>,
    viewers: usize,
    /// The last stream's serial.
    serial: u64,
}

/// The watched matches and their viewers; cheap to clone.
#[derive(Debug, Clone)]
pub struct Live(Arc<Hub>);

#[derive(Debug)]
struct Hub {
    settings: LiveSettings,
    state: Mutex<HubState>,
    /// Bumped when a match gains its first viewer or loses its last.
    watched: watch::Sender<u64>,
}

impl Live {
    /// A hub within `settings`.
    pub fn new(settings: LiveSettings) -> Self {
        Live(Arc::new(Hub { settings, state: Mutex::default(), watched: watch::channel(0).0 }))
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new viewer of `job_id`'s match from line `from` (0, or one past the last a
    /// reconnecting browser had), shown `delay` behind its play (a stream's first
    /// viewer sets it), or which limit is met.
    pub fn join(&self, job_id: &str, from: u64, delay: Duration) -> Result<Viewer, Full> {
        let settings = self.0.settings;
        let mut state = self.lock();
        let refuse = |key: &'static str, limit: usize, what: &'static str| {
            metrics::LIVE_VIEWERS_REFUSED.with_label_values(&[key.trim_start_matches("live.")]).inc();
            Full { key, limit, what }
        };
        if state.viewers >= settings.viewers {
            return Err(refuse(limits::LIVE_VIEWERS.key(), settings.viewers, "every live viewer's place is taken"));
        }
        let stream = match state.streams.get(job_id) {
            Some(stream) => Arc::clone(stream),
            None => {
                if state.streams.len() >= settings.streams {
                    let what = "as many matches as may be are watched live";
                    return Err(refuse(limits::LIVE_STREAMS.key(), settings.streams, what));
                }
                state.serial += 1;
                let stream = Arc::new(Stream {
                    job_id: job_id.to_owned(),
                    serial: state.serial,
                    delay,
                    budget: settings.buffer_mib << 20,
                    lines: Mutex::default(),
                    grown: watch::channel(0).0,
                });
                state.streams.insert(job_id.to_owned(), Arc::clone(&stream));
                metrics::LIVE_STREAMS.set(state.streams.len() as i64);
                self.0.watched.send_modify(|version| *version += 1);
                stream
            }
        };
        let cursor = {
            let mut lines = stream.lock();
            if lines.viewers >= settings.viewers_per_match {
                drop(lines);
                let key = limits::LIVE_VIEWERS_PER_MATCH.key();
                return Err(refuse(key, settings.viewers_per_match, "this match has as many viewers as it may"));
            }
            lines.viewers += 1;
            Cursor { generation: lines.generation, next: from }
        };
        state.viewers += 1;
        metrics::LIVE_VIEWERS.set(state.viewers as i64);
        let grown = stream.grown.subscribe();
        Ok(Viewer { live: self.clone(), stream, cursor, grown })
    }

    /// A viewer of `stream` left; the stream goes with its last.
    fn leave(&self, stream: &Arc<Stream>) {
        let mut state = self.lock();
        state.viewers -= 1;
        metrics::LIVE_VIEWERS.set(state.viewers as i64);
        let last = {
            let mut lines = stream.lock();
            lines.viewers -= 1;
            lines.viewers == 0
        };
        if last && state.streams.get(&stream.job_id).is_some_and(|kept| Arc::ptr_eq(kept, stream)) {
            state.streams.remove(&stream.job_id);
            metrics::LIVE_STREAMS.set(state.streams.len() as i64);
            self.0.watched.send_modify(|version| *version += 1);
        }
    }

    /// Takes line `index` of attempt `attempt` at `job_id`'s match (`None`: its end),
    /// relayed by `sender` (the broker user that vouched for it; `None` in process).
    /// Lines of a match nobody watches are dropped; a line that is not one line of
    /// text, or is over the buffer, is refused.
    pub fn offer(
        &self,
        job_id: &str,
        attempt: u32,
        index: u64,
        line: Option<Arc<str>>,
        sender: Option<&str>,
    ) -> Offered {
        let Some(stream) = self.stream(job_id) else { return Offered::Unwatched };
        let offered = stream.offer(attempt, index, line, sender);
        if offered == Offered::Kept {
            stream.grew();
        }
        offered
    }

    /// Takes consecutive `lines` from number `index` (then the end, with `end`), as
    /// [`Live::offer`] takes each; returns how many were kept, or why the rest were
    /// refused.
    pub fn offer_lines(
        &self,
        job_id: &str,
        attempt: u32,
        index: u64,
        lines: Vec<Arc<str>>,
        end: bool,
        sender: Option<&str>,
    ) -> Result<u64, &'static str> {
        let Some(stream) = self.stream(job_id) else { return Ok(0) };
        let next = index + lines.len() as u64;
        let offered = lines.into_iter().zip(index..).map(|(line, number)| (number, Some(line)));
        let (mut kept, mut grew, mut refused) = (0, false, Ok(()));
        for (number, line) in offered.chain(end.then_some((next, None))) {
            let is_line = line.is_some();
            match stream.offer(attempt, number, line, sender) {
                Offered::Kept => {
                    kept += u64::from(is_line);
                    grew = true;
                }
                Offered::Refused(reason) => {
                    refused = Err(reason);
                    break;
                }
                Offered::Unwatched | Offered::Duplicate | Offered::Early => {}
            }
        }
        // Woken once for the whole message, for what came before a refusal too.
        if grew {
            stream.grew();
        }
        refused.map(|()| kept)
    }

    /// The matches watched now, each from the first line its stream still needs.
    pub fn watched(&self) -> Vec<WatchedMatch> {
        self.streams().iter().map(|stream| stream.watched()).collect()
    }

    fn stream(&self, job_id: &str) -> Option<Arc<Stream>> {
        self.lock().streams.get(job_id).map(Arc::clone)
    }

    fn streams(&self) -> Vec<Arc<Stream>> {
        self.lock().streams.values().map(Arc::clone).collect()
    }

    /// Changes when a match gains its first viewer or loses its last.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.0.watched.subscribe()
    }
}

/// One browser watching one match; it leaves when dropped.
pub struct Viewer {
    live: Live,
    stream: Arc<Stream>,
    cursor: Cursor,
    grown: watch::Receiver<u64>,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        self.live.leave(&self.stream);
    }
}

impl Viewer {
    /// What this viewer is shown next, waiting for the match to go on.
    pub async fn next(&mut self) -> Shown {
        loop {
            // Marked seen before reading: a line offered after the read wakes the wait.
            self.grown.borrow_and_update();
            match self.stream.read(&mut self.cursor, Instant::now()) {
                Read::Show(Shown::Lines(lines, skipped)) => {
                    metrics::LIVE_FRAMES_DROPPED.with_label_values(&["viewer"]).inc_by(skipped);
                    metrics::LIVE_FRAMES_RELAYED.inc_by(lines.len() as u64);
                    return Shown::Lines(lines, skipped);
                }
                Read::Show(shown) => return shown,
                Read::Wait(until) => {
                    let deadline = until.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
                    tokio::select! {
                        // The sender is the stream's own, which this viewer holds.
                        _ = self.grown.changed() => {}
                        () = tokio::time::sleep_until(deadline) => {}
                    }
                }
            }
        }
    }

    /// This viewer as Server-Sent Events: a line each (`id`: its number), `skipped`
    /// (how many), `restart`, and `end` last. A batch read waits as shared lines, each
    /// made an event only when it is sent.
    pub fn into_sse(self) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
        let events = futures_util::stream::unfold(
            (self, VecDeque::<(u64, Arc<str>)>::new(), false),
            |(mut viewer, mut queued, ended)| async move {
                loop {
                    if let Some((index, line)) = queued.pop_front() {
                        let event = Event::default().id(u64::to_string(&index)).data(&*line);
                        return Some((Ok(event), (viewer, queued, ended)));
                    }
                    if ended {
                        return None;
                    }
                    // Browsers drop an event without data: the others say what they are.
                    let event = match viewer.next().await {
                        Shown::Lines(lines, 0) => {
                            queued.extend(lines);
                            continue;
                        }
                        Shown::Lines(lines, skipped) => {
                            queued.extend(lines);
                            Event::default().event("skipped").data(skipped.to_string())
                        }
                        // An empty id: a browser reconnecting asks for the new attempt from its start.
                        Shown::Restart => Event::default().event("restart").id("").data("a new attempt"),
                        Shown::End => {
                            return Some((
                                Ok(Event::default().event("end").data("the match is over")),
                                (viewer, queued, true),
                            ));
                        }
                    };
                    return Some((Ok(event), (viewer, queued, ended)));
                }
            },
        );
        Sse::new(events).keep_alive(KeepAlive::default())
    }
}

/// Tells the workers which matches are watched: starts relaying a match (a binding,
/// in the broker), stops it, and says which are watched from which line.
pub trait Watcher {
    /// `job_id` gained its first viewer: its lines must reach the hub from now on.
    fn start(&mut self, job_id: &str) -> BoxFuture<'_, Result<(), BrokerError>>;
    /// `job_id` lost its last viewer.
    fn stop(&mut self, job_id: &str) -> BoxFuture<'_, Result<(), BrokerError>>;
    /// These matches are watched: relay them, each from its line.
    fn watch(&mut self, matches: Vec<WatchedMatch>) -> BoxFuture<'_, Result<(), BrokerError>>;
}

/// Keeps `watcher` told which matches `live` watches: at once when one gains its first
/// viewer (or is watched again, by a new stream) or loses its last, and every
/// [`WATCH_RENEW_SECS`] for all of them, until `stop`. At each renewal, the streams of
/// matches the `ledger` has answered are concluded ([`Stream::conclude`]).
pub async fn keep_watching(
    live: &Live,
    watcher: &mut impl Watcher,
    ledger: &Ledger,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), BrokerError> {
    let mut changes = live.changes();
    let mut renew = tokio::time::interval(Duration::from_secs(WATCH_RENEW_SECS));
    // Each match told of, and the serial of the stream it was told of for.
    let mut started: HashMap<String, u64> = HashMap::new();
    loop {
        let renewing = tokio::select! {
            _ = renew.tick() => true,
            changed = changes.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
                false
            }
            _ = stop.wait_for(|stop| *stop) => return Ok(()),
        };
        changes.borrow_and_update();
        let streams = live.streams();
        let now: HashMap<String, u64> = streams.iter().map(|stream| (stream.job_id.clone(), stream.serial)).collect();
        for gone in started.keys().filter(|job_id| !now.contains_key(*job_id)) {
            watcher.stop(gone).await?;
        }
        let mut new = Vec::new();
        for stream in &streams {
            let told = started.get(&stream.job_id).copied();
            if told.is_none() {
                watcher.start(&stream.job_id).await?;
            }
            if told != Some(stream.serial) {
                new.push(stream.watched());
            }
        }
        started = now;
        let told = if renewing { streams.iter().map(|stream| stream.watched()).collect() } else { new };
        if !told.is_empty() {
            watcher.watch(told).await?;
        }
        if renewing {
            conclude_answered(&streams, ledger).await;
        }
    }
}

/// Concludes the streams of `streams`' matches that the ledger has answered.
async fn conclude_answered(streams: &[Arc<Stream>], ledger: &Ledger) {
    let open: Vec<String> =
        streams.iter().filter(|stream| !stream.is_over()).map(|stream| stream.job_id.clone()).collect();
    if open.is_empty() {
        return;
    }
    match ledger.job_states(open).await {
        Ok(states) => {
            let now = Instant::now();
            for (job_id, state) in states {
                if !matches!(state, JobState::Pending | JobState::Running)
                    && let Some(stream) = streams.iter().find(|stream| stream.job_id == job_id)
                {
                    stream.conclude(now);
                }
            }
        }
        Err(error) => tracing::warn!(%error, "reading the watched matches' states"),
    }
}

/// `farm-coordinator run`'s matches, watched without a broker: the in-process
/// workers' board relays into the hub.
pub struct InProcess {
    board: LiveBoard,
}

impl InProcess {
    /// Connects `board` to `live`: the board's relays deliver into the hub.
    pub fn connect(board: LiveBoard, live: &Live) -> Self {
        board.connect(Some(Arc::new(live.clone()) as Arc<dyn FrameOutlet>));
        InProcess { board }
    }
}

impl Watcher for InProcess {
    fn start(&mut self, _job_id: &str) -> BoxFuture<'_, Result<(), BrokerError>> {
        Box::pin(async { Ok(()) })
    }

    fn stop(&mut self, _job_id: &str) -> BoxFuture<'_, Result<(), BrokerError>> {
        Box::pin(async { Ok(()) })
    }

    fn watch(&mut self, matches: Vec<WatchedMatch>) -> BoxFuture<'_, Result<(), BrokerError>> {
        self.board.watch(&matches);
        Box::pin(async { Ok(()) })
    }
}

/// In process, the hub is the relays' outlet: nothing crosses a broker, so nothing is
/// checked but the lines themselves.
impl FrameOutlet for Live {
    fn deliver(&self, lines: LiveLines) -> BoxFuture<'_, Result<(), BrokerError>> {
        let LiveLines { job_id, attempt, index, lines, end, .. } = lines;
        match self.offer_lines(&job_id, attempt, index, lines, end, None) {
            Ok(kept) => metrics::LIVE_FRAMES_RECEIVED.inc_by(kept),
            Err(reason) => metrics::LIVE_FRAMES_REFUSED.with_label_values(&[reason]).inc(),
        }
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(buffer_mib: usize) -> Live {
        Live::new(LiveSettings { viewers_per_match: 2, viewers: 3, streams: 2, buffer_mib })
    }

    fn line(text: &str) -> Option<Arc<str>> {
        Some(Arc::from(text))
    }

    /// What a viewer reads now, without waiting: the lines' numbers, and how many it skipped.
    fn read_now(viewer: &mut Viewer) -> (Vec<u64>, u64) {
        match viewer.stream.read(&mut viewer.cursor, Instant::now()) {
            Read::Show(Shown::Lines(lines, skipped)) => (lines.into_iter().map(|(index, _)| index).collect(), skipped),
            _ => (Vec::new(), 0),
        }
    }

    #[test]
    fn a_late_viewer_reads_the_prefix_then_the_live_lines_with_no_gap_or_repeat() {
        let live = live(1);
        let mut first = live.join("j", 0, Duration::ZERO).expect("room");
        for index in 0..5 {
            assert_eq!(live.offer("j", 1, index, line("{}"), Some("w-1")), Offered::Kept);
        }
        assert_eq!(read_now(&mut first), ((0..5).collect(), 0));
        let mut late = live.join("j", 0, Duration::ZERO).expect("room");
        assert_eq!(live.offer("j", 1, 5, line("{}"), Some("w-1")), Offered::Kept);
        assert_eq!(read_now(&mut late), ((0..6).collect(), 0), "the prefix and the new line, in order");
        assert_eq!(read_now(&mut first), (vec![5], 0));
        assert_eq!(live.offer("j", 1, 3, line("{}"), Some("w-1")), Offered::Duplicate, "a line again is dropped");
        assert_eq!(read_now(&mut late), (vec![], 0));
        live.offer("j", 1, 6, None, Some("w-1"));
        assert!(matches!(late.stream.read(&mut late.cursor, Instant::now()), Read::Show(Shown::End)));
        // A reconnecting browser goes on after what it had.
        drop(first);
        let mut again = live.join("j", 4, Duration::ZERO).expect("room");
        assert_eq!(read_now(&mut again), (vec![4, 5], 0));
    }

    #[test]
    fn the_buffer_stays_within_its_bound_and_a_viewer_behind_it_skips_what_went() {
        let live = live(1);
        let mut idle = live.join("j", 0, Duration::ZERO).expect("room");
        live.offer("j", 1, 0, line("header"), Some("w-1"));
        let frame = "x".repeat(100 << 10);
        for index in 1..=200 {
            live.offer("j", 1, index, line(&frame), Some("w-1"));
        }
        let kept = idle.stream.lock().bytes;
        assert!(kept <= 1 << 20, "a viewer reading nothing holds nothing: {kept} bytes kept");
        // A batch is about 256 KiB: the header and two frames, then the rest.
        let (mut read, mut skipped) = read_now(&mut idle);
        assert_eq!(read.len(), 3, "{read:?}");
        loop {
            let (more, more_skipped) = read_now(&mut idle);
            if more.is_empty() {
                break;
            }
            read.extend(more);
            skipped += more_skipped;
        }
        // 1 MiB holds ten frames of 100 KiB: the header, then 191 to 200.
        assert_eq!(read, std::iter::once(0).chain(191..=200).collect::<Vec<_>>());
        assert_eq!(skipped, 190);
        assert_eq!(live.offer("j", 1, 201, line(&"y".repeat(2 << 20)), Some("w-1")), Offered::Refused("malformed"));
        assert_eq!(live.offer("j", 1, 201, line("two\nlines"), Some("w-1")), Offered::Refused("malformed"));
        assert_eq!(live.offer("j", 1, 201, line(""), Some("w-1")), Offered::Refused("malformed"));
        // Short lines are bounded by their count too: each costs its entry beside its text.
        for index in 201..100_201 {
            assert_eq!(live.offer("j", 1, index, line("x"), Some("w-1")), Offered::Kept);
        }
        let kept = idle.stream.lock().frames.len();
        assert!(kept <= (1 << 20) / LINE_OVERHEAD, "{kept} one-byte lines kept in 1 MiB");
    }

    #[test]
    fn each_limit_turns_a_viewer_away_naming_its_key() {
        let live = live(1);
        let _a = live.join("a", 0, Duration::ZERO).expect("room");
        let _b = live.join("a", 0, Duration::ZERO).expect("room");
        let full = live.join("a", 0, Duration::ZERO).err().expect("two viewers a match");
        assert_eq!(full.key, "live.viewers_per_match");
        let c = live.join("b", 0, Duration::ZERO).expect("room");
        let full = live.join("c", 0, Duration::ZERO).err().expect("three viewers in all");
        assert_eq!(full.key, "live.viewers");
        drop(c);
        assert_eq!(live.watched().len(), 1, "b went with its last viewer");
        let _b = live.join("b", 0, Duration::ZERO).expect("room");
        drop(_a);
        let full = live.join("c", 0, Duration::ZERO).err().expect("two matches watched");
        assert_eq!(full.key, "live.streams");
        assert!(full.to_string().contains("live.streams is 2"), "{full}");
        assert_eq!(live.offer("c", 1, 0, line("{}"), None), Offered::Unwatched);
    }

    #[tokio::test(start_paused = true)]
    async fn only_the_relaying_worker_is_believed_until_it_falls_silent_and_a_later_attempt_starts_over() {
        let live = live(1);
        let mut viewer = live.join("j", 0, Duration::ZERO).expect("room");
        assert_eq!(live.offer("j", 2, 0, line("{}"), Some("w-1")), Offered::Kept);
        assert_eq!(live.offer("j", 2, 1, line("{}"), Some("w-2")), Offered::Refused("sender"));
        assert_eq!(live.offer("j", 1, 1, line("{}"), Some("w-1")), Offered::Refused("stale"));
        assert_eq!(read_now(&mut viewer), (vec![0], 0));
        // A worker that held an earlier delivery still holds the job's token: its "later
        // attempt" is not believed while the relaying worker goes on.
        assert_eq!(live.offer("j", 3, 0, line("{}"), Some("w-2")), Offered::Refused("sender"));
        assert_eq!(live.offer("j", 3, 5, line("{}"), Some("w-1")), Offered::Early, "an attempt starts at its header");
        tokio::time::advance(SILENT_RELAY).await;
        assert_eq!(live.offer("j", 3, 0, line("{}"), Some("w-2")), Offered::Kept, "the relay fell silent");
        assert!(matches!(viewer.stream.read(&mut viewer.cursor, Instant::now()), Read::Show(Shown::Restart)));
        assert_eq!(read_now(&mut viewer), (vec![0], 0));
        assert_eq!(live.watched(), [WatchedMatch { job_id: "j".into(), from: 1 }]);
        assert_eq!(live.offer("j", 3, 1, line("{}"), Some("w-1")), Offered::Refused("sender"));
    }

    #[test]
    fn a_stream_is_built_from_its_header_and_a_gap_is_told_as_skipped() {
        let live = live(1);
        let mut viewer = live.join("j", 0, Duration::ZERO).expect("room");
        assert_eq!(live.offer("j", 1, 7, line("{}"), None), Offered::Early, "in flight to an earlier stream");
        assert_eq!(live.watched(), [WatchedMatch { job_id: "j".into(), from: 0 }], "the next watch asks for line 0");
        for index in [0, 1, 2, 5] {
            assert_eq!(live.offer("j", 1, index, line("{}"), None), Offered::Kept);
        }
        assert_eq!(read_now(&mut viewer), (vec![0, 1, 2, 5], 2), "lines 3 and 4 never came");
    }

    #[tokio::test(start_paused = true)]
    async fn an_answered_match_ends_its_stream_once_its_lines_stop() {
        let live = live(1);
        let mut viewer = live.join("j", 0, Duration::ZERO).expect("room");
        live.offer("j", 1, 0, line("header"), None);
        let stream = Arc::clone(&viewer.stream);
        stream.conclude(Instant::now());
        assert!(!stream.is_over(), "a line came just now: more may be on the way");
        tokio::time::advance(QUIET_AFTER_ANSWER).await;
        stream.conclude(Instant::now());
        assert_eq!(viewer.next().await, Shown::Lines(vec![(0, Arc::from("header"))], 0));
        assert_eq!(viewer.next().await, Shown::End);
        // A match answered before a single line came (it failed, or no worker relays).
        let mut waiting = live.join("k", 0, Duration::ZERO).expect("room");
        Arc::clone(&waiting.stream).conclude(Instant::now());
        assert_eq!(waiting.next().await, Shown::End);
    }

    #[tokio::test(start_paused = true)]
    async fn a_broadcast_delay_holds_each_line_back() {
        let live = live(1);
        let mut viewer = live.join("j", 0, Duration::from_secs(30)).expect("room");
        live.offer("j", 1, 0, line("header"), None);
        assert_eq!(read_now(&mut viewer), (vec![], 0), "not yet");
        tokio::time::advance(Duration::from_secs(20)).await;
        live.offer("j", 1, 1, line("frame"), None);
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(read_now(&mut viewer), (vec![0], 0), "the header, 30 s on; the frame is 10 s younger");
        live.offer("j", 1, 2, None, None);
        // The frame shows 30 s after it came, then the end 30 s after it came.
        let started = Instant::now();
        assert_eq!(viewer.next().await, Shown::Lines(vec![(1, Arc::from("frame"))], 0));
        assert_eq!(started.elapsed(), Duration::from_secs(20));
        assert_eq!(viewer.next().await, Shown::End);
        assert_eq!(started.elapsed(), Duration::from_secs(30));
    }

    /// A watcher that writes down what it is told.
    #[derive(Default)]
    struct Told(Arc<Mutex<Vec<String>>>);

    impl Told {
        fn say(&self, what: String) -> BoxFuture<'static, Result<(), BrokerError>> {
            self.0.lock().expect("told").push(what);
            Box::pin(async { Ok(()) })
        }

        /// Waits until `count` things were told (the watch loop reads the ledger on
        /// the blocking pool, outside the paused clock), and returns them.
        async fn after(told: &Arc<Mutex<Vec<String>>>, count: usize) -> Vec<String> {
            for _ in 0..5000 {
                if told.lock().expect("told").len() >= count {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
                tokio::task::yield_now().await;
            }
            told.lock().expect("told").clone()
        }
    }

    impl Watcher for Told {
        fn start(&mut self, job_id: &str) -> BoxFuture<'_, Result<(), BrokerError>> {
            self.say(format!("start {job_id}"))
        }
        fn stop(&mut self, job_id: &str) -> BoxFuture<'_, Result<(), BrokerError>> {
            self.say(format!("stop {job_id}"))
        }
        fn watch(&mut self, matches: Vec<WatchedMatch>) -> BoxFuture<'_, Result<(), BrokerError>> {
            let named: Vec<String> =
                matches.iter().map(|watched| format!("{}@{}", watched.job_id, watched.from)).collect();
            self.say(format!("watch {}", named.join(" ")))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn watches_start_at_once_are_renewed_and_stop_with_the_last_viewer() {
        let live = live(1);
        let (stop_tx, mut stop) = watch::channel(false);
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = Ledger::open(&dir.path().join("ledger.sqlite")).expect("a ledger");
        let told = Arc::new(Mutex::new(Vec::new()));
        let watching = {
            let (live, mut watcher) = (live.clone(), Told(Arc::clone(&told)));
            tokio::spawn(async move { keep_watching(&live, &mut watcher, &ledger, &mut stop).await })
        };
        tokio::task::yield_now().await;
        let viewer = live.join("j", 0, Duration::ZERO).expect("room");
        assert_eq!(Told::after(&told, 2).await, ["start j", "watch j@0"]);
        live.offer("j", 1, 0, line("header"), None);
        tokio::time::advance(Duration::from_secs(WATCH_RENEW_SECS)).await;
        assert_eq!(Told::after(&told, 3).await[2], "watch j@1", "renewed, from the line it needs");
        // Watched again at once (a page reloaded): a new stream, relayed from the start.
        drop(viewer);
        let viewer = live.join("j", 0, Duration::ZERO).expect("room");
        assert_eq!(Told::after(&told, 4).await[3], "watch j@0");
        drop(viewer);
        assert_eq!(Told::after(&told, 5).await[4], "stop j");
        stop_tx.send_replace(true);
        watching.await.expect("the task").expect("a watcher that never fails");
        assert_eq!(told.lock().expect("told").len(), 5);
    }
}
