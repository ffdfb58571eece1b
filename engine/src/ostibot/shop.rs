//! The shop phase: buy, sell, equip, unequip and transfer against the team bank
//! ("Shop actions" and Settled question 20).

use super::state::World;

/// One well-formed shop entry. Ids are the numbers of `a{n}` and `i{n}`; an id that
/// does not parse is kept as `None` and rejected when applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShopEntry {
    /// Buy `item_type` for an adventurer, and equip it if asked and its slot is empty.
    Buy {
        /// The adventurer.
        adventurer: Option<u32>,
        /// The item type, as written.
        item_type: String,
        /// Equip at once.
        equip: bool,
    },
    /// Sell an inventory item.
    Sell {
        /// The adventurer.
        adventurer: Option<u32>,
        /// The item.
        item: Option<u32>,
    },
    /// Equip an inventory item.
    Equip {
        /// The adventurer.
        adventurer: Option<u32>,
        /// The item.
        item: Option<u32>,
    },
    /// Put an equipped item back into the inventory.
    Unequip {
        /// The adventurer.
        adventurer: Option<u32>,
        /// The item.
        item: Option<u32>,
    },
    /// Move an inventory item to another adventurer's inventory.
    Transfer {
        /// The giver.
        from: Option<u32>,
        /// The receiver.
        to: Option<u32>,
        /// The item.
        item: Option<u32>,
    },
}

impl World {
    /// The index of `team`'s adventurer `id` on this round's roster.
    fn roster_index(&self, team: u8, id: Option<u32>) -> Result<usize, String> {
        let id = id.ok_or("adventurerId must be a string \"a<n>\"")?;
        self.adventurer_index(id)
            .filter(|&index| self.adventurers[index].team == team)
            .ok_or_else(|| format!("a{id} is not an adventurer of team {team}"))
    }

    fn inventory_position(&self, index: usize, item: Option<u32>) -> Result<usize, String> {
        let item = item.ok_or("itemId must be a string \"i<n>\"")?;
        let adventurer = &self.adventurers[index];
        adventurer
            .inventory
            .iter()
            .position(|held| held.id == item)
            .ok_or_else(|| format!("i{item} is not in a{}'s inventory", adventurer.id))
    }

    /// Applies one shop entry for `team`, or says why it is rejected.
    pub(crate) fn shop(&mut self, team: u8, entry: &ShopEntry) -> Result<(), String> {
        match entry {
            ShopEntry::Buy { adventurer, item_type, equip } => {
                let index = self.roster_index(team, *adventurer)?;
                let kind = self.catalog.find(item_type).ok_or_else(|| format!("unknown itemType {item_type:?}"))?;
                let cost = self.catalog.stats(kind).cost;
                let bank = &mut self.banks[usize::from(team) - 1];
                if *bank < cost {
                    return Err(format!("{item_type} costs {cost}, the bank holds {bank}"));
                }
                *bank -= cost;
                let item = self.new_item(kind);
                let slot = self.catalog.stats(kind).slot.index();
                let adventurer = &mut self.adventurers[index];
                match slot {
                    Some(slot) if *equip && adventurer.equipment[slot].is_none() => {
                        adventurer.equipment[slot] = Some(item);
                    }
                    _ => adventurer.inventory.push(item),
                }
            }
            ShopEntry::Sell { adventurer, item } => {
                let index = self.roster_index(team, *adventurer)?;
                let at = self.inventory_position(index, *item)?;
                let sold = self.adventurers[index].inventory.remove(at);
                self.banks[usize::from(team) - 1] += self.sell_price(sold.kind);
            }
            ShopEntry::Equip { adventurer, item } => {
                let index = self.roster_index(team, *adventurer)?;
                let at = self.inventory_position(index, *item)?;
                let kind = self.adventurers[index].inventory[at].kind;
                if self.is_consumable(kind) {
                    return Err(format!("{} is a consumable", self.catalog.name(kind)));
                }
                let id = self.adventurers[index].id;
                let item_id = self.adventurers[index].inventory[at].id;
                self.use_item(id, item_id)?;
            }
            ShopEntry::Unequip { adventurer, item } => {
                let index = self.roster_index(team, *adventurer)?;
                let item = item.ok_or("itemId must be a string \"i<n>\"")?;
                let adventurer = &mut self.adventurers[index];
                let slot = adventurer
                    .equipment
                    .iter()
                    .position(|held| held.is_some_and(|held| held.id == item))
                    .ok_or_else(|| format!("i{item} is not equipped on a{}", adventurer.id))?;
                if let Some(item) = adventurer.equipment[slot].take() {
                    adventurer.inventory.push(item);
                }
            }
            ShopEntry::Transfer { from, to, item } => {
                let giver = self.roster_index(team, *from)?;
                let receiver = self.roster_index(team, *to)?;
                if giver == receiver {
                    return Err("a transfer needs two different adventurers".into());
                }
                let at = self.inventory_position(giver, *item)?;
                let moved = self.adventurers[giver].inventory.remove(at);
                self.adventurers[receiver].inventory.push(moved);
            }
        }
        debug_assert!(self.banks.iter().all(|bank| *bank >= 0), "a bank went negative");
        Ok(())
    }
}
