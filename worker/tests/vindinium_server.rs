//! Clients of the original Vindinium server's API (transport `vindinium-server`)
//! through `farm-worker serve`, with the real RabbitMQ, S3 server and Docker engine:
//! the Python and Rust starter kits (bots/vindinium/kit-*), as local processes and in
//! containers with no network, beside two stdio bots; and a careless client
//! (bots/hostile/stray-client.py) whose refusals are the original server's.
//! scripts/test builds the images and the workspace's binaries first.

use std::time::Duration;

use farm_engine::replay;
use farm_engine::vindinium::server_document;
use farm_proto::{BotSpec, GameKind, MatchJob, MatchResult, PlayerResult, PlayerStatus};
use farm_testkit::*;
use serde_json::Value;

/// Short matches, which the kits' traced states fit in a log; deadlines no loaded
/// machine misses, but for the careless client's silence, which costs one.
const RULES: &str = r#"{"maxTurns":40,"moveTimeoutMs":5000}"#;

fn job(tournament: &str, job_id: &str, bots: &[String]) -> MatchJob {
    MatchJob {
        job_id: job_id.to_owned(),
        tournament_id: tournament.to_owned(),
        game: GameKind::Vindinium,
        rules: serde_json::from_str(RULES).expect("rules"),
        map: Some(std::fs::read_to_string(repo().join("maps/vindinium/m1.txt")).expect("m1")),
        seed: 11,
        bots: bots.iter().map(|spec| spec.parse::<BotSpec>().expect("bot spec")).collect(),
        isolation: None,
        clock: Default::default(),
    }
}

/// A match as played and stored: its players, its replay's lines and each seat's log.
struct Played {
    players: Vec<PlayerResult>,
    replay: Vec<String>,
    logs: Vec<String>,
}

/// Plays `jobs` on one `farm-worker serve` of `sandbox`, through RabbitMQ, and reads
/// back what each stored, its replay verified.
async fn serve(sandbox: &str, jobs: &[MatchJob]) -> Vec<Played> {
    let vhost = Vhost::new("vindinium-server");
    let connection = vhost.connect().await;
    publish_jobs(&connection, 5, jobs).await;
    let mut results = results_consumer(&connection).await;
    let worker = WorkerProcess::start_with(&vhost, &unique("w-vs"), 1, 5, &[("FARM_SANDBOX", sandbox)]);
    let storage = s3();
    let mut played = Vec::new();
    for _ in jobs {
        let result = next_result(&mut results, Duration::from_secs(180)).await;
        let MatchResult::Completed { players, replay_key, replay_sha256, .. } = result.result else {
            panic!("{} was not played: {:?}", result.job_id, result.result);
        };
        let lines = replay_lines(&storage, &replay_key).await;
        let check = replay::verify(&lines).expect("the stored replay reads");
        assert!(check.matches() && check.sha256 == replay_sha256, "{}'s replay re-simulates", result.job_id);
        let mut logs = Vec::new();
        for player in &players {
            let log = match &player.log_key {
                Some(key) => String::from_utf8(storage.read(key).await.expect("log stored")).expect("utf-8"),
                None => String::new(),
            };
            logs.push(log);
        }
        played.push((result.job_id, Played { players, replay: lines, logs }));
    }
    assert!(worker.terminate().success());
    played.sort_by(|(a, _), (b, _)| a.cmp(b));
    played.into_iter().map(|(_, played)| played).collect()
}

/// The frames of a replay, as JSON.
fn frames(replay: &[String]) -> Vec<Value> {
    replay
        .iter()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON"))
        .filter(|line| line["type"] == "frame")
        .collect()
}

/// Where each of `keys` is in `document`, in order: the original's field order.
fn in_order(document: &str, keys: &[&str]) {
    let mut from = 0;
    for key in keys {
        let at = document[from..].find(key).unwrap_or_else(|| panic!("{key} after byte {from} of {document}"));
        from += at + key.len();
    }
}

/// Checks that the states the client in `seat` logged (`state JSON` lines, the kits'
/// `--trace`) are the original server's documents: each one the stdio observation
/// the replay says the seat was sent, byte for byte but for the game's id (8
/// characters, as the original's), the client's token and URLs, in the original's
/// shape; the last one `finished`, the match's end.
fn check_client_states(played: &Played, seat: usize) {
    let states: Vec<&str> = played.logs[seat].lines().filter_map(|line| line.strip_prefix("state ")).collect();
    let sent: Vec<String> = replay::observations(&played.replay, seat)
        .expect("the replay re-simulates")
        .into_iter()
        .filter_map(|step| step.observation)
        .collect();
    assert_eq!(states.len(), sent.len() + 1, "seat {seat}: a state per turn and the last: {}", played.logs[seat]);

    let first: Value = serde_json::from_str(states[0]).expect("JSON");
    let original_chars = |id: &str| id.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit());
    // A 128-bit token of the original's characters; the match's id in 8 of them.
    let token = first["token"].as_str().expect("a token");
    assert!(token.len() == 25 && original_chars(token), "{token}");
    let game_id = first["game"]["id"].as_str().expect("a game id");
    let match_id = frames(&played.replay)[0]["state"]["id"].as_str().expect("the replay's game id").to_owned();
    assert!(game_id.len() == 8 && original_chars(game_id) && match_id.ends_with(game_id), "{game_id} of {match_id}");
    let view_url = first["viewUrl"].as_str().expect("a viewUrl");
    let host = view_url.strip_prefix("http://").and_then(|rest| rest.strip_suffix(&format!("/{game_id}")));
    let host = host.unwrap_or_else(|| panic!("viewUrl {view_url}"));
    assert!(host.starts_with("127.0.0.1:"), "the server is on the bot's loopback: {host}");
    assert_eq!(first["playUrl"], format!("http://{host}/api/{game_id}/{token}/play"));
    for (state, observation) in states.iter().zip(&sent) {
        assert_eq!(Some(state.to_string()), server_document(observation, token, host), "seat {seat}");
        in_order(
            state,
            &[
                r#"{"game":{"id":"#,
                r#","turn":"#,
                r#","maxTurns":"#,
                r#","heroes":[{"id":1,"name":"#,
                r#","board":{"size":"#,
                r#","tiles":""#,
                r#","finished":false},"hero":{"id":"#,
                r#","token":""#,
                r#","viewUrl":"http://"#,
                r#","playUrl":"http://"#,
            ],
        );
    }

    // The last state is the match's end: the replay's last frame (but for the game's
    // id), finished.
    let last: Value = serde_json::from_str(states[sent.len()]).expect("JSON");
    let frames = frames(&played.replay);
    let mut end = frames.last().expect("frames")["state"].clone();
    end["id"] = Value::from(game_id);
    assert_eq!(last["game"], end);
    assert_eq!((&last["game"]["finished"], &last["game"]["turn"]), (&Value::Bool(true), &Value::from(40)));
    assert_eq!(last["hero"], end["heroes"][seat]);
}

