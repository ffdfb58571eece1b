//! `farm-supervisor`: PID 1 of a prepared bot container.
//!
//! ```text
//! farm-supervisor --user UID:GID --workdir DIR [--clean DIR]... -- PROGRAM [ARG]...
//! ```
//!
//! It listens on `/farm/run/supervisor.sock` (the run directory the worker bind-mounts)
//! and serves one match at a time (see `farm_supervisor::protocol`): on `start` it runs
//! PROGRAM as UID:GID in DIR with the descriptors it was handed as stdin, stdout and
//! stderr, so turns pass between worker and bot without it or the Docker daemon (and
//! hands the worker its cgroup's CPU usage file, to time the bot's moves by); on
//! `connect` and `listen` it hands over a socket of the container's own loopback (to a
//! bot's server, or for a bot that is a client of the worker's); on
//! `pause` and `resume` it stops and continues every process of the bot; when the bot's
//! own process exits, it kills every other process at once (the bot is over, and a
//! child must not keep its stdout open); on `end` it kills every process but itself,
//! empties every `--clean` directory and the System V IPC objects, checks that nothing
//! is left, and says whether the container can serve again. It runs as root with
//! only the capabilities that takes (kill, change user, open the run directory); the
//! bot runs with none, and cannot open the run directory, so it cannot reach the socket.
//!
//! `farm-supervisor clean DIR...` is the cleaning step, which the supervisor runs as the
//! bot's user (only the owner of an IPC object may remove it).

mod reset;

use std::ffi::OsString;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use farm_supervisor::fds::{LineReader, send_line};
use farm_supervisor::protocol::{self, CpuUsageFile, Exit, Reply, Request};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, kill};
use nix::sys::socket::getsockopt;
use nix::sys::socket::sockopt::PeerCredentials;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

/// How often, at the least, orphans the bot leaves are reaped while a match runs (so
/// that zombies do not eat its process limit), and how often, at the most, stops that
/// outlived their `resume` are looked for.
const PERIOD: Duration = Duration::from_millis(100);
/// How long the bot's server may take to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a request line may take to arrive once its connection is open.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// What the supervisor runs, and as whom.
#[derive(Debug)]
struct Options {
    uid: u32,
    gid: u32,
    workdir: PathBuf,
    clean: Vec<PathBuf>,
    program: Vec<OsString>,
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|first| first == "clean") {
        return reset::clean_as_bot(args[1..].iter().map(PathBuf::from));
    }
    let options = match parse(args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("farm-supervisor: {message}");
            return ExitCode::from(2);
        }
    };
    match serve(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("farm-supervisor: {error}");
            ExitCode::FAILURE
        }
    }
}

