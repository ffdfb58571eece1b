//! `farm-worker`: plays matches between bots.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use farm_engine::{GameKind, MatchSetup, replay};
use farm_proto::{BotSpec, ClockKind, MoveClock};
use farm_runtime::config::{Overrides, StorageArgs};
use farm_runtime::storage::Storage;
use farm_worker::bots::{DockerSandbox, DockerSettings, IsolatedSandbox, LocalSandbox};
use farm_worker::reproduce;
use farm_worker::runner::RunnerArgs;
use farm_worker::{MatchIo, MatchReport, SandboxKind, WarmPool, WorkerConfig, fill_seats, play_match};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Parser)]
#[command(name = "farm-worker", version, about = "Plays matches between game-playing bots.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the worker service: play match jobs from RabbitMQ.
    ///
    /// Replays and bot logs go to object storage, results to farm.results. Options
    /// come from defaults, then --config, then FARM_* environment variables
    /// (FARM_SLOTS, FARM_STORAGE__KIND=s3, ...), then these flags. Ctrl-C or SIGTERM
    /// drains (matches in flight finish); a second signal stops them and requeues
    /// their jobs.
    Serve(ServeArgs),
    /// Play one match on this machine and write its replay, logs and result.
    ///
    /// Example: farm-worker play --game vindinium --map maps/vindinium/m1.txt --seed 7
    ///   --bot builtin:greedy --bot 'cmd:python3 bots/vindinium/random_bot.py'
    Play(PlayArgs),
    /// Play a finished match again with the very bots it had, and say whether its
    /// replay is identical.
    ///
    /// Through the coordinator's API the job is the one its ledger scheduled; the
    /// worker's reproduction bundle gives only the image id each container bot ran,
    /// which plays whatever its tag names now. A result file gives the whole bundle.
    /// A match with `command` bots (run on this machine, outside any container) is
    /// refused unless --trust-commands. Exit status: 0 identical, 1 different, 2 the
    /// match cannot be played again (an image is gone, or an untrusted command).
    ///
    /// Example: farm-worker reproduce j-0123abcd --api http://127.0.0.1:8000
    ///          farm-worker reproduce --result farm-out/botwars-seed7/result.json
    Reproduce(ReproduceArgs),
    /// Build a bot's image from its source directory, as the farm builds its authors'
    /// submissions: the source checked (at most 2,000 entries and 64 MiB; no path or
    /// link out of it), compiled in a sandbox by the farm's toolchain image for its
    /// layout (no network, read-only root, user 10001, pids, memory and CPU limits, a
    /// 2 GiB scratch space, 600 s), and its image assembled by the farm from the
    /// compiled artifact, tagged matchfarm-bots/NAME:DIGEST by the source's content.
    /// Prints the tag; the build's log goes to stderr.
    ///
    /// The layouts, the first whose marker the source has: python (bot.py), javascript
    /// (bot.js), rust (Cargo.toml), go (go.mod), c-cpp (CMakeLists.txt or Makefile),
    /// java (src/**/*.java). An author's Dockerfile is a file like any other.
    ///
    /// Example: farm-worker build bots/botwars/layouts/go --name my-bot, then use
    ///   image = "matchfarm-bots/my-bot:..." in a tournament file.
    Build {
        /// The source directory.
        dir: PathBuf,
        /// The bot's name (lower-case letters, digits, '-', '_').
        #[arg(long)]
        name: String,
        /// The OCI runtime the compile runs under, as the Docker engine names it (runsc
        /// for gVisor). Default: the engine's own.
        #[arg(long, value_name = "RUNTIME")]
        docker_runtime: Option<String>,
    },
    /// Work with replay files.
    Replay {
        #[command(subcommand)]
        command: ReplayCommand,
    },
    /// Work with map files.
    Map {
        #[command(subcommand)]
        command: MapCommand,
    },
    /// Print every limit on what a tournament's author or a bot can make the farm
    /// spend: its key, default, range, who sets it and what happens past it, as the
    /// Markdown table of the book's Limits page.
    Limits,
}

