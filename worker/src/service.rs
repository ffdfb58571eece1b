//! The worker service: consume jobs, play them, store what they leave, publish their
//! results, and only then ack.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use farm_proto::{
    AUDITS_QUEUE, BUILDS_QUEUE, JOBS_QUEUE, JobEnvelope, MatchResult, RESULTS_QUEUE, ResultEnvelope, SCHEMA_VERSION,
};
use farm_runtime::Shutdown;
use farm_runtime::backoff::ReconnectPacing;
use farm_runtime::queue::{self, BROKER_CALL, BrokerError, ConfirmedPublisher};
use farm_runtime::settle::{self, RetryPolicy, Settlement, settle};
use farm_runtime::storage::{AttemptKeys, Storage};
use futures_util::StreamExt;
use lapin::Connection;
use lapin::message::Delivery;
use lapin::options::{BasicCancelOptions, BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{Instant, timeout};

use crate::audit::Auditor;
use crate::bots::Sandbox;
use crate::builds::Builder;
use crate::config::WorkerConfig;
use crate::control::{self, Listeners};
use crate::error::JobError;
use crate::http::{self, Health};
use crate::job::{Disposition, JobPlayer};
use crate::live::{BrokerOutlet, FrameOutlet, LiveBoard};
use crate::metrics;
use crate::quarantine::Quarantine;
use crate::warm::Slots;

/// A failure that stops the service itself (not one job).
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The metrics endpoint cannot listen.
    #[error("listening on {address}: {source}")]
    Listen {
        /// The address.
        address: String,
        /// Why.
        source: std::io::Error,
    },
    /// The worker's id is not the broker user it signs in as: the coordinator knows a
    /// worker only by the user RabbitMQ vouches for.
    #[error(
        "worker_id {worker_id:?} is not the broker user {user:?} that amqp_url signs in as: each worker has a \
         broker user of its own (farm-coordinator workers add NAME) and its worker_id is that user's name"
    )]
    Identity {
        /// The configured id.
        worker_id: String,
        /// The user of the AMQP URL (empty if it is no AMQP URL).
        user: String,
    },
}

/// `Ok` when the worker's id is the broker user its `amqp_url` signs in as: the one
/// identity the coordinator believes its answers are from. Checked before anything
/// starts.
pub fn check_identity(config: &WorkerConfig) -> Result<(), ServiceError> {
    let user = queue::broker_user(&config.amqp_url).unwrap_or_default();
    if user == config.worker_id {
        return Ok(());
    }
    Err(ServiceError::Identity { worker_id: config.worker_id.clone(), user })
}

/// What every job task shares.
struct JobContext<S> {
    config: WorkerConfig,
    player: JobPlayer<S>,
    publisher: ConfirmedPublisher,
    /// The slots jobs wait for, their bots' sandboxes prepared meanwhile (the warm pool).
    slots: Slots,
    /// Set once the worker drains: jobs still waiting for a slot are requeued.
    drain: watch::Receiver<bool>,
    /// Set to stop the matches in flight (their jobs are requeued).
    stop_matches: Arc<watch::Sender<bool>>,
    /// The deliveries in hand, across broker sessions.
    held: Arc<Held>,
    /// Set when the coordinator quarantines the worker: it takes no more jobs.
    quarantine: Quarantine,
    /// How long a job given back after a failure waits first. Its delivery limit is the
    /// broker's: past it, the job requeued is dead-lettered (and the coordinator told
    /// why by its `x-death` reason).
    retries: RetryPolicy,
}

/// The deliveries the worker holds, each with the notice that reports it returned
/// ([`MatchResult::Returned`]). A lost connection gives them back to the queue, and
/// RabbitMQ counts that against their jobs: the notices of those held when a session
/// is lost go out once the worker has reconnected, so that the coordinator does not
/// hold a broker outage against the jobs.
#[derive(Default)]
struct Held {
    state: Mutex<HeldState>,
}

#[derive(Default)]
struct HeldState {
    /// In hand now, by job id and attempt.
    held: HashMap<(String, u32), ResultEnvelope>,
    /// Given back with a lost connection, to be reported.
    lost: Vec<ResultEnvelope>,
}

/// One delivery in hand; it leaves [`Held`] when dropped, however its task ends.
struct HeldJob<'a> {
    held: &'a Held,
    key: (String, u32),
}

impl Drop for HeldJob<'_> {
    fn drop(&mut self) {
        self.held.lock().held.remove(&self.key);
    }
}

