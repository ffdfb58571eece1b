//! The board, moves and the map file format.
//!
//! A map file is the board drawn as text: one line per row, two characters per tile,
//! exactly as the `tiles` string of the JSON state cut into rows: `  ` air, `##` wood,
//! `[]` tavern, `$-` neutral mine, `$1`..`$4` owned mine, `@1`..`@4` a hero's start
//! (over air). The map is square.
//!
//! Positions are [`Pos`]: `x` the column, `y` the row. The original's JSON names them
//! the other way round; the codec converts.

use std::fmt;

use serde::Serialize;

use crate::writer::text_of;
use crate::{MapError, Pos};

/// A hero's id, 1 to 4.
pub type HeroId = u8;

/// A move. Anything a bot writes that is not a direction means `Stay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Dir {
    /// Up: row − 1.
    North,
    /// Right: column + 1.
    East,
    /// Down: row + 1.
    South,
    /// Left: column − 1.
    West,
    /// No move.
    Stay,
}

impl Dir {
    /// The four moves in the original's neighbour order.
    pub const MOVES: [Dir; 4] = [Dir::North, Dir::East, Dir::South, Dir::West];

    /// The wire name (`North`, ..., `Stay`).
    pub fn name(self) -> &'static str {
        match self {
            Dir::North => "North",
            Dir::East => "East",
            Dir::South => "South",
            Dir::West => "West",
            Dir::Stay => "Stay",
        }
    }

    /// The cell one step in this direction from `from`.
    pub fn step(self, from: Pos) -> Pos {
        match self {
            Dir::North => from.offset(0, -1),
            Dir::East => from.offset(1, 0),
            Dir::South => from.offset(0, 1),
            Dir::West => from.offset(-1, 0),
            Dir::Stay => from,
        }
    }
}

/// The four neighbours of `pos` in the original's order: North, East, South, West.
pub fn neighbors(pos: Pos) -> [Pos; 4] {
    Dir::MOVES.map(|dir| dir.step(pos))
}

/// What a cell holds, heroes aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tile {
    /// Walkable.
    Air,
    /// A wall.
    Wood,
    /// Beer: 2 gold for 50 life.
    Tavern,
    /// A gold mine and its owner, if any.
    Mine(Option<HeroId>),
}

impl Tile {
    fn code(self) -> &'static str {
        match self {
            Tile::Air => "  ",
            Tile::Wood => "##",
            Tile::Tavern => "[]",
            Tile::Mine(None) => "$-",
            Tile::Mine(Some(1)) => "$1",
            Tile::Mine(Some(2)) => "$2",
            Tile::Mine(Some(3)) => "$3",
            Tile::Mine(Some(_)) => "$4",
        }
    }
}

/// A square board of tiles.
///
/// Besides the tiles it keeps what every state document reads from them, the `tiles`
/// text and each hero's mine count, changed with the tiles rather than recomputed for
/// each document: a tile changes a few times in a match, a document is written on
/// every step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    size: usize,
    tiles: Vec<Tile>,
    /// The tiles' codes, two bytes per tile, row by row: the `tiles` text without heroes.
    text: Vec<u8>,
    /// How many mines each hero owns, indexed by hero id (index 0 counts nothing).
    mines: [usize; 5],
}

impl Board {
    /// A board of `size`² tiles, all `fill`.
    pub fn filled(size: usize, fill: Tile) -> Self {
        let mut board =
            Board { size, tiles: vec![fill; size * size], text: fill.code().repeat(size * size).into(), mines: [0; 5] };
        if let Tile::Mine(Some(owner)) = fill {
            board.count_mine(owner, size * size);
        }
        board
    }

    /// The side length.
    pub fn size(&self) -> usize {
        self.size
    }

    fn index(&self, pos: Pos) -> Option<usize> {
        let size = self.size as i32;
        pos.on_board(size, size).then(|| pos.index(size))
    }

    /// The tile at `pos`, or `None` off the board.
    pub fn get(&self, pos: Pos) -> Option<Tile> {
        self.index(pos).map(|i| self.tiles[i])
    }

    /// Sets the tile at `pos`; positions off the board are ignored.
    pub fn set(&mut self, pos: Pos, tile: Tile) {
        if let Some(i) = self.index(pos) {
            self.replace(i, tile);
        }
    }

