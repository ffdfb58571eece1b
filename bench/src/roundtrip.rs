//! Per-turn round trip to a bot that answers at once: request out, reply in, through
//! each transport (a built-in bot; the same echo bot as a local process and in a
//! container, over stdio and over HTTP). The request is a real Botwars observation (a
//! built-in bot reads the same step of the match itself). Beside them, Vindinium's
//! `vindinium-server` transport, whose bot is a client of the original server's API:
//! the Rust starter kit (which reads each state and answers at once) as a process and
//! in a container, against the echo bot over stdio on the same Vindinium state.

use std::time::Duration;

use farm_engine::{BotReply, GameKind, Match, MatchSetup};
use farm_proto::{BotLaunch, BotSpec, Transport};
use farm_worker::bots::{BotSession, DockerSettings, LaunchContext, LocalSandbox, Sandbox};
use tokio::time::Instant;

use crate::bots::{self, ECHO_HTTP_IMAGE, ECHO_IMAGE, KIT_IMAGE};
use crate::report::Figures;

/// Any one reply may take this long before the section fails: far beyond a turn.
const REPLY_LIMIT: Duration = Duration::from_secs(10);
/// The first reply also waits for the bot to start.
const FIRST_REPLY_LIMIT: Duration = Duration::from_secs(60);

/// A fixed match of `game` at its first step: every request asks seat 0 about it.
fn first_step(game: GameKind) -> anyhow::Result<Match> {
    let seats = if game == GameKind::Vindinium { 4 } else { 2 };
    let players = ["red", "blue", "green", "yellow"][..seats].iter().map(|&name| name.to_owned()).collect();
    let setup = MatchSetup::new(game, &serde_json::Value::Null, None, 7, players)?;
    Ok(Match::new(setup)?)
}

/// `samples` timed round trips to `spec`, started in `sandbox` (after one untimed
/// request, which waits for the bot to start).
async fn measure(
    sandbox: &impl Sandbox,
    spec: &BotSpec,
    request: &Match,
    samples: usize,
) -> anyhow::Result<Vec<Duration>> {
    let game = request.setup().game;
    let context = LaunchContext { game, seed: 7, seat: 0, job_id: "bench-roundtrip", isolation: None };
    let mut session = sandbox.launch(spec, &context).await?;
    let result = async {
        ask(&mut session, request, FIRST_REPLY_LIMIT).await?;
        let mut times = Vec::with_capacity(samples);
        for _ in 0..samples {
            let sent = Instant::now();
            ask(&mut session, request, REPLY_LIMIT).await?;
            times.push(sent.elapsed());
        }
        Ok(times)
    }
    .await;
    session.finish().await;
    result
}

async fn ask(session: &mut BotSession, request: &Match, limit: Duration) -> anyhow::Result<()> {
    anyhow::ensure!(session.send(request, 0), "the bot does not take its request");
    match session.receive_until(Instant::now() + limit).await.map(|received| received.reply) {
        Some(BotReply::Line(_)) => Ok(()),
        Some(other) => anyhow::bail!("the bot answered {other:?}"),
        None => anyhow::bail!("the bot did not answer within {limit:?}"),
    }
}

/// Measures every transport; those whose bot or Docker is missing are recorded as
/// skipped, with the reason.
pub async fn run(samples: usize) -> anyhow::Result<Figures> {
    let request = first_step(GameKind::Botwars)?;
    let vindinium = first_step(GameKind::Vindinium)?;
    let mut figures = Figures::default();
    let builtin = BotSpec::new("random", BotLaunch::Builtin("random".to_owned()), Transport::Stdio);
    figures.latencies("builtin", &mut measure(&LocalSandbox, &builtin, &request, samples).await?);
    for (name, transport) in [("process_stdio", Transport::Stdio), ("process_http", Transport::Http)] {
        match bots::echo_process("echo", transport) {
            Ok(process) => figures.latencies(name, &mut measure(&LocalSandbox, &process, &request, samples).await?),
            Err(why) => figures.skipped(name, &why),
        }
    }
    let vindinium_bots = [
        ("process_stdio_vindinium", bots::echo_process("echo", Transport::Stdio)),
        ("process_vindinium_server", bots::kit_process("kit")),
    ];
    for (name, bot) in vindinium_bots {
        match bot {
            Ok(bot) => figures.latencies(name, &mut measure(&LocalSandbox, &bot, &vindinium, samples).await?),
            Err(why) => figures.skipped(name, &why),
        }
    }
    match bots::docker("bench-roundtrip", &DockerSettings::default()).await {
        Ok(docker) => {
            let measured = async {
                for (name, image, transport) in
                    [("docker_stdio", ECHO_IMAGE, Transport::Stdio), ("docker_http", ECHO_HTTP_IMAGE, Transport::Http)]
                {
                    let spec = BotSpec::new("echo", BotLaunch::Image(image.to_owned()), transport);
                    figures.latencies(name, &mut measure(&docker, &spec, &request, samples).await?);
                }
                let kit = BotSpec::new("kit", BotLaunch::Image(KIT_IMAGE.to_owned()), Transport::VindiniumServer);
                figures.latencies("docker_vindinium_server", &mut measure(&docker, &kit, &vindinium, samples).await?);
                anyhow::Ok(())
            }
            .await;
            // The containers prepared again after their matches go with the sandbox.
            docker.shutdown().await?;
            measured?;
        }
        Err(why) => {
            figures.skipped("docker_stdio", &why);
            figures.skipped("docker_http", &why);
            figures.skipped("docker_vindinium_server", &why);
        }
    }
    // Each container transport against the same bot as a process, and HTTP against
    // stdio too (what serving HTTP itself costs; for the original Vindinium API, what
    // being its server costs).
    for (name, process) in [
        ("docker_stdio", "process_stdio"),
        ("docker_http", "process_http"),
        ("process_http", "process_stdio"),
        ("docker_vindinium_server", "process_vindinium_server"),
        ("process_vindinium_server", "process_stdio_vindinium"),
    ] {
        let over = |quantile: &str| {
            Some(figures.get(&format!("{name}.{quantile}"))? / figures.get(&format!("{process}.{quantile}"))?)
        };
        if let (Some(p50), Some(p99)) = (over("p50_us"), over("p99_us")) {
            figures.ratio(&format!("ratios.{name}_over_{process}.p50"), p50);
            figures.ratio(&format!("ratios.{name}_over_{process}.p99"), p99);
        }
    }
    Ok(figures)
}
