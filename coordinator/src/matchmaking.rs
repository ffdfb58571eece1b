//! Continuous-ladder matchmaking: which match to queue next.
//!
//! A ladder has no schedule. The coordinator keeps its queue filled to a target depth
//! and asks [`next_match`] for each match to add, with every active bot's rating and
//! what it already has queued; bots may join and leave between calls. Everything here
//! is pure and deterministic: the same entrants and seed give the same match.
//!
//! # Who plays
//! 1. **The least certain bot first.** The *focus* is the bot with the highest
//!    sigma, discounted for the matches it already has queued:
//!    `sigma / sqrt(1 + outstanding)`. That is the sigma it would have if each
//!    queued match taught as much about it as everything so far: it overstates what
//!    one match teaches, on purpose, so that a queue filled in one go spreads over
//!    bots (a new bot among settled ones still gets several queued at once, which is
//!    what a new bot needs). It needs no model parameter and never goes negative.
//!    Exact ties go to a seeded draw.
//! 2. **Opponents near in rating.** The others at the table are the `seats - 1`
//!    bots nearest the focus in mu, where each bot's distance also counts
//!    [`OUTSTANDING_PENALTY`] per queued match (so busy bots rest a little) and a
//!    seeded draw of up to [`JITTER`] (so bots about equally near take turns and the
//!    ladder does not freeze into the same tables).
//! 3. **Never the same table twice in a row.** No bot at the table may have had
//!    exactly this table as its most recent scheduled match: if the nearest table
//!    would be one, the next nearest (in the order that keeps the nearest bots and
//!    swaps out the farthest) is taken, and if every table around the focus would
//!    be one, the next focus is tried. Only when no table at all is new (two bots
//!    at 2 seats, say, or inconsistent histories) is the first focus's nearest
//!    table repeated. With consistent histories some table is new once there are
//!    more bots than seats: the bots of the latest match can swap one of their
//!    number for an outsider.
//! 4. **Leagues.** With [`next_match_in_leagues`], the others come from the focus's
//!    league, or from leagues at most `reach` away from it. When those hold too few
//!    bots for a table, or no table new to its bots (two bots alone in a league would
//!    otherwise meet every other match, or never), the reach widens to the next league
//!    that does, before another focus is tried.
//! 5. **Seats** are shuffled by the seed: the ladder keeps no seat history, and a
//!    uniform draw gives no bot a seat advantage on average.
//!
//! A table has `seats` bots, or every entrant when there are fewer but at least
//! `min_table` (a game that fills empty seats itself, as Vindinium does). Ratings
//! that are not numbers, or infinite, are read as a new bot's ([`DEFAULT_MU`],
//! [`DEFAULT_SIGMA`]); a negative sigma as 0.

use std::collections::BTreeSet;

