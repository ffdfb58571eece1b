//! Bots submitted by their authors, from upload to ladder. The API stores an upload's
//! archive and records it as the bot's next version ([`crate::ledger::NewVersion`]);
//! here:
//! - [`publish_builds`] puts each new version's build job on `farm.builds` (an outbox:
//!   the ledger says which are not yet confirmed there);
//! - [`ingest_builds`] takes the workers' reports from `farm.build-results`: a built
//!   version gets its validation tournament ([`validation_tournament`]); a failed one is
//!   `build_failed`;
//! - the director's loop judges each validation tournament once it has finished
//!   ([`crate::director::validations`]): a version whose bot crashed, timed out or broke
//!   the protocol in any match is rejected, naming the match and where its log is; one
//!   that played every seat cleanly is validated and entered in the ladder it named,
//!   replacing its previous version there.

use std::time::Duration;

use farm_proto::{BUILD_RESULTS_QUEUE, BUILDS_QUEUE, BuildAnswer, BuildOutcome, GameKind};
use farm_runtime::queue::{self, BrokerError, ConfirmedPublisher};
use futures_util::StreamExt;
use lapin::options::{BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection};
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, watch};

use crate::director::Director;
use crate::farm::{FarmError, QueueError};
use crate::ledger::{Ledger, LedgerError, VersionState, entry_name};
use crate::metrics;
use crate::tournament::{FormatKind, Tournament, TournamentError, TournamentFile, TournamentLimits};
use crate::vouch::{AnswerKey, Answerable, Forgery, vouched_for};
use farm_proto::limits;

const BUILD_RESULTS_TAG: &str = "coordinator-build-results";
/// Build reports held unacked at once.
const BUILD_RESULTS_PREFETCH: u16 = 16;
/// How often unpublished build jobs are looked for without being woken: a wake lost to
/// a broker outage is made up for.
const BUILD_SWEEP: Duration = Duration::from_secs(5);

/// How a new version is validated (`[validation]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ValidationSettings {
    /// Matches against each of the game's built-in bots. For two seats, an even number
    /// plays every seat equally often.
    pub games_per_opponent: u32,
}

impl Default for ValidationSettings {
    fn default() -> Self {
        ValidationSettings { games_per_opponent: limits::VALIDATION_GAMES_PER_OPPONENT.default }
    }
}

impl ValidationSettings {
    /// Why these settings cannot be used, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        limits::VALIDATION_GAMES_PER_OPPONENT.check(self.games_per_opponent)?;
        Ok(())
    }
}

/// The validation of `bot` version `version`, its image `image`: a gauntlet of it
/// against every built-in bot of `game`, `games_per_opponent` matches each, at tables
/// of [`table_seats`].
pub fn validation_tournament(
    game: GameKind,
    bot: &str,
    version: u32,
    image: &str,
    settings: ValidationSettings,
) -> Result<Tournament, TournamentError> {
    let candidate = entry_name(bot, version);
    let mut bots = vec![serde_json::json!({ "name": candidate, "image": image })];
    for builtin in farm_engine::builtin::names(game) {
        bots.push(serde_json::json!({ "name": format!("builtin-{builtin}"), "builtin": builtin }));
    }
    resolve(serde_json::json!({
        "name": format!("validation of {bot} v{version}"),
        "game": game,
        "format": FormatKind::Gauntlet,
        "candidates": [candidate],
        "seats": table_seats(game),
        "games_per_pairing": settings.games_per_opponent,
        "seed": version,
        "bots": bots,
    }))
}

/// A challenge: `games` matches between two versions (entry name and image each), in
/// both seats, at tables of [`table_seats`], from `seed`.
pub fn challenge_tournament(
    game: GameKind,
    challenger: (&str, &str),
    opponent: (&str, &str),
    games: u32,
    seed: u64,
) -> Result<Tournament, TournamentError> {
    let bot = |(name, image): (&str, &str)| serde_json::json!({ "name": name, "image": image });
    resolve(serde_json::json!({
        "name": format!("challenge: {} vs {}", challenger.0, opponent.0),
        "game": game,
        "format": FormatKind::RoundRobin,
        "seats": table_seats(game),
        // A round robin of two plays each order once per pairing game.
        "games_per_pairing": games.div_ceil(2),
        "seed": seed,
        "bots": [bot(challenger), bot(opponent)],
    }))
}

