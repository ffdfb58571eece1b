//! The API's routes for tournaments as wholes.
//!
//! - `POST /api/tournaments[?priority=P]`: a tournament file, TOML or JSON (by its
//!   `Content-Type`); 201 with its id and jobs, 200 when the same tournament was
//!   submitted before. Its bots must be ones the caller may enter, and a limited user
//!   is held to their quotas (429).
//! - `GET /api/tournaments`: with their progress, newest first, a page at a time;
//!   `GET /api/tournaments/{id}`: one, with its format's status and how it ended.
//! - `GET /api/tournaments/{id}/standings`, `GET /api/tournaments/{id}/pairings`.
//! - `POST /api/tournaments/{id}/retry[?failed=true]` and `POST
//!   /api/tournaments/{id}/stop` (its owner or admins).
//! - `GET /api/tournaments/{id}/export[?replays=true]` (admins): its results (and
//!   replays) as a streamed tar archive ([`crate::export`]).

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use farm_proto::limits;
use serde::{Deserialize, Serialize};

use super::access::{admin_only, caller, may_change_tournament, may_enter};
use super::paging::{PageQuery, page_answer, page_limit};
use super::views::{ViewKind, ViewSources};
use super::{ApiState, lookup, request_body};
use crate::accounts::{Caller, Quotas};
use crate::api_error::ApiError;
use crate::director;
use crate::standings::{Pairings, Standings};
use crate::tournament::{Tournament, TournamentError, TournamentFile};

/// The routes.
pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/api/tournaments", post(submit).get(list))
        .route("/api/tournaments/{id}", get(tournament))
        .route("/api/tournaments/{id}/retry", post(retry))
        .route("/api/tournaments/{id}/stop", post(stop))
        .route("/api/tournaments/{id}/standings", get(standings))
        .route("/api/tournaments/{id}/pairings", get(pairings))
        .route("/api/tournaments/{id}/export", get(export))
}

/// The answer to a submission.
#[derive(Debug, Serialize, Deserialize)]
pub struct Submitted {
    /// The tournament's id.
    pub id: String,
    /// False when the same tournament was submitted before (nothing new was made).
    pub created: bool,
    /// Its jobs.
    pub jobs: u64,
}

/// The query of a submission.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubmitQuery {
    /// Among the submitter's own tournaments, higher goes first ([`crate::fair_share`]).
    #[serde(default)]
    priority: i32,
}

async fn submit(
    State(state): State<ApiState>,
    headers: HeaderMap,
    query: Result<Query<SubmitQuery>, QueryRejection>,
    body: Body,
) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    if let Err(error) = limits::PRIORITY.check(query.priority) {
        return Err(ApiError::BadRequest(format!("priority: {}", error.problem())));
    }
    let bytes = request_body::bytes(body).await?;
    let text = std::str::from_utf8(&bytes).map_err(|_| ApiError::BadRequest("the body is not UTF-8".to_owned()))?;
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    let file = if is_json {
        serde_json::from_str::<TournamentFile>(text).map_err(|error| TournamentError::Syntax(error.to_string()))
    } else {
        TournamentFile::from_toml(text)
    };
    let tournament =
        file.and_then(|file| file.resolve(None, state.tournament_limits)).map_err(|error| match error {
            TournamentError::OverLimit { .. } => ApiError::OverLimit(error.to_string()),
            other => ApiError::BadRequest(other.to_string()),
        })?;
    for (index, bot) in tournament.bots.iter().enumerate() {
        may_enter(&state, &caller, &format!("bots[{index}]"), bot).await?;
    }
    let id = tournament.id.clone();
    // The same tournament again makes nothing new: it is not held to the quotas.
    if caller.is_limited() && state.ledger.owner(&id).await?.is_none() {
        check_quotas(&state, &caller, tournament.most_jobs_at_submission()).await?;
    }
    let inserted = state.ledger.insert_tournament_for(tournament, caller.name.clone(), query.priority).await?;
    if inserted.created {
        tracing::info!(tournament = %id, jobs = inserted.jobs, owner = %caller.name, "tournament submitted");
        state.wake_publisher.notify_one();
        state.director.wake();
    }
    let status = if inserted.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(Submitted { id, created: inserted.created, jobs: inserted.jobs })).into_response())
}

/// `Ok` when `caller` may start another tournament queueing `jobs` jobs; 429 naming
/// the quota otherwise.
pub(super) async fn check_quotas(state: &ApiState, caller: &Caller, jobs: u64) -> Result<(), ApiError> {
    let usage = state.ledger.usage(&caller.name).await?;
    let quotas = state.quotas;
    let name = &caller.name;
    Quotas::check(name, "max_running_tournaments", quotas.max_running_tournaments, usage.running_tournaments, 1)
        .and_then(|()| Quotas::check(name, "max_queued_jobs", quotas.max_queued_jobs, usage.queued_jobs, jobs))
        .map_err(|exceeded| ApiError::Quota(exceeded.to_string()))
}

/// The tournaments with their progress, newest first, a page at a time ([`PageQuery`];
/// the key is the id).
async fn list(
    State(state): State<ApiState>,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let limit = page_limit(query.limit)?;
    let page = state
        .ledger
        .tournaments_after(query.after.clone(), limit)
        .await?
        .ok_or_else(|| ApiError::BadRequest(format!("after: no tournament {}", query.after.unwrap_or_default())))?;
    Ok(page_answer("tournaments", page, limit, |tournament| &tournament.id))
}

