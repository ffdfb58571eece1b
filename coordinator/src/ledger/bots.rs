//! Bots submitted by their authors and their versions: each upload a version,
//! `building` until a worker answers its build job, then `build_failed`, or
//! `validating` while its validation tournament plays, then `validated` (and entered
//! in its ladder, if it named one) or `rejected`. The schema's triggers write the
//! events of the last three for webhooks.

use farm_proto::BuildJob;

use crate::accounts::Caller;
use crate::vouch::Answerable;

use super::*;

/// What a version is doing or came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VersionState {
    /// Waiting for a worker to build it, or being built.
    Building,
    /// No image: the log says why.
    BuildFailed,
    /// Playing its validation matches.
    Validating,
    /// Passed validation: it may play anywhere.
    Validated,
    /// Crashed, timed out or broke the protocol in validation.
    Rejected,
}

impl VersionState {
    /// The state a version is decided from: building for a failed build, validating
    /// for a verdict.
    fn decided_from(self) -> VersionState {
        match self {
            VersionState::BuildFailed | VersionState::Building | VersionState::Validating => VersionState::Building,
            VersionState::Validated | VersionState::Rejected => VersionState::Validating,
        }
    }

    /// Every state, in the order a version goes through them.
    pub const ALL: [VersionState; 5] = [
        VersionState::Building,
        VersionState::BuildFailed,
        VersionState::Validating,
        VersionState::Validated,
        VersionState::Rejected,
    ];

    /// Its name, as stored and shown.
    pub fn name(self) -> &'static str {
        match self {
            VersionState::Building => "building",
            VersionState::BuildFailed => "build_failed",
            VersionState::Validating => "validating",
            VersionState::Validated => "validated",
            VersionState::Rejected => "rejected",
        }
    }

    fn from_name(name: &str) -> Result<Self, LedgerError> {
        Ok(match name {
            "building" => VersionState::Building,
            "build_failed" => VersionState::BuildFailed,
            "validating" => VersionState::Validating,
            "validated" => VersionState::Validated,
            "rejected" => VersionState::Rejected,
            other => {
                return Err(LedgerError::Corrupt {
                    what: "version state",
                    source: serde::de::Error::custom(format!("{other:?} is no state")),
                });
            }
        })
    }
}

/// An upload to record as a bot's next version.
#[derive(Debug, Clone)]
pub struct NewVersion {
    /// The bot ([`farm_proto::is_bot_name`]).
    pub bot: String,
    /// Who uploads it.
    pub by: Caller,
    /// Its game: a new bot's is set by its first version; later ones must match.
    pub game: String,
    /// How it is built (`dockerfile`, `python`, `node`).
    pub layout: String,
    /// Where the archive is stored.
    pub source_key: String,
    /// The ladder it enters once validated, if any.
    pub ladder: Option<String>,
}

/// Why an upload was not recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionRefused {
    /// The bot is another user's.
    NotOwner(String),
    /// The bot plays another game.
    OtherGame(String),
}

/// A version, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct VersionView {
    /// The bot.
    pub bot: String,
    /// Counted from 1.
    pub version: u32,
    /// Its name in tournaments: `BOT.vN`.
    pub entry: String,
    /// What it is doing or came to.
    pub state: VersionState,
    /// How it was built.
    pub layout: String,
    /// The image workers pull, once built.
    pub image: Option<String>,
    /// Its validation tournament, once built.
    pub validation: Option<String>,
    /// The ladder it enters once validated.
    pub ladder: Option<String>,
    /// Why it failed or was rejected.
    pub reason: Option<String>,
    /// Where its build log is served, once built or failed.
    pub build_log: Option<String>,
    /// When it was uploaded (Unix seconds).
    pub submitted_at: i64,
    /// When it was validated, rejected or failed to build.
    pub decided_at: Option<i64>,
}

