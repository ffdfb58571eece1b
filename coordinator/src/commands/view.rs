//! `view`: the pages and the API over a `run`'s data directory, read-only.

use std::process::ExitCode;

use anyhow::{Context, Result};
use farm_coordinator::embedded;
use farm_coordinator::view::View;

use crate::ViewArgs;

/// Serves `args.data` until Ctrl-C.
pub async fn view(args: ViewArgs) -> Result<ExitCode> {
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
