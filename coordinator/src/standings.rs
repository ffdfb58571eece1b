//! Standings: per-bot results and ratings, computed from every completed match of a
//! tournament in schedule order, so the same results give the same standings
//! whatever order they arrived in.

use std::fmt::Write as _;

use farm_proto::{GameKind, PlayerStatus};
use serde::{Deserialize, Serialize};

use crate::ledger::{Ledger, LedgerError, Progress, SeatOutcome, tournament_ranks};
use crate::metrics;
use crate::ratings::{self, PairGame, RankedMatch, Rating};
use crate::tournament::{Format, Tournament};

/// How a tournament's bots are rated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RatingMethod {
    /// 2-player games: Bradley–Terry Elo with 95% intervals.
    Elo,
    /// N-player games: Weng-Lin over ranks, mu ± 3 sigma.
    WengLin,
    /// Games where each bot plays alone (Maze): the mean score, 95% interval.
    MeanScore,
}

impl RatingMethod {
    /// The method for `game`.
    pub fn for_game(game: GameKind) -> Self {
        match game {
            GameKind::Botwars => RatingMethod::Elo,
            GameKind::Vindinium => RatingMethod::WengLin,
            GameKind::Ostibot => RatingMethod::WengLin,
            GameKind::Maze => RatingMethod::MeanScore,
        }
    }

    /// The method for `tournament`: its game's, but Weng-Lin for a ladder, whose bots
    /// come and go and whose new versions start from their predecessors' ratings.
    pub fn for_tournament(tournament: &Tournament) -> Self {
        match tournament.format {
            Format::Ladder { .. } => RatingMethod::WengLin,
            _ => RatingMethod::for_game(tournament.game),
        }
    }

    /// The column heading.
    pub fn heading(self) -> &'static str {
        match self {
            RatingMethod::Elo => "elo (95%)",
            RatingMethod::WengLin => "mu ± 3σ",
            RatingMethod::MeanScore => "mean score (95%)",
        }
    }
}

/// One bot's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StandingRow {
    /// 1 for the best rating.
    pub place: u32,
    /// The bot.
    pub bot: String,
    /// Completed matches it played.
    pub played: u64,
    /// Matches it ranked first in alone.
    pub wins: u64,
    /// Matches it shared first place in.
    pub draws: u64,
    /// The others.
    pub losses: u64,
    /// One point per opponent ranked below it, half per opponent ranked equal.
    pub points: f64,
    /// Its rating (see [`Standings::method`]).
    pub rating: Rating,
    /// Requests it missed, over all matches.
    pub timeouts: u64,
    /// Matches it crashed in, or was removed from for its output (`output_limit`).
    pub crashes: u64,
    /// Matches it was disqualified from.
    pub disqualified: u64,
}

/// A tournament's standings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standings {
    /// The tournament.
    pub tournament_id: String,
    /// Its name.
    pub name: String,
    /// Its game.
    pub game: GameKind,
    /// How ratings are computed.
    pub method: RatingMethod,
    /// How far the tournament is.
    pub progress: Progress,
    /// Best first.
    pub rows: Vec<StandingRow>,
}

impl Standings {
    /// `tournament`'s standings now, from the ledger's completed matches (computed off
    /// the async runtime: a big tournament's ratings take a while).
    pub async fn load(ledger: &Ledger, tournament: &Tournament) -> Result<Self, LedgerError> {
        let started = std::time::Instant::now();
        let progress = ledger.progress(&tournament.id).await?.unwrap_or_default();
        let completed = ledger.completed(&tournament.id).await?;
        let tournament = tournament.clone();
        let standings = tokio::task::spawn_blocking(move || Standings::compute(&tournament, progress, &completed))
            .await
            .map_err(|error| LedgerError::Task(error.to_string()))?;
        metrics::STANDINGS_SECONDS.observe(started.elapsed().as_secs_f64());
        Ok(standings)
    }

