//! Wanderer: a Skookum Botwars bot for matchfarm's rust layout (standard library only).
//!
//! Protocol (stdio): the farm writes one JSON request per line on stdin,
//! `{"player":"r"|"b","state":{"rows":R,"cols":C,"grid":"<R*C chars>",...},...}`,
//! and reads exactly one line back per request, flushed: a JSON array of moves
//! `[{"from":i,"to":j},...]`. The grid is row-major (cell i is row i / C, column
//! i % C); cells holding our letter are our botlets, and each may stay (to ==
//! from) or step to a 4-neighbour inside the grid. `[]` is always legal: it
//! answers any line we cannot read. At end of input we exit 0. Logs go to
//! stderr; stdout carries replies only.
//!
//! Strategy: every botlet picks uniformly among staying and its in-grid
//! neighbours, with a xorshift64 generator seeded from FARM_SEED and FARM_SEAT.

mod json;

use std::io::{self, BufRead, Write};

use json::Value;

/// Marsaglia's xorshift64; its state is never 0.
struct XorShift64(u64);

impl XorShift64 {
    fn seeded(seed: u64, seat: u64) -> Self {
        let state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(seat).wrapping_add(1);
        XorShift64(if state == 0 { 0x2545_F491_4F6C_DD1D } else { state })
    }

    /// A number in 0..n.
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn env_u64(name: &str) -> u64 {
    std::env::var(name).ok().and_then(|value| value.trim().parse().ok()).unwrap_or(0)
}

/// The moves for one request line, or why the line is not a request.
fn wander(line: &str, rng: &mut XorShift64) -> Result<Vec<(usize, usize)>, String> {
    let request = json::parse(line)?;
    let state = request.get("state").ok_or("no state")?;
    let player = match request.get("player") {
        Some(Value::Str(player)) if player == "r" || player == "b" => player.chars().next().unwrap_or('r'),
        _ => return Err("no player r or b".to_string()),
    };
    let size = |key: &str| match state.get(key) {
        Some(Value::Number(text)) => text.parse::<usize>().ok().filter(|&n| n > 0),
        _ => None,
    };
    let (rows, cols) = size("rows").zip(size("cols")).ok_or("no rows or cols")?;
    let grid: Vec<char> = match state.get("grid") {
        Some(Value::Str(grid)) => grid.chars().collect(),
        _ => return Err("no grid".to_string()),
    };
    if rows.checked_mul(cols) != Some(grid.len()) {
        return Err(format!("a grid of {} cells for {rows} x {cols}", grid.len()));
    }
    let mut moves = Vec::new();
    for (cell, _) in grid.iter().enumerate().filter(|&(_, &c)| c == player) {
        let (row, col) = (cell / cols, cell % cols);
        let mut options = vec![cell];
        if row > 0 {
            options.push(cell - cols);
        }
        if row + 1 < rows {
            options.push(cell + cols);
        }
        if col > 0 {
            options.push(cell - 1);
        }
        if col + 1 < cols {
            options.push(cell + 1);
        }
        moves.push((cell, options[rng.below(options.len())]));
    }
    Ok(moves)
}

fn main() {
    let mut rng = XorShift64::seeded(env_u64("FARM_SEED"), env_u64("FARM_SEAT"));
    let (stdin, stdout) = (io::stdin(), io::stdout());
    let (mut input, mut output) = (stdin.lock(), stdout.lock());
    let mut buffer = Vec::new();
    // One request per line until end of input (or a read error): the match is over.
    while matches!(input.read_until(b'\n', &mut buffer), Ok(n) if n > 0) {
        let line = String::from_utf8_lossy(&buffer).into_owned(); // bad UTF-8 becomes U+FFFD
        buffer.clear();
        let reply = match wander(&line, &mut rng) {
            Ok(moves) => {
                let moves: Vec<String> =
                    moves.iter().map(|(from, to)| format!("{{\"from\":{from},\"to\":{to}}}")).collect();
                format!("[{}]", moves.join(","))
            }
            Err(error) => {
                eprintln!("wanderer: bad request: {error}");
                "[]".to_string()
            }
        };
        // The farm stopped reading (it closed our stdout): nothing more to do.
        if writeln!(output, "{reply}").and_then(|()| output.flush()).is_err() {
            return;
        }
    }
}
