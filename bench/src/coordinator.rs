//! Coordinator: scheduling a round robin of many bots and inserting its jobs in the
//! ledger; publishing through the [`Publisher`] with `serve`'s defaults (batch and
//! window) into a queue that only encodes and counts the jobs, so that the figure is
//! the coordinator's own, until the window is full (in a farm, results free it); and
//! recording those jobs' results in ingest-sized batches.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use farm_coordinator::CoordinatorConfig;
use farm_coordinator::farm::{JobQueue, Publisher, QueueError, Recorder};
use farm_coordinator::ledger::{Answer, Ledger};
use farm_coordinator::tournament::{TournamentFile, TournamentLimits};
use farm_coordinator::vouch::{AnswerKey, Answerable};
use farm_proto::{JobEnvelope, MatchJob, MatchResult, PlayerOutcome, PlayerResult, PlayerStatus, ResultEnvelope};
use farm_worker::SandboxKind;
use tokio::sync::{Notify, watch};

use crate::report::Figures;

/// Answers per ledger transaction: the coordinator's ingest batch (its consumers'
/// prefetch).
const INGEST_BATCH: usize = 256;

/// A queue that encodes each job as the broker would carry it, keeps it for the
/// ingest figures, and stops the publisher after `total`.
struct CountingQueue {
    published: u64,
    total: u64,
    kept: Vec<MatchJob>,
    bytes: u64,
    stop: watch::Sender<bool>,
}

impl JobQueue for CountingQueue {
    async fn publish(&mut self, jobs: Vec<MatchJob>) -> Result<(), QueueError> {
        for job in jobs {
            // A token of the real length: the figures count the bytes on the wire.
            let token = AnswerKey::new([0; 32]).token(Answerable::Job(&job.job_id));
            self.bytes += serde_json::to_vec(&JobEnvelope::new(job.clone(), token))?.len() as u64;
            self.kept.push(job);
            self.published += 1;
        }
        if self.published >= self.total {
            self.stop.send_replace(true);
        }
        Ok(())
    }
}

/// A round robin of `bots` built-in Botwars bots, one game per ordered pair.
pub(crate) fn round_robin(bots: usize) -> anyhow::Result<farm_coordinator::tournament::Tournament> {
    let mut text = format!("name = \"bench {bots}\"\ngame = \"botwars\"\nformat = \"round-robin\"\nseed = 1\n");
    for index in 0..bots {
        text.push_str(&format!("[[bots]]\nname = \"bot-{index}\"\nbuiltin = \"random\"\n"));
    }
    Ok(TournamentFile::from_toml(&text)?.resolve(None, TournamentLimits::default())?)
}

/// A completed result for `job`, as a worker reports it.
pub(crate) fn result_for(job: &MatchJob) -> Answer {
    let players = job
        .bots
        .iter()
        .enumerate()
        .map(|(seat, bot)| PlayerResult {
            seat,
            name: bot.name.clone(),
            outcome: PlayerOutcome { score: seat as i64, rank: 2 - seat as u32, status: PlayerStatus::Ok },
            timeouts: 0,
            mean_reply_ms: 0.1,
            max_reply_ms: 0.2,
            p99_reply_ms: 0.2,
            cpu: None,
            exit_code: None,
            oom_killed: false,
            log_key: None,
            crash: None,
        })
        .collect();
    Answer::Result(ResultEnvelope {
        schema: farm_proto::SCHEMA_VERSION,
        job_id: job.job_id.clone(),
        tournament_id: job.tournament_id.clone(),
        worker_id: "bench".to_owned(),
        // Checked at the broker's edge (farm_coordinator::broker), not by the ledger.
        token: String::new(),
        instance: None,
        attempt: 1,
        result: MatchResult::Completed {
            steps: 100,
            players,
            replay_key: farm_runtime::storage::AttemptKeys::new(&job.tournament_id, &job.job_id, 1).replay(),
            replay_sha256: "0".repeat(64),
            duration_ms: 10,
            reproduction: None,
        },
    })
}

/// Runs the figures for a round robin of `bots` bots, with the ledger in `dir`.
pub async fn run(bots: usize, dir: &Path) -> anyhow::Result<Figures> {
    let mut figures = Figures::default();
    let ledger = Ledger::open(&dir.join("ledger.sqlite"))?;
    let tournament = round_robin(bots)?;
    let id = tournament.id.clone();

    let started = Instant::now();
    let inserted = ledger.insert_tournament(tournament).await?;
    let insert_seconds = started.elapsed().as_secs_f64();
    figures.put("bots", bots, bots.to_string());
    figures.put("jobs", inserted.jobs, inserted.jobs.to_string());
    figures.number("schedule_and_insert_seconds", insert_seconds, "s");
    figures.number("inserted_jobs_per_second", inserted.jobs as f64 / insert_seconds, "jobs/s");

    let recorder = Recorder::new(ledger.clone(), Arc::new(Notify::new()));
    let serve = CoordinatorConfig::default();
    let window = serve.max_outstanding.min(inserted.jobs);
    let (stop_tx, mut stop) = watch::channel(false);
    let mut queue = CountingQueue { published: 0, total: window, kept: Vec::new(), bytes: 0, stop: stop_tx };
    let mut publisher = Publisher::new(
        ledger.clone(),
        recorder.clone(),
        SandboxKind::Local,
        serve.publish_batch,
        serve.max_outstanding,
        Some(id),
    );
    let started = Instant::now();
    publisher.run(&mut queue, &mut stop).await?;
    let publish_seconds = started.elapsed().as_secs_f64();
    anyhow::ensure!(queue.published == window, "published {} of {window} jobs", queue.published);
    figures.put("publish.window", window, window.to_string());
    figures.put("publish.batch", serve.publish_batch, serve.publish_batch.to_string());
    figures.number("publish.jobs_per_second", queue.published as f64 / publish_seconds, "jobs/s");
    figures.number("publish.job_message_bytes", queue.bytes as f64 / queue.published as f64, "B");

    let answers: Vec<Answer> = queue.kept.iter().map(result_for).collect();
    let started = Instant::now();
    let mut batches = answers.into_iter().peekable();
    while batches.peek().is_some() {
        recorder.record(batches.by_ref().take(INGEST_BATCH).collect()).await?;
    }
    let ingest_seconds = started.elapsed().as_secs_f64();
    figures.put("ingest.results", queue.kept.len(), queue.kept.len().to_string());
    figures.put("ingest.batch", INGEST_BATCH, INGEST_BATCH.to_string());
    figures.number("ingest.results_per_second", queue.kept.len() as f64 / ingest_seconds, "results/s");
    Ok(figures)
}
