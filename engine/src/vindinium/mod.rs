//! Vindinium, as the original server plays it (`../shared/games/vindinium.md`).
//!
//! Four heroes move one at a time (`turn % 4`); `turn` counts single moves. A hero
//! that times out or goes away is *crashed*: it stays in the game and the rules play
//! `Stay` for it, so it still fights, mines and thirsts (decision V-3).

pub mod bots;
mod codec;
pub mod generator;
pub mod map;

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

pub use map::{Board, Dir, HeroId, Pos, Tile, VindiniumMap};

use crate::game::check_rule;
use crate::{
    AnyGame, BotReply, Deadlines, Game, GameKind, GameRng, PlayerOutcome, PlayerStatus, REPLY_TIMEOUT_MS, Seat,
    SetupError, TURNS, java_trim, ranks_by_score,
};

/// Life a hero starts and respawns with, and never exceeds.
pub const MAX_LIFE: i32 = 100;
/// Damage a hero deals to each adjacent enemy on its move.
pub const ATTACK_DAMAGE: i32 = 20;
/// Damage the goblin of a mine deals to a hero who enters it.
pub const MINE_DAMAGE: i32 = 20;
/// Price of a beer at a tavern.
pub const BEER_GOLD: i64 = 2;
/// Life a beer gives.
pub const BEER_LIFE: i32 = 50;
/// Life lost to thirst on each of a hero's own moves (never below 1).
pub const DAY_LIFE: i32 = 1;

/// The tunable rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct VindiniumRules {
    /// Single moves in a match (300 per hero in the original arena).
    pub max_turns: u64,
    /// Time a bot has for each move.
    pub move_timeout_ms: u64,
}

impl Default for VindiniumRules {
    fn default() -> Self {
        VindiniumRules { max_turns: 1200, move_timeout_ms: 1000 }
    }
}

/// One hero's parsed reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VindiniumAction {
    /// A move (anything unrecognised is `Stay`).
    Move(Dir),
    /// No usable reply in time: the hero crashes with this status.
    Crash(PlayerStatus),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Hero {
    id: HeroId,
    name: String,
    pos: Pos,
    spawn: Pos,
    life: i32,
    gold: i64,
    last_dir: Option<Dir>,
    crashed: bool,
    last_respawn: Option<u64>,
    status: PlayerStatus,
}

/// A Vindinium match.
#[derive(Debug, Clone)]
pub struct Vindinium {
    rules: VindiniumRules,
    board: Board,
    heroes: Vec<Hero>,
    turn: u64,
    finished: bool,
    game_id: String,
}

/// Parses a move: `north|south|east|west` in any case, bare or as a JSON string,
/// trimmed as the original's Java `String.trim` does (control characters and spaces,
/// not Unicode spaces: `south\u{a0}` stays). Anything else is `Stay`, as in the original.
pub fn parse_dir(reply: &str) -> Dir {
    let word = java_trim(reply);
    let word = java_trim(word.strip_prefix('"').and_then(|w| w.strip_suffix('"')).unwrap_or(word)).to_lowercase();
    Dir::MOVES.into_iter().find(|dir| dir.name().eq_ignore_ascii_case(&word)).unwrap_or(Dir::Stay)
}

impl Vindinium {
    /// A match on `map` for four heroes named `players`.
    pub fn from_map(rules: VindiniumRules, map: VindiniumMap, players: &[String], seed: u64) -> Self {
        let heroes = map
            .starts
            .iter()
            .zip(players)
            .zip(1..)
            .map(|((&start, name), id)| Hero {
                id,
                name: name.clone(),
                pos: start,
                spawn: start,
                life: MAX_LIFE,
                gold: 0,
                last_dir: None,
                crashed: false,
                last_respawn: None,
                status: PlayerStatus::Ok,
            })
            .collect();
        Vindinium { rules, board: map.board, heroes, turn: 0, finished: false, game_id: format!("{seed:016x}") }
    }

