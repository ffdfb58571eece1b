//! Scenario tests of the Vindinium rules (`shared/games/vindinium.md`), played on
//! small maps written in the map file format and observed through the state document
//! each bot receives; plus properties of the map generator over many seeds.

use std::collections::VecDeque;

use farm_engine::vindinium::generator::{self, GeneratorConfig};
use farm_engine::vindinium::{Dir, Tile, Vindinium, VindiniumAction, VindiniumMap, VindiniumRules, neighbors};
use farm_engine::{BotReply, Game, GameRng, PlayerStatus, Pos};
use serde_json::Value;

const M1: &str = include_str!("../../maps/vindinium/m1.txt");

/// A map file from its rows (two characters per tile).
fn map(rows: &[&str]) -> String {
    rows.iter().map(|row| format!("{row}\n")).collect()
}

fn players() -> Vec<String> {
    ["alaric", "luther", "thorfinn", "york"].map(String::from).to_vec()
}

fn new_game(rules: VindiniumRules, map_text: &str) -> Vindinium {
    Vindinium::new(rules, Some(map_text), &players(), 42).expect("a valid test map")
}

fn game_on(rows: &[&str]) -> Vindinium {
    new_game(VindiniumRules::default(), &map(rows))
}

/// The state document `seat` would receive now.
fn state(game: &Vindinium, seat: usize) -> Value {
    serde_json::from_str(&game.observation(seat)).expect("the state document is JSON")
}

/// What the state document says about one hero.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HeroView {
    pos: (i64, i64),
    life: i64,
    gold: i64,
    mines: i64,
    last_dir: Option<String>,
    crashed: bool,
}

fn hero(game: &Vindinium, id: usize) -> HeroView {
    let doc = &state(game, 0)["game"]["heroes"][id - 1];
    assert_eq!(doc["id"], id, "heroes are listed in id order");
    let int = |value: &Value| value.as_i64().expect("an integer");
    HeroView {
        pos: (int(&doc["pos"]["x"]), int(&doc["pos"]["y"])),
        life: int(&doc["life"]),
        gold: int(&doc["gold"]),
        mines: int(&doc["mineCount"]),
        last_dir: doc.get("lastDir").map(|dir| dir.as_str().expect("lastDir is a string").to_owned()),
        crashed: doc["crashed"].as_bool().expect("crashed is a bool"),
    }
}

/// `(pos, life, gold, mineCount)` of a hero: the usual thing to check.
fn stats(game: &Vindinium, id: usize) -> ((i64, i64), i64, i64, i64) {
    let view = hero(game, id);
    (view.pos, view.life, view.gold, view.mines)
}

/// The two characters of the `tiles` string at row `x`, column `y`.
fn tile(game: &Vindinium, x: usize, y: usize) -> String {
    let doc = state(game, 0);
    let size = doc["game"]["board"]["size"].as_u64().expect("size") as usize;
    let tiles = doc["game"]["board"]["tiles"].as_str().expect("tiles");
    tiles[2 * (x * size + y)..2 * (x * size + y) + 2].to_owned()
}

fn rng() -> GameRng {
    GameRng::new(42, GameRng::RULES)
}

/// Plays one move: `reply` from the hero whose turn it is, or nothing when the rules
/// play that turn (a crashed hero).
fn step(game: &mut Vindinium, reply: BotReply) {
    let actions: Vec<(usize, VindiniumAction)> =
        game.to_act().into_iter().map(|seat| (seat, game.parse_reply(seat, &reply))).collect();
    game.apply(actions, &mut rng());
}

fn say(game: &mut Vindinium, dir: &str) {
    step(game, BotReply::Line(dir.to_owned()));
}

/// Plays `moves` single moves. Hero k's move in round r (turn 4r + k − 1) is the
/// r-th letter of `scripts[k − 1]`: N, E, S or W; anything else, or past the end of
/// the script, is Stay.
fn play(game: &mut Vindinium, scripts: [&str; 4], moves: usize) {
    for _ in 0..moves {
        let turn = game.turn() as usize;
        let letter = scripts[turn % 4].as_bytes().get(turn / 4).copied().unwrap_or(b'.');
        let dir = match letter {
            b'N' => "North",
            b'E' => "East",
            b'S' => "South",
            b'W' => "West",
            _ => "Stay",
        };
        say(game, dir);
    }
}

const STAY: [&str; 4] = ["", "", "", ""];

// ---------------------------------------------------------------------------
// Moving
// ---------------------------------------------------------------------------

/// Hero 1 alone in the top-left room; the others apart in the bottom row.
const ROOM: [&str; 5] = [
    "@1        ", //
    "##        ", //
    "          ", //
    "##########", //
    "@2##@3##@4", //
];

