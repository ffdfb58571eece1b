//! The API's routes for bots submitted by their authors ([`crate::versions`]).
//!
//! - `POST /api/bots?name=N&game=G[&ladder=ID]`: the body is the bot's source, a tar
//!   archive (gzipped or not) in one of the layouts ([`farm_worker::build::LAYOUTS`]:
//!   `bot.py`, `bot.js`, `Cargo.toml`, `go.mod`, `CMakeLists.txt` or `Makefile`,
//!   `src/**/*.java`). It becomes the bot's next version, built on a worker, validated, then
//!   entered in ladder `ID` if given. A new name makes a bot owned by the caller; an
//!   existing one is changed only by its owner or an admin. Answers 201 with the
//!   version; 400 naming what is wrong with the archive; 413 over its size; 408 when it
//!   arrives slower than `uploads.min_bytes_per_sec` or not within
//!   `uploads.deadline_secs`; 429 over the uploader's `max_submissions_per_day`, or
//!   `busy` while they have `uploads.per_user` uploads going or everyone
//!   `uploads.concurrent` ([`crate::uploads`]).
//! - `GET /api/bots?limit=&offset=` (100 a page, at most 500; `total` says how many),
//!   `GET /api/bots/{name}`: bots with their versions, builds and validations; `GET /api/bots/{name}/versions/{version}/build-log`: the build's log.
//! - `PATCH /api/bots/{name}` `{"public": true}`: lets other users' tournaments enter
//!   its validated versions (`false` again stops new ones); its owner or an admin.
//!   Private, a version plays only in its owner's and admins' tournaments, and in
//!   challenges.
//! - `POST /api/challenges` `{"bot", "opponent", "games"?}`: a short series between the
//!   newest validated versions of the caller's bot and any other, in both seats (the
//!   scrimmage of the competition sites); 201 with its tournament. Bounded by the
//!   caller's `max_challenges_per_day` and `max_challenge_games` (429).
//!   `GET /api/challenges`: the newest.
//! - `GET /api/bots/{a}/versus/{b}[?limit=]`: their record against each other, all
//!   versions together, in the ladders both entered, those ladders' finals and the
//!   challenges between them, and per
//!   tournament with its newest `limit` matches (a page: default 100, at most 1000).

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use farm_proto::GameKind;
use farm_worker::build::{Source, SourceLimits};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::access::{caller, owner_or_admin};
use super::lookup::stream_object;
use super::{ApiState, request_body};
use crate::accounts::{Caller, Quotas};
use crate::api_error::ApiError;
use crate::ledger::{ChallengeView, NewVersion, Record, VersionRefused, entry_name, entry_version};
use crate::tournament::Format;
use crate::uploads::BodyError;
use crate::versions;
use farm_proto::limits;

/// The routes.
pub fn routes() -> axum::Router<ApiState> {
    axum::Router::new()
        .route("/api/bots", post(submit_version).get(bots))
        .route("/api/bots/{name}", get(bot).patch(change_bot))
        .route("/api/bots/{name}/versions/{version}/build-log", get(build_log))
        .route("/api/bots/{a}/versus/{b}", get(versus))
        .route("/api/challenges", post(challenge).get(challenges))
}

/// Matches in a challenge unless it says.
const DEFAULT_CHALLENGE_GAMES: u32 = 4;
/// The most challenges listed.
const MAX_CHALLENGES_LISTED: u32 = 200;

/// A challenge asked for.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChallengeRequest {
    bot: String,
    opponent: String,
    #[serde(default)]
    games: Option<u32>,
}

