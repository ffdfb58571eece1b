//! Tournament files: the TOML a user writes, its strict validation, and the resolved
//! [`Tournament`] the ledger stores, whose content alone decides its id and the ids
//! and seeds of its jobs.
//!
//! ```toml
//! name = "vindinium weekly"
//! game = "vindinium"
//! format = "round-robin"      # or "gauntlet" (with candidates = [...]), "single",
//!                             # "sprt", "swiss" or "ladder" (see [`FormatKind`])
//! games_per_pairing = 2
//! seed = 7
//! maps = [{ file = "../maps/vindinium/m1.txt" }, { seed = 3 }]
//! [rules]
//! maxTurns = 600
//! [[bots]]
//! name = "greedy"
//! builtin = "greedy"
//! [[bots]]
//! name = "random-py"
//! command = "python3 bots/vindinium/random_bot.py"
//! image = "matchfarm/bot-vindinium-random-py"
//! ```

use std::path::{Path, PathBuf};

use farm_engine::{AnyGame, GameKind, builtin};
use farm_proto::{BotLaunch, BotLimits, BotSpec, ClockKind, ContainerIsolation, MatchJob, MoveClock, Transport};
use farm_worker::SandboxKind;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::schedule::{self, Fixture, ScheduleError};
use crate::sequential_test::{EloModel, SprtParams};
use farm_proto::limits;

/// The most fixtures an N-player round robin or gauntlet schedules when the file
/// does not say (`max_matches`): all combinations of 40 bots in groups of 4 would be
/// 91,390 groups.
const DEFAULT_MAX_MATCHES: u64 = limits::MAX_MATCHES.default;

/// What a farm accepts of one tournament: its operator's ceilings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TournamentLimits {
    /// The most jobs (matches) one tournament may plan: fixtures × maps ×
    /// `games_per_pairing`. Its schedule is built and stored whole, so this bounds
    /// the ledger's growth and the time a submission takes.
    pub max_jobs: u64,
}

impl Default for TournamentLimits {
    fn default() -> Self {
        TournamentLimits { max_jobs: limits::MAX_TOURNAMENT_JOBS.default }
    }
}
/// Longest tournament and bot name.
pub(crate) const MAX_NAME: usize = 100;

/// How the containers of a tournament that takes submitted bots (a ladder, or one
/// naming a submitted image: validations and challenges too) are isolated unless it
/// says otherwise: a never-used container per match, because a reused one keeps
/// kernel state a bot can read in its next match (the book's "What a reused
/// container keeps").
pub const SUBMITTED_ISOLATION: ContainerIsolation = ContainerIsolation::FreshContainer;

/// A tournament file as written. Unknown keys are errors.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TournamentFile {
    /// Shown in lists.
    pub name: String,
    /// The game.
    pub game: GameKind,
    /// A named set of rules overrides of the game (Ostibot's `Final`, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Rules overrides, applied after the preset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<serde_json::Map<String, serde_json::Value>>,
    /// How bots are paired.
    pub format: FormatKind,
    /// Matches per pairing, per map.
    #[serde(default = "one")]
    pub games_per_pairing: u32,
    /// Every job's seed derives from it.
    #[serde(default)]
    pub seed: u64,
    /// Bots per match (N-player games); default: as many as the game seats, at most
    /// the number of bots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seats: Option<usize>,
    /// The most pairings an N-player round robin or gauntlet schedules; above it a
    /// balanced subset is chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_matches: Option<u64>,
    /// Gauntlet: the bots (by name) that play against all the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    /// The maps; none means the game's default (generated from each match's seed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maps: Vec<MapEntry>,
    /// `fresh-container`: every match's container bots get never-used containers;
    /// `reused`: containers reset between matches. Absent: [`SUBMITTED_ISOLATION`] for
    /// a ladder or a tournament that enters a submitted bot's image, else as each
    /// worker is configured (which reuses them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<ContainerIsolation>,
    /// The clock a move's budget (the rules' reply deadline) is counted on: `wall`
    /// (the default) or `cpu` (the CPU time the bot uses, the same on a busy worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockKind>,
    /// Milliseconds each bot may spend beyond its moves' budgets over a match
    /// (default 0), on the same clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_bank_ms: Option<u64>,
    /// With `clock = "cpu"`, how many times its budget a move may take on the wall
    /// clock before it times out anyway (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_backstop: Option<u32>,
    /// `true` lets bots think between their turns; by default they are frozen from
    /// their reply until they are asked again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ponder: Option<bool>,
    /// Seconds its matches are shown live behind their play (default 0): a broadcast
    /// delay, for competitions that stream their finals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_delay_secs: Option<u64>,
    /// SPRT: the bot under test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<String>,
    /// SPRT: the bot it is tested against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// SPRT: the candidate's Elo advantage under H0 (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elo0: Option<f64>,
    /// SPRT: the candidate's Elo advantage under H1 (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elo1: Option<f64>,
    /// SPRT: the chance of accepting H1 when H0 holds (default 0.05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// SPRT: the chance of accepting H0 when H1 holds (default 0.05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// SPRT: what `elo0` and `elo1` are measured in: `normalized` (the default) or
    /// `logistic` Elo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elo_model: Option<EloModel>,
    /// Swiss: how many rounds (default: enough to single out a winner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u32>,
    /// SPRT and ladder: how many of its matches are kept unanswered at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<u32>,
    /// Ladder: whether every user may enter their submitted bots' validated versions
    /// (`POST /api/bots?ladder=`); otherwise only its owner and admins may.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_to_submissions: Option<bool>,
    /// Round robin: `"ranking-settled"` ends it once the bots' rating intervals no
    /// longer overlap from one place to the next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_when: Option<StopWhen>,
    /// Ladder: its leagues, lowest first ([`League`]); none: one table for all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leagues: Vec<League>,
    /// Ladder with leagues: the share of matches (0 to 1, default 0.1) whose opponents
    /// may come from the leagues next to the focus bot's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub league_crossing: Option<f64>,
    /// Ladder: a bot with fewer completed games is marked provisional (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisional_games: Option<u32>,
    /// The bots.
    pub bots: Vec<BotEntry>,
}

fn one() -> u32 {
    1
}

/// The tournament formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FormatKind {
    /// Every bot against every other: both sides for 2 seats; balanced groups in every
    /// seat rotation for more.
    RoundRobin,
    /// The candidates against the pool (every other bot), never against each other.
    Gauntlet,
    /// One match, bots seated in the order listed.
    Single,
    /// A sequential test of `candidate` against `baseline`: matches in pairs, until the
    /// log-likelihood ratio crosses a bound or `max_matches` are played.
    Sprt,
    /// Rounds of tables of bots with similar scores, each round paired from the results
    /// of the ones before.
    Swiss,
    /// No fixed schedule: matches chosen by rating, as bots come and go, until stopped.
    Ladder,
}

impl FormatKind {
    /// Whether its director chooses its matches as results come ([`Format::is_adaptive`]).
    pub fn is_adaptive(self) -> bool {
        matches!(self, FormatKind::Sprt | FormatKind::Swiss | FormatKind::Ladder)
    }

    /// Its name in files.
    pub fn name(self) -> &'static str {
        match self {
            FormatKind::RoundRobin => "round-robin",
            FormatKind::Gauntlet => "gauntlet",
            FormatKind::Single => "single",
            FormatKind::Sprt => "sprt",
            FormatKind::Swiss => "swiss",
            FormatKind::Ladder => "ladder",
        }
    }
}

/// When a round robin may end before its schedule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopWhen {
    /// Once every bot's rating interval is clear of its neighbours' in the standings.
    RankingSettled,
}

/// One map of a tournament file: exactly one of `file`, `seed` or `text`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapEntry {
    /// A map file, relative to the tournament file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// Generate the map with the game's generator from this seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The map itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Shown in match lists; default: the file's name or `seed-N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One bot of a tournament file: a builtin, or a command and/or an image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BotEntry {
    /// Unique within the tournament.
    pub name: String,
    /// A bot compiled into the engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builtin: Option<String>,
    /// How to run it as a local process (`farm-coordinator run`; `sh -c`, in the
    /// directory the farm runs in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its Docker image (workers with the docker sandbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Arguments that replace the image's `CMD` (`docker run IMAGE ARGS...`): one image
    /// may hold several bots. Only with an image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// How it talks.
    #[serde(default)]
    pub transport: Transport,
    /// What its sandbox may use.
    #[serde(default)]
    pub limits: BotLimits,
}

/// One league of a ladder. A bot with at least `min_games` games in it moves up once
/// its mu reaches `promote_at`, or down once it falls below `relegate_below`; a new
/// bot starts in the lowest league, a new version of a bot in its predecessor's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct League {
    /// Shown on the pages.
    pub name: String,
    /// The mu at which a bot moves up; every league but the top has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promote_at: Option<f64>,
    /// The mu under which a bot moves down; the lowest league has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relegate_below: Option<f64>,
    /// Games a bot plays in this league before it may move.
    #[serde(default = "default_league_min_games")]
    pub min_games: u32,
}

fn default_league_min_games() -> u32 {
    limits::LEAGUE_MIN_GAMES.default
}

