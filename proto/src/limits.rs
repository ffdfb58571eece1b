//! Every limit on what an outsider can make the farm spend, in one place: its key, its
//! default, its range (the operator's ceiling, or what a tournament may ask), who sets
//! it and what happens past it. The components read their bounds from here, and
//! [`markdown`] renders the table the book's Limits page holds (a test keeps the two
//! equal), so a bound changed in code is a bound changed in the docs.
//!
//! A [`Bound`] is a number someone may set, checked with [`Bound::check`]; a plain
//! constant is a limit fixed in the code.

use std::fmt::{self, Display};

/// What a number may be: the key that sets it and its range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range<T> {
    /// The key that sets it, as the configuration or a tournament file names it.
    pub key: &'static str,
    /// The least it may be.
    pub min: T,
    /// The most it may be; `None`: no ceiling but the type's.
    pub max: Option<T>,
}

/// A number an operator or an author may set: its range and its default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound<T> {
    /// What it may be.
    pub range: Range<T>,
    /// Its value when not set.
    pub default: T,
}

/// A value outside its [`Range`]; the message names the key and the range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} must be {range}, not {value}")]
pub struct OutOfBounds {
    /// The key, as [`Range::key`].
    pub key: &'static str,
    /// The range, as "1 to 64" or "at least 1".
    pub range: String,
    /// The value given.
    pub value: String,
}

impl OutOfBounds {
    /// What is wrong, without the key: "must be 1 to 64, not 65".
    pub fn problem(&self) -> String {
        format!("must be {}, not {}", self.range, self.value)
    }
}

/// The settings' checks answer a `String` naming the key; this lets them use `?`.
impl From<OutOfBounds> for String {
    fn from(error: OutOfBounds) -> String {
        error.to_string()
    }
}

impl<T: Copy + PartialOrd + Display> Range<T> {
    /// `value` if it is within the range, else which key and range it misses.
    pub fn check(&self, value: T) -> Result<T, OutOfBounds> {
        if value >= self.min && self.max.is_none_or(|max| value <= max) {
            Ok(value)
        } else {
            Err(OutOfBounds { key: self.key, range: self.words(), value: value.to_string() })
        }
    }

    /// The range in words: "1 to 64", or "at least 1" without a ceiling.
    pub fn words(&self) -> String {
        match self.max {
            Some(max) => format!("{} to {max}", self.min),
            None => format!("at least {}", self.min),
        }
    }
}

impl Range<u64> {
    /// The range as `min..=max` (the type's most without a ceiling), for code that
    /// holds ranges as constants.
    pub const fn inclusive(&self) -> std::ops::RangeInclusive<u64> {
        match self.max {
            Some(max) => self.min..=max,
            None => self.min..=u64::MAX,
        }
    }
}

impl<T: Copy + PartialOrd + Display> Bound<T> {
    /// `value` if it is within the range, else which key and range it misses.
    pub fn check(&self, value: T) -> Result<T, OutOfBounds> {
        self.range.check(value)
    }

    /// The key that sets it.
    pub const fn key(&self) -> &'static str {
        self.range.key
    }
}

const fn between<T>(key: &'static str, default: T, min: T, max: T) -> Bound<T> {
    Bound { range: Range { key, min, max: Some(max) }, default }
}

const fn at_least<T>(key: &'static str, default: T, min: T) -> Bound<T> {
    Bound { range: Range { key, min, max: None }, default }
}

// The coordinator's configuration (`farm-coordinator serve`'s file, `FARM_*`).

