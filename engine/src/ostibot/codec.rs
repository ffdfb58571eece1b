//! The wire: the `shop` and `play` calls bots get, the replies they send back (read
//! into [`OstibotAction`]s), and the replay snapshot ("I/O JSON" and Settled questions
//! 16–22).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::writer::{write_int, write_json};
use crate::{BotReply, PlayerStatus, Pos, Seat};

use super::map::{Dir, ObjectKind, Terrain};
use super::rules::OstibotRules;
use super::shop::ShopEntry;
use super::state::{Adventurer, GoldPile, GroundItem, Item, MapObject, Ostibot, Phase, World};
use super::vision;

/// A reply line longer than this is invalid.
pub const MAX_REPLY_BYTES: usize = farm_proto::limits::MAX_REPLY_BYTES;
/// A `state` longer than this (as compact JSON) is not kept.
pub const MAX_STATE_BYTES: usize = 1 << 20;
/// Only this many entries of `actions` are read.
pub const MAX_ACTIONS: usize = 1000;
/// Logged strings (`reason`, `error`) are cut to this many characters.
pub const MAX_LOG_CHARS: usize = 200;

/// Which call a reply answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    Shop,
    Play,
}

impl Call {
    fn name(self) -> &'static str {
        match self {
            Call::Shop => "shop",
            Call::Play => "play",
        }
    }
}

/// One entry of a `play` reply, checked for form only; whether its adventurer can act
/// is decided when it is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlayEntry {
    /// The adventurer's number, or why the entry names none (it then uses up nothing).
    pub adventurer: Result<u32, String>,
    /// The command, or why it is malformed (it then uses up the adventurer's action).
    pub command: Result<Command, String>,
}

/// A well-formed `move` or `use`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    Move(Dir),
    /// `None`: an `itemId` that is no item id, so the adventurer idles.
    Use(Option<u32>),
}

/// The entries of a valid reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entries {
    Shop(Vec<Result<ShopEntry, String>>),
    Play(Vec<PlayEntry>),
}

/// What a valid reply does to the team's `state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StateChange {
    Keep,
    Replace(String),
    TooBig(usize),
}

/// A reply that is a JSON object of the right shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValidReply {
    pub entries: Entries,
    pub state: StateChange,
    /// `reason` and `error` strings, and entries beyond [`MAX_ACTIONS`].
    pub notes: Vec<String>,
}

/// Cuts a logged string to [`MAX_LOG_CHARS`] characters.
pub(crate) fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_LOG_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// `a12` → 12 for prefix `a`; ids are opaque strings, so only the exact form matches.
pub(crate) fn parse_id(prefix: char, text: &str) -> Option<u32> {
    let digits = text.strip_prefix(prefix)?;
    // The form the number is written in: digits only (no sign), no leading zero.
    let exact = !digits.is_empty()
        && digits.bytes().all(|byte| byte.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if exact { digits.parse().ok() } else { None }
}

/// Drops null members: Settled question 19 counts null as absent.
fn present<'a>(object: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    object.get(key).filter(|value| !value.is_null())
}

/// An id field that must be a string; a string that is no id of this kind is `None`.
fn id_field(object: &serde_json::Map<String, Value>, key: &str, prefix: char) -> Result<Option<u32>, String> {
    match present(object, key) {
        Some(Value::String(text)) => Ok(parse_id(prefix, text)),
        Some(_) => Err(format!("{key} must be a string")),
        None => Err(format!("{key} is missing")),
    }
}

fn note_reason(object: &serde_json::Map<String, Value>, what: &str, notes: &mut Vec<String>) {
    if let Some(Value::String(reason)) = object.get("reason") {
        notes.push(format!("{what}: {}", cut(reason)));
    }
}

fn parse_play_entry(value: &Value, notes: &mut Vec<String>) -> PlayEntry {
    let Value::Object(entry) = value else {
        return PlayEntry { adventurer: Err("an entry must be an object".into()), command: Err(String::new()) };
    };
    let adventurer = match entry.get("adventurerId") {
        Some(Value::String(text)) => parse_id('a', text).ok_or_else(|| format!("unknown adventurer {:?}", cut(text))),
        _ => Err("adventurerId must be a string".into()),
    };
    let who = match &adventurer {
        Ok(id) => format!("a{id}"),
        Err(_) => "?".into(),
    };
    let command = match (present(entry, "move"), present(entry, "use")) {
        (Some(Value::Object(order)), None) => {
            note_reason(order, &format!("{who} move"), notes);
            match order.get("direction") {
                Some(Value::String(name)) => {
                    Dir::from_name(name).map(Command::Move).ok_or_else(|| format!("bad direction {:?}", cut(name)))
                }
                _ => Err("move.direction must be UP, DOWN, LEFT or RIGHT".into()),
            }
        }
        (None, Some(Value::Object(order))) => {
            note_reason(order, &format!("{who} use"), notes);
            match order.get("itemId") {
                Some(Value::String(text)) => Ok(Command::Use(parse_id('i', text))),
                _ => Err("use.itemId must be a string".into()),
            }
        }
        (Some(_), None) => Err("move must be an object".into()),
        (None, Some(_)) => Err("use must be an object".into()),
        (Some(_), Some(_)) => Err("an entry has exactly one of move and use".into()),
        (None, None) => Err("an entry needs a move or a use".into()),
    };
    PlayEntry { adventurer, command }
}

const SHOP_KEYS: [&str; 5] = ["buy", "sell", "equip", "unequip", "transfer"];

