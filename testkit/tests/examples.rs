//! The commands of the book's examples page (`docs/src/reference/examples.md`) run as a
//! reader runs them, from the repository's root, and print what the page says (trycmd
//! runs its `console` blocks: `$ command`, then the output expected).
//!
//! They run the workspace's binaries from `target/<profile>/`: build them first
//! (`cargo build --workspace --bins`; `scripts/test` does). When an output changes on
//! purpose, `TRYCMD=overwrite cargo test -p farm-testkit --test examples` writes the new
//! one into the page (check what it wrote: it keeps the `[..]` it can).

use std::path::Path;

/// The page, relative to the repository.
const EXAMPLES: &str = "docs/src/reference/examples.md";

/// What the examples read from the repository's root.
const READ_FROM_THE_ROOT: [&str; 2] = ["maps", "tournaments"];

#[test]
fn the_books_examples_print_what_the_page_says() {
    let repo = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).canonicalize().expect("the repository");
    // The examples write what they play where they run (farm-data/, farm-out/): here a
    // directory of the test's own, where the repository's files they read are linked,
    // so that every run starts afresh and the checkout is left as it was. This test is
    // alone in its binary: nothing else minds the working directory changing.
    let root = tempfile::tempdir().expect("a temporary directory");
    for name in READ_FROM_THE_ROOT {
        std::os::unix::fs::symlink(repo.join(name), root.path().join(name)).expect("a link to the repository");
    }
    std::env::set_current_dir(root.path()).expect("the temporary directory");

    let cases = trycmd::TestCases::new();
    for binary in ["farm-coordinator", "farm-worker"] {
        cases.register_bin(binary, farm_testkit::workspace_binary(binary));
    }
    cases.case(repo.join(EXAMPLES));
    cases.run();
}
