//! Maze (Code Keeper — The Hero), as the original referee plays it
//! (`../shared/games/maze.md`).
//!
//! Every bot guides its own hero through its own copy of the same seeded maze: 1 to 4
//! seats, ranked by final score (equal scores share a rank). Each step asks every seat
//! whose game is still going for one command, and plays one turn in each copy. A copy
//! ends when its hero reaches the exit (+10000), dies (−1000), errs (score set to
//! −10000) or has played 150 actions; the match ends when every copy has ended.
//!
//! The protocol is the original's text: each request is several lines (a hero line,
//! an entity count, one line per entity; see [`Dungeon::write_observation`]) and the reply is
//! one line, `MOVE x y [message]` or `ATTACK w x y [message]` (see [`parse_command`]).
//!
//! # Layout
//! - [`map`]: positions, items, monsters and the map file format.
//! - [`generator`]: the original's maze generator.
//! - [`codec`]: parsing a reply.
//! - [`state`]: one copy: turn resolution, pathfinding, weapons.
//! - [`bots`]: the built-in bots.

pub mod bots;
pub mod codec;
pub mod generator;
pub mod map;
pub mod state;

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

pub use codec::{Command, CommandError, Weapon, parse_command};
pub use map::{Cell, HEIGHT, Item, MazeMap, MonsterKind, Pos, WIDTH};
pub use state::{Dungeon, End, Entity, Hero, Monster, OBSTACLE, Resolved, Sight, Waste, weapon_cells};

use crate::MapError;
use crate::game::{check_rule, write_int};
use crate::{
    AnyGame, BotReply, Deadlines, Game, GameKind, GameRng, PlayerOutcome, PlayerStatus, REPLY_TIMEOUT_MS, Seat,
    SetupError, TURNS, ranks_by_score,
};

/// The hero's hp at the start, and its most.
pub const HERO_MAX_HP: i32 = 20;
/// How far the hero sees (Chebyshev; walls do not block).
pub const HERO_FOV: i32 = 3;
/// Hp a potion gives.
pub const POTION_HP: i32 = 10;
/// Score for a treasure.
pub const TREASURE_SCORE: i64 = 100;
/// Score for reaching the exit.
pub const EXIT_SCORE: i64 = 10_000;
/// Score added when the hero dies.
pub const DEATH_SCORE: i64 = -1_000;
/// The score of a game that ends in an error (an invalid command or a timeout).
pub const ERROR_SCORE: i64 = -10_000;

/// The tunable rules, with the original's values as defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct MazeRules {
    /// Hero actions before a game ends (the monsters do not act after the last one).
    pub max_turns: u32,
    /// Time for the first reply.
    pub first_turn_timeout_ms: u64,
    /// Time for every later reply.
    pub turn_timeout_ms: u64,
}

impl Default for MazeRules {
    fn default() -> Self {
        MazeRules { max_turns: 150, first_turn_timeout_ms: 1000, turn_timeout_ms: 50 }
    }
}

/// One seat's parsed reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MazeAction {
    /// A well-formed command.
    Command(Command),
    /// The game ends with the error score and this status.
    Fail {
        /// `Disqualified` for an invalid command, `TimedOut` or `Crashed`.
        status: PlayerStatus,
        /// What was wrong.
        reason: String,
    },
}

/// A Maze match: one [`Dungeon`] per seat, all from the same map and seed.
#[derive(Debug, Clone)]
pub struct Maze {
    rules: MazeRules,
    copies: Vec<Dungeon>,
    steps: u64,
}

impl Maze {
    /// A match on `map` for `seats` bots. Every copy's monsters are shuffled by its own
    /// generator seeded from `seed`, so copies start out identical (decision M-5).
    pub fn from_map(rules: MazeRules, map: &MazeMap, seats: usize, seed: u64) -> Self {
        let copies =
            (0..seats).map(|_| Dungeon::new(map, rules.max_turns, GameRng::new(seed, GameRng::RULES))).collect();
        Maze { rules, copies, steps: 0 }
    }

    /// The copy of `seat`.
    pub fn dungeon(&self, seat: Seat) -> &Dungeon {
        &self.copies[seat]
    }

    /// The copy of `seat`, to set up test positions.
    pub fn dungeon_mut(&mut self, seat: Seat) -> &mut Dungeon {
        &mut self.copies[seat]
    }

