//! The original's maze generator (`MazeGenerator.java`, by eulerscheZahl), drawing from
//! [`GameRng`] instead of `java.util.Random`: the same steps and distributions, not the
//! same mazes for a seed.
//!
//! 1. One random floor cell in a maze of obstacles.
//! 2. A tree carved by random walks.
//! 3. 12 + rand(10) loop openings, weighted by how far apart they join.
//! 4. Start and exit at least 16 steps apart.
//! 5. Treasures, preferring dead ends; boxes, potions and chests.
//! 6. Monsters from the cumulative distribution, never within 2 of the start.

use std::collections::VecDeque;

use super::map::{CELLS, Cell, HEIGHT, Item, MazeMap, MonsterKind, WIDTH, all_cells, chebyshev, neighbors};
use crate::{GameRng, Pos};

/// The least BFS distance between the start and the exit (`MAZE_WIDTH` in the original).
pub const MIN_EXIT_DISTANCE: u32 = WIDTH as u32;
/// Monsters are never placed within this Chebyshev distance of the start.
pub const MONSTER_START_CLEARANCE: i32 = 2;

/// Layouts tried before giving up; one fails only when no two floor cells are 16
/// steps apart, which has never been seen.
const ATTEMPTS: usize = 100;

/// The generator found no layout with a start and an exit far enough apart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no maze with a start and an exit {MIN_EXIT_DISTANCE} steps apart after {ATTEMPTS} layouts")]
pub struct GenerateError;

/// A random maze.
pub fn generate(rng: &mut GameRng) -> Result<MazeMap, GenerateError> {
    (0..ATTEMPTS).find_map(|_| attempt(rng)).ok_or(GenerateError)
}

/// A uniform number in `[0, 1)` with 53 random bits, as Java's `nextDouble`.
fn unit(rng: &mut GameRng) -> f64 {
    let high = rng.below(1 << 26) as f64;
    let low = rng.below(1 << 27) as f64;
    (high * (1u64 << 27) as f64 + low) / (1u64 << 53) as f64
}

/// The grid while it is built.
struct Grid {
    cells: Vec<Cell>,
}

impl Grid {
    fn get(&self, pos: Pos) -> Cell {
        self.cells[pos.index(WIDTH)]
    }

    fn set(&mut self, pos: Pos, cell: Cell) {
        self.cells[pos.index(WIDTH)] = cell;
    }

    fn is_floor(&self, pos: Pos) -> bool {
        self.get(pos) == Cell::Floor
    }

    fn is_open(&self, pos: Pos) -> bool {
        self.get(pos) != Cell::Obstacle
    }

    /// Obstacle cells next to `from` that can become floor without touching another
    /// corridor: exactly one floor 4-neighbour T, and no floor 8-neighbour but T and T's
    /// own 4-neighbours.
    fn candidates(&self, from: Pos) -> Vec<Pos> {
        neighbors(from)
            .filter(|&cell| {
                if self.get(cell) != Cell::Obstacle {
                    return false;
                }
                let mut floor = neighbors(cell).filter(|&n| self.is_floor(n));
                let (Some(touching), None) = (floor.next(), floor.next()) else { return false };
                let around = (-1..=1).flat_map(|dx| (-1..=1).map(move |dy| Pos::new(cell.x + dx, cell.y + dy)));
                !around
                    .filter(|&n| n != cell && n.on_board(WIDTH, HEIGHT) && self.is_floor(n))
                    .any(|n| n != touching && n.manhattan(touching) != 1)
            })
            .collect()
    }

    /// BFS distances from `from` over open cells; `None` for unreachable cells.
    fn distances(&self, from: Pos) -> Vec<Option<u32>> {
        let mut dist = vec![None; CELLS];
        dist[from.index(WIDTH)] = Some(0);
        let mut queue = VecDeque::from([from]);
        while let Some(pos) = queue.pop_front() {
            let next_dist = dist[pos.index(WIDTH)].map(|d| d + 1);
            for next in neighbors(pos) {
                if dist[next.index(WIDTH)].is_none() && self.is_open(next) {
                    dist[next.index(WIDTH)] = next_dist;
                    queue.push_back(next);
                }
            }
        }
        dist
    }

    /// Cells holding `cell`, in the original's order (column by column).
    fn all(&self, cell: Cell) -> Vec<Pos> {
        all_cells().filter(|&pos| self.get(pos) == cell).collect()
    }
}

