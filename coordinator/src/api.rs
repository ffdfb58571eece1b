//! The HTTP API (axum): tournaments, standings, pairings, matches, replays and logs,
//! users, tokens and webhooks ([`accounts`]), bots submitted by their authors, plus `/metrics`, `/healthz` and the web
//! pages ([`crate::web`]). Every write needs a bearer token, the operator's or a user's
//! ([`crate::accounts`]): a user changes only what they own, an admin everything. All
//! writes are refused when submissions are [`Submissions::Closed`]. Errors are JSON
//! (`{"error": {"code": ..., "message": ...}}`) that say what was wrong; internal
//! errors are logged and answered with a generic message.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Path, Query, Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use axum::{Json, Router};
use farm_engine::replay::ObservationError;
use farm_proto::limits;
use farm_proto::{MatchResult, PlayerStatus};
use farm_runtime::storage::{Storage, StorageError};
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::accounts::Quotas;
use crate::api_error::ApiError;
use crate::director::Director;
use crate::ledger::{JobState, Ledger, MatchFilter, MatchRow};
use crate::metrics;
use crate::observations::{Answer, ObserveError, Observer};
use crate::tournament::{PlannedJob, Tournament, TournamentLimits};
use crate::uploads::Uploads;
use crate::web;
use crate::webhooks::WebhookSettings;
use access::{admin_only, caller};
use lookup::{found_match, stream_object};
use paging::{PageQuery, page_answer, page_limit};

mod access;
mod accounts_routes;
mod bots_routes;
mod ladder_routes;
mod lookup;
mod paging;
mod request_body;
mod tournaments_routes;

// What the CLI's client sends and reads.
pub use ladder_routes::NewBot;
pub use tournaments_routes::Submitted;

/// Largest tournament body accepted: maps included, 1 MiB is generous.
pub const MAX_BODY: usize = limits::MAX_SUBMISSION_BYTES;

/// The highest priority a submission may ask for, and minus the lowest
/// ([`limits::PRIORITY`]).
pub const MAX_PRIORITY: i32 = limits::PRIORITY.range.max.expect("priorities have a ceiling");

/// What the handlers share.
#[derive(Clone)]
pub struct ApiState {
    /// The ledger.
    pub ledger: Ledger,
    /// Where replays and logs are.
    pub storage: Storage,
    /// Who may submit tournaments.
    pub submissions: Submissions,
    /// Woken when a tournament is submitted.
    pub wake_publisher: Arc<Notify>,
    /// Directs the tournaments scheduled as they go: woken by submissions; stops
    /// tournaments and changes ladders' bots.
    pub director: Arc<Director>,
    /// What a submitted tournament may ask for.
    pub tournament_limits: TournamentLimits,
    /// Re-simulates replays for the observations route, within bounds.
    pub observer: Observer,
    /// The permits of bots' source uploads ([`crate::uploads`]).
    pub uploads: Uploads,
    /// What each user may have going at once.
    pub quotas: Quotas,
    /// Where webhooks may point.
    pub webhooks: WebhookSettings,
    /// Woken when a bot's version is submitted: its build job is to be published.
    pub wake_builds: Arc<Notify>,
}

/// Who may submit tournaments.
#[derive(Debug, Clone)]
pub enum Submissions {
    /// Whoever has this bearer token.
    Token(Arc<str>),
    /// Nobody: the API only shows what a ledger holds (`farm-coordinator view`, and
    /// `run --web`, which plays its own tournament only).
    Closed,
}

/// The routes.
pub fn app(state: ApiState) -> Router {
    Router::new()
        .route("/api/tournaments/{id}/matches", get(matches))
        .route("/api/matches/{job_id}", get(match_detail))
        .route("/api/matches/{job_id}/replay", get(replay))
        .route("/api/matches/{job_id}/observations/{seat}", get(observations))
        .route("/api/matches/{job_id}/logs/{seat}", get(log))
        .route("/api/workers", get(workers))
        .route("/api/workers/{worker_id}/quarantine", delete(release_worker))
        .merge(tournaments_routes::routes())
        .merge(ladder_routes::routes())
        .merge(accounts_routes::routes())
        .merge(bots_routes::routes())
        .route("/metrics", get(render_metrics))
        .route("/healthz", get(|| async { Json(serde_json::json!({ "ok": true })) }))
        .merge(web::routes())
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .fallback(|| async { ApiError::NotFound("no such route".to_owned()) })
        .layer(middleware::from_fn(track))
        .with_state(state)
}

/// Counts every request by route template and method from a fixed set (never the raw
/// path or method: ids and made-up methods would make the labels unbounded) and times it.
async fn track(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let method = metrics::method_label(request.method());
    let started = Instant::now();
    let response = next.run(request).await;
    metrics::API_SECONDS.with_label_values(&[&route]).observe(started.elapsed().as_secs_f64());
    metrics::API_REQUESTS.with_label_values(&[&route, method, response.status().as_str()]).inc();
    response
}

