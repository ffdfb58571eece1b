//! The rules as data: every constant under its seed name, and the item table.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};

use crate::game::check_rule;
use crate::{REPLY_TIMEOUT_MS, TURNS};

/// The tunable rules. Keys are the seed's camelCase names; defaults are the seed's
/// values (`../shared/games/ostibot.md`, "Constants given by the seed").
///
/// A rules override replaces whole top-level keys: overriding `items` replaces the
/// whole item table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct OstibotRules {
    /// Rounds in a game (2; the `SemiFinal` preset plays 3, `Final` 4).
    pub nb_rounds: u32,
    /// Each team's bank at the start of the game.
    pub starting_gold: i64,
    /// Seconds a team has for each call (`shop` or `play`). Fractions are allowed.
    #[serde(serialize_with = "whole_if_integral")]
    pub timeout: f64,
    /// Adventurers per team per round (fewer when the team has fewer spawners).
    pub adventurers_per_round: u32,
    /// An adventurer's hit points, at spawn and at most.
    pub adventurer_hp: i64,
    /// An adventurer's damage before its weapon.
    pub adventurer_damage: i64,
    /// Damage taken by bumping into a wall, a spawner or the map's edge.
    pub block_damage: i64,
    /// Vision radius of an adventurer (before its accessory) and of a spawner.
    pub vision_length: i64,
    /// The turn at whose end the spawners turn into corruption.
    pub corruption_start_at: u32,
    /// Corruption spreads at the end of every this many turns after it starts.
    pub corruption_spread_speed: u32,
    /// Damage at the end of each turn to everything on a corrupted cell; armor does not help.
    pub corruption_damage: i64,
    /// Damage for stepping on spikes without spike immunity.
    pub spike_damage: i64,
    /// A portal's hit points; it opens at 0.
    pub portal_hp: i64,
    /// A chest's hit points.
    pub chest_hp: i64,
    /// Gold a broken chest leaves on its cell.
    pub chest_gold: i64,
    /// A vase's hit points.
    pub vase_hp: i64,
    /// Gold a broken vase leaves on its cell.
    pub vase_gold: i64,
    /// A door's hit points.
    pub door_hp: i64,
    /// Carried gold a health tile takes for a full heal.
    pub heal_cost: i64,
    /// Turns after which a round ends whatever happens (decision A-3).
    pub max_turns_per_round: u32,
    /// What an item sells for, in percent of its cost (rounded down).
    pub sell_percent: i64,
    /// Whether teams decide one after another or on one shared snapshot (decision A-4).
    pub decision_mode: DecisionMode,
    /// The item table, by item type.
    pub items: BTreeMap<String, ItemStats>,
}

/// How the teams' `play` calls of one turn relate (decision A-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DecisionMode {
    /// Each team decides after the earlier teams' actions of the turn were applied.
    #[default]
    Sequential,
    /// Every team decides on the state at the start of the turn; the actions are then
    /// applied in team order.
    Snapshot,
}

/// Where an item goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Slot {
    /// The weapon slot.
    Weapon,
    /// The armor slot.
    Armor,
    /// The accessory slot.
    Accessory,
    /// Not equipped: used up by the `use` action.
    Consumable,
}

impl Slot {
    /// The index of an equipment slot (weapon 0, armor 1, accessory 2); `None` for consumables.
    pub fn index(self) -> Option<usize> {
        match self {
            Slot::Weapon => Some(0),
            Slot::Armor => Some(1),
            Slot::Accessory => Some(2),
            Slot::Consumable => None,
        }
    }
}

/// One item type's cost and effects. Effects of equipped items add up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ItemStats {
    /// Where it goes.
    pub slot: Slot,
    /// Price in the shop; it sells for `sellPercent` of it.
    pub cost: i64,
    /// Extra damage while equipped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub damage: i64,
    /// Damage taken from adventurers is reduced by this while equipped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub armor: i64,
    /// Extra vision radius while equipped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vision: i64,
    /// Spikes do no damage while equipped.
    #[serde(default, skip_serializing_if = "is_false")]
    pub spike_immune: bool,
    /// Hit points a consumable restores (up to `adventurerHp`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub heal: i64,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// `300` rather than `300.0`, as in the spec's examples; fractions stay fractions.
fn whole_if_integral<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

fn item(slot: Slot, cost: i64) -> ItemStats {
    ItemStats { slot, cost, damage: 0, armor: 0, vision: 0, spike_immune: false, heal: 0 }
}

