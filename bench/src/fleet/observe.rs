//! What a fleet run watches: the coordinator's own metrics (results recorded, their
//! latency, answers refused), the CPU and memory of the coordinator, RabbitMQ and the
//! S3 server, RabbitMQ's connections and channels, and the API as the web pages poll it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use farm_coordinator::client::Client;
use tokio::sync::watch;

use crate::e2e::{Vhost, metric_sum};
use crate::procfs::{machine_cpu_seconds, memory_mib, process_cpu_seconds, process_named};

/// How often a tournament page asks again (coordinator/web/tournament.js's `POLL_MS`).
const POLL: Duration = Duration::from_secs(2);

/// One reading of everything watched.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// When it was taken.
    pub at: Option<Instant>,
    /// Answers recorded (`farm_coordinator_results_ingested_total`, all outcomes).
    pub recorded: f64,
    /// Results refused as not fitting their job, plus forged answers.
    pub refused: f64,
    /// The job latency histogram: (upper bound, cumulative count).
    pub latency: Vec<(f64, f64)>,
    /// CPU seconds of the coordinator, RabbitMQ and the S3 server so far.
    pub cpu: Processes,
    /// The coordinator's resident memory, in MiB.
    pub coordinator_rss_mib: f64,
    /// RabbitMQ's memory in use, in MiB.
    pub rabbitmq_mib: f64,
    /// RabbitMQ's connections, channels, queues and consumers.
    pub rabbitmq_objects: [f64; 4],
}

/// CPU seconds per process watched.
#[derive(Debug, Clone, Copy, Default)]
pub struct Processes {
    /// `farm-coordinator serve`.
    pub coordinator: f64,
    /// RabbitMQ's Erlang VM.
    pub rabbitmq: f64,
    /// The S3 server (0 without one on this machine).
    pub s3: f64,
    /// This process: the simulated fleet itself.
    pub fleet: f64,
    /// The whole machine.
    pub machine: f64,
}

/// Reads [`Sample`]s of one run.
pub struct Sampler {
    /// The coordinator's process id.
    pub coordinator: u32,
    /// Its API and metrics, as `host:port`.
    pub api: String,
    rabbitmq: Option<u32>,
    s3: Option<u32>,
}

impl Sampler {
    /// Watches the coordinator `coordinator` serving on `api`, and the broker of `vhost`.
    pub async fn new(coordinator: u32, api: String, vhost: &Vhost) -> Self {
        let nodes = vhost.management_get("/api/nodes").await.unwrap_or_default();
        let rabbitmq = nodes[0]["os_pid"].as_str().and_then(|pid| pid.parse().ok());
        Sampler { coordinator, api, rabbitmq, s3: process_named("farm-s3") }
    }

    /// A reading now.
    pub async fn sample(&self, vhost: &Vhost) -> anyhow::Result<Sample> {
        let (status, metrics) = crate::e2e::http(hyper::Method::GET, &self.api, "/metrics", None, "").await?;
        anyhow::ensure!(status == 200, "GET /metrics: {status}");
        let overview = vhost.management_get("/api/overview").await?;
        let nodes = vhost.management_get("/api/nodes").await?;
        let objects = &overview["object_totals"];
        let count = |key: &str| objects[key].as_f64().unwrap_or(0.0);
        Ok(Sample {
            at: Some(Instant::now()),
            recorded: metric_sum(&metrics, "farm_coordinator_results_ingested_total"),
            refused: metric_sum(&metrics, "farm_coordinator_results_dropped_total")
                + metric_sum(&metrics, "farm_coordinator_forged_answers_total"),
            latency: histogram(&metrics, "farm_coordinator_job_latency_seconds"),
            cpu: Processes {
                coordinator: process_cpu_seconds(self.coordinator).unwrap_or(0.0),
                rabbitmq: self.rabbitmq.and_then(process_cpu_seconds).unwrap_or(0.0),
                s3: self.s3.and_then(process_cpu_seconds).unwrap_or(0.0),
                fleet: process_cpu_seconds(std::process::id()).unwrap_or(0.0),
                machine: machine_cpu_seconds(),
            },
            coordinator_rss_mib: memory_mib(self.coordinator, "VmRSS").unwrap_or(0.0),
            rabbitmq_mib: nodes[0]["mem_used"].as_f64().unwrap_or(0.0) / (1024.0 * 1024.0),
            rabbitmq_objects: [count("connections"), count("channels"), count("queues"), count("consumers")],
        })
    }
}

/// The buckets of the histogram `name`: (upper bound, cumulative count), ascending.
fn histogram(text: &str, name: &str) -> Vec<(f64, f64)> {
    let prefix = format!("{name}_bucket{{le=\"");
    let mut buckets: Vec<(f64, f64)> = text
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(&prefix)?;
            let (bound, rest) = rest.split_once('"')?;
            let bound = if bound == "+Inf" { f64::INFINITY } else { bound.parse().ok()? };
            Some((bound, rest.rsplit_once(' ')?.1.parse().ok()?))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    buckets
}

