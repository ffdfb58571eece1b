//! Example Skookum Botwars bot for matchfarm: every botlet moves at random.
//!
//! Protocol (the farm's `stdio` transport):
//! - the farm writes one JSON request per line on stdin:
//!   `{"player":"r"|"b","state":{"rows":20,"cols":20,"maxTurns":100,"turnsElapsed":N,
//!   "grid":"<rows*cols characters of . r b * x X>","p1":{..},"p2":{..},"GameId":n},"gameId":n}`;
//! - for every line the bot writes exactly one reply line on stdout and flushes: a JSON
//!   array of moves such as `[{"from":21,"to":22}]`;
//! - stderr is the bot's log (never write anything else to stdout);
//! - when stdin closes (EOF) the match is over and the bot exits with status 0.
//!
//! The grid is row by row: cell index = `y * cols + x` (`x` is the column). The bot's
//! botlets are the cells holding its `player` letter. A botlet may stay (`from == to`)
//! or move to one of its 4 neighbours; there is no wrap-around. On turn 1 the bot has
//! no botlets yet, so the reply is `[]`.
//!
//! Randomness is seeded from `FARM_SEED` (the match seed) and `FARM_SEAT` (this bot's
//! seat, from 0), so the same match plays the same way every time.
//!
//! To write a real bot, replace [`choose_moves`].

use std::io::{self, BufRead, Write};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

/// The reply to a request the bot cannot understand: no moves (everyone stays).
const SAFE_REPLY: &str = "[]";

/// The parts of a request this bot uses.
struct Request {
    /// This bot's letter in the grid: `b'r'` or `b'b'`.
    player: u8,
    /// Number of rows of the grid.
    rows: usize,
    /// Number of columns of the grid.
    cols: usize,
    /// The cells, row by row (`rows * cols` ASCII characters).
    grid: Vec<u8>,
}

fn main() -> io::Result<()> {
    let mut rng = make_rng();
    let mut stdout = io::stdout().lock();

    // One request per line, until the farm closes stdin (end of the match).
    for line in io::stdin().lock().lines() {
        let reply = match line {
            Ok(line) => match parse_request(&line) {
                Ok(request) => Value::Array(choose_moves(&request, &mut rng)).to_string(),
                Err(problem) => {
                    eprintln!("bad request ({problem}); replying {SAFE_REPLY}");
                    SAFE_REPLY.to_owned()
                }
            },
            // A line that is not UTF-8 has been consumed: answer it and go on.
            Err(error) if error.kind() == io::ErrorKind::InvalidData => {
                eprintln!("bad request ({error}); replying {SAFE_REPLY}");
                SAFE_REPLY.to_owned()
            }
            // Any other read error means stdin is unusable: stop.
            Err(error) => return Err(error),
        };
        // Exactly one reply line per request, flushed at once.
        writeln!(stdout, "{reply}")?;
        stdout.flush()?;
    }
    Ok(())
}

/// One move per own botlet, each picked uniformly among staying and the in-grid
/// 4-neighbours.
fn choose_moves(request: &Request, rng: &mut ChaCha8Rng) -> Vec<Value> {
    let mut moves = Vec::new();
    for (from, &cell) in request.grid.iter().enumerate() {
        if cell != request.player {
            continue;
        }
        let targets = targets(from, request.rows, request.cols);
        let to = targets[rng.random_range(0..targets.len())];
        moves.push(json!({ "from": from, "to": to }));
    }
    moves
}

/// The cells a botlet at `index` may go to: itself (stay) and its in-grid 4-neighbours.
fn targets(index: usize, rows: usize, cols: usize) -> Vec<usize> {
    let (y, x) = (index / cols, index % cols);
    let mut cells = vec![index]; // staying is always allowed
    if y > 0 {
        cells.push(index - cols); // up
    }
    if y + 1 < rows {
        cells.push(index + cols); // down
    }
    if x > 0 {
        cells.push(index - 1); // left (not across the row edge)
    }
    if x + 1 < cols {
        cells.push(index + 1); // right (not across the row edge)
    }
    cells
}

/// Parses and checks one request line.
fn parse_request(line: &str) -> Result<Request, String> {
    let request: Value = serde_json::from_str(line).map_err(|error| format!("not JSON: {error}"))?;
    // Indexing a `Value` never panics: a missing field reads as `Value::Null`.
    let player = match request["player"].as_str() {
        Some("r") => b'r',
        Some("b") => b'b',
        _ => return Err(format!("unknown player {}", request["player"])),
    };
    let state = &request["state"];
    let rows = grid_size(&state["rows"], "rows")?;
    let cols = grid_size(&state["cols"], "cols")?;
    let Some(grid) = state["grid"].as_str() else {
        return Err("no grid".to_owned());
    };
    if !grid.is_ascii() || Some(grid.len()) != rows.checked_mul(cols) {
        return Err(format!("the grid is not {rows} x {cols} characters"));
    }
    Ok(Request { player, rows, cols, grid: grid.as_bytes().to_vec() })
}

/// Reads `rows` or `cols`: a positive integer.
fn grid_size(value: &Value, name: &str) -> Result<usize, String> {
    value
        .as_u64()
        .and_then(|size| usize::try_from(size).ok())
        .filter(|&size| size > 0)
        .ok_or_else(|| format!("bad {name}: {value}"))
}

/// A random generator seeded from the match seed and this bot's seat.
fn make_rng() -> ChaCha8Rng {
    let seed = env_u64("FARM_SEED");
    let seat = env_u64("FARM_SEAT");
    eprintln!("botwars-random-bot: seed {seed}, seat {seat}");
    // Any deterministic combination will do; mixing in the seat makes the two bots of
    // one match play differently from each other.
    ChaCha8Rng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(seat))
}

/// Reads an unsigned integer from the environment; 0 if it is missing or unparsable.
fn env_u64(name: &str) -> u64 {
    std::env::var(name).ok().and_then(|value| value.trim().parse().ok()).unwrap_or(0)
}
