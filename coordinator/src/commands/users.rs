//! `users` and `whoami`: users and their tokens, and who a token is.

use std::process::ExitCode;

use anyhow::Result;
use farm_coordinator::client::percent_encode;
use farm_coordinator::ledger::UserView;

use crate::{ApiArgs, UsersCommand};

/// Does `command`.
pub async fn users(command: UsersCommand) -> Result<ExitCode> {
    use hyper::Method;
    match command {
        UsersCommand::Add { name, admin, share, api } => {
            let client = api.client()?;
            let body = serde_json::json!({ "name": name, "admin": admin, "share": share });
            let made: serde_json::Value = client.send(Method::POST, "/api/users", Some(&body)).await?;
            eprintln!(
                "user {name} made (token {}); the token, shown only now:",
                made["token_id"].as_str().unwrap_or("")
            );
            println!("{}", made["token"].as_str().unwrap_or(""));
        }
        UsersCommand::List { api } => {
            let client = api.client()?;
            let listed: serde_json::Value = client.get("/api/users").await?;
            let users: Vec<UserView> = serde_json::from_value(listed["users"].clone())?;
            println!("{:<24} {:>5} {:>5}  tokens", "user", "admin", "share");
            for user in users {
                let tokens: Vec<String> =
                    user.tokens
                        .iter()
                        .map(|token| {
                            if token.revoked_at.is_some() {
                                format!("{} (revoked)", token.id)
                            } else {
                                token.id.clone()
                            }
                        })
                        .collect();
                println!(
                    "{:<24} {:>5} {:>5}  {}",
                    user.name,
                    if user.admin { "yes" } else { "no" },
                    user.share,
                    tokens.join(", ")
                );
            }
        }
        UsersCommand::Share { name, share, api } => {
            let client = api.client()?;
            let path = format!("/api/users/{}/share", percent_encode(&name));
            let _: serde_json::Value =
                client.send(Method::PUT, &path, Some(&serde_json::json!({ "share": share }))).await?;
            println!("{name}: share {share}");
        }
        UsersCommand::Token { name, api } => {
            let client = api.client()?;
            let path = format!("/api/users/{}/tokens", percent_encode(&name));
            let made: serde_json::Value = client.send(Method::POST, &path, None).await?;
            eprintln!("token {} made for {name}; shown only now:", made["token_id"].as_str().unwrap_or(""));
            println!("{}", made["token"].as_str().unwrap_or(""));
        }
        UsersCommand::Revoke { token_id, api } => {
            let client = api.client()?;
            let path = format!("/api/tokens/{}", percent_encode(&token_id));
            let revoked: serde_json::Value = client.send(Method::DELETE, &path, None).await?;
            println!("token {token_id} of {} revoked", revoked["user"].as_str().unwrap_or(""));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints who the token is, as the API's `/api/me` says.
pub async fn whoami(api: &ApiArgs) -> Result<ExitCode> {
    let client = api.client()?;
    let me: serde_json::Value = client.get("/api/me").await?;
    println!("{}", serde_json::to_string_pretty(&me)?);
    Ok(ExitCode::SUCCESS)
}