/// The `q` quantile of what a histogram counted between `before` and `after`,
/// interpolated within its bucket as Prometheus's `histogram_quantile` does; `None`
/// when nothing was counted.
pub fn quantile(before: &[(f64, f64)], after: &[(f64, f64)], q: f64) -> Option<f64> {
    let counted = |bound: f64, cumulative: f64| {
        cumulative - before.iter().find(|(b, _)| *b == bound).map_or(0.0, |(_, count)| *count)
    };
    let deltas: Vec<(f64, f64)> =
        after.iter().map(|&(bound, cumulative)| (bound, counted(bound, cumulative))).collect();
    let total = deltas.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let target = q * total;
    let mut lower = (0.0, 0.0);
    for &(bound, cumulative) in &deltas {
        if cumulative >= target {
            if bound.is_infinite() {
                return Some(lower.0);
            }
            let share = if cumulative > lower.1 { (target - lower.1) / (cumulative - lower.1) } else { 1.0 };
            return Some(lower.0 + (bound - lower.0) * share);
        }
        lower = (bound, cumulative);
    }
    None
}

/// One API request of a viewer.
#[derive(Debug, Clone)]
pub struct Timing {
    /// What it asked: the tournament's kind and the page's request
    /// (`round_robin.standings`, say).
    pub route: String,
    /// How long it took.
    pub took: Duration,
    /// Whether it succeeded.
    pub ok: bool,
}

/// Page viewers: each polls one tournament as its page does (the tournament, its
/// running matches, and as answers keep coming its standings, pairings and failures)
/// every [`POLL`], timing every request.
pub struct Viewers {
    stop: watch::Sender<bool>,
    tasks: tokio::task::JoinSet<Vec<Timing>>,
}

impl Viewers {
    /// `count` viewers of `tournaments` (kind, id), in turn.
    pub fn start(client: Arc<Client>, tournaments: &[(&'static str, String)], count: usize) -> Self {
        let (stop, stopped) = watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        for index in 0..count {
            let (kind, id) = &tournaments[index % tournaments.len()];
            let base = format!("/api/tournaments/{id}");
            let requests = [
                ("tournament", base.clone()),
                ("running", format!("{base}/matches?status=running&limit=50")),
                ("standings", format!("{base}/standings")),
                ("pairings", format!("{base}/pairings")),
                ("failures", format!("{base}/matches?failures=true&limit=10")),
            ]
            .map(|(request, path)| (format!("{kind}.{request}"), path));
            let (client, mut stopped) = (Arc::clone(&client), stopped.clone());
            tasks.spawn(async move {
                let mut timings = Vec::new();
                loop {
                    for (route, path) in &requests {
                        let started = Instant::now();
                        // Read whole, not parsed: a page's parse is the browser's cost,
                        // and here it would take the cores the farm is measured on.
                        let ok = client.get_text(path).await.is_ok();
                        timings.push(Timing { route: route.clone(), took: started.elapsed(), ok });
                    }
                    tokio::select! {
                        () = tokio::time::sleep(POLL) => {}
                        _ = stopped.wait_for(|stop| *stop) => return timings,
                    }
                }
            });
        }
        Viewers { stop, tasks }
    }

    /// Stops them; every request's time and whether it succeeded.
    pub async fn stop(mut self) -> Vec<Timing> {
        self.stop.send_replace(true);
        let mut timings = Vec::new();
        while let Some(done) = self.tasks.join_next().await {
            timings.extend(done.unwrap_or_default());
        }
        timings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const METRICS: &str = "\
# TYPE farm_coordinator_job_latency_seconds histogram
farm_coordinator_job_latency_seconds_bucket{le=\"1\"} 10
farm_coordinator_job_latency_seconds_bucket{le=\"2\"} 30
farm_coordinator_job_latency_seconds_bucket{le=\"+Inf\"} 40
farm_coordinator_job_latency_seconds_sum 70
farm_coordinator_job_latency_seconds_count 40
farm_coordinator_results_ingested_total{outcome=\"completed\"} 38
farm_coordinator_results_ingested_total{outcome=\"failed\"} 2
farm_coordinator_results_ingested_totals 99
";

    #[test]
    fn counters_sum_their_series_and_quantiles_interpolate_within_buckets() {
        assert_eq!(metric_sum(METRICS, "farm_coordinator_results_ingested_total"), 40.0);
        let after = histogram(METRICS, "farm_coordinator_job_latency_seconds");
        assert_eq!(after, [(1.0, 10.0), (2.0, 30.0), (f64::INFINITY, 40.0)]);
        // 40 counted: the median (20th) lies halfway through the (1, 2] bucket.
        assert_eq!(quantile(&[], &after, 0.5), Some(1.5));
        // Past the last finite bound: that bound.
        assert_eq!(quantile(&[], &after, 0.99), Some(2.0));
        // Only what was counted since `before`: 20 in (1, 2], none elsewhere.
        let before = [(1.0, 10.0), (2.0, 10.0), (f64::INFINITY, 20.0)];
        assert_eq!(quantile(&before, &after, 0.25), Some(1.25));
        assert_eq!(quantile(&after, &after, 0.5), None);
    }
}
