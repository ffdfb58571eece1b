//! The replay format: JSON Lines, one object per line.
//!
//! 1. a header, `{"type":"header","format":2,"setup":{...},"state":{...}}`: the
//!    [`MatchSetup`] and the game's state before step 1 (the document frames carry);
//! 2. one frame per step, `{"type":"frame","step":N,"replies":[...],"state":{...}}`:
//!    the replies received (as [`BotReply`] values) and the game's state after them;
//! 3. a footer, `{"type":"footer","steps":N,"outcome":[...]}`.
//!
//! A frame the worker wrote ends with its replies' clock readings,
//! `...,"state":{...},"times":[[WALL_US,CPU_US],...]}` (see [`ReplyTime`]): measurements,
//! not the game, so they are the one part of a replay that re-simulation does not
//! produce. Everything else, the *play*, is pure: re-simulating the header and the
//! frames' replies reproduces every line byte for byte once its readings are set
//! aside ([`untimed`]); [`verify`] does exactly that, and [`observations`] gives back on the way what one
//! seat was sent at every step (what the viewer's fog of war shows).
//!
//! Format 1, written before the header carried the state, is read too: its header has
//! no `state` and its frames and footer are those of format 2. Such replays are kept
//! (object stores, the fuzz corpus) and still verify byte for byte, the header written
//! again as format 1. A viewer of one has no state before step 1 (the replay viewer
//! says so and leaves out what the first frame changed). A header whose `state` does
//! not fit its format (absent in format 2, present in format 1) is malformed.

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use crate::{BotReply, Match, MatchSetup, PlayerOutcome, Seat, SetupError, StepError};

/// The replay format version written in every header.
pub const FORMAT_VERSION: u32 = 2;

/// The oldest format [`verify`] and [`observations`] read: format 1, whose header has
/// no state (see the module's documentation).
pub const OLDEST_FORMAT: u32 = 1;

/// One seat's reply within a frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatReply {
    /// Who replied.
    pub seat: Seat,
    /// What came back.
    pub reply: BotReply,
}

/// The header line; `S` is [`MatchSetup`] when read and `&MatchSetup` when written,
/// `T` the state before step 1: not read back (the re-simulated header is compared
/// with the file's instead), `&RawValue` when written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Header<S, T> {
    #[serde(rename = "type")]
    kind: HeaderKind,
    format: u32,
    setup: S,
    /// Absent in format 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<T>,
}

/// The `type` of a header line: only `"header"` reads as one.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum HeaderKind {
    Header,
}

impl<'a> Header<&'a MatchSetup, &'a RawValue> {
    /// The header of a replay in `format`: `state` is `None` in format 1 only.
    pub(crate) fn line(format: u32, setup: &'a MatchSetup, state: Option<&'a RawValue>) -> String {
        to_line(&Header { kind: HeaderKind::Header, format, setup, state })
    }
}

/// Frame lines, written field by field into a buffer the match reuses: the state is
/// written straight into the line, never built as a value of its own first.
pub(crate) mod frame {
    use crate::writer::{write_int, write_json_str};
    use crate::{BotReply, Seat};

    /// Appends `{"type":"frame","step":N,"replies":[...],"state":...}` to `out`;
    /// `state` appends the state's JSON. Each reply is written as serde writes a
    /// [`super::SeatReply`] (a unit test compares the two), which the verifier reads back.
    pub(crate) fn write(out: &mut Vec<u8>, step: u64, replies: &[(Seat, BotReply)], state: impl FnOnce(&mut Vec<u8>)) {
        out.extend_from_slice(b"{\"type\":\"frame\",\"step\":");
        write_int(out, step);
        out.extend_from_slice(b",\"replies\":[");
        for (index, (seat, reply)) in replies.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"seat\":");
            write_int(out, *seat);
            out.extend_from_slice(b",\"reply\":");
            match reply {
                BotReply::Line(text) => {
                    out.extend_from_slice(b"{\"line\":");
                    write_json_str(out, text);
                    out.push(b'}');
                }
                BotReply::Timeout => out.extend_from_slice(b"\"timeout\""),
                BotReply::Crashed => out.extend_from_slice(b"\"crashed\""),
                BotReply::Unreadable => out.extend_from_slice(b"\"unreadable\""),
                BotReply::OutputLimit => out.extend_from_slice(b"\"output_limit\""),
            }
            out.push(b'}');
        }
        out.extend_from_slice(b"],\"state\":");
        state(out);
        out.push(b'}');
    }

    /// A written line as text.
    pub(crate) fn text(line: &[u8]) -> &str {
        std::str::from_utf8(line).unwrap_or_else(|error| unreachable!("a frame is JSON, which is UTF-8: {error}"))
    }
}

