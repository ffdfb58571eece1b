//! `farm-coordinator run`: the whole farm in one process. The same ledger,
//! [`Publisher`] and [`Recorder`] as `serve`, with an in-process queue (a bounded
//! channel: the publisher waits while workers are busy) and in-process workers that
//! play jobs exactly as `farm-worker serve` does ([`JobPlayer`]), storing replays and
//! logs in a local directory. Interrupted, it leaves the ledger resumable: running it
//! again plays only what is missing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use farm_proto::limits;
use farm_proto::{JobEnvelope, MatchJob, MatchResult, ResultEnvelope};
use farm_runtime::Shutdown;
use farm_runtime::settle::{self, AfterFailure, RetryPolicy};
use farm_runtime::storage::{AttemptKeys, Storage, StorageConfig, StorageError};
use farm_worker::SandboxKind;
use farm_worker::bots::{DockerSandbox, DockerSettings, IsolatedSandbox, LocalSandbox, Sandbox};
use farm_worker::job::Disposition;
use farm_worker::live::LiveBoard;
use farm_worker::{JobPlayer, RunnerOptions};
use tokio::sync::{Mutex, Notify, mpsc, watch};
use tokio::task::JoinSet;

use crate::director::{self, Director, FormatStatus};
use crate::farm::{FarmError, JobQueue, Publisher, QueueError, Recorder};
use crate::ledger::{Answer, Ledger, LedgerError, Progress};
use crate::live::{self, InProcess, Live};
use crate::standings::Standings;
use crate::tournament::{Tournament, TournamentError};

/// Where a run keeps its ledger, in its data directory.
pub fn ledger_path(data_dir: &Path) -> PathBuf {
    data_dir.join("ledger.sqlite")
}

/// Where a run keeps its replays and logs, in its data directory.
pub fn objects_path(data_dir: &Path) -> PathBuf {
    data_dir.join("objects")
}

/// How `run` runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The ledger ([`ledger_path`]) and objects ([`objects_path`]) go here.
    pub data_dir: PathBuf,
    /// Matches played at once.
    pub workers: usize,
    /// Where external bots run.
    pub sandbox: SandboxKind,
    /// With Docker: the OCI runtime of the bots' containers (`runsc`: gVisor), as the
    /// engine names it; `None`, the engine's default.
    pub docker_runtime: Option<String>,
    /// Retries of a job that fails for infrastructure reasons, as the queue's
    /// delivery limit would allow.
    pub delivery_limit: u32,
    /// Extra time for each bot's first reply, and the longest a match may take.
    pub runner: RunnerOptions,
    /// Where its matches are shown live (`run --web`'s pages), if anywhere.
    pub live: Option<Live>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Every match has its result.
    Finished,
    /// The tournament was already complete in this data directory: nothing was played.
    AlreadyFinished,
    /// Interrupted; running again resumes.
    Interrupted,
}

/// What a run leaves.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// How it ended.
    pub end: RunEnd,
    /// The standings at the end.
    pub standings: Standings,
    /// A directed format's state at the end (an SPRT's test, a Swiss's rounds).
    pub status: Option<FormatStatus>,
    /// Why its director ended it, if it did.
    pub conclusion: Option<String>,
}

impl RunReport {
    async fn of(end: RunEnd, ledger: &Ledger, tournament: &Tournament) -> Result<Self, LedgerError> {
        let standings = Standings::load(ledger, tournament).await?;
        let status = director::load_status(ledger, tournament).await?;
        let conclusion = ledger.conclusion(&tournament.id).await?;
        Ok(RunReport { end, standings, status, conclusion })
    }
}

