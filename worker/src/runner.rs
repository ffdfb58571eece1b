//! Plays one match: starts the bots, drives the engine turn by turn under the rules'
//! deadlines, streams the replay, and ends every bot whatever happens.

use std::sync::Arc;
use std::time::Duration;

use farm_engine::builtin;
use farm_engine::replay::{self, LineHasher, ReplyTime};
use farm_engine::{BotReply, GameKind, Match, MatchSetup, PlayerOutcome, Seat, SetupError, StepError};
use farm_proto::{
    BotLaunch, BotLimits, BotSpec, ContainerIsolation, CrashReport, MatchJob, MoveClock, Reproduction, TimeSummary,
    Transport,
};
use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::time::Instant;

use crate::bots::{BotExit, BotLaunchError, BotSession, CappedLog, LaunchContext, Sandbox};
use crate::clock::SeatClock;
use crate::crash::{self, Missed, Unanswered};
use crate::live::LiveMatch;
use crate::metrics::{self, SandboxPhase};
use farm_proto::limits;

/// Knobs of the runner that are not rules of the game.
#[derive(Debug, Clone)]
pub struct RunnerOptions {
    /// Added to each bot's first deadline: starting a process is not thinking time.
    pub startup_grace: Duration,
    /// The operator's ceiling on a match's wall-clock time: a match may take what its
    /// rules allow at worst ([`RunnerOptions::match_limit`]), never more than this.
    pub max_match: Duration,
    /// The most a job may give one bot: its limits above these are lowered to them
    /// ([`crate::JobPlayer`]).
    pub bot_ceiling: BotLimits,
    /// The most a match's replay may hold, uncompressed, of its bots' replies, and
    /// apart from them of the game's own lines. A reply that would take the replies
    /// past it is not stored: its bot is out of the match (`output_limit`). The
    /// game's lines are bounded by its rules; past this the match fails.
    pub max_replay_bytes: u64,
}

/// The runner's command-line flags, for the commands that play matches without a
/// worker configuration (`farm-worker play`, `farm-coordinator run`).
#[derive(Debug, Clone, clap::Args)]
pub struct RunnerArgs {
    /// Extra time for each bot's first reply, for its process or container to start.
    #[arg(long, default_value_t = 5000, value_name = "MS")]
    pub startup_grace_ms: u64,
    /// The longest a match may take, whatever its rules allow; past it the match fails.
    #[arg(long, value_name = "SECS", default_value_t = RunnerOptions::default().max_match.as_secs())]
    pub max_match_secs: u64,
    /// The most a match's replay may hold of its bots' replies (and, apart, of the
    /// game's own states), uncompressed; a bot whose reply would take the replies
    /// further is out of the match (status output_limit).
    #[arg(long, value_name = "MIB", default_value_t = limits::MAX_REPLAY_MIB.default,
          value_parser = clap::value_parser!(u64).range(limits::MAX_REPLAY_MIB.range.inclusive()))]
    pub max_replay_mib: u64,
}

impl RunnerArgs {
    /// The options these flags give, with the default bot ceiling.
    pub fn options(&self) -> RunnerOptions {
        RunnerOptions {
            startup_grace: Duration::from_millis(self.startup_grace_ms),
            max_match: Duration::from_secs(self.max_match_secs),
            max_replay_bytes: self.max_replay_mib << 20,
            ..RunnerOptions::default()
        }
    }
}

impl Default for RunnerOptions {
    fn default() -> Self {
        RunnerOptions {
            startup_grace: Duration::from_secs(5),
            max_match: Duration::from_secs(limits::MAX_MATCH_SECS.default),
            bot_ceiling: BotLimits::default_ceiling(),
            // 256 MiB by default: a hundred times a long Vindinium match's replay.
            max_replay_bytes: limits::MAX_REPLAY_MIB.default << 20,
        }
    }
}

impl RunnerOptions {
    /// How long `game`, played by `seats` bots timed by `clock`, may take: every
    /// seat's first reply with its start-up grace, every step at its deadline, every
    /// seat's time bank (each on the wall clock, so times the CPU clock's backstop), a
    /// tenth more and a second for the runner's own work, capped by
    /// [`RunnerOptions::max_match`]. Bots kept to their deadlines never reach it unless
    /// the operator's cap is lower.
    pub fn match_limit(&self, game: &Match, seats: usize, clock: &MoveClock) -> Duration {
        let deadlines = game.deadlines();
        let seats = u32::try_from(seats).unwrap_or(u32::MAX);
        let first_ms = duration_ms(self.startup_grace).saturating_add(deadlines.first_ms);
        let first_and_bank = Duration::from_millis(clock.wall_limit_ms(first_ms, clock.time_bank_ms));
        let turn = clock.wall_limit_ms(deadlines.turn_ms, 0);
        let steps = Duration::from_millis(turn.saturating_mul(game.game().max_steps()));
        let worst = first_and_bank.saturating_mul(seats).saturating_add(steps);
        worst.saturating_add(worst / 10).saturating_add(Duration::from_secs(1)).min(self.max_match)
    }

