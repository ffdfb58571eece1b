//! Export: a round robin of many bots, every match recorded (as the coordinator
//! section records them), exported by `farm-coordinator export --data` in a process of
//! its own, whose peak resident memory is the figure: the export reads the ledger a
//! page at a time and writes as it reads, so it stays flat however many matches there
//! are. The command's own re-import check (every part's checksum and every line read
//! back) runs in the same process and counts in the figure, which the command prints
//! (its `VmHWM`).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use farm_coordinator::embedded;
use farm_coordinator::ledger::Ledger;

use crate::coordinator::{result_for, round_robin};
use crate::report::Figures;

/// Answers per ledger transaction while the tournament is filled in.
const RECORD_BATCH: usize = 2000;

/// Exports a round robin of `bots` bots (every ordered pair once), with the run's data
/// directory in `dir`.
pub async fn run(bots: usize, dir: &Path) -> anyhow::Result<Figures> {
    let mut figures = Figures::default();
    let ledger = Ledger::open(&embedded::ledger_path(dir))?;
    let tournament = round_robin(bots)?;
    let id = tournament.id.clone();
    let specs = tournament.check_launchable(farm_worker::SandboxKind::Local)?;
    let jobs: Vec<_> = tournament.plan()?.map(|planned| tournament.job(&planned, &specs)).collect();
    ledger.insert_tournament(tournament).await?;
    for batch in jobs.chunks(RECORD_BATCH) {
        ledger.record(batch.iter().map(result_for).collect()).await?;
    }
    drop(ledger);
    let matches = jobs.len();
    figures.put("matches", matches, matches.to_string());
    drop(jobs);

    let out = dir.join("export");
    let binary = crate::bots::sibling("farm-coordinator").map_err(anyhow::Error::msg)?;
    let started = Instant::now();
    let output = Command::new(binary).args(["export", &id, "--data"]).arg(dir).arg("--out").arg(&out).output()?;
    let seconds = started.elapsed().as_secs_f64();
    anyhow::ensure!(output.status.success(), "export failed: {}", String::from_utf8_lossy(&output.stderr));
    let said = String::from_utf8_lossy(&output.stdout);
    anyhow::ensure!(said.contains("every checksum matches"), "the export's check said: {said}");
    // Its own peak resident memory (VmHWM), as it says (a child's rusage would count
    // this process's memory at the fork).
    let peak_mib: f64 = said
        .split("peak memory ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("the export did not say its peak memory: {said}"))?;
    let mut bytes = 0;
    for entry in std::fs::read_dir(out.join("results"))? {
        bytes += entry?.metadata()?.len();
    }
    figures.number("export_and_check_seconds", seconds, "s");
    figures.number("matches_per_second", matches as f64 / seconds, "matches/s");
    figures.number("peak_rss_mib", peak_mib, "MiB");
    figures.number("results_mib", bytes as f64 / (1024.0 * 1024.0), "MiB");
    figures.put("checked", said.trim(), said.trim().to_owned());
    Ok(figures)
}
