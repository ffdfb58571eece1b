//! What the operator's monitoring reads: `/metrics` (Prometheus), `/healthz`, and the
//! API's own requests counted and timed ([`track`]).

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use super::ApiState;
use crate::metrics;

/// The routes.
pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/metrics", get(render_metrics))
        .route("/healthz", get(|| async { Json(serde_json::json!({ "ok": true })) }))
}

/// Counts every request by route template and method from a fixed set (never the raw
/// path or method: ids and made-up methods would make the labels unbounded) and times it.
pub(super) async fn track(request: Request, next: Next) -> Response {
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
