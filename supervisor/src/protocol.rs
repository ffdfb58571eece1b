//! What the worker and a container's supervisor say to each other: one line per
//! request and per reply, over the unix socket [`SOCKET`] in the container's run
//! directory. File descriptors travel beside the line (`SCM_RIGHTS`, sent and read by
//! fds.rs, the transport under these messages).
//!
//! One match is one connection: `start` (carrying the bot's stdin, stdout and stderr)
//! is answered `started` (carrying the container's CPU usage file, when it has one) or
//! `failed`; while the match runs, `pause` and `resume` (unanswered) stop and continue
//! every process of the bot; `end` is answered `exited`, then, once the container is
//! reset, `ready` or `dirty`. An `http` bot's server is reached by
//! `connect` on connections of their own, answered `connected` (carrying a socket
//! connected to the bot's port inside the container) or `refused`. A bot that is a
//! client of a server the worker plays (the original Vindinium API) finds it at a
//! port inside the container that `listen`, before `start`, opens: answered
//! `listening` (carrying the listening socket, which the worker accepts on) or
//! `refused`.

use std::fmt;

/// The socket's file name in the run directory.
pub const SOCKET: &str = "supervisor.sock";
/// Where the run directory is mounted inside a container.
pub const RUN_DIR: &str = "/farm/run";
/// Where the supervisor binary is mounted inside a container (read-only).
pub const BINARY: &str = "/farm/bin/farm-supervisor";
/// The longest line either side accepts.
pub const MAX_LINE: usize = 4096;

/// A line that is not a request or reply of this protocol.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("not a supervisor message: {0:?}")]
pub struct ProtocolError(pub String);

/// A request from the worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Start the bot, with these variables added to its environment. Carries three
    /// descriptors: its stdin, stdout and stderr.
    Start {
        /// `NAME=value` pairs; neither side may hold whitespace.
        env: Vec<(String, String)>,
    },
    /// The match is over: end every process of the bot and reset the container.
    End,
    /// Stop every process of the bot (SIGSTOP) until `resume`: it is not its turn.
    /// Not answered: it is sent on every turn and must cost the worker no wait.
    Pause,
    /// Continue every process of the bot (SIGCONT). Not answered.
    Resume,
    /// Connect to the bot's server on this TCP port inside the container.
    Connect {
        /// The port.
        port: u16,
    },
    /// Listen on this TCP port of the container's loopback, for the worker to accept
    /// the bot's connections there.
    Listen {
        /// The port.
        port: u16,
    },
}

/// How the bot ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exit {
    /// Its exit code, when it exited by itself.
    pub code: Option<i32>,
    /// The signal that ended it (9 when the supervisor killed it at the end).
    pub signal: Option<i32>,
    /// Whether it had ended before the match did.
    pub early: bool,
    /// Whether the kernel killed a process of the bot for exceeding its memory limit.
    pub oom_killed: bool,
}

/// A reply from the supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The bot runs, as this process (in the container's PID namespace). The
    /// container's CPU usage file travels with the line, opened for reading, when the
    /// supervisor found one.
    Started {
        /// Its process id.
        pid: i32,
        /// Which usage file travels with it, if any.
        cpu: Option<CpuUsageFile>,
    },
    /// The bot could not be started.
    Failed {
        /// Why.
        reason: String,
    },
    /// The bot has ended (answers `end`).
    Exited(Exit),
    /// Every trace of the match is gone: the container can serve another.
    Ready,
    /// The reset could not be verified: the container must not serve again.
    Dirty {
        /// What was left.
        reason: String,
    },
    /// The bot's server took the connection; the socket travels with this line.
    Connected,
    /// The listening socket travels with this line (answers `listen`).
    Listening,
    /// The bot's server did not take the connection, or the port could not be
    /// listened on.
    Refused {
        /// Why.
        reason: String,
    },
}

/// A cgroup file that gives a cgroup's cumulative CPU time, in one of the two
/// hierarchies' dialects: what the worker reads a container bot's CPU time from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuUsageFile {
    /// cgroup v2's `cpu.stat`, whose `usage_usec` line counts microseconds.
    CpuStat,
    /// cgroup v1's `cpuacct.usage`, one number of nanoseconds.
    CpuacctUsage,
}

