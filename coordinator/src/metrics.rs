//! Every metric the coordinator exports, defined once. Labels come from small fixed
//! sets (game, outcome, state, route template, status code), never from ids but the
//! workers' (at most [`MAX_WORKERS_SHOWN`] of them).

use std::sync::LazyLock;

use farm_proto::limits;
use prometheus::{
    Counter, Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

/// The coordinator's registry; `/metrics` renders it.
pub static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::new);

fn register<T: prometheus::core::Collector + Clone + 'static>(metric: Result<T, prometheus::Error>, name: &str) -> T {
    // Names are fixed strings defined here: an invalid one is a bug the tests catch.
    let metric = metric.unwrap_or_else(|error| panic!("metric {name}: {error}"));
    if let Err(error) = REGISTRY.register(Box::new(metric.clone())) {
        tracing::error!(%error, "metric registered twice");
    }
    metric
}

/// Jobs sent to the queue, by game.
pub static JOBS_PUBLISHED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let name = "farm_coordinator_jobs_published_total";
    register(IntCounterVec::new(Opts::new(name, "Jobs sent to the job queue, by game."), &["game"]), name)
});

/// Jobs the queue confirmed, by game.
pub static JOBS_CONFIRMED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let name = "farm_coordinator_jobs_confirmed_total";
    register(IntCounterVec::new(Opts::new(name, "Jobs the job queue confirmed, by game."), &["game"]), name)
});

/// Answers recorded, by outcome: `completed`, `failed` (a failed result or a dead letter).
pub static RESULTS_INGESTED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let name = "farm_coordinator_results_ingested_total";
    register(IntCounterVec::new(Opts::new(name, "Match answers recorded, by outcome."), &["outcome"]), name)
});

/// Results dropped because their job already had one.
pub static DUPLICATES: LazyLock<IntCounter> = LazyLock::new(|| {
    let name = "farm_coordinator_duplicate_results_total";
    register(IntCounter::new(name, "Results dropped because their job already had one."), name)
});

/// Audit verdicts dropped because their audit already had one.
pub static DUPLICATE_VERDICTS: LazyLock<IntCounter> = LazyLock::new(|| {
    let name = "farm_coordinator_duplicate_verdicts_total";
    register(IntCounter::new(name, "Audit verdicts dropped because their audit already had one."), name)
});

/// Messages on the result and dead-letter queues that are not recorded.
pub static RESULTS_DROPPED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let name = "farm_coordinator_results_dropped_total";
    register(
        IntCounterVec::new(
            Opts::new(
                name,
                "Messages not recorded, by reason: unreadable and schema (another schema version), both moved to \
                 farm.set-aside; unknown_job and mismatch (a result that does not fit its job), both dropped.",
            ),
            &["reason"],
        ),
        name,
    )
});

/// Answers and build reports refused as forged (see `crate::vouch`), by reason:
/// answers are moved to `farm.set-aside`, build reports logged and dropped (as
/// unreadable ones are).
pub static FORGED_ANSWERS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let name = "farm_coordinator_forged_answers_total";
    register(
        IntCounterVec::new(
            Opts::new(
                name,
                "Results, notices, audit verdicts (moved to farm.set-aside) and build reports (logged and dropped) \
                 refused as forged, by reason: unsigned (no user_id the broker vouches for), impostor (it names \
                 another worker than its broker user), not_held (its token is not that of what it answers).",
            ),
            &["reason"],
        ),
        name,
    )
});

/// Broker sessions lost and reconnected.
pub static BROKER_RECONNECTS: LazyLock<IntCounter> = LazyLock::new(|| {
    let name = "farm_coordinator_broker_reconnects_total";
    register(IntCounter::new(name, "Times the coordinator lost RabbitMQ and reconnected."), name)
});

/// Published jobs put back to pending when their lease passed unanswered.
pub static LEASES_EXPIRED: LazyLock<IntCounter> = LazyLock::new(|| {
    let name = "farm_coordinator_leases_expired_total";
    register(IntCounter::new(name, "Published jobs unanswered past their lease, published again."), name)
});

/// Workers' notices of deliveries given back for outages.
pub static DELIVERIES_RETURNED: LazyLock<IntCounter> = LazyLock::new(|| {
    let name = "farm_coordinator_deliveries_returned_total";
    register(
        IntCounter::new(
            name,
            "Deliveries workers gave back for causes outside their job (storage, Docker, broker, shutdown).",
        ),
        name,
    )
});