fn parse_shop_entry(value: &Value) -> Result<ShopEntry, String> {
    let Value::Object(entry) = value else { return Err("an entry must be an object".into()) };
    let mut kinds = SHOP_KEYS.iter().filter(|key| present(entry, key).is_some());
    let (Some(kind), None) = (kinds.next(), kinds.next()) else {
        return Err("an entry has exactly one of buy, sell, equip, unequip, transfer".into());
    };
    let Some(Value::Object(order)) = present(entry, kind) else { return Err(format!("{kind} must be an object")) };
    let adventurer = || id_field(order, "adventurerId", 'a');
    let item = || id_field(order, "itemId", 'i');
    match *kind {
        "buy" => {
            let item_type = match order.get("itemType") {
                Some(Value::String(name)) => name.clone(),
                _ => return Err("buy.itemType must be a string".into()),
            };
            let equip = match present(order, "equip") {
                None => false,
                Some(Value::Bool(flag)) => *flag,
                Some(_) => return Err("buy.equip must be true, false or null".into()),
            };
            Ok(ShopEntry::Buy { adventurer: adventurer()?, item_type, equip })
        }
        "sell" => Ok(ShopEntry::Sell { adventurer: adventurer()?, item: item()? }),
        "equip" => Ok(ShopEntry::Equip { adventurer: adventurer()?, item: item()? }),
        "unequip" => Ok(ShopEntry::Unequip { adventurer: adventurer()?, item: item()? }),
        _ => Ok(ShopEntry::Transfer {
            from: id_field(order, "from", 'a')?,
            to: id_field(order, "to", 'a')?,
            item: item()?,
        }),
    }
}

/// Reads a reply line to call `call` number `seq`. `Err` is a wholly invalid reply
/// (Settled question 18): no actions, state unchanged.
pub(crate) fn parse_reply(text: &str, call: Call, seq: u64) -> Result<ValidReply, String> {
    match read_usual_reply(text, call, seq) {
        Some(reply) => Ok(reply),
        None => read_any_reply(text, call, seq),
    }
}

/// Reads the usual reply without building a `serde_json::Value` tree: exactly the
/// shape the built-in bots write (and most bots would), `{"actions":[…],"seq":N}` with
/// no white space, keys in that order, no `state`, `error` or `reason`, strings without
/// escapes, and only entries that read without a problem. `None` for anything else,
/// which [`read_any_reply`] then reads; where both read a reply they agree (a proptest
/// checks it).
fn read_usual_reply(text: &str, call: Call, seq: u64) -> Option<ValidReply> {
    if text.len() > MAX_REPLY_BYTES {
        return None;
    }
    let mut reader = UsualReader { rest: text };
    reader.expect("{\"actions\":[")?;
    let entries = match call {
        Call::Play => Entries::Play(reader.list(UsualReader::play_entry)?),
        Call::Shop => Entries::Shop(reader.list(|reader| reader.buy_entry().map(Ok))?),
    };
    if reader.rest.starts_with(",\"seq\":") {
        reader.expect(",\"seq\":")?;
        if reader.number()? != seq {
            return None;
        }
    }
    reader.expect("}")?;
    reader.rest.is_empty().then_some(ValidReply { entries, state: StateChange::Keep, notes: Vec::new() })
}

/// What is left of a reply being read by [`read_usual_reply`].
struct UsualReader<'a> {
    rest: &'a str,
}

impl<'a> UsualReader<'a> {
    /// Reads `literal`, or `None`.
    fn expect(&mut self, literal: &str) -> Option<()> {
        self.rest = self.rest.strip_prefix(literal)?;
        Some(())
    }

    /// A string's content up to its closing quote, which is read too: `None` for one
    /// with an escape or a control character, which only the general reader reads.
    fn string(&mut self) -> Option<&'a str> {
        let end = self.rest.bytes().position(|byte| byte == b'"' || byte == b'\\' || byte < 0x20)?;
        let (content, rest) = self.rest.split_at(end);
        self.rest = rest.strip_prefix('"')?;
        Some(content)
    }

    /// A whole number as JSON writes it (no sign, fraction or leading zero) that fits
    /// a `u64`.
    fn number(&mut self) -> Option<u64> {
        let end = self.rest.bytes().position(|byte| !byte.is_ascii_digit()).unwrap_or(self.rest.len());
        let (digits, rest) = self.rest.split_at(end);
        if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
            return None;
        }
        self.rest = rest;
        digits.parse().ok()
    }

    /// The entries of a list whose `[` was read, up to and with its `]`; at most
    /// [`MAX_ACTIONS`] of them (more are noted, which the general reader does).
    fn list<T>(&mut self, mut entry: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let mut entries = Vec::new();
        if self.expect("]").is_some() {
            return Some(entries);
        }
        loop {
            entries.push(entry(self)?);
            if entries.len() > MAX_ACTIONS {
                return None;
            }
            if self.expect("]").is_some() {
                return Some(entries);
            }
            self.expect(",")?;
        }
    }

    /// `{"adventurerId":"a<n>","move":{"direction":"<DIR>"}}` or
    /// `{"adventurerId":"a<n>","use":{"itemId":"<id>"}}`.
    fn play_entry(&mut self) -> Option<PlayEntry> {
        self.expect("{\"adventurerId\":\"")?;
        let adventurer = parse_id('a', self.string()?)?;
        let command = if self.expect(",\"move\":{\"direction\":\"").is_some() {
            Command::Move(Dir::from_name(self.string()?)?)
        } else {
            self.expect(",\"use\":{\"itemId\":\"")?;
            Command::Use(parse_id('i', self.string()?))
        };
        self.expect("}}")?;
        Some(PlayEntry { adventurer: Ok(adventurer), command: Ok(command) })
    }

    /// `{"buy":{"adventurerId":"<id>","equip":<bool>,"itemType":"<type>"}}`.
    fn buy_entry(&mut self) -> Option<ShopEntry> {
        self.expect("{\"buy\":{\"adventurerId\":\"")?;
        let adventurer = parse_id('a', self.string()?);
        self.expect(",\"equip\":")?;
        let equip = if self.expect("true").is_some() {
            true
        } else {
            self.expect("false")?;
            false
        };
        self.expect(",\"itemType\":\"")?;
        let item_type = self.string()?.to_owned();
        self.expect("}}")?;
        Some(ShopEntry::Buy { adventurer, item_type, equip })
    }
}

