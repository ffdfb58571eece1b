//! Directed formats through the whole farm: a `farm-coordinator serve` process,
//! `farm-worker serve` processes, RabbitMQ and the S3 server. A ladder keeps its
//! queue at its depth while a bot joins, one retires and one is replaced, through a
//! coordinator restart, until stopped; an SPRT and a Swiss tournament survive a
//! coordinator killed half-way and end as they should.

mod support;

use std::path::Path;
use std::time::Duration;

use farm_testkit::{Vhost, WorkerProcess, eventually, http_get};
use support::{CoordinatorProcess, TOKEN, cli};

/// A gauge's value in the coordinator's `/metrics`, or `None` while it has none.
fn gauge(coordinator: &CoordinatorProcess, series: &str) -> Option<f64> {
    let metrics = http_get(coordinator.api, "/metrics")?.1;
    metrics.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

fn submit(coordinator: &CoordinatorProcess, dir: &Path, name: &str, text: &str) -> String {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).expect("write the tournament file");
    let url = coordinator.url();
    cli(&["submit", file.to_str().expect("UTF-8"), "--url", &url, "--token", TOKEN]).trim().to_owned()
}

fn api(coordinator: &CoordinatorProcess, args: &[&str]) -> String {
    let url = coordinator.url();
    let mut all = args.to_vec();
    all.extend(["--url", &url, "--token", TOKEN]);
    cli(&all)
}

fn done(coordinator: &CoordinatorProcess, id: &str) -> u64 {
    coordinator.progress(id)["done"].as_u64().expect("done")
}

/// The positions of the matches bot `name` of tournament `id` has been scheduled in.
fn positions_of(coordinator: &CoordinatorProcess, id: &str, name: &str) -> Vec<u64> {
    let page = coordinator.get_json(&format!("/api/tournaments/{id}/matches?bot={name}&limit=1000"));
    page["matches"].as_array().expect("matches").iter().filter_map(|row| row["position"].as_u64()).collect()
}

const UNANSWERED: &str = "farm_coordinator_directed_unanswered_jobs{format=\"ladder\"}";
const TARGET: &str = "farm_coordinator_directed_target_jobs{format=\"ladder\"}";