/// Dead-lettered jobs that started over, their deliveries lost to outages.
pub static JOBS_RESTARTED: LazyLock<IntCounter> = LazyLock::new(|| {
    let name = "farm_coordinator_jobs_restarted_total";
    register(
        IntCounter::new(name, "Dead-lettered jobs published afresh because outages took some of their deliveries."),
        name,
    )
});

/// Jobs the broker dead-lettered.
pub static DEAD_LETTERS: LazyLock<IntCounter> = LazyLock::new(|| {
    let name = "farm_coordinator_dead_letters_total";
    register(IntCounter::new(name, "Jobs dead-lettered by the broker, recorded as failed."), name)
});

/// Jobs in the ledger by state, over all tournaments.
pub static JOBS: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    let name = "farm_coordinator_jobs";
    register(IntGaugeVec::new(Opts::new(name, "Jobs in the ledger, by state."), &["state"]), name)
});

/// Submitted bots' versions by state (building, validating, validated, rejected,
/// build_failed): versions long `building` mean no worker builds (`docker.registry`).
pub static BOT_VERSIONS: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    let name = "farm_coordinator_bot_versions";
    register(IntGaugeVec::new(Opts::new(name, "Submitted bots' versions, by state."), &["state"]), name)
});

/// Tournaments with jobs still open.
pub static TOURNAMENTS_ACTIVE: LazyLock<IntGauge> = LazyLock::new(|| {
    let name = "farm_coordinator_tournaments_active";
    register(IntGauge::new(name, "Tournaments with jobs not yet answered."), name)
});

/// Unanswered jobs of the tournaments directors schedule as they go, by format.
pub static DIRECTED_UNANSWERED: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    let name = "farm_coordinator_directed_unanswered_jobs";
    let help = "Jobs scheduled and not yet answered of open SPRT, Swiss, ladder and stopping round-robin \
                tournaments, by format.";
    register(IntGaugeVec::new(Opts::new(name, help), &["format"]), name)
});

/// What the directors keep unanswered, by format: the sum of the open tournaments'
/// `queue_depth`s (0 for formats that schedule by round).
pub static DIRECTED_TARGET: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    let name = "farm_coordinator_directed_target_jobs";
    let help = "The queue depth the open SPRT and ladder tournaments are kept at, summed by format.";
    register(IntGaugeVec::new(Opts::new(name, help), &["format"]), name)
});

/// Time from a job's first publication to its recorded answer: the match itself, the
/// wait in the queue and for a worker, retries, and the ingest. Its buckets reach an
/// hour, finer where matches usually end (seconds to minutes).
pub static JOB_LATENCY: LazyLock<Histogram> = LazyLock::new(|| {
    let name = "farm_coordinator_job_latency_seconds";
    let buckets = vec![
        0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 75.0, 90.0, 120.0, 180.0,
        300.0, 600.0, 1800.0, 3600.0,
    ];
    let help = "Seconds from a job's first publication to its recorded answer.";
    register(Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets)), name)
});

/// Time to compute one tournament's standings.
pub static STANDINGS_SECONDS: LazyLock<Histogram> = LazyLock::new(|| {
    let name = "farm_coordinator_standings_compute_seconds";
    let buckets = prometheus::exponential_buckets(0.0005, 2.0, 16).unwrap_or_default();
    register(
        Histogram::with_opts(HistogramOpts::new(name, "Time to compute a tournament's standings.").buckets(buckets)),
        name,
    )
});

/// API requests, by route template, method ([`method_label`]) and status code.
pub static API_REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let name = "farm_coordinator_api_requests_total";
    register(
        IntCounterVec::new(
            Opts::new(name, "API requests, by route template, method and status."),
            &["route", "method", "status"],
        ),
        name,
    )
});

/// The methods [`API_REQUESTS`] names as they are; any other is counted as `other`.
/// An extension method's name is whatever a client sends (100 KB of it, if it likes):
/// as a label, each would be a series kept for good.
const METHODS: [&str; 9] = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"];

/// `method` as [`API_REQUESTS`] labels it: one of [`METHODS`], or `other`.
pub fn method_label(method: &axum::http::Method) -> &'static str {
    METHODS.into_iter().find(|name| *name == method.as_str()).unwrap_or("other")
}

