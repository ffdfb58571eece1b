//! Object storage for replays, bot logs and result documents: a local directory by
//! default, S3 in distributed mode.
//!
//! Keys derive from the tournament, the job, the attempt and a run id:
//! `tournaments/{tournament}/jobs/{job}/attempt-{n}-{run}/{replay.jsonl.zst,seat-{k}.stderr.log,result.json}`.
//! The run id makes every execution's keys its own (a job republished by the
//! coordinator starts again at attempt 1), and objects are created, never
//! overwritten: no run can replace another's result.

use std::sync::Arc;
use std::time::Duration;

use async_compression::tokio::write::ZstdEncoder;
use object_store::aws::AmazonS3Builder;
use object_store::buffered::BufWriter;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig};
use serde::{Deserialize, Serialize};

/// Where objects go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum StorageConfig {
    /// A directory on this machine (created if missing).
    Local {
        /// The directory.
        path: std::path::PathBuf,
    },
    /// An S3-compatible service.
    S3 {
        /// The endpoint URL, e.g. `http://127.0.0.1:9000`; empty for AWS itself.
        #[serde(default)]
        endpoint: String,
        /// The bucket (it must exist).
        bucket: String,
        /// The region.
        #[serde(default = "default_region")]
        region: String,
        /// Access key id; empty to take it from `AWS_ACCESS_KEY_ID`.
        #[serde(default)]
        access_key: String,
        /// Secret key; empty to take it from `AWS_SECRET_ACCESS_KEY`.
        #[serde(default)]
        secret_key: String,
        /// How long one request may keep retrying (with backoff) before the job is
        /// requeued.
        #[serde(default = "default_retry_secs", deserialize_with = "number_or_text")]
        retry_secs: u64,
    },
}

fn default_retry_secs() -> u64 {
    60
}

/// Environment variables arrive as text, and inside this internally tagged table
/// serde cannot turn text into a number by itself: accept both.
fn number_or_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumberOrText {
        Number(u64),
        Text(String),
    }
    match NumberOrText::deserialize(deserializer)? {
        NumberOrText::Number(number) => Ok(number),
        NumberOrText::Text(text) => text.trim().parse().map_err(serde::de::Error::custom),
    }
}

fn default_region() -> String {
    "us-east-1".to_owned()
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig::Local { path: "farm-data/objects".into() }
    }
}

/// A storage operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The object already exists: another attempt wrote it first.
    #[error("{key} already exists")]
    AlreadyExists {
        /// The key.
        key: String,
    },
    /// Nothing is stored at the key.
    #[error("{key} not found")]
    NotFound {
        /// The key.
        key: String,
    },
    /// The store failed or could not be reached.
    #[error("object storage: {0}")]
    Store(#[source] object_store::Error),
    /// A replay's decompressed text passed the limit its reader set, or is not
    /// zstd.
    #[error("replay {key}: {problem}")]
    Replay {
        /// The key.
        key: String,
        /// What is wrong.
        problem: String,
    },
    /// A local directory could not be created.
    #[error("creating {path}: {source}")]
    Directory {
        /// The directory.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

impl StorageError {
    /// Whether trying again (here or elsewhere) could help: always. Keys are unique
    /// per run, so even an object that already exists is a storage fault, not the
    /// job's: another run writes elsewhere.
    pub fn is_retryable(&self) -> bool {
        match self {
            StorageError::AlreadyExists { .. }
            | StorageError::NotFound { .. }
            | StorageError::Store(_)
            | StorageError::Directory { .. } => true,
            // The object is what it is: reading it again gives the same.
            StorageError::Replay { .. } => false,
        }
    }
}

impl From<object_store::Error> for StorageError {
    fn from(error: object_store::Error) -> Self {
        match error {
            object_store::Error::AlreadyExists { path, .. } => StorageError::AlreadyExists { key: path },
            object_store::Error::NotFound { path, .. } => StorageError::NotFound { key: path },
            other => StorageError::Store(other),
        }
    }
}

/// Hex digits of a run's id in its keys: enough that two runs never meet.
const RUN_ID_LENGTH: usize = 12;
/// A run's compressed replay, in its folder.
const REPLAY_NAME: &str = "replay.jsonl.zst";
/// A run's result document, in its folder.
const RESULT_NAME: &str = "result.json";

/// The keys of one run of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptKeys {
    attempt: u32,
    prefix: String,
}

impl AttemptKeys {
    /// The keys of a new run of `attempt` (from 1) at `job` of `tournament`.
    pub fn new(tournament: &str, job: &str, attempt: u32) -> Self {
        let run = uuid::Uuid::new_v4().simple().to_string();
        let prefix = format!("{}/attempt-{attempt}-{}", Self::job_prefix(tournament, job), &run[..RUN_ID_LENGTH]);
        AttemptKeys { attempt, prefix }
    }

    /// The attempt these keys are of, from 1.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Where every run of `job` keeps its objects.
    pub fn job_prefix(tournament: &str, job: &str) -> String {
        format!("tournaments/{}/jobs/{}", segment(tournament), segment(job))
    }

    /// Whether `key` is one a run of `attempt` at `job` of `tournament` writes: under
    /// that attempt's prefix, in a run's folder, one of the names [`AttemptKeys`] gives.
    /// A result that names any other key did not come from a run of its job.
    pub fn is_key_of(key: &str, tournament: &str, job: &str, attempt: u32) -> bool {
        let prefix = format!("{}/attempt-{attempt}-", Self::job_prefix(tournament, job));
        let Some((run, name)) = key.strip_prefix(&prefix).and_then(|rest| rest.split_once('/')) else {
            return false;
        };
        let seat_log = name
            .strip_prefix("seat-")
            .and_then(|rest| rest.strip_suffix(".stderr.log"))
            .is_some_and(|seat| !seat.is_empty() && seat.bytes().all(|byte| byte.is_ascii_digit()));
        run.len() == RUN_ID_LENGTH
            && run.bytes().all(|byte| byte.is_ascii_hexdigit())
            && (name == REPLAY_NAME || name == RESULT_NAME || seat_log)
    }

    /// The compressed replay.
    pub fn replay(&self) -> String {
        format!("{}/{REPLAY_NAME}", self.prefix)
    }

    /// One seat's stderr.
    pub fn log(&self, seat: usize) -> String {
        format!("{}/seat-{seat}.stderr.log", self.prefix)
    }

    /// The result document.
    pub fn result(&self) -> String {
        format!("{}/{RESULT_NAME}", self.prefix)
    }
}

/// Ids come from job files; keep them to characters that are safe in any key.
fn segment(id: &str) -> String {
    let cleaned: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    if cleaned.is_empty() || cleaned.chars().all(|c| c == '.') { "_".to_owned() } else { cleaned }
}

/// A replay being uploaded while the match plays: zstd-compressed, in parts, never
/// held whole in memory. Shut it down (`AsyncWriteExt::shutdown`) to finish the upload.
pub type ReplayUpload = ZstdEncoder<BufWriter>;

/// The object store.
#[derive(Clone)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
}

