//! Example Vindinium bot for matchfarm: a random walker.
//!
//! Protocol (the farm's `stdio` transport):
//! - the farm writes one JSON state document per line on stdin;
//! - for every line the bot writes exactly one reply line on stdout and flushes:
//!   `North`, `South`, `East`, `West` or `Stay`;
//! - stderr is the bot's log (never write anything else to stdout);
//! - when stdin closes (EOF) the match is over and the bot exits with status 0.
//!
//! Randomness is seeded from `FARM_SEED` (the match seed) and `FARM_SEAT` (this bot's
//! seat, from 0), so the same match plays the same way every time.
//!
//! This bot does not look at the state at all. To write a real bot, parse the line
//! (for example with `serde_json`) and replace [`choose_move`].

use std::io::{self, BufRead, Write};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The moves a random bot picks from. Like the original random bot, it never chooses
/// `Stay` on purpose; `Stay` is only the safe reply to a bad request.
const DIRECTIONS: [&str; 4] = ["North", "South", "East", "West"];

/// The reply to a request the bot cannot understand.
const SAFE_REPLY: &str = "Stay";

fn main() -> io::Result<()> {
    let mut rng = make_rng();
    let mut stdout = io::stdout().lock();

    // One request per line, until the farm closes stdin (end of the match).
    for line in io::stdin().lock().lines() {
        let reply = match line {
            Ok(state) if looks_like_a_state(&state) => choose_move(&state, &mut rng),
            Ok(state) => {
                eprintln!("bad request (not a JSON object): {state:.80}; replying {SAFE_REPLY}");
                SAFE_REPLY
            }
            // A line that is not UTF-8 has been consumed: answer it and go on.
            Err(error) if error.kind() == io::ErrorKind::InvalidData => {
                eprintln!("bad request ({error}); replying {SAFE_REPLY}");
                SAFE_REPLY
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

/// Picks this turn's move.
///
/// `state` is the JSON document of the Vindinium rules ("Bot I/O"): `hero.id`,
/// `hero.pos` (`x` is the row, `y` the column), `game.board.size`, `game.board.tiles`
/// (2 characters per tile, row by row) and `game.heroes` are the useful fields.
fn choose_move(_state: &str, rng: &mut ChaCha8Rng) -> &'static str {
    DIRECTIONS[rng.random_range(0..DIRECTIONS.len())]
}

/// A cheap sanity check, since this bot does not parse the JSON: a state document
/// is one JSON object.
fn looks_like_a_state(line: &str) -> bool {
    let line = line.trim();
    line.starts_with('{') && line.ends_with('}')
}

/// A random generator seeded from the match seed and this bot's seat.
fn make_rng() -> ChaCha8Rng {
    let seed = env_u64("FARM_SEED");
    let seat = env_u64("FARM_SEAT");
    eprintln!("vindinium-random-bot: seed {seed}, seat {seat}");
    // Any deterministic combination will do; mixing in the seat makes the bots of
    // one match play differently from each other.
    ChaCha8Rng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(seat))
}

/// Reads an unsigned integer from the environment; 0 if it is missing or unparsable.
fn env_u64(name: &str) -> u64 {
    std::env::var(name).ok().and_then(|value| value.trim().parse().ok()).unwrap_or(0)
}