/// How long one reply of a frame took: what the frame's `times` holds for it, as
/// `[WALL_US,CPU_US]` (`CPU_US` `null` when the bot's CPU time could not be read), or
/// `null` for a reply that was not timed (a seat the match no longer asks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplyTime {
    /// Wall-clock time from the request to the reply (to the deadline, for a timeout),
    /// in microseconds.
    pub wall_us: u64,
    /// CPU time the bot used meanwhile, in microseconds, if known.
    pub cpu_us: Option<u64>,
}

/// The key that starts a frame's clock readings, its last field.
const TIMES_KEY: &str = ",\"times\":[";

/// Appends `frame` (a frame line as the match wrote it) to `out` with `times` (one per
/// reply, in the order of its replies; `None` for an untimed one) as its last field.
pub fn write_timed(out: &mut String, frame: &str, times: &[Option<ReplyTime>]) {
    use std::fmt::Write;
    let Some(open) = frame.strip_suffix('}') else { unreachable!("a frame line is a JSON object: {frame}") };
    out.push_str(open);
    out.push_str(TIMES_KEY);
    for (index, time) in times.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        // Writing to a String cannot fail.
        let _ = match time {
            None => write!(out, "null"),
            Some(ReplyTime { wall_us, cpu_us: Some(cpu) }) => write!(out, "[{wall_us},{cpu}]"),
            Some(ReplyTime { wall_us, cpu_us: None }) => write!(out, "[{wall_us},null]"),
        };
    }
    out.push_str("]}");
}

/// A line without its clock readings: what the match itself wrote. Only a frame's
/// last field can be `times`, and it holds only numbers, commas, brackets and `null`,
/// so its key is found from the end: a reply or state that contains the same
/// characters is before it.
pub fn untimed(line: &str) -> std::borrow::Cow<'_, str> {
    let Some(start) = times_start(line) else { return line.into() };
    let mut play = String::with_capacity(start + 1);
    play.push_str(&line[..start]);
    play.push('}');
    play.into()
}

/// Where a frame line's clock readings begin (their `,"times":[` key), if it has any.
fn times_start(line: &str) -> Option<usize> {
    let start = line.rfind(TIMES_KEY)?;
    let readings = &line[start + TIMES_KEY.len()..];
    let only_readings = readings
        .strip_suffix("]}")
        .is_some_and(|inner| inner.bytes().all(|byte| byte.is_ascii_digit() || b",[]nul".contains(&byte)));
    only_readings.then_some(start)
}

/// Whether `original`, set aside its clock readings, is the line `produced`: what
/// [`untimed`] compares, without copying the line.
fn is_play_of(produced: &str, original: &str) -> bool {
    match times_start(original) {
        Some(start) => produced.strip_suffix('}') == Some(&original[..start]),
        None => produced == original,
    }
}

/// The clock readings of a frame line: one per reply, `None` for an untimed one; no
/// readings at all for a line that has none or that cannot be read.
pub fn times_of(line: &str) -> Vec<Option<ReplyTime>> {
    #[derive(Deserialize)]
    struct Times {
        #[serde(default)]
        times: Vec<Option<(u64, Option<u64>)>>,
    }
    serde_json::from_str::<Times>(line)
        .map(|parsed| {
            parsed.times.into_iter().map(|time| time.map(|(wall_us, cpu_us)| ReplyTime { wall_us, cpu_us })).collect()
        })
        .unwrap_or_default()
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "footer")]
pub(crate) struct Footer {
    pub(crate) steps: u64,
    pub(crate) outcome: Vec<PlayerOutcome>,
}

impl Footer {
    pub(crate) fn line(&self) -> String {
        to_line(self)
    }
}

/// The parts of a frame or footer line the verifier reads back.
#[derive(Deserialize)]
struct LineIn {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    replies: Vec<SeatReply>,
}

