//! The trait of a built-in bot of one game: what every game's `bots.rs` implements.
//! The `builtin` module names and creates them, as the `BuiltinBot`s callers hold.

use crate::Seat;

/// A built-in bot of one game, reading that game's state.
pub(crate) trait GameBot<G>: Send {
    /// `seat`'s reply to this step of `game`.
    fn reply(&mut self, game: &G, seat: Seat) -> String;
}
