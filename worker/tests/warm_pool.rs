//! The warm pool against the real RabbitMQ, S3 server and Docker engine: a job queued
//! behind a match in flight has its containers prepared while that match plays, its
//! bot starts only when its own match does, and no container outlives the worker
//! however it stops.
//!
//! Each test first starts a slow match (`sleepy` answers each move after 3 s, so the
//! match takes about 12 s) on a worker with one slot, and only then queues a second,
//! quick job: the order of the two is never left to chance.

use std::time::Duration;

use farm_proto::{GameKind, JOBS_QUEUE, MatchJob, MatchResult, PlayerStatus};
use farm_testkit::*;
use farm_worker::bots::{IMAGE_LABEL, WORKER_LABEL};

/// The quick job's container bot.
const QUICK_IMAGE: &str = "matchfarm/bot-vindinium-random-py";

fn job(tournament: &str, job_id: &str, seed: u64, rules: serde_json::Value, bots: &[&str]) -> MatchJob {
    MatchJob {
        job_id: job_id.to_owned(),
        tournament_id: tournament.to_owned(),
        game: GameKind::Vindinium,
        rules,
        map: Some(std::fs::read_to_string(repo().join("maps/vindinium/m1.txt")).expect("m1")),
        seed,
        bots: bots.iter().map(|spec| spec.parse().expect("bot spec")).collect(),
        isolation: None,
        clock: Default::default(),
    }
}

/// Four moves of `sleepy`: the match ahead, long enough for the next job to wait.
fn slow_job(tournament: &str, job_id: &str) -> MatchJob {
    let rules = serde_json::json!({ "maxTurns": 16, "moveTimeoutMs": 10000 });
    job(tournament, job_id, 1, rules, &["image:matchfarm/hostile sleepy", "builtin:random"])
}

/// A short match whose container bot logs its seed and seat.
fn quick_job(tournament: &str, job_id: &str) -> MatchJob {
    let rules = serde_json::json!({ "maxTurns": 20, "moveTimeoutMs": 20000 });
    job(tournament, job_id, 6, rules, &[&format!("image:{QUICK_IMAGE}"), "builtin:random"])
}

const HITS: &str = "farm_worker_warm_pool_total{outcome=\"hit\"}";
const MISSES: &str = "farm_worker_warm_pool_total{outcome=\"miss\"}";

/// Starts a worker with one slot and `env`, plays the slow job on it, and queues the
/// quick one once the slow match has begun. Returns the worker and the two job ids.
async fn slow_then_quick(vhost: &Vhost, name: &str, env: &[(&str, &str)]) -> (WorkerProcess, String, String) {
    let connection = vhost.connect().await;
    let tournament = unique(&format!("t-{name}"));
    let (slow, quick) = (unique("slow"), unique("quick"));
    publish_jobs(&connection, 5, &[slow_job(&tournament, &slow)]).await;
    let worker = WorkerProcess::start_with(vhost, &unique(&format!("w-{name}")), 1, 5, env);
    worker.wait_for_a_match();
    publish_jobs(&connection, 5, &[quick_job(&tournament, &quick)]).await;
    (worker, slow, quick)
}

/// Waits until a container for the quick job waits prepared while the slow match still
/// plays, and checks that its bot does not run: the supervisor is its only process.
/// Returns the container's name.
fn quick_is_prepared_for(worker: &WorkerProcess) -> String {
    let mut prepared = None;
    eventually(Duration::from_secs(60), "the queued job's container is prepared while the match ahead plays", || {
        let running = quick_containers(&worker.id)
            .into_iter()
            .find_map(|name| Some((processes_in(&name)?, name)))
            // Started: its supervisor runs (a container being created shows `runc init`).
            .filter(|(processes, _)| processes.iter().any(|process| process.contains("farm-supervisor")));
        prepared = running;
        worker.metric("farm_worker_warm_bots") == 1.0 && prepared.is_some()
    });
    assert_eq!(worker.metric("farm_worker_jobs_in_flight"), 1.0, "the match ahead still plays");
    let (processes, name) = prepared.expect("found");
    assert_eq!(processes.len(), 1, "only the supervisor runs before the match: {processes:?}");
    assert!(processes[0].contains("farm-supervisor"), "{processes:?}");
    name
}

/// The worker's containers for the quick job's image.
fn quick_containers(worker_id: &str) -> Vec<String> {
    let mut prepared = containers(IMAGE_LABEL, QUICK_IMAGE);
    let of_worker = containers(WORKER_LABEL, worker_id);
    prepared.retain(|name| of_worker.contains(name));
    prepared
}

