//! Ratings for tournament standings: Bradley–Terry Elo, Weng–Lin and mean scores, each with an interval.
//!
//! Every function here is pure: no clock, no IO, no hash-map order, so standings recomputed from the
//! ledger come out the same bit for bit. Every output is finite, whatever the input, because it ends
//! up in JSON, which has no NaN or infinity.

use std::f64::consts::LN_10;

use skillratings::MultiTeamOutcome;
use skillratings::weng_lin::{WengLinConfig, WengLinRating, weng_lin_multi_team};

/// A rating with its interval, in the units of its method.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rating {
    /// The estimate (Elo points, mu, or mean score).
    pub value: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
}

impl Rating {
    /// `value ± half`, pulled back to finite numbers.
    fn around(value: f64, half: f64) -> Self {
        Self { value: finite(value), low: finite(value - half), high: finite(value + half) }
    }
}

/// NaN becomes 0 and ±infinity the largest finite number, so no output ever breaks JSON.
fn finite(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(-f64::MAX, f64::MAX) }
}

/// One decided or drawn game between two players (indices into the player list).
#[derive(Debug, Clone, Copy)]
pub struct PairGame {
    /// One player.
    pub a: usize,
    /// The other player.
    pub b: usize,
    /// 1.0 a won, 0.5 draw, 0.0 b won
    pub score_a: f64,
}

/// The mean of all Bradley–Terry ratings.
const ELO_MEAN: f64 = 1500.0;
/// Elo points per natural-log unit of strength: 1/(1+10^(-d/400)) is the logistic σ(d·ln10/400).
const ELO_PER_NAT: f64 = 400.0 / LN_10;
/// The prior: each player draws this many virtual games against a fixed opponent at the mean.
const PRIOR_GAMES: f64 = 1.0;
/// Up to this many players: Cholesky solves and the full inverse Hessian; above, conjugate gradients
/// and the Hessian's diagonal.
const DENSE_LIMIT: usize = 200;
/// The fit stops once no rating moves by more than this many Elo points in an iteration.
const TOLERANCE_ELO: f64 = 1e-10;
/// Iteration caps, far above what the tolerance needs, so a pathological input still returns.
const MAX_NEWTON: usize = 200;
/// The two-sided 95% quantile of the normal distribution.
const Z95: f64 = 1.959_963_984_540_054;

/// Elo from all 2-player games at once: the Bradley–Terry fit, P(a beats b) = 1/(1+10^((Rb−Ra)/400)),
/// with 95% intervals, independent of the order of `games`. Draws count half a win for each side.
///
/// **Prior.** A player who won (or lost) every game has no finite maximum-likelihood rating, so each
/// player also draws one virtual game (`PRIOR_GAMES`) against a virtual opponent fixed at 1500; the
/// result is the maximum of that posterior. It pulls ratings slightly towards the mean: for two
/// players where a beat b 3 times in 4 the gap is 164.84 instead of 400·log10(3) = 190.85; with
/// hundreds of games per player the effect is well under 1%. Afterwards all ratings are shifted
/// together so that their mean is exactly 1500; the shift changes no difference and is small, as
/// the virtual opponent already holds the fit near there (the fit has Σ tanh(θᵢ/2) = 0, not Σ θᵢ =
/// 0). Players with no games sit at the virtual opponent's level: 1500 up to that shift, exactly
/// 1500 when the field is balanced about it.
///
/// **Fit.** Games are first summed per pair, in a canonical order, so the result is identical bit for
/// bit whatever the order of `games`. Then Newton–Raphson with step halving on the log posterior,
/// which is strictly concave thanks to the prior, until no rating moves by 1e-10 Elo (or 200 steps).
/// Up to 200 players each step is a Cholesky solve; above, preconditioned conjugate gradients,
/// O(pairs) per iteration. Not Hunter's MM algorithm: only the weak prior fixes the common level, so
/// MM crawls (1000 players, a million games: not converged after 10 000 iterations, 75 s; 815 and
/// 5 s with the level solved exactly each iteration; a chain of 1000 players: not converged after
/// 10 000 even so), where Newton–CG needs 9 steps and 0.5 s in all (release build).
///
/// **Intervals.** ±1.96 standard errors of each rating *relative to the mean of all ratings*, the
/// quantity reported. Up to 200 players: the covariance is the full inverse of the observed Fisher
/// information (negative Hessian of the log posterior, positive definite because of the prior, by a
/// Cholesky factorisation), projected onto the centring constraint: Var(θᵢ − θ̄) = Σᵢᵢ − 2(Σ1)ᵢ/K +
/// 1ᵀΣ1/K². Projection, not fixing one player, keeps every player's interval symmetric in the
/// players. Above 200 players, where the O(K³) inverse would cost seconds: 1/Hᵢᵢ, each player's
/// variance with the others held fixed. For a round robin that is wider than the projected interval
/// by K/(K−1) (under 0.5% there); for a sparse schedule it can be narrower, as it ignores the others'
/// uncertainty. A player with no games gets about the prior's ±681 Elo (one virtual game carries
/// information 1/4: 1.96·2·400/ln 10), more if the field's mean is itself uncertain; a lone player is
/// the mean and gets a zero width.
///
/// Games with an out-of-range index (debug-asserted), with themselves or with a non-finite score are
/// ignored; scores are clamped to [0, 1].
pub fn bradley_terry(players: usize, games: &[PairGame]) -> Vec<Rating> {
    fit(players, games, DENSE_LIMIT)
}

