//! Bots in Docker containers: locked-down containers prepared ahead of the matches
//! that need them, each running the farm's supervisor as PID 1, which starts a fresh
//! bot process when a match starts and resets the container when it ends.
//!
//! # The path of one bot
//! 1. **Prepared** (off the match's path): a container of the bot's image and limits
//!    is created and started, with the static `farm-supervisor` bind-mounted read-only
//!    as its entrypoint and a run directory of its own bind-mounted at `/farm/run`;
//!    the supervisor listens on a unix socket there. No bot process runs yet.
//! 2. **Started** (the match begins): the worker hands the supervisor three pipes and
//!    the supervisor starts the image's command on them, as user 10001 with no
//!    capabilities. Turns then flow over those pipes, as with a local process: neither
//!    the Docker daemon nor the supervisor is on their path. An `http` bot's server is
//!    reached through sockets the supervisor connects inside the container, which has
//!    no network at all.
//! 3. **Ended**: the supervisor kills every process but itself, reports how the bot
//!    exited, empties `/tmp`, `/dev/shm`, `/dev/mqueue` and the image's volumes and
//!    removes every System V IPC object, then verifies that nothing is left (the cgroup
//!    counts one process). A verified container goes back to the pool for the next
//!    match of the same image and limits, up to [`DockerSettings::matches_per_container`];
//!    one that cannot be verified is replaced, and counted in
//!    `farm_worker_container_resets_total{outcome="replaced"}`. With
//!    `isolation = "fresh-container"` every match gets a never-used container.
//!
//! The worker's `[docker]` settings are in `settings`, the supervisor's installation
//! in the run root in `install`, the heartbeat and the removal of dead workers'
//! containers in `reaper`.
//!
//! # Where the run directory lives
//! It must be the same path for the worker and the Docker engine: on a host, any
//! directory ([`DockerSettings::run_dir`]); with the worker in a container, a host
//! directory bind-mounted at the same path (deploy/compose.yaml, the Kubernetes
//! manifests). The worker copies the supervisor binary there, so the engine sees it
//! too. Each container's directory is the worker's, mode 0700: the supervisor (root
//! with `CAP_DAC_OVERRIDE`) can create its socket there, the bot cannot enter it, and
//! the supervisor hangs up on any peer inside the container.

use std::collections::HashMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountType};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, ListNetworksOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use farm_proto::{BotLaunch, BotLimits, BotSpec, ContainerIsolation, Transport};
use farm_supervisor::protocol as supervisor_protocol;
use futures_util::StreamExt;
use tokio::task::JoinHandle;
use tokio::time::{Duration, Instant, timeout};
use tokio_util::task::TaskTracker;

use super::capped::{CappedLog, read_capped};
use super::cpu::CpuMeter;
use super::http::{BOT_PORT, BotServer};
use super::supervisor::{Control, Resetting, Supervisor};
use super::vindinium_server::{CONTAINER_PORT as VINDINIUM_SERVER_PORT, VindiniumServer};
use super::{
    BOT_GID, BOT_OPEN_FILES, BOT_UID, BotChannel, BotExit, BotLaunchError, Conversation, LaunchContext, Sandbox,
};
use crate::docker::{GVISOR_SANDBOX_THREADS, is_gvisor, small_engine_log, ulimit};
use crate::metrics::{self, SandboxPhase};

mod install;
mod reaper;
mod settings;

use farm_proto::limits;
use install::{SUPERVISOR_FILE, install_supervisor};
use reaper::{HEARTBEAT_LABEL, RUN_ROOT_LABEL, Reaper, beat, beat_and_reap};
pub use settings::DockerSettings;

/// Label carrying the id of the worker that started the container.
pub const WORKER_LABEL: &str = "matchfarm.worker";
/// Label carrying the instance (one per worker process) that owns the container: what
/// reaping goes by, since two processes may share a worker id and a restarted pod
/// gets a new one.
pub const INSTANCE_LABEL: &str = "matchfarm.instance";
/// Label carrying the id of the Docker engine the container was made on (`docker info`'s
/// ID): only a worker on that engine reaps it, whatever else lists it (a Swarm, an
/// engine reached through a proxy).
pub const ENGINE_LABEL: &str = "matchfarm.engine";
/// The longest a bot's image may take to pull from the farm's registry.
const PULL_TIMEOUT: Duration = Duration::from_secs(limits::IMAGE_PULL_SECS);

/// Label carrying the image a prepared container serves.
pub const IMAGE_LABEL: &str = "matchfarm.image";
/// How long removing a container may take before it is left to the start-up reaper.
const REMOVE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a new container's supervisor may take to listen.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a match waits for a container of its bot's image that is being reset
/// before it prepares a new one instead.
const RESET_WAIT: Duration = Duration::from_secs(2);
/// How often a new container's socket is tried while its supervisor starts.
const READY_POLL: Duration = Duration::from_millis(2);
/// The writable places of every container, emptied between matches (the image's
/// volumes are added).
const WRITABLE: [&str; 3] = ["/tmp", "/dev/shm", "/dev/mqueue"];