/// Jobs one submitted tournament may plan (fixtures × maps × `games_per_pairing`).
pub const MAX_TOURNAMENT_JOBS: Bound<u64> = at_least("max_tournament_jobs", 1_000_000, 1);
/// Jobs in the queue or being played at once; the rest wait in the ledger.
pub const MAX_OUTSTANDING: Bound<u64> = at_least("max_outstanding", 20_000, 1);
/// Published jobs waiting in RabbitMQ for a worker.
pub const QUEUE_AHEAD: Bound<u64> = at_least("queue_ahead", 64, 1);
/// Jobs published per confirm round trip.
pub const PUBLISH_BATCH: Bound<u32> = at_least("publish_batch", 500, 1);
/// Deliveries of one job before it is dead-lettered (coordinator and workers alike).
pub const DELIVERY_LIMIT: Bound<u32> = between("delivery_limit", 5, 1, 100);
/// Re-simulations for the observations route at once.
pub const OBSERVATIONS_CONCURRENT: Bound<usize> = between("observations.concurrent", 2, 1, 64);
/// MiB of finished observation answers kept.
pub const OBSERVATIONS_CACHE_MIB: Bound<usize> = between("observations.cache_mib", 64, 0, 4096);
/// Seconds a client has to read an observation answer whole.
pub const OBSERVATIONS_DEADLINE_SECS: Bound<u64> = between("observations.deadline_secs", 60, 1, 600);
/// Source uploads received or checked at once, everyone's.
pub const UPLOADS_CONCURRENT: Bound<usize> = between("uploads.concurrent", 2, 1, 64);
/// Of those, one user's (at most `uploads.concurrent` too).
pub const UPLOADS_PER_USER: Bound<usize> = between("uploads.per_user", 1, 1, 64);
/// The slowest an upload's body may arrive, on average after a second of grace.
pub const UPLOADS_MIN_BYTES_PER_SEC: Bound<u64> = between("uploads.min_bytes_per_sec", 64 << 10, 1 << 10, 1 << 30);
/// Seconds an upload's body may take to arrive whole.
pub const UPLOADS_DEADLINE_SECS: Bound<u64> = between("uploads.deadline_secs", 60, 1, 3600);
/// Seconds added to every job's lease.
pub const LEASES_MARGIN_SECS: Bound<u64> = between("leases.margin_secs", 120, 0, 86_400);
/// Seconds between sweeps for overdue jobs.
pub const LEASES_SWEEP_SECS: Bound<u64> = between("leases.sweep_secs", 30, 1, 3600);
/// Jobs of one lease published again per sweep.
pub const LEASES_BATCH: Bound<u32> = between("leases.batch", 1000, 1, 100_000);
/// The share of completed matches audited.
pub const AUDITS_FRACTION: Bound<f64> = between("audits.fraction", 0.02, 0.0, 1.0);
/// The share of a worker's audited matches that may fail to re-verify.
pub const AUDITS_MAX_MISMATCH_RATE: Bound<f64> = between("audits.max_mismatch_rate", 0.1, 0.0, 1.0);
/// Audits of a worker before its mismatch rate is judged.
pub const AUDITS_MIN_AUDITS: Bound<u64> = at_least("audits.min_audits", 10, 0);
/// The share of a worker's matches that may end in faults of the farm's.
pub const AUDITS_MAX_FAULT_RATE: Bound<f64> = between("audits.max_fault_rate", 0.5, 0.0, 1.0);
/// A worker's matches before its fault rate is judged.
pub const AUDITS_MIN_MATCHES: Bound<u64> = at_least("audits.min_matches", 20, 0);
/// Seconds between sweeps for audits to publish.
pub const AUDITS_SWEEP_SECS: Bound<u64> = between("audits.sweep_secs", 5, 1, 3600);
/// Audits published per sweep.
pub const AUDITS_BATCH: Bound<u32> = between("audits.batch", 500, 1, 10_000);
/// Seconds an audit may go unanswered before it is published again.
pub const AUDITS_LEASE_SECS: Bound<u64> = between("audits.lease_secs", 900, 60, 86_400);
/// Publications of one audit before it is given up.
pub const AUDITS_MAX_PUBLICATIONS: Bound<u32> = between("audits.max_publications", 3, 1, 100);
/// A user's unfinished tournaments.
pub const QUOTAS_MAX_RUNNING_TOURNAMENTS: Bound<u64> = at_least("quotas.max_running_tournaments", 5, 0);
/// A user's jobs pending or in play.
pub const QUOTAS_MAX_QUEUED_JOBS: Bound<u64> = at_least("quotas.max_queued_jobs", 1_000_000, 0);
/// A user's webhooks, counting those removed in the last day.
pub const QUOTAS_MAX_WEBHOOKS: Bound<u64> = at_least("quotas.max_webhooks", 10, 0);
/// A user's tokens, counting those revoked in the last day.
pub const QUOTAS_MAX_TOKENS: Bound<u64> = at_least("quotas.max_tokens", 10, 0);
/// A user's source uploads per day.
pub const QUOTAS_MAX_SUBMISSIONS_PER_DAY: Bound<u64> = at_least("quotas.max_submissions_per_day", 20, 0);
/// A user's challenges per day.
pub const QUOTAS_MAX_CHALLENGES_PER_DAY: Bound<u64> = at_least("quotas.max_challenges_per_day", 10, 0);
/// Matches of one challenge.
pub const QUOTAS_MAX_CHALLENGE_GAMES: Bound<u64> = at_least("quotas.max_challenge_games", 20, 0);
/// Attempts of one webhook delivery before it is abandoned.
pub const WEBHOOKS_MAX_ATTEMPTS: Bound<u32> = at_least("webhooks.max_attempts", 8, 1);
/// Seconds one webhook attempt may take.
pub const WEBHOOKS_TIMEOUT_SECS: Bound<u64> = at_least("webhooks.timeout_secs", 10, 1);
/// Seconds before a webhook's first retry; each next one doubles it.
pub const WEBHOOKS_FIRST_RETRY_SECS: Bound<u64> = at_least("webhooks.first_retry_secs", 10, 0);
/// The longest wait between webhook attempts, in seconds (at least the first retry's).
pub const WEBHOOKS_MAX_RETRY_SECS: Bound<u64> = at_least("webhooks.max_retry_secs", 3600, 0);
/// Seconds between sweeps for due webhook deliveries.
pub const WEBHOOKS_SWEEP_SECS: Bound<u64> = at_least("webhooks.sweep_secs", 5, 1);
/// A new version's validation matches against each built-in bot.
pub const VALIDATION_GAMES_PER_OPPONENT: Bound<u32> = between("validation.games_per_opponent", 2, 1, 20);
/// Viewers of one match's live stream at once.
pub const LIVE_VIEWERS_PER_MATCH: Bound<usize> = between("live.viewers_per_match", 100, 1, 10_000);
/// Viewers of live streams at once, all matches'.
pub const LIVE_VIEWERS: Bound<usize> = between("live.viewers", 1000, 1, 100_000);
/// Matches watched live at once (each one relayed by its worker, buffered here).
pub const LIVE_STREAMS: Bound<usize> = between("live.streams", 32, 1, 1000);
/// MiB of one watched match's lines the coordinator keeps for its viewers.
pub const LIVE_BUFFER_MIB: Bound<usize> = between("live.buffer_mib", 8, 1, 1024);

// The worker's configuration (`farm-worker serve`'s file, `FARM_*`, flags).