/// The share of a ladder's matches that may cross into a neighbouring league when the
/// file does not say.
pub const DEFAULT_LEAGUE_CROSSING: f64 = 0.1;

/// Checks a ladder's leagues (lowest first) and its crossing rate.
fn check_leagues(leagues: &[League], crossing: f64) -> Result<(), TournamentError> {
    if let Err(error) = limits::LEAGUES.check(leagues.len()) {
        return Err(invalid(error.key, error.problem()));
    }
    if !(0.0..=1.0).contains(&crossing) {
        return Err(invalid("league_crossing", format!("must be 0 to 1, not {crossing}")));
    }
    let top = leagues.len() - 1;
    for (index, league) in leagues.iter().enumerate() {
        let key = |field: &str| format!("leagues[{index}].{field}");
        check_name(&key("name"), &league.name)?;
        if leagues[..index].iter().any(|other| other.name == league.name) {
            return Err(invalid(key("name"), format!("{:?} is listed twice", league.name)));
        }
        if let Err(error) = limits::LEAGUE_MIN_GAMES.check(league.min_games) {
            return Err(invalid(key("min_games"), error.problem()));
        }
        for (field, value) in [("promote_at", league.promote_at), ("relegate_below", league.relegate_below)] {
            if value.is_some_and(|value| !value.is_finite()) {
                return Err(invalid(key(field), "must be a number"));
            }
        }
        match (index, league.promote_at) {
            (i, Some(_)) if i == top => return Err(invalid(key("promote_at"), "the top league promotes no one")),
            (i, None) if i < top => return Err(invalid(key("promote_at"), "every league below the top needs one")),
            _ => {}
        }
        if index == 0 && league.relegate_below.is_some() {
            return Err(invalid(key("relegate_below"), "the lowest league relegates no one"));
        }
        if let (Some(below), Some(Some(at))) =
            (league.relegate_below, index.checked_sub(1).map(|i| leagues[i].promote_at))
            && below > at
        {
            return Err(invalid(
                key("relegate_below"),
                format!("must be at most the promotion mark below it ({at}): a bot promoted would go down at once"),
            ));
        }
    }
    Ok(())
}

/// A tournament file that cannot be used: the key and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum TournamentError {
    /// Not TOML, or not the expected shape (the message has the line and column).
    #[error("{0}")]
    Syntax(String),
    /// A value that parsed but cannot be used.
    #[error("{key}: {problem}")]
    Invalid {
        /// The key, as a path (`bots[2].command`).
        key: String,
        /// What is wrong.
        problem: String,
    },
    /// A value over one of the farm's ceilings ([`TournamentLimits`]).
    #[error("{key}: {problem}, above this farm's ceiling of {ceiling} ({setting})")]
    OverLimit {
        /// The key, as a path.
        key: String,
        /// What the tournament asks for.
        problem: String,
        /// The ceiling.
        ceiling: u64,
        /// The operator's setting that holds it.
        setting: &'static str,
    },
    /// The file cannot be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

fn invalid(key: impl Into<String>, problem: impl ToString) -> TournamentError {
    TournamentError::Invalid { key: key.into(), problem: problem.to_string() }
}

fn over_jobs(key: &str, problem: String, limits: TournamentLimits) -> TournamentError {
    TournamentError::OverLimit {
        key: key.to_owned(),
        problem,
        ceiling: limits.max_jobs,
        setting: "max_tournament_jobs",
    }
}

/// How a tournament pairs its bots, resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Format {
    /// See [`FormatKind::RoundRobin`].
    RoundRobin {
        /// Bots per match.
        seats: usize,
        /// The most fixtures of an N-player round robin.
        max_matches: u64,
        /// When it may end early; absent from the content (and so from the id) when
        /// not asked.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_when: Option<StopWhen>,
    },
    /// See [`FormatKind::Gauntlet`].
    Gauntlet {
        /// Bots per match.
        seats: usize,
        /// The most fixtures.
        max_matches: u64,
        /// Indices of the candidate bots.
        candidates: Vec<usize>,
    },
    /// See [`FormatKind::Single`].
    Single,
    /// See [`FormatKind::Sprt`].
    Sprt {
        /// Tournament bots per match: 2 with only the candidate and the baseline
        /// (head to head), else the candidate or the baseline and `seats - 1` others.
        seats: usize,
        /// The cap: the most matches it plays.
        max_matches: u64,
        /// Index of the candidate bot.
        candidate: usize,
        /// Index of the baseline bot.
        baseline: usize,
        /// The hypotheses and error rates.
        test: SprtParams,
        /// Matches kept unanswered at once.
        queue_depth: u32,
    },
    /// See [`FormatKind::Swiss`].
    Swiss {
        /// Bots per table.
        seats: usize,
        /// The fewest bots a table may seat: `seats`, or 2 in games that fill empty
        /// seats themselves; fewer bots left over sit the round out (a bye).
        smallest_table: usize,
        /// Rounds.
        rounds: u32,
    },
    /// See [`FormatKind::Ladder`].
    Ladder {
        /// Bots per match.
        seats: usize,
        /// The fewest active bots a match may seat, as for Swiss.
        smallest_table: usize,
        /// The most matches it plays.
        max_matches: u64,
        /// Matches kept unanswered at once.
        queue_depth: u32,
        /// Whether every user may enter their submitted bots (absent from the content,
        /// and so from the id, when not asked).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        open_to_submissions: bool,
        /// Its leagues, lowest first; none: one table for all (absent from the
        /// content, and so from the id, then).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        leagues: Vec<League>,
        /// With leagues, the share of matches whose opponents may come from the
        /// leagues next to the focus bot's (0 without).
        #[serde(default, skip_serializing_if = "is_no_crossing")]
        league_crossing: f64,
        /// Games under which a bot is marked provisional (absent from the content
        /// when the default).
        #[serde(default = "default_provisional_games", skip_serializing_if = "is_default_provisional_games")]
        provisional_games: u32,
    },
}

fn is_no_crossing(crossing: &f64) -> bool {
    *crossing == 0.0
}

fn default_provisional_games() -> u32 {
    limits::PROVISIONAL_GAMES.default
}

fn is_default_provisional_games(games: &u32) -> bool {
    *games == limits::PROVISIONAL_GAMES.default
}

impl Format {
    /// Whether its schedule is decided as results come, by its director, rather than
    /// planned whole when it is submitted.
    pub fn is_adaptive(&self) -> bool {
        matches!(self, Format::Sprt { .. } | Format::Swiss { .. } | Format::Ladder { .. })
    }

    /// Whether the director watches it: an adaptive format, or a round robin that may
    /// stop early.
    pub fn is_directed(&self) -> bool {
        self.is_adaptive() || matches!(self, Format::RoundRobin { stop_when: Some(_), .. })
    }

    /// The most fixtures the format schedules for `bots`, without scheduling them: a
    /// two-seat round robin plays every ordered pair; N-player formats stay within
    /// `max_matches` but always play at least one orbit (every bot in every seat of
    /// its groups, [`schedule::round_robin_groups`]).
    pub fn most_fixtures(&self, bots: usize) -> u64 {
        let bots = bots as u64;
        match self {
            Format::RoundRobin { seats: 2, .. } => bots.saturating_mul(bots.saturating_sub(1)),
            Format::RoundRobin { seats, max_matches, .. } => (*max_matches).max(bots.saturating_mul(*seats as u64)),
            Format::Gauntlet { seats, max_matches, candidates } => {
                let pool = bots.saturating_sub(candidates.len() as u64);
                let orbit = (candidates.len() as u64).saturating_mul(pool).saturating_mul(*seats as u64);
                (*max_matches).max(orbit)
            }
            Format::Single => 1,
            Format::Sprt { max_matches, .. } | Format::Ladder { max_matches, .. } => *max_matches,
            Format::Swiss { smallest_table, rounds, .. } => {
                u64::from(*rounds).saturating_mul(bots.div_ceil(*smallest_table as u64))
            }
        }
    }

    /// How many of a tournament's `bots` each match seats.
    pub fn bots_per_match(&self, bots: usize) -> usize {
        match self {
            Format::RoundRobin { seats, .. }
            | Format::Gauntlet { seats, .. }
            | Format::Sprt { seats, .. }
            | Format::Swiss { seats, .. }
            | Format::Ladder { seats, .. } => *seats,
            Format::Single => bots,
        }
    }
}

/// One map slot of a resolved tournament.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapSlot {
    /// Shown in match lists and used in filters.
    pub name: String,
    /// The map, or none for the game's default generated from each match's seed.
    pub text: Option<String>,
}

