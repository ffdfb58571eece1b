//! The clocks a match times its bots' moves by (`farm_proto::MoveClock`), against real
//! bot processes and containers: the CPU clock keeps a loaded machine from timing a bot
//! out where the wall clock does not; a time bank carries a bot over budget until it
//! is spent, and no further; bots are frozen from their reply to their next request,
//! in turn-based and simultaneous games, unless the match lets them ponder; and every
//! frame records what each reply took.
//!
//! The bots are bench-echo-bot's modes (bots/bench/echo-rs): `--burn-ms N` spends N ms
//! of its own CPU time on each reply, `--think-ms N` sleeps N ms, `--ponder` spins a
//! thread and a child process between turns and reports the CPU time they used while
//! idle (`idle-cpu-us N`).

use farm_engine::replay::{self, ReplyTime};
use farm_engine::{BotReply, GameKind, MatchSetup};
use farm_proto::{BotSpec, ClockKind, MoveClock, PlayerStatus};
use farm_testkit::{unique, workspace_binary};
use farm_worker::bots::{DockerSandbox, DockerSettings, LocalSandbox, Sandbox};
use farm_worker::runner::{MatchIo, MatchReport, RunnerOptions, fill_seats, play_match};

/// A local echo bot with `flags`.
fn local_echo(flags: &str) -> String {
    format!("cmd:{} {flags}", workspace_binary("bench-echo-bot").display())
}

/// The echo bot's image with `flags` (its arguments replace its command).
fn container_echo(flags: &str) -> String {
    format!("image:matchfarm/bot-bench-echo-rs /bot/bench-echo-bot {flags}")
}

/// A played match: its report and its replay's lines.
struct Played {
    report: MatchReport,
    lines: Vec<String>,
}

impl Played {
    /// What each of `seat`'s replies got and took, in order, from the replay's frames.
    fn moves(&self, seat: usize) -> Vec<(BotReply, ReplyTime)> {
        let mut moves = Vec::new();
        for line in &self.lines {
            let Ok(frame) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            let Some(replies) = frame["replies"].as_array() else { continue };
            let times = replay::times_of(line);
            assert_eq!(times.len(), replies.len(), "every reply of a frame is timed: {line}");
            for (reply, time) in replies.iter().zip(times) {
                if reply["seat"] == seat {
                    let reply: BotReply = serde_json::from_value(reply["reply"].clone()).expect("a reply");
                    moves.push((reply, time.expect("an asked seat's reply is timed")));
                }
            }
        }
        moves
    }

    /// Seat `seat`'s stderr.
    fn log(&self, seat: usize) -> String {
        String::from_utf8_lossy(&self.report.seats[seat].log.bytes).into_owned()
    }
}

/// Plays `game` with `rules` between `bots` in `sandbox`, timed by `clock`; checks that
/// its replay verifies.
async fn play(
    sandbox: &impl Sandbox,
    game: GameKind,
    rules: serde_json::Value,
    clock: MoveClock,
    bots: &[String],
) -> Played {
    let bots: Vec<BotSpec> = bots.iter().map(|spec| spec.parse().expect("a bot spec")).collect();
    let bots = fill_seats(game, bots);
    let players = bots.iter().map(|bot| bot.name.clone()).collect();
    let setup = MatchSetup::new(game, &rules, None, 5, players).expect("a valid setup");
    let mut replay = Vec::new();
    let io = MatchIo { replay: &mut replay, on_step: |_, _| {}, stop: std::future::pending(), live: None };
    let job_id = unique("clocks");
    let report = play_match(sandbox, &job_id, setup, clock, &bots, &RunnerOptions::default(), io)
        .await
        .expect("the match is played");
    let lines: Vec<String> = String::from_utf8(replay).expect("text").lines().map(str::to_owned).collect();
    let check = replay::verify(&lines).expect("the replay reads");
    assert!(check.matches(), "{check:?}");
    assert_eq!(check.sha256, report.replay_sha256, "the report names the replay's play");
    Played { report, lines }
}

fn cpu_clock() -> MoveClock {
    MoveClock { kind: ClockKind::Cpu, ..MoveClock::default() }
}

/// Another program keeping both cores busy: a container of eight spinning shells with
/// eight times the CPU weight of a bot's container, so that whatever the host's cgroup
/// layout, a bot container gets a small share of a core while it runs. Removed when
/// dropped.
struct Load(String);

impl Load {
    fn start() -> Self {
        let name = unique("clock-load");
        let spin = "for i in 1 2 3 4 5 6 7 8; do (while :; do :; done) & done; wait";
        let started = std::process::Command::new("docker")
            .args(["run", "-d", "--rm", "--network", "none", "--cpu-shares", "8192", "--name", &name])
            .args(["matchfarm/base-debian", "sh", "-c", spin])
            .output()
            .expect("docker runs");
        assert!(started.status.success(), "the load starts: {}", String::from_utf8_lossy(&started.stderr));
        Load(name)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        let _ = std::process::Command::new("docker").args(["rm", "-f", &self.0]).output();
    }
}

