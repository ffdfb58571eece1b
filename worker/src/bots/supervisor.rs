//! The worker's side of a prepared container's supervisor (`farm_supervisor`): it
//! starts the bot of one match with the worker's own pipes as its stdio, ends it and
//! reports the reset, and hands over connections to an `http` bot's server and the
//! port a client of the worker's Vindinium server connects to.
//!
//! The socket calls are short blocking exchanges with a process the worker trusts (its
//! own binary), each bounded by [`REPLY_TIMEOUT`], so they run on tokio's blocking
//! threads.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use farm_supervisor::fds::{LineReader, send_line, try_send_line};
use farm_supervisor::protocol::{self, Exit, Reply, Request};
use tokio::net::unix::pipe;

use super::cpu::CpuMeter;

/// How long the supervisor may take to answer. Its answers take milliseconds; past
/// this it is wedged (or its container gone) and the container is replaced.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// A container's supervisor, reached through the socket in its run directory.
#[derive(Debug, Clone)]
pub struct Supervisor {
    socket: PathBuf,
}

/// A bot the supervisor has started: the match's connection to the supervisor and the
/// worker's ends of the bot's stdin, stdout and stderr.
pub struct StartedBot {
    /// The connection that ends the match.
    pub control: Control,
    /// What the bot reads.
    pub stdin: pipe::Sender,
    /// What it writes.
    pub stdout: pipe::Receiver,
    /// Its log.
    pub stderr: pipe::Receiver,
    /// Its container's CPU usage, when the supervisor found the file.
    pub cpu: Option<CpuMeter>,
}

/// The connection a match was started on: `end` goes there.
#[derive(Debug)]
pub struct Control {
    stream: UnixStream,
    reader: LineReader,
}

/// A match whose bot has ended, waiting for the supervisor's verdict on the reset.
#[derive(Debug)]
pub struct Resetting(Control);

impl Supervisor {
    /// The supervisor of the container whose run directory (on this host) is `run_dir`.
    pub fn new(run_dir: &Path) -> Self {
        Supervisor { socket: run_dir.join(protocol::SOCKET) }
    }

    /// Whether the supervisor accepts connections yet.
    pub fn is_listening(&self) -> bool {
        UnixStream::connect(&self.socket).is_ok()
    }

    /// Starts the bot with `env` added to its environment.
    pub async fn start(&self, env: Vec<(String, String)>) -> io::Result<StartedBot> {
        let socket = self.socket.clone();
        let (control, [stdin, stdout, stderr], cpu) = tokio::task::spawn_blocking(move || {
            let (bot_stdin, stdin) = std::io::pipe()?;
            let (stdout, bot_stdout) = std::io::pipe()?;
            let (stderr, bot_stderr) = std::io::pipe()?;
            let mut control = Control::connect(&socket)?;
            let request = Request::Start { env };
            send_line(
                &control.stream,
                &request.to_string(),
                &[bot_stdin.as_fd(), bot_stdout.as_fd(), bot_stderr.as_fd()],
            )?;
            match control.reply()? {
                Reply::Started { cpu, .. } => {
                    let usage = control.reader.take_fds().into_iter().next();
                    let cpu = cpu.zip(usage).map(|(kind, fd)| CpuMeter::Cgroup { file: fd.into(), kind });
                    Ok((control, [OwnedFd::from(stdin), stdout.into(), stderr.into()], cpu))
                }
                Reply::Failed { reason } => Err(io::Error::other(reason)),
                other => Err(unexpected(&other)),
            }
        })
        .await
        .map_err(io::Error::other)??;
        Ok(StartedBot {
            control,
            stdin: pipe::Sender::from_owned_fd(stdin)?,
            stdout: pipe::Receiver::from_owned_fd(stdout)?,
            stderr: pipe::Receiver::from_owned_fd(stderr)?,
            cpu,
        })
    }

    /// A connection to the bot's server on `port` inside the container; `None` while
    /// nothing accepts there (the bot is still starting, or never serves).
    pub async fn connect(&self, port: u16) -> io::Result<Option<tokio::net::TcpStream>> {
        let socket = self.socket_for(Request::Connect { port }, Reply::Connected).await?;
        socket
            .map(|fd| {
                let stream = std::net::TcpStream::from(fd);
                stream.set_nonblocking(true)?;
                tokio::net::TcpStream::from_std(stream)
            })
            .transpose()
    }