    /// [`RunnerOptions::match_limit`] of `job`'s match, its seats filled as a worker
    /// fills them: what the coordinator's leases are derived from.
    pub fn job_limit(&self, job: &MatchJob) -> Result<Duration, SetupError> {
        let players: Vec<String> = fill_seats(job.game, job.bots.clone()).into_iter().map(|bot| bot.name).collect();
        let seats = players.len();
        let game = Match::new(MatchSetup::new(job.game, &job.rules, job.map.clone(), job.seed, players)?)?;
        Ok(self.match_limit(&game, seats, &job.clock))
    }
}

/// Why a match could not be played. Bots misbehaving is never one of these.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The setup is invalid (rules, map, number of bots).
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// A bot could not be started at all.
    #[error("seat {seat}: {source}")]
    Launch {
        /// The seat.
        seat: Seat,
        /// Why.
        source: BotLaunchError,
    },
    /// Writing the replay failed.
    #[error("writing the replay: {0}")]
    Replay(#[from] std::io::Error),
    /// The runner and the engine disagree about a step: a bug, reported, not hidden.
    #[error("internal error: {0}")]
    Engine(#[from] StepError),
    /// The match was stopped from outside (the worker is shutting down).
    #[error("the match was stopped")]
    Stopped,
    /// The game's own lines (apart from its bots' replies, which are capped on their
    /// own) passed [`RunnerOptions::max_replay_bytes`]: the rules ask for more than
    /// this worker stores.
    #[error(
        "the match's replay passed the worker's limit of {0} bytes (max_replay_mib) with the game's own \
         states: its rules ask for a longer match than this worker stores"
    )]
    ReplayTooLarge(u64),
    /// The match ran past its wall-clock limit ([`RunnerOptions::match_limit`]).
    #[error(
        "the match ran past its wall-clock limit of {} s (what its rules allow at worst, \
         at most the worker's max_match_secs)",
        .0.as_secs_f64()
    )]
    TooLong(Duration),
    /// The match's clock settings are out of bounds.
    #[error("the match's clock: {0}")]
    InvalidClock(String),
    /// A bot's sandbox limits or image arguments are out of bounds.
    #[error("seat {seat}: {problem}")]
    InvalidBot {
        /// The seat.
        seat: Seat,
        /// Which limit or argument, and its bounds.
        problem: String,
    },
}

/// How one seat fared.
#[derive(Debug, Clone, Serialize)]
pub struct SeatReport {
    /// The seat.
    pub seat: Seat,
    /// The bot's name.
    pub name: String,
    /// How the bot was launched (`builtin:...`, `cmd:...`).
    pub launch: String,
    /// Score, rank and status.
    #[serde(flatten)]
    pub outcome: PlayerOutcome,
    /// Requests sent.
    pub requests: u64,
    /// Requests that timed out.
    pub timeouts: u64,
    /// Wall-clock time to reply: mean, 99th percentile and maximum over the replies
    /// that came in time (zero if none did).
    pub reply: TimeSummary,
    /// CPU time to reply, over the same replies, where its sandbox measures it.
    pub cpu: Option<TimeSummary>,
    /// The image its bot ran, by content (`sha256:...`), if it ran in a container.
    pub image_id: Option<String>,
    /// How its process ended (none for built-in bots).
    pub exit: Option<BotExit>,
    /// Why it failed, if it did.
    pub crash: Option<CrashReport>,
    /// Its stderr, capped.
    #[serde(skip)]
    pub log: CappedLog,
}

/// The result of one match.
#[derive(Debug, Clone, Serialize)]
pub struct MatchReport {
    /// The engine that played it ([`farm_engine::engine_version`]).
    pub engine: String,
    /// The game.
    pub game: GameKind,
    /// The match seed.
    pub seed: u64,
    /// Steps played.
    pub steps: u64,
    /// SHA-256 of the replay, lowercase hex.
    pub replay_sha256: String,
    /// Wall-clock duration.
    pub elapsed_ms: u64,
    /// Every seat, in seat order.
    pub seats: Vec<SeatReport>,
}

