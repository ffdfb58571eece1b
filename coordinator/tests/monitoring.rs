//! The monitoring configuration against a real farm: the Debian package's Prometheus
//! scrapes a `farm-coordinator serve` process, two `farm-worker serve` processes
//! (Docker bots) and the test RabbitMQ while a Botwars tournament runs, with the alert
//! rules of `deploy/prometheus/alerts.yml` loaded. Then every PromQL expression of the
//! Grafana dashboards (`deploy/grafana/dashboards/*.json`) and of the alert rules must
//! be accepted by Prometheus, every rule must evaluate without error, and every
//! dashboard expression must return data.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use farm_coordinator::client::percent_encode;
use farm_testkit::{Vhost, WorkerProcess, eventually, free_port, http_get, repo, required};
use serde_json::Value;
use support::{CoordinatorProcess, TOKEN, cli};

/// What Grafana's `$__rate_interval` becomes in the expressions sent here: Grafana
/// makes it at least four scrape intervals (the datasource's `timeInterval`), and one
/// minute covers many of this test's 1 s scrapes.
const RATE_INTERVAL: &str = "1m";

/// A private `prometheus` process (the Debian package's binary, never its service),
/// on a free loopback port with its data in a temporary directory.
struct Prometheus {
    address: SocketAddr,
    child: Child,
    _data: tempfile::TempDir,
}

