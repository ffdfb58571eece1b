//! Live lines through RabbitMQ: the coordinator's own live queue, bound to
//! [`LIVE_EXCHANGE`] for each watched match, and the watches told to every worker on
//! [`CONTROL_EXCHANGE`]. A line is believed only from the broker user it names
//! (`user_id`), with the job's token (which only the worker handed the job holds), and
//! from the one worker relaying that match ([`Offered::Refused`]).

use std::sync::Arc;
use std::time::Duration;

use farm_proto::{
    ATTEMPT_HEADER, CONTROL_EXCHANGE, ControlEnvelope, ControlMessage, END_HEADER, LINE_HEADER, LIVE_EXCHANGE,
    MESSAGE_LINES, SCHEMA_VERSION, TOKEN_HEADER, WatchedMatch, limits,
};
use farm_runtime::queue::{self, BrokerError};
use farm_runtime::settle;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use lapin::message::Delivery;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Connection};
use tokio::sync::watch;

use super::{Live, Watcher, keep_watching};
use crate::ledger::Ledger;
use crate::metrics;
use crate::vouch::{AnswerKey, Answerable};

/// Messages the coordinator's live queue hands over before they are acked: the rest
/// wait in the queue, whose length bounds them.
const PREFETCH: u16 = 256;
/// How long a failed relay waits before it opens its channel again.
const REOPEN_AFTER: Duration = Duration::from_secs(1);

/// Relays the watched matches' lines from the broker into `live`, and keeps the workers
/// told which matches are watched (the `ledger` says which are answered), until `stop`.
/// A failure of its own channel opens it again: live viewing never ends the other work
/// on the connection; a lost connection ends it, for the session to reconnect.
pub async fn relay_from_broker(
    connection: &Connection,
    live: &Live,
    key: &AnswerKey,
    ledger: &Ledger,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), BrokerError> {
    let relay = Relay { connection, live, key, ledger };
    loop {
        match relay.on_a_channel(stop).await {
            Err(error) if connection.status().connected() => {
                tracing::warn!(%error, "the live relay failed; opening it again");
                if !settle::wait_unless_stopped(REOPEN_AFTER, stop.clone()).await {
                    return Ok(());
                }
            }
            ended => return ended,
        }
    }
}

/// What a relay works with.
#[derive(Clone, Copy)]
struct Relay<'a> {
    connection: &'a Connection,
    live: &'a Live,
    key: &'a AnswerKey,
    ledger: &'a Ledger,
}

impl Relay<'_> {
    /// Relays on a channel of its own until `stop`, or until the channel fails.
    async fn on_a_channel(&self, stop: &mut watch::Receiver<bool>) -> Result<(), BrokerError> {
        let Relay { connection, live, key, ledger } = *self;
        let channel = connection.create_channel().await?;
        channel.basic_qos(PREFETCH, BasicQosOptions::default()).await?;
        // A queue of this coordinator's own, gone with its connection; a full one drops
        // its oldest lines (the viewers are told of the gap) rather than hold the broker.
        let mut suffix = [0u8; 8];
        // Two coordinators on one broker (an old one not yet gone) never share a name.
        getrandom::fill(&mut suffix).map_err(|_| BrokerError::TaskFailed)?;
        let name = format!("{LIVE_EXCHANGE}.{}", hex::encode(suffix));
        let mut arguments = FieldTable::default();
        arguments.insert("x-max-length".into(), AMQPValue::LongLongInt(limits::LIVE_QUEUE_MESSAGES));
        let own = QueueDeclareOptions { exclusive: true, auto_delete: true, ..Default::default() };
        channel.queue_declare(name.as_str().into(), own, arguments).await?;
        let consume = BasicConsumeOptions::default();
        let mut consumer =
            channel.basic_consume(name.as_str().into(), "".into(), consume, FieldTable::default()).await?;
        let mut watcher = Bindings { channel: channel.clone(), queue: name };
        let mut watch_stop = stop.clone();
        let receiving = async {
            loop {
                let delivery = tokio::select! {
                    delivery = consumer.next() => delivery,
                    _ = stop.wait_for(|stop| *stop) => return Ok(()),
                };
                let delivery = delivery.ok_or(BrokerError::TaskFailed)??;
                receive(live, key, &delivery);
                delivery.ack(BasicAckOptions::default()).await?;
            }
        };
        tokio::try_join!(keep_watching(live, &mut watcher, ledger, &mut watch_stop), receiving).map(drop)
    }
}

