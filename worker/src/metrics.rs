//! Every metric the worker exports, defined once. Labels come from small fixed sets
//! (game, outcome, status), never from job or bot ids. The Grafana dashboards query
//! exactly these names.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};
use tracing::Instrument;

/// The worker's registry; `/metrics` renders it.
pub static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::new);

fn register<T: prometheus::core::Collector + Clone + 'static>(metric: T) -> T {
    // Each name is registered once, from this file; a clash is a programming error
    // that the metrics test catches.
    if let Err(error) = REGISTRY.register(Box::new(metric.clone())) {
        tracing::error!(%error, "metric registered twice");
    }
    metric
}

fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    register(IntCounterVec::new(Opts::new(name, help), labels).unwrap_or_else(|e| panic!("metric {name}: {e}")))
}

fn histogram_vec(name: &str, help: &str, labels: &[&str], buckets: Vec<f64>) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(buckets);
    register(HistogramVec::new(opts, labels).unwrap_or_else(|e| panic!("metric {name}: {e}")))
}

/// Build jobs answered, by outcome: built, failed (the source's fault), requeued (the
/// farm's), unreadable.
pub static BUILDS: LazyLock<IntCounterVec> =
    LazyLock::new(|| counter_vec("farm_worker_builds_total", "Build jobs by outcome.", &["outcome"]));

/// Match jobs handled, by game and outcome: `completed`, `failed` (cannot be played
/// as written), `requeued` (given back to the queue), `rejected` (not a job at all;
/// game `unknown`, as for jobs of another schema version).
pub static MATCHES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec("farm_worker_matches_total", "Match jobs finished, by game and outcome.", &["game", "outcome"])
});

/// Wall-clock duration of played matches.
pub static MATCH_DURATION: LazyLock<HistogramVec> = LazyLock::new(|| {
    histogram_vec(
        "farm_worker_match_duration_seconds",
        "Wall-clock duration of played matches.",
        &["game"],
        prometheus::exponential_buckets(0.05, 2.0, 16).unwrap_or_default(),
    )
});

/// Time from sending a request to a bot to reading its reply.
pub static TURN_LATENCY: LazyLock<HistogramVec> = LazyLock::new(|| {
    histogram_vec(
        "farm_worker_turn_latency_seconds",
        "Time from a request to a bot until its reply.",
        &["game"],
        prometheus::exponential_buckets(0.0001, 2.0, 18).unwrap_or_default(),
    )
});

/// CPU time a bot used for one move (from its request to its reply), where its
/// sandbox measures it: what the CPU clock counts.
pub static MOVE_CPU: LazyLock<HistogramVec> = LazyLock::new(|| {
    histogram_vec(
        "farm_worker_move_cpu_seconds",
        "CPU time a bot used from a request until its reply.",
        &["game"],
        prometheus::exponential_buckets(0.0001, 2.0, 18).unwrap_or_default(),
    )
});

/// Time to start one container bot for its match: taking a prepared container (or
/// preparing one) and starting the bot in it.
pub static CONTAINER_START: LazyLock<Histogram> = LazyLock::new(|| {
    let opts = HistogramOpts::new(
        "farm_worker_container_start_seconds",
        "Time to start a container bot for its match, including preparing a container if none waited.",
    )
    .buckets(prometheus::exponential_buckets(0.01, 2.0, 12).unwrap_or_default());
    register(Histogram::with_opts(opts).unwrap_or_else(|e| panic!("metric: {e}")))
});

/// Prepared containers waiting for a match.
pub static PREPARED_CONTAINERS: LazyLock<IntGauge> = LazyLock::new(|| {
    register(
        IntGauge::new("farm_worker_prepared_containers", "Prepared bot containers waiting for a match.")
            .unwrap_or_else(|e| panic!("{e}")),
    )
});

/// Container bots started, by where their container came from: `prepared` (it
/// waited ready) or `cold` (none waited: prepared on the match's path).
pub static CONTAINERS_TAKEN: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "farm_worker_containers_taken_total",
        "Container bots started, by outcome: prepared (a container waited ready) or cold (one was prepared on the \
         match's path).",
        &["outcome"],
    )
});

/// Containers after a match, by outcome: `verified` (the supervisor proved the reset;
/// the container may serve again) or `replaced` (it could not: the container is removed
/// and another prepared).
pub static CONTAINER_RESETS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "farm_worker_container_resets_total",
        "Container resets after a match, by outcome: verified, or replaced (the reset could not be verified).",
        &["outcome"],
    )
});

