//! The layouts a source can be built in: for each, the marker that selects it, the
//! farm's toolchain image that compiles it (in a sandbox, [`super::compile`]), the
//! command that does, and the farm's runtime image and command the artifact runs with
//! ([`super::assemble`]). Every string here is the farm's: an author's text only ever
//! reaches the toolchain container, as files.
//!
//! The compile command (`compile/LAYOUT.sh` beside this file) runs under `sh -e` in
//! `/scratch/src` (the source), may write only under `/scratch` (`HOME` and `TMPDIR`
//! are there), reaches no network, and leaves everything the bot needs at run time in
//! `/scratch/out`, which becomes `/bot` in the image. Its standard output and error are
//! the build log.

use super::source::Tree;

/// How a source is recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// Any of these files at the top of the source.
    File(&'static [&'static str]),
    /// A file ending in `suffix` anywhere under the directory `dir`.
    Under {
        /// The directory, at the top.
        dir: &'static str,
        /// How a file's name ends.
        suffix: &'static str,
    },
}

/// One way of building a source.
#[derive(Debug, PartialEq, Eq)]
pub struct Layout {
    /// Its name, as shown (`python layout`).
    pub name: &'static str,
    /// The languages it is for.
    pub languages: &'static str,
    /// What marks a source as this layout, in words.
    pub marker: &'static str,
    /// The same, as checked.
    pub detect: Marker,
    /// The image that compiles it: the farm's, built locally (deploy/images.txt).
    pub toolchain: &'static str,
    /// The compile command (see the module's documentation).
    pub compile: &'static str,
    /// The image the artifact runs on: the farm's.
    pub runtime: &'static str,
    /// The environment the bot runs with, besides the runtime image's.
    pub env: &'static [&'static str],
    /// The bot's command, run in `/bot` as user 10001.
    pub command: &'static [&'static str],
}

impl Layout {
    /// Whether `tree` has this layout's marker.
    pub fn matches(&self, tree: &Tree) -> bool {
        match self.detect {
            Marker::File(names) => names.iter().any(|name| tree.has_file(name)),
            Marker::Under { dir, suffix } => tree
                .files()
                .any(|path| path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/') && path.ends_with(suffix))),
        }
    }
}

/// Every layout, in the order a source is matched against them: the first whose marker
/// it has builds it.
pub static LAYOUTS: &[Layout] = &[
    Layout {
        name: "python",
        languages: "Python 3.11",
        marker: "bot.py; optional wheels/*.whl, installed offline",
        detect: Marker::File(&["bot.py"]),
        toolchain: "matchfarm/toolchain-python",
        compile: include_str!("compile/python.sh"),
        runtime: "matchfarm/base-debian",
        env: &["PYTHONPATH=/bot/site-packages", "PYTHONDONTWRITEBYTECODE=1", "PYTHONSAFEPATH=1"],
        command: &["python3", "/bot/bot.py"],
    },
    Layout {
        name: "javascript",
        languages: "JavaScript (Node.js 18)",
        marker: "bot.js; optional vendored node_modules/",
        detect: Marker::File(&["bot.js"]),
        toolchain: "matchfarm/base-debian",
        compile: include_str!("compile/javascript.sh"),
        runtime: "matchfarm/base-debian",
        env: &[],
        command: &["node", "/bot/bot.js"],
    },
    Layout {
        name: "rust",
        languages: "Rust (Debian's rustc 1.63)",
        marker: "Cargo.toml: one binary package, dependencies vendored (cargo vendor)",
        detect: Marker::File(&["Cargo.toml"]),
        toolchain: "matchfarm/toolchain-rust",
        compile: include_str!("compile/rust.sh"),
        runtime: "matchfarm/base-debian",
        env: &[],
        command: &["/bot/bot"],
    },
    Layout {
        name: "go",
        languages: "Go 1.19",
        marker: "go.mod; dependencies in vendor/",
        detect: Marker::File(&["go.mod"]),
        toolchain: "matchfarm/toolchain-go",
        compile: include_str!("compile/go.sh"),
        runtime: "matchfarm/base-debian",
        env: &[],
        command: &["/bot/bot"],
    },
    Layout {
        name: "c-cpp",
        languages: "C and C++ (GCC 12)",
        marker: "CMakeLists.txt (target bot) or Makefile (its default target makes ./bot)",
        detect: Marker::File(&["CMakeLists.txt", "Makefile"]),
        toolchain: "matchfarm/toolchain-c",
        compile: include_str!("compile/c-cpp.sh"),
        runtime: "matchfarm/base-debian",
        env: &[],
        command: &["/bot/bot"],
    },
    Layout {
        name: "java",
        languages: "Java 17",
        marker: "src/**/*.java; optional Main-Class file naming the main class (default Bot)",
        detect: Marker::Under { dir: "src", suffix: ".java" },
        toolchain: "matchfarm/toolchain-java",
        compile: include_str!("compile/java.sh"),
        runtime: "matchfarm/runtime-java",
        env: &[],
        // One GC thread and one compiler thread, no perf file (the root is read-only),
        // half the container's memory for the heap: 13 threads in all.
        command: &[
            "java",
            "-XX:+UseSerialGC",
            "-XX:-UsePerfData",
            "-XX:TieredStopAtLevel=1",
            "-XX:CICompilerCount=1",
            "-Xss512k",
            "-XX:MaxRAMPercentage=50",
            "-jar",
            "/bot/bot.jar",
        ],
    },
];
