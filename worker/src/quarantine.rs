//! Quarantine: the coordinator, finding a worker's results untrustworthy (its audits
//! mismatch, or its sandbox keeps failing its matches), tells every worker
//! through the `farm.control` fanout exchange; the one named stops taking match and
//! audit jobs, finishes what it holds, and says why on `/healthz` and in
//! `farm_worker_quarantined`. It stays so until it is restarted.

use std::sync::Arc;

use farm_proto::{CONTROL_EXCHANGE, ControlEnvelope, ControlMessage};
use farm_runtime::queue::BrokerError;
use futures_util::StreamExt;
use lapin::Connection;
use lapin::options::{BasicConsumeOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use tokio::sync::watch;

use crate::metrics;

/// Whether this worker is quarantined, and why; shared by everything that takes jobs.
#[derive(Debug, Clone)]
pub struct Quarantine(Arc<watch::Sender<Option<String>>>);

impl Default for Quarantine {
    fn default() -> Self {
        Quarantine(Arc::new(watch::channel(None).0))
    }
}

impl Quarantine {
    /// Why it is quarantined, if it is.
    pub fn reason(&self) -> Option<String> {
        self.0.borrow().clone()
    }

    /// Changes whenever it is quarantined.
    pub fn subscribe(&self) -> watch::Receiver<Option<String>> {
        self.0.subscribe()
    }

    /// Quarantines the worker for `reason` (the first reason stays).
    pub fn impose(&self, reason: String) {
        let imposed = self.0.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(reason.clone());
            true
        });
        if imposed {
            tracing::error!(%reason, "quarantined by the coordinator: taking no more jobs");
            metrics::QUARANTINED.with_label_values(&[&reason]).set(1);
        }
    }
}

/// Hears the coordinator on a queue of its own bound to `farm.control` until the
/// connection ends, imposing a quarantine addressed to `worker_id`.
pub async fn listen(connection: Arc<Connection>, worker_id: String, quarantine: Quarantine) -> Result<(), BrokerError> {
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
            Ok(ControlEnvelope { message: ControlMessage::Quarantine { worker_id: named, reason }, .. })
                if named == worker_id =>
            {
                quarantine.impose(reason);
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "ignoring an unreadable control message"),
        }
    }
    Ok(())
}
