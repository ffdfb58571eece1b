//! `farm-bench fleet`: a fleet of simulated workers against a real `farm-coordinator
//! serve`, a real RabbitMQ and the real object store, to find where the coordinator
//! bends as the fleet grows.
//!
//! Each point of the curve (`N@S`: N workers playing matches of S seconds on average)
//! gets a RabbitMQ virtual host, a ledger and a coordinator of its own, and N workers
//! ([`worker::SimulatedWorker`]), each signed in as a broker user of its own made as
//! `farm-coordinator workers add` makes them (or, with `--slots-per-connection K`,
//! workers of K slots on one connection and identity, as a real worker with K slots).
//! The farm plays what it plays in production at once: a round robin of many bots, an
//! SPRT, and a ladder that bots keep joining; page viewers poll them as the web pages do.
//!
//! After a warm-up (the longest match, so that every worker is busy), it measures for a
//! while: answers recorded per second against what the fleet asks (N / S), the job
//! latency from publication to record (the coordinator's histogram), the API's latency
//! under the pages' polling, the CPU and memory of the coordinator, RabbitMQ and the S3
//! server, and RabbitMQ's connections and channels. Then the fleet drains, and the
//! ledger is checked against what the fleet answered: every job answered is recorded
//! once, and nothing else.
//!
//! `--faults` adds a run that must finish a tournament while a group of workers is
//! killed and the broker restarted, and still record every job exactly once.

mod observe;
mod worker;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use farm_coordinator::api::NewBot;
use farm_coordinator::client::Client;
use farm_runtime::storage::Storage;
use tokio::sync::{Semaphore, watch};

use crate::e2e::{Service, Services, TOKEN, Vhost};
use crate::report::Figures;
use observe::{Sample, Sampler, Timing, Viewers, quantile};
use worker::{Fleet, MatchLength, SimulatedWorker};

/// One point of the curve: `workers` workers whose matches last `match_seconds` on
/// average. Written `N@S`.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    /// Simulated workers (slots, when several share a connection).
    pub workers: usize,
    /// Their matches' mean length, in seconds.
    pub match_seconds: f64,
}

impl std::str::FromStr for Point {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (workers, seconds) =
            text.split_once('@').ok_or_else(|| format!("{text:?}: expected WORKERS@SECONDS, e.g. 1000@60"))?;
        let workers: usize = workers.parse().map_err(|_| format!("{text:?}: {workers:?} is no number of workers"))?;
        let match_seconds: f64 =
            seconds.parse().map_err(|_| format!("{text:?}: {seconds:?} is no number of seconds"))?;
        if workers == 0 || !(match_seconds > 0.0 && match_seconds <= 3600.0) {
            return Err(format!("{text:?}: at least 1 worker, and matches of more than 0 and at most 3600 s"));
        }
        Ok(Point { workers, match_seconds })
    }
}

/// `farm-bench fleet`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// The points of the curve, as WORKERS@SECONDS (mean match length), comma-separated
    /// [default: 100@60,1000@60,10000@60; with --quick 20@1].
    #[arg(long, value_delimiter = ',', value_name = "N@S")]
    pub points: Vec<Point>,
    /// Slots per simulated worker: K workers' matches share one connection and broker
    /// identity, as a real worker with K slots (1: every worker has its own).
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub slots_per_connection: u16,
    /// Seconds measured at each point, after the warm-up (the longest match) [default:
    /// 120; with --quick 8].
    #[arg(long, value_name = "SECONDS")]
    pub measure_seconds: Option<u64>,
    /// How far match lengths spread around the mean: uniform in mean × (1 ± SPREAD).
    #[arg(long, default_value_t = 0.5, value_name = "SPREAD")]
    pub match_spread: f64,
    /// The share of matches whose replay is written to the store.
    #[arg(long, default_value_t = 1.0, value_name = "FRACTION")]
    pub replay_fraction: f64,
    /// Frames of play per replay (about 80 bytes each before compression).
    #[arg(long, default_value_t = 200, value_name = "FRAMES")]
    pub replay_frames: usize,
    /// Bots of the round robin (every ordered pair plays once) [default: 1000; with
    /// --quick 12].
    #[arg(long, value_name = "BOTS")]
    pub round_robin_bots: Option<usize>,
    /// Page viewers polling the tournaments as the web pages do.
    #[arg(long, default_value_t = 10, value_name = "VIEWERS")]
    pub viewers: usize,
    /// The share of matches audited (the coordinator's audits.fraction).
    #[arg(long, default_value_t = 0.02, value_name = "FRACTION")]
    pub audit_fraction: f64,
    /// Also run the fault test: a tournament played to its end while a group of workers
    /// is killed and the broker restarted; every job must be recorded exactly once.
    #[arg(long)]
    pub faults: bool,
}

