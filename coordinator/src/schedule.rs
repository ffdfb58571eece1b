//! Tournament formats expanded into fixtures: which bot sits in which seat.
//!
//! Everything here is pure and deterministic: the same arguments, seed included,
//! give the same fixtures in the same order. The caller multiplies fixtures by maps
//! and repetitions and derives job ids from them. Bots are indices `0..n`.
//!
//! A *group* is a set of bots sharing a table. Every group is played in all of its
//! cyclic seat rotations, so within a group every bot sits in every seat exactly
//! once and seat advantages cancel out; no group is played twice. Pair counts below
//! count groups (in fixtures, multiply by the number of seats `k`).
//!
//! # Which groups an N-player round robin plays
//!
//! [`round_robin_groups`] with `n` bots and `k` seats has room for `g =
//! max_fixtures / k` groups and uses the first plan that applies:
//!
//! 1. **Complete**, when `C(n, k) <= g`, or `C(n, k) <= n` (only `k >= n - 1`,
//!    where one orbit below would be no smaller): every group. Every pair meets
//!    `C(n-2, k-2)` times. With two seats this is [`round_robin_pairs`] exactly.
//! 2. **Exact** (cyclic). The bots are the points of Z_n, and a base block B ⊂ Z_n
//!    stands for its *orbit* {B + t : t ∈ Z_n}: n groups (only blocks with n
//!    distinct translates are used), every bot in exactly k of them, and the pair
//!    {x, x+d} in as many as there are pairs b, b' in B with b' - b = d. Pair counts
//!    therefore depend only on the difference class {d, n-d}: one per pair of B at
//!    that distance, except that the class n/2 counts twice (both orders give n/2).
//!    A family of m base blocks is played as m·n groups, every bot in exactly m·k.
//!    If a seeded local search finds m blocks covering every class equally (a
//!    cyclic difference family), every pair meets λ = m·k(k-1)/(n-1) times. Only m
//!    for which λ is whole, and even when n is even (the class n/2 counts double),
//!    can work; the four smallest such m with m·n <= g are tried, smallest first.
//! 3. **Within one** (cyclic): pair counts all t or t+1 for some t, every bot in
//!    exactly m·k groups. Sizes tried: m₁ = min(⌈1.5(n-1) / (k(k-1))⌉, g/n), at
//!    least 1 (the first term makes the average pair count about 1.5, so every
//!    pair meets once or twice, and halfway between two counts leaves the search
//!    the most room), then m₁ + 1 if it fits, then m₁/2, m₁/4, … down to 1 (pairs
//!    meet at most once when m·k(k-1) < n-1).
//! 4. **Uneven**, only if every search above fails: the most even single orbit the
//!    search reaches, still with every bot in k groups and every seat balanced.
//!    Some (n, k) have no single orbit within one (6 of 16 bots, 5 of 20: the
//!    best is 2, checked exhaustively in the tests), so with room for one orbit
//!    only, this is the best a cyclic plan can do. The tests check that plans 1-3
//!    are reached for every n <= 30 and k <= 5 at room for 1 orbit (but for such
//!    proven cases), 2 orbits and all groups but one, and for n <= 12, k <= 4 at
//!    random budgets and seeds.
//!
//! In the cyclic plans the bots are finally relabelled by a seeded permutation, so
//! which bots share tables does not follow their order in the list.
//!
//! The fixture count is at most `max_fixtures` whenever `max_fixtures >= k *
//! min(C(n, k), n)` (one orbit, or every group if there are fewer). A smaller
//! budget still gets that minimum, so every bot plays. The budget is a ceiling,
//! not a target: the cyclic plans stop at the sizes above, and volume should come
//! from maps and repetitions. Searches are bounded (moves × samples × sizes
//! tried), so even 1000 bots take a fraction of a second in a release build.

use std::collections::BTreeSet;

/// One match before it gets maps, repetitions and ids: the bot (index into the
/// tournament's bot list) in each seat, in seat order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fixture {
    /// The bot in each seat, seat 0 first.
    pub seats: Vec<usize>,
}

