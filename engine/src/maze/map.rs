//! The board, the things a maze holds and the map file format.
//!
//! A map file is the maze drawn as text, as `MazeGenerator` prints it: 12 lines of 16
//! characters, one per cell, `x` the column (0..15) and `y` the line (0..11):
//!
//! | char | cell |
//! |---|---|
//! | `.` | floor |
//! | `X` | obstacle |
//! | `H` | the hero's start (over floor), exactly once |
//! | `E` | the exit, exactly once |
//! | `t` `p` | treasure, potion |
//! | `a` `b` `c` | hammer, scythe, bow chest |
//! | `0`..`4` | box, skeleton, gargoyle, orc, vampire (over floor) |

use std::fmt;

use crate::{MapError, Pos};

/// Columns of a maze.
pub const WIDTH: i32 = 16;
/// Rows of a maze.
pub const HEIGHT: i32 = 12;
/// Cells of a maze.
pub const CELLS: usize = (WIDTH * HEIGHT) as usize;

/// Steps in any of the 8 directions between two cells: the distance of views and ranges.
pub fn chebyshev(a: Pos, b: Pos) -> i32 {
    (a.x - b.x).abs().max((a.y - b.y).abs())
}

/// The 4-neighbours of `pos` inside the maze, in the original's order: x − 1, x + 1, y − 1, y + 1.
pub fn neighbors(pos: Pos) -> impl Iterator<Item = Pos> {
    [(-1, 0), (1, 0), (0, -1), (0, 1)]
        .into_iter()
        .map(move |(dx, dy)| pos.offset(dx, dy))
        .filter(|next| next.on_board(WIDTH, HEIGHT))
}

/// Every cell of the maze, column by column (x, then y), as the protocol sorts them.
pub fn all_cells() -> impl Iterator<Item = Pos> {
    (0..WIDTH).flat_map(|x| (0..HEIGHT).map(move |y| Pos::new(x, y)))
}

/// Something the hero picks up by moving onto it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Item {
    /// +10000 score; the game ends with success.
    Exit,
    /// +100 score.
    Treasure,
    /// +10 hp, up to 20.
    Potion,
    /// +1 hammer charge.
    HammerChest,
    /// +1 scythe charge.
    ScytheChest,
    /// +1 bow charge.
    BowChest,
}

impl Item {
    /// Every item, by type id.
    pub const ALL: [Item; 6] =
        [Item::Exit, Item::Treasure, Item::Potion, Item::HammerChest, Item::ScytheChest, Item::BowChest];

    /// The protocol's `etype`.
    pub fn type_id(self) -> i32 {
        match self {
            Item::Exit => 0,
            Item::Treasure => 2,
            Item::Potion => 3,
            Item::HammerChest => 4,
            Item::ScytheChest => 5,
            Item::BowChest => 6,
        }
    }

    /// The protocol's `evalue`.
    pub fn value(self) -> i32 {
        match self {
            Item::Exit => super::rules::EXIT_SCORE as i32,
            Item::Treasure => super::rules::TREASURE_SCORE as i32,
            Item::Potion => super::rules::POTION_HP,
            Item::HammerChest => 1,
            Item::ScytheChest => 2,
            Item::BowChest => 3,
        }
    }

    /// The map character.
    pub fn symbol(self) -> u8 {
        match self {
            Item::Exit => b'E',
            Item::Treasure => b't',
            Item::Potion => b'p',
            Item::HammerChest => b'a',
            Item::ScytheChest => b'b',
            Item::BowChest => b'c',
        }
    }

    /// The item drawn as `symbol`, if any.
    pub fn from_symbol(symbol: u8) -> Option<Item> {
        Item::ALL.into_iter().find(|item| item.symbol() == symbol)
    }
}

/// A kind of monster. Boxes are monsters that never act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MonsterKind {
    /// 1 hp, inert: an obstacle the hero can break.
    Box,
    /// 6 hp, view 1, range 1, 1 damage.
    Skeleton,
    /// 14 hp, view 2, range 1, 2 damage.
    Gargoyle,
    /// 8 hp, view 2, range 2, 2 damage.
    Orc,
    /// 10 hp, view 3, range 1, 3 damage.
    Vampire,
}

impl MonsterKind {
    /// Every kind, by type id.
    pub const ALL: [MonsterKind; 5] =
        [MonsterKind::Box, MonsterKind::Skeleton, MonsterKind::Gargoyle, MonsterKind::Orc, MonsterKind::Vampire];

    fn stats(self) -> (i32, i32, i32, i32) {
        // (hp, view, range, damage), as `Constants.MONSTER_STATS`.
        match self {
            MonsterKind::Box => (1, 0, 0, 0),
            MonsterKind::Skeleton => (6, 1, 1, 1),
            MonsterKind::Gargoyle => (14, 2, 1, 2),
            MonsterKind::Orc => (8, 2, 2, 2),
            MonsterKind::Vampire => (10, 3, 1, 3),
        }
    }

