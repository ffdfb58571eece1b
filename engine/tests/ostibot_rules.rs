//! Scenario tests of the Ostibot rules (`shared/games/ostibot.md`): one small map per
//! mechanic, driven through the same `Game` interface and reply text as a real match.

use farm_engine::ostibot::{
    Adventurer, DecisionMode, ObjectKind, Ostibot, OstibotMap, OstibotRules, Phase, Terrain, vision,
};
use farm_engine::{AnyGame, BotReply, Game, GameKind, GameRng, PlayerStatus, Pos, SetupError, builtin};
use proptest::prelude::*;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn players(n: usize) -> Vec<String> {
    (1..=n).map(|k| format!("team{k}")).collect()
}

/// Rules with the corruption far away, so that a scenario sees only its mechanic.
fn calm() -> OstibotRules {
    OstibotRules { corruption_start_at: 150, ..OstibotRules::default() }
}

fn new_game(map: &str, rules: OstibotRules) -> Ostibot {
    let teams = OstibotMap::parse(map).expect("a valid test map").teams();
    Ostibot::new(rules, Some(map), &players(teams), 1).expect("a valid test setup")
}

fn rng() -> GameRng {
    GameRng::new(1, GameRng::RULES)
}

/// Plays one step with these replies (seat, line).
fn step(game: &mut Ostibot, replies: &[(usize, &str)]) {
    let actions =
        replies.iter().map(|(seat, line)| (*seat, game.parse_reply(*seat, &BotReply::Line((*line).into())))).collect();
    game.apply(actions, &mut rng());
}

/// Plays the shop step: team k's reply is `replies[k − 1]`, `{}` when missing.
fn shop(game: &mut Ostibot, replies: &[&str]) {
    assert_eq!(game.phase(), Phase::Shop);
    let seats = game.to_act();
    let lines: Vec<(usize, &str)> =
        seats.iter().map(|&seat| (seat, replies.get(seat).copied().unwrap_or("{}"))).collect();
    step(game, &lines);
}

/// A match past its first shop step, where nobody bought anything.
fn start(map: &str, rules: OstibotRules) -> Ostibot {
    let mut game = new_game(map, rules);
    shop(&mut game, &[]);
    game
}

/// Plays one whole turn: every team asked gives `replies[team − 1]` (`{}` when
/// missing). Returns the log lines of all its steps.
fn turn(game: &mut Ostibot, replies: &[&str]) -> Vec<String> {
    let (round, at) = (game.round(), game.turn());
    let mut log = Vec::new();
    while game.round() == round && game.turn() == at && matches!(game.phase(), Phase::Turn { .. }) {
        let seats = game.to_act();
        assert!(!seats.is_empty(), "a turn always asks somebody");
        let lines: Vec<(usize, &str)> =
            seats.iter().map(|&seat| (seat, replies.get(seat).copied().unwrap_or("{}"))).collect();
        step(game, &lines);
        log.extend(game.log().iter().cloned());
    }
    log
}

/// A play reply moving each adventurer.
fn moves(list: &[(&str, &str)]) -> String {
    let actions: Vec<Value> =
        list.iter().map(|(id, dir)| json!({ "adventurerId": id, "move": { "direction": dir } })).collect();
    json!({ "actions": actions }).to_string()
}

fn go(id: &str, dir: &str) -> String {
    moves(&[(id, dir)])
}

fn use_item(id: &str, item: &str) -> String {
    json!({ "actions": [{ "adventurerId": id, "use": { "itemId": item } }] }).to_string()
}

fn buy(id: &str, item: &str, equip: bool) -> Value {
    json!({ "buy": { "adventurerId": id, "itemType": item, "equip": equip } })
}

fn shop_reply(actions: &[Value]) -> String {
    json!({ "actions": actions }).to_string()
}

fn adventurer(game: &Ostibot, id: u32) -> &Adventurer {
    game.world().adventurer(id).unwrap_or_else(|| panic!("a{id} is on the map"))
}

fn pos(game: &Ostibot, id: u32) -> (i32, i32) {
    let at = adventurer(game, id).pos;
    (at.x, at.y)
}

fn hp(game: &Ostibot, id: u32) -> i64 {
    adventurer(game, id).hp
}

fn item_types(game: &Ostibot, items: &[farm_engine::ostibot::Item]) -> Vec<String> {
    items.iter().map(|item| game.world().item_type(*item).to_owned()).collect()
}

fn equipped(game: &Ostibot, id: u32) -> Vec<Option<String>> {
    adventurer(game, id).equipment.iter().map(|slot| slot.map(|item| game.world().item_type(item).to_owned())).collect()
}

fn object(game: &Ostibot, x: i32, y: i32) -> Option<farm_engine::ostibot::MapObject> {
    game.world().objects().iter().find(|object| object.pos == Pos::new(x, y)).copied()
}

fn gold_at(game: &Ostibot, x: i32, y: i32) -> Option<i64> {
    game.world().gold_piles().iter().find(|pile| pile.pos == Pos::new(x, y)).map(|pile| pile.amount)
}

fn observation(game: &Ostibot, seat: usize) -> Value {
    serde_json::from_str(&game.observation(seat)).expect("observations are JSON")
}

fn entity<'a>(observation: &'a Value, id: &str) -> Option<&'a Value> {
    observation.pointer("/input/gameState/entities")?.as_array()?.iter().find(|entity| entity["id"] == id)
}

fn map_error(text: &str) -> String {
    OstibotMap::parse(text).expect_err("an invalid map").to_string()
}

// ---------------------------------------------------------------------------
// Maps
// ---------------------------------------------------------------------------

#[test]
fn map_errors_name_the_line_and_column() {
    assert_eq!(map_error("#####\n#1.O#\n#2.O##\n#####\n"), "line 3, column 6: row is longer than the first row (5)");
    assert_eq!(map_error("#####\n#1.O#\n#2.O\n#####\n"), "line 3, column 5: row is shorter (4) than the first row (5)");
    assert!(map_error("#####\n#1.O#\n#2.X#\n#####\n").starts_with("line 3, column 4: unknown map character 'X'"));
    assert!(map_error("#####\n#1.O#\n#2.é#\n#####\n").starts_with("line 3, column 4: unknown map character 'é'"));
    assert_eq!(
        map_error("#####\n#1.O#\n#3.O#\n#####\n"),
        "line 3, column 2: spawner of team 3 but no spawner of team 2: spawner digits must be 1..N"
    );
    assert_eq!(
        map_error("#####\n#1.O#\n#1.O#\n#####\n"),
        "line 2, column 2: the map has spawners of team 1 only; it needs at least 2 teams"
    );
    assert_eq!(
        map_error("#######\n#1#..O#\n###...#\n#2....#\n#######\n"),
        "line 2, column 2: team 1 cannot reach any portal from its spawners"
    );
    assert_eq!(map_error("#####\n#1.O#\n\n#2.O#\n"), "line 3, column 1: blank line");
    assert_eq!(map_error("#####\n#...#\n#...#\n"), "the map has no spawner (digits 1..N, N at least 2)");
    assert_eq!(map_error("1O\n2O\n..\n"), "line 1, column 1: a map is 3 to 100 columns wide, this one 2");
    assert!(map_error("1.O\n2.O\n").contains("at least 3 rows"));
}

#[test]
fn health_tiles_and_spawners_do_not_open_a_way_to_a_portal() {
    // The only way out of team 1's corner runs through a health tile.
    assert!(map_error("#######\n#1H..O#\n#######\n#2...O#\n#######\n").contains("team 1 cannot reach any portal"));
    // Doors, chests and vases can be broken, so they count as passable.
    assert!(OstibotMap::parse("#######\n#1+CVO#\n#######\n#2...O#\n#######\n").is_ok());
}

