//! Prepared containers against the real Docker engine: a container reused between
//! matches holds nothing of the last one, a reset that cannot be verified replaces the
//! container (and says so in a metric), a fresh-container sandbox never reuses one, an
//! `http` bot plays with no network at all, and no container is left after any test.
//!
//! `hostile-traces` reports, at its first request, everything it finds in its
//! container's writable places, IPC objects and processes, and its host name (the
//! container's id); then it leaves traces in all of them.

use std::time::Duration;

use farm_engine::{GameKind, MatchSetup};
use farm_proto::{BotSpec, PlayerStatus};
use farm_worker::bots::{ContainerIsolation, DockerSandbox, DockerSettings, WORKER_LABEL};
use farm_worker::metrics::CONTAINER_RESETS;
use farm_worker::runner::{MatchIo, MatchReport, RunnerOptions, fill_seats, start_match};

use farm_testkit::{containers, eventually, unique};

const TRACES: &str = "image:matchfarm/hostile traces";

async fn sandbox(name: &str, isolation: ContainerIsolation) -> (DockerSandbox, String) {
    let worker_id = unique(name);
    let settings = DockerSettings { isolation, ..DockerSettings::default() };
    let docker = DockerSandbox::connect(&worker_id, &settings).await.expect("the Docker sandbox");
    (docker, worker_id)
}

/// Plays a short Vindinium match with `bot` in seat 0 (built-in bots in the others).
async fn play(docker: &DockerSandbox, bot: &str, seed: u64) -> MatchReport {
    play_asking(docker, bot, seed, None).await
}

/// As [`play`], the match's tournament asking for `isolation`.
async fn play_asking(
    docker: &DockerSandbox,
    bot: &str,
    seed: u64,
    isolation: Option<ContainerIsolation>,
) -> MatchReport {
    let bots = fill_seats(GameKind::Vindinium, vec![bot.parse::<BotSpec>().expect("bot spec")]);
    let players = bots.iter().map(|bot| bot.name.clone()).collect();
    let rules = serde_json::json!({ "maxTurns": 20, "moveTimeoutMs": 20000 });
    let setup = MatchSetup::new(GameKind::Vindinium, &rules, None, seed, players).expect("setup");
    let io = MatchIo { replay: tokio::io::sink(), on_step: |_, _| {}, stop: std::future::pending(), live: None };
    let started = start_match(docker, &format!("reuse-{seed}"), isolation, Default::default(), setup, &bots)
        .await
        .expect("started");
    started.play(&RunnerOptions::default(), io).await.expect("played")
}

/// What `traces` reported in one match: what it found, its host (the container), the
/// kernel state a reset does not renew, and the whole log.
struct Traces {
    found: String,
    host: String,
    kernel: Kernel,
    log: String,
}

/// `traces: kernel ...`: the state the book lists under "What a reused container keeps"
/// (docs/src/operators/containers.md).
#[derive(Debug)]
struct Kernel {
    pid: u64,
    sysv_id: i64,
    time_wait: u64,
}

