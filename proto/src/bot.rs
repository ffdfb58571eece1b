use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::limits;

/// How a bot's messages travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// One request per line on stdin, one reply per line on stdout; stderr is the log.
    #[default]
    Stdio,
    /// The bot serves `POST /`; the request is the body, the reply is the response body.
    Http,
    /// As `Http`, with the request form-encoded as `data=<request>`: what the original
    /// Skookum Botwars servers read.
    #[serde(rename = "http-form")]
    HttpForm,
    /// The bot is a client of the original Vindinium server's HTTP API, as the game's
    /// starter kits are: the farm serves that API to it alone (`POST /api/arena` or
    /// `/api/training` with its key, then `dir` to its `playUrl`), at the address and
    /// with the key it finds in `FARM_VINDINIUM_SERVER` and `FARM_VINDINIUM_KEY`.
    /// Vindinium only.
    #[serde(rename = "vindinium-server")]
    VindiniumServer,
}

impl Transport {
    /// Every transport, in the order `--help` texts list them.
    pub const ALL: [Transport; 4] =
        [Transport::Stdio, Transport::Http, Transport::HttpForm, Transport::VindiniumServer];

    /// Whether the bot speaks HTTP, as a server or as a client (and so needs a network
    /// to be reached on, or to reach the farm).
    pub fn is_http(self) -> bool {
        !matches!(self, Transport::Stdio)
    }

    /// The one game a transport is for, if it is a game's own API.
    pub fn only_for(self) -> Option<crate::GameKind> {
        match self {
            Transport::VindiniumServer => Some(crate::GameKind::Vindinium),
            Transport::Stdio | Transport::Http | Transport::HttpForm => None,
        }
    }

    /// What follows `+` in a bot spec's scheme (`image+http-form:`), as the
    /// tournament file names it too; empty for stdio, which has none.
    pub fn scheme_suffix(self) -> &'static str {
        match self {
            Transport::Stdio => "",
            Transport::Http => "http",
            Transport::HttpForm => "http-form",
            Transport::VindiniumServer => "vindinium-server",
        }
    }
}

/// Checks that a bot of a `game` match may speak `transport`: a game's own API serves
/// that game only.
pub fn check_transport(game: crate::GameKind, transport: Transport) -> Result<(), String> {
    match transport.only_for() {
        Some(only) if only != game => {
            Err(format!("{} is {only}'s own API, and this is {game}", transport.scheme_suffix()))
        }
        _ => Ok(()),
    }
}

/// Where a bot comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BotLaunch {
    /// A bot compiled into the engine, by name (`random`, `greedy`, ...).
    Builtin(String),
    /// A local command line, run through `sh -c` in its own process group.
    Command(String),
    /// A Docker image, run as one locked-down container per match.
    Image(String),
}

/// What one bot's sandbox may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BotLimits {
    /// Memory, in MiB; swap is limited to the same amount, so there is none.
    pub memory_mib: u64,
    /// CPU time, in thousandths of a core (1000 is one core).
    pub cpu_millis: u64,
    /// Processes and threads.
    pub pids: i64,
    /// Size of the writable `/tmp`, in MiB.
    pub tmp_mib: u64,
    /// Bytes of stderr kept.
    pub stderr_bytes: usize,
}

impl BotLimits {
    /// Checks every limit is within bounds. A zero would mean "unlimited" to Docker,
    /// so each has a floor as well as a ceiling.
    pub fn check(&self) -> Result<(), String> {
        limits::BOT_MEMORY_MIB.check(self.memory_mib)?;
        limits::BOT_CPU_MILLIS.check(self.cpu_millis)?;
        limits::BOT_PIDS.check(self.pids)?;
        limits::BOT_TMP_MIB.check(self.tmp_mib)?;
        limits::BOT_STDERR_BYTES.check(self.stderr_bytes)?;
        Ok(())
    }
}

impl Default for BotLimits {
    fn default() -> Self {
        BotLimits {
            memory_mib: limits::BOT_MEMORY_MIB.default,
            cpu_millis: limits::BOT_CPU_MILLIS.default,
            pids: limits::BOT_PIDS.default,
            tmp_mib: limits::BOT_TMP_MIB.default,
            stderr_bytes: limits::BOT_STDERR_BYTES.default,
        }
    }
}

