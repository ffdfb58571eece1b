//! A bot as a local process, contained: `sh -c COMMAND` with an empty environment, in a
//! cgroup of its own where the worker can make one (else a PID namespace, else its
//! process group), so that everything it starts ends with its match, holding no
//! descriptor of the worker's but its stdio; and, isolated, in namespaces of its own
//! (bubblewrap) with no network, nothing of the host's files in sight but the system's
//! and its own directory (read-only), a private `/tmp`, an unprivileged user and
//! Docker's seccomp filter. A contained bot may serve HTTP on a loopback port the worker
//! picks for it (`FARM_PORT`); an isolated one has no network, so stdio only.
//!
//! A bot is over when its own process exits: everything it started is killed at once
//! (its cgroup by the worker, its PID namespace by bubblewrap; only a bot held by its
//! process group alone keeps its children until the match ends), so that no child left
//! holding its stdout keeps its output open, and its hero is crashed at once, as in a
//! container. Nothing but the bot holds its stdout (bubblewrap is handed it under
//! another descriptor, which it closes), so a bot that closes it is crashed at once
//! too. Its exit is recorded as the bot's own, a signal as the signal, whatever held it.

mod seccomp;
mod view;

use std::collections::BTreeSet;
use std::io::{Seek, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};

use command_fds::{CommandFdExt, FdMapping};
use farm_engine::Seat;
use farm_proto::{BotLimits, Transport};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::{Pid, Uid};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio::time::{Duration, timeout};

use super::capped::{CappedLog, read_capped};
use super::cgroup::{BotCgroup, CgroupHost};
use super::cpu::CpuMeter;
use super::http::BotServer;
use super::vindinium_server::VindiniumServer;
use super::{
    BOT_GID, BOT_OPEN_FILES, BOT_UID, BotChannel, BotExit, BotLaunchError, Conversation, IsolatedSandbox, LocalSandbox,
    Sandbox,
};
use crate::metrics::SandboxPhase;

/// How long a killed bot's pipes may take to close before its log is taken as is.
const REAP_GRACE: Duration = Duration::from_secs(2);
/// The bubblewrap program, from Debian's `bubblewrap` package.
const BWRAP: &str = "bwrap";
/// The one line the worker writes once the bot's process is in its cgroup: the bot's
/// command is started only then, so nothing it forks can be outside.
const GO_LINE: &[u8] = b"\n";
/// Waits for [`GO_LINE`]; what follows becomes the bot. `read` takes its input a
/// byte at a time from a pipe, so not one byte of the bot's first request is eaten.
const WAIT_FOR_GO: &str = "IFS= read -r _ || exit 97; exec";
/// The descriptors an isolated bot's bubblewrap reads its seccomp programs from (and
/// closes): the only ones but its stdio that the worker hands on.
const SECCOMP_FDS: [i32; 2] = [3, 4];
/// The descriptor bubblewrap is handed the bot's stdout under (its own stdout is
/// `/dev/null`): bubblewrap closes every descriptor but its stdio in its own processes,
/// so the bot, which takes it back as its stdout, is the only process holding it.
const BOT_STDOUT_FD: u8 = 9;
/// The highest signal number (Linux's `SIGRTMAX`): bubblewrap exits with 128 + N for a
/// bot killed by signal N.
const MAX_SIGNAL: i32 = 64;

/// How a local bot is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// The farm's user and view of the host, its processes contained: for bots whose
    /// code you trust (your own, a class's examples).
    #[default]
    Contained,
    /// Namespaces of its own: no network, of the host's files only the system's and its
    /// own directory in sight (read-only), a private `/tmp` (with the bot's writable home
    /// in it), an unprivileged user, Docker's seccomp filter, the limits in its cgroup.
    Namespaces,
}

impl Isolation {
    /// The name of the sandbox that holds bots so, in metrics and messages.
    pub fn sandbox_name(self) -> &'static str {
        match self {
            Isolation::Contained => LocalSandbox::NAME,
            Isolation::Namespaces => IsolatedSandbox::NAME,
        }
    }
}

/// What starting one local bot needs.
#[derive(Debug, Clone, Copy)]
pub struct ProcessLaunch<'a> {
    /// The bot's own seed ([`super::LaunchContext::bot_seed`]), given as `FARM_SEED`.
    pub seed: u64,
    /// The seat, given as `FARM_SEAT`.
    pub seat: Seat,
    /// The bot's limits: stderr always; memory, processes, CPU and `/tmp` when isolated.
    pub limits: &'a BotLimits,
    /// How it is held.
    pub isolation: Isolation,
    /// How it is spoken to (`http` only when contained).
    pub transport: Transport,
}

