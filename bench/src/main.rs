//! `farm-bench`: the farm's end-to-end figures, written as one JSON report and
//! printed as a table.
//!
//! # Layout
//! - [`engine`]: turns per second of one core, per game, with built-in bots;
//! - [`roundtrip`]: per-turn round trip (p50, p99) to a bot that answers at once, per
//!   transport;
//! - [`overhead`]: fixed overhead per match: local process, Docker reused, fresh, cold;
//! - [`e2e`]: matches per second through RabbitMQ with one, two and four workers, and
//!   their peak memory (needs RabbitMQ, Docker for its Docker half);
//! - [`coordinator`]: scheduling, inserting and publishing a large round robin, and
//!   results ingested per second;
//! - [`sprt`]: the SPRT's error rates and lengths, simulated;
//! - [`live`]: what relaying matches live costs a worker: off, on and unwatched, on
//!   and watched through RabbitMQ;
//! - [`fleet`] (`farm-bench fleet`, apart from the sections): thousands of simulated
//!   workers against a real coordinator and RabbitMQ, the coordinator's curve;
//! - [`report`]: the JSON document and the table; [`bots`]: the bots they use.
//!
//! It drives the engine's, the worker's and the coordinator's libraries, and starts the
//! farm's binaries: build it in release mode beside them,
//! `cargo build --release -p farm-bench -p farm-coordinator -p farm-worker -p bench-echo-bot`.

mod bots;
mod coordinator;
mod e2e;
mod engine;
mod export;
mod fleet;
mod live;
mod overhead;
mod procfs;
mod report;
mod roundtrip;
mod sprt;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use serde_json::json;

use report::{Figures, Outcome, Report};

#[derive(Parser)]
#[command(
    name = "farm-bench",
    version,
    about = "Measures the farm: engine, bot round trips, match overhead, \
    throughput through RabbitMQ, the coordinator. Writes one JSON report and prints a table."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Where the JSON report goes.
    #[arg(long, global = true, default_value = "target/bench-report.json", value_name = "FILE")]
    out: PathBuf,
    /// A short run (seconds rather than minutes), for smoke tests: the same keys, fewer samples.
    #[arg(long, global = true)]
    quick: bool,
    /// The sections to run, comma-separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Section>,
    #[command(flatten)]
    services: e2e::Services,
}

#[derive(clap::Subcommand)]
enum Command {
    /// The coordinator's curve: fleets of simulated workers (each its own broker user and
    /// connection) against a real `farm-coordinator serve`, RabbitMQ and S3, playing a
    /// round robin, an SPRT and a ladder while page viewers poll; results per second,
    /// latency, API p99, CPU and memory per fleet size, and every job recorded once.
    Fleet(fleet::Options),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Section {
    /// Turns per second per core, per game, built-in bots.
    Engine,
    /// Per-turn round trip per transport.
    Roundtrip,
    /// Fixed overhead per match.
    Overhead,
    /// Matches per second through RabbitMQ, one, two and four workers; CPU per match by process; peak memory.
    E2e,
    /// Round-robin scheduling, publishing and result ingest.
    Coordinator,
    /// The SPRT's error rates and lengths, simulated.
    Sprt,
    /// Worker CPU per match and turn round trip with live relaying off, unwatched, watched.
    Live,
    /// A tournament's export: peak memory and time for a 100,000-match round robin.
    Export,
}

impl Section {
    const ALL: [Section; 8] = [
        Section::Engine,
        Section::Roundtrip,
        Section::Overhead,
        Section::E2e,
        Section::Coordinator,
        Section::Sprt,
        Section::Live,
        Section::Export,
    ];

    fn name(self) -> &'static str {
        match self {
            Section::Engine => "engine",
            Section::Roundtrip => "roundtrip",
            Section::Overhead => "overhead",
            Section::E2e => "e2e",
            Section::Coordinator => "coordinator",
            Section::Sprt => "sprt",
            Section::Live => "live",
            Section::Export => "export",
        }
    }
}

/// A fresh directory for one part of the run, under the system's temporary directory.
pub fn scratch_dir(part: &str) -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("farm-bench-{}", std::process::id())).join(part);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The 1, 5 and 15 minute load averages: the machine may be shared.
fn load_average() -> Vec<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).filter_map(|part| part.parse().ok()).collect())
        .unwrap_or_default()
}

