//! `serve`: the coordinator service, configured from its file, the environment and the
//! command line.

use std::process::ExitCode;

use anyhow::{Context, Result};
use farm_coordinator::CoordinatorConfig;

use crate::ServeArgs;

/// Runs the service until Ctrl-C or SIGTERM.
pub async fn serve(args: ServeArgs) -> Result<ExitCode> {
    let config = CoordinatorConfig::load(args.config.as_deref(), std::env::vars(), &args.overrides())?;
    let (trigger, shutdown) = farm_runtime::shutdown_channel();
    trigger.on_signals().context("installing signal handlers")?;
    farm_coordinator::serve(config, shutdown).await?;
    Ok(ExitCode::SUCCESS)
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
