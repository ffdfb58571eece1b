//! Builds against the real Docker engine, as the farm builds its authors' sources:
//! compiled in a sandboxed toolchain container, assembled by the farm.
//! - Every layout's example bot (bots/botwars/layouts/) builds with `farm-worker build`
//!   and plays a match from its image; a Python source with a vendored wheel too.
//! - An author's Dockerfile, with each trick that once made the engine fetch, pull or
//!   read past the build, has no effect: alone it is no layout; beside `bot.py` it is
//!   a file of a Python bot, and a server on the host's loopback sees no request.
//! - Hostile compiles stop at their limits (pids, scratch disk, network, time), each
//!   saying which, leave nothing in the engine, and a match played meanwhile is `ok`.
//! - A built bot pushed to the farm's registry (which takes only the workers'
//!   credentials and refuses deletes) is pulled by digest by a worker that lacks it,
//!   and nothing is pulled from elsewhere.
//!
//! scripts/test builds the farm's images first (`deploy/build-images.sh`: the bases,
//! toolchains and runtimes) and starts the registry (`scripts/services/registry.sh`).

use std::collections::BTreeSet;
use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use farm_worker::build::{
    BUILD_LABEL, BuildEngine, BuildError, BuildLimits, BuildLog, LAYOUTS, Source, SourceLimits, build, push,
};

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

fn write(dir: &Path, files: &[(&str, &[u8])]) {
    for (path, data) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, data).expect("write");
    }
}

/// What `docker` prints for `args`, one line each.
fn docker_lines(args: &[&str]) -> BTreeSet<String> {
    let output = Command::new("docker").args(args).output().expect("docker runs");
    assert!(output.status.success(), "docker {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
}

/// Plays a Botwars match of `spec` against the built-in random bot in Docker; the
/// result's first seat.
fn play_botwars(spec: &str, extra: &[&str]) -> serde_json::Value {
    let out = tempfile::tempdir().expect("temp dir");
    let args = ["play", "--out", out.path().to_str().expect("UTF-8"), "--sandbox", "docker", "--game", "botwars"];
    // A deadline far above any reply: the builds played beside some of these matches
    // slow a small machine down (a reply took over 20 s once in CI, under gVisor); what
    // must not happen is that a match breaks.
    let rules = ["--seed", "3", "--rules", r#"{"replyTimeoutMs":120000}"#, "--bot", spec, "--bot", "builtin:random"];
    let runtime = runtime_args();
    let runtime: Vec<&str> = runtime.iter().map(String::as_str).collect();
    let played = worker(&[&args[..], &runtime[..], extra, &rules[..]].concat());
    assert!(played.status.success(), "{spec}: {}", String::from_utf8_lossy(&played.stderr));
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("result.json")).expect("result.json")).expect("JSON");
    result["seats"][0].clone()
}

/// The runtime the tests' containers run under (FARM_TEST_DOCKER_RUNTIME), as
/// `farm-worker` arguments.
fn runtime_args() -> Vec<String> {
    farm_testkit::docker_runtime().map(|runtime| vec!["--docker-runtime".to_owned(), runtime]).unwrap_or_default()
}

/// `farm-worker build DIR --name NAME`: (the tag printed, the log).
fn build_dir(dir: &Path, name: &str) -> (Option<String>, String) {
    let runtime = runtime_args();
    let runtime: Vec<&str> = runtime.iter().map(String::as_str).collect();
    let built = worker(&[&["build", dir.to_str().expect("UTF-8"), "--name", name], &runtime[..]].concat());
    let stderr = String::from_utf8_lossy(&built.stderr).into_owned();
    let tag = built.status.success().then(|| String::from_utf8_lossy(&built.stdout).trim().to_owned());
    (tag, stderr)
}