/// Why a format cannot be scheduled.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ScheduleError {
    /// A match needs at least two seats.
    #[error("a match needs at least 2 seats, but the format has {seats}")]
    TooFewSeats {
        /// The seats the format asked for.
        seats: usize,
    },
    /// Fewer bots than seats: no table can be filled with distinct bots.
    #[error("{needed}-seat matches need at least {needed} distinct bots, but there are {have}")]
    TooFewBots {
        /// Bots one match needs.
        needed: usize,
        /// Bots available.
        have: usize,
    },
    /// A gauntlet without candidates has nothing to test.
    #[error("the gauntlet has no candidates")]
    NoCandidates,
    /// A gauntlet without a pool has nobody for the candidates to play.
    #[error("the gauntlet pool is empty: candidates need pool bots to play against")]
    EmptyPool,
    /// The pool cannot fill the seats beside a candidate.
    #[error("{seats}-seat gauntlet matches need {needed} pool bots beside the candidate, but the pool has {have}")]
    PoolTooSmall {
        /// Seats per match.
        seats: usize,
        /// Pool bots one match needs.
        needed: usize,
        /// Pool bots available.
        have: usize,
    },
    /// A gauntlet never plays candidates against each other, so no bot can be both.
    #[error("bot {bot} is both a candidate and in the pool")]
    CandidateInPool {
        /// The bot listed on both sides.
        bot: usize,
    },
    /// A bot listed twice would play twice as often as the others.
    #[error("bot {bot} is listed twice")]
    DuplicateBot {
        /// The repeated bot.
        bot: usize,
    },
}

/// Every ordered pair of distinct bots: each pair meets twice, once on each side.
///
/// Pairs come in lexicographic order, each followed at once by its mirror:
/// `[0,1] [1,0] [0,2] [2,0] …`. Lazy: 1000 bots give 999,000 fixtures without
/// holding them. Fewer than two bots give none.
pub fn round_robin_pairs(bots: usize) -> impl Iterator<Item = Fixture> + Send + 'static {
    (0..bots).flat_map(move |a| {
        (a + 1..bots).flat_map(move |b| [Fixture { seats: vec![a, b] }, Fixture { seats: vec![b, a] }])
    })
}

/// N-player round robin: groups of `seats` bots, each group played in every cyclic
/// seat rotation, so every bot sits in every seat equally often within its group.
///
/// When `C(bots, seats) * seats <= max_fixtures`, every group is played and every
/// pair meets in `C(bots-2, seats-2) * seats` fixtures; with two seats that is
/// exactly [`round_robin_pairs`]. Otherwise cyclic orbits chosen deterministically
/// from `seed`, at most `max_fixtures` fixtures as long as `max_fixtures >= bots *
/// seats` (one orbit, the least ever returned): every bot plays the same number of
/// groups, and every pair meets equally often when the search finds a cyclic
/// difference family, else pair counts differ by at most one. The
/// [module documentation](self) gives the exact conditions.
pub fn round_robin_groups(
    bots: usize,
    seats: usize,
    max_fixtures: u64,
    seed: u64,
) -> Result<Vec<Fixture>, ScheduleError> {
    check_seats(seats)?;
    if bots < seats {
        return Err(ScheduleError::TooFewBots { needed: seats, have: bots });
    }
    let plan = plan_groups(bots, seats, max_fixtures / seats as u64, seed);
    Ok(plan.groups.iter().flat_map(|group| rotations(group)).collect())
}

/// Gauntlet: each candidate against the pool, never candidate vs candidate.
///
/// With 2 seats every candidate plays every pool bot on both sides. With N seats
/// each candidate sits with `seats - 1` pool bots, taking every seat across the
/// rotations; the pool groups are chosen as [`round_robin_groups`] chooses groups,
/// over the pool (every pool bot equally often, pool pairs balanced), with room for
/// `max_fixtures / candidates` fixtures per candidate (and at least one orbit, so
/// every candidate meets every pool bot). All candidates face the same pool groups,
/// so their results are directly comparable.
pub fn gauntlet(
    candidates: &[usize],
    pool: &[usize],
    seats: usize,
    max_fixtures: u64,
    seed: u64,
) -> Result<Vec<Fixture>, ScheduleError> {
    check_seats(seats)?;
    if candidates.is_empty() {
        return Err(ScheduleError::NoCandidates);
    }
    if pool.is_empty() {
        return Err(ScheduleError::EmptyPool);
    }
    let mut seen = BTreeSet::new();
    for &bot in candidates.iter().chain(pool) {
        if !seen.insert(bot) {
            return Err(match candidates.contains(&bot) && pool.contains(&bot) {
                true => ScheduleError::CandidateInPool { bot },
                false => ScheduleError::DuplicateBot { bot },
            });
        }
    }
    if pool.len() < seats - 1 {
        return Err(ScheduleError::PoolTooSmall { seats, needed: seats - 1, have: pool.len() });
    }
    let groups_per_candidate = max_fixtures / (candidates.len() as u64).saturating_mul(seats as u64);
    let plan = plan_groups(pool.len(), seats - 1, groups_per_candidate, seed);
    let mut fixtures = Vec::with_capacity(candidates.len() * plan.groups.len() * seats);
    for &candidate in candidates {
        for group in &plan.groups {
            let table: Vec<usize> = std::iter::once(candidate).chain(group.iter().map(|&i| pool[i])).collect();
            fixtures.extend(rotations(&table));
        }
    }
    Ok(fixtures)
}

