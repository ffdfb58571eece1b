//! `farm-worker serve` against the real RabbitMQ, S3 server and Docker engine.

use std::time::Duration;

use farm_engine::replay;
use farm_proto::{BotSpec, GameKind, JOBS_QUEUE, MatchJob, MatchResult, PlayerStatus};
use farm_runtime::queue::DEAD_LETTER_QUEUE;
use farm_runtime::settle::{SettleError, Settlement, settle};
use farm_runtime::storage::AttemptKeys;
use farm_testkit::*;
use farm_worker::bots::WORKER_LABEL;

fn bot(spec: &str) -> BotSpec {
    spec.parse().expect("bot spec")
}

fn vindinium_job(tournament: &str, job_id: &str, seed: u64, rules: serde_json::Value, bots: &[&str]) -> MatchJob {
    MatchJob {
        job_id: job_id.to_owned(),
        tournament_id: tournament.to_owned(),
        game: GameKind::Vindinium,
        rules,
        map: Some(std::fs::read_to_string(repo().join("maps/vindinium/m1.txt")).expect("m1")),
        seed,
        bots: bots.iter().map(|spec| bot(spec)).collect(),
        isolation: None,
        clock: Default::default(),
    }
}

fn completed(result: &MatchResult) -> (&Vec<farm_proto::PlayerResult>, &str, &str) {
    match result {
        MatchResult::Completed { players, replay_key, replay_sha256, .. } => (players, replay_key, replay_sha256),
        other => panic!("the match was not played: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_is_played_in_containers_stored_in_s3_published_and_acked() {
    let vhost = Vhost::new("happy");
    let connection = vhost.connect().await;
    let tournament = unique("t-happy");
    let job = vindinium_job(
        &tournament,
        "job-1",
        5,
        serde_json::json!({ "maxTurns": 200, "moveTimeoutMs": 20000 }),
        &["image:matchfarm/bot-vindinium-random-py", "image:matchfarm/bot-vindinium-random-rs", "builtin:greedy"],
    );
    publish_jobs(&connection, 5, &[job]).await;
    let mut results = results_consumer(&connection).await;
    let worker = WorkerProcess::start(&vhost, &unique("w-happy"), 1, 5);

    let result = next_result(&mut results, Duration::from_secs(120)).await;
    assert_eq!(
        (result.job_id.as_str(), result.tournament_id.as_str(), result.attempt),
        ("job-1", tournament.as_str(), 1)
    );
    assert_eq!(result.worker_id, worker.id);
    let (players, replay_key, sha) = completed(&result.result);
    assert_eq!(players.len(), 4, "the fourth seat is filled");
    assert!(players.iter().all(|p| p.outcome.status == PlayerStatus::Ok), "{players:?}");

    // The replay is in S3, compressed, and re-simulates to the reported hash.
    let storage = s3();
    let lines = replay_lines(&storage, replay_key).await;
    let check = replay::verify(&lines).expect("the stored replay reads");
    assert!(check.matches());
    assert_eq!(check.sha256, *sha);
    assert_eq!(check.frames, 200);
    // Each container bot's log and the result document are stored beside it.
    let log_key = players[0].log_key.as_deref().expect("a container bot has a log");
    let log = String::from_utf8(storage.read(log_key).await.expect("log stored")).expect("utf-8 log");
    let seeded = format!("seed {}, seat 0", farm_engine::GameRng::bot_seed(5, 0));
    assert!(log.contains(&seeded), "{log}");
    assert!(players[2].log_key.is_none(), "a built-in bot has no process log");
    let stored: serde_json::Value = serde_json::from_slice(
        &storage.read(&replay_key.replace("replay.jsonl.zst", "result.json")).await.expect("result stored"),
    )
    .expect("json");
    assert_eq!(stored["job_id"], "job-1");

    // Acked: after a clean shutdown nothing is back in the queue, and no container is left.
    let id = worker.id.clone();
    assert!(worker.terminate().success());
    assert_eq!(ready_messages(&connection, JOBS_QUEUE).await, 0);
    assert!(containers(WORKER_LABEL, &id).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_killed_mid_match_loses_nothing_and_the_job_has_one_result() {
    let vhost = Vhost::new("kill");
    let connection = vhost.connect().await;
    let tournament = unique("t-kill");
    // `sleepy` answers every move after 3 s: with a generous deadline the match takes
    // about 9 s, long enough to be killed in the middle.
    let job = vindinium_job(
        &tournament,
        "slow-job",
        9,
        serde_json::json!({ "maxTurns": 12, "moveTimeoutMs": 10000 }),
        &["image:matchfarm/hostile sleepy", "builtin:random", "builtin:random", "builtin:random"],
    );
    publish_jobs(&connection, 5, &[job]).await;
    let mut results = results_consumer(&connection).await;

    // Both on this engine and run directory, with a heartbeat every second.
    let beat = [("FARM_DOCKER__HEARTBEAT_SECS", "1")];
    let first_id = unique("w-first");
    let first = WorkerProcess::start_with(&vhost, &first_id, 1, 5, &beat);
    first.wait_for_a_match();
    first.kill();
    let left = containers(WORKER_LABEL, &first_id);
    assert!(!left.is_empty(), "a SIGKILLed worker leaves its container behind");
    // Each carries the engine it was made on, which only that engine's workers reap.
    let engine = docker(&["info", "--format", "{{.ID}}"]);
    let label = docker(&["inspect", "--format", "{{index .Config.Labels \"matchfarm.engine\"}}", &left[0]]);
    assert_eq!(label, engine);

    let second = WorkerProcess::start_with(&vhost, &unique("w-second"), 1, 5, &beat);
    let result = next_result(&mut results, Duration::from_secs(120)).await;
    assert_eq!(result.job_id, "slow-job");
    // Redelivered: usually as attempt 2, but the killed worker's other lane may take the
    // returned delivery before RabbitMQ has seen that connection die, and lose it again.
    assert!((2..=3).contains(&result.attempt), "the job was redelivered: attempt {}", result.attempt);
    let attempt = format!("/attempt-{}-", result.attempt);
    assert_eq!(result.worker_id, second.id);
    let (players, replay_key, _) = completed(&result.result);
    assert_eq!(players[0].outcome.status, PlayerStatus::Ok);

    // Exactly one result: none from the killed attempt, in S3 or on the queue.
    let storage = s3();
    let stored = storage.list(&AttemptKeys::job_prefix(&tournament, "slow-job")).await.expect("list the job's objects");
    let results: Vec<&String> = stored.iter().filter(|key| key.ends_with("/result.json")).collect();
    assert_eq!(results.len(), 1, "{stored:?}");
    assert!(results[0].contains(&attempt), "{results:?}");
    assert!(stored.iter().any(|key| key.contains(&attempt) && key.ends_with("replay.jsonl.zst")));
    assert!(replay_key.contains(&attempt));

    // The other worker on the engine removes the dead one's containers once its
    // heartbeat has stopped (15 s at the least), and never its own.
    eventually(Duration::from_secs(60), "the killed worker's containers are removed by the other worker", || {
        containers(WORKER_LABEL, &first_id).is_empty()
    });
    assert!(second.metric("farm_worker_containers_reaped_total{whose=\"dead_instance\"}") >= 1.0);
    let second_id = second.id.clone();
    if docker_isolation() == "reused" {
        assert!(!containers(WORKER_LABEL, &second_id).is_empty(), "the live worker keeps its prepared container");
    }
    assert!(second.terminate().success());
    assert!(containers(WORKER_LABEL, &second_id).is_empty(), "a worker that stops removes its own containers");
    let waiting = take_waiting_results(&connection).await;
    assert!(waiting.iter().all(is_notice), "no second result: {waiting:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn poison_jobs_end_in_the_dead_letter_queue() {
    let vhost = Vhost::new("poison");
    let connection = vhost.connect().await;
    let delivery_limit = 2;
    publish_jobs(&connection, delivery_limit, &[]).await;
    // Unreadable: dead-lettered at once. From a future schema: requeued until the
    // delivery limit, then dead-lettered.
    publish_raw(&connection, JOBS_QUEUE, b"this is not a job").await;
    let future = serde_json::json!({ "schema": 999, "job": serde_json::to_value(vindinium_job(
        "t", "future-job", 1, serde_json::Value::Null, &["builtin:random"])).expect("json") });
    publish_raw(&connection, JOBS_QUEUE, future.to_string().as_bytes()).await;
    let mut dead = consume(&connection, DEAD_LETTER_QUEUE).await;
    let worker = WorkerProcess::start(&vhost, &unique("w-poison"), 1, delivery_limit);

    let mut bodies = Vec::new();
    for _ in 0..2 {
        bodies.push(String::from_utf8_lossy(&next_message(&mut dead, Duration::from_secs(60)).await).into_owned());
    }
    assert!(bodies.iter().any(|body| body == "this is not a job"), "{bodies:?}");
    assert!(bodies.iter().any(|body| body.contains("\"future-job\"")), "{bodies:?}");
    assert!(worker.metrics_text().contains("farm_worker_matches_total{game=\"unknown\",outcome=\"requeued\"}"));
    assert!(worker.terminate().success());
    assert_eq!(ready_messages(&connection, JOBS_QUEUE).await, 0);
}

/// One Vindinium match per hostile bot, against three built-in bots.
#[tokio::test(flavor = "multi_thread")]
async fn hostile_bots_get_the_right_status_and_nothing_is_left_running() {
    let vhost = Vhost::new("hostile");
    let connection = vhost.connect().await;
    let tournament = unique("t-hostile");
    // Under gVisor (docs/src/operators/sandboxes.md, "Which sandbox"): a fork bomb takes its own sandbox down
    // (its kernel's threads are what the host counts), and the kernel's OOM kill is
    // inside the sandbox, where the supervisor cannot read it.
    let gvisor = docker_runtime().as_deref() == Some("runsc");
    let fork_bomb = if gvisor { PlayerStatus::Crashed } else { PlayerStatus::Ok };
    // (bot, expected status, OOM-killed)
    let cases = [
        ("crash-start", PlayerStatus::Crashed, false),
        ("crash-mid", PlayerStatus::Crashed, false),
        ("spin", PlayerStatus::TimedOut, false),
        ("sleepy", PlayerStatus::TimedOut, false),
        ("endless-line", PlayerStatus::TimedOut, false),
        ("stderr-flood", PlayerStatus::Ok, false),
        ("fork-bomb", fork_bomb, false),
        ("memory-bomb", PlayerStatus::Crashed, !gvisor),
        ("network", PlayerStatus::Ok, false),
        ("write-outside-tmp", PlayerStatus::Ok, false),
        ("wrong-shape", PlayerStatus::Ok, false),
        // A bot's own signal kills it: Docker's init is PID 1, not the bot.
        ("segfault", PlayerStatus::Crashed, false),
        ("orphan", PlayerStatus::Ok, false),
        ("read-env", PlayerStatus::Ok, false),
        ("fd-hog", PlayerStatus::Ok, false),
    ];
    let jobs: Vec<MatchJob> = cases
        .iter()
        .map(|(name, status, _)| {
            let image = format!("image:matchfarm/hostile {name}");
            // Only the bots meant to miss the deadline get Vindinium's 1 s; the others
            // 10 s, so that a reply delayed by a loaded machine is not a late bot.
            let move_timeout_ms = if *status == PlayerStatus::TimedOut { 1_000 } else { 10_000 };
            vindinium_job(
                &tournament,
                name,
                3,
                serde_json::json!({ "maxTurns": 40, "moveTimeoutMs": move_timeout_ms }),
                &[&image, "builtin:greedy", "builtin:random", "builtin:random"],
            )
        })
        .collect();
    publish_jobs(&connection, 5, &jobs).await;
    let mut results = results_consumer(&connection).await;
    let mut worker = WorkerProcess::start(&vhost, &unique("w-hostile"), 2, 5);

    let storage = s3();
    let mut seen = std::collections::BTreeMap::new();
    while seen.len() < cases.len() {
        let result = next_result(&mut results, Duration::from_secs(180)).await;
        seen.insert(result.job_id.clone(), result);
    }
    for (name, status, oom) in cases {
        let (players, _, _) = completed(&seen[name].result);
        let hostile = &players[0];
        assert_eq!((hostile.outcome.status, hostile.oom_killed), (status, oom), "{name}: {hostile:?}");
        // The other bots' results stand: they played to the end.
        assert!(players[1..].iter().all(|p| p.outcome.status == PlayerStatus::Ok), "{name}: {players:?}");
        let log = storage.read(hostile.log_key.as_deref().expect("log key")).await.expect("log stored");
        let log = String::from_utf8_lossy(&log);
        match name {
            "stderr-flood" => assert_eq!(log.len(), 64 * 1024, "the log is capped"),
            "network" => assert!(log.contains("network: blocked") && !log.contains("OPEN"), "{log}"),
            "write-outside-tmp" => assert!(
                log.contains("write /etc/escape.txt: blocked") && log.contains("write /tmp/ok.txt: ok"),
                "{log}"
            ),
            "orphan" => assert!(log.contains("orphan: left 10"), "{log}"),
            "fd-hog" => assert!(
                log.contains("fd-hog: nofile 1024 1024 core 0 0") && log.contains("files, then [Errno 24]"),
                "{log}"
            ),
            // The image's own variables and the game's; nothing of the worker's.
            "read-env" => {
                let names = log.lines().find_map(|line| line.strip_prefix("read-env: ")).expect("names logged");
                let allowed = [
                    "FARM_PORT",
                    "FARM_SEAT",
                    "FARM_SEED",
                    "HOME",
                    "HOSTNAME",
                    "LANG",
                    "PATH",
                    "PYTHONDONTWRITEBYTECODE",
                ];
                assert!(names.split(' ').all(|name| allowed.contains(&name)), "{names}");
            }
            _ => {}
        }
    }
    assert!(worker.is_running());
    worker.wait_until(Duration::from_secs(5), |status, _| status == 200);
    let id = worker.id.clone();
    assert!(worker.terminate().success());
    assert!(containers(WORKER_LABEL, &id).is_empty(), "every container removed");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_infrastructure_failure_requeues_the_job_until_it_is_dead_lettered() {
    let vhost = Vhost::new("infra");
    let connection = vhost.connect().await;
    let delivery_limit = 2;
    let job =
        vindinium_job(&unique("t-infra"), "unstorable", 2, serde_json::json!({ "maxTurns": 8 }), &["builtin:random"]);
    publish_jobs(&connection, delivery_limit, &[job]).await;
    let mut dead = consume(&connection, DEAD_LETTER_QUEUE).await;
    // Storage fails: nothing listens at its endpoint. The match plays, its replay
    // cannot be stored, so the job is requeued, never acked and never answered.
    let nowhere = format!("http://{}", free_port());
    let env = [("FARM_STORAGE__ENDPOINT", nowhere.as_str()), ("FARM_STORAGE__RETRY_SECS", "1")];
    let worker = WorkerProcess::start_with(&vhost, &unique("w-infra"), 1, delivery_limit, &env);
    let body = next_message(&mut dead, Duration::from_secs(60)).await;
    assert!(String::from_utf8_lossy(&body).contains("\"unstorable\""));
    let requeued = worker
        .metrics_text()
        .lines()
        .find_map(|line| {
            line.strip_prefix("farm_worker_matches_total{game=\"vindinium\",outcome=\"requeued\"} ").map(str::to_owned)
        })
        .expect("requeues are counted");
    // The limit counts redeliveries: the first delivery plus `delivery_limit` more.
    assert_eq!(requeued.trim(), (delivery_limit + 1).to_string());
    assert!(worker.terminate().success());
    let waiting = take_waiting_results(&connection).await;
    assert!(waiting.iter().all(is_notice), "no result for a job that was not stored: {waiting:?}");
    assert_eq!(waiting.len() as u32, delivery_limit + 1, "a notice of each delivery given back: {waiting:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_drains_the_match_in_flight_and_a_second_signal_requeues_it() {
    let vhost = Vhost::new("drain");
    let tournament = unique("t-drain");
    let slow = |job_id: &str| {
        let rules = serde_json::json!({ "maxTurns": 8, "moveTimeoutMs": 10000 });
        vindinium_job(&tournament, job_id, 4, rules, &["image:matchfarm/hostile sleepy", "builtin:random"])
    };
    let (drained, stopped) = (unique("drained"), unique("stopped"));

    // One signal: intake stops, the match in flight finishes, its result is published.
    {
        let connection = vhost.connect().await;
        publish_jobs(&connection, 5, &[slow(&drained)]).await;
        let mut results = results_consumer(&connection).await;
        let worker = WorkerProcess::start(&vhost, &unique("w-drain"), 1, 5);
        worker.wait_for_a_match();
        let id = worker.id.clone();
        assert!(worker.terminate().success());
        let result = next_result(&mut results, Duration::from_secs(10)).await;
        assert_eq!(result.job_id, drained);
        completed(&result.result);
        assert!(containers(WORKER_LABEL, &id).is_empty());
        connection.close(0, "done".into()).await.expect("close");
    }

    // A second signal: the match stops, its bots are removed, its job goes back.
    let connection = vhost.connect().await;
    publish_jobs(&connection, 5, &[slow(&stopped)]).await;
    let worker = WorkerProcess::start(&vhost, &unique("w-abort"), 1, 5);
    worker.wait_for_a_match();
    let id = worker.id.clone();
    worker.abort();
    assert!(worker.wait().success());
    assert!(containers(WORKER_LABEL, &id).is_empty(), "the stopped match's containers are removed");
    assert_eq!(ready_messages(&connection, JOBS_QUEUE).await, 1, "the stopped job is requeued");
    let waiting = take_waiting_results(&connection).await;
    assert!(waiting.iter().all(is_notice) && waiting.len() == 1, "no result, only its notice: {waiting:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_that_panics_is_requeued_alone_and_an_answered_one_is_left_alone() {
    let vhost = Vhost::new("panic");
    let connection = vhost.connect().await;
    let tournament = unique("t-panic");
    let job = vindinium_job(&tournament, "panics", 1, serde_json::Value::Null, &["builtin:random"]);
    publish_jobs(&connection, 5, &[job]).await;
    let mut jobs = consume(&connection, JOBS_QUEUE).await;

    // A panic mid-job gives the delivery back: it comes again, one attempt later.
    let first = next_delivery(&mut jobs).await;
    assert_eq!(farm_runtime::queue::attempt(&first.properties), 1);
    let panicked = farm_runtime::settle::requeue_if_it_panics(&first.acker, async { panic!("a bug in one match") });
    assert!(panicked.await);
    let again = next_delivery(&mut jobs).await;
    assert_eq!(farm_runtime::queue::attempt(&again.properties), 2);

    // Answered before the panic, it stays answered: nothing comes back.
    let acker = again.acker.clone();
    let answered_then_panicked = farm_runtime::settle::requeue_if_it_panics(&acker, async {
        again.acker.ack(lapin::options::BasicAckOptions::default()).await.expect("ack");
        panic!("a bug after the ack");
    });
    assert!(answered_then_panicked.await);
    // A job that does not panic is left to its own answer.
    assert!(!farm_runtime::settle::requeue_if_it_panics(&acker, async {}).await);
    drop(jobs);
    assert_eq!(ready_messages(&connection, JOBS_QUEUE).await, 0);
}

/// The next delivery on `consumer`, unsettled; fails the test after 30 s.
async fn next_delivery(consumer: &mut lapin::Consumer) -> lapin::message::Delivery {
    let next = tokio::time::timeout(Duration::from_secs(30), futures_util::StreamExt::next(consumer)).await;
    next.expect("a delivery in time").expect("consumer open").expect("delivery")
}

/// How every lane settles a delivery ([`settle`]), against the broker: a requeue waits
/// its delay, holding the delivery, or is made at once when the worker stops; a reject
/// dead-letters it; an ack is the end of it; and a delivery is settled once.
#[tokio::test(flavor = "multi_thread")]
async fn a_delivery_is_requeued_after_its_delay_or_at_a_stop_rejected_to_the_dead_letters_or_acked() {
    let vhost = Vhost::new("settle");
    let connection = vhost.connect().await;
    let tournament = unique("t-settle");
    let job = |job_id: &str| vindinium_job(&tournament, job_id, 1, serde_json::Value::Null, &["builtin:random"]);
    publish_jobs(&connection, 5, &[job("settled")]).await;
    let mut jobs = consume(&connection, JOBS_QUEUE).await;
    let mut dead = consume(&connection, DEAD_LETTER_QUEUE).await;
    let (stop, stopped) = tokio::sync::watch::channel(false);

    let first = next_delivery(&mut jobs).await;
    let delay = Duration::from_millis(500);
    let start = tokio::time::Instant::now();
    settle(&first.acker, Settlement::RequeueAfter(delay), stopped.clone()).await.expect("requeued");
    assert!(start.elapsed() >= delay, "requeued after its delay");
    let second = next_delivery(&mut jobs).await;
    assert_eq!(farm_runtime::queue::attempt(&second.properties), 2);

    // An hour's delay, and the worker stops: requeued then.
    let waiting = settle(&second.acker, Settlement::RequeueAfter(Duration::from_secs(3600)), stopped.clone());
    let stopping = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.send_replace(true);
    };
    let (requeued, ()) = tokio::time::timeout(Duration::from_secs(30), async { tokio::join!(waiting, stopping) })
        .await
        .expect("in time");
    requeued.expect("requeued");
    let third = next_delivery(&mut jobs).await;
    assert_eq!(farm_runtime::queue::attempt(&third.properties), 3);

    settle(&third.acker, Settlement::Reject, stopped.clone()).await.expect("rejected");
    let body = next_message(&mut dead, Duration::from_secs(30)).await;
    assert!(String::from_utf8_lossy(&body).contains("\"settled\""), "dead-lettered");
    let again = settle(&third.acker, Settlement::Ack, stopped.clone()).await;
    assert!(matches!(again, Err(SettleError::Spent)), "settled once: {again:?}");

    publish_jobs(&connection, 5, &[job("acked")]).await;
    let fourth = next_delivery(&mut jobs).await;
    settle(&fourth.acker, Settlement::Ack, stopped).await.expect("acked");
    drop((jobs, dead));
    assert_eq!(ready_messages(&connection, JOBS_QUEUE).await, 0, "nothing comes back");
    assert_eq!(ready_messages(&connection, DEAD_LETTER_QUEUE).await, 0);
}
