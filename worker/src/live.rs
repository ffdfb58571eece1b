//! Matches relayed to their viewers as they are played ([`farm_proto::LIVE_EXCHANGE`]).
//!
//! Every match a worker plays keeps its replay lines in a [`LiveMatch`]: the header
//! always, then the newest frames within the worker's `live_buffer_mib`, so that a
//! viewer who comes late still sees the match from its start. The runner hands each
//! line over as it writes it to the replay: a copy under a lock, never a wait.
//!
//! A match is relayed only while the coordinator watches it ([`LiveBoard::watch`],
//! from its [`farm_proto::ControlMessage::Watch`], a lease it renews): a task of its own
//! sends the kept lines through the board's [`FrameOutlet`] (the broker, or the
//! coordinator itself in `farm-coordinator run`). A relay that falls behind skips the
//! lines the buffer no longer holds (counted) instead of slowing the match; a match
//! nobody watches sends nothing at all.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use farm_proto::{
    ATTEMPT_HEADER, END_HEADER, LINE_HEADER, LIVE_EXCHANGE, TOKEN_HEADER, WATCH_LEASE_SECS, WatchedMatch, limits,
};
use farm_runtime::queue::{BROKER_CALL, BrokerError};
use futures_util::future::BoxFuture;
use lapin::options::BasicPublishOptions;
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Channel, Connection};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics;

/// Lines a relay takes from its match at a time: the runner waits for the lock no
/// longer than it takes to clone these.
const BATCH: usize = 64;

/// One line of a match on its way to the viewers, or the end of its relay.
#[derive(Debug, Clone)]
pub struct LiveFrame {
    /// The match's job id.
    pub job_id: Arc<str>,
    /// The delivery token of the job: what shows the coordinator that this worker was
    /// handed the match (empty in process, where nothing crosses a broker).
    pub token: Arc<str>,
    /// The attempt at the job, from 1.
    pub attempt: u32,
    /// The line's number in the replay, from 0 (the header); for the end, the number
    /// the next line would have had.
    pub index: u64,
    /// The line as the replay stores it; `None` ends the relay: the match is over.
    pub line: Option<Arc<str>>,
}

/// Where relayed lines go.
pub trait FrameOutlet: Send + Sync {
    /// Sends `frame` on. An error ends the relay that sent it (the next watch starts
    /// another).
    fn deliver(&self, frame: LiveFrame) -> BoxFuture<'_, Result<(), BrokerError>>;
}

/// The broker as an outlet: frames published to [`LIVE_EXCHANGE`], routed by job id,
/// without confirms (a frame lost is skipped, never waited for), signed with the
/// worker's broker user as RabbitMQ vouches for it.
pub struct BrokerOutlet {
    channel: Channel,
    user_id: ShortString,
}

impl BrokerOutlet {
    /// An outlet on a channel of its own on `connection`, its frames from `worker_id`.
    pub async fn open(connection: &Connection, worker_id: &str) -> Result<Self, BrokerError> {
        Ok(BrokerOutlet { channel: connection.create_channel().await?, user_id: ShortString::from(worker_id) })
    }
}

impl FrameOutlet for BrokerOutlet {
    fn deliver(&self, frame: LiveFrame) -> BoxFuture<'_, Result<(), BrokerError>> {
        Box::pin(async move {
            let mut headers = FieldTable::default();
            headers.insert(LINE_HEADER.into(), AMQPValue::LongLongInt(i64::try_from(frame.index).unwrap_or(i64::MAX)));
            headers.insert(ATTEMPT_HEADER.into(), AMQPValue::LongLongInt(i64::from(frame.attempt)));
            headers.insert(TOKEN_HEADER.into(), AMQPValue::LongString(LongString::from(frame.token.as_bytes())));
            if frame.line.is_none() {
                headers.insert(END_HEADER.into(), AMQPValue::Boolean(true));
            }
            let properties = BasicProperties::default().with_user_id(self.user_id.clone()).with_headers(headers);
            let body = frame.line.as_deref().map_or(&[][..], str::as_bytes);
            let publish = self.channel.basic_publish(
                LIVE_EXCHANGE.into(),
                ShortString::from(&*frame.job_id),
                BasicPublishOptions::default(),
                body,
                properties,
            );
            tokio::time::timeout(BROKER_CALL, publish)
                .await
                .map_err(|_| BrokerError::Unconfirmed { queue: LIVE_EXCHANGE })??;
            Ok(())
        })
    }
}

