//! The ledger's tests, against real SQLite files.

use farm_proto::{PlayerOutcome, PlayerResult, SCHEMA_VERSION};

use super::*;
use crate::accounts::Caller;
use crate::tournament::{TournamentFile, TournamentLimits};

/// A botwars round robin of three builtin bots: 6 jobs per game per pairing.
fn botwars(name: &str, games_per_pairing: u32) -> Tournament {
    let text = format!(
        r#"
name = "{name}"
game = "botwars"
format = "round-robin"
games_per_pairing = {games_per_pairing}
seed = 11
[[bots]]
name = "a"
builtin = "random"
[[bots]]
name = "b"
builtin = "gatherer"
[[bots]]
name = "c"
builtin = "random"
"#
    );
    TournamentFile::from_toml(&text).expect("parses").resolve(None, TournamentLimits::default()).expect("valid")
}

fn jobs(tournament: &Tournament) -> Vec<PlannedJob> {
    tournament.plan().expect("plan").collect()
}

fn open(dir: &tempfile::TempDir) -> Ledger {
    Ledger::open(&dir.path().join("ledger").join("ledger.sqlite")).expect("open the ledger")
}

/// A completed two-seat result: the higher score ranks first.
fn envelope(tournament: &Tournament, job_id: &str, worker: &str, scores: [i64; 2]) -> ResultEnvelope {
    let ranks = match scores[0].cmp(&scores[1]) {
        std::cmp::Ordering::Greater => [1, 2],
        std::cmp::Ordering::Less => [2, 1],
        std::cmp::Ordering::Equal => [1, 1],
    };
    let players = (0..2)
        .map(|seat| PlayerResult {
            seat,
            name: format!("seat-{seat}"),
            outcome: PlayerOutcome { score: scores[seat], rank: ranks[seat], status: PlayerStatus::Ok },
            timeouts: seat as u64,
            mean_reply_ms: 1.0,
            max_reply_ms: 2.0,
            p99_reply_ms: 0.0,
            cpu: None,
            exit_code: None,
            oom_killed: false,
            log_key: None,
            crash: None,
        })
        .collect();
    ResultEnvelope {
        schema: SCHEMA_VERSION,
        job_id: job_id.to_owned(),
        tournament_id: tournament.id.clone(),
        worker_id: worker.to_owned(),
        token: String::new(),
        instance: None,
        attempt: 1,
        result: MatchResult::Completed {
            steps: 42,
            players,
            replay_key: farm_runtime::storage::AttemptKeys::new(&tournament.id, job_id, 1).replay(),
            replay_sha256: "0".repeat(64),
            duration_ms: 7,
            reproduction: None,
        },
    }
}

fn completed(tournament: &Tournament, job_id: &str, worker: &str, scores: [i64; 2]) -> Answer {
    Answer::Result(envelope(tournament, job_id, worker, scores))
}

fn dead_letter(job_id: &str, reason: &str) -> Answer {
    Answer::Failed { job_id: job_id.to_owned(), attempts: 3, reason: reason.to_owned(), dead_letter: true }
}

fn new(completed: bool, tournament_finished: bool) -> Recorded {
    Recorded::New { completed, tournament_finished, latency_ms: None }
}

/// `recorded` without the latencies, which depend on the clock.
fn timeless(recorded: Vec<Recorded>) -> Vec<Recorded> {
    recorded
        .into_iter()
        .map(|outcome| match outcome {
            Recorded::New { completed, tournament_finished, .. } => new(completed, tournament_finished),
            other => other,
        })
        .collect()
}

async fn progress(ledger: &Ledger, tournament: &Tournament) -> Progress {
    ledger.progress(&tournament.id).await.expect("progress").expect("the tournament exists")
}

/// Every completed match's seats: what standings are computed from.
async fn seats(ledger: &Ledger, tournament: &Tournament) -> Vec<Vec<SeatOutcome>> {
    ledger.completed(&tournament.id).await.expect("completed")
}

fn all(limit: u32) -> MatchFilter {
    MatchFilter { limit, ..MatchFilter::default() }
}

fn ids(rows: &[MatchRow]) -> Vec<&str> {
    rows.iter().map(|row| row.job_id.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_go_on_while_a_write_transaction_is_open() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("read beside a write", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let writer = ledger.clone();
    // A write transaction held open, as one batch of a big insert is.
    let holding = tokio::spawn(async move {
        writer
            .with(move |connection| {
                let transaction = connection.transaction()?;
                transaction.execute("UPDATE tournaments SET name = 'renamed'", [])?;
                let _ = held_tx.send(());
                let _ = release_rx.recv();
                transaction.commit()?;
                Ok(())
            })
            .await
    });
    tokio::task::spawn_blocking(move || held_rx.recv()).await.expect("join").expect("the write began");
    // Were reads on the writer's connection, these would wait for the release: a
    // deadlock, which the timeout turns into a failure.
    let reads = async {
        let listed = ledger.tournaments().await.expect("list");
        let progress = ledger.progress(&tournament.id).await.expect("progress").expect("exists");
        (listed, progress)
    };
    let (listed, progress) = tokio::time::timeout(std::time::Duration::from_secs(30), reads)
        .await
        .expect("reads wait for the write transaction");
    assert_eq!(listed[0].name, "read beside a write", "the uncommitted rename is not seen");
    assert_eq!(progress.total, 6);
    release_tx.send(()).expect("release");
    holding.await.expect("join").expect("the write commits");
    assert_eq!(ledger.tournaments().await.expect("list")[0].name, "renamed");
}

#[tokio::test]
async fn inserting_the_same_tournament_twice_adds_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("twice", 1);
    let first = ledger.insert_tournament(tournament.clone()).await.expect("insert");
    assert_eq!(first, Inserted { created: true, jobs: 6 });
    let again = ledger.insert_tournament(tournament.clone()).await.expect("insert again");
    assert_eq!(again, Inserted { created: false, jobs: 6 });
    assert_eq!(ledger.count(JobState::Pending, None).await.expect("count"), 6);
    assert_eq!(ledger.count(JobState::Pending, Some(tournament.id.clone())).await.expect("count"), 6);
    assert_eq!(progress(&ledger, &tournament).await, Progress { total: 6, pending: 6, ..Progress::default() });
    assert_eq!(ledger.tournament(&tournament.id).await.expect("read"), Some(tournament.clone()));
    let listed = ledger.tournaments().await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].id.as_str(), listed[0].name.as_str()), (tournament.id.as_str(), "twice"));
    assert_eq!(listed[0].progress.total, 6);
    assert_eq!(ledger.tournament("t-0000000000000000").await.expect("read"), None);
    assert_eq!(ledger.progress("t-0000000000000000").await.expect("read"), None);
}

#[tokio::test]
async fn an_insertion_cut_short_is_finished_by_inserting_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("cut short", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    // What a crash between two job batches leaves: some jobs, and a count of 0.
    let id = tournament.id.clone();
    ledger
        .with(move |connection| {
            connection.execute("DELETE FROM jobs WHERE tournament_id = ?1 AND position >= 2", [&id])?;
            connection.execute("UPDATE tournaments SET jobs = 0 WHERE id = ?1", [&id])?;
            Ok(())
        })
        .await
        .expect("simulate a crash");
    let resumed = ledger.insert_tournament(tournament.clone()).await.expect("insert again");
    assert_eq!(resumed, Inserted { created: true, jobs: 6 });
    assert_eq!(progress(&ledger, &tournament).await, Progress { total: 6, pending: 6, ..Progress::default() });
    let positions: Vec<u64> =
        ledger.matches(&tournament.id, all(100)).await.expect("matches").iter().map(|row| row.position).collect();
    assert_eq!(positions, [0, 1, 2, 3, 4, 5]);
    assert_eq!(ledger.insert_tournament(tournament).await.expect("once more"), Inserted { created: false, jobs: 6 });
}

