//! Validation tournaments, judged once they have finished: a submitted version whose
//! bot crashed, timed out or broke the protocol in any match is rejected, naming the
//! match, why in one line (its crash report's reason: exit code or signal, and where)
//! and where its log is; one that played every seat cleanly is validated and entered
//! in the ladder it named, replacing its previous version there.

use farm_proto::PlayerStatus;

use super::{Director, RosterError};
use crate::ledger::{
    JobState, Ledger, LedgerError, MatchFilter, MatchRow, ToJudge, VersionState, entry_name, entry_version,
};
use crate::tournament::BotEntry;

/// What a validation showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every match played cleanly.
    Validated,
    /// The candidate failed in a match: the match, its seat and how it ended.
    Failed {
        /// The match.
        job_id: String,
        /// The candidate's seat.
        seat: usize,
        /// How it ended.
        status: PlayerStatus,
    },
    /// Why not otherwise: a match that could not be played, or none.
    Rejected(String),
}

impl Verdict {
    /// The rejection's text for validation `id`, with the failed seat's crash reason
    /// (`why`) when there is one; `None` for a validated version.
    pub fn rejection(&self, id: &str, why: Option<&str>) -> Option<String> {
        match self {
            Verdict::Validated => None,
            Verdict::Failed { job_id, seat, status } => {
                let why = why.map(|why| format!(": {why}")).unwrap_or_default();
                Some(format!(
                    "{} in match {job_id} (seat {seat}) of {id}{why}; its log: /api/matches/{job_id}/logs/{seat}",
                    status.name()
                ))
            }
            Verdict::Rejected(reason) => Some(reason.clone()),
        }
    }
}

/// The verdict on the candidate (bot 0) of a finished validation tournament `id`.
pub fn judge(id: &str, rows: &[MatchRow]) -> Verdict {
    let mut completed = 0;
    for row in rows {
        if row.state != JobState::Done {
            continue;
        }
        completed += 1;
        let failed = row
            .outcomes
            .iter()
            .enumerate()
            .find(|(_, outcome)| outcome.bot == Some(0) && outcome.status != PlayerStatus::Ok);
        if let Some((seat, outcome)) = failed {
            return Verdict::Failed { job_id: row.job_id.clone(), seat, status: outcome.status };
        }
    }
    match rows.iter().find(|row| row.state == JobState::Failed) {
        _ if completed == rows.len() && completed > 0 => Verdict::Validated,
        Some(row) => Verdict::Rejected(format!(
            "match {} of {id} could not be played: {}",
            row.job_id,
            row.reason.as_deref().unwrap_or("no reason given")
        )),
        None => Verdict::Rejected(format!("{id} has no match to judge")),
    }
}

/// Judges every validation that has finished ([`judge`]) and enters the versions that
/// pass in their ladders through `director`, whose loop calls this after each pass: a
/// validation finishes when its last result is recorded, which wakes that loop.
pub async fn judge_finished(ledger: &Ledger, director: &Director) -> Result<(), LedgerError> {
    for finished in ledger.validations_finished().await? {
        let filter = MatchFilter { limit: u32::MAX, ..MatchFilter::default() };
        let rows = ledger.matches(&finished.validation, filter).await?;
        let verdict = judge(&finished.validation, &rows);
        let (state, reason) = match &verdict {
            Verdict::Validated => match enter(ledger, director, &finished).await? {
                Ok(()) => (VersionState::Validated, None),
                Err(problem) => (VersionState::Rejected, Some(problem)),
            },
            Verdict::Failed { job_id, seat, .. } => {
                let why = crash_reason(ledger, job_id, *seat).await?;
                (VersionState::Rejected, verdict.rejection(&finished.validation, why.as_deref()))
            }
            Verdict::Rejected(_) => (VersionState::Rejected, verdict.rejection(&finished.validation, None)),
        };
        if ledger.decide_version(finished.bot.clone(), finished.version, state, reason.clone()).await? {
            tracing::info!(bot = %finished.bot, version = finished.version, ?state, ?reason, "version decided");
        }
    }
    Ok(())
}