/// A relay in progress: how long it may go on, and where it is asked to restart.
#[derive(Debug, Clone, Copy)]
struct Relay {
    until: Instant,
    rewind: Option<u64>,
}

/// What a match kept of its lines.
#[derive(Debug, Default)]
struct Lines {
    header: Option<Arc<str>>,
    /// Lines `first..next`, the frames (and at the end the footer).
    frames: VecDeque<Arc<str>>,
    first: u64,
    next: u64,
    bytes: usize,
    ended: bool,
    relay: Option<Relay>,
}

/// What a relay does next.
enum Step {
    /// Send these lines, having skipped this many the buffer no longer held.
    Send(Vec<(u64, Arc<str>)>, u64),
    /// Everything is sent and the match is over: send the end.
    End(u64),
    /// Nothing to send: wait for a line or a renewal until then.
    Wait(Instant),
    /// The watch lapsed.
    Lapsed,
}

impl Lines {
    fn push(&mut self, line: &str, budget: usize) {
        let line: Arc<str> = Arc::from(line);
        if self.next == 0 {
            self.header = Some(line);
            self.first = 1;
        } else {
            self.bytes += line.len();
            self.frames.push_back(line);
            // The newest frame stays, however large: a viewer sees where the match is.
            while self.bytes > budget && self.frames.len() > 1 {
                let dropped = self.frames.pop_front().expect("more than one frame");
                self.bytes -= dropped.len();
                self.first += 1;
            }
        }
        self.next += 1;
    }

    /// What a relay at `cursor` does next, taking the lines it sends.
    fn step(&mut self, cursor: &mut u64, now: Instant) -> Step {
        let Some(relay) = self.relay.as_mut() else { return Step::Lapsed };
        if let Some(rewind) = relay.rewind.take() {
            *cursor = (*cursor).min(rewind);
        }
        if now >= relay.until {
            self.relay = None;
            return Step::Lapsed;
        }
        let until = relay.until;
        let mut lines = Vec::new();
        if *cursor == 0
            && let Some(header) = &self.header
        {
            lines.push((0, Arc::clone(header)));
            *cursor = 1;
        }
        let skipped = if *cursor > 0 && *cursor < self.first { self.first - *cursor } else { 0 };
        *cursor += skipped;
        if *cursor >= self.first {
            let start = usize::try_from(*cursor - self.first).unwrap_or(usize::MAX);
            for line in self.frames.iter().skip(start).take(BATCH - lines.len()) {
                lines.push((*cursor, Arc::clone(line)));
                *cursor += 1;
            }
        }
        if !lines.is_empty() || skipped > 0 {
            Step::Send(lines, skipped)
        } else if self.ended && *cursor >= self.next {
            self.relay = None;
            Step::End(self.next)
        } else {
            Step::Wait(until)
        }
    }
}

/// One match's lines, kept while it plays. The runner adds each line as it writes it
/// ([`LiveMatch::push`]).
#[derive(Debug)]
pub struct LiveMatch {
    job_id: Arc<str>,
    token: Arc<str>,
    attempt: u32,
    budget: usize,
    lines: Mutex<Lines>,
    /// Wakes this match's relay (there is at most one): a line, a renewal, the end.
    wake: Notify,
}

