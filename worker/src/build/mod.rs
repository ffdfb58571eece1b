//! Building a bot's image from its author's source, with nothing of the author's ever
//! read by the Docker engine as instructions:
//! 1. the source is checked ([`Source`]: bounded, plain paths, a known [`Layout`]);
//! 2. it is compiled in a sandbox, a container of the layout's toolchain image with no
//!    network, limits and a sized scratch space ([`compile`]);
//! 3. the image is assembled by the farm from the compiled artifact and the layout's
//!    fixed template, on the farm's runtime image ([`assemble`]);
//! 4. it is pushed to the farm's registry and played by digest ([`push`]).
//!
//! The layouts, their toolchains, compile commands and runtimes are one table,
//! [`LAYOUTS`]. Every container and image a build makes is removed when the build ends
//! (the image once pushed), and a worker that dies mid-build leaves its toolchain
//! container to the reaper (it carries the sandbox's owner labels).

mod assemble;
mod compile;
mod layout;
mod source;

use std::collections::HashMap;
use std::time::Duration;

use bollard::Docker;
use bollard::auth::DockerCredentials;
use bollard::query_parameters::{PushImageOptions, RemoveImageOptions, TagImageOptions};
use farm_proto::limits;
use futures_util::StreamExt;
use tokio::time::Instant;

pub use assemble::{LAYOUT_LABEL, SOURCE_LABEL};
pub use compile::BUILD_LABEL;
pub use layout::{LAYOUTS, Layout, Marker};
pub use source::{Source, SourceError, SourceLimits, Tree};

/// The most build output kept.
const MAX_LOG: usize = 1 << 20;

/// What a build may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuildLimits {
    /// The source's bounds.
    pub source: SourceLimits,
    /// The build's wall-clock time: the compile and the image's assembly.
    pub build_secs: u64,
    /// The image's size; the compiled artifact's too.
    pub max_image_mib: u64,
    /// Memory of the compile's processes, besides its scratch space.
    pub memory_mib: u32,
    /// CPU of the compile, in thousandths of a core: a build beside matches must not
    /// starve their bots.
    pub cpu_millis: u32,
    /// The compile's scratch space (source, caches, output): the build's disk bound.
    pub scratch_mib: u64,
    /// Processes and threads of the compile at once.
    pub pids: i64,
}

impl BuildLimits {
    /// Why these limits cannot be used, if they cannot: every one must be above 0.
    pub fn check(&self) -> Result<(), String> {
        limits::SOURCE_MAX_FILES.check(self.source.max_files)?;
        limits::SOURCE_MAX_BYTES.check(self.source.max_bytes)?;
        limits::BUILD_SECS.check(self.build_secs)?;
        limits::BUILD_MAX_IMAGE_MIB.check(self.max_image_mib)?;
        limits::BUILD_MEMORY_MIB.check(self.memory_mib)?;
        limits::BUILD_CPU_MILLIS.check(self.cpu_millis)?;
        limits::BUILD_SCRATCH_MIB.check(self.scratch_mib)?;
        limits::BUILD_PIDS.check(self.pids)?;
        Ok(())
    }
}

impl Default for BuildLimits {
    fn default() -> Self {
        BuildLimits {
            source: SourceLimits::default(),
            build_secs: limits::BUILD_SECS.default,
            max_image_mib: limits::BUILD_MAX_IMAGE_MIB.default,
            memory_mib: limits::BUILD_MEMORY_MIB.default,
            cpu_millis: limits::BUILD_CPU_MILLIS.default,
            scratch_mib: limits::BUILD_SCRATCH_MIB.default,
            pids: limits::BUILD_PIDS.default,
        }
    }
}

