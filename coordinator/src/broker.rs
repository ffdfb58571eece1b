//! The coordinator's side of RabbitMQ: jobs published to `farm.jobs` with confirms,
//! results consumed from `farm.results` and dead letters from `farm.jobs.dead`, each
//! acked only after the ledger committed it. A message that is no answer the ledger can
//! take (unreadable, or of another schema version) is moved to `farm.set-aside`, with
//! confirms, before it is acked: never dropped. So is an answer that is not believed
//! ([`crate::vouch`]): one whose sender the broker does not vouch for, or that answers
//! a job or audit its sender was never given; those are counted as forged.
//!
//! Audits due are published to `farm.audits`, and quarantines announced on
//! `farm.control`, by a sweep of their own ([`sweep_audits`]).

use std::time::Duration;

use farm_proto::{
    AUDITS_QUEUE, AuditEnvelope, CONTROL_EXCHANGE, ControlEnvelope, ControlMessage, JobEnvelope, MatchJob, MatchResult,
    RESULTS_QUEUE, ResultEnvelope, SCHEMA_VERSION,
};
use farm_runtime::queue::{self, BrokerError, ConfirmedPublisher, DEAD_LETTER_QUEUE, SET_ASIDE_QUEUE};
use futures_util::{FutureExt, StreamExt};
use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicQosOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Channel, Connection};
use tokio::sync::watch;

use crate::audits::AuditSettings;
use crate::farm::{FarmError, JobQueue, QueueError, Recorder};
use crate::ledger::{Answer, AuditToPublish, Ledger};
use crate::metrics;
use crate::vouch::{AnswerKey, Answerable, Forgery, vouched_for};

/// Answers recorded per ledger transaction, at most: also the consumers' prefetch.
const INGEST_BATCH: u16 = 256;

const RESULTS_TAG: &str = "coordinator-results";
const DEAD_LETTERS_TAG: &str = "coordinator-dead-letters";

/// `farm.jobs` on a confirm-mode channel; every job carries its token.
pub struct AmqpJobQueue {
    publisher: ConfirmedPublisher,
    key: AnswerKey,
}

impl AmqpJobQueue {
    /// Opens a confirm-mode channel on `connection`; jobs carry tokens made with `key`.
    pub async fn open(connection: &Connection, key: AnswerKey) -> Result<Self, BrokerError> {
        Ok(AmqpJobQueue { publisher: ConfirmedPublisher::open(connection).await?, key })
    }
}

