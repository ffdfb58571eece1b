//! The bot I/O and the replay documents: the observation a hero is sent (its
//! [`Sight`], written in the original's text format), a reply read into an action
//! (`MOVE x y [message]` or `ATTACK w x y [message]`, parsed as strictly as the
//! original's `Action.parse`; malformed input is an action too), and a copy's state
//! written into a replay frame.

use super::map::{HEIGHT, Item, WIDTH, all_cells, chebyshev};
use super::rules::HERO_FOV;
use super::state::{Dungeon, Maze, Monster, Resolved, Waste, Weapon};
use crate::writer::{text_of, write_int, write_json};
use crate::{BotReply, PlayerStatus, Pos, java_trim};

/// A well-formed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `MOVE x y [message]`: one step towards the target cell.
    Move {
        /// The target cell, inside the maze.
        target: Pos,
        /// The free text after the coordinates, trimmed.
        message: String,
    },
    /// `ATTACK w x y [message]`.
    Attack {
        /// The weapon.
        weapon: Weapon,
        /// The target cell, inside the maze.
        target: Pos,
        /// The free text after the coordinates, trimmed.
        message: String,
    },
}

/// A reply that ends the game with the error score.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The first word is not `MOVE` or `ATTACK` (case-sensitive); the word, clipped
    /// to [`QUOTE_CHARS`] characters.
    #[error("unknown command {0:?}; expected MOVE or ATTACK")]
    Keyword(String),
    /// A number is missing or is not an integer.
    #[error("invalid {keyword} arguments; expected {usage}")]
    Arguments {
        /// `MOVE` or `ATTACK`.
        keyword: &'static str,
        /// The expected form.
        usage: &'static str,
    },
    /// The coordinates are outside the maze.
    #[error("coordinates ({x}, {y}) are outside the 16x12 maze")]
    OutsideMaze {
        /// The given column.
        x: i64,
        /// The given row.
        y: i64,
    },
    /// The weapon number is not 0 to 3.
    #[error("weapon {0} does not exist; expected 0 sword, 1 hammer, 2 scythe or 3 bow")]
    Weapon(i64),
}

/// At most this many characters of a bot's own text are quoted in error messages and
/// turn descriptions: a copy that has ended repeats its last description in every
/// later replay frame.
pub const QUOTE_CHARS: usize = 80;

/// `text` cut to [`QUOTE_CHARS`] characters, with `…` when something was cut.
pub(super) fn clip(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The zero of every run of decimal digits (Unicode category Nd) in the Basic
/// Multilingual Plane, in order. Java 17's `Character.digit`, which the original referee's
/// `Integer.parseInt` uses, reads these (Unicode 13; no later version added one to the
/// plane); each run is ten code points, zero to nine.
const DIGIT_ZEROS: [u32; 37] = [
    0x0030, 0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6, 0x0D66, 0x0DE6,
    0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40,
    0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
];

/// The value of a decimal digit of any script in [`DIGIT_ZEROS`].
fn digit(c: char) -> Option<i64> {
    let code = u32::from(c);
    let run = DIGIT_ZEROS.partition_point(|&zero| zero <= code).checked_sub(1)?;
    let value = code - DIGIT_ZEROS[run];
    (value < 10).then_some(i64::from(value))
}

/// Java's `Integer.parseInt`: an optional ASCII sign, then one or more decimal digits
/// of any script (mixed scripts too), within 32 bits.
fn parse_int(field: &str) -> Option<i64> {
    let (negative, digits) = match field.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, field.strip_prefix('+').unwrap_or(field)),
    };
    if digits.is_empty() {
        return None;
    }
    let mut magnitude: i64 = 0;
    for c in digits.chars() {
        magnitude = magnitude * 10 + digit(c)?;
        if magnitude > 1 << 31 {
            return None;
        }
    }
    i32::try_from(if negative { -magnitude } else { magnitude }).ok().map(i64::from)
}

/// Splits `text` on single spaces into at most `limit` fields, as Java's
/// `split(" ", limit)`: the last field keeps the rest of the text.
fn split(text: &str, limit: usize) -> Vec<&str> {
    text.splitn(limit, ' ').collect()
}