/// [`bradley_terry`] with the dense/sparse switch as a parameter, so tests can compare the two paths.
fn fit(players: usize, games: &[PairGame], dense_limit: usize) -> Vec<Rating> {
    if players == 0 {
        return Vec::new();
    }
    let model = Model::new(players, games);
    let dense = players <= dense_limit;
    let theta = model.newton(dense);
    let variances = if dense { model.centred_variances(&theta) } else { None }
        .unwrap_or_else(|| model.information_diagonal(&theta).iter().map(|h| 1.0 / h).collect());
    let mean = theta.iter().sum::<f64>() / players as f64;
    theta
        .iter()
        .zip(&variances)
        .map(|(t, v)| Rating::around(ELO_MEAN + (t - mean) * ELO_PER_NAT, Z95 * v.max(0.0).sqrt() * ELO_PER_NAT))
        .collect()
}

/// All games between players `i < j`: how many, and how much of their score went to `i`.
struct Pair {
    i: usize,
    j: usize,
    games: f64,
    score_i: f64,
}

/// The posterior over strengths θ (natural-log units; the virtual opponent is at θ = 0).
struct Model {
    pairs: Vec<Pair>,
    /// Each player's total score, the virtual draws included.
    score: Vec<f64>,
}

impl Model {
    fn new(players: usize, games: &[PairGame]) -> Self {
        let mut results: Vec<((usize, usize), f64)> = games
            .iter()
            .filter_map(|g| {
                debug_assert!(g.a < players && g.b < players, "player index out of range: {g:?}");
                if g.a >= players || g.b >= players || g.a == g.b || !g.score_a.is_finite() {
                    return None;
                }
                let s = g.score_a.clamp(0.0, 1.0);
                Some(if g.a < g.b { ((g.a, g.b), s) } else { ((g.b, g.a), 1.0 - s) })
            })
            .collect();
        // Sorted by pair, then by score: each pair's sum then adds the same numbers in the same order
        // whatever the order of `games`, so the fit is identical bit for bit, even for scores whose
        // sums would round differently in another order.
        results.sort_unstable_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)));
        let mut pairs: Vec<Pair> = Vec::new();
        for ((i, j), s) in results {
            match pairs.last_mut() {
                Some(p) if (p.i, p.j) == (i, j) => {
                    p.games += 1.0;
                    p.score_i += s;
                }
                _ => pairs.push(Pair { i, j, games: 1.0, score_i: s }),
            }
        }
        let mut score = vec![PRIOR_GAMES / 2.0; players];
        for p in &pairs {
            score[p.i] += p.score_i;
            score[p.j] += p.games - p.score_i;
        }
        Self { pairs, score }
    }

    /// The log posterior, up to a constant.
    fn log_posterior(&self, theta: &[f64]) -> f64 {
        let prior: f64 = theta.iter().map(|&t| log_sigmoid(t) + log_sigmoid(-t)).sum();
        let games: f64 = self
            .pairs
            .iter()
            .map(|p| {
                let d = theta[p.i] - theta[p.j];
                p.score_i * log_sigmoid(d) + (p.games - p.score_i) * log_sigmoid(-d)
            })
            .sum();
        games + prior * PRIOR_GAMES / 2.0
    }

    /// Each player's expected score, the virtual games included.
    fn expected(&self, theta: &[f64]) -> Vec<f64> {
        let mut e: Vec<f64> = theta.iter().map(|&t| PRIOR_GAMES * sigmoid(t)).collect();
        for p in &self.pairs {
            let d = theta[p.i] - theta[p.j];
            e[p.i] += p.games * sigmoid(d);
            e[p.j] += p.games * sigmoid(-d);
        }
        e
    }

    /// Diagonal of the observed information (negative Hessian of the log posterior); always ≥ prior > 0.
    fn information_diagonal(&self, theta: &[f64]) -> Vec<f64> {
        let mut h: Vec<f64> = theta.iter().map(|&t| PRIOR_GAMES * variance(t)).collect();
        for p in &self.pairs {
            let w = p.games * variance(theta[p.i] - theta[p.j]);
            h[p.i] += w;
            h[p.j] += w;
        }
        h
    }

    /// The observed information as a dense row-major K×K matrix.
    fn information(&self, theta: &[f64]) -> Vec<f64> {
        let k = theta.len();
        let mut h = vec![0.0; k * k];
        for (i, d) in self.information_diagonal(theta).into_iter().enumerate() {
            h[i * k + i] = d;
        }
        for p in &self.pairs {
            let w = p.games * variance(theta[p.i] - theta[p.j]);
            h[p.i * k + p.j] -= w;
            h[p.j * k + p.i] -= w;
        }
        h
    }

    /// Newton–Raphson from θ = 0, halving steps that would lower the posterior. Each step solves
    /// H·δ = gradient: by Cholesky when `dense`, else (or should the factorisation fail) by conjugate
    /// gradients, whose iterations cost one pass over the pairs instead of O(K³).
    fn newton(&self, dense: bool) -> Vec<f64> {
        let k = self.score.len();
        let mut theta = vec![0.0; k];
        for _ in 0..MAX_NEWTON {
            let gradient: Vec<f64> = self.score.iter().zip(self.expected(&theta)).map(|(s, e)| s - e).collect();
            let step = match if dense { cholesky(self.information(&theta), k) } else { None } {
                Some(l) => backward(&l, k, forward(&l, k, gradient)),
                None => self.conjugate_gradient(&theta, &gradient),
            };
            let full = step.iter().fold(0.0f64, |m, d| m.max(d.abs()));
            if !full.is_finite() {
                break;
            }
            let base = self.log_posterior(&theta);
            let mut t = 1.0;
            loop {
                let candidate: Vec<f64> = theta.iter().zip(&step).map(|(x, d)| x + t * d).collect();
                // Small steps are taken as they are: near the optimum the quadratic model is
                // excellent and the posterior's change drowns in rounding.
                if t * full < 1e-3 || self.log_posterior(&candidate) >= base {
                    theta = candidate;
                    break;
                }
                t /= 2.0;
            }
            if full * ELO_PER_NAT < TOLERANCE_ELO {
                break;
            }
        }
        theta
    }

    /// Solves H·x = b for the information H at θ by conjugate gradients preconditioned with H's
    /// diagonal, to a relative residual of 1e-12 or at most 4K + 100 iterations.
    fn conjugate_gradient(&self, theta: &[f64], b: &[f64]) -> Vec<f64> {
        let diagonal = self.information_diagonal(theta);
        let weights: Vec<f64> = self.pairs.iter().map(|p| p.games * variance(theta[p.i] - theta[p.j])).collect();
        let times_h = |v: &[f64]| {
            let mut out: Vec<f64> = diagonal.iter().zip(v).map(|(d, x)| d * x).collect();
            for (p, w) in self.pairs.iter().zip(&weights) {
                out[p.i] -= w * v[p.j];
                out[p.j] -= w * v[p.i];
            }
            out
        };
        let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
        let precondition = |r: &[f64]| r.iter().zip(&diagonal).map(|(r, d)| r / d).collect::<Vec<f64>>();
        let mut x = vec![0.0; b.len()];
        let mut r = b.to_vec();
        let mut p = precondition(&r);
        let mut rz = dot(&r, &p);
        let goal = 1e-24 * rz;
        for _ in 0..4 * b.len() + 100 {
            if rz.is_nan() || rz <= goal {
                break;
            }
            let hp = times_h(&p);
            let alpha = rz / dot(&p, &hp);
            for (((x, r), p), hp) in x.iter_mut().zip(&mut r).zip(&p).zip(&hp) {
                *x += alpha * p;
                *r -= alpha * hp;
            }
            let z = precondition(&r);
            let next = dot(&r, &z);
            for (p, z) in p.iter_mut().zip(&z) {
                *p = z + next / rz * *p;
            }
            rz = next;
        }
        x
    }

    /// Var(θᵢ − θ̄) from the full inverse information; None if the factorisation fails.
    fn centred_variances(&self, theta: &[f64]) -> Option<Vec<f64>> {
        let k = theta.len();
        let l = cholesky(self.information(theta), k)?;
        // Σᵢᵢ is the squared norm of column i of L⁻¹, which solving L·y = eᵢ gives.
        let diagonal: Vec<f64> = (0..k)
            .map(|i| {
                let mut unit = vec![0.0; k];
                unit[i] = 1.0;
                forward(&l, k, unit).iter().map(|y| y * y).sum()
            })
            .collect();
        let row_sums = backward(&l, k, forward(&l, k, vec![1.0; k]));
        let total: f64 = row_sums.iter().sum();
        let kf = k as f64;
        Some(diagonal.iter().zip(&row_sums).map(|(d, r)| d - 2.0 * r / kf + total / (kf * kf)).collect())
    }
}

