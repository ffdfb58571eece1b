use serde::{Deserialize, Serialize};

/// How a bot ended a match, from the farm's point of view.
///
/// The game's rules decide what each status costs (a Vindinium hero that times out
/// keeps playing `Stay`; a Botwars side that times out is disqualified); this only
/// records what happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlayerStatus {
    /// Played to the end (illegal moves that the rules ignore included).
    Ok,
    /// Missed a reply deadline.
    TimedOut,
    /// Went away: the process exited, its pipes closed or its transport failed.
    Crashed,
    /// Removed by the rules for a malformed reply.
    Disqualified,
    /// Removed by the farm: its replies pushed the match's replay past the worker's
    /// size limit (`max_replay_mib`). The game treats it as a bot that crashed.
    OutputLimit,
}

impl PlayerStatus {
    /// Every status, in declaration order.
    pub const ALL: [PlayerStatus; 5] = [
        PlayerStatus::Ok,
        PlayerStatus::TimedOut,
        PlayerStatus::Crashed,
        PlayerStatus::Disqualified,
        PlayerStatus::OutputLimit,
    ];

    /// The status's name, as it is serialized (`timed_out`, `output_limit`).
    pub fn name(self) -> &'static str {
        match self {
            PlayerStatus::Ok => "ok",
            PlayerStatus::TimedOut => "timed_out",
            PlayerStatus::Crashed => "crashed",
            PlayerStatus::Disqualified => "disqualified",
            PlayerStatus::OutputLimit => "output_limit",
        }
    }

    /// The status named `name` ([`PlayerStatus::name`]), if any.
    pub fn from_name(name: &str) -> Option<PlayerStatus> {
        PlayerStatus::ALL.into_iter().find(|status| status.name() == name)
    }
}

/// One seat's final standing in a match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlayerOutcome {
    /// The game's score for this seat (Vindinium gold, Botwars botlets alive).
    pub score: i64,
    /// 1 for the winner; seats that tie share a rank.
    pub rank: u32,
    /// How the bot ended the match.
    pub status: PlayerStatus,
}

/// Why a bot failed in a match, for its author: a bot that crashed, timed out, was
/// disqualified or ran out of memory (the worker's `crash` module writes it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrashReport {
    /// Why, in one line: "exited with code 1 before its first reply", "killed by
    /// signal 11 (SIGSEGV) at request 4", "did not answer its first request within
    /// 1000 ms".
    pub reason: String,
    /// The last lines of its stderr, at most [`CrashReport::TAIL_LINES`], each cut at
    /// [`CrashReport::LINE_CHARS`] characters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
    /// The start of the request it did not answer (at most
    /// [`CrashReport::REQUEST_CHARS`] characters), if one was waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unanswered: Option<String>,
}

impl CrashReport {
    /// Lines of stderr a report keeps.
    pub const TAIL_LINES: usize = 20;
    /// Characters of each stderr line kept.
    pub const LINE_CHARS: usize = 300;
    /// Characters of the unanswered request kept.
    pub const REQUEST_CHARS: usize = 500;
}