/// Reads any reply, as serde_json reads JSON: see [`parse_reply`].
fn read_any_reply(text: &str, call: Call, seq: u64) -> Result<ValidReply, String> {
    if text.len() > MAX_REPLY_BYTES {
        return Err(format!("reply of {} bytes, over the {MAX_REPLY_BYTES}-byte cap", text.len()));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(reply) = value else { return Err("the reply is not a JSON object".into()) };
    match reply.get("seq") {
        None => {}
        Some(Value::Number(number)) if number.as_u64() == Some(seq) => {}
        Some(other) => return Err(format!("seq {} does not match this call's {seq}", cut(&other.to_string()))),
    }
    let entries: &[Value] = match present(&reply, "actions") {
        None => &[],
        Some(Value::Array(entries)) => entries,
        Some(_) => return Err("actions must be an array".into()),
    };
    let mut notes = Vec::new();
    if let Some(Value::String(error)) = reply.get("error") {
        notes.push(format!("error: {}", cut(error)));
    }
    if entries.len() > MAX_ACTIONS {
        notes.push(format!("{} actions; only the first {MAX_ACTIONS} are read", entries.len()));
    }
    let entries = &entries[..entries.len().min(MAX_ACTIONS)];
    let entries = match call {
        Call::Shop => Entries::Shop(entries.iter().map(parse_shop_entry).collect()),
        Call::Play => Entries::Play(entries.iter().map(|entry| parse_play_entry(entry, &mut notes)).collect()),
    };
    let state = match reply.get("state") {
        None => StateChange::Keep,
        Some(value) => {
            let text = value.to_string();
            if text.len() > MAX_STATE_BYTES { StateChange::TooBig(text.len()) } else { StateChange::Replace(text) }
        }
    };
    Ok(ValidReply { entries, state, notes })
}

// ---------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------

#[derive(Serialize)]
struct CallDoc<'a, T> {
    call: &'static str,
    seq: u64,
    input: &'a T,
}

/// Appends `input` to `out`, wrapped as one call line.
pub(crate) fn write_call_line<T: Serialize>(out: &mut Vec<u8>, call: Call, seq: u64, input: &T) {
    write_json(out, &CallDoc { call: call.name(), seq, input });
}

/// One team in `teams`.
#[derive(Serialize)]
pub(crate) struct TeamDoc<'a> {
    pub id: u8,
    pub name: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ItemDoc<'a> {
    id: String,
    item_type: &'a str,
}

#[derive(Serialize)]
struct EquipmentDoc<'a> {
    weapon: Option<ItemDoc<'a>>,
    armor: Option<ItemDoc<'a>>,
    accessory: Option<ItemDoc<'a>>,
}

fn item_doc(world: &World, item: Item) -> ItemDoc<'_> {
    ItemDoc { id: format!("i{}", item.id), item_type: world.catalog.name(item.kind) }
}

fn equipment_doc<'a>(world: &'a World, adventurer: &Adventurer) -> EquipmentDoc<'a> {
    let [weapon, armor, accessory] = adventurer.equipment.map(|item| item.map(|item| item_doc(world, item)));
    EquipmentDoc { weapon, armor, accessory }
}

/// An adventurer as its own team sees it (and as replays record every adventurer).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OwnAdventurerDoc<'a> {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    team: u8,
    x: i32,
    y: i32,
    hp: i64,
    max_hp: i64,
    gold: i64,
    damage: i64,
    armor: i64,
    vision: i64,
    spike_immune: bool,
    equipment: EquipmentDoc<'a>,
    inventory: Vec<ItemDoc<'a>>,
    veteran: bool,
}

pub(crate) fn own_adventurer_doc<'a>(world: &'a World, adventurer: &Adventurer) -> OwnAdventurerDoc<'a> {
    OwnAdventurerDoc {
        id: format!("a{}", adventurer.id),
        kind: "adventurer",
        team: adventurer.team,
        x: adventurer.pos.x,
        y: adventurer.pos.y,
        hp: adventurer.hp.max(0),
        max_hp: world.rules.adventurer_hp,
        gold: adventurer.gold,
        damage: world.damage(adventurer),
        armor: world.armor(adventurer),
        vision: world.vision(adventurer),
        spike_immune: world.spike_immune(adventurer),
        equipment: equipment_doc(world, adventurer),
        inventory: adventurer.inventory.iter().map(|item| item_doc(world, *item)).collect(),
        veteran: adventurer.veteran,
    }
}

/// An enemy adventurer: no gold, no inventory (Settled question 16).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EnemyAdventurerDoc<'a> {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    team: u8,
    x: i32,
    y: i32,
    hp: i64,
    max_hp: i64,
    equipment: EquipmentDoc<'a>,
}

#[derive(Serialize)]
struct ObjectDoc {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    x: i32,
    y: i32,
    hp: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    open: Option<bool>,
}

#[derive(Serialize)]
struct GoldDoc {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    x: i32,
    y: i32,
    amount: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroundItemDoc<'a> {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    item_type: &'a str,
    x: i32,
    y: i32,
}

