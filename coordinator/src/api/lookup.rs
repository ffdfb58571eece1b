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

/// A slot for a request that reads a whole ladder (a rating history, a head-to-head
/// record): at most [`farm_proto::limits::LADDER_READS`] at once, shared by every
/// caller; one more is 429 `busy`, naming the limit.
pub(super) fn ladder_read_slot() -> Result<tokio::sync::SemaphorePermit<'static>, ApiError> {
    static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(farm_proto::limits::LADDER_READS);
    SLOTS.try_acquire().map_err(|_| {
        ApiError::Busy(format!(
            "{} rating histories or head-to-head records are being answered already (LADDER_READS); try again shortly",
            farm_proto::limits::LADDER_READS
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_ladder_reads_are_bounded_and_say_so() {
        let held: Vec<_> = (0..farm_proto::limits::LADDER_READS).map(|_| ladder_read_slot().expect("a slot")).collect();
        let refused = ladder_read_slot().expect_err("every slot is held");
        assert!(matches!(&refused, ApiError::Busy(message) if message.contains("LADDER_READS")), "{refused:?}");
        drop(held);
        assert!(ladder_read_slot().is_ok(), "a slot given back is taken again");
    }
}