impl LiveMatch {
    /// Keeps `line`, the next line of the replay; wakes the relay if one runs.
    pub fn push(&self, line: &str) {
        let mut lines = self.lock();
        lines.push(line, self.budget);
        if lines.relay.is_some() {
            self.wake.notify_one();
        }
    }

    /// The match is over: its relay sends what is left, then the end.
    fn end(&self) {
        self.lock().ended = true;
        self.wake.notify_one();
    }

    /// Relays from line `from` until `until`: a relay that runs is extended (and moved
    /// back to `from`, if it is past it); otherwise one starts, if there is an outlet.
    fn watch(self: &Arc<Self>, from: u64, until: Instant, outlet: Option<&Arc<dyn FrameOutlet>>) {
        let mut lines = self.lock();
        if let Some(relay) = lines.relay.as_mut() {
            relay.until = relay.until.max(until);
            relay.rewind = Some(relay.rewind.map_or(from, |rewind| rewind.min(from)));
            drop(lines);
            self.wake.notify_one();
            return;
        }
        let Some(outlet) = outlet else { return };
        if lines.ended && from >= lines.next {
            return;
        }
        lines.relay = Some(Relay { until, rewind: None });
        drop(lines);
        tokio::spawn(relay(Arc::clone(self), Arc::clone(outlet), from));
    }

    fn lock(&self) -> MutexGuard<'_, Lines> {
        // Every change to the lines is complete before the lock is let go.
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn frame(&self, index: u64, line: Option<Arc<str>>) -> LiveFrame {
        LiveFrame {
            job_id: Arc::clone(&self.job_id),
            token: Arc::clone(&self.token),
            attempt: self.attempt,
            index,
            line,
        }
    }
}

/// Sends `live`'s lines from `cursor` through `outlet` while its watch lasts.
async fn relay(live: Arc<LiveMatch>, outlet: Arc<dyn FrameOutlet>, mut cursor: u64) {
    metrics::LIVE_RELAYS.inc();
    let _running = Running;
    loop {
        let step = live.lock().step(&mut cursor, Instant::now());
        match step {
            Step::Send(lines, skipped) => {
                metrics::LIVE_FRAMES_SKIPPED.inc_by(skipped);
                for (index, line) in lines {
                    if let Err(error) = outlet.deliver(live.frame(index, Some(line))).await {
                        tracing::warn!(job = %live.job_id, %error, "a live relay stopped");
                        live.lock().relay = None;
                        return;
                    }
                    metrics::LIVE_FRAMES_SENT.inc();
                }
            }
            Step::End(index) => {
                if let Err(error) = outlet.deliver(live.frame(index, None)).await {
                    tracing::warn!(job = %live.job_id, %error, "a live relay's end was not sent");
                }
                return;
            }
            Step::Wait(until) => {
                tokio::select! {
                    () = live.wake.notified() => {}
                    () = tokio::time::sleep_until(until) => {}
                }
            }
            Step::Lapsed => return,
        }
    }
}

/// Counts a relay out of [`metrics::LIVE_RELAYS`] however it ends.
struct Running;

impl Drop for Running {
    fn drop(&mut self) {
        metrics::LIVE_RELAYS.dec();
    }
}

/// A watch the coordinator asked for: from which line, until when.
#[derive(Debug, Clone, Copy)]
struct Lease {
    from: u64,
    until: Instant,
}

#[derive(Default)]
struct BoardState {
    playing: HashMap<Arc<str>, Arc<LiveMatch>>,
    /// Every match watched, played here or not (yet): a match that starts here while
    /// watched is relayed from its first line.
    leases: HashMap<String, Lease>,
    outlet: Option<Arc<dyn FrameOutlet>>,
}

/// The matches a worker plays, kept for viewers, and the watches it was asked for.
#[derive(Clone)]
pub struct LiveBoard(Arc<Board>);

struct Board {
    /// Bytes of frames each match keeps; 0: the board keeps and relays nothing.
    budget: usize,
    state: Mutex<BoardState>,
}

