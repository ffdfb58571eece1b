//! `farm-coordinator serve`: the HTTP API, and the publisher and result ingest over
//! RabbitMQ, until drained.

use std::sync::Arc;
use std::time::Duration;

use farm_runtime::Shutdown;
use farm_runtime::backoff::ReconnectPacing;
use farm_runtime::queue::{self, BrokerError, ConfirmedPublisher};
use farm_runtime::storage::{Storage, StorageError};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use crate::api::{self, ApiState, Submissions};
use crate::broker::{self, AmqpJobQueue};
use crate::config::CoordinatorConfig;
use crate::director::Director;
use crate::farm::{self, FarmError, Publisher, QueueError, Recorder};
use crate::leases;
use crate::ledger::{Ledger, LedgerError};
use crate::live::{self, Live};
use crate::metrics;
use crate::observations::Observer;
use crate::tournament::TournamentLimits;
use crate::uploads::Uploads;
use crate::versions;
use crate::webhooks::Deliverer;

/// How often the job gauges are refreshed from the ledger.
const GAUGE_PERIOD: Duration = Duration::from_secs(5);

/// A failure that stops the service.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The API address cannot be listened on.
    #[error("listening on {address}: {source}")]
    Listen {
        /// The address.
        address: String,
        /// Why.
        source: std::io::Error,
    },
    /// The ledger cannot be opened or written.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The object store cannot be opened.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A loop failed in a way reconnecting cannot fix.
    #[error(transparent)]
    Farm(#[from] FarmError),
}

/// Runs the coordinator until `shutdown` drains it. A lost broker is reconnected with
/// backoff; only the ledger failing ends the service early.
pub async fn serve(config: CoordinatorConfig, mut shutdown: Shutdown) -> Result<(), ServiceError> {
    metrics::init();
    let ledger = Ledger::open(&config.ledger_path)?.with_audits(config.audits);
    let storage = Storage::open(&config.storage)?;
    // Jobs published before a restart are still in the queue or with workers: nothing
    // is published again for it. Any that were lost come back by their lease.
    let wake = Arc::new(Notify::new());
    let recorder = Recorder::new(ledger.clone(), Arc::clone(&wake));

    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .map_err(|source| ServiceError::Listen { address: config.listen.clone(), source })?;
    let address = listener.local_addr().map_or_else(|_| config.listen.clone(), |address| address.to_string());
    tracing::info!(%address, ledger = %config.ledger_path.display(), storage = %storage.describe(), "coordinator started");
    let (stop_tx, stop) = watch::channel(false);
    let director = Director::new(ledger.clone(), config.bot_launch, Arc::clone(&wake));
    let wake_builds = Arc::new(Notify::new());
    let live = Live::new(config.live);
    let state = ApiState {
        ledger: ledger.clone(),
        storage,
        submissions: Submissions::Token(Arc::from(config.api_token.as_str())),
        wake_publisher: Arc::clone(&wake),
        director: Arc::clone(&director),
        tournament_limits: TournamentLimits { max_jobs: config.max_tournament_jobs },
        observer: Observer::new(config.observations),
        uploads: Uploads::new(config.uploads),
        quotas: config.quotas,
        webhooks: config.webhooks,
        wake_builds: Arc::clone(&wake_builds),
        live: live.clone(),
        views: crate::api::Views::default(),
    };
    let mut api_stop = stop.clone();
    let server = tokio::spawn(
        axum::serve(listener, api::app(state))
            .with_graceful_shutdown(async move {
                let _ = api_stop.wait_for(|stop| *stop).await;
            })
            .into_future(),
    );
    let gauges = {
        let ledger = ledger.clone();
        tokio::spawn(async move {
            loop {
                if let Err(error) = farm::refresh_gauges(&ledger).await {
                    tracing::warn!(%error, "refreshing the job gauges");
                }
                tokio::time::sleep(GAUGE_PERIOD).await;
            }
        })
    };
    let forward = tokio::spawn(async move {
        shutdown.drained().await;
        stop_tx.send_replace(true);
    });
    // Directing needs only the ledger: it goes on while the broker is away.
    let mut directing = {
        let (recorded, mut stop, director) = (recorder.subscribe(), stop.clone(), Arc::clone(&director));
        tokio::spawn(async move { director.run(recorded, &mut stop).await })
    };

    // Webhooks need only the ledger too.
    let delivering = {
        let (recorded, mut stop) = (recorder.subscribe(), stop.clone());
        let deliverer = Deliverer::new(ledger.clone(), config.webhooks);
        tokio::spawn(async move {
            if let Err(error) = deliverer.run(recorded, &mut stop).await {
                tracing::error!(%error, "webhook deliveries stopped");
            }
        })
    };

    let sessions = broker_sessions(&config, &ledger, &recorder, &wake, (&director, &wake_builds), &live, stop.clone());
    tokio::pin!(sessions);
    let outcome = tokio::select! {
        outcome = &mut sessions => outcome,
        directed = &mut directing => match directed {
            // It ends by itself only when stopped: so are the sessions.
            Ok(Ok(())) => sessions.await,
            // The ledger failing ends the service, as it does from the publisher.
            Ok(Err(error)) => Err(error.into()),
            Err(error) => Err(LedgerError::Task(error.to_string()).into()),
        },
    };
    directing.abort();
    delivering.abort();
    gauges.abort();
    forward.abort();
    // The API goes last: it answers while the loops wind down.
    let _ = server.await;
    tracing::info!("coordinator stopped");
    outcome
}

