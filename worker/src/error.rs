//! Why a job did not produce a result, and the one place that decides whether trying
//! it again could help. Storage and broker errors say so themselves
//! ([`StorageError::is_retryable`], [`BrokerError::is_retryable`]): the coordinator asks
//! them too.

use farm_runtime::queue::BrokerError;
use farm_runtime::storage::StorageError;

use crate::bots::BotLaunchError;
use crate::runner::RunError;

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
                | RunError::InvalidClock(_)
                | RunError::TooLong(_)
                | RunError::ReplayTooLarge(_),
            ) => false,
            // The infrastructure's errors are classified where they are defined.
            JobError::Storage(error) => error.is_retryable(),
            JobError::Broker(error) => error.is_retryable(),
            JobError::Encode(_) => true,
        }
    }

    /// Whether the failure is the worker's own: its sandbox failing (the Docker
    /// engine, starting a bot, containing it), which counts against the worker. Object
    /// storage and the broker are shared by every worker: their outages are not one
    /// worker's fault, and must not quarantine the whole farm.
    pub fn is_the_workers_fault(&self) -> bool {
        matches!(
            self,
            JobError::Run(RunError::Launch {
                source: BotLaunchError::Docker(_) | BotLaunchError::Spawn { .. } | BotLaunchError::Contain { .. },
                ..
            })
        )
    }
}

#[cfg(test)]
mod tests {
    use farm_runtime::error::chain_text;

    use super::*;

    #[test]
    fn a_launch_failure_prints_its_cause_once() {
        let source = std::io::Error::other("broken pipe");
        let launch = BotLaunchError::Spawn { command: "bot".to_owned(), source };
        let run = RunError::Launch { seat: 1, source: launch };
        assert_eq!(chain_text(&run), "seat 1: cannot start \"bot\": broken pipe");
        let wrapped = std::io::Error::new(std::io::ErrorKind::NotFound, run);
        assert_eq!(chain_text(&wrapped), "seat 1: cannot start \"bot\": broken pipe");
    }
}