#[derive(Serialize)]
#[serde(untagged)]
enum EntityDoc<'a> {
    Own(OwnAdventurerDoc<'a>),
    Enemy(EnemyAdventurerDoc<'a>),
    Object(ObjectDoc),
    Gold(GoldDoc),
    Item(GroundItemDoc<'a>),
}

/// A thing on the board that a call or a frame lists.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Entity<'a> {
    Adventurer(&'a Adventurer),
    Object(&'a MapObject),
    Gold(&'a GoldPile),
    Item(&'a GroundItem),
}

/// The entities `team` sees (every entity for `None`), sorted by (y, x), then kind
/// (adventurer, door, chest, vase, portal, gold, item), then id (Settled question 17).
/// A team sees its own adventurers wherever they are.
pub(crate) fn entities<'a>(world: &'a World, team: Option<u8>, visible: Option<&[bool]>) -> Vec<Entity<'a>> {
    let seen = |pos: Pos| match visible {
        None => true,
        Some(cells) => world.index(pos).is_some_and(|index| cells[index]),
    };
    let most = world.adventurers.len() + world.objects.len() + world.gold.len() + world.ground.len();
    let mut listed: Vec<((i32, i32, u8, u32), Entity<'_>)> = Vec::with_capacity(most);
    for adventurer in &world.adventurers {
        if team.is_none() || team == Some(adventurer.team) || seen(adventurer.pos) {
            listed.push(((adventurer.pos.y, adventurer.pos.x, 0, adventurer.id), Entity::Adventurer(adventurer)));
        }
    }
    for object in world.objects.iter().filter(|object| seen(object.pos)) {
        let rank = match object.kind {
            ObjectKind::Door => 1,
            ObjectKind::Chest => 2,
            ObjectKind::Vase => 3,
            ObjectKind::Portal => 4,
        };
        listed.push(((object.pos.y, object.pos.x, rank, object.id), Entity::Object(object)));
    }
    for pile in world.gold.iter().filter(|pile| seen(pile.pos)) {
        listed.push(((pile.pos.y, pile.pos.x, 5, pile.id), Entity::Gold(pile)));
    }
    for ground in world.ground.iter().filter(|ground| seen(ground.pos)) {
        listed.push(((ground.pos.y, ground.pos.x, 6, ground.item.id), Entity::Item(ground)));
    }
    // Keys are unique (ids are, within a kind), so an unstable sort gives the one order.
    listed.sort_unstable_by_key(|(key, _)| *key);
    listed.into_iter().map(|(_, entity)| entity).collect()
}

/// The document of `entity` in a call to `team`.
fn entity_doc<'a>(world: &'a World, team: u8, entity: Entity<'a>) -> EntityDoc<'a> {
    match entity {
        Entity::Adventurer(adventurer) if team == adventurer.team => {
            EntityDoc::Own(own_adventurer_doc(world, adventurer))
        }
        Entity::Adventurer(adventurer) => EntityDoc::Enemy(EnemyAdventurerDoc {
            id: format!("a{}", adventurer.id),
            kind: "adventurer",
            team: adventurer.team,
            x: adventurer.pos.x,
            y: adventurer.pos.y,
            hp: adventurer.hp.max(0),
            max_hp: world.rules.adventurer_hp,
            equipment: equipment_doc(world, adventurer),
        }),
        Entity::Object(object) => EntityDoc::Object(ObjectDoc {
            id: format!("e{}", object.id),
            kind: object.kind.name(),
            x: object.pos.x,
            y: object.pos.y,
            hp: object.hp.max(0),
            open: (object.kind == ObjectKind::Portal).then_some(object.open),
        }),
        Entity::Gold(pile) => EntityDoc::Gold(GoldDoc {
            id: format!("g{}", pile.id),
            kind: "gold",
            x: pile.pos.x,
            y: pile.pos.y,
            amount: pile.amount,
        }),
        Entity::Item(ground) => EntityDoc::Item(GroundItemDoc {
            id: format!("i{}", ground.item.id),
            kind: "item",
            item_type: world.catalog.name(ground.item.kind),
            x: ground.pos.x,
            y: ground.pos.y,
        }),
    }
}

/// The cells team `team` sees: its adventurers' and its intact spawners' vision.
pub(crate) fn team_vision(world: &World, team: u8) -> Vec<bool> {
    let mut viewers: Vec<(Pos, i64)> = world
        .adventurers
        .iter()
        .filter(|adventurer| adventurer.team == team)
        .map(|adventurer| (adventurer.pos, world.vision(adventurer)))
        .collect();
    for (index, cell) in world.terrain.iter().enumerate() {
        if *cell == Terrain::Spawner(team) {
            let pos = Pos::new(index as i32 % world.map.width, index as i32 / world.map.width);
            viewers.push((pos, world.rules.vision_length));
        }
    }
    // What blocks sight (World::blocks_sight), by cell: sight asks about every cell of
    // every line.
    let mut blocking: Vec<bool> = world.terrain.iter().map(|cell| *cell == Terrain::Wall).collect();
    for door in world.objects.iter().filter(|object| object.kind == ObjectKind::Door) {
        if let Some(index) = world.index(door.pos) {
            blocking[index] = true;
        }
    }
    let blocks = |pos: Pos| world.index(pos).is_none_or(|index| blocking[index]);
    vision::visible_cells(world.map.width, world.map.height, &viewers, &blocks)
}

/// Terrain rows: map objects stand on floor and show as `.`; spawners show until
/// corruption takes them.
fn map_rows(world: &World) -> Vec<String> {
    world.terrain.chunks(world.map.width as usize).map(|row| row.iter().map(|cell| cell.symbol()).collect()).collect()
}

fn corrupted_cells(world: &World) -> Vec<[i32; 2]> {
    let width = world.map.width;
    (0..world.corrupted.len())
        .filter(|&index| world.corrupted[index])
        .map(|index| [index as i32 % width, index as i32 / width])
        .collect()
}

/// `teamsGold`: string keys in key order.
pub(crate) fn teams_gold(world: &World) -> BTreeMap<String, i64> {
    world.banks.iter().enumerate().map(|(index, bank)| ((index + 1).to_string(), *bank)).collect()
}

/// `gameState`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GameStateDoc<'a> {
    round: u32,
    turn: u32,
    width: i32,
    height: i32,
    teams_gold: BTreeMap<String, i64>,
    map: Vec<String>,
    corrupted: Vec<[i32; 2]>,
    entities: Vec<EntityDoc<'a>>,
}

/// The state `team` sees.
pub(crate) fn game_state(world: &World, round: u32, turn: u32, team: u8) -> GameStateDoc<'_> {
    let visible = team_vision(world, team);
    GameStateDoc {
        round,
        turn,
        width: world.map.width,
        height: world.map.height,
        teams_gold: teams_gold(world),
        map: map_rows(world),
        corrupted: corrupted_cells(world),
        entities: entities(world, Some(team), Some(&visible))
            .into_iter()
            .map(|entity| entity_doc(world, team, entity))
            .collect(),
    }
}

/// The `shop` input.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ShopInput<'a> {
    pub you: u8,
    pub round: u32,
    pub rules: &'a RawValue,
    pub teams: &'a [TeamDoc<'a>],
    pub teams_gold: BTreeMap<String, i64>,
    pub adventurers: Vec<OwnAdventurerDoc<'a>>,
    pub state: &'a RawValue,
}

