//! The match state of Skookum Botwars, its turn, its reply reader and its documents.

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::game::{check_rule, write_int};
use crate::{
    AnyGame, BotReply, Deadlines, Game, GameKind, GameRng, PlayerOutcome, PlayerStatus, REPLY_TIMEOUT_MS, Seat,
    SetupError, TURNS,
};

/// An empty cell.
pub const EMPTY: u8 = b'.';
/// Energy.
pub const ENERGY: u8 = b'*';
/// The botlet letter of each side: seat 0 is `r`, seat 1 is `b`.
pub const BOTLET: [u8; 2] = [b'r', b'b'];
/// The dead marker of each side.
pub const DEAD: [u8; 2] = [b'x', b'X'];

/// The tunable rules; defaults are the README's (decision S-1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct BotwarsRules {
    /// Grid rows.
    pub rows: usize,
    /// Grid columns.
    pub cols: usize,
    /// Turns before the match ends.
    pub max_turns: u32,
    /// Energy appears after turns 1, 1 + n, 1 + 2n, ...; 0 turns energy off.
    pub energy_every: u32,
    /// Time a bot has to reply; a late bot is disqualified.
    pub reply_timeout_ms: u64,
}

impl Default for BotwarsRules {
    fn default() -> Self {
        BotwarsRules { rows: 20, cols: 20, max_turns: 100, energy_every: 3, reply_timeout_ms: 5000 }
    }
}

/// One side's bank and spawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    /// Botlets this side can still spawn.
    pub energy: u32,
    /// Grid index of its spawn cell.
    pub spawn: usize,
    /// Set for good once an enemy botlet stands on the spawn.
    pub spawn_disabled: bool,
}

/// How a match ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Winner {
    /// The side in this seat won.
    Seat(Seat),
    /// Nobody won (decisions S-4 and S-5).
    Draw,
}

/// One side's parsed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum BotwarsAction {
    /// Well-formed moves, in order. A move whose indices are not whole cells of the
    /// grid is kept as `None` and ignored.
    Moves(Vec<Option<(usize, usize)>>),
    /// The side is disqualified, with the status to record.
    Disqualified(PlayerStatus),
}

/// A Skookum Botwars match.
#[derive(Debug, Clone)]
pub struct Botwars {
    pub(super) rules: BotwarsRules,
    pub(super) grid: Vec<u8>,
    pub(super) sides: [Side; 2],
    pub(super) turns_elapsed: u32,
    pub(super) winner: Option<Winner>,
    pub(super) status: [PlayerStatus; 2],
    pub(super) game_id: u64,
    /// Buffers a turn works in, kept so that a turn allocates nothing.
    scratch: Scratch,
}

/// The working buffers of [`Botwars::play_turn`]; their contents mean nothing between
/// turns.
#[derive(Debug, Clone, Default)]
struct Scratch {
    /// The grid as the moves see it, then each living botlet's count of enemies.
    old: Vec<u8>,
    /// Each side's botlets at the start of the turn, in cell order.
    unmoved: [Vec<usize>; 2],
    /// The cells botlets were placed on in step 1 (a cell twice when they collided).
    placed: Vec<usize>,
    /// The energy at the start of the turn, then the cells where energy may appear.
    energy: Vec<usize>,
    /// The botlets that die in the battle (some more than once).
    dies: Vec<usize>,
}

impl Scratch {
    fn clear(&mut self) {
        let Scratch { old, unmoved, placed, energy, dies } = self;
        old.clear();
        unmoved.iter_mut().for_each(Vec::clear);
        placed.clear();
        energy.clear();
        dies.clear();
    }
}