/// One match's wall-clock time, at most, in seconds: 20 minutes by default, so that a
/// match ends (failed) before RabbitMQ's default consumer timeout of 30 minutes could
/// take its delivery away.
pub const MAX_MATCH_SECS: Bound<u64> = at_least("max_match_secs", 1200, 1);
/// MiB of one match's replay.
pub const MAX_REPLAY_MIB: Bound<u64> = between("max_replay_mib", 256, 1, 64 * 1024);
/// MiB of a playing match's lines a worker keeps for a viewer who joins late; 0: no
/// match is relayed live.
pub const WORKER_LIVE_BUFFER_MIB: Bound<usize> = between("live_buffer_mib", 8, 0, 1024);
/// Containers prepared and waiting for a match.
pub const DOCKER_PREPARED_MAX: Bound<usize> = at_least("docker.prepared_max", 8, 1);
/// Matches one reused container plays before it is replaced.
pub const DOCKER_MATCHES_PER_CONTAINER: Bound<u32> = at_least("docker.matches_per_container", 100, 1);
/// Memory of a bot, in MiB (a tournament's `[bots.limits]`; the worker's
/// `[bot_ceiling]` is at most the bound's maximum and lowers what is asked).
pub const BOT_MEMORY_MIB: Bound<u64> = between("memory_mib", 512, 16, 64 * 1024);
/// CPU of a bot, in thousandths of a core.
pub const BOT_CPU_MILLIS: Bound<u64> = between("cpu_millis", 1000, 10, 64_000);
/// Processes and threads of a bot.
pub const BOT_PIDS: Bound<i64> = between("pids", 128, 8, 32_768);
/// A bot's writable `/tmp`, in MiB.
pub const BOT_TMP_MIB: Bound<u64> = between("tmp_mib", 64, 1, 4096);
/// Bytes of a bot's stderr kept.
pub const BOT_STDERR_BYTES: Bound<usize> = between("stderr_bytes", 64 << 10, 0, 16 << 20);
/// The worker's default `[bot_ceiling]`: four times the defaults, two cores.
pub const BOT_CEILING: BotCeiling =
    BotCeiling { memory_mib: 2048, cpu_millis: 2000, pids: 512, tmp_mib: 256, stderr_bytes: 256 << 10 };
/// Memory of one build, in MiB.
pub const BUILD_MEMORY_MIB: Bound<u32> = at_least("build.memory_mib", 1024, 1);
/// CPU of one build, in thousandths of a core.
pub const BUILD_CPU_MILLIS: Bound<u32> = at_least("build.cpu_millis", 1000, 1);
/// Processes and threads of one build.
pub const BUILD_PIDS: Bound<i64> = at_least("build.pids", 256, 1);
/// One build's scratch space (its disk), in MiB.
pub const BUILD_SCRATCH_MIB: Bound<u64> = at_least("build.scratch_mib", 2048, 1);
/// Seconds one build's compile and assembly may take.
pub const BUILD_SECS: Bound<u64> = at_least("build.build_secs", 600, 1);
/// MiB of a built artifact and image.
pub const BUILD_MAX_IMAGE_MIB: Bound<u64> = at_least("build.max_image_mib", 1024, 1);
/// Files of a bot's source read, at most.
pub const SOURCE_MAX_FILES: Bound<usize> = at_least("build.source.max_files", 2000, 1);
/// Bytes of a bot's source files read, at most.
pub const SOURCE_MAX_BYTES: Bound<u64> = at_least("build.source.max_bytes", 64 << 20, 1);

/// The worker's default ceiling on one bot's limits, key by key as [`BOT_MEMORY_MIB`]
/// and its neighbours name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BotCeiling {
    /// MiB of memory.
    pub memory_mib: u64,
    /// Thousandths of a core.
    pub cpu_millis: u64,
    /// Processes and threads.
    pub pids: i64,
    /// MiB of `/tmp`.
    pub tmp_mib: u64,
    /// Bytes of stderr kept.
    pub stderr_bytes: usize,
}

// A tournament's file (its author's), within ranges fixed here.

/// Turns of a match (`maxTurns`; Ostibot's `maxTurnsPerRound`).
pub const TURNS: Range<u64> = Range { key: "maxTurns", min: 1, max: Some(100_000) };
/// A reply's deadline in milliseconds (`replyTimeoutMs`, `moveTimeoutMs`, …).
pub const REPLY_TIMEOUT_MS: Range<u64> = Range { key: "replyTimeoutMs", min: 1, max: Some(600_000) };
/// Ostibot's rounds.
pub const OSTIBOT_ROUNDS: Range<u64> = Range { key: "nbRounds", min: 1, max: Some(100) };
/// Matches of an N-player round robin (a balanced subset above it) or an SPRT.
pub const MAX_MATCHES: Bound<u64> = at_least("max_matches", 10_000, 1);
/// A directed tournament's matches scheduled and unanswered at once.
pub const QUEUE_DEPTH: Bound<u32> = between("queue_depth", 16, 1, 10_000);
/// Rounds of a Swiss tournament (the default: ⌈log_seats bots⌉).
pub const SWISS_ROUNDS: Range<u32> = Range { key: "rounds", min: 1, max: Some(1000) };
/// A ladder's leagues, when it has any.
pub const LEAGUES: Range<usize> = Range { key: "leagues", min: 2, max: Some(16) };
/// Games a ladder's bot plays in its league before it may be promoted or relegated.
pub const LEAGUE_MIN_GAMES: Bound<u32> = between("leagues[].min_games", 5, 1, 10_000);
/// Games under which a ladder's bot is marked provisional.
pub const PROVISIONAL_GAMES: Bound<u32> = between("provisional_games", 10, 0, 10_000);
/// A bot's bank of extra time per match, in milliseconds.
pub const TIME_BANK_MS: Bound<u64> = between("time_bank_ms", 0, 0, 600_000);
/// With the CPU clock, the most wall-clock time a move may take, times its budget.
pub const WALL_BACKSTOP: Bound<u32> = between("wall_backstop", 5, 1, 100);
/// Seconds a tournament's matches are shown live behind their play (a broadcast delay).
pub const LIVE_DELAY_SECS: Bound<u64> = between("live_delay_secs", 0, 0, 3600);
/// A user's share of the farm (admins set it).
pub const SHARE: Bound<u32> = between("share", 1, 1, 1000);
/// A submission's priority among its user's (a ladder's own matches take the highest).
pub const PRIORITY: Bound<i32> = between("priority", 0, -100, 100);

// Fixed in the code.

/// Requests that replay or scan a whole ladder (a rating history, a head-to-head
/// record) answered at once; one more is answered 429.
pub const LADDER_READS: usize = 2;
/// Points of one bot version's rating history a page is given; a longer history is
/// thinned, keeping its first, last and peak points and every league change.
pub const RATING_HISTORY_POINTS: usize = 1000;

