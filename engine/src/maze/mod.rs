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
//! - [`rules`]: the tunable rules and the original's constants.
//! - [`state`]: the match, one copy per seat: turn resolution, pathfinding, weapons.
//! - [`codec`]: the observation, parsing a reply, the replay state.
//! - [`map`]: the board, items, monsters and the map file format.
//! - [`generator`]: the original's maze generator.
//! - [`bots`]: the built-in bots.

pub mod bots;
pub mod codec;
pub mod generator;
pub mod map;
pub mod rules;
pub mod state;

use std::ops::RangeInclusive;

pub use codec::{Command, CommandError, Entity, MazeAction, OBSTACLE, Sight, parse_command, parse_reply};
pub use map::{Cell, HEIGHT, Item, MazeMap, MonsterKind, WIDTH};
pub use rules::{DEATH_SCORE, ERROR_SCORE, EXIT_SCORE, HERO_FOV, HERO_MAX_HP, MazeRules, POTION_HP, TREASURE_SCORE};
pub use state::{Dungeon, End, Hero, Maze, Monster, Resolved, Waste, Weapon, weapon_cells};

use crate::MapError;
use crate::{BotReply, Deadlines, Game, GameKind, GameRng, PlayerOutcome, Seat, SetupError};

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
        rules.check().map_err(|problem| SetupError::Rules { game: Self::KIND, problem })?;
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
        Maze::to_act(self)
    }

    fn write_observation(&self, seat: Seat, out: &mut Vec<u8>) {
        self.copies[seat].write_observation(out);
    }

    fn parse_reply(&self, _seat: Seat, reply: &BotReply) -> MazeAction {
        parse_reply(reply)
    }

    fn apply(&mut self, actions: Vec<(Seat, MazeAction)>, _rng: &mut GameRng) {
        self.play(actions);
    }

    fn is_over(&self) -> bool {
        Maze::is_over(self)
    }

    fn write_state(&self, out: &mut Vec<u8>) {
        Maze::write_state(self, out);
    }

    fn outcome(&self) -> Vec<PlayerOutcome> {
        Maze::outcome(self)
    }
}
