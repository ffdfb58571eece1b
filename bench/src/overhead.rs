//! Fixed overhead per match: back-to-back one-turn Botwars matches between two echo
//! bots, so that nearly all of a match's time is starting and ending its bots. The
//! jobs queue for one slot through the worker's own [`Slots`], whose warm pool prepares
//! a waiting match's containers, as in the worker. Docker is measured with containers
//! reused between matches (the default: a fresh bot process in a verified-clean
//! container), with a fresh container per match, and on a cold start (an image with no
//! container prepared). Each run also reports where a bot's time goes, phase by phase
//! (the worker's own `farm_worker_sandbox_phase_seconds`), as the mean per bot.

use std::sync::Arc;
use std::time::{Duration, Instant};

use farm_engine::{GameKind, MatchSetup};
use farm_proto::{BotLaunch, BotSpec, MoveClock, Transport};
use farm_worker::bots::{ContainerIsolation, DockerSettings, LocalSandbox, Sandbox};
use farm_worker::metrics::{SANDBOX_PHASE, SandboxPhase};
use farm_worker::warm::{MatchBots, Slots};
use farm_worker::{MatchIo, RunnerOptions, StartedMatch, start_match};

use crate::bots::{self, ECHO_IMAGE};
use crate::report::Figures;

/// Matches played before measuring each Docker mode.
const WARM_UP_MATCHES: usize = 4;
/// A waiting match never gives up its room during a run.
const WARM_IDLE: Duration = Duration::from_secs(600);

/// How many matches to play.
pub struct Plan {
    /// One-turn matches between local processes.
    pub local_matches: usize,
    /// One-turn matches in Docker, in each isolation mode.
    pub docker_matches: usize,
    /// Cold starts measured (each in a sandbox with nothing prepared).
    pub cold_starts: usize,
}

/// Plays `matches` one-turn matches queued for one slot, one of them prepared for
/// while it waits (the worker's default warm pool). Returns the wall time per match
/// (the run's time divided by its matches) and each match's own time, from its slot
/// to its bots ended.
async fn per_match<S>(sandbox: S, bots: &[BotSpec], matches: usize) -> anyhow::Result<(Duration, Vec<Duration>)>
where
    S: Sandbox + Clone + Send + 'static,
{
    let ahead = 1u16;
    let slots = Arc::new(Slots::new(1, ahead, WARM_IDLE));
    let players: Vec<String> = bots.iter().map(|bot| bot.name.clone()).collect();
    let rules = serde_json::json!({ "maxTurns": 1 });
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let mut each = Vec::with_capacity(matches);
    for index in 0..matches {
        // As the worker's prefetch: a job is taken only when it can play or wait.
        if tasks.len() > usize::from(ahead)
            && let Some(joined) = tasks.join_next().await
        {
            each.push(joined??);
        }
        let (slots, sandbox, bots) = (Arc::clone(&slots), sandbox.clone(), bots.to_vec());
        let setup = MatchSetup::new(GameKind::Botwars, &rules, None, index as u64, players.clone())?;
        tasks.spawn(async move {
            let job_id = format!("bench-overhead-{index}");
            let prepare = || sandbox.prepare(&bots);
            let start = || async {
                let since = Instant::now();
                start_match(&sandbox, &job_id, None, MoveClock::default(), setup.clone(), &bots)
                    .await
                    .map(|started| Timed { started, since })
            };
            let turn =
                slots.turn(prepare, start, std::future::pending()).await.ok_or_else(|| anyhow::anyhow!("no slot"))?;
            let Timed { started, since } = turn.bots?;
            let io =
                MatchIo { replay: tokio::io::sink(), on_step: |_, _| {}, stop: std::future::pending(), live: None };
            let report = started.play(&RunnerOptions::default(), io).await?;
            drop(turn.slot);
            anyhow::ensure!(report.steps == 1, "a one-turn match played {} turns", report.steps);
            // From the slot (its bots starting) to its bots ended.
            Ok::<_, anyhow::Error>(since.elapsed())
        });
        // Queued in order, as deliveries arrive: each task is waiting before the next.
        tokio::task::yield_now().await;
    }
    while let Some(joined) = tasks.join_next().await {
        each.push(joined??);
    }
    Ok((started.elapsed() / matches as u32, each))
}

/// A match's bots, and when they began to start (its slot came).
struct Timed {
    started: StartedMatch,
    since: Instant,
}

impl MatchBots for Timed {
    fn external(&self) -> usize {
        self.started.external_bots()
    }
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
) -> anyhow::Result<(Duration, Vec<Duration>)>
where
    S: Sandbox + Clone + Send + 'static,
{
    let before = phase_totals(S::NAME);
    let time = per_match(sandbox, bots, matches).await?;
    for ((phase, sum, count), (_, sum_before, count_before)) in phase_totals(S::NAME).into_iter().zip(before) {
        if count > count_before {
            let mean = (sum - sum_before) / (count - count_before) as f64;
            figures.number(&format!("{path}.{}_ms", phase.name()), mean * 1000.0, "ms");
        }
    }
    Ok(time)
}

