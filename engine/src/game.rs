use std::ops::RangeInclusive;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::{BotReply, GameKind, GameRng, PlayerOutcome, Seat, botwars, maze, ostibot, vindinium};

/// How long a bot may take to reply, as each game's rules set it.
///
/// The engine has no clock: these are numbers for the runner to enforce. Time to
/// start a bot's process or container is never part of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// For a bot's first request.
    pub first_ms: u64,
    /// For every later request.
    pub turn_ms: u64,
}

/// The range of every reply deadline a game's rules set, in milliseconds: up to ten
/// minutes (Ostibot's original gives each call 300 s).
pub const REPLY_TIMEOUT_MS: RangeInclusive<u64> = 1..=600_000;

/// The range of every turn count a game's rules set (per round, for Ostibot). With
/// the reply deadlines it bounds a match's length: the worker's wall-clock limit per
/// match is derived from both.
pub const TURNS: RangeInclusive<u64> = 1..=100_000;

/// `Ok` when the rules value `key` is within `range`, else what is wrong, naming the
/// key and the range.
pub(crate) fn check_rule(key: &str, value: u64, range: RangeInclusive<u64>) -> Result<(), String> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(format!("{key} must be {} to {}, got {value}", range.start(), range.end()))
    }
}

/// A match that cannot start: bad rules, a bad map or the wrong number of players.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// The rules overrides are not valid for this game.
    #[error("invalid {game} rules: {problem}")]
    Rules {
        /// The game.
        game: GameKind,
        /// What is wrong, naming the key.
        problem: String,
    },
    /// The map does not parse or breaks the game's map rules.
    #[error("invalid {game} map: {problem}")]
    Map {
        /// The game.
        game: GameKind,
        /// What is wrong, with line and column where there is one.
        problem: String,
    },
    /// The game cannot be played by this many bots.
    #[error("{game} is played by {min} to {max} bots, not {given}")]
    Players {
        /// The game.
        game: GameKind,
        /// The smallest number of seats.
        min: usize,
        /// The largest number of seats.
        max: usize,
        /// How many were given.
        given: usize,
    },
}

/// The rules of one game: the single trait the match driver, the conformance harness
/// and the runner rely on.
///
/// A game is a state machine over steps. Each step, [`Game::to_act`] names the seats
/// that must be asked; their replies are parsed with [`Game::parse_reply`] (which
/// never fails: a malformed reply is an action with the outcome the rules give) and
/// applied together by [`Game::apply`]. A step may ask nobody (a crashed Vindinium
/// hero's turn is played by the server) but still advances the game.
pub trait Game: Sized {
    /// Which game this is.
    const KIND: GameKind;
    /// Tunable rules (turn limits, timeouts, ...), with the original's values as default.
    type Rules: Serialize + DeserializeOwned + Default + Clone;
    /// One seat's parsed reply for one step.
    type Action;
    /// Named sets of rules overrides the original defines (Ostibot's `SemiFinal`,
    /// say), each a JSON object's text. Tournaments pick one by name.
    const PRESETS: &'static [(&'static str, &'static str)] = &[];

    /// How many bots can sit at one match.
    fn seats() -> RangeInclusive<usize>;

    /// The map to play when a setup names none, or `None` for games without maps.
    /// Generated maps draw from `rng`.
    fn default_map(rules: &Self::Rules, rng: &mut GameRng) -> Result<Option<String>, SetupError>;

    /// A new match. `map` is a map file's text; `players` names the seats.
    fn new(rules: Self::Rules, map: Option<&str>, players: &[String], seed: u64) -> Result<Self, SetupError>;

    /// The reply deadlines the rules give.
    fn deadlines(rules: &Self::Rules) -> Deadlines;

    /// The most steps a match can take; it is over after at most this many.
    fn max_steps(&self) -> u64;

    /// The seats to ask this step, in seat order. Empty once the match is over.
    fn to_act(&self) -> Vec<Seat>;