/// The plan of one invocation: the options with `--quick`'s defaults filled in.
struct Plan {
    points: Vec<Point>,
    measure: Duration,
    round_robin_bots: usize,
    ladder_bots: usize,
    quick: bool,
}

impl Plan {
    fn of(options: &Options, quick: bool) -> Self {
        let default_points: &[Point] = if quick {
            &[Point { workers: 20, match_seconds: 1.0 }]
        } else {
            &[
                Point { workers: 100, match_seconds: 60.0 },
                Point { workers: 1000, match_seconds: 60.0 },
                Point { workers: 10_000, match_seconds: 60.0 },
            ]
        };
        Plan {
            points: if options.points.is_empty() { default_points.to_vec() } else { options.points.clone() },
            measure: Duration::from_secs(options.measure_seconds.unwrap_or(if quick { 8 } else { 120 })),
            round_robin_bots: options.round_robin_bots.unwrap_or(if quick { 12 } else { 1000 }),
            ladder_bots: if quick { 6 } else { 50 },
            quick,
        }
    }
}

/// Runs every point (and the fault test when asked); says why when a service is missing.
/// A point that fails keeps the figures it measured, with its error beside them
/// (`{point}.error`); the errors are returned too.
pub async fn run(services: &Services, options: &Options, quick: bool) -> anyhow::Result<(Figures, Vec<String>)> {
    let mut figures = Figures::default();
    let Some((amqp, management)) = services.amqp() else {
        figures.skipped(
            "fleet",
            "RabbitMQ is not configured: set FARM_TEST_AMQP_URL and FARM_TEST_RABBITMQ_MGMT \
             (eval \"$(scripts/services/rabbitmq.sh env)\") or --amqp-url and --rabbitmq-mgmt",
        );
        return Ok((figures, Vec::new()));
    };
    anyhow::ensure!(options.slots_per_connection >= 1, "--slots-per-connection: at least 1");
    anyhow::ensure!((0.0..=1.0).contains(&options.match_spread), "--match-spread: between 0 and 1");
    anyhow::ensure!((0.0..=1.0).contains(&options.replay_fraction), "--replay-fraction: between 0 and 1");
    let plan = Plan::of(options, quick);
    figures.put("slots_per_connection", options.slots_per_connection, options.slots_per_connection.to_string());
    figures.put("round_robin_bots", plan.round_robin_bots, plan.round_robin_bots.to_string());
    figures.number("measure_seconds", plan.measure.as_secs_f64(), "s");
    let mut errors = Vec::new();
    let mut failed = |figures: &mut Figures, name: &str, error: anyhow::Error| {
        eprintln!("farm-bench: fleet {name} failed: {error:#}");
        figures.put(&format!("{name}.error"), format!("{error:#}"), format!("{error:#}"));
        errors.push(format!("{name}: {error:#}"));
    };
    for point in &plan.points {
        let name = format!("w{}_m{}", point.workers, point.match_seconds);
        eprintln!("farm-bench: fleet {name}: {} workers, {} s matches ...", point.workers, point.match_seconds);
        let outcome = match Run::start(services, amqp, management, options, point, &name, Some(&plan)).await {
            Ok(mut run) => {
                let measured = run.measure(options, &plan, point, &mut figures, &name).await;
                run.finish(measured, &mut figures, &name).await
            }
            Err(error) => Err(error),
        };
        if let Err(error) = outcome {
            failed(&mut figures, &name, error);
        }
    }
    if options.faults
        && let Err(error) = faults(services, amqp, management, options, &plan, &mut figures).await
    {
        failed(&mut figures, "faults", error);
    }
    Ok((figures, errors))
}