fn to_line<T: Serialize>(value: &T) -> String {
    // Serializing these types cannot fail: no maps with non-string keys, no floats.
    serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"type\":\"error\",\"error\":{:?}}}", e.to_string()))
}

/// How many bytes a reply's text takes in a frame: its JSON string, quotes and escapes
/// included (serde_json escapes `"`, `\\` and the C0 controls, and nothing else).
pub fn stored_len(text: &str) -> u64 {
    let escaped: u64 = text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum();
    escaped + 2
}

/// A replay that cannot be read, as opposed to one that reads but does not match.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file has no lines.
    #[error("the replay is empty")]
    Empty,
    /// A line is not what the format puts there.
    #[error("line {line}: {problem}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        problem: String,
    },
    /// The header describes a match that cannot be set up.
    #[error("line 1: {0}")]
    Setup(#[from] SetupError),
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// Frames re-simulated.
    pub frames: u64,
    /// The first line (1-based) where the re-simulation differs from the file, if any.
    pub first_difference: Option<usize>,
    /// SHA-256 of the re-simulated replay, as lowercase hex.
    pub sha256: String,
    /// The re-simulated outcome.
    pub outcome: Vec<PlayerOutcome>,
}

impl Verification {
    /// Whether the replay re-simulated byte for byte.
    pub fn matches(&self) -> bool {
        self.first_difference.is_none()
    }
}

/// SHA-256 of a replay's play as it is written, line by line, each line without its
/// clock readings ([`untimed`]): the replay's identity, the same for every play of the
/// match with the same replies however long they took.
#[derive(Default)]
pub struct LineHasher(Sha256);

impl LineHasher {
    /// Adds one line of play, without clock readings (a newline is added after it, as
    /// in the file).
    pub fn line(&mut self, line: &str) {
        self.0.update(line.as_bytes());
        self.0.update(b"\n");
    }

    /// The digest as lowercase hex.
    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// Lowercase hex SHA-256 of a replay's `lines` without their clock readings, each
/// followed by a newline: the [`LineHasher`] digest of the match that wrote them.
pub fn digest<'a>(lines: impl IntoIterator<Item = &'a str>) -> String {
    let mut hasher = LineHasher::default();
    lines.into_iter().for_each(|line| hasher.line(&untimed(line)));
    hasher.finish()
}

/// A replay being re-simulated line by line: the match stands where the file is read
/// to, and every line it produces is hashed and compared with the file's.
struct Resimulation<I> {
    lines: I,
    /// 1-based number of the last line read.
    number: usize,
    game: Match,
    hasher: LineHasher,
    first_difference: Option<usize>,
    saw_footer: bool,
}

/// The kind of line [`Resimulation::advance`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    Frame,
    Footer,
}

