//! The match state of Skookum Botwars and how one turn changes it: the rules of play.

use serde::Serialize;

use super::codec::FixedFields;
use super::{BotwarsAction, BotwarsRules};
use crate::{GameKind, GameRng, PlayerOutcome, PlayerStatus, Pos, Seat, SetupError};

/// An empty cell.
pub const EMPTY: u8 = b'.';
/// Energy.
pub const ENERGY: u8 = b'*';
/// The botlet letter of each side: seat 0 is `r`, seat 1 is `b`.
pub const BOTLET: [u8; 2] = [b'r', b'b'];
/// The dead marker of each side.
pub const DEAD: [u8; 2] = [b'x', b'X'];

/// One side's bank and spawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    /// Botlets this side can still spawn.
    pub energy: u32,
    /// The number of its spawn cell.
    pub spawn: usize,
    /// Set for good once an enemy botlet stands on the spawn.
    pub spawn_disabled: bool,
}

/// How a match ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Winner {
    /// The side in this seat won.
    Seat(Seat),
    /// Nobody won (decisions S-4 and S-5).
    Draw,
}

/// A Skookum Botwars match.
#[derive(Debug, Clone)]
pub struct Botwars {
    pub(super) rules: BotwarsRules,
    /// One letter per cell, in cell number order: the wire format's grid.
    pub(super) grid: Vec<u8>,
    pub(super) sides: [Side; 2],
    pub(super) turns_elapsed: u32,
    pub(super) winner: Option<Winner>,
    /// Each seat's status in the outcome: not `Ok` once disqualified.
    pub(super) status: [PlayerStatus; 2],
    /// The original's `gameId` (and `GameId`): the match seed's low 31 bits.
    pub(super) game_id: u64,
    /// Where the grid's botlets, energy and dead markers are.
    pub(super) pieces: Pieces,
    /// Every cell's neighbours, for this grid's size.
    pub(super) neighbors: Neighbors,
    /// Boxed, so that a Botwars match stays near the size of the other games' in
    /// `AnyGame`.
    pub(super) fixed_fields: Box<FixedFields>,
    /// Buffers a turn works in, kept so that a turn allocates nothing.
    scratch: Scratch,
}

/// Where the botlets, the energy and the dead markers are, kept in step with the grid
/// by every turn: a turn, the outcome and the built-in bots work on these few cells
/// rather than searching the whole grid for them.
#[derive(Debug, Clone, Default)]
pub(super) struct Pieces {
    /// Each side's botlets, in cell order (the order the built-in bots move them in).
    pub(super) botlets: [Vec<usize>; 2],
    /// The cells holding energy, in no particular order.
    pub(super) energy: Vec<usize>,
    /// The cells holding a dead marker, in no particular order, some more than once.
    dead: Vec<usize>,
}

impl Pieces {
    /// The pieces of `grid`, found by one pass over it.
    fn of(grid: &[u8]) -> Pieces {
        let mut pieces = Pieces::default();
        for (cell, &letter) in grid.iter().enumerate() {
            match letter {
                ENERGY => pieces.energy.push(cell),
                b'r' => pieces.botlets[0].push(cell),
                b'b' => pieces.botlets[1].push(cell),
                b'x' | b'X' => pieces.dead.push(cell),
                _ => {}
            }
        }
        pieces
    }
}

/// Every cell's 4-neighbours on the grid, up, right, down, left (no wrap), worked out
/// once per match: a turn and the built-in bots look them up for every botlet.
#[derive(Debug, Clone)]
pub(super) struct Neighbors(Vec<([u16; 4], u8)>);

impl Neighbors {
    /// The neighbours of every cell of a grid of `cols` columns and `rows` rows (at
    /// most 100 each, `BotwarsRules::check`, so that a cell number fits a u16).
    fn new(cols: usize, rows: usize) -> Neighbors {
        let mut around = Vec::with_capacity(cols * rows);
        let (cols, rows) = (cols as i32, rows as i32);
        // Row by row, as cells are numbered.
        for y in 0..rows {
            for x in 0..cols {
                let mut cells = [0; 4];
                let mut count = 0;
                for (dx, dy) in [(0, -1), (1, 0), (0, 1), (-1, 0)] {
                    let next = Pos::new(x, y).offset(dx, dy);
                    if next.on_board(cols, rows) {
                        cells[count] = next.index(cols) as u16;
                        count += 1;
                    }
                }
                around.push((cells, count as u8));
            }
        }
        Neighbors(around)
    }

