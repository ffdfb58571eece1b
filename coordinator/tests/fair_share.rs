//! Users share the farm by their shares, through the whole farm: a `farm-coordinator
//! serve` process, a `farm-worker serve` process, RabbitMQ and the S3 server. Two users,
//! made with the CLI, with shares 1 and 3, each submit a big round robin before any
//! worker runs; while both have matches waiting, each gets throughput within 10% of
//! their share. A user cannot stop the other's tournament.

mod support;

use std::time::Duration;

use farm_testkit::{Vhost, WorkerProcess, eventually};
use support::{COORDINATOR, CoordinatorProcess, TOKEN, cli};

/// Games per pairing of each user's round robin: 4 bots, 12 ordered pairs, 600 matches.
const GAMES_PER_PAIRING: u32 = 50;

fn round_robin(seed: u32) -> String {
    let mut text = format!(
        "name = \"share {seed}\"\ngame = \"botwars\"\nformat = \"round-robin\"\nseed = {seed}\n\
         games_per_pairing = {GAMES_PER_PAIRING}\n"
    );
    for (name, builtin) in [("a", "random"), ("b", "gatherer"), ("c", "random"), ("d", "gatherer")] {
        text.push_str(&format!("[[bots]]\nname = \"{name}\"\nbuiltin = \"{builtin}\"\n"));
    }
    text
}

#[tokio::test(flavor = "multi_thread")]
async fn two_users_get_throughput_in_proportion_to_their_shares() {
    let vhost = Vhost::new("fair-share");
    let dir = tempfile::tempdir().expect("temp dir");
    // The window is wide: what bounds the jobs ahead of the workers is queue_ahead, at
    // its default.
    let coordinator = CoordinatorProcess::start_with(
        &vhost,
        &dir.path().join("ledger.sqlite"),
        &[("FARM_MAX_OUTSTANDING", "10000"), ("FARM_PUBLISH_BATCH", "100")],
    );
    let url = coordinator.url();
    let as_operator = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--url", &url, "--token", TOKEN]);
        cli(&all).trim().to_owned()
    };
    let ada = as_operator(&["users", "add", "ada", "--share", "1"]);
    let bob = as_operator(&["users", "add", "bob", "--share", "3"]);
    let listed = as_operator(&["users", "list"]);
    assert!(listed.contains("ada") && listed.contains("bob") && !listed.contains(&ada), "{listed}");

    let submit = |token: &str, seed: u32| {
        let file = dir.path().join(format!("share-{seed}.toml"));
        std::fs::write(&file, round_robin(seed)).expect("write the tournament file");
        cli(&["submit", file.to_str().expect("UTF-8"), "--url", &url, "--token", token]).trim().to_owned()
    };
    let adas = submit(&ada, 1);
    let bobs = submit(&bob, 2);
    let total = coordinator.progress(&adas)["total"].as_u64().expect("total");
    assert_eq!(total, 12 * u64::from(GAMES_PER_PAIRING));

    // Bob cannot stop Ada's tournament.
    let refused = std::process::Command::new(COORDINATOR)
        .args(["stop", &adas, "--url", &url, "--token", &bob])
        .output()
        .expect("the CLI runs");
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!("tournament {adas}: it is ada's, and bob is neither ada nor an admin")),
        "{stderr}"
    );

    let _worker = WorkerProcess::start(&vhost, &farm_testkit::unique("fair-share"), 2, 5);
    let done = |id: &str| coordinator.progress(id)["done"].as_u64().expect("done");
    // The window: from the first 60 matches (the queue's first jobs, published before
    // any worker came, are behind us) until Bob's round robin is 80% done, while Ada's
    // still has matches waiting.
    let mut start = (0, 0);
    eventually(Duration::from_secs(120), "60 matches are played", || {
        start = (done(&adas), done(&bobs));
        start.0 + start.1 >= 60
    });
    let mut end = (0, 0);
    eventually(Duration::from_secs(300), "Bob's round robin is 80% played", || {
        end = (done(&adas), done(&bobs));
        end.1 >= total * 8 / 10
    });
    assert!(end.0 < total, "Ada's still had matches waiting: {end:?}");
    let (ada_played, bob_played) = (end.0 - start.0, end.1 - start.1);
    let ada_fraction = ada_played as f64 / (ada_played + bob_played) as f64;
    println!(
        "fair share 1:3 over {} matches: ada {ada_played} ({:.1}%), bob {bob_played} ({:.1}%)",
        ada_played + bob_played,
        100.0 * ada_fraction,
        100.0 * (1.0 - ada_fraction)
    );
    assert!((ada_fraction - 0.25).abs() <= 0.025, "Ada's share is 25%, within 10%: {ada_fraction:.3}");
    assert!(((1.0 - ada_fraction) - 0.75).abs() <= 0.075, "Bob's is 75%");

    // Alone, Ada gets every slot: her round robin finishes.
    eventually(Duration::from_secs(300), "Ada's round robin finishes", || done(&adas) == total);
}
