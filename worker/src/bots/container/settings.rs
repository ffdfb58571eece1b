//! The worker's `[docker]` settings: how the Docker sandbox prepares, reuses and
//! isolates containers, and the registry it builds submitted bots for.

use std::path::PathBuf;

use farm_proto::ContainerIsolation;
use serde::{Deserialize, Serialize};

use super::reaper::HEARTBEAT_SECS_MAX;
use farm_proto::limits;

/// How the Docker sandbox prepares and reuses containers (the worker's `[docker]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DockerSettings {
    /// The static supervisor binary (scripts/build-supervisor). Unset: `farm-supervisor`
    /// beside the running binary, then the build tree's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<PathBuf>,
    /// The directory holding each container's run directory (its supervisor's socket)
    /// and a copy of the supervisor: the same path for the worker and the Docker engine.
    pub run_dir: PathBuf,
    /// Reused containers (up to `matches_per_container` matches each), or a fresh one
    /// per match. A tournament may ask for fresh containers for its own matches.
    pub isolation: ContainerIsolation,
    /// Matches one container serves before it is replaced, when reused.
    pub matches_per_container: u32,
    /// Prepared containers kept waiting for a match, across all images.
    pub prepared_max: usize,
    /// How long a prepared container may wait for a match before it is removed.
    pub prepared_idle_secs: u64,
    /// How often this worker touches its heartbeat file and looks for the containers of
    /// dead workers on the same engine (those whose heartbeat is 3 periods old), in
    /// seconds: 1 to 300. Workers that share a run directory see each other's.
    pub heartbeat_secs: u64,
    /// The OCI runtime bot containers run under, as the engine names it in its
    /// `runtimes` (`runsc`: gVisor, a kernel of its own between the bot and the host's).
    /// Unset: the engine's default (runc).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The farm's image registry (`HOST:PORT`): bots named by digest there
    /// (`HOST:PORT/REPO@sha256:...`) are pulled when the engine lacks them, and the
    /// worker builds submitted bots and pushes them there. Unset: nothing is pulled
    /// (images must be on the engine) and no build is taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// The user this worker signs in to the registry as (its htpasswd entry): pulls and
    /// the pushes of its builds. Unset: no credentials are sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_user: Option<String>,
    /// That user's password (`FARM_DOCKER__REGISTRY_PASSWORD`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_password: Option<String>,
}

impl Default for DockerSettings {
    fn default() -> Self {
        DockerSettings {
            supervisor: None,
            run_dir: default_run_dir(),
            isolation: ContainerIsolation::Reused,
            matches_per_container: limits::DOCKER_MATCHES_PER_CONTAINER.default,
            prepared_max: limits::DOCKER_PREPARED_MAX.default,
            prepared_idle_secs: 120,
            heartbeat_secs: 10,
            runtime: None,
            registry: None,
            registry_user: None,
            registry_password: None,
        }
    }
}

/// `/run/matchfarm` for root; otherwise under `$XDG_RUNTIME_DIR`, else `/tmp`.
fn default_run_dir() -> PathBuf {
    if nix::unistd::geteuid().is_root() {
        return PathBuf::from("/run/matchfarm");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) => PathBuf::from(dir).join("matchfarm"),
        None => PathBuf::from(format!("/tmp/matchfarm-{}", nix::unistd::geteuid())),
    }
}

impl DockerSettings {
    /// Checks the numbers are usable.
    pub fn check(&self) -> Result<(), String> {
        limits::DOCKER_MATCHES_PER_CONTAINER.check(self.matches_per_container)?;
        limits::DOCKER_PREPARED_MAX.check(self.prepared_max)?;
        if !(1..=HEARTBEAT_SECS_MAX).contains(&self.heartbeat_secs) {
            return Err(format!(
                "docker.heartbeat_secs must be 1 to {HEARTBEAT_SECS_MAX}, got {}",
                self.heartbeat_secs
            ));
        }
        Ok(())
    }

    /// What this worker signs in to its registry with, if anything.
    pub fn registry_credentials(&self) -> Option<bollard::auth::DockerCredentials> {
        let registry = self.registry.as_ref()?;
        Some(bollard::auth::DockerCredentials {
            username: Some(self.registry_user.clone()?),
            password: self.registry_password.clone(),
            serveraddress: Some(registry.clone()),
            ..Default::default()
        })
    }

    /// Matches a container serves.
    pub(super) fn matches(&self) -> u32 {
        match self.isolation {
            ContainerIsolation::Reused => self.matches_per_container,
            ContainerIsolation::FreshContainer => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_containers_serve_one_match_and_bad_numbers_are_refused() {
        let fresh = DockerSettings { isolation: ContainerIsolation::FreshContainer, ..DockerSettings::default() };
        assert_eq!(fresh.matches(), 1);
        assert_eq!(DockerSettings::default().matches(), 100);
        let none = DockerSettings { matches_per_container: 0, ..DockerSettings::default() };
        assert!(none.check().expect_err("zero").contains("matches_per_container"));
    }
}
