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
//! - `bench-echo-bot --burn-ms N`: each reply after N milliseconds of this bot's own
//!   CPU time, spun, however long that takes on a busy machine: the CPU clock's tests.
//! - `bench-echo-bot --ponder`: a second thread and a child process spin all the time,
//!   thinking between turns; at each request the bot writes to stderr `idle-cpu-us N`,
//!   the CPU time it and its child used since its last reply: what freezing bots between
//!   their reply and their next request takes away.
//!
//! The stdio flags combine. Standard library and nix only (for CPU clocks), so that
//! its image is one static binary (see deploy/build-images.sh).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use nix::time::{ClockId, clock_gettime};

/// The reply to every request.
const REPLY: &[u8] = b"[]";
const USAGE: &str = "usage: bench-echo-bot [--http | [--think-ms N] [--burn-ms N] [--ponder]]";
/// The flag a pondering bot's child is started with: it spins until it is killed.
const SPIN: &str = "--spin-forever";

/// How a stdio bot answers.
#[derive(Debug, Default, Clone, Copy)]
struct Answering {
    /// Slept before each reply.
    think: Duration,
    /// CPU time spun before each reply.
    burn: Duration,
    /// Whether a thread spins between turns, and idle CPU time is reported.
    ponder: bool,
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args == ["--http"] {
        let port = std::env::var("FARM_PORT").ok().and_then(|port| port.parse().ok()).unwrap_or(8080u16);
        return serve_http(TcpListener::bind(("127.0.0.1", port))?);
    }
    if args == [SPIN] {
        spin();
    }
    let answering = parse(&args).map_err(|problem| io::Error::new(io::ErrorKind::InvalidInput, problem))?;
    let mut child = None;
    if answering.ponder {
        std::thread::spawn(spin);
        // Its own stdio closed: only the farm's end of the bot (its process group, its
        // cgroup) ends it.
        let spinner = std::process::Command::new(std::env::current_exe()?)
            .arg(SPIN)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        child = Some(spinner.id());
    }
    serve_lines(io::stdin().lock(), io::stdout().lock(), io::stderr(), answering, child)
}

/// Spins on a CPU until killed.
fn spin() -> ! {
    loop {
        std::hint::black_box(0u64);
    }
}

/// The CPU time process `pid`'s main thread has used, to the nanosecond, from
/// `/proc/PID/schedstat` (its first field); zero once it is gone. The child spins on
/// that one thread.
fn process_cpu_time(pid: u32) -> Duration {
    let schedstat = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).unwrap_or_default();
    Duration::from_nanos(schedstat.split_whitespace().next().and_then(|nanos| nanos.parse().ok()).unwrap_or(0))
}

fn parse(args: &[String]) -> Result<Answering, String> {
    let mut answering = Answering::default();
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut millis = || {
            let value = args.next().ok_or_else(|| format!("{flag} needs a number of ms; {USAGE}"))?;
            value.parse().map(Duration::from_millis).map_err(|_| format!("{flag} {value}: not a number of ms"))
        };
        match flag.as_str() {
            "--think-ms" => answering.think = millis()?,
            "--burn-ms" => answering.burn = millis()?,
            "--ponder" => answering.ponder = true,
            _ => return Err(USAGE.to_owned()),
        }
    }
    Ok(answering)
}

/// A CPU clock of the kernel's: this thread's or this process's time on a CPU.
fn cpu_time(clock: ClockId) -> Duration {
    clock_gettime(clock).map(Duration::from).unwrap_or_default()
}

/// One reply line per request line, after `answering`'s thinking, flushed at once;
/// `child` is the pondering child process, whose CPU time counts as the bot's.
fn serve_lines(
    input: impl BufRead,
    mut output: impl Write,
    mut log: impl Write,
    answering: Answering,
    child: Option<u32>,
) -> io::Result<()> {
    let used = || cpu_time(ClockId::CLOCK_PROCESS_CPUTIME_ID) + child.map(process_cpu_time).unwrap_or_default();
    let mut replied_at = None;
    for line in input.split(b'\n') {
        line?;
        if answering.ponder
            && let Some(replied_at) = replied_at
        {
            let idle = used().saturating_sub(replied_at);
            writeln!(log, "idle-cpu-us {}", idle.as_micros())?;
        }
        if !answering.think.is_zero() {
            std::thread::sleep(answering.think);
        }
        let burn_from = cpu_time(ClockId::CLOCK_THREAD_CPUTIME_ID);
        while cpu_time(ClockId::CLOCK_THREAD_CPUTIME_ID) - burn_from < answering.burn {
            std::hint::black_box(0u64);
        }
        output.write_all(REPLY)?;
        output.write_all(b"\n")?;
        output.flush()?;
        replied_at = Some(used());
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
        serve_lines(&b"{\"player\":\"r\"}\nsecond\n"[..], &mut output, io::sink(), Answering::default(), None)
            .expect("in memory");
        assert_eq!(output, b"[]\n[]\n");
    }

    #[test]
    fn a_thinking_bot_answers_each_line_after_its_time() {
        let mut output = Vec::new();
        let started = std::time::Instant::now();
        let thinking = Answering { think: Duration::from_millis(20), ..Answering::default() };
        serve_lines(&b"a\nb\nc\n"[..], &mut output, io::sink(), thinking, None).expect("in memory");
        assert_eq!(output, b"[]\n[]\n[]\n");
        assert!(started.elapsed() >= Duration::from_millis(60), "three replies, 20 ms each at least");
    }

    #[test]
    fn a_burning_bot_spends_its_cpu_time_before_each_reply() {
        let burning = Answering { burn: Duration::from_millis(20), ..Answering::default() };
        let before = cpu_time(ClockId::CLOCK_THREAD_CPUTIME_ID);
        let mut output = Vec::new();
        serve_lines(&b"a\nb\n"[..], &mut output, io::sink(), burning, None).expect("in memory");
        assert_eq!(output, b"[]\n[]\n");
        assert!(cpu_time(ClockId::CLOCK_THREAD_CPUTIME_ID) - before >= Duration::from_millis(40));
    }

    #[test]
    fn a_pondering_bot_reports_its_idle_cpu_time_from_the_second_request() {
        let pondering = Answering { ponder: true, ..Answering::default() };
        let mut log = Vec::new();
        serve_lines(&b"a\nb\nc\n"[..], io::sink(), &mut log, pondering, None).expect("in memory");
        let log = String::from_utf8(log).expect("text");
        assert_eq!(log.lines().count(), 2, "{log}");
        assert!(log.lines().all(|line| line.strip_prefix("idle-cpu-us ").is_some_and(|n| n.parse::<u64>().is_ok())));
    }

    #[test]
    fn flags_combine_and_bad_ones_show_the_usage() {
        let args = |text: &str| text.split(' ').map(str::to_owned).collect::<Vec<_>>();
        let answering = parse(&args("--burn-ms 40 --ponder --think-ms 5")).expect("valid");
        assert_eq!(
            (answering.burn, answering.think, answering.ponder),
            (Duration::from_millis(40), Duration::from_millis(5), true)
        );
        assert!(parse(&args("--burn-ms")).expect_err("no number").contains("needs a number"));
        assert!(parse(&args("--burn-ms x")).expect_err("not a number").contains("not a number"));
        assert!(parse(&args("--fast")).expect_err("unknown").contains("usage"));
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
