//! End to end: matches per second through RabbitMQ, with one, two and four
//! `farm-worker serve` processes (one slot each) behind a `farm-coordinator serve`
//! process, on a round robin of short Botwars matches between echo bots; with the
//! bots as local processes, as Docker containers reused between matches, and as
//! Docker containers fresh for every match (`docker.isolation = "fresh-container"`,
//! as submitted bots play). Also the peak memory (VmHWM) of the worker and
//! coordinator processes. Each run has a RabbitMQ virtual host and a ledger of its own.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use farm_coordinator::client::Client;
use farm_coordinator::ledger::Progress;
use farm_coordinator::worker_identities::Management;
use farm_worker::bots::DockerSettings;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::bots::{self, ECHO_IMAGE};
use crate::procfs::{self, containers_cpu_seconds, cpu_by_command, cpu_spent_by_command, machine_cpu_seconds};
use crate::report::Figures;

/// The API token of the coordinators started here.
pub(crate) const TOKEN: &str = "farm-bench-token-0123456789";
/// The longest one run may take.
const RUN_LIMIT: Duration = Duration::from_secs(900);

/// Where the services are: RabbitMQ (AMQP and management API) and object storage.
#[derive(Debug, Clone, clap::Args)]
pub struct Services {
    /// RabbitMQ's AMQP URL; each run uses a virtual host of its own on that server.
    #[arg(long, env = "FARM_TEST_AMQP_URL", value_name = "URL")]
    amqp_url: Option<String>,
    /// RabbitMQ's management API (to create the virtual hosts), as http://HOST:PORT.
    #[arg(long, env = "FARM_TEST_RABBITMQ_MGMT", value_name = "URL")]
    rabbitmq_mgmt: Option<String>,
    /// S3 endpoint for replays and logs; without it they go to a local directory.
    #[arg(long, env = "FARM_TEST_S3_ENDPOINT", value_name = "URL")]
    s3_endpoint: Option<String>,
    /// S3 bucket.
    #[arg(long, env = "FARM_TEST_S3_BUCKET", default_value = "matchfarm")]
    s3_bucket: String,
    /// S3 region.
    #[arg(long, env = "FARM_TEST_S3_REGION", default_value = "us-east-1")]
    s3_region: String,
    /// S3 access key.
    #[arg(long, env = "FARM_TEST_S3_ACCESS_KEY", default_value = "")]
    s3_access_key: String,
    /// S3 secret key.
    #[arg(long, env = "FARM_TEST_S3_SECRET_KEY", default_value = "", hide_env_values = true)]
    s3_secret_key: String,
}

impl Services {
    /// RabbitMQ's AMQP URL and management API, when both are configured.
    pub fn amqp(&self) -> Option<(&str, &str)> {
        self.amqp_url.as_deref().zip(self.rabbitmq_mgmt.as_deref())
    }

    /// Where the processes' objects go, for a run's own use: S3 when configured, else a
    /// local directory in `dir` (as [`Services::storage_env`] says).
    pub fn storage_config(&self, dir: &Path) -> farm_runtime::storage::StorageConfig {
        use farm_runtime::storage::StorageConfig;
        match &self.s3_endpoint {
            Some(endpoint) => StorageConfig::S3 {
                endpoint: endpoint.clone(),
                bucket: self.s3_bucket.clone(),
                region: self.s3_region.clone(),
                access_key: self.s3_access_key.clone(),
                secret_key: self.s3_secret_key.clone(),
                retry_secs: 60,
            },
            None => StorageConfig::Local { path: dir.join("objects") },
        }
    }

    /// The storage variables every process gets: S3 when configured, else a local
    /// directory they share.
    pub(crate) fn storage_env(&self, dir: &Path) -> Vec<(&'static str, String)> {
        match &self.s3_endpoint {
            Some(endpoint) => vec![
                ("FARM_STORAGE__KIND", "s3".to_owned()),
                ("FARM_STORAGE__ENDPOINT", endpoint.clone()),
                ("FARM_STORAGE__BUCKET", self.s3_bucket.clone()),
                ("FARM_STORAGE__REGION", self.s3_region.clone()),
                ("FARM_STORAGE__ACCESS_KEY", self.s3_access_key.clone()),
                ("FARM_STORAGE__SECRET_KEY", self.s3_secret_key.clone()),
            ],
            None => vec![
                ("FARM_STORAGE__KIND", "local".to_owned()),
                ("FARM_STORAGE__PATH", dir.join("objects").display().to_string()),
            ],
        }
    }
}

