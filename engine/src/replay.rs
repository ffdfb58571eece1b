//! The replay format: JSON Lines, one object per line.
//!
//! 1. a header, `{"type":"header","format":1,"setup":{...}}`: the [`MatchSetup`];
//! 2. one frame per step, `{"type":"frame","step":N,"replies":[...],"state":{...}}`:
//!    the replies received (as [`BotReply`] values) and the game's state after them;
//! 3. a footer, `{"type":"footer","steps":N,"outcome":[...]}`.
//!
//! Re-simulating the header and the frames' replies reproduces the file byte for byte;
//! [`verify`] does exactly that.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use crate::{BotReply, Match, MatchSetup, PlayerOutcome, Seat, SetupError, StepError};

/// The replay format version written in every header.
pub const FORMAT_VERSION: u32 = 1;

/// One seat's reply within a frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatReply {
    /// Who replied.
    pub seat: Seat,
    /// What came back.
    pub reply: BotReply,
}

/// The header line; `S` is [`MatchSetup`] when read and `&MatchSetup` when written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Header<S> {
    #[serde(rename = "type")]
    kind: HeaderKind,
    format: u32,
    setup: S,
}

/// The `type` of a header line: only `"header"` reads as one.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum HeaderKind {
    Header,
}

impl Header<&MatchSetup> {
    pub(crate) fn line(setup: &MatchSetup) -> String {
        to_line(&Header { kind: HeaderKind::Header, format: FORMAT_VERSION, setup })
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "frame")]
pub(crate) struct FrameOut<'a> {
    pub(crate) step: u64,
    pub(crate) replies: &'a [SeatReply],
    pub(crate) state: &'a RawValue,
}

impl FrameOut<'_> {
    pub(crate) fn line(&self) -> String {
        to_line(self)
    }
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

/// SHA-256 of a replay as it is written, line by line: the replay's identity.
#[derive(Default)]
pub struct LineHasher(Sha256);

impl LineHasher {
    /// Adds one line (a newline is added after it, as in the file).
    pub fn line(&mut self, line: &str) {
        self.0.update(line.as_bytes());
        self.0.update(b"\n");
    }

    /// The digest as lowercase hex.
    pub fn finish(self) -> String {
        self.0.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
    }
}

/// Lowercase hex SHA-256 of `lines`, each followed by a newline, as the replay file holds them.
pub fn digest<'a>(lines: impl IntoIterator<Item = &'a str>) -> String {
    let mut hasher = LineHasher::default();
    lines.into_iter().for_each(|line| hasher.line(line));
    hasher.finish()
}

/// Re-simulates a replay from its header and its frames' replies, comparing every
/// line it produces with the file's.
pub fn verify<I, S>(lines: I) -> Result<Verification, ReplayError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut lines = lines.into_iter().enumerate().map(|(index, line)| (index + 1, line));
    let (_, first) = lines.next().ok_or(ReplayError::Empty)?;
    let header: Header<MatchSetup> = serde_json::from_str(first.as_ref())
        .map_err(|e| ReplayError::Malformed { line: 1, problem: format!("not a replay header: {e}") })?;
    if header.format != FORMAT_VERSION {
        return Err(ReplayError::Malformed {
            line: 1,
            problem: format!("replay format {} (this build reads {FORMAT_VERSION})", header.format),
        });
    }
    let mut game = Match::new(header.setup)?;
    let mut hasher = LineHasher::default();
    let mut first_difference = None;
    let mut record = |number: usize, produced: &str, original: &str| {
        hasher.line(produced);
        if first_difference.is_none() && produced != original {
            first_difference = Some(number);
        }
    };
    record(1, &game.header_line(), first.as_ref());

    let mut saw_footer = false;
    for (number, line) in lines {
        let line = line.as_ref();
        let malformed = |problem: String| ReplayError::Malformed { line: number, problem };
        if saw_footer {
            return Err(malformed("a line after the footer".into()));
        }
        let parsed: LineIn = serde_json::from_str(line).map_err(|e| malformed(e.to_string()))?;
        match parsed.kind.as_str() {
            "frame" => {
                let replies = parsed.replies.into_iter().map(|r| (r.seat, r.reply)).collect();
                let produced = game.submit(replies).map_err(|e: StepError| malformed(e.to_string()))?;
                record(number, &produced, line);
            }
            "footer" => {
                record(number, &game.footer_line(), line);
                saw_footer = true;
            }
            other => return Err(malformed(format!("unexpected line type {other:?}"))),
        }
    }
    if !saw_footer {
        return Err(ReplayError::Malformed { line: game.steps() as usize + 2, problem: "no footer".into() });
    }
    Ok(Verification { frames: game.steps(), first_difference, sha256: hasher.finish(), outcome: game.outcome() })
}