/// Steps 1 and 2: one random floor cell, then random walks until nothing can grow.
fn carve_tree(grid: &mut Grid, rng: &mut GameRng) {
    let first = Pos::new(rng.below(WIDTH as usize) as i32, rng.below(HEIGHT as usize) as i32);
    grid.set(first, Cell::Floor);
    loop {
        let growing: Vec<Pos> =
            grid.all(Cell::Floor).into_iter().filter(|&pos| !grid.candidates(pos).is_empty()).collect();
        let Some(&from) = rng.pick(&growing) else { return };
        let mut at = from;
        while let Some(&next) = rng.pick(&grid.candidates(at)) {
            grid.set(next, Cell::Floor);
            at = next;
        }
    }
}

/// Step 3: loop openings. Each round draws a penalty and picks, weighted by
/// (farthest BFS distance between the cell's floor neighbours − penalty), one obstacle
/// cell with at least two floor neighbours. Picks are with replacement; afterwards a
/// coin per pick opens the cell.
fn open_loops(grid: &mut Grid, rng: &mut GameRng) {
    // The grid does not change while picking, so the distances are computed once.
    let spans: Vec<(Pos, u32)> = grid
        .all(Cell::Obstacle)
        .into_iter()
        .filter_map(|cell| {
            let floor: Vec<Pos> = neighbors(cell).filter(|&n| grid.is_floor(n)).collect();
            if floor.len() < 2 {
                return None;
            }
            let mut span = 0;
            for (i, &a) in floor.iter().enumerate() {
                let dist = grid.distances(a);
                for &b in &floor[i + 1..] {
                    span = span.max(dist[b.index(WIDTH)].unwrap_or(CELLS as u32));
                }
            }
            Some((cell, span))
        })
        .collect();
    let rounds = 12 + rng.below(10);
    let mut picks = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let penalty = rng.below(5) as u32;
        let weighted: Vec<(Pos, usize)> = spans
            .iter()
            .filter(|(_, span)| *span > penalty)
            .map(|&(cell, span)| (cell, (span - penalty) as usize))
            .collect();
        let total: usize = weighted.iter().map(|(_, weight)| weight).sum();
        if total == 0 {
            break;
        }
        let mut draw = rng.below(total);
        for &(cell, weight) in &weighted {
            if draw < weight {
                picks.push(cell);
                break;
            }
            draw -= weight;
        }
    }
    for cell in picks {
        if rng.below(2) == 0 {
            grid.set(cell, Cell::Floor);
        }
    }
}

/// One random cell of `floor` that `allowed` accepts, taken out of `floor`.
fn take(floor: &mut Vec<Pos>, rng: &mut GameRng, allowed: impl Fn(Pos) -> bool) -> Option<Pos> {
    let eligible: Vec<usize> = (0..floor.len()).filter(|&i| allowed(floor[i])).collect();
    let &index = rng.pick(&eligible)?;
    Some(floor.remove(index))
}