async fn challenge(State(state): State<ApiState>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    let asked: ChallengeRequest = request_body::json(body).await?;
    let games = asked.games.unwrap_or(DEFAULT_CHALLENGE_GAMES);
    if games == 0 {
        return Err(ApiError::BadRequest("games: must be at least 1".to_owned()));
    }
    let playable = |name: &str| {
        let state = state.clone();
        let name = name.to_owned();
        async move {
            state.ledger.playable(&name).await?.ok_or_else(|| {
                ApiError::Conflict(format!("bot {name} has no validated version to play (GET /api/bots/{name})"))
            })
        }
    };
    let mine = playable(&asked.bot).await?;
    owner_or_admin(&caller, &format!("bot {}", asked.bot), &mine.owner)?;
    let theirs = playable(&asked.opponent).await?;
    if asked.bot == asked.opponent {
        return Err(ApiError::BadRequest("opponent: a bot cannot challenge itself".to_owned()));
    }
    if theirs.game != mine.game {
        return Err(ApiError::Conflict(format!(
            "{} plays {} and {} plays {}",
            asked.bot, mine.game, asked.opponent, theirs.game
        )));
    }
    if caller.is_limited() {
        let quotas = state.quotas;
        let used = state.ledger.challenges_today(&caller.name).await?;
        Quotas::check(&caller.name, "max_challenges_per_day", quotas.max_challenges_per_day, used, 1)
            .and_then(|()| {
                Quotas::check(&caller.name, "max_challenge_games", quotas.max_challenge_games, 0, games.into())
            })
            .map_err(|exceeded| ApiError::Quota(exceeded.to_string()))?;
    }
    let game: GameKind =
        mine.game.parse().map_err(|error| ApiError::Internal(format!("bot {}: {error}", asked.bot)))?;
    let (bot, opponent) = (entry_name(&asked.bot, mine.version), entry_name(&asked.opponent, theirs.version));
    let created_at = crate::ledger::now();
    let tournament = versions::challenge_tournament(
        game,
        (&bot, &mine.image),
        (&opponent, &theirs.image),
        games,
        created_at.unsigned_abs(),
    )
    .map_err(|error| ApiError::BadRequest(error.to_string()))?;
    let id = tournament.id.clone();
    let inserted = state.ledger.insert_tournament_for(tournament, caller.name.clone(), 0).await?;
    let view = ChallengeView { tournament_id: id.clone(), challenger: caller.name.clone(), bot, opponent, created_at };
    state.ledger.add_challenge(view.clone()).await?;
    state.wake_publisher.notify_one();
    state.director.wake();
    tracing::info!(tournament = %id, by = %caller.name, bot = %view.bot, opponent = %view.opponent, "challenge");
    let answer =
        serde_json::json!({ "challenge": view, "jobs": inserted.jobs, "url": format!("/api/tournaments/{id}") });
    Ok((StatusCode::CREATED, Json(answer)).into_response())
}

async fn challenges(State(state): State<ApiState>) -> Result<Response, ApiError> {
    Ok(Json(serde_json::json!({ "challenges": state.ledger.challenges(MAX_CHALLENGES_LISTED).await? })).into_response())
}

/// The query of an upload.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UploadQuery {
    name: String,
    game: String,
    #[serde(default)]
    ladder: Option<String>,
}

