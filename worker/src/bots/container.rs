//! A bot as a Docker container: one locked-down container per bot per match, driven
//! over its attach streams.

use std::collections::HashMap;

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::models::{ContainerCreateBody, HostConfig, HostConfigLogConfig, NetworkCreateRequest};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder, ListContainersOptionsBuilder,
    ListNetworksOptionsBuilder, RemoveContainerOptionsBuilder,
};
use farm_engine::wire::HttpBody;
use farm_proto::{BotLimits, Transport};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::task::JoinHandle;
use tokio::time::{Duration, Instant, timeout};

use super::capped::CappedLog;
use super::http::{BOT_PORT, HttpChannel};
use super::lines::LineChannel;
use super::{BotExit, BotLaunchError, LaunchContext, Received, Sandbox};
use crate::metrics::{self, SandboxPhase};

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

    /// Removes every container (and network) labelled with this worker's id: at
    /// start-up, what an earlier run left behind (it crashed, or was killed); at
    /// shutdown, anything whose removal failed or was still under way. Returns how
    /// many containers there were.
    pub async fn reap_orphans(&self) -> Result<usize, DockerError> {
        let filters = HashMap::from([("label", vec![format!("{WORKER_LABEL}={}", self.worker_id)])]);
        let options = ListContainersOptionsBuilder::new().all(true).filters(&filters).build();
        let orphans = self.docker.list_containers(Some(options)).await?;
        for orphan in &orphans {
            if let Some(id) = &orphan.id {
                remove(&self.docker, id).await;
            }
        }
        let networks =
            self.docker.list_networks(Some(ListNetworksOptionsBuilder::new().filters(&filters).build())).await?;
        for network in networks {
            if let Some(name) = network.name {
                remove_network(&self.docker, &name).await;
            }
        }
        Ok(orphans.len())
    }

    /// Starts `image` for one seat of a match. An `http` bot gets an internal network
    /// of its own, which only the worker's host can reach.
    pub async fn start_container(
        &self,
        image: &str,
        transport: Transport,
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
        let (network, created) =
            SandboxPhase::Create.timed(Self::NAME, self.create(image, transport, limits, context, &name)).await?;
        let body = if transport == Transport::HttpForm { HttpBody::LegacyForm } else { HttpBody::Json };
        let bot = self.attach_and_start(&created.id, limits, network.clone(), body).await;
        if bot.is_err() {
            discard(&self.docker, &created.id, network.as_deref()).await;
        }
        metrics::CONTAINER_START.observe(started.elapsed().as_secs_f64());
        Ok(bot.map_err(DockerError)?)
    }

    /// Creates the container (and an `http` bot's network first), named `name`.
    async fn create(
        &self,
        image: &str,
        transport: Transport,
        limits: &BotLimits,
        context: &LaunchContext<'_>,
        name: &str,
    ) -> Result<(Option<String>, bollard::models::ContainerCreateResponse), BotLaunchError> {
        let labels = HashMap::from([
            (JOB_LABEL.to_owned(), context.job_id.to_owned()),
            (WORKER_LABEL.to_owned(), self.worker_id.clone()),
        ]);
        let network = match transport {
            Transport::Stdio => None,
            Transport::Http | Transport::HttpForm => {
                let request = NetworkCreateRequest {
                    name: name.to_owned(),
                    driver: Some("bridge".to_owned()),
                    internal: Some(true),
                    labels: Some(labels.clone()),
                    ..Default::default()
                };
                self.docker.create_network(request).await.map_err(DockerError)?;
                Some(name.to_owned())
            }
        };
        let body = container_body(image, limits, context, labels, network.as_deref());
        match self.docker.create_container(Some(CreateContainerOptionsBuilder::new().name(name).build()), body).await {
            Ok(created) => Ok((network, created)),
            Err(error) => {
                if let Some(network) = &network {
                    remove_network(&self.docker, network).await;
                }
                Err(create_error(image, error))
            }
        }
    }

    async fn attach_and_start(
        &self,
        id: &str,
        limits: &BotLimits,
        network: Option<String>,
        body: HttpBody,
    ) -> Result<ContainerBot, bollard::errors::Error> {
        // Attach before starting, so that nothing the bot writes is missed.
        let options = AttachContainerOptionsBuilder::new().stdin(true).stdout(true).stderr(true).stream(true).build();
        let attached = SandboxPhase::Attach.timed(Self::NAME, self.docker.attach_container(id, Some(options))).await?;
        SandboxPhase::Start.timed(Self::NAME, self.docker.start_container(id, None)).await?;
        let (channel, output) = match &network {
            None => {
                let (stdout_reader, stdout_writer) = tokio::io::duplex(STDOUT_BUFFER);
                let output = tokio::spawn(split_output(attached.output, Some(stdout_writer), limits.stderr_bytes));
                (BotChannel::Lines(LineChannel::new(stdout_reader, attached.input)), output)
            }
            Some(network) => {
                let address = self.address_on(id, network).await?;
                let output = tokio::spawn(split_output(attached.output, None, limits.stderr_bytes));
                (BotChannel::Http(HttpChannel::new(address, body)), output)
            }
        };
        Ok(ContainerBot {
            docker: self.docker.clone(),
            id: id.to_owned(),
            network,
            channel: Some(channel),
            output,
            removed: false,
        })
    }

    /// The bot's HTTP address on its own network.
    async fn address_on(&self, id: &str, network: &str) -> Result<std::net::SocketAddr, bollard::errors::Error> {
        let info = self.docker.inspect_container(id, None).await?;
        let ip = info
            .network_settings
            .and_then(|settings| settings.networks)
            .and_then(|networks| networks.get(network).and_then(|endpoint| endpoint.ip_address.clone()))
            .and_then(|ip| ip.parse::<std::net::IpAddr>().ok())
            .ok_or_else(|| bollard::errors::Error::DockerResponseServerError {
                status_code: 500,
                message: format!("container {id} has no address on {network}"),
            })?;
        Ok(std::net::SocketAddr::new(ip, BOT_PORT))
    }
}

