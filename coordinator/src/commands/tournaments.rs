//! The commands about one tournament on a coordinator: `submit`, `status`, `standings`,
//! `retry` and `stop`.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use farm_coordinator::director::FormatStatus;
use farm_coordinator::ledger::Progress;
use farm_coordinator::standings::Standings;

use super::display::{print_standings, progress_bar, show};
use crate::{ApiArgs, Format};

/// Sends tournament file `file`; prints its id.
pub async fn submit(file: &Path, priority: i32, api: &ApiArgs) -> Result<ExitCode> {
    let client = api.client()?;
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

/// Shows tournament `id`'s progress: once, or live until it finishes (or Ctrl-C).
pub async fn status(id: &str, once: bool, api: &ApiArgs) -> Result<ExitCode> {
    let client = api.client()?;
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

/// Prints tournament `id`'s standings in `format`.
pub async fn standings(id: &str, format: Format, api: &ApiArgs) -> Result<ExitCode> {
    let client = api.client()?;
    let standings: Standings = client.get(&format!("/api/tournaments/{id}/standings")).await?;
    print_standings(&standings, format)?;
    Ok(ExitCode::SUCCESS)
}

/// Publishes tournament `id`'s unanswered jobs again, and its failed ones with `failed`.
pub async fn retry(id: &str, failed: bool, api: &ApiArgs) -> Result<ExitCode> {
    let client = api.client()?;
    let retried = client.retry(id, failed).await?;
    if failed {
        println!("{id}: {} unanswered and {} failed jobs published again", retried.unanswered, retried.failed);
    } else {
        println!("{id}: {} unanswered jobs published again", retried.unanswered);
    }
    Ok(ExitCode::SUCCESS)
}

/// Ends tournament `id` now.
pub async fn stop(id: &str, api: &ApiArgs) -> Result<ExitCode> {
    let client = api.client()?;
    let stopped = client.stop(id).await?;
    println!("{id}: stopped; {} matches not yet handed out were cancelled", stopped["cancelled"]);
    Ok(ExitCode::SUCCESS)
}
