//! Built-in Ostibot bots: `random` and `raider`. Unlike the other games' built-in
//! bots, they still read the call line an external bot reads (written for them from
//! the typed match each step) and write the reply line an external bot writes.

use serde::Deserialize;
use serde_json::{Value, json};

use super::Ostibot;
use crate::builtin::{self, BuiltinBot, GameBot};
use crate::{Game, GameRng, Seat};

mod raider;
mod random;

/// The built-in bots' names.
pub const NAMES: &[&str] = &["random", "raider"];

pub(crate) fn create(name: &str, rng: GameRng) -> Option<Box<dyn BuiltinBot>> {
    match name {
        "random" => Some(builtin::boxed(random::RandomBot { rng })),
        "raider" => Some(builtin::boxed(raider::Raider::default())),
        _ => None,
    }
}

/// A bot that answers the call line itself.
trait CallBot: Send {
    /// The reply line to `call_line`.
    fn answer(&mut self, call_line: &str) -> String;
}

impl<B: CallBot> GameBot<Ostibot> for B {
    fn reply(&mut self, game: &Ostibot, seat: Seat) -> String {
        self.answer(&game.observation(seat))
    }
}

/// The parts of a call line every built-in reads.
#[derive(Deserialize)]
struct CallIn {
    call: String,
    seq: u64,
    input: Value,
}

/// The reply with `seq` echoed.
fn reply(seq: u64, actions: Vec<Value>) -> String {
    json!({ "seq": seq, "actions": actions }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ostibot::{Ostibot, OstibotRules};
    use crate::{BotReply, Game};

    fn game(map: &str, rules: OstibotRules) -> Ostibot {
        Ostibot::new(rules, Some(map), &["a".to_owned(), "b".to_owned()], 1).expect("a valid map")
    }

    fn ask(bot: &mut dyn CallBot, game: &mut Ostibot) -> Value {
        let line = bot.answer(&game.observation(0));
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