/// API latency, by route template.
pub static API_SECONDS: LazyLock<HistogramVec> = LazyLock::new(|| {
    let name = "farm_coordinator_api_request_duration_seconds";
    let buckets = prometheus::exponential_buckets(0.0005, 2.0, 16).unwrap_or_default();
    register(
        HistogramVec::new(
            HistogramOpts::new(name, "API request latency, by route template.").buckets(buckets),
            &["route"],
        ),
        name,
    )
});

/// Observation requests, by outcome: `cached`, `resimulated`, `busy` (answered 429).
pub static OBSERVATIONS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let name = "farm_coordinator_observations_total";
    register(
        IntCounterVec::new(
            Opts::new(name, "Observation requests, by outcome: cached, resimulated, busy (answered 429)."),
            &["outcome"],
        ),
        name,
    )
});

/// Audits published to `farm.audits`.
pub static AUDITS_PUBLISHED: LazyLock<IntCounter> = LazyLock::new(|| {
    let name = "farm_coordinator_audits_published_total";
    register(IntCounter::new(name, "Audits of completed matches published to the audit queue."), name)
});

/// Audits published again because their lease passed unanswered.
pub static AUDITS_REPUBLISHED: LazyLock<IntCounter> = LazyLock::new(|| {
    let name = "farm_coordinator_audits_republished_total";
    register(IntCounter::new(name, "Audits published again because their lease passed without a verdict."), name)
});

/// Audits given up after their last publication went unanswered.
pub static AUDITS_GIVEN_UP: LazyLock<IntCounter> = LazyLock::new(|| {
    let name = "farm_coordinator_audits_given_up_total";
    register(
        IntCounter::new(name, "Audits given up (skipped) after max_publications publications without a verdict."),
        name,
    )
});

/// Audit verdicts recorded, by verdict: `confirmed`, `mismatch`, `skipped`.
pub static AUDIT_VERDICTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let name = "farm_coordinator_audit_verdicts_total";
    register(IntCounterVec::new(Opts::new(name, "Audit verdicts recorded, by verdict."), &["verdict"]), name)
});

/// The most workers whose figures are exported (the first by id): a bound on the
/// labels a flood of forged worker ids could make.
pub const MAX_WORKERS_SHOWN: usize = limits::MAX_WORKERS_SHOWN;

/// Each worker's record (see [`crate::audits::WorkerRecord`]): `matches`, `faults`,
/// `audits`, `mismatches`, and `quarantined` (1 or 0).
pub static WORKER_FIGURES: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    let name = "farm_coordinator_worker_figures";
    let help = "Each worker's record: matches, faults, audits, mismatches, quarantined (1 or 0).";
    register(IntGaugeVec::new(Opts::new(name, help), &["worker", "figure"]), name)
});

/// Webhook delivery attempts, by what became of the delivery: `delivered`, `retrying`
/// (it failed and will be tried again) or `abandoned` (it failed its last attempt).
pub static WEBHOOK_ATTEMPTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let name = "farm_coordinator_webhook_attempts_total";
    let help = "Webhook delivery attempts, by what became of the delivery: delivered, retrying, abandoned.";
    register(IntCounterVec::new(Opts::new(name, help), &["outcome"]), name)
});

/// Sets [`WORKER_FIGURES`] from `workers`.
pub fn set_worker_figures(workers: &[crate::audits::WorkerRecord]) {
    WORKER_FIGURES.reset();
    for worker in workers.iter().take(MAX_WORKERS_SHOWN) {
        let figures = [
            ("matches", worker.matches),
            ("faults", worker.faults),
            ("audits", worker.audits),
            ("mismatches", worker.mismatches),
            ("quarantined", u64::from(worker.quarantined.is_some())),
        ];
        for (figure, value) in figures {
            WORKER_FIGURES
                .with_label_values(&[&worker.worker_id, figure])
                .set(i64::try_from(value).unwrap_or(i64::MAX));
        }
    }
}

/// Browsers watching a match live now.
pub static LIVE_VIEWERS: LazyLock<IntGauge> = LazyLock::new(|| {
    let name = "farm_coordinator_live_viewers";
    register(IntGauge::new(name, "Browsers watching a match live now."), name)
});