fn check_seats(seats: usize) -> Result<(), ScheduleError> {
    match seats {
        0 | 1 => Err(ScheduleError::TooFewSeats { seats }),
        _ => Ok(()),
    }
}

/// The cyclic rotations of a table, the unrotated one first.
fn rotations(group: &[usize]) -> impl Iterator<Item = Fixture> + '_ {
    let k = group.len();
    (0..k).map(move |r| Fixture { seats: (0..k).map(|i| group[(i + r) % k]).collect() })
}

/// Which plan of the module documentation produced a set of groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Balance {
    /// Every k-subset of the bots.
    Complete,
    /// Cyclic orbits in which every pair meets equally often.
    Exact,
    /// Cyclic orbits in which pair counts differ by at most one.
    WithinOne,
    /// The most even single orbit the search found.
    Uneven,
}

/// Groups (each sorted, in sorted order) and the plan that produced them.
#[derive(Debug)]
struct Plan {
    groups: Vec<Vec<usize>>,
    #[cfg_attr(not(test), expect(dead_code, reason = "the tests hold each plan to its claim"))]
    balance: Balance,
}

/// Family sizes tried for an exact design before settling for "within one".
const EXACT_SIZES_TRIED: usize = 4;
/// Moves per local search; with the samples below this bounds the running time.
const MOVES_PER_SEARCH: usize = 40_000;
/// Destinations sampled per move, the best one tried: tight designs need it.
const SAMPLES_PER_MOVE: usize = 8;

/// The groups of `k` among `n` bots to play: at most `max_groups` of them, unless
/// that is less than one orbit. Requires `1 <= k <= n`.
fn plan_groups(n: usize, k: usize, max_groups: u64, seed: u64) -> Plan {
    if binomial(n, k) <= max_groups.max(n as u64) {
        return Plan { groups: combinations(n, k), balance: Balance::Complete };
    }
    // From here 2 <= k <= n-2 and n >= 4, since other k have C(n, k) <= n.
    let max_orbits = usize::try_from(max_groups / n as u64).unwrap_or(usize::MAX).max(1);
    let mut rng = SplitMix64(seed);
    let (blocks, balance) = cyclic_family(n, k, max_orbits, &mut rng);
    let mut label: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        label.swap(i, rng.below(i + 1));
    }
    let mut groups: Vec<Vec<usize>> = blocks
        .iter()
        .flat_map(|block| (0..n).map(move |t| block.iter().map(move |&x| (x + t) % n)))
        .map(|group| {
            let mut group: Vec<usize> = group.map(|x| label[x]).collect();
            group.sort_unstable();
            group
        })
        .collect();
    groups.sort_unstable();
    Plan { groups, balance }
}

