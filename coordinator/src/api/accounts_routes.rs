//! The API's routes for users, their tokens and their webhooks.
//!
//! - `POST /api/users` (admins): `{"name", "admin"?, "share"?}`; answers the user and
//!   their first token, shown this once.
//! - `GET /api/users` (admins); `GET /api/me`: who the token is, what they have going
//!   and their quotas.
//! - `PUT /api/users/{name}/share` (admins): `{"share"}`.
//! - `POST /api/users/{name}/tokens` (admins, or the user): another token;
//!   `DELETE /api/tokens/{id}` (admins, or the token's user) revokes one.
//! - `POST /api/webhooks`: `{"url", "events"?}`; answers the webhook and the secret its
//!   deliveries are signed with, shown this once. `GET /api/webhooks` (the caller's),
//!   `DELETE /api/webhooks/{id}` and `GET /api/webhooks/{id}/deliveries` (its owner or
//!   admins).

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use serde::Deserialize;

use super::access::{admin_only, caller, owner_or_admin};
use super::{ApiState, request_body};
use crate::accounts::{self, Caller, NewToken, Quotas};
use crate::api_error::ApiError;
use crate::ledger::{NewUser, NewWebhook};
use crate::webhooks;
use farm_proto::limits;

/// The most deliveries one history page shows.
const MAX_DELIVERIES: u32 = 500;

/// The routes.
pub fn routes() -> axum::Router<ApiState> {
    axum::Router::new()
        .route("/api/users", post(add_user).get(users))
        .route("/api/me", get(me))
        .route("/api/users/{name}/share", put(set_share))
        .route("/api/users/{name}/tokens", post(add_token))
        .route("/api/tokens/{id}", delete(revoke_token))
        .route("/api/webhooks", post(add_webhook).get(list_webhooks))
        .route("/api/webhooks/{id}", delete(remove_webhook))
        .route("/api/webhooks/{id}/deliveries", get(deliveries))
}

fn new_token() -> Result<NewToken, ApiError> {
    NewToken::generate().map_err(|error| ApiError::Internal(error.to_string()))
}

fn check_share(share: u32) -> Result<u32, ApiError> {
    limits::SHARE.check(share).map_err(|error| ApiError::BadRequest(format!("share: {}", error.problem())))
}

/// A user to make.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserRequest {
    name: String,
    #[serde(default)]
    admin: bool,
    #[serde(default = "one")]
    share: u32,
}

fn one() -> u32 {
    1
}

async fn add_user(State(state): State<ApiState>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    admin_only(&caller, "making users")?;
    let request: UserRequest = request_body::json(body).await?;
    accounts::check_name(&request.name).map_err(|error| ApiError::BadRequest(error.to_string()))?;
    let share = check_share(request.share)?;
    let token = new_token()?;
    let (secret, token_id) = (token.secret.clone(), token.id.clone());
    let user = NewUser { name: request.name.clone(), admin: request.admin, share, created_by: caller.name.clone() };
    if !state.ledger.add_user(user, token).await? {
        return Err(ApiError::Conflict(format!("user {} exists already", request.name)));
    }
    tracing::info!(user = %request.name, admin = request.admin, share, by = %caller.name, "user made");
    let answer = serde_json::json!({
        "name": request.name,
        "admin": request.admin,
        "share": share,
        "token": secret,
        "token_id": token_id,
    });
    Ok((StatusCode::CREATED, Json(answer)).into_response())
}

async fn users(State(state): State<ApiState>, headers: HeaderMap) -> Result<Response, ApiError> {
    admin_only(&caller(&headers, &state).await?, "listing users")?;
    Ok(Json(serde_json::json!({ "users": state.ledger.users(None).await? })).into_response())
}

async fn me(State(state): State<ApiState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    let user = state.ledger.users(Some(caller.name.clone())).await?.into_iter().next();
    let usage = state.ledger.usage(&caller.name).await?;
    let quotas: Option<Quotas> = caller.is_limited().then_some(state.quotas);
    Ok(Json(serde_json::json!({
        "name": caller.name,
        "admin": caller.admin,
        "share": user.as_ref().map_or(1, |user| user.share),
        "tokens": user.map(|user| user.tokens).unwrap_or_default(),
        "usage": usage,
        "quotas": quotas,
    }))
    .into_response())
}

/// A user's new share.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShareRequest {
    share: u32,
}

async fn set_share(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    admin_only(&caller(&headers, &state).await?, "setting shares")?;
    let share = check_share(request_body::json::<ShareRequest>(body).await?.share)?;
    if !state.ledger.set_share(&name, share).await? {
        return Err(ApiError::NotFound(format!("no user {name}")));
    }
    Ok(Json(serde_json::json!({ "name": name, "share": share })).into_response())
}

