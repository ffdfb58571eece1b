//! Sequential probability ratio tests (SPRT): is a candidate bot stronger than its baseline?
//!
//! The test is the generalised SPRT of fishtest (Stockfish's testing farm), also used by OpenBench.
//! As results come in, the log-likelihood ratio (LLR) of H1, "the candidate is `elo1` stronger",
//! against H0, "it is `elo0` stronger", is compared with Wald's bounds: above the upper one the test
//! accepts H1, below the lower one H0, in between it goes on. Outcomes are *paired*, so that the luck
//! of an opening or a map cancels out:
//!
//! - [`Counts::Pentanomial`]: two-player games in pairs, the same opening with the sides swapped.
//!   Bin `i` counts the pairs where the candidate scored `i` half-points in all, so a pair scores
//!   `i/4` per game.
//! - [`Counts::Trinomial`]: an N-player match played twice with the same seed, seats and opponents,
//!   once with the candidate and once with the baseline in the tested seat. Bin 0 counts the pairs
//!   where the candidate ranked worse than the baseline did, bin 1 equal, bin 2 better (scores 0,
//!   ½, 1).
//!
//! # Layout
//! - [`SprtParams`], [`EloModel`], [`SprtParamError`]: the hypotheses and the error rates.
//! - [`status`]: the LLR, the bounds, the [`Verdict`] if any, and the Elo and normalized Elo
//!   [`Estimate`]s of a [`Counts`].
//! - [`simulate_two_player`] and [`simulate_paired`]: the test run many times against planted
//!   strengths ([`TwoPlayerModel`], [`PairedModel`]), measuring its error rates and its length
//!   ([`SimRow`]).
//!
//! Everything is pure (no IO, no clock) and deterministic; the simulators take a seed. Every output
//! is finite, whatever the input, because it ends up in JSON.
//!
//! # Sources
//! The statistics are fishtest's, read for the mathematics and written anew here (paths in
//! `official-stockfish/fishtest`):
//! - `server/fishtest/stats/LLRcalc.py`: `regularize` and `results_to_pdf` (empty bins count
//!   1e-3), `secular`, `MLE_expected`, `MLE_t_value`, `LLR_logistic`, `LLR_normalized`,
//!   `LLR_alt2`;
//! - `server/fishtest/stats/stat_util.py`: `SPRT` (Wald's bounds), `update_SPRT` (strict
//!   comparisons with them), `get_elo` (the Elo interval);
//! - `server/fishtest/http/template_helpers.py`: `t_conf` and `_nelo_pentanomial_details` (the
//!   normalized Elo interval);
//! - Michel Van den Bergh's notes behind them: "Maximum likelihood estimation for multinomial
//!   distributions with given expectation value" (<https://www.cantate.be/Fishtest/support_MLE_multinomial.pdf>,
//!   Proposition 1.1), "Normalized Elo, practical" (<https://www.cantate.be/Fishtest/normalized_elo_practical.pdf>,
//!   sections 4.1 and 4.2) and "GSPRT approximation" (<https://www.cantate.be/Fishtest/GSPRT_approximation.pdf>).
//!
//! Not taken over: fishtest's dynamic overshoot correction of the bounds and its median-unbiased
//! estimate for a stopped test (`sprt.py`). The [`Estimate`]s here are the plain ones, which a test
//! that stopped early biases away from zero.

