//! The tunable rules: the original arena's values as defaults, and the checks of
//! every key.

use serde::{Deserialize, Serialize};

use crate::game::check_rule;
use crate::{REPLY_TIMEOUT_MS, TURNS};

/// The tunable rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct VindiniumRules {
    /// Single moves in a match (300 per hero in the original arena).
    pub max_turns: u64,
    /// Time a bot has for each move.
    pub move_timeout_ms: u64,
}

impl Default for VindiniumRules {
    fn default() -> Self {
        VindiniumRules { max_turns: 1200, move_timeout_ms: 1000 }
    }
}

impl VindiniumRules {
    /// `Ok` when every key is within its range, else what is wrong, naming the key.
    pub(super) fn check(&self) -> Result<(), String> {
        check_rule("maxTurns", self.max_turns, TURNS)
            .and_then(|()| check_rule("moveTimeoutMs", self.move_timeout_ms, REPLY_TIMEOUT_MS))
    }
}