/// Seat 0's log, and what `traces` said in it.
fn traces_of(report: &MatchReport) -> Traces {
    let seat = &report.seats[0];
    assert_eq!(seat.outcome.status, PlayerStatus::Ok, "{seat:?}");
    let log = String::from_utf8_lossy(&seat.log.bytes).into_owned();
    let line = |prefix: &str| {
        log.lines()
            .find_map(|line| line.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in the log:\n{log}"))
            .to_owned()
    };
    let (found, host, kernel) = (line("traces: found "), line("traces: host "), line("traces: kernel "));
    let value = |key: &str| {
        kernel
            .split_whitespace()
            .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {key} in {kernel:?}"))
            .to_owned()
    };
    let number = |key: &str| value(key).parse::<i64>().unwrap_or_else(|_| panic!("{key} in {kernel:?}"));
    let kernel =
        Kernel { pid: number("pid") as u64, sysv_id: number("sysv-id"), time_wait: number("time-wait") as u64 };
    assert!(log.contains("traces: left"), "{log}");
    Traces { found, host, kernel, log }
}

/// Shuts the sandbox down and checks it left no container.
async fn shut_down_leaving_nothing(docker: DockerSandbox, worker_id: &str) {
    docker.shutdown().await.expect("shutdown");
    assert!(containers(WORKER_LABEL, worker_id).is_empty(), "no container left");
}

/// The short ids (a container's host name) of the worker's containers.
fn container_ids(worker_id: &str) -> Vec<String> {
    let output = std::process::Command::new("docker")
        .args(["ps", "-a", "-q", "--filter", &format!("label={WORKER_LABEL}={worker_id}")])
        .output()
        .expect("docker ps runs");
    String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
}

fn verified() -> u64 {
    CONTAINER_RESETS.with_label_values(&["verified"]).get()
}

fn replaced() -> u64 {
    CONTAINER_RESETS.with_label_values(&["replaced"]).get()
}

/// Waits until the container of the last match has been reset and is back in the
/// pool (the reset runs after the match, in the background).
fn reset_done(before: u64, counter: fn() -> u64) {
    eventually(Duration::from_secs(30), "the container is reset", || counter() > before);
}

// The tests share the process's metrics: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread")]
async fn a_reused_container_holds_nothing_of_the_last_match() {
    let _serial = SERIAL.lock().await;
    let (docker, worker_id) = sandbox("w-reuse", ContainerIsolation::Reused).await;
    let mut hosts = Vec::new();
    let mut kernels = Vec::new();
    for seed in 1..=3 {
        let before = verified();
        let traces = traces_of(&play(&docker, TRACES, seed).await);
        assert_eq!(traces.found, "nothing", "match {seed} found what an earlier one left:\n{}", traces.log);
        hosts.push(traces.host);
        kernels.push(traces.kernel);
        reset_done(before, verified);
    }
    assert!(hosts.windows(2).all(|pair| pair[0] == pair[1]), "one container served every match: {hosts:?}");
    // What the book says a reused container keeps, and nothing else: the pid and
    // System V id counters go on, and the last match's loopback connection is still in
    // TIME_WAIT (the kernel keeps it 60 s; the next match starts within seconds).
    for pair in kernels.windows(2) {
        assert!(pair[1].pid > pair[0].pid && pair[1].sysv_id > pair[0].sysv_id, "{kernels:?}");
        assert!(pair[1].time_wait > 0, "{kernels:?}");
    }
    shut_down_leaving_nothing(docker, &worker_id).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reset_that_cannot_be_verified_replaces_the_container() {
    let _serial = SERIAL.lock().await;
    let (docker, worker_id) = sandbox("w-dirty", ContainerIsolation::Reused).await;
    let before = verified();
    let first_host = traces_of(&play(&docker, TRACES, 1).await).host;
    reset_done(before, verified);

    // Something no bot of 10001 could leave, and so no reset as 10001 can remove: a
    // root-owned file in /tmp (as if the isolation had failed).
    let waiting = containers(WORKER_LABEL, &worker_id);
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let planted = std::process::Command::new("docker")
        .args(["exec", "-u", "0", &waiting[0], "/usr/bin/touch", "/tmp/planted-by-root"])
        .status()
        .expect("docker exec runs");
    assert!(planted.success());

    let before = replaced();
    let Traces { found, host: second_host, log, .. } = traces_of(&play(&docker, TRACES, 2).await);
    assert_eq!(second_host, first_host, "the same container");
    assert_eq!(found, "/tmp/planted-by-root", "{log}");
    reset_done(before, replaced);
    let Traces { found, host: third_host, log, .. } = traces_of(&play(&docker, TRACES, 3).await);
    assert_ne!(third_host, first_host, "a new container");
    assert_eq!(found, "nothing", "{log}");

    shut_down_leaving_nothing(docker, &worker_id).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fresh_containers_serve_one_match_each_and_are_prepared_ahead() {
    let _serial = SERIAL.lock().await;
    let (docker, worker_id) = sandbox("w-fresh", ContainerIsolation::FreshContainer).await;
    let mut hosts = Vec::new();
    for seed in 1..=3 {
        let traces = traces_of(&play(&docker, TRACES, seed).await);
        assert_eq!(traces.found, "nothing", "{}", traces.log);
        // Nothing of the kernel's either: new namespaces start their counters again.
        assert_eq!((traces.kernel.sysv_id, traces.kernel.time_wait), (0, 0), "{:?}", traces.kernel);
        hosts.push(traces.host);
    }
    hosts.sort();
    hosts.dedup();
    assert_eq!(hosts.len(), 3, "a container per match: {hosts:?}");
    shut_down_leaving_nothing(docker, &worker_id).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tournament_that_asks_for_fresh_containers_gets_them_from_a_worker_that_reuses() {
    let _serial = SERIAL.lock().await;
    let (docker, worker_id) = sandbox("w-asks", ContainerIsolation::Reused).await;
    let before = verified();
    let reused_host = traces_of(&play(&docker, TRACES, 1).await).host;
    reset_done(before, verified);
    let fresh = Some(ContainerIsolation::FreshContainer);
    let Traces { found, host: fresh_host, log, .. } = traces_of(&play_asking(&docker, TRACES, 2, fresh).await);
    assert_eq!(found, "nothing", "{log}");
    assert_ne!(fresh_host, reused_host, "not the container that served a match already");
    eventually(Duration::from_secs(30), "the fresh container is removed after its match", || {
        !container_ids(&worker_id).contains(&fresh_host)
    });
    let again = traces_of(&play(&docker, TRACES, 3).await).host;
    assert_eq!(again, reused_host, "matches that do not ask still reuse");
    shut_down_leaving_nothing(docker, &worker_id).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http_bot_plays_with_no_network_and_cannot_reach_the_workers_host() {
    let _serial = SERIAL.lock().await;
    // The port the bot tries (REACH_PORT in bots/hostile/reach-host.py), on every
    // address of the host.
    let listener = std::net::TcpListener::bind("0.0.0.0:47913").expect("port 47913 free on the host");
    listener.set_nonblocking(true).expect("non-blocking");
    let (docker, worker_id) = sandbox("w-http", ContainerIsolation::Reused).await;
    let report = play(&docker, "image+http:matchfarm/hostile reach-host", 4).await;
    let seat = &report.seats[0];
    assert_eq!(seat.outcome.status, PlayerStatus::Ok, "it answered every move over http: {seat:?}");
    assert_eq!(seat.requests, 5, "{seat:?}");
    let log = String::from_utf8_lossy(&seat.log.bytes).into_owned();
    assert!(log.contains("reach-host: blocked (127.0.0.1:47913"), "{log}");
    assert!(log.contains("reach-host: gateways none"), "no route out of the container:\n{log}");
    assert!(!log.contains("OPEN"), "{log}");
    assert_eq!(
        listener.accept().map_err(|error| error.kind()).err(),
        Some(std::io::ErrorKind::WouldBlock),
        "nothing reached the host's port"
    );
    shut_down_leaving_nothing(docker, &worker_id).await;
}
