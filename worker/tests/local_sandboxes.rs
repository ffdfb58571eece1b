//! The local sandboxes against the hostile bots of `bots/hostile/`, run as real local
//! processes through `farm-worker play`. Under `isolated` each gets the status its
//! container gets (`service.rs` holds the same table for Docker), and nothing escapes:
//! no file written outside its own `/tmp`, no network, no secret of the worker's
//! environment, no process left after the match. Under `local` (contained, not
//! isolated) no process is left either, and a bot's own signal kills it as in Docker.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use command_fds::{CommandFdExt, FdMapping};

use serde_json::Value;

const WORKER: &str = env!("CARGO_BIN_EXE_farm-worker");
/// Set in the worker's environment: no bot may see it.
const SECRET_NAME: &str = "FARM_STORAGE__SECRET_ACCESS_KEY";
const SECRET_VALUE: &str = "never-shown-to-a-bot";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A marker for one match's command lines, to find its processes in `/proc`.
fn marker(sandbox: &str, name: &str, uid: Option<u32>) -> String {
    format!("farm-test-{sandbox}-{name}-{}-{}", uid.unwrap_or(0), std::process::id())
}

/// The processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(marker) {
                found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// What one match of a hostile bot gave: its seat's status, OOM flag and log.
struct Played {
    status: String,
    oom_killed: bool,
    log: String,
    others_ok: bool,
    /// In the bot's command line (see [`marker`]).
    marker: String,
}

/// What a match of a hostile bot may have beyond [`play`]'s.
#[derive(Default)]
struct Setup {
    /// The worker's user.
    uid: Option<u32>,
    /// More words of the bot's command line.
    args: String,
    /// A descriptor the worker inherits, as its descriptor [`INHERITED_FD`].
    inherited: Option<OwnedFd>,
}

/// Where [`Setup::inherited`] is, in the worker.
const INHERITED_FD: i32 = 7;

/// Plays a 40-turn Vindinium match of hostile bot `name` (seat 0) against three
/// built-in bots in `sandbox`.
fn play(sandbox: &str, name: &str) -> Played {
    play_with(sandbox, name, Setup::default())
}

/// [`play`], as `setup` says.
fn play_with(sandbox: &str, name: &str, setup: Setup) -> Played {
    let out = tempfile::tempdir().expect("temp dir");
    let marker = marker(sandbox, name, setup.uid);
    let bot = format!("cmd:python3 bots/hostile/{name}.py {marker} {}", setup.args);
    let mut worker = Command::new(WORKER);
    if let Some(uid) = setup.uid {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(out.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
        std::os::unix::process::CommandExt::uid(&mut worker, uid);
        std::os::unix::process::CommandExt::gid(&mut worker, uid);
    }
    if let Some(fd) = setup.inherited {
        worker.fd_mappings(vec![FdMapping { parent_fd: fd, child_fd: INHERITED_FD }]).expect("one mapping");
    }
    let output = worker
        .args(["play", "--out", out.path().to_str().expect("utf-8"), "--sandbox", sandbox])
        .args(["--game", "vindinium", "--seed", "3", "--rules", &rules(name)])
        .args(["--bot", &bot, "--bot", "builtin:greedy", "--bot", "builtin:random", "--bot", "builtin:random"])
        .env(SECRET_NAME, SECRET_VALUE)
        .current_dir(repo())
        .output()
        .expect("farm-worker runs");
    assert!(output.status.success(), "{name} in {sandbox}: play failed: {}", String::from_utf8_lossy(&output.stderr));
    let result: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("result.json")).expect("result.json")).expect("JSON");
    let seats = result["seats"].as_array().expect("seats");
    Played {
        status: seats[0]["status"].as_str().expect("status").to_owned(),
        oom_killed: seats[0]["exit"]["oom_killed"].as_bool().unwrap_or(false),
        log: std::fs::read_to_string(out.path().join("seat-0.stderr.log")).unwrap_or_default(),
        others_ok: seats[1..].iter().all(|seat| seat["status"] == "ok"),
        marker,
    }
}