/// How requests reach a container bot.
enum BotChannel {
    /// Lines over the attach streams (`stdio`).
    Lines(LineChannel),
    /// POSTs to its server (`http`).
    Http(HttpChannel),
}

/// A failed `create_container`: 404 there means the image is missing. (Elsewhere a
/// 404 is a container that vanished: an infrastructure fault.)
fn create_error(image: &str, error: bollard::errors::Error) -> BotLaunchError {
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
    labels: HashMap<String, String>,
    network: Option<&str>,
) -> ContainerCreateBody {
    let memory = (limits.memory_mib * 1024 * 1024) as i64;
    let host_config = HostConfig {
        // Docker's init as PID 1: the bot is an ordinary process, so the signals it
        // sends itself (a self-inflicted SIGSEGV) act as they do outside a container,
        // and what it leaves behind is reaped.
        init: Some(true),
        memory: Some(memory),
        // Swap equal to memory means no swap at all.
        memory_swap: Some(memory),
        nano_cpus: Some((limits.cpu_millis * 1_000_000) as i64),
        pids_limit: Some(limits.pids),
        readonly_rootfs: Some(true),
        tmpfs: Some(HashMap::from([("/tmp".to_owned(), format!("rw,nosuid,nodev,size={}m", limits.tmp_mib))])),
        cap_drop: Some(vec!["ALL".to_owned()]),
        security_opt: Some(vec!["no-new-privileges".to_owned()]),
        // No network at all, or (`http` bots) an internal one of its own.
        network_mode: Some(network.unwrap_or("none").to_owned()),
        // The worker reads both streams itself; the daemon keeping another copy of a
        // flooding bot's output would only fill its disk.
        log_config: Some(HostConfigLogConfig { typ: Some("none".to_owned()), config: None }),
        ..Default::default()
    };
    ContainerCreateBody {
        image: Some(image.to_owned()),
        user: Some(BOT_USER.to_owned()),
        env: Some(vec![
            format!("FARM_SEED={}", context.seed),
            format!("FARM_SEAT={}", context.seat),
            format!("FARM_PORT={BOT_PORT}"),
        ]),
        labels: Some(labels),
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        open_stdin: Some(true),
        stdin_once: Some(false),
        tty: Some(false),
        network_disabled: Some(network.is_none()),
        host_config: Some(host_config),
        ..Default::default()
    }
}