impl std::fmt::Debug for LiveBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveBoard").field("budget", &self.0.budget).finish_non_exhaustive()
    }
}

impl LiveBoard {
    /// A board whose matches keep `buffer_mib` MiB of frames each; 0 turns live
    /// relaying off (matches keep nothing).
    pub fn new(buffer_mib: usize) -> Self {
        LiveBoard(Arc::new(Board { budget: buffer_mib << 20, state: Mutex::default() }))
    }

    /// A board that keeps and relays nothing.
    pub fn off() -> Self {
        Self::new(0)
    }

    /// Where relays send lines from now on (`None`: nowhere, while the broker is away).
    pub fn connect(&self, outlet: Option<Arc<dyn FrameOutlet>>) {
        self.lock().outlet = outlet;
    }

    /// Keeps the lines of attempt `attempt` at `job_id`'s match, delivered with
    /// `token`, until the returned [`LivePlay`] goes; `None` when live relaying is
    /// off. A match already watched is relayed from its first line.
    pub fn open(&self, job_id: &str, token: &str, attempt: u32) -> Option<LivePlay> {
        if self.0.budget == 0 {
            return None;
        }
        let live = Arc::new(LiveMatch {
            job_id: Arc::from(job_id),
            token: Arc::from(token),
            attempt,
            budget: self.0.budget,
            lines: Mutex::default(),
            wake: Notify::new(),
        });
        let mut state = self.lock();
        state.playing.insert(Arc::clone(&live.job_id), Arc::clone(&live));
        if let Some(lease) = state.leases.get(job_id).copied() {
            live.watch(lease.from, lease.until, state.outlet.as_ref());
        }
        Some(LivePlay { board: self.clone(), live })
    }