/// The match rules for the hostile bot `name`: 40 moves, and a move deadline that only
/// a bot meant to miss it misses. The bots that must time out get Vindinium's 1 s; the
/// others 10 s, so that a reply delayed by a loaded machine (the suite plays two of
/// these matches at once, beside other tests) is not taken for a late bot.
fn rules(name: &str) -> String {
    let times_out = CASES.iter().any(|(case, status, _)| *case == name && *status == "timed_out");
    let move_timeout_ms = if times_out { 1_000 } else { 10_000 };
    format!(r#"{{"maxTurns":40,"moveTimeoutMs":{move_timeout_ms}}}"#)
}

/// Names a bot may find in its environment: the farm's, and what a launcher on the
/// `PATH` adds of its own (pyenv's `python3` shim, a bash script, where it is first).
fn allowed_in_environment(name: &str) -> bool {
    ["FARM_SEAT", "FARM_SEED", "HOME", "LANG", "PATH", "PWD", "SHLVL"].contains(&name)
        || name.starts_with("PYENV_")
        || name.starts_with("_PYENV_")
}

/// Checks what only a log can show; `None` if all is well.
fn check_log(name: &str, log: &str) -> Option<String> {
    let wrong = match name {
        "stderr-flood" => log.len() != 64 * 1024,
        "network" => {
            !log.contains("network: blocked (127.0.0.1:5672") || log.contains("OPEN") || !log.contains("interfaces lo")
        }
        "write-outside-tmp" => {
            !(log.contains("write /etc/escape.txt: blocked") && log.contains("write /tmp/ok.txt: ok"))
        }
        "orphan" => !log.contains("orphan: left 10"),
        "fd-hog" => !log.contains("fd-hog: nofile 1024 1024 core 0 0") || !log.contains("files, then [Errno 24]"),
        "ahead" => log != "ahead: writing 20000 replies ahead\n",
        "read-env" => {
            let names = log.lines().find_map(|line| line.strip_prefix("read-env: ")).unwrap_or("?");
            log.contains(SECRET_VALUE) || names.split(' ').any(|name| !allowed_in_environment(name))
        }
        _ => false,
    };
    wrong.then(|| format!("{name}: unexpected log: {}", log.chars().take(600).collect::<String>()))
}

/// (bot, status, OOM-killed): as `service.rs` expects of the same bots in containers.
const CASES: [(&str, &str, bool); 16] = [
    ("crash-start", "crashed", false),
    ("crash-mid", "crashed", false),
    ("segfault", "crashed", false),
    ("spin", "timed_out", false),
    ("sleepy", "timed_out", false),
    ("endless-line", "timed_out", false),
    ("stderr-flood", "ok", false),
    ("fork-bomb", "ok", false),
    ("memory-bomb", "crashed", true),
    ("network", "ok", false),
    ("write-outside-tmp", "ok", false),
    ("wrong-shape", "ok", false),
    ("orphan", "ok", false),
    ("read-env", "ok", false),
    ("ahead", "ok", false),
    ("fd-hog", "ok", false),
];

#[test]
fn isolated_hostile_bots_get_their_container_status_and_nothing_escapes() {
    let host_tmp_file = Path::new("/tmp/ok.txt");
    let existed = host_tmp_file.exists();
    // Two at a time: the machine has two cores, and each match is mostly waiting.
    let mut failures = Vec::new();
    let mut table = Vec::new();
    for pair in CASES.chunks(2) {
        let played: Vec<(usize, Played)> = std::thread::scope(|scope| {
            let handles: Vec<_> = pair
                .iter()
                .enumerate()
                .map(|(i, (name, _, _))| (i, scope.spawn(move || play("isolated", name))))
                .collect();
            handles.into_iter().map(|(i, handle)| (i, handle.join().expect("match thread"))).collect()
        });
        for (i, played) in played {
            let (name, status, oom) = pair[i];
            table.push(format!("{name:18} {:10} oom={}", played.status, played.oom_killed));
            if (played.status.as_str(), played.oom_killed) != (status, oom) || !played.others_ok {
                failures.push(format!(
                    "{name}: status {} oom {} (others ok: {}), expected {status} oom {oom}",
                    played.status, played.oom_killed, played.others_ok
                ));
            }
            failures.extend(check_log(name, &played.log));
            let left = processes_with(&played.marker);
            if !left.is_empty() {
                failures.push(format!("{name}: processes left: {left:?}"));
            }
        }
    }
    println!("isolated sandbox, hostile bots:\n{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(host_tmp_file.exists(), existed, "a bot's /tmp is its own, not the host's");
}

#[test]
fn local_bots_leave_no_process_and_die_of_their_own_signals_as_in_docker() {
    for name in ["orphan", "segfault", "read-env", "fd-hog"] {
        let played = play("local", name);
        let expected = if name == "segfault" { "crashed" } else { "ok" };
        assert_eq!(played.status, expected, "{name}: {}", played.log);
        assert!(played.others_ok, "{name}: the other bots play on");
        if let Some(problem) = check_log(name, &played.log) {
            panic!("{problem}");
        }
        let left = processes_with(&played.marker);
        assert!(left.is_empty(), "{name}: processes left: {left:?}");
    }
}

/// A worker that cannot make cgroups (not root) holds its local bots in a PID namespace
/// instead: the orphans still end with the match.
#[test]
fn without_cgroups_a_pid_namespace_ends_every_process_of_a_local_bot() {
    assert!(running_as_root(), "the suite runs as root (scripts/test), so it can run a worker as another user");
    let played = play_with("local", "orphan", Setup { uid: Some(10001), ..Setup::default() });
    assert_eq!(played.status, "ok", "{}", played.log);
    assert!(check_log("orphan", &played.log).is_none(), "{}", played.log);
    let left = processes_with(&played.marker);
    assert!(left.is_empty(), "processes left: {left:?}");
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status.lines().any(|line| line.starts_with("Uid:") && line.split_whitespace().nth(1) == Some("0"))
    })
}