#[derive(clap::Args)]
struct PlayArgs {
    /// The game: vindinium, botwars, ostibot or maze.
    #[arg(long)]
    game: GameKind,
    /// A map file (Vindinium: maps/vindinium/*.txt; Ostibot: maps/ostibot/*.txt). Without
    /// it, Vindinium generates a map from the seed and Ostibot plays maps/ostibot/classic-2.txt.
    /// Maze: maps/maze/*.txt; without it, the maze is generated from the seed.
    #[arg(long)]
    map: Option<PathBuf>,
    /// The match seed, for the rules and the map; each bot gets a seed of its own
    /// derived from it (FARM_SEED). Random if not given (and printed).
    #[arg(long)]
    seed: Option<u64>,
    /// A bot, once per seat in seat order: builtin:NAME (vindinium: random, greedy;
    /// botwars: random, gatherer; ostibot: random, raider; maze: random, greedy), cmd:COMMAND (run with
    /// sh -c, speaking the game's stdio protocol; local or isolated sandbox) or image:NAME (a
    /// Docker image; docker sandbox). cmd+http: and image+http: bots serve POST / on $FARM_PORT
    /// instead (+http-form: bodies as data=<json>); cmd+http only in the local sandbox.
    /// cmd+vindinium-server: and image+vindinium-server: bots are clients of the original
    /// Vindinium server's API, at $FARM_VINDINIUM_SERVER with the key $FARM_VINDINIUM_KEY
    /// (the starter kits: 'cmd+vindinium-server:python3 client.py $FARM_VINDINIUM_KEY arena 1
    /// $FARM_VINDINIUM_SERVER'). Missing Vindinium seats are filled with builtin:random.
    #[arg(long = "bot", required = true, value_name = "BOT")]
    bots: Vec<BotSpec>,
    /// Where cmd: and image: bots run: local processes (every process they start ends
    /// with the match), isolated local processes (bubblewrap: no network, the host
    /// read-only, an unprivileged user, cgroup limits), or one locked-down Docker
    /// container per bot (no network, memory, CPU and pids limits, read-only root).
    #[arg(long, value_enum, default_value_t = SandboxKind::Local)]
    sandbox: SandboxKind,
    /// With --sandbox docker: the OCI runtime the containers run under, as the Docker
    /// engine names it (runsc for gVisor). Default: the engine's own.
    #[arg(long, value_name = "RUNTIME")]
    docker_runtime: Option<String>,
    /// With --sandbox docker: the farm's image registry (HOST:PORT); bots named by
    /// digest there (image:HOST:PORT/REPO@sha256:...) are pulled if the engine lacks them.
    #[arg(long, value_name = "HOST:PORT")]
    registry: Option<String>,
    /// With --registry: the user to sign in to it as; the password is read from
    /// FARM_DOCKER__REGISTRY_PASSWORD.
    #[arg(long, value_name = "USER", env = "FARM_DOCKER__REGISTRY_USER", requires = "registry")]
    registry_user: Option<String>,
    /// A named rules preset of the game (Ostibot: Default, SemiFinal, Final),
    /// applied before --rules.
    #[arg(long, value_name = "NAME")]
    preset: Option<String>,
    /// Rules overrides as a JSON object, e.g. '{"maxTurns":400}'.
    #[arg(long, value_name = "JSON")]
    rules: Option<String>,
    /// Where to write replay.jsonl, result.json and each seat's stderr log.
    /// Default: farm-out/GAME-seedSEED.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    runner: RunnerArgs,
    #[command(flatten)]
    clock: ClockArgs,
    /// Bytes of each bot's stderr to keep.
    #[arg(long, default_value_t = 64 * 1024, value_name = "BYTES")]
    stderr_cap: usize,
}

