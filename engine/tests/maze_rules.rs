//! Scenario tests of the Maze rules (`shared/games/maze.md`): weapon geometry for every
//! target offset, the hero's and the monsters' pathfinding, turn resolution, items,
//! the text protocol and its error cases, matches of several copies, the generator's
//! properties and the map files.

use std::collections::VecDeque;

use farm_engine::maze::generator::{self, MIN_EXIT_DISTANCE, MONSTER_START_CLEARANCE};
use farm_engine::maze::map::{all_cells, chebyshev, neighbors};
use farm_engine::maze::{
    Cell, Command, Dungeon, End, HEIGHT, Item, Maze, MazeAction, MazeMap, MazeRules, MonsterKind, Resolved, WIDTH,
    Waste, Weapon, parse_command, weapon_cells,
};
use farm_engine::{AnyGame, BotReply, Game, GameKind, GameRng, PlayerStatus, Pos, SetupError};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// A map from a drawing of its top-left corner: rows are padded with obstacles to
/// 16x12, and an exit is added in the bottom-right corner when the drawing has none.
fn map(rows: &[&str]) -> MazeMap {
    let mut lines: Vec<String> = (0..HEIGHT as usize)
        .map(|y| {
            let row = rows.get(y).copied().unwrap_or("");
            format!("{row:X<width$}", width = WIDTH as usize)
        })
        .collect();
    if !rows.iter().any(|row| row.contains('E')) {
        lines[HEIGHT as usize - 1].replace_range(WIDTH as usize - 1.., "E");
    }
    MazeMap::parse(&lines.join("\n")).expect("a valid test drawing")
}

fn dungeon(rows: &[&str]) -> Dungeon {
    Dungeon::new(&map(rows), 150, GameRng::new(7, GameRng::RULES))
}

/// A completely open maze (but for the drawing's top-left corner).
fn open(rows: &[&str]) -> Dungeon {
    let mut full: Vec<String> = (0..HEIGHT as usize)
        .map(|y| {
            let row = rows.get(y).copied().unwrap_or("");
            format!("{row:.<width$}", width = WIDTH as usize)
        })
        .collect();
    if !rows.iter().any(|row| row.contains('E')) {
        full[HEIGHT as usize - 1].replace_range(WIDTH as usize - 1.., "E");
    }
    let rows: Vec<&str> = full.iter().map(String::as_str).collect();
    dungeon(&rows)
}

fn mv(x: i32, y: i32) -> Command {
    Command::Move { target: Pos::new(x, y), message: String::new() }
}

fn attack(weapon: Weapon, x: i32, y: i32) -> Command {
    Command::Attack { weapon, target: Pos::new(x, y), message: String::new() }
}

fn wait_at(dungeon: &Dungeon) -> Command {
    let pos = dungeon.hero().pos;
    mv(pos.x, pos.y)
}

fn p(x: i32, y: i32) -> Pos {
    Pos::new(x, y)
}

fn kinds_at(dungeon: &Dungeon) -> Vec<(Pos, MonsterKind, i32)> {
    dungeon.monsters().iter().map(|m| (m.pos, m.kind, m.hp)).collect()
}

// ---------------------------------------------------------------------------
// Weapon geometry
// ---------------------------------------------------------------------------

/// Valid targets per weapon around a hero `H` in the middle of the maze, offsets
/// −4..=4 on both axes (rows are dy, columns dx): `T` valid, `.` not.
const RANGES: [(Weapon, [&str; 9]); 4] = [
    (
        Weapon::Sword,
        [
            ".........", //
            ".........", //
            ".........", //
            "....T....", //
            "...THT...", //
            "....T....", //
            ".........", //
            ".........", //
            ".........",
        ],
    ),
    (
        Weapon::Hammer,
        [
            ".........", //
            ".........", //
            ".........", //
            "...TTT...", //
            "...THT...", //
            "...TTT...", //
            ".........", //
            ".........", //
            ".........",
        ],
    ),
    (
        Weapon::Scythe,
        [
            ".........", //
            ".........", //
            "..T.T.T..", //
            "...TTT...", //
            "..TTHTT..", //
            "...TTT...", //
            "..T.T.T..", //
            ".........", //
            ".........",
        ],
    ),
    (
        Weapon::Bow,
        [
            ".........", //
            ".TTTTTTT.", //
            ".TTTTTTT.", //
            ".TTTTTTT.", //
            ".TTTHTTT.", //
            ".TTTTTTT.", //
            ".TTTTTTT.", //
            ".TTTTTTT.", //
            ".........",
        ],
    ),
];

#[test]
fn every_target_offset_is_valid_or_not_as_the_tables_say() {
    let hero = p(7, 5);
    for (weapon, table) in RANGES {
        for (row, line) in table.iter().enumerate() {
            for (column, mark) in line.chars().enumerate() {
                let target = p(hero.x + column as i32 - 4, hero.y + row as i32 - 4);
                let valid = weapon_cells(hero, weapon, target).is_some();
                assert_eq!(valid, mark == 'T', "{weapon:?} at offset ({}, {})", column as i32 - 4, row as i32 - 4);
            }
        }
    }
}

/// A cell relative to the hero: (dx, dy).
type Offset = (i32, i32);

/// The extra cells hit, as offsets from the hero, for every valid target offset.
const HAMMER_EXTRA: [(Offset, [Offset; 2]); 8] = [
    // Straight up/down: the target's left and right neighbours.
    ((0, -1), [(-1, -1), (1, -1)]),
    ((0, 1), [(-1, 1), (1, 1)]),
    // Straight left/right: the target's upper and lower neighbours.
    ((-1, 0), [(-1, -1), (-1, 1)]),
    ((1, 0), [(1, -1), (1, 1)]),
    // Diagonal: the two cells between the hero and the target.
    ((-1, -1), [(-1, 0), (0, -1)]),
    ((1, -1), [(1, 0), (0, -1)]),
    ((-1, 1), [(-1, 0), (0, 1)]),
    ((1, 1), [(1, 0), (0, 1)]),
];

const SCYTHE_EXTRA: [(Offset, Offset); 16] = [
    // Chebyshev 1: the next cell on the same line.
    ((-1, 0), (-2, 0)),
    ((1, 0), (2, 0)),
    ((0, -1), (0, -2)),
    ((0, 1), (0, 2)),
    ((-1, -1), (-2, -2)),
    ((1, -1), (2, -2)),
    ((-1, 1), (-2, 2)),
    ((1, 1), (2, 2)),
    // Chebyshev 2: the cell between.
    ((-2, 0), (-1, 0)),
    ((2, 0), (1, 0)),
    ((0, -2), (0, -1)),
    ((0, 2), (0, 1)),
    ((-2, -2), (-1, -1)),
    ((2, -2), (1, -1)),
    ((-2, 2), (-1, 1)),
    ((2, 2), (1, 1)),
];

fn sorted(mut cells: Vec<Pos>) -> Vec<Pos> {
    cells.sort();
    cells
}