fn parse(args: Vec<OsString>) -> Result<Options, String> {
    let mut args = args.into_iter();
    let (mut user, mut workdir, mut clean) = (None, None, Vec::new());
    loop {
        let Some(flag) = args.next() else { return Err("no program after --".to_owned()) };
        let mut value = || args.next().ok_or_else(|| format!("{} needs a value", flag.to_string_lossy()));
        match flag.to_str() {
            Some("--user") => user = Some(value()?),
            Some("--workdir") => workdir = Some(PathBuf::from(value()?)),
            Some("--clean") => clean.push(PathBuf::from(value()?)),
            Some("--") => break,
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    let program: Vec<OsString> = args.collect();
    if program.is_empty() {
        return Err("no program after --".to_owned());
    }
    let user = user.ok_or("--user is required")?;
    let (uid, gid) = user
        .to_str()
        .and_then(|user| user.split_once(':'))
        .and_then(|(uid, gid)| Some((uid.parse().ok()?, gid.parse().ok()?)))
        .ok_or_else(|| format!("--user must be UID:GID, not {user:?}"))?;
    if uid == 0 {
        return Err("the bot must not run as root".to_owned());
    }
    Ok(Options { uid, gid, workdir: workdir.unwrap_or_else(|| PathBuf::from("/")), clean, program })
}

/// Listens on the run directory's socket and serves the worker, one connection at a
/// time, until the container is removed.
fn serve(options: &Options) -> io::Result<()> {
    let path = Path::new(protocol::RUN_DIR).join(protocol::SOCKET);
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    // The directory, not the socket, keeps strangers out: only the worker (its owner)
    // and this root process can enter it; the bot cannot.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666))?;
    loop {
        let (connection, _) = listener.accept()?;
        if !from_outside(&connection) {
            continue;
        }
        let mut reader = LineReader::default();
        let request = read_request(&connection, &mut reader);
        match request {
            Ok(Request::Start { env }) => play(options, &listener, &connection, &mut reader, &env),
            Ok(Request::Connect { port }) => connect(&connection, port),
            Ok(Request::Listen { port }) => listen(&connection, port),
            Ok(Request::End | Request::Pause | Request::Resume) => {
                reply(&connection, &Reply::Failed { reason: "no match is running".to_owned() })
            }
            Err(error) => reply(&connection, &Reply::Failed { reason: error.to_string() }),
        }
    }
}

/// Whether the peer is a process outside the container (the worker): the kernel gives
/// the pid of a process this PID namespace cannot see as 0; gVisor gives a peer on the
/// host the supervisor's own pid (no process in the container but the supervisor has
/// it, and the supervisor never connects to itself). A bot that reached the socket
/// some other way is hung up on.
fn from_outside(connection: &UnixStream) -> bool {
    getsockopt(connection, PeerCredentials)
        .is_ok_and(|peer| peer.pid() == 0 || u32::try_from(peer.pid()).is_ok_and(|pid| pid == std::process::id()))
}

fn read_request(connection: &UnixStream, reader: &mut LineReader) -> io::Result<Request> {
    connection.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    let line = reader.read_line(connection)?.ok_or(io::ErrorKind::UnexpectedEof)?;
    connection.set_read_timeout(None)?;
    Request::parse(&line).map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))
}

/// Sends a reply; a worker that has gone away is not the supervisor's concern.
fn reply(connection: &UnixStream, reply: &Reply) {
    let _ = send_line(connection, &reply.to_string(), &[]);
}

/// Connects to the bot's server inside the container and hands the socket over.
fn connect(connection: &UnixStream, port: u16) {
    match TcpStream::connect_timeout(&SocketAddr::from((Ipv4Addr::LOCALHOST, port)), CONNECT_TIMEOUT) {
        Ok(stream) => {
            let _ = send_line(connection, &Reply::Connected.to_string(), &[stream.as_fd()]);
        }
        Err(error) => reply(connection, &Reply::Refused { reason: error.to_string() }),
    }
}

/// Listens on `port` of the container's loopback and hands the listening socket
/// over; the supervisor keeps no copy, so the port is free again once the worker
/// closes it.
fn listen(connection: &UnixStream, port: u16) {
    match TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))) {
        Ok(listener) => {
            let _ = send_line(connection, &Reply::Listening.to_string(), &[listener.as_fd()]);
        }
        Err(error) => reply(connection, &Reply::Refused { reason: error.to_string() }),
    }
}

