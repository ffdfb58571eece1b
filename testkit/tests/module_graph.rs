//! The top-level modules of each crate import one way: no module reaches itself through
//! `crate::` paths. A circle makes two rooms one in all but name (neither can be read,
//! tested or moved without the other), so this test keeps the layering that issue 39
//! set up. Needs no service: it reads the sources as text.
//!
//! A module `a` depends on `b` when a file of `a` (outside its `#[cfg(test)] mod tests`
//! and its `tests.rs`) names `crate::b`, in code, a `use` or a doc link alike.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `src/` folders of the workspace's crates (and farm-s3's, a workspace of its own).
fn crate_sources() -> Vec<PathBuf> {
    let mut sources = Vec::new();
    let mut pending = vec![repo()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        if dir.join("Cargo.toml").is_file() && dir.join("src").is_dir() {
            sources.push(dir.join("src"));
        }
        for entry in entries.flatten() {
            let name = entry.file_name();
            let skip = matches!(name.to_str(), Some("target" | ".git" | "node_modules" | "src" | "web"));
            if entry.path().is_dir() && !skip {
                pending.push(entry.path());
            }
        }
    }
    sources.sort();
    sources
}

/// The crate-level modules `text` names (`crate::x`, and `crate::{x, y::z}`).
fn named_modules(text: &str) -> BTreeSet<String> {
    let ident = |rest: &str| -> String { rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let mut named = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            named.extend(group.split(',').map(|item| ident(item.trim())).filter(|name| !name.is_empty()));
        } else {
            named.insert(ident(rest));
        }
    }
    named
}

/// Each top-level module of the crate at `src` and the modules it names.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut pending = vec![src.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            // A module's `tests.rs` is its `#[cfg(test)] mod tests`, kept apart.
            if path.extension().is_none_or(|extension| extension != "rs") || path.ends_with("tests.rs") {
                continue;
            }
            let relative = path.strip_prefix(src).expect("under src");
            let first = relative.components().next().expect("a path").as_os_str().to_string_lossy();
            let module = first.trim_end_matches(".rs").to_owned();
            if matches!(module.as_str(), "lib" | "main" | "bin") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a source file");
            let code = match text.find("#[cfg(test)]\nmod tests {") {
                Some(tests) => &text[..tests],
                None => &text,
            };
            let named: BTreeSet<String> = named_modules(code).into_iter().filter(|name| *name != module).collect();
            graph.entry(module).or_default().extend(named);
        }
    }
    graph
}

/// A circle through `start`, if there is one: the modules in order.
fn circle_through(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut path = vec![start.to_owned()];
    let mut seen = BTreeSet::new();
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        let here = path.last().expect("a module").clone();
        for next in graph.get(&here).into_iter().flatten().filter(|next| graph.contains_key(*next)) {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    walk(graph, start, &mut path, &mut seen).then_some(path)
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut circles = Vec::new();
    let sources = crate_sources();
    assert!(sources.len() >= 8, "the workspace's crates: {sources:?}");
    for src in sources {
        let graph = module_graph(&src);
        if let Some(circle) = graph.keys().find_map(|module| circle_through(&graph, module)) {
            circles.push(format!("{}: {} -> {}", src.display(), circle.join(" -> "), circle[0]));
        }
    }
    assert!(circles.is_empty(), "modules that import each other:\n{}", circles.join("\n"));
}

#[test]
fn a_circle_is_found_and_named() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("ledger", named_modules("use crate::{tournament::Tournament, accounts};")),
        ("tournament", named_modules("/// see [`crate::director`]")),
        ("director", named_modules("crate::ledger::Ledger")),
        ("accounts", BTreeSet::new()),
    ]
    .into_iter()
    .map(|(module, named)| (module.to_owned(), named))
    .collect();
    assert_eq!(graph["ledger"], BTreeSet::from(["accounts".to_owned(), "tournament".to_owned()]));
    assert_eq!(circle_through(&graph, "ledger"), Some(vec!["ledger".into(), "tournament".into(), "director".into()]));
    assert_eq!(circle_through(&graph, "accounts"), None);
}
