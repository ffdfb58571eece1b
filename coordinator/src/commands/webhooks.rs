//! `webhooks`: the caller's webhooks registered, listed, removed, and their deliveries.

use std::process::ExitCode;

use anyhow::Result;
use farm_coordinator::client::percent_encode;
use farm_coordinator::ledger::{DeliveryView, WebhookView};

use crate::WebhooksCommand;

/// Does `command`.
pub async fn webhooks(command: WebhooksCommand) -> Result<ExitCode> {
    use hyper::Method;
    match command {
        WebhooksCommand::Add { url, events, api } => {
            let client = api.client()?;
            let body = serde_json::json!({ "url": url, "events": events });
            let made: serde_json::Value = client.send(Method::POST, "/api/webhooks", Some(&body)).await?;
            eprintln!(
                "webhook {} registered for {}; its signing secret, shown only now:",
                made["id"].as_str().unwrap_or(""),
                made["events"]
            );
            println!("{}", made["secret"].as_str().unwrap_or(""));
        }
        WebhooksCommand::List { api } => {
            let client = api.client()?;
            let listed: serde_json::Value = client.get("/api/webhooks").await?;
            let hooks: Vec<WebhookView> = serde_json::from_value(listed["webhooks"].clone())?;
            for hook in hooks {
                println!("{}  {}  {}", hook.id, hook.url, hook.events.join(","));
            }
        }
        WebhooksCommand::Remove { id, api } => {
            let client = api.client()?;
            let path = format!("/api/webhooks/{}", percent_encode(&id));
            let _: serde_json::Value = client.send(Method::DELETE, &path, None).await?;
            println!("webhook {id} removed");
        }
        WebhooksCommand::Deliveries { id, api } => {
            let client = api.client()?;
            let listed: serde_json::Value =
                client.get(&format!("/api/webhooks/{}/deliveries", percent_encode(&id))).await?;
            let deliveries: Vec<DeliveryView> = serde_json::from_value(listed["deliveries"].clone())?;
            for delivery in deliveries {
                println!(
                    "event {} {} {}: {} after {} attempt(s){}",
                    delivery.event_id,
                    delivery.kind,
                    delivery.subject,
                    delivery.state,
                    delivery.attempts,
                    delivery.last_outcome.map(|outcome| format!(", last: {outcome}")).unwrap_or_default()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
