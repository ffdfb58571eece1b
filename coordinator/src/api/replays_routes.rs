//! The API's routes for what a completed match left in storage.
//!
//! - `GET /api/matches/{job_id}/replay`: its replay, JSON Lines.
//! - `GET /api/matches/{job_id}/observations/{seat}`: what that seat was sent at every
//!   step, the replay re-simulated ([`crate::observations`]).
//! - `GET /api/matches/{job_id}/logs/{seat}`: that seat's bot's stderr.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use farm_engine::replay::ObservationError;
use farm_proto::MatchResult;
use farm_runtime::storage::StorageError;
use futures_util::TryStreamExt;

use super::ApiState;
use super::lookup::{found_match, stream_object};
use crate::api_error::ApiError;
use crate::observations::{Answer, ObserveError};

/// The routes.
pub(super) fn routes() -> axum::Router<ApiState> {
    axum::Router::new()
        .route("/api/matches/{job_id}/replay", get(replay))
        .route("/api/matches/{job_id}/observations/{seat}", get(observations))
        .route("/api/matches/{job_id}/logs/{seat}", get(log))
}

/// The seat a path names.
fn seat_number(seat: &str) -> Result<usize, ApiError> {
    seat.parse().map_err(|_| ApiError::BadRequest(format!("seat: {seat:?} is not a seat number")))
}

/// Where match `job_id`'s replay is; 404 until it has completed.
async fn replay_of(state: &ApiState, job_id: &str) -> Result<String, ApiError> {
    let (_, _, envelope) = found_match(state, job_id).await?;
    let Some(MatchResult::Completed { replay_key, .. }) = envelope.map(|envelope| envelope.result) else {
        return Err(ApiError::NotFound(format!("match {job_id} has no replay (it has not completed)")));
    };
    Ok(replay_key)
}

/// The replay, decompressed as it streams.
async fn replay(State(state): State<ApiState>, Path(job_id): Path<String>) -> Result<Response, ApiError> {
    let replay_key = replay_of(&state, &job_id).await?;
    let compressed = stream_object(&state, &replay_key).await?.map_err(std::io::Error::other);
    // Stored zstd-compressed; served as plain JSON Lines, decompressed as it streams.
    let decoder = async_compression::tokio::bufread::ZstdDecoder::new(tokio_util::io::StreamReader::new(compressed));
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(decoder));
    Ok(([(header::CONTENT_TYPE, "application/jsonl")], body).into_response())
}

/// What one seat was sent at every step of a match, as JSON Lines of
/// [`farm_engine::replay::StepObservation`]: the stored replay re-simulated (the viewer's fog of
/// war), streamed as it goes, within the [`crate::observations::Observer`]'s bounds (429 when busy; cut
/// short when not read whole by its deadline).
async fn observations(
    State(state): State<ApiState>,
    Path((job_id, seat)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let seat = seat_number(&seat)?;
    let replay_key = replay_of(&state, &job_id).await?;
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

/// The seat's bot's stderr, as the worker stored it; builtin bots have none.
async fn log(
    State(state): State<ApiState>,
    Path((job_id, seat)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let seat = seat_number(&seat)?;
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
