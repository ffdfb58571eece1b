//! A tournament as a dataset: `farm-coordinator export TOURNAMENT --out DIR
//! [--replays]`, and `GET /api/tournaments/{id}/export[?replays=true]` (admins), which
//! the command unpacks.
//!
//! The archive is a tar stream, written as the ledger is read a page at a time, so a
//! season of a million matches never sits in memory:
//! - `results/part-NNNNN.jsonl`: one [`ExportedMatch`] per line, in schedule order,
//!   parts of about [`PART_BYTES`];
//! - `replays/JOB.jsonl.zst` with `--replays`: each completed match's replay as
//!   stored (zstd), whose identity (SHA-256 of its untimed lines) its line gives;
//! - `manifest.json` last ([`Manifest`]): the counts, and each part's size, lines and
//!   SHA-256.
//!
//! Each seat's rating before and after its match is Weng-Lin's, applied in schedule
//! order (new versions of a ladder's bots starting from their predecessors'), the
//! ladder's own rating; other formats' standings rate differently and are not
//! sequential. [`check`] is the re-import check: every part's checksum and line
//! count, every line read back, every replay's checksum.

use std::io::BufRead;
use std::path::Path;

use bytes::Bytes;
use farm_proto::MatchResult;
use farm_runtime::storage::Storage;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::ledger::{Ledger, LedgerError};
use crate::ratings::WengLinStates;
use crate::tournament::Tournament;

/// About how many bytes of result lines each part holds (a part ends at the first
/// line past it).
pub const PART_BYTES: usize = 1 << 20;
/// Matches read from the ledger at a time.
const PAGE: u32 = 1000;
/// What [`Manifest::format`] says of this layout.
pub const FORMAT: u32 = 1;

/// One match, as a line of `results/part-*.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedMatch {
    /// Its position in the schedule.
    pub position: u64,
    /// Its job id.
    pub job_id: String,
    /// `done`, `failed`, `cancelled`, or not yet answered (`pending`, `running`).
    pub state: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its seats, in seat order.
    pub seats: Vec<ExportedSeat>,
    /// Steps played (completed matches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<u64>,
    /// The replay's file in the export (with `--replays`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// The replay's identity (completed matches): SHA-256 of its lines without their
    /// clock readings ([`farm_engine::replay::digest`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_sha256: Option<String>,
}

/// One seat of an exported match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExportedSeat {
    /// The tournament's bot (none for a seat the game filled itself).
    pub bot: Option<String>,
    /// Its score, rank (1 best), status and timeouts, once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
    /// Its rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// How it ended (`ok`, `timed_out`, `crashed`, `disqualified`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Its requests that timed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<u64>,
    /// Its (mu, sigma) before the match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_before: Option<(f64, f64)>,
    /// Its (mu, sigma) after it (a completed match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_after: Option<(f64, f64)>,
}

/// `manifest.json`: what the export holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The layout ([`FORMAT`]).
    pub format: u32,
    /// The tournament's id, name and game.
    pub tournament: String,
    /// Its name.
    pub name: String,
    /// Its game.
    pub game: String,
    /// Matches exported (lines).
    pub matches: u64,
    /// Of them, completed.
    pub completed: u64,
    /// Replays exported.
    pub replays: u64,
    /// How the seats' ratings were computed.
    pub rating: String,
    /// The result parts, in order.
    pub parts: Vec<Part>,
}

/// One part of the results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// Its path in the export.
    pub path: String,
    /// Its size.
    pub bytes: u64,
    /// Its lines.
    pub lines: u64,
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
}

/// What can go wrong making or checking an export.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The ledger failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The object store failed (a replay).
    #[error("replay {key}: {message}")]
    Storage {
        /// The replay's key.
        key: String,
        /// What failed.
        message: String,
    },
    /// Reading or writing the export's files.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The export is not what its manifest says.
    #[error("{0}")]
    Mismatch(String),
    /// The reader of the archive went away.
    #[error("the archive's reader went away")]
    Gone,
}

/// The archive of `tournament` as a stream of bytes: written by a task as it is
/// read, at most a few chunks ahead of its reader; an error ends it with an error.
pub fn archive(
    ledger: Ledger,
    storage: Storage,
    tournament: Tournament,
    replays: bool,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    // Two chunks ahead (a part is one chunk): the export's memory is a few parts.
    let (sender, mut receiver) = mpsc::channel(2);
    tokio::spawn(async move {
        let mut writer = TarWriter { sender: sender.clone() };
        if let Err(error) = write_archive(&ledger, &storage, &tournament, replays, &mut writer).await {
            tracing::warn!(tournament = %tournament.id, %error, "export stopped");
            let _ = sender.send(Err(std::io::Error::other(error.to_string()))).await;
        }
    });
    futures_util::stream::poll_fn(move |context| receiver.poll_recv(context))
}

/// Writes tar entries into a channel.
struct TarWriter {
    sender: mpsc::Sender<Result<Bytes, std::io::Error>>,
}