use std::f64::consts::LN_10;
use std::fmt;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Hypotheses must lie within ±1000 Elo: beyond, the logistic expected score is within 0.32% of 0
/// or 1, and a normalized t-value of 2.9 per game is no bot test anyone runs.
const ELO_LIMIT: f64 = 1000.0;
/// What an empty bin counts as, as in fishtest's `regularize`: the maximum-likelihood distributions
/// below need every bin positive, and 1e-3 outcomes change no real count's result visibly.
const REGULARIZER: f64 = 1e-3;
/// Normalized Elo per unit of t-value per game (fishtest's `nelo_divided_by_nt`): it makes nElo
/// equal logistic Elo for small differences between players who never draw.
const NELO_PER_T: f64 = 800.0 / LN_10;
/// Games a pentanomial outcome stands for: normalized Elo is per game, and fishtest's
/// `LLR_normalized` turns a per-game t-value into a per-pair one by multiplying by √2.
const PAIR_GAMES: f64 = 2.0;
/// Games a paired N-player outcome stands for: one, by our definition. It is one observation of
/// the candidate against the baseline, like one game of a trinomial (win, draw, loss) test.
const PAIRED_GAMES: f64 = 1.0;
/// The score the t-value is measured from: equal strength.
const EVEN: f64 = 0.5;
/// Scores are clamped to [1e-3, 1 − 1e-3] before they become Elo, as in fishtest's `elo`, so a
/// perfect score reads ±1199.8 Elo rather than infinity.
const SCORE_CLAMP: f64 = 1e-3;
/// The two-sided 95% quantile of the normal distribution.
const Z95: f64 = 1.959_963_984_540_054;
/// The t-value fixed point stops once no probability moves by more than this (fishtest's 1e-9).
const FIXED_POINT_TOLERANCE: f64 = 1e-9;
/// Fixed-point steps before giving up on a start. Fishtest stops after 10; a few inputs
/// (hundreds of thousands of outcomes in one bin) need about 20 to reach the tolerance.
const FIXED_POINT_STEPS: usize = 60;
/// A t-value MLE is accepted once its t-value is this close to the target (fishtest asserts 1e-5).
const T_TOLERANCE: f64 = 1e-6;
/// Attempts of the continuation in t before it gives up (each success doubles the next step, each
/// failure halves it).
const CONTINUATION_ATTEMPTS: usize = 200;
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

/// The scale of the hypotheses `elo0` and `elo1`.
///
/// In tournament files: `elo_model = "logistic"` or `elo_model = "normalized"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EloModel {
    /// Logistic Elo: the candidate's expected score per game is 1/(1+10^(−elo/400)). The test
    /// is on the mean score, whatever the spread of the outcomes.
    Logistic,
    /// Normalized Elo (nElo): (mean score − ½)/(standard deviation of the score) per game, times
    /// 800/ln 10. It measures how fast a difference can be detected, independent of the draw rate;
    /// for two-player pairs the per-game deviation is √2 times the per-pair one, as in fishtest, and
    /// a paired N-player outcome counts as one game.
    Normalized,
}

/// The hypotheses and error rates of one SPRT.
///
/// H0: the candidate is `elo0` stronger than the baseline; H1: it is `elo1` stronger. The test
/// accepts H1 when H0 is true with probability at most about `alpha`, and accepts H0 when H1 is true
/// with probability at most about `beta` (both also hold beyond the hypotheses: below `elo0` and
/// above `elo1` respectively).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SprtParams {
    /// The Elo difference of H0 (candidate minus baseline), in the units of `model`.
    pub elo0: f64,
    /// The Elo difference of H1, above `elo0`.
    pub elo1: f64,
    /// The bound on the false-positive rate (accepting H1 when H0 holds), in (0, 0.5].
    pub alpha: f64,
    /// The bound on the false-negative rate (accepting H0 when H1 holds), in (0, 0.5].
    pub beta: f64,
    /// The units of `elo0` and `elo1`.
    #[serde(rename = "elo_model")]
    pub model: EloModel,
}

impl SprtParams {
    /// Checks the ranges: `elo0` < `elo1`, both finite and within ±1000; `alpha` and `beta` in
    /// (0, 0.5]. The first problem found is returned, naming its key.
    pub fn check(&self) -> Result<(), SprtParamError> {
        for (key, value) in [("elo0", self.elo0), ("elo1", self.elo1)] {
            // Written so that NaN fails too.
            if !(value.abs() <= ELO_LIMIT) {
                return Err(SprtParamError::EloOutOfRange { key, value });
            }
        }
        if self.elo0 >= self.elo1 {
            return Err(SprtParamError::EloOrder { elo0: self.elo0, elo1: self.elo1 });
        }
        for (key, value) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(value > 0.0 && value <= 0.5) {
                return Err(SprtParamError::RateOutOfRange { key, value });
            }
        }
        Ok(())
    }

    /// Wald's bounds (lower, upper) = (ln(β/(1−α)), ln((1−β)/α)); finite once [`Self::check`] passed.
    fn bounds(&self) -> (f64, f64) {
        ((self.beta / (1.0 - self.alpha)).ln(), ((1.0 - self.beta) / self.alpha).ln())
    }

    /// The verdict at `llr`, with fishtest's strict comparisons: an LLR exactly on a bound goes on.
    fn verdict(&self, llr: f64) -> Option<Verdict> {
        let (lower, upper) = self.bounds();
        if llr < lower {
            Some(Verdict::H0)
        } else if llr > upper {
            Some(Verdict::H1)
        } else {
            None
        }
    }
}