    /// A socket listening on `port` of the container's loopback, which the worker
    /// accepts the bot's connections on: for a bot that is the client of a server the
    /// worker plays. Asked before the bot starts, so that its first request finds it.
    pub async fn listen(&self, port: u16) -> io::Result<tokio::net::TcpListener> {
        let socket = self.socket_for(Request::Listen { port }, Reply::Listening).await?;
        let listener = std::net::TcpListener::from(socket.ok_or_else(|| {
            io::Error::new(io::ErrorKind::AddrInUse, format!("the container cannot listen on port {port}"))
        })?);
        listener.set_nonblocking(true)?;
        tokio::net::TcpListener::from_std(listener)
    }

    /// Sends `request` on a connection of its own and takes the socket its answer
    /// `granted` carries; `None` if it was refused.
    async fn socket_for(&self, request: Request, granted: Reply) -> io::Result<Option<OwnedFd>> {
        let socket = self.socket.clone();
        tokio::task::spawn_blocking(move || {
            let mut control = Control::connect(&socket)?;
            send_line(&control.stream, &request.to_string(), &[])?;
            match control.reply()? {
                reply if reply == granted => match control.reader.take_fds().into_iter().next() {
                    Some(fd) => Ok(Some(fd)),
                    None => Err(io::Error::other(format!("the supervisor answered {reply} but sent no socket"))),
                },
                Reply::Refused { .. } => Ok(None),
                Reply::Failed { reason } => Err(io::Error::other(reason)),
                other => Err(unexpected(&other)),
            }
        })
        .await
        .map_err(io::Error::other)?
    }
}

impl Control {
    fn connect(socket: &Path) -> io::Result<Self> {
        let stream = UnixStream::connect(socket)?;
        stream.set_read_timeout(Some(REPLY_TIMEOUT))?;
        Ok(Control { stream, reader: LineReader::default() })
    }

    fn reply(&mut self) -> io::Result<Reply> {
        let line = self
            .reader
            .read_line(&self.stream)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "the supervisor hung up"))?;
        Reply::parse(&line).map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))
    }

    /// Asks the supervisor to stop (`true`) or continue every process of the bot. Not
    /// waited for; a supervisor not reading (wedged) is found out at the match's end.
    pub fn freeze(&self, frozen: bool) {
        let request = if frozen { Request::Pause } else { Request::Resume };
        if let Err(error) = try_send_line(&self.stream, &request.to_string()) {
            // A lost `resume` leaves the bot stopped until its move times out: one
            // suspect of the bot left stopped under gVisor (the book's gVisor page).
            tracing::warn!(%error, frozen, "a bot's stop or continue did not reach its supervisor");
        }
    }

    /// Ends the match: the supervisor kills every process of the bot and says how the
    /// bot exited, then resets the container (see [`Resetting`]). `Err` if it did not
    /// answer: the container is then not to be trusted again.
    pub async fn end(self) -> io::Result<(Exit, Resetting)> {
        let mut control = self;
        tokio::task::spawn_blocking(move || {
            send_line(&control.stream, &Request::End.to_string(), &[])?;
            match control.reply()? {
                Reply::Exited(exit) => Ok((exit, Resetting(control))),
                other => Err(unexpected(&other)),
            }
        })
        .await
        .map_err(io::Error::other)?
    }
}

impl Resetting {
    /// Waits for the reset: `Ok` once the supervisor has verified that nothing of the
    /// match is left, otherwise what it found (or why it could not say).
    pub async fn verdict(self) -> Result<(), String> {
        let Resetting(mut control) = self;
        let reply = tokio::task::spawn_blocking(move || control.reply())
            .await
            .map_err(|error| error.to_string())
            .and_then(|reply| reply.map_err(|error| format!("no answer from the supervisor: {error}")))?;
        match reply {
            Reply::Ready => Ok(()),
            Reply::Dirty { reason } => Err(reason),
            other => Err(unexpected(&other).to_string()),
        }
    }
}

fn unexpected(reply: &Reply) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("unexpected reply from the supervisor: {reply}"))
}