/// Containers removed by a sweep, by whose: `own` (this process's, at start-up and
/// shutdown, and an earlier version's of this worker id) or `dead_instance` (a worker
/// on the same engine whose heartbeat stopped).
pub static CONTAINERS_REAPED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "farm_worker_containers_reaped_total",
        "Containers removed by a sweep, by whose: own, or dead_instance (a worker on this engine whose heartbeat stopped).",
        &["whose"],
    )
});

/// A phase of an external bot's life in its sandbox, for
/// [`SANDBOX_PHASE`]: where the time of starting and ending bots goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxPhase {
    /// Creating a container (preparing one: off the match's path when it is
    /// prepared ahead).
    Create,
    /// Starting a container until its supervisor listens (preparing it, as above).
    Start,
    /// Starting the bot's process: a local one (into its cgroup or namespaces), or one
    /// in a prepared container (by its supervisor).
    Spawn,
    /// From the first request to the bot's first reply (its start-up, as the match sees it).
    FirstReply,
    /// Ending the bot: killing what still runs and reading how it exited.
    End,
    /// Resetting a container after its match, until its supervisor has verified that
    /// nothing of the match is left (off the path of the next match).
    Reset,
    /// Removing a container (off the path of the next match).
    Remove,
}

impl SandboxPhase {
    /// Every phase, in the order of a bot's life.
    pub const ALL: [SandboxPhase; 7] = [
        SandboxPhase::Create,
        SandboxPhase::Start,
        SandboxPhase::Spawn,
        SandboxPhase::FirstReply,
        SandboxPhase::End,
        SandboxPhase::Reset,
        SandboxPhase::Remove,
    ];

    /// Its `phase` label.
    pub fn name(self) -> &'static str {
        match self {
            SandboxPhase::Create => "create",
            SandboxPhase::Start => "start",
            SandboxPhase::Spawn => "spawn",
            SandboxPhase::FirstReply => "first_reply",
            SandboxPhase::End => "end",
            SandboxPhase::Reset => "reset",
            SandboxPhase::Remove => "remove",
        }
    }

    /// Records that this phase of a bot in `sandbox` took `elapsed`.
    pub fn observe(self, sandbox: &str, elapsed: Duration) {
        SANDBOX_PHASE.with_label_values(&[sandbox, self.name()]).observe(elapsed.as_secs_f64());
    }

    /// Runs `phase`, inside a tracing span named for it, and records its time.
    pub async fn timed<T>(self, sandbox: &'static str, phase: impl Future<Output = T>) -> T {
        let started = Instant::now();
        let span = tracing::debug_span!("sandbox_phase", sandbox, phase = self.name());
        let output = phase.instrument(span).await;
        self.observe(sandbox, started.elapsed());
        output
    }
}

/// The sandboxes' names: the `sandbox` label of [`SANDBOX_PHASE`], each sandbox's
/// `Sandbox::NAME` in the bots module. Named here, where every module records its
/// metrics, so that this module imports none of theirs.
pub const LOCAL_SANDBOX: &str = "local";
/// The isolated sandbox's name (see [`LOCAL_SANDBOX`]).
pub const ISOLATED_SANDBOX: &str = "isolated";
/// The Docker sandbox's name (see [`LOCAL_SANDBOX`]).
pub const DOCKER_SANDBOX: &str = "docker";

/// Time of each phase of an external bot's life, by sandbox ([`LOCAL_SANDBOX`],
/// [`ISOLATED_SANDBOX`], [`DOCKER_SANDBOX`]) and [`SandboxPhase`].
pub static SANDBOX_PHASE: LazyLock<HistogramVec> = LazyLock::new(|| {
    histogram_vec(
        "farm_worker_sandbox_phase_seconds",
        "Time of each phase of an external bot's life in its sandbox: create and start (preparing a container), \
         spawn, first_reply, end, reset and remove (after the match).",
        &["sandbox", "phase"],
        prometheus::exponential_buckets(0.0001, 2.0, 18).unwrap_or_default(),
    )
});

/// Bot containers or networks the worker failed to remove (an error other than "already
/// gone", or no answer in time). The worker's start-up and shutdown sweeps by label
/// retry them; a steady rise means the Docker daemon is in trouble.
pub static CONTAINER_REMOVE_FAILURES: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "farm_worker_container_remove_failures_total",
            "Bot containers or networks that could not be removed.",
        )
        .unwrap_or_else(|e| panic!("{e}")),
    )
});