/// The tests that load the machine, or measure CPU time against it, one at a time: the
/// load would change what the freezing tests measure, and their pondering bots the
/// load.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A container bot that spends 40 ms of CPU time on each move of a 50 ms budget plays
/// 100 moves on a machine whose cores another program keeps busy: on the CPU clock
/// without a timeout, on the wall clock timed out (a Botwars timeout disqualifies).
#[tokio::test(flavor = "multi_thread")]
async fn the_cpu_clock_is_the_same_on_a_loaded_machine_and_the_wall_clock_is_not() {
    let _serial = SERIAL.lock().await;
    let docker = DockerSandbox::connect(&unique("w-clocks"), &DockerSettings::default()).await.expect("Docker");
    let rules = serde_json::json!({ "maxTurns": 100, "replyTimeoutMs": 50 });
    let bots = [container_echo("--burn-ms 40"), container_echo("")];
    let load = Load::start();
    // The longest backstop (5 s a move): this test is about the CPU budget, and the load
    // leaves the bot a fifth of a core or less, less still while other tests run.
    let cpu =
        MoveClock { wall_backstop: farm_proto::limits::WALL_BACKSTOP.range.max.expect("a ceiling"), ..cpu_clock() };
    let on_cpu = play(&docker, GameKind::Botwars, rules.clone(), cpu, &bots).await;
    let on_wall = play(&docker, GameKind::Botwars, rules, MoveClock::default(), &bots).await;
    drop(load);
    docker.shutdown().await.expect("the containers removed");

    let (cpu_seat, wall_seat) = (&on_cpu.report.seats[0], &on_wall.report.seats[0]);
    eprintln!(
        "timeouts under load: cpu clock {} of {} moves (wall-clock time per move: mean {:.1} ms, p99 {:.1} ms), wall \
         clock {} of {} moves",
        cpu_seat.timeouts,
        cpu_seat.requests,
        cpu_seat.reply.mean_ms,
        cpu_seat.reply.p99_ms,
        wall_seat.timeouts,
        wall_seat.requests
    );
    assert_eq!((cpu_seat.timeouts, cpu_seat.requests), (0, 100), "{cpu_seat:?}");
    assert_eq!(cpu_seat.outcome.status, PlayerStatus::Ok);
    let moves = on_cpu.moves(0);
    // The load is real: on the wall clock its moves took longer than their budget.
    let slow = moves.iter().skip(1).filter(|(_, time)| time.wall_us > 50_000).count();
    assert!(slow > 50, "most moves took over 50 ms of wall-clock time: {slow} of 99");
    for (reply, time) in &moves[1..] {
        assert_eq!(*reply, BotReply::Line("[]".into()));
        let cpu_us = time.cpu_us.expect("a container's CPU time is measured");
        assert!((40_000..50_000).contains(&cpu_us), "each move took its 40 ms of CPU: {time:?}");
    }
    let summary = cpu_seat.cpu.expect("a CPU summary");
    assert!(summary.p99_ms < 50.0 && summary.mean_ms >= 40.0, "{summary:?}");
    assert_eq!(wall_seat.timeouts, 1, "{wall_seat:?}");
    assert_eq!(wall_seat.outcome.status, PlayerStatus::TimedOut);
}

/// Moves 30 ms over budget draw on a 300 ms bank: the first ones come in, the bank
/// is never overdrawn, and the bot times out once it is spent; with no bank its first
/// slow move times out.
#[tokio::test(flavor = "multi_thread")]
async fn a_time_bank_carries_moves_over_budget_until_it_is_spent() {
    let rules = serde_json::json!({ "maxTurns": 20, "replyTimeoutMs": 50 });
    let bots = [local_echo("--think-ms 80"), local_echo("")];
    let banked = MoveClock { time_bank_ms: 300, ..MoveClock::default() };
    let with_bank = play(&LocalSandbox, GameKind::Botwars, rules.clone(), banked, &bots).await;
    let without = play(&LocalSandbox, GameKind::Botwars, rules, MoveClock::default(), &bots).await;

    // The first move has the start-up grace; the bank is for the others.
    let moves = with_bank.moves(0);
    let answered: Vec<&ReplyTime> =
        moves[1..].iter().take_while(|(reply, _)| *reply != BotReply::Timeout).map(|(_, time)| time).collect();
    assert!(answered.len() >= 2, "the bank carried the first slow moves: {moves:?}");
    assert!(answered.iter().all(|time| time.wall_us > 50_000), "every one was over budget: {answered:?}");
    let drawn: u64 = answered.iter().map(|time| time.wall_us - 50_000).sum();
    assert!(drawn <= 300_000, "the bank is never overdrawn: {drawn} µs drawn");
    assert_eq!(moves.last().map(|(reply, _)| reply), Some(&BotReply::Timeout), "then the bank ran out");
    assert_eq!(with_bank.report.seats[0].timeouts, 1);

    let moves = without.moves(0);
    assert_eq!(moves.len(), 2, "{moves:?}");
    assert_eq!(moves[1].0, BotReply::Timeout, "without a bank the first slow move times out");
}

