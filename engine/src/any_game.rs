//! [`AnyGame`]: one type over every game, for code that picks the game at run time
//! (the match driver, the runner); each call goes to the game's own [`Game`] impl.

use std::any::Any;
use std::ops::RangeInclusive;

use serde_json::value::RawValue;

use crate::{BotReply, Deadlines, Game, GameKind, GameRng, PlayerOutcome, Seat, SetupError};
use crate::{botwars, maze, ostibot, vindinium};

/// Any game, for code that picks the game at run time.
#[derive(Debug, Clone)]
pub enum AnyGame {
    /// A Vindinium match.
    Vindinium(vindinium::Vindinium),
    /// A Skookum Botwars match.
    Botwars(botwars::Botwars),
    /// An Ostibot match.
    Ostibot(ostibot::Ostibot),
    /// A Maze match.
    Maze(maze::Maze),
}

impl From<vindinium::Vindinium> for AnyGame {
    fn from(game: vindinium::Vindinium) -> Self {
        AnyGame::Vindinium(game)
    }
}

impl From<botwars::Botwars> for AnyGame {
    fn from(game: botwars::Botwars) -> Self {
        AnyGame::Botwars(game)
    }
}

impl From<ostibot::Ostibot> for AnyGame {
    fn from(game: ostibot::Ostibot) -> Self {
        AnyGame::Ostibot(game)
    }
}

impl From<maze::Maze> for AnyGame {
    fn from(game: maze::Maze) -> Self {
        AnyGame::Maze(game)
    }
}

/// Calls `$body` with `$game` bound to the concrete game inside an [`AnyGame`].
macro_rules! with_game {
    ($any:expr, $game:ident => $body:expr) => {
        match $any {
            AnyGame::Vindinium($game) => $body,
            AnyGame::Botwars($game) => $body,
            AnyGame::Ostibot($game) => $body,
            AnyGame::Maze($game) => $body,
        }
    };
}

/// Calls `$body` with `$G` bound to the [`Game`] type of a [`GameKind`].
macro_rules! with_game_type {
    ($kind:expr, $G:ident => $body:expr) => {
        match $kind {
            GameKind::Vindinium => {
                type $G = vindinium::Vindinium;
                $body
            }
            GameKind::Botwars => {
                type $G = botwars::Botwars;
                $body
            }
            GameKind::Ostibot => {
                type $G = ostibot::Ostibot;
                $body
            }
            GameKind::Maze => {
                type $G = maze::Maze;
                $body
            }
        }
    };
}

fn parse_rules<G: Game>(overrides: &serde_json::Value) -> Result<G::Rules, SetupError> {
    let rules_error = |problem: String| SetupError::Rules { game: G::KIND, problem };
    let mut merged = serde_json::to_value(G::Rules::default()).map_err(|e| rules_error(e.to_string()))?;
    match (overrides, &mut merged) {
        (serde_json::Value::Null, _) => {}
        (serde_json::Value::Object(given), serde_json::Value::Object(defaults)) => {
            for (key, value) in given {
                defaults.insert(key.clone(), value.clone());
            }
        }
        (other, _) => return Err(rules_error(format!("expected a table of rules, got {other}"))),
    }
    serde_json::from_value(merged).map_err(|e| rules_error(e.to_string()))
}

fn step<G: Game>(game: &mut G, replies: &[(Seat, BotReply)], rng: &mut GameRng) {
    let actions = replies.iter().map(|(seat, reply)| (*seat, game.parse_reply(*seat, reply))).collect();
    game.apply(actions, rng);
}

impl AnyGame {
    /// How many bots can sit at a match of `kind`.
    pub fn seats(kind: GameKind) -> RangeInclusive<usize> {
        with_game_type!(kind, G => G::seats())
    }

    /// The rules of `kind` with `overrides` (a JSON object, or null) applied to its
    /// defaults, in full. Unknown keys and wrong types are errors that name the key.
    pub fn resolve_rules(kind: GameKind, overrides: &serde_json::Value) -> Result<serde_json::Value, SetupError> {
        with_game_type!(kind, G => {
            let rules = parse_rules::<G>(overrides)?;
            serde_json::to_value(rules).map_err(|e| SetupError::Rules { game: kind, problem: e.to_string() })
        })
    }

