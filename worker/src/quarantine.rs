//! Quarantine: the coordinator, finding a worker's results untrustworthy (its audits
//! mismatch, or its sandbox keeps failing its matches), tells every worker
//! through the `farm.control` fanout exchange (heard in `control.rs`); the one named stops
//! taking match and audit jobs, finishes what it holds, and says why on `/healthz` and
//! in `farm_worker_quarantined`. It stays so until it is restarted.

use std::sync::Arc;

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
