//! Skookum Botwars, as the original server plays it (`../shared/games/botwars.md`).
//!
//! The grid is a string of cells, index `y * cols + x`: `.` empty, `r` and `b` the two
//! sides' botlets, `*` energy, `x` and `X` botlets of side r and b that died last turn.
//! Both sides move at once; a malformed reply, a timeout or a dead bot disqualifies
//! its side and ends the match.

pub mod bots;

use std::collections::HashMap;
use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};
use serde_json::value::{RawValue, to_raw_value};

use crate::game::check_rule;
use crate::{
    BotReply, Deadlines, Game, GameKind, GameRng, PlayerOutcome, PlayerStatus, REPLY_TIMEOUT_MS, Seat, SetupError,
    TURNS,
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
    rules: BotwarsRules,
    grid: Vec<u8>,
    sides: [Side; 2],
    turns_elapsed: u32,
    winner: Option<Winner>,
    status: [PlayerStatus; 2],
    game_id: u64,
}

/// Parses a reply: a JSON array of `{"from": n, "to": n}`. Anything else, or an
/// element without numeric `from` and `to`, disqualifies.
///
/// Elements and their values are read raw and numbers converted here, because the
/// original's `JSON.parse` reads a number outside the double range (`1e400`) as
/// Infinity, a number, where serde_json refuses the whole text: such a move is
/// ignored, never a disqualification (`botwars.md`). Of a key given twice the last counts,
/// as in JavaScript.
pub fn parse_moves(reply: &str, cells: usize) -> BotwarsAction {
    let disqualified = BotwarsAction::Disqualified(PlayerStatus::Disqualified);
    let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(reply) else {
        return disqualified;
    };
    let mut moves = Vec::with_capacity(items.len());
    for item in items {
        let Ok(fields) = serde_json::from_str::<HashMap<String, &RawValue>>(item.get()) else {
            return disqualified;
        };
        let number = |key: &str| fields.get(key).and_then(|value| json_number(value.get()));
        let (Some(from), Some(to)) = (number("from"), number("to")) else {
            return disqualified;
        };
        let cell = |n: f64| (n.fract() == 0.0 && n >= 0.0 && n < cells as f64).then_some(n as usize);
        moves.push(cell(from).zip(cell(to)));
    }
    BotwarsAction::Moves(moves)
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

    fn neighbors(&self, cell: usize) -> impl Iterator<Item = usize> + use<> {
        let (cols, cells) = (self.rules.cols, self.grid.len());
        let (x, y) = (cell % cols, cell / cols);
        [
            (y > 0).then(|| cell - cols),
            (x + 1 < cols).then_some(cell + 1),
            (cell + cols < cells).then_some(cell + cols),
            (x > 0).then(|| cell - 1),
        ]
        .into_iter()
        .flatten()
    }

    fn count(&self, letter: u8) -> usize {
        self.grid.iter().filter(|cell| **cell == letter).count()
    }

    /// Steps 1 to 7 of a turn, for two well-formed move lists.
    fn play_turn(&mut self, moves: [&[Option<(usize, usize)>]; 2], rng: &mut GameRng) {
        // 0. Last turn's dead are cleared.
        for cell in &mut self.grid {
            if DEAD.contains(cell) {
                *cell = EMPTY;
            }
        }
        // 1. Move. `old` keeps the botlets not yet placed; `new` receives them. Any
        //    botlet entering an occupied cell dies there (decision S-2).
        let mut old = self.grid.clone();
        let mut new: Vec<u8> = self.grid.iter().map(|&c| if BOTLET.contains(&c) { EMPTY } else { c }).collect();
        let place = |new: &mut Vec<u8>, cell: usize, seat: usize| {
            new[cell] =
                if BOTLET.contains(&new[cell]) || DEAD.contains(&new[cell]) { DEAD[seat] } else { BOTLET[seat] };
        };
        for seat in 0..2 {
            for &(from, to) in moves[seat].iter().flatten() {
                if self.adjacent(from, to) && old.get(from) == Some(&BOTLET[seat]) {
                    old[from] = EMPTY;
                    place(&mut new, to, seat);
                }
            }
        }
        for (seat, letter) in BOTLET.into_iter().enumerate() {
            for (cell, _) in old.iter().enumerate().filter(|(_, c)| **c == letter) {
                place(&mut new, cell, seat);
            }
        }
        self.grid = new;

        // 2. Battle: every adjacent r–b pair compares how many enemies each touches.
        let enemies: Vec<usize> = (0..self.grid.len())
            .map(|cell| match self.grid[cell] {
                b'r' => self.neighbors(cell).filter(|&n| self.grid[n] == b'b').count(),
                b'b' => self.neighbors(cell).filter(|&n| self.grid[n] == b'r').count(),
                _ => 0,
            })
            .collect();
        let mut dies = vec![false; self.grid.len()];
        for red in (0..self.grid.len()).filter(|&cell| self.grid[cell] == b'r') {
            for blue in self.neighbors(red).filter(|&n| self.grid[n] == b'b') {
                if enemies[red] >= enemies[blue] {
                    dies[red] = true;
                }
                if enemies[red] <= enemies[blue] {
                    dies[blue] = true;
                }
            }
        }
        for (cell, dead) in dies.into_iter().enumerate() {
            if dead {
                self.grid[cell] = if self.grid[cell] == b'r' { DEAD[0] } else { DEAD[1] };
            }
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
        //    both, it is lost.
        for cell in 0..self.grid.len() {
            if self.grid[cell] != ENERGY {
                continue;
            }
            let touches = |letter| self.neighbors(cell).any(|n| self.grid[n] == letter);
            let (red, blue) = (touches(b'r'), touches(b'b'));
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
            let candidates: Vec<usize> = (0..self.grid.len())
                .filter(|&cell| self.grid[cell] == EMPTY && last - cell != cell && self.grid[last - cell] == EMPTY)
                .collect();
            if let Some(&cell) = rng.pick(&candidates) {
                self.grid[cell] = ENERGY;
                self.grid[last - cell] = ENERGY;
            }
        }

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

impl Botwars {
    fn state_doc(&self, with_winner: bool) -> StateDoc<'_> {
        StateDoc {
            rows: self.rules.rows,
            cols: self.rules.cols,
            max_turns: self.rules.max_turns,
            turns_elapsed: self.turns_elapsed,
            grid: self.grid(),
            p1: self.sides[0],
            p2: self.sides[1],
            game_id_upper: self.game_id,
            winner: if with_winner { self.winner_letter() } else { None },
        }
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

    fn observation(&self, seat: Seat) -> String {
        let doc = RequestDoc {
            player: if seat == 0 { "r" } else { "b" },
            state: self.state_doc(false),
            game_id: self.game_id,
        };
        serde_json::to_string(&doc).unwrap_or_default()
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

    fn snapshot(&self) -> Box<RawValue> {
        to_raw_value(&self.state_doc(true)).unwrap_or_default()
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
}