/// Matches watched live now: relayed by their workers, buffered here.
pub static LIVE_STREAMS: LazyLock<IntGauge> = LazyLock::new(|| {
    let name = "farm_coordinator_live_streams";
    register(IntGauge::new(name, "Matches watched live now."), name)
});

/// Live lines taken from workers into a watched match's buffer.
pub static LIVE_FRAMES_RECEIVED: LazyLock<IntCounter> = LazyLock::new(|| {
    let name = "farm_coordinator_live_frames_received_total";
    register(IntCounter::new(name, "Live lines taken from workers into a watched match's buffer."), name)
});

/// Live lines sent to viewers.
pub static LIVE_FRAMES_RELAYED: LazyLock<IntCounter> = LazyLock::new(|| {
    let name = "farm_coordinator_live_frames_relayed_total";
    register(IntCounter::new(name, "Live lines sent to viewers."), name)
});

/// Live lines lost on the way, by where: `relay` (missing from what a worker sent: the
/// broker's queue was full, or the worker's buffer had let them go), `viewer` (a slow
/// viewer skipped them: the buffer had let them go before it read them).
pub static LIVE_FRAMES_DROPPED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let name = "farm_coordinator_live_frames_dropped_total";
    let help = "Live lines lost on the way: relay (never arrived), viewer (skipped by a slow viewer).";
    register(IntCounterVec::new(Opts::new(name, help), &["where"]), name)
});

/// Live messages refused, by reason: `unsigned` (no user the broker vouches for),
/// `token` (not the job's token), `sender` (another worker than the one relaying the
/// match), `malformed` (not one line of text, or over the buffer), `stale` (an earlier
/// attempt's).
pub static LIVE_FRAMES_REFUSED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let name = "farm_coordinator_live_frames_refused_total";
    register(IntCounterVec::new(Opts::new(name, "Live messages refused, by reason."), &["reason"]), name)
});

/// Viewers turned away (429), by the limit they met: `viewers_per_match`, `viewers`,
/// `streams`.
pub static LIVE_VIEWERS_REFUSED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let name = "farm_coordinator_live_viewers_refused_total";
    register(IntCounterVec::new(Opts::new(name, "Live viewers turned away, by the limit met."), &["limit"]), name)
});

/// CPU seconds the coordinator's process has used (user and system), read at each scrape:
/// what a growing fleet costs it (capacity planning).
pub static CPU_SECONDS: LazyLock<Counter> = LazyLock::new(|| {
    let name = "farm_coordinator_cpu_seconds_total";
    register(Counter::new(name, "CPU seconds the coordinator's process has used, user and system."), name)
});

/// The coordinator's resident memory, read at each scrape.
pub static RESIDENT_BYTES: LazyLock<IntGauge> = LazyLock::new(|| {
    let name = "farm_coordinator_resident_memory_bytes";
    register(IntGauge::new(name, "The coordinator's resident memory, in bytes."), name)
});

/// Reads the process's CPU time and resident memory from /proc into [`CPU_SECONDS`] and
/// [`RESIDENT_BYTES`] (left as they were where /proc cannot be read).
fn read_process() {
    if let Some((cpu_seconds, resident_bytes)) =
        std::fs::read_to_string("/proc/self/stat").ok().as_deref().and_then(process_figures)
    {
        // The kernel's count only grows: the counter follows it.
        CPU_SECONDS.inc_by((cpu_seconds - CPU_SECONDS.get()).max(0.0));
        RESIDENT_BYTES.set(resident_bytes);
    }
}

/// CPU seconds and resident bytes from a `/proc/PID/stat` line.
fn process_figures(stat: &str) -> Option<(f64, i64)> {
    // USER_HZ is 100 and pages are 4 KiB on every Linux architecture this runs on.
    const TICKS_PER_SECOND: f64 = 100.0;
    const PAGE_BYTES: i64 = 4096;
    // After the command's closing parenthesis (a command may hold one): utime and stime
    // are fields 14 and 15 of the line, 12 and 13 here; the resident set in pages is
    // field 24, 22 here.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let field = |index: usize| fields.get(index)?.parse::<i64>().ok();
    Some(((field(11)? + field(12)?) as f64 / TICKS_PER_SECOND, field(21)? * PAGE_BYTES))
}