#[test]
fn every_valid_target_hits_the_cells_the_tables_say() {
    let hero = p(7, 5);
    let at = |(dx, dy): Offset| p(hero.x + dx, hero.y + dy);
    for (dx, dy) in (-3..=3).flat_map(|dx| (-3..=3).map(move |dy| (dx, dy))) {
        for weapon in [Weapon::Sword, Weapon::Bow] {
            if let Some(cells) = weapon_cells(hero, weapon, at((dx, dy))) {
                assert_eq!(cells, vec![at((dx, dy))], "{weapon:?} ({dx}, {dy})");
            }
        }
    }
    for (offset, extra) in HAMMER_EXTRA {
        let cells = weapon_cells(hero, Weapon::Hammer, at(offset)).expect("valid");
        assert_eq!(cells[0], at(offset), "the target comes first");
        assert_eq!(sorted(cells), sorted(vec![at(offset), at(extra[0]), at(extra[1])]), "hammer {offset:?}");
    }
    for (offset, extra) in SCYTHE_EXTRA {
        let cells = weapon_cells(hero, Weapon::Scythe, at(offset)).expect("valid");
        assert_eq!(cells, vec![at(offset), at(extra)], "scythe {offset:?}");
    }
}

#[test]
fn cells_outside_the_maze_are_left_out() {
    // Hammer straight up from the left edge: only the right side cell remains.
    assert_eq!(weapon_cells(p(0, 5), Weapon::Hammer, p(0, 4)), Some(vec![p(0, 4), p(1, 4)]));
    // Hammer straight right along the top edge: only the cell below remains.
    assert_eq!(weapon_cells(p(3, 0), Weapon::Hammer, p(4, 0)), Some(vec![p(4, 0), p(4, 1)]));
    // Scythe at distance 1 towards the edge: the next cell is outside.
    assert_eq!(weapon_cells(p(1, 1), Weapon::Scythe, p(0, 0)), Some(vec![p(0, 0)]));
    assert_eq!(weapon_cells(p(14, 10), Weapon::Scythe, p(15, 11)), Some(vec![p(15, 11)]));
    // Targets outside the maze are never valid.
    assert_eq!(weapon_cells(p(0, 0), Weapon::Bow, p(-1, 0)), None);
    assert_eq!(weapon_cells(p(0, 0), Weapon::Sword, p(0, -1)), None);
}

#[test]
fn a_weapon_damages_every_monster_on_its_cells_and_kills_score_their_hp() {
    // Hammer straight right from (1,1): hits (2,0), (2,1), (2,2).
    let mut d = open(&["..1.", ".H2.", "..3.", "...."]);
    d.place_monster(MonsterKind::Skeleton, p(2, 0), 5);
    d.play(&attack(Weapon::Hammer, 2, 1));
    assert_eq!(d.hero().charges, [99_999, 4, 5, 5]);
    // The skeleton (5 hp) dies for 6; the gargoyle keeps 8; the orc keeps 2.
    assert!(d.monster_at(p(2, 0)).is_none());
    assert_eq!(d.monster_at(p(2, 1)).map(|m| m.hp), Some(8));
    assert_eq!(d.monster_at(p(2, 2)).map(|m| m.hp), Some(2));
    // Then the gargoyle (2) and the orc (2), both in range, hit back.
    assert_eq!(d.hero().hp, 16);
    assert_eq!(d.hero().score, 6 - 4);
}

#[test]
fn the_bow_shoots_over_walls_and_the_sword_kills_boxes() {
    let mut d = dungeon(&["H.X4"]);
    d.play(&attack(Weapon::Bow, 3, 0));
    assert_eq!(d.monster_at(p(3, 0)).map(|m| m.hp), Some(2));
    assert_eq!(d.hero().charges[Weapon::Bow.index()], 4);
    let mut d = dungeon(&["H0.."]);
    d.play(&attack(Weapon::Sword, 1, 0));
    assert!(d.monsters().is_empty());
    assert_eq!(d.hero().score, 1, "a box is worth its 1 hp");
}

#[test]
fn a_valid_attack_on_nothing_still_spends_its_charge() {
    let mut d = open(&["H"]);
    d.play(&attack(Weapon::Scythe, 2, 2));
    assert_eq!(d.hero().charges[Weapon::Scythe.index()], 4);
    assert_eq!(d.hero().score, 0);
}

#[test]
fn wasted_turns_spend_nothing_and_are_not_errors() {
    let mut d = open(&["...", ".H.", "..."]);
    assert_eq!(d.resolve(&attack(Weapon::Sword, 2, 2)), Resolved::Wasted(Waste::OutOfRange));
    assert_eq!(d.resolve(&attack(Weapon::Hammer, 1, 1)), Resolved::Wasted(Waste::OutOfRange), "own cell");
    assert_eq!(d.resolve(&attack(Weapon::Scythe, 3, 2)), Resolved::Wasted(Waste::OutOfRange), "Manhattan 3");
    assert_eq!(d.resolve(&attack(Weapon::Bow, 5, 1)), Resolved::Wasted(Waste::OutOfRange));
    d.hero_mut().charges[Weapon::Bow.index()] = 0;
    assert_eq!(d.resolve(&attack(Weapon::Bow, 2, 1)), Resolved::Wasted(Waste::NoCharges));
    d.play(&attack(Weapon::Bow, 2, 1));
    d.play(&attack(Weapon::Hammer, 1, 1));
    assert_eq!(d.hero().charges[1..], [5, 5, 0]);
    assert_eq!((d.hero().score, d.end(), d.turn()), (0, None, 2));
}

// ---------------------------------------------------------------------------
// The hero's MOVE
// ---------------------------------------------------------------------------

#[test]
fn move_takes_the_first_step_of_a_bfs_path() {
    // A corridor that turns: the target (3,2) is 5 steps away.
    let d = dungeon(&["H..X", "XX.X", "XX.."]);
    assert_eq!(d.resolve(&mv(3, 2)), Resolved::Step(p(1, 0)));
    // A target next to the hero is the step.
    assert_eq!(d.resolve(&mv(1, 0)), Resolved::Step(p(1, 0)));
}

#[test]
fn move_ties_go_to_the_first_neighbour_in_x_minus_x_plus_y_minus_y_plus_order() {
    let d = open(&["....", "....", "..H.", "...."]);
    // (0,0): both (1,2) and (2,1) start shortest paths; x − 1 comes first.
    assert_eq!(d.resolve(&mv(0, 0)), Resolved::Step(p(1, 2)));
    // (4,4): x + 1 comes before y + 1.
    assert_eq!(d.resolve(&mv(4, 4)), Resolved::Step(p(3, 2)));
}

#[test]
fn move_to_the_own_cell_waits_and_towards_an_adjacent_wall_waits_too() {
    let mut d = dungeon(&["H.", "X."]);
    assert_eq!(d.resolve(&mv(0, 0)), Resolved::Wait);
    assert_eq!(d.resolve(&mv(0, 1)), Resolved::Wait, "an obstacle next to the hero");
    d.play(&mv(0, 1));
    assert_eq!((d.hero().pos, d.end(), d.turn()), (p(0, 0), None, 1));
}

