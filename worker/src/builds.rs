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
//! with its cause; a failure of the source's (a step that fails, too long a build, too
//! large an image, a source that breaks the rules) is reported at once.

use bollard::auth::DockerCredentials;
use farm_proto::{BUILD_RESULTS_QUEUE, BuildJob, BuildOutcome, BuildReport};
use farm_runtime::queue::{self, BUILD_DELIVERY_LIMIT, ConfirmedPublisher};
use farm_runtime::storage::{Storage, StorageError};
use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicRejectOptions};
use tokio::sync::watch;

use crate::build::{self, BuildEngine, BuildError, BuildLimits, BuildLog, Source};
use crate::metrics;

/// How long a build the farm failed waits before going back to the queue.
const RETRY_PAUSE: std::time::Duration = std::time::Duration::from_secs(10);

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
    /// Set when the worker stops: a build given back waits no longer.
    pub stop: watch::Receiver<bool>,
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
    /// Builds the job `delivery` holds and answers it: acked once its report is
    /// published, requeued when the farm failed it, rejected (dead-lettered) when it is
    /// unreadable.
    pub async fn handle(&self, delivery: Delivery) {
        let Ok(job) = serde_json::from_slice::<BuildJob>(&delivery.data) else {
            tracing::warn!(bytes = delivery.data.len(), "rejecting a build job that cannot be read");
            metrics::BUILDS.with_label_values(&["unreadable"]).inc();
            let _ = delivery.acker.reject(BasicRejectOptions { requeue: false }).await;
            return;
        };
        let mut log = BuildLog::default();
        let attempt = queue::attempt(&delivery.properties);
        let outcome = match self.build(&job, &mut log).await {
            Ok(outcome) => outcome,
            Err(error) if attempt > BUILD_DELIVERY_LIMIT => {
                tracing::warn!(bot = %job.bot, version = job.version, %error, attempt, "a build failed for the farm's fault, the last try");
                BuildOutcome::Failed { reason: format!("the farm could not build it ({attempt} tries): {error}") }
            }
            Err(error) => {
                tracing::warn!(bot = %job.bot, version = job.version, %error, attempt, "a build failed for the farm's fault; requeued");
                self.give_back(&delivery).await;
                return;
            }
        };
        if let Err(error) = self.storage.put(&job.log_key, log.0.into_bytes()).await {
            tracing::warn!(bot = %job.bot, %error, "storing a build log failed; requeued");
            self.give_back(&delivery).await;
            return;
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
                let _ = delivery.acker.ack(BasicAckOptions::default()).await;
            }
            Err(error) => {
                tracing::warn!(%error, "publishing a build report failed; requeued");
                self.give_back(&delivery).await;
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

impl Builder<'_> {
    /// Gives a build the farm failed back to the queue after [`RETRY_PAUSE`] (a
    /// registry or an engine that just failed is not asked again at once), or at once
    /// when the worker stops.
    async fn give_back(&self, delivery: &Delivery) {
        metrics::BUILDS.with_label_values(&["requeued"]).inc();
        let mut stop = self.stop.clone();
        tokio::select! {
            () = tokio::time::sleep(RETRY_PAUSE) => {}
            _ = stop.wait_for(|stop| *stop) => {}
        }
        queue::requeue(&delivery.acker).await;
    }
}
