//! Request bodies, read whole within [`MAX_BODY`] (413 past it).

use axum::body::Body;
use bytes::Bytes;
use serde::de::DeserializeOwned;

use super::MAX_BODY;
use crate::api_error::ApiError;

/// The body's bytes.
pub(super) async fn bytes(body: Body) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, MAX_BODY).await.map_err(|_| ApiError::TooLarge(MAX_BODY))
}

/// The body as JSON of `T`; 400 saying why when it is not.
pub(super) async fn json<T: DeserializeOwned>(body: Body) -> Result<T, ApiError> {
    serde_json::from_slice(&bytes(body).await?).map_err(|error| ApiError::BadRequest(error.to_string()))
}
