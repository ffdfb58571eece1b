//! Webhooks, the events their owners are told of, and each delivery's attempts.
//! Events are written by the schema's triggers.

use super::*;

/// A webhook to register.
#[derive(Debug, Clone)]
pub struct NewWebhook {
    /// Its id.
    pub id: String,
    /// Whose.
    pub owner: String,
    /// Where deliveries go (checked).
    pub url: String,
    /// The event kinds it is sent.
    pub kinds: Vec<String>,
    /// The key its deliveries are signed with.
    pub secret: String,
}

/// A webhook as listed (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct WebhookView {
    /// Its id.
    pub id: String,
    /// Whose.
    pub owner: String,
    /// Where deliveries go.
    pub url: String,
    /// The event kinds it is sent.
    pub events: Vec<String>,
    /// When it was registered (Unix seconds).
    pub created_at: i64,
}

/// A delivery due, with what it takes to attempt it.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The webhook.
    pub webhook_id: String,
    /// The event.
    pub event_id: i64,
    /// The event's kind.
    pub kind: String,
    /// Where it goes.
    pub url: String,
    /// The signing key.
    pub secret: String,
    /// The JSON posted, the same at every attempt.
    pub body: String,
    /// Attempts made so far.
    pub attempts: u32,
}

/// A delivery as its webhook's history shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DeliveryView {
    /// The event.
    pub event_id: i64,
    /// Its kind.
    pub kind: String,
    /// What it is about (a tournament id).
    pub subject: String,
    /// `pending`, `retrying`, `delivered`, `abandoned` or `cancelled`.
    pub state: String,
    /// Attempts made.
    pub attempts: u32,
    /// When the next attempt is due (Unix seconds), while one is.
    pub next_at: Option<i64>,
    /// What the last attempt got.
    pub last_outcome: Option<String>,
    /// The JSON posted.
    pub body: serde_json::Value,
}

impl Ledger {
    /// Registers `webhook`: it is sent the events that happen from now on.
    pub async fn add_webhook(&self, webhook: NewWebhook) -> Result<(), LedgerError> {
        self.with(move |connection| {
            connection.execute(
                "INSERT INTO webhooks (id, owner, url, kinds, secret, created_at, after_event)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, (SELECT coalesce(max(id), 0) FROM events))",
                params![webhook.id, webhook.owner, webhook.url, webhook.kinds.join(","), webhook.secret, now()],
            )?;
            Ok(())
        })
        .await
    }

    /// The webhooks registered and not removed (only `owner`'s, if given).
    pub async fn webhooks(&self, owner: Option<String>) -> Result<Vec<WebhookView>, LedgerError> {
        self.read(move |connection| {
            Ok(connection
                .prepare_cached(
                    "SELECT id, owner, url, kinds, created_at FROM webhooks
                     WHERE removed_at IS NULL AND (?1 IS NULL OR owner = ?1) ORDER BY created_at, id",
                )?
                .query_map([&owner], |row| {
                    Ok(WebhookView {
                        id: row.get(0)?,
                        owner: row.get(1)?,
                        url: row.get(2)?,
                        events: row.get::<_, String>(3)?.split(',').map(str::to_owned).collect(),
                        created_at: row.get(4)?,
                    })
                })?
                .collect::<Result<_, _>>()?)
        })
        .await
    }

    /// Whose webhook `id` is, while it is registered.
    pub async fn webhook_owner(&self, id: &str) -> Result<Option<String>, LedgerError> {
        let id = id.to_owned();
        self.read(move |connection| {
            Ok(connection
                .query_row("SELECT owner FROM webhooks WHERE id = ?1 AND removed_at IS NULL", [&id], |row| row.get(0))
                .optional()?)
        })
        .await
    }

