//! One slow match never hurts another: a match that outlives RabbitMQ's consumer
//! timeout costs its own delivery's channel, not the other matches of the worker.
//! Against the real RabbitMQ, with its consumer timeout shortened for this test (the
//! only test of this binary, and test binaries run one at a time).

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use farm_proto::{BotSpec, GameKind, MatchJob, MatchResult};
use farm_testkit::*;

/// Sets a `rabbit` application variable on the test broker and puts the old value
/// back when dropped. New channels read them: set before the worker starts.
struct BrokerSetting {
    key: &'static str,
    old: String,
}

fn rabbitmqctl_eval(expression: &str) -> String {
    let output =
        Command::new(required("FARM_TEST_RABBITMQCTL")).args(["eval", expression]).output().expect("rabbitmqctl runs");
    assert!(output.status.success(), "{expression}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

impl BrokerSetting {
    fn set(key: &'static str, value: u64) -> Self {
        let old = rabbitmqctl_eval(&format!("application:get_env(rabbit, {key})."));
        rabbitmqctl_eval(&format!("application:set_env(rabbit, {key}, {value})."));
        BrokerSetting { key, old }
    }
}

impl Drop for BrokerSetting {
    fn drop(&mut self) {
        let key = self.key;
        match self.old.strip_prefix("{ok,").and_then(|rest| rest.strip_suffix('}')) {
            Some(value) => rabbitmqctl_eval(&format!("application:set_env(rabbit, {key}, {value}).")),
            None => rabbitmqctl_eval(&format!("application:unset_env(rabbit, {key}).")),
        };
    }
}

/// A Botwars match of about five seconds: 20 turns of a bot that thinks 0.25 s,
/// well within its deadline.
fn slow_job(tournament: &str, job_id: &str) -> MatchJob {
    let slow: BotSpec = "cmd:sh -c 'while read line; do sleep 0.25; echo []; done'".parse().expect("bot spec");
    MatchJob {
        job_id: job_id.to_owned(),
        tournament_id: tournament.to_owned(),
        game: GameKind::Botwars,
        rules: serde_json::json!({ "maxTurns": 20, "replyTimeoutMs": 20000 }),
        map: None,
        seed: 3,
        bots: vec!["builtin:random".parse().expect("bot spec"), slow],
        isolation: None,
        clock: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_match_past_the_consumer_timeout_closes_its_own_channel_and_every_match_completes() {
    // Deliveries unacked for 1.5 s are taken back, checked every 200 ms.
    let _timeout = BrokerSetting::set("consumer_timeout", 1500);
    let _tick = BrokerSetting::set("channel_tick_interval", 200);
    let vhost = Vhost::new("consumer-timeout");
    let connection = vhost.connect().await;
    let tournament = unique("t-slow");
    publish_jobs(&connection, 5, &[slow_job(&tournament, "slow-1"), slow_job(&tournament, "slow-2")]).await;
    let mut results = results_consumer(&connection).await;
    let worker = WorkerProcess::start_with(
        &vhost,
        &unique("w-slow"),
        2,
        5,
        &[("FARM_SANDBOX", "local"), ("FARM_WARM_POOL", "off")],
    );

    // Both first plays end and publish their results, though RabbitMQ took both
    // deliveries back mid-match (and hands them out again: later attempts may follow).
    let mut first_plays: HashMap<String, MatchResult> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while first_plays.len() < 2 {
        let left = deadline.saturating_duration_since(Instant::now());
        let result = next_result(&mut results, left).await;
        if result.attempt == 1 {
            first_plays.insert(result.job_id.clone(), result.result);
        }
    }
    for (job, result) in &first_plays {
        assert!(matches!(result, MatchResult::Completed { .. }), "{job}: {result:?}");
    }
    assert!(
        worker.metric("farm_worker_job_channels_reopened_total") >= 1.0,
        "the consumer timeout never closed a channel: the test proves nothing"
    );
    assert_eq!(
        worker.metric("farm_worker_broker_reconnects_total"),
        0.0,
        "a closed job channel must not reconnect the worker (which ends every match)"
    );
    // Drained: the replays of the taken-back deliveries in flight finish first.
    assert!(worker.terminate().success());
}