fn map_files() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../maps/ostibot");
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("maps/ostibot exists")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .map(|path| {
            let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
            (name, std::fs::read_to_string(&path).expect("readable map"))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_map_file_loads_and_together_they_use_every_tile() {
    let files = map_files();
    assert!(files.len() >= 6, "{files:?}");
    let mut teams_seen = Vec::new();
    let mut chars = std::collections::BTreeSet::new();
    for (name, text) in &files {
        let map = OstibotMap::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            map.warnings(&OstibotRules::default()).is_empty(),
            "{name}: {:?}",
            map.warnings(&OstibotRules::default())
        );
        teams_seen.push(map.teams());
        chars.extend(text.chars().filter(|c| *c != '\n'));
        // Every map plays a whole match between built-in bots.
        let rules = OstibotRules { nb_rounds: 1, ..OstibotRules::default() };
        let mut game = Ostibot::new(rules, Some(text), &players(map.teams()), 3).expect("playable");
        let mut bots: Vec<_> = (0..map.teams())
            .map(|seat| builtin::create(GameKind::Ostibot, "raider", 3, seat).expect("raider"))
            .collect();
        while !game.is_over() {
            let seats = game.to_act();
            let replies: Vec<(usize, String)> =
                seats.iter().map(|&seat| (seat, bots[seat].reply(&game, seat))).collect();
            let lines: Vec<(usize, &str)> = replies.iter().map(|(seat, line)| (*seat, line.as_str())).collect();
            step(&mut game, &lines);
        }
    }
    for teams in [2, 3, 4] {
        assert!(teams_seen.contains(&teams), "no {teams}-team map");
    }
    let all: std::collections::BTreeSet<char> = "#.^~LRUDH+CVO1234".chars().collect();
    assert!(all.is_subset(&chars), "unused: {:?}", all.difference(&chars).collect::<Vec<_>>());
}

#[test]
fn four_team_maps_have_quarter_turn_symmetry() {
    for (name, text) in map_files() {
        let map = OstibotMap::parse(&text).expect("valid");
        if map.teams() != 4 {
            continue;
        }
        let rows: Vec<Vec<char>> = text.lines().map(|line| line.chars().collect()).collect();
        let n = rows.len();
        let turn = |c: char| match c {
            'R' => 'D',
            'D' => 'L',
            'L' => 'U',
            'U' => 'R',
            '1'..='3' => char::from(c as u8 + 1),
            '4' => '1',
            other => other,
        };
        for (y, row) in rows.iter().enumerate() {
            for (x, cell) in row.iter().enumerate() {
                assert_eq!(rows[x][n - 1 - y], turn(*cell), "{name}: ({x},{y})");
            }
        }
    }
}

/// Where a cell of a `w`×`h` map goes under a symmetry: `(x, y, w, h) -> (x', y')`.
type Image = fn(usize, usize, usize, usize) -> (usize, usize);

/// Settled question 29: symmetric maps give symmetric seats. The 2-team maps turn a
/// half turn onto themselves (teams 1 and 2 swapped, treadmills reversed); the 3-team
/// maps mirror left to right with teams 1 and 2 swapped and team 3 on the axis.
#[test]
fn two_team_maps_turn_half_way_and_three_team_maps_mirror_teams_1_and_2() {
    let swap = |c: char| match c {
        '1' => '2',
        '2' => '1',
        other => other,
    };
    for (name, text) in map_files() {
        let map = OstibotMap::parse(&text).expect("valid");
        let rows: Vec<Vec<char>> = text.lines().map(|line| line.chars().collect()).collect();
        let (h, w) = (rows.len(), rows[0].len());
        let (image, cell): (fn(char) -> char, Image) = match map.teams() {
            2 => (
                |c| match c {
                    'L' => 'R',
                    'R' => 'L',
                    'U' => 'D',
                    'D' => 'U',
                    other => other,
                },
                |x, y, w, h| (w - 1 - x, h - 1 - y),
            ),
            3 => (
                |c| match c {
                    'L' => 'R',
                    'R' => 'L',
                    other => other,
                },
                |x, y, w, _| (w - 1 - x, y),
            ),
            _ => continue,
        };
        for (y, row) in rows.iter().enumerate() {
            for (x, c) in row.iter().enumerate() {
                let (mx, my) = cell(x, y, w, h);
                assert_eq!(rows[my][mx], swap(image(*c)), "{name}: ({x},{y}) is {c:?}, its image ({mx},{my})");
            }
        }
        // The seats follow: team 2's slot k is the image of team 1's slot k.
        let images: Vec<Pos> = map.spawners[0]
            .iter()
            .map(|p| {
                let (x, y) = cell(p.x as usize, p.y as usize, w, h);
                Pos::new(x as i32, y as i32)
            })
            .collect();
        if map.teams() == 3 {
            // Mirror images keep rows, so equal distances keep their row-major order.
            assert_eq!(map.spawners[1], images, "{name}");
        } else {
            let mut sorted = images.clone();
            sorted.sort_by_key(|p| (p.y, p.x));
            let mut team2 = map.spawners[1].clone();
            team2.sort_by_key(|p| (p.y, p.x));
            assert_eq!(team2, sorted, "{name}");
        }
    }
}

#[test]
fn the_default_map_is_the_spec_sample_and_needs_two_teams() {
    let setup = farm_engine::MatchSetup::new(GameKind::Ostibot, &Value::Null, None, 1, players(2)).expect("valid");
    let map = setup.map.expect("a default map");
    assert!(map.starts_with("#######################\n#1..V..^..#C#.....V..O#\n"));
    let error = AnyGame::new(GameKind::Ostibot, &setup.rules, Some(&map), &players(3), 1).expect_err("3 bots");
    assert!(matches!(error, SetupError::Map { .. }), "{error}");
    assert!(error.to_string().contains("the map is for 2 teams, but 3 bots were given"));
    let error = AnyGame::new(GameKind::Ostibot, &setup.rules, Some(&map), &players(5), 1).expect_err("5 bots");
    assert!(matches!(error, SetupError::Map { .. }), "{error}");
    let error = AnyGame::new(GameKind::Ostibot, &setup.rules, Some(&map), &players(10), 1).expect_err("10 bots");
    assert!(matches!(error, SetupError::Players { min: 2, max: 9, given: 10, .. }), "{error}");
}

/// Decision A-15: the team count is the map's spawner digits, up to 9.
#[test]
fn up_to_nine_teams_play_a_map_with_nine_spawner_digits() {
    let map = "\
###########
#1.2.3.4.5#
#.........#
#OOOOOOOOO#
#.........#
#6.7.8.9..#
###########
";
    assert_eq!(AnyGame::seats(GameKind::Ostibot), 2..=9);
    let setup = farm_engine::MatchSetup::new(GameKind::Ostibot, &Value::Null, Some(map.to_owned()), 1, players(9))
        .expect("9 teams");
    let mut game = farm_engine::Match::new(setup).expect("valid");
    let requests = game.requests();
    assert_eq!(requests.len(), 9, "the shop asks all nine teams");
    let replies = requests.into_iter().map(|(seat, _)| (seat, BotReply::Line("{}".into()))).collect();
    game.submit(replies).expect("replies match the requests");
    // Then one team per step, in team order.
    assert_eq!(game.requests().iter().map(|(seat, _)| *seat).collect::<Vec<_>>(), vec![0]);
    let mut direct = new_game(map, calm());
    shop(&mut direct, &[]);
    let observation = observation(&direct, 0);
    let gold = observation.pointer("/input/gameState/teamsGold").and_then(Value::as_object).expect("teamsGold");
    assert_eq!(gold.keys().map(String::as_str).collect::<Vec<_>>(), ["1", "2", "3", "4", "5", "6", "7", "8", "9"]);
}

// ---------------------------------------------------------------------------
// Rules as data, presets, deadlines
// ---------------------------------------------------------------------------

#[test]
fn presets_set_the_number_of_rounds() {
    for (preset, rounds) in [("Default", 2), ("SemiFinal", 3), ("Final", 4)] {
        let overrides = AnyGame::preset(GameKind::Ostibot, preset).expect("a preset");
        let rules = AnyGame::resolve_rules(GameKind::Ostibot, &overrides).expect("valid");
        assert_eq!(rules["nbRounds"], rounds, "{preset}");
        assert_eq!(rules["startingGold"], 3);
    }
    assert!(AnyGame::preset(GameKind::Ostibot, "Quarter").is_err());
}

#[test]
fn overrides_apply_on_top_of_the_preset_key_by_key() {
    let given = json!({ "nbRounds": 7, "startingGold": 5 }).as_object().cloned().expect("an object");
    let overrides = AnyGame::overrides(GameKind::Ostibot, Some("Final"), given.clone()).expect("a preset");
    assert_eq!(overrides, AnyGame::overrides(GameKind::Ostibot, None, given).expect("no preset"));
    let only_preset = AnyGame::overrides(GameKind::Ostibot, Some("Final"), Default::default()).expect("a preset");
    assert_eq!(only_preset, AnyGame::preset(GameKind::Ostibot, "Final").expect("a preset"));
    let rules = AnyGame::resolve_rules(GameKind::Ostibot, &overrides).expect("valid");
    assert_eq!((rules["nbRounds"].clone(), rules["startingGold"].clone()), (json!(7), json!(5)));
    assert!(AnyGame::overrides(GameKind::Ostibot, Some("Quarter"), Default::default()).is_err());
}

#[test]
fn rules_keys_are_checked_and_name_the_key() {
    let error = AnyGame::resolve_rules(GameKind::Ostibot, &json!({ "nbRoundz": 3 })).expect_err("unknown key");
    assert!(error.to_string().contains("nbRoundz"), "{error}");
    let rules = AnyGame::resolve_rules(GameKind::Ostibot, &json!({ "corruptionSpreadSpeed": 0 })).expect("types fine");
    let map = farm_engine::ostibot::DEFAULT_MAP;
    let error = AnyGame::new(GameKind::Ostibot, &rules, Some(map), &players(2), 1).expect_err("invalid value");
    assert!(error.to_string().contains("corruptionSpreadSpeed must be at least 1"), "{error}");
}

/// Rules are checked so that no sum or product of them can overflow: a huge vision
/// used to panic when the first observation squared it.
#[test]
fn huge_rule_values_are_rejected_instead_of_overflowing() {
    let map = farm_engine::ostibot::DEFAULT_MAP;
    for overrides in [
        json!({ "visionLength": i64::MAX }),
        json!({ "startingGold": i64::MAX }),
        json!({ "nbRounds": u32::MAX, "maxTurnsPerRound": u32::MAX }),
        json!({ "timeout": 1e300 }),
        json!({ "items": { "elixir": { "slot": "consumable", "cost": 1, "heal": i64::MAX } } }),
    ] {
        let rules = AnyGame::resolve_rules(GameKind::Ostibot, &overrides).expect("types fine");
        let error = AnyGame::new(GameKind::Ostibot, &rules, Some(map), &players(2), 1).expect_err("out of range");
        let error = error.to_string();
        assert!(
            ["at most", "timeout must be", "nbRounds must be 1 to 100"].iter().any(|e| error.contains(e)),
            "{error}"
        );
    }
    // The largest allowed vision works.
    let game = start(map, OstibotRules { vision_length: 1_000_000_000, ..calm() });
    assert_eq!(entity(&observation(&game, 0), "a1").map(|a1| a1["vision"].clone()), Some(json!(1_000_000_000)));
}

#[test]
fn the_deadline_is_the_timeout_in_seconds() {
    let deadlines = AnyGame::deadlines(GameKind::Ostibot, &Value::Null).expect("defaults");
    assert_eq!((deadlines.first_ms, deadlines.turn_ms), (300_000, 300_000));
    let deadlines = AnyGame::deadlines(GameKind::Ostibot, &json!({ "timeout": 1.5 })).expect("fractions");
    assert_eq!(deadlines.turn_ms, 1500);
}

#[test]
fn the_item_table_is_data() {
    let mut rules = calm();
    rules.items.insert(
        "vorpal_spoon".into(),
        farm_engine::ostibot::ItemStats {
            slot: farm_engine::ostibot::Slot::Weapon,
            cost: 1,
            damage: 100,
            armor: 0,
            vision: 0,
            spike_immune: false,
            heal: 0,
        },
    );
    let mut game = new_game("#######\n#1C...#\n#2...O#\n#######\n", rules);
    shop(&mut game, &[&shop_reply(&[buy("a1", "vorpal_spoon", true)])]);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(object(&game, 2, 1), None, "120 damage breaks a chest at once");
    assert_eq!(gold_at(&game, 2, 1), Some(12));
}

// ---------------------------------------------------------------------------
// Rounds
// ---------------------------------------------------------------------------

/// Three teams, each one spawner next to its own portal.
const THREE: &str = "\
#########
#1.....O#
#2.....O#
#3.....O#
#.......O
#########
";

#[test]
fn team_order_rotates_left_each_round() {
    let rules = OstibotRules { nb_rounds: 4, max_turns_per_round: 1, ..calm() };
    let mut game = new_game(THREE, rules);
    let mut orders = Vec::new();
    while !game.is_over() {
        if game.phase() == Phase::Shop {
            orders.push(game.order().to_vec());
            assert_eq!(game.to_act(), vec![0, 1, 2], "shop asks every team at once");
            shop(&mut game, &[]);
        } else {
            // Sequential decisions: one team per step, in the round's order.
            let expected = game.order()[match game.phase() {
                Phase::Turn { next } => next,
                _ => unreachable!(),
            }];
            assert_eq!(game.to_act(), vec![usize::from(expected) - 1]);
            turn(&mut game, &[]);
        }
    }
    assert_eq!(orders, vec![vec![1, 2, 3], vec![2, 3, 1], vec![3, 1, 2], vec![1, 2, 3]]);
}

#[test]
fn spawning_fills_min_of_adventurers_per_round_and_spawners_in_portal_order() {
    // Team 1 has four spawners, team 2 two; ids go team by team, slot by slot.
    let map = "\
#########
#1......#
#1......#
#1.....O#
#1..2...#
#...2..O#
#########
";
    let game = new_game(map, calm());
    let spawned: Vec<(u32, u8, (i32, i32))> =
        game.world().adventurers().iter().map(|a| (a.id, a.team, (a.pos.x, a.pos.y))).collect();
    // Team 1's spawners nearest the portal (7,3) first: (1,3), then (1,2) and (1,4) tie at 7
    // steps and go row-major, and (1,1) is left out.
    assert_eq!(spawned, vec![(1, 1, (1, 3)), (2, 1, (1, 2)), (3, 1, (1, 4)), (4, 2, (4, 5)), (5, 2, (4, 4))]);
    assert!(game.world().adventurers().iter().all(|a| a.hp == 120 && a.gold == 0 && !a.veteran));
}

/// Team 1 next to an open-able portal, team 2 far away.
const ESCAPE: &str = "\
##########
#1O......#
#........#
#.......2#
#.......O#
##########
";

#[test]
fn an_escapee_banks_its_gold_and_respawns_first_with_its_items() {
    let rules = OstibotRules { starting_gold: 20, adventurers_per_round: 1, ..calm() };
    let mut game = new_game(ESCAPE, rules);
    shop(&mut game, &[&shop_reply(&[buy("a1", "rusty_sword", true), buy("a1", "health_potion", false)])]);
    assert_eq!(game.world().bank(1), 15);
    // Rusty sword: 25 damage, four hits open the 100-hp portal.
    for _ in 0..4 {
        turn(&mut game, &[&go("a1", "RIGHT")]);
    }
    assert!(object(&game, 2, 1).is_some_and(|portal| portal.open));
    // Open portals ignore damage and corruption: it shows hp 0.
    assert_eq!(object(&game, 2, 1).map(|portal| portal.hp), Some(0));
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert!(game.world().adventurer(1).is_none());
    assert_eq!(game.world().escaped(1).len(), 1);
    assert_eq!(object(&game, 2, 1), None, "a portal is used once");
    // Team 2's lone adventurer idles on its spawner until the corruption burns it.
    while game.round() == 1 {
        turn(&mut game, &[]);
    }
    assert_eq!(game.phase(), Phase::Shop);
    let a1 = adventurer(&game, 1);
    assert!(a1.veteran);
    assert_eq!((a1.team, a1.hp, a1.gold, (a1.pos.x, a1.pos.y)), (1, 120, 0, (1, 1)));
    assert_eq!(equipped(&game, 1), vec![Some("rusty_sword".into()), None, None]);
    assert_eq!(item_types(&game, &a1.inventory), vec!["health_potion"]);
    // Team 2 moves first in round 2, so its fresh adventurer is numbered first.
    let team2: Vec<(u32, bool)> =
        game.world().adventurers().iter().filter(|a| a.team == 2).map(|a| (a.id, a.veteran)).collect();
    assert_eq!(team2, vec![(3, false)]);
    // The shop input flags the veteran.
    let input = observation(&game, 0);
    assert_eq!(input["input"]["adventurers"][0]["veteran"], true);
    assert_eq!(input["input"]["round"], 2);
}

#[test]
fn the_map_is_reset_every_round() {
    let map = "\
#########
#1C.....#
#.......#
#2.....O#
#......O#
#.......#
#########
";
    let rules = OstibotRules { max_turns_per_round: 5, corruption_start_at: 4, corruption_spread_speed: 1, ..calm() };
    let mut game = start(map, rules);
    for _ in 0..5 {
        turn(&mut game, &[&go("a1", "RIGHT")]);
    }
    assert_eq!(game.round(), 2);
    assert_eq!(game.phase(), Phase::Shop);
    assert_eq!(object(&game, 2, 1).map(|chest| chest.hp), Some(100), "the chest is back");
    assert!(game.world().gold_piles().is_empty() && game.world().ground_items().is_empty());
    assert!(game.world().corrupted_cells().is_empty());
    assert_eq!(game.world().terrain_at(Pos::new(1, 1)), Terrain::Spawner(1), "spawners are back");
}

#[test]
fn a_round_ends_when_the_map_is_empty_and_the_cap_loses_the_rest() {
    let rules = OstibotRules { nb_rounds: 1, max_turns_per_round: 8, adventurers_per_round: 1, ..calm() };
    let mut game = start(ESCAPE, rules);
    for _ in 0..5 {
        turn(&mut game, &[&go("a1", "RIGHT")]);
    }
    // a1 picks up nothing, escapes; a2 stays and is lost at turn 8.
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(game.turn(), 7);
    turn(&mut game, &[]);
    assert!(!game.is_over());
    turn(&mut game, &[]);
    assert!(game.is_over());
    assert!(game.world().adventurers().is_empty());
    assert_eq!(game.to_act(), Vec::<usize>::new());
    assert!(game.log().iter().any(|line| line.contains("lost: a2")), "{:?}", game.log());
}

#[test]
fn the_game_ends_with_auto_sell_and_the_bank_is_the_score() {
    let rules = OstibotRules { nb_rounds: 1, starting_gold: 20, adventurers_per_round: 1, ..calm() };
    let mut game = new_game(ESCAPE, rules);
    let team1 = shop_reply(&[
        buy("a1", "steel_blade", true),
        buy("a1", "leather_vest", true),
        buy("a1", "greater_health_potion", false),
    ]);
    shop(&mut game, &[&team1]);
    assert_eq!(game.world().bank(1), 20 - 5 - 2 - 6);
    // Steel blade: 30 damage, four hits.
    for _ in 0..4 {
        turn(&mut game, &[&go("a1", "RIGHT")]);
    }
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(game.world().escaped(1).len(), 1);
    while !game.is_over() {
        turn(&mut game, &[]);
    }
    // 7 + floor(5/2) + floor(2/2) + floor(6/2): equipment and inventory are sold.
    assert_eq!(game.world().bank(1), 7 + 2 + 1 + 3);
    let outcome = game.outcome();
    assert_eq!((outcome[0].score, outcome[0].rank), (13, 2));
    assert_eq!((outcome[1].score, outcome[1].rank), (20, 1));
}

#[test]
fn equal_gold_is_a_draw_and_more_teams_share_ranks() {
    let rules = OstibotRules { nb_rounds: 1, max_turns_per_round: 1, ..calm() };
    let mut game = start(THREE, rules);
    turn(&mut game, &[]);
    assert!(game.is_over());
    let ranks: Vec<u32> = game.outcome().iter().map(|o| o.rank).collect();
    assert_eq!(ranks, vec![1, 1, 1]);
}

// ---------------------------------------------------------------------------
// Shop
// ---------------------------------------------------------------------------

/// Two adventurers for team 1, one for team 2.
const SHOP: &str = "\
########
#1....O#
#1....O#
#2....O#
########
";

fn rich() -> OstibotRules {
    OstibotRules { starting_gold: 30, ..calm() }
}

#[test]
fn buy_pays_from_the_bank_and_equips_only_into_an_empty_slot() {
    let mut game = new_game(SHOP, rich());
    let actions = [
        buy("a1", "rusty_sword", true),
        buy("a1", "steel_blade", true),   // weapon slot taken: inventory
        buy("a1", "health_potion", true), // consumables never equip
        buy("a2", "chainmail", false),
        buy("a2", "big_boots", true),
    ];
    shop(&mut game, &[&shop_reply(&actions)]);
    assert_eq!(game.world().bank(1), 30 - 2 - 5 - 3 - 5 - 4);
    assert_eq!(equipped(&game, 1), vec![Some("rusty_sword".into()), None, None]);
    assert_eq!(item_types(&game, &adventurer(&game, 1).inventory), vec!["steel_blade", "health_potion"]);
    assert_eq!(equipped(&game, 2), vec![None, None, Some("big_boots".into())]);
    assert_eq!(item_types(&game, &adventurer(&game, 2).inventory), vec!["chainmail"]);
    // Ids in the order bought.
    let ids: Vec<u32> = adventurer(&game, 1).items().map(|item| item.id).collect();
    assert_eq!(ids, vec![1, 2, 3]);
}

#[test]
fn the_bank_never_goes_negative() {
    let mut game = new_game(SHOP, calm());
    let actions = [buy("a1", "steel_blade", true), buy("a1", "rusty_sword", true), buy("a1", "rusty_sword", true)];
    shop(&mut game, &[&shop_reply(&actions)]);
    assert_eq!(game.world().bank(1), 1);
    assert_eq!(adventurer(&game, 1).items().count(), 1);
    assert!(game.log().iter().any(|line| line.contains("steel_blade costs 5, the bank holds 3")), "{:?}", game.log());
}

#[test]
fn invalid_shop_entries_are_skipped_one_by_one() {
    let mut game = new_game(SHOP, rich());
    let actions = [
        buy("a3", "rusty_sword", true), // team 2's adventurer
        buy("a1", "Rusty_Sword", true), // case-sensitive types
        json!({ "buy": { "adventurerId": "a1", "itemType": "rusty_sword", "equip": "yes" } }),
        json!({ "buy": buy("a1", "rusty_sword", true)["buy"], "sell": {} }), // two kinds
        json!({ "buy": "rusty_sword" }),                                     // not an object
        json!("buy"),
        buy("a1", "leather_vest", true), // the only valid one
    ];
    shop(&mut game, &[&shop_reply(&actions)]);
    assert_eq!(game.world().bank(1), 28);
    assert_eq!(equipped(&game, 1), vec![None, Some("leather_vest".into()), None]);
    let rejected = game.log().iter().filter(|line| line.contains("rejected")).count();
    assert_eq!(rejected, 6, "{:?}", game.log());
}

#[test]
fn sell_gives_half_the_cost_for_inventory_items_only() {
    let mut game = new_game(SHOP, rich());
    let actions = [
        buy("a1", "enchanted_axe", true),                            // i1, equipped
        buy("a1", "greater_health_potion", false),                   // i2
        buy("a1", "plate_armor", false),                             // i3
        json!({ "sell": { "adventurerId": "a1", "itemId": "i1" } }), // equipped: rejected
        json!({ "sell": { "adventurerId": "a1", "itemId": "i2" } }), // +3
        json!({ "sell": { "adventurerId": "a1", "itemId": "i3" } }), // +5
        json!({ "sell": { "adventurerId": "a2", "itemId": "i3" } }), // already sold
    ];
    shop(&mut game, &[&shop_reply(&actions)]);
    assert_eq!(game.world().bank(1), 30 - 10 - 6 - 10 + 3 + 5);
    assert_eq!(equipped(&game, 1), vec![Some("enchanted_axe".into()), None, None]);
    assert!(adventurer(&game, 1).inventory.is_empty());
}

#[test]
fn equip_swaps_and_unequip_returns_to_the_inventory() {
    let mut game = new_game(SHOP, rich());
    let actions = [
        buy("a1", "rusty_sword", true),                                 // i1 equipped
        buy("a1", "steel_blade", false),                                // i2
        buy("a1", "health_potion", false),                              // i3
        json!({ "equip": { "adventurerId": "a1", "itemId": "i2" } }),   // i1 back to inventory
        json!({ "equip": { "adventurerId": "a1", "itemId": "i3" } }),   // consumable: rejected
        json!({ "equip": { "adventurerId": "a1", "itemId": "i2" } }),   // already equipped: rejected
        json!({ "unequip": { "adventurerId": "a1", "itemId": "i1" } }), // not equipped: rejected
        buy("a1", "scouts_binocular", true),                            // i4
        json!({ "unequip": { "adventurerId": "a1", "itemId": "i4" } }),
    ];
    shop(&mut game, &[&shop_reply(&actions)]);
    assert_eq!(equipped(&game, 1), vec![Some("steel_blade".into()), None, None]);
    assert_eq!(
        item_types(&game, &adventurer(&game, 1).inventory),
        vec!["health_potion", "rusty_sword", "scouts_binocular"]
    );
    assert_eq!(game.log().iter().filter(|line| line.contains("rejected")).count(), 3, "{:?}", game.log());
}

#[test]
fn transfer_moves_inventory_items_between_two_of_the_teams_adventurers() {
    let mut game = new_game(SHOP, rich());
    let actions = [
        buy("a1", "chainmail", false),  // i1
        buy("a1", "rusty_sword", true), // i2 equipped
        json!({ "transfer": { "from": "a1", "to": "a2", "itemId": "i1" } }),
        json!({ "transfer": { "from": "a1", "to": "a2", "itemId": "i2" } }), // equipped: rejected
        json!({ "transfer": { "from": "a2", "to": "a2", "itemId": "i1" } }), // same adventurer
        json!({ "transfer": { "from": "a2", "to": "a3", "itemId": "i1" } }), // enemy
        json!({ "equip": { "adventurerId": "a2", "itemId": "i1" } }),
    ];
    shop(&mut game, &[&shop_reply(&actions)]);
    assert_eq!(equipped(&game, 1), vec![Some("rusty_sword".into()), None, None]);
    assert_eq!(equipped(&game, 2), vec![None, Some("chainmail".into()), None]);
    assert_eq!(game.log().iter().filter(|line| line.contains("rejected")).count(), 3, "{:?}", game.log());
}

#[test]
fn item_ids_follow_the_round_order_then_the_reply_order() {
    let rules = OstibotRules { nb_rounds: 2, max_turns_per_round: 1, ..rich() };
    let mut game = new_game(SHOP, rules);
    let team1 = shop_reply(&[buy("a1", "rusty_sword", false), buy("a2", "rusty_sword", false)]);
    let team2 = shop_reply(&[buy("a3", "rusty_sword", false)]);
    shop(&mut game, &[&team1, &team2]);
    let id = |game: &Ostibot, adventurer_id| adventurer(game, adventurer_id).inventory[0].id;
    assert_eq!((id(&game, 1), id(&game, 2), id(&game, 3)), (1, 2, 3));
    turn(&mut game, &[]);
    // Round 2: team 2 goes first (fresh adventurers a4 for team 2, a5 and a6 for team 1).
    assert_eq!(game.order(), &[2, 1]);
    let team1 = shop_reply(&[buy("a5", "rusty_sword", false)]);
    let team2 = shop_reply(&[buy("a4", "rusty_sword", false)]);
    shop(&mut game, &[&team1, &team2]);
    assert_eq!((id(&game, 4), id(&game, 5)), (4, 5));
}

#[test]
fn a_wholly_invalid_shop_reply_does_nothing() {
    for bad in [
        "not json",
        "[]",
        r#"{"actions":{"buy":{}}}"#,
        r#"{"actions":[{"buy":{"adventurerId":"a1","itemType":"rusty_sword"}}],"seq":7}"#,
    ] {
        let mut game = new_game(SHOP, rich());
        shop(&mut game, &[bad]);
        assert_eq!(game.world().bank(1), 30, "{bad}");
        assert!(game.log().iter().any(|line| line.contains("invalid reply")), "{bad}: {:?}", game.log());
        assert_eq!(game.bot_state(1), "null");
    }
}

// ---------------------------------------------------------------------------
// Moves
// ---------------------------------------------------------------------------

/// a1 on (1,1); a2 (team 2) on (1,3).
const ROOM: &str = "\
#######
#1...O#
#.....#
#2...O#
#######
";

#[test]
fn walking_moves_one_cell_and_bumping_a_wall_hurts() {
    let mut game = start(ROOM, calm());
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(pos(&game, 1), (2, 1));
    turn(&mut game, &[&go("a1", "UP")]);
    assert_eq!((pos(&game, 1), hp(&game, 1)), ((2, 1), 100));
}

#[test]
fn the_edge_of_a_map_without_border_is_a_wall() {
    let mut game = start("1..O\n....\n2..O\n", calm());
    turn(&mut game, &[&go("a1", "LEFT")]);
    turn(&mut game, &[&go("a1", "UP")]);
    assert_eq!((pos(&game, 1), hp(&game, 1)), ((0, 0), 80));
}

#[test]
fn an_intact_spawner_blocks_and_hurts() {
    let mut game = start("#######\n#1...O#\n#1....#\n#2...O#\n#######\n", calm());
    // a1 stands on (1,1); the spawner (1,2) under a2 is the same team's: a friend is there.
    // a2 moves away; then a1 bumps the empty spawner.
    turn(&mut game, &[&moves(&[("a2", "RIGHT")])]);
    turn(&mut game, &[&go("a1", "DOWN")]);
    assert_eq!((pos(&game, 1), hp(&game, 1)), ((1, 1), 100));
}

#[test]
fn occupants_come_first_even_on_a_spawner() {
    // a2 (team 2) stands on its spawner (1,2), right below a1: a1 attacks it.
    let mut game = start("#######\n#1...O#\n#2...O#\n#######\n", calm());
    turn(&mut game, &[&go("a1", "DOWN")]);
    assert_eq!((hp(&game, 1), hp(&game, 2)), (120, 100));
    assert_eq!(pos(&game, 1), (1, 1), "the attacker stays");
}

#[test]
fn health_tiles_heal_for_carried_gold_or_hurt() {
    let map = "\
########
#1.H..O#
#...V..#
#2....O#
########
";
    let mut game = start(map, calm());
    turn(&mut game, &[&go("a1", "RIGHT")]);
    // No gold: block damage.
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!((hp(&game, 1), adventurer(&game, 1).gold), (100, 0));
    // Walk below the tile, break the vase at (4,2) (2 hits), pick up its 3 gold.
    turn(&mut game, &[&go("a1", "DOWN")]);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(pos(&game, 1), (3, 2));
    turn(&mut game, &[&go("a1", "RIGHT")]);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(gold_at(&game, 4, 2), Some(3));
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!((pos(&game, 1), adventurer(&game, 1).gold), ((4, 2), 3));
    // Up to the health tile's right side at (4,1), then bump it (LEFT): pay 2, full hp.
    turn(&mut game, &[&go("a1", "UP")]);
    turn(&mut game, &[&go("a1", "LEFT")]);
    assert_eq!((hp(&game, 1), adventurer(&game, 1).gold), (120, 1));
    // Healing at full hp still costs (Settled question 5) — but 1 gold is not enough now.
    turn(&mut game, &[&go("a1", "LEFT")]);
    assert_eq!((hp(&game, 1), adventurer(&game, 1).gold), (100, 1));
}

#[test]
fn healing_at_full_hp_still_pays() {
    let rules = OstibotRules { heal_cost: 0, ..calm() };
    let mut game = start("#######\n#1H..O#\n#.....#\n#2...O#\n#######\n", rules);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(hp(&game, 1), 120);
    assert_eq!(game.world().bank(1), 3);
}

#[test]
fn moving_into_a_friend_hands_over_all_gold() {
    // Two team-1 adventurers; a chest-free way to get gold: a vase.
    let map = "\
#######
#1V..O#
#1...O#
#2...O#
#######
";
    let mut game = start(map, calm());
    turn(&mut game, &[&go("a1", "RIGHT")]);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!((pos(&game, 1), adventurer(&game, 1).gold), ((2, 1), 3));
    // a2 (on (1,2)) steps right under a1; a1 moves down into it.
    turn(&mut game, &[&go("a2", "RIGHT")]);
    turn(&mut game, &[&go("a1", "DOWN")]);
    assert_eq!((pos(&game, 1), adventurer(&game, 1).gold, adventurer(&game, 2).gold), ((2, 1), 0, 3));
    // With nothing to give, the move still takes the action and changes nothing.
    turn(&mut game, &[&go("a1", "DOWN")]);
    assert_eq!((pos(&game, 1), adventurer(&game, 2).gold, hp(&game, 1)), ((2, 1), 3, 120));
}

#[test]
fn combat_uses_weapon_damage_minus_armor_at_least_zero() {
    let rules = OstibotRules { starting_gold: 30, ..calm() };
    let mut game = new_game("#######\n#1...O#\n#2...O#\n#######\n", rules);
    let team1 = shop_reply(&[buy("a1", "steel_blade", true)]);
    let team2 = shop_reply(&[buy("a2", "plate_armor", true)]);
    shop(&mut game, &[&team1, &team2]);
    turn(&mut game, &[&go("a1", "DOWN")]);
    assert_eq!(hp(&game, 2), 120 - (30 - 15));
    // Plate armor against a bare-handed 20 is 5; armor never heals.
    let mut game = new_game("#######\n#1...O#\n#2...O#\n#######\n", OstibotRules { starting_gold: 30, ..calm() });
    let team2 = shop_reply(&[buy("a2", "plate_armor", true), buy("a2", "leather_vest", false)]);
    shop(&mut game, &["{}", &team2]);
    turn(&mut game, &[&go("a1", "DOWN")]);
    assert_eq!(hp(&game, 2), 115);
    let rules = OstibotRules { adventurer_damage: 10, starting_gold: 30, ..calm() };
    let mut game = new_game("#######\n#1...O#\n#2...O#\n#######\n", rules);
    shop(&mut game, &["{}", &team2]);
    turn(&mut game, &[&go("a1", "DOWN")]);
    assert_eq!(hp(&game, 2), 120, "10 − 15 is no damage");
}

#[test]
fn a_dead_adventurer_drops_gold_then_weapon_armor_accessory_inventory() {
    let rules = OstibotRules { starting_gold: 40, adventurer_hp: 20, ..calm() };
    let map = "\
########
#1....O#
#2V...O#
########
";
    let mut game = new_game(map, rules);
    let team2 = shop_reply(&[
        buy("a2", "health_potion", false),
        buy("a2", "big_boots", true),
        buy("a2", "rusty_sword", true),
        buy("a2", "leather_vest", true),
    ]);
    shop(&mut game, &["{}", &team2]);
    // a2 breaks the vase (25 damage against 40 hp: two hits) and takes its 3 gold.
    turn(&mut game, &[&go("a1", "RIGHT"), &go("a2", "RIGHT")]);
    turn(&mut game, &["{}", &go("a2", "RIGHT")]);
    assert_eq!(gold_at(&game, 2, 2), Some(3));
    turn(&mut game, &["{}", &go("a2", "RIGHT")]);
    assert_eq!((pos(&game, 2), adventurer(&game, 2).gold), ((2, 2), 3));
    // a1 hits it from above: 20 − 5 armor, twice.
    turn(&mut game, &[&go("a1", "DOWN")]);
    assert_eq!(hp(&game, 2), 5);
    turn(&mut game, &[&go("a1", "DOWN")]);
    assert!(game.world().adventurer(2).is_none());
    assert_eq!(pos(&game, 1), (2, 1), "the attacker does not step in");
    assert_eq!(gold_at(&game, 2, 2), Some(3));
    let dropped: Vec<String> =
        game.world().ground_items().iter().map(|ground| game.world().item_type(ground.item).to_owned()).collect();
    assert_eq!(dropped, vec!["rusty_sword", "leather_vest", "big_boots", "health_potion"]);
    // Walking onto the cell picks everything up, items into the inventory in that order.
    turn(&mut game, &[&go("a1", "DOWN")]);
    assert_eq!(adventurer(&game, 1).gold, 3);
    assert_eq!(
        item_types(&game, &adventurer(&game, 1).inventory),
        vec!["rusty_sword", "leather_vest", "big_boots", "health_potion"]
    );
    assert!(game.world().ground_items().is_empty() && game.world().gold_piles().is_empty());
}

#[test]
fn chests_and_vases_break_into_gold_piles_on_their_cell() {
    let map = "\
########
#1CV..O#
#2....O#
########
";
    let mut game = start(map, calm());
    for hit in 1..=5 {
        turn(&mut game, &[&go("a1", "RIGHT")]);
        let chest = object(&game, 2, 1);
        if hit < 5 {
            assert_eq!(chest.map(|chest| chest.hp), Some(100 - 20 * hit));
        } else {
            assert_eq!(chest, None);
        }
    }
    assert_eq!(pos(&game, 1), (1, 1), "the attacker does not step in");
    assert_eq!(gold_at(&game, 2, 1), Some(12));
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(adventurer(&game, 1).gold, 12);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(object(&game, 3, 1), None);
    let pile = game.world().gold_piles()[0];
    assert_eq!((pile.id, pile.amount), (2, 3), "gold piles are numbered when created");
}

#[test]
fn a_dead_adventurers_gold_is_a_new_pile() {
    // a2 (team 2, 20 hp) dies with 3 gold on the cell where a vase's pile lies.
    let rules = OstibotRules { adventurer_hp: 20, ..calm() };
    let map = "\
#########
#1.....O#
#2VV...O#
#########
";
    let mut game = start(map, rules);
    // a2 breaks the first vase (2 hits), takes 3 gold, breaks the second (2 hits).
    for _ in 0..3 {
        turn(&mut game, &["{}", &go("a2", "RIGHT")]);
    }
    for _ in 0..2 {
        turn(&mut game, &["{}", &go("a2", "RIGHT")]);
    }
    assert_eq!((pos(&game, 2), adventurer(&game, 2).gold, gold_at(&game, 3, 2)), ((2, 2), 3, Some(3)));
    // a2 steps onto the second pile: 6 gold. a1 kills a2 there: a 6-gold pile, a new id.
    turn(&mut game, &[&go("a1", "RIGHT"), &go("a2", "RIGHT")]);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(pos(&game, 1), (3, 1));
    turn(&mut game, &[&go("a1", "DOWN")]);
    let piles: Vec<(u32, i64)> = game.world().gold_piles().iter().map(|pile| (pile.id, pile.amount)).collect();
    assert_eq!(piles, vec![(3, 6)]);
}

#[test]
fn doors_block_moves_and_sight_until_broken() {
    let map = "\
#########
#1+.V..O#
#########
#2.....O#
#########
";
    let mut game = start(map, calm());
    let sees_vase = |game: &Ostibot| entity(&observation(game, 0), "e14").is_some();
    assert!(!sees_vase(&game), "the door hides the vase");
    assert!(entity(&observation(&game, 0), "e12").is_some(), "the door itself is seen");
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!((pos(&game, 1), object(&game, 2, 1).map(|door| door.hp)), ((1, 1), Some(20)));
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(object(&game, 2, 1), None);
    assert!(sees_vase(&game));
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(pos(&game, 1), (2, 1));
}

#[test]
fn escaping_banks_the_carried_gold() {
    let map = "\
#########
#1V.O...#
#.......#
#2.....O#
#########
";
    let mut game = start(map, calm());
    for _ in 0..3 {
        turn(&mut game, &[&go("a1", "RIGHT")]);
    }
    assert_eq!(adventurer(&game, 1).gold, 3);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    for _ in 0..5 {
        turn(&mut game, &[&go("a1", "RIGHT")]);
    }
    assert!(object(&game, 4, 1).is_some_and(|portal| portal.open));
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(game.world().bank(1), 6);
    assert_eq!(game.world().escaped(1)[0].gold, 0);
    assert_eq!(object(&game, 4, 1), None);
    assert_eq!(game.world().terrain_at(Pos::new(4, 1)), Terrain::Floor);
}

#[test]
fn spikes_hurt_on_entering_unless_big_boots_are_equipped() {
    let map = "\
#######
#1^^.O#
#1^^.O#
#2...O#
#######
";
    let rules = OstibotRules { starting_gold: 20, ..calm() };
    let mut game = new_game(map, rules);
    // a1 wears Big Boots, a2 only carries a pair.
    let team1 = shop_reply(&[buy("a1", "big_boots", true), buy("a2", "big_boots", false)]);
    shop(&mut game, &[&team1]);
    turn(&mut game, &[&moves(&[("a1", "RIGHT"), ("a2", "RIGHT")])]);
    turn(&mut game, &[&moves(&[("a1", "RIGHT"), ("a2", "RIGHT")])]);
    assert_eq!((hp(&game, 1), hp(&game, 2)), (120, 80));
    // Standing still does nothing; stepping out and back hurts again.
    turn(&mut game, &[]);
    turn(&mut game, &[&moves(&[("a2", "LEFT")])]);
    assert_eq!(hp(&game, 2), 60);
    // The observation says who is immune.
    let mine = observation(&game, 0);
    assert_eq!(entity(&mine, "a1").map(|a| a["spikeImmune"].clone()), Some(json!(true)));
    assert_eq!(entity(&mine, "a2").map(|a| a["spikeImmune"].clone()), Some(json!(false)));
}

#[test]
fn ice_slides_on_until_something_stops_it_without_damage() {
    let map = "\
##########
#1~~~~.C.#
#........#
#2~~~V..O#
#......O.#
##########
";
    let mut game = start(map, calm());
    // a1 slides over (2..5,1) and stops on (6,1) floor.
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!((pos(&game, 1), hp(&game, 1)), ((6, 1), 120));
    // a2 slides until the vase at (5,3) stops it on (4,3): no hit, no damage.
    turn(&mut game, &["{}", &go("a2", "RIGHT")]);
    assert_eq!((pos(&game, 2), hp(&game, 2)), ((4, 3), 120));
    assert_eq!(object(&game, 5, 3).map(|vase| vase.hp), Some(40));
}

#[test]
fn forced_steps_pick_up_what_lies_on_the_way() {
    // a1 slides until the door stops it on (4,1), and dies there bumping the wall,
    // dropping its sword. With the door broken, a2 slides over (4,1) and picks it up.
    let rules = OstibotRules { adventurer_hp: 20, starting_gold: 10, ..calm() };
    let map = "\
##########
#1~~~+..O#
#1.......#
#2......O#
##########
";
    let mut game = new_game(map, rules);
    shop(&mut game, &[&shop_reply(&[buy("a1", "rusty_sword", true)])]);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!((pos(&game, 1), hp(&game, 1)), ((4, 1), 20), "blocked forced steps cost nothing");
    turn(&mut game, &[&moves(&[("a1", "UP"), ("a2", "RIGHT")])]);
    assert!(game.world().adventurer(1).is_none());
    for dir in ["RIGHT", "RIGHT", "RIGHT", "UP", "UP", "LEFT", "LEFT", "LEFT", "UP"] {
        turn(&mut game, &[&go("a2", dir)]);
    }
    assert_eq!(object(&game, 5, 1), None, "the door is broken");
    assert_eq!(pos(&game, 2), (2, 1), "moving up onto ice slides up into the wall and stops");
    turn(&mut game, &[&go("a2", "RIGHT")]);
    assert_eq!(pos(&game, 2), (5, 1));
    assert_eq!(item_types(&game, &adventurer(&game, 2).inventory), vec!["rusty_sword"]);
}

#[test]
fn a_slide_into_an_open_portal_escapes_with_all_its_gold() {
    let map = "\
#########
#1V~~O..#
#2......#
#.......#
#########
";
    let mut game = start(map, calm());
    // a1 takes the vase's gold; a2 walks under the portal and opens it (5 hits).
    turn(&mut game, &[&go("a1", "RIGHT"), &go("a2", "RIGHT")]);
    turn(&mut game, &[&go("a1", "RIGHT"), &go("a2", "RIGHT")]);
    turn(&mut game, &[&go("a1", "RIGHT"), &go("a2", "RIGHT")]);
    turn(&mut game, &["{}", &go("a2", "RIGHT")]);
    for _ in 0..5 {
        turn(&mut game, &["{}", &go("a2", "UP")]);
    }
    assert!(object(&game, 5, 1).is_some_and(|portal| portal.open));
    assert_eq!(adventurer(&game, 1).gold, 3);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert!(game.world().adventurer(1).is_none());
    assert_eq!(game.world().escaped(1)[0].id, 1);
    assert_eq!(game.world().bank(1), 6);
}

#[test]
fn dying_in_a_slide_ends_it_and_drops_everything_there() {
    let rules = OstibotRules { adventurer_hp: 20, starting_gold: 10, ..calm() };
    let map = "\
#########
#1~~^..O#
#2.....O#
#########
";
    let mut game = new_game(map, rules);
    shop(&mut game, &[&shop_reply(&[buy("a1", "leather_vest", true)])]);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert!(game.world().adventurer(1).is_none());
    let ground: Vec<(i32, i32)> = game.world().ground_items().iter().map(|g| (g.pos.x, g.pos.y)).collect();
    assert_eq!(ground, vec![(4, 1)]);
}

#[test]
fn treadmills_push_and_chain() {
    let map = "\
##########
#1RRD....#
#...D....#
#...L...O#
#2......O#
##########
";
    let mut game = start(map, calm());
    // (2,1) R → (3,1) R → (4,1) D → (4,2) D → (4,3) L → (3,3) floor.
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!((pos(&game, 1), hp(&game, 1)), ((3, 3), 120));
}

#[test]
fn a_treadmill_loop_stops_after_64_forced_steps() {
    let mut game = start("#######\n#1RL.O#\n#2...O#\n#######\n", calm());
    turn(&mut game, &[&go("a1", "RIGHT")]);
    // Onto (2,1), then 64 forced steps between (3,1) and (2,1): an even count ends on (2,1).
    assert_eq!((pos(&game, 1), hp(&game, 1)), ((2, 1), 120));
}

#[test]
fn a_forced_step_never_attacks_nor_hands_over_gold() {
    // The treadmill at (2,1) pushes right into a2 (team 2) standing on (3,1); nothing happens.
    let map = "\
########
#1R...O#
#2....O#
########
";
    let mut game = start(map, calm());
    for dir in ["RIGHT", "RIGHT", "UP"] {
        turn(&mut game, &["{}", &go("a2", dir)]);
    }
    assert_eq!(pos(&game, 2), (3, 1));
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!((pos(&game, 1), hp(&game, 1), hp(&game, 2)), ((2, 1), 120, 120));
}

#[test]
fn treadmills_push_back_against_the_move_and_spikes_hit_again() {
    let mut game = start("########\n#1^L..O#\n#2....O#\n########\n", calm());
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!((pos(&game, 1), hp(&game, 1)), ((2, 1), 100));
    // RIGHT onto L (3,1): pushed back LEFT onto the spikes, which hit again.
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!((pos(&game, 1), hp(&game, 1)), ((2, 1), 80));
    let mut game = start("#######\n#1.R.O#\n#2...O#\n#######\n", calm());
    turn(&mut game, &[&go("a1", "RIGHT")]);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(pos(&game, 1), (4, 1));
    // LEFT onto R (3,1): pushed RIGHT back to (4,1).
    turn(&mut game, &[&go("a1", "LEFT")]);
    assert_eq!((pos(&game, 1), hp(&game, 1)), ((4, 1), 120));
}

// ---------------------------------------------------------------------------
// Use
// ---------------------------------------------------------------------------

#[test]
fn potions_heal_up_to_max_and_are_used_up_even_at_full_hp() {
    let rules = OstibotRules { starting_gold: 20, ..calm() };
    let mut game = new_game("#######\n#1...O#\n#2...O#\n#######\n", rules);
    let team1 = shop_reply(&[buy("a1", "health_potion", false), buy("a1", "health_potion", false)]);
    shop(&mut game, &[&team1]);
    turn(&mut game, &[&use_item("a1", "i1")]);
    assert_eq!((hp(&game, 1), adventurer(&game, 1).inventory.len()), (120, 1));
    // Take 60 damage (three wall bumps), heal 80: capped at 120.
    for _ in 0..3 {
        turn(&mut game, &[&go("a1", "UP")]);
    }
    assert_eq!(hp(&game, 1), 60);
    turn(&mut game, &[&use_item("a1", "i2")]);
    assert_eq!((hp(&game, 1), adventurer(&game, 1).inventory.len()), (120, 0));
}

#[test]
fn use_equips_and_swaps_and_a_missing_item_means_idle() {
    let rules = OstibotRules { starting_gold: 20, ..calm() };
    let mut game = new_game("#######\n#1...O#\n#1...O#\n#2...O#\n#######\n", rules);
    let team1 =
        shop_reply(&[buy("a1", "rusty_sword", true), buy("a1", "steel_blade", false), buy("a2", "chainmail", false)]);
    shop(&mut game, &[&team1]);
    turn(&mut game, &[&use_item("a1", "i2")]);
    assert_eq!(equipped(&game, 1)[0].as_deref(), Some("steel_blade"));
    assert_eq!(item_types(&game, &adventurer(&game, 1).inventory), vec!["rusty_sword"]);
    assert_eq!(entity(&observation(&game, 0), "a1").map(|a| a["damage"].clone()), Some(json!(30)));
    // The equipped item, another adventurer's item, an unknown item: idle, logged.
    for item in ["i2", "i3", "i99", "x"] {
        let log = turn(&mut game, &[&use_item("a1", item)]);
        assert!(log.iter().any(|line| line.contains("a1 idles")), "{item}: {log:?}");
        assert_eq!(pos(&game, 1), (1, 1));
    }
    assert_eq!(equipped(&game, 1)[0].as_deref(), Some("steel_blade"));
}

// ---------------------------------------------------------------------------
// Play replies
// ---------------------------------------------------------------------------

#[test]
fn only_the_first_entry_per_adventurer_counts() {
    let mut game = start(ROOM, calm());
    let log = turn(&mut game, &[&moves(&[("a1", "RIGHT"), ("a1", "RIGHT"), ("a1", "DOWN")])]);
    assert_eq!(pos(&game, 1), (2, 1));
    assert_eq!(log.iter().filter(|line| line.contains("already acted")).count(), 2);
}

#[test]
fn a_malformed_entry_uses_up_the_action_but_a_foreign_one_does_not() {
    let mut game = start(ROOM, calm());
    let reply = json!({ "actions": [
        { "adventurerId": "a1", "move": { "direction": "right" } },
        { "adventurerId": "a1", "move": { "direction": "RIGHT" } },
    ] });
    turn(&mut game, &[&reply.to_string()]);
    assert_eq!(pos(&game, 1), (1, 1), "a bad direction idles a1 for the turn");
    let reply = json!({ "actions": [
        { "adventurerId": "a2", "move": { "direction": "RIGHT" } }, // team 2's
        { "adventurerId": "a7", "move": { "direction": "RIGHT" } }, // nobody
        { "adventurerId": 1, "move": { "direction": "RIGHT" } },    // not a string
        "RIGHT",
        { "adventurerId": "a1", "move": { "direction": "DOWN" } },
    ] });
    turn(&mut game, &[&reply.to_string()]);
    assert_eq!(pos(&game, 1), (1, 2));
    assert_eq!(pos(&game, 2), (1, 3), "team 1 cannot move team 2");
    for entry in [
        json!({ "adventurerId": "a1", "move": { "direction": "UP" }, "use": { "itemId": "i1" } }),
        json!({ "adventurerId": "a1" }),
        json!({ "adventurerId": "a1", "move": "UP" }),
        json!({ "adventurerId": "a1", "move": null, "use": null }),
    ] {
        let reply = json!({ "actions": [entry, { "adventurerId": "a1", "move": { "direction": "RIGHT" } }] });
        turn(&mut game, &[&reply.to_string()]);
        assert_eq!(pos(&game, 1), (1, 2), "{entry}");
    }
    // `null` counts as absent: a move with `use: null` is fine.
    let reply = json!({ "actions": [{ "adventurerId": "a1", "move": { "direction": "RIGHT" }, "use": null }] });
    turn(&mut game, &[&reply.to_string()]);
    assert_eq!(pos(&game, 1), (2, 2));
}

#[test]
fn reasons_and_errors_are_logged_cut_to_200_characters_and_errors_do_not_cancel() {
    let mut game = start(ROOM, calm());
    let reply = json!({
        "actions": [{ "adventurerId": "a1", "move": { "direction": "RIGHT", "reason": "x".repeat(300) } }],
        "error": "something odd",
    });
    let log = turn(&mut game, &[&reply.to_string()]);
    assert_eq!(pos(&game, 1), (2, 1));
    assert!(log.iter().any(|line| line == "team 1: error: something odd"), "{log:?}");
    let reason = log.iter().find(|line| line.contains("a1 move: ")).expect("the reason is logged");
    assert_eq!(reason.chars().filter(|c| *c == 'x').count(), 200);
}

#[test]
fn later_teams_see_the_moves_of_earlier_teams_in_the_same_turn() {
    let mut game = start(ROOM, calm());
    step(&mut game, &[(0, &go("a1", "DOWN"))]);
    assert_eq!(game.to_act(), vec![1]);
    let seen = observation(&game, 1);
    assert_eq!(entity(&seen, "a1").map(|a| (a["x"].clone(), a["y"].clone())), Some((json!(1), json!(2))));
    assert_eq!(seen["input"]["gameState"]["turn"], 1);
}

#[test]
fn snapshot_mode_asks_every_team_at_once_and_applies_in_team_order() {
    let rules = OstibotRules { decision_mode: DecisionMode::Snapshot, ..calm() };
    let mut game = start("#######\n#1...O#\n#.....#\n#2...O#\n#######\n", rules);
    assert_eq!(game.to_act(), vec![0, 1]);
    // Both aim at (1,2): team 1 goes first and gets there; team 2 then attacks it.
    step(&mut game, &[(0, &go("a1", "DOWN")), (1, &go("a2", "UP"))]);
    assert_eq!(game.turn(), 2);
    assert_eq!((pos(&game, 1), pos(&game, 2), hp(&game, 1)), ((1, 2), (1, 3), 100));
}

// ---------------------------------------------------------------------------
// Vision and what bots see
// ---------------------------------------------------------------------------

#[test]
fn vision_is_a_euclidean_radius_with_line_of_sight() {
    // Team 1's adventurer and spawner are both at (1,1): radius 5.
    let map = "\
##############
#1...V.....V.#
#..#.........#
#..#V........#
#............#
#..V.........#
#2..........O#
##############
";
    let game = start(map, calm());
    let seen = observation(&game, 0);
    let id = |x: i32, y: i32| format!("e{}", y * 14 + x + 1);
    let sees = |x: i32, y: i32| entity(&seen, &id(x, y)).is_some();
    assert!(sees(5, 1), "4 away");
    assert!(!sees(11, 1), "10 away");
    assert!(!sees(4, 3), "9 + 4 ≤ 25, but the wall at (3,2) is on both lines");
    assert!(sees(3, 5), "4 + 16 ≤ 25 and a clear line");
    // Team 2 sees a1 exactly 5 cells up, in the enemy shape: no gold, no inventory.
    let theirs = observation(&game, 1);
    let a1 = entity(&theirs, "a1").expect("25 ≤ 25");
    let keys: Vec<&str> = a1.as_object().expect("an object").keys().map(String::as_str).collect();
    let mut expected = vec!["id", "type", "team", "x", "y", "hp", "maxHp", "equipment"];
    expected.sort_unstable();
    let mut keys = keys;
    keys.sort_unstable();
    assert_eq!(keys, expected);
    assert!(entity(&theirs, &id(5, 1)).is_none());
}

#[test]
fn an_equipped_accessory_widens_vision() {
    let map = "\
###########
#1......V.#
#2.......O#
#........O#
###########
";
    let rules = OstibotRules { starting_gold: 10, ..calm() };
    let mut game = new_game(map, rules.clone());
    shop(&mut game, &[]);
    assert!(entity(&observation(&game, 0), "e20").is_none(), "7 away");
    let mut game = new_game(map, rules);
    shop(&mut game, &[&shop_reply(&[buy("a1", "speed_boots", true)])]);
    let seen = observation(&game, 0);
    assert_eq!(entity(&seen, "a1").map(|a| a["vision"].clone()), Some(json!(7)));
    assert!(entity(&seen, "e20").is_some(), "49 ≤ 49");
}

#[test]
fn the_shop_call_is_exactly_this_line() {
    let game = new_game("#####\n#1.O#\n#2.O#\n#####\n", OstibotRules { nb_rounds: 1, ..OstibotRules::default() });
    let rules = serde_json::to_string(game.world().rules()).expect("rules serialize");
    let expected = format!(
        concat!(
            r#"{{"call":"shop","seq":1,"input":{{"you":1,"round":1,"rules":{},"#,
            r#""teams":[{{"id":1,"name":"team1"}},{{"id":2,"name":"team2"}}],"teamsGold":{{"1":3,"2":3}},"#,
            r#""adventurers":[{{"id":"a1","type":"adventurer","team":1,"x":1,"y":1,"hp":120,"maxHp":120,"gold":0,"#,
            r#""damage":20,"armor":0,"vision":5,"spikeImmune":false,"#,
            r#""equipment":{{"weapon":null,"armor":null,"accessory":null}},"inventory":[],"veteran":false}}],"#,
            r#""state":null}}}}"#
        ),
        rules
    );
    assert_eq!(game.observation(0), expected);
    assert!(rules.starts_with(r#"{"nbRounds":1,"startingGold":3,"timeout":300,"adventurersPerRound":3,"#));
}

#[test]
fn the_play_call_is_exactly_this_line() {
    let map = "\
#######
#1V+.O#
#2..C~#
#######
";
    let rules = OstibotRules { starting_gold: 5, ..calm() };
    let mut game = new_game(map, rules);
    shop(&mut game, &[&shop_reply(&[buy("a1", "rusty_sword", true)])]);
    let line = game.observation(0);
    let input = line.split(r#","rules":"#).next().expect("a prefix");
    assert_eq!(input, r#"{"call":"play","seq":2,"input":{"you":1"#);
    let state = &line[line.find(r#""gameState":"#).expect("gameState")..];
    let expected = concat!(
        r#""gameState":{"round":1,"turn":1,"width":7,"height":4,"teamsGold":{"1":3,"2":5},"#,
        "\"map\":[\"#######\",\"#1....#\",\"#2...~#\",\"#######\"],\"corrupted\":[],\"entities\":[",
        r#"{"id":"a1","type":"adventurer","team":1,"x":1,"y":1,"hp":120,"maxHp":120,"gold":0,"damage":25,"#,
        r#""armor":0,"vision":5,"spikeImmune":false,"#,
        r#""equipment":{"weapon":{"id":"i1","itemType":"rusty_sword"},"armor":null,"accessory":null},"#,
        r#""inventory":[],"veteran":false},"#,
        r#"{"id":"e10","type":"vase","x":2,"y":1,"hp":40},"#,
        r#"{"id":"e11","type":"door","x":3,"y":1,"hp":40},"#,
        r#"{"id":"a2","type":"adventurer","team":2,"x":1,"y":2,"hp":120,"maxHp":120,"#,
        r#""equipment":{"weapon":null,"armor":null,"accessory":null}},"#,
        r#"{"id":"e19","type":"chest","x":4,"y":2,"hp":100}]},"#,
        r#""state":null}}"#
    );
    // The portal at (5,1) is behind the door; (4,1) is hidden... and seen diagonally? No:
    // every line from (1,1) or (1,2) towards (5,1) crosses the door at (3,1).
    assert_eq!(state, expected);
}

#[test]
fn corruption_starts_spreads_and_burns() {
    let map = "\
#########
#1...#..#
#........
#2...C..O
#########
";
    let rules = OstibotRules {
        corruption_start_at: 2,
        corruption_spread_speed: 2,
        starting_gold: 10,
        adventurer_hp: 200,
        ..calm()
    };
    let mut game = new_game(map, rules);
    shop(&mut game, &[&shop_reply(&[buy("a1", "plate_armor", true)])]);
    turn(&mut game, &[]);
    assert!(game.world().corrupted_cells().is_empty());
    turn(&mut game, &[]);
    // End of turn 2: the spawners become corrupted floor and burn their occupants, armor or not.
    assert_eq!(game.world().corrupted_cells(), vec![Pos::new(1, 1), Pos::new(1, 3)]);
    assert_eq!(game.world().terrain_at(Pos::new(1, 1)), Terrain::Floor);
    assert_eq!((hp(&game, 1), hp(&game, 2)), (180, 180));
    assert_eq!(observation(&game, 0)["input"]["gameState"]["map"][1], "#1...#..#".replace('1', "."));
    turn(&mut game, &[]);
    assert_eq!(game.world().corrupted_cells().len(), 2, "no spread at turn 3");
    turn(&mut game, &[]);
    // Turn 4: spread to non-wall 4-neighbours, from the set before the spread.
    let cells: Vec<(i32, i32)> = game.world().corrupted_cells().iter().map(|p| (p.x, p.y)).collect();
    assert_eq!(cells, vec![(1, 1), (2, 1), (1, 2), (1, 3), (2, 3)]);
    assert_eq!(hp(&game, 1), 140, "burned at the ends of turns 2, 3 and 4");
    let seen = observation(&game, 0);
    assert_eq!(seen["input"]["gameState"]["corrupted"], json!([[1, 1], [2, 1], [1, 2], [1, 3], [2, 3]]));
}

#[test]
fn corruption_burns_map_objects_opens_portals_and_leaves_gold_and_items() {
    // Every cell but the walls is corrupted at once: spread speed 1, spawners next to everything.
    let map = "\
########
#1CV+O.#
#2.....#
########
";
    let rules = OstibotRules {
        corruption_start_at: 1,
        corruption_spread_speed: 1,
        corruption_damage: 20,
        adventurer_hp: 1000,
        starting_gold: 10,
        ..calm()
    };
    let mut game = new_game(map, rules);
    shop(&mut game, &[&shop_reply(&[buy("a1", "leather_vest", true)])]);
    // a2 walks right under the portal, just ahead of the corruption.
    for _ in 0..4 {
        turn(&mut game, &["{}", &go("a2", "RIGHT")]);
    }
    assert_eq!(pos(&game, 2), (5, 2));
    // Cells 1, 2, 3 and 4 steps from a spawner corrupt at the ends of turns 2, 3, 4 and 5,
    // and everything on them burns from then on, 20 a turn.
    assert_eq!(object(&game, 3, 1), None, "the vase burned at turns 3 and 4");
    assert_eq!(gold_at(&game, 3, 1), Some(3), "gold survives corruption");
    assert_eq!(object(&game, 4, 1).map(|door| door.hp), Some(20));
    assert_eq!(object(&game, 2, 1).map(|chest| chest.hp), Some(40));
    for _ in 0..5 {
        turn(&mut game, &[]);
    }
    assert_eq!(object(&game, 4, 1), None, "the door burned");
    assert_eq!(object(&game, 2, 1), None, "the chest burned");
    assert_eq!(gold_at(&game, 2, 1), Some(12));
    assert!(object(&game, 5, 1).is_some_and(|portal| portal.open && portal.hp == 0), "burned open at turn 9");
    // a2 walks into the open portal.
    turn(&mut game, &["{}", &go("a2", "UP")]);
    assert!(game.world().adventurer(2).is_none());
    assert_eq!(game.world().escaped(2).len(), 1);
}

#[test]
fn health_tiles_pass_corruption_on_and_walls_stop_it() {
    let map = "\
########
#1H...O#
#.###..#
#.....2#
#O.....#
########
";
    let rules = OstibotRules { corruption_start_at: 1, corruption_spread_speed: 1, ..calm() };
    let mut game = start(map, rules);
    turn(&mut game, &[]);
    turn(&mut game, &[]);
    turn(&mut game, &[]);
    let cells: Vec<(i32, i32)> = game.world().corrupted_cells().iter().map(|p| (p.x, p.y)).collect();
    assert!(cells.contains(&(2, 1)) && cells.contains(&(3, 1)), "{cells:?}");
    assert!(!cells.iter().any(|&(x, y)| game.world().terrain_at(Pos::new(x, y)) == Terrain::Wall));
}

// ---------------------------------------------------------------------------
// Protocol: seq, state, timeouts, crashes
// ---------------------------------------------------------------------------

#[test]
fn calls_carry_a_per_team_seq_and_a_reply_with_another_seq_is_discarded() {
    let mut game = new_game(ROOM, calm());
    assert_eq!(observation(&game, 0)["seq"], 1);
    shop(&mut game, &[r#"{"seq":1,"actions":[]}"#, r#"{"seq":1}"#]);
    assert_eq!(observation(&game, 0)["seq"], 2);
    assert_eq!(observation(&game, 0)["call"], "play");
    // A late answer to the shop call is discarded whole.
    let stale = json!({ "seq": 1, "actions": [{ "adventurerId": "a1", "move": { "direction": "RIGHT" } }] });
    let log = turn(&mut game, &[&stale.to_string()]);
    assert_eq!(pos(&game, 1), (1, 1));
    assert!(log.iter().any(|line| line.contains("seq 1 does not match this call's 2")), "{log:?}");
    // The right seq, or none at all, is fine.
    let fresh = json!({ "seq": 3, "actions": [{ "adventurerId": "a1", "move": { "direction": "RIGHT" } }] });
    turn(&mut game, &[&fresh.to_string()]);
    turn(&mut game, &[&go("a1", "RIGHT")]);
    assert_eq!(pos(&game, 1), (3, 1));
    // Team 2 was asked as often: its own count.
    assert_eq!(observation(&game, 1)["seq"], 5);
}

#[test]
fn state_persists_per_team_across_shop_and_play() {
    let mut game = new_game(ROOM, calm());
    shop(&mut game, &[r#"{"state":{"plan":"rush"}}"#]);
    assert_eq!(observation(&game, 0)["input"]["state"], json!({ "plan": "rush" }));
    assert_eq!(observation(&game, 1)["input"]["state"], Value::Null, "teams do not share states");
    // Absent keeps it; invalid replies keep it; null replaces it.
    turn(&mut game, &[r#"{"actions":[]}"#]);
    turn(&mut game, &["{oops"]);
    assert_eq!(game.bot_state(1), r#"{"plan":"rush"}"#);
    turn(&mut game, &[r#"{"state":null}"#]);
    assert_eq!(game.bot_state(1), "null");
    turn(&mut game, &[r#"{"state":[1,2,3]}"#]);
    assert_eq!(observation(&game, 0)["input"]["state"], json!([1, 2, 3]));
}

#[test]
fn an_oversized_state_is_not_kept_but_the_actions_apply() {
    let mut game = start(ROOM, calm());
    let big = "x".repeat((1 << 20) + 1);
    let reply = json!({ "actions": [{ "adventurerId": "a1", "move": { "direction": "RIGHT" } }], "state": big });
    let log = turn(&mut game, &[&reply.to_string()]);
    assert_eq!(pos(&game, 1), (2, 1));
    assert_eq!(game.bot_state(1), "null");
    assert!(log.iter().any(|line| line.contains("over 1 MiB")), "{log:?}");
}

#[test]
fn only_the_first_1000_actions_are_read_and_huge_replies_are_invalid() {
    let mut game = start(ROOM, calm());
    let mut actions = vec![json!({ "adventurerId": "a9", "move": { "direction": "RIGHT" } }); 1000];
    actions.push(json!({ "adventurerId": "a1", "move": { "direction": "RIGHT" } }));
    let log = turn(&mut game, &[&json!({ "actions": actions }).to_string()]);
    assert_eq!(pos(&game, 1), (1, 1));
    assert!(log.iter().any(|line| line.contains("1001 actions; only the first 1000 are read")));
    let padding = " ".repeat(2 << 20);
    let huge = format!(r#"{{"actions":[{{"adventurerId":"a1","move":{{"direction":"RIGHT"}}}}]}}{padding}"#);
    let log = turn(&mut game, &[&huge]);
    assert_eq!(pos(&game, 1), (1, 1));
    assert!(log.iter().any(|line| line.contains("invalid reply")), "{log:?}");
}

#[test]
fn timeouts_idle_the_team_and_a_crashed_bot_is_never_asked_again() {
    let mut game = start(ROOM, calm());
    let timeout = game.parse_reply(0, &BotReply::Timeout);
    game.apply(vec![(0, timeout)], &mut rng());
    assert_eq!(game.to_act(), vec![1]);
    step(&mut game, &[(1, "{}")]);
    assert_eq!(game.to_act(), vec![0], "a team that timed out is still asked");
    let crashed = game.parse_reply(0, &BotReply::Crashed);
    game.apply(vec![(0, crashed)], &mut rng());
    step(&mut game, &[(1, "{}")]);
    for _ in 0..5 {
        assert_eq!(game.to_act(), vec![1]);
        step(&mut game, &[(1, "{}")]);
    }
    assert!(game.world().adventurer(1).is_some(), "its adventurers stay on the map, idle");
    let unreadable = game.parse_reply(1, &BotReply::Unreadable);
    game.apply(vec![(1, unreadable)], &mut rng());
    let statuses: Vec<PlayerStatus> = game.outcome().iter().map(|o| o.status).collect();
    assert_eq!(statuses, vec![PlayerStatus::Crashed, PlayerStatus::Ok]);
}

#[test]
fn a_match_where_every_bot_crashed_plays_itself_to_the_end() {
    let mut game = new_game(ROOM, OstibotRules { corruption_start_at: 5, ..calm() });
    let crashed = |game: &Ostibot, seat| game.parse_reply(seat, &BotReply::Crashed);
    let actions = vec![(0, crashed(&game, 0)), (1, crashed(&game, 1))];
    game.apply(actions, &mut rng());
    assert!(game.is_over(), "the corruption ends every round");
    assert_eq!(game.outcome().iter().map(|o| o.score).collect::<Vec<_>>(), vec![3, 3]);
}

#[test]
fn replies_to_seats_that_were_not_asked_are_ignored() {
    let mut game = start(ROOM, calm());
    step(&mut game, &[(1, &go("a2", "RIGHT"))]);
    assert_eq!((pos(&game, 2), game.to_act()), ((1, 3), vec![1]), "team 1's step idled, team 2's is next");
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

/// The spec's line, written again here so that the property checks the engine against
/// an independent reading of Settled question 14.
fn reference_line(from: (i32, i32), to: (i32, i32)) -> Vec<(i32, i32)> {
    let (mut x, mut y) = from;
    let (dx, sx) = ((to.0 - x).abs(), (to.0 - x).signum());
    let (dy, sy) = (-(to.1 - y).abs(), (to.1 - y).signum());
    let mut err = dx + dy;
    let mut cells = vec![];
    loop {
        cells.push((x, y));
        if (x, y) == to {
            return cells;
        }
        let e2 = 2 * err;
        if e2 >= dy {
            err += dy;
            x += sx;
        }
        if e2 <= dx {
            err += dx;
            y += sy;
        }
    }
}

fn reference_visible(game: &Ostibot, team: u8, cell: (i32, i32)) -> bool {
    let world = game.world();
    let blocks = |(x, y): (i32, i32)| {
        world.terrain_at(Pos::new(x, y)) == Terrain::Wall
            || world.objects().iter().any(|o| o.kind == ObjectKind::Door && o.pos == Pos::new(x, y))
    };
    let clear = |a, b| {
        let line = reference_line(a, b);
        line[1..line.len().saturating_sub(1).max(1)].iter().all(|c| !blocks(*c))
    };
    let mut viewers: Vec<((i32, i32), i64)> = world
        .adventurers()
        .iter()
        .filter(|a| a.team == team)
        .map(|a| {
            let bonus: i64 =
                a.equipment.iter().flatten().map(|item| world.rules().items[world.item_type(*item)].vision).sum();
            ((a.pos.x, a.pos.y), 5 + bonus)
        })
        .collect();
    let map = world.map();
    for y in 0..map.height {
        for x in 0..map.width {
            if world.terrain_at(Pos::new(x, y)) == Terrain::Spawner(team) {
                viewers.push(((x, y), 5));
            }
        }
    }
    viewers.iter().any(|&(v, r)| {
        let (dx, dy) = (i64::from(cell.0 - v.0), i64::from(cell.1 - v.1));
        dx * dx + dy * dy <= r * r && (v == cell || clear(v, cell) || clear(cell, v))
    })
}

/// Checks every team's observation: own adventurers always there, everything else
/// exactly when its cell is visible.
fn check_views(game: &Ostibot) -> Result<(), TestCaseError> {
    let teams = game.world().map().teams();
    for seat in 0..teams {
        let team = seat as u8 + 1;
        let view = observation(game, seat);
        if view["call"] != "play" {
            continue;
        }
        let entities = view.pointer("/input/gameState/entities").and_then(Value::as_array).cloned().unwrap_or_default();
        for entity in &entities {
            let cell = (entity["x"].as_i64().unwrap_or(-1) as i32, entity["y"].as_i64().unwrap_or(-1) as i32);
            let own = entity["type"] == "adventurer" && entity["team"] == team;
            prop_assert!(own || reference_visible(game, team, cell), "team {team} sees {entity} out of sight");
            if entity["type"] == "adventurer" {
                prop_assert_eq!(entity.get("gold").is_some(), own, "only own adventurers show gold");
            }
        }
        // Completeness: every map object, pile and item in sight is listed.
        let world = game.world();
        let listed = |id: String| entities.iter().any(|entity| entity["id"] == id.as_str());
        for o in world.objects() {
            if reference_visible(game, team, (o.pos.x, o.pos.y)) {
                let id = format!("e{}", o.id);
                prop_assert!(listed(id.clone()), "team {} misses {}", team, id);
            }
        }
        for a in world.adventurers() {
            if a.team == team || reference_visible(game, team, (a.pos.x, a.pos.y)) {
                let id = format!("a{}", a.id);
                prop_assert!(listed(id.clone()), "team {} misses {}", team, id);
            }
        }
        for pile in world.gold_piles() {
            if reference_visible(game, team, (pile.pos.x, pile.pos.y)) {
                let id = format!("g{}", pile.id);
                prop_assert!(listed(id.clone()), "team {} misses {}", team, id);
            }
        }
    }
    Ok(())
}

proptest! {
    // A fixed seed: the same cases on every run.
    #![proptest_config(ProptestConfig {
        cases: 24,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x0057_1b07),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// No observation ever holds an entity outside its team's vision, on any map, at
    /// any point of a match between random bots.
    #[test]
    fn observations_hold_only_what_the_team_sees(map in 0usize..7, seed in any::<u64>(), steps in 1usize..160) {
        let files = map_files();
        let (_, text) = &files[map % files.len()];
        let teams = OstibotMap::parse(text).expect("valid").teams();
        let rules = OstibotRules { corruption_start_at: 12, ..OstibotRules::default() };
        let mut game = Ostibot::new(rules, Some(text), &players(teams), seed).expect("playable");
        let mut bots: Vec<_> = (0..teams).map(|seat| builtin::create(GameKind::Ostibot, "random", seed, seat).expect("random")).collect();
        for _ in 0..steps {
            if game.is_over() {
                break;
            }
            check_views(&game)?;
            let seats = game.to_act();
            let replies: Vec<(usize, String)> = seats.iter().map(|&seat| (seat, bots[seat].reply(&game, seat))).collect();
            let lines: Vec<(usize, &str)> = replies.iter().map(|(seat, line)| (*seat, line.as_str())).collect();
            step(&mut game, &lines);
        }
        check_views(&game)?;
    }

    /// The engine's line is the spec's line, both ways.
    #[test]
    fn the_engine_draws_the_spec_line(x0 in -20i32..20, y0 in -20i32..20, x1 in -20i32..20, y1 in -20i32..20) {
        let cells: Vec<(i32, i32)> = vision::line(Pos::new(x0, y0), Pos::new(x1, y1)).iter().map(|p| (p.x, p.y)).collect();
        prop_assert_eq!(cells, reference_line((x0, y0), (x1, y1)));
    }
}

/// A tiny deterministic generator for hostile replies.
struct Junk(u64);

impl Junk {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick(&mut self, options: &[Value]) -> Value {
        options[self.below(options.len())].clone()
    }

    fn adventurer_id(&mut self) -> Value {
        self.pick(&[
            json!("a1"),
            json!("a2"),
            json!("a3"),
            json!("a4"),
            json!("a5"),
            json!("a6"),
            json!("a0"),
            json!("a99999999999999999999"),
            json!("A1"),
            json!("a01"),
            json!(1),
            json!(-1),
            json!(1e300),
            json!(null),
            json!(["a1"]),
            json!({ "id": "a1" }),
            json!(""),
        ])
    }

    fn item_id(&mut self) -> Value {
        let n = self.below(12);
        self.pick(&[
            json!(format!("i{n}")),
            json!(format!("i{n}")),
            json!(n),
            json!("i4294967296"),
            json!(null),
            json!(true),
        ])
    }

    fn play_entry(&mut self) -> Value {
        let id = self.adventurer_id();
        let direction = self.pick(&[
            json!("UP"),
            json!("DOWN"),
            json!("LEFT"),
            json!("RIGHT"),
            json!("up"),
            json!(0),
            json!(null),
            json!(["UP"]),
        ]);
        let item = self.item_id();
        match self.below(7) {
            0..=2 => json!({ "adventurerId": id, "move": { "direction": direction, "reason": 1e300 } }),
            3 => json!({ "adventurerId": id, "use": { "itemId": item, "reason": "r".repeat(300) } }),
            4 => json!({ "adventurerId": id, "move": { "direction": direction }, "use": { "itemId": item } }),
            5 => json!({ "adventurerId": id, "move": direction, "use": null }),
            _ => self.pick(&[json!(null), json!(7), json!("a1"), json!([]), json!({})]),
        }
    }

    fn shop_entry(&mut self) -> Value {
        let id = self.adventurer_id();
        let other = self.adventurer_id();
        let item = self.item_id();
        let item_type = self.pick(&[
            json!("rusty_sword"),
            json!("plate_armor"),
            json!("big_boots"),
            json!("health_potion"),
            json!("scouts_binocular"),
            json!("Rusty_Sword"),
            json!(3),
            json!(null),
        ]);
        let equip = self.pick(&[json!(true), json!(false), json!(null), json!("yes"), json!(1)]);
        match self.below(7) {
            0 | 1 => json!({ "buy": { "adventurerId": id, "itemType": item_type, "equip": equip } }),
            2 => json!({ "sell": { "adventurerId": id, "itemId": item } }),
            3 => json!({ "equip": { "adventurerId": id, "itemId": item } }),
            4 => json!({ "unequip": { "adventurerId": id, "itemId": item } }),
            5 => json!({ "transfer": { "from": id, "to": other, "itemId": item } }),
            _ => self.pick(&[json!({ "buy": null, "sell": {} }), json!({ "buy": 5 }), json!([]), json!(null)]),
        }
    }

    fn reply(&mut self, call: &str, seq: u64) -> BotReply {
        let entries: Vec<Value> =
            (0..self.below(8)).map(|_| if call == "shop" { self.shop_entry() } else { self.play_entry() }).collect();
        let seq = self.pick(&[json!(seq), json!(seq), json!(seq), json!(null), json!(seq + 1), json!("x")]);
        match self.below(12) {
            0 => BotReply::Line("not json".into()),
            1 => BotReply::Line("[1,2,3]".into()),
            2 => BotReply::Line(r#"{"actions":{"adventurerId":"a1"}}"#.into()),
            3 => BotReply::Line(r#"{"actions":[],"state":1e999}"#.into()),
            4 => BotReply::Timeout,
            5 => BotReply::Unreadable,
            6 => BotReply::Line(
                json!({ "seq": seq, "actions": entries, "state": { "n": 18446744073709551615u64 } }).to_string(),
            ),
            _ => BotReply::Line(json!({ "seq": seq, "actions": entries, "error": [1], "state": null }).to_string()),
        }
    }
}

/// Plays a whole match of hostile replies; returns the replay lines.
fn hostile_match(map: &str, seed: u64) -> Vec<String> {
    let teams = OstibotMap::parse(map).expect("valid").teams();
    let rules =
        json!({ "corruptionStartAt": 6, "corruptionSpreadSpeed": 1, "maxTurnsPerRound": 30, "startingGold": 40 });
    let setup = farm_engine::MatchSetup::new(GameKind::Ostibot, &rules, Some(map.to_owned()), seed, players(teams))
        .expect("valid setup");
    let mut game = farm_engine::Match::new(setup).expect("valid");
    let mut junk = Junk(seed | 1);
    let mut lines = vec![game.header_line()];
    while !game.is_over() {
        let replies = game
            .requests()
            .into_iter()
            .map(|(seat, request)| {
                let call: Value = serde_json::from_str(&request).expect("requests are JSON");
                let seq = call["seq"].as_u64().expect("a seq");
                (seat, junk.reply(call["call"].as_str().unwrap_or(""), seq))
            })
            .collect();
        lines.push(game.submit(replies).expect("replies match the requests").to_owned());
        if let AnyGame::Ostibot(ostibot) = game.game() {
            for team in 1..=teams as u8 {
                assert!(ostibot.world().bank(team) >= 0, "team {team}'s bank went negative");
            }
        }
    }
    lines.push(game.footer_line());
    lines
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 16,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x0b07_f00d),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Malformed JSON, wrong types, huge numbers, unknown and enemy ids, duplicates,
    /// stale seqs, timeouts: the engine never panics, banks stay at 0 or more, and the
    /// same replies give the same replay.
    #[test]
    fn hostile_replies_never_panic_and_replay_the_same(map in 0usize..7, seed in any::<u64>()) {
        let files = map_files();
        let (_, text) = &files[map % files.len()];
        let first = hostile_match(text, seed);
        let second = hostile_match(text, seed);
        prop_assert_eq!(first, second);
    }
}
