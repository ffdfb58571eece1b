//! Matches shown to browsers as they are played: `GET /api/matches/{id}/live`, a
//! stream of Server-Sent Events, one replay line per event (its `id` the line's
//! number, from 0, the header).
//!
//! A match gets a [`Stream`] when its first viewer comes and loses it when its last
//! leaves. While it has one, the coordinator watches it: its worker relays the match's
//! lines (from the first, for the viewers who came late) until the watch lapses
//! ([`farm_proto::WATCH_LEASE_SECS`]; renewed by [`keep_watching`]). The stream keeps
//! the header and the newest lines within [`LiveSettings::buffer_mib`]; each viewer
//! reads it at its own pace from a cursor, so a viewer that reads nothing holds no
//! memory of its own, and one that falls behind the buffer skips what it let go
//! (told, and counted). Every limit answers 429 naming its key.
//!
//! The lines come from the broker ([`relay_from_broker`], which checks who sent them
//! first) or, in `farm-coordinator run`, from the in-process workers'
//! board directly ([`InProcess`]).

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use farm_proto::{WATCH_RENEW_SECS, WatchedMatch, limits};
use farm_runtime::queue::BrokerError;
use farm_worker::live::{FrameOutlet, LiveBoard, LiveLines};
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::metrics;

mod broker;

pub use broker::relay_from_broker;

/// Events a viewer is sent at a time before the stream is read again.
const BATCH: usize = 64;

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
    /// These lines, after skipping this many the buffer let go.
    Lines(Vec<(u64, Arc<str>)>, u64),
    /// A later attempt started over: so does the viewer.
    Restart,
    /// The match is over and the viewer has had every line.
    End,
    /// Nothing yet: wait for the stream to grow, or until then (a delayed line).
    Wait(Option<Instant>),
}

/// One watched match.
#[derive(Debug)]
pub struct Stream {
    job_id: String,
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