fn attempt(rng: &mut GameRng) -> Option<MazeMap> {
    let mut grid = Grid { cells: vec![Cell::Obstacle; CELLS] };
    carve_tree(&mut grid, rng);
    open_loops(&mut grid, rng);

    // 4. Start and exit: uniform over the ordered pairs of floor cells 16 or more
    //    steps apart (the original draws pairs until one is).
    let mut floor = grid.all(Cell::Floor);
    let mut far_pairs = Vec::new();
    for &start in &floor {
        let dist = grid.distances(start);
        far_pairs.extend(
            floor
                .iter()
                .filter(|end| dist[end.index(WIDTH)].is_some_and(|d| d >= MIN_EXIT_DISTANCE))
                .map(|&end| (start, end)),
        );
    }
    let &(start, exit) = rng.pick(&far_pairs)?;
    floor.retain(|&pos| pos != start && pos != exit);
    grid.set(start, Cell::Hero);
    grid.set(exit, Cell::Item(Item::Exit));

    // 5. Treasures: a draw that is not a dead end (one open neighbour) is redrawn, up
    //    to 10 times; the 11th draw is kept as it is.
    let treasures = 5 + rng.below(5);
    for _ in 0..treasures {
        let Some(&first) = rng.pick(&floor) else { break };
        let mut cell = first;
        for _ in 0..10 {
            if neighbors(cell).filter(|&n| grid.is_open(n)).count() == 1 {
                break;
            }
            cell = *rng.pick(&floor).unwrap_or(&cell);
        }
        floor.retain(|&pos| pos != cell);
        grid.set(cell, Cell::Item(Item::Treasure));
    }

    // 6. Boxes, potions and chests, anywhere on the remaining floor.
    let placements = [
        (Cell::Monster(MonsterKind::Box), 5 + rng.below(11)),
        (Cell::Item(Item::Potion), 4 + rng.below(4)),
        (Cell::Item(Item::HammerChest), rng.below(5)),
        (Cell::Item(Item::ScytheChest), rng.below(5)),
        (Cell::Item(Item::BowChest), rng.below(5)),
    ];
    for (cell, count) in placements {
        for _ in 0..count {
            let Some(pos) = take(&mut floor, rng, |_| true) else { break };
            grid.set(pos, cell);
        }
    }

    // 7. Monsters: skeleton, gargoyle, orc or vampire from cumulative probabilities
    //    drawn per maze; never within Chebyshev 2 of the start.
    let monsters = 30 + rng.below(21);
    let mut cumulative = [0.0; 4];
    let mut sum = 0.0;
    for (slot, (base, spread)) in cumulative.iter_mut().zip([(0.1, 0.4), (0.1, 0.2), (0.05, 0.1), (0.2, 0.5)]) {
        sum += base + spread * unit(rng);
        *slot = sum;
    }
    let kinds = [MonsterKind::Skeleton, MonsterKind::Gargoyle, MonsterKind::Orc, MonsterKind::Vampire];
    for _ in 0..monsters {
        let draw = unit(rng) * cumulative[3];
        let kind = cumulative.iter().position(|&p| draw <= p).map_or(MonsterKind::Vampire, |i| kinds[i]);
        let Some(pos) = take(&mut floor, rng, |pos| chebyshev(pos, start) > MONSTER_START_CLEARANCE) else {
            break;
        };
        grid.set(pos, Cell::Monster(kind));
    }
    MazeMap::from_cells(grid.cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_draws_stay_in_range() {
        let mut rng = GameRng::new(3, GameRng::MAP);
        let draws: Vec<f64> = (0..1000).map(|_| unit(&mut rng)).collect();
        assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((0.45..0.55).contains(&mean), "{mean}");
    }

    #[test]
    fn the_tree_is_a_tree() {
        // Before loops, floor cells form a tree: one fewer floor adjacency than cells.
        for seed in 0..20 {
            let mut rng = GameRng::new(seed, GameRng::MAP);
            let mut grid = Grid { cells: vec![Cell::Obstacle; CELLS] };
            carve_tree(&mut grid, &mut rng);
            let floor = grid.all(Cell::Floor);
            let edges: usize =
                floor.iter().map(|pos| neighbors(*pos).filter(|&n| grid.is_floor(n)).count()).sum::<usize>() / 2;
            assert_eq!(edges + 1, floor.len(), "seed {seed}");
            let dist = grid.distances(floor[0]);
            assert!(floor.iter().all(|pos| dist[pos.index(WIDTH)].is_some()), "seed {seed}");
            assert!(floor.len() > 60, "seed {seed}: only {} floor cells", floor.len());
        }
    }

    #[test]
    fn candidates_follow_the_touching_rule() {
        let mut grid = Grid { cells: vec![Cell::Obstacle; CELLS] };
        grid.set(Pos::new(5, 5), Cell::Floor);
        let mut found = grid.candidates(Pos::new(5, 5));
        found.sort();
        assert_eq!(found, vec![Pos::new(4, 5), Pos::new(5, 4), Pos::new(5, 6), Pos::new(6, 5)]);
        // A corridor (5,5)-(6,5): from (6,5), (7,5) may grow, and so may (6,4) and
        // (6,6): their only other floor 8-neighbour, (5,5), is a 4-neighbour of (6,5).
        grid.set(Pos::new(6, 5), Cell::Floor);
        let mut found = grid.candidates(Pos::new(6, 5));
        found.sort();
        assert_eq!(found, vec![Pos::new(6, 4), Pos::new(6, 6), Pos::new(7, 5)]);
        // A floor cell at (8,4) is diagonal to (7,5) and not next to (6,5): (7,5) may
        // no longer grow from (6,5).
        grid.set(Pos::new(8, 4), Cell::Floor);
        assert!(!grid.candidates(Pos::new(6, 5)).contains(&Pos::new(7, 5)));
    }
}
