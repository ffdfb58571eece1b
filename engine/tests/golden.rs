//! The engine's output pinned byte for byte: for a fixed set of matches (every built-in
//! bot of every game, mixed seats, a seat that writes malformed replies, several
//! seeds), the digest of every replay line and of every observation each asked seat
//! was sent must equal the one recorded in `golden/digests.txt`.
//!
//! A change that is meant to be a pure refactor or a speed-up (the observations and
//! replays a process bot sees unchanged) must leave this test green. A change to the
//! rules or to the wire format changes digests on purpose: record the new ones with
//! `FARM_BLESS_GOLDEN=1 cargo test -p farm-engine --test golden` and say why in the
//! commit.

use std::fmt::Write as _;

use farm_engine::{AnyGame, BotReply, GameKind, Match, MatchSetup, builtin};
use sha2::{Digest, Sha256};

/// The recorded digests, one line per match: `name sha256`.
const RECORDED: &str = include_str!("golden/digests.txt");

/// Replies a bot outside the engine may write that are not a valid move: the parsers'
/// other paths. Cycled through by the malformed seat.
const MALFORMED: &[&str] = &[
    "",
    "garbage",
    "{\"not\": \"a move\"}",
    "[1, 2, 3]",
    "North\u{0}",
    "  Stay  ",
    "1e400",
    "{\"from\":0,\"to\":1}",
    "[{\"from\":\"3\",\"to\":4}]",
    "move 1 1\n",
    "\u{feff}West",
];

/// How the seats of one pinned match are played.
#[derive(Clone, Copy)]
enum Seats {
    /// Every seat by the built-in bot of this index in [`builtin::names`].
    All(usize),
    /// Seat `i` by built-in bot `i` modulo the game's number of bots.
    Mixed,
    /// Seat 0 cycles through [`MALFORMED`] (or times out every seventh step, or
    /// crashes at step 40); the others are [`Seats::Mixed`].
    Malformed,
}

/// One pinned match: its name in the digest file, its setup and how its seats play.
struct Pinned {
    name: String,
    setup: MatchSetup,
    seats: Seats,
}

/// Every pinned match. Default rules, except that the longest games are shortened so
/// that the test stays quick in a debug build.
fn pinned() -> Vec<Pinned> {
    let mut all = Vec::new();
    for game in GameKind::ALL {
        let bots = builtin::names(game);
        let seat_counts = {
            let range = AnyGame::seats(game);
            let mut counts = vec![*range.start()];
            if range.contains(&2) && *range.start() != 2 {
                counts.push(2);
            }
            counts
        };
        for seed in [1_u64, 7, 20_240_601] {
            for &seats in &seat_counts {
                let mut plans: Vec<(String, Seats)> =
                    bots.iter().enumerate().map(|(index, bot)| ((*bot).to_owned(), Seats::All(index))).collect();
                plans.push(("mixed".to_owned(), Seats::Mixed));
                plans.push(("malformed".to_owned(), Seats::Malformed));
                for (label, plan) in plans {
                    let players = (0..seats).map(|seat| format!("p{seat}")).collect();
                    let setup = MatchSetup::new(game, &rules(game), None, seed, players).expect("a valid setup");
                    let name = format!("{}/{label}/seats-{seats}/seed-{seed}", game.name());
                    all.push(Pinned { name, setup, seats: plan });
                }
            }
        }
    }
    all
}

/// The rules of the pinned matches of `game`.
fn rules(game: GameKind) -> serde_json::Value {
    match game {
        // Ostibot's default rounds are long; two short rounds still reach corruption.
        GameKind::Ostibot => serde_json::json!({ "maxTurnsPerRound": 40, "corruptionStartAt": 10 }),
        GameKind::Vindinium | GameKind::Botwars | GameKind::Maze => serde_json::Value::Null,
    }
}

/// Plays `pinned` and returns the digest of its replay lines and of every observation
/// sent, in order.
fn digest(pinned: &Pinned) -> String {
    let setup = &pinned.setup;
    let game = setup.game;
    let names = builtin::names(game);
    let mut bots: Vec<_> = (0..setup.players.len())
        .map(|seat| {
            let name = match pinned.seats {
                Seats::All(index) => names[index],
                Seats::Mixed | Seats::Malformed => names[seat % names.len()],
            };
            builtin::create(game, name, setup.seed, seat).expect("a built-in bot of the game")
        })
        .collect();
    let mut hasher = Sha256::new();
    let mut game_match = Match::new(setup.clone()).expect("a valid setup");
    hasher.update(game_match.header_line());
    hasher.update(b"\n");
    while !game_match.is_over() {
        let step = game_match.steps();
        let mut replies = Vec::new();
        for seat in game_match.to_act() {
            let observation = game_match.observation(seat);
            hasher.update(format!("obs {seat} {}\n", observation.len()));
            hasher.update(observation);
            let reply = match pinned.seats {
                Seats::Malformed if seat == 0 && step >= 40 => BotReply::Crashed,
                Seats::Malformed if seat == 0 && step % 7 == 6 => BotReply::Timeout,
                Seats::Malformed if seat == 0 => BotReply::Line(MALFORMED[step as usize % MALFORMED.len()].to_owned()),
                _ => BotReply::Line(bots[seat].reply(game_match.game(), seat)),
            };
            replies.push((seat, reply));
        }
        let line = game_match.submit(replies).expect("one reply per seat asked");
        hasher.update(line);
        hasher.update(b"\n");
    }
    let footer = game_match.footer_line();
    hasher.update(&footer);
    let lines = format!("{} steps", game_match.steps());
    hasher.update(lines);
    let mut hex = String::with_capacity(64);
    for byte in hasher.finalize() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

#[test]
fn every_pinned_match_gives_its_recorded_replay_and_observations() {
    let computed: Vec<(String, String)> = pinned().iter().map(|match_| (match_.name.clone(), digest(match_))).collect();
    if std::env::var_os("FARM_BLESS_GOLDEN").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/digests.txt");
        let text: String = computed.iter().map(|(name, digest)| format!("{name} {digest}\n")).collect();
        std::fs::write(path, text).expect("the digest file is writable");
        return;
    }
    let recorded: Vec<(&str, &str)> = RECORDED
        .lines()
        .map(|line| line.split_once(' ').unwrap_or_else(|| panic!("a digest line is `name sha256`: {line:?}")))
        .collect();
    assert_eq!(
        recorded.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        computed.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>(),
        "the pinned matches are the recorded ones"
    );
    let changed: Vec<&str> = computed
        .iter()
        .zip(&recorded)
        .filter(|((_, now), (_, then))| now != then)
        .map(|((name, _), _)| name.as_str())
        .collect();
    assert!(changed.is_empty(), "{} of {} pinned matches changed: {changed:#?}", changed.len(), recorded.len());
}