#[tokio::test]
async fn a_result_is_recorded_once_and_the_first_one_wins() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("once", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let jobs = jobs(&tournament);
    let (j0, j1) = (jobs[0].job_id.as_str(), jobs[1].job_id.as_str());

    let first = envelope(&tournament, j0, "w1", [5, 1]);
    let recorded = ledger
        .record(vec![
            Answer::Result(first.clone()),
            Answer::Result(first.clone()),
            completed(&tournament, j1, "w1", [2, 2]),
        ])
        .await
        .expect("record");
    // Never published: recorded with no latency.
    assert_eq!(recorded, [new(true, false), Recorded::Duplicate, new(true, false)]);
    let seats_before = seats(&ledger, &tournament).await;
    assert_eq!(seats_before.len(), 2);
    let seat0 = &seats_before[0][0];
    assert_eq!((seat0.bot, seat0.score, seat0.rank, seat0.status), (Some(jobs[0].seats[0]), 5, 1, PlayerStatus::Ok));
    assert_eq!((seats_before[0][1].bot, seats_before[0][1].timeouts), (Some(jobs[0].seats[1]), 1));
    assert_eq!(seats_before.iter().map(Vec::len).sum::<usize>(), 4);

    // The same result again, a different one, and a dead letter: all too late.
    let recorded = ledger
        .record(vec![
            Answer::Result(first.clone()),
            completed(&tournament, j0, "w2", [0, 9]),
            dead_letter(j0, "dead-lettered"),
        ])
        .await
        .expect("record later");
    assert_eq!(recorded, vec![Recorded::Duplicate; 3]);
    assert_eq!(seats(&ledger, &tournament).await, seats_before);
    let (tournament_id, row, stored) = ledger.match_detail(j0).await.expect("detail").expect("the job exists");
    assert_eq!(tournament_id, tournament.id);
    assert_eq!((row.state, row.attempts, row.reason), (JobState::Done, 1, None));
    assert_eq!(stored, Some(first));
    let progress = progress(&ledger, &tournament).await;
    assert_eq!(progress, Progress { total: 6, pending: 4, done: 2, duplicates: 4, ..Progress::default() });
}

#[tokio::test]
async fn results_that_do_not_fit_their_job_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("forged", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let job_id = jobs(&tournament)[0].job_id.clone();
    let honest = envelope(&tournament, &job_id, "w1", [1, 0]);
    let mut other_tournament = honest.clone();
    other_tournament.tournament_id = "t-another".to_owned();
    let mut other_attempt = honest.clone();
    other_attempt.attempt = 2;
    let mut foreign_log = honest.clone();
    if let MatchResult::Completed { players, .. } = &mut foreign_log.result {
        players[1].log_key = Some("tournaments/t-another/jobs/j/attempt-1-0123456789ab/seat-1.stderr.log".to_owned());
    }
    let recorded = ledger
        .record(vec![Answer::Result(other_tournament), Answer::Result(other_attempt), Answer::Result(foreign_log)])
        .await
        .expect("record");
    let problems: Vec<String> = recorded
        .into_iter()
        .map(|recorded| match recorded {
            Recorded::Refused { problem } => problem,
            other => panic!("refused expected, got {other:?}"),
        })
        .collect();
    assert!(problems[0].contains("names tournament \"t-another\""), "{}", problems[0]);
    assert!(problems[1].contains("is not one of attempt 2"), "{}", problems[1]);
    assert!(problems[2].contains("seat-1.stderr.log"), "{}", problems[2]);
    assert_eq!(progress(&ledger, &tournament).await, Progress { total: 6, pending: 6, ..Progress::default() });
    let recorded = ledger.record(vec![Answer::Result(honest)]).await.expect("record");
    assert_eq!(timeless(recorded), [new(true, false)], "the job's own result still counts");
}

#[tokio::test]
async fn answers_to_unknown_jobs_are_dropped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("unknown", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let recorded = ledger
        .record(vec![completed(&tournament, "j-nope", "w1", [1, 0]), dead_letter("j-nope-either", "gone")])
        .await
        .expect("record");
    assert_eq!(recorded, [Recorded::UnknownJob, Recorded::UnknownJob]);
    assert_eq!(progress(&ledger, &tournament).await, Progress { total: 6, pending: 6, ..Progress::default() });
    assert_eq!(ledger.match_detail("j-nope").await.expect("detail").map(|(id, ..)| id), None);
}

#[tokio::test]
async fn a_tournament_finishes_exactly_on_its_last_answer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("finish", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let jobs = jobs(&tournament);
    for (index, job) in jobs[..4].iter().enumerate() {
        let answer = if index == 2 {
            dead_letter(&job.job_id, "poison")
        } else {
            completed(&tournament, &job.job_id, "w1", [index as i64, 1])
        };
        let recorded = ledger.record(vec![answer]).await.expect("record");
        assert_eq!(timeless(recorded), [new(index != 2, false)], "job {index}");
        assert!(!progress(&ledger, &tournament).await.finished());
    }
    // The last two in one batch: only the very last finishes it.
    let recorded = ledger
        .record(vec![
            completed(&tournament, &jobs[4].job_id, "w1", [1, 0]),
            completed(&tournament, &jobs[5].job_id, "w2", [0, 1]),
            completed(&tournament, &jobs[5].job_id, "w3", [1, 0]),
        ])
        .await
        .expect("record");
    assert_eq!(timeless(recorded), [new(true, false), new(true, true), Recorded::Duplicate]);
    let progress = progress(&ledger, &tournament).await;
    assert!(progress.finished());
    assert_eq!(progress, Progress { total: 6, done: 5, failed: 1, duplicates: 1, ..Progress::default() });
    assert_eq!(ledger.active_tournaments().await.expect("active"), 0);
    let again = ledger.record(vec![completed(&tournament, &jobs[0].job_id, "w1", [1, 0])]).await.expect("again");
    assert_eq!(again, [Recorded::Duplicate], "a finished tournament never finishes twice");
}

#[tokio::test]
async fn failures_keep_their_reason_and_later_results_are_duplicates() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("failures", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let jobs = jobs(&tournament);
    let (j0, j1) = (jobs[0].job_id.as_str(), jobs[1].job_id.as_str());
    let failed_result = ResultEnvelope {
        result: MatchResult::Failed { reason: "bad rules".to_owned() },
        attempt: 2,
        ..envelope(&tournament, j1, "w1", [0, 0])
    };
    let recorded = ledger
        .record(vec![dead_letter(j0, "dead-lettered after 3 deliveries"), Answer::Result(failed_result.clone())])
        .await
        .expect("record");
    assert_eq!(timeless(recorded), [new(false, false), new(false, false)]);

    let (_, row, stored) = ledger.match_detail(j0).await.expect("detail").expect("exists");
    assert_eq!((row.state, row.attempts), (JobState::Failed, 3));
    assert_eq!(row.reason.as_deref(), Some("dead-lettered after 3 deliveries"));
    assert_eq!(stored, None, "a dead letter has no result document");
    let (_, row, stored) = ledger.match_detail(j1).await.expect("detail").expect("exists");
    assert_eq!((row.state, row.attempts, row.reason.as_deref()), (JobState::Failed, 2, Some("bad rules")));
    assert_eq!(stored, Some(failed_result));

    let failed = MatchFilter { state: Some(JobState::Failed), ..all(100) };
    assert_eq!(ids(&ledger.matches(&tournament.id, failed.clone()).await.expect("matches")), [j0, j1]);

    let recorded = ledger.record(vec![completed(&tournament, j0, "w1", [3, 1])]).await.expect("record late");
    assert_eq!(recorded, [Recorded::Duplicate]);
    let (_, row, stored) = ledger.match_detail(j0).await.expect("detail").expect("exists");
    assert_eq!((row.state, stored), (JobState::Failed, None));
    assert!(ledger.completed(&tournament.id).await.expect("completed").is_empty());
    assert_eq!(ledger.matches(&tournament.id, failed).await.expect("matches").len(), 2);
    let progress = progress(&ledger, &tournament).await;
    assert_eq!((progress.failed, progress.done, progress.duplicates), (2, 0, 1));
}

