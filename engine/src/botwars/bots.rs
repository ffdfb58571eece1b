//! Built-in Skookum Botwars bots: `random` and `gatherer`.

use std::collections::VecDeque;

use super::state::Neighbors;
use super::{BOTLET, Botwars};
use crate::builtin::{self, BuiltinBot, GameBot};
use crate::{GameRng, Seat};

/// The built-in bots' names.
pub const NAMES: &[&str] = &["random", "gatherer"];

pub(crate) fn create(name: &str, rng: GameRng) -> Option<Box<dyn BuiltinBot>> {
    match name {
        "random" => Some(builtin::boxed(RandomBot { rng })),
        "gatherer" => Some(builtin::boxed(GathererBot)),
        _ => None,
    }
}

/// The grid as a bot sees it: the whole of it, as the request carries it (the lists
/// of botlets and the neighbours are found from the grid, kept rather than searched).
struct View<'a> {
    cells: &'a [u8],
    neighbors: &'a Neighbors,
    botlets: &'a [Vec<usize>; 2],
    seat: Seat,
    me: u8,
    enemy: u8,
}

impl<'a> View<'a> {
    fn new(game: &'a Botwars, seat: Seat) -> View<'a> {
        let (me, enemy) = if seat == 0 { (BOTLET[0], BOTLET[1]) } else { (BOTLET[1], BOTLET[0]) };
        View { cells: game.grid.as_slice(), neighbors: &game.neighbors, botlets: &game.pieces.botlets, seat, me, enemy }
    }

    fn neighbors(&self, cell: usize) -> impl Iterator<Item = usize> + 'a {
        self.neighbors.of(cell)
    }

    /// This side's botlets, in cell order.
    fn mine(&self) -> impl ExactSizeIterator<Item = usize> + 'a {
        self.botlets[self.seat].iter().copied()
    }

    /// How many botlets this side and the enemy have.
    fn counts(&self) -> (usize, usize) {
        (self.botlets[self.seat].len(), self.botlets[1 - self.seat].len())
    }
}

/// The longest text of one move in a reply, `,{"from":9999,"to":9999}`: cells are
/// numbered below 10,000 (grids are at most 100 by 100).
const MOVE_TEXT_MAX: usize = 26;

/// The reply text of `moves`: `[{"from":a,"to":b},...]`, written into a string sized
/// for it once, as a bot replies every turn.
fn moves_json(moves: impl ExactSizeIterator<Item = (usize, usize)>) -> String {
    let mut text = String::with_capacity(2 + moves.len() * MOVE_TEXT_MAX);
    text.push('[');
    let mut number = itoa::Buffer::new();
    for (index, (from, to)) in moves.enumerate() {
        text.push_str(if index > 0 { ",{\"from\":" } else { "{\"from\":" });
        text.push_str(number.format(from));
        text.push_str(",\"to\":");
        text.push_str(number.format(to));
        text.push('}');
    }
    text.push(']');
    text
}

/// Moves every botlet one random step (or not at all).
struct RandomBot {
    rng: GameRng,
}

impl GameBot<Botwars> for RandomBot {
    fn reply(&mut self, game: &Botwars, seat: Seat) -> String {
        let view = View::new(game, seat);
        moves_json(view.mine().map(|cell| {
            let mut options = [cell; 5];
            let mut count = 0;
            for neighbor in view.neighbors(cell) {
                options[count] = neighbor;
                count += 1;
            }
            options[count] = cell;
            (cell, options[self.rng.below(count + 1)])
        }))
    }
}

/// Walks each botlet toward the nearest energy; attacks the nearest enemy only while
/// its side has more botlets; never sends two botlets into one cell.
struct GathererBot;

impl GameBot<Botwars> for GathererBot {
    fn reply(&mut self, game: &Botwars, seat: Seat) -> String {
        moves_json(gatherer_moves(&View::new(game, seat)).into_iter())
    }
}

fn gatherer_moves(view: &View) -> Vec<(usize, usize)> {
    let (mine, enemies) = view.counts();
    let outnumber = mine > enemies && enemies > 0;
    let mut taken = vec![false; view.cells.len()];
    let mut moves = Vec::new();
    for cell in view.mine() {
        let goal = |at: usize| {
            let touches = |letter| view.neighbors(at).any(|n| view.cells[n] == letter);
            if outnumber { touches(view.enemy) } else { touches(b'*') }
        };
        let safe = |at: usize| outnumber || !view.neighbors(at).any(|n| view.cells[n] == view.enemy);
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
    for next in view.neighbors(start).filter(|&n| passable(n)) {
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
