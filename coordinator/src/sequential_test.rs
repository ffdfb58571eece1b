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
//! - [`Probabilities`]: the Elo and normalized Elo ([`ExactElo`]) of a known distribution of
//!   outcomes, what [`status`]'s estimates approach; farm-bench's SPRT simulator plants such
//!   distributions to measure the test's error rates and length.
//!
//! Everything is pure (no IO, no clock) and deterministic. Every output is finite, whatever the
//! input, because it ends up in JSON.
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

/// Hypotheses must lie within ±1000 Elo: beyond, the logistic expected score is within 0.32% of 0
/// or 1, and a normalized t-value of 2.9 per game is no bot test anyone runs.
pub const ELO_LIMIT: f64 = 1000.0;
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
/// Below this share of the outcomes a bin is sparse, and the t-value likelihood may have several
/// maxima (see `mle_t_value`).
const SPARSE_BIN: f64 = 1e-3;
/// Fixed-point steps before giving up. Fishtest stops after 10; some inputs need more (`[0, 1, 100,
/// 3, 1]` at 100 nElo: about 30).
const FIXED_POINT_STEPS: usize = 60;
/// A t-value MLE is accepted once its t-value is this close to the target (fishtest asserts 1e-5).
const T_TOLERANCE: f64 = 1e-6;
/// Points of the scan for t-value MLEs, geometric in σ over the range a distribution with that
/// t-value can have (see `t_scan`): 4.2% apart at 5 nElo on pairs (|t| = 0.02), 13% at |t| = 1e-6,
/// closer than the fixed points of any input we tried (35% apart or more).
const SCAN_POINTS: usize = 128;
/// Bisection steps refining a fixed point found by the scan, at most: σ is down to adjacent floats
/// after about 50.
const SCAN_BISECTIONS: usize = 100;

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
            if value.is_nan() || value.abs() > ELO_LIMIT {
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
/// the patch fails) and `"accepted-h1"` (it is shown to be stronger: fishtest's "accepted", the
/// patch passes).
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
/// should be, and weighs about as much as the test's hypotheses differ: after n pairs of draws and
/// nothing else, H1's mean of ½ + δ needs about 2δ of the pairs to have been won twice, none of
/// which showed, and the LLR falls by about 2δ per pair (0.0145 at `elo0` = 0, `elo1` = 5
/// logistic Elo: H0 after 204 pairs); after n pairs won twice, it rises by about as much (0.0143).
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

/// A known distribution of outcomes, over the bins of the [`Counts`] of the same name (each
/// probability in [0, 1], summing to 1): what a simulated test draws its outcomes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Probabilities {
    /// Over [`Counts::Pentanomial`]'s bins: pairs of two-player games.
    Pentanomial([f64; 5]),
    /// Over [`Counts::Trinomial`]'s bins: paired N-player matches.
    Trinomial([f64; 3]),
}

/// The Elo differences of a known distribution of outcomes: no interval, as nothing is estimated.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExactElo {
    /// Logistic Elo of the mean outcome score (per game for pairs of games, per paired outcome for
    /// N-player matches).
    pub elo: f64,
    /// Normalized Elo, on the same per-game basis as [`EloModel::Normalized`].
    pub normalized_elo: f64,
}

impl Probabilities {
    /// The Elo and normalized Elo these outcomes stand for, on the scales of [`SprtStatus::elo`]
    /// and [`SprtStatus::normalized_elo`]: what those estimates approach as outcomes drawn from this
    /// distribution accumulate. Finite; a distribution with no spread has a normalized Elo of 0.
    pub fn elo(&self) -> ExactElo {
        match self {
            Self::Pentanomial(p) => exact_elo(p, PAIR_GAMES),
            Self::Trinomial(p) => exact_elo(p, PAIRED_GAMES),
        }
    }
}

