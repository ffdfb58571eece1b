//! The worker's configuration, layered by [`load_layered`]: defaults, then a TOML file,
//! then `FARM_*` environment variables (`FARM_SLOTS=4`, `FARM_STORAGE__KIND=s3`: a
//! double underscore goes one table down), then command-line flags. Unknown keys are
//! errors that name the key.

use std::path::Path;

use farm_proto::BotLimits;
use farm_runtime::config::{ConfigError, load_layered};
use farm_runtime::storage::StorageConfig;
use serde::{Deserialize, Serialize};

use crate::bots::DockerSettings;
use crate::build::BuildLimits;
use crate::runner::RunnerOptions;
use farm_proto::limits;

/// Where the worker runs external bots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SandboxKind {
    /// Local processes (`cmd:` bots), contained but not isolated: for trusted bots.
    Local,
    /// Local processes in namespaces of their own (bubblewrap): no network, the host
    /// read-only, an unprivileged user, cgroup limits. Untrusted bots without Docker.
    Isolated,
    /// Docker containers (`image:` bots): a container per bot, prepared ahead and
    /// reset between matches (see `[docker]`).
    Docker,
}

/// Everything the worker service can be told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerConfig {
    /// Names this worker in results and on its containers' labels. Two workers on one
    /// Docker daemon need different ids.
    pub worker_id: String,
    /// Matches played at once.
    pub slots: u16,
    /// Matches whose bots' sandboxes are prepared ahead, while the slots are busy, so
    /// that a match begins without waiting for containers when its slot frees. The
    /// AMQP prefetch is the slots plus these: the worker must hold a job to know its
    /// bots. No bot process starts before its match.
    pub warm_pool: WarmPool,
    /// How long a match prepared for may hold its room in the warm pool; past that the
    /// room goes to the next waiting job.
    pub warm_idle_secs: u64,
    /// Where external bots run.
    pub sandbox: SandboxKind,
    /// How the Docker sandbox prepares and reuses its containers (`[docker]`).
    pub docker: DockerSettings,
    /// The RabbitMQ URL. Its user is the worker's broker identity, which must be
    /// `worker_id` (see `identity_dir`).
    pub amqp_url: String,
    /// A directory of broker identities, a file per worker name holding its password
    /// (compose and the Kubernetes manifests mount one; `farm-coordinator workers add`
    /// makes them). With it the worker signs in as one of them, whatever `amqp_url`'s
    /// user: the one named `worker_id` if there is one (a Kubernetes pod's name), else
    /// the first it can claim (a compose replica; see [`crate::identity`]).
    pub identity_dir: Option<std::path::PathBuf>,
    /// Redeliveries of one job before it is dead-lettered (RabbitMQ's
    /// `x-delivery-limit`): a job is tried at most `delivery_limit + 1` times.
    pub delivery_limit: u32,
    /// Address of the `/metrics` and `/healthz` endpoint.
    pub metrics_listen: String,
    /// Extra time for each bot's first reply, for its process or container to start.
    pub startup_grace_ms: u64,
    /// The longest a match may take, whatever its rules allow (it then fails, and is
    /// not tried again). Keep it under RabbitMQ's consumer timeout (30 minutes by
    /// default), which would otherwise take the delivery away.
    pub max_match_secs: u64,
    /// The most a match's replay may hold of its bots' replies, and apart from them of
    /// the game's own states, uncompressed, in MiB (1 to 65536): a bot whose reply
    /// would take the replies further is out of the match (`output_limit`); a match
    /// whose states pass it fails.
    pub max_replay_mib: u64,
    /// How much of each playing match's lines is kept, in MiB (0 to 1024), for a viewer
    /// who starts watching it late ([`crate::live`]): the header and the newest frames
    /// within it. 0 relays no match live.
    pub live_buffer_mib: usize,
    /// The most a tournament may give one bot (`[bot_ceiling]`: memory_mib,
    /// cpu_millis, pids, tmp_mib, stderr_bytes); what a job asks above it is lowered
    /// to it (counted in farm_worker_bot_limits_clamped_total).
    pub bot_ceiling: BotLimits,
    /// On shutdown, how long matches in flight may take to finish before they are
    /// stopped and their jobs requeued.
    pub drain_secs: u64,
    /// Where replays, logs and result documents go.
    pub storage: StorageConfig,
    /// What building one submitted bot may take (a worker builds when it has the docker
    /// sandbox and `docker.registry`) (`[build]`: build_secs, max_image_mib,
    /// memory_mib, cpu_millis, scratch_mib, pids, and `[build.source]`: max_files,
    /// max_bytes).
    pub build: BuildLimits,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            worker_id: default_worker_id(),
            slots: 1,
            warm_pool: WarmPool::On,
            warm_idle_secs: 120,
            sandbox: SandboxKind::Docker,
            docker: DockerSettings::default(),
            amqp_url: "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned(),
            identity_dir: None,
            delivery_limit: limits::DELIVERY_LIMIT.default,
            metrics_listen: "127.0.0.1:9464".to_owned(),
            startup_grace_ms: 5000,
            max_match_secs: RunnerOptions::default().max_match.as_secs(),
            max_replay_mib: RunnerOptions::default().max_replay_bytes >> 20,
            live_buffer_mib: limits::WORKER_LIVE_BUFFER_MIB.default,
            bot_ceiling: BotLimits::default_ceiling(),
            drain_secs: 60,
            storage: StorageConfig::default(),
            build: BuildLimits::default(),
        }
    }
}

