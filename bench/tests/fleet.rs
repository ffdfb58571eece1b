//! `farm-bench fleet --quick --faults` against the suite's RabbitMQ and S3 server: a
//! small fleet of simulated workers, each its own broker user, plays a round robin, an
//! SPRT and a ladder through a real `farm-coordinator serve`; the coordinator takes every
//! answer (none refused by its validation), and the ledger holds every job the fleet
//! answered exactly once. Then the fault run: a tournament played to its end while a
//! group of workers is killed and the broker restarted, every job recorded once.
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

#[test]
fn a_simulated_fleet_is_recorded_exactly_once_even_through_faults() {
    for variable in
        ["FARM_TEST_AMQP_URL", "FARM_TEST_RABBITMQ_MGMT", "FARM_TEST_RABBITMQ_SCRIPT", "FARM_TEST_S3_ENDPOINT"]
    {
        assert!(std::env::var_os(variable).is_some(), "{variable} is not set: start the services (scripts/test does)");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("report.json");
    let output = Command::new(FARM_BENCH)
        .args(["fleet", "--quick", "--faults", "--audit-fraction", "0.5", "--out"])
        .arg(&out)
        .output()
        .expect("farm-bench runs");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{table}\n{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&out).expect("the report")).expect("JSON");
    let fleet = &report["sections"]["fleet"];

    // The quick point: 20 workers of their own, every one connected to RabbitMQ.
    let point = &fleet["w20_m1"];
    assert_eq!(count(point, "workers"), 20);
    assert!(count(point, "rabbitmq.connections") >= 20, "{point}");
    for figure in ["results_per_second", "demand_results_per_second", "coordinator.cpu_cores", "api.p99_ms"] {
        let value = at(point, figure).as_f64().unwrap_or_else(|| panic!("{figure}: {}", at(point, figure)));
        assert!(value > 0.0 && value.is_finite(), "{figure} = {value}");
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