#[tokio::test(flavor = "multi_thread")]
async fn a_ladder_keeps_its_queue_at_depth_while_bots_join_retire_and_are_replaced() {
    let vhost = Vhost::new("ladder");
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = dir.path().join("ledger.sqlite");
    let coordinator = CoordinatorProcess::start_with(&vhost, &ledger, &[("FARM_MAX_OUTSTANDING", "100")]);
    let text = "name = \"ladder\"\ngame = \"botwars\"\nformat = \"ladder\"\nqueue_depth = 6\nseed = 2\n\
                [[bots]]\nname = \"strong\"\nbuiltin = \"gatherer\"\n\
                [[bots]]\nname = \"a\"\nbuiltin = \"random\"\n[[bots]]\nname = \"b\"\nbuiltin = \"random\"\n";
    let id = submit(&coordinator, dir.path(), "ladder", text);

    // With no worker yet, the director fills the queue to its depth and no further.
    eventually(Duration::from_secs(30), "the queue is filled to its depth", || {
        gauge(&coordinator, UNANSWERED) == Some(6.0) && gauge(&coordinator, TARGET) == Some(6.0)
    });
    assert_eq!(coordinator.progress(&id)["total"], 6);

    let worker = WorkerProcess::start(&vhost, &farm_testkit::unique("ladder"), 2, 5);
    let mut samples = Vec::new();
    eventually(Duration::from_secs(120), "30 matches are played", || {
        samples.extend(gauge(&coordinator, UNANSWERED));
        done(&coordinator, &id) >= 30
    });
    assert!(samples.iter().all(|&queued| queued <= 6.0), "never above its depth: {samples:?}");
    eventually(Duration::from_secs(30), "the queue is back at its depth", || {
        gauge(&coordinator, UNANSWERED) == Some(6.0)
    });

    // A bot joins: it is scheduled, the least certain first.
    let added = api(&coordinator, &["bots", "add", &id, "--name", "newcomer", "--builtin", "gatherer"]);
    assert!(added.contains("newcomer"), "{added}");
    eventually(Duration::from_secs(60), "the newcomer plays", || {
        positions_of(&coordinator, &id, "newcomer").len() >= 3
    });

    // A bot retires: nothing is scheduled for it after that.
    api(&coordinator, &["bots", "retire", &id, "a"]);
    let retired_at = coordinator.progress(&id)["total"].as_u64().expect("total");
    eventually(Duration::from_secs(60), "20 more matches are scheduled", || {
        coordinator.progress(&id)["total"].as_u64().is_some_and(|total| total >= retired_at + 20)
    });
    let after: Vec<u64> =
        positions_of(&coordinator, &id, "a").into_iter().filter(|&position| position >= retired_at).collect();
    assert!(after.is_empty(), "a was scheduled after it retired: {after:?}");
    let refused = std::process::Command::new(support::COORDINATOR)
        .args(["bots", "retire", &id, "a", "--url", &coordinator.url(), "--token", TOKEN])
        .output()
        .expect("the CLI runs");
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("a has retired already"), "{refused:?}");

    // The coordinator restarts: the ladder goes on from its ledger.
    coordinator.kill();
    let coordinator = CoordinatorProcess::start_with(&vhost, &ledger, &[("FARM_MAX_OUTSTANDING", "100")]);
    let before = done(&coordinator, &id);
    eventually(Duration::from_secs(60), "matches go on after the restart", || done(&coordinator, &id) >= before + 10);

    // A new version starts from the old one's rating, its uncertainty widened.
    api(&coordinator, &["bots", "add", &id, "--name", "strong-v2", "--builtin", "gatherer", "--replaces", "strong"]);
    eventually(Duration::from_secs(120), "the new version has played", || {
        positions_of(&coordinator, &id, "strong-v2").len() >= 10
    });
    let view = coordinator.get_json(&format!("/api/tournaments/{id}"));
    let bots = view["status"]["bots"].as_array().expect("the ladder's bots");
    let bot = |name: &str| bots.iter().find(|bot| bot["bot"] == name).unwrap_or_else(|| panic!("{name}: {view}"));
    assert_eq!(bot("strong-v2")["replaces"], "strong");
    assert_eq!(bot("strong")["active"], false);
    assert_eq!(view["retired"].as_array().map(Vec::len), Some(2), "a and strong: {view}");
    let sigma = |name: &str| bot(name)["sigma"].as_f64().expect("sigma");
    assert!(sigma("strong") < 25.0 / 3.0 * 0.75, "the standings converge: {view}");

    // The standings put the gatherers above the random bots.
    let standings: serde_json::Value =
        serde_json::from_str(&api(&coordinator, &["standings", &id, "--format", "json"])).expect("JSON standings");
    let rows = standings["rows"].as_array().expect("rows");
    let last_two: Vec<&str> = rows[rows.len() - 2..].iter().filter_map(|row| row["bot"].as_str()).collect();
    assert!(last_two.iter().all(|bot| *bot == "a" || *bot == "b"), "{standings}");

    // Stopped: what was queued finishes, nothing more is scheduled.
    let stopped = api(&coordinator, &["stop", &id]);
    assert!(stopped.contains("stopped"), "{stopped}");
    eventually(Duration::from_secs(60), "the ladder finishes", || {
        coordinator.get_json(&format!("/api/tournaments/{id}"))["finished"] == true
    });
    let view = coordinator.get_json(&format!("/api/tournaments/{id}"));
    assert_eq!(view["conclusion"], "stopped by operator");
    eventually(Duration::from_secs(30), "the gauge empties", || gauge(&coordinator, UNANSWERED) == Some(0.0));
    assert!(worker.terminate().success());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_sprt_and_a_swiss_tournament_survive_a_coordinator_killed_half_way() {
    let vhost = Vhost::new("directed");
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = dir.path().join("ledger.sqlite");
    let coordinator = CoordinatorProcess::start_with(&vhost, &ledger, &[("FARM_MAX_OUTSTANDING", "100")]);
    let sprt = submit(
        &coordinator,
        dir.path(),
        "sprt",
        "name = \"sprt\"\ngame = \"botwars\"\nformat = \"sprt\"\ncandidate = \"new\"\nbaseline = \"old\"\n\
         elo0 = 0\nelo1 = 30\nmax_matches = 4000\nqueue_depth = 8\n\
         [[bots]]\nname = \"old\"\nbuiltin = \"random\"\n[[bots]]\nname = \"new\"\nbuiltin = \"random\"\n",
    );
    let mut swiss_text = String::from("name = \"swiss\"\ngame = \"botwars\"\nformat = \"swiss\"\nrounds = 5\n");
    for bot in 0..7 {
        swiss_text
            .push_str(&format!("[[bots]]\nname = \"s{bot}\"\nbuiltin = \"{}\"\n", ["random", "gatherer"][bot % 2]));
    }
    let swiss = submit(&coordinator, dir.path(), "swiss", &swiss_text);
    let worker = WorkerProcess::start(&vhost, &farm_testkit::unique("directed"), 2, 5);
    eventually(Duration::from_secs(120), "both are under way", || {
        done(&coordinator, &sprt) >= 40 && done(&coordinator, &swiss) >= 3
    });
    coordinator.kill();

    let coordinator = CoordinatorProcess::start_with(&vhost, &ledger, &[("FARM_MAX_OUTSTANDING", "100")]);
    for id in [&sprt, &swiss] {
        eventually(Duration::from_secs(600), "it finishes after the restart", || {
            coordinator.get_json(&format!("/api/tournaments/{id}"))["finished"] == true
        });
    }
    let view = coordinator.get_json(&format!("/api/tournaments/{sprt}"));
    let conclusion = view["conclusion"].as_str().expect("a conclusion");
    assert!(conclusion.starts_with("H0 accepted"), "a bot against itself: {view}");
    let pairs = view["status"]["pairs"].as_u64().expect("pairs");
    let progress = &view["progress"];
    assert_eq!(progress["failed"], 0, "{view}");
    assert!(pairs * 2 <= progress["done"].as_u64().expect("done"), "{view}");
    let status = cli(&["status", &sprt, "--once", "--url", &coordinator.url()]);
    assert!(status.contains("LLR") && status.contains("ended: H0 accepted"), "{status}");

    let view = coordinator.get_json(&format!("/api/tournaments/{swiss}"));
    assert_eq!(view["conclusion"], "played its 5 rounds", "{view}");
    assert_eq!(view["progress"]["done"], 15, "three tables a round: {view}");
    assert_eq!(view["status"]["round"], 5);
    assert!(worker.terminate().success());
}