/// A validated tournament with everything it needs inline (maps included), so that
/// its content alone decides its id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tournament {
    /// `t-` and 16 hex digits of the hash of everything else.
    pub id: String,
    /// Shown in lists.
    pub name: String,
    /// The game.
    pub game: GameKind,
    /// Rules overrides (preset, then the file's `[rules]`), checked against the game.
    pub rules: serde_json::Value,
    /// The bots; jobs refer to them by index.
    pub bots: Vec<BotEntry>,
    /// At least one.
    pub maps: Vec<MapSlot>,
    /// How bots are paired.
    pub format: Format,
    /// Matches per pairing and map.
    pub games_per_pairing: u32,
    /// The tournament seed.
    pub seed: u64,
    /// The container isolation its matches ask for (see [`TournamentFile::isolation`]);
    /// absent from the content (and so from the id) when not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<ContainerIsolation>,
    /// How its matches time their moves; absent from the content (and so from the id)
    /// when it is the default.
    #[serde(default, skip_serializing_if = "MoveClock::is_default")]
    pub clock: MoveClock,
    /// How far behind their play its matches are shown live, in seconds; absent from
    /// the content (and so from the id) when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub live_delay_secs: u64,
    /// A ladder's bots added and retired while it runs, in order (`bots` holds every
    /// bot it ever had; jobs refer to them by index). Not part of its id, which its
    /// submitted content decided.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roster: Vec<RosterChange>,
}

/// A change to a running ladder's bots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "change")]
pub enum RosterChange {
    /// `bot` joined; with `replaces`, as that bot's new version, which retired then.
    Added {
        /// The new bot's index.
        bot: usize,
        /// The bot it replaces.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replaces: Option<usize>,
    },
    /// `bot` left: it is scheduled no more.
    Retired {
        /// Its index.
        bot: usize,
    },
}

/// One match of a tournament, before it becomes a [`MatchJob`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedJob {
    /// Position in the tournament's schedule, from 0.
    pub position: u64,
    /// Derived from the tournament id, the seating, the map and the repetition.
    pub job_id: String,
    /// The bot (index) in each seat.
    pub seats: Vec<usize>,
    /// Index into [`Tournament::maps`].
    pub map: usize,
    /// Which of the `games_per_pairing` games.
    pub repetition: u32,
    /// The match seed: the same for every seating of the same bots on the same map and
    /// repetition, so both sides of a pairing play the same generated world.
    pub seed: u64,
}

impl TournamentFile {
    /// Parses a tournament file's TOML text.
    pub fn from_toml(text: &str) -> Result<Self, TournamentError> {
        toml::from_str(text).map_err(|error| TournamentError::Syntax(error.to_string().trim_end().to_owned()))
    }