/// A failure talking to the Docker daemon or to a container's supervisor.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// The daemon failed.
    #[error("docker: {0}")]
    Daemon(#[from] bollard::errors::Error),
    /// A container's supervisor did not come up or did not answer.
    #[error("container {container}: {message}")]
    Supervisor {
        /// The container.
        container: String,
        /// What went wrong.
        message: String,
    },
    /// The sandbox cannot work on this machine as configured.
    #[error("{0}")]
    Setup(String),
}

/// Starts bots in containers on the local Docker daemon.
#[derive(Clone)]
pub struct DockerSandbox {
    docker: Docker,
    worker_id: String,
    /// The Docker engine's id ([`ENGINE_LABEL`]).
    engine: String,
    /// This process's id among the workers of the engine ([`INSTANCE_LABEL`]).
    instance: String,
    /// This process's directory under the run directory: its containers' run
    /// directories, the supervisor copy and the heartbeat file.
    run_root: PathBuf,
    settings: Arc<DockerSettings>,
    pool: Arc<Mutex<Pool>>,
    /// Preparing, resetting and removing containers: the work off the matches' path,
    /// waited for by [`DockerSandbox::shutdown`].
    background: TaskTracker,
    /// Set by [`DockerSandbox::shutdown`]: nothing more is prepared or kept.
    closing: Arc<AtomicBool>,
    /// Woken whenever a container comes back from its reset.
    returned: Arc<tokio::sync::Notify>,
    /// Whether the containers run under gVisor ([`DockerSettings::runtime`] is a
    /// runtime whose program is `runsc`): stdio bots only, and a sandbox-wide pids limit.
    gvisor: bool,
}

/// What makes two containers interchangeable: the image, the arguments that replace
/// its `CMD` (the program the supervisor starts is fixed when the container is made)
/// and the limits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Shape {
    image: String,
    args: Vec<String>,
    memory_mib: u64,
    cpu_millis: u64,
    pids: i64,
    tmp_mib: u64,
}

impl Shape {
    fn new(image: &str, args: &[String], limits: &BotLimits) -> Self {
        Shape {
            image: image.to_owned(),
            args: args.to_vec(),
            memory_mib: limits.memory_mib,
            cpu_millis: limits.cpu_millis,
            pids: limits.pids,
            tmp_mib: limits.tmp_mib,
        }
    }
}

/// A started container whose supervisor listens, and no bot runs.
#[derive(Debug)]
struct Prepared {
    id: String,
    /// The image it runs, by content (`sha256:...`): what its tag named when it was made.
    image_id: String,
    run_dir: PathBuf,
    /// Matches it has served.
    matches: u32,
    /// Since when it waits in the pool.
    idle_since: Instant,
}

/// The prepared containers waiting for a match, by shape.
#[derive(Debug, Default)]
struct Pool {
    idle: HashMap<Shape, Vec<Prepared>>,
    /// Containers being prepared in the background, by shape.
    preparing: HashMap<Shape, usize>,
    /// Reused containers playing a match, by shape: they come back after it.
    in_use: HashMap<Shape, usize>,
    /// Containers being reset after their match, by shape: back in a few milliseconds.
    returning: HashMap<Shape, usize>,
}

impl Pool {
    fn idle_count(&self) -> usize {
        self.idle.values().map(Vec::len).sum()
    }

    /// Containers that will wait in the pool (waiting, being prepared, being reset),
    /// across all shapes: what [`DockerSettings::prepared_max`] bounds; and those a
    /// match of `shape` can count on, which include the ones playing a match now (they
    /// come back after it). Only reused containers come back: a sandbox of fresh
    /// containers counts none in use or returning.
    fn counts(&self, shape: &Shape) -> (usize, usize) {
        let waiting = [&self.preparing, &self.returning];
        let all = self.idle_count() + waiting.iter().flat_map(|counter| counter.values()).sum::<usize>();
        let of_shape = self.idle.get(shape).map_or(0, Vec::len)
            + [&self.preparing, &self.in_use, &self.returning]
                .iter()
                .filter_map(|counter| counter.get(shape))
                .sum::<usize>();
        (all, of_shape)
    }

    /// Counts one more (`up`) or one fewer container of `shape` in `counter`.
    fn count(counter: &mut HashMap<Shape, usize>, shape: &Shape, up: bool) {
        if up {
            *counter.entry(shape.clone()).or_default() += 1;
        } else if let Some(count) = counter.get_mut(shape) {
            *count -= 1;
            if *count == 0 {
                counter.remove(shape);
            }
        }
    }

    fn update_gauge(&self) {
        metrics::PREPARED_CONTAINERS.set(i64::try_from(self.idle_count()).unwrap_or(i64::MAX));
    }
}

