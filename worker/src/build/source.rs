//! What a build reads and writes as files: a checked tree of entries ([`Tree`]), read
//! from a directory or a tar archive and written back as a canonical tar. An author's
//! source is one ([`Source`]: a tree and the layout that builds it), and so is what the
//! toolchain container gives back (the artifact): both come from outside the farm and
//! are held to the same rules: at most [`SourceLimits::max_files`] entries and
//! [`SourceLimits::max_bytes`] in all, regular files, directories and symbolic links
//! only, no path leaving the root (absolute, `..`), no link pointing out of it, no hard
//! links. The tar written is canonical (entries sorted, owners and times zeroed, modes
//! 0644 or 0755), so the same tree always has the same digest.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::layout::{LAYOUTS, Layout};
use farm_proto::limits;

/// How much a tree may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SourceLimits {
    /// Entries (files, directories, links).
    pub max_files: usize,
    /// Bytes of all files together.
    pub max_bytes: u64,
}

impl SourceLimits {
    /// The largest archive that can hold a tree within these bounds: its files, and a
    /// header and padding for each entry (1 KiB each, at most), and the end blocks.
    pub fn max_archive_bytes(&self) -> u64 {
        self.max_bytes + (self.max_files as u64) * 1024 + 10 * 1024
    }
}

impl Default for SourceLimits {
    fn default() -> Self {
        SourceLimits { max_files: limits::SOURCE_MAX_FILES.default, max_bytes: limits::SOURCE_MAX_BYTES.default }
    }
}

/// A tree that cannot be taken, and why; every message names the entry.
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
    /// No layout's marker.
    #[error("nothing says how to build it: {}", layouts_help())]
    NoLayout,
}

/// The layouts and their markers, as a 400 names them.
fn layouts_help() -> String {
    let each: Vec<String> = LAYOUTS.iter().map(|layout| format!("{} ({})", layout.name, layout.marker)).collect();
    format!("a source is built in one of the layouts {}, the first that matches", each.join(", "))
}

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File { data: Vec<u8>, executable: bool },
    Directory,
    Link { target: String },
}

/// Checked entries by plain path (components joined by `/`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    entries: BTreeMap<String, Entry>,
    bytes: u64,
}

/// Adds entries within limits, checking each path.
struct Collector {
    tree: Tree,
    limits: SourceLimits,
}

impl Collector {
    fn new(limits: SourceLimits) -> Self {
        Collector { tree: Tree::default(), limits }
    }

    fn add(&mut self, path: &str, entry: Entry) -> Result<(), SourceError> {
        let path = plain_path(path)?;
        if path.is_empty() {
            return Ok(());
        }
        if let Entry::File { data, .. } = &entry {
            self.room_for(data.len() as u64)?;
            self.tree.bytes += data.len() as u64;
        }
        if let Entry::Link { target } = &entry
            && !link_stays_inside(&path, target)
        {
            return Err(SourceError::LinkOutside { path, target: target.clone() });
        }
        if self.tree.entries.len() >= self.limits.max_files {
            return Err(SourceError::TooManyFiles(self.limits.max_files));
        }
        if self.tree.entries.insert(path.clone(), entry).is_some() {
            return Err(SourceError::Duplicate(path));
        }
        Ok(())
    }

