//! A ladder's season in the ledger: its freeze and its finals (the `season` module
//! says what they do).

use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};

use super::{Ledger, LedgerError};

/// What a ladder's season has come to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Season {
    /// From when (Unix seconds) no new version enters it.
    pub frozen_at: Option<i64>,
    /// The id of its finals' tournament.
    pub finals: Option<String>,
}

impl Season {
    /// Why ladder `id` takes no new version at `now` (Unix seconds): it froze at or
    /// before then. `None` while it takes them.
    pub fn refuses_versions(&self, id: &str, now: i64) -> Option<String> {
        let at = self.frozen_at.filter(|&at| at <= now)?;
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(at.max(0).unsigned_abs());
        Some(format!(
            "ladder {id} is frozen since {} (Unix {at}): no new versions",
            humantime::format_rfc3339_seconds(time)
        ))
    }
}

impl Ledger {
    /// Ladder `id`'s season (empty for a tournament that has none).
    pub async fn season(&self, id: &str) -> Result<Season, LedgerError> {
        let id = id.to_owned();
        self.read(move |connection| season_of(connection, &id)).await
    }

    /// Freezes ladder `id` from `at` (Unix seconds), unless its finals are made:
    /// returns its season as it now stands.
    pub async fn freeze(&self, id: &str, at: i64) -> Result<Season, LedgerError> {
        let id = id.to_owned();
        self.with(move |connection| {
            connection.execute(
                "INSERT INTO seasons (ladder_id, frozen_at) VALUES (?1, ?2)
                 ON CONFLICT (ladder_id) DO UPDATE SET frozen_at = ?2 WHERE finals_id IS NULL",
                rusqlite::params![id, at],
            )?;
            season_of(connection, &id)
        })
        .await
    }

    /// Records tournament `finals` as ladder `id`'s finals, unless it has some (the
    /// API makes one finals at a time, after checking).
    pub async fn record_finals(&self, id: &str, finals: &str) -> Result<(), LedgerError> {
        let (id, finals) = (id.to_owned(), finals.to_owned());
        self.with(move |connection| {
            connection.execute(
                "UPDATE seasons SET finals_id = ?2 WHERE ladder_id = ?1 AND finals_id IS NULL",
                [&id, &finals],
            )?;
            Ok(())
        })
        .await
    }
}

/// Ladder `id`'s season as `connection` sees it (empty without a row).
fn season_of(connection: &rusqlite::Connection, id: &str) -> Result<Season, LedgerError> {
    let season = connection
        .prepare_cached("SELECT frozen_at, finals_id FROM seasons WHERE ladder_id = ?1")?
        .query_row([id], |row| Ok(Season { frozen_at: row.get(0)?, finals: row.get(1)? }))
        .optional()?;
    Ok(season.unwrap_or_default())
}
