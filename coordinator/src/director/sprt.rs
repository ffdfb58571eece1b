//! The SPRT format: is the candidate stronger than the baseline? Matches are played in
//! pairs that differ only in which of the two bots plays, and the sequential test
//! ([`crate::sequential_test`]) runs on the pairs' outcomes until it crosses a bound or the cap.
//!
//! - **Head to head** (the tournament has only the two bots, two per match): pair `k`
//!   is the candidate against the baseline on one seed and map, then the same with
//!   the seats swapped. Its outcome is the candidate's points over both games (0, ½,
//!   …, 2): the pentanomial counts of fishtest and OpenBench.
//! - **Paired** (N-player games, or other bots listed): pair `k` seats `seats - 1`
//!   opponents from the others, in turn, and plays the same match twice on one seed
//!   and map, the candidate in seat `k mod seats` of the first and the baseline in the
//!   same seat of the second. Its outcome is the candidate's rank against the
//!   baseline's rank (with one seat, its score against the baseline's): better, level
//!   or worse, the trinomial counts. The book's "Formats decided as results come" states the
//!   model and its assumptions.
//!
//! Pair `k` is positions `2k` and `2k + 1`. A pair with a failed match is not
//! counted; its place is taken by the next. Jobs already published when the test
//! stops still finish and count, so the live figures may move past the verdict.

use serde::{Deserialize, Serialize};

use super::{Decision, unanswered};
use crate::ledger::{JobState, MatchRow, SeatOutcome};
use crate::sequential_test::{self as stats, Counts, SprtParams, SprtStatus, Verdict};
use crate::standings::score_against;
use crate::tournament::{Format, PlannedJob, Tournament};

/// An SPRT's state, as shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SprtReport {
    /// The bot under test.
    pub candidate: String,
    /// The bot it is tested against.
    pub baseline: String,
    /// `head-to-head` (pentanomial) or `paired` (trinomial).
    pub design: Design,
    /// The hypotheses and error rates.
    pub test: SprtParams,
    /// The log-likelihood ratio, its bounds, the verdict it reaches and the Elo
    /// estimates with their 95% intervals, from the pairs counted (none only for a
    /// test whose hypotheses a hand-edited ledger broke).
    pub status: Option<SprtStatus>,
    /// Head to head: pairs by the candidate's points over the pair (0, ½, 1, 1½, 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pentanomial: Option<[u64; 5]>,
    /// Paired: pairs where the candidate did worse, the same, better than the baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trinomial: Option<[u64; 3]>,
    /// Pairs counted (both matches completed).
    pub pairs: u64,
    /// Matches scheduled so far.
    pub matches: u64,
    /// The cap.
    pub max_matches: u64,
}

/// How an SPRT's pairs are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Design {
    /// The candidate against the baseline, on both sides of one seed.
    HeadToHead,
    /// The candidate and the baseline in the same seat of the same match.
    Paired,
}

impl SprtReport {
    /// Lines for a terminal.
    pub fn lines(&self) -> Vec<String> {
        let counts = match (self.pentanomial, self.trinomial) {
            (Some(counts), _) => format!("pentanomial {counts:?} (pairs scoring 0, 0.5, 1, 1.5, 2)"),
            (_, Some(counts)) => format!("paired {counts:?} (candidate worse, level, better)"),
            _ => String::new(),
        };
        let summary = match &self.status {
            Some(status) => format!(
                "LLR {:.3} in [{:.3}, {:.3}]{}; elo {:.1} [{:.1}, {:.1}], nelo {:.1} [{:.1}, {:.1}]; {} pairs",
                status.llr,
                status.lower,
                status.upper,
                status.verdict.map_or(String::new(), |verdict| format!(": {}", verdict_text(verdict))),
                status.elo.value,
                status.elo.low,
                status.elo.high,
                status.normalized_elo.value,
                status.normalized_elo.low,
                status.normalized_elo.high,
                self.pairs
            ),
            None => "no test: its hypotheses are not valid".to_owned(),
        };
        vec![
            summary,
            format!(
                "sprt: {} vs {}: H0 elo <= {}, H1 elo >= {} ({:?}), alpha {}, beta {}",
                self.candidate,
                self.baseline,
                self.test.elo0,
                self.test.elo1,
                self.test.model,
                self.test.alpha,
                self.test.beta
            ),
            format!("{} of at most {} matches scheduled", self.matches, self.max_matches),
            counts,
        ]
    }
}