/// A running bot process.
pub struct ProcessBot {
    child: Child,
    group: Option<Pid>,
    /// Shared with the watch on its process, which kills it when the bot exits.
    cgroup: Option<Arc<BotCgroup>>,
    /// Whether it runs in a PID namespace of its own (bubblewrap's).
    pid_namespace: bool,
    channel: BotChannel,
    /// Where its CPU time is read: its cgroup, else (without a PID namespace between)
    /// its own process's clock.
    meter: Option<Arc<CpuMeter>>,
    /// Whether it is frozen between its turns.
    frozen: bool,
    /// The port an `http` bot serves on, held until the bot is gone (after the
    /// [`Drop`] below has killed it).
    _port: Option<LoopbackPort>,
    stderr: JoinHandle<CappedLog>,
    /// Its sandbox's name, for metrics.
    sandbox: &'static str,
}

/// Whether bubblewrap runs here (installed, and user namespaces allowed): checked once.
pub fn namespaces_available() -> Result<(), String> {
    static CHECK: OnceLock<Result<(), String>> = OnceLock::new();
    CHECK
        .get_or_init(|| {
            let mut probe = std::process::Command::new(BWRAP);
            probe.args(["--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--", "true"]);
            if Uid::effective().is_root() {
                std::os::unix::process::CommandExt::uid(&mut probe, BOT_UID);
                std::os::unix::process::CommandExt::gid(&mut probe, BOT_GID);
            }
            match probe.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).output() {
                Ok(output) if output.status.success() => Ok(()),
                Ok(output) => Err(format!(
                    "{BWRAP} cannot make namespaces here: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                )),
                Err(error) => Err(format!("{BWRAP} cannot be run ({error}): install Debian's bubblewrap package")),
            }
        })
        .clone()
}

impl ProcessBot {
    /// Starts `command` through `sh -c`, contained and (if asked) isolated as
    /// described in the module documentation.
    pub async fn spawn(command: &str, launch: ProcessLaunch<'_>) -> Result<Self, BotLaunchError> {
        SandboxPhase::Spawn.timed(launch.isolation.sandbox_name(), Self::start(command, launch)).await
    }

    async fn start(command: &str, launch: ProcessLaunch<'_>) -> Result<Self, BotLaunchError> {
        let spawn_error = |source| BotLaunchError::Spawn { command: command.to_owned(), source };
        let isolated = launch.isolation == Isolation::Namespaces;
        let conversation =
            Conversation::of(launch.transport, VindiniumServer::on_loopback).await.map_err(spawn_error)?;
        let port = match conversation {
            Conversation::Http(_) => Some(LoopbackPort::take().map_err(spawn_error)?),
            Conversation::Lines | Conversation::Server(_) => None,
        };
        let server = port.as_ref().map(|port| port.0);
        let cgroup = match CgroupHost::get() {
            Some(host) => Some(Arc::new(
                host.create(isolated.then_some(launch.limits))
                    .map_err(|source| BotLaunchError::Contain { what: "a cgroup for the bot", source })?,
            )),
            None => None,
        };
        let mut wrapper = Command::new("sh");
        // The limits a container's bot has too, inherited by all it starts.
        let limits = format!("ulimit -c 0; ulimit -n {BOT_OPEN_FILES};");
        // Without a cgroup, a PID namespace is what ends every process at once: its
        // init (bubblewrap's) takes all of them with it. Without namespaces one shell
        // both waits and becomes the bot (a shell less to start per match).
        let pid_namespace = isolated || (cgroup.is_none() && namespaces_available().is_ok());
        if pid_namespace {
            let fd = BOT_STDOUT_FD;
            wrapper.arg("-c").arg(format!(r#"{limits} {WAIT_FOR_GO} "$@" {fd}>&1 >/dev/null"#)).arg("sh");
            let bubblewrap = namespace_args(command, &launch, server).map_err(|reason| BotLaunchError::Contain {
                what: "the bot's files",
                source: std::io::Error::other(reason),
            })?;
            wrapper.arg(BWRAP).args(bubblewrap);
            wrapper.args(["sh", "-c"]).arg(format!("exec >&{fd} {fd}>&-; exec {command}"));
        } else {
            wrapper.arg("-c").arg(format!("{limits} {WAIT_FOR_GO} {command}"));
        }
        wrapper.env_clear().envs(bot_environment(&launch, server)).envs(conversation.environment());
        if isolated && Uid::effective().is_root() {
            wrapper.uid(BOT_UID).gid(BOT_GID);
        }
        if isolated {
            let programs = seccomp_descriptors().map_err(spawn_error)?;
            wrapper.fd_mappings(programs).map_err(|collision| spawn_error(std::io::Error::other(collision)))?;
        }
        // No other descriptor of the worker's reaches the bot: every one it inherited or
        // opened without close-on-exec (the standard library's and tokio's all have it)
        // is marked so now.
        close_fds::set_fds_cloexec_threadsafe(3, &[]);
        let mut child = wrapper
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(spawn_error)?;
        let group = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(spawn_error(std::io::Error::other("a requested pipe is missing")));
        };
        if let (Some(cgroup), Some(pid)) = (&cgroup, child.id()) {
            cgroup
                .adopt(pid)
                .map_err(|source| BotLaunchError::Contain { what: "moving the bot into its cgroup", source })?;
        }
        if let Err(error) = stdin.write_all(GO_LINE).await {
            // The wrapper shell is gone before reading its go line: it could not even
            // parse the command line (`exec while ...`). What it said is the reason.
            let said = read_capped(stderr, 1024).await;
            let shell = String::from_utf8_lossy(&said.bytes).trim().to_owned();
            return Err(if shell.is_empty() {
                spawn_error(error)
            } else {
                BotLaunchError::NotACommand { command: command.to_owned(), shell }
            });
        }
        let stderr = tokio::spawn(read_capped(stderr, launch.limits.stderr_bytes));
        let meter = match &cgroup {
            Some(cgroup) => cgroup.cpu_meter(),
            None if !pid_namespace => child.id().and_then(CpuMeter::of_process),
            // The process started is bubblewrap's, not the bot's.
            None => None,
        }
        .map(Arc::new);
        let channel =
            conversation.channel(server.map(BotServer::Loopback), stdout, stdin, meter.clone()).map_err(spawn_error)?;
        if let Some(pid) = child.id() {
            let exited = match &channel {
                BotChannel::Server(server) => Some(server.exited()),
                BotChannel::Lines(_) | BotChannel::Http(_) => None,
            };
            let cgroup = cgroup.clone();
            watch_exit(pid, move || {
                // What the bot left running goes with it. (Its process group is killed
                // only at the end: once the bot is reaped, its id may be another's.)
                if let Some(cgroup) = cgroup {
                    cgroup.kill();
                }
                if let Some(exited) = exited {
                    exited.cancel();
                }
            });
        }
        Ok(ProcessBot {
            child,
            group,
            cgroup,
            pid_namespace,
            channel,
            meter,
            frozen: false,
            _port: port,
            stderr,
            sandbox: launch.isolation.sandbox_name(),
        })
    }

    /// Queues a request. `false` if the bot is not reading its input.
    pub fn send(&mut self, request: &str) -> bool {
        self.channel.send(request)
    }

    /// The conversation with the bot.
    pub(super) fn channel(&mut self) -> &mut BotChannel {
        &mut self.channel
    }

    /// Where its CPU time is read, if anywhere.
    pub fn cpu_meter(&self) -> Option<&CpuMeter> {
        self.meter.as_deref()
    }

    /// Freezes or thaws every process of the bot: through its cgroup's freezer, else
    /// by stopping or continuing its process group (which a bot that starts a session
    /// of its own leaves).
    pub fn freeze(&mut self, frozen: bool) {
        if self.frozen == frozen {
            return;
        }
        self.frozen = frozen;
        if self.cgroup.as_ref().is_some_and(|cgroup| cgroup.freeze(frozen)) {
            return;
        }
        if let Some(group) = self.group {
            let _ = killpg(group, if frozen { Signal::SIGSTOP } else { Signal::SIGCONT });
        }
    }

    /// How many processes the bot has now, where its cgroup can tell.
    pub fn process_count(&self) -> Option<usize> {
        self.cgroup.as_deref().map(BotCgroup::process_count)
    }

    fn kill_group(&mut self) {
        if let Some(group) = self.group.take() {
            // ESRCH (already gone) is the common, harmless case.
            let _ = killpg(group, Signal::SIGKILL);
        }
    }

    /// Kills every process of the bot and reaps the one it started as. A bot in a PID
    /// namespace goes first, alone, thawed: bubblewrap, which holds its status (its own
    /// exit, if it has just ended by itself), passes it on and exits, taking the
    /// namespace with it; killed at once, bubblewrap could die before passing it on.
    /// Then everything: the reap comes first: it is signalled (no polling), and by then
    /// the rest of the cgroup is nearly always empty too. Without a cgroup, the bot's PID
    /// namespace ends when its init (bubblewrap's, killed with the bubblewrap the worker
    /// started) is gone, a moment after that reap: it is waited for, so that no process
    /// of the bot outlives its match.
    async fn end(&mut self) -> Option<std::process::ExitStatus> {
        let namespace_init = if self.pid_namespace { self.namespace_init() } else { None };
        if let Some((init, _)) = &namespace_init {
            self.freeze(false);
            if let Some(bot) = namespace_bot(*init) {
                let _ = rustix::process::pidfd_send_signal(&bot, rustix::process::Signal::KILL);
            }
            // Not passed on in time: the kill below ends bubblewrap too.
            let _ = timeout(REAP_GRACE, self.child.wait()).await;
        }
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill();
        }
        self.kill_group();
        let status = timeout(REAP_GRACE, self.child.wait()).await.ok().and_then(Result::ok);
        if let Some(cgroup) = &self.cgroup
            && !cgroup.emptied().await
        {
            tracing::warn!("a bot's cgroup did not empty after its kill; its processes are still being killed");
        }
        if let (None, Some((_, init))) = (&self.cgroup, namespace_init) {
            let ended = tokio::task::spawn_blocking(move || {
                let wait = rustix::event::Timespec::try_from(REAP_GRACE).unwrap_or_default();
                let mut exited = [rustix::event::PollFd::new(&init, rustix::event::PollFlags::IN)];
                rustix::event::poll(&mut exited, Some(&wait)).is_ok_and(|ready| ready == 1)
            });
            if !ended.await.unwrap_or(false) {
                tracing::warn!(
                    "a bot's PID namespace did not end after its kill; its processes are still being killed"
                );
            }
        }
        status
    }

    /// The init of the bot's PID namespace (the one child of the bubblewrap the worker
    /// started), if the bot runs in one: its pid, and a pidfd, readable once it has
    /// exited, which the kernel lets it do only after every other process of the
    /// namespace is gone.
    fn namespace_init(&self) -> Option<(rustix::process::Pid, OwnedFd)> {
        let outer = self.child.id()?;
        let init = children(outer).into_iter().next()?;
        Some((init, rustix::process::pidfd_open(init, rustix::process::PidfdFlags::empty()).ok()?))
    }

    /// How it is held, by its sandbox's name.
    pub fn sandbox_name(&self) -> &'static str {
        self.sandbox
    }

    /// Ends the bot: notes whether it had already exited, kills every process it
    /// started, and collects its log.
    pub async fn finish(mut self) -> (CappedLog, BotExit) {
        let exited_early = matches!(self.child.try_wait(), Ok(Some(_)));
        let status = SandboxPhase::End.timed(self.sandbox, self.end()).await;
        let stderr_task = &mut self.stderr;
        let log = match timeout(REAP_GRACE, stderr_task).await {
            Ok(Ok(log)) => log,
            _ => {
                self.stderr.abort();
                CappedLog::default()
            }
        };
        let (code, signal) = status.map_or((None, None), |status| bot_exit(status, self.pid_namespace));
        let exit = BotExit::new(code, signal, exited_early, self.cgroup.as_deref().is_some_and(BotCgroup::oom_killed));
        (log, exit)
    }
}