/// Publishes and ingests over RabbitMQ, reconnecting after retryable failures, until
/// `stop`.
async fn broker_sessions(
    config: &CoordinatorConfig,
    ledger: &Ledger,
    recorder: &Recorder,
    wake_publisher: &Arc<Notify>,
    (director, wake_builds): (&Director, &Notify),
    live: &Live,
    mut stop: watch::Receiver<bool>,
) -> Result<(), ServiceError> {
    let mut pacing = ReconnectPacing::default();
    // Checked when the configuration is loaded: an AMQP URL names its user.
    let coordinator_user = queue::broker_user(&config.amqp_url).unwrap_or_default();
    while !*stop.borrow() {
        let Some(connection) = queue::connect_with_backoff(&config.amqp_url, &mut stop).await else { break };
        tracing::info!("connected to RabbitMQ");
        let started = Instant::now();
        let session = async {
            let channel = broker::declare(&connection, config.delivery_limit).await.map_err(QueueError::from)?;
            let mut jobs =
                AmqpJobQueue::open(&connection, ledger.answer_key().clone()).await.map_err(QueueError::from)?;
            let set_aside = ConfirmedPublisher::open(&connection).await.map_err(QueueError::from)?;
            let mut publisher = Publisher::new(
                ledger.clone(),
                recorder.clone(),
                config.bot_launch,
                config.publish_batch,
                config.max_outstanding,
                None,
            )
            .queue_ahead(config.queue_ahead);
            let (mut publish_stop, mut ingest_stop, mut lease_stop) = (stop.clone(), stop.clone(), stop.clone());
            let (mut audit_stop, mut build_stop, mut built_stop) = (stop.clone(), stop.clone(), stop.clone());
            let mut live_stop = stop.clone();
            let builds_channel =
                connection.create_channel().await.map_err(BrokerError::from).map_err(QueueError::from)?;
            tokio::try_join!(
                publisher.run(&mut jobs, &mut publish_stop),
                broker::ingest(&channel, &set_aside, recorder, ledger.answer_key(), &mut ingest_stop),
                leases::sweep(&channel, ledger, &config.leases, wake_publisher, &mut lease_stop),
                broker::sweep_audits(&connection, ledger, &config.audits, &mut audit_stop),
                versions::publish_builds(&connection, ledger, &coordinator_user, wake_builds, &mut build_stop),
                versions::ingest_builds(
                    &builds_channel,
                    ledger,
                    &coordinator_user,
                    director,
                    config.validation,
                    wake_publisher,
                    &mut built_stop
                ),
                async {
                    let relayed =
                        live::relay_from_broker(&connection, live, ledger.answer_key(), ledger, &mut live_stop).await;
                    relayed.map_err(|error| FarmError::from(QueueError::from(error)))
                }
            )
            .map(drop)
        };
        let outcome: Result<(), FarmError> = session.await;
        let _ = connection.close(200, "coordinator stopping".into()).await;
        match outcome {
            Ok(()) => break,
            Err(error) if error.is_retryable() => {
                metrics::BROKER_RECONNECTS.inc();
                tracing::warn!(%error, "lost RabbitMQ; reconnecting");
            }
            Err(error) => return Err(error.into()),
        }
        // Reset by a session that lasted: a broker restarted after hours of service is
        // reconnected to at once, not after delays grown by failures long past.
        let delay = pacing.after_session(started.elapsed());
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = stop.wait_for(|stop| *stop) => break,
        }
    }
    Ok(())
}
