//! Fuzz targets: every parser of input from outside the farm, each a function of bytes
//! that panics only on a defect. [`TARGETS`] lists them; `farm-fuzz` (src/main.rs)
//! feeds them mutated inputs, starting from the corpora in `fuzz/corpus/TARGET/`.
//!
//! A target returns the *class* of what the input gave (which error, which kind of
//! success): an input whose class is new joins the corpus while fuzzing, the only
//! guidance a fuzzer without coverage instrumentation has (the stable toolchain has
//! none). Besides "no panic", targets check what must hold for every input: a match
//! fed any replies writes a replay that re-simulates byte for byte, an envelope that
//! reads writes what reads again.
#![deny(missing_docs)]

pub mod mutate;

use farm_coordinator::tournament::{TournamentFile, TournamentLimits};
use farm_engine::replay;
use farm_engine::wire::reply_from_bytes;
use farm_engine::{AnyGame, BotReply, GameKind, Match, MatchSetup, builtin};
use farm_proto::{BotSpec, JobEnvelope, ResultEnvelope};

/// One fuzz target.
pub struct Target {
    /// Its name: the corpus directory and the command-line argument.
    pub name: &'static str,
    /// What it reads, for `--help` and reports.
    pub about: &'static str,
    /// Runs one input; panics on a defect; returns the input's class.
    pub run: fn(&[u8]) -> String,
    /// Tokens the mutator inserts: the words of the format.
    pub dictionary: &'static [&'static str],
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "reply-bytes",
        about: "a bot's raw reply, as read from a stdio line or an HTTP body",
        run: reply_bytes,
        dictionary: &["\r", "\n", "\u{0}", "\u{feff}", "\u{fffd}"],
    },
    Target {
        name: "reply-vindinium",
        about: "Vindinium replies, one per line, played in a short match",
        run: |data| replies(GameKind::Vindinium, data),
        dictionary: &["North", "South", "East", "West", "Stay", "north", " ", "\t", "\u{0}", "\u{a0}", "\u{3000}"],
    },
    Target {
        name: "reply-botwars",
        about: "Botwars replies, one per line, played in a short match",
        run: |data| replies(GameKind::Botwars, data),
        dictionary: &[
            "[]",
            "[{",
            "}]",
            "\"from\":",
            "\"to\":",
            ",",
            "1e400",
            "-1e400",
            "1e-400",
            "-0",
            "0.5",
            "Infinity",
            "NaN",
            "null",
            "true",
            "\"1\"",
            "99999999999999999999",
            "{}",
        ],
    },
    Target {
        name: "reply-ostibot",
        about: "Ostibot replies, one per line, played in a short match",
        run: |data| replies(GameKind::Ostibot, data),
        dictionary: &[
            "{",
            "}",
            "[",
            "]",
            "\"seq\":",
            "\"units\":",
            "\"moves\":",
            "\"buy\":",
            "\"call\":",
            "null",
            "1e400",
            "-1",
            "\"",
            ",",
            ":",
        ],
    },
    Target {
        name: "reply-maze",
        about: "Maze commands, one per line, played in a short match",
        run: |data| replies(GameKind::Maze, data),
        dictionary: &[
            "MOVE ",
            "TURN ",
            "WAIT",
            "LOOK",
            " ",
            "\t",
            "\r",
            "٣",
            "३",
            "３",
            "꯹",
            "𝟑",
            "-",
            "+",
            "2147483648",
            "-2147483648",
        ],
    },
    Target {
        name: "map-vindinium",
        about: "a Vindinium map's text",
        run: |data| map(GameKind::Vindinium, data),
        dictionary: &["##", "  ", "@1", "@2", "@3", "@4", "$-", "[]", "\n"],
    },
    Target {
        name: "map-ostibot",
        about: "an Ostibot map's text",
        run: |data| map(GameKind::Ostibot, data),
        dictionary: &["#", ".", "1", "2", "3", "4", "\n", " "],
    },
    Target {
        name: "map-maze",
        about: "a Maze map's text",
        run: |data| map(GameKind::Maze, data),
        dictionary: &["#", ".", "S", "E", "\n", " "],
    },
    Target {
        name: "rules",
        about: "rule overrides (JSON) for the game named by the first byte",
        run: rules,
        dictionary: &[
            "{",
            "}",
            "\"rows\":",
            "\"cols\":",
            "\"energyEvery\":",
            "\"maxTurns\":",
            "\"moveTimeoutMs\":",
            "\"replyTimeoutMs\":",
            "\"timeout\":",
            "\"nbRounds\":",
            "0",
            "-1",
            "1e400",
            "100001",
            "4294967296",
            "null",
            "\"10\"",
        ],
    },
    Target {
        name: "tournament-toml",
        about: "a tournament file, as `farm-coordinator run FILE` and the API read TOML",
        run: |data| tournament(data, TournamentFile::from_toml),
        dictionary: &[
            "name = ",
            "game = ",
            "format = ",
            "\"round-robin\"",
            "\"gauntlet\"",
            "[[bots]]",
            "builtin = ",
            "command = ",
            "image = ",
            "games_per_pairing = ",
            "max_matches = ",
            "seed = ",
            "[rules]",
            "[[maps]]",
            "\n",
            "\"",
            "18446744073709551615",
            "-1",
        ],
    },
    Target {
        name: "tournament-json",
        about: "a tournament file as the API reads JSON",
        run: |data| {
            tournament(data, |text| {
                serde_json::from_str(text)
                    .map_err(|error| farm_coordinator::tournament::TournamentError::Syntax(error.to_string()))
            })
        },
        dictionary: &[
            "{",
            "}",
            "\"name\":",
            "\"game\":",
            "\"format\":",
            "\"bots\":",
            "\"builtin\":",
            "\"games_per_pairing\":",
            "\"max_matches\":",
            "[",
            "]",
            ",",
            "18446744073709551615",
        ],
    },
    Target {
        name: "replay",
        about: "a replay file, re-simulated (replay verify, the observations API)",
        run: replay_file,
        dictionary: &[
            "{\"type\":\"frame\"",
            "{\"type\":\"footer\"",
            "\"replies\":",
            "\"line\":",
            "\"timeout\"",
            "\n",
            "\"format\":1,",
            "\"format\":2,",
            ",\"state\":",
        ],
    },
    Target {
        name: "job-envelope",
        about: "a job message as workers read it from farm.jobs",
        run: |data| envelope::<JobEnvelope>(data),
        dictionary: &["\"schema\":", "\"job\":", "\"bots\":", "\"limits\":", "\"isolation\":", "null", "{", "}"],
    },
    Target {
        name: "result-envelope",
        about: "a result message as the coordinator reads it from farm.results",
        run: |data| envelope::<ResultEnvelope>(data),
        dictionary: &["\"schema\":", "\"result\":", "\"completed\"", "\"failed\"", "\"players\":", "null", "{", "}"],
    },
    Target {
        name: "bot-spec",
        about: "a bot given as builtin:NAME, cmd[+http]:COMMAND or image[+http]:NAME [ARG...]",
        run: |data| match std::str::from_utf8(data).map(str::parse::<BotSpec>) {
            Ok(Ok(spec)) => {
                // What parses is what a worker accepts.
                assert_eq!(spec.check(), Ok(()), "{spec:?}");
                let scheme = spec.launch.to_string().split(':').next().unwrap_or("").to_owned();
                format!("ok {scheme} args {}", spec.args.len().min(3))
            }
            Ok(Err(error)) => class(&error.to_string()),
            Err(_) => "not utf-8".to_owned(),
        },
        dictionary: &["builtin:", "cmd:", "image:", "image+http:", "cmd+http:", "random", " ", ":"],
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|target| target.name == name)
}

