//! The bot I/O and the replay documents: a reply read into an action, and the
//! original JSON state document, sent to bots and kept in replays.
//!
//! The document is written by hand, straight into the caller's buffer, because a frame
//! of every step holds one: the numbers and the board need no escaping (the tiles are
//! drawn from `  ## [] $- $1..$4 @1..@4`), the names and the game id are written by
//! serde_json once, when the match starts. A test checks the result against serde's
//! rendering of the same documents.

use super::Vindinium;
use super::map::{Board, Dir};
use super::state::{Hero, VindiniumAction};
use crate::writer::{write_int, write_json_str};
use crate::{BotReply, PlayerStatus, Pos, java_trim};

/// Parses a move: `north|south|east|west` in any case, bare or as a JSON string,
/// trimmed as the original's Java `String.trim` does (control characters and spaces,
/// not Unicode spaces: `south\u{a0}` stays). Anything else is `Stay`, as in the original.
pub fn parse_dir(reply: &str) -> Dir {
    // The usual reply is a bare name, which reads the same without the general
    // reading's trimming and lower-casing (an allocation on every step).
    match Dir::MOVES.into_iter().find(|dir| dir.name().eq_ignore_ascii_case(reply)) {
        Some(dir) => dir,
        None => parse_dir_in_full(reply),
    }
}

/// [`parse_dir`] for any reply.
fn parse_dir_in_full(reply: &str) -> Dir {
    let word = java_trim(reply);
    parse_form_dir(word.strip_prefix('"').and_then(|w| w.strip_suffix('"')).unwrap_or(word))
}

/// Parses the `dir` field of a move posted to the original server's `playUrl`, as
/// that server read it: trimmed as Java's `String.trim` does, any case, and anything
/// but `north|south|east|west` is `Stay` (a JSON string is not unquoted there).
pub fn parse_form_dir(value: &str) -> Dir {
    let word = java_trim(value);
    Dir::MOVES.into_iter().find(|dir| dir.name().eq_ignore_ascii_case(word)).unwrap_or(Dir::Stay)
}

/// Reads a hero's reply: a move, or for no reply in time a crash.
pub(super) fn read_reply(reply: &BotReply) -> VindiniumAction {
    match reply {
        BotReply::Line(text) => VindiniumAction::Move(parse_dir(text)),
        BotReply::Unreadable => VindiniumAction::Move(Dir::Stay),
        BotReply::Timeout => VindiniumAction::Crash(PlayerStatus::TimedOut),
        BotReply::Crashed => VindiniumAction::Crash(PlayerStatus::Crashed),
        BotReply::OutputLimit => VindiniumAction::Crash(PlayerStatus::OutputLimit),
    }
}

/// Appends `"name":value` for an integer.
fn number(out: &mut Vec<u8>, name: &str, value: impl itoa::Integer) {
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    write_int(out, value);
}

/// Appends a position as the original writes it, `{"x":row,"y":column}`: its `x` is
/// the row.
fn position(out: &mut Vec<u8>, pos: Pos) {
    out.push(b'{');
    number(out, "x", pos.y);
    out.push(b',');
    number(out, "y", pos.x);
    out.push(b'}');
}

/// Each hero's part of the documents, kept from step to step: a step changes one hero
/// or a few, and every document holds all four.
#[derive(Debug, Clone, Default)]
pub(super) struct HeroParts {
    parts: Vec<HeroPart>,
}

/// One hero's part of the documents and what it was written from.
#[derive(Debug, Clone)]
struct HeroPart {
    from: Written,
    /// What comes before the position, `{"id":..,"name":..,"pos":`, which never changes.
    head: Vec<u8>,
    /// What comes between the mine count and `crashed`'s value, the spawn cell's part,
    /// which never changes either.
    tail: Vec<u8>,
    /// The whole part.
    text: Vec<u8>,
}

/// What of a hero's part of the documents can change during a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Written {
    pos: Pos,
    last_dir: Option<Dir>,
    life: i32,
    gold: i64,
    mines: usize,
    crashed: bool,
}

impl Written {
    fn of(hero: &Hero, board: &Board) -> Self {
        Written {
            pos: hero.pos,
            last_dir: hero.last_dir,
            life: hero.life,
            gold: hero.gold,
            mines: board.mines_of(hero.id),
            crashed: hero.crashed,
        }
    }
}

impl HeroParts {
    /// Rewrites the part of every hero that changed since the last call (all of them
    /// on the first).
    pub(super) fn refresh(&mut self, heroes: &[Hero], board: &Board) {
        self.parts.truncate(heroes.len());
        for (index, hero) in heroes.iter().enumerate() {
            let from = Written::of(hero, board);
            match self.parts.get_mut(index) {
                Some(part) if part.from == from => {}
                Some(part) => {
                    part.from = from;
                    part.write();
                }
                None => self.parts.push(HeroPart::new(hero, from)),
            }
        }
    }

