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