impl Held {
    fn hold(&self, delivered: &JobEnvelope, attempt: u32, worker_id: &str) -> HeldJob<'_> {
        let reason = "the worker lost its broker connection while it held the job".to_owned();
        let returned = MatchResult::Returned { reason, fault: false };
        let notice = ResultEnvelope::new(delivered, worker_id, attempt, returned).from_instance(crate::instance());
        let key = (delivered.job.job_id.clone(), attempt);
        self.lock().held.insert(key.clone(), notice);
        HeldJob { held: self, key }
    }

    /// The connection is lost: every delivery in hand is back in the queue.
    fn lose_all(&self) {
        let mut state = self.lock();
        let lost: Vec<ResultEnvelope> = state.held.drain().map(|(_, notice)| notice).collect();
        state.lost.extend(lost);
    }

    /// The notices of the deliveries lost so far, taken.
    fn take_lost(&self) -> Vec<ResultEnvelope> {
        std::mem::take(&mut self.lock().lost)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HeldState> {
        // A panic elsewhere never leaves the maps half-changed: use them as they are.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Publishes `notice` (a [`MatchResult::Returned`]); best effort: one that cannot be
/// sent is only logged, and its delivery counts against its job as before.
async fn send_notice(publisher: &ConfirmedPublisher, notice: &ResultEnvelope) {
    let body = match serde_json::to_vec(notice) {
        Ok(body) => body,
        Err(error) => return tracing::warn!(%error, "encoding a returned-job notice"),
    };
    match publisher.publish(RESULTS_QUEUE, &body).await {
        Ok(()) => metrics::DELIVERIES_RETURNED.inc(),
        Err(error) => tracing::warn!(job = %notice.job_id, %error, "the notice of a returned job was not sent"),
    }
}

/// Runs the worker until `shutdown` drains it: consumes `farm.jobs`, plays each job in
/// `sandbox`, stores replays and logs in `storage` and publishes results. A lost
/// broker connection is re-established with backoff; it never ends the service.
pub async fn run<S: Sandbox + Clone + Send + 'static>(
    config: WorkerConfig,
    sandbox: S,
    storage: Storage,
    shutdown: Shutdown,
) -> Result<(), ServiceError> {
    check_identity(&config)?;
    metrics::init();
    metrics::SLOTS.set(i64::from(config.slots));
    let health = Arc::new(Health::default());
    let listener = tokio::net::TcpListener::bind(&config.metrics_listen)
        .await
        .map_err(|source| ServiceError::Listen { address: config.metrics_listen.clone(), source })?;
    let address = listener.local_addr().map_or_else(|_| config.metrics_listen.clone(), |a| a.to_string());
    tracing::info!(
        address = %address,
        worker = %config.worker_id,
        slots = config.slots,
        warm_pool = config.warm_matches(),
        storage = %storage.describe(),
        "worker started"
    );
    // The endpoint answers until the very end of the service, drain included.
    let (http_stop, http_stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(
        axum::serve(listener, http::app(Arc::clone(&health)))
            .with_graceful_shutdown(async move {
                let _ = http_stopped.await;
            })
            .into_future(),
    );

    // The matches' own stop signal: the caller's abort, or the end of the drain period.
    let stop_matches = Arc::new(watch::channel(false).0);
    let forward = {
        let stop_matches = Arc::clone(&stop_matches);
        let mut outside_abort = shutdown.abort_receiver();
        tokio::spawn(async move {
            let _ = outside_abort.wait_for(|stop| *stop).await;
            stop_matches.send_replace(true);
        })
    };

    let mut drain = shutdown.drain_receiver();
    let held = Arc::new(Held::default());
    // Matches are kept for their viewers across broker sessions; relays need one.
    let live = LiveBoard::new(config.live_buffer_mib);
    let mut first = true;
    let mut pacing = ReconnectPacing::default();
    while !*drain.borrow() {
        let Some(connection) = queue::connect_with_backoff(&config.amqp_url, &mut drain).await else { break };
        let connection = Arc::new(connection);
        if !first {
            metrics::BROKER_RECONNECTS.inc();
        }
        first = false;
        let session = Instant::now();
        let opened = ConfirmedPublisher::open_as(&connection, &config.worker_id).await;
        let outlet = BrokerOutlet::open(&connection, &config.worker_id).await;
        let outcome = match opened.and_then(|publisher| outlet.map(|outlet| (publisher, outlet))) {
            Ok((publisher, outlet)) => {
                live.connect(Some(Arc::new(outlet) as Arc<dyn FrameOutlet>));
                for notice in held.take_lost() {
                    send_notice(&publisher, &notice).await;
                }
                let context = JobContext {
                    config: config.clone(),
                    player: JobPlayer {
                        sandbox: sandbox.clone(),
                        storage: storage.clone(),
                        options: config.runner_options(),
                        live: live.clone(),
                    },
                    publisher,
                    slots: Slots::new(config.slots, config.warm_matches(), Duration::from_secs(config.warm_idle_secs)),
                    drain: drain.clone(),
                    stop_matches: Arc::clone(&stop_matches),
                    held: Arc::clone(&held),
                    quarantine: health.quarantine.clone(),
                    retries: RetryPolicy::jobs(config.delivery_limit),
                };
                consume(&connection, Arc::new(context), &health, &mut drain).await
            }
            Err(error) => Err(error),
        };
        health.consuming.store(false, Ordering::Relaxed);
        live.connect(None);
        match outcome {
            Ok(()) => break,
            Err(error) => tracing::warn!(%error, "lost RabbitMQ; reconnecting"),
        }
        let delay = pacing.after_session(session.elapsed());
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = drain.wait_for(|stop| *stop) => break,
        }
    }
    health.consuming.store(false, Ordering::Relaxed);
    forward.abort();
    let _ = http_stop.send(());
    let _ = server.await;
    tracing::info!("worker stopped");
    Ok(())
}

/// Consumes until drained (`Ok`) or the connection fails (`Err`). When drained, every
/// job it took has been answered; on `Err` the matches in flight are dropped (their
/// deliveries go back to the queue with the connection).
///
/// Every delivery the worker holds has a channel of its own, a lane ([`run_lane`]):
/// what befalls one delivery's channel (RabbitMQ's consumer timeout on a long match,
/// a refused ack) closes that channel alone, and a job task that panics requeues its
/// own job. Only a lost connection reaches the other matches.
async fn consume<S: Sandbox + Clone + Send + 'static>(
    connection: &Arc<Connection>,
    context: Arc<JobContext<S>>,
    health: &Health,
    drain: &mut watch::Receiver<bool>,
) -> Result<(), BrokerError> {
    let config = &context.config;
    queue::declare_or_check_topology(connection, config.delivery_limit).await?;
    let listeners = Listeners {
        worker_id: config.worker_id.clone(),
        quarantine: context.quarantine.clone(),
        live: context.player.live.clone(),
    };
    let listener = tokio::spawn(control::listen(Arc::clone(connection), listeners));
    let _listener = AbortOnDrop(listener);
    let mut quarantined = context.quarantine.subscribe();
    if quarantined.borrow().is_some() {
        return quarantine_until_drained(health, drain).await;
    }
    // Beyond the slots, the jobs prepared for while they wait (the warm pool).
    let mut lanes = JoinSet::new();
    for lane in 0..config.prefetch() {
        lanes.spawn(run_lane(Arc::clone(connection), lane, Arc::clone(&context)));
    }
    lanes.spawn(run_audit_lane(Arc::clone(connection), Arc::clone(&context)));
    if let Some(registry) = config.builds_for() {
        lanes.spawn(run_build_lane(Arc::clone(connection), registry.to_owned(), Arc::clone(&context)));
    }
    health.consuming.store(true, Ordering::Relaxed);
    // Biased: a lane also ends (`Ok`) once it sees the drain or the quarantine, and
    // that must read as the drain it is, never as a lost connection, which would drop
    // the matches in flight.
    let lane_ended = tokio::select! {
        biased;
        _ = drain.wait_for(|stop| *stop) => None,
        _ = quarantined.wait_for(Option::is_some) => None,
        Some(ended) = lanes.join_next() => Some(ended),
    };
    if context.quarantine.reason().is_some() {
        // Every lane stops taking deliveries; the matches in flight finish.
        health.consuming.store(false, Ordering::Relaxed);
        while lanes.join_next().await.is_some() {}
        return quarantine_until_drained(health, drain).await;
    }
    if let Some(ended) = lane_ended {
        // A lane ends before a drain only when it cannot open a channel: the
        // connection is gone. The other lanes go with it (dropping the set), and
        // the deliveries they held are back in the queue.
        context.held.lose_all();
        return Err(match ended {
            Ok(Err(error)) => error,
            Ok(Ok(())) | Err(_) => BrokerError::TaskFailed,
        });
    }

    // Draining: every lane stops taking deliveries; the jobs waiting for a slot are
    // requeued, the ones in flight finish, or are stopped at the end of the drain
    // period and requeued.
    health.consuming.store(false, Ordering::Relaxed);
    tracing::info!(in_flight = metrics::JOBS_IN_FLIGHT.get(), "draining");
    let drained = tokio::time::timeout(Duration::from_secs(config.drain_secs), async {
        while lanes.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            in_flight = metrics::JOBS_IN_FLIGHT.get(),
            "drain period over: stopping matches and requeueing their jobs"
        );
        // Each match ends its bots and its job is rejected back to the queue.
        context.stop_matches.send_replace(true);
        while lanes.join_next().await.is_some() {}
    }
    Ok(())
}