#[test]
fn a_move_changes_x_the_row_or_y_the_column() {
    let mut game = game_on(&ROOM);
    assert_eq!(hero(&game, 1).pos, (0, 0));
    say(&mut game, "East");
    assert_eq!(hero(&game, 1).pos, (0, 1));
    play(&mut game, STAY, 3);
    say(&mut game, "South");
    assert_eq!(hero(&game, 1).pos, (1, 1), "South is x + 1");
    play(&mut game, STAY, 3);
    say(&mut game, "East");
    assert_eq!(hero(&game, 1).pos, (1, 2));
    play(&mut game, STAY, 3);
    say(&mut game, "North");
    assert_eq!(hero(&game, 1).pos, (0, 2), "North is x − 1");
    play(&mut game, STAY, 3);
    say(&mut game, "West");
    assert_eq!(hero(&game, 1).pos, (0, 1), "West is y − 1");
    assert_eq!(hero(&game, 1).last_dir.as_deref(), Some("West"));
    assert_eq!(tile(&game, 0, 1), "@1");
    assert_eq!(tile(&game, 0, 2), "  ");
    assert_eq!(game.turn(), 17);
}

#[test]
fn walls_and_the_board_edge_stop_a_move() {
    let mut game = game_on(&ROOM);
    for (dir, why) in [("North", "off the board"), ("West", "off the board"), ("South", "wood")] {
        say(&mut game, dir);
        let view = hero(&game, 1);
        assert_eq!(view.pos, (0, 0), "{dir}: {why}");
        assert_eq!(view.last_dir.as_deref(), Some(dir), "a blocked move still sets lastDir");
        play(&mut game, STAY, 3);
    }
    // The hero stayed on the board and lost only thirst.
    assert_eq!(hero(&game, 1).life, 97);
}

#[test]
fn a_hero_cannot_enter_another_heros_cell_but_hits_it() {
    let mut game = game_on(&[
        "@1@2######", //
        "##########", //
        "##########", //
        "##########", //
        "@3######@4", //
    ]);
    say(&mut game, "East");
    assert_eq!(stats(&game, 1), ((0, 0), 99, 0, 0));
    assert_eq!(stats(&game, 2), ((0, 1), 80, 0, 0), "hit once by hero 1, not yet thirsty");
    assert_eq!(tile(&game, 0, 1), "@2");
}

#[test]
fn heroes_move_in_turn_and_hero_k_first_sees_turn_k_minus_1() {
    let mut game = new_game(VindiniumRules::default(), M1);
    for seat in 0..4 {
        assert_eq!(game.to_act(), [seat]);
        let doc = state(&game, seat);
        assert_eq!(doc["game"]["turn"], seat);
        assert_eq!(doc["hero"]["id"], seat + 1);
        assert_eq!(doc["token"], format!("seat{seat}"));
        say(&mut game, "Stay");
    }
    assert_eq!(game.to_act(), [0]);
    assert_eq!(state(&game, 0)["game"]["turn"], 4);
}

// ---------------------------------------------------------------------------
// Taverns
// ---------------------------------------------------------------------------

/// Hero 1 between a tavern (West) and three neutral mines (North, East, South).
const TAVERN: [&str; 5] = [
    "####$-####", //
    "##[]@1$-##", //
    "####$-####", //
    "@2######@3", //
    "####@4####", //
];

#[test]
fn a_tavern_needs_two_gold_costs_two_and_gives_fifty_life_up_to_100() {
    let mut game = game_on(&TAVERN);
    // Round by round: hero 1's move and its (pos, life, gold, mineCount) after it.
    let expected = [
        ("West", 99, 0, 0),  // 0 gold: nothing but thirst
        ("North", 78, 1, 1), // goblin −20, thirst −1, the new mine pays 1
        ("West", 77, 2, 1),  // 1 gold: still nothing
        ("East", 56, 4, 2),
        ("South", 35, 7, 3),
        ("West", 84, 8, 3),  // 7 − 2 gold, 35 + 50 life; then thirst and 3 gold
        ("West", 99, 9, 3),  // 84 + 50 capped at 100
        ("West", 99, 10, 3), // 99 → 100 still costs 2
    ];
    for (round, (dir, life, gold, mines)) in expected.into_iter().enumerate() {
        say(&mut game, dir);
        assert_eq!(stats(&game, 1), ((1, 2), life, gold, mines), "round {round}: {dir}");
        play(&mut game, STAY, 3);
    }
    assert_eq!(tile(&game, 1, 1), "[]", "the tavern is unchanged");
    for (x, y) in [(0, 2), (1, 3), (2, 2)] {
        assert_eq!(tile(&game, x, y), "$1");
    }
}

/// Hero 1 starts between a tavern (West) and an empty cell (East), with a neutral mine
/// below it; hero 2 stands just beyond the empty cell.
const DUEL: [&str; 6] = [
    "[]@1  @2####", //
    "##$-########", //
    "############", //
    "############", //
    "@3##########", //
    "##########@4", //
];