impl DockerSandbox {
    /// Connects to the daemon (socket or `DOCKER_HOST`), agreeing on an API version
    /// both sides speak, and sets up this worker's run directory with a copy of the
    /// supervisor.
    pub async fn connect(worker_id: &str, settings: &DockerSettings) -> Result<Self, DockerError> {
        settings.check().map_err(DockerError::Setup)?;
        if nix::unistd::geteuid().as_raw() == BOT_UID {
            // The run directories are the worker's: a bot of the same uid could write
            // into its own and fill the host's disk.
            return Err(DockerError::Setup(format!(
                "the worker runs as uid {BOT_UID}, the bots' own: run it as another user (the farm image uses 10000)"
            )));
        }
        let docker = Docker::connect_with_local_defaults()?.negotiate_version().await?;
        docker.ping().await?;
        let info = docker.info().await?;
        let engine = info.id.clone().unwrap_or_default();
        let gvisor = match &settings.runtime {
            Some(runtime) => is_gvisor(&info, runtime).map_err(|unknown| DockerError::Setup(unknown.to_string()))?,
            None => false,
        };
        let instance = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        // Named by the instance alone, not the worker id: the path of a container's
        // socket must fit a unix socket address (108 bytes), whatever the worker's name.
        let run_root = settings.run_dir.join(&instance);
        install_supervisor(settings.supervisor.as_deref(), &run_root).map_err(DockerError::Setup)?;
        beat(&run_root).map_err(|error| {
            DockerError::Setup(format!("cannot write the heartbeat file in {}: {error}", run_root.display()))
        })?;
        let sandbox = DockerSandbox {
            docker,
            worker_id: worker_id.to_owned(),
            engine,
            instance,
            run_root,
            settings: Arc::new(settings.clone()),
            pool: Arc::default(),
            background: TaskTracker::new(),
            closing: Arc::default(),
            returned: Arc::default(),
            gvisor,
        };
        tokio::spawn(expire_idle(
            Arc::downgrade(&sandbox.pool),
            sandbox.docker.clone(),
            Duration::from_secs(settings.prepared_idle_secs),
        ));
        tokio::spawn(beat_and_reap(
            Arc::downgrade(&sandbox.pool),
            Arc::clone(&sandbox.closing),
            sandbox.clone_for_reaping(),
        ));
        Ok(sandbox)
    }

    /// Where this worker builds submitted bots: the same engine, its toolchain
    /// containers labelled as this sandbox's own (reaped with them) and run under its
    /// runtime.
    pub fn build_engine(&self) -> crate::build::BuildEngine {
        crate::build::BuildEngine::for_worker(
            self.docker.clone(),
            self.owner_labels(),
            self.settings.runtime.clone(),
            self.gvisor,
        )
    }

    /// The labels that make a container this process's: what reaping goes by.
    fn owner_labels(&self) -> HashMap<String, String> {
        HashMap::from([
            (WORKER_LABEL.to_owned(), self.worker_id.clone()),
            (ENGINE_LABEL.to_owned(), self.engine.clone()),
            (INSTANCE_LABEL.to_owned(), self.instance.clone()),
            (RUN_ROOT_LABEL.to_owned(), self.run_root.to_string_lossy().into_owned()),
            (HEARTBEAT_LABEL.to_owned(), self.settings.heartbeat_secs.to_string()),
        ])
    }

    /// What the heartbeat task needs, holding no strong reference to the pool (the
    /// task ends when the sandbox is dropped).
    fn clone_for_reaping(&self) -> Reaper {
        Reaper {
            docker: self.docker.clone(),
            engine: self.engine.clone(),
            instance: self.instance.clone(),
            run_root: self.run_root.clone(),
            run_dir: self.settings.run_dir.clone(),
            period: Duration::from_secs(self.settings.heartbeat_secs),
        }
    }