impl BotLimits {
    /// A worker's default ceiling on what a tournament may give one bot: four times
    /// the default memory, processes, `/tmp` and stderr, two cores.
    pub fn default_ceiling() -> Self {
        let ceiling = limits::BOT_CEILING;
        BotLimits {
            memory_mib: ceiling.memory_mib,
            cpu_millis: ceiling.cpu_millis,
            pids: ceiling.pids,
            tmp_mib: ceiling.tmp_mib,
            stderr_bytes: ceiling.stderr_bytes,
        }
    }

    /// These limits, each lowered to `ceiling` where above it, and the names of the
    /// ones that were.
    pub fn clamped_to(&self, ceiling: &BotLimits) -> (BotLimits, Vec<&'static str>) {
        let mut clamped = Vec::new();
        let mut low = |name: &'static str, value: u64, most: u64| {
            if value > most {
                clamped.push(name);
            }
            value.min(most)
        };
        let limits = BotLimits {
            memory_mib: low("memory_mib", self.memory_mib, ceiling.memory_mib),
            cpu_millis: low("cpu_millis", self.cpu_millis, ceiling.cpu_millis),
            pids: self.pids.min(ceiling.pids),
            tmp_mib: low("tmp_mib", self.tmp_mib, ceiling.tmp_mib),
            stderr_bytes: low("stderr_bytes", self.stderr_bytes as u64, ceiling.stderr_bytes as u64) as usize,
        };
        if self.pids > ceiling.pids {
            clamped.push("pids");
        }
        (limits, clamped)
    }
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
    /// What its sandbox may use.
    #[serde(default)]
    pub limits: BotLimits,
    /// For an `image` bot, the arguments that replace its image's `CMD`, as after
    /// `docker run IMAGE`: one image may hold several bots, or one bot with options.
    /// Empty: the image's own `CMD`. Other bots take none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

pub use crate::limits::{MAX_IMAGE_ARG_BYTES, MAX_IMAGE_ARGS};

/// Checks the arguments given to an image bot: at most [`MAX_IMAGE_ARGS`] of at most
/// [`MAX_IMAGE_ARG_BYTES`] each, none holding a NUL (no program could receive it).
pub fn check_image_args(args: &[String]) -> Result<(), String> {
    if args.len() > MAX_IMAGE_ARGS {
        return Err(format!("at most {MAX_IMAGE_ARGS} arguments, not {}", args.len()));
    }
    for (index, arg) in args.iter().enumerate() {
        if arg.len() > MAX_IMAGE_ARG_BYTES {
            return Err(format!("argument {index} has {} bytes (at most {MAX_IMAGE_ARG_BYTES})", arg.len()));
        }
        if arg.contains('\0') {
            return Err(format!("argument {index} holds a NUL byte"));
        }
    }
    Ok(())
}

impl BotSpec {
    /// A bot of `launch` over `transport` with the default limits and no arguments.
    pub fn new(name: impl Into<String>, launch: BotLaunch, transport: Transport) -> Self {
        BotSpec { name: name.into(), launch, transport, limits: BotLimits::default(), args: Vec::new() }
    }

    /// Checks what a worker is asked to run: its limits within their bounds, and
    /// arguments only for an image bot and within theirs.
    pub fn check(&self) -> Result<(), String> {
        self.limits.check()?;
        if !self.args.is_empty() && !matches!(self.launch, BotLaunch::Image(_)) {
            return Err("only an image bot takes args".to_owned());
        }
        check_image_args(&self.args).map_err(|problem| format!("args: {problem}"))
    }
}

