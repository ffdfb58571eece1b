//! `deploy/compose.yaml` as users start it, with only the images built on this machine
//! (`deploy/build-images.sh`: RabbitMQ and Prometheus from Debian's packages, farm-s3;
//! `deploy/build-farm-image.sh`: the farm): the stack comes up with two workers, a
//! tournament with bots in containers is submitted through the API and played to the
//! end, its replays and logs read back from S3 through the API, one match played again
//! from its reproduction bundle (`farm-worker reproduce`), Prometheus scrapes the
//! coordinator and the workers, and `down` leaves no container behind, not even a bot's.
//! The coordinator and the workers connect to RabbitMQ as users of their own. Compose
//! refuses to start without its secrets, and the farm with a placeholder one.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use farm_testkit::compose::ComposeFarm;
use farm_testkit::{docker, eventually, http_get};
use support::{bot_containers_under, cli, container_botwars_round_robin};

fn json(address: SocketAddr, path: &str) -> serde_json::Value {
    let (status, body) = http_get(address, path).unwrap_or_else(|| panic!("GET {path}: no answer"));
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|error| panic!("GET {path}: {error}: {body}"))
}

/// A secret left out stops compose before anything starts, naming the variable; a
/// placeholder copied from the documents stops the coordinator before it connects to
/// anything, naming the setting.
#[test]
fn compose_refuses_a_missing_secret_and_the_coordinator_a_placeholder() {
    let missing = ComposeFarm::create("secrets", &[("RABBITMQ_PASSWORD", "")]);
    let config = missing.try_compose(&["config"]);
    let refusal = String::from_utf8_lossy(&config.stderr);
    assert!(!config.status.success() && refusal.contains("set RABBITMQ_PASSWORD"), "{refusal}");

    let placeholder = ComposeFarm::create("secrets", &[("RABBITMQ_COORDINATOR_PASSWORD", "coordinator-placeholder")]);
    let run = placeholder.try_compose(&["run", "--rm", "--no-deps", "coordinator"]);
    let said = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(!run.status.success(), "the coordinator started with a placeholder password: {said}");
    assert!(said.contains("amqp_url's password (FARM_AMQP_URL) holds \"placeholder\""), "{said}");
}

#[test]
fn the_compose_stack_comes_up_plays_a_tournament_in_containers_and_goes_down_clean() {
    let farm = ComposeFarm::up("compose", 2, &[("WORKER_SLOTS", "2")]);
    assert_eq!(farm.containers("worker").len(), 2, "two workers");
    // Each part connects as its own least-privilege user (deploy/rabbitmq/users.py),
    // none as the administrator; each worker as an identity of its own
    // (deploy/worker-identities.sh).
    let rabbitmq = farm.container("rabbitmq");
    eventually(Duration::from_secs(120), "the coordinator and both workers connect as their own users", || {
        let users = docker(&["exec", &rabbitmq, "rabbitmqctl", "-q", "list_connections", "user"]);
        let users: Vec<&str> = users.lines().map(str::trim).collect();
        let workers: std::collections::BTreeSet<&&str> =
            users.iter().filter(|user| user.starts_with("farm-worker-")).collect();
        users.contains(&"farm-coordinator") && workers.len() == 2 && !users.contains(&"farm")
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let file = container_botwars_round_robin(dir.path(), "compose stack", 2);
    let url = farm.api_url();
    let id = cli(&["submit", file.to_str().expect("UTF-8"), "--url", &url, "--token", &farm.token]).trim().to_owned();
    assert!(id.starts_with("t-"), "{id}");

    let api: SocketAddr = url.trim_start_matches("http://").parse().expect("the API's address");
    eventually(Duration::from_secs(600), "every match is recorded", || {
        json(api, &format!("/api/tournaments/{id}"))["finished"] == true
    });
    // Idle bot containers stay warm for the next match (two minutes by default).
    let run_dir = farm.run_dir.clone();
    assert!(!bot_containers_under(&run_dir).is_empty(), "the workers keep their bots' containers warm");
    let progress = json(api, &format!("/api/tournaments/{id}"))["progress"].clone();
    assert_eq!((progress["done"].as_u64(), progress["failed"].as_u64()), (Some(12), Some(0)), "{progress}");

    let standings: serde_json::Value =
        serde_json::from_str(&cli(&["standings", &id, "--url", &url, "--format", "json"])).expect("standings JSON");
    let played: u64 = standings["rows"].as_array().expect("rows").iter().filter_map(|row| row["played"].as_u64()).sum();
    assert_eq!(played, 24, "12 matches, two bots each: {standings}");

    // A match between the two container bots: its replay and both logs come from S3.
    let matches = json(api, &format!("/api/tournaments/{id}/matches"));
    let both_contained = matches["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .find(|entry| entry.to_string().contains("random-rs") && entry.to_string().contains("random-py"))
        .unwrap_or_else(|| panic!("a match of random-rs against random-py: {matches}"));
    let job = both_contained["job_id"].as_str().expect("a job id");
    let (status, replay) = http_get(api, &format!("/api/matches/{job}/replay")).expect("the replay");
    assert_eq!(status, 200, "{replay}");
    assert!(replay.lines().count() > 10, "a replay of many turns: {} lines", replay.lines().count());
    for seat in 0..2 {
        let (status, log) = http_get(api, &format!("/api/matches/{job}/logs/{seat}")).expect("a bot's log");
        assert_eq!(status, 200, "seat {seat}: {log}");
        assert!(log.contains("seed"), "the bot's own stderr (it logs its seed): {log}");
    }
    // The same match played again on this machine from its bundle in the ledger (read
    // through the API): the images the workers ran, by id, and the same replay.
    let reproduced = std::process::Command::new(farm_testkit::worker_binary())
        .args(["reproduce", job, "--api", &url, "--out"])
        .arg(dir.path().join("reproduced"))
        .output()
        .expect("farm-worker runs");
    let said = String::from_utf8_lossy(&reproduced.stdout);
    assert!(
        reproduced.status.success() && said.contains("identical"),
        "{said}{}",
        String::from_utf8_lossy(&reproduced.stderr)
    );
    assert_eq!(said.matches("ran image sha256:").count(), 2, "both container bots by image id: {said}");

    // Prometheus (Debian's, in its image) scrapes the coordinator and both workers.
    let prometheus = farm.address("prometheus", 9090);
    eventually(Duration::from_secs(120), "Prometheus has scraped the coordinator and two workers", || {
        let Some((200, body)) = http_get(prometheus, "/api/v1/targets?state=active") else { return false };
        let targets: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let up = |job: &str| {
            targets["data"]["activeTargets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|target| target["labels"]["job"] == job && target["health"] == "up")
                .count()
        };
        up("coordinator") == 1 && up("worker") == 2
    });

    farm.down();
    assert_eq!(bot_containers_under(&run_dir), Vec::<String>::new(), "bot containers left after down");
    let left = docker(&["ps", "-a", "--filter", &format!("label=com.docker.compose.project={}", farm.project), "-q"]);
    assert!(left.is_empty(), "containers of the project left after down: {left}");
}
