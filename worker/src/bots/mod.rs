//! Bot sessions: a bot started for one match, asked for replies, then ended; and the
//! sandboxes that start them.

mod capped;
mod cgroup;
mod container;
mod cpu;
mod http;
mod lines;
mod process;
mod supervisor;
mod vindinium_server;

use farm_engine::builtin::{self, BuiltinBot, UnknownBuiltin};
use farm_engine::wire::HttpBody;
use farm_engine::{BotReply, GameKind, GameRng, Match, Seat};
use farm_proto::limits;
use farm_proto::{BotLaunch, BotSpec, Transport};
use serde::Serialize;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use capped::read_capped;
use http::{BotServer, HttpChannel};
use lines::LineChannel;
use vindinium_server::{ServerChannel, VindiniumServer};

use crate::metrics;

pub use capped::CappedLog;
pub use container::{ContainerBot, DockerError, DockerSandbox, DockerSettings, IMAGE_LABEL, WORKER_LABEL};
pub use cpu::CpuMeter;
pub use farm_proto::ContainerIsolation;
pub use process::{Isolation, ProcessBot, ProcessLaunch, namespaces_available};

/// The user an untrusted bot runs as, in its container or isolated (when the worker
/// can choose): unprivileged, and never the worker's own.
pub const BOT_UID: u32 = 10001;
/// The bot's group.
pub const BOT_GID: u32 = 10001;
/// The most files a bot may have open (RLIMIT_NOFILE, soft and hard), in a container
/// as in a local sandbox: what most systems give a process by default. A bot gets no
/// core dumps at all (RLIMIT_CORE 0): a crash must not write its memory to disk.
pub const BOT_OPEN_FILES: u64 = limits::BOT_OPEN_FILES;

/// A bot that could not be started. Distinct from a bot that starts and then fails,
/// which is an ordinary result of the match.
#[derive(Debug, thiserror::Error)]
pub enum BotLaunchError {
    /// The named built-in bot does not exist for this game.
    #[error(transparent)]
    UnknownBuiltin(#[from] UnknownBuiltin),
    /// The process could not be created at all (not: the command failed).
    #[error("cannot start {command:?}: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The shell refused the command before running anything (a syntax error): `cmd:`
    /// runs one command, as `exec COMMAND`.
    #[error(
        "cannot start {command:?}: the shell refused it ({shell}); cmd: runs one command: give shell code as \
         sh -c '...'"
    )]
    NotACommand {
        /// The command line.
        command: String,
        /// What the shell said.
        shell: String,
    },
    /// The bot's image is not on this machine.
    #[error("image {image:?} is not available: {message}")]
    ImageMissing {
        /// The image.
        image: String,
        /// What the daemon said.
        message: String,
    },
    /// The bot is of a kind this sandbox does not run.
    #[error("{bot} cannot run in the {sandbox} sandbox")]
    WrongSandbox {
        /// The bot, as `cmd:...` or `image:...`.
        bot: String,
        /// The sandbox.
        sandbox: &'static str,
    },
    /// The Docker daemon failed.
    #[error(transparent)]
    Docker(#[from] DockerError),
    /// A local bot's containment (its cgroup) could not be set up.
    #[error("cannot contain a local bot: {what}: {source}")]
    Contain {
        /// The step that failed.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
}

/// A reply, when it arrived and the bot's CPU time then: a bot's time is measured to
/// its own reply, not to the moment the runner got round to reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The reply.
    pub reply: BotReply,
    /// When it arrived.
    pub at: Instant,
    /// The bot's cumulative CPU time when it arrived, if its sandbox measures it.
    pub cpu: Option<std::time::Duration>,
}

impl Received {
    /// `reply`, arrived now, with the CPU time `meter` reads now.
    pub fn now(reply: BotReply, meter: Option<&CpuMeter>) -> Self {
        Received { reply, at: Instant::now(), cpu: meter.and_then(CpuMeter::used) }
    }
}

/// How the worker talks with an external bot: by its transport.
enum BotChannel {
    /// Lines over its stdin and stdout (`stdio`).
    Lines(LineChannel),
    /// POSTs to its server (`http`).
    Http(HttpChannel),
    /// Answers to its requests, as the original Vindinium server's (`vindinium-server`).
    Server(ServerChannel),
}