/// A wheel of one pure-Python module, `wander_rng` (`def pick(n)`), made as pip makes
/// them: a zip with the module and its dist-info.
fn wheel() -> Vec<u8> {
    let script = r#"
import base64, hashlib, io, sys, zipfile
files = {
    "wander_rng/__init__.py": b"def pick(n):\n    return n // 2\n",
    "wander_rng-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: wander-rng\nVersion: 0.1\n",
    "wander_rng-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: matchfarm-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{name},sha256={digest},{len(data)}")
record.append("wander_rng-0.1.dist-info/RECORD,,")
files["wander_rng-0.1.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
out = io.BytesIO()
with zipfile.ZipFile(out, "w") as archive:
    for name, data in files.items():
        archive.writestr(name, data)
sys.stdout.buffer.write(out.getvalue())
"#;
    let made = Command::new("python3").args(["-c", script]).output().expect("python3 runs");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    made.stdout
}

#[test]
fn every_layouts_example_bot_builds_in_its_sandbox_and_plays() {
    let examples = farm_testkit::repo().join("bots/botwars/layouts");
    let mut built_layouts = BTreeSet::new();
    let mut images = Images(Vec::new());
    let mut dirs: Vec<_> =
        std::fs::read_dir(&examples).expect("bots/botwars/layouts").map(|entry| entry.expect("entry").path()).collect();
    dirs.sort();
    for dir in dirs {
        let example = dir.file_name().expect("a name").to_string_lossy().into_owned();
        let (tag, log) = build_dir(&dir, &unique(&format!("layout-{example}")));
        let tag = tag.unwrap_or_else(|| panic!("{example} builds: {log}"));
        images.0.push(tag.clone());
        let layout = LAYOUTS.iter().find(|layout| log.contains(&format!("({} layout)", layout.name)));
        let layout = layout.unwrap_or_else(|| panic!("{example}: no layout named in {log}"));
        assert!(log.contains(&format!("compiling the {} layout in {}", layout.name, layout.toolchain)), "{log}");
        assert!(log.contains("scratch space used"), "the build's disk use is reported: {log}");
        built_layouts.insert(layout.name);
        let seat = play_botwars(&format!("image:{tag}"), &[]);
        assert_eq!(seat["status"], "ok", "{example}: {seat}");
        assert!(seat["requests"].as_u64().is_some_and(|requests| requests > 10), "{example}: {seat}");
    }
    let every: BTreeSet<&str> = LAYOUTS.iter().map(|layout| layout.name).collect();
    assert_eq!(built_layouts, every, "an example of every layout");

    // A Python bot with a vendored wheel: installed offline, importable at run time.
    let source = tempfile::tempdir().expect("temp dir");
    let bot = b"import sys\nimport wander_rng\nfor line in sys.stdin:\n    print('[]' if wander_rng.pick(4) == 2 else 'x', flush=True)\n";
    write(source.path(), &[("bot.py", bot), ("wheels/wander_rng-0.1-py3-none-any.whl", &wheel())]);
    let (tag, log) = build_dir(source.path(), &unique("wheel"));
    let tag = tag.unwrap_or_else(|| panic!("the wheel's bot builds: {log}"));
    images.0.push(tag.clone());
    let seat = play_botwars(&format!("image:{tag}"), &[]);
    assert_eq!(seat["status"], "ok", "the wheel's module imported: {seat}");
}

/// Counts the connections made to a server on the host's loopback.
struct Witness {
    port: u16,
    seen: Arc<AtomicUsize>,
}

impl Witness {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counter.fetch_add(1, Ordering::SeqCst);
                let mut stream = stream;
                let _ = stream.read(&mut [0; 1024]);
                let _ = std::io::Write::write_all(&mut stream, b"HTTP/1.0 200 OK\r\n\r\nthe-secret\n");
            }
        });
        Witness { port, seen }
    }

    /// Whether the witness answers at all: the check that a zero count means something.
    fn answers(&self) -> bool {
        let before = self.seen.load(Ordering::SeqCst);
        let reached = std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while self.seen.load(Ordering::SeqCst) == before && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        reached && self.seen.load(Ordering::SeqCst) == before + 1
    }
}

