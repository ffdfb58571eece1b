//! Built-in Vindinium bots: `random` and `greedy`.

use std::collections::VecDeque;

use super::Vindinium;
use super::map::{Dir, Tile, neighbors};
use crate::builtin::{self, BuiltinBot, GameBot};
use crate::{GameRng, Pos, Seat};

/// The built-in bots' names.
pub const NAMES: &[&str] = &["random", "greedy"];

pub(crate) fn create(name: &str, rng: GameRng) -> Option<Box<dyn BuiltinBot>> {
    match name {
        "random" => Some(builtin::boxed(RandomBot { rng })),
        "greedy" => Some(builtin::boxed(GreedyBot)),
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
struct GreedyBot;

/// Below this life a goblin fight or two would kill: time for a beer.
const THIRSTY_LIFE: i32 = 45;

impl GameBot<Vindinium> for GreedyBot {
    fn reply(&mut self, game: &Vindinium, seat: Seat) -> String {
        greedy_move(game, seat).name().to_owned()
    }
}

fn greedy_move(game: &Vindinium, seat: Seat) -> Dir {
    let board = &game.board;
    let size = board.size() as i32;
    let me = &game.heroes[seat.min(game.heroes.len() - 1)];
    let thirsty = me.life < THIRSTY_LIFE && me.gold >= 2;
    let is_target = |pos: Pos| match board.get(pos) {
        Some(Tile::Tavern) => thirsty || me.life <= 20,
        Some(Tile::Mine(owner)) => !(thirsty || me.life <= 20) && owner != Some(me.id),
        _ => false,
    };
    // Other heroes stand on air and block like walls.
    let walkable = |pos: Pos| board.get(pos) == Some(Tile::Air) && !game.heroes.iter().any(|hero| hero.pos == pos);

    // Breadth-first search over free cells, remembering each cell's first step.
    let mut first_step = vec![None; (size * size).max(0) as usize];
    let index = |pos: Pos| pos.index(size);
    let mut queue = VecDeque::new();
    for dir in Dir::MOVES {
        let next = dir.step(me.pos);
        if is_target(next) {
            return dir;
        }
        if walkable(next) && first_step[index(next)].is_none() {
            first_step[index(next)] = Some(dir);
            queue.push_back(next);
        }
    }
    while let Some(pos) = queue.pop_front() {
        let dir = first_step[index(pos)].unwrap_or(Dir::Stay);
        for next in neighbors(pos) {
            if is_target(next) {
                return dir;
            }
            if walkable(next) && next != me.pos && first_step[index(next)].is_none() {
                first_step[index(next)] = Some(dir);
                queue.push_back(next);
            }
        }
    }
    Dir::Stay
}
