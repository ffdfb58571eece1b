//! Users and their tokens ([`crate::accounts`]), and what each has in the farm.

use crate::accounts::{Caller, NewToken};

use super::*;

/// How long a removed webhook or a revoked token still counts against its user's
/// quota ([`crate::accounts::Quotas`]).
const RECENT_SECS: i64 = 24 * 60 * 60;

/// A user, as listed to admins and to themselves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct UserView {
    /// Their name.
    pub name: String,
    /// Whether they may change everything.
    pub admin: bool,
    /// Their weight when the farm's workers are shared out ([`crate::fair_share`]).
    pub share: u32,
    /// When they were made (Unix seconds), and by whom.
    pub created_at: i64,
    /// The admin who made them.
    pub created_by: String,
    /// Their tokens, revoked ones included.
    pub tokens: Vec<TokenView>,
}

/// A token, as listed: never its secret nor its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct TokenView {
    /// Its public id (the start of the token).
    pub id: String,
    /// When it was made (Unix seconds).
    pub created_at: i64,
    /// When it was revoked, if it was.
    pub revoked_at: Option<i64>,
}

/// A user to make.
#[derive(Debug, Clone)]
pub struct NewUser {
    /// Their name, checked ([`crate::accounts::check_name`]).
    pub name: String,
    /// Whether they may change everything.
    pub admin: bool,
    /// Their fair-share weight, at least 1.
    pub share: u32,
    /// The admin making them.
    pub created_by: String,
}

/// What one user has going in the farm, for their [`crate::accounts::Quotas`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Their tournaments not yet finished (their versions' validations aside: the farm
    /// starts those).
    pub running_tournaments: u64,
    /// Their jobs pending or published and unanswered (validations' aside).
    pub queued_jobs: u64,
    /// Their webhooks, those removed in the last day included.
    pub webhooks: u64,
    /// Their tokens, those revoked in the last day included.
    pub tokens: u64,
}

