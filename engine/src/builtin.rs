//! Bots compiled into the engine. They read the same observation text an external bot
//! gets and answer with the same reply text, so they exercise the wire codecs too.

use crate::{GameKind, GameRng, Seat, botwars, maze, ostibot, vindinium};

/// A bot that plays inside the worker process.
pub trait BuiltinBot: Send {
    /// The reply to one observation, exactly as an external bot would write it.
    fn reply(&mut self, observation: &str) -> String;
}

/// A built-in bot name that the game does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no built-in {game} bot named {name:?}: there are {}", names(*game).join(", "))]
pub struct UnknownBuiltin {
    /// The game.
    pub game: GameKind,
    /// The name asked for.
    pub name: String,
}

/// The built-in bots of `game`.
pub fn names(game: GameKind) -> &'static [&'static str] {
    match game {
        GameKind::Vindinium => vindinium::bots::NAMES,
        GameKind::Botwars => botwars::bots::NAMES,
        GameKind::Ostibot => ostibot::bots::NAMES,
        GameKind::Maze => maze::bots::NAMES,
    }
}

/// The built-in bot `name` of `game`, playing `seat` of the match with `seed`. Its
/// randomness comes from its own stream of the match seed, so it plays the same match
/// the same way every time.
pub fn create(game: GameKind, name: &str, seed: u64, seat: Seat) -> Result<Box<dyn BuiltinBot>, UnknownBuiltin> {
    let rng = GameRng::new(seed, GameRng::BOTS + seat as u64);
    let bot = match game {
        GameKind::Vindinium => vindinium::bots::create(name, rng),
        GameKind::Botwars => botwars::bots::create(name, rng),
        GameKind::Ostibot => ostibot::bots::create(name, rng),
        GameKind::Maze => maze::bots::create(name, rng),
    };
    bot.ok_or_else(|| UnknownBuiltin { game, name: name.to_owned() })
}

/// The built-in bot that fills empty seats of `game`, where its rules say so
/// (Vindinium plays with four heroes; missing ones are random bots, as in training).
pub fn seat_filler(game: GameKind) -> Option<&'static str> {
    match game {
        GameKind::Vindinium => Some("random"),
        GameKind::Botwars | GameKind::Ostibot | GameKind::Maze => None,
    }
}