impl CpuUsageFile {
    /// Its file name, as the protocol names it too.
    pub fn name(self) -> &'static str {
        match self {
            CpuUsageFile::CpuStat => "cpu.stat",
            CpuUsageFile::CpuacctUsage => "cpuacct.usage",
        }
    }

    /// Where a container finds its own cgroup's usage file, in order of preference: a
    /// private cgroup namespace (v2) shows its own cgroup at the root; v1 bind-mounts
    /// its cgroup of each controller.
    pub const PLACES: [(&'static str, CpuUsageFile); 3] = [
        ("/sys/fs/cgroup/cpu.stat", CpuUsageFile::CpuStat),
        ("/sys/fs/cgroup/cpuacct/cpuacct.usage", CpuUsageFile::CpuacctUsage),
        ("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", CpuUsageFile::CpuacctUsage),
    ];

    /// The cumulative CPU time in a read of this file, in microseconds; `None` if the
    /// text is not what the file holds.
    pub fn parse_micros(self, text: &str) -> Option<u64> {
        match self {
            CpuUsageFile::CpuStat => {
                text.lines().find_map(|line| line.strip_prefix("usage_usec ")).and_then(|n| n.trim().parse().ok())
            }
            CpuUsageFile::CpuacctUsage => text.trim().parse::<u64>().ok().map(|nanos| nanos / 1000),
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        [CpuUsageFile::CpuStat, CpuUsageFile::CpuacctUsage].into_iter().find(|file| file.name() == name)
    }
}

/// A free-text field on one line: whitespace runs become single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::Start { env } => {
                f.write_str("start")?;
                for (name, value) in env {
                    write!(f, " {name}={value}")?;
                }
                Ok(())
            }
            Request::End => f.write_str("end"),
            Request::Pause => f.write_str("pause"),
            Request::Resume => f.write_str("resume"),
            Request::Connect { port } => write!(f, "connect {port}"),
            Request::Listen { port } => write!(f, "listen {port}"),
        }
    }
}