/// Registers every metric, so `/metrics` lists them all from the start.
pub fn init() {
    LazyLock::force(&JOBS_PUBLISHED);
    LazyLock::force(&JOBS_CONFIRMED);
    LazyLock::force(&RESULTS_INGESTED);
    LazyLock::force(&DUPLICATES);
    LazyLock::force(&DUPLICATE_VERDICTS);
    LazyLock::force(&RESULTS_DROPPED);
    LazyLock::force(&FORGED_ANSWERS);
    LazyLock::force(&DEAD_LETTERS);
    LazyLock::force(&BROKER_RECONNECTS);
    LazyLock::force(&LEASES_EXPIRED);
    LazyLock::force(&DELIVERIES_RETURNED);
    LazyLock::force(&JOBS_RESTARTED);
    LazyLock::force(&JOBS);
    LazyLock::force(&TOURNAMENTS_ACTIVE);
    LazyLock::force(&BOT_VERSIONS);
    LazyLock::force(&STANDINGS_SECONDS);
    LazyLock::force(&JOB_LATENCY);
    LazyLock::force(&CPU_SECONDS);
    LazyLock::force(&RESIDENT_BYTES);
    LazyLock::force(&DIRECTED_UNANSWERED);
    LazyLock::force(&DIRECTED_TARGET);
    LazyLock::force(&API_REQUESTS);
    LazyLock::force(&API_SECONDS);
    LazyLock::force(&OBSERVATIONS);
    LazyLock::force(&AUDITS_PUBLISHED);
    LazyLock::force(&AUDITS_REPUBLISHED);
    LazyLock::force(&AUDITS_GIVEN_UP);
    LazyLock::force(&AUDIT_VERDICTS);
    LazyLock::force(&WORKER_FIGURES);
    LazyLock::force(&WEBHOOK_ATTEMPTS);
    LazyLock::force(&LIVE_VIEWERS);
    LazyLock::force(&LIVE_STREAMS);
    LazyLock::force(&LIVE_FRAMES_RECEIVED);
    LazyLock::force(&LIVE_FRAMES_RELAYED);
    for place in ["relay", "viewer"] {
        LIVE_FRAMES_DROPPED.with_label_values(&[place]);
    }
    for reason in ["unsigned", "token", "sender", "malformed", "stale"] {
        LIVE_FRAMES_REFUSED.with_label_values(&[reason]);
    }
    for limit in ["viewers_per_match", "viewers", "streams"] {
        LIVE_VIEWERS_REFUSED.with_label_values(&[limit]);
    }
}

/// The text exposition of every metric.
pub fn render() -> String {
    read_process();
    let mut out = Vec::new();
    if let Err(error) = TextEncoder::new().encode(&REGISTRY.gather(), &mut out) {
        tracing::error!(%error, "encoding metrics");
    }
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_registers_once_under_its_prefix() {
        init();
        init();
        DUPLICATES.inc();
        API_REQUESTS.with_label_values(&["/healthz", "GET", "200"]).inc();
        let text = render();
        for name in [
            "farm_coordinator_duplicate_results_total",
            "farm_coordinator_api_requests_total",
            "farm_coordinator_tournaments_active",
            "farm_coordinator_job_latency_seconds",
        ] {
            assert!(text.contains(&format!("# TYPE {name} ")), "{name} missing from\n{text}");
        }
        assert!(REGISTRY.gather().iter().all(|family| family.name().starts_with("farm_coordinator_")));
        // The process's own figures, read as it is scraped.
        assert!(text.contains("# TYPE farm_coordinator_cpu_seconds_total counter"), "{text}");
        assert!(RESIDENT_BYTES.get() > 1 << 20, "{text}");
    }

    #[test]
    fn process_figures_are_read_past_a_command_with_parentheses() {
        let stat = "4242 (farm (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 75 0 0 20 0 9 0 100 \
                    123456789 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(process_figures(stat), Some((3.25, 2560 * 4096)));
        assert_eq!(process_figures("garbage"), None);
    }

    #[test]
    fn methods_are_labelled_from_a_fixed_set() {
        use axum::http::Method;
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::DELETE), "DELETE");
        for made_up in ["get".to_owned(), "PURGE".to_owned(), "M".repeat(100_000)] {
            let method = Method::from_bytes(made_up.as_bytes()).expect("a token is a method");
            assert_eq!(method_label(&method), "other", "{}", &made_up[..made_up.len().min(8)]);
        }
    }
}