/// One match: starts the bot, serves `connect`s while it plays, and at `end` (or when
/// the worker hangs up) ends it and resets the container.
fn play(
    options: &Options,
    listener: &UnixListener,
    connection: &UnixStream,
    reader: &mut LineReader,
    env: &[(String, String)],
) {
    let stdio: [OwnedFd; 3] = match reader.take_fds().try_into() {
        Ok(stdio) => stdio,
        Err(fds) => {
            let reason = format!("start carries the bot's stdin, stdout and stderr, not {} descriptors", fds.len());
            return reply(connection, &Reply::Failed { reason });
        }
    };
    let oom_kills = reset::oom_kills();
    let bot = match start(options, env, stdio) {
        Ok(pid) => pid,
        Err(error) => {
            let reason = format!("cannot start {:?}: {error}", options.program[0]);
            return reply(connection, &Reply::Failed { reason });
        }
    };
    reset::lower_priority_for_oom(bot);
    let usage = cpu_usage_file();
    let started = Reply::Started { pid: bot.as_raw(), cpu: usage.as_ref().map(|(_, kind)| *kind) };
    let usage_fd: Vec<_> = usage.iter().map(|(file, _)| file.as_fd()).collect();
    let _ = send_line(connection, &started.to_string(), &usage_fd);

    let mut ended = None;
    let mut paused = false;
    let mut period_began = Instant::now();
    loop {
        let mut fds =
            [PollFd::new(connection.as_fd(), PollFlags::POLLIN), PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
        let wait = PollTimeout::try_from(PERIOD.saturating_sub(period_began.elapsed())).unwrap_or(PollTimeout::ZERO);
        let ready = poll(&mut fds, wait).unwrap_or(0);
        if reap(bot, &mut ended) {
            // The bot is over: what it left running goes with it at once, so that no
            // child holding its stdout keeps its output open (the worker crashes it
            // when its output ends, in every sandbox).
            let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
        }
        if period_began.elapsed() >= PERIOD {
            period_began = Instant::now();
            if !paused {
                // A stop that outlived its `resume` (seen, rarely, with a bot that forks
                // on every turn) costs its turn at most the period, not the turn. Once
                // per period rather than at every `resume`: the scan reads the state of
                // every process, twice per turn of the match otherwise.
                reset::continue_stopped();
            }
        }
        if ready == 0 {
            continue;
        }
        let has = |fd: &PollFd<'_>| fd.revents().is_some_and(|events| !events.is_empty());
        if has(&fds[1])
            && let Ok((other, _)) = listener.accept()
            && from_outside(&other)
        {
            match read_request(&other, &mut LineReader::default()) {
                Ok(Request::Connect { port }) => connect(&other, port),
                Ok(Request::Listen { port }) => listen(&other, port),
                _ => reply(&other, &Reply::Failed { reason: "a match is running".to_owned() }),
            }
        }
        if has(&fds[0]) {
            match follow_turns(connection, reader) {
                Some(now_paused) => paused = now_paused,
                None => break,
            }
        }
    }

    let early = ended.is_some();
    let leftovers = reset::kill_all(|pid, status| {
        if pid == bot {
            ended.get_or_insert(status);
        }
    });
    let mut exit = exit_of(ended);
    exit.early = early;
    exit.oom_killed = reset::oom_kills() > oom_kills;
    reply(connection, &Reply::Exited(exit));
    let verdict = match leftovers.and_then(|()| reset::clean_and_verify(options)) {
        Ok(()) => Reply::Ready,
        Err(reason) => Reply::Dirty { reason },
    };
    reply(connection, &verdict);
}

/// The container's cgroup CPU usage file, opened for the worker to read the bot's CPU
/// time from (the supervisor's own is in it too: it sleeps while the bot plays).
fn cpu_usage_file() -> Option<(std::fs::File, CpuUsageFile)> {
    CpuUsageFile::PLACES.iter().find_map(|(path, kind)| std::fs::File::open(path).ok().map(|file| (file, *kind)))
}

/// Reads the match connection's lines that have arrived: `pause` and `resume` stop and
/// continue every process but this one (signal -1 from a PID namespace's init).
/// Whether the bot is paused after them; `None` at `end`, or when the worker hung up
/// or sent nonsense: the match is over either way.
fn follow_turns(connection: &UnixStream, reader: &mut LineReader) -> Option<bool> {
    loop {
        let (signal, paused) = match reader.read_line(connection).map(|line| line.as_deref().map(Request::parse)) {
            Ok(Some(Ok(Request::Pause))) => (Signal::SIGSTOP, true),
            Ok(Some(Ok(Request::Resume))) => (Signal::SIGCONT, false),
            _ => return None,
        };
        let _ = kill(Pid::from_raw(-1), signal);
        if !reader.has_line() {
            return Some(paused);
        }
    }
}

/// Starts the bot: its own process group, the bot's user, a clean environment (the
/// image's, with `HOME` in the writable `/tmp`, and the match's variables), and no
/// descriptor but its stdio: every other one the supervisor holds, its own or one it
/// inherited, is marked close-on-exec first (the supervisor has one thread, so none is
/// opened meanwhile).
fn start(options: &Options, env: &[(String, String)], [stdin, stdout, stderr]: [OwnedFd; 3]) -> io::Result<Pid> {
    let mut command = Command::new(&options.program[0]);
    command
        .args(&options.program[1..])
        .env_remove("HOME")
        .env("HOME", "/tmp")
        .envs(env.iter().map(|(name, value)| (name, value)))
        .current_dir(&options.workdir)
        .uid(options.uid)
        .gid(options.gid)
        .process_group(0)
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr));
    close_fds::set_fds_cloexec_threadsafe(3, &[]);
    let child = command.spawn()?;
    // Reaped by `reap` and `reset::kill_all`, which see every process of the container.
    Ok(Pid::from_raw(i32::try_from(child.id()).map_err(io::Error::other)?))
}