impl Drop for ProcessBot {
    /// A match abandoned half-way (an error, Ctrl-C) still kills everything the bot
    /// started (the cgroup's own drop, once the bot's exit is seen, kills its members).
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// The processes `pid` (single-threaded) has started and not reaped yet.
fn children(pid: impl std::fmt::Display) -> Vec<rustix::process::Pid> {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    children.split_whitespace().filter_map(|child| rustix::process::Pid::from_raw(child.parse().ok()?)).collect()
}

/// A pidfd of the bot's own process in the PID namespace whose init is `init`, until
/// init has reaped it: the namespace's second process (bubblewrap's "pid 2", which its
/// init started as the bot), not one of those the bot left to init.
fn namespace_bot(init: rustix::process::Pid) -> Option<OwnedFd> {
    children(init.as_raw_nonzero()).into_iter().find_map(|pid| {
        let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()?;
        // Checked once the pidfd holds it, so that it is the bot's, not a reused id's.
        let status = std::fs::read_to_string(format!("/proc/{}/status", pid.as_raw_nonzero())).ok()?;
        let in_namespace = status.lines().find_map(|line| line.strip_prefix("NSpid:"))?.split_whitespace().last();
        (in_namespace == Some("2")).then_some(pidfd)
    })
}

/// The bot's exit code and signal, from the status of the process the worker started:
/// the bot itself, or (`through_bubblewrap`) the bubblewrap holding it, which exits
/// with the bot's code, or with 128 + N when a signal N killed the bot (as a shell
/// reports it): that is read back as the signal, so that a bot's fault reads the same
/// in every sandbox. (A bot that exits with such a code itself reads as killed, as in a
/// shell.)
fn bot_exit(status: std::process::ExitStatus, through_bubblewrap: bool) -> (Option<i32>, Option<i32>) {
    match status.code() {
        Some(code) if through_bubblewrap && (129..=128 + MAX_SIGNAL).contains(&code) => (None, Some(code - 128)),
        code => (code, std::os::unix::process::ExitStatusExt::signal(&status)),
    }
}

/// Calls `on_exit` when the process `pid` (the bot, or the bubblewrap holding it) has
/// exited: what it left running is ended then, and a client of the worker's Vindinium
/// server, which says nothing on its stdio that would tell, is known to be gone. The
/// watch ends with the process, which ends with its match. (A blocking thread waits on
/// the process's pidfd: tokio registers no pidfd without `unsafe`, which the workspace
/// forbids.)
fn watch_exit(pid: u32, on_exit: impl FnOnce() + Send + 'static) {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return };
    let Ok(pidfd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) else { return };
    tokio::task::spawn_blocking(move || {
        let mut ended = [rustix::event::PollFd::new(&pidfd, rustix::event::PollFlags::IN)];
        let has_ended = loop {
            match rustix::event::poll(&mut ended, None) {
                Ok(_) => break true,
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => break false,
            }
        };
        if has_ended {
            on_exit();
        }
    });
}

/// The loopback ports of the local `http` bots alive in this process: the kernel may
/// hand a port it just gave out again once the worker lets go of it, and two seats of
/// one match, launched at once, must never share one.
static PORTS_IN_USE: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A loopback port a local `http` bot's server listens on, no other live bot's of this
/// worker; given back when dropped. A contained bot shares the machine's loopback, so
/// any other program there could listen on it first, or after the bot dies, and
/// answer in its place: bots that are not trusted run `docker`, where each container
/// has a loopback of its own.
#[derive(Debug)]
struct LoopbackPort(SocketAddr);

impl LoopbackPort {
    /// Binds port 0 to find a free port, then lets go of it for the bot to take.
    fn take() -> std::io::Result<Self> {
        let mut in_use = PORTS_IN_USE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for _ in 0..64 {
            let address = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?;
            if in_use.insert(address.port()) {
                return Ok(LoopbackPort(address));
            }
        }
        Err(std::io::Error::new(std::io::ErrorKind::AddrInUse, "no loopback port free of other bots"))
    }
}

impl Drop for LoopbackPort {
    fn drop(&mut self) {
        PORTS_IN_USE.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&self.0.port());
    }
}