    /// Reads and parses the file at `path`.
    pub fn read(path: &Path) -> Result<Self, TournamentError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| TournamentError::Read { path: path.display().to_string(), source })?;
        Self::from_toml(&text).map_err(|error| match error {
            TournamentError::Syntax(message) => TournamentError::Syntax(format!("{}: {message}", path.display())),
            other => other,
        })
    }

    /// Replaces every map `file` with its `text`, read relative to `base`, so the
    /// tournament can be sent to a coordinator that cannot see this machine's files.
    pub fn inline_maps(&mut self, base: &Path) -> Result<(), TournamentError> {
        for (index, map) in self.maps.iter_mut().enumerate() {
            if let Some(file) = map.file.take() {
                let path = base.join(&file);
                let text = std::fs::read_to_string(&path).map_err(|source| {
                    invalid(format!("maps[{index}].file"), format!("{}: {source}", path.display()))
                })?;
                map.name.get_or_insert_with(|| file_label(&file));
                map.text = Some(text);
            }
        }
        Ok(())
    }

    /// Validates everything and resolves the tournament, refusing what is over
    /// `limits` before any schedule is built. Map files are read relative to `base`;
    /// without one (a tournament sent over the API) they are refused.
    pub fn resolve(self, base: Option<&Path>, limits: TournamentLimits) -> Result<Tournament, TournamentError> {
        let name = self.name.trim().to_owned();
        check_name("name", &name)?;
        let game = self.game;
        let rules = self.resolve_rules()?;
        self.check_bots()?;
        let bot_index = |candidate: &str| self.bots.iter().position(|bot| bot.name == candidate);

        self.check_format_keys()?;
        let seat_range = AnyGame::seats(game);
        // A game that fills empty seats itself (Vindinium's random heroes) can be
        // played by fewer tournament bots than it has seats.
        let fewest = if builtin::seat_filler(game).is_some() { 2 } else { *seat_range.start() };
        let most = *seat_range.end();
        let seats = match self.seats {
            Some(seats) if !(fewest..=most).contains(&seats) => {
                return Err(invalid("seats", format!("{game} matches seat {fewest} to {most} bots, not {seats}")));
            }
            Some(seats) => seats,
            // An SPRT's matches seat the candidate (or the baseline) with the others.
            None if self.format == FormatKind::Sprt && self.bots.len() > 2 => most.min(self.bots.len() - 1).max(fewest),
            None => most.min(self.bots.len()).max(fewest),
        };
        let default_cap = if self.format == FormatKind::Ladder { limits.max_jobs } else { DEFAULT_MAX_MATCHES };
        let max_matches = self.max_matches.unwrap_or(default_cap.min(limits.max_jobs));
        if max_matches == 0 {
            return Err(invalid("max_matches", "must be at least 1"));
        }
        if max_matches > limits.max_jobs {
            return Err(over_jobs("max_matches", format!("{max_matches} matches"), limits));
        }
        // The default queue depth keeps a few workers busy, and is few enough that an
        // SPRT stopping plays little beyond its verdict.
        let queue_depth = self.queue_depth.unwrap_or(limits::QUEUE_DEPTH.default);
        if let Err(error) = limits::QUEUE_DEPTH.check(queue_depth) {
            return Err(invalid(error.key, error.problem()));
        }
        // A Swiss table may be played several times, its seats rotated; the others
        // choose each match.
        if self.format.is_adaptive() && self.format != FormatKind::Swiss && self.games_per_pairing != 1 {
            return Err(invalid(
                "games_per_pairing",
                format!("a {} tournament chooses its own matches: leave games_per_pairing out", self.format.name()),
            ));
        }
        let smallest_table = fewest.max(2).min(seats);
        let format = match self.format {
            FormatKind::RoundRobin => Format::RoundRobin { seats, max_matches, stop_when: self.stop_when },
            FormatKind::Gauntlet => {
                if self.candidates.is_empty() {
                    return Err(invalid("candidates", "a gauntlet needs at least one candidate"));
                }
                let mut candidates = Vec::new();
                for (index, candidate) in self.candidates.iter().enumerate() {
                    let found = bot_index(candidate).ok_or_else(|| {
                        invalid(format!("candidates[{index}]"), format!("no bot is named {candidate:?}"))
                    })?;
                    if candidates.contains(&found) {
                        return Err(invalid(format!("candidates[{index}]"), format!("{candidate:?} is listed twice")));
                    }
                    candidates.push(found);
                }
                Format::Gauntlet { seats, max_matches, candidates }
            }
            FormatKind::Single => {
                if self.seats.is_some() && self.seats != Some(self.bots.len()) {
                    return Err(invalid("seats", "a single match seats every bot listed"));
                }
                if !(fewest..=most).contains(&self.bots.len()) {
                    return Err(invalid(
                        "bots",
                        format!("a single {game} match seats {fewest} to {most} bots, not {}", self.bots.len()),
                    ));
                }
                Format::Single
            }
            FormatKind::Sprt => {
                let named = |key: &str, name: &Option<String>| {
                    let name = name.as_deref().ok_or_else(|| invalid(key, "an sprt needs one"))?;
                    bot_index(name).ok_or_else(|| invalid(key, format!("no bot is named {name:?}")))
                };
                let candidate = named("candidate", &self.candidate)?;
                let baseline = named("baseline", &self.baseline)?;
                if candidate == baseline {
                    return Err(invalid("baseline", "is the candidate: test a bot against another"));
                }
                let others = self.bots.len() - 2;
                if others == 0 && seats != 2 {
                    return Err(invalid(
                        "seats",
                        format!("with only the candidate and the baseline, matches seat both: 2, not {seats}"),
                    ));
                }
                if others > 0 && others < seats - 1 {
                    return Err(invalid(
                        "bots",
                        format!(
                            "matches of {seats} seat the candidate (or the baseline) with {} others, \
                             but only {others} other bots are listed",
                            seats - 1
                        ),
                    ));
                }
                if max_matches < 2 {
                    return Err(invalid("max_matches", "an sprt plays pairs of matches: at least 2"));
                }
                // fishtest's usual bounds: is it at least 5 normalized Elo stronger?
                let test = SprtParams {
                    elo0: self.elo0.unwrap_or(0.0),
                    elo1: self.elo1.unwrap_or(5.0),
                    alpha: self.alpha.unwrap_or(0.05),
                    beta: self.beta.unwrap_or(0.05),
                    model: self.elo_model.unwrap_or(EloModel::Normalized),
                };
                test.check().map_err(|error| invalid(error.key(), error.to_string()))?;
                Format::Sprt { seats, max_matches, candidate, baseline, test, queue_depth }
            }
            FormatKind::Swiss | FormatKind::Ladder if seats < 2 => {
                return Err(invalid("seats", format!("a {} table seats at least 2 bots", self.format.name())));
            }
            FormatKind::Swiss => {
                let rounds = self.rounds.unwrap_or_else(|| crate::swiss::default_rounds(self.bots.len(), seats));
                if let Err(error) = limits::SWISS_ROUNDS.check(rounds) {
                    return Err(invalid(error.key, error.problem()));
                }
                Format::Swiss { seats, smallest_table, rounds }
            }
            FormatKind::Ladder => {
                let league_crossing = match (self.leagues.is_empty(), self.league_crossing) {
                    (true, Some(_)) => return Err(invalid("league_crossing", "only a ladder with leagues takes it")),
                    (true, None) => 0.0,
                    (false, crossing) => crossing.unwrap_or(DEFAULT_LEAGUE_CROSSING),
                };
                if !self.leagues.is_empty() {
                    check_leagues(&self.leagues, league_crossing)?;
                }
                let provisional_games = self.provisional_games.unwrap_or(limits::PROVISIONAL_GAMES.default);
                if let Err(error) = limits::PROVISIONAL_GAMES.check(provisional_games) {
                    return Err(invalid(error.key, error.problem()));
                }
                Format::Ladder {
                    seats,
                    smallest_table,
                    max_matches,
                    queue_depth,
                    open_to_submissions: self.open_to_submissions.unwrap_or(false),
                    leagues: self.leagues.clone(),
                    league_crossing,
                    provisional_games,
                }
            }
        };
        if self.games_per_pairing == 0 {
            return Err(invalid("games_per_pairing", "must be at least 1"));
        }
        let seated = format.bots_per_match(self.bots.len());
        let maps = self.resolve_maps(&rules, base, seated)?;
        let fixtures = format.most_fixtures(self.bots.len());
        let jobs = fixtures.saturating_mul(maps.len() as u64).saturating_mul(u64::from(self.games_per_pairing));
        if jobs > limits.max_jobs {
            // The key named is the factor the author most likely meant to be small.
            let key = match (self.games_per_pairing, maps.len()) {
                (1, 1) if matches!(format, Format::RoundRobin { seats: 2, .. }) => "bots",
                (1, 1) => "max_matches",
                (1, _) => "maps",
                _ => "games_per_pairing",
            };
            let problem = format!(
                "{fixtures} fixtures × {} maps × {} games per pairing make {jobs} jobs",
                maps.len(),
                self.games_per_pairing
            );
            return Err(over_jobs(key, problem, limits));
        }

        let defaults = MoveClock::default();
        let clock = MoveClock {
            kind: self.clock.unwrap_or(defaults.kind),
            time_bank_ms: self.time_bank_ms.unwrap_or(defaults.time_bank_ms),
            wall_backstop: self.wall_backstop.unwrap_or(defaults.wall_backstop),
            ponder: self.ponder.unwrap_or(defaults.ponder),
        };
        clock.check().map_err(|error| invalid(error.key, error.problem))?;
        let live_delay_secs = limits::LIVE_DELAY_SECS
            .check(self.live_delay_secs.unwrap_or(limits::LIVE_DELAY_SECS.default))
            .map_err(|error| invalid(error.key, error.problem()))?;
        let enters_submissions = self.format == FormatKind::Ladder
            || self.bots.iter().any(|bot| bot.image.as_deref().is_some_and(farm_proto::is_submitted_image));
        let isolation = self.isolation.or(enters_submissions.then_some(SUBMITTED_ISOLATION));
        let mut tournament = Tournament {
            id: String::new(),
            name,
            game,
            rules,
            bots: self.bots,
            maps,
            format,
            games_per_pairing: self.games_per_pairing,
            seed: self.seed,
            isolation,
            clock,
            live_delay_secs,
            roster: Vec::new(),
        };
        // Checks the schedule now, so that a bad format is the file's error, not the ledger's.
        drop(tournament.fixtures().map_err(|error| invalid("format", error))?);
        tournament.id = tournament.content_id();
        Ok(tournament)
    }

    /// Refuses the keys of formats other than its own, rather than ignore them.
    fn check_format_keys(&self) -> Result<(), TournamentError> {
        use FormatKind::{Gauntlet, Ladder, RoundRobin, Sprt, Swiss};
        let keys: [(&str, bool, &[FormatKind]); 16] = [
            ("leagues", !self.leagues.is_empty(), &[Ladder]),
            ("league_crossing", self.league_crossing.is_some(), &[Ladder]),
            ("provisional_games", self.provisional_games.is_some(), &[Ladder]),
            ("candidates", !self.candidates.is_empty(), &[Gauntlet]),
            ("candidate", self.candidate.is_some(), &[Sprt]),
            ("baseline", self.baseline.is_some(), &[Sprt]),
            ("elo0", self.elo0.is_some(), &[Sprt]),
            ("elo1", self.elo1.is_some(), &[Sprt]),
            ("alpha", self.alpha.is_some(), &[Sprt]),
            ("beta", self.beta.is_some(), &[Sprt]),
            ("elo_model", self.elo_model.is_some(), &[Sprt]),
            ("rounds", self.rounds.is_some(), &[Swiss]),
            ("queue_depth", self.queue_depth.is_some(), &[Sprt, Ladder]),
            ("open_to_submissions", self.open_to_submissions.is_some(), &[Ladder]),
            ("stop_when", self.stop_when.is_some(), &[RoundRobin]),
            ("max_matches", self.max_matches.is_some(), &[RoundRobin, Gauntlet, Sprt, Ladder]),
        ];
        for (key, given, formats) in keys {
            if given && !formats.contains(&self.format) {
                let names: Vec<String> = formats.iter().map(|format| format!("{:?}", format.name())).collect();
                return Err(invalid(key, format!("only format = {} takes {key}", names.join(" or "))));
            }
        }
        Ok(())
    }

    fn resolve_rules(&self) -> Result<serde_json::Value, TournamentError> {
        let overrides = self.rules.clone().unwrap_or_default();
        let rules = AnyGame::overrides(self.game, self.preset.as_deref(), overrides)
            .map_err(|error| invalid("preset", error))?;
        // Checked now, so a typo fails the submission rather than every match.
        AnyGame::resolve_rules(self.game, &rules).map_err(|error| invalid("rules", error))?;
        Ok(rules)
    }

    fn check_bots(&self) -> Result<(), TournamentError> {
        if self.bots.len() < 2 {
            return Err(invalid("bots", format!("a tournament needs at least 2 bots, not {}", self.bots.len())));
        }
        for (index, bot) in self.bots.iter().enumerate() {
            check_bot(self.game, &self.bots[..index], &format!("bots[{index}]"), bot)?;
        }
        Ok(())
    }

    /// The maps, each checked by loading it for a match of `seated` bots.
    fn resolve_maps(
        &self,
        rules: &serde_json::Value,
        base: Option<&Path>,
        seated: usize,
    ) -> Result<Vec<MapSlot>, TournamentError> {
        let game = self.game;
        // Games that fill seats themselves (Vindinium) always seat their full number.
        let seats = if builtin::seat_filler(game).is_some() { *AnyGame::seats(game).end() } else { seated };
        let sets_up = |map: Option<String>| {
            let players = (0..seats).map(|seat| format!("seat-{seat}")).collect();
            farm_engine::MatchSetup::new(game, rules, map, 0, players)
                .and_then(|setup| farm_engine::Match::new(setup).map(drop))
        };
        if self.maps.is_empty() {
            // What a game checks only when a match is set up (a Botwars grid's size) is
            // checked here, at submission, rather than on every worker.
            sets_up(None).map_err(|error| invalid("rules", error))?;
            return Ok(vec![MapSlot { name: "default".into(), text: None }]);
        }
        let has_maps = AnyGame::default_map(game, rules, 0).map_err(|error| invalid("rules", error))?.is_some();
        if !has_maps {
            return Err(invalid("maps", format!("{game} has no maps")));
        }
        let mut slots = Vec::with_capacity(self.maps.len());
        for (index, entry) in self.maps.iter().enumerate() {
            let key = |field: &str| format!("maps[{index}].{field}");
            let (label, text) = match (&entry.file, entry.seed, &entry.text) {
                (Some(file), None, None) => {
                    let Some(base) = base else {
                        return Err(invalid(
                            key("file"),
                            "map files cannot be read here: send the maps' text (farm-coordinator submit does)",
                        ));
                    };
                    let path = base.join(file);
                    let text = std::fs::read_to_string(&path)
                        .map_err(|source| invalid(key("file"), format!("{}: {source}", path.display())))?;
                    (file_label(file), text)
                }
                (None, Some(seed), None) => {
                    let text = AnyGame::default_map(game, rules, seed)
                        .map_err(|error| invalid(key("seed"), error))?
                        .unwrap_or_default();
                    (format!("seed-{seed}"), text)
                }
                (None, None, Some(text)) => (format!("map-{index}"), text.clone()),
                _ => return Err(invalid(format!("maps[{index}]"), "give exactly one of file, seed or text")),
            };
            let name = entry.name.clone().unwrap_or(label);
            check_name(&key("name"), &name)?;
            // The map must load for the matches it will host.
            sets_up(Some(text.clone()))
                .map_err(|error| invalid(format!("maps[{index}]"), format!("{name}: {error}")))?;
            if slots.iter().any(|slot: &MapSlot| slot.name == name) {
                return Err(invalid(key("name"), format!("{name:?} names an earlier map too")));
            }
            slots.push(MapSlot { name, text: Some(text) });
        }
        Ok(slots)
    }
}