use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A new bot's mu: Weng-Lin's (and TrueSkill's) default.
pub const DEFAULT_MU: f64 = 25.0;

/// A new bot's sigma: a third of [`DEFAULT_MU`], as in Weng-Lin and TrueSkill.
pub const DEFAULT_SIGMA: f64 = DEFAULT_MU / 3.0;

/// How much nearer in mu a bot must be to beat, as an opponent, a bot that has one
/// more match queued: about a tenth of the default beta (25/6), so mild next to the
/// mu gaps of a spread-out ladder.
pub const OUTSTANDING_PENALTY: f64 = 0.4;

/// The width, in mu, of the seeded draw added to each opponent's distance: bots this
/// close count as about equally near and take turns. About a quarter of the default
/// beta, the rating gap at which the stronger of two settled bots wins about 54% of
/// 2-player games under Weng-Lin's logistic model.
pub const JITTER: f64 = 1.0;

/// One bot on the ladder.
#[derive(Debug, Clone, PartialEq)]
pub struct LadderEntrant {
    /// The bot: an index into the tournament's bot list.
    pub bot: usize,
    /// Its Weng-Lin mu: the rating estimate.
    pub mu: f64,
    /// Its Weng-Lin sigma: how uncertain `mu` is.
    pub sigma: f64,
    /// Its league (0 for a ladder without leagues): see [`next_match_in_leagues`].
    pub league: usize,
    /// Matches it has scheduled but not yet played.
    pub outstanding: u32,
    /// The other bots at its most recent scheduled match, in any order; empty if it
    /// has none.
    pub last_met: Vec<usize>,
}

/// The next match to queue: the bots in seat order, or `None` when there are fewer
/// entrants than `min_table` (at least 2, at most `seats`) or `seats` is below 2.
/// The [module documentation](self) gives the rules. An entrant listed twice counts
/// once, as its first entry.
pub fn next_match(entrants: &[LadderEntrant], seats: usize, min_table: usize, seed: u64) -> Option<Vec<usize>> {
    next_match_in_leagues(entrants, seats, min_table, usize::MAX, seed)
}

/// [`next_match`] where the focus's opponents come from leagues at most `reach` from
/// its own (rule 4 of the [module documentation](self)).
pub fn next_match_in_leagues(
    entrants: &[LadderEntrant],
    seats: usize,
    min_table: usize,
    reach: usize,
    seed: u64,
) -> Option<Vec<usize>> {
    if seats < 2 {
        return None;
    }
    let mut seen = BTreeSet::new();
    let entrants: Vec<Rated> = entrants.iter().filter(|e| seen.insert(e.bot)).map(Rated::new).collect();
    if entrants.len() < min_table.clamp(2, seats) {
        return None;
    }
    let size = seats.min(entrants.len());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);

    let mut foci: Vec<&Rated> = entrants.iter().collect();
    foci.shuffle(&mut rng);
    // Stable, so exact ties keep their shuffled order.
    foci.sort_by(|a, b| b.priority().total_cmp(&a.priority()));
    let mut nearest_of_first = None;
    for focus in foci {
        let (table, new) = table_for(focus, &entrants, size, reach, &mut rng);
        if new {
            return Some(seat(table, &mut rng));
        }
        nearest_of_first.get_or_insert(table);
    }
    nearest_of_first.map(|table| seat(table, &mut rng))
}

/// A replaced bot's starting rating (a new version of the same bot): the old mu, the
/// best guess of the new version's strength, with sigma widened to
/// `sqrt(sigma² + (DEFAULT_SIGMA / 2)²)`, but never past a new bot's [`DEFAULT_SIGMA`].
///
/// The added spread, half the default sigma, is the default beta: a new version is
/// taken to differ from the old by about one beta, the gap at which the stronger of
/// two settled bots wins about 67% of 2-player games under Weng-Lin's logistic model.
/// A settled bot's successor thus starts about half as uncertain as a new bot, and
/// an unsettled one's no more uncertain than a new bot. Ratings that are not numbers,
/// or infinite, give a new bot's rating.
pub fn successor_rating(mu: f64, sigma: f64) -> (f64, f64) {
    if !mu.is_finite() || !sigma.is_finite() {
        return (DEFAULT_MU, DEFAULT_SIGMA);
    }
    let widened = sigma.hypot(DEFAULT_SIGMA / 2.0);
    (mu, widened.min(DEFAULT_SIGMA))
}

/// An entrant with its rating made usable and its last table as a sorted set.
struct Rated {
    bot: usize,
    mu: f64,
    sigma: f64,
    league: usize,
    outstanding: u32,
    last_met: Vec<usize>,
}

impl Rated {
    fn new(entrant: &LadderEntrant) -> Rated {
        let (mu, sigma) = match entrant.mu.is_finite() && entrant.sigma.is_finite() {
            true => (entrant.mu, entrant.sigma.max(0.0)),
            false => (DEFAULT_MU, DEFAULT_SIGMA),
        };
        let mut last_met = entrant.last_met.clone();
        last_met.sort_unstable();
        last_met.dedup();
        Rated { bot: entrant.bot, mu, sigma, league: entrant.league, outstanding: entrant.outstanding, last_met }
    }