/// A quarantined worker takes nothing more; it stays up (saying why on `/healthz`)
/// until it is told to stop.
async fn quarantine_until_drained(health: &Health, drain: &mut watch::Receiver<bool>) -> Result<(), BrokerError> {
    health.consuming.store(false, Ordering::Relaxed);
    let _ = drain.wait_for(|stop| *stop).await;
    Ok(())
}

/// Aborts its task when dropped: the control listener ends with its broker session.
struct AbortOnDrop(tokio::task::JoinHandle<Result<(), BrokerError>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Audits of other workers' matches ([`crate::audit`]), one at a time on a channel of
/// their own, until the worker drains or is quarantined.
async fn run_audit_lane<S: Sandbox + Clone + Send + 'static>(
    connection: Arc<Connection>,
    context: Arc<JobContext<S>>,
) -> Result<(), BrokerError> {
    let tag = format!("{}-{}-audit", context.config.worker_id, std::process::id());
    let auditor = Auditor {
        worker_id: &context.config.worker_id,
        storage: &context.player.storage,
        max_replay_bytes: context.player.options.max_replay_bytes,
        publisher: &context.publisher,
    };
    let (auditor, context) = (&auditor, &*context);
    one_at_a_time(&connection, AUDITS_QUEUE, &tag, context, move |delivery| async move {
        let settlement = auditor.handle(&delivery).await;
        settle_delivery(&delivery, settlement, context).await;
    })
    .await
}

