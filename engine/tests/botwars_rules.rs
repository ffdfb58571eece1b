//! Scenario tests of the Skookum Botwars rules (`shared/games/botwars.md`): the
//! original's `tests/test.js` vectors, the behaviour listed as worth a test, the
//! decisions S-2 to S-6, bot I/O and energy spawning.

use farm_engine::botwars::{Botwars, BotwarsAction, BotwarsRules, Winner};
use farm_engine::{BotReply, Game, GameRng, PlayerStatus};

/// The grid of `tests/test.js`: 5 rows × 10 columns, so the spawns are 11 and 38.
fn small_rules() -> BotwarsRules {
    BotwarsRules { rows: 5, cols: 10, energy_every: 0, ..Default::default() }
}

/// A `tests/test.js` position: energy spawning off, both banks empty.
fn position(grid: &str) -> Botwars {
    Botwars::from_position(small_rules(), grid, [0, 0], 7).expect("a valid 5x10 test position")
}

fn moves(list: &[(usize, usize)]) -> BotwarsAction {
    BotwarsAction::Moves(list.iter().map(|&(from, to)| Some((from, to))).collect())
}

/// Plays one turn with these moves for r (seat 0) and b (seat 1).
fn turn(game: &mut Botwars, red: &[(usize, usize)], blue: &[(usize, usize)], rng: &mut GameRng) {
    game.apply(vec![(0, moves(red)), (1, moves(blue))], rng);
}

/// Plays one turn of a position whose rules draw nothing.
fn turn_once(game: &mut Botwars, red: &[(usize, usize)], blue: &[(usize, usize)]) {
    turn(game, red, blue, &mut GameRng::new(7, GameRng::RULES));
}

/// A 50-cell grid, empty but for `cells`.
fn grid(cells: &[(usize, char)]) -> String {
    let mut grid = vec!['.'; 50];
    for &(index, cell) in cells {
        grid[index] = cell;
    }
    grid.into_iter().collect()
}

/// Parses one side's reply as the match would.
fn parse(reply: &str) -> BotwarsAction {
    position(&".".repeat(50)).parse_reply(0, &BotReply::Line(reply.to_owned()))
}

fn disqualified() -> BotwarsAction {
    BotwarsAction::Disqualified(PlayerStatus::Disqualified)
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("the engine writes JSON")
}

/// Cells holding energy.
fn energy_cells(game: &Botwars) -> Vec<usize> {
    game.grid().bytes().enumerate().filter(|(_, cell)| *cell == b'*').map(|(index, _)| index).collect()
}

// ---------------------------------------------------------------------------
// Test vectors from tests/test.js
// ---------------------------------------------------------------------------

#[test]
fn vector_1_botlets_step_off_their_spawns() {
    let mut game = position("...........r..........................b...........");
    turn_once(&mut game, &[(11, 10)], &[(38, 28)]);
    assert_eq!(game.grid(), "..........r.................b.....................");
    assert_eq!(game.winner(), None);
    assert_eq!(game.turns_elapsed(), 1);
}

#[test]
fn vector_2_two_botlets_entering_one_cell_both_die_and_r_wins() {
    let mut game = position("r.......................r..........b..............");
    turn_once(&mut game, &[(24, 25)], &[(35, 25)]);
    // The second mover into the cell is b, so the marker is b's `X`.
    assert_eq!(game.grid(), "r........................X........................");
    assert_eq!(game.winner(), Some(Winner::Seat(0)));
}

#[test]
fn vector_3_a_botlet_between_two_enemies_dies() {
    let mut game = position(".......................r............r.......b.....");
    turn_once(&mut game, &[(23, 33), (36, 35)], &[(44, 34)]);
    assert_eq!(game.grid(), ".................................rXr..............");
    // b has no botlet left: r wins at once (step 8).
    assert_eq!(game.winner(), Some(Winner::Seat(0)));
}

#[test]
fn vector_4_battle_compares_the_enemy_counts_of_each_pair() {
    let mut game = position("................rb......rbr.........b.............");
    turn_once(&mut game, &[], &[]);
    assert_eq!(game.grid(), "................xX......rXx.........b.............");
    assert_eq!(game.winner(), None);
}

#[test]
fn vector_5_battle_in_a_crowd() {
    let mut game = position("................rb......brb.......brb.........rb..");
    turn_once(&mut game, &[], &[]);
    assert_eq!(game.grid(), "................xb......bxX.......bxX.........xb..");
    assert_eq!(game.winner(), Some(Winner::Seat(1)), "r has no botlet left");
}

