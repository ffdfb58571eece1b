//! The whole farm of `deploy/compose.yaml` on this machine's Docker engine, as a test
//! runs it: a compose project of its own (its containers, networks and volumes named
//! after it), every published port chosen by Docker, a run directory of its own and a
//! fresh API token. Every image must exist already (`deploy/build-images.sh` and
//! `deploy/build-farm-image.sh`, which `scripts/test` runs first): nothing is pulled.
//! The project is taken down, volumes and all, when the [`ComposeFarm`] is dropped.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use crate::{docker, eventually, http_get, repo, unique};

/// The compose file, from the repository's root.
pub const COMPOSE_FILE: &str = "deploy/compose.yaml";

/// The compose command this machine has: the `docker compose` plugin, or the older
/// `docker-compose` (Debian's package).
fn compose_program() -> Vec<&'static str> {
    let plugin = Command::new("docker").args(["compose", "version"]).output();
    if plugin.is_ok_and(|output| output.status.success()) { vec!["docker", "compose"] } else { vec!["docker-compose"] }
}

/// A running compose project of the farm.
pub struct ComposeFarm {
    /// The compose project's name (a prefix of its containers', networks' and volumes').
    pub project: String,
    /// The API's bearer token.
    pub token: String,
    /// The workers' run directory on the host (FARM_RUN_DIR).
    pub run_dir: PathBuf,
    environment: Vec<(String, String)>,
}

impl ComposeFarm {
    /// Starts RabbitMQ, S3, the coordinator and `workers` workers, with the compose
    /// variables of `settings` besides the test's own (token, ports, run directory), and
    /// waits until the coordinator answers `/healthz`.
    pub fn up(name: &str, workers: usize, settings: &[(&str, &str)]) -> Self {
        let farm = Self::create(name, settings);
        farm.compose(&["up", "-d", "--scale", &format!("worker={workers}")]);
        farm.wait_for_coordinator();
        farm
    }

