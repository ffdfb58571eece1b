//! The ladder format: no schedule. The director keeps `queue_depth` matches
//! unanswered, each chosen by [`crate::matchmaking::next_match`] from the active
//! bots' Weng-Lin ratings (computed from every completed match in schedule order), until
//! `max_matches` or an operator's stop. Bots join and retire while it runs
//! ([`super::Director::add_bot`], [`super::Director::retire_bot`]); a new version of
//! a bot starts from its predecessor's rating, its uncertainty widened.
//!
//! # Leagues
//! A ladder may have leagues ([`League`], lowest first). They are replayed with the
//! ratings ([`replay`]): after each completed match, a bot that has played its
//! league's `min_games` there moves up once its mu reaches the league's `promote_at`,
//! or down once it falls below `relegate_below`, and starts counting again. A new bot
//! starts in the lowest league; a new version of a bot in its predecessor's league
//! (from its first match, as it starts from its predecessor's rating). Matchmaking
//! seats a bot with others of its own league, or, for the share `league_crossing` of
//! matches (a seeded draw per match), of its league and the ones next to it; further
//! only when those offer no new table ([`matchmaking::next_match_in_leagues`]).

use farm_proto::limits;
use serde::{Deserialize, Serialize};

use super::{Decision, unanswered};
use crate::ledger::{JobState, MatchRow};
use crate::matchmaking::{self, LadderEntrant};
use crate::ratings::{RankedMatch, WengLinStates};
use crate::tournament::{Format, League, RosterChange, Tournament};

/// A ladder's state, as shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderReport {
    /// Matches scheduled and not yet answered.
    pub unanswered: u64,
    /// What it keeps them at.
    pub queue_depth: u32,
    /// Every bot it has had, highest league first, then highest mu.
    pub bots: Vec<LadderBot>,
    /// Its leagues' names, lowest first (none without leagues).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leagues: Vec<String>,
    /// Games under which a bot is provisional (absent from older coordinators).
    #[serde(default)]
    pub provisional_games: u32,
}

/// One bot of a ladder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderBot {
    /// Its name.
    pub bot: String,
    /// Whether it is still scheduled.
    pub active: bool,
    /// The bot it is a new version of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// Its Weng-Lin mu.
    pub mu: f64,
    /// Its Weng-Lin sigma.
    pub sigma: f64,
    /// Its matches scheduled and not yet answered.
    pub scheduled: u32,
    /// Its completed (rated) matches.
    #[serde(default)]
    pub games: u32,
    /// Whether it has played fewer than the ladder's `provisional_games`: its rating
    /// says little yet.
    #[serde(default)]
    pub provisional: bool,
    /// Its league's name (none without leagues).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub league: Option<String>,
}

impl LadderReport {
    /// Lines for a terminal.
    pub fn lines(&self) -> Vec<String> {
        let active = self.bots.iter().filter(|bot| bot.active).count();
        let top: Vec<String> = self
            .bots
            .iter()
            .filter(|bot| bot.active)
            .take(3)
            .map(|bot| {
                let provisional = if bot.provisional { " (provisional)" } else { "" };
                let league = bot.league.as_deref().map(|league| format!(" [{league}]")).unwrap_or_default();
                format!("{} {:.1}±{:.1}{provisional}{league}", bot.bot, bot.mu, bot.sigma)
            })
            .collect();
        vec![format!(
            "ladder: {active} active bots, {} of {} queued; top: {}",
            self.unanswered,
            self.queue_depth,
            top.join(", ")
        )]
    }
}

/// The bots that have retired (none for other formats).
pub fn retired(tournament: &Tournament) -> Vec<usize> {
    tournament
        .roster
        .iter()
        .filter_map(|change| match change {
            RosterChange::Retired { bot } => Some(*bot),
            RosterChange::Added { .. } => None,
        })
        .collect()
}

/// The bots still scheduled, in index order.
pub fn active(tournament: &Tournament) -> Vec<usize> {
    let retired = retired(tournament);
    (0..tournament.bots.len()).filter(|bot| !retired.contains(bot)).collect()
}

