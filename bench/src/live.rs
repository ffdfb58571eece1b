//! What relaying matches live costs a worker: back-to-back Botwars matches between two
//! echo bots (local processes, answering at once), played three ways in turn, round
//! after round, so that a drift of the shared machine falls on all three alike:
//!
//! - `off`: live relaying off (`live_buffer_mib = 0`);
//! - `unwatched`: on, nobody watching: each line kept for a late viewer, nothing sent
//!   (the worker's default);
//! - `watched`: on and watched, every line published through RabbitMQ to `farm.live`,
//!   into a queue bound for the match (as the coordinator's), which nobody reads.
//!
//! For each: the worker's CPU time per match (this process's: the bots are processes
//! of their own), counted until a watched match's relay has sent its last line, and
//! the round trip per turn (the match's own wall time over its turns).

use std::sync::Arc;
use std::time::{Duration, Instant};

use farm_engine::{GameKind, MatchSetup};
use farm_proto::{LIVE_EXCHANGE, MoveClock, Transport, WatchedMatch};
use farm_worker::bots::LocalSandbox;
use farm_worker::live::{BrokerOutlet, FrameOutlet, LiveBoard};
use farm_worker::metrics::LIVE_RELAYS;
use farm_worker::{MatchIo, RunnerOptions, start_match};
use lapin::options::{QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Connection, ConnectionProperties};
use nix::time::{ClockId, clock_gettime};

use crate::bots;
use crate::e2e::{Services, Vhost};
use crate::report::Figures;

/// How much to play.
pub struct Plan {
    /// Rounds, each playing every mode.
    pub rounds: usize,
    /// Matches of each mode in a round.
    pub matches: usize,
    /// Turns of each match.
    pub turns: u64,
}

/// How a match's lines are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    Unwatched,
    Watched,
}

impl Mode {
    const ALL: [Mode; 3] = [Mode::Off, Mode::Unwatched, Mode::Watched];

    fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Unwatched => "unwatched",
            Mode::Watched => "watched",
        }
    }
}

/// What one mode took, summed over its matches.
#[derive(Debug, Default, Clone, Copy)]
struct Spent {
    cpu: Duration,
    wall: Duration,
    matches: u32,
    turns: u64,
}

/// This process's CPU time so far, every thread's, the ones gone too.
fn process_cpu() -> anyhow::Result<Duration> {
    Ok(Duration::from(clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID)?))
}

