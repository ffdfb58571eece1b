//! The match state and how one step changes it: the rules of play.

use super::VindiniumRules;
use super::codec::HeroParts;
use super::map::{Board, Dir, HeroId, Tile, VindiniumMap, neighbors};
use crate::writer::{text_of, write_json};
use crate::{PlayerOutcome, PlayerStatus, Pos, Seat, ranks_by_score};

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

/// One hero's parsed reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VindiniumAction {
    /// A move (anything unrecognised is `Stay`).
    Move(Dir),
    /// No usable reply in time: the hero crashes with this status.
    Crash(PlayerStatus),
}

/// A hero: where it stands and respawns, its life and gold, and whether it crashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hero {
    pub(super) id: HeroId,
    /// The name as a JSON string, quotes included: every document holds it, and it
    /// never changes.
    pub(super) name_json: String,
    pub(super) pos: Pos,
    pub(super) spawn: Pos,
    pub(super) life: i32,
    pub(super) gold: i64,
    pub(super) last_dir: Option<Dir>,
    pub(super) crashed: bool,
    pub(super) last_respawn: Option<u64>,
    pub(super) status: PlayerStatus,
}

/// A Vindinium match.
#[derive(Debug, Clone)]
pub struct Vindinium {
    pub(super) rules: VindiniumRules,
    pub(super) board: Board,
    pub(super) heroes: Vec<Hero>,
    pub(super) turn: u64,
    pub(super) finished: bool,
    /// The game's id as a JSON string, quotes included: every document holds it, and
    /// it never changes.
    pub(super) game_id_json: String,
    /// The heroes' parts of the documents, refreshed at the end of each move.
    pub(super) hero_parts: HeroParts,
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
                name_json: text_of(|out| write_json(out, name)),
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
        let game_id_json = text_of(|out| write_json(out, &format!("{seed:016x}")));
        let mut game = Vindinium {
            rules,
            board: map.board,
            heroes,
            turn: 0,
            finished: false,
            game_id_json,
            hero_parts: HeroParts::default(),
        };
        game.hero_parts.refresh(&game.heroes, &game.board);
        game
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
        let dest = dir.step(self.heroes[index].pos);
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
        let around = neighbors(self.heroes[index].pos);
        let enemies = around.map(|pos| self.hero_at(pos, index));
        for enemy in enemies.into_iter().flatten() {
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

    /// The seat whose hero moves this step, when a bot is asked for it: none once the
    /// match is over or when the hero has crashed (the rules play its turn).
    pub(super) fn seat_to_ask(&self) -> Option<Seat> {
        let index = (self.turn % 4) as usize;
        (!self.finished && !self.heroes[index].crashed).then_some(index)
    }

    /// Plays one single move with the action of the hero whose turn it is, if given.
    pub(super) fn step(&mut self, actions: Vec<(Seat, VindiniumAction)>) {
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
        // The rest of the move changes no hero.
        self.hero_parts.refresh(&self.heroes, &self.board);
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

    /// Every hero's score (its gold), rank and status.
    pub(super) fn outcome(&self) -> Vec<PlayerOutcome> {
        let scores: Vec<i64> = self.heroes.iter().map(|hero| hero.gold).collect();
        ranks_by_score(&scores)
            .into_iter()
            .zip(&self.heroes)
            .map(|(rank, hero)| PlayerOutcome { score: hero.gold, rank, status: hero.status })
            .collect()
    }
}
