//! A Vindinium starter kit in Rust: a client of the original Vindinium server's HTTP
//! API, written the way the original kits are, which runs unchanged against
//! vindinium.org's API and against matchfarm's (transport `vindinium-server`).
//!
//! ```text
//! vindinium-kit [KEY] [training|arena] [GAMES] [SERVER_URL] [--trace]
//! ```
//!
//! (the original kits' arguments, each optional). It starts a game (`POST
//! /api/training` or `/api/arena` with its key), then posts one direction to the
//! state's `playUrl` per turn until the game is finished, GAMES times (1 by default).
//! The key and the server default to what matchfarm gives a bot, `FARM_VINDINIUM_KEY`
//! and `FARM_VINDINIUM_SERVER`; the mode to arena. The moves are [`choose_move`]'s:
//! replace it. Plain HTTP/1.1 over `std::net`, on one kept-alive connection while the
//! server keeps it.

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
                "vindinium-kit: {message}\nusage: vindinium-kit [KEY] [training|arena] [GAMES] [SERVER_URL] [--trace]"
            );
            std::process::exit(2);
        }
    };
    let mut random = Random(std::env::var("FARM_SEED").ok().and_then(|seed| seed.parse().ok()).unwrap_or(1) | 1);
    let mut client = Client::default();
    for _ in 0..options.games {
        play(&options, &mut client, &mut random);
    }
}

/// Reads the original kits' arguments, `[KEY] [training|arena] [GAMES] [SERVER_URL]`,
/// each optional (in this order), and `--trace` anywhere.
fn options(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let (flags, words): (Vec<String>, Vec<String>) = args.partition(|arg| arg.starts_with("--"));
    if let Some(flag) = flags.iter().find(|flag| *flag != "--trace") {
        return Err(format!("unknown option {flag:?}"));
    }
    let mut words = words.into_iter().peekable();
    let is_mode = |word: &str| word == "training" || word == "arena";
    let is_number = |word: &str| !word.is_empty() && word.bytes().all(|byte| byte.is_ascii_digit());
    let key = words.next_if(|word| !is_mode(word) && !is_number(word) && !word.contains("://"));
    let mode = words.next_if(|word| is_mode(word));
    let games = words.next_if(|word| is_number(word));
    let server = words.next_if(|word| word.contains("://"));
    if let Some(extra) = words.next() {
        return Err(format!("unexpected {extra:?}"));
    }
    let options = Options {
        training: mode.as_deref() == Some("training"),
        games: games.map_or(Ok(1), |games| games.parse().map_err(|_| format!("{games} games: too many")))?,
        key: key.or_else(|| std::env::var("FARM_VINDINIUM_KEY").ok()).unwrap_or_default(),
        server: server
            .or_else(|| std::env::var("FARM_VINDINIUM_SERVER").ok())
            .unwrap_or_else(|| "http://vindinium.org".to_owned())
            .trim_end_matches('/')
            .to_owned(),
        trace: !flags.is_empty(),
    };
    if options.key.is_empty() {
        return Err("no key: give it first, or set FARM_VINDINIUM_KEY".to_owned());
    }
    Ok(options)
}

