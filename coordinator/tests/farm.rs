//! The whole farm against the real services: a `farm-coordinator serve` process, two
//! `farm-worker serve` processes with Docker bots, RabbitMQ and the S3 server. The
//! coordinator is killed half-way and started again; the tournament still ends with
//! every match recorded once, and with the same standings as `farm-coordinator run`
//! gives on this machine with local processes.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use farm_proto::RESULTS_QUEUE;
use farm_testkit::{Vhost, WorkerProcess, eventually, http_get, repo, s3};
use support::{CoordinatorProcess, TOKEN, cli};

/// A Botwars round robin whose bots run as images in the farm and as commands in `run`.
fn tournament_file(dir: &Path) -> PathBuf {
    let rust_bot = repo().join("target/debug/botwars-random-bot");
    assert!(rust_bot.exists(), "{} is missing: build the workspace first", rust_bot.display());
    let text = format!(
        r#"
name = "farm end to end"
game = "botwars"
format = "round-robin"
games_per_pairing = 2
seed = 11

[rules]
# Longer matches than the default 100 turns, so that the coordinator is surely
# killed with matches still to play.
maxTurns = 1000

[[bots]]
name = "gatherer"
builtin = "gatherer"

[[bots]]
name = "random"
builtin = "random"

[[bots]]
name = "random-py"
command = "python3 bots/botwars/random_bot.py"
image = "matchfarm/bot-botwars-random-py"

[[bots]]
name = "random-rs"
command = "{}"
image = "matchfarm/bot-botwars-random-rs"
"#,
        rust_bot.display()
    );
    let path = dir.join("tournament.toml");
    std::fs::write(&path, text).expect("write the tournament file");
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn a_round_robin_survives_a_coordinator_restart_and_matches_the_embedded_run() {
    let vhost = Vhost::new("farm-e2e");
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = dir.path().join("ledger.sqlite");
    let file = tournament_file(dir.path());
    let file_arg = file.to_str().expect("UTF-8 path");

    let coordinator = CoordinatorProcess::start(&vhost, &ledger);
    let url = coordinator.url();
    let submit = ["submit", file_arg, "--url", &url, "--token", TOKEN];
    let id = cli(&submit).trim().to_owned();
    assert!(id.starts_with("t-"), "{id}");
    assert_eq!(cli(&submit).trim(), id, "submitting again names the same tournament");
    assert_eq!(coordinator.progress(&id)["total"], 24, "12 ordered pairs, 2 games each, created once");

    let workers = [
        WorkerProcess::start(&vhost, &farm_testkit::unique("e2e-a"), 1, 5),
        WorkerProcess::start(&vhost, &farm_testkit::unique("e2e-b"), 1, 5),
    ];
    eventually(Duration::from_secs(300), "a third of the matches are recorded", || {
        coordinator.progress(&id)["done"].as_u64().is_some_and(|done| done >= 8)
    });
    coordinator.kill();
    let answered_before = {
        let ledger = farm_coordinator::ledger::Ledger::open(&ledger).expect("the ledger opens");
        let progress = ledger.progress(&id).await.expect("progress").expect("the tournament");
        assert!(progress.done < 24, "killed half-way, not at the end: {progress:?}");
        progress.done
    };

    let coordinator = CoordinatorProcess::start(&vhost, &ledger);
    eventually(Duration::from_secs(600), "every match is recorded", || {
        let progress = coordinator.progress(&id);
        progress["done"].as_u64().zip(progress["failed"].as_u64()).is_some_and(|(done, failed)| done + failed == 24)
    });
    let progress = coordinator.progress(&id);
    assert_eq!(progress["done"], 24, "no match failed: {progress}");
    assert!(answered_before >= 8);

    // A result delivered twice is counted and dropped: standings do not move.
    let standings_json = |coordinator: &CoordinatorProcess| {
        let url = coordinator.url();
        serde_json::from_str::<serde_json::Value>(&cli(&["standings", &id, "--url", &url, "--format", "json"]))
            .expect("standings JSON")
    };
    // Jobs published again after the restart may still be playing: wait until the
    // farm is quiet, so that every duplicate they make is in.
    let connection = vhost.connect().await;
    let mut quiet = false;
    for _ in 0..600 {
        let idle = workers.iter().all(|worker| worker.metrics_text().contains("farm_worker_jobs_in_flight 0"));
        if idle
            && farm_testkit::ready_messages(&connection, farm_proto::JOBS_QUEUE).await == 0
            && farm_testkit::ready_messages(&connection, RESULTS_QUEUE).await == 0
        {
            quiet = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(quiet, "the farm did not go quiet within a minute");
    let farm_standings = standings_json(&coordinator);
    let duplicates_before = coordinator.progress(&id)["duplicates"].as_u64().expect("duplicates");
    let storage = s3();
    let results: Vec<String> = storage
        .list(&format!("tournaments/{id}/jobs"))
        .await
        .expect("list results")
        .into_iter()
        .filter(|key| key.ends_with("/result.json"))
        .collect();
    assert!(results.len() >= 24, "a result document per match: {}", results.len());
    // One of this run's: the tournament's id is its content's, so the bucket may hold an
    // earlier run's documents too, signed with another ledger's tokens.
    let mut ours = None;
    for key in &results {
        let document = storage.read(key).await.expect("a result document");
        let worker = serde_json::from_slice::<farm_proto::ResultEnvelope>(&document).expect("a result").worker_id;
        if workers.iter().any(|played| played.id == worker) {
            ours = Some((document, worker));
            break;
        }
    }
    // Sent again by the worker that played it, as a redelivery would make it.
    let (document, played_by) = ours.expect("a result document of this run's workers");
    let again = lapin::Connection::connect(&vhost.worker_url(&played_by), Default::default()).await.expect("connect");
    let publisher = farm_runtime::queue::ConfirmedPublisher::open_as(&again, &played_by).await.expect("publisher");
    publisher.publish(RESULTS_QUEUE, &document).await.expect("publish the duplicate");
    eventually(Duration::from_secs(30), "the duplicate is counted", || {
        coordinator.progress(&id)["duplicates"].as_u64().is_some_and(|count| count > duplicates_before)
    });
    assert_eq!(standings_json(&coordinator)["rows"], farm_standings["rows"], "a duplicate changes nothing");
    let metrics = http_get(coordinator.api, "/metrics").expect("metrics").1;
    for name in ["farm_coordinator_jobs_confirmed_total", "farm_coordinator_duplicate_results_total"] {
        assert!(metrics.contains(name), "{name} missing from the coordinator's metrics");
    }

    // The same file on one machine, bots as local processes: the same matches (the
    // bots seed from FARM_SEED), so the same standings.
    let data = dir.path().join("embedded");
    let embedded = cli(&["run", file_arg, "--data", data.to_str().expect("UTF-8"), "--format", "json"]);
    let embedded: serde_json::Value = serde_json::from_str(&embedded).expect("run prints JSON standings");
    assert_eq!(embedded["rows"], farm_standings["rows"], "the farm and `run` agree");
    assert_eq!(embedded["tournament_id"], farm_standings["tournament_id"]);
    let played: u64 =
        farm_standings["rows"].as_array().expect("rows").iter().filter_map(|row| row["played"].as_u64()).sum();
    assert_eq!(played, 48, "24 matches, two bots each");

    for worker in workers {
        assert!(worker.terminate().success());
    }
}

/// Submits to `coordinator` a Botwars tournament named `name` of one match between two
/// built-in bots, with the rules `rules` (a JSON object of numbers: `{}` for the
/// defaults), written in `dir`; returns its id.
fn submit_one_match(coordinator: &CoordinatorProcess, dir: &Path, name: &str, rules: &serde_json::Value) -> String {
    let file = dir.join(format!("{name}.toml"));
    let rules: String = rules
        .as_object()
        .expect("rules are an object")
        .iter()
        .map(|(key, value)| format!("{key} = {value}\n"))
        .collect();
    let text = format!(
        "name = \"{name}\"\ngame = \"botwars\"\nformat = \"single\"\n[rules]\n{rules}\
         [[bots]]\nname = \"a\"\nbuiltin = \"random\"\n[[bots]]\nname = \"b\"\nbuiltin = \"gatherer\"\n"
    );
    std::fs::write(&file, text).expect("write");
    let url = coordinator.url();
    cli(&["submit", file.to_str().expect("UTF-8"), "--url", &url, "--token", TOKEN]).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_outage_does_not_use_up_a_jobs_deliveries_until_it_has_started_over_ten_times() {
    let vhost = Vhost::new("farm-dead");
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = dir.path().join("ledger.sqlite");
    let coordinator = CoordinatorProcess::start_with(&vhost, &ledger, &[("FARM_DELIVERY_LIMIT", "1")]);
    let id = submit_one_match(&coordinator, dir.path(), "doomed", &serde_json::json!({}));
    // Its storage is unreachable: every try fails, and the worker gives the job back
    // saying so, until RabbitMQ dead-letters it after delivery_limit + 1 = 2 tries.
    // The deliveries were lost to an outage, not to the job: it starts over, afresh,
    // ten times, and only the eleventh dead letter fails it.
    let _worker = WorkerProcess::start_with(
        &vhost,
        &farm_testkit::unique("dead"),
        1,
        1,
        &[("FARM_STORAGE__ENDPOINT", "http://127.0.0.1:1"), ("FARM_STORAGE__RETRY_SECS", "0")],
    );
    eventually(Duration::from_secs(300), "the job is failed", || coordinator.progress(&id)["failed"] == 1);
    let matches = coordinator.get_json(&format!("/api/tournaments/{id}/matches?status=failed"));
    let reason = matches["matches"][0]["reason"].as_str().expect("a reason").to_owned();
    assert!(reason.starts_with("dead-lettered by RabbitMQ after"), "{reason}");
    assert!(reason.ends_with("after 10 fresh starts for deliveries lost to outages"), "{reason}");
    let metrics = http_get(coordinator.api, "/metrics").expect("metrics").1;
    assert!(metrics.contains("farm_coordinator_dead_letters_total 11"), "{metrics}");
    assert!(metrics.contains("farm_coordinator_jobs_restarted_total 10"), "{metrics}");
    let returned = metrics
        .lines()
        .find_map(|line| line.strip_prefix("farm_coordinator_deliveries_returned_total "))
        .and_then(|count| count.parse::<u64>().ok());
    assert!(returned.is_some_and(|count| count >= 11), "a notice for every round at least: {returned:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn results_that_do_not_fit_their_job_are_refused_counted_and_set_aside() {
    use farm_proto::{JobEnvelope, ResultEnvelope};
    use farm_runtime::queue::SET_ASIDE_QUEUE;
    use farm_runtime::storage::AttemptKeys;
    use futures_util::StreamExt;

    let vhost = Vhost::new("farm-forged");
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = dir.path().join("ledger.sqlite");
    let coordinator = CoordinatorProcess::start(&vhost, &ledger);
    let id = submit_one_match(&coordinator, dir.path(), "guarded", &serde_json::json!({}));

    // No worker: the test takes the job off the queue itself, as a worker with broker
    // credentials of its own, and answers it as a forger holding the job would.
    let holder = farm_testkit::unique("holder");
    let connection = lapin::Connection::connect(&vhost.worker_url(&holder), Default::default()).await.expect("connect");
    let mut jobs = farm_testkit::consume(&connection, farm_proto::JOBS_QUEUE).await;
    let delivery = jobs.next().await.expect("the job is published").expect("a delivery");
    let delivered = serde_json::from_slice::<JobEnvelope>(&delivery.data).expect("a job envelope");
    let job = &delivered.job;
    delivery.acker.ack(lapin::options::BasicAckOptions::default()).await.expect("ack");
    let results = farm_runtime::queue::ConfirmedPublisher::open_as(&connection, &holder).await.expect("publisher");
    let completed = completed_without_play;
    let honest_key = AttemptKeys::new(&job.tournament_id, &job.job_id, 1).replay();

    let mut other_tournament = ResultEnvelope::new(&delivered, &holder, 1, completed(honest_key.clone()));
    other_tournament.tournament_id = "t-someone-elses".to_owned();
    let outside_its_prefix =
        ResultEnvelope::new(&delivered, &holder, 1, completed("secrets/credentials.json".to_owned()));
    let other_attempt = ResultEnvelope::new(&delivered, &holder, 2, completed(honest_key.clone()));
    let mut other_schema =
        serde_json::to_value(ResultEnvelope::new(&delivered, &holder, 1, completed(honest_key.clone()))).expect("JSON");
    other_schema["schema"] = serde_json::json!(farm_proto::SCHEMA_VERSION + 1);
    for forged in [other_tournament, outside_its_prefix, other_attempt] {
        let body = serde_json::to_vec(&forged).expect("JSON");
        results.publish(RESULTS_QUEUE, &body).await.expect("publish");
    }
    results.publish(RESULTS_QUEUE, &serde_json::to_vec(&other_schema).expect("JSON")).await.expect("publish");
    results.publish(RESULTS_QUEUE, b"not a result").await.expect("publish");

    let metric = |sample: &str| {
        let metrics = http_get(coordinator.api, "/metrics").expect("metrics").1;
        metrics.lines().find_map(|line| line.strip_prefix(sample)).and_then(|value| value.trim().parse::<u64>().ok())
    };
    let dropped = |reason: &str| format!("farm_coordinator_results_dropped_total{{reason=\"{reason}\"}}");
    eventually(Duration::from_secs(30), "the three forged results are refused", || {
        metric(&dropped("mismatch")) == Some(3)
    });
    eventually(Duration::from_secs(30), "both unusable messages are counted", || {
        metric(&dropped("schema")) == Some(1) && metric(&dropped("unreadable")) == Some(1)
    });
    let admin = vhost.connect().await;
    assert_eq!(farm_testkit::ready_messages(&admin, SET_ASIDE_QUEUE).await, 2, "kept, not dropped");
    assert_eq!(coordinator.progress(&id)["done"], 0, "no forged result was recorded");

    // The job's own result, with keys of its attempt, is recorded as ever.
    let honest = ResultEnvelope::new(&delivered, &holder, 1, completed(honest_key));
    results.publish(RESULTS_QUEUE, &serde_json::to_vec(&honest).expect("JSON")).await.expect("publish");
    eventually(Duration::from_secs(30), "the honest result is recorded", || coordinator.progress(&id)["done"] == 1);
    assert_eq!(metric(&dropped("mismatch")), Some(3));
}

/// A completed result as a forger makes it up: no play, a replay key of its choice.
fn completed_without_play(replay_key: String) -> farm_proto::MatchResult {
    farm_proto::MatchResult::Completed {
        steps: 1,
        players: Vec::new(),
        replay_key,
        replay_sha256: "0".repeat(64),
        duration_ms: 1,
        reproduction: None,
    }
}

/// RabbitMQ users made for one test, deleted when it ends.
struct RabbitUsers(Vec<String>);

impl Drop for RabbitUsers {
    fn drop(&mut self) {
        for user in &self.0 {
            farm_testkit::rabbitmq_api("DELETE", &format!("/api/users/{user}"), None);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workers_rabbitmq_user_takes_jobs_and_publishes_results_and_nothing_else() {
    use farm_proto::JOBS_QUEUE;
    use farm_runtime::queue::{self, ConfirmedPublisher};
    use futures_util::StreamExt;
    use lapin::options::{BasicAckOptions, BasicConsumeOptions, QueueDeleteOptions};
    use lapin::{Connection, ConnectionProperties, types::FieldTable};

    // deploy/rabbitmq/users.py's definitions, imported as an operator would.
    let vhost = Vhost::new("farm-users");
    let (coordinator_user, worker_user) = (farm_testkit::unique("coordinator"), farm_testkit::unique("worker"));
    let password = "a-password-for-this-test";
    let definitions = std::process::Command::new("python3")
        .arg(repo().join("deploy/rabbitmq/users.py"))
        .args(["--vhost", &vhost.name, "--coordinator-user", &coordinator_user, "--worker-user", &worker_user])
        .env("FARM_RABBITMQ_COORDINATOR_PASSWORD", password)
        .env("FARM_RABBITMQ_WORKER_PASSWORD", password)
        .output()
        .expect("python3 runs");
    assert!(definitions.status.success(), "users.py: {}", String::from_utf8_lossy(&definitions.stderr));
    let definitions = String::from_utf8(definitions.stdout).expect("UTF-8 definitions");
    farm_testkit::rabbitmq_api("POST", "/api/definitions", Some(&definitions));
    let _users = RabbitUsers(vec![coordinator_user.clone(), worker_user.clone()]);
    assert!(vhost.url.contains("//farm:farm@"), "the test URL names the test user: {}", vhost.url);
    let connect = |user: &str| {
        let url = vhost.url.replacen("//farm:farm@", &format!("//{user}:{password}@"), 1);
        async move { Connection::connect(&url, ConnectionProperties::default()).await.expect("the user connects") }
    };

    let coordinator = connect(&coordinator_user).await;
    let channel = coordinator.create_channel().await.expect("channel");
    queue::declare_topology(&channel, 5).await.expect("the coordinator declares the topology");
    let jobs = ConfirmedPublisher::open(&coordinator).await.expect("publisher");
    jobs.publish(JOBS_QUEUE, b"a job").await.expect("the coordinator publishes a job");

    let worker = connect(&worker_user).await;
    queue::declare_or_check_topology(&worker, 5).await.expect("a worker checks the topology it may not declare");
    let delivery = farm_testkit::consume(&worker, JOBS_QUEUE).await.next().await.expect("a job").expect("delivery");
    assert_eq!(delivery.data, b"a job");
    delivery.acker.ack(BasicAckOptions::default()).await.expect("a worker acks its job");
    let results = ConfirmedPublisher::open(&worker).await.expect("publisher");
    results.publish(RESULTS_QUEUE, b"a result").await.expect("a worker publishes a result");

    let forged = ConfirmedPublisher::open(&worker).await.expect("publisher").publish(JOBS_QUEUE, b"forged").await;
    assert!(forged.is_err(), "a worker's user publishes no job");
    let reading = worker.create_channel().await.expect("channel");
    let reading = reading
        .basic_consume(RESULTS_QUEUE.into(), "peek".into(), BasicConsumeOptions::default(), FieldTable::default())
        .await;
    assert!(reading.is_err(), "a worker's user reads no result");
    let deleting = worker.create_channel().await.expect("channel");
    let deleting = deleting.queue_delete(JOBS_QUEUE.into(), QueueDeleteOptions::default()).await;
    assert!(deleting.is_err(), "a worker's user deletes no queue");

    let result = farm_testkit::consume(&coordinator, RESULTS_QUEUE).await.next().await.expect("a result");
    assert_eq!(result.expect("delivery").data, b"a result", "the result reached the coordinator");
    let admin = vhost.connect().await;
    assert_eq!(farm_testkit::ready_messages(&admin, JOBS_QUEUE).await, 0, "the forged job never reached farm.jobs");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_publishes_nothing_again_and_a_lost_job_comes_back_when_its_lease_passes() {
    use farm_proto::JOBS_QUEUE;
    use farm_testkit::ready_messages;
    use std::time::Instant;

    // Rules quick enough for a lease of under half a minute.
    let quick_rules = serde_json::json!({ "maxTurns": 10, "replyTimeoutMs": 100 });
    let vhost = Vhost::new("farm-lease");
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = dir.path().join("ledger.sqlite");
    let settings = [("FARM_LEASES__MARGIN_SECS", "1"), ("FARM_LEASES__SWEEP_SECS", "1")];
    let coordinator = CoordinatorProcess::start_with(&vhost, &ledger, &settings);
    let first = submit_one_match(&coordinator, dir.path(), "lease-1", &quick_rules);
    eventually(Duration::from_secs(30), "the first job is published", || coordinator.progress(&first)["running"] == 1);
    let connection = vhost.connect().await;
    assert_eq!(ready_messages(&connection, JOBS_QUEUE).await, 1);

    // A restart: the job is still in the queue, and is not published a second time.
    coordinator.kill();
    let coordinator = CoordinatorProcess::start_with(&vhost, &ledger, &settings);
    let second = submit_one_match(&coordinator, dir.path(), "lease-2", &quick_rules);
    eventually(Duration::from_secs(30), "the second job is published", || {
        coordinator.progress(&second)["running"] == 1
    });
    assert_eq!(ready_messages(&connection, JOBS_QUEUE).await, 2, "the first job once, the second once");

    // Both are lost (the queue purged). Once the coordinator has seen the queue empty
    // for their lease (twice their match's limit, and the margin), they are published
    // again, never sooner.
    let quick = farm_proto::MatchJob {
        job_id: "j".into(),
        tournament_id: first.clone(),
        game: farm_proto::GameKind::Botwars,
        rules: quick_rules,
        map: None,
        seed: 1,
        bots: ["builtin:random", "builtin:gatherer"].iter().map(|spec| spec.parse().expect("spec")).collect(),
        isolation: None,
        clock: Default::default(),
    };
    let lease = Duration::from_secs(farm_coordinator::farm::lease_secs(&quick) + 1);
    assert!(lease < Duration::from_secs(40), "a quick match's lease: {lease:?}");
    farm_testkit::rabbitmq_api("DELETE", &format!("/api/queues/{}/{JOBS_QUEUE}/contents", vhost.name), None);
    let lost = Instant::now();
    let deadline = lost + Duration::from_secs(120);
    while ready_messages(&connection, JOBS_QUEUE).await < 2 {
        assert!(Instant::now() < deadline, "the lost jobs are not published again within 2 minutes");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(lost.elapsed() >= lease, "published again after {:?}, before the lease of {lease:?}", lost.elapsed());
    let metrics = http_get(coordinator.api, "/metrics").expect("metrics").1;
    assert!(metrics.contains("farm_coordinator_leases_expired_total 2"), "{metrics}");

    // A worker plays both: each recorded once.
    let _worker = WorkerProcess::start(&vhost, &farm_testkit::unique("lease"), 1, 5);
    for id in [&first, &second] {
        eventually(Duration::from_secs(60), "the match is recorded", || coordinator.progress(id)["done"] == 1);
    }
}

/// `farm-coordinator workers ...` against the test broker's management API, as its
/// administrator, on `vhost`: (success, stdout, stderr).
fn workers_cli(vhost: &Vhost, args: &[&str]) -> (bool, String, String) {
    let output = std::process::Command::new(support::COORDINATOR)
        .arg("workers")
        .args(args)
        .env("FARM_RABBITMQ_MANAGEMENT", farm_testkit::required("FARM_TEST_RABBITMQ_MGMT"))
        .env("FARM_RABBITMQ_VHOST", &vhost.name)
        .env("FARM_RABBITMQ_ADMIN_USER", "farm")
        .env("FARM_RABBITMQ_ADMIN_PASSWORD", "farm")
        .output()
        .expect("farm-coordinator runs");
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).expect("UTF-8");
    (output.status.success(), text(output.stdout), text(output.stderr))
}

/// A forger holding real worker credentials of its own: every answer it makes up for
/// a job it never held, or in another worker's name, or with no name the broker
/// vouches for, is refused, set aside and counted; an honest worker's result still
/// lands, and only the identities that answered have records. Identities are issued
/// and revoked with `farm-coordinator workers`.
#[tokio::test(flavor = "multi_thread")]
async fn forged_answers_are_refused_and_counted_and_workers_are_known_by_their_broker_users() {
    use farm_proto::{
        AuditVerdict, BUILD_RESULTS_QUEUE, BuildJob, BuildOutcome, BuildReport, JobEnvelope, MatchResult,
        ResultEnvelope,
    };
    use farm_runtime::queue::{ConfirmedPublisher, SET_ASIDE_QUEUE};
    use farm_runtime::storage::AttemptKeys;

    let vhost = Vhost::new("farm-identities");
    let dir = tempfile::tempdir().expect("temp dir");
    let coordinator = CoordinatorProcess::start(&vhost, &dir.path().join("ledger.sqlite"));
    let (honest, forger) = (farm_testkit::unique("honest"), farm_testkit::unique("forger"));
    let mut passwords = Vec::new();
    for name in [&honest, &forger] {
        vhost.delete_user_with_it(name);
        let (ok, password, stderr) = workers_cli(&vhost, &["add", name]);
        assert!(ok && stderr.contains(&format!("worker_id = \"{name}\"")), "{stderr}");
        passwords.push(password.trim().to_owned());
    }
    let (ok, _, stderr) = workers_cli(&vhost, &["add", &honest]);
    assert!(!ok && stderr.contains("has a user") && stderr.contains("already"), "issued once: {stderr}");
    let (ok, _, stderr) = workers_cli(&vhost, &["revoke", "farm"]);
    assert!(!ok && stderr.contains("is not a worker's"), "the administrator is no worker: {stderr}");
    let (_, listed, _) = workers_cli(&vhost, &["list"]);
    assert!(listed.contains(&format!("{honest}\t")) && listed.contains(&format!("{forger}\t")), "{listed}");

    // A match, and no worker yet: its job waits in the queue, held by nobody.
    let id = submit_one_match(&coordinator, dir.path(), "guarded", &serde_json::json!({}));
    eventually(Duration::from_secs(30), "the job is published", || coordinator.progress(&id)["running"] == 1);
    let job_id = coordinator.get_json(&format!("/api/tournaments/{id}/matches"))["matches"][0]["job_id"]
        .as_str()
        .expect("a job id (ids are public)")
        .to_owned();
    let completed = completed_without_play(AttemptKeys::new(&id, &job_id, 1).replay());
    let guessed = support::forged_delivery(&id, &job_id, &"ab".repeat(32));
    let unheld = support::forged_delivery(&id, &job_id, "");
    let answer = |delivered: &JobEnvelope, worker: &str, result: &MatchResult| {
        serde_json::to_vec(&ResultEnvelope::new(delivered, worker, 1, result.clone())).expect("JSON")
    };

    let forging = lapin::Connection::connect(&vhost.url_as(&forger, &passwords[1]), Default::default())
        .await
        .expect("the forger signs in with its own credentials");
    let signed = ConfirmedPublisher::open_as(&forging, &forger).await.expect("publisher");
    let unsigned = ConfirmedPublisher::open(&forging).await.expect("publisher");
    let fault = MatchResult::Returned { reason: "its sandbox failed".into(), fault: true };
    let mismatch = MatchResult::Audited { verdict: AuditVerdict::Mismatch { reason: "made up".into() } };
    // Jobs and audits it was never given: no token, or a guessed one.
    for body in [answer(&unheld, &forger, &completed), answer(&guessed, &forger, &completed)] {
        signed.publish(RESULTS_QUEUE, &body).await.expect("publish");
    }
    signed.publish(RESULTS_QUEUE, &answer(&unheld, &forger, &mismatch)).await.expect("publish");
    // In another worker's name, or an invented one: the broker says who sent it.
    for body in [answer(&guessed, &honest, &completed), answer(&guessed, "ghost", &completed)] {
        signed.publish(RESULTS_QUEUE, &body).await.expect("publish");
    }
    signed.publish(RESULTS_QUEUE, &answer(&unheld, &honest, &fault)).await.expect("publish");
    // Naming nobody the broker vouches for.
    unsigned.publish(RESULTS_QUEUE, &answer(&unheld, &forger, &completed)).await.expect("publish");
    // Build reports: for a build it was never given, and a "dead-lettered" build job,
    // which only the coordinator's own can be.
    let build = BuildJob {
        bot: "ada-bot".into(),
        version: 1,
        source_key: "s".into(),
        log_key: "l".into(),
        token: String::new(),
    };
    let image = "127.0.0.1:1/matchfarm-bots/evil@sha256:00".to_owned();
    let report =
        BuildReport { job: build.clone(), worker_id: forger.clone(), outcome: BuildOutcome::Built { image, size: 1 } };
    signed.publish(BUILD_RESULTS_QUEUE, &serde_json::to_vec(&report).expect("JSON")).await.expect("publish");
    signed.publish(BUILD_RESULTS_QUEUE, &serde_json::to_vec(&build).expect("JSON")).await.expect("publish");

    let metric = |reason: &str| {
        let sample = format!("farm_coordinator_forged_answers_total{{reason=\"{reason}\"}} ");
        let metrics = http_get(coordinator.api, "/metrics").expect("metrics").1;
        metrics.lines().find_map(|line| line.strip_prefix(&sample)).and_then(|value| value.trim().parse::<u64>().ok())
    };
    eventually(Duration::from_secs(30), "every forgery is refused and counted", || {
        metric("not_held") == Some(4) && metric("impostor") == Some(4) && metric("unsigned") == Some(1)
    });
    let admin = vhost.connect().await;
    assert_eq!(farm_testkit::ready_messages(&admin, SET_ASIDE_QUEUE).await, 7, "forged answers are kept aside");
    assert_eq!(coordinator.progress(&id)["done"], 0, "no forged result was recorded");
    assert_eq!(coordinator.get_json("/api/workers")["workers"], serde_json::json!([]), "no record for anyone");

    // The honest worker, signed in as itself, takes the job and its result lands.
    let _worker = WorkerProcess::start_signed_in(&vhost.url_as(&honest, &passwords[0]), &honest, 1, 5, &[]);
    eventually(Duration::from_secs(60), "the honest result is recorded", || coordinator.progress(&id)["done"] == 1);
    let workers = coordinator.get_json("/api/workers")["workers"].clone();
    let names: Vec<&str> =
        workers.as_array().expect("workers").iter().filter_map(|w| w["worker_id"].as_str()).collect();
    assert_eq!(names, [honest.as_str()], "only the identity that answered has a record: {workers}");

    // Revoked, the forger is out: its user is gone and its connection closed.
    let (ok, revoked, stderr) = workers_cli(&vhost, &["revoke", &forger]);
    assert!(ok && revoked.contains(&format!("worker {forger} revoked")), "{revoked}{stderr}");
    eventually(Duration::from_secs(10), "the forger's connection is closed", || !forging.status().connected());
    let signing_in = lapin::Connection::connect(&vhost.url_as(&forger, &passwords[1]), Default::default()).await;
    assert!(signing_in.is_err(), "a revoked worker cannot sign in again");
    let (_, listed, _) = workers_cli(&vhost, &["list"]);
    assert!(listed.contains(&format!("{honest}\t")) && !listed.contains(&forger), "{listed}");
}

/// A worker whose id is not the broker user it signs in as does not start.
#[test]
fn a_worker_must_be_the_broker_user_it_signs_in_as() {
    let vhost = Vhost::new("farm-impostor");
    let url = vhost.worker_url(&farm_testkit::unique("real"));
    let output = std::process::Command::new(farm_testkit::worker_binary())
        .arg("serve")
        .env("FARM_AMQP_URL", &url)
        .env("FARM_WORKER_ID", "someone-else")
        .env("FARM_METRICS_LISTEN", farm_testkit::free_port().to_string())
        .output()
        .expect("farm-worker runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("worker_id \"someone-else\" is not the broker user"), "{stderr}");
}
