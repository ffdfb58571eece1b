//! The farm's Docker images as `deploy/images.txt` lists them, one line each: the table
//! `deploy/build-images.sh` builds from, read here so that the tests name their images
//! from it too (a new example bot image is played by the tests from its line alone).
//!
//! The rules are the script's: nine columns separated by spaces or tabs, the last (the
//! description) taking the rest of the line, `-` for none, `#` lines and blank lines
//! ignored; see the table's header for what each column means.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use farm_proto::{GameKind, Transport};

/// Where the table is, from the repository's root.
pub const TABLE: &str = "deploy/images.txt";

/// What an image is for: the table's `role` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A base the other images are built on (`base-static`, `base-debian`).
    Base,
    /// An example bot of its game.
    Example,
    /// farm-bench's echo bot.
    Bench,
    /// The sandbox tests' misbehaving bots (`matchfarm/hostile MODE`).
    Hostile,
    /// A part of compose's farm that is not the farm's own (the broker, S3, Prometheus).
    Service,
}

/// What an image's build context holds besides its Dockerfile: the `context` column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Context {
    /// Whatever the script's own recipe for the image makes (the bases).
    Recipe,
    /// Files beside the Dockerfile, by name; a name may hold `*` (`*.py`: every such file)
    /// or be `program:NAME`, the host's program NAME. Empty for the table's `-`.
    Files(Vec<String>),
    /// The Rust crate in this directory (relative to the Dockerfile's), built static: its
    /// binary, named after its package.
    Crate(PathBuf),
}

/// One image: one line of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The image is `matchfarm/NAME:latest`.
    pub name: String,
    /// What it is for.
    pub role: Role,
    /// The base it is built on (a [`Role::Base`] image listed above it); none for a base.
    pub base: Option<String>,
    /// The game it plays; none for a base.
    pub game: Option<GameKind>,
    /// The language it is written in (`py`, `rs`, `js`, ...); none for a base.
    pub language: Option<String>,
    /// How the farm talks to it; none for a base or a service.
    pub transport: Option<Transport>,
    /// Its Dockerfile, from the repository's root; none when a recipe makes the image.
    pub dockerfile: Option<PathBuf>,
    /// Its build context besides the Dockerfile.
    pub context: Context,
    /// One line about it (what `build-images.sh --help` says).
    pub description: String,
}

impl Image {
    /// How tournaments and bot specs name it: `matchfarm/NAME`.
    pub fn reference(&self) -> String {
        format!("matchfarm/{}", self.name)
    }

    /// The bot spec that plays it over its transport: `image:matchfarm/NAME`, or
    /// `image+TRANSPORT:matchfarm/NAME` (`image+http:`, `image+vindinium-server:`).
    pub fn spec(&self) -> String {
        match self.transport.unwrap_or_default().scheme_suffix() {
            "" => format!("image:{}", self.reference()),
            suffix => format!("image+{suffix}:{}", self.reference()),
        }
    }

    /// The directory of its Dockerfile, from the repository's root (the directory its
    /// context's names are relative to).
    pub fn dockerfile_dir(&self) -> Option<&Path> {
        self.dockerfile.as_deref().and_then(Path::parent)
    }
}

/// A line of the table that does not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableError {
    /// Its line number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{TABLE}:{}: {}", self.line, self.message)
    }
}

impl std::error::Error for TableError {}