/// A build that did not give an image.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The Docker engine failed or refused.
    #[error("docker: {0}")]
    Docker(#[from] bollard::errors::Error),
    /// One of the farm's images that a build needs is not on the engine; it is never
    /// pulled (deploy/build-images.sh builds it).
    #[error("the farm's image {0} is not on this worker's Docker engine (deploy/build-images.sh builds it)")]
    MissingImage(String),
    /// The compile failed, or its artifact or image could not be made; the log says
    /// more.
    #[error("the build failed: {0}")]
    Failed(String),
    /// The compile filled its scratch space.
    #[error("build disk limit: the compile filled its {mib} MiB scratch space (build.scratch_mib)")]
    DiskLimit {
        /// The scratch space's size.
        mib: u64,
    },
    /// The compile ran out of memory.
    #[error("build memory limit: the compile was killed at {mib} MiB (build.memory_mib)")]
    MemoryLimit {
        /// The bound.
        mib: u32,
    },
    /// Over [`BuildLimits::build_secs`].
    #[error("build time limit: the build took over {0} s (build.build_secs)")]
    TimedOut(u64),
    /// The registry did not take the image.
    #[error("pushing to the registry: {0}")]
    Push(String),
    /// Over [`BuildLimits::max_image_mib`]; the image was removed.
    #[error(
        "the image is {size_mib} MiB, over the {limit_mib} MiB an image may be (build.max_image_mib); it was removed"
    )]
    TooLarge {
        /// Its size.
        size_mib: u64,
        /// The bound.
        limit_mib: u64,
    },
}

impl BuildError {
    /// Whether the farm is at fault (the engine, the registry, an image of the farm's
    /// missing), so another try may build it; `false` when the source is (a failed
    /// compile, a limit hit).
    pub fn is_retryable(&self) -> bool {
        matches!(self, BuildError::Docker(_) | BuildError::Push(_) | BuildError::MissingImage(_))
    }
}

/// The Docker engine builds run on, and how their toolchain containers are marked and
/// run: with the worker sandbox's owner labels (so the reaper removes those of a worker
/// that died mid-build) and its OCI runtime (gVisor where matches run under it).
#[derive(Debug, Clone)]
pub struct BuildEngine {
    docker: Docker,
    labels: HashMap<String, String>,
    runtime: Option<String>,
    /// Whether `runtime` is gVisor, whose containers' cgroup holds the sandbox kernel's
    /// threads, not the compile's processes: the pids bound is then its own kernel's
    /// process limit (per sandbox there, unlike the host's per-user one).
    gvisor: bool,
}

impl BuildEngine {
    /// Builds on `docker` under `runtime` (the engine's default if `None`), as
    /// `farm-worker build` does; an error if the engine has no such runtime.
    pub async fn connect(docker: Docker, runtime: Option<String>) -> Result<Self, BuildError> {
        let gvisor = match &runtime {
            Some(runtime) => crate::docker::is_gvisor(&docker.info().await?, runtime)
                .map_err(|error| BuildError::Failed(error.to_string()))?,
            None => false,
        };
        Ok(BuildEngine { docker, labels: HashMap::new(), runtime, gvisor })
    }

    /// Builds on `docker` with a worker's owner `labels` and OCI `runtime`, `gvisor`
    /// saying whether that runtime is gVisor.
    pub(crate) fn for_worker(
        docker: Docker,
        labels: HashMap<String, String>,
        runtime: Option<String>,
        gvisor: bool,
    ) -> Self {
        BuildEngine { docker, labels, runtime, gvisor }
    }

    /// The engine.
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    /// The id of the farm's image `name`, which must be on the engine.
    async fn local_image(&self, name: &str) -> Result<String, BuildError> {
        match self.docker.inspect_image(name).await {
            Ok(image) => image.id.ok_or_else(|| BuildError::MissingImage(name.to_owned())),
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => {
                Err(BuildError::MissingImage(name.to_owned()))
            }
            Err(error) => Err(error.into()),
        }
    }
}

/// One build's engine, bot, limits and deadline.
#[derive(Clone, Copy)]
struct Run<'a> {
    engine: &'a BuildEngine,
    /// The bot being built.
    name: &'a str,
    limits: &'a BuildLimits,
    deadline: Instant,
}

/// An image built.
#[derive(Debug, Clone)]
pub struct Built {
    /// `matchfarm-bots/NAME:DIGEST`, DIGEST the first 32 hex digits of its source's digest
    /// ([`Source::archive_and_digest`]).
    pub tag: String,
    /// The image id (`sha256:...`).
    pub image_id: String,
    /// Its size in bytes.
    pub size: u64,
}

