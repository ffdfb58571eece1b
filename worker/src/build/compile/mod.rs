//! Compiling an author's source: a container of the layout's toolchain image that the
//! farm starts as it starts a bot's, with no network at all, a read-only root, user
//! 10001, every capability dropped, no new privileges, pids, memory and CPU limits, and
//! one writable place, `/scratch`, a tmpfs whose size is the build's disk bound (its
//! pages count against the container's memory, which is sized to hold it). It runs under
//! the worker's gVisor runtime when the worker has one.
//!
//! The source goes in as a tar on the container's standard input and the artifact comes
//! out as a tar on its standard output; what the compile prints is the build log. The
//! program the container runs is [`WRAPPER`] with the layout's compile command as its
//! argument: the farm's text. The container is removed however the compile ends.

use std::collections::HashMap;

use bollard::container::LogOutput;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{AttachContainerOptions, CreateContainerOptionsBuilder, RemoveContainerOptions};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use super::source::{SourceLimits, Tree};
use super::{BuildEngine, BuildError, BuildLimits, BuildLog, Layout, Run};
use crate::docker::{GVISOR_SANDBOX_THREADS, small_engine_log, ulimit};

/// The compile's user and group: the bots' (`bot` in the farm's Debian images).
const BUILD_UID: u32 = 10001;
/// Where the toolchain container may write.
const SCRATCH: &str = "/scratch";
/// The label of a toolchain container, naming the bot it compiles.
pub const BUILD_LABEL: &str = "matchfarm.build";
/// The files an artifact may hold: more than a source (installed wheels, node_modules).
const ARTIFACT_MAX_FILES: usize = 20_000;
/// Open files of the compile's processes.
const OPEN_FILES: u64 = 4096;

/// The toolchain container's program, run by `sh -c` with the layout's compile command
/// as `$1`: the source tar from standard input unpacked in /scratch/src, the compile
/// run there under `sh -e` with its output on standard error (the build log), then
/// /scratch/out written as a tar on standard output. Its exit status says how it ended:
/// 0 built, 1 the compile failed, 2 the scratch space is full, 3 nothing in
/// /scratch/out. The last line of the log tells the compile's status and the scratch
/// space it used.
const WRAPPER: &str = include_str!("wrapper.sh");

/// What the kernel says when a write finds the scratch space full; a compile that
/// cleaned up after failing on it still failed for the disk bound.
const NO_SPACE: &str = "No space left on device";

/// Compiles the source `archive` (canonical, see [`super::Source::archive`]) in
/// `layout`'s toolchain image, within the run's limits and by its deadline.
/// Returns the artifact: what the compile left in /scratch/out.
pub(super) async fn compile(
    run: &Run<'_>,
    layout: &Layout,
    archive: Vec<u8>,
    log: &mut BuildLog,
) -> Result<Tree, BuildError> {
    let Run { engine, name, limits, deadline } = *run;
    let image = engine.local_image(layout.toolchain).await?;
    let body = container_body(engine, &image, layout.compile, name, limits);
    let options = CreateContainerOptionsBuilder::new().build();
    let id = engine.docker.create_container(Some(options), body).await?.id;
    let ran = tokio::time::timeout_at(deadline, attach_and_run(engine, &id, archive, limits, log)).await;
    // Removed whatever happened: killed if it still runs; its scratch space goes with it.
    let removal = RemoveContainerOptions { force: true, v: true, ..Default::default() };
    if let Err(error) = engine.docker.remove_container(&id, Some(removal)).await {
        tracing::warn!(container = %id, %error, "removing a toolchain container; the reaper will");
    }
    let (code, artifact) = ran.map_err(|_| BuildError::TimedOut(limits.build_secs))??;
    match code {
        0 => {
            let limits = SourceLimits { max_files: ARTIFACT_MAX_FILES, max_bytes: limits.max_image_mib << 20 };
            Tree::read_archive(artifact.as_slice(), limits)
                .map_err(|error| BuildError::Failed(format!("the compiled artifact: {error}")))
        }
        2 => Err(BuildError::DiskLimit { mib: limits.scratch_mib }),
        1 if log.0.contains(NO_SPACE) => Err(BuildError::DiskLimit { mib: limits.scratch_mib }),
        1 => Err(BuildError::Failed(format!("the {} compile failed; its log says why", layout.name))),
        3 => Err(BuildError::Failed(format!("the {} compile left nothing to run in /scratch/out", layout.name))),
        code => Err(BuildError::Failed(format!("the toolchain container ended with status {code}"))),
    }
}

