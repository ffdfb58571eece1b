//! `farm-worker reproduce` against the real Docker engine: a match played with a
//! container bot is played again identically from its result file; after its image's
//! tag is rebuilt with other content the recorded image is still the one played; once
//! that image is deleted, reproduce says so; and a recorded hash that does not match
//! is reported as different.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use farm_testkit::unique;

const WORKER: &str = env!("CARGO_BIN_EXE_farm-worker");

/// Builds `tag` as the Botwars Rust example with a label of `variant`: the same bot,
/// other image content (another id). Returns the image id.
fn build_variant(tag: &str, variant: u32) -> String {
    let dockerfile = format!("FROM matchfarm/bot-botwars-random-rs:latest\nLABEL matchfarm.test.variant={variant}\n");
    let mut build = Command::new("docker")
        .args(["build", "-q", "-t", tag, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("docker runs");
    std::io::Write::write_all(&mut build.stdin.take().expect("stdin"), dockerfile.as_bytes()).expect("the Dockerfile");
    let built = build.wait_with_output().expect("docker build ends");
    assert!(built.status.success(), "docker build: {}", String::from_utf8_lossy(&built.stderr));
    String::from_utf8_lossy(&built.stdout).trim().to_owned()
}

fn worker(args: &[&str]) -> Output {
    Command::new(WORKER).args(args).output().expect("farm-worker runs")
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

fn reproduce(result: &Path, out: &Path) -> Output {
    worker(&["reproduce", "--result", result.to_str().expect("utf-8"), "--out", out.to_str().expect("utf-8")])
}

/// Removes the test's images, whatever happened.
struct Images(Vec<String>);

impl Drop for Images {
    fn drop(&mut self) {
        let _ = Command::new("docker").arg("rmi").arg("-f").args(&self.0).output();
    }
}

#[test]
fn a_match_is_played_again_with_the_image_it_had_or_reproduce_says_that_image_is_gone() {
    let tag = format!("matchfarm/test-{}:latest", unique("reproduce"));
    let first = build_variant(&tag, 1);
    let mut images = Images(vec![tag.clone(), first.clone()]);
    let dir = tempfile::tempdir().expect("a directory");
    let played = dir.path().join("played");
    let bot = format!("image:{tag}");
    let play = worker(&[
        "play",
        "--sandbox",
        "docker",
        "--game",
        "botwars",
        "--rules",
        r#"{"maxTurns": 30}"#,
        "--seed",
        "9",
        "--bot",
        &bot,
        "--bot",
        "builtin:gatherer",
        "--out",
        played.to_str().expect("utf-8"),
    ]);
    assert!(play.status.success(), "{}", text(&play));
    let result_path = played.join("result.json");
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&result_path).expect("result.json")).expect("JSON");
    assert_eq!(result["reproduction"]["images"][0], first.as_str(), "the bundle names the image by id: {result}");
    assert_eq!(result["reproduction"]["job"]["bots"][0]["launch"]["image"], tag.as_str(), "and the job as given");

    let again = reproduce(&result_path, &dir.path().join("again"));
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(text(&again).contains("identical"), "{}", text(&again));

    // The tag now names other content: the recorded image is played, and it is said.
    let second = build_variant(&tag, 2);
    images.0.push(second.clone());
    assert_ne!(first, second);
    let moved = reproduce(&result_path, &dir.path().join("moved"));
    assert_eq!(moved.status.code(), Some(0), "{}", text(&moved));
    let said = text(&moved);
    assert!(said.contains(&format!("{tag} now names {second}")) && said.contains("identical"), "{said}");

    // A recorded hash that is not this play's: different.
    let mut forged = result.clone();
    forged["replay_sha256"] = "0".repeat(64).into();
    let forged_path = dir.path().join("forged.json");
    std::fs::write(&forged_path, serde_json::to_vec(&forged).expect("JSON")).expect("written");
    let different = reproduce(&forged_path, &dir.path().join("forged"));
    assert_eq!(different.status.code(), Some(1), "{}", text(&different));
    assert!(text(&different).contains("DIFFERENT"), "{}", text(&different));

    // The recorded image deleted: reproduce cannot play it, and says why.
    let removed = Command::new("docker").args(["rmi", &first]).output().expect("docker runs");
    assert!(removed.status.success(), "{}", String::from_utf8_lossy(&removed.stderr));
    let gone = reproduce(&result_path, &dir.path().join("gone"));
    assert_eq!(gone.status.code(), Some(2), "{}", text(&gone));
    assert!(
        text(&gone).contains(&format!("{first} (then named {tag}) is no longer on this machine")),
        "{}",
        text(&gone)
    );
}
