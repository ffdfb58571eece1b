//! Bot sessions: a bot started for one match, asked for replies, then ended.

mod capped;
mod lines;
mod process;

use farm_engine::builtin::{self, BuiltinBot, UnknownBuiltin};
use farm_engine::{BotReply, GameKind, Seat};
use farm_proto::{BotLaunch, BotSpec};
use serde::Serialize;
use tokio::time::Instant;

pub use capped::CappedLog;
pub use process::ProcessBot;

/// A bot that could not be started. Distinct from a bot that starts and then fails,
/// which is an ordinary result of the match.
#[derive(Debug, thiserror::Error)]
pub enum BotLaunchError {
    /// The named built-in bot does not exist for this game.
    #[error(transparent)]
    UnknownBuiltin(#[from] UnknownBuiltin),
    /// The process could not be created at all (not: the command failed).
    #[error("cannot start {command:?}: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        source: std::io::Error,
    },
}

/// How a bot's process ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BotExit {
    /// The exit code, when it exited by itself.
    pub code: Option<i32>,
    /// The signal that ended it (9 when the farm killed it at the end).
    pub signal: Option<i32>,
    /// Whether it had exited before the match ended.
    pub exited_early: bool,
}

/// One bot taking part in one match.
///
/// Asking is split in two so that several bots think at once: [`BotSession::send`]
/// to each, then [`BotSession::receive`] from each against the same deadline.
pub enum BotSession {
    /// Built into the engine; answers at once.
    Builtin {
        /// The bot.
        bot: Box<dyn BuiltinBot>,
        /// Its answer to the last request, until received.
        answer: Option<String>,
    },
    /// A local process.
    Process(ProcessBot),
}

impl BotSession {
    /// Starts `spec` for `seat` of a match of `game` with `seed`.
    pub fn launch(
        spec: &BotSpec,
        game: GameKind,
        seed: u64,
        seat: Seat,
        stderr_cap: usize,
    ) -> Result<Self, BotLaunchError> {
        Ok(match &spec.launch {
            BotLaunch::Builtin(name) => {
                BotSession::Builtin { bot: builtin::create(game, name, seed, seat)?, answer: None }
            }
            BotLaunch::Command(command) => BotSession::Process(ProcessBot::spawn(command, seed, seat, stderr_cap)?),
        })
    }

    /// Sends one request. Returns `false` if the bot cannot take it (it is not reading
    /// its input); its reply then times out.
    pub fn send(&mut self, request: &str) -> bool {
        match self {
            BotSession::Builtin { bot, answer } => {
                *answer = Some(bot.reply(request));
                true
            }
            BotSession::Process(process) => process.send(request),
        }
    }

    /// The reply to the last request, waiting at most until `deadline`.
    pub async fn receive(&mut self, deadline: Instant) -> BotReply {
        match self {
            BotSession::Builtin { answer, .. } => answer.take().map_or(BotReply::Timeout, BotReply::Line),
            BotSession::Process(process) => process.receive(deadline).await,
        }
    }

    /// Ends the bot and returns its log and how it exited.
    pub async fn finish(self) -> (CappedLog, Option<BotExit>) {
        match self {
            BotSession::Builtin { .. } => (CappedLog::default(), None),
            BotSession::Process(process) => {
                let (log, exit) = process.finish().await;
                (log, Some(exit))
            }
        }
    }
}