/// On [`DUEL`], hero 1 takes the mine, steps next to hero 2 and trades blows until hero 2
/// kills it on turn 17. Returns the game after turn 19, when hero 1 is to move.
fn duel_until_hero_1_dies() -> Vindinium {
    let mut game = game_on(&DUEL);
    play(&mut game, ["SE", "", "", ""], 20);
    assert_eq!(game.to_act(), [0]);
    game
}

#[test]
fn a_kill_takes_the_victims_mines_and_the_victim_keeps_its_gold() {
    let mut game = game_on(&DUEL);
    play(&mut game, ["SE", "", "", ""], 18);
    // Hero 1: goblin on turn 0 (80 → 79), then thirst and 20 per hit by hero 2 on turns
    // 5, 9, 13: 15 after turn 16. Hero 2 was hit on turns 4, 8, 12, 16: 16 → 15 now.
    // Hero 2's hit on turn 17 kills hero 1.
    assert_eq!(stats(&game, 1), ((0, 1), 100, 5, 0), "respawned at its start, gold kept");
    assert_eq!(stats(&game, 2), ((0, 3), 15, 1, 1), "took the mine, which paid at once");
    assert_eq!(tile(&game, 1, 1), "$2");
    assert_eq!(tile(&game, 0, 1), "@1");
    assert_eq!(tile(&game, 0, 2), "  ");
}

#[test]
fn a_tavern_charges_two_gold_even_at_full_life_and_the_hero_stays() {
    let mut game = duel_until_hero_1_dies();
    assert_eq!(stats(&game, 1), ((0, 1), 100, 5, 0));
    say(&mut game, "West");
    assert_eq!(stats(&game, 1), ((0, 1), 99, 3, 0));
}

// ---------------------------------------------------------------------------
// Mines
// ---------------------------------------------------------------------------

#[test]
fn a_mine_goblin_costs_20_life_and_a_survivor_takes_the_mine() {
    let mut game = game_on(&[
        "##########", //
        "##@1$-####", //
        "##$2######", //
        "@2##@3##@4", //
        "##########", //
    ]);
    assert_eq!(hero(&game, 2).mines, 1, "owned mines in the map file belong to the hero");
    say(&mut game, "East");
    assert_eq!(stats(&game, 1), ((1, 1), 79, 1, 1), "stays put; −20 −1, then the mine pays");
    assert_eq!(tile(&game, 1, 2), "$1");
    play(&mut game, STAY, 3);
    say(&mut game, "East");
    assert_eq!(stats(&game, 1), ((1, 1), 78, 2, 1), "its own mine: no goblin");
    play(&mut game, STAY, 3);
    say(&mut game, "South");
    assert_eq!(stats(&game, 1), ((1, 1), 57, 4, 2), "an enemy's mine fights like a neutral one");
    assert_eq!(tile(&game, 2, 1), "$1");
    assert_eq!(hero(&game, 2).mines, 0);
    assert_eq!(hero(&game, 2).gold, 2, "hero 2's mine paid it on turns 1 and 5");
}

/// Hero 1 walks a corridor of mines (row 1) and dies on the goblin of hero 4's mine at
/// (0, 3) on turn 28. Meanwhile hero 2 (mine at (3, 1)) stands on hero 1's start and hero
/// 3 (mine at (5, 1)) on hero 2's start, so the respawn telefrags down the chain.
const CHAIN: [&str; 8] = [
    "##$-$-$4########", //
    "@1      ########", //
    "  $-$-##########", //
    "@2$-############", //
    "  ##############", //
    "@3$-############", //
    "################", //
    "##############@4", //
];
const CHAIN_SCRIPTS: [&str; 4] = ["ENSENSEN", "EN.N", "EN.N", ""];

#[test]
fn dying_on_a_goblin_neutralises_the_heros_mines_and_respawns_it() {
    let mut game = game_on(&CHAIN);
    play(&mut game, CHAIN_SCRIPTS, 28);
    assert_eq!(stats(&game, 1), ((1, 3), 13, 16, 4), "four mines taken on the way, 13 life left");
    assert_eq!(stats(&game, 2), ((1, 0), 73, 7, 1));
    assert_eq!(stats(&game, 3), ((3, 0), 73, 7, 1));
    play(&mut game, CHAIN_SCRIPTS, 1);
    // Hero 1's four mines are neutral again; the mine it attacked keeps its owner.
    for (x, y) in [(0, 1), (0, 2), (2, 1), (2, 2)] {
        assert_eq!(tile(&game, x, y), "$-", "({x}, {y})");
    }
    assert_eq!(tile(&game, 0, 3), "$4");
    // Back at its own start with its gold, and thirsty once more (100 → 99).
    let view = hero(&game, 1);
    assert_eq!((view.pos, view.life, view.last_dir.as_deref()), ((1, 0), 99, Some("North")));
}