/// An [`SprtParams`] key out of range.
#[derive(Debug, Clone, PartialEq)]
pub enum SprtParamError {
    /// `elo0` or `elo1` is NaN, infinite or beyond ±1000.
    EloOutOfRange {
        /// `"elo0"` or `"elo1"`.
        key: &'static str,
        /// The value given.
        value: f64,
    },
    /// `elo0` is not below `elo1`.
    EloOrder {
        /// The value of `elo0`.
        elo0: f64,
        /// The value of `elo1`.
        elo1: f64,
    },
    /// `alpha` or `beta` is outside (0, 0.5].
    RateOutOfRange {
        /// `"alpha"` or `"beta"`.
        key: &'static str,
        /// The value given.
        value: f64,
    },
}

impl SprtParamError {
    /// The key to fix (`elo1` when the two hypotheses are in the wrong order).
    pub fn key(&self) -> &'static str {
        match self {
            Self::EloOutOfRange { key, .. } | Self::RateOutOfRange { key, .. } => key,
            Self::EloOrder { .. } => "elo1",
        }
    }
}

impl fmt::Display for SprtParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EloOutOfRange { key, value } => {
                write!(f, "`{key}` = {value} must be a finite number within ±{ELO_LIMIT}")
            }
            Self::EloOrder { elo0, elo1 } => write!(f, "`elo1` = {elo1} must be above `elo0` = {elo0}"),
            Self::RateOutOfRange { key, value } => write!(f, "`{key}` = {value} must be in (0, 0.5]"),
        }
    }
}

impl std::error::Error for SprtParamError {}

/// Outcome counts of a test so far, worst outcome for the candidate first.
///
/// Serialised as `{"pentanomial": [ll, ld, dd+wl, dw, ww]}` or `{"trinomial": [worse, equal, better]}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Counts {
    /// Pairs of two-player games, the same opening with the sides swapped, by the candidate's
    /// half-points over the pair: 0 (lost both), 1 (a loss and a draw), 2 (two draws, or a win and
    /// a loss), 3 (a win and a draw), 4 (won both).
    Pentanomial([u64; 5]),
    /// Paired N-player matches by the candidate's rank compared with the baseline's in the same
    /// seat: 0 worse, 1 equal, 2 better.
    Trinomial([u64; 3]),
}

impl Counts {
    /// The number of outcomes (pairs), saturating at `u64::MAX`.
    pub fn outcomes(&self) -> u64 {
        let bins: &[u64] = match self {
            Self::Pentanomial(bins) => bins,
            Self::Trinomial(bins) => bins,
        };
        bins.iter().fold(0, |sum, &n| sum.saturating_add(n))
    }
}

/// How a test ended.
///
/// Serialised as `"accepted-h0"` (the candidate is not shown to be stronger: fishtest's "rejected",
/// the patch fails) and `"accepted-h1"` (it is `elo1` stronger or more: fishtest's "accepted").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Verdict {
    /// The LLR fell below the lower bound: H0 accepted.
    #[serde(rename = "accepted-h0")]
    H0,
    /// The LLR rose above the upper bound: H1 accepted.
    #[serde(rename = "accepted-h1")]
    H1,
}

/// An estimate with its 95% interval; `low` ≤ `value` ≤ `high`, all finite.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Estimate {
    /// The point estimate.
    pub value: f64,
    /// The lower end of the 95% interval.
    pub low: f64,
    /// The upper end of the 95% interval.
    pub high: f64,
}

impl Estimate {
    /// The estimate with every part pulled back to a finite number.
    fn finite(value: f64, low: f64, high: f64) -> Self {
        Self { value: finite(value), low: finite(low), high: finite(high) }
    }
}

