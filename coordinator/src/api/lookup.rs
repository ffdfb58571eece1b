//! What a request names, found, or a 404 naming what was asked for: a tournament, a
//! match, an object in storage.

use farm_proto::ResultEnvelope;
use farm_runtime::storage::StorageError;
use futures_util::stream::BoxStream;

use super::ApiState;
use crate::api_error::ApiError;
use crate::ledger::MatchRow;
use crate::tournament::Tournament;

/// Tournament `id`.
pub(super) async fn tournament(state: &ApiState, id: &str) -> Result<Tournament, ApiError> {
    state.ledger.tournament(id).await?.ok_or_else(|| ApiError::NotFound(format!("no tournament {id}")))
}

/// Match `job_id`: its tournament, its row and its result.
pub(super) async fn found_match(
    state: &ApiState,
    job_id: &str,
) -> Result<(Tournament, MatchRow, Option<ResultEnvelope>), ApiError> {
    let (tournament_id, row, envelope) =
        state.ledger.match_detail(job_id).await?.ok_or_else(|| ApiError::NotFound(format!("no match {job_id}")))?;
    let tournament = tournament(state, &tournament_id).await?;
    Ok((tournament, row, envelope))
}

/// The object at `key`, streamed; a missing one is a 404 that names the key asked for,
/// never the store's own location for it.
pub(super) async fn stream_object(
    state: &ApiState,
    key: &str,
) -> Result<BoxStream<'static, Result<bytes::Bytes, StorageError>>, ApiError> {
    state.storage.stream(key).await.map_err(|error| match error {
        StorageError::NotFound { .. } => ApiError::NotFound(format!("object {key} is not in storage")),
        other => ApiError::from(other),
    })
}
