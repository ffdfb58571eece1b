//! Built-in Vindinium bots: `random` and `greedy`.

use std::collections::VecDeque;

use super::Vindinium;
use super::map::{Dir, Tile, neighbors};
use crate::game_bot::GameBot;
use crate::{GameRng, Pos, Seat};

/// The built-in bots' names.
pub const NAMES: &[&str] = &["random", "greedy"];

pub(crate) fn create(name: &str, rng: GameRng) -> Option<Box<dyn GameBot<Vindinium>>> {
    match name {
        "random" => Some(Box::new(RandomBot { rng })),
        "greedy" => Some(Box::new(GreedyBot::default())),
        _ => None,
    }
}

/// Moves in a random direction, never `Stay` (as the original's random bot).
struct RandomBot {
    rng: GameRng,
}

impl GameBot<Vindinium> for RandomBot {
    fn reply(&mut self, _game: &Vindinium, _seat: Seat) -> String {
        self.rng.pick(&Dir::MOVES).copied().unwrap_or(Dir::Stay).name().to_owned()
    }
}

/// Walks to the nearest mine it does not own, or to a tavern when its life is low.
#[derive(Default)]
struct GreedyBot {
    /// The search's first step towards each cell, by cell number; kept from move to
    /// move so that a move allocates nothing.
    first_step: Vec<Option<Dir>>,
    /// The search's cells to visit, kept for the same reason.
    queue: VecDeque<Pos>,
}

/// Below this life a goblin fight or two would kill: time for a beer.
const THIRSTY_LIFE: i32 = 45;

impl GameBot<Vindinium> for GreedyBot {
    fn reply(&mut self, game: &Vindinium, seat: Seat) -> String {
        self.choose(game, seat).name().to_owned()
    }
}

impl GreedyBot {
    fn choose(&mut self, game: &Vindinium, seat: Seat) -> Dir {
        let board = &game.board;
        let size = board.size() as i32;
        let me = &game.heroes[seat.min(game.heroes.len() - 1)];
        let thirsty = me.life < THIRSTY_LIFE && me.gold >= 2;
        let wants_beer = thirsty || me.life <= 20;
        // One look at the board per cell.
        let kind = |pos: Pos| match board.get(pos) {
            Some(Tile::Tavern) if wants_beer => Cell::Target,
            Some(Tile::Mine(owner)) if !wants_beer && owner != Some(me.id) => Cell::Target,
            Some(Tile::Air) => Cell::Free,
            _ => Cell::Blocked,
        };

        // Breadth-first search over free cells, remembering each cell's first step.
        let first_step = &mut self.first_step;
        first_step.clear();
        first_step.resize((size * size).max(0) as usize, None);
        let index = |pos: Pos| pos.index(size);
        // Heroes (this one too) stand on air and block like walls: their cells are
        // taken as visited from the start.
        for hero in &game.heroes {
            if hero.pos.on_board(size, size) {
                first_step[index(hero.pos)] = Some(Dir::Stay);
            }
        }
        let queue = &mut self.queue;
        queue.clear();
        queue.push_back(me.pos);
        while let Some(pos) = queue.pop_front() {
            for (dir, next) in Dir::MOVES.into_iter().zip(neighbors(pos)) {
                // From this hero's cell the first step is the move itself; from any
                // other, the one that led there.
                let first = if pos == me.pos { dir } else { first_step[index(pos)].unwrap_or(Dir::Stay) };
                match kind(next) {
                    Cell::Target => return first,
                    Cell::Free if first_step[index(next)].is_none() => {
                        first_step[index(next)] = Some(first);
                        queue.push_back(next);
                    }
                    Cell::Free | Cell::Blocked => {}
                }
            }
        }
        Dir::Stay
    }
}

/// What a cell is to the greedy bot's search.
enum Cell {
    /// Where the bot wants to go: stepping into it is the move.
    Target,
    /// Air: the search goes on through it, unless a hero stands there.
    Free,
    /// Anything else.
    Blocked,
}
