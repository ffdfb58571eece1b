//! The farm image (deploy/Dockerfile, built by deploy/build-farm-image.sh, which
//! `scripts/test` runs first): `farm-worker serve` in a container, as compose and
//! Kubernetes run it (the image's own user, the Docker socket mounted, configured by
//! FARM_* variables), plays a job from the test RabbitMQ, with a built-in bot and a bot
//! in a container of its own, and acks it; SIGTERM (`docker stop`) drains it cleanly.
//! The container is on the host network so that it reaches the test services on
//! loopback. FARM_TEST_FARM_IMAGE names another image (default matchfarm/farm:latest).

use std::process::Command;
use std::time::Duration;

use farm_proto::{BotSpec, GameKind, JOBS_QUEUE, MatchJob, MatchResult};
use farm_runtime::storage::StorageConfig;
use farm_testkit::*;

/// A worker container, removed (forcibly, if still there) when dropped.
struct WorkerContainer {
    name: String,
}

impl WorkerContainer {
    fn logs(&self) -> String {
        let output = Command::new("docker").args(["logs", "--tail", "50", &self.name]).output().expect("docker logs");
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
    }

    fn running(&self) -> bool {
        let output = Command::new("docker")
            .args(["inspect", "--format", "{{.State.Running}}", &self.name])
            .output()
            .expect("docker inspect");
        String::from_utf8_lossy(&output.stdout).trim() == "true"
    }
}

impl Drop for WorkerContainer {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rm", "-f", &self.name]).output();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_farm_image_runs_a_worker_that_plays_and_acks_a_job() {
    let image = std::env::var("FARM_TEST_FARM_IMAGE").unwrap_or_else(|_| "matchfarm/farm:latest".to_owned());
    let present = Command::new("docker").args(["image", "inspect", &image]).output().expect("docker runs");
    assert!(
        present.status.success(),
        "{image} is missing: build it with deploy/build-farm-image.sh (scripts/test does)"
    );
    // The image runs as 10000: the socket's group lets it talk to Docker, as in compose.
    let socket_group = std::fs::metadata("/var/run/docker.sock")
        .map(|metadata| std::os::unix::fs::MetadataExt::gid(&metadata).to_string())
        .expect("the Docker socket");

    let vhost = Vhost::new("image");
    let connection = vhost.connect().await;
    let tournament = unique("t-image");
    let job = MatchJob {
        job_id: "job-1".to_owned(),
        tournament_id: tournament.clone(),
        game: GameKind::Vindinium,
        rules: serde_json::json!({ "maxTurns": 100, "moveTimeoutMs": 20000 }),
        map: Some(std::fs::read_to_string(repo().join("maps/vindinium/m1.txt")).expect("m1")),
        seed: 11,
        bots: ["builtin:greedy", "builtin:random", "image:matchfarm/bot-vindinium-random-rs"]
            .iter()
            .map(|spec| spec.parse::<BotSpec>().expect("bot spec"))
            .collect(),
        isolation: None,
        clock: Default::default(),
    };
    publish_jobs(&connection, 5, &[job]).await;
    let mut results = results_consumer(&connection).await;

    let StorageConfig::S3 { endpoint, bucket, region, access_key, secret_key, .. } = s3_config() else {
        unreachable!("s3_config is S3");
    };
    let worker_id = unique("w-image");
    let metrics = free_port();
    // The bot containers' run directory: a host directory at the same path inside the
    // worker's container (the host's daemon mounts it into bot containers), the
    // worker's user's, as compose makes it.
    let run_tree = tempfile::tempdir().expect("a run directory");
    std::os::unix::fs::chown(run_tree.path(), Some(10000), Some(10000)).expect("chown the run directory (as root)");
    let run_dir = run_tree.path().display().to_string();
    let run_mount = format!("{run_dir}:{run_dir}");
    let container = WorkerContainer { name: worker_id.clone() };
    let env = [
        format!("FARM_AMQP_URL={}", vhost.worker_url(&worker_id)),
        format!("FARM_WORKER_ID={worker_id}"),
        "FARM_SLOTS=1".to_owned(),
        "FARM_SANDBOX=docker".to_owned(),
        format!("FARM_DOCKER__RUN_DIR={run_dir}"),
        "FARM_DELIVERY_LIMIT=5".to_owned(),
        format!("FARM_METRICS_LISTEN={metrics}"),
        "FARM_DRAIN_SECS=30".to_owned(),
        "FARM_STORAGE__KIND=s3".to_owned(),
        format!("FARM_STORAGE__ENDPOINT={endpoint}"),
        format!("FARM_STORAGE__BUCKET={bucket}"),
        format!("FARM_STORAGE__REGION={region}"),
        format!("FARM_STORAGE__ACCESS_KEY={access_key}"),
        format!("FARM_STORAGE__SECRET_KEY={secret_key}"),
        "RUST_LOG=farm_worker=info,farm_runtime=info".to_owned(),
    ];
    let mut args = vec![
        "run",
        "-d",
        "--name",
        &container.name,
        "--network",
        "host",
        "--group-add",
        &socket_group,
        "-v",
        "/var/run/docker.sock:/var/run/docker.sock",
        "-v",
        &run_mount,
    ];
    for pair in &env {
        args.extend(["-e", pair.as_str()]);
    }
    args.extend([image.as_str(), "farm-worker", "serve"]);
    docker(&args);

    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if matches!(http_get(metrics, "/healthz"), Some((200, _))) {
            break;
        }
        assert!(container.running(), "the worker container exited:\n{}", container.logs());
        assert!(std::time::Instant::now() < deadline, "the worker is not ready:\n{}", container.logs());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(docker(&["inspect", "--format", "{{.Config.User}}", &container.name]), "10000:10000");

    let result = tokio::time::timeout(Duration::from_secs(120), next_result(&mut results, Duration::from_secs(120)))
        .await
        .unwrap_or_else(|_| panic!("no result:\n{}", container.logs()));
    assert_eq!((result.job_id.as_str(), result.tournament_id.as_str()), ("job-1", tournament.as_str()));
    assert_eq!(result.worker_id, worker_id);
    match &result.result {
        MatchResult::Completed { players, .. } => {
            assert_eq!(players.len(), 4, "{players:?}");
            assert!(players[2].log_key.is_some(), "the container bot ran and has a log: {players:?}");
        }
        other => panic!("the match was not played: {other:?}\n{}", container.logs()),
    }
    let metrics_text = http_get(metrics, "/metrics").map(|(_, body)| body).unwrap_or_default();
    assert!(metrics_text.contains("farm_"), "the worker serves its metrics:\n{metrics_text}");

    // SIGTERM drains (nothing is in flight) and exits 0; the job was acked, so closing
    // the worker's channel puts nothing back in the queue.
    docker(&["stop", "--time", "45", &container.name]);
    assert_eq!(docker(&["inspect", "--format", "{{.State.ExitCode}}", &container.name]), "0", "{}", container.logs());
    assert_eq!(ready_messages(&connection, JOBS_QUEUE).await, 0, "the job is acked");
    assert!(containers(farm_worker::bots::WORKER_LABEL, &worker_id).is_empty(), "its bot containers are removed");
}
