//! The ladder format: no schedule. The director keeps `queue_depth` matches
//! unanswered, each chosen by [`crate::matchmaking::next_match`] from the active
//! bots' Weng-Lin ratings (computed from every completed match in schedule order), until
//! `max_matches` or an operator's stop. Bots join and retire while it runs
//! ([`super::Director::add_bot`], [`super::Director::retire_bot`]); a new version of
//! a bot starts from its predecessor's rating, its uncertainty widened.

use serde::{Deserialize, Serialize};

use super::{Decision, unanswered};
use crate::ledger::{JobState, MatchRow};
use crate::matchmaking::{self, LadderEntrant};
use crate::ratings::{self, RankedMatch};
use crate::tournament::{Format, RosterChange, Tournament};

/// A ladder's state, as shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderReport {
    /// Matches scheduled and not yet answered.
    pub unanswered: u64,
    /// What it keeps them at.
    pub queue_depth: u32,
    /// Every bot it has had, highest mu first.
    pub bots: Vec<LadderBot>,
}

/// One bot of a ladder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderBot {
    /// Its name.
    pub bot: String,
    /// Whether it is still scheduled.
    pub active: bool,
    /// The bot it is a new version of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// Its Weng-Lin mu.
    pub mu: f64,
    /// Its Weng-Lin sigma.
    pub sigma: f64,
    /// Its matches scheduled and not yet answered.
    pub scheduled: u32,
}

impl LadderReport {
    /// Lines for a terminal.
    pub fn lines(&self) -> Vec<String> {
        let active = self.bots.iter().filter(|bot| bot.active).count();
        let top: Vec<String> = self
            .bots
            .iter()
            .filter(|bot| bot.active)
            .take(3)
            .map(|bot| format!("{} {:.1}±{:.1}", bot.bot, bot.mu, bot.sigma))
            .collect();
        vec![format!(
            "ladder: {active} active bots, {} of {} queued; top: {}",
            self.unanswered,
            self.queue_depth,
            top.join(", ")
        )]
    }
}

/// The bots that have retired (none for other formats).
pub fn retired(tournament: &Tournament) -> Vec<usize> {
    tournament
        .roster
        .iter()
        .filter_map(|change| match change {
            RosterChange::Retired { bot } => Some(*bot),
            RosterChange::Added { .. } => None,
        })
        .collect()
}

/// The bots still scheduled, in index order.
pub fn active(tournament: &Tournament) -> Vec<usize> {
    let retired = retired(tournament);
    (0..tournament.bots.len()).filter(|bot| !retired.contains(bot)).collect()
}

/// Every bot's (mu, sigma) from the completed matches, in schedule order.
pub fn ratings(tournament: &Tournament, jobs: &[MatchRow]) -> Vec<(f64, f64)> {
    let matches: Vec<RankedMatch> = jobs
        .iter()
        .filter(|job| job.state == JobState::Done)
        .map(|job| job.outcomes.iter().filter_map(|seat| Some((seat.bot?, seat.rank))).collect())
        .collect();
    ratings::weng_lin_states(tournament.bots.len(), &matches, &tournament.predecessors())
}

/// `bot`'s matches scheduled and not yet answered.
fn unanswered_for(jobs: &[MatchRow], bot: usize) -> u32 {
    let waiting = |job: &&MatchRow| matches!(job.state, JobState::Pending | JobState::Running);
    jobs.iter().filter(waiting).filter(|job| job.seats.contains(&bot)).count() as u32
}

/// The active bots as matchmaking sees them: ratings, unanswered matches, last table.
fn entrants(tournament: &Tournament, jobs: &[MatchRow]) -> Vec<LadderEntrant> {
    let ratings = ratings(tournament, jobs);
    active(tournament)
        .into_iter()
        .map(|bot| {
            let (mu, sigma) = ratings[bot];
            let outstanding = unanswered_for(jobs, bot);
            let last_met = jobs
                .iter()
                .rev()
                .find(|job| job.seats.contains(&bot))
                .map(|job| job.seats.iter().copied().filter(|&other| other != bot).collect())
                .unwrap_or_default();
            LadderEntrant { bot, mu, sigma, outstanding, last_met }
        })
        .collect()
}

/// Fills the queue to its depth with matchmaking's choices; ends at the cap.
pub fn decide(tournament: &Tournament, jobs: &[MatchRow]) -> Decision {
    let Format::Ladder { seats, smallest_table, max_matches, queue_depth, .. } = tournament.format else {
        unreachable!("dispatched on the format")
    };
    let scheduled = jobs.len() as u64;
    let waiting = unanswered(jobs);
    if scheduled >= max_matches {
        let conclude = (waiting == 0).then(|| format!("played its cap of {max_matches} matches"));
        return Decision { schedule: Vec::new(), conclude };
    }
    let mut entrants = entrants(tournament, jobs);
    let mut schedule = Vec::new();
    while waiting + (schedule.len() as u64) < u64::from(queue_depth)
        && scheduled + (schedule.len() as u64) < max_matches
    {
        let position = scheduled + schedule.len() as u64;
        let seed = tournament.derived_seed("ladder match", &[position]);
        let Some(table) = matchmaking::next_match(&entrants, seats, smallest_table, seed) else { break };
        for entrant in entrants.iter_mut().filter(|entrant| table.contains(&entrant.bot)) {
            entrant.outstanding += 1;
            entrant.last_met = table.iter().copied().filter(|&other| other != entrant.bot).collect();
        }
        let round = u32::try_from(position).unwrap_or(u32::MAX);
        schedule.push(tournament.adaptive_job(position, table, round, seed));
    }
    Decision { schedule, conclude: None }
}