    /// `Ok` when a file of `size` bytes more stays within the bound: checked before
    /// the file is read.
    fn room_for(&self, size: u64) -> Result<(), SourceError> {
        match self.tree.bytes.checked_add(size) {
            Some(total) if total <= self.limits.max_bytes => Ok(()),
            _ => Err(SourceError::TooLarge(self.limits.max_bytes)),
        }
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

fn archive_error(error: std::io::Error) -> SourceError {
    SourceError::Archive(error.to_string())
}

impl Tree {
    /// The tree in directory `root`, without following links.
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
                    collector.room_for(metadata.len())?;
                    let data = std::fs::read(child.path()).map_err(io)?;
                    let executable = std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o111 != 0;
                    collector.add(&name, Entry::File { data, executable })?;
                } else {
                    return Err(SourceError::Special(name));
                }
            }
        }
        Ok(collector.tree)
    }

    /// The tree in a tar archive, gzipped or not, read from `reader`.
    pub fn read_archive(reader: impl Read, limits: SourceLimits) -> Result<Self, SourceError> {
        let mut reader = std::io::BufReader::new(reader);
        let gzipped = std::io::BufRead::fill_buf(&mut reader).map_err(archive_error)?.starts_with(&[0x1f, 0x8b]);
        let reader: Box<dyn Read + '_> =
            if gzipped { Box::new(flate2::read::GzDecoder::new(reader)) } else { Box::new(reader) };
        // A few blocks over the files' bound for the headers: a decompression bomb
        // stops there.
        let bound = limits.max_bytes + (limits.max_files as u64 + 2) * 1024;
        let mut archive = tar::Archive::new(reader.take(bound));
        let mut collector = Collector::new(limits);
        for entry in archive.entries().map_err(archive_error)? {
            let mut entry = entry.map_err(archive_error)?;
            let name = entry.path().map_err(archive_error)?.to_string_lossy().into_owned();
            let kind = entry.header().entry_type();
            if kind.is_dir() {
                collector.add(&name, Entry::Directory)?;
            } else if kind.is_symlink() {
                let target = entry
                    .link_name()
                    .map_err(archive_error)?
                    .map(|target| target.to_string_lossy().into_owned())
                    .unwrap_or_default();
                collector.add(&name, Entry::Link { target })?;
            } else if kind.is_file() {
                collector.room_for(entry.size())?;
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
        Ok(collector.tree)
    }

    /// Whether `path` is a regular file of the tree.
    pub fn has_file(&self, path: &str) -> bool {
        matches!(self.entries.get(path), Some(Entry::File { .. }))
    }

    /// The paths of the tree's regular files, sorted.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().filter(|(_, entry)| matches!(entry, Entry::File { .. })).map(|(path, _)| path.as_str())
    }

    /// Bytes of all its files together.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Appends every entry to `builder`, each path under `prefix` (`""`, or a
    /// directory name ending in `/`), canonically.
    pub fn append_to<W: std::io::Write>(&self, builder: &mut tar::Builder<W>, prefix: &str) -> std::io::Result<()> {
        for (path, entry) in &self.entries {
            let path = format!("{prefix}{path}");
            match entry {
                Entry::Directory => append(builder, &path, tar::EntryType::Directory, 0o755, &[], None)?,
                Entry::File { data, executable } => {
                    let mode = if *executable { 0o755 } else { 0o644 };
                    append(builder, &path, tar::EntryType::Regular, mode, data, None)?;
                }
                Entry::Link { target } => append(builder, &path, tar::EntryType::Symlink, 0o777, &[], Some(target))?,
            }
        }
        Ok(())
    }

    /// The tree as a canonical tar.
    pub fn archive(&self) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        // Writing to memory cannot fail, and every path and link was checked plain.
        self.append_to(&mut builder, "").expect("a checked tree is written to memory");
        builder.into_inner().expect("a tar in memory")
    }
}

/// Appends one canonical entry (owner 0, time 0) to `builder`.
pub(super) fn append<W: std::io::Write>(
    builder: &mut tar::Builder<W>,
    path: &str,
    kind: tar::EntryType,
    mode: u32,
    data: &[u8],
    link: Option<&str>,
) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(data.len() as u64);
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    match link {
        Some(link) => builder.append_link(&mut header, path, link),
        None => builder.append_data(&mut header, path, data),
    }
}

/// An author's source: a checked tree, and the layout that builds it (the first in
/// [`LAYOUTS`] whose marker it has).
#[derive(Debug, Clone)]
pub struct Source {
    tree: Tree,
    layout: &'static Layout,
}

impl Source {
    /// The source `tree`, in the first layout whose marker it has.
    pub fn new(tree: Tree) -> Result<Self, SourceError> {
        let layout = LAYOUTS.iter().find(|layout| layout.matches(&tree)).ok_or(SourceError::NoLayout)?;
        Ok(Source { tree, layout })
    }

    /// The source in directory `root`, without following links.
    pub fn read_dir(root: &Path, limits: SourceLimits) -> Result<Self, SourceError> {
        Source::new(Tree::read_dir(root, limits)?)
    }