    /// How much the ladder wants this bot to play next: see the module documentation.
    fn priority(&self) -> f64 {
        self.sigma / (1.0 + f64::from(self.outstanding)).sqrt()
    }
}

/// The best table of `size` around `focus`, its others at most `reach` leagues away
/// (or the fewest more that seat a table, or offer a table new to its bots), and
/// whether it is new to all its bots.
fn table_for<'a>(
    focus: &'a Rated,
    entrants: &'a [Rated],
    size: usize,
    reach: usize,
    rng: &mut ChaCha8Rng,
) -> (Vec<&'a Rated>, bool) {
    let mut scored: Vec<(f64, &Rated)> = entrants
        .iter()
        .filter(|other| other.bot != focus.bot)
        .map(|other| {
            let distance = (other.mu - focus.mu).abs() + OUTSTANDING_PENALTY * f64::from(other.outstanding);
            (distance + rng.random_range(0.0..JITTER), other)
        })
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));

    // The league gaps the reach may widen to, nearest first: first to seat a table (the
    // gap of the `size - 1`th nearest other; there are at least `size` entrants), then
    // a league further each time no table within it is new.
    let mut gaps: Vec<usize> = scored.iter().map(|(_, other)| other.league.abs_diff(focus.league)).collect();
    gaps.sort_unstable();
    let base = reach.max(gaps[size - 2]);
    let mut reaches = vec![base];
    reaches.extend(gaps.iter().copied().filter(|&gap| gap > base));
    reaches.dedup();

    let mut nearest = None;
    for reach in reaches {
        let others: Vec<&Rated> = scored
            .iter()
            .filter(|(_, other)| other.league.abs_diff(focus.league) <= reach)
            .map(|(_, other)| *other)
            .collect();
        // Combinations of `size - 1` of the others, in lexicographic order of nearness.
        // Each bot makes at most one table old (its last one), so one of the first
        // `entrants.len() + 1` is new, if any is: the loop is short.
        let mut picks: Vec<usize> = (0..size - 1).collect();
        let table =
            |picks: &[usize]| std::iter::once(focus).chain(picks.iter().map(|&i| others[i])).collect::<Vec<_>>();
        nearest.get_or_insert_with(|| table(&picks));
        loop {
            let candidate = table(&picks);
            if !repeats(&candidate) {
                return (candidate, true);
            }
            if !next_combination(&mut picks, others.len()) {
                break;
            }
        }
    }
    (nearest.unwrap_or_else(|| vec![focus]), false)
}

/// Whether some bot at `table` had exactly this table as its most recent match.
fn repeats(table: &[&Rated]) -> bool {
    table.iter().any(|bot| {
        let mut others: Vec<usize> = table.iter().map(|other| other.bot).filter(|&other| other != bot.bot).collect();
        others.sort_unstable();
        others == bot.last_met
    })
}

/// Steps `picks` (increasing indices below `n`) to the next combination in
/// lexicographic order; false after the last.
fn next_combination(picks: &mut [usize], n: usize) -> bool {
    let k = picks.len();
    // The rightmost index that can still move right.
    let Some(i) = (0..k).rev().find(|&i| picks[i] < n - k + i) else { return false };
    picks[i] += 1;
    for j in i + 1..k {
        picks[j] = picks[j - 1] + 1;
    }
    true
}