    /// The neighbours of `cell`, a cell of the grid.
    pub(super) fn of(&self, cell: usize) -> impl Iterator<Item = usize> + '_ {
        let (cells, count) = &self.0[cell];
        cells[..usize::from(*count)].iter().map(|&next| usize::from(next))
    }

    /// How many neighbours of `cell` hold `letter` in `grid`.
    fn count_around(&self, grid: &[u8], cell: usize, letter: u8) -> u8 {
        self.of(cell).map(|next| u8::from(grid[next] == letter)).sum()
    }

    /// Whether `to` is a cell and `from` the same cell or one of its neighbours.
    fn adjacent(&self, from: usize, to: usize) -> bool {
        to < self.0.len() && (from == to || (from < self.0.len() && self.of(from).any(|next| next == to)))
    }
}

/// The working buffers of [`Botwars::play_turn`]; their contents mean nothing between
/// turns.
#[derive(Debug, Clone, Default)]
struct Scratch {
    /// The grid as the moves see it, then each living botlet's count of enemies.
    old: Vec<u8>,
    /// The cells botlets were placed on in step 1 (a cell twice when they collided).
    placed: Vec<usize>,
    /// The botlets that die in the battle (some more than once).
    dies: Vec<usize>,
    /// Per cell, the sides with a botlet next to it (bit 0 for r, bit 1 for b), marked
    /// on the energy only.
    touching: Vec<u8>,
}

impl Botwars {
    /// A match from a position: `grid` in the wire format and each side's energy.
    /// Spawns are the original's: (1, 1) and (cols − 2, rows − 2).
    pub fn from_position(rules: BotwarsRules, grid: &str, energy: [u32; 2], seed: u64) -> Result<Self, SetupError> {
        let cells = rules.check()?;
        if grid.len() != cells || !grid.bytes().all(|c| b".rb*xX".contains(&c)) {
            return Err(SetupError::Map {
                game: GameKind::Botwars,
                problem: format!("a grid is {cells} characters of . r b * x X"),
            });
        }
        let spawns = [rules.cols + 1, (rules.rows - 2) * rules.cols + rules.cols - 2];
        let sides = [0, 1].map(|seat| Side { energy: energy[seat], spawn: spawns[seat], spawn_disabled: false });
        let neighbors = Neighbors::new(rules.cols, rules.rows);
        let game_id = seed & 0x7fff_ffff;
        let fixed_fields = Box::new(FixedFields::new(&rules, &sides, game_id));
        Ok(Botwars {
            rules,
            grid: grid.as_bytes().to_vec(),
            sides,
            turns_elapsed: 0,
            winner: None,
            status: [PlayerStatus::Ok; 2],
            game_id,
            pieces: Pieces::of(grid.as_bytes()),
            neighbors,
            fixed_fields,
            scratch: Scratch::default(),
        })
    }

    /// The grid in the wire format.
    pub fn grid(&self) -> &str {
        // Only ASCII cell letters are ever written into the grid.
        std::str::from_utf8(&self.grid).unwrap_or_default()
    }

    /// Both sides' banks and spawns.
    pub fn sides(&self) -> &[Side; 2] {
        &self.sides
    }

    /// The result, once there is one.
    pub fn winner(&self) -> Option<Winner> {
        self.winner
    }

    /// Turns played.
    pub fn turns_elapsed(&self) -> u32 {
        self.turns_elapsed
    }