/// Base blocks in Z_n for the cyclic plans, at most `max_orbits` of them unless
/// none is found within one (then one).
fn cyclic_family(n: usize, k: usize, max_orbits: usize, rng: &mut SplitMix64) -> (Vec<Vec<usize>>, Balance) {
    let per_block = k * (k - 1);
    // λ = m·k(k-1)/(n-1) must be whole, and even when n is even.
    let divisor = if n.is_multiple_of(2) { 2 * (n - 1) } else { n - 1 };
    let step = divisor / gcd(divisor, per_block);
    let exact_sizes = (1..=EXACT_SIZES_TRIED).map(|i| i * step).take_while(|&m| m <= max_orbits);
    for m in exact_sizes {
        if let Some(family) = search(n, k, m, 0, rng) {
            return (family.blocks, Balance::Exact);
        }
    }
    let first = (3 * (n - 1)).div_ceil(2 * per_block).min(max_orbits);
    let one_more = Some(first + 1).filter(|&m| m <= max_orbits);
    let fewer = std::iter::successors(Some(first / 2), |&m| Some(m / 2)).take_while(|&m| m > 0);
    for m in std::iter::once(first).chain(one_more).chain(fewer) {
        if let Some(family) = search(n, k, m, 1, rng) {
            return (family.blocks, Balance::WithinOne);
        }
    }
    // Pair counts within one are out of reach: take the smallest spread found.
    let max_spread = (k * k) as u64;
    let family = (2..=max_spread).find_map(|goal| search(n, k, 1, goal, rng));
    (family.map_or_else(|| vec![(0..k).collect()], |family| family.blocks), Balance::Uneven)
}

/// Seeded local search for `m` base blocks of distinct full orbits whose pair
/// counts differ by at most `goal`. Each move shifts one point of one block to the
/// best of a few random places, kept unless it makes the counts less even (and
/// then sometimes anyway, to walk off plateaus). `None` when the moves run out.
fn search(n: usize, k: usize, m: usize, goal: u64, rng: &mut SplitMix64) -> Option<Family> {
    let mut family = Family::random(n, k, m, rng)?;
    if family.spread() <= goal {
        return Some(family);
    }
    let mut best_cost = family.cost;
    for _ in 0..MOVES_PER_SEARCH {
        let (i, j) = (rng.below(m), rng.below(k));
        let old = family.blocks[i][j];
        let mut choice: Option<(usize, i64)> = None;
        for _ in 0..SAMPLES_PER_MOVE {
            let point = rng.below(n);
            if family.blocks[i].contains(&point) {
                continue;
            }
            let delta = family.replace(i, j, point);
            family.replace(i, j, old);
            if choice.is_none_or(|(_, best)| delta < best) {
                choice = Some((point, delta));
            }
        }
        let Some((point, delta)) = choice else { continue };
        if (delta > 0 && rng.below(64) != 0) || !family.try_move(i, j, point) {
            continue;
        }
        if family.cost < best_cost {
            best_cost = family.cost;
            if family.spread() <= goal {
                return Some(family);
            }
        }
    }
    None
}

/// Base blocks of distinct full orbits in Z_n, with their pair counts.
struct Family {
    n: usize,
    blocks: Vec<Vec<usize>>,
    /// Orbit keys of `blocks`, so that no group is played twice.
    keys: BTreeSet<Vec<usize>>,
    /// `cover[c]`: groups holding any one pair {x, x+c}, for classes c in 1..=n/2.
    cover: Vec<u64>,
    /// The sum over pairs of cover² (in units of n/2 pairs). Its total cover is fixed
    /// by m, so it is smallest exactly when the cover is even: a smooth guide.
    cost: i64,
}

impl Family {
    /// `m` random distinct full orbits, if that many turn up in a few tries each.
    fn random(n: usize, k: usize, m: usize, rng: &mut SplitMix64) -> Option<Family> {
        let mut family = Family { n, blocks: Vec::new(), keys: BTreeSet::new(), cover: vec![0; n / 2 + 1], cost: 0 };
        let mut points: Vec<usize> = (0..n).collect();
        for _ in 0..m.saturating_mul(20) {
            if family.blocks.len() == m {
                break;
            }
            for i in 0..k {
                points.swap(i, i + rng.below(n - i));
            }
            let block = points[..k].to_vec();
            let Some(key) = orbit_key(&block, n) else { continue };
            if family.keys.insert(key) {
                for (i, &a) in block.iter().enumerate() {
                    for &b in &block[..i] {
                        family.cost += family.count_pair(a, b, 1);
                    }
                }
                family.blocks.push(block);
            }
        }
        (family.blocks.len() == m).then_some(family)
    }

    /// Adds (`step` 1) or removes (`step` -1) the pair {a, b} of one base block;
    /// returns the change in cost.
    fn count_pair(&mut self, a: usize, b: usize, step: i64) -> i64 {
        let d = a.abs_diff(b);
        let class = d.min(self.n - d);
        // The class n/2 has half as many pairs, each covered from both of its ends.
        let (weight, times) = if 2 * class == self.n { (1, 2) } else { (2, 1) };
        let mut delta = 0;
        for _ in 0..times {
            let before = self.cover[class] as i64;
            let after = before + step;
            delta += weight * (after * after - before * before);
            self.cover[class] = after as u64;
        }
        delta
    }