/// A ladder as its completed matches left it, replayed in schedule order ([`replay`]).
#[derive(Debug, Clone)]
pub struct Course {
    ratings: WengLinStates,
    games: Vec<u32>,
    /// Each bot's league, from its first rated match.
    placed: Vec<Option<usize>>,
    /// Games each bot has played in its league since it entered it.
    in_league: Vec<u32>,
}

impl Course {
    /// Bot `bot`'s (mu, sigma).
    pub fn rating(&self, bot: usize) -> (f64, f64) {
        self.ratings.state(bot)
    }

    /// Bot `bot`'s completed (rated) matches.
    pub fn games(&self, bot: usize) -> u32 {
        self.games[bot]
    }

    /// Bot `bot`'s league (0 without leagues): where it was placed, or, before its
    /// first match, where it will start (its predecessor's, else the lowest).
    pub fn league(&self, bot: usize) -> usize {
        let mut at = bot;
        // A bot is added after its predecessor, so the chain ends.
        loop {
            match (self.placed[at], self.ratings.predecessor(at)) {
                (Some(league), _) => return league,
                (None, Some(old)) if old < at => at = old,
                (None, _) => return 0,
            }
        }
    }

    /// Rates one match and moves its bots between `leagues`; returns the bots it rated.
    fn apply(&mut self, ranked: &RankedMatch, leagues: &[League]) -> Vec<usize> {
        let rated = self.ratings.apply(ranked);
        for &bot in &rated {
            let league = self.league(bot);
            self.games[bot] += 1;
            self.in_league[bot] += 1;
            let (mu, _) = self.ratings.state(bot);
            let moved = match leagues.get(league) {
                Some(rule) if self.in_league[bot] >= rule.min_games => {
                    if rule.promote_at.is_some_and(|at| mu >= at) {
                        (league + 1).min(leagues.len() - 1)
                    } else if rule.relegate_below.is_some_and(|below| mu < below) {
                        league.saturating_sub(1)
                    } else {
                        league
                    }
                }
                _ => league,
            };
            if moved != league {
                self.in_league[bot] = 0;
            }
            self.placed[bot] = Some(moved);
        }
        rated
    }
}

/// Replays `tournament`'s completed matches (`jobs` in schedule order) into ratings and
/// leagues, showing `each` every match rated, with the bots it rated and the course
/// after it.
pub fn replay(
    tournament: &Tournament,
    jobs: &[MatchRow],
    mut each: impl FnMut(&MatchRow, &[usize], &Course),
) -> Course {
    let leagues = match &tournament.format {
        Format::Ladder { leagues, .. } => &leagues[..],
        _ => &[],
    };
    let bots = tournament.bots.len();
    let mut course = Course {
        ratings: WengLinStates::new(bots, &tournament.predecessors()),
        games: vec![0; bots],
        placed: vec![None; bots],
        in_league: vec![0; bots],
    };
    for job in jobs.iter().filter(|job| job.state == JobState::Done) {
        let rated = course.apply(&job.ranks(), leagues);
        if !rated.is_empty() {
            each(job, &rated, &course);
        }
    }
    course
}

/// A ladder bot's rating after each of its matches, across its versions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatingHistory {
    /// The bot asked about.
    pub bot: String,
    /// Its versions, oldest first: the bots it replaced, itself, and those that
    /// replaced it.
    pub versions: Vec<String>,
    /// The points, in match order, at most [`limits::RATING_HISTORY_POINTS`] per
    /// version.
    pub points: Vec<RatingPoint>,
    /// Whether some version's points were thinned.
    pub thinned: bool,
    /// The highest mu any version reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak: Option<RatingPoint>,
    /// The ladder's leagues, lowest first (none without leagues).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leagues: Vec<String>,
}

/// A bot version's rating after one of its matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatingPoint {
    /// The version.
    pub bot: String,
    /// The match's position in the ladder.
    pub position: u64,
    /// The version's completed matches so far.
    pub games: u32,
    /// Its mu after the match.
    pub mu: f64,
    /// Its sigma after the match.
    pub sigma: f64,
    /// Its league after the match (an index into the leagues).
    pub league: usize,
}

