//! `farm-worker build` against the real Docker engine: a Python starter bot built from
//! a directory plays a match from its image, and so does a Rust one, built offline with
//! the farm's toolchain image; a Dockerfile's steps have no network; a
//! source with a link out of it, a base the farm does not build, a failing step, a build
//! past its time and an image past its size are refused, each saying why. A built bot
//! pushed to the farm's registry is pulled by digest by a worker that lacks it, and
//! nothing is pulled from elsewhere. scripts/test builds the base images first
//! (`deploy/build-images.sh`) and starts the registry (`scripts/services/registry.sh`).

use std::path::Path;
use std::process::{Command, Output};

use farm_worker::build::{BuildError, BuildLimits, BuildLog, Source, SourceLimits, build, push};

const WORKER: &str = env!("CARGO_BIN_EXE_farm-worker");

fn worker(args: &[&str]) -> Output {
    Command::new(WORKER).args(args).current_dir(farm_testkit::repo()).output().expect("farm-worker runs")
}

/// A name no other run uses, for the image's tag.
fn unique(prefix: &str) -> String {
    farm_testkit::unique(prefix).to_ascii_lowercase()
}

/// Removes the images of `tags` when dropped.
struct Images(Vec<String>);

impl Drop for Images {
    fn drop(&mut self) {
        for tag in &self.0 {
            let _ = Command::new("docker").args(["rmi", "--force", tag]).output();
        }
    }
}

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
}

#[test]
fn a_python_starter_bot_builds_from_its_directory_and_plays() {
    let source = tempfile::tempdir().expect("temp dir");
    let bot = std::fs::read_to_string(farm_testkit::repo().join("bots/botwars/random_bot.py")).expect("the example");
    write(source.path(), &[("bot.py", &bot), ("notes/README", "how it plays")]);
    let name = unique("built-py");
    let built = worker(&["build", source.path().to_str().expect("UTF-8"), "--name", &name]);
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(built.status.success(), "{stderr}");
    let tag = String::from_utf8(built.stdout).expect("UTF-8").trim().to_owned();
    let _images = Images(vec![tag.clone()]);
    assert!(tag.starts_with(&format!("matchfarm-bots/{name}:")), "{tag}");
    assert!(stderr.contains("python layout"), "{stderr}");

    // The same source builds the same tag.
    let again = worker(&["build", source.path().to_str().expect("UTF-8"), "--name", &name]);
    assert_eq!(String::from_utf8_lossy(&again.stdout).trim(), tag);

    let out = tempfile::tempdir().expect("temp dir");
    let spec = format!("image:{tag}");
    let args = ["play", "--out", out.path().to_str().expect("UTF-8"), "--sandbox", "docker", "--game", "botwars"];
    let played = worker(
        &[
            &args[..],
            &["--seed", "3", "--rules", r#"{"replyTimeoutMs":20000}"#, "--bot", &spec, "--bot", "builtin:random"],
        ]
        .concat(),
    );
    assert!(played.status.success(), "{}", String::from_utf8_lossy(&played.stderr));
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("result.json")).expect("result.json")).expect("JSON");
    assert_eq!(result["seats"][0]["status"], "ok", "{result}");
    assert!(result["seats"][0]["requests"].as_u64().is_some_and(|requests| requests > 0), "{result}");
}

#[test]
fn a_rust_starter_bot_builds_offline_with_the_farms_toolchain_and_plays() {
    let source = tempfile::tempdir().expect("temp dir");
    write(
        source.path(),
        &[
            ("Cargo.toml", "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
            (
                "src/main.rs",
                "use std::io::{BufRead, Write};\n\
                 fn main() {\n\
                 \x20   let stdout = std::io::stdout();\n\
                 \x20   for _line in std::io::stdin().lock().lines() {\n\
                 \x20       let mut out = stdout.lock();\n\
                 \x20       writeln!(out, \"[]\").unwrap();\n\
                 \x20       out.flush().unwrap();\n\
                 \x20   }\n\
                 }\n",
            ),
        ],
    );
    let name = unique("built-rs");
    let built = worker(&["build", source.path().to_str().expect("UTF-8"), "--name", &name]);
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(built.status.success(), "{stderr}");
    assert!(stderr.contains("rust layout"), "{stderr}");
    let tag = String::from_utf8(built.stdout).expect("UTF-8").trim().to_owned();
    let _images = Images(vec![tag.clone()]);

    let out = tempfile::tempdir().expect("temp dir");
    let spec = format!("image:{tag}");
    let played = worker(&[
        "play",
        "--out",
        out.path().to_str().expect("UTF-8"),
        "--sandbox",
        "docker",
        "--game",
        "botwars",
        "--seed",
        "3",
        "--bot",
        &spec,
        "--bot",
        "builtin:random",
    ]);
    assert!(played.status.success(), "{}", String::from_utf8_lossy(&played.stderr));
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("result.json")).expect("result.json")).expect("JSON");
    assert_eq!(result["seats"][0]["status"], "ok", "{result}");
}