#[derive(clap::Args)]
struct ReproduceArgs {
    /// The match's job id, looked up through the coordinator's API (--api).
    #[arg(required_unless_present = "result", conflicts_with = "result")]
    job: Option<String>,
    /// The coordinator's API.
    #[arg(long, env = "FARM_API", default_value = "http://127.0.0.1:8000")]
    api: String,
    /// A result document instead of the API: a stored result, the API's match
    /// detail, or `farm-worker play`'s result.json.
    #[arg(long, value_name = "FILE")]
    result: Option<PathBuf>,
    /// Where to write the new replay. Default: farm-out/reproduce-JOB.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The OCI runtime container bots run in (for example runsc).
    #[arg(long, value_name = "NAME")]
    docker_runtime: Option<String>,
    /// Run the match's `command` bots: programs started on this machine as your user,
    /// outside any container, whose command lines a tournament's author wrote. Without
    /// it a match with one is refused.
    #[arg(long)]
    trust_commands: bool,
    #[command(flatten)]
    runner: RunnerArgs,
}

/// How the match times its bots' moves (a tournament's `clock`, `time_bank_ms`,
/// `wall_backstop` and `ponder`).
#[derive(clap::Args)]
struct ClockArgs {
    /// The clock a move's budget is counted on: wall (time to the reply) or cpu (the
    /// CPU time the bot uses meanwhile, the same on a busy machine).
    #[arg(long = "clock", value_enum, default_value = "wall")]
    kind: ClockChoice,
    /// Milliseconds each bot may spend beyond its moves' budgets over the match.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    time_bank_ms: u64,
    /// With --clock cpu, how many times its budget a move may take on the wall clock.
    #[arg(long, default_value_t = farm_proto::limits::WALL_BACKSTOP.default, value_name = "TIMES")]
    wall_backstop: u32,
    /// Let bots run between their turns (by default they are frozen until asked).
    #[arg(long)]
    ponder: bool,
}

/// [`ClockKind`] on the command line.
#[derive(Clone, Copy, clap::ValueEnum)]
enum ClockChoice {
    Wall,
    Cpu,
}

impl ClockArgs {
    fn clock(&self) -> Result<MoveClock> {
        let kind = match self.kind {
            ClockChoice::Wall => ClockKind::Wall,
            ClockChoice::Cpu => ClockKind::Cpu,
        };
        let clock =
            MoveClock { kind, time_bank_ms: self.time_bank_ms, wall_backstop: self.wall_backstop, ponder: self.ponder };
        clock.check().context("the match's clock")?;
        Ok(clock)
    }
}

#[derive(clap::Args)]
struct ServeArgs {
    /// A TOML configuration file (see deploy/worker.toml).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Names this worker in results and container labels [default: the host name].
    #[arg(long)]
    worker_id: Option<String>,
    /// Matches played at once [default: 1].
    #[arg(long)]
    slots: Option<u16>,
    /// Matches whose bots are started ahead while the slots are busy, so that a
    /// queued match begins without waiting for its containers: on (one per slot),
    /// off, or a number. The worker takes this many jobs beyond its slots from
    /// RabbitMQ; one not begun when it stops is requeued [default: on].
    #[arg(long, value_name = "on|off|N")]
    warm_pool: Option<WarmPool>,
    /// Seconds bots started ahead may wait for their match before they are ended
    /// (they start again with it) [default: 120].
    #[arg(long, value_name = "SECS")]
    warm_idle_secs: Option<u64>,
    /// Where external bots run [default: docker].
    #[arg(long, value_enum)]
    sandbox: Option<SandboxKind>,
    /// RabbitMQ URL [default: amqp://guest:guest@127.0.0.1:5672/%2f].
    #[arg(long, value_name = "URL")]
    amqp_url: Option<String>,
    /// Redeliveries of one job before it is dead-lettered: it is tried at most this
    /// many times plus one [default: 5].
    #[arg(long)]
    delivery_limit: Option<u32>,
    /// Address of /metrics and /healthz [default: 127.0.0.1:9464].
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<String>,
    /// Extra time for each bot's first reply [default: 5000].
    #[arg(long, value_name = "MS")]
    startup_grace_ms: Option<u64>,
    /// Seconds matches in flight may take to finish on shutdown [default: 60].
    #[arg(long, value_name = "SECS")]
    drain_secs: Option<u64>,
    /// The longest a match may take, whatever its rules allow [default: 1200].
    #[arg(long, value_name = "SECS")]
    max_match_secs: Option<u64>,
    /// The most a match's replay may hold of its bots' replies (and, apart, of the
    /// game's own states), uncompressed; a bot whose reply would take the replies
    /// further is out of the match (status output_limit) [default: 256].
    #[arg(long, value_name = "MIB")]
    max_replay_mib: Option<u64>,
    #[command(flatten)]
    storage: StorageArgs,
}