fn message(rest: Option<&&str>) -> String {
    rest.map(|text| java_trim(text).to_owned()).unwrap_or_default()
}

/// Parses one reply line as the original referee does (`maze.md`). Errors are checked
/// before anything about the game state: keyword, numbers, coordinates inside the maze,
/// then the weapon number.
///
/// A `\r` ends the line (the original's reader ends one there too), so what follows it is
/// ignored. The keyword is the text before the first space with control characters
/// trimmed from both ends (`\tMOVE 1 2` is a move). Numbers are separated by exactly one
/// space: two spaces in a row or a tab make a field that does not parse. Text after the
/// numbers is the message.
pub fn parse_command(line: &str) -> Result<Command, CommandError> {
    parse_plain(line).map_or_else(|| parse_any(line), Ok)
}

/// The usual reply, `MOVE x y` or `ATTACK w x y` with numbers of one or two ASCII
/// digits, valid and without a message, read without [`parse_any`]'s splitting into
/// vectors; `None` for anything else, which [`parse_any`] reads (a proptest checks that
/// they agree).
fn parse_plain(line: &str) -> Option<Command> {
    let line = line.as_bytes();
    let (keyword, mut rest) = line.split_at(line.iter().position(|&byte| byte == b' ')?);
    let mut numbers = [0; 3];
    let mut count = 0;
    // Byte by byte, each field a space and one or two digits: the general parser's
    // splitting costs more than the rest of a step's reading.
    while !rest.is_empty() {
        let (value, taken) = match *rest {
            [b' ', tens @ b'0'..=b'9', ones @ b'0'..=b'9', ..] => {
                (i32::from(tens - b'0') * 10 + i32::from(ones - b'0'), 3)
            }
            [b' ', ones @ b'0'..=b'9', ..] => (i32::from(ones - b'0'), 2),
            _ => return None,
        };
        *numbers.get_mut(count)? = value;
        count += 1;
        rest = &rest[taken..];
    }
    let target = |x: i32, y: i32| Some(Pos::new(x, y)).filter(|pos| pos.on_board(WIDTH, HEIGHT));
    match (keyword, count, numbers) {
        (b"MOVE", 2, [x, y, _]) => Some(Command::Move { target: target(x, y)?, message: String::new() }),
        (b"ATTACK", 3, [w, x, y]) => Some(Command::Attack {
            weapon: Weapon::from_index(i64::from(w))?,
            target: target(x, y)?,
            message: String::new(),
        }),
        _ => None,
    }
}

/// [`parse_command`] for any line.
fn parse_any(line: &str) -> Result<Command, CommandError> {
    let line = line.split('\r').next().unwrap_or_default();
    let mut words = line.splitn(2, ' ');
    let keyword = java_trim(words.next().unwrap_or_default());
    let rest = words.next();
    let coordinates = |x: i64, y: i64| {
        let target = Pos::new(x as i32, y as i32);
        if target.on_board(WIDTH, HEIGHT) { Ok(target) } else { Err(CommandError::OutsideMaze { x, y }) }
    };
    match keyword {
        "MOVE" => {
            let error = CommandError::Arguments { keyword: "MOVE", usage: "MOVE x y [message]" };
            let fields = split(rest.ok_or(error.clone())?, 3);
            let number = |i: usize| fields.get(i).and_then(|field| parse_int(field)).ok_or(error.clone());
            let (x, y) = (number(0)?, number(1)?);
            Ok(Command::Move { target: coordinates(x, y)?, message: message(fields.get(2)) })
        }
        "ATTACK" => {
            let error = CommandError::Arguments { keyword: "ATTACK", usage: "ATTACK weapon x y [message]" };
            let fields = split(rest.ok_or(error.clone())?, 4);
            let number = |i: usize| fields.get(i).and_then(|field| parse_int(field)).ok_or(error.clone());
            let (w, x, y) = (number(0)?, number(1)?, number(2)?);
            let target = coordinates(x, y)?;
            let weapon = Weapon::from_index(w).ok_or(CommandError::Weapon(w))?;
            Ok(Command::Attack { weapon, target, message: message(fields.get(3)) })
        }
        other => Err(CommandError::Keyword(clip(other))),
    }
}

