//! The commands about one tournament on a coordinator: `submit`, `status`, `standings`,
//! `retry`, `stop` and `export`.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
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

/// Writes tournament `id`'s export into `out` (a tar first, unpacked, then removed),
/// from the coordinator `api` names or the run's data directory `data`, and checks
/// it as a re-import would.
pub async fn export(id: &str, out: &Path, replays: bool, data: Option<&Path>, api: &ApiArgs) -> Result<ExitCode> {
    std::fs::create_dir_all(out).with_context(|| format!("making {}", out.display()))?;
    if out.join("manifest.json").exists() {
        anyhow::bail!("{} holds an export already: give an empty directory", out.display());
    }
    let archive = out.join(format!(".{id}.tar.part"));
    let mut file = tokio::fs::File::create(&archive).await.with_context(|| format!("writing {}", archive.display()))?;
    eprintln!("exporting {id}{} ...", if replays { " with its replays" } else { "" });
    let bytes = match data {
        Some(data) => write_local_export(data, id, replays, &mut file).await?,
        None => api.client()?.download(&format!("/api/tournaments/{id}/export?replays={replays}"), &mut file).await?,
    };
    drop(file);
    let (directory, tar) = (out.to_path_buf(), archive.clone());
    tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&tar)?;
        tar::Archive::new(std::io::BufReader::new(file)).unpack(&directory)
    })
    .await?
    .with_context(|| format!("unpacking {}", archive.display()))?;
    std::fs::remove_file(&archive).with_context(|| format!("removing {}", archive.display()))?;
    let directory = out.to_path_buf();
    let checked = tokio::task::spawn_blocking(move || farm_coordinator::export::check(&directory)).await??;
    // The export is meant to run in bounded memory whatever its size: it says what it took.
    let peak = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:")?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
        })
        .map(|kib| format!("; peak memory {:.1} MiB", kib as f64 / 1024.0))
        .unwrap_or_default();
    println!(
        "{}: {} matches in {} parts, {} replays, {bytes} bytes; every checksum matches{peak}",
        out.display(),
        checked.matches,
        checked.parts,
        checked.replays
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes the export archive of tournament `id` of the run in `data` into `to`;
/// returns its bytes.
async fn write_local_export(data: &Path, id: &str, replays: bool, to: &mut tokio::fs::File) -> Result<u64> {
    use farm_coordinator::embedded;
    use farm_runtime::storage::{Storage, StorageConfig};
    use futures_util::StreamExt;
    use tokio::io::AsyncWriteExt;
    let ledger = farm_coordinator::ledger::Ledger::open(&embedded::ledger_path(data))?;
    let storage = Storage::open(&StorageConfig::Local { path: embedded::objects_path(data) })?;
    let tournament =
        ledger.tournament(id).await?.with_context(|| format!("{} has no tournament {id}", data.display()))?;
    let mut archive = std::pin::pin!(farm_coordinator::export::archive(ledger, storage, tournament, replays));
    let mut bytes = 0u64;
    while let Some(chunk) = archive.next().await {
        let chunk = chunk?;
        to.write_all(&chunk).await?;
        bytes += chunk.len() as u64;
    }
    to.flush().await?;
    Ok(bytes)
}