impl ServeArgs {
    /// The flags that were given, as configuration keys.
    fn overrides(&self) -> Overrides {
        let mut overrides = self.storage.overrides();
        overrides
            .set("worker_id", self.worker_id.as_ref())
            .set("slots", self.slots)
            .set("warm_pool", self.warm_pool)
            .set("warm_idle_secs", self.warm_idle_secs)
            .set("sandbox", self.sandbox.map(|v| format!("{v:?}").to_lowercase()))
            .set("amqp_url", self.amqp_url.as_ref())
            .set("delivery_limit", self.delivery_limit)
            .set("metrics_listen", self.metrics_listen.as_ref())
            .set("startup_grace_ms", self.startup_grace_ms)
            .set("drain_secs", self.drain_secs)
            .set("max_match_secs", self.max_match_secs)
            .set("max_replay_mib", self.max_replay_mib);
        overrides
    }
}

#[derive(Subcommand)]
enum ReplayCommand {
    /// Re-simulate a replay from its header and recorded replies and check that every
    /// line comes out identical. Exits 1 if it differs.
    Verify {
        /// The replay file (replay.jsonl).
        file: PathBuf,
    },
}

#[derive(Subcommand)]
enum MapCommand {
    /// Generate a map with a game's generator (Vindinium: the original's; Maze: the
    /// seeded maze a match with this seed plays when given no map).
    Generate {
        /// The game.
        #[arg(long, default_value = "vindinium")]
        game: GameKind,
        /// The map seed.
        #[arg(long)]
        seed: u64,
        /// Write the map here instead of printing it.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        // RUST_LOG, or by default the worker's own progress and everyone's warnings.
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,farm_worker=info,farm_runtime=info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match Cli::parse().command {
        Command::Serve(args) => serve(args).await,
        Command::Play(args) => play(args).await,
        Command::Reproduce(args) => reproduce(args).await,
        Command::Build { dir, name, docker_runtime } => build(&dir, &name, docker_runtime).await,
        Command::Replay { command: ReplayCommand::Verify { file } } => verify(&file),
        Command::Map { command: MapCommand::Generate { game, seed, out } } => generate_map(game, seed, out.as_deref()),
        Command::Limits => {
            print!("{}", farm_proto::limits::markdown());
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", farm_runtime::error::chain_text(error.as_ref()));
            ExitCode::from(2)
        }
    }
}

async fn serve(args: ServeArgs) -> Result<ExitCode> {
    let mut config = WorkerConfig::load(args.config.as_deref(), std::env::vars(), args.overrides().pairs())?;
    farm_worker::identity::sign_in(&mut config)?;
    farm_worker::service::check_identity(&config)?;
    let storage = Storage::open(&config.storage)?;
    let (trigger, shutdown) = farm_runtime::shutdown_channel();
    trigger.on_signals().context("installing signal handlers")?;
    match config.sandbox {
        SandboxKind::Local => farm_worker::run(config, LocalSandbox, storage, shutdown).await?,
        SandboxKind::Isolated => {
            let isolated = IsolatedSandbox::new().map_err(anyhow::Error::msg).context("the isolated sandbox")?;
            farm_worker::run(config, isolated, storage, shutdown).await?
        }
        SandboxKind::Docker => {
            let docker =
                DockerSandbox::connect(&config.worker_id, &config.docker).await.context("the Docker sandbox")?;
            let reaped = docker.reap_orphans().await.context("removing containers of dead workers")?;
            if reaped > 0 {
                tracing::warn!(reaped, "removed bot containers left by workers whose heartbeat stopped");
            }
            farm_worker::run(config, docker.clone(), storage, shutdown).await?;
            // Every match has ended: the prepared containers go, and whatever a failed
            // removal left.
            match docker.shutdown().await {
                Ok(0) => {}
                Ok(left) => tracing::info!(left, "removed the worker's bot containers at shutdown"),
                Err(error) => tracing::warn!(%error, "removing bot containers at shutdown"),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn play(args: PlayArgs) -> Result<ExitCode> {
    if args.docker_runtime.is_some() && args.sandbox != SandboxKind::Docker {
        anyhow::bail!("--docker-runtime goes with --sandbox docker: only containers have an OCI runtime");
    }
    if args.registry.is_some() && args.sandbox != SandboxKind::Docker {
        anyhow::bail!("--registry goes with --sandbox docker: only images are pulled");
    }
    let seed = args.seed.unwrap_or_else(clock_seed);
    let map = match &args.map {
        Some(path) => Some(std::fs::read_to_string(path).with_context(|| format!("reading map {}", path.display()))?),
        None => None,
    };
    let overrides = match &args.rules {
        Some(text) => match serde_json::from_str(text).context("--rules is not JSON")? {
            serde_json::Value::Object(given) => given,
            _ => anyhow::bail!("--rules must be a JSON object"),
        },
        None => serde_json::Map::new(),
    };
    let rules = farm_engine::AnyGame::overrides(args.game, args.preset.as_deref(), overrides)?;
    let given = args.bots.len();
    let mut bots = fill_seats(args.game, args.bots.clone());
    for bot in &mut bots {
        bot.limits.stderr_bytes = args.stderr_cap;
    }
    if bots.len() > given {
        eprintln!("{} seats filled with {}", bots.len() - given, bots[given].launch);
    }
    let players = bots.iter().map(|bot| bot.name.clone()).collect();
    let setup = MatchSetup::new(args.game, &rules, map.clone(), seed, players)?;
    let clock = args.clock.clock()?;

    let out = args.out.unwrap_or_else(|| PathBuf::from(format!("farm-out/{}-seed{seed}", args.game)));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let replay_path = out.join("replay.jsonl");
    let replay_file =
        tokio::fs::File::create(&replay_path).await.with_context(|| format!("creating {}", replay_path.display()))?;

    let options = args.runner.options();
    let progress = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} steps {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    progress.set_prefix(format!("{} seed {seed}", args.game));
    let on_step = |steps, limit| {
        progress.set_length(limit);
        progress.set_position(steps);
    };
    let job_id = format!("play-{}", std::process::id());
    // Ctrl-C stops the match; its bots are still ended and their containers removed.
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let io = MatchIo { replay: replay_file, on_step, stop, live: None };
    let report = match args.sandbox {
        SandboxKind::Local => play_match(&LocalSandbox, &job_id, setup, clock, &bots, &options, io).await?,
        SandboxKind::Isolated => {
            let isolated = IsolatedSandbox::new().map_err(anyhow::Error::msg).context("the isolated sandbox")?;
            play_match(&isolated, &job_id, setup, clock, &bots, &options, io).await?
        }
        SandboxKind::Docker => {
            let settings = DockerSettings {
                runtime: args.docker_runtime.clone(),
                registry: args.registry.clone(),
                registry_user: args.registry_user.clone(),
                registry_password: std::env::var("FARM_DOCKER__REGISTRY_PASSWORD").ok(),
                ..DockerSettings::default()
            };
            let docker = DockerSandbox::connect(&job_id, &settings).await.context("the Docker sandbox")?;
            let report = play_match(&docker, &job_id, setup, clock, &bots, &options, io).await;
            docker.shutdown().await.context("removing the match's containers")?;
            report?
        }
    };
    progress.finish_and_clear();

    for seat in &report.seats {
        let path = out.join(format!("seat-{}.stderr.log", seat.seat));
        std::fs::write(&path, &seat.log.bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    // The result with its reproduction bundle: `farm-worker reproduce --result` plays
    // it again.
    let job = farm_proto::MatchJob {
        job_id,
        tournament_id: "play".to_owned(),
        game: args.game,
        rules,
        map,
        seed,
        bots: bots[..given].to_vec(),
        isolation: None,
        clock,
    };
    let mut result = serde_json::to_value(&report)?;
    result["reproduction"] = serde_json::to_value(report.reproduction(&job))?;
    let result_path = out.join("result.json");
    std::fs::write(&result_path, serde_json::to_vec_pretty(&result)?)
        .with_context(|| format!("writing {}", result_path.display()))?;
    print_report(&report, &replay_path);
    Ok(ExitCode::SUCCESS)
}

async fn reproduce(args: ReproduceArgs) -> Result<ExitCode> {
    let recorded = match (&args.result, &args.job) {
        (Some(path), _) => reproduce::read_document(path)?,
        (None, Some(job)) => reproduce::Recorded::from_api(&args.api, job).await?,
        (None, None) => anyhow::bail!("name the match (its job id) or give --result FILE"),
    };
    let bundle = &recorded.reproduction;
    let job = recorded.given_job();
    println!(
        "reproducing {}: {} seed {}, {} bots, played by {}{}",
        job.job_id,
        job.game,
        job.seed,
        job.bots.len(),
        bundle.engine,
        if bundle.engine == farm_engine::engine_version() { "" } else { " (this worker has another engine)" }
    );
    let commands = if args.trust_commands { reproduce::CommandBots::Trusted } else { reproduce::CommandBots::Refused };
    if let Err(error) = recorded.check_commands(commands) {
        eprintln!("cannot reproduce: {error}");
        return Ok(ExitCode::from(2));
    }
    if recorded.departs_from_schedule() {
        println!("the worker's bundle names another job than the ledger scheduled: the ledger's is played");
    }
    let out = args.out.unwrap_or_else(|| PathBuf::from(format!("farm-out/reproduce-{}", job.job_id)));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let replay_path = out.join("replay.jsonl");
    let replay_file =
        tokio::fs::File::create(&replay_path).await.with_context(|| format!("creating {}", replay_path.display()))?;
    let reproduced =
        match reproduce::reproduce(&recorded, args.docker_runtime, commands, &args.runner.options(), replay_file).await
        {
            Ok(reproduced) => reproduced,
            Err(error @ reproduce::ReproduceError::ImageGone { .. }) => {
                eprintln!("cannot reproduce: {error}");
                return Ok(ExitCode::from(2));
            }
            Err(error) => return Err(error.into()),
        };
    for (seat, image_id) in bundle.images.iter().enumerate() {
        if let Some(image_id) = image_id {
            println!("seat {seat}: ran image {image_id}, as recorded");
        }
    }
    for (seat, tag, now) in &reproduced.moved_tags {
        let now = now.as_deref().unwrap_or("nothing");
        println!("seat {seat}: {tag} now names {now}; the recorded image was played, not that");
    }
    if reproduced.is_identical(&recorded) {
        println!(
            "identical: the replay's play has sha256 {}, as recorded ({})",
            recorded.replay_sha256,
            replay_path.display()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "DIFFERENT: recorded sha256 {}, reproduced {} ({})",
            recorded.replay_sha256,
            reproduced.report.replay_sha256,
            replay_path.display()
        );
        Ok(ExitCode::from(1))
    }
}

async fn build(dir: &Path, name: &str, runtime: Option<String>) -> Result<ExitCode> {
    anyhow::ensure!(
        farm_proto::is_bot_name(name),
        "--name {name:?}: 1 to {} of a-z, 0-9, '-' and '_', starting with a letter or digit",
        farm_proto::MAX_BOT_NAME
    );
    let limits = farm_worker::build::BuildLimits::default();
    let source = farm_worker::build::Source::read_dir(dir, limits.source)
        .with_context(|| format!("the source in {}", dir.display()))?;
    eprintln!("building {name} ({} layout) from {}", source.layout().name, dir.display());
    let docker = bollard::Docker::connect_with_local_defaults()?.negotiate_version().await?;
    let engine = farm_worker::build::BuildEngine::connect(docker, runtime).await?;
    let mut log = farm_worker::build::BuildLog::default();
    let built = farm_worker::build::build(&engine, &source, name, limits, &mut log).await;
    eprint!("{}", log.0);
    let built = built?;
    eprintln!("built {} ({}, {} MiB)", built.tag, built.image_id, built.size >> 20);
    println!("{}", built.tag);
    Ok(ExitCode::SUCCESS)
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

fn print_report(report: &MatchReport, replay_path: &Path) {
    println!(
        "{} seed {}: {} steps in {:.1} s",
        report.game,
        report.seed,
        report.steps,
        report.elapsed_ms as f64 / 1000.0
    );
    let name_width = report.seats.iter().map(|seat| seat.name.len()).max().unwrap_or(0).max(3);
    println!(
        "{:>4}  {:<name_width$}  {:<12}  {:>7}  {:>4}  {:>8}  {:>8}  {:>8}  {:>8}  {:>8}  {:>8}",
        "seat", "bot", "status", "score", "rank", "requests", "timeouts", "mean ms", "p99 ms", "max ms", "cpu p99"
    );
    for seat in &report.seats {
        let status = serde_json::to_value(seat.outcome.status).ok();
        println!(
            "{:>4}  {:<name_width$}  {:<12}  {:>7}  {:>4}  {:>8}  {:>8}  {:>8.2}  {:>8.2}  {:>8.2}  {:>8}",
            seat.seat,
            seat.name,
            status.as_ref().and_then(|s| s.as_str()).unwrap_or("?"),
            seat.outcome.score,
            seat.outcome.rank,
            seat.requests,
            seat.timeouts,
            seat.reply.mean_ms,
            seat.reply.p99_ms,
            seat.reply.max_ms,
            seat.cpu.map_or("-".to_owned(), |cpu| format!("{:.2}", cpu.p99_ms)),
        );
    }
    println!("replay: {} (sha256 {})", replay_path.display(), report.replay_sha256);
}

fn verify(path: &Path) -> Result<ExitCode> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let lines: Vec<String> = BufReader::new(file)
        .lines()
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("reading {}", path.display()))?;
    let check = replay::verify(&lines).with_context(|| format!("{} is not a readable replay", path.display()))?;
    if let Some(line) = check.first_difference {
        println!("{}: DIFFERS from the re-simulation at line {line} ({} frames)", path.display(), check.frames);
        return Ok(ExitCode::from(1));
    }
    let ranks: Vec<String> = check.outcome.iter().map(|p| format!("{}/{}", p.score, p.rank)).collect();
    println!(
        "{}: OK, {} frames re-simulated identically (sha256 {}; score/rank {})",
        path.display(),
        check.frames,
        check.sha256,
        ranks.join(" ")
    );
    Ok(ExitCode::SUCCESS)
}

fn generate_map(game: GameKind, seed: u64, out: Option<&Path>) -> Result<ExitCode> {
    let map = farm_engine::AnyGame::default_map(game, &serde_json::Value::Null, seed)?
        .with_context(|| format!("{game} has no maps"))?;
    match out {
        Some(path) => std::fs::write(path, &map).with_context(|| format!("writing {}", path.display()))?,
        None => print!("{map}"),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// clap checks a command line's definition only when it is used: this checks every
    /// subcommand's (clashing argument ids, bad defaults) without running them.
    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
