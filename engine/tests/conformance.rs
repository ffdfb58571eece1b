//! The conformance harness: every game in `GameKind::ALL` goes through the same
//! invariants. A new game gets all of them by being added to the enum; the one
//! per-game tables here (`short_rules`, `documented_status`, `stored_format_1_replay`)
//! make the compiler ask for its entries.

use farm_engine::replay::{self, ObservationError, ReplayError, ReplyTime, Verification};
use farm_engine::{AnyGame, BotReply, GameKind, Match, MatchSetup, PlayerStatus, builtin};
use proptest::prelude::*;

fn setup(kind: GameKind, seed: u64, rules: serde_json::Value) -> MatchSetup {
    let players = (0..*AnyGame::seats(kind).start()).map(|seat| format!("p{seat}")).collect();
    MatchSetup::new(kind, &rules, None, seed, players).expect("the default setup of every game is valid")
}

/// Shorter matches for the property tests, so that many cases stay cheap.
fn short_rules(kind: GameKind) -> serde_json::Value {
    match kind {
        GameKind::Vindinium => serde_json::json!({ "maxTurns": 120 }),
        GameKind::Botwars => serde_json::json!({ "maxTurns": 40 }),
        GameKind::Ostibot => {
            serde_json::json!({ "corruptionStartAt": 4, "corruptionSpreadSpeed": 1, "maxTurnsPerRound": 24 })
        }
        GameKind::Maze => serde_json::json!({ "maxTurns": 40 }),
    }
}

