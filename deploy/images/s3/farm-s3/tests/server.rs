//! The `farm-s3` process: how it refuses to start, and that a key's role holds on the
//! wire, for requests the farm's own client (object_store) never makes: a key with `..`
//! in it, which s3s-fs would resolve to another prefix. The farm's requests through
//! object_store are tested against the running test server by
//! testkit/tests/s3_roles.rs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

const BUCKET: &str = "matchfarm";
const REGION: &str = "us-east-1";
const ADMIN: (&str, &str) = ("farm-admin", "an-admins-secret-3f9a");
const WORKER: (&str, &str) = ("farm-worker", "a-workers-secret-7c21");

/// A temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!("farm-s3-{name}-{}-{nanos:x}", std::process::id()));
        std::fs::create_dir_all(&path).expect("make the temporary directory");
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `farm-s3` on loopback, its port chosen by the system, with only `environment`'s
/// variables (so no key of the caller's environment leaks in).
fn command(root: &TempDir, environment: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_farm-s3"));
    command
        .args(["--host", "127.0.0.1", "--port", "0", "--bucket", BUCKET])
        .arg(&root.0)
        .env_clear()
        .envs(environment.iter().copied())
        .stdin(Stdio::null());
    command
}

/// A running server, killed when dropped.
struct Server {
    child: Child,
    address: SocketAddr,
    root: TempDir,
}

