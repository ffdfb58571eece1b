//! Fixed overhead per match: back-to-back one-turn Botwars matches between two echo
//! bots, so that nearly all of a match's time is starting and ending its bots. The
//! jobs queue for one slot through the worker's own [`Slots`], with the warm pool off
//! (every match starts its bots when its slot comes) or on (the next match's bots
//! start while the current one plays and ends).

use std::sync::Arc;
use std::time::{Duration, Instant};

use farm_engine::{GameKind, MatchSetup};
use farm_proto::{BotLaunch, BotSpec, Transport};
use farm_worker::bots::{LocalSandbox, Sandbox};
use farm_worker::warm::Slots;
use farm_worker::{MatchIo, RunnerOptions, start_match};

use crate::bots::{self, ECHO_IMAGE};
use crate::report::Figures;

/// Warm bots never idle out during a run.
const WARM_IDLE: Duration = Duration::from_secs(600);

/// Plays `matches` one-turn matches queued for one slot, the bots of up to `ahead`
/// of them started while they wait; returns the mean wall time per match.
async fn per_match<S>(sandbox: S, bots: Vec<BotSpec>, matches: usize, ahead: u16) -> anyhow::Result<Duration>
where
    S: Sandbox + Clone + Send + 'static,
{
    let slots = Arc::new(Slots::new(1, ahead, WARM_IDLE));
    let players: Vec<String> = bots.iter().map(|bot| bot.name.clone()).collect();
    let rules = serde_json::json!({ "maxTurns": 1 });
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..matches {
        let (slots, sandbox, bots) = (Arc::clone(&slots), sandbox.clone(), bots.clone());
        let setup = MatchSetup::new(GameKind::Botwars, &rules, None, index as u64, players.clone())?;
        tasks.spawn(async move {
            let job_id = format!("bench-overhead-{index}");
            let start = || start_match(&sandbox, &job_id, setup.clone(), &bots);
            let turn = slots.turn(start, std::future::pending()).await.ok_or_else(|| anyhow::anyhow!("no slot"))?;
            let io = MatchIo { replay: tokio::io::sink(), on_step: |_, _| {}, stop: std::future::pending() };
            let report = turn.bots?.play(&RunnerOptions::default(), io).await?;
            drop(turn.slot);
            anyhow::ensure!(report.steps == 1, "a one-turn match played {} turns", report.steps);
            Ok(())
        });
        // Queued in order, as deliveries arrive: each task is waiting before the next.
        tokio::task::yield_now().await;
    }
    while let Some(joined) = tasks.join_next().await {
        joined??;
    }
    Ok(started.elapsed() / matches as u32)
}

/// Measures local processes and, when Docker and the echo image are there, Docker
/// without and with the warm pool.
pub async fn run(local_matches: usize, docker_matches: usize) -> anyhow::Result<Figures> {
    let mut figures = Figures::default();
    let millis = |duration: Duration| duration.as_secs_f64() * 1000.0;
    match (bots::echo_process("echo-a"), bots::echo_process("echo-b")) {
        (Ok(a), Ok(b)) => {
            let time = per_match(LocalSandbox, vec![a, b], local_matches, 0).await?;
            figures.number("local_process.ms_per_match", millis(time), "ms");
        }
        (Err(why), _) | (_, Err(why)) => figures.skipped("local_process", &why),
    }
    match bots::docker("bench-overhead").await {
        Ok(docker) => {
            let image = |name| bots::spec(name, BotLaunch::Image(ECHO_IMAGE.to_owned()), Transport::Stdio);
            let pair = vec![image("echo-a"), image("echo-b")];
            let cold = per_match(docker.clone(), pair.clone(), docker_matches, 0).await?;
            figures.number("docker_cold.ms_per_match", millis(cold), "ms");
            let warm = per_match(docker, pair, docker_matches, 1).await?;
            figures.number("docker_warm_pool.ms_per_match", millis(warm), "ms");
            figures.ratio("ratios.warm_over_cold", warm.as_secs_f64() / cold.as_secs_f64());
            if let Some(local) = figures.get("local_process.ms_per_match") {
                figures.ratio("ratios.docker_cold_over_process", millis(cold) / local);
            }
        }
        Err(why) => {
            figures.skipped("docker_cold", &why);
            figures.skipped("docker_warm_pool", &why);
        }
    }
    Ok(figures)
}