async fn submit_version(
    State(state): State<ApiState>,
    headers: HeaderMap,
    query: Result<Query<UploadQuery>, axum::extract::rejection::QueryRejection>,
    body: Body,
) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    if !farm_proto::is_bot_name(&query.name) {
        return Err(ApiError::BadRequest(format!(
            "name: {:?} must be 1 to {} of a-z, 0-9, '-' and '_', starting with a letter or digit",
            query.name,
            farm_proto::MAX_BOT_NAME
        )));
    }
    let game: GameKind = query.game.parse().map_err(|error| ApiError::BadRequest(format!("game: {error}")))?;
    if let Some(owner) = state.ledger.bot_owner(&query.name).await? {
        owner_or_admin(&caller, &format!("bot {}", query.name), &owner)?;
    }
    if caller.is_limited() {
        let used = state.ledger.submissions_today(&caller.name).await?;
        let limit = state.quotas.max_submissions_per_day;
        Quotas::check(&caller.name, "max_submissions_per_day", limit, used, 1)
            .map_err(|exceeded| ApiError::Quota(exceeded.to_string()))?;
    }
    if let Some(ladder) = &query.ladder {
        check_ladder(&state, &caller, ladder, game).await?;
    }
    let permit = state.uploads.acquire(&caller.name).map_err(|refused| ApiError::Busy(refused.to_string()))?;
    let limits = SourceLimits::default();
    let most = usize::try_from(limits.max_archive_bytes()).unwrap_or(usize::MAX);
    let archive = permit.read(body, most).await.map_err(|error| match error {
        BodyError::TooLarge(most) => ApiError::TooLarge(most),
        BodyError::TooSlow { .. } | BodyError::Deadline(_) => ApiError::TooSlow(error.to_string()),
        BodyError::Broken(_) => ApiError::BadRequest(error.to_string()),
    })?;
    // Decompressing and checking up to 64 MiB is CPU work: off the async threads.
    let checked = {
        let archive = archive.clone();
        tokio::task::spawn_blocking(move || Source::read_archive(&archive, limits))
            .await
            .map_err(|error| ApiError::Internal(error.to_string()))?
    };
    let source = checked.map_err(|error| ApiError::BadRequest(format!("the archive: {error}")))?;
    let source_key = format!("sources/{}/{}.tar", query.name, hex::encode(Sha256::digest(&archive)));
    state.storage.put(&source_key, archive.to_vec()).await?;
    let new = NewVersion {
        bot: query.name.clone(),
        by: caller.clone(),
        game: game.name().to_owned(),
        layout: source.layout().name.to_owned(),
        source_key,
        ladder: query.ladder.clone(),
    };
    let version = match state.ledger.add_version(new).await? {
        Ok(version) => version,
        Err(VersionRefused::NotOwner(owner)) => {
            return Err(owner_or_admin(&caller, &format!("bot {}", query.name), &owner).err().unwrap_or_else(|| {
                ApiError::Conflict(format!("bot {} changed hands meanwhile: submit again", query.name))
            }));
        }
        Err(VersionRefused::OtherGame(other)) => {
            return Err(ApiError::Conflict(format!("bot {} plays {other}, not {game}", query.name)));
        }
    };
    state.wake_builds.notify_one();
    tracing::info!(bot = %query.name, version, by = %caller.name, layout = source.layout().name, "version submitted");
    let answer = serde_json::json!({
        "bot": query.name,
        "version": version,
        "entry": entry_name(&query.name, version),
        "state": "building",
        "layout": source.layout().name,
        "url": format!("/api/bots/{}", query.name),
    });
    Ok((StatusCode::CREATED, Json(answer)).into_response())
}

/// `Ok` when tournament `id` is a ladder of `game` that has not ended, which `caller`
/// owns, administers, or may enter as its `open_to_submissions` says.
async fn check_ladder(state: &ApiState, caller: &Caller, id: &str, game: GameKind) -> Result<(), ApiError> {
    let tournament =
        state.ledger.tournament(id).await?.ok_or_else(|| ApiError::NotFound(format!("ladder: no tournament {id}")))?;
    let Format::Ladder { open_to_submissions, .. } = tournament.format else {
        return Err(ApiError::Conflict(format!("ladder: {id} is not a ladder")));
    };
    if !open_to_submissions {
        let owner = state.ledger.owner(id).await?.unwrap_or_default();
        if !caller.may_change(&owner) {
            return Err(ApiError::Denied(format!(
                "ladder {id}: it is {owner}'s and not open to submissions (open_to_submissions = true in its file)"
            )));
        }
    }
    if tournament.game != game {
        return Err(ApiError::Conflict(format!("ladder: {id} plays {}, not {game}", tournament.game)));
    }
    if state.ledger.conclusion(id).await?.is_some() {
        return Err(ApiError::Conflict(format!("ladder: {id} has ended")));
    }
    if let Some(refused) = state.ledger.season(id).await?.refuses_versions(id, crate::ledger::now()) {
        return Err(ApiError::Conflict(format!("ladder: {refused}")));
    }
    Ok(())
}

/// A page of the bot list.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BotsQuery {
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    offset: Option<u64>,
}