    /// Puts `point` in place of point `j` of block `i`; returns the change in cost.
    fn replace(&mut self, i: usize, j: usize, point: usize) -> i64 {
        let old = self.blocks[i][j];
        let mut delta = 0;
        for other in 0..self.blocks[i].len() {
            if other != j {
                let x = self.blocks[i][other];
                delta += self.count_pair(old, x, -1) + self.count_pair(point, x, 1);
            }
        }
        self.blocks[i][j] = point;
        self.cost += delta;
        delta
    }

    /// [`Family::replace`], unless the block would repeat another orbit or have a
    /// short one; returns whether it moved.
    fn try_move(&mut self, i: usize, j: usize, point: usize) -> bool {
        let old = self.blocks[i][j];
        let old_key = orbit_key(&self.blocks[i], self.n).unwrap_or_default();
        self.replace(i, j, point);
        match orbit_key(&self.blocks[i], self.n) {
            Some(key) if key == old_key || !self.keys.contains(&key) => {
                self.keys.remove(&old_key);
                self.keys.insert(key);
                true
            }
            _ => {
                self.replace(i, j, old);
                false
            }
        }
    }

    /// The largest pair count minus the smallest.
    fn spread(&self) -> u64 {
        let classes = &self.cover[1..];
        classes.iter().max().copied().unwrap_or(0) - classes.iter().min().copied().unwrap_or(0)
    }
}

/// The orbit's canonical block (the smallest sorted translate), or `None` when some
/// translation fixes the block: its orbit is short, and playing it would break the
/// pair count arithmetic.
fn orbit_key(block: &[usize], n: usize) -> Option<Vec<usize>> {
    let mut translates: Vec<Vec<usize>> = block
        .iter()
        .map(|&origin| {
            let mut shifted: Vec<usize> = block.iter().map(|&x| (x + n - origin) % n).collect();
            shifted.sort_unstable();
            shifted
        })
        .collect();
    translates.sort_unstable();
    let translate_count = translates.len();
    translates.dedup();
    (translates.len() == translate_count).then(|| translates.swap_remove(0))
}

/// All k-subsets of 0..n in lexicographic order.
fn combinations(n: usize, k: usize) -> Vec<Vec<usize>> {
    let mut all = Vec::new();
    let mut current: Vec<usize> = (0..k).collect();
    loop {
        all.push(current.clone());
        // Advance the rightmost position that can, and restart everything after it.
        let Some(i) = (0..k).rev().find(|&i| current[i] < n - k + i) else { return all };
        current[i] += 1;
        for j in i + 1..k {
            current[j] = current[j - 1] + 1;
        }
    }
}

