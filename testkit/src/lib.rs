//! Helpers for tests against the real services that `scripts/test` starts: RabbitMQ,
//! the S3 server and the Docker engine. Each test gets its own RabbitMQ virtual host,
//! its own worker ids and its own tournament ids, so tests never see each other's
//! queues, containers or objects. The worker's and the coordinator's tests use it.
//!
//! [`images`] reads `deploy/images.txt`, the table of the farm's Docker images that
//! `deploy/build-images.sh` builds, so that tests name their images from it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use farm_proto::{JOBS_QUEUE, JobEnvelope, MatchJob, RESULTS_QUEUE, ResultEnvelope};
use farm_runtime::queue::{self, ConfirmedPublisher};
use farm_runtime::storage::{Storage, StorageConfig};
use futures_util::StreamExt;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicGetOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties, Consumer};

pub mod compose;
pub mod images;

/// The `farm-worker` binary (see [`workspace_binary`]).
pub fn worker_binary() -> std::path::PathBuf {
    workspace_binary("farm-worker")
}

/// A binary of the workspace, beside the test's executable in `target/<profile>/`:
/// cargo builds a package's own binaries for its tests, and `scripts/test` builds the
/// whole workspace before any test, so other packages' (a bot's) are there too.
pub fn workspace_binary(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let path = exe.parent().and_then(Path::parent).expect("target/<profile>").join(name);
    assert!(path.exists(), "{} is missing: build the workspace first (scripts/test does)", path.display());
    path
}

/// A variable `scripts/test` exports; its absence fails the test loudly.
pub fn required(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run the tests through ./scripts/test"))
}

/// A unique name for this test run.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!("{prefix}-{}-{nanos:x}", std::process::id())
}

/// Calls the test RabbitMQ's management API (`path` from `/api/...`) as its
/// administrator, and fails the test if the call fails.
pub fn rabbitmq_api(method: &str, path: &str, body: Option<&str>) {
    let url = format!("{}{path}", required("FARM_TEST_RABBITMQ_MGMT"));
    let mut command = Command::new("curl");
    command.args(["-sS", "--fail", "-u", "farm:farm", "-X", method, "-H", "content-type: application/json", &url]);
    if let Some(body) = body {
        command.args(["-d", body]);
    }
    let output = command.output().expect("curl runs");
    assert!(output.status.success(), "{method} {path}: {}", String::from_utf8_lossy(&output.stderr));
}

/// The password of the broker users [`Vhost::worker_url`] makes.
const WORKER_PASSWORD: &str = "a-test-workers-password";

/// A RabbitMQ virtual host of its own, deleted when dropped (with the worker users made
/// for it).
pub struct Vhost {
    /// Its name (unique to the test run).
    pub name: String,
    /// The AMQP URL that reaches it as the test broker's administrator (`farm`).
    pub url: String,
    /// The worker users made for it.
    users: std::sync::Mutex<Vec<String>>,
}