/// One seat's parsed reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MazeAction {
    /// A well-formed command.
    Command(Command),
    /// The game ends with the error score and this status.
    Fail {
        /// `Disqualified` for an invalid command, `TimedOut` or `Crashed`.
        status: PlayerStatus,
        /// What was wrong.
        reason: String,
    },
}

/// Reads one reply: a command, or the failure it is.
pub fn parse_reply(reply: &BotReply) -> MazeAction {
    match reply {
        BotReply::Line(text) => match parse_command(text) {
            Ok(command) => MazeAction::Command(command),
            Err(error) => MazeAction::Fail { status: PlayerStatus::Disqualified, reason: error.to_string() },
        },
        BotReply::Unreadable => {
            MazeAction::Fail { status: PlayerStatus::Disqualified, reason: "unreadable reply".into() }
        }
        BotReply::Timeout => MazeAction::Fail { status: PlayerStatus::TimedOut, reason: "timeout".into() },
        BotReply::Crashed => MazeAction::Fail { status: PlayerStatus::Crashed, reason: "the bot crashed".into() },
        BotReply::OutputLimit => MazeAction::Fail {
            status: PlayerStatus::OutputLimit,
            reason: "the bot's output passed the replay limit".into(),
        },
    }
}

/// The entity type of an obstacle in the protocol (its value is always −1).
pub const OBSTACLE: i32 = 1;

/// One entity a hero sees: a line of its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entity {
    /// Where it is.
    pub pos: Pos,
    /// Its type: 0 exit, 1 obstacle, 2 to 6 items, 7 and up boxes and monsters.
    pub etype: i32,
    /// Its value: an item's worth, a monster's hp, −1 for an obstacle.
    pub evalue: i32,
}

/// What a hero sees at the start of a turn: everything its input holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sight {
    /// Where it stands.
    pub hero: Pos,
    /// Its health.
    pub hp: i32,
    /// Its score.
    pub score: i64,
    /// Charges of the hammer, scythe and bow.
    pub charges: [u32; 3],
    /// The entities in view, in input order.
    pub entities: Vec<Entity>,
}

impl Sight {
    /// Appends the input text (see [`Dungeon::write_observation`]) to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        let [hammer, scythe, bow] = self.charges;
        // Writing to a Vec cannot fail.
        let _ = write!(
            out,
            "{} {} {} {} {hammer} {scythe} {bow}\n{}",
            self.hero.x,
            self.hero.y,
            self.hp,
            self.score,
            self.entities.len()
        );
        for entity in &self.entities {
            let _ = write!(out, "\n{} {} {} {}", entity.pos.x, entity.pos.y, entity.etype, entity.evalue);
        }
    }
}

impl Maze {
    /// `{"step":..,"copies":[..]}`, each copy's state as [`Dungeon`] writes it.
    pub(super) fn write_state(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"step\":");
        write_int(out, self.steps);
        out.extend_from_slice(b",\"copies\":[");
        for (index, copy) in self.copies.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            copy.write_state(out);
        }
        out.extend_from_slice(b"]}");
    }
}

