//! A ladder's season ends in two steps.
//!
//! - **Freeze** (`farm-coordinator season freeze LADDER [--at TIME]`): from that time no
//!   new version enters the ladder. An upload for it is answered 409 with the time, and
//!   a version validated later is not entered ([`Season::refuses_versions`]); the bots
//!   in it play on, so their ratings keep settling.
//! - **Finals** (`farm-coordinator season finals LADDER --top N --format F --games G`):
//!   a tournament of the frozen ladder's best `top` bots ([`finals_file`]): its active
//!   bots (the newest entered version of each) in the ladder's order (league, then mu),
//!   listed, and so seeded, in that order; on the ladder's maps, rules and clocks; every
//!   pairing played in every seat: a `round-robin` plays each ordered pair `games`
//!   times on each map, a `swiss` each table `games` times with its seats rotated.
//!   A ladder has one finals; the ladder's page links them. The finals take the
//!   ladder's bots as the ladder has them: a bot entered in a ladder (its author's
//!   submission to it, or its owner's addition) is entered in its finals, without the
//!   check a new tournament's bots get.

use serde::{Deserialize, Serialize};

use crate::director::ladder::LadderReport;
use crate::ledger::Season;
use crate::tournament::{Format, Tournament, TournamentError, TournamentFile};

/// The formats finals may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinalsFormat {
    /// Everyone against everyone, in every seat.
    RoundRobin,
    /// Rounds of tables of bots with similar scores, each table in every seat.
    Swiss,
}

/// What finals a ladder's owner asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalsRequest {
    /// How many of the ladder's best bots play.
    pub top: usize,
    /// How they are paired.
    pub format: FinalsFormat,
    /// Games per pairing (round robin, per map) or per table (Swiss).
    #[serde(default = "two")]
    pub games: u32,
}

fn two() -> u32 {
    2
}

