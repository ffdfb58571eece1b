//! Users, their tokens and what each may do.
//!
//! A user has a name, is an admin or not, and has a fair-share weight
//! ([`crate::fair_share`]). Their tokens are made here from the operating system's
//! random source and stored only as SHA-256 hashes (a token has 256 random bits, so a
//! slow hash would add nothing); the token itself is shown once, when it is made. The
//! operator's `api_token` from the configuration is the built-in admin [`OPERATOR`],
//! which owns what it submits and everything from before users existed.
//!
//! Every write through the API is made by a [`Caller`]; a user changes only what they
//! own, an admin everything. Users' [`Quotas`] bound what they can make the farm do.

use farm_proto::limits;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The name of the built-in admin that the configured `api_token` authenticates.
pub const OPERATOR: &str = "operator";
/// The longest user name.
pub const MAX_NAME: usize = 32;
/// The start of every token the farm issues (and of nothing else).
const TOKEN_PREFIX: &str = "mft_";

/// Who made a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Caller {
    /// The user's name ([`OPERATOR`] for the configured token).
    pub name: String,
    /// Whether they may change everything.
    pub admin: bool,
}

impl Caller {
    /// The operator, authenticated by the configured `api_token`.
    pub fn operator() -> Self {
        Caller { name: OPERATOR.to_owned(), admin: true }
    }

    /// Whether this caller may change something owned by `owner`.
    pub fn may_change(&self, owner: &str) -> bool {
        self.admin || self.name == owner
    }

    /// Whether the [`Quotas`] apply: to everyone but admins.
    pub fn is_limited(&self) -> bool {
        !self.admin
    }
}

/// A user name that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Wrong characters or length.
    #[error(
        "user name {0:?}: 1 to {MAX_NAME} characters, lower-case letters, digits, '-' and '_', starting with a letter or digit"
    )]
    Malformed(String),
    /// The built-in admin's name.
    #[error("user name {OPERATOR:?} is the configured api_token's; choose another")]
    Reserved,
}

/// `Ok` when `name` can be a user's.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name == OPERATOR {
        return Err(NameError::Reserved);
    }
    let mut characters = name.chars();
    let first_ok = characters.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok = characters.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if first_ok && rest_ok && name.len() <= MAX_NAME { Ok(()) } else { Err(NameError::Malformed(name.to_owned())) }
}

/// A token just made: the secret, shown once, and what is stored of it.
#[derive(Debug, Clone)]
pub struct NewToken {
    /// The bearer token to give to the user: `mft_` and 64 hex digits.
    pub secret: String,
    /// Its public id (the first 12 of its hex digits after the prefix), by which it is
    /// listed and revoked.
    pub id: String,
    /// [`token_hash`] of the secret: all that is stored.
    pub hash: String,
}

/// The operating system's random source failed.
#[derive(Debug, thiserror::Error)]
#[error("no random bytes for a token: {0}")]
pub struct RandomError(String);

impl NewToken {
    /// A fresh token of 256 random bits.
    pub fn generate() -> Result<Self, RandomError> {
        let secret = format!("{TOKEN_PREFIX}{}", random_hex::<32>()?);
        let id = secret[TOKEN_PREFIX.len()..TOKEN_PREFIX.len() + 12].to_owned();
        let hash = token_hash(&secret);
        Ok(NewToken { secret, id, hash })
    }
}

/// `N` random bytes from the operating system, as hex.
pub fn random_hex<const N: usize>() -> Result<String, RandomError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|error| RandomError(error.to_string()))?;
    Ok(hex::encode(bytes))
}

/// Whether `given` is `secret`, every byte compared whatever the first difference, so
/// the time taken tells nothing of where they differ.
pub fn same_secret(given: &str, secret: &str) -> bool {
    given.len() == secret.len()
        && given.bytes().zip(secret.bytes()).fold(0u8, |difference, (a, b)| difference | (a ^ b)) == 0
}

