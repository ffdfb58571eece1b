//! Bots built from their authors' sources: the build jobs the coordinator puts on
//! [`BUILDS_QUEUE`] and the reports workers send back on [`BUILD_RESULTS_QUEUE`].

use serde::{Deserialize, Serialize};

/// Where build jobs wait for a worker that builds (one with Docker and a registry).
pub const BUILDS_QUEUE: &str = "farm.builds";
/// Where build reports go, through the `farm.results` exchange; a build job tried too
/// often is dead-lettered here too, and read as a build that never finished.
pub const BUILD_RESULTS_QUEUE: &str = "farm.build-results";

/// One version of a bot to build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildJob {
    /// The bot's name.
    pub bot: String,
    /// The version, counted from 1.
    pub version: u32,
    /// Where the uploaded source archive is in object storage.
    pub source_key: String,
    /// Where the worker stores the build's log.
    pub log_key: String,
    /// The coordinator's token for this build: its report carries it back with the job
    /// (see [`crate::JobEnvelope::token`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
}

/// What became of a [`BuildJob`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildReport {
    /// The job it answers.
    pub job: BuildJob,
    /// The worker that built it: its broker user, as for a match's result.
    pub worker_id: String,
    /// The image, or why there is none.
    pub outcome: BuildOutcome,
}

/// An image pushed, or a build that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum BuildOutcome {
    /// Built and pushed: workers pull it by this reference (`REGISTRY/REPO@sha256:...`).
    Built {
        /// The image, by digest.
        image: String,
        /// Its size in bytes.
        size: u64,
    },
    /// No image: the source, the build or the push failed; the log says more.
    Failed {
        /// Why, in one line.
        reason: String,
    },
}

/// What arrives on [`BUILD_RESULTS_QUEUE`]: a worker's report, or a build job
/// dead-lettered after its tries (each worker that took it was lost mid-build).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BuildAnswer {
    /// A worker's report.
    Report(BuildReport),
    /// A job nobody finished.
    Abandoned(BuildJob),
}

/// The repository under which every submitted bot's image is tagged
/// (`matchfarm-bots/NAME`, pushed as `REGISTRY/matchfarm-bots/NAME`).
pub const SUBMITTED_REPOSITORY: &str = "matchfarm-bots";

/// Whether `image` names a submitted bot's image: a worker's build tag, or one in a
/// registry.
pub fn is_submitted_image(image: &str) -> bool {
    let repository = format!("{SUBMITTED_REPOSITORY}/");
    image.starts_with(&repository) || image.contains(&format!("/{repository}"))
}

/// The longest bot name a submission may have: it becomes part of image names.
pub const MAX_BOT_NAME: usize = 40;

/// Whether `name` may name a submitted bot: 1 to [`MAX_BOT_NAME`] of `a-z`, `0-9`, `-`
/// and `_`, starting with a letter or digit (it becomes a Docker repository name).
pub fn is_bot_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && characters.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && name.len() <= MAX_BOT_NAME
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_and_a_dead_lettered_job_are_told_apart() {
        let job =
            BuildJob { bot: "ada".into(), version: 2, source_key: "s".into(), log_key: "l".into(), token: "t".into() };
        let report = BuildReport {
            job: job.clone(),
            worker_id: "w".into(),
            outcome: BuildOutcome::Failed { reason: "no".into() },
        };
        let read = |bytes: Vec<u8>| serde_json::from_slice::<BuildAnswer>(&bytes).expect("an answer");
        assert_eq!(read(serde_json::to_vec(&report).expect("JSON")), BuildAnswer::Report(report.clone()));
        assert_eq!(read(serde_json::to_vec(&job).expect("JSON")), BuildAnswer::Abandoned(job));
    }

    #[test]
    fn submitted_images_are_told_by_their_repository() {
        for submitted in ["matchfarm-bots/ada:0f", "127.0.0.1:5055/matchfarm-bots/ada@sha256:00"] {
            assert!(is_submitted_image(submitted), "{submitted}");
        }
        for other in ["matchfarm/bot-botwars-random-py", "evil/matchfarm-bots-x", "matchfarm-botsy/x"] {
            assert!(!is_submitted_image(other), "{other}");
        }
    }

    #[test]
    fn bot_names_are_docker_repository_names() {
        for good in ["a", "ada-2", "x_y", "0"] {
            assert!(is_bot_name(good), "{good}");
        }
        for bad in ["", "Ada", "-a", "a/b", "a.b", "é", &"a".repeat(41)] {
            assert!(!is_bot_name(bad), "{bad}");
        }
    }
}
