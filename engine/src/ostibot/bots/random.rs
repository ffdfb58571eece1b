//! `random`: buys now and then, walks at random, sometimes uses an item.

use super::super::codec::TeamView;
use super::super::map::Dir;
use super::{Order, reply};
use crate::game_bot::GameBot;
use crate::ostibot::Ostibot;
use crate::{GameRng, Seat};

/// Buys now and then, walks at random, sometimes uses an item.
pub(super) struct RandomBot {
    pub(super) rng: GameRng,
}

/// The team's adventurers in the call's order: `(id, inventory item ids)`.
fn own_adventurers(view: &TeamView<'_>) -> Vec<(String, Vec<String>)> {
    view.own_adventurers()
        .into_iter()
        .map(|adventurer| {
            let items = adventurer.inventory.iter().map(|item| format!("i{}", item.id)).collect();
            (format!("a{}", adventurer.id), items)
        })
        .collect()
}

impl RandomBot {
    fn shop(&mut self, view: &TeamView<'_>) -> String {
        let adventurers = own_adventurers(view);
        let bank = view.bank();
        // The call's `rules.items` is an object with its keys in order, as the table is.
        let affordable: Vec<&str> =
            view.rules().items.iter().filter(|(_, stats)| stats.cost <= bank).map(|(name, _)| name.as_str()).collect();
        if adventurers.is_empty() || affordable.is_empty() || self.rng.below(2) == 0 {
            return reply(view.seq(), &[]);
        }
        let Some((id, _)) = self.rng.pick(&adventurers) else { return reply(view.seq(), &[]) };
        let Some(item_type) = self.rng.pick(&affordable) else { return reply(view.seq(), &[]) };
        reply(view.seq(), &[Order::Buy { adventurer: id, item_type }])
    }

    fn play(&mut self, view: &TeamView<'_>) -> String {
        let adventurers = own_adventurers(view);
        let orders: Vec<Order<'_>> = adventurers
            .iter()
            .map(|(id, items)| {
                if !items.is_empty() && self.rng.below(10) == 0 {
                    let item = &items[self.rng.below(items.len())];
                    Order::Use { adventurer: id, item }
                } else {
                    let dir = Dir::ALL[self.rng.below(4)];
                    Order::Move { adventurer: id, dir }
                }
            })
            .collect();
        reply(view.seq(), &orders)
    }
}

impl GameBot<Ostibot> for RandomBot {
    fn reply(&mut self, game: &Ostibot, seat: Seat) -> String {
        let view = TeamView::new(game, seat);
        if view.is_shop() { self.shop(&view) } else { self.play(&view) }
    }
}