#[test]
fn vector_6_an_enemy_botlet_on_a_spawn_disables_it() {
    let mut game = position("..........r.b........b............................");
    turn_once(&mut game, &[], &[(12, 11), (21, 20)]);
    assert_eq!(game.grid(), "..........xb........b.............................");
    assert!(game.sides()[0].spawn_disabled, "b stands on r's spawn (11)");
    assert!(!game.sides()[1].spawn_disabled);
    assert_eq!(game.winner(), Some(Winner::Seat(1)), "r has no botlet left");
}

#[test]
fn vector_7_stepping_on_energy_destroys_it_and_touching_it_gathers_it() {
    let mut game = position(".............r.........*...b...................*..");
    turn_once(&mut game, &[(13, 23)], &[(27, 37)]);
    assert_eq!(game.grid(), ".......................r.............b............");
    assert_eq!(game.sides()[0].energy, 0, "r stepped on the energy: no gain");
    assert_eq!(game.sides()[1].energy, 1, "b touches the energy at 47");
}

// ---------------------------------------------------------------------------
// Moves
// ---------------------------------------------------------------------------

#[test]
fn illegal_moves_are_ignored_and_the_botlet_stays() {
    let start = grid(&[(19, 'r'), (22, 'r'), (45, 'b')]);
    let mut game = position(&start);
    turn_once(
        &mut game,
        &[
            (22, 24), // two cells away
            (22, 33), // diagonal
            (19, 20), // would wrap from column 9 to column 0 of the next row
            (45, 44), // b's botlet, not r's
            (0, 1),   // no botlet there
        ],
        &[(22, 21)], // r's botlet, not b's
    );
    assert_eq!(game.grid(), start);
    assert_eq!(game.turns_elapsed(), 1);
}

#[test]
fn from_equal_to_is_a_legal_stay_and_a_botlet_moves_only_once() {
    let mut game = position(&grid(&[(22, 'r'), (45, 'b')]));
    // The first move of a botlet wins; a later move from the same cell finds it gone.
    turn_once(&mut game, &[(22, 23), (22, 21)], &[(45, 45)]);
    assert_eq!(game.grid(), grid(&[(23, 'r'), (45, 'b')]));
}

#[test]
fn same_side_collision_leaves_a_single_dead_marker() {
    // r at 22 moves into 23, where another r stays: both die, one marker.
    let mut game = position(&grid(&[(0, 'r'), (22, 'r'), (23, 'r'), (49, 'b')]));
    turn_once(&mut game, &[(22, 23)], &[]);
    assert_eq!(game.grid(), grid(&[(0, 'r'), (23, 'x'), (49, 'b')]));
}

#[test]
fn same_side_swaps_pass_through_each_other() {
    let start = grid(&[(0, 'r'), (22, 'r'), (23, 'r'), (49, 'b')]);
    let mut game = position(&start);
    turn_once(&mut game, &[(22, 23), (23, 22)], &[]);
    assert_eq!(game.grid(), start, "no collision: both botlets live");
}

#[test]
fn opposite_side_swaps_pass_through_each_other() {
    // r at 22 and b at 23 trade cells. They pass through each other, then fight (one
    // enemy each: both die), so each dead marker lies where the other side started.
    let mut game = position(&grid(&[(0, 'r'), (22, 'r'), (23, 'b'), (49, 'b')]));
    turn_once(&mut game, &[(22, 23)], &[(23, 22)]);
    assert_eq!(game.grid(), grid(&[(0, 'r'), (22, 'X'), (23, 'x'), (49, 'b')]));
}

#[test]
fn three_botlets_entering_one_cell_all_die() {
    // Decision S-2: r from 22 and 24 and b from 13 all enter 23. The original let the
    // third survive; here every botlet ending in the cell dies. The last mover is b.
    let mut game = position(&grid(&[(0, 'r'), (13, 'b'), (22, 'r'), (24, 'r'), (49, 'b')]));
    turn_once(&mut game, &[(22, 23), (24, 23)], &[(13, 23)]);
    assert_eq!(game.grid(), grid(&[(0, 'r'), (23, 'X'), (49, 'b')]));
    assert_eq!(game.winner(), None);

    // Three botlets of one side likewise.
    let mut game = position(&grid(&[(0, 'r'), (13, 'r'), (22, 'r'), (24, 'r'), (49, 'b')]));
    turn_once(&mut game, &[(22, 23), (24, 23), (13, 23)], &[]);
    assert_eq!(game.grid(), grid(&[(0, 'r'), (23, 'x'), (49, 'b')]));

    // A botlet that stays, entered by two others: all three die.
    let mut game = position(&grid(&[(0, 'r'), (13, 'b'), (22, 'r'), (23, 'r'), (49, 'b')]));
    turn_once(&mut game, &[(22, 23)], &[(13, 23)]);
    assert_eq!(game.grid(), grid(&[(0, 'r'), (23, 'x'), (49, 'b')]));
}

