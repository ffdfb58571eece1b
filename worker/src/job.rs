//! One job, start to finish, whatever carries it: play the match, store its replay and
//! logs, and decide what becomes of the attempt ([`JobPlayer::answer`]): a result
//! document stored and reported, or the job tried again later. The RabbitMQ service
//! and the coordinator's in-process farm both call this, so they play and answer jobs
//! identically; only how they report and requeue differs (when a job is tried again is
//! [`farm_runtime::settle::RetryPolicy`]'s, for both).

use farm_engine::MatchSetup;
use farm_proto::{BotSpec, JobEnvelope, MatchJob, MatchResult, PlayerResult, PlayerStatus, ResultEnvelope};
use farm_runtime::storage::{AttemptKeys, Storage};
use tokio::io::AsyncWriteExt;

use crate::bots::Sandbox;
use crate::error::JobError;
use crate::live::{LiveBoard, LivePlay};
use crate::metrics;
use crate::runner::{MatchIo, RunError, RunnerOptions, StartedMatch, fill_seats, start_match};

/// What becomes of one attempt at a job ([`JobPlayer::answer`]).
#[derive(Debug)]
pub enum Disposition {
    /// The result document, stored beside the replay: report `body`, its bytes.
    Report {
        /// The result.
        envelope: ResultEnvelope,
        /// What was stored, and is what gets reported.
        body: Vec<u8>,
    },
    /// An infrastructure failure (retryable: [`JobError::is_retryable`]), in the match
    /// or in storing its result: the job is tried again, when
    /// [`farm_runtime::settle::RetryPolicy`] says.
    Retry {
        /// What failed.
        error: JobError,
    },
}

/// What playing a job needs besides the job: where bots run and where their traces go.
#[derive(Clone)]
pub struct JobPlayer<S> {
    /// Where external bots run.
    pub sandbox: S,
    /// Where replays, logs and result documents go.
    pub storage: Storage,
    /// The runner's knobs.
    pub options: RunnerOptions,
    /// Where the matches' lines are kept and relayed for live viewers.
    pub live: LiveBoard,
}

impl<S: Sandbox> JobPlayer<S> {
    /// Plays the job `delivered` (attempt `keys`), storing its replay and the logs of
    /// its external bots; returns the result to report. `stop` completing stops the
    /// match ([`RunError::Stopped`], retryable).
    pub async fn play(
        &self,
        delivered: &JobEnvelope,
        keys: &AttemptKeys,
        stop: impl Future<Output = ()>,
    ) -> Result<MatchResult, JobError> {
        let started = self.start(&delivered.job).await?;
        self.play_started(delivered, started, keys, stop).await
    }

    /// Prepares the sandboxes of `job`'s bots, for a job waiting for a slot (see
    /// [`crate::warm`]); starts none of them. Returns how many were prepared.
    pub fn prepare(&self, job: &MatchJob) -> usize {
        self.sandbox.prepare(&self.bots(job))
    }

    /// `job`'s bots, each with its limits lowered to the worker's ceiling
    /// ([`RunnerOptions::bot_ceiling`]) where the tournament asked for more: what is
    /// prepared and what is started are the same bots.
    fn bots(&self, job: &MatchJob) -> Vec<BotSpec> {
        let mut bots = job.bots.clone();
        for (seat, bot) in bots.iter_mut().enumerate() {
            let (limits, clamped) = bot.limits.clamped_to(&self.options.bot_ceiling);
            if !clamped.is_empty() {
                tracing::info!(job = %job.job_id, seat, ?clamped, "limits lowered to the worker's bot_ceiling");
                for limit in clamped {
                    metrics::BOT_LIMITS_CLAMPED.with_label_values(&[limit]).inc();
                }
                bot.limits = limits;
            }
        }
        bots
    }

    /// Checks `job` and starts its bots: the first half of [`JobPlayer::play`], done
    /// when the job's slot comes.
    pub async fn start(&self, job: &MatchJob) -> Result<StartedMatch, RunError> {
        let bots = fill_seats(job.game, self.bots(job));
        let players = bots.iter().map(|bot| bot.name.clone()).collect();
        let setup = MatchSetup::new(job.game, &job.rules, job.map.clone(), job.seed, players)?;
        start_match(&self.sandbox, &job.job_id, job.isolation, job.clock, setup, &bots).await
    }