/// Where a test stands.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SprtStatus {
    /// The log-likelihood ratio of H1 against H0 (0 before any outcome).
    pub llr: f64,
    /// Wald's lower bound, ln(β/(1−α)): below it the test accepts H0.
    pub lower: f64,
    /// Wald's upper bound, ln((1−β)/α): above it the test accepts H1.
    pub upper: f64,
    /// The verdict, once the LLR has left the bounds.
    pub verdict: Option<Verdict>,
    /// Logistic Elo of the candidate over the baseline, from the mean score; its interval comes from
    /// the standard error of the mean outcome (per pair, for pentanomial counts), as fishtest's
    /// `get_elo`. Scores are clamped to [0.001, 0.999] first, so it stays within ±1199.8.
    pub elo: Estimate,
    /// Normalized Elo, with the interval of fishtest's `t_conf` (the delta-method variance of a
    /// t-value, using the outcomes' skewness and kurtosis).
    pub normalized_elo: Estimate,
}

/// The state of a test with hypotheses `params` after `counts`.
///
/// The LLR is fishtest's generalised one: for each hypothesis, the maximum-likelihood distribution
/// over the bins whose mean score (logistic model) or t-value (normalized model) is that
/// hypothesis', then LLR = Σ nᵢ ln(p1ᵢ/p0ᵢ). Empty bins count 1e-3 outcomes, as in fishtest, except
/// that no outcomes at all give an LLR of exactly 0. So a single non-empty bin is evidence, as it
/// should be: after n pairs of draws and nothing else, a mean of ½ + δ needs about 2δ of the pairs
/// to have been won twice, none of which showed, and the LLR falls as about −2δn (−0.014 per pair
/// at `elo1` = 5 logistic Elo: H0 after some 200 pairs); n pairs won twice make any mean-½
/// distribution at most ½ likely per pair, and the LLR rises by about ln 2 per pair.
pub fn status(params: &SprtParams, counts: &Counts) -> Result<SprtStatus, SprtParamError> {
    params.check()?;
    let (llr, elo, normalized_elo) = match counts {
        Counts::Pentanomial(bins) => {
            let sample = Sample::new(bins, PAIR_GAMES);
            (sample.llr(params), sample.elo(), sample.normalized_elo())
        }
        Counts::Trinomial(bins) => {
            let sample = Sample::new(bins, PAIRED_GAMES);
            (sample.llr(params), sample.elo(), sample.normalized_elo())
        }
    };
    let (lower, upper) = params.bounds();
    Ok(SprtStatus { llr, lower, upper, verdict: params.verdict(llr), elo, normalized_elo })
}

/// Counts over `K` bins, bin `i` scoring `i/(K−1)`, regularised as fishtest's `results_to_pdf`:
/// the one code path behind both kinds of [`Counts`].
struct Sample<const K: usize> {
    /// The number of outcomes, empty bins counted as 1e-3.
    n: f64,
    /// Whether there were no outcomes at all.
    empty: bool,
    /// The empirical distribution, every bin positive.
    p: [f64; K],
    /// Games one outcome stands for, in normalized Elo.
    games_per_outcome: f64,
}

impl<const K: usize> Sample<K> {
    fn new(counts: &[u64; K], games_per_outcome: f64) -> Self {
        // u64 → f64 rounds above 2^53 but never overflows, and the sum is taken in f64 so it cannot.
        let regularised = counts.map(|c| if c == 0 { REGULARIZER } else { c as f64 });
        let n: f64 = regularised.iter().sum();
        Self { n, empty: counts.iter().all(|&c| c == 0), p: regularised.map(|c| c / n), games_per_outcome }
    }

    /// The t-value per outcome that a normalized Elo difference stands for.
    fn t_value(&self, nelo: f64) -> f64 {
        nelo / NELO_PER_T * self.games_per_outcome.sqrt()
    }