/// The words of an error message's head (up to its first colon, quote or line end),
/// without numbers or punctuation, at most 48 characters: one class per kind of error,
/// not per input (messages quote the input, and TOML's show its line).
fn class(message: &str) -> String {
    let head = message.split([':', '\n', '"', '`', '\'']).next().unwrap_or_default();
    let words: String = head.chars().filter(|c| c.is_ascii_alphabetic() || *c == ' ').collect();
    let mut class = words.split_whitespace().collect::<Vec<_>>().join(" ");
    class.truncate(48);
    class
}

fn reply_bytes(data: &[u8]) -> String {
    match reply_from_bytes(data) {
        BotReply::Line(text) => {
            assert!(text.len() <= data.len() && !text.ends_with(['\r', '\n']), "{text:?} from {data:?}");
            "line".to_owned()
        }
        other => format!("{other:?}"),
    }
}

/// The setup the reply targets play: short, so that one input is one match.
fn short_setup(game: GameKind) -> MatchSetup {
    let rules = match game {
        GameKind::Ostibot => serde_json::json!({ "maxTurnsPerRound": 20, "nbRounds": 1 }),
        _ => serde_json::json!({ "maxTurns": 40 }),
    };
    let seats = *AnyGame::seats(game).start();
    let players = (0..seats.max(2)).map(|seat| format!("p{seat}")).collect();
    MatchSetup::new(game, &rules, None, 7, players).expect("the short setup is valid")
}

/// Plays a short match in which seat 0 sends the input's lines in turn (the others
/// are the game's first built-in bot), then checks that its replay re-simulates.
fn replies(game: GameKind, data: &[u8]) -> String {
    let setup = short_setup(game);
    let seats = setup.players.len();
    let mut bots: Vec<_> =
        (0..seats).map(|seat| builtin::create(game, builtin::names(game)[0], 7, seat).expect("a builtin")).collect();
    let fuzzed: Vec<BotReply> = data.split(|&byte| byte == b'\n').map(reply_from_bytes).collect();
    let mut game_match = Match::new(setup).expect("the short setup plays");
    let mut lines = vec![game_match.header_line()];
    let mut next = 0;
    while !game_match.is_over() {
        let replies = game_match
            .to_act()
            .into_iter()
            .map(|seat| {
                let reply = if seat == 0 {
                    next += 1;
                    fuzzed[(next - 1) % fuzzed.len()].clone()
                } else {
                    BotReply::Line(bots[seat].reply(game_match.game(), seat))
                };
                (seat, reply)
            })
            .collect();
        lines.push(game_match.submit(replies).expect("one reply per seat asked").to_owned());
    }
    lines.push(game_match.footer_line());
    let check = replay::verify(&lines).expect("the engine's own replay reads");
    assert!(check.matches(), "the replay differs from its re-simulation at line {:?}", check.first_difference);
    format!("{:?}", game_match.outcome()[0].status)
}

