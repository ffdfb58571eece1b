//! The SPRT run many times against planted strengths, measuring its error rates and its length:
//! the sequential test of `farm_coordinator::sequential_test` as a farm runs it, on outcomes drawn
//! from models whose true difference is known.
//!
//! - [`TwoPlayerModel`]: two bots playing pairs of games, the same opening with the sides swapped
//!   (pentanomial counts); [`simulate_two_player`].
//! - [`PairedModel`]: paired N-player matches with planted strengths (trinomial counts);
//!   [`simulate_paired`].
//! - [`SimConfig`]: the test and how it is run; [`SimRow`]: what many runs came to.
//!
//! Pure (no IO, no clock) and deterministic: the simulators take a seed.

use farm_coordinator::sequential_test::{
    Counts, ELO_LIMIT, EloModel, ExactElo, Probabilities, SprtParamError, SprtParams, Verdict, logistic_score, status,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The outcomes a [`PairedModel`]'s true paired Elo is measured on.
pub const TRUTH_PAIRS: u32 = 200_000;
/// The random stream of that measurement: the runs use streams 0, 1, 2, …, so it is never theirs.
const TRUTH_STREAM: u64 = u64::MAX;
/// At most this many seats in a [`PairedModel`]: each simulated pair costs O(seats).
pub const MAX_SEATS: u32 = 64;
/// At most this many runs in one simulation: the run lengths are kept to find their 95th percentile.
pub const MAX_RUNS: u32 = 10_000_000;
/// At most this many games per run, so a simulation that never decides still ends.
pub const MAX_GAMES: u64 = 1_000_000_000;

/// Two bots playing pairs of games: the same opening twice, the sides swapped.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TwoPlayerModel {
    /// The candidate's logistic Elo advantage over the baseline in a balanced opening, within ±1000.
    pub elo: f64,
    /// The draw probability between equal players, in [0, 1]. At expected score s a game is drawn
    /// with probability `draw_ratio`·2·min(s, 1−s), won with s minus half that: the expected score
    /// stays s and no probability goes negative, however lopsided the game.
    pub draw_ratio: f64,
    /// Elo points every opening gives one side, within [0, 1000]: in each pair the candidate plays
    /// once at `elo + opening_bias` and once at `elo − opening_bias`. That makes the two games of a
    /// pair negatively correlated (which side an opening favours is a coin toss, and whoever it
    /// favours in one game it disfavours in the other), so a pair's score varies less than two
    /// independent games': the reason for counting pairs (pentanomial) rather than games.
    pub opening_bias: f64,
}

impl TwoPlayerModel {
    /// Checks the ranges of the three settings.
    pub fn check(&self) -> Result<(), SimError> {
        check_setting("elo", self.elo, -ELO_LIMIT, ELO_LIMIT, "within ±1000")?;
        check_setting("draw_ratio", self.draw_ratio, 0.0, 1.0, "within [0, 1]")?;
        check_setting("opening_bias", self.opening_bias, 0.0, ELO_LIMIT, "within [0, 1000]")
    }

    /// The exact probability of each pentanomial bin per pair.
    pub fn pair_probabilities(&self) -> [f64; 5] {
        let [favoured, unfavoured] = self.game_probabilities();
        let mut pair = [0.0; 5];
        for (i, f) in favoured.iter().enumerate() {
            for (j, u) in unfavoured.iter().enumerate() {
                pair[i + j] += f * u;
            }
        }
        pair
    }

    /// [loss, draw, win] probabilities of the pair's game the opening favours the candidate in, and
    /// of the other.
    fn game_probabilities(&self) -> [[f64; 3]; 2] {
        [self.elo + self.opening_bias, self.elo - self.opening_bias].map(|elo| {
            let s = logistic_score(elo);
            let draw = self.draw_ratio * 2.0 * s.min(1.0 - s);
            [1.0 - s - draw / 2.0, draw, s - draw / 2.0]
        })
    }

