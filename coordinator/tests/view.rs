//! `farm-coordinator view` serves a finished run's data directory (pages and API,
//! read-only) on the port it was given, or one it chose and printed; `run --web`
//! serves while it plays and stops with the run. `standings` against it prints byte
//! for byte what `run` printed. `farm-worker reproduce` through it plays the job the
//! ledger scheduled, not the one a worker's result names.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use farm_testkit::{eventually, http_get};

const COORDINATOR: &str = env!("CARGO_BIN_EXE_farm-coordinator");

/// Two builtin bots, one game each way: two quick matches.
const TINY: &str = r#"
name = "tiny"
game = "botwars"
format = "round-robin"
seed = 9
[[bots]]
name = "gatherer"
builtin = "gatherer"
[[bots]]
name = "random"
builtin = "random"
"#;

/// Four bots (two copies of each builtin) over many games: Elo ratings whose
/// decimals run to 16 or 17 significant digits, the ones a float parser that does
/// not round-trip gets wrong in the last place.
const UNEVEN: &str = r#"
name = "uneven"
game = "botwars"
format = "round-robin"
games_per_pairing = 3
seed = 5
[[bots]]
name = "gatherer"
builtin = "gatherer"
[[bots]]
name = "gatherer-2"
builtin = "gatherer"
[[bots]]
name = "random"
builtin = "random"
[[bots]]
name = "random-2"
builtin = "random"
"#;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Plays [`TINY`] into `data`; returns the tournament id.
fn play_tiny(dir: &Path, data: &Path) -> String {
    let file = dir.join("tiny.toml");
    std::fs::write(&file, TINY).expect("write the tournament");
    let output = Command::new(COORDINATOR)
        .args(["run", path(&file), "--data", path(data), "--format", "json"])
        .current_dir(repo())
        .output()
        .expect("farm-coordinator runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let standings: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON standings");
    standings["tournament_id"].as_str().expect("an id").to_owned()
}

fn path(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// The first line `child` prints on stdout, within 60 s.
fn first_line(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("stdout is piped");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = sender.send(line);
    });
    receiver.recv_timeout(Duration::from_secs(60)).expect("a line on stdout within a minute")
}

/// `child`'s exit status, waiting at most `limit`.
fn exit_within(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let mut status = None;
    eventually(limit, "the process exits", || {
        status = child.try_wait().expect("try_wait");
        status.is_some()
    });
    status.expect("exited")
}

fn interrupt(child: &Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
}

/// Kills the process if a failed assertion leaves it running.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn view_serves_a_finished_run_on_the_port_it_printed_until_interrupted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let id = play_tiny(dir.path(), &data);

    let (mut view, address) = start_view(&data);
    assert_ne!(address.port(), 0, "the chosen port is printed");

    let (status, page) = http_get(address, "/").expect("the page answers");
    assert_eq!(status, 200);
    assert!(page.starts_with("<!doctype html>") && page.contains("/static/index.js"), "{page}");
    let (status, page) = http_get(address, &format!("/tournaments/{id}")).expect("the page answers");
    assert_eq!(status, 200);
    assert!(page.contains("data-testid=\"standings\""), "{page}");

    let (status, body) = http_get(address, "/api/tournaments").expect("the API answers");
    assert_eq!(status, 200, "{body}");
    let listed: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let tournaments = listed["tournaments"].as_array().expect("a list");
    assert_eq!(tournaments.len(), 1, "{listed}");
    assert_eq!(tournaments[0]["id"], id.as_str());
    assert_eq!(tournaments[0]["progress"]["done"], 2, "{listed}");
    assert_eq!(tournaments[0]["progress"]["total"], 2, "{listed}");

    interrupt(&view.0);
    let status = exit_within(&mut view.0, Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
}

#[test]
fn view_refuses_a_directory_without_a_ledger() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(COORDINATOR)
        .args(["view", "--data", path(dir.path()), "--listen", "127.0.0.1:0"])
        .output()
        .expect("farm-coordinator runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("has no ledger") && stderr.contains("farm-coordinator run"), "{stderr}");
    assert!(!dir.path().join("ledger.sqlite").exists(), "nothing was created");
}