/// Matches with external bots, by whether their sandboxes were prepared ahead by the
/// warm pool while the job waited (`hit`) or not (`miss`).
pub static WARM_POOL: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "farm_worker_warm_pool_total",
        "Matches with external bots, by whether their sandboxes were prepared ahead (hit) or not (miss).",
        &["outcome"],
    )
});

/// External bots of waiting matches whose sandboxes were prepared ahead (none of them
/// runs yet).
pub static WARM_BOTS: LazyLock<IntGauge> = LazyLock::new(|| {
    register(
        IntGauge::new("farm_worker_warm_bots", "External bots of waiting matches whose sandboxes were prepared ahead.")
            .unwrap_or_else(|e| panic!("{e}")),
    )
});

/// Matches prepared for that gave up their room in the warm pool unplayed, by reason:
/// `idle` (they waited longer than the idle time) or `shutdown` (the worker stopped
/// and requeued the job).
pub static WARM_DISCARDED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "farm_worker_warm_discarded_total",
        "Matches prepared for ahead that gave up their room unplayed, by reason.",
        &["reason"],
    )
});

/// Time from a match getting its slot to its bots being ready: near zero on a warm
/// pool hit, the bots' start-up on a miss. Matches with only built-in bots are not
/// counted.
pub static BOTS_READY: LazyLock<Histogram> = LazyLock::new(|| {
    let opts = HistogramOpts::new(
        "farm_worker_bots_ready_seconds",
        "Time from a match getting its slot to its external bots being ready.",
    )
    .buckets(prometheus::exponential_buckets(0.0005, 2.0, 16).unwrap_or_default());
    register(Histogram::with_opts(opts).unwrap_or_else(|e| panic!("metric: {e}")))
});

/// Bots that ended a match in a failure status, by game and status (`timed_out`,
/// `crashed`, `disqualified`, `oom_killed`).
pub static BOT_FAILURES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "farm_worker_bot_failures_total",
        "Bots that failed in a match, by game and status.",
        &["game", "status"],
    )
});

/// Audits of other workers' matches this worker did, by verdict.
pub static AUDITS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec("farm_worker_audits_total", "Audits of other workers' stored replays, by verdict.", &["verdict"])
});

/// 1 with the reason once the coordinator has quarantined this worker (it takes no
/// more match or audit jobs).
pub static QUARANTINED: LazyLock<prometheus::IntGaugeVec> = LazyLock::new(|| {
    register(
        prometheus::IntGaugeVec::new(
            Opts::new("farm_worker_quarantined", "1 once the coordinator has quarantined this worker, with why."),
            &["reason"],
        )
        .unwrap_or_else(|e| panic!("{e}")),
    )
});

/// Jobs being played right now.
pub static JOBS_IN_FLIGHT: LazyLock<IntGauge> = LazyLock::new(|| {
    register(IntGauge::new("farm_worker_jobs_in_flight", "Match jobs being played.").unwrap_or_else(|e| panic!("{e}")))
});

/// Slots: how many jobs this worker plays at once.
pub static SLOTS: LazyLock<IntGauge> = LazyLock::new(|| {
    register(IntGauge::new("farm_worker_slots", "Jobs this worker plays at once.").unwrap_or_else(|e| panic!("{e}")))
});

/// Compressed replay bytes stored.
pub static REPLAY_BYTES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec("farm_worker_replay_bytes_total", "Compressed replay bytes stored, by game.", &["game"])
});

/// Notices sent that a delivery went back to the queue for a cause outside its job.
pub static DELIVERIES_RETURNED: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "farm_worker_deliveries_returned_total",
            "Deliveries given back for causes outside their job (storage, Docker, shutdown, a lost connection), \
             each reported to the coordinator.",
        )
        .unwrap_or_else(|e| panic!("{e}")),
    )
});

/// Connections to the broker made after the first.
pub static BROKER_RECONNECTS: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new("farm_worker_broker_reconnects_total", "Reconnections to RabbitMQ.")
            .unwrap_or_else(|e| panic!("{e}")),
    )
});

/// Bot limits a job asked for above the worker's `bot_ceiling`, lowered to it.
pub static BOT_LIMITS_CLAMPED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "farm_worker_bot_limits_clamped_total",
        "Bot limits a job asked for above the worker's bot_ceiling, lowered to it, by limit.",
        &["limit"],
    )
});