/// The crash report's reason of seat `seat` in match `job_id`, as its result says.
async fn crash_reason(ledger: &Ledger, job_id: &str, seat: usize) -> Result<Option<String>, LedgerError> {
    let envelope = ledger.match_detail(job_id).await?.and_then(|(_, _, envelope)| envelope);
    let Some(farm_proto::MatchResult::Completed { players, .. }) = envelope.map(|envelope| envelope.result) else {
        return Ok(None);
    };
    Ok(players.into_iter().find(|player| player.seat == seat).and_then(|player| player.crash).map(|crash| crash.reason))
}

/// Enters a validated version in its ladder, if it named one, as the new version of
/// the newest of its bot's versions playing there, retiring any older ones; `Err`
/// says why the ladder would not take it. Judged again after a restart, a version
/// already there is left as it is, and one older than a version already there does
/// not enter.
async fn enter(ledger: &Ledger, director: &Director, version: &ToJudge) -> Result<Result<(), String>, LedgerError> {
    let Some(ladder) = &version.ladder else { return Ok(Ok(())) };
    let Some(tournament) = ledger.tournament(ladder).await? else {
        return Ok(Err(format!("validated, but ladder {ladder} is gone")));
    };
    let retired = super::ladder::retired(&tournament);
    let mut playing: Vec<u32> = tournament
        .bots
        .iter()
        .enumerate()
        .filter(|(index, _)| !retired.contains(index))
        .filter_map(|(_, bot)| entry_version(&version.bot, &bot.name))
        .collect();
    playing.sort_unstable();
    if playing.last().is_some_and(|&newest| newest >= version.version) {
        tracing::info!(bot = %version.bot, version = version.version, %ladder, ?playing, "not entered: it or a newer version plays there");
        return Ok(Ok(()));
    }
    let name = entry_name(&version.bot, version.version);
    let bot = BotEntry {
        name: name.clone(),
        builtin: None,
        command: None,
        image: Some(version.image.clone()),
        args: Vec::new(),
        transport: farm_proto::Transport::default(),
        limits: farm_proto::BotLimits::default(),
    };
    let replaces = playing.pop().map(|before| entry_name(&version.bot, before));
    match director.add_bot(ladder, bot, replaces.as_deref()).await {
        Ok(_) => tracing::info!(bot = %name, %ladder, ?replaces, "entered in its ladder"),
        Err(RosterError::Ledger(error)) => return Err(error),
        Err(error) => return Ok(Err(format!("validated, but ladder {ladder} would not take it: {error}"))),
    }
    for older in playing {
        let older = entry_name(&version.bot, older);
        if let Err(error) = director.retire_bot(ladder, &older).await {
            tracing::warn!(bot = %older, %ladder, %error, "retiring an older version");
        }
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ledger::SeatOutcome;
    use crate::tournament::{TournamentFile, TournamentLimits};

    fn row(job: &str, state: JobState, statuses: &[(Option<usize>, PlayerStatus)]) -> MatchRow {
        MatchRow {
            job_id: job.to_owned(),
            position: 0,
            seats: statuses.iter().filter_map(|(bot, _)| *bot).collect(),
            map: 0,
            repetition: 0,
            seed: 0,
            state,
            attempts: 1,
            reason: (state == JobState::Failed).then(|| "the image is missing".to_owned()),
            outcomes: statuses
                .iter()
                .map(|&(bot, status)| SeatOutcome { bot, score: 0, rank: 1, status, timeouts: 0 })
                .collect(),
        }
    }

    #[test]
    fn a_candidate_that_plays_every_match_cleanly_is_validated() {
        let rows = [
            row("a", JobState::Done, &[(Some(0), PlayerStatus::Ok), (Some(1), PlayerStatus::Crashed)]),
            row("b", JobState::Done, &[(Some(1), PlayerStatus::Ok), (Some(0), PlayerStatus::Ok)]),
        ];
        assert_eq!(judge("t", &rows), Verdict::Validated);
    }

    #[test]
    fn a_crash_a_timeout_or_a_failed_match_rejects_it_naming_the_match_and_log() {
        let rows = [
            row("a", JobState::Done, &[(Some(0), PlayerStatus::Ok), (Some(1), PlayerStatus::Ok)]),
            row("b", JobState::Done, &[(Some(1), PlayerStatus::Ok), (Some(0), PlayerStatus::Crashed)]),
        ];
        let verdict = judge("t", &rows);
        assert_eq!(verdict, Verdict::Failed { job_id: "b".into(), seat: 1, status: PlayerStatus::Crashed });
        assert_eq!(
            verdict.rejection("t", Some("exited with code 1 before its first reply")).as_deref(),
            Some(
                "crashed in match b (seat 1) of t: exited with code 1 before its first reply; \
                 its log: /api/matches/b/logs/1"
            )
        );
        let rows = [row("c", JobState::Done, &[(Some(0), PlayerStatus::TimedOut), (Some(1), PlayerStatus::Ok)])];
        assert!(matches!(judge("t", &rows), Verdict::Failed { status: PlayerStatus::TimedOut, .. }));
        let rows = [
            row("d", JobState::Done, &[(Some(0), PlayerStatus::Ok), (Some(1), PlayerStatus::Ok)]),
            row("e", JobState::Failed, &[]),
        ];
        let Verdict::Rejected(reason) = judge("t", &rows) else { panic!("validated") };
        assert!(reason.contains("the image is missing"), "{reason}");
        assert!(matches!(judge("t", &[]), Verdict::Rejected(_)));
    }

    /// A ladder of two built-in bots in a fresh ledger, with a director over it.
    async fn ladder() -> (tempfile::TempDir, Ledger, Arc<Director>, String) {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = Ledger::open(&dir.path().join("ledger.sqlite")).expect("ledger");
        let text = "name = \"l\"\ngame = \"botwars\"\nformat = \"ladder\"\nopen_to_submissions = true\n\
                    [[bots]]\nname = \"a\"\nbuiltin = \"random\"\n[[bots]]\nname = \"b\"\nbuiltin = \"random\"\n";
        let tournament = TournamentFile::from_toml(text)
            .and_then(|file| file.resolve(None, TournamentLimits::default()))
            .expect("a ladder");
        let id = tournament.id.clone();
        ledger.insert_tournament(tournament).await.expect("insert");
        let director =
            Director::new(ledger.clone(), farm_worker::SandboxKind::Docker, Arc::new(tokio::sync::Notify::new()));
        (dir, ledger, director, id)
    }

    fn validated(version: u32, ladder: &str) -> ToJudge {
        ToJudge {
            bot: "ada".into(),
            version,
            validation: format!("t-v{version}"),
            ladder: Some(ladder.to_owned()),
            image: format!("127.0.0.1:5055/matchfarm-bots/ada@sha256:{version:064}"),
        }
    }

    /// The ladder's bots still playing.
    async fn playing(ledger: &Ledger, id: &str) -> Vec<String> {
        let tournament = ledger.tournament(id).await.expect("read").expect("the ladder");
        let retired = crate::director::ladder::retired(&tournament);
        let bots = tournament.bots.iter().enumerate();
        bots.filter(|(index, _)| !retired.contains(index)).map(|(_, bot)| bot.name.clone()).collect()
    }

    #[tokio::test]
    async fn versions_enter_their_ladder_once_newest_last_whatever_order_they_pass_in() {
        let (_dir, ledger, director, id) = ladder().await;
        let enter = |version: u32| {
            let (ledger, director, id) = (ledger.clone(), Arc::clone(&director), id.clone());
            async move { enter(&ledger, &director, &validated(version, &id)).await.expect("ledger") }
        };
        assert_eq!(enter(2).await, Ok(()));
        // Judged again after a restart: nothing changes.
        assert_eq!(enter(2).await, Ok(()));
        // An older version that passes later does not enter over the newer.
        assert_eq!(enter(1).await, Ok(()));
        assert_eq!(playing(&ledger, &id).await, ["a", "b", "ada.v2"]);
        // A newer one replaces it.
        assert_eq!(enter(3).await, Ok(()));
        assert_eq!(playing(&ledger, &id).await, ["a", "b", "ada.v3"]);
    }
}