/// The command lines of the processes running in a container; `None` if it does not
/// run (yet).
fn processes_in(container: &str) -> Option<Vec<String>> {
    let output = std::process::Command::new("docker")
        .args(["top", container, "-o", "pid,args"])
        .output()
        .expect("docker top runs");
    let lines = String::from_utf8_lossy(&output.stdout).lines().skip(1).map(str::to_owned).collect();
    output.status.success().then_some(lines)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queued_job_plays_in_the_container_prepared_while_the_match_ahead_played() {
    let vhost = Vhost::new("warm-hit");
    let connection = vhost.connect().await;
    let (worker, _slow, quick) = slow_then_quick(&vhost, "hit", &[]).await;
    let mut results = results_consumer(&connection).await;
    let prepared = quick_is_prepared_for(&worker);

    let mut seen = std::collections::BTreeMap::new();
    while seen.len() < 2 {
        let result = next_result(&mut results, Duration::from_secs(120)).await;
        seen.insert(result.job_id.clone(), result);
    }
    let MatchResult::Completed { players, .. } = &seen[&quick].result else {
        panic!("the queued match failed: {:?}", seen[&quick].result);
    };
    assert!(players.iter().all(|p| p.outcome.status == PlayerStatus::Ok), "{players:?}");
    // The bot started with the match, with its own seed and seat, in the container
    // prepared for it (taken, not prepared again: the pool holds it or it is gone).
    let log_key = players[0].log_key.as_deref().expect("a container bot has a log");
    let log = String::from_utf8(s3().read(log_key).await.expect("log stored")).expect("utf-8 log");
    let seeded = format!("seed {}, seat 0", farm_engine::GameRng::bot_seed(6, 0));
    assert!(log.contains(&seeded), "{log}");
    assert_eq!(worker.metric("farm_worker_containers_taken_total{outcome=\"prepared\"}"), 1.0);
    if docker_isolation() == "reused" {
        assert!(quick_containers(&worker.id).contains(&prepared), "reset and kept for the next match");
    } else {
        eventually(Duration::from_secs(30), "the fresh container is removed after its match", || {
            !quick_containers(&worker.id).contains(&prepared)
        });
    }
    // The slow match found nothing prepared (nothing was queued), the quick one did.
    assert_eq!((worker.metric(HITS), worker.metric(MISSES)), (1.0, 1.0));
    assert_eq!(worker.metric("farm_worker_warm_bots"), 0.0);

    let id = worker.id.clone();
    assert!(worker.terminate().success());
    assert!(containers(WORKER_LABEL, &id).is_empty(), "no container left");
    assert_eq!(ready_messages(&connection, JOBS_QUEUE).await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_drain_requeues_the_job_not_begun_and_removes_its_prepared_containers() {
    let vhost = Vhost::new("warm-drain");
    let connection = vhost.connect().await;
    let (worker, slow, _quick) = slow_then_quick(&vhost, "drain", &[]).await;
    let mut results = results_consumer(&connection).await;
    quick_is_prepared_for(&worker);

    let id = worker.id.clone();
    assert!(worker.terminate().success());
    let result = next_result(&mut results, Duration::from_secs(10)).await;
    assert_eq!(result.job_id, slow, "the match in flight finishes");
    assert!(containers(WORKER_LABEL, &id).is_empty(), "no container left, warm or not");
    assert_eq!(ready_messages(&connection, JOBS_QUEUE).await, 1, "the job not begun is requeued");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_abort_requeues_both_jobs_and_removes_every_container() {
    let vhost = Vhost::new("warm-abort");
    let connection = vhost.connect().await;
    let (worker, _slow, _quick) = slow_then_quick(&vhost, "abort", &[]).await;
    quick_is_prepared_for(&worker);

    let id = worker.id.clone();
    worker.abort();
    assert!(worker.wait().success());
    assert!(containers(WORKER_LABEL, &id).is_empty(), "no container left, warm or not");
    assert_eq!(ready_messages(&connection, JOBS_QUEUE).await, 2, "both jobs are requeued");
    let waiting = take_waiting_results(&connection).await;
    assert!(waiting.iter().all(is_notice), "no result, only notices that they were returned: {waiting:?}");
    assert_eq!(waiting.len(), 2, "a notice for each: {waiting:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn prepared_containers_idle_out_and_the_match_prepares_its_own_later() {
    let vhost = Vhost::new("warm-idle");
    let connection = vhost.connect().await;
    let idle = [("FARM_WARM_IDLE_SECS", "1"), ("FARM_DOCKER__PREPARED_IDLE_SECS", "1")];
    let (worker, _slow, _quick) = slow_then_quick(&vhost, "idle", &idle).await;
    let mut results = results_consumer(&connection).await;
    quick_is_prepared_for(&worker);

    // Both long before the slow match ends.
    eventually(Duration::from_secs(30), "the waiting match gives up its room", || {
        worker.metric("farm_worker_warm_discarded_total{reason=\"idle\"}") == 1.0
    });
    eventually(Duration::from_secs(30), "the idle prepared container is removed", || {
        quick_containers(&worker.id).is_empty()
    });
    assert_eq!(worker.metric("farm_worker_jobs_in_flight"), 1.0, "while the match ahead still plays");

    let mut completed = 0;
    while completed < 2 {
        let result = next_result(&mut results, Duration::from_secs(120)).await;
        assert!(matches!(result.result, MatchResult::Completed { .. }), "{result:?}");
        completed += 1;
    }
    assert_eq!((worker.metric(HITS), worker.metric(MISSES)), (0.0, 2.0), "neither counted as prepared ahead");
    let id = worker.id.clone();
    assert!(worker.terminate().success());
    assert!(containers(WORKER_LABEL, &id).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn prepared_containers_left_by_a_killed_worker_are_removed_once_its_heartbeat_stops() {
    let vhost = Vhost::new("warm-crash");
    let (worker, _slow, _quick) = slow_then_quick(&vhost, "crash", &[]).await;
    quick_is_prepared_for(&worker);
    let id = worker.id.clone();
    worker.kill();
    let left = containers(WORKER_LABEL, &id);
    assert!(!left.is_empty(), "a SIGKILLed worker leaves its containers behind");

    // The restarted worker (a new instance under the same id) plays both jobs again, in
    // containers of its own, and removes the leftovers once the killed instance's
    // heartbeat has stopped (15 s at the least): the names (unique per container) tell
    // them apart.
    let restarted = WorkerProcess::start(&vhost, &id, 1, 5);
    eventually(Duration::from_secs(60), "the killed instance's containers are removed", || {
        let now = containers(WORKER_LABEL, &id);
        left.iter().all(|name| !now.contains(name))
    });
    assert!(restarted.terminate().success());
    assert!(containers(WORKER_LABEL, &id).is_empty());
}