/// Measures local processes and, when Docker and the echo image are there, Docker
/// with reused containers, with a fresh container per match, and from cold.
pub async fn run(plan: &Plan) -> anyhow::Result<Figures> {
    let mut figures = Figures::default();
    let millis = |duration: Duration| duration.as_secs_f64() * 1000.0;
    let local = match (bots::echo_process("echo-a", Transport::Stdio), bots::echo_process("echo-b", Transport::Stdio)) {
        (Ok(a), Ok(b)) => {
            let (time, mut each) =
                per_match_with_phases(&mut figures, "phases.local", LocalSandbox, &[a, b], plan.local_matches).await?;
            figures.number("local_process.ms_per_match", millis(time), "ms");
            Some(median(&mut each))
        }
        (Err(why), _) | (_, Err(why)) => {
            figures.skipped("local_process", &why);
            None
        }
    };
    let image = |name| BotSpec::new(name, BotLaunch::Image(ECHO_IMAGE.to_owned()), Transport::Stdio);
    let pair = [image("echo-a"), image("echo-b")];
    for (path, isolation) in
        [("docker_reused", ContainerIsolation::Reused), ("docker_fresh", ContainerIsolation::FreshContainer)]
    {
        let settings = DockerSettings { isolation, ..DockerSettings::default() };
        let docker = match bots::docker(&format!("bench-overhead-{path}"), &settings).await {
            Ok(docker) => docker,
            Err(why) => {
                figures.skipped(path, &why);
                continue;
            }
        };
        // A first round, unmeasured, as a worker has played before: the figures are
        // the steady state (a cold start is measured below).
        let warm_up = per_match(docker.clone(), &pair, WARM_UP_MATCHES).await;
        if let Err(error) = warm_up {
            docker.shutdown().await?;
            return Err(error);
        }
        let phases = format!("phases.{path}");
        let played = per_match_with_phases(&mut figures, &phases, docker.clone(), &pair, plan.docker_matches).await;
        docker.shutdown().await?;
        let (time, mut each) = played?;
        figures.number(&format!("{path}.ms_per_match"), millis(time), "ms");
        let p50 = median(&mut each);
        figures.number(&format!("{path}.p50_ms"), millis(p50), "ms");
        if let Some(local) = local {
            figures.number(&format!("{path}.p50_overhead_over_process_ms"), millis(p50) - millis(local), "ms");
        }
    }
    let mut cold = Vec::with_capacity(plan.cold_starts);
    for attempt in 0..plan.cold_starts {
        let docker = match bots::docker(&format!("bench-cold-{attempt}"), &DockerSettings::default()).await {
            Ok(docker) => docker,
            Err(why) => {
                figures.skipped("docker_cold_start", &why);
                return Ok(figures);
            }
        };
        let played = per_match(docker.clone(), &pair, 1).await;
        docker.shutdown().await?;
        cold.extend(played?.1);
    }
    if !cold.is_empty() {
        let p50 = median(&mut cold);
        figures.number("docker_cold_start.p50_ms", millis(p50), "ms");
        let mut floor = Vec::with_capacity(plan.cold_starts);
        for _ in 0..plan.cold_starts {
            floor.push(engine_floor(pair.len()).await?);
        }
        figures.number("docker_cold_start.engine_floor_p50_ms", millis(median(&mut floor)), "ms");
        if let Some(local) = local {
            figures.number("docker_cold_start.p50_overhead_over_process_ms", millis(p50) - millis(local), "ms");
        }
    }
    if let (Some(local), Some(reused)) =
        (figures.get("local_process.ms_per_match"), figures.get("docker_reused.ms_per_match"))
    {
        figures.ratio("ratios.docker_reused_over_process", reused / local);
    }
    Ok(figures)
}

/// The Docker engine's own part of a cold start of `seats` container bots: creating
/// and starting as many containers of the echo image at once, with nothing of the
/// farm's (no mounts, limits or supervisor; no network), timed from the create calls
/// until the last start returns; then removed, untimed.
async fn engine_floor(seats: usize) -> anyhow::Result<Duration> {
    use bollard::query_parameters::{CreateContainerOptions, RemoveContainerOptionsBuilder, StartContainerOptions};
    let docker = bollard::Docker::connect_with_local_defaults()?;
    let body = bollard::models::ContainerCreateBody {
        image: Some(ECHO_IMAGE.to_owned()),
        network_disabled: Some(true),
        host_config: Some(bollard::models::HostConfig { network_mode: Some("none".to_owned()), ..Default::default() }),
        ..Default::default()
    };
    let started = Instant::now();
    let created = futures_util::future::join_all((0..seats).map(|_| async {
        let id = docker.create_container(None::<CreateContainerOptions>, body.clone()).await?.id;
        let start = docker.start_container(&id, None::<StartContainerOptions>).await;
        Ok::<_, bollard::errors::Error>((id, start))
    }))
    .await;
    let elapsed = started.elapsed();
    let mut first_error = None;
    for container in created {
        match container {
            Ok((id, start)) => {
                // Every container is removed, whatever failed before.
                let removed =
                    docker.remove_container(&id, Some(RemoveContainerOptionsBuilder::new().force(true).build())).await;
                if let Err(error) = start.and(removed) {
                    first_error.get_or_insert(error);
                }
            }
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    match first_error {
        Some(error) => Err(error.into()),
        None => Ok(elapsed),
    }
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}