    /// Initial hp, which is also the score for a kill.
    pub fn max_hp(self) -> i32 {
        self.stats().0
    }

    /// View range (Chebyshev): within it and out of attack range, the monster steps.
    pub fn view(self) -> i32 {
        self.stats().1
    }

    /// Attack range (Chebyshev).
    pub fn range(self) -> i32 {
        self.stats().2
    }

    /// Damage per attack.
    pub fn damage(self) -> i32 {
        self.stats().3
    }

    /// The protocol's `etype`: 7 to 11.
    pub fn type_id(self) -> i32 {
        match self {
            MonsterKind::Box => 7,
            MonsterKind::Skeleton => 8,
            MonsterKind::Gargoyle => 9,
            MonsterKind::Orc => 10,
            MonsterKind::Vampire => 11,
        }
    }

    /// The map character, `0` to `4`.
    pub fn symbol(self) -> u8 {
        b'0' + (self.type_id() - 7) as u8
    }

    /// The kind drawn as `symbol`, if any.
    pub fn from_symbol(symbol: u8) -> Option<MonsterKind> {
        MonsterKind::ALL.into_iter().find(|kind| kind.symbol() == symbol)
    }
}

/// What a map cell starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// Walkable and empty.
    Floor,
    /// An obstacle (wall).
    Obstacle,
    /// The hero's start.
    Hero,
    /// An item on floor.
    Item(Item),
    /// A monster on floor.
    Monster(MonsterKind),
}

impl Cell {
    /// The map character.
    pub fn symbol(self) -> u8 {
        match self {
            Cell::Floor => b'.',
            Cell::Obstacle => b'X',
            Cell::Hero => b'H',
            Cell::Item(item) => item.symbol(),
            Cell::Monster(kind) => kind.symbol(),
        }
    }

    /// The cell drawn as `symbol`, if any.
    pub fn from_symbol(symbol: u8) -> Option<Cell> {
        match symbol {
            b'.' => Some(Cell::Floor),
            b'X' => Some(Cell::Obstacle),
            b'H' => Some(Cell::Hero),
            _ => Item::from_symbol(symbol)
                .map(Cell::Item)
                .or_else(|| MonsterKind::from_symbol(symbol).map(Cell::Monster)),
        }
    }
}

/// A maze as a map file describes it: every cell's starting content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MazeMap {
    cells: Vec<Cell>,
    start: Pos,
}

const SYMBOLS: &str = ".XHEtpabc01234";

impl MazeMap {
    /// A map from its cells in row-major order; `None` unless there are exactly
    /// [`CELLS`] of them with one hero start and one exit.
    pub fn from_cells(cells: Vec<Cell>) -> Option<Self> {
        if cells.len() != CELLS || cells.iter().filter(|cell| **cell == Cell::Item(Item::Exit)).count() != 1 {
            return None;
        }
        let mut starts = cells.iter().enumerate().filter(|(_, cell)| **cell == Cell::Hero);
        let (start, _) = starts.next()?;
        if starts.next().is_some() {
            return None;
        }
        Some(MazeMap { start: Pos::of_index(start, WIDTH), cells })
    }

    /// Parses a map file: 12 lines of 16 characters, with an optional final newline
    /// (and `\r\n` line ends). Errors name the line and column.
    pub fn parse(text: &str) -> Result<Self, MapError> {
        let error = |line: usize, column: usize, problem: String| MapError::at(line, column, problem);
        let rows: Vec<&str> = text.strip_suffix('\n').unwrap_or(text).split('\n').collect();
        let mut cells = Vec::with_capacity(CELLS);
        let mut start: Option<(usize, usize)> = None;
        let mut exit: Option<(usize, usize)> = None;
        for (y, row) in rows.iter().enumerate() {
            let line = y + 1;
            if y >= HEIGHT as usize {
                return Err(error(line, 1, format!("a maze has {HEIGHT} lines; this is line {line}")));
            }
            let row = row.strip_suffix('\r').unwrap_or(row);
            for (x, symbol) in row.chars().enumerate().take(WIDTH as usize) {
                let column = x + 1;
                let cell = u8::try_from(symbol).ok().and_then(Cell::from_symbol).ok_or_else(|| {
                    error(line, column, format!("unknown cell {symbol:?}; expected one of {SYMBOLS}"))
                })?;
                let seen = match cell {
                    Cell::Hero => &mut start,
                    Cell::Item(Item::Exit) => &mut exit,
                    _ => {
                        cells.push(cell);
                        continue;
                    }
                };
                if let Some((first_line, first_column)) = *seen {
                    let what = if cell == Cell::Hero { "hero start H" } else { "exit E" };
                    return Err(error(
                        line,
                        column,
                        format!("a second {what}; the first is at line {first_line}, column {first_column}"),
                    ));
                }
                *seen = Some((line, column));
                cells.push(cell);
            }
            let length = row.chars().count();
            if length != WIDTH as usize {
                return Err(error(
                    line,
                    length.min(WIDTH as usize) + 1,
                    format!("the line is {length} characters long; a maze is {WIDTH} wide"),
                ));
            }
        }
        if rows.len() < HEIGHT as usize {
            return Err(error(rows.len() + 1, 1, format!("the maze ends after {} lines; it has {HEIGHT}", rows.len())));
        }
        let Some((line, column)) = start else {
            return Err(error(1, 1, "no hero start (H)".into()));
        };
        if exit.is_none() {
            return Err(error(1, 1, "no exit (E)".into()));
        }
        Ok(MazeMap { cells, start: Pos::new(column as i32 - 1, line as i32 - 1) })
    }