    /// Removes this process's containers (the prepared ones, and anything whose removal
    /// failed or was still under way: at shutdown), those an earlier version of the
    /// worker labelled with this worker's id alone, and those of every dead instance on
    /// this engine whose heartbeat this one can see ([`Reaper::reap_dead`]: at start-up,
    /// what a crashed or killed run left). Never a live instance's. Returns how many
    /// containers there were.
    pub async fn reap_orphans(&self) -> Result<usize, DockerError> {
        let prepared: Vec<Prepared> = {
            let mut pool = self.pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let all = pool.idle.drain().flat_map(|(_, containers)| containers).collect();
            pool.update_gauge();
            all
        };
        for container in &prepared {
            let _ = std::fs::remove_dir_all(&container.run_dir);
        }
        let own = HashMap::from([("label", vec![format!("{INSTANCE_LABEL}={}", self.instance)])]);
        let options = ListContainersOptionsBuilder::new().all(true).filters(&own).build();
        let mut orphans = self.docker.list_containers(Some(options)).await?;
        let filters = HashMap::from([("label", vec![format!("{WORKER_LABEL}={}", self.worker_id)])]);
        let options = ListContainersOptionsBuilder::new().all(true).filters(&filters).build();
        let unowned =
            self.docker.list_containers(Some(options)).await?.into_iter().filter(|container| {
                !container.labels.as_ref().is_some_and(|labels| labels.contains_key(INSTANCE_LABEL))
            });
        orphans.extend(unowned);
        for orphan in &orphans {
            if let Some(id) = &orphan.id {
                remove(&self.docker, id).await;
            }
        }
        metrics::CONTAINERS_REAPED.with_label_values(&["own"]).inc_by(orphans.len() as u64);
        let dead = self.clone_for_reaping().reap_dead().await?;
        // Networks: earlier versions gave `http` bots one each.
        let networks =
            self.docker.list_networks(Some(ListNetworksOptionsBuilder::new().filters(&filters).build())).await?;
        for network in networks {
            if let Some(name) = network.name {
                remove_network(&self.docker, &name).await;
            }
        }
        // The run directories of containers that are gone (the supervisor copy stays).
        if let Ok(entries) = std::fs::read_dir(&self.run_root) {
            for entry in entries.flatten() {
                if entry.path().is_dir() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        Ok(orphans.len() + dead)
    }

    /// Stops preparing containers, waits for the work under way in the background,
    /// then removes every container of this worker and its run root: when it stops.
    pub async fn shutdown(&self) -> Result<usize, DockerError> {
        self.closing.store(true, Ordering::SeqCst);
        self.background.close();
        self.background.wait().await;
        let reaped = self.reap_orphans().await?;
        let _ = std::fs::remove_dir_all(&self.run_root);
        Ok(reaped)
    }

    fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Makes sure a container waits prepared (or is being prepared) for each of the
    /// `image:` bots in `bots`, preparing the missing ones in the background as far as
    /// the pool has room. Nothing of a bot runs. Returns how many bots are `image:` bots.
    pub fn prepare(&self, bots: &[BotSpec]) -> usize {
        let wanted = Self::shapes(bots);
        for (shape, count) in &wanted {
            self.refill(shape.clone(), *count);
        }
        wanted.values().sum()
    }

    /// How many containers of each shape `bots` need.
    fn shapes(bots: &[BotSpec]) -> HashMap<Shape, usize> {
        let mut shapes = HashMap::new();
        for bot in bots {
            if let BotLaunch::Image(image) = &bot.launch {
                *shapes.entry(Shape::new(image, &bot.args, &bot.limits)).or_default() += 1;
            }
        }
        shapes
    }

    /// The id (`sha256:...`) of the image `image` (a tag or an id) names on this
    /// engine; `None` if it has none.
    pub async fn image_id(&self, image: &str) -> Result<Option<String>, DockerError> {
        match self.docker.inspect_image(image).await {
            Ok(inspected) => Ok(inspected.id),
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// Starts `image` (with `args` in place of its `CMD`, if any) for one seat of a
    /// match, in a prepared container (one is prepared now if none waits).
    pub async fn start_container(
        &self,
        image: &str,
        args: &[String],
        transport: Transport,
        limits: &BotLimits,
        context: &LaunchContext<'_>,
    ) -> Result<ContainerBot, BotLaunchError> {
        if transport.is_http() && self.gvisor {
            // gVisor passes descriptors into its sandbox but not out (EINVAL), so the
            // supervisor cannot hand over a connection to the bot's server, nor the
            // port a client bot reaches the worker's on.
            return Err(BotLaunchError::WrongSandbox {
                bot: format!("image+{}:{image}", transport.scheme_suffix()),
                sandbox: "gVisor (docker.runtime is runsc; stdio bots only)",
            });
        }
        let started = Instant::now();
        let shape = Shape::new(image, args, limits);
        // Fresh if the worker or the match's tournament asks for it.
        let fresh = self.settings.matches() == 1 || context.isolation == Some(ContainerIsolation::FreshContainer);
        let container = match self.take(&shape, fresh).await {
            Some(container) => {
                metrics::CONTAINERS_TAKEN.with_label_values(&["prepared"]).inc();
                container
            }
            None => {
                metrics::CONTAINERS_TAKEN.with_label_values(&["cold"]).inc();
                self.create_for_match(&shape).await?
            }
        };
        // A fresh container serves no other match: the next one of this image is
        // prepared now. (A reused one comes back after its reset.)
        if fresh {
            self.refill(shape.clone(), 1);
        } else {
            self.count_in_use(&shape, true, false);
        }
        let supervisor = Supervisor::new(&container.run_dir);
        let starting = async {
            let conversation = Conversation::of(transport, || async {
                VindiniumServer::in_container(supervisor.listen(VINDINIUM_SERVER_PORT).await?)
            })
            .await?;
            let env = [
                ("FARM_SEED", context.bot_seed().to_string()),
                ("FARM_SEAT", context.seat.to_string()),
                ("FARM_PORT", BOT_PORT.to_string()),
            ]
            .into_iter()
            .chain(conversation.environment())
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
            let bot = supervisor.start(env).await?;
            let meter = bot.cpu.map(Arc::new);
            let server = BotServer::Supervised { supervisor, port: BOT_PORT };
            // A failure here drops the bot's control connection: its supervisor ends it.
            let channel = conversation.channel(Some(server), bot.stdout, bot.stdin, meter.clone())?;
            Ok::<_, std::io::Error>((channel, meter, bot.control, bot.stderr))
        };
        let (channel, meter, control, stderr) = match SandboxPhase::Spawn.timed(Self::NAME, starting).await {
            Ok(bot) => bot,
            Err(error) => {
                if !fresh {
                    self.count_in_use(&shape, false, false);
                }
                let sandbox = self.clone();
                self.background.spawn(async move { sandbox.discard(container).await });
                return Err(BotLaunchError::Spawn { command: image.to_owned(), source: error });
            }
        };
        metrics::CONTAINER_START.observe(started.elapsed().as_secs_f64());
        Ok(ContainerBot {
            sandbox: self.clone(),
            shape,
            fresh,
            container: Some(container),
            control: Some(control),
            channel: Some(channel),
            meter,
            frozen: false,
            stderr: tokio::spawn(read_capped(stderr, limits.stderr_bytes)),
        })
    }

    /// A prepared container of `shape` from the pool (for a `fresh` match, one that
    /// never served); if none waits but one is being reset (the last match's), it is
    /// waited for, briefly: a reset takes milliseconds, preparing a new container a
    /// hundred times as long.
    async fn take(&self, shape: &Shape, fresh: bool) -> Option<Prepared> {
        let deadline = Instant::now() + RESET_WAIT;
        loop {
            let returned = self.returned.notified();
            let mut returned = std::pin::pin!(returned);
            returned.as_mut().enable();
            {
                let mut pool = self.pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                let waiting = pool.idle.get_mut(shape);
                // A reused match prefers a container that has served already: the
                // never-used ones are kept for the matches that need them.
                let found = waiting.and_then(|waiting| {
                    let index = if fresh {
                        waiting.iter().rposition(|container| container.matches == 0)?
                    } else {
                        waiting.iter().rposition(|container| container.matches > 0).or(waiting.len().checked_sub(1))?
                    };
                    Some(waiting.remove(index))
                });
                if let Some(container) = found {
                    pool.update_gauge();
                    return Some(container);
                }
                if fresh || !pool.returning.contains_key(shape) {
                    return None;
                }
            }
            tokio::time::timeout_at(deadline, returned).await.ok()?;
        }
    }

    /// Prepares containers of `shape` in the background until `wanted` wait or are
    /// being prepared, as far as the pool has room.
    fn refill(&self, shape: Shape, wanted: usize) {
        let missing = {
            let mut pool = self.pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let (all, have) = pool.counts(&shape);
            let missing = wanted.saturating_sub(have).min(self.settings.prepared_max.saturating_sub(all));
            if missing == 0 || self.is_closing() {
                return;
            }
            *pool.preparing.entry(shape.clone()).or_default() += missing;
            missing
        };
        for _ in 0..missing {
            let (sandbox, shape) = (self.clone(), shape.clone());
            self.background.spawn(async move {
                let prepared = sandbox.create_prepared(&shape).await;
                Pool::count(
                    &mut sandbox.pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).preparing,
                    &shape,
                    false,
                );
                match prepared {
                    Ok(container) => sandbox.keep(shape, container).await,
                    Err(error) => tracing::warn!(image = shape.image, %error, "preparing a container failed"),
                }
            });
        }
    }

    /// Creates a container for a match that found none prepared, in a task of its own:
    /// if the match is abandoned while the engine creates it (its launch dropped), the
    /// task still finishes and the container goes to the pool, or is removed, instead
    /// of being left to the next sweep.
    async fn create_for_match(&self, shape: &Shape) -> Result<Prepared, BotLaunchError> {
        let (sandbox, owned_shape) = (self.clone(), shape.clone());
        let (handover, created) = tokio::sync::oneshot::channel();
        self.background.spawn(async move {
            let container = sandbox.create_prepared(&owned_shape).await;
            if let Err(Ok(abandoned)) = handover.send(container) {
                sandbox.keep(owned_shape, abandoned).await;
            }
        });
        created.await.unwrap_or_else(|_| {
            Err(DockerError::Setup("the task creating a container ended without one".to_owned()).into())
        })
    }

    /// Puts a prepared container in the pool, or removes it if the pool is full.
    async fn keep(&self, shape: Shape, mut container: Prepared) {
        container.idle_since = Instant::now();
        let refused = {
            let mut pool = self.pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if pool.idle_count() < self.settings.prepared_max && !self.is_closing() {
                pool.idle.entry(shape).or_default().push(container);
                pool.update_gauge();
                None
            } else {
                Some(container)
            }
        };
        if let Some(container) = refused {
            self.discard(container).await;
        }
    }

    /// After a match: a container whose reset the supervisor verified serves again
    /// (unless it has served its matches); any other is replaced. A reused one was
    /// counted as returning when its match ended ([`DockerSandbox::returning`]).
    async fn recycle(&self, shape: Shape, mut container: Prepared, resetting: Option<Resetting>, fresh: bool) {
        let verdict = match resetting {
            Some(resetting) => SandboxPhase::Reset.timed(Self::NAME, resetting.verdict()).await,
            None => Err("the supervisor did not say how the bot ended".to_owned()),
        };
        container.matches += 1;
        let keep = match verdict {
            Ok(()) => {
                metrics::CONTAINER_RESETS.with_label_values(&["verified"]).inc();
                !fresh && container.matches < self.settings.matches()
            }
            Err(reason) => {
                metrics::CONTAINER_RESETS.with_label_values(&["replaced"]).inc();
                tracing::warn!(
                    container = container.id,
                    reason,
                    "a container's reset could not be verified: replacing it"
                );
                false
            }
        };
        if keep {
            self.keep(shape.clone(), container).await;
            self.returned_one(&shape);
        } else {
            if !fresh {
                self.returned_one(&shape);
                // Reused containers are replaced as they go; fresh ones when taken.
                self.refill(shape, 1);
            }
            self.discard(container).await;
        }
    }

    /// Counts a reused container of `shape` as playing a match (`playing`), or as done
    /// with it: being reset and coming back (`returning`) or abandoned.
    fn count_in_use(&self, shape: &Shape, playing: bool, returning: bool) {
        let mut pool = self.pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        Pool::count(&mut pool.in_use, shape, playing);
        if returning {
            Pool::count(&mut pool.returning, shape, true);
        }
    }

    /// The container of `shape` counted by [`DockerSandbox::returning`] is back (or
    /// gone): wakes the matches waiting for one.
    fn returned_one(&self, shape: &Shape) {
        Pool::count(&mut self.pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).returning, shape, false);
        self.returned.notify_waiters();
    }

    /// The engine's record of `image`; an image it lacks that is named by digest in the
    /// farm's registry is pulled first, within [`PULL_TIMEOUT`]. No other image is ever
    /// pulled: a tournament cannot make a worker fetch from anywhere else.
    async fn inspect_or_pull(&self, image: &str) -> Result<bollard::models::ImageInspect, BotLaunchError> {
        match self.docker.inspect_image(image).await {
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. })
                if self.is_pullable(image) => {}
            // A submitted bot this worker cannot pull (no registry, or another): a worker
            // set up as the farm's others are may.
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. })
                if farm_proto::is_submitted_image(image) =>
            {
                return Err(BotLaunchError::Docker(DockerError::Setup(format!(
                    "{image} is a submitted bot in a registry this worker does not pull from (docker.registry)"
                ))));
            }
            inspected => return inspected.map_err(|error| image_error(image, error)),
        }
        let options =
            bollard::query_parameters::CreateImageOptions { from_image: Some(image.to_owned()), ..Default::default() };
        let pull = async {
            let mut stream = self.docker.create_image(Some(options), None, self.settings.registry_credentials());
            while let Some(progress) = stream.next().await {
                progress?;
            }
            Ok::<_, bollard::errors::Error>(())
        };
        // A registry that is away or slow is the farm's failure, tried again elsewhere;
        // only the registry's "no such manifest" is the tournament's.
        let pulled = timeout(PULL_TIMEOUT, pull)
            .await
            .unwrap_or(Err(bollard::errors::Error::RequestTimeoutError))
            .map_err(|error| image_error(image, error));
        pulled?;
        tracing::info!(image, "pulled from the farm's registry");
        self.docker.inspect_image(image).await.map_err(|error| image_error(image, error))
    }

    /// Whether `image` is one this worker may pull: by digest, from its registry.
    fn is_pullable(&self, image: &str) -> bool {
        self.settings.registry.as_deref().is_some_and(|registry| {
            image.strip_prefix(registry).and_then(|rest| rest.strip_prefix('/')).is_some_and(|rest| {
                rest.split_once("@sha256:").is_some_and(|(repository, digest)| {
                    !repository.is_empty() && digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit())
                })
            })
        })
    }

    /// Creates and starts a container of `shape` and waits for its supervisor.
    async fn create_prepared(&self, shape: &Shape) -> Result<Prepared, BotLaunchError> {
        let image = self.inspect_or_pull(&shape.image).await?;
        // The container is made from the image the tag names now, by its id: a tag
        // moved meanwhile cannot put other content in it than the result records.
        let image_id = image.id.ok_or_else(|| BotLaunchError::ImageMissing {
            image: shape.image.clone(),
            message: "the engine gave the image no id".to_owned(),
        })?;
        let config = image.config.unwrap_or_default();
        // As `docker run IMAGE ARGS...`: the arguments, if given, replace the CMD.
        let command = if shape.args.is_empty() { config.cmd.unwrap_or_default() } else { shape.args.clone() };
        let program: Vec<String> = config.entrypoint.unwrap_or_default().into_iter().chain(command).collect();
        if program.is_empty() {
            return Err(BotLaunchError::ImageMissing {
                image: shape.image.clone(),
                message: "the image has no ENTRYPOINT or CMD to run".to_owned(),
            });
        }
        let volumes: Vec<String> = config.volumes.unwrap_or_default();
        let name = format!("farm-{}", uuid::Uuid::new_v4().simple());
        let run_dir = self.run_root.join(&name);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&run_dir)
            .map_err(|error| DockerError::Setup(format!("cannot make {}: {error}", run_dir.display())))?;
        let workdir = config.working_dir.filter(|dir| !dir.is_empty()).unwrap_or_else(|| "/".to_owned());
        let body = self.container_body(&image_id, shape, &run_dir, &workdir, &volumes, &program);
        let created = SandboxPhase::Create
            .timed(
                Self::NAME,
                self.docker.create_container(Some(CreateContainerOptionsBuilder::new().name(&name).build()), body),
            )
            .await;
        let id = match created {
            Ok(created) => created.id,
            Err(error) => {
                let _ = std::fs::remove_dir_all(&run_dir);
                return Err(image_error(&shape.image, error));
            }
        };
        let container = Prepared { id, image_id, run_dir, matches: 0, idle_since: Instant::now() };
        match SandboxPhase::Start.timed(Self::NAME, self.start_supervisor(&container)).await {
            Ok(()) => Ok(container),
            Err(error) => {
                self.discard(container).await;
                Err(error.into())
            }
        }
    }

    /// Starts the container and waits until its supervisor listens.
    async fn start_supervisor(&self, container: &Prepared) -> Result<(), DockerError> {
        self.docker.start_container(&container.id, None).await?;
        let supervisor = Supervisor::new(&container.run_dir);
        let deadline = Instant::now() + READY_TIMEOUT;
        while !supervisor.is_listening() {
            if Instant::now() > deadline {
                return Err(DockerError::Supervisor {
                    container: container.id.clone(),
                    message: format!("its supervisor did not listen within {READY_TIMEOUT:?}"),
                });
            }
            tokio::time::sleep(READY_POLL).await;
        }
        Ok(())
    }

    fn container_body(
        &self,
        image_id: &str,
        shape: &Shape,
        run_dir: &Path,
        workdir: &str,
        volumes: &[String],
        program: &[String],
    ) -> ContainerCreateBody {
        let memory = (shape.memory_mib * 1024 * 1024) as i64;
        let tmpfs = |size: u64| format!("rw,nosuid,nodev,size={size}m");
        // The image's volumes are sized tmpfs like /tmp: never an unbounded volume.
        let tmpfs_mounts: HashMap<String, String> = std::iter::once("/tmp".to_owned())
            .chain(volumes.iter().cloned())
            .map(|path| (path, tmpfs(shape.tmp_mib)))
            .collect();
        let bind = |source: &Path, target: &str, read_only: bool| Mount {
            source: Some(source.to_string_lossy().into_owned()),
            target: Some(target.to_owned()),
            typ: Some(MountType::BIND),
            read_only: Some(read_only),
            ..Default::default()
        };
        let host_config = HostConfig {
            memory: Some(memory),
            // Swap equal to memory means no swap at all.
            memory_swap: Some(memory),
            nano_cpus: Some((shape.cpu_millis * 1_000_000) as i64),
            pids_limit: Some(self.pids_limit(shape)),
            // The supervisor's, and so the bot's: open files bounded, no core dumps.
            ulimits: Some(vec![ulimit("nofile", BOT_OPEN_FILES), ulimit("core", 0)]),
            readonly_rootfs: Some(true),
            tmpfs: Some(tmpfs_mounts),
            mounts: Some(vec![
                bind(&self.run_root.join(SUPERVISOR_FILE), supervisor_protocol::BINARY, true),
                bind(run_dir, supervisor_protocol::RUN_DIR, false),
            ]),
            // The supervisor's: kill the bot's processes, start it as its user, and
            // open the worker's run directory. The bot has none of them.
            cap_drop: Some(vec!["ALL".to_owned()]),
            cap_add: Some(["KILL", "SETUID", "SETGID", "DAC_OVERRIDE"].map(str::to_owned).to_vec()),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            // No network at all; `http` bots are reached through the supervisor.
            network_mode: Some("none".to_owned()),
            runtime: self.settings.runtime.clone(),
            // Only the supervisor writes to the container's own output (the bot's
            // stderr goes to the worker): a small log of its complaints.
            log_config: Some(small_engine_log()),
            ..Default::default()
        };
        let mut cmd = vec!["--user".to_owned(), format!("{BOT_UID}:{BOT_GID}")];
        cmd.extend(["--workdir".to_owned(), workdir.to_owned()]);
        for path in WRITABLE.iter().map(|path| (*path).to_owned()).chain(volumes.iter().cloned()) {
            cmd.extend(["--clean".to_owned(), path]);
        }
        cmd.push("--".to_owned());
        cmd.extend(program.iter().cloned());
        ContainerCreateBody {
            image: Some(image_id.to_owned()),
            user: Some("0:0".to_owned()),
            entrypoint: Some(vec![supervisor_protocol::BINARY.to_owned()]),
            cmd: Some(cmd),
            labels: Some({
                let mut labels = self.owner_labels();
                labels.insert(IMAGE_LABEL.to_owned(), shape.image.clone());
                labels
            }),
            network_disabled: Some(true),
            host_config: Some(host_config),
            ..Default::default()
        }
    }

    /// The pids limit of a container's cgroup: the bot's, and one more for the
    /// supervisor. Under gVisor that cgroup holds the threads of the sandbox's own
    /// kernel (the Sentry), not the bot's processes (14 processes held 192 threads
    /// here, and a limit of 129 killed the whole sandbox), so it gets
    /// [`GVISOR_SANDBOX_THREADS`] instead: the bot's processes are then bounded by its
    /// memory.
    fn pids_limit(&self, shape: &Shape) -> i64 {
        if self.gvisor { GVISOR_SANDBOX_THREADS } else { shape.pids + 1 }
    }

    /// Removes a container and its run directory.
    async fn discard(&self, container: Prepared) {
        SandboxPhase::Remove.timed(Self::NAME, remove_prepared(&self.docker, container)).await;
    }
}

