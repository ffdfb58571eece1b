//! A round robin with `stop_when = "ranking-settled"`: it plays its schedule a round
//! at a time (every pairing once before any twice, [`Tournament::plan`]) and ends as
//! soon as, in its standings, every bot's rating interval lies wholly above the next
//! bot's: no more matches would change the order with the confidence the intervals
//! state (95% for Elo and mean scores, ±3σ for Weng-Lin). Otherwise it ends with its
//! schedule, which is its cap.

use serde::{Deserialize, Serialize};

use super::{Decision, unanswered};
use crate::ledger::{JobState, MatchRow, Progress};
use crate::standings::Standings;
use crate::tournament::Tournament;

/// Whether a stopping round robin's ranking has settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettledReport {
    /// Every neighbour's interval apart.
    pub settled: bool,
    /// The neighbours (higher first) whose intervals still overlap.
    pub overlapping: Vec<(String, String)>,
    /// Matches completed.
    pub played: u64,
}

impl SettledReport {
    /// Lines for a terminal.
    pub fn lines(&self) -> Vec<String> {
        if self.settled {
            return vec![format!("ranking settled after {} matches", self.played)];
        }
        let pairs: Vec<String> = self.overlapping.iter().map(|(a, b)| format!("{a}/{b}")).collect();
        vec![format!("ranking not settled after {} matches: intervals overlap for {}", self.played, pairs.join(", "))]
    }
}

/// Ends it once the ranking settles, or once its whole schedule is answered.
pub fn decide(tournament: &Tournament, jobs: &[MatchRow]) -> Decision {
    let report = report(tournament, jobs);
    let conclude = if report.settled {
        Some(format!("ranking settled after {} of {} matches", report.played, jobs.len()))
    } else if unanswered(jobs) == 0 {
        Some(format!("played its whole schedule of {} matches; the ranking did not settle", jobs.len()))
    } else {
        None
    };
    Decision { schedule: Vec::new(), conclude }
}

/// The standings' neighbours whose intervals overlap.
pub fn report(tournament: &Tournament, jobs: &[MatchRow]) -> SettledReport {
    let completed: Vec<_> =
        jobs.iter().filter(|job| job.state == JobState::Done).map(|job| job.outcomes.clone()).collect();
    let standings = Standings::compute(tournament, Progress::default(), &completed);
    let overlapping: Vec<(String, String)> = standings
        .rows
        .windows(2)
        .filter(|pair| pair[0].played == 0 || pair[1].played == 0 || pair[0].rating.low <= pair[1].rating.high)
        .map(|pair| (pair[0].bot.clone(), pair[1].bot.clone()))
        .collect();
    SettledReport { settled: overlapping.is_empty(), overlapping, played: completed.len() as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::director::testing::{pending, play, tournament};

    fn round_robin(games: u32) -> Tournament {
        let mut text = format!(
            "name = \"r\"\ngame = \"botwars\"\nformat = \"round-robin\"\ngames_per_pairing = {games}\n\
             stop_when = \"ranking-settled\"\n"
        );
        for bot in ["a", "b", "c"] {
            text.push_str(&format!("[[bots]]\nname = \"{bot}\"\nbuiltin = \"random\"\n"));
        }
        tournament(&text)
    }

    #[test]
    fn it_stops_once_every_neighbour_is_clear_and_otherwise_at_the_end_of_its_schedule() {
        let tournament = round_robin(100);
        let planned: Vec<_> = tournament.plan().expect("plan").collect();
        assert_eq!(planned.len(), 600);
        assert_eq!(planned[..6].iter().map(|job| job.repetition).max(), Some(0), "every pairing once before any twice");
        let mut jobs = pending(&planned);
        assert_eq!(decide(&tournament, &jobs).conclude, None, "nothing played yet");
        // The lower index always wins: after enough matches the order is certain.
        let lower_wins = |job: &MatchRow| if job.seats[0] < job.seats[1] { vec![1, 2] } else { vec![2, 1] };
        let mut played = 0;
        let conclusion = loop {
            play(&mut jobs[played..played + 6], lower_wins);
            played += 6;
            if let Some(conclusion) = decide(&tournament, &jobs).conclude {
                break conclusion;
            }
            assert!(played < 600, "never settled");
        };
        assert!(conclusion.starts_with("ranking settled after"), "{conclusion}");
        assert!(played < 120, "{played} matches");
        let shown = report(&tournament, &jobs);
        assert!(shown.settled && shown.overlapping.is_empty());

        // Draws everywhere never separate anyone: the schedule ends it.
        let level = round_robin(2);
        let mut jobs = pending(&level.plan().expect("plan").collect::<Vec<_>>());
        play(&mut jobs, |_| vec![1, 1]);
        let end = decide(&level, &jobs).conclude.expect("ends with its schedule");
        assert!(end.contains("did not settle"), "{end}");
        assert_eq!(report(&level, &jobs).overlapping.len(), 2);
    }
}
