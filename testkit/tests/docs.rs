//! The book (`docs/src`) and the README, checked without building them or any service:
//! every relative link names a file that exists and, with an `#anchor`, a heading of
//! that page as mdBook makes their ids; every page of the book is in `SUMMARY.md`; and
//! `docs/src/reference/cli.md` is what the binaries' `--help` prints now.
//!
//! The CLI reference runs the workspace's binaries from `target/<profile>/`: build them
//! first (`cargo build --workspace --bins`; `scripts/test` does).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use pulldown_cmark::{BrokenLink, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// The repository's root, where `README.md` and `docs/` are.
fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The book's pages, relative to the repository.
const BOOK_SOURCE: &str = "docs/src";

/// The generated command-line reference, relative to the repository.
const CLI_REFERENCE: &str = "docs/src/reference/cli.md";

/// Set to 1, the CLI reference test writes the page instead of comparing it.
const BLESS_VARIABLE: &str = "FARM_BLESS_DOCS";

/// The binaries whose commands the CLI reference documents, in its order.
const DOCUMENTED_BINARIES: [&str; 3] = ["farm-coordinator", "farm-worker", "farm-bench"];

/// The Markdown files checked, relative to the repository: the README and every page
/// of the book, in a stable order.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("README.md")];
    files.extend(book_pages());
    files
}

/// Every `.md` file under `docs/src`, relative to the repository, sorted.
fn book_pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, pages: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(repo().join(dir)).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
        for entry in entries {
            let entry = entry.expect("a directory entry");
            let path = dir.join(entry.file_name());
            if entry.file_type().expect("its type").is_dir() {
                walk(&path, pages);
            } else if path.extension().is_some_and(|extension| extension == "md") {
                pages.push(path);
            }
        }
    }
    let mut pages = Vec::new();
    walk(Path::new(BOOK_SOURCE), &mut pages);
    pages.sort();
    pages
}

/// What the check needs of one Markdown file.
#[derive(Default)]
struct Page {
    /// Its links' destinations as written, with their lines (1-based); inline,
    /// reference-style and images alike, code blocks and code spans excluded.
    links: Vec<(usize, String)>,
    /// Reference-style links whose label has no definition (`[text][label]`), which
    /// render as plain text, with their lines.
    undefined_references: Vec<(usize, String)>,
    /// Its headings' ids, as mdBook gives them.
    heading_ids: Vec<String>,
}

/// The parser's options as mdBook sets them (`mdbook::utils::new_cmark_parser`), so that
/// what is a link or a heading here is one there.
fn mdbook_options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// Reads one Markdown file's links and headings.
fn parse_page(text: &str) -> Page {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut undefined_references = Vec::new();
    // Shortcut references (`[text]` alone) are ordinary bracketed text when undefined:
    // only the forms that can be nothing but a link are reported.
    let callback = |broken: BrokenLink<'_>| -> Option<(CowStr<'_>, CowStr<'_>)> {
        if matches!(broken.link_type, LinkType::Reference | LinkType::Collapsed) {
            undefined_references.push((line_of(broken.span.start), broken.reference.to_string()));
        }
        None
    };
    let mut page = Page::default();
    let mut id_counter = HashMap::new();
    // The events of the heading being read, rendered to HTML at its end as mdBook does
    // before it makes the id; with the id given in `{#...}`, if any.
    let mut heading: Option<(Option<String>, Vec<Event<'_>>)> = None;
    for (event, range) in
        Parser::new_with_broken_link_callback(text, mdbook_options(), Some(callback)).into_offset_iter()
    {
        match &event {
            Event::Start(Tag::Heading { id, .. }) => {
                heading = Some((id.as_ref().map(|id| id.to_string()), Vec::new()));
                continue;
            }
            Event::End(TagEnd::Heading(_)) => {
                let (given_id, events) = heading.take().expect("a heading's end follows its start");
                page.heading_ids.push(given_id.unwrap_or_else(|| {
                    let mut html = String::new();
                    pulldown_cmark::html::push_html(&mut html, events.into_iter());
                    unique_heading_id(&html, &mut id_counter)
                }));
                continue;
            }
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                page.links.push((line_of(range.start), dest_url.to_string()));
            }
            _ => {}
        }
        if let Some((_, events)) = &mut heading {
            events.push(event);
        }
    }
    page.undefined_references = undefined_references;
    page
}