impl Dungeon {
    /// What the hero sees this turn: itself and every entity within its view
    /// (Chebyshev 3, walls ignored), sorted by x, then y, then obstacle, item, monster.
    pub fn sight(&self) -> Sight {
        let hero = &self.hero;
        // The monsters in view, by their cell of the view (at most one per cell; the
        // first in the list, as `monster_at` finds it).
        const SIDE: i32 = 2 * HERO_FOV + 1;
        let mut in_view = [None; (SIDE * SIDE) as usize];
        let view_cell = |pos: Pos| ((pos.x - hero.pos.x + HERO_FOV) * SIDE + pos.y - hero.pos.y + HERO_FOV) as usize;
        for monster in self.monsters.iter().rev().filter(|monster| chebyshev(monster.pos, hero.pos) <= HERO_FOV) {
            in_view[view_cell(monster.pos)] = Some(monster);
        }
        let mut entities = Vec::new();
        for x in hero.pos.x - HERO_FOV..=hero.pos.x + HERO_FOV {
            for pos in (hero.pos.y - HERO_FOV..=hero.pos.y + HERO_FOV).map(|y| Pos::new(x, y)) {
                if !pos.on_board(WIDTH, HEIGHT) {
                    continue;
                }
                if self.obstacles[pos.index(WIDTH)] {
                    entities.push(Entity { pos, etype: OBSTACLE, evalue: -1 });
                }
                if let Some(item) = self.items[pos.index(WIDTH)] {
                    entities.push(Entity { pos, etype: item.type_id(), evalue: item.value() });
                }
                if let Some(monster) = in_view[view_cell(pos)] {
                    entities.push(Entity { pos, etype: monster.kind.type_id(), evalue: monster.hp });
                }
            }
        }
        let [_, hammer, scythe, bow] = hero.charges;
        Sight { hero: hero.pos, hp: hero.hp, score: hero.score, charges: [hammer, scythe, bow], entities }
    }

    /// Appends the input of one turn in the original's format to `out`: the hero line,
    /// the number of entities, then one line per entity of [`Dungeon::sight`]. No final
    /// newline.
    pub fn write_observation(&self, out: &mut Vec<u8>) {
        self.sight().write(out);
    }

    /// [`Dungeon::write_observation`] as a string.
    pub fn observation(&self) -> String {
        text_of(|out| self.write_observation(out))
    }

    /// Appends the copy's state for replay frames to `out`: `{"turn":..,"hero":{"x":..,
    /// "y":..,"hp":..,"score":..,"charges":[..]},["end":"..",]"last":"..","items":
    /// [[x,y,etype],..],"monsters":[[x,y,etype,hp],..]}`, items in map order.
    ///
    /// Written by hand (it is most of every frame); the strings go through serde_json,
    /// and the item and monster lists are the copy's [`FrameLists`]. A test checks it
    /// against serde's rendering of the same document.
    pub(crate) fn write_state(&self, out: &mut Vec<u8>) {
        let hero = &self.hero;
        out.extend_from_slice(b"{\"turn\":");
        write_int(out, self.turn);
        out.extend_from_slice(b",\"hero\":{\"x\":");
        write_number(out, hero.pos.x);
        out.extend_from_slice(b",\"y\":");
        write_number(out, hero.pos.y);
        out.extend_from_slice(b",\"hp\":");
        write_number(out, hero.hp);
        out.extend_from_slice(b",\"score\":");
        write_int(out, hero.score);
        out.extend_from_slice(b",\"charges\":[");
        for (index, weapon) in [1, 2, 3].into_iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            write_number(out, i64::from(hero.charges[weapon]));
        }
        out.extend_from_slice(b"]}");
        if let Some(end) = self.end {
            out.extend_from_slice(b",\"end\":");
            write_json(out, &end);
        }
        out.extend_from_slice(b",\"last\":");
        write_string(out, &self.last);
        out.extend_from_slice(b",\"items\":");
        out.extend_from_slice(&self.lists.items);
        out.extend_from_slice(b",\"monsters\":");
        out.extend_from_slice(&self.lists.monsters);
        out.push(b'}');
    }
}

/// A copy's item and monster lists as its replay state holds them, JSON arrays of
/// `[x,y,etype]` (items in map order) and `[x,y,etype,hp]` (monsters as the copy
/// lists them). They are most of every frame and most turns change neither, so each
/// is written when it changes rather than in every frame.
#[derive(Debug, Clone)]
pub(crate) struct FrameLists {
    items: Vec<u8>,
    monsters: Vec<u8>,
}

impl FrameLists {
    /// The lists of a copy with `items` (by cell, row by row) and `monsters`.
    pub(super) fn new(items: &[Option<Item>], monsters: &[Monster]) -> Self {
        // Room for the longest lists a maze holds (an entry on every cell), so that
        // rewriting one does not grow it.
        let mut lists = FrameLists { items: Vec::with_capacity(2048), monsters: Vec::with_capacity(4096) };
        lists.set_items(items);
        lists.set_monsters(monsters);
        lists
    }