/// Job channels (match or audit jobs) closed under a delivery (a consumer timeout, a
/// refused ack) and opened again; the other matches go on.
pub static JOB_CHANNELS_REOPENED: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "farm_worker_job_channels_reopened_total",
            "Job channels RabbitMQ closed under one delivery (consumer timeout, refused ack), opened again.",
        )
        .unwrap_or_else(|e| panic!("{e}")),
    )
});

/// Matches being relayed live to viewers now (`live.rs`).
pub static LIVE_RELAYS: LazyLock<IntGauge> = LazyLock::new(|| {
    register(
        IntGauge::new("farm_worker_live_relays", "Matches being relayed live to viewers now.")
            .unwrap_or_else(|e| panic!("{e}")),
    )
});

/// Lines of matches relayed live.
pub static LIVE_FRAMES_SENT: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new("farm_worker_live_frames_sent_total", "Lines of matches relayed live to viewers.")
            .unwrap_or_else(|e| panic!("{e}")),
    )
});

/// Lines a live relay skipped: its match's buffer had let them go before they were
/// sent (a relay behind, or a viewer who came late to a long match).
pub static LIVE_FRAMES_SKIPPED: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "farm_worker_live_frames_skipped_total",
            "Lines a live relay skipped: its buffer had let them go before they were sent.",
        )
        .unwrap_or_else(|e| panic!("{e}")),
    )
});

/// Touches every metric so that each appears in `/metrics` from the start, even
/// before its first event (dashboards and alerts then see zeros, not gaps).
pub fn init() {
    LazyLock::force(&MATCHES);
    LazyLock::force(&MATCH_DURATION);
    LazyLock::force(&TURN_LATENCY);
    LazyLock::force(&MOVE_CPU);
    LazyLock::force(&AUDITS);
    LazyLock::force(&QUARANTINED);
    LazyLock::force(&CONTAINER_START);
    LazyLock::force(&BOT_FAILURES);
    LazyLock::force(&JOBS_IN_FLIGHT);
    LazyLock::force(&SLOTS);
    LazyLock::force(&REPLAY_BYTES);
    LazyLock::force(&BROKER_RECONNECTS);
    LazyLock::force(&DELIVERIES_RETURNED);
    LazyLock::force(&JOB_CHANNELS_REOPENED);
    LazyLock::force(&BOT_LIMITS_CLAMPED);
    LazyLock::force(&CONTAINER_REMOVE_FAILURES);
    LazyLock::force(&WARM_BOTS);
    LazyLock::force(&WARM_DISCARDED);
    LazyLock::force(&BOTS_READY);
    LazyLock::force(&PREPARED_CONTAINERS);
    LazyLock::force(&LIVE_RELAYS);
    LazyLock::force(&LIVE_FRAMES_SENT);
    LazyLock::force(&LIVE_FRAMES_SKIPPED);
    for outcome in ["prepared", "cold"] {
        CONTAINERS_TAKEN.with_label_values(&[outcome]);
    }
    for outcome in ["verified", "replaced"] {
        CONTAINER_RESETS.with_label_values(&[outcome]);
    }
    for whose in ["own", "dead_instance"] {
        CONTAINERS_REAPED.with_label_values(&[whose]);
    }
    // The phases each sandbox goes through (processes are spawned, containers
    // prepared, spawned in, reset and removed).
    for sandbox in [LOCAL_SANDBOX, ISOLATED_SANDBOX] {
        for phase in [SandboxPhase::Spawn, SandboxPhase::FirstReply, SandboxPhase::End] {
            SANDBOX_PHASE.with_label_values(&[sandbox, phase.name()]);
        }
    }
    for phase in SandboxPhase::ALL {
        SANDBOX_PHASE.with_label_values(&[DOCKER_SANDBOX, phase.name()]);
    }
    for outcome in ["hit", "miss"] {
        WARM_POOL.with_label_values(&[outcome]);
    }
    for reason in ["idle", "shutdown"] {
        WARM_DISCARDED.with_label_values(&[reason]);
    }
}

/// The registry in Prometheus' text format.
pub fn render() -> String {
    let mut buffer = Vec::new();
    if let Err(error) = TextEncoder::new().encode(&REGISTRY.gather(), &mut buffer) {
        tracing::error!(%error, "encoding metrics");
    }
    String::from_utf8(buffer).unwrap_or_default()
}