/// What a bot finds in its environment: nothing of the worker's (no broker URL, no
/// storage keys, no token), only a `PATH`, a locale, its home and the game's variables
/// (`FARM_PORT` for an `http` bot serving at `server`).
fn bot_environment(launch: &ProcessLaunch<'_>, server: Option<SocketAddr>) -> Vec<(&'static str, String)> {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".to_owned());
    let mut environment = vec![
        ("PATH", path),
        ("LANG", "C.UTF-8".to_owned()),
        ("FARM_SEED", launch.seed.to_string()),
        ("FARM_SEAT", launch.seat.to_string()),
    ];
    if let Some(server) = server {
        environment.push(("FARM_PORT", server.port().to_string()));
    }
    match launch.isolation {
        Isolation::Namespaces => environment.push(("HOME", ISOLATED_HOME.to_owned())),
        Isolation::Contained => {
            if let Ok(home) = std::env::var("HOME") {
                environment.push(("HOME", home));
            }
        }
    }
    environment
}

/// An isolated bot's home: in its private `/tmp`, so it goes with the sandbox.
const ISOLATED_HOME: &str = "/tmp/home";

/// bubblewrap's arguments for `command`: for an isolated bot, every namespace, only its
/// own files and the system's in sight ([`view`]), no capability, a cleared environment
/// and the seccomp filter ([`seccomp`]), read from [`SECCOMP_FDS`]; for a contained one,
/// only a PID namespace. An isolated bot whose files cannot be shown alone is refused.
fn namespace_args(
    command: &str,
    launch: &ProcessLaunch<'_>,
    server: Option<SocketAddr>,
) -> Result<Vec<String>, String> {
    let common = ["--die-with-parent", "--proc", "/proc"];
    let mut args: Vec<String> = match launch.isolation {
        Isolation::Contained => {
            ["--dev-bind", "/", "/", "--unshare-pid"].into_iter().chain(common).map(str::to_owned).collect()
        }
        Isolation::Namespaces => {
            let mut args: Vec<String> = ["--unshare-all", "--new-session", "--cap-drop", "ALL", "--hostname", "bot"]
                .into_iter()
                .chain(common)
                .map(str::to_owned)
                .collect();
            let tmp_bytes = launch.limits.tmp_mib.saturating_mul(1024 * 1024);
            args.extend(view::args(command, tmp_bytes, ISOLATED_HOME)?);
            args.push("--clearenv".to_owned());
            for (name, value) in bot_environment(launch, server) {
                args.extend(["--setenv".to_owned(), name.to_owned(), value]);
            }
            for fd in SECCOMP_FDS {
                args.extend(["--add-seccomp-fd".to_owned(), fd.to_string()]);
            }
            args
        }
    };
    args.push("--".to_owned());
    Ok(args)
}

