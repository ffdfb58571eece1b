//! The bot's reply: `MOVE x y [message]` or `ATTACK w x y [message]`, parsed as
//! strictly as the original's `Action.parse`.

use super::map::Pos;

/// A weapon. Its index is the `w` of `ATTACK w x y`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Weapon {
    /// 10 damage to one cell at Manhattan distance 1; unlimited.
    Sword,
    /// 6 damage to three cells within Chebyshev 1.
    Hammer,
    /// 7 damage to two cells along a queen line within 2.
    Scythe,
    /// 8 damage to any one cell within Chebyshev 3.
    Bow,
}

impl Weapon {
    /// Every weapon, by index.
    pub const ALL: [Weapon; 4] = [Weapon::Sword, Weapon::Hammer, Weapon::Scythe, Weapon::Bow];

    /// The protocol's weapon number, 0 to 3.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The weapon with protocol number `index`.
    pub fn from_index(index: i64) -> Option<Weapon> {
        usize::try_from(index).ok().and_then(|index| Weapon::ALL.get(index)).copied()
    }

    /// Damage to every monster on a hit cell.
    pub fn damage(self) -> i32 {
        match self {
            Weapon::Sword => 10,
            Weapon::Hammer => 6,
            Weapon::Scythe => 7,
            Weapon::Bow => 8,
        }
    }

    /// Charges at the start (the sword's 99999 is as good as unlimited).
    pub fn initial_charges(self) -> u32 {
        match self {
            Weapon::Sword => 99_999,
            Weapon::Hammer | Weapon::Scythe | Weapon::Bow => 5,
        }
    }

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Weapon::Sword => "sword",
            Weapon::Hammer => "hammer",
            Weapon::Scythe => "scythe",
            Weapon::Bow => "bow",
        }
    }
}

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
pub(crate) fn clip(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Java's `Integer.parseInt` over ASCII: an optional sign, then decimal digits,
/// within 32 bits.
fn parse_int(field: &str) -> Option<i64> {
    let digits = field.strip_prefix(['+', '-']).unwrap_or(field);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: i64 = field.parse().ok()?;
    i32::try_from(value).ok().map(i64::from)
}

/// Splits `text` on single spaces into at most `limit` fields, as Java's
/// `split(" ", limit)`: the last field keeps the rest of the text.
fn split(text: &str, limit: usize) -> Vec<&str> {
    text.splitn(limit, ' ').collect()
}

fn message(rest: Option<&&str>) -> String {
    rest.map(|text| text.trim().to_owned()).unwrap_or_default()
}

/// Parses one reply line. Errors are checked before anything about the game state:
/// keyword, numbers, coordinates inside the maze, then the weapon number.
///
/// Fields are separated by exactly one space: a leading space, two spaces in a row or
/// a tab make a field that does not parse. Extra text after the numbers is the message;
/// a trailing space and a `+` sign are accepted. One trailing `\r` is removed first.
pub fn parse_command(line: &str) -> Result<Command, CommandError> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut words = line.splitn(2, ' ');
    let keyword = words.next().unwrap_or_default();
    let rest = words.next();
    let coordinates = |x: i64, y: i64| {
        let target = Pos::new(x as i32, y as i32);
        if target.in_maze() { Ok(target) } else { Err(CommandError::OutsideMaze { x, y }) }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn mv(x: i32, y: i32, message: &str) -> Command {
        Command::Move { target: Pos::new(x, y), message: message.into() }
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
        assert_eq!(parse_int("2147483648"), None);
        for bad in ["", "+", "-", "1.0", "1e2", " 1", "1\t", "0x1", "١", "+-1"] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
    }
}