/// The rating history of `bot` (an index) and of its other versions.
pub fn history(tournament: &Tournament, jobs: &[MatchRow], bot: usize) -> RatingHistory {
    let predecessors = tournament.predecessors();
    let mut lineage = vec![bot];
    while let Some(Some(old)) = predecessors.get(lineage[0]).copied() {
        lineage.insert(0, old);
    }
    while let Some(newer) = predecessors.iter().position(|&old| old == lineage.last().copied()) {
        lineage.push(newer);
    }
    let mut by_version: Vec<Vec<RatingPoint>> = vec![Vec::new(); lineage.len()];
    replay(tournament, jobs, |job, rated, course| {
        for (version, points) in lineage.iter().zip(&mut by_version) {
            if rated.contains(version) {
                let (mu, sigma) = course.rating(*version);
                let (games, league) = (course.games(*version), course.league(*version));
                let name = tournament.bots[*version].name.clone();
                points.push(RatingPoint { bot: name, position: job.position, games, mu, sigma, league });
            }
        }
    });
    let peak = by_version.iter().flatten().max_by(|a, b| a.mu.total_cmp(&b.mu).then(b.position.cmp(&a.position)));
    let peak = peak.cloned();
    let thinned = by_version.iter().any(|points| points.len() > limits::RATING_HISTORY_POINTS);
    let points = by_version.into_iter().flat_map(|points| thin(points, limits::RATING_HISTORY_POINTS)).collect();
    let leagues = match &tournament.format {
        Format::Ladder { leagues, .. } => leagues.iter().map(|league| league.name.clone()).collect(),
        _ => Vec::new(),
    };
    RatingHistory {
        bot: tournament.bots[bot].name.clone(),
        versions: lineage.iter().map(|&version| tournament.bots[version].name.clone()).collect(),
        points,
        thinned,
        peak,
        leagues,
    }
}

/// At most `most` of `points`: the first, the last, the peak and each league change,
/// then others evenly spread; in order.
fn thin(points: Vec<RatingPoint>, most: usize) -> Vec<RatingPoint> {
    let n = points.len();
    if n <= most {
        return points;
    }
    let peak = (0..n).max_by(|&a, &b| points[a].mu.total_cmp(&points[b].mu)).unwrap_or(0);
    let changed = |i: usize| i > 0 && points[i].league != points[i - 1].league;
    let must: Vec<usize> = (0..n).filter(|&i| i == 0 || i == n - 1 || i == peak || changed(i)).collect();
    let evenly = |from: &[usize], count: usize| -> Vec<usize> {
        (0..count).map(|k| from[k * from.len() / count.max(1)]).collect()
    };
    let mut kept = if must.len() >= most {
        evenly(&must, most)
    } else {
        let rest: Vec<usize> = (0..n).filter(|i| must.binary_search(i).is_err()).collect();
        let mut kept = must.clone();
        kept.extend(evenly(&rest, most - must.len()));
        kept
    };
    kept.sort_unstable();
    kept.dedup();
    let mut points: Vec<Option<RatingPoint>> = points.into_iter().map(Some).collect();
    kept.into_iter().filter_map(|i| points[i].take()).collect()
}

/// `bot`'s matches scheduled and not yet answered.
fn unanswered_for(jobs: &[MatchRow], bot: usize) -> u32 {
    let waiting = |job: &&MatchRow| matches!(job.state, JobState::Pending | JobState::Running);
    jobs.iter().filter(waiting).filter(|job| job.seats.contains(&bot)).count() as u32
}

/// The active bots as matchmaking sees them: ratings, leagues, unanswered matches,
/// last table.
fn entrants(tournament: &Tournament, jobs: &[MatchRow]) -> Vec<LadderEntrant> {
    let course = replay(tournament, jobs, |_, _, _| {});
    active(tournament)
        .into_iter()
        .map(|bot| {
            let (mu, sigma) = course.rating(bot);
            let league = course.league(bot);
            let outstanding = unanswered_for(jobs, bot);
            let last_met = jobs
                .iter()
                .rev()
                .find(|job| job.seats.contains(&bot))
                .map(|job| job.seats.iter().copied().filter(|&other| other != bot).collect())
                .unwrap_or_default();
            LadderEntrant { bot, mu, sigma, league, outstanding, last_met }
        })
        .collect()
}

