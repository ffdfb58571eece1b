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
//! coordinator itself in `farm-coordinator run`), the lines gathered since its last
//! message in one, at most one message every [`SEND_INTERVAL`]: a fast match costs a
//! few dozen messages a second, not one a turn. A relay that falls behind skips the
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

/// The least time between two messages of one relay: what came meanwhile goes in the
/// next. 50 a second is smoother than a viewer's eye and far fewer than a fast
/// match's turns.
pub const SEND_INTERVAL: Duration = Duration::from_millis(20);
/// The most lines in one message (the protocol's), and about the most bytes (a single
/// longer line goes alone): the runner waits for the lock no longer than it takes to
/// clone these.
const BATCH_LINES: usize = farm_proto::MESSAGE_LINES;
const BATCH_BYTES: usize = 256 << 10;
/// A line longer than this is not relayed (counted as skipped): far above any game's
/// frame, well under RabbitMQ's largest message, which would close the channel.
const MAX_LINE_BYTES: usize = 4 << 20;

/// Consecutive lines of a match on their way to the viewers, or the end of its relay.
#[derive(Debug, Clone)]
pub struct LiveLines {
    /// The match's job id.
    pub job_id: Arc<str>,
    /// The delivery token of the job: what shows the coordinator that this worker was
    /// handed the match (empty in process, where nothing crosses a broker).
    pub token: Arc<str>,
    /// The attempt at the job, from 1.
    pub attempt: u32,
    /// The number of the first line in the replay, from 0 (the header); for the end,
    /// the number the next line would have had.
    pub index: u64,
    /// The lines from `index` on, as the replay stores them; none at the end.
    pub lines: Vec<Arc<str>>,
    /// The relay's last message: the match is over.
    pub end: bool,
}

/// Where relayed lines go.
pub trait FrameOutlet: Send + Sync {
    /// Sends `lines` on. An error ends the relay that sent them (the next watch starts
    /// another).
    fn deliver(&self, lines: LiveLines) -> BoxFuture<'_, Result<(), BrokerError>>;
}