    /// Steps 1 to 7 of a turn, for two well-formed move lists.
    ///
    /// Every step works on the lists of [`Pieces`] and on the cells placed in step 1,
    /// so a turn costs little more than the botlets' number (and a pass over half the
    /// grid when energy may appear), and allocates nothing.
    fn play_turn(&mut self, moves: [&[Option<(usize, usize)>]; 2], rng: &mut GameRng) {
        let Botwars { rules, grid, sides, turns_elapsed, winner, pieces, neighbors, scratch, .. } = self;
        let Scratch { old, placed, dies, touching } = scratch;
        placed.clear();
        dies.clear();
        // 0. Last turn's dead are cleared. `old` keeps the grid as the moves see it;
        //    the grid itself, emptied of botlets, receives them in step 1.
        for cell in pieces.dead.drain(..) {
            grid[cell] = EMPTY;
        }
        old.clear();
        old.extend_from_slice(grid);
        for &cell in pieces.botlets.iter().flatten() {
            grid[cell] = EMPTY;
        }

        // 1. Move: a botlet can be moved once, the first move wins. Any botlet entering
        //    an occupied cell dies there (decision S-2). Then the unmoved are placed,
        //    side r first.
        let mut place = |grid: &mut [u8], cell: usize, seat: usize| {
            let taken = grid[cell] != EMPTY && grid[cell] != ENERGY;
            grid[cell] = if taken { DEAD[seat] } else { BOTLET[seat] };
            placed.push(cell);
        };
        for seat in 0..2 {
            for &(from, to) in moves[seat].iter().flatten() {
                if old.get(from) == Some(&BOTLET[seat]) && neighbors.adjacent(from, to) {
                    old[from] = EMPTY;
                    place(grid, to, seat);
                }
            }
        }
        for (seat, botlets) in pieces.botlets.iter().enumerate() {
            for &cell in botlets {
                if old[cell] == BOTLET[seat] {
                    place(grid, cell, seat);
                }
            }
        }

        // 2. Battle: every adjacent r–b pair compares how many enemies each touches.
        //    `old` now holds each living botlet's count of adjacent enemies.
        for &cell in placed.iter() {
            match grid[cell] {
                b'r' => old[cell] = neighbors.count_around(grid, cell, b'b'),
                b'b' => old[cell] = neighbors.count_around(grid, cell, b'r'),
                _ => {}
            }
        }
        let enemies = &*old;
        for &red in placed.iter() {
            if grid[red] != b'r' || enemies[red] == 0 {
                continue;
            }
            for blue in neighbors.of(red).filter(|&next| grid[next] == b'b') {
                if enemies[red] >= enemies[blue] {
                    dies.push(red);
                }
                if enemies[red] <= enemies[blue] {
                    dies.push(blue);
                }
            }
        }
        for &cell in dies.iter() {
            grid[cell] = match grid[cell] {
                b'r' => DEAD[0],
                b'b' => DEAD[1],
                already_dead => already_dead,
            };
        }
        // The placed cells keep their letters from here on (the later steps only write
        // on empty cells and energy): they are the new lists of botlets and dead.
        pieces.botlets.iter_mut().for_each(Vec::clear);
        for &cell in placed.iter() {
            match grid[cell] {
                b'r' => pieces.botlets[0].push(cell),
                b'b' => pieces.botlets[1].push(cell),
                _ => pieces.dead.push(cell),
            }
        }

        // 3. Raze: an enemy botlet on a spawn disables it for good.
        for seat in 0..2 {
            if grid[sides[seat].spawn] == BOTLET[1 - seat] {
                sides[seat].spawn_disabled = true;
            }
        }

        // 4. Spawn, on an empty spawn cell only (energy, dead or living botlets block it).
        for ((side, letter), botlets) in sides.iter_mut().zip(BOTLET).zip(&mut pieces.botlets) {
            if !side.spawn_disabled && side.energy > 0 && grid[side.spawn] == EMPTY {
                side.energy -= 1;
                grid[side.spawn] = letter;
                botlets.push(side.spawn);
            }
            botlets.sort_unstable();
        }

        // 5. Gather: energy touched by one side only goes to that side; touched by
        //    both, it is lost. (Energy a botlet stepped on is gone already.) The
        //    botlets mark the energy they touch: they are fewer than the energy cells.
        touching.clear();
        touching.resize(grid.len(), 0);
        for (seat, botlets) in pieces.botlets.iter().enumerate() {
            for &cell in botlets {
                for next in neighbors.of(cell).filter(|&next| grid[next] == ENERGY) {
                    touching[next] |= 1 << seat;
                }
            }
        }
        pieces.energy.retain(|&cell| {
            match touching[cell] {
                0 => return grid[cell] == ENERGY,
                0b01 => sides[0].energy += 1,
                0b10 => sides[1].energy += 1,
                _ => {}
            }
            grid[cell] = EMPTY;
            false
        });

        // 6. Energy appears on a random empty cell and its 180° mirror.
        let every = rules.energy_every;
        if every > 0
            && turns_elapsed.is_multiple_of(every)
            && let Some(cell) = energy_cell(grid, rng)
        {
            let mirror = grid.len() - 1 - cell;
            grid[cell] = ENERGY;
            grid[mirror] = ENERGY;
            pieces.energy.extend([cell, mirror]);
        }

        // 7-8. Count the turn; end at the limit or when a side has no botlets left.
        *turns_elapsed += 1;
        let (red, blue) = (pieces.botlets[0].len(), pieces.botlets[1].len());
        if *turns_elapsed >= rules.max_turns || red == 0 || blue == 0 {
            *winner = Some(match red.cmp(&blue) {
                std::cmp::Ordering::Greater => Winner::Seat(0),
                std::cmp::Ordering::Less => Winner::Seat(1),
                std::cmp::Ordering::Equal => Winner::Draw,
            });
        }
    }