async fn render_metrics() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], metrics::render())
}

/// Filters of the match list.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatchQuery {
    bot: Option<String>,
    status: Option<String>,
    map: Option<String>,
    failures: Option<bool>,
    limit: Option<u32>,
    offset: Option<u64>,
}

#[derive(Serialize)]
struct MatchView {
    job_id: String,
    position: u64,
    bots: Vec<String>,
    map: String,
    repetition: u32,
    seed: u64,
    state: JobState,
    attempts: u32,
    reason: Option<String>,
    /// Null until the match completed.
    outcomes: Option<Vec<OutcomeView>>,
}

/// One seat's outcome in a completed match.
#[derive(Serialize)]
struct OutcomeView {
    seat: usize,
    /// Null for a seat the game filled itself.
    bot: Option<String>,
    score: i64,
    rank: u32,
    status: PlayerStatus,
    timeouts: u64,
    /// Where its stderr log is: external bots have one, builtins and fillers none.
    log: Option<String>,
}

fn view(tournament: &Tournament, row: MatchRow) -> MatchView {
    let outcomes = (row.state == JobState::Done).then(|| {
        row.outcomes
            .iter()
            .enumerate()
            .map(|(seat, outcome)| {
                let bot = outcome.bot.and_then(|bot| tournament.bots.get(bot));
                OutcomeView {
                    seat,
                    bot: bot.map(|bot| bot.name.clone()),
                    score: outcome.score,
                    rank: outcome.rank,
                    status: outcome.status,
                    timeouts: outcome.timeouts,
                    log: bot
                        .filter(|bot| bot.builtin.is_none())
                        .map(|_| format!("/api/matches/{}/logs/{seat}", row.job_id)),
                }
            })
            .collect()
    });
    MatchView {
        outcomes,
        bots: row.seats.iter().filter_map(|&bot| tournament.bots.get(bot)).map(|bot| bot.name.clone()).collect(),
        map: tournament.maps.get(row.map).map(|map| map.name.clone()).unwrap_or_default(),
        job_id: row.job_id,
        position: row.position,
        repetition: row.repetition,
        seed: row.seed,
        state: row.state,
        attempts: row.attempts,
        reason: row.reason,
    }
}

async fn matches(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    query: Result<Query<MatchQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let tournament = lookup::tournament(&state, &id).await?;
    let bot = match &query.bot {
        Some(name) => Some(
            tournament
                .bots
                .iter()
                .position(|bot| &bot.name == name)
                .ok_or_else(|| ApiError::BadRequest(format!("bot: no bot named {name:?} in {id}")))?,
        ),
        None => None,
    };
    let state_filter = match &query.status {
        Some(name) => Some(JobState::from_name(name).ok_or_else(|| {
            ApiError::BadRequest(format!("status: {name:?} is not one of pending, running, done, failed"))
        })?),
        None => None,
    };
    let map = match &query.map {
        Some(name) => Some(
            tournament
                .maps
                .iter()
                .position(|map| &map.name == name)
                .ok_or_else(|| ApiError::BadRequest(format!("map: no map named {name:?} in {id}")))?,
        ),
        None => None,
    };
    let limit = page_limit(query.limit)?;
    let filter = MatchFilter {
        bot,
        state: state_filter,
        map,
        failures: query.failures.unwrap_or(false),
        limit,
        offset: query.offset.unwrap_or(0),
    };
    let total = state.ledger.count_matches(&id, filter.clone()).await?;
    let rows = state.ledger.matches(&id, filter).await?;
    let views: Vec<MatchView> = rows.into_iter().map(|row| view(&tournament, row)).collect();
    Ok(Json(serde_json::json!({ "matches": views, "total": total })).into_response())
}

/// A match: its row, the job the ledger schedules for it (`job`, with bots launched as
/// this farm launches them; null if they cannot be: `farm-worker reproduce` plays this,
/// not the worker's word for it), its worker, audit and result.
async fn match_detail(State(state): State<ApiState>, Path(job_id): Path<String>) -> Result<Response, ApiError> {
    let (tournament, row, envelope) = found_match(&state, &job_id).await?;
    let audit = state.ledger.audit_of(&job_id).await?;
    let planned = PlannedJob {
        position: row.position,
        job_id: row.job_id.clone(),
        seats: row.seats.clone(),
        map: row.map,
        repetition: row.repetition,
        seed: row.seed,
    };
    let job = tournament.check_launchable(state.director.launch()).ok().map(|bots| tournament.job(&planned, &bots));
    Ok(Json(serde_json::json!({
        "tournament_id": tournament.id,
        "job": job,
        "match": view(&tournament, row),
        "worker_id": envelope.as_ref().map(|envelope| &envelope.worker_id),
        "instance": envelope.as_ref().and_then(|envelope| envelope.instance.as_ref()),
        "audit": audit,
        "result": envelope.map(|envelope| envelope.result),
    }))
    .into_response())
}