/// How a bot will be spoken to, decided before it starts: its sandbox gives it what
/// it needs to be reached (a port, for a bot's server) or to reach the worker (the
/// server the worker plays for it).
pub(crate) enum Conversation {
    /// Lines over its stdin and stdout.
    Lines,
    /// POSTs to its server, which listens on its own port.
    Http(HttpBody),
    /// The worker's server, of which the bot is a client.
    Server(VindiniumServer),
}

impl Conversation {
    /// How a bot speaking `transport` is spoken to; `server` makes the worker's server
    /// for a client of the original Vindinium API.
    async fn of<F>(transport: Transport, server: impl FnOnce() -> F) -> std::io::Result<Self>
    where
        F: Future<Output = std::io::Result<VindiniumServer>>,
    {
        Ok(match transport {
            Transport::Stdio => Conversation::Lines,
            Transport::Http => Conversation::Http(HttpBody::Json),
            Transport::HttpForm => Conversation::Http(HttpBody::LegacyForm),
            Transport::VindiniumServer => Conversation::Server(server().await?),
        })
    }

    /// The variables that tell the bot how to reach the worker's server, if it is its client.
    fn environment(&self) -> Vec<(&'static str, String)> {
        match self {
            Conversation::Server(server) => server.environment().into(),
            Conversation::Lines | Conversation::Http(_) => Vec::new(),
        }
    }

    /// The bot's channel, once it runs, `server` being where an `http` bot serves. Its
    /// stdout and stdin are its conversation only if it speaks lines; otherwise its
    /// stdout is drained and dropped (like a stdio bot's after the match) and its
    /// stdin closed.
    fn channel(
        self,
        server: Option<BotServer>,
        output: impl AsyncRead + Unpin + Send + 'static,
        input: impl AsyncWrite + Unpin + Send + 'static,
        meter: Option<Arc<CpuMeter>>,
    ) -> std::io::Result<BotChannel> {
        if let Conversation::Lines = self {
            return Ok(BotChannel::Lines(LineChannel::new(output, input, meter)));
        }
        drop(input);
        match (self, server) {
            (Conversation::Server(server), _) => {
                tokio::spawn(read_capped(output, 0));
                Ok(BotChannel::Server(server.serve(meter)))
            }
            (Conversation::Http(body), Some(server)) => {
                tokio::spawn(read_capped(output, 0));
                Ok(BotChannel::Http(HttpChannel::new(server, body, meter)))
            }
            _ => Err(std::io::Error::other("an http bot's server has no address")),
        }
    }
}

impl BotChannel {
    /// Queues a request. `false` if the bot is not taking it.
    fn send(&mut self, request: &str) -> bool {
        match self {
            BotChannel::Lines(lines) => lines.send(request),
            BotChannel::Http(http) => http.send(request),
            BotChannel::Server(server) => server.send(request),
        }
    }

    /// The reply to the last request if it arrives by `until`; `None` if not.
    async fn receive_until(&mut self, until: Instant) -> Option<Received> {
        match self {
            BotChannel::Lines(lines) => lines.receive_until(until).await,
            BotChannel::Http(http) => http.receive_until(until).await,
            BotChannel::Server(server) => server.receive_until(until).await,
        }
    }

    /// Stops waiting for the reply to the last request.
    fn give_up(&mut self) {
        match self {
            BotChannel::Lines(lines) => lines.give_up(),
            BotChannel::Http(http) => http.give_up(),
            BotChannel::Server(server) => server.give_up(),
        }
    }

    /// The server the worker plays for a client bot, if the bot is one.
    fn server(&mut self) -> Option<&mut ServerChannel> {
        match self {
            BotChannel::Server(server) => Some(server),
            BotChannel::Lines(_) | BotChannel::Http(_) => None,
        }
    }
}

/// How a bot's process or container ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BotExit {
    /// The exit code, when it exited by itself.
    pub code: Option<i32>,
    /// The signal that ended a process (9 when the farm killed it at the end).
    pub signal: Option<i32>,
    /// Whether it had exited before the match ended.
    pub exited_early: bool,
    /// Whether the kernel killed it for exceeding its memory limit.
    pub oom_killed: bool,
}

