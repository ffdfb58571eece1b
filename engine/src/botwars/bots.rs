//! Built-in Skookum Botwars bots: `random` and `gatherer`.

use std::collections::VecDeque;

use super::state::Neighbors;
use super::{BOTLET, Botwars};
use crate::game_bot::GameBot;
use crate::{GameRng, Seat};

/// The built-in bots' names.
pub const NAMES: &[&str] = &["random", "gatherer"];

pub(crate) fn create(name: &str, rng: GameRng) -> Option<Box<dyn GameBot<Botwars>>> {
    match name {
        "random" => Some(Box::new(RandomBot { rng })),
        "gatherer" => Some(Box::new(GathererBot)),
        _ => None,
    }
}

/// The grid as a bot sees it: the whole of it, as the request carries it (the lists
/// of botlets and the neighbours are found from the grid, kept rather than searched).
struct View<'a> {
    cells: &'a [u8],
    neighbors: &'a Neighbors,
    botlets: &'a [Vec<usize>; 2],
    /// The cells holding energy.
    energy: &'a [usize],
    seat: Seat,
    me: u8,
    enemy: u8,
}

impl<'a> View<'a> {
    fn new(game: &'a Botwars, seat: Seat) -> View<'a> {
        let (me, enemy) = if seat == 0 { (BOTLET[0], BOTLET[1]) } else { (BOTLET[1], BOTLET[0]) };
        View {
            cells: game.grid.as_slice(),
            neighbors: &game.neighbors,
            botlets: &game.pieces.botlets,
            energy: &game.pieces.energy,
            seat,
            me,
            enemy,
        }
    }

    fn neighbors(&self, cell: usize) -> impl Iterator<Item = usize> + 'a {
        self.neighbors.of(cell)
    }

    /// This side's botlets, in cell order.
    fn mine(&self) -> impl ExactSizeIterator<Item = usize> + 'a {
        self.botlets[self.seat].iter().copied()
    }

    /// Whether a botlet may walk through a cell holding `letter`: neither an enemy
    /// nor energy (stepping on energy destroys it).
    fn passable(&self, letter: u8) -> bool {
        letter != self.enemy && letter != b'*'
    }

    /// How many botlets this side and the enemy have.
    fn counts(&self) -> (usize, usize) {
        (self.botlets[self.seat].len(), self.botlets[1 - self.seat].len())
    }
}

/// The longest text of one move in a reply, `,{"from":9999,"to":9999}`: cells are
/// numbered below 10,000 (grids are at most 100 by 100).
const MOVE_TEXT_MAX: usize = 24;

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
    let (targets, target) =
        if outnumber { (&view.botlets[1 - view.seat][..], view.enemy) } else { (view.energy, b'*') };
    let distance = distances_to_goals(view, targets);
    let mut taken = vec![false; view.cells.len()];
    let mut moves = Vec::with_capacity(mine);
    for cell in view.mine() {
        let goal = |at: usize| view.neighbors(at).any(|n| view.cells[n] == target);
        let safe = |at: usize| outnumber || !view.neighbors(at).any(|n| view.cells[n] == view.enemy);
        // A step must stay free: not taken this turn, not another botlet of ours.
        let free = |at: usize| !taken[at] && (at == cell || view.cells[at] != view.me);
        let step = match (goal(cell), safe(cell)) {
            (true, true) => Some(cell),
            // The distances count paths through this very cell, a goal: the search
            // from it alone does not.
            (true, false) => first_step(view, cell, &goal),
            (false, _) => nearest_step(view, cell, &distance),
        };
        let step = step.filter(|&to| free(to) && safe(to)).unwrap_or(cell);
        let step = if free(step) { step } else { cell };
        taken[step] = true;
        moves.push((cell, step));
    }
    moves
}

/// The distance of a cell not reached from any goal.
const UNREACHED: u32 = u32::MAX;
/// The distance of a cell not reached yet, next to a botlet that looks for a goal.
const WANTED: u32 = u32::MAX - 1;
/// The distance of a cell no path goes through ([`View::passable`]). Every distance
/// below it is a number of steps.
const BLOCKED: u32 = u32::MAX - 2;

