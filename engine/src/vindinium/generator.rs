//! The original's random map generator: a quarter drawn at random, mirrored four
//! ways, with unreachable cells walled off and one group of four taverns.

use std::collections::VecDeque;

use super::map::{Board, Tile, VindiniumMap, neighbors};
use crate::{GameRng, Pos};

/// The generator gave up: the drawn parameters kept producing unusable boards.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no playable {size}x{size} map after {ATTEMPTS} attempts")]
pub struct GenerateError {
    /// The board size that was drawn.
    pub size: usize,
}

const ATTEMPTS: usize = 100;
const SPAWN_TRIES: usize = 100;

/// Parameters of one generated map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeneratorConfig {
    /// Side length: even, at least 8.
    pub size: usize,
    /// Chance in percent that a quarter cell is wood.
    pub wall_percent: usize,
    /// Chance in percent that a quarter cell is a mine.
    pub mine_percent: usize,
}

impl GeneratorConfig {
    /// The original's arena draw: size 10..=28 (even), walls 10..=41 %, mines 3..=9 %.
    pub fn random(rng: &mut GameRng) -> Self {
        GeneratorConfig {
            size: 10 + 2 * rng.below(10),
            wall_percent: 10 + rng.below(32),
            mine_percent: 3 + rng.below(7),
        }
    }
}

/// A random map with the original's arena parameters.
pub fn generate(rng: &mut GameRng) -> Result<VindiniumMap, GenerateError> {
    let config = GeneratorConfig::random(rng);
    generate_with(config, rng)
}

/// A random map with the given parameters. Odd sizes and sizes under 8 always fail.
pub fn generate_with(config: GeneratorConfig, rng: &mut GameRng) -> Result<VindiniumMap, GenerateError> {
    if config.size < 8 || config.size % 2 == 1 {
        return Err(GenerateError { size: config.size });
    }
    (0..ATTEMPTS).find_map(|_| attempt(config, rng)).ok_or(GenerateError { size: config.size })
}

/// The cell in the same column, as far from the bottom as `pos` is from the top: the
/// original's `mirrorX`, its `x` being the row.
fn flip_rows(size: usize, pos: Pos) -> Pos {
    Pos::new(pos.x, size as i32 - 1 - pos.y)
}

/// The cell in the same row, as far from the right as `pos` is from the left: the
/// original's `mirrorY`.
fn flip_columns(size: usize, pos: Pos) -> Pos {
    Pos::new(size as i32 - 1 - pos.x, pos.y)
}

/// Cells reachable from `from` through air, `from` included.
fn reachable(board: &Board, from: Pos) -> Vec<bool> {
    let size = board.size();
    let mut seen = vec![false; size * size];
    let index = |pos: Pos| pos.index(size as i32);
    let mut queue = VecDeque::from([from]);
    seen[index(from)] = true;
    while let Some(pos) = queue.pop_front() {
        for next in neighbors(pos) {
            if board.get(next) == Some(Tile::Air) && !seen[index(next)] {
                seen[index(next)] = true;
                queue.push_back(next);
            }
        }
    }
    seen
}

fn is_reached(board: &Board, reached: &[bool], pos: Pos) -> bool {
    board.get(pos).is_some() && reached[pos.index(board.size() as i32)]
}

/// Mines with at least one reachable neighbour.
fn mines_next_to_air(board: &Board, reached: &[bool]) -> usize {
    board
        .positions()
        .filter(|pos| matches!(board.get(*pos), Some(Tile::Mine(_))))
        .filter(|pos| neighbors(*pos).iter().any(|next| is_reached(board, reached, *next)))
        .count()
}

fn attempt(config: GeneratorConfig, rng: &mut GameRng) -> Option<VindiniumMap> {
    let size = config.size;
    let half = size / 2;

    // 1-2. A random quarter, mirrored: each row is row ++ reverse(row), then rows ++ reverse(rows).
    let mut quarter = Vec::with_capacity(half * half);
    for _ in 0..half * half {
        let roll = rng.below(100);
        quarter.push(if roll < config.mine_percent {
            Tile::Mine(None)
        } else if roll < config.mine_percent + config.wall_percent {
            Tile::Wood
        } else {
            Tile::Air
        });
    }
    let mut board = Board::filled(size, Tile::Air);
    for pos in board.positions().collect::<Vec<_>>() {
        let row = (pos.y as usize).min(size - 1 - pos.y as usize);
        let column = (pos.x as usize).min(size - 1 - pos.x as usize);
        board.set(pos, quarter[row * half + column]);
    }

    // 3. A spawn cell in the top-left quarter that reaches its mirrors through air.
    let spawn = (0..SPAWN_TRIES).find_map(|_| {
        // The row is drawn first, as the original draws its `x`.
        let row = rng.below(half - 2) as i32;
        let pos = Pos::new(rng.below(half - 2) as i32, row);
        if board.get(pos) != Some(Tile::Air) {
            return None;
        }
        let reached = reachable(&board, pos);
        (is_reached(&board, &reached, flip_rows(size, pos)) && is_reached(&board, &reached, flip_columns(size, pos)))
            .then_some(pos)
    })?;

    // 4. Wall off what the heroes cannot reach, keeping mines they can stand next to.
    let reached = reachable(&board, spawn);
    for pos in board.positions().collect::<Vec<_>>() {
        if is_reached(&board, &reached, pos) {
            continue;
        }
        let keep = matches!(board.get(pos), Some(Tile::Mine(_)))
            && neighbors(pos).iter().any(|next| is_reached(&board, &reached, *next));
        if !keep {
            board.set(pos, Tile::Wood);
        }
    }
    let mine_count = mines_next_to_air(&board, &reached);
    if mine_count == 0 {
        return None;
    }

    // 5. One group of four mirrored taverns that disconnects nothing.
    let reachable_count = reached.iter().filter(|r| **r).count();
    let mut candidates: Vec<Pos> = board
        .positions()
        .filter(|pos| (pos.x as usize) < half && (pos.y as usize) < half && *pos != spawn)
        .filter(|pos| is_reached(&board, &reached, *pos))
        .collect();
    rng.shuffle(&mut candidates);
    let placed = candidates.into_iter().find(|&pos| {
        let group = [pos, flip_rows(size, pos), flip_columns(size, pos), flip_rows(size, flip_columns(size, pos))];
        for cell in group {
            board.set(cell, Tile::Tavern);
        }
        let after = reachable(&board, spawn);
        let fits = after.iter().filter(|r| **r).count() == reachable_count - 4
            && mines_next_to_air(&board, &after) == mine_count;
        if !fits {
            for cell in group {
                board.set(cell, Tile::Air);
            }
        }
        fits
    });
    placed?;

    // 6. Heroes 1..4 at the spawn and its mirrors: 2 rows flipped, 3 both, 4 columns flipped.
    let starts = [spawn, flip_rows(size, spawn), flip_rows(size, flip_columns(size, spawn)), flip_columns(size, spawn)];
    Some(VindiniumMap { board, starts })
}
