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
    let document = storage.read(&results[0]).await.expect("a result document");
    farm_testkit::publish_raw(&connection, RESULTS_QUEUE, &document).await;
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

#[tokio::test(flavor = "multi_thread")]
async fn a_job_the_broker_dead_letters_becomes_a_failed_match_with_its_reason() {
    let vhost = Vhost::new("farm-dead");
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = dir.path().join("ledger.sqlite");
    let file = dir.path().join("single.toml");
    std::fs::write(
        &file,
        "name = \"doomed\"\ngame = \"botwars\"\nformat = \"single\"\n\
         [[bots]]\nname = \"a\"\nbuiltin = \"random\"\n[[bots]]\nname = \"b\"\nbuiltin = \"gatherer\"\n",
    )
    .expect("write");
    let coordinator = CoordinatorProcess::start_with(&vhost, &ledger, &[("FARM_DELIVERY_LIMIT", "1")]);
    let url = coordinator.url();
    let id = cli(&["submit", file.to_str().expect("UTF-8"), "--url", &url, "--token", TOKEN]).trim().to_owned();
    // Its storage is unreachable: every try fails and is requeued, until RabbitMQ
    // dead-letters the job after delivery_limit + 1 = 2 tries.
    let _worker = WorkerProcess::start_with(
        &vhost,
        &farm_testkit::unique("dead"),
        1,
        1,
        &[("FARM_STORAGE__ENDPOINT", "http://127.0.0.1:1"), ("FARM_STORAGE__RETRY_SECS", "0")],
    );
    eventually(Duration::from_secs(120), "the job is failed", || coordinator.progress(&id)["failed"] == 1);
    let matches = coordinator.get_json(&format!("/api/tournaments/{id}/matches?status=failed"));
    let reason = matches["matches"][0]["reason"].as_str().expect("a reason").to_owned();
    assert!(reason.starts_with("dead-lettered by RabbitMQ after"), "{reason}");
    let metrics = http_get(coordinator.api, "/metrics").expect("metrics").1;
    assert!(metrics.contains("farm_coordinator_dead_letters_total 1"), "{metrics}");
}
