//! The heartbeat of a worker's containers and the removal of dead workers' ones: each
//! instance touches a file in its run root every period and labels its containers with
//! that root and period, so another instance on the same engine can tell a dead owner
//! (its heartbeat stopped) from a live one and remove what it left.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bollard::Docker;
use bollard::query_parameters::ListContainersOptionsBuilder;
use tokio::time::Duration;

use super::{DockerError, ENGINE_LABEL, INSTANCE_LABEL, Pool, remove};
use crate::metrics;

/// Label carrying the owner's directory under the run directory, where its heartbeat
/// file is.
pub(super) const RUN_ROOT_LABEL: &str = "matchfarm.run-root";
/// Label carrying the owner's heartbeat period in seconds.
pub(super) const HEARTBEAT_LABEL: &str = "matchfarm.heartbeat-secs";
/// The file an instance touches every heartbeat period, in its run root.
const HEARTBEAT_FILE: &str = "heartbeat";
/// Heartbeat periods without a beat after which an instance is taken for dead...
const STALE_BEATS: u32 = 3;
/// ...but never sooner than this: a live worker on a machine loaded enough to miss a
/// few short beats must not lose its containers.
const STALE_AT_LEAST: Duration = Duration::from_secs(15);
/// The longest heartbeat period a worker may have ([`DockerSettings::heartbeat_secs`]).
pub(super) const HEARTBEAT_SECS_MAX: u64 = 300;

/// Touches this instance's heartbeat file.
pub(super) fn beat(run_root: &Path) -> std::io::Result<()> {
    std::fs::write(run_root.join(HEARTBEAT_FILE), b"")
}

/// Finds and removes the containers of dead instances on this engine.
pub(super) struct Reaper {
    pub(super) docker: Docker,
    pub(super) engine: String,
    pub(super) instance: String,
    pub(super) run_root: PathBuf,
    pub(super) run_dir: PathBuf,
    pub(super) period: Duration,
}

impl Reaper {
    /// Removes the containers of every other instance on this engine that is dead
    /// ([`Reaper::is_dead`]): its run root is in this worker's run directory (so its
    /// heartbeat is visible here) and its heartbeat has stopped. An
    /// instance whose heartbeat cannot be seen (another run directory: another host's
    /// view of the engine) is left alone. Returns how many containers were removed.
    pub(super) async fn reap_dead(&self) -> Result<usize, DockerError> {
        let filters = HashMap::from([("label", vec![INSTANCE_LABEL.to_owned()])]);
        let options = ListContainersOptionsBuilder::new().all(true).filters(&filters).build();
        let mut verdicts: HashMap<String, bool> = HashMap::new();
        let mut dead_roots = Vec::new();
        let mut removed = 0;
        for container in self.docker.list_containers(Some(options)).await? {
            let (Some(id), Some(labels)) = (container.id, container.labels) else { continue };
            let Some(instance) = labels.get(INSTANCE_LABEL) else { continue };
            // Another engine's container (listed through a Swarm or a proxy) is its
            // engine's workers' to judge.
            let other_engine = labels.get(ENGINE_LABEL).is_some_and(|engine| *engine != self.engine);
            if *instance == self.instance || other_engine {
                continue;
            }
            let dead = *verdicts.entry(instance.clone()).or_insert_with(|| {
                let root = labels.get(RUN_ROOT_LABEL).map(PathBuf::from);
                let period = labels.get(HEARTBEAT_LABEL).and_then(|secs| secs.parse().ok()).map(Duration::from_secs);
                let dead = root.as_deref().zip(period).is_some_and(|(root, period)| self.is_dead(root, period));
                if dead && let Some(root) = root {
                    dead_roots.push(root);
                }
                dead
            });
            if dead {
                tracing::info!(container = %id, %instance, "removing a container of a worker whose heartbeat stopped");
                remove(&self.docker, &id).await;
                removed += 1;
            }
        }
        for root in dead_roots {
            let _ = std::fs::remove_dir_all(root);
        }
        self.sweep_dead_roots();
        metrics::CONTAINERS_REAPED.with_label_values(&["dead_instance"]).inc_by(removed as u64);
        Ok(removed)
    }

    /// Whether the instance whose run root is `root`, beating every `period`, is dead:
    /// its root is in this worker's run directory, and it is gone (its owner removes it
    /// when it stops), or its heartbeat (or, before the first beat, the root itself) is
    /// older than [`STALE_BEATS`] periods and [`STALE_AT_LEAST`]. The run directory is the same path for the
    /// worker and the engine, so what this worker sees of it is what the engine sees.
    fn is_dead(&self, root: &Path, period: Duration) -> bool {
        if root.parent() != Some(self.run_dir.as_path()) || root == self.run_root {
            return false;
        }
        let stale = |path: &Path| {
            std::fs::metadata(path)
                .and_then(|metadata| metadata.modified())
                .map(|beaten| beaten.elapsed().is_ok_and(|age| age > (period * STALE_BEATS).max(STALE_AT_LEAST)))
        };
        match (stale(root), stale(&root.join(HEARTBEAT_FILE))) {
            (Err(_), _) => true,
            (Ok(_), Ok(heartbeat_stale)) => heartbeat_stale,
            (Ok(root_stale), Err(_)) => root_stale,
        }
    }

    /// Removes the run roots of dead instances that have no container left: those in
    /// the run directory with a stale heartbeat file (a run root without one is an
    /// earlier version's, left alone). A root's own period is not known here (its
    /// containers carry it), so it is taken for dead only past the longest period
    /// there can be: a root without containers costs disk, not a live worker.
    fn sweep_dead_roots(&self) {
        let Ok(entries) = std::fs::read_dir(&self.run_dir) else { return };
        for entry in entries.flatten() {
            let root = entry.path();
            if root.join(HEARTBEAT_FILE).exists() && self.is_dead(&root, Duration::from_secs(HEARTBEAT_SECS_MAX)) {
                let _ = std::fs::remove_dir_all(&root);
            }
        }
    }
}

/// Beats this instance's heartbeat every period and removes dead instances'
/// containers, until the sandbox shuts down or is dropped.
pub(super) async fn beat_and_reap(pool: Weak<Mutex<Pool>>, closing: Arc<AtomicBool>, reaper: Reaper) {
    let mut every = tokio::time::interval(reaper.period);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if pool.upgrade().is_none() || closing.load(Ordering::SeqCst) {
            return;
        }
        if let Err(error) = beat(&reaper.run_root) {
            tracing::warn!(%error, "cannot touch the heartbeat file: other workers may take this one for dead");
        }
        if let Err(error) = reaper.reap_dead().await {
            tracing::warn!(%error, "looking for the containers of dead workers");
        }
    }
}
