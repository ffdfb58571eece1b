//! Directors: for tournaments whose schedule is decided as results come (an SPRT, a
//! Swiss, a ladder) and round robins that may stop early, the loop that looks at each
//! one whenever results are recorded and adds its next matches, or ends it.
//!
//! What to do is decided by a pure function of the tournament and its jobs so far
//! ([`decide`]): the same results give the same decision, so a coordinator that
//! restarts picks up where it was, from the ledger alone. The loop ([`Director`])
//! only reads the ledger, decides, and writes the decision back.
//!
//! # Layout
//! [`sprt`], [`swiss`], [`ladder`] and [`settled`] decide and report for their
//! format; [`validations`] judges submitted versions' validations and enters those
//! that pass in their ladders; this file dispatches, runs the loop, and changes a
//! ladder's bots.

pub mod ladder;
pub mod settled;
pub mod sprt;
pub mod swiss;
pub mod validations;

use std::sync::Arc;

use farm_proto::limits;
use farm_worker::SandboxKind;
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, Notify, watch};

use crate::ledger::{JobState, Ledger, LedgerError, MatchRow};
use crate::metrics;
use crate::tournament::{self, BotEntry, Format, PlannedJob, RosterChange, Tournament, TournamentError};

/// What a director decides at one look at its tournament.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Decision {
    /// Jobs to add, their positions continuing the schedule.
    pub schedule: Vec<PlannedJob>,
    /// End it, for this reason: nothing more is scheduled, and its jobs not yet
    /// published are cancelled.
    pub conclude: Option<String>,
}

/// What a directed tournament shows of its state: the API's `status`, the CLI's
/// `status` and the tournament page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "format")]
pub enum FormatStatus {
    /// An SPRT's test.
    Sprt(Box<sprt::SprtReport>),
    /// A Swiss tournament's rounds and scores.
    Swiss(swiss::SwissReport),
    /// A ladder's bots and queue.
    Ladder(ladder::LadderReport),
    /// A round robin that stops once its ranking settles.
    RoundRobin(settled::SettledReport),
}

impl FormatStatus {
    /// Its lines for a terminal, the one-line summary first.
    pub fn lines(&self) -> Vec<String> {
        match self {
            FormatStatus::Sprt(report) => report.lines(),
            FormatStatus::Swiss(report) => report.lines(),
            FormatStatus::Ladder(report) => report.lines(),
            FormatStatus::RoundRobin(report) => report.lines(),
        }
    }
}

/// What `tournament` does next, given all its `jobs` so far (in position order, with
/// outcomes): see each format's module.
pub fn decide(tournament: &Tournament, jobs: &[MatchRow]) -> Decision {
    match &tournament.format {
        Format::Sprt { .. } => sprt::decide(tournament, jobs),
        Format::Swiss { .. } => swiss::decide(tournament, jobs),
        Format::Ladder { .. } => ladder::decide(tournament, jobs),
        Format::RoundRobin { stop_when: Some(_), .. } => settled::decide(tournament, jobs),
        Format::RoundRobin { stop_when: None, .. } | Format::Gauntlet { .. } | Format::Single => Decision::default(),
    }
}

/// The state of a directed tournament, or `None` for a fixed schedule.
pub fn status(tournament: &Tournament, jobs: &[MatchRow]) -> Option<FormatStatus> {
    Some(match &tournament.format {
        Format::Sprt { .. } => FormatStatus::Sprt(Box::new(sprt::report(tournament, jobs))),
        Format::Swiss { .. } => FormatStatus::Swiss(swiss::report(tournament, jobs)),
        Format::Ladder { .. } => FormatStatus::Ladder(ladder::report(tournament, jobs)),
        Format::RoundRobin { stop_when: Some(_), .. } => FormatStatus::RoundRobin(settled::report(tournament, jobs)),
        Format::RoundRobin { stop_when: None, .. } | Format::Gauntlet { .. } | Format::Single => return None,
    })
}

/// [`status`] read from the ledger: none for a fixed schedule, without reading its jobs.
pub async fn load_status(ledger: &Ledger, tournament: &Tournament) -> Result<Option<FormatStatus>, LedgerError> {
    if !tournament.format.is_directed() {
        return Ok(None);
    }
    Ok(status(tournament, &ledger.schedule(&tournament.id).await?))
}