struct Setup<'a> {
    seats: usize,
    max_matches: u64,
    candidate: usize,
    baseline: usize,
    test: &'a SprtParams,
    queue_depth: u32,
    design: Design,
}

fn setup(tournament: &Tournament) -> Setup<'_> {
    let Format::Sprt { seats, max_matches, candidate, baseline, ref test, queue_depth } = tournament.format else {
        unreachable!("dispatched on the format")
    };
    let design = if tournament.bots.len() == 2 { Design::HeadToHead } else { Design::Paired };
    Setup { seats, max_matches, candidate, baseline, test, queue_depth, design }
}

/// The counts from the completed pairs, and how many pairs they are.
fn counts(setup: &Setup<'_>, jobs: &[MatchRow]) -> (Counts, u64) {
    let mut pentanomial = [0u64; 5];
    let mut trinomial = [0u64; 3];
    let mut pairs = 0;
    for pair in jobs.chunks(2) {
        let [first, second] = pair else { continue };
        if first.state != JobState::Done || second.state != JobState::Done {
            continue;
        }
        match setup.design {
            Design::HeadToHead => {
                let (Some(a), Some(b)) = (head_to_head(setup, first), head_to_head(setup, second)) else { continue };
                pentanomial[((a + b) * 2.0).round() as usize] += 1;
            }
            Design::Paired => {
                let (Some(candidate), Some(baseline)) =
                    (seat_of(first, setup.candidate), seat_of(second, setup.baseline))
                else {
                    continue;
                };
                let score = if setup.seats == 1 {
                    score_of_scores(candidate.score, baseline.score)
                } else {
                    score_against(candidate.rank, baseline.rank)
                };
                trinomial[(score * 2.0).round() as usize] += 1;
            }
        }
        pairs += 1;
    }
    let counts = match setup.design {
        Design::HeadToHead => Counts::Pentanomial(pentanomial),
        Design::Paired => Counts::Trinomial(trinomial),
    };
    (counts, pairs)
}

/// The candidate's score in one head-to-head match.
fn head_to_head(setup: &Setup<'_>, job: &MatchRow) -> Option<f64> {
    Some(score_against(seat_of(job, setup.candidate)?.rank, seat_of(job, setup.baseline)?.rank))
}

fn score_of_scores(a: i64, b: i64) -> f64 {
    score_against(u32::from(a < b), u32::from(b < a))
}

fn seat_of(job: &MatchRow, bot: usize) -> Option<&SeatOutcome> {
    job.outcomes.iter().find(|seat| seat.bot == Some(bot))
}

/// What a verdict means, for people.
pub fn verdict_text(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::H0 => "H0 accepted: the candidate is not shown to be stronger",
        Verdict::H1 => "H1 accepted: the candidate is stronger",
    }
}

/// Stops on a verdict, or at the cap once its matches are answered; otherwise adds
/// pairs while fewer than `queue_depth` matches are unanswered.
pub fn decide(tournament: &Tournament, jobs: &[MatchRow]) -> Decision {
    let setup = setup(tournament);
    let (counts, pairs) = counts(&setup, jobs);
    let status = match stats::status(setup.test, &counts) {
        Ok(status) => status,
        // Checked when the tournament was submitted: a ledger edited by hand.
        Err(error) => return Decision { schedule: Vec::new(), conclude: Some(format!("cannot test: {error}")) },
    };
    if let Some(verdict) = status.verdict {
        return Decision {
            schedule: Vec::new(),
            conclude: Some(format!(
                "{}: LLR {:.3} crossed [{:.3}, {:.3}] after {pairs} pairs",
                verdict_text(verdict),
                status.llr,
                status.lower,
                status.upper
            )),
        };
    }
    let scheduled = jobs.len() as u64;
    let waiting = unanswered(jobs);
    // Whole pairs only: an odd cap leaves its last match out.
    let cap = setup.max_matches - setup.max_matches % 2;
    if scheduled >= cap {
        let conclude = (waiting == 0).then(|| {
            format!(
                "no verdict within the cap of {cap} matches: LLR {:.3} in [{:.3}, {:.3}] after {pairs} pairs",
                status.llr, status.lower, status.upper
            )
        });
        return Decision { schedule: Vec::new(), conclude };
    }
    let mut schedule = Vec::new();
    let mut next = scheduled / 2;
    // At least one pair when nothing is waiting, even with a depth of 1.
    let depth = u64::from(setup.queue_depth).max(2);
    while waiting + schedule.len() as u64 + 2 <= depth && next * 2 + 2 <= cap {
        schedule.extend(pair(tournament, &setup, next));
        next += 1;
    }
    Decision { schedule, conclude: None }
}

