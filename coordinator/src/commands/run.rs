//! `run`: a tournament file played on this machine, start to finish, with its pages
//! served meanwhile if asked (`--web`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use farm_coordinator::director::FormatStatus;
use farm_coordinator::embedded::{self, RunEnd, RunOptions};
use farm_coordinator::live::Live;
use farm_coordinator::tournament::{Tournament, TournamentFile, TournamentLimits};
use farm_coordinator::view::{View, ViewError};
use farm_worker::SandboxKind;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::display::{print_standings, progress_bar, show};
use crate::RunArgs;

/// Plays the tournament of `args.file`; exit code 130 when interrupted.
pub async fn run(args: RunArgs) -> Result<ExitCode> {
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
    let live = web.as_ref().map(|web| web.live.clone());
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
        live,
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
fn warn_of_foreign_bots(tournament: &Tournament) {
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
    live: Live,
    stop: oneshot::Sender<()>,
    serving: JoinHandle<Result<(), ViewError>>,
}

async fn serve_in_background(data: &Path, address: &str) -> Result<BackgroundView> {
    let view = View::bind(data, address).await?;
    let url = format!("http://{}/", view.address()?);
    let live = view.live();
    eprintln!("watch the run at {url}");
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(view.serve(async move {
        let _ = stopped.await;
    }));
    Ok(BackgroundView { url, live, stop, serving })
}

impl BackgroundView {
    async fn stop(self) -> Result<()> {
        let _ = self.stop.send(());
        self.serving.await.context("the web server's task")??;
        Ok(())
    }
}