/// A heading's id from its HTML, as mdBook 0.4 makes it (`unique_id_from_content`): tags
/// and the escaped `<>&'"` dropped, then [`normalize_id`]; a repeated id gets `-1`,
/// `-2`, ... in the order of the page.
fn unique_heading_id(html: &str, id_counter: &mut HashMap<String, usize>) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for character in html.chars() {
        match character {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            character if !in_tag => text.push(character),
            _ => {}
        }
    }
    for entity in ["&lt;", "&gt;", "&amp;", "&#39;", "&quot;"] {
        text = text.replace(entity, "");
    }
    let id = normalize_id(text.trim().trim_start_matches('#').trim());
    let seen = id_counter.entry(id.clone()).or_insert(0);
    let unique = if *seen == 0 { id } else { format!("{id}-{seen}") };
    *seen += 1;
    unique
}

/// mdBook's `normalize_id`: alphanumerics (ASCII ones lower-cased), `-` and `_` kept,
/// white space made `-`, everything else dropped.
fn normalize_id(text: &str) -> String {
    text.chars()
        .filter_map(|character| {
            if character.is_alphanumeric() || character == '_' || character == '-' {
                Some(character.to_ascii_lowercase())
            } else if character.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// A link with a scheme (`https:`, `mailto:`, ...) leaves the repository: not checked.
fn has_scheme(destination: &str) -> bool {
    let Some((scheme, _)) = destination.split_once(':') else { return false };
    let mut characters = scheme.chars();
    characters.next().is_some_and(|first| first.is_ascii_alphabetic())
        && characters.all(|character| character.is_ascii_alphanumeric() || "+.-".contains(character))
}

/// `path` with `.` and `..` taken out, without touching the file system; `None` when it
/// climbs above its start.
fn normalized(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

/// The Markdown files read so far, by their path relative to the repository: the
/// checked ones, and those they link to (for their headings).
#[derive(Default)]
struct Pages(HashMap<PathBuf, Page>);

impl Pages {
    /// `file` read and parsed, once; `None` if it is no Markdown file.
    fn get(&mut self, file: &Path) -> Option<&Page> {
        if file.extension().is_none_or(|extension| extension != "md") {
            return None;
        }
        let page = self.0.entry(file.to_path_buf()).or_insert_with(|| {
            let text = std::fs::read_to_string(repo().join(file))
                .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
            parse_page(&text)
        });
        Some(page)
    }
}

/// What is wrong with one link of `file`, if anything.
fn check_link(file: &Path, destination: &str, pages: &mut Pages) -> Option<String> {
    if has_scheme(destination) {
        return None;
    }
    if destination.is_empty() {
        // In SUMMARY.md an empty link is a draft chapter; anywhere else, a mistake.
        return (*file != Path::new(BOOK_SOURCE).join("SUMMARY.md")).then(|| "an empty link".to_string());
    }
    let (path, anchor) = match destination.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (destination, None),
    };
    let target = if path.is_empty() {
        file.to_path_buf()
    } else {
        let Some(target) = normalized(&file.parent().expect("a file's directory").join(path)) else {
            return Some(format!("{path} climbs out of the repository"));
        };
        if !repo().join(&target).exists() {
            return Some(format!("{} does not exist", target.display()));
        }
        // mdBook publishes docs/src alone: a link of the book to any other file of the
        // repository works in the source and is broken in the built book. Such a file
        // is named as a path instead.
        if file.starts_with(BOOK_SOURCE) && !target.starts_with(BOOK_SOURCE) {
            return Some(format!("{} is outside the book: name it as a path, not a link", target.display()));
        }
        target
    };
    let anchor = anchor?;
    // Anchors are checked in Markdown pages only; another file's are its viewer's business.
    let page = pages.get(&target)?;
    if page.heading_ids.iter().any(|id| id == anchor) {
        return None;
    }
    Some(format!(
        "{} has no heading with the id {anchor:?}; its ids: {}",
        target.display(),
        page.heading_ids.join(", ")
    ))
}

/// Every relative link of the README and the book names a file that exists, and its
/// anchor a heading of the page it names; every reference-style link has its definition.
#[test]
fn links_name_existing_files_and_headings() {
    let mut pages = Pages::default();
    let mut problems = Vec::new();
    for file in markdown_files() {
        let page = pages.get(&file).expect("a Markdown file");
        let (links, undefined_references) = (page.links.clone(), page.undefined_references.clone());
        for (line, destination) in links {
            if let Some(problem) = check_link(&file, &destination, &mut pages) {
                problems.push(format!("{}:{line}: ({destination}): {problem}", file.display()));
            }
        }
        for (line, label) in undefined_references {
            problems.push(format!("{}:{line}: [{label}]: no definition of this reference", file.display()));
        }
    }
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

#[test]
fn broken_links_are_named() {
    let mut pages = Pages::default();
    let mut check = |destination| check_link(Path::new("README.md"), destination, &mut pages);
    assert_eq!(check("https://example.org/nowhere.md"), None);
    assert_eq!(check("docs/src/SUMMARY.md"), None);
    assert_eq!(check("./docs/../docs/src/"), None);
    assert_eq!(check("docs/nowhere.md").as_deref(), Some("docs/nowhere.md does not exist"));
    assert_eq!(check("../elsewhere.md").as_deref(), Some("../elsewhere.md climbs out of the repository"));
    for destination in ["#no-such-heading", "README.md#no-such-heading"] {
        let problem = check(destination).expect("a missing heading");
        assert!(problem.starts_with("README.md has no heading with the id \"no-such-heading\""), "{problem}");
    }
    let page = Path::new(BOOK_SOURCE).join("introduction.md");
    assert_eq!(
        check_link(&page, "../../deploy/README.md", &mut pages).as_deref(),
        Some("deploy/README.md is outside the book: name it as a path, not a link")
    );
}

/// Every page under docs/src is a chapter of SUMMARY.md, which mdBook builds from: a
/// page missing there is left out of the book. (That its entries exist is checked with
/// every other link.)
#[test]
fn every_page_of_the_book_is_in_the_summary() {
    let summary = Path::new(BOOK_SOURCE).join("SUMMARY.md");
    let text = std::fs::read_to_string(repo().join(&summary)).expect("docs/src/SUMMARY.md");
    let listed: HashSet<PathBuf> = parse_page(&text)
        .links
        .into_iter()
        .filter(|(_, destination)| !destination.is_empty() && !has_scheme(destination))
        .filter_map(|(_, destination)| normalized(&Path::new(BOOK_SOURCE).join(destination)))
        .collect();
    let missing: Vec<String> = book_pages()
        .into_iter()
        .filter(|page| *page != summary && !listed.contains(page))
        .map(|page| page.display().to_string())
        .collect();
    assert!(missing.is_empty(), "pages not in {}: {}", summary.display(), missing.join(", "));
}

#[test]
fn heading_ids_are_made_as_mdbook_makes_them() {
    let ids = |markdown: &str| parse_page(markdown).heading_ids;
    assert_eq!(ids("# Running a tournament"), ["running-a-tournament"]);
    // Punctuation dropped, `_` and `-` kept, code spans by their text.
    assert_eq!(
        ids("## `farm-coordinator run`: one machine, no broker"),
        ["farm-coordinator-run-one-machine-no-broker"]
    );
    assert_eq!(ids("## max_jobs & limits (v2)"), ["max_jobs--limits-v2"]);
    assert_eq!(ids("## Émile's [link](x.md) *here*"), ["Émiles-link-here"]);
    // Repeated headings numbered in the page's order, an id given in {#...} as it is.
    assert_eq!(
        ids("# Options\n## Options\n### Options {#custom}\n# Options"),
        ["options", "options-1", "custom", "options-2"]
    );
    // Inside code, `#` lines are no headings and links are no links.
    let page = parse_page("```sh\n# not a heading [x](nowhere.md)\n```\n`[y](nowhere.md)` and [z](somewhere.md)\n");
    assert!(page.heading_ids.is_empty());
    assert_eq!(page.links, [(4, "somewhere.md".to_string())]);
}

#[test]
fn reference_links_are_found_and_undefined_ones_reported() {
    let page = parse_page(
        "See [the guide][guide] and [that][].\nAlso [nothing][none], [plain text].\n\n[guide]: guide.md#start\n",
    );
    assert_eq!(page.links, [(1, "guide.md#start".to_string())]);
    assert_eq!(page.undefined_references, [(1, "that".to_string()), (2, "none".to_string())]);
}

/// The CLI reference page: each binary's `--help`, then each of its subcommands', as
/// the binaries print them now.
fn cli_reference() -> String {
    let mut contents = String::new();
    let mut sections = String::new();
    for binary in DOCUMENTED_BINARIES {
        let path = farm_testkit::workspace_binary(binary);
        document_command(&path, &[binary.to_string()], &mut contents, &mut sections);
    }
    let (last, others) = DOCUMENTED_BINARIES.split_last().expect("binaries to document");
    let names = format!("`{}` and `{last}`", others.join("`, `"));
    format!(
        "# Command-line reference\n\
         \n\
         <!-- Generated from the binaries' --help by testkit/tests/docs.rs: do not edit. After\n     \
         changing a command: cargo build --workspace --bins &&\n     \
         {BLESS_VARIABLE}=1 cargo test -p farm-testkit --test docs -->\n\
         \n\
         Every command and flag of {names}, as their\n\
         `--help` prints them (`-h` prints shorter ones).\n\
         \n\
         {contents}\n\
         {sections}"
    )
}

/// Appends `command`'s help (`command` is the binary's name then the subcommands' path)
/// as a section, and an entry of the contents, then those of its subcommands.
fn document_command(binary: &Path, command: &[String], contents: &mut String, sections: &mut String) {
    let output = Command::new(binary)
        .args(&command[1..])
        .arg("--help")
        // No FARM_* value shown beside its flag, no colours: the same page on every machine.
        .env_clear()
        .output()
        .unwrap_or_else(|error| panic!("{}: {error}", binary.display()));
    let name = command.join(" ");
    assert!(
        output.status.success(),
        "`{name} --help` failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    // Trailing blanks dropped (clap indents its empty lines): editors strip them.
    let help: Vec<&str> = std::str::from_utf8(&output.stdout).expect("UTF-8 help").lines().map(str::trim_end).collect();
    let help = help.join("\n");
    let depth = command.len() - 1;
    let heading_level = "#".repeat((2 + depth).min(6));
    // The heading is the name in a code span, whose id is the name's.
    let anchor = normalize_id(&name);
    writeln!(contents, "{}- [`{name}`](#{anchor})", "  ".repeat(depth)).expect("a String");
    write!(sections, "{heading_level} `{name}`\n\n```text\n{}\n```\n\n", help.trim_end()).expect("a String");
    for subcommand in subcommands(&help) {
        let mut path = command.to_vec();
        path.push(subcommand);
        document_command(binary, &path, contents, sections);
    }
}

/// The subcommands a help lists under `Commands:` (one a line, its name indented by two
/// spaces; deeper lines continue a description), but `help`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn subcommands_are_read_from_the_commands_section() {
    let help = "About.\n\nUsage: farm x <COMMAND>\n\nCommands:\n  run    Run a file\n         on and on\n  view   View\n  help   Print this message\n\nOptions:\n  -h, --help  Print help\n";
    assert_eq!(subcommands(help), ["run", "view"]);
}

/// docs/src/reference/cli.md is what the binaries' --help says now.
#[test]
fn the_cli_reference_is_the_binaries_help() {
    let generated = cli_reference();
    let path = repo().join(CLI_REFERENCE);
    if std::env::var(BLESS_VARIABLE).is_ok_and(|value| value == "1") {
        std::fs::write(&path, &generated).unwrap_or_else(|error| panic!("{CLI_REFERENCE}: {error}"));
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == generated {
        return;
    }
    let difference = committed
        .lines()
        .zip(generated.lines())
        .position(|(committed, generated)| committed != generated)
        .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
    panic!(
        "{CLI_REFERENCE} is not what the binaries' --help prints now (first difference at line {}:\n  \
         committed: {:?}\n  generated: {:?}).\n\
         Build the binaries and write the page again:\n  \
         cargo build --workspace --bins && {BLESS_VARIABLE}=1 cargo test -p farm-testkit --test docs",
        difference + 1,
        committed.lines().nth(difference).unwrap_or("(the end)"),
        generated.lines().nth(difference).unwrap_or("(the end)"),
    );
}
