//! One status per fault, in every sandbox: each hostile bot of `bots/hostile/` that
//! fails (exits at its start or mid-match, exits while a child holds its stdout, closes
//! its stdout and stays, dies of a signal, answers too late) plays one Vindinium match
//! through `farm-worker play` in `docker`, `isolated` and `local`, and gets the same
//! status and the same record of its end in all three: requests, timeouts, exit code or
//! signal, and whether it had exited before the match ended.
//!
//! Each also gets the same crash report: the one-line reason (how and where it ended),
//! the request it did not answer and its stderr's last line, the one that shows its
//! fault.
//!
//! A bot's own exit ends whatever it left running, in every sandbox, so the child of
//! `exit-with-child` that holds its stdout does not keep it waiting for its deadline:
//! crashed with no timeout and its own exit code, which tells "at once" apart from "at
//! its deadline" (`timed_out`, one timeout) without reading a clock.

use std::path::{Path, PathBuf};
use std::process::Command;

use farm_proto::PlayerStatus;
use serde_json::Value;

const WORKER: &str = env!("CARGO_BIN_EXE_farm-worker");
const SANDBOXES: [&str; 3] = ["docker", "isolated", "local"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// How a match ended for a bot, as its seat in `result.json` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ending {
    status: PlayerStatus,
    requests: u64,
    timeouts: u64,
    /// Its exit code, if it exited by itself.
    code: Option<i64>,
    /// The signal that ended it: 9 for a bot still running at the end, and killed.
    signal: Option<i64>,
    /// Whether it had exited before the match ended.
    exited_early: bool,
}

/// A hostile mode, the ending every sandbox must give it, a line of its log that
/// shows it got as far as its fault (a bot that could not even start crashes too), and
/// its crash report's reason.
struct Fault {
    mode: &'static str,
    ending: Ending,
    log: &'static str,
    reason: &'static str,
}

/// A bot that exits by itself: crashed at its last request, with no timeout.
const fn exits(requests: u64, code: Option<i64>, signal: Option<i64>) -> Ending {
    Ending { status: PlayerStatus::Crashed, requests, timeouts: 0, code, signal, exited_early: true }
}

/// A bot still running when the match ends: killed then.
const fn killed_at_end(status: PlayerStatus, requests: u64, timeouts: u64) -> Ending {
    Ending { status, requests, timeouts, code: None, signal: Some(9), exited_early: false }
}

const FAULTS: [Fault; 6] = [
    Fault {
        mode: "crash-start",
        ending: exits(1, Some(1), None),
        log: "crash-start: exiting with status 1",
        reason: "exited with code 1 before its first reply",
    },
    Fault {
        mode: "crash-mid",
        ending: exits(6, Some(2), None),
        log: "crash-mid: answered 5 requests",
        reason: "exited with code 2 at request 6",
    },
    Fault {
        mode: "exit-with-child",
        ending: exits(4, Some(3), None),
        log: "exit-with-child: answered 3 requests",
        reason: "exited with code 3 at request 4",
    },
    Fault {
        mode: "close-stdout",
        ending: killed_at_end(PlayerStatus::Crashed, 4, 0),
        log: "close-stdout: answered 3 requests",
        reason: "closed its output at request 4",
    },
    Fault {
        mode: "segfault",
        ending: exits(4, None, Some(11)),
        log: "segfault: answered 3 requests",
        reason: "killed by signal 11 (SIGSEGV) at request 4",
    },
    Fault {
        mode: "sleepy",
        ending: killed_at_end(PlayerStatus::TimedOut, 1, 1),
        log: "sleepy: sleeping 3 s",
        reason: "did not answer its first request within 1000 ms",
    },
];

