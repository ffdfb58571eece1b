//! Bots compiled into the engine. They read the game's typed state, only what their
//! seat's observation holds, and answer with the reply text an external bot would
//! write: their replies go through the games' reply parsers and into replays like any
//! other, but no observation is written for them.

use std::any::Any;
use std::marker::PhantomData;

use crate::game_bot::GameBot;
use crate::{AnyGame, Game, GameKind, GameRng, Seat, botwars, maze, ostibot, vindinium};

/// A bot that plays inside the worker process.
pub trait BuiltinBot: Send {
    /// `seat`'s reply to this step of `game`, exactly as an external bot would write it.
    /// `game` is the match: an [`AnyGame`], or the game itself (a `Botwars`, ...).
    fn reply(&mut self, game: &dyn Any, seat: Seat) -> String;
}

/// A [`GameBot`] of game `G` as a [`BuiltinBot`]: asked about a match of another game
/// (a caller's mistake), it replies with nothing, which every game reads as a
/// malformed reply.
struct ForGame<G> {
    bot: Box<dyn GameBot<G>>,
    game: PhantomData<fn(&G)>,
}

impl<G: Game + 'static> BuiltinBot for ForGame<G> {
    fn reply(&mut self, game: &dyn Any, seat: Seat) -> String {
        let game = game.downcast_ref::<G>().or_else(|| game.downcast_ref::<AnyGame>().and_then(AnyGame::get::<G>));
        game.map(|game| self.bot.reply(game, seat)).unwrap_or_default()
    }
}

/// `bot` of game `G`, boxed as a [`BuiltinBot`].
fn boxed<G: Game + 'static>(bot: Box<dyn GameBot<G>>) -> Box<dyn BuiltinBot> {
    Box::new(ForGame { bot, game: PhantomData })
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
        GameKind::Vindinium => vindinium::bots::create(name, rng).map(boxed),
        GameKind::Botwars => botwars::bots::create(name, rng).map(boxed),
        GameKind::Ostibot => ostibot::bots::create(name, rng).map(boxed),
        GameKind::Maze => maze::bots::create(name, rng).map(boxed),
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
