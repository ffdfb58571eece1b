//! What each role may do, checked on every request before s3s reads its body.
//!
//! The farm's objects, in its one bucket (runtime/src/storage.rs and the code that
//! names the keys):
//!
//! | prefix | written by | read by |
//! |---|---|---|
//! | `tournaments/` | workers: a match's replay (a multipart upload when it is large), seats' logs and result, created only if absent | workers (an audit's replay, a replay's size), the coordinator |
//! | `sources/` | the coordinator: a bot's uploaded source archive | workers (a build's archive and its size), the coordinator |
//! | `builds/` | workers: a build's log | the coordinator |
//!
//! So, by role: `admin` may do anything; `coordinator` may read (GetObject, HeadObject)
//! and list (ListObjectsV2) the bucket and write under `sources/`; `worker` may write
//! under `tournaments/` and `builds/` and read under `tournaments/` and `sources/`, and
//! list nothing. Writing is PutObject (with or without If-None-Match) and the multipart
//! upload's four operations, the requests object_store's S3 client makes. No role but
//! `admin` may delete, copy, touch another bucket or do anything else S3 offers.

use s3s::S3Result;
use s3s::access::{S3Access, S3AccessContext};
use s3s::path::S3Path;

use crate::keys::{Keys, Role};

/// The kinds of request the farm's parts make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Request {
    /// An object's bytes or size.
    Read,
    /// The bucket's keys.
    List,
    /// An object put, at once or in parts.
    Write,
}

impl Request {
    /// The kind of the s3s operation `name`; `None` for every operation no role but
    /// `admin` may make.
    fn of(name: &str) -> Option<Request> {
        match name {
            "GetObject" | "HeadObject" => Some(Request::Read),
            "ListObjectsV2" => Some(Request::List),
            "PutObject"
            | "CreateMultipartUpload"
            | "UploadPart"
            | "CompleteMultipartUpload"
            | "AbortMultipartUpload" => Some(Request::Write),
            _ => None,
        }
    }
}

/// Where in the bucket a role may make a kind of request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Anywhere (for a list: the whole bucket).
    Everywhere,
    /// On keys whose first segment is one of these.
    Under(&'static [&'static str]),
    /// Nowhere.
    Nowhere,
}

/// The table of the module's documentation.
fn scope(role: Role, request: Request) -> Scope {
    match (role, request) {
        (Role::Admin, _) | (Role::Coordinator, Request::Read | Request::List) => Scope::Everywhere,
        (Role::Coordinator, Request::Write) => Scope::Under(&["sources"]),
        (Role::Worker, Request::Read) => Scope::Under(&["tournaments", "sources"]),
        (Role::Worker, Request::Write) => Scope::Under(&["tournaments", "builds"]),
        (Role::Worker, Request::List) => Scope::Nowhere,
    }
}

/// Whether `role` may make the operation `operation` on `path`, in the farm's `bucket`.
fn allows(role: Role, operation: &str, path: &S3Path, bucket: &str) -> bool {
    if role == Role::Admin {
        return true;
    }
    let Some(request) = Request::of(operation) else { return false };
    match (request, path, scope(role, request)) {
        (_, _, Scope::Nowhere) => false,
        (Request::List, S3Path::Bucket { bucket: asked }, Scope::Everywhere) => &**asked == bucket,
        (Request::Read | Request::Write, S3Path::Object { bucket: asked, key }, scope) => {
            // s3s-fs resolves `..` in a key inside its directory: `tournaments/../sources/x`
            // is sources/x. The farm's keys have plain segments only.
            let plain = key.split('/').all(|segment| !matches!(segment, "" | "." | ".."));
            // Under a prefix: in it, not the prefix's own name.
            let first = key.split_once('/').map(|(first, _)| first);
            &**asked == bucket
                && plain
                && match scope {
                    Scope::Everywhere => true,
                    Scope::Under(prefixes) => first.is_some_and(|first| prefixes.contains(&first)),
                    Scope::Nowhere => false,
                }
        }
        _ => false,
    }
}

/// The server's [`S3Access`]: every signed request's key has a role, which must allow
/// the request; a refusal is S3's AccessDenied (403), logged with who asked for what.
pub struct Policy {
    keys: Keys,
    bucket: String,
}

impl Policy {
    /// The policy of `keys`' roles over the farm's `bucket` (others are the admin's).
    pub fn new(keys: Keys, bucket: String) -> Self {
        Policy { keys, bucket }
    }
}