/// Reads a table, with the checks `build-images.sh` makes of it (nine columns, a known
/// role, a root base listed above (a base may itself be a toolchain on one), a game, a language and a transport for every bot image,
/// a Dockerfile unless a base's recipe makes it, no image twice). Whether its files
/// exist is not checked here.
pub fn parse(text: &str) -> Result<Vec<Image>, TableError> {
    let mut images: Vec<Image> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let error = |message: String| TableError { line: index + 1, message };
        let Some((columns, description)) = split_columns(line) else {
            continue;
        };
        let [name, role, base, game, language, transport, dockerfile, context] = columns;
        let none = |column: &str| (column != "-").then(|| column.to_owned());
        if description.is_empty() {
            return Err(error(format!(
                "{name}: 9 columns expected (image role base game lang transport dockerfile context description)"
            )));
        }
        let valid_name =
            |(at, c): (usize, char)| c.is_ascii_lowercase() || c.is_ascii_digit() || (at > 0 && ".-".contains(c));
        if !name.char_indices().all(valid_name) {
            return Err(error(format!("{name}: not an image name")));
        }
        if images.iter().any(|image| image.name == name) {
            return Err(error(format!("a second line for {name}")));
        }
        let role = match role {
            "base" => Role::Base,
            "example" => Role::Example,
            "bench" => Role::Bench,
            "hostile" => Role::Hostile,
            "service" => Role::Service,
            other => {
                return Err(error(format!(
                    "{name}: role {other:?} is not one of base, example, bench, hostile, service"
                )));
            }
        };
        // Images are FROM a root base (a recipe, or FROM scratch); a base may be a
        // toolchain on one.
        let is_base = |image: &Image| image.name == base && image.role == Role::Base && image.base.is_none();
        if role != Role::Base && !images.iter().any(is_base) {
            return Err(error(format!("{name}: its base {base:?} is not a base listed above it")));
        }
        let (game, transport) = if role == Role::Base {
            if base != "-" && !images.iter().any(is_base) {
                return Err(error(format!("{name}: a base's base {base:?} is not a root base listed above it")));
            }
            (none(game).map(|game| game.parse::<GameKind>()).transpose(), None)
        } else if role == Role::Service {
            if [game, language, transport] != ["-"; 3] {
                return Err(error(format!("{name}: a service image has no game, language or transport ('-')")));
            }
            (Ok(None), None)
        } else {
            if game == "-" || language == "-" {
                return Err(error(format!("{name}: a bot image needs a game and a language")));
            }
            let transport = match transport {
                "stdio" => Transport::Stdio,
                other => match Transport::ALL.into_iter().find(|known| known.scheme_suffix() == other) {
                    Some(known) => known,
                    None => {
                        return Err(error(format!(
                            "{name}: transport {other:?} is not stdio, http, http-form or vindinium-server"
                        )));
                    }
                },
            };
            (game.parse::<GameKind>().map(Some), Some(transport))
        };
        let game = game.map_err(|unknown| error(format!("{name}: {unknown}")))?;
        let context = match context {
            "recipe" if role == Role::Base => Context::Recipe,
            "recipe" => return Err(error(format!("{name}: only a base has a recipe"))),
            _ if dockerfile == "-" => {
                return Err(error(format!("{name}: a Dockerfile is needed unless the context is 'recipe'")));
            }
            "-" => Context::Files(Vec::new()),
            other => match other.strip_prefix("crate:") {
                Some(dir) => Context::Crate(PathBuf::from(dir)),
                None => Context::Files(other.split(',').map(str::to_owned).collect()),
            },
        };
        images.push(Image {
            name: name.to_owned(),
            role,
            base: none(base),
            game,
            language: none(language),
            transport,
            dockerfile: none(dockerfile).map(PathBuf::from),
            context,
            description: description.to_owned(),
        });
    }
    Ok(images)
}

/// A line's eight first columns and the rest (the description, possibly empty), as
/// bash's `read` splits it; `None` for a blank or comment line. Missing columns are
/// empty, which the caller takes for a short line.
fn split_columns(line: &str) -> Option<([&str; 8], &str)> {
    let mut columns = [""; 8];
    let mut rest = line.trim_start();
    if rest.is_empty() || rest.starts_with('#') {
        return None;
    }
    for column in &mut columns {
        let end = rest.find([' ', '\t']).unwrap_or(rest.len());
        *column = &rest[..end];
        rest = rest[end..].trim_start_matches([' ', '\t']);
    }
    Some((columns, rest.trim_end_matches([' ', '\t'])))
}

/// Every image of the repository's table, in its order (a base before the images on
/// it). Panics, naming the line, when the table does not read.
pub fn all() -> &'static [Image] {
    static IMAGES: OnceLock<Vec<Image>> = OnceLock::new();
    IMAGES.get_or_init(|| {
        let path = crate::repo().join(TABLE);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        parse(&text).unwrap_or_else(|error| panic!("{error}"))
    })
}

/// The image called `name` (without `matchfarm/`). Panics when the table has none.
pub fn get(name: &str) -> &'static Image {
    all().iter().find(|image| image.name == name).unwrap_or_else(|| panic!("{TABLE} lists no image {name}"))
}

/// The example bot images of `game`, in the table's order.
pub fn examples(game: GameKind) -> impl Iterator<Item = &'static Image> {
    all().iter().filter(move |image| image.role == Role::Example && image.game == Some(game))
}