    /// The generalised log-likelihood ratio of `params.elo1` against `params.elo0`.
    fn llr(&self, params: &SprtParams) -> f64 {
        if self.empty {
            // No evidence: fishtest would give about 1e-3 from the regularised bins alone.
            return 0.0;
        }
        let v = scores::<K>();
        let mle = |elo: f64| match params.model {
            EloModel::Logistic => mle_mean(&v, &self.p, logistic_score(elo)),
            EloModel::Normalized => mle_t_value(&v, &self.p, self.t_value(elo)),
        };
        let exact = match (mle(params.elo0), mle(params.elo1)) {
            (Some(p0), Some(p1)) => Some(self.n * (0..K).map(|i| self.p[i] * (p1[i].ln() - p0[i].ln())).sum::<f64>()),
            _ => None,
        };
        // Every solver failure falls back on fishtest's Brownian approximation (`LLR_alt2`, the
        // one `sprt.py` uses for its estimates). The solvers only fail on extreme inputs (see
        // `mle_t_value`), where the two agree in sign.
        finite(exact.filter(|llr| llr.is_finite()).unwrap_or_else(|| self.llr_approximation(params)))
    }

    /// N (s1 − s0)(2μ − s0 − s1)/(2σ²), μ and σ² the sample's, s0 and s1 the hypotheses as scores
    /// (for normalized Elo: ½ + t·σ, as fishtest's `sprt.elo_to_score`).
    fn llr_approximation(&self, params: &SprtParams) -> f64 {
        let (mean, var) = moments(&scores::<K>(), &self.p);
        let score = |elo: f64| match params.model {
            EloModel::Logistic => logistic_score(elo),
            EloModel::Normalized => EVEN + self.t_value(elo) * var.sqrt(),
        };
        let (s0, s1) = (score(params.elo0), score(params.elo1));
        self.n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * var)
    }

    /// Logistic Elo from the mean score, the interval from the mean's standard error: `get_elo`,
    /// but reporting the interval's ends (the Elo of the mean's ends) rather than their half distance.
    fn elo(&self) -> Estimate {
        let (mean, var) = moments(&scores::<K>(), &self.p);
        let half = Z95 * (var / self.n).sqrt();
        Estimate::finite(logistic_elo(mean), logistic_elo(mean - half), logistic_elo(mean + half))
    }

    /// Normalized Elo with the interval of fishtest's `t_conf`: t ± z·sqrt((1 − t·skew + t²(kurt+2)/4)/n).
    fn normalized_elo(&self) -> Estimate {
        let v = scores::<K>();
        let (mean, var) = moments(&v, &self.p);
        let central = |power: i32| (0..K).map(|i| self.p[i] * (v[i] - mean).powi(power)).sum::<f64>();
        let (skewness, excess_kurtosis) = (central(3) / var.powf(1.5), central(4) / (var * var) - 3.0);
        let t = (mean - EVEN) / var.sqrt();
        // Clamped as fishtest does: rounding can take the variance a hair below zero.
        let var_t = (1.0 - t * skewness + 0.25 * t * t * (excess_kurtosis + 2.0)).max(0.0);
        let half = Z95 * (var_t / self.n).sqrt();
        let scale = NELO_PER_T / self.games_per_outcome.sqrt();
        Estimate::finite(scale * t, scale * (t - half), scale * (t + half))
    }
}

/// The score of each of `K` bins: i/(K−1).
fn scores<const K: usize>() -> [f64; K] {
    std::array::from_fn(|i| i as f64 / (K - 1) as f64)
}

/// Mean and variance of distribution `p` over scores `v`.
fn moments<const K: usize>(v: &[f64; K], p: &[f64; K]) -> (f64, f64) {
    let mean: f64 = (0..K).map(|i| p[i] * v[i]).sum();
    (mean, (0..K).map(|i| p[i] * (v[i] - mean).powi(2)).sum())
}

/// The expected score at a logistic Elo difference.
fn logistic_score(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// The logistic Elo difference of an expected score, clamped to [0.001, 0.999] as fishtest's `elo`.
fn logistic_elo(score: f64) -> f64 {
    // NaN (impossible from a regularised sample) would pass clamp unchanged; `finite` catches it.
    let score = score.clamp(SCORE_CLAMP, 1.0 - SCORE_CLAMP);
    -400.0 * (1.0 / score - 1.0).log10()
}

/// NaN becomes 0 and ±infinity the largest finite number, so no output ever breaks JSON.
fn finite(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(-f64::MAX, f64::MAX) }
}