/// The number of steps from cells to the nearest goal, a passable cell next to one of
/// `targets`, through passable cells: one search from all goals at once serves every
/// botlet. It stops once every cell next to this side's botlets that are not on a goal
/// is reached (their distances are final then), the only ones [`nearest_step`] reads;
/// any other cell may be left [`UNREACHED`] (or [`WANTED`], where none is reachable).
/// Cells that are not passable are [`BLOCKED`].
fn distances_to_goals(view: &View, targets: &[usize]) -> Vec<u32> {
    let mut distance: Vec<u32> =
        view.cells.iter().map(|&letter| if view.passable(letter) { UNREACHED } else { BLOCKED }).collect();
    // Each cell enters the queue once: sized for all of them, it never grows.
    let mut queue = Vec::with_capacity(view.cells.len());
    for &target in targets {
        for goal in view.neighbors(target) {
            if distance[goal] == UNREACHED {
                distance[goal] = 0;
                queue.push(goal);
            }
        }
    }
    let mut wanted = 0;
    for botlet in view.mine() {
        if distance[botlet] == 0 {
            continue;
        }
        for next in view.neighbors(botlet) {
            if distance[next] == UNREACHED {
                distance[next] = WANTED;
                wanted += 1;
            }
        }
    }
    let mut next_in_queue = 0;
    while wanted > 0 && next_in_queue < queue.len() {
        let at = queue[next_in_queue];
        next_in_queue += 1;
        let steps = distance[at] + 1;
        for next in view.neighbors(at) {
            if let Some(reached) = distance.get_mut(next).filter(|reached| **reached >= WANTED) {
                wanted -= usize::from(*reached == WANTED);
                *reached = steps;
                queue.push(next);
            }
        }
    }
    distance
}

/// The first step on a shortest path from `start`, not itself a goal, to a goal:
/// the first neighbour (up, right, down, left) nearest to one, which is the step
/// [`first_step`]'s search from `start` takes. A shortest path from a neighbour never
/// comes back through `start` (a nearer neighbour would be next to it), so the
/// distances of [`distances_to_goals`], which do not leave `start` out, give the same.
fn nearest_step(view: &View, start: usize, distance: &[u32]) -> Option<usize> {
    view.neighbors(start).filter(|&next| distance[next] < BLOCKED).min_by_key(|&next| distance[next])
}

/// The first step on a shortest path from `start` to a cell where `goal` holds,
/// through passable cells other than `start` ([`View::passable`]).
fn first_step(view: &View, start: usize, goal: &dyn Fn(usize) -> bool) -> Option<usize> {
    let mut first = vec![None; view.cells.len()];
    let mut queue = VecDeque::new();
    for next in view.neighbors(start).filter(|&n| view.passable(view.cells[n])) {
        first[next] = Some(next);
        queue.push_back(next);
    }
    while let Some(at) = queue.pop_front() {
        if goal(at) {
            return first[at];
        }
        for next in view.neighbors(at) {
            if next != start && view.passable(view.cells[next]) && first[next].is_none() {
                first[next] = first[at];
                queue.push_back(next);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::botwars::BotwarsRules;

    proptest! {
        /// On any grid, the step toward the nearest goal read from the shared distances
        /// is the one the search from the botlet alone finds, for either side and
        /// either kind of goal.
        #[test]
        fn the_shared_distances_give_each_botlets_own_first_step(
            rows in 3..10usize,
            cols in 4..10usize,
            // Mostly empty cells, then botlets of either side and energy.
            letters in proptest::collection::vec(prop_oneof![3 => Just(b'.'), 1 => Just(b'r'), 1 => Just(b'b'), 1 => Just(b'*')], 100),
            seat in 0..2usize,
            attack: bool,
        ) {
            let grid: String = letters[..rows * cols].iter().map(|&letter| char::from(letter)).collect();
            let rules = BotwarsRules { rows, cols, ..BotwarsRules::default() };
            let game = Botwars::from_position(rules, &grid, [0, 0], 1).expect("a valid grid");
            let view = View::new(&game, seat);
            let (targets, target) =
                if attack { (&view.botlets[1 - seat][..], view.enemy) } else { (view.energy, b'*') };
            let distance = distances_to_goals(&view, targets);
            let goal = |at: usize| view.neighbors(at).any(|n| view.cells[n] == target);
            for start in view.mine().filter(|&start| !goal(start)) {
                prop_assert_eq!(nearest_step(&view, start, &distance), first_step(&view, start, &goal), "from {}", start);
            }
        }
    }
}