/// Checks `bot`, to join `earlier` bots of a `game` tournament; errors name its
/// fields under `key` (`bots[2]`).
pub fn check_bot(game: GameKind, earlier: &[BotEntry], key: &str, bot: &BotEntry) -> Result<(), TournamentError> {
    let key = |field: &str| format!("{key}.{field}");
    check_name(&key("name"), &bot.name)?;
    if earlier.iter().any(|other| other.name == bot.name) {
        return Err(invalid(key("name"), format!("{:?} is used by an earlier bot", bot.name)));
    }
    match (&bot.builtin, &bot.command, &bot.image) {
        (Some(name), None, None) => {
            if !builtin::names(game).contains(&name.as_str()) {
                return Err(invalid(
                    key("builtin"),
                    format!("{game} has no builtin {name:?}: expected one of {}", builtin::names(game).join(", ")),
                ));
            }
        }
        (Some(_), _, _) => return Err(invalid(key("builtin"), "a builtin has no command or image")),
        (None, None, None) => return Err(invalid(key("command"), "give a builtin, a command or an image")),
        (None, command, image) => {
            if command.as_deref().is_some_and(|c| c.trim().is_empty()) {
                return Err(invalid(key("command"), "is empty"));
            }
            if image.as_deref().is_some_and(|i| i.trim().is_empty() || i.contains(char::is_whitespace)) {
                return Err(invalid(key("image"), "is not an image name"));
            }
        }
    }
    if !bot.args.is_empty() && bot.image.is_none() {
        return Err(invalid(key("args"), "only an image takes args (a command has its own)"));
    }
    farm_proto::check_transport(game, bot.transport).map_err(|problem| invalid(key("transport"), problem))?;
    farm_proto::check_image_args(&bot.args).map_err(|problem| invalid(key("args"), problem))?;
    bot.limits.check().map_err(|problem| invalid(key("limits"), problem))
}

fn file_label(file: &Path) -> String {
    file.file_stem().map_or_else(|| file.display().to_string(), |stem| stem.to_string_lossy().into_owned())
}

fn check_name(key: &str, name: &str) -> Result<(), TournamentError> {
    if name.is_empty() || name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(invalid(key, format!("must be 1 to {MAX_NAME} printable characters")));
    }
    Ok(())
}