    /// Takes line `index` of attempt `attempt` (`None`: the end) from `sender`.
    fn offer(&self, attempt: u32, index: u64, line: Option<Arc<str>>, sender: Option<&str>) -> Offered {
        let mut lines = self.lock();
        if attempt < lines.attempt {
            return Offered::Refused("stale");
        }
        if attempt > lines.attempt {
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
        if index < lines.next || lines.ended.is_some() {
            return Offered::Duplicate;
        }
        if index > lines.next {
            metrics::LIVE_FRAMES_DROPPED.with_label_values(&["relay"]).inc_by(index - lines.next);
        }
        let now = Instant::now();
        match line {
            None => {
                // The end is no line: the next one expected stays where it is.
                lines.ended = Some(now);
                lines.next = index;
                drop(lines);
                self.grown.send_modify(|version| *version += 1);
                return Offered::Kept;
            }
            Some(line) if index == 0 => lines.header = Some(Kept { index, at: now, line }),
            Some(line) => {
                lines.bytes += line.len();
                lines.frames.push_back(Kept { index, at: now, line });
                // The newest line stays, however large: viewers see where the match is.
                while lines.bytes > self.budget && lines.frames.len() > 1 {
                    let gone = lines.frames.pop_front().expect("more than one line");
                    lines.bytes -= gone.line.len();
                }
            }
        }
        lines.next = index + 1;
        drop(lines);
        self.grown.send_modify(|version| *version += 1);
        Offered::Kept
    }

    /// What the viewer at `cursor` reads next, moving it on.
    fn read(&self, cursor: &mut Cursor, now: Instant) -> Read {
        let lines = self.lock();
        if cursor.generation != lines.generation {
            *cursor = Cursor { generation: lines.generation, next: 0 };
            return Read::Restart;
        }
        let shown = |kept: &Kept| kept.at + self.delay <= now;
        let mut out = Vec::new();
        if cursor.next == 0 {
            match &lines.header {
                Some(header) if shown(header) => {
                    out.push((0, Arc::clone(&header.line)));
                    cursor.next = 1;
                }
                Some(header) => return Read::Wait(Some(header.at + self.delay)),
                None if lines.frames.is_empty() => return Read::Wait(None),
                // The header never came (the relay began after the buffer let it go): on.
                None => cursor.next = 1,
            }
        }
        let first = lines.frames.front().map_or(cursor.next, |kept| kept.index);
        let skipped = first.saturating_sub(cursor.next);
        cursor.next += skipped;
        let start = lines.frames.partition_point(|kept| kept.index < cursor.next);
        let mut waiting = None;
        for kept in lines.frames.iter().skip(start) {
            if out.len() == BATCH {
                break;
            }
            if !shown(kept) {
                waiting = Some(kept.at + self.delay);
                break;
            }
            out.push((kept.index, Arc::clone(&kept.line)));
            cursor.next = kept.index + 1;
        }
        if !out.is_empty() || skipped > 0 {
            return Read::Lines(out, skipped);
        }
        if waiting.is_some() {
            return Read::Wait(waiting);
        }
        // Every line kept is read: the end, once it is shown.
        match lines.ended {
            Some(at) if at + self.delay <= now => Read::End,
            Some(at) => Read::Wait(Some(at + self.delay)),
            None => Read::Wait(None),
        }
    }
}

#[derive(Debug, Default)]
struct HubState {
    streams: HashMap<String, Arc<Stream>>,
    viewers: usize,
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
                let stream = Arc::new(Stream {
                    job_id: job_id.to_owned(),
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
        let Some(stream) = self.lock().streams.get(job_id).map(Arc::clone) else { return Offered::Unwatched };
        if line.as_deref().is_some_and(|line| line.contains(['\n', '\r']) || line.len() > stream.budget) {
            return Offered::Refused("malformed");
        }
        stream.offer(attempt, index, line, sender)
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
        let (mut kept, next) = (0, index + lines.len() as u64);
        for (line, number) in lines.into_iter().zip(index..) {
            match self.offer(job_id, attempt, number, Some(line), sender) {
                Offered::Kept => kept += 1,
                Offered::Refused(reason) => return Err(reason),
                Offered::Unwatched => return Ok(kept),
                Offered::Duplicate => {}
            }
        }
        if end && let Offered::Refused(reason) = self.offer(job_id, attempt, next, None, sender) {
            return Err(reason);
        }
        Ok(kept)
    }

    /// The matches watched now, each from the first line its stream still needs.
    pub fn watched(&self) -> Vec<WatchedMatch> {
        self.lock()
            .streams
            .values()
            .map(|stream| WatchedMatch { job_id: stream.job_id.clone(), from: stream.lock().next })
            .collect()
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
                Read::Lines(lines, skipped) => {
                    metrics::LIVE_FRAMES_DROPPED.with_label_values(&["viewer"]).inc_by(skipped);
                    metrics::LIVE_FRAMES_RELAYED.inc_by(lines.len() as u64);
                    return Shown::Lines(lines, skipped);
                }
                Read::Restart => return Shown::Restart,
                Read::End => return Shown::End,
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
    /// (how many), `restart`, and `end` last.
    pub fn into_sse(self) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
        let events = futures_util::stream::unfold(
            (self, VecDeque::new(), false),
            |(mut viewer, mut queued, ended)| async move {
                loop {
                    if let Some(event) = queued.pop_front() {
                        return Some((Ok(event), (viewer, queued, ended)));
                    }
                    if ended {
                        return None;
                    }
                    match viewer.next().await {
                        Shown::Lines(lines, skipped) => {
                            if skipped > 0 {
                                queued.push_back(Event::default().event("skipped").data(skipped.to_string()));
                            }
                            queued.extend(
                                lines
                                    .into_iter()
                                    .map(|(index, line)| Event::default().id(index.to_string()).data(&*line)),
                            );
                        }
                        // Browsers drop an event without data: these say what they are.
                        Shown::Restart => queued.push_back(Event::default().event("restart").data("a new attempt")),
                        Shown::End => {
                            return Some((
                                Ok(Event::default().event("end").data("the match is over")),
                                (viewer, queued, true),
                            ));
                        }
                    }
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
/// viewer or loses its last, and every [`WATCH_RENEW_SECS`] for all of them, until
/// `stop`.
pub async fn keep_watching(
    live: &Live,
    watcher: &mut impl Watcher,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), BrokerError> {
    let mut changes = live.changes();
    let mut renew = tokio::time::interval(Duration::from_secs(WATCH_RENEW_SECS));
    let mut started: HashSet<String> = HashSet::new();
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
        let watched = live.watched();
        let now: HashSet<String> = watched.iter().map(|watched| watched.job_id.clone()).collect();
        for gone in started.difference(&now) {
            watcher.stop(gone).await?;
        }
        let mut new = Vec::new();
        for watched in watched.iter().filter(|watched| !started.contains(&watched.job_id)) {
            watcher.start(&watched.job_id).await?;
            new.push(watched.clone());
        }
        started = now;
        let told = if renewing { watched } else { new };
        if !told.is_empty() {
            watcher.watch(told).await?;
        }
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
        if let Ok(kept) = self.offer_lines(&job_id, attempt, index, lines, end, None) {
            metrics::LIVE_FRAMES_RECEIVED.inc_by(kept);
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
            Read::Lines(lines, skipped) => (lines.into_iter().map(|(index, _)| index).collect(), skipped),
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
        assert!(matches!(late.stream.read(&mut late.cursor, Instant::now()), Read::End));
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
        let (read, skipped) = read_now(&mut idle);
        // 1 MiB holds ten frames of 100 KiB: the header, then 191 to 200.
        assert_eq!(read, std::iter::once(0).chain(191..=200).collect::<Vec<_>>());
        assert_eq!(skipped, 190);
        assert_eq!(live.offer("j", 1, 201, line(&"y".repeat(2 << 20)), Some("w-1")), Offered::Refused("malformed"));
        assert_eq!(live.offer("j", 1, 201, line("two\nlines"), Some("w-1")), Offered::Refused("malformed"));
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

    #[test]
    fn only_the_first_sender_is_believed_and_a_later_attempt_starts_over() {
        let live = live(1);
        let mut viewer = live.join("j", 0, Duration::ZERO).expect("room");
        assert_eq!(live.offer("j", 2, 0, line("{}"), Some("w-1")), Offered::Kept);
        assert_eq!(live.offer("j", 2, 1, line("{}"), Some("w-2")), Offered::Refused("sender"));
        assert_eq!(live.offer("j", 1, 1, line("{}"), Some("w-1")), Offered::Refused("stale"));
        assert_eq!(read_now(&mut viewer), (vec![0], 0));
        assert_eq!(live.offer("j", 3, 0, line("{}"), Some("w-2")), Offered::Kept, "another worker's new attempt");
        assert!(matches!(viewer.stream.read(&mut viewer.cursor, Instant::now()), Read::Restart));
        assert_eq!(read_now(&mut viewer), (vec![0], 0));
        assert_eq!(live.watched(), [WatchedMatch { job_id: "j".into(), from: 1 }]);
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
    struct Told(Vec<String>);

    impl Watcher for Told {
        fn start(&mut self, job_id: &str) -> BoxFuture<'_, Result<(), BrokerError>> {
            self.0.push(format!("start {job_id}"));
            Box::pin(async { Ok(()) })
        }
        fn stop(&mut self, job_id: &str) -> BoxFuture<'_, Result<(), BrokerError>> {
            self.0.push(format!("stop {job_id}"));
            Box::pin(async { Ok(()) })
        }
        fn watch(&mut self, matches: Vec<WatchedMatch>) -> BoxFuture<'_, Result<(), BrokerError>> {
            let named: Vec<String> =
                matches.iter().map(|watched| format!("{}@{}", watched.job_id, watched.from)).collect();
            self.0.push(format!("watch {}", named.join(" ")));
            Box::pin(async { Ok(()) })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn watches_start_at_once_are_renewed_and_stop_with_the_last_viewer() {
        let live = live(1);
        let (stop_tx, mut stop) = watch::channel(false);
        let watching = {
            let live = live.clone();
            tokio::spawn(async move {
                let mut told = Told::default();
                keep_watching(&live, &mut told, &mut stop).await.expect("a watcher that never fails");
                told.0
            })
        };
        tokio::task::yield_now().await;
        let viewer = live.join("j", 0, Duration::ZERO).expect("room");
        tokio::task::yield_now().await;
        live.offer("j", 1, 0, line("header"), None);
        tokio::time::advance(Duration::from_secs(WATCH_RENEW_SECS)).await;
        tokio::task::yield_now().await;
        drop(viewer);
        tokio::task::yield_now().await;
        stop_tx.send_replace(true);
        let told = watching.await.expect("the task");
        assert_eq!(told, ["start j", "watch j@0", "watch j@1", "stop j"]);
    }
}