    /// A match's rule overrides: `kind`'s preset (if one is named), then `overrides` on
    /// top of it, key by key. Fails only on an unknown preset.
    pub fn overrides(
        kind: GameKind,
        preset: Option<&str>,
        overrides: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, SetupError> {
        let mut rules = match preset {
            Some(name) => Self::preset(kind, name)?,
            None => serde_json::Value::Object(serde_json::Map::new()),
        };
        if let serde_json::Value::Object(merged) = &mut rules {
            merged.extend(overrides);
        }
        Ok(rules)
    }

    /// The overrides of `kind`'s preset `name` (see [`Game::PRESETS`]).
    pub fn preset(kind: GameKind, name: &str) -> Result<serde_json::Value, SetupError> {
        let presets = with_game_type!(kind, G => G::PRESETS);
        let rules_error = |problem: String| SetupError::Rules { game: kind, problem };
        match presets.iter().find(|(preset, _)| *preset == name) {
            Some((_, overrides)) => serde_json::from_str(overrides).map_err(|e| rules_error(e.to_string())),
            None if presets.is_empty() => Err(rules_error(format!("unknown preset {name:?}: {kind} has no presets"))),
            None => {
                let known: Vec<&str> = presets.iter().map(|(preset, _)| *preset).collect();
                Err(rules_error(format!("unknown preset {name:?}: expected one of {}", known.join(", "))))
            }
        }
    }

    /// The reply deadlines of `kind` under `rules` (resolved as by [`AnyGame::resolve_rules`]).
    pub fn deadlines(kind: GameKind, rules: &serde_json::Value) -> Result<Deadlines, SetupError> {
        with_game_type!(kind, G => Ok(G::deadlines(&parse_rules::<G>(rules)?)))
    }

    /// The map a match of `kind` plays when none is named: generated from `seed` for
    /// games that generate maps, `None` for games without maps.
    pub fn default_map(kind: GameKind, rules: &serde_json::Value, seed: u64) -> Result<Option<String>, SetupError> {
        let mut rng = GameRng::new(seed, GameRng::MAP);
        with_game_type!(kind, G => G::default_map(&parse_rules::<G>(rules)?, &mut rng))
    }

    /// A new match of `kind`.
    pub fn new(
        kind: GameKind,
        rules: &serde_json::Value,
        map: Option<&str>,
        players: &[String],
        seed: u64,
    ) -> Result<Self, SetupError> {
        let seats = Self::seats(kind);
        if !seats.contains(&players.len()) {
            return Err(SetupError::Players {
                game: kind,
                min: *seats.start(),
                max: *seats.end(),
                given: players.len(),
            });
        }
        with_game_type!(kind, G => Ok(G::new(parse_rules::<G>(rules)?, map, players, seed)?.into()))
    }

    /// The match inside, if it is one of game `G`.
    pub fn get<G: Game + 'static>(&self) -> Option<&G> {
        with_game!(self, game => (game as &dyn Any).downcast_ref::<G>())
    }

    /// Which game this is.
    pub fn kind(&self) -> GameKind {
        match self {
            AnyGame::Vindinium(_) => GameKind::Vindinium,
            AnyGame::Botwars(_) => GameKind::Botwars,
            AnyGame::Ostibot(_) => GameKind::Ostibot,
            AnyGame::Maze(_) => GameKind::Maze,
        }
    }

    /// See [`Game::max_steps`].
    pub fn max_steps(&self) -> u64 {
        with_game!(self, game => game.max_steps())
    }

    /// See [`Game::to_act`].
    pub fn to_act(&self) -> Vec<Seat> {
        with_game!(self, game => game.to_act())
    }

    /// See [`Game::write_observation`].
    pub fn write_observation(&self, seat: Seat, out: &mut Vec<u8>) {
        with_game!(self, game => game.write_observation(seat, out))
    }

    /// See [`Game::observation`].
    pub fn observation(&self, seat: Seat) -> String {
        with_game!(self, game => game.observation(seat))
    }

    /// Parses every reply and applies them as one step.
    pub fn step(&mut self, replies: &[(Seat, BotReply)], rng: &mut GameRng) {
        with_game!(self, game => step(game, replies, rng))
    }

    /// See [`Game::is_over`].
    pub fn is_over(&self) -> bool {
        with_game!(self, game => game.is_over())
    }

    /// See [`Game::write_state`].
    pub fn write_state(&self, out: &mut Vec<u8>) {
        with_game!(self, game => game.write_state(out))
    }

    /// See [`Game::snapshot`].
    pub fn snapshot(&self) -> Box<RawValue> {
        with_game!(self, game => game.snapshot())
    }

    /// See [`Game::outcome`].
    pub fn outcome(&self) -> Vec<PlayerOutcome> {
        with_game!(self, game => game.outcome())
    }
}
