//! Why a job did not produce a result, and the one place that decides whether trying
//! again could help.

use crate::bots::BotLaunchError;
use crate::queue::BrokerError;
use crate::runner::RunError;
use crate::storage::StorageError;

/// A job that did not end in a published result.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Playing the match failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// Storing the replay, a log or the result failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Publishing the result failed.
    #[error(transparent)]
    Broker(#[from] BrokerError),
    /// The result could not be encoded (a bug; the job is retried elsewhere).
    #[error("encoding the result: {0}")]
    Encode(serde_json::Error),
}

impl JobError {
    /// Whether the job should go back to the queue for another try (here or on
    /// another worker): infrastructure failures. The others are answered with a
    /// failed result, because the job itself is at fault.
    pub fn is_retryable(&self) -> bool {
        match self {
            JobError::Run(RunError::Launch { source, .. }) => match source {
                BotLaunchError::Docker(_) | BotLaunchError::Spawn { .. } | BotLaunchError::Contain { .. } => true,
                BotLaunchError::UnknownBuiltin(_)
                | BotLaunchError::NotACommand { .. }
                | BotLaunchError::ImageMissing { .. }
                | BotLaunchError::WrongSandbox { .. } => false,
            },
            // Stopped by a shutdown: another worker plays it.
            JobError::Run(RunError::Replay(_) | RunError::Stopped) => true,
            // A match that overran its limit would overrun it again.
            JobError::Run(
                RunError::Setup(_)
                | RunError::Engine(_)
                | RunError::InvalidBot { .. }
                | RunError::TooLong(_)
                | RunError::ReplayTooLarge(_),
            ) => false,
            // Keys are unique per run, so even an object that already exists is a
            // storage fault, not the job's: another run writes elsewhere.
            JobError::Storage(_) | JobError::Broker(_) | JobError::Encode(_) => true,
        }
    }
}

/// `error` and its causes, as `error: cause: cause`, each cause left out when the
/// message before it says it already (most messages here end with their cause's): what
/// the binaries print, so that a reason is never shown twice.
pub fn chain_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        let said = next.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = next.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_the_message_already_gives_is_not_repeated() {
        let source = std::io::Error::other("broken pipe");
        let launch = BotLaunchError::Spawn { command: "bot".to_owned(), source };
        let run = RunError::Launch { seat: 1, source: launch };
        assert_eq!(chain_text(&run), "seat 1: cannot start \"bot\": broken pipe");
        let wrapped = std::io::Error::new(std::io::ErrorKind::NotFound, run);
        assert_eq!(chain_text(&wrapped), "seat 1: cannot start \"bot\": broken pipe");
    }
}