/// A run that could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A bot cannot run in the chosen sandbox.
    #[error(transparent)]
    Tournament(#[from] TournamentError),
    /// The ledger failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The object store failed to open.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Docker is not reachable.
    #[error("docker: {0}")]
    Docker(String),
    /// The isolated sandbox cannot run here.
    #[error("the isolated sandbox: {0}")]
    Isolation(String),
    /// The publisher or the recorder failed.
    #[error(transparent)]
    Farm(#[from] FarmError),
}

/// The in-process queue: a bounded channel the workers share.
struct ChannelQueue(mpsc::Sender<MatchJob>);

impl JobQueue for ChannelQueue {
    async fn publish(&mut self, jobs: Vec<MatchJob>) -> Result<(), QueueError> {
        for job in jobs {
            self.0.send(job).await.map_err(|_| QueueError::Closed)?;
        }
        Ok(())
    }
}

/// Runs `tournament` to the end (or until `shutdown`), calling `on_progress` as
/// results arrive.
pub async fn run(
    tournament: Tournament,
    options: RunOptions,
    shutdown: Shutdown,
    on_progress: impl FnMut(Progress) + Send,
) -> Result<RunReport, RunError> {
    tournament.check_launchable(options.sandbox)?;
    match options.sandbox {
        SandboxKind::Local => run_in(LocalSandbox, tournament, options, shutdown, on_progress).await,
        SandboxKind::Isolated => {
            let isolated = IsolatedSandbox::new().map_err(RunError::Isolation)?;
            run_in(isolated, tournament, options, shutdown, on_progress).await
        }
        SandboxKind::Docker => {
            // One label per data directory, so a later run here removes what a
            // killed one left, and runs elsewhere are left alone.
            let worker_id = format!("run-{:08x}", label_hash(&options.data_dir));
            let settings = DockerSettings { runtime: options.docker_runtime.clone(), ..DockerSettings::default() };
            let docker = DockerSandbox::connect(&worker_id, &settings)
                .await
                .map_err(|error| RunError::Docker(error.to_string()))?;
            docker.reap_orphans().await.map_err(|error| RunError::Docker(error.to_string()))?;
            let report = run_in(docker.clone(), tournament, options, shutdown, on_progress).await;
            // Prepared containers serve the whole run; they go with it.
            docker.shutdown().await.map_err(|error| RunError::Docker(error.to_string()))?;
            report
        }
    }
}

fn label_hash(path: &std::path::Path) -> u32 {
    let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    canonical
        .to_string_lossy()
        .bytes()
        .fold(0x811c_9dc5_u32, |hash, byte| (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193))
}

async fn run_in<S: Sandbox + Clone + Send + Sync + 'static>(
    sandbox: S,
    tournament: Tournament,
    options: RunOptions,
    mut shutdown: Shutdown,
    mut on_progress: impl FnMut(Progress) + Send,
) -> Result<RunReport, RunError> {
    let ledger = Ledger::open(&ledger_path(&options.data_dir))?;
    let storage = Storage::open(&StorageConfig::Local { path: objects_path(&options.data_dir) })?;
    let id = tournament.id.clone();
    ledger.insert_tournament(tournament.clone()).await?;
    let progress = ledger.progress(&id).await?.unwrap_or_default();
    if progress.finished() {
        return Ok(RunReport::of(RunEnd::AlreadyFinished, &ledger, &tournament).await?);
    }
    ledger.requeue_unanswered().await?;
    on_progress(progress);

    let workers = options.workers.max(1);
    let wake = Arc::new(Notify::new());
    let recorder = Recorder::new(ledger.clone(), Arc::clone(&wake));
    let mut recorded = recorder.subscribe();
    let (stop_tx, stop) = watch::channel(false);
    let (jobs_tx, jobs_rx) = mpsc::channel::<MatchJob>(workers);
    let (results_tx, results_rx) = mpsc::channel::<ResultEnvelope>(workers * 2);

    let mut publisher = Publisher::new(
        ledger.clone(),
        recorder.clone(),
        options.sandbox,
        workers as u32,
        // A small window: an interrupted run leaves few jobs to hand out again.
        (workers * 2) as u64,
        Some(id.clone()),
    );
    // The director adds an adaptive tournament's matches as results come, and ends it.
    let director = Director::new(ledger.clone(), options.sandbox, Arc::clone(&wake));
    let mut directed = director.subscribe();
    let mut directing = {
        let (recorded, mut stop) = (recorder.subscribe(), stop.clone());
        let director = Arc::clone(&director);
        tokio::spawn(async move { director.run(recorded, &mut stop).await })
    };
    let mut publisher_stop = stop.clone();
    let mut publishing = tokio::spawn(async move {
        let mut queue = ChannelQueue(jobs_tx);
        publisher.run(&mut queue, &mut publisher_stop).await
    });
    // Watched matches are relayed into the pages' hub, with no broker between.
    let board = match &options.live {
        Some(_) => LiveBoard::new(limits::WORKER_LIVE_BUFFER_MIB.default),
        None => LiveBoard::off(),
    };
    let watching = options.live.clone().map(|live| {
        let (mut watcher, mut stop) = (InProcess::connect(board.clone(), &live), stop.clone());
        let ledger = ledger.clone();
        tokio::spawn(async move { live::keep_watching(&live, &mut watcher, &ledger, &mut stop).await })
    });
    let player = JobPlayer { sandbox, storage, options: options.runner.clone(), live: board };
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    let mut pool = JoinSet::new();
    for slot in 0..workers {
        pool.spawn(work(
            player.clone(),
            Arc::clone(&jobs_rx),
            results_tx.clone(),
            format!("in-process-{slot}"),
            options.delivery_limit,
            shutdown.clone(),
        ));
    }
    drop(results_tx);
    let mut ingesting = tokio::spawn(ingest(results_rx, recorder));

    let end = loop {
        tokio::select! {
            changed = either_changed(&mut recorded, &mut directed) => {
                if changed.is_err() {
                    break RunEnd::Interrupted;
                }
                let progress = ledger.progress(&id).await?.unwrap_or_default();
                on_progress(progress);
                if progress.finished() {
                    break RunEnd::Finished;
                }
            }
            done = &mut directing => {
                // The director only ends by itself when it fails.
                done.map_err(|error| LedgerError::Task(error.to_string()))??;
                break RunEnd::Interrupted;
            }
            () = shutdown.drained() => break RunEnd::Interrupted,
            published = &mut publishing => {
                // The publisher only ends by itself when it fails.
                published.map_err(|error| LedgerError::Task(error.to_string()))??;
                break RunEnd::Interrupted;
            }
            ingested = &mut ingesting => {
                ingested.map_err(|error| LedgerError::Task(error.to_string()))??;
                break RunEnd::Interrupted;
            }
        }
    };
    // Stop publishing; workers finish the matches they have (or stop them, on an
    // abort) and leave the rest, which the ledger still holds as unanswered. The
    // publisher may be waiting for room in a queue no drained worker will take from
    // again: the queue closes (its last receiver goes with the workers) before the
    // publisher is awaited, so that send fails instead of waiting forever.
    stop_tx.send_replace(true);
    directing.abort();
    if let Some(watching) = watching {
        watching.abort();
    }
    drop(jobs_rx);
    while pool.join_next().await.is_some() {}
    if !publishing.is_finished() {
        let _ = publishing.await;
    }
    if !ingesting.is_finished() {
        ingesting.await.map_err(|error| LedgerError::Task(error.to_string()))??;
    }
    Ok(RunReport::of(end, &ledger, &tournament).await?)
}