/// The size of the warm pool, in matches: `on` (one match per slot, the default), `off`
/// or a number of matches (`0` is `off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum WarmPool {
    /// Each match's bots start when its slot comes; the prefetch is the slots.
    Off,
    /// One match ahead per slot.
    On,
    /// This many matches ahead.
    Matches(u16),
}

impl WarmPool {
    /// Matches started ahead with `slots` slots.
    pub fn matches(self, slots: u16) -> u16 {
        match self {
            WarmPool::Off => 0,
            WarmPool::On => slots,
            WarmPool::Matches(matches) => matches,
        }
    }
}

/// A warm pool size that is not `on`, `off` or a number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("warm pool {0:?}: expected on, off or a number of matches")]
pub struct WarmPoolError(String);

impl std::str::FromStr for WarmPool {
    type Err = WarmPoolError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "on" => Ok(WarmPool::On),
            "off" | "0" => Ok(WarmPool::Off),
            number => number.parse().map(WarmPool::Matches).map_err(|_| WarmPoolError(text.to_owned())),
        }
    }
}

impl TryFrom<String> for WarmPool {
    type Error = WarmPoolError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl From<WarmPool> for String {
    fn from(pool: WarmPool) -> Self {
        pool.to_string()
    }
}

impl std::fmt::Display for WarmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WarmPool::Off => f.write_str("off"),
            WarmPool::On => f.write_str("on"),
            WarmPool::Matches(matches) => write!(f, "{matches}"),
        }
    }
}

fn default_worker_id() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "worker".to_owned())
}

