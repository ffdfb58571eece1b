//! The HTTP API (axum): tournaments, standings, pairings, matches, replays and logs,
//! users, tokens and webhooks, bots submitted by their authors, plus `/metrics`,
//! `/healthz` and the web pages ([`crate::web`]). Every write needs a bearer token, the
//! operator's or a user's ([`crate::accounts`]): a user changes only what they own, an
//! admin everything. All writes are refused when submissions are
//! [`Submissions::Closed`]. Errors are JSON (`{"error": {"code": ..., "message": ...}}`)
//! that say what was wrong; internal errors are logged and answered with a generic
//! message.
//!
//! Here are the state the handlers share and the router; each group of routes is a
//! module of its own (`*_routes`), on what they share: who is asking and what they may
//! change (`access`), what a request names found or a 404 (`lookup`), bodies read
//! within [`MAX_BODY`] (`request_body`), lists a page at a time (`paging`).

use std::sync::Arc;

use axum::Router;
use axum::middleware;
use farm_proto::limits;
use farm_runtime::storage::Storage;
use tokio::sync::Notify;

use crate::accounts::Quotas;
use crate::api_error::ApiError;
use crate::director::Director;
use crate::ledger::Ledger;
use crate::live::Live;
use crate::observations::Observer;
use crate::tournament::TournamentLimits;
use crate::uploads::Uploads;
use crate::web;
use crate::webhooks::WebhookSettings;

mod access;
mod accounts_routes;
mod bots_routes;
mod ladder_routes;
mod lookup;
mod matches_routes;
mod monitoring;
mod paging;
mod replays_routes;
mod request_body;
mod tournaments_routes;
mod views;
mod workers_routes;

// What the CLI's client sends and reads.
pub use ladder_routes::NewBot;
pub use tournaments_routes::Submitted;
pub use views::Views;

/// Largest tournament body accepted: maps included, 1 MiB is generous.
pub const MAX_BODY: usize = limits::MAX_SUBMISSION_BYTES;

/// What the handlers share.
#[derive(Clone)]
pub struct ApiState {
    /// The ledger.
    pub ledger: Ledger,
    /// Where replays and logs are.
    pub storage: Storage,
    /// Who may submit tournaments.
    pub submissions: Submissions,
    /// Woken when a tournament is submitted.
    pub wake_publisher: Arc<Notify>,
    /// Directs the tournaments scheduled as they go: woken by submissions; stops
    /// tournaments and changes ladders' bots.
    pub director: Arc<Director>,
    /// What a submitted tournament may ask for.
    pub tournament_limits: TournamentLimits,
    /// Re-simulates replays for the observations route, within bounds.
    pub observer: Observer,
    /// The permits of bots' source uploads ([`crate::uploads`]).
    pub uploads: Uploads,
    /// What each user may have going at once.
    pub quotas: Quotas,
    /// Where webhooks may point.
    pub webhooks: WebhookSettings,
    /// Woken when a bot's version is submitted: its build job is to be published.
    pub wake_builds: Arc<Notify>,
    /// The matches watched live, and their viewers.
    pub live: Live,
    /// The tournament views the pages poll, made once for all of them.
    pub views: Views,
}

/// Who may submit tournaments.
#[derive(Debug, Clone)]
pub enum Submissions {
    /// Whoever has this bearer token.
    Token(Arc<str>),
    /// Nobody: the API only shows what a ledger holds (`farm-coordinator view`, and
    /// `run --web`, which plays its own tournament only).
    Closed,
}

/// The routes.
pub fn app(state: ApiState) -> Router {
    Router::new()
        .merge(tournaments_routes::routes())
        .merge(ladder_routes::routes())
        .merge(matches_routes::routes())
        .merge(replays_routes::routes())
        .merge(workers_routes::routes())
        .merge(accounts_routes::routes())
        .merge(bots_routes::routes())
        .merge(monitoring::routes())
        .merge(web::routes())
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .fallback(|| async { ApiError::NotFound("no such route".to_owned()) })
        .layer(middleware::from_fn(monitoring::track))
        .with_state(state)
}