    /// Rewrites the item list after a change to `items`.
    pub(super) fn set_items(&mut self, items: &[Option<Item>]) {
        let items = all_cells().filter_map(|pos| items[pos.index(WIDTH)].map(|item| [pos.x, pos.y, item.type_id()]));
        write_lists(&mut self.items, items);
    }

    /// Rewrites the monster list after a change to `monsters`.
    pub(super) fn set_monsters(&mut self, monsters: &[Monster]) {
        let monsters =
            monsters.iter().map(|monster| [monster.pos.x, monster.pos.y, monster.kind.type_id(), monster.hp]);
        write_lists(&mut self.monsters, monsters);
    }
}

/// Replaces `out` with a JSON array of arrays of integers.
fn write_lists<const N: usize>(out: &mut Vec<u8>, lists: impl Iterator<Item = [i32; N]>) {
    out.clear();
    out.push(b'[');
    for (index, numbers) in lists.enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.push(b'[');
        for (index, value) in numbers.into_iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            write_number(out, value);
        }
        out.push(b']');
    }
    out.push(b']');
}

/// Appends the integer `value` to `out` in decimal, as JSON writes it. Most numbers of
/// a state (cells, kinds, hp, charges) are one digit, written without formatting.
fn write_number(out: &mut Vec<u8>, value: impl Into<i64>) {
    let value = value.into();
    match u8::try_from(value) {
        Ok(digit @ 0..=9) => out.push(b'0' + digit),
        _ => write_int(out, value),
    }
}

/// Appends `text` to `out` as a JSON string. A turn's description is mostly plain text,
/// which JSON writes as it is between quotes; one with a character serde_json escapes
/// (a quote, a backslash, a control character) goes through serde_json.
fn write_string(out: &mut Vec<u8>, text: &str) {
    if text.bytes().all(|byte| byte >= 0x20 && byte != b'"' && byte != b'\\') {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        write_json(out, text);
    }
}

/// Appends the integer `value` to `text` in decimal.
pub(super) fn push_int(text: &mut String, value: impl itoa::Integer) {
    text.push_str(itoa::Buffer::new().format(value));
}

/// A failure's reason, cut to a few times [`QUOTE_CHARS`] characters.
pub(super) fn clip_reason(reason: &str) -> &str {
    match reason.char_indices().nth(4 * QUOTE_CHARS) {
        Some((cut, _)) => &reason[..cut],
        None => reason,
    }
}

/// Replaces `out` with what `command` did, resolved as `resolved`, in words: the
/// command, its message (clipped) if any, then what happened. Written into the copy's
/// buffer, as it is on every turn.
pub(super) fn describe(command: &Command, resolved: &Resolved, out: &mut String) {
    out.clear();
    let said = match command {
        Command::Move { target, message } => {
            out.push_str("MOVE ");
            push_cell(out, *target);
            message
        }
        Command::Attack { weapon, target, message } => {
            out.push_str("ATTACK ");
            push_int(out, weapon.index());
            out.push(' ');
            push_cell(out, *target);
            message
        }
    };
    if !said.is_empty() {
        out.push_str(" \"");
        out.push_str(&clip(said));
        out.push('"');
    }
    out.push_str(": ");
    match resolved {
        Resolved::Wait => out.push_str("wait"),
        Resolved::Step(pos) => {
            out.push_str("step to ");
            push_cell(out, *pos);
        }
        Resolved::Attack { weapon, cells } => {
            out.push_str(weapon.name());
            out.push_str(" hits ");
            for (index, pos) in cells.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                push_cell(out, *pos);
            }
        }
        Resolved::Wasted(Waste::NoCharges) => out.push_str("wasted: no charges"),
        Resolved::Wasted(Waste::OutOfRange) => out.push_str("wasted: out of range"),
    }
}