async fn bots(
    State(state): State<ApiState>,
    query: Result<Query<BotsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let limit = query.limit.unwrap_or(limits::BOTS_PAGE.default);
    if let Err(error) = limits::BOTS_PAGE.check(limit) {
        return Err(ApiError::BadRequest(format!("limit: {}", error.problem())));
    }
    let (bots, total) = state.ledger.bots(limit, query.offset.unwrap_or(0)).await?;
    Ok(Json(serde_json::json!({ "bots": bots, "total": total })).into_response())
}

async fn bot(State(state): State<ApiState>, Path(name): Path<String>) -> Result<Response, ApiError> {
    let bot = state.ledger.bot(&name).await?.ok_or_else(|| ApiError::NotFound(format!("no bot {name}")))?;
    Ok(Json(bot).into_response())
}

/// How many of each tournament's meetings `versus` lists.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VersusQuery {
    #[serde(default)]
    limit: Option<u32>,
}

/// Bots `a` and `b`'s record against each other, with their matches.
async fn versus(
    State(state): State<ApiState>,
    Path((a, b)): Path<(String, String)>,
    query: Result<Query<VersusQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
    let limit = super::paging::page_limit(query.limit)?;
    for name in [&a, &b] {
        state.ledger.bot(name).await?.ok_or_else(|| ApiError::NotFound(format!("no bot {name}")))?;
    }
    if a == b {
        return Err(ApiError::BadRequest(format!("{a} against itself: name two bots")));
    }
    let _slot = super::lookup::ladder_read_slot()?;
    let mut total = Record::default();
    let mut tournaments = Vec::new();
    for id in state.ledger.meeting_places(&a, &b).await? {
        let Some(tournament) = state.ledger.tournament(&id).await? else { continue };
        let versions = |bot: &str| -> Vec<usize> {
            let of_bot = |entry: &&crate::tournament::BotEntry| entry_version(bot, &entry.name).is_some();
            tournament.bots.iter().enumerate().filter(|(_, entry)| of_bot(entry)).map(|(i, _)| i).collect()
        };
        let (record, meetings) = state.ledger.meetings(&id, versions(&a), versions(&b), limit).await?;
        if record.matches == 0 {
            continue;
        }
        total.add(record);
        let name = |index: usize| tournament.bots.get(index).map(|bot| bot.name.clone());
        let matches: Vec<serde_json::Value> = meetings
            .iter()
            .map(|meeting| {
                serde_json::json!({
                    "job_id": meeting.job_id,
                    "position": meeting.position,
                    "a": name(meeting.a_bot),
                    "b": name(meeting.b_bot),
                    "a_rank": meeting.a_rank,
                    "b_rank": meeting.b_rank,
                })
            })
            .collect();
        tournaments
            .push(serde_json::json!({ "id": id, "name": tournament.name, "record": record, "matches": matches }));
    }
    Ok(Json(serde_json::json!({ "a": a, "b": b, "record": total, "tournaments": tournaments })).into_response())
}

/// What `PATCH /api/bots/{name}` changes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BotChange {
    public: bool,
}

/// Makes a bot public or private; answers the bot.
async fn change_bot(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let caller = caller(&headers, &state).await?;
    let change: BotChange = request_body::json(body).await?;
    let owner = state.ledger.bot_owner(&name).await?.ok_or_else(|| ApiError::NotFound(format!("no bot {name}")))?;
    owner_or_admin(&caller, &format!("bot {name}"), &owner)?;
    if !state.ledger.set_public(&name, change.public).await? {
        return Err(ApiError::NotFound(format!("no bot {name}")));
    }
    tracing::info!(bot = %name, public = change.public, by = %caller.name, "bot changed");
    bot(State(state), Path(name)).await
}

async fn build_log(
    State(state): State<ApiState>,
    Path((name, version)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let version: u32 =
        version.parse().map_err(|_| ApiError::BadRequest(format!("version: {version:?} is not a version number")))?;
    let key = state
        .ledger
        .build_log(&name, version)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("bot {name} has no version {version} with a build log yet")))?;
    let stream = stream_object(&state, &key).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], Body::from_stream(stream)).into_response())
}