/// Sizes of the runs.
pub struct Plan {
    /// Echo bots in the round robin (every ordered pair plays).
    pub bots: usize,
    /// Games per ordered pair in fresh containers; process bots and reused containers
    /// play the same tournament, [`Variant::rounds`] times as long.
    pub games: u32,
    /// Turns per match.
    pub turns: u32,
}

/// One request to an HTTP/1.1 server: `(status, body)`.
pub(crate) async fn http(
    method: Method,
    authority: &str,
    path: &str,
    basic: Option<&str>,
    body: &'static str,
) -> anyhow::Result<(u16, String)> {
    let stream = tokio::net::TcpStream::connect(authority).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let driver = tokio::spawn(connection);
    let mut request = Request::builder().method(method).uri(path).header(hyper::header::HOST, authority);
    if let Some(credentials) = basic {
        request = request.header(hyper::header::AUTHORIZATION, format!("Basic {}", base64(credentials.as_bytes())));
    }
    let request = request.header(hyper::header::CONTENT_TYPE, "application/json").body(Full::new(Bytes::from(body)))?;
    let response = tokio::time::timeout(Duration::from_secs(30), sender.send_request(request)).await??;
    let status = response.status().as_u16();
    let body = String::from_utf8_lossy(&response.into_body().collect().await?.to_bytes()).into_owned();
    driver.abort();
    Ok((status, body))
}

