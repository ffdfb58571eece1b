//! Vision: Euclidean radius, then symmetric Bresenham line of sight (Settled question 14).

use crate::Pos;

/// The cells of the integer line from `from` to `to`, both ends included, in the
/// spec's exact order.
pub fn line(from: Pos, to: Pos) -> Vec<Pos> {
    let (mut x0, mut y0) = (from.x, from.y);
    let dx = (to.x - x0).abs();
    let sx = (to.x - x0).signum();
    let dy = -(to.y - y0).abs();
    let sy = (to.y - y0).signum();
    let mut err = dx + dy;
    let mut cells = Vec::with_capacity((dx - dy + 1) as usize);
    loop {
        cells.push(Pos::new(x0, y0));
        if x0 == to.x && y0 == to.y {
            return cells;
        }
        let e2 = 2 * err;
        if e2 >= dy {
            err += dy;
            x0 += sx;
        }
        if e2 <= dx {
            err += dx;
            y0 += sy;
        }
    }
}

/// Whether the line from `from` to `to` has no blocking cell strictly between its ends.
fn clear(from: Pos, to: Pos, blocks: &dyn Fn(Pos) -> bool) -> bool {
    let cells = line(from, to);
    cells.len() <= 2 || cells[1..cells.len() - 1].iter().all(|cell| !blocks(*cell))
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