impl<I, S> Resimulation<I>
where
    I: Iterator<Item = S>,
    S: AsRef<str>,
{
    /// Reads the header and sets the match up.
    fn start(mut lines: I) -> Result<Self, ReplayError> {
        let first = lines.next().ok_or(ReplayError::Empty)?;
        let malformed = |problem: String| ReplayError::Malformed { line: 1, problem };
        let header: Header<MatchSetup, IgnoredAny> =
            serde_json::from_str(first.as_ref()).map_err(|e| malformed(format!("not a replay header: {e}")))?;
        let format = header.format;
        if !(OLDEST_FORMAT..=FORMAT_VERSION).contains(&format) {
            return Err(malformed(format!(
                "replay format {format} (this build reads {OLDEST_FORMAT} to {FORMAT_VERSION})"
            )));
        }
        if header.state.is_some() != (format >= 2) {
            let has = if header.state.is_some() { "has" } else { "has no" };
            return Err(malformed(format!("a format {format} header that {has} a state")));
        }
        let game = Match::new(header.setup)?;
        let mut replay = Resimulation {
            lines,
            number: 1,
            game,
            hasher: LineHasher::default(),
            first_difference: None,
            saw_footer: false,
        };
        // In the file's own format: a format 1 replay re-simulates to itself.
        let state = (format >= 2).then(|| replay.game.game().snapshot());
        let produced = Header::line(format, replay.game.setup(), state.as_deref());
        let same = produced == first.as_ref();
        replay.record(&produced, same);
        Ok(replay)
    }

    fn record(&mut self, produced: &str, same: bool) {
        record(&mut self.hasher, &mut self.first_difference, self.number, produced, same);
    }

    /// Re-simulates the next line; `None` once the file has no more.
    fn advance(&mut self) -> Result<Option<LineKind>, ReplayError> {
        let Some(line) = self.lines.next() else { return Ok(None) };
        self.number += 1;
        let line = line.as_ref();
        let number = self.number;
        let malformed = |problem: String| ReplayError::Malformed { line: number, problem };
        if self.saw_footer {
            return Err(malformed("a line after the footer".into()));
        }
        let parsed: LineIn = serde_json::from_str(line).map_err(|e| malformed(e.to_string()))?;
        match parsed.kind.as_str() {
            "frame" => {
                let replies = parsed.replies.into_iter().map(|r| (r.seat, r.reply)).collect();
                let produced = self.game.submit(replies).map_err(|e: StepError| malformed(e.to_string()))?;
                // Only a frame has clock readings to set aside.
                let same = is_play_of(produced, line);
                record(&mut self.hasher, &mut self.first_difference, number, produced, same);
                Ok(Some(LineKind::Frame))
            }
            "footer" => {
                let produced = self.game.footer_line();
                self.record(&produced, produced == line);
                self.saw_footer = true;
                Ok(Some(LineKind::Footer))
            }
            other => Err(malformed(format!("unexpected line type {other:?}"))),
        }
    }

    /// The error of a file that ended without its footer.
    fn no_footer(&self) -> ReplayError {
        ReplayError::Malformed { line: self.game.steps() as usize + 2, problem: "no footer".into() }
    }

    /// What the whole file re-simulated to; an error if it had no footer.
    fn finish(self) -> Result<Verification, ReplayError> {
        if !self.saw_footer {
            return Err(self.no_footer());
        }
        Ok(Verification {
            frames: self.game.steps(),
            first_difference: self.first_difference,
            sha256: self.hasher.finish(),
            outcome: self.game.outcome(),
        })
    }
}

/// Hashes the line `produced` as line `number` and notes it as the first difference
/// unless it is the `same` as the file's.
fn record(hasher: &mut LineHasher, first_difference: &mut Option<usize>, number: usize, produced: &str, same: bool) {
    hasher.line(produced);
    if first_difference.is_none() && !same {
        *first_difference = Some(number);
    }
}

/// Re-simulates a replay from its header and its frames' replies, comparing every
/// line it produces with the file's.
pub fn verify<I, S>(lines: I) -> Result<Verification, ReplayError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut replay = Resimulation::start(lines.into_iter())?;
    while replay.advance()?.is_some() {}
    replay.finish()
}

/// What one seat was sent at one step of a replay: a line of the observations API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepObservation {
    /// The 0-based index of the step's frame in the replay.
    pub index: u64,
    /// The step's number, as its frame records it (from 1).
    pub step: u64,
    /// The request the seat was sent before this step was played, exactly as sent;
    /// `None` when the step did not ask the seat.
    pub observation: Option<String>,
}

/// Why [`observations`] has none to give.
#[derive(Debug, thiserror::Error)]
pub enum ObservationError {
    /// The replay cannot be read.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The match has no such seat.
    #[error("the match has {seats} seats; there is no seat {seat}")]
    NoSeat {
        /// The seat asked for.
        seat: Seat,
        /// How many seats the match has.
        seats: usize,
    },
    /// The re-simulation differs from the file, so what it would send is not what the
    /// bots were sent (a replay of another engine version, or a damaged one).
    #[error("line {line} differs from its re-simulation: the replay does not match this engine")]
    Differs {
        /// The first differing line, 1-based.
        line: usize,
    },
}

/// Re-simulates a replay and gives, for each of its frames, what `seat` was sent at
/// that step (see [`StepObservation`]). The replay must re-simulate byte for byte.
pub fn observations<I, S>(lines: I, seat: Seat) -> Result<Vec<StepObservation>, ObservationError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    Observations::start(lines, seat)?.collect()
}

/// [`observations`] one step at a time, reading the replay only as far as the step
/// given: memory stays that of one line and the match, however long the replay.
/// Every step is given only once its frame re-simulated byte for byte; at the first
/// line that differs, or cannot be read, it gives that error and ends.
pub struct Observations<I> {
    replay: Resimulation<I>,
    seat: Seat,
    ended: bool,
}

