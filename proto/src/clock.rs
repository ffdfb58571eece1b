use serde::{Deserialize, Serialize};

use crate::limits;

/// How a match times its bots' moves: which clock a move's budget is counted on, the
/// bank of extra time each bot has, and whether idle bots may think.
///
/// A tournament sets it (`clock`, `time_bank_ms`, `wall_backstop`, `ponder`); a job
/// carries it only when it is not the default, so jobs that do not ask read as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MoveClock {
    /// The clock a move's budget (the game's reply deadline) is counted on.
    pub kind: ClockKind,
    /// Milliseconds each bot may spend, over the whole match, beyond its moves'
    /// budgets: a move over budget draws on the bank before it counts as timed out.
    /// Counted on the same clock as the moves.
    pub time_bank_ms: u64,
    /// With the CPU clock, how many times a move's budget (and bank) it may take in
    /// wall-clock time before it times out whatever its CPU time: what ends a bot that
    /// sleeps, blocks or is frozen out of the CPU.
    pub wall_backstop: u32,
    /// Whether a bot keeps running between its turns (in games where seats take turns)
    /// to think ahead. By default it is frozen from its reply to its next request, so
    /// that it takes nothing from the bot whose turn it is.
    pub ponder: bool,
}

/// The clock a move's budget is counted on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockKind {
    /// Wall-clock time from the request to the reply: what the original games count,
    /// and what a busy machine lengthens.
    #[default]
    Wall,
    /// The CPU time the bot's processes use between the request and the reply: the
    /// same on an idle and a loaded machine. A wall-clock backstop still applies.
    Cpu,
}

impl ClockKind {
    /// Its name in tournament files and messages.
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::Wall => "wall",
            ClockKind::Cpu => "cpu",
        }
    }
}

impl Default for MoveClock {
    fn default() -> Self {
        MoveClock {
            kind: ClockKind::Wall,
            time_bank_ms: 0,
            wall_backstop: limits::WALL_BACKSTOP.default,
            ponder: false,
        }
    }
}

impl MoveClock {
    /// Whether it is the default (and so left out of a job).
    pub fn is_default(&self) -> bool {
        *self == MoveClock::default()
    }

    /// Checks every number is within bounds, naming the one that is not.
    pub fn check(&self) -> Result<(), ClockProblem> {
        let problem = |error: limits::OutOfBounds| ClockProblem { key: error.key, problem: error.problem() };
        limits::TIME_BANK_MS.check(self.time_bank_ms).map_err(problem)?;
        limits::WALL_BACKSTOP.check(self.wall_backstop).map_err(problem)?;
        Ok(())
    }

    /// The most wall-clock time a move with `budget_ms` of budget and `bank_ms` left
    /// in its bank may take.
    pub fn wall_limit_ms(&self, budget_ms: u64, bank_ms: u64) -> u64 {
        let allowed = budget_ms.saturating_add(bank_ms);
        match self.kind {
            ClockKind::Wall => allowed,
            ClockKind::Cpu => allowed.saturating_mul(u64::from(self.wall_backstop)),
        }
    }
}

/// A [`MoveClock`] number out of bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} {problem}")]
pub struct ClockProblem {
    /// The setting, as a tournament names it.
    pub key: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_clock_is_the_wall_with_no_bank_and_frozen_idle_bots() {
        let clock: MoveClock = serde_json::from_str("{}").expect("all defaults");
        assert_eq!(clock, MoveClock::default());
        assert!(clock.is_default());
        assert_eq!(clock.wall_limit_ms(50, 0), 50);
        let cpu: MoveClock = serde_json::from_str(r#"{"kind":"cpu","time_bank_ms":100}"#).expect("valid");
        assert_eq!(cpu.wall_limit_ms(50, 100), 750);
        assert!(serde_json::from_str::<MoveClock>(r#"{"kind":"sundial"}"#).is_err());
        assert!(serde_json::from_str::<MoveClock>(r#"{"bank":1}"#).is_err());
    }

    #[test]
    fn numbers_out_of_bounds_are_named() {
        let bank =
            MoveClock { time_bank_ms: limits::TIME_BANK_MS.range.max.expect("a ceiling") + 1, ..MoveClock::default() };
        assert_eq!(bank.check().expect_err("too much").key, "time_bank_ms");
        let backstop = MoveClock { wall_backstop: 0, ..MoveClock::default() };
        let problem = backstop.check().expect_err("zero");
        assert_eq!(problem.to_string(), "wall_backstop must be 1 to 100, not 0");
        assert!(MoveClock::default().check().is_ok());
    }
}
