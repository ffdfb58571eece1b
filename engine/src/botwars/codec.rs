//! The bot I/O and the replay documents of Skookum Botwars: the original's request a
//! side is sent, a reply read into an action (malformed input is an action too), the
//! state written into a frame.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Botwars, BotwarsRules, Side, Winner};
use crate::writer::write_int;
use crate::{BotReply, PlayerStatus, Seat};

/// One side's parsed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum BotwarsAction {
    /// Well-formed moves, in order. A move whose indices are not whole cells of the
    /// grid is kept as `None` and ignored.
    Moves(Vec<Option<(usize, usize)>>),
    /// The side is disqualified, with the status to record.
    Disqualified(PlayerStatus),
}

/// What a side's reply means on a grid of `cells` cells.
pub(crate) fn action_of(reply: &BotReply, cells: usize) -> BotwarsAction {
    match reply {
        BotReply::Line(text) => parse_moves(text, cells),
        BotReply::Unreadable => BotwarsAction::Disqualified(PlayerStatus::Disqualified),
        BotReply::Timeout => BotwarsAction::Disqualified(PlayerStatus::TimedOut),
        BotReply::Crashed => BotwarsAction::Disqualified(PlayerStatus::Crashed),
        BotReply::OutputLimit => BotwarsAction::Disqualified(PlayerStatus::OutputLimit),
    }
}

/// Parses a reply: a JSON array of `{"from": n, "to": n}`. Anything else, or an
/// element without numeric `from` and `to`, disqualifies.
///
/// Elements are read field by field and numbers converted here, because the original's
/// `JSON.parse` reads a number outside the double range (`1e400`) as Infinity, a
/// number, where serde_json refuses the whole text: such a move is ignored, never a
/// disqualification (`botwars.md`). Of a key given twice the last counts, as in
/// JavaScript.
pub fn parse_moves(reply: &str, cells: usize) -> BotwarsAction {
    if let Some(moves) = canonical_moves(reply, cells) {
        return BotwarsAction::Moves(moves);
    }
    match serde_json::from_str::<Vec<MoveIn>>(reply) {
        Ok(items) => BotwarsAction::Moves(items.into_iter().map(|item| item.cells(cells)).collect()),
        Err(_) => BotwarsAction::Disqualified(PlayerStatus::Disqualified),
    }
}

/// The moves of a reply written the way bots nearly always write it,
/// `[{"from":n,"to":n},...]` with no spaces and plain integers, read in one pass;
/// `None` for anything else, which [`parse_moves`] then reads with serde_json. On the
/// texts it accepts, both readings agree (a test compares them).
fn canonical_moves(reply: &str, cells: usize) -> Option<Vec<Option<(usize, usize)>>> {
    let cell = |n: u64| (n < cells as u64).then_some(n as usize);
    let mut rest = reply.as_bytes().strip_prefix(b"[")?;
    // A move takes at least 18 bytes, `{"from":0,"to":0}` and a separator: the list
    // is sized once.
    let mut moves = Vec::with_capacity(reply.len() / 18);
    if rest == b"]" {
        return Some(moves);
    }
    loop {
        let (from, after) = canonical_integer(rest.strip_prefix(b"{\"from\":")?)?;
        let (to, after) = canonical_integer(after.strip_prefix(b",\"to\":")?)?;
        rest = after.strip_prefix(b"}")?;
        moves.push(cell(from).zip(cell(to)));
        if rest == b"]" {
            return Some(moves);
        }
        rest = rest.strip_prefix(b",")?;
    }
}

/// The JSON integer `text` starts with, if it is one of 1 to 15 digits (exact as a
/// double) without a leading zero, and the text after it.
fn canonical_integer(text: &[u8]) -> Option<(u64, &[u8])> {
    // One pass: the digits are read as they are counted.
    let mut value = 0;
    let mut digits = 0;
    for &byte in text.iter().take(16) {
        if !byte.is_ascii_digit() {
            break;
        }
        value = value * 10 + u64::from(byte - b'0');
        digits += 1;
    }
    if digits == 0 || digits > 15 || (digits > 1 && text[0] == b'0') {
        return None;
    }
    Some((value, &text[digits..]))
}

/// One element of a reply: an object whose `from` and `to` are numbers (the last of
/// each, when a key repeats). Anything else fails to read.
struct MoveIn {
    from: f64,
    to: f64,
}

impl MoveIn {
    /// The move as grid cells: `None` unless both are whole numbers of cells.
    fn cells(&self, cells: usize) -> Option<(usize, usize)> {
        let cell = |n: f64| (n.fract() == 0.0 && n >= 0.0 && n < cells as f64).then_some(n as usize);
        cell(self.from).zip(cell(self.to))
    }
}

/// A key of a move's object, read after JSON unescaping (`"fr\u006fm"` is `from`).
enum MoveKey {
    From,
    To,
    Other,
}

