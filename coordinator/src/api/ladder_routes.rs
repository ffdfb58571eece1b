//! The API's routes for a running ladder's bots (its owner or admins).
//!
//! - `POST /api/tournaments/{id}/bots` `{"bot": {...}, "replaces"?}`: 201 with the
//!   new bot's index; with `replaces`, it is that bot's new version, which retires.
//! - `DELETE /api/tournaments/{id}/bots/{name}`: the bot retires.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::access::{caller, may_change_tournament, may_enter};
use super::{ApiState, request_body};
use crate::api_error::ApiError;
use crate::director::RosterError;
use crate::tournament::BotEntry;

/// The routes.
pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/api/tournaments/{id}/bots", post(add_bot))
        .route("/api/tournaments/{id}/bots/{name}", delete(retire_bot))
}

/// A bot for a running ladder: `{"bot": {...as in a tournament file...}, "replaces": "old"}`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewBot {
    /// The bot.
    pub bot: BotEntry,
    /// The bot it is a new version of, which retires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
}

/// A change to a ladder's bots refused: 404, 409 or 422 by why, or 500 when the ledger failed.
impl From<RosterError> for ApiError {
    fn from(error: RosterError) -> Self {
        match error {
            RosterError::NoTournament(_) => ApiError::NotFound(error.to_string()),
            RosterError::Refused(message) => ApiError::Conflict(message),
            RosterError::OverLimit(message) => ApiError::OverLimit(message),
            RosterError::Bot(error) => ApiError::BadRequest(error.to_string()),
            RosterError::Ledger(error) => error.into(),
        }
    }
}

async fn add_bot(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    may_change_tournament(&state, &caller, &id).await?;
    let new: NewBot = request_body::json(body).await?;
    may_enter(&state, &caller, "bot", &new.bot).await?;
    let name = new.bot.name.clone();
    let index = state.director.add_bot(&id, new.bot, new.replaces.as_deref()).await?;
    tracing::info!(tournament = %id, bot = %name, replaces = ?new.replaces, "bot added");
    Ok((StatusCode::CREATED, Json(serde_json::json!({ "id": id, "bot": name, "index": index }))).into_response())
}

async fn retire_bot(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path((id, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    may_change_tournament(&state, &caller, &id).await?;
    let index = state.director.retire_bot(&id, &name).await?;
    tracing::info!(tournament = %id, bot = %name, "bot retired");
    Ok(Json(serde_json::json!({ "id": id, "bot": name, "index": index })).into_response())
}
