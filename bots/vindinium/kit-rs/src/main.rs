//! A Vindinium starter kit in Rust: a client of the original Vindinium server's HTTP
//! API, written the way the original kits are, which runs unchanged against
//! vindinium.org's API and against matchfarm's (transport `vindinium-server`).
//!
//! ```text
//! vindinium-kit [training|arena] [GAMES] [--key KEY] [--server URL] [--trace]
//! ```
//!
//! It starts a game (`POST /api/training` or `/api/arena` with its key), then posts one
//! direction to the state's `playUrl` per turn until the game is finished, GAMES times
//! (1 by default). The key and the server default to what matchfarm gives a bot,
//! `FARM_VINDINIUM_KEY` and `FARM_VINDINIUM_SERVER`. The moves are [`choose_move`]'s:
//! replace it. Plain HTTP/1.1 over `std::net`, a connection per request, as the
//! original server speaks it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

/// An arena start waits for three other heroes; a move for the three heroes after yours.
const START_TIMEOUT: Duration = Duration::from_secs(600);
const MOVE_TIMEOUT: Duration = Duration::from_secs(15);
/// The most bytes of an answer read: a state of the largest board is about 10 KB.
const MAX_ANSWER_BYTES: u64 = 1 << 20;

/// What the command line asks for.
struct Options {
    training: bool,
    games: u32,
    key: String,
    server: String,
    trace: bool,
}

fn main() {
    let options = match options(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!(
                "vindinium-kit: {message}\nusage: vindinium-kit [training|arena] [GAMES] [--key KEY] [--server URL] [--trace]"
            );
            std::process::exit(2);
        }
    };
    let mut random = Random(std::env::var("FARM_SEED").ok().and_then(|seed| seed.parse().ok()).unwrap_or(1) | 1);
    for _ in 0..options.games {
        play(&options, &mut random);
    }
}

fn options(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        training: false,
        games: 1,
        key: std::env::var("FARM_VINDINIUM_KEY").unwrap_or_default(),
        server: std::env::var("FARM_VINDINIUM_SERVER").unwrap_or_else(|_| "http://vindinium.org".to_owned()),
        trace: false,
    };
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "training" => options.training = true,
            "arena" => options.training = false,
            "--trace" => options.trace = true,
            "--key" => options.key = args.next().ok_or("--key needs a value")?,
            "--server" => options.server = args.next().ok_or("--server needs a value")?,
            games => options.games = games.parse().map_err(|_| format!("unknown argument {games:?}"))?,
        }
    }
    if options.key.is_empty() {
        return Err("no key: give --key or set FARM_VINDINIUM_KEY".to_owned());
    }
    options.server = options.server.trim_end_matches('/').to_owned();
    Ok(options)
}

/// One game, from its start request to its finished state.
fn play(options: &Options, random: &mut Random) {
    let (path, form) = if options.training {
        ("training", format!("key={}&turns=300", encode(&options.key)))
    } else {
        ("arena", format!("key={}", encode(&options.key)))
    };
    let Some(mut state) = post(&format!("{}/api/{path}", options.server), &form, START_TIMEOUT, options.trace) else {
        return;
    };
    eprintln!("playing {} as hero {}", state["viewUrl"].as_str().unwrap_or_default(), state["hero"]["id"]);
    while state["game"]["finished"] == false {
        let play_url = state["playUrl"].as_str().unwrap_or_default().to_owned();
        let direction = choose_move(&state, random);
        match post(&play_url, &format!("dir={direction}"), MOVE_TIMEOUT, options.trace) {
            Some(next) => state = next,
            None => return,
        }
    }
    let hero = &state["hero"];
    eprintln!("finished: turn {}, gold {}, crashed {}", state["game"]["turn"], hero["gold"], hero["crashed"]);
}

/// The bot: a random direction, as the original kits' bot plays. Replace it; the
/// state is the original JSON (`pos.x` is the row).
fn choose_move(_state: &Value, random: &mut Random) -> &'static str {
    const DIRECTIONS: [&str; 5] = ["Stay", "North", "South", "East", "West"];
    DIRECTIONS[(random.next() % 5) as usize]
}

/// A xorshift generator: enough for random moves, no dependency.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A form value, percent-encoded.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|byte| match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => char::from(byte).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// POSTs `form` to `url` and reads the state it answers; `None` when the server
/// refuses (its status and text are logged) or cannot be reached: the game is over
/// for this client, as in the original kits.
fn post(url: &str, form: &str, timeout: Duration, trace: bool) -> Option<Value> {
    match request(url, form, timeout) {
        Ok((200, body)) => {
            if trace {
                eprintln!("state {body}");
            }
            serde_json::from_str(&body).map_err(|error| eprintln!("error: {url}: not JSON: {error}")).ok()
        }
        Ok((status, body)) => {
            eprintln!("refused: {status} {body:?}");
            None
        }
        Err(error) => {
            eprintln!("error: {url}: {error}");
            None
        }
    }
}

/// One `POST` of a form over a connection of its own; the status and the body.
fn request(url: &str, form: &str, timeout: Duration) -> std::io::Result<(u16, String)> {
    let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{what}: {url}"));
    let rest = url.strip_prefix("http://").ok_or_else(|| invalid("not an http:// URL"))?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let address = if host.contains(':') { host.to_owned() } else { format!("{host}:80") };
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(timeout))?;
    let _ = stream.set_nodelay(true);
    let path = if path.is_empty() { "/" } else { path };
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{form}",
        form.len()
    )?;
    let mut reader = BufReader::new(stream.take(MAX_ANSWER_BYTES));
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line.split(' ').nth(1).and_then(|code| code.parse().ok()).ok_or_else(|| invalid("no HTTP status"))?;
    let mut length = None;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<u64>().ok();
        }
    }
    let mut body = Vec::new();
    match length {
        Some(length) => reader.take(length).read_to_end(&mut body)?,
        None => reader.read_to_end(&mut body)?,
    };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}
