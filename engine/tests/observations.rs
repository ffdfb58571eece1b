//! `replay::observations`: re-simulating a replay gives back exactly what each seat
//! was sent while the match was played.

use farm_engine::replay::{self, ObservationError, ReplayError, StepObservation};
use farm_engine::{AnyGame, BotReply, GameKind, Match, MatchSetup, builtin};

/// Two seats (Maze and Vindinium take more or fewer, Ostibot's default map is for two),
/// short matches.
fn setup(kind: GameKind) -> MatchSetup {
    let seats = (*AnyGame::seats(kind).start()).max(2);
    let players = (0..seats).map(|seat| format!("p{seat}")).collect();
    let rules = match kind {
        GameKind::Ostibot => serde_json::json!({ "maxTurnsPerRound": 12, "corruptionStartAt": 4 }),
        GameKind::Vindinium => serde_json::json!({ "maxTurns": 40 }),
        GameKind::Botwars | GameKind::Maze => serde_json::json!({ "maxTurns": 30 }),
    };
    MatchSetup::new(kind, &rules, None, 17, players).expect("a valid setup")
}

/// Plays a match with the game's first built-in bot in every seat; returns the replay
/// lines and, per seat, what that seat was sent at each step (`None`: not asked).
fn play(setup: MatchSetup) -> (Vec<String>, Vec<Vec<Option<String>>>) {
    let kind = setup.game;
    let seats = setup.players.len();
    let mut bots: Vec<_> = (0..seats)
        .map(|seat| builtin::create(kind, builtin::names(kind)[0], setup.seed, seat).expect("a builtin"))
        .collect();
    let mut game = Match::new(setup).expect("valid setup");
    let mut lines = vec![game.header_line()];
    let mut sent: Vec<Vec<Option<String>>> = vec![Vec::new(); seats];
    while !game.is_over() {
        let requests = game.requests();
        for (seat, steps) in sent.iter_mut().enumerate() {
            steps.push(requests.iter().find(|(asked, _)| *asked == seat).map(|(_, text)| text.clone()));
        }
        let replies =
            requests.into_iter().map(|(seat, _)| (seat, BotReply::Line(bots[seat].reply(game.game(), seat)))).collect();
        lines.push(game.submit(replies).expect("replies match the requests").to_owned());
    }
    lines.push(game.footer_line());
    (lines, sent)
}

#[test]
fn every_seat_gets_back_what_it_was_sent_at_each_step() {
    for kind in GameKind::ALL {
        let (lines, sent) = play(setup(kind));
        for (seat, expected) in sent.iter().enumerate() {
            let observed = replay::observations(&lines, seat).expect("the replay re-simulates");
            assert_eq!(observed.len(), lines.len() - 2, "{kind}: one per frame");
            for (index, step) in observed.iter().enumerate() {
                assert_eq!((step.index, step.step), (index as u64, index as u64 + 1), "{kind}");
            }
            let texts: Vec<Option<String>> = observed.into_iter().map(|step| step.observation).collect();
            assert_eq!(&texts, expected, "{kind} seat {seat}");
            assert!(texts.iter().any(Option::is_some), "{kind} seat {seat} was asked at least once");
        }
    }
}

#[test]
fn ostibot_seats_not_asked_at_a_step_get_none() {
    // Sequential decisions: after the shop step, one team is asked per step.
    let (lines, _) = play(setup(GameKind::Ostibot));
    let first = replay::observations(&lines, 0).expect("re-simulates");
    let second = replay::observations(&lines, 1).expect("re-simulates");
    assert!(first[0].observation.as_deref().is_some_and(|text| text.starts_with(r#"{"call":"shop","seq":1,"#)));
    assert!(second[0].observation.is_some(), "both teams shop at step 1");
    assert!(first[1].observation.as_deref().is_some_and(|text| text.starts_with(r#"{"call":"play","seq":2,"#)));
    assert_eq!(second[1].observation, None, "team 2 plays after team 1");
    assert!(second[2].observation.is_some());
}

#[test]
fn a_seat_the_match_does_not_have_is_an_error() {
    let (lines, _) = play(setup(GameKind::Botwars));
    let error = replay::observations(&lines, 2).expect_err("two seats only");
    assert!(matches!(error, ObservationError::NoSeat { seat: 2, seats: 2 }), "{error:?}");
}

#[test]
fn a_replay_that_does_not_re_simulate_gives_no_observations() {
    let (mut lines, _) = play(setup(GameKind::Maze));
    let target = lines.len() / 2;
    lines[target] = lines[target].replacen("\"state\":{", "\"state\":{\"forged\":1,", 1);
    let error = replay::observations(&lines, 0).expect_err("tampered");
    assert!(matches!(error, ObservationError::Differs { line } if line == target + 1), "{error:?}");

    let unreadable: [&str; 0] = [];
    let error = replay::observations(unreadable, 0).expect_err("empty");
    assert!(matches!(error, ObservationError::Replay(ReplayError::Empty)), "{error:?}");
    let (lines, _) = play(setup(GameKind::Maze));
    let error = replay::observations(&lines[..lines.len() - 1], 0).expect_err("no footer");
    assert!(matches!(error, ObservationError::Replay(ReplayError::Malformed { .. })), "{error:?}");
}

#[test]
fn observations_serialize_as_the_api_lines() {
    let line = |observation: Option<&str>| {
        serde_json::to_string(&StepObservation { index: 4, step: 5, observation: observation.map(str::to_owned) })
            .expect("serializes")
    };
    assert_eq!(line(Some("1 2\n3")), r#"{"index":4,"step":5,"observation":"1 2\n3"}"#);
    assert_eq!(line(None), r#"{"index":4,"step":5,"observation":null}"#);
}
