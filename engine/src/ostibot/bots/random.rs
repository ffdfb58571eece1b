//! `random`: buys now and then, walks at random, sometimes uses an item.

use serde_json::{Value, json};

use super::super::map::Dir;
use super::{CallBot, CallIn, reply};
use crate::GameRng;

/// Own adventurers of a shop or play input: `(id, inventory item ids)`.
fn own_adventurers(input: &Value) -> Vec<(String, Vec<String>)> {
    let you = input.get("you").and_then(Value::as_u64);
    let list = match input.get("adventurers") {
        Some(Value::Array(list)) => list.clone(),
        _ => input
            .pointer("/gameState/entities")
            .and_then(Value::as_array)
            .map(|entities| {
                entities
                    .iter()
                    .filter(|entity| entity.get("type").and_then(Value::as_str) == Some("adventurer"))
                    .filter(|entity| entity.get("team").and_then(Value::as_u64) == you)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default(),
    };
    list.iter()
        .filter_map(|adventurer| {
            let id = adventurer.get("id")?.as_str()?.to_owned();
            let items = adventurer
                .get("inventory")
                .and_then(Value::as_array)
                .map(|items| items.iter().filter_map(|item| Some(item.get("id")?.as_str()?.to_owned())).collect())
                .unwrap_or_default();
            Some((id, items))
        })
        .collect()
}

/// Buys now and then, walks at random, sometimes uses an item.
pub(super) struct RandomBot {
    pub(super) rng: GameRng,
}

impl RandomBot {
    fn shop(&mut self, input: &Value) -> Vec<Value> {
        let adventurers = own_adventurers(input);
        let you = input.get("you").and_then(Value::as_u64).unwrap_or(0).to_string();
        let bank = input.pointer(&format!("/teamsGold/{you}")).and_then(Value::as_i64).unwrap_or(0);
        let affordable: Vec<String> = input
            .pointer("/rules/items")
            .and_then(Value::as_object)
            .map(|items| {
                items
                    .iter()
                    .filter(|(_, stats)| stats.get("cost").and_then(Value::as_i64).is_some_and(|cost| cost <= bank))
                    .map(|(name, _)| name.clone())
                    .collect()
            })
            .unwrap_or_default();
        if adventurers.is_empty() || affordable.is_empty() || self.rng.below(2) == 0 {
            return Vec::new();
        }
        let Some((id, _)) = self.rng.pick(&adventurers) else { return Vec::new() };
        let Some(item_type) = self.rng.pick(&affordable) else { return Vec::new() };
        vec![json!({ "buy": { "adventurerId": id, "itemType": item_type, "equip": true } })]
    }

    fn play(&mut self, input: &Value) -> Vec<Value> {
        own_adventurers(input)
            .into_iter()
            .map(|(id, items)| {
                if !items.is_empty() && self.rng.below(10) == 0 {
                    let item = &items[self.rng.below(items.len())];
                    json!({ "adventurerId": id, "use": { "itemId": item } })
                } else {
                    let dir = Dir::ALL[self.rng.below(4)];
                    json!({ "adventurerId": id, "move": { "direction": dir.name() } })
                }
            })
            .collect()
    }
}

impl CallBot for RandomBot {
    fn answer(&mut self, observation: &str) -> String {
        let Ok(call) = serde_json::from_str::<CallIn>(observation) else { return "{}".into() };
        let actions = match call.call.as_str() {
            "shop" => self.shop(&call.input),
            _ => self.play(&call.input),
        };
        reply(call.seq, actions)
    }
}
