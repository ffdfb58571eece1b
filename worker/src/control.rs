//! What the coordinator tells every worker through the `farm.control` fanout exchange
//! ([`ControlMessage`]), heard on a queue of the worker's own: a quarantine
//! ([`crate::quarantine`]) and the matches it watches live ([`crate::live`]).

use std::sync::Arc;

use farm_proto::{CONTROL_EXCHANGE, ControlEnvelope, ControlMessage};
use farm_runtime::queue::BrokerError;
use futures_util::StreamExt;
use lapin::Connection;
use lapin::options::{BasicConsumeOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::FieldTable;

use crate::live::LiveBoard;
use crate::quarantine::Quarantine;

/// Who hears the coordinator's messages: the worker's name, its quarantine and its
/// live matches.
pub struct Listeners {
    /// The worker's name: a quarantine addressed to another worker is not its own.
    pub worker_id: String,
    /// Imposed when the coordinator names this worker.
    pub quarantine: Quarantine,
    /// Told which matches are watched.
    pub live: LiveBoard,
}

/// Hears the coordinator until the connection ends.
pub async fn listen(connection: Arc<Connection>, listeners: Listeners) -> Result<(), BrokerError> {
    let channel = connection.create_channel().await?;
    let own = QueueDeclareOptions { exclusive: true, auto_delete: true, ..Default::default() };
    let queue = channel.queue_declare("".into(), own, FieldTable::default()).await?;
    channel
        .queue_bind(
            queue.name().clone(),
            CONTROL_EXCHANGE.into(),
            "".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let no_ack = BasicConsumeOptions { no_ack: true, ..Default::default() };
    let mut consumer = channel.basic_consume(queue.name().clone(), "".into(), no_ack, FieldTable::default()).await?;
    while let Some(delivery) = consumer.next().await {
        let delivery = delivery?;
        match serde_json::from_slice::<ControlEnvelope>(&delivery.data) {
            Ok(ControlEnvelope { message: ControlMessage::Quarantine { worker_id, reason }, .. }) => {
                if worker_id == listeners.worker_id {
                    listeners.quarantine.impose(reason);
                }
            }
            Ok(ControlEnvelope { message: ControlMessage::Watch { matches }, .. }) => listeners.live.watch(&matches),
            Err(error) => tracing::warn!(%error, "ignoring an unreadable control message"),
        }
    }
    Ok(())
}
