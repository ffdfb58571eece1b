//! RabbitMQ through lapin: the queues' topology, connections with backoff, and
//! publishing with confirms. The worker and the coordinator both declare the topology
//! through [`declare_topology`], so both sides always agree on the queues' arguments.
//! The jobs' and results' queue names are the protocol's ([`farm_proto::JOBS_QUEUE`],
//! [`farm_proto::RESULTS_QUEUE`]); the dead letters' is [`DEAD_LETTER_QUEUE`], and what
//! the coordinator cannot use is set aside in [`SET_ASIDE_QUEUE`].

use std::time::Duration;

use farm_proto::{
    AUDITS_QUEUE, BUILD_RESULTS_QUEUE, BUILDS_QUEUE, CONTROL_EXCHANGE, JOBS_QUEUE, LIVE_EXCHANGE, RESULTS_QUEUE,
};
use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, ExchangeKind};
use tokio::sync::watch;

use crate::backoff::Backoff;
use farm_proto::limits;

/// Where jobs that failed too often, or cannot be read, end up.
pub const DEAD_LETTER_QUEUE: &str = "farm.jobs.dead";
/// The exchange results are published through (a direct exchange bound to
/// [`RESULTS_QUEUE`]): a worker's RabbitMQ user may write to it and to nothing else, so
/// its credentials cannot publish a job (deploy/rabbitmq/users.py).
pub const RESULTS_EXCHANGE: &str = "farm.results";

/// Where the coordinator sets aside what came on its queues and cannot be used: a
/// result it cannot read or of another schema version (a worker of another build),
/// kept for an operator instead of dropped. Nothing consumes it, so it keeps the newest
/// [`SET_ASIDE_MAX_MESSAGES`] (and [`SET_ASIDE_MAX_BYTES`]) and drops the oldest: what
/// a flood of garbage on `farm.results` can make the broker hold is bounded.
pub const SET_ASIDE_QUEUE: &str = "farm.set-aside";
/// The most messages [`SET_ASIDE_QUEUE`] keeps.
pub const SET_ASIDE_MAX_MESSAGES: i64 = 10_000;
/// The most bytes of message bodies [`SET_ASIDE_QUEUE`] keeps: 256 MiB.
pub const SET_ASIDE_MAX_BYTES: i64 = 256 * 1024 * 1024;
/// Where an audit job waits that a worker may not take (it played that match): a
/// worker rejects it there, and after [`AUDIT_WAIT_MS`] it is back in
/// [`farm_proto::AUDITS_QUEUE`] for another worker. RabbitMQ's `x-death` header counts
/// its rounds.
pub const AUDITS_WAIT_QUEUE: &str = "farm.audits.wait";
/// How long an audit job waits in [`AUDITS_WAIT_QUEUE`] before another try.
pub const AUDIT_WAIT_MS: i32 = 2000;

/// Persistent delivery mode: messages survive a broker restart.
const PERSISTENT: u8 = 2;
/// How long a publish may wait for the broker's confirm.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(30);

/// A broker operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// The AMQP connection or channel failed.
    #[error("rabbitmq: {0}")]
    Amqp(#[from] lapin::Error),
    /// The broker refused a published message, or could not route it (the queue is missing).
    #[error("rabbitmq refused or could not route a message published to {queue}")]
    Nacked {
        /// The queue.
        queue: &'static str,
    },
    /// The broker did not confirm a message in time.
    #[error("rabbitmq did not confirm a message published to {queue} in time")]
    Unconfirmed {
        /// The queue.
        queue: &'static str,
    },
    /// The broker did not answer a question about a queue in time.
    #[error("rabbitmq did not answer about {queue} in time")]
    Unanswered {
        /// The queue.
        queue: &'static str,
    },
    /// A job lane ended without an error of its own; the session is restarted so that
    /// its delivery is requeued.
    #[error("a job lane failed")]
    TaskFailed,
}