/// Waits for a result to be recorded (`recorded`) or for the director to add matches
/// or end the tournament (`directed`).
async fn either_changed(
    recorded: &mut watch::Receiver<u64>,
    directed: &mut watch::Receiver<u64>,
) -> Result<(), watch::error::RecvError> {
    tokio::select! {
        changed = recorded.changed() => changed,
        changed = directed.changed() => changed,
    }
}

/// One in-process worker: takes jobs until the queue closes or a drain, plays each.
async fn work<S: Sandbox + Clone + Send + Sync + 'static>(
    player: JobPlayer<S>,
    jobs: Arc<Mutex<mpsc::Receiver<MatchJob>>>,
    results: mpsc::Sender<ResultEnvelope>,
    worker_id: String,
    delivery_limit: u32,
    mut shutdown: Shutdown,
) {
    loop {
        let job = {
            let mut jobs = jobs.lock().await;
            tokio::select! {
                job = jobs.recv() => job,
                () = shutdown.drained() => None,
            }
        };
        let Some(job) = job else { return };
        // In process no answer crosses a broker: nobody checks a token.
        let delivered = JobEnvelope::new(job, String::new());
        let Some(envelope) = play_with_retries(&player, &delivered, &worker_id, delivery_limit, &shutdown).await else {
            // Aborted: the ledger still holds the job as unanswered.
            return;
        };
        if results.send(envelope).await.is_err() {
            return;
        }
    }
}

/// Plays the job `delivered` as the queue would deliver it: again after an
/// infrastructure failure, as often and as late as a worker would
/// ([`RetryPolicy::after_failure`], with `delivery_limit`), then as a failed match.
/// `None` if aborted.
async fn play_with_retries<S: Sandbox>(
    player: &JobPlayer<S>,
    delivered: &JobEnvelope,
    worker_id: &str,
    delivery_limit: u32,
    shutdown: &Shutdown,
) -> Option<ResultEnvelope> {
    let job = &delivered.job;
    let retries = RetryPolicy::jobs(delivery_limit);
    let mut attempt = 1;
    loop {
        let keys = AttemptKeys::new(&job.tournament_id, &job.job_id, attempt);
        let mut abort = shutdown.clone();
        let played = player.play(delivered, &keys, async move { abort.aborted().await }).await;
        match player.answer(delivered, &keys, worker_id, played).await {
            Disposition::Report { envelope, .. } => return Some(envelope),
            Disposition::Retry { .. } if shutdown.is_aborted() => return None,
            Disposition::Retry { error } => match retries.after_failure(attempt) {
                // What the queue's delivery limit does: the job is failed, with the reason.
                AfterFailure::GiveUp => {
                    tracing::warn!(job = %job.job_id, attempt, %error, "giving up on a job");
                    let reason = format!("gave up after {attempt} tries: {error}");
                    return Some(ResultEnvelope::new(delivered, worker_id, attempt, MatchResult::Failed { reason }));
                }
                AfterFailure::TryAgainAfter(delay) => {
                    tracing::warn!(job = %job.job_id, attempt, %error, "trying a job again");
                    if !settle::wait_unless_stopped(delay, shutdown.abort_receiver()).await {
                        return None;
                    }
                    attempt += 1;
                }
            },
        }
    }
}

/// Records results as workers send them, a batch per transaction.
async fn ingest(mut results: mpsc::Receiver<ResultEnvelope>, recorder: Recorder) -> Result<(), FarmError> {
    while let Some(first) = results.recv().await {
        let mut batch = vec![Answer::Result(first)];
        while let Ok(more) = results.try_recv() {
            batch.push(Answer::Result(more));
        }
        recorder.record(batch).await?;
    }
    Ok(())
}
