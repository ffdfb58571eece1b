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
}