/// The `play` input.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PlayInput<'a> {
    pub you: u8,
    pub rules: &'a RawValue,
    pub teams: &'a [TeamDoc<'a>],
    pub game_state: GameStateDoc<'a>,
    pub state: &'a RawValue,
}

// ---------------------------------------------------------------------------
// The match's documents and replies
// ---------------------------------------------------------------------------

/// One team's reply for one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OstibotAction(pub(super) ActionKind);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ActionKind {
    Reply(Result<ValidReply, String>),
    TimedOut,
    /// The bot is gone, with this status.
    Gone(PlayerStatus),
}

/// Appends to `out` the call line `seat` is sent this step.
pub(super) fn write_observation(game: &Ostibot, seat: Seat, out: &mut Vec<u8>) {
    let team = (seat + 1).min(game.teams()) as u8;
    let index = usize::from(team) - 1;
    let teams: Vec<TeamDoc<'_>> =
        game.players.iter().enumerate().map(|(k, name)| TeamDoc { id: k as u8 + 1, name }).collect();
    let seq = game.calls[index] + 1;
    let state = &game.states[index];
    match game.call() {
        Call::Shop => {
            let adventurers = game
                .world
                .adventurers
                .iter()
                .filter(|adventurer| adventurer.team == team)
                .map(|adventurer| own_adventurer_doc(&game.world, adventurer))
                .collect();
            let input = ShopInput {
                you: team,
                round: game.round,
                rules: &game.rules_json,
                teams: &teams,
                teams_gold: teams_gold(&game.world),
                adventurers,
                state,
            };
            write_call_line(out, Call::Shop, seq, &input);
        }
        Call::Play => {
            let input = PlayInput {
                you: team,
                rules: &game.rules_json,
                teams: &teams,
                game_state: game_state(&game.world, game.round, game.turn, team),
                state,
            };
            write_call_line(out, Call::Play, seq, &input);
        }
    }
}

/// Reads `seat`'s reply to this step's call.
pub(super) fn read_reply(game: &Ostibot, seat: Seat, reply: &BotReply) -> OstibotAction {
    let seq = game.calls.get(seat).map_or(1, |calls| calls + 1);
    OstibotAction(match reply {
        BotReply::Line(text) => ActionKind::Reply(parse_reply(text, game.call(), seq)),
        BotReply::Unreadable => ActionKind::Reply(Err("unreadable (not UTF-8, or too long)".into())),
        BotReply::Timeout => ActionKind::TimedOut,
        BotReply::Crashed => ActionKind::Gone(PlayerStatus::Crashed),
        BotReply::OutputLimit => ActionKind::Gone(PlayerStatus::OutputLimit),
    })
}

/// Appends to `out` the replay frame's state: everything, seen by nobody in particular.
///
/// Written field by field: it is written every step, and serde's generic path cost
/// most of a step. It is the document `tests::SnapshotDoc` describes, byte for byte
/// (a test compares them): `phase`, `order`, then `gameState`'s fields (`round`,
/// `turn`, `width`, `height`, `teamsGold`, `map`, `corrupted`, `entities`, with every
/// adventurer as a frame shows it), `escaped` and `log`. Only the log holds text from
/// bots, so only it goes through serde's string escaping; item types are snake_case
/// (the rules check it) and map symbols ASCII (the world keeps them as bytes).
pub(super) fn write_state(game: &Ostibot, out: &mut Vec<u8>) {
    let world = &game.world;
    let phase = match game.phase {
        Phase::Shop => "shop",
        Phase::Turn { .. } => "turn",
        Phase::Over => "over",
    };
    push(out, "{\"phase\":\"");
    push(out, phase);
    push(out, "\",\"order\":[");
    for (at, team) in game.order.iter().enumerate() {
        comma(out, at);
        write_int(out, *team);
    }
    push(out, "],\"round\":");
    write_int(out, game.round);
    push(out, ",\"turn\":");
    write_int(out, game.turn);
    push(out, ",\"width\":");
    write_int(out, world.map.width);
    push(out, ",\"height\":");
    write_int(out, world.map.height);
    // Keyed by team id as a string, in key order: with at most 9 teams, id order.
    push(out, ",\"teamsGold\":{");
    for (index, bank) in world.banks.iter().enumerate() {
        comma(out, index);
        out.push(b'"');
        write_int(out, index + 1);
        push(out, "\":");
        write_int(out, *bank);
    }
    push(out, "},\"map\":[");
    for (at, row) in world.symbols.chunks(world.map.width as usize).enumerate() {
        comma(out, at);
        out.push(b'"');
        out.extend_from_slice(row);
        out.push(b'"');
    }
    push(out, "],\"corrupted\":[");
    let width = world.map.width;
    for (at, index) in (0..world.corrupted.len()).filter(|&index| world.corrupted[index]).enumerate() {
        comma(out, at);
        out.push(b'[');
        write_int(out, index as i32 % width);
        out.push(b',');
        write_int(out, index as i32 / width);
        out.push(b']');
    }
    push(out, "],\"entities\":[");
    for (at, entity) in entities(world, None, None).into_iter().enumerate() {
        comma(out, at);
        write_frame_entity(world, entity, out);
    }
    push(out, "],\"escaped\":{");
    for (at, (index, list)) in world.escaped.iter().enumerate().filter(|(_, list)| !list.is_empty()).enumerate() {
        comma(out, at);
        out.push(b'"');
        write_int(out, index + 1);
        push(out, "\":[");
        for (at, adventurer) in list.iter().enumerate() {
            comma(out, at);
            push(out, "\"a");
            write_int(out, adventurer.id);
            out.push(b'"');
        }
        out.push(b']');
    }
    push(out, "},\"log\":");
    write_json(out, &world.log);
    out.push(b'}');
}

fn push(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(text.as_bytes());
}

/// The `,` before every element of a list but the first (`at` 0).
fn comma(out: &mut Vec<u8>, at: usize) {
    if at > 0 {
        out.push(b',');
    }
}

