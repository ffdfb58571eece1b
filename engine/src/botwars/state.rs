//! The match state of Skookum Botwars and how one turn changes it: the rules of play.

use serde::Serialize;

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
    /// Buffers a turn works in, kept so that a turn allocates nothing.
    scratch: Scratch,
}

/// The working buffers of [`Botwars::play_turn`]; their contents mean nothing between
/// turns.
#[derive(Debug, Clone, Default)]
struct Scratch {
    /// The grid as the moves see it, then each living botlet's count of enemies.
    old: Vec<u8>,
    /// Each side's botlets at the start of the turn, in cell order.
    unmoved: [Vec<usize>; 2],
    /// The cells botlets were placed on in step 1 (a cell twice when they collided).
    placed: Vec<usize>,
    /// The energy at the start of the turn, then the cells where energy may appear.
    energy: Vec<usize>,
    /// The botlets that die in the battle (some more than once).
    dies: Vec<usize>,
}

impl Scratch {
    fn clear(&mut self) {
        let Scratch { old, unmoved, placed, energy, dies } = self;
        old.clear();
        unmoved.iter_mut().for_each(Vec::clear);
        placed.clear();
        energy.clear();
        dies.clear();
    }
}

/// The 4-neighbours of cell number `cell` on a grid of `cols` columns and `rows`
/// rows, up, right, down, left; `None` past an edge (no wrap).
pub(crate) fn neighbors(cell: usize, cols: usize, rows: usize) -> [Option<usize>; 4] {
    // Sizes are checked to be at most 100 (`BotwarsRules::check`): they fit an i32.
    let (cols, rows) = (cols as i32, rows as i32);
    let pos = Pos::of_index(cell, cols);
    [(0, -1), (1, 0), (0, 1), (-1, 0)].map(|(dx, dy)| {
        let next = pos.offset(dx, dy);
        next.on_board(cols, rows).then(|| next.index(cols))
    })
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
        Ok(Botwars {
            rules,
            grid: grid.as_bytes().to_vec(),
            sides,
            turns_elapsed: 0,
            winner: None,
            status: [PlayerStatus::Ok; 2],
            game_id: seed & 0x7fff_ffff,
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

    /// Whether `to` is a cell and `from` the same cell or one of its 4-neighbours.
    fn adjacent(&self, from: usize, to: usize) -> bool {
        let cols = self.rules.cols as i32;
        to < self.grid.len() && Pos::of_index(from, cols).manhattan(Pos::of_index(to, cols)) <= 1
    }

    /// The 4-neighbours of `cell`, up, right, down, left; `None` past an edge.
    fn neighbors(&self, cell: usize) -> [Option<usize>; 4] {
        neighbors(cell, self.rules.cols, self.rules.rows)
    }

    /// Whether a neighbour of `cell` holds `letter`.
    fn touches(&self, cell: usize, letter: u8) -> bool {
        self.neighbors(cell).into_iter().flatten().any(|n| self.grid[n] == letter)
    }

    /// How many neighbours of `cell` hold `letter`.
    fn count_around(&self, cell: usize, letter: u8) -> u8 {
        self.neighbors(cell).into_iter().flatten().map(|n| u8::from(self.grid[n] == letter)).sum()
    }

    fn count(&self, letter: u8) -> usize {
        memchr::memchr_iter(letter, &self.grid).count()
    }

    /// Steps 1 to 7 of a turn, for two well-formed move lists.
    ///
    /// One search of the grid (memchr's, many cells at a time) finds the botlets and the
    /// energy; every later step works on those lists, so a turn costs little more than
    /// the botlets' number (and a scan of the grid when energy may appear), and
    /// allocates nothing.
    fn play_turn(&mut self, moves: [&[Option<(usize, usize)>]; 2], rng: &mut GameRng) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        // 0. Last turn's dead are cleared. `old` keeps the grid as the moves see it;
        //    the grid itself, emptied of botlets, receives them in step 1.
        scratch.dies.extend(memchr::memchr2_iter(DEAD[0], DEAD[1], &self.grid));
        for &cell in &scratch.dies {
            self.grid[cell] = EMPTY;
        }
        scratch.dies.clear();
        for cell in memchr::memchr3_iter(BOTLET[0], BOTLET[1], ENERGY, &self.grid) {
            match self.grid[cell] {
                ENERGY => scratch.energy.push(cell),
                b'r' => scratch.unmoved[0].push(cell),
                _ => scratch.unmoved[1].push(cell),
            }
        }
        scratch.old.extend_from_slice(&self.grid);
        for cell in scratch.unmoved.iter().flatten() {
            self.grid[*cell] = EMPTY;
        }

        // 1. Move: a botlet can be moved once, the first move wins. Any botlet entering
        //    an occupied cell dies there (decision S-2). Then the unmoved are placed,
        //    side r first, each side in cell order.
        let place = |grid: &mut [u8], placed: &mut Vec<usize>, cell: usize, seat: usize| {
            let taken = grid[cell] != EMPTY && grid[cell] != ENERGY;
            grid[cell] = if taken { DEAD[seat] } else { BOTLET[seat] };
            placed.push(cell);
        };
        for seat in 0..2 {
            for &(from, to) in moves[seat].iter().flatten() {
                if self.adjacent(from, to) && scratch.old.get(from) == Some(&BOTLET[seat]) {
                    scratch.old[from] = EMPTY;
                    place(&mut self.grid, &mut scratch.placed, to, seat);
                }
            }
        }
        for (seat, unmoved) in scratch.unmoved.iter().enumerate() {
            for &cell in unmoved {
                if scratch.old[cell] == BOTLET[seat] {
                    place(&mut self.grid, &mut scratch.placed, cell, seat);
                }
            }
        }

        // 2. Battle: every adjacent r–b pair compares how many enemies each touches.
        //    `old` now holds each living botlet's count of adjacent enemies.
        for &cell in &scratch.placed {
            match self.grid[cell] {
                b'r' => scratch.old[cell] = self.count_around(cell, b'b'),
                b'b' => scratch.old[cell] = self.count_around(cell, b'r'),
                _ => {}
            }
        }
        let enemies = &scratch.old;
        for &red in &scratch.placed {
            if self.grid[red] != b'r' || enemies[red] == 0 {
                continue;
            }
            for blue in self.neighbors(red).into_iter().flatten().filter(|&n| self.grid[n] == b'b') {
                if enemies[red] >= enemies[blue] {
                    scratch.dies.push(red);
                }
                if enemies[red] <= enemies[blue] {
                    scratch.dies.push(blue);
                }
            }
        }
        for &cell in &scratch.dies {
            self.grid[cell] = match self.grid[cell] {
                b'r' => DEAD[0],
                b'b' => DEAD[1],
                already_dead => already_dead,
            };
        }

        // 3. Raze: an enemy botlet on a spawn disables it for good.
        for seat in 0..2 {
            if self.grid[self.sides[seat].spawn] == BOTLET[1 - seat] {
                self.sides[seat].spawn_disabled = true;
            }
        }

        // 4. Spawn, on an empty spawn cell only (energy, dead or living botlets block it).
        for (side, letter) in self.sides.iter_mut().zip(BOTLET) {
            if !side.spawn_disabled && side.energy > 0 && self.grid[side.spawn] == EMPTY {
                side.energy -= 1;
                self.grid[side.spawn] = letter;
            }
        }

        // 5. Gather: energy touched by one side only goes to that side; touched by
        //    both, it is lost. (Energy a botlet stepped on is gone already.)
        for &cell in &scratch.energy {
            if self.grid[cell] != ENERGY {
                continue;
            }
            let (red, blue) = (self.touches(cell, b'r'), self.touches(cell, b'b'));
            if red || blue {
                self.grid[cell] = EMPTY;
            }
            match (red, blue) {
                (true, false) => self.sides[0].energy += 1,
                (false, true) => self.sides[1].energy += 1,
                _ => {}
            }
        }

        // 6. Energy appears on a random empty cell and its 180° mirror.
        let every = self.rules.energy_every;
        if every > 0 && self.turns_elapsed.is_multiple_of(every) {
            let last = self.grid.len() - 1;
            let grid = &self.grid;
            scratch.energy.clear();
            scratch.energy.extend(
                (0..grid.len())
                    .filter(|&cell| grid[cell] == EMPTY && grid[last - cell] == EMPTY && last - cell != cell),
            );
            if let Some(&cell) = rng.pick(&scratch.energy) {
                self.grid[cell] = ENERGY;
                self.grid[last - cell] = ENERGY;
            }
        }
        self.scratch = scratch;

        // 7-8. Count the turn; end at the limit or when a side has no botlets left.
        self.turns_elapsed += 1;
        let (red, blue) = (self.count(b'r'), self.count(b'b'));
        if self.turns_elapsed >= self.rules.max_turns || red == 0 || blue == 0 {
            self.winner = Some(match red.cmp(&blue) {
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
        let scores = [self.count(b'r') as i64, self.count(b'b') as i64];
        let ranks = match self.winner {
            Some(Winner::Seat(0)) => [1, 2],
            Some(Winner::Seat(_)) => [2, 1],
            Some(Winner::Draw) | None => [1, 1],
        };
        (0..2).map(|seat| PlayerOutcome { score: scores[seat], rank: ranks[seat], status: self.status[seat] }).collect()
    }
}