fn map(game: GameKind, data: &[u8]) -> String {
    let Ok(text) = std::str::from_utf8(data) else { return "not utf-8".to_owned() };
    let seats = *AnyGame::seats(game).start();
    let players = (0..seats.max(2)).map(|seat| format!("p{seat}")).collect();
    let rules = serde_json::json!({ "maxTurns": 4 });
    let rules = if game == GameKind::Ostibot { serde_json::Value::Null } else { rules };
    match MatchSetup::new(game, &rules, Some(text.to_owned()), 1, players).and_then(Match::new) {
        Ok(game_match) => {
            // The first step's observations are built from the map.
            let requests = game_match.requests();
            format!("ok {}", requests.len())
        }
        Err(error) => class(&error.to_string()),
    }
}

fn rules(data: &[u8]) -> String {
    let Some((&first, rest)) = data.split_first() else { return "empty".to_owned() };
    let game = GameKind::ALL[usize::from(first) % GameKind::ALL.len()];
    let Ok(overrides) = serde_json::from_slice::<serde_json::Value>(rest) else { return "not json".to_owned() };
    let seats = *AnyGame::seats(game).start();
    let players = (0..seats.max(2)).map(|seat| format!("p{seat}")).collect();
    match MatchSetup::new(game, &overrides, None, 1, players).and_then(Match::new) {
        Ok(game_match) => format!("ok {game} {}", game_match.game().max_steps().min(1_000_000) / 1000),
        Err(error) => format!("{game} {}", class(&error.to_string())),
    }
}

fn tournament(
    data: &[u8],
    parse: fn(&str) -> Result<TournamentFile, farm_coordinator::tournament::TournamentError>,
) -> String {
    let Ok(text) = std::str::from_utf8(data) else { return "not utf-8".to_owned() };
    // A small ceiling: a schedule is built whole, and one input must stay quick.
    let limits = TournamentLimits { max_jobs: 2_000 };
    match parse(text).and_then(|file| file.resolve(None, limits)) {
        Ok(tournament) => format!("ok {}", tournament.game),
        Err(error) => class(&error.to_string()),
    }
}

fn replay_file(data: &[u8]) -> String {
    let Ok(text) = std::str::from_utf8(data) else { return "not utf-8".to_owned() };
    let verified = match replay::verify(text.lines()) {
        Ok(check) => format!("verified {}", check.matches()),
        Err(error) => class(&error.to_string()),
    };
    // The observations API's reading of the same file agrees with verify's.
    let observed = replay::observations(text.lines(), 0);
    if verified == "verified true" {
        assert!(observed.is_ok(), "verify accepts what observations refuses: {observed:?}");
    }
    verified
}

/// Reads an envelope; one that reads must write, and what it writes must read (the
/// values are not compared: JSON numbers may move by an ulp on the way).
fn envelope<T>(data: &[u8]) -> String
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    match serde_json::from_slice::<T>(data) {
        Ok(value) => {
            let written = serde_json::to_vec(&value).expect("an envelope that reads writes");
            if let Err(error) = serde_json::from_slice::<T>(&written) {
                panic!("what an envelope writes does not read: {error}: {}", String::from_utf8_lossy(&written));
            }
            "ok".to_owned()
        }
        Err(error) => class(&error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_corpus_exists() {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        for (index, target) in TARGETS.iter().enumerate() {
            assert!(TARGETS[..index].iter().all(|other| other.name != target.name), "{}", target.name);
            let dir = corpus.join(target.name);
            let seeds = std::fs::read_dir(&dir).map(Iterator::count).unwrap_or(0);
            assert!(seeds > 0, "{} has no seed inputs in {}", target.name, dir.display());
        }
    }

    #[test]
    fn every_seed_input_runs_clean() {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        for target in TARGETS {
            for entry in std::fs::read_dir(corpus.join(target.name)).expect("corpus").flatten() {
                let input = std::fs::read(entry.path()).expect("seed");
                (target.run)(&input);
            }
        }
    }

    #[test]
    fn error_classes_drop_numbers_and_quoted_parts() {
        assert_eq!(class("EOF while parsing a value at line 3 column 7"), "EOF while parsing a value at line column");
        assert_eq!(class("unknown field `x\"y`, expected one of"), "unknown field");
        assert_eq!(class("TOML parse error at line 1, column 3\n  |\n1 | name = x"), "TOML parse error at line column");
    }
}