/// Takes one live message, if it is believed.
fn receive(live: &Live, key: &AnswerKey, delivery: &Delivery) {
    let refuse = |reason: &str| metrics::LIVE_FRAMES_REFUSED.with_label_values(&[reason]).inc();
    let job_id = delivery.routing_key.as_str();
    let Some(sender) = queue::sender(&delivery.properties) else { return refuse("unsigned") };
    let headers = delivery.properties.headers().as_ref();
    let header = |name: &str| headers.and_then(|headers| headers.inner().get(name));
    let (Some(index), Some(attempt)) = (header(LINE_HEADER).and_then(number), header(ATTEMPT_HEADER).and_then(number))
    else {
        return refuse("malformed");
    };
    let token = match header(TOKEN_HEADER) {
        Some(AMQPValue::LongString(token)) => String::from_utf8_lossy(token.as_bytes()).into_owned(),
        _ => String::new(),
    };
    if !key.holds(Answerable::Job(job_id), &token) {
        return refuse("token");
    }
    let end = matches!(header(END_HEADER), Some(AMQPValue::Boolean(true)));
    // The lines of one message, joined by newlines; none in the end's.
    let Ok(text) = std::str::from_utf8(&delivery.data) else { return refuse("malformed") };
    let lines: Vec<Arc<str>> =
        if text.is_empty() { Vec::new() } else { text.split('\n').take(MESSAGE_LINES + 1).map(Arc::from).collect() };
    if (lines.is_empty() && !end) || lines.len() > MESSAGE_LINES {
        return refuse("malformed");
    }
    let attempt = u32::try_from(attempt).unwrap_or(u32::MAX);
    match live.offer_lines(job_id, attempt, index, lines, end, Some(sender)) {
        Ok(kept) => metrics::LIVE_FRAMES_RECEIVED.inc_by(kept),
        Err(reason) => refuse(reason),
    }
}

/// A header's value as a number, whichever integer type carried it.
fn number(value: &AMQPValue) -> Option<u64> {
    match *value {
        AMQPValue::LongLongInt(value) => u64::try_from(value).ok(),
        AMQPValue::LongInt(value) => u64::try_from(value).ok(),
        AMQPValue::LongUInt(value) => Some(u64::from(value)),
        AMQPValue::ShortInt(value) => u64::try_from(value).ok(),
        AMQPValue::ShortUInt(value) => Some(u64::from(value)),
        _ => None,
    }
}

/// The coordinator's live queue bound for each watched match, and the watches
/// published to every worker.
struct Bindings {
    channel: Channel,
    queue: String,
}

impl Watcher for Bindings {
    fn start(&mut self, job_id: &str) -> BoxFuture<'_, Result<(), BrokerError>> {
        let job_id = job_id.to_owned();
        Box::pin(async move {
            let (queue, exchange) = (self.queue.as_str().into(), LIVE_EXCHANGE.into());
            self.channel
                .queue_bind(queue, exchange, job_id.as_str().into(), QueueBindOptions::default(), FieldTable::default())
                .await?;
            Ok(())
        })
    }

    fn stop(&mut self, job_id: &str) -> BoxFuture<'_, Result<(), BrokerError>> {
        let job_id = job_id.to_owned();
        Box::pin(async move {
            let (queue, exchange) = (self.queue.as_str().into(), LIVE_EXCHANGE.into());
            self.channel.queue_unbind(queue, exchange, job_id.as_str().into(), FieldTable::default()).await?;
            Ok(())
        })
    }

    fn watch(&mut self, matches: Vec<WatchedMatch>) -> BoxFuture<'_, Result<(), BrokerError>> {
        Box::pin(async move {
            let envelope = ControlEnvelope { schema: SCHEMA_VERSION, message: ControlMessage::Watch { matches } };
            let body = serde_json::to_vec(&envelope).expect("a control message encodes");
            self.channel
                .basic_publish(
                    CONTROL_EXCHANGE.into(),
                    ShortString::from(""),
                    BasicPublishOptions::default(),
                    &body,
                    BasicProperties::default(),
                )
                .await?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use lapin::types::LongString;

    use super::*;

    #[test]
    fn a_header_number_is_read_whichever_integer_carries_it() {
        assert_eq!(number(&AMQPValue::LongLongInt(7)), Some(7));
        assert_eq!(number(&AMQPValue::LongInt(7)), Some(7));
        assert_eq!(number(&AMQPValue::LongLongInt(-1)), None);
        assert_eq!(number(&AMQPValue::LongString(LongString::from("7"))), None);
    }
}
