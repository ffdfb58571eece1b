//! The error answers of the API and the web pages: a status and a JSON body
//! `{"error": {"code", "message"}}`, the same for every route.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use farm_runtime::storage::StorageError;
use serde::Serialize;

use crate::ledger::LedgerError;

/// An error answer.
#[derive(Debug)]
pub enum ApiError {
    /// The request is wrong; the message says how.
    BadRequest(String),
    /// No bearer token.
    Unauthorized,
    /// A wrong bearer token.
    Forbidden,
    /// A valid token whose user may not do this (not theirs, or for admins only); the
    /// message says why.
    Denied(String),
    /// A user's quota would be passed ([`crate::accounts::Quotas`]); the message names it.
    Quota(String),
    /// A write to a read-only coordinator (`farm-coordinator view`, `run --web`), which
    /// takes no submissions.
    ReadOnly,
    /// No such thing; the message names it.
    NotFound(String),
    /// The route exists, but not with this method.
    MethodNotAllowed,
    /// The request cannot be done in the thing's present state (a bot retired
    /// already, a tournament that is not a ladder); the message says why.
    Conflict(String),
    /// The body is over this many bytes ([`farm_proto::limits::MAX_SUBMISSION_BYTES`]).
    TooLarge(usize),
    /// The body arrived too slowly ([`crate::uploads::UploadLimits`]); the message
    /// names the limit.
    TooSlow(String),
    /// A well-formed request for more than this farm allows; the message names the
    /// key and the ceiling.
    OverLimit(String),
    /// Too many requests of this kind are being answered; the message says which.
    Busy(String),
    /// Something broke on our side; logged, not shown.
    Internal(String),
}

impl From<LedgerError> for ApiError {
    fn from(error: LedgerError) -> Self {
        ApiError::Internal(error.to_string())
    }
}

impl From<StorageError> for ApiError {
    fn from(error: StorageError) -> Self {
        match error {
            // The store's own key is its location: for a local store, a path on this
            // machine. Handlers name the object instead.
            StorageError::NotFound { .. } => ApiError::NotFound("the object is not in storage".to_owned()),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

#[derive(Serialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Serialize)]
struct ErrorDetail {
    code: &'static str,
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, message) = match self {
            ApiError::BadRequest(message) => (StatusCode::BAD_REQUEST, "bad_request", message),
            ApiError::Unauthorized => {
                (StatusCode::UNAUTHORIZED, "unauthorized", "this needs an Authorization: Bearer token".to_owned())
            }
            ApiError::Forbidden => (StatusCode::FORBIDDEN, "forbidden", "the bearer token is not valid".to_owned()),
            ApiError::Denied(message) => (StatusCode::FORBIDDEN, "denied", message),
            ApiError::Quota(message) => (StatusCode::TOO_MANY_REQUESTS, "quota", message),
            ApiError::ReadOnly => (
                StatusCode::FORBIDDEN,
                "read_only",
                "this coordinator only shows a finished or running `farm-coordinator run`: it takes no submissions \
                 (submit to a `farm-coordinator serve`)"
                    .to_owned(),
            ),
            ApiError::NotFound(message) => (StatusCode::NOT_FOUND, "not_found", message),
            ApiError::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this route does not take that method (the Allow header lists those it takes)".to_owned(),
            ),
            ApiError::Conflict(message) => (StatusCode::CONFLICT, "conflict", message),
            ApiError::TooLarge(limit) => {
                (StatusCode::PAYLOAD_TOO_LARGE, "too_large", format!("the body is over {limit} bytes"))
            }
            ApiError::TooSlow(message) => (StatusCode::REQUEST_TIMEOUT, "too_slow", message),
            ApiError::OverLimit(message) => (StatusCode::UNPROCESSABLE_ENTITY, "over_limit", message),
            ApiError::Busy(message) => (StatusCode::TOO_MANY_REQUESTS, "busy", message),
            ApiError::Internal(detail) => {
                tracing::error!(%detail, "API request failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "internal error; the coordinator's log has the details".to_owned(),
                )
            }
        };
        let mut response = (status, Json(ErrorBody { error: ErrorDetail { code, message } })).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        }
        response
    }
}