/// The root of the secular equation Σ pᵢaᵢ/(1 + x·aᵢ) = 0 between its poles −1/max a and −1/min a,
/// where the left side falls from +∞ to −∞, so there is exactly one (fishtest's `secular`). None
/// when the a's do not straddle zero, as then there is no root.
///
/// Safeguarded Newton: a Newton step when it lands inside the bracket, else bisection, until the
/// bracket cannot shrink. Fishtest uses Brent's method to the same end.
fn secular<const K: usize>(p: &[f64; K], a: &[f64; K]) -> Option<f64> {
    let (a_min, a_max) = a.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    if !(a_min < 0.0 && a_max > 0.0) {
        return None;
    }
    let (mut lo, mut hi) = (-1.0 / a_max, -1.0 / a_min);
    // 0 lies strictly between the poles.
    let mut x = 0.0;
    for _ in 0..200 {
        let (mut f, mut slope) = (0.0, 0.0);
        for i in 0..K {
            let q = a[i] / (1.0 + x * a[i]);
            f += p[i] * q;
            slope -= p[i] * q * q;
        }
        if f == 0.0 {
            return Some(x);
        }
        if f > 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        let newton = x - f / slope;
        let next = if newton > lo && newton < hi { newton } else { lo + (hi - lo) / 2.0 };
        // The bracket is down to adjacent floats, or Newton has stopped moving.
        if next <= lo || next >= hi || next == x {
            return Some(x);
        }
        x = next;
    }
    Some(x)
}

/// p̂ᵢ/(1 + x·aᵢ) for the root x of the secular equation: the distribution nearest to `p_hat`
/// (maximum likelihood) with Σ pᵢaᵢ = 0. None if there is no root or rounding spoilt a probability.
fn tilted<const K: usize>(p_hat: &[f64; K], a: &[f64; K]) -> Option<[f64; K]> {
    let x = secular(p_hat, a)?;
    let p: [f64; K] = std::array::from_fn(|i| p_hat[i] / (1.0 + x * a[i]));
    p.iter().all(|&q| q > 0.0 && q.is_finite()).then_some(p)
}

/// The maximum-likelihood distribution over scores `v` with mean `s`, given the observed `p_hat`
/// (fishtest's `MLE_expected`; Van den Bergh, Proposition 1.1).
fn mle_mean<const K: usize>(v: &[f64; K], p_hat: &[f64; K], s: f64) -> Option<[f64; K]> {
    tilted(p_hat, &v.map(|x| x - s))
}

/// The maximum-likelihood distribution over scores `v` with t-value (mean − ½)/σ = `t`, given the
/// observed `p_hat` (fishtest's `MLE_t_value`; Van den Bergh, "Normalized Elo, practical", 4.1).
///
/// First exactly fishtest's fixed point, from the uniform distribution: each step tilts `p_hat`
/// along the constraint's gradient at the current mean and deviation. On ordinary counts it
/// converges in a handful of steps. It can fail on extreme ones, where fishtest raises an error
/// (`[1000, 3, 98418, 1000, 0]` at ±300 nElo: the first step's tilt has no root); then the same
/// fixed point is followed from t = 0 (a mean of ½, always solvable) to `t` in steps, each starting
/// from the last solution, halving a step that fails. None if even that fails.
fn mle_t_value<const K: usize>(v: &[f64; K], p_hat: &[f64; K], t: f64) -> Option<[f64; K]> {
    if let Some(p) = t_fixed_point(v, p_hat, t, [1.0 / K as f64; K]) {
        return Some(p);
    }
    eprintln!("DEBUG continuation t={t}");
    let mut p = mle_mean(v, p_hat, EVEN)?;
    let (mut reached, mut step) = (0.0, t / 8.0);
    for _ in 0..CONTINUATION_ATTEMPTS {
        let target = if (t - reached).abs() <= step.abs() { t } else { reached + step };
        match t_fixed_point(v, p_hat, target, p) {
            Some(next) if target == t => return Some(next),
            Some(next) => (p, reached, step) = (next, target, step * 2.0),
            None => step /= 2.0,
        }
        eprintln!("DEBUG reached {reached} step {step}");
    }
    eprintln!("DEBUG continuation failed");
    None
}

