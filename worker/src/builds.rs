//! Build jobs: a worker with the Docker sandbox and a registry (`registry` in its
//! configuration) takes `farm.builds` one at a time beside its matches, each build
//! holding one of its slots while it runs. For each it reads the uploaded source from
//! object storage, builds it ([`crate::build`]: compiled in a sandbox, assembled by the
//! farm), pushes the image to the registry and reports it by digest on
//! `farm.build-results`; the build's log goes to object storage whether it built or not.
//!
//! A failure of the farm's own (the engine, the registry, the store) gives the job back
//! to the queue for another try after a pause (cut short when the worker stops), up to
//! its delivery limit, and on its last delivery is reported as the farm's failure,
//! with its cause ([`RetryPolicy::BUILDS`]); a failure of the source's (a step that
//! fails, too long a build, too large an image, a source that breaks the rules) is
//! reported at once.

use std::time::Duration;

use bollard::auth::DockerCredentials;
use farm_proto::{BUILD_RESULTS_QUEUE, BuildJob, BuildOutcome, BuildReport};
use farm_runtime::queue::{self, ConfirmedPublisher};
use farm_runtime::settle::{AfterFailure, RetryPolicy, Settlement};
use farm_runtime::storage::{Storage, StorageError};
use lapin::message::Delivery;

use crate::build::{self, BuildEngine, BuildError, BuildLimits, BuildLog, Source};
use crate::metrics;

/// What a worker builds with.
pub struct Builder<'a> {
    /// The engine that builds.
    pub engine: &'a BuildEngine,
    /// Where images are pushed (`HOST:PORT`).
    pub registry: &'a str,
    /// What the worker signs in to the registry with.
    pub credentials: Option<DockerCredentials>,
    /// What a build may take.
    pub limits: BuildLimits,
    /// Where sources are read and logs written.
    pub storage: &'a Storage,
    /// Names the worker in its reports.
    pub worker_id: &'a str,
    /// Where reports go.
    pub publisher: &'a ConfirmedPublisher,
}

/// Why a build job goes back to the queue instead of being answered.
#[derive(Debug, thiserror::Error)]
enum Retry {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Build(BuildError),
}

impl Builder<'_> {
    /// Builds the job `delivery` holds and says how to settle it: acked once its report
    /// is published, requeued after a pause when the farm failed it, rejected
    /// (dead-lettered) when it is unreadable.
    pub async fn handle(&self, delivery: &Delivery) -> Settlement {
        let Ok(job) = serde_json::from_slice::<BuildJob>(&delivery.data) else {
            tracing::warn!(bytes = delivery.data.len(), "rejecting a build job that cannot be read");
            metrics::BUILDS.with_label_values(&["unreadable"]).inc();
            return Settlement::Reject;
        };
        let mut log = BuildLog::default();
        let attempt = queue::attempt(&delivery.properties);
        let retries = RetryPolicy::BUILDS;
        let outcome = match self.build(&job, &mut log).await {
            Ok(outcome) => outcome,
            Err(error) => match retries.after_failure(attempt) {
                AfterFailure::GiveUp => {
                    tracing::warn!(bot = %job.bot, version = job.version, %error, attempt, "a build failed for the farm's fault, the last try");
                    BuildOutcome::Failed { reason: format!("the farm could not build it ({attempt} tries): {error}") }
                }
                AfterFailure::TryAgainAfter(pause) => {
                    tracing::warn!(bot = %job.bot, version = job.version, %error, attempt, "a build failed for the farm's fault; requeued");
                    return given_back(pause);
                }
            },
        };
        if let Err(error) = self.storage.put(&job.log_key, log.0.into_bytes()).await {
            tracing::warn!(bot = %job.bot, %error, "storing a build log failed; requeued");
            return given_back(retries.delay(attempt));
        }
        let label = match &outcome {
            BuildOutcome::Built { .. } => "built",
            BuildOutcome::Failed { .. } => "failed",
        };
        tracing::info!(bot = %job.bot, version = job.version, ?outcome, "build answered");
        let report = BuildReport { job, worker_id: self.worker_id.to_owned(), outcome };
        let body = serde_json::to_vec(&report).expect("a report serializes");
        match self.publisher.publish(BUILD_RESULTS_QUEUE, &body).await {
            Ok(()) => {
                metrics::BUILDS.with_label_values(&[label]).inc();
                Settlement::Ack
            }
            Err(error) => {
                tracing::warn!(%error, "publishing a build report failed; requeued");
                given_back(retries.delay(attempt))
            }
        }
    }

    /// The job's outcome, or why the farm could not tell it.
    async fn build(&self, job: &BuildJob, log: &mut BuildLog) -> Result<BuildOutcome, Retry> {
        let failed = |reason: String| Ok(BuildOutcome::Failed { reason });
        let limit = self.limits.source.max_archive_bytes();
        let size = self.storage.size(&job.source_key).await?;
        if size > limit {
            return failed(format!("the archive is {size} bytes, over the {limit} a source may take"));
        }
        let archive = self.storage.read(&job.source_key).await?;
        let source = match Source::read_archive(&archive, self.limits.source) {
            Ok(source) => source,
            Err(error) => return failed(format!("the source: {error}")),
        };
        let built = match build::build(self.engine, &source, &job.bot, self.limits, log).await {
            Ok(built) => built,
            Err(error) if error.is_retryable() => return Err(Retry::Build(error)),
            Err(error) => return failed(error.to_string()),
        };
        match build::push(self.engine.docker(), &built, self.registry, self.credentials.clone()).await {
            Ok(image) => Ok(BuildOutcome::Built { image, size: built.size }),
            Err(error) => Err(Retry::Build(error)),
        }
    }
}

/// A build the farm failed, given back to the queue after `pause`: counted here, settled
/// by the build lane.
fn given_back(pause: Duration) -> Settlement {
    metrics::BUILDS.with_label_values(&["requeued"]).inc();
    Settlement::RequeueAfter(pause)
}