    /// Plays a job's match whose bots [`JobPlayer::start`] started: the second half of
    /// [`JobPlayer::play`].
    pub async fn play_started(
        &self,
        delivered: &JobEnvelope,
        started: StartedMatch,
        keys: &AttemptKeys,
        stop: impl Future<Output = ()>,
    ) -> Result<MatchResult, JobError> {
        let job = &delivered.job;
        let game = started.game().name();
        let replay_key = keys.replay();
        let mut upload = self.storage.replay_upload(&replay_key);
        let live = self.live.open(&job.job_id, &delivered.token, keys.attempt());
        let io = MatchIo { replay: &mut upload, on_step: |_, _| {}, stop, live: live.as_ref().map(LivePlay::tap) };
        let report = started.play(&self.options, io).await?;
        upload.shutdown().await.map_err(RunError::Replay)?;
        // Its viewers see the match end once its replay is stored; an attempt that fails
        // before (to be tried again) ends its relay with no end.
        if let Some(live) = live {
            live.finish();
        }

        metrics::MATCH_DURATION.with_label_values(&[game]).observe(report.elapsed_ms as f64 / 1000.0);
        if let Ok(size) = self.storage.size(&replay_key).await {
            metrics::REPLAY_BYTES.with_label_values(&[game]).inc_by(size);
        }
        let reproduction = report.reproduction(job);
        let mut players = Vec::with_capacity(report.seats.len());
        for seat in report.seats {
            let oom_killed = seat.exit.is_some_and(|exit| exit.oom_killed);
            let status_label = match seat.outcome.status {
                _ if oom_killed => Some("oom_killed"),
                PlayerStatus::Ok => None,
                status => Some(status.name()),
            };
            if let Some(status) = status_label {
                metrics::BOT_FAILURES.with_label_values(&[game, status]).inc();
            }
            let log_key = match seat.exit {
                Some(_) => {
                    let key = keys.log(seat.seat);
                    self.storage.create(&key, seat.log.bytes).await?;
                    Some(key)
                }
                None => None,
            };
            players.push(PlayerResult {
                seat: seat.seat,
                name: seat.name,
                outcome: seat.outcome,
                timeouts: seat.timeouts,
                mean_reply_ms: seat.reply.mean_ms,
                max_reply_ms: seat.reply.max_ms,
                p99_reply_ms: seat.reply.p99_ms,
                cpu: seat.cpu,
                exit_code: seat.exit.and_then(|exit| exit.code).map(i64::from),
                oom_killed,
                log_key,
                crash: seat.crash,
            });
        }
        Ok(MatchResult::Completed {
            steps: report.steps,
            players,
            replay_key,
            reproduction: Some(Box::new(reproduction)),
            replay_sha256: report.replay_sha256,
            duration_ms: report.elapsed_ms,
        })
    }

    /// What becomes of the attempt `keys` at the job `delivered`, played by `worker_id` with the
    /// outcome `played`: the one policy of `farm-worker serve` and `farm-coordinator
    /// run`. A result, or a failure no retry would change (bad rules, a bot that
    /// cannot run here), becomes a result document, stored beside the replay and then
    /// reported; an infrastructure failure, in the match or in storing its result, is
    /// tried again.
    pub async fn answer(
        &self,
        delivered: &JobEnvelope,
        keys: &AttemptKeys,
        worker_id: &str,
        played: Result<MatchResult, JobError>,
    ) -> Disposition {
        let result = match played {
            Ok(result) => result,
            Err(error) if error.is_retryable() => return Disposition::Retry { error },
            Err(error) => MatchResult::Failed { reason: error.to_string() },
        };
        let envelope =
            ResultEnvelope::new(delivered, worker_id, keys.attempt(), result).from_instance(crate::instance());
        match self.store_result(keys, &envelope).await {
            Ok(body) => Disposition::Report { envelope, body },
            Err(error) => Disposition::Retry { error },
        }
    }