/// Fills the queue to its depth with matchmaking's choices; ends at the cap.
pub fn decide(tournament: &Tournament, jobs: &[MatchRow]) -> Decision {
    let Format::Ladder { seats, smallest_table, max_matches, queue_depth, league_crossing, .. } = tournament.format
    else {
        unreachable!("dispatched on the format")
    };
    let scheduled = jobs.len() as u64;
    let waiting = unanswered(jobs);
    if scheduled >= max_matches {
        let conclude = (waiting == 0).then(|| format!("played its cap of {max_matches} matches"));
        return Decision { schedule: Vec::new(), conclude };
    }
    let mut entrants = entrants(tournament, jobs);
    let mut schedule = Vec::new();
    while waiting + (schedule.len() as u64) < u64::from(queue_depth)
        && scheduled + (schedule.len() as u64) < max_matches
    {
        let position = scheduled + schedule.len() as u64;
        let seed = tournament.derived_seed("ladder match", &[position]);
        // The share `league_crossing` of matches may reach the neighbouring leagues.
        let draw = tournament.derived_seed("ladder league crossing", &[position]) as f64 / u64::MAX as f64;
        let reach = usize::from(draw < league_crossing);
        let Some(table) = matchmaking::next_match_in_leagues(&entrants, seats, smallest_table, reach, seed) else {
            break;
        };
        for entrant in entrants.iter_mut().filter(|entrant| table.contains(&entrant.bot)) {
            entrant.outstanding += 1;
            entrant.last_met = table.iter().copied().filter(|&other| other != entrant.bot).collect();
        }
        let round = u32::try_from(position).unwrap_or(u32::MAX);
        schedule.push(tournament.adaptive_job(position, table, round, seed));
    }
    Decision { schedule, conclude: None }
}