impl WorkerConfig {
    /// Layers defaults, `file` (if any), the `FARM_*` entries of `env` and `overrides`
    /// (`(key, value)` pairs from the command line, dotted for nested keys).
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        overrides: &[(&str, String)],
    ) -> Result<Self, ConfigError> {
        let config: WorkerConfig = load_layered(file, env, overrides)?;
        if config.slots == 0 {
            // basic.qos with 0 means "no limit": the worker would take every job at once.
            return Err(ConfigError::invalid("slots must be at least 1"));
        }
        limits::MAX_MATCH_SECS.check(config.max_match_secs).map_err(ConfigError::invalid)?;
        limits::MAX_REPLAY_MIB.check(config.max_replay_mib).map_err(ConfigError::invalid)?;
        limits::WORKER_LIVE_BUFFER_MIB.check(config.live_buffer_mib).map_err(ConfigError::invalid)?;
        limits::DELIVERY_LIMIT.check(config.delivery_limit).map_err(ConfigError::invalid)?;
        config.bot_ceiling.check().map_err(|problem| ConfigError::invalid(format!("bot_ceiling: {problem}")))?;
        config.docker.check().map_err(ConfigError::invalid)?;
        farm_runtime::secrets::check_chosen_secrets(&config.amqp_url, &config.storage)?;
        if let Some(password) = &config.docker.registry_password {
            farm_runtime::secrets::check_chosen("docker.registry_password (FARM_DOCKER__REGISTRY_PASSWORD)", password)?;
        }
        config.build.check().map_err(ConfigError::invalid)?;
        Ok(config)
    }

    /// The registry this worker builds submitted bots for, if it builds them.
    pub fn builds_for(&self) -> Option<&str> {
        self.docker.registry.as_deref().filter(|_| self.sandbox == SandboxKind::Docker)
    }

    /// Matches whose bots are started ahead (see [`WorkerConfig::warm_pool`]).
    pub fn warm_matches(&self) -> u16 {
        self.warm_pool.matches(self.slots)
    }

    /// Jobs taken from RabbitMQ at once: the slots, plus the matches started ahead.
    pub fn prefetch(&self) -> u16 {
        self.slots.saturating_add(self.warm_matches())
    }

    /// How this worker's matches are run.
    pub fn runner_options(&self) -> RunnerOptions {
        RunnerOptions {
            startup_grace: std::time::Duration::from_millis(self.startup_grace_ms),
            max_match: std::time::Duration::from_secs(self.max_match_secs),
            bot_ceiling: self.bot_ceiling.clone(),
            max_replay_bytes: self.max_replay_mib << 20,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn layers_apply_in_order_and_foreign_variables_are_ignored() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("worker.toml");
        std::fs::write(&file, "slots = 3\nworker_id = \"from-file\"\n[storage]\nkind = \"s3\"\nbucket = \"b\"\n")
            .expect("write");
        let config = WorkerConfig::load(
            Some(&file),
            env(&[
                ("FARM_SLOTS", "4"),
                ("FARM_TEST_AMQP_URL", "x"),
                ("FARM_SEED", "1"),
                ("FARM_STORAGE__REGION", "r"),
                ("FARM_STORAGE__RETRY_SECS", "5"),
                ("FARM_AMQP_URL", "007"),
            ]),
            &[("worker_id", "from-flag".to_owned())],
        )
        .expect("valid");
        assert_eq!(config.slots, 4);
        assert_eq!(config.amqp_url, "007", "strings stay strings");
        assert_eq!(config.worker_id, "from-flag");
        assert_eq!(config.delivery_limit, 5);
        assert_eq!(
            config.storage,
            StorageConfig::S3 {
                endpoint: String::new(),
                bucket: "b".into(),
                region: "r".into(),
                access_key: String::new(),
                secret_key: String::new(),
                retry_secs: 5,
            }
        );
    }

    #[test]
    fn the_example_file_holds_the_defaults() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/worker.toml");
        let config = WorkerConfig::load(Some(&file), env(&[("FARM_WORKER_ID", "example")]), &[]).expect("loads");
        assert_eq!(config, WorkerConfig { worker_id: "example".into(), ..WorkerConfig::default() });
        let low = env(&[("FARM_BOT_CEILING__MEMORY_MIB", "8")]);
        let error = WorkerConfig::load(None, low, &[]).expect_err("below every bot's floor");
        assert!(error.to_string().contains("bot_ceiling: memory_mib must be 16 to 65536, not 8"), "{error}");
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("worker.toml");
        std::fs::write(&file, "slotz = 3\n").expect("write");
        let err = WorkerConfig::load(Some(&file), Vec::new(), &[]).expect_err("unknown key");
        assert!(err.to_string().contains("slotz"), "{err}");
        let err = WorkerConfig::load(None, env(&[("FARM_SLOTS", "many")]), &[]).expect_err("bad value");
        assert!(err.to_string().contains("slots"), "{err}");
        let err = WorkerConfig::load(None, env(&[("FARM_SLOTS", "0")]), &[]).expect_err("no slots");
        assert!(err.to_string().contains("slots must be at least 1"), "{err}");
    }

    #[test]
    fn the_warm_pool_follows_the_slots_unless_sized_and_sets_the_prefetch() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("worker.toml");
        std::fs::write(&file, "slots = 3\nwarm_pool = 2\n").expect("write");
        let sized = WorkerConfig::load(Some(&file), Vec::new(), &[]).expect("a number from TOML");
        assert_eq!((sized.warm_matches(), sized.prefetch()), (2, 5));
        let default = WorkerConfig::load(None, env(&[("FARM_SLOTS", "3")]), &[]).expect("valid");
        assert_eq!((default.warm_pool, default.warm_matches(), default.prefetch()), (WarmPool::On, 3, 6));
        let off = WorkerConfig::load(None, env(&[("FARM_SLOTS", "3"), ("FARM_WARM_POOL", "off")]), &[]).expect("off");
        assert_eq!((off.warm_matches(), off.prefetch()), (0, 3));
        assert_eq!("0".parse::<WarmPool>(), Ok(WarmPool::Off));
        assert_eq!("7".parse::<WarmPool>(), Ok(WarmPool::Matches(7)));
        let err = WorkerConfig::load(None, env(&[("FARM_WARM_POOL", "lots")]), &[]).expect_err("not a size");
        assert!(err.to_string().contains("expected on, off or a number"), "{err}");
    }
}
