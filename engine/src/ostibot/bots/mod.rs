//! Built-in Ostibot bots: `random` and `raider`. They read the typed match through
//! the codec's `TeamView`, which shows only what their team's call holds, and write the
//! reply line an external bot writes.

use super::Ostibot;
use super::map::Dir;
use crate::GameRng;
use crate::game_bot::GameBot;

mod raider;
mod random;

/// The built-in bots' names.
pub const NAMES: &[&str] = &["random", "raider"];

pub(crate) fn create(name: &str, rng: GameRng) -> Option<Box<dyn GameBot<Ostibot>>> {
    match name {
        "random" => Some(Box::new(random::RandomBot { rng })),
        "raider" => Some(Box::new(raider::Raider::default())),
        _ => None,
    }
}

/// One entry of a built-in's `actions`; ids as the wire writes them (`a1`, `i3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order<'a> {
    /// Buy an item and equip it.
    Buy { adventurer: &'a str, item_type: &'a str },
    /// Move one cell.
    Move { adventurer: &'a str, dir: Dir },
    /// Use an inventory item.
    Use { adventurer: &'a str, item: &'a str },
}

/// The reply line with `seq` echoed. Written by hand, in the shape serde_json gave it
/// when the built-ins built it as a `Value` (object keys sorted): replays recorded
/// since then hold these bytes. Ids are `a<n>`/`i<n>` and item types snake_case (the
/// rules check it), so no string needs escaping.
fn reply(seq: u64, orders: &[Order<'_>]) -> String {
    let mut out = String::with_capacity(32 + 64 * orders.len());
    out.push_str("{\"actions\":[");
    for (at, order) in orders.iter().enumerate() {
        if at > 0 {
            out.push(',');
        }
        let parts: [&str; 5] = match *order {
            Order::Buy { adventurer, item_type } => {
                ["{\"buy\":{\"adventurerId\":\"", adventurer, "\",\"equip\":true,\"itemType\":\"", item_type, "\"}}"]
            }
            Order::Move { adventurer, dir } => {
                ["{\"adventurerId\":\"", adventurer, "\",\"move\":{\"direction\":\"", dir.name(), "\"}}"]
            }
            Order::Use { adventurer, item } => {
                ["{\"adventurerId\":\"", adventurer, "\",\"use\":{\"itemId\":\"", item, "\"}}"]
            }
        };
        parts.iter().for_each(|part| out.push_str(part));
    }
    out.push_str("],\"seq\":");
    out.push_str(itoa::Buffer::new().format(seq));
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::game_bot::GameBot;
    use crate::ostibot::{Ostibot, OstibotRules};
    use crate::{BotReply, Game};

    fn game(map: &str, rules: OstibotRules) -> Ostibot {
        Ostibot::new(rules, Some(map), &["a".to_owned(), "b".to_owned()], 1).expect("a valid map")
    }

    fn ask(bot: &mut dyn GameBot<Ostibot>, game: &mut Ostibot) -> Value {
        let line = bot.reply(game, 0);
        let mut actions = vec![(0, game.parse_reply(0, &BotReply::Line(line.clone())))];
        if game.to_act().contains(&1) {
            actions.push((1, game.parse_reply(1, &BotReply::Line("{}".into()))));
        }
        game.apply(actions, &mut GameRng::new(1, GameRng::RULES));
        // Team 2 idles through its own steps.
        while game.to_act() == [1] {
            let idle = game.parse_reply(1, &BotReply::Line("{}".into()));
            game.apply(vec![(1, idle)], &mut GameRng::new(1, GameRng::RULES));
        }
        serde_json::from_str(&line).expect("bots write JSON")
    }

    #[test]
    fn replies_are_written_as_serde_json_wrote_them() {
        let orders = [
            Order::Buy { adventurer: "a1", item_type: "rusty_sword" },
            Order::Move { adventurer: "a12", dir: Dir::Left },
            Order::Use { adventurer: "a3", item: "i40" },
        ];
        let by_serde = json!({ "seq": 7, "actions": [
            { "buy": { "adventurerId": "a1", "itemType": "rusty_sword", "equip": true } },
            { "adventurerId": "a12", "move": { "direction": "LEFT" } },
            { "adventurerId": "a3", "use": { "itemId": "i40" } },
        ] });
        assert_eq!(reply(7, &orders), by_serde.to_string());
        assert_eq!(reply(1, &[]), json!({ "seq": 1, "actions": [] }).to_string());
    }

    #[test]
    fn random_echoes_seq_and_gives_each_adventurer_one_action() {
        let mut game = game("#######\n#1...O#\n#1...O#\n#2...O#\n#######\n", OstibotRules::default());
        let mut bot = random::RandomBot { rng: GameRng::new(3, GameRng::BOTS) };
        assert_eq!(ask(&mut bot, &mut game)["seq"], 1);
        let reply = ask(&mut bot, &mut game);
        assert_eq!(reply["seq"], 2);
        let ids: Vec<&str> =
            reply["actions"].as_array().expect("actions").iter().filter_map(|a| a["adventurerId"].as_str()).collect();
        assert_eq!(ids, vec!["a1", "a2"]);
    }

    #[test]
    fn raider_arms_itself_then_breaks_the_chest_next_to_it() {
        let mut game = game("#######\n#1C..O#\n#2...O#\n#######\n", OstibotRules::default());
        let mut bot = raider::Raider::default();
        let shop = ask(&mut bot, &mut game);
        assert_eq!(shop["actions"][0]["buy"]["itemType"], "rusty_sword");
        let play = ask(&mut bot, &mut game);
        assert_eq!(play["actions"][0]["move"]["direction"], "RIGHT", "{play}");
    }

    #[test]
    fn raider_leaves_through_an_open_portal_before_the_corruption_comes() {
        let rules = OstibotRules { corruption_start_at: 3, portal_hp: 1, starting_gold: 0, ..OstibotRules::default() };
        let mut game = game("########\n#1O..C.#\n#......#\n#2....O#\n########\n", rules);
        let mut bot = raider::Raider::default();
        ask(&mut bot, &mut game);
        // The portal next to the spawner is about to burn: hit it open, then go through.
        let first = ask(&mut bot, &mut game);
        assert_eq!(first["actions"][0]["move"]["direction"], "RIGHT", "{first}");
        ask(&mut bot, &mut game);
        // Team 2 then idled until the corruption ended the round: a1 is back as a veteran.
        assert_eq!(game.round(), 2);
        assert!(game.world().adventurer(1).is_some_and(|a1| a1.veteran));
    }
}