/// Every bot's rating and queue.
pub fn report(tournament: &Tournament, jobs: &[MatchRow]) -> LadderReport {
    let Format::Ladder { queue_depth, ref leagues, provisional_games, .. } = tournament.format else {
        unreachable!("dispatched on the format")
    };
    let course = replay(tournament, jobs, |_, _, _| {});
    let active = active(tournament);
    let predecessors = tournament.predecessors();
    let mut bots: Vec<(usize, LadderBot)> = tournament
        .bots
        .iter()
        .enumerate()
        .map(|(index, bot)| {
            let (mu, sigma) = course.rating(index);
            let league = course.league(index);
            let shown = LadderBot {
                bot: bot.name.clone(),
                active: active.contains(&index),
                replaces: predecessors[index].map(|old| tournament.bots[old].name.clone()),
                mu,
                sigma,
                scheduled: unanswered_for(jobs, index),
                games: course.games(index),
                provisional: course.games(index) < provisional_games,
                league: leagues.get(league).map(|league| league.name.clone()),
            };
            (league, shown)
        })
        .collect();
    bots.sort_by(|(league_a, a), (league_b, b)| {
        league_b.cmp(league_a).then(b.mu.total_cmp(&a.mu)).then_with(|| a.bot.cmp(&b.bot))
    });
    LadderReport {
        unanswered: unanswered(jobs),
        queue_depth,
        bots: bots.into_iter().map(|(_, bot)| bot).collect(),
        leagues: leagues.iter().map(|league| league.name.clone()).collect(),
        provisional_games,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::director::testing::{pending, play, tournament};
    use crate::tournament::BotEntry;

    fn ladder() -> Tournament {
        let mut text =
            String::from("name = \"l\"\ngame = \"botwars\"\nformat = \"ladder\"\nqueue_depth = 4\nmax_matches = 60\n");
        for (name, builtin) in [("a", "random"), ("b", "gatherer"), ("c", "random")] {
            text.push_str(&format!("[[bots]]\nname = \"{name}\"\nbuiltin = \"{builtin}\"\n"));
        }
        tournament(&text)
    }

    /// Bot 1 (and its new version, 3) beats everyone; otherwise the lower index wins.
    fn strength(job: &MatchRow) -> Vec<u32> {
        let key = |bot: usize| if bot == 1 || bot == 3 { 0 } else { bot + 1 };
        let [a, b] = job.seats[..] else { panic!("two seats") };
        if key(a) < key(b) { vec![1, 2] } else { vec![2, 1] }
    }

    #[test]
    fn the_queue_is_kept_at_its_depth_until_the_cap_and_ratings_sort_the_bots() {
        let tournament = ladder();
        let mut jobs = pending(&decide(&tournament, &[]).schedule);
        assert_eq!(jobs.len(), 4);
        assert_eq!(decide(&tournament, &jobs), Decision::default(), "full");
        for window in jobs.windows(2) {
            let (mut x, mut y) = (window[0].seats.clone(), window[1].seats.clone());
            x.sort_unstable();
            y.sort_unstable();
            assert_ne!(x, y, "never the same pairing twice in a row");
        }
        loop {
            play(&mut jobs[..], strength);
            let decision = decide(&tournament, &jobs);
            if let Some(conclusion) = decision.conclude {
                assert_eq!(conclusion, "played its cap of 60 matches");
                break;
            }
            assert!(unanswered(&jobs) + decision.schedule.len() as u64 <= 4);
            jobs.extend(pending(&decision.schedule));
        }
        assert_eq!(jobs.len(), 60);
        let shown = report(&tournament, &jobs);
        let order: Vec<&str> = shown.bots.iter().map(|bot| bot.bot.as_str()).collect();
        assert_eq!(order, ["b", "a", "c"]);
        // 60 matches of 3 bots: every sigma well down from a new bot's.
        assert!(shown.bots.iter().all(|bot| bot.sigma < matchmaking::DEFAULT_SIGMA * 0.7), "{shown:?}");
    }

    /// A ladder of `bots` builtins in three leagues.
    fn league_ladder(bots: usize, crossing: f64) -> Tournament {
        let mut text = format!(
            "name = \"l\"\ngame = \"botwars\"\nformat = \"ladder\"\nqueue_depth = 4\nmax_matches = 400\n\
             league_crossing = {crossing}\nprovisional_games = 6\n\
             [[leagues]]\nname = \"Bronze\"\npromote_at = 25.5\nmin_games = 3\n\
             [[leagues]]\nname = \"Silver\"\nrelegate_below = 24.5\npromote_at = 28.0\nmin_games = 3\n\
             [[leagues]]\nname = \"Gold\"\nrelegate_below = 27.0\nmin_games = 3\n"
        );
        for bot in 0..bots {
            text.push_str(&format!("[[bots]]\nname = \"b{bot}\"\nbuiltin = \"random\"\n"));
        }
        tournament(&text)
    }

    /// Plays the ladder to its cap (the lower index always wins), showing `made` each
    /// match made with the course it was made from.
    fn play_out(tournament: &Tournament, mut made: impl FnMut(&Course, &[usize])) -> Vec<MatchRow> {
        let mut jobs = Vec::new();
        loop {
            let decision = decide(tournament, &jobs);
            if decision.conclude.is_some() {
                return jobs;
            }
            let course = replay(tournament, &jobs, |_, _, _| {});
            for job in &decision.schedule {
                made(&course, &job.seats);
            }
            jobs.extend(pending(&decision.schedule));
            play(&mut jobs, |job| {
                let [a, b] = job.seats[..] else { panic!("two seats") };
                if a < b { vec![1, 2] } else { vec![2, 1] }
            });
        }
    }

    #[test]
    fn leagues_promote_the_strong_relegate_the_weak_and_pair_within() {
        let tournament = league_ladder(8, 0.0);
        let mut few_crossed = 0;
        let jobs = play_out(&tournament, |course, seats| {
            let [a, b] = [course.league(seats[0]), course.league(seats[1])];
            if a != b {
                // Without crossing, a bot meets another league's only when its own has
                // no new table to offer: it holds 2 bots or fewer.
                let few = |league| (0..8).filter(|&bot| course.league(bot) == league).count() <= 2;
                assert!(few(a) || few(b), "{seats:?} in leagues {a} and {b}");
                few_crossed += 1;
            }
        });
        assert_eq!(jobs.len(), 400);
        // A league holds 2 bots or fewer only while the first climb or the last fall.
        assert!(few_crossed < 160, "{few_crossed} of 400 matches crossed from a league of 2 or fewer");
        let shown = report(&tournament, &jobs);
        let league = |name: &str| shown.bots.iter().find(|bot| bot.bot == name).and_then(|bot| bot.league.clone());
        assert_eq!(league("b0").as_deref(), Some("Gold"), "{shown:?}");
        assert_eq!(league("b1").as_deref(), Some("Gold"), "{shown:?}");
        assert_eq!(league("b7").as_deref(), Some("Bronze"), "{shown:?}");
        assert_eq!(shown.leagues, ["Bronze", "Silver", "Gold"]);
        assert!(shown.bots.iter().all(|bot| !bot.provisional && bot.games >= 6), "{shown:?}");
        let mut rated = 0;
        replay(&tournament, &jobs, |_, seats, _| rated += seats.len());
        assert_eq!(rated, 2 * jobs.len(), "every match rated both its bots");
    }

    #[test]
    fn crossing_mixes_neighbouring_leagues() {
        let tournament = league_ladder(8, 0.5);
        let mut crossed = 0;
        play_out(&tournament, |course, seats| {
            let [a, b] = [course.league(seats[0]), course.league(seats[1])];
            let few = |league| (0..8).filter(|&bot| course.league(bot) == league).count() <= 2;
            assert!(a.abs_diff(b) <= 1 || few(a) || few(b), "{seats:?} in leagues {a} and {b}");
            crossed += usize::from(a != b);
        });
        assert!(crossed > 40, "{crossed} of 400 crossed");
    }

    #[test]
    fn a_new_version_starts_in_its_predecessors_league_and_a_new_bot_in_the_lowest() {
        let mut tournament = league_ladder(6, 0.1);
        let jobs = play_out(&tournament, |_, _| {});
        let before = replay(&tournament, &jobs, |_, _, _| {});
        assert_eq!(before.league(0), 2, "the strongest is in Gold");
        for (name, replaces) in [("b0v2", Some(0)), ("newcomer", None)] {
            let bot = tournament.bots.len();
            let mut entry = tournament.bots[0].clone();
            entry.name = name.into();
            tournament.bots.push(entry);
            tournament.roster.push(RosterChange::Added { bot, replaces });
        }
        let course = replay(&tournament, &jobs, |_, _, _| {});
        assert_eq!(course.league(6), 2, "the new version of b0");
        assert_eq!(course.league(7), 0, "a new bot");
        let shown = report(&tournament, &jobs);
        let newcomer = shown.bots.iter().find(|bot| bot.bot == "newcomer").expect("listed");
        assert!(newcomer.provisional && newcomer.games == 0);
        assert_eq!(newcomer.league.as_deref(), Some("Bronze"));
        assert_eq!(shown.bots.first().map(|bot| bot.league.as_deref()), Some(Some("Gold")), "top league first");
    }

    #[test]
    fn history_spans_the_versions_with_their_leagues_and_peak() {
        let mut tournament = league_ladder(6, 0.1);
        let mut jobs = play_out(&tournament, |_, _| {});
        // b5, the weakest, gets a new version that wins everything from here on.
        tournament.bots.push(BotEntry { name: "b5v2".into(), ..tournament.bots[5].clone() });
        tournament.roster.push(RosterChange::Added { bot: 6, replaces: Some(5) });
        tournament.roster.push(RosterChange::Retired { bot: 5 });
        let Format::Ladder { ref mut max_matches, .. } = tournament.format else { unreachable!() };
        *max_matches = 800;
        while decide(&tournament, &jobs).conclude.is_none() {
            jobs.extend(pending(&decide(&tournament, &jobs).schedule));
            play(&mut jobs, |job| {
                let key = |bot: usize| if bot == 6 { 0 } else { bot + 1 };
                if key(job.seats[0]) < key(job.seats[1]) { vec![1, 2] } else { vec![2, 1] }
            });
        }
        let shown = history(&tournament, &jobs, 5);
        assert_eq!(shown.versions, ["b5", "b5v2"]);
        assert_eq!(history(&tournament, &jobs, 6).versions, shown.versions, "the same lineage from either end");
        let first_of_new = shown.points.iter().position(|point| point.bot == "b5v2").expect("b5v2 played");
        assert!(shown.points[..first_of_new].iter().all(|point| point.bot == "b5"));
        assert_eq!(shown.points[first_of_new].games, 1);
        assert!(shown.points.windows(2).all(|pair| pair[0].position < pair[1].position), "in match order");
        assert_eq!(shown.points[first_of_new - 1].league, 0, "b5 ended in the lowest league");
        assert_eq!(shown.points.last().map(|point| point.league), Some(2), "b5v2 climbed to the top");
        let peak = shown.peak.expect("a peak");
        assert_eq!(peak.bot, "b5v2");
        assert!(shown.points.iter().all(|point| point.mu <= peak.mu));
        assert!(!shown.thinned);
        assert_eq!(shown.leagues, ["Bronze", "Silver", "Gold"]);
    }

    #[test]
    fn a_long_history_is_thinned_keeping_what_matters() {
        let point = |i: usize| RatingPoint {
            bot: "b".into(),
            position: i as u64,
            games: i as u32 + 1,
            mu: if i == 2345 { 99.0 } else { 25.0 },
            sigma: 1.0,
            league: usize::from((1000..3000).contains(&i)),
        };
        let thinned = thin((0..5000).map(point).collect(), 1000);
        assert_eq!(thinned.len(), 1000);
        let kept: Vec<u64> = thinned.iter().map(|point| point.position).collect();
        for must in [0, 1000, 2345, 3000, 4999] {
            assert!(kept.contains(&must), "{must} kept");
        }
        assert!(kept.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(kept.windows(2).all(|pair| pair[1] - pair[0] <= 10), "evenly spread");
        assert_eq!(thin((0..10).map(point).collect(), 1000).len(), 10);
    }

    #[test]
    fn a_retired_bot_is_scheduled_no_more_and_a_new_version_starts_from_its_rating() {
        let mut tournament = ladder();
        let mut jobs = pending(&decide(&tournament, &[]).schedule);
        play(&mut jobs, strength);
        for _ in 0..5 {
            jobs.extend(pending(&decide(&tournament, &jobs).schedule));
            play(&mut jobs, strength);
        }
        let before = replay(&tournament, &jobs, |_, _, _| {}).rating(1);
        tournament.bots.push(BotEntry {
            name: "b2".into(),
            builtin: Some("gatherer".into()),
            command: None,
            image: None,
            args: Vec::new(),
            transport: Default::default(),
            limits: Default::default(),
        });
        tournament.roster.push(RosterChange::Added { bot: 3, replaces: Some(1) });
        tournament.roster.push(RosterChange::Retired { bot: 1 });
        assert_eq!(active(&tournament), [0, 2, 3]);
        let next = decide(&tournament, &jobs).schedule;
        assert!(!next.is_empty());
        assert!(next.iter().all(|job| !job.seats.contains(&1)), "the old version is not scheduled");
        assert!(next.iter().any(|job| job.seats.contains(&3)), "the new one is, being the least certain");
        jobs.extend(pending(&next));
        let first = jobs.iter().position(|job| job.seats.contains(&3)).expect("b2 plays");
        play(&mut jobs[first..first + 1], strength);
        let after = replay(&tournament, &jobs[..=first], |_, _, _| {}).rating(3);
        let (mu, sigma) = matchmaking::successor_rating(before.0, before.1);
        assert!(after.0 > mu - 3.0 && after.1 < sigma, "from {mu}±{sigma} to {after:?}");
        assert!(after.0 > matchmaking::DEFAULT_MU, "it starts from the strong bot's rating, not a new bot's");
        let shown = report(&tournament, &jobs);
        let b2 = shown.bots.iter().find(|bot| bot.bot == "b2").expect("b2");
        assert_eq!(b2.replaces.as_deref(), Some("b"));
        assert!(!shown.bots.iter().find(|bot| bot.bot == "b").expect("b").active);
    }
}
