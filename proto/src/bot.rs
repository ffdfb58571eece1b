use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How a bot's messages travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// One request per line on stdin, one reply per line on stdout; stderr is the log.
    #[default]
    Stdio,
    /// The bot serves `POST /`; the request is the body, the reply is the response body.
    Http,
}

/// Where a bot comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BotLaunch {
    /// A bot compiled into the engine, by name (`random`, `greedy`, ...).
    Builtin(String),
    /// A local command line, run through `sh -c` in its own process group.
    Command(String),
}

/// A bot taking part in a match: a display name and how to run it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BotSpec {
    /// Shown in results and given to games that name players.
    pub name: String,
    /// How the bot is started.
    pub launch: BotLaunch,
    /// How requests and replies travel.
    #[serde(default)]
    pub transport: Transport,
}

/// A bot given on the command line in a form [`BotSpec::from_str`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad bot {given:?}: {problem} (expected builtin:NAME or cmd:COMMAND)")]
pub struct BotSpecError {
    /// The text that was given.
    pub given: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl FromStr for BotSpec {
    type Err = BotSpecError;

    /// Parses `builtin:NAME` or `cmd:COMMAND`. The name is the builtin's name, or the
    /// command's first word without its directory (`cmd:python3 bots/x/random.py` is
    /// named `random.py`, the last word that looks like a file).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let error = |problem| BotSpecError { given: s.to_owned(), problem };
        let (scheme, rest) = s.split_once(':').ok_or_else(|| error("no scheme"))?;
        let rest = rest.trim();
        if rest.is_empty() {
            return Err(error("nothing after the scheme"));
        }
        let launch = match scheme {
            "builtin" => BotLaunch::Builtin(rest.to_owned()),
            "cmd" => BotLaunch::Command(rest.to_owned()),
            _ => return Err(error("unknown scheme")),
        };
        Ok(BotSpec { name: default_name(&launch), launch, transport: Transport::Stdio })
    }
}

fn default_name(launch: &BotLaunch) -> String {
    match launch {
        BotLaunch::Builtin(name) => name.clone(),
        BotLaunch::Command(command) => {
            let words: Vec<&str> = command.split_whitespace().collect();
            let file_word = words.iter().rev().find(|word| word.contains('/') || word.contains('.'));
            let word = file_word.or(words.first()).copied().unwrap_or(command);
            word.rsplit('/').next().unwrap_or(word).to_owned()
        }
    }
}

impl fmt::Display for BotLaunch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BotLaunch::Builtin(name) => write!(f, "builtin:{name}"),
            BotLaunch::Command(command) => write!(f, "cmd:{command}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_builtin_and_command_bots() {
        let greedy: BotSpec = "builtin:greedy".parse().expect("builtin parses");
        assert_eq!(greedy.launch, BotLaunch::Builtin("greedy".into()));
        assert_eq!(greedy.name, "greedy");

        let python: BotSpec = "cmd:python3 bots/vindinium/random.py".parse().expect("cmd parses");
        assert_eq!(python.launch, BotLaunch::Command("python3 bots/vindinium/random.py".into()));
        assert_eq!(python.name, "random.py");
        assert_eq!(python.launch.to_string(), "cmd:python3 bots/vindinium/random.py");

        let rust: BotSpec = "cmd:target/debug/botwars-random-bot".parse().expect("cmd parses");
        assert_eq!(rust.name, "botwars-random-bot");
    }

    #[test]
    fn rejects_specs_without_a_known_scheme() {
        for bad in ["greedy", "docker:x", "cmd:", "builtin:  "] {
            let err = bad.parse::<BotSpec>().expect_err(bad);
            assert!(err.to_string().contains(bad), "{err}");
        }
    }
}
