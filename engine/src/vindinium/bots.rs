//! Built-in Vindinium bots: `random` and `greedy`.

use std::collections::VecDeque;

use serde::Deserialize;

use super::board::{Dir, Pos};
use crate::GameRng;
use crate::builtin::BuiltinBot;

/// The built-in bots' names.
pub const NAMES: &[&str] = &["random", "greedy"];

pub(crate) fn create(name: &str, rng: GameRng) -> Option<Box<dyn BuiltinBot>> {
    match name {
        "random" => Some(Box::new(RandomBot { rng })),
        "greedy" => Some(Box::new(GreedyBot)),
        _ => None,
    }
}

/// Moves in a random direction, never `Stay` (as the original's random bot).
struct RandomBot {
    rng: GameRng,
}

impl BuiltinBot for RandomBot {
    fn reply(&mut self, _observation: &str) -> String {
        self.rng.pick(&Dir::MOVES).copied().unwrap_or(Dir::Stay).name().to_owned()
    }
}

/// Walks to the nearest mine it does not own, or to a tavern when its life is low.
struct GreedyBot;

/// Below this life a goblin fight or two would kill: time for a beer.
const THIRSTY_LIFE: i32 = 45;

#[derive(Deserialize)]
struct StateIn {
    game: GameIn,
    hero: HeroIn,
}

#[derive(Deserialize)]
struct GameIn {
    board: BoardIn,
}

#[derive(Deserialize)]
struct BoardIn {
    size: usize,
    tiles: String,
}

#[derive(Deserialize)]
struct HeroIn {
    id: u8,
    pos: Pos,
    life: i32,
    gold: i64,
}

impl BuiltinBot for GreedyBot {
    fn reply(&mut self, observation: &str) -> String {
        let Ok(state) = serde_json::from_str::<StateIn>(observation) else {
            return Dir::Stay.name().to_owned();
        };
        greedy_move(&state).name().to_owned()
    }
}

fn greedy_move(state: &StateIn) -> Dir {
    let size = state.game.board.size as i32;
    let tiles = state.game.board.tiles.as_bytes();
    let tile = |pos: Pos| -> Option<&[u8]> {
        if pos.x < 0 || pos.y < 0 || pos.x >= size || pos.y >= size {
            return None;
        }
        let start = 2 * (pos.x * size + pos.y) as usize;
        tiles.get(start..start + 2)
    };
    let me = &state.hero;
    let own_mine = [b'$', b'0' + me.id];
    let thirsty = me.life < THIRSTY_LIFE && me.gold >= 2;
    let is_target = |code: &[u8]| {
        if thirsty || me.life <= 20 { code == b"[]" } else { code[0] == b'$' && code != own_mine }
    };
    // Other heroes are drawn over air as `@n`, so they block like walls.
    let walkable = |pos: Pos| tile(pos) == Some(b"  ".as_slice());

    // Breadth-first search over free cells, remembering each cell's first step.
    let mut first_step = vec![None; (size * size).max(0) as usize];
    let index = |pos: Pos| (pos.x * size + pos.y) as usize;
    let mut queue = VecDeque::new();
    for dir in Dir::MOVES {
        let next = me.pos.to(dir);
        match tile(next) {
            Some(code) if is_target(code) => return dir,
            Some(_) if walkable(next) && first_step[index(next)].is_none() => {
                first_step[index(next)] = Some(dir);
                queue.push_back(next);
            }
            _ => {}
        }
    }
    while let Some(pos) = queue.pop_front() {
        let dir = first_step[index(pos)].unwrap_or(Dir::Stay);
        for next in pos.neighbors() {
            match tile(next) {
                Some(code) if is_target(code) => return dir,
                Some(_) if walkable(next) && next != me.pos && first_step[index(next)].is_none() => {
                    first_step[index(next)] = Some(dir);
                    queue.push_back(next);
                }
                _ => {}
            }
        }
    }
    Dir::Stay
}