/// A coordinator and a fleet, set up for one run.
struct Run {
    vhost: Option<Vhost>,
    coordinator: Option<Service>,
    client: Arc<Client>,
    sampler: Sampler,
    ledger: std::path::PathBuf,
    dir: std::path::PathBuf,
    fleet: Arc<Fleet>,
    workers: tokio::task::JoinSet<()>,
    /// Worker handles by connection: each one's kill switch.
    kills: Vec<watch::Sender<bool>>,
    drain: watch::Sender<bool>,
    /// The tournaments it plays, when it plays the production mix.
    workload: Option<Workload>,
}

impl Run {
    /// A coordinator, `plan`'s workload submitted to it (when given: before the fleet, so
    /// that the large insert is not timed against a fleet's load), and `point.workers`
    /// workers, all connected.
    async fn start(
        services: &Services,
        amqp: &str,
        management: &str,
        options: &Options,
        point: &Point,
        name: &str,
        plan: Option<&Plan>,
    ) -> anyhow::Result<Self> {
        let dir = crate::scratch_dir(&format!("fleet-{name}"))?;
        let length = MatchLength { mean: Duration::from_secs_f64(point.match_seconds), spread: options.match_spread };
        let storage = Storage::open(&services.storage_config(&dir))?;
        let fleet = Arc::new(Fleet::new(storage, options.replay_fraction, options.replay_frames, length));
        let vhost = Vhost::create(amqp, management, format!("farm-bench-{}-fleet-{name}", std::process::id())).await?;
        let mut run = Run::with_vhost(services, vhost, options, &dir, fleet).await?;
        let workload = match plan {
            Some(plan) => Workload::submit(&run.client, &run.dir, plan).await.map(Some),
            None => Ok(None),
        };
        run.workload = match workload {
            Ok(workload) => workload,
            Err(error) => {
                run.abandon().await;
                return Err(error);
            }
        };
        match run.connect_fleet(options, point).await {
            Ok(()) => Ok(run),
            Err(error) => {
                run.abandon().await;
                Err(error)
            }
        }
    }

    async fn with_vhost(
        services: &Services,
        vhost: Vhost,
        options: &Options,
        dir: &Path,
        fleet: Arc<Fleet>,
    ) -> anyhow::Result<Self> {
        let ledger = dir.join("ledger.sqlite");
        let api = crate::e2e::free_port()?;
        let mut env: Vec<(&str, String)> = vec![
            ("FARM_API_TOKEN", TOKEN.to_owned()),
            ("FARM_LISTEN", api.to_string()),
            ("FARM_AMQP_URL", vhost.url.clone()),
            ("FARM_LEDGER_PATH", ledger.display().to_string()),
            ("FARM_BOT_LAUNCH", "local".to_owned()),
            ("FARM_AUDITS__FRACTION", options.audit_fraction.to_string()),
        ];
        env.extend(services.storage_env(dir));
        let binary = crate::bots::sibling("farm-coordinator").map_err(anyhow::Error::msg)?;
        let coordinator = Service::start(&binary, &env)?;
        let client = Arc::new(Client::new(&format!("http://{api}"), Some(TOKEN.to_owned()))?);
        let ready = crate::e2e::until(Duration::from_secs(60), "the coordinator answers", || async {
            client.get::<serde_json::Value>("/api/tournaments").await.is_ok()
        })
        .await;
        let sampler = Sampler::new(coordinator.pid(), api.to_string(), &vhost).await;
        let run = Run {
            vhost: Some(vhost),
            coordinator: Some(coordinator),
            client,
            sampler,
            ledger,
            dir: dir.to_path_buf(),
            fleet,
            workers: tokio::task::JoinSet::new(),
            kills: Vec::new(),
            drain: watch::channel(false).0,
            workload: None,
        };
        if let Err(error) = ready {
            run.abandon().await;
            return Err(error);
        }
        Ok(run)
    }