/// Every bot's rating and queue.
pub fn report(tournament: &Tournament, jobs: &[MatchRow]) -> LadderReport {
    let Format::Ladder { queue_depth, .. } = tournament.format else { unreachable!("dispatched on the format") };
    let ratings = ratings(tournament, jobs);
    let active = active(tournament);
    let predecessors = tournament.predecessors();
    let mut bots: Vec<LadderBot> = tournament
        .bots
        .iter()
        .enumerate()
        .map(|(index, bot)| LadderBot {
            bot: bot.name.clone(),
            active: active.contains(&index),
            replaces: predecessors[index].map(|old| tournament.bots[old].name.clone()),
            mu: ratings[index].0,
            sigma: ratings[index].1,
            scheduled: unanswered_for(jobs, index),
        })
        .collect();
    bots.sort_by(|a, b| b.mu.total_cmp(&a.mu).then_with(|| a.bot.cmp(&b.bot)));
    LadderReport { unanswered: unanswered(jobs), queue_depth, bots }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::director::testing::{pending, play, tournament};
    use crate::tournament::BotEntry;

    fn ladder() -> Tournament {
        let mut text =
            String::from("name = \"l\"\ngame = \"botwars\"\nformat = \"ladder\"\nqueue_depth = 4\nmax_matches = 60\n");
        for (name, builtin) in [("a", "random"), ("b", "gatherer"), ("c", "random")] {
            text.push_str(&format!("[[bots]]\nname = \"{name}\"\nbuiltin = \"{builtin}\"\n"));
        }
        tournament(&text)
    }

    /// Bot 1 (and its new version, 3) beats everyone; otherwise the lower index wins.
    fn strength(job: &MatchRow) -> Vec<u32> {
        let key = |bot: usize| if bot == 1 || bot == 3 { 0 } else { bot + 1 };
        let [a, b] = job.seats[..] else { panic!("two seats") };
        if key(a) < key(b) { vec![1, 2] } else { vec![2, 1] }
    }

    #[test]
    fn the_queue_is_kept_at_its_depth_until_the_cap_and_ratings_sort_the_bots() {
        let tournament = ladder();
        let mut jobs = pending(&decide(&tournament, &[]).schedule);
        assert_eq!(jobs.len(), 4);
        assert_eq!(decide(&tournament, &jobs), Decision::default(), "full");
        for window in jobs.windows(2) {
            let (mut x, mut y) = (window[0].seats.clone(), window[1].seats.clone());
            x.sort_unstable();
            y.sort_unstable();
            assert_ne!(x, y, "never the same pairing twice in a row");
        }
        loop {
            play(&mut jobs[..], strength);
            let decision = decide(&tournament, &jobs);
            if let Some(conclusion) = decision.conclude {
                assert_eq!(conclusion, "played its cap of 60 matches");
                break;
            }
            assert!(unanswered(&jobs) + decision.schedule.len() as u64 <= 4);
            jobs.extend(pending(&decision.schedule));
        }
        assert_eq!(jobs.len(), 60);
        let shown = report(&tournament, &jobs);
        let order: Vec<&str> = shown.bots.iter().map(|bot| bot.bot.as_str()).collect();
        assert_eq!(order, ["b", "a", "c"]);
        // 60 matches of 3 bots: every sigma well down from a new bot's.
        assert!(shown.bots.iter().all(|bot| bot.sigma < matchmaking::DEFAULT_SIGMA * 0.7), "{shown:?}");
    }

    #[test]
    fn a_retired_bot_is_scheduled_no_more_and_a_new_version_starts_from_its_rating() {
        let mut tournament = ladder();
        let mut jobs = pending(&decide(&tournament, &[]).schedule);
        play(&mut jobs, strength);
        for _ in 0..5 {
            jobs.extend(pending(&decide(&tournament, &jobs).schedule));
            play(&mut jobs, strength);
        }
        let before = ratings(&tournament, &jobs);
        tournament.bots.push(BotEntry {
            name: "b2".into(),
            builtin: Some("gatherer".into()),
            command: None,
            image: None,
            args: Vec::new(),
            transport: Default::default(),
            limits: Default::default(),
        });
        tournament.roster.push(RosterChange::Added { bot: 3, replaces: Some(1) });
        tournament.roster.push(RosterChange::Retired { bot: 1 });
        assert_eq!(active(&tournament), [0, 2, 3]);
        let next = decide(&tournament, &jobs).schedule;
        assert!(!next.is_empty());
        assert!(next.iter().all(|job| !job.seats.contains(&1)), "the old version is not scheduled");
        assert!(next.iter().any(|job| job.seats.contains(&3)), "the new one is, being the least certain");
        jobs.extend(pending(&next));
        let first = jobs.iter().position(|job| job.seats.contains(&3)).expect("b2 plays");
        play(&mut jobs[first..first + 1], strength);
        let after = ratings(&tournament, &jobs[..=first]);
        let (mu, sigma) = matchmaking::successor_rating(before[1].0, before[1].1);
        assert!(after[3].0 > mu - 3.0 && after[3].1 < sigma, "from {mu}±{sigma} to {:?}", after[3]);
        assert!(after[3].0 > matchmaking::DEFAULT_MU, "it starts from the strong bot's rating, not a new bot's");
        let shown = report(&tournament, &jobs);
        let b2 = shown.bots.iter().find(|bot| bot.bot == "b2").expect("b2");
        assert_eq!(b2.replaces.as_deref(), Some("b"));
        assert!(!shown.bots.iter().find(|bot| bot.bot == "b").expect("b").active);
    }
}
