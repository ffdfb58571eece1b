//! The rules: the tunable ones (turn limit and reply deadlines, the original's values
//! as defaults) and the original's fixed constants (`Constants.java`).

use serde::{Deserialize, Serialize};

use crate::game::check_rule;
use crate::{REPLY_TIMEOUT_MS, TURNS};

/// The hero's hp at the start, and its most.
pub const HERO_MAX_HP: i32 = 20;
/// How far the hero sees (Chebyshev; walls do not block).
pub const HERO_FOV: i32 = 3;
/// Hp a potion gives.
pub const POTION_HP: i32 = 10;
/// Score for a treasure.
pub const TREASURE_SCORE: i64 = 100;
/// Score for reaching the exit.
pub const EXIT_SCORE: i64 = 10_000;
/// Score added when the hero dies.
pub const DEATH_SCORE: i64 = -1_000;
/// The score of a game that ends in an error (an invalid command or a timeout).
pub const ERROR_SCORE: i64 = -10_000;

/// The tunable rules, with the original's values as defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct MazeRules {
    /// Hero actions before a game ends (the monsters do not act after the last one).
    pub max_turns: u32,
    /// Time for the first reply.
    pub first_turn_timeout_ms: u64,
    /// Time for every later reply.
    pub turn_timeout_ms: u64,
}

impl Default for MazeRules {
    fn default() -> Self {
        MazeRules { max_turns: 150, first_turn_timeout_ms: 1000, turn_timeout_ms: 50 }
    }
}

impl MazeRules {
    /// `Ok` when every key is within its range, else what is wrong, naming the key.
    pub(crate) fn check(&self) -> Result<(), String> {
        check_rule("maxTurns", u64::from(self.max_turns), TURNS)
            .and_then(|()| check_rule("firstTurnTimeoutMs", self.first_turn_timeout_ms, REPLY_TIMEOUT_MS))
            .and_then(|()| check_rule("turnTimeoutMs", self.turn_timeout_ms, REPLY_TIMEOUT_MS))
    }
}