impl TarWriter {
    async fn send(&mut self, bytes: Bytes) -> Result<(), ExportError> {
        self.sender.send(Ok(bytes)).await.map_err(|_| ExportError::Gone)
    }

    /// The header of a file `path` of `size` bytes.
    async fn header(&mut self, path: &str, size: u64) -> Result<(), ExportError> {
        let mut header = tar::Header::new_ustar();
        header.set_path(path).map_err(|source| ExportError::Io { path: path.to_owned(), source })?;
        header.set_size(size);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        self.send(Bytes::copy_from_slice(header.as_bytes())).await
    }

    /// Pads a file of `size` bytes to the next 512-byte block.
    async fn pad(&mut self, size: u64) -> Result<(), ExportError> {
        let padding = (512 - size % 512) % 512;
        self.send(Bytes::from(vec![0u8; padding as usize])).await
    }

    async fn file(&mut self, path: &str, bytes: Vec<u8>) -> Result<(), ExportError> {
        let size = bytes.len() as u64;
        self.header(path, size).await?;
        self.send(Bytes::from(bytes)).await?;
        self.pad(size).await
    }

    /// The two zero blocks that end a tar archive.
    async fn finish(&mut self) -> Result<(), ExportError> {
        self.send(Bytes::from(vec![0u8; 1024])).await
    }
}

async fn write_archive(
    ledger: &Ledger,
    storage: &Storage,
    tournament: &Tournament,
    replays: bool,
    writer: &mut TarWriter,
) -> Result<(), ExportError> {
    let mut ratings = WengLinStates::new(tournament.bots.len(), &tournament.predecessors());
    let mut manifest = Manifest {
        format: FORMAT,
        tournament: tournament.id.clone(),
        name: tournament.name.clone(),
        game: tournament.game.name().to_owned(),
        matches: 0,
        completed: 0,
        replays: 0,
        rating: "Weng-Lin (mu, sigma) applied in schedule order".to_owned(),
        parts: Vec::new(),
    };
    let mut part = Vec::with_capacity(PART_BYTES + 64 * 1024);
    let mut lines = 0u64;
    let mut after = None;
    loop {
        let page = ledger.export_page(&tournament.id, after, PAGE).await?;
        let Some((last, _)) = page.last() else { break };
        after = Some(last.position);
        for (job, envelope) in page {
            let (steps, replay_key, replay_sha256) = match envelope.map(|envelope| envelope.result) {
                Some(MatchResult::Completed { steps, replay_key, replay_sha256, .. }) => {
                    (Some(steps), Some(replay_key), Some(replay_sha256))
                }
                _ => (None, None, None),
            };
            let before: Vec<Option<(f64, f64)>> =
                job.outcomes.iter().map(|seat| seat.bot.map(|bot| ratings.prior(bot))).collect();
            if !job.outcomes.is_empty() {
                ratings.apply(&job.ranks());
                manifest.completed += 1;
            }
            let name = |bot: usize| tournament.bots.get(bot).map(|entry| entry.name.clone());
            let seats = if job.outcomes.is_empty() {
                job.seats.iter().map(|&bot| ExportedSeat { bot: name(bot), ..ExportedSeat::default() }).collect()
            } else {
                job.outcomes
                    .iter()
                    .zip(before)
                    .map(|(seat, before)| ExportedSeat {
                        bot: seat.bot.and_then(name),
                        score: Some(seat.score),
                        rank: Some(seat.rank),
                        status: Some(seat.status.name().to_owned()),
                        timeouts: Some(seat.timeouts),
                        rating_before: before,
                        rating_after: seat.bot.map(|bot| ratings.state(bot)),
                    })
                    .collect()
            };
            let replay = match (&replay_key, replays) {
                (Some(key), true) => {
                    let path = format!("replays/{}.jsonl.zst", job.job_id);
                    copy_replay(storage, key, &path, writer).await?;
                    manifest.replays += 1;
                    Some(path)
                }
                _ => None,
            };
            let line = ExportedMatch {
                position: job.position,
                job_id: job.job_id,
                state: job.state.name().to_owned(),
                reason: job.reason,
                seats,
                steps,
                replay,
                replay_sha256,
            };
            serde_json::to_writer(&mut part, &line).map_err(|error| ExportError::Mismatch(error.to_string()))?;
            part.push(b'\n');
            lines += 1;
            manifest.matches += 1;
            if part.len() >= PART_BYTES {
                emit_part(&mut manifest, std::mem::take(&mut part), lines, writer).await?;
                lines = 0;
            }
        }
    }
    if lines > 0 || manifest.parts.is_empty() {
        emit_part(&mut manifest, part, lines, writer).await?;
    }
    let manifest = serde_json::to_vec_pretty(&manifest).map_err(|error| ExportError::Mismatch(error.to_string()))?;
    writer.file("manifest.json", manifest).await?;
    writer.finish().await
}