#[tokio::test]
async fn pending_jobs_come_in_schedule_order_and_unanswered_ones_are_requeued() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let first = botwars("first", 1);
    let second = botwars("second", 1);
    ledger.insert_tournament(first.clone()).await.expect("insert");
    ledger.insert_tournament(second.clone()).await.expect("insert");
    let (first_jobs, second_jobs) = (jobs(&first), jobs(&second));
    let pending_ids = |pending: &[PendingJob]| -> Vec<(String, String)> {
        pending.iter().map(|job| (job.tournament_id.clone(), job.planned.job_id.clone())).collect()
    };
    let expected = |tournament: &Tournament, jobs: &[PlannedJob]| -> Vec<(String, String)> {
        jobs.iter().map(|job| (tournament.id.clone(), job.job_id.clone())).collect()
    };

    let some = ledger.pending(4, None).await.expect("pending");
    assert_eq!(pending_ids(&some), expected(&first, &first_jobs[..4]));
    assert_eq!(some[1].planned, first_jobs[1], "a pending job reads back as planned");
    let every = ledger.pending(100, None).await.expect("pending");
    assert_eq!(pending_ids(&every), [expected(&first, &first_jobs), expected(&second, &second_jobs)].concat());
    let only = ledger.pending(100, Some(second.id.clone())).await.expect("pending");
    assert_eq!(pending_ids(&only), expected(&second, &second_jobs));
    assert!(ledger.pending(100, Some("t-none".to_owned())).await.expect("pending").is_empty());

    let published: Vec<String> = first_jobs[..3].iter().map(|job| job.job_id.clone()).collect();
    ledger.mark_running(leased(published)).await.expect("mark running");
    assert_eq!(ledger.count(JobState::Running, None).await.expect("count"), 3);
    assert_eq!(ledger.count(JobState::Running, Some(second.id.clone())).await.expect("count"), 0);
    let rest = ledger.pending(100, Some(first.id.clone())).await.expect("pending");
    assert_eq!(pending_ids(&rest), expected(&first, &first_jobs[3..]));

    // One of them is answered; marking it running again keeps its answer.
    let answered = &first_jobs[1].job_id;
    let recorded = ledger.record(vec![completed(&first, answered, "w1", [1, 0])]).await.expect("record");
    // Published, so timed from its publication; a job never published has no latency.
    assert!(matches!(recorded[..], [Recorded::New { latency_ms: Some(_), .. }]), "{recorded:?}");
    assert_eq!(timeless(recorded), [new(true, false)]);
    ledger.mark_running(leased(vec![answered.clone()])).await.expect("mark running");
    assert_eq!(ledger.count(JobState::Done, None).await.expect("count"), 1);

    assert_eq!(ledger.requeue_unanswered().await.expect("requeue"), 2);
    assert_eq!(ledger.count(JobState::Running, None).await.expect("count"), 0);
    let requeued = ledger.pending(100, Some(first.id.clone())).await.expect("pending");
    let positions: Vec<u64> = requeued.iter().map(|job| job.planned.position).collect();
    assert_eq!(positions, [0, 2, 3, 4, 5]);
    assert_eq!(ledger.requeue_unanswered().await.expect("requeue"), 0);
    let totals = ledger.totals().await.expect("totals");
    assert_eq!(
        totals,
        [
            (JobState::Pending, 11),
            (JobState::Running, 0),
            (JobState::Done, 1),
            (JobState::Failed, 0),
            (JobState::Cancelled, 0)
        ]
    );
    assert_eq!(ledger.active_tournaments().await.expect("active"), 2);
}

#[tokio::test]
async fn matches_filter_by_bot_state_map_and_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("filters", 2);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let jobs = jobs(&tournament);
    assert_eq!(jobs.len(), 12);

    let every = ledger.matches(&tournament.id, all(1000)).await.expect("matches");
    assert_eq!(ids(&every), jobs.iter().map(|job| job.job_id.as_str()).collect::<Vec<_>>());
    let row = &every[5];
    assert_eq!((row.position, &row.seats, row.map, row.repetition), (5, &jobs[5].seats, 0, jobs[5].repetition));
    assert_eq!((row.seed, row.state, row.attempts, row.reason.as_deref()), (jobs[5].seed, JobState::Pending, 0, None));

    for bot in 0..3 {
        let rows = ledger.matches(&tournament.id, MatchFilter { bot: Some(bot), ..all(1000) }).await.expect("bot");
        let expected: Vec<&str> =
            jobs.iter().filter(|job| job.seats.contains(&bot)).map(|job| job.job_id.as_str()).collect();
        assert_eq!(ids(&rows), expected, "bot {bot}");
        assert_eq!(rows.len(), 8, "two opponents, both sides, two games");
    }
    assert!(ledger.matches(&tournament.id, MatchFilter { bot: Some(3), ..all(1000) }).await.expect("bot").is_empty());

    ledger.mark_running(leased(vec![jobs[0].job_id.clone(), jobs[7].job_id.clone()])).await.expect("mark running");
    ledger.record(vec![completed(&tournament, &jobs[3].job_id, "w1", [1, 0])]).await.expect("record");
    let by_state = |state| MatchFilter { state: Some(state), ..all(1000) };
    let running = ledger.matches(&tournament.id, by_state(JobState::Running)).await.expect("running");
    assert_eq!(ids(&running), [jobs[0].job_id.as_str(), jobs[7].job_id.as_str()]);
    let done = ledger.matches(&tournament.id, by_state(JobState::Done)).await.expect("done");
    assert_eq!(ids(&done), [jobs[3].job_id.as_str()]);
    assert_eq!(done[0].attempts, 1);
    assert_eq!(ledger.matches(&tournament.id, by_state(JobState::Pending)).await.expect("pending").len(), 9);
    let bot_and_state = MatchFilter { bot: Some(jobs[7].seats[0]), state: Some(JobState::Running), ..all(1000) };
    let rows = ledger.matches(&tournament.id, bot_and_state).await.expect("both");
    assert!(rows.iter().all(|row| row.state == JobState::Running && row.seats.contains(&jobs[7].seats[0])));
    assert!(ids(&rows).contains(&jobs[7].job_id.as_str()));

    assert_eq!(ledger.matches(&tournament.id, MatchFilter { map: Some(0), ..all(1000) }).await.expect("map").len(), 12);
    assert!(ledger.matches(&tournament.id, MatchFilter { map: Some(1), ..all(1000) }).await.expect("map").is_empty());

    let page = |limit, offset| MatchFilter { limit, offset, ..MatchFilter::default() };
    let positions = |rows: Vec<MatchRow>| rows.iter().map(|row| row.position).collect::<Vec<_>>();
    assert_eq!(positions(ledger.matches(&tournament.id, page(5, 0)).await.expect("page")), [0, 1, 2, 3, 4]);
    assert_eq!(positions(ledger.matches(&tournament.id, page(5, 5)).await.expect("page")), [5, 6, 7, 8, 9]);
    assert_eq!(positions(ledger.matches(&tournament.id, page(5, 10)).await.expect("page")), [10, 11]);
    assert!(ledger.matches(&tournament.id, page(5, 12)).await.expect("page").is_empty());
    assert!(ledger.matches(&tournament.id, page(5, u64::MAX)).await.expect("page").is_empty());
    assert!(ledger.matches("t-other", all(1000)).await.expect("other").is_empty());
}

