//! `bots`: bots' sources submitted and their versions shown, challenges, and a running
//! ladder's bots changed.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use farm_coordinator::api::NewBot;
use farm_coordinator::client::{Client, percent_encode};
use farm_coordinator::ledger::{BotView, VersionState, VersionView};
use farm_coordinator::tournament::BotEntry;
use farm_proto::{BotLimits, Transport};

use crate::BotsCommand;

/// Does `command`; with `submit --wait`, exit code 1 unless the version is validated.
pub async fn bots(command: BotsCommand) -> Result<ExitCode> {
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
            let client = api.client()?;
            let added = client.add_bot(&id, &NewBot { bot, replaces: replaces.clone() }).await?;
            match replaces {
                Some(old) => println!("{id}: {} added, replacing {old} (retired)", added["bot"]),
                None => println!("{id}: {} added", added["bot"]),
            }
        }
        BotsCommand::Retire { id, name, api } => {
            let client = api.client()?;
            client.retire_bot(&id, &name).await?;
            println!("{id}: {name} retired");
        }
        BotsCommand::Submit { dir, name, game, ladder, wait, api } => {
            let source = farm_worker::build::Source::read_dir(&dir, farm_worker::build::SourceLimits::default())
                .with_context(|| format!("the source in {}", dir.display()))?;
            let client = api.client()?;
            let submitted = client.submit_bot(&name, &game, ladder.as_deref(), source.archive()).await?;
            let version = submitted["version"].as_u64().unwrap_or_default();
            println!("{name} v{version} submitted ({} layout): building", source.layout().name);
            if wait {
                return wait_for_version(&client, &name, version).await;
            }
        }
        BotsCommand::Show { name, api } => {
            let client = api.client()?;
            let bot: BotView = client.get(&format!("/api/bots/{}", percent_encode(&name))).await?;
            println!("{} ({}, owned by {})", bot.name, bot.game, bot.owner);
            for version in bot.versions {
                println!("{}", version_line(&version));
            }
        }
        BotsCommand::Challenge { bot, opponent, games, api } => {
            let client = api.client()?;
            let body = serde_json::json!({ "bot": bot, "opponent": opponent, "games": games });
            let made: serde_json::Value = client.send(hyper::Method::POST, "/api/challenges", Some(&body)).await?;
            let challenge = &made["challenge"];
            eprintln!("{} vs {}: {} matches", challenge["bot"], challenge["opponent"], made["jobs"]);
            println!("{}", challenge["tournament_id"].as_str().unwrap_or_default());
        }
        BotsCommand::Log { name, version, api } => {
            let client = api.client()?;
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
