//! The coordinator's two loops, whatever carries the jobs: the [`Publisher`] moves
//! pending jobs from the ledger into a [`JobQueue`], never more than a window of them
//! at once; the [`Recorder`] writes answers to the ledger, once per job, and wakes the
//! publisher as the window frees up. `serve` runs them over RabbitMQ, `run` over an
//! in-process queue.

use std::collections::HashMap;
use std::sync::Arc;

use farm_proto::{BotSpec, MatchJob};
use farm_worker::{RunnerOptions, SandboxKind};
use tokio::sync::{Notify, watch};

use crate::ledger::{Answer, JobState, Ledger, LedgerError, PendingJob, Recorded};
use crate::metrics;
use crate::tournament::Tournament;

/// A failure of the coordinator's loops.
#[derive(Debug, thiserror::Error)]
pub enum FarmError {
    /// The ledger failed: not retryable from here (the disk is full, or the file is
    /// damaged); the service stops rather than ack what it cannot record.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The queue failed: retryable, by reconnecting.
    #[error(transparent)]
    Queue(#[from] QueueError),
}

impl FarmError {
    /// Whether reconnecting to the queue and going on can help: the one place that
    /// classifies the coordinator's infrastructure errors.
    pub fn is_retryable(&self) -> bool {
        match self {
            FarmError::Queue(QueueError::Broker(error)) => error.is_retryable(),
            FarmError::Queue(QueueError::Closed | QueueError::Encode(_)) => true,
            FarmError::Ledger(LedgerError::Task(_)) => true,
            FarmError::Ledger(_) => false,
        }
    }
}

/// A queue that refused or lost jobs.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// RabbitMQ failed.
    #[error(transparent)]
    Broker(#[from] farm_runtime::queue::BrokerError),
    /// The in-process queue has no workers left.
    #[error("the in-process queue is closed")]
    Closed,
    /// A job could not be encoded (a bug).
    #[error("encoding a job: {0}")]
    Encode(#[from] serde_json::Error),
}

/// Where published jobs go.
pub trait JobQueue {
    /// Hands `jobs` over; returns once the queue is responsible for every one (the
    /// broker confirmed them, or a worker's channel took them).
    fn publish(&mut self, jobs: Vec<MatchJob>) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// How many published jobs no worker has taken yet, if the queue can tell; `None`
    /// for a queue that hands jobs straight to its workers.
    fn waiting(&mut self) -> impl Future<Output = Result<Option<u64>, QueueError>> + Send {
        async { Ok(None) }
    }
}

/// Records answers: the only writer of results.
#[derive(Clone)]
pub struct Recorder {
    ledger: Ledger,
    wake_publisher: Arc<Notify>,
    recorded: Arc<watch::Sender<u64>>,
}

impl Recorder {
    /// A recorder that wakes `wake_publisher` when jobs leave the window.
    pub fn new(ledger: Ledger, wake_publisher: Arc<Notify>) -> Self {
        Recorder { ledger, wake_publisher, recorded: Arc::new(watch::channel(0).0) }
    }

    /// Counts answers recorded so far; changes after every batch.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.recorded.subscribe()
    }

    /// Records `answers` in one transaction. Returns once they are durable: only then
    /// may their messages be acked.
    pub async fn record(&self, answers: Vec<Answer>) -> Result<Vec<Recorded>, LedgerError> {
        let dead_letters =
            answers.iter().filter(|answer| matches!(answer, Answer::Failed { dead_letter: true, .. })).count();
        let recorded = self.ledger.record(answers).await?;
        metrics::DEAD_LETTERS.inc_by(dead_letters as u64);
        let mut new = 0u64;
        let mut restarted = false;
        for outcome in &recorded {
            match outcome {
                Recorded::New { completed, tournament_finished, latency_ms } => {
                    new += 1;
                    metrics::RESULTS_INGESTED
                        .with_label_values(&[if *completed { "completed" } else { "failed" }])
                        .inc();
                    if let Some(latency_ms) = latency_ms {
                        metrics::JOB_LATENCY.observe(*latency_ms as f64 / 1000.0);
                    }
                    if *tournament_finished {
                        tracing::debug!("a tournament has all its results");
                    }
                }
                Recorded::Duplicate => {
                    metrics::DUPLICATES.inc();
                    tracing::debug!("dropped a duplicate result");
                }
                Recorded::DuplicateVerdict => {
                    metrics::DUPLICATE_VERDICTS.inc();
                    tracing::debug!("dropped a second verdict on an audit");
                }
                Recorded::UnknownJob => {
                    metrics::RESULTS_DROPPED.with_label_values(&["unknown_job"]).inc();
                    tracing::warn!("dropped the result of a job this ledger does not have");
                }
                Recorded::Refused { problem } => {
                    metrics::RESULTS_DROPPED.with_label_values(&["mismatch"]).inc();
                    tracing::warn!(%problem, "dropped a result that does not fit its job");
                }
                Recorded::Returned => metrics::DELIVERIES_RETURNED.inc(),
                Recorded::Audited { verdict } => metrics::AUDIT_VERDICTS.with_label_values(&[verdict]).inc(),
                Recorded::Restarted => {
                    restarted = true;
                    metrics::JOBS_RESTARTED.inc();
                    tracing::info!("a dead-lettered job whose deliveries were lost to outages starts over");
                }
            }
        }
        if restarted {
            self.wake_publisher.notify_one();
        }
        if new > 0 {
            self.wake_publisher.notify_one();
            self.recorded.send_modify(|count| *count += new);
        }
        Ok(recorded)
    }
}

/// A tournament ready to publish from: its bots as workers launch them and its jobs'
/// lease, or why they cannot be launched.
struct Prepared {
    tournament: Tournament,
    bots: Result<Launchable, String>,
}

/// What every job of a launchable tournament is published with.
struct Launchable {
    bots: Vec<BotSpec>,
    /// [`lease_secs`], the same for all its jobs: their rules and number of
    /// seats decide it, and setting a match up once per tournament is enough.
    lease_secs: u64,
}

/// A job's lease in whole seconds, before the operator's margin (which the lease sweep
/// adds): twice its match's limit on a worker with default settings. A job that cannot be set up (no tournament lets one
/// through) gets twice the workers' cap on any match.
pub fn lease_secs(job: &MatchJob) -> u64 {
    let options = RunnerOptions::default();
    let limit = options.job_limit(job).unwrap_or(options.max_match);
    limit.saturating_mul(2).as_secs_f64().ceil() as u64
}

/// Moves pending jobs into a [`JobQueue`], at most `max_outstanding` at once, and
/// never more than `queue_ahead` waiting there for a worker: the order of publication,
/// shared among users ([`crate::fair_share`]), is then the order of play.
pub struct Publisher {
    ledger: Ledger,
    recorder: Recorder,
    launch: SandboxKind,
    batch: u32,
    max_outstanding: u64,
    queue_ahead: u64,
    only: Option<String>,
    wake: Arc<Notify>,
    prepared: HashMap<String, Prepared>,
}

impl Publisher {
    /// A publisher of the ledger's pending jobs (only tournament `only`'s, if given),
    /// with no bound on those waiting in the queue until [`Publisher::queue_ahead`].
    pub fn new(
        ledger: Ledger,
        recorder: Recorder,
        launch: SandboxKind,
        batch: u32,
        max_outstanding: u64,
        only: Option<String>,
    ) -> Self {
        let wake = Arc::clone(&recorder.wake_publisher);
        let queue_ahead = u64::MAX;
        Publisher {
            ledger,
            recorder,
            launch,
            batch,
            max_outstanding,
            queue_ahead,
            only,
            wake,
            prepared: HashMap::new(),
        }
    }

