//! The original JSON state document, sent to bots and kept in replays.

use serde::Serialize;
use serde_json::value::{RawValue, to_raw_value};

use super::board::{Dir, HeroId, Pos};
use super::{Hero, Vindinium};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HeroDoc<'a> {
    id: HeroId,
    name: &'a str,
    pos: Pos,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_dir: Option<&'static str>,
    life: i32,
    gold: i64,
    mine_count: usize,
    spawn_pos: Pos,
    crashed: bool,
}

#[derive(Serialize)]
struct BoardDoc {
    size: usize,
    tiles: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GameDoc<'a> {
    id: &'a str,
    turn: u64,
    max_turns: u64,
    heroes: Vec<HeroDoc<'a>>,
    board: BoardDoc,
    finished: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StateDoc<'a> {
    game: GameDoc<'a>,
    hero: HeroDoc<'a>,
    token: String,
    view_url: &'static str,
    play_url: &'static str,
}

fn hero_doc<'a>(game: &Vindinium, hero: &'a Hero) -> HeroDoc<'a> {
    HeroDoc {
        id: hero.id,
        name: &hero.name,
        pos: hero.pos,
        last_dir: hero.last_dir.map(Dir::name),
        life: hero.life,
        gold: hero.gold,
        mine_count: game.board.mines_of(hero.id),
        spawn_pos: hero.spawn,
        crashed: hero.crashed,
    }
}

fn game_doc(game: &Vindinium) -> GameDoc<'_> {
    let positions: Vec<(HeroId, Pos)> = game.heroes.iter().map(|hero| (hero.id, hero.pos)).collect();
    GameDoc {
        id: &game.game_id,
        turn: game.turn,
        max_turns: game.rules.max_turns,
        heroes: game.heroes.iter().map(|hero| hero_doc(game, hero)).collect(),
        board: BoardDoc { size: game.board.size(), tiles: game.board.render(&positions) },
        finished: game.finished,
    }
}

/// The state document for the hero in `seat`: one line of JSON.
pub(super) fn document(game: &Vindinium, seat: usize) -> String {
    let hero = &game.heroes[seat.min(game.heroes.len() - 1)];
    let doc = StateDoc {
        game: game_doc(game),
        hero: hero_doc(game, hero),
        token: format!("seat{seat}"),
        view_url: "",
        play_url: "",
    };
    serde_json::to_string(&doc).unwrap_or_default()
}

/// The `game` object alone: what a replay frame records.
pub(super) fn snapshot(game: &Vindinium) -> Box<RawValue> {
    // Plain structs of strings and integers always serialize.
    to_raw_value(&game_doc(game)).unwrap_or_default()
}