#[tokio::test]
async fn listed_matches_carry_their_outcomes_and_failures_are_found_per_bot() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("outcomes", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let jobs = jobs(&tournament);
    // Job 0 completes cleanly, job 1 with seat 1 crashed, job 2 fails outright.
    let mut crashed = envelope(&tournament, &jobs[1].job_id, "w1", [3, 0]);
    if let MatchResult::Completed { players, .. } = &mut crashed.result {
        players[1].outcome.status = PlayerStatus::Crashed;
    }
    ledger
        .record(vec![
            completed(&tournament, &jobs[0].job_id, "w1", [2, 7]),
            Answer::Result(crashed),
            dead_letter(&jobs[2].job_id, "poison"),
        ])
        .await
        .expect("record");

    let every = ledger.matches(&tournament.id, all(100)).await.expect("matches");
    let clean = &every[0].outcomes;
    assert_eq!(clean.len(), 2);
    assert_eq!((clean[0].bot, clean[0].score, clean[0].rank), (Some(jobs[0].seats[0]), 2, 2));
    assert_eq!((clean[1].bot, clean[1].score, clean[1].rank, clean[1].timeouts), (Some(jobs[0].seats[1]), 7, 1, 1));
    assert_eq!(every[1].outcomes[1].status, PlayerStatus::Crashed);
    assert!(every[2..].iter().all(|row| row.outcomes.is_empty()), "no outcomes without a completed result");
    let (_, detail, _) = ledger.match_detail(&jobs[1].job_id).await.expect("detail").expect("exists");
    assert_eq!(detail.outcomes, every[1].outcomes);

    let failures = |bot| MatchFilter { bot, failures: true, ..all(100) };
    let any = ledger.matches(&tournament.id, failures(None)).await.expect("failures");
    assert_eq!(ids(&any), [jobs[1].job_id.as_str(), jobs[2].job_id.as_str()]);
    // Round robin order: job 1 seats [1, 0], job 2 seats [0, 2].
    assert_eq!((&jobs[1].seats[..], &jobs[2].seats[..]), (&[1, 0][..], &[0, 2][..]));
    let (j1, j2) = (jobs[1].job_id.as_str(), jobs[2].job_id.as_str());
    for (bot, expected) in [(0, vec![j1, j2]), (1, vec![]), (2, vec![j2])] {
        let found = ledger.matches(&tournament.id, failures(Some(bot))).await.expect("failures");
        assert_eq!(ids(&found), expected, "bot {bot}: its own crashes and the failed jobs it was in");
    }

    // The count ignores paging and follows every filter.
    let count = |filter| ledger.count_matches(&tournament.id, filter);
    assert_eq!(count(MatchFilter { limit: 1, offset: 4, ..MatchFilter::default() }).await.expect("count"), 6);
    assert_eq!(count(failures(None)).await.expect("count"), 2);
    assert_eq!(count(failures(Some(0))).await.expect("count"), 2);
    assert_eq!(count(MatchFilter { state: Some(JobState::Done), ..all(1) }).await.expect("count"), 2);
    assert_eq!(count(MatchFilter { bot: Some(0), ..all(1) }).await.expect("count"), 4);
    assert_eq!(ledger.count_matches("t-other", all(1)).await.expect("count"), 0);

    // Failures are found from their index, never by a pass over the tournament's jobs.
    let raw = Connection::open(dir.path().join("ledger").join("ledger.sqlite")).expect("raw");
    let plan: Vec<String> = raw
        .prepare("EXPLAIN QUERY PLAN SELECT count(*) FROM jobs WHERE tournament_id = ?1 AND failure = 1")
        .expect("plan")
        .query_map(["t"], |row| row.get(3))
        .expect("plan rows")
        .collect::<Result<_, _>>()
        .expect("plan read");
    assert!(plan.iter().any(|step| step.contains("jobs_with_failures")), "{plan:?}");
    // A ledger from before the flag has its failures flagged when it is opened.
    raw.execute_batch(
        "DROP INDEX jobs_with_failures; DROP TRIGGER failure_by_seat; DROP TRIGGER failure_by_state;
         ALTER TABLE jobs DROP COLUMN failure; PRAGMA user_version = 8;",
    )
    .expect("wind back");
    drop(raw);
    let ledger = open(&dir);
    let any = ledger.matches(&tournament.id, failures(None)).await.expect("failures");
    assert_eq!(ids(&any), [j1, j2], "flagged by the migration");
    // A failed job retried is no failure until it fails again.
    ledger.retry(tournament.id.clone(), true).await.expect("retry").expect("the tournament");
    let any = ledger.matches(&tournament.id, failures(None)).await.expect("failures");
    assert_eq!(ids(&any), [j1], "the crash stays; the retried job is pending");
}

#[tokio::test]
async fn matches_filter_by_map() {
    let text = r#"
name = "maps"
game = "vindinium"
format = "round-robin"
maps = [{ seed = 1 }, { seed = 2, name = "second" }]
[[bots]]
name = "a"
builtin = "random"
[[bots]]
name = "b"
builtin = "greedy"
"#;
    let tournament =
        TournamentFile::from_toml(text).expect("parses").resolve(None, TournamentLimits::default()).expect("valid");
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let jobs = jobs(&tournament);
    for map in 0..2 {
        let rows = ledger.matches(&tournament.id, MatchFilter { map: Some(map), ..all(100) }).await.expect("map");
        let expected: Vec<&str> = jobs.iter().filter(|job| job.map == map).map(|job| job.job_id.as_str()).collect();
        assert!(!expected.is_empty());
        assert_eq!(ids(&rows), expected, "map {map}");
        assert!(rows.iter().all(|row| row.map == map));
    }
}

#[tokio::test]
async fn a_reopened_ledger_has_everything() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tournament = botwars("reopen", 1);
    let jobs = jobs(&tournament);
    let first = envelope(&tournament, &jobs[2].job_id, "w1", [4, 2]);
    let (before, matches) = {
        let ledger = open(&dir);
        ledger.insert_tournament(tournament.clone()).await.expect("insert");
        ledger.mark_running(leased(vec![jobs[0].job_id.clone()])).await.expect("mark running");
        ledger
            .record(vec![
                Answer::Result(first.clone()),
                Answer::Result(first.clone()),
                dead_letter(&jobs[1].job_id, "x"),
            ])
            .await
            .expect("record");
        (seats(&ledger, &tournament).await, ledger.matches(&tournament.id, all(100)).await.expect("matches"))
    };
    let ledger = open(&dir);
    assert_eq!(ledger.tournament(&tournament.id).await.expect("read"), Some(tournament.clone()));
    assert_eq!(
        progress(&ledger, &tournament).await,
        Progress { total: 6, pending: 3, running: 1, done: 1, failed: 1, duplicates: 1, ..Progress::default() }
    );
    assert_eq!(seats(&ledger, &tournament).await, before);
    let reopened = ledger.matches(&tournament.id, all(100)).await.expect("matches");
    assert_eq!(format!("{reopened:?}"), format!("{matches:?}"));
    let (_, _, stored) = ledger.match_detail(&jobs[2].job_id).await.expect("detail").expect("exists");
    assert_eq!(stored, Some(first.clone()));
    assert_eq!(ledger.record(vec![Answer::Result(first)]).await.expect("record"), [Recorded::Duplicate]);
    assert_eq!(ledger.insert_tournament(tournament).await.expect("insert"), Inserted { created: false, jobs: 6 });
}

#[tokio::test]
async fn a_ledger_from_before_the_job_counts_is_counted_once_when_opened() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tournament = botwars("counts", 1);
    let jobs = jobs(&tournament);
    {
        let ledger = open(&dir);
        ledger.insert_tournament(tournament.clone()).await.expect("insert");
        ledger.mark_running(leased(vec![jobs[0].job_id.clone(), jobs[1].job_id.clone()])).await.expect("mark running");
        ledger.record(vec![dead_letter(&jobs[1].job_id, "x")]).await.expect("record");
    }
    // As an older build left it: no counts, version 0.
    let raw = Connection::open(dir.path().join("ledger").join("ledger.sqlite")).expect("raw");
    raw.execute_batch("DELETE FROM job_counts; PRAGMA user_version = 0;").expect("wind back");
    drop(raw);
    let ledger = open(&dir);
    let expected = Progress { total: 6, pending: 4, running: 1, done: 0, failed: 1, ..Progress::default() };
    assert_eq!(progress(&ledger, &tournament).await, expected);
    // And the triggers keep them from there.
    ledger.record(vec![dead_letter(&jobs[0].job_id, "y")]).await.expect("record");
    assert_eq!(progress(&ledger, &tournament).await, Progress { running: 0, failed: 2, ..expected });
}

