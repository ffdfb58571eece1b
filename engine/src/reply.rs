use serde::{Deserialize, Serialize};

/// What the farm got back from a bot for one request.
///
/// Every variant is ordinary input: each game maps it to the outcome its rules give
/// (a Vindinium hero that times out crashes; a Botwars side is disqualified).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BotReply {
    /// One reply: a line without its newline, or an HTTP response body.
    Line(String),
    /// Nothing arrived before the deadline.
    Timeout,
    /// The bot is gone: it exited, closed its output, or its transport failed.
    Crashed,
    /// Something arrived that is not a reply: not UTF-8, or over the size cap.
    Unreadable,
    /// The bot's replies pushed the match's replay past the farm's size limit: it is
    /// out of the match, as a bot that crashed is (with a status of its own).
    OutputLimit,
}

/// `text` without the characters Java's `String.trim` removes from both ends: every
/// code point up to U+0020 (space, tab, CR, NUL and the other C0 controls) and nothing
/// else. The original games trim replies this way, so a no-break space or U+3000 stays
/// (unlike `str::trim`, which removes Unicode white space and keeps control characters).
pub fn java_trim(text: &str) -> &str {
    text.trim_matches(|c: char| c <= ' ')
}

#[cfg(test)]
mod tests {
    use super::java_trim;

    #[test]
    fn java_trim_removes_controls_and_spaces_and_keeps_unicode_spaces() {
        assert_eq!(java_trim("\x00\t south\r\n\x01 "), "south");
        assert_eq!(java_trim("\u{a0}south\u{3000}"), "\u{a0}south\u{3000}");
        assert_eq!(java_trim("south\u{85}"), "south\u{85}");
        assert_eq!(java_trim(" \t\x1f"), "");
    }
}