impl MatchReport {
    /// The reproduction bundle of this match, played as `job`.
    pub fn reproduction(&self, job: &MatchJob) -> Reproduction {
        Reproduction {
            engine: self.engine.clone(),
            job: job.clone(),
            images: self.seats.iter().map(|seat| seat.image_id.clone()).collect(),
        }
    }
}

/// `bots` with the seats the game fills on its own (Vindinium's random heroes, rule
/// V-5) appended, up to the game's smallest number of seats.
pub fn fill_seats(game: GameKind, mut bots: Vec<BotSpec>) -> Vec<BotSpec> {
    let needed = *farm_engine::AnyGame::seats(game).start();
    if let Some(filler) = builtin::seat_filler(game) {
        while bots.len() < needed {
            bots.push(BotSpec::new(filler, BotLaunch::Builtin(filler.to_owned()), Transport::Stdio));
        }
    }
    bots
}

/// Writes replay lines, hashes them and counts their bytes as they go, and hands
/// each to the match's live viewers, if it has a tap.
struct ReplayWriter<W: AsyncWrite + Unpin> {
    out: BufWriter<W>,
    hash: LineHasher,
    written: u64,
    live: Option<Arc<LiveMatch>>,
}

impl<W: AsyncWrite + Unpin> ReplayWriter<W> {
    fn new(replay: W, live: Option<Arc<LiveMatch>>) -> Self {
        ReplayWriter { out: BufWriter::new(replay), hash: LineHasher::default(), written: 0, live }
    }

    /// Writes and hashes a line of play.
    async fn line(&mut self, line: &str) -> std::io::Result<()> {
        self.hash.line(line);
        self.write(line).await
    }

    /// Writes a line without hashing it: a frame with its clock readings, whose play
    /// was hashed on its own.
    async fn write(&mut self, line: &str) -> std::io::Result<()> {
        self.written += line.len() as u64 + 1;
        if let Some(live) = &self.live {
            live.push(line);
        }
        self.out.write_all(line.as_bytes()).await?;
        self.out.write_all(b"\n").await
    }
}

/// Keeps the bots' replies in a match's replay within
/// [`RunnerOptions::max_replay_bytes`]: the bot whose reply would take them past it is
/// out of the match ([`BotReply::OutputLimit`], which every game treats as a crash),
/// and is never asked again.
struct OutputBudget {
    limit: u64,
    /// Bytes of replies stored so far.
    stored: u64,
    /// The seats that went over.
    over: Vec<bool>,
}

impl OutputBudget {
    /// `reply` from `seat`, or `OutputLimit` if storing it would pass the limit.
    fn admit(&mut self, seat: Seat, reply: BotReply) -> BotReply {
        match reply {
            BotReply::Line(text) => {
                let stored = self.stored.saturating_add(replay::stored_len(&text));
                if stored > self.limit {
                    self.over[seat] = true;
                    return BotReply::OutputLimit;
                }
                self.stored = stored;
                BotReply::Line(text)
            }
            other => other,
        }
    }

    fn is_over(&self, seat: Seat) -> bool {
        self.over[seat]
    }
}

/// Where a match's replay goes, and who hears of its progress and can stop it.
pub struct MatchIo<W, P, F> {
    /// The replay is written here, line by line, as the match plays.
    pub replay: W,
    /// Called after every step with the steps played and the most the match can take.
    pub on_step: P,
    /// When this completes, the match stops ([`RunError::Stopped`]); its bots are
    /// still ended properly.
    pub stop: F,
    /// Where the replay's lines go as well, for the match's live viewers
    /// ([`crate::live`]); `None` for a match nobody can watch.
    pub live: Option<Arc<LiveMatch>>,
}

/// Plays the match `setup` between `bots` (one per seat), started in `sandbox`, its
/// moves timed by `clock`.
pub async fn play_match<S, W, P, F>(
    sandbox: &S,
    job_id: &str,
    setup: MatchSetup,
    clock: MoveClock,
    bots: &[BotSpec],
    options: &RunnerOptions,
    io: MatchIo<W, P, F>,
) -> Result<MatchReport, RunError>
where
    S: Sandbox,
    W: AsyncWrite + Unpin,
    P: FnMut(u64, u64),
    F: Future<Output = ()>,
{
    start_match(sandbox, job_id, None, clock, setup, bots).await?.play(options, io).await
}