/// Build jobs ([`crate::builds`]), one at a time on a channel of their own, each
/// holding one of the worker's slots while it builds, until the worker drains or is
/// quarantined ([`WorkerConfig::builds_for`] says which workers build).
async fn run_build_lane<S: Sandbox + Clone + Send + 'static>(
    connection: Arc<Connection>,
    registry: String,
    context: Arc<JobContext<S>>,
) -> Result<(), BrokerError> {
    let Some(engine) = context.player.sandbox.build_engine() else {
        tracing::error!("this worker's sandbox builds nothing: it takes no build jobs");
        let _ = context.drain.clone().wait_for(|stop| *stop).await;
        return Ok(());
    };
    let tag = format!("{}-{}-build", context.config.worker_id, std::process::id());
    let builder = Builder {
        engine: &engine,
        registry: &registry,
        credentials: context.config.docker.registry_credentials(),
        limits: context.config.build,
        storage: &context.player.storage,
        worker_id: &context.config.worker_id,
        publisher: &context.publisher,
    };
    let (builder, context) = (&builder, &*context);
    one_at_a_time(&connection, BUILDS_QUEUE, &tag, context, move |delivery| async move {
        let mut drain = context.drain.clone();
        let slot = tokio::select! {
            slot = context.slots.hold() => Some(slot),
            _ = drain.wait_for(|stop| *stop) => None,
        };
        let settlement = match slot {
            // The slot is held until the build is settled: through its pause, if it
            // goes back.
            Some(_) => builder.handle(&delivery).await,
            // Draining while every slot plays: the build goes back for another worker.
            None => Settlement::REQUEUE,
        };
        settle_delivery(&delivery, settlement, context).await;
        drop(slot);
    })
    .await
}

/// One job at a time, on a lane of its own ([`one_at_a_time`]).
async fn run_lane<S: Sandbox + Clone + Send + 'static>(
    connection: Arc<Connection>,
    lane: u16,
    context: Arc<JobContext<S>>,
) -> Result<(), BrokerError> {
    let tag = format!("{}-{}-{lane}", context.config.worker_id, std::process::id());
    one_at_a_time(&connection, JOBS_QUEUE, &tag, &context, |delivery| handle_contained(delivery, &context)).await
}