/// The table's bots in a seeded seat order.
fn seat(mut table: Vec<&Rated>, rng: &mut ChaCha8Rng) -> Vec<usize> {
    table.shuffle(rng);
    table.into_iter().map(|rated| rated.bot).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn entrant(bot: usize, mu: f64, sigma: f64) -> LadderEntrant {
        LadderEntrant { bot, mu, sigma, league: 0, outstanding: 0, last_met: Vec::new() }
    }

    fn sorted(mut table: Vec<usize>) -> Vec<usize> {
        table.sort_unstable();
        table
    }

    /// Whether `table` has `seats` distinct bots.
    fn full_and_distinct(table: &[usize], seats: usize) -> bool {
        table.len() == seats && sorted(table.to_vec()).windows(2).all(|pair| pair[0] < pair[1])
    }

    /// Queues `matches` matches one after another, as the coordinator fills its queue:
    /// each raises its bots' outstanding counts and becomes their last table. Returns
    /// the tables in order.
    fn fill(entrants: &mut [LadderEntrant], seats: usize, matches: usize, seed: u64) -> Vec<Vec<usize>> {
        let mut tables = Vec::new();
        for i in 0..matches {
            let table = next_match(entrants, seats, 2, seed + i as u64).expect("enough entrants");
            for e in entrants.iter_mut().filter(|e| table.contains(&e.bot)) {
                e.outstanding += 1;
                e.last_met = sorted(table.iter().copied().filter(|&bot| bot != e.bot).collect());
            }
            tables.push(table);
        }
        tables
    }

    /// Asserts that no bot's consecutive tables are the same set of bots.
    fn assert_no_back_to_back(tables: &[Vec<usize>]) {
        let mut last: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, table) in tables.iter().enumerate() {
            let set = sorted(table.clone());
            for &bot in table {
                assert_ne!(last.insert(bot, set.clone()).as_ref(), Some(&set), "match {i}: {tables:?}");
            }
        }
    }

    #[test]
    fn the_most_uncertain_bot_plays() {
        let entrants = vec![entrant(0, 25.0, 2.0), entrant(1, 30.0, 6.0), entrant(2, 20.0, 3.0), entrant(3, 27.0, 1.0)];
        // Bot 1 is the focus and meets its nearest, bot 3 (bot 0 would be nearest to 2 or 3).
        for seed in 0..20 {
            assert_eq!(sorted(next_match(&entrants, 2, 2, seed).expect("a match")), vec![1, 3], "seed {seed}");
        }
        // Three queued matches halve its claim: 6 / 2 = 3 is below bot 2's 3.5, so bot 2
        // is the focus and meets its nearest, bot 0.
        let mut busy = entrants.clone();
        busy[1].outstanding = 3;
        busy[2].sigma = 3.5;
        for seed in 0..20 {
            assert_eq!(sorted(next_match(&busy, 2, 2, seed).expect("a match")), vec![0, 2], "seed {seed}");
        }
    }

    #[test]
    fn opponents_are_nearest_in_mu() {
        let entrants = vec![
            entrant(0, 25.0, 8.0),
            entrant(1, 40.0, 1.0),
            entrant(2, 23.0, 1.0),
            entrant(3, 10.0, 1.0),
            entrant(4, 28.5, 1.0),
            entrant(5, 31.0, 1.0),
            entrant(6, 18.0, 1.0),
        ];
        for seed in 0..20 {
            assert_eq!(sorted(next_match(&entrants, 2, 2, seed).expect("a match")), vec![0, 2], "seed {seed}");
            assert_eq!(sorted(next_match(&entrants, 4, 2, seed).expect("a match")), vec![0, 2, 4, 5], "seed {seed}");
        }
        // Equally near bots take turns.
        let mut twins = entrants.clone();
        twins[4].mu = 27.0;
        let opponents: BTreeSet<usize> =
            (0..20).flat_map(|seed| next_match(&twins, 2, 2, seed).expect("a match")).collect();
        assert_eq!(opponents, BTreeSet::from([0, 2, 4]));
        // A busy bot gives way to one a little further away.
        let mut busy = entrants.clone();
        busy[2].outstanding = 10;
        for seed in 0..20 {
            assert_eq!(sorted(next_match(&busy, 2, 2, seed).expect("a match")), vec![0, 4], "seed {seed}");
        }
    }

    #[test]
    fn the_nearest_table_gives_way_when_it_would_repeat() {
        let mut entrants = vec![
            entrant(0, 25.0, 8.0),
            entrant(1, 40.0, 1.0),
            entrant(2, 23.0, 1.0),
            entrant(3, 10.0, 1.0),
            entrant(4, 28.5, 1.0),
            entrant(5, 31.0, 1.0),
            entrant(6, 18.0, 1.0),
        ];
        // The focus's last match, or the nearest opponent's, was this very pair.
        entrants[0].last_met = vec![2];
        assert_eq!(sorted(next_match(&entrants, 2, 2, 0).expect("a match")), vec![0, 4]);
        entrants[0].last_met = vec![];
        entrants[2].last_met = vec![0];
        assert_eq!(sorted(next_match(&entrants, 2, 2, 0).expect("a match")), vec![0, 4]);
        // At 4 seats the farthest of the nearest three makes way for the next.
        entrants[0].last_met = vec![5, 2, 4];
        assert_eq!(sorted(next_match(&entrants, 4, 2, 0).expect("a match")), vec![0, 2, 4, 6]);
    }

    #[test]
    fn filling_the_queue_spreads_over_bots() {
        let mut entrants: Vec<LadderEntrant> = (0..6).map(|bot| entrant(bot, DEFAULT_MU, DEFAULT_SIGMA)).collect();
        let tables = fill(&mut entrants, 2, 10, 1);
        let outstanding: Vec<u32> = entrants.iter().map(|e| e.outstanding).collect();
        assert!(outstanding.iter().all(|&n| (3..=4).contains(&n)), "{outstanding:?}");
        assert_no_back_to_back(&tables);

        // One new bot among settled ones gets several matches at once, but not all.
        let mut entrants: Vec<LadderEntrant> = (0..8).map(|bot| entrant(bot, 20.0 + bot as f64, 2.0)).collect();
        entrants[3].sigma = DEFAULT_SIGMA;
        fill(&mut entrants, 2, 10, 2);
        assert!((5..=9).contains(&entrants[3].outstanding), "{entrants:?}");
    }

    #[test]
    fn tables_never_repeat_back_to_back() {
        for (bots, seats) in [(3, 2), (4, 2), (7, 2), (5, 4), (6, 4), (4, 3), (10, 4)] {
            for seed in 0..10 {
                let mut entrants: Vec<LadderEntrant> =
                    (0..bots).map(|bot| entrant(bot, 25.0 + (bot % 3) as f64, 1.0 + bot as f64)).collect();
                let tables = fill(&mut entrants, seats, 30, seed * 100);
                assert!(tables.iter().all(|table| full_and_distinct(table, seats)));
                assert_no_back_to_back(&tables);
            }
        }
    }

    #[test]
    fn opponents_come_from_the_focus_league_or_as_far_as_the_reach() {
        let mut entrants: Vec<LadderEntrant> = (0..7).map(|bot| entrant(bot, 25.0, 1.0)).collect();
        for (bot, league) in [(0, 0), (1, 0), (2, 0), (3, 1), (4, 1), (5, 1), (6, 2)] {
            entrants[bot].league = league;
            entrants[bot].mu = 20.0 + bot as f64;
        }
        entrants[3].sigma = 5.0;
        let league_of = |bot: usize| entrants[bot].league;
        for seed in 0..30 {
            let table = next_match_in_leagues(&entrants, 2, 2, 0, seed).expect("a match");
            assert!(table.contains(&3) && table.iter().all(|&bot| league_of(bot) == 1), "{table:?}");
            let wide = next_match_in_leagues(&entrants, 4, 2, 1, seed).expect("a match");
            assert!(wide.iter().all(|&bot| league_of(bot) <= 2), "{wide:?}");
        }
        // Bot 2 (league 0) is nearest to bot 3 in mu: a reach of 1 lets it in.
        let reached: BTreeSet<usize> =
            (0..30).flat_map(|seed| next_match_in_leagues(&entrants, 2, 2, 1, seed).expect("a match")).collect();
        assert!(reached.contains(&2), "{reached:?}");
        // Alone in its league, bot 6 meets the next league's nearest.
        entrants[3].sigma = 1.0;
        entrants[6].sigma = 5.0;
        for seed in 0..10 {
            assert_eq!(sorted(next_match_in_leagues(&entrants, 2, 2, 0, seed).expect("a match")), vec![5, 6]);
        }
        // With everyone in one league apart, a table still fills.
        entrants[6].league = usize::MAX;
        assert_eq!(next_match_in_leagues(&entrants, 4, 2, 0, 1).map(|table| table.len()), Some(4));
    }

    #[test]
    fn two_bots_at_two_seats_repeat_for_want_of_others() {
        let mut entrants = vec![entrant(0, 25.0, 8.0), entrant(1, 25.0, 8.0)];
        let tables = fill(&mut entrants, 2, 3, 0);
        assert!(tables.iter().all(|t| sorted(t.clone()) == vec![0, 1]));
    }

    #[test]
    fn short_tables_and_too_few_entrants() {
        let three: Vec<LadderEntrant> = (0..3).map(|bot| entrant(bot, 25.0, 8.0)).collect();
        assert_eq!(next_match(&three, 4, 4, 0), None);
        assert_eq!(sorted(next_match(&three, 4, 3, 0).expect("short table")), vec![0, 1, 2]);
        // min_table is at least 2: one bot never plays alone.
        assert_eq!(next_match(&three[..1], 4, 0, 0), None);
        assert_eq!(next_match(&three[..1], 2, 1, 0), None);
        assert_eq!(next_match(&[], 2, 2, 0), None);
        assert_eq!(next_match(&three, 1, 1, 0), None);
        assert_eq!(next_match(&three, 0, 0, 0), None);
        // A bot listed twice counts once.
        let twice = vec![three[0].clone(), three[0].clone()];
        assert_eq!(next_match(&twice, 2, 2, 0), None);
    }

    #[test]
    fn odd_ratings_do_not_panic() {
        let entrants = vec![
            entrant(0, f64::NAN, f64::NAN),
            entrant(1, f64::INFINITY, 3.0),
            entrant(2, 25.0, -4.0),
            LadderEntrant {
                bot: 3,
                mu: -1e308,
                sigma: 1e308,
                league: usize::MAX,
                outstanding: u32::MAX,
                last_met: vec![9, 3, 3],
            },
            entrant(usize::MAX, 25.0, f64::NEG_INFINITY),
        ];
        for seats in 2..=5 {
            let table = next_match(&entrants, seats, 2, u64::MAX).expect("a match");
            assert!(full_and_distinct(&table, seats), "{table:?}");
        }
    }

    #[test]
    fn same_entrants_and_seed_same_match() {
        let make = || (0..9).map(|bot| entrant(bot, 20.0 + bot as f64 / 2.0, DEFAULT_SIGMA)).collect::<Vec<_>>();
        let (mut a, mut b) = (make(), make());
        assert_eq!(fill(&mut a, 4, 12, 5), fill(&mut b, 4, 12, 5));
        let (mut a, mut b) = (make(), make());
        assert_ne!(fill(&mut a, 4, 12, 5), fill(&mut b, 4, 12, 6));
    }

    #[test]
    fn seat_order_is_shuffled() {
        let entrants: Vec<LadderEntrant> = (0..2).map(|bot| entrant(bot, 25.0, 8.0)).collect();
        let firsts: BTreeSet<usize> =
            (0..20).map(|seed| next_match(&entrants, 2, 2, seed).expect("a match")[0]).collect();
        assert_eq!(firsts.len(), 2);
    }

    #[test]
    fn successors_keep_mu_and_widen_sigma() {
        let (mu, sigma) = successor_rating(31.0, 1.0);
        assert_eq!(mu, 31.0);
        assert!((sigma - (1.0f64 + (DEFAULT_SIGMA / 2.0).powi(2)).sqrt()).abs() < 1e-12);
        assert_eq!(successor_rating(31.0, 8.0), (31.0, DEFAULT_SIGMA));
        assert_eq!(successor_rating(31.0, 0.0), (31.0, DEFAULT_SIGMA / 2.0));
        assert_eq!(successor_rating(f64::NAN, 1.0), (DEFAULT_MU, DEFAULT_SIGMA));
        assert_eq!(successor_rating(31.0, f64::INFINITY), (DEFAULT_MU, DEFAULT_SIGMA));
    }
}