/// Jobs scheduled and not yet answered (pending or being played).
pub(crate) fn unanswered(jobs: &[MatchRow]) -> u64 {
    jobs.iter().filter(|job| matches!(job.state, JobState::Pending | JobState::Running)).count() as u64
}

/// A change to a ladder's bots that cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum RosterError {
    /// No such tournament.
    #[error("no tournament {0}")]
    NoTournament(String),
    /// The tournament is not a ladder, or it has ended.
    #[error("{0}")]
    Refused(String),
    /// The ladder's definition would grow past what a submission may be
    /// ([`limits::MAX_SUBMISSION_BYTES`]): the bound on how many bots it gains.
    #[error("{0}")]
    OverLimit(String),
    /// The bot is not acceptable (its key is `bot`).
    #[error(transparent)]
    Bot(#[from] TournamentError),
    /// The ledger failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Runs every open tournament's director, and makes changes to ladders' bots.
pub struct Director {
    ledger: Ledger,
    /// How this farm's workers launch bots: a new bot must be launchable so.
    launch: SandboxKind,
    wake_publisher: Arc<Notify>,
    /// Wakes the loop: a bot added or retired, a tournament submitted or stopped.
    wake: Notify,
    /// One decision or change at a time, so a change never interleaves with a
    /// decision made from the bots before it.
    deciding: Mutex<()>,
    /// Counts passes that changed something (jobs added, a tournament ended).
    changed: watch::Sender<u64>,
}

impl Director {
    /// A director over `ledger` that wakes `wake_publisher` when it adds jobs.
    pub fn new(ledger: Ledger, launch: SandboxKind, wake_publisher: Arc<Notify>) -> Arc<Self> {
        Arc::new(Director {
            ledger,
            launch,
            wake_publisher,
            wake: Notify::new(),
            deciding: Mutex::new(()),
            changed: watch::channel(0).0,
        })
    }

    /// How this farm's workers launch bots (the coordinator's `bot_launch`).
    pub fn launch(&self) -> SandboxKind {
        self.launch
    }

    /// Looks at every open tournament again soon (a new one was submitted).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Changes after every pass that added jobs or ended a tournament.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Directs every open tournament now and judges the submitted versions whose
    /// validations have finished ([`validations::judge_finished`]), then again
    /// whenever results are recorded (`recorded` changes) or it is woken, until `stop`.
    pub async fn run(
        &self,
        mut recorded: watch::Receiver<u64>,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(), LedgerError> {
        loop {
            self.direct_all().await?;
            validations::judge_finished(&self.ledger, self).await?;
            tokio::select! {
                changed = recorded.changed() => if changed.is_err() { return Ok(()) },
                () = self.wake.notified() => {}
                _ = stop.wait_for(|stop| *stop) => return Ok(()),
            }
        }
    }

    /// One pass over the open tournaments; also sets the queue-depth gauges.
    pub async fn direct_all(&self) -> Result<(), LedgerError> {
        let mut depth = Gauges::default();
        let mut changed = false;
        for id in self.ledger.open_tournaments().await? {
            let _deciding = self.deciding.lock().await;
            let Some(tournament) = self.ledger.tournament(&id).await? else { continue };
            let jobs = self.ledger.schedule(&id).await?;
            let mut unanswered = unanswered(&jobs);
            let format = tournament.format.clone();
            // Pairing a Swiss round or rating a long ladder takes a while: off the runtime.
            let decision = tokio::task::spawn_blocking(move || decide(&tournament, &jobs))
                .await
                .map_err(|error| LedgerError::Task(error.to_string()))?;
            if !decision.schedule.is_empty() {
                let added = self.ledger.extend(&id, decision.schedule).await?;
                unanswered += added;
                changed |= added > 0;
            }
            if let Some(conclusion) = decision.conclude {
                tracing::info!(tournament = %id, %conclusion, "tournament concluded");
                changed |= self.ledger.conclude(&id, conclusion).await?.is_some();
            } else {
                depth.add(&format, unanswered);
            }
        }
        depth.publish();
        if changed {
            self.wake_publisher.notify_one();
            self.changed.send_modify(|passes| *passes += 1);
        }
        Ok(())
    }

    /// Ends tournament `id` now, as user `by` asked: its jobs not yet published are
    /// cancelled, those published finish and count; its conclusion says who stopped
    /// it. `None`: no such tournament, or it had ended already.
    pub async fn stop(&self, id: &str, by: &str) -> Result<Option<u64>, LedgerError> {
        let _deciding = self.deciding.lock().await;
        // A tournament that has played everything is over: stopping it says nothing true.
        if self.ledger.progress(id).await?.is_none_or(|progress| progress.finished()) {
            return Ok(None);
        }
        let cancelled = self.ledger.conclude(id, format!("stopped by {by}")).await?;
        if cancelled.is_some() {
            self.changed.send_modify(|passes| *passes += 1);
        }
        Ok(cancelled)
    }

    /// Adds `bot` to ladder `id`; with `replaces`, as that bot's new version, which
    /// retires and whose rating it starts from, its uncertainty widened. Returns the
    /// new bot's index. A frozen ladder takes no new bot.
    pub async fn add_bot(&self, id: &str, bot: BotEntry, replaces: Option<&str>) -> Result<usize, RosterError> {
        let _deciding = self.deciding.lock().await;
        let mut tournament = self.open_ladder(id).await?;
        if let Some(refused) = self.ledger.season(id).await?.refuses_versions(id, crate::ledger::now()) {
            return Err(RosterError::Refused(refused));
        }
        tournament::check_bot(tournament.game, &tournament.bots, "bot", &bot)?;
        let index = tournament.bots.len();
        let replaces = replaces.map(|name| active_bot(&tournament, name)).transpose()?;
        tournament.bots.push(bot);
        tournament.bot_spec(index, self.launch)?;
        tournament.roster.push(RosterChange::Added { bot: index, replaces });
        if let Some(old) = replaces {
            tournament.roster.push(RosterChange::Retired { bot: old });
        }
        // Every bot a ladder has had stays in it: its stored size bounds how many it gains.
        let size = serde_json::to_vec(&tournament).map_or(usize::MAX, |bytes| bytes.len());
        if size > limits::MAX_SUBMISSION_BYTES {
            return Err(RosterError::OverLimit(format!(
                "{id} would be {size} bytes with this bot, above the {} a submission may be",
                limits::MAX_SUBMISSION_BYTES
            )));
        }
        self.ledger.update_definition(&tournament).await?;
        if let Some(old) = replaces {
            self.ledger.cancel_pending_of(id, old).await?;
        }
        self.wake.notify_one();
        Ok(index)
    }

    /// Retires bot `name` of ladder `id`: it is scheduled no more, and its matches not
    /// yet published are cancelled. A ladder keeps at least its smallest table's
    /// number of active bots.
    pub async fn retire_bot(&self, id: &str, name: &str) -> Result<usize, RosterError> {
        let _deciding = self.deciding.lock().await;
        let mut tournament = self.open_ladder(id).await?;
        let bot = active_bot(&tournament, name)?;
        let Format::Ladder { smallest_table, .. } = tournament.format else { unreachable!("open_ladder checked") };
        if ladder::active(&tournament).len() <= smallest_table {
            return Err(RosterError::Refused(format!(
                "{name} is one of the last {smallest_table} active bots: add another before retiring it"
            )));
        }
        tournament.roster.push(RosterChange::Retired { bot });
        self.ledger.update_definition(&tournament).await?;
        self.ledger.cancel_pending_of(id, bot).await?;
        self.wake.notify_one();
        Ok(bot)
    }

    async fn open_ladder(&self, id: &str) -> Result<Tournament, RosterError> {
        let tournament = self.ledger.tournament(id).await?.ok_or_else(|| RosterError::NoTournament(id.to_owned()))?;
        if !matches!(tournament.format, Format::Ladder { .. }) {
            return Err(RosterError::Refused(format!("{id} is not a ladder: only a ladder's bots change")));
        }
        if !self.ledger.progress(id).await?.unwrap_or_default().open {
            return Err(RosterError::Refused(format!("{id} has ended")));
        }
        Ok(tournament)
    }
}

/// The index of active bot `name`.
fn active_bot(tournament: &Tournament, name: &str) -> Result<usize, RosterError> {
    let bot = tournament
        .bots
        .iter()
        .position(|bot| bot.name == name)
        .ok_or_else(|| RosterError::Refused(format!("{} has no bot {name:?}", tournament.id)))?;
    if !ladder::active(tournament).contains(&bot) {
        return Err(RosterError::Refused(format!("{name} has retired already")));
    }
    Ok(bot)
}

/// Unanswered jobs and their targets, summed by format, for the gauges.
#[derive(Default)]
struct Gauges {
    /// (format, unanswered, target)
    by_format: Vec<(&'static str, u64, u64)>,
}

impl Gauges {
    fn add(&mut self, format: &Format, unanswered: u64) {
        let (name, target) = match format {
            Format::Sprt { queue_depth, .. } => ("sprt", u64::from(*queue_depth)),
            Format::Ladder { queue_depth, .. } => ("ladder", u64::from(*queue_depth)),
            Format::Swiss { .. } => ("swiss", 0),
            _ => ("round-robin", 0),
        };
        match self.by_format.iter_mut().find(|(format, ..)| *format == name) {
            Some(entry) => {
                entry.1 += unanswered;
                entry.2 += target;
            }
            None => self.by_format.push((name, unanswered, target)),
        }
    }

    fn publish(self) {
        for format in ["sprt", "swiss", "ladder", "round-robin"] {
            let (unanswered, target) =
                self.by_format.iter().find(|(name, ..)| *name == format).map_or((0, 0), |entry| (entry.1, entry.2));
            let gauge = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
            metrics::DIRECTED_UNANSWERED.with_label_values(&[format]).set(gauge(unanswered));
            metrics::DIRECTED_TARGET.with_label_values(&[format]).set(gauge(target));
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Tournaments and jobs made up for the directors' tests.

    use farm_proto::PlayerStatus;

    use crate::ledger::{JobState, MatchRow, SeatOutcome};
    use crate::tournament::{PlannedJob, Tournament, TournamentFile, TournamentLimits};

    /// The tournament `text` describes, resolved.
    pub fn tournament(text: &str) -> Tournament {
        TournamentFile::from_toml(text).expect("parses").resolve(None, TournamentLimits::default()).expect("valid")
    }

    /// `job` as the ledger lists it, in `state`; completed with the seats' `ranks`
    /// (scores 10 − rank) when `ranks` is not empty.
    pub fn row(job: &PlannedJob, state: JobState, ranks: &[u32]) -> MatchRow {
        let outcomes = ranks
            .iter()
            .zip(&job.seats)
            .map(|(&rank, &bot)| SeatOutcome {
                bot: Some(bot),
                score: 10 - i64::from(rank),
                rank,
                status: PlayerStatus::Ok,
                timeouts: 0,
            })
            .collect();
        MatchRow {
            job_id: job.job_id.clone(),
            position: job.position,
            seats: job.seats.clone(),
            map: job.map,
            repetition: job.repetition,
            seed: job.seed,
            state: if ranks.is_empty() { state } else { JobState::Done },
            attempts: 1,
            reason: None,
            outcomes,
        }
    }

    /// `jobs` just scheduled: pending.
    pub fn pending(jobs: &[PlannedJob]) -> Vec<MatchRow> {
        jobs.iter().map(|job| row(job, JobState::Pending, &[])).collect()
    }

    /// Plays every unanswered job of `jobs`: `ranks` gives each its seats' ranks.
    pub fn play(jobs: &mut [MatchRow], mut ranks: impl FnMut(&MatchRow) -> Vec<u32>) {
        for job in jobs.iter_mut().filter(|job| matches!(job.state, JobState::Pending | JobState::Running)) {
            let planned = PlannedJob {
                position: job.position,
                job_id: job.job_id.clone(),
                seats: job.seats.clone(),
                map: job.map,
                repetition: job.repetition,
                seed: job.seed,
            };
            let ranks = ranks(job);
            *job = row(&planned, JobState::Done, &ranks);
        }
    }
}