    /// The part of the hero at `index`, as of the last [`HeroParts::refresh`].
    fn get(&self, index: usize) -> &[u8] {
        self.parts.get(index).map_or(&[], |part| &part.text)
    }
}

impl HeroPart {
    /// `hero`'s part, as `from` has it.
    fn new(hero: &Hero, from: Written) -> Self {
        let mut head = b"{".to_vec();
        number(&mut head, "id", hero.id);
        head.extend_from_slice(b",\"name\":");
        head.extend_from_slice(hero.name_json.as_bytes());
        head.extend_from_slice(b",\"pos\":");
        let mut tail = b",\"spawnPos\":".to_vec();
        position(&mut tail, hero.spawn);
        tail.extend_from_slice(b",\"crashed\":");
        let mut part = HeroPart { from, head, tail, text: Vec::new() };
        part.write();
        part
    }

    /// Rewrites the part from `self.from`.
    fn write(&mut self) {
        let (from, out) = (self.from, &mut self.text);
        out.clear();
        out.extend_from_slice(&self.head);
        position(out, from.pos);
        if let Some(dir) = from.last_dir.map(Dir::name) {
            out.extend_from_slice(b",\"lastDir\":\"");
            out.extend_from_slice(dir.as_bytes());
            out.push(b'"');
        }
        out.push(b',');
        number(out, "life", from.life);
        out.push(b',');
        number(out, "gold", from.gold);
        out.push(b',');
        number(out, "mineCount", from.mines);
        out.extend_from_slice(&self.tail);
        out.extend_from_slice(if from.crashed { b"true}" } else { b"false}" });
    }
}

/// Appends the `game` object: what a replay frame records.
fn write_game(out: &mut Vec<u8>, game: &Vindinium) {
    out.extend_from_slice(b"{\"id\":");
    out.extend_from_slice(game.game_id_json.as_bytes());
    out.push(b',');
    number(out, "turn", game.turn);
    out.push(b',');
    number(out, "maxTurns", game.rules.max_turns);
    out.extend_from_slice(b",\"heroes\":[");
    for index in 0..game.heroes.len() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(game.hero_parts.get(index));
    }
    out.extend_from_slice(b"],\"board\":{");
    number(out, "size", game.board.size());
    out.extend_from_slice(b",\"tiles\":\"");
    let positions = game.heroes.iter().map(|hero| (hero.id, hero.pos));
    game.board.render_into(positions, out);
    out.extend_from_slice(if game.finished { b"\"},\"finished\":true}" } else { b"\"},\"finished\":false}" });
}

/// Appends the state document for the hero in `seat` to `out`: one line of JSON.
pub(super) fn write_document(game: &Vindinium, seat: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"game\":");
    write_game(out, game);
    out.extend_from_slice(b",\"hero\":");
    out.extend_from_slice(game.hero_parts.get(seat.min(game.heroes.len() - 1)));
    out.extend_from_slice(b",\"token\":\"seat");
    write_int(out, seat);
    out.extend_from_slice(b"\",\"viewUrl\":\"\",\"playUrl\":\"\"}");
}

/// How [`write_document`] ends a document: the seat's token and no URLs, which an
/// original server's client is given instead ([`server_document`]).
const STDIO_TAIL: &str = "\",\"viewUrl\":\"\",\"playUrl\":\"\"}";
/// How every document begins, up to the game id.
const GAME_ID_HEAD: &str = "{\"game\":{\"id\":\"";

/// How many characters the original server's game ids have (of `[0-9a-z]`).
const SERVER_GAME_ID_LEN: usize = 8;

/// The game id an original server's client is given for a state document
/// ([`crate::Match::observation`] of a Vindinium match, whose id is the match's seed
/// in 16 hex digits, as its replay has it): the last 8 of those digits, 8 characters
/// of `[0-9a-z]` as the original's ids are, and still the match's, so that a client's
/// log names its match. `None` if `document` is not a state document.
pub fn server_game_id(document: &str) -> Option<&str> {
    let (id, _) = document.strip_prefix(GAME_ID_HEAD)?.split_once('"')?;
    id.get(id.len().checked_sub(SERVER_GAME_ID_LEN)?..)
}