#[test]
fn a_botlet_that_stays_is_killed_by_one_moving_in() {
    // b stays at 23 and r moves in from 22: the unmoved b is placed after the moves,
    // onto r, so the marker is b's.
    let mut game = position(&grid(&[(0, 'r'), (22, 'r'), (23, 'b'), (49, 'b')]));
    turn_once(&mut game, &[(22, 23)], &[]);
    assert_eq!(game.grid(), grid(&[(0, 'r'), (23, 'X'), (49, 'b')]));
}

// ---------------------------------------------------------------------------
// Energy, spawns and razing
// ---------------------------------------------------------------------------

#[test]
fn moving_onto_energy_destroys_it_without_gain() {
    // Decision S-3. Nothing else touches the energy at 23.
    let mut game = position(&grid(&[(0, 'r'), (22, 'r'), (23, '*'), (49, 'b')]));
    turn_once(&mut game, &[(22, 23)], &[]);
    assert_eq!(game.grid(), grid(&[(0, 'r'), (23, 'r'), (49, 'b')]));
    assert_eq!(game.sides().map(|side| side.energy), [0, 0]);
}

#[test]
fn energy_touched_by_one_side_goes_to_that_side() {
    let mut game = position(&grid(&[(0, 'r'), (22, 'r'), (23, '*'), (49, 'b')]));
    turn_once(&mut game, &[], &[]);
    assert_eq!(game.grid(), grid(&[(0, 'r'), (22, 'r'), (49, 'b')]));
    assert_eq!(game.sides().map(|side| side.energy), [1, 0]);
}

#[test]
fn energy_touched_by_both_sides_is_lost() {
    // 23 is touched by b at 22 and by r at 13 and 24; no botlet touches an enemy.
    let mut game = position(&grid(&[(0, 'r'), (13, 'r'), (22, 'b'), (23, '*'), (24, 'r'), (49, 'b')]));
    turn_once(&mut game, &[], &[]);
    assert_eq!(game.grid(), grid(&[(0, 'r'), (13, 'r'), (22, 'b'), (24, 'r'), (49, 'b')]));
    assert_eq!(game.sides().map(|side| side.energy), [0, 0]);
}

#[test]
fn a_bank_spawns_one_botlet_per_turn_on_a_free_spawn() {
    let mut game =
        Botwars::from_position(small_rules(), &grid(&[(0, 'r'), (49, 'b')]), [2, 1], 7).expect("valid position");
    turn_once(&mut game, &[], &[]);
    assert_eq!(game.grid(), grid(&[(0, 'r'), (11, 'r'), (38, 'b'), (49, 'b')]));
    assert_eq!(game.sides().map(|side| side.energy), [1, 0]);
    // The spawn is occupied: nothing spawns until the botlet leaves it.
    turn_once(&mut game, &[], &[]);
    assert_eq!(game.sides().map(|side| side.energy), [1, 0]);
    turn_once(&mut game, &[(11, 12)], &[]);
    assert_eq!(game.grid(), grid(&[(0, 'r'), (11, 'r'), (12, 'r'), (38, 'b'), (49, 'b')]));
    assert_eq!(game.sides().map(|side| side.energy), [0, 0]);
}

#[test]
fn a_razed_spawn_stays_disabled_after_the_enemy_leaves() {
    // b stands on r's spawn (11) while r has 3 in the bank.
    let mut game = Botwars::from_position(small_rules(), &grid(&[(0, 'r'), (11, 'b'), (49, 'b')]), [3, 0], 7)
        .expect("valid position");
    turn_once(&mut game, &[], &[]);
    assert!(game.sides()[0].spawn_disabled);
    assert!(!game.sides()[1].spawn_disabled);
    turn_once(&mut game, &[], &[(11, 21)]);
    turn_once(&mut game, &[], &[]);
    assert!(game.sides()[0].spawn_disabled, "razing is permanent");
    assert_eq!(game.grid(), grid(&[(0, 'r'), (21, 'b'), (49, 'b')]), "no botlet spawned on the free spawn");
    assert_eq!(game.sides()[0].energy, 3);
}

