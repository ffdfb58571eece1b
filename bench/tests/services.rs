//! `farm-bench`'s runs against the suite's RabbitMQ, S3 server and Docker engine.
//!
//! `farm-bench fleet --quick --faults`: a small fleet of simulated workers, each its own broker user, plays a round robin, an
//! SPRT and a ladder through a real `farm-coordinator serve`; the coordinator takes every
//! answer (none refused by its validation), and the ledger holds every job the fleet
//! answered exactly once. Then the fault run: a tournament played to its end while a
//! group of workers is killed and the broker restarted, every job recorded once.
//!
//! `farm-bench --quick --only e2e`: the same tournament with process bots, reused and
//! fresh containers, at 1, 2 and 4 workers, each after its warm-up.
//!
//! (No timing thresholds: only that each figure is there and what must hold holds.)

use std::process::Command;

use serde_json::Value;

const FARM_BENCH: &str = env!("CARGO_BIN_EXE_farm-bench");

fn at<'a>(report: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(report, |value, key| &value[key])
}

fn count(report: &Value, path: &str) -> u64 {
    at(report, path).as_u64().unwrap_or_else(|| panic!("{path} is not a count: {}", at(report, path)))
}

/// Runs `farm-bench` with `args` and an `--out` of its own; its report.
fn bench(args: &[&str]) -> Value {
    for variable in
        ["FARM_TEST_AMQP_URL", "FARM_TEST_RABBITMQ_MGMT", "FARM_TEST_RABBITMQ_SCRIPT", "FARM_TEST_S3_ENDPOINT"]
    {
        assert!(std::env::var_os(variable).is_some(), "{variable} is not set: start the services (scripts/test does)");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("report.json");
    let output = Command::new(FARM_BENCH).args(args).arg("--out").arg(&out).output().expect("farm-bench runs");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{table}\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(&std::fs::read_to_string(&out).expect("the report")).expect("JSON")
}

/// A figure that must be a positive, finite number.
fn positive(report: &Value, path: &str) -> f64 {
    let value = at(report, path).as_f64().unwrap_or_else(|| panic!("{path}: {}", at(report, path)));
    assert!(value > 0.0 && value.is_finite(), "{path} = {value}");
    value
}

#[test]
fn a_simulated_fleet_is_recorded_exactly_once_even_through_faults() {
    let report = bench(&["fleet", "--quick", "--faults", "--audit-fraction", "0.5"]);
    let fleet = &report["sections"]["fleet"];

    // The quick point: 20 workers of their own, every one connected to RabbitMQ.
    let point = &fleet["w20_m1"];
    assert_eq!(count(point, "workers"), 20);
    assert!(count(point, "rabbitmq.connections") >= 20, "{point}");
    for figure in ["results_per_second", "demand_results_per_second", "coordinator.cpu_cores", "api.p99_ms"] {
        positive(point, figure);
    }
    assert_eq!(count(point, "api.failed"), 0, "{point}");
    assert!(at(point, "job_latency_p99_seconds").as_f64().is_some_and(|p99| p99 > 0.0), "{point}");
    // The coordinator's validation refused none of the fleet's answers (results and
    // audit verdicts alike, from their own users and with their tokens), and the ledger
    // holds exactly what the fleet answered.
    assert_eq!(count(point, "refused_answers"), 0, "{point}");
    let once = &point["exactly_once"];
    assert_eq!(once["holds"], true, "{once}");
    assert!(count(once, "answered") > 0);
    assert_eq!(count(once, "answered"), count(once, "recorded"), "{once}");

    // The faults: the tournament finished, every job recorded once, through a group's
    // death (their matches redelivered) and a broker restart (everyone reconnected).
    let faults = &fleet["faults"];
    assert!(count(faults, "workers_killed") > 0, "{faults}");
    assert!(count(faults, "reconnects") > 0, "{faults}");
    let once = &faults["exactly_once"];
    assert_eq!(once["holds"], true, "{once}");
    assert_eq!(count(once, "recorded"), count(faults, "jobs"), "{once}");
    assert_eq!(count(once, "lost"), 0);
    assert_eq!(count(once, "unexplained"), 0);
}

#[test]
fn every_sandbox_is_measured_at_each_concurrency_after_its_warm_up() {
    let report = bench(&["--quick", "--only", "e2e"]);
    let e2e = &report["sections"]["e2e"];
    for label in ["one_worker", "two_workers", "four_workers"] {
        for variant in ["process", "docker", "docker_fresh"] {
            let run = &e2e[variant][label];
            assert!(count(run, "matches") > 0, "{variant} {label}: {run}");
            for figure in ["matches_per_second", "cpu_ms_per_match", "warm_up_seconds", "warm_up_cpu_ms"] {
                positive(run, figure);
            }
            if variant != "process" {
                // Exact, from Docker's cgroup, and a part of the machine's whole.
                let containers = positive(run, "cpu_ms_per_match_in_containers");
                assert!(containers < positive(run, "cpu_ms_per_match"), "{variant} {label}: {run}");
            }
        }
        positive(e2e, &format!("cpu_per_match_docker_over_process.{label}"));
        positive(e2e, &format!("cpu_per_match_docker_fresh_over_process.{label}"));
    }
}