    /// Removes webhook `id`; its deliveries not yet made are cancelled.
    pub async fn remove_webhook(&self, id: &str) -> Result<bool, LedgerError> {
        let id = id.to_owned();
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            let removed = transaction.execute(
                "UPDATE webhooks SET removed_at = ?2 WHERE id = ?1 AND removed_at IS NULL",
                params![id, now()],
            )?;
            transaction.execute(
                "UPDATE deliveries SET state = 'cancelled' WHERE webhook_id = ?1 AND state IN ('pending', 'retrying')",
                [&id],
            )?;
            transaction.commit()?;
            Ok(removed > 0)
        })
        .await
    }

    /// Makes the deliveries of every event not yet fanned out: one per webhook of its
    /// owner registered before it that asked for its kind. Returns how many.
    pub async fn fan_out_events(&self) -> Result<u64, LedgerError> {
        self.with(move |connection| {
            // Asked after every batch of results: nothing to do must cost no write.
            if !connection.prepare_cached("SELECT 1 FROM events WHERE fanned = 0")?.exists([])? {
                return Ok(0);
            }
            let transaction = connection.transaction()?;
            let events: Vec<(i64, String, String, String, i64)> = transaction
                .prepare_cached("SELECT id, kind, subject, owner, created_at FROM events WHERE fanned = 0 ORDER BY id")?
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?)))?
                .collect::<Result<_, _>>()?;
            let mut made = 0u64;
            for (event_id, kind, subject, owner, created_at) in events {
                let hooks: Vec<String> = transaction
                    .prepare_cached(
                        "SELECT id FROM webhooks WHERE owner = ?1 AND removed_at IS NULL AND after_event < ?2
                             AND (',' || kinds || ',') LIKE ('%,' || ?3 || ',%')",
                    )?
                    .query_map(params![owner, event_id, kind], |row| row.get(0))?
                    .collect::<Result<_, _>>()?;
                if !hooks.is_empty() {
                    let body = event_body(&transaction, event_id, &kind, &subject, created_at)?;
                    for hook in hooks {
                        made += transaction.execute(
                            "INSERT OR IGNORE INTO deliveries (webhook_id, event_id, body, state, next_at)
                             VALUES (?1, ?2, ?3, 'pending', 0)",
                            params![hook, event_id, body],
                        )? as u64;
                    }
                }
                transaction.execute("UPDATE events SET fanned = 1 WHERE id = ?1", [event_id])?;
            }
            transaction.commit()?;
            Ok(made)
        })
        .await
    }

    /// Up to `limit` deliveries due at `now`, oldest event first.
    pub async fn due_deliveries(&self, now: i64, limit: u32) -> Result<Vec<Delivery>, LedgerError> {
        self.read(move |connection| {
            Ok(connection
                .prepare_cached(
                    "SELECT d.webhook_id, d.event_id, e.kind, w.url, w.secret, d.body, d.attempts
                     FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN events e ON e.id = d.event_id
                     WHERE d.state IN ('pending', 'retrying') AND d.next_at <= ?1 AND w.removed_at IS NULL
                     ORDER BY d.event_id LIMIT ?2",
                )?
                .query_map(params![now, limit], |row| {
                    Ok(Delivery {
                        webhook_id: row.get(0)?,
                        event_id: row.get(1)?,
                        kind: row.get(2)?,
                        url: row.get(3)?,
                        secret: row.get(4)?,
                        body: row.get(5)?,
                        attempts: row.get(6)?,
                    })
                })?
                .collect::<Result<_, _>>()?)
        })
        .await
    }

    /// Records an attempt: delivered, to be retried at `next_at`, or (with neither)
    /// abandoned.
    pub async fn attempted(
        &self,
        webhook_id: String,
        event_id: i64,
        delivered: bool,
        next_at: Option<i64>,
        outcome: String,
    ) -> Result<(), LedgerError> {
        let state = match (delivered, next_at) {
            (true, _) => "delivered",
            (false, Some(_)) => "retrying",
            (false, None) => "abandoned",
        };
        self.with(move |connection| {
            connection.execute(
                "UPDATE deliveries SET attempts = attempts + 1, state = ?3, next_at = ?4, last_outcome = ?5
                 WHERE webhook_id = ?1 AND event_id = ?2 AND state IN ('pending', 'retrying')",
                params![webhook_id, event_id, state, next_at.unwrap_or(0), outcome],
            )?;
            Ok(())
        })
        .await
    }

    /// Webhook `id`'s deliveries, newest event first, at most `limit`.
    pub async fn deliveries(&self, id: &str, limit: u32) -> Result<Vec<DeliveryView>, LedgerError> {
        let id = id.to_owned();
        self.read(move |connection| {
            let rows = connection
                .prepare_cached(
                    "SELECT d.event_id, e.kind, e.subject, d.state, d.attempts, d.next_at, d.last_outcome, d.body
                     FROM deliveries d JOIN events e ON e.id = d.event_id
                     WHERE d.webhook_id = ?1 ORDER BY d.event_id DESC LIMIT ?2",
                )?
                .query_map(params![id, limit], |row| {
                    let state: String = row.get(3)?;
                    let next_at: i64 = row.get(5)?;
                    let waiting = matches!(state.as_str(), "pending" | "retrying");
                    Ok((
                        DeliveryView {
                            event_id: row.get(0)?,
                            kind: row.get(1)?,
                            subject: row.get(2)?,
                            state,
                            attempts: row.get(4)?,
                            next_at: waiting.then_some(next_at),
                            last_outcome: row.get(6)?,
                            body: serde_json::Value::Null,
                        },
                        row.get::<_, String>(7)?,
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            rows.into_iter()
                .map(|(mut view, body)| {
                    view.body = serde_json::from_str(&body)
                        .map_err(|source| LedgerError::Corrupt { what: "webhook delivery", source })?;
                    Ok(view)
                })
                .collect()
        })
        .await
    }
}

/// The JSON a delivery of event `event_id` posts: the event, and the tournament or the
/// bot version (subject `BOT/N`) it is about as it stands when the event is fanned out.
fn event_body(
    connection: &Connection,
    event_id: i64,
    kind: &str,
    subject: &str,
    created_at: i64,
) -> Result<String, LedgerError> {
    let event = serde_json::json!({ "id": event_id, "kind": kind, "created_at": created_at });
    let version = subject.split_once('/').and_then(|(bot, version)| Some((bot, version.parse::<u32>().ok()?)));
    let body = match version {
        Some((bot, version)) if !kind.starts_with("tournament.") => {
            let view = super::bots::bot_view(connection, bot)?
                .and_then(|view| view.versions.into_iter().find(|row| row.version == version));
            serde_json::json!({ "event": event, "version": view })
        }
        _ => serde_json::json!({ "event": event, "tournament": tournament_body(connection, subject)? }),
    };
    Ok(body.to_string())
}

/// The tournament `subject` as an event's body shows it.
fn tournament_body(connection: &Connection, subject: &str) -> Result<serde_json::Value, LedgerError> {
    let tournament: Option<(String, String, String, String, Option<String>)> = connection
        .query_row(
            "SELECT name, game, owner, definition, conclusion FROM tournaments WHERE id = ?1",
            [subject],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?)),
        )
        .optional()?;
    let mut counts = serde_json::Map::new();
    let mut select = connection.prepare_cached("SELECT state, count FROM job_counts WHERE tournament_id = ?1")?;
    for row in select.query_map([subject], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))? {
        let (state, count) = row?;
        counts.insert(state, count.into());
    }
    let tournament = match tournament {
        Some((name, game, owner, definition, conclusion)) => {
            let definition: serde_json::Value = serde_json::from_str(&definition)
                .map_err(|source| LedgerError::Corrupt { what: "tournament", source })?;
            serde_json::json!({
                "id": subject,
                "name": name,
                "game": game,
                "owner": owner,
                "format": definition.get("format"),
                "conclusion": conclusion,
                "jobs": counts,
                "url": format!("/api/tournaments/{subject}"),
            })
        }
        None => serde_json::json!({ "id": subject }),
    };
    Ok(tournament)
}