/// Checks `setup`, the `clock` and the bots' limits, then starts `bots` (one per seat)
/// in `sandbox`, with the container `isolation` the match's tournament asks for, if
/// any. The match has not begun: no clock runs until [`StartedMatch::play`].
pub async fn start_match<S: Sandbox>(
    sandbox: &S,
    job_id: &str,
    isolation: Option<ContainerIsolation>,
    clock: MoveClock,
    setup: MatchSetup,
    bots: &[BotSpec],
) -> Result<StartedMatch, RunError> {
    let (game_kind, seed) = (setup.game, setup.seed);
    let game = Match::new(setup)?;
    clock.check().map_err(|problem| RunError::InvalidClock(problem.to_string()))?;
    for (seat, bot) in bots.iter().enumerate() {
        bot.check()
            .and_then(|()| farm_proto::check_transport(game_kind, bot.transport))
            .map_err(|problem| RunError::InvalidBot { seat, problem })?;
    }
    let contexts: Vec<LaunchContext<'_>> =
        (0..bots.len()).map(|seat| LaunchContext { game: game_kind, seed, seat, job_id, isolation }).collect();
    // Every seat's bot starts at once: a container made cold costs hundreds of
    // milliseconds, and no seat needs to wait for another's.
    let launched =
        futures_util::future::join_all(bots.iter().zip(&contexts).map(|(spec, context)| sandbox.launch(spec, context)))
            .await;
    let mut sessions = Vec::with_capacity(bots.len());
    let mut failure = None;
    for (seat, launched) in launched.into_iter().enumerate() {
        match launched {
            Ok(session) => sessions.push(session),
            Err(source) => {
                failure.get_or_insert(RunError::Launch { seat, source });
            }
        }
    }
    if let Some(error) = failure {
        // The bots that did start are ended before giving up.
        end_all(sessions).await;
        return Err(error);
    }
    Ok(StartedMatch { game, clock, bots: bots.to_vec(), sessions })
}

/// A match whose bots are running and which has not begun: played at once by
/// [`play_match`], or later (the worker starts a waiting job's bots while another
/// match plays). Its bots belong to it alone: they were started with its seed, seats
/// and job id, and end with it. Dropped unplayed, it ends them in the background;
/// [`StartedMatch::end`] ends them and waits.
pub struct StartedMatch {
    game: Match,
    clock: MoveClock,
    bots: Vec<BotSpec>,
    sessions: Vec<BotSession>,
}

impl StartedMatch {
    /// The game.
    pub fn game(&self) -> GameKind {
        self.game.setup().game
    }

    /// Bots running outside the worker (processes or containers), not built in.
    pub fn external_bots(&self) -> usize {
        self.sessions.iter().filter(|session| session.is_external()).count()
    }

    /// Ends every bot without playing, and waits until they are gone.
    pub async fn end(self) {
        end_all(self.sessions).await;
    }

    /// Plays the match. Its clock starts now: however long its bots have been
    /// running, their start-up never counts against them.
    pub async fn play<W, P, F>(self, options: &RunnerOptions, io: MatchIo<W, P, F>) -> Result<MatchReport, RunError>
    where
        W: AsyncWrite + Unpin,
        P: FnMut(u64, u64),
        F: Future<Output = ()>,
    {
        let StartedMatch { mut game, clock, bots, mut sessions } = self;
        let MatchIo { replay, mut on_step, stop, live } = io;
        let (game_kind, seed) = (game.setup().game, game.setup().seed);
        let started = Instant::now();
        let limit = options.match_limit(&game, sessions.len(), &clock);
        let result = tokio::select! {
            result = drive(&mut game, &clock, &mut sessions, options, ReplayWriter::new(replay, live), &mut on_step) => result,
            () = stop => Err(RunError::Stopped),
            () = tokio::time::sleep(limit) => Err(RunError::TooLong(limit)),
        };

        if result.is_ok() {
            let concluded = sessions.iter_mut().enumerate().map(|(seat, session)| session.conclude(&game, seat));
            futures_util::future::join_all(concluded).await;
        }
        // Every bot is ended, whether the match finished or failed.
        let images: Vec<Option<String>> =
            sessions.iter().map(|session| session.image_id().map(str::to_owned)).collect();
        let mut ended = Vec::with_capacity(sessions.len());
        for session in sessions {
            ended.push(session.finish().await);
        }
        let Driven { clocks, unanswered, replay_sha256 } = result?;

        let seats = game
            .outcome()
            .into_iter()
            .zip(bots)
            .zip(clocks)
            .zip(ended)
            .zip(images)
            .zip(unanswered)
            .enumerate()
            .map(|(seat, (((((outcome, spec), clock), (log, exit)), image_id), unanswered))| {
                let (reply, cpu) = clock.summaries();
                let crash = crash::report(&outcome, exit.as_ref(), unanswered.as_ref(), &log);
                SeatReport {
                    seat,
                    name: spec.name,
                    launch: spec.launch.to_string(),
                    outcome,
                    requests: clock.requests,
                    timeouts: clock.timeouts,
                    reply: reply.unwrap_or_default(),
                    cpu,
                    image_id,
                    exit,
                    crash,
                    log,
                }
            })
            .collect();
        Ok(MatchReport {
            engine: farm_engine::engine_version(),
            game: game_kind,
            seed,
            steps: game.steps(),
            replay_sha256,
            elapsed_ms: started.elapsed().as_millis() as u64,
            seats,
        })
    }
}

