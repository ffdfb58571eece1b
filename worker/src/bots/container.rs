//! A bot as a Docker container: one locked-down container per bot per match, driven
//! over its attach streams.

use std::collections::HashMap;

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::models::{ContainerCreateBody, HostConfig, HostConfigLogConfig};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder, ListContainersOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use farm_engine::BotReply;
use farm_proto::BotLimits;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::task::JoinHandle;
use tokio::time::{Duration, Instant, timeout};

use super::capped::CappedLog;
use super::lines::LineChannel;
use super::{BotExit, BotLaunchError, LaunchContext};
use crate::metrics;

/// Label on every container the farm starts, carrying the job id.
pub const JOB_LABEL: &str = "matchfarm.job";
/// Label carrying the id of the worker that started the container.
pub const WORKER_LABEL: &str = "matchfarm.worker";
/// The user bots run as: not root, in every image.
pub const BOT_USER: &str = "10001:10001";
/// Bytes of stdout buffered between the attach stream and the line reader.
const STDOUT_BUFFER: usize = 64 * 1024;
/// How long removing a container may take before it is left to the start-up reaper.
const REMOVE_TIMEOUT: Duration = Duration::from_secs(30);

/// A failure talking to the Docker daemon.
#[derive(Debug, thiserror::Error)]
#[error("docker: {0}")]
pub struct DockerError(#[from] bollard::errors::Error);

/// Starts bots as containers on the local Docker daemon.
#[derive(Clone)]
pub struct DockerSandbox {
    docker: Docker,
    worker_id: String,
}

impl DockerSandbox {
    /// Connects to the daemon (socket or `DOCKER_HOST`), agreeing on an API version
    /// both sides speak.
    pub async fn connect(worker_id: &str) -> Result<Self, DockerError> {
        let docker = Docker::connect_with_local_defaults()?.negotiate_version().await?;
        docker.ping().await?;
        Ok(DockerSandbox { docker, worker_id: worker_id.to_owned() })
    }

    /// Removes every container a previous run of this worker left behind (it crashed,
    /// or was killed). Returns how many there were.
    pub async fn reap_orphans(&self) -> Result<usize, DockerError> {
        let filters = HashMap::from([("label", vec![format!("{WORKER_LABEL}={}", self.worker_id)])]);
        let options = ListContainersOptionsBuilder::new().all(true).filters(&filters).build();
        let orphans = self.docker.list_containers(Some(options)).await?;
        for orphan in &orphans {
            if let Some(id) = &orphan.id {
                remove(&self.docker, id).await;
            }
        }
        Ok(orphans.len())
    }

    /// Starts `image` for one seat of a match.
    pub async fn start_container(
        &self,
        image: &str,
        limits: &BotLimits,
        context: &LaunchContext<'_>,
    ) -> Result<ContainerBot, BotLaunchError> {
        let started = Instant::now();
        let name = format!(
            "farm-{}-s{}-{}",
            context.job_id.chars().filter(char::is_ascii_alphanumeric).take(16).collect::<String>(),
            context.seat,
            uuid::Uuid::new_v4().simple()
        );
        let body = container_body(image, limits, context, &self.worker_id);
        let created = self
            .docker
            .create_container(Some(CreateContainerOptionsBuilder::new().name(&name).build()), body)
            .await
            .map_err(|error| launch_error(image, error))?;
        let bot = self.attach_and_start(&created.id, limits).await;
        if bot.is_err() {
            remove(&self.docker, &created.id).await;
        }
        metrics::CONTAINER_START.observe(started.elapsed().as_secs_f64());
        bot.map_err(|error| launch_error(image, error))
    }

    async fn attach_and_start(&self, id: &str, limits: &BotLimits) -> Result<ContainerBot, bollard::errors::Error> {
        // Attach before starting, so that nothing the bot writes is missed.
        let options = AttachContainerOptionsBuilder::new().stdin(true).stdout(true).stderr(true).stream(true).build();
        let attached = self.docker.attach_container(id, Some(options)).await?;
        self.docker.start_container(id, None).await?;
        let (stdout_reader, stdout_writer) = tokio::io::duplex(STDOUT_BUFFER);
        let output = tokio::spawn(split_output(attached.output, stdout_writer, limits.stderr_bytes));
        Ok(ContainerBot {
            docker: self.docker.clone(),
            id: id.to_owned(),
            channel: LineChannel::new(stdout_reader, attached.input),
            output,
            removed: false,
        })
    }
}

fn launch_error(image: &str, error: bollard::errors::Error) -> BotLaunchError {
    use bollard::errors::Error;
    match error {
        Error::DockerResponseServerError { status_code: 404, message } => {
            BotLaunchError::ImageMissing { image: image.to_owned(), message }
        }
        other => BotLaunchError::Docker(DockerError(other)),
    }
}

fn container_body(
    image: &str,
    limits: &BotLimits,
    context: &LaunchContext<'_>,
    worker_id: &str,
) -> ContainerCreateBody {
    let memory = (limits.memory_mib * 1024 * 1024) as i64;
    let host_config = HostConfig {
        memory: Some(memory),
        // Swap equal to memory means no swap at all.
        memory_swap: Some(memory),
        nano_cpus: Some((limits.cpu_millis * 1_000_000) as i64),
        pids_limit: Some(limits.pids),
        readonly_rootfs: Some(true),
        tmpfs: Some(HashMap::from([("/tmp".to_owned(), format!("rw,nosuid,nodev,size={}m", limits.tmp_mib))])),
        cap_drop: Some(vec!["ALL".to_owned()]),
        security_opt: Some(vec!["no-new-privileges".to_owned()]),
        network_mode: Some("none".to_owned()),
        // The worker reads both streams itself; the daemon keeping another copy of a
        // flooding bot's output would only fill its disk.
        log_config: Some(HostConfigLogConfig { typ: Some("none".to_owned()), config: None }),
        ..Default::default()
    };
    ContainerCreateBody {
        image: Some(image.to_owned()),
        user: Some(BOT_USER.to_owned()),
        env: Some(vec![format!("FARM_SEED={}", context.seed), format!("FARM_SEAT={}", context.seat)]),
        labels: Some(HashMap::from([
            (JOB_LABEL.to_owned(), context.job_id.to_owned()),
            (WORKER_LABEL.to_owned(), worker_id.to_owned()),
        ])),
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        open_stdin: Some(true),
        stdin_once: Some(false),
        tty: Some(false),
        network_disabled: Some(true),
        host_config: Some(host_config),
        ..Default::default()
    }
}

/// Sends the container's stdout to the line reader and keeps its stderr, capped.
async fn split_output(
    mut output: impl futures_util::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Unpin,
    mut stdout: tokio::io::DuplexStream,
    stderr_cap: usize,
) -> CappedLog {
    let mut log = CappedLog::default();
    let mut stdout_open = true;
    while let Some(Ok(frame)) = output.next().await {
        match frame {
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                if stdout_open && stdout.write_all(&message).await.is_err() {
                    stdout_open = false;
                }
            }
            LogOutput::StdErr { message } => log.append(&message, stderr_cap),
            LogOutput::StdIn { .. } => {}
        }
    }
    log
}

