//! A bot for matchfarm's benchmarks: it answers every request at once with `[]`, a
//! Skookum Botwars turn in which no botlet moves (so it can play whole Botwars
//! matches too). What a round trip to it costs is the farm's transport, not thinking.
//!
//! - `bench-echo-bot`: the `stdio` transport, one reply line per request line, until
//!   stdin closes.
//! - `bench-echo-bot --http`: the `http` transport, serving `POST /` on `127.0.0.1:$FARM_PORT`
//!   (8080 by default); keep-alive connections are served until the client closes them.
//! - `bench-echo-bot --think-ms N`: the `stdio` transport, each reply N milliseconds
//!   after its request, as a bot that thinks: matches that last, whose outcome does not
//!   depend on the time (the chaos test, coordinator/tests/chaos.rs, spreads its faults
//!   over a tournament of them).
//!
//! Standard library only, so that its image is one static binary (see
//! deploy/build-images.sh).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// The reply to every request.
const REPLY: &[u8] = b"[]";

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["--http"] => {
            let port = std::env::var("FARM_PORT").ok().and_then(|port| port.parse().ok()).unwrap_or(8080u16);
            serve_http(TcpListener::bind(("127.0.0.1", port))?)
        }
        ["--think-ms", millis] => {
            let think = millis.parse().map(Duration::from_millis).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("--think-ms {millis}: not a number of ms"))
            })?;
            serve_lines(io::stdin().lock(), io::stdout().lock(), think)
        }
        [] => serve_lines(io::stdin().lock(), io::stdout().lock(), Duration::ZERO),
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "usage: bench-echo-bot [--http | --think-ms N]")),
    }
}

/// One reply line per request line, `think` after it, flushed at once.
fn serve_lines(input: impl BufRead, mut output: impl Write, think: Duration) -> io::Result<()> {
    for line in input.split(b'\n') {
        line?;
        if !think.is_zero() {
            std::thread::sleep(think);
        }
        output.write_all(REPLY)?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
    Ok(())
}

/// Every connection on a thread of its own: the farm opens one per request.
fn serve_http(listener: TcpListener) -> io::Result<()> {
    for stream in listener.incoming() {
        let stream = stream?;
        std::thread::spawn(move || {
            if let Err(error) = serve_connection(stream) {
                eprintln!("connection: {error}");
            }
        });
    }
    Ok(())
}

/// Answers the requests of one connection until the client closes it.
fn serve_connection(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut output = stream.try_clone()?;
    let mut input = BufReader::new(stream);
    let mut line = String::new();
    loop {
        // The request line; end of stream between requests is the client leaving.
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut body_length = 0usize;
        loop {
            line.clear();
            if input.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                body_length = value.trim().parse().map_err(|_| io::Error::other("bad Content-Length"))?;
            }
        }
        io::copy(&mut input.by_ref().take(body_length as u64), &mut io::sink())?;
        let head =
            format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", REPLY.len());
        output.write_all(head.as_bytes())?;
        output.write_all(REPLY)?;
        output.flush()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_every_line_with_one_reply_line() {
        let mut output = Vec::new();
        serve_lines(&b"{\"player\":\"r\"}\nsecond\n"[..], &mut output, Duration::ZERO).expect("in memory");
        assert_eq!(output, b"[]\n[]\n");
    }

    #[test]
    fn a_thinking_bot_answers_each_line_after_its_time() {
        let mut output = Vec::new();
        let started = std::time::Instant::now();
        serve_lines(&b"a\nb\nc\n"[..], &mut output, Duration::from_millis(20)).expect("in memory");
        assert_eq!(output, b"[]\n[]\n[]\n");
        assert!(started.elapsed() >= Duration::from_millis(60), "three replies, 20 ms each at least");
    }

    #[test]
    fn answers_posts_on_a_kept_alive_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let address = listener.local_addr().expect("bound");
        std::thread::spawn(move || serve_http(listener));
        let mut client = TcpStream::connect(address).expect("connects");
        let request = "POST / HTTP/1.1\r\nHost: bot\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        let mut reader = BufReader::new(client.try_clone().expect("clone"));
        for _ in 0..2 {
            client.write_all(request.as_bytes()).expect("sends");
            let mut head = String::new();
            while !head.ends_with("\r\n\r\n") {
                reader.read_line(&mut head).expect("reads the head");
            }
            assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
            let mut body = [0u8; 2];
            reader.read_exact(&mut body).expect("reads the body");
            assert_eq!(&body, REPLY);
        }
    }
}