#[test]
fn sources_out_of_bounds_are_refused_saying_why() {
    let source = tempfile::tempdir().expect("temp dir");
    write(source.path(), &[("bot.py", "print()")]);
    std::os::unix::fs::symlink("/etc/passwd", source.path().join("passwd")).expect("symlink");
    let refused = worker(&["build", source.path().to_str().expect("UTF-8"), "--name", "linked"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("\"passwd\" is a symbolic link to \"/etc/passwd\", out of the source"), "{stderr}");

    let source = tempfile::tempdir().expect("temp dir");
    write(source.path(), &[("Dockerfile", "FROM python:3.12-slim\nCOPY . /bot\n")]);
    let refused = worker(&["build", source.path().to_str().expect("UTF-8"), "--name", "pulled"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && stderr.contains("Dockerfile line 1: FROM python:3.12-slim"), "{stderr}");

    let refused = worker(&["build", source.path().to_str().expect("UTF-8"), "--name", "Bad Name"]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--name \"Bad Name\""));
}

/// Builds a source of `files` with `limits`, through the library.
async fn build_files(files: &[(&str, &str)], limits: BuildLimits) -> (Result<String, BuildError>, String, Images) {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), files);
    let source = Source::read_dir(dir.path(), SourceLimits::default()).expect("a valid source");
    let docker =
        bollard::Docker::connect_with_local_defaults().expect("docker").negotiate_version().await.expect("docker");
    let mut log = BuildLog::default();
    let name = unique("built");
    let built = build(&docker, &source, &name, limits, &mut log).await.map(|built| built.tag);
    let images = Images(built.iter().cloned().collect());
    (built, log.0, images)
}

#[tokio::test]
async fn steps_have_no_network_and_failures_timeouts_and_sizes_are_reported() {
    // Only the loopback interface exists for a build's steps.
    let isolated = "FROM matchfarm/base-debian\nRUN test \"$(ls /sys/class/net)\" = lo\nCMD [\"true\"]\n";
    let (built, log, _images) = build_files(&[("Dockerfile", isolated)], BuildLimits::default()).await;
    assert!(built.is_ok(), "{built:?}\n{log}");

    let failing = "FROM matchfarm/base-debian\nRUN echo compiling && exit 3\n";
    let (built, log, _images) = build_files(&[("Dockerfile", failing)], BuildLimits::default()).await;
    assert!(matches!(built, Err(BuildError::Failed(_))), "{built:?}");
    assert!(log.contains("compiling"), "the log keeps the step's output: {log}");

    let slow = "FROM matchfarm/base-debian\nRUN sleep 120\n";
    let limits = BuildLimits { build_secs: 3, ..BuildLimits::default() };
    let (built, _, _images) = build_files(&[("Dockerfile", slow)], limits).await;
    assert!(matches!(built, Err(BuildError::TimedOut(3))), "{built:?}");

    // The Debian base alone is over a megabyte: the image is refused and removed.
    let limits = BuildLimits { max_image_mib: 1, ..BuildLimits::default() };
    let (built, _, _images) = build_files(&[("bot.py", "print()")], limits).await;
    let Err(BuildError::TooLarge { size_mib, limit_mib: 1 }) = built else { panic!("{built:?}") };
    assert!(size_mib > 1);
}

#[tokio::test]
async fn a_pushed_bot_is_pulled_by_digest_from_the_farms_registry_and_from_nowhere_else() {
    let registry = farm_testkit::registry();
    let dir = tempfile::tempdir().expect("temp dir");
    let bot = std::fs::read_to_string(farm_testkit::repo().join("bots/botwars/random_bot.py")).expect("the example");
    write(dir.path(), &[("bot.py", &bot)]);
    let source = Source::read_dir(dir.path(), SourceLimits::default()).expect("a source");
    let docker = bollard::Docker::connect_with_local_defaults().expect("docker");
    let name = unique("pulled");
    let built = build(&docker, &source, &name, BuildLimits::default(), &mut BuildLog::default()).await.expect("built");
    let image = push(&docker, &built, &registry).await.expect("pushed");
    assert!(image.starts_with(&format!("{registry}/matchfarm-bots/{name}@sha256:")), "{image}");
    // The builder's engine keeps no tag of it: only the registry has it now.
    let _images = Images(vec![image.clone()]);
    let present = |reference: &str| {
        Command::new("docker").args(["image", "inspect", reference]).output().expect("inspect").status.success()
    };
    assert!(!present(&built.tag) && !present(&image), "the pushed build's tags are removed");

    let out = tempfile::tempdir().expect("temp dir");
    let play = |bot: &str| {
        worker(&[
            "play",
            "--out",
            out.path().to_str().expect("UTF-8"),
            "--sandbox",
            "docker",
            "--registry",
            &registry,
            "--game",
            "botwars",
            "--seed",
            "4",
            "--rules",
            r#"{"replyTimeoutMs":20000}"#,
            "--bot",
            bot,
            "--bot",
            "builtin:random",
        ])
    };
    let played = play(&format!("image:{image}"));
    assert!(played.status.success(), "{}", String::from_utf8_lossy(&played.stderr));
    assert!(present(&image), "pulled");

    // A digest elsewhere is never pulled: the engine lacks it, and that is the error.
    let elsewhere = format!("image:registry.invalid/x@sha256:{}", "0".repeat(64));
    let refused = play(&elsewhere);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && stderr.contains("No such image: registry.invalid/x@sha256:"), "{stderr}");
}
