//! The API's routes for a running ladder's bots (its owner or admins).
//!
//! - `POST /api/tournaments/{id}/bots` `{"bot": {...}, "replaces"?}`: 201 with the
//!   new bot's index; with `replaces`, it is that bot's new version, which retires.
//! - `DELETE /api/tournaments/{id}/bots/{name}`: the bot retires.
//! - `GET /api/tournaments/{id}/bots/{name}/history`: the ladder bot's rating after each
//!   of its matches, across its versions ([`crate::director::ladder::history`]).
//! - `POST /api/tournaments/{id}/freeze` `{"at"?: UNIX}`: no new version enters from
//!   then (default now); its season as it stands.
//! - `POST /api/tournaments/{id}/finals` `{"top", "format", "games"?}`: 201 with the
//!   finals' id and jobs ([`crate::season`]); 409 before the freeze or once made.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::access::{caller, may_change_tournament, may_enter};
use super::tournaments_routes::{Submitted, check_quotas};
use super::{ApiState, lookup, request_body};
use crate::accounts::Caller;
use crate::api_error::ApiError;
use crate::director::{self, FormatStatus, RosterError};
use crate::ledger::now;
use crate::season::{self, FinalsRequest, SeasonError};
use crate::tournament::{BotEntry, Format, TournamentError};

/// The routes.
pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/api/tournaments/{id}/bots", post(add_bot))
        .route("/api/tournaments/{id}/bots/{name}", delete(retire_bot))
        .route("/api/tournaments/{id}/bots/{name}/history", get(history))
        .route("/api/tournaments/{id}/freeze", post(freeze))
        .route("/api/tournaments/{id}/finals", post(finals))
}

/// When a ladder freezes: `{"at": UNIX}`, or now.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Freeze {
    /// From when (Unix seconds) no new version enters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<i64>,
}

/// A season's step refused: 409 for the ladder's state, 400 for the request.
impl From<SeasonError> for ApiError {
    fn from(error: SeasonError) -> Self {
        match error {
            SeasonError::NotLadder(_) | SeasonError::NotFrozen(_) | SeasonError::FinalsMade { .. } => {
                ApiError::Conflict(error.to_string())
            }
            SeasonError::Tournament(TournamentError::OverLimit { .. }) => ApiError::OverLimit(error.to_string()),
            SeasonError::Top(_) | SeasonError::Tournament(_) => ApiError::BadRequest(error.to_string()),
        }
    }
}

async fn history(
    State(state): State<ApiState>,
    Path((id, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let tournament = lookup::tournament(&state, &id).await?;
    if !matches!(tournament.format, Format::Ladder { .. }) {
        return Err(ApiError::Conflict(format!("{id} is not a ladder: only a ladder keeps rating histories")));
    }
    let bot = tournament
        .bots
        .iter()
        .position(|bot| bot.name == name)
        .ok_or_else(|| ApiError::NotFound(format!("{id} has no bot {name}")))?;
    let _slot = lookup::ladder_read_slot()?;
    let jobs = state.ledger.schedule(&id).await?;
    // Replaying a long ladder takes a while: off the runtime.
    let history = tokio::task::spawn_blocking(move || director::ladder::history(&tournament, &jobs, bot))
        .await
        .map_err(|error| ApiError::Internal(error.to_string()))?;
    Ok(Json(history).into_response())
}

async fn freeze(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let (caller, asked): (_, Freeze) = changing(&state, &headers, &id, body).await?;
    let tournament = lookup::tournament(&state, &id).await?;
    if !matches!(tournament.format, Format::Ladder { .. }) {
        return Err(SeasonError::NotLadder(id).into());
    }
    let at = asked.at.unwrap_or_else(now);
    let season = state.ledger.freeze(&id, at).await?;
    if season.frozen_at != Some(at) {
        let finals = season.finals.unwrap_or_default();
        return Err(SeasonError::FinalsMade { ladder: id, finals }.into());
    }
    tracing::info!(ladder = %id, at, by = %caller.name, "ladder frozen");
    Ok(Json(season).into_response())
}

async fn finals(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let (caller, asked): (_, FinalsRequest) = changing(&state, &headers, &id, body).await?;
    // One finals made at a time: of two requests at once, the second sees the first's.
    static MAKING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _making = MAKING.lock().await;
    let ladder = lookup::tournament(&state, &id).await?;
    let Some(FormatStatus::Ladder(report)) = director::load_status(&state.ledger, &ladder).await? else {
        return Err(SeasonError::NotLadder(id).into());
    };
    let season = state.ledger.season(&id).await?;
    let file = season::finals_file(&ladder, &report, &season, now(), &asked)?;
    let finals = file.resolve(None, state.tournament_limits).map_err(SeasonError::from)?;
    if caller.is_limited() {
        check_quotas(&state, &caller, finals.most_jobs_at_submission()).await?;
    }
    let finals_id = finals.id.clone();
    let inserted = state.ledger.insert_tournament_for(finals, caller.name.clone(), 0).await?;
    state.ledger.record_finals(&id, &finals_id).await?;
    tracing::info!(ladder = %id, finals = %finals_id, jobs = inserted.jobs, by = %caller.name, "finals made");
    state.wake_publisher.notify_one();
    state.director.wake();
    let answer = Submitted { id: finals_id, created: inserted.created, jobs: inserted.jobs };
    Ok((StatusCode::CREATED, Json(answer)).into_response())
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

/// The caller, who may change tournament `id` (its owner or an admin), and what they
/// ask in `body` (JSON).
async fn changing<T: serde::de::DeserializeOwned>(
    state: &ApiState,
    headers: &HeaderMap,
    id: &str,
    body: Body,
) -> Result<(Caller, T), ApiError> {
    let caller = caller(headers, state).await?;
    may_change_tournament(state, &caller, id).await?;
    Ok((caller, request_body::json(body).await?))
}

async fn add_bot(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let (caller, new): (_, NewBot) = changing(&state, &headers, &id, body).await?;
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