impl Ledger {
    /// Makes `user` with its first token; `false` (and nothing made) when the name is taken.
    pub async fn add_user(&self, user: NewUser, token: NewToken) -> Result<bool, LedgerError> {
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            let made = transaction.execute(
                "INSERT OR IGNORE INTO users (name, admin, share, created_at, created_by) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![user.name, user.admin, user.share, now(), user.created_by],
            )?;
            if made == 0 {
                return Ok(false);
            }
            insert_token(&transaction, &user.name, &token)?;
            transaction.commit()?;
            Ok(true)
        })
        .await
    }

    /// Gives `user` another token; `false` when there is no such user.
    pub async fn add_token(&self, user: &str, token: NewToken) -> Result<bool, LedgerError> {
        let user = user.to_owned();
        self.with(move |connection| {
            if !connection.prepare_cached("SELECT 1 FROM users WHERE name = ?1")?.exists([&user])? {
                return Ok(false);
            }
            insert_token(connection, &user, &token)?;
            Ok(true)
        })
        .await
    }

    /// Whose token `id` is, if there is one.
    pub async fn token_owner(&self, id: &str) -> Result<Option<String>, LedgerError> {
        let id = id.to_owned();
        self.read(move |connection| {
            Ok(connection
                .query_row("SELECT user_name FROM tokens WHERE id = ?1", [&id], |row| row.get(0))
                .optional()?)
        })
        .await
    }

    /// Revokes token `id` from now on; `false` when it was revoked already.
    pub async fn revoke_token(&self, id: &str) -> Result<bool, LedgerError> {
        let id = id.to_owned();
        self.with(move |connection| {
            let revoked = connection.execute(
                "UPDATE tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
                params![id, now()],
            )?;
            Ok(revoked > 0)
        })
        .await
    }

    /// The user whose live token hashes to `hash`, if any.
    pub async fn caller(&self, hash: String) -> Result<Option<Caller>, LedgerError> {
        self.read(move |connection| {
            Ok(connection
                .prepare_cached(
                    "SELECT u.name, u.admin FROM tokens t JOIN users u ON u.name = t.user_name
                     WHERE t.hash = ?1 AND t.revoked_at IS NULL",
                )?
                .query_row([&hash], |row| Ok(Caller { name: row.get(0)?, admin: row.get(1)? }))
                .optional()?)
        })
        .await
    }

    /// Every user (or only `only`), by name, with their tokens.
    pub async fn users(&self, only: Option<String>) -> Result<Vec<UserView>, LedgerError> {
        self.read(move |connection| {
            let mut users: Vec<UserView> = connection
                .prepare_cached(
                    "SELECT name, admin, share, created_at, created_by FROM users
                     WHERE ?1 IS NULL OR name = ?1 ORDER BY name",
                )?
                .query_map([&only], |row| {
                    Ok(UserView {
                        name: row.get(0)?,
                        admin: row.get(1)?,
                        share: row.get(2)?,
                        created_at: row.get(3)?,
                        created_by: row.get(4)?,
                        tokens: Vec::new(),
                    })
                })?
                .collect::<Result<_, _>>()?;
            let mut tokens = connection.prepare_cached(
                "SELECT id, created_at, revoked_at FROM tokens WHERE user_name = ?1 ORDER BY created_at, id",
            )?;
            for user in &mut users {
                user.tokens = tokens
                    .query_map([&user.name], |row| {
                        Ok(TokenView { id: row.get(0)?, created_at: row.get(1)?, revoked_at: row.get(2)? })
                    })?
                    .collect::<Result<_, _>>()?;
            }
            Ok(users)
        })
        .await
    }

    /// Sets `user`'s fair-share weight; `false` when there is no such user.
    pub async fn set_share(&self, user: &str, share: u32) -> Result<bool, LedgerError> {
        let user = user.to_owned();
        self.with(move |connection| {
            Ok(connection.execute("UPDATE users SET share = ?2 WHERE name = ?1", params![user, share])? > 0)
        })
        .await
    }

    /// Who submitted tournament `id`, if it exists.
    pub async fn owner(&self, id: &str) -> Result<Option<String>, LedgerError> {
        let id = id.to_owned();
        self.read(move |connection| {
            Ok(connection
                .prepare_cached("SELECT owner FROM tournaments WHERE id = ?1")?
                .query_row([&id], |row| row.get(0))
                .optional()?)
        })
        .await
    }

    /// What `user` has going: their unfinished tournaments, queued jobs, webhooks and
    /// tokens.
    pub async fn usage(&self, user: &str) -> Result<Usage, LedgerError> {
        let user = user.to_owned();
        self.read(move |connection| {
            let running_tournaments: i64 = connection
                .prepare_cached(
                    "SELECT count(*) FROM tournaments t WHERE t.owner = ?1 AND (t.open = 1 OR t.jobs = 0 OR EXISTS (
                     SELECT 1 FROM job_counts c WHERE c.tournament_id = t.id
                         AND c.state IN ('pending', 'running') AND c.count > 0))
                     AND NOT EXISTS (SELECT 1 FROM versions v WHERE v.validation = t.id)",
                )?
                .query_row([&user], |row| row.get(0))?;
            let queued_jobs: i64 = connection
                .prepare_cached(
                    "SELECT coalesce(sum(c.count), 0) FROM tournaments t
                     JOIN job_counts c ON c.tournament_id = t.id AND c.state IN ('pending', 'running')
                     WHERE t.owner = ?1 AND NOT EXISTS (SELECT 1 FROM versions v WHERE v.validation = t.id)",
                )?
                .query_row([&user], |row| row.get(0))?;
            let since = now() - RECENT_SECS;
            let webhooks: i64 = connection
                .prepare_cached(
                    "SELECT count(*) FROM webhooks WHERE owner = ?1 AND (removed_at IS NULL OR removed_at > ?2)",
                )?
                .query_row(params![user, since], |row| row.get(0))?;
            let tokens: i64 = connection
                .prepare_cached(
                    "SELECT count(*) FROM tokens WHERE user_name = ?1 AND (revoked_at IS NULL OR revoked_at > ?2)",
                )?
                .query_row(params![user, since], |row| row.get(0))?;
            Ok(Usage {
                running_tournaments: running_tournaments as u64,
                queued_jobs: queued_jobs as u64,
                webhooks: webhooks as u64,
                tokens: tokens as u64,
            })
        })
        .await
    }
}

fn insert_token(connection: &Connection, user: &str, token: &NewToken) -> rusqlite::Result<()> {
    connection.execute(
        "INSERT INTO tokens (id, user_name, hash, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![token.id, user, token.hash, now()],
    )?;
    Ok(())
}