    /// The exact true Elo and normalized Elo per game (equal to `elo` without opening bias; with it,
    /// slightly different, as the logistic curve is not linear).
    pub fn truth(&self) -> ExactElo {
        Probabilities::Pentanomial(self.pair_probabilities()).elo()
    }

    /// The model whose [`Self::truth`] is `target` on the scale `scale`, found by bisection on `elo`.
    pub fn calibrated(scale: EloModel, target: f64, draw_ratio: f64, opening_bias: f64) -> Result<Self, SimError> {
        let model = |elo: f64| Self { elo, draw_ratio, opening_bias };
        let truth = |elo: f64| {
            let truth = model(elo).truth();
            match scale {
                EloModel::Logistic => truth.elo,
                EloModel::Normalized => truth.normalized_elo,
            }
        };
        model(0.0).check()?;
        let (mut lo, mut hi) = (-ELO_LIMIT, ELO_LIMIT);
        if !(truth(lo) <= target && target <= truth(hi)) {
            return Err(SimError::Unreachable { target });
        }
        while hi - lo > 1e-12 * ELO_LIMIT {
            let mid = lo + (hi - lo) / 2.0;
            if truth(mid) < target { lo = mid } else { hi = mid }
        }
        Ok(model(lo + (hi - lo) / 2.0))
    }
}

/// Paired N-player matches with planted strengths: the same match (seed, seats, opponents) played
/// once with the candidate and once with the baseline in the tested seat.
///
/// Each match gives each seat a performance: its bot's strength, plus the seat's noise for this
/// seed (the map, the spawn point: the same in both matches of a pair, which is what pairing
/// cancels), plus noise of its own. Seats rank by performance, higher first; equal performances share
/// a rank. The baseline's strength is 0, the candidate's `strength_gap`, and the opponents' are drawn
/// afresh for each pair. Seats are exchangeable, so the tested seat is seat 0 throughout.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairedModel {
    /// Seats per match, the tested one included: 2 to [`MAX_SEATS`].
    pub seats: u32,
    /// d: the candidate's strength minus the baseline's, in performance units, within ±1000.
    pub strength_gap: f64,
    /// Standard deviation of the opponents' strengths around the baseline's, in [0, 1000].
    pub opponent_spread: f64,
    /// Standard deviation of each seat's noise for a seed, shared by both matches of a pair.
    pub seed_noise: f64,
    /// Standard deviation of each seat's noise in one match.
    pub match_noise: f64,
    /// Performances are rounded down to multiples of this before ranking, so that ties happen
    /// (as in games scored in whole points); 0 never rounds.
    pub resolution: f64,
}

impl PairedModel {
    /// Checks the ranges of the settings.
    pub fn check(&self) -> Result<(), SimError> {
        let seats = f64::from(self.seats);
        check_setting("seats", seats, 2.0, f64::from(MAX_SEATS), "from 2 to 64")?;
        check_setting("strength_gap", self.strength_gap, -ELO_LIMIT, ELO_LIMIT, "within ±1000")?;
        for (key, value) in [
            ("opponent_spread", self.opponent_spread),
            ("seed_noise", self.seed_noise),
            ("match_noise", self.match_noise),
            ("resolution", self.resolution),
        ] {
            check_setting(key, value, 0.0, ELO_LIMIT, "within [0, 1000]")?;
        }
        Ok(())
    }

    /// The true paired Elo and normalized Elo of this model, measured on `pairs` simulated pairs
    /// (at least one) from `seed`.
    ///
    /// Each pair counts twice, as played and mirrored (each bot given the other match's noise),
    /// which has the same distribution: antithetic sampling, which makes the truth at
    /// `strength_gap` = 0 exactly even, as it is, and the sampling error near it small. The same
    /// seed draws the same noise whatever `strength_gap`, so the result never falls as the gap grows.
    pub fn truth(&self, pairs: u32, seed: u64) -> ExactElo {
        let mut source = Source::new(seed, TRUTH_STREAM);
        let (mut counts, pairs) = ([0u64; 3], pairs.max(1));
        for _ in 0..pairs {
            for outcome in self.outcomes(&mut source) {
                counts[outcome] += 1;
            }
        }
        let total = 2.0 * f64::from(pairs);
        Probabilities::Trinomial(counts.map(|c| c as f64 / total)).elo()
    }

