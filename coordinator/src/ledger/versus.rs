//! Two submitted bots' matches against each other, by their versions
//! (`GET /api/bots/{a}/versus/{b}`).

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::{Ledger, LedgerError};

/// Two bots' record: the matches both played to a result, and who placed higher.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Completed matches both played.
    pub matches: u64,
    /// Those where the first bot placed higher.
    pub a_wins: u64,
    /// Those where the second bot placed higher.
    pub b_wins: u64,
    /// Those where they placed the same.
    pub draws: u64,
}

impl Record {
    /// This record and `other` together.
    pub fn add(&mut self, other: Record) {
        self.matches += other.matches;
        self.a_wins += other.a_wins;
        self.b_wins += other.b_wins;
        self.draws += other.draws;
    }
}

/// One completed match of the first bot against the second.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meeting {
    /// The job.
    pub job_id: String,
    /// Its position in its tournament.
    pub position: u64,
    /// The first bot's version that played (an index into the tournament's bots).
    pub a_bot: usize,
    /// The second bot's.
    pub b_bot: usize,
    /// Their ranks (1 best).
    pub a_rank: u32,
    /// The second bot's rank.
    pub b_rank: u32,
}

/// The per-job ranks of versions `a` and `b` (indices, numbers only) in a tournament's
/// completed matches where both played.
fn meetings_query(a: &[usize], b: &[usize]) -> String {
    let list = |bots: &[usize]| bots.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let (a, b) = (list(a), list(b));
    format!(
        "SELECT j.job_id, j.position,
                MIN(CASE WHEN s.bot IN ({a}) THEN s.rank END) AS a_rank,
                MIN(CASE WHEN s.bot IN ({b}) THEN s.rank END) AS b_rank,
                MIN(CASE WHEN s.bot IN ({a}) THEN s.bot END) AS a_bot,
                MIN(CASE WHEN s.bot IN ({b}) THEN s.bot END) AS b_bot
         FROM jobs j JOIN result_seats s ON s.job_id = j.job_id
         WHERE j.tournament_id = ?1 AND j.state = 'done' AND s.bot IN ({a},{b})
         GROUP BY j.job_id
         HAVING a_rank IS NOT NULL AND b_rank IS NOT NULL"
    )
}

/// Column `index` of `row`, a count or index SQLite holds as an integer.
fn count(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<u64> {
    Ok(row.get::<_, i64>(index)?.max(0).unsigned_abs())
}

impl Ledger {
    /// Where versions of bots `a` and `b` may have met: the ladders both entered, those
    /// ladders' finals, and the challenges between them.
    pub async fn meeting_places(&self, a: &str, b: &str) -> Result<Vec<String>, LedgerError> {
        let (a, b) = (a.to_owned(), b.to_owned());
        self.read(move |connection| {
            let mut select = connection.prepare_cached(
                "SELECT DISTINCT x.ladder FROM versions x JOIN versions y ON y.ladder = x.ladder
                 WHERE x.bot = ?1 AND y.bot = ?2 AND x.ladder IS NOT NULL
                 UNION
                 SELECT DISTINCT s.finals_id FROM seasons s
                 JOIN versions x ON x.ladder = s.ladder_id JOIN versions y ON y.ladder = s.ladder_id
                 WHERE x.bot = ?1 AND y.bot = ?2 AND s.finals_id IS NOT NULL
                 UNION
                 SELECT tournament_id FROM challenges
                 -- Challenges name versions, BOT.vN.
                 WHERE (substr(bot, 1, length(?1) + 2) = ?1 || '.v' AND substr(opponent, 1, length(?2) + 2) = ?2 || '.v')
                    OR (substr(bot, 1, length(?2) + 2) = ?2 || '.v' AND substr(opponent, 1, length(?1) + 2) = ?1 || '.v')",
            )?;
            let ids = select.query_map(params![a, b], |row| row.get(0))?.collect::<Result<Vec<String>, _>>()?;
            Ok(ids)
        })
        .await
    }

    /// In tournament `id`, the record of versions `a` against versions `b` (indices
    /// into its bots) and their newest `limit` meetings.
    pub async fn meetings(
        &self,
        id: &str,
        a: Vec<usize>,
        b: Vec<usize>,
        limit: u32,
    ) -> Result<(Record, Vec<Meeting>), LedgerError> {
        if a.is_empty() || b.is_empty() {
            return Ok((Record::default(), Vec::new()));
        }
        let id = id.to_owned();
        self.read(move |connection| {
            let query = meetings_query(&a, &b);
            let record = connection.query_row(
                &format!(
                    "SELECT COUNT(*), COALESCE(SUM(a_rank < b_rank), 0), COALESCE(SUM(a_rank > b_rank), 0),
                            COALESCE(SUM(a_rank = b_rank), 0) FROM ({query})"
                ),
                [&id],
                |row| {
                    Ok(Record {
                        matches: count(row, 0)?,
                        a_wins: count(row, 1)?,
                        b_wins: count(row, 2)?,
                        draws: count(row, 3)?,
                    })
                },
            )?;
            let mut select = connection.prepare(&format!("{query} ORDER BY j.position DESC LIMIT ?2"))?;
            let meetings = select
                .query_map(params![id, limit], |row| {
                    Ok(Meeting {
                        job_id: row.get(0)?,
                        position: count(row, 1)?,
                        a_rank: row.get(2)?,
                        b_rank: row.get(3)?,
                        a_bot: count(row, 4)? as usize,
                        b_bot: count(row, 5)? as usize,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok((record, meetings))
        })
        .await
    }
}