#[async_trait::async_trait]
impl S3Access for Policy {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        let operation = cx.s3_op().name();
        let path = cx.s3_path();
        let Some(credentials) = cx.credentials() else {
            tracing::warn!(operation, ?path, "denied: the request is not signed");
            return Err(s3s::s3_error!(AccessDenied, "requests must be signed"));
        };
        let access_key = credentials.access_key.as_str();
        // s3s checked the signature with this key's secret, so the key is one of ours.
        let Some(role) = self.keys.role(access_key) else {
            tracing::warn!(access_key, operation, ?path, "denied: no such access key");
            return Err(s3s::s3_error!(AccessDenied));
        };
        if allows(role, operation, path, &self.bucket) {
            tracing::debug!(access_key, role = role.name(), operation, ?path, "allowed");
            Ok(())
        } else {
            tracing::warn!(access_key, role = role.name(), operation, ?path, "denied");
            Err(s3s::s3_error!(AccessDenied, "the {} key may not {operation} here", role.name()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUCKET: &str = "matchfarm";

    fn object(key: &str) -> S3Path {
        S3Path::Object { bucket: BUCKET.into(), key: key.into() }
    }

    const REPLAY: &str = "tournaments/t/jobs/j/attempt-1-0123456789ab/replay.jsonl.zst";
    const SOURCE: &str = "sources/bot/0a1b.tar";
    const BUILD_LOG: &str = "builds/bot/v1.log";

    #[test]
    fn a_worker_writes_and_reads_only_its_prefixes_and_never_lists_or_deletes() {
        for operation in
            ["PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "AbortMultipartUpload"]
        {
            assert!(allows(Role::Worker, operation, &object(REPLAY), BUCKET), "{operation}");
            assert!(allows(Role::Worker, operation, &object(BUILD_LOG), BUCKET), "{operation}");
            assert!(!allows(Role::Worker, operation, &object(SOURCE), BUCKET), "{operation}");
        }
        for operation in ["GetObject", "HeadObject"] {
            assert!(allows(Role::Worker, operation, &object(REPLAY), BUCKET), "{operation}");
            assert!(allows(Role::Worker, operation, &object(SOURCE), BUCKET), "{operation}");
            assert!(!allows(Role::Worker, operation, &object(BUILD_LOG), BUCKET), "{operation}");
            assert!(!allows(Role::Worker, operation, &object("secrets/x"), BUCKET), "{operation}");
        }
        assert!(!allows(Role::Worker, "ListObjectsV2", &S3Path::Bucket { bucket: BUCKET.into() }, BUCKET));
        for operation in ["DeleteObject", "DeleteObjects", "CopyObject", "UploadPartCopy", "GetObjectAcl"] {
            assert!(!allows(Role::Worker, operation, &object(REPLAY), BUCKET), "{operation}");
        }
    }

    #[test]
    fn the_coordinator_reads_and_lists_everything_and_writes_only_sources() {
        for key in [REPLAY, SOURCE, BUILD_LOG, "anything/else"] {
            assert!(allows(Role::Coordinator, "GetObject", &object(key), BUCKET), "{key}");
            assert!(allows(Role::Coordinator, "HeadObject", &object(key), BUCKET), "{key}");
        }
        assert!(allows(Role::Coordinator, "ListObjectsV2", &S3Path::Bucket { bucket: BUCKET.into() }, BUCKET));
        assert!(allows(Role::Coordinator, "PutObject", &object(SOURCE), BUCKET));
        assert!(!allows(Role::Coordinator, "PutObject", &object(REPLAY), BUCKET));
        assert!(!allows(Role::Coordinator, "PutObject", &object(BUILD_LOG), BUCKET));
        assert!(!allows(Role::Coordinator, "DeleteObject", &object(SOURCE), BUCKET));
        assert!(!allows(Role::Coordinator, "ListBuckets", &S3Path::Root, BUCKET));
        assert!(!allows(Role::Coordinator, "DeleteBucket", &S3Path::Bucket { bucket: BUCKET.into() }, BUCKET));
    }

    #[test]
    fn dot_segments_and_other_buckets_are_outside_every_prefix_but_the_admins() {
        for key in
            ["tournaments/../sources/x.tar", "tournaments/./x", "tournaments//x", "tournaments", "/tournaments/x"]
        {
            assert!(!allows(Role::Worker, "PutObject", &object(key), BUCKET), "{key}");
        }
        assert!(!allows(Role::Coordinator, "GetObject", &object("sources/../../other/x"), BUCKET));
        let elsewhere = S3Path::Object { bucket: "other".into(), key: REPLAY.into() };
        assert!(!allows(Role::Worker, "PutObject", &elsewhere, BUCKET));
        assert!(!allows(Role::Coordinator, "GetObject", &elsewhere, BUCKET));
        assert!(!allows(Role::Coordinator, "ListObjectsV2", &S3Path::Bucket { bucket: "other".into() }, BUCKET));
        assert!(allows(Role::Admin, "DeleteBucket", &S3Path::Bucket { bucket: "other".into() }, BUCKET));
        assert!(allows(Role::Admin, "PutObject", &object("tournaments/../x"), BUCKET));
    }
}