/// Plays the plan and reports each mode; without RabbitMQ, `watched` is skipped.
pub async fn run(services: &Services, plan: &Plan) -> anyhow::Result<Figures> {
    let mut figures = Figures::default();
    let echo = |name: &str| bots::echo_process(name, Transport::Stdio);
    let (red, blue) = match (echo("red"), echo("blue")) {
        (Ok(red), Ok(blue)) => (red, blue),
        (Err(why), _) | (_, Err(why)) => {
            for mode in Mode::ALL {
                figures.skipped(mode.name(), &why);
            }
            return Ok(figures);
        }
    };
    let bots = [red, blue];
    let broker = match services.amqp() {
        Some((amqp_url, management)) => {
            let mut vhost =
                Vhost::create(amqp_url, management, format!("farm-bench-live-{}", std::process::id())).await?;
            let prepared = watched_outlet(&mut vhost).await;
            Some((vhost, prepared))
        }
        None => None,
    };
    let on = LiveBoard::new(farm_proto::limits::WORKER_LIVE_BUFFER_MIB.default);
    let mut modes = vec![Mode::Off, Mode::Unwatched];
    match &broker {
        Some((_, Ok((outlet, _)))) => {
            on.connect(Some(Arc::clone(outlet)));
            modes.push(Mode::Watched);
        }
        Some((_, Err(error))) => figures.skipped(Mode::Watched.name(), &format!("RabbitMQ: {error}")),
        None => figures.skipped(Mode::Watched.name(), "RabbitMQ is not configured (FARM_TEST_AMQP_URL)"),
    }
    let mut spent = [Spent::default(); 3];
    let rules = serde_json::json!({ "maxTurns": plan.turns });
    let options = RunnerOptions::default();
    for round in 0..plan.rounds {
        for &mode in &modes {
            for index in 0..plan.matches {
                let job_id = format!("bench-live-{}", mode.name());
                let seed = (round * plan.matches + index) as u64;
                let players = bots.iter().map(|bot| bot.name.clone()).collect();
                let setup = MatchSetup::new(GameKind::Botwars, &rules, None, seed, players)?;
                let started = start_match(&LocalSandbox, &job_id, None, MoveClock::default(), setup, &bots).await?;
                if mode == Mode::Watched {
                    on.watch(&[WatchedMatch { job_id: job_id.clone(), from: 0 }]);
                }
                let cpu = process_cpu()?;
                let wall = Instant::now();
                let play = (mode != Mode::Off).then(|| on.open(&job_id, "", 1)).flatten();
                let io = MatchIo {
                    replay: tokio::io::sink(),
                    on_step: |_, _| {},
                    stop: std::future::pending(),
                    live: play.as_ref().map(|play| play.tap()),
                };
                let report = started.play(&options, io).await?;
                let played = wall.elapsed();
                drop(play);
                // The relay's work is the match's: it is counted once the relay is done.
                while LIVE_RELAYS.get() > 0 {
                    tokio::time::sleep(Duration::from_micros(200)).await;
                }
                let total = &mut spent[Mode::ALL.iter().position(|&each| each == mode).expect("a mode")];
                total.wall += played;
                total.cpu += process_cpu()? - cpu;
                total.matches += 1;
                total.turns += report.steps;
            }
        }
    }
    for (mode, total) in Mode::ALL.iter().zip(spent) {
        if total.matches == 0 {
            continue;
        }
        let name = mode.name();
        let cpu_ms = total.cpu.as_secs_f64() * 1000.0 / f64::from(total.matches);
        let turn_us = total.wall.as_secs_f64() * 1e6 / total.turns as f64;
        figures.number(&format!("{name}.worker_cpu_per_match_ms"), cpu_ms, "ms");
        figures.number(&format!("{name}.turn_round_trip_us"), turn_us, "µs");
    }
    let off = spent[0];
    for (index, mode) in [(1, Mode::Unwatched), (2, Mode::Watched)] {
        let other = spent[index];
        if other.matches > 0 && off.matches > 0 {
            let per_match = |spent: Spent, of: fn(&Spent) -> f64| of(&spent) / f64::from(spent.matches);
            let cpu = per_match(other, |s| s.cpu.as_secs_f64()) / per_match(off, |s| s.cpu.as_secs_f64());
            let turn = (other.wall.as_secs_f64() / other.turns as f64) / (off.wall.as_secs_f64() / off.turns as f64);
            figures.ratio(&format!("{}_vs_off.worker_cpu", mode.name()), cpu);
            figures.ratio(&format!("{}_vs_off.turn_round_trip", mode.name()), turn);
        }
    }
    if let Some((vhost, prepared)) = broker {
        // The worker's connection goes before its user does.
        drop(prepared);
        vhost.delete().await;
    }
    Ok(figures)
}

/// A worker's broker outlet on `vhost`, signed in as a worker of its own, and its
/// connection. The watched matches' messages go to a queue bound for them, as the
/// coordinator's is (this one durable and kept to a thousand messages, the oldest
/// dropped), which nobody reads: the broker's work, not a reader's.
async fn watched_outlet(vhost: &mut Vhost) -> anyhow::Result<(Arc<dyn FrameOutlet>, Connection)> {
    let admin = Connection::connect(&vhost.url, ConnectionProperties::default()).await?;
    let channel = admin.create_channel().await?;
    farm_runtime::queue::declare_topology(&channel, farm_proto::limits::DELIVERY_LIMIT.default).await?;
    let mut arguments = FieldTable::default();
    arguments.insert("x-max-length".into(), AMQPValue::LongLongInt(1000));
    let queue = format!("{LIVE_EXCHANGE}.bench");
    channel.queue_declare(queue.as_str().into(), QueueDeclareOptions::default(), arguments).await?;
    let job = format!("bench-live-{}", Mode::Watched.name());
    let bind = QueueBindOptions::default();
    channel
        .queue_bind(queue.as_str().into(), LIVE_EXCHANGE.into(), job.as_str().into(), bind, FieldTable::default())
        .await?;
    let worker = "bench-live-worker";
    let url = vhost.worker_url(worker).await?;
    let connection = Connection::connect(&url, ConnectionProperties::default()).await?;
    let outlet: Arc<dyn FrameOutlet> = Arc::new(BrokerOutlet::open(&connection, worker).await?);
    // The worker's connection lives as long as its outlet's channel is used; the
    // admin's only declared.
    drop(admin);
    Ok((outlet, connection))
}