    /// This publisher, keeping at most `jobs` waiting in a queue that can say how many
    /// wait ([`JobQueue::waiting`]).
    pub fn queue_ahead(mut self, jobs: u64) -> Self {
        self.queue_ahead = jobs;
        self
    }

    /// Publishes until `stop` turns true (`Ok`) or something fails. Waits whenever
    /// the window is full or nothing is pending, until an answer or a new tournament
    /// wakes it.
    pub async fn run<Q: JobQueue>(&mut self, queue: &mut Q, stop: &mut watch::Receiver<bool>) -> Result<(), FarmError> {
        loop {
            if *stop.borrow() {
                return Ok(());
            }
            let outstanding = self.ledger.count(JobState::Running, self.only.clone()).await?;
            let mut room = self.max_outstanding.saturating_sub(outstanding).min(u64::from(self.batch));
            if room > 0
                && let Some(waiting) = queue.waiting().await?
            {
                room = room.min(self.queue_ahead.saturating_sub(waiting));
            }
            let room = room as u32;
            let pending = if room > 0 { self.ledger.pending(room, self.only.clone()).await? } else { Vec::new() };
            if pending.is_empty() {
                tokio::select! {
                    () = self.wake.notified() => continue,
                    _ = stop.wait_for(|stop| *stop) => return Ok(()),
                }
            }
            let mut jobs = Vec::with_capacity(pending.len());
            let mut leased = Vec::with_capacity(pending.len());
            let mut unlaunchable = Vec::new();
            for job in pending {
                let prepared = self.prepare(&job).await?;
                match prepared {
                    Some(Prepared { tournament, bots: Ok(launchable) }) => {
                        leased.push((job.planned.job_id.clone(), launchable.lease_secs));
                        jobs.push(tournament.job(&job.planned, &launchable.bots));
                    }
                    Some(Prepared { bots: Err(reason), .. }) => unlaunchable.push(Answer::Failed {
                        job_id: job.planned.job_id,
                        attempts: 0,
                        reason: reason.clone(),
                        dead_letter: false,
                    }),
                    None => {}
                }
            }
            if !unlaunchable.is_empty() {
                self.recorder.record(unlaunchable).await?;
            }
            if jobs.is_empty() {
                continue;
            }
            let mut per_game: Vec<(&'static str, u64)> = Vec::new();
            for job in &jobs {
                match per_game.iter_mut().find(|(game, _)| *game == job.game.name()) {
                    Some((_, count)) => *count += 1,
                    None => per_game.push((job.game.name(), 1)),
                }
            }
            for (game, count) in &per_game {
                metrics::JOBS_PUBLISHED.with_label_values(&[game]).inc_by(*count);
            }
            queue.publish(jobs).await?;
            for (game, count) in &per_game {
                metrics::JOBS_CONFIRMED.with_label_values(&[game]).inc_by(*count);
            }
            self.ledger.mark_running(leased).await?;
        }
    }

    /// `job`'s tournament, prepared the first time one of its jobs comes (its lease is
    /// that job's).
    async fn prepare(&mut self, job: &PendingJob) -> Result<Option<&Prepared>, LedgerError> {
        let tournament_id = job.tournament_id.as_str();
        // A ladder's bots grow while it runs: a job seating one this copy lacks reloads it.
        let stale = self
            .prepared
            .get(tournament_id)
            .is_some_and(|prepared| job.planned.seats.iter().any(|&bot| bot >= prepared.tournament.bots.len()));
        if stale || !self.prepared.contains_key(tournament_id) {
            let Some(tournament) = self.ledger.tournament(tournament_id).await? else { return Ok(None) };
            let bots = tournament.check_launchable(self.launch).map_err(|error| error.to_string());
            if let Err(reason) = &bots {
                tracing::warn!(tournament = tournament_id, %reason, "its jobs cannot be played by these workers");
            }
            let bots = bots.map(|bots| {
                let lease_secs = lease_secs(&tournament.job(&job.planned, &bots));
                Launchable { bots, lease_secs }
            });
            self.prepared.insert(tournament_id.to_owned(), Prepared { tournament, bots });
        }
        Ok(self.prepared.get(tournament_id))
    }
}

/// Keeps the job and tournament gauges current: called after each ledger change
/// that matters, cheap enough for that (one indexed count per state).
pub async fn refresh_gauges(ledger: &Ledger) -> Result<(), LedgerError> {
    for (state, count) in ledger.totals().await? {
        metrics::JOBS.with_label_values(&[state.name()]).set(i64::try_from(count).unwrap_or(i64::MAX));
    }
    metrics::TOURNAMENTS_ACTIVE.set(i64::try_from(ledger.active_tournaments().await?).unwrap_or(i64::MAX));
    for (state, count) in ledger.versions_by_state().await? {
        metrics::BOT_VERSIONS.with_label_values(&[state.name()]).set(i64::try_from(count).unwrap_or(i64::MAX));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_lease_is_twice_its_matchs_limit() {
        let job = MatchJob {
            job_id: "j".into(),
            tournament_id: "t".into(),
            game: farm_proto::GameKind::Botwars,
            rules: serde_json::json!({ "maxTurns": 10, "replyTimeoutMs": 100 }),
            map: None,
            seed: 1,
            bots: ["builtin:random", "builtin:gatherer"].iter().map(|spec| spec.parse().expect("spec")).collect(),
            isolation: None,
            clock: Default::default(),
        };
        let limit = RunnerOptions::default().job_limit(&job).expect("valid");
        assert_eq!(lease_secs(&job), (limit * 2).as_secs_f64().ceil() as u64);
        assert!(lease_secs(&job) < 60, "a quick match has a short lease: {}", lease_secs(&job));
    }
}
