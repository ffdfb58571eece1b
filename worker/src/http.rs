//! The worker's own HTTP endpoint: `/metrics` for Prometheus and `/healthz`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::metrics;
use crate::quarantine::Quarantine;

/// What `/healthz` reports.
#[derive(Debug, Default)]
pub struct Health {
    /// Whether the worker is connected to RabbitMQ and consuming.
    pub consuming: AtomicBool,
    /// Whether the coordinator has quarantined it, and why.
    pub quarantine: Quarantine,
}

/// The routes.
pub fn app(health: Arc<Health>) -> Router {
    Router::new().route("/metrics", get(render_metrics)).route("/healthz", get(healthz)).with_state(health)
}

async fn render_metrics() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], metrics::render())
}

/// 200 while consuming; 503 while (re)connecting to the broker, or once quarantined
/// (with why), so that an orchestrator sees a worker that cannot take jobs.
async fn healthz(State(health): State<Arc<Health>>) -> impl IntoResponse {
    let consuming = health.consuming.load(Ordering::Relaxed);
    let quarantined = health.quarantine.reason();
    let status = if consuming && quarantined.is_none() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let mut body = serde_json::json!({ "consuming": consuming });
    if let Some(reason) = quarantined {
        body["quarantined"] = reason.into();
    }
    (status, axum::Json(body))
}