impl JobQueue for AmqpJobQueue {
    async fn publish(&mut self, jobs: Vec<MatchJob>) -> Result<(), QueueError> {
        let bodies = jobs
            .into_iter()
            .map(|job| {
                let token = self.key.token(Answerable::Job(&job.job_id));
                serde_json::to_vec(&JobEnvelope::new(job, token))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.publisher.publish_batch(farm_proto::JOBS_QUEUE, bodies.iter().map(Vec::as_slice)).await?;
        Ok(())
    }

    async fn waiting(&mut self) -> Result<Option<u64>, QueueError> {
        Ok(Some(self.publisher.ready(farm_proto::JOBS_QUEUE).await?))
    }
}

/// Declares the queues (as the workers do) with `delivery_limit`.
pub async fn declare(connection: &Connection, delivery_limit: u32) -> Result<Channel, BrokerError> {
    let channel = connection.create_channel().await?;
    queue::declare_topology(&channel, delivery_limit).await?;
    channel.basic_qos(INGEST_BATCH, BasicQosOptions::default()).await?;
    Ok(channel)
}

/// Consumes results and dead letters on `channel` until `stop` (`Ok`) or a failure;
/// what cannot be used is moved to `farm.set-aside` through `set_aside`. Answers must
/// carry the tokens `key` made.
pub async fn ingest(
    channel: &Channel,
    set_aside: &ConfirmedPublisher,
    recorder: &Recorder,
    key: &AnswerKey,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), FarmError> {
    let options = BasicConsumeOptions::default();
    let mut results = channel
        .basic_consume(RESULTS_QUEUE.into(), RESULTS_TAG.into(), options, FieldTable::default())
        .await
        .map_err(BrokerError::from)
        .map_err(QueueError::from)?;
    let mut dead = channel
        .basic_consume(DEAD_LETTER_QUEUE.into(), DEAD_LETTERS_TAG.into(), options, FieldTable::default())
        .await
        .map_err(BrokerError::from)
        .map_err(QueueError::from)?;
    loop {
        tokio::select! {
            _ = stop.wait_for(|stop| *stop) => {
                // Cancelled before the channel closes, so nothing more is delivered
                // to a consumer that is going away.
                for tag in [RESULTS_TAG, DEAD_LETTERS_TAG] {
                    let _ = channel.basic_cancel(tag.into(), BasicCancelOptions::default()).await;
                }
                return Ok(());
            }
            first = results.next() => {
                let batch = gather(first, &mut results)?;
                record_batch(batch, set_aside, recorder, |delivery| result_answer(delivery, key)).await?;
            }
            first = dead.next() => {
                let batch = gather(first, &mut dead)?;
                record_batch(batch, set_aside, recorder, dead_letter_answer).await?;
            }
        }
    }
}

/// `first` and whatever else has already arrived, up to a batch.
fn gather(
    first: Option<Result<Delivery, lapin::Error>>,
    consumer: &mut lapin::Consumer,
) -> Result<Vec<Delivery>, QueueError> {
    let closed = || {
        QueueError::Broker(BrokerError::Amqp(lapin::Error::from(lapin::ErrorKind::InvalidChannelState(
            lapin::ChannelState::Closed,
            "consumer ended",
        ))))
    };
    let mut batch = vec![first.ok_or_else(closed)?.map_err(BrokerError::from)?];
    while batch.len() < usize::from(INGEST_BATCH) {
        match consumer.next().now_or_never() {
            Some(Some(delivery)) => batch.push(delivery.map_err(BrokerError::from)?),
            Some(None) => return Err(closed()),
            None => break,
        }
    }
    Ok(batch)
}

/// Why a message is no answer the ledger can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unusable {
    /// It cannot be read (`unreadable`), or is of another schema version (`schema`):
    /// the `reason` label of `farm_coordinator_results_dropped_total`.
    Unreadable(&'static str),
    /// It is not believed: counted in `farm_coordinator_forged_answers_total`.
    Forged(Forgery),
}

impl Unusable {
    /// Counts it in its metric.
    fn count(self) {
        match self {
            Unusable::Unreadable(reason) => metrics::RESULTS_DROPPED.with_label_values(&[reason]).inc(),
            Unusable::Forged(forgery) => metrics::FORGED_ANSWERS.with_label_values(&[forgery.label()]).inc(),
        }
    }
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unusable::Unreadable(reason) => f.write_str(reason),
            Unusable::Forged(forgery) => write!(f, "forged ({})", forgery.label()),
        }
    }
}

/// Records what `parse` makes of `batch` in one transaction, then acks the lot. The
/// messages it cannot use are first moved to `farm.set-aside`, counted and logged.
async fn record_batch(
    batch: Vec<Delivery>,
    set_aside: &ConfirmedPublisher,
    recorder: &Recorder,
    parse: impl Fn(&Delivery) -> Result<Answer, Unusable>,
) -> Result<(), FarmError> {
    let mut answers = Vec::with_capacity(batch.len());
    let mut unusable = Vec::new();
    for delivery in &batch {
        match parse(delivery) {
            Ok(answer) => answers.push(answer),
            Err(why) => {
                let sender = queue::sender(&delivery.properties).unwrap_or("nobody");
                tracing::warn!(bytes = delivery.data.len(), %why, sender, "setting aside a message that is no answer");
                unusable.push((why, delivery.data.as_slice()));
            }
        }
    }
    if !unusable.is_empty() {
        set_aside
            .publish_batch(SET_ASIDE_QUEUE, unusable.iter().map(|(_, body)| *body))
            .await
            .map_err(QueueError::from)?;
        for (why, _) in &unusable {
            why.count();
        }
    }
    if !answers.is_empty() {
        recorder.record(answers).await?;
    }
    if let Some(last) = batch.last() {
        // Every delivery of the batch is recorded: one ack covers them all.
        last.acker
            .ack(BasicAckOptions { multiple: true })
            .await
            .map_err(BrokerError::from)
            .map_err(QueueError::from)?;
    }
    Ok(())
}

/// A worker's answer, believed only from the worker the broker vouches for, and only
/// if it carries the token of the job (or, for a verdict, the audit) it answers.
fn result_answer(delivery: &Delivery, key: &AnswerKey) -> Result<Answer, Unusable> {
    let unreadable = |_| Unusable::Unreadable("unreadable");
    if farm_proto::schema_of(&delivery.data).map_err(unreadable)? != SCHEMA_VERSION {
        return Err(Unusable::Unreadable("schema"));
    }
    let envelope: ResultEnvelope = serde_json::from_slice(&delivery.data).map_err(unreadable)?;
    vouched_for(&delivery.properties, &envelope.worker_id).map_err(Unusable::Forged)?;
    let answers = match envelope.result {
        MatchResult::Audited { .. } => Answerable::Audit(&envelope.job_id),
        _ => Answerable::Job(&envelope.job_id),
    };
    if !key.holds(answers, &envelope.token) {
        return Err(Unusable::Forged(Forgery::NotHeld));
    }
    Ok(Answer::Result(envelope))
}

