//! `serve`: the coordinator service, configured from its file, the environment and the
//! command line.

use std::process::ExitCode;

use anyhow::{Context, Result};
use farm_coordinator::CoordinatorConfig;
use farm_runtime::config::Overrides;

use crate::ServeArgs;

/// Runs the service until Ctrl-C or SIGTERM.
pub async fn serve(args: ServeArgs) -> Result<ExitCode> {
    let config = CoordinatorConfig::load(args.config.as_deref(), std::env::vars(), args.overrides().pairs())?;
    let (trigger, shutdown) = farm_runtime::shutdown_channel();
    trigger.on_signals().context("installing signal handlers")?;
    farm_coordinator::serve(config, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}

impl ServeArgs {
    fn overrides(&self) -> Overrides {
        let mut overrides = self.storage.overrides();
        overrides
            .set("listen", self.listen.as_ref())
            .set("amqp_url", self.amqp_url.as_ref())
            .set("ledger_path", self.ledger.as_ref().map(|path| path.display()))
            .set("bot_launch", self.bot_launch.map(|mode| format!("{mode:?}").to_lowercase()))
            .set("delivery_limit", self.delivery_limit)
            .set("max_outstanding", self.max_outstanding);
        overrides
    }
}
