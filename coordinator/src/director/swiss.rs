//! The Swiss format: `rounds` rounds; each is paired ([`crate::swiss::pair_round`])
//! from the results of all before it, once the last one has every answer. Each table
//! plays `games_per_pairing` matches, the `g`-th with its seats rotated by `g` (as many
//! games as seats put every bot in every seat). A job's `repetition` is its round
//! (from 0); a bot seated in none of a round's jobs had a bye in it. Swiss points:
//! each match's [`crate::swiss::match_points`], and [`crate::swiss::BYE_POINTS`] per
//! bye and game; a failed match gives nobody anything.

use serde::{Deserialize, Serialize};

use super::{Decision, unanswered};
use crate::ledger::{JobState, MatchRow};
use crate::swiss::{self as pairing, Entrant, Meetings, SwissFormat};
use crate::tournament::{Format, Tournament};

/// A Swiss tournament's state, as shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwissReport {
    /// Rounds paired so far.
    pub round: u32,
    /// Rounds in all.
    pub rounds: u32,
    /// Every bot's Swiss points and byes, best first.
    pub scores: Vec<SwissScore>,
}

/// One bot's Swiss score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwissScore {
    /// The bot.
    pub bot: String,
    /// Its points, byes included.
    pub points: f64,
    /// Its byes.
    pub byes: u32,
}

impl SwissReport {
    /// Lines for a terminal.
    pub fn lines(&self) -> Vec<String> {
        let leaders: Vec<String> =
            self.scores.iter().take(3).map(|score| format!("{} {:.2}", score.bot, score.points)).collect();
        vec![format!("swiss: round {} of {}; leading: {}", self.round, self.rounds, leaders.join(", "))]
    }
}

fn shape(tournament: &Tournament) -> (SwissFormat, u32) {
    let Format::Swiss { seats, smallest_table, rounds } = tournament.format else {
        unreachable!("dispatched on the format")
    };
    (SwissFormat { seats, smallest_table }, rounds)
}

/// Every bot's standing from `jobs`, who met whom, and how many rounds were paired.
fn standings(tournament: &Tournament, jobs: &[MatchRow]) -> (Vec<Entrant>, Meetings, u32) {
    let (format, _) = shape(tournament);
    let mut entrants: Vec<Entrant> = (0..tournament.bots.len())
        .map(|bot| Entrant { bot, points: 0.0, seat_counts: vec![0; format.seats], byes: 0 })
        .collect();
    let mut met = Meetings::new();
    let paired = jobs.iter().map(|job| job.repetition + 1).max().unwrap_or(0);
    let mut seated = vec![vec![false; paired as usize]; entrants.len()];
    for job in jobs {
        met.record(&job.seats);
        for (seat, &bot) in job.seats.iter().enumerate() {
            if let Some(entrant) = entrants.get_mut(bot) {
                if let Some(count) = entrant.seat_counts.get_mut(seat) {
                    *count += 1;
                }
                seated[bot][job.repetition as usize] = true;
            }
        }
        if job.state == JobState::Done {
            // Ranks among the tournament's bots: the game's own fillers are not opponents.
            let ranked = job.ranks();
            let ranks: Vec<u32> = ranked.iter().map(|&(_, rank)| rank).collect();
            for ((bot, _), points) in ranked.iter().zip(pairing::match_points(&ranks)) {
                if let Some(entrant) = entrants.get_mut(*bot) {
                    entrant.points += points;
                }
            }
        }
    }
    for (entrant, rounds) in entrants.iter_mut().zip(&seated) {
        let byes = rounds.iter().filter(|&&seated| !seated).count() as u32;
        entrant.byes = byes;
        entrant.points += f64::from(byes) * pairing::BYE_POINTS * f64::from(tournament.games_per_pairing);
    }
    (entrants, met, paired)
}

/// Pairs the next round once the last has every answer; ends after the last round.
pub fn decide(tournament: &Tournament, jobs: &[MatchRow]) -> Decision {
    let (format, rounds) = shape(tournament);
    if unanswered(jobs) > 0 {
        return Decision::default();
    }
    let (entrants, met, paired) = standings(tournament, jobs);
    if paired >= rounds {
        return Decision { schedule: Vec::new(), conclude: Some(format!("played its {rounds} rounds")) };
    }
    let round = match pairing::pair_round(&entrants, &met, format, paired, tournament.seed) {
        Ok(round) => round,
        // The format was checked when the tournament was submitted; this is a bug.
        Err(error) => {
            return Decision { schedule: Vec::new(), conclude: Some(format!("cannot pair round {paired}: {error}")) };
        }
    };
    let first = jobs.len() as u64;
    let games = u64::from(tournament.games_per_pairing.max(1));
    let schedule = round
        .tables
        .into_iter()
        .enumerate()
        .flat_map(|(table, seats)| {
            (0..games).map(move |game| {
                let mut seated = seats.clone();
                let turn = game as usize % seated.len().max(1);
                seated.rotate_left(turn);
                // The first game's seed is what a table's only game always had.
                let numbers = [u64::from(paired), table as u64, game];
                let seed = tournament.derived_seed("swiss table", &numbers[..if game == 0 { 2 } else { 3 }]);
                tournament.adaptive_job(first + table as u64 * games + game, seated, paired, seed)
            })
        })
        .collect();
    Decision { schedule, conclude: None }
}

