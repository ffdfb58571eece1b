//! `farm-coordinator run`: the example tournaments play to the end with local
//! processes, isolated ones and in Docker, the example of every format to its own end,
//! a second run plays nothing, an interrupted run resumes, and a bad file is refused
//! with the key named.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use farm_coordinator::ledger::Ledger;

const COORDINATOR: &str = env!("CARGO_BIN_EXE_farm-coordinator");

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn run(args: &[&str]) -> Output {
    Command::new(COORDINATOR).arg("run").args(args).current_dir(repo()).output().expect("farm-coordinator runs")
}

fn json_standings(output: &Output) -> serde_json::Value {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON standings")
}

/// Every match answered, none failed, every bot in its share of them.
fn assert_complete(standings: &serde_json::Value, seats_per_match: u64) {
    let progress = &standings["progress"];
    assert_eq!(progress["failed"], 0, "{standings}");
    assert_eq!(progress["done"], progress["total"], "{standings}");
    let played: u64 = standings["rows"].as_array().expect("rows").iter().filter_map(|row| row["played"].as_u64()).sum();
    assert_eq!(played, progress["total"].as_u64().expect("total") * seats_per_match, "{standings}");
    let crashes: u64 =
        standings["rows"].as_array().expect("rows").iter().filter_map(|row| row["crashes"].as_u64()).sum();
    assert_eq!(crashes, 0, "{standings}");
}

/// `tournaments/` has an example of every format; each plays to its end, its format's
/// own (an SPRT's verdict, a Swiss's rounds, a ladder's cap) where it has one.
#[test]
fn every_format_example_plays_to_its_end() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, ended) in [
        ("gauntlet", None),
        ("sprt", Some("ended: H1 accepted")),
        ("swiss", Some("ended: played its 3 rounds")),
        ("ladder", Some("ended: played its cap of 40 matches")),
        ("season", Some("ended: played its cap of 120 matches")),
    ] {
        let data = dir.path().join(name);
        let file = format!("tournaments/{name}.toml");
        let output = run(&[&file, "--data", data.to_str().expect("UTF-8 path"), "--workers", "2", "--format", "json"]);
        let standings = json_standings(&output);
        // Finished: nothing waits or plays, nothing failed (a directed format cancels
        // what it no longer needs), and every match was played by two bots, none crashed.
        let progress = &standings["progress"];
        assert_eq!(
            (&progress["pending"], &progress["running"], &progress["failed"]),
            (&0.into(), &0.into(), &0.into())
        );
        let rows = standings["rows"].as_array().expect("rows");
        let played: u64 = rows.iter().filter_map(|row| row["played"].as_u64()).sum();
        assert_eq!(played, 2 * progress["done"].as_u64().expect("done"), "{name}: {standings}");
        assert!(rows.iter().all(|row| row["crashes"] == 0), "{name}: {standings}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(ended.is_none_or(|ended| stderr.contains(ended)), "{name}: {stderr}");
    }
}

#[test]
fn the_example_tournaments_run_locally_and_a_second_run_plays_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().to_str().expect("UTF-8 path");
    for (file, seats) in
        [("tournaments/botwars.toml", 2), ("tournaments/vindinium.toml", 3), ("tournaments/ostibot.toml", 4)]
    {
        let first = json_standings(&run(&[file, "--data", data, "--format", "json"]));
        assert_complete(&first, seats);
        let again = run(&[file, "--data", data, "--format", "json"]);
        assert!(String::from_utf8_lossy(&again.stderr).contains("was already played"), "{again:?}");
        assert_eq!(json_standings(&again), first, "nothing new is played, the standings are the same");
    }
    // The Maze example runs the release build of the Rust explorer; the tests have the
    // debug build. The copy reads its maps from the repository.
    let maze = dir.path().join("maze.toml");
    let text = std::fs::read_to_string(repo().join("tournaments/maze.toml")).expect("the maze example");
    let repo_dir = repo().canonicalize().expect("repository");
    let text = text
        .replace("target/release/", &format!("{}/target/debug/", repo_dir.display()))
        .replace("\"../maps/", &format!("\"{}/maps/", repo_dir.display()));
    std::fs::write(&maze, text).expect("write");
    let maze_data = dir.path().join("maze-data");
    let standings = json_standings(&run(&[
        maze.to_str().expect("UTF-8"),
        "--data",
        maze_data.to_str().expect("UTF-8"),
        "--format",
        "json",
    ]));
    assert_complete(&standings, 4);
    assert_eq!(standings["method"], "mean-score");

    let table = run(&["tournaments/botwars.toml", "--data", data]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.starts_with("place  bot"), "{table}");
    assert!(table.contains("gatherer") && table.contains("random-py"), "{table}");
}