impl<I, S> Observations<I>
where
    I: Iterator<Item = S>,
    S: AsRef<str>,
{
    /// Reads the header of `lines` and checks that the match has `seat`.
    pub fn start(lines: impl IntoIterator<IntoIter = I>, seat: Seat) -> Result<Self, ObservationError> {
        let replay = Resimulation::start(lines.into_iter())?;
        let seats = replay.game.setup().players.len();
        if seat >= seats {
            return Err(ObservationError::NoSeat { seat, seats });
        }
        Ok(Observations { replay, seat, ended: false })
    }

    fn step(&mut self) -> Result<Option<StepObservation>, ObservationError> {
        loop {
            // The runner sends exactly `Match::observation`; this is the same call.
            let seat = self.seat;
            let game = &self.replay.game;
            let observation = game.to_act().contains(&seat).then(|| game.observation(seat));
            let kind = self.replay.advance()?;
            if let Some(line) = self.replay.first_difference {
                return Err(ObservationError::Differs { line });
            }
            match kind {
                Some(LineKind::Frame) => {
                    let step = self.replay.game.steps();
                    return Ok(Some(StepObservation { index: step - 1, step, observation }));
                }
                Some(LineKind::Footer) => {}
                None => {
                    if !self.replay.saw_footer {
                        return Err(self.replay.no_footer().into());
                    }
                    return Ok(None);
                }
            }
        }
    }
}

impl<I, S> Iterator for Observations<I>
where
    I: Iterator<Item = S>,
    S: AsRef<str>,
{
    type Item = Result<StepObservation, ObservationError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        let step = self.step().transpose();
        self.ended = !matches!(step, Some(Ok(_)));
        step
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::value::RawValue;

    use super::{SeatReply, frame, stored_len};
    use crate::BotReply;

    /// The frame as serde writes it from a struct: what `frame::write` must equal.
    #[derive(Serialize)]
    #[serde(tag = "type", rename = "frame")]
    struct FrameDoc<'a> {
        step: u64,
        replies: &'a [SeatReply],
        state: &'a RawValue,
    }

    #[test]
    fn a_frame_is_written_as_serde_writes_the_frame_struct() {
        let state = RawValue::from_string(r#"{"grid":"..r\"b","turn":3}"#.into()).expect("JSON");
        let replies = [
            (0, BotReply::Line("[{\"from\":1,\"to\":2}]\u{0}\t é".into())),
            (2, BotReply::Timeout),
            (3, BotReply::Crashed),
            (5, BotReply::Unreadable),
            (7, BotReply::OutputLimit),
        ];
        for count in 0..=replies.len() {
            let replies = &replies[..count];
            let mut line = Vec::new();
            frame::write(&mut line, 42, replies, |out| out.extend_from_slice(state.get().as_bytes()));
            let seat_replies: Vec<SeatReply> =
                replies.iter().map(|(seat, reply)| SeatReply { seat: *seat, reply: reply.clone() }).collect();
            let expected = serde_json::to_string(&FrameDoc { step: 42, replies: &seat_replies, state: &state });
            assert_eq!(frame::text(&line), expected.expect("serializes"));
        }
    }

    proptest::proptest! {
        /// Every text a bot can send is escaped into the frame as serde escapes it.
        #[test]
        fn any_reply_text_is_written_as_serde_writes_it(text in "(?s).{0,40}", control in 0u8..0x20) {
            let text = format!("{text}{}{text}", char::from(control));
            let state = RawValue::from_string("null".into()).expect("JSON");
            let reply = BotReply::Line(text);
            let mut line = Vec::new();
            frame::write(&mut line, 1, &[(0, reply.clone())], |out| out.extend_from_slice(b"null"));
            let expected = serde_json::to_string(&FrameDoc { step: 1, replies: &[SeatReply { seat: 0, reply }], state: &state });
            proptest::prop_assert_eq!(frame::text(&line), expected.expect("serializes"));
        }
    }

    #[test]
    fn a_replys_stored_length_is_its_json_strings() {
        let all_bytes: String = (0u8..0x80).map(char::from).collect();
        for text in ["", "north", "\"quoted\" \\ back", "tab\tnew\nline\r\u{0}\u{1f}\u{7f}", "é 東 🦀", &all_bytes]
        {
            let json = serde_json::to_string(text).expect("json");
            assert_eq!(stored_len(text), json.len() as u64, "{text:?}");
        }
    }
}