/// Standard base64 with padding: HTTP Basic credentials.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::new();
    for chunk in bytes.chunks(3) {
        let group = chunk.iter().enumerate().fold(0u32, |group, (i, byte)| group | u32::from(*byte) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                text.push(char::from(ALPHABET[(group >> (18 - 6 * i) & 63) as usize]));
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// A RabbitMQ virtual host of one run, deleted when the run ends, with its workers'
/// identities.
pub struct Vhost {
    management: String,
    credentials: String,
    name: String,
    /// The AMQP URL that reaches it as the run's administrator.
    pub url: String,
    workers: Vec<String>,
}

impl Vhost {
    /// Creates the virtual host `name` on the broker of `amqp_url`, through its
    /// management API at `management`.
    pub async fn create(amqp_url: &str, management: &str, name: String) -> anyhow::Result<Self> {
        let rest = amqp_url.strip_prefix("amqp://").ok_or_else(|| anyhow::anyhow!("not an amqp:// URL"))?;
        let (credentials, _) = rest.split_once('@').unwrap_or(("guest:guest", rest));
        let management = management.trim_start_matches("http://").trim_end_matches('/').to_owned();
        let user = credentials.split(':').next().unwrap_or("guest");
        let everything = r#"{"configure":".*","write":".*","read":".*"}"#;
        for (path, body) in
            [(format!("/api/vhosts/{name}"), ""), (format!("/api/permissions/{name}/{user}"), everything)]
        {
            let (status, body) = http(Method::PUT, &management, &path, Some(credentials), body).await?;
            anyhow::ensure!((200..300).contains(&status), "PUT {path}: {status} {body}");
        }
        let base = amqp_url.rsplit_once('/').map_or(amqp_url, |(head, _)| head);
        Ok(Vhost {
            url: format!("{base}/{name}"),
            management,
            credentials: credentials.to_owned(),
            name,
            workers: Vec::new(),
        })
    }

    /// The management API as the run's administrator, for this virtual host.
    fn identities(&self) -> Management {
        let (user, password) = self.credentials.split_once(':').unwrap_or((&self.credentials, ""));
        Management::new(&format!("http://{}", self.management), user, password, &self.name)
    }

    /// The AMQP URL of the worker `name`, signed in as an identity of its own (as
    /// `farm-coordinator workers add` makes them), revoked with the virtual host.
    pub async fn worker_url(&mut self, name: &str) -> anyhow::Result<String> {
        let mut urls = self.worker_urls(&[name.to_owned()]).await?;
        urls.pop().ok_or_else(|| anyhow::anyhow!("no identity was made for {name}"))
    }

    /// [`Vhost::worker_url`] for each of `names`, in order, a few made at a time.
    pub async fn worker_urls(&mut self, names: &[String]) -> anyhow::Result<Vec<String>> {
        use futures_util::StreamExt;
        let (_, host) = self.url.split_once('@').ok_or_else(|| anyhow::anyhow!("no user in {}", self.url))?;
        let host = host.to_owned();
        let identities = &self.identities();
        let made: Vec<_> = futures_util::stream::iter(names)
            .map(|name| async move { (name, identities.add_worker(name).await) })
            .buffered(16)
            .collect()
            .await;
        let mut urls = Vec::with_capacity(names.len());
        for (name, password) in made {
            // Made or not, it is revoked with the virtual host.
            self.workers.push(name.clone());
            urls.push(format!("amqp://{name}:{}@{host}", password?));
        }
        Ok(urls)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A GET of the management API (`/api/...`) as the run's administrator, as JSON.
    pub async fn management_get(&self, path: &str) -> anyhow::Result<serde_json::Value> {
        let (status, body) = http(Method::GET, &self.management, path, Some(&self.credentials), "").await?;
        anyhow::ensure!(status == 200, "GET {path}: {status} {body}");
        Ok(serde_json::from_str(&body)?)
    }

    /// Revokes its workers' identities (a few at a time: a fleet's are thousands) and
    /// deletes it.
    pub async fn delete(self) {
        use futures_util::StreamExt;
        let identities = &self.identities();
        let revoked = futures_util::stream::iter(&self.workers)
            .map(|worker| async move { (worker, identities.revoke_worker(worker).await) })
            .buffer_unordered(16)
            .collect::<Vec<_>>()
            .await;
        for (worker, outcome) in revoked {
            if let Err(error) = outcome {
                eprintln!("warning: revoking the bench's worker {worker}: {error}");
            }
        }
        let path = format!("/api/vhosts/{}", self.name);
        if let Err(error) = http(Method::DELETE, &self.management, &path, Some(&self.credentials), "").await {
            eprintln!("warning: deleting the virtual host {}: {error}", self.name);
        }
    }
}

/// A `serve` process of this run.
pub(crate) struct Service {
    child: Child,
}

impl Service {
    pub(crate) fn start(binary: &Path, env: &[(&str, String)]) -> anyhow::Result<Self> {
        let child = Command::new(binary)
            .arg("serve")
            .envs(env.iter().map(|(key, value)| (*key, value.as_str())))
            // lapin logs a channel closing under the drain as an error: noise here.
            .env("RUST_LOG", "warn,lapin=off")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()?;
        Ok(Service { child })
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its peak resident memory so far (VmHWM), in MiB.
    pub(crate) fn peak_mib(&self) -> Option<f64> {
        procfs::memory_mib(self.child.id(), "VmHWM")
    }

    /// SIGTERM (a drain), then waits for it to exit.
    pub(crate) fn stop(mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn free_port() -> anyhow::Result<std::net::SocketAddr> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// Polls `ready` every 100 ms until it holds, failing after `limit`.
pub(crate) async fn until<F: Future<Output = bool>>(
    limit: Duration,
    what: &str,
    mut ready: impl FnMut() -> F,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !ready().await {
        anyhow::ensure!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// The tournament file `name`: a round robin of echo bots, run by command or by image.
fn tournament_file(dir: &Path, name: &str, plan: &Plan, games: u32, echo: &Path) -> anyhow::Result<PathBuf> {
    let mut text = format!(
        "name = \"{name}\"\ngame = \"botwars\"\nformat = \"round-robin\"\ngames_per_pairing = {games}\n\
         seed = 3\n[rules]\nmaxTurns = {}\n",
        plan.turns
    );
    for index in 0..plan.bots {
        text.push_str(&format!(
            "[[bots]]\nname = \"echo-{index}\"\ncommand = \"{}\"\nimage = \"{ECHO_IMAGE}\"\n",
            echo.display()
        ));
    }
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text)?;
    Ok(path)
}

/// Plays tournament `file` to its end; its progress then.
async fn play(client: &Client, file: &Path) -> anyhow::Result<Progress> {
    let started = Instant::now();
    let submitted = client.submit(file).await?;
    let status = format!("/api/tournaments/{}", submitted.id);
    loop {
        if let Ok(view) = client.get::<TournamentView>(&status).await
            && view.progress.finished()
        {
            anyhow::ensure!(
                view.progress.failed == 0,
                "{}: {} of {} matches failed",
                file.display(),
                view.progress.failed,
                view.progress.total
            );
            return Ok(view.progress);
        }
        anyhow::ensure!(started.elapsed() < RUN_LIMIT, "{} did not finish within {RUN_LIMIT:?}", file.display());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The most warm-up tournaments played before every worker has played a match.
const WARM_UP_ROUNDS: u32 = 10;

/// The sum of every series of the counter or gauge `name` in a metrics text.
pub(crate) fn metric_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|line| line.strip_prefix(name).is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' ')))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        // Not `sum`: a float sum of nothing is -0.
        .fold(0.0, |total, value| total + value)
}

/// The sum of every series of `name` in the `/metrics` of the worker at `authority`.
async fn worker_metric(authority: &str, name: &str) -> Option<f64> {
    let Ok((200, text)) = http(Method::GET, authority, "/metrics", None, "").await else { return None };
    Some(metric_sum(&text, name))
}

/// Warms every worker up: short tournaments of the same bots (`tournament`, given its
/// round) until every worker (metrics at `metrics`) has played a match, then until each
/// holds `prepared` containers waiting for the next. What a worker pays once, at its
/// start (its pool of containers made and started), is not what a match costs:
/// measured with it, a run of 120 matches charged each match a share of every worker's
/// pool (the CPU per match grew with the workers, 1.2x, 1.5x and 2.1x a process bot's
/// at 1, 2 and 4). A round may leave a worker out: one still reconnecting, or others
/// holding every match (each takes its slot's and its warm pool's).
async fn warm_up(
    client: &Client,
    tournament: impl Fn(u32) -> anyhow::Result<PathBuf>,
    metrics: &[String],
    prepared: f64,
) -> anyhow::Result<()> {
    for round in 1..=WARM_UP_ROUNDS {
        play(client, &tournament(round)?).await?;
        let mut played = true;
        for authority in metrics {
            played &= worker_metric(authority, "farm_worker_matches_total").await.is_some_and(|matches| matches > 0.0);
        }
        if played {
            break;
        }
        anyhow::ensure!(round < WARM_UP_ROUNDS, "a worker played none of {WARM_UP_ROUNDS} warm-up tournaments");
    }
    for authority in metrics {
        until(Duration::from_secs(120), "a worker's containers are prepared", || async {
            worker_metric(authority, "farm_worker_prepared_containers").await.is_some_and(|waiting| waiting >= prepared)
        })
        .await?;
    }
    Ok(())
}

#[derive(serde::Deserialize)]
struct TournamentView {
    progress: Progress,
}

/// How the bots of a run are launched: figures under `name`, workers with `sandbox` and
/// `docker.isolation = isolation`, each keeping `prepared` containers between matches;
/// the tournament plays `rounds` times the plan's games per pairing (a match in fresh
/// containers costs about 20 times one in reused ones: the others play more, for runs of
/// similar length, long enough to measure a few milliseconds per match).
struct Variant {
    name: &'static str,
    sandbox: &'static str,
    isolation: Option<&'static str>,
    prepared: f64,
    rounds: u32,
}

/// How many matches run at once on the host in each run: workers of one slot each.
const CONCURRENCY: [(usize, &str); 3] = [(1, "one_worker"), (2, "two_workers"), (4, "four_workers")];

/// The runs, in order: processes first, the ratios' denominator.
const VARIANTS: [Variant; 3] = [
    Variant { name: "process", sandbox: "local", isolation: None, prepared: 0.0, rounds: 4 },
    // One per seat: the two that played come back after their reset.
    Variant { name: "docker", sandbox: "docker", isolation: None, prepared: 2.0, rounds: 4 },
    // One waits between matches of fresh containers: the other seat's is made on the
    // match's path (half of them count as `cold` in farm_worker_containers_taken_total).
    Variant { name: "docker_fresh", sandbox: "docker", isolation: Some("fresh-container"), prepared: 1.0, rounds: 1 },
];

/// One run: a coordinator and `workers` workers, warmed up ([`warm_up`]), then the
/// tournament submitted and played to its end. Records the warm-up's time and CPU,
/// matches per second, CPU per match (by command) and peak memory under `path`.
async fn run_once(
    services: &Services,
    variant: &Variant,
    workers: usize,
    plan: &Plan,
    games: u32,
    figures: &mut Figures,
    path: &str,
) -> anyhow::Result<f64> {
    let (amqp_url, management) = match (&services.amqp_url, &services.rabbitmq_mgmt) {
        (Some(amqp), Some(management)) => (amqp, management),
        _ => anyhow::bail!("unreachable: checked by the caller"),
    };
    let (name, sandbox) = (variant.name, variant.sandbox);
    let dir = crate::scratch_dir(&format!("e2e-{name}-{workers}"))?;
    let mut vhost =
        Vhost::create(amqp_url, management, format!("farm-bench-{}-{name}-{workers}", std::process::id())).await?;
    let result = async {
        let storage = services.storage_env(&dir);
        let api = free_port()?;
        let mut env: Vec<(&str, String)> = vec![
            ("FARM_API_TOKEN", TOKEN.to_owned()),
            ("FARM_LISTEN", api.to_string()),
            ("FARM_AMQP_URL", vhost.url.clone()),
            ("FARM_LEDGER_PATH", dir.join("ledger.sqlite").display().to_string()),
            ("FARM_BOT_LAUNCH", sandbox.to_owned()),
        ];
        env.extend(storage.iter().cloned());
        let coordinator = Service::start(&bots::sibling("farm-coordinator").map_err(anyhow::Error::msg)?, &env)?;
        let client = Client::new(&format!("http://{api}"), Some(TOKEN.to_owned()))?;
        until(Duration::from_secs(60), "the coordinator answers", || async {
            client.get::<serde_json::Value>("/api/tournaments").await.is_ok()
        })
        .await?;
        let mut running = Vec::new();
        let mut worker_metrics = Vec::new();
        for index in 0..workers {
            let metrics = free_port()?;
            let id = format!("bench-{}-{name}-{index}", std::process::id());
            let mut env: Vec<(&str, String)> = vec![
                ("FARM_AMQP_URL", vhost.worker_url(&id).await?),
                ("FARM_WORKER_ID", id),
                ("FARM_SLOTS", "1".to_owned()),
                ("FARM_SANDBOX", sandbox.to_owned()),
                ("FARM_METRICS_LISTEN", metrics.to_string()),
            ];
            if let Some(isolation) = variant.isolation {
                env.push(("FARM_DOCKER__ISOLATION", isolation.to_owned()));
            }
            env.extend(storage.iter().cloned());
            let worker = Service::start(&bots::sibling("farm-worker").map_err(anyhow::Error::msg)?, &env)?;
            let authority = metrics.to_string();
            until(Duration::from_secs(60), "a worker consumes", || async {
                http(Method::GET, &authority, "/healthz", None, "").await.is_ok_and(|(status, _)| status == 200)
            })
            .await?;
            running.push(worker);
            worker_metrics.push(authority);
        }

        let echo = bots::sibling("bench-echo-bot").map_err(anyhow::Error::msg)?;
        let cpu_before = machine_cpu_seconds();
        let started = Instant::now();
        let warm_up_tournament = |round| tournament_file(&dir, &format!("farm-bench-warm-up-{round}"), plan, 1, &echo);
        warm_up(&client, warm_up_tournament, &worker_metrics, variant.prepared).await?;
        figures.number(&format!("{path}.warm_up_seconds"), started.elapsed().as_secs_f64(), "s");
        figures.number(&format!("{path}.warm_up_cpu_ms"), (machine_cpu_seconds() - cpu_before) * 1000.0, "ms");

        let file = tournament_file(&dir, "farm-bench", plan, games, &echo)?;
        let cpu_before = machine_cpu_seconds();
        let commands_before = cpu_by_command();
        let containers_before = containers_cpu_seconds();
        let started = Instant::now();
        let progress = play(&client, &file).await?;
        let seconds = started.elapsed().as_secs_f64();
        let cpu = machine_cpu_seconds() - cpu_before;
        let commands = cpu_by_command();
        let containers = containers_before.zip(containers_cpu_seconds()).map(|(before, after)| after - before);
        let rate = progress.total as f64 / seconds;
        figures.put(&format!("{path}.matches"), progress.total, progress.total.to_string());
        figures.number(&format!("{path}.matches_per_second"), rate, "matches/s");
        // Everything the machine ran meanwhile: coordinator, workers, RabbitMQ, and for
        // Docker bots dockerd, containerd, the shims and the containers.
        figures.number(&format!("{path}.cpu_ms_per_match"), cpu * 1000.0 / progress.total as f64, "ms");
        // Where it went, by command: the processes' own time and their reaped children's
        // (a process bot's is its worker's, a container's bot's its supervisor's, and an
        // exited shim's, with what it reaped, the machine's PID 1's: read with care).
        let mut accounted = 0.0;
        for (command, spent) in cpu_spent_by_command(&commands_before, &commands) {
            let per_match = spent * 1000.0 / progress.total as f64;
            if per_match >= 0.5 {
                accounted += spent;
                figures.number(&format!("{path}.cpu_ms_per_match_by_command.{command}"), per_match, "ms");
            }
        }
        let rest = (cpu - accounted).max(0.0) * 1000.0 / progress.total as f64;
        figures.number(&format!("{path}.cpu_ms_per_match_by_command.rest"), rest, "ms");
        // Every container's processes (supervisors and bots), exactly, from their cgroup.
        if let Some(containers) = containers.filter(|_| variant.sandbox == "docker") {
            figures.number(
                &format!("{path}.cpu_ms_per_match_in_containers"),
                containers * 1000.0 / progress.total as f64,
                "ms",
            );
        }
        let peak = running.iter().filter_map(Service::peak_mib).fold(0.0, f64::max);
        figures.number(&format!("{path}.worker_peak_rss_mib"), peak, "MiB");
        if let Some(peak) = coordinator.peak_mib() {
            figures.number(&format!("{path}.coordinator_peak_rss_mib"), peak, "MiB");
        }
        for worker in running {
            worker.stop();
        }
        coordinator.stop();
        Ok(rate)
    }
    .await;
    vhost.delete().await;
    result
}

/// Runs every [`VARIANTS`] at each [`CONCURRENCY`]; says why when a service is missing.
pub async fn run(services: &Services, plan: &Plan) -> anyhow::Result<Figures> {
    let mut figures = Figures::default();
    let missing = match (&services.amqp_url, &services.rabbitmq_mgmt) {
        (None, _) => Some(
            "RabbitMQ is not configured: set FARM_TEST_AMQP_URL and FARM_TEST_RABBITMQ_MGMT \
                           (eval \"$(scripts/services/rabbitmq.sh env)\") or --amqp-url and --rabbitmq-mgmt",
        ),
        (_, None) => Some("RabbitMQ's management API is not configured: FARM_TEST_RABBITMQ_MGMT or --rabbitmq-mgmt"),
        _ => None,
    };
    if let Some(why) = missing {
        for variant in &VARIANTS {
            figures.skipped(variant.name, why);
        }
        return Ok(figures);
    }
    let storage = if services.s3_endpoint.is_some() { "s3" } else { "local directory" };
    figures.put("storage", storage, storage.to_owned());
    figures.put("turns_per_match", plan.turns, plan.turns.to_string());
    let mut rates = Vec::new();
    for variant in &VARIANTS {
        let name = variant.name;
        if variant.sandbox == "docker"
            && let Err(why) = bots::docker("bench-e2e-check", &DockerSettings::default()).await
        {
            figures.skipped(name, &why);
            continue;
        }
        let mut by_concurrency = Vec::new();
        for (workers, label) in CONCURRENCY {
            let path = format!("{name}.{label}");
            let games = plan.games * variant.rounds;
            by_concurrency.push(run_once(services, variant, workers, plan, games, &mut figures, &path).await?);
        }
        for (rate, (_, label)) in by_concurrency.iter().zip(CONCURRENCY).skip(1) {
            figures.ratio(&format!("{name}.scaling_{label}_over_one"), rate / by_concurrency[0]);
        }
        rates.push((name, by_concurrency));
    }
    if let Some((_, process)) = rates.first().filter(|(name, _)| *name == "process") {
        for (name, by_concurrency) in &rates[1..] {
            for ((rate, process_rate), (_, label)) in by_concurrency.iter().zip(process).zip(CONCURRENCY) {
                figures.ratio(&format!("{name}_over_process.{label}"), rate / process_rate);
            }
        }
    }
    for (_, label) in CONCURRENCY {
        let cpu = |figures: &Figures, name: &str| figures.get(&format!("{name}.{label}.cpu_ms_per_match"));
        let Some(process) = cpu(&figures, "process") else { continue };
        for variant in &VARIANTS[1..] {
            if let Some(cpu) = cpu(&figures, variant.name) {
                figures.ratio(&format!("cpu_per_match_{}_over_process.{label}", variant.name), cpu / process);
            }
        }
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::base64;

    #[test]
    fn base64_pads_as_rfc_4648_says() {
        assert_eq!(base64(b"farm:farm"), "ZmFybTpmYXJt");
        assert_eq!(base64(b"guest:guest"), "Z3Vlc3Q6Z3Vlc3Q=");
        assert_eq!(base64(b"ab"), "YWI=");
    }
}