#[test]
fn an_unreachable_or_unseen_target_gives_a_step_towards_the_closest_cell() {
    // Open ground: (15,5) is out of view; the closest cell in view is (8,5).
    let d = open(&["", "", "", "", "", ".....H"]);
    assert_eq!(d.resolve(&mv(15, 5)), Resolved::Step(p(6, 5)));
    // A walled pocket: the target behind the wall is never reached; the closest
    // reachable cell by Manhattan distance is (2,0), first step (1,0).
    let d = dungeon(&["H..X.", "XXXX."]);
    assert_eq!(d.resolve(&mv(4, 0)), Resolved::Step(p(1, 0)));
    // Nothing is closer than the hero itself: wait.
    let d = dungeon(&["..H", "XXX", "..."]);
    assert_eq!(d.resolve(&mv(2, 2)), Resolved::Wait);
}

#[test]
fn move_paths_ignore_monsters_and_a_step_onto_one_is_a_sword_attack() {
    let mut d = dungeon(&["H1..", "XXXX"]);
    assert_eq!(d.resolve(&mv(3, 0)), Resolved::Attack { weapon: Weapon::Sword, cells: vec![p(1, 0)] });
    d.play(&mv(3, 0));
    assert_eq!(d.hero().pos, p(0, 0), "a kill through MOVE does not move the hero");
    assert!(d.monsters().is_empty());
    assert_eq!(d.hero().score, 6);
    // Boxes are monsters too.
    let mut d = dungeon(&["H0.."]);
    d.play(&mv(3, 0));
    assert_eq!((d.hero().pos, d.hero().score), (p(0, 0), 1));
    d.play(&mv(3, 0));
    assert_eq!(d.hero().pos, p(1, 0));
}

// ---------------------------------------------------------------------------
// Items
// ---------------------------------------------------------------------------

#[test]
fn items_apply_when_the_hero_moves_onto_them() {
    let mut d = dungeon(&["Htpabc"]);
    d.play(&mv(1, 0));
    assert_eq!((d.hero().score, d.item_at(p(1, 0))), (100, None));
    d.hero_mut().hp = 5;
    d.play(&mv(2, 0));
    assert_eq!(d.hero().hp, 15);
    d.play(&mv(3, 0));
    d.play(&mv(4, 0));
    d.play(&mv(5, 0));
    assert_eq!(d.hero().charges[1..], [6, 6, 6]);
}

#[test]
fn potions_cap_at_20_and_are_used_up_even_at_full_health() {
    let mut d = dungeon(&["Hpp"]);
    d.play(&mv(1, 0));
    assert_eq!((d.hero().hp, d.item_at(p(1, 0))), (20, None));
    d.hero_mut().hp = 15;
    d.play(&mv(2, 0));
    assert_eq!(d.hero().hp, 20);
}

#[test]
fn the_exit_ends_the_game_as_soon_as_the_hero_steps_on_it() {
    let mut d = dungeon(&["H.E..", "XXX.."]);
    // The target is beyond the exit; the second step lands on it.
    d.play(&mv(4, 1));
    assert_eq!(d.end(), None);
    d.play(&mv(4, 1));
    assert_eq!((d.end(), d.hero().score, d.hero().pos), (Some(End::Exit), 10_000, p(2, 0)));
    // Over: nothing more happens.
    d.play(&mv(4, 1));
    assert_eq!((d.turn(), d.hero().pos), (2, p(2, 0)));
}

#[test]
fn a_monster_on_an_item_keeps_the_hero_off_it_until_it_dies() {
    let mut d = dungeon(&["Ht.."]);
    d.place_monster(MonsterKind::Box, p(1, 0), 1);
    d.play(&mv(1, 0));
    assert_eq!((d.hero().pos, d.hero().score, d.item_at(p(1, 0))), (p(0, 0), 1, Some(Item::Treasure)));
    d.play(&mv(1, 0));
    assert_eq!((d.hero().pos, d.hero().score, d.item_at(p(1, 0))), (p(1, 0), 101, None));
}

#[test]
fn monsters_walk_over_items_without_taking_them() {
    // A vampire at distance 3 steps onto the treasure between it and the hero.
    let mut d = dungeon(&["H.t4"]);
    d.play(&mv(0, 0));
    assert_eq!(kinds_at(&d), vec![(p(2, 0), MonsterKind::Vampire, 10)]);
    assert_eq!(d.item_at(p(2, 0)), Some(Item::Treasure));
}

// ---------------------------------------------------------------------------
// Monsters
// ---------------------------------------------------------------------------

#[test]
fn monsters_in_range_attack_and_the_damage_is_summed() {
    // A skeleton next to the hero (1), a vampire diagonal (3), an orc 2 away (2) and
    // a box next to the hero (0).
    let mut d = dungeon(&["H1..", "04..", "..3.", "...."]);
    d.play(&mv(0, 0));
    assert_eq!(d.hero().hp, 20 - 1 - 2 - 3);
    assert_eq!(d.hero().score, -6);
    assert!(d.last().ends_with("hurt 6"), "{}", d.last());
}

#[test]
fn an_orc_hits_through_a_wall_from_two_cells() {
    let mut d = dungeon(&["HX3"]);
    d.play(&mv(0, 0));
    assert_eq!(d.hero().hp, 18);
    assert_eq!(kinds_at(&d), vec![(p(2, 0), MonsterKind::Orc, 8)], "it attacks rather than move");
}

#[test]
fn monsters_beyond_their_view_stay() {
    // A skeleton (view 1) 2 cells away, a gargoyle (view 2) 3 away, a box anywhere.
    let mut d = open(&["H.1", "...", "...2", "0"]);
    d.play(&mv(0, 0));
    assert_eq!(kinds_at(&d).len(), 3);
    assert_eq!(d.monster_at(p(2, 0)).map(|m| m.kind), Some(MonsterKind::Skeleton));
    assert_eq!(d.monster_at(p(3, 2)).map(|m| m.kind), Some(MonsterKind::Gargoyle));
    assert_eq!(d.hero().hp, 20);
}

#[test]
fn a_monster_in_view_steps_along_the_first_bfs_path_to_the_hero() {
    let mut d = dungeon(&["H..4"]);
    let vampire = d.monsters()[0];
    assert_eq!(d.monster_step(&vampire), p(2, 0));
    d.play(&mv(0, 0));
    assert_eq!(kinds_at(&d), vec![(p(2, 0), MonsterKind::Vampire, 10)]);
    assert_eq!(d.hero().hp, 20, "a monster that moves does not attack in the same turn");
    d.play(&mv(0, 0));
    assert_eq!(kinds_at(&d), vec![(p(1, 0), MonsterKind::Vampire, 10)]);
    d.play(&mv(0, 0));
    assert_eq!(d.hero().hp, 17);
}

#[test]
fn monster_ties_go_to_the_first_neighbour_in_bfs_order() {
    // A vampire diagonal at (3,3) from the hero at (0,0): x − 1 first.
    let d = open(&["H", "", "", "...4"]);
    assert_eq!(d.monster_step(&d.monsters()[0]), p(2, 3));
}