/// Live frames waiting in the coordinator's live queue; past it the broker drops the
/// oldest.
pub const LIVE_QUEUE_MESSAGES: i64 = 10_000;
/// A submission's body (a tournament, a bot added to a ladder), in bytes.
pub const MAX_SUBMISSION_BYTES: usize = 1 << 20;
/// The arguments an image bot may be given.
pub const MAX_IMAGE_ARGS: usize = 64;
/// The longest argument an image bot may be given, in bytes.
pub const MAX_IMAGE_ARG_BYTES: usize = 1024;
/// One reply of a bot, in bytes: Ostibot's replies carry the bot's `state`, which may
/// itself be up to 1 MiB.
pub const MAX_REPLY_BYTES: usize = 2 << 20;
/// Replies read ahead of being asked for, per bot.
pub const REPLIES_AHEAD: usize = 16;
/// A bot's open files (`RLIMIT_NOFILE`), in containers and local sandboxes alike.
pub const BOT_OPEN_FILES: u64 = 1024;
/// Items of one list page by default, and at most (`limit`).
pub const PAGE: Bound<u32> = between("limit", 100, 1, 1000);
/// Bots of one page of `GET /api/bots` by default, and at most (`limit`).
pub const BOTS_PAGE: Bound<u32> = between("limit", 100, 1, 500);
/// Workers shown by name in the coordinator's metrics.
pub const MAX_WORKERS_SHOWN: usize = 200;
/// Audits waiting in the `farm.audits` queue: more are refused to the coordinator,
/// which publishes them later.
pub const AUDITS_MAX_MESSAGES: i64 = 100_000;
/// Redeliveries of a build job before it is dead-lettered: a source that kills its
/// builder is not tried on every worker.
pub const BUILD_DELIVERY_LIMIT: u32 = 2;
/// The longest webhook URL, in bytes.
pub const MAX_WEBHOOK_URL: usize = 2048;
/// Webhook deliveries attempted at once.
pub const WEBHOOK_DELIVERIES_AT_ONCE: usize = 8;
/// A document `farm-worker reproduce` reads from the API, in bytes.
pub const MAX_API_DOCUMENT_BYTES: usize = 64 << 20;
/// A pulled bot image's wait, in seconds.
pub const IMAGE_PULL_SECS: u64 = 300;
/// A `vindinium-server` bot's connections to its server at once.
pub const VINDINIUM_CONNECTIONS: usize = 16;
/// A `vindinium-server` bot's request body, in bytes.
pub const VINDINIUM_BODY_BYTES: usize = 16 << 10;

/// Who sets a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetBy {
    /// The coordinator's configuration.
    Coordinator,
    /// The worker's configuration.
    Worker,
    /// A tournament's file (its author), within a range fixed in the code.
    Tournament,
    /// An admin, per user or per submission.
    Admin,
    /// Nobody: fixed in the code.
    Fixed,
}

impl Display for SetBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SetBy::Coordinator => "coordinator config",
            SetBy::Worker => "worker config",
            SetBy::Tournament => "tournament file",
            SetBy::Admin => "an admin",
            SetBy::Fixed => "fixed",
        })
    }
}

/// One row of the Limits table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// What is limited.
    pub what: &'static str,
    /// The key that sets it, or the constant that fixes it.
    pub key: String,
    /// Its value when not set ("" when it has none).
    pub default: String,
    /// What it may be set to, or its fixed value.
    pub range: String,
    /// Who sets it.
    pub set_by: SetBy,
    /// What happens past it.
    pub over: &'static str,
}

fn bound<T: Copy + PartialOrd + Display>(
    set_by: SetBy,
    bound: &Bound<T>,
    what: &'static str,
    over: &'static str,
) -> Limit {
    Limit { default: bound.default.to_string(), ..ranged(set_by, &bound.range, "", what, over) }
}

/// A range with no default of its own (the game's, or computed).
fn ranged<T: Copy + PartialOrd + Display>(
    set_by: SetBy,
    range: &Range<T>,
    default: &str,
    what: &'static str,
    over: &'static str,
) -> Limit {
    Limit { what, key: range.key.to_owned(), default: default.to_owned(), range: range.words(), set_by, over }
}

fn fixed(name: &str, value: impl Display, what: &'static str, over: &'static str) -> Limit {
    Limit { what, key: name.to_owned(), default: String::new(), range: value.to_string(), set_by: SetBy::Fixed, over }
}