/// Plays a 40-turn Vindinium match of `fault`'s bot (seat 0) against three built-in
/// bots in `sandbox`; returns its ending, its log and its crash report.
fn play(sandbox: &str, fault: &Fault) -> (Ending, String, Value) {
    let bot = match sandbox {
        "docker" => format!("image:matchfarm/hostile {}", fault.mode),
        _ => format!("cmd:python3 bots/hostile/{}.py", fault.mode),
    };
    // A bot meant to time out gets no start-up grace and Vindinium's 1 s: `sleepy`
    // sleeps 3 s before any reply. The others get 20 s, so that no reply delayed by a
    // loaded machine is taken for a late one.
    let times_out = fault.ending.status == PlayerStatus::TimedOut;
    let (grace_ms, move_timeout_ms) = if times_out { (0, 1_000) } else { (5_000, 20_000) };
    let rules = format!(r#"{{"maxTurns":40,"moveTimeoutMs":{move_timeout_ms}}}"#);
    let out = tempfile::tempdir().expect("temp dir");
    let output = Command::new(WORKER)
        .args(["play", "--out", out.path().to_str().expect("utf-8"), "--sandbox", sandbox])
        .args(["--game", "vindinium", "--seed", "3", "--rules", &rules])
        .args(["--startup-grace-ms", &grace_ms.to_string()])
        .args(["--bot", &bot, "--bot", "builtin:greedy", "--bot", "builtin:random", "--bot", "builtin:random"])
        .current_dir(repo())
        .output()
        .expect("farm-worker runs");
    let mode = fault.mode;
    assert!(output.status.success(), "{mode} in {sandbox}: play failed: {}", String::from_utf8_lossy(&output.stderr));
    let result: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("result.json")).expect("result.json")).expect("JSON");
    let seat = &result["seats"][0];
    let number = |value: &Value| value.as_u64().unwrap_or_else(|| panic!("{mode} in {sandbox}: {seat}"));
    let ending = Ending {
        status: seat["status"].as_str().and_then(PlayerStatus::from_name).expect("a status"),
        requests: number(&seat["requests"]),
        timeouts: number(&seat["timeouts"]),
        code: seat["exit"]["code"].as_i64(),
        signal: seat["exit"]["signal"].as_i64(),
        exited_early: seat["exit"]["exited_early"].as_bool().expect("exited_early"),
    };
    let log = std::fs::read_to_string(out.path().join("seat-0.stderr.log")).unwrap_or_default();
    (ending, log, seat["crash"].clone())
}

#[test]
fn every_fault_reads_the_same_in_docker_isolated_and_local() {
    let mut table = vec![format!(
        "{:16} {:9} {:>9} {:>8} {:>8} {:>4} {:>6} early",
        "mode", "sandbox", "status", "requests", "timeouts", "code", "signal"
    )];
    let mut failures = Vec::new();
    for fault in &FAULTS {
        // The three sandboxes at once: each match is mostly waiting.
        let played: Vec<(Ending, String, Value)> = std::thread::scope(|scope| {
            let matches: Vec<_> = SANDBOXES.iter().map(|sandbox| scope.spawn(move || play(sandbox, fault))).collect();
            matches.into_iter().map(|played| played.join().expect("match thread")).collect()
        });
        for (sandbox, (ending, log, crash)) in SANDBOXES.iter().zip(played) {
            let show = |value: Option<i64>| value.map_or("-".to_owned(), |value| value.to_string());
            table.push(format!(
                "{:16} {sandbox:9} {:>9} {:>8} {:>8} {:>4} {:>6} {}",
                fault.mode,
                ending.status.name(),
                ending.requests,
                ending.timeouts,
                show(ending.code),
                show(ending.signal),
                ending.exited_early
            ));
            if ending != fault.ending {
                failures.push(format!("{} in {sandbox}: {ending:?}, expected {:?}", fault.mode, fault.ending));
            }
            if !log.contains(fault.log) {
                failures.push(format!("{} in {sandbox}: no {:?} in its log: {log}", fault.mode, fault.log));
            }
            // The report: its reason, the Vindinium state it was not answered (JSON), and
            // its log's line that shows the fault among the last ones.
            let tail =
                crash["stderr_tail"].as_array().map(|lines| lines.iter().filter_map(Value::as_str).collect::<Vec<_>>());
            let reported = crash["reason"] == fault.reason
                && crash["unanswered"].as_str().is_some_and(|request| request.starts_with('{'))
                && tail.is_some_and(|tail| tail.len() <= 20 && tail.iter().any(|line| line.contains(fault.log)));
            if !reported {
                failures
                    .push(format!("{} in {sandbox}: crash report {crash}, expected {:?}", fault.mode, fault.reason));
            }
        }
    }
    println!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
