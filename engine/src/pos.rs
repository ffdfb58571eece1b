//! The one position convention of every game.

use serde::Serialize;

/// A cell of a game's board, the same in every game: `x` is the column (0 at the left,
/// growing right) and `y` the row (0 at the top, growing down).
///
/// A game whose original protocol says otherwise converts in its codec and nowhere
/// else: Vindinium's JSON names the row `x` and the column `y`. A game that numbers its
/// cells (Botwars' moves name cells by number) numbers them row by row,
/// [`Pos::index`]. Positions order by column, then row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Pos {
    /// Column.
    pub x: i32,
    /// Row.
    pub y: i32,
}

impl Pos {
    /// The cell at column `x`, row `y`.
    pub const fn new(x: i32, y: i32) -> Self {
        Pos { x, y }
    }

    /// The cell `dx` columns to the right and `dy` rows down from this one.
    pub const fn offset(self, dx: i32, dy: i32) -> Pos {
        Pos { x: self.x + dx, y: self.y + dy }
    }

    /// Whether the cell is on a board of `columns` by `rows`.
    pub const fn on_board(self, columns: i32, rows: i32) -> bool {
        self.x >= 0 && self.x < columns && self.y >= 0 && self.y < rows
    }

    /// The cell's number on a board of `columns` columns, counted row by row from 0 at
    /// the top left. Only for a cell on the board.
    pub const fn index(self, columns: i32) -> usize {
        (self.y * columns + self.x) as usize
    }

    /// The cell numbered `index` on a board of `columns` columns ([`Pos::index`]'s
    /// inverse).
    pub const fn of_index(index: usize, columns: i32) -> Pos {
        Pos { x: index as i32 % columns, y: index as i32 / columns }
    }

    /// The number of steps between two cells when moving only along rows and columns.
    pub const fn manhattan(self, other: Pos) -> u32 {
        self.x.abs_diff(other.x) + self.y.abs_diff(other.y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_and_its_number_convert_both_ways() {
        let columns = 7;
        for index in 0..35 {
            let pos = Pos::of_index(index, columns);
            assert!(pos.on_board(columns, 5), "{pos:?}");
            assert_eq!(pos.index(columns), index);
        }
        assert_eq!(Pos::of_index(9, 7), Pos::new(2, 1), "row by row: the 10th cell of a 7-wide board");
        assert!(!Pos::new(-1, 0).on_board(7, 5));
        assert!(!Pos::new(0, 5).on_board(7, 5));
    }

    #[test]
    fn offsets_and_distances_follow_columns_and_rows() {
        let pos = Pos::new(3, 4);
        assert_eq!(pos.offset(1, 0), Pos::new(4, 4), "right is x + 1");
        assert_eq!(pos.offset(0, -1), Pos::new(3, 3), "up is y - 1");
        assert_eq!(pos.manhattan(Pos::new(0, 6)), 5);
        assert!(Pos::new(0, 9) < Pos::new(1, 0), "column first, then row");
    }
}