    /// The project, its containers not created: [`ComposeFarm::compose`] starts them.
    pub fn create(name: &str, settings: &[(&str, &str)]) -> Self {
        let project = unique(name).replace('-', "").to_lowercase();
        // Short: the bots' supervisor sockets live under it (at most 108 bytes a path).
        let run_dir = std::env::temp_dir().join(format!("mf-{}", &project[project.len().saturating_sub(10)..]));
        let token = format!("{:032x}{:032x}", rand_u128(), rand_u128());
        // The coordinator's and the workers' S3 keys (farm-s3 gives each only its part's rights).
        let [s3_coordinator_secret, s3_worker_secret] = std::array::from_fn(|_| format!("{:032x}", rand_u128()));
        let [registry_password, rabbitmq_password, coordinator_password, grafana_password] =
            std::array::from_fn(|_| format!("{:032x}", rand_u128()));
        let socket_group = std::fs::metadata("/var/run/docker.sock")
            .map(|metadata| std::os::unix::fs::MetadataExt::gid(&metadata).to_string())
            .expect("the Docker socket");
        let registry_port = crate::free_port().port().to_string();
        let mut environment: Vec<(String, String)> = [
            ("COMPOSE_PROJECT_NAME", project.as_str()),
            ("FARM_API_TOKEN", token.as_str()),
            ("S3_COORDINATOR_SECRET_KEY", s3_coordinator_secret.as_str()),
            ("S3_WORKER_SECRET_KEY", s3_worker_secret.as_str()),
            ("DOCKER_GID", socket_group.as_str()),
            ("FARM_RUN_DIR", run_dir.to_str().expect("a UTF-8 temporary directory")),
            ("COORDINATOR_PORT", "0"),
            ("PROMETHEUS_PORT", "0"),
            ("RABBITMQ_MANAGEMENT_PORT", "0"),
            ("GRAFANA_PORT", "0"),
            // Not 0: the workers are told this port, where the host's engine reaches it.
            ("REGISTRY_PORT", registry_port.as_str()),
            ("REGISTRY_PASSWORD", registry_password.as_str()),
            ("RABBITMQ_PASSWORD", rabbitmq_password.as_str()),
            ("RABBITMQ_COORDINATOR_PASSWORD", coordinator_password.as_str()),
            ("GRAFANA_ADMIN_PASSWORD", grafana_password.as_str()),
        ]
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect();
        environment.extend(settings.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())));
        Self { project, token, run_dir, environment }
    }

    /// Runs `docker-compose -f deploy/compose.yaml ARGS` in the project; fails the test
    /// if it fails. Returns its standard output.
    pub fn compose(&self, args: &[&str]) -> String {
        let output = self.try_compose(args);
        assert!(
            output.status.success(),
            "compose {}: {}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr),
            self.logs(40)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Runs `docker-compose -f deploy/compose.yaml ARGS` in the project, whatever comes of it.
    pub fn try_compose(&self, args: &[&str]) -> Output {
        let program = compose_program();
        Command::new(program[0])
            .args(&program[1..])
            .args(["-f", &repo().join(COMPOSE_FILE).to_string_lossy()])
            .args(args)
            .envs(self.environment.iter().map(|(key, value)| (key, value)))
            .output()
            .expect("compose runs")
    }

    /// The ids of `service`'s containers, running or not, in the order of their numbers.
    pub fn containers(&self, service: &str) -> Vec<String> {
        let mut containers: Vec<(u32, String)> = self
            .compose(&["ps", "-a", "-q", service])
            .lines()
            .filter(|id| !id.is_empty())
            .map(|id| {
                let number = docker(&[
                    "inspect",
                    "--format",
                    "{{index .Config.Labels \"com.docker.compose.container-number\"}}",
                    id,
                ]);
                (number.parse().unwrap_or(0), id.to_owned())
            })
            .collect();
        containers.sort();
        containers.into_iter().map(|(_, id)| id).collect()
    }

    /// The one container of `service`.
    pub fn container(&self, service: &str) -> String {
        let containers = self.containers(service);
        assert_eq!(containers.len(), 1, "one container of {service}: {containers:?}");
        containers[0].clone()
    }

    /// Where the host reaches `service`'s `port` (published on 127.0.0.1).
    pub fn address(&self, service: &str, port: u16) -> SocketAddr {
        let published = self.compose(&["port", service, &port.to_string()]);
        published.trim().parse().unwrap_or_else(|_| panic!("{service}:{port} is published at {published:?}"))
    }

    /// The coordinator's API, e.g. `http://127.0.0.1:PORT`.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.address("coordinator", 8000))
    }

    /// Waits (up to 3 minutes: a first start makes RabbitMQ's database) until the
    /// coordinator answers `/healthz` with 200.
    pub fn wait_for_coordinator(&self) {
        eventually(Duration::from_secs(180), "the coordinator answers /healthz", || {
            let output = self.try_compose(&["port", "coordinator", "8000"]);
            let address = String::from_utf8_lossy(&output.stdout).trim().parse::<SocketAddr>();
            address.is_ok_and(|address| http_get(address, "/healthz").is_some_and(|(status, _)| status == 200))
        });
    }

    /// Waits until `worker-identities` has made the workers' identities (it exited 0),
    /// for workers started without their dependencies; fails the test if it failed.
    pub fn wait_for_worker_identities(&self) {
        eventually(Duration::from_secs(120), "worker-identities made the workers' identities", || {
            let container = self.container("worker-identities");
            let state = docker(&["inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", &container]);
            assert!(!state.starts_with("exited") || state == "exited 0", "worker-identities failed: {}", self.logs(20));
            state == "exited 0"
        });
    }

    /// The last `lines` lines of every service's log, for a failure's message.
    pub fn logs(&self, lines: usize) -> String {
        let output = self.try_compose(&["logs", "--no-color", "--tail", &lines.to_string()]);
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
    }

    /// Stops and removes every container, network and volume of the project, letting
    /// the workers drain (up to 2 minutes); fails the test if compose fails.
    pub fn down(&self) {
        self.compose(&["down", "-v", "--remove-orphans", "--timeout", "120"]);
    }

    /// Takes the project down quickly, whatever state it is in, for a test's clean-up.
    pub fn try_down(&self) {
        let _ = self.try_compose(&["down", "-v", "--remove-orphans", "--timeout", "5"]);
    }
}

impl Drop for ComposeFarm {
    fn drop(&mut self) {
        self.try_down();
        // The run directory holds root-owned leftovers only when a worker died hard.
        let _ = std::fs::remove_dir_all(&self.run_dir);
    }
}

/// Whether the container is running now.
pub fn running(container: &str) -> bool {
    docker(&["inspect", "--format", "{{.State.Running}}", container]) == "true"
}

/// 128 random bits from the kernel.
fn rand_u128() -> u128 {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut bytes))
        .expect("/dev/urandom");
    u128::from_le_bytes(bytes)
}