    /// One step: each side's action, then the turn when neither side is
    /// disqualified. Nothing happens once the match is over.
    pub(super) fn step(&mut self, actions: Vec<(Seat, BotwarsAction)>, rng: &mut GameRng) {
        if self.winner.is_some() {
            return;
        }
        let mut moves: [Vec<Option<(usize, usize)>>; 2] = [Vec::new(), Vec::new()];
        let mut disqualified = [false; 2];
        for (seat, action) in actions.into_iter().filter(|(seat, _)| *seat < 2) {
            match action {
                BotwarsAction::Moves(list) => moves[seat] = list,
                BotwarsAction::Disqualified(status) => {
                    disqualified[seat] = true;
                    self.status[seat] = status;
                }
            }
        }
        // A disqualification ends the match at once: no turn is played or counted.
        self.winner = match disqualified {
            [true, true] => Some(Winner::Draw),
            [true, false] => Some(Winner::Seat(1)),
            [false, true] => Some(Winner::Seat(0)),
            [false, false] => {
                self.play_turn([&moves[0], &moves[1]], rng);
                return;
            }
        };
    }

    /// Each side's botlets as its score, its rank by the winner, and its status.
    pub(super) fn player_outcomes(&self) -> Vec<PlayerOutcome> {
        let scores = self.pieces.botlets.each_ref().map(|botlets| botlets.len() as i64);
        let ranks = match self.winner {
            Some(Winner::Seat(0)) => [1, 2],
            Some(Winner::Seat(_)) => [2, 1],
            Some(Winner::Draw) | None => [1, 1],
        };
        (0..2).map(|seat| PlayerOutcome { score: scores[seat], rank: ranks[seat], status: self.status[seat] }).collect()
    }
}

/// One of the cells where energy may appear, drawn uniformly: an empty cell whose 180°
/// mirror is another empty cell; `None` when there is none.
///
/// The original draws from the list of all such cells in cell order. That list is
/// symmetric: its first half is the candidates `c` below the middle, its second half
/// their mirrors in reverse order, so its `k`-th cell and its `(n - 1 - k)`-th are one
/// pair. Counting the candidates below the middle alone and drawing the same number
/// from the same range therefore places the same pair, with half the reads and no list.
fn energy_cell(grid: &[u8], rng: &mut GameRng) -> Option<usize> {
    let free_pairs = FreePairs::of(grid);
    let below_middle = free_pairs.count();
    if below_middle == 0 {
        return None;
    }
    let drawn = rng.below(2 * below_middle);
    free_pairs.nth(if drawn < below_middle { drawn } else { 2 * below_middle - 1 - drawn })
}

/// The cells below the middle of a grid that are empty and have an empty mirror, read
/// eight cells to a word: a few word operations compare eight cells with their
/// mirrors, where a loop over cells and their mirrors (read backwards) costs a few per
/// cell, and energy may appear every few turns.
struct FreePairs<'a> {
    grid: &'a [u8],
}

impl FreePairs<'_> {
    fn of(grid: &[u8]) -> FreePairs<'_> {
        FreePairs { grid }
    }

    /// The groups of eight cells below the middle: for each, a word with the byte
    /// `0x01` in place `i` when the group's cell `i` is a free pair, `0` elsewhere.
    /// The cells past the last whole group are [`FreePairs::rest`].
    fn words(&self) -> impl Iterator<Item = u64> + '_ {
        let half = self.grid.len() / 2;
        let dots = u64::from_le_bytes([EMPTY; 8]);
        // Every chunk is eight bytes: the conversion cannot fail.
        let word = |bytes: &[u8]| <[u8; 8]>::try_from(bytes).map_or(0, u64::from_le_bytes);
        // The mirrors of cells `8 k..8 k + 8` are the `k`-th eight bytes from the end,
        // backwards: read forwards, then the word's bytes are reversed.
        let cells = self.grid[..half].chunks_exact(8);
        let mirrors = self.grid[self.grid.len() - half..].rchunks_exact(8);
        cells.zip(mirrors).map(move |(cells, mirrors)| {
            let differ = (word(cells) ^ dots) | (word(mirrors).swap_bytes() ^ dots);
            zero_bytes(differ) >> 7
        })
    }

    /// The free pairs among the cells below the middle after the last whole group.
    fn rest(&self) -> impl Iterator<Item = usize> + '_ {
        let (half, last) = (self.grid.len() / 2, self.grid.len() - 1);
        (half / 8 * 8..half).filter(move |&cell| self.grid[cell] == EMPTY && self.grid[last - cell] == EMPTY)
    }

    /// How many cells below the middle are free pairs.
    fn count(&self) -> usize {
        // Bytes of 0 or 1, summed into the top byte by the multiplication (at most 8).
        let in_words: u64 = self.words().map(|word| word.wrapping_mul(0x0101_0101_0101_0101) >> 56).sum();
        in_words as usize + self.rest().count()
    }

    /// The `rank`-th cell below the middle that is a free pair, counting from 0.
    fn nth(&self, mut rank: usize) -> Option<usize> {
        for (group, mut word) in self.words().enumerate() {
            let count = (word.wrapping_mul(0x0101_0101_0101_0101) >> 56) as usize;
            if rank >= count {
                rank -= count;
                continue;
            }
            for _ in 0..rank {
                word &= word - 1;
            }
            return Some(group * 8 + word.trailing_zeros() as usize / 8);
        }
        self.rest().nth(rank)
    }
}