impl<'de> Deserialize<'de> for MoveKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = MoveKey;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a key")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<MoveKey, E> {
                Ok(match key {
                    "from" => MoveKey::From,
                    "to" => MoveKey::To,
                    _ => MoveKey::Other,
                })
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for MoveIn {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MoveVisitor;
        impl<'de> serde::de::Visitor<'de> for MoveVisitor {
            type Value = MoveIn;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("an object with numeric from and to")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<MoveIn, M::Error> {
                let (mut from, mut to): (Option<&'de RawValue>, Option<&'de RawValue>) = (None, None);
                while let Some(key) = map.next_key::<MoveKey>()? {
                    match key {
                        MoveKey::From => from = Some(map.next_value()?),
                        MoveKey::To => to = Some(map.next_value()?),
                        MoveKey::Other => {
                            map.next_value::<&'de RawValue>()?;
                        }
                    }
                }
                let number = |raw: Option<&RawValue>| raw.and_then(|value| json_number(value.get()));
                match (number(from), number(to)) {
                    (Some(from), Some(to)) => Ok(MoveIn { from, to }),
                    _ => Err(serde::de::Error::custom("a move needs numeric from and to")),
                }
            }
        }
        deserializer.deserialize_map(MoveVisitor)
    }
}

/// A raw JSON value as JavaScript reads a number: `None` unless it is one (serde_json
/// has checked its syntax), infinite beyond the double range, zero below it.
fn json_number(raw: &str) -> Option<f64> {
    if raw.starts_with(|c: char| c == '-' || c.is_ascii_digit()) { raw.parse().ok() } else { None }
}

/// The fields of the state document that never change in a match (the grid's size,
/// the turn limit, the spawns, the id), written once when it starts rather than at
/// every step.
#[derive(Debug, Clone)]
pub(super) struct FixedFields {
    /// `{"rows":..,"cols":..,"maxTurns":..,"turnsElapsed":`
    head: Vec<u8>,
    /// Each side's `,"spawn":..,"spawnDisabled":`
    spawns: [Vec<u8>; 2],
    /// `,"GameId":..`
    game_id: Vec<u8>,
}

impl FixedFields {
    pub(super) fn new(rules: &BotwarsRules, sides: &[Side; 2], game_id: u64) -> FixedFields {
        let field = |out: &mut Vec<u8>, name: &str, value: u64| {
            out.extend_from_slice(name.as_bytes());
            write_int(out, value);
        };
        let mut head = Vec::new();
        field(&mut head, "{\"rows\":", rules.rows as u64);
        field(&mut head, ",\"cols\":", rules.cols as u64);
        field(&mut head, ",\"maxTurns\":", u64::from(rules.max_turns));
        head.extend_from_slice(b",\"turnsElapsed\":");
        let spawns = sides.map(|side| {
            let mut spawn = Vec::new();
            field(&mut spawn, ",\"spawn\":", side.spawn as u64);
            spawn.extend_from_slice(b",\"spawnDisabled\":");
            spawn
        });
        let mut game_id_field = Vec::new();
        field(&mut game_id_field, ",\"GameId\":", game_id);
        FixedFields { head, spawns, game_id: game_id_field }
    }
}