    /// Computes standings from `matches` (completed, in schedule order).
    pub fn compute(tournament: &Tournament, progress: Progress, matches: &[Vec<SeatOutcome>]) -> Self {
        let bots = tournament.bots.len();
        let method = RatingMethod::for_tournament(tournament);
        let mut rows: Vec<StandingRow> = tournament
            .bots
            .iter()
            .map(|bot| StandingRow {
                place: 0,
                bot: bot.name.clone(),
                played: 0,
                wins: 0,
                draws: 0,
                losses: 0,
                points: 0.0,
                rating: Rating { value: 0.0, low: 0.0, high: 0.0 },
                timeouts: 0,
                crashes: 0,
                disqualified: 0,
            })
            .collect();
        let mut pairs = Vec::new();
        let mut ranked: Vec<RankedMatch> = Vec::new();
        let mut scores: Vec<Vec<f64>> = vec![Vec::new(); bots];
        for seats in matches {
            let winners = seats.iter().filter(|seat| seat.rank == 1).count();
            for seat in seats {
                let Some(row) = seat.bot.and_then(|bot| rows.get_mut(bot)) else { continue };
                row.played += 1;
                match (seat.rank, winners) {
                    (1, 1) => row.wins += 1,
                    (1, _) => row.draws += 1,
                    _ => row.losses += 1,
                }
                for other in seats {
                    if std::ptr::eq(other, seat) {
                        continue;
                    }
                    row.points += score_against(seat.rank, other.rank);
                }
                row.timeouts += seat.timeouts;
                // A bot removed for its output is out as a crashed one is.
                row.crashes += u64::from(matches!(seat.status, PlayerStatus::Crashed | PlayerStatus::OutputLimit));
                row.disqualified += u64::from(seat.status == PlayerStatus::Disqualified);
                if let Some(bot) = seat.bot {
                    scores[bot].push(seat.score as f64);
                }
            }
            let in_tournament = tournament_ranks(seats);
            pairs.extend(pair_game(&in_tournament));
            ranked.push(in_tournament);
        }
        let ratings = match method {
            RatingMethod::Elo => ratings::bradley_terry(bots, &pairs),
            RatingMethod::WengLin => ratings::weng_lin_with_predecessors(bots, &ranked, &tournament.predecessors()),
            RatingMethod::MeanScore => ratings::mean_scores(&scores),
        };
        for (row, rating) in rows.iter_mut().zip(ratings) {
            row.rating = rating;
        }
        rows.sort_by(|a, b| {
            b.rating
                .value
                .total_cmp(&a.rating.value)
                .then(b.points.total_cmp(&a.points))
                .then_with(|| a.bot.cmp(&b.bot))
        });
        for (place, row) in rows.iter_mut().enumerate() {
            row.place = place as u32 + 1;
        }
        Standings {
            tournament_id: tournament.id.clone(),
            name: tournament.name.clone(),
            game: tournament.game,
            method,
            progress,
            rows,
        }
    }

    /// A plain-text table for terminals.
    pub fn table(&self) -> String {
        let bot_width = self.rows.iter().map(|row| row.bot.chars().count()).max().unwrap_or(3).max(3);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:>5}  {:<bot_width$}  {:>6}  {:>5}  {:>5}  {:>6}  {:>8}  {:>22}  {:>8}  {:>7}  {:>5}",
            "place",
            "bot",
            "played",
            "wins",
            "draws",
            "losses",
            "points",
            self.method.heading(),
            "timeouts",
            "crashes",
            "disq"
        );
        for row in &self.rows {
            let rating = if row.played == 0 {
                "-".to_owned()
            } else {
                format!("{:.1} [{:.1}, {:.1}]", row.rating.value, row.rating.low, row.rating.high)
            };
            let _ = writeln!(
                out,
                "{:>5}  {:<bot_width$}  {:>6}  {:>5}  {:>5}  {:>6}  {:>8.1}  {:>22}  {:>8}  {:>7}  {:>5}",
                row.place,
                row.bot,
                row.played,
                row.wins,
                row.draws,
                row.losses,
                row.points,
                rating,
                row.timeouts,
                row.crashes,
                row.disqualified
            );
        }
        out
    }

    /// CSV with a header line (RFC 4180 quoting for bot names).
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "place,bot,played,wins,draws,losses,points,rating,rating_low,rating_high,timeouts,crashes,disqualified\n",
        );
        for row in &self.rows {
            let bot = if row.bot.contains([',', '"', '\n']) {
                format!("\"{}\"", row.bot.replace('"', "\"\""))
            } else {
                row.bot.clone()
            };
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                row.place,
                bot,
                row.played,
                row.wins,
                row.draws,
                row.losses,
                row.points,
                row.rating.value,
                row.rating.low,
                row.rating.high,
                row.timeouts,
                row.crashes,
                row.disqualified
            );
        }
        out
    }
}

