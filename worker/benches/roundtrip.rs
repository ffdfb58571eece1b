//! One turn's round trip (request out, reply in) to a bot that answers at once,
//! through each transport the worker has: a built-in bot in the worker's process, and
//! the same echo bot as a local process and in a container, each over stdio and over
//! HTTP. The request is a real Botwars observation (the first of a fixed match).
//!
//! The process and container benchmarks use bench-echo-bot (bots/bench/echo-rs): the
//! process one runs `target/{release,debug}/bench-echo-bot` (`cargo build --release -p
//! bench-echo-bot`), the container ones the images `matchfarm/bot-bench-echo-rs` and
//! `matchfarm/bot-bench-echo-http-rs` (`deploy/build-images.sh`). A benchmark whose bot
//! or Docker is missing is skipped with a message saying so.

use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use farm_engine::{GameKind, Match, MatchSetup};
use farm_proto::{BotLaunch, BotSpec, Transport};
use farm_worker::bots::{BotSession, DockerSandbox, DockerSettings, LaunchContext, LocalSandbox, Sandbox};
use tokio::runtime::Runtime;
use tokio::time::Instant;

/// How long any one reply may take before the benchmark fails: far beyond a turn.
const REPLY_LIMIT: Duration = Duration::from_secs(10);

fn bot(launch: BotLaunch, transport: Transport) -> BotSpec {
    BotSpec::new("echo", launch, transport)
}

/// A fixed Botwars match at its first step: what a bot is asked about on turn one.
fn first_step() -> Match {
    let players = vec!["red".to_owned(), "blue".to_owned()];
    let setup = MatchSetup::new(GameKind::Botwars, &serde_json::Value::Null, None, 7, players).expect("valid setup");
    Match::new(setup).expect("valid match")
}

/// The echo bot built beside this benchmark (target/<profile>/), or in the other profile.
fn echo_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let target = exe.parent()?.parent()?.parent()?.to_path_buf();
    ["release", "debug"].iter().map(|profile| target.join(profile).join("bench-echo-bot")).find(|path| path.exists())
}

async fn launch(sandbox: &impl Sandbox, spec: &BotSpec) -> Result<BotSession, String> {
    let context =
        LaunchContext { game: GameKind::Botwars, seed: 7, seat: 0, job_id: "bench-roundtrip", isolation: None };
    let mut session = sandbox.launch(spec, &context).await.map_err(|error| error.to_string())?;
    // The first request also waits for the bot to start: not part of a turn.
    session.send(&first_step(), 0);
    session.receive_until(Instant::now() + Duration::from_secs(60)).await;
    Ok(session)
}

/// Benchmarks `iters` round trips of `request` to `session`.
fn round_trips(runtime: &Runtime, session: &mut BotSession, request: &Match, iters: u64) -> Duration {
    runtime.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            assert!(session.send(request, 0), "the bot takes its request");
            let received = session.receive_until(Instant::now() + REPLY_LIMIT).await.map(|received| received.reply);
            assert!(matches!(received, Some(farm_engine::BotReply::Line(_))), "{received:?}");
        }
        start.elapsed()
    })
}

fn bench_session(c: &mut Criterion, runtime: &Runtime, name: &str, session: Result<BotSession, String>) {
    let request = first_step();
    match session {
        Ok(mut session) => {
            let mut group = c.benchmark_group("round_trip");
            group.throughput(Throughput::Elements(1));
            group.bench_function(name, |b| b.iter_custom(|iters| round_trips(runtime, &mut session, &request, iters)));
            group.finish();
            if session.is_external() {
                bench_cpu_accounting(c, runtime, name, &mut session);
            }
            runtime.block_on(session.finish());
        }
        Err(why) => eprintln!("round_trip/{name}: skipped: {why}"),
    }
}

/// One reading of the bot's CPU time, and one freeze and thaw of its processes.
fn bench_cpu_accounting(c: &mut Criterion, runtime: &Runtime, name: &str, session: &mut BotSession) {
    if session.cpu_used().is_none() {
        eprintln!("cpu_reading/{name}: skipped: this sandbox cannot read the bot's CPU time here");
        return;
    }
    let mut group = c.benchmark_group("cpu_reading");
    group.bench_function(name, |b| b.iter(|| session.cpu_used()));
    group.finish();
    let mut group = c.benchmark_group("freeze_thaw");
    // Inside the runtime, as the runner does it (a container's supervisor is told through
    // its socket).
    group.bench_function(name, |b| {
        b.iter(|| {
            runtime.block_on(async {
                session.freeze(true);
                session.freeze(false);
            })
        })
    });
    group.finish();
}

fn transports(c: &mut Criterion) {
    // As the worker runs: the multi-threaded runtime of #[tokio::main].
    let runtime = Runtime::new().expect("a tokio runtime");
    let builtin = runtime.block_on(launch(&LocalSandbox, &bot(BotLaunch::Builtin("random".into()), Transport::Stdio)));
    bench_session(c, &runtime, "builtin", builtin);

    for (name, mode, transport) in
        [("process_stdio", "", Transport::Stdio), ("process_http", " --http", Transport::Http)]
    {
        let process = match echo_binary() {
            Some(path) => {
                let command = BotLaunch::Command(format!("{}{mode}", path.display()));
                runtime.block_on(launch(&LocalSandbox, &bot(command, transport)))
            }
            None => Err("bench-echo-bot is not built (cargo build --release -p bench-echo-bot)".to_owned()),
        };
        bench_session(c, &runtime, name, process);
    }

    let docker = runtime
        .block_on(DockerSandbox::connect("bench-roundtrip", &DockerSettings::default()))
        .map_err(|error| error.to_string());
    for (name, image, transport) in [
        ("docker_stdio", "matchfarm/bot-bench-echo-rs", Transport::Stdio),
        ("docker_http", "matchfarm/bot-bench-echo-http-rs", Transport::Http),
    ] {
        let session = match &docker {
            Ok(docker) => runtime.block_on(launch(docker, &bot(BotLaunch::Image(image.into()), transport))),
            Err(why) => Err(format!("Docker is not reachable: {why}")),
        };
        bench_session(c, &runtime, name, session);
    }
    // The containers prepared again after their match go with the sandbox.
    if let Ok(docker) = docker {
        runtime.block_on(docker.shutdown()).expect("the bench's containers removed");
    }
}

criterion_group!(benches, transports);
criterion_main!(benches);