#[test]
fn the_example_tournaments_run_in_docker() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().to_str().expect("UTF-8 path");
    for (file, seats) in
        [("tournaments/botwars.toml", 2), ("tournaments/ostibot.toml", 4), ("tournaments/maze.toml", 4)]
    {
        let output = run(&[file, "--data", data, "--format", "json", "--sandbox", "docker"]);
        assert_complete(&json_standings(&output), seats);
    }
    // `run` labels its containers with worker ids `run-<hash of the data dir>`;
    // none is left once it returns (no other test runs `run` in Docker).
    let labelled = Command::new("docker")
        .args(["ps", "-a", "--filter", "label=matchfarm.worker", "--format", "{{.Label \"matchfarm.worker\"}}"])
        .output()
        .expect("docker ps runs");
    let left: Vec<String> = String::from_utf8_lossy(&labelled.stdout)
        .lines()
        .filter(|id| id.starts_with("run-"))
        .map(str::to_owned)
        .collect();
    assert!(left.is_empty(), "containers left behind: {left:?}");
}

/// The isolated sandbox plays the same tournament to the same standings as plain local
/// processes, and `run` warns of unisolated bots whose code lies outside the checkout.
#[test]
fn the_isolated_sandbox_plays_as_local_does_and_foreign_local_bots_are_warned_of() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = "tournaments/vindinium.toml";
    let [local, isolated] = ["local", "isolated"].map(|sandbox| {
        let data = dir.path().join(sandbox);
        let output = run(&[file, "--data", data.to_str().expect("UTF-8"), "--format", "json", "--sandbox", sandbox]);
        assert!(!String::from_utf8_lossy(&output.stderr).contains("warning"), "{output:?}");
        json_standings(&output)
    });
    assert_complete(&isolated, 3);
    assert_eq!(isolated, local, "the same matches, the same standings");

    // The Python bot copied out of the checkout: somebody else's code.
    let repo_dir = repo().canonicalize().expect("repository");
    std::fs::copy(repo().join("bots/vindinium/random_bot.py"), dir.path().join("random_bot.py")).expect("copy");
    let bot = dir.path().join("random_bot.py");
    let text = std::fs::read_to_string(repo().join(file))
        .expect("the example")
        .replace("python3 bots/vindinium/random_bot.py", &format!("python3 {}", bot.display()))
        .replace("\"../maps/", &format!("\"{}/maps/", repo_dir.display()));
    let foreign = dir.path().join("foreign.toml");
    std::fs::write(&foreign, text).expect("write");
    let data = dir.path().join("foreign-data");
    let output = run(&[foreign.to_str().expect("UTF-8"), "--data", data.to_str().expect("UTF-8"), "--format", "json"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning: random-py") && stderr.contains("--sandbox isolated"), "{stderr}");
    assert_complete(&json_standings(&output), 3);
}

#[test]
fn an_interrupted_run_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("long.toml");
    let text = std::fs::read_to_string(repo().join("tournaments/botwars.toml"))
        .expect("the example")
        .replace("games_per_pairing = 4", "games_per_pairing = 40");
    std::fs::write(&file, text).expect("write");
    let data = dir.path().join("data");
    let child = Command::new(COORDINATOR)
        .args(["run", file.to_str().expect("UTF-8"), "--data", data.to_str().expect("UTF-8"), "--format", "json"])
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("farm-coordinator runs");
    // Interrupt once the first results are in (the ledger is readable while it runs).
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let done = Ledger::open(&data.join("ledger.sqlite"))
            .ok()
            .and_then(|ledger| {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
                runtime.block_on(async {
                    let tournaments = ledger.tournaments().await.ok()?;
                    tournaments.first().map(|summary| summary.progress.done)
                })
            })
            .unwrap_or(0);
        if done >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "no results within two minutes");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    let interrupted = child.wait_with_output().expect("run exits");
    let stderr = String::from_utf8_lossy(&interrupted.stderr);
    assert_eq!(interrupted.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("run the same command again to resume"), "{stderr}");
    let partial: serde_json::Value = serde_json::from_slice(&interrupted.stdout).expect("partial standings");
    let answered = partial["progress"]["done"].as_u64().expect("done");
    assert!((2..240).contains(&answered), "{partial}");

    let resumed = run(&[file.to_str().expect("UTF-8"), "--data", data.to_str().expect("UTF-8"), "--format", "json"]);
    let resumed = json_standings(&resumed);
    assert_complete(&resumed, 2);
    assert_eq!(resumed["progress"]["total"], 240);
    assert_eq!(resumed["progress"]["duplicates"], 0, "nothing was played twice into the ledger");
}

#[test]
fn a_bad_file_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("bad.toml");
    let text = std::fs::read_to_string(repo().join("tournaments/botwars.toml"))
        .expect("the example")
        .replace("builtin = \"gatherer\"", "builtin = \"gatherr\"");
    std::fs::write(&file, text).expect("write");
    let output = run(&[file.to_str().expect("UTF-8")]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bots[0].builtin: botwars has no builtin \"gatherr\""), "{stderr}");
}