async fn end_all(sessions: Vec<BotSession>) {
    for session in sessions {
        session.finish().await;
    }
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// What [`drive`] leaves of a match played to its end.
struct Driven {
    clocks: Vec<SeatClock>,
    /// Each seat's first request left unanswered.
    unanswered: Vec<Option<Unanswered>>,
    replay_sha256: String,
}

async fn drive<W: AsyncWrite + Unpin>(
    game: &mut Match,
    clock: &MoveClock,
    sessions: &mut [BotSession],
    options: &RunnerOptions,
    mut writer: ReplayWriter<W>,
    on_step: &mut impl FnMut(u64, u64),
) -> Result<Driven, RunError> {
    let deadlines = game.deadlines();
    let limit = game.game().max_steps();
    let game_name = game.setup().game.name();
    let latency = metrics::TURN_LATENCY.with_label_values(&[game_name]);
    let move_cpu = metrics::MOVE_CPU.with_label_values(&[game_name]);
    let mut clocks: Vec<SeatClock> = sessions.iter().map(|_| SeatClock::new(clock)).collect();
    let mut unanswered: Vec<Option<Unanswered>> = vec![None; sessions.len()];
    let mut budget = OutputBudget { limit: options.max_replay_bytes, stored: 0, over: vec![false; sessions.len()] };
    let mut timed_frame = String::new();
    writer.line(&game.header_line()).await?;

    while !game.is_over() {
        let to_act = game.to_act();
        let mut asked = Vec::with_capacity(to_act.len());
        for &seat in &to_act {
            if budget.is_over(seat) {
                continue;
            }
            let seat_clock = &mut clocks[seat];
            let allowed = if seat_clock.requests == 0 {
                options.startup_grace + Duration::from_millis(deadlines.first_ms)
            } else {
                Duration::from_millis(deadlines.turn_ms)
            };
            sessions[seat].freeze(false);
            let timed = seat_clock.start(clock, allowed, &sessions[seat]);
            let accepted = sessions[seat].send(game, seat);
            asked.push((seat, timed, accepted, allowed));
        }
        let mut replies: Vec<(Seat, BotReply)> =
            to_act.iter().filter(|&&seat| budget.is_over(seat)).map(|&seat| (seat, BotReply::OutputLimit)).collect();
        let mut times: Vec<Option<ReplyTime>> = vec![None; replies.len()];
        for (seat, timed, accepted, allowed) in asked {
            let seat_clock = &mut clocks[seat];
            let (reply, time) = if accepted {
                seat_clock.reply(clock, timed, &mut sessions[seat]).await
            } else {
                seat_clock.unread(timed, &mut sessions[seat]).await
            };
            if reply != BotReply::Timeout {
                let took = Duration::from_micros(time.wall_us);
                latency.observe(took.as_secs_f64());
                if let Some(cpu_us) = time.cpu_us {
                    move_cpu.observe(Duration::from_micros(cpu_us).as_secs_f64());
                }
                if seat_clock.requests == 1 && sessions[seat].is_external() {
                    SandboxPhase::FirstReply.observe(sessions[seat].sandbox_name(), took);
                }
            }
            // The first miss, unless the bot went away later: where it ended is what
            // its report tells (a bot that was late once and crashed at request 50
            // crashed at request 50).
            if let Some(missed) = Missed::of(&reply)
                && (unanswered[seat].is_none() || missed == Missed::Crashed)
            {
                let request = game.observation(seat);
                unanswered[seat] = Some(Unanswered::new(seat_clock.requests, missed, duration_ms(allowed), &request));
            }
            if !clock.ponder {
                // From its reply to its next request the bot is frozen, in every game:
                // in simultaneous ones too, where it is asked at every step, a thread or
                // a child left computing would take the other bots' thinking time.
                sessions[seat].freeze(true);
            }
            replies.push((seat, budget.admit(seat, reply)));
            times.push(Some(time));
        }
        let frame = game.submit(replies)?;
        writer.hash.line(frame);
        timed_frame.clear();
        replay::write_timed(&mut timed_frame, frame, &times);
        writer.write(&timed_frame).await?;
        if writer.written.saturating_sub(budget.stored) > options.max_replay_bytes {
            return Err(RunError::ReplayTooLarge(options.max_replay_bytes));
        }
        on_step(game.steps(), limit);
    }
    writer.line(&game.footer_line()).await?;
    writer.out.flush().await?;
    Ok(Driven { clocks, unanswered, replay_sha256: writer.hash.finish() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn botwars(rules: serde_json::Value) -> Match {
        let players = vec!["red".to_owned(), "blue".to_owned()];
        Match::new(MatchSetup::new(GameKind::Botwars, &rules, None, 1, players).expect("setup")).expect("match")
    }

    #[test]
    fn a_matchs_limit_is_its_rules_worst_case_capped_by_the_operator() {
        let options = RunnerOptions { max_match: Duration::from_secs(3600), ..RunnerOptions::default() };
        // Two first replies of 5 + 5 s, then 100 steps of 5 s: 520 s, a tenth more and a second.
        assert_eq!(
            options.match_limit(&botwars(serde_json::Value::Null), 2, &MoveClock::default()),
            Duration::from_secs(573)
        );
        let quick = botwars(serde_json::json!({ "maxTurns": 10, "replyTimeoutMs": 100 }));
        assert_eq!(
            options.match_limit(&quick, 2, &MoveClock::default()),
            Duration::from_millis((10_200 + 1_000) * 11 / 10 + 1_000)
        );
        // The CPU clock's backstop and each seat's bank lengthen the worst case: two
        // first replies of 10 s and a bank of 1 s each, then 100 steps of 5 s, all times 3.
        let cpu = MoveClock {
            kind: farm_proto::ClockKind::Cpu,
            time_bank_ms: 1000,
            wall_backstop: 3,
            ..MoveClock::default()
        };
        let worst = (2 * 11 + 500) * 3;
        assert_eq!(
            options.match_limit(&botwars(serde_json::Value::Null), 2, &cpu),
            Duration::from_millis(worst * 1000 * 11 / 10 + 1000)
        );
        let capped = RunnerOptions { max_match: Duration::from_secs(60), ..options.clone() };
        assert_eq!(
            capped.match_limit(&botwars(serde_json::Value::Null), 2, &MoveClock::default()),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn a_jobs_limit_is_its_matchs_with_the_seats_a_worker_fills() {
        let options = RunnerOptions { max_match: Duration::from_secs(3600), ..RunnerOptions::default() };
        let job = |game: GameKind, bots: &[&str], rules: serde_json::Value| MatchJob {
            job_id: "j".into(),
            tournament_id: "t".into(),
            game,
            rules,
            map: None,
            seed: 1,
            bots: bots.iter().map(|spec| spec.parse().expect("a bot spec")).collect(),
            isolation: None,
            clock: MoveClock::default(),
        };
        let botwars = job(GameKind::Botwars, &["builtin:random", "builtin:gatherer"], serde_json::Value::Null);
        assert_eq!(options.job_limit(&botwars).expect("a valid job"), Duration::from_secs(573));
        // Vindinium seats four: two bots and two fillers each have a first reply's time.
        let two = job(GameKind::Vindinium, &["builtin:random", "builtin:greedy"], serde_json::Value::Null);
        let four = job(
            GameKind::Vindinium,
            &["builtin:random", "builtin:greedy", "builtin:random", "builtin:greedy"],
            serde_json::Value::Null,
        );
        assert_eq!(options.job_limit(&two).expect("valid"), options.job_limit(&four).expect("valid"));
        let bad = job(GameKind::Botwars, &["builtin:random"], serde_json::Value::Null);
        assert!(options.job_limit(&bad).is_err(), "one bot cannot play Botwars");
    }
}
