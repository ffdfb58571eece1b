//! Embeds the web pages: writes `$OUT_DIR/web_assets.rs`, the list of every file under
//! `web/` (its README and hidden files aside) with its bytes, which `src/web.rs`
//! includes. A file added there is served without touching the code, and Cargo
//! builds again whenever anything under `web/` changes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.join("web");
    println!("cargo::rerun-if-changed=web");
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut list = String::from("&[\n");
    for name in &files {
        // Relative to the manifest at compile time, not this run's absolute path: a
        // target directory shared by two checkouts then never embeds the other's files.
        let _ = writeln!(
            list,
            "    ({name:?}, include_bytes!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/web/\", {name:?}))),"
        );
    }
    list.push(']');
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("web_assets.rs"), list).expect("write web_assets.rs");
}

/// Adds every servable file under `directory` by its path from `root`, with `/` separators.
fn collect(root: &Path, directory: &Path, files: &mut Vec<String>) {
    let entries = std::fs::read_dir(directory).unwrap_or_else(|error| panic!("{}: {error}", directory.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|error| panic!("{}: {error}", directory.display())).path();
        let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('.') || name == "README.md" {
            continue;
        }
        if path.is_dir() {
            collect(root, &path, files);
            continue;
        }
        let relative = path.strip_prefix(root).expect("under the root");
        let served = relative.components().map(|part| part.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
        files.push(served);
    }
}
