//! Who is asking, and what they may change: the bearer token read, owners told from
//! admins, and which bots a caller may enter in a tournament.

use axum::http::{HeaderMap, header};
use farm_worker::SandboxKind;

use super::{ApiState, Submissions};
use crate::accounts::{self, Caller};
use crate::api_error::ApiError;
use crate::tournament::BotEntry;

/// Who is asking: the operator (the configured token) or the user whose live token
/// this is. 401 without a token, 403 with a wrong one.
pub(super) async fn caller(headers: &HeaderMap, state: &ApiState) -> Result<Caller, ApiError> {
    let Submissions::Token(operator) = &state.submissions else { return Err(ApiError::ReadOnly) };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        // The scheme name is case-insensitive (RFC 9110, 11.1).
        .and_then(|value| value.split_once(' ').filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer")))
        .map(|(_, token)| token.trim())
        .ok_or(ApiError::Unauthorized)?;
    if accounts::same_secret(given, operator) {
        return Ok(Caller::operator());
    }
    // A user's token is found by its hash: what is compared is never the token.
    if accounts::is_issued_form(given)
        && let Some(caller) = state.ledger.caller(accounts::token_hash(given)).await?
    {
        return Ok(caller);
    }
    Err(ApiError::Forbidden)
}

/// `Ok` when `caller` may change `thing` (as messages name it), which is `owner`'s:
/// they are its owner or an admin. 403 naming the owner otherwise.
pub(super) fn owner_or_admin(caller: &Caller, thing: &str, owner: &str) -> Result<(), ApiError> {
    if caller.may_change(owner) {
        Ok(())
    } else {
        Err(ApiError::Denied(format!("{thing}: it is {owner}'s, and {} is neither {owner} nor an admin", caller.name)))
    }
}

/// `Ok` when `caller` may change tournament `id`: 404 when there is none, 403 naming
/// its owner when it is another's.
pub(super) async fn may_change_tournament(state: &ApiState, caller: &Caller, id: &str) -> Result<(), ApiError> {
    let owner = state.ledger.owner(id).await?.ok_or_else(|| ApiError::NotFound(format!("no tournament {id}")))?;
    owner_or_admin(caller, &format!("tournament {id}"), &owner)
}

/// `Ok` when `caller` is an admin; 403 saying what needed one otherwise.
pub(super) fn admin_only(caller: &Caller, what: &str) -> Result<(), ApiError> {
    if caller.admin {
        Ok(())
    } else {
        Err(ApiError::Denied(format!("{what} is for admins; {} is not one", caller.name)))
    }
}

/// `Ok` when `caller` may enter `bot` in a tournament; otherwise why not, naming the
/// key under `key` (`bots[2]`). The farm runs what a tournament names, so:
/// - a `command` runs on the workers as their own user (root on a worker that uses
///   cgroups): only admins may give one, unless this farm launches bots in Docker,
///   where no command is run (403);
/// - only admins may name an image by its id, which could be a rejected version's or a
///   failed build's layer (409);
/// - a submitted bot's image plays only as a validated version ([`crate::versions`]),
///   as its author built it (no `args` in place of its command, which could print its
///   files to the public log) (409), and only in its owner's and admins' tournaments
///   unless its bot is public; other users play it in challenges (403).
pub(super) async fn may_enter(state: &ApiState, caller: &Caller, key: &str, bot: &BotEntry) -> Result<(), ApiError> {
    if bot.command.is_some() && !caller.admin && state.director.launch() != SandboxKind::Docker {
        return Err(ApiError::Denied(format!(
            "{key}.command: bot {:?} runs a command, which this farm's workers run outside Docker with their own \
             access (bot_launch is not docker): only admins may enter one; submit its source instead \
             (POST /api/bots)",
            bot.name
        )));
    }
    let Some(image) = bot.image.as_deref() else { return Ok(()) };
    let key = format!("{key}.image");
    let by_id = image.starts_with("sha256:") || image.chars().all(|c| c.is_ascii_hexdigit());
    if by_id && !caller.admin {
        return Err(ApiError::Conflict(format!("{key}: {image} names an image by its id, which only admins may")));
    }
    if !farm_proto::is_submitted_image(image) {
        return Ok(());
    }
    if !bot.args.is_empty() {
        return Err(ApiError::Conflict(format!(
            "{key}: {image} is a submitted bot's image: it runs as its author built it, without args"
        )));
    }
    match state.ledger.validated_image(image).await? {
        None => Err(ApiError::Conflict(format!(
            "{key}: {image} is a submitted bot's image, and no version with it has passed validation"
        ))),
        Some(found) if found.public || caller.may_change(&found.owner) => Ok(()),
        Some(found) => Err(ApiError::Denied(format!(
            "{key}: {image} is a version of bot {}, which is not public: only its owner's and admins' \
             tournaments enter it; challenge it (POST /api/challenges), or ask its owner to make it public",
            found.bot
        ))),
    }
}
