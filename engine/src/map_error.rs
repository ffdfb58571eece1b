//! What is wrong with a map file: one shape for every game that has maps.

use std::fmt;

/// A map file that breaks its game's format or map rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapError {
    /// 1-based line and column (in characters) of the offending character, where the
    /// problem has one; `None` for a problem of the whole map.
    pub at: Option<(usize, usize)>,
    /// What is wrong.
    pub problem: String,
}

impl MapError {
    /// A problem at `line`, `column` (both 1-based).
    pub fn at(line: usize, column: usize, problem: impl Into<String>) -> Self {
        MapError { at: Some((line, column)), problem: problem.into() }
    }

    /// A problem of the whole map.
    pub fn whole(problem: impl Into<String>) -> Self {
        MapError { at: None, problem: problem.into() }
    }
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some((line, column)) => write!(f, "line {line}, column {column}: {}", self.problem),
            None => f.write_str(&self.problem),
        }
    }
}

impl std::error::Error for MapError {}
