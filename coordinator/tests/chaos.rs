//! The chaos test: the farm of `deploy/compose.yaml` with three workers, each in its own
//! container, plays a tournament of 300 matches with bots in containers while faults
//! hit every part of it, and must end as a fault-free `farm-coordinator run` of the same
//! file (played meanwhile on the same machine) ends: every match done once, nothing
//! failed, the same standings, byte for byte, and no container left behind.
//!
//! The workers stand for two hosts: workers 1 and 2 on one private network, worker 3
//! on another; RabbitMQ, S3 and the coordinator are on both (all networks the test makes,
//! internal: nothing leaves them). Faults, each when a share of the matches is done (a
//! fault that lasts heals in the background, so faults overlap):
//!
//! | at   | fault                                                                 |
//! |------|-----------------------------------------------------------------------|
//! | 10%  | worker 1 SIGKILLed, then started again (a new process, a new instance)|
//! | 25%  | worker 2 cut off from the broker (its network disconnected) for 20 s  |
//! | 40%  | RabbitMQ restarted                                                    |
//! | 55%  | the coordinator SIGKILLed, then started again                         |
//! | 70%  | S3 unreachable (disconnected from every network) for 10 s             |
//!
//! It takes a few minutes, so `cargo test` skips it; `scripts/test` runs it on its own
//! (`cargo test -p farm-coordinator --test chaos -- --ignored --nocapture`), which
//! prints the fault timeline and the figures. FARM_CHAOS_GAMES sets the games per
//! pairing (default 25: 12 ordered pairs, so 300 matches). A quarter of the matches
//! are audited, their audits leased for a minute: every one must end with a verdict (or
//! given up, saying so), none left published by the broker's restart.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use farm_testkit::compose::ComposeFarm;
use farm_testkit::{docker, eventually, http_get};
use support::{bot_containers_under, cli};

/// The fault timeline, printed as it happens and at the end.
struct Timeline {
    started: Instant,
    lines: std::sync::Mutex<Vec<String>>,
}

impl Timeline {
    fn note(&self, what: String) {
        let line = format!("{:>7.1} s  {what}", self.started.elapsed().as_secs_f64());
        println!("chaos: {line}");
        self.lines.lock().expect("the timeline").push(line);
    }
}

/// The chaos farm: the compose project, its hosts' networks, the coordinator.
struct Chaos {
    farm: ComposeFarm,
    /// The two networks standing for the workers' hosts.
    hosts: [String; 2],
    /// The coordinator's container (the same one across its restarts).
    coordinator: String,
}

impl Chaos {
    /// Where the host reaches the API now: Docker publishes it on another port at every
    /// start of the coordinator.
    fn coordinator_api(&self) -> Option<SocketAddr> {
        let output = std::process::Command::new("docker")
            .args(["port", &self.coordinator, "8000/tcp"])
            .output()
            .expect("docker runs");
        String::from_utf8_lossy(&output.stdout).lines().find_map(|line| line.trim().parse().ok())
    }

    /// The tournament's progress, or `None` while the coordinator does not answer.
    fn progress(&self, id: &str) -> Option<serde_json::Value> {
        let (status, body) = http_get(self.coordinator_api()?, &format!("/api/tournaments/{id}"))?;
        (status == 200)
            .then(|| serde_json::from_str::<serde_json::Value>(&body).ok())
            .flatten()
            .map(|t| t["progress"].clone())
    }

    /// How many of the tournament `id`'s matches have their audit in each state
    /// (matches not audited are not counted); empty while the coordinator does not answer.
    fn audit_states(&self, id: &str) -> std::collections::BTreeMap<String, u64> {
        let mut states = std::collections::BTreeMap::new();
        let Some(api) = self.coordinator_api() else { return states };
        let json = |path: &str| {
            http_get(api, path)
                .filter(|(status, _)| *status == 200)
                .and_then(|(_, body)| serde_json::from_str::<serde_json::Value>(&body).ok())
        };
        let Some(matches) = json(&format!("/api/tournaments/{id}/matches?limit=1000")) else { return states };
        for row in matches["matches"].as_array().into_iter().flatten() {
            let Some(job) = row["job_id"].as_str() else { continue };
            let Some(detail) = json(&format!("/api/matches/{job}")) else { return Default::default() };
            if let Some(state) = detail["audit"]["state"].as_str() {
                *states.entry(state.to_owned()).or_insert(0) += 1;
            }
        }
        states
    }