/// [`Probabilities::elo`] of a distribution `p` over `K` bins.
fn exact_elo<const K: usize>(p: &[f64; K], games_per_outcome: f64) -> ExactElo {
    let (mean, var) = moments(&scores::<K>(), p);
    let t = if var > 0.0 { (mean - EVEN) / var.sqrt() } else { 0.0 };
    ExactElo { elo: finite(logistic_elo(mean)), normalized_elo: finite(t * NELO_PER_T / games_per_outcome.sqrt()) }
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
            // No evidence. Fishtest computes its LLR from the regularised bins alone: about −1e-6.
            return 0.0;
        }
        let (v, p_hat) = (scores::<K>(), &self.p);
        let mles = match params.model {
            EloModel::Logistic => {
                let mle = |elo: f64| mle_mean(&v, p_hat, logistic_score(elo));
                mle(params.elo0).zip(mle(params.elo1))
            }
            EloModel::Normalized => {
                let mle = |nelo: f64| mle_t_value(&v, p_hat, self.t_value(nelo));
                mle(params.elo0).zip(mle(params.elo1))
            }
        };
        let exact = mles.map(|(p0, p1)| self.n * (0..K).map(|i| p_hat[i] * (p1[i].ln() - p0[i].ln())).sum::<f64>());
        // If even the scan finds nothing (no input we know of), fishtest's Brownian approximation
        // (`LLR_alt2`, which `sprt.py` uses for its estimates) still gives the test a direction.
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
pub fn logistic_score(elo: f64) -> f64 {
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
    // Adding 0 also turns −0 (the Elo of an even score) into 0.
    if x.is_nan() { 0.0 } else { x.clamp(-f64::MAX, f64::MAX) + 0.0 }
}

/// p̂ᵢ/(1 + x·aᵢ) for the root x of the secular equation Σ p̂ᵢaᵢ/(1 + x·aᵢ) = 0 (fishtest's
/// `secular`): the distribution most likely to have produced `p_hat` among those with Σ pᵢaᵢ = 0.
/// None when the a's do not straddle zero, as then there is no root, or if rounding spoilt a
/// probability.
///
/// The left side falls from +∞ to −∞ between the poles −1/max a and −1/min a, so there is exactly
/// one root. Safeguarded Newton finds it (a Newton step when it lands inside the bracket, else
/// bisection; fishtest uses Brent's method), working in the distance δ = x − x₀ from the pole x₀
/// the root is nearer to, with 1 + x·aᵢ computed as (1 + x₀·aᵢ) + δ·aᵢ. A probability far above its
/// p̂ᵢ (an empty bin's 1e-3 given real weight) has a denominator near 0, which 1 + x·aᵢ would give to
/// a few digits only, a difference of numbers near 1; at the pole's own bin (1 + x₀·aᵢ) is exactly
/// 0 and δ·aᵢ keeps every digit.
fn tilted<const K: usize>(p_hat: &[f64; K], a: &[f64; K]) -> Option<[f64; K]> {
    let (lowest, highest) =
        (0..K).fold((0, 0), |(lo, hi), i| (if a[i] < a[lo] { i } else { lo }, if a[i] > a[hi] { i } else { hi }));
    if !(a[lowest] < 0.0 && a[highest] > 0.0) {
        return None;
    }
    let pole = |i: usize| -1.0 / a[i];
    let middle = (pole(highest) + pole(lowest)) / 2.0;
    let sum_at_middle: f64 = (0..K).map(|i| p_hat[i] * a[i] / (1.0 + middle * a[i])).sum();
    // The sum is already negative at the middle when the root is in the lower half.
    let nearer = if sum_at_middle < 0.0 { highest } else { lowest };
    let inner = middle - pole(nearer);
    let (mut lo, mut hi) = if inner > 0.0 { (0.0, inner) } else { (inner, 0.0) };
    // 1 + x₀·aᵢ, written so that an a close to the pole's keeps its digits.
    let offset: [f64; K] = std::array::from_fn(|i| (a[nearer] - a[i]) / a[nearer]);
    // Start at x = 0, p = p̂: the root itself when p̂ already meets the constraint, as in most
    // tests, so it is near. When 0 is in the other half, the middle is nearer still.
    let zero = -pole(nearer);
    let mut delta = if zero > lo && zero < hi { zero } else { inner };
    for _ in 0..200 {
        let (mut f, mut slope) = (0.0, 0.0);
        for i in 0..K {
            let q = a[i] / (offset[i] + delta * a[i]);
            f += p_hat[i] * q;
            slope -= p_hat[i] * q * q;
        }
        if f == 0.0 {
            break;
        }
        if f > 0.0 {
            lo = delta;
        } else {
            hi = delta;
        }
        let newton = delta - f / slope;
        let inside = newton > lo && newton < hi;
        // The error after a Newton step is about its square over |δ|, the scale on which the
        // nearest term changes: a step below 1e-10·|δ| leaves about 1e-20·|δ|.
        if inside && (newton - delta).abs() <= 1e-10 * delta.abs() {
            delta = newton;
            break;
        }
        let next = if inside { newton } else { lo + (hi - lo) / 2.0 };
        // The bracket is down to adjacent floats, or Newton has stopped moving.
        if next <= lo || next >= hi || next == delta {
            break;
        }
        delta = next;
    }
    let p: [f64; K] = std::array::from_fn(|i| p_hat[i] / (offset[i] + delta * a[i]));
    p.iter().all(|&q| q > 0.0 && q.is_finite()).then_some(p)
}