impl Storage {
    /// Opens the store `config` names.
    pub fn open(config: &StorageConfig) -> Result<Self, StorageError> {
        let store: Arc<dyn ObjectStore> = match config {
            StorageConfig::Local { path } => {
                std::fs::create_dir_all(path)
                    .map_err(|source| StorageError::Directory { path: path.display().to_string(), source })?;
                Arc::new(LocalFileSystem::new_with_prefix(path)?)
            }
            StorageConfig::S3 { endpoint, bucket, region, access_key, secret_key, retry_secs } => {
                let retry = RetryConfig { retry_timeout: Duration::from_secs(*retry_secs), ..RetryConfig::default() };
                let mut builder =
                    AmazonS3Builder::from_env().with_bucket_name(bucket).with_region(region).with_retry(retry);
                if !endpoint.is_empty() {
                    builder = builder.with_endpoint(endpoint).with_allow_http(endpoint.starts_with("http://"));
                }
                if !access_key.is_empty() {
                    builder = builder.with_access_key_id(access_key).with_secret_access_key(secret_key);
                }
                Arc::new(builder.build()?)
            }
        };
        Ok(Storage { store })
    }

    /// Where objects go, for logs: the store's description, without credentials.
    pub fn describe(&self) -> String {
        self.store.to_string()
    }

    /// Starts uploading a replay to `key`.
    pub fn replay_upload(&self, key: &str) -> ReplayUpload {
        ZstdEncoder::new(BufWriter::new(Arc::clone(&self.store), Path::from(key)))
    }

    /// Stores `bytes` at `key`, failing if something is already there.
    pub async fn create(&self, key: &str, bytes: Vec<u8>) -> Result<(), StorageError> {
        let options = PutOptions { mode: PutMode::Create, ..Default::default() };
        self.store.put_opts(&Path::from(key), PutPayload::from(bytes), options).await?;
        Ok(())
    }