#[test]
fn a_respawn_onto_a_hero_telefrags_it_takes_its_mines_and_chains() {
    let mut game = game_on(&CHAIN);
    play(&mut game, CHAIN_SCRIPTS, 29);
    // Hero 1 respawned onto hero 2 and took its mine at (3, 1), which paid at once:
    // 16 + 1 gold. Hero 2 respawned onto hero 3 and took (5, 1). Hero 3 respawned
    // at its own start, which was free. Each respawns at its OWN start (decision V-6).
    assert_eq!(stats(&game, 1), ((1, 0), 99, 17, 1));
    assert_eq!(stats(&game, 2), ((3, 0), 100, 7, 1));
    assert_eq!(stats(&game, 3), ((5, 0), 100, 7, 0));
    assert_eq!(tile(&game, 3, 1), "$1");
    assert_eq!(tile(&game, 5, 1), "$2");
    // Hero 2 plays on normally: its new mine pays on its own move.
    play(&mut game, CHAIN_SCRIPTS, 1);
    assert_eq!(stats(&game, 2), ((3, 0), 99, 8, 1));
}

// ---------------------------------------------------------------------------
// Fights
// ---------------------------------------------------------------------------

#[test]
fn the_mover_hits_every_adjacent_enemy_and_only_the_mover_attacks() {
    let mut game = game_on(&[
        "##########", //
        "####@2####", //
        "####@1@3##", //
        "####@4####", //
        "##########", //
    ]);
    say(&mut game, "Stay");
    assert_eq!(hero(&game, 1).life, 99, "nobody hits back during hero 1's move");
    for id in 2..=4 {
        assert_eq!(hero(&game, id).life, 80, "hero {id}");
    }
    assert_eq!(hero(&game, 1).last_dir.as_deref(), Some("Stay"));
    say(&mut game, "Stay");
    // Hero 2 hits its only neighbour, hero 1; heroes 3 and 4 are untouched.
    assert_eq!([1, 2, 3, 4].map(|id| hero(&game, id).life), [79, 79, 80, 80]);
}

#[test]
fn fights_go_north_east_south_west_and_stop_when_the_victim_respawns_onto_the_attacker() {
    // Hero 2 leaves its start (2, 2) and loses life to three goblins; hero 1 then steps
    // onto hero 2's start with hero 3 to the North, hero 2 (16 life) to the South and
    // hero 4 to the West.
    let mut game = game_on(&[
        "##########", //
        "####@3####", //
        "##@4@2@1##", //
        "##$-  $-##", //
        "####$-####", //
    ]);
    let scripts = ["....W", "SWES", "", ""];
    play(&mut game, scripts, 16);
    assert_eq!(stats(&game, 2), ((3, 2), 16, 6, 3), "hit once by hero 1 on turn 0, three goblins");
    assert_eq!([3, 4].map(|id| hero(&game, id).life), [96, 96]);
    play(&mut game, scripts, 1);
    // North first: hero 3 is hit. South: hero 2 dies; hero 1 takes its three mines,
    // then hero 2 respawns onto hero 1, takes them all back and sends hero 1 to its
    // own start. West: no attack, hero 1 has respawned.
    assert_eq!(hero(&game, 3).life, 76);
    assert_eq!(hero(&game, 4).life, 96);
    assert_eq!(stats(&game, 2), ((2, 2), 100, 6, 3));
    assert_eq!(stats(&game, 1), ((2, 3), 99, 0, 0), "respawned, then thirst; no mine left to pay");
    for (x, y) in [(3, 1), (3, 3), (4, 2)] {
        assert_eq!(tile(&game, x, y), "$2");
    }
}

#[test]
fn a_hero_respawned_by_a_telefrag_this_turn_is_not_hit_where_it_landed() {
    // Hero 1 (3, 2) steps East into (3, 3). North of it is hero 2 with 12 life; South,
    // on hero 2's start (4, 3), stands hero 3. Killing hero 2 respawns it onto hero 3,
    // who is telefragged to its own start (5, 3). The later South attack must skip
    // hero 3: it respawned this turn.
    let mut game = game_on(&[
        "@4############", //
        "########$-####", //
        "######    $-##", //
        "####@1    ####", //
        "######@2  $-##", //
        "####$-@3$-####", //
        "##############", //
    ]);
    let scripts = ["........E", "ESENNNEW", "W..N", ""];
    play(&mut game, scripts, 32);
    assert_eq!(stats(&game, 2), ((2, 3), 12, 18, 4));
    assert_eq!(stats(&game, 3), ((4, 3), 72, 8, 1));
    play(&mut game, scripts, 1);
    assert_eq!(stats(&game, 1), ((3, 3), 91, 4, 4), "took hero 2's four mines");
    assert_eq!(stats(&game, 2), ((4, 3), 100, 18, 1), "respawned onto hero 3 and took its mine");
    assert_eq!(stats(&game, 3), ((5, 3), 100, 8, 0), "telefragged, and not hit afterwards");
    for (x, y) in [(1, 4), (2, 5), (4, 5), (5, 4)] {
        assert_eq!(tile(&game, x, y), "$1");
    }
    assert_eq!(tile(&game, 5, 2), "$2");
}

