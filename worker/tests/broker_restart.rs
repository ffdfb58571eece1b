//! A RabbitMQ restart in the middle of a run. A test binary of its own: restarting
//! the broker would break the other service tests, which run in parallel within a
//! binary (cargo runs binaries one after another).

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use farm_proto::{GameKind, JOBS_QUEUE, MatchJob, MatchResult};
use farm_testkit::*;

#[tokio::test(flavor = "multi_thread")]
async fn the_worker_reconnects_after_a_broker_restart_and_the_remaining_jobs_finish() {
    let vhost = Vhost::new("restart");
    let tournament = unique("t-restart");
    // Each match takes a few seconds (`sleepy` answers after 3 s), so some are still
    // queued or in flight when the broker goes away.
    let jobs: Vec<MatchJob> = (0..4)
        .map(|n| MatchJob {
            job_id: format!("job-{n}"),
            tournament_id: tournament.clone(),
            game: GameKind::Vindinium,
            rules: serde_json::json!({ "maxTurns": 8, "moveTimeoutMs": 10000 }),
            map: None,
            seed: n,
            bots: vec!["image:matchfarm/hostile sleepy".parse().expect("bot")],
            isolation: None,
            clock: Default::default(),
        })
        .collect();
    let expected: BTreeSet<String> = jobs.iter().map(|job| job.job_id.clone()).collect();
    {
        let connection = vhost.connect().await;
        publish_jobs(&connection, 5, &jobs).await;
    }
    let mut worker = WorkerProcess::start(&vhost, &unique("w-restart"), 1, 5);

    let mut seen = BTreeSet::new();
    {
        let connection = vhost.connect().await;
        let mut results = results_consumer(&connection).await;
        seen.insert(next_result(&mut results, Duration::from_secs(120)).await.job_id);
    }

    let script = required("FARM_TEST_RABBITMQ_SCRIPT");
    let restart = Command::new(&script).arg("restart-app").output().expect("restart script runs");
    assert!(restart.status.success(), "restart failed: {}", String::from_utf8_lossy(&restart.stderr));

    // Results may come twice (a job in flight during the restart is redelivered);
    // every job comes at least once. The jobs the worker held when the connection went
    // are reported returned once it is back, before anything it plays afterwards, so
    // that the coordinator does not hold the outage against them.
    let connection = vhost.connect().await;
    let mut results = results_consumer(&connection).await;
    let mut notices = 0;
    while seen != expected {
        let result = next_envelope(&mut results, Duration::from_secs(180)).await;
        match &result.result {
            MatchResult::Completed { .. } => {
                seen.insert(result.job_id);
            }
            MatchResult::Returned { reason, .. } => {
                assert!(reason.contains("lost its broker connection"), "{reason}");
                assert!(expected.contains(&result.job_id), "{result:?}");
                notices += 1;
            }
            MatchResult::Failed { .. } | MatchResult::Audited { .. } => panic!("{result:?}"),
        }
    }
    assert!(notices >= 1, "the worker held a job when the broker went (3 were left), and said so");
    assert!(worker.is_running(), "the worker never exits because of the broker");
    worker.wait_until(Duration::from_secs(60), |status, _| status == 200);
    let reconnects = worker
        .metrics_text()
        .lines()
        .find_map(|line| line.strip_prefix("farm_worker_broker_reconnects_total ").map(str::to_owned))
        .expect("the reconnect counter is exported");
    assert!(reconnects.trim().parse::<f64>().expect("a number") >= 1.0, "{reconnects}");
    assert!(worker.terminate().success());
    assert_eq!(ready_messages(&connection, JOBS_QUEUE).await, 0);
}
