//! The test S3 server's coordinator and worker keys (farm-s3, scripts/services/s3.sh),
//! used as the farm uses them: through `farm_runtime::storage::Storage`, whose
//! object_store client makes the farm's requests. Each key may do what its part of the
//! farm does and nothing else; the farm's own tests run with the admin key.

use farm_runtime::storage::{AttemptKeys, Storage, StorageConfig, StorageError};
use farm_testkit::{required, s3, s3_config, unique};
use tokio::io::AsyncWriteExt;

/// The test server's storage, signed in with `role`'s key (`COORDINATOR` or `WORKER`),
/// or with its access key and `secret` instead of its own.
fn storage_as(role: &str, secret: Option<&str>) -> Storage {
    let StorageConfig::S3 { endpoint, bucket, region, retry_secs, .. } = s3_config() else {
        unreachable!("s3_config is S3");
    };
    let access_key = required(&format!("FARM_TEST_S3_{role}_ACCESS_KEY"));
    let secret_key = secret.map_or_else(|| required(&format!("FARM_TEST_S3_{role}_SECRET_KEY")), str::to_owned);
    Storage::open(&StorageConfig::S3 { endpoint, bucket, region, access_key, secret_key, retry_secs })
        .expect("open the test bucket")
}

/// Asserts that `result` is the server's refusal: status 403 with S3's AccessDenied in
/// the body (a HEAD's answer has none).
fn assert_denied<T: std::fmt::Debug>(result: Result<T, StorageError>, what: &str) {
    let refusal = format!("{result:?}");
    let denied = matches!(result, Err(StorageError::Store(_)))
        && refusal.contains("status: 403")
        && (refusal.contains("AccessDenied") || refusal.contains("method: HEAD"));
    assert!(denied, "{what}: expected AccessDenied, got {refusal}");
}

/// Bytes that zstd cannot shrink (xorshift), `length` of them.
fn noise(length: usize) -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..length)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

/// A tournament id of this test's own, and a source archive under it put by the admin.
async fn setup(name: &str) -> (String, String) {
    let tournament = unique(name);
    let source = format!("sources/{tournament}/0a1b2c.tar");
    s3().put(&source, b"a bot's source".to_vec()).await.expect("the admin puts a source");
    (tournament, source)
}

#[tokio::test]
async fn a_workers_key_writes_its_matches_and_builds_reads_replays_and_sources_and_nothing_more() {
    let (tournament, source) = setup("s3-worker").await;
    let worker = storage_as("WORKER", None);
    let keys = AttemptKeys::new(&tournament, "job-1", 1);

    // Past object_store's buffer (10 MiB) a replay goes up as a multipart upload.
    let replay = noise(11 * 1024 * 1024);
    let mut upload = worker.replay_upload(&keys.replay());
    upload.write_all(&replay).await.expect("write the replay");
    upload.shutdown().await.expect("the worker uploads a replay in parts");
    assert!(worker.size(&keys.replay()).await.expect("its size") > 10 * 1024 * 1024);
    assert_eq!(worker.read_replay(&keys.replay(), replay.len() as u64).await.expect("an audit reads it"), replay);

    worker.create(&keys.log(0), b"seat 0's stderr".to_vec()).await.expect("a seat's log");
    worker.create(&keys.result(), b"{}".to_vec()).await.expect("the result");
    let again = worker.create(&keys.result(), b"{\"forged\":1}".to_vec()).await;
    assert!(matches!(again, Err(StorageError::AlreadyExists { .. })), "create-if-absent holds: {again:?}");
    assert_eq!(s3().read(&keys.result()).await.expect("read"), b"{}");

    let build_log = format!("builds/{tournament}/v1.log");
    worker.put(&build_log, b"build output".to_vec()).await.expect("a build's log");
    assert_eq!(worker.size(&source).await.expect("a source's size"), 14);
    assert_eq!(worker.read(&source).await.expect("a build reads its source"), b"a bot's source");

    assert_denied(worker.put(&format!("sources/{tournament}/forged.tar"), b"x".to_vec()).await, "put a source");
    assert_denied(worker.put(&source, b"x".to_vec()).await, "overwrite a source");
    // The upload starts (CreateMultipartUpload) while it is written, once past the buffer.
    let mut upload = worker.replay_upload(&format!("sources/{tournament}/parts.tar"));
    let refused = match upload.write_all(&noise(11 * 1024 * 1024)).await {
        Err(refused) => refused,
        Ok(()) => upload.shutdown().await.expect_err("a multipart upload under sources/"),
    };
    assert!(refused.to_string().contains("AccessDenied"), "{refused}");
    assert_eq!(s3().read(&source).await.expect("read"), b"a bot's source", "the source is untouched");

    let elsewhere = format!("elsewhere/{tournament}/x");
    s3().put(&elsewhere, b"not the workers'".to_vec()).await.expect("the admin puts anywhere");
    assert_denied(worker.read(&elsewhere).await, "read outside its prefixes");
    assert_denied(worker.size(&elsewhere).await, "head outside its prefixes");
    assert_denied(worker.put(&elsewhere, b"x".to_vec()).await, "write outside its prefixes");
    assert_denied(worker.read(&build_log).await, "read a build log");
    assert_denied(worker.list(&format!("tournaments/{tournament}")).await, "list");
}

#[tokio::test]
async fn the_coordinators_key_reads_and_lists_everything_and_writes_only_sources() {
    let (tournament, source) = setup("s3-coordinator").await;
    let coordinator = storage_as("COORDINATOR", None);
    let keys = AttemptKeys::new(&tournament, "job-1", 1);
    storage_as("WORKER", None).create(&keys.result(), b"{}".to_vec()).await.expect("a worker's result");
    let build_log = format!("builds/{tournament}/v1.log");
    s3().put(&build_log, b"build output".to_vec()).await.expect("the admin puts a build log");

    let uploaded = format!("sources/{tournament}/3d4e5f.tar");
    coordinator.put(&uploaded, b"an upload".to_vec()).await.expect("the coordinator stores an upload");
    assert_eq!(s3().read(&uploaded).await.expect("read"), b"an upload");
    for (key, bytes) in [(&keys.result(), &b"{}"[..]), (&build_log, b"build output"), (&source, b"a bot's source")] {
        assert_eq!(coordinator.read(key).await.expect("the coordinator reads"), bytes, "{key}");
        assert_eq!(coordinator.size(key).await.expect("and heads"), bytes.len() as u64, "{key}");
    }
    assert_eq!(coordinator.list(&format!("tournaments/{tournament}")).await.expect("lists"), [keys.result()]);

    assert_denied(coordinator.create(&keys.log(0), b"forged".to_vec()).await, "write under tournaments/");
    assert_denied(coordinator.put(&keys.result(), b"forged".to_vec()).await, "overwrite a result");
    assert_denied(coordinator.put(&build_log, b"forged".to_vec()).await, "write under builds/");
    assert_eq!(s3().read(&keys.result()).await.expect("read"), b"{}", "the result is untouched");
}

#[tokio::test]
async fn a_wrong_secret_is_refused() {
    let (_, source) = setup("s3-secret").await;
    for role in ["WORKER", "COORDINATOR"] {
        let forged = storage_as(role, Some("not-the-secret-of-this-key"));
        let refused = forged.read(&source).await.expect_err("a wrong secret");
        assert!(refused.to_string().contains("SignatureDoesNotMatch"), "{role}: {refused}");
    }
}