/// The seed's eleven items, under the spec's snake_case ids.
pub fn default_items() -> BTreeMap<String, ItemStats> {
    let table = [
        ("rusty_sword", ItemStats { damage: 5, ..item(Slot::Weapon, 2) }),
        ("steel_blade", ItemStats { damage: 10, ..item(Slot::Weapon, 5) }),
        ("enchanted_axe", ItemStats { damage: 20, ..item(Slot::Weapon, 10) }),
        ("leather_vest", ItemStats { armor: 5, ..item(Slot::Armor, 2) }),
        ("chainmail", ItemStats { armor: 10, ..item(Slot::Armor, 5) }),
        ("plate_armor", ItemStats { armor: 15, ..item(Slot::Armor, 10) }),
        ("scouts_binocular", ItemStats { vision: 5, ..item(Slot::Accessory, 2) }),
        // Decision A-1: exactly as written, +2 vision and nothing else.
        ("speed_boots", ItemStats { vision: 2, ..item(Slot::Accessory, 5) }),
        ("big_boots", ItemStats { spike_immune: true, ..item(Slot::Accessory, 4) }),
        ("health_potion", ItemStats { heal: 80, ..item(Slot::Consumable, 3) }),
        ("greater_health_potion", ItemStats { heal: 160, ..item(Slot::Consumable, 6) }),
    ];
    table.into_iter().map(|(name, stats)| (name.to_owned(), stats)).collect()
}

impl Default for OstibotRules {
    fn default() -> Self {
        OstibotRules {
            nb_rounds: 2,
            starting_gold: 3,
            timeout: 300.0,
            adventurers_per_round: 3,
            adventurer_hp: 120,
            adventurer_damage: 20,
            block_damage: 20,
            vision_length: 5,
            corruption_start_at: 30,
            corruption_spread_speed: 4,
            corruption_damage: 20,
            spike_damage: 20,
            portal_hp: 100,
            chest_hp: 100,
            chest_gold: 12,
            vase_hp: 40,
            vase_gold: 3,
            door_hp: 40,
            heal_cost: 2,
            max_turns_per_round: 200,
            sell_percent: 50,
            decision_mode: DecisionMode::Sequential,
            items: default_items(),
        }
    }
}

/// The largest value any other numeric rule may take.
pub const MAX_VALUE: i64 = 1_000_000_000;