/// The byte `0x80` in every place of `word` that holds a zero byte, `0` elsewhere:
/// exactly, as no carry crosses from one byte to the next (unlike the shorter test of
/// whether some byte is zero).
fn zero_bytes(word: u64) -> u64 {
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((word & LOW) + LOW) | word | LOW)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A grid of `rows` by `cols` cells drawn from `letters` (indices into `. r b * x X`,
    /// repeated as needed).
    fn grid_of(rows: usize, cols: usize, letters: &[usize]) -> String {
        (0..rows * cols).map(|cell| char::from(b".rb*xX"[letters[cell % letters.len()] % 6])).collect()
    }

    proptest! {
        /// The original's draw: every empty cell with an empty mirror, in cell order,
        /// one picked uniformly. `energy_cell` must place the same pair with the same
        /// draws, on any grid (odd sizes have a middle cell that is its own mirror).
        #[test]
        fn energy_lands_where_the_originals_list_puts_it(
            rows in 3..12usize,
            cols in 3..12usize,
            // Mostly empty cells, so that both sparse and crowded grids come up.
            letters in proptest::collection::vec(prop_oneof![4 => Just(0usize), 1 => 0..6usize], 1..200),
            seed: u64,
        ) {
            let grid = grid_of(rows, cols, &letters).into_bytes();
            let last = grid.len() - 1;
            let candidates: Vec<usize> = (0..grid.len())
                .filter(|&cell| grid[cell] == EMPTY && grid[last - cell] == EMPTY && last - cell != cell)
                .collect();
            let mut original = GameRng::new(seed, GameRng::RULES);
            let expected = original.pick(&candidates).map(|&cell| cell.min(last - cell));
            let mut rng = GameRng::new(seed, GameRng::RULES);
            prop_assert_eq!(energy_cell(&grid, &mut rng), expected);
            prop_assert_eq!(rng.below(1 << 20), original.below(1 << 20), "the same draws were made");
        }

        /// Whatever is played, the lists of pieces are the grid's.
        #[test]
        fn the_pieces_stay_those_of_the_grid(
            rows in 3..9usize,
            cols in 4..9usize,
            letters in proptest::collection::vec(0..6usize, 1..100),
            turns in proptest::collection::vec(
                (proptest::collection::vec((0..90usize, 0..5usize), 0..12), proptest::collection::vec((0..90usize, 0..5usize), 0..12)),
                1..8,
            ),
            seed: u64,
        ) {
            let rules = BotwarsRules { rows, cols, energy_every: 2, ..BotwarsRules::default() };
            let mut game = Botwars::from_position(rules, &grid_of(rows, cols, &letters), [2, 3], seed).expect("a valid grid");
            let mut rng = GameRng::new(seed, GameRng::RULES);
            for (red, blue) in turns {
                // Moves from a cell to a neighbour, itself or anywhere, some from empty cells.
                let moves = |list: Vec<(usize, usize)>| {
                    let moves = list.into_iter().map(|(from, to)| {
                        let to = game.neighbors.0.get(from).and_then(|(cells, _)| cells.get(to).copied()).map_or(to, usize::from);
                        Some((from, to))
                    });
                    BotwarsAction::Moves(moves.collect())
                };
                let actions = vec![(0, moves(red)), (1, moves(blue))];
                game.step(actions, &mut rng);
                let mut expected = Pieces::of(&game.grid);
                let mut pieces = game.pieces.clone();
                for list in [&mut expected.energy, &mut expected.dead, &mut pieces.energy, &mut pieces.dead] {
                    list.sort_unstable();
                    list.dedup();
                }
                prop_assert_eq!(&pieces.botlets, &expected.botlets);
                prop_assert_eq!(&pieces.energy, &expected.energy);
                prop_assert_eq!(&pieces.dead, &expected.dead);
            }
        }
    }
}