// ---------------------------------------------------------------------------
// Thirst and mining
// ---------------------------------------------------------------------------

/// Heroes 1 and 2 each next to a neutral mine, all four walled apart.
const MINERS: [&str; 5] = [
    "@1$-######", //
    "##########", //
    "@2$-######", //
    "##########", //
    "@3####@4##", //
];

#[test]
fn thirst_costs_one_life_per_own_move_but_never_below_1() {
    let mut game = game_on(&MINERS);
    for moves in 1..=101 {
        play(&mut game, STAY, 1);
        assert_eq!(hero(&game, 1).life, (100 - moves).max(1), "after hero 1's move {moves}");
        play(&mut game, STAY, 3);
        assert_eq!(hero(&game, 1).life, (100 - moves).max(1), "only its own moves make it thirsty");
    }
}

#[test]
fn mines_pay_one_gold_each_on_the_owners_own_moves() {
    let mut game = game_on(&MINERS);
    play(&mut game, ["E", "E", "", ""], 2);
    assert_eq!([1, 2].map(|id| hero(&game, id).gold), [1, 1]);
    play(&mut game, STAY, 2);
    assert_eq!([1, 2].map(|id| hero(&game, id).gold), [1, 1], "others' moves pay nothing");
    play(&mut game, STAY, 1);
    assert_eq!(hero(&game, 1).gold, 2);
    assert_eq!(hero(&game, 1).life, 78);
}

// ---------------------------------------------------------------------------
// Crashed heroes
// ---------------------------------------------------------------------------

#[test]
fn a_crashed_hero_is_played_as_stay_and_still_attacks_mines_and_thirsts() {
    let mut game = game_on(&[
        "##########", //
        "##@1$-####", //
        "##@2######", //
        "@3######@4", //
        "##########", //
    ]);
    say(&mut game, "East");
    assert_eq!(stats(&game, 1), ((1, 1), 79, 1, 1));
    assert_eq!(hero(&game, 2).life, 80);

    // Turn 1: hero 2 times out. It crashes: no move, no attack, no lastDir, but its
    // turn still ends with thirst.
    step(&mut game, BotReply::Timeout);
    let two = hero(&game, 2);
    assert!(two.crashed);
    assert_eq!((two.life, two.last_dir), (79, None));
    assert_eq!(hero(&game, 1).life, 79, "a crash does not attack");
    assert_eq!(game.turn(), 2);
    play(&mut game, STAY, 2);

    // Turn 4: hero 1's bot goes away. Its lastDir stays what it was.
    assert_eq!(game.to_act(), [0]);
    step(&mut game, BotReply::Crashed);
    assert_eq!(stats(&game, 1), ((1, 1), 78, 2, 1), "the crash turn still thirsts and mines");
    assert_eq!(hero(&game, 1).last_dir.as_deref(), Some("East"));
    assert!(hero(&game, 1).crashed);

    // Turn 5: the rules play hero 2: nobody is asked, and its Stay hits hero 1.
    assert!(game.to_act().is_empty());
    game.apply(vec![], &mut rng());
    assert_eq!(hero(&game, 1).life, 58);
    assert_eq!(hero(&game, 2).life, 78);
    assert_eq!(hero(&game, 2).last_dir.as_deref(), Some("Stay"));
    assert_eq!(game.to_act(), [2]);
    play(&mut game, STAY, 2);

    // Turn 8: hero 1 is played as Stay: it hits hero 2, mines and thirsts.
    assert!(game.to_act().is_empty());
    game.apply(vec![], &mut rng());
    assert_eq!(stats(&game, 1), ((1, 1), 57, 3, 1));
    assert_eq!(hero(&game, 1).last_dir.as_deref(), Some("Stay"));
    assert_eq!(hero(&game, 2).life, 58);
    assert!(!game.is_over());

    let statuses: Vec<PlayerStatus> = game.outcome().iter().map(|outcome| outcome.status).collect();
    assert_eq!(statuses, [PlayerStatus::Crashed, PlayerStatus::TimedOut, PlayerStatus::Ok, PlayerStatus::Ok]);
}

#[test]
fn a_reply_for_a_crashed_hero_is_ignored() {
    let mut game = game_on(&ROOM);
    step(&mut game, BotReply::Timeout);
    play(&mut game, STAY, 3);
    // Even handed an action, the rules play Stay for a crashed hero.
    game.apply(vec![(0, VindiniumAction::Move(Dir::East))], &mut rng());
    assert_eq!(hero(&game, 1).pos, (0, 0));
    assert_eq!(hero(&game, 1).last_dir.as_deref(), Some("Stay"));
}

