//! The map file format ("Map format" and Settled questions 27–29) and its checks.

use std::collections::VecDeque;

use crate::{MapError, Pos};

use super::rules::OstibotRules;

/// A direction of movement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dir {
    /// y − 1.
    Up,
    /// y + 1.
    Down,
    /// x − 1.
    Left,
    /// x + 1.
    Right,
}

impl Dir {
    /// Every direction, in the order bots' searches try them.
    pub const ALL: [Dir; 4] = [Dir::Up, Dir::Down, Dir::Left, Dir::Right];

    /// (dx, dy).
    pub fn delta(self) -> (i32, i32) {
        match self {
            Dir::Up => (0, -1),
            Dir::Down => (0, 1),
            Dir::Left => (-1, 0),
            Dir::Right => (1, 0),
        }
    }

    /// The cell one step from `from` in this direction.
    pub fn step(self, from: Pos) -> Pos {
        let (dx, dy) = self.delta();
        from.offset(dx, dy)
    }

    /// The wire name: `UP`, `DOWN`, `LEFT` or `RIGHT`.
    pub fn name(self) -> &'static str {
        match self {
            Dir::Up => "UP",
            Dir::Down => "DOWN",
            Dir::Left => "LEFT",
            Dir::Right => "RIGHT",
        }
    }

    /// The direction with this exact wire name.
    pub fn from_name(name: &str) -> Option<Dir> {
        Dir::ALL.into_iter().find(|dir| dir.name() == name)
    }
}

/// What a cell is made of. Map objects (`+ C V O`) stand on floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terrain {
    /// `#`: blocks moves (block damage) and sight; never corrupts.
    Wall,
    /// `.`.
    Floor,
    /// `1`–`9`: a spawner of that team; blocks moves (block damage) until corruption starts.
    Spawner(u8),
    /// `^`: damage on entering, unless spike-immune.
    Spikes,
    /// `~`: entering slides one more step the same way.
    Ice,
    /// `L R U D`: entering pushes one step this way.
    Treadmill(Dir),
    /// `H`: bumping into it heals for carried gold, or hurts.
    Health,
}

impl Terrain {
    /// The map character; `.` for floor.
    pub fn symbol(self) -> char {
        match self {
            Terrain::Wall => '#',
            Terrain::Floor => '.',
            Terrain::Spawner(team) => char::from(b'0' + team),
            Terrain::Spikes => '^',
            Terrain::Ice => '~',
            Terrain::Treadmill(Dir::Left) => 'L',
            Terrain::Treadmill(Dir::Right) => 'R',
            Terrain::Treadmill(Dir::Up) => 'U',
            Terrain::Treadmill(Dir::Down) => 'D',
            Terrain::Health => 'H',
        }
    }

    /// Whether an adventurer can stand on it (map objects aside).
    pub fn walkable(self) -> bool {
        !matches!(self, Terrain::Wall | Terrain::Spawner(_) | Terrain::Health)
    }
}

/// A map object: an entity written into the map file, restored every round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ObjectKind {
    /// `+`: blocks moves and sight while intact; gone at 0 hp.
    Door,
    /// `C`: gone at 0 hp, leaving `chestGold`.
    Chest,
    /// `V`: gone at 0 hp, leaving `vaseGold`.
    Vase,
    /// `O`: opens at 0 hp; entering an open portal escapes.
    Portal,
}

impl ObjectKind {
    /// The `type` bots see.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::Door => "door",
            ObjectKind::Chest => "chest",
            ObjectKind::Vase => "vase",
            ObjectKind::Portal => "portal",
        }
    }

    /// The map character.
    pub fn symbol(self) -> char {
        match self {
            ObjectKind::Door => '+',
            ObjectKind::Chest => 'C',
            ObjectKind::Vase => 'V',
            ObjectKind::Portal => 'O',
        }
    }

    /// Its hit points at the start of a round.
    pub fn hp(self, rules: &OstibotRules) -> i64 {
        match self {
            ObjectKind::Door => rules.door_hp,
            ObjectKind::Chest => rules.chest_hp,
            ObjectKind::Vase => rules.vase_hp,
            ObjectKind::Portal => rules.portal_hp,
        }
    }
}