    /// Puts `tile` at index `i`, keeping the text and the mine counts in step.
    fn replace(&mut self, i: usize, tile: Tile) {
        if let Tile::Mine(Some(owner)) = self.tiles[i] {
            self.uncount_mine(owner);
        }
        if let Tile::Mine(Some(owner)) = tile {
            self.count_mine(owner, 1);
        }
        self.tiles[i] = tile;
        self.text[2 * i..2 * i + 2].copy_from_slice(tile.code().as_bytes());
    }

    /// Adds `mines` to `owner`'s count; owners other than heroes 1 to 4 are not counted.
    fn count_mine(&mut self, owner: HeroId, mines: usize) {
        if let Some(count) = self.mines.get_mut(usize::from(owner)) {
            *count += mines;
        }
    }

    /// Takes one mine from `owner`'s count.
    fn uncount_mine(&mut self, owner: HeroId) {
        if let Some(count) = self.mines.get_mut(usize::from(owner)) {
            *count -= 1;
        }
    }

    /// Every position, row by row.
    pub fn positions(&self) -> impl Iterator<Item = Pos> + use<> {
        let size = self.size as i32;
        (0..size).flat_map(move |y| (0..size).map(move |x| Pos::new(x, y)))
    }

    /// How many mines `hero` owns.
    pub fn mines_of(&self, hero: HeroId) -> usize {
        self.mines.get(usize::from(hero)).copied().unwrap_or(0)
    }

    /// Gives every mine owned by `from` to `to` (`None`: neutral).
    pub fn transfer_mines(&mut self, from: HeroId, to: Option<HeroId>) {
        for i in 0..self.tiles.len() {
            if self.tiles[i] == Tile::Mine(Some(from)) {
                self.replace(i, Tile::Mine(to));
            }
        }
    }

    /// The `tiles` string of the JSON state: two characters per tile, row by row, with
    /// `heroes` drawn as `@id` over their cells.
    pub fn render(&self, heroes: &[(HeroId, Pos)]) -> String {
        text_of(|out| self.render_into(heroes.iter().copied(), out))
    }

    /// Appends the `tiles` string (see [`Board::render`]) to `out`.
    pub fn render_into(&self, heroes: impl DoubleEndedIterator<Item = (HeroId, Pos)>, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.text);
        // In reverse, so that of two heroes on one cell the first is drawn.
        for (id, pos) in heroes.rev() {
            let code = [b"@1", b"@2", b"@3", b"@4"].get(usize::from(id).wrapping_sub(1));
            if let (Some(index), Some(code)) = (self.index(pos), code) {
                out[start + 2 * index..start + 2 * index + 2].copy_from_slice(*code);
            }
        }
    }

    /// How many mines each hero owns, indexed by hero id (index 0 counts nothing).
    pub fn mine_counts(&self) -> [usize; 5] {
        self.mines
    }
}

/// A map: a board and the four heroes' start cells (also where they respawn).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VindiniumMap {
    /// The tiles.
    pub board: Board,
    /// Start and respawn cell of hero 1 to 4.
    pub starts: [Pos; 4],
}

/// The smallest and largest map files accepted.
pub const MAP_SIZES: std::ops::RangeInclusive<usize> = 4..=64;

impl VindiniumMap {
    /// Parses a map file.
    pub fn parse(text: &str) -> Result<Self, MapError> {
        let rows: Vec<&str> = text.strip_suffix('\n').unwrap_or(text).split('\n').collect();
        let error = |line: usize, column: usize, problem: String| MapError::at(line, column, problem);
        let size = rows.len();
        if !MAP_SIZES.contains(&size) {
            return Err(error(
                1,
                1,
                format!("{size} rows; a map has {} to {} rows", MAP_SIZES.start(), MAP_SIZES.end()),
            ));
        }
        let mut board = Board::filled(size, Tile::Air);
        let mut starts: [Option<Pos>; 4] = [None; 4];
        for (y, row) in rows.iter().enumerate() {
            let line = y + 1;
            let chars: Vec<char> = row.trim_end_matches('\r').chars().collect();
            if chars.len() != 2 * size {
                return Err(error(
                    line,
                    chars.len().min(2 * size) + 1,
                    format!(
                        "row is {} characters long; a {size}x{size} map needs {} (2 per tile)",
                        chars.len(),
                        2 * size
                    ),
                ));
            }
            for (x, pair) in chars.chunks(2).enumerate() {
                let pos = Pos::new(x as i32, y as i32);
                let code: String = pair.iter().collect();
                let tile = match code.as_str() {
                    "  " => Tile::Air,
                    "##" => Tile::Wood,
                    "[]" => Tile::Tavern,
                    "$-" => Tile::Mine(None),
                    "$1" | "$2" | "$3" | "$4" => Tile::Mine(Some(pair[1] as u8 - b'0')),
                    "@1" | "@2" | "@3" | "@4" => {
                        let hero = usize::from(pair[1] as u8 - b'1');
                        if starts[hero].is_some() {
                            return Err(error(line, 2 * x + 1, format!("hero {} starts twice", hero + 1)));
                        }
                        starts[hero] = Some(pos);
                        Tile::Air
                    }
                    _ => return Err(error(line, 2 * x + 1, format!("unknown tile {code:?}"))),
                };
                board.set(pos, tile);
            }
        }
        let mut found = [Pos::new(0, 0); 4];
        for (hero, start) in starts.iter().enumerate() {
            found[hero] =
                start.ok_or_else(|| error(1, 1, format!("no start for hero {} (@{})", hero + 1, hero + 1)))?;
        }
        Ok(VindiniumMap { board, starts: found })
    }
}

