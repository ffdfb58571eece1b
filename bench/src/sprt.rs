//! The SPRT's error rates and lengths, simulated ([`simulator`]): for true differences
//! around the hypotheses, how often the test accepts H1 and H0 and how many games it
//! takes. Two-player pairs (pentanomial), and paired 4-player matches with planted
//! strength gaps (trinomial), whose true paired Elo is measured alongside.

pub mod simulator;

use anyhow::Result;
use farm_coordinator::sequential_test::{EloModel, SprtParams};

use self::simulator::{PairedModel, SimConfig, SimRow, TwoPlayerModel, simulate_paired, simulate_two_player};
use crate::report::Figures;

/// fishtest's common bounds: normalized Elo 0 against 5, both error rates 5%.
const TWO_PLAYER: SprtParams =
    SprtParams { elo0: 0.0, elo1: 5.0, alpha: 0.05, beta: 0.05, model: EloModel::Normalized };
/// The same in the paired N-player test, where a pair's outcome counts as one game.
/// (The paired 4-player gaps below are near these hypotheses: 0.03 is about nElo 5.)
const PAIRED: SprtParams = SprtParams { elo0: 0.0, elo1: 5.0, alpha: 0.05, beta: 0.05, model: EloModel::Normalized };
/// Runs end without a verdict after this many games.
const MAX_GAMES: u64 = 200_000;
/// The ratio is checked every this many outcomes, as a farm checks once per batch of
/// results (checking after every pair costs eight times the time, for rates a little
/// higher).
const CHECK_EVERY: u32 = 8;

/// A row's figures on one line. (Rows are keyed by their index: figure paths split at dots.)
fn shown(row: &SimRow) -> String {
    format!(
        "true nElo {:.2}: H1 {:.3}, H0 {:.3}, truncated {:.3}; games mean {:.0}, p95 {}",
        row.truth.normalized_elo, row.accepted_h1, row.accepted_h0, row.truncated, row.mean_games, row.p95_games
    )
}

/// Simulates `runs` tests at each difference.
pub fn run(runs: u32) -> Result<Figures> {
    let mut figures = Figures::default();
    let config = |params: SprtParams, seed: u64| SimConfig {
        params,
        runs,
        max_games: MAX_GAMES,
        check_every: CHECK_EVERY,
        seed,
    };
    // Draws 30% of the time between equals, and openings worth 100 Elo to one side: a pair's
    // games are correlated, as in real engine testing.
    for (index, target) in [-2.5, 0.0, 2.5, 5.0, 7.5].into_iter().enumerate() {
        let model = TwoPlayerModel::calibrated(EloModel::Normalized, target, 0.3, 100.0)?;
        let row = simulate_two_player(&model, &config(TWO_PLAYER, index as u64))?;
        let line = shown(&row);
        figures.put(&format!("two_player.row_{index}"), row, line);
    }
    // Four seats; opponents spread like the field; a seed's noise (the map, the spawn),
    // half a match's own, shared by both matches of a pair.
    for (index, gap) in [-0.015, 0.0, 0.015, 0.03, 0.045].into_iter().enumerate() {
        let model = PairedModel {
            seats: 4,
            strength_gap: gap,
            opponent_spread: 1.0,
            seed_noise: 0.5,
            match_noise: 1.0,
            resolution: 0.0,
        };
        let row = simulate_paired(&model, &config(PAIRED, 100 + index as u64))?;
        let line = format!("gap {gap}: {}", shown(&row));
        figures.put(&format!("paired_4_seats.row_{index}"), row, line);
    }
    Ok(figures)
}
