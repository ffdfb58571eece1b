//! A bot as a local process: `sh -c COMMAND` in a process group of its own.

use std::process::Stdio;

use farm_engine::Seat;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio::time::{Duration, Instant, timeout};

use super::capped::{CappedLog, read_capped};
use super::lines::LineChannel;
use super::{BotExit, BotLaunchError, Received};

/// How long a killed bot's pipes may take to close before its log is taken as is.
const REAP_GRACE: Duration = Duration::from_secs(2);

/// A running bot process speaking the stdio transport.
pub struct ProcessBot {
    child: Child,
    group: Option<Pid>,
    channel: LineChannel,
    stderr: JoinHandle<CappedLog>,
}

impl ProcessBot {
    /// Starts `command` through `sh -c` with `FARM_SEED` and `FARM_SEAT` set, in its
    /// own process group so that everything it starts can be killed with it.
    pub fn spawn(command: &str, seed: u64, seat: Seat, stderr_cap: usize) -> Result<Self, BotLaunchError> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("exec {command}"))
            .env("FARM_SEED", seed.to_string())
            .env("FARM_SEAT", seat.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| BotLaunchError::Spawn { command: command.to_owned(), source })?;
        let group = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let missing = std::io::Error::other("a requested pipe is missing");
            return Err(BotLaunchError::Spawn { command: command.to_owned(), source: missing });
        };
        let stderr = tokio::spawn(read_capped(stderr, stderr_cap));
        Ok(ProcessBot { child, group, channel: LineChannel::new(stdout, stdin), stderr })
    }

    /// Queues a request. `false` if the bot is not reading its input.
    pub fn send(&mut self, request: &str) -> bool {
        self.channel.send(request)
    }

    /// The reply to the oldest unanswered request; see [`LineChannel::receive`].
    pub async fn receive(&mut self, deadline: Instant) -> Received {
        self.channel.receive(deadline).await
    }

    fn kill_group(&mut self) {
        if let Some(group) = self.group.take() {
            // ESRCH (already gone) is the common, harmless case.
            let _ = killpg(group, Signal::SIGKILL);
        }
    }

    /// Ends the bot: notes whether it had already exited, kills its whole process
    /// group, and collects its log.
    pub async fn finish(mut self) -> (CappedLog, BotExit) {
        let exited_early = matches!(self.child.try_wait(), Ok(Some(_)));
        self.kill_group();
        let status = timeout(REAP_GRACE, self.child.wait()).await.ok().and_then(Result::ok);
        let stderr_task = &mut self.stderr;
        let log = match timeout(REAP_GRACE, stderr_task).await {
            Ok(Ok(log)) => log,
            _ => {
                self.stderr.abort();
                CappedLog::default()
            }
        };
        let exit = BotExit {
            code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s)),
            exited_early,
            oom_killed: false,
        };
        (log, exit)
    }
}

impl Drop for ProcessBot {
    /// A match abandoned half-way (an error, Ctrl-C) still kills the whole group.
    fn drop(&mut self) {
        self.kill_group();
    }
}