/// Feeds `archive` to container `id`, starts it, and collects its log and artifact
/// until it exits: (its exit status, the artifact's bytes).
async fn attach_and_run(
    engine: &BuildEngine,
    id: &str,
    archive: Vec<u8>,
    limits: &BuildLimits,
    log: &mut BuildLog,
) -> Result<(i64, Vec<u8>), BuildError> {
    let options =
        AttachContainerOptions { stream: true, stdin: true, stdout: true, stderr: true, ..Default::default() };
    let attached = engine.docker.attach_container(id, Some(options)).await?;
    engine.docker.start_container(id, None).await?;
    let mut input = attached.input;
    // A write that fails (the container ended before reading it all) is no error of
    // its own: the exit status says what happened.
    let feed = async move {
        let _ = input.write_all(&archive).await;
        let _ = input.shutdown().await;
    };
    let most = usize::try_from(limits.max_image_mib << 20).unwrap_or(usize::MAX);
    let mut output = attached.output;
    let collect = async {
        let mut artifact = Vec::new();
        while let Some(frame) = output.next().await {
            match frame? {
                LogOutput::StdOut { message } => {
                    if artifact.len() + message.len() > most {
                        return Err(BuildError::Failed(format!(
                            "the compiled artifact is over the {} MiB an image may be",
                            limits.max_image_mib
                        )));
                    }
                    artifact.extend_from_slice(&message);
                }
                LogOutput::StdErr { message } | LogOutput::Console { message } => {
                    log.push(&String::from_utf8_lossy(&message));
                }
                LogOutput::StdIn { .. } => {}
            }
        }
        Ok(artifact)
    };
    let ((), artifact) = tokio::join!(feed, collect);
    let artifact = artifact?;
    let code = match engine.docker.wait_container(id, None).next().await {
        Some(Ok(response)) => response.status_code,
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
        Some(Err(error)) => return Err(error.into()),
        None => return Err(BuildError::Failed("the toolchain container's end was not seen".to_owned())),
    };
    if code != 0
        && engine.docker.inspect_container(id, None).await?.state.and_then(|state| state.oom_killed) == Some(true)
    {
        return Err(BuildError::MemoryLimit { mib: limits.memory_mib });
    }
    Ok((code, artifact))
}

/// The toolchain container: see the module's documentation.
fn container_body(
    engine: &BuildEngine,
    image: &str,
    compile: &str,
    name: &str,
    limits: &BuildLimits,
) -> ContainerCreateBody {
    let mut ulimits = vec![ulimit("nofile", OPEN_FILES), ulimit("core", 0)];
    if engine.gvisor {
        // gVisor's kernel counts the compile's processes itself, per sandbox.
        ulimits.push(ulimit("nproc", u64::try_from(limits.pids).unwrap_or(0)));
    }
    // The scratch space's pages are the container's memory too.
    let memory = ((u64::from(limits.memory_mib) + limits.scratch_mib) << 20) as i64;
    // Owned by the compile's user: a mode alone is not kept when the engine makes the
    // working directory in it.
    let scratch =
        format!("rw,nosuid,nodev,exec,mode=0755,uid={BUILD_UID},gid={BUILD_UID},size={}m", limits.scratch_mib);
    let host_config = HostConfig {
        memory: Some(memory),
        memory_swap: Some(memory),
        nano_cpus: Some(i64::from(limits.cpu_millis) * 1_000_000),
        pids_limit: Some(if engine.gvisor { GVISOR_SANDBOX_THREADS } else { limits.pids }),
        ulimits: Some(ulimits),
        readonly_rootfs: Some(true),
        tmpfs: Some(HashMap::from([(SCRATCH.to_owned(), scratch)])),
        cap_drop: Some(vec!["ALL".to_owned()]),
        security_opt: Some(vec!["no-new-privileges".to_owned()]),
        network_mode: Some("none".to_owned()),
        runtime: engine.runtime.clone(),
        // The log is read through the attachment; the engine keeps little of it.
        log_config: Some(small_engine_log()),
        ..Default::default()
    };
    ContainerCreateBody {
        image: Some(image.to_owned()),
        user: Some(format!("{BUILD_UID}:{BUILD_UID}")),
        entrypoint: Some(vec!["/bin/sh".to_owned(), "-c".to_owned(), WRAPPER.to_owned(), "matchfarm".to_owned()]),
        cmd: Some(vec![compile.to_owned()]),
        env: Some(vec![format!("HOME={SCRATCH}/home"), format!("TMPDIR={SCRATCH}/tmp")]),
        working_dir: Some(SCRATCH.to_owned()),
        open_stdin: Some(true),
        stdin_once: Some(true),
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        network_disabled: Some(true),
        labels: Some({
            let mut labels = engine.labels.clone();
            labels.insert(BUILD_LABEL.to_owned(), name.to_owned());
            labels
        }),
        host_config: Some(host_config),
        ..Default::default()
    }
}