    /// Steps played.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

/// Reads one reply: a command, or the failure it is.
pub fn parse_reply(reply: &BotReply) -> MazeAction {
    match reply {
        BotReply::Line(text) => match parse_command(text) {
            Ok(command) => MazeAction::Command(command),
            Err(error) => MazeAction::Fail { status: PlayerStatus::Disqualified, reason: error.to_string() },
        },
        BotReply::Unreadable => {
            MazeAction::Fail { status: PlayerStatus::Disqualified, reason: "unreadable reply".into() }
        }
        BotReply::Timeout => MazeAction::Fail { status: PlayerStatus::TimedOut, reason: "timeout".into() },
        BotReply::Crashed => MazeAction::Fail { status: PlayerStatus::Crashed, reason: "the bot crashed".into() },
        BotReply::OutputLimit => MazeAction::Fail {
            status: PlayerStatus::OutputLimit,
            reason: "the bot's output passed the replay limit".into(),
        },
    }
}

impl Game for Maze {
    const KIND: GameKind = GameKind::Maze;
    type Rules = MazeRules;
    type Action = MazeAction;

    fn seats() -> RangeInclusive<usize> {
        1..=4
    }

    fn default_map(_rules: &MazeRules, rng: &mut GameRng) -> Result<Option<String>, SetupError> {
        let map = generator::generate(rng).map_err(|e| SetupError::Map { game: Self::KIND, problem: e.to_string() })?;
        Ok(Some(map.to_string()))
    }

    fn new(rules: MazeRules, map: Option<&str>, players: &[String], seed: u64) -> Result<Self, SetupError> {
        check_rule("maxTurns", u64::from(rules.max_turns), TURNS)
            .and_then(|()| check_rule("firstTurnTimeoutMs", rules.first_turn_timeout_ms, REPLY_TIMEOUT_MS))
            .and_then(|()| check_rule("turnTimeoutMs", rules.turn_timeout_ms, REPLY_TIMEOUT_MS))
            .map_err(|problem| SetupError::Rules { game: Self::KIND, problem })?;
        let map = match map {
            Some(text) => MazeMap::parse(text),
            None => {
                generator::generate(&mut GameRng::new(seed, GameRng::MAP)).map_err(|e| MapError::whole(e.to_string()))
            }
        }
        .map_err(|e| SetupError::Map { game: Self::KIND, problem: e.to_string() })?;
        Ok(Maze::from_map(rules, &map, players.len(), seed))
    }

    fn deadlines(rules: &MazeRules) -> Deadlines {
        Deadlines { first_ms: rules.first_turn_timeout_ms, turn_ms: rules.turn_timeout_ms }
    }

    fn max_steps(&self) -> u64 {
        u64::from(self.rules.max_turns)
    }

    fn to_act(&self) -> Vec<Seat> {
        (0..self.copies.len()).filter(|&seat| !self.copies[seat].is_over()).collect()
    }

    fn write_observation(&self, seat: Seat, out: &mut Vec<u8>) {
        self.copies[seat].write_observation(out);
    }

    fn parse_reply(&self, _seat: Seat, reply: &BotReply) -> MazeAction {
        parse_reply(reply)
    }

    fn apply(&mut self, actions: Vec<(Seat, MazeAction)>, _rng: &mut GameRng) {
        if self.is_over() {
            return;
        }
        let mut by_seat: Vec<Option<MazeAction>> = vec![None; self.copies.len()];
        for (seat, action) in actions {
            if let Some(slot) = by_seat.get_mut(seat) {
                *slot = Some(action);
            }
        }
        for (copy, action) in self.copies.iter_mut().zip(by_seat) {
            if copy.is_over() {
                continue;
            }
            match action {
                Some(MazeAction::Command(command)) => copy.play(&command),
                Some(MazeAction::Fail { status, reason }) => copy.fail(status, &reason),
                // A seat that was asked must answer; no answer is a timeout.
                None => copy.fail(PlayerStatus::TimedOut, "no reply"),
            }
        }
        self.steps += 1;
    }

    fn is_over(&self) -> bool {
        self.copies.iter().all(Dungeon::is_over)
    }

    /// `{"step":..,"copies":[..]}`, each copy's state as [`Dungeon`] writes it.
    fn write_state(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"step\":");
        write_int(out, self.steps);
        out.extend_from_slice(b",\"copies\":[");
        for (index, copy) in self.copies.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            copy.write_state(out);
        }
        out.extend_from_slice(b"]}");
    }

    fn outcome(&self) -> Vec<PlayerOutcome> {
        let scores: Vec<i64> = self.copies.iter().map(|copy| copy.hero().score).collect();
        ranks_by_score(&scores)
            .into_iter()
            .zip(&self.copies)
            .map(|(rank, copy)| PlayerOutcome { score: copy.hero().score, rank, status: copy.status() })
            .collect()
    }

    fn of(game: &AnyGame) -> Option<&Self> {
        if let AnyGame::Maze(game) = game { Some(game) } else { None }
    }
}