/// Hands the deliveries of `queue` to `handle` one at a time, on a channel of its own
/// (prefetch 1), until the worker drains or is quarantined. When the channel closes
/// under a delivery (a consumer timeout, a refused ack), another is opened on the
/// same connection; this fails only when it cannot, the connection being gone.
async fn one_at_a_time<S, H, F>(
    connection: &Connection,
    queue: &'static str,
    tag: &str,
    context: &JobContext<S>,
    mut handle: H,
) -> Result<(), BrokerError>
where
    H: FnMut(Delivery) -> F,
    F: Future<Output = ()>,
{
    let mut drain = context.drain.clone();
    let mut quarantined = context.quarantine.subscribe();
    loop {
        let channel = connection.create_channel().await?;
        channel.basic_qos(1, BasicQosOptions::default()).await?;
        let mut consumer = channel
            .basic_consume(queue.into(), tag.into(), BasicConsumeOptions::default(), FieldTable::default())
            .await?;
        loop {
            // Biased: once the worker drains, a delivery that arrived meanwhile (a job
            // it just gave back, say) is not taken up again; it goes back with the
            // channel.
            let next = tokio::select! {
                biased;
                _ = drain.wait_for(|stop| *stop) => None,
                _ = quarantined.wait_for(Option::is_some) => None,
                delivery = consumer.next() => Some(delivery),
            };
            let Some(delivery) = next else {
                // A delivery that arrived meanwhile, never handled, goes back to the
                // queue with the channel.
                let _ = timeout(BROKER_CALL, channel.basic_cancel(tag.into(), BasicCancelOptions::default())).await;
                let _ = timeout(BROKER_CALL, channel.close(200, "worker draining".into())).await;
                return Ok(());
            };
            match delivery {
                Some(Ok(delivery)) => handle(delivery).await,
                // The channel is closed: by the broker (a consumer timeout, a refused
                // ack) or with the connection.
                Some(Err(_)) | None => break,
            }
        }
        if *drain.borrow() || context.quarantine.reason().is_some() {
            return Ok(());
        }
        metrics::JOB_CHANNELS_REOPENED.inc();
        tracing::warn!(queue, tag, "a channel was closed; opening another");
    }
}

/// Handles one delivery; a panic in it requeues that job alone.
async fn handle_contained<S: Sandbox + Clone + Send + 'static>(delivery: Delivery, context: &Arc<JobContext<S>>) {
    let acker = delivery.acker.clone();
    if settle::requeue_if_it_panics(&acker, handle(delivery, Arc::clone(context))).await {
        tracing::error!("a job panicked; it was requeued");
        metrics::MATCHES.with_label_values(&["unknown", "panicked"]).inc();
    }
}

/// Counts a job in [`metrics::JOBS_IN_FLIGHT`] for as long as it lives, however its
/// task ends.
struct InFlight;

impl InFlight {
    fn start() -> Self {
        metrics::JOBS_IN_FLIGHT.inc();
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics::JOBS_IN_FLIGHT.dec();
    }
}

async fn handle<S: Sandbox + Clone + Send + 'static>(delivery: Delivery, context: Arc<JobContext<S>>) {
    let attempt = queue::attempt(&delivery.properties);
    let schema = farm_proto::schema_of(&delivery.data);
    if let Ok(schema) = schema
        && schema != SCHEMA_VERSION
    {
        // Perhaps a newer worker reads it; after the delivery limit it is dead-lettered.
        tracing::warn!(schema, "requeueing a job of another schema version");
        metrics::MATCHES.with_label_values(&["unknown", "requeued"]).inc();
        settle_delivery(&delivery, Settlement::RequeueAfter(context.retries.delay(attempt)), &context).await;
        return;
    }
    let delivered = match serde_json::from_slice::<JobEnvelope>(&delivery.data) {
        Ok(envelope) => envelope,
        Err(error) => {
            // Unreadable: no worker will ever read it. Straight to the dead letters.
            tracing::warn!(%error, "rejecting an unreadable job");
            metrics::MATCHES.with_label_values(&["unknown", "rejected"]).inc();
            settle_delivery(&delivery, Settlement::Reject, &context).await;
            return;
        }
    };
    let _held = context.held.hold(&delivered, attempt, &context.config.worker_id);
    play(&delivery, &delivered, attempt, &context).await;
}