/// The match as a game between two bots, if it seated exactly two of the tournament's.
fn pair_game(in_tournament: &[(usize, u32)]) -> Option<PairGame> {
    let [(a, rank_a), (b, rank_b)] = in_tournament[..] else { return None };
    Some(PairGame { a, b, score_a: score_against(rank_a, rank_b) })
}

/// A result against one other: 1 when `rank` is above `other` (1 is best), ½ when
/// level, 0 below. What standings, pair games and an SPRT's pairs all count.
pub(crate) fn score_against(rank: u32, other: u32) -> f64 {
    match rank.cmp(&other) {
        std::cmp::Ordering::Less => 1.0,
        std::cmp::Ordering::Equal => 0.5,
        std::cmp::Ordering::Greater => 0.0,
    }
}

/// One bot's results against another.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadToHead {
    /// Matches it ranked above the other.
    pub wins: u64,
    /// Matches they ranked equal.
    pub draws: u64,
    /// Matches it ranked below the other.
    pub losses: u64,
}

impl HeadToHead {
    fn add(&mut self, other: HeadToHead) {
        self.wins += other.wins;
        self.draws += other.draws;
        self.losses += other.losses;
    }
}

/// The pairing matrix: how each bot did against each other one, over the completed
/// matches that seated exactly two of the tournament's bots (the games Elo is computed
/// from; filler seats do not count). In a tournament of 2-bot matches
/// ([`crate::tournament::Format::bots_per_match`]) that is every completed match.
///
/// Pairs are unordered: a match counts the same whichever seat each bot had, so
/// `results[j][i]` is `results[i][j]` seen from the other side (wins and losses
/// swapped), and the diagonal is all zeros.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pairings {
    /// The tournament.
    pub tournament_id: String,
    /// The bots in tournament order: the rows, and the columns, of `results`.
    pub bots: Vec<String>,
    /// `results[i][j]`: bot `i`'s results against bot `j`.
    pub results: Vec<Vec<HeadToHead>>,
}