/// σ(x)·σ(−x), the variance of one game's result at strength difference x (its Fisher information).
fn variance(x: f64) -> f64 {
    sigmoid(x) * sigmoid(-x)
}

/// The logistic function, without overflow for large |x|.
fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 { 1.0 / (1.0 + (-x).exp()) } else { x.exp() / (1.0 + x.exp()) }
}

/// ln σ(x) = −ln(1 + e^(−x)), without overflow for large |x|.
fn log_sigmoid(x: f64) -> f64 {
    x.min(0.0) - (-x.abs()).exp().ln_1p()
}

/// Lower-triangular L (row-major, upper part unused) with L·Lᵀ = `a`, or None if `a` is not
/// numerically positive definite.
fn cholesky(mut a: Vec<f64>, k: usize) -> Option<Vec<f64>> {
    for j in 0..k {
        let pivot = a[j * k + j] - (0..j).map(|p| a[j * k + p] * a[j * k + p]).sum::<f64>();
        if pivot.is_nan() || pivot <= 0.0 || pivot.is_infinite() {
            return None;
        }
        let pivot = pivot.sqrt();
        a[j * k + j] = pivot;
        for i in j + 1..k {
            let s = a[i * k + j] - (0..j).map(|p| a[i * k + p] * a[j * k + p]).sum::<f64>();
            a[i * k + j] = s / pivot;
        }
    }
    Some(a)
}