#[test]
fn other_monsters_block_and_a_monster_goes_around_them() {
    // The skeleton (out of its view) blocks the straight way; the vampire goes around
    // through (3,1), farther from the hero, because that path reaches the hero.
    let d = open(&["H.14", "....", "...."]);
    let vampire = *d.monster_at(p(3, 0)).expect("vampire");
    assert_eq!(d.monster_step(&vampire), p(3, 1));
    // In a corridor the blocked vampire stays.
    let d = dungeon(&["H.24"]);
    let vampire = *d.monster_at(p(3, 0)).expect("vampire");
    assert_eq!(d.monster_step(&vampire), p(3, 0));
}

#[test]
fn monsters_act_in_a_seeded_random_order_and_see_earlier_moves() {
    // The gargoyle steps to (1,0); if it acts before the vampire, the vampire follows
    // into (2,0), otherwise it stays blocked. Both orders happen over seeds, and a seed
    // always gives the same one.
    let layout = map(&["H.24"]);
    let mut outcomes = Vec::new();
    for seed in 0..32 {
        let run = || {
            let mut d = Dungeon::new(&layout, 150, GameRng::new(seed, GameRng::RULES));
            d.play(&mv(0, 0));
            kinds_at(&d)
        };
        let first = run();
        assert_eq!(first, run(), "seed {seed}");
        assert_eq!(first[0], (p(1, 0), MonsterKind::Gargoyle, 14));
        outcomes.push(first[1].0);
    }
    assert!(outcomes.contains(&p(2, 0)) && outcomes.contains(&p(3, 0)), "{outcomes:?}");
}

#[test]
fn monster_paths_stay_within_their_view_of_their_own_cell() {
    // The way round goes through row 4, 4 rows from the vampire: out of its view, and
    // no reachable cell is closer to the hero than it is. It stays.
    let d = dungeon(&["HX4", ".X.", ".X.", ".X.", "..."]);
    let vampire = d.monsters()[0];
    assert_eq!(d.monster_step(&vampire), p(2, 0));
    // When the way round runs through row 3, within its view, it reaches the hero and
    // takes the first step, even though that step is farther from the hero.
    let d = dungeon(&["HX4", ".X.", ".X.", "..."]);
    assert_eq!(d.monster_step(&d.monsters()[0]), p(2, 1));
}

#[test]
fn a_monster_that_can_get_no_closer_stays() {
    // A gargoyle (view 2, range 1) sees the hero across a wall; every cell it can
    // reach is farther from the hero than it is.
    let mut d = dungeon(&["HX2", ".X.", "XX."]);
    let gargoyle = d.monsters()[0];
    assert_eq!(d.monster_step(&gargoyle), p(2, 0));
    d.play(&mv(0, 0));
    assert_eq!((kinds_at(&d)[0].0, d.hero().hp), (p(2, 0), 20));
}

#[test]
fn death_costs_1000_and_ends_the_game() {
    let mut d = dungeon(&["H4"]);
    d.hero_mut().hp = 3;
    d.play(&mv(0, 0));
    assert_eq!((d.hero().hp, d.hero().score, d.end()), (0, -3 - 1000, Some(End::Died)));
}

#[test]
fn the_last_hero_action_has_no_monster_phase() {
    let mut d = Dungeon::new(&map(&["H1"]), 3, GameRng::new(1, GameRng::RULES));
    d.play(&wait_at(&d));
    d.play(&wait_at(&d));
    assert_eq!(d.hero().hp, 18);
    d.play(&wait_at(&d));
    assert_eq!((d.hero().hp, d.hero().score, d.end(), d.turn()), (18, -2, Some(End::TurnLimit), 3));
}

#[test]
fn boxes_never_act() {
    let mut d = dungeon(&["H0"]);
    for _ in 0..5 {
        d.play(&mv(0, 0));
    }
    assert_eq!((d.hero().hp, kinds_at(&d)), (20, vec![(p(1, 0), MonsterKind::Box, 1)]));
}

// ---------------------------------------------------------------------------
// The protocol
// ---------------------------------------------------------------------------

const ORIGINAL_21: &str = include_str!("../../maps/maze/original-21.txt");

#[test]
fn the_first_turn_input_of_the_spec_example() {
    let game = Maze::from_map(MazeRules::default(), &MazeMap::parse(ORIGINAL_21).expect("parses"), 1, 21);
    let expected = "11 11 20 0 5 5 5\n19\n8 8 8 6\n8 9 1 -1\n8 10 1 -1\n9 8 11 10\n9 9 1 -1\n9 10 1 -1\n\
                    10 10 1 -1\n10 11 2 100\n11 8 1 -1\n11 9 3 10\n11 10 1 -1\n12 9 7 1\n12 10 1 -1\n\
                    13 9 1 -1\n13 10 1 -1\n14 8 1 -1\n14 9 1 -1\n14 10 1 -1\n14 11 8 6";
    assert_eq!(game.observation(0), expected);
}

#[test]
fn a_monster_on_an_item_gives_two_lines_obstacle_item_monster_order() {
    let mut d = dungeon(&["Ht"]);
    d.place_monster(MonsterKind::Orc, p(1, 0), 3);
    let text = d.observation();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "0 0 20 0 5 5 5");
    let at_1_0: Vec<&str> = lines[2..].iter().copied().filter(|line| line.starts_with("1 0 ")).collect();
    assert_eq!(at_1_0, ["1 0 2 100", "1 0 10 3"]);
    assert_eq!(lines[1].parse::<usize>().expect("a count"), lines.len() - 2);
    // The view is the 7x7 square clipped to the maze: 16 cells here, all obstacles
    // (the drawing pads with walls) but (0,0) itself and (1,0).
    assert_eq!(lines.len() - 2, 14 + 2);
}

#[test]
fn the_example_answers_parse() {
    assert_eq!(
        parse_command("MOVE 10 11 grab treasure"),
        Ok(Command::Move { target: p(10, 11), message: "grab treasure".into() })
    );
    assert_eq!(
        parse_command("ATTACK 3 9 8 shoot vampire"),
        Ok(Command::Attack { weapon: Weapon::Bow, target: p(9, 8), message: "shoot vampire".into() })
    );
}

/// Replies that end the game with score −10000, and why.
const ERRORS: [(&str, &str); 31] = [
    ("", "empty line"),
    ("WAIT", "unknown keyword"),
    ("move 1 1", "keywords are case-sensitive"),
    ("Move 1 1", "keywords are case-sensitive"),
    (" MOVE 1 1", "leading space"),
    ("\t MOVE 1 1", "a space after a leading tab"),
    ("MOVE\t1 1", "tab after the keyword and no space"),
    ("MOVE  1 1", "double space after the keyword"),
    ("MOVE 1  1", "double space between numbers"),
    ("MOVE 1\t1", "tab between numbers"),
    ("MOVE", "no arguments"),
    ("MOVE ", "empty arguments"),
    ("MOVE 1", "one number"),
    ("MOVE 1 ", "second number empty"),
    ("MOVE a 1", "not a number"),
    ("MOVE 1.0 1", "not an integer"),
    ("MOVE 0x1 1", "not decimal"),
    ("MOVE 16 0", "x past the right edge"),
    ("MOVE 0 12", "y past the bottom edge"),
    ("MOVE -1 0", "negative x"),
    ("MOVE 0 -1", "negative y"),
    ("MOVE 99999999999 0", "overflows 32 bits"),
    ("ATTACK 1 1", "missing coordinate"),
    ("ATTACK 4 1 1", "weapon past 3"),
    ("ATTACK -1 1 1", "negative weapon"),
    ("ATTACK 1 20 20", "outside the maze, checked before charges"),
    ("ATTACK x 1 1", "weapon not a number"),
    ("MOVE 1\r1", "a CR ends the line"),
    ("MOVE \u{b3} 1", "a superscript is not a digit"),
    ("MOVE \u{2212}1 1", "a minus sign is not a sign"),
    ("MOVE 1\u{a0}1", "a no-break space is not a separator"),
];