impl BrokerError {
    /// Whether reconnecting and trying again could help: always, the broker's failures
    /// are the infrastructure's, never the message's.
    pub fn is_retryable(&self) -> bool {
        match self {
            BrokerError::Amqp(_)
            | BrokerError::Nacked { .. }
            | BrokerError::Unconfirmed { .. }
            | BrokerError::Unanswered { .. }
            | BrokerError::TaskFailed => true,
        }
    }
}

/// The longest a call to the broker (publish confirm, ack, reject, cancel) may take
/// before it counts as failed: a blocked broker must not hang the worker.
pub const BROKER_CALL: Duration = Duration::from_secs(30);

/// Declares `farm.jobs` (a quorum queue with a delivery limit that dead-letters to
/// [`DEAD_LETTER_QUEUE`]), the dead-letter queue, `farm.results`,
/// [`SET_ASIDE_QUEUE`], `farm.audits` with [`AUDITS_WAIT_QUEUE`], and the exchanges
/// (`farm.results`, `farm.control`, and `farm.live`, transient: live frames are worth
/// nothing after a broker restart). Idempotent.
pub async fn declare_topology(channel: &Channel, delivery_limit: u32) -> Result<(), BrokerError> {
    let durable = QueueDeclareOptions { durable: true, ..Default::default() };
    let mut jobs = quorum();
    jobs.insert("x-delivery-limit".into(), AMQPValue::LongInt(i32::try_from(delivery_limit).unwrap_or(i32::MAX)));
    jobs.insert("x-dead-letter-exchange".into(), AMQPValue::LongString(LongString::from("")));
    jobs.insert("x-dead-letter-routing-key".into(), AMQPValue::LongString(LongString::from(DEAD_LETTER_QUEUE)));
    channel.queue_declare(DEAD_LETTER_QUEUE.into(), durable, quorum()).await?;
    channel.queue_declare(JOBS_QUEUE.into(), durable, jobs).await?;
    channel.queue_declare(RESULTS_QUEUE.into(), durable, quorum()).await?;
    let mut set_aside = quorum();
    set_aside.insert("x-max-length".into(), AMQPValue::LongLongInt(SET_ASIDE_MAX_MESSAGES));
    set_aside.insert("x-max-length-bytes".into(), AMQPValue::LongLongInt(SET_ASIDE_MAX_BYTES));
    set_aside.insert("x-overflow".into(), AMQPValue::LongString(LongString::from("drop-head")));
    channel.queue_declare(SET_ASIDE_QUEUE.into(), durable, set_aside).await?;
    // Audits: a rejected one waits, then comes back (each queue dead-letters to the other).
    let mut audits = quorum();
    audits.insert("x-max-length".into(), AMQPValue::LongLongInt(limits::AUDITS_MAX_MESSAGES));
    audits.insert("x-overflow".into(), AMQPValue::LongString(LongString::from("reject-publish")));
    audits.insert("x-dead-letter-exchange".into(), AMQPValue::LongString(LongString::from("")));
    audits.insert("x-dead-letter-routing-key".into(), AMQPValue::LongString(LongString::from(AUDITS_WAIT_QUEUE)));
    channel.queue_declare(AUDITS_QUEUE.into(), durable, audits).await?;
    let mut waiting = FieldTable::default();
    waiting.insert("x-message-ttl".into(), AMQPValue::LongInt(AUDIT_WAIT_MS));
    waiting.insert("x-dead-letter-exchange".into(), AMQPValue::LongString(LongString::from("")));
    waiting.insert("x-dead-letter-routing-key".into(), AMQPValue::LongString(LongString::from(AUDITS_QUEUE)));
    channel.queue_declare(AUDITS_WAIT_QUEUE.into(), durable, waiting).await?;
    // Builds: a build job whose worker was lost twice is dead-lettered to the build
    // results, where the coordinator reads it as a build that never finished.
    let mut builds = quorum();
    builds.insert("x-delivery-limit".into(), AMQPValue::LongInt(limits::BUILD_DELIVERY_LIMIT as i32));
    builds.insert("x-dead-letter-exchange".into(), AMQPValue::LongString(LongString::from("")));
    builds.insert("x-dead-letter-routing-key".into(), AMQPValue::LongString(LongString::from(BUILD_RESULTS_QUEUE)));
    channel.queue_declare(BUILDS_QUEUE.into(), durable, builds).await?;
    channel.queue_declare(BUILD_RESULTS_QUEUE.into(), durable, quorum()).await?;
    let exchange = ExchangeDeclareOptions { durable: true, ..Default::default() };
    channel.exchange_declare(RESULTS_EXCHANGE.into(), ExchangeKind::Direct, exchange, FieldTable::default()).await?;
    channel.exchange_declare(CONTROL_EXCHANGE.into(), ExchangeKind::Fanout, exchange, FieldTable::default()).await?;
    channel
        .exchange_declare(
            LIVE_EXCHANGE.into(),
            ExchangeKind::Direct,
            ExchangeDeclareOptions::default(),
            FieldTable::default(),
        )
        .await?;
    channel
        .queue_bind(
            RESULTS_QUEUE.into(),
            RESULTS_EXCHANGE.into(),
            RESULTS_QUEUE.into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
    channel
        .queue_bind(
            BUILD_RESULTS_QUEUE.into(),
            RESULTS_EXCHANGE.into(),
            BUILD_RESULTS_QUEUE.into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
    Ok(())
}

/// [`declare_topology`] where the user may (the coordinator's, an all-powerful one);
/// for a user that may not configure anything (a worker's, least privilege), a check
/// that the queue it consumes and the exchange it publishes to exist, which needs no
/// permission. Missing ones are an error to retry: the coordinator declares them.
pub async fn declare_or_check_topology(connection: &Connection, delivery_limit: u32) -> Result<(), BrokerError> {
    let channel = connection.create_channel().await?;
    match declare_topology(&channel, delivery_limit).await {
        Err(BrokerError::Amqp(error)) if is_access_refused(&error) => {
            // The refusal closed that channel.
            let channel = connection.create_channel().await?;
            let passive = QueueDeclareOptions { passive: true, ..Default::default() };
            channel.queue_declare(JOBS_QUEUE.into(), passive, FieldTable::default()).await?;
            channel.queue_declare(AUDITS_QUEUE.into(), passive, FieldTable::default()).await?;
            channel.queue_declare(BUILDS_QUEUE.into(), passive, FieldTable::default()).await?;
            let passive = ExchangeDeclareOptions { passive: true, ..Default::default() };
            channel
                .exchange_declare(RESULTS_EXCHANGE.into(), ExchangeKind::Direct, passive, FieldTable::default())
                .await?;
            channel
                .exchange_declare(CONTROL_EXCHANGE.into(), ExchangeKind::Fanout, passive, FieldTable::default())
                .await?;
            channel
                .exchange_declare(LIVE_EXCHANGE.into(), ExchangeKind::Direct, passive, FieldTable::default())
                .await?;
            let _ = tokio::time::timeout(BROKER_CALL, channel.close(200, "topology checked".into())).await;
            Ok(())
        }
        Err(error) => Err(error),
        Ok(()) => {
            let _ = tokio::time::timeout(BROKER_CALL, channel.close(200, "topology declared".into())).await;
            Ok(())
        }
    }
}

/// Whether the broker refused an operation for want of permission (AMQP 403).
pub fn is_access_refused(error: &lapin::Error) -> bool {
    matches!(error.kind(), lapin::ErrorKind::ProtocolError(amqp) if amqp.get_id() == 403)
}

/// The exchange and routing key that reach `queue`: [`RESULTS_EXCHANGE`] for the
/// results, the default exchange for every other queue.
fn route(queue: &'static str) -> (&'static str, &'static str) {
    match queue {
        RESULTS_QUEUE => (RESULTS_EXCHANGE, RESULTS_QUEUE),
        BUILD_RESULTS_QUEUE => (RESULTS_EXCHANGE, BUILD_RESULTS_QUEUE),
        // A fanout exchange: every worker's own queue bound there gets the message.
        CONTROL_EXCHANGE => (CONTROL_EXCHANGE, ""),
        queue => ("", queue),
    }
}

fn quorum() -> FieldTable {
    let mut arguments = FieldTable::default();
    arguments.insert("x-queue-type".into(), AMQPValue::LongString(LongString::from("quorum")));
    arguments
}

/// Connects to `url`, retrying with the default [`Backoff`] (0.2 s doubling up to
/// 10 s) until it succeeds or `stop` turns true. `None` means it was told to stop.
pub async fn connect_with_backoff(url: &str, stop: &mut watch::Receiver<bool>) -> Option<Connection> {
    let mut backoff = Backoff::default();
    loop {
        let delay = match Connection::connect(url, ConnectionProperties::default()).await {
            Ok(connection) => return Some(connection),
            Err(error) => {
                let delay = backoff.next_delay();
                tracing::warn!(%error, retry_in = ?delay, "cannot reach RabbitMQ");
                delay
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.wait_for(|stop| *stop) => return None,
        }
    }
}

/// The user `url` signs in to the broker as (`amqp://USER:PASSWORD@HOST/VHOST`), as
/// RabbitMQ knows it; `None` for a URL that is no AMQP URL.
pub fn broker_user(url: &str) -> Option<String> {
    url.parse::<lapin::uri::AMQPUri>().ok().map(|uri| uri.authority.userinfo.username)
}

/// Who published a delivery, as the broker vouches for it: its `user_id`, which
/// RabbitMQ accepts only when it names the user the publisher signed in as. `None`
/// when the publisher named nobody, which vouches for nothing.
pub fn sender(properties: &BasicProperties) -> Option<&str> {
    properties.user_id().as_ref().map(ShortString::as_str)
}

/// A channel in confirm mode: every publish waits for the broker's ack.
pub struct ConfirmedPublisher {
    channel: Channel,
    /// The `user_id` its messages carry: RabbitMQ refuses a message whose `user_id` is
    /// not the user its connection signed in as, so a reader may believe it.
    user_id: Option<ShortString>,
}

impl ConfirmedPublisher {
    /// Opens a confirm-mode channel on `connection`; its messages name no sender.
    pub async fn open(connection: &Connection) -> Result<Self, BrokerError> {
        let channel = connection.create_channel().await?;
        channel.confirm_select(ConfirmSelectOptions::default()).await?;
        Ok(ConfirmedPublisher { channel, user_id: None })
    }

    /// Opens a confirm-mode channel on `connection`, signed in as `user`: every
    /// message carries `user` as its `user_id`, which the broker vouches for.
    pub async fn open_as(connection: &Connection, user: &str) -> Result<Self, BrokerError> {
        let mut publisher = Self::open(connection).await?;
        publisher.user_id = Some(ShortString::from(user));
        Ok(publisher)
    }

    /// [`ready`] on this publisher's channel.
    pub async fn ready(&self, queue: &'static str) -> Result<u64, BrokerError> {
        ready(&self.channel, queue).await
    }

    /// Publishes a persistent JSON message to `queue` (through the exchange the topology
    /// gives it) and waits (at most 30 s) for the broker to take responsibility for it. The message is mandatory: one that no
    /// queue takes comes back and counts as refused, instead of vanishing.
    pub async fn publish(&self, queue: &'static str, body: &[u8]) -> Result<(), BrokerError> {
        self.publish_batch(queue, [body]).await
    }

    /// Publishes every message of `bodies` as [`ConfirmedPublisher::publish`] does, but
    /// waits for their confirms together (at most 30 s for the lot): one round trip
    /// per batch instead of one per message. `Ok` means the broker took them all.
    pub async fn publish_batch<'a>(
        &self,
        queue: &'static str,
        bodies: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<(), BrokerError> {
        let mut properties = BasicProperties::default()
            .with_delivery_mode(PERSISTENT)
            .with_content_type(ShortString::from("application/json"));
        if let Some(user) = &self.user_id {
            properties = properties.with_user_id(user.clone());
        }
        let options = BasicPublishOptions { mandatory: true, ..Default::default() };
        let (exchange, routing_key) = route(queue);
        let confirmations = tokio::time::timeout(CONFIRM_TIMEOUT, async {
            let mut pending = Vec::new();
            for body in bodies {
                pending.push(
                    self.channel
                        .basic_publish(exchange.into(), routing_key.into(), options, body, properties.clone())
                        .await?,
                );
            }
            let mut confirmations = Vec::with_capacity(pending.len());
            for confirm in pending {
                confirmations.push(confirm.await?);
            }
            Ok::<_, lapin::Error>(confirmations)
        })
        .await
        .map_err(|_| BrokerError::Unconfirmed { queue })??;
        for confirmed in confirmations {
            match confirmed {
                Confirmation::Ack(None) | Confirmation::NotRequested => {}
                Confirmation::Ack(Some(_)) | Confirmation::Nack(_) => return Err(BrokerError::Nacked { queue }),
            }
        }
        Ok(())
    }
}

/// How many messages wait in `queue` for a consumer (delivered ones not counted), as
/// the broker answers a passive declare on `channel` within [`BROKER_CALL`].
pub async fn ready(channel: &Channel, queue: &'static str) -> Result<u64, BrokerError> {
    let passive = QueueDeclareOptions { passive: true, ..Default::default() };
    let declared =
        tokio::time::timeout(BROKER_CALL, channel.queue_declare(queue.into(), passive, FieldTable::default()))
            .await
            .map_err(|_| BrokerError::Unanswered { queue })??;
    Ok(u64::from(declared.message_count()))
}

/// How many times `properties`' message has been rejected from `queue` and come back
/// (RabbitMQ's `x-death` count for it).
pub fn rounds_through(properties: &BasicProperties, queue: &str) -> u64 {
    let Some(headers) = properties.headers() else { return 0 };
    let Some(AMQPValue::FieldArray(deaths)) = headers.inner().get("x-death") else { return 0 };
    deaths
        .as_slice()
        .iter()
        .filter_map(|death| match death {
            AMQPValue::FieldTable(death) => Some(death.inner()),
            _ => None,
        })
        .filter(|death| matches!(death.get("queue"), Some(AMQPValue::LongString(name)) if name.to_string() == queue))
        .filter_map(|death| match death.get("count") {
            Some(AMQPValue::LongLongInt(count)) => u64::try_from(*count).ok(),
            Some(AMQPValue::LongInt(count)) => u64::try_from(*count).ok(),
            _ => None,
        })
        .sum()
}

/// Which delivery of a message this is, from 1: quorum queues count redeliveries in
/// the `x-delivery-count` header.
pub fn attempt(properties: &BasicProperties) -> u32 {
    let count = properties
        .headers()
        .as_ref()
        .and_then(|headers| headers.inner().get("x-delivery-count").cloned())
        .and_then(|value| match value {
            AMQPValue::LongLongInt(n) => u32::try_from(n).ok(),
            AMQPValue::LongInt(n) => u32::try_from(n).ok(),
            AMQPValue::LongUInt(n) => Some(n),
            AMQPValue::ShortInt(n) => u32::try_from(n).ok(),
            AMQPValue::ShortUInt(n) => Some(u32::from(n)),
            _ => None,
        })
        .unwrap_or(0);
    count.saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_count_from_one_and_follow_the_delivery_count() {
        assert_eq!(attempt(&BasicProperties::default()), 1);
        let mut headers = FieldTable::default();
        headers.insert("x-delivery-count".into(), AMQPValue::LongLongInt(2));
        assert_eq!(attempt(&BasicProperties::default().with_headers(headers)), 3);
    }
}