async fn run_section(section: Section, cli: &Cli) -> anyhow::Result<Figures> {
    let quick = cli.quick;
    match section {
        Section::Engine => {
            let budget = Duration::from_millis(if quick { 300 } else { 3000 });
            // A runtime of its own on a thread of its own: one core, nothing else on it.
            std::thread::spawn(move || engine::run(budget))
                .join()
                .map_err(|_| anyhow::anyhow!("the engine section panicked"))?
        }
        Section::Roundtrip => roundtrip::run(if quick { 200 } else { 5000 }).await,
        Section::Overhead => {
            let plan = if quick {
                overhead::Plan { local_matches: 5, docker_matches: 5, cold_starts: 2 }
            } else {
                overhead::Plan { local_matches: 40, docker_matches: 40, cold_starts: 5 }
            };
            overhead::run(&plan).await
        }
        Section::E2e => {
            let plan = if quick {
                e2e::Plan { bots: 3, games: 1, turns: 20 }
            } else {
                e2e::Plan { bots: 5, games: 6, turns: 20 }
            };
            e2e::run(&cli.services, &plan).await
        }
        Section::Coordinator => {
            let dir = scratch_dir("coordinator")?;
            let figures = coordinator::run(if quick { 100 } else { 1000 }, &dir).await;
            std::fs::remove_dir_all(&dir)?;
            figures
        }
        Section::Sprt => sprt::run(if quick { 20 } else { 4000 }),
        Section::Export => {
            let dir = scratch_dir("export")?;
            // 317 bots: 100,172 ordered pairs.
            let figures = export::run(if quick { 30 } else { 317 }, &dir).await;
            std::fs::remove_dir_all(&dir)?;
            figures
        }
        Section::Live => {
            let plan = if quick {
                live::Plan { rounds: 1, matches: 2, turns: 200 }
            } else {
                live::Plan { rounds: 10, matches: 5, turns: 1000 }
            };
            live::run(&cli.services, &plan).await
        }
    }
}

fn write_report(path: &Path, report: &Report) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(&report.to_json())? + "\n")?;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // lapin logs a channel closed under a drain as an error: noise here.
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,lapin=off")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let sections = match (&cli.command, cli.only.is_empty()) {
        (Some(Command::Fleet(_)), _) => Vec::new(),
        (None, true) => Section::ALL.to_vec(),
        (None, false) => cli.only.clone(),
    };
    let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let load_before = load_average();
    let mut outcomes = Vec::new();
    let mut failed = false;
    for section in sections {
        eprintln!("farm-bench: {} ...", section.name());
        let outcome = match run_section(section, &cli).await {
            Ok(figures) => Outcome::Ran(figures),
            Err(error) => {
                failed = true;
                eprintln!("farm-bench: {} failed: {error:#}", section.name());
                Outcome::Skipped(format!("failed: {error:#}"))
            }
        };
        outcomes.push((section.name(), outcome));
    }
    if let Some(Command::Fleet(options)) = &cli.command {
        eprintln!("farm-bench: fleet ...");
        let outcome = match fleet::run(&cli.services, options, cli.quick).await {
            Ok((figures, errors)) => {
                failed |= !errors.is_empty();
                Outcome::Ran(figures)
            }
            Err(error) => {
                failed = true;
                eprintln!("farm-bench: fleet failed: {error:#}");
                Outcome::Skipped(format!("failed: {error:#}"))
            }
        };
        outcomes.push(("fleet", outcome));
    }
    let header = json!({
        "started_at": started,
        "quick": cli.quick,
        "cores": std::thread::available_parallelism().map_or(1, usize::from),
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
    });
    let report = Report { header, sections: outcomes };
    print!("{}", report.table());
    if let Err(error) = write_report(&cli.out, &report) {
        eprintln!("farm-bench: writing {}: {error:#}", cli.out.display());
        return ExitCode::from(2);
    }
    eprintln!("farm-bench: report written to {}", cli.out.display());
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("farm-bench-{}", std::process::id())));
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
