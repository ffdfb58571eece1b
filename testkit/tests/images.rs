//! `deploy/images.txt` against the repository and `deploy/build-images.sh`: every line's
//! Dockerfile is FROM the base the line names and its context is there, the script
//! builds exactly the table's images, and every game has an example bot image.

use std::process::Command;

use farm_proto::{GameKind, Transport};
use farm_testkit::images::{self, Context, Image};
use farm_testkit::repo;

const SCRIPT: &str = "deploy/build-images.sh";

/// Whether `name` matches `pattern`, in which `*` stands for any run of characters.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => name.strip_prefix(head).is_some_and(|rest| {
            (0..=rest.len()).filter(|&at| rest.is_char_boundary(at)).any(|at| matches(tail, &rest[at..]))
        }),
    }
}

/// The first word after the first `FROM` of a Dockerfile.
fn from_of(dockerfile: &str) -> Option<&str> {
    dockerfile.lines().map(str::split_whitespace).find_map(|mut words| {
        words.next().is_some_and(|word| word.eq_ignore_ascii_case("FROM")).then(|| words.next()).flatten()
    })
}

/// The `name` of a Cargo.toml's `[package]`.
fn package_name(manifest: &str) -> Option<&str> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package && line.split('=').next().is_some_and(|key| key.trim() == "name") {
            return line.split('"').nth(1);
        }
    }
    None
}

/// What is wrong with `image`'s Dockerfile and context in the repository, if anything.
fn problems(image: &Image, script: &str, workspace: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut dockerfile_text = String::new();
    if let Some(dockerfile) = &image.dockerfile {
        match std::fs::read_to_string(repo().join(dockerfile)) {
            Ok(text) => dockerfile_text = text,
            Err(error) => problems.push(format!("{}: {error}", dockerfile.display())),
        }
        let want = image.base.as_ref().map_or_else(|| "scratch".to_owned(), |base| format!("matchfarm/{base}:latest"));
        if !dockerfile_text.is_empty() && from_of(&dockerfile_text) != Some(want.as_str()) {
            problems.push(format!("{} is FROM {:?}, not {want}", dockerfile.display(), from_of(&dockerfile_text)));
        }
    }
    let dir = image.dockerfile_dir().map(|dir| repo().join(dir));
    match (&image.context, &dir) {
        (Context::Recipe, _) => {
            let recipe = format!("recipe_{}() {{", image.name.replace('-', "_"));
            if !script.contains(&recipe) {
                problems.push(format!("{SCRIPT} has no recipe for it ({recipe})"));
            }
        }
        (Context::Files(names), Some(dir)) => {
            let files: Vec<String> = std::fs::read_dir(dir)
                .map(|entries| {
                    entries.flatten().map(|entry| entry.file_name().to_string_lossy().into_owned()).collect()
                })
                .unwrap_or_default();
            // A host program (program:NAME) is the script's to find, when it builds.
            for name in names.iter().filter(|name| !name.starts_with("program:")) {
                let found: Vec<&String> = files.iter().filter(|file| matches(name, file)).collect();
                if found.is_empty() || found.iter().any(|file| !dir.join(file).is_file()) {
                    problems.push(format!("no file {name} beside its Dockerfile"));
                }
            }
        }
        (Context::Crate(crate_dir), Some(dir)) => {
            let member = image.dockerfile_dir().map(|parent| parent.join(crate_dir)).unwrap_or_default();
            match std::fs::read_to_string(dir.join(crate_dir).join("Cargo.toml")) {
                Err(error) => problems.push(format!("{}/Cargo.toml: {error}", member.display())),
                Ok(manifest) => match package_name(&manifest) {
                    // The script puts the package's binary in the context, under its name.
                    Some(binary) if dockerfile_text.split_whitespace().any(|word| word == binary) => {}
                    binary => {
                        problems.push(format!("its Dockerfile copies no binary {binary:?} (the crate's package)"))
                    }
                },
            }
            if !workspace.contains(&format!("\"{}\"", member.display())) {
                problems.push(format!("{} is not a member of the workspace", member.display()));
            }
        }
        (_, None) => problems.push("a context besides a Dockerfile, but no Dockerfile".to_owned()),
    }
    problems.into_iter().map(|problem| format!("{}: {problem}", image.name)).collect()
}

#[test]
fn every_image_is_from_the_base_its_line_names_and_has_its_context() {
    let script = std::fs::read_to_string(repo().join(SCRIPT)).expect("the build script");
    let workspace = std::fs::read_to_string(repo().join("Cargo.toml")).expect("the workspace manifest");
    let problems: Vec<String> = images::all().iter().flat_map(|image| problems(image, &script, &workspace)).collect();
    assert!(problems.is_empty(), "{}:\n{}", images::TABLE, problems.join("\n"));
    assert!(images::all().len() > 2, "more than the bases");
}

fn script(arg: &str) -> String {
    let output = Command::new(repo().join(SCRIPT)).arg(arg).output().expect("the build script runs");
    assert!(output.status.success(), "{SCRIPT} {arg}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("utf-8")
}

#[test]
fn the_build_script_builds_and_lists_exactly_the_tables_images() {
    let names: Vec<&str> = images::all().iter().map(|image| image.name.as_str()).collect();
    assert_eq!(script("--list").lines().collect::<Vec<_>>(), names, "{SCRIPT} --list");

    let help = script("--help");
    for image in images::all() {
        let listed = help.lines().any(|line| {
            line.split_whitespace().next() == Some(image.name.as_str()) && line.ends_with(&image.description)
        });
        assert!(listed, "{SCRIPT} --help has no line for {} ({}):\n{help}", image.name, image.description);
    }
}

#[test]
fn every_game_has_an_example_bot_image_found_by_its_language_and_transport() {
    for game in GameKind::ALL {
        assert!(images::examples(game).next().is_some(), "{} lists no example bot of {game}", images::TABLE);
        for image in images::examples(game) {
            let (language, transport) = (image.language.as_deref(), image.transport);
            let found = images::example_bot(game, language.expect("a language"), transport.expect("a transport"));
            assert_eq!((found.game, found.language.as_deref(), found.transport), (Some(game), language, transport));
        }
    }
    let http = images::example_bot(GameKind::Botwars, "py", Transport::Http);
    assert_eq!(http.spec(), "image+http:matchfarm/bot-botwars-random-http-py");
    assert_eq!(images::get("hostile").reference(), "matchfarm/hostile");
}

#[test]
fn patterns_match_as_the_shell_globs_of_the_table_do() {
    assert!(matches("*.py", "stdio_bot.py") && matches("a.py", "a.py") && matches("*", "x"));
    assert!(matches("bot-*-rs", "bot-a-b-rs") && matches("*.*", "a.b"));
    assert!(!matches("*.py", "a.pyc") && !matches("a.py", "b.py") && !matches("*.py", "py"));
}