/// The first example bot image (in the table's order) of `game` written in `language`
/// that speaks `transport`. Panics when the table has none.
pub fn example_bot(game: GameKind, language: &str, transport: Transport) -> &'static Image {
    examples(game)
        .find(|image| image.language.as_deref() == Some(language) && image.transport == Some(transport))
        .unwrap_or_else(|| panic!("{TABLE} lists no {game} example bot in {language} over {transport:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "# image role base game lang transport dockerfile context description\n\
        base-static base - - - - deploy/images/base-static/Dockerfile recipe FROM scratch\n\
        \n   # an indented comment\n\
        base-debian\tbase\t-\t-\t-\t-\t-\trecipe\tDebian, needs root\n";

    fn parse_with(lines: &str) -> Result<Vec<Image>, TableError> {
        parse(&format!("{HEADER}{lines}"))
    }

    fn error_of(lines: &str) -> String {
        parse_with(lines).map(|images| format!("read: {images:?}")).unwrap_or_else(|error| error.to_string())
    }

    #[test]
    fn lines_read_into_images_comments_and_blank_lines_skipped() {
        let images = parse_with(
            "bot-a-py   example base-debian botwars py http  bots/a/Dockerfile.py a.py,b.py  the A bot,  over http \n\
             bot-a-rs   example base-static maze    rs stdio bots/a/Dockerfile.rs crate:a-rs the A bot in Rust\n\
             hostile    hostile base-debian vindinium py stdio bots/h/Dockerfile *.py every mode\n\
             broker     service base-debian - - - deploy/images/b/Dockerfile program:b,run.sh the broker\n\
             monitor    service base-debian - - - deploy/images/m/Dockerfile - Prometheus\n",
        )
        .expect("the table reads");
        let names: Vec<&str> = images.iter().map(|image| image.name.as_str()).collect();
        assert_eq!(names, ["base-static", "base-debian", "bot-a-py", "bot-a-rs", "hostile", "broker", "monitor"]);

        let base = &images[1];
        assert_eq!((base.role, base.base.as_deref(), base.game, base.transport), (Role::Base, None, None, None));
        assert_eq!((&base.dockerfile, &base.context), (&None, &Context::Recipe));
        assert_eq!(base.description, "Debian, needs root");

        let http = &images[2];
        assert_eq!(http.role, Role::Example);
        assert_eq!(http.base.as_deref(), Some("base-debian"));
        assert_eq!((http.game, http.language.as_deref()), (Some(GameKind::Botwars), Some("py")));
        assert_eq!(http.transport, Some(Transport::Http));
        assert_eq!(http.dockerfile_dir(), Some(Path::new("bots/a")));
        assert_eq!(http.context, Context::Files(vec!["a.py".to_owned(), "b.py".to_owned()]));
        assert_eq!(http.description, "the A bot,  over http", "the rest of the line, trimmed");
        assert_eq!(http.spec(), "image+http:matchfarm/bot-a-py");

        assert_eq!(images[3].context, Context::Crate(PathBuf::from("a-rs")));
        assert_eq!(images[3].spec(), "image:matchfarm/bot-a-rs");
        assert_eq!(images[4].context, Context::Files(vec!["*.py".to_owned()]));

        let broker = &images[5];
        assert_eq!((broker.role, broker.base.as_deref()), (Role::Service, Some("base-debian")));
        assert_eq!((broker.game, &broker.language, broker.transport), (None, &None, None));
        assert_eq!(broker.context, Context::Files(vec!["program:b".to_owned(), "run.sh".to_owned()]));
        assert_eq!(images[6].context, Context::Files(Vec::new()), "'-': the Dockerfile alone");
    }

    #[test]
    fn a_line_that_does_not_read_is_an_error_naming_it() {
        let line = |n: usize| format!("{TABLE}:{n}: ");
        let short = error_of("bot-a-py example base-debian botwars py stdio bots/a/Dockerfile a.py\n");
        assert_eq!(
            short,
            format!(
                "{}bot-a-py: 9 columns expected (image role base game lang transport dockerfile context description)",
                line(6)
            )
        );
        let cases = [
            (
                "x example base-debian botwars py stdio d/Dockerfile a.py x\nx example base-debian botwars py stdio d/Dockerfile a.py x",
                "a second line for x",
            ),
            ("-x example base-debian botwars py stdio d/Dockerfile a.py x", "-x: not an image name"),
            ("X example base-debian botwars py stdio d/Dockerfile a.py x", "X: not an image name"),
            ("x villain base-debian botwars py stdio d/Dockerfile a.py x", "role \"villain\" is not one of"),
            (
                "x example base-other botwars py stdio d/Dockerfile a.py x",
                "its base \"base-other\" is not a base listed above it",
            ),
            (
                "y example base-debian botwars py stdio d/Dockerfile a.py y\nx example y botwars py stdio d/Dockerfile a.py x",
                "its base \"y\" is not a base",
            ),
            (
                "x base base-other - - - d/Dockerfile a.py x",
                "a base's base \"base-other\" is not a root base listed above it",
            ),
            (
                "y base base-debian - - - d/Dockerfile - y\nx example y botwars py stdio d/Dockerfile a.py x",
                "its base \"y\" is not a base",
            ),
            ("x example base-debian - py stdio d/Dockerfile a.py x", "needs a game and a language"),
            ("x example base-debian botwars - stdio d/Dockerfile a.py x", "needs a game and a language"),
            ("x example base-debian chess py stdio d/Dockerfile a.py x", "unknown game \"chess\""),
            ("x example base-debian botwars py udp d/Dockerfile a.py x", "transport \"udp\" is not stdio"),
            ("x example base-debian botwars py stdio d/Dockerfile recipe x", "only a base has a recipe"),
            ("x example base-debian botwars py stdio - a.py x", "a Dockerfile is needed"),
            ("x service base-debian maze - - d/Dockerfile - x", "a service image has no game, language or transport"),
            ("x service base-debian - - stdio d/Dockerfile - x", "a service image has no game, language or transport"),
            ("x service base-other - - - d/Dockerfile - x", "its base \"base-other\" is not a base"),
        ];
        for (lines, expected) in cases {
            let error = error_of(lines);
            assert!(error.starts_with(TABLE) && error.contains(expected), "{lines:?}: {error}");
        }
    }
}