/// The 4-neighbours of `cell` in a grid of `cols` columns and `cells` cells, up,
/// right, down, left; `None` past an edge (no wrap).
pub(crate) fn neighbors(cell: usize, cols: usize, cells: usize) -> [Option<usize>; 4] {
    let x = cell % cols;
    [
        cell.checked_sub(cols),
        (x + 1 < cols).then_some(cell + 1),
        (cell + cols < cells).then_some(cell + cols),
        (x > 0).then(|| cell - 1),
    ]
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
    let mut moves = Vec::new();
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
    let digits = text.iter().take_while(|byte| byte.is_ascii_digit()).count();
    if digits == 0 || digits > 15 || (digits > 1 && text[0] == b'0') {
        return None;
    }
    let value = text[..digits].iter().fold(0, |value, digit| value * 10 + u64::from(digit - b'0'));
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

/// The number of cells of `rules`' grid, once its size is checked: checked before
/// anything is allocated for it (a replay's header may ask for any size).
fn grid_cells(rules: &BotwarsRules) -> Result<usize, SetupError> {
    if !(3..=100).contains(&rules.rows) || !(3..=100).contains(&rules.cols) || rules.rows * rules.cols < 10 {
        return Err(SetupError::Rules {
            game: GameKind::Botwars,
            problem: format!("rows and cols must be 3 to 100, got {}x{}", rules.rows, rules.cols),
        });
    }
    Ok(rules.rows * rules.cols)
}

impl Botwars {
    /// A match from a position: `grid` in the wire format and each side's energy.
    /// Spawns are the original's: (1, 1) and (cols − 2, rows − 2).
    pub fn from_position(rules: BotwarsRules, grid: &str, energy: [u32; 2], seed: u64) -> Result<Self, SetupError> {
        let rules_error = |problem: String| SetupError::Rules { game: GameKind::Botwars, problem };
        let cells = grid_cells(&rules)?;
        check_rule("maxTurns", u64::from(rules.max_turns), TURNS)
            .and_then(|()| check_rule("energyEvery", u64::from(rules.energy_every), 0..=*TURNS.end()))
            .and_then(|()| check_rule("replyTimeoutMs", rules.reply_timeout_ms, REPLY_TIMEOUT_MS))
            .map_err(rules_error)?;
        if grid.len() != cells || !grid.bytes().all(|c| b".rb*xX".contains(&c)) {
            return Err(SetupError::Map {
                game: GameKind::Botwars,
                problem: format!("a grid is {cells} characters of . r b * x X"),
            });
        }
        let spawns = [rules.cols + 1, (rules.rows - 2) * rules.cols + rules.cols - 2];
        let sides = [0, 1].map(|seat| Side { energy: energy[seat], spawn: spawns[seat], spawn_disabled: false });
        Ok(Botwars {
            rules,
            grid: grid.as_bytes().to_vec(),
            sides,
            turns_elapsed: 0,
            winner: None,
            status: [PlayerStatus::Ok; 2],
            game_id: seed & 0x7fff_ffff,
            scratch: Scratch::default(),
        })
    }

    /// The grid in the wire format.
    pub fn grid(&self) -> &str {
        // Only ASCII cell letters are ever written into the grid.
        std::str::from_utf8(&self.grid).unwrap_or_default()
    }

    /// Both sides' banks and spawns.
    pub fn sides(&self) -> &[Side; 2] {
        &self.sides
    }

    /// The result, once there is one.
    pub fn winner(&self) -> Option<Winner> {
        self.winner
    }

    /// Turns played.
    pub fn turns_elapsed(&self) -> u32 {
        self.turns_elapsed
    }

    fn adjacent(&self, from: usize, to: usize) -> bool {
        let cols = self.rules.cols;
        let (fx, fy, tx, ty) = (from % cols, from / cols, to % cols, to / cols);
        to < self.grid.len() && fx.abs_diff(tx) + fy.abs_diff(ty) <= 1
    }

    /// The 4-neighbours of `cell`, up, right, down, left; `None` past an edge.
    fn neighbors(&self, cell: usize) -> [Option<usize>; 4] {
        neighbors(cell, self.rules.cols, self.grid.len())
    }

    /// Whether a neighbour of `cell` holds `letter`.
    fn touches(&self, cell: usize, letter: u8) -> bool {
        self.neighbors(cell).into_iter().flatten().any(|n| self.grid[n] == letter)
    }

    /// How many neighbours of `cell` hold `letter`.
    fn count_around(&self, cell: usize, letter: u8) -> u8 {
        self.neighbors(cell).into_iter().flatten().map(|n| u8::from(self.grid[n] == letter)).sum()
    }

    fn count(&self, letter: u8) -> usize {
        memchr::memchr_iter(letter, &self.grid).count()
    }

    /// Steps 1 to 7 of a turn, for two well-formed move lists.
    ///
    /// One search of the grid (memchr's, many cells at a time) finds the botlets and the
    /// energy; every later step works on those lists, so a turn costs little more than
    /// the botlets' number (and a scan of the grid when energy may appear), and
    /// allocates nothing.
    fn play_turn(&mut self, moves: [&[Option<(usize, usize)>]; 2], rng: &mut GameRng) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        // 0. Last turn's dead are cleared. `old` keeps the grid as the moves see it;
        //    the grid itself, emptied of botlets, receives them in step 1.
        scratch.dies.extend(memchr::memchr2_iter(DEAD[0], DEAD[1], &self.grid));
        for &cell in &scratch.dies {
            self.grid[cell] = EMPTY;
        }
        scratch.dies.clear();
        for cell in memchr::memchr3_iter(BOTLET[0], BOTLET[1], ENERGY, &self.grid) {
            match self.grid[cell] {
                ENERGY => scratch.energy.push(cell),
                b'r' => scratch.unmoved[0].push(cell),
                _ => scratch.unmoved[1].push(cell),
            }
        }
        scratch.old.extend_from_slice(&self.grid);
        for cell in scratch.unmoved.iter().flatten() {
            self.grid[*cell] = EMPTY;
        }

        // 1. Move: a botlet can be moved once, the first move wins. Any botlet entering
        //    an occupied cell dies there (decision S-2). Then the unmoved are placed,
        //    side r first, each side in cell order.
        let place = |grid: &mut [u8], placed: &mut Vec<usize>, cell: usize, seat: usize| {
            let taken = grid[cell] != EMPTY && grid[cell] != ENERGY;
            grid[cell] = if taken { DEAD[seat] } else { BOTLET[seat] };
            placed.push(cell);
        };
        for seat in 0..2 {
            for &(from, to) in moves[seat].iter().flatten() {
                if self.adjacent(from, to) && scratch.old.get(from) == Some(&BOTLET[seat]) {
                    scratch.old[from] = EMPTY;
                    place(&mut self.grid, &mut scratch.placed, to, seat);
                }
            }
        }
        for (seat, unmoved) in scratch.unmoved.iter().enumerate() {
            for &cell in unmoved {
                if scratch.old[cell] == BOTLET[seat] {
                    place(&mut self.grid, &mut scratch.placed, cell, seat);
                }
            }
        }

        // 2. Battle: every adjacent r–b pair compares how many enemies each touches.
        //    `old` now holds each living botlet's count of adjacent enemies.
        for &cell in &scratch.placed {
            match self.grid[cell] {
                b'r' => scratch.old[cell] = self.count_around(cell, b'b'),
                b'b' => scratch.old[cell] = self.count_around(cell, b'r'),
                _ => {}
            }
        }
        let enemies = &scratch.old;
        for &red in &scratch.placed {
            if self.grid[red] != b'r' || enemies[red] == 0 {
                continue;
            }
            for blue in self.neighbors(red).into_iter().flatten().filter(|&n| self.grid[n] == b'b') {
                if enemies[red] >= enemies[blue] {
                    scratch.dies.push(red);
                }
                if enemies[red] <= enemies[blue] {
                    scratch.dies.push(blue);
                }
            }
        }
        for &cell in &scratch.dies {
            self.grid[cell] = match self.grid[cell] {
                b'r' => DEAD[0],
                b'b' => DEAD[1],
                already_dead => already_dead,
            };
        }

        // 3. Raze: an enemy botlet on a spawn disables it for good.
        for seat in 0..2 {
            if self.grid[self.sides[seat].spawn] == BOTLET[1 - seat] {
                self.sides[seat].spawn_disabled = true;
            }
        }

        // 4. Spawn, on an empty spawn cell only (energy, dead or living botlets block it).
        for (side, letter) in self.sides.iter_mut().zip(BOTLET) {
            if !side.spawn_disabled && side.energy > 0 && self.grid[side.spawn] == EMPTY {
                side.energy -= 1;
                self.grid[side.spawn] = letter;
            }
        }

        // 5. Gather: energy touched by one side only goes to that side; touched by
        //    both, it is lost. (Energy a botlet stepped on is gone already.)
        for &cell in &scratch.energy {
            if self.grid[cell] != ENERGY {
                continue;
            }
            let (red, blue) = (self.touches(cell, b'r'), self.touches(cell, b'b'));
            if red || blue {
                self.grid[cell] = EMPTY;
            }
            match (red, blue) {
                (true, false) => self.sides[0].energy += 1,
                (false, true) => self.sides[1].energy += 1,
                _ => {}
            }
        }

        // 6. Energy appears on a random empty cell and its 180° mirror.
        let every = self.rules.energy_every;
        if every > 0 && self.turns_elapsed.is_multiple_of(every) {
            let last = self.grid.len() - 1;
            let grid = &self.grid;
            scratch.energy.clear();
            scratch.energy.extend(
                (0..grid.len())
                    .filter(|&cell| grid[cell] == EMPTY && grid[last - cell] == EMPTY && last - cell != cell),
            );
            if let Some(&cell) = rng.pick(&scratch.energy) {
                self.grid[cell] = ENERGY;
                self.grid[last - cell] = ENERGY;
            }
        }
        self.scratch = scratch;

        // 7-8. Count the turn; end at the limit or when a side has no botlets left.
        self.turns_elapsed += 1;
        let (red, blue) = (self.count(b'r'), self.count(b'b'));
        if self.turns_elapsed >= self.rules.max_turns || red == 0 || blue == 0 {
            self.winner = Some(match red.cmp(&blue) {
                std::cmp::Ordering::Greater => Winner::Seat(0),
                std::cmp::Ordering::Less => Winner::Seat(1),
                std::cmp::Ordering::Equal => Winner::Draw,
            });
        }
    }

    fn winner_letter(&self) -> Option<&'static str> {
        self.winner.map(|winner| match winner {
            Winner::Seat(0) => "r",
            Winner::Seat(_) => "b",
            Winner::Draw => ".",
        })
    }
}