/// Why a season cannot take the step asked.
#[derive(Debug, thiserror::Error)]
pub enum SeasonError {
    /// Only ladders have seasons.
    #[error("{0} is not a ladder: only a ladder has a season")]
    NotLadder(String),
    /// Finals come from a frozen ladder.
    #[error("{0} is not frozen: freeze it (season freeze) before its finals")]
    NotFrozen(String),
    /// The ladder has its finals.
    #[error("{ladder} has its finals already: {finals}")]
    FinalsMade {
        /// The ladder.
        ladder: String,
        /// Its finals' id.
        finals: String,
    },
    /// Finals of fewer than 2 bots, or of more than the ladder has.
    #[error("top: {0}")]
    Top(String),
    /// The finals' tournament would not be valid (its games, say).
    #[error(transparent)]
    Tournament(#[from] TournamentError),
}

/// The finals of `ladder`, whose status is `report` and season `season`, as asked.
pub fn finals_file(
    ladder: &Tournament,
    report: &LadderReport,
    season: &Season,
    now: i64,
    request: &FinalsRequest,
) -> Result<TournamentFile, SeasonError> {
    let Format::Ladder { seats, .. } = ladder.format else { return Err(SeasonError::NotLadder(ladder.id.clone())) };
    if let Some(finals) = &season.finals {
        return Err(SeasonError::FinalsMade { ladder: ladder.id.clone(), finals: finals.clone() });
    }
    if season.refuses_versions(&ladder.id, now).is_none() {
        return Err(SeasonError::NotFrozen(ladder.id.clone()));
    }
    let active: Vec<&str> = report.bots.iter().filter(|bot| bot.active).map(|bot| bot.bot.as_str()).collect();
    if request.top < 2 || request.top > active.len() {
        return Err(SeasonError::Top(format!(
            "finals take 2 to {} bots (the ladder's active ones), not {}",
            active.len(),
            request.top
        )));
    }
    let bots: Vec<_> = active[..request.top]
        .iter()
        .filter_map(|name| ladder.bots.iter().find(|bot| bot.name == *name))
        .cloned()
        .collect();
    let maps: Vec<serde_json::Value> = ladder
        .maps
        .iter()
        .filter_map(|map| Some(serde_json::json!({ "name": map.name, "text": map.text.as_ref()? })))
        .collect();
    let format = match request.format {
        FinalsFormat::RoundRobin => "round-robin",
        FinalsFormat::Swiss => "swiss",
    };
    let mut name = format!("{} finals", ladder.name);
    if name.len() > crate::tournament::MAX_NAME {
        name = format!("finals of {}", ladder.id);
    }
    let file = serde_json::json!({
        "name": name,
        "game": ladder.game,
        "rules": ladder.rules,
        "format": format,
        "games_per_pairing": request.games,
        "seed": ladder.seed,
        "seats": seats.min(request.top),
        "maps": maps,
        "isolation": ladder.isolation,
        "clock": ladder.clock.kind,
        "time_bank_ms": ladder.clock.time_bank_ms,
        "wall_backstop": ladder.clock.wall_backstop,
        "ponder": ladder.clock.ponder,
        "live_delay_secs": ladder.live_delay_secs,
        "bots": bots,
    });
    serde_json::from_value(file).map_err(|error| SeasonError::Tournament(TournamentError::Syntax(error.to_string())))
}

/// The first second of the year 10000: RFC 3339 times end before it.
const YEAR_10000: i64 = 253_402_300_800;

/// An RFC 3339 UTC time (`2026-12-01T18:00:00Z`) or Unix seconds (0 up to the year
/// 10000), as Unix seconds.
pub fn parse_time(text: &str) -> Result<i64, String> {
    let unix = match text.parse::<i64>() {
        Ok(unix) => unix,
        Err(_) => {
            let time = humantime::parse_rfc3339(text).map_err(|error| {
                format!("{text:?}: {error}; give Unix seconds or a UTC time like 2026-12-01T18:00:00Z")
            })?;
            let since = time.duration_since(std::time::UNIX_EPOCH).map_err(|_| format!("{text:?} is before 1970"))?;
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
        }
    };
    if !(0..YEAR_10000).contains(&unix) {
        return Err(format!("{text:?} is not between 1970 and the year 10000"));
    }
    Ok(unix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::director::ladder;
    use crate::director::testing::{pending, play, tournament};
    use crate::tournament::TournamentLimits;

    #[test]
    fn times_are_unix_seconds_or_utc() {
        assert_eq!(parse_time("2026-12-01T18:30:05Z"), Ok(1_796_149_805));
        assert_eq!(parse_time("1796149805"), Ok(1_796_149_805));
        let bad = ["2026-04-31T00:00:00Z", "2026-12-01 18:00:00", "tomorrow", "1969-12-31T23:59:59Z", "", "-1"];
        for bad in bad.into_iter().chain(["253402300800", "9223372036854775807"]) {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_freeze_refuses_versions_from_its_time_on() {
        let season = Season { frozen_at: Some(100), finals: None };
        assert_eq!(season.refuses_versions("t-1", 99), None);
        let refused = season.refuses_versions("t-1", 100).expect("frozen");
        assert_eq!(refused, "ladder t-1 is frozen since 1970-01-01T00:01:40Z (Unix 100): no new versions");
        assert_eq!(Season::default().refuses_versions("t-1", i64::MAX), None);
    }

    #[test]
    fn finals_seat_the_top_bots_in_the_ladders_order() {
        let mut text = String::from(
            "name = \"l\"\ngame = \"botwars\"\nformat = \"ladder\"\nqueue_depth = 4\nmax_matches = 60\nseed = 9\n",
        );
        for bot in 0..5 {
            text.push_str(&format!("[[bots]]\nname = \"b{bot}\"\nbuiltin = \"random\"\n"));
        }
        let ladder_tournament = tournament(&text);
        let mut jobs = Vec::new();
        while jobs.len() < 60 {
            jobs.extend(pending(&ladder::decide(&ladder_tournament, &jobs).schedule));
            play(&mut jobs, |job| if job.seats[0] > job.seats[1] { vec![1, 2] } else { vec![2, 1] });
        }
        let report = ladder::report(&ladder_tournament, &jobs);
        let asked = FinalsRequest { top: 3, format: FinalsFormat::RoundRobin, games: 2 };
        let open = Season::default();
        assert!(matches!(finals_file(&ladder_tournament, &report, &open, 10, &asked), Err(SeasonError::NotFrozen(_))));
        let frozen = Season { frozen_at: Some(5), finals: None };
        let file = finals_file(&ladder_tournament, &report, &frozen, 10, &asked).expect("finals");
        let finals = file.resolve(None, TournamentLimits::default()).expect("valid");
        let names: Vec<&str> = finals.bots.iter().map(|bot| bot.name.as_str()).collect();
        assert_eq!(names, ["b4", "b3", "b2"], "the higher index wins: best first");
        assert_eq!(finals.name, "l finals");
        assert_eq!((finals.games_per_pairing, finals.seed), (2, 9));
        assert_eq!(finals.plan().expect("plan").count(), 3 * 2 * 2, "every ordered pair twice");
        let made = Season { frozen_at: Some(5), finals: Some("t-f".into()) };
        assert!(matches!(
            finals_file(&ladder_tournament, &report, &made, 10, &asked),
            Err(SeasonError::FinalsMade { .. })
        ));
        for top in [1, 6] {
            let asked = FinalsRequest { top, ..asked.clone() };
            let error = finals_file(&ladder_tournament, &report, &frozen, 10, &asked).expect_err("top").to_string();
            assert_eq!(error, format!("top: finals take 2 to 5 bots (the ladder's active ones), not {top}"));
        }
        let swiss = FinalsRequest { format: FinalsFormat::Swiss, ..asked };
        let finals = finals_file(&ladder_tournament, &report, &frozen, 10, &swiss).expect("finals");
        assert!(matches!(
            finals.resolve(None, TournamentLimits::default()).expect("valid").format,
            Format::Swiss { .. }
        ));
    }
}