/// Fishtest's fixed-point iteration for the t-value MLE from `start`; None unless it ends on a
/// distribution with t-value `t`.
fn t_fixed_point<const K: usize>(v: &[f64; K], p_hat: &[f64; K], t: f64, start: [f64; K]) -> Option<[f64; K]> {
    let mut p = start;
    for _ in 0..FIXED_POINT_STEPS {
        let (mean, var) = moments(v, &p);
        let sigma = var.sqrt();
        if !(sigma > 0.0) {
            return None;
        }
        // The constraint's gradient, shifted so that Σ pᵢaᵢ = 0 exactly when the mean and the
        // deviation are the current ones.
        let a = v.map(|x| x - EVEN - t * sigma * (1.0 + ((mean - x) / sigma).powi(2)) / 2.0);
        let next = tilted(p_hat, &a)?;
        let change = (0..K).map(|i| (next[i] - p[i]).abs()).fold(0.0, f64::max);
        p = next;
        if change < FIXED_POINT_TOLERANCE {
            break;
        }
    }
    // Rounding can leave the last steps oscillating just above the tolerance on huge counts; the
    // constraint itself is what matters.
    let (mean, var) = moments(v, &p);
    (((mean - EVEN) / var.sqrt() - t).abs() < T_TOLERANCE).then_some(p)
}

/// The true Elo differences of a simulated model, on the scale of the outcomes the SPRT sees.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Truth {
    /// Logistic Elo of the mean outcome score (per game for pairs of games, per paired outcome for
    /// N-player matches).
    pub elo: f64,
    /// Normalized Elo, on the same per-game basis as [`EloModel::Normalized`].
    pub normalized_elo: f64,
}