impl BotExit {
    /// A bot's end, by its exit `code` or `signal`, `seen_early` if the sandbox saw it
    /// before the match ended. An end of its own (an exit code, or any signal but the
    /// SIGKILL the farm ends bots with) came before the farm ended it, whenever it was
    /// seen: a bot's process may finish exiting only just after its output ended, and
    /// the match with it.
    pub(crate) fn new(code: Option<i32>, signal: Option<i32>, seen_early: bool, oom_killed: bool) -> Self {
        let own = code.is_some() || signal.is_some_and(|signal| signal != nix::libc::SIGKILL);
        BotExit { code, signal, exited_early: seen_early || own, oom_killed }
    }
}

/// What a sandbox needs to know to start one bot.
#[derive(Debug, Clone, Copy)]
pub struct LaunchContext<'a> {
    /// The game.
    pub game: GameKind,
    /// The match seed: built-in bots draw from it; external bots get their own
    /// ([`LaunchContext::bot_seed`]).
    pub seed: u64,
    /// The bot's seat, given as `FARM_SEAT`.
    pub seat: Seat,
    /// The job, for container labels and names.
    pub job_id: &'a str,
    /// The isolation the match's tournament asks of container bots, if any.
    pub isolation: Option<ContainerIsolation>,
}

impl LaunchContext<'_> {
    /// The seed an external bot gets as `FARM_SEED`: derived from the match seed and
    /// its seat, it reveals nothing of the world the match seed makes.
    pub fn bot_seed(&self) -> u64 {
        GameRng::bot_seed(self.seed, self.seat)
    }
}

/// Where external bots run. Built-in bots run in the worker whatever the sandbox.
pub trait Sandbox: Sync {
    /// Its name in messages and in metrics' `sandbox` label (`local`, `docker`: the
    /// names are [`metrics`]', which imports no sandbox).
    const NAME: &'static str;

    /// Prepares, off any match's path, what starting `bots` will need (containers
    /// waiting for them), and starts nothing of them. Returns how many bots it
    /// prepares for: none, by default.
    fn prepare(&self, _bots: &[BotSpec]) -> usize {
        0
    }

    /// Where submitted bots are built beside this sandbox's matches: the Docker
    /// sandbox's engine; none elsewhere (only a Docker worker builds).
    fn build_engine(&self) -> Option<crate::build::BuildEngine> {
        None
    }

    /// Starts a bot that is not built in.
    fn launch_external(
        &self,
        spec: &BotSpec,
        context: &LaunchContext<'_>,
    ) -> impl Future<Output = Result<BotSession, BotLaunchError>> + Send;

    /// Starts `spec` for one seat.
    fn launch(
        &self,
        spec: &BotSpec,
        context: &LaunchContext<'_>,
    ) -> impl Future<Output = Result<BotSession, BotLaunchError>> + Send {
        async move {
            match &spec.launch {
                BotLaunch::Builtin(name) => Ok(BotSession::Builtin {
                    bot: builtin::create(context.game, name, context.seed, context.seat)?,
                    answer: None,
                }),
                _ => self.launch_external(spec, context).await,
            }
        }
    }
}

/// Bots as local processes, contained (every process they start ends with their
/// match) but not isolated: for bots whose code you trust.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalSandbox;

impl Sandbox for LocalSandbox {
    const NAME: &'static str = metrics::LOCAL_SANDBOX;

    async fn launch_external(&self, spec: &BotSpec, context: &LaunchContext<'_>) -> Result<BotSession, BotLaunchError> {
        launch_process::<Self>(spec, context, Isolation::Contained).await
    }
}

/// Bots as local processes in namespaces of their own (bubblewrap): no network, only
/// the system's files and their own directories, read-only (`process::view`), a
/// private `/tmp`, an unprivileged user, Docker's seccomp filter, their limits in a
/// cgroup.
/// For bots you did not write, on a machine without Docker.
#[derive(Debug, Clone, Copy)]
pub struct IsolatedSandbox {
    _checked: (),
}

impl IsolatedSandbox {
    /// The sandbox, once bubblewrap is known to work here; otherwise why not.
    pub fn new() -> Result<Self, String> {
        namespaces_available()?;
        bots_can_enter_here()?;
        if cgroup::CgroupHost::get().is_none_or(|host| !host.limits_enforced()) {
            tracing::warn!(
                "isolated bots run without memory, process and CPU limits: this worker cannot make cgroups with those \
                 controllers (run it as root)"
            );
        }
        Ok(IsolatedSandbox { _checked: () })
    }
}