async fn remove(docker: &Docker, id: &str) {
    let options = RemoveContainerOptionsBuilder::new().force(true).v(true).build();
    match timeout(REMOVE_TIMEOUT, docker.remove_container(id, Some(options))).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(container = id, %error, "removing a bot container"),
        Err(_) => tracing::warn!(container = id, "removing a bot container timed out"),
    }
}

/// A running bot container speaking the stdio transport over its attach streams.
pub struct ContainerBot {
    docker: Docker,
    id: String,
    channel: LineChannel,
    output: JoinHandle<CappedLog>,
    removed: bool,
}

impl ContainerBot {
    /// Queues a request. `false` if the bot is not reading its input.
    pub fn send(&mut self, request: &str) -> bool {
        self.channel.send(request)
    }

    /// The reply to the oldest unanswered request; see [`LineChannel::receive`].
    pub async fn receive(&mut self, deadline: Instant) -> BotReply {
        self.channel.receive(deadline).await
    }

    /// Ends the bot: reads how it exited, removes the container (killing it if it
    /// still runs), and collects its log.
    pub async fn finish(mut self) -> (CappedLog, BotExit) {
        let state = self.docker.inspect_container(&self.id, None).await.ok().and_then(|info| info.state);
        let running = state.as_ref().and_then(|s| s.running).unwrap_or(false);
        let exit = BotExit {
            code: state.as_ref().filter(|_| !running).and_then(|s| s.exit_code).and_then(|c| i32::try_from(c).ok()),
            signal: None,
            exited_early: !running,
            oom_killed: state.as_ref().and_then(|s| s.oom_killed).unwrap_or(false),
        };
        remove(&self.docker, &self.id).await;
        self.removed = true;
        let output = &mut self.output;
        let log = match timeout(Duration::from_secs(5), output).await {
            Ok(Ok(log)) => log,
            _ => {
                self.output.abort();
                CappedLog::default()
            }
        };
        (log, exit)
    }
}

impl Drop for ContainerBot {
    /// A match abandoned half-way still removes its containers, in the background.
    fn drop(&mut self) {
        if !self.removed {
            let (docker, id) = (self.docker.clone(), self.id.clone());
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { remove(&docker, &id).await });
            }
        }
    }
}