/// The maximum-likelihood distribution over scores `v` with mean `s`, given the observed `p_hat`
/// (fishtest's `MLE_expected`; Van den Bergh, Proposition 1.1).
fn mle_mean<const K: usize>(v: &[f64; K], p_hat: &[f64; K], s: f64) -> Option<[f64; K]> {
    tilted(p_hat, &v.map(|x| x - s))
}

/// The maximum-likelihood distribution over scores `v` with t-value (mean − ½)/σ = `t`, given the
/// observed `p_hat` (fishtest's `MLE_t_value`).
///
/// Fishtest's fixed-point iteration finds a local maximum, and on ordinary counts there is only
/// one. But where the maximum needs weight in a bin that has little or none (p̂ᵢ below 1e-3: the
/// first few dozen outcomes of a test, or extreme hypotheses) there can be several, one per choice
/// of such bins, and the iteration can stop at a lesser one (`[0, 0, 2⁴⁰, 7, 0]` at 5 nElo: a
/// log-likelihood of −455335461.78 where −455335338.58 exists, so an LLR against −5 nElo of 15.4
/// instead of 138.6; fishtest fails on this input). There the scan's answer is taken when it is
/// more likely, and it is the answer wherever the iteration fails.
fn mle_t_value<const K: usize>(v: &[f64; K], p_hat: &[f64; K], t: f64) -> Option<[f64; K]> {
    if t == 0.0 {
        // A mean of ½: a linear constraint, so a single maximum, the fixed point's first step.
        return mle_mean(v, p_hat, EVEN);
    }
    let fixed = t_fixed_point(v, p_hat, t);
    if fixed.is_some() && p_hat.iter().all(|&p| p >= SPARSE_BIN) {
        return fixed;
    }
    match (fixed, t_scan(v, p_hat, t)) {
        (Some(fixed), Some(scanned)) => {
            Some(if log_likelihood(p_hat, &scanned) > log_likelihood(p_hat, &fixed) { scanned } else { fixed })
        }
        (fixed, scanned) => fixed.or(scanned),
    }
}

/// Σ p̂ᵢ ln pᵢ: the log-likelihood of `p` per outcome observed.
fn log_likelihood<const K: usize>(p_hat: &[f64; K], p: &[f64; K]) -> f64 {
    (0..K).map(|i| p_hat[i] * p[i].ln()).sum()
}

/// The t-value MLE by fishtest's fixed-point iteration (`MLE_t_value`; Van den Bergh,
/// "Normalized Elo, practical", 4.1) from the uniform distribution, as fishtest starts: each step
/// tilts `p_hat` along the constraint's gradient at the current mean and deviation. None unless it
/// ends on a distribution with t-value `t`.
///
/// On ordinary counts it converges in a handful of steps, to what fishtest computes. Like fishtest's,
/// it can fail on extreme counts or hypotheses, where fishtest raises an error: `[1000, 3, 98418,
/// 1000, 0]` at 300 nElo (the first tilt has no root). It is allowed more steps than fishtest's 10:
/// `[0, 1, 100, 3, 1]` at 100 nElo takes about 30, and fails fishtest's check of its result.
fn t_fixed_point<const K: usize>(v: &[f64; K], p_hat: &[f64; K], t: f64) -> Option<[f64; K]> {
    let mut p = [1.0 / K as f64; K];
    for _ in 0..FIXED_POINT_STEPS {
        let (mean, var) = moments(v, &p);
        let next = t_tilt(v, p_hat, t, mean, var.sqrt())?;
        let change = (0..K).map(|i| (next[i] - p[i]).abs()).fold(0.0, f64::max);
        p = next;
        if change < FIXED_POINT_TOLERANCE {
            break;
        }
    }
    // Rounding can leave the last steps oscillating just above the tolerance on huge counts; the
    // constraint itself is what matters.
    has_t_value(v, &p, t).then_some(p)
}

/// One step of the fixed point: `p_hat` tilted along the gradient of the constraint at mean `mean`
/// and deviation `sigma`, shifted so that Σ pᵢaᵢ = 0 exactly when the result has that mean and
/// deviation.
fn t_tilt<const K: usize>(v: &[f64; K], p_hat: &[f64; K], t: f64, mean: f64, sigma: f64) -> Option<[f64; K]> {
    if sigma.is_nan() || sigma <= 0.0 {
        return None;
    }
    tilted(p_hat, &v.map(|x| x - EVEN - t * sigma * (1.0 + ((mean - x) / sigma).powi(2)) / 2.0))
}