    /// Makes the workers' identities and connects them all.
    async fn connect_fleet(&mut self, options: &Options, point: &Point) -> anyhow::Result<()> {
        let slots = usize::from(options.slots_per_connection);
        let connections = point.workers.div_ceil(slots);
        let names: Vec<String> = (0..connections).map(|index| format!("sim-{}-{index}", std::process::id())).collect();
        let started = Instant::now();
        let vhost = self.vhost.as_mut().ok_or_else(|| anyhow::anyhow!("the run has no virtual host"))?;
        let urls = vhost.worker_urls(&names).await?;
        eprintln!("farm-bench: fleet: {connections} identities made in {:.1} s", started.elapsed().as_secs_f64());
        let connected = Arc::new(Semaphore::new(0));
        let started = Instant::now();
        for (index, (name, url)) in names.into_iter().zip(urls).enumerate() {
            let slots = slots.min(point.workers - index * slots) as u16;
            let worker = Arc::new(SimulatedWorker::new(name, url, slots, index as u64));
            let (kill, killed) = watch::channel(false);
            self.kills.push(kill);
            let run = worker.run(Arc::clone(&self.fleet), Arc::clone(&connected), self.drain.subscribe(), killed);
            self.workers.spawn(run);
        }
        let limit = Duration::from_secs(60 + connections as u64 / 20);
        let all = u32::try_from(connections)?;
        tokio::time::timeout(limit, connected.acquire_many(all))
            .await
            .map_err(|_| anyhow::anyhow!("{connections} workers did not all connect within {limit:?}"))??
            .forget();
        eprintln!("farm-bench: fleet: {connections} connections made in {:.1} s", started.elapsed().as_secs_f64());
        Ok(())
    }

    /// Submits the workload, waits out the warm-up, and measures.
    async fn measure(
        &mut self,
        options: &Options,
        plan: &Plan,
        point: &Point,
        figures: &mut Figures,
        name: &str,
    ) -> anyhow::Result<()> {
        let workload = self.workload.as_ref().ok_or_else(|| anyhow::anyhow!("the run has no workload"))?;
        figures.number(&format!("{name}.round_robin_jobs"), workload.round_robin_jobs as f64, "jobs");
        let arrivals = workload.ladder_arrivals(Arc::clone(&self.client));
        let vhost = self.vhost.as_ref().ok_or_else(|| anyhow::anyhow!("the run has no virtual host"))?;
        let warm_up = self.fleet.length.longest() + Duration::from_secs(5);
        tokio::time::sleep(warm_up).await;
        let watched = [
            ("round_robin", workload.ids[0].clone()),
            ("sprt", workload.ids[1].clone()),
            ("ladder", workload.ids[2].clone()),
        ];
        let viewers = Viewers::start(Arc::clone(&self.client), &watched, options.viewers);
        let puts_before = self.fleet.counts.puts.load(Ordering::Relaxed);
        let before = self.sampler.sample(vhost).await?;
        let mut peak = before.clone();
        let end = Instant::now() + plan.measure;
        while Instant::now() < end {
            tokio::time::sleep(Duration::from_secs(5).min(end.saturating_duration_since(Instant::now()))).await;
            let sample = self.sampler.sample(vhost).await?;
            peak.coordinator_rss_mib = peak.coordinator_rss_mib.max(sample.coordinator_rss_mib);
            peak.rabbitmq_mib = peak.rabbitmq_mib.max(sample.rabbitmq_mib);
            for (peak, now) in peak.rabbitmq_objects.iter_mut().zip(sample.rabbitmq_objects) {
                *peak = peak.max(now);
            }
            peak.at = sample.at;
        }
        let after = self.sampler.sample(vhost).await?;
        let timings = viewers.stop().await;
        arrivals.abort();
        let puts = self.fleet.counts.puts.load(Ordering::Relaxed) - puts_before;
        report_point(figures, name, point, options, &before, &after, &peak, &timings, puts);
        Ok(())
    }

    /// Drains the fleet, lets the coordinator record what is left, stops it and checks
    /// the ledger against what the fleet answered; then removes the run.
    async fn finish(mut self, outcome: anyhow::Result<()>, figures: &mut Figures, name: &str) -> anyhow::Result<()> {
        let checked = match outcome {
            Ok(()) => self.drain_and_check(figures, name).await,
            Err(error) => Err(error),
        };
        self.abandon().await;
        checked
    }