#[test]
fn a_friendly_botlet_on_its_own_spawn_does_not_raze_it() {
    let mut game =
        Botwars::from_position(small_rules(), &grid(&[(11, 'r'), (38, 'b')]), [1, 1], 7).expect("valid position");
    turn_once(&mut game, &[(11, 12)], &[(38, 37)]);
    assert_eq!(game.sides().map(|side| side.spawn_disabled), [false, false]);
    assert_eq!(game.grid(), grid(&[(11, 'r'), (12, 'r'), (37, 'b'), (38, 'b')]));
}

#[test]
fn energy_on_a_spawn_blocks_spawning_until_gathered() {
    // r has 2 in the bank, but its spawn (11) holds energy.
    let start = grid(&[(2, 'r'), (11, '*'), (47, 'b')]);
    let mut game = Botwars::from_position(small_rules(), &start, [2, 0], 7).expect("valid position");
    turn_once(&mut game, &[], &[]);
    assert_eq!(game.grid(), start, "energy on the spawn blocks spawning");
    assert_eq!(game.sides()[0].energy, 2, "the bank is kept");
    // r steps next to the energy: this turn still spawns nothing (spawning comes
    // before gathering), then the energy is gathered.
    turn_once(&mut game, &[(2, 1)], &[]);
    assert_eq!(game.grid(), grid(&[(1, 'r'), (47, 'b')]));
    assert_eq!(game.sides()[0].energy, 3);
    // Next turn the spawn is clear.
    turn_once(&mut game, &[], &[]);
    assert_eq!(game.grid(), grid(&[(1, 'r'), (11, 'r'), (47, 'b')]));
    assert_eq!(game.sides()[0].energy, 2);
}

#[test]
fn energy_on_a_spawn_stepped_on_is_destroyed_and_the_spawn_reopens() {
    let mut game = Botwars::from_position(small_rules(), &grid(&[(10, 'r'), (11, '*'), (49, 'b')]), [1, 0], 7)
        .expect("valid position");
    // r at 10 steps onto its spawn: the energy is gone without gain, and the botlet
    // now blocks the spawn.
    turn_once(&mut game, &[(10, 11)], &[]);
    assert_eq!(game.grid(), grid(&[(11, 'r'), (49, 'b')]));
    assert_eq!(game.sides()[0].energy, 1);
    // Once it leaves, the spawn works again.
    turn_once(&mut game, &[(11, 1)], &[]);
    assert_eq!(game.grid(), grid(&[(1, 'r'), (11, 'r'), (49, 'b')]));
    assert_eq!(game.sides()[0].energy, 0);
}

#[test]
fn a_side_with_no_botlets_loses_at_once_even_with_energy_in_the_bank() {
    // r's only botlet (20) touches two b's and dies; r's spawn holds energy, so its
    // bank of 5 cannot put a botlet on the grid this turn.
    let start = grid(&[(11, '*'), (20, 'r'), (21, 'b'), (30, 'b'), (49, 'b')]);
    let mut game = Botwars::from_position(small_rules(), &start, [5, 0], 7).expect("valid position");
    turn_once(&mut game, &[], &[]);
    // b at 21 touches the energy on r's spawn and gathers it.
    assert_eq!(game.grid(), grid(&[(20, 'x'), (21, 'b'), (30, 'b'), (49, 'b')]));
    assert_eq!(game.winner(), Some(Winner::Seat(1)));
    assert_eq!(game.sides().map(|side| side.energy), [5, 1]);
    let outcome = game.outcome();
    assert_eq!(outcome.iter().map(|o| (o.score, o.rank)).collect::<Vec<_>>(), [(0, 2), (3, 1)]);
    assert!(game.to_act().is_empty());
    assert!(game.is_over());
}

#[test]
fn both_sides_emptied_in_one_turn_is_a_draw() {
    let mut game = position(&grid(&[(22, 'r'), (23, 'b')]));
    turn_once(&mut game, &[], &[]);
    assert_eq!(game.grid(), grid(&[(22, 'x'), (23, 'X')]));
    assert_eq!(game.winner(), Some(Winner::Draw));
    assert_eq!(game.outcome().iter().map(|o| (o.score, o.rank)).collect::<Vec<_>>(), [(0, 1), (0, 1)]);
}

// ---------------------------------------------------------------------------
// End of the match
// ---------------------------------------------------------------------------