/// `"<key>":{"id":"i<n>","itemType":"<type>"}`, or `null` for no item.
fn write_item(world: &World, item: Option<Item>, out: &mut Vec<u8>) {
    match item {
        None => push(out, "null"),
        Some(item) => {
            push(out, "{\"id\":\"i");
            write_int(out, item.id);
            push(out, "\",\"itemType\":\"");
            push(out, world.catalog.name(item.kind));
            push(out, "\"}");
        }
    }
}

/// `"id":"<prefix><id>","type":"<kind>"`, the start of every entity.
fn write_id_and_type(prefix: &str, id: u32, kind: &str, out: &mut Vec<u8>) {
    push(out, "{\"id\":\"");
    push(out, prefix);
    write_int(out, id);
    push(out, "\",\"type\":\"");
    push(out, kind);
    out.push(b'"');
}

fn write_xy(pos: Pos, out: &mut Vec<u8>) {
    push(out, ",\"x\":");
    write_int(out, pos.x);
    push(out, ",\"y\":");
    write_int(out, pos.y);
}

/// One entity as a frame shows it: an adventurer without the stats that follow from
/// its items and the rules.
fn write_frame_entity(world: &World, entity: Entity<'_>, out: &mut Vec<u8>) {
    match entity {
        Entity::Adventurer(adventurer) => {
            write_id_and_type("a", adventurer.id, "adventurer", out);
            push(out, ",\"team\":");
            write_int(out, adventurer.team);
            write_xy(adventurer.pos, out);
            push(out, ",\"hp\":");
            write_int(out, adventurer.hp.max(0));
            push(out, ",\"gold\":");
            write_int(out, adventurer.gold);
            let [weapon, armor, accessory] = adventurer.equipment;
            push(out, ",\"equipment\":{\"weapon\":");
            write_item(world, weapon, out);
            push(out, ",\"armor\":");
            write_item(world, armor, out);
            push(out, ",\"accessory\":");
            write_item(world, accessory, out);
            push(out, "},\"inventory\":[");
            for (at, item) in adventurer.inventory.iter().enumerate() {
                comma(out, at);
                write_item(world, Some(*item), out);
            }
            push(out, "],\"veteran\":");
            push(out, if adventurer.veteran { "true}" } else { "false}" });
        }
        Entity::Object(object) => {
            write_id_and_type("e", object.id, object.kind.name(), out);
            write_xy(object.pos, out);
            push(out, ",\"hp\":");
            write_int(out, object.hp.max(0));
            if object.kind == ObjectKind::Portal {
                push(out, if object.open { ",\"open\":true" } else { ",\"open\":false" });
            }
            out.push(b'}');
        }
        Entity::Gold(pile) => {
            write_id_and_type("g", pile.id, "gold", out);
            write_xy(pile.pos, out);
            push(out, ",\"amount\":");
            write_int(out, pile.amount);
            out.push(b'}');
        }
        Entity::Item(ground) => {
            write_id_and_type("i", ground.item.id, "item", out);
            push(out, ",\"itemType\":\"");
            push(out, world.catalog.name(ground.item.kind));
            out.push(b'"');
            write_xy(ground.pos, out);
            out.push(b'}');
        }
    }
}

/// What team `team`'s call of this step holds, read from the typed match: the
/// built-in bots read this instead of the call line, and see nothing the line does not
/// show.
pub(crate) struct TeamView<'a> {
    game: &'a Ostibot,
    team: u8,
}

impl<'a> TeamView<'a> {
    /// The call `seat` is sent this step.
    pub(crate) fn new(game: &'a Ostibot, seat: Seat) -> Self {
        TeamView { game, team: (seat + 1).min(game.teams()) as u8 }
    }

    /// Whether it is the `shop` call (else `play`).
    pub(crate) fn is_shop(&self) -> bool {
        self.game.call() == Call::Shop
    }

    /// `seq`.
    pub(crate) fn seq(&self) -> u64 {
        self.game.calls[usize::from(self.team) - 1] + 1
    }

    /// `you`.
    pub(crate) fn you(&self) -> u8 {
        self.team
    }