/// What is stored of a token: its SHA-256, in hex.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Whether `token` has the form of one the farm issued (so worth looking up).
pub fn is_issued_form(token: &str) -> bool {
    token.strip_prefix(TOKEN_PREFIX).is_some_and(|rest| rest.len() == 64 && rest.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// What one user may make the farm do at once (`[quotas]` in the configuration);
/// admins are not limited. A request past one is answered 429, naming the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Quotas {
    /// Tournaments of theirs not yet finished.
    pub max_running_tournaments: u64,
    /// Jobs of theirs pending or being played, a new tournament's included.
    pub max_queued_jobs: u64,
    /// Webhooks registered, counting those removed in the last day: registering and
    /// removing in a loop must not grow the ledger without end.
    pub max_webhooks: u64,
    /// Tokens of theirs, counting those revoked in the last day, for the same reason.
    pub max_tokens: u64,
    /// Bot versions uploaded in the last day: each takes a build and validation matches.
    pub max_submissions_per_day: u64,
    /// Challenges made in the last day.
    pub max_challenges_per_day: u64,
    /// Matches one challenge may ask for.
    pub max_challenge_games: u64,
}

impl Default for Quotas {
    fn default() -> Self {
        Quotas {
            max_running_tournaments: limits::QUOTAS_MAX_RUNNING_TOURNAMENTS.default,
            max_queued_jobs: limits::QUOTAS_MAX_QUEUED_JOBS.default,
            max_webhooks: limits::QUOTAS_MAX_WEBHOOKS.default,
            max_tokens: limits::QUOTAS_MAX_TOKENS.default,
            max_submissions_per_day: limits::QUOTAS_MAX_SUBMISSIONS_PER_DAY.default,
            max_challenges_per_day: limits::QUOTAS_MAX_CHALLENGES_PER_DAY.default,
            max_challenge_games: limits::QUOTAS_MAX_CHALLENGE_GAMES.default,
        }
    }
}

/// A quota a request would pass; the message names it, its ceiling and what is used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{user} has {used} of quotas.{key} = {limit} already{adding}")]
pub struct QuotaExceeded {
    /// Whose.
    pub user: String,
    /// The configuration key.
    pub key: &'static str,
    /// Its value.
    pub limit: u64,
    /// In use now.
    pub used: u64,
    /// What the request would add, said when it is more than one.
    pub adding: String,
}

impl Quotas {
    /// `Ok` when `user`, using `used` of the quota `key` whose ceiling is `limit`, may
    /// add `adding` more.
    pub fn check(user: &str, key: &'static str, limit: u64, used: u64, adding: u64) -> Result<(), QuotaExceeded> {
        if used.saturating_add(adding) <= limit {
            return Ok(());
        }
        let adding = if adding > 1 { format!(", and this would add {adding}") } else { String::new() };
        Err(QuotaExceeded { user: user.to_owned(), key, limit, used, adding })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_the_operator_is_reserved() {
        for good in ["ada", "team-7", "x", "a_b", &"a".repeat(MAX_NAME)] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in ["", "Ada", "-ada", "a b", "é", "../x", &"a".repeat(MAX_NAME + 1)] {
            assert!(matches!(check_name(bad), Err(NameError::Malformed(_))), "{bad}");
        }
        assert_eq!(check_name(OPERATOR), Err(NameError::Reserved));
    }

    #[test]
    fn tokens_are_random_hashed_and_recognised() {
        let first = NewToken::generate().expect("random");
        let second = NewToken::generate().expect("random");
        assert_ne!(first.secret, second.secret);
        assert!(is_issued_form(&first.secret), "{}", first.secret);
        assert!(first.secret.starts_with(&format!("mft_{}", first.id)));
        assert_eq!(first.hash, token_hash(&first.secret));
        assert_eq!(first.hash.len(), 64);
        assert!(!first.hash.contains(&first.secret[4..]));
        // Issued tokens are as strong as the operator's must be.
        assert_eq!(crate::token::check_strength(&first.secret), Ok(()));
        assert!(!is_issued_form("mft_short"));
        assert!(!is_issued_form(&first.secret.replace("mft_", "xyz_")));
    }

    #[test]
    fn callers_change_what_they_own_admins_everything() {
        let ada = Caller { name: "ada".into(), admin: false };
        assert!(ada.may_change("ada") && !ada.may_change("bob") && !ada.may_change(OPERATOR));
        assert!(Caller::operator().may_change("ada") && !Caller::operator().is_limited());
    }

    #[test]
    fn quotas_say_which_was_hit() {
        assert_eq!(Quotas::check("ada", "max_queued_jobs", 10, 4, 6), Ok(()));
        let error = Quotas::check("ada", "max_queued_jobs", 10, 4, 7).expect_err("over");
        assert_eq!(error.to_string(), "ada has 4 of quotas.max_queued_jobs = 10 already, and this would add 7");
        let error = Quotas::check("ada", "max_running_tournaments", 2, 2, 1).expect_err("over");
        assert_eq!(error.to_string(), "ada has 2 of quotas.max_running_tournaments = 2 already");
    }
}