impl Request {
    /// Reads a request line (without its newline).
    pub fn parse(line: &str) -> Result<Self, ProtocolError> {
        let bad = || ProtocolError(line.to_owned());
        let mut words = line.split_whitespace();
        match words.next() {
            Some("start") => {
                let env = words
                    .map(|pair| pair.split_once('=').map(|(name, value)| (name.to_owned(), value.to_owned())))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(bad)?;
                Ok(Request::Start { env })
            }
            Some("end") if words.next().is_none() => Ok(Request::End),
            Some("pause") if words.next().is_none() => Ok(Request::Pause),
            Some("resume") if words.next().is_none() => Ok(Request::Resume),
            Some(verb @ ("connect" | "listen")) => {
                match (words.next().and_then(|port| port.parse().ok()), words.next()) {
                    (Some(port), None) if verb == "connect" => Ok(Request::Connect { port }),
                    (Some(port), None) => Ok(Request::Listen { port }),
                    _ => Err(bad()),
                }
            }
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let number = |value: Option<i32>| value.map_or("-".to_owned(), |value| value.to_string());
        match self {
            Reply::Started { pid, cpu } => write!(f, "started {pid} {}", cpu.map_or("-", CpuUsageFile::name)),
            Reply::Failed { reason } => write!(f, "failed {}", one_line(reason)),
            Reply::Exited(exit) => write!(
                f,
                "exited {} {} {} {}",
                number(exit.code),
                number(exit.signal),
                if exit.early { "early" } else { "ended" },
                if exit.oom_killed { "oom" } else { "-" },
            ),
            Reply::Ready => f.write_str("ready"),
            Reply::Dirty { reason } => write!(f, "dirty {}", one_line(reason)),
            Reply::Connected => f.write_str("connected"),
            Reply::Listening => f.write_str("listening"),
            Reply::Refused { reason } => write!(f, "refused {}", one_line(reason)),
        }
    }
}

impl Reply {
    /// Reads a reply line (without its newline).
    pub fn parse(line: &str) -> Result<Self, ProtocolError> {
        let bad = || ProtocolError(line.to_owned());
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let number = |text: &str| match text {
            "-" => Ok(None),
            text => text.parse().map(Some).map_err(|_| bad()),
        };
        match word {
            "started" => match rest.split(' ').collect::<Vec<_>>()[..] {
                [pid, cpu] => Ok(Reply::Started {
                    pid: pid.parse().map_err(|_| bad())?,
                    cpu: match cpu {
                        "-" => None,
                        name => Some(CpuUsageFile::from_name(name).ok_or_else(bad)?),
                    },
                }),
                _ => Err(bad()),
            },
            "failed" => Ok(Reply::Failed { reason: rest.to_owned() }),
            "exited" => match rest.split(' ').collect::<Vec<_>>()[..] {
                [code, signal, early @ ("early" | "ended"), oom @ ("oom" | "-")] => Ok(Reply::Exited(Exit {
                    code: number(code)?,
                    signal: number(signal)?,
                    early: early == "early",
                    oom_killed: oom == "oom",
                })),
                _ => Err(bad()),
            },
            "ready" if rest.is_empty() => Ok(Reply::Ready),
            "dirty" => Ok(Reply::Dirty { reason: rest.to_owned() }),
            "connected" if rest.is_empty() => Ok(Reply::Connected),
            "listening" if rest.is_empty() => Ok(Reply::Listening),
            "refused" => Ok(Reply::Refused { reason: rest.to_owned() }),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_and_reply_reads_back_as_written() {
        let requests = [
            Request::Start { env: vec![("FARM_SEED".into(), "42".into()), ("FARM_SEAT".into(), "1".into())] },
            Request::Start { env: vec![] },
            Request::End,
            Request::Pause,
            Request::Resume,
            Request::Connect { port: 8080 },
            Request::Listen { port: 9000 },
        ];
        for request in requests {
            assert_eq!(Request::parse(&request.to_string()), Ok(request));
        }
        let replies = [
            Reply::Started { pid: 7, cpu: None },
            Reply::Started { pid: 8, cpu: Some(CpuUsageFile::CpuStat) },
            Reply::Started { pid: 9, cpu: Some(CpuUsageFile::CpuacctUsage) },
            Reply::Failed { reason: "no such file".into() },
            Reply::Exited(Exit { code: Some(3), signal: None, early: true, oom_killed: false }),
            Reply::Exited(Exit { code: None, signal: Some(9), early: false, oom_killed: true }),
            Reply::Ready,
            Reply::Dirty { reason: "/tmp holds 2 entries".into() },
            Reply::Connected,
            Reply::Listening,
            Reply::Refused { reason: "connection refused".into() },
        ];
        for reply in replies {
            assert_eq!(Reply::parse(&reply.to_string()), Ok(reply));
        }
    }

    #[test]
    fn usage_files_give_microseconds_in_their_dialect() {
        let stat = "usage_usec 12345\nuser_usec 10000\nsystem_usec 2345\n";
        assert_eq!(CpuUsageFile::CpuStat.parse_micros(stat), Some(12345));
        assert_eq!(CpuUsageFile::CpuacctUsage.parse_micros("98765432\n"), Some(98765));
        assert_eq!(CpuUsageFile::CpuStat.parse_micros("nr_periods 0\n"), None);
        assert_eq!(CpuUsageFile::CpuacctUsage.parse_micros("x"), None);
    }

    #[test]
    fn free_text_stays_on_one_line_and_malformed_lines_are_refused() {
        let reply = Reply::Failed { reason: "cannot\nexec\t x".into() };
        assert_eq!(reply.to_string(), "failed cannot exec x");
        for line in [
            "",
            "start FARM_SEED",
            "end now",
            "pause 1",
            "connect",
            "connect 70000",
            "connect 1 2",
            "listen",
            "listen x",
        ] {
            assert!(Request::parse(line).is_err(), "{line:?}");
        }
        for line in [
            "",
            "started x",
            "started 7",
            "started 7 cpu.max",
            "exited 1 2",
            "exited 1 - maybe -",
            "ready now",
            "hello",
        ] {
            assert!(Reply::parse(line).is_err(), "{line:?}");
        }
    }
}