/// `Ok` unless isolated bots, which a root worker runs as [`BOT_UID`], could not reach
/// the directory the farm runs in, where their commands run and their code lies (a
/// checkout in a `mktemp -d` directory, mode 700): every bot would crash at its start.
fn bots_can_enter_here() -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    if !nix::unistd::Uid::effective().is_root() {
        return Ok(());
    }
    let here = std::env::current_dir().map_err(|error| format!("the current directory: {error}"))?;
    for dir in here.ancestors() {
        let mode = std::fs::metadata(dir).map_err(|error| format!("{}: {error}", dir.display()))?.permissions().mode();
        if mode & 0o001 == 0 {
            return Err(format!(
                "isolated bots run as uid {BOT_UID}, which cannot enter {} (mode {:o}) to reach {}, where the farm \
                 runs: give others search permission there (chmod o+x)",
                dir.display(),
                mode & 0o777,
                here.display()
            ));
        }
    }
    Ok(())
}

impl Sandbox for IsolatedSandbox {
    const NAME: &'static str = metrics::ISOLATED_SANDBOX;

    async fn launch_external(&self, spec: &BotSpec, context: &LaunchContext<'_>) -> Result<BotSession, BotLaunchError> {
        launch_process::<Self>(spec, context, Isolation::Namespaces).await
    }
}

/// Starts a `cmd:` bot for the local sandboxes. An isolated bot has no network, so
/// none of its ports can be reached and it reaches none: it speaks stdio only.
async fn launch_process<S: Sandbox>(
    spec: &BotSpec,
    context: &LaunchContext<'_>,
    isolation: Isolation,
) -> Result<BotSession, BotLaunchError> {
    match &spec.launch {
        BotLaunch::Command(_) if spec.transport.is_http() && isolation == Isolation::Namespaces => {
            Err(BotLaunchError::WrongSandbox {
                bot: format!("{} over {}", spec.launch, spec.transport.scheme_suffix()),
                sandbox: S::NAME,
            })
        }
        BotLaunch::Command(command) => {
            let launch = ProcessLaunch {
                seed: context.bot_seed(),
                seat: context.seat,
                limits: &spec.limits,
                isolation,
                transport: spec.transport,
            };
            Ok(BotSession::Process(Box::new(ProcessBot::spawn(command, launch).await?)))
        }
        other => Err(BotLaunchError::WrongSandbox { bot: other.to_string(), sandbox: S::NAME }),
    }
}

impl Sandbox for DockerSandbox {
    const NAME: &'static str = metrics::DOCKER_SANDBOX;

    fn prepare(&self, bots: &[BotSpec]) -> usize {
        DockerSandbox::prepare(self, bots)
    }

    fn build_engine(&self) -> Option<crate::build::BuildEngine> {
        Some(DockerSandbox::build_engine(self))
    }

    async fn launch_external(&self, spec: &BotSpec, context: &LaunchContext<'_>) -> Result<BotSession, BotLaunchError> {
        match &spec.launch {
            BotLaunch::Image(image) => Ok(BotSession::Container(Box::new(
                self.start_container(image, &spec.args, spec.transport, &spec.limits, context).await?,
            ))),
            other => Err(BotLaunchError::WrongSandbox { bot: other.to_string(), sandbox: Self::NAME }),
        }
    }
}

/// One bot taking part in one match.
///
/// Asking is split in two so that several bots think at once: [`BotSession::send`]
/// to each, then [`BotSession::receive`] from each against the same deadline.
pub enum BotSession {
    /// Built into the engine; answers at once.
    Builtin {
        /// The bot.
        bot: Box<dyn BuiltinBot>,
        /// Its answer to the last request and when it was made, until received.
        answer: Option<(String, Instant)>,
    },
    /// A local process (boxed, as a container: each is several times a built-in bot's
    /// size).
    Process(Box<ProcessBot>),
    /// A Docker container.
    Container(Box<ContainerBot>),
}

