//! `farm-s3`: the farm's S3 server. It serves a directory as s3s-fs does (each
//! sub-directory a bucket) and accepts one key per role, from the environment:
//!
//! | variables | role |
//! |---|---|
//! | `S3_ADMIN_ACCESS_KEY`, `S3_ADMIN_SECRET_KEY` | `admin`: everything |
//! | `S3_COORDINATOR_ACCESS_KEY`, `S3_COORDINATOR_SECRET_KEY` | `coordinator`: reads and lists the bucket, writes `sources/` |
//! | `S3_WORKER_ACCESS_KEY`, `S3_WORKER_SECRET_KEY` | `worker`: writes `tournaments/` and `builds/`, reads `tournaments/` and `sources/` |
//!
//! At least one pair must be set; a secret holding a placeholder word is refused. Every
//! request must be signed (AWS signature v4 or v2) with one of the keys, and its key's
//! role must allow it (see `policy`); anything else is refused with AccessDenied (403).

mod keys;
mod policy;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, ensure};
use clap::Parser;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnectionBuilder;
use hyper_util::server::graceful::GracefulShutdown;
use s3s::service::S3ServiceBuilder;
use s3s_fs::FileSystem;
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};

use crate::keys::Keys;
use crate::policy::Policy;

/// How long requests in flight may take to finish once the server is told to stop.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The farm's S3 server. Keys come from the environment only: S3_ADMIN_ACCESS_KEY and
/// S3_ADMIN_SECRET_KEY, S3_COORDINATOR_..., S3_WORKER_... (at least one pair).
#[derive(Debug, Parser)]
#[command(version)]
struct Options {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The port to listen on.
    #[arg(long, default_value_t = 9000)]
    port: u16,
    /// The farm's bucket, the only one the coordinator's and workers' keys reach (made
    /// at start if missing).
    #[arg(long, default_value = "matchfarm")]
    bucket: String,
    /// The directory served: each sub-directory is a bucket.
    root: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let options = Options::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let keys = Keys::from_env(|name| std::env::var(name))?;
    ensure!(s3s::path::check_bucket_name(&options.bucket), "--bucket {:?} is not a bucket name", options.bucket);
    let bucket_dir = options.root.join(&options.bucket);
    std::fs::create_dir_all(&bucket_dir).with_context(|| format!("making the bucket {}", bucket_dir.display()))?;
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(serve(options, keys))
}

/// Serves until SIGTERM or SIGINT, then lets requests in flight finish (for at most
/// [`STOP_GRACE`]).
async fn serve(options: Options, keys: Keys) -> anyhow::Result<()> {
    let storage = FileSystem::new(&options.root)
        .map_err(|error| anyhow::anyhow!("serving {}: {error:?}", options.root.display()))?;
    let roles = keys.roles();
    let service = {
        let mut builder = S3ServiceBuilder::new(storage);
        builder.set_auth(keys.clone());
        builder.set_access(Policy::new(keys, options.bucket.clone()));
        builder.build()
    };
    let listener = TcpListener::bind((options.host.as_str(), options.port))
        .await
        .with_context(|| format!("listening on {}:{}", options.host, options.port))?;
    tracing::info!(
        address = %listener.local_addr()?, root = %options.root.display(), bucket = options.bucket, ?roles,
        "farm-s3 serving"
    );

    let connections = ConnectionBuilder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    loop {
        let socket = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                Err(error) => {
                    tracing::warn!(%error, "accepting a connection");
                    continue;
                }
            },
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
        };
        let connection = connections.serve_connection(TokioIo::new(socket), service.clone()).into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended");
            }
        });
    }
    tracing::info!("stopping");
    if tokio::time::timeout(STOP_GRACE, graceful.shutdown()).await.is_err() {
        tracing::warn!("requests still in flight after {} s: stopping anyway", STOP_GRACE.as_secs());
    }
    Ok(())
}