    /// What `pos` starts with; an obstacle outside the maze.
    pub fn cell(&self, pos: Pos) -> Cell {
        if pos.on_board(WIDTH, HEIGHT) { self.cells[pos.index(WIDTH)] } else { Cell::Obstacle }
    }

    /// The hero's start.
    pub fn start(&self) -> Pos {
        self.start
    }

    /// Every cell, row-major.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }
}

impl fmt::Display for MazeMap {
    /// The map file text, one row per line, each line ending in `\n`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for row in self.cells.chunks(WIDTH as usize) {
            let line: String = row.iter().map(|cell| char::from(cell.symbol())).collect();
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
.XXt..0X4.11t1..
.4XXXtXX.XXX3X.X
X.4.X...cX.X1X44
1t2..2XX4....XX.
0XXXXXXXX.XXXX2.
4XXp.00XXbp.144X
..X4XX04..XEXX.4
X43a.XX..XXXX4.X
1.XX.XX.14.X..XX
.XXX.X4pXX.p0XX2
..X32.4XXXXXXXX.
Xc41XX0a..tH..12
";

    #[test]
    fn the_original_sample_parses_and_prints_back() {
        let map = MazeMap::parse(SAMPLE).expect("the seed 21 sample parses");
        assert_eq!(map.start(), Pos::new(11, 11));
        assert_eq!(map.cell(Pos::new(11, 6)), Cell::Item(Item::Exit));
        assert_eq!(map.cell(Pos::new(8, 0)), Cell::Monster(MonsterKind::Vampire));
        assert_eq!(map.cell(Pos::new(-1, 0)), Cell::Obstacle);
        assert_eq!(map.to_string(), SAMPLE);
        assert_eq!(MazeMap::parse(&SAMPLE.replace('\n', "\r\n")), Ok(map.clone()));
        assert_eq!(MazeMap::from_cells(map.cells().to_vec()), Some(map));
    }

    #[test]
    fn symbols_round_trip() {
        for symbol in SYMBOLS.bytes() {
            assert_eq!(Cell::from_symbol(symbol).map(Cell::symbol), Some(symbol));
        }
        assert_eq!(Cell::from_symbol(b'5'), None);
    }

    fn error_of(text: &str) -> MapError {
        MazeMap::parse(text).expect_err("the map is broken")
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let lines: Vec<&str> = SAMPLE.lines().collect();
        let with = |row: usize, line: &str| {
            let mut rows = lines.clone();
            rows[row] = line;
            rows.join("\n")
        };
        let unknown = error_of(&with(2, "X.4.X...cX.X1Z44"));
        assert_eq!(unknown.at, Some((3, 14)), "{unknown}");
        assert!(unknown.problem.contains("'Z'"), "{unknown}");
        let short = error_of(&with(4, "0XXXX"));
        assert_eq!(short.at, Some((5, 6)), "{short}");
        let long = error_of(&with(4, "0XXXXXXXX.XXXX2.."));
        assert_eq!(long.at, Some((5, 17)), "{long}");
        let second_hero = error_of(&with(0, ".XXt..0X4.11t1.H"));
        assert_eq!(second_hero.at, Some((12, 12)), "{second_hero}");
        assert!(second_hero.problem.contains("line 1, column 16"), "{second_hero}");
        let second_exit = error_of(&with(0, "EXXt..0X4.11t1.."));
        assert_eq!(second_exit.at, Some((7, 12)), "{second_exit}");
        let no_hero = error_of(&SAMPLE.replace('H', "."));
        assert_eq!((no_hero.at, no_hero.problem.as_str()), (Some((1, 1)), "no hero start (H)"));
        assert_eq!(error_of(&SAMPLE.replace('E', ".")).problem, "no exit (E)");
        let few = error_of(&lines[..5].join("\n"));
        assert_eq!(few.at, Some((6, 1)), "{few}");
        let many = error_of(&format!("{SAMPLE}................\n"));
        assert_eq!(many.at, Some((13, 1)), "{many}");
        let unicode = error_of(&with(0, "é.XXt..0X4.11t1."));
        assert_eq!(unicode.at, Some((1, 1)), "{unicode}");
    }
}
