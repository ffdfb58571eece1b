//! The API's routes for matches as the ledger has them.
//!
//! - `GET /api/tournaments/{id}/matches?bot=&status=&map=&failures=&limit=&offset=`:
//!   a tournament's matches in schedule order, filtered, a page at a time, with
//!   `total`.
//! - `GET /api/matches/{job_id}`: one, with the job that plays it again, its worker,
//!   audit and result.
//! - `GET /api/matches/{job_id}/live`: a match not yet over, as it is played
//!   ([`crate::live`]): Server-Sent Events, one per replay line (`id`: its number, from
//!   0), `skipped` (lines a slow viewer missed), `restart` (a new attempt starts over),
//!   then `end`. 409 once the match is over (its replay is there instead), 429 past a
//!   `[live]` limit.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use farm_proto::{CrashReport, MatchResult, PlayerStatus};
use serde::{Deserialize, Serialize};

use super::paging::page_limit;
use super::{ApiState, lookup};
use crate::api_error::ApiError;
use crate::ledger::{JobState, MatchFilter, MatchRow};
use crate::tournament::{PlannedJob, Tournament};

/// The routes.
pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/api/tournaments/{id}/matches", get(matches))
        .route("/api/matches/{job_id}", get(match_detail))
        .route("/api/matches/{job_id}/live", get(live))
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

/// A match as the list and the detail show it.
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
    /// Why it failed, when it did: a reason in one line, its stderr's end, the request
    /// it did not answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    crash: Option<CrashReport>,
}

/// `row` as a [`MatchView`]: its bots and map by name, its outcomes once it is done,
/// with each failed seat's crash report from its `result`.
fn view(tournament: &Tournament, row: MatchRow, result: Option<&MatchResult>) -> MatchView {
    let players = match result {
        Some(MatchResult::Completed { players, .. }) => &players[..],
        _ => &[],
    };
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
                    crash: players.iter().find(|player| player.seat == seat).and_then(|player| player.crash.clone()),
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

/// The index of the entry of `entries` called `name` (by `name_of`), for the filter
/// `what`; a 400 naming both when tournament `id` has none.
fn named<T>(entries: &[T], name_of: impl Fn(&T) -> &str, name: &str, what: &str, id: &str) -> Result<usize, ApiError> {
    entries
        .iter()
        .position(|entry| name_of(entry) == name)
        .ok_or_else(|| ApiError::BadRequest(format!("{what}: no {what} named {name:?} in {id}")))
}

/// A tournament's matches ([`MatchQuery`]) and how many there are in all.
async fn matches(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    query: Result<Query<MatchQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let tournament = lookup::tournament(&state, &id).await?;
    let bot =
        query.bot.as_deref().map(|name| named(&tournament.bots, |bot| &bot.name, name, "bot", &id)).transpose()?;
    let state_filter = match &query.status {
        Some(name) => Some(JobState::from_name(name).ok_or_else(|| {
            ApiError::BadRequest(format!("status: {name:?} is not one of pending, running, done, failed"))
        })?),
        None => None,
    };
    let map =
        query.map.as_deref().map(|name| named(&tournament.maps, |map| &map.name, name, "map", &id)).transpose()?;
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
    // A failed seat's report is in its result document: read for those rows alone, at once.
    let failed: Vec<String> = rows
        .iter()
        .filter(|row| row.outcomes.iter().any(|outcome| outcome.status != PlayerStatus::Ok))
        .map(|row| row.job_id.clone())
        .collect();
    let results: std::collections::HashMap<String, farm_proto::ResultEnvelope> =
        state.ledger.results_of(failed).await?.into_iter().collect();
    let views: Vec<MatchView> = rows
        .into_iter()
        .map(|row| {
            let result = results.get(&row.job_id).map(|envelope| &envelope.result);
            view(&tournament, row, result)
        })
        .collect();
    Ok(Json(serde_json::json!({ "matches": views, "total": total })).into_response())
}

/// A match: its row, the job the ledger schedules for it (`job`, with bots launched as
/// this farm launches them; null if they cannot be: `farm-worker reproduce` plays this,
/// not the worker's word for it), its worker, audit and result.
async fn match_detail(State(state): State<ApiState>, Path(job_id): Path<String>) -> Result<Response, ApiError> {
    let (tournament, row, envelope) = lookup::found_match(&state, &job_id).await?;
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
        "match": view(&tournament, row, envelope.as_ref().map(|envelope| &envelope.result)),
        "worker_id": envelope.as_ref().map(|envelope| &envelope.worker_id),
        "instance": envelope.as_ref().and_then(|envelope| envelope.instance.as_ref()),
        "audit": audit,
        "result": envelope.map(|envelope| envelope.result),
    }))
    .into_response())
}

/// The match as it is played, for as long as the viewer stays; a browser reconnecting
/// (`Last-Event-ID`) goes on after the last line it had.
async fn live(
    State(state): State<ApiState>,
    Path(job_id): Path<String>,
    headers: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    let (tournament, row, _) = lookup::found_match(&state, &job_id).await?;
    if !matches!(row.state, JobState::Pending | JobState::Running) {
        return Err(ApiError::Conflict(format!(
            "match {job_id} is {}: it is no longer played live (its replay, if it has one, is at \
             /api/matches/{job_id}/replay)",
            row.state.name()
        )));
    }
    let delay = std::time::Duration::from_secs(tournament.live_delay_secs);
    let from = headers
        .get("last-event-id")
        .and_then(|id| id.to_str().ok()?.parse::<u64>().ok())
        .map_or(0, |had| had.saturating_add(1));
    let viewer = state.live.join(&job_id, from, delay).map_err(|full| ApiError::Busy(full.to_string()))?;
    Ok(viewer.into_sse().into_response())
}