/// The broker as an outlet: one message per [`LiveLines`], its lines joined by
/// newlines, published to [`LIVE_EXCHANGE`], routed by job id, without confirms (a
/// message lost is skipped, never waited for), signed with the worker's broker user as
/// RabbitMQ vouches for it.
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
    fn deliver(&self, lines: LiveLines) -> BoxFuture<'_, Result<(), BrokerError>> {
        Box::pin(async move {
            let mut headers = FieldTable::default();
            headers.insert(LINE_HEADER.into(), AMQPValue::LongLongInt(i64::try_from(lines.index).unwrap_or(i64::MAX)));
            headers.insert(ATTEMPT_HEADER.into(), AMQPValue::LongLongInt(i64::from(lines.attempt)));
            headers.insert(TOKEN_HEADER.into(), AMQPValue::LongString(LongString::from(lines.token.as_bytes())));
            if lines.end {
                headers.insert(END_HEADER.into(), AMQPValue::Boolean(true));
            }
            let properties = BasicProperties::default().with_user_id(self.user_id.clone()).with_headers(headers);
            let body = lines.lines.join("\n");
            let publish = self.channel.basic_publish(
                LIVE_EXCHANGE.into(),
                ShortString::from(&*lines.job_id),
                BasicPublishOptions::default(),
                body.as_bytes(),
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
    /// The line the last watch asked for: a watch asking for an earlier one (a new
    /// stream of the coordinator's) moves the relay back; a renewal, trailing what is
    /// on its way, does not.
    asked: u64,
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
    /// The attempt was given up (it will be tried again): its relay stops, with no end.
    abandoned: bool,
    relay: Option<Relay>,
}

/// What a relay does next.
enum Step {
    /// Send these consecutive lines from this number, having skipped this many the
    /// buffer no longer held.
    Send(u64, Vec<Arc<str>>, u64),
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
        if now >= relay.until || self.abandoned {
            self.relay = None;
            return Step::Lapsed;
        }
        let until = relay.until;
        // The header goes alone: the frames after it may not follow on from it.
        if *cursor == 0
            && let Some(header) = &self.header
        {
            *cursor = 1;
            return Step::Send(0, vec![Arc::clone(header)], 0);
        }
        let mut skipped = if *cursor > 0 && *cursor < self.first { self.first - *cursor } else { 0 };
        *cursor += skipped;
        let mut from = *cursor;
        let mut lines = Vec::new();
        if *cursor >= self.first {
            let start = usize::try_from(*cursor - self.first).unwrap_or(usize::MAX);
            let mut bytes = 0;
            for line in self.frames.iter().skip(start).take(BATCH_LINES) {
                if line.len() > MAX_LINE_BYTES && lines.is_empty() {
                    *cursor += 1;
                    skipped += 1;
                    from = *cursor;
                    continue;
                }
                if !lines.is_empty() && (bytes + line.len() > BATCH_BYTES || line.len() > MAX_LINE_BYTES) {
                    break;
                }
                bytes += line.len();
                lines.push(Arc::clone(line));
                *cursor += 1;
            }
        }
        if !lines.is_empty() || skipped > 0 {
            Step::Send(from, lines, skipped)
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

    /// The attempt was given up: its relay stops where it is, with no end (the
    /// coordinator's stream waits for the job's next attempt, or its answer).
    fn abandon(&self) {
        let mut lines = self.lock();
        if !lines.ended {
            lines.abandoned = true;
            drop(lines);
            self.wake.notify_one();
        }
    }

    /// Relays from line `from` until `until`: a relay that runs is extended (and moved
    /// back to `from`, if it is past it); otherwise one starts, if there is an outlet.
    fn watch(self: &Arc<Self>, from: u64, until: Instant, outlet: Option<&Arc<dyn FrameOutlet>>) {
        let mut lines = self.lock();
        if let Some(relay) = lines.relay.as_mut() {
            relay.until = relay.until.max(until);
            if from < relay.asked {
                relay.rewind = Some(relay.rewind.map_or(from, |rewind| rewind.min(from)));
            }
            relay.asked = from;
            drop(lines);
            self.wake.notify_one();
            return;
        }
        let Some(outlet) = outlet else { return };
        if lines.abandoned || (lines.ended && from >= lines.next) {
            return;
        }
        lines.relay = Some(Relay { until, asked: from, rewind: None });
        drop(lines);
        tokio::spawn(relay(Arc::clone(self), Arc::clone(outlet), from));
    }

    fn lock(&self) -> MutexGuard<'_, Lines> {
        // Every change to the lines is complete before the lock is let go.
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn message(&self, index: u64, lines: Vec<Arc<str>>, end: bool) -> LiveLines {
        LiveLines {
            job_id: Arc::clone(&self.job_id),
            token: Arc::clone(&self.token),
            attempt: self.attempt,
            index,
            lines,
            end,
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
            Step::Send(_, lines, skipped) if lines.is_empty() => metrics::LIVE_FRAMES_SKIPPED.inc_by(skipped),
            Step::Send(from, lines, skipped) => {
                metrics::LIVE_FRAMES_SKIPPED.inc_by(skipped);
                let sent = lines.len() as u64;
                let next_send = Instant::now() + SEND_INTERVAL;
                if let Err(error) = outlet.deliver(live.message(from, lines, false)).await {
                    tracing::warn!(job = %live.job_id, %error, "a live relay stopped");
                    live.lock().relay = None;
                    return;
                }
                metrics::LIVE_FRAMES_SENT.inc_by(sent);
                // What comes meanwhile waits for the next message, unless the match ends.
                if !live.lock().ended {
                    tokio::time::sleep_until(next_send).await;
                }
            }
            Step::End(index) => {
                if let Err(error) = outlet.deliver(live.message(index, Vec::new(), true)).await {
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

#[derive(Default)]
struct BoardState {
    playing: HashMap<Arc<str>, Arc<LiveMatch>>,
    /// Every match watched, played here or not (yet), and until when: a match that
    /// starts here while watched is relayed from its first line.
    leases: HashMap<String, Instant>,
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
    /// `token`, until the returned [`LivePlay`] is finished or dropped; `None` when live
    /// relaying is off. A match already watched is relayed from its first line.
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
        // A new match (or a new attempt) is relayed from its first line, whatever line
        // the coordinator had of an earlier one.
        if let Some(until) = state.leases.get(job_id).copied() {
            live.watch(0, until, state.outlet.as_ref());
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
        state.leases.retain(|_, until| *until > now);
        let ceiling = limits::LIVE_STREAMS.range.max.unwrap_or(usize::MAX);
        for watched in matches.iter().take(ceiling) {
            if state.leases.len() >= ceiling && !state.leases.contains_key(&watched.job_id) {
                break;
            }
            state.leases.insert(watched.job_id.clone(), until);
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

    /// The match is over and its result stands: the relay sends what is left, then
    /// the end. Dropped unfinished (the attempt failed and will be tried again, or the
    /// worker stops), the relay stops with no end.
    pub fn finish(self) {
        self.live.end();
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
        // After finish() this changes nothing: the relay stops once it has sent the end.
        self.live.abandon();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An outlet that keeps what it is given.
    #[derive(Default)]
    struct Kept(Mutex<Vec<LiveLines>>);

    impl FrameOutlet for Kept {
        fn deliver(&self, lines: LiveLines) -> BoxFuture<'_, Result<(), BrokerError>> {
            self.0.lock().expect("kept").push(lines);
            Box::pin(async { Ok(()) })
        }
    }

    impl Kept {
        /// Each line's number as it was sent, and `None` for the end.
        fn indices(&self) -> Vec<Option<u64>> {
            let kept = self.0.lock().expect("kept");
            kept.iter()
                .flat_map(|message| {
                    let lines = (message.index..).take(message.lines.len()).map(Some);
                    lines.chain(message.end.then_some(None))
                })
                .collect()
        }
    }

    /// A board of `buffer_mib` whose relays deliver to a [`Kept`].
    fn connected(buffer_mib: usize) -> (LiveBoard, Arc<Kept>) {
        let board = LiveBoard::new(buffer_mib);
        let kept = Arc::new(Kept::default());
        board.connect(Some(Arc::clone(&kept) as Arc<dyn FrameOutlet>));
        (board, kept)
    }

    fn watched(job_id: &str, from: u64) -> Vec<WatchedMatch> {
        vec![WatchedMatch { job_id: job_id.into(), from }]
    }

    /// Lets the relay task run until it waits, its send interval over.
    async fn settle() {
        tokio::time::sleep(SEND_INTERVAL * 10).await;
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_is_sent_until_watched_then_the_prefix_and_the_rest_in_order() {
        let (board, kept) = connected(1);
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
        play.tap().push("footer");
        play.finish();
        settle().await;
        assert_eq!(kept.indices()[4..], [Some(4), None], "the last line, then the end");
        let messages = kept.0.lock().expect("kept");
        assert!(messages.iter().all(|message| &*message.token == "token" && message.attempt == 1));
        let texts: Vec<&str> = messages.iter().flat_map(|message| message.lines.iter().map(|line| &**line)).collect();
        assert_eq!(texts, ["header", "frame 1", "frame 2", "frame 3", "footer"]);
        assert_eq!(messages.len(), 5, "the header, frames 1 and 2 together, frame 3, the footer, the end");
    }

    #[tokio::test(start_paused = true)]
    async fn an_attempt_given_up_stops_its_relay_with_no_end_and_the_next_is_relayed_from_its_header() {
        let (board, kept) = connected(1);
        board.watch(&watched("j", 0));
        let first = board.open("j", "", 1).expect("live is on");
        first.tap().push("header");
        first.tap().push("frame 1");
        settle().await;
        drop(first);
        settle().await;
        assert_eq!(kept.indices(), [Some(0), Some(1)], "no end: the job will be tried again");
        // The coordinator has had two lines of attempt 1; attempt 2 goes from its header.
        board.watch(&watched("j", 2));
        let second = board.open("j", "", 2).expect("live is on");
        second.tap().push("header");
        settle().await;
        let messages = kept.0.lock().expect("kept");
        let last = messages.last().expect("sent");
        assert_eq!((last.attempt, last.index, last.lines.len()), (2, 0, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_match_watched_before_it_starts_is_relayed_from_its_header() {
        let (board, kept) = connected(1);
        board.watch(&watched("later", 0));
        let play = board.open("later", "", 2).expect("live is on");
        play.tap().push("header");
        settle().await;
        assert_eq!(kept.indices(), [Some(0)]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_buffer_keeps_the_header_and_the_newest_frames_and_a_late_relay_skips_the_rest() {
        let (board, kept) = connected(1);
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
        // The counter is the process's: other tests may add to it meanwhile.
        assert!(metrics::LIVE_FRAMES_SKIPPED.get() - skipped >= 7);
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_lapses_unless_renewed_and_only_a_watch_from_an_earlier_line_sends_again() {
        let (board, kept) = connected(1);
        let play = board.open("j", "", 1).expect("live is on");
        play.tap().push("header");
        board.watch(&watched("j", 0));
        settle().await;
        play.tap().push("frame 1");
        settle().await;
        // A renewal trails what is on its way: nothing is sent again.
        board.watch(&watched("j", 1));
        settle().await;
        assert_eq!(kept.indices(), [Some(0), Some(1)]);
        // A watch from an earlier line (a new stream at the coordinator) sends it again.
        board.watch(&watched("j", 0));
        settle().await;
        assert_eq!(kept.indices(), [Some(0), Some(1), Some(0), Some(1)]);
        tokio::time::advance(Duration::from_secs(WATCH_LEASE_SECS + 1)).await;
        settle().await;
        play.tap().push("frame 2");
        settle().await;
        assert_eq!(kept.indices().len(), 4, "lapsed: frame 2 is not sent");
        board.watch(&watched("j", 3));
        settle().await;
        play.tap().push("frame 3");
        settle().await;
        assert_eq!(kept.indices()[4..], [Some(3)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_line_too_long_for_a_message_is_skipped_not_sent() {
        let (board, kept) = connected(8);
        let play = board.open("j", "", 1).expect("live is on");
        for line in ["header".to_owned(), "x".repeat(MAX_LINE_BYTES + 1), "frame 2".to_owned()] {
            play.tap().push(&line);
        }
        let skipped = metrics::LIVE_FRAMES_SKIPPED.get();
        board.watch(&watched("j", 0));
        settle().await;
        assert_eq!(kept.indices(), [Some(0), Some(2)]);
        assert!(metrics::LIVE_FRAMES_SKIPPED.get() > skipped, "counted");
    }

    #[test]
    fn an_off_board_keeps_nothing() {
        assert!(LiveBoard::off().open("j", "", 1).is_none());
    }
}