fn fresh_game() -> Maze {
    Maze::from_map(MazeRules::default(), &map(&["H...", "...."]), 1, 3)
}

#[test]
fn every_protocol_error_ends_the_game_with_the_error_score() {
    for (reply, why) in ERRORS {
        let mut game = fresh_game();
        // No hammer charges: an out-of-maze ATTACK is an error all the same.
        game.dungeon_mut(0).hero_mut().charges[Weapon::Hammer.index()] = 0;
        let action = game.parse_reply(0, &BotReply::Line(reply.into()));
        assert!(matches!(action, MazeAction::Fail { status: PlayerStatus::Disqualified, .. }), "{reply:?}: {why}");
        game.apply(vec![(0, action)], &mut GameRng::new(0, GameRng::RULES));
        let dungeon = game.dungeon(0);
        assert_eq!((dungeon.hero().score, dungeon.end()), (-10_000, Some(End::Error)), "{reply:?}: {why}");
        assert!(dungeon.last().starts_with("error: "), "{}", dungeon.last());
        assert!(game.is_over() && game.to_act().is_empty());
        assert_eq!(game.outcome()[0].status, PlayerStatus::Disqualified);
    }
}

#[test]
fn accepted_oddities_of_the_original_parser() {
    for reply in [
        "MOVE 1 1 ",
        "MOVE +1 1",
        "MOVE 01 1",
        "MOVE 1 1 hello  world ",
        "MOVE 1 1\r",
        "MOVE 1 1\r\r",
        "MOVE 1 1\rATTACK 9 9 9",
        "ATTACK 0 1 0 x",
        "\tMOVE 1 1",
        "MOVE\t 1 1",
        "MOVE \u{661} \u{967}",
        "MOVE \u{ff11} 1",
    ] {
        assert!(parse_command(reply).is_ok(), "{reply:?}");
    }
    assert_eq!(parse_command("MOVE 1 1 a\\nb"), Ok(Command::Move { target: p(1, 1), message: "a\\nb".into() }));
}

#[test]
fn missing_or_unreadable_replies_end_the_game_with_the_error_score() {
    for (reply, status) in [
        (BotReply::Timeout, PlayerStatus::TimedOut),
        (BotReply::Crashed, PlayerStatus::Crashed),
        (BotReply::Unreadable, PlayerStatus::Disqualified),
    ] {
        let mut game = fresh_game();
        let action = game.parse_reply(0, &reply);
        game.apply(vec![(0, action)], &mut GameRng::new(0, GameRng::RULES));
        assert_eq!(game.outcome()[0].score, -10_000, "{reply:?}");
        assert_eq!(game.outcome()[0].status, status, "{reply:?}");
    }
}

#[test]
fn an_error_after_points_still_sets_the_score_to_the_error_score() {
    let mut game = Maze::from_map(MazeRules::default(), &map(&["Ht.."]), 1, 3);
    let rng = &mut GameRng::new(0, GameRng::RULES);
    game.apply(vec![(0, MazeAction::Command(mv(1, 0)))], rng);
    assert_eq!(game.dungeon(0).hero().score, 100);
    let action = game.parse_reply(0, &BotReply::Line("JUMP".into()));
    game.apply(vec![(0, action)], rng);
    assert_eq!(game.dungeon(0).hero().score, -10_000);
}

// ---------------------------------------------------------------------------
// Matches
// ---------------------------------------------------------------------------

fn players(n: usize) -> Vec<String> {
    (0..n).map(|seat| format!("p{seat}")).collect()
}

#[test]
fn each_seat_plays_its_own_copy_and_ended_seats_are_not_asked() {
    let text = map(&["Ht.E", "...."]).to_string();
    let mut game = Maze::new(MazeRules::default(), Some(&text), &players(3), 5).expect("valid");
    let rng = &mut GameRng::new(0, GameRng::RULES);
    assert_eq!(game.to_act(), vec![0, 1, 2]);
    assert_eq!(game.observation(0), game.observation(2), "copies start identical");
    let reply = |line: &str| BotReply::Line(line.into());
    let actions = vec![
        (0, game.parse_reply(0, &reply("MOVE 1 0"))),
        (1, game.parse_reply(1, &reply("MOVE 99 0"))),
        (2, game.parse_reply(2, &reply("MOVE 0 0"))),
    ];
    game.apply(actions, rng);
    assert_eq!(game.to_act(), vec![0, 2]);
    assert_eq!(game.dungeon(0).item_at(p(1, 0)), None);
    assert_eq!(game.dungeon(2).item_at(p(1, 0)), Some(Item::Treasure), "copies are independent");
    // Seat 0 leaves by the exit; seat 2 waits until the turn limit.
    game.apply(vec![(0, MazeAction::Command(mv(3, 0))), (2, MazeAction::Command(mv(0, 0)))], rng);
    game.apply(vec![(0, MazeAction::Command(mv(3, 0))), (2, MazeAction::Command(mv(0, 0)))], rng);
    assert_eq!(game.to_act(), vec![2]);
    assert!(!game.is_over());
    let outcome = game.outcome();
    assert_eq!(outcome[0].score, 10_100);
    assert_eq!((outcome[0].rank, outcome[1].rank, outcome[2].rank), (1, 3, 2));
    while !game.is_over() {
        assert!(game.steps() < game.max_steps());
        game.apply(vec![(2, MazeAction::Command(mv(0, 0)))], rng);
    }
    assert_eq!(game.steps(), 150);
    assert_eq!(game.dungeon(2).end(), Some(End::TurnLimit));
    assert!(game.to_act().is_empty());
}

#[test]
fn equal_scores_share_a_rank() {
    let text = map(&["H...", "...."]).to_string();
    let mut game =
        Maze::new(MazeRules { max_turns: 2, ..Default::default() }, Some(&text), &players(4), 5).expect("valid");
    let rng = &mut GameRng::new(0, GameRng::RULES);
    for _ in 0..2 {
        let actions = vec![
            (0, MazeAction::Command(mv(0, 0))),
            (1, MazeAction::Command(mv(0, 0))),
            (2, MazeAction::Fail { status: PlayerStatus::TimedOut, reason: "timeout".into() }),
            (3, MazeAction::Command(mv(1, 0))),
        ];
        let asked = game.to_act();
        game.apply(actions.into_iter().filter(|(seat, _)| asked.contains(seat)).collect(), rng);
    }
    assert!(game.is_over());
    let ranks: Vec<u32> = game.outcome().iter().map(|o| o.rank).collect();
    assert_eq!(ranks, vec![1, 1, 4, 1]);
}

