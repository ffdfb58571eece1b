//! How the commands show what they follow: a progress bar of matches, standings in the
//! format asked.

use std::time::Duration;

use anyhow::Result;
use farm_coordinator::ledger::Progress;
use farm_coordinator::standings::Standings;
use indicatif::{ProgressBar, ProgressStyle};

use crate::Format;

/// Prints `standings` in `format` on stdout.
pub fn print_standings(standings: &Standings, format: Format) -> Result<()> {
    match format {
        Format::Table => print!("{}", standings.table()),
        Format::Json => println!("{}", serde_json::to_string_pretty(standings)?),
        Format::Csv => print!("{}", standings.csv()),
    }
    Ok(())
}

/// A bar of `total` matches, ticking while nothing changes.
pub fn progress_bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} matches {msg} {elapsed} (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(500));
    bar
}

/// Shows `progress` on `bar`: matches answered, and how many failed.
pub fn show(bar: &ProgressBar, progress: &Progress) {
    bar.set_length(progress.total);
    bar.set_position(progress.done + progress.failed + progress.cancelled);
    bar.set_message(if progress.failed > 0 { format!("({} failed)", progress.failed) } else { String::new() });
}
