//! Vision: Euclidean radius, then symmetric Bresenham line of sight (Settled question 14).

use crate::Pos;

/// The cells of the integer line from `from` to `to`, both ends included, in the
/// spec's exact order.
pub fn line(from: Pos, to: Pos) -> Vec<Pos> {
    Line::new(from, to).collect()
}

/// [`line`]'s cells one by one: sight is checked for every cell of every line in
/// sight's radius, each step, and most lines stop at their first blocking cell.
struct Line {
    at: Option<Pos>,
    to: Pos,
    dx: i32,
    dy: i32,
    sx: i32,
    sy: i32,
    err: i32,
}

impl Line {
    fn new(from: Pos, to: Pos) -> Self {
        let dx = (to.x - from.x).abs();
        let dy = -(to.y - from.y).abs();
        Line { at: Some(from), to, dx, dy, sx: (to.x - from.x).signum(), sy: (to.y - from.y).signum(), err: dx + dy }
    }
}

impl Iterator for Line {
    type Item = Pos;

    fn next(&mut self) -> Option<Pos> {
        let cell = self.at?;
        self.at = (cell != self.to).then(|| {
            let e2 = 2 * self.err;
            let mut next = cell;
            if e2 >= self.dy {
                self.err += self.dy;
                next.x += self.sx;
            }
            if e2 <= self.dx {
                self.err += self.dx;
                next.y += self.sy;
            }
            next
        });
        Some(cell)
    }
}

/// Whether the line from `from` to `to` has no blocking cell strictly between its ends.
fn clear(from: Pos, to: Pos, blocks: &dyn Fn(Pos) -> bool) -> bool {
    // A line's cells are all different, so the cells before `to` are the ones before its end.
    Line::new(from, to).skip(1).take_while(|cell| *cell != to).all(|cell| !blocks(cell))
}

/// Whether `viewer` sees `cell` within `radius`: dx²+dy² ≤ r² and a clear line in
/// either direction. `blocks` says which cells stop sight (walls, intact doors).
pub fn sees(viewer: Pos, radius: i64, cell: Pos, blocks: &dyn Fn(Pos) -> bool) -> bool {
    let (dx, dy) = (i64::from(cell.x - viewer.x), i64::from(cell.y - viewer.y));
    if dx * dx + dy * dy > radius * radius {
        return false;
    }
    cell == viewer || clear(viewer, cell, blocks) || clear(cell, viewer, blocks)
}

/// Which cells of a `width`×`height` grid (row-major) the `viewers` (cell and radius)
/// see together.
pub fn visible_cells(width: i32, height: i32, viewers: &[(Pos, i64)], blocks: &dyn Fn(Pos) -> bool) -> Vec<bool> {
    let mut seen = vec![false; (width.max(0) * height.max(0)) as usize];
    for &(viewer, radius) in viewers {
        let reach = radius.clamp(0, i64::from(width.max(height))) as i32;
        for y in (viewer.y - reach).max(0)..=(viewer.y + reach).min(height - 1) {
            for x in (viewer.x - reach).max(0)..=(viewer.x + reach).min(width - 1) {
                let index = (y * width + x) as usize;
                if !seen[index] && sees(viewer, radius, Pos::new(x, y), blocks) {
                    seen[index] = true;
                }
            }
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_vectors() {
        let p = |x, y| Pos::new(x, y);
        assert_eq!(line(p(0, 0), p(2, 1)), vec![p(0, 0), p(1, 1), p(2, 1)]);
        assert_eq!(line(p(2, 1), p(0, 0)), vec![p(2, 1), p(1, 0), p(0, 0)]);
        assert_eq!(line(p(0, 0), p(1, 1)), vec![p(0, 0), p(1, 1)]);
    }

    #[test]
    fn a_line_is_clear_when_no_cell_between_its_ends_blocks() {
        // Walls on a diagonal pattern, lines between every two cells of a 7×7 square.
        let blocks = |cell: Pos| (cell.x * 3 + cell.y * 5).rem_euclid(7) == 0;
        let cells: Vec<Pos> = (-3..4).flat_map(|x| (-3..4).map(move |y| Pos::new(x, y))).collect();
        for &from in &cells {
            for &to in &cells {
                let line = line(from, to);
                let between = if line.len() <= 2 { &[][..] } else { &line[1..line.len() - 1] };
                assert_eq!(clear(from, to, &blocks), between.iter().all(|cell| !blocks(*cell)), "{from:?} {to:?}");
            }
        }
    }

    #[test]
    fn sight_is_symmetric_and_passes_diagonally_between_walls() {
        let walls = [Pos::new(1, 0), Pos::new(0, 1)];
        let blocks = |cell: Pos| walls.contains(&cell);
        assert!(sees(Pos::new(0, 0), 5, Pos::new(1, 1), &blocks));
        // (0,0)→(2,1) crosses (1,1), fine; the reverse line crosses the wall (1,0).
        assert!(sees(Pos::new(0, 0), 5, Pos::new(2, 1), &blocks));
        assert!(sees(Pos::new(2, 1), 5, Pos::new(0, 0), &blocks));
        assert!(!sees(Pos::new(0, 0), 5, Pos::new(2, 0), &blocks));
        assert!(!sees(Pos::new(0, 0), 2, Pos::new(2, 2), &|_| false), "8 > 4: out of the radius");
    }
}
