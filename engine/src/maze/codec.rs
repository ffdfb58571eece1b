//! The bot's reply: `MOVE x y [message]` or `ATTACK w x y [message]`, parsed as
//! strictly as the original's `Action.parse`.

use super::map::Pos;
use crate::java_trim;

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
    let line = line.split('\r').next().unwrap_or_default();
    let mut words = line.splitn(2, ' ');
    let keyword = java_trim(words.next().unwrap_or_default());
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
}