    /// Single moves played so far.
    pub fn turn(&self) -> u64 {
        self.turn
    }

    fn hero_at(&self, pos: Pos, except: usize) -> Option<usize> {
        (0..self.heroes.len()).find(|&index| index != except && self.heroes[index].pos == pos)
    }

    fn play(&mut self, index: usize, dir: Dir) {
        self.heroes[index].last_dir = Some(dir);
        let id = self.heroes[index].id;
        let dest = self.heroes[index].pos.to(dir);
        let occupied = self.hero_at(dest, index).is_some();
        match self.board.get(dest) {
            None => {}
            Some(_) if occupied => {}
            Some(Tile::Air) => self.heroes[index].pos = dest,
            Some(Tile::Tavern) => {
                let hero = &mut self.heroes[index];
                if hero.gold >= BEER_GOLD {
                    hero.gold -= BEER_GOLD;
                    hero.life = (hero.life + BEER_LIFE).min(MAX_LIFE);
                }
            }
            Some(Tile::Mine(owner)) if owner == Some(id) => {}
            Some(Tile::Mine(_)) => {
                let hero = &mut self.heroes[index];
                hero.life = (hero.life - MINE_DAMAGE).max(0);
                if hero.life > 0 {
                    self.board.set(dest, Tile::Mine(Some(id)));
                } else {
                    self.board.transfer_mines(id, None);
                    self.respawn(index);
                }
            }
            Some(Tile::Wood) => {}
        }
        self.fights(index);
    }

    /// The moving hero hits every enemy next to it, in the order N, E, S, W.
    fn fights(&mut self, index: usize) {
        let around = self.heroes[index].pos.neighbors();
        let enemies: Vec<usize> = around.iter().filter_map(|pos| self.hero_at(*pos, index)).collect();
        for enemy in enemies {
            // Either side having respawned this turn ends their fight: this is what
            // makes the enemy list taken above as good as a live one.
            if self.heroes[index].last_respawn == Some(self.turn) || self.heroes[enemy].last_respawn == Some(self.turn)
            {
                continue;
            }
            let victim = &mut self.heroes[enemy];
            victim.life = (victim.life - ATTACK_DAMAGE).max(0);
            if victim.life == 0 {
                let (killer, victim) = (self.heroes[index].id, self.heroes[enemy].id);
                self.board.transfer_mines(victim, Some(killer));
                self.respawn(enemy);
            }
        }
    }

    /// Back to the spawn cell with full life; whoever stands there is telefragged:
    /// its mines go to the respawning hero and it respawns in turn.
    fn respawn(&mut self, mut index: usize) {
        // Spawn cells are distinct, so each hero moves at most once per chain.
        for _ in 0..self.heroes.len() {
            let hero = &mut self.heroes[index];
            hero.life = MAX_LIFE;
            hero.pos = hero.spawn;
            hero.last_respawn = Some(self.turn);
            let (id, spawn) = (hero.id, hero.spawn);
            let Some(fragged) = self.hero_at(spawn, index) else { return };
            self.board.transfer_mines(self.heroes[fragged].id, Some(id));
            index = fragged;
        }
    }

    /// The end of a hero's own move: thirst, then gold from its mines.
    fn finalize(&mut self, index: usize) {
        let mines = self.board.mines_of(self.heroes[index].id) as i64;
        let hero = &mut self.heroes[index];
        hero.life = (hero.life - DAY_LIFE).max(1);
        hero.gold += mines;
    }
}

impl Game for Vindinium {
    const KIND: GameKind = GameKind::Vindinium;
    type Rules = VindiniumRules;
    type Action = VindiniumAction;

    fn seats() -> RangeInclusive<usize> {
        4..=4
    }

    fn default_map(_rules: &VindiniumRules, rng: &mut GameRng) -> Result<Option<String>, SetupError> {
        let map = generator::generate(rng).map_err(|e| SetupError::Map { game: Self::KIND, problem: e.to_string() })?;
        Ok(Some(map.to_string()))
    }