    /// One pair, as played and mirrored: 0 if the candidate ranked worse than the baseline, 1
    /// equal, 2 better.
    fn outcomes(&self, source: &mut Source) -> [usize; 2] {
        let round = |x: f64| if self.resolution > 0.0 { (x / self.resolution).floor() } else { x };
        // The tested seat's noise in each match; its seed noise is common to both.
        let seed_noise = self.seed_noise * source.normal();
        let noise = [self.match_noise * source.normal(), self.match_noise * source.normal()];
        let candidate = noise.map(|e| round(self.strength_gap + seed_noise + e));
        let baseline = noise.map(|e| round(seed_noise + e));
        // An opponent's strength and its seat's seed noise are fixed for the pair: one normal.
        let fixed_spread = self.opponent_spread.hypot(self.seed_noise);
        // Seats above the candidate and the baseline, as played (match 0 and match 1) and mirrored.
        let (mut played, mut mirrored) = ([0u32; 2], [0u32; 2]);
        for _ in 1..self.seats {
            let fixed = fixed_spread * source.normal();
            let opponent =
                [round(fixed + self.match_noise * source.normal()), round(fixed + self.match_noise * source.normal())];
            played[0] += u32::from(opponent[0] > candidate[0]);
            played[1] += u32::from(opponent[1] > baseline[1]);
            mirrored[0] += u32::from(opponent[1] > candidate[1]);
            mirrored[1] += u32::from(opponent[0] > baseline[0]);
        }
        // Fewer seats above means a better rank.
        [played, mirrored].map(|[above_candidate, above_baseline]| match above_candidate.cmp(&above_baseline) {
            std::cmp::Ordering::Greater => 0,
            std::cmp::Ordering::Equal => 1,
            std::cmp::Ordering::Less => 2,
        })
    }
}

/// How a simulated SPRT is run, the same for both simulators.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// The test.
    pub params: SprtParams,
    /// Independent runs of the test: 1 to [`MAX_RUNS`].
    pub runs: u32,
    /// A run with no verdict after this many games (two per outcome) is truncated: 2 to [`MAX_GAMES`].
    pub max_games: u64,
    /// The LLR is checked after every this many outcomes, as a farm updates its test once per batch
    /// of results; 1 checks after each. Checking less often lowers the error rates a little (the LLR
    /// overshoots the bounds) and costs a few games.
    pub check_every: u32,
    /// The seed: run `i` draws from stream `i` of ChaCha8 with this seed, so a run's course does not
    /// depend on how many runs there are, and the true paired Elo from a stream of its own.
    pub seed: u64,
}

impl SimConfig {
    /// Checks the test's parameters and the ranges of the settings.
    pub fn check(&self) -> Result<(), SimError> {
        self.params.check().map_err(SimError::Params)?;
        check_setting("runs", f64::from(self.runs), 1.0, f64::from(MAX_RUNS), "from 1 to 10000000")?;
        check_setting("max_games", self.max_games as f64, 2.0, MAX_GAMES as f64, "from 2 to 10^9")?;
        check_setting("check_every", f64::from(self.check_every), 1.0, f64::MAX, "at least 1")
    }
}

/// The result of many runs of a test against one model.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimRow {
    /// The model's input: [`TwoPlayerModel::elo`] or [`PairedModel::strength_gap`].
    pub planted: f64,
    /// The true differences the test measures (exact for two players, from [`TRUTH_PAIRS`] pairs
    /// for N players).
    pub truth: ExactElo,
    /// Runs made.
    pub runs: u32,
    /// Fraction of runs that accepted H1.
    pub accepted_h1: f64,
    /// Fraction of runs that accepted H0.
    pub accepted_h0: f64,
    /// Fraction of runs that reached `max_games` without a verdict.
    pub truncated: f64,
    /// Mean games per run (two per outcome: a pair of games, or a pair of N-player matches).
    pub mean_games: f64,
    /// 95th percentile of the games per run (nearest rank).
    pub p95_games: u64,
}