    /// Every network `container` is on, by name.
    fn networks_of(container: &str) -> Vec<String> {
        docker(&["inspect", "--format", "{{range $name, $_ := .NetworkSettings.Networks}}{{$name}} {{end}}", container])
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    fn disconnect(container: &str, networks: &[String]) {
        for network in networks {
            docker(&["network", "disconnect", network, container]);
        }
    }

    fn connect(container: &str, networks: &[String], alias: &str) {
        for network in networks {
            docker(&["network", "connect", "--alias", alias, network, container]);
        }
    }

    fn kill_and_start(container: &str) {
        docker(&["kill", "--signal", "KILL", container]);
        eventually(Duration::from_secs(30), "the killed container stops", || {
            !farm_testkit::compose::running(container)
        });
        docker(&["start", container]);
    }
}

impl Drop for Chaos {
    fn drop(&mut self) {
        // The farm goes down first (its containers leave the networks), then the networks.
        self.farm.try_down();
        for network in &self.hosts {
            let _ = std::process::Command::new("docker").args(["network", "rm", network]).output();
        }
    }
}

fn games_per_pairing() -> u32 {
    std::env::var("FARM_CHAOS_GAMES").ok().and_then(|games| games.parse().ok()).unwrap_or(25)
}

/// The chaos tournament: a Botwars round robin of four bots, three of them in
/// containers, one of which thinks 8 ms a turn (matches of up to 1,000 turns, so that
/// they last while the faults strike); 12 ordered pairs, `games` games each.
fn tournament_file(dir: &Path, games: u32) -> PathBuf {
    let text = format!(
        r#"
name = "chaos"
game = "botwars"
format = "round-robin"
games_per_pairing = {games}
seed = 7

[rules]
maxTurns = 1000

[[bots]]
name = "gatherer"
builtin = "gatherer"

[[bots]]
name = "random-rs"
image = "matchfarm/bot-botwars-random-rs"

[[bots]]
name = "random-py"
image = "matchfarm/bot-botwars-random-py"

[[bots]]
name = "thinker"
image = "matchfarm/bot-bench-echo-rs"
args = ["/bot/bench-echo-bot", "--think-ms", "8"]
"#
    );
    let path = dir.join("chaos.toml");
    std::fs::write(&path, text).expect("write the tournament file");
    path
}

#[test]
#[ignore = "minutes long: scripts/test runs it on its own, with --ignored --nocapture"]
fn the_farm_survives_faults_everywhere_and_agrees_with_a_fault_free_run() {
    let games = games_per_pairing();
    let total = 12 * u64::from(games);
    // A quarter of the matches audited, their audits leased for a minute: the broker's
    // restart must lose none of them.
    let settings = [("WORKER_SLOTS", "2"), ("AUDIT_FRACTION", "0.25"), ("AUDIT_LEASE_SECS", "60")];
    let farm = ComposeFarm::create("chaos", &settings);
    let hosts = ["host-a", "host-b"].map(|host| format!("{}_{host}", farm.project));
    let mut chaos = Chaos { farm, hosts, coordinator: String::new() };
    for network in &chaos.hosts {
        docker(&["network", "create", "--internal", network]);
    }
    let timeline = Timeline { started: Instant::now(), lines: Default::default() };

    // The core: RabbitMQ, S3 and the coordinator, on the default network and both hosts'.
    chaos.farm.compose(&["up", "-d", "rabbitmq", "s3", "coordinator", "worker-run-dir", "worker-identities"]);
    chaos.coordinator = chaos.farm.container("coordinator");
    let chaos = chaos;
    let farm = &chaos.farm;
    farm.wait_for_coordinator();
    for service in ["rabbitmq", "s3", "coordinator"] {
        let container = farm.container(service);
        Chaos::connect(&container, &chaos.hosts, service);
        // No restart policy: the faults below decide when a part comes back.
        docker(&["update", "--restart", "no", &container]);
    }
    // Three workers, created, moved to their hosts' networks, then started, once their
    // identities are made.
    farm.wait_for_worker_identities();
    farm.compose(&["up", "--no-start", "--no-deps", "--scale", "worker=3", "worker"]);
    eventually(Duration::from_secs(60), "worker-run-dir made the run directory", || farm.run_dir.is_dir());
    let workers = farm.containers("worker");
    assert_eq!(workers.len(), 3, "three workers: {workers:?}");
    for (index, worker) in workers.iter().enumerate() {
        let host = &chaos.hosts[usize::from(index == 2)];
        Chaos::disconnect(worker, &Chaos::networks_of(worker));
        Chaos::connect(worker, std::slice::from_ref(host), "worker");
        docker(&["update", "--restart", "no", worker]);
        docker(&["start", worker]);
    }
    timeline.note(format!(
        "farm up: RabbitMQ, S3, coordinator; workers 1, 2 on {}, worker 3 on {}",
        chaos.hosts[0], chaos.hosts[1]
    ));

    let dir = tempfile::tempdir().expect("temp dir");
    let file = tournament_file(dir.path(), games);
    let file_arg = file.to_str().expect("UTF-8").to_owned();

    // The same file, fault-free, on this machine meanwhile: `farm-coordinator run
    // --sandbox docker`, as many matches at once as the farm's six slots.
    let fault_free = {
        let (file, data) = (file_arg.clone(), dir.path().join("fault-free"));
        std::thread::spawn(move || {
            let started = Instant::now();
            let data = data.to_str().expect("UTF-8");
            let args = ["run", &file, "--sandbox", "docker", "--workers", "6", "--data", data, "--format", "json"];
            let standings: serde_json::Value = serde_json::from_str(&cli(&args)).expect("run prints JSON standings");
            (standings, started.elapsed())
        })
    };
    let url = format!("http://{}", chaos.coordinator_api().expect("the API's address"));
    let id = cli(&["submit", &file_arg, "--url", &url, "--token", &farm.token]).trim().to_owned();
    timeline.note(format!("submitted {id}: {total} matches"));

    let wait_for_done = |share: u64, timeline: &Timeline| {
        let at = total * share / 100;
        eventually(Duration::from_secs(900), &format!("{at} matches done"), || {
            chaos.progress(&id).is_some_and(|progress| progress["done"].as_u64().is_some_and(|done| done >= at))
        });
        let done = chaos.progress(&id).map_or(at, |progress| progress["done"].as_u64().unwrap_or(at));
        timeline.note(format!("{done}/{total} done"));
    };

    // A fault that lasts heals on a thread of its own, so that the next one may strike
    // meanwhile: the faults overlap as they would on a bad day.
    std::thread::scope(|faults| {
        wait_for_done(10, &timeline);
        Chaos::kill_and_start(&workers[0]);
        timeline.note("worker 1 SIGKILLed and started again".to_owned());

        wait_for_done(25, &timeline);
        let host_a = std::slice::from_ref(&chaos.hosts[0]);
        Chaos::disconnect(&workers[1], host_a);
        timeline.note("worker 2 partitioned from the broker and S3 for 20 s".to_owned());
        let (worker_2, timeline) = (&workers[1], &timeline);
        faults.spawn(move || {
            std::thread::sleep(Duration::from_secs(20)); // the fault's length, not a wait for anything
            Chaos::connect(worker_2, host_a, "worker");
            timeline.note("worker 2 reconnected".to_owned());
        });

        wait_for_done(40, timeline);
        docker(&["restart", "--time", "10", &farm.container("rabbitmq")]);
        timeline.note("RabbitMQ restarted".to_owned());

        wait_for_done(55, timeline);
        Chaos::kill_and_start(&chaos.coordinator);
        timeline.note("coordinator SIGKILLed and started again".to_owned());

        wait_for_done(70, timeline);
        let s3 = farm.container("s3");
        let s3_networks = Chaos::networks_of(&s3);
        Chaos::disconnect(&s3, &s3_networks);
        timeline.note("S3 unreachable for 10 s".to_owned());
        faults.spawn(move || {
            std::thread::sleep(Duration::from_secs(10)); // the fault's length
            Chaos::connect(&s3, &s3_networks, "s3");
            timeline.note("S3 reachable again".to_owned());
        });
    });

    eventually(Duration::from_secs(1200), "every match is answered", || {
        chaos.progress(&id).is_some_and(|progress| {
            progress["done"]
                .as_u64()
                .zip(progress["failed"].as_u64())
                .is_some_and(|(done, failed)| done + failed == total)
        })
    });
    let progress = chaos.progress(&id).expect("progress");
    timeline.note(format!("tournament finished: {progress}"));
    // Every audit ends with a verdict, or given up saying why: none stays published.
    let mut audits = std::collections::BTreeMap::new();
    eventually(Duration::from_secs(600), "every audit is answered or given up", || {
        audits = chaos.audit_states(&id);
        !audits.contains_key("pending") && !audits.contains_key("published")
    });
    timeline.note(format!("audits settled: {audits:?}"));
    let url = format!("http://{}", chaos.coordinator_api().expect("the API's address"));
    let chaos_standings: serde_json::Value =
        serde_json::from_str(&cli(&["standings", &id, "--url", &url, "--format", "json"])).expect("standings JSON");

    // Down: each worker drains (SIGTERM) and removes its own containers; the killed
    // worker's were removed by the live ones (node-scoped reaping).
    for (index, worker) in workers.iter().enumerate() {
        let stopping = Instant::now();
        docker(&["stop", "--time", "120", worker]);
        timeline.note(format!("worker {} stopped in {:.1} s", index + 1, stopping.elapsed().as_secs_f64()));
    }
    let run_dir = farm.run_dir.clone();
    farm.down();
    let left = bot_containers_under(&run_dir);
    timeline.note(format!("farm down: {} bot containers left", left.len()));

    let (fault_free, took) = fault_free.join().expect("the fault-free run");
    timeline.note(format!("the fault-free run (meanwhile) took {:.0} s", took.as_secs_f64()));

    let rows = |standings: &serde_json::Value| serde_json::to_string(&standings["rows"]).expect("JSON");
    let identical = rows(&chaos_standings) == rows(&fault_free);
    println!("\nchaos: the fault timeline\n{}", timeline.lines.lock().expect("the timeline").join("\n"));
    println!(
        "chaos: {} matches, {} done, {} failed, {} duplicate results counted and dropped; \
         standings {} the fault-free run's (their rows as JSON, compared byte for byte); \
         {} bot containers left",
        total,
        progress["done"],
        progress["failed"],
        progress["duplicates"],
        if identical { "identical to" } else { "DIFFERENT from" },
        left.len()
    );
    let audited: u64 = audits.values().sum();
    assert!(audited > 0 && audits.get("confirmed").is_some_and(|&confirmed| confirmed > 0), "{audits:?}");
    assert!(!audits.contains_key("mismatch"), "an honest farm's replays re-verify: {audits:?}");
    assert_eq!(progress["done"].as_u64(), Some(total), "every match done: {progress}");
    assert_eq!(progress["failed"].as_u64(), Some(0), "nothing failed: {progress}");
    assert_eq!(chaos_standings["tournament_id"], fault_free["tournament_id"]);
    assert_eq!(rows(&chaos_standings), rows(&fault_free), "the standings of the chaos run and the fault-free run");
    let played: u64 =
        chaos_standings["rows"].as_array().expect("rows").iter().filter_map(|row| row["played"].as_u64()).sum();
    assert_eq!(played, 2 * total, "each match counted once, two bots each");
    assert_eq!(left, Vec::<String>::new(), "bot containers left");
}