impl fmt::Display for VindiniumMap {
    /// The map file text, one row per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let heroes: Vec<(HeroId, Pos)> = (1..=4).zip(self.starts).collect();
        let tiles = self.board.render(&heroes);
        let row_len = 2 * self.board.size();
        for row in 0..self.board.size() {
            writeln!(f, "{}", &tiles[row * row_len..(row + 1) * row_len])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GameRng;

    const M1: &str = include_str!("../../../maps/vindinium/m1.txt");

    #[test]
    fn m1_parses_and_prints_back_unchanged() {
        let map = VindiniumMap::parse(M1).expect("m1 parses");
        assert_eq!(map.board.size(), 10);
        // Column, row: hero 2 starts in the bottom row.
        assert_eq!(map.starts, [Pos::new(1, 0), Pos::new(1, 9), Pos::new(7, 7), Pos::new(8, 0)]);
        assert_eq!(map.to_string(), M1);
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let ragged = "@1@2    \n@3@4  \n        \n        \n";
        let err = VindiniumMap::parse(ragged).expect_err("ragged");
        assert_eq!(err.at, Some((2, 7)), "{err}");
        assert!(err.problem.starts_with("row is 6 characters long"), "{err}");
        let short = "@1@2\n@3@4\n";
        assert!(VindiniumMap::parse(short).expect_err("too small").problem.contains("2 rows"));
        let unknown = "@1@2    \n@3@4    \n  ??    \n        \n";
        let err = VindiniumMap::parse(unknown).expect_err("unknown tile");
        assert_eq!(err.at, Some((3, 3)));
        assert!(err.problem.contains("\"??\""), "{err}");
        let twice = "@1@1    \n@3@4    \n        \n        \n";
        assert_eq!(VindiniumMap::parse(twice).expect_err("twice").problem, "hero 1 starts twice");
        let missing = "@1      \n@3@4    \n        \n        \n";
        assert!(VindiniumMap::parse(missing).expect_err("missing").problem.contains("hero 2"));
    }

    #[test]
    fn the_kept_text_and_mine_counts_follow_every_change() {
        let mut rng = GameRng::new(7, GameRng::MAP);
        let owners = [None, Some(1), Some(2), Some(3), Some(4)];
        let tiles = [Tile::Air, Tile::Wood, Tile::Tavern].into_iter().chain(owners.map(Tile::Mine)).collect::<Vec<_>>();
        let mut board = Board::filled(6, Tile::Mine(Some(2)));
        for step in 0..2000 {
            if step % 9 == 0 {
                let from = rng.below(5) as HeroId;
                board.transfer_mines(from, owners[rng.below(5)]);
            } else {
                // Off-board cells too: they change nothing.
                let pos = Pos::new(rng.below(8) as i32 - 1, rng.below(8) as i32 - 1);
                board.set(pos, tiles[rng.below(tiles.len())]);
            }
            let text: String = board.tiles.iter().map(|tile| tile.code()).collect();
            assert_eq!(board.render(&[]), text, "step {step}");
            for hero in 1..=4 {
                let owned = board.tiles.iter().filter(|tile| **tile == Tile::Mine(Some(hero))).count();
                assert_eq!(board.mines_of(hero), owned, "step {step}, hero {hero}");
            }
        }
    }
}