/// 64 bits of SHA-256 over `parts`, each length-prefixed so that no two part lists
/// hash alike.
fn hash64(parts: &[&[u8]]) -> u64 {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

fn seat_bytes(seats: &[usize]) -> Vec<u8> {
    seats.iter().flat_map(|&bot| (bot as u64).to_le_bytes()).collect()
}

impl Tournament {
    /// The id its content gives (everything but the id; maps by their text).
    fn content_id(&self) -> String {
        let mut content = self.clone();
        content.id = String::new();
        // serde_json's maps are sorted, so the same content always serializes alike.
        let bytes = serde_json::to_vec(&content).unwrap_or_default();
        format!("t-{:016x}", hash64(&[b"matchfarm tournament v1", &bytes]))
    }

    /// The fixtures of the format, before maps and repetitions (none for an adaptive
    /// format, whose director chooses its matches as it goes).
    fn fixtures(&self) -> Result<Box<dyn Iterator<Item = Fixture> + Send>, ScheduleError> {
        let bots = self.bots.len();
        Ok(match &self.format {
            Format::RoundRobin { seats: 2, .. } => Box::new(schedule::round_robin_pairs(bots)),
            Format::RoundRobin { seats, max_matches, .. } => {
                Box::new(schedule::round_robin_groups(bots, *seats, *max_matches, self.seed)?.into_iter())
            }
            Format::Gauntlet { seats, max_matches, candidates } => {
                let pool: Vec<usize> = (0..bots).filter(|bot| !candidates.contains(bot)).collect();
                Box::new(schedule::gauntlet(candidates, &pool, *seats, *max_matches, self.seed)?.into_iter())
            }
            Format::Single => Box::new(std::iter::once(Fixture { seats: (0..bots).collect() })),
            Format::Sprt { .. } | Format::Swiss { .. } | Format::Ladder { .. } => Box::new(std::iter::empty()),
        })
    }

    /// Every job planned at submission, in schedule order: each fixture on each map,
    /// `games_per_pairing` times. Lazy, so a million-job round robin is never held
    /// whole. A round robin that may stop early plays every fixture once before any
    /// twice (repetition first), so that wherever it stops every pairing has played
    /// about as often. Adaptive formats plan nothing here.
    pub fn plan(&self) -> Result<impl Iterator<Item = PlannedJob> + Send + use<>, ScheduleError> {
        let maps = self.maps.len();
        let repetitions = self.games_per_pairing;
        let slots: Box<dyn Iterator<Item = (Fixture, usize, u32)> + Send> =
            if matches!(self.format, Format::RoundRobin { stop_when: Some(_), .. }) {
                drop(self.fixtures()?);
                // The fixtures again for every repetition and map, rather than held whole.
                let this = std::sync::Arc::new(self.clone());
                Box::new((0..repetitions).flat_map(move |repetition| {
                    let this = std::sync::Arc::clone(&this);
                    (0..maps).flat_map(move |map| {
                        this.fixtures().into_iter().flatten().map(move |fixture| (fixture, map, repetition))
                    })
                }))
            } else {
                Box::new(self.fixtures()?.flat_map(move |fixture| {
                    (0..maps).flat_map(move |map| {
                        let fixture = fixture.clone();
                        (0..repetitions).map(move |repetition| (fixture.clone(), map, repetition))
                    })
                }))
            };
        let id = self.id.clone();
        let seed = self.seed;
        let plan = slots.enumerate().map(move |(position, (fixture, map, repetition))| {
            let map_and_repetition = [(map as u64).to_le_bytes(), u64::from(repetition).to_le_bytes()].concat();
            let job = hash64(&[b"job", id.as_bytes(), &seat_bytes(&fixture.seats), &map_and_repetition]);
            let mut bots = fixture.seats.clone();
            bots.sort_unstable();
            let match_seed = hash64(&[b"seed", &seed.to_le_bytes(), &seat_bytes(&bots), &map_and_repetition]);
            PlannedJob {
                position: position as u64,
                job_id: format!("j-{job:016x}"),
                seats: fixture.seats,
                map,
                repetition,
                seed: match_seed,
            }
        });
        Ok(plan)
    }

    /// The most jobs submitting it queues at once: its whole schedule, or none for an
    /// adaptive format, whose director queues a few at a time as results come.
    pub fn most_jobs_at_submission(&self) -> u64 {
        if self.format.is_adaptive() {
            return 0;
        }
        self.format
            .most_fixtures(self.bots.len())
            .saturating_mul(self.maps.len() as u64)
            .saturating_mul(u64::from(self.games_per_pairing))
    }

    /// The job at `position` of an adaptive format, seating `seats` on map `map` with
    /// the seed `seed` (which the director derives with [`Tournament::derived_seed`]);
    /// `repetition` is the format's round (the pair of an SPRT, the round of a Swiss).
    pub fn adaptive_job(&self, position: u64, seats: Vec<usize>, repetition: u32, seed: u64) -> PlannedJob {
        let job = hash64(&[b"adaptive job", self.id.as_bytes(), &position.to_le_bytes()]);
        let map = if self.maps.is_empty() { 0 } else { (u64::from(repetition) % self.maps.len() as u64) as usize };
        PlannedJob { position, job_id: format!("j-{job:016x}"), seats, map, repetition, seed }
    }

    /// A match seed for an adaptive format, from the tournament's seed, a label of
    /// what it seeds and its numbers.
    pub fn derived_seed(&self, label: &str, numbers: &[u64]) -> u64 {
        let numbers: Vec<u8> = numbers.iter().flat_map(|number| number.to_le_bytes()).collect();
        hash64(&[b"seed", &self.seed.to_le_bytes(), label.as_bytes(), &numbers])
    }

    /// The bot at `index` as a worker runs it under `mode`.
    pub fn bot_spec(&self, index: usize, mode: SandboxKind) -> Result<BotSpec, TournamentError> {
        let bot = self.bots.get(index).ok_or_else(|| invalid(format!("bots[{index}]"), "no such bot"))?;
        let launch = match (&bot.builtin, mode) {
            (Some(name), _) => BotLaunch::Builtin(name.clone()),
            (None, SandboxKind::Local | SandboxKind::Isolated) => {
                BotLaunch::Command(bot.command.clone().ok_or_else(|| {
                    invalid(
                        format!("bots[{index}].command"),
                        format!("{} has no command to run locally (it has an image: use the docker sandbox)", bot.name),
                    )
                })?)
            }
            (None, SandboxKind::Docker) => BotLaunch::Image(bot.image.clone().ok_or_else(|| {
                invalid(format!("bots[{index}].image"), format!("{} has no image to run in Docker", bot.name))
            })?),
        };
        let args = if matches!(launch, BotLaunch::Image(_)) { bot.args.clone() } else { Vec::new() };
        Ok(BotSpec { name: bot.name.clone(), launch, transport: bot.transport, limits: bot.limits.clone(), args })
    }

    /// Checks that every bot can run under `mode`, naming the first that cannot.
    pub fn check_launchable(&self, mode: SandboxKind) -> Result<Vec<BotSpec>, TournamentError> {
        (0..self.bots.len()).map(|index| self.bot_spec(index, mode)).collect()
    }

    /// The job a worker plays for `planned`, with bots launched as `specs` says
    /// (from [`Tournament::check_launchable`]).
    pub fn job(&self, planned: &PlannedJob, specs: &[BotSpec]) -> MatchJob {
        MatchJob {
            job_id: planned.job_id.clone(),
            tournament_id: self.id.clone(),
            game: self.game,
            rules: self.rules.clone(),
            map: self.maps.get(planned.map).and_then(|slot| slot.text.clone()),
            seed: planned.seed,
            bots: planned.seats.iter().filter_map(|&bot| specs.get(bot).cloned()).collect(),
            isolation: self.isolation,
            clock: self.clock,
        }
    }

    /// For each bot, the bot it replaced, if any: a ladder's new version of a bot
    /// ([`RosterChange::Added`]), which starts from its predecessor's rating.
    pub fn predecessors(&self) -> Vec<Option<usize>> {
        let mut predecessors = vec![None; self.bots.len()];
        for change in &self.roster {
            if let RosterChange::Added { bot, replaces: Some(old) } = change
                && let Some(slot) = predecessors.get_mut(*bot)
            {
                *slot = Some(*old);
            }
        }
        predecessors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTWARS: &str = r#"
name = "botwars test"
game = "botwars"
format = "round-robin"
games_per_pairing = 2
seed = 5
[[bots]]
name = "a"
builtin = "random"
[[bots]]
name = "b"
builtin = "gatherer"
[[bots]]
name = "c"
command = "python3 bots/botwars/random_bot.py"
image = "matchfarm/bot-botwars-random-py"
"#;

    fn resolve(text: &str) -> Result<Tournament, TournamentError> {
        TournamentFile::from_toml(text)?.resolve(None, TournamentLimits::default())
    }

    #[test]
    fn a_round_robin_of_two_seats_plays_every_pair_on_both_sides_with_shared_seeds() {
        let tournament = resolve(BOTWARS).expect("valid");
        let jobs: Vec<PlannedJob> = tournament.plan().expect("plan").collect();
        assert_eq!(jobs.len(), 3 * 2 * 2, "6 ordered pairs, 2 games each");
        for (position, job) in jobs.iter().enumerate() {
            assert_eq!(job.position, position as u64);
            let mirror = jobs
                .iter()
                .find(|other| other.seats == [job.seats[1], job.seats[0]] && other.repetition == job.repetition)
                .expect("the other side");
            assert_eq!(mirror.seed, job.seed, "both sides of a pairing share the seed");
            assert_ne!(mirror.job_id, job.job_id);
        }
        let mut ids: Vec<&str> = jobs.iter().map(|job| job.job_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), jobs.len(), "ids are unique");
    }

    #[test]
    fn the_same_content_gives_the_same_ids_and_any_change_new_ones() {
        let first = resolve(BOTWARS).expect("valid");
        let again = resolve(&BOTWARS.replace("seed = 5", "seed = 5 # same")).expect("valid");
        assert_eq!(first.id, again.id);
        let ids = |t: &Tournament| t.plan().expect("plan").map(|job| (job.job_id, job.seed)).collect::<Vec<_>>();
        assert_eq!(ids(&first), ids(&again));
        let reseeded = resolve(&BOTWARS.replace("seed = 5", "seed = 6")).expect("valid");
        assert_ne!(first.id, reseeded.id);
        assert!(ids(&first).iter().zip(ids(&reseeded)).all(|(a, b)| a.0 != b.0 && a.1 != b.1));
    }

    #[test]
    fn a_tournament_that_sets_its_clock_puts_it_in_every_job_and_others_keep_their_ids() {
        let plain = resolve(BOTWARS).expect("valid");
        let timed = "seed = 5\nclock = \"cpu\"\ntime_bank_ms = 2000\nwall_backstop = 3\nponder = true";
        let cpu = resolve(&BOTWARS.replace("seed = 5", timed)).expect("valid");
        let expected = MoveClock { kind: ClockKind::Cpu, time_bank_ms: 2000, wall_backstop: 3, ponder: true };
        assert_eq!(cpu.clock, expected);
        assert_ne!(cpu.id, plain.id, "a different tournament");
        let specs = plain.check_launchable(SandboxKind::Local).expect("all local");
        let first = |t: &Tournament| t.job(&t.plan().expect("plan").next().expect("a job"), &specs);
        assert_eq!(first(&cpu).clock, expected);
        assert!(first(&plain).clock.is_default());
        let content = serde_json::to_string(&plain).expect("serialize");
        assert!(!content.contains("clock"), "{content}");
        for (key, value) in [("time_bank_ms", "600001"), ("wall_backstop", "0"), ("clock", "\"sundial\"")] {
            let error = resolve(&BOTWARS.replace("seed = 5", &format!("seed = 5\n{key} = {value}"))).expect_err(key);
            assert!(error.to_string().contains(key), "{key}: {error}");
        }
    }

    #[test]
    fn a_broadcast_delay_is_kept_within_its_range_and_absent_from_the_content_when_none() {
        let plain = resolve(BOTWARS).expect("valid");
        assert_eq!(plain.live_delay_secs, 0);
        let content = serde_json::to_string(&plain).expect("serialize");
        assert!(!content.contains("live_delay_secs"), "ids of tournaments without one stay: {content}");
        let delayed = resolve(&BOTWARS.replace("seed = 5", "seed = 5\nlive_delay_secs = 90")).expect("valid");
        assert_eq!(delayed.live_delay_secs, 90);
        assert_ne!(delayed.id, plain.id);
        let error = resolve(&BOTWARS.replace("seed = 5", "seed = 5\nlive_delay_secs = 3601")).expect_err("too long");
        assert!(error.to_string().contains("live_delay_secs: must be 0 to 3600, not 3601"), "{error}");
    }

    #[test]
    fn tournaments_that_take_submitted_bots_get_fresh_containers_unless_they_ask_for_reuse() {
        let submitted = BOTWARS.replace(
            "image = \"matchfarm/bot-botwars-random-py\"",
            "image = \"127.0.0.1:5055/matchfarm-bots/ada@sha256:0123\"",
        );
        assert_eq!(resolve(&submitted).expect("valid").isolation, Some(SUBMITTED_ISOLATION));
        let reused = submitted.replace("seed = 5", "seed = 5\nisolation = \"reused\"");
        assert_eq!(resolve(&reused).expect("valid").isolation, Some(ContainerIsolation::Reused));
        let ladder = "name = \"l\"\ngame = \"botwars\"\nformat = \"ladder\"\nseed = 1\n\
                      [[bots]]\nname = \"a\"\nbuiltin = \"random\"\n[[bots]]\nname = \"b\"\nbuiltin = \"gatherer\"\n";
        assert_eq!(resolve(ladder).expect("valid").isolation, Some(SUBMITTED_ISOLATION));
        assert_eq!(resolve(BOTWARS).expect("valid").isolation, None, "operators' images: as the workers say");
    }

    #[test]
    fn a_tournament_that_asks_for_fresh_containers_puts_it_in_every_job_and_others_keep_their_ids() {
        let plain = resolve(BOTWARS).expect("valid");
        let fresh = resolve(&BOTWARS.replace("seed = 5", "seed = 5\nisolation = \"fresh-container\"")).expect("valid");
        assert_eq!(fresh.isolation, Some(ContainerIsolation::FreshContainer));
        assert_ne!(fresh.id, plain.id, "a different tournament");
        let specs = plain.check_launchable(SandboxKind::Docker).expect("all docker");
        let first = |t: &Tournament| t.job(&t.plan().expect("plan").next().expect("a job"), &specs);
        assert_eq!(first(&fresh).isolation, Some(ContainerIsolation::FreshContainer));
        assert_eq!(first(&plain).isolation, None);
        // Not asking writes nothing: the content (and so every id) is as before the key existed.
        let content = serde_json::to_string(&plain).expect("serialize");
        assert!(!content.contains("isolation"), "{content}");
        let job = serde_json::to_string(&first(&plain)).expect("serialize");
        assert!(!job.contains("isolation"), "{job}");
        let error = resolve(&BOTWARS.replace("seed = 5", "seed = 5\nisolation = \"shared\"")).expect_err("unknown");
        assert!(error.to_string().contains("isolation"), "{error}");
    }

    #[test]
    fn bots_launch_by_command_locally_and_by_image_in_docker() {
        let tournament = resolve(BOTWARS).expect("valid");
        let local = tournament.check_launchable(SandboxKind::Local).expect("all local");
        assert_eq!(local[2].launch, BotLaunch::Command("python3 bots/botwars/random_bot.py".into()));
        assert_eq!(local[0].launch, BotLaunch::Builtin("random".into()));
        let docker = tournament.check_launchable(SandboxKind::Docker).expect("all docker");
        assert_eq!(docker[2].launch, BotLaunch::Image("matchfarm/bot-botwars-random-py".into()));
        let image_only =
            resolve(&BOTWARS.replace("command = \"python3 bots/botwars/random_bot.py\"\n", "")).expect("valid");
        let error = image_only.check_launchable(SandboxKind::Local).expect_err("no command");
        assert!(error.to_string().starts_with("bots[2].command: c has no command"), "{error}");
        let job = tournament.job(&tournament.plan().expect("plan").next().expect("a job"), &local);
        assert_eq!(job.bots.len(), 2);
        assert_eq!(job.tournament_id, tournament.id);
    }

    #[test]
    fn an_image_bot_takes_args_in_docker_and_a_local_run_ignores_them() {
        let image = "image = \"matchfarm/bot-botwars-random-py\"";
        let with_args =
            resolve(&BOTWARS.replace(image, &format!("{image}\nargs = [\"--fast\", \"x y\"]"))).expect("valid");
        assert_ne!(with_args.id, resolve(BOTWARS).expect("valid").id, "the args are part of the tournament");
        let docker = with_args.check_launchable(SandboxKind::Docker).expect("all docker");
        assert_eq!(docker[2].args, ["--fast", "x y"]);
        assert_eq!(docker[0].args, Vec::<String>::new());
        let local = with_args.check_launchable(SandboxKind::Local).expect("all local");
        assert!(local[2].args.is_empty(), "a command has its own arguments");
        assert!(local.iter().chain(&docker).all(|spec| spec.check().is_ok()));
    }

    #[test]
    fn errors_name_the_key_and_the_problem() {
        let cases: &[(&str, &str, &str)] = &[
            ("format = \"round-robin\"", "format = \"knockout\"", "unknown variant `knockout`"),
            ("seed = 5", "seed = 5\ncolour = 1", "unknown field `colour`"),
            ("seed = 5", "seed = \"five\"", "seed"),
            ("name = \"b\"", "name = \"a\"", "bots[1].name: \"a\" is used by an earlier bot"),
            ("builtin = \"gatherer\"", "builtin = \"smart\"", "bots[1].builtin: botwars has no builtin \"smart\""),
            ("builtin = \"gatherer\"", "", "bots[1].command: give a builtin, a command or an image"),
            ("games_per_pairing = 2", "games_per_pairing = 0", "games_per_pairing: must be at least 1"),
            ("seed = 5", "seed = 5\n[rules]\nturnz = 3", "rules: invalid botwars rules"),
            ("seed = 5", "seed = 5\n[rules]\nrows = 4294967294", "rows and cols must be 3 to 100"),
            ("seed = 5", "seed = 5\npreset = \"Final\"", "preset: invalid botwars rules: unknown preset \"Final\""),
            ("seed = 5", "seed = 5\nmaps = [{ seed = 1 }]", "maps: botwars has no maps"),
            ("seed = 5", "seed = 5\nseats = 3", "seats: botwars matches seat 2 to 2 bots, not 3"),
            ("format = \"round-robin\"", "format = \"gauntlet\"", "candidates: a gauntlet needs at least one"),
            ("seed = 5", "seed = 5\ncandidates = [\"a\"]", "candidates: only format = \"gauntlet\" takes candidates"),
            (
                "[[bots]]\nname = \"c\"",
                "[bots.limits]\nmemory_mib = 1\n[[bots]]\nname = \"c\"",
                "bots[1].limits: memory_mib must be",
            ),
            (
                "builtin = \"gatherer\"",
                "builtin = \"gatherer\"\nargs = [\"x\"]",
                "bots[1].args: only an image takes args",
            ),
            (
                "image = \"matchfarm/bot-botwars-random-py\"",
                "image = \"i\"\nargs = [\"a\\u0000\"]",
                "bots[2].args: argument 0 holds a NUL",
            ),
            (
                "image = \"matchfarm/bot-botwars-random-py\"",
                "image = \"i\"\ntransport = \"vindinium-server\"",
                "bots[2].transport: vindinium-server is vindinium's own API, and this is botwars",
            ),
        ];
        for (from, to, expected) in cases {
            assert!(BOTWARS.contains(from), "{from}");
            let error = resolve(&BOTWARS.replacen(from, to, 1)).expect_err(to).to_string();
            assert!(error.contains(expected), "{to:?} gave {error:?}, expected {expected:?}");
        }
        let error = resolve("name = \"x\"\ngame = \"chess\"").expect_err("unknown game").to_string();
        assert!(error.contains("line 2"), "TOML errors carry the line: {error}");
    }

    #[test]
    fn maps_load_from_files_seeds_and_text_and_bad_maps_are_refused() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let text = r#"
name = "v"
game = "vindinium"
format = "round-robin"
maps = [{ file = "maps/vindinium/m1.txt" }, { seed = 3 }]
[[bots]]
name = "a"
builtin = "random"
[[bots]]
name = "b"
builtin = "greedy"
"#;
        let file = TournamentFile::from_toml(text).expect("parses");
        let error =
            file.clone().resolve(None, TournamentLimits::default()).expect_err("no files over the API").to_string();
        assert!(error.starts_with("maps[0].file: map files cannot be read here"), "{error}");
        let tournament = file.clone().resolve(Some(&root), TournamentLimits::default()).expect("valid");
        assert_eq!(tournament.maps.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["m1", "seed-3"]);
        assert!(tournament.maps.iter().all(|map| map.text.is_some()));
        assert_eq!(
            tournament.format,
            Format::RoundRobin { seats: 2, max_matches: DEFAULT_MAX_MATCHES, stop_when: None }
        );
        let mut inlined = file;
        inlined.inline_maps(&root).expect("inline");
        assert_eq!(
            inlined.resolve(None, TournamentLimits::default()).expect("valid").id,
            tournament.id,
            "inlining keeps the content"
        );
        let broken = text.replace("{ seed = 3 }", "{ text = \"##@1\" }");
        let error = TournamentFile::from_toml(&broken)
            .expect("parses")
            .resolve(Some(&root), TournamentLimits::default())
            .expect_err("bad map");
        assert!(error.to_string().starts_with("maps[1]: map-1: invalid vindinium map"), "{error}");
    }

    fn vindinium(bots: usize, extra: &str) -> String {
        let mut text = format!("name = \"v\"\ngame = \"vindinium\"\n{extra}\n");
        for bot in 0..bots {
            let builtin = if bot % 2 == 0 { "random" } else { "greedy" };
            text.push_str(&format!("[[bots]]\nname = \"bot{bot}\"\nbuiltin = \"{builtin}\"\n"));
        }
        text
    }

    #[test]
    fn n_player_round_robins_seat_every_bot_equally_and_a_cap_picks_a_balanced_subset() {
        let full = resolve(&vindinium(5, "format = \"round-robin\"")).expect("valid");
        assert_eq!(full.format, Format::RoundRobin { seats: 4, max_matches: DEFAULT_MAX_MATCHES, stop_when: None });
        let jobs: Vec<PlannedJob> = full.plan().expect("plan").collect();
        assert_eq!(jobs.len(), 5 * 4, "C(5,4) groups in 4 rotations");
        for bot in 0..5 {
            for seat in 0..4 {
                assert_eq!(jobs.iter().filter(|job| job.seats[seat] == bot).count(), 4, "bot {bot} seat {seat}");
            }
        }
        let capped = resolve(&vindinium(12, "format = \"round-robin\"\nmax_matches = 100")).expect("valid");
        let jobs: Vec<PlannedJob> = capped.plan().expect("plan").collect();
        assert!(jobs.len() <= 100 && !jobs.is_empty(), "{}", jobs.len());
        let per_bot: Vec<usize> =
            (0..12).map(|bot| jobs.iter().filter(|job| job.seats.contains(&bot)).count()).collect();
        assert!(per_bot.iter().all(|&count| count == per_bot[0]), "every bot plays as often: {per_bot:?}");
    }

    #[test]
    fn what_is_over_the_job_ceiling_is_refused_naming_the_key_before_anything_is_scheduled() {
        let over = |text: &str, max_jobs: u64| {
            let error = TournamentFile::from_toml(text)
                .expect("parses")
                .resolve(None, TournamentLimits { max_jobs })
                .expect_err("over the ceiling");
            assert!(matches!(error, TournamentError::OverLimit { .. }), "{error}");
            error.to_string()
        };
        // 6 ordered pairs × 2 games: 12 jobs.
        assert_eq!(
            over(BOTWARS, 11),
            "games_per_pairing: 6 fixtures × 1 maps × 2 games per pairing make 12 jobs, \
             above this farm's ceiling of 11 (max_tournament_jobs)"
        );
        let exactly =
            TournamentFile::from_toml(BOTWARS).expect("parses").resolve(None, TournamentLimits { max_jobs: 12 });
        assert_eq!(exactly.expect("at the ceiling").plan().expect("plan").count(), 12);
        // About 10^12 matches: a thousand bots, a million games per pairing.
        let mut huge = vindinium(1000, "format = \"round-robin\"\nseats = 2\ngames_per_pairing = 1000000");
        let error = over(&huge, TournamentLimits::default().max_jobs);
        assert!(error.starts_with("games_per_pairing: 999000 fixtures × 1 maps × 1000000 games"), "{error}");
        huge = huge.replace("games_per_pairing = 1000000", "games_per_pairing = 1");
        assert!(over(&huge, 100_000).starts_with("bots: 999000 fixtures"));
        // N-player formats: max_matches itself, and the one orbit always played.
        let error = over(&vindinium(40, "format = \"round-robin\"\nmax_matches = 1000000000000"), 1_000_000);
        assert_eq!(
            error,
            "max_matches: 1000000000000 matches, above this farm's ceiling of 1000000 (max_tournament_jobs)"
        );
        assert!(
            over(&vindinium(40, "format = \"round-robin\"\nmax_matches = 10"), 100)
                .starts_with("max_matches: 160 fixtures")
        );
        let gauntlet = vindinium(30, "format = \"gauntlet\"\ncandidates = [\"bot0\", \"bot1\"]");
        assert!(
            over(&gauntlet, 200).starts_with("max_matches: 224 fixtures"),
            "one orbit: 2 candidates × 28 × 4 seats"
        );
        // Without a cap in the file, the default stays within a lower ceiling.
        let capped = resolve(&vindinium(12, "format = \"round-robin\"")).expect("valid");
        assert_eq!(capped.format, Format::RoundRobin { seats: 4, max_matches: DEFAULT_MAX_MATCHES, stop_when: None });
        let small = TournamentFile::from_toml(&vindinium(12, "format = \"round-robin\""))
            .expect("parses")
            .resolve(None, TournamentLimits { max_jobs: 1000 })
            .expect("the default cap shrinks to the ceiling");
        assert_eq!(small.format, Format::RoundRobin { seats: 4, max_matches: 1000, stop_when: None });
    }

    #[test]
    fn directed_formats_take_their_own_keys_with_defaults_and_refuse_the_others() {
        let sprt = "format = \"sprt\"\ncandidate = \"b\"\nbaseline = \"a\"";
        let two = |extra: &str| {
            let mut text = format!("name = \"t\"\ngame = \"botwars\"\n{extra}\n");
            for bot in ["a", "b"] {
                text.push_str(&format!("[[bots]]\nname = \"{bot}\"\nbuiltin = \"random\"\n"));
            }
            text
        };
        let tournament = resolve(&two(sprt)).expect("valid");
        let Format::Sprt { seats, max_matches, candidate, baseline, test, queue_depth } = tournament.format else {
            panic!("{:?}", tournament.format)
        };
        assert_eq!((seats, max_matches, candidate, baseline, queue_depth), (2, DEFAULT_MAX_MATCHES, 1, 0, 16));
        assert_eq!(
            (test.elo0, test.elo1, test.alpha, test.beta, test.model),
            (0.0, 5.0, 0.05, 0.05, EloModel::Normalized)
        );
        assert_eq!(tournament.plan().expect("plan").count(), 0, "its director schedules it");
        let ladder = "format = \"ladder\"";
        let (bronze, gold) = ("\n[[leagues]]\nname = \"Bronze\"\npromote_at = 26", "\n[[leagues]]\nname = \"Gold\"");
        // Two leagues, with `low` and `high` added to the lower's and the upper's keys.
        let leagues = |low: &str, high: &str| {
            format!("{ladder}\n[[leagues]]\nname = \"Low\"\n{low}\n[[leagues]]\nname = \"High\"\n{high}")
        };
        let cases: &[(&str, &str)] = &[
            ("format = \"sprt\"\nbaseline = \"a\"", "candidate: an sprt needs one"),
            ("format = \"sprt\"\ncandidate = \"b\"\nbaseline = \"b\"", "baseline: is the candidate"),
            ("format = \"sprt\"\ncandidate = \"x\"\nbaseline = \"a\"", "candidate: no bot is named \"x\""),
            (&format!("{sprt}\nelo0 = 5\nelo1 = 5"), "elo1: `elo1` = 5 must be above `elo0` = 5"),
            (&format!("{sprt}\nalpha = 0.7"), "alpha: `alpha` = 0.7 must be in (0, 0.5]"),
            (&format!("{sprt}\nmax_matches = 1"), "max_matches: an sprt plays pairs of matches"),
            (&format!("{sprt}\nqueue_depth = 0"), "queue_depth: must be 1 to 10000, not 0"),
            (&format!("{sprt}\ngames_per_pairing = 2"), "games_per_pairing: a sprt tournament chooses its own matches"),
            ("format = \"round-robin\"\nrounds = 3", "rounds: only format = \"swiss\" takes rounds"),
            ("format = \"swiss\"\nelo0 = 1", "elo0: only format = \"sprt\" takes elo0"),
            ("format = \"ladder\"\nstop_when = \"ranking-settled\"", "stop_when: only format = \"round-robin\""),
            ("format = \"single\"\nqueue_depth = 3", "queue_depth: only format = \"sprt\" or \"ladder\" takes"),
            ("format = \"swiss\"\nprovisional_games = 3", "provisional_games: only format = \"ladder\" takes"),
            ("format = \"ladder\"\nleague_crossing = 0.2", "league_crossing: only a ladder with leagues takes it"),
            (&format!("{ladder}\nprovisional_games = 10001"), "provisional_games: must be 0 to 10000, not 10001"),
            (&format!("{ladder}{bronze}"), "leagues: must be 2 to 16, not 1"),
            (&format!("{ladder}\nleague_crossing = 1.5{bronze}{gold}"), "league_crossing: must be 0 to 1, not 1.5"),
            (&leagues("", ""), "leagues[0].promote_at: every league below the top needs one"),
            (&leagues("promote_at = 1", "promote_at = 2"), "leagues[1].promote_at: the top league promotes no one"),
            (
                &leagues("promote_at = 1\nrelegate_below = 0", ""),
                "leagues[0].relegate_below: the lowest league relegates no one",
            ),
            (&leagues("promote_at = 30", "relegate_below = 31"), "leagues[1].relegate_below: must be at most"),
            (&leagues("promote_at = 30\nmin_games = 0", ""), "leagues[0].min_games: must be 1 to 10000, not 0"),
            (&leagues("promote_at = nan", ""), "leagues[0].promote_at: must be a number"),
            (&format!("{ladder}{bronze}{bronze}"), "leagues[1].name: \"Bronze\" is listed twice"),
            (&format!("{ladder}{bronze}\ncolour = 1{gold}"), "TOML parse error at line 7, column 1"),
        ];
        for (extra, expected) in cases {
            let error = resolve(&two(extra)).expect_err(extra).to_string();
            assert!(error.starts_with(expected), "{extra:?} gave {error:?}, expected {expected:?}");
        }
        let swiss = resolve(&two("format = \"swiss\"")).expect("valid");
        assert_eq!(swiss.format, Format::Swiss { seats: 2, smallest_table: 2, rounds: 1 });
        let ladder = TournamentFile::from_toml(&two("format = \"ladder\""))
            .expect("parses")
            .resolve(None, TournamentLimits { max_jobs: 500 })
            .expect("valid");
        assert_eq!(
            ladder.format,
            Format::Ladder {
                seats: 2,
                smallest_table: 2,
                max_matches: 500,
                queue_depth: 16,
                open_to_submissions: false,
                leagues: Vec::new(),
                league_crossing: 0.0,
                provisional_games: 10,
            }
        );
        // Vindinium fills empty seats: its Swiss tables may be short, its N-player SPRT
        // seats the candidate with the others.
        let text = vindinium(5, "format = \"sprt\"\ncandidate = \"bot1\"\nbaseline = \"bot0\"");
        assert!(matches!(resolve(&text).expect("valid").format, Format::Sprt { seats: 4, .. }));
        let swiss = resolve(&vindinium(6, "format = \"swiss\"")).expect("valid");
        assert_eq!(swiss.format, Format::Swiss { seats: 4, smallest_table: 2, rounds: 2 });
        let error = resolve(&vindinium(3, "format = \"sprt\"\ncandidate = \"bot1\"\nbaseline = \"bot0\"\nseats = 3"))
            .expect_err("one other bot for two places");
        assert!(error.to_string().starts_with("bots: matches of 3 seat the candidate"), "{error}");
    }

    #[test]
    fn a_gauntlet_never_pits_candidates_against_each_other() {
        let text = vindinium(6, "format = \"gauntlet\"\nseats = 2\ncandidates = [\"bot0\", \"bot1\"]");
        let tournament = resolve(&text).expect("valid");
        let jobs: Vec<PlannedJob> = tournament.plan().expect("plan").collect();
        assert_eq!(jobs.len(), 2 * 4 * 2, "each candidate meets each of 4 pool bots on both sides");
        assert!(jobs.iter().all(|job| job.seats.iter().filter(|&&bot| bot < 2).count() == 1));
        let error = resolve(&vindinium(3, "format = \"gauntlet\"\ncandidates = [\"nobody\"]")).expect_err("unknown");
        assert_eq!(error.to_string(), "candidates[0]: no bot is named \"nobody\"");
    }

    #[test]
    fn a_single_match_seats_the_bots_in_order() {
        let tournament = resolve(&vindinium(3, "format = \"single\"\ngames_per_pairing = 2")).expect("valid");
        let jobs: Vec<PlannedJob> = tournament.plan().expect("plan").collect();
        assert_eq!(jobs.iter().map(|job| job.seats.clone()).collect::<Vec<_>>(), [vec![0, 1, 2], vec![0, 1, 2]]);
        let error = resolve(&vindinium(5, "format = \"single\"")).expect_err("too many");
        assert_eq!(error.to_string(), "bots: a single vindinium match seats 2 to 4 bots, not 5");
    }
}
