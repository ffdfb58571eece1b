//! Why a bot failed, in one line, for its author ([`CrashReport`]): how its process
//! ended (exit code, signal, out of memory), where in the match (before its first
//! reply, or at which request), the request it did not answer, and the end of its
//! stderr. The runner records the first request each seat left unanswered, or the one
//! it went away at ([`Unanswered`]); [`report`] reads the rest from the seat's end.

use farm_engine::BotReply;
use farm_proto::{CrashReport, PlayerOutcome, PlayerStatus};

use crate::bots::{BotExit, CappedLog};

/// What came instead of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// Nothing before the deadline.
    Timeout,
    /// The bot went away.
    Crashed,
    /// Something that is not a reply.
    Unreadable,
}

impl Missed {
    /// What `reply` missed, if it is not an answer (a bot out for its output is not
    /// asked: it missed nothing).
    pub fn of(reply: &BotReply) -> Option<Missed> {
        match reply {
            BotReply::Timeout => Some(Missed::Timeout),
            BotReply::Crashed => Some(Missed::Crashed),
            BotReply::Unreadable => Some(Missed::Unreadable),
            BotReply::Line(_) | BotReply::OutputLimit => None,
        }
    }
}

/// The first request a bot did not answer in a match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unanswered {
    /// Which request (1 for the first).
    pub request: u64,
    /// What came instead.
    pub reply: Missed,
    /// How long it was given, in milliseconds.
    pub waited_ms: u64,
    /// The request's start, at most [`CrashReport::REQUEST_CHARS`] characters.
    pub text: String,
}

impl Unanswered {
    /// Request number `request`, `text`, given `waited_ms`, answered by `reply`.
    pub fn new(request: u64, reply: Missed, waited_ms: u64, text: &str) -> Self {
        let text = text.trim_end().chars().take(CrashReport::REQUEST_CHARS).collect();
        Unanswered { request, reply, waited_ms, text }
    }
}

/// The report of a seat that did not end `ok` (or was killed for its memory), from how
/// its process ended (`exit`, none for built-in bots), its first unanswered request
/// and its stderr `log`. `None` for a bot that played to the end.
pub fn report(
    outcome: &PlayerOutcome,
    exit: Option<&BotExit>,
    unanswered: Option<&Unanswered>,
    log: &CappedLog,
) -> Option<CrashReport> {
    let oom = exit.is_some_and(|exit| exit.oom_killed);
    if outcome.status == PlayerStatus::Ok && !oom {
        return None;
    }
    let when = match unanswered {
        Some(Unanswered { request: 1, .. }) => " before its first reply".to_owned(),
        Some(unanswered) => format!(" at request {}", unanswered.request),
        None => String::new(),
    };
    let own_end = exit.filter(|exit| exit.exited_early);
    let reason = if oom {
        format!("killed for using more memory than its limit{when}")
    } else if let Some(signal) = own_end.and_then(|exit| exit.signal) {
        format!("killed by signal {signal} ({}){when}", signal_name(signal))
    } else if let Some(code) = own_end.and_then(|exit| exit.code) {
        format!("exited with code {code}{when}")
    } else {
        match unanswered {
            Some(Unanswered { request: 1, reply: Missed::Timeout, waited_ms, .. }) => {
                format!("did not answer its first request within {waited_ms} ms")
            }
            Some(Unanswered { request, reply: Missed::Timeout, waited_ms, .. }) => {
                format!("did not answer request {request} within {waited_ms} ms")
            }
            Some(Unanswered { reply: Missed::Unreadable, .. }) => {
                format!("sent a reply that is not UTF-8 or is over the size cap{when}")
            }
            Some(Unanswered { reply: Missed::Crashed, .. }) => format!("closed its output{when}"),
            None => match outcome.status {
                PlayerStatus::Disqualified => "disqualified by the rules for a malformed reply".to_owned(),
                PlayerStatus::OutputLimit => "its replies pushed the replay past the worker's size limit".to_owned(),
                status => format!("ended {}", status.name()),
            },
        }
    };
    Some(CrashReport {
        reason,
        stderr_tail: log.last_lines(CrashReport::TAIL_LINES, CrashReport::LINE_CHARS),
        unanswered: unanswered.map(|unanswered| unanswered.text.clone()),
    })
}

/// A signal's name (`SIGSEGV`), or `unknown`.
fn signal_name(signal: i32) -> &'static str {
    nix::sys::signal::Signal::try_from(signal).map_or("unknown", |signal| signal.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: PlayerStatus) -> PlayerOutcome {
        PlayerOutcome { score: 0, rank: 2, status }
    }

    fn exit(code: Option<i32>, signal: Option<i32>, oom_killed: bool) -> BotExit {
        BotExit { code, signal, exited_early: true, oom_killed }
    }

    #[test]
    fn the_reason_says_how_and_where_in_one_line() {
        let mut log = CappedLog::default();
        log.append(b"starting\nTraceback (most recent call last):\nValueError: bad map\n", 1 << 20);
        let first = Unanswered::new(1, Missed::Crashed, 6000, "{\"game\": 1}\n");
        let fourth = Unanswered::new(4, Missed::Crashed, 1000, "{\"turn\": 4}");
        let cases = [
            (
                PlayerStatus::Crashed,
                Some(exit(Some(1), None, false)),
                Some(&first),
                "exited with code 1 before its first reply",
            ),
            (
                PlayerStatus::Crashed,
                Some(exit(None, Some(11), false)),
                Some(&fourth),
                "killed by signal 11 (SIGSEGV) at request 4",
            ),
            (
                PlayerStatus::Crashed,
                Some(exit(None, Some(9), true)),
                Some(&fourth),
                "killed for using more memory than its limit at request 4",
            ),
            (PlayerStatus::Crashed, None, Some(&fourth), "closed its output at request 4"),
            (
                PlayerStatus::TimedOut,
                None,
                Some(&Unanswered::new(1, Missed::Timeout, 1000, "x")),
                "did not answer its first request within 1000 ms",
            ),
            (
                PlayerStatus::TimedOut,
                None,
                Some(&Unanswered::new(7, Missed::Timeout, 50, "x")),
                "did not answer request 7 within 50 ms",
            ),
            (PlayerStatus::Disqualified, None, None, "disqualified by the rules for a malformed reply"),
        ];
        for (status, exit, unanswered, reason) in cases {
            let report = report(&outcome(status), exit.as_ref(), unanswered, &log).expect("a report");
            assert_eq!(report.reason, reason);
            assert_eq!(report.stderr_tail, ["starting", "Traceback (most recent call last):", "ValueError: bad map"]);
            assert_eq!(report.unanswered, unanswered.map(|unanswered| unanswered.text.clone()));
        }
        assert_eq!(first.text, "{\"game\": 1}", "its line end trimmed");
        // The farm's SIGKILL at the end is not the bot's own end.
        let killed_at_end = BotExit { code: None, signal: Some(9), exited_early: false, oom_killed: false };
        let late =
            report(&outcome(PlayerStatus::TimedOut), Some(&killed_at_end), Some(&first), &log).expect("a report");
        assert_eq!(late.reason, "closed its output before its first reply");
        assert_eq!(report(&outcome(PlayerStatus::Ok), Some(&killed_at_end), None, &log), None, "played to the end");
        let long = Unanswered::new(2, Missed::Timeout, 5, &"x".repeat(10_000));
        assert_eq!(long.text.len(), CrashReport::REQUEST_CHARS);
    }
}