impl Botwars {
    /// Appends the original's state document (`utils.buildGameState`) to `out`, with the
    /// winner when `with_winner`: `{"rows":..,"cols":..,"maxTurns":..,"turnsElapsed":..,
    /// "grid":"..","p1":{..},"p2":{..},"GameId":..[,"winner":".."]}`.
    ///
    /// Written by hand, because it is on the path of every step: its fields are numbers,
    /// booleans and the grid, whose letters (`. r b * x X`) need no escaping in JSON.
    /// A test checks it against serde's rendering of the same document.
    fn write_state_doc(&self, out: &mut Vec<u8>, with_winner: bool) {
        let field = |out: &mut Vec<u8>, name: &str, value: u64| {
            out.extend_from_slice(name.as_bytes());
            write_int(out, value);
        };
        field(out, "{\"rows\":", self.rules.rows as u64);
        field(out, ",\"cols\":", self.rules.cols as u64);
        field(out, ",\"maxTurns\":", u64::from(self.rules.max_turns));
        field(out, ",\"turnsElapsed\":", u64::from(self.turns_elapsed));
        out.extend_from_slice(b",\"grid\":\"");
        out.extend_from_slice(&self.grid);
        for (name, side) in [("\",\"p1\":", &self.sides[0]), (",\"p2\":", &self.sides[1])] {
            out.extend_from_slice(name.as_bytes());
            field(out, "{\"energy\":", u64::from(side.energy));
            field(out, ",\"spawn\":", side.spawn as u64);
            out.extend_from_slice(if side.spawn_disabled {
                b",\"spawnDisabled\":true}"
            } else {
                b",\"spawnDisabled\":false}"
            });
        }
        field(out, ",\"GameId\":", self.game_id);
        if let Some(winner) = self.winner_letter().filter(|_| with_winner) {
            out.extend_from_slice(b",\"winner\":\"");
            out.extend_from_slice(winner.as_bytes());
            out.push(b'"');
        }
        out.push(b'}');
    }
}