#[test]
fn run_with_web_prints_its_url_and_stops_serving_when_the_run_ends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("tiny.toml");
    std::fs::write(&file, TINY).expect("write the tournament");
    let data = dir.path().join("data");
    let output = Command::new(COORDINATOR)
        .args(["run", path(&file), "--data", path(&data), "--format", "json", "--web", "127.0.0.1:0"])
        .current_dir(repo())
        .output()
        .expect("farm-coordinator runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let url = stderr
        .lines()
        .find_map(|line| line.strip_prefix("watch the run at "))
        .unwrap_or_else(|| panic!("no URL: {stderr}"));
    assert!(url.starts_with("http://127.0.0.1:") && !url.starts_with("http://127.0.0.1:0/"), "{url}");
    let standings: serde_json::Value = serde_json::from_slice(&output.stdout).expect("stdout is the standings alone");
    assert_eq!(standings["progress"]["done"], 2);
}

#[test]
fn standings_over_http_print_byte_for_byte_what_run_printed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("uneven.toml");
    std::fs::write(&file, UNEVEN).expect("write the tournament");
    let data = dir.path().join("data");
    // The first run plays; the others print the same standings from the ledger.
    let printed = ["json", "csv", "table"].map(|format| {
        let output = Command::new(COORDINATOR)
            .args(["run", path(&file), "--data", path(&data), "--format", format])
            .current_dir(repo())
            .output()
            .expect("farm-coordinator runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        (format, String::from_utf8(output.stdout).expect("UTF-8 standings"))
    });
    let run_json: serde_json::Value = serde_json::from_str(&printed[0].1).expect("JSON standings");
    let id = run_json["tournament_id"].as_str().expect("an id");

    let (mut view, address) = start_view(&data);
    let url = format!("http://{address}");

    for (format, from_run) in &printed {
        let output = Command::new(COORDINATOR)
            .args(["standings", id, "--url", &url, "--format", format])
            .output()
            .expect("farm-coordinator runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let from_api = String::from_utf8(output.stdout).expect("UTF-8 standings");
        assert_eq!(&from_api, from_run, "standings --format {format} against run --format {format}");
    }
    // The API's own document is the one `run --format json` prints (compact, not pretty).
    let (status, body) = http_get(address, &format!("/api/tournaments/{id}/standings")).expect("the API answers");
    assert_eq!(status, 200, "{body}");
    let api_json: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(api_json, run_json);

    interrupt(&view.0);
    let status = exit_within(&mut view.0, Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
}

/// Starts `farm-coordinator view` on `data`; returns it and its address.
fn start_view(data: &Path) -> (Reaped, SocketAddr) {
    let child = Command::new(COORDINATOR)
        .args(["view", "--data", path(data), "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("farm-coordinator view starts");
    let mut view = Reaped(child);
    let line = first_line(&mut view.0);
    let address = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("not the address line: {line:?}"))
        .parse()
        .expect("an address");
    (view, address)
}

/// A worker's result is its own word: a forged bundle that puts a command in seat 0
/// is not what `reproduce` plays through the API (the ledger's job is), and played from
/// the file alone the command is refused unless the operator trusts it.
#[test]
fn reproduce_plays_the_job_the_ledger_scheduled_and_runs_no_command_it_was_not_told_to() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    play_tiny(dir.path(), &data);
    let marker = dir.path().join("the-forged-command-ran");
    let ledger = rusqlite::Connection::open(data.join("ledger.sqlite")).expect("the ledger");
    let (job_id, envelope): (String, String) = ledger
        .query_row("SELECT job_id, envelope FROM results ORDER BY job_id LIMIT 1", [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .expect("a result");
    let mut envelope: serde_json::Value = serde_json::from_str(&envelope).expect("JSON");
    let forged: farm_proto::BotSpec = format!("cmd:touch {}", marker.display()).parse().expect("a bot spec");
    envelope["result"]["reproduction"]["job"]["bots"][0] = serde_json::to_value(forged).expect("JSON");
    ledger
        .execute("UPDATE results SET envelope = ?1 WHERE job_id = ?2", (envelope.to_string(), &job_id))
        .expect("the forged result");
    drop(ledger);
    let (_view, address) = start_view(&data);

    let worker = farm_testkit::worker_binary();
    let api = format!("http://{address}");
    let out = dir.path().join("again");
    let again =
        Command::new(&worker).args(["reproduce", &job_id, "--api", &api, "--out", path(&out)]).output().expect("runs");
    let said = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(0), "{said}{}", String::from_utf8_lossy(&again.stderr));
    assert!(said.contains("another job than the ledger scheduled") && said.contains("identical"), "{said}");
    assert!(!marker.exists(), "the forged command ran");

    // The bundle alone, as a file without the ledger's job: the command is refused.
    let (status, detail) = http_get(address, &format!("/api/matches/{job_id}")).expect("the match");
    assert_eq!(status, 200, "{detail}");
    let mut detail: serde_json::Value = serde_json::from_str(&detail).expect("JSON");
    assert!(detail["job"].is_object(), "the detail has the ledger's job: {detail}");
    detail.as_object_mut().expect("an object").remove("job");
    let file = dir.path().join("result.json");
    std::fs::write(&file, detail.to_string()).expect("write");
    let refused = Command::new(&worker)
        .args(["reproduce", "--result", path(&file), "--out", path(&dir.path().join("refused"))])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("seat 0 runs the command") && stderr.contains("--trust-commands"), "{stderr}");
    assert!(!marker.exists(), "the refused command ran");
}

/// The status of a `method` request for `path` to `address`.
fn status_of(address: SocketAddr, method: &str, path: &str) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write!(stream, "{method} {path} HTTP/1.0\r\nHost: test\r\n\r\n").expect("send the request");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read the response");
    let text = String::from_utf8_lossy(&response);
    text.split_whitespace().nth(1).and_then(|status| status.parse().ok()).unwrap_or_else(|| panic!("{text}"))
}

/// Anyone may send a method of their own making, 100 KB of it: the request counter
/// labels every such one `other`, so `/metrics` stays small, and a second flood of
/// new methods adds no series (what the coordinator keeps for them stays as it was).
#[test]
fn a_flood_of_made_up_methods_is_counted_as_other_and_metrics_stay_bounded() {
    const FLOOD: usize = 150;
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    play_tiny(dir.path(), &data);
    let (mut view, address) = start_view(&data);

    let flood = |first: usize| {
        for index in first..first + FLOOD {
            let method = format!("M{index}{}", "A".repeat(100_000));
            assert_eq!(status_of(address, &method, "/api/tournaments"), 405, "not a method /api/tournaments takes");
        }
    };
    let metrics = || {
        let (status, text) = http_get(address, "/metrics").expect("/metrics answers");
        assert_eq!(status, 200, "{text}");
        text
    };
    let series = |text: &str| -> std::collections::BTreeSet<String> {
        text.lines()
            .filter(|line| line.starts_with("farm_coordinator_api_requests_total{"))
            .filter_map(|line| line.rsplit_once(' ').map(|(labels, _)| labels.to_owned()))
            .collect()
    };
    // Asked once before, so that its own series is there after each flood.
    metrics();
    flood(0);
    let after_one = metrics();
    flood(FLOOD);
    let after_two = metrics();

    assert!(after_two.len() < 1 << 20, "/metrics is {} bytes", after_two.len());
    assert_eq!(series(&after_one), series(&after_two), "the second flood made no new series");
    let flooded = after_two
        .lines()
        .find(|line| {
            line.starts_with("farm_coordinator_api_requests_total{")
                && line.contains("method=\"other\"")
                && line.contains("route=\"/api/tournaments\"")
                && line.contains("status=\"405\"")
        })
        .unwrap_or_else(|| panic!("no series for the flood: {after_two}"));
    assert!(flooded.ends_with(&format!(" {}", 2 * FLOOD)), "each request is counted: {flooded}");
    let methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE", "other"];
    for labels in series(&after_two) {
        assert!(methods.iter().any(|method| labels.contains(&format!("method=\"{method}\""))), "{labels}");
    }

    interrupt(&view.0);
    let status = exit_within(&mut view.0, Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
}