/// Published jobs, each with a lease of a minute.
fn leased(job_ids: Vec<String>) -> Vec<(String, u64)> {
    job_ids.into_iter().map(|job_id| (job_id, 60)).collect()
}

#[tokio::test]
async fn leases_expire_in_publishing_order_up_to_the_mark_per_lease_and_batch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("leases", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let jobs: Vec<String> = jobs(&tournament).into_iter().map(|job| job.job_id).collect();
    assert_eq!(ledger.published_mark().await.expect("mark"), 0, "nothing published yet");
    // Publications 1-3 with a lease of 60 s, 4-5 with 600 s.
    ledger.mark_running(leased(jobs[..3].to_vec())).await.expect("mark running");
    ledger.mark_running(jobs[3..5].iter().map(|id| (id.clone(), 600)).collect()).await.expect("mark running");
    assert_eq!(ledger.published_mark().await.expect("mark"), 5);
    let mut leases = ledger.running_leases().await.expect("leases");
    leases.sort_unstable();
    assert_eq!(leases, [60, 600]);

    // Job 2 is answered: it never expires.
    ledger.record(vec![completed(&tournament, &jobs[1], "w1", [1, 0])]).await.expect("record");
    assert_eq!(ledger.expire_leases(60, 0, 10).await.expect("expire"), 0, "nothing published by mark 0");
    assert_eq!(ledger.expire_leases(60, 5, 1).await.expect("expire"), 1, "a batch of one");
    let pending = ledger.pending(10, None).await.expect("pending");
    assert_eq!(pending[0].planned.job_id, jobs[0], "the earliest publication first");
    assert_eq!(ledger.expire_leases(60, 5, 10).await.expect("expire"), 1, "job 3; job 2 was answered");
    assert_eq!(ledger.expire_leases(600, 4, 10).await.expect("expire"), 1, "job 4 only: job 5 came after mark 4");
    assert_eq!(ledger.running_leases().await.expect("leases"), [600]);
    assert_eq!(ledger.count(JobState::Running, None).await.expect("count"), 1);

    // Published again, a job is numbered anew, after every earlier publication.
    ledger.mark_running(leased(vec![jobs[0].clone()])).await.expect("mark running");
    assert_eq!(ledger.published_mark().await.expect("mark"), 6);
    assert_eq!(ledger.expire_leases(60, 5, 10).await.expect("expire"), 0, "its new publication is 6");
}

/// A worker's notice that it gave attempt 1 of `job_id` back for an outage.
fn returned(tournament: &Tournament, job_id: &str) -> Answer {
    let mut notice = envelope(tournament, job_id, "w1", [0, 0]);
    notice.result = MatchResult::Returned { reason: "storage unreachable".to_owned(), fault: true };
    Answer::Result(notice)
}

#[tokio::test]
async fn a_dead_letter_after_outages_starts_the_job_over_and_one_without_fails_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("outages", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let jobs: Vec<String> = jobs(&tournament).into_iter().map(|job| job.job_id).collect();
    ledger.mark_running(leased(jobs[..3].to_vec())).await.expect("mark running");

    // Job 0: a delivery given back for an outage, then the dead letter: it starts over.
    assert_eq!(ledger.record(vec![returned(&tournament, &jobs[0])]).await.expect("record"), [Recorded::Returned]);
    assert_eq!(ledger.record(vec![dead_letter(&jobs[0], "limit")]).await.expect("record"), [Recorded::Restarted]);
    let pending = ledger.pending(10, None).await.expect("pending");
    assert_eq!(pending[0].planned.job_id, jobs[0], "pending again, to be published afresh");
    assert_eq!(progress(&ledger, &tournament).await.failed, 0);

    // Job 1: no notice, so every delivery was the job's: the dead letter fails it.
    let recorded = ledger.record(vec![dead_letter(&jobs[1], "limit")]).await.expect("record");
    assert_eq!(timeless(recorded), [new(false, false)]);

    // Job 2: restarted as often as allowed, then failed, saying so.
    for _ in 0..MAX_RESTARTS {
        ledger.record(vec![returned(&tournament, &jobs[2])]).await.expect("record");
        let recorded = ledger.record(vec![dead_letter(&jobs[2], "limit")]).await.expect("record");
        assert_eq!(recorded, [Recorded::Restarted]);
    }
    ledger.record(vec![returned(&tournament, &jobs[2])]).await.expect("record");
    assert_eq!(
        timeless(ledger.record(vec![dead_letter(&jobs[2], "limit")]).await.expect("record")),
        [new(false, false)]
    );
    let failed =
        ledger.matches(&tournament.id, MatchFilter { state: Some(JobState::Failed), ..all(10) }).await.expect("failed");
    let reason = failed.iter().find(|row| row.job_id == jobs[2]).and_then(|row| row.reason.clone());
    assert_eq!(reason.as_deref(), Some("limit, after 10 fresh starts for deliveries lost to outages"));

    // A notice for a job already answered changes nothing, and is no duplicate.
    assert_eq!(ledger.record(vec![returned(&tournament, &jobs[1])]).await.expect("record"), [Recorded::Returned]);
    assert_eq!(progress(&ledger, &tournament).await.duplicates, 0);
    // Nor can a notice name another tournament's job.
    let mut stray = returned(&tournament, &jobs[0]);
    if let Answer::Result(notice) = &mut stray {
        notice.tournament_id = "t-other".to_owned();
    }
    assert!(matches!(ledger.record(vec![stray]).await.expect("record")[0], Recorded::Refused { .. }));
}

#[tokio::test]
async fn a_ledger_from_before_leases_gets_their_columns_and_leases_its_running_jobs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tournament = botwars("old-leases", 1);
    let jobs: Vec<String> = jobs(&tournament).into_iter().map(|job| job.job_id).collect();
    {
        let ledger = open(&dir);
        ledger.insert_tournament(tournament.clone()).await.expect("insert");
        ledger.mark_running(leased(jobs[..2].to_vec())).await.expect("mark running");
    }
    // As the build before leases left it: no lease or returns columns, version 1.
    let raw = Connection::open(dir.path().join("ledger").join("ledger.sqlite")).expect("raw");
    raw.execute_batch(
        "DROP INDEX jobs_by_publication; DROP INDEX jobs_by_lease;
         ALTER TABLE jobs DROP COLUMN published_seq; ALTER TABLE jobs DROP COLUMN lease_secs;
         ALTER TABLE jobs DROP COLUMN returns; ALTER TABLE jobs DROP COLUMN restarts;
         PRAGMA user_version = 1;",
    )
    .expect("wind back");
    drop(raw);
    let ledger = open(&dir);
    assert_eq!(ledger.running_leases().await.expect("leases"), [2400], "twice the workers' 20-minute cap");
    assert_eq!(ledger.published_mark().await.expect("mark"), 0, "published before any numbered publication");
    assert_eq!(ledger.expire_leases(2400, 0, 10).await.expect("expire"), 2);
    ledger.mark_running(leased(jobs[..1].to_vec())).await.expect("mark running");
    assert_eq!(ledger.published_mark().await.expect("mark"), 1);
    // And the returns columns came back: a notice counts, a dead letter restarts.
    assert_eq!(ledger.record(vec![returned(&tournament, &jobs[0])]).await.expect("record"), [Recorded::Returned]);
    assert_eq!(ledger.record(vec![dead_letter(&jobs[0], "limit")]).await.expect("record"), [Recorded::Restarted]);
}