impl Game for Botwars {
    const KIND: GameKind = GameKind::Botwars;
    type Rules = BotwarsRules;
    type Action = BotwarsAction;

    fn seats() -> RangeInclusive<usize> {
        2..=2
    }

    fn default_map(_rules: &BotwarsRules, _rng: &mut GameRng) -> Result<Option<String>, SetupError> {
        Ok(None)
    }

    fn new(rules: BotwarsRules, map: Option<&str>, _players: &[String], seed: u64) -> Result<Self, SetupError> {
        if map.is_some() {
            return Err(SetupError::Map { game: Self::KIND, problem: "Skookum Botwars has no maps".into() });
        }
        let empty = ".".repeat(grid_cells(&rules)?);
        Botwars::from_position(rules, &empty, [1, 1], seed)
    }

    fn deadlines(rules: &BotwarsRules) -> Deadlines {
        Deadlines { first_ms: rules.reply_timeout_ms, turn_ms: rules.reply_timeout_ms }
    }

    fn max_steps(&self) -> u64 {
        u64::from(self.rules.max_turns)
    }

    fn to_act(&self) -> Vec<Seat> {
        if self.winner.is_some() { Vec::new() } else { vec![0, 1] }
    }

    /// `{"player":"r"|"b","state":{..},"gameId":..}`, the original's request.
    fn write_observation(&self, seat: Seat, out: &mut Vec<u8>) {
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

    fn parse_reply(&self, _seat: Seat, reply: &BotReply) -> BotwarsAction {
        match reply {
            BotReply::Line(text) => parse_moves(text, self.grid.len()),
            BotReply::Unreadable => BotwarsAction::Disqualified(PlayerStatus::Disqualified),
            BotReply::Timeout => BotwarsAction::Disqualified(PlayerStatus::TimedOut),
            BotReply::Crashed => BotwarsAction::Disqualified(PlayerStatus::Crashed),
            BotReply::OutputLimit => BotwarsAction::Disqualified(PlayerStatus::OutputLimit),
        }
    }

    fn apply(&mut self, actions: Vec<(Seat, BotwarsAction)>, rng: &mut GameRng) {
        if self.winner.is_some() {
            return;
        }
        let mut moves: [Vec<Option<(usize, usize)>>; 2] = [Vec::new(), Vec::new()];
        let mut disqualified = [false; 2];
        for (seat, action) in actions.into_iter().filter(|(seat, _)| *seat < 2) {
            match action {
                BotwarsAction::Moves(list) => moves[seat] = list,
                BotwarsAction::Disqualified(status) => {
                    disqualified[seat] = true;
                    self.status[seat] = status;
                }
            }
        }
        // A disqualification ends the match at once: no turn is played or counted.
        self.winner = match disqualified {
            [true, true] => Some(Winner::Draw),
            [true, false] => Some(Winner::Seat(1)),
            [false, true] => Some(Winner::Seat(0)),
            [false, false] => {
                self.play_turn([&moves[0], &moves[1]], rng);
                return;
            }
        };
    }

    fn is_over(&self) -> bool {
        self.winner.is_some()
    }

    fn write_state(&self, out: &mut Vec<u8>) {
        self.write_state_doc(out, true);
    }

    fn outcome(&self) -> Vec<PlayerOutcome> {
        let scores = [self.count(b'r') as i64, self.count(b'b') as i64];
        let ranks = match self.winner {
            Some(Winner::Seat(0)) => [1, 2],
            Some(Winner::Seat(_)) => [2, 1],
            Some(Winner::Draw) | None => [1, 1],
        };
        (0..2).map(|seat| PlayerOutcome { score: scores[seat], rank: ranks[seat], status: self.status[seat] }).collect()
    }

    fn of(game: &AnyGame) -> Option<&Self> {
        if let AnyGame::Botwars(game) = game { Some(game) } else { None }
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;

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