impl Truth {
    /// The truth of an outcome distribution `p` (summing to 1) over the scores `v`.
    fn of<const K: usize>(p: &[f64; K], games_per_outcome: f64) -> Self {
        let (mean, var) = moments(&scores::<K>(), p);
        let t = if var > 0.0 { (mean - EVEN) / var.sqrt() } else { 0.0 };
        Self { elo: finite(logistic_elo(mean)), normalized_elo: finite(t * NELO_PER_T / games_per_outcome.sqrt()) }
    }
}

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
        let favoured = game_probabilities(self.elo + self.opening_bias, self.draw_ratio);
        let unfavoured = game_probabilities(self.elo - self.opening_bias, self.draw_ratio);
        let mut pair = [0.0; 5];
        for (i, f) in favoured.iter().enumerate() {
            for (j, u) in unfavoured.iter().enumerate() {
                pair[i + j] += f * u;
            }
        }
        pair
    }

    /// The exact true Elo and normalized Elo per game (equal to `elo` without opening bias; with it,
    /// slightly different, as the logistic curve is not linear).
    pub fn truth(&self) -> Truth {
        Truth::of(&self.pair_probabilities(), PAIR_GAMES)
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

/// Win, draw and loss probabilities of one game, as [loss, draw, win] (the candidate's half-points).
fn game_probabilities(elo: f64, draw_ratio: f64) -> [f64; 3] {
    let s = logistic_score(elo);
    let draw = draw_ratio * 2.0 * s.min(1.0 - s);
    [1.0 - s - draw / 2.0, draw, s - draw / 2.0]
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
    /// from `seed` (always the same sample for the same seed, whatever `strength_gap`, so the
    /// result grows with it, and bisection on it works).
    pub fn truth(&self, pairs: u32, seed: u64) -> Truth {
        let mut source = Source::new(seed, TRUTH_STREAM);
        let mut counts = [0u64; 3];
        for _ in 0..pairs {
            counts[self.outcome(&mut source)] += 1;
        }
        let total = f64::from(pairs.max(1));
        Truth::of(&counts.map(|c| c as f64 / total), PAIRED_GAMES)
    }

    /// One pair: 0 if the candidate ranked worse than the baseline, 1 equal, 2 better.
    fn outcome(&self, source: &mut Source) -> usize {
        let round = |x: f64| if self.resolution > 0.0 { (x / self.resolution).floor() } else { x };
        // The tested seat's performance with each bot; its seed noise is common to both.
        let seed_noise = self.seed_noise * source.normal();
        let candidate = round(self.strength_gap + seed_noise + self.match_noise * source.normal());
        let baseline = round(seed_noise + self.match_noise * source.normal());
        // An opponent's strength and its seat's seed noise are fixed for the pair: one normal.
        let fixed_spread = self.opponent_spread.hypot(self.seed_noise);
        let (mut above_candidate, mut above_baseline) = (0u32, 0u32);
        for _ in 1..self.seats {
            let fixed = fixed_spread * source.normal();
            above_candidate += u32::from(round(fixed + self.match_noise * source.normal()) > candidate);
            above_baseline += u32::from(round(fixed + self.match_noise * source.normal()) > baseline);
        }
        // Fewer seats above means a better rank.
        match above_candidate.cmp(&above_baseline) {
            std::cmp::Ordering::Greater => 0,
            std::cmp::Ordering::Equal => 1,
            std::cmp::Ordering::Less => 2,
        }
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
    pub truth: Truth,
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
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// The test's parameters are out of range.
    Params(SprtParamError),
    /// A model or run setting is out of range.
    Setting {
        /// The setting's key.
        key: &'static str,
        /// The value given.
        value: f64,
        /// What it must be.
        expected: &'static str,
    },
    /// No planted `elo` within ±1000 gives this true Elo.
    Unreachable {
        /// The true Elo asked for.
        target: f64,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Params(error) => error.fmt(f),
            Self::Setting { key, value, expected } => write!(f, "`{key}` = {value} must be {expected}"),
            Self::Unreachable { target } => write!(f, "no planted Elo within ±{ELO_LIMIT} has a true Elo of {target}"),
        }
    }
}

impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Params(error) => Some(error),
            _ => None,
        }
    }
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
    let game = |source: &mut Source, p: &[f64; 3]| {
        let u = source.uniform();
        usize::from(u >= p[0]) + usize::from(u >= p[0] + p[1])
    };
    let favoured = game_probabilities(model.elo + model.opening_bias, model.draw_ratio);
    let unfavoured = game_probabilities(model.elo - model.opening_bias, model.draw_ratio);
    Ok(run_tests::<5>(config, PAIR_GAMES, |source| game(source, &favoured) + game(source, &unfavoured))
        .row(model.elo, model.truth()))
}

/// Runs the test `config.runs` times on paired N-player matches under `model`, each run to a
/// verdict or `config.max_games`; the row's truth is measured on [`TRUTH_PAIRS`] pairs.
pub fn simulate_paired(model: &PairedModel, config: &SimConfig) -> Result<SimRow, SimError> {
    model.check()?;
    config.check()?;
    Ok(run_tests::<3>(config, PAIRED_GAMES, |source| model.outcome(source))
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
    fn row(&self, planted: f64, truth: Truth) -> SimRow {
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
/// source of its own, checking the LLR every `check_every` outcomes, to a verdict or the cap.
fn run_tests<const K: usize>(
    config: &SimConfig,
    games_per_outcome: f64,
    mut outcome: impl FnMut(&mut Source) -> usize,
) -> Tally {
    let max_outcomes = config.max_games / 2;
    let mut tally = Tally { runs: config.runs, accepted_h0: 0, accepted_h1: 0, games: Vec::new() };
    for run in 0..config.runs {
        let mut source = Source::new(config.seed, u64::from(run));
        let mut counts = [0u64; K];
        let mut played = 0;
        while played < max_outcomes {
            let batch = u64::from(config.check_every).min(max_outcomes - played);
            for _ in 0..batch {
                counts[outcome(&mut source)] += 1;
            }
            played += batch;
            match config.params.verdict(Sample::new(&counts, games_per_outcome).llr(&config.params)) {
                Some(Verdict::H0) => tally.accepted_h0 += 1,
                Some(Verdict::H1) => tally.accepted_h1 += 1,
                None => continue,
            }
            break;
        }
        tally.games.push(2 * played);
    }
    tally.games.sort_unstable();
    tally
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