/// Sends the container's stdout to the line reader (`stdio` bots) and keeps its
/// stderr, capped: the log is the bot's stderr alone. Stdout nobody reads (an `http`
/// bot's, or what a bot writes after the match stopped listening) is dropped.
async fn split_output(
    mut output: impl futures_util::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Unpin,
    mut stdout: Option<tokio::io::DuplexStream>,
    stderr_cap: usize,
) -> CappedLog {
    let mut log = CappedLog::default();
    while let Some(Ok(frame)) = output.next().await {
        match frame {
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                if let Some(lines) = &mut stdout
                    && lines.write_all(&message).await.is_err()
                {
                    stdout = None;
                }
            }
            LogOutput::StdErr { message } => log.append(&message, stderr_cap),
            LogOutput::StdIn { .. } => {}
        }
    }
    log
}

async fn remove_network(docker: &Docker, name: &str) {
    match timeout(REMOVE_TIMEOUT, docker.remove_network(name)).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) if already_gone(&error) => {}
        Ok(Err(error)) => removal_failed("network", name, &error.to_string()),
        Err(_) => removal_failed("network", name, "timed out"),
    }
}

/// A 404: another removal (a sweep by label, a drop) got there first.
fn already_gone(error: &bollard::errors::Error) -> bool {
    matches!(error, bollard::errors::Error::DockerResponseServerError { status_code: 404, .. })
}

/// Logs and counts a removal that failed; the sweeps by label at start-up and
/// shutdown try again.
fn removal_failed(what: &str, name: &str, error: &str) {
    metrics::CONTAINER_REMOVE_FAILURES.inc();
    tracing::warn!(what, name, error, "removing a bot {what} failed");
}

/// Removes a bot's container, then its network if it has one (a network cannot go
/// while a container is attached to it).
async fn discard(docker: &Docker, container: &str, network: Option<&str>) {
    remove(docker, container).await;
    if let Some(network) = network {
        remove_network(docker, network).await;
    }
}

async fn remove(docker: &Docker, id: &str) {
    let options = RemoveContainerOptionsBuilder::new().force(true).v(true).build();
    match timeout(REMOVE_TIMEOUT, docker.remove_container(id, Some(options))).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) if already_gone(&error) => {}
        Ok(Err(error)) => removal_failed("container", id, &error.to_string()),
        Err(_) => removal_failed("container", id, "timed out"),
    }
}

/// A running bot container speaking the stdio transport over its attach streams.
pub struct ContainerBot {
    docker: Docker,
    id: String,
    network: Option<String>,
    /// `None` once the bot is being ended.
    channel: Option<BotChannel>,
    output: JoinHandle<CappedLog>,
    removed: bool,
}

impl ContainerBot {
    /// Queues a request. `false` if the bot is not reading its input.
    pub fn send(&mut self, request: &str) -> bool {
        match &mut self.channel {
            Some(BotChannel::Lines(lines)) => lines.send(request),
            Some(BotChannel::Http(http)) => http.send(request),
            None => false,
        }
    }

    /// The reply to the last request and when it arrived, or `Timeout` at `deadline`.
    pub async fn receive(&mut self, deadline: Instant) -> Received {
        match &mut self.channel {
            Some(BotChannel::Lines(lines)) => lines.receive(deadline).await,
            Some(BotChannel::Http(http)) => http.receive(deadline).await,
            None => Received { reply: farm_engine::BotReply::Crashed, at: Instant::now() },
        }
    }

    /// Ends the bot: reads how it exited, removes the container (killing it if it
    /// still runs) and its network, and collects its log.
    pub async fn finish(mut self) -> (CappedLog, BotExit) {
        // Stop reading replies first: a bot still printing to stdout must not keep the
        // output task blocked on a full reply buffer while its log is collected.
        self.channel = None;
        let inspected =
            SandboxPhase::End.timed(DockerSandbox::NAME, self.docker.inspect_container(&self.id, None)).await;
        let state = inspected.ok().and_then(|info| info.state);
        let running = state.as_ref().and_then(|s| s.running).unwrap_or(false);
        let exit = BotExit {
            code: state.as_ref().filter(|_| !running).and_then(|s| s.exit_code).and_then(|c| i32::try_from(c).ok()),
            signal: None,
            exited_early: !running,
            oom_killed: state.as_ref().and_then(|s| s.oom_killed).unwrap_or(false),
        };
        SandboxPhase::Remove.timed(DockerSandbox::NAME, discard(&self.docker, &self.id, self.network.as_deref())).await;
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
            let (docker, id, network) = (self.docker.clone(), self.id.clone(), self.network.take());
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { discard(&docker, &id, network.as_deref()).await });
            }
        }
    }
}