/// Removes a container and its run directory.
async fn remove_prepared(docker: &Docker, container: Prepared) {
    remove(docker, &container.id).await;
    let _ = std::fs::remove_dir_all(&container.run_dir);
}

/// Removes prepared containers that waited longer than `idle`, until the pool is gone.
async fn expire_idle(pool: Weak<Mutex<Pool>>, docker: Docker, idle: Duration) {
    let mut every = tokio::time::interval((idle / 4).max(Duration::from_secs(1)));
    loop {
        every.tick().await;
        let Some(pool) = pool.upgrade() else { return };
        let expired: Vec<Prepared> = {
            let mut pool = pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let mut expired = Vec::new();
            for containers in pool.idle.values_mut() {
                let (old, young) = std::mem::take(containers).into_iter().partition(|c| c.idle_since.elapsed() >= idle);
                *containers = young;
                expired.extend::<Vec<Prepared>>(old);
            }
            pool.idle.retain(|_, containers| !containers.is_empty());
            pool.update_gauge();
            expired
        };
        drop(pool);
        for container in expired {
            remove_prepared(&docker, container).await;
        }
    }
}

/// A failed image inspection or container creation: 404 there means the image is
/// missing. (Elsewhere a 404 is a container that vanished: an infrastructure fault.)
fn image_error(image: &str, error: bollard::errors::Error) -> BotLaunchError {
    use bollard::errors::Error;
    match error {
        Error::DockerResponseServerError { status_code: 404, message } => {
            BotLaunchError::ImageMissing { image: image.to_owned(), message }
        }
        other => BotLaunchError::Docker(DockerError::Daemon(other)),
    }
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

async fn remove(docker: &Docker, id: &str) {
    let options = RemoveContainerOptionsBuilder::new().force(true).v(true).build();
    match timeout(REMOVE_TIMEOUT, docker.remove_container(id, Some(options))).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) if already_gone(&error) => {}
        Ok(Err(error)) => removal_failed("container", id, &error.to_string()),
        Err(_) => removal_failed("container", id, "timed out"),
    }
}