/// `bytes` in the largest binary unit that divides it: "2 MiB", "16 KiB", "1000 B".
pub fn bytes(bytes: u64) -> String {
    match bytes {
        0 => "0 B".to_owned(),
        b if b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// Every limit, in the order of the book's table.
pub fn all() -> Vec<Limit> {
    use SetBy::{Admin, Coordinator, Tournament, Worker};
    const REFUSED_422: &str = "refused at submission naming the key (422)";
    const CONFIG_REFUSED: &str = "the component refuses to start, naming the key";
    let ceiling = BOT_CEILING;
    vec![
        bound(
            Coordinator,
            &MAX_TOURNAMENT_JOBS,
            "jobs one tournament may plan (fixtures × maps × `games_per_pairing`)",
            "refused before anything is scheduled: API 422 `over_limit`, `run` exits 2, naming the key and the ceiling",
        ),
        bound(
            Tournament,
            &MAX_MATCHES,
            "matches of an N-player round robin or an SPRT (a ladder's default: `max_tournament_jobs`)",
            "an N-player round robin plays a balanced subset; more than `max_tournament_jobs` is refused (422)",
        ),
        bound(Tournament, &QUEUE_DEPTH, "an SPRT's or a ladder's matches scheduled and unanswered", REFUSED_422),
        ranged(
            Tournament,
            &SWISS_ROUNDS,
            "⌈log_seats bots⌉",
            "Swiss rounds (rounds × tables within `max_tournament_jobs`)",
            REFUSED_422,
        ),
        ranged(Tournament, &LEAGUES, "none", "a ladder's leagues", REFUSED_422),
        bound(
            Tournament,
            &LEAGUE_MIN_GAMES,
            "games a ladder's bot plays in its league before it may move up or down",
            REFUSED_422,
        ),
        bound(Tournament, &PROVISIONAL_GAMES, "games under which a ladder's bot is marked provisional", REFUSED_422),
        ranged(
            Tournament,
            &TURNS,
            "the game's",
            "turns (`maxTurns`, Ostibot `maxTurnsPerRound`)",
            "refused, naming the key and the range (400 from the API)",
        ),
        ranged(
            Tournament,
            &REPLY_TIMEOUT_MS,
            "the game's",
            "a reply's deadline (`replyTimeoutMs`, `moveTimeoutMs`, Maze `firstTurnTimeoutMs`/`turnTimeoutMs`, Ostibot `timeout`)",
            "refused, naming the key and the range (400 from the API)",
        ),
        ranged(
            Tournament,
            &OSTIBOT_ROUNDS,
            "the game's",
            "Ostibot's rounds",
            "refused, naming the key and the range (400 from the API)",
        ),
        bound(
            Tournament,
            &TIME_BANK_MS,
            "a bot's bank of extra time per match",
            "refused at submission naming the key (422); a worker refuses such a job as `failed`",
        ),
        bound(
            Tournament,
            &WALL_BACKSTOP,
            "with `clock = \"cpu\"`, a move's wall-clock time, times its budget",
            "refused at submission naming the key (422); a worker refuses such a job as `failed`",
        ),
        fixed(
            "MAX_SUBMISSION_BYTES",
            bytes(MAX_SUBMISSION_BYTES as u64),
            "a submission's body; a ladder's stored definition",
            "413 `too_large`; 422 `over_limit` for a ladder's definition",
        ),
        fixed(
            "MAX_IMAGE_ARGS × MAX_IMAGE_ARG_BYTES",
            format!("{MAX_IMAGE_ARGS} × {}", bytes(MAX_IMAGE_ARG_BYTES as u64)),
            "an image bot's arguments (`args`), no NUL",
            "refused at submission naming `bots[N].args` (422); a worker refuses such a job as `failed`",
        ),
        bound(
            Tournament,
            &LIVE_DELAY_SECS,
            "how far behind its play a tournament's matches are shown live (a broadcast delay)",
            REFUSED_422,
        ),
        fixed(
            "CrashReport::TAIL_LINES × LINE_CHARS; REQUEST_CHARS",
            format!(
                "{} lines × {} characters; {} characters",
                crate::CrashReport::TAIL_LINES,
                crate::CrashReport::LINE_CHARS,
                crate::CrashReport::REQUEST_CHARS
            ),
            "a failed bot's crash report: its stderr's last lines; the request it did not answer",
            "the lines' ends and the request's end are cut",
        ),
        fixed(
            "LADDER_READS",
            LADDER_READS,
            "rating histories and head-to-head records answered at once (each reads a whole ladder)",
            "429 `busy`, naming it",
        ),
        fixed(
            "RATING_HISTORY_POINTS",
            RATING_HISTORY_POINTS,
            "points of a ladder bot version's rating history shown",
            "thinned: first, last, peak and league changes kept, the rest evenly",
        ),
        bound(Admin, &SHARE, "a user's share of the farm", "400 naming `share`"),
        bound(Admin, &PRIORITY, "a submission's priority among its user's", "400 naming `priority`"),
        bound(
            Worker,
            &MAX_MATCH_SECS,
            "one match's wall-clock time (its rules' worst case +10% +1 s, each deadline times `wall_backstop` with the CPU clock, plus banks; also `play`/`run --max-match-secs`)",
            "the match fails (\"ran past its wall-clock limit\"), bots ended, not retried",
        ),
        bound(
            Worker,
            &MAX_REPLAY_MIB,
            "one match's replay: the bots' replies and the game's states (also `play`/`run --max-replay-mib`)",
            "the bot whose reply would pass it gets `output_limit`; a game's own states past it fail the match, not retried",
        ),
        fixed(
            "MAX_REPLY_BYTES; REPLIES_AHEAD",
            format!("{}; {REPLIES_AHEAD} read ahead", bytes(MAX_REPLY_BYTES as u64)),
            "one reply of a bot",
            "an unreadable reply, which each game's rules judge",
        ),
        bound(
            Tournament,
            &BOT_MEMORY_MIB,
            "a bot's memory (`[bots.limits]`)",
            "lowered to the worker's `bot_ceiling.memory_mib` (logged, counted); over it the bot is killed: `crashed`, `oom_killed`",
        ),
        bound(
            Tournament,
            &BOT_CPU_MILLIS,
            "a bot's CPU, thousandths of a core",
            "lowered to `bot_ceiling.cpu_millis`; the bot is throttled",
        ),
        bound(Tournament, &BOT_PIDS, "a bot's processes and threads", "lowered to `bot_ceiling.pids`; its forks fail"),
        bound(Tournament, &BOT_TMP_MIB, "a bot's writable `/tmp`", "lowered to `bot_ceiling.tmp_mib`; its writes fail"),
        bound(
            Tournament,
            &BOT_STDERR_BYTES,
            "a bot's stderr kept",
            "lowered to `bot_ceiling.stderr_bytes`; the rest is dropped",
        ),
        fixed(
            "bot_ceiling (default)",
            format!(
                "{} MiB / {} millicores / {} pids / {} MiB / {}",
                ceiling.memory_mib,
                ceiling.cpu_millis,
                ceiling.pids,
                ceiling.tmp_mib,
                bytes(ceiling.stderr_bytes as u64)
            ),
            "the worker's `[bot_ceiling]` (memory / CPU / processes / `/tmp` / stderr), set within the ranges above",
            "what a tournament asks above it is lowered to it",
        ),
        fixed(
            "BOT_OPEN_FILES",
            BOT_OPEN_FILES,
            "a bot's open files; core dumps: none",
            "opening more fails (`EMFILE`); a crash dumps nothing",
        ),
        bound(
            Worker,
            &DOCKER_PREPARED_MAX,
            "containers prepared and waiting for a match",
            "no more are prepared; a returning one is removed",
        ),
        bound(
            Worker,
            &DOCKER_MATCHES_PER_CONTAINER,
            "matches one reused container plays",
            "a used-up container is replaced",
        ),
        fixed(
            "IMAGE_PULL_SECS",
            format!("{IMAGE_PULL_SECS} s"),
            "a bot image pulled by a worker: by digest from its own `docker.registry` only",
            "any other missing image is an error of the match, never fetched",
        ),
        bound(
            Coordinator,
            &DELIVERY_LIMIT,
            "deliveries of one job (the workers' and `run`'s must agree)",
            "dead-lettered: a `failed` match",
        ),
        fixed(
            "BUILD_DELIVERY_LIMIT",
            BUILD_DELIVERY_LIMIT,
            "deliveries of one build job",
            "dead-lettered: the version is `build_failed`",
        ),
        bound(Coordinator, &MAX_OUTSTANDING, "jobs in the queue or in play", "the rest wait in the ledger"),
        bound(
            Coordinator,
            &QUEUE_AHEAD,
            "jobs waiting in RabbitMQ for a worker",
            "the rest wait in the ledger, shared among users as slots free",
        ),
        bound(Coordinator, &PUBLISH_BATCH, "jobs published per confirm round trip", CONFIG_REFUSED),
        bound(
            Coordinator,
            &QUOTAS_MAX_RUNNING_TOURNAMENTS,
            "a user's unfinished tournaments (admins have no quota)",
            "429 `quota`, naming the quota, its ceiling and what is in use",
        ),
        bound(Coordinator, &QUOTAS_MAX_QUEUED_JOBS, "a user's jobs pending or in play", "429 `quota`, as above"),
        bound(
            Coordinator,
            &QUOTAS_MAX_WEBHOOKS,
            "a user's webhooks, counting those removed in the last day",
            "429 `quota`, as above",
        ),
        bound(
            Coordinator,
            &QUOTAS_MAX_TOKENS,
            "a user's tokens, counting those revoked in the last day",
            "429 `quota`, as above",
        ),
        bound(Coordinator, &QUOTAS_MAX_SUBMISSIONS_PER_DAY, "a user's source uploads per day", "429 `quota`, as above"),
        bound(Coordinator, &QUOTAS_MAX_CHALLENGES_PER_DAY, "a user's challenges per day", "429 `quota`, as above"),
        bound(Coordinator, &QUOTAS_MAX_CHALLENGE_GAMES, "matches of one challenge", "429 `quota`, as above"),
        bound(
            Coordinator,
            &OBSERVATIONS_CONCURRENT,
            "observation requests (a replay re-simulated) at once",
            "429 `busy` with `Retry-After: 1`, counted",
        ),
        bound(
            Coordinator,
            &OBSERVATIONS_CACHE_MIB,
            "finished observation answers kept, MiB (one over a quarter of it is not kept)",
            CONFIG_REFUSED,
        ),
        bound(
            Coordinator,
            &OBSERVATIONS_DEADLINE_SECS,
            "seconds to read an observation answer whole (a client that reads nothing for 30 s loses its slot)",
            "the answer is cut: it ends with an error naming the key; its slot is free at once",
        ),
        bound(
            Coordinator,
            &UPLOADS_CONCURRENT,
            "source uploads (`POST /api/bots`) at once",
            "429 `busy` naming the key",
        ),
        bound(
            Coordinator,
            &UPLOADS_PER_USER,
            "of those, one user's (at most `uploads.concurrent`)",
            "429 `busy` naming the key",
        ),
        bound(
            Coordinator,
            &UPLOADS_MIN_BYTES_PER_SEC,
            "how fast an upload's body must arrive, after a second of grace",
            "408 `too_slow` naming the key; nothing is stored",
        ),
        bound(
            Coordinator,
            &UPLOADS_DEADLINE_SECS,
            "seconds an upload's body may take",
            "408 `too_slow` naming the key; nothing is stored",
        ),
        bound(
            Worker,
            &SOURCE_MAX_FILES,
            "entries of a bot's source (an upload, or `farm-worker build`'s directory; the coordinator's are fixed at the default)",
            "400 naming the entry or the bound; nothing is stored",
        ),
        bound(Worker, &SOURCE_MAX_BYTES, "bytes of a bot's source files", "400 naming the bound; nothing is stored"),
        fixed(
            "SourceLimits::max_archive_bytes",
            "the source's bytes, 1 KiB per entry and 10 KiB",
            "an upload's body (a tar archive of the source)",
            "413 `too_large`",
        ),
        bound(
            Worker,
            &BUILD_MEMORY_MIB,
            "a build's memory (its compile runs with no network)",
            "`build_failed`, the reason naming the limit",
        ),
        bound(Worker, &BUILD_CPU_MILLIS, "a build's CPU, thousandths of a core", "the build is throttled"),
        bound(Worker, &BUILD_PIDS, "a build's processes and threads", "`build_failed`: its forks fail"),
        bound(
            Worker,
            &BUILD_SCRATCH_MIB,
            "a build's scratch space (its disk)",
            "`build_failed` (\"build disk limit: …\")",
        ),
        bound(Worker, &BUILD_SECS, "seconds for a build's compile and assembly", "`build_failed` naming the limit"),
        bound(
            Worker,
            &BUILD_MAX_IMAGE_MIB,
            "a built artifact and image, MiB",
            "`build_failed`; an image over its size is removed",
        ),
        bound(
            Coordinator,
            &VALIDATION_GAMES_PER_OPPONENT,
            "a new version's validation matches against each built-in bot",
            CONFIG_REFUSED,
        ),
        bound(
            Coordinator,
            &WEBHOOKS_MAX_ATTEMPTS,
            "attempts of one webhook delivery",
            "the delivery is `abandoned`, its history saying why",
        ),
        bound(
            Coordinator,
            &WEBHOOKS_TIMEOUT_SECS,
            "seconds one webhook attempt may take",
            "the attempt fails and is retried",
        ),
        fixed(
            "MAX_WEBHOOK_URL",
            format!(
                "{MAX_WEBHOOK_URL} bytes, http or https, public addresses unless `webhooks.allow_private_addresses`"
            ),
            "a webhook's URL",
            "400 naming the URL's problem",
        ),
        fixed(
            "WEBHOOK_DELIVERIES_AT_ONCE",
            WEBHOOK_DELIVERIES_AT_ONCE,
            "webhook deliveries attempted at once",
            "the rest wait for the next free one",
        ),
        bound(Coordinator, &LEASES_BATCH, "jobs of one lease published again per sweep", "the rest at the next sweep"),
        bound(Coordinator, &LEASES_SWEEP_SECS, "seconds between sweeps for overdue jobs", CONFIG_REFUSED),
        bound(Coordinator, &LEASES_MARGIN_SECS, "seconds added to every job's lease", CONFIG_REFUSED),
        fixed(
            "AUDITS_MAX_MESSAGES",
            AUDITS_MAX_MESSAGES,
            "audits waiting in `farm.audits`",
            "the broker refuses more; the rest wait in the ledger",
        ),
        bound(Coordinator, &AUDITS_BATCH, "audits published per sweep", "the rest wait in the ledger"),
        bound(Coordinator, &AUDITS_SWEEP_SECS, "seconds between audit sweeps", CONFIG_REFUSED),
        bound(
            Coordinator,
            &AUDITS_LEASE_SECS,
            "seconds an audit may go unanswered before it is published again",
            CONFIG_REFUSED,
        ),
        bound(
            Coordinator,
            &AUDITS_MAX_PUBLICATIONS,
            "publications of one audit",
            "given up: `skipped` with the reason, `farm_coordinator_audits_given_up_total`",
        ),
        bound(Coordinator, &AUDITS_FRACTION, "the share of completed matches audited", CONFIG_REFUSED),
        bound(
            Coordinator,
            &AUDITS_MAX_MISMATCH_RATE,
            "a worker's audited matches that may fail to re-verify, as a share",
            "the worker is quarantined",
        ),
        bound(
            Coordinator,
            &AUDITS_MIN_AUDITS,
            "audits of a worker before its mismatch rate is judged",
            "(a threshold, not a bound)",
        ),
        bound(
            Coordinator,
            &AUDITS_MAX_FAULT_RATE,
            "a worker's matches ending in the farm's faults, as a share",
            "the worker is quarantined",
        ),
        bound(
            Coordinator,
            &AUDITS_MIN_MATCHES,
            "a worker's matches before its fault rate is judged",
            "(a threshold, not a bound)",
        ),
        bound(
            Coordinator,
            &LIVE_VIEWERS_PER_MATCH,
            "viewers of one match's live stream (`GET /api/matches/{id}/live`)",
            "429 `busy` naming the key, counted",
        ),
        bound(Coordinator, &LIVE_VIEWERS, "live viewers, all matches'", "429 `busy` naming the key, counted"),
        bound(
            Coordinator,
            &LIVE_STREAMS,
            "matches watched live at once",
            "a viewer of another match: 429 `busy` naming the key, counted",
        ),
        bound(
            Coordinator,
            &LIVE_BUFFER_MIB,
            "MiB of a watched match's lines kept for its viewers",
            "the oldest frames go (the header stays); a viewer behind them skips them, told how many, counted",
        ),
        fixed(
            "LIVE_QUEUE_MESSAGES",
            LIVE_QUEUE_MESSAGES,
            "live frames waiting in the coordinator's live queue",
            "the broker drops the oldest; the gap is counted and shown to viewers",
        ),
        fixed(
            "MESSAGE_LINES",
            crate::MESSAGE_LINES,
            "lines in one live message from a worker (none empty; a kept line counts 64 bytes beside its text in `live.buffer_mib`)",
            "the message is refused, counted as `malformed`",
        ),
        bound(
            Worker,
            &WORKER_LIVE_BUFFER_MIB,
            "MiB of a playing match's lines a worker keeps for a late viewer (0: nothing is relayed live)",
            "the oldest frames go (the header stays): a late viewer starts after them",
        ),
        fixed(
            "MAX_WORKERS_SHOWN",
            MAX_WORKERS_SHOWN,
            "workers shown in the coordinator's metrics",
            "the first ones by id; `GET /api/workers` has all",
        ),
        bound(
            SetBy::Fixed,
            &PAGE,
            "list pages: tournaments, workers, a tournament's matches (`limit`)",
            "400 \"limit: 1 to 1000, not N\"",
        ),
        bound(
            SetBy::Fixed,
            &BOTS_PAGE,
            "bots listed by `GET /api/bots` (`limit`, with `offset`)",
            "400 \"limit: must be 1 to 500, not N\"",
        ),
        fixed(
            "metrics::method_label",
            "the nine standard methods",
            "methods counted in `farm_coordinator_api_requests_total`",
            "any other is counted as `other`",
        ),
        fixed(
            "MAX_API_DOCUMENT_BYTES",
            bytes(MAX_API_DOCUMENT_BYTES as u64),
            "a result document `farm-worker reproduce` reads from the API",
            "an error naming the URL",
        ),
        fixed(
            "VINDINIUM_CONNECTIONS; VINDINIUM_BODY_BYTES",
            format!("{VINDINIUM_CONNECTIONS} connections; {}", bytes(VINDINIUM_BODY_BYTES as u64)),
            "a `vindinium-server` bot's use of its server",
            "connections past it are closed; 413 past the body",
        ),
    ]
}

/// The Limits table as Markdown, as the book's `reference/limits.md` holds it.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Limits\n\n\
         <!-- Generated from `proto/src/limits.rs` by `farm-coordinator limits`; a test fails when the two differ. \
         To regenerate: `FARM_BLESS_DOCS=1 cargo test -p farm-proto limits`. -->\n\n\
         Everything a tournament's author or a bot can make the farm spend has a limit, a default and a \
         ceiling, and what goes over it is told so. The components read these bounds from one module, \
         `farm_proto::limits`; `farm-coordinator limits` prints this table.\n\n\
         | what | key | default | range | set by | over it |\n|---|---|---|---|---|---|\n",
    );
    for limit in all() {
        let key = format!("`{}`", limit.key);
        let cells = [limit.what, &key, &limit.default, &limit.range, &limit.set_by.to_string(), limit.over];
        out.push_str("| ");
        out.push_str(&cells.map(|cell| cell.replace('|', "\\|")).join(" | "));
        out.push_str(" |\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_names_its_key_and_range() {
        assert_eq!(OBSERVATIONS_CONCURRENT.check(64), Ok(64));
        let error = OBSERVATIONS_CONCURRENT.check(65).expect_err("over");
        assert_eq!(error.to_string(), "observations.concurrent must be 1 to 64, not 65");
        let error = WEBHOOKS_MAX_ATTEMPTS.check(0).expect_err("under");
        assert_eq!(error.to_string(), "webhooks.max_attempts must be at least 1, not 0");
        assert!(AUDITS_FRACTION.check(1.5).is_err() && AUDITS_FRACTION.check(f64::NAN).is_err());
        assert_eq!(PRIORITY.check(-100), Ok(-100));
    }

    #[test]
    fn every_default_is_within_its_range() {
        macro_rules! within {
            ($($bound:ident),* $(,)?) => {$(
                assert!($bound.check($bound.default).is_ok(), "{}: {}", stringify!($bound), $bound.default);
            )*};
        }
        within!(
            MAX_TOURNAMENT_JOBS,
            MAX_OUTSTANDING,
            QUEUE_AHEAD,
            PUBLISH_BATCH,
            DELIVERY_LIMIT,
            OBSERVATIONS_CONCURRENT,
            OBSERVATIONS_CACHE_MIB,
            OBSERVATIONS_DEADLINE_SECS,
            UPLOADS_CONCURRENT,
            UPLOADS_PER_USER,
            UPLOADS_MIN_BYTES_PER_SEC,
            UPLOADS_DEADLINE_SECS,
            LEASES_MARGIN_SECS,
            LEASES_SWEEP_SECS,
            LEASES_BATCH,
            AUDITS_FRACTION,
            AUDITS_MAX_MISMATCH_RATE,
            AUDITS_MIN_AUDITS,
            AUDITS_MAX_FAULT_RATE,
            AUDITS_MIN_MATCHES,
            AUDITS_SWEEP_SECS,
            AUDITS_BATCH,
            AUDITS_LEASE_SECS,
            AUDITS_MAX_PUBLICATIONS,
            QUOTAS_MAX_RUNNING_TOURNAMENTS,
            QUOTAS_MAX_QUEUED_JOBS,
            QUOTAS_MAX_WEBHOOKS,
            QUOTAS_MAX_TOKENS,
            QUOTAS_MAX_SUBMISSIONS_PER_DAY,
            QUOTAS_MAX_CHALLENGES_PER_DAY,
            QUOTAS_MAX_CHALLENGE_GAMES,
            WEBHOOKS_MAX_ATTEMPTS,
            WEBHOOKS_TIMEOUT_SECS,
            WEBHOOKS_FIRST_RETRY_SECS,
            WEBHOOKS_MAX_RETRY_SECS,
            WEBHOOKS_SWEEP_SECS,
            VALIDATION_GAMES_PER_OPPONENT,
            LIVE_VIEWERS_PER_MATCH,
            LIVE_VIEWERS,
            LIVE_STREAMS,
            LIVE_BUFFER_MIB,
            WORKER_LIVE_BUFFER_MIB,
            LIVE_DELAY_SECS,
            LEAGUE_MIN_GAMES,
            PROVISIONAL_GAMES,
            MAX_MATCH_SECS,
            MAX_REPLAY_MIB,
            DOCKER_PREPARED_MAX,
            DOCKER_MATCHES_PER_CONTAINER,
            BOT_MEMORY_MIB,
            BOT_CPU_MILLIS,
            BOT_PIDS,
            BOT_TMP_MIB,
            BOT_STDERR_BYTES,
            BUILD_MEMORY_MIB,
            BUILD_CPU_MILLIS,
            BUILD_PIDS,
            BUILD_SCRATCH_MIB,
            BUILD_SECS,
            BUILD_MAX_IMAGE_MIB,
            SOURCE_MAX_FILES,
            SOURCE_MAX_BYTES,
            MAX_MATCHES,
            QUEUE_DEPTH,
            TIME_BANK_MS,
            WALL_BACKSTOP,
            SHARE,
            PRIORITY,
            PAGE,
            BOTS_PAGE,
        );
        assert!(BOT_MEMORY_MIB.check(BOT_CEILING.memory_mib).is_ok() && BOT_PIDS.check(BOT_CEILING.pids).is_ok());
        assert!(
            BOT_TMP_MIB.check(BOT_CEILING.tmp_mib).is_ok() && BOT_STDERR_BYTES.check(BOT_CEILING.stderr_bytes).is_ok()
        );
        for limit in all() {
            assert!(!limit.what.is_empty() && !limit.over.is_empty() && !limit.range.is_empty(), "{limit:?}");
        }
    }

    #[test]
    fn bytes_are_shown_in_their_unit() {
        assert_eq!(bytes(2 << 20), "2 MiB");
        assert_eq!(bytes(16 << 10), "16 KiB");
        assert_eq!(bytes(1000), "1000 B");
    }

    /// The book's Limits page is this module's table: change a bound here and this
    /// fails until the page is regenerated (`FARM_BLESS_DOCS=1`).
    #[test]
    fn the_books_limits_page_is_this_table() {
        let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/reference/limits.md");
        let generated = markdown();
        if std::env::var_os("FARM_BLESS_DOCS").is_some() {
            std::fs::create_dir_all(page.parent().expect("a parent")).expect("docs/src/reference");
            std::fs::write(&page, &generated).expect("write the page");
        }
        let committed = std::fs::read_to_string(&page).unwrap_or_default();
        let first_difference = committed.lines().zip(generated.lines()).find(|(page, code)| page != code);
        assert!(
            committed == generated,
            "{} differs from farm_proto::limits::markdown() (first: {first_difference:?}); regenerate it with \
             `FARM_BLESS_DOCS=1 cargo test -p farm-proto limits` and review the diff",
            page.display()
        );
    }
}