/// The smallest and largest side of a map, in cells.
pub const SIDE: std::ops::RangeInclusive<usize> = 3..=100;

/// A parsed, checked map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OstibotMap {
    /// Columns.
    pub width: i32,
    /// Rows.
    pub height: i32,
    /// Terrain, row-major.
    pub terrain: Vec<Terrain>,
    /// Map objects in row-major order.
    pub objects: Vec<(Pos, ObjectKind)>,
    /// Each team's spawners (index `team − 1`), in slot order: by distance to the
    /// team's nearest portal, then row-major (Settled question 29).
    pub spawners: Vec<Vec<Pos>>,
}

impl OstibotMap {
    /// Parses and checks a map file.
    pub fn parse(text: &str) -> Result<OstibotMap, MapError> {
        let text = text.replace('\r', "");
        let mut lines: Vec<&str> = text.split('\n').collect();
        if lines.last() == Some(&"") {
            lines.pop();
        }
        if lines.len() > *SIDE.end() {
            return Err(MapError::at(SIDE.end() + 1, 1, format!("a map has at most {} rows", SIDE.end())));
        }
        if lines.len() < *SIDE.start() {
            return Err(MapError::whole(format!("a map has at least {} rows, this one {}", SIDE.start(), lines.len())));
        }
        let width = lines[0].chars().count();
        let mut terrain = Vec::with_capacity(width * lines.len());
        let mut objects = Vec::new();
        let mut digits: Vec<Option<(usize, usize)>> = vec![None; 10];
        for (row, line) in lines.iter().enumerate() {
            let number = row + 1;
            if line.is_empty() {
                return Err(MapError::at(number, 1, "blank line"));
            }
            for (col, c) in line.chars().enumerate() {
                let pos = Pos::new(col as i32, row as i32);
                let cell = match c {
                    '#' => Terrain::Wall,
                    '.' => Terrain::Floor,
                    '1'..='9' => {
                        let team = c as u8 - b'0';
                        digits[usize::from(team)].get_or_insert((number, col + 1));
                        Terrain::Spawner(team)
                    }
                    '^' => Terrain::Spikes,
                    '~' => Terrain::Ice,
                    'L' => Terrain::Treadmill(Dir::Left),
                    'R' => Terrain::Treadmill(Dir::Right),
                    'U' => Terrain::Treadmill(Dir::Up),
                    'D' => Terrain::Treadmill(Dir::Down),
                    'H' => Terrain::Health,
                    '+' | 'C' | 'V' | 'O' => {
                        let kind = match c {
                            '+' => ObjectKind::Door,
                            'C' => ObjectKind::Chest,
                            'V' => ObjectKind::Vase,
                            _ => ObjectKind::Portal,
                        };
                        objects.push((pos, kind));
                        Terrain::Floor
                    }
                    other => {
                        return Err(MapError::at(
                            number,
                            col + 1,
                            format!("unknown map character {other:?} (expected one of # . 1-9 ^ ~ L R U D H + C V O)"),
                        ));
                    }
                };
                if col >= width {
                    return Err(MapError::at(number, col + 1, format!("row is longer than the first row ({width})")));
                }
                terrain.push(cell);
            }
            let length = line.chars().count();
            if length < width {
                return Err(MapError::at(
                    number,
                    length + 1,
                    format!("row is shorter ({length}) than the first row ({width})"),
                ));
            }
        }
        if !SIDE.contains(&width) {
            return Err(MapError::at(1, 1, format!("a map is 3 to 100 columns wide, this one {width}")));
        }
        let teams = digits.iter().skip(1).take_while(|seen| seen.is_some()).count();
        if let Some((team, Some((line, column)))) =
            digits.iter().enumerate().skip(teams + 1).find(|(_, at)| at.is_some())
        {
            return Err(MapError::at(
                *line,
                *column,
                format!("spawner of team {team} but no spawner of team {}: spawner digits must be 1..N", teams + 1),
            ));
        }
        match (teams, digits[1]) {
            (0, _) => return Err(MapError::whole("the map has no spawner (digits 1..N, N at least 2)")),
            (1, Some((line, column))) => {
                return Err(MapError::at(
                    line,
                    column,
                    "the map has spawners of team 1 only; it needs at least 2 teams",
                ));
            }
            _ => {}
        }
        let mut map = OstibotMap {
            width: width as i32,
            height: lines.len() as i32,
            terrain,
            objects,
            spawners: vec![Vec::new(); teams],
        };
        map.order_spawners(teams)?;
        Ok(map)
    }