/// Solves L·y = b in place.
fn forward(l: &[f64], k: usize, mut b: Vec<f64>) -> Vec<f64> {
    for i in 0..k {
        let s = b[i] - (0..i).map(|p| l[i * k + p] * b[p]).sum::<f64>();
        b[i] = s / l[i * k + i];
    }
    b
}

/// Solves Lᵀ·x = y in place.
fn backward(l: &[f64], k: usize, mut y: Vec<f64>) -> Vec<f64> {
    for i in (0..k).rev() {
        let s = y[i] - (i + 1..k).map(|p| l[p * k + i] * y[p]).sum::<f64>();
        y[i] = s / l[i * k + i];
    }
    y
}

/// One N-player match: (player index, rank) for each participant, rank 1 best, equal ranks are ties.
pub type RankedMatch = Vec<(usize, u32)>;

/// Weng–Lin (the `skillratings` crate, default config: mu 25, sigma 25/3, beta 25/6) over ranked
/// matches, applied in the given order (the caller orders matches deterministically by schedule
/// position). Each player is a one-person team. Value = mu, interval = mu ± 3 sigma.
///
/// Matches with fewer than 2 valid participants are skipped; out-of-range indices (debug-asserted)
/// are ignored, and so is a player's second appearance in one match.
pub fn weng_lin(players: usize, matches: &[RankedMatch]) -> Vec<Rating> {
    weng_lin_with_predecessors(players, matches, &[])
}

/// [`weng_lin`] where new versions of bots start from their predecessors' ratings (see
/// [`weng_lin_states`]).
pub fn weng_lin_with_predecessors(
    players: usize,
    matches: &[RankedMatch],
    predecessors: &[Option<usize>],
) -> Vec<Rating> {
    weng_lin_states(players, matches, predecessors).iter().map(|&(mu, sigma)| Rating::around(mu, 3.0 * sigma)).collect()
}

/// [`weng_lin`]'s ratings as (mu, sigma), where a player with a predecessor
/// (`predecessors[p]`: a ladder's new version of a bot) starts, at its first match, from
/// its predecessor's rating at that point with sigma widened
/// ([`crate::matchmaking::successor_rating`]) instead of from a new player's.
pub fn weng_lin_states(players: usize, matches: &[RankedMatch], predecessors: &[Option<usize>]) -> Vec<(f64, f64)> {
    let mut states = WengLinStates::new(players, predecessors);
    for ranked in matches {
        states.apply(ranked);
    }
    states.states()
}

/// Weng-Lin ratings kept match by match, as [`weng_lin_states`] applies them: for
/// whoever needs each step (a ladder's leagues and rating history).
#[derive(Debug, Clone)]
pub struct WengLinStates {
    config: WengLinConfig,
    ratings: Vec<WengLinRating>,
    started: Vec<bool>,
    predecessors: Vec<Option<usize>>,
}