/// A simulation setting out of range, or a truth no model reaches.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The test's parameters are out of range.
    #[error("{0}")]
    Params(#[source] SprtParamError),
    /// A model or run setting is out of range.
    #[error("`{key}` = {value} must be {expected}")]
    Setting {
        /// The setting's key.
        key: &'static str,
        /// The value given.
        value: f64,
        /// What it must be.
        expected: &'static str,
    },
    /// No planted `elo` within ±1000 gives this true Elo.
    #[error("no planted Elo within ±{ELO_LIMIT} has a true Elo of {target}")]
    Unreachable {
        /// The true Elo asked for.
        target: f64,
    },
}

/// Err unless `value` is within [min, max] (NaN is not).
fn check_setting(key: &'static str, value: f64, min: f64, max: f64, expected: &'static str) -> Result<(), SimError> {
    if value >= min && value <= max { Ok(()) } else { Err(SimError::Setting { key, value, expected }) }
}

/// Runs the test `config.runs` times on pairs of two-player games under `model`, each run to a
/// verdict or `config.max_games`. Every game is drawn on its own: the candidate's result at
/// `elo + opening_bias`, then at `elo − opening_bias` (their order does not matter to a pair).
pub fn simulate_two_player(model: &TwoPlayerModel, config: &SimConfig) -> Result<SimRow, SimError> {
    model.check()?;
    config.check()?;
    let games = model.game_probabilities();
    Ok(run_tests(config, Counts::Pentanomial, |source| play_pair(source, &games))?.row(model.elo, model.truth()))
}

/// One pair of games with these [loss, draw, win] probabilities: the candidate's half-points.
fn play_pair(source: &mut Source, games: &[[f64; 3]; 2]) -> usize {
    games
        .iter()
        .map(|p| {
            let u = source.uniform();
            usize::from(u >= p[0]) + usize::from(u >= p[0] + p[1])
        })
        .sum()
}

/// Runs the test `config.runs` times on paired N-player matches under `model`, each run to a
/// verdict or `config.max_games`; the row's truth is measured on [`TRUTH_PAIRS`] pairs.
pub fn simulate_paired(model: &PairedModel, config: &SimConfig) -> Result<SimRow, SimError> {
    model.check()?;
    config.check()?;
    Ok(run_tests(config, Counts::Trinomial, |source| model.outcomes(source)[0])?
        .row(model.strength_gap, model.truth(TRUTH_PAIRS, config.seed)))
}

/// What the runs of one simulation came to.
struct Tally {
    runs: u32,
    accepted_h0: u32,
    accepted_h1: u32,
    /// Games per run, sorted.
    games: Vec<u64>,
}

impl Tally {
    fn row(&self, planted: f64, truth: ExactElo) -> SimRow {
        let runs = f64::from(self.runs);
        let decided = self.accepted_h0 + self.accepted_h1;
        // Nearest rank: the smallest length that at least 95% of the runs do not exceed.
        let rank = (0.95 * runs).ceil() as usize;
        SimRow {
            planted,
            truth,
            runs: self.runs,
            accepted_h1: f64::from(self.accepted_h1) / runs,
            accepted_h0: f64::from(self.accepted_h0) / runs,
            truncated: f64::from(self.runs - decided) / runs,
            mean_games: self.games.iter().map(|&g| g as f64).sum::<f64>() / runs,
            p95_games: self.games.get(rank.saturating_sub(1)).copied().unwrap_or(0),
        }
    }
}