/// Plays a job and answers it: acked after its result is published, or given back
/// (with a notice when the cause is outside the job).
async fn play<S: Sandbox + Clone + Send + 'static>(
    delivery: &Delivery,
    delivered: &JobEnvelope,
    attempt: u32,
    context: &Arc<JobContext<S>>,
) {
    let job = &delivered.job;
    let game = job.game.name();
    let keys = AttemptKeys::new(&job.tournament_id, &job.job_id, attempt);
    let mut drain = context.drain.clone();
    let drained = async move {
        let _ = drain.wait_for(|stop| *stop).await;
    };
    let turn = context.slots.turn(|| context.player.prepare(job), || context.player.start(job), drained).await;
    let Some(turn) = turn else {
        // The worker stopped before this job's turn: another worker plays it.
        tracing::info!(job = %job.job_id, "requeueing a job that had not begun");
        metrics::MATCHES.with_label_values(&[game, "requeued"]).inc();
        notify_returned(context, delivered, attempt, "the worker stopped before the match began".to_owned(), false)
            .await;
        settle_delivery(delivery, Settlement::REQUEUE, context).await;
        return;
    };
    let in_flight = InFlight::start();
    let mut abort = context.stop_matches.subscribe();
    let stop = async move {
        let _ = abort.wait_for(|stop| *stop).await;
    };
    let played = match turn.bots {
        Ok(started) => context.player.play_started(delivered, started, &keys, stop).await,
        Err(error) => Err(error.into()),
    };
    drop(in_flight);
    let retrying = played.as_ref().is_err_and(JobError::is_retryable);
    if let Err(error) = &played
        && !retrying
    {
        tracing::warn!(job = %job.job_id, attempt, %error, "job cannot be played");
    }
    // The slot is free for the next match while this one's result is stored; a match
    // that failed for infrastructure reasons keeps it through its job's retry delay,
    // which slows intake while things fail.
    let held_slot = retrying.then_some(turn.slot);
    let (envelope, body) = match context.player.answer(delivered, &keys, &context.config.worker_id, played).await {
        Disposition::Report { envelope, body } => (envelope, body),
        Disposition::Retry { error } => {
            tracing::warn!(job = %job.job_id, attempt, %error, "requeueing job");
            metrics::MATCHES.with_label_values(&[game, "requeued"]).inc();
            notify_returned(context, delivered, attempt, error.to_string(), error.is_the_workers_fault()).await;
            settle_delivery(delivery, Settlement::RequeueAfter(context.retries.delay(attempt)), context).await;
            drop(held_slot);
            return;
        }
    };
    let outcome_label = if matches!(envelope.result, MatchResult::Completed { .. }) { "completed" } else { "failed" };
    match context.publisher.publish(RESULTS_QUEUE, &body).await {
        Ok(()) => {
            metrics::MATCHES.with_label_values(&[game, outcome_label]).inc();
            settle_delivery(delivery, Settlement::Ack, context).await;
        }
        Err(error) => {
            tracing::warn!(job = %job.job_id, %error, "publishing the result failed; requeueing");
            metrics::MATCHES.with_label_values(&[game, "requeued"]).inc();
            notify_returned(context, delivered, attempt, format!("publishing its result failed: {error}"), false).await;
            settle_delivery(delivery, Settlement::RequeueAfter(context.retries.delay(attempt)), context).await;
        }
    }
}

/// Tells the coordinator that this delivery of the job `delivered` goes back to the
/// queue for `reason`, a cause outside the job (a `fault` of the worker's own
/// infrastructure, or not).
async fn notify_returned<S>(
    context: &JobContext<S>,
    delivered: &JobEnvelope,
    attempt: u32,
    reason: String,
    fault: bool,
) {
    let returned = MatchResult::Returned { reason, fault };
    let notice =
        ResultEnvelope::new(delivered, &context.config.worker_id, attempt, returned).from_instance(crate::instance());
    send_notice(&context.publisher, &notice).await;
}

/// Settles `delivery` ([`settle`]): a requeue's delay is cut short once the matches
/// stop. One the broker did not take is only logged: it goes back to the queue when its
/// channel closes (a consumer timeout under a long match, say), and a result published
/// for it meanwhile is a duplicate the coordinator drops.
async fn settle_delivery<S>(delivery: &Delivery, settlement: Settlement, context: &JobContext<S>) {
    if let Err(error) = settle(&delivery.acker, settlement, context.stop_matches.subscribe()).await {
        tracing::warn!(?settlement, %error, "a delivery was not settled; the broker gives it again");
    }
}