/// What a build printed, whether it built or not (at most 1 MiB).
#[derive(Debug, Clone, Default)]
pub struct BuildLog(pub String);

impl BuildLog {
    fn push(&mut self, text: &str) {
        if self.0.len() + text.len() <= MAX_LOG {
            self.0.push_str(text);
        }
    }
}

/// Builds `source` as bot `name`'s image: compiled in a sandbox, assembled by the farm,
/// within `limits` (the whole within `limits.build_secs`). The log tells what the
/// compile printed and the disk the build used: its scratch space, artifact and image.
pub async fn build(
    engine: &BuildEngine,
    source: &Source,
    name: &str,
    limits: BuildLimits,
    log: &mut BuildLog,
) -> Result<Built, BuildError> {
    let layout = source.layout();
    let (archive, digest) = source.archive_and_digest();
    let tag = format!("{}/{name}:{}", farm_proto::SUBMITTED_REPOSITORY, &digest[..32]);
    let run = Run { engine, name, limits: &limits, deadline: Instant::now() + Duration::from_secs(limits.build_secs) };
    log.push(&format!("matchfarm: compiling the {} layout in {}\n", layout.name, layout.toolchain));
    let artifact = compile::compile(&run, layout, archive, log).await?;
    log.push(&format!(
        "matchfarm: the artifact is {} KiB; assembling it on {}\n",
        artifact.bytes().div_ceil(1024),
        layout.runtime
    ));
    let built = assemble::assemble(&run, layout, &artifact, (&tag, &digest), log).await?;
    log.push(&format!(
        "matchfarm: built {tag}: {} MiB of at most {} MiB; scratch space at most {} MiB, removed\n",
        built.size.div_ceil(1 << 20),
        limits.max_image_mib,
        limits.scratch_mib
    ));
    Ok(built)
}

/// Pushes `built` to `registry` (`HOST:PORT`) with `credentials` and gives the
/// reference workers pull it by: `REGISTRY/matchfarm-bots/NAME@sha256:...`, its content
/// digest, which no later push can change. The engine keeps no tag of it afterwards.
pub async fn push(
    docker: &Docker,
    built: &Built,
    registry: &str,
    credentials: Option<DockerCredentials>,
) -> Result<String, BuildError> {
    let (repository, tag) = built.tag.rsplit_once(':').unwrap_or((&built.tag, "latest"));
    let remote = format!("{registry}/{repository}");
    let options = TagImageOptions { repo: Some(remote.clone()), tag: Some(tag.to_owned()) };
    docker.tag_image(&built.tag, Some(options)).await?;
    let pushed = async {
        let options = PushImageOptions { tag: Some(tag.to_owned()), platform: None };
        let mut stream = docker.push_image(&remote, Some(options), credentials);
        while let Some(info) = stream.next().await {
            match info {
                Ok(info) => {
                    if let Some(detail) = info.error_detail {
                        return Err(BuildError::Push(detail.message.unwrap_or_default()));
                    }
                }
                Err(bollard::errors::Error::DockerStreamError { error }) => return Err(BuildError::Push(error)),
                Err(error) => return Err(error.into()),
            }
        }
        // The engine records the digest the registry gave the pushed manifest.
        let image = docker.inspect_image(&format!("{remote}:{tag}")).await?;
        image
            .repo_digests
            .unwrap_or_default()
            .into_iter()
            .find(|digest| digest.starts_with(&format!("{remote}@")))
            .ok_or_else(|| BuildError::Push(format!("the engine has no digest of {remote} after the push")))
    }
    .await;
    // Pushed or not, the builder's engine keeps no tag of its own: its disk holds what
    // matches pull, not every build ever made.
    for local in [built.tag.clone(), format!("{remote}:{tag}")] {
        let options = RemoveImageOptions { noprune: false, ..Default::default() };
        if let Err(error) = docker.remove_image(&local, Some(options), None).await {
            tracing::warn!(image = %local, %error, "removing a build's tag");
        }
    }
    pushed
}