/// Every worker's record (matches, bot failures by status, faults, audits,
/// mismatches, and why it is quarantined, if it is), a page at a time ([`PageQuery`];
/// by id, the key).
async fn workers(
    State(state): State<ApiState>,
    query: Result<Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let limit = page_limit(query.limit)?;
    let page = state.ledger.workers_after(query.after.unwrap_or_default(), limit).await?;
    Ok(page_answer("workers", page, limit, |worker| &worker.worker_id))
}

/// Releases a quarantined worker (its record starts over).
async fn release_worker(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(worker_id): Path<String>,
) -> Result<Response, ApiError> {
    admin_only(&caller(&headers, &state).await?, "releasing a worker")?;
    if !state.ledger.release_worker(&worker_id).await? {
        return Err(ApiError::NotFound(format!("worker {worker_id} is not quarantined")));
    }
    tracing::info!(worker = %worker_id, "released from quarantine");
    Ok(Json(serde_json::json!({ "released": worker_id })).into_response())
}

async fn replay(State(state): State<ApiState>, Path(job_id): Path<String>) -> Result<Response, ApiError> {
    let (_, _, envelope) = found_match(&state, &job_id).await?;
    let Some(MatchResult::Completed { replay_key, .. }) = envelope.map(|envelope| envelope.result) else {
        return Err(ApiError::NotFound(format!("match {job_id} has no replay (it has not completed)")));
    };
    let compressed = stream_object(&state, &replay_key).await?.map_err(std::io::Error::other);
    // Stored zstd-compressed; served as plain JSON Lines, decompressed as it streams.
    let decoder = async_compression::tokio::bufread::ZstdDecoder::new(tokio_util::io::StreamReader::new(compressed));
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(decoder));
    Ok(([(header::CONTENT_TYPE, "application/jsonl")], body).into_response())
}

/// What one seat was sent at every step of a match, as JSON Lines of
/// [`farm_engine::replay::StepObservation`]: the stored replay re-simulated (the viewer's fog of
/// war), streamed as it goes, within the [`Observer`]'s bounds (429 when busy; cut
/// short when not read whole by its deadline).
async fn observations(
    State(state): State<ApiState>,
    Path((job_id, seat)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let seat: usize = seat.parse().map_err(|_| ApiError::BadRequest(format!("seat: {seat:?} is not a seat number")))?;
    let (_, _, envelope) = found_match(&state, &job_id).await?;
    let Some(MatchResult::Completed { replay_key, .. }) = envelope.map(|envelope| envelope.result) else {
        return Err(ApiError::NotFound(format!("match {job_id} has no replay (it has not completed)")));
    };
    let answer = state.observer.observe(&replay_key, seat, state.storage.stream(&replay_key)).await.map_err(
        |error| match error {
            ObserveError::Busy(_) => ApiError::Busy(error.to_string()),
            ObserveError::Replay(ObservationError::NoSeat { .. }) => {
                ApiError::NotFound(format!("match {job_id} has no seat {seat}"))
            }
            ObserveError::Storage(StorageError::NotFound { .. }) => {
                ApiError::NotFound(format!("object {replay_key} is not in storage"))
            }
            other => ApiError::Internal(format!("replay {replay_key}: {other}")),
        },
    )?;
    let body = match answer {
        Answer::Whole(bytes) => Body::from(bytes),
        Answer::Streamed(lines) => Body::from_stream(lines),
    };
    Ok(([(header::CONTENT_TYPE, "application/jsonl")], body).into_response())
}

async fn log(
    State(state): State<ApiState>,
    Path((job_id, seat)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let seat: usize = seat.parse().map_err(|_| ApiError::BadRequest(format!("seat: {seat:?} is not a seat number")))?;
    let (_, _, envelope) = found_match(&state, &job_id).await?;
    let Some(MatchResult::Completed { players, .. }) = envelope.map(|envelope| envelope.result) else {
        return Err(ApiError::NotFound(format!("match {job_id} has no logs (it has not completed)")));
    };
    let player = players.get(seat).ok_or_else(|| ApiError::NotFound(format!("match {job_id} has no seat {seat}")))?;
    let key = player
        .log_key
        .clone()
        .ok_or_else(|| ApiError::NotFound(format!("seat {seat} of match {job_id} is a builtin bot: it has no log")))?;
    let stream = stream_object(&state, &key).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], Body::from_stream(stream)).into_response())
}