/// Pair `k`'s two jobs.
fn pair(tournament: &Tournament, setup: &Setup<'_>, k: u64) -> [PlannedJob; 2] {
    let seed = tournament.derived_seed("sprt pair", &[k]);
    let round = u32::try_from(k).unwrap_or(u32::MAX);
    let (first, second) = match setup.design {
        Design::HeadToHead => (vec![setup.candidate, setup.baseline], vec![setup.baseline, setup.candidate]),
        Design::Paired => {
            let others: Vec<usize> =
                (0..tournament.bots.len()).filter(|&bot| bot != setup.candidate && bot != setup.baseline).collect();
            let taken = setup.seats - 1;
            let start = (k as usize).wrapping_mul(taken) % others.len().max(1);
            let mut table: Vec<usize> = (0..taken).map(|i| others[(start + i) % others.len()]).collect();
            let seat = (k % setup.seats as u64) as usize;
            let mut second = table.clone();
            table.insert(seat, setup.candidate);
            second.insert(seat, setup.baseline);
            (table, second)
        }
    };
    [tournament.adaptive_job(2 * k, first, round, seed), tournament.adaptive_job(2 * k + 1, second, round, seed)]
}

/// The test's state from `jobs`.
pub fn report(tournament: &Tournament, jobs: &[MatchRow]) -> SprtReport {
    let setup = setup(tournament);
    let (counts, pairs) = counts(&setup, jobs);
    let status = stats::status(setup.test, &counts).ok();
    let name = |bot: usize| tournament.bots.get(bot).map_or_else(String::new, |bot| bot.name.clone());
    let (pentanomial, trinomial) = match counts {
        Counts::Pentanomial(counts) => (Some(counts), None),
        Counts::Trinomial(counts) => (None, Some(counts)),
    };
    SprtReport {
        candidate: name(setup.candidate),
        baseline: name(setup.baseline),
        design: setup.design,
        test: *setup.test,
        status,
        pentanomial,
        trinomial,
        pairs,
        matches: jobs.len() as u64,
        max_matches: setup.max_matches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::director::testing::{pending, play, tournament};

    fn head_to_head(extra: &str) -> Tournament {
        tournament(&format!(
            "name = \"s\"\ngame = \"botwars\"\nformat = \"sprt\"\ncandidate = \"b\"\nbaseline = \"a\"\n{extra}\n\
             [[bots]]\nname = \"a\"\nbuiltin = \"random\"\n[[bots]]\nname = \"b\"\nbuiltin = \"gatherer\"\n"
        ))
    }

    /// Decides and plays until the test ends, `ranks` deciding every match; returns
    /// the jobs and the conclusion.
    fn run_to_the_end(
        tournament: &Tournament,
        mut ranks: impl FnMut(&MatchRow) -> Vec<u32>,
    ) -> (Vec<MatchRow>, String) {
        let mut jobs = Vec::new();
        for _ in 0..10_000 {
            let decision = decide(tournament, &jobs);
            if let Some(conclusion) = decision.conclude {
                return (jobs, conclusion);
            }
            assert!(!decision.schedule.is_empty(), "nothing waits, so something is scheduled");
            jobs.extend(pending(&decision.schedule));
            play(&mut jobs, &mut ranks);
        }
        panic!("no end after 10000 decisions");
    }

    #[test]
    fn head_to_head_pairs_swap_sides_on_one_seed_and_keep_the_queue_at_its_depth() {
        let tournament = head_to_head("queue_depth = 6\nmax_matches = 40");
        let first = decide(&tournament, &[]);
        assert_eq!(first.conclude, None);
        assert_eq!(first.schedule.len(), 6, "three pairs fill a depth of 6");
        for (k, pair) in first.schedule.chunks(2).enumerate() {
            assert_eq!(pair[0].seats, [1, 0], "the candidate first");
            assert_eq!(pair[1].seats, [0, 1], "then the sides swapped");
            assert_eq!(pair[0].seed, pair[1].seed, "one seed per pair");
            assert_eq!((pair[0].position, pair[1].position), (2 * k as u64, 2 * k as u64 + 1));
            assert_ne!(pair[0].job_id, pair[1].job_id);
        }
        assert_ne!(first.schedule[0].seed, first.schedule[2].seed, "each pair its own seed");
        let mut jobs = pending(&first.schedule);
        assert_eq!(decide(&tournament, &jobs), Decision::default(), "the queue is full");
        // One match answered frees one place: not enough for a pair.
        play(&mut jobs[..1], |_| vec![1, 2]);
        assert!(decide(&tournament, &jobs).schedule.is_empty());
        play(&mut jobs[..2], |_| vec![1, 2]);
        let next = decide(&tournament, &jobs).schedule;
        assert_eq!(next.iter().map(|job| job.position).collect::<Vec<_>>(), [6, 7]);
        let again = decide(&tournament, &jobs).schedule;
        assert_eq!(next, again, "the same jobs give the same decision");
    }

    #[test]
    fn a_candidate_winning_every_match_is_accepted_early_and_a_level_one_is_stopped_by_the_cap() {
        let tournament = head_to_head("elo0 = 0\nelo1 = 50\nelo_model = \"logistic\"\nmax_matches = 1000");
        let candidate_wins = |job: &MatchRow| if job.seats[0] == 1 { vec![1, 2] } else { vec![2, 1] };
        let (jobs, conclusion) = run_to_the_end(&tournament, candidate_wins);
        assert!(conclusion.contains("H1"), "{conclusion}");
        assert!(jobs.len() < 100, "stopped early: {} matches", jobs.len());
        let shown = report(&tournament, &jobs);
        assert_eq!(shown.pentanomial.map(|counts| counts[4]), Some(shown.pairs), "every pair won twice");
        let status = shown.status.expect("a status");
        assert!(status.elo.low > 0.0, "{:?}", status.elo);

        // Pairs won and lost in turn keep the ratio near 0: the cap ends the test.
        let capped = head_to_head("elo0 = -10\nelo1 = 10\nelo_model = \"logistic\"\nmax_matches = 11");
        let alternate = |job: &MatchRow| {
            let candidate_wins = job.repetition.is_multiple_of(2);
            if (job.seats[0] == 1) == candidate_wins { vec![1, 2] } else { vec![2, 1] }
        };
        let (jobs, conclusion) = run_to_the_end(&capped, alternate);
        assert_eq!(jobs.len(), 10, "whole pairs only: an odd cap leaves its last match out");
        assert!(conclusion.starts_with("no verdict within the cap of 10 matches"), "{conclusion}");
    }

    #[test]
    fn paired_matches_seat_the_baseline_where_the_candidate_sat_among_the_same_opponents() {
        let mut text = String::from(
            "name = \"n\"\ngame = \"vindinium\"\nformat = \"sprt\"\ncandidate = \"new\"\nbaseline = \"old\"\n",
        );
        for (name, builtin) in [("old", "random"), ("new", "greedy"), ("x", "random"), ("y", "greedy"), ("z", "random")]
        {
            text.push_str(&format!("[[bots]]\nname = \"{name}\"\nbuiltin = \"{builtin}\"\n"));
        }
        let tournament = tournament(&text);
        assert!(matches!(tournament.format, Format::Sprt { seats: 4, .. }));
        let schedule = decide(&tournament, &[]).schedule;
        assert_eq!(schedule.len(), 16);
        let mut seats_used = [0; 4];
        for pair in schedule.chunks(2) {
            let seat = pair[0].seats.iter().position(|&bot| bot == 1).expect("the candidate plays the first");
            assert_eq!(pair[1].seats[seat], 0, "the baseline takes its seat in the second");
            let others = |job: &PlannedJob| {
                job.seats.iter().enumerate().filter(|&(s, _)| s != seat).map(|(_, &b)| b).collect::<Vec<_>>()
            };
            assert_eq!(others(&pair[0]), others(&pair[1]), "the same opponents in the same seats");
            assert!(others(&pair[0]).iter().all(|&bot| bot >= 2), "opponents are the other bots");
            assert_eq!(pair[0].seed, pair[1].seed);
            seats_used[seat] += 1;
        }
        assert_eq!(seats_used, [2, 2, 2, 2], "the candidate's seat turns");

        // The candidate ranking above the baseline in every pair: accepted.
        let mut jobs = pending(&schedule);
        play(&mut jobs, |job| {
            job.seats.iter().map(|&bot| if bot == 1 { 1 } else { 2 + u32::from(bot == 0) }).collect()
        });
        let shown = report(&tournament, &jobs);
        assert_eq!(shown.design, Design::Paired);
        assert_eq!(shown.trinomial, Some([0, 0, 8]));
    }
}
