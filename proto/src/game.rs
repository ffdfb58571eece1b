use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The games matchfarm can play. Their rules live in `farm-engine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GameKind {
    /// Vindinium: four heroes, mines, taverns, 1200 single moves.
    Vindinium,
    /// Skookum Botwars: two swarms of botlets on a 20x20 grid.
    Botwars,
    /// Ostibot: 2 to 4 teams of adventurers loot a dungeon and escape through portals.
    Ostibot,
    /// Maze (Code Keeper — The Hero): each bot guides a hero through its own copy of one maze.
    Maze,
}

impl GameKind {
    /// Every game, in a fixed order.
    pub const ALL: [GameKind; 4] = [GameKind::Vindinium, GameKind::Botwars, GameKind::Ostibot, GameKind::Maze];

    /// The name used on the command line, in files and on the wire.
    pub fn name(self) -> &'static str {
        match self {
            GameKind::Vindinium => "vindinium",
            GameKind::Botwars => "botwars",
            GameKind::Ostibot => "ostibot",
            GameKind::Maze => "maze",
        }
    }
}

impl fmt::Display for GameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A game name that matches no [`GameKind`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown game {given:?}: expected one of {}", known_games())]
pub struct UnknownGame {
    /// The name that was given.
    pub given: String,
}

fn known_games() -> String {
    GameKind::ALL.map(GameKind::name).join(", ")
}

impl FromStr for GameKind {
    type Err = UnknownGame;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GameKind::ALL
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownGame { given: s.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_from_str_and_serde() {
        for kind in GameKind::ALL {
            assert_eq!(kind.name().parse::<GameKind>(), Ok(kind));
            let json = serde_json::to_string(&kind).expect("serialize");
            assert_eq!(json, format!("\"{}\"", kind.name()));
        }
    }

    #[test]
    fn unknown_game_lists_the_known_ones() {
        let err = "chess".parse::<GameKind>().expect_err("chess is not a game here");
        assert_eq!(err.to_string(), "unknown game \"chess\": expected one of vindinium, botwars, ostibot, maze");
    }
}
