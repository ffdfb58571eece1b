//! Built-in Maze bots: `random` and `greedy`. Both read the hero's [`Sight`], what the
//! protocol text of an external bot holds, and never send an invalid command.

use std::collections::VecDeque;

use super::codec::push_int;
use super::map::{CELLS, HEIGHT, WIDTH, all_cells, chebyshev, neighbors};
use super::{Entity, HERO_FOV, HERO_MAX_HP, Maze, OBSTACLE, Sight, Weapon};
use crate::game_bot::GameBot;
use crate::{GameRng, Pos, Seat};

/// The built-in bots' names.
pub const NAMES: &[&str] = &["random", "greedy"];

pub(crate) fn create(name: &str, rng: GameRng) -> Option<Box<dyn GameBot<Maze>>> {
    match name {
        "random" => Some(Box::new(RandomBot { rng })),
        "greedy" => Some(Box::new(GreedyBot::default())),
        _ => None,
    }
}

const BOX: i32 = 7;
const EXIT: i32 = 0;
const TREASURE: i32 = 2;
const POTION: i32 = 3;
/// Turns in a game, as the default rules have it.
const MAX_TURNS: u32 = 150;

fn move_to(pos: Pos) -> String {
    let mut reply = String::with_capacity("MOVE 15 11".len());
    reply.push_str("MOVE ");
    push_int(&mut reply, pos.x);
    reply.push(' ');
    push_int(&mut reply, pos.y);
    reply
}

/// Steps to a random open neighbour or stays; a neighbour holding a monster is
/// attacked with the sword (that is what a `MOVE` onto it does).
struct RandomBot {
    rng: GameRng,
}

impl GameBot<Maze> for RandomBot {
    fn reply(&mut self, game: &Maze, seat: Seat) -> String {
        let copy = game.dungeon(seat);
        let hero = copy.hero().pos;
        // The hero's neighbours are in its view, so whether they are walls is in its
        // observation: read straight from the copy, without building its whole sight.
        let mut options = [hero; 5];
        let mut count = 0;
        for pos in neighbors(hero).filter(|&pos| !copy.is_obstacle(pos)) {
            options[count] = pos;
            count += 1;
        }
        // Staying is the last option.
        count += 1;
        move_to(*self.rng.pick(&options[..count]).unwrap_or(&hero))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    Unknown,
    Open,
    Wall,
}

/// Damage of the sword, hammer, scythe and bow.
const DAMAGE: [i32; 4] = [10, 6, 7, 8];

/// Attack range of a monster type.
fn monster_range(etype: i32) -> i32 {
    match etype {
        10 => 2,
        8 | 9 | 11 => 1,
        _ => 0,
    }
}

/// Remembers the walls and items it has seen. Each turn it hits the weakest monster
/// that can hit it back (the sword when it can, else the weapon that reaches), then
/// walks the shortest known path to, in order: the exit when time or health runs
/// short; treasure, a chest or (when hurt) a potion within 8 steps; the nearest
/// unexplored edge; the exit. Monsters on the way are cut down with the sword.
struct GreedyBot {
    known: Vec<Known>,
    items: Vec<Option<i32>>,
    turn: u32,
}

impl Default for GreedyBot {
    fn default() -> Self {
        GreedyBot { known: vec![Known::Unknown; CELLS], items: vec![None; CELLS], turn: 0 }
    }
}

impl GreedyBot {
    fn remember(&mut self, input: &Sight) {
        for pos in all_cells().filter(|pos| chebyshev(*pos, input.hero) <= HERO_FOV) {
            self.known[pos.index(WIDTH)] = Known::Open;
            self.items[pos.index(WIDTH)] = None;
        }
        for &Entity { pos, etype, .. } in &input.entities {
            if !pos.on_board(WIDTH, HEIGHT) {
                continue;
            }
            match etype {
                OBSTACLE => self.known[pos.index(WIDTH)] = Known::Wall,
                EXIT..=6 => self.items[pos.index(WIDTH)] = Some(etype),
                _ => {}
            }
        }
    }