/// The seccomp programs, each in a memory file of its own that the child gets as one
/// of [`SECCOMP_FDS`], set up in the child alone (so no bot started meanwhile gets it).
fn seccomp_descriptors() -> std::io::Result<Vec<FdMapping>> {
    let programs = seccomp::programs().map_err(std::io::Error::other)?;
    programs
        .iter()
        .zip(SECCOMP_FDS)
        .map(|(program, child_fd)| {
            let memfd = rustix::fs::memfd_create("farm-seccomp", rustix::fs::MemfdFlags::CLOEXEC)?;
            let mut file = std::fs::File::from(memfd);
            file.write_all(program)?;
            file.rewind()?;
            Ok(FdMapping { parent_fd: file.into(), child_fd })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_reads_as_the_signal_through_bubblewrap_and_a_code_as_the_code() {
        use std::os::unix::process::ExitStatusExt;
        let exited = |code: i32| std::process::ExitStatus::from_raw(code << 8);
        let killed = std::process::ExitStatus::from_raw;
        // bubblewrap's 128 + N for a bot killed by signal N; a bot's own code as it is.
        assert_eq!(bot_exit(exited(139), true), (None, Some(11)));
        assert_eq!(bot_exit(exited(128 + MAX_SIGNAL), true), (None, Some(MAX_SIGNAL)));
        assert_eq!(bot_exit(exited(2), true), (Some(2), None));
        assert_eq!(bot_exit(exited(128), true), (Some(128), None));
        assert_eq!(bot_exit(exited(129 + MAX_SIGNAL), true), (Some(129 + MAX_SIGNAL), None));
        // bubblewrap itself killed at the end, and a bot run without it.
        assert_eq!(bot_exit(killed(9), true), (None, Some(9)));
        assert_eq!(bot_exit(exited(139), false), (Some(139), None));
        assert_eq!(bot_exit(killed(11), false), (None, Some(11)));
    }

    #[test]
    fn a_loopback_port_is_never_held_by_two_live_bots_and_is_given_back() {
        let ports: Vec<LoopbackPort> = (0..64).map(|_| LoopbackPort::take().expect("a free port")).collect();
        let distinct: BTreeSet<u16> = ports.iter().map(|port| port.0.port()).collect();
        assert_eq!(distinct.len(), ports.len());
        assert!(ports.iter().all(|port| port.0.ip() == Ipv4Addr::LOCALHOST));
        drop(ports);
        let in_use = PORTS_IN_USE.lock().expect("not poisoned");
        assert!(distinct.iter().all(|port| !in_use.contains(port)), "every port given back");
    }
}