/// Builds `files` as a source, through the library, on the engine's default runtime:
/// (the tag or the error, the log, the image) once no container of the build is left.
async fn build_files(files: &[(&str, &[u8])], limits: BuildLimits) -> (Result<String, BuildError>, String, Images) {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), files);
    let source = Source::read_dir(dir.path(), SourceLimits::default()).expect("a valid source");
    let docker =
        bollard::Docker::connect_with_local_defaults().expect("docker").negotiate_version().await.expect("docker");
    let mut log = BuildLog::default();
    let name = unique("built");
    let engine = BuildEngine::connect(docker, farm_testkit::docker_runtime()).await.expect("the runtime");
    let built = build(&engine, &source, &name, limits, &mut log).await.map(|built| built.tag);
    let images = Images(built.iter().cloned().collect());
    let left = docker_lines(&["ps", "-aq", "--filter", &format!("label={BUILD_LABEL}={name}")]);
    assert_eq!(left, BTreeSet::new(), "the toolchain container of {name} is left: {built:?}");
    if built.is_err() {
        let images = docker_lines(&["images", "-q", &format!("matchfarm-bots/{name}")]);
        assert_eq!(images, BTreeSet::new(), "an image of the failed build of {name} is left: {built:?}");
    }
    (built, log.0, images)
}

/// A bot that answers every request with no moves.
const IDLE_BOT: &[u8] = b"import sys\nfor line in sys.stdin:\n    print('[]', flush=True)\n";