impl WengLinStates {
    /// `players` new players; `predecessors[p]`, where given, is the player `p` is a new
    /// version of.
    pub fn new(players: usize, predecessors: &[Option<usize>]) -> Self {
        WengLinStates {
            config: WengLinConfig::new(),
            ratings: vec![WengLinRating::new(); players],
            started: vec![false; players],
            predecessors: predecessors.to_vec(),
        }
    }

    /// Rates one match; returns the players it rated, in seat order: none when it has
    /// fewer than 2 valid participants ([`weng_lin`] says which are).
    pub fn apply(&mut self, ranked: &RankedMatch) -> Vec<usize> {
        let players = self.ratings.len();
        let mut seen: Vec<(usize, u32)> = Vec::with_capacity(ranked.len());
        for &(p, rank) in ranked {
            debug_assert!(p < players, "player index {p} out of range in {ranked:?}");
            if p < players && !seen.iter().any(|&(q, _)| q == p) {
                seen.push((p, rank));
            }
        }
        if seen.len() < 2 {
            return Vec::new();
        }
        for &(p, _) in &seen {
            if !self.started[p] {
                self.started[p] = true;
                if let Some(old) = self.predecessor(p)
                    && let Some(previous) = self.ratings.get(old)
                {
                    let (mu, sigma) = crate::matchmaking::successor_rating(previous.rating, previous.uncertainty);
                    self.ratings[p] = WengLinRating { rating: mu, uncertainty: sigma };
                }
            }
        }
        let teams: Vec<[WengLinRating; 1]> = seen.iter().map(|&(p, _)| [self.ratings[p]]).collect();
        let input: Vec<(&[WengLinRating], MultiTeamOutcome)> = teams
            .iter()
            .zip(&seen)
            .map(|(team, &(_, rank))| (&team[..], MultiTeamOutcome::new(rank as usize)))
            .collect();
        for (&(p, _), team) in seen.iter().zip(weng_lin_multi_team(&input, &self.config)) {
            if let Some(&rating) = team.first() {
                self.ratings[p] = rating;
            }
        }
        seen.into_iter().map(|(p, _)| p).collect()
    }

    /// Player `p`'s (mu, sigma) now.
    pub fn state(&self, p: usize) -> (f64, f64) {
        (self.ratings[p].rating, self.ratings[p].uncertainty)
    }

    /// The player `p` is a new version of, if any.
    pub fn predecessor(&self, p: usize) -> Option<usize> {
        self.predecessors.get(p).copied().flatten()
    }

    /// The (mu, sigma) player `p`'s next match is rated from: its state, or before its
    /// first match, its predecessor's widened, as [`WengLinStates::apply`] starts it.
    pub fn prior(&self, p: usize) -> (f64, f64) {
        match self.predecessor(p) {
            Some(old) if !self.started[p] && old < self.ratings.len() => {
                let (mu, sigma) = self.state(old);
                crate::matchmaking::successor_rating(mu, sigma)
            }
            _ => self.state(p),
        }
    }

    /// Every player's (mu, sigma) now.
    pub fn states(&self) -> Vec<(f64, f64)> {
        (0..self.ratings.len()).map(|p| self.state(p)).collect()
    }
}

/// Two-sided 95% critical values of Student's t for 1..=30 degrees of freedom.
const T95: [f64; 30] = [
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139, 2.200985,
    2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963, 2.079614, 2.073873,
    2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
];

/// The 95% t critical value; past the table the Cornish–Fisher expansion, within 1e-4 there.
fn t95(df: usize) -> f64 {
    match T95.get(df.saturating_sub(1)) {
        Some(&t) => t,
        None => {
            let (z, d) = (Z95, df as f64);
            z + (z.powi(3) + z) / (4.0 * d) + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
        }
    }
}