impl Prometheus {
    fn start(config: &str) -> Self {
        let data = tempfile::tempdir().expect("temp dir");
        let config_path = data.path().join("prometheus.yml");
        std::fs::write(&config_path, config).expect("write the Prometheus config");
        let address = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", data.path().join("tsdb").display()))
            .arg(format!("--web.listen-address={address}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("prometheus starts (scripts/test installs the Debian package)");
        let prometheus = Prometheus { address, child, _data: data };
        eventually(Duration::from_secs(30), "Prometheus is ready", || {
            http_get(address, "/-/ready").is_some_and(|(status, _)| status == 200)
        });
        prometheus
    }

    /// The `data` of a successful API answer to GET `path`.
    fn get(&self, path: &str) -> Value {
        let (status, body) = http_get(self.address, path).expect("Prometheus answers");
        let json: Value = serde_json::from_str(&body).unwrap_or_else(|error| panic!("GET {path}: {error}: {body}"));
        assert!(status == 200 && json["status"] == "success", "GET {path}: {status} {body}");
        json["data"].clone()
    }

    /// POSTs `expr` to `/api/v1/query`: the whole answer, successful or not.
    fn query(&self, expr: &str) -> Value {
        let body = format!("query={}", percent_encode(expr));
        let mut stream = TcpStream::connect(self.address).expect("connect to Prometheus");
        stream.set_read_timeout(Some(Duration::from_secs(30))).expect("read timeout");
        write!(
            stream,
            "POST /api/v1/query HTTP/1.0\r\nHost: test\r\nContent-Type: application/x-www-form-urlencoded\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .expect("send the query");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read the answer");
        let json = response.split_once("\r\n\r\n").map_or("", |(_, json)| json);
        serde_json::from_str(json).unwrap_or_else(|error| panic!("{expr}: {error}: {response}"))
    }

    /// The result of a successful query.
    fn result(&self, expr: &str) -> Vec<Value> {
        let answer = self.query(expr);
        assert_eq!(answer["status"], "success", "{expr}: {answer}");
        answer["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// The value of a query that returns one sample, if it does.
    fn scalar(&self, expr: &str) -> Option<f64> {
        match self.result(expr).as_slice() {
            [sample] => sample["value"][1].as_str().and_then(|value| value.parse().ok()),
            _ => None,
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The scrape configuration of `deploy/prometheus/prometheus.yml` (same job names,
/// same RabbitMQ endpoint and families) with this test's addresses, a 1 s interval,
/// and the alert rules of `deploy/prometheus/alerts.yml`.
fn prometheus_config(coordinator: SocketAddr, workers: &[SocketAddr], rabbitmq: &str, alerts: &Path) -> String {
    let workers = workers.iter().map(|worker| format!("\"{worker}\"")).collect::<Vec<_>>().join(", ");
    format!(
        r#"
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - "{alerts}"
scrape_configs:
  - job_name: coordinator
    static_configs:
      - targets: ["{coordinator}"]
  - job_name: worker
    static_configs:
      - targets: [{workers}]
  - job_name: rabbitmq
    metrics_path: /metrics/detailed
    params:
      family: [queue_coarse_metrics, queue_consumer_count]
    static_configs:
      - targets: ["{rabbitmq}"]
  - job_name: rabbitmq-node
    static_configs:
      - targets: ["{rabbitmq}"]
"#,
        alerts = alerts.display()
    )
}

/// A Botwars round robin of two built-in bots and one Docker image (so that container
/// start latency has data): 3 bots, 6 ordered pairs, one game each.
fn tournament_file(dir: &Path) -> PathBuf {
    let text = r#"
name = "monitoring"
game = "botwars"
format = "round-robin"
games_per_pairing = 1
seed = 5

[[bots]]
name = "gatherer"
builtin = "gatherer"

[[bots]]
name = "random"
builtin = "random"

[[bots]]
name = "random-rs"
image = "matchfarm/bot-botwars-random-rs"
"#;
    let path = dir.join("tournament.toml");
    std::fs::write(&path, text).expect("write the tournament file");
    path
}

/// A dashboard panel's query.
struct DashboardQuery {
    dashboard: String,
    panel: String,
    legend: String,
    expr: String,
}

/// Every target of every panel (rows' nested panels included) of every dashboard.
fn dashboard_queries(dir: &Path) -> Vec<DashboardQuery> {
    fn walk(dashboard: &str, panels: &[Value], out: &mut Vec<DashboardQuery>) {
        for panel in panels {
            let title = panel["title"].as_str().unwrap_or_default();
            if panel["type"] != "row" {
                assert_eq!(panel["datasource"]["uid"], "prometheus", "{dashboard}: {title}: datasource");
            }
            for target in panel["targets"].as_array().into_iter().flatten() {
                let expr =
                    target["expr"].as_str().unwrap_or_else(|| panic!("{dashboard}: {title}: a target without expr"));
                out.push(DashboardQuery {
                    dashboard: dashboard.to_owned(),
                    panel: title.to_owned(),
                    legend: target["legendFormat"].as_str().unwrap_or_default().to_owned(),
                    expr: expr.to_owned(),
                });
            }
            walk(dashboard, panel["panels"].as_array().map_or(&[], Vec::as_slice), out);
        }
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("deploy/grafana/dashboards")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "json"))
        .collect();
    files.sort();
    let mut queries = Vec::new();
    for file in &files {
        let name = file.file_name().expect("a file name").to_string_lossy().into_owned();
        let text = std::fs::read_to_string(file).expect("read the dashboard");
        let dashboard: Value = serde_json::from_str(&text).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(dashboard["uid"].is_string() && dashboard["title"].is_string(), "{name}: uid and title");
        walk(&name, dashboard["panels"].as_array().map_or(&[], Vec::as_slice), &mut queries);
    }
    for name in ["farm-overview.json", "match-internals.json", "coordinator.json"] {
        assert!(queries.iter().any(|query| query.dashboard == name), "{name} has no queries");
    }
    queries
}

/// A sample's labels and value, for the report.
fn describe(sample: &Value) -> String {
    let labels = sample["metric"]
        .as_object()
        .map(|labels| labels.iter().map(|(key, value)| format!("{key}={value}")).collect::<Vec<_>>().join(","))
        .unwrap_or_default();
    format!("{{{labels}}} {}", sample["value"][1].as_str().unwrap_or("?"))
}

#[test]
fn prometheus_accepts_every_dashboard_and_alert_expression_and_the_dashboards_show_data() {
    let deploy = repo().join("deploy");
    let alerts = deploy.join("prometheus/alerts.yml");

    // The compose configuration itself (DNS discovery, rule files) is valid.
    let check = Command::new("promtool")
        .args(["check", "config"])
        .arg(deploy.join("prometheus/prometheus.yml"))
        .output()
        .expect("promtool runs (Debian package prometheus)");
    assert!(check.status.success(), "promtool check config: {}", String::from_utf8_lossy(&check.stdout));

    let vhost = Vhost::new("monitoring");
    let dir = tempfile::tempdir().expect("temp dir");
    let coordinator = CoordinatorProcess::start(&vhost, &dir.path().join("ledger.sqlite"));
    let workers = [
        WorkerProcess::start(&vhost, &farm_testkit::unique("mon-a"), 1, 5),
        WorkerProcess::start(&vhost, &farm_testkit::unique("mon-b"), 1, 5),
    ];
    let rabbitmq = required("FARM_TEST_RABBITMQ_PROMETHEUS");
    let rabbitmq = rabbitmq.trim_start_matches("http://").trim_end_matches('/');
    let worker_addresses: Vec<SocketAddr> = workers.iter().map(|worker| worker.metrics).collect();
    let prometheus = Prometheus::start(&prometheus_config(coordinator.api, &worker_addresses, rabbitmq, &alerts));

    // The coordinator, two workers, and RabbitMQ's two endpoints.
    eventually(Duration::from_secs(60), "Prometheus scrapes all 5 targets", || {
        let targets = prometheus.get("/api/v1/targets?state=active");
        let active = targets["activeTargets"].as_array().cloned().unwrap_or_default();
        active.len() == 5 && active.iter().all(|target| target["health"] == "up")
    });
    assert_eq!(prometheus.scalar("sum(up)"), Some(5.0));

    // A tournament, played to the end, with an API read of its standings.
    let url = coordinator.url();
    let file = tournament_file(dir.path());
    let id = cli(&["submit", file.to_str().expect("UTF-8 path"), "--url", &url, "--token", TOKEN]).trim().to_owned();
    let total = coordinator.progress(&id)["total"].as_u64().expect("total");
    assert_eq!(total, 6, "3 bots, 6 ordered pairs");
    eventually(Duration::from_secs(300), "every match is recorded", || {
        let progress = coordinator.progress(&id);
        progress["done"].as_u64().zip(progress["failed"].as_u64()).is_some_and(|(done, failed)| done + failed == total)
    });
    assert_eq!(coordinator.progress(&id)["done"], total, "no match failed");
    cli(&["standings", &id, "--url", &url, "--format", "json"]);

    // Prometheus has scraped the final values of what changed last (the coordinator
    // refreshes its job gauges every few seconds).
    let wanted = total as f64;
    eventually(Duration::from_secs(60), "Prometheus has the final counts", || {
        prometheus.scalar("sum(farm_coordinator_results_ingested_total)") == Some(wanted)
            && prometheus.scalar(r#"sum(farm_coordinator_jobs{state="done"})"#) == Some(wanted)
            && prometheus.scalar(r#"sum(farm_worker_matches_total{outcome="completed"})"#) == Some(wanted)
            && prometheus
                .scalar("sum(farm_coordinator_standings_compute_seconds_count)")
                .is_some_and(|count| count >= 1.0)
            && prometheus.scalar("sum(farm_worker_jobs_in_flight)") == Some(0.0)
            && prometheus.scalar(&format!(
                r#"sum(rabbitmq_detailed_queue_messages_ready{{vhost="{}",queue="farm.jobs"}})"#,
                vhost.name
            )) == Some(0.0)
    });

    // Every dashboard expression is accepted and returns data.
    let queries = dashboard_queries(&deploy.join("grafana/dashboards"));
    let mut empty = Vec::new();
    for query in &queries {
        let expr = query.expr.replace("$__rate_interval", RATE_INTERVAL);
        assert!(!expr.contains('$'), "{} / {}: an unknown variable in {expr}", query.dashboard, query.panel);
        let answer = prometheus.query(&expr);
        assert_eq!(answer["status"], "success", "{} / {}: {expr}: {answer}", query.dashboard, query.panel);
        let result = answer["data"]["result"].as_array().cloned().unwrap_or_default();
        let samples: Vec<String> = result.iter().take(4).map(describe).collect();
        println!(
            "{} / {} [{}]: {} series: {}",
            query.dashboard,
            query.panel,
            query.legend,
            result.len(),
            samples.join("; ")
        );
        if result.is_empty() {
            empty.push(format!("{} / {}: {expr}", query.dashboard, query.panel));
        }
    }
    assert!(empty.is_empty(), "dashboard expressions without data:\n{}", empty.join("\n"));

    // Every alert rule is loaded, evaluates without error, and its expression is accepted.
    let rule_count = std::fs::read_to_string(&alerts)
        .expect("read alerts.yml")
        .lines()
        .filter(|line| line.trim_start().starts_with("- alert:"))
        .count();
    assert!(rule_count >= 4, "alerts.yml has {rule_count} alerts");
    let rules = || -> Vec<Value> {
        let data = prometheus.get("/api/v1/rules?type=alert");
        data["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|group| group["rules"].as_array().cloned().unwrap_or_default())
            .collect()
    };
    eventually(Duration::from_secs(30), "every alert rule has been evaluated", || {
        let rules = rules();
        rules.len() == rule_count && rules.iter().all(|rule| rule["health"] != "unknown")
    });
    for rule in rules() {
        let name = rule["name"].as_str().unwrap_or_default();
        let query = rule["query"].as_str().expect("a rule's query");
        assert_eq!(rule["health"], "ok", "alert {name}: {rule}");
        assert!(rule["lastError"].as_str().unwrap_or_default().is_empty(), "alert {name}: {rule}");
        let answer = prometheus.query(query);
        assert_eq!(answer["status"], "success", "alert {name}: {query}: {answer}");
        println!(
            "alert {name}: {}, {} series now",
            rule["state"],
            answer["data"]["result"].as_array().map_or(0, Vec::len)
        );
    }

    drop(prometheus);
    for worker in workers {
        assert!(worker.terminate().success(), "the worker drains and exits");
    }
}