#[tokio::test]
async fn an_authors_dockerfile_reaches_no_daemon_and_fetches_nothing() {
    let witness = Witness::start();
    let url = format!("http://127.0.0.1:{}/secret.txt", witness.port);
    // Each passed the text check that stood before, and the engine then fetched, pulled
    // or copied from outside the build.
    let tricks = [
        format!("FROM matchfarm/base-debian\nARG U={url}\nADD ${{U}} /loot\nRUN cat /loot\n"),
        format!("FROM matchfarm/base-debian\nRUN true \\\n\nCOPY --from=127.0.0.1:{}/x / /\n", witness.port),
        format!("FROM matchfarm/base-debian\nRUN true \\\x0b\nADD {url} /loot\n"),
        format!("#escape\t=`\nFROM matchfarm/base-debian\nADD {url} /loot\n"),
        "FROM matchfarm/base-debian AS python\nFROM python:latest\n".to_owned(),
        "FROM --platform=linux/arm64 matchfarm/base-debian\n".to_owned(),
    ];
    for trick in &tricks {
        // Alone, a Dockerfile is no source: the error names the layouts.
        let dir = tempfile::tempdir().expect("temp dir");
        write(dir.path(), &[("Dockerfile", trick.as_bytes())]);
        let (tag, stderr) = build_dir(dir.path(), "trick");
        assert!(tag.is_none() && stderr.contains("nothing says how to build it"), "{stderr}");
        assert!(LAYOUTS.iter().all(|layout| stderr.contains(layout.name)), "{stderr}");

        // Beside bot.py it is a file of a Python bot, and nothing more.
        let (built, log, _images) =
            build_files(&[("Dockerfile", trick.as_bytes()), ("bot.py", IDLE_BOT)], BuildLimits::default()).await;
        let tag = built.unwrap_or_else(|error| panic!("{trick}: {error}\n{log}"));
        assert!(!log.contains("the-secret") && !log.contains("/loot"), "{log}");
        let config =
            docker_lines(&["image", "inspect", "--format", "{{json .Config.Cmd}} {{.Os}}/{{.Architecture}}", &tag]);
        assert_eq!(config, BTreeSet::from([r#"["python3","/bot/bot.py"] linux/amd64"#.to_owned()]), "{trick}");
    }
    assert_eq!(witness.seen.load(Ordering::SeqCst), 0, "a build reached the host's loopback");
    assert!(witness.answers(), "the witness itself is reachable from the host");
}

#[tokio::test]
async fn hostile_compiles_stop_at_their_limits_and_leave_nothing_behind() {
    let witness = Witness::start();
    let volumes = docker_lines(&["volume", "ls", "-q"]);
    // A match on the same engine meanwhile.
    let match_meanwhile = std::thread::spawn(|| play_botwars("image:matchfarm/bot-botwars-random-py", &[]));

    let make = |recipe: &str| format!("bot:\n\t{recipe}\n").into_bytes();
    let limits = BuildLimits { pids: 64, scratch_mib: 32, build_secs: 20, ..BuildLimits::default() };
    // A fork bomb: forks fail at the pids limit and the compile fails at once.
    let bomb = make("i=0; while [ $$i -lt 500 ]; do sleep 60 & i=$$((i+1)); done; wait");
    let (built, log, _images) = build_files(&[("Makefile", &bomb)], limits).await;
    assert!(matches!(built, Err(BuildError::Failed(_))), "{built:?}\n{log}");
    assert!(log.contains("fork"), "the forks failed: {log}");

    // Writing past the scratch space.
    let filler = make("head -c 200M /dev/zero > filler");
    let (built, log, _images) = build_files(&[("Makefile", &filler)], limits).await;
    let error = built.expect_err("over the disk bound");
    assert!(matches!(error, BuildError::DiskLimit { mib: 32 }), "{error:?}\n{log}");
    assert!(error.to_string().starts_with("build disk limit"), "{error}");

    // The network: there is none; the host's loopback is not the container's.
    let reach = make(&format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {}), timeout=5)\"",
        witness.port
    ));
    let (built, log, _images) = build_files(&[("Makefile", &reach)], limits).await;
    assert!(matches!(built, Err(BuildError::Failed(_))), "{built:?}\n{log}");
    assert!(log.contains("Connection refused"), "{log}");
    let resolve = make("getent hosts deb.debian.org");
    let (built, log, _images) = build_files(&[("Makefile", &resolve)], limits).await;
    assert!(matches!(built, Err(BuildError::Failed(_))), "no name resolves: {built:?}\n{log}");

    // Past the build's time.
    let limits = BuildLimits { build_secs: 3, ..limits };
    let (built, _, _images) = build_files(&[("Makefile", &make("sleep 300"))], limits).await;
    let error = built.expect_err("over the time bound");
    assert!(matches!(error, BuildError::TimedOut(3)) && error.to_string().starts_with("build time limit"), "{error}");

    // An image over its bound is refused and removed: the Debian base alone is larger.
    let limits = BuildLimits { max_image_mib: 1, ..BuildLimits::default() };
    let (built, _, _images) = build_files(&[("bot.py", IDLE_BOT)], limits).await;
    let Err(BuildError::TooLarge { size_mib, limit_mib: 1 }) = built else { panic!("{built:?}") };
    assert!(size_mib > 1);

    assert_eq!(witness.seen.load(Ordering::SeqCst), 0, "a compile reached the host's loopback");
    // Nothing left: no toolchain container and no image of a failed build
    // (build_files checks both), no volume.
    assert_eq!(docker_lines(&["volume", "ls", "-q"]), volumes, "no volume added");
    let seat = match_meanwhile.join().expect("the match thread");
    assert_eq!(seat["status"], "ok", "the match beside the builds: {seat}");
}

#[test]
fn sources_out_of_bounds_are_refused_saying_why() {
    let source = tempfile::tempdir().expect("temp dir");
    write(source.path(), &[("bot.py", b"print()")]);
    std::os::unix::fs::symlink("/etc/passwd", source.path().join("passwd")).expect("symlink");
    let (tag, stderr) = build_dir(source.path(), "linked");
    assert!(tag.is_none());
    assert!(stderr.contains("\"passwd\" is a symbolic link to \"/etc/passwd\", out of the source"), "{stderr}");

    let source = tempfile::tempdir().expect("temp dir");
    write(source.path(), &[("main.py", b"print()")]);
    let (tag, stderr) = build_dir(source.path(), "unmarked");
    assert!(tag.is_none() && stderr.contains("python (bot.py"), "{stderr}");

    let refused = worker(&["build", source.path().to_str().expect("UTF-8"), "--name", "Bad Name"]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--name \"Bad Name\""));
}