/// A bot given on the command line in a form [`BotSpec::from_str`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad bot {given:?}: {problem} (expected builtin:NAME, cmd:COMMAND, image:NAME [ARG...], or cmd+http:, \
     cmd+http-form:, image+http:, image+http-form: for bots serving HTTP, cmd+vindinium-server:, \
     image+vindinium-server: for clients of the original Vindinium server)"
)]
pub struct BotSpecError {
    /// The text that was given.
    pub given: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl FromStr for BotSpec {
    type Err = BotSpecError;

    /// Parses `builtin:NAME`, `cmd:COMMAND` or `image:NAME [ARG...]` (the words after
    /// an image's name replace its `CMD`); `+http` or `+http-form` after `cmd` or `image`
    /// is a bot serving HTTP rather than stdio, `+vindinium-server` a client of the
    /// original Vindinium server's API. The name is the builtin's, or the
    /// image's name (without registry path or tag) joined by `-` to its arguments, or
    /// the command's first word without its directory (`cmd:python3 bots/x/random_bot.py`
    /// is named `random_bot.py`, the last word that looks like a file).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let error = |problem| BotSpecError { given: s.to_owned(), problem };
        let (scheme, rest) = s.split_once(':').ok_or_else(|| error("no scheme"))?;
        let rest = rest.trim();
        if rest.is_empty() {
            return Err(error("nothing after the scheme"));
        }
        let (kind, transport) = match scheme.split_once('+') {
            None => (scheme, Transport::Stdio),
            Some((kind, suffix)) => {
                match Transport::ALL[1..].iter().find(|transport| transport.scheme_suffix() == suffix) {
                    Some(&transport) => (kind, transport),
                    None => return Err(error("unknown transport (+http, +http-form or +vindinium-server)")),
                }
            }
        };
        let mut args = Vec::new();
        let launch = match kind {
            "builtin" if transport == Transport::Stdio => BotLaunch::Builtin(rest.to_owned()),
            "builtin" => return Err(error("a built-in bot has no transport")),
            "cmd" => BotLaunch::Command(rest.to_owned()),
            "image" => {
                let mut words = rest.split_whitespace().map(str::to_owned);
                let image = words.next().unwrap_or_default();
                args = words.collect();
                check_image_args(&args).map_err(|_| error("too many or too long arguments"))?;
                BotLaunch::Image(image)
            }
            _ => return Err(error("unknown scheme")),
        };
        let name = std::iter::once(default_name(&launch)).chain(args.iter().cloned()).collect::<Vec<_>>().join("-");
        Ok(BotSpec { args, ..BotSpec::new(name, launch, transport) })
    }
}