    /// How many teams play this map.
    pub fn teams(&self) -> usize {
        self.spawners.len()
    }

    /// The terrain at `pos`; out of bounds is wall.
    pub fn terrain_at(&self, pos: Pos) -> Terrain {
        self.index(pos).map_or(Terrain::Wall, |index| self.terrain[index])
    }

    /// The row-major index of `pos`, or `None` out of bounds.
    pub fn index(&self, pos: Pos) -> Option<usize> {
        (pos.x >= 0 && pos.y >= 0 && pos.x < self.width && pos.y < self.height)
            .then(|| (pos.y * self.width + pos.x) as usize)
    }

    fn neighbours(&self, pos: Pos) -> impl Iterator<Item = Pos> + '_ {
        Dir::ALL.into_iter().map(move |dir| dir.step(pos)).filter(|next| self.index(*next).is_some())
    }

    /// Steps from every cell to the nearest portal over cells a team can open a way
    /// through (all but walls, spawners and health tiles; Settled question 28).
    fn portal_distances(&self) -> Vec<Option<u32>> {
        let mut distance = vec![None; self.terrain.len()];
        let mut queue = VecDeque::new();
        for (pos, kind) in &self.objects {
            if *kind == ObjectKind::Portal
                && let Some(index) = self.index(*pos)
            {
                distance[index] = Some(0);
                queue.push_back(*pos);
            }
        }
        while let Some(pos) = queue.pop_front() {
            let here = self.index(pos).and_then(|index| distance[index]).unwrap_or(0);
            for next in self.neighbours(pos) {
                let Some(index) = self.index(next) else { continue };
                if distance[index].is_none() && self.terrain[index].walkable() {
                    distance[index] = Some(here + 1);
                    queue.push_back(next);
                }
            }
        }
        distance
    }

    /// Orders each team's spawners (Settled question 29) and checks that every team
    /// can reach a portal (28).
    fn order_spawners(&mut self, teams: usize) -> Result<(), MapError> {
        let distance = self.portal_distances();
        // A spawner is left through a neighbour, so its distance is one more than its
        // best neighbour's; spawners themselves block the search.
        let spawner_distance = |pos: Pos| {
            self.neighbours(pos)
                .filter_map(|next| self.index(next).and_then(|index| distance[index]))
                .min()
                .map(|d| d + 1)
        };
        let mut spawners: Vec<Vec<(Option<u32>, Pos)>> = vec![Vec::new(); teams];
        for y in 0..self.height {
            for x in 0..self.width {
                let pos = Pos::new(x, y);
                if let Terrain::Spawner(team) = self.terrain_at(pos) {
                    spawners[usize::from(team) - 1].push((spawner_distance(pos), pos));
                }
            }
        }
        for (team, list) in spawners.iter_mut().enumerate() {
            if list.iter().all(|(distance, _)| distance.is_none()) {
                let first = list[0].1;
                return Err(MapError::at(
                    first.y as usize + 1,
                    first.x as usize + 1,
                    format!("team {} cannot reach any portal from its spawners", team + 1),
                ));
            }
            // Row-major order is the order found; a stable sort keeps it among equals.
            list.sort_by_key(|(distance, _)| distance.unwrap_or(u32::MAX));
        }
        self.spawners = spawners.into_iter().map(|list| list.into_iter().map(|(_, pos)| pos).collect()).collect();
        Ok(())
    }

    /// Warnings that do not stop a match: corruption that cannot cover the map before
    /// `maxTurnsPerRound` (Settled question 28), fewer than N+1 portals (29).
    pub fn warnings(&self, rules: &OstibotRules) -> Vec<String> {
        let mut warnings = Vec::new();
        let portals = self.objects.iter().filter(|(_, kind)| *kind == ObjectKind::Portal).count();
        if portals < self.teams() + 1 {
            warnings.push(format!("{portals} portals for {} teams; maps should have at least N+1", self.teams()));
        }
        // Corruption spreads from the spawners to non-wall 4-neighbours.
        let mut distance = vec![None; self.terrain.len()];
        let mut queue = VecDeque::new();
        for (index, cell) in self.terrain.iter().enumerate() {
            if matches!(cell, Terrain::Spawner(_)) {
                distance[index] = Some(0u64);
                queue.push_back(Pos::new(index as i32 % self.width, index as i32 / self.width));
            }
        }
        while let Some(pos) = queue.pop_front() {
            let here = self.index(pos).and_then(|index| distance[index]).unwrap_or(0);
            for next in self.neighbours(pos) {
                let Some(index) = self.index(next) else { continue };
                if distance[index].is_none() && self.terrain[index] != Terrain::Wall {
                    distance[index] = Some(here + 1);
                    queue.push_back(next);
                }
            }
        }
        let open = self.terrain.iter().zip(&distance).filter(|(cell, _)| **cell != Terrain::Wall);
        let farthest = open.clone().filter_map(|(_, distance)| *distance).max().unwrap_or(0);
        if open.clone().any(|(_, distance)| distance.is_none()) {
            warnings.push("some cells can never be corrupted (walled off from every spawner)".into());
        }
        let covered = u64::from(rules.corruption_start_at) + farthest * u64::from(rules.corruption_spread_speed);
        if covered > u64::from(rules.max_turns_per_round) {
            warnings.push(format!(
                "corruption covers the map at turn {covered}, after maxTurnsPerRound ({})",
                rules.max_turns_per_round
            ));
        }
        warnings
    }

    /// The map file's text.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(self.terrain.len() + self.height as usize);
        for y in 0..self.height {
            for x in 0..self.width {
                let pos = Pos::new(x, y);
                match self.objects.iter().find(|(at, _)| *at == pos) {
                    Some((_, kind)) => out.push(kind.symbol()),
                    None => out.push(self.terrain_at(pos).symbol()),
                }
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
#######################
#1..V..^..#C#.....V..O#
#1..###+#.....~~~~~...#
#1.^..#H#..RRR..#..V..#
#..V..#.#..###..+..^..#
#.....C..^.O.^..C.....#
#..^..+..###..#.#..V..#
#..V..#..LLL..#H#..^.2#
#...~~~~~.....#+###..2#
#O..V.....#C#..^..V..2#
#######################
";

    #[test]
    fn the_spec_sample_parses_and_renders_back() {
        let map = OstibotMap::parse(SAMPLE).expect("the spec's sample is valid");
        assert_eq!((map.width, map.height, map.teams()), (23, 11, 2));
        assert_eq!(map.render(), SAMPLE);
        assert_eq!(map.objects.iter().filter(|(_, kind)| *kind == ObjectKind::Portal).count(), 3);
        assert_eq!(map.spawners[0].len(), 3);
    }

    #[test]
    fn spawners_are_ordered_by_distance_to_a_portal() {
        let map = OstibotMap::parse("#####\n#1..#\n#...#\n#1.O#\n#2..#\n#####\n").expect("valid");
        // (1,3) is 2 steps from the portal, (1,1) 3.
        assert_eq!(map.spawners[0], vec![Pos::new(1, 3), Pos::new(1, 1)]);
    }

    #[test]
    fn crlf_and_one_trailing_newline_are_fine() {
        assert!(OstibotMap::parse("1.O\r\n...\r\n2.O").is_ok());
        assert!(OstibotMap::parse("1.O\n...\n2.O\n").is_ok());
        let error = OstibotMap::parse("1.O\n...\n2.O\n\n").expect_err("two trailing newlines");
        assert_eq!(error.at, Some((4, 1)));
    }
}