/// Whether distribution `p` over scores `v` has t-value `t` (fishtest asserts 1e-5; we ask 1e-6).
fn has_t_value<const K: usize>(v: &[f64; K], p: &[f64; K], t: f64) -> bool {
    let (mean, var) = moments(v, p);
    ((mean - EVEN) / var.sqrt() - t).abs() < T_TOLERANCE
}

/// The most likely of all the fixed points of [`t_fixed_point`], found by their deviation.
///
/// A fixed point has some deviation σ and mean ½ + tσ, and is the tilt at that mean and deviation.
/// So scan σ over its whole range, [|t|h/(1 + t²), ½/√(1 + t²)] for bins h apart, on a geometric
/// grid; wherever the tilt's own deviation minus σ changes sign, bisect to the fixed point; keep
/// the most likely. Unlike the iteration this sees every fixed point (the grid's resolution
/// allowing), and some inputs have several local maxima: `[3, 0, 100, 0, 0]` at −300 nElo has
/// fixed points at σ = 0.128, 0.178 and 0.245, log-likelihoods −107.4, −116.6 and −92.9.
/// Following t up from 0, each step's iteration started from the last solution, ends on the first;
/// an optimiser with many starts on the third, as this does. It costs a few hundred tilts, where
/// the iteration costs a handful, hence only where needed.
fn t_scan<const K: usize>(v: &[f64; K], p_hat: &[f64; K], t: f64) -> Option<[f64; K]> {
    // With d = v − ½: |t|σ = |Σ p·d| ≤ Σ p·|d| ≤ Σ p·d²/h = σ²(1 + t²)/h, as every non-zero |d| is
    // at least the bins' spacing h; and σ² ≤ μ(1 − μ) = ¼ − t²σ². The scan starts at half the
    // lower bound, for rounding's sake.
    let spacing = 1.0 / (K - 1) as f64;
    let sigma_min = 0.5 * t.abs() * spacing / (1.0 + t * t);
    let sigma_max = 0.5 / (1.0 + t * t).sqrt();
    let ratio = (sigma_max / sigma_min).powf(1.0 / (SCAN_POINTS - 1) as f64);
    // The tilt at deviation σ, and its own deviation minus σ; None where it has no root.
    let gap = |sigma: f64| {
        let p = t_tilt(v, p_hat, t, EVEN + t * sigma, sigma)?;
        Some((moments(v, &p).1.sqrt() - sigma, p))
    };
    let mut best: Option<(f64, [f64; K])> = None;
    let mut previous: Option<(f64, f64)> = None;
    for k in 0..SCAN_POINTS {
        let sigma = if k + 1 == SCAN_POINTS { sigma_max } else { sigma_min * ratio.powi(k as i32) };
        let current = gap(sigma).map(|(g, _)| (sigma, g));
        if let (Some((mut lo, g_lo)), Some((mut hi, g_hi))) = (previous, current)
            && (g_lo > 0.0) != (g_hi > 0.0)
        {
            for _ in 0..SCAN_BISECTIONS {
                let mid = lo + (hi - lo) / 2.0;
                if mid <= lo || mid >= hi {
                    break;
                }
                match gap(mid) {
                    Some((g, _)) if (g > 0.0) == (g_lo > 0.0) => lo = mid,
                    Some(_) => hi = mid,
                    None => break,
                }
            }
            // A sign change can also be the tilt's mean landing elsewhere (at ½ + tσ + 2σ/t), which
            // the t-value check rejects.
            if let Some((_, p)) = gap(lo + (hi - lo) / 2.0).filter(|(_, p)| has_t_value(v, p, t)) {
                let likelihood = log_likelihood(p_hat, &p);
                if best.is_none_or(|(b, _)| likelihood > b) {
                    best = Some((likelihood, p));
                }
            }
        }
        previous = current;
    }
    best.map(|(_, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(model: EloModel, elo0: f64, elo1: f64) -> SprtParams {
        SprtParams { elo0, elo1, alpha: 0.05, beta: 0.05, model }
    }

    fn checked(params: &SprtParams, counts: &Counts) -> SprtStatus {
        status(params, counts).expect("valid parameters")
    }

    fn assert_close(actual: f64, expected: f64, relative: f64, what: &str) {
        let error = (actual - expected).abs() / expected.abs().max(1e-300);
        assert!(error <= relative, "{what}: {actual} vs {expected} (relative error {error:e})");
    }

    // Reference LLRs printed by fishtest's own code, official-stockfish/fishtest at b8eecff2,
    // server/fishtest/stats/LLRcalc.py: `LLR_logistic(elo0, elo1, results)` and
    // `LLR_normalized(nelo0, nelo1, results)` (python3, scipy 1.17); the formulas are Van den
    // Bergh's (support_MLE_multinomial.pdf, Proposition 1.1; normalized_elo_practical.pdf, 4.1).
    // Each row: counts, then (elo0, elo1, LLR) logistic, then (nelo0, nelo1, LLR) normalized.
    const FISHTEST_LLRS: [(Counts, Hypotheses, Hypotheses); 10] = [
        // fishtest's own example in stat_util.py.
        (
            Counts::Pentanomial([10789, 19328, 33806, 19402, 10543]),
            (-3.0, 1.0, 2.1310678117940807),
            (0.0, 2.0, -6.070429067588585),
        ),
        // fishtest's SPRT_elo examples: a drawish long run.
        (
            Counts::Pentanomial([39, 2226, 31451, 2412, 40]),
            (0.2, 0.9, 2.1625425800483593),
            (0.764, 3.439, 2.162940869584568),
        ),
        // OpenBench's stats.py example (its PentanomialSPRT also prints 2.9416752079894044).
        (
            Counts::Pentanomial([39, 8843, 26675, 9240, 44]),
            (0.5, 2.5, 0.5555170687214862),
            (0.5, 2.5, 2.9416752079894044),
        ),
        // Few pairs, one bin empty.
        (Counts::Pentanomial([0, 3, 10, 5, 1]), (0.0, 5.0, 0.18976275740502427), (0.0, 5.0, 0.10443846111216437)),
        // A single non-empty bin: only the regularisation of the others.
        (Counts::Pentanomial([0, 0, 200, 0, 0]), (0.0, 5.0, -2.8904253173786216), (0.0, 5.0, -0.07824038088415868)),
        (Counts::Pentanomial([0, 0, 0, 0, 7]), (0.0, 5.0, 0.10004160399868467), (0.0, 5.0, 0.1410154282152777)),
        // OpenBench's trinomial example.
        (Counts::Trinomial([22569, 44137, 22976]), (0.5, 2.5, 0.2246064928417464), (0.5, 2.5, 1.0588254938693176)),
        // Paired N-player sized.
        (Counts::Trinomial([120, 300, 160]), (0.0, 10.0, 1.8905374006547222), (0.0, 10.0, 1.4173262662430925)),
        (Counts::Trinomial([0, 500, 3]), (0.0, 5.0, 0.45664179533219096), (0.0, 5.0, 0.5220751498945976)),
        (Counts::Trinomial([5, 0, 9]), (-10.0, 10.0, 0.23027495216516072), (-10.0, 10.0, 0.2302349527092846)),
    ];

    /// elo0, elo1 and the LLR expected.
    type Hypotheses = (f64, f64, f64);

    #[test]
    fn llr_matches_fishtest() {
        for (counts, logistic, normalized) in FISHTEST_LLRS {
            for (model, (elo0, elo1, expected)) in [(EloModel::Logistic, logistic), (EloModel::Normalized, normalized)]
            {
                let llr = checked(&params(model, elo0, elo1), &counts).llr;
                assert_close(llr, expected, 1e-9, &format!("{counts:?} {model:?}"));
            }
        }
    }

    #[test]
    fn llr_matches_high_precision_references_where_fishtest_fails() {
        // fishtest's LLR_normalized raises on all of these: ValueError (a tilt with no root, from
        // the extreme hypotheses or from the digits lost near a pole at 2^30 and more outcomes) or
        // AssertionError (not converged in its 10 steps: [0, 1, 100, 3, 1]). References: every
        // fixed point of fishtest's iteration, found by a scan over σ in mpmath at 60 digits
        // (bisection for the tilts), the most likely kept. Where scipy.optimize.minimize (SLSQP,
        // 60 random starts, maximising Σ p̂ ln p with (μ − ½)/σ = t) converges, the first four, it
        // agrees to 1e-10.
        let cases = [
            (Counts::Pentanomial([1000, 3, 98418, 1000, 0]), (200.0, 300.0), -39798.854795172902, 1e-12),
            (Counts::Pentanomial([3, 0, 100, 0, 0]), (-400.0, -300.0), 37.64567289068081, 1e-12),
            (Counts::Trinomial([0, 0, 519501]), (900.0, 1000.0), 3138.162813827437, 1e-12),
            (Counts::Pentanomial([0, 1, 100, 3, 1]), (0.0, 100.0), -7.516494179562835, 1e-12),
            (Counts::Trinomial([3, 1 << 40, 1]), (0.0, 5.0), -227691196.07965618, 1e-12),
            (Counts::Trinomial([100, 1 << 30, 0]), (0.0, 5.0), -222424.015676062, 1e-12),
            // Several local maxima, and the iteration finds a lesser one for H1 (see
            // `mle_t_value`). Two log-likelihoods of −4.6e8 cancel: 1e-6 is what f64 leaves.
            (Counts::Pentanomial([0, 0, 1 << 40, 7, 0]), (-5.0, 5.0), 138.58097407323836, 1e-5),
        ];
        for (counts, (nelo0, nelo1), expected, relative) in cases {
            let llr = checked(&params(EloModel::Normalized, nelo0, nelo1), &counts).llr;
            assert_close(llr, expected, relative, &format!("{counts:?}"));
        }
    }

    #[test]
    fn the_scan_finds_the_most_likely_fixed_point() {
        // Three fixed points (σ = 0.128, 0.178, 0.245); the third is the most likely (−92.856).
        let counts = [3.0, REGULARIZER, 100.0, REGULARIZER, REGULARIZER];
        let n: f64 = counts.iter().sum();
        let p_hat = counts.map(|c| c / n);
        let v = scores::<5>();
        let t = -300.0 / NELO_PER_T * 2f64.sqrt();
        let p = t_scan(&v, &p_hat, t).expect("a fixed point");
        assert!(has_t_value(&v, &p, t));
        let log_likelihood = n * (0..5).map(|i| p_hat[i] * p[i].ln()).sum::<f64>();
        assert_close(log_likelihood, -92.85550358709295, 1e-9, "log-likelihood");
    }

    #[test]
    fn bounds_are_walds() {
        let status = checked(&params(EloModel::Logistic, 0.0, 5.0), &Counts::Trinomial([0, 0, 0]));
        // fishtest's stat_util.SPRT(alpha=0.05, beta=0.05): ±2.9444389791664403.
        assert_close(status.lower, -2.9444389791664403, 1e-15, "lower");
        assert_close(status.upper, 2.9444389791664403, 1e-15, "upper");
        let asymmetric = SprtParams { alpha: 0.01, beta: 0.1, ..params(EloModel::Logistic, 0.0, 5.0) };
        let status = checked(&asymmetric, &Counts::Trinomial([0, 0, 0]));
        assert_close(status.lower, (0.1f64 / 0.99).ln(), 1e-15, "lower");
        assert_close(status.upper, (0.9f64 / 0.01).ln(), 1e-15, "upper");
    }

    #[test]
    fn estimates_match_fishtest_and_openbench() {
        // fishtest stat_util.get_elo(results) → (elo, elo95, los): the interval's half width.
        // fishtest template_helpers._nelo_pentanomial_details → (nelo5, nelo5_delta) and
        // _build_trinomial_stats → (nelo3, nelo3_l, nelo3_u).
        let pentanomial =
            checked(&params(EloModel::Logistic, 0.0, 5.0), &Counts::Pentanomial([10789, 19328, 33806, 19402, 10543]));
        assert_close(pentanomial.elo.value, -0.7735773359165423, 1e-9, "elo");
        assert_close((pentanomial.elo.high - pentanomial.elo.low) / 2.0, 1.2775798957280218, 1e-9, "elo95");
        assert_close(pentanomial.normalized_elo.value, -0.9516290044726476, 1e-9, "nelo5");
        assert_close(
            pentanomial.normalized_elo.high - pentanomial.normalized_elo.value,
            1.5716226767743608,
            1e-9,
            "nelo5_delta",
        );
        assert_close(
            pentanomial.normalized_elo.value - pentanomial.normalized_elo.low,
            1.5716226767743608,
            1e-9,
            "nelo5_delta",
        );
        // OpenBench stats.Elo(results) → (lower, elo, upper): the same but with Student's t
        // quantile (93867 degrees of freedom) for the normal one, hence the looser tolerance.
        assert_close(pentanomial.elo.low, -2.05118416600041, 1e-4, "OpenBench lower");
        assert_close(pentanomial.elo.high, 0.5040085735875605, 1e-4, "OpenBench upper");

        let trinomial = checked(&params(EloModel::Normalized, 0.0, 5.0), &Counts::Trinomial([22569, 44137, 22976]));
        assert_close(trinomial.elo.value, 1.5767629413996245, 1e-9, "elo");
        assert_close((trinomial.elo.high - trinomial.elo.low) / 2.0, 1.620469066620006, 1e-9, "elo95");
        assert_close(trinomial.normalized_elo.value, 2.21260820430284, 1e-9, "nelo3");
        assert_close(trinomial.normalized_elo.low, -0.06134204649592826, 1e-9, "nelo3_l");
        assert_close(trinomial.normalized_elo.high, 4.486558455101608, 1e-9, "nelo3_u");

        let small = checked(&params(EloModel::Normalized, 0.0, 5.0), &Counts::Trinomial([120, 300, 160]));
        assert_close(small.elo.value, 23.99917187011412, 1e-9, "elo");
        assert_close((small.elo.high - small.elo.low) / 2.0, 19.66364122829664, 1e-9, "elo95");
        assert_close(small.normalized_elo.low, 6.214695886559103, 1e-9, "nelo3_l");
        assert_close(small.normalized_elo.high, 63.099352164404415, 1e-9, "nelo3_u");
    }

    #[test]
    fn counts_count_outcomes() {
        assert_eq!(Counts::Pentanomial([1, 2, 3, 4, 5]).outcomes(), 15);
        assert_eq!(Counts::Trinomial([u64::MAX, 1, 0]).outcomes(), u64::MAX);
    }

    #[test]
    fn no_outcomes_is_no_evidence() {
        for model in [EloModel::Logistic, EloModel::Normalized] {
            for counts in [Counts::Pentanomial([0; 5]), Counts::Trinomial([0; 3])] {
                let status = checked(&params(model, 0.0, 5.0), &counts);
                assert_eq!(status.llr, 0.0);
                assert_eq!(status.verdict, None);
                assert_eq!(status.elo.value, 0.0);
                assert!(status.elo.low < -1000.0 && status.elo.high > 1000.0, "{:?}", status.elo);
            }
        }
    }

    #[test]
    fn a_single_bin_decides_at_the_pace_the_docs_say() {
        let logistic = params(EloModel::Logistic, 0.0, 5.0);
        assert_eq!(checked(&logistic, &Counts::Pentanomial([0, 0, 203, 0, 0])).verdict, None);
        assert_eq!(checked(&logistic, &Counts::Pentanomial([0, 0, 204, 0, 0])).verdict, Some(Verdict::H0));
        let won = checked(&logistic, &Counts::Pentanomial([0, 0, 0, 0, 204])).llr;
        // fishtest: LLR_logistic(0, 5, [0, 0, 0, 0, 204]) = 2.914700339915084.
        assert_close(won, 2.914700339915084, 1e-9, "all won");
    }

    #[test]
    fn verdicts_compare_strictly_with_the_bounds() {
        let p = params(EloModel::Logistic, 0.0, 5.0);
        let (lower, upper) = p.bounds();
        assert_eq!(p.verdict(lower), None);
        assert_eq!(p.verdict(upper), None);
        assert_eq!(p.verdict(lower - 1e-12), Some(Verdict::H0));
        assert_eq!(p.verdict(upper + 1e-12), Some(Verdict::H1));
    }

    #[test]
    fn check_names_the_key() {
        let good = params(EloModel::Normalized, 0.0, 5.0);
        assert_eq!(good.check(), Ok(()));
        let cases = [
            (SprtParams { elo0: f64::NAN, ..good }, "elo0"),
            (SprtParams { elo1: f64::INFINITY, ..good }, "elo1"),
            (SprtParams { elo1: 1000.5, ..good }, "elo1"),
            (SprtParams { elo0: 5.0, elo1: 5.0, ..good }, "elo1"),
            (SprtParams { alpha: 0.0, ..good }, "alpha"),
            (SprtParams { alpha: 0.6, ..good }, "alpha"),
            (SprtParams { beta: f64::NAN, ..good }, "beta"),
        ];
        for (bad, key) in cases {
            let error = bad.check().expect_err(key);
            assert_eq!(error.key(), key);
            assert!(error.to_string().contains(key), "{error}");
            // NaN ≠ NaN, so compare what the error says.
            let refused = status(&bad, &Counts::Trinomial([1, 2, 3])).expect_err(key);
            assert_eq!(refused.to_string(), error.to_string());
        }
    }

    #[test]
    fn serde_names() {
        let params: SprtParams =
            toml::from_str("elo0 = 0\nelo1 = 5\nalpha = 0.05\nbeta = 0.05\nelo_model = \"normalized\"\n")
                .expect("a tournament file's sprt table");
        assert_eq!(params, SprtParams { elo0: 0.0, elo1: 5.0, alpha: 0.05, beta: 0.05, model: EloModel::Normalized });
        assert!(
            toml::from_str::<SprtParams>(
                "elo0 = 0\nelo1 = 5\nalpha = 0.05\nbeta = 0.05\nelo_model = \"logistic\"\nfoo = 1\n"
            )
            .is_err()
        );
        let json = |value: &dyn erased::Json| value.to_json();
        assert_eq!(json(&Verdict::H0), "\"accepted-h0\"");
        assert_eq!(json(&Verdict::H1), "\"accepted-h1\"");
        assert_eq!(json(&EloModel::Logistic), "\"logistic\"");
        assert_eq!(json(&Counts::Trinomial([1, 2, 3])), "{\"trinomial\":[1,2,3]}");
        let status = checked(&params, &Counts::Pentanomial([1, 2, 3, 4, 5]));
        let round_trip: SprtStatus = serde_json::from_str(&json(&status)).expect("a status");
        assert_eq!(round_trip, status);
    }

    /// `serde_json::to_string` behind a trait object, so one closure serialises every type.
    mod erased {
        pub trait Json {
            fn to_json(&self) -> String;
        }
        impl<T: serde::Serialize> Json for T {
            fn to_json(&self) -> String {
                serde_json::to_string(self).expect("serialisable")
            }
        }
    }

    #[test]
    fn every_output_is_finite_on_extreme_input() {
        let values = [0, 1, 1000, u64::MAX];
        let hypotheses = [(-1000.0, 1000.0), (0.0, 5.0), (999.0, 1000.0), (-1000.0, -999.0)];
        let mut all = Vec::new();
        for a in values {
            for b in values {
                for c in values {
                    all.push(Counts::Trinomial([a, b, c]));
                    for d in values {
                        all.push(Counts::Pentanomial([a, b, c, d, a.min(d)]));
                    }
                }
            }
        }
        for counts in all {
            for (elo0, elo1) in hypotheses {
                for model in [EloModel::Logistic, EloModel::Normalized] {
                    let s = checked(&SprtParams { alpha: 1e-300, beta: 0.5, ..params(model, elo0, elo1) }, &counts);
                    let numbers = [s.llr, s.lower, s.upper, s.elo.value, s.elo.low, s.elo.high];
                    let more = [s.normalized_elo.value, s.normalized_elo.low, s.normalized_elo.high];
                    assert!(numbers.iter().chain(&more).all(|x| x.is_finite()), "{counts:?} {model:?} {elo0}: {s:?}");
                    assert!(s.elo.low <= s.elo.value && s.elo.value <= s.elo.high, "{counts:?}: {s:?}");
                }
            }
        }
    }

    #[test]
    fn exact_elo_is_the_estimate_of_the_same_proportions() {
        let p = params(EloModel::Normalized, 0.0, 5.0);
        let pentanomial = [10789, 19328, 33806, 19402, 10543];
        let trinomial = [120, 300, 160];
        let share = |bins: &[u64]| -> Vec<f64> {
            let total: u64 = bins.iter().sum();
            bins.iter().map(|&n| n as f64 / total as f64).collect()
        };
        let cases = [
            (
                checked(&p, &Counts::Pentanomial(pentanomial)),
                Probabilities::Pentanomial(share(&pentanomial).try_into().expect("five bins")),
            ),
            (
                checked(&p, &Counts::Trinomial(trinomial)),
                Probabilities::Trinomial(share(&trinomial).try_into().expect("three bins")),
            ),
        ];
        for (estimated, probabilities) in cases {
            let exact = probabilities.elo();
            assert_close(exact.elo, estimated.elo.value, 1e-12, "elo");
            assert_close(exact.normalized_elo, estimated.normalized_elo.value, 1e-12, "normalized elo");
        }
        // No spread, no t-value: one certain outcome.
        let certain = Probabilities::Trinomial([0.0, 0.0, 1.0]).elo();
        assert_eq!(certain.normalized_elo, 0.0);
        assert!(certain.elo > 1000.0 && certain.elo.is_finite(), "{certain:?}");
    }

    #[test]
    fn more_wins_never_lower_the_llr() {
        for model in [EloModel::Logistic, EloModel::Normalized] {
            let p = params(model, 0.0, 5.0);
            let mut last = f64::NEG_INFINITY;
            for wins in (0..400).step_by(20) {
                let llr = checked(&p, &Counts::Trinomial([300, 400, wins])).llr;
                assert!(llr > last, "{model:?} {wins}: {llr} after {last}");
                last = llr;
            }
        }
    }
}