fn default_name(launch: &BotLaunch) -> String {
    match launch {
        BotLaunch::Builtin(name) => name.clone(),
        BotLaunch::Image(image) => {
            let without_tag =
                image.rsplit_once(':').filter(|(_, tag)| !tag.contains('/')).map_or(image.as_str(), |(name, _)| name);
            without_tag.rsplit('/').next().unwrap_or(without_tag).to_owned()
        }
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
            BotLaunch::Image(image) => write!(f, "image:{image}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_above_a_ceiling_are_lowered_to_it_and_named() {
        let asked = BotLimits { memory_mib: 64 * 1024, cpu_millis: 500, pids: 32_768, tmp_mib: 64, stderr_bytes: 1 };
        let (limits, clamped) = asked.clamped_to(&BotLimits::default_ceiling());
        assert_eq!(limits, BotLimits { memory_mib: 2048, cpu_millis: 500, pids: 512, tmp_mib: 64, stderr_bytes: 1 });
        assert_eq!(clamped, ["memory_mib", "pids"]);
        let (same, none) = BotLimits::default().clamped_to(&BotLimits::default_ceiling());
        assert_eq!((same, none.len()), (BotLimits::default(), 0));
        assert!(BotLimits::default_ceiling().check().is_ok());
    }

    #[test]
    fn parses_builtin_and_command_bots() {
        let greedy: BotSpec = "builtin:greedy".parse().expect("builtin parses");
        assert_eq!(greedy.launch, BotLaunch::Builtin("greedy".into()));
        assert_eq!(greedy.name, "greedy");

        let python: BotSpec = "cmd:python3 bots/vindinium/random_bot.py".parse().expect("cmd parses");
        assert_eq!(python.launch, BotLaunch::Command("python3 bots/vindinium/random_bot.py".into()));
        assert_eq!(python.name, "random_bot.py");
        assert_eq!(python.launch.to_string(), "cmd:python3 bots/vindinium/random_bot.py");

        let client: BotSpec = "cmd+vindinium-server:python3 kit/client.py".parse().expect("a client parses");
        assert_eq!(client.transport, Transport::VindiniumServer);
        assert_eq!(serde_json::to_string(&client.transport).expect("serializes"), "\"vindinium-server\"");
        assert_eq!(check_transport(crate::GameKind::Vindinium, client.transport), Ok(()));
        assert!(check_transport(crate::GameKind::Botwars, client.transport).is_err());
        let form: BotSpec = "image+http-form:matchfarm/x".parse().expect("form parses");
        assert_eq!(form.transport, Transport::HttpForm);
        assert!(form.transport.is_http() && !Transport::Stdio.is_http());
        assert_eq!(serde_json::to_string(&Transport::HttpForm).expect("serializes"), "\"http-form\"");

        let rust: BotSpec = "cmd:target/debug/botwars-random-bot".parse().expect("cmd parses");
        assert_eq!(rust.name, "botwars-random-bot");

        let image: BotSpec = "image:matchfarm/bot-botwars-random-py:latest".parse().expect("image parses");
        assert_eq!(image.launch, BotLaunch::Image("matchfarm/bot-botwars-random-py:latest".into()));
        assert_eq!(image.name, "bot-botwars-random-py");
        assert_eq!(image.transport, Transport::Stdio);
        let http: BotSpec = "image+http:matchfarm/bot-botwars-random-http-py".parse().expect("http image parses");
        assert_eq!(http.transport, Transport::Http);
        assert_eq!(http.launch, BotLaunch::Image("matchfarm/bot-botwars-random-http-py".into()));
        let server: BotSpec = "cmd+http:python3 bots/botwars/random_http_bot.py".parse().expect("cmd+http parses");
        assert_eq!(server.transport, Transport::Http);
        assert_eq!(server.launch, BotLaunch::Command("python3 bots/botwars/random_http_bot.py".into()));
    }

    #[test]
    fn an_image_bot_takes_arguments_that_replace_its_cmd() {
        let spin: BotSpec = "image:matchfarm/hostile:latest  spin fast".parse().expect("image with args parses");
        assert_eq!(spin.launch, BotLaunch::Image("matchfarm/hostile:latest".into()));
        assert_eq!(spin.args, ["spin", "fast"]);
        assert_eq!(spin.name, "hostile-spin-fast");
        assert_eq!(spin.check(), Ok(()));
        let json = serde_json::to_value(&spin).expect("serializes");
        assert_eq!(json["args"], serde_json::json!(["spin", "fast"]));
        // Without arguments the wire form is what it was: no `args` key.
        let plain: BotSpec = "image:matchfarm/x".parse().expect("image parses");
        assert!(serde_json::to_value(&plain).expect("serializes").get("args").is_none());

        let command = BotSpec {
            args: vec!["x".into()],
            ..BotSpec::new("c", BotLaunch::Command("true".into()), Transport::Stdio)
        };
        assert_eq!(command.check(), Err("only an image bot takes args".into()));
        let many = BotSpec { args: vec!["x".into(); MAX_IMAGE_ARGS + 1], ..spin.clone() };
        assert_eq!(many.check(), Err(format!("args: at most 64 arguments, not {}", MAX_IMAGE_ARGS + 1)));
        let long = BotSpec { args: vec!["x".repeat(MAX_IMAGE_ARG_BYTES + 1)], ..spin.clone() };
        assert!(long.check().expect_err("too long").contains("1025 bytes"));
        let nul = BotSpec { args: vec!["a\0b".into()], ..spin };
        assert_eq!(nul.check(), Err("args: argument 0 holds a NUL byte".into()));
        let words = std::iter::repeat_n("x", MAX_IMAGE_ARGS + 1).collect::<Vec<_>>().join(" ");
        assert!(format!("image:i {words}").parse::<BotSpec>().is_err());
    }

    #[test]
    fn limits_have_floors_and_ceilings() {
        assert_eq!(BotLimits::default().check(), Ok(()));
        let unlimited = BotLimits { memory_mib: 0, ..BotLimits::default() };
        assert_eq!(unlimited.check(), Err("memory_mib must be 16 to 65536, not 0".into()));
        assert!(BotLimits { pids: -1, ..BotLimits::default() }.check().is_err());
        assert!(BotLimits { cpu_millis: u64::MAX, ..BotLimits::default() }.check().is_err());
    }

    #[test]
    fn rejects_specs_without_a_known_scheme() {
        for bad in ["greedy", "docker:x", "cmd:", "builtin:  ", "cmd+grpc:x", "builtin+http:random"] {
            let err = bad.parse::<BotSpec>().expect_err(bad);
            assert!(err.to_string().contains(bad), "{err}");
        }
    }
}