/// A dead-lettered job: its id from the body, why and how often from the headers
/// RabbitMQ adds.
fn dead_letter_answer(delivery: &Delivery) -> Result<Answer, Unusable> {
    let envelope: JobEnvelope =
        serde_json::from_slice(&delivery.data).map_err(|_| Unusable::Unreadable("unreadable"))?;
    let headers = delivery.properties.headers().as_ref();
    let reason = headers
        .and_then(|headers| headers.inner().get("x-first-death-reason").cloned())
        .and_then(|value| match value {
            AMQPValue::LongString(text) => Some(text.to_string()),
            AMQPValue::ShortString(text) => Some(text.to_string()),
            _ => None,
        })
        .unwrap_or_else(|| "unknown".to_owned());
    // The dead letter keeps the delivery count it had in farm.jobs.
    let attempts = queue::attempt(&delivery.properties).saturating_sub(1).max(1);
    let why = match reason.as_str() {
        "delivery_limit" => format!("dead-lettered by RabbitMQ after {attempts} tries (its delivery limit)"),
        "rejected" => "dead-lettered by RabbitMQ: a worker rejected it as unreadable".to_owned(),
        other => format!("dead-lettered by RabbitMQ ({other})"),
    };
    Ok(Answer::Failed { job_id: envelope.job.job_id, attempts, reason: why, dead_letter: true })
}

/// Every `settings.sweep_secs` until `stop`: publishes pending audits and those whose
/// lease expired to `farm.audits` (giving up those published too often), announces
/// every quarantine through `farm.control`, and refreshes the workers' figures in
/// metrics ([`crate::audits`]).
pub async fn sweep_audits(
    connection: &Connection,
    ledger: &Ledger,
    settings: &AuditSettings,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), FarmError> {
    let publisher = ConfirmedPublisher::open(connection).await.map_err(QueueError::from)?;
    loop {
        publish_due_audits(&publisher, ledger, settings).await?;
        let workers = ledger.workers().await?;
        for worker in &workers {
            if let Some(reason) = &worker.quarantined {
                let message =
                    ControlMessage::Quarantine { worker_id: worker.worker_id.clone(), reason: reason.clone() };
                let body = serde_json::to_vec(&ControlEnvelope { schema: SCHEMA_VERSION, message })
                    .map_err(QueueError::from)?;
                publisher.publish(CONTROL_EXCHANGE, &body).await.map_err(QueueError::from)?;
            }
        }
        metrics::set_worker_figures(&workers);
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(settings.sweep_secs)) => {}
            _ = stop.wait_for(|stop| *stop) => return Ok(()),
        }
    }
}

/// Publishes the audits due now, each with its token, and gives up those published
/// `max_publications` times already.
async fn publish_due_audits(
    publisher: &ConfirmedPublisher,
    ledger: &Ledger,
    settings: &AuditSettings,
) -> Result<(), FarmError> {
    let due = ledger.audits_to_publish(settings.batch, settings.lease_secs).await?;
    let (spent, due): (Vec<AuditToPublish>, Vec<AuditToPublish>) =
        due.into_iter().partition(|audit| audit.publications >= settings.max_publications);
    if !spent.is_empty() {
        let reason = format!(
            "no verdict came for it in {} publications, {} s apart: it was never placed",
            settings.max_publications, settings.lease_secs
        );
        tracing::warn!(audits = spent.len(), %reason, "giving up audits");
        metrics::AUDITS_GIVEN_UP.inc_by(spent.len() as u64);
        ledger.give_up_audits(spent.into_iter().map(|audit| audit.job_id).collect(), reason).await?;
    }
    if due.is_empty() {
        return Ok(());
    }
    let republished = due.iter().filter(|audit| audit.publications > 0).count();
    let bodies = due
        .iter()
        .map(|audit| {
            let mut envelope: AuditEnvelope = serde_json::from_str(&audit.document)?;
            envelope.token = ledger.answer_key().token(Answerable::Audit(&audit.job_id));
            serde_json::to_vec(&envelope)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(QueueError::from)?;
    publisher.publish_batch(AUDITS_QUEUE, bodies.iter().map(Vec::as_slice)).await.map_err(QueueError::from)?;
    metrics::AUDITS_PUBLISHED.inc_by(due.len() as u64);
    metrics::AUDITS_REPUBLISHED.inc_by(republished as u64);
    ledger.mark_audits_published(due.into_iter().map(|audit| audit.job_id).collect()).await?;
    Ok(())
}
