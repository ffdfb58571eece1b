//! `farm-coordinator view` and `run --web`: the HTTP API and the web pages over the
//! data directory of a `run` (its ledger and its local object store), read-only: no
//! broker, no publisher, and submissions are refused ([`Submissions::Closed`]). While a
//! `run` writes the same directory, the pages show its progress live (the ledger is
//! SQLite in WAL mode: readers never wait for the writer), and its matches as they are
//! played (`run --web` hands the run this view's [`Live`] hub).

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use farm_runtime::storage::{Storage, StorageConfig, StorageError};
use farm_worker::SandboxKind;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::accounts::Quotas;
use crate::api::{self, ApiState, Submissions};
use crate::director::Director;
use crate::embedded;
use crate::ledger::{Ledger, LedgerError};
use crate::live::{Live, LiveSettings};
use crate::observations::{ObservationLimits, Observer};
use crate::tournament::TournamentLimits;
use crate::uploads::{UploadLimits, Uploads};
use crate::webhooks::WebhookSettings;

/// What stops a view.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The address cannot be listened on.
    #[error("listening on {address}: {source}")]
    Listen {
        /// The address.
        address: String,
        /// Why.
        source: std::io::Error,
    },
    /// The ledger cannot be opened.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The object store cannot be opened.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The server failed.
    #[error("serving: {0}")]
    Serve(std::io::Error),
}

/// A read-only server, bound and ready to serve.
pub struct View {
    listener: TcpListener,
    state: ApiState,
}

impl View {
    /// Opens `data_dir`'s ledger (created empty if missing, for a run about to start)
    /// and objects, and listens on `address` (port 0: any free port).
    pub async fn bind(data_dir: &Path, address: &str) -> Result<Self, ViewError> {
        let ledger = Ledger::open(&embedded::ledger_path(data_dir))?;
        let storage = Storage::open(&StorageConfig::Local { path: embedded::objects_path(data_dir) })?;
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| ViewError::Listen { address: address.to_owned(), source })?;
        let wake_publisher = Arc::new(Notify::new());
        // Never run: its writes (stop, bots) are refused with every other write.
        let director = Director::new(ledger.clone(), SandboxKind::Local, Arc::clone(&wake_publisher));
        let state = ApiState {
            ledger,
            storage,
            submissions: Submissions::Closed,
            // Nothing publishes: nobody listens.
            wake_publisher,
            director,
            tournament_limits: TournamentLimits::default(),
            observer: Observer::new(ObservationLimits::default()),
            uploads: Uploads::new(UploadLimits::default()),
            quotas: Quotas::default(),
            webhooks: WebhookSettings::default(),
            wake_builds: Arc::new(Notify::new()),
            live: Live::new(LiveSettings::default()),
            views: crate::api::Views::default(),
        };
        Ok(View { listener, state })
    }

    /// The hub its live pages read: a run played beside it relays its matches there
    /// ([`embedded::RunOptions::live`]).
    pub fn live(&self) -> Live {
        self.state.live.clone()
    }

    /// The address it listens on (the port chosen, when asked for port 0).
    pub fn address(&self) -> Result<SocketAddr, ViewError> {
        self.listener.local_addr().map_err(ViewError::Serve)
    }

    /// Serves until `stop` completes, then lets requests in flight finish.
    pub async fn serve(self, stop: impl Future<Output = ()> + Send + 'static) -> Result<(), ViewError> {
        axum::serve(self.listener, api::app(self.state)).with_graceful_shutdown(stop).await.map_err(ViewError::Serve)
    }
}