/// Writes a part of the results and lists it in `manifest`.
async fn emit_part(
    manifest: &mut Manifest,
    bytes: Vec<u8>,
    lines: u64,
    writer: &mut TarWriter,
) -> Result<(), ExportError> {
    let path = format!("results/part-{:05}.jsonl", manifest.parts.len() + 1);
    let sha256 = hex::encode(Sha256::digest(&bytes));
    manifest.parts.push(Part { path: path.clone(), bytes: bytes.len() as u64, lines, sha256 });
    writer.file(&path, bytes).await
}

/// Streams the stored replay `key` into the archive as `path`.
async fn copy_replay(storage: &Storage, key: &str, path: &str, writer: &mut TarWriter) -> Result<(), ExportError> {
    let failed = |error: farm_runtime::storage::StorageError| ExportError::Storage {
        key: key.to_owned(),
        message: error.to_string(),
    };
    let size = storage.size(key).await.map_err(failed)?;
    writer.header(path, size).await?;
    let mut stream = storage.stream(key).await.map_err(failed)?;
    let mut sent = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(failed)?;
        sent += chunk.len() as u64;
        if sent > size {
            return Err(ExportError::Mismatch(format!("replay {key} grew while it was exported")));
        }
        writer.send(chunk).await?;
    }
    if sent != size {
        return Err(ExportError::Mismatch(format!("replay {key}: {sent} bytes read of {size}")));
    }
    writer.pad(size).await
}

/// What [`check`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// Lines read back.
    pub matches: u64,
    /// Parts whose checksum matched.
    pub parts: usize,
    /// Replays whose checksum matched.
    pub replays: u64,
}

/// The re-import check of the export in `dir`: every part is the size, line count and
/// SHA-256 its manifest says, every line reads back as an [`ExportedMatch`], and every
/// replay it names decompresses to its SHA-256. Reads a line and a replay at a time.
pub fn check(dir: &Path) -> Result<Checked, ExportError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| ExportError::Io { path, source }
    };
    let manifest_path = dir.join("manifest.json");
    let manifest: Manifest = serde_json::from_slice(&std::fs::read(&manifest_path).map_err(io(&manifest_path))?)
        .map_err(|error| ExportError::Mismatch(format!("manifest.json: {error}")))?;
    if manifest.format != FORMAT {
        return Err(ExportError::Mismatch(format!("manifest.json: format {}, not {FORMAT}", manifest.format)));
    }
    let mut checked = Checked { matches: 0, parts: 0, replays: 0 };
    for part in &manifest.parts {
        let path = dir.join(&part.path);
        let mut reader = std::io::BufReader::new(std::fs::File::open(&path).map_err(io(&path))?);
        let mut digest = Sha256::new();
        let (mut bytes, mut lines, mut line) = (0u64, 0u64, String::new());
        loop {
            line.clear();
            let read = reader.read_line(&mut line).map_err(io(&path))?;
            if read == 0 {
                break;
            }
            digest.update(line.as_bytes());
            bytes += read as u64;
            lines += 1;
            let exported: ExportedMatch = serde_json::from_str(&line)
                .map_err(|error| ExportError::Mismatch(format!("{} line {lines}: {error}", part.path)))?;
            if let (Some(replay), Some(sha256)) = (&exported.replay, &exported.replay_sha256) {
                check_replay(&dir.join(replay), sha256)?;
                checked.replays += 1;
            }
        }
        let sha256 = hex::encode(digest.finalize());
        if (bytes, lines, sha256.as_str()) != (part.bytes, part.lines, part.sha256.as_str()) {
            return Err(ExportError::Mismatch(format!(
                "{}: {bytes} bytes, {lines} lines, SHA-256 {sha256}; the manifest says {}, {}, {}",
                part.path, part.bytes, part.lines, part.sha256
            )));
        }
        checked.matches += lines;
        checked.parts += 1;
    }
    if checked.matches != manifest.matches || checked.replays != manifest.replays {
        return Err(ExportError::Mismatch(format!(
            "{} matches and {} replays read; the manifest says {} and {}",
            checked.matches, checked.replays, manifest.matches, manifest.replays
        )));
    }
    Ok(checked)
}

/// Whether the zstd replay at `path` is the replay `sha256` identifies: its lines,
/// without their clock readings, hash to it ([`farm_engine::replay::digest`]).
fn check_replay(path: &Path, sha256: &str) -> Result<(), ExportError> {
    let io = |source| ExportError::Io { path: path.display().to_string(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut lines = std::io::BufReader::new(zstd::stream::read::Decoder::new(file).map_err(io)?);
    let mut hasher = farm_engine::replay::LineHasher::default();
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).map_err(io)? == 0 {
            break;
        }
        hasher.line(&farm_engine::replay::untimed(line.trim_end_matches('\n')));
    }
    let found = hasher.finish();
    if found != sha256 {
        return Err(ExportError::Mismatch(format!("{}: SHA-256 {found}, its line says {sha256}", path.display())));
    }
    Ok(())
}