    /// Stores `bytes` at `key`, replacing what is there.
    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), StorageError> {
        self.store.put(&Path::from(key), PutPayload::from(bytes)).await?;
        Ok(())
    }

    /// The whole object at `key`.
    pub async fn read(&self, key: &str) -> Result<Vec<u8>, StorageError> {
        Ok(self.store.get(&Path::from(key)).await?.bytes().await?.to_vec())
    }

    /// The replay [`Storage::replay_upload`] wrote at `key`, decompressed: at most
    /// `limit` bytes of it, past which it is an error.
    pub async fn read_replay(&self, key: &str, limit: u64) -> Result<Vec<u8>, StorageError> {
        use tokio::io::AsyncReadExt;
        let compressed = self.read(key).await?;
        let decoder = async_compression::tokio::bufread::ZstdDecoder::new(compressed.as_slice());
        let mut text = Vec::new();
        let problem = |problem: String| StorageError::Replay { key: key.to_owned(), problem };
        decoder
            .take(limit.saturating_add(1))
            .read_to_end(&mut text)
            .await
            .map_err(|error| problem(error.to_string()))?;
        if text.len() as u64 > limit {
            return Err(problem(format!("longer than {limit} bytes")));
        }
        Ok(text)
    }

    /// The object at `key` as a stream of chunks, for serving it without holding it.
    pub async fn stream(
        &self,
        key: &str,
    ) -> Result<futures_util::stream::BoxStream<'static, Result<bytes::Bytes, StorageError>>, StorageError> {
        use futures_util::StreamExt;
        let stream = self.store.get(&Path::from(key)).await?.into_stream();
        Ok(stream.map(|chunk| chunk.map_err(StorageError::from)).boxed())
    }

    /// The keys under `prefix`, sorted.
    pub async fn list(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
        use futures_util::TryStreamExt;
        let mut keys: Vec<String> =
            self.store.list(Some(&Path::from(prefix))).map_ok(|meta| meta.location.to_string()).try_collect().await?;
        keys.sort();
        Ok(keys)
    }

    /// The size of the object at `key`.
    pub async fn size(&self, key: &str) -> Result<u64, StorageError> {
        Ok(self.store.head(&Path::from(key)).await?.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_nest_by_tournament_job_and_attempt_are_sanitised_and_unique_per_run() {
        let keys = AttemptKeys::new("t 1", "../j/2", 3);
        let replay = keys.replay();
        assert!(replay.starts_with("tournaments/t_1/jobs/.._j_2/attempt-3-"), "{replay}");
        assert!(replay.ends_with("/replay.jsonl.zst"), "{replay}");
        assert_eq!(keys.log(1), replay.replace("replay.jsonl.zst", "seat-1.stderr.log"));
        assert_ne!(AttemptKeys::new("t 1", "../j/2", 3), keys, "two runs of one attempt never share keys");
        assert!(AttemptKeys::new("..", "", 1).result().starts_with("tournaments/_/jobs/_/attempt-1-"));
    }

    #[test]
    fn only_the_keys_of_a_run_of_the_attempt_belong_to_it() {
        let keys = AttemptKeys::new("t 1", "j/2", 3);
        for key in [keys.replay(), keys.log(0), keys.log(12), keys.result()] {
            assert!(AttemptKeys::is_key_of(&key, "t 1", "j/2", 3), "{key}");
        }
        let other_run = AttemptKeys::new("t 1", "j/2", 3).replay();
        assert!(AttemptKeys::is_key_of(&other_run, "t 1", "j/2", 3), "another run of the same attempt");
        for (key, tournament, job, attempt) in [
            (keys.replay(), "t 1", "j/2", 2),
            (keys.replay(), "t 2", "j/2", 3),
            (keys.replay(), "t 1", "j/3", 3),
            (keys.replay().replace("replay.jsonl.zst", "../../../secrets"), "t 1", "j/2", 3),
            (keys.replay().replace("replay.jsonl.zst", "seat-.stderr.log"), "t 1", "j/2", 3),
            (keys.replay().replace("replay.jsonl.zst", "x/replay.jsonl.zst"), "t 1", "j/2", 3),
            ("tournaments/t_1/jobs/j_2/attempt-3-/replay.jsonl.zst".to_owned(), "t 1", "j/2", 3),
            ("other/tournaments/t_1/jobs/j_2/attempt-3-0123456789ab/replay.jsonl.zst".to_owned(), "t 1", "j/2", 3),
        ] {
            assert!(!AttemptKeys::is_key_of(&key, tournament, job, attempt), "{key} of {tournament}/{job}/{attempt}");
        }
    }

    #[tokio::test]
    async fn a_local_store_creates_once_and_round_trips_a_compressed_replay() {
        use tokio::io::AsyncWriteExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let storage = Storage::open(&StorageConfig::Local { path: dir.path().join("objects") }).expect("open");
        storage.create("a/result.json", b"{}".to_vec()).await.expect("first create");
        assert_eq!(storage.list("a").await.expect("list"), ["a/result.json"]);
        let second = storage.create("a/result.json", b"{\"x\":1}".to_vec()).await;
        assert!(matches!(second, Err(StorageError::AlreadyExists { .. })), "{second:?}");
        assert_eq!(storage.read("a/result.json").await.expect("read"), b"{}");

        let mut upload = storage.replay_upload("a/replay.jsonl.zst");
        let line = b"{\"type\":\"frame\"}\n".repeat(10_000);
        upload.write_all(&line).await.expect("write");
        upload.shutdown().await.expect("finish upload");
        let compressed = storage.read("a/replay.jsonl.zst").await.expect("read replay");
        assert!(compressed.len() < line.len() / 20, "zstd compresses a repetitive replay");
        assert_eq!(storage.read_replay("a/replay.jsonl.zst", line.len() as u64).await.expect("decode"), line);
        let capped = storage.read_replay("a/replay.jsonl.zst", line.len() as u64 - 1).await;
        assert!(matches!(capped, Err(StorageError::Replay { .. })), "{capped:?}");
    }
}
