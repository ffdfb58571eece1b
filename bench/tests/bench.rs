//! `farm-bench --quick` runs its sections that need no broker (Docker ones included; the
//! live section's watched part when RabbitMQ is configured, as in scripts/test) and
//! writes a report in which every expected figure is there and positive. (No timing thresholds: the
//! figures depend on the machine; only their presence and sign are checked.)

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const FARM_BENCH: &str = env!("CARGO_BIN_EXE_farm-bench");

fn number(report: &Value, path: &str) -> f64 {
    let value = path.split('.').fold(report, |value, key| &value[key]);
    value.as_f64().unwrap_or_else(|| panic!("{path} is not a number: {value}"))
}

fn positive(report: &Value, path: &str) {
    let value = number(report, path);
    assert!(value > 0.0 && value.is_finite(), "{path} = {value}");
}

/// `path`'s figures, each positive. A part that needs Docker must not be skipped: the
/// suite runs with the Docker engine and the echo bot's images (scripts/test builds
/// them), so a skip here is a broken setup, reported with farm-bench's reason.
fn figures(report: &Value, path: &str, figures: &[&str]) {
    let part = path.split('.').fold(report, |value, key| &value[key]);
    assert!(part["skipped"].is_null(), "{path} was skipped: {}", part["skipped"]);
    for figure in figures {
        positive(report, &format!("{path}.{figure}"));
    }
}

#[test]
fn a_quick_run_reports_every_figure_of_its_sections() {
    let echo = Path::new(FARM_BENCH).with_file_name("bench-echo-bot");
    assert!(echo.exists(), "{} is missing: build the workspace first", echo.display());
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("report.json");
    let output = Command::new(FARM_BENCH)
        .args(["--quick", "--only", "engine,roundtrip,overhead,coordinator,sprt,live,export", "--out"])
        .arg(&out)
        .output()
        .expect("farm-bench runs");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{table}\n{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&out).expect("the report")).expect("JSON");

    assert_eq!(report["quick"], true);
    positive(&report, "cores");
    let sections = &report["sections"];
    assert_eq!(sections.as_object().map(|s| s.len()), Some(7), "only the sections asked for: {sections}");
    // The simulated SPRT: every row's rates are shares of its runs.
    for (table, rows) in [("two_player", 5), ("paired_4_seats", 5)] {
        let rows: Vec<&Value> = (0..rows).map(|row| &sections["sprt"][table][format!("row_{row}")]).collect();
        let rows_of = |row: &Value| row["truth"]["normalized_elo"].as_f64().expect("a true nElo");
        assert!(rows.windows(2).all(|pair| rows_of(pair[0]) < rows_of(pair[1])), "true differences rise: {rows:?}");
    }
    for (table, row) in [("two_player", "row_1"), ("two_player", "row_3"), ("paired_4_seats", "row_1")] {
        let row = &sections["sprt"][table][row];
        let shares: f64 = ["accepted_h1", "accepted_h0", "truncated"].iter().filter_map(|key| row[key].as_f64()).sum();
        assert!((shares - 1.0).abs() < 1e-9, "{row}");
        assert_eq!(row["runs"], 20, "{row}");
    }
    for game in ["vindinium", "botwars", "ostibot", "maze"] {
        positive(sections, &format!("engine.{game}.turns_per_second"));
        positive(sections, &format!("engine.{game}.matches"));
        assert!(table.contains(&format!("{game}.turns_per_second")), "the table shows {game}: {table}");
    }
    let latencies = ["samples", "p50_us", "p99_us", "mean_us"];
    for transport in [
        "builtin",
        "process_stdio",
        "process_http",
        "docker_stdio",
        "docker_http",
        "process_stdio_vindinium",
        "process_vindinium_server",
        "docker_vindinium_server",
    ] {
        figures(sections, &format!("roundtrip.{transport}"), &latencies);
    }
    positive(sections, "overhead.local_process.ms_per_match");
    // The overheads over process bots are differences, of either sign: only present.
    for mode in ["docker_reused", "docker_fresh"] {
        figures(sections, &format!("overhead.{mode}"), &["ms_per_match", "p50_ms"]);
        number(sections, &format!("overhead.{mode}.p50_overhead_over_process_ms"));
    }
    figures(sections, "overhead.docker_cold_start", &["p50_ms"]);
    positive(sections, "overhead.ratios.docker_reused_over_process");
    // Where a bot's time goes, phase by phase, from the worker's own histogram: a
    // reused container is only spawned in and reset; a fresh one is also prepared
    // (ahead, in the background) and removed.
    figures(sections, "overhead.phases.local", &["spawn_ms", "first_reply_ms", "end_ms"]);
    figures(sections, "overhead.phases.docker_reused", &["spawn_ms", "first_reply_ms", "end_ms", "reset_ms"]);
    let fresh = ["create_ms", "start_ms", "spawn_ms", "first_reply_ms", "end_ms", "reset_ms", "remove_ms"];
    figures(sections, "overhead.phases.docker_fresh", &fresh);
    for figure in [
        "bots",
        "jobs",
        "schedule_and_insert_seconds",
        "inserted_jobs_per_second",
        "publish.window",
        "publish.jobs_per_second",
        "publish.job_message_bytes",
        "ingest.results",
        "ingest.results_per_second",
    ] {
        positive(sections, &format!("coordinator.{figure}"));
    }
    assert_eq!(number(sections, "coordinator.jobs"), 100.0 * 99.0, "a round robin of 100 bots, ordered pairs");
    for figure in ["matches", "export_and_check_seconds", "matches_per_second", "peak_rss_mib", "results_mib"] {
        positive(sections, &format!("export.{figure}"));
    }
    assert_eq!(number(sections, "export.matches"), 30.0 * 29.0, "a round robin of 30 bots, ordered pairs");
    let live = ["worker_cpu_per_match_ms", "turn_round_trip_us"];
    figures(sections, "live.off", &live);
    figures(sections, "live.unwatched", &live);
    positive(sections, "live.unwatched_vs_off.worker_cpu");
    if std::env::var_os("FARM_TEST_AMQP_URL").is_some() {
        figures(sections, "live.watched", &live);
        positive(sections, "live.watched_vs_off.turn_round_trip");
    } else {
        assert!(sections["live"]["watched"]["skipped"].as_str().is_some_and(|why| why.contains("RabbitMQ")));
    }
}
