//! Fixed overhead per match: back-to-back one-turn Botwars matches between two echo
//! bots, so that nearly all of a match's time is starting and ending its bots. The
//! jobs queue for one slot through the worker's own [`Slots`], with the warm pool off
//! (every match starts its bots when its slot comes) or on (the next match's bots
//! start while the current one plays and ends). A one-turn match leaves the pool
//! nothing to hide start-up behind, so Docker is also measured on longer matches,
//! where it can: the time the pool saves per match is the difference. Each run also
//! reports where a bot's time goes, phase by phase (the worker's own
//! `farm_worker_sandbox_phase_seconds`), as the mean per bot.

use std::sync::Arc;
use std::time::{Duration, Instant};

use farm_engine::{GameKind, MatchSetup};
use farm_proto::{BotLaunch, BotSpec, Transport};
use farm_worker::bots::{LocalSandbox, Sandbox};
use farm_worker::metrics::{SANDBOX_PHASE, SandboxPhase};
use farm_worker::warm::Slots;
use farm_worker::{MatchIo, RunnerOptions, start_match};

use crate::bots::{self, ECHO_IMAGE};
use crate::report::Figures;

/// Warm bots never idle out during a run.
const WARM_IDLE: Duration = Duration::from_secs(600);

/// How many matches to play, and how long the longer ones are.
pub struct Plan {
    /// One-turn matches between local processes.
    pub local_matches: usize,
    /// One-turn matches in Docker, without and with the pool.
    pub docker_matches: usize,
    /// Turns of the longer Docker matches.
    pub long_turns: u32,
    /// Longer Docker matches, without and with the pool.
    pub long_matches: usize,
}

/// Plays `matches` matches of `turns` turns queued for one slot, the bots of up to
/// `ahead` of them started while they wait; returns the mean wall time per match.
/// Jobs are taken as the worker takes deliveries: one per slot plus `ahead`.
async fn per_match<S>(sandbox: S, bots: &[BotSpec], matches: usize, turns: u32, ahead: u16) -> anyhow::Result<Duration>
where
    S: Sandbox + Clone + Send + 'static,
{
    let slots = Arc::new(Slots::new(1, ahead, WARM_IDLE));
    let players: Vec<String> = bots.iter().map(|bot| bot.name.clone()).collect();
    let rules = serde_json::json!({ "maxTurns": turns });
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..matches {
        // As the worker's prefetch: a job is taken only when it can play or wait warm.
        if tasks.len() > usize::from(ahead)
            && let Some(joined) = tasks.join_next().await
        {
            joined??;
        }
        let (slots, sandbox, bots) = (Arc::clone(&slots), sandbox.clone(), bots.to_vec());
        let setup = MatchSetup::new(GameKind::Botwars, &rules, None, index as u64, players.clone())?;
        tasks.spawn(async move {
            let job_id = format!("bench-overhead-{index}");
            let start = || start_match(&sandbox, &job_id, setup.clone(), &bots);
            let turn = slots.turn(start, std::future::pending()).await.ok_or_else(|| anyhow::anyhow!("no slot"))?;
            let io = MatchIo { replay: tokio::io::sink(), on_step: |_, _| {}, stop: std::future::pending() };
            let report = turn.bots?.play(&RunnerOptions::default(), io).await?;
            drop(turn.slot);
            anyhow::ensure!(report.steps == u64::from(turns), "a {turns}-turn match played {} turns", report.steps);
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

/// The sum and count of every phase's histogram for `sandbox`, to subtract.
fn phase_totals(sandbox: &str) -> Vec<(SandboxPhase, f64, u64)> {
    SandboxPhase::ALL
        .into_iter()
        .map(|phase| {
            let histogram = SANDBOX_PHASE.with_label_values(&[sandbox, phase.name()]);
            (phase, histogram.get_sample_sum(), histogram.get_sample_count())
        })
        .collect()
}

/// Plays as [`per_match`] does and reports, under `path`, the mean time per bot of
/// each phase its sandbox went through in that run.
async fn per_match_with_phases<S>(
    figures: &mut Figures,
    path: &str,
    sandbox: S,
    bots: &[BotSpec],
    matches: usize,
    turns: u32,
    ahead: u16,
) -> anyhow::Result<Duration>
where
    S: Sandbox + Clone + Send + 'static,
{
    let before = phase_totals(S::NAME);
    let time = per_match(sandbox, bots, matches, turns, ahead).await?;
    for ((phase, sum, count), (_, sum_before, count_before)) in phase_totals(S::NAME).into_iter().zip(before) {
        if count > count_before {
            let mean = (sum - sum_before) / (count - count_before) as f64;
            figures.number(&format!("{path}.{}_ms", phase.name()), mean * 1000.0, "ms");
        }
    }
    Ok(time)
}

/// Measures local processes and, when Docker and the echo image are there, Docker
/// without and with the warm pool.
pub async fn run(plan: &Plan) -> anyhow::Result<Figures> {
    let mut figures = Figures::default();
    let millis = |duration: Duration| duration.as_secs_f64() * 1000.0;
    match (bots::echo_process("echo-a"), bots::echo_process("echo-b")) {
        (Ok(a), Ok(b)) => {
            let time =
                per_match_with_phases(&mut figures, "phases.local", LocalSandbox, &[a, b], plan.local_matches, 1, 0)
                    .await?;
            figures.number("local_process.ms_per_match", millis(time), "ms");
        }
        (Err(why), _) | (_, Err(why)) => figures.skipped("local_process", &why),
    }
    let docker = match bots::docker("bench-overhead").await {
        Ok(docker) => docker,
        Err(why) => {
            for part in ["docker_cold", "docker_warm_pool", "long_matches"] {
                figures.skipped(part, &why);
            }
            return Ok(figures);
        }
    };
    let image = |name| bots::spec(name, BotLaunch::Image(ECHO_IMAGE.to_owned()), Transport::Stdio);
    let pair = [image("echo-a"), image("echo-b")];
    let cold =
        per_match_with_phases(&mut figures, "phases.docker_cold", docker.clone(), &pair, plan.docker_matches, 1, 0)
            .await?;
    figures.number("docker_cold.ms_per_match", millis(cold), "ms");
    let warm = per_match_with_phases(
        &mut figures,
        "phases.docker_warm_pool",
        docker.clone(),
        &pair,
        plan.docker_matches,
        1,
        1,
    )
    .await?;
    figures.number("docker_warm_pool.ms_per_match", millis(warm), "ms");
    figures.ratio("ratios.warm_over_cold", warm.as_secs_f64() / cold.as_secs_f64());
    if let Some(local) = figures.get("local_process.ms_per_match") {
        figures.ratio("ratios.docker_cold_over_process", millis(cold) / local);
    }
    let long_cold = per_match(docker.clone(), &pair, plan.long_matches, plan.long_turns, 0).await?;
    let long_warm = per_match(docker, &pair, plan.long_matches, plan.long_turns, 1).await?;
    figures.put("long_matches.turns", plan.long_turns, plan.long_turns.to_string());
    figures.number("long_matches.docker_cold_ms_per_match", millis(long_cold), "ms");
    figures.number("long_matches.docker_warm_pool_ms_per_match", millis(long_warm), "ms");
    figures.number("long_matches.pool_saves_ms_per_match", millis(long_cold) - millis(long_warm), "ms");
    figures.ratio("ratios.long_warm_over_cold", long_warm.as_secs_f64() / long_cold.as_secs_f64());
    Ok(figures)
}
