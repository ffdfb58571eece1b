//! Every example bot image of `deploy/images.txt` plays a match of its game in the
//! Docker sandbox (`farm-worker play --sandbox docker`), over its transport, and its
//! replay verifies: a new example bot image is tested from its line in the table alone.
//! scripts/test builds the images first (`deploy/build-images.sh`).

use std::process::{Command, Output};

use farm_proto::GameKind;
use farm_testkit::images::{self, Image};
use serde_json::Value;

const WORKER: &str = env!("CARGO_BIN_EXE_farm-worker");

/// Deadlines no loaded machine misses, and short matches: this is about each image
/// playing its game, not about speed.
fn patient_rules(game: GameKind) -> &'static str {
    match game {
        GameKind::Vindinium => r#"{"maxTurns":80,"moveTimeoutMs":20000}"#,
        GameKind::Botwars => r#"{"replyTimeoutMs":20000}"#,
        GameKind::Ostibot => r#"{"timeout":20}"#,
        GameKind::Maze => r#"{"firstTurnTimeoutMs":20000,"turnTimeoutMs":20000}"#,
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(WORKER).args(args).current_dir(farm_testkit::repo()).output().expect("farm-worker runs")
}

/// Plays `image` in seat 0 of a match of `game` against `builtin:random` (which every
/// game has; Vindinium fills its other seats with it too) and checks the match: every
/// seat ok, the image asked for moves and there to the end, the replay verified.
fn play(game: GameKind, image: &Image) {
    let spec = image.spec();
    let out = tempfile::tempdir().expect("temp dir");
    let out_arg = out.path().to_str().expect("utf-8 path");
    let rules = patient_rules(game);
    let args = ["play", "--out", out_arg, "--sandbox", "docker", "--game", game.name(), "--seed", "5"];
    let output = run(&[&args[..], &["--rules", rules, "--bot", &spec, "--bot", "builtin:random"]].concat());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{spec} in a {game} match: {stderr}");

    let result = std::fs::read(out.path().join("result.json")).expect("result.json written");
    let result: Value = serde_json::from_slice(&result).expect("result.json is JSON");
    let seats = result["seats"].as_array().expect("seats");
    assert!(seats.iter().all(|seat| seat["status"] == "ok"), "{spec} in a {game} match: {result}");
    assert!(seats[0]["requests"].as_u64().is_some_and(|requests| requests > 0), "{spec} played: {result}");
    let log = std::fs::read_to_string(out.path().join("seat-0.stderr.log")).unwrap_or_default();
    assert_eq!(seats[0]["exit"]["exited_early"], false, "{spec} ran to the end of the match: {result}\n{log}");

    let replay = out.path().join("replay.jsonl");
    let verified = run(&["replay", "verify", replay.to_str().expect("utf-8 path")]);
    let stdout = String::from_utf8_lossy(&verified.stdout);
    assert!(verified.status.success() && stdout.contains("OK"), "{spec}'s replay: {stdout}");
}

#[test]
fn every_example_bot_image_plays_a_match_of_its_game_in_docker() {
    let mut played = Vec::new();
    for game in GameKind::ALL {
        for image in images::examples(game) {
            play(game, image);
            played.push(image.name.as_str());
        }
    }
    assert!(played.len() >= GameKind::ALL.len(), "an example image per game at least: {played:?}");
}
