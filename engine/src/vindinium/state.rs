//! The original JSON state document, sent to bots and kept in replays.

use serde::Serialize;

use crate::game::write_json;

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

/// `hero`'s part of the document; `mines` counts each hero's mines by id.
fn hero_doc<'a>(hero: &'a Hero, mines: &[usize; 5]) -> HeroDoc<'a> {
    HeroDoc {
        id: hero.id,
        name: &hero.name,
        pos: hero.pos,
        last_dir: hero.last_dir.map(Dir::name),
        life: hero.life,
        gold: hero.gold,
        mine_count: mines.get(usize::from(hero.id)).copied().unwrap_or(0),
        spawn_pos: hero.spawn,
        crashed: hero.crashed,
    }
}

fn game_doc<'a>(game: &'a Vindinium, mines: &[usize; 5]) -> GameDoc<'a> {
    let positions: Vec<(HeroId, Pos)> = game.heroes.iter().map(|hero| (hero.id, hero.pos)).collect();
    GameDoc {
        id: &game.game_id,
        turn: game.turn,
        max_turns: game.rules.max_turns,
        heroes: game.heroes.iter().map(|hero| hero_doc(hero, mines)).collect(),
        board: BoardDoc { size: game.board.size(), tiles: game.board.render(&positions) },
        finished: game.finished,
    }
}

/// Appends the state document for the hero in `seat` to `out`: one line of JSON.
pub(super) fn write_document(game: &Vindinium, seat: usize, out: &mut Vec<u8>) {
    let mines = game.board.mine_counts();
    let hero = &game.heroes[seat.min(game.heroes.len() - 1)];
    let doc = StateDoc {
        game: game_doc(game, &mines),
        hero: hero_doc(hero, &mines),
        token: format!("seat{seat}"),
        view_url: "",
        play_url: "",
    };
    write_json(out, &doc);
}

/// Appends the `game` object alone to `out`: what a replay frame records.
pub(super) fn write_snapshot(game: &Vindinium, out: &mut Vec<u8>) {
    write_json(out, &game_doc(game, &game.board.mine_counts()));
}