    /// The source in a tar archive, gzipped or not.
    pub fn read_archive(bytes: &[u8], limits: SourceLimits) -> Result<Self, SourceError> {
        Source::new(Tree::read_archive(bytes, limits)?)
    }

    /// How it is built.
    pub fn layout(&self) -> &'static Layout {
        self.layout
    }

    /// Its files.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The source as a canonical tar: what an upload sends, and what the toolchain
    /// container reads.
    pub fn archive(&self) -> Vec<u8> {
        self.tree.archive()
    }

    /// [`Source::archive`], and the SHA-256, in hex, of the layout's name and that
    /// archive: what the image is tagged by. One archive serves both, since a build
    /// needs the two.
    pub fn archive_and_digest(&self) -> (Vec<u8>, String) {
        let archive = self.archive();
        let mut hash = Sha256::new();
        hash.update(self.layout.name.as_bytes());
        hash.update([0]);
        hash.update(&archive);
        (archive, hex::encode(hash.finalize()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::LAYOUTS;

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
        assert_eq!(source.layout().name, "python");
        let again = Source::read_archive(&archive, SourceLimits::default()).expect("valid");
        assert_eq!(source.archive_and_digest().1, again.archive_and_digest().1);
        let other = tar_of(&[("bot.py", FILE, b"print('bye')", None)]);
        assert_ne!(
            Source::read_archive(&other, SourceLimits::default()).expect("valid").archive_and_digest().1,
            source.archive_and_digest().1
        );
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
            (tar_of(&[("README", FILE, b"", None)]), "nothing says how to build it"),
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
    fn a_layout_is_chosen_by_the_first_marker_in_the_table() {
        let layout = |entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]| {
            Source::read_archive(&tar_of(entries), SourceLimits::default()).map(|source| source.layout().name)
        };
        assert_eq!(layout(&[("bot.js", FILE, b"", None), ("Makefile", FILE, b"", None)]).ok(), Some("javascript"));
        assert_eq!(layout(&[("Cargo.toml", FILE, b"", None), ("bot.py", FILE, b"", None)]).ok(), Some("python"));
        assert_eq!(layout(&[("go.mod", FILE, b"", None)]).ok(), Some("go"));
        assert_eq!(layout(&[("Makefile", FILE, b"", None), ("src/Bot.java", FILE, b"", None)]).ok(), Some("c-cpp"));
        assert_eq!(layout(&[("src/a/b/Bot.java", FILE, b"", None)]).ok(), Some("java"));
        assert!(layout(&[("srcBot.java", FILE, b"", None)]).is_err(), "under src/ only");
        assert!(layout(&[("bot.py", tar::EntryType::Directory, b"", None)]).is_err(), "a file, not a directory");
    }

    /// Each of these Dockerfiles passed the text check that stood before the farm
    /// compiled sources itself, and then made the engine fetch, pull or read past the
    /// build; an author's Dockerfile is now a file like any other, and alone it is no
    /// source at all.
    #[test]
    fn an_authors_dockerfile_is_no_layout() {
        for dockerfile in [
            "FROM matchfarm/base-debian\nARG U=http://127.0.0.1:18777/secret.txt\nADD ${U} /loot\nRUN cat /loot\n",
            "FROM matchfarm/base-debian\nRUN true \\\n\n  && true\nCOPY --from=127.0.0.1:5000/x /x /x\n",
            "FROM matchfarm/base-debian\nRUN true \\\x0b\nCOPY --from=python / /\n",
            "#escape\t=`\nFROM matchfarm/base-debian\nADD http://127.0.0.1:18777/ /x\n",
            "FROM matchfarm/base-debian AS python\nFROM python:latest\n",
            "FROM --platform=linux/arm64 matchfarm/base-debian\n",
        ] {
            let archive = tar_of(&[("Dockerfile", FILE, dockerfile.as_bytes(), None)]);
            let error = Source::read_archive(&archive, SourceLimits::default()).expect_err(dockerfile).to_string();
            for layout in LAYOUTS {
                assert!(error.contains(layout.name), "{error}");
            }
        }
    }
}