/// Seats 0 and 1 are the kits, 2 and 3 stdio bots: every seat plays to the end, and
/// the kits got the original's documents.
fn check_kits_match(played: &Played) {
    assert_eq!(played.players.len(), 4);
    for player in &played.players {
        assert_eq!(player.outcome.status, PlayerStatus::Ok, "{player:?}\n{:?}", played.logs);
    }
    for seat in [0, 1] {
        check_client_states(played, seat);
        assert!(played.logs[seat].contains("finished: turn 40"), "{}", played.logs[seat]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn starter_kits_play_as_local_processes_beside_stdio_bots() {
    let python = |path: &str| format!("python3 {}", repo().join(path).display());
    let binary = |name: &str| workspace_binary(name).display().to_string();
    let bots = [
        format!("cmd+vindinium-server:{} --trace", python("bots/vindinium/kit-py/client.py")),
        format!("cmd+vindinium-server:{} training --trace", binary("vindinium-kit")),
        format!("cmd:{}", python("bots/vindinium/random_bot.py")),
        format!("cmd:{}", binary("vindinium-random-bot")),
    ];
    // A kit that refuses its arguments exits before its first move: crashed at once,
    // its exit seen on its process (it says nothing on stdio), not at its deadline.
    let broken = [format!("cmd+vindinium-server:{} --no-such-option", binary("vindinium-kit"))];
    let tournament = unique("t-vs-local");
    let played = serve("local", &[job(&tournament, "a-kits", &bots), job(&tournament, "b-broken", &broken)]).await;
    check_kits_match(&played[0]);
    let broken = &played[1].players[0];
    assert_eq!((broken.outcome.status, broken.timeouts), (PlayerStatus::Crashed, 0), "{broken:?}");
    assert!(played[1].logs[0].contains("unknown option \"--no-such-option\""), "{}", played[1].logs[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn starter_kits_play_in_containers_without_a_network_and_a_careless_client_is_answered_as_the_original() {
    let kits = [
        "image+vindinium-server:matchfarm/bot-vindinium-kit-py arena 1000000 --trace",
        "image+vindinium-server:matchfarm/bot-vindinium-kit-rs training --trace",
        "image:matchfarm/bot-vindinium-random-py",
        "image:matchfarm/bot-vindinium-random-rs",
    ]
    .map(str::to_owned);
    let careless = ["image+vindinium-server:matchfarm/hostile stray-client", "builtin:greedy"].map(str::to_owned);
    let tournament = unique("t-vs-docker");
    let played = serve("docker", &[job(&tournament, "a-kits", &kits), job(&tournament, "b-careless", &careless)]).await;
    check_kits_match(&played[0]);
    // The Python kit asks for game after game, as in the original's arena: its next
    // request was held until the farm ended it; the Rust kit played its one game.
    assert_eq!(played[0].players[0].exit_code, None, "{}", played[0].logs[0]);
    assert_eq!(played[0].players[1].exit_code, Some(0), "{}", played[0].logs[1]);

    // The careless client: each refusal is the original's, and the match goes on
    // without it once it falls silent (its hero crashed, the others play to the end).
    let careless = &played[1];
    let log = &careless.logs[0];
    for expected in [
        "wrong-key: 400 'Vindinium - Key not found'",
        "state turn 0",
        "state turn 4",
        "wrong-token: 404 'Vindinium - Wrong or expired token'",
        "no-direction: 400 ''",
        "state turn 8",
        "silent: posting nothing more",
    ] {
        assert!(log.lines().any(|line| line == expected), "{expected:?} in {log}");
    }
    assert!(log.lines().any(|line| line.starts_with("not-a-direction: 200 {")), "{log}");
    assert_eq!(careless.players[0].outcome.status, PlayerStatus::TimedOut);
    assert_eq!(careless.players[0].timeouts, 1);
    assert!(careless.players[1..].iter().all(|player| player.outcome.status == PlayerStatus::Ok));
    // What it posted was played: a direction that is none as Stay, then North.
    let replies: Vec<Value> = frames(&careless.replay)
        .into_iter()
        .filter_map(|frame| frame["replies"].as_array()?.iter().find(|reply| reply["seat"] == 0).cloned())
        .collect();
    assert_eq!(replies[0]["reply"], serde_json::json!({ "line": "Stay" }));
    assert_eq!(replies[1]["reply"], serde_json::json!({ "line": "North" }));
    assert_eq!(replies[2]["reply"], serde_json::json!("timeout"), "{replies:?}");
    assert_eq!(frames(&careless.replay).len(), 40);
}