impl Server {
    /// Starts it with an admin and a worker key; returns once it listens (it logs its
    /// address then).
    fn start() -> Self {
        let root = TempDir::new("server");
        let mut child = command(
            &root,
            &[
                ("S3_ADMIN_ACCESS_KEY", ADMIN.0),
                ("S3_ADMIN_SECRET_KEY", ADMIN.1),
                ("S3_WORKER_ACCESS_KEY", WORKER.0),
                ("S3_WORKER_SECRET_KEY", WORKER.1),
            ],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start farm-s3");
        let mut log = BufReader::new(child.stderr.take().expect("its log"));
        let mut line = String::new();
        let address = loop {
            line.clear();
            let read = log.read_line(&mut line).expect("read its log");
            assert!(read > 0, "farm-s3 exited before serving: {:?}", child.wait());
            if line.contains("farm-s3 serving") {
                let address = line.split("address=").nth(1).and_then(|rest| rest.split_whitespace().next());
                break address
                    .and_then(|address| address.parse().ok())
                    .unwrap_or_else(|| panic!("no address in {line}"));
            }
        };
        // Keep reading its log, so that it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut log, &mut std::io::sink()));
        Server { child, address, root }
    }

    /// Sends `method /BUCKET/key` (the key as is, not normalised) with `body`, signed
    /// (AWS signature v4) with `key`; returns the response's status.
    fn send(&self, (access_key, secret_key): (&str, &str), method: &str, key: &str, body: &[u8]) -> u16 {
        let host = self.address.to_string();
        let path = format!("/{BUCKET}/{key}");
        let now = std::time::SystemTime::now();
        let date_time = amz_date(now);
        let date = &date_time[..8];
        let payload_hash = hex(&Sha256::digest(body));
        let signed_headers = "host;x-amz-content-sha256;x-amz-date";
        let canonical_request = format!(
            "{method}\n{path}\n\nhost:{host}\nx-amz-content-sha256:{payload_hash}\nx-amz-date:{date_time}\n\n\
             {signed_headers}\n{payload_hash}"
        );
        let scope = format!("{date}/{REGION}/s3/aws4_request");
        let string_to_sign =
            format!("AWS4-HMAC-SHA256\n{date_time}\n{scope}\n{}", hex(&Sha256::digest(canonical_request.as_bytes())));
        let mut signing_key = hmac(format!("AWS4{secret_key}").as_bytes(), date.as_bytes());
        for part in [REGION, "s3", "aws4_request"] {
            signing_key = hmac(&signing_key, part.as_bytes());
        }
        let signature = hex(&hmac(&signing_key, string_to_sign.as_bytes()));
        let request = format!(
            "{method} {path} HTTP/1.1\r\nhost: {host}\r\nx-amz-content-sha256: {payload_hash}\r\n\
             x-amz-date: {date_time}\r\nauthorization: AWS4-HMAC-SHA256 Credential={access_key}/{scope}, \
             SignedHeaders={signed_headers}, Signature={signature}\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n",
            body.len()
        );
        let mut stream = TcpStream::connect(self.address).expect("connect to farm-s3");
        stream.write_all(request.as_bytes()).and_then(|()| stream.write_all(body)).expect("send the request");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read the response");
        let status = response.split_whitespace().nth(1).and_then(|status| status.parse().ok());
        status.unwrap_or_else(|| panic!("not an HTTP response: {response}"))
    }

    /// The file of `key` in the bucket's directory.
    fn file(&self, key: &str) -> PathBuf {
        self.root.0.join(BUCKET).join(key)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `time` as AWS writes it, `YYYYMMDDTHHMMSSZ` (UTC).
fn amz_date(time: std::time::SystemTime) -> String {
    let seconds = time.duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_secs();
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    // Howard Hinnant's days-to-civil, for days since 1970-01-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

#[test]
fn the_date_is_written_as_aws_wants_it() {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_876_923); // 2026-11-28 14:42:03 UTC
    assert_eq!(amz_date(time), "20261128T144203Z");
    assert_eq!(amz_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(951_782_400)), "20000229T000000Z");
}

#[test]
fn a_workers_key_cannot_climb_out_of_its_prefix_with_dot_segments() {
    let server = Server::start();
    assert_eq!(server.send(WORKER, "PUT", "tournaments/t/replay", b"frames"), 200, "its own prefix");
    assert_eq!(std::fs::read(server.file("tournaments/t/replay")).expect("stored"), b"frames");

    assert_eq!(server.send(WORKER, "PUT", "tournaments/../sources/bot/x.tar", b"forged"), 403);
    assert_eq!(server.send(WORKER, "PUT", "sources/bot/x.tar", b"forged"), 403);
    assert!(!server.file("sources").exists(), "nothing was written under sources/");
    assert_eq!(server.send(WORKER, "DELETE", "tournaments/t/replay", b""), 403, "no delete");
    assert!(server.file("tournaments/t/replay").exists());

    // The same request is one s3s-fs serves, as sources/bot/x.tar: the admin may.
    assert_eq!(server.send(ADMIN, "PUT", "tournaments/../sources/bot/x.tar", b"admin's"), 200);
    assert_eq!(std::fs::read(server.file("sources/bot/x.tar")).expect("stored"), b"admin's");
    assert_eq!(server.send(WORKER, "GET", "tournaments/../sources/bot/x.tar", b""), 403);
    assert_eq!(server.send(WORKER, "GET", "sources/bot/x.tar", b""), 200, "a worker reads sources/");

    let forged_secret = (WORKER.0, "not-the-workers-secret");
    assert_eq!(server.send(forged_secret, "GET", "tournaments/t/replay", b""), 403, "a wrong secret");
    assert_eq!(server.send(("nobody", WORKER.1), "GET", "tournaments/t/replay", b""), 403, "an unknown key");
}

fn refused(environment: &[(&str, &str)]) -> String {
    let root = TempDir::new("refused");
    let Output { status, stderr, .. } = command(&root, environment).output().expect("run farm-s3");
    assert!(!status.success(), "farm-s3 started with {environment:?}");
    String::from_utf8_lossy(&stderr).into_owned()
}

#[test]
fn it_refuses_to_start_without_a_key_or_with_a_placeholder_secret_naming_the_variable() {
    let error = refused(&[]);
    assert!(error.contains("no key is set") && error.contains("S3_WORKER_ACCESS_KEY"), "{error}");
    let error = refused(&[("S3_WORKER_ACCESS_KEY", "farm-worker"), ("S3_WORKER_SECRET_KEY", "PLACEHOLDER-secret")]);
    assert!(error.contains("S3_WORKER_SECRET_KEY holds \"placeholder\""), "{error}");
    let error = refused(&[("S3_COORDINATOR_SECRET_KEY", "9f2c4e1a7b3d")]);
    assert!(error.contains("S3_COORDINATOR_SECRET_KEY is set but S3_COORDINATOR_ACCESS_KEY is not"), "{error}");
}
