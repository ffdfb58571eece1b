//! Built-in Skookum Botwars bots: `random` and `gatherer`.

use std::collections::VecDeque;

use serde::Deserialize;

use crate::GameRng;
use crate::builtin::BuiltinBot;

/// The built-in bots' names.
pub const NAMES: &[&str] = &["random", "gatherer"];

pub(crate) fn create(name: &str, rng: GameRng) -> Option<Box<dyn BuiltinBot>> {
    match name {
        "random" => Some(Box::new(RandomBot { rng })),
        "gatherer" => Some(Box::new(GathererBot)),
        _ => None,
    }
}

#[derive(Deserialize)]
struct RequestIn {
    player: String,
    state: StateIn,
}

#[derive(Deserialize)]
struct StateIn {
    rows: usize,
    cols: usize,
    grid: String,
}

/// The grid as a bot sees it.
struct View {
    cols: usize,
    cells: Vec<u8>,
    me: u8,
    enemy: u8,
}

impl View {
    fn parse(observation: &str) -> Option<View> {
        let request: RequestIn = serde_json::from_str(observation).ok()?;
        let (me, enemy) = if request.player == "r" { (b'r', b'b') } else { (b'b', b'r') };
        let cells = request.state.grid.into_bytes();
        (cells.len() == request.state.rows * request.state.cols).then_some(View {
            cols: request.state.cols,
            cells,
            me,
            enemy,
        })
    }

    fn neighbors(&self, cell: usize) -> Vec<usize> {
        let (x, cols) = (cell % self.cols, self.cols);
        [
            cell.checked_sub(cols),
            (x + 1 < cols).then_some(cell + 1),
            (cell + cols < self.cells.len()).then_some(cell + cols),
            (x > 0).then(|| cell - 1),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    fn mine(&self) -> Vec<usize> {
        (0..self.cells.len()).filter(|&cell| self.cells[cell] == self.me).collect()
    }

    fn count(&self, letter: u8) -> usize {
        self.cells.iter().filter(|cell| **cell == letter).count()
    }
}

fn moves_json(moves: &[(usize, usize)]) -> String {
    let items: Vec<String> = moves.iter().map(|(from, to)| format!("{{\"from\":{from},\"to\":{to}}}")).collect();
    format!("[{}]", items.join(","))
}

/// Moves every botlet one random step (or not at all).
struct RandomBot {
    rng: GameRng,
}

impl BuiltinBot for RandomBot {
    fn reply(&mut self, observation: &str) -> String {
        let Some(view) = View::parse(observation) else { return "[]".into() };
        let moves: Vec<(usize, usize)> = view
            .mine()
            .into_iter()
            .map(|cell| {
                let mut options = view.neighbors(cell);
                options.push(cell);
                (cell, options[self.rng.below(options.len())])
            })
            .collect();
        moves_json(&moves)
    }
}

/// Walks each botlet toward the nearest energy; attacks the nearest enemy only while
/// its side has more botlets; never sends two botlets into one cell.
struct GathererBot;

impl BuiltinBot for GathererBot {
    fn reply(&mut self, observation: &str) -> String {
        let Some(view) = View::parse(observation) else { return "[]".into() };
        moves_json(&gatherer_moves(&view))
    }
}

fn gatherer_moves(view: &View) -> Vec<(usize, usize)> {
    let outnumber = view.count(view.me) > view.count(view.enemy) && view.count(view.enemy) > 0;
    let mut taken = vec![false; view.cells.len()];
    let mut moves = Vec::new();
    for cell in view.mine() {
        let goal = |at: usize| {
            let touches = |letter| view.neighbors(at).iter().any(|&n| view.cells[n] == letter);
            if outnumber { touches(view.enemy) } else { touches(b'*') }
        };
        let safe = |at: usize| outnumber || !view.neighbors(at).iter().any(|&n| view.cells[n] == view.enemy);
        // A step must stay free: not taken this turn, not another botlet of ours.
        let free = |at: usize| !taken[at] && (at == cell || view.cells[at] != view.me);
        let step = if goal(cell) && safe(cell) { Some(cell) } else { first_step(view, cell, &goal) }
            .filter(|&to| free(to) && safe(to))
            .unwrap_or(cell);
        let step = if free(step) { step } else { cell };
        taken[step] = true;
        moves.push((cell, step));
    }
    moves
}

/// The first step on a shortest path from `start` to a cell where `goal` holds,
/// through cells without enemies or energy (stepping on energy destroys it).
fn first_step(view: &View, start: usize, goal: &dyn Fn(usize) -> bool) -> Option<usize> {
    let mut first = vec![None; view.cells.len()];
    let mut queue = VecDeque::new();
    let passable = |at: usize| view.cells[at] != view.enemy && view.cells[at] != b'*';
    for next in view.neighbors(start).into_iter().filter(|&n| passable(n)) {
        first[next] = Some(next);
        queue.push_back(next);
    }
    while let Some(at) = queue.pop_front() {
        if goal(at) {
            return first[at];
        }
        for next in view.neighbors(at) {
            if next != start && passable(next) && first[next].is_none() {
                first[next] = first[at];
                queue.push_back(next);
            }
        }
    }
    None
}