impl Pairings {
    /// Counts `matches` (completed, any order).
    pub fn compute(tournament: &Tournament, matches: &[Vec<SeatOutcome>]) -> Self {
        let bots = tournament.bots.len();
        let mut results = vec![vec![HeadToHead::default(); bots]; bots];
        for seats in matches {
            let [(a, rank_a), (b, rank_b)] = tournament_ranks(seats)[..] else { continue };
            if a == b || a.max(b) >= bots {
                continue;
            }
            let for_a = HeadToHead {
                wins: u64::from(rank_a < rank_b),
                draws: u64::from(rank_a == rank_b),
                losses: u64::from(rank_a > rank_b),
            };
            results[a][b].add(for_a);
            results[b][a].add(HeadToHead { wins: for_a.losses, draws: for_a.draws, losses: for_a.wins });
        }
        Pairings {
            tournament_id: tournament.id.clone(),
            bots: tournament.bots.iter().map(|bot| bot.name.clone()).collect(),
            results,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tournament::{TournamentFile, TournamentLimits};

    fn tournament(game: &str, bots: &[&str]) -> Tournament {
        let mut text = format!("name = \"t\"\ngame = \"{game}\"\nformat = \"round-robin\"\n");
        for bot in bots {
            text.push_str(&format!("[[bots]]\nname = \"{bot}\"\nbuiltin = \"random\"\n"));
        }
        TournamentFile::from_toml(&text).expect("parses").resolve(None, TournamentLimits::default()).expect("valid")
    }

    fn seat(bot: Option<usize>, score: i64, rank: u32) -> SeatOutcome {
        SeatOutcome { bot, score, rank, status: PlayerStatus::Ok, timeouts: 0 }
    }

    #[test]
    fn two_player_results_count_wins_draws_losses_points_and_elo() {
        let tournament = tournament("botwars", &["a", "b", "c"]);
        let mut matches = vec![
            vec![seat(Some(0), 5, 1), seat(Some(1), 2, 2)],
            vec![seat(Some(1), 3, 1), seat(Some(0), 3, 1)],
            vec![seat(Some(0), 4, 1), seat(Some(2), 1, 2)],
        ];
        matches[2][1].status = PlayerStatus::Crashed;
        matches[2][1].timeouts = 2;
        let standings = Standings::compute(&tournament, Progress::default(), &matches);
        assert_eq!(standings.method, RatingMethod::Elo);
        let a = &standings.rows[0];
        assert_eq!((a.bot.as_str(), a.played, a.wins, a.draws, a.losses, a.points), ("a", 3, 2, 1, 0, 2.5));
        let c = standings.rows.iter().find(|row| row.bot == "c").expect("c");
        assert_eq!((c.played, c.losses, c.crashes, c.timeouts, c.points), (1, 1, 1, 2, 0.0));
        let expected = ratings::bradley_terry(
            3,
            &[
                PairGame { a: 0, b: 1, score_a: 1.0 },
                PairGame { a: 1, b: 0, score_a: 0.5 },
                PairGame { a: 0, b: 2, score_a: 1.0 },
            ],
        );
        assert_eq!(a.rating, expected[0]);
        assert_eq!(standings.rows.iter().map(|row| row.place).collect::<Vec<_>>(), [1, 2, 3]);
        let csv = standings.csv();
        assert!(csv.lines().nth(1).is_some_and(|line| line.starts_with("1,a,3,2,1,0,2.5,")), "{csv}");
        assert!(standings.table().contains("elo (95%)"));
    }

    #[test]
    fn the_pairing_matrix_counts_both_sides_of_each_pair_and_ignores_other_matches() {
        let tournament = tournament("botwars", &["a", "b", "c"]);
        let matches = vec![
            vec![seat(Some(0), 5, 1), seat(Some(1), 2, 2)],
            vec![seat(Some(1), 4, 1), seat(Some(0), 1, 2)],
            vec![seat(Some(1), 3, 1), seat(Some(0), 3, 1)],
            vec![seat(Some(2), 0, 2), seat(Some(0), 6, 1)],
            // Two bots and a filler: still a game between the two (the filler ranked first).
            vec![seat(None, 9, 1), seat(Some(2), 4, 2), seat(Some(1), 1, 3)],
            // Three bots: no pair.
            vec![seat(Some(0), 1, 1), seat(Some(1), 1, 2), seat(Some(2), 1, 3)],
        ];
        let pairings = Pairings::compute(&tournament, &matches);
        assert_eq!(pairings.bots, ["a", "b", "c"]);
        let h = |wins, draws, losses| HeadToHead { wins, draws, losses };
        assert_eq!(pairings.results[0], [h(0, 0, 0), h(1, 1, 1), h(1, 0, 0)]);
        assert_eq!(pairings.results[1], [h(1, 1, 1), h(0, 0, 0), h(0, 0, 1)]);
        assert_eq!(pairings.results[2], [h(0, 0, 1), h(1, 0, 0), h(0, 0, 0)]);
        assert_eq!(pairings.tournament_id, tournament.id);
        let empty = Pairings::compute(&tournament, &[]);
        assert!(empty.results.iter().flatten().all(|cell| *cell == HeadToHead::default()));
    }

    #[test]
    fn n_player_matches_ignore_filler_seats_in_ratings_but_count_them_in_points() {
        let tournament = tournament("vindinium", &["a", "b"]);
        let matches = vec![vec![seat(Some(0), 9, 1), seat(Some(1), 5, 2), seat(None, 5, 2), seat(None, 0, 4)]];
        let standings = Standings::compute(&tournament, Progress::default(), &matches);
        assert_eq!(standings.method, RatingMethod::WengLin);
        let b = standings.rows.iter().find(|row| row.bot == "b").expect("b");
        assert_eq!((b.losses, b.points), (1, 1.5), "beat the last filler, tied the other");
        let expected = ratings::weng_lin(2, &[vec![(0, 1), (1, 2)]]);
        assert_eq!(standings.rows[0].rating, expected[0]);
    }
}