    async fn drain_and_check(&mut self, figures: &mut Figures, name: &str) -> anyhow::Result<()> {
        let draining = Instant::now();
        self.drain.send_replace(true);
        // A fleet's drain is a notice and a requeue per match in play: thousands at once.
        let limit = Duration::from_secs(600);
        tokio::time::timeout(limit, async { while self.workers.join_next().await.is_some() {} })
            .await
            .map_err(|_| anyhow::anyhow!("the fleet did not drain within {limit:?}"))?;
        let vhost = self.vhost.as_ref().ok_or_else(|| anyhow::anyhow!("the run has no virtual host"))?;
        // Every answer the fleet sent is in before the coordinator stops.
        let path = format!("/api/queues/{}/farm.results", farm_coordinator::client::percent_encode(vhost.name()));
        crate::e2e::until(limit, "the coordinator takes every answer left in farm.results", || async {
            vhost.management_get(&path).await.is_ok_and(|queue| queue["messages"].as_u64() == Some(0))
        })
        .await?;
        figures.number(&format!("{name}.drain_seconds"), draining.elapsed().as_secs_f64(), "s");
        let last = self.sampler.sample(vhost).await?;
        figures.put(&format!("{name}.refused_answers"), last.refused as u64, last.refused.to_string());
        if let Some(coordinator) = self.coordinator.take() {
            coordinator.stop();
        }
        let check = check_ledger(&self.ledger, &self.fleet)?;
        check.report(figures, name);
        let counts = &self.fleet.counts;
        let (verdicts, mismatches) =
            (counts.verdicts.load(Ordering::Relaxed), counts.mismatches.load(Ordering::Relaxed));
        figures.put(&format!("{name}.audit_verdicts"), verdicts, verdicts.to_string());
        anyhow::ensure!(mismatches == 0, "{name}: {mismatches} audits found a stored replay that does not match");
        let quarantined = counts.quarantined.load(Ordering::Relaxed);
        anyhow::ensure!(quarantined == 0, "{name}: {quarantined} simulated workers were quarantined");
        anyhow::ensure!(last.refused == 0.0, "{name}: the coordinator refused {} answers of the fleet", last.refused);
        anyhow::ensure!(check.exactly_once(), "{name}: not every answer was recorded exactly once: {check:?}");
        Ok(())
    }

