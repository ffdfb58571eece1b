//! `farm-coordinator`: tournaments between game-playing bots.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use farm_coordinator::api::NewBot;
use farm_coordinator::client::{Client, percent_encode};
use farm_coordinator::director::FormatStatus;
use farm_coordinator::embedded::{self, RunEnd, RunOptions};
use farm_coordinator::ledger::{BotView, DeliveryView, Progress, UserView, VersionState, VersionView, WebhookView};
use farm_coordinator::standings::Standings;
use farm_coordinator::tournament::{BotEntry, TournamentFile, TournamentLimits};
use farm_coordinator::view::{View, ViewError};
use farm_coordinator::worker_identities::Management;
use farm_coordinator::{CoordinatorConfig, serve};
use farm_proto::{BotLimits, Transport};
use farm_runtime::config::StorageArgs;
use farm_worker::SandboxKind;
use farm_worker::runner::RunnerArgs;
use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

#[derive(Parser)]
#[command(name = "farm-coordinator", version, about = "Runs tournaments between game-playing bots.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a tournament file on this machine, start to finish: no RabbitMQ, no Docker
    /// (unless --sandbox docker), results under --data.
    ///
    /// Example: farm-coordinator run tournaments/botwars.toml
    ///
    /// Running the same file again shows its standings without playing anything;
    /// an interrupted run (Ctrl-C) resumes where it stopped. With --web ADDR, the web
    /// pages show it live in a browser while it plays.
    Run(RunArgs),
    /// Serve the web pages and the API over a `run`'s data directory, read-only (no
    /// broker; submissions are refused), until Ctrl-C.
    ///
    /// Example: farm-coordinator view --data farm-data, then open http://127.0.0.1:8000/
    ///
    /// It prints `listening on http://ADDRESS` on stdout (with port 0, the port chosen).
    /// A run playing in the same directory meanwhile shows live.
    View(ViewArgs),
    /// Run the coordinator service: the HTTP API, job publishing to RabbitMQ and
    /// result ingest.
    ///
    /// Options come from defaults, then --config, then FARM_* environment variables
    /// (FARM_API_TOKEN, FARM_STORAGE__KIND=s3, ...), then these flags. Ctrl-C or
    /// SIGTERM stops it; unfinished tournaments resume when it starts again.
    Serve(ServeArgs),
    /// Send a tournament file to a coordinator (map files are read here and sent).
    Submit {
        /// The tournament file (TOML).
        file: PathBuf,
        /// Among your own tournaments, higher is published first (-100 to 100). Other
        /// users' tournaments are not affected: the farm is shared among users by their
        /// shares whatever the priorities.
        #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
        priority: i32,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Manage users and their tokens (admins; a user may make and revoke their own
    /// tokens).
    ///
    /// Example: farm-coordinator users add ada --share 2 (prints ada's first token once)
    #[command(subcommand)]
    Users(UsersCommand),
    /// Who the token is, their share, what they have going and their quotas.
    Whoami {
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Register webhooks: the coordinator posts your tournaments' events to them,
    /// signed with a secret printed once (header X-Matchfarm-Signature: t=UNIX,v1=HEX,
    /// the HMAC-SHA256 of "UNIX.BODY"), retried with backoff until answered 2xx.
    #[command(subcommand)]
    Webhooks(WebhooksCommand),
    /// Show a tournament's progress, live, until it finishes.
    Status {
        /// The tournament id (as `submit` printed it).
        id: String,
        /// Print the progress once and exit.
        #[arg(long)]
        once: bool,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Publish a tournament's jobs again: those published and still unanswered (a job
    /// lost on the way is played; a late answer to the first publication still counts,
    /// the first result wins), and with --failed its failed jobs too, which start over
    /// (their failed results are removed).
    ///
    /// Example: farm-coordinator retry t-44876f57cc4d05c5 --failed
    Retry {
        /// The tournament id.
        id: String,
        /// Retry its failed jobs as well.
        #[arg(long)]
        failed: bool,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// End a tournament now: its matches not yet handed to workers are cancelled; those
    /// being played finish and count. Works for any format; a ladder ends only so.
    ///
    /// Example: farm-coordinator stop t-44876f57cc4d05c5
    Stop {
        /// The tournament id.
        id: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Submit your bots' sources (built and validated by the farm), see their versions,
    /// and change a running ladder's bots.
    #[command(subcommand)]
    Bots(BotsCommand),
    /// Issue and revoke workers' identities (operators): each worker signs in to
    /// RabbitMQ as a user of its own, which is who the coordinator believes its
    /// answers are from. Talks to RabbitMQ's management API as its administrator.
    ///
    /// Example: FARM_RABBITMQ_ADMIN_USER=admin FARM_RABBITMQ_ADMIN_PASSWORD=... \
    /// farm-coordinator workers add gpu-box-1 (prints its password once; the worker
    /// runs with worker_id = gpu-box-1 and amqp_url = amqp://gpu-box-1:PASSWORD@HOST/VHOST)
    #[command(subcommand)]
    Workers(WorkersCommand),
    /// Print a tournament's standings.
    Standings {
        /// The tournament id.
        id: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        #[command(flatten)]
        api: ApiArgs,
    },
}

#[derive(Subcommand)]
enum BotsCommand {
    /// Add a bot to a ladder while it runs: the next matches start including it. With
    /// --replaces, it is that bot's new version: the old one retires, and the new one
    /// starts from its rating with a wider uncertainty.
    ///
    /// Examples: farm-coordinator bots add t-44876f57cc4d05c5 --name greedy2 --builtin greedy;
    /// farm-coordinator bots add t-44876f57cc4d05c5 --from bot.toml --replaces greedy
    Add {
        /// The ladder's id.
        id: String,
        /// A TOML file with the bot's keys, as one [[bots]] entry of a tournament file
        /// (name, builtin or command and image, transport, limits, args).
        #[arg(long, value_name = "FILE", conflicts_with_all = ["name", "builtin", "command", "image"])]
        from: Option<PathBuf>,
        /// The bot's name.
        #[arg(long, required_unless_present = "from")]
        name: Option<String>,
        /// A bot compiled into the engine.
        #[arg(long)]
        builtin: Option<String>,
        /// How to run it as a local process.
        #[arg(long)]
        command: Option<String>,
        /// Its Docker image.
        #[arg(long)]
        image: Option<String>,
        /// The bot it replaces, which retires.
        #[arg(long, value_name = "BOT")]
        replaces: Option<String>,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Retire a ladder's bot: it is scheduled no more; its matches not yet handed to
    /// workers are cancelled. It stays in the standings.
    Retire {
        /// The ladder's id.
        id: String,
        /// The bot's name.
        name: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Upload a bot's source as its next version: a worker compiles it in a sandbox (no
    /// network, the farm's toolchain image for its layout), the farm assembles its image,
    /// it plays validation matches against the game's built-in bots, and once validated
    /// it enters --ladder, replacing its previous version there.
    ///
    /// DIR is in one of the layouts, the first whose marker it has: python (bot.py;
    /// optional wheels/*.whl), javascript (bot.js; optional node_modules/), rust
    /// (Cargo.toml; dependencies vendored), go (go.mod; optional vendor/), c-cpp
    /// (CMakeLists.txt with a target bot, or a Makefile that makes ./bot), java
    /// (src/**/*.java; optional Main-Class file). It is checked here and again by the
    /// farm: at most 2000 entries and 64 MiB, no links out of it.
    ///
    /// Example: farm-coordinator bots submit ./my-bot --name ada-bot --game botwars --ladder t-44876f57cc4d05c5 --wait
    Submit {
        /// The source directory.
        dir: PathBuf,
        /// The bot's name (a-z, 0-9, '-', '_'): new, or one of yours.
        #[arg(long)]
        name: String,
        /// Its game: vindinium, botwars, ostibot or maze.
        #[arg(long)]
        game: String,
        /// The ladder it enters once validated.
        #[arg(long, value_name = "ID")]
        ladder: Option<String>,
        /// Wait until the version is validated, rejected or its build fails (exit code 1
        /// unless validated).
        #[arg(long)]
        wait: bool,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Show a submitted bot's versions: state, image, validation, why one failed.
    Show {
        /// The bot's name.
        name: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Challenge another bot to a short series: your bot's newest validated version
    /// against theirs, in both seats; prints the series' tournament id (watch it with
    /// `status`, `standings`).
    ///
    /// Example: farm-coordinator bots challenge ada-bot bob-bot --games 4
    Challenge {
        /// Your bot.
        bot: String,
        /// The bot you challenge.
        opponent: String,
        /// Matches to play (default 4; at most quotas.max_challenge_games).
        #[arg(long)]
        games: Option<u32>,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Print a version's build log.
    Log {
        /// The bot's name.
        name: String,
        /// The version.
        version: u32,
        #[command(flatten)]
        api: ApiArgs,
    },
}

#[derive(Subcommand)]
enum WorkersCommand {
    /// Make a worker's RabbitMQ user, with the workers' rights; prints its password,
    /// which is shown only this once.
    Add {
        /// Its name, which is its worker_id: lower-case letters, digits, '-', '_', '.'.
        name: String,
        #[command(flatten)]
        broker: ManagementArgs,
    },
    /// List the workers' users and their open connections.
    List {
        #[command(flatten)]
        broker: ManagementArgs,
    },
    /// Revoke a worker: its user is deleted, which closes its connections, so nothing
    /// more it sends is believed and it cannot sign in again.
    Revoke {
        /// Its name.
        name: String,
        #[command(flatten)]
        broker: ManagementArgs,
    },
}

/// Where RabbitMQ's management API is, and its administrator (from the environment,
/// never the command line, where `ps` shows it).
#[derive(clap::Args)]
struct ManagementArgs {
    /// The management API's URL.
    #[arg(long, env = "FARM_RABBITMQ_MANAGEMENT", default_value = "http://127.0.0.1:15672")]
    management: String,
    /// The farm's virtual host.
    #[arg(long, env = "FARM_RABBITMQ_VHOST", default_value = "/")]
    vhost: String,
    /// The administrator's user name.
    #[arg(long, env = "FARM_RABBITMQ_ADMIN_USER", hide_env_values = true)]
    admin_user: String,
    /// The administrator's password: from FARM_RABBITMQ_ADMIN_PASSWORD only.
    #[arg(skip = std::env::var("FARM_RABBITMQ_ADMIN_PASSWORD").unwrap_or_default())]
    admin_password: String,
}

impl ManagementArgs {
    fn management(&self) -> anyhow::Result<Management> {
        anyhow::ensure!(
            !self.admin_password.is_empty(),
            "set FARM_RABBITMQ_ADMIN_PASSWORD to the password of RabbitMQ's administrator {:?}",
            self.admin_user
        );
        Ok(Management::new(&self.management, &self.admin_user, &self.admin_password, &self.vhost))
    }
}

#[derive(Subcommand)]
enum UsersCommand {
    /// Make a user; prints their first token, which is shown only this once.
    Add {
        /// Their name: lower-case letters, digits, '-' and '_'.
        name: String,
        /// They may change everything, and have no quotas.
        #[arg(long)]
        admin: bool,
        /// Their weight when the workers are shared among users (1 to 1000).
        #[arg(long, default_value_t = 1)]
        share: u32,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// List the users, their shares and their tokens (ids only).
    List {
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Set a user's share of the workers.
    Share {
        /// The user.
        name: String,
        /// Their weight (1 to 1000).
        share: u32,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Make another token for a user (yourself, or anyone for admins); printed once.
    Token {
        /// The user.
        name: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Revoke a token by its id (as `users list` shows it): it works no more.
    Revoke {
        /// The token's id.
        token_id: String,
        #[command(flatten)]
        api: ApiArgs,
    },
}

#[derive(Subcommand)]
enum WebhooksCommand {
    /// Register URL; prints the webhook's id, and the secret its deliveries are signed
    /// with, shown only this once.
    ///
    /// Example: farm-coordinator webhooks add https://ci.example.org/hooks/farm --event tournament.concluded
    Add {
        /// Where to post (http or https).
        url: String,
        /// An event kind to send: tournament.finished, tournament.concluded (repeatable;
        /// default: all).
        #[arg(long = "event", value_name = "KIND")]
        events: Vec<String>,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// List your webhooks.
    List {
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Remove a webhook; its deliveries not yet made are cancelled.
    Remove {
        /// The webhook's id.
        id: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Show a webhook's deliveries, newest first: state, attempts, last outcome.
    Deliveries {
        /// The webhook's id.
        id: String,
        #[command(flatten)]
        api: ApiArgs,
    },
}

#[derive(clap::Args)]
struct ApiArgs {
    /// The coordinator's URL.
    #[arg(long, env = "FARM_URL", default_value = "http://127.0.0.1:8000")]
    url: String,
    /// A bearer token: the operator's, or a user's (needed by every change).
    #[arg(long, env = "FARM_API_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// Aligned columns.
    Table,
    /// The API's JSON document.
    Json,
    /// One line per bot.
    Csv,
}

#[derive(clap::Args)]
struct RunArgs {
    /// The tournament file (TOML).
    file: PathBuf,
    /// Where bots run: local processes (each bot's `command`; `local` contains their
    /// processes, `isolated` also shuts them in namespaces of their own: no network,
    /// the host read-only, an unprivileged user) or Docker containers (each bot's
    /// `image`).
    #[arg(long, value_enum, default_value_t = SandboxKind::Local)]
    sandbox: SandboxKind,
    /// With --sandbox docker: the OCI runtime of the bots' containers, as the Docker
    /// engine names it (runsc for gVisor: scripts/setup-gvisor). Default: the engine's own.
    #[arg(long, value_name = "RUNTIME")]
    docker_runtime: Option<String>,
    /// Matches played at once (default: one per core).
    #[arg(long)]
    workers: Option<usize>,
    /// Where the ledger and replays go.
    #[arg(long, value_name = "DIR", default_value = "farm-data")]
    data: PathBuf,
    /// How to print the final standings.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    runner: RunnerArgs,
    /// Tries of a match that fails for infrastructure reasons, beyond the first.
    #[arg(long, default_value_t = farm_runtime::queue::DEFAULT_DELIVERY_LIMIT)]
    retries: u32,
    /// Serve the web pages and the API (read-only) at this address while the run plays,
    /// e.g. 127.0.0.1:8000 (port 0: any free port); the URL is printed on stderr. They
    /// stop when the run ends, unless --keep-serving (`view` serves them again later).
    #[arg(long, value_name = "ADDR")]
    web: Option<String>,
    /// With --web: go on serving after the run has finished, until Ctrl-C.
    #[arg(long, requires = "web")]
    keep_serving: bool,
    /// The most jobs the tournament may plan (fixtures x maps x games_per_pairing);
    /// a bigger one is refused before anything is scheduled.
    #[arg(long, value_name = "JOBS", default_value_t = TournamentLimits::default().max_jobs)]
    max_tournament_jobs: u64,
}

#[derive(clap::Args)]
struct ViewArgs {
    /// The data directory a `run` wrote (its --data).
    #[arg(long, value_name = "DIR", default_value = "farm-data")]
    data: PathBuf,
    /// The address to serve on; port 0 picks a free one. The default is the address
    /// the other commands' --url defaults to.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8000")]
    listen: String,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// A TOML configuration file (see deploy/coordinator.toml).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Address of the API, /metrics and /healthz.
    #[arg(long)]
    listen: Option<String>,
    /// The RabbitMQ URL.
    #[arg(long)]
    amqp_url: Option<String>,
    /// The SQLite ledger file.
    #[arg(long, value_name = "FILE")]
    ledger: Option<PathBuf>,
    /// Whether workers run bots from their image (docker) or their command (local).
    #[arg(long, value_enum)]
    bot_launch: Option<SandboxKind>,
    /// Redeliveries of a job before it is dead-lettered (as the workers').
    #[arg(long)]
    delivery_limit: Option<u32>,
    /// The most jobs queued or playing at once; the rest wait in the ledger.
    #[arg(long)]
    max_outstanding: Option<u64>,
    /// Where the workers store replays and logs (the API streams them from there).
    #[command(flatten)]
    storage: StorageArgs,
}

impl ServeArgs {
    fn overrides(&self) -> Vec<(&'static str, String)> {
        let mut overrides = Vec::new();
        let mut set = |key, value: Option<String>| {
            if let Some(value) = value {
                overrides.push((key, value));
            }
        };
        set("listen", self.listen.clone());
        set("amqp_url", self.amqp_url.clone());
        set("ledger_path", self.ledger.as_ref().map(|path| path.display().to_string()));
        set("bot_launch", self.bot_launch.map(|mode| format!("{mode:?}").to_lowercase()));
        set("delivery_limit", self.delivery_limit.map(|limit| limit.to_string()));
        set("max_outstanding", self.max_outstanding.map(|limit| limit.to_string()));
        overrides.extend(self.storage.overrides());
        overrides
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,farm_coordinator=info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match Cli::parse().command {
        Command::Run(args) => run(args).await,
        Command::View(args) => view(args).await,
        Command::Serve(args) => serve_command(args).await,
        Command::Submit { file, priority, api } => submit(&file, priority, &api).await,
        Command::Users(command) => users(command).await,
        Command::Whoami { api } => whoami(&api).await,
        Command::Webhooks(command) => webhooks(command).await,
        Command::Status { id, once, api } => status(&id, once, &api).await,
        Command::Standings { id, format, api } => standings(&id, format, &api).await,
        Command::Retry { id, failed, api } => retry(&id, failed, &api).await,
        Command::Stop { id, api } => stop(&id, &api).await,
        Command::Bots(command) => bots(command).await,
        Command::Workers(command) => workers(command).await,
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", farm_runtime::error::chain_text(error.as_ref()));
            ExitCode::from(2)
        }
    }
}

fn print_standings(standings: &Standings, format: Format) -> Result<()> {
    match format {
        Format::Table => print!("{}", standings.table()),
        Format::Json => println!("{}", serde_json::to_string_pretty(standings)?),
        Format::Csv => print!("{}", standings.csv()),
    }
    Ok(())
}

fn progress_bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} matches {msg} {elapsed} (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(500));
    bar
}

fn show(bar: &ProgressBar, progress: &Progress) {
    bar.set_length(progress.total);
    bar.set_position(progress.done + progress.failed + progress.cancelled);
    bar.set_message(if progress.failed > 0 { format!("({} failed)", progress.failed) } else { String::new() });
}

async fn run(args: RunArgs) -> Result<ExitCode> {
    if args.docker_runtime.is_some() && args.sandbox != SandboxKind::Docker {
        anyhow::bail!("--docker-runtime goes with --sandbox docker: only containers have an OCI runtime");
    }
    let file = TournamentFile::read(&args.file)?;
    let limits = TournamentLimits { max_jobs: args.max_tournament_jobs };
    let tournament = file.resolve(Some(args.file.parent().unwrap_or(Path::new("."))), limits)?;
    let workers = args.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    if args.sandbox == SandboxKind::Local {
        warn_of_foreign_bots(&tournament);
    }
    let (trigger, shutdown) = farm_runtime::shutdown_channel();
    trigger.on_signals().context("installing signal handlers")?;
    let web = match &args.web {
        Some(address) => Some(serve_in_background(&args.data, address).await?),
        None => None,
    };
    let mut after_the_run = shutdown.clone();
    let bar = progress_bar(0);
    bar.set_prefix(format!("{} ({})", tournament.name, tournament.id));
    let options = RunOptions {
        data_dir: args.data.clone(),
        workers,
        sandbox: args.sandbox,
        docker_runtime: args.docker_runtime.clone(),
        delivery_limit: args.retries,
        runner: args.runner.options(),
    };
    let report = embedded::run(tournament, options, shutdown, |progress| show(&bar, &progress)).await?;
    bar.finish_and_clear();
    let progress = report.standings.progress;
    match report.end {
        RunEnd::Finished => eprintln!(
            "{}: {} matches played ({} failed); replays and logs in {}",
            report.standings.tournament_id,
            progress.total,
            progress.failed,
            embedded::objects_path(&args.data).display()
        ),
        RunEnd::AlreadyFinished => eprintln!(
            "{} was already played in {} (delete it, or give another --data, to play it again)",
            report.standings.tournament_id,
            args.data.display()
        ),
        RunEnd::Interrupted => eprintln!(
            "interrupted with {}/{} matches played: run the same command again to resume",
            progress.done + progress.failed,
            progress.total
        ),
    }
    print_standings(&report.standings, args.format)?;
    for line in report.status.iter().flat_map(FormatStatus::lines).filter(|line| !line.is_empty()) {
        eprintln!("{line}");
    }
    if let Some(conclusion) = &report.conclusion {
        eprintln!("ended: {conclusion}");
    }
    if let Some(web) = web {
        if args.keep_serving && report.end != RunEnd::Interrupted {
            eprintln!("still serving {}: Ctrl-C stops", web.url);
            after_the_run.drained().await;
        }
        web.stop().await?;
    }
    Ok(if report.end == RunEnd::Interrupted { ExitCode::from(130) } else { ExitCode::SUCCESS })
}

/// Warns once when local bots run code from outside this directory (the farm's
/// checkout): somebody else's bot, which `--sandbox isolated` or `docker` should hold.
/// A command word is taken for a file when it has a `/` and exists; system programs
/// (under `/usr` or `/bin`, the interpreters) are not the bot's own code.
fn warn_of_foreign_bots(tournament: &farm_coordinator::tournament::Tournament) {
    let Ok(here) = std::env::current_dir().and_then(|dir| dir.canonicalize()) else { return };
    let foreign: Vec<String> = tournament
        .bots
        .iter()
        .filter_map(|bot| {
            let command = bot.command.as_deref().filter(|_| bot.builtin.is_none())?;
            command
                .split_whitespace()
                .filter(|word| word.contains('/'))
                .filter_map(|word| here.join(word).canonicalize().ok())
                .find(|path| !path.starts_with(&here) && !path.starts_with("/usr") && !path.starts_with("/bin"))
                .map(|path| format!("{} ({})", bot.name, path.display()))
        })
        .collect();
    if !foreign.is_empty() {
        eprintln!(
            "warning: {} run{} code from outside {} with no isolation: it can read and change anything you can. \
             Use --sandbox isolated (or docker) for bots you did not write.",
            foreign.join(", "),
            if foreign.len() == 1 { "s" } else { "" },
            here.display()
        );
    }
}

/// `run --web`: the read-only pages and API on a task of their own.
struct BackgroundView {
    url: String,
    stop: oneshot::Sender<()>,
    serving: JoinHandle<Result<(), ViewError>>,
}

async fn serve_in_background(data: &Path, address: &str) -> Result<BackgroundView> {
    let view = View::bind(data, address).await?;
    let url = format!("http://{}/", view.address()?);
    eprintln!("watch the run at {url}");
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(view.serve(async move {
        let _ = stopped.await;
    }));
    Ok(BackgroundView { url, stop, serving })
}

impl BackgroundView {
    async fn stop(self) -> Result<()> {
        let _ = self.stop.send(());
        self.serving.await.context("the web server's task")??;
        Ok(())
    }
}

async fn view(args: ViewArgs) -> Result<ExitCode> {
    let ledger = embedded::ledger_path(&args.data);
    anyhow::ensure!(
        ledger.is_file(),
        "{} has no ledger: play a tournament there first (farm-coordinator run FILE --data {})",
        args.data.display(),
        args.data.display()
    );
    let (trigger, mut shutdown) = farm_runtime::shutdown_channel();
    trigger.on_signals().context("installing signal handlers")?;
    let view = View::bind(&args.data, &args.listen).await?;
    println!("listening on http://{}", view.address()?);
    eprintln!("serving {} read-only; Ctrl-C stops", args.data.display());
    view.serve(async move { shutdown.drained().await }).await?;
    Ok(ExitCode::SUCCESS)
}

async fn serve_command(args: ServeArgs) -> Result<ExitCode> {
    let config = CoordinatorConfig::load(args.config.as_deref(), std::env::vars(), &args.overrides())?;
    let (trigger, shutdown) = farm_runtime::shutdown_channel();
    trigger.on_signals().context("installing signal handlers")?;
    serve(config, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}

async fn submit(file: &Path, priority: i32, api: &ApiArgs) -> Result<ExitCode> {
    let client = Client::new(&api.url, api.token.clone())?;
    let submitted = client.submit_with_priority(file, priority).await?;
    if submitted.created {
        eprintln!("submitted: {} jobs", submitted.jobs);
    } else {
        eprintln!("already submitted ({} jobs): nothing new was created", submitted.jobs);
    }
    println!("{}", submitted.id);
    Ok(ExitCode::SUCCESS)
}

#[derive(serde::Deserialize)]
struct TournamentView {
    name: String,
    progress: Progress,
    #[serde(default)]
    status: Option<FormatStatus>,
    #[serde(default)]
    conclusion: Option<String>,
}

impl TournamentView {
    /// The format's state and how it ended, a line each.
    fn lines(&self) -> Vec<String> {
        let mut lines = self.status.as_ref().map(FormatStatus::lines).unwrap_or_default();
        lines.extend(self.conclusion.as_ref().map(|conclusion| format!("ended: {conclusion}")));
        lines.retain(|line| !line.is_empty());
        lines
    }
}

async fn status(id: &str, once: bool, api: &ApiArgs) -> Result<ExitCode> {
    let client = Client::new(&api.url, api.token.clone())?;
    let path = format!("/api/tournaments/{id}");
    let view: TournamentView = client.get(&path).await?;
    if once {
        let p = view.progress;
        println!(
            "{} {}: {}/{} answered, {} done, {} failed, {} running, {} pending, {} cancelled, {} duplicates dropped",
            id,
            view.name,
            p.done + p.failed + p.cancelled,
            p.total,
            p.done,
            p.failed,
            p.running,
            p.pending,
            p.cancelled,
            p.duplicates
        );
        for line in view.lines() {
            println!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let bar = progress_bar(view.progress.total);
    bar.set_prefix(view.name.clone());
    let mut view = view;
    loop {
        show(&bar, &view.progress);
        if let Some(summary) = view.lines().first() {
            bar.set_message(summary.clone());
        }
        if view.progress.finished() {
            break;
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = tokio::signal::ctrl_c() => break,
        }
        view = client.get::<TournamentView>(&path).await?;
    }
    bar.finish();
    for line in view.lines() {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

async fn retry(id: &str, failed: bool, api: &ApiArgs) -> Result<ExitCode> {
    let client = Client::new(&api.url, api.token.clone())?;
    let retried = client.retry(id, failed).await?;
    if failed {
        println!("{id}: {} unanswered and {} failed jobs published again", retried.unanswered, retried.failed);
    } else {
        println!("{id}: {} unanswered jobs published again", retried.unanswered);
    }
    Ok(ExitCode::SUCCESS)
}

async fn stop(id: &str, api: &ApiArgs) -> Result<ExitCode> {
    let client = Client::new(&api.url, api.token.clone())?;
    let stopped = client.stop(id).await?;
    println!("{id}: stopped; {} matches not yet handed out were cancelled", stopped["cancelled"]);
    Ok(ExitCode::SUCCESS)
}

async fn bots(command: BotsCommand) -> Result<ExitCode> {
    match command {
        BotsCommand::Add { id, from, name, builtin, command, image, replaces, api } => {
            let bot = match from {
                Some(path) => {
                    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
                    toml::from_str(&text).with_context(|| format!("{} is not a bot entry", path.display()))?
                }
                None => BotEntry {
                    name: name.unwrap_or_default(),
                    builtin,
                    command,
                    image,
                    args: Vec::new(),
                    transport: Transport::default(),
                    limits: BotLimits::default(),
                },
            };
            let client = Client::new(&api.url, api.token.clone())?;
            let added = client.add_bot(&id, &NewBot { bot, replaces: replaces.clone() }).await?;
            match replaces {
                Some(old) => println!("{id}: {} added, replacing {old} (retired)", added["bot"]),
                None => println!("{id}: {} added", added["bot"]),
            }
        }
        BotsCommand::Retire { id, name, api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            client.retire_bot(&id, &name).await?;
            println!("{id}: {name} retired");
        }
        BotsCommand::Submit { dir, name, game, ladder, wait, api } => {
            let source = farm_worker::build::Source::read_dir(&dir, farm_worker::build::SourceLimits::default())
                .with_context(|| format!("the source in {}", dir.display()))?;
            let client = Client::new(&api.url, api.token.clone())?;
            let submitted = client.submit_bot(&name, &game, ladder.as_deref(), source.archive()).await?;
            let version = submitted["version"].as_u64().unwrap_or_default();
            println!("{name} v{version} submitted ({} layout): building", source.layout().name);
            if wait {
                return wait_for_version(&client, &name, version).await;
            }
        }
        BotsCommand::Show { name, api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            let bot: BotView = client.get(&format!("/api/bots/{}", percent_encode(&name))).await?;
            println!("{} ({}, owned by {})", bot.name, bot.game, bot.owner);
            for version in bot.versions {
                println!("{}", version_line(&version));
            }
        }
        BotsCommand::Challenge { bot, opponent, games, api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            let body = serde_json::json!({ "bot": bot, "opponent": opponent, "games": games });
            let made: serde_json::Value = client.send(hyper::Method::POST, "/api/challenges", Some(&body)).await?;
            let challenge = &made["challenge"];
            eprintln!("{} vs {}: {} matches", challenge["bot"], challenge["opponent"], made["jobs"]);
            println!("{}", challenge["tournament_id"].as_str().unwrap_or_default());
        }
        BotsCommand::Log { name, version, api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            let path = format!("/api/bots/{}/versions/{version}/build-log", percent_encode(&name));
            print!("{}", client.get_text(&path).await?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One line for a version: its state and what it came to.
fn version_line(version: &VersionView) -> String {
    let state =
        serde_json::to_value(version.state).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    let mut line = format!("  v{} {state}", version.version);
    if let Some(validation) = &version.validation {
        line.push_str(&format!(", validation {validation}"));
    }
    if let Some(ladder) = &version.ladder {
        line.push_str(&format!(", ladder {ladder}"));
    }
    if let Some(reason) = &version.reason {
        line.push_str(&format!(": {reason}"));
    }
    line
}

/// Polls bot `name` until `version` is decided; exit code 0 when it was validated.
async fn wait_for_version(client: &Client, name: &str, version: u64) -> Result<ExitCode> {
    let mut shown = None;
    loop {
        let bot: BotView = client.get(&format!("/api/bots/{}", percent_encode(name))).await?;
        let Some(row) = bot.versions.into_iter().find(|row| u64::from(row.version) == version) else {
            anyhow::bail!("{name} has no version {version}");
        };
        if shown != Some(row.state) {
            eprintln!("{}", version_line(&row));
            shown = Some(row.state);
        }
        match row.state {
            VersionState::Validated => return Ok(ExitCode::SUCCESS),
            VersionState::Rejected | VersionState::BuildFailed => return Ok(ExitCode::FAILURE),
            VersionState::Building | VersionState::Validating => tokio::time::sleep(Duration::from_secs(2)).await,
        }
    }
}

async fn workers(command: WorkersCommand) -> anyhow::Result<ExitCode> {
    match command {
        WorkersCommand::Add { name, broker } => {
            let password = broker.management()?.add_worker(&name).await?;
            eprintln!(
                "worker {name} made, with the workers' rights on {:?}; its password (shown only this once) is on \
                 stdout: run it with worker_id = {name:?} and amqp_url = amqp://{name}:PASSWORD@HOST:5672/VHOST",
                broker.vhost
            );
            println!("{password}");
        }
        WorkersCommand::List { broker } => {
            for worker in broker.management()?.workers().await? {
                println!("{}\t{} connections", worker.name, worker.connections);
            }
        }
        WorkersCommand::Revoke { name, broker } => {
            broker.management()?.revoke_worker(&name).await?;
            println!("worker {name} revoked: its user is deleted, and RabbitMQ closed its connections");
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn users(command: UsersCommand) -> Result<ExitCode> {
    use hyper::Method;
    match command {
        UsersCommand::Add { name, admin, share, api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            let body = serde_json::json!({ "name": name, "admin": admin, "share": share });
            let made: serde_json::Value = client.send(Method::POST, "/api/users", Some(&body)).await?;
            eprintln!(
                "user {name} made (token {}); the token, shown only now:",
                made["token_id"].as_str().unwrap_or("")
            );
            println!("{}", made["token"].as_str().unwrap_or(""));
        }
        UsersCommand::List { api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            let listed: serde_json::Value = client.get("/api/users").await?;
            let users: Vec<UserView> = serde_json::from_value(listed["users"].clone())?;
            println!("{:<24} {:>5} {:>5}  tokens", "user", "admin", "share");
            for user in users {
                let tokens: Vec<String> =
                    user.tokens
                        .iter()
                        .map(|token| {
                            if token.revoked_at.is_some() {
                                format!("{} (revoked)", token.id)
                            } else {
                                token.id.clone()
                            }
                        })
                        .collect();
                println!(
                    "{:<24} {:>5} {:>5}  {}",
                    user.name,
                    if user.admin { "yes" } else { "no" },
                    user.share,
                    tokens.join(", ")
                );
            }
        }
        UsersCommand::Share { name, share, api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            let path = format!("/api/users/{}/share", percent_encode(&name));
            let _: serde_json::Value =
                client.send(Method::PUT, &path, Some(&serde_json::json!({ "share": share }))).await?;
            println!("{name}: share {share}");
        }
        UsersCommand::Token { name, api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            let path = format!("/api/users/{}/tokens", percent_encode(&name));
            let made: serde_json::Value = client.send(Method::POST, &path, None).await?;
            eprintln!("token {} made for {name}; shown only now:", made["token_id"].as_str().unwrap_or(""));
            println!("{}", made["token"].as_str().unwrap_or(""));
        }
        UsersCommand::Revoke { token_id, api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            let path = format!("/api/tokens/{}", percent_encode(&token_id));
            let revoked: serde_json::Value = client.send(Method::DELETE, &path, None).await?;
            println!("token {token_id} of {} revoked", revoked["user"].as_str().unwrap_or(""));
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn whoami(api: &ApiArgs) -> Result<ExitCode> {
    let client = Client::new(&api.url, api.token.clone())?;
    let me: serde_json::Value = client.get("/api/me").await?;
    println!("{}", serde_json::to_string_pretty(&me)?);
    Ok(ExitCode::SUCCESS)
}

async fn webhooks(command: WebhooksCommand) -> Result<ExitCode> {
    use hyper::Method;
    match command {
        WebhooksCommand::Add { url, events, api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            let body = serde_json::json!({ "url": url, "events": events });
            let made: serde_json::Value = client.send(Method::POST, "/api/webhooks", Some(&body)).await?;
            eprintln!(
                "webhook {} registered for {}; its signing secret, shown only now:",
                made["id"].as_str().unwrap_or(""),
                made["events"]
            );
            println!("{}", made["secret"].as_str().unwrap_or(""));
        }
        WebhooksCommand::List { api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            let listed: serde_json::Value = client.get("/api/webhooks").await?;
            let hooks: Vec<WebhookView> = serde_json::from_value(listed["webhooks"].clone())?;
            for hook in hooks {
                println!("{}  {}  {}", hook.id, hook.url, hook.events.join(","));
            }
        }
        WebhooksCommand::Remove { id, api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            let path = format!("/api/webhooks/{}", percent_encode(&id));
            let _: serde_json::Value = client.send(Method::DELETE, &path, None).await?;
            println!("webhook {id} removed");
        }
        WebhooksCommand::Deliveries { id, api } => {
            let client = Client::new(&api.url, api.token.clone())?;
            let listed: serde_json::Value =
                client.get(&format!("/api/webhooks/{}/deliveries", percent_encode(&id))).await?;
            let deliveries: Vec<DeliveryView> = serde_json::from_value(listed["deliveries"].clone())?;
            for delivery in deliveries {
                println!(
                    "event {} {} {}: {} after {} attempt(s){}",
                    delivery.event_id,
                    delivery.kind,
                    delivery.subject,
                    delivery.state,
                    delivery.attempts,
                    delivery.last_outcome.map(|outcome| format!(", last: {outcome}")).unwrap_or_default()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn standings(id: &str, format: Format, api: &ApiArgs) -> Result<ExitCode> {
    let client = Client::new(&api.url, api.token.clone())?;
    let standings: Standings = client.get(&format!("/api/tournaments/{id}/standings")).await?;
    print_standings(&standings, format)?;
    Ok(ExitCode::SUCCESS)
}