#[tokio::test]
async fn a_pushed_bot_is_pulled_by_digest_from_the_farms_registry_and_from_nowhere_else() {
    let registry = farm_testkit::registry();
    let (user, password) = farm_testkit::registry_login();
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), &[("bot.py", IDLE_BOT)]);
    let source = Source::read_dir(dir.path(), SourceLimits::default()).expect("a source");
    let docker = bollard::Docker::connect_with_local_defaults().expect("docker");
    let name = unique("pulled");
    let engine = BuildEngine::connect(docker.clone(), None).await.expect("the engine");
    let built = build(&engine, &source, &name, BuildLimits::default(), &mut BuildLog::default()).await.expect("built");
    let credentials = |password: &str| {
        Some(bollard::auth::DockerCredentials {
            username: Some(user.clone()),
            password: Some(password.to_owned()),
            serveraddress: Some(registry.clone()),
            ..Default::default()
        })
    };

    // Without the workers' password the registry takes nothing.
    let refused = push(&docker, &built, &registry, credentials("not-the-password")).await;
    assert!(matches!(refused, Err(BuildError::Push(_))), "{refused:?}");
    let built = build(&engine, &source, &name, BuildLimits::default(), &mut BuildLog::default()).await.expect("built");
    let image = push(&docker, &built, &registry, credentials(&password)).await.expect("pushed");
    assert!(image.starts_with(&format!("{registry}/matchfarm-bots/{name}@sha256:")), "{image}");
    // The builder's engine keeps no tag of it: only the registry has it now.
    let _images = Images(vec![image.clone()]);
    let present = |reference: &str| {
        Command::new("docker").args(["image", "inspect", reference]).output().expect("inspect").status.success()
    };
    assert!(!present(&built.tag) && !present(&image), "the pushed build's tags are removed");

    // Nobody deletes it, not even with the workers' credentials.
    let (repository, digest) = image.split_once('@').expect("by digest");
    let repository = repository.strip_prefix(&format!("{registry}/")).expect("in the registry");
    let manifest = format!("http://{registry}/v2/{repository}/manifests/{digest}");
    let status = |args: &[&str]| {
        let output = Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
            .args(args)
            .output()
            .expect("curl runs");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let login = format!("{user}:{password}");
    assert_eq!(status(&["-X", "DELETE", "-u", &login, &manifest]), "405", "deletes are disabled");
    assert_eq!(status(&[&manifest]), "401", "reads need the credentials");
    assert_eq!(
        status(&["-u", &login, "-H", "Accept: application/vnd.docker.distribution.manifest.v2+json", &manifest]),
        "200"
    );

    let registry_args = ["--registry", &registry, "--registry-user", &user];
    let with_password = |spec: &str| {
        let out = tempfile::tempdir().expect("temp dir");
        Command::new(WORKER)
            .args(["play", "--out", out.path().to_str().expect("UTF-8"), "--sandbox", "docker", "--game", "botwars"])
            .args(registry_args)
            .args(["--seed", "4", "--bot", spec, "--bot", "builtin:random"])
            .env("FARM_DOCKER__REGISTRY_PASSWORD", &password)
            .output()
            .expect("farm-worker runs")
    };
    let played = with_password(&format!("image:{image}"));
    assert!(played.status.success(), "{}", String::from_utf8_lossy(&played.stderr));
    assert!(present(&image), "pulled");

    // A digest elsewhere is never pulled: the engine lacks it, and that is the error.
    let elsewhere = format!("image:registry.invalid/x@sha256:{}", "0".repeat(64));
    let refused = with_password(&elsewhere);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && stderr.contains("No such image: registry.invalid/x@sha256:"), "{stderr}");
}