    fn new(rules: VindiniumRules, map: Option<&str>, players: &[String], seed: u64) -> Result<Self, SetupError> {
        let map_error = |problem: String| SetupError::Map { game: Self::KIND, problem };
        check_rule("maxTurns", rules.max_turns, TURNS)
            .and_then(|()| check_rule("moveTimeoutMs", rules.move_timeout_ms, REPLY_TIMEOUT_MS))
            .map_err(|problem| SetupError::Rules { game: Self::KIND, problem })?;
        let map = VindiniumMap::parse(map.ok_or_else(|| map_error("Vindinium needs a map".into()))?)
            .map_err(|e| map_error(e.to_string()))?;
        Ok(Vindinium::from_map(rules, map, players, seed))
    }

    fn deadlines(rules: &VindiniumRules) -> Deadlines {
        Deadlines { first_ms: rules.move_timeout_ms, turn_ms: rules.move_timeout_ms }
    }

    fn max_steps(&self) -> u64 {
        self.rules.max_turns
    }

    fn to_act(&self) -> Vec<Seat> {
        let index = (self.turn % 4) as usize;
        if self.finished || self.heroes[index].crashed { Vec::new() } else { vec![index] }
    }

    fn write_observation(&self, seat: Seat, out: &mut Vec<u8>) {
        codec::write_document(self, seat, out);
    }

    fn parse_reply(&self, _seat: Seat, reply: &BotReply) -> VindiniumAction {
        match reply {
            BotReply::Line(text) => VindiniumAction::Move(parse_dir(text)),
            BotReply::Unreadable => VindiniumAction::Move(Dir::Stay),
            BotReply::Timeout => VindiniumAction::Crash(PlayerStatus::TimedOut),
            BotReply::Crashed => VindiniumAction::Crash(PlayerStatus::Crashed),
            BotReply::OutputLimit => VindiniumAction::Crash(PlayerStatus::OutputLimit),
        }
    }

    fn apply(&mut self, actions: Vec<(Seat, VindiniumAction)>, _rng: &mut GameRng) {
        if self.finished {
            return;
        }
        let index = (self.turn % 4) as usize;
        let action = actions.into_iter().find(|(seat, _)| *seat == index).map(|(_, action)| action);
        let mut all_crashed = false;
        match (self.heroes[index].crashed, action) {
            // The server plays a crashed hero's turns.
            (true, _) | (false, None) => self.play(index, Dir::Stay),
            (false, Some(VindiniumAction::Move(dir))) => self.play(index, dir),
            (false, Some(VindiniumAction::Crash(status))) => {
                let hero = &mut self.heroes[index];
                hero.crashed = true;
                hero.status = status;
                all_crashed = self.heroes.iter().all(|hero| hero.crashed);
            }
        }
        // Every turn ends with thirst and gold, a crash's too, even the one that ends
        // the game (the spec's `doMove` runs `finalize` for a Crash unconditionally).
        self.finalize(index);
        if all_crashed {
            // A crash that ends the game does not count as a move.
            self.finished = true;
            return;
        }
        self.turn += 1;
        if self.turn >= self.rules.max_turns {
            self.finished = true;
        }
    }

    fn is_over(&self) -> bool {
        self.finished
    }

    fn write_state(&self, out: &mut Vec<u8>) {
        codec::write_snapshot(self, out);
    }

    fn outcome(&self) -> Vec<PlayerOutcome> {
        let scores: Vec<i64> = self.heroes.iter().map(|hero| hero.gold).collect();
        ranks_by_score(&scores)
            .into_iter()
            .zip(&self.heroes)
            .map(|(rank, hero)| PlayerOutcome { score: hero.gold, rank, status: hero.status })
            .collect()
    }

    fn of(game: &AnyGame) -> Option<&Self> {
        if let AnyGame::Vindinium(game) = game { Some(game) } else { None }
    }
}