/// The seats of a validation's or a challenge's tables: the fewest `game` plays, two
/// at least, and two in a game that fills empty seats itself (Vindinium's random
/// heroes). Every seat of such a table is played, on maps made for that many.
fn table_seats(game: GameKind) -> usize {
    if farm_engine::builtin::seat_filler(game).is_some() {
        2
    } else {
        (*farm_engine::AnyGame::seats(game).start()).max(2)
    }
}

/// A tournament file the farm wrote, resolved.
fn resolve(file: serde_json::Value) -> Result<Tournament, TournamentError> {
    let file: TournamentFile =
        serde_json::from_value(file).map_err(|error| TournamentError::Syntax(error.to_string()))?;
    file.resolve(None, TournamentLimits::default())
}

/// Publishes the build jobs the ledger holds unpublished, as they come (`wake`), until
/// `stop`, each with its token, signed as the coordinator's broker user `coordinator`
/// (so that one dead-lettered back is known for the coordinator's own).
pub async fn publish_builds(
    connection: &Connection,
    ledger: &Ledger,
    coordinator: &str,
    wake: &Notify,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), FarmError> {
    let publisher = ConfirmedPublisher::open_as(connection, coordinator).await.map_err(QueueError::from)?;
    loop {
        let jobs = ledger.unpublished_builds().await?;
        if !jobs.is_empty() {
            let bodies =
                jobs.iter().map(serde_json::to_vec).collect::<Result<Vec<_>, _>>().map_err(QueueError::from)?;
            publisher.publish_batch(BUILDS_QUEUE, bodies.iter().map(Vec::as_slice)).await.map_err(QueueError::from)?;
            tracing::info!(builds = jobs.len(), "build jobs published");
            ledger.builds_published(jobs).await?;
        }
        tokio::select! {
            _ = stop.wait_for(|stop| *stop) => return Ok(()),
            () = wake.notified() => {}
            () = tokio::time::sleep(BUILD_SWEEP) => {}
        }
    }
}