async fn tournament(State(state): State<ApiState>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let tournament = lookup::tournament(&state, &id).await?;
    let progress = state.ledger.progress(&id).await?.unwrap_or_default();
    let status = state
        .views
        .get(&id, ViewKind::Status, ViewSources::of(&tournament, progress), || async {
            json_bytes(&director::load_status(&state.ledger, &tournament).await?)
        })
        .await?;
    let status: serde_json::Value =
        serde_json::from_slice(&status).map_err(|error| ApiError::Internal(error.to_string()))?;
    let conclusion = state.ledger.conclusion(&id).await?;
    let retired = director::ladder::retired(&tournament);
    let owner = state.ledger.owner(&id).await?;
    let season = state.ledger.season(&id).await?;
    Ok(Json(serde_json::json!({
        "id": tournament.id,
        "name": tournament.name,
        "owner": owner,
        "game": tournament.game,
        "format": tournament.format,
        "games_per_pairing": tournament.games_per_pairing,
        "bots_per_match": tournament.format.bots_per_match(tournament.bots.len()),
        "seed": tournament.seed,
        "rules": tournament.rules,
        "bots": tournament.bots.iter().map(|bot| &bot.name).collect::<Vec<_>>(),
        "maps": tournament.maps.iter().map(|map| &map.name).collect::<Vec<_>>(),
        "retired": retired.iter().map(|&bot| &tournament.bots[bot].name).collect::<Vec<_>>(),
        "progress": progress,
        "finished": progress.finished(),
        "status": status,
        "conclusion": conclusion,
        "season": season,
    }))
    .into_response())
}

/// What an export holds beside the results.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportQuery {
    /// The replays too.
    #[serde(default)]
    replays: bool,
}

async fn export(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    query: Result<Query<ExportQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    admin_only(&caller, "an export")?;
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let tournament = lookup::tournament(&state, &id).await?;
    tracing::info!(tournament = %id, replays = query.replays, by = %caller.name, "export");
    let archive = crate::export::archive(state.ledger.clone(), state.storage.clone(), tournament, query.replays);
    let disposition = format!("attachment; filename=\"{id}.tar\"");
    Ok((
        [(header::CONTENT_TYPE, "application/x-tar".to_owned()), (header::CONTENT_DISPOSITION, disposition)],
        Body::from_stream(archive),
    )
        .into_response())
}

/// `value` as a JSON document, to keep in a view.
fn json_bytes(value: &impl Serialize) -> Result<bytes::Bytes, ApiError> {
    serde_json::to_vec(value).map(bytes::Bytes::from).map_err(|error| ApiError::Internal(error.to_string()))
}

/// A view's JSON document as the answer.
fn json_answer(body: bytes::Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// What `tournament`'s views are made from now.
async fn view_sources(state: &ApiState, tournament: &Tournament) -> Result<ViewSources, ApiError> {
    let progress = state.ledger.progress(&tournament.id).await?.unwrap_or_default();
    Ok(ViewSources::of(tournament, progress))
}

async fn standings(State(state): State<ApiState>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let tournament = lookup::tournament(&state, &id).await?;
    let sources = view_sources(&state, &tournament).await?;
    let body = state
        .views
        .get(&id, ViewKind::Standings, sources, || async {
            json_bytes(&Standings::load(&state.ledger, &tournament).await?)
        })
        .await?;
    Ok(json_answer(body))
}

/// The pairing matrix ([`Pairings`]); meant for tournaments of 2-bot matches (the
/// tournament's `bots_per_match`), where it covers every completed match.
async fn pairings(State(state): State<ApiState>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let tournament = lookup::tournament(&state, &id).await?;
    let sources = view_sources(&state, &tournament).await?;
    let body = state
        .views
        .get(&id, ViewKind::Pairings, sources, || async {
            let completed = state.ledger.completed(&id).await?;
            // A large tournament's matrix takes a while: off the runtime's threads.
            tokio::task::spawn_blocking(move || json_bytes(&Pairings::compute(&tournament, &completed)))
                .await
                .map_err(|error| ApiError::Internal(error.to_string()))?
        })
        .await?;
    Ok(json_answer(body))
}

/// The query of a retry: whether failed jobs are retried too.
#[derive(Debug, Deserialize)]
struct RetryQuery {
    #[serde(default)]
    failed: bool,
}

async fn retry(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(query): Query<RetryQuery>,
) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    may_change_tournament(&state, &caller, &id).await?;
    let retried = state
        .ledger
        .retry(id.clone(), query.failed)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no tournament {id}")))?;
    tracing::info!(tournament = %id, unanswered = retried.unanswered, failed = retried.failed, "retry");
    state.wake_publisher.notify_one();
    Ok(Json(retried).into_response())
}

async fn stop(State(state): State<ApiState>, headers: HeaderMap, Path(id): Path<String>) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    may_change_tournament(&state, &caller, &id).await?;
    let cancelled = state
        .director
        .stop(&id, &caller.name)
        .await?
        .ok_or_else(|| ApiError::Conflict(format!("{id} has ended already")))?;
    tracing::info!(tournament = %id, cancelled, "tournament stopped");
    Ok(Json(serde_json::json!({ "id": id, "cancelled": cancelled })).into_response())
}