/// The seed's game modes, as rules overrides.
pub const PRESETS: &[(&str, &str)] =
    &[("Default", r#"{"nbRounds":2}"#), ("SemiFinal", r#"{"nbRounds":3}"#), ("Final", r#"{"nbRounds":4}"#)];

impl OstibotRules {
    /// What is wrong with these rules, naming the key, or `Ok`.
    pub fn check(&self) -> Result<(), String> {
        // The upper bound keeps every sum and product of rules (hp plus heal, vision
        // squared, cost times sellPercent, steps of a match) far from overflowing.
        let at_least = |key: &str, value: i64, min: i64| {
            if value < min {
                Err(format!("{key} must be at least {min}, got {value}"))
            } else if value > MAX_VALUE {
                Err(format!("{key} must be at most {MAX_VALUE}, got {value}"))
            } else {
                Ok(())
            }
        };
        check_rule("nbRounds", u64::from(self.nb_rounds), farm_proto::limits::OSTIBOT_ROUNDS.inclusive())?;
        at_least("startingGold", self.starting_gold, 0)?;
        let most_seconds = *REPLY_TIMEOUT_MS.end() / 1000;
        if !(self.timeout.is_finite() && self.timeout >= 0.001 && self.timeout <= most_seconds as f64) {
            return Err(format!("timeout must be 0.001 to {most_seconds} seconds, got {}", self.timeout));
        }
        at_least("adventurersPerRound", i64::from(self.adventurers_per_round), 1)?;
        at_least("adventurerHp", self.adventurer_hp, 1)?;
        at_least("adventurerDamage", self.adventurer_damage, 0)?;
        at_least("blockDamage", self.block_damage, 0)?;
        at_least("visionLength", self.vision_length, 0)?;
        at_least("corruptionStartAt", i64::from(self.corruption_start_at), 1)?;
        at_least("corruptionSpreadSpeed", i64::from(self.corruption_spread_speed), 1)?;
        at_least("corruptionDamage", self.corruption_damage, 0)?;
        at_least("spikeDamage", self.spike_damage, 0)?;
        at_least("portalHp", self.portal_hp, 1)?;
        at_least("chestHp", self.chest_hp, 1)?;
        at_least("chestGold", self.chest_gold, 0)?;
        at_least("vaseHp", self.vase_hp, 1)?;
        at_least("vaseGold", self.vase_gold, 0)?;
        at_least("doorHp", self.door_hp, 1)?;
        at_least("healCost", self.heal_cost, 0)?;
        check_rule("maxTurnsPerRound", u64::from(self.max_turns_per_round), TURNS)?;
        at_least("sellPercent", self.sell_percent, 0)?;
        for (name, stats) in &self.items {
            let valid_name =
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !valid_name {
                return Err(format!("items: item type {name:?} must be snake_case"));
            }
            let key = |field: &str| format!("items.{name}.{field}");
            at_least(&key("cost"), stats.cost, 0)?;
            at_least(&key("damage"), stats.damage, 0)?;
            at_least(&key("armor"), stats.armor, 0)?;
            at_least(&key("vision"), stats.vision, 0)?;
            at_least(&key("heal"), stats.heal, 0)?;
        }
        Ok(())
    }

    /// What `item_type` sells for.
    pub fn sell_price(&self, stats: &ItemStats) -> i64 {
        stats.cost * self.sell_percent / 100
    }

    /// The reply deadline, in whole milliseconds (at least 1).
    pub fn timeout_ms(&self) -> u64 {
        ((self.timeout * 1000.0).round() as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_serialize_as_the_spec_shows() {
        let json = serde_json::to_string(&OstibotRules::default()).expect("rules serialize");
        assert!(json.starts_with(r#"{"nbRounds":2,"startingGold":3,"timeout":300,"adventurersPerRound":3,"#), "{json}");
        assert!(json.contains(r#""rusty_sword":{"slot":"weapon","cost":2,"damage":5}"#), "{json}");
        assert!(json.contains(r#""big_boots":{"slot":"accessory","cost":4,"spikeImmune":true}"#), "{json}");
        let back: OstibotRules = serde_json::from_str(&json).expect("rules read back");
        assert_eq!(back, OstibotRules::default());
    }

    #[test]
    fn sell_prices_are_the_spec_list() {
        let rules = OstibotRules::default();
        let order = [
            "rusty_sword",
            "steel_blade",
            "enchanted_axe",
            "leather_vest",
            "chainmail",
            "plate_armor",
            "scouts_binocular",
            "speed_boots",
            "big_boots",
            "health_potion",
            "greater_health_potion",
        ];
        let prices: Vec<i64> = order.iter().map(|name| rules.sell_price(&rules.items[*name])).collect();
        assert_eq!(prices, [1, 2, 5, 1, 2, 5, 1, 2, 2, 1, 3]);
    }

    #[test]
    fn bad_values_name_their_key() {
        let rules = OstibotRules { corruption_spread_speed: 0, ..OstibotRules::default() };
        assert!(rules.check().expect_err("invalid").contains("corruptionSpreadSpeed"));
        let rules = OstibotRules { adventurers_per_round: 0, ..OstibotRules::default() };
        assert!(rules.check().expect_err("invalid").contains("adventurersPerRound"));
        let rules = OstibotRules { vision_length: i64::MAX, ..OstibotRules::default() };
        assert!(rules.check().expect_err("invalid").contains("visionLength must be at most"));
        let rules = OstibotRules { timeout: 0.0, ..OstibotRules::default() };
        assert!(rules.check().expect_err("invalid").contains("timeout"));
        assert_eq!(OstibotRules { timeout: 0.25, ..OstibotRules::default() }.timeout_ms(), 250);
        // Time and length have ranges a farm can live with: a reply within ten minutes.
        let rules = OstibotRules { timeout: 1e9, ..OstibotRules::default() };
        assert_eq!(rules.check().expect_err("invalid"), "timeout must be 0.001 to 600 seconds, got 1000000000");
        let rules = OstibotRules { nb_rounds: 101, ..OstibotRules::default() };
        assert_eq!(rules.check().expect_err("invalid"), "nbRounds must be 1 to 100, got 101");
        let rules = OstibotRules { max_turns_per_round: 100_001, ..OstibotRules::default() };
        assert_eq!(rules.check().expect_err("invalid"), "maxTurnsPerRound must be 1 to 100000, got 100001");
    }
}