#[test]
fn all_four_crashed_ends_the_game_without_counting_the_last_crash() {
    let mut game = new_game(VindiniumRules::default(), M1);
    for seat in 0..3 {
        step(&mut game, if seat % 2 == 0 { BotReply::Timeout } else { BotReply::Crashed });
        assert!(!game.is_over());
    }
    assert_eq!(game.turn(), 3);
    step(&mut game, BotReply::Timeout);
    assert!(game.is_over());
    assert!(game.to_act().is_empty());
    assert_eq!(game.turn(), 3, "the crash that ends the game does not increment turn");
    let doc = state(&game, 3);
    assert_eq!(doc["game"]["finished"], true);
    assert_eq!(doc["game"]["turn"], 3);
    // The spec's doMove runs finalize for every crash, this one included.
    assert_eq!([1, 2, 3, 4].map(|id| hero(&game, id).life), [99; 4]);
    // Nothing more happens.
    game.apply(vec![], &mut rng());
    assert_eq!(game.turn(), 3);
    assert_eq!(hero(&game, 1).life, 99);
}

// ---------------------------------------------------------------------------
// End of the game and ranks
// ---------------------------------------------------------------------------

#[test]
fn the_game_ends_after_max_turns_moves() {
    let mut game = new_game(VindiniumRules { max_turns: 6, ..Default::default() }, M1);
    assert_eq!(game.max_steps(), 6);
    play(&mut game, STAY, 5);
    assert!(!game.is_over());
    assert_eq!(game.to_act(), [1]);
    play(&mut game, STAY, 1);
    assert!(game.is_over());
    assert!(game.to_act().is_empty());
    assert_eq!(game.turn(), 6);
    assert_eq!(state(&game, 0)["game"]["finished"], true);
    game.apply(vec![(2, VindiniumAction::Move(Dir::Stay))], &mut rng());
    assert_eq!(game.turn(), 6, "no move after the end");
}

#[test]
fn ranks_follow_gold_and_ties_share_a_rank() {
    // Decision V-2. Heroes 1 and 2 each take a mine on their first move.
    let mut game = new_game(VindiniumRules { max_turns: 8, ..Default::default() }, &map(&MINERS));
    play(&mut game, ["E", "E", "", ""], 8);
    assert!(game.is_over());
    let outcome: Vec<(i64, u32)> = game.outcome().iter().map(|o| (o.score, o.rank)).collect();
    assert_eq!(outcome, [(2, 1), (2, 1), (0, 3), (0, 3)]);

    let mut game = new_game(VindiniumRules { max_turns: 5, ..Default::default() }, &map(&MINERS));
    play(&mut game, ["E", "E", "", ""], 5);
    assert!(game.is_over());
    let outcome: Vec<(i64, u32)> = game.outcome().iter().map(|o| (o.score, o.rank)).collect();
    assert_eq!(outcome, [(2, 1), (1, 2), (0, 3), (0, 3)]);
    assert!(game.outcome().iter().all(|o| o.status == PlayerStatus::Ok));
}

// ---------------------------------------------------------------------------
// Bot I/O
// ---------------------------------------------------------------------------