impl BotSession {
    /// The name of the sandbox it runs in (`builtin` for a bot built into the engine).
    pub fn sandbox_name(&self) -> &'static str {
        match self {
            BotSession::Builtin { .. } => "builtin",
            BotSession::Process(process) => process.sandbox_name(),
            BotSession::Container(_) => <DockerSandbox as Sandbox>::NAME,
        }
    }

    /// Whether it runs outside the worker (a process or a container), rather than
    /// built in.
    pub fn is_external(&self) -> bool {
        !matches!(self, BotSession::Builtin { .. })
    }

    /// Asks for `seat`'s move in this step of `game`: a built-in bot reads the typed
    /// match, an external one is sent its observation. Returns `false` if the bot
    /// cannot take it (it is not reading its input); its reply then times out.
    pub fn send(&mut self, game: &Match, seat: Seat) -> bool {
        match self {
            BotSession::Builtin { bot, answer } => {
                *answer = Some((bot.reply(game.game(), seat), Instant::now()));
                true
            }
            BotSession::Process(process) => process.send(&game.observation(seat)),
            BotSession::Container(container) => container.send(&game.observation(seat)),
        }
    }

    /// The reply to the last request if it arrives by `until`; `None` if not, the
    /// request still pending: wait again, or [`BotSession::give_up`] on it.
    pub async fn receive_until(&mut self, until: Instant) -> Option<Received> {
        match self {
            BotSession::Builtin { answer, .. } => match answer.take() {
                Some((line, at)) => Some(Received { reply: BotReply::Line(line), at, cpu: None }),
                None => {
                    tokio::time::sleep_until(until).await;
                    None
                }
            },
            BotSession::Process(process) => process.channel().receive_until(until).await,
            BotSession::Container(container) => match container.channel() {
                Some(channel) => channel.receive_until(until).await,
                None => Some(Received { reply: BotReply::Crashed, at: Instant::now(), cpu: None }),
            },
        }
    }

    /// Stops waiting for the reply to the last request: a reply that comes later is
    /// never taken for another request's.
    pub fn give_up(&mut self) {
        match self {
            BotSession::Builtin { answer, .. } => *answer = None,
            BotSession::Process(process) => process.channel().give_up(),
            BotSession::Container(container) => {
                if let Some(channel) = container.channel() {
                    channel.give_up();
                }
            }
        }
    }

    /// The image the bot runs, by content (`sha256:...`), if it runs in a container.
    pub fn image_id(&self) -> Option<&str> {
        match self {
            BotSession::Container(container) => container.image_id(),
            BotSession::Builtin { .. } | BotSession::Process(_) => None,
        }
    }

    /// The bot's CPU time so far, where its sandbox measures it (not for built-in
    /// bots, which answer at once).
    pub fn cpu_used(&self) -> Option<std::time::Duration> {
        match self {
            BotSession::Builtin { .. } => None,
            BotSession::Process(process) => process.cpu_meter()?.used(),
            BotSession::Container(container) => container.cpu_meter()?.used(),
        }
    }

    /// The match is over and `game` is its end. A client of the worker's Vindinium
    /// server is sent the last state (`finished`), as the original server sent it,
    /// and given a moment to take it; other bots are told nothing.
    pub async fn conclude(&mut self, game: &Match, seat: Seat) {
        if self.channel().and_then(BotChannel::server).is_none() {
            return;
        }
        // A bot frozen between turns could not read it.
        self.freeze(false);
        if let Some(server) = self.channel().and_then(BotChannel::server) {
            server.conclude(&game.observation(seat)).await;
        }
    }

    /// Its move came but was judged too late: a client of the worker's Vindinium
    /// server is told so from now on, as when no move came. Other bots are told
    /// nothing (giving up on a stdio bot now would drop its next reply).
    pub fn timed_out(&mut self) {
        if let Some(server) = self.channel().and_then(BotChannel::server) {
            server.give_up();
        }
    }

    /// The conversation with an external bot, until it is being ended.
    fn channel(&mut self) -> Option<&mut BotChannel> {
        match self {
            BotSession::Builtin { .. } => None,
            BotSession::Process(process) => Some(process.channel()),
            BotSession::Container(container) => container.channel(),
        }
    }

    /// Freezes every process of the bot between its turns (`true`), or lets them run
    /// again (`false`). Built-in bots do not run between turns.
    pub fn freeze(&mut self, frozen: bool) {
        match self {
            BotSession::Builtin { .. } => {}
            BotSession::Process(process) => process.freeze(frozen),
            BotSession::Container(container) => container.freeze(frozen),
        }
    }

    /// Ends the bot and returns its log and how it exited.
    pub async fn finish(self) -> (CappedLog, Option<BotExit>) {
        match self {
            BotSession::Builtin { .. } => (CappedLog::default(), None),
            BotSession::Process(process) => {
                let (log, exit) = process.finish().await;
                (log, Some(exit))
            }
            BotSession::Container(container) => {
                let (log, exit) = container.finish().await;
                (log, Some(exit))
            }
        }
    }
}