    /// The coordinator watches `matches` for [`WATCH_LEASE_SECS`] from now: those played
    /// here are relayed (from each one's `from`); the others are remembered until then.
    pub fn watch(&self, matches: &[WatchedMatch]) {
        if self.0.budget == 0 {
            return;
        }
        let now = Instant::now();
        let until = now + Duration::from_secs(WATCH_LEASE_SECS);
        let mut state = self.lock();
        state.leases.retain(|_, lease| lease.until > now);
        let ceiling = limits::LIVE_STREAMS.range.max.unwrap_or(usize::MAX);
        for watched in matches.iter().take(ceiling) {
            if state.leases.len() >= ceiling && !state.leases.contains_key(&watched.job_id) {
                break;
            }
            state.leases.insert(watched.job_id.clone(), Lease { from: watched.from, until });
            if let Some(live) = state.playing.get(watched.job_id.as_str()) {
                live.watch(watched.from, until, state.outlet.as_ref());
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, BoardState> {
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A match being played and kept for viewers; when it goes, the match is over.
#[derive(Debug)]
pub struct LivePlay {
    board: LiveBoard,
    live: Arc<LiveMatch>,
}

impl LivePlay {
    /// What the runner hands each line to.
    pub fn tap(&self) -> Arc<LiveMatch> {
        Arc::clone(&self.live)
    }
}

impl Drop for LivePlay {
    fn drop(&mut self) {
        let mut state = self.board.lock();
        // A later attempt of the same job here replaced it already: leave that one.
        if state.playing.get(&self.live.job_id).is_some_and(|playing| Arc::ptr_eq(playing, &self.live)) {
            state.playing.remove(&self.live.job_id);
        }
        drop(state);
        self.live.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An outlet that keeps what it is given.
    #[derive(Default)]
    struct Kept(Mutex<Vec<LiveFrame>>);

    impl FrameOutlet for Kept {
        fn deliver(&self, frame: LiveFrame) -> BoxFuture<'_, Result<(), BrokerError>> {
            self.0.lock().expect("kept").push(frame);
            Box::pin(async { Ok(()) })
        }
    }

    impl Kept {
        fn indices(&self) -> Vec<Option<u64>> {
            self.0.lock().expect("kept").iter().map(|frame| frame.line.as_ref().map(|_| frame.index)).collect()
        }
    }

    fn watched(job_id: &str, from: u64) -> Vec<WatchedMatch> {
        vec![WatchedMatch { job_id: job_id.into(), from }]
    }

    /// Lets the relay task run until it waits.
    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_is_sent_until_watched_then_the_prefix_and_the_rest_in_order() {
        let board = LiveBoard::new(1);
        let kept = Arc::new(Kept::default());
        board.connect(Some(Arc::clone(&kept) as Arc<dyn FrameOutlet>));
        let play = board.open("j", "token", 1).expect("live is on");
        for line in ["header", "frame 1", "frame 2"] {
            play.tap().push(line);
        }
        settle().await;
        assert!(kept.indices().is_empty(), "unwatched: nothing sent");
        board.watch(&watched("j", 0));
        settle().await;
        play.tap().push("frame 3");
        settle().await;
        assert_eq!(kept.indices(), [Some(0), Some(1), Some(2), Some(3)]);
        drop(play);
        settle().await;
        assert_eq!(kept.indices().last(), Some(&None), "the end follows the last line");
        let frames = kept.0.lock().expect("kept");
        assert!(frames.iter().all(|frame| &*frame.token == "token" && frame.attempt == 1));
        assert_eq!(frames[3].line.as_deref(), Some("frame 3"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_match_watched_before_it_starts_is_relayed_from_its_header() {
        let board = LiveBoard::new(1);
        let kept = Arc::new(Kept::default());
        board.connect(Some(Arc::clone(&kept) as Arc<dyn FrameOutlet>));
        board.watch(&watched("later", 0));
        let play = board.open("later", "", 2).expect("live is on");
        play.tap().push("header");
        settle().await;
        assert_eq!(kept.indices(), [Some(0)]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_buffer_keeps_the_header_and_the_newest_frames_and_a_late_relay_skips_the_rest() {
        let board = LiveBoard::new(1);
        let kept = Arc::new(Kept::default());
        board.connect(Some(Arc::clone(&kept) as Arc<dyn FrameOutlet>));
        let play = board.open("j", "", 1).expect("live is on");
        play.tap().push("header");
        let frame = "x".repeat(300 << 10);
        for _ in 0..10 {
            play.tap().push(&frame);
        }
        let skipped = metrics::LIVE_FRAMES_SKIPPED.get();
        board.watch(&watched("j", 0));
        settle().await;
        // 1 MiB holds three frames of 300 KiB: lines 8, 9 and 10.
        assert_eq!(kept.indices(), [Some(0), Some(8), Some(9), Some(10)]);
        assert_eq!(metrics::LIVE_FRAMES_SKIPPED.get() - skipped, 7);
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_lapses_unless_renewed_and_a_renewal_from_an_earlier_line_sends_again() {
        let board = LiveBoard::new(1);
        let kept = Arc::new(Kept::default());
        board.connect(Some(Arc::clone(&kept) as Arc<dyn FrameOutlet>));
        let play = board.open("j", "", 1).expect("live is on");
        play.tap().push("header");
        board.watch(&watched("j", 0));
        settle().await;
        board.watch(&watched("j", 0));
        settle().await;
        assert_eq!(kept.indices(), [Some(0), Some(0)], "a renewal from line 0 sends line 0 again");
        tokio::time::advance(Duration::from_secs(WATCH_LEASE_SECS + 1)).await;
        settle().await;
        play.tap().push("frame 1");
        settle().await;
        assert_eq!(kept.indices().len(), 2, "lapsed: frame 1 is not sent");
        board.watch(&watched("j", 2));
        settle().await;
        play.tap().push("frame 2");
        settle().await;
        assert_eq!(kept.indices(), [Some(0), Some(0), Some(2)]);
    }

    #[test]
    fn an_off_board_keeps_nothing() {
        assert!(LiveBoard::off().open("j", "", 1).is_none());
    }
}
