//! Helpers for the coordinator's tests against the real services: a
//! `farm-coordinator serve` process and the CLI. The test crate that uses this module
//! also declares `mod common` (the worker's test helpers, `worker/tests/common`).
#![allow(dead_code)] // each test binary uses a different part of this module

pub mod chromium;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use farm_testkit::{Vhost, docker, eventually, free_port, http_get, repo, s3_environment};

pub const COORDINATOR: &str = env!("CARGO_BIN_EXE_farm-coordinator");
pub const TOKEN: &str = "farm-test-token-0123456789";

/// A `farm-coordinator serve` process on its own port, ledger and vhost.
pub struct CoordinatorProcess {
    pub api: SocketAddr,
    child: Child,
}

impl CoordinatorProcess {
    pub fn start(vhost: &Vhost, ledger: &Path) -> Self {
        Self::start_with(vhost, ledger, &[])
    }

    /// As [`CoordinatorProcess::start`], with extra environment variables (which win).
    pub fn start_with(vhost: &Vhost, ledger: &Path, env: &[(&str, &str)]) -> Self {
        let api = free_port();
        let child = Command::new(COORDINATOR)
            .arg("serve")
            .env("FARM_API_TOKEN", TOKEN)
            .env("FARM_LISTEN", api.to_string())
            .env("FARM_AMQP_URL", &vhost.url)
            .env("FARM_LEDGER_PATH", ledger)
            .env("FARM_BOT_LAUNCH", "docker")
            // A small window: when the coordinator is killed, most jobs are still in
            // the ledger only, and some are in the queue or being played.
            .env("FARM_MAX_OUTSTANDING", "4")
            .env("FARM_PUBLISH_BATCH", "2")
            .envs(s3_environment())
            .env("RUST_LOG", "farm_coordinator=info")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("farm-coordinator starts");
        let coordinator = CoordinatorProcess { api, child };
        eventually(Duration::from_secs(30), "the coordinator answers /healthz", || {
            http_get(api, "/healthz").is_some_and(|(status, _)| status == 200)
        });
        coordinator
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.api)
    }

    pub fn get_json(&self, path: &str) -> serde_json::Value {
        let (status, body) = http_get(self.api, path).expect("the coordinator answers");
        assert_eq!(status, 200, "GET {path}: {body}");
        let json = body.split_once("\r\n\r\n").map_or(body.as_str(), |(_, json)| json);
        serde_json::from_str(json).unwrap_or_else(|error| panic!("GET {path}: {error}: {json}"))
    }

    pub fn progress(&self, id: &str) -> serde_json::Value {
        self.get_json(&format!("/api/tournaments/{id}"))["progress"].clone()
    }

    /// The process's resident memory now (`VmRSS`), in bytes.
    pub fn resident_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("its /proc status");
        let kib = status.lines().find_map(|line| line.strip_prefix("VmRSS:")).expect("a VmRSS line");
        kib.trim().trim_end_matches("kB").trim().parse::<u64>().expect("a number of kB") << 10
    }

    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL the coordinator");
        self.child.wait().expect("reap the coordinator");
    }
}

impl Drop for CoordinatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the CLI; returns its stdout, failing on a non-zero exit.
/// A job as a forger makes one up from a public job id: no bots, and `token` for its
/// token (a guess, or none), answered as if it had been delivered.
pub fn forged_delivery(tournament_id: &str, job_id: &str, token: &str) -> farm_proto::JobEnvelope {
    let job = farm_proto::MatchJob {
        job_id: job_id.to_owned(),
        tournament_id: tournament_id.to_owned(),
        game: farm_proto::GameKind::Botwars,
        rules: serde_json::json!({}),
        map: None,
        seed: 0,
        bots: Vec::new(),
        isolation: None,
        clock: Default::default(),
    };
    farm_proto::JobEnvelope::new(job, token.to_owned())
}

pub fn cli(args: &[&str]) -> String {
    let output = Command::new(COORDINATOR).args(args).current_dir(repo()).output().expect("farm-coordinator runs");
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// A Botwars round robin of a built-in bot and two bots in containers (Rust and
/// Python): 3 bots, 6 ordered pairs, `games_per_pairing` games each.
pub fn container_botwars_round_robin(dir: &Path, name: &str, games_per_pairing: u32) -> PathBuf {
    let text = format!(
        r#"
name = "{name}"
game = "botwars"
format = "round-robin"
games_per_pairing = {games_per_pairing}
seed = 5

[[bots]]
name = "gatherer"
builtin = "gatherer"

[[bots]]
name = "random-rs"
image = "matchfarm/bot-botwars-random-rs"

[[bots]]
name = "random-py"
image = "matchfarm/bot-botwars-random-py"
"#
    );
    let path = dir.join("tournament.toml");
    std::fs::write(&path, text).expect("write the tournament file");
    path
}

/// The bot containers whose run root is under `run_dir`, running or not.
pub fn bot_containers_under(run_dir: &Path) -> Vec<String> {
    docker(&[
        "ps",
        "-a",
        "--filter",
        "label=matchfarm.run-root",
        "--format",
        "{{.Names}} {{.Label \"matchfarm.run-root\"}}",
    ])
    .lines()
    .filter(|line| line.split_once(' ').is_some_and(|(_, root)| Path::new(root).starts_with(run_dir)))
    .map(str::to_owned)
    .collect()
}