#[test]
fn directions_are_case_insensitive_java_trimmed_and_may_be_json_strings() {
    let game = new_game(VindiniumRules::default(), M1);
    let parse = |text: &str| game.parse_reply(0, &BotReply::Line(text.to_owned()));
    let cases = [
        ("North", Dir::North),
        ("north", Dir::North),
        ("NORTH", Dir::North),
        ("  south\t", Dir::South),
        ("East\r", Dir::East),
        ("wEsT", Dir::West),
        (r#""North""#, Dir::North),
        (r#" "west" "#, Dir::West),
        ("Stay", Dir::Stay),
        ("stay", Dir::Stay),
        ("", Dir::Stay),
        ("up", Dir::Stay),
        ("N", Dir::Stay),
        ("Northh", Dir::Stay),
        ("North East", Dir::Stay),
        (r#""North"#, Dir::Stay),
        (r#"["North"]"#, Dir::Stay),
        (r#"{"dir":"North"}"#, Dir::Stay),
        // Trimmed as Java's String.trim: control characters go, Unicode spaces stay.
        ("south\x01", Dir::South),
        ("\x00south", Dir::South),
        ("\x0bWEST\x1f", Dir::West),
        ("south\u{a0}", Dir::Stay),
        ("\u{3000}north", Dir::Stay),
        ("east\u{2003}", Dir::Stay),
        ("west\u{85}", Dir::Stay),
    ];
    for (text, dir) in cases {
        assert_eq!(parse(text), VindiniumAction::Move(dir), "{text:?}");
    }
    assert_eq!(game.parse_reply(0, &BotReply::Timeout), VindiniumAction::Crash(PlayerStatus::TimedOut));
    assert_eq!(game.parse_reply(0, &BotReply::Crashed), VindiniumAction::Crash(PlayerStatus::Crashed));
    // Bytes that are not a reply at all are just another string that is not a move.
    assert_eq!(game.parse_reply(0, &BotReply::Unreadable), VindiniumAction::Move(Dir::Stay));
}

#[test]
fn an_unknown_direction_is_played_as_stay_without_crashing() {
    let mut game = game_on(&ROOM);
    say(&mut game, "jump");
    let view = hero(&game, 1);
    assert_eq!((view.pos, view.last_dir.as_deref(), view.crashed), ((0, 0), Some("Stay"), false));
    assert_eq!(game.turn(), 1);
}

/// The `tiles` of m1 in the spec's example state.
const M1_TILES: &str = "##@1    ####    @4##      ########              ####            []        []    $-    ##    ##    $-$-    ##    ##    $-    []        []            ####  @3          ########      ##@2    ####      ##";

#[test]
fn the_state_document_has_the_originals_shape() {
    let mut game = new_game(VindiniumRules::default(), M1);
    let doc = state(&game, 0);
    let keys = |value: &Value| {
        let mut keys: Vec<String> = value.as_object().expect("an object").keys().cloned().collect();
        keys.sort();
        keys
    };
    assert_eq!(keys(&doc), ["game", "hero", "playUrl", "token", "viewUrl"]);
    assert_eq!(keys(&doc["game"]), ["board", "finished", "heroes", "id", "maxTurns", "turn"]);
    assert_eq!(doc["game"]["turn"], 0);
    assert_eq!(doc["game"]["maxTurns"], 1200);
    assert_eq!(doc["game"]["finished"], false);
    assert_eq!(doc["game"]["board"]["size"], 10);
    assert_eq!(doc["game"]["board"]["tiles"], M1_TILES);
    let heroes = doc["game"]["heroes"].as_array().expect("heroes");
    assert_eq!(heroes.len(), 4);
    for (index, hero) in heroes.iter().enumerate() {
        // No lastDir before the first move; no userId or elo for anyone.
        assert_eq!(keys(hero), ["crashed", "gold", "id", "life", "mineCount", "name", "pos", "spawnPos"]);
        assert_eq!(hero["id"], index + 1);
        assert_eq!(hero["name"], players()[index]);
        assert_eq!(hero["life"], 100);
        assert_eq!(hero["gold"], 0);
        assert_eq!(hero["mineCount"], 0);
    }
    // x is the row: hero 2 starts in the bottom row of m1.
    let pos = |index: usize, key: &str| serde_json::json!([heroes[index][key]["x"], heroes[index][key]["y"]]);
    assert_eq!(pos(0, "pos"), serde_json::json!([0, 1]));
    assert_eq!(pos(0, "spawnPos"), serde_json::json!([0, 1]));
    assert_eq!(pos(1, "pos"), serde_json::json!([9, 1]));
    assert_eq!(pos(3, "pos"), serde_json::json!([0, 8]));
    // Decision V-6: hero 3 respawns at its own start (7, 7), not the mirror (9, 8).
    assert_eq!(pos(2, "pos"), serde_json::json!([7, 7]));
    assert_eq!(pos(2, "spawnPos"), serde_json::json!([7, 7]));
    assert_eq!(doc["hero"], heroes[0]);
    assert_eq!(state(&game, 2)["hero"], heroes[2]);

    // After hero 1's first move, it alone carries lastDir, and the tiles show it.
    say(&mut game, "South");
    let doc = state(&game, 1);
    let heroes = doc["game"]["heroes"].as_array().expect("heroes");
    assert_eq!(heroes[0]["lastDir"], "South");
    assert_eq!(heroes[0]["pos"], serde_json::json!({"x": 1, "y": 1}));
    assert!(heroes[1..].iter().all(|hero| hero.get("lastDir").is_none()));
    let tiles = doc["game"]["board"]["tiles"].as_str().expect("tiles");
    assert_eq!(&tiles[2 * 11..2 * 11 + 2], "@1");
    assert_eq!(&tiles[2..4], "  ");
    assert_eq!(doc["hero"]["id"], 2);
}

// ---------------------------------------------------------------------------
// The map generator
// ---------------------------------------------------------------------------

/// The original's `mirrorX`: the rows flipped (its `x` is the row).
fn flip_rows(size: usize, pos: Pos) -> Pos {
    Pos::new(pos.x, size as i32 - 1 - pos.y)
}

/// The original's `mirrorY`: the columns flipped.
fn flip_columns(size: usize, pos: Pos) -> Pos {
    Pos::new(size as i32 - 1 - pos.x, pos.y)
}

/// Air cells reachable from `from` through air.
fn reachable(map: &VindiniumMap, from: Pos) -> Vec<Pos> {
    let mut seen = vec![from];
    let mut queue = VecDeque::from([from]);
    while let Some(pos) = queue.pop_front() {
        for next in neighbors(pos) {
            if map.board.get(next) == Some(Tile::Air) && !seen.contains(&next) {
                seen.push(next);
                queue.push_back(next);
            }
        }
    }
    seen
}

/// A tile with its owner forgotten, for symmetry checks.
fn shape(tile: Option<Tile>) -> Option<Tile> {
    match tile {
        Some(Tile::Mine(_)) => Some(Tile::Mine(None)),
        other => other,
    }
}

#[test]
fn generated_maps_keep_the_generators_promises() {
    for seed in 0..200 {
        let map = generator::generate(&mut GameRng::new(seed, GameRng::MAP)).expect("the generator finds a map");
        let size = map.board.size();
        assert!(size.is_multiple_of(2) && (10..=28).contains(&size), "seed {seed}: size {size}");
        let positions: Vec<Pos> = map.board.positions().collect();

        // Four-way mirror symmetric, mine owners aside.
        for &pos in &positions {
            let tile = shape(map.board.get(pos));
            assert_eq!(tile, shape(map.board.get(flip_rows(size, pos))), "seed {seed}: {pos:?}");
            assert_eq!(tile, shape(map.board.get(flip_columns(size, pos))), "seed {seed}: {pos:?}");
        }

        // Hero 1 at the spawn in the top-left area, the others at its mirrors.
        let spawn = map.starts[0];
        let half = (size / 2 - 2) as i32;
        assert!((0..half).contains(&spawn.x) && (0..half).contains(&spawn.y), "seed {seed}: {spawn:?}");
        assert_eq!(
            map.starts,
            [spawn, flip_rows(size, spawn), flip_rows(size, flip_columns(size, spawn)), flip_columns(size, spawn)],
            "seed {seed}"
        );

        // All starts on air and mutually reachable; every air cell is reachable.
        let reached = reachable(&map, spawn);
        for start in map.starts {
            assert_eq!(map.board.get(start), Some(Tile::Air), "seed {seed}");
            assert!(reached.contains(&start), "seed {seed}: {start:?} unreachable");
        }
        let air = positions.iter().filter(|pos| map.board.get(**pos) == Some(Tile::Air)).count();
        assert_eq!(reached.len(), air, "seed {seed}: walled-off air");

        // Exactly 4 taverns, at least one mine, each next to a reachable air cell.
        let count =
            |wanted: fn(Tile) -> bool| positions.iter().filter(|pos| map.board.get(**pos).is_some_and(wanted)).count();
        assert_eq!(count(|tile| tile == Tile::Tavern), 4, "seed {seed}");
        assert!(count(|tile| matches!(tile, Tile::Mine(_))) >= 1, "seed {seed}");
        assert_eq!(count(|tile| tile == Tile::Mine(None)), count(|tile| matches!(tile, Tile::Mine(_))));
        for &pos in &positions {
            if matches!(map.board.get(pos), Some(Tile::Tavern | Tile::Mine(_))) {
                assert!(neighbors(pos).iter().any(|next| reached.contains(next)), "seed {seed}: {pos:?} is cut off");
            }
        }

        // The map file round-trips, and the same seed gives the same map.
        assert_eq!(VindiniumMap::parse(&map.to_string()).expect("a generated map parses"), map, "seed {seed}");
        let again = generator::generate(&mut GameRng::new(seed, GameRng::MAP)).expect("the same map again");
        assert_eq!(again, map, "seed {seed}");
    }
}

#[test]
fn a_generated_map_is_playable() {
    let map = generator::generate(&mut GameRng::new(3, GameRng::MAP)).expect("a map").to_string();
    let mut game = new_game(VindiniumRules { max_turns: 40, ..Default::default() }, &map);
    play(&mut game, ["ESWN", "NWSE", "SENW", "WNES"], 40);
    assert!(game.is_over());
}

#[test]
fn odd_and_small_sizes_are_rejected() {
    for size in [0, 2, 4, 6, 7, 9, 11, 27] {
        let config = GeneratorConfig { size, wall_percent: 10, mine_percent: 5 };
        let error = generator::generate_with(config, &mut GameRng::new(1, GameRng::MAP)).expect_err("rejected");
        assert_eq!(error.size, size);
    }
    let config = GeneratorConfig { size: 8, wall_percent: 10, mine_percent: 9 };
    let map = generator::generate_with(config, &mut GameRng::new(1, GameRng::MAP)).expect("8 is the smallest size");
    assert_eq!(map.board.size(), 8);
}
