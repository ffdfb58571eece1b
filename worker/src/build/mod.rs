//! Building a bot's image from its source, as the farm will build its authors'
//! submissions: the source is checked ([`Source`]), made into a build context with its
//! own Dockerfile or the one the farm supplies for a starter layout ([`Layout`]), built
//! by the Docker engine with no network, from the farm's local base images only, and
//! tagged by the context's content digest ([`build`]).
//!
//! A source comes from a directory ([`Source::read_dir`]) or an uploaded tar archive,
//! gzipped or not ([`Source::read_archive`]); both are held to the same rules: at most
//! [`SourceLimits::max_files`] entries and [`SourceLimits::max_bytes`] in all, regular
//! files, directories and symbolic links only, no path leaving the root (absolute,
//! `..`), no link pointing out of it, no hard links. The context is canonical (entries
//! sorted, owners and times zeroed), so the same source always has the same digest.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use bollard::Docker;
use bollard::query_parameters::{BuildImageOptions, PushImageOptions, RemoveImageOptions, TagImageOptions};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};

/// The Dockerfile a starter layout is built with, and the file that marks it.
const PYTHON_DOCKERFILE: &str = "FROM matchfarm/base-debian:latest
ENV PYTHONSAFEPATH=1 PYTHONDONTWRITEBYTECODE=1
COPY . /bot/
WORKDIR /bot
USER 10001:10001
CMD [\"python3\", \"/bot/bot.py\"]
";
const NODE_DOCKERFILE: &str = "FROM matchfarm/base-debian:latest
COPY . /bot/
WORKDIR /bot
USER 10001:10001
CMD [\"node\", \"/bot/bot.js\"]
";
/// The Rust starter layout: built with the farm's toolchain image, offline (a bot's
/// dependencies must be vendored in its source), its one binary run on the Debian base.
/// `cargo install` puts the binary under its package's name; moving `bin/*` to one name
/// fails, as it should, when the package has more than one.
const RUST_DOCKERFILE: &str = "FROM matchfarm/base-rust:latest AS build
COPY . /src/
WORKDIR /src
ENV CARGO_HOME=/tmp/cargo CARGO_NET_OFFLINE=true CARGO_TARGET_DIR=/tmp/target
RUN cargo install --offline --path . --root /out && mv /out/bin/* /out/bot
FROM matchfarm/base-debian:latest
COPY --from=build /out/bot /bot/bot
USER 10001:10001
CMD [\"/bot/bot\"]
";
/// The base images a build may start from: the farm's own, built locally
/// (deploy/build-images.sh), and `scratch`.
pub const ALLOWED_BASES: &[&str] =
    &["matchfarm/base-debian", "matchfarm/base-static", "matchfarm/base-rust", "scratch"];
/// The CFS period a build step's CPU quota is counted in, in microseconds.
const CPU_PERIOD_US: i32 = 100_000;
/// The most build output kept.
const MAX_LOG: usize = 1 << 20;

/// How a source is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Its own `Dockerfile`, at the top.
    Dockerfile,
    /// `bot.py` at the top: run by python3 on the farm's Debian base.
    Python,
    /// `bot.js` at the top: run by node on the farm's Debian base.
    Node,
    /// `Cargo.toml` at the top: one binary package, built offline with the farm's
    /// toolchain (`matchfarm/base-rust`), run on the Debian base.
    Rust,
}

impl Layout {
    /// Its name, as shown.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Dockerfile => "dockerfile",
            Layout::Python => "python",
            Layout::Node => "node",
            Layout::Rust => "rust",
        }
    }
}

/// How much source a build takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SourceLimits {
    /// Entries (files, directories, links).
    pub max_files: usize,
    /// Bytes of all files together.
    pub max_bytes: u64,
}

impl SourceLimits {
    /// The largest archive that can hold a source within these bounds: its files, and a
    /// header and padding for each entry (1 KiB each, at most), and the end blocks.
    pub fn max_archive_bytes(&self) -> u64 {
        self.max_bytes + (self.max_files as u64) * 1024 + 10 * 1024
    }
}

impl Default for SourceLimits {
    fn default() -> Self {
        SourceLimits { max_files: 2_000, max_bytes: 64 << 20 }
    }
}

/// What a build may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuildLimits {
    /// The source's bounds.
    pub source: SourceLimits,
    /// The whole build's wall-clock time.
    pub build_secs: u64,
    /// The image's size.
    pub max_image_mib: u64,
    /// Memory of each build step.
    pub memory_mib: u32,
    /// CPU of each build step, in thousandths of a core: a build beside matches must
    /// not starve their bots.
    pub cpu_millis: u32,
}

impl BuildLimits {
    /// Why these limits cannot be used, if they cannot: every one must be above 0.
    pub fn check(&self) -> Result<(), String> {
        let zero = [
            ("source.max_files", self.source.max_files == 0),
            ("source.max_bytes", self.source.max_bytes == 0),
            ("build_secs", self.build_secs == 0),
            ("max_image_mib", self.max_image_mib == 0),
            ("memory_mib", self.memory_mib == 0),
            ("cpu_millis", self.cpu_millis == 0),
        ];
        match zero.iter().find(|(_, is_zero)| *is_zero) {
            Some((name, _)) => Err(format!("{name} must be at least 1")),
            None => Ok(()),
        }
    }
}

impl Default for BuildLimits {
    fn default() -> Self {
        BuildLimits {
            source: SourceLimits::default(),
            build_secs: 600,
            max_image_mib: 1024,
            memory_mib: 1024,
            cpu_millis: 1000,
        }
    }
}

/// A source that cannot be built, and why; every message names the entry.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Reading it failed.
    #[error("{path}: {source}")]
    Io {
        /// What was being read.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The archive is not a tar archive (gzipped or not).
    #[error("not a tar archive (gzipped or not): {0}")]
    Archive(String),
    /// Over [`SourceLimits::max_files`].
    #[error("more than {0} files, directories and links")]
    TooManyFiles(usize),
    /// Over [`SourceLimits::max_bytes`].
    #[error("more than {0} bytes of files")]
    TooLarge(u64),
    /// A path that leaves the root, or is not plain.
    #[error("{0:?}: a path must stay inside the source (no absolute paths, no '..')")]
    Outside(String),
    /// A link pointing out of the root.
    #[error("{path:?} is a symbolic link to {target:?}, out of the source")]
    LinkOutside {
        /// The link.
        path: String,
        /// Where it points.
        target: String,
    },
    /// Neither a file, a directory nor a symbolic link.
    #[error("{0:?} is a device, FIFO, socket or hard link: only files, directories and symbolic links are taken")]
    Special(String),
    /// The same path twice.
    #[error("{0:?} appears twice")]
    Duplicate(String),
    /// No marker of a layout.
    #[error("no Dockerfile, bot.py, bot.js or Cargo.toml at the top of the source: nothing says how to build it")]
    NoLayout,
    /// A Dockerfile starting from an image the farm does not build.
    #[error(
        "Dockerfile line {line}: FROM {image}: builds start from {ALLOWED_BASES:?} (or an earlier stage), which the farm builds itself"
    )]
    Base {
        /// Its line.
        line: usize,
        /// The image named.
        image: String,
    },
    /// An instruction that would fetch from outside the source and the farm's bases.
    #[error("Dockerfile line {line}: {problem}")]
    Instruction {
        /// The line it starts on.
        line: usize,
        /// The instruction and why it is refused.
        problem: String,
    },
}

/// One entry of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File { data: Vec<u8>, executable: bool },
    Directory,
    Link { target: String },
}

/// A checked source: its entries by path, and how it is built.
#[derive(Debug, Clone)]
pub struct Source {
    entries: BTreeMap<String, Entry>,
    layout: Layout,
}

/// Adds entries within `limits`, checking each path.
struct Collector {
    entries: BTreeMap<String, Entry>,
    bytes: u64,
    limits: SourceLimits,
}

impl Collector {
    fn new(limits: SourceLimits) -> Self {
        Collector { entries: BTreeMap::new(), bytes: 0, limits }
    }

    fn add(&mut self, path: &str, entry: Entry) -> Result<(), SourceError> {
        let path = plain_path(path)?;
        if path.is_empty() {
            return Ok(());
        }
        if let Entry::File { data, .. } = &entry {
            self.bytes += data.len() as u64;
            if self.bytes > self.limits.max_bytes {
                return Err(SourceError::TooLarge(self.limits.max_bytes));
            }
        }
        if let Entry::Link { target } = &entry
            && !link_stays_inside(&path, target)
        {
            return Err(SourceError::LinkOutside { path, target: target.clone() });
        }
        if self.entries.len() >= self.limits.max_files {
            return Err(SourceError::TooManyFiles(self.limits.max_files));
        }
        if self.entries.insert(path.clone(), entry).is_some() {
            return Err(SourceError::Duplicate(path));
        }
        Ok(())
    }

    fn finish(self) -> Result<Source, SourceError> {
        let file = |name: &str| matches!(self.entries.get(name), Some(Entry::File { .. }));
        let layout = if file("Dockerfile") {
            Layout::Dockerfile
        } else if file("bot.py") {
            Layout::Python
        } else if file("bot.js") {
            Layout::Node
        } else if file("Cargo.toml") {
            Layout::Rust
        } else {
            return Err(SourceError::NoLayout);
        };
        if let Some(Entry::File { data, .. }) = self.entries.get("Dockerfile").filter(|_| layout == Layout::Dockerfile)
        {
            check_dockerfile(&String::from_utf8_lossy(data))?;
        }
        Ok(Source { entries: self.entries, layout })
    }
}

/// `path` relative to the root, its components joined by `/` (`./` dropped); an
/// error if it is absolute or climbs with `..`.
fn plain_path(path: &str) -> Result<String, SourceError> {
    let mut parts = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str().ok_or_else(|| SourceError::Outside(path.to_owned()))?),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(SourceError::Outside(path.to_owned()));
            }
        }
    }
    Ok(parts.join("/"))
}

/// Whether the link at `path` (plain) to `target` resolves inside the root, read as
/// written (each `..` taken back from the link's own directory).
fn link_stays_inside(path: &str, target: &str) -> bool {
    if target.starts_with('/') {
        return false;
    }
    let mut depth: Vec<&str> = path.split('/').collect();
    depth.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            name => depth.push(name),
        }
    }
    true
}

/// `Ok` when nothing `dockerfile` asks can reach past the build context and the farm's
/// bases: every `FROM` names an allowed base or an earlier stage, every `--from=` an
/// earlier stage, no `ADD` fetches a URL or a git repository, and no parser directive
/// changes how it is read. The engine fetches what those name itself, outside the
/// steps' network namespace, so they are refused before it sees them. Lines are read as
/// the engine reads them: a `\` at the end continues one, comment lines are skipped.
fn check_dockerfile(dockerfile: &str) -> Result<(), SourceError> {
    let mut stages: Vec<String> = Vec::new();
    let refuse = |line: usize, problem: String| Err(SourceError::Instruction { line, problem });
    for (line, instruction) in logical_lines(dockerfile) {
        let text = instruction.trim_start();
        if let Some(comment) = text.strip_prefix('#') {
            let directive = comment.trim_start().to_ascii_lowercase();
            if ["escape", "syntax"].iter().any(|name| directive.replace(' ', "").starts_with(&format!("{name}="))) {
                return refuse(line, format!("{text}: parser directives are not accepted"));
            }
            continue;
        }
        let mut words = text.split_whitespace();
        let Some(keyword) = words.next().map(str::to_ascii_uppercase) else { continue };
        match keyword.as_str() {
            "FROM" => {
                let mut words = words.skip_while(|word| word.starts_with("--"));
                let image = words.next().unwrap_or_default().to_owned();
                let bare = image.strip_suffix(":latest").unwrap_or(&image);
                let earlier = stages.iter().any(|stage| !stage.is_empty() && stage.eq_ignore_ascii_case(bare));
                if !(ALLOWED_BASES.contains(&bare) || earlier) {
                    return Err(SourceError::Base { line, image });
                }
                let stage = match (words.next(), words.next()) {
                    (Some(as_word), Some(name)) if as_word.eq_ignore_ascii_case("AS") => name.to_owned(),
                    _ => String::new(),
                };
                stages.push(stage);
            }
            "COPY" | "ADD" => {
                for flag in words.clone().take_while(|word| word.starts_with("--")) {
                    let Some((name, value)) = flag.split_once('=') else { continue };
                    let earlier = stages.iter().any(|stage| !stage.is_empty() && stage.eq_ignore_ascii_case(value))
                        || value.parse::<usize>().is_ok_and(|index| index < stages.len());
                    if name.eq_ignore_ascii_case("--from") && !earlier {
                        return refuse(line, format!("{keyword} {flag}: copies come from an earlier stage only"));
                    }
                }
                let rest = words.collect::<Vec<_>>().join(" ");
                if keyword == "ADD" && (rest.contains("://") || rest.contains("git@")) {
                    return refuse(line, format!("ADD {rest}: a build fetches nothing; put the file in the source"));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The instructions of `dockerfile` with the number of the line each starts on:
/// continued lines joined, comment lines inside a continuation dropped.
fn logical_lines(dockerfile: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (index, line) in dockerfile.lines().enumerate() {
        if current.is_some() && line.trim_start().starts_with('#') {
            continue;
        }
        let (start, mut text) = current.take().unwrap_or((index + 1, String::new()));
        let trimmed = line.trim_end();
        match trimmed.strip_suffix('\\') {
            Some(continued) => {
                // Joined as the engine joins them: nothing in between.
                text.push_str(continued);
                current = Some((start, text));
            }
            None => {
                text.push_str(trimmed);
                lines.push((start, text));
            }
        }
    }
    lines.extend(current);
    lines
}

impl Source {
    /// The source in directory `root`, without following links.
    pub fn read_dir(root: &Path, limits: SourceLimits) -> Result<Self, SourceError> {
        let mut collector = Collector::new(limits);
        let mut pending = vec![PathBuf::new()];
        while let Some(relative) = pending.pop() {
            let here = root.join(&relative);
            let io = |source| SourceError::Io { path: here.display().to_string(), source };
            let mut children: Vec<_> = std::fs::read_dir(&here).map_err(io)?.collect::<Result<_, _>>().map_err(io)?;
            children.sort_by_key(std::fs::DirEntry::file_name);
            for child in children {
                let path = relative.join(child.file_name());
                let name = path.to_string_lossy().into_owned();
                let io = |source| SourceError::Io { path: name.clone(), source };
                let kind = child.file_type().map_err(io)?;
                if kind.is_dir() {
                    collector.add(&name, Entry::Directory)?;
                    pending.push(path);
                } else if kind.is_symlink() {
                    let target = std::fs::read_link(child.path()).map_err(io)?;
                    collector.add(&name, Entry::Link { target: target.to_string_lossy().into_owned() })?;
                } else if kind.is_file() {
                    let metadata = child.metadata().map_err(io)?;
                    if collector.bytes + metadata.len() > limits.max_bytes {
                        return Err(SourceError::TooLarge(limits.max_bytes));
                    }
                    let data = std::fs::read(child.path()).map_err(io)?;
                    let executable = std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o111 != 0;
                    collector.add(&name, Entry::File { data, executable })?;
                } else {
                    return Err(SourceError::Special(name));
                }
            }
        }
        collector.finish()
    }

    /// The source in a tar archive, gzipped or not.
    pub fn read_archive(bytes: &[u8], limits: SourceLimits) -> Result<Self, SourceError> {
        let reader: Box<dyn Read + '_> = if bytes.starts_with(&[0x1f, 0x8b]) {
            Box::new(flate2::read::GzDecoder::new(bytes))
        } else {
            Box::new(bytes)
        };
        // A few blocks over the files' bound for the headers: a decompression bomb
        // stops there.
        let bound = limits.max_bytes + (limits.max_files as u64 + 2) * 1024;
        let mut archive = tar::Archive::new(reader.take(bound));
        let mut collector = Collector::new(limits);
        let entries = archive.entries().map_err(|error| SourceError::Archive(error.to_string()))?;
        for entry in entries {
            let mut entry = entry.map_err(|error| SourceError::Archive(error.to_string()))?;
            let path = entry.path().map_err(|error| SourceError::Archive(error.to_string()))?;
            let name = path.to_string_lossy().into_owned();
            let kind = entry.header().entry_type();
            if kind.is_dir() {
                collector.add(&name, Entry::Directory)?;
            } else if kind.is_symlink() {
                let target = entry
                    .link_name()
                    .map_err(|error| SourceError::Archive(error.to_string()))?
                    .map(|target| target.to_string_lossy().into_owned())
                    .unwrap_or_default();
                collector.add(&name, Entry::Link { target })?;
            } else if kind.is_file() {
                if collector.bytes + entry.size() > limits.max_bytes {
                    return Err(SourceError::TooLarge(limits.max_bytes));
                }
                let executable = entry.header().mode().is_ok_and(|mode| mode & 0o111 != 0);
                let mut data = Vec::with_capacity(entry.size() as usize);
                entry.read_to_end(&mut data).map_err(|source| SourceError::Io { path: name.clone(), source })?;
                collector.add(&name, Entry::File { data, executable })?;
            } else if matches!(kind, tar::EntryType::XGlobalHeader | tar::EntryType::XHeader) {
                // pax metadata, which the tar reader has applied already.
            } else {
                return Err(SourceError::Special(name));
            }
        }
        collector.finish()
    }

    /// How it is built.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The source as a canonical tar (entries sorted, owners and times zeroed): what an
    /// upload sends.
    pub fn archive(&self) -> Vec<u8> {
        self.tar(false)
    }

    /// The build context: [`Source::archive`] with the farm's Dockerfile for a starter
    /// layout.
    pub fn context(&self) -> Vec<u8> {
        self.tar(true)
    }

    fn tar(&self, with_supplied_dockerfile: bool) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut append = |path: &str, kind: tar::EntryType, mode: u32, data: &[u8], link: Option<&str>| {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(kind);
            header.set_mode(mode);
            header.set_size(data.len() as u64);
            header.set_mtime(0);
            header.set_uid(0);
            header.set_gid(0);
            // Writing to a Vec cannot fail, and every path and link was checked plain.
            let written = match link {
                Some(link) => builder.append_link(&mut header, path, link),
                None => builder.append_data(&mut header, path, data),
            };
            written.expect("a checked entry is written to memory");
        };
        for (path, entry) in &self.entries {
            match entry {
                Entry::Directory => append(path, tar::EntryType::Directory, 0o755, &[], None),
                Entry::File { data, executable } => {
                    append(path, tar::EntryType::Regular, if *executable { 0o755 } else { 0o644 }, data, None);
                }
                Entry::Link { target } => append(path, tar::EntryType::Symlink, 0o777, &[], Some(target)),
            }
        }
        let supplied = match self.layout {
            _ if !with_supplied_dockerfile => None,
            Layout::Dockerfile => None,
            Layout::Python => Some(PYTHON_DOCKERFILE),
            Layout::Node => Some(NODE_DOCKERFILE),
            Layout::Rust => Some(RUST_DOCKERFILE),
        };
        if let Some(dockerfile) = supplied {
            append("Dockerfile", tar::EntryType::Regular, 0o644, dockerfile.as_bytes(), None);
        }
        builder.into_inner().expect("a tar in memory")
    }

    /// The SHA-256 of [`Source::context`], in hex: the image's tag.
    pub fn digest(&self) -> String {
        hex::encode(Sha256::digest(self.context()))
    }
}

/// A build that did not give an image.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The Docker engine failed or refused.
    #[error("docker: {0}")]
    Docker(#[from] bollard::errors::Error),
    /// A step failed; the log says more.
    #[error("the build failed: {0}")]
    Failed(String),
    /// Over [`BuildLimits::build_secs`].
    #[error("the build took over {0} s")]
    TimedOut(u64),
    /// The registry did not take the image.
    #[error("pushing to the registry: {0}")]
    Push(String),
    /// Over [`BuildLimits::max_image_mib`]; the image was removed.
    #[error("the image is {size_mib} MiB, over the {limit_mib} MiB an image may be; it was removed")]
    TooLarge {
        /// Its size.
        size_mib: u64,
        /// The bound.
        limit_mib: u64,
    },
}

impl BuildError {
    /// Whether the farm is at fault (the engine or the registry failing), so another try
    /// may build it; `false` when the source is (a failed step, too long, too large).
    pub fn is_retryable(&self) -> bool {
        matches!(self, BuildError::Docker(_) | BuildError::Push(_))
    }
}

/// An image built.
#[derive(Debug, Clone)]
pub struct Built {
    /// `matchfarm-bots/NAME:DIGEST`, DIGEST the first 32 hex digits of [`Source::digest`].
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

/// Builds `source` as bot `name`'s image: no network for its steps, no pull, each step
/// within `limits.memory_mib`, the whole within `limits.build_secs`, the image within
/// `limits.max_image_mib`.
pub async fn build(
    docker: &Docker,
    source: &Source,
    name: &str,
    limits: BuildLimits,
    log: &mut BuildLog,
) -> Result<Built, BuildError> {
    let digest = source.digest();
    let tag = format!("{}/{name}:{}", farm_proto::SUBMITTED_REPOSITORY, &digest[..32]);
    let memory = i32::try_from(u64::from(limits.memory_mib) << 20).unwrap_or(i32::MAX);
    let options = BuildImageOptions {
        dockerfile: "Dockerfile".to_owned(),
        t: Some(tag.clone()),
        networkmode: Some("none".to_owned()),
        rm: true,
        forcerm: true,
        memory: Some(memory),
        memswap: Some(memory),
        cpuperiod: Some(CPU_PERIOD_US),
        cpuquota: Some(
            i32::try_from(i64::from(limits.cpu_millis) * i64::from(CPU_PERIOD_US) / 1000).unwrap_or(i32::MAX),
        ),
        labels: Some([("matchfarm.source".to_owned(), digest.clone())].into()),
        ..Default::default()
    };
    let body = bollard::body_full(bytes::Bytes::from(source.context()));
    let steps = async {
        let mut stream = docker.build_image(options, None, Some(body));
        while let Some(info) = stream.next().await {
            let info = match info {
                Ok(info) => info,
                // A step that failed: the engine's message is the build's failure.
                Err(bollard::errors::Error::DockerStreamError { error }) => {
                    log.push(&error);
                    return Err(BuildError::Failed(error));
                }
                Err(error) => return Err(error.into()),
            };
            if let Some(text) = &info.stream {
                log.push(text);
            }
            if let Some(detail) = info.error_detail {
                let message = detail.message.unwrap_or_default();
                log.push(&message);
                return Err(BuildError::Failed(message));
            }
        }
        Ok(())
    };
    tokio::time::timeout(Duration::from_secs(limits.build_secs), steps)
        .await
        .map_err(|_| BuildError::TimedOut(limits.build_secs))??;
    let image = docker.inspect_image(&tag).await?;
    let size = image.size.unwrap_or_default().max(0) as u64;
    if size > limits.max_image_mib << 20 {
        let options = RemoveImageOptions { force: true, ..Default::default() };
        docker.remove_image(&tag, Some(options), None).await?;
        return Err(BuildError::TooLarge { size_mib: size >> 20, limit_mib: limits.max_image_mib });
    }
    Ok(Built { tag, image_id: image.id.unwrap_or_default(), size })
}

/// Pushes `built` to `registry` (`HOST:PORT`) and gives the reference workers pull it
/// by: `REGISTRY/matchfarm-bots/NAME@sha256:...`, its content digest, which no later
/// push can change.
pub async fn push(docker: &Docker, built: &Built, registry: &str) -> Result<String, BuildError> {
    let (repository, tag) = built.tag.rsplit_once(':').unwrap_or((&built.tag, "latest"));
    let remote = format!("{registry}/{repository}");
    let options = TagImageOptions { repo: Some(remote.clone()), tag: Some(tag.to_owned()) };
    docker.tag_image(&built.tag, Some(options)).await?;
    let mut stream =
        docker.push_image(&remote, Some(PushImageOptions { tag: Some(tag.to_owned()), platform: None }), None);
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
    let by_digest = image
        .repo_digests
        .unwrap_or_default()
        .into_iter()
        .find(|digest| digest.starts_with(&format!("{remote}@")))
        .ok_or_else(|| BuildError::Push(format!("the engine has no digest of {remote} after the push")))?;
    // The registry holds it now: the builder's engine keeps no tag of its own, so its
    // disk holds what matches pull, not every build ever made.
    for local in [built.tag.clone(), format!("{remote}:{tag}")] {
        let options = RemoveImageOptions { noprune: false, ..Default::default() };
        if let Err(error) = docker.remove_image(&local, Some(options), None).await {
            tracing::warn!(image = %local, %error, "removing a pushed build's tag");
        }
    }
    Ok(by_digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_of(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, kind, data, link) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_mode(0o644);
            header.set_size(data.len() as u64);
            // Written raw: the tar crate's own checks would refuse some of these paths.
            let name = header.as_old_mut();
            name.name[..path.len()].copy_from_slice(path.as_bytes());
            if let Some(link) = link {
                header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
            header.set_cksum();
            builder.append(&header, *data).expect("append");
        }
        builder.into_inner().expect("tar")
    }

    const FILE: tar::EntryType = tar::EntryType::Regular;

    #[test]
    fn a_python_bot_has_its_layout_and_a_stable_digest() {
        let archive = tar_of(&[("./bot.py", FILE, b"print('hi')", None), ("lib/util.py", FILE, b"x = 1", None)]);
        let source = Source::read_archive(&archive, SourceLimits::default()).expect("valid");
        assert_eq!(source.layout(), Layout::Python);
        let again = Source::read_archive(&archive, SourceLimits::default()).expect("valid");
        assert_eq!(source.digest(), again.digest());
        let context = String::from_utf8_lossy(&source.context()).into_owned();
        assert!(context.contains("python3") && context.contains("matchfarm/base-debian"), "the farm's Dockerfile");
        let other = tar_of(&[("bot.py", FILE, b"print('bye')", None)]);
        assert_ne!(Source::read_archive(&other, SourceLimits::default()).expect("valid").digest(), source.digest());
    }

    #[test]
    fn paths_and_links_out_of_the_root_are_refused() {
        let limits = SourceLimits::default();
        for (archive, expected) in [
            (tar_of(&[("bot.py", FILE, b"", None), ("../evil.py", FILE, b"", None)]), "must stay inside"),
            (tar_of(&[("bot.py", FILE, b"", None), ("/etc/cron.d/x", FILE, b"", None)]), "must stay inside"),
            (tar_of(&[("bot.py", FILE, b"", None), ("a/../../x", FILE, b"", None)]), "must stay inside"),
            (
                tar_of(&[("bot.py", FILE, b"", None), ("passwd", tar::EntryType::Symlink, b"", Some("/etc/passwd"))]),
                "out of the source",
            ),
            (
                tar_of(&[("bot.py", FILE, b"", None), ("d/up", tar::EntryType::Symlink, b"", Some("../../x"))]),
                "out of the source",
            ),
            (tar_of(&[("bot.py", FILE, b"", None), ("h", tar::EntryType::Link, b"", Some("bot.py"))]), "hard link"),
            (tar_of(&[("bot.py", FILE, b"", None), ("dev", tar::EntryType::Char, b"", None)]), "device"),
            (tar_of(&[("bot.py", FILE, b"", None), ("./bot.py", FILE, b"", None)]), "appears twice"),
            (tar_of(&[("README", FILE, b"", None)]), "no Dockerfile, bot.py, bot.js or Cargo.toml"),
            (b"not a tar at all, but long enough to look at: ".repeat(20), "not a tar archive"),
        ] {
            let error = Source::read_archive(&archive, limits).expect_err(expected);
            assert!(error.to_string().contains(expected), "{expected}: {error}");
        }
        // A link inside is fine.
        let inside =
            tar_of(&[("bot.py", FILE, b"", None), ("d/same", tar::EntryType::Symlink, b"", Some("../bot.py"))]);
        assert!(Source::read_archive(&inside, limits).is_ok());
    }

    #[test]
    fn sizes_and_counts_are_bounded_even_when_compressed() {
        let limits = SourceLimits { max_files: 3, max_bytes: 1000 };
        let many = tar_of(&[
            ("bot.py", FILE, b"", None),
            ("a", FILE, b"", None),
            ("b", FILE, b"", None),
            ("c", FILE, b"", None),
        ]);
        assert!(matches!(Source::read_archive(&many, limits), Err(SourceError::TooManyFiles(3))));
        // A megabyte of zeros gzips to about a kilobyte: it is stopped at the bound.
        let zeros = vec![0u8; 1 << 20];
        let big = tar_of(&[("bot.py", FILE, &zeros, None)]);
        let mut gzipped = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut gzipped, &big).expect("gzip");
        let gzipped = gzipped.finish().expect("gzip");
        assert!(gzipped.len() < 4096, "{}", gzipped.len());
        assert!(matches!(Source::read_archive(&gzipped, limits), Err(SourceError::TooLarge(1000))));
    }

    #[test]
    fn dockerfiles_fetch_nothing_from_outside_the_source() {
        let base = "FROM matchfarm/base-debian AS build\n";
        for (rest, expected) in [
            ("COPY --from=127.0.0.1:5055/matchfarm-bots/x@sha256:00 /bot /x\n", "line 2: COPY --from=127.0.0.1:5055"),
            ("COPY --from=python:3.12 / /\n", "copies come from an earlier stage only"),
            ("ADD http://169.254.169.254/latest /x\n", "line 2: ADD http://169.254.169.254/latest /x: a build fetches"),
            ("ADD [\"https://example.org/a\", \"/a\"]\n", "a build fetches nothing"),
            ("ADD git@github.com:a/b.git /b\n", "a build fetches nothing"),
            ("RUN true\nADD \\\n  http://x/y \\\n  /y\n", "line 3: ADD"),
            ("FR\\\nOM python:3.12\n", "line 2: FROM python:3.12"),
            ("# escape=`\n", "parser directives are not accepted"),
            ("#syntax=evil/frontend\n", "parser directives are not accepted"),
        ] {
            let error = check_dockerfile(&format!("{base}{rest}")).expect_err(rest);
            assert!(error.to_string().contains(expected), "{rest}: {error}");
        }
        // Earlier stages, by name or index, and a comment inside a continuation, are fine.
        let fine = "FROM matchfarm/base-debian AS build\nRUN a \\\n# note\n  b\nFROM scratch\n\
                    COPY --from=build /x /x\nCOPY --from=0 /y /y\nADD local.tar /z\n";
        assert!(check_dockerfile(fine).is_ok());
        assert!(check_dockerfile("FROM scratch\nCOPY --from=1 /x /x\n").is_err(), "no stage 1 yet");
    }

    #[test]
    fn dockerfiles_start_from_the_farms_bases_only() {
        assert!(check_dockerfile("FROM matchfarm/base-debian:latest\nRUN true\n").is_ok());
        assert!(check_dockerfile("FROM --platform=linux/amd64 matchfarm/base-static AS build\nFROM build\n").is_ok());
        assert!(check_dockerfile("from scratch\nCOPY bot /bot\n").is_ok());
        let error = check_dockerfile("# a bot\nFROM python:3.12\n").expect_err("a registry image");
        assert_eq!(error.to_string().split(':').next(), Some("Dockerfile line 2"));
        assert!(check_dockerfile("FROM matchfarm/base-debian AS a\nFROM ubuntu\n").is_err());
    }
}