/// Mean score per player with a 95% Student-t interval: mean ± t(n−1)·s/√n, s the sample standard
/// deviation. `scores[p]` are player p's scores; non-finite ones are ignored.
///
/// One score gives a zero-width interval at it. No scores gives value, low and high all 0 (JSON has
/// no NaN): the caller knows the match count and shows "-" for a player without matches.
pub fn mean_scores(scores: &[Vec<f64>]) -> Vec<Rating> {
    scores
        .iter()
        .map(|xs| {
            // Welford's update: no cancellation from summing squares of large scores.
            let (mut n, mut mean, mut m2) = (0usize, 0.0f64, 0.0f64);
            for &x in xs.iter().filter(|x| x.is_finite()) {
                n += 1;
                let d = x - mean;
                mean += d / n as f64;
                m2 += d * (x - mean);
            }
            if n < 2 {
                return Rating::around(mean, 0.0);
            }
            let sd = (m2 / (n - 1) as f64).sqrt();
            Rating::around(mean, t95(n - 1) * sd / (n as f64).sqrt())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `count` games between `a` and `b`, each scoring `score_a` for `a`.
    fn repeat(a: usize, b: usize, score_a: f64, count: usize) -> Vec<PairGame> {
        vec![PairGame { a, b, score_a }; count]
    }

    fn assert_finite(ratings: &[Rating]) {
        for r in ratings {
            assert!(r.value.is_finite() && r.low.is_finite() && r.high.is_finite(), "{r:?}");
            assert!(r.low <= r.value && r.value <= r.high, "{r:?}");
        }
    }

    #[test]
    fn two_players_three_of_four() {
        let games = [repeat(0, 1, 1.0, 3), repeat(0, 1, 0.0, 1)].concat();
        let r = bradley_terry(2, &games);
        // Stationarity of the log posterior, x = θa, y = θb (nats), virtual opponent at 0:
        //   a: 3 + 0.5 = 4σ(x−y) + σ(x)     b: 1 + 0.5 = 4σ(y−x) + σ(y)
        // Adding, with σ(u) + σ(−u) = 1: 5 = 4 + σ(x) + σ(y), so y = −x, and x solves
        //   3.5 = 4σ(2x) + σ(x)  →  x = 0.474443 (bisection), gap = 2x·400/ln 10 = 164.8385 Elo.
        // Without the prior, σ(x−y) = 3/4 gives 400·log10(3) = 190.8485.
        let (mut lo, mut hi) = (0.0, 1.0);
        for _ in 0..100 {
            let x = (lo + hi) / 2.0;
            if 3.5 - 4.0 * sigmoid(2.0 * x) - sigmoid(x) > 0.0 { lo = x } else { hi = x }
        }
        let gap = r[0].value - r[1].value;
        assert!((gap - 2.0 * lo * ELO_PER_NAT).abs() < 1e-6, "{gap}");
        assert!((gap - 164.8385).abs() < 1e-3 && gap < 400.0 * 3f64.log10());
        // y = −x: the mean is already 1500 and the players sit symmetrically about it.
        assert!((r[0].value + r[1].value - 3000.0).abs() < 1e-9);
        assert!((r[0].high - r[0].value - (r[1].high - r[1].value)).abs() < 1e-9);
        assert_finite(&r);
    }

    #[test]
    fn all_draws_is_1500() {
        let games = [repeat(0, 1, 0.5, 5), repeat(1, 2, 0.5, 2), repeat(2, 0, 0.5, 7)].concat();
        // Every score equals its expectation at θ = 0, so the first Newton step is 0.
        for r in bradley_terry(3, &games) {
            assert!((r.value - 1500.0).abs() < 1e-9, "{r:?}");
        }
    }

    /// A fixed schedule of 5 players with a bit of everything.
    fn schedule() -> Vec<PairGame> {
        let mut games = Vec::new();
        for i in 0..5 {
            for j in 0..5 {
                if i != j {
                    games.extend(repeat(i, j, 1.0, (i * 3 + j) % 4));
                    games.extend(repeat(i, j, 0.5, (i + j) % 2));
                }
            }
        }
        games
    }

    #[test]
    fn order_does_not_matter() {
        let games = schedule();
        // A fixed permutation: reverse, then take every 7th index (gcd(7, len) = 1 is asserted).
        let n = games.len();
        assert_ne!(n % 7, 0);
        let reversed: Vec<PairGame> = games.iter().rev().copied().collect();
        let shuffled: Vec<PairGame> = (0..n).map(|i| reversed[(i * 7) % n]).collect();
        assert_eq!(bradley_terry(5, &games), bradley_terry(5, &shuffled));
    }

    #[test]
    fn transitive_and_narrowing() {
        let games = |n: usize| {
            [repeat(0, 1, 1.0, 7 * n), repeat(0, 1, 0.0, 3 * n), repeat(1, 2, 1.0, 7 * n), repeat(1, 2, 0.0, 3 * n)]
                .concat()
                .into_iter()
                .chain([repeat(0, 2, 1.0, 17 * n), repeat(0, 2, 0.0, 3 * n)].concat())
                .collect::<Vec<_>>()
        };
        let few = bradley_terry(3, &games(10));
        let many = bradley_terry(3, &games(40));
        assert!(few[0].value > few[1].value && few[1].value > few[2].value, "{few:?}");
        assert_finite(&few);
        for (f, m) in few.iter().zip(&many) {
            // Standard errors go as 1/√games: 4× the games, about half the width.
            let ratio = (m.high - m.low) / (f.high - f.low);
            assert!((0.45..0.55).contains(&ratio), "{ratio}");
        }
    }

    #[test]
    fn swapping_players_swaps_ratings() {
        let games = schedule();
        let swap = |p: usize| [1, 0, 2, 3, 4][p];
        let swapped: Vec<PairGame> = games.iter().map(|g| PairGame { a: swap(g.a), b: swap(g.b), ..*g }).collect();
        let (r, s) = (bradley_terry(5, &games), bradley_terry(5, &swapped));
        for p in 0..5 {
            let (x, y) = (r[p], s[swap(p)]);
            assert!((x.value - y.value).abs() < 1e-9 && (x.low - y.low).abs() < 1e-9, "{x:?} {y:?}");
        }
    }

    #[test]
    fn only_wins_and_no_games_are_finite() {
        let r = bradley_terry(3, &repeat(0, 1, 1.0, 50));
        assert_finite(&r);
        assert!(r[0].value > 1800.0 && r[1].value < 1200.0, "{r:?}");
        // Player 2 never played: σ(θ0) + σ(θ1) = 1 as above, so the mean is 0 and it sits at 1500.
        // Its interval is about the prior's ±1.96·2·ELO_PER_NAT = ±681 (one virtual game carries
        // information 1/4), here wider as the mean of 0 and 1, who only met each other, is loose too.
        assert!((r[2].value - 1500.0).abs() < 1e-9);
        assert!((681.0..800.0).contains(&(r[2].high - r[2].value)), "{:?}", r[2]);
    }

    #[test]
    fn degenerate_inputs() {
        assert!(bradley_terry(0, &[]).is_empty());
        assert_eq!(bradley_terry(1, &[]), vec![Rating { value: 1500.0, low: 1500.0, high: 1500.0 }]);
        let r = bradley_terry(2, &[PairGame { a: 0, b: 0, score_a: 1.0 }, PairGame { a: 0, b: 1, score_a: f64::NAN }]);
        assert!(r.iter().all(|r| r.value == 1500.0));
        assert_finite(&r);
    }

    #[test]
    fn conjugate_gradients_agree_with_cholesky() {
        // 12 players, a deterministic pseudo-random schedule (LCG), with a strength gradient.
        let mut state = 12345u64;
        let mut games = Vec::new();
        for _ in 0..2000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let (a, b) = ((state >> 33) as usize % 12, (state >> 45) as usize % 12);
            let score_a = if (state >> 20) % 24 < (12 + a - b) as u64 { 1.0 } else { 0.0 };
            games.push(PairGame { a, b, score_a });
        }
        let (dense, sparse) = (fit(12, &games, DENSE_LIMIT), fit(12, &games, 0));
        assert_finite(&sparse);
        for (d, s) in dense.iter().zip(&sparse) {
            assert!((d.value - s.value).abs() < 1e-9, "{d:?} {s:?}");
            // Nearly a round robin: the diagonal interval is wider by about K/(K−1) = 12/11.
            let ratio = (s.high - s.value) / (d.high - d.value);
            assert!((1.0..1.15).contains(&ratio), "{ratio}");
        }
    }

    /// One skillratings call with one-person teams: the reference for [`weng_lin`].
    fn reference(entrants: &[(WengLinRating, usize)]) -> Vec<WengLinRating> {
        let teams: Vec<[WengLinRating; 1]> = entrants.iter().map(|&(r, _)| [r]).collect();
        let input: Vec<_> =
            teams.iter().zip(entrants).map(|(t, &(_, rank))| (&t[..], MultiTeamOutcome::new(rank))).collect();
        weng_lin_multi_team(&input, &WengLinConfig::new()).into_iter().map(|team| team[0]).collect()
    }

    #[test]
    fn weng_lin_matches_skillratings() {
        let r = weng_lin(3, &[vec![(0, 1), (1, 2), (2, 3)]]);
        let d = WengLinRating::new();
        for (got, want) in r.iter().zip(reference(&[(d, 1), (d, 2), (d, 3)])) {
            let (mu, three_sigma) = (want.rating, 3.0 * want.uncertainty);
            assert_eq!(*got, Rating { value: mu, low: mu - three_sigma, high: mu + three_sigma });
        }
        assert!(r[0].value > r[1].value && r[1].value > r[2].value, "{r:?}");
    }

    #[test]
    fn a_new_versions_prior_is_what_its_first_match_starts_from() {
        // Player 2 replaces player 0, which has played.
        let mut states = WengLinStates::new(3, &[None, None, Some(0)]);
        states.apply(&vec![(0, 1), (1, 2)]);
        let prior = states.prior(2);
        assert_eq!(prior, crate::matchmaking::successor_rating(states.state(0).0, states.state(0).1));
        assert_ne!(prior, states.state(2), "not a new player's");
        // Rated from its prior: the same as a player that had that rating.
        let other = states.state(1);
        states.apply(&vec![(2, 1), (1, 2)]);
        let rating = |(mu, sigma): (f64, f64)| WengLinRating { rating: mu, uncertainty: sigma };
        let expected = reference(&[(rating(prior), 1), (rating(other), 2)]);
        assert_eq!(states.state(2), (expected[0].rating, expected[0].uncertainty));
        assert_eq!(states.prior(2), states.state(2), "once started, its own");
        assert_eq!(states.prior(1), states.state(1));
    }

    #[test]
    fn weng_lin_ties_order_and_skips() {
        let tied = weng_lin(3, &[vec![(0, 1), (1, 1), (2, 2)]]);
        assert_eq!(tied[0], tied[1]);
        assert!(tied[1].value > tied[2].value);
        // Applied in order: the same as two successive skillratings calls, and not commutative.
        let (m1, m2) = (vec![(0, 1), (1, 2)], vec![(1, 1), (2, 2), (0, 3)]);
        let got = weng_lin(3, &[m1.clone(), m2.clone()]);
        let d = WengLinRating::new();
        let first = reference(&[(d, 1), (d, 2)]);
        let second = reference(&[(first[1], 1), (d, 2), (first[0], 3)]);
        assert_eq!([got[0].value, got[1].value, got[2].value], [second[2].rating, second[0].rating, second[1].rating]);
        assert_ne!(got, weng_lin(3, &[m2, m1]));
        // Fewer than 2 participants: nothing happens.
        assert_eq!(weng_lin(2, &[vec![(0, 1)], vec![]]), weng_lin(2, &[]));
    }

    #[test]
    fn mean_scores_by_hand() {
        let r = mean_scores(&[vec![1.0, 2.0, 3.0, 4.0], vec![7.0], vec![]]);
        // Mean 2.5; deviations ±1.5, ±0.5 → squares sum 5, s² = 5/3, s = 1.2909944;
        // t(3) = 3.182446, half width = 3.182446 · 1.2909944 / √4 = 2.0542601.
        assert_eq!(r[0].value, 2.5);
        assert!((r[0].high - 2.5 - 2.0542601).abs() < 1e-6 && (2.5 - r[0].low - 2.0542601).abs() < 1e-6, "{:?}", r[0]);
        assert_eq!(r[1], Rating { value: 7.0, low: 7.0, high: 7.0 });
        assert_eq!(r[2], Rating { value: 0.0, low: 0.0, high: 0.0 });
        // Past the table the expansion continues it smoothly (t(31) = 2.039513, t(120) = 1.979930).
        assert!((t95(31) - 2.039513).abs() < 1e-4 && (t95(120) - 1.979930).abs() < 1e-5);
    }

    /// Up to 40 games among players 0..6 of 7 (player 6 never plays; a == b happens and is ignored),
    /// mostly wins, draws and losses but some fractional scores, and the same games shuffled.
    fn games_and_shuffled() -> impl Strategy<Value = (Vec<PairGame>, Vec<PairGame>)> {
        let score = prop_oneof![3 => (0..3u8).prop_map(|s| f64::from(s) / 2.0), 1 => 0.0..=1.0f64];
        prop::collection::vec((0..6usize, 0..6usize, score), 0..40).prop_flat_map(|raw| {
            let games: Vec<PairGame> =
                raw.iter().map(|&(a, off, score_a)| PairGame { a, b: (a + off) % 6, score_a }).collect();
            (Just(games.clone()), Just(games).prop_shuffle())
        })
    }

    proptest! {
        #[test]
        fn bradley_terry_is_finite_and_order_free((games, shuffled) in games_and_shuffled()) {
            let (dense, sparse) = (bradley_terry(7, &games), fit(7, &games, 0));
            assert_finite(&dense);
            assert_finite(&sparse);
            prop_assert_eq!(&dense, &bradley_terry(7, &shuffled));
            prop_assert_eq!(&sparse, &fit(7, &shuffled, 0));
            for (d, s) in dense.iter().zip(&sparse) {
                prop_assert!((d.value - s.value).abs() < 1e-9, "{:?} {:?}", d, s);
            }
        }

        #[test]
        fn mean_scores_are_finite(scores in prop::collection::vec(prop::collection::vec(any::<f64>(), 0..6), 0..4)) {
            for r in mean_scores(&scores) {
                prop_assert!(r.value.is_finite() && r.low.is_finite() && r.high.is_finite(), "{:?}", r);
            }
        }
    }
}