/// C(n, k), saturating at `u64::MAX`. Requires `k <= n`.
fn binomial(n: usize, k: usize) -> u64 {
    let mut c: u128 = 1;
    for i in 0..k.min(n - k) {
        // c is C(n, i) here, so the division is exact.
        c = c * (n - i) as u128 / (i + 1) as u128;
        if c > u128::from(u64::MAX) {
            return u64::MAX;
        }
    }
    c as u64
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// splitmix64: tiny and well mixed, so that schedules depend on the seed alone.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Nearly uniform in `0..n` (bias below n / 2^64, harmless here).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Groups each pair of bots shares, over all pairs of `0..n` (missing pairs count 0).
    fn pair_counts(groups: &[Vec<usize>], n: usize) -> Vec<u64> {
        let mut counts = vec![0; n * n];
        for group in groups {
            for (i, &a) in group.iter().enumerate() {
                for &b in &group[..i] {
                    counts[a.min(b) * n + a.max(b)] += 1;
                }
            }
        }
        (0..n).flat_map(|a| (a + 1..n).map(move |b| (a, b))).map(|(a, b)| counts[a * n + b]).collect()
    }

    fn spread(counts: &[u64]) -> u64 {
        counts.iter().max().copied().unwrap_or(0) - counts.iter().min().copied().unwrap_or(0)
    }

    /// `times[bot][seat]`: how often each bot sits in each seat.
    fn seat_counts(fixtures: &[Fixture], n: usize, k: usize) -> Vec<Vec<u64>> {
        let mut times = vec![vec![0; k]; n];
        for fixture in fixtures {
            for (seat, &bot) in fixture.seats.iter().enumerate() {
                times[bot][seat] += 1;
            }
        }
        times
    }

    /// How often `bot` sits in each seat of `tables`.
    fn seat_times(tables: &[Vec<usize>], bot: usize, seats: usize) -> Vec<usize> {
        (0..seats).map(|seat| tables.iter().filter(|table| table[seat] == bot).count()).collect()
    }

    /// The distinct sets of pool bots at `tables`.
    fn pool_groups(tables: &[Vec<usize>], pool: &[usize]) -> BTreeSet<Vec<usize>> {
        let in_pool = |table: &Vec<usize>| {
            let mut group: Vec<usize> = table.iter().copied().filter(|bot| pool.contains(bot)).collect();
            group.sort_unstable();
            group
        };
        tables.iter().map(in_pool).collect()
    }

    /// The smallest pair count spread of any single orbit of a k-block in Z_n.
    fn best_single_orbit_spread(n: usize, k: usize) -> u64 {
        let blocks = combinations(n - 1, k - 1)
            .into_iter()
            .map(|rest| std::iter::once(0).chain(rest.into_iter().map(|x| x + 1)).collect::<Vec<_>>());
        let full = blocks.filter(|block| orbit_key(block, n).is_some());
        let groups = full.map(|block| (0..n).map(|t| block.iter().map(|&x| (x + t) % n).collect()).collect());
        groups.map(|groups: Vec<Vec<usize>>| spread(&pair_counts(&groups, n))).min().unwrap_or(u64::MAX)
    }

    #[test]
    fn pairs_cover_every_ordered_pair_once() {
        let n = 7;
        let fixtures: Vec<Fixture> = round_robin_pairs(n).collect();
        assert_eq!(fixtures.len(), n * (n - 1));
        let distinct: BTreeSet<&Fixture> = fixtures.iter().collect();
        assert_eq!(distinct.len(), fixtures.len());
        assert!(fixtures.iter().all(|f| f.seats.len() == 2 && f.seats[0] != f.seats[1] && f.seats[1] < n));
        assert_eq!(round_robin_pairs(1000).count(), 999_000);
        assert_eq!(round_robin_pairs(1).count(), 0);
        assert_eq!(round_robin_pairs(0).count(), 0);
    }

    #[test]
    fn pairs_are_lazy() {
        let first: Vec<Fixture> = round_robin_pairs(100_000).take(3).collect();
        let seats: Vec<Vec<usize>> = first.into_iter().map(|f| f.seats).collect();
        assert_eq!(seats, vec![vec![0, 1], vec![1, 0], vec![0, 2]]);
    }

    #[test]
    fn two_seat_groups_match_pairs_when_complete() {
        for n in 2..=9 {
            let budget = (n * (n - 1)) as u64;
            let groups = round_robin_groups(n, 2, budget, 5).expect("schedulable");
            assert_eq!(groups, round_robin_pairs(n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn complete_groups_meet_every_pair_equally() {
        // C(6, 3) = 20 groups, 60 fixtures; each pair in C(4, 1) = 4 groups.
        let fixtures = round_robin_groups(6, 3, 60, 0).expect("schedulable");
        assert_eq!(fixtures.len(), 60);
        let plan = plan_groups(6, 3, 20, 0);
        assert_eq!(plan.balance, Balance::Complete);
        assert!(pair_counts(&plan.groups, 6).iter().all(|&c| c == 4));
    }

    #[test]
    fn known_cyclic_designs_are_found() {
        // Fano plane {0, 1, 3} in Z_7 and the difference set {0, 1, 3, 9} in Z_13.
        for (n, k, lambda) in [(7, 3, 1), (13, 4, 1), (9, 3, 3)] {
            let plan = plan_groups(n, k, binomial(n, k) - 1, 1);
            assert_eq!(plan.balance, Balance::Exact, "n={n} k={k}");
            assert!(pair_counts(&plan.groups, n).iter().all(|&c| c == lambda), "n={n} k={k}");
        }
    }

    #[test]
    fn errors_explain_impossible_formats() {
        assert_eq!(round_robin_groups(5, 1, 100, 0), Err(ScheduleError::TooFewSeats { seats: 1 }));
        assert_eq!(round_robin_groups(5, 0, 100, 0), Err(ScheduleError::TooFewSeats { seats: 0 }));
        assert_eq!(round_robin_groups(3, 4, 100, 0), Err(ScheduleError::TooFewBots { needed: 4, have: 3 }));
        let message = ScheduleError::TooFewBots { needed: 4, have: 3 }.to_string();
        assert_eq!(message, "4-seat matches need at least 4 distinct bots, but there are 3");
        assert_eq!(gauntlet(&[0], &[1, 2], 1, 100, 0), Err(ScheduleError::TooFewSeats { seats: 1 }));
        assert_eq!(gauntlet(&[], &[1, 2], 2, 100, 0), Err(ScheduleError::NoCandidates));
        assert_eq!(gauntlet(&[0], &[], 2, 100, 0), Err(ScheduleError::EmptyPool));
        assert_eq!(gauntlet(&[0, 1], &[2, 1], 2, 100, 0), Err(ScheduleError::CandidateInPool { bot: 1 }));
        assert_eq!(gauntlet(&[0], &[2, 3, 2], 2, 100, 0), Err(ScheduleError::DuplicateBot { bot: 2 }));
        assert_eq!(gauntlet(&[0, 0], &[2], 2, 100, 0), Err(ScheduleError::DuplicateBot { bot: 0 }));
        assert_eq!(
            gauntlet(&[0], &[1, 2], 4, 100, 0),
            Err(ScheduleError::PoolTooSmall { seats: 4, needed: 3, have: 2 })
        );
        assert!(gauntlet(&[0], &[1, 2], 3, 100, 0).is_ok());
    }

    #[test]
    fn two_seat_gauntlet_plays_every_pool_bot_on_both_sides() {
        let candidates = [7, 3];
        let pool = [0, 5, 9];
        let fixtures = gauntlet(&candidates, &pool, 2, 0, 1).expect("schedulable");
        let mut expected = Vec::new();
        for c in candidates {
            for p in pool {
                expected.push(vec![c, p]);
                expected.push(vec![p, c]);
            }
        }
        let mut got: Vec<Vec<usize>> = fixtures.into_iter().map(|f| f.seats).collect();
        got.sort();
        expected.sort();
        assert_eq!(got, expected);
    }

    #[test]
    fn within_one_is_reached_for_moderate_sizes() {
        // The only (n, k) here with no single orbit within one; see the module docs.
        let no_even_orbit = [(16, 6), (20, 5), (22, 5)];
        for n in 4..=30 {
            for k in 2..=5.min(n - 2) {
                let all = binomial(n, k);
                for max_groups in [n as u64, 2 * n as u64, all - 1] {
                    let plan = plan_groups(n, k, max_groups, 11);
                    let spread = spread(&pair_counts(&plan.groups, n));
                    match plan.balance {
                        Balance::Complete | Balance::Exact => assert_eq!(spread, 0, "n={n} k={k}"),
                        Balance::WithinOne => assert!(spread <= 1, "n={n} k={k}"),
                        Balance::Uneven => {
                            assert!(max_groups < 2 * n as u64 && no_even_orbit.contains(&(n, k)), "n={n} k={k}");
                            assert_eq!(spread, best_single_orbit_spread(n, k), "n={n} k={k}");
                        }
                    }
                    assert!(plan.groups.len() as u64 <= max_groups.max(n as u64), "n={n} k={k}");
                }
            }
        }
        for (n, k) in no_even_orbit {
            assert_eq!(best_single_orbit_spread(n, k), 2, "n={n} k={k}");
        }
    }

    #[test]
    fn large_tournaments_stay_cheap_and_balanced() {
        let fixtures = round_robin_groups(1000, 4, 4000, 3).expect("schedulable");
        assert_eq!(fixtures.len(), 4000);
        let times = seat_counts(&fixtures, 1000, 4);
        assert!(times.iter().all(|seats| seats == &vec![4; 4]));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn round_robin_groups_are_balanced(
            (n, k) in (2usize..=12).prop_flat_map(|n| (Just(n), 2..=n.min(4))),
            max_fixtures in prop_oneof![0u64..100, 0u64..2000],
            seed: u64,
        ) {
            let fixtures = round_robin_groups(n, k, max_fixtures, seed).expect("schedulable");
            prop_assert_eq!(&fixtures, &round_robin_groups(n, k, max_fixtures, seed).expect("schedulable"));
            let plan = plan_groups(n, k, max_fixtures / k as u64, seed);
            let rotated: Vec<Fixture> = plan.groups.iter().flat_map(|g| rotations(g)).collect();
            prop_assert_eq!(&fixtures, &rotated);

            for fixture in &fixtures {
                let distinct: BTreeSet<usize> = fixture.seats.iter().copied().collect();
                prop_assert_eq!(distinct.len(), k);
                prop_assert!(fixture.seats.iter().all(|&bot| bot < n));
            }
            let distinct_groups: BTreeSet<&Vec<usize>> = plan.groups.iter().collect();
            prop_assert_eq!(distinct_groups.len(), plan.groups.len());

            // Every bot plays, equally often, and equally often in every seat.
            let times = seat_counts(&fixtures, n, k);
            let per_seat = times[0][0];
            prop_assert!(per_seat > 0);
            prop_assert!(times.iter().all(|seats| seats.iter().all(|&t| t == per_seat)));

            let spread = spread(&pair_counts(&plan.groups, n));
            match plan.balance {
                Balance::Complete | Balance::Exact => prop_assert_eq!(spread, 0),
                Balance::WithinOne => prop_assert!(spread <= 1),
                Balance::Uneven => prop_assert!(false, "no plan within one for n={} k={}", n, k),
            }

            let minimum = k as u64 * binomial(n, k).min(n as u64);
            if max_fixtures >= minimum {
                prop_assert!(fixtures.len() as u64 <= max_fixtures);
            } else {
                prop_assert_eq!(fixtures.len() as u64, minimum);
            }
            if k == 2 && max_fixtures >= (n * (n - 1)) as u64 {
                prop_assert_eq!(&fixtures, &round_robin_pairs(n).collect::<Vec<_>>());
            }
        }

        #[test]
        fn gauntlets_pit_candidates_against_the_pool_only(
            candidate_count in 1usize..=3,
            pool_size in 1usize..=9,
            seats in 2usize..=4,
            max_fixtures in 0u64..3000,
            seed: u64,
        ) {
            prop_assume!(seats <= pool_size + 1);
            // Interleave labels so candidates are not simply the first bots.
            let candidates: Vec<usize> = (0..candidate_count).map(|i| 3 * i + 1).collect();
            let pool: Vec<usize> = (0..pool_size).map(|i| 100 + 2 * i).collect();
            let fixtures = gauntlet(&candidates, &pool, seats, max_fixtures, seed).expect("schedulable");
            prop_assert_eq!(&fixtures, &gauntlet(&candidates, &pool, seats, max_fixtures, seed).expect("schedulable"));

            let mut per_candidate: Vec<Vec<Vec<usize>>> = vec![Vec::new(); candidate_count];
            for fixture in &fixtures {
                prop_assert_eq!(fixture.seats.len(), seats);
                let distinct: BTreeSet<usize> = fixture.seats.iter().copied().collect();
                prop_assert_eq!(distinct.len(), seats);
                prop_assert!(fixture.seats.iter().all(|bot| candidates.contains(bot) || pool.contains(bot)));
                let at_table: Vec<usize> =
                    (0..candidate_count).filter(|&c| fixture.seats.contains(&candidates[c])).collect();
                prop_assert_eq!(at_table.len(), 1, "one candidate per table");
                per_candidate[at_table[0]].push(fixture.seats.clone());
            }
            for (c, tables) in per_candidate.iter().enumerate() {
                // The candidate takes every seat equally often ...
                let times = seat_times(tables, candidates[c], seats);
                prop_assert!(times[0] > 0 && times.iter().all(|&t| t == times[0]));
                // ... and meets every pool bot equally often, each in every seat equally often.
                let mut totals = BTreeSet::new();
                for &bot in &pool {
                    let times = seat_times(tables, bot, seats);
                    prop_assert!(times[0] > 0 && times.iter().all(|&t| t == times[0]));
                    totals.insert(times[0]);
                }
                prop_assert_eq!(totals.len(), 1);
                // Every candidate faces the same pool groups.
                prop_assert_eq!(pool_groups(tables, &pool), pool_groups(&per_candidate[0], &pool));
            }

            let minimum = (candidate_count * seats) as u64 * binomial(pool_size, seats - 1).min(pool_size as u64);
            prop_assert!(fixtures.len() as u64 <= max_fixtures.max(minimum));
        }
    }
}