/// A state document as the original server sends it to one HTTP client: `document`
/// (a Vindinium match's observation, which the stdio transport sends as it is) with
/// the game's id as the original's are ([`server_game_id`]), the client's `token` in
/// place of the seat's, and the `viewUrl` and `playUrl` the original made of the
/// `Host` its client asked for, `http://HOST/GAME` and `http://HOST/api/GAME/TOKEN/play`.
/// Everything between the id and the token is left byte for byte as it is. `None` if
/// `document` is not such an observation.
pub fn server_document(document: &str, token: &str, host: &str) -> Option<String> {
    let game = server_game_id(document)?;
    let (_, after_id) = document.strip_prefix(GAME_ID_HEAD)?.split_once('"')?;
    let (between, _seat_token) = after_id.strip_suffix(STDIO_TAIL)?.rsplit_once(",\"token\":\"")?;
    let mut out = Vec::with_capacity(document.len() + 2 * host.len() + 64);
    out.extend_from_slice(GAME_ID_HEAD.as_bytes());
    out.extend_from_slice(game.as_bytes());
    out.push(b'"');
    out.extend_from_slice(between.as_bytes());
    out.extend_from_slice(b",\"token\":");
    write_json_str(&mut out, token);
    out.extend_from_slice(b",\"viewUrl\":");
    write_json_str(&mut out, &format!("http://{host}/{game}"));
    out.extend_from_slice(b",\"playUrl\":");
    write_json_str(&mut out, &format!("http://{host}/api/{game}/{token}/play"));
    out.push(b'}');
    String::from_utf8(out).ok()
}