/// One game, from its start request to its finished state.
fn play(options: &Options, client: &mut Client, random: &mut Random) {
    let (path, form) = if options.training {
        ("training", format!("key={}&turns=300", encode(&options.key)))
    } else {
        ("arena", format!("key={}", encode(&options.key)))
    };
    let start = format!("{}/api/{path}", options.server);
    let Some(mut state) = client.post(&start, &form, START_TIMEOUT, options.trace) else {
        return;
    };
    eprintln!("playing {} as hero {}", state["viewUrl"].as_str().unwrap_or_default(), state["hero"]["id"]);
    while state["game"]["finished"] == false {
        let play_url = state["playUrl"].as_str().unwrap_or_default().to_owned();
        let direction = choose_move(&state, random);
        match client.post(&play_url, &format!("dir={direction}"), MOVE_TIMEOUT, options.trace) {
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

/// An HTTP/1.1 client: one connection, kept while the server keeps it.
#[derive(Default)]
struct Client {
    /// The open connection and the `host:port` it goes to.
    connection: Option<(String, BufReader<TcpStream>)>,
}

/// An answer: its status, its body, and whether the server closes the connection.
struct Answer {
    status: u16,
    body: String,
    close: bool,
}

impl Client {
    /// POSTs `form` to `url` and reads the state it answers; `None` when the server
    /// refuses (its status and text are logged) or cannot be reached: the game is over
    /// for this client, as in the original kits.
    fn post(&mut self, url: &str, form: &str, timeout: Duration, trace: bool) -> Option<Value> {
        match self.request(url, form, timeout) {
            Ok(Answer { status: 200, body, .. }) => {
                if trace {
                    eprintln!("state {body}");
                }
                serde_json::from_str(&body).map_err(|error| eprintln!("error: {url}: not JSON: {error}")).ok()
            }
            Ok(Answer { status, body, .. }) => {
                eprintln!("refused: {status} {body:?}");
                None
            }
            Err(error) => {
                eprintln!("error: {url}: {error}");
                None
            }
        }
    }

    /// One `POST` of a form, on the kept connection if it goes to the same server
    /// (once more on a new one if the kept one turns out closed before answering).
    fn request(&mut self, url: &str, form: &str, timeout: Duration) -> std::io::Result<Answer> {
        let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{what}: {url}"));
        let rest = url.strip_prefix("http://").ok_or_else(|| invalid("not an http:// URL"))?;
        let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        let mut reused = self.connection.as_ref().is_some_and(|(to, _)| to == host);
        loop {
            let reader = match self.connection.as_mut() {
                Some((_, reader)) if reused => reader,
                _ => {
                    let address = if host.contains(':') { host.to_owned() } else { format!("{host}:80") };
                    let stream = TcpStream::connect(address)?;
                    let _ = stream.set_nodelay(true);
                    &mut self.connection.insert((host.to_owned(), BufReader::new(stream))).1
                }
            };
            reader.get_ref().set_read_timeout(Some(timeout))?;
            match exchange(reader, host, path, form) {
                Ok(answer) => {
                    if answer.close {
                        self.connection = None;
                    }
                    return Ok(answer);
                }
                Err(Exchange::NotAnswered(_)) if reused => reused = false,
                Err(Exchange::NotAnswered(error) | Exchange::Failed(error)) => {
                    self.connection = None;
                    return Err(error);
                }
            }
        }
    }
}

/// Why an exchange failed: before any byte of an answer (a kept connection the server
/// had closed: the request can go again), or after.
enum Exchange {
    NotAnswered(std::io::Error),
    Failed(std::io::Error),
}

/// Writes the request and reads its answer.
fn exchange(reader: &mut BufReader<TcpStream>, host: &str, path: &str, form: &str) -> Result<Answer, Exchange> {
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\n\r\n{form}",
        form.len()
    );
    reader.get_mut().write_all(request.as_bytes()).map_err(Exchange::NotAnswered)?;
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(0) => return Err(Exchange::NotAnswered(std::io::ErrorKind::UnexpectedEof.into())),
        Ok(_) => {}
        Err(error) => return Err(Exchange::NotAnswered(error)),
    }
    let invalid = |what: &str| Exchange::Failed(std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned()));
    let status = line.split(' ').nth(1).and_then(|code| code.parse().ok()).ok_or_else(|| invalid("no HTTP status"))?;
    let (mut length, mut close) = (None, line.starts_with("HTTP/1.0"));
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(Exchange::Failed)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<u64>().ok();
            } else if name.eq_ignore_ascii_case("connection") {
                close = value.trim().eq_ignore_ascii_case("close");
            }
        }
    }
    let mut body = Vec::new();
    let read = match length {
        Some(length) if length <= MAX_ANSWER_BYTES => reader.take(length).read_to_end(&mut body),
        Some(_) => return Err(invalid("an answer too large")),
        None => {
            close = true;
            reader.take(MAX_ANSWER_BYTES).read_to_end(&mut body)
        }
    };
    read.map_err(Exchange::Failed)?;
    Ok(Answer { status, body: String::from_utf8_lossy(&body).into_owned(), close })
}