    /// Stores the result document beside the replay; returns its bytes, which are
    /// what gets reported.
    async fn store_result(&self, keys: &AttemptKeys, envelope: &ResultEnvelope) -> Result<Vec<u8>, JobError> {
        let body = serde_json::to_vec(envelope).map_err(JobError::Encode)?;
        self.storage.create(&keys.result(), body.clone()).await?;
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use farm_proto::{BotLimits, GameKind};

    use super::*;
    use crate::bots::LocalSandbox;
    use farm_runtime::storage::StorageConfig;

    /// A player of local bots storing in `dir`.
    fn player(dir: &tempfile::TempDir) -> JobPlayer<LocalSandbox> {
        let storage = Storage::open(&StorageConfig::Local { path: dir.path().to_path_buf() }).expect("storage");
        JobPlayer { sandbox: LocalSandbox, storage, options: RunnerOptions::default(), live: LiveBoard::off() }
    }

    /// A Botwars job between `bots`.
    fn botwars_job(bots: Vec<BotSpec>) -> MatchJob {
        MatchJob {
            job_id: "j-1".into(),
            tournament_id: "t-1".into(),
            game: GameKind::Botwars,
            rules: serde_json::Value::Null,
            map: None,
            seed: 1,
            bots,
            isolation: None,
            clock: Default::default(),
        }
    }

    #[tokio::test]
    async fn an_attempt_is_reported_once_its_result_is_stored_and_retried_when_infrastructure_fails() {
        let dir = tempfile::tempdir().expect("temp dir");
        let player = player(&dir);
        let job = botwars_job(vec!["builtin:random".parse().expect("spec"), "builtin:random".parse().expect("spec")]);
        let keys = AttemptKeys::new(&job.tournament_id, &job.job_id, 3);
        let job = JobEnvelope::new(job, "its-token".to_owned());

        // A failure no retry would change is the job's result, stored, then reported.
        let too_long = JobError::Run(RunError::TooLong(Duration::from_secs(9)));
        let reason = too_long.to_string();
        let Disposition::Report { envelope, body } = player.answer(&job, &keys, "w-1", Err(too_long)).await else {
            panic!("a failed match is a result");
        };
        assert_eq!(
            envelope,
            ResultEnvelope::new(&job, "w-1", 3, MatchResult::Failed { reason }).from_instance(crate::instance())
        );
        assert_eq!(envelope.token, "its-token", "the answer carries its job's token back");
        assert_eq!(player.storage.read(&keys.result()).await.expect("stored"), body);
        assert_eq!(serde_json::from_slice::<ResultEnvelope>(&body).expect("a result document"), envelope);

        // An infrastructure failure: the job is tried again.
        let stopped = player.answer(&job, &keys, "w-1", Err(JobError::Run(RunError::Stopped))).await;
        assert!(matches!(stopped, Disposition::Retry { error: JobError::Run(RunError::Stopped) }), "{stopped:?}");
        // So is a result that cannot be stored (this run's document is there already).
        let result = MatchResult::Failed { reason: "again".to_owned() };
        let unstored = player.answer(&job, &keys, "w-1", Ok(result)).await;
        assert!(matches!(unstored, Disposition::Retry { error: JobError::Storage(_), .. }), "{unstored:?}");
    }

    #[test]
    fn a_bot_asking_above_the_workers_ceiling_is_prepared_and_started_at_the_ceiling() {
        let dir = tempfile::tempdir().expect("temp dir");
        let player = player(&dir);
        let mut hungry: BotSpec = "cmd:python3 bots/botwars/random_bot.py".parse().expect("spec");
        hungry.limits.memory_mib = 64 * 1024;
        hungry.limits.tmp_mib = 4096;
        let job = botwars_job(vec!["builtin:random".parse().expect("spec"), hungry]);
        let before = metrics::BOT_LIMITS_CLAMPED.with_label_values(&["memory_mib"]).get();
        let bots = player.bots(&job);
        let ceiling = BotLimits::default_ceiling();
        assert_eq!((bots[1].limits.memory_mib, bots[1].limits.tmp_mib), (ceiling.memory_mib, ceiling.tmp_mib));
        assert_eq!(bots[1].limits.cpu_millis, BotLimits::default().cpu_millis, "what is under it stays");
        assert_eq!(bots[0].limits, BotLimits::default());
        assert_eq!(metrics::BOT_LIMITS_CLAMPED.with_label_values(&["memory_mib"]).get(), before + 1);
    }
}