/// Reaps whatever has ended, noting the bot's own status. `true` if the bot is among
/// what ended.
fn reap(bot: Pid, ended: &mut Option<WaitStatus>) -> bool {
    let mut bot_ended = false;
    while let Ok(status) = waitpid(None, Some(WaitPidFlag::WNOHANG | WaitPidFlag::__WALL)) {
        match status.pid() {
            None => break,
            Some(pid) if pid == bot => {
                ended.get_or_insert(status);
                bot_ended = true;
            }
            Some(_) => {}
        }
    }
    bot_ended
}

fn exit_of(status: Option<WaitStatus>) -> Exit {
    match status {
        Some(WaitStatus::Exited(_, code)) => Exit { code: Some(code), ..Exit::default() },
        Some(WaitStatus::Signaled(_, signal, _)) => Exit { signal: Some(signal as i32), ..Exit::default() },
        // Not seen to end: it was killed with the rest.
        _ => Exit { signal: Some(libc::SIGKILL), ..Exit::default() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<OsString> {
        text.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn arguments_name_the_user_the_directories_and_the_program() {
        let options = parse(args("--user 10001:10002 --workdir /bot --clean /tmp --clean /dev/shm -- python3 bot.py"))
            .expect("valid");
        assert_eq!((options.uid, options.gid), (10001, 10002));
        assert_eq!(options.workdir, PathBuf::from("/bot"));
        assert_eq!(options.clean, [PathBuf::from("/tmp"), PathBuf::from("/dev/shm")]);
        assert_eq!(options.program, args("python3 bot.py"));
    }

    #[test]
    fn the_bot_holds_no_descriptor_but_its_stdio() {
        // A descriptor without close-on-exec, as one the supervisor could inherit.
        let inherited = rustix::io::dup(std::fs::File::open("/dev/null").expect("/dev/null")).expect("dup");
        let (stdin, stdin_writer) = std::io::pipe().expect("a pipe");
        let (stdout_reader, stdout) = std::io::pipe().expect("a pipe");
        let (_stderr_reader, stderr) = std::io::pipe().expect("a pipe");
        let options = Options {
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
            workdir: PathBuf::from("/"),
            clean: Vec::new(),
            program: ["sh", "-c", "echo started; exec cat"].map(OsString::from).to_vec(),
        };
        let bot = start(&options, &[], [stdin.into(), stdout.into(), stderr.into()]).expect("the bot starts");
        // Its first line comes after its exec, when close-on-exec has done its work (read
        // any sooner, between fork and exec, the child still holds every descriptor);
        // then `cat` waits for its input, holding what it was started with.
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout_reader), &mut line).expect("its line");
        assert_eq!(line, "started\n");
        let mut held: Vec<String> = std::fs::read_dir(format!("/proc/{bot}/fd"))
            .expect("the bot's descriptors")
            .map(|entry| entry.expect("an entry").file_name().to_string_lossy().into_owned())
            .collect();
        drop(stdin_writer);
        let _ = waitpid(bot, None);
        held.sort();
        assert_eq!(held, ["0", "1", "2"], "and not {inherited:?}");
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        for (text, expected) in [
            ("--user 10001:10001 --", "no program"),
            ("--user 10001:10001 bot", "unknown argument"),
            ("--workdir / -- bot", "--user is required"),
            ("--user 10001 -- bot", "UID:GID"),
            ("--user 0:0 -- bot", "root"),
            ("--user", "needs a value"),
        ] {
            let error = parse(args(text)).expect_err(text);
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
