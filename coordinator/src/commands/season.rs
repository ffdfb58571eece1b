//! `season`: a ladder frozen to new versions, and its finals made.

use std::process::ExitCode;

use anyhow::Result;
use farm_coordinator::ledger::Season;
use hyper::Method;

use crate::SeasonCommand;

/// Does `command`.
pub async fn season(command: SeasonCommand) -> Result<ExitCode> {
    match command {
        SeasonCommand::Freeze { ladder, at, api } => {
            let client = api.client()?;
            let body = serde_json::json!({ "at": at });
            let season: Season =
                client.send(Method::POST, &format!("/api/tournaments/{ladder}/freeze"), Some(&body)).await?;
            let at = season.frozen_at.unwrap_or_default();
            let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(at.max(0).unsigned_abs());
            println!(
                "{ladder}: frozen from {} (Unix {at}): no new versions enter it",
                humantime::format_rfc3339_seconds(time)
            );
        }
        SeasonCommand::Finals { ladder, top, format, games, api } => {
            let client = api.client()?;
            let body = serde_json::json!({ "top": top, "format": format, "games": games });
            let made: serde_json::Value =
                client.send(Method::POST, &format!("/api/tournaments/{ladder}/finals"), Some(&body)).await?;
            eprintln!("{ladder}: finals of its top {top}, {format}, {} matches", made["jobs"]);
            println!("{}", made["id"].as_str().unwrap_or(""));
        }
    }
    Ok(ExitCode::SUCCESS)
}