/// Rules at the edges of their documented ranges: accepted, then each value just
/// outside with the error it must give.
fn rules_at_the_edges(kind: GameKind) -> (serde_json::Value, Vec<(serde_json::Value, &'static str)>) {
    use serde_json::json;
    match kind {
        GameKind::Vindinium => (
            json!({ "maxTurns": 100_000, "moveTimeoutMs": 600_000 }),
            vec![
                (json!({ "maxTurns": 0 }), "maxTurns must be 1 to 100000, got 0"),
                (json!({ "maxTurns": 100_001 }), "maxTurns must be 1 to 100000, got 100001"),
                (json!({ "moveTimeoutMs": 0 }), "moveTimeoutMs must be 1 to 600000, got 0"),
                (json!({ "moveTimeoutMs": 600_001 }), "moveTimeoutMs must be 1 to 600000, got 600001"),
            ],
        ),
        GameKind::Botwars => (
            json!({ "maxTurns": 100_000, "replyTimeoutMs": 600_000, "energyEvery": 0 }),
            vec![
                (json!({ "maxTurns": 1_000_000_000 }), "maxTurns must be 1 to 100000, got 1000000000"),
                (json!({ "replyTimeoutMs": 600_001 }), "replyTimeoutMs must be 1 to 600000, got 600001"),
                (json!({ "energyEvery": 100_001 }), "energyEvery must be 0 to 100000, got 100001"),
            ],
        ),
        GameKind::Ostibot => (
            json!({ "maxTurnsPerRound": 100_000, "timeout": 600, "nbRounds": 100 }),
            vec![
                (json!({ "maxTurnsPerRound": 100_001 }), "maxTurnsPerRound must be 1 to 100000, got 100001"),
                (json!({ "timeout": 1_000_000_000 }), "timeout must be 0.001 to 600 seconds, got 1000000000"),
                (json!({ "nbRounds": 0 }), "nbRounds must be 1 to 100, got 0"),
            ],
        ),
        GameKind::Maze => (
            json!({ "maxTurns": 100_000, "firstTurnTimeoutMs": 600_000, "turnTimeoutMs": 1 }),
            vec![
                (json!({ "maxTurns": 0 }), "maxTurns must be 1 to 100000, got 0"),
                (json!({ "firstTurnTimeoutMs": 600_001 }), "firstTurnTimeoutMs must be 1 to 600000, got 600001"),
                (json!({ "turnTimeoutMs": 0 }), "turnTimeoutMs must be 1 to 600000, got 0"),
            ],
        ),
    }
}

#[test]
fn rules_outside_their_documented_ranges_are_refused_naming_the_key() {
    for kind in GameKind::ALL {
        let players: Vec<String> = (0..*AnyGame::seats(kind).start()).map(|seat| format!("p{seat}")).collect();
        let start = |rules: &serde_json::Value| {
            MatchSetup::new(kind, rules, None, 1, players.clone()).and_then(Match::new).map(drop)
        };
        let (edges, outside) = rules_at_the_edges(kind);
        start(&edges).unwrap_or_else(|error| panic!("{kind:?}: {edges} is within range: {error}"));
        for (rules, message) in outside {
            let error = start(&rules).expect_err("out of range");
            assert!(error.to_string().ends_with(message), "{kind:?} {rules}: {error}");
        }
    }
}

/// Plays a match, asking `reply` for every request, and returns its replay lines.
fn play(setup: MatchSetup, mut reply: impl FnMut(&Match, usize) -> BotReply) -> Vec<String> {
    let mut game = Match::new(setup).expect("valid setup");
    let limit = game.game().max_steps();
    let mut lines = vec![game.header_line()];
    while !game.is_over() {
        assert!(game.steps() < limit, "{:?} ran past its limit of {limit} steps", game.setup().game);
        let replies = game.to_act().into_iter().map(|seat| (seat, reply(&game, seat))).collect();
        lines.push(game.submit(replies).expect("replies match the requests").to_owned());
    }
    lines.push(game.footer_line());
    lines
}

/// Every seat played by the game's first built-in bot.
fn play_builtins(setup: MatchSetup) -> Vec<String> {
    let kind = setup.game;
    let name = builtin::names(kind)[0];
    let mut bots: Vec<_> = (0..setup.players.len())
        .map(|seat| builtin::create(kind, name, setup.seed, seat).expect("the first builtin exists"))
        .collect();
    play(setup, |game, seat| BotReply::Line(bots[seat].reply(game.game(), seat)))
}

fn verify(lines: &[String]) -> Verification {
    replay::verify(lines).expect("a replay written by the engine reads back")
}

#[test]
fn same_setup_and_replies_give_the_same_replay() {
    for kind in GameKind::ALL {
        let first = play_builtins(setup(kind, 11, serde_json::Value::Null));
        let second = play_builtins(setup(kind, 11, serde_json::Value::Null));
        assert_eq!(replay::digest(first.iter().map(String::as_str)), replay::digest(second.iter().map(String::as_str)));
        assert_eq!(first, second, "{kind}");
    }
}

#[test]
fn every_builtin_bot_finishes_within_the_turn_limit() {
    for kind in GameKind::ALL {
        for name in builtin::names(kind) {
            let setup = setup(kind, 5, serde_json::Value::Null);
            let seats = setup.players.len();
            let mut bots: Vec<_> =
                (0..seats).map(|seat| builtin::create(kind, name, 5, seat).expect("exists")).collect();
            let lines = play(setup, |game, seat| BotReply::Line(bots[seat].reply(game.game(), seat)));
            let check = verify(&lines);
            assert!(check.matches(), "{kind}/{name}");
            assert_eq!(check.outcome.len(), seats);
        }
    }
}

#[test]
fn replays_round_trip_and_tampering_is_found() {
    for kind in GameKind::ALL {
        let lines = play_builtins(setup(kind, 3, serde_json::Value::Null));
        let check = verify(&lines);
        assert!(check.matches(), "{kind}: {check:?}");
        assert_eq!(check.frames as usize, lines.len() - 2);
        assert_eq!(check.sha256, replay::digest(lines.iter().map(String::as_str)));

        // Change the recorded state of one frame: the verifier names that line.
        let mut tampered = lines.clone();
        let target = tampered.len() / 2;
        tampered[target] = tampered[target].replacen("\"state\":{", "\"state\":{\"forged\":1,", 1);
        assert_eq!(verify(&tampered).first_difference, Some(target + 1), "{kind}");

        // A replay cut short is an error, not a match.
        assert!(replay::verify(&lines[..lines.len() - 1]).is_err(), "{kind}");
    }
}

/// What the rules give a seat that always sends `reply`, per game.
fn documented_status(kind: GameKind, reply: &BotReply) -> PlayerStatus {
    match (kind, reply) {
        // Vindinium: anything that is not a direction is `Stay`; a missing reply crashes the hero.
        (GameKind::Vindinium, BotReply::Line(_) | BotReply::Unreadable) => PlayerStatus::Ok,
        // Botwars: a malformed reply disqualifies.
        (GameKind::Botwars, BotReply::Line(_) | BotReply::Unreadable) => PlayerStatus::Disqualified,
        // Ostibot: an invalid reply idles the team for that call; nobody is disqualified.
        (GameKind::Ostibot, BotReply::Line(_) | BotReply::Unreadable) => PlayerStatus::Ok,
        // Maze: an invalid command ends that hero's game with score -10000.
        (GameKind::Maze, BotReply::Line(_) | BotReply::Unreadable) => PlayerStatus::Disqualified,
        (_, BotReply::Timeout) => PlayerStatus::TimedOut,
        (_, BotReply::Crashed) => PlayerStatus::Crashed,
        // Past the replay limit: out of the match as a crashed bot is, with its own status.
        (_, BotReply::OutputLimit) => PlayerStatus::OutputLimit,
    }
}

#[test]
fn malformed_and_missing_replies_get_the_documented_outcome() {
    let bad_replies = [
        BotReply::Line("definitely not a move".into()),
        BotReply::Line("{\"from\":".into()),
        BotReply::Unreadable,
        BotReply::Timeout,
        BotReply::Crashed,
        BotReply::OutputLimit,
    ];
    for kind in GameKind::ALL {
        for bad in &bad_replies {
            let setup = setup(kind, 9, short_rules(kind));
            let mut others: Vec<_> = (0..setup.players.len())
                .map(|seat| builtin::create(kind, "random", 9, seat).expect("exists"))
                .collect();
            let lines = play(setup, |game, seat| {
                if seat == 0 { bad.clone() } else { BotReply::Line(others[seat].reply(game.game(), seat)) }
            });
            let check = verify(&lines);
            assert!(check.matches());
            assert_eq!(check.outcome[0].status, documented_status(kind, bad), "{kind} with {bad:?}");
            if check.outcome[0].status != PlayerStatus::Ok {
                assert!(check.outcome[1..].iter().all(|other| other.status == PlayerStatus::Ok), "{kind}");
            }
        }
    }
}

fn any_reply() -> impl Strategy<Value = BotReply> {
    prop_oneof![
        6 => any::<String>().prop_map(BotReply::Line),
        3 => "(North|south|EAST| west |Stay|\"North\"|\\[\\]|\\[\\{\"from\":[0-9]{1,3},\"to\":[0-9]{1,3}\\}\\]|null|\\{\\}|[0-9.e-]{1,6})"
            .prop_map(BotReply::Line),
        1 => Just(BotReply::Unreadable),
        1 => Just(BotReply::Timeout),
        1 => Just(BotReply::Crashed),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Arbitrary replies never panic, every match ends within its limit, ranks stay in
    /// range, and the replay verifies.
    #[test]
    fn arbitrary_replies_never_break_a_match(
        game in prop::sample::select(GameKind::ALL.to_vec()),
        seed in any::<u64>(),
        replies in prop::collection::vec(any_reply(), 1..64),
    ) {
        let setup = setup(game, seed, short_rules(game));
        let seats = setup.players.len();
        let mut next = replies.iter().cycle();
        let lines = play(setup, |_, _| next.next().cloned().unwrap_or(BotReply::Timeout));
        let check = verify(&lines);
        prop_assert!(check.matches());
        prop_assert_eq!(check.outcome.len(), seats);
        prop_assert!(check.outcome.iter().all(|player| (1..=seats as u32).contains(&player.rank)));
        prop_assert!(check.outcome.iter().any(|player| player.rank == 1));
    }
}

/// Found by fuzzing the replay reader: a header asking for a huge Botwars grid made the
/// engine allocate it (rows × cols bytes) before checking its size.
#[test]
fn a_replay_header_asking_for_a_huge_grid_is_refused_before_anything_is_allocated() {
    let mut lines = play_builtins(setup(GameKind::Botwars, 3, serde_json::Value::Null));
    for (rows, cols) in [("4294967294", "10"), ("100000", "100000"), ("18446744073709551615", "2")] {
        let header = lines[0].replacen("\"rows\":20", &format!("\"rows\":{rows}"), 1);
        lines[0] = header.replacen("\"cols\":20", &format!("\"cols\":{cols}"), 1);
        let error = replay::verify(&lines).expect_err("a grid over 100x100");
        assert!(error.to_string().contains("rows and cols must be 3 to 100"), "{error}");
        lines[0] = lines[0].replacen(&format!("\"rows\":{rows}"), "\"rows\":20", 1).replacen(
            &format!("\"cols\":{cols}"),
            "\"cols\":20",
            1,
        );
    }
    assert!(replay::verify(&lines).expect("the original header reads").matches());
}

/// The replay header holds the state before step 1: what a fresh match of the same
/// setup snapshots (the document frames carry), not the state after step 1.
#[test]
fn every_header_carries_the_state_before_step_one() {
    for kind in GameKind::ALL {
        let setup = setup(kind, 7, serde_json::Value::Null);
        let fresh = Match::new(setup.clone()).expect("valid setup");
        let lines = play_builtins(setup);
        let header: serde_json::Value = serde_json::from_str(&lines[0]).expect("the header is JSON");
        assert_eq!(header["format"], replay::FORMAT_VERSION, "{kind}");
        let snapshot = fresh.game().snapshot();
        let expected: serde_json::Value = serde_json::from_str(snapshot.get()).expect("a snapshot is JSON");
        assert_eq!(header["state"], expected, "{kind}");
        // As the engine writes it, byte for byte, and last, as the format says.
        assert!(lines[0].ends_with(&format!(",\"state\":{}}}", snapshot.get())), "{kind}: {}", lines[0]);
        let first: serde_json::Value = serde_json::from_str(&lines[1]).expect("a frame is JSON");
        assert_ne!(header["state"], first["state"], "{kind}: the header holds the state after step 1");
    }
}

/// A replay line's fields as written, by name.
fn fields(line: &str) -> std::collections::HashMap<String, Box<serde_json::value::RawValue>> {
    serde_json::from_str(line).expect("a replay line is a JSON object")
}

/// A format 2 header up to its state, the last field: `{"type":...,"setup":{...}`.
fn before_state(header: &str) -> &str {
    let state = format!(",\"state\":{}}}", fields(header)["state"].get());
    header.strip_suffix(&state).expect("the state is the header's last field")
}

/// `lines` of a format 2 replay as format 1 wrote them: the header without its state.
fn as_format_1(lines: &[String]) -> Vec<String> {
    let setup = before_state(&lines[0]).strip_prefix("{\"type\":\"header\",\"format\":2,").expect("format 2");
    let mut old = lines.to_vec();
    old[0] = format!("{{\"type\":\"header\",\"format\":1,{setup}}}");
    old
}

/// A format 1 replay kept from before headers carried the state (the fuzz corpus's
/// seeds, written by the engine then), per game.
fn stored_format_1_replay(kind: GameKind) -> &'static str {
    match kind {
        GameKind::Vindinium => include_str!("../../fuzz/corpus/replay/vindinium.jsonl"),
        GameKind::Botwars => include_str!("../../fuzz/corpus/replay/botwars.jsonl"),
        GameKind::Ostibot => include_str!("../../fuzz/corpus/replay/ostibot.jsonl"),
        GameKind::Maze => include_str!("../../fuzz/corpus/replay/maze.jsonl"),
    }
}

/// Format 1 replays (in object stores, in the fuzz corpus) still verify byte for byte,
/// their header re-simulated as format 1, and give the same observations.
#[test]
fn format_1_replays_still_verify() {
    for kind in GameKind::ALL {
        let stored: Vec<&str> = stored_format_1_replay(kind).lines().collect();
        assert!(stored[0].starts_with("{\"type\":\"header\",\"format\":1,"), "{kind}: {}", stored[0]);
        let check = replay::verify(&stored).expect("a stored format 1 replay reads");
        assert!(check.matches(), "{kind}: {check:?}");
        assert_eq!(check.sha256, replay::digest(stored.iter().copied()), "{kind}");

        let lines = play_builtins(setup(kind, 3, serde_json::Value::Null));
        let old = as_format_1(&lines);
        let check = verify(&old);
        assert!(check.matches(), "{kind}: {check:?}");
        assert_eq!(check.sha256, replay::digest(old.iter().map(String::as_str)), "{kind}");
        assert_eq!(check.outcome, verify(&lines).outcome, "{kind}");
        let observed = replay::observations(&old, 0).expect("format 1 re-simulates");
        assert_eq!(observed, replay::observations(&lines, 0).expect("format 2 re-simulates"), "{kind}");
    }
}

/// A replay whose frames carry clock readings verifies as the same play, with the same
/// identity; the readings read back, and set aside they leave the frame as written.
/// A frame changed beside them still fails.
#[test]
fn clock_readings_are_set_aside_by_verification() {
    for kind in GameKind::ALL {
        let lines = play_builtins(setup(kind, 3, serde_json::Value::Null));
        let timed: Vec<String> = lines
            .iter()
            .enumerate()
            .map(|(index, line)| {
                if !line.starts_with("{\"type\":\"frame\"") {
                    return line.clone();
                }
                let replies = serde_json::from_str::<serde_json::Value>(line).expect("json")["replies"]
                    .as_array()
                    .expect("replies")
                    .len();
                let times: Vec<Option<ReplyTime>> = (0..replies)
                    .map(|seat| {
                        (seat % 3 != 2)
                            .then_some(ReplyTime { wall_us: index as u64, cpu_us: (seat % 3 == 0).then_some(7) })
                    })
                    .collect();
                let mut out = String::new();
                replay::write_timed(&mut out, line, &times);
                assert_eq!(replay::times_of(&out), times, "{kind}");
                assert_eq!(replay::untimed(&out), line.as_str(), "{kind}");
                out
            })
            .collect();
        assert_ne!(timed, lines, "{kind}");
        let check = verify(&timed);
        assert!(check.matches(), "{kind}: {check:?}");
        assert_eq!(check.sha256, verify(&lines).sha256, "{kind}");
        assert_eq!(replay::digest(timed.iter().map(String::as_str)), check.sha256, "{kind}");
        assert_eq!(
            replay::observations(&timed, 0).expect("re-simulates"),
            replay::observations(&lines, 0).expect("re-simulates"),
            "{kind}"
        );

        let mut forged = timed.clone();
        forged[1] = forged[1].replacen("\"step\":", "\"step\":9", 1);
        assert_eq!(verify(&forged).first_difference, Some(2), "{kind}");
    }
}

/// A header whose state is not the one before step 1 fails verification at line 1, as
/// does a state that does not fit the header's format.
#[test]
fn a_header_with_another_state_fails_verification() {
    for kind in GameKind::ALL {
        let lines = play_builtins(setup(kind, 3, serde_json::Value::Null));

        let mut forged = lines.clone();
        forged[0] = forged[0].replacen("\"state\":{", "\"state\":{\"forged\":1,", 1);
        assert_ne!(forged[0], lines[0], "{kind}");
        assert_eq!(verify(&forged).first_difference, Some(1), "{kind}");
        assert!(matches!(replay::observations(&forged, 0), Err(ObservationError::Differs { line: 1 })), "{kind}");

        // The state after step 1 where the state before it belongs.
        let mut later = lines.clone();
        later[0] = format!("{},\"state\":{}}}", before_state(&lines[0]), fields(&lines[1])["state"].get());
        assert_eq!(verify(&later).first_difference, Some(1), "{kind}");

        let old = as_format_1(&lines);
        let mut stateless = old.clone();
        stateless[0] = old[0].replacen("\"format\":1,", "\"format\":2,", 1);
        let mut stated = lines.clone();
        stated[0] = lines[0].replacen("\"format\":2,", "\"format\":1,", 1);
        let mut unknown = lines.clone();
        unknown[0] = lines[0].replacen("\"format\":2,", "\"format\":3,", 1);
        for (what, replay) in
            [("no state in format 2", stateless), ("a state in format 1", stated), ("format 3", unknown)]
        {
            let error = replay::verify(&replay).expect_err(what);
            assert!(matches!(error, ReplayError::Malformed { line: 1, .. }), "{kind}, {what}: {error}");
        }
    }
}