#[test]
fn a_tournament_without_counted_jobs_is_being_inserted_not_finished() {
    assert!(!Progress::default().finished());
    assert!(Progress { total: 2, done: 1, failed: 1, ..Progress::default() }.finished());
}

#[test]
fn seats_and_states_round_trip_through_their_text() {
    assert_eq!(seats_text(&[0, 11, 3]), ",0,11,3,");
    assert_eq!(seats_from_text(&seats_text(&[0, 11, 3])), [0, 11, 3]);
    assert!(seats_from_text(",").is_empty());
    for state in JobState::ALL {
        assert_eq!(JobState::from_name(state.name()), Some(state));
    }
    assert_eq!(JobState::from_name("Done"), None);
    for status in PlayerStatus::ALL {
        assert_eq!(known(3, "player status", status.name(), PlayerStatus::from_name).ok(), Some(status));
        let serialized = serde_json::to_value(status).expect("json");
        assert_eq!(serialized.as_str(), Some(status.name()), "the name is the serialized one");
    }
    let unknown = known(3, "player status", "a_status_from_a_newer_build", PlayerStatus::from_name);
    let error = unknown.expect_err("an unknown status is an error").to_string();
    assert!(error.contains("unknown player status \"a_status_from_a_newer_build\""), "{error}");
}

fn verdict(tournament: &Tournament, job_id: &str, auditor: &str, verdict: farm_proto::AuditVerdict) -> Answer {
    Answer::Result(ResultEnvelope {
        schema: SCHEMA_VERSION,
        job_id: job_id.to_owned(),
        tournament_id: tournament.id.clone(),
        worker_id: auditor.to_owned(),
        token: String::new(),
        instance: None,
        attempt: 0,
        result: MatchResult::Audited { verdict },
    })
}

/// Audited matches wait to be published, take one verdict each (never from the worker
/// that played them), and count on that worker's record; past the mismatch rate it is
/// quarantined, until released.
#[tokio::test]
async fn audits_count_on_the_record_of_the_worker_that_played_and_quarantine_it() {
    use farm_proto::AuditVerdict;
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = crate::audits::AuditSettings {
        fraction: 1.0,
        min_audits: 2,
        max_mismatch_rate: 0.5,
        ..crate::audits::AuditSettings::default()
    };
    let ledger = open(&dir).with_audits(settings);
    let tournament = botwars("audited", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let jobs: Vec<String> = jobs(&tournament).into_iter().map(|job| job.job_id).collect();
    let mut failing = envelope(&tournament, &jobs[0], "bad", [1, 2]);
    if let MatchResult::Completed { players, .. } = &mut failing.result {
        players[1].outcome.status = PlayerStatus::Crashed;
    }
    let mut answers = vec![Answer::Result(failing)];
    answers.extend(jobs[1..3].iter().map(|job| completed(&tournament, job, "bad", [1, 2])));
    answers.push(completed(&tournament, &jobs[3], "good", [1, 2]));
    ledger.record(answers).await.expect("record");

    let lease = settings.lease_secs;
    let pending = ledger.audits_to_publish(100, lease).await.expect("pending");
    assert_eq!(pending.len(), 4, "every completed match is audited at fraction 1");
    assert!(pending.iter().all(|audit| audit.publications == 0));
    let document: farm_proto::AuditEnvelope = serde_json::from_str(&pending[0].document).expect("an audit job");
    assert_eq!(document.audit.replay_sha256, "0".repeat(64));
    assert_eq!(document.token, "", "a token is added as it is published, never stored");
    ledger.mark_audits_published(pending.iter().map(|audit| audit.job_id.clone()).collect()).await.expect("published");
    assert!(ledger.audits_to_publish(100, lease).await.expect("pending").is_empty(), "leased");
    // Once a lease has passed (none, here), the unanswered are due again, and say how
    // often they were published.
    let again = ledger.audits_to_publish(100, 0).await.expect("due again");
    assert_eq!(again.iter().map(|audit| audit.publications).collect::<Vec<_>>(), [1, 1, 1, 1]);

    let mismatch = || AuditVerdict::Mismatch { reason: "line 3 differs".into() };
    let recorded = ledger
        .record(vec![
            verdict(&tournament, &jobs[0], "bad", AuditVerdict::Confirmed),
            verdict(&tournament, &jobs[0], "good", mismatch()),
            verdict(&tournament, &jobs[0], "good", AuditVerdict::Confirmed),
            verdict(&tournament, &jobs[3], "bad", AuditVerdict::Confirmed),
            verdict(&tournament, &jobs[4], "good", AuditVerdict::Confirmed),
        ])
        .await
        .expect("record verdicts");
    assert!(matches!(&recorded[0], Recorded::Refused { problem } if problem.contains("its own match")), "{recorded:?}");
    assert_eq!(recorded[1], Recorded::Audited { verdict: "mismatch" });
    assert_eq!(recorded[2], Recorded::DuplicateVerdict, "one verdict per audit");
    assert_eq!(recorded[3], Recorded::Audited { verdict: "confirmed" });
    assert!(matches!(&recorded[4], Recorded::Refused { .. }), "job 4 has no result, so no audit");
    let audit = ledger.audit_of(&jobs[0]).await.expect("audit").expect("audited");
    assert_eq!((audit.state.as_str(), audit.audited_by.as_deref()), ("mismatch", Some("good")));

    let workers = ledger.workers().await.expect("workers");
    let bad = workers.iter().find(|worker| worker.worker_id == "bad").expect("bad's record");
    assert_eq!((bad.matches, bad.audits, bad.mismatches), (3, 1, 1));
    assert_eq!(bad.bot_failures.get("crashed"), Some(&1));
    assert!(bad.quarantined.is_none(), "one audit is fewer than min_audits");

    ledger.record(vec![verdict(&tournament, &jobs[1], "good", mismatch())]).await.expect("record");
    let workers = ledger.workers().await.expect("workers");
    let bad = workers.iter().find(|worker| worker.worker_id == "bad").expect("bad's record");
    assert!(bad.quarantined.as_deref().is_some_and(|reason| reason.contains("2 of its 2 audited matches")), "{bad:?}");
    let good = workers.iter().find(|worker| worker.worker_id == "good").expect("good's record");
    assert_eq!((good.matches, good.audits, good.quarantined.as_deref()), (1, 1, None));

    assert!(ledger.release_worker("bad").await.expect("release"));
    assert!(!ledger.release_worker("bad").await.expect("release again"), "no longer quarantined");
    let workers = ledger.workers().await.expect("workers");
    let bad = workers.iter().find(|worker| worker.worker_id == "bad").expect("bad's record");
    assert_eq!((bad.audits, bad.mismatches, bad.quarantined.as_deref()), (0, 0, None));
}

/// Deliveries a worker gives back for its own infrastructure's faults count against
/// it; others (it stopped, it lost the broker) do not.
#[tokio::test]
async fn only_a_workers_own_faults_count_against_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings =
        crate::audits::AuditSettings { min_matches: 2, max_fault_rate: 0.5, ..crate::audits::AuditSettings::default() };
    let ledger = open(&dir).with_audits(settings);
    let tournament = botwars("faults", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let job = jobs(&tournament)[0].job_id.clone();
    let notice = |fault: bool| {
        let mut notice = envelope(&tournament, &job, "w", [0, 0]);
        notice.result = MatchResult::Returned { reason: "docker: connection refused".to_owned(), fault };
        Answer::Result(notice)
    };
    ledger.record(vec![notice(false), notice(false), notice(true)]).await.expect("record");
    let workers = ledger.workers().await.expect("workers");
    assert_eq!((workers[0].faults, workers[0].quarantined.as_deref()), (1, None), "{workers:?}");
    ledger.record(vec![notice(true)]).await.expect("record");
    let workers = ledger.workers().await.expect("workers");
    assert!(
        workers[0].quarantined.as_deref().is_some_and(|reason| reason.contains("failed 2 of its 2")),
        "{workers:?}"
    );
}

#[tokio::test]
async fn pending_jobs_are_shared_among_owners_by_share_and_each_owners_by_priority() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let user =
        |name: &str, share: u32| NewUser { name: name.into(), admin: false, share, created_by: "operator".into() };
    let token = || crate::accounts::NewToken::generate().expect("random");
    assert!(ledger.add_user(user("ada", 1), token()).await.expect("add"));
    assert!(ledger.add_user(user("bob", 3), token()).await.expect("add"));
    assert!(!ledger.add_user(user("bob", 1), token()).await.expect("add again"), "taken");
    // Ada: a big one first, then a small one of higher priority; Bob: one.
    let (ada_big, ada_urgent, bobs) = (botwars("ada big", 20), botwars("ada urgent", 1), botwars("bob", 20));
    ledger.insert_tournament_for(ada_big.clone(), "ada".into(), 0).await.expect("insert");
    ledger.insert_tournament_for(ada_urgent.clone(), "ada".into(), 5).await.expect("insert");
    ledger.insert_tournament_for(bobs.clone(), "bob".into(), 0).await.expect("insert");

    let owner_of = |job: &PendingJob| if job.tournament_id == bobs.id { "bob" } else { "ada" };
    let first = ledger.pending(8, None).await.expect("pending");
    let counts = |jobs: &[PendingJob]| {
        (
            jobs.iter().filter(|job| owner_of(job) == "ada").count(),
            jobs.iter().filter(|job| owner_of(job) == "bob").count(),
        )
    };
    assert_eq!(counts(&first), (2, 6), "shares 1:3");
    let adas: Vec<&str> =
        first.iter().filter(|job| owner_of(job) == "ada").map(|job| job.tournament_id.as_str()).collect();
    assert_eq!(adas, [ada_urgent.id.as_str(); 2], "her priority 5 before her older tournament");
    ledger.mark_running(leased(first.iter().map(|job| job.planned.job_id.clone()).collect())).await.expect("mark");

    // Bob's jobs are answered; the next slots go to him until he holds 3 to Ada's 1 again.
    let answered = first
        .iter()
        .filter(|job| owner_of(job) == "bob")
        .take(3)
        .map(|job| completed(&bobs, &job.planned.job_id, "w", [1, 0]));
    ledger.record(answered.collect()).await.expect("record");
    assert_eq!(counts(&ledger.pending(3, None).await.expect("pending")), (0, 3));
    assert_eq!(
        counts(&ledger.pending(7, None).await.expect("pending")),
        (1, 6),
        "Bob catches up to three times Ada's, then they share 1:3"
    );
    // `only` keeps to one tournament whoever else waits.
    let only = ledger.pending(4, Some(ada_big.id.clone())).await.expect("pending");
    assert!(only.len() == 4 && only.iter().all(|job| job.tournament_id == ada_big.id));

    let usage = ledger.usage("ada").await.expect("usage");
    assert_eq!((usage.running_tournaments, usage.queued_jobs), (2, 6 * 20 + 6));
    assert_eq!(ledger.owner(&bobs.id).await.expect("owner").as_deref(), Some("bob"));
}

