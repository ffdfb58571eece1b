//! Skookum Botwars, as the original server plays it (`../shared/games/botwars.md`).
//!
//! The grid is a string of cells, index `y * cols + x`: `.` empty, `r` and `b` the two
//! sides' botlets, `*` energy, `x` and `X` botlets of side r and b that died last turn.
//! Both sides move at once; a malformed reply, a timeout or a dead bot disqualifies
//! its side and ends the match.

pub mod bots;
mod state;

pub use state::*;