#[test]
fn a_tie_at_the_turn_limit_is_a_draw() {
    // Decision S-4: the original flipped a coin.
    let rules = BotwarsRules { max_turns: 2, ..small_rules() };
    let mut game = Botwars::from_position(rules, &grid(&[(0, 'r'), (49, 'b')]), [0, 0], 7).expect("valid position");
    turn_once(&mut game, &[], &[]);
    assert_eq!(game.winner(), None);
    turn_once(&mut game, &[], &[]);
    assert_eq!(game.turns_elapsed(), 2);
    assert_eq!(game.winner(), Some(Winner::Draw));
    let outcome = game.outcome();
    assert_eq!(
        outcome.iter().map(|o| (o.score, o.rank, o.status)).collect::<Vec<_>>(),
        [(1, 1, PlayerStatus::Ok), (1, 1, PlayerStatus::Ok)]
    );
    assert_eq!(json(game.snapshot().get())["winner"], ".");
}

#[test]
fn more_botlets_wins_at_the_turn_limit() {
    let rules = BotwarsRules { max_turns: 1, ..small_rules() };
    let mut game =
        Botwars::from_position(rules, &grid(&[(0, 'r'), (2, 'r'), (49, 'b')]), [0, 0], 7).expect("valid position");
    turn_once(&mut game, &[], &[]);
    assert_eq!(game.winner(), Some(Winner::Seat(0)));
    assert_eq!(game.outcome().iter().map(|o| (o.score, o.rank)).collect::<Vec<_>>(), [(2, 1), (1, 2)]);
    assert_eq!(json(game.snapshot().get())["winner"], "r");
}

#[test]
fn dead_markers_of_both_sides_appear_in_the_request_and_clear_next_turn() {
    // Decision S-6: the grid carries both `x` and `X`.
    let mut game = position("................rb......rbr.........b.............");
    turn_once(&mut game, &[], &[]);
    let request = json(&game.observation(0));
    let grid = request["state"]["grid"].as_str().expect("grid is a string");
    assert!(grid.contains('x') && grid.contains('X'), "{grid}");
    turn_once(&mut game, &[], &[]);
    assert!(!game.grid().contains(['x', 'X']), "{}", game.grid());
}

// ---------------------------------------------------------------------------
// Bot I/O
// ---------------------------------------------------------------------------

#[test]
fn a_reply_that_is_not_an_array_disqualifies() {
    for reply in [r#"{"from":21,"to":22}"#, "42", "null", r#""[]""#, "true"] {
        assert_eq!(parse(reply), disqualified(), "{reply}");
    }
}

#[test]
fn an_element_without_numeric_from_and_to_disqualifies() {
    for reply in [
        r#"[{"from":"21","to":22}]"#,
        r#"[{"from":21}]"#,
        r#"[{"to":22}]"#,
        r#"[{"from":21,"to":null}]"#,
        r#"[[21,22]]"#,
        r#"[21]"#,
        r#"[{"from":21,"to":22},{"from":true,"to":22}]"#,
    ] {
        assert_eq!(parse(reply), disqualified(), "{reply}");
    }
}