#[tokio::test]
async fn events_are_written_once_when_a_tournament_finishes_or_concludes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let tournament = botwars("events", 1);
    ledger.insert_tournament_for(tournament.clone(), "ada".into(), 0).await.expect("insert");
    let hook = NewWebhook {
        id: "wh-1".into(),
        owner: "ada".into(),
        url: "http://127.0.0.1:9/".into(),
        kinds: vec!["tournament.finished".into()],
        secret: "s".into(),
    };
    ledger.add_webhook(hook).await.expect("add");
    let planned = jobs(&tournament);
    let answers: Vec<Answer> = planned.iter().map(|job| completed(&tournament, &job.job_id, "w", [1, 0])).collect();
    ledger.record(answers[..5].to_vec()).await.expect("record");
    assert_eq!(ledger.fan_out_events().await.expect("fan out"), 0, "not finished yet");
    ledger.record(answers[5..].to_vec()).await.expect("record");
    // A duplicate after it finished makes no second event.
    ledger.record(answers[5..].to_vec()).await.expect("record");
    assert_eq!(ledger.fan_out_events().await.expect("fan out"), 1);
    assert_eq!(ledger.fan_out_events().await.expect("fan out"), 0);
    let due = ledger.due_deliveries(i64::MAX, 10).await.expect("due");
    assert_eq!(due.len(), 1);
    let body: serde_json::Value = serde_json::from_str(&due[0].body).expect("JSON");
    assert_eq!(body["event"]["kind"], "tournament.finished");
    assert_eq!(body["tournament"]["jobs"]["done"], 6);

    // A stopped tournament concludes; the webhook asked for `finished` only, and gets it.
    let stopped = botwars("stopped", 2);
    ledger.insert_tournament_for(stopped.clone(), "ada".into(), 0).await.expect("insert");
    ledger.conclude(&stopped.id, "stopped by ada".into()).await.expect("conclude");
    assert_eq!(ledger.fan_out_events().await.expect("fan out"), 1, "finished (all cancelled), not concluded");
    let kinds: Vec<String> =
        ledger.deliveries("wh-1", 10).await.expect("history").into_iter().map(|d| d.kind).collect();
    assert_eq!(kinds, ["tournament.finished", "tournament.finished"]);
    // Another owner's events never reach Ada's webhook.
    let bobs = botwars("bob's", 3);
    ledger.insert_tournament_for(bobs.clone(), "bob".into(), 0).await.expect("insert");
    ledger.conclude(&bobs.id, "stopped by bob".into()).await.expect("conclude");
    assert_eq!(ledger.fan_out_events().await.expect("fan out"), 0);
}

