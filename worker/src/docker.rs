//! What every container the worker starts on the Docker engine shares, a bot's (the
//! Docker sandbox) and a build's toolchain alike: the engine's log of its output,
//! resource limits, and whether its OCI runtime is gVisor.

use std::collections::HashMap;
use std::path::Path;

use bollard::models::{HostConfigLogConfig, ResourcesUlimits, SystemInfo};

/// gVisor's OCI runtime program: a runtime of the engine's whose program has this
/// name is gVisor, whatever the engine calls it (`runsc`, `runsc-kvm`, `gvisor`, ...).
const GVISOR_PROGRAM: &str = "runsc";
/// The threads a gVisor sandbox may have on the host (see `DockerSandbox::pids_limit`).
pub(crate) const GVISOR_SANDBOX_THREADS: i64 = 4096;

/// The configured OCI runtime is not one of the engine's.
#[derive(Debug, thiserror::Error)]
#[error(
    "docker.runtime {runtime:?} is not one of the engine's runtimes ({known}): register it in the \
     engine's daemon.json (see docs/src/operators/gvisor.md)"
)]
pub(crate) struct UnknownRuntime {
    /// The runtime configured.
    runtime: String,
    /// The engine's runtimes, sorted, comma-separated.
    known: String,
}

/// The engine's own log of a farm container's output, kept small (64 KiB): a bot's
/// container's supervisor complaints, a toolchain container's compile output (read
/// through the attachment, not from there).
pub(crate) fn small_engine_log() -> HostConfigLogConfig {
    HostConfigLogConfig {
        typ: Some("json-file".to_owned()),
        config: Some(HashMap::from([
            ("max-size".to_owned(), "64k".to_owned()),
            ("max-file".to_owned(), "1".to_owned()),
        ])),
    }
}

/// Whether the engine's runtime `runtime` is gVisor (its program is `runsc`); an error
/// naming the engine's runtimes if it has none of that name.
pub(crate) fn is_gvisor(info: &SystemInfo, runtime: &str) -> Result<bool, UnknownRuntime> {
    let runtimes = info.runtimes.clone().unwrap_or_default();
    let Some(found) = runtimes.get(runtime) else {
        let mut known: Vec<&String> = runtimes.keys().collect();
        known.sort();
        let known = known.iter().map(|name| name.as_str()).collect::<Vec<_>>().join(", ");
        return Err(UnknownRuntime { runtime: runtime.to_owned(), known });
    };
    let program = found.path.as_deref().map(Path::new).and_then(Path::file_name);
    Ok(program.is_some_and(|name| name == GVISOR_PROGRAM))
}

/// A resource limit, soft and hard alike.
pub(crate) fn ulimit(name: &str, value: u64) -> ResourcesUlimits {
    let value = i64::try_from(value).unwrap_or(i64::MAX);
    ResourcesUlimits { name: Some(name.to_owned()), soft: Some(value), hard: Some(value) }
}

#[cfg(test)]
mod tests {
    use bollard::models::Runtime;

    use super::*;

    fn engine(runtimes: &[(&str, &str)]) -> SystemInfo {
        let runtimes = runtimes
            .iter()
            .map(|(name, path)| ((*name).to_owned(), Runtime { path: Some((*path).to_owned()), ..Runtime::default() }))
            .collect();
        SystemInfo { runtimes: Some(runtimes), ..SystemInfo::default() }
    }

    #[test]
    fn gvisor_is_known_by_its_program_whatever_the_runtime_is_called() {
        let info = engine(&[("runc", "runc"), ("gvisor", "/usr/local/bin/runsc"), ("runsc-kvm", "/usr/bin/runsc")]);
        assert!(!is_gvisor(&info, "runc").expect("known"));
        assert!(is_gvisor(&info, "gvisor").expect("known"));
        assert!(is_gvisor(&info, "runsc-kvm").expect("known"));
        let unknown = is_gvisor(&info, "runsc").expect_err("not the engine's").to_string();
        assert!(
            unknown
                .starts_with("docker.runtime \"runsc\" is not one of the engine's runtimes (gvisor, runc, runsc-kvm)"),
            "{unknown}"
        );
    }
}