/// The runs of one simulation: each draws outcomes (bin indices below `K`) from `outcome` with a
/// source of its own, checking the test's [`status`] of the bins as `counts` every `check_every`
/// outcomes, to a verdict or the cap.
fn run_tests<const K: usize>(
    config: &SimConfig,
    counts: fn([u64; K]) -> Counts,
    mut outcome: impl FnMut(&mut Source) -> usize,
) -> Result<Tally, SimError> {
    let max_outcomes = config.max_games / 2;
    let mut tally = Tally { runs: config.runs, accepted_h0: 0, accepted_h1: 0, games: Vec::new() };
    for run in 0..config.runs {
        let mut source = Source::new(config.seed, u64::from(run));
        let mut bins = [0u64; K];
        let mut played = 0;
        while played < max_outcomes {
            let batch = u64::from(config.check_every).min(max_outcomes - played);
            for _ in 0..batch {
                bins[outcome(&mut source)] += 1;
            }
            played += batch;
            match status(&config.params, &counts(bins)).map_err(SimError::Params)?.verdict {
                Some(Verdict::H0) => tally.accepted_h0 += 1,
                Some(Verdict::H1) => tally.accepted_h1 += 1,
                None => continue,
            }
            break;
        }
        tally.games.push(2 * played);
    }
    tally.games.sort_unstable();
    Ok(tally)
}

/// Random numbers for one run: a ChaCha8 stream, and standard normals by Marsaglia's polar method,
/// which makes them in pairs (the second kept for the next call).
struct Source {
    rng: ChaCha8Rng,
    spare: Option<f64>,
}