/// The pondering bot's idle CPU time per turn, from its log.
fn idle_cpu_ms(played: &Played) -> Vec<f64> {
    let idle: Vec<f64> = played
        .log(0)
        .lines()
        .filter_map(|line| line.strip_prefix("idle-cpu-us "))
        .map(|micros| micros.parse::<f64>().expect("a number") / 1000.0)
        .collect();
    assert!(idle.len() >= 8, "a report at every request after the first: {}", played.log(0));
    idle
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A bot that answers at once and spins in a thread and a child process between its
/// reply and its next request is frozen there, unless the match lets it ponder: in
/// Vindinium, whose heroes move in turn (while the three others think, 50 ms each), and
/// in Botwars, where both seats are asked at every step (while the other one thinks
/// 50 ms). What it spent before the freeze took hold is charged to its next move: over
/// the match it computes no more than it is charged. The bots are `echo`'s (local or
/// container echo bots).
async fn freezes_bots_between_reply_and_request(sandbox: &impl Sandbox, echo: fn(&str) -> String) {
    let _serial = SERIAL.lock().await;
    let thinker = echo("--think-ms 50");
    let vindinium = [echo("--ponder"), thinker.clone(), thinker.clone(), thinker.clone()];
    let botwars = [echo("--ponder"), thinker];
    for (game, rules, bots, idle_ms) in [
        (GameKind::Vindinium, serde_json::json!({ "maxTurns": 40, "moveTimeoutMs": 1000 }), &vindinium[..], 150.0),
        (GameKind::Botwars, serde_json::json!({ "maxTurns": 40, "replyTimeoutMs": 1000 }), &botwars[..], 50.0),
    ] {
        let frozen = play(sandbox, game, rules.clone(), MoveClock::default(), bots).await;
        let ponder = MoveClock { ponder: true, ..MoveClock::default() };
        let pondering = play(sandbox, game, rules, ponder, bots).await;
        let charged_ms: f64 =
            frozen.moves(0).iter().filter_map(|(_, time)| time.cpu_us).map(|micros| micros as f64 / 1000.0).sum();
        let frozen_idle = idle_cpu_ms(&frozen);
        let (frozen_total, frozen_median, pondering_median) =
            (frozen_idle.iter().sum::<f64>(), median(frozen_idle), median(idle_cpu_ms(&pondering)));
        eprintln!(
            "{game:?}: CPU between reply and request (median a turn): frozen {frozen_median:.2} ms, pondering \
             {pondering_median:.2} ms; frozen, over the match: {frozen_total:.1} ms between replies and requests, \
             {charged_ms:.1} ms charged in all"
        );
        // Its thread and child spin through the `idle_ms` between two of its requests
        // when let to ponder; frozen, only until the freeze takes hold after its reply
        // (charged to its next move) and from its thaw to its request (charged to that
        // request's move). How soon a freeze takes hold is the host's scheduling (a
        // container's supervisor shares its CPU quota with the spinning bot), so the
        // charge, not the time, is what holds in every game.
        assert!(pondering_median > 0.6 * idle_ms, "{game:?}: let to ponder, it used {pondering_median:.2} ms");
        if game == GameKind::Vindinium {
            // Three others' turns to freeze it in: it computes a fraction of what it does
            // pondering (a median 0.4 to 28 ms a turn frozen here, 150 to 276 pondering).
            assert!(frozen_median < 0.5 * pondering_median, "{game:?}: frozen, it used {frozen_median:.2} ms a turn");
        }
        assert!(
            frozen_total <= charged_ms * 1.02 + 2.0,
            "{game:?}: {frozen_total:.1} ms computed between replies and requests, {charged_ms:.1} ms charged"
        );
        let charged_every_move = frozen.moves(0).iter().all(|(_, time)| time.cpu_us.is_some());
        assert!(charged_every_move, "every move's CPU time is measured");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_local_bot_is_frozen_from_its_reply_to_its_next_request() {
    freezes_bots_between_reply_and_request(&LocalSandbox, local_echo).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_container_bot_is_frozen_from_its_reply_to_its_next_request() {
    let docker = DockerSandbox::connect(&unique("w-freeze"), &DockerSettings::default()).await.expect("Docker");
    freezes_bots_between_reply_and_request(&docker, container_echo).await;
    docker.shutdown().await.expect("the containers removed");
}