/// Takes build reports from `farm.build-results` on `channel` until `stop`: each is
/// recorded, then acked. A report is believed only from the worker the broker vouches
/// for, with the build's token; a dead-lettered build job only as the coordinator's
/// (broker user `coordinator`) own.
pub async fn ingest_builds(
    channel: &Channel,
    ledger: &Ledger,
    coordinator: &str,
    director: &Director,
    settings: ValidationSettings,
    wake_publisher: &Notify,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), FarmError> {
    channel
        .basic_qos(BUILD_RESULTS_PREFETCH, BasicQosOptions::default())
        .await
        .map_err(BrokerError::from)
        .map_err(QueueError::from)?;
    let mut reports = channel
        .basic_consume(
            BUILD_RESULTS_QUEUE.into(),
            BUILD_RESULTS_TAG.into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .map_err(BrokerError::from)
        .map_err(QueueError::from)?;
    loop {
        let delivery = tokio::select! {
            _ = stop.wait_for(|stop| *stop) => {
                let _ = channel.basic_cancel(BUILD_RESULTS_TAG.into(), BasicCancelOptions::default()).await;
                return Ok(());
            }
            delivery = reports.next() => delivery,
        };
        let delivery = delivery
            .ok_or(QueueError::Broker(BrokerError::TaskFailed))?
            .map_err(BrokerError::from)
            .map_err(QueueError::from)?;
        match serde_json::from_slice::<BuildAnswer>(&delivery.data) {
            Ok(answer) => match believed(&answer, &delivery.properties, ledger.answer_key(), coordinator) {
                Ok(()) => record_build(ledger, director, settings, answer).await?,
                Err(forgery) => {
                    metrics::FORGED_ANSWERS.with_label_values(&[forgery.label()]).inc();
                    let sender = queue::sender(&delivery.properties).unwrap_or("nobody");
                    tracing::warn!(sender, reason = forgery.label(), "dropping a forged build report");
                }
            },
            // Only the farm's own workers write here: a message that is no answer is
            // logged and dropped, it names no version to fail.
            Err(error) => tracing::error!(%error, bytes = delivery.data.len(), "dropping an unreadable build report"),
        }
        wake_publisher.notify_one();
        delivery.acker.ack(BasicAckOptions::default()).await.map_err(BrokerError::from).map_err(QueueError::from)?;
    }
}

/// `Ok` when `answer`, delivered with `properties`, is believed: a report from the
/// worker the broker vouches for, with its build's token; a build job dead-lettered
/// back, published by the coordinator's broker user `coordinator`.
fn believed(
    answer: &BuildAnswer,
    properties: &lapin::BasicProperties,
    key: &AnswerKey,
    coordinator: &str,
) -> Result<(), Forgery> {
    match answer {
        BuildAnswer::Report(report) => {
            vouched_for(properties, &report.worker_id)?;
            let build = Answerable::Build { bot: &report.job.bot, version: report.job.version };
            if key.holds(build, &report.job.token) { Ok(()) } else { Err(Forgery::NotHeld) }
        }
        BuildAnswer::Abandoned(_) => vouched_for(properties, coordinator),
    }
}

/// Records one build answer: a built version's validation tournament is inserted and
/// the version is `validating`; otherwise it is `build_failed`. A report that comes
/// again changes nothing.
async fn record_build(
    ledger: &Ledger,
    director: &Director,
    settings: ValidationSettings,
    answer: BuildAnswer,
) -> Result<(), LedgerError> {
    let (job, outcome) = match answer {
        BuildAnswer::Report(report) => (report.job, report.outcome),
        BuildAnswer::Abandoned(job) => {
            let reason = "every worker that took the build was lost before it finished".to_owned();
            (job, BuildOutcome::Failed { reason })
        }
    };
    let Some(bot) = ledger.bot(&job.bot).await? else {
        tracing::warn!(bot = %job.bot, "a build report for a bot the ledger lacks");
        return Ok(());
    };
    // A report that came again (a worker lost before its ack, a job dead-lettered after
    // another worker answered it) changes nothing.
    let building = bot.versions.iter().any(|row| row.version == job.version && row.state == VersionState::Building);
    if !building {
        tracing::info!(bot = %job.bot, version = job.version, "a build report for a version answered already");
        return Ok(());
    }
    let reason = match outcome {
        BuildOutcome::Built { image, .. } => {
            let game = bot.game.parse::<GameKind>();
            let tournament = game.map_err(|error| error.to_string()).and_then(|game| {
                validation_tournament(game, &job.bot, job.version, &image, settings).map_err(|e| e.to_string())
            });
            match tournament {
                Ok(tournament) => {
                    let id = tournament.id.clone();
                    ledger
                        .insert_tournament_for(
                            tournament,
                            bot.owner.clone(),
                            limits::PRIORITY.range.max.expect("a ceiling"),
                        )
                        .await?;
                    if ledger.version_built(job.bot.clone(), job.version, image, id.clone()).await? {
                        tracing::info!(bot = %job.bot, version = job.version, validation = %id, "built; validating");
                    }
                    director.wake();
                    return Ok(());
                }
                Err(problem) => format!("its validation cannot be made: {problem}"),
            }
        }
        BuildOutcome::Failed { reason } => reason,
    };
    if ledger.decide_version(job.bot.clone(), job.version, VersionState::BuildFailed, Some(reason.clone())).await? {
        tracing::info!(bot = %job.bot, version = job.version, %reason, "build failed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_game_has_a_validation_that_seats_the_candidate_in_every_seat() {
        for game in GameKind::ALL {
            let settings = ValidationSettings::default();
            let tournament =
                validation_tournament(game, "ada", 3, "127.0.0.1:5055/matchfarm-bots/ada@sha256:00", settings)
                    .unwrap_or_else(|error| panic!("{game}: {error}"));
            assert_eq!(tournament.bots[0].name, "ada.v3");
            let jobs: Vec<_> = tournament.plan().expect("a schedule").collect();
            let seats = tournament.format.bots_per_match(tournament.bots.len());
            for seat in 0..seats {
                assert!(
                    jobs.iter().any(|job| job.seats.get(seat) == Some(&0)),
                    "{game}: the candidate never plays seat {seat}"
                );
            }
            assert!(jobs.iter().all(|job| job.seats.contains(&0)), "{game}: a match without the candidate");
        }
    }
}