    /// Appends to `out` what `seat` is sent this step, in the game's wire format: one
    /// line of text, or for Maze several lines (its protocol says how many), without a
    /// final newline. Written straight into the caller's buffer, which a runner reuses
    /// from step to step.
    fn write_observation(&self, seat: Seat, out: &mut Vec<u8>);

    /// [`Game::write_observation`] as a string of its own.
    fn observation(&self, seat: Seat) -> String {
        text_of(|out| self.write_observation(seat, out))
    }

    /// Reads `seat`'s reply. Malformed or illegal input is an action too.
    fn parse_reply(&self, seat: Seat, reply: &BotReply) -> Self::Action;

    /// Plays one step with an action for every seat of [`Game::to_act`].
    fn apply(&mut self, actions: Vec<(Seat, Self::Action)>, rng: &mut GameRng);

    /// Whether the match has ended.
    fn is_over(&self) -> bool;

    /// Appends to `out` the state after the last step, as recorded in replay frames:
    /// one JSON value.
    fn write_state(&self, out: &mut Vec<u8>);

    /// [`Game::write_state`] as a JSON value of its own.
    fn snapshot(&self) -> Box<RawValue> {
        // `write_state` writes one JSON value; `null` would only stand for a bug there.
        RawValue::from_string(text_of(|out| self.write_state(out))).unwrap_or_else(|_| null_value())
    }

    /// Every seat's score, rank and status; final once [`Game::is_over`].
    fn outcome(&self) -> Vec<PlayerOutcome>;

    /// The match inside `game` if it is one of this game.
    fn of(game: &AnyGame) -> Option<&Self>;
}

/// The text a writer of [`Game`] appends to an empty buffer. The writers write UTF-8
/// (JSON from serde_json, or ASCII protocol text), so nothing is ever replaced.
pub(crate) fn text_of(write: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    write(&mut out);
    String::from_utf8(out).unwrap_or_else(|bad| String::from_utf8_lossy(bad.as_bytes()).into_owned())
}

fn null_value() -> Box<RawValue> {
    RawValue::from_string("null".into()).unwrap_or_else(|_| unreachable!("null is JSON"))
}

/// Appends `value` to `out` as JSON. The engine's documents are structs of strings,
/// integers and booleans, and writing to a `Vec` cannot fail, so neither can this.
pub(crate) fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    if let Err(error) = serde_json::to_writer(&mut *out, value) {
        unreachable!("an engine document does not serialize: {error}");
    }
}

/// Appends the integer `value` to `out` in decimal, as JSON writes it.
pub(crate) fn write_int(out: &mut Vec<u8>, value: impl itoa::Integer) {
    // Byte by byte: the numbers of a state are a few digits, for which a copy of a
    // slice of unknown length costs more than the digits.
    for &digit in itoa::Buffer::new().format(value).as_bytes() {
        out.push(digit);
    }
}

/// Appends `text` to `out` as a JSON string, byte for byte as serde_json writes it:
/// `"` and `\\` escaped, the C0 controls as `\b` `\t` `\n` `\f` `\r` or `\u00xx`
/// (lower-case hex), everything else as it is. The replies of every frame go through
/// here; a Botwars reply has a quote every few bytes, so it goes byte by byte through
/// a table rather than copying the runs between escapes.
pub(crate) fn write_json_str(out: &mut Vec<u8>, text: &str) {
    /// What follows the backslash of each byte's escape; 0: the byte stands as it is.
    const ESCAPE: [u8; 256] = {
        let mut table = [0u8; 256];
        let mut byte = 0;
        while byte < 0x20 {
            table[byte] = b'u';
            byte += 1;
        }
        table[0x08] = b'b';
        table[0x09] = b't';
        table[0x0a] = b'n';
        table[0x0c] = b'f';
        table[0x0d] = b'r';
        table[b'"' as usize] = b'"';
        table[b'\\' as usize] = b'\\';
        table
    };
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(text.len() + 2);
    out.push(b'"');
    for &byte in text.as_bytes() {
        match ESCAPE[usize::from(byte)] {
            0 => out.push(byte),
            b'u' => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]),
            escape => out.extend_from_slice(&[b'\\', escape]),
        }
    }
    out.push(b'"');
}

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