/// Appends the `game` object alone to `out`: what a replay frame records.
pub(super) fn write_snapshot(game: &Vindinium, out: &mut Vec<u8>) {
    write_game(out, game);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde::Serialize;

    use super::super::map::HeroId;
    use super::super::{Vindinium, VindiniumRules};
    use super::*;
    use crate::{Game, GameRng};

    /// A position as the original's JSON has it: `x` the row, `y` the column.
    #[derive(Serialize, Clone)]
    struct PosDoc {
        x: i32,
        y: i32,
    }

    impl From<Pos> for PosDoc {
        fn from(pos: Pos) -> Self {
            PosDoc { x: pos.y, y: pos.x }
        }
    }

    #[derive(Serialize, Clone)]
    #[serde(rename_all = "camelCase")]
    struct HeroDoc<'a> {
        id: HeroId,
        name: &'a str,
        pos: PosDoc,
        #[serde(skip_serializing_if = "Option::is_none")]
        last_dir: Option<&'static str>,
        life: i32,
        gold: i64,
        mine_count: usize,
        spawn_pos: PosDoc,
        crashed: bool,
    }

    #[derive(Serialize, Clone)]
    struct BoardDoc {
        size: usize,
        tiles: String,
    }

    #[derive(Serialize, Clone)]
    #[serde(rename_all = "camelCase")]
    struct GameDoc<'a> {
        id: &'a str,
        turn: u64,
        max_turns: u64,
        heroes: Vec<HeroDoc<'a>>,
        board: BoardDoc,
        finished: bool,
    }

    #[derive(Serialize, Clone)]
    #[serde(rename_all = "camelCase")]
    struct StateDoc<'a> {
        game: GameDoc<'a>,
        hero: HeroDoc<'a>,
        token: String,
        view_url: &'a str,
        play_url: &'a str,
    }

    /// What the documents are written from besides the match: the names given to it.
    struct Names<'a> {
        players: &'a [String],
        game_id: &'a str,
    }

    fn hero_doc<'a>(game: &Vindinium, hero: &Hero, names: &Names<'a>) -> HeroDoc<'a> {
        HeroDoc {
            id: hero.id,
            name: &names.players[usize::from(hero.id) - 1],
            pos: hero.pos.into(),
            last_dir: hero.last_dir.map(Dir::name),
            life: hero.life,
            gold: hero.gold,
            mine_count: game.board.mines_of(hero.id),
            spawn_pos: hero.spawn.into(),
            crashed: hero.crashed,
        }
    }

    fn game_doc<'a>(game: &Vindinium, names: &Names<'a>) -> GameDoc<'a> {
        let positions: Vec<(HeroId, Pos)> = game.heroes.iter().map(|hero| (hero.id, hero.pos)).collect();
        GameDoc {
            id: names.game_id,
            turn: game.turn,
            max_turns: game.rules.max_turns,
            heroes: game.heroes.iter().map(|hero| hero_doc(game, hero, names)).collect(),
            board: BoardDoc { size: game.board.size(), tiles: game.board.render(&positions) },
            finished: game.finished,
        }
    }

    #[test]
    fn the_hand_written_documents_are_serdes() {
        let players: Vec<String> = ["a \"quoted\" name", "tab\there", "é", "\u{1}"].map(String::from).to_vec();
        let rules = VindiniumRules::default();
        let map = Vindinium::default_map(&rules, &mut GameRng::new(5, GameRng::MAP)).expect("a generated map");
        let mut game = Vindinium::new(rules, map.as_deref(), &players, 5).expect("a valid map");
        let names = Names { players: &players, game_id: "0000000000000005" };
        let mut rng = GameRng::new(5, GameRng::RULES);
        let mut moves = GameRng::new(5, GameRng::BOTS);
        let (mut owned_mines, mut deaths) = (0, 0);
        // A whole match, checked after every step: the heroes' parts of the documents
        // are kept from step to step and must never be stale.
        for step in 0.. {
            for seat in 0..4 {
                let hero = &game.heroes[seat];
                let expected = StateDoc {
                    game: game_doc(&game, &names),
                    hero: hero_doc(&game, hero, &names),
                    token: format!("seat{seat}"),
                    view_url: "",
                    play_url: "",
                };
                let observation = game.observation(seat);
                assert_eq!(observation, serde_json::to_string(&expected).expect("serializes"));
                // The original server's document: the same, but for the game id, 8
                // characters as the original's, the client's token and the URLs it
                // makes of the client's Host, escaped however odd.
                for host in ["127.0.0.1:9000", "odd\"host\\"] {
                    let server = StateDoc {
                        game: GameDoc { id: "00000005", ..expected.game.clone() },
                        token: "t0k3".to_owned(),
                        view_url: &format!("http://{host}/00000005"),
                        play_url: &format!("http://{host}/api/00000005/t0k3/play"),
                        ..expected.clone()
                    };
                    assert_eq!(
                        server_document(&observation, "t0k3", host),
                        Some(serde_json::to_string(&server).expect("serializes"))
                    );
                }
            }
            assert_eq!(game.snapshot().get(), serde_json::to_string(&game_doc(&game, &names)).expect("serializes"));
            if game.is_over() {
                break;
            }
            let seat = game.to_act().first().copied().unwrap_or(0);
            let dir = Dir::MOVES[moves.below(4)];
            // One hero crashes early on: `crashed` is true from then on.
            let reply = if step == 9 { crate::BotReply::Timeout } else { crate::BotReply::Line(dir.name().into()) };
            let action = game.parse_reply(seat, &reply);
            game.apply(vec![(seat, action)], &mut rng);
            owned_mines = owned_mines.max((1..=4).map(|id| game.board.mines_of(id)).sum());
            deaths += game.heroes.iter().filter(|hero| hero.last_respawn == Some(game.turn - 1)).count();
        }
        assert!(owned_mines > 0 && deaths > 0, "the match takes mines and kills: {owned_mines} mines, {deaths} deaths");
    }

    #[test]
    fn a_posted_dir_reads_as_the_original_server_read_it() {
        for (value, dir) in [
            ("north", Dir::North),
            (" SOUTH\t\r\n", Dir::South),
            ("East", Dir::East),
            ("\u{1}west\u{1f}", Dir::West),
            ("stay", Dir::Stay),
            // Unquoted nowhere, and Unicode spaces are not trimmed.
            ("\"north\"", Dir::Stay),
            ("south\u{a0}", Dir::Stay),
            ("up", Dir::Stay),
            ("", Dir::Stay),
        ] {
            assert_eq!(parse_form_dir(value), dir, "{value:?}");
        }
    }

    #[test]
    fn only_a_state_document_gets_a_server_document() {
        assert_eq!(server_game_id("{\"game\":{\"id\":\"0123456789abcdef\",\"turn\":0"), Some("89abcdef"));
        assert_eq!(server_game_id("{\"game\":{\"id\":\"00ab\",\"turn\":0"), None);
        for not_one in ["", "{}", "{\"game\":{\"id\":\"x\"}}", "{\"game\":{\"id\":\"0123456789abcdef\"}}", "North"] {
            assert_eq!(server_document(not_one, "t0k3", "h"), None, "{not_one:?}");
        }
    }

    proptest! {
        #[test]
        fn a_bare_name_reads_as_the_general_reading_reads_it(
            reply in "[ \"\t\u{a0}\u{212a}]{0,2}(?i:north|south|east|west|stay|nort|southk)?[ \"\t\u{a0}\u{212a}]{0,2}",
            any_reply in any::<String>(),
        ) {
            prop_assert_eq!(parse_dir(&reply), parse_dir_in_full(&reply), "{:?}", reply);
            prop_assert_eq!(parse_dir(&any_reply), parse_dir_in_full(&any_reply), "{:?}", any_reply);
        }
    }
}