#[test]
fn copies_given_the_same_commands_stay_identical() {
    let map = generator::generate(&mut GameRng::new(21, GameRng::MAP)).expect("generates");
    let mut game = Maze::from_map(MazeRules::default(), &map, 2, 21);
    let rng = &mut GameRng::new(0, GameRng::RULES);
    let mut bot = farm_engine::builtin::create(GameKind::Maze, "greedy", 21, 0).expect("exists");
    while !game.is_over() {
        let line = bot.reply(&game, 0);
        let actions =
            game.to_act().into_iter().map(|seat| (seat, game.parse_reply(seat, &BotReply::Line(line.clone()))));
        game.apply(actions.collect(), rng);
        assert_eq!(game.observation(0), game.observation(1));
    }
    assert_eq!(game.outcome()[0], game.outcome()[1]);
}

#[test]
fn the_snapshot_holds_every_copy() {
    let text = map(&["H..."]).to_string();
    let game = Maze::new(MazeRules::default(), Some(&text), &players(3), 1).expect("valid");
    let state: serde_json::Value = serde_json::from_str(game.snapshot().get()).expect("JSON");
    let copies = state["copies"].as_array().expect("copies");
    assert_eq!(copies.len(), 3);
    assert_eq!(copies[0]["hero"], serde_json::json!({ "x": 0, "y": 0, "hp": 20, "score": 0, "charges": [5, 5, 5] }));
    assert_eq!(copies[0]["items"], serde_json::json!([[15, 11, 0]]));
}