async fn add_token(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    owner_or_admin(&caller, &format!("a token of {name}"), &name)?;
    if caller.is_limited() {
        let used = state.ledger.usage(&name).await?.tokens;
        Quotas::check(&name, "max_tokens", state.quotas.max_tokens, used, 1)
            .map_err(|exceeded| ApiError::Quota(exceeded.to_string()))?;
    }
    let token = new_token()?;
    let (secret, token_id) = (token.secret.clone(), token.id.clone());
    if !state.ledger.add_token(&name, token).await? {
        return Err(ApiError::NotFound(format!("no user {name}")));
    }
    tracing::info!(user = %name, token = %token_id, by = %caller.name, "token made");
    Ok((StatusCode::CREATED, Json(serde_json::json!({ "name": name, "token": secret, "token_id": token_id })))
        .into_response())
}

async fn revoke_token(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    let owner = state.ledger.token_owner(&id).await?.ok_or_else(|| ApiError::NotFound(format!("no token {id}")))?;
    owner_or_admin(&caller, &format!("token {id}"), &owner)?;
    if !state.ledger.revoke_token(&id).await? {
        return Err(ApiError::Conflict(format!("token {id} is revoked already")));
    }
    tracing::info!(user = %owner, token = %id, by = %caller.name, "token revoked");
    Ok(Json(serde_json::json!({ "revoked": id, "user": owner })).into_response())
}

/// A webhook to register.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookRequest {
    url: String,
    #[serde(default)]
    events: Option<Vec<String>>,
}

async fn add_webhook(State(state): State<ApiState>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    let request: WebhookRequest = request_body::json(body).await?;
    let url =
        webhooks::check_url(&request.url, &state.webhooks).map_err(|error| ApiError::BadRequest(error.to_string()))?;
    let kinds = webhooks::check_kinds(request.events).map_err(|error| ApiError::BadRequest(error.to_string()))?;
    if caller.is_limited() {
        let used = state.ledger.usage(&caller.name).await?.webhooks;
        Quotas::check(&caller.name, "max_webhooks", state.quotas.max_webhooks, used, 1)
            .map_err(|exceeded| ApiError::Quota(exceeded.to_string()))?;
    }
    let random =
        |what: &str| accounts::random_hex::<16>().map_err(|error| ApiError::Internal(format!("{what}: {error}")));
    let id = format!("wh-{}", &random("webhook id")?[..16]);
    let secret = format!("whsec_{}", random("webhook secret")?);
    let webhook = NewWebhook {
        id: id.clone(),
        owner: caller.name.clone(),
        url: url.to_string(),
        kinds: kinds.clone(),
        secret: secret.clone(),
    };
    state.ledger.add_webhook(webhook).await?;
    tracing::info!(webhook = %id, owner = %caller.name, "webhook registered");
    let answer = serde_json::json!({
        "id": id,
        "owner": caller.name,
        "url": url.to_string(),
        "events": kinds,
        "secret": secret,
    });
    Ok((StatusCode::CREATED, Json(answer)).into_response())
}

async fn list_webhooks(State(state): State<ApiState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    Ok(Json(serde_json::json!({ "webhooks": state.ledger.webhooks(Some(caller.name)).await? })).into_response())
}

/// `Ok` when `caller` may see or change webhook `id`: its owner, or an admin.
async fn may_change_webhook(state: &ApiState, caller: &Caller, id: &str) -> Result<(), ApiError> {
    let owner = state.ledger.webhook_owner(id).await?.ok_or_else(|| ApiError::NotFound(format!("no webhook {id}")))?;
    if caller.may_change(&owner) {
        Ok(())
    } else {
        Err(ApiError::Denied(format!("webhook {id} is {owner}'s; {} may not see or change it", caller.name)))
    }
}

async fn remove_webhook(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    may_change_webhook(&state, &caller, &id).await?;
    state.ledger.remove_webhook(&id).await?;
    tracing::info!(webhook = %id, by = %caller.name, "webhook removed");
    Ok(Json(serde_json::json!({ "removed": id })).into_response())
}

/// The query of a delivery history.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeliveriesQuery {
    limit: Option<u32>,
}

async fn deliveries(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    query: Result<Query<DeliveriesQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    may_change_webhook(&state, &caller, &id).await?;
    let limit = query.limit.unwrap_or(100);
    if limit == 0 || limit > MAX_DELIVERIES {
        return Err(ApiError::BadRequest(format!("limit: must be 1 to {MAX_DELIVERIES}")));
    }
    Ok(Json(serde_json::json!({ "deliveries": state.ledger.deliveries(&id, limit).await? })).into_response())
}