impl Source {
    fn new(seed: u64, stream: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Self { rng, spare: None }
    }

    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        self.rng.random()
    }

    /// Standard normal.
    fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        loop {
            let x = 2.0 * self.uniform() - 1.0;
            let y = 2.0 * self.uniform() - 1.0;
            let r2 = x * x + y * y;
            if r2 > 0.0 && r2 < 1.0 {
                let scale = (-2.0 * r2.ln() / r2).sqrt();
                self.spare = Some(y * scale);
                return x * scale;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(model: EloModel, elo0: f64, elo1: f64) -> SprtParams {
        SprtParams { elo0, elo1, alpha: 0.05, beta: 0.05, model }
    }

    fn assert_close(actual: f64, expected: f64, relative: f64, what: &str) {
        let error = (actual - expected).abs() / expected.abs().max(1e-300);
        assert!(error <= relative, "{what}: {actual} vs {expected} (relative error {error:e})");
    }

    /// The variance of the score of a distribution `p` over bins scoring 0, 1/(K−1), …, 1.
    fn score_variance(p: &[f64]) -> f64 {
        let score = |i: usize| i as f64 / (p.len() - 1) as f64;
        let mean: f64 = p.iter().enumerate().map(|(i, q)| q * score(i)).sum();
        p.iter().enumerate().map(|(i, q)| q * (score(i) - mean).powi(2)).sum()
    }

    #[test]
    fn pair_probabilities_are_the_simulated_games() {
        let model = TwoPlayerModel { elo: 30.0, draw_ratio: 0.4, opening_bias: 150.0 };
        let exact = model.pair_probabilities();
        assert_close(exact.iter().sum(), 1.0, 1e-15, "total");
        // The games the simulator plays, counted by pair.
        let games = model.game_probabilities();
        let mut source = Source::new(3, 0);
        let mut counts = [0u32; 5];
        let pairs = 100_000;
        for _ in 0..pairs {
            counts[play_pair(&mut source, &games)] += 1;
        }
        for (i, &count) in counts.iter().enumerate() {
            let expected = exact[i] * f64::from(pairs);
            // Four standard deviations of a binomial count.
            assert!(
                (f64::from(count) - expected).abs() < 4.0 * expected.sqrt() + 1.0,
                "bin {i}: {count} vs {expected}"
            );
        }
        // The opening bias makes a pair vary less than two independent games.
        let pair_var = score_variance(&exact);
        let [single, _] = TwoPlayerModel { opening_bias: 0.0, ..model }.game_probabilities();
        let game_var = score_variance(&single);
        assert!(pair_var < game_var / 2.0, "{pair_var} vs {game_var}");
    }

    #[test]
    fn calibration_hits_its_target() {
        for (scale, target) in [(EloModel::Logistic, -7.5), (EloModel::Normalized, 5.0), (EloModel::Normalized, 0.0)] {
            let model = TwoPlayerModel::calibrated(scale, target, 0.3, 80.0).expect("reachable");
            let truth = model.truth();
            let value = if scale == EloModel::Logistic { truth.elo } else { truth.normalized_elo };
            assert!((value - target).abs() < 1e-9, "{scale:?} {target}: {value}");
        }
        assert_eq!(
            TwoPlayerModel::calibrated(EloModel::Logistic, 1e6, 0.3, 0.0),
            Err(SimError::Unreachable { target: 1e6 })
        );
        assert!(matches!(
            TwoPlayerModel::calibrated(EloModel::Logistic, 0.0, 1.5, 0.0),
            Err(SimError::Setting { key: "draw_ratio", .. })
        ));
        // Without bias the truth is the planted Elo.
        assert_close(TwoPlayerModel { elo: 12.0, draw_ratio: 0.5, opening_bias: 0.0 }.truth().elo, 12.0, 1e-12, "elo");
    }

    /// Asserts the error rates are within `alpha` and `beta` plus three standard errors.
    fn assert_error_rates(at_elo0: &SimRow, at_elo1: &SimRow, params: &SprtParams) {
        let runs = f64::from(at_elo0.runs);
        let limit = |rate: f64| rate + 3.0 * (rate * (1.0 - rate) / runs).sqrt();
        assert!(at_elo0.accepted_h1 <= limit(params.alpha), "false positives: {at_elo0:?}");
        assert!(at_elo1.accepted_h0 <= limit(params.beta), "false negatives: {at_elo1:?}");
        // Big effects: nothing should hit the cap.
        assert_eq!(at_elo0.truncated + at_elo1.truncated, 0.0, "{at_elo0:?} {at_elo1:?}");
    }

    #[test]
    fn two_player_error_rates_are_within_alpha_and_beta() {
        for model in [EloModel::Logistic, EloModel::Normalized] {
            let params = params(model, 0.0, 20.0);
            let config = SimConfig { params, runs: 300, max_games: 200_000, check_every: 4, seed: 11 };
            let row = |elo: f64| {
                let model = TwoPlayerModel::calibrated(model, elo, 0.3, 100.0).expect("reachable");
                simulate_two_player(&model, &config).expect("valid")
            };
            assert_error_rates(&row(params.elo0), &row(params.elo1), &params);
        }
    }

    #[test]
    fn paired_error_rates_are_within_alpha_and_beta() {
        let base = PairedModel {
            seats: 4,
            strength_gap: 0.0,
            opponent_spread: 1.0,
            seed_noise: 0.5,
            match_noise: 1.0,
            resolution: 0.0,
        };
        let stronger = PairedModel { strength_gap: 0.25, ..base };
        for model in [EloModel::Logistic, EloModel::Normalized] {
            let config =
                SimConfig { params: params(model, 0.0, 1.0), runs: 300, max_games: 200_000, check_every: 4, seed: 5 };
            // H0 at the even model, exactly 0 by symmetry; H1 at the stronger one's measured truth.
            let truth = stronger.truth(TRUTH_PAIRS, config.seed);
            let elo1 = if model == EloModel::Logistic { truth.elo } else { truth.normalized_elo };
            let config = SimConfig { params: SprtParams { elo1, ..config.params }, ..config };
            let at_elo0 = simulate_paired(&base, &config).expect("valid");
            assert_eq!(at_elo0.truth, ExactElo { elo: 0.0, normalized_elo: 0.0 });
            assert_error_rates(&at_elo0, &simulate_paired(&stronger, &config).expect("valid"), &config.params);
        }
    }

    #[test]
    fn simulations_are_deterministic() {
        let model = TwoPlayerModel { elo: 10.0, draw_ratio: 0.3, opening_bias: 50.0 };
        let config = SimConfig {
            params: params(EloModel::Logistic, 0.0, 20.0),
            runs: 20,
            max_games: 4000,
            check_every: 8,
            seed: 1,
        };
        let row = simulate_two_player(&model, &config).expect("valid");
        assert_eq!(simulate_two_player(&model, &config), Ok(row));
        assert_ne!(simulate_two_player(&model, &SimConfig { seed: 2, ..config }), Ok(row));
        // Run i is the same run whatever the number of runs: the first 10 of 20 are the 10.
        let ten = simulate_two_player(&model, &SimConfig { runs: 10, ..config }).expect("valid");
        assert!(ten.accepted_h1 * 10.0 <= row.accepted_h1 * 20.0 && ten.accepted_h0 * 10.0 <= row.accepted_h0 * 20.0);
        let paired = PairedModel {
            seats: 3,
            strength_gap: 0.1,
            opponent_spread: 1.0,
            seed_noise: 0.3,
            match_noise: 1.0,
            resolution: 0.5,
        };
        let config = SimConfig { max_games: 600, ..config };
        assert_eq!(simulate_paired(&paired, &config), simulate_paired(&paired, &config));
    }

    #[test]
    fn paired_truth_grows_with_the_gap_and_rounding_makes_ties() {
        let base = PairedModel {
            seats: 4,
            strength_gap: 0.0,
            opponent_spread: 1.0,
            seed_noise: 0.5,
            match_noise: 1.0,
            resolution: 0.0,
        };
        let mut last = f64::NEG_INFINITY;
        for gap in [-0.2, 0.0, 0.05, 0.2] {
            let truth = PairedModel { strength_gap: gap, ..base }.truth(20_000, 9);
            assert!(truth.elo > last, "{gap}: {truth:?}");
            assert!(if gap == 0.0 { truth.elo == 0.0 } else { truth.elo.signum() == gap.signum() }, "{gap}: {truth:?}");
            last = truth.elo;
        }
        // Equal ranks without rounding come only from equal numbers of seats above; rounding to
        // whole units adds ties in performance, so more pairs come out equal.
        let equal = |model: PairedModel| {
            let mut source = Source::new(4, 0);
            (0..20_000).filter(|_| model.outcomes(&mut source)[0] == 1).count()
        };
        assert!(equal(PairedModel { resolution: 1.0, ..base }) > equal(base));
    }

    #[test]
    fn simulator_settings_are_checked() {
        let model = TwoPlayerModel { elo: 0.0, draw_ratio: 0.3, opening_bias: 0.0 };
        let config = SimConfig {
            params: params(EloModel::Logistic, 0.0, 5.0),
            runs: 1,
            max_games: 100,
            check_every: 1,
            seed: 0,
        };
        let setting = |result: Result<SimRow, SimError>| match result {
            Err(SimError::Setting { key, .. }) => key,
            other => panic!("{other:?}"),
        };
        assert_eq!(setting(simulate_two_player(&model, &SimConfig { runs: 0, ..config })), "runs");
        assert_eq!(setting(simulate_two_player(&model, &SimConfig { max_games: 1, ..config })), "max_games");
        assert_eq!(setting(simulate_two_player(&model, &SimConfig { check_every: 0, ..config })), "check_every");
        assert_eq!(
            setting(simulate_two_player(&TwoPlayerModel { opening_bias: -1.0, ..model }, &config)),
            "opening_bias"
        );
        let bad_params = SimConfig { params: SprtParams { alpha: 0.0, ..config.params }, ..config };
        assert!(matches!(simulate_two_player(&model, &bad_params), Err(SimError::Params(_))));
        let paired = PairedModel {
            seats: 1,
            strength_gap: 0.0,
            opponent_spread: 1.0,
            seed_noise: 0.0,
            match_noise: 1.0,
            resolution: 0.0,
        };
        assert_eq!(setting(simulate_paired(&paired, &config)), "seats");
        assert_eq!(
            setting(simulate_paired(&PairedModel { seats: 2, match_noise: f64::NAN, ..paired }, &config)),
            "match_noise"
        );
        // A cap of two games: every run plays one pair and is truncated.
        let row = simulate_two_player(&model, &SimConfig { max_games: 2, runs: 3, ..config }).expect("valid");
        assert_eq!((row.truncated, row.mean_games, row.p95_games), (1.0, 2.0, 2));
    }
}
