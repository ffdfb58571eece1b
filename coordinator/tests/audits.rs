//! Audits and quarantine against the real services: a `farm-coordinator serve` that
//! audits every match, two `farm-worker serve` processes, RabbitMQ and the S3 server.
//! Worker A plays a tournament alone (its audits wait: it does not audit itself); its
//! stored replays are then tampered with, as a worker with bad hardware or a stale
//! engine would leave them. Worker B comes, audits A's matches, finds every one
//! mismatched, and A is quarantined: it stops taking jobs and says why on `/healthz`
//! and in its metrics, the next tournament is played by B alone, and the API shows
//! both workers' records until an operator releases A.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use farm_testkit::{Vhost, WorkerProcess, eventually, http_get, replay_lines, s3};
use support::{CoordinatorProcess, TOKEN, cli};
use tokio::io::AsyncWriteExt;

/// A Botwars round robin of the two built-in bots, `games` games per pairing.
fn tournament_file(dir: &Path, name: &str, seed: u64, games: u32) -> PathBuf {
    let text = format!(
        r#"
name = "{name}"
game = "botwars"
format = "round-robin"
games_per_pairing = {games}
seed = {seed}

[rules]
maxTurns = 30

[[bots]]
name = "gatherer"
builtin = "gatherer"

[[bots]]
name = "random"
builtin = "random"
"#
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("write the tournament file");
    path
}

fn finished(coordinator: &CoordinatorProcess, id: &str) -> bool {
    coordinator.get_json(&format!("/api/tournaments/{id}"))["finished"] == true
}

/// The job ids of a tournament's matches.
fn job_ids(coordinator: &CoordinatorProcess, id: &str) -> Vec<String> {
    let matches = coordinator.get_json(&format!("/api/tournaments/{id}/matches"));
    matches["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|entry| entry["job_id"].as_str().expect("id").to_owned())
        .collect()
}

/// The record of `worker` in the API's worker list.
fn record(coordinator: &CoordinatorProcess, worker: &str) -> serde_json::Value {
    let workers = coordinator.get_json("/api/workers");
    workers["workers"]
        .as_array()
        .expect("workers")
        .iter()
        .find(|record| record["worker_id"] == worker)
        .cloned()
        .unwrap_or_else(|| panic!("no record of {worker}: {workers}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_whose_replays_do_not_re_verify_is_quarantined_by_the_audits_of_another() {
    let vhost = Vhost::new("audits");
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = dir.path().join("ledger.sqlite");
    let coordinator = CoordinatorProcess::start_with(
        &vhost,
        &ledger,
        &[
            ("FARM_AUDITS__FRACTION", "1"),
            ("FARM_AUDITS__MIN_AUDITS", "3"),
            ("FARM_AUDITS__MAX_MISMATCH_RATE", "0.5"),
            ("FARM_AUDITS__SWEEP_SECS", "1"),
        ],
    );
    let url = coordinator.url();
    let first = tournament_file(dir.path(), "audited", 3, 3);
    let id = cli(&["submit", first.to_str().expect("UTF-8"), "--url", &url, "--token", TOKEN]).trim().to_owned();

    let a = WorkerProcess::start(&vhost, &farm_testkit::unique("audit-a"), 1, 5);
    eventually(Duration::from_secs(120), "worker A plays the whole tournament", || finished(&coordinator, &id));
    let jobs = job_ids(&coordinator, &id);
    assert_eq!(jobs.len(), 6);
    for job in &jobs {
        let detail = coordinator.get_json(&format!("/api/matches/{job}"));
        assert_eq!(detail["worker_id"], a.id.as_str(), "{detail}");
        assert!(detail["instance"].as_str().is_some_and(|instance| instance.len() == 12), "{detail}");
        // Nobody else can audit A's matches yet: they wait.
        let audit = &detail["audit"]["state"];
        assert!(audit == "pending" || audit == "published", "{detail}");
    }

    // A's stored replays are not what it played: a frame's state is changed in each.
    let storage = s3();
    for key in storage.list(&format!("tournaments/{id}/jobs")).await.expect("list") {
        if !key.contains("replay") {
            continue;
        }
        let lines = replay_lines(&storage, &key).await;
        let text = lines.join("\n").replacen("\"step\":2,", "\"step\":2,\"forged\":true,", 1) + "\n";
        let mut upload = storage.replay_upload(&key);
        upload.write_all(text.as_bytes()).await.expect("overwrite the replay");
        upload.shutdown().await.expect("the tampered replay stored");
    }

    let b = WorkerProcess::start(&vhost, &farm_testkit::unique("audit-b"), 1, 5);
    eventually(Duration::from_secs(120), "worker B audits A's matches and A is quarantined", || {
        record(&coordinator, &a.id)["quarantined"].is_string()
    });
    let a_record = record(&coordinator, &a.id);
    assert!(a_record["mismatches"].as_u64().is_some_and(|mismatches| mismatches >= 3), "{a_record}");
    assert_eq!(a_record["matches"], 6, "{a_record}");
    let reason = a_record["quarantined"].as_str().expect("a reason").to_owned();
    assert!(reason.contains("did not re-verify"), "{reason}");
    let audited = coordinator.get_json(&format!("/api/matches/{}", jobs[0]));
    eventually(Duration::from_secs(60), "the first match's audit has its verdict", || {
        coordinator.get_json(&format!("/api/matches/{}", jobs[0]))["audit"]["state"] == "mismatch"
    });
    let audit = coordinator.get_json(&format!("/api/matches/{}", jobs[0]))["audit"].clone();
    assert_eq!(audit["audited_by"], b.id.as_str(), "{audited}");
    assert!(audit["detail"].as_str().is_some_and(|detail| detail.contains("differs")), "{audit}");

    // A hears it: it takes nothing more, and says why.
    a.wait_until(Duration::from_secs(30), |status, body| status == 503 && body.contains("did not re-verify"));
    assert!(a.metrics_text().lines().any(|line| line.starts_with("farm_worker_quarantined{") && line.ends_with(" 1")));
    let coordinator_metrics = http_get(coordinator.api, "/metrics").expect("metrics").1;
    let sample = format!("farm_coordinator_worker_figures{{figure=\"quarantined\",worker=\"{}\"}} 1", a.id);
    assert!(coordinator_metrics.contains(&sample), "{sample} in:\n{coordinator_metrics}");

    // The next tournament is played by B alone.
    let second = tournament_file(dir.path(), "after", 4, 2);
    let next = cli(&["submit", second.to_str().expect("UTF-8"), "--url", &url, "--token", TOKEN]).trim().to_owned();
    eventually(Duration::from_secs(120), "worker B plays the next tournament", || finished(&coordinator, &next));
    for job in job_ids(&coordinator, &next) {
        assert_eq!(coordinator.get_json(&format!("/api/matches/{job}"))["worker_id"], b.id.as_str());
    }
    assert_eq!(record(&coordinator, &a.id)["matches"], 6, "A played nothing more");
    assert!(record(&coordinator, &b.id)["quarantined"].is_null());

    // An operator releases A: its record starts over.
    let release = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", "-H"])
        .arg(format!("Authorization: Bearer {TOKEN}"))
        .arg(format!("{url}/api/workers/{}/quarantine", a.id))
        .output()
        .expect("curl runs");
    assert_eq!(String::from_utf8_lossy(&release.stdout), "200");
    let released = record(&coordinator, &a.id);
    assert!(released["quarantined"].is_null() && released["mismatches"] == 0, "{released}");
}