#[test]
fn a_null_element_disqualifies() {
    assert_eq!(parse("[null]"), disqualified());
    assert_eq!(parse(r#"[{"from":21,"to":22},null]"#), disqualified());
}

#[test]
fn an_unparseable_body_disqualifies() {
    for reply in ["", "[", r#"[{"from":21,"to":22}"#, "moves please", "[] []"] {
        assert_eq!(parse(reply), disqualified(), "{reply:?}");
    }
    let game = position(&".".repeat(50));
    assert_eq!(game.parse_reply(1, &BotReply::Unreadable), disqualified());
}

#[test]
fn a_timeout_or_a_crashed_bot_disqualifies_with_its_own_status() {
    let game = position(&".".repeat(50));
    assert_eq!(game.parse_reply(0, &BotReply::Timeout), BotwarsAction::Disqualified(PlayerStatus::TimedOut));
    assert_eq!(game.parse_reply(1, &BotReply::Crashed), BotwarsAction::Disqualified(PlayerStatus::Crashed));
}

#[test]
fn well_formed_replies_parse_to_moves() {
    assert_eq!(parse("[]"), BotwarsAction::Moves(vec![]));
    assert_eq!(
        parse(r#" [{"from":21,"to":22},{"to":31,"from":21.0,"note":"extra keys are fine"}] "#),
        BotwarsAction::Moves(vec![Some((21, 22)), Some((21, 31))])
    );
}

#[test]
fn fractional_negative_or_outside_indices_are_ignored_not_disqualifying() {
    let action = parse(r#"[{"from":22.5,"to":23},{"from":22,"to":-1},{"from":22,"to":50},{"from":1e300,"to":22}]"#);
    assert_eq!(action, BotwarsAction::Moves(vec![None, None, None, None]));
    // Played, they move nothing, and the side plays on.
    let before = grid(&[(0, 'r'), (22, 'r'), (49, 'b')]);
    let mut game = position(&before);
    game.apply(vec![(0, action), (1, moves(&[]))], &mut GameRng::new(7, GameRng::RULES));
    assert_eq!(game.grid(), before);
    assert_eq!(game.winner(), None);
    assert_eq!(game.turns_elapsed(), 1);
}

#[test]
fn numbers_outside_the_double_range_are_ignored_moves_as_javascript_reads_them() {
    // JSON.parse reads 1e400 as Infinity and a 400-digit integer too: a number, so the
    // move is ignored; 1e-400 is 0, a cell.
    let huge = "9".repeat(400);
    let action = parse(&format!(
        r#"[{{"from":1e400,"to":22}},{{"from":22,"to":-1e400}},{{"from":{huge},"to":22}},{{"from":-{huge},"to":1}},{{"from":1e-400,"to":1}},{{"from":21,"to":22}}]"#
    ));
    assert_eq!(action, BotwarsAction::Moves(vec![None, None, None, None, Some((0, 1)), Some((21, 22))]));
    // Anywhere else in a reply, such a number is just as harmless.
    assert_eq!(parse(r#"[{"from":21,"to":22,"note":1e400}]"#), BotwarsAction::Moves(vec![Some((21, 22))]));
    // Still numbers only: a string or a bare word is no number.
    assert_eq!(parse(r#"[{"from":"1e400","to":22}]"#), disqualified());
    assert_eq!(parse(r#"[{"from":Infinity,"to":22}]"#), disqualified());
}

#[test]
fn a_key_given_twice_counts_once_with_its_last_value() {
    assert_eq!(parse(r#"[{"from":"x","from":21,"to":22}]"#), BotwarsAction::Moves(vec![Some((21, 22))]));
    assert_eq!(parse(r#"[{"from":21,"to":22,"to":null}]"#), disqualified());
}

#[test]
fn a_disqualified_side_loses_at_once_and_the_turn_is_not_played() {
    // Dead markers from "last turn" are in the grid: a failed validation returns the
    // input state with only the winner added (no clearing, no turn counted).
    let start = grid(&[(0, 'x'), (22, 'r'), (46, 'X'), (49, 'b')]);
    let mut game = position(&start);
    let action = game.parse_reply(0, &BotReply::Line("not json".into()));
    game.apply(vec![(0, action), (1, moves(&[(22, 23)]))], &mut GameRng::new(7, GameRng::RULES));
    assert_eq!(game.winner(), Some(Winner::Seat(1)));
    assert_eq!(game.grid(), start);
    assert_eq!(game.turns_elapsed(), 0);
    let snapshot = json(game.snapshot().get());
    assert_eq!(snapshot["winner"], "b");
    assert_eq!(snapshot["turnsElapsed"], 0);
    assert_eq!(snapshot["grid"], start.as_str());
    let outcome = game.outcome();
    assert_eq!(
        outcome.iter().map(|o| (o.rank, o.status)).collect::<Vec<_>>(),
        [(2, PlayerStatus::Disqualified), (1, PlayerStatus::Ok)]
    );
    assert!(game.to_act().is_empty());
    // Nothing more is played.
    turn_once(&mut game, &[], &[(49, 48)]);
    assert_eq!(game.grid(), start);
}

#[test]
fn a_timed_out_side_loses_to_one_that_replied() {
    let mut game = position(&grid(&[(0, 'r'), (22, 'r'), (49, 'b')]));
    let blue = game.parse_reply(1, &BotReply::Timeout);
    game.apply(vec![(0, moves(&[])), (1, blue)], &mut GameRng::new(7, GameRng::RULES));
    assert_eq!(game.winner(), Some(Winner::Seat(0)));
    assert_eq!(
        game.outcome().iter().map(|o| (o.rank, o.status)).collect::<Vec<_>>(),
        [(1, PlayerStatus::Ok), (2, PlayerStatus::TimedOut)]
    );
}

#[test]
fn both_sides_invalid_is_a_draw_with_both_disqualified() {
    // Decision S-5, for malformed replies and for timeouts.
    let mut game = position(&grid(&[(0, 'r'), (22, 'r'), (49, 'b')]));
    let red = game.parse_reply(0, &BotReply::Line("{}".into()));
    let blue = game.parse_reply(1, &BotReply::Line("[null]".into()));
    game.apply(vec![(0, red), (1, blue)], &mut GameRng::new(7, GameRng::RULES));
    assert_eq!(game.winner(), Some(Winner::Draw));
    assert_eq!(game.turns_elapsed(), 0);
    assert_eq!(
        game.outcome().iter().map(|o| (o.rank, o.status)).collect::<Vec<_>>(),
        [(1, PlayerStatus::Disqualified), (1, PlayerStatus::Disqualified)]
    );

    let mut game = position(&grid(&[(0, 'r'), (22, 'r'), (49, 'b')]));
    let red = game.parse_reply(0, &BotReply::Timeout);
    let blue = game.parse_reply(1, &BotReply::Crashed);
    game.apply(vec![(0, red), (1, blue)], &mut GameRng::new(7, GameRng::RULES));
    assert_eq!(game.winner(), Some(Winner::Draw));
    assert_eq!(
        game.outcome().iter().map(|o| (o.rank, o.status)).collect::<Vec<_>>(),
        [(1, PlayerStatus::TimedOut), (1, PlayerStatus::Crashed)]
    );
    assert_eq!(json(game.snapshot().get())["winner"], ".");
}

fn new_match(rules: BotwarsRules, seed: u64) -> Botwars {
    let players = ["red".to_owned(), "blue".to_owned()];
    <Botwars as Game>::new(rules, None, &players, seed).expect("a valid Botwars setup")
}

#[test]
fn the_first_request_has_an_empty_grid_and_one_energy_each() {
    let game = new_match(BotwarsRules::default(), 17);
    assert_eq!(game.to_act(), [0, 1]);
    for (seat, player) in [(0, "r"), (1, "b")] {
        let request = json(&game.observation(seat));
        let keys: Vec<&str> = request.as_object().expect("an object").keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 3, "{request}");
        assert_eq!(request["player"], player);
        assert!(request["gameId"].is_u64(), "{request}");
        let state = &request["state"];
        assert_eq!(state["rows"], 20);
        assert_eq!(state["cols"], 20);
        assert_eq!(state["maxTurns"], 100);
        assert_eq!(state["turnsElapsed"], 0);
        assert_eq!(state["grid"], ".".repeat(400));
        assert_eq!(state["p1"], serde_json::json!({"energy": 1, "spawn": 21, "spawnDisabled": false}));
        assert_eq!(state["p2"], serde_json::json!({"energy": 1, "spawn": 378, "spawnDisabled": false}));
        assert_eq!(state["GameId"], request["gameId"], "both spellings carry the same id");
        assert!(state.get("winner").is_none(), "bots never see a winner: {request}");
    }
}

#[test]
fn each_side_spawns_its_first_botlet_at_the_end_of_turn_1() {
    let mut game = new_match(BotwarsRules { energy_every: 0, ..Default::default() }, 17);
    turn(&mut game, &[], &[], &mut GameRng::new(17, GameRng::RULES));
    let grid = game.grid().as_bytes();
    assert_eq!((grid[21], grid[378]), (b'r', b'b'));
    assert_eq!(game.grid().bytes().filter(|cell| *cell != b'.').count(), 2);
    assert_eq!(game.sides().map(|side| side.energy), [0, 0]);
    let request = json(&game.observation(1));
    assert_eq!(request["state"]["turnsElapsed"], 1);
    assert_eq!(request["player"], "b");
}

#[test]
fn a_match_cannot_be_given_a_map() {
    let players = ["red".to_owned(), "blue".to_owned()];
    assert!(<Botwars as Game>::new(BotwarsRules::default(), Some("...."), &players, 1).is_err());
}

// ---------------------------------------------------------------------------
// Energy spawning
// ---------------------------------------------------------------------------

/// Plays `turns` turns without moves and returns, per turn, the energy cells that
/// appeared during it.
fn energy_events(seed: u64, turns: usize) -> Vec<Vec<usize>> {
    let mut game = new_match(BotwarsRules::default(), seed);
    let mut rng = GameRng::new(seed, GameRng::RULES);
    let mut events = Vec::new();
    for _ in 0..turns {
        let before = energy_cells(&game);
        turn(&mut game, &[], &[], &mut rng);
        assert_eq!(game.winner(), None);
        events.push(energy_cells(&game).into_iter().filter(|cell| !before.contains(cell)).collect());
    }
    events
}

#[test]
fn energy_appears_after_turns_1_4_7_as_a_mirrored_pair() {
    for seed in [1, 2, 3, 99] {
        let events = energy_events(seed, 9);
        for (index, cells) in events.iter().enumerate() {
            let turn = index + 1;
            if [1, 4, 7].contains(&turn) {
                assert_eq!(cells.len(), 2, "seed {seed}, turn {turn}: {cells:?}");
                // The 180° mirror of (x, y) on a 20x20 grid is index 399 - i.
                assert_eq!(cells[0] + cells[1], 399, "seed {seed}, turn {turn}: {cells:?}");
            } else {
                assert!(cells.is_empty(), "seed {seed}, turn {turn}: {cells:?}");
            }
        }
    }
}

#[test]
fn the_same_seed_places_the_same_energy() {
    assert_eq!(energy_events(5, 8), energy_events(5, 8));
    assert_ne!(energy_events(5, 8), energy_events(6, 8), "different seeds draw different cells");
}

#[test]
fn energy_is_only_placed_on_an_empty_cell_whose_mirror_is_empty() {
    // Every cell holds r except 11 and 38 (a mirrored pair), 20 (its mirror 29 holds
    // r) and b at 49. b touches two r's and dies; the only candidate pair is 11/38.
    let mut cells = vec![(20, '.'), (11, '.'), (38, '.'), (49, 'b')];
    cells.extend((0..49).filter(|cell| ![11, 20, 38].contains(cell)).map(|cell| (cell, 'r')));
    let rules = BotwarsRules { energy_every: 3, ..small_rules() };
    for seed in 0..20 {
        let mut game = Botwars::from_position(rules.clone(), &grid(&cells), [0, 0], seed).expect("valid position");
        turn(&mut game, &[], &[], &mut GameRng::new(seed, GameRng::RULES));
        assert_eq!(energy_cells(&game), [11, 38], "seed {seed}");
        assert_eq!(game.grid().as_bytes()[20], b'.');
    }
}

#[test]
fn energy_can_land_on_a_spawn_and_next_to_botlets_and_is_gathered_next_turn() {
    // r at 1 touches r's spawn (11); b at 48 touches b's spawn (38). Energy appears
    // after the gather step, so energy landing on the spawns is gathered a turn later.
    let start = grid(&[(1, 'r'), (48, 'b')]);
    let rules = BotwarsRules { energy_every: 3, ..small_rules() };
    let seed = (0..2000)
        .find(|&seed| {
            let mut game = Botwars::from_position(rules.clone(), &start, [0, 0], seed).expect("valid position");
            turn(&mut game, &[], &[], &mut GameRng::new(seed, GameRng::RULES));
            energy_cells(&game) == [11, 38]
        })
        .expect("some seed puts the energy pair on the two spawns");
    let mut rng = GameRng::new(seed, GameRng::RULES);
    let mut game = Botwars::from_position(rules, &start, [0, 0], seed).expect("valid position");
    turn(&mut game, &[], &[], &mut rng);
    assert_eq!(energy_cells(&game), [11, 38]);
    assert_eq!(game.sides().map(|side| side.energy), [0, 0], "not gathered on the turn it appears");
    turn(&mut game, &[], &[], &mut rng);
    assert!(energy_cells(&game).is_empty());
    assert_eq!(game.sides().map(|side| side.energy), [1, 1]);
    // The spawns are clear again: each side spawns on turn 3.
    turn(&mut game, &[], &[], &mut rng);
    assert_eq!((game.grid().as_bytes()[11], game.grid().as_bytes()[38]), (b'r', b'b'));
    assert_eq!(game.sides().map(|side| side.energy), [0, 0]);
}

#[test]
fn energy_still_appears_on_the_turn_the_match_ends() {
    let rules = BotwarsRules { max_turns: 1, energy_every: 3, ..small_rules() };
    let mut game = Botwars::from_position(rules, &grid(&[(0, 'r'), (49, 'b')]), [0, 0], 4).expect("valid position");
    turn(&mut game, &[], &[], &mut GameRng::new(4, GameRng::RULES));
    assert_eq!(game.winner(), Some(Winner::Draw));
    let energy = energy_cells(&game);
    assert_eq!(energy.len(), 2, "{}", game.grid());
    assert_eq!(energy[0] + energy[1], 49);
}