/// A bot playing one match in a prepared container.
pub struct ContainerBot {
    sandbox: DockerSandbox,
    shape: Shape,
    /// Whether its container serves this match only.
    fresh: bool,
    /// `None` once handed back (reset or removed).
    container: Option<Prepared>,
    /// The match's connection to the supervisor; `None` once ended.
    control: Option<Control>,
    /// `None` once the bot is being ended.
    channel: Option<BotChannel>,
    /// Its container's CPU usage, if the supervisor found the file.
    meter: Option<Arc<CpuMeter>>,
    /// Whether it is frozen between its turns.
    frozen: bool,
    stderr: JoinHandle<CappedLog>,
}

impl ContainerBot {
    /// Queues a request. `false` if the bot is not reading its input.
    pub fn send(&mut self, request: &str) -> bool {
        self.channel.as_mut().is_some_and(|channel| channel.send(request))
    }

    /// The conversation with the bot, until it is being ended.
    pub(super) fn channel(&mut self) -> Option<&mut BotChannel> {
        self.channel.as_mut()
    }

    /// Where its CPU time is read, if anywhere.
    pub fn cpu_meter(&self) -> Option<&CpuMeter> {
        self.meter.as_deref()
    }

    /// The image it runs, by content (`sha256:...`).
    pub fn image_id(&self) -> Option<&str> {
        self.container.as_ref().map(|container| container.image_id.as_str())
    }