    /// Kills what is left of the fleet, stops the coordinator and removes the virtual
    /// host with its identities.
    async fn abandon(mut self) {
        for kill in &self.kills {
            kill.send_replace(true);
        }
        self.workers.abort_all();
        while self.workers.join_next().await.is_some() {}
        if let Some(coordinator) = self.coordinator.take() {
            coordinator.stop();
        }
        if let Some(vhost) = self.vhost.take() {
            vhost.delete().await;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The figures of one point, from the readings at the start and end of its window.
#[allow(clippy::too_many_arguments)]
fn report_point(
    figures: &mut Figures,
    name: &str,
    point: &Point,
    options: &Options,
    before: &Sample,
    after: &Sample,
    peak: &Sample,
    timings: &[Timing],
    puts: u64,
) {
    let seconds = match (before.at, after.at) {
        (Some(start), Some(end)) => end.duration_since(start).as_secs_f64().max(1e-9),
        _ => return,
    };
    let path = |figure: &str| format!("{name}.{figure}");
    let demand = point.workers as f64 / point.match_seconds;
    let rate = (after.recorded - before.recorded) / seconds;
    figures.put(&path("workers"), point.workers, point.workers.to_string());
    let connections = point.workers.div_ceil(usize::from(options.slots_per_connection));
    figures.put(&path("connections"), connections, connections.to_string());
    figures.number(&path("match_seconds"), point.match_seconds, "s");
    figures.number(&path("demand_results_per_second"), demand, "results/s");
    figures.number(&path("results_per_second"), rate, "results/s");
    figures.ratio(&path("recorded_over_demand"), rate / demand);
    for (label, q) in [("p50", 0.5), ("p99", 0.99)] {
        if let Some(latency) = quantile(&before.latency, &after.latency, q) {
            figures.number(&path(&format!("job_latency_{label}_seconds")), latency, "s");
        }
    }
    let failed = timings.iter().filter(|timing| !timing.ok).count();
    let mut routes: Vec<&str> = timings.iter().map(|timing| timing.route.as_str()).collect();
    routes.sort_unstable();
    routes.dedup();
    if !timings.is_empty() {
        figures.put(&path("api.requests"), timings.len(), timings.len().to_string());
        figures.put(&path("api.failed"), failed, failed.to_string());
        let all: Vec<Duration> = timings.iter().map(|timing| timing.took).collect();
        figures.number(&path("api.p50_ms"), millis_at(all.clone(), 0.5), "ms");
        figures.number(&path("api.p99_ms"), millis_at(all, 0.99), "ms");
    }
    // Which request is slow, per tournament kind.
    for route in routes {
        let took: Vec<Duration> =
            timings.iter().filter(|timing| timing.route == route).map(|timing| timing.took).collect();
        figures.number(&path(&format!("api.by_route.{route}_p99_ms")), millis_at(took, 0.99), "ms");
    }
    let cpu = |of: fn(&observe::Processes) -> f64| (of(&after.cpu) - of(&before.cpu)) / seconds;
    figures.number(&path("coordinator.cpu_cores"), cpu(|p| p.coordinator), "cores");
    figures.number(&path("coordinator.rss_mib"), peak.coordinator_rss_mib, "MiB");
    figures.number(&path("rabbitmq.cpu_cores"), cpu(|p| p.rabbitmq), "cores");
    figures.number(&path("rabbitmq.memory_mib"), peak.rabbitmq_mib, "MiB");
    for (index, object) in ["connections", "channels", "queues", "consumers"].into_iter().enumerate() {
        let count = peak.rabbitmq_objects[index] as u64;
        figures.put(&path(&format!("rabbitmq.{object}")), count, count.to_string());
    }
    figures.number(&path("s3.cpu_cores"), cpu(|p| p.s3), "cores");
    figures.number(&path("s3.puts_per_second"), puts as f64 / seconds, "puts/s");
    figures.number(&path("fleet.cpu_cores"), cpu(|p| p.fleet), "cores");
    figures.number(&path("machine.cpu_cores"), cpu(|p| p.machine), "cores");
}

/// The `q` quantile of `times` (nearest rank), in milliseconds.
fn millis_at(mut times: Vec<Duration>, q: f64) -> f64 {
    times.sort_unstable();
    times.get(((times.len().max(1) - 1) as f64 * q).round() as usize).map_or(0.0, |took| took.as_secs_f64() * 1000.0)
}

/// The tournaments of a run: a round robin, an SPRT and a ladder.
struct Workload {
    ids: Vec<String>,
    round_robin_jobs: u64,
    ladder: String,
}

impl Workload {
    /// Writes and submits them.
    async fn submit(client: &Client, dir: &Path, plan: &Plan) -> anyhow::Result<Self> {
        let mut round_robin =
            "name = \"fleet round robin\"\ngame = \"botwars\"\nformat = \"round-robin\"\nseed = 1\n".to_owned();
        for index in 0..plan.round_robin_bots {
            round_robin.push_str(&format!("[[bots]]\nname = \"rr-{index}\"\nbuiltin = \"random\"\n"));
        }
        let sprt = "name = \"fleet sprt\"\ngame = \"botwars\"\nformat = \"sprt\"\ncandidate = \"gatherer\"\n\
                    baseline = \"random\"\nelo0 = 0\nelo1 = 5\nmax_matches = 1000000\nqueue_depth = 64\nseed = 3\n\
                    [[bots]]\nname = \"random\"\nbuiltin = \"random\"\n[[bots]]\nname = \"gatherer\"\nbuiltin = \"gatherer\"\n";
        let mut ladder =
            "name = \"fleet ladder\"\ngame = \"botwars\"\nformat = \"ladder\"\nqueue_depth = 256\nseed = 5\n"
                .to_owned();
        for index in 0..plan.ladder_bots {
            ladder.push_str(&format!("[[bots]]\nname = \"ladder-{index}\"\nbuiltin = \"random\"\n"));
        }
        let mut ids = Vec::new();
        let mut round_robin_jobs = 0;
        for (file, text) in [("round-robin.toml", round_robin), ("sprt.toml", sprt.to_owned()), ("ladder.toml", ladder)]
        {
            let path = dir.join(file);
            std::fs::write(&path, text)?;
            let started = Instant::now();
            let submitted = client.submit(&path).await?;
            if file == "round-robin.toml" {
                round_robin_jobs = submitted.jobs;
                eprintln!(
                    "farm-bench: fleet: {} round-robin jobs submitted in {:.1} s",
                    submitted.jobs,
                    started.elapsed().as_secs_f64()
                );
            }
            ids.push(submitted.id);
        }
        let ladder = ids[2].clone();
        Ok(Workload { ids, round_robin_jobs, ladder })
    }

    /// Bots joining the ladder as submissions arrive: one every 5 s, every third a new
    /// version of the one before it.
    fn ladder_arrivals(&self, client: Arc<Client>) -> tokio::task::JoinHandle<()> {
        let ladder = self.ladder.clone();
        tokio::spawn(async move {
            for index in 0u32.. {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let replaces = (index % 3 == 2).then(|| format!("arrival-{}", index - 1));
                let new = serde_json::json!({
                    "bot": { "name": format!("arrival-{index}"), "builtin": "random" },
                    "replaces": replaces,
                });
                let Ok(new) = serde_json::from_value::<NewBot>(new) else { return };
                if let Err(error) = client.add_bot(&ladder, &new).await {
                    eprintln!("warning: a bot could not join the fleet's ladder: {error}");
                }
            }
        })
    }
}

/// The ledger against what the fleet answered.
#[derive(Debug, Default)]
struct LedgerCheck {
    /// Jobs the fleet answered with a confirmed result.
    answered: usize,
    /// Of those, answered more than once (a redelivery after a lost ack).
    answered_twice: usize,
    /// Jobs recorded as done.
    recorded: usize,
    /// Result documents in the ledger.
    results: usize,
    /// Jobs recorded as failed: a simulated worker fails none, so these are dead
    /// letters (deliveries past the queue's limit), with their reasons (the commonest
    /// first, with their counts).
    failed: usize,
    failed_reasons: Vec<(String, i64)>,
    /// Duplicates the coordinator counted and dropped.
    duplicates: u64,
    /// Jobs answered (confirmed) but not recorded.
    lost: usize,
    /// Jobs recorded that the fleet never answered.
    unexplained: usize,
}

impl LedgerCheck {
    fn exactly_once(&self) -> bool {
        self.lost == 0 && self.unexplained == 0 && self.results == self.recorded
    }

    fn report(&self, figures: &mut Figures, name: &str) {
        let path = |figure: &str| format!("{name}.exactly_once.{figure}");
        figures.put(&path("answered"), self.answered, self.answered.to_string());
        figures.put(&path("recorded"), self.recorded, self.recorded.to_string());
        figures.put(&path("answered_twice"), self.answered_twice, self.answered_twice.to_string());
        figures.put(&path("duplicates_dropped"), self.duplicates, self.duplicates.to_string());
        figures.put(&path("lost"), self.lost, self.lost.to_string());
        figures.put(&path("unexplained"), self.unexplained, self.unexplained.to_string());
        figures.put(&path("failed"), self.failed, self.failed.to_string());
        for (index, (reason, count)) in self.failed_reasons.iter().enumerate() {
            figures.put(
                &path(&format!("failed_reason_{index}")),
                format!("{count} x {reason}"),
                format!("{count} x {reason}"),
            );
        }
        figures.put(&path("holds"), self.exactly_once(), self.exactly_once().to_string());
    }
}

/// Reads the (stopped) coordinator's ledger and compares it with the fleet's answers.
fn check_ledger(ledger: &Path, fleet: &Fleet) -> anyhow::Result<LedgerCheck> {
    let connection = rusqlite::Connection::open_with_flags(ledger, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let done: HashSet<String> = connection
        .prepare("SELECT job_id FROM jobs WHERE state = 'done'")?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    let count = |sql: &str| connection.query_row(sql, [], |row| row.get::<_, i64>(0));
    let answered = fleet.answered();
    let confirmed: HashSet<&String> =
        answered.iter().filter(|(_, answers)| answers.confirmed > 0).map(|(job, _)| job).collect();
    Ok(LedgerCheck {
        answered: confirmed.len(),
        answered_twice: answered.values().filter(|answers| answers.confirmed > 1).count(),
        recorded: done.len(),
        // The results of done jobs: one each (its primary key allows no second).
        results: usize::try_from(count("SELECT count(*) FROM results JOIN jobs USING (job_id) WHERE state = 'done'")?)?,
        failed: usize::try_from(count("SELECT count(*) FROM jobs WHERE state = 'failed'")?)?,
        failed_reasons: connection
            .prepare(
                "SELECT coalesce(reason, ''), count(*) FROM jobs WHERE state = 'failed'
                 GROUP BY reason ORDER BY count(*) DESC LIMIT 3",
            )?
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<_, _>>()?,
        duplicates: u64::try_from(count("SELECT coalesce(sum(duplicates), 0) FROM tournaments")?)?,
        lost: confirmed.iter().filter(|job| !done.contains(job.as_str())).count(),
        unexplained: done.iter().filter(|job| !answered.contains_key(*job)).count(),
    })
}

/// The fault test: a round robin played to its end by `workers` workers on short
/// matches while a fifth of them are killed (their matches in flight lost, redelivered
/// to others) and, later, the broker restarted (every worker and the coordinator
/// reconnect); every job must be recorded exactly once.
async fn faults(
    services: &Services,
    amqp: &str,
    management: &str,
    options: &Options,
    plan: &Plan,
    figures: &mut Figures,
) -> anyhow::Result<()> {
    let script = std::env::var("FARM_TEST_RABBITMQ_SCRIPT").map_err(|_| {
        anyhow::anyhow!(
            "the fault test restarts the broker: set FARM_TEST_RABBITMQ_SCRIPT (scripts/services/rabbitmq.sh env)"
        )
    })?;
    let (workers, bots) = if plan.quick { (20, 16) } else { (200, 80) };
    let point = Point { workers, match_seconds: 0.5 };
    let name = "faults";
    eprintln!(
        "farm-bench: fleet faults: {workers} workers, a {bots}-bot round robin, a group killed, the broker restarted"
    );
    let options = Options { slots_per_connection: 1, ..options.clone() };
    let run = Run::start(services, amqp, management, &options, &point, name, None).await?;
    let outcome = async {
        let mut file = "name = \"fleet faults\"\ngame = \"botwars\"\nformat = \"round-robin\"\nseed = 9\n".to_owned();
        for index in 0..bots {
            file.push_str(&format!("[[bots]]\nname = \"f-{index}\"\nbuiltin = \"random\"\n"));
        }
        let path = run.dir.join("faults.toml");
        std::fs::write(&path, file)?;
        let submitted = run.client.submit(&path).await?;
        let status = format!("/api/tournaments/{}", submitted.id);
        let done = |client: Arc<Client>, share: f64| {
            let status = status.clone();
            async move {
                client.get::<serde_json::Value>(&status).await.is_ok_and(|view| {
                    let progress = &view["progress"];
                    let answered = progress["done"].as_u64().unwrap_or(0) + progress["failed"].as_u64().unwrap_or(0);
                    answered as f64 >= share * progress["total"].as_u64().unwrap_or(u64::MAX) as f64
                })
            }
        };
        let limit = Duration::from_secs(600);
        crate::e2e::until(limit, "a quarter of the tournament", || done(Arc::clone(&run.client), 0.25)).await?;
        // A group killed in the middle of their matches.
        let group = run.kills.len() / 5;
        for kill in &run.kills[..group] {
            kill.send_replace(true);
        }
        crate::e2e::until(limit, "half of the tournament", || done(Arc::clone(&run.client), 0.5)).await?;
        let restarted = tokio::process::Command::new(&script).arg("restart-app").status().await?;
        anyhow::ensure!(restarted.success(), "{script} restart-app failed: {restarted}");
        crate::e2e::until(limit, "the whole tournament", || done(Arc::clone(&run.client), 1.0)).await?;
        figures.put(&format!("{name}.jobs"), submitted.jobs, submitted.jobs.to_string());
        figures.put(&format!("{name}.workers_killed"), group, group.to_string());
        let reconnects = run.fleet.counts.reconnects.load(Ordering::Relaxed);
        figures.put(&format!("{name}.reconnects"), reconnects, reconnects.to_string());
        let notices = run.fleet.counts.notices.load(Ordering::Relaxed);
        figures.put(&format!("{name}.returned_notices"), notices, notices.to_string());
        anyhow::ensure!(reconnects > 0, "the broker restarted, yet no simulated worker reconnected");
        Ok(submitted.jobs)
    }
    .await;
    let jobs = match outcome {
        Ok(jobs) => jobs,
        Err(error) => {
            run.abandon().await;
            return Err(error);
        }
    };
    run.finish(Ok(()), figures, name).await?;
    let recorded = figures.get(&format!("{name}.exactly_once.recorded")).unwrap_or(0.0);
    anyhow::ensure!(recorded == jobs as f64, "faults: {recorded} of {jobs} jobs recorded");
    Ok(())
}
