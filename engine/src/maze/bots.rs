//! Built-in Maze bots: `random` and `greedy`. Both read the protocol text an external
//! bot gets and never send an invalid command.

use std::collections::VecDeque;

use super::Weapon;
use super::map::{CELLS, Pos};
use super::{HERO_FOV, HERO_MAX_HP};
use crate::GameRng;
use crate::builtin::BuiltinBot;

/// The built-in bots' names.
pub const NAMES: &[&str] = &["random", "greedy"];

pub(crate) fn create(name: &str, rng: GameRng) -> Option<Box<dyn BuiltinBot>> {
    match name {
        "random" => Some(Box::new(RandomBot { rng })),
        "greedy" => Some(Box::new(GreedyBot::default())),
        _ => None,
    }
}

const OBSTACLE: i32 = 1;
const BOX: i32 = 7;
const EXIT: i32 = 0;
const TREASURE: i32 = 2;
const POTION: i32 = 3;
/// Turns in a game, as the default rules have it.
const MAX_TURNS: u32 = 150;

/// One turn's input.
struct Input {
    hero: Pos,
    hp: i32,
    /// Hammer, scythe, bow.
    charges: [i32; 3],
    /// `(cell, etype, evalue)`.
    entities: Vec<(Pos, i32, i32)>,
}

fn parse(observation: &str) -> Option<Input> {
    let mut lines = observation.lines();
    let numbers = |line: &str| line.split_whitespace().map(str::parse::<i32>).collect::<Result<Vec<_>, _>>().ok();
    let head = numbers(lines.next()?)?;
    let &[x, y, hp, _score, hammer, scythe, bow] = head.as_slice() else { return None };
    let count: usize = lines.next()?.trim().parse().ok()?;
    let mut entities = Vec::with_capacity(count);
    for line in lines.take(count) {
        let &[ex, ey, etype, evalue] = numbers(line)?.as_slice() else { return None };
        entities.push((Pos::new(ex, ey), etype, evalue));
    }
    Some(Input { hero: Pos::new(x, y), hp, charges: [hammer, scythe, bow], entities })
}

fn move_to(pos: Pos) -> String {
    format!("MOVE {} {}", pos.x, pos.y)
}

/// Steps to a random open neighbour or stays; a neighbour holding a monster is
/// attacked with the sword (that is what a `MOVE` onto it does).
struct RandomBot {
    rng: GameRng,
}

impl BuiltinBot for RandomBot {
    fn reply(&mut self, observation: &str) -> String {
        let Some(input) = parse(observation) else { return "MOVE 0 0".into() };
        let walls: Vec<Pos> =
            input.entities.iter().filter(|(_, etype, _)| *etype == OBSTACLE).map(|(pos, _, _)| *pos).collect();
        let mut options: Vec<Pos> = input.hero.neighbors().filter(|pos| !walls.contains(pos)).collect();
        options.push(input.hero);
        move_to(*self.rng.pick(&options).unwrap_or(&input.hero))
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
    fn remember(&mut self, input: &Input) {
        for pos in Pos::all().filter(|pos| pos.chebyshev(input.hero) <= HERO_FOV) {
            self.known[pos.index()] = Known::Open;
            self.items[pos.index()] = None;
        }
        for &(pos, etype, _) in &input.entities {
            if !pos.in_maze() {
                continue;
            }
            match etype {
                OBSTACLE => self.known[pos.index()] = Known::Wall,
                EXIT..=6 => self.items[pos.index()] = Some(etype),
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
            let reached = first[pos.index()];
            if let Some(found) = reached
                && goal(pos)
            {
                return Some(found);
            }
            if reached.is_some() && self.items[pos.index()] == Some(EXIT) {
                continue;
            }
            for next in pos.neighbors() {
                if next != hero && first[next.index()].is_none() && self.known[next.index()] == Known::Open {
                    first[next.index()] = Some(reached.map_or((next, 1), |(step, dist)| (step, dist + 1)));
                    queue.push_back(next);
                }
            }
        }
        None
    }

    fn fight(&self, input: &Input) -> Option<String> {
        let hero = input.hero;
        // Monsters that will hit the hero this turn, weakest first.
        let mut threats: Vec<(i32, Pos)> = input
            .entities
            .iter()
            .filter(|&&(pos, etype, _)| etype > BOX && pos.chebyshev(hero) <= monster_range(etype))
            .map(|&(pos, _, hp)| (hp, pos))
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

impl BuiltinBot for GreedyBot {
    fn reply(&mut self, observation: &str) -> String {
        let Some(input) = parse(observation) else { return "MOVE 0 0".into() };
        self.turn += 1;
        self.remember(&input);
        if let Some(attack) = self.fight(&input) {
            return attack;
        }
        let hero = input.hero;
        let left = MAX_TURNS.saturating_sub(self.turn);
        let exit = self.route(hero, |pos| self.items[pos.index()] == Some(EXIT));
        if let Some((step, dist)) = exit
            && (dist + 8 >= left || input.hp <= 8)
        {
            return move_to(step);
        }
        let wanted = |pos: Pos| match self.items[pos.index()] {
            Some(TREASURE | 4..=6) => true,
            Some(POTION) => input.hp <= HERO_MAX_HP / 2,
            _ => false,
        };
        let frontier = |pos: Pos| pos.neighbors().any(|n| self.known[n.index()] == Known::Unknown);
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

    #[test]
    fn input_parses_the_protocol() {
        let input = parse("11 11 20 0 5 4 3\n2\n8 8 8 6\n8 9 1 -1").expect("parses");
        assert_eq!((input.hero, input.hp, input.charges), (Pos::new(11, 11), 20, [5, 4, 3]));
        assert_eq!(input.entities, vec![(Pos::new(8, 8), 8, 6), (Pos::new(8, 9), 1, -1)]);
        assert!(parse("garbage").is_none());
    }

    #[test]
    fn greedy_swords_a_monster_next_to_it_and_walks_to_treasure() {
        let mut bot = GreedyBot::default();
        assert_eq!(bot.reply("5 5 20 0 5 5 5\n1\n5 6 8 6"), "ATTACK 0 5 6");
        let mut bot = GreedyBot::default();
        assert_eq!(bot.reply("5 5 20 0 5 5 5\n1\n7 5 2 100"), "MOVE 6 5");
    }

    #[test]
    fn greedy_shoots_an_orc_two_cells_away() {
        let mut bot = GreedyBot::default();
        assert_eq!(bot.reply("5 5 20 0 5 5 5\n1\n7 7 10 8"), "ATTACK 3 7 7");
    }
}