impl Botwars {
    fn winner_letter(&self) -> Option<&'static str> {
        self.winner.map(|winner| match winner {
            Winner::Seat(0) => "r",
            Winner::Seat(_) => "b",
            Winner::Draw => ".",
        })
    }

    /// Appends the original's request to `seat`,
    /// `{"player":"r"|"b","state":{..},"gameId":..}`, to `out`.
    pub(super) fn write_request(&self, seat: Seat, out: &mut Vec<u8>) {
        out.extend_from_slice(if seat == 0 {
            b"{\"player\":\"r\",\"state\":"
        } else {
            b"{\"player\":\"b\",\"state\":"
        });
        self.write_state_doc(out, false);
        out.extend_from_slice(b",\"gameId\":");
        write_int(out, self.game_id);
        out.push(b'}');
    }

    /// Appends the original's state document (`utils.buildGameState`) to `out`, with the
    /// winner when `with_winner`: `{"rows":..,"cols":..,"maxTurns":..,"turnsElapsed":..,
    /// "grid":"..","p1":{..},"p2":{..},"GameId":..[,"winner":".."]}`.
    ///
    /// Written by hand, because it is on the path of every step: its fields are numbers,
    /// booleans and the grid, whose letters (`. r b * x X`) need no escaping in JSON;
    /// the fields that never change in a match are copied from [`FixedFields`]. A test
    /// checks it against serde's rendering of the same document.
    pub(super) fn write_state_doc(&self, out: &mut Vec<u8>, with_winner: bool) {
        let fixed = &self.fixed_fields;
        out.extend_from_slice(&fixed.head);
        write_int(out, self.turns_elapsed);
        out.extend_from_slice(b",\"grid\":\"");
        out.extend_from_slice(&self.grid);
        let names: [&[u8]; 2] = [b"\",\"p1\":{\"energy\":", b",\"p2\":{\"energy\":"];
        for ((name, side), spawn) in names.into_iter().zip(&self.sides).zip(&fixed.spawns) {
            out.extend_from_slice(name);
            write_int(out, side.energy);
            out.extend_from_slice(spawn);
            out.extend_from_slice(if side.spawn_disabled { b"true}" } else { b"false}" });
        }
        out.extend_from_slice(&fixed.game_id);
        if let Some(winner) = self.winner_letter().filter(|_| with_winner) {
            out.extend_from_slice(b",\"winner\":\"");
            out.extend_from_slice(winner.as_bytes());
            out.push(b'"');
        }
        out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;
    use crate::Game;

    /// The original's documents as serde writes them: what the hand-written ones must equal.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct StateDoc<'a> {
        rows: usize,
        cols: usize,
        max_turns: u32,
        turns_elapsed: u32,
        grid: &'a str,
        p1: Side,
        p2: Side,
        #[serde(rename = "GameId")]
        game_id_upper: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        winner: Option<&'static str>,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct RequestDoc<'a> {
        player: &'static str,
        state: StateDoc<'a>,
        game_id: u64,
    }

    fn state_doc(game: &Botwars, with_winner: bool) -> StateDoc<'_> {
        StateDoc {
            rows: game.rules.rows,
            cols: game.rules.cols,
            max_turns: game.rules.max_turns,
            turns_elapsed: game.turns_elapsed,
            grid: game.grid(),
            p1: game.sides[0],
            p2: game.sides[1],
            game_id_upper: game.game_id,
            winner: if with_winner { game.winner_letter() } else { None },
        }
    }

    /// Numbers a reply may hold: plain ones the canonical reading takes, and others.
    const NUMBERS: [&str; 12] =
        ["0", "7", "12", "399", "400", "123456789012345", "1234567890123456", "007", "1.0", "1e2", "-3", "1e400"];

    proptest::proptest! {
        /// Replies shaped as bots write them, some numbers not plain, some with a piece
        /// of JSON (or not) put in at a random place.
        #[test]
        fn the_canonical_reading_agrees_with_serde(
            moves in proptest::collection::vec((0..NUMBERS.len(), 0..NUMBERS.len()), 0..6),
            insert in proptest::option::of((0..200usize, proptest::sample::select(vec![" ", ",", "}", "{", "\"", "x", "]"]))),
        ) {
            let items: Vec<String> =
                moves.iter().map(|&(from, to)| format!("{{\"from\":{},\"to\":{}}}", NUMBERS[from], NUMBERS[to])).collect();
            let mut text = format!("[{}]", items.join(","));
            if let Some((at, piece)) = insert {
                text.insert_str(at % (text.len() + 1), piece);
            }
            let general = serde_json::from_str::<Vec<MoveIn>>(&text)
                .map(|items| items.iter().map(|item| item.cells(400)).collect::<Vec<_>>())
                .ok();
            if let Some(fast) = canonical_moves(&text, 400) {
                proptest::prop_assert_eq!(Some(fast), general, "{}", text);
            }
        }
    }

    #[test]
    fn the_canonical_reading_takes_the_usual_replies() {
        assert_eq!(canonical_moves("[]", 400), Some(vec![]));
        assert_eq!(
            canonical_moves(r#"[{"from":21,"to":22},{"from":0,"to":400}]"#, 400),
            Some(vec![Some((21, 22)), None])
        );
        for other in ["", "[ ]", r#"[{"to":1,"from":2}]"#, r#"[{"from":01,"to":1}]"#, r#"[{"from":1.0,"to":1}]"#] {
            assert_eq!(canonical_moves(other, 400), None, "{other}");
        }
    }

    #[test]
    fn the_hand_written_documents_are_serdes() {
        let rules = BotwarsRules { rows: 3, cols: 4, max_turns: 7, ..BotwarsRules::default() };
        let mut game = Botwars::from_position(rules, "r.*xX.b....*", [0, 12], u64::MAX).expect("a position");
        game.sides[1].spawn_disabled = true;
        game.turns_elapsed = 5;
        for winner in [None, Some(Winner::Seat(0)), Some(Winner::Seat(1)), Some(Winner::Draw)] {
            game.winner = winner;
            for seat in [0, 1] {
                let expected =
                    RequestDoc { player: ["r", "b"][seat], state: state_doc(&game, false), game_id: game.game_id };
                let expected = serde_json::to_string(&expected).expect("serializes");
                assert_eq!(game.observation(seat), expected);
            }
            let expected = serde_json::to_string(&state_doc(&game, true)).expect("serializes");
            assert_eq!(game.snapshot().get(), expected);
        }
    }
}
