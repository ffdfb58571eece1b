//! `farm-coordinator`: tournaments between game-playing bots.
//!
//! Here are the commands' arguments and which one runs; what each does is in
//! [`commands`].

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use farm_coordinator::tournament::TournamentLimits;
use farm_runtime::config::StorageArgs;
use farm_worker::SandboxKind;
use farm_worker::runner::RunnerArgs;

mod commands;

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
    /// Write a tournament's results (one JSON line per match: seats, scores, statuses,
    /// ratings before and after), and with --replays its replays, into DIR with a
    /// manifest of checksums, then check it as a re-import would: from a coordinator
    /// (admins), or with --data from a `run`'s data directory.
    ///
    /// Example: farm-coordinator export t-44876f57cc4d05c5 --out season-1 --replays
    Export {
        /// The tournament id.
        id: String,
        /// The directory to write (made if missing; it must hold no earlier export).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The replays too (as stored, zstd).
        #[arg(long)]
        replays: bool,
        /// Read a `run`'s data directory here instead of asking a coordinator.
        #[arg(long, value_name = "DIR")]
        data: Option<PathBuf>,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// End a ladder's season: freeze it to new versions, then play its finals (its
    /// owner or admins).
    #[command(subcommand)]
    Season(SeasonCommand),
    /// Issue and revoke workers' identities (operators): each worker signs in to
    /// RabbitMQ as a user of its own, which is who the coordinator believes its
    /// answers are from. Talks to RabbitMQ's management API as its administrator.
    ///
    /// Example: FARM_RABBITMQ_ADMIN_USER=admin FARM_RABBITMQ_ADMIN_PASSWORD=... \
    /// farm-coordinator workers add gpu-box-1 (prints its password once; the worker
    /// runs with worker_id = gpu-box-1 and amqp_url = amqp://gpu-box-1:PASSWORD@HOST/VHOST)
    #[command(subcommand)]
    Workers(WorkersCommand),
    /// Print every limit on what a tournament's author or a bot can make the farm
    /// spend: its key, default, range, who sets it and what happens past it, as the
    /// Markdown table of the book's Limits page.
    Limits,
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
enum SeasonCommand {
    /// From --at (default now) no new version enters the ladder: uploads for it are
    /// answered 409 with the time; the bots in it play on.
    ///
    /// Example: farm-coordinator season freeze t-44876f57cc4d05c5 --at 2026-12-01T18:00:00Z
    Freeze {
        /// The ladder's id.
        ladder: String,
        /// When: a UTC time (2026-12-01T18:00:00Z) or Unix seconds.
        #[arg(long, value_parser = farm_coordinator::season::parse_time)]
        at: Option<i64>,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Make the frozen ladder's finals: its top N active bots, seeded by their places,
    /// every pairing in every seat, on the ladder's maps. Prints the finals' id.
    ///
    /// Example: farm-coordinator season finals t-44876f57cc4d05c5 --top 8 --format swiss --games 2
    Finals {
        /// The ladder's id.
        ladder: String,
        /// How many of its best bots play.
        #[arg(long)]
        top: usize,
        /// round-robin (every ordered pair) or swiss (tables by score).
        #[arg(long, value_parser = ["round-robin", "swiss"], default_value = "round-robin")]
        format: String,
        /// Games per pairing and map (round robin) or per table (Swiss), seats rotated.
        #[arg(long, default_value_t = 2)]
        games: u32,
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
        /// Where to post (http or https). Its id is not `url`, which `ApiArgs`' --url
        /// takes.
        #[arg(id = "hook_url", value_name = "URL")]
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
    #[arg(long, default_value_t = farm_proto::limits::DELIVERY_LIMIT.default)]
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
        Command::Run(args) => commands::run::run(args).await,
        Command::View(args) => commands::view::view(args).await,
        Command::Serve(args) => commands::serve::serve(args).await,
        Command::Submit { file, priority, api } => commands::tournaments::submit(&file, priority, &api).await,
        Command::Users(command) => commands::users::users(command).await,
        Command::Whoami { api } => commands::users::whoami(&api).await,
        Command::Webhooks(command) => commands::webhooks::webhooks(command).await,
        Command::Status { id, once, api } => commands::tournaments::status(&id, once, &api).await,
        Command::Standings { id, format, api } => commands::tournaments::standings(&id, format, &api).await,
        Command::Retry { id, failed, api } => commands::tournaments::retry(&id, failed, &api).await,
        Command::Stop { id, api } => commands::tournaments::stop(&id, &api).await,
        Command::Bots(command) => commands::bots::bots(command).await,
        Command::Season(command) => commands::season::season(command).await,
        Command::Export { id, out, replays, data, api } => {
            commands::tournaments::export(&id, &out, replays, data.as_deref(), &api).await
        }
        Command::Workers(command) => commands::workers::workers(command).await,
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
