//! The tunable rules of Skookum Botwars and the checks of every key.

use serde::{Deserialize, Serialize};

use crate::game::check_rule;
use crate::{GameKind, REPLY_TIMEOUT_MS, SetupError, TURNS};

/// The tunable rules; defaults are the README's (decision S-1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct BotwarsRules {
    /// Grid rows.
    pub rows: usize,
    /// Grid columns.
    pub cols: usize,
    /// Turns before the match ends.
    pub max_turns: u32,
    /// Energy appears after turns 1, 1 + n, 1 + 2n, ...; 0 turns energy off.
    pub energy_every: u32,
    /// Time a bot has to reply; a late bot is disqualified.
    pub reply_timeout_ms: u64,
}

impl Default for BotwarsRules {
    fn default() -> Self {
        BotwarsRules { rows: 20, cols: 20, max_turns: 100, energy_every: 3, reply_timeout_ms: 5000 }
    }
}

impl BotwarsRules {
    /// The number of cells of the grid, once every key is checked: the grid's size
    /// first, before anything is allocated for it (a replay's header may ask for any
    /// size).
    pub(crate) fn check(&self) -> Result<usize, SetupError> {
        let rules_error = |problem: String| SetupError::Rules { game: GameKind::Botwars, problem };
        if !(3..=100).contains(&self.rows) || !(3..=100).contains(&self.cols) || self.rows * self.cols < 10 {
            return Err(rules_error(format!("rows and cols must be 3 to 100, got {}x{}", self.rows, self.cols)));
        }
        check_rule("maxTurns", u64::from(self.max_turns), TURNS)
            .and_then(|()| check_rule("energyEvery", u64::from(self.energy_every), 0..=*TURNS.end()))
            .and_then(|()| check_rule("replyTimeoutMs", self.reply_timeout_ms, REPLY_TIMEOUT_MS))
            .map_err(rules_error)?;
        Ok(self.rows * self.cols)
    }
}