#[tokio::test]
async fn versions_are_numbered_owned_and_their_decisions_are_events() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let hook = NewWebhook {
        id: "wh-v".into(),
        owner: "ada".into(),
        url: "http://127.0.0.1:9/".into(),
        kinds: vec!["version.validated".into(), "version.rejected".into(), "build.failed".into()],
        secret: "s".into(),
    };
    ledger.add_webhook(hook).await.expect("add");
    let ada = Caller { name: "ada".into(), admin: false };
    let upload = |by: &Caller, game: &str| NewVersion { by: by.clone(), game: game.into(), ..ada_upload() };
    for expected in 1..=3 {
        assert_eq!(ledger.add_version(upload(&ada, "botwars")).await.expect("add"), Ok(expected));
    }
    let bob = Caller { name: "bob".into(), admin: false };
    assert_eq!(
        ledger.add_version(upload(&bob, "botwars")).await.expect("add"),
        Err(VersionRefused::NotOwner("ada".into()))
    );
    assert_eq!(
        ledger.add_version(upload(&ada, "maze")).await.expect("add"),
        Err(VersionRefused::OtherGame("botwars".into()))
    );
    assert_eq!(ledger.submissions_today("ada").await.expect("count"), 3);
    let jobs = ledger.unpublished_builds().await.expect("builds");
    assert_eq!(jobs.iter().map(|job| job.version).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(jobs[0].log_key, "builds/ada-bot/v1.log");
    ledger.builds_published(jobs[..2].to_vec()).await.expect("published");
    assert_eq!(ledger.unpublished_builds().await.expect("builds").len(), 1);

    // 1 validated, 2 rejected, 3 failed to build: one event each, none twice.
    assert!(ledger.version_built("ada-bot".into(), 1, "img@sha256:1".into(), "t-v1".into()).await.expect("built"));
    assert!(!ledger.version_built("ada-bot".into(), 1, "img@sha256:1".into(), "t-v1".into()).await.expect("again"));
    assert!(ledger.version_built("ada-bot".into(), 2, "img@sha256:2".into(), "t-v2".into()).await.expect("built"));
    // A verdict needs a validation; a failed build, a build not yet answered.
    assert!(!ledger.decide_version("ada-bot".into(), 3, VersionState::Rejected, None).await.expect("not built"));
    assert!(!ledger.decide_version("ada-bot".into(), 2, VersionState::BuildFailed, None).await.expect("late"));
    for (version, state) in [(1, VersionState::Validated), (2, VersionState::Rejected), (3, VersionState::BuildFailed)]
    {
        assert!(ledger.decide_version("ada-bot".into(), version, state, Some("why".into())).await.expect("decide"));
        assert!(!ledger.decide_version("ada-bot".into(), version, state, None).await.expect("decided already"));
    }
    assert_eq!(ledger.fan_out_events().await.expect("fan out"), 3);
    let due = ledger.due_deliveries(i64::MAX, 10).await.expect("due");
    let mut seen: Vec<(String, u64, String)> = due
        .iter()
        .map(|delivery| {
            let body: serde_json::Value = serde_json::from_str(&delivery.body).expect("JSON");
            let version = &body["version"];
            assert_eq!(version["bot"], "ada-bot", "{body}");
            (
                delivery.kind.clone(),
                version["version"].as_u64().expect("n"),
                version["state"].as_str().expect("s").into(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("build.failed".to_owned(), 3, "build_failed".to_owned()),
            ("version.rejected".to_owned(), 2, "rejected".to_owned()),
            ("version.validated".to_owned(), 1, "validated".to_owned()),
        ]
    );
    let view = ledger.bot("ada-bot").await.expect("bot").expect("exists");
    assert_eq!(view.versions[2].entry, "ada-bot.v1");
    assert_eq!(view.versions[2].build_log.as_deref(), Some("/api/bots/ada-bot/versions/1/build-log"));
}

#[tokio::test]
async fn a_versions_validation_is_not_held_to_its_owners_quotas() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = open(&dir);
    let validation = botwars("validation", 9);
    ledger.insert_tournament_for(validation.clone(), "ada".into(), 100).await.expect("insert");
    assert_eq!(ledger.usage("ada").await.expect("usage").running_tournaments, 1, "any tournament of hers counts");
    let new = ada_upload();
    assert_eq!(ledger.add_version(new).await.expect("add"), Ok(1));
    assert!(ledger.version_built("ada-bot".into(), 1, "img".into(), validation.id.clone()).await.expect("built"));
    let usage = ledger.usage("ada").await.expect("usage");
    assert_eq!((usage.running_tournaments, usage.queued_jobs), (0, 0), "the farm started it, not she");
    let counts = ledger.versions_by_state().await.expect("counts");
    assert!(counts.contains(&(VersionState::Validating, 1)) && counts.contains(&(VersionState::Building, 0)));
}

/// An audit nobody answered is given up as skipped, with its reason; the worker that
/// played a match may only say that nobody else took its audit.
#[tokio::test]
async fn an_unplaced_audit_is_given_up_and_a_player_may_only_skip_its_own() {
    use farm_proto::AuditVerdict;
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = crate::audits::AuditSettings { fraction: 1.0, ..crate::audits::AuditSettings::default() };
    let ledger = open(&dir).with_audits(settings);
    let tournament = botwars("unplaced", 1);
    ledger.insert_tournament(tournament.clone()).await.expect("insert");
    let jobs: Vec<String> = jobs(&tournament).into_iter().map(|job| job.job_id).collect();
    let answers = jobs[..2].iter().map(|job| completed(&tournament, job, "w", [1, 2])).collect();
    ledger.record(answers).await.expect("record");
    let due = ledger.audits_to_publish(10, 900).await.expect("due");
    ledger.mark_audits_published(due.into_iter().map(|audit| audit.job_id).collect()).await.expect("published");

    ledger.give_up_audits(vec![jobs[0].clone()], "never placed".to_owned()).await.expect("give up");
    let audit = ledger.audit_of(&jobs[0]).await.expect("audit").expect("audited");
    assert_eq!((audit.state.as_str(), audit.detail.as_deref()), ("skipped", Some("never placed")));
    let due: Vec<String> = ledger.audits_to_publish(10, 0).await.expect("due").into_iter().map(|a| a.job_id).collect();
    assert_eq!(due, [jobs[1].clone()], "a given-up audit is never due again");

    let skipped = AuditVerdict::Skipped { reason: "no other worker took it".into() };
    let recorded = ledger
        .record(vec![
            verdict(&tournament, &jobs[1], "w", AuditVerdict::Confirmed),
            verdict(&tournament, &jobs[1], "w", skipped),
        ])
        .await
        .expect("record verdicts");
    assert!(matches!(&recorded[0], Recorded::Refused { problem } if problem.contains("its own match")), "{recorded:?}");
    assert_eq!(recorded[1], Recorded::Audited { verdict: "skipped" });
}

/// A bot is private until its owner says otherwise; a validated image names its bot,
/// owner and flag, and nothing else does. A ledger from before the flag gets it, its
/// bots private.
#[tokio::test]
async fn bots_are_private_until_made_public_and_a_ledger_from_before_gets_the_flag() {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let ledger = open(&dir);
        let new = ada_upload();
        for expected in 1..=2 {
            assert_eq!(ledger.add_version(new.clone()).await.expect("add"), Ok(expected));
        }
        for version in 1..=2 {
            let image = format!("r/matchfarm-bots/ada-bot@sha256:{version}");
            assert!(ledger.version_built("ada-bot".into(), version, image, "t-v".into()).await.expect("built"));
        }
        assert!(ledger.decide_version("ada-bot".into(), 1, VersionState::Validated, None).await.expect("decide"));
        assert!(!ledger.bot("ada-bot").await.expect("bot").expect("exists").public);
        assert_eq!(
            ledger.validated_image("r/matchfarm-bots/ada-bot@sha256:2").await.expect("read"),
            None,
            "validating"
        );
        assert_eq!(ledger.validated_image("r/matchfarm-bots/bob-bot@sha256:1").await.expect("read"), None);
        let private = ImageBot { bot: "ada-bot".into(), owner: "ada".into(), public: false };
        let image = "r/matchfarm-bots/ada-bot@sha256:1";
        assert_eq!(ledger.validated_image(image).await.expect("read"), Some(private.clone()));
        assert!(ledger.set_public("ada-bot", true).await.expect("set"));
        assert!(!ledger.set_public("nobody", true).await.expect("set"), "no such bot");
        assert!(ledger.bot("ada-bot").await.expect("bot").expect("exists").public);
        assert_eq!(ledger.validated_image(image).await.expect("read"), Some(ImageBot { public: true, ..private }));
    }
    // As the build before public bots left it: no flag, version 6.
    let raw = Connection::open(dir.path().join("ledger").join("ledger.sqlite")).expect("raw");
    raw.execute_batch("ALTER TABLE bots DROP COLUMN public; PRAGMA user_version = 6;").expect("wind back");
    drop(raw);
    let ledger = open(&dir);
    let view = ledger.bot("ada-bot").await.expect("bot").expect("exists");
    assert!(!view.public, "private, as its owner left it");
    assert_eq!(view.versions.len(), 2);
    assert!(ledger.set_public("ada-bot", true).await.expect("set"));
    assert!(ledger.bot("ada-bot").await.expect("bot").expect("exists").public);
}

/// Ada's upload of a Python source for her bot `ada-bot`, a Botwars bot.
fn ada_upload() -> NewVersion {
    NewVersion {
        bot: "ada-bot".into(),
        by: Caller { name: "ada".into(), admin: false },
        game: "botwars".into(),
        layout: "python".into(),
        source_key: "sources/ada-bot/x.tar".into(),
        ladder: None,
    }
}

#[test]
fn an_entry_names_its_bots_version_and_no_other_bots() {
    assert_eq!(entry_version("ada", &entry_name("ada", 7)), Some(7));
    for (bot, name) in
        [("ada", "ada-bot.v1"), ("ada", "ada.vx"), ("ada", "ada"), ("ada-bot", "ada.v1"), ("ada", "ada.v")]
    {
        assert_eq!(entry_version(bot, name), None, "{name} of {bot}");
    }
}