    /// Freezes or thaws every process of the bot, through its supervisor (which stops
    /// or continues them): a line sent, no answer waited for.
    pub fn freeze(&mut self, frozen: bool) {
        if self.frozen == frozen {
            return;
        }
        self.frozen = frozen;
        if let Some(control) = &self.control {
            control.freeze(frozen);
        }
    }

    /// Ends the bot: the supervisor kills every process it started and says how it
    /// exited; its log is collected; the container is reset (or replaced) in the
    /// background, off the path of the next match.
    pub async fn finish(mut self) -> (CappedLog, BotExit) {
        // `end` goes while the bot's stdin is still open: a bot that exits at the end of
        // its input must not count as having exited before the match ended.
        let ended = match self.control.take() {
            Some(control) => SandboxPhase::End.timed(DockerSandbox::NAME, control.end()).await.ok(),
            None => None,
        };
        self.channel = None;
        let (exit, resetting) = match ended {
            Some((exit, resetting)) => {
                (BotExit::new(exit.code, exit.signal, exit.early, exit.oom_killed), Some(resetting))
            }
            // No answer: the container is gone or wedged; it is replaced.
            None => (BotExit { exited_early: true, ..BotExit::default() }, None),
        };
        // Every process that held the bot's stderr has been killed: it ends now.
        let stderr = &mut self.stderr;
        let log = match timeout(Duration::from_secs(5), stderr).await {
            Ok(Ok(log)) => log,
            _ => {
                self.stderr.abort();
                CappedLog::default()
            }
        };
        if let Some(container) = self.container.take() {
            let (sandbox, shape) = (self.sandbox.clone(), self.shape.clone());
            let fresh = self.fresh;
            if !fresh {
                sandbox.count_in_use(&shape, false, true);
            }
            self.sandbox.background.spawn(async move { sandbox.recycle(shape, container, resetting, fresh).await });
        }
        (log, exit)
    }
}

impl Drop for ContainerBot {
    /// A match abandoned half-way removes its container, in the background.
    fn drop(&mut self) {
        if let Some(container) = self.container.take() {
            if !self.fresh {
                self.sandbox.count_in_use(&self.shape, false, false);
            }
            let sandbox = self.sandbox.clone();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                self.sandbox.background.spawn_on(async move { sandbox.discard(container).await }, &runtime);
            }
        }
    }
}