/// The rounds paired and every bot's score.
pub fn report(tournament: &Tournament, jobs: &[MatchRow]) -> SwissReport {
    let (_, rounds) = shape(tournament);
    let (entrants, _, paired) = standings(tournament, jobs);
    let mut scores: Vec<SwissScore> = entrants
        .iter()
        .map(|entrant| SwissScore {
            bot: tournament.bots[entrant.bot].name.clone(),
            points: entrant.points,
            byes: entrant.byes,
        })
        .collect();
    scores.sort_by(|a, b| b.points.total_cmp(&a.points).then_with(|| a.bot.cmp(&b.bot)));
    SwissReport { round: paired, rounds, scores }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::director::testing::{pending, play, tournament};

    fn botwars(bots: usize, extra: &str) -> Tournament {
        let mut text = format!("name = \"s\"\ngame = \"botwars\"\nformat = \"swiss\"\n{extra}\n");
        for bot in 0..bots {
            text.push_str(&format!("[[bots]]\nname = \"b{bot}\"\nbuiltin = \"random\"\n"));
        }
        tournament(&text)
    }

    #[test]
    fn a_round_starts_when_the_last_has_ended_and_byes_score_a_win() {
        let tournament = botwars(5, "rounds = 3");
        let mut jobs = pending(&decide(&tournament, &[]).schedule);
        assert_eq!(jobs.len(), 2, "five bots: two tables and a bye");
        assert!(jobs.iter().all(|job| job.repetition == 0));
        play(&mut jobs[..1], |_| vec![1, 2]);
        assert_eq!(decide(&tournament, &jobs), Decision::default(), "round 0 is not over");
        // The lower index wins every match.
        let lower_wins = |job: &MatchRow| if job.seats[0] < job.seats[1] { vec![1, 2] } else { vec![2, 1] };
        play(&mut jobs, lower_wins);
        let shown = report(&tournament, &jobs);
        assert_eq!(shown.round, 1);
        let byes: Vec<&SwissScore> = shown.scores.iter().filter(|score| score.byes == 1).collect();
        assert_eq!(byes.len(), 1);
        assert_eq!(byes[0].points, 1.0, "a bye is a win");
        for _ in 1..3 {
            let next = decide(&tournament, &jobs);
            assert_eq!(next.conclude, None);
            jobs.extend(pending(&next.schedule));
            play(&mut jobs, lower_wins);
        }
        let end = decide(&tournament, &jobs);
        assert_eq!(end.conclude.as_deref(), Some("played its 3 rounds"));
        let shown = report(&tournament, &jobs);
        assert_eq!(shown.round, 3);
        assert_eq!(shown.scores.iter().map(|score| score.byes).sum::<u32>(), 3, "a bye a round");
        assert!(shown.scores.iter().all(|score| score.byes <= 1), "nobody sits out twice while others never did");
        let total: f64 = shown.scores.iter().map(|score| score.points).sum();
        assert_eq!(total, 9.0, "two points a round from matches, one from the bye");
        // No pair met twice: 5 bots have room for 3 rounds of new opponents.
        let mut met = std::collections::BTreeSet::new();
        for job in &jobs {
            let pair = (job.seats[0].min(job.seats[1]), job.seats[0].max(job.seats[1]));
            assert!(met.insert(pair), "{pair:?} met twice");
        }
    }

    #[test]
    fn each_table_plays_its_games_in_rotated_seats() {
        let tournament = botwars(5, "rounds = 2\ngames_per_pairing = 2");
        let mut jobs = pending(&decide(&tournament, &[]).schedule);
        assert_eq!(jobs.len(), 4, "two tables, two games each");
        for pair in jobs.chunks(2) {
            assert_eq!(pair[0].seats, [pair[1].seats[1], pair[1].seats[0]], "both seats");
            assert_ne!(pair[0].seed, pair[1].seed);
        }
        play(&mut jobs, |job| if job.seats[0] < job.seats[1] { vec![1, 2] } else { vec![2, 1] });
        let shown = report(&tournament, &jobs);
        let bye = shown.scores.iter().find(|score| score.byes == 1).expect("a bye");
        assert_eq!(bye.points, 2.0, "a bye is a win in each of the table's games");
        assert_eq!(shown.scores.iter().map(|score| score.points).sum::<f64>(), 6.0);
        assert_eq!(decide(&tournament, &jobs).schedule.len(), 4);
    }

    #[test]
    fn a_failed_match_gives_nobody_points_and_the_next_round_still_comes() {
        let tournament = botwars(4, "rounds = 2");
        let mut jobs = pending(&decide(&tournament, &[]).schedule);
        jobs[0].state = JobState::Failed;
        play(&mut jobs, |_| vec![1, 2]);
        let shown = report(&tournament, &jobs);
        assert_eq!(shown.scores.iter().map(|score| score.points).sum::<f64>(), 1.0, "only the played match scored");
        assert_eq!(decide(&tournament, &jobs).schedule.len(), 2);
    }
}