    /// The first step towards the nearest cell where `goal` holds, and its distance,
    /// through known open cells (a step onto a monster attacks it with the sword).
    /// The exit is only walked onto when it is the goal.
    fn route(&self, hero: Pos, goal: impl Fn(Pos) -> bool) -> Option<(Pos, u32)> {
        let mut first: Vec<Option<(Pos, u32)>> = vec![None; CELLS];
        let mut queue = VecDeque::from([hero]);
        while let Some(pos) = queue.pop_front() {
            let reached = first[pos.index(WIDTH)];
            if let Some(found) = reached
                && goal(pos)
            {
                return Some(found);
            }
            if reached.is_some() && self.items[pos.index(WIDTH)] == Some(EXIT) {
                continue;
            }
            for next in neighbors(pos) {
                if next != hero && first[next.index(WIDTH)].is_none() && self.known[next.index(WIDTH)] == Known::Open {
                    first[next.index(WIDTH)] = Some(reached.map_or((next, 1), |(step, dist)| (step, dist + 1)));
                    queue.push_back(next);
                }
            }
        }
        None
    }

    fn fight(&self, input: &Sight) -> Option<String> {
        let hero = input.hero;
        // Monsters that will hit the hero this turn, weakest first.
        let mut threats: Vec<(i32, Pos)> = input
            .entities
            .iter()
            .filter(|entity| entity.etype > BOX && chebyshev(entity.pos, hero) <= monster_range(entity.etype))
            .map(|entity| (entity.evalue, entity.pos))
            .collect();
        threats.sort();
        let &(hp, target) = threats.first()?;
        let charges = [1, input.charges[0], input.charges[1], input.charges[2]];
        let reaches =
            |weapon: usize| charges[weapon] > 0 && super::weapon_cells(hero, Weapon::ALL[weapon], target).is_some();
        // The sword if it reaches; else the cheapest weapon that kills; else the strongest.
        let weapon = reaches(0)
            .then_some(0)
            .or_else(|| [1, 2, 3].into_iter().find(|&w| reaches(w) && hp <= DAMAGE[w]))
            .or_else(|| [3, 2, 1].into_iter().find(|&w| reaches(w)))?;
        Some(format!("ATTACK {weapon} {} {}", target.x, target.y))
    }
}

impl GameBot<Maze> for GreedyBot {
    fn reply(&mut self, game: &Maze, seat: Seat) -> String {
        self.play(&game.dungeon(seat).sight())
    }
}

impl GreedyBot {
    /// The command for a turn that starts with `input`.
    fn play(&mut self, input: &Sight) -> String {
        self.turn += 1;
        self.remember(input);
        if let Some(attack) = self.fight(input) {
            return attack;
        }
        let hero = input.hero;
        let left = MAX_TURNS.saturating_sub(self.turn);
        let exit = self.route(hero, |pos| self.items[pos.index(WIDTH)] == Some(EXIT));
        if let Some((step, dist)) = exit
            && (dist + 8 >= left || input.hp <= 8)
        {
            return move_to(step);
        }
        let wanted = |pos: Pos| match self.items[pos.index(WIDTH)] {
            Some(TREASURE | 4..=6) => true,
            Some(POTION) => input.hp <= HERO_MAX_HP / 2,
            _ => false,
        };
        let frontier = |pos: Pos| neighbors(pos).any(|n| self.known[n.index(WIDTH)] == Known::Unknown);
        let next = self
            .route(hero, wanted)
            .filter(|&(_, dist)| dist <= 8)
            .or_else(|| if exit.is_some() { None } else { self.route(hero, frontier) })
            .or(exit)
            .map_or(hero, |(step, _)| step);
        move_to(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hero at (5, 5) with full health and charges, seeing `entities`.
    fn sight(entities: &[(i32, i32, i32, i32)]) -> Sight {
        let entities =
            entities.iter().map(|&(x, y, etype, evalue)| Entity { pos: Pos::new(x, y), etype, evalue }).collect();
        Sight { hero: Pos::new(5, 5), hp: 20, score: 0, charges: [5, 5, 5], entities }
    }

    #[test]
    fn greedy_swords_a_monster_next_to_it_and_walks_to_treasure() {
        assert_eq!(GreedyBot::default().play(&sight(&[(5, 6, 8, 6)])), "ATTACK 0 5 6");
        assert_eq!(GreedyBot::default().play(&sight(&[(7, 5, 2, 100)])), "MOVE 6 5");
    }

    #[test]
    fn greedy_shoots_an_orc_two_cells_away() {
        assert_eq!(GreedyBot::default().play(&sight(&[(7, 7, 10, 8)])), "ATTACK 3 7 7");
    }
}
