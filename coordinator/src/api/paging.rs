//! Lists read a page at a time (`/api/tournaments`, `/api/workers`, a tournament's
//! matches): how long a page is, where the next one starts.

use axum::Json;
use axum::response::{IntoResponse, Response};
use farm_proto::limits;
use serde::{Deserialize, Serialize};

use crate::api_error::ApiError;

/// `limit`, the length of a page of a list: within [`limits::PAGE`], its default if
/// not given.
pub(super) fn page_limit(limit: Option<u32>) -> Result<u32, ApiError> {
    let limit = limit.unwrap_or(limits::PAGE.default);
    if limits::PAGE.check(limit).is_ok() {
        Ok(limit)
    } else {
        Err(ApiError::BadRequest(format!("limit: {}, not {limit}", limits::PAGE.range.words())))
    }
}

/// A page of a list read in a fixed order (`/api/tournaments`, `/api/workers`):
/// `after` the key the previous page's `next` gave, and its [`page_limit`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PageQuery {
    pub(super) after: Option<String>,
    pub(super) limit: Option<u32>,
}

/// The answer of a page: `{"<name>": [...], "next": ...}`, where `next` is the key of
/// the last item of a full page, for the next page to come `after` (null on the last).
pub(super) fn page_answer<T: Serialize>(name: &str, page: Vec<T>, limit: u32, key: impl Fn(&T) -> &str) -> Response {
    let next = (page.len() == limit as usize).then(|| page.last().map(|last| key(last).to_owned())).flatten();
    Json(serde_json::json!({ name: page, "next": next })).into_response()
}