/// A bot, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct BotView {
    /// Its name.
    pub name: String,
    /// Whose.
    pub owner: String,
    /// Its game.
    pub game: String,
    /// When its first version came (Unix seconds).
    pub created_at: i64,
    /// Whether other users' tournaments may enter its validated versions (its owner's
    /// and admins' always may; challenges play any bot).
    #[serde(default)]
    pub public: bool,
    /// Its versions, newest first.
    pub versions: Vec<VersionView>,
}

/// A version whose validation tournament has finished, to be judged.
#[derive(Debug, Clone)]
pub struct ToJudge {
    /// The bot.
    pub bot: String,
    /// The version.
    pub version: u32,
    /// Its validation tournament.
    pub validation: String,
    /// The ladder it enters if it passes.
    pub ladder: Option<String>,
    /// Its image.
    pub image: String,
}

/// The name a version plays under: `BOT.vN`.
pub fn entry_name(bot: &str, version: u32) -> String {
    format!("{bot}.v{version}")
}

/// The version of `bot` that `name` plays ([`entry_name`]'s inverse); `None` for a
/// name that is not one of its versions.
pub fn entry_version(bot: &str, name: &str) -> Option<u32> {
    name.strip_prefix(bot)?.strip_prefix(".v")?.parse().ok()
}

/// Where a version's build log is stored.
pub fn build_log_key(bot: &str, version: u32) -> String {
    format!("builds/{bot}/v{version}.log")
}