/// An isolated bot sees its own directory and the system's, nothing else of the host:
/// neither the farm's directory (its config) nor another bot's code nor the farm's data;
/// it holds no descriptor of the worker's but its stdio, even one the worker inherited
/// (in `local` neither); and Docker's seccomp filter holds: `keyctl`, `ptrace` of
/// another process and `unshare` fail with EPERM.
#[test]
fn an_isolated_bot_reads_nothing_of_the_farms_inherits_no_descriptor_and_is_filtered() {
    let data = tempfile::tempdir().expect("temp dir");
    let ledger = data.path().join("ledger.sqlite");
    std::fs::write(&ledger, "the farm's data").expect("a ledger");
    let written = data.path().join("inherited.txt");
    // The bot tries every descriptor it holds beyond its stdio: the file stays empty.
    let play_inheriting = |sandbox| {
        let inherited = std::fs::File::create(&written).expect("a file for the worker to inherit");
        let setup =
            Setup { args: format!("read:{}", ledger.display()), inherited: Some(inherited.into()), ..Setup::default() };
        let played = play_with(sandbox, "break-out", setup);
        assert_eq!(played.status, "ok", "{sandbox}: {}", played.log);
        assert!(played.log.contains("break-out: fds: none beyond stdio"), "{sandbox}: {}", played.log);
        assert_eq!(std::fs::read_to_string(&written).expect("read"), "", "{sandbox}: written through fd 7");
        played
    };
    let played = play_inheriting("isolated");
    for path in ["Cargo.toml", "bots/vindinium/random_bot.py", ledger.to_str().expect("UTF-8")] {
        assert!(played.log.contains(&format!("break-out: read {path}: blocked")), "{path}: {}", played.log);
    }
    for call in ["keyctl", "ptrace", "unshare"] {
        let denied = format!("break-out: {call}: blocked ([Errno 1] Operation not permitted)");
        assert!(played.log.contains(&denied), "{call}: {}", played.log);
    }
    play_inheriting("local");
}

#[test]
fn the_isolated_sandbox_reports_a_missing_bubblewrap_by_name() {
    let output = Command::new(WORKER)
        .args(["play", "--sandbox", "isolated", "--game", "vindinium", "--bot", "cmd:true"])
        .env("PATH", "/nonexistent")
        .current_dir(repo())
        .output()
        .expect("farm-worker runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bwrap") && stderr.contains("bubblewrap"), "{stderr}");
}
