//! The API's routes for the workers' records ([`crate::audits`]).
//!
//! - `GET /api/workers`: every worker's record, a page at a time.
//! - `DELETE /api/workers/{worker_id}/quarantine` (admins): a quarantined worker
//!   released.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use axum::{Json, Router};

use super::ApiState;
use super::access::{admin_only, caller};
use super::paging::{PageQuery, page_answer, page_limit};
use crate::api_error::ApiError;

/// The routes.
pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/api/workers", get(workers))
        .route("/api/workers/{worker_id}/quarantine", delete(release_worker))
}

/// Every worker's record (matches, bot failures by status, faults, audits,
/// mismatches, and why it is quarantined, if it is), a page at a time ([`PageQuery`];
/// by id, the key).
async fn workers(
    State(state): State<ApiState>,
    query: Result<Query<PageQuery>, QueryRejection>,
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