impl Ledger {
    /// Records `new` as its bot's next version (making the bot, owned by the uploader,
    /// if it is new), `building`, its build job not yet published.
    pub async fn add_version(&self, new: NewVersion) -> Result<Result<u32, VersionRefused>, LedgerError> {
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            let bot: Option<(String, String)> = transaction
                .query_row("SELECT owner, game FROM bots WHERE name = ?1", [&new.bot], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
                .optional()?;
            match bot {
                Some((owner, _)) if !new.by.may_change(&owner) => return Ok(Err(VersionRefused::NotOwner(owner))),
                Some((_, game)) if game != new.game => return Ok(Err(VersionRefused::OtherGame(game))),
                Some(_) => {}
                None => {
                    transaction.execute(
                        "INSERT INTO bots (name, owner, game, created_at) VALUES (?1, ?2, ?3, ?4)",
                        params![new.bot, new.by.name, new.game, now()],
                    )?;
                }
            }
            let version: u32 = transaction.query_row(
                "SELECT coalesce(max(version), 0) + 1 FROM versions WHERE bot = ?1",
                [&new.bot],
                |row| row.get(0),
            )?;
            transaction.execute(
                "INSERT INTO versions (bot, version, state, layout, source_key, log_key, ladder, submitted_by,
                     submitted_at)
                 VALUES (?1, ?2, 'building', ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    new.bot,
                    version,
                    new.layout,
                    new.source_key,
                    build_log_key(&new.bot, version),
                    new.ladder,
                    new.by.name,
                    now()
                ],
            )?;
            transaction.commit()?;
            Ok(Ok(version))
        })
        .await
    }

    /// How many versions are in each state (every state, 0 included).
    pub async fn versions_by_state(&self) -> Result<Vec<(VersionState, u64)>, LedgerError> {
        self.read(|connection| {
            let mut select = connection.prepare_cached("SELECT count(*) FROM versions WHERE state = ?1")?;
            VersionState::ALL
                .into_iter()
                .map(|state| {
                    let count: i64 = select.query_row([state.name()], |row| row.get(0))?;
                    Ok((state, count as u64))
                })
                .collect()
        })
        .await
    }

    /// Versions uploaded by `user` in the last day: their `max_submissions_per_day`.
    pub async fn submissions_today(&self, user: &str) -> Result<u64, LedgerError> {
        let user = user.to_owned();
        self.read(move |connection| {
            let count: i64 = connection
                .prepare_cached("SELECT count(*) FROM versions WHERE submitted_by = ?1 AND submitted_at > ?2")?
                .query_row(params![user, now() - 24 * 60 * 60], |row| row.get(0))?;
            Ok(count as u64)
        })
        .await
    }

    /// The build jobs not yet published, oldest first, each with its token.
    pub async fn unpublished_builds(&self) -> Result<Vec<BuildJob>, LedgerError> {
        let key = self.answer_key.clone();
        self.read(move |connection| {
            let mut select = connection.prepare_cached(
                "SELECT bot, version, source_key, log_key FROM versions
                 WHERE state = 'building' AND build_published = 0 ORDER BY submitted_at, bot, version",
            )?;
            let jobs = select
                .query_map([], |row| {
                    let (bot, version): (String, u32) = (row.get(0)?, row.get(1)?);
                    let token = key.token(Answerable::Build { bot: &bot, version });
                    Ok(BuildJob { bot, version, source_key: row.get(2)?, log_key: row.get(3)?, token })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(jobs)
        })
        .await
    }

    /// Marks `jobs` as published (RabbitMQ confirmed them).
    pub async fn builds_published(&self, jobs: Vec<BuildJob>) -> Result<(), LedgerError> {
        self.with(move |connection| {
            let transaction = connection.transaction()?;
            for job in &jobs {
                transaction.execute(
                    "UPDATE versions SET build_published = 1 WHERE bot = ?1 AND version = ?2",
                    params![job.bot, job.version],
                )?;
            }
            transaction.commit()?;
            Ok(())
        })
        .await
    }

    /// The build of `bot` version `version` gave `image`, validated by tournament
    /// `validation` (already inserted); `false` when the version is no longer
    /// `building` (a report that came twice).
    pub async fn version_built(
        &self,
        bot: String,
        version: u32,
        image: String,
        validation: String,
    ) -> Result<bool, LedgerError> {
        self.with(move |connection| {
            let changed = connection.execute(
                "UPDATE versions SET state = 'validating', image = ?3, validation = ?4
                 WHERE bot = ?1 AND version = ?2 AND state = 'building'",
                params![bot, version, image, validation],
            )?;
            Ok(changed > 0)
        })
        .await
    }

    /// `bot` version `version` is decided: `state` (build_failed from building,
    /// validated or rejected from validating), for `reason`; `false` when it was not in
    /// the state that decision follows (decided already, or a late report).
    pub async fn decide_version(
        &self,
        bot: String,
        version: u32,
        state: VersionState,
        reason: Option<String>,
    ) -> Result<bool, LedgerError> {
        self.with(move |connection| {
            let changed = connection.execute(
                "UPDATE versions SET state = ?3, reason = ?4, decided_at = ?5
                 WHERE bot = ?1 AND version = ?2 AND state = ?6",
                params![bot, version, state.name(), reason, now(), state.decided_from().name()],
            )?;
            Ok(changed > 0)
        })
        .await
    }

    /// The versions validating whose validation tournament has finished.
    pub async fn validations_finished(&self) -> Result<Vec<ToJudge>, LedgerError> {
        self.read(|connection| {
            let mut select = connection.prepare_cached(
                "SELECT v.bot, v.version, v.validation, v.ladder, v.image FROM versions v
                 JOIN tournaments t ON t.id = v.validation
                 WHERE v.state = 'validating' AND t.open = 0 AND t.jobs > 0 AND NOT EXISTS (
                     SELECT 1 FROM job_counts c WHERE c.tournament_id = t.id
                         AND c.state IN ('pending', 'running') AND c.count > 0)",
            )?;
            let found = select
                .query_map([], |row| {
                    Ok(ToJudge {
                        bot: row.get(0)?,
                        version: row.get(1)?,
                        validation: row.get(2)?,
                        ladder: row.get(3)?,
                        image: row.get(4)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(found)
        })
        .await
    }

    /// The bot whose validated version's image is `image`, if one is. An image is one
    /// bot's: its repository is named after the bot (`matchfarm-bots/NAME`).
    pub async fn validated_image(&self, image: &str) -> Result<Option<ImageBot>, LedgerError> {
        let image = image.to_owned();
        self.read(move |connection| {
            Ok(connection
                .prepare_cached(
                    "SELECT b.name, b.owner, b.public FROM versions v JOIN bots b ON b.name = v.bot
                     WHERE v.image = ?1 AND v.state = 'validated' LIMIT 1",
                )?
                .query_row([&image], |row| Ok(ImageBot { bot: row.get(0)?, owner: row.get(1)?, public: row.get(2)? }))
                .optional()?)
        })
        .await
    }

    /// Makes `bot` public or private ([`BotView::public`]); `false` when there is no
    /// such bot.
    pub async fn set_public(&self, bot: &str, public: bool) -> Result<bool, LedgerError> {
        let bot = bot.to_owned();
        self.with(move |connection| {
            Ok(connection.execute("UPDATE bots SET public = ?2 WHERE name = ?1", params![bot, public])? > 0)
        })
        .await
    }

    /// Whose `bot` is, if it exists.
    pub async fn bot_owner(&self, bot: &str) -> Result<Option<String>, LedgerError> {
        let bot = bot.to_owned();
        self.read(move |connection| {
            Ok(connection.query_row("SELECT owner FROM bots WHERE name = ?1", [&bot], |row| row.get(0)).optional()?)
        })
        .await
    }

    /// A page of the bots, by name, with their versions: at most `limit` from the
    /// `offset`-th, and how many there are in all.
    pub async fn bots(&self, limit: u32, offset: u64) -> Result<(Vec<BotView>, u64), LedgerError> {
        self.read(move |connection| {
            let total: i64 = connection.query_row("SELECT count(*) FROM bots", [], |row| row.get(0))?;
            let names: Vec<String> = connection
                .prepare_cached("SELECT name FROM bots ORDER BY name LIMIT ?1 OFFSET ?2")?
                .query_map(params![limit, i64::try_from(offset).unwrap_or(i64::MAX)], |row| row.get(0))?
                .collect::<Result<_, _>>()?;
            let bots =
                names.iter().filter_map(|name| bot_view(connection, name).transpose()).collect::<Result<_, _>>()?;
            Ok((bots, total as u64))
        })
        .await
    }

    /// `bot` with its versions.
    pub async fn bot(&self, bot: &str) -> Result<Option<BotView>, LedgerError> {
        let bot = bot.to_owned();
        self.read(move |connection| bot_view(connection, &bot)).await
    }

    /// Where `bot` version `version`'s build log is, once its build was answered.
    pub async fn build_log(&self, bot: &str, version: u32) -> Result<Option<String>, LedgerError> {
        Ok(self
            .bot(bot)
            .await?
            .and_then(|view| view.versions.into_iter().find(|row| row.version == version))
            .filter(|row| row.state != VersionState::Building)
            .map(|_| build_log_key(bot, version)))
    }
}

/// The bot a validated image is a version of: what decides whose tournaments may
/// enter it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageBot {
    /// The bot.
    pub bot: String,
    /// Its owner.
    pub owner: String,
    /// Whether it is public ([`BotView::public`]).
    pub public: bool,
}

/// The newest validated version of a bot: what a challenge plays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Playable {
    /// Its bot's owner.
    pub owner: String,
    /// Its bot's game.
    pub game: String,
    /// The version.
    pub version: u32,
    /// Its image.
    pub image: String,
}

/// A challenge, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ChallengeView {
    /// The series' tournament.
    pub tournament_id: String,
    /// Who asked for it.
    pub challenger: String,
    /// The challenger's version (`BOT.vN`).
    pub bot: String,
    /// The opponent's version.
    pub opponent: String,
    /// When (Unix seconds).
    pub created_at: i64,
}

impl Ledger {
    /// `bot`'s newest validated version, if it has one.
    pub async fn playable(&self, bot: &str) -> Result<Option<Playable>, LedgerError> {
        let bot = bot.to_owned();
        self.read(move |connection| {
            Ok(connection
                .query_row(
                    "SELECT b.owner, b.game, v.version, v.image FROM bots b JOIN versions v ON v.bot = b.name
                     WHERE b.name = ?1 AND v.state = 'validated' ORDER BY v.version DESC LIMIT 1",
                    [&bot],
                    |row| {
                        Ok(Playable { owner: row.get(0)?, game: row.get(1)?, version: row.get(2)?, image: row.get(3)? })
                    },
                )
                .optional()?)
        })
        .await
    }

    /// Records `challenge` (its tournament already inserted).
    pub async fn add_challenge(&self, challenge: ChallengeView) -> Result<(), LedgerError> {
        self.with(move |connection| {
            connection.execute(
                "INSERT OR IGNORE INTO challenges (tournament_id, challenger, bot, opponent, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    challenge.tournament_id,
                    challenge.challenger,
                    challenge.bot,
                    challenge.opponent,
                    challenge.created_at
                ],
            )?;
            Ok(())
        })
        .await
    }

    /// Challenges `user` made in the last day: their `max_challenges_per_day`.
    pub async fn challenges_today(&self, user: &str) -> Result<u64, LedgerError> {
        let user = user.to_owned();
        self.read(move |connection| {
            let count: i64 = connection
                .prepare_cached("SELECT count(*) FROM challenges WHERE challenger = ?1 AND created_at > ?2")?
                .query_row(params![user, now() - 24 * 60 * 60], |row| row.get(0))?;
            Ok(count as u64)
        })
        .await
    }

    /// The newest challenges, at most `limit`.
    pub async fn challenges(&self, limit: u32) -> Result<Vec<ChallengeView>, LedgerError> {
        self.read(move |connection| {
            let mut select = connection.prepare_cached(
                "SELECT tournament_id, challenger, bot, opponent, created_at FROM challenges
                 ORDER BY created_at DESC, tournament_id LIMIT ?1",
            )?;
            let rows = select
                .query_map([limit], |row| {
                    Ok(ChallengeView {
                        tournament_id: row.get(0)?,
                        challenger: row.get(1)?,
                        bot: row.get(2)?,
                        opponent: row.get(3)?,
                        created_at: row.get(4)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
        .await
    }
}

pub(super) fn bot_view(connection: &Connection, bot: &str) -> Result<Option<BotView>, LedgerError> {
    let Some((owner, game, created_at, public)) = connection
        .query_row("SELECT owner, game, created_at, public FROM bots WHERE name = ?1", [bot], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })
        .optional()?
    else {
        return Ok(None);
    };
    let mut select = connection.prepare_cached(
        "SELECT version, state, layout, image, validation, ladder, reason, submitted_at, decided_at
         FROM versions WHERE bot = ?1 ORDER BY version DESC",
    )?;
    let rows = select
        .query_map([bot], |row| {
            Ok((
                row.get::<_, u32>(0)?,
                row.get::<_, String>(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
                row.get(6)?,
                row.get(7)?,
                row.get(8)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut versions = Vec::with_capacity(rows.len());
    for (version, state, layout, image, validation, ladder, reason, submitted_at, decided_at) in rows {
        let state = VersionState::from_name(&state)?;
        versions.push(VersionView {
            bot: bot.to_owned(),
            version,
            entry: entry_name(bot, version),
            state,
            layout,
            image,
            validation,
            ladder,
            reason,
            build_log: (state != VersionState::Building)
                .then(|| format!("/api/bots/{bot}/versions/{version}/build-log")),
            submitted_at,
            decided_at,
        });
    }
    Ok(Some(BotView { name: bot.to_owned(), owner, game, created_at, public, versions }))
}