impl Vhost {
    /// Creates a virtual host named from `prefix`, with the test user's rights on it.
    pub fn new(prefix: &str) -> Self {
        let name = unique(prefix);
        rabbitmq_api("PUT", &format!("/api/vhosts/{name}"), None);
        rabbitmq_api(
            "PUT",
            &format!("/api/permissions/{name}/farm"),
            Some(r#"{"configure":".*","write":".*","read":".*"}"#),
        );
        let base = required("FARM_TEST_AMQP_URL");
        let base = base.rsplit_once('/').map_or(base.as_str(), |(head, _)| head).to_owned();
        Vhost { url: format!("{base}/{name}"), name, users: std::sync::Mutex::default() }
    }

    /// The AMQP URL that reaches it as `user` with `password`.
    pub fn url_as(&self, user: &str, password: &str) -> String {
        assert!(self.url.contains("//farm:farm@"), "the test URL names the test user: {}", self.url);
        self.url.replacen("//farm:farm@", &format!("//{user}:{password}@"), 1)
    }

    /// Deletes the broker user `name` (made by the test some other way) with this vhost.
    pub fn delete_user_with_it(&self, name: &str) {
        self.users.lock().expect("users").push(name.to_owned());
    }

    /// The AMQP URL of the worker `id`, signed in as a broker user of its own named
    /// `id` (made now, with every right on this vhost), as every worker of a farm is:
    /// the coordinator believes a worker's answers only from its own user.
    pub fn worker_url(&self, id: &str) -> String {
        let user = serde_json::json!({ "password": WORKER_PASSWORD, "tags": "" }).to_string();
        rabbitmq_api("PUT", &format!("/api/users/{id}"), Some(&user));
        rabbitmq_api(
            "PUT",
            &format!("/api/permissions/{}/{id}", self.name),
            Some(r#"{"configure":".*","write":".*","read":".*"}"#),
        );
        self.delete_user_with_it(id);
        self.url_as(id, WORKER_PASSWORD)
    }

    /// A connection to it.
    pub async fn connect(&self) -> Connection {
        Connection::connect(&self.url, ConnectionProperties::default()).await.expect("connect to the test vhost")
    }
}

impl Drop for Vhost {
    fn drop(&mut self) {
        let management = required("FARM_TEST_RABBITMQ_MGMT");
        let users = self.users.get_mut().map(std::mem::take).unwrap_or_default();
        let paths = users.iter().map(|user| format!("users/{user}")).chain([format!("vhosts/{}", self.name)]);
        for path in paths {
            let _ = Command::new("curl")
                .args(["-sS", "-u", "farm:farm", "-X", "DELETE", &format!("{management}/api/{path}")])
                .output();
        }
    }
}

/// The image registry `scripts/test` starts (`scripts/services/registry.sh`), as
/// `HOST:PORT`.
pub fn registry() -> String {
    required("FARM_TEST_REGISTRY")
}

/// The user and password the workers sign in to [`registry`] with.
pub fn registry_login() -> (String, String) {
    (required("FARM_TEST_REGISTRY_USER"), required("FARM_TEST_REGISTRY_PASSWORD"))
}

/// The environment that makes a worker build for [`registry`] and pull from it, signed
/// in as [`registry_login`] (the worker's `[docker]` registry settings).
pub fn registry_environment() -> [(&'static str, String); 3] {
    let (user, password) = registry_login();
    [
        ("FARM_DOCKER__REGISTRY", registry()),
        ("FARM_DOCKER__REGISTRY_USER", user),
        ("FARM_DOCKER__REGISTRY_PASSWORD", password),
    ]
}

/// The storage settings of the S3 server `scripts/test` starts.
pub fn s3_config() -> StorageConfig {
    StorageConfig::S3 {
        endpoint: required("FARM_TEST_S3_ENDPOINT"),
        bucket: required("FARM_TEST_S3_BUCKET"),
        region: required("FARM_TEST_S3_REGION"),
        access_key: required("FARM_TEST_S3_ACCESS_KEY"),
        secret_key: required("FARM_TEST_S3_SECRET_KEY"),
        retry_secs: 10,
    }
}

/// The environment that gives a farm process ([`s3_config`]'s) S3 storage.
pub fn s3_environment() -> [(&'static str, String); 6] {
    let StorageConfig::S3 { endpoint, bucket, region, access_key, secret_key, .. } = s3_config() else {
        unreachable!("s3_config is S3");
    };
    [
        ("FARM_STORAGE__KIND", "s3".to_owned()),
        ("FARM_STORAGE__ENDPOINT", endpoint),
        ("FARM_STORAGE__BUCKET", bucket),
        ("FARM_STORAGE__REGION", region),
        ("FARM_STORAGE__ACCESS_KEY", access_key),
        ("FARM_STORAGE__SECRET_KEY", secret_key),
    ]
}

/// The S3 server `scripts/test` starts, opened.
pub fn s3() -> Storage {
    Storage::open(&s3_config()).expect("open the test S3 bucket")
}

/// A loopback address with a port free at the time of asking.
pub fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").and_then(|listener| listener.local_addr()).expect("a free port")
}

/// The Docker sandbox's isolation for the workers the tests start: `reused` (the
/// default), or `fresh-container` when FARM_TEST_DOCKER_ISOLATION says so (scripts/test
/// runs the service tests in both).
pub fn docker_isolation() -> String {
    std::env::var("FARM_TEST_DOCKER_ISOLATION").unwrap_or_else(|_| "reused".to_owned())
}

/// The OCI runtime for the workers the tests start: the engine's default, or the one
/// FARM_TEST_DOCKER_RUNTIME names (scripts/test runs the hostile suite under gVisor's
/// `runsc` too).
pub fn docker_runtime() -> Option<String> {
    std::env::var("FARM_TEST_DOCKER_RUNTIME").ok().filter(|runtime| !runtime.is_empty())
}

/// A `farm-worker serve` process with Docker bots and S3 storage.
pub struct WorkerProcess {
    /// Its worker id (its containers' label).
    pub id: String,
    /// Where it serves `/metrics` and `/healthz`.
    pub metrics: SocketAddr,
    child: Child,
}

impl WorkerProcess {
    /// Starts `farm-worker serve` as `id` (signed in as its own broker user, see
    /// [`Vhost::worker_url`]) on `vhost` with `slots` slots and a queue of
    /// `delivery_limit` redeliveries.
    pub fn start(vhost: &Vhost, id: &str, slots: u16, delivery_limit: u32) -> Self {
        Self::start_with(vhost, id, slots, delivery_limit, &[])
    }

    /// As [`WorkerProcess::start`], with extra environment variables (which win).
    pub fn start_with(vhost: &Vhost, id: &str, slots: u16, delivery_limit: u32, env: &[(&str, &str)]) -> Self {
        Self::start_signed_in(&vhost.worker_url(id), id, slots, delivery_limit, env)
    }

    /// As [`WorkerProcess::start_with`], signed in to the broker with `amqp_url` (whose
    /// user must be `id`), made by the test.
    pub fn start_signed_in(amqp_url: &str, id: &str, slots: u16, delivery_limit: u32, env: &[(&str, &str)]) -> Self {
        let metrics = free_port();
        let mut command = Command::new(worker_binary());
        command
            .arg("serve")
            .env("FARM_AMQP_URL", amqp_url)
            .env("FARM_WORKER_ID", id)
            .env("FARM_SLOTS", slots.to_string())
            .env("FARM_SANDBOX", "docker")
            .env("FARM_DOCKER__ISOLATION", docker_isolation())
            .envs(docker_runtime().map(|runtime| ("FARM_DOCKER__RUNTIME", runtime)))
            .env("FARM_DELIVERY_LIMIT", delivery_limit.to_string())
            .env("FARM_METRICS_LISTEN", metrics.to_string())
            .env("FARM_DRAIN_SECS", "60")
            .envs(s3_environment())
            .env("RUST_LOG", "farm_worker=info,farm_runtime=info")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        let child = command.spawn().expect("farm-worker starts");
        let worker = WorkerProcess { id: id.to_owned(), metrics, child };
        worker.wait_until(Duration::from_secs(60), |status, _| status == 200);
        worker
    }

    /// Polls `/healthz` until `ready` holds, failing after `limit`.
    pub fn wait_until(&self, limit: Duration, ready: impl Fn(u16, &str) -> bool) {
        let deadline = Instant::now() + limit;
        loop {
            if let Some((status, body)) = http_get(self.metrics, "/healthz")
                && ready(status, &body)
            {
                return;
            }
            assert!(Instant::now() < deadline, "worker {} not ready within {limit:?}", self.id);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// What its `/metrics` says now.
    pub fn metrics_text(&self) -> String {
        http_get(self.metrics, "/metrics").map(|(_, body)| body).unwrap_or_default()
    }

    /// The value of one sample of the worker's `/metrics` (0 if absent).
    pub fn metric(&self, sample: &str) -> f64 {
        self.metrics_text()
            .lines()
            .find_map(|line| line.strip_prefix(sample)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or(0.0)
    }

    /// Waits until the worker plays a match (its bots have started).
    pub fn wait_for_a_match(&self) {
        eventually(Duration::from_secs(60), "a match starts", || self.metric("farm_worker_jobs_in_flight") >= 1.0);
    }

    /// Whether its process is still alive.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGKILLs it and reaps it.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL the worker");
        self.child.wait().expect("reap the worker");
    }

    /// Sends SIGTERM and returns at once.
    pub fn signal(&self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM the worker");
    }

    /// Two SIGTERMs: the first starts the drain, the second (sent once the drain shows as
    /// unhealthy, so it really is a second one) aborts what is still playing.
    pub fn abort(&self) {
        self.signal();
        self.wait_until(Duration::from_secs(10), |status, _| status == 503);
        self.signal();
    }

    /// Waits for the process to exit.
    pub fn wait(mut self) -> std::process::ExitStatus {
        self.child.wait().expect("worker exits")
    }

    /// SIGTERM, then the exit status once it has drained.
    pub fn terminate(self) -> std::process::ExitStatus {
        self.signal();
        self.wait()
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `(status, body)` of a plain HTTP GET, or `None` while nothing listens.
pub fn http_get(address: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: test\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default();
    Some((status, body))
}

/// Declares the topology and publishes `jobs` with confirms.
pub async fn publish_jobs(connection: &Connection, delivery_limit: u32, jobs: &[MatchJob]) {
    let channel = connection.create_channel().await.expect("channel");
    queue::declare_topology(&channel, delivery_limit).await.expect("declare topology");
    let publisher = ConfirmedPublisher::open(connection).await.expect("publisher");
    for job in jobs {
        // No coordinator checks its answers: no token.
        let body = serde_json::to_vec(&JobEnvelope::new(job.clone(), String::new())).expect("serialize");
        publisher.publish(JOBS_QUEUE, &body).await.expect("publish job");
    }
}

/// Publishes `body` as it is to `queue_name`, waiting for the broker's confirm.
pub async fn publish_raw(connection: &Connection, queue_name: &'static str, body: &[u8]) {
    ConfirmedPublisher::open(connection).await.expect("publisher").publish(queue_name, body).await.expect("publish");
}

/// A consumer of `queue_name`, which must exist.
pub async fn consume(connection: &Connection, queue_name: &str) -> Consumer {
    let channel = connection.create_channel().await.expect("channel");
    channel
        .basic_consume(
            queue_name.into(),
            unique("test").as_str().into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("consume")
}

/// The next message on `consumer`, acked, within `limit`.
pub async fn next_message(consumer: &mut Consumer, limit: Duration) -> Vec<u8> {
    let delivery = tokio::time::timeout(limit, consumer.next())
        .await
        .unwrap_or_else(|_| panic!("no message within {limit:?}"))
        .expect("consumer open")
        .expect("delivery");
    delivery.acker.ack(BasicAckOptions::default()).await.expect("ack");
    delivery.data
}

/// The next envelope on `consumer`, acked, a worker's notice of a returned job
/// ([`farm_proto::MatchResult::Returned`]) included; fails the test after `limit`.
pub async fn next_envelope(consumer: &mut Consumer, limit: Duration) -> ResultEnvelope {
    serde_json::from_slice(&next_message(consumer, limit).await).expect("a result envelope")
}

/// The next answer on `consumer` (a completed or failed match), acked, notices of
/// returned jobs skipped; fails the test after `limit` in all.
pub async fn next_result(consumer: &mut Consumer, limit: Duration) -> ResultEnvelope {
    let deadline = Instant::now() + limit;
    loop {
        let envelope = next_envelope(consumer, deadline.saturating_duration_since(Instant::now())).await;
        if !is_notice(&envelope) {
            return envelope;
        }
    }
}

/// A consumer of the results queue.
pub async fn results_consumer(connection: &Connection) -> Consumer {
    consume(connection, RESULTS_QUEUE).await
}

/// Every envelope waiting in the results queue, taken: what a test that expects no
/// answer checks, answers and notices of returned jobs alike.
pub async fn take_waiting_results(connection: &Connection) -> Vec<ResultEnvelope> {
    let channel = connection.create_channel().await.expect("channel");
    let mut envelopes = Vec::new();
    let options = BasicGetOptions { no_ack: true };
    while let Some(message) = channel.basic_get(RESULTS_QUEUE.into(), options).await.expect("basic.get") {
        envelopes.push(serde_json::from_slice(&message.delivery.data).expect("a result envelope"));
    }
    envelopes
}

/// Whether `envelope` is a worker's notice that it returned its job, not an answer.
pub fn is_notice(envelope: &ResultEnvelope) -> bool {
    matches!(envelope.result, farm_proto::MatchResult::Returned { .. })
}

/// Messages ready in `queue_name` (a passive declare).
pub async fn ready_messages(connection: &Connection, queue_name: &str) -> u32 {
    let channel = connection.create_channel().await.expect("channel");
    let options = QueueDeclareOptions { passive: true, ..Default::default() };
    channel
        .queue_declare(queue_name.into(), options, FieldTable::default())
        .await
        .expect("queue exists")
        .message_count()
}

/// Names of the containers carrying `label=value`, running or not.
pub fn containers(label: &str, value: &str) -> Vec<String> {
    let output = Command::new("docker")
        .args(["ps", "-a", "--filter", &format!("label={label}={value}"), "--format", "{{.Names}}"])
        .output()
        .expect("docker ps runs");
    String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
}

/// `docker ARGS`; fails the test if it fails. Returns its standard output, trimmed.
pub fn docker(args: &[&str]) -> String {
    let output = Command::new("docker").args(args).output().expect("docker runs");
    assert!(output.status.success(), "docker {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Polls `condition` every 100 ms until it holds, failing after `limit`.
pub fn eventually(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The decompressed replay stored at `key`.
pub async fn replay_lines(storage: &Storage, key: &str) -> Vec<String> {
    let compressed = storage.read(key).await.expect("replay stored");
    let mut text = String::new();
    let mut decoder = async_compression::tokio::bufread::ZstdDecoder::new(compressed.as_slice());
    tokio::io::AsyncReadExt::read_to_string(&mut decoder, &mut text).await.expect("zstd replay");
    text.lines().map(str::to_owned).collect()
}

/// The repository's root.
pub fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}