/// Appends `x y`.
fn push_cell(out: &mut String, pos: Pos) {
    push_int(out, pos.x);
    out.push(' ');
    push_int(out, pos.y);
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;
    use crate::GameRng;
    use crate::maze::map::MonsterKind;
    use crate::maze::state::End;
    use crate::maze::state::tests::open;

    fn mv(x: i32, y: i32, message: &str) -> Command {
        Command::Move { target: Pos::new(x, y), message: message.into() }
    }

    #[test]
    fn plain_strings_are_written_as_serde_writes_them() {
        for text in ["", "MOVE 1 2: wait", "caf\u{e9} \u{7f} \u{3000}", "a \"quote\"", "back\\slash", "tab\t", "\u{1f}"]
        {
            let mut out = Vec::new();
            write_string(&mut out, text);
            assert_eq!(
                String::from_utf8(out).expect("UTF-8"),
                serde_json::to_string(text).expect("a string"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn the_plain_reading_takes_the_usual_replies() {
        assert_eq!(parse_plain("MOVE 10 11"), Some(mv(10, 11, "")));
        assert_eq!(parse_plain("MOVE 0 0"), Some(mv(0, 0, "")));
        assert_eq!(
            parse_plain("ATTACK 3 9 8"),
            Some(Command::Attack { weapon: Weapon::Bow, target: Pos::new(9, 8), message: String::new() })
        );
        for other in ["MOVE 10 11 go", "MOVE 16 0", "MOVE 1  2", "MOVE 1 2 ", "ATTACK 4 1 1", "MOVE 007 3", "MOVE +1 2"]
        {
            assert_eq!(parse_plain(other), None, "{other:?}");
        }
    }

    proptest::proptest! {
        // Most lines are not plain: enough cases that many are.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

        /// Lines shaped as replies, with numbers plain or not, separators single or
        /// not, and something after them or not: whenever the plain reading takes one,
        /// it reads what the general parser reads.
        #[test]
        fn the_plain_reading_agrees_with_the_general_parser(
            keyword in proptest::sample::select(vec!["MOVE", "ATTACK", "MOV", "\tMOVE", "ATTACK\t"]),
            fields in proptest::collection::vec(
                (
                    proptest::sample::select(vec![" ", " ", " ", " ", "  ", "\t"]),
                    proptest::sample::select(vec![
                        "0", "1", "3", "7", "9", "10", "11", "15", "16", "99", "007", "+1", "-0", "\u{663}", "", "x",
                    ]),
                ),
                0..5,
            ),
            suffix in proptest::sample::select(vec!["", "", "", " ", " go", "\r", "\rMOVE 1 1", "x"]),
        ) {
            let mut line = keyword.to_owned();
            for (separator, field) in fields {
                line.push_str(separator);
                line.push_str(field);
            }
            line.push_str(suffix);
            if let Some(plain) = parse_plain(&line) {
                proptest::prop_assert_eq!(Ok(plain), parse_any(&line), "{:?}", line);
            }
            proptest::prop_assert_eq!(parse_command(&line), parse_any(&line), "{:?}", line);
        }
    }

    #[test]
    fn well_formed_commands() {
        assert_eq!(parse_command("MOVE 10 11"), Ok(mv(10, 11, "")));
        assert_eq!(parse_command("MOVE 10 11 grab treasure"), Ok(mv(10, 11, "grab treasure")));
        assert_eq!(parse_command("MOVE 10 11 "), Ok(mv(10, 11, "")));
        assert_eq!(parse_command("MOVE 10 11  spaced "), Ok(mv(10, 11, "spaced")));
        assert_eq!(parse_command("MOVE +1 -0\r"), Ok(mv(1, 0, "")));
        assert_eq!(parse_command("MOVE 007 3"), Ok(mv(7, 3, "")));
        assert_eq!(
            parse_command("ATTACK 3 9 8 shoot vampire"),
            Ok(Command::Attack { weapon: Weapon::Bow, target: Pos::new(9, 8), message: "shoot vampire".into() })
        );
        assert_eq!(
            parse_command("ATTACK 0 15 11"),
            Ok(Command::Attack { weapon: Weapon::Sword, target: Pos::new(15, 11), message: String::new() })
        );
    }

    #[test]
    fn int_parsing_is_java_like() {
        assert_eq!(parse_int("+5"), Some(5));
        assert_eq!(parse_int("-5"), Some(-5));
        assert_eq!(parse_int("2147483647"), Some(2_147_483_647));
        assert_eq!(parse_int("-2147483648"), Some(-2_147_483_648));
        assert_eq!(parse_int("000000000000000000007"), Some(7));
        // Decimal digits of any script in the BMP, mixed too.
        assert_eq!(parse_int("\u{663}"), Some(3), "Arabic-Indic three");
        assert_eq!(parse_int("\u{969}"), Some(3), "Devanagari three");
        assert_eq!(parse_int("\u{ff13}"), Some(3), "fullwidth three");
        assert_eq!(parse_int("1\u{663}"), Some(13));
        assert_eq!(parse_int("-\u{ff11}\u{ff10}"), Some(-10));
        assert_eq!(parse_int("\u{abf9}"), Some(9), "the last run's nine");
        for bad in [
            "",
            "+",
            "-",
            "1.0",
            "1e2",
            " 1",
            "1\t",
            "0x1",
            "+-1",
            "2147483648",
            "-2147483649",
            "99999999999999999999",
            "\u{b3}",    // superscript three: No, not Nd
            "\u{2462}",  // circled three
            "\u{2163}",  // Roman numeral four: Nl
            "\u{1d7d1}", // mathematical bold three: Nd, outside the BMP
            "\u{ff0b}1", // fullwidth plus
            "\u{2212}1", // minus sign
            "\u{66a}",   // Arabic percent sign, just past a run
            "\u{19da}",  // New Tai Lue digit one: No, just past a run
        ] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_keyword_is_trimmed_of_control_characters_only() {
        for good in ["\tMOVE 1 2", "MOVE\t 1 2", "\x00MOVE\x0b 1 2", "MOVE\x1f 1 2"] {
            assert_eq!(parse_command(good), Ok(mv(1, 2, "")), "{good:?}");
        }
        for bad in ["MOVE\t1 2", "\t MOVE 1 2", " MOVE 1 2", "\u{a0}MOVE 1 2", "move 1 2", "MOVE\u{3000} 1 2"] {
            assert!(parse_command(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fields_are_separated_by_exactly_one_space_and_the_rest_is_the_message() {
        for bad in
            ["MOVE  1 2", "MOVE 1  2", "MOVE 1\t2", "MOVE 1\u{a0}2", "MOVE 1 2x", "MOVE 1 2\t", "ATTACK 1 2\t3 4"]
        {
            assert!(parse_command(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_command("MOVE 1 2   "), Ok(mv(1, 2, "")));
        assert_eq!(parse_command("MOVE 1 2 3 4 five"), Ok(mv(1, 2, "3 4 five")));
        // The message is trimmed as Java trims: control characters, not Unicode spaces.
        assert_eq!(parse_command("MOVE 1 2 \t\u{a0}hi\u{a0}\x01"), Ok(mv(1, 2, "\u{a0}hi\u{a0}")));
    }

    #[test]
    fn a_carriage_return_ends_the_line() {
        assert_eq!(parse_command("MOVE 1 2\r"), Ok(mv(1, 2, "")));
        assert_eq!(parse_command("MOVE 1 2\rATTACK 0 3 3"), Ok(mv(1, 2, "")));
        assert_eq!(parse_command("MOVE 1 2 go\r\r"), Ok(mv(1, 2, "go")));
        assert!(parse_command("MOVE 1\r2").is_err());
        assert!(parse_command("\rMOVE 1 2").is_err());
    }

    #[test]
    fn checks_run_keyword_numbers_coordinates_then_weapon() {
        assert_eq!(parse_command("JUMP 99 99"), Err(CommandError::Keyword("JUMP".into())));
        assert!(matches!(parse_command("ATTACK 9 x 1"), Err(CommandError::Arguments { .. })));
        assert_eq!(parse_command("ATTACK 9 16 1"), Err(CommandError::OutsideMaze { x: 16, y: 1 }));
        assert_eq!(parse_command("ATTACK 9 15 11"), Err(CommandError::Weapon(9)));
        assert_eq!(
            parse_command("ATTACK \u{663} \u{ff11}\u{ff15} \u{661}\u{661}"),
            Ok(Command::Attack { weapon: Weapon::Bow, target: Pos::new(15, 11), message: String::new() })
        );
    }

    #[derive(Serialize)]
    struct HeroDoc {
        x: i32,
        y: i32,
        hp: i32,
        score: i64,
        charges: [u32; 3],
    }

    /// One copy as serde writes it: what `write_state` must equal.
    #[derive(Serialize)]
    struct DungeonDoc<'a> {
        turn: u32,
        hero: HeroDoc,
        #[serde(skip_serializing_if = "Option::is_none")]
        end: Option<End>,
        last: &'a str,
        items: Vec<[i32; 3]>,
        monsters: Vec<[i32; 4]>,
    }

    fn serde_state(dungeon: &Dungeon) -> String {
        let hero = &dungeon.hero;
        let doc = DungeonDoc {
            turn: dungeon.turn,
            hero: HeroDoc {
                x: hero.pos.x,
                y: hero.pos.y,
                hp: hero.hp,
                score: hero.score,
                charges: [hero.charges[1], hero.charges[2], hero.charges[3]],
            },
            end: dungeon.end,
            last: &dungeon.last,
            items: all_cells()
                .filter_map(|pos| dungeon.items[pos.index(WIDTH)].map(|item| [pos.x, pos.y, item.type_id()]))
                .collect(),
            monsters: dungeon.monsters.iter().map(|m| [m.pos.x, m.pos.y, m.kind.type_id(), m.hp]).collect(),
        };
        serde_json::to_string(&doc).expect("serializes")
    }

    fn written_state(dungeon: &Dungeon) -> String {
        let mut out = Vec::new();
        dungeon.write_state(&mut out);
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn the_hand_written_state_is_serdes() {
        let mut dungeon = open();
        dungeon.place_monster(MonsterKind::Orc, Pos::new(2, 2), 8);
        dungeon.place_monster(MonsterKind::Box, Pos::new(9, 9), 1);
        assert_eq!(written_state(&dungeon), serde_state(&dungeon));
        let said = Command::Move { target: Pos::new(6, 5), message: "a \"quote\" and \\ \u{1}".into() };
        dungeon.play(&said);
        assert_eq!(written_state(&dungeon), serde_state(&dungeon));
        dungeon.fail(PlayerStatus::TimedOut, "timeout");
        assert!(dungeon.end.is_some());
        assert_eq!(written_state(&dungeon), serde_state(&dungeon));
    }

    #[test]
    fn the_kept_lists_follow_every_change_to_items_and_monsters() {
        // Generated mazes, played by sword and bow at whatever is near and by random
        // moves: items are picked up, monsters are hit, killed and moved.
        for seed in 0..20 {
            let map = crate::maze::generator::generate(&mut GameRng::new(seed, GameRng::MAP)).expect("generates");
            let mut dungeon = Dungeon::new(&map, 150, GameRng::new(seed, GameRng::RULES));
            let mut rng = GameRng::new(seed, GameRng::BOTS);
            while !dungeon.is_over() {
                let hero = dungeon.hero().pos;
                let near = dungeon.monsters().iter().map(|monster| monster.pos).find(|&pos| chebyshev(pos, hero) <= 3);
                let target = Pos::new(rng.below(WIDTH as usize) as i32, rng.below(HEIGHT as usize) as i32);
                let command = match near {
                    Some(target) if rng.below(2) == 0 => {
                        Command::Attack { weapon: Weapon::Bow, target, message: String::new() }
                    }
                    _ => Command::Move { target, message: String::new() },
                };
                dungeon.play(&command);
                assert_eq!(written_state(&dungeon), serde_state(&dungeon), "seed {seed}");
            }
        }
    }
    #[test]
    fn the_observation_lists_the_view_in_order() {
        let mut dungeon = open();
        dungeon.place_monster(MonsterKind::Orc, Pos::new(2, 2), 8);
        dungeon.place_monster(MonsterKind::Box, Pos::new(9, 9), 1);
        assert_eq!(dungeon.observation(), "5 5 20 0 5 5 5\n1\n2 2 10 8");
    }
}