    /// `rules`.
    pub(crate) fn rules(&self) -> &'a OstibotRules {
        &self.game.world.rules
    }

    /// The team's own entry of `teamsGold`.
    pub(crate) fn bank(&self) -> i64 {
        self.game.world.bank(self.team)
    }

    /// The board, for its stats of adventurers and names of items (the fields the call
    /// writes from them) and its terrain, corruption and size (`gameState`'s `map`,
    /// `corrupted`, `width` and `height`).
    pub(crate) fn world(&self) -> &'a World {
        &self.game.world
    }

    /// `gameState.round`.
    pub(crate) fn round(&self) -> u32 {
        self.game.round
    }

    /// `gameState.turn`.
    pub(crate) fn turn(&self) -> u32 {
        self.game.turn
    }

    /// The team's adventurers in the order the call lists them: `adventurers` of a shop
    /// call (spawn order), the team's entries of `entities` in a play call.
    pub(crate) fn own_adventurers(&self) -> Vec<&'a Adventurer> {
        let mut own: Vec<&Adventurer> =
            self.game.world.adventurers.iter().filter(|adventurer| adventurer.team == self.team).collect();
        if !self.is_shop() {
            // Entities are sorted by cell, then id; adventurers never share a cell.
            own.sort_by_key(|adventurer| (adventurer.pos.y, adventurer.pos.x, adventurer.id));
        }
        own
    }

    /// `gameState.entities`: what the team sees, its own adventurers included.
    pub(crate) fn entities(&self) -> Vec<Entity<'a>> {
        let visible = team_vision(&self.game.world, self.team);
        entities(&self.game.world, Some(self.team), Some(&visible))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ostibot::DecisionMode;
    use crate::{Game, GameKind, GameRng};

    // The replay frame's state as serde renders it: the reference of `write_state`.

    /// An adventurer in a replay frame: what a viewer needs, without the stats that
    /// follow from its items and the rules.
    #[derive(Serialize)]
    struct ReplayAdventurerDoc<'a> {
        id: String,
        #[serde(rename = "type")]
        kind: &'static str,
        team: u8,
        x: i32,
        y: i32,
        hp: i64,
        gold: i64,
        equipment: EquipmentDoc<'a>,
        inventory: Vec<ItemDoc<'a>>,
        veteran: bool,
    }

    #[derive(Serialize)]
    #[serde(untagged)]
    enum FrameEntityDoc<'a> {
        Adventurer(ReplayAdventurerDoc<'a>),
        Other(EntityDoc<'a>),
    }

    /// A replay frame's state: everything, seen by nobody in particular.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct SnapshotDoc<'a> {
        phase: &'static str,
        order: &'a [u8],
        round: u32,
        turn: u32,
        width: i32,
        height: i32,
        teams_gold: BTreeMap<String, i64>,
        map: Vec<String>,
        corrupted: Vec<[i32; 2]>,
        entities: Vec<FrameEntityDoc<'a>>,
        escaped: BTreeMap<String, Vec<String>>,
        log: &'a [String],
    }

    fn snapshot_doc(game: &Ostibot) -> SnapshotDoc<'_> {
        let world = &game.world;
        let entities = entities(world, None, None)
            .into_iter()
            .map(|entity| match entity {
                Entity::Adventurer(adventurer) => FrameEntityDoc::Adventurer(ReplayAdventurerDoc {
                    id: format!("a{}", adventurer.id),
                    kind: "adventurer",
                    team: adventurer.team,
                    x: adventurer.pos.x,
                    y: adventurer.pos.y,
                    hp: adventurer.hp.max(0),
                    gold: adventurer.gold,
                    equipment: equipment_doc(world, adventurer),
                    inventory: adventurer.inventory.iter().map(|item| item_doc(world, *item)).collect(),
                    veteran: adventurer.veteran,
                }),
                other => FrameEntityDoc::Other(entity_doc(world, 0, other)),
            })
            .collect();
        SnapshotDoc {
            phase: match game.phase {
                Phase::Shop => "shop",
                Phase::Turn { .. } => "turn",
                Phase::Over => "over",
            },
            order: &game.order,
            round: game.round,
            turn: game.turn,
            width: world.map.width,
            height: world.map.height,
            teams_gold: teams_gold(world),
            map: map_rows(world),
            corrupted: corrupted_cells(world),
            entities,
            escaped: world
                .escaped
                .iter()
                .enumerate()
                .filter(|(_, list)| !list.is_empty())
                .map(|(index, list)| ((index + 1).to_string(), list.iter().map(|a| format!("a{}", a.id)).collect()))
                .collect(),
            log: &world.log,
        }
    }

    /// What the matches of the frame-state test must show at least once.
    const FEATURES: [&str; 8] = [
        r#""type":"gold""#,
        r#""type":"item""#,
        r#""escaped":{""#,
        r#""open":true"#,
        r#""corrupted":[["#,
        r#""inventory":[{"#,
        r#""weapon":{"#,
        r#"\u0001"#,
    ];

    #[test]
    fn the_frame_state_is_what_serde_writes() {
        // Rich enough to buy items, die, drop them, open portals and escape.
        let rules = OstibotRules {
            starting_gold: 20,
            corruption_start_at: 10,
            max_turns_per_round: 40,
            ..OstibotRules::default()
        };
        // Team 2's adventurers carry a potion and wear a vest, to drop when they die.
        let buys: Vec<String> = ["a4", "a5", "a6"]
            .iter()
            .map(|id| {
                format!(
                    r#"{{"buy":{{"adventurerId":"{id}","itemType":"health_potion"}}}},{{"buy":{{"adventurerId":"{id}","itemType":"leather_vest","equip":true}}}}"#
                )
            })
            .collect();
        let purchases = format!(r#"{{"actions":[{}]}}"#, buys.join(","));
        let mut reached = [false; FEATURES.len()];
        for (mode, seed) in [(DecisionMode::Sequential, 5), (DecisionMode::Snapshot, 6)] {
            let rules = OstibotRules { decision_mode: mode, ..rules.clone() };
            let players = ["a".to_owned(), "b".to_owned()];
            let mut game = Ostibot::new(rules, None, &players, seed).expect("the default map");
            let mut bots: Vec<_> = ["raider", "random"]
                .iter()
                .enumerate()
                .map(|(seat, name)| crate::builtin::create(GameKind::Ostibot, name, seed, seat).expect("a bot"))
                .collect();
            let mut rng = GameRng::new(seed, GameRng::RULES);
            for step in 0.. {
                let mut by_hand = Vec::new();
                write_state(&game, &mut by_hand);
                let by_serde = serde_json::to_string(&snapshot_doc(&game)).expect("serializes");
                assert_eq!(String::from_utf8_lossy(&by_hand), by_serde, "{mode:?}, step {step}");
                for (feature, found) in FEATURES.iter().zip(&mut reached) {
                    *found |= by_serde.contains(feature);
                }
                if game.is_over() {
                    break;
                }
                let actions = game
                    .to_act()
                    .into_iter()
                    .map(|seat| {
                        // Team 2's purchases, and now and then a reason that needs
                        // escaping, for the log.
                        let line = if game.phase() == Phase::Shop && seat == 1 {
                            purchases.clone()
                        } else if step % 7 == 3 {
                            r#"{"actions":[{"adventurerId":"a1","move":{"direction":"UP","reason":"\"é\"\n\u0001"}}]}"#
                                .to_owned()
                        } else {
                            bots[seat].reply(&game, seat)
                        };
                        (seat, game.parse_reply(seat, &BotReply::Line(line)))
                    })
                    .collect();
                game.apply(actions, &mut rng);
            }
        }
        let missed: Vec<&str> =
            FEATURES.iter().zip(reached).filter(|(_, found)| !found).map(|(feature, _)| *feature).collect();
        assert!(missed.is_empty(), "the matches never showed {missed:?}");
    }

    /// Pieces of the replies the proptest builds: some the usual reader takes, some it
    /// leaves to the general one (escapes, leading zeros, ids of the wrong kind).
    const IDS: [&str; 8] = ["a1", "a12", "a01", "i3", "a", "a4294967296", r"a\u0031", "a1\u{e9}"];
    const DIRECTIONS: [&str; 6] = ["UP", "DOWN", "LEFT", "RIGHT", "up", r"U\u0050"];
    const ITEM_TYPES: [&str; 4] = ["rusty_sword", "x", "caf\u{e9}", r#"a\"b"#];
    const SEQS: [&str; 7] = ["1", "2", "0", "01", "-1", "1.0", "18446744073709551617"];

    proptest::proptest! {
        // Many cases: only some of them are replies the usual reader takes.
        #![proptest_config(proptest::test_runner::Config { cases: 2048, ..proptest::test_runner::Config::default() })]

        /// Replies shaped as the built-ins write them, with odd pieces, and now and
        /// then a piece of JSON (or not) put in at a random place.
        #[test]
        fn the_usual_reader_agrees_with_the_general_one(
            entries in proptest::collection::vec(
                (0..3usize, 0..IDS.len(), 0..DIRECTIONS.len(), 0..ITEM_TYPES.len(), proptest::bool::ANY),
                0..5,
            ),
            seq in proptest::option::of(0..SEQS.len()),
            insert in proptest::option::of((0..300usize, proptest::sample::select(vec![" ", ",", "}", "{", "\"", "x", "]", "\\"]))),
            shop in proptest::bool::ANY,
        ) {
            let entries: Vec<String> = entries
                .iter()
                .map(|&(kind, id, dir, item_type, equip)| match kind {
                    0 => format!(r#"{{"adventurerId":"{}","move":{{"direction":"{}"}}}}"#, IDS[id], DIRECTIONS[dir]),
                    1 => format!(r#"{{"adventurerId":"{}","use":{{"itemId":"{}"}}}}"#, IDS[id], IDS[(id + 3) % IDS.len()]),
                    _ => format!(
                        r#"{{"buy":{{"adventurerId":"{}","equip":{equip},"itemType":"{}"}}}}"#,
                        IDS[id],
                        ITEM_TYPES[item_type]
                    ),
                })
                .collect();
            let mut text = format!(r#"{{"actions":[{}]"#, entries.join(","));
            if let Some(seq) = seq {
                text.push_str(&format!(r#","seq":{}"#, SEQS[seq]));
            }
            text.push('}');
            if let Some((at, piece)) = insert {
                let at = at % (text.len() + 1);
                if text.is_char_boundary(at) {
                    text.insert_str(at, piece);
                }
            }
            let call = if shop { Call::Shop } else { Call::Play };
            if let Some(usual) = read_usual_reply(&text, call, 1) {
                proptest::prop_assert_eq!(Ok(usual), read_any_reply(&text, call, 1), "{}", text);
            }
        }
    }

    #[test]
    fn the_usual_reader_takes_the_built_ins_replies() {
        let play = r#"{"actions":[{"adventurerId":"a1","move":{"direction":"UP"}},{"adventurerId":"a2","use":{"itemId":"i3"}}],"seq":7}"#;
        let expected = ValidReply {
            entries: Entries::Play(vec![
                PlayEntry { adventurer: Ok(1), command: Ok(Command::Move(Dir::Up)) },
                PlayEntry { adventurer: Ok(2), command: Ok(Command::Use(Some(3))) },
            ]),
            state: StateChange::Keep,
            notes: Vec::new(),
        };
        assert_eq!(read_usual_reply(play, Call::Play, 7), Some(expected));
        let shop = r#"{"actions":[{"buy":{"adventurerId":"a4","equip":true,"itemType":"rusty_sword"}}],"seq":1}"#;
        let expected = ValidReply {
            entries: Entries::Shop(vec![Ok(ShopEntry::Buy {
                adventurer: Some(4),
                item_type: "rusty_sword".into(),
                equip: true,
            })]),
            state: StateChange::Keep,
            notes: Vec::new(),
        };
        assert_eq!(read_usual_reply(shop, Call::Shop, 1), Some(expected));
        assert!(read_usual_reply(r#"{"actions":[]}"#, Call::Play, 3).is_some(), "no seq");
        for other in [r#"{"actions":[],"seq":2}"#, r#"{"actions":[] }"#, r#"{"seq":1,"actions":[]}"#, "{}"] {
            assert_eq!(read_usual_reply(other, Call::Play, 1), None, "{other}");
        }
    }

    #[test]
    fn ids_match_only_their_exact_form() {
        assert_eq!(parse_id('a', "a12"), Some(12));
        assert_eq!(parse_id('a', "a012"), None);
        assert_eq!(parse_id('a', "i12"), None);
        assert_eq!(parse_id('i', "i"), None);
        assert_eq!(parse_id('i', "i+3"), None);
        assert_eq!(parse_id('a', "a0"), Some(0));
        assert_eq!(parse_id('a', "a00"), None);
        assert_eq!(parse_id('a', "a4294967295"), Some(u32::MAX));
        assert_eq!(parse_id('a', "a4294967296"), None);
        assert_eq!(parse_id('a', "a1 "), None);
    }

    #[test]
    fn wholly_invalid_replies() {
        for bad in ["", "nope", "[]", "42", r#"{"actions":{}}"#, r#"{"actions":"x"}"#, r#"{"seq":2}"#] {
            assert!(parse_reply(bad, Call::Play, 1).is_err(), "{bad}");
        }
        let reply = parse_reply(r#"{"seq":1,"actions":null}"#, Call::Play, 1).expect("valid");
        assert_eq!(reply.entries, Entries::Play(Vec::new()));
        assert_eq!(reply.state, StateChange::Keep);
        let reply = parse_reply(r#"{"state":null}"#, Call::Shop, 1).expect("valid");
        assert_eq!(reply.state, StateChange::Replace("null".into()));
    }

    #[test]
    fn logged_strings_are_cut() {
        let long = "x".repeat(500);
        assert_eq!(cut(&long).chars().count(), MAX_LOG_CHARS + 1);
        assert_eq!(cut("short"), "short");
    }
}