#[test]
fn setup_checks_seats_rules_and_maps() {
    assert_eq!(AnyGame::seats(GameKind::Maze), 1..=4);
    let generated = AnyGame::default_map(GameKind::Maze, &serde_json::Value::Null, 9).expect("generates");
    let text = generated.expect("a maze map");
    assert!(MazeMap::parse(&text).is_ok());
    let rules = AnyGame::resolve_rules(GameKind::Maze, &serde_json::Value::Null).expect("defaults");
    assert_eq!(rules, serde_json::json!({ "maxTurns": 150, "firstTurnTimeoutMs": 1000, "turnTimeoutMs": 50 }));
    let deadlines = AnyGame::deadlines(GameKind::Maze, &serde_json::json!({ "turnTimeoutMs": 200 })).expect("ok");
    assert_eq!((deadlines.first_ms, deadlines.turn_ms), (1000, 200));
    assert!(matches!(
        AnyGame::new(GameKind::Maze, &rules, Some(&text), &players(5), 1),
        Err(SetupError::Players { min: 1, max: 4, given: 5, .. })
    ));
    assert!(matches!(
        AnyGame::resolve_rules(GameKind::Maze, &serde_json::json!({ "maxTurn": 3 })),
        Err(SetupError::Rules { .. })
    ));
    let zero = serde_json::json!({ "maxTurns": 0, "firstTurnTimeoutMs": 1000, "turnTimeoutMs": 50 });
    assert!(matches!(AnyGame::new(GameKind::Maze, &zero, Some(&text), &players(1), 1), Err(SetupError::Rules { .. })));
    let broken = text.replacen('H', "Q", 1);
    match AnyGame::new(GameKind::Maze, &rules, Some(&broken), &players(1), 1) {
        Err(SetupError::Map { problem, .. }) => assert!(problem.starts_with("line "), "{problem}"),
        other => panic!("expected a map error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// The generator and the map files
// ---------------------------------------------------------------------------

/// BFS distances from `from` over every cell that is not an obstacle.
fn distances(map: &MazeMap, from: Pos) -> Vec<Option<u32>> {
    let mut dist = vec![None; (WIDTH * HEIGHT) as usize];
    dist[from.index(WIDTH)] = Some(0);
    let mut queue = VecDeque::from([from]);
    while let Some(pos) = queue.pop_front() {
        for next in neighbors(pos) {
            if dist[next.index(WIDTH)].is_none() && map.cell(next) != Cell::Obstacle {
                dist[next.index(WIDTH)] = dist[pos.index(WIDTH)].map(|d| d + 1);
                queue.push_back(next);
            }
        }
    }
    dist
}

fn count(map: &MazeMap, wanted: Cell) -> usize {
    map.cells().iter().filter(|cell| **cell == wanted).count()
}

#[test]
fn generated_mazes_have_the_original_properties() {
    for seed in 0..300 {
        let map = generator::generate(&mut GameRng::new(seed, GameRng::MAP)).expect("generates");
        let start = map.start();
        let dist = distances(&map, start);
        for pos in all_cells() {
            if map.cell(pos) != Cell::Obstacle {
                assert!(dist[pos.index(WIDTH)].is_some(), "seed {seed}: {pos:?} is cut off\n{map}");
            }
        }
        let exit = all_cells().find(|&pos| map.cell(pos) == Cell::Item(Item::Exit)).expect("an exit");
        assert!(dist[exit.index(WIDTH)].is_some_and(|d| d >= MIN_EXIT_DISTANCE), "seed {seed}\n{map}");
        let treasures = count(&map, Cell::Item(Item::Treasure));
        assert!((5..=9).contains(&treasures), "seed {seed}: {treasures} treasures");
        let boxes = count(&map, Cell::Monster(MonsterKind::Box));
        assert!((5..=15).contains(&boxes), "seed {seed}: {boxes} boxes");
        let potions = count(&map, Cell::Item(Item::Potion));
        assert!((4..=7).contains(&potions), "seed {seed}: {potions} potions");
        for chest in [Item::HammerChest, Item::ScytheChest, Item::BowChest] {
            assert!(count(&map, Cell::Item(chest)) <= 4, "seed {seed}: {chest:?}");
        }
        let monsters: Vec<Pos> = all_cells()
            .filter(|&pos| matches!(map.cell(pos), Cell::Monster(kind) if kind != MonsterKind::Box))
            .collect();
        assert!((30..=50).contains(&monsters.len()), "seed {seed}: {} monsters", monsters.len());
        for pos in monsters {
            assert!(
                chebyshev(pos, start) > MONSTER_START_CLEARANCE,
                "seed {seed}: a monster at {pos:?} near {start:?}"
            );
        }
    }
}

#[test]
fn generation_is_deterministic_and_seeds_differ() {
    let make = |seed| generator::generate(&mut GameRng::new(seed, GameRng::MAP)).expect("generates");
    assert_eq!(make(5), make(5));
    assert_ne!(make(5), make(6));
}

#[test]
fn every_monster_kind_and_loops_appear_over_seeds() {
    let mut kinds = std::collections::HashSet::new();
    let mut with_loops = 0;
    for seed in 0..50 {
        let map = generator::generate(&mut GameRng::new(seed, GameRng::MAP)).expect("generates");
        kinds.extend(map.cells().iter().filter_map(|cell| match cell {
            Cell::Monster(kind) => Some(*kind),
            _ => None,
        }));
        // A tree has one fewer adjacency than open cells; loops add more.
        let open: Vec<Pos> = all_cells().filter(|&pos| map.cell(pos) != Cell::Obstacle).collect();
        let edges: usize =
            open.iter().map(|pos| neighbors(*pos).filter(|n| map.cell(*n) != Cell::Obstacle).count()).sum::<usize>()
                / 2;
        if edges >= open.len() {
            with_loops += 1;
        }
    }
    assert_eq!(kinds.len(), 5);
    assert!(with_loops > 40, "only {with_loops} of 50 mazes have loops");
}

const MAP_FILES: [(&str, &str); 7] = [
    ("seed-1", include_str!("../../maps/maze/seed-1.txt")),
    ("seed-2", include_str!("../../maps/maze/seed-2.txt")),
    ("seed-3", include_str!("../../maps/maze/seed-3.txt")),
    ("seed-4", include_str!("../../maps/maze/seed-4.txt")),
    ("original-1", include_str!("../../maps/maze/original-1.txt")),
    ("original-21", ORIGINAL_21),
    ("practice", include_str!("../../maps/maze/practice.txt")),
];

#[test]
fn the_map_files_parse_and_every_open_cell_is_reachable() {
    for (name, text) in MAP_FILES {
        let map = MazeMap::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(map.to_string(), text, "{name} prints back unchanged");
        let dist = distances(&map, map.start());
        for pos in all_cells().filter(|&pos| map.cell(pos) != Cell::Obstacle) {
            assert!(dist[pos.index(WIDTH)].is_some(), "{name}: {pos:?} is cut off");
        }
    }
}

#[test]
fn the_seed_maps_are_what_the_generator_makes() {
    for (seed, (name, text)) in MAP_FILES[..4].iter().enumerate() {
        let map = generator::generate(&mut GameRng::new(seed as u64 + 1, GameRng::MAP)).expect("generates");
        assert_eq!(map.to_string(), *text, "maps/maze/{name}.txt");
    }
}

// ---------------------------------------------------------------------------
// Robustness: no reply and no sequence of commands makes the engine panic
// ---------------------------------------------------------------------------

/// Odd replies a bot may send. None may panic; each is either a command or an error.
const ODD_REPLIES: [&str; 30] = [
    "",
    " ",
    "\t",
    "\r",
    "MOVE",
    "ATTACK",
    "MOVE 2147483647 2147483647",
    "MOVE -2147483648 0",
    "MOVE 2147483648 0",
    "MOVE 99999999999999999999999999999 1",
    "ATTACK 99999999999999999999 1 1",
    "ATTACK -2147483648 1 1",
    "ATTACK 2147483647 1 1",
    "MOVE 1 1 😀 ünïcödé message",
    "MOVE １ 1",
    "MOVE ١ 1",
    "MOVÉ 1 1",
    "😀",
    "MOVE\u{a0}1 1",
    "\u{feff}MOVE 1 1",
    "MOVE 1 1\u{0}",
    "MOVE 1\u{0} 1",
    "ATTACK 1 1 1\t",
    "ATTACK\t1 1 1",
    "ATTACK 1  1 1",
    "ATTACK 3 +0 -0",
    "MOVE --1 1",
    "MOVE 1 1 \r",
    "\r\r\r",
    "ATTACK 0 0 0 0 0 0 0 0",
];

/// A reply built from random keywords, separators and fields, so that most of them are
/// almost well-formed.
fn random_reply(rng: &mut GameRng) -> String {
    const KEYWORDS: [&str; 6] = ["MOVE", "ATTACK", "move", "", "ATTACK ", "JUMP"];
    const SEPARATORS: [&str; 7] = [" ", " ", " ", " ", "  ", "\t", ""];
    const FIELDS: [&str; 20] = [
        "0",
        "1",
        "2",
        "3",
        "4",
        "7",
        "11",
        "15",
        "16",
        "-1",
        "+3",
        "-0",
        "007",
        "99999999999",
        "١",
        "３",
        "é",
        "😀",
        "",
        "x",
    ];
    let mut reply = (*rng.pick(&KEYWORDS).expect("keywords")).to_owned();
    for _ in 0..rng.below(6) {
        reply.push_str(rng.pick(&SEPARATORS).expect("separators"));
        reply.push_str(rng.pick(&FIELDS).expect("fields"));
    }
    if rng.below(4) == 0 {
        reply.push('\r');
    }
    reply
}

#[test]
fn no_reply_makes_the_engine_panic() {
    let layout = generator::generate(&mut GameRng::new(21, GameRng::MAP)).expect("generates");
    let mut rng = GameRng::new(99, GameRng::RULES);
    let mut replies: Vec<String> = ODD_REPLIES.iter().map(|reply| (*reply).to_owned()).collect();
    replies.push(format!("MOVE 1 1 {}", "x".repeat(100_000)));
    replies.push("9".repeat(10_000));
    replies.push(format!("ATTACK {} 1 1", "1".repeat(5_000)));
    replies.extend((0..3000).map(|_| random_reply(&mut rng)));
    let mut commands = 0;
    for reply in &replies {
        let mut game = Maze::from_map(MazeRules::default(), &layout, 1, 21);
        let action = game.parse_reply(0, &BotReply::Line(reply.clone()));
        let command = match &action {
            MazeAction::Command(command) => Some(command.clone()),
            MazeAction::Fail { status, .. } => {
                assert_eq!(*status, PlayerStatus::Disqualified, "{reply:?}");
                None
            }
        };
        game.apply(vec![(0, action)], &mut rng);
        let dungeon = game.dungeon(0);
        match command {
            Some(Command::Move { target, .. } | Command::Attack { target, .. }) => {
                commands += 1;
                assert!(target.on_board(WIDTH, HEIGHT), "{reply:?}");
                assert_ne!(dungeon.end(), Some(End::Error), "{reply:?}");
                assert_eq!(dungeon.turn(), 1, "{reply:?}");
            }
            None => assert_eq!((dungeon.hero().score, dungeon.end()), (-10_000, Some(End::Error)), "{reply:?}"),
        }
        let _ = game.snapshot();
        let _ = game.outcome();
    }
    assert!(commands > 20, "the random replies should hold many valid ones; {commands}");
}

/// Checks what must hold after every turn of any game.
fn check_invariants(d: &Dungeon) {
    let hero = d.hero();
    assert!(hero.pos.on_board(WIDTH, HEIGHT) && !d.is_obstacle(hero.pos), "the hero stands on floor: {:?}", hero.pos);
    assert!(hero.hp <= 20);
    assert!(d.is_over() || hero.hp > 0);
    assert!(d.turn() <= 150);
    let mut cells: Vec<Pos> = d.monsters().iter().map(|m| m.pos).collect();
    for monster in d.monsters() {
        assert!(monster.pos.on_board(WIDTH, HEIGHT) && !d.is_obstacle(monster.pos), "{monster:?} on an obstacle");
        assert_ne!(monster.pos, hero.pos, "{monster:?} on the hero");
        assert!(monster.hp > 0 && monster.hp <= monster.kind.max_hp(), "{monster:?}");
    }
    cells.dedup();
    assert_eq!(cells.len(), d.monsters().len(), "two monsters on one cell");
    // The observation: a count that matches, every listed cell in view, sorted by
    // (x, y) and then obstacle, item, monster.
    let text = d.observation();
    let lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(lines[1].parse::<usize>().expect("count"), lines.len() - 2, "{text}");
    let rank = |etype: i32| match etype {
        1 => 0,
        0 | 2..=6 => 1,
        _ => 2,
    };
    let keys: Vec<(i32, i32, i32)> = lines[2..]
        .iter()
        .map(|line| {
            let numbers: Vec<i32> = line.split(' ').map(|n| n.parse().expect("a number")).collect();
            assert_eq!(numbers.len(), 4, "{line}");
            assert!(chebyshev(p(numbers[0], numbers[1]), hero.pos) <= 3, "{line}");
            (numbers[0], numbers[1], rank(numbers[2]))
        })
        .collect();
    let mut sorted_keys = keys.clone();
    sorted_keys.sort();
    sorted_keys.dedup();
    assert_eq!(keys, sorted_keys, "{text}");
}

#[test]
fn random_valid_commands_keep_every_invariant() {
    for seed in 0..12 {
        let layout = generator::generate(&mut GameRng::new(seed, GameRng::MAP)).expect("generates");
        let mut game = Maze::from_map(MazeRules::default(), &layout, 4, seed);
        let mut bots = GameRng::new(seed, GameRng::BOTS);
        let rng = &mut GameRng::new(seed, GameRng::RULES);
        while !game.is_over() {
            let actions: Vec<(usize, MazeAction)> = game
                .to_act()
                .into_iter()
                .map(|seat| {
                    let hero = game.dungeon(seat).hero().pos;
                    // Mostly nearby targets, so that attacks are often valid.
                    let near = |rng: &mut GameRng, c: i32, max: i32| (c + rng.below(9) as i32 - 4).clamp(0, max - 1);
                    let (x, y) = (near(&mut bots, hero.x, WIDTH), near(&mut bots, hero.y, HEIGHT));
                    let command = if bots.below(3) == 0 {
                        Command::Attack { weapon: Weapon::ALL[bots.below(4)], target: p(x, y), message: String::new() }
                    } else {
                        Command::Move { target: p(x, y), message: String::new() }
                    };
                    (seat, MazeAction::Command(command))
                })
                .collect();
            game.apply(actions, rng);
            for seat in 0..4 {
                check_invariants(game.dungeon(seat));
            }
        }
        assert!(game.steps() <= 150);
        for seat in 0..4 {
            assert!(game.dungeon(seat).is_over());
            assert_ne!(game.dungeon(seat).end(), Some(End::Error));
        }
    }
}

/// The original's `heroPathfinding` / `monsterPathfinding`, ported line by line (the
/// visited set filled as the Java fills it), to check the engine's shared BFS against.
fn reference_step(d: &Dungeon, from: Pos, target: Pos, monster_view: Option<i32>) -> Pos {
    let blocked = |pos: Pos| d.is_obstacle(pos) || (monster_view.is_some() && d.monster_at(pos).is_some());
    let mut visited = vec![from];
    let mut first: Vec<(Pos, Pos)> = Vec::new();
    let first_of = |first: &[(Pos, Pos)], pos: Pos| first.iter().rev().find(|(cell, _)| *cell == pos).expect("set").1;
    let mut queue = VecDeque::new();
    let (mut best, mut best_dist) = (from, from.manhattan(target));
    for next in neighbors(from) {
        if monster_view.is_none() && next == target {
            return next;
        }
        if blocked(next) {
            continue;
        }
        queue.push_back(next);
        first.push((next, next));
    }
    while let Some(pos) = queue.pop_front() {
        if pos == target {
            return first_of(&first, pos);
        }
        visited.push(pos);
        let dist = pos.manhattan(target);
        if dist < best_dist {
            (best, best_dist) = (first_of(&first, pos), dist);
        }
        for next in neighbors(pos) {
            let out_of_reach = match monster_view {
                Some(view) => chebyshev(next, from) > view,
                None => chebyshev(next, from) > 3,
            };
            if visited.contains(&next) || blocked(next) || out_of_reach {
                continue;
            }
            queue.push_back(next);
            visited.push(next);
            let step = first_of(&first, pos);
            first.push((next, step));
        }
    }
    best
}

#[test]
fn both_pathfindings_match_a_literal_port_of_the_original() {
    let mut checked = (0, 0);
    for seed in 0..40 {
        let layout = generator::generate(&mut GameRng::new(seed, GameRng::MAP)).expect("generates");
        let mut d = Dungeon::new(&layout, 150, GameRng::new(seed, GameRng::RULES));
        let mut rng = GameRng::new(seed, GameRng::BOTS);
        let free: Vec<Pos> = all_cells().filter(|&pos| !d.is_obstacle(pos) && d.monster_at(pos).is_none()).collect();
        for _ in 0..20 {
            d.hero_mut().pos = *rng.pick(&free).expect("floor");
            let hero = d.hero().pos;
            for target in all_cells().filter(|target| chebyshev(*target, hero) <= 5) {
                assert_eq!(
                    d.hero_step(target),
                    reference_step(&d, hero, target, None),
                    "seed {seed}: {hero:?} to {target:?}"
                );
                checked.0 += 1;
            }
            for monster in d.monsters().to_vec() {
                let distance = chebyshev(monster.pos, hero);
                if distance > monster.kind.range() && distance <= monster.kind.view() {
                    let expected = reference_step(&d, monster.pos, hero, Some(monster.kind.view()));
                    assert_eq!(d.monster_step(&monster), expected, "seed {seed}: {monster:?} to {hero:?}");
                    checked.1 += 1;
                }
            }
        }
    }
    assert!(checked.0 > 10_000 && checked.1 > 200, "{checked:?}");
}

#[test]
fn a_huge_reply_is_not_repeated_in_every_later_replay_frame() {
    // A copy that ends keeps its last description in every frame until the match
    // ends: a bot's text in it must be clipped, or one 2 MB reply would be repeated in
    // up to 149 frames.
    let huge = "Z".repeat(1 << 20);
    let text = map(&["HE..", "...."]).to_string();
    let mut game = Maze::new(MazeRules::default(), Some(&text), &players(3), 5).expect("valid");
    let rng = &mut GameRng::new(0, GameRng::RULES);
    let replies = [huge.clone(), format!("MOVE 1 0 {huge}"), format!("MOVE 0 0 {huge}")];
    let actions =
        replies.iter().enumerate().map(|(seat, line)| (seat, game.parse_reply(seat, &BotReply::Line(line.clone()))));
    game.apply(actions.collect(), rng);
    assert_eq!(game.dungeon(0).end(), Some(End::Error));
    assert_eq!(game.dungeon(1).end(), Some(End::Exit));
    assert_eq!(game.dungeon(2).end(), None);
    for seat in 0..3 {
        let last = game.dungeon(seat).last();
        assert!(last.chars().count() < 300, "seat {seat}: {} chars", last.chars().count());
    }
    assert!(game.dungeon(0).last().starts_with("error: unknown command \"ZZZZ"), "{}", game.dungeon(0).last());
    assert!(game.dungeon(1).last().starts_with("MOVE 1 0 \"ZZZZ"), "{}", game.dungeon(1).last());
    assert!(game.snapshot().get().len() < 2_000);
}
