//! A competition season through the whole farm: a `farm-coordinator serve` process, a
//! `farm-worker serve` process, RabbitMQ and the S3 server. A ladder of eight bots in
//! three tiers of strength (three gatherers, three random bots, two that crash at
//! start) and three leagues sorts them: the gatherers climb to Gold, the crashers stay
//! in Bronze, and a crashing new version of a Gold bot falls to Bronze. The freeze
//! refuses uploads and new bots; the finals of the top four play every pairing in both
//! seats, and their standings agree with the ladder's order within the intervals.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use farm_testkit::{Vhost, WorkerProcess, eventually, repo, unique};
use support::chromium::{Chromium, LAPTOP};
use support::{COORDINATOR, CoordinatorProcess, TOKEN, cli};

/// The three leagues: a bot moves after 5 games in its league.
const LEAGUES: &str = "[[leagues]]\nname = \"Bronze\"\npromote_at = 26\nmin_games = 5\n\
                       [[leagues]]\nname = \"Silver\"\nrelegate_below = 22\npromote_at = 29\nmin_games = 5\n\
                       [[leagues]]\nname = \"Gold\"\nrelegate_below = 26\nmin_games = 5\n";

/// Runs the CLI against `coordinator` as the operator: (success, stdout, stderr).
fn run(coordinator: &CoordinatorProcess, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(COORDINATOR)
        .args(args)
        .args(["--url", &coordinator.url(), "--token", TOKEN])
        .output()
        .expect("the CLI runs");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.success(), text(&output.stdout), text(&output.stderr))
}

/// The ladder bot `name`'s rating history.
fn history(coordinator: &CoordinatorProcess, ladder: &str, name: &str) -> serde_json::Value {
    coordinator.get_json(&format!("/api/tournaments/{ladder}/bots/{name}/history"))
}

/// The leagues (indices) of `name`'s history points that are its own.
fn leagues_of(history: &serde_json::Value, name: &str) -> Vec<u64> {
    let points = history["points"].as_array().expect("points");
    points.iter().filter(|point| point["bot"] == name).map(|point| point["league"].as_u64().expect("league")).collect()
}

/// The ladder's status line of bot `name`.
fn ladder_bot(coordinator: &CoordinatorProcess, ladder: &str, name: &str) -> serde_json::Value {
    let view = coordinator.get_json(&format!("/api/tournaments/{ladder}"));
    let bots = view["status"]["bots"].as_array().expect("a ladder's bots").clone();
    bots.into_iter().find(|bot| bot["bot"] == name).expect("listed")
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.to_str().expect("UTF-8").to_owned()
}

/// The ladder's pages in Chromium: g1-broken's rating history plots both versions
/// with the boundary between them, its falls through the leagues and g1's peak; the
/// ladder table shows the leagues. Fails listing every problem.
fn check_pages(coordinator: &CoordinatorProcess, ladder: &str) {
    let chromium = Chromium::launch();
    chromium.use_screen(LAPTOP);
    let url = coordinator.url();
    let mut problems = Vec::new();
    let mut check = |what: &str, result: Result<(), String>| {
        if let Err(problem) = result {
            problems.push(format!("{what}: {problem}"));
        }
    };
    check("the bot page", chromium.open(&format!("{url}/tournaments/{ladder}/bots/g1-broken")));
    let marks = "[...document.querySelectorAll('[data-testid=\"version-boundary\"]')].map(m => m.dataset.bot).join(',') + '|' +                  [...document.querySelectorAll('[data-testid=\"league-change\"]')].map(m => m.dataset.league).join(',') + '|' +                  document.querySelectorAll('[data-testid=\"peak\"]').length";
    let plotted = chromium.poll("the history's marks", marks, |marks| {
        marks
            .as_str()
            .is_some_and(|marks| marks.starts_with("g1-broken|") && marks.contains("Bronze") && marks.ends_with("|1"))
    });
    check("the history plots the version boundary, the league changes and the peak", plotted.map(drop));
    check(
        "its league by its name",
        chromium
            .evaluate("document.querySelector('#name [data-testid=\"league\"]').dataset.value")
            .and_then(|league| if league == "Bronze" { Ok(()) } else { Err(format!("{league}")) }),
    );
    check("the history fits the screen", chromium.fits_the_screen());
    check("the ladder's page", chromium.open(&format!("{url}/tournaments/{ladder}")));
    check(
        "the ladder table shows each bot's league",
        chromium
            .poll(
                "leagues",
                "[...document.querySelectorAll('[data-testid=\"ladder-row\"] [data-field=\"league\"]')].map(c => c.textContent).sort().join(',')",
                |leagues| leagues.as_str().is_some_and(|leagues| leagues.matches("Gold").count() >= 2 && leagues.contains("Bronze")),
            )
            .map(drop),
    );
    problems.extend(chromium.problems().into_iter().map(|problem| format!("console: {problem}")));
    assert!(problems.is_empty(), "{} problems in the ladder's pages:\n{}", problems.len(), problems.join("\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_season_sorts_its_leagues_freezes_and_plays_its_finals() {
    let vhost = Vhost::new("season");
    let dir = tempfile::tempdir().expect("temp dir");
    let env = [("FARM_BOT_LAUNCH", "local"), ("FARM_MAX_OUTSTANDING", "16"), ("FARM_PUBLISH_BATCH", "8")];
    let coordinator = CoordinatorProcess::start_with(&vhost, &dir.path().join("ledger.sqlite"), &env);
    let _worker = WorkerProcess::start_with(&vhost, &unique("season"), 2, 5, &[("FARM_SANDBOX", "local")]);
    let crash = format!("python3 {}", repo().join("bots/hostile/crash-start.py").display());
    let mut text = format!(
        "name = \"season\"\ngame = \"botwars\"\nformat = \"ladder\"\nqueue_depth = 8\nseed = 4\nprovisional_games = 8\n{LEAGUES}"
    );
    for (name, bot) in
        [("g1", "builtin = \"gatherer\""), ("g2", "builtin = \"gatherer\""), ("g3", "builtin = \"gatherer\"")]
            .into_iter()
            .chain([("r1", "builtin = \"random\""), ("r2", "builtin = \"random\""), ("r3", "builtin = \"random\"")])
    {
        text.push_str(&format!("[[bots]]\nname = \"{name}\"\n{bot}\n"));
    }
    for name in ["c1", "c2"] {
        text.push_str(&format!("[[bots]]\nname = \"{name}\"\ncommand = \"{crash}\"\n"));
    }
    let ladder_file = write(dir.path(), "ladder.toml", &text);
    let ladder = cli(&["submit", &ladder_file, "--url", &coordinator.url(), "--token", TOKEN]).trim().to_owned();

    // Within 200 matches every gatherer has climbed to Gold, within 40 of its own, and
    // stays there; the crashers never leave Bronze.
    eventually(Duration::from_secs(300), "200 ladder matches are played", || {
        coordinator.progress(&ladder)["done"].as_u64().unwrap_or(0) >= 200
    });
    for gatherer in ["g1", "g2", "g3"] {
        let leagues = leagues_of(&history(&coordinator, &ladder, gatherer), gatherer);
        let reached = leagues.iter().position(|&league| league == 2).map(|games| games + 1);
        assert!(
            reached.is_some_and(|games| games <= 40),
            "{gatherer} reached Gold after {reached:?} games: {leagues:?}"
        );
        assert_eq!(ladder_bot(&coordinator, &ladder, gatherer)["league"], "Gold", "{gatherer}");
    }
    for crasher in ["c1", "c2"] {
        let leagues = leagues_of(&history(&coordinator, &ladder, crasher), crasher);
        assert!(leagues.len() >= 10 && leagues.iter().all(|&league| league == 0), "{crasher}: {leagues:?}");
        let shown = ladder_bot(&coordinator, &ladder, crasher);
        assert_eq!((shown["league"].as_str(), shown["provisional"].as_bool()), (Some("Bronze"), Some(false)));
    }

    // g1's new version crashes: it starts in g1's league, Gold, and falls to Bronze
    // within 40 of its games (5 in Gold, 5 in Silver at the least; it starts from
    // g1's high rating, so it loses for a while before it falls under Gold's mark).
    let (ok, _, stderr) =
        run(&coordinator, &["bots", "add", &ladder, "--name", "g1-broken", "--command", &crash, "--replaces", "g1"]);
    assert!(ok, "{stderr}");
    assert_eq!(ladder_bot(&coordinator, &ladder, "g1-broken")["provisional"], true, "no games yet");
    eventually(Duration::from_secs(300), "g1-broken plays 40 matches", || {
        ladder_bot(&coordinator, &ladder, "g1-broken")["games"].as_u64().unwrap_or(0) >= 40
    });
    let shown = history(&coordinator, &ladder, "g1-broken");
    assert_eq!(shown["versions"], serde_json::json!(["g1", "g1-broken"]));
    let leagues = leagues_of(&shown, "g1-broken");
    assert_eq!(leagues.first(), Some(&2), "a new version starts in its predecessor's league: {leagues:?}");
    let bronze = leagues.iter().position(|&league| league == 0).map(|games| games + 1);
    assert!(bronze.is_some_and(|games| games <= 40), "relegated to Bronze after {bronze:?} games: {leagues:?}");
    assert!(leagues.windows(2).all(|pair| pair[1] <= pair[0]), "only down: {leagues:?}");
    assert_eq!(shown["peak"]["bot"], "g1", "the peak was the old version's");
    check_pages(&coordinator, &ladder);

    // The freeze: an upload for the ladder and a new bot are refused, naming the time.
    let (ok, out, stderr) = run(&coordinator, &["season", "freeze", &ladder]);
    assert!(ok && out.contains("frozen from"), "{out}{stderr}");
    let source = dir.path().join("late");
    std::fs::create_dir(&source).expect("dir");
    write(&source, "bot.py", "print('never built')\n");
    let late = ["bots", "submit", source.to_str().expect("UTF-8"), "--name", "late", "--game", "botwars"];
    let (ok, _, stderr) = run(&coordinator, &[&late[..], &["--ladder", &ladder]].concat());
    assert!(!ok && stderr.contains("is frozen since") && stderr.contains("409"), "{stderr}");
    let (ok, _, stderr) = run(&coordinator, &["bots", "add", &ladder, "--name", "r4", "--builtin", "random"]);
    assert!(!ok && stderr.contains("is frozen since"), "{stderr}");

    // The finals of the top 4, round robin, 2 games a pairing, once the ladder has
    // stopped: a frozen ladder plays on, and its order would change meanwhile.
    assert!(cli(&["stop", &ladder, "--url", &coordinator.url(), "--token", TOKEN]).contains("stopped"));
    eventually(Duration::from_secs(60), "the ladder's matches in flight are answered", || {
        coordinator.get_json(&format!("/api/tournaments/{ladder}"))["finished"] == true
    });
    let order: Vec<String> = coordinator.get_json(&format!("/api/tournaments/{ladder}"))["status"]["bots"]
        .as_array()
        .expect("bots")
        .iter()
        .filter(|bot| bot["active"] == true)
        .map(|bot| bot["bot"].as_str().expect("name").to_owned())
        .collect();
    let (ok, finals, stderr) =
        run(&coordinator, &["season", "finals", &ladder, "--top", "4", "--format", "round-robin", "--games", "2"]);
    assert!(ok, "{stderr}");
    let finals = finals.trim().to_owned();
    assert_eq!(coordinator.get_json(&format!("/api/tournaments/{ladder}"))["season"]["finals"], finals.as_str());
    let (ok, _, stderr) = run(&coordinator, &["season", "finals", &ladder, "--top", "4"]);
    assert!(!ok && stderr.contains("has its finals already"), "{stderr}");
    eventually(Duration::from_secs(300), "the finals finish", || {
        coordinator.get_json(&format!("/api/tournaments/{finals}"))["finished"] == true
    });
    let view = coordinator.get_json(&format!("/api/tournaments/{finals}"));
    assert_eq!(view["bots"], serde_json::json!(order[..4]), "the top 4, seeded in the ladder's order");
    let page = coordinator.get_json(&format!("/api/tournaments/{finals}/matches?limit=100"));
    let mut pairings = std::collections::BTreeMap::new();
    for row in page["matches"].as_array().expect("matches") {
        assert_eq!(row["state"], "done", "{row}");
        *pairings.entry(row["bots"].to_string()).or_insert(0) += 1;
    }
    assert_eq!(pairings.len(), 12, "every ordered pair of 4: {pairings:?}");
    assert!(pairings.values().all(|&games| games == 2), "2 games in each seat order: {pairings:?}");
    let standings = coordinator.get_json(&format!("/api/tournaments/{finals}/standings"));
    let rating = |name: &str| {
        let rows = standings["rows"].as_array().expect("rows");
        let row = rows.iter().find(|row| row["bot"] == name).expect("standing");
        (row["rating"]["low"].as_f64().expect("low"), row["rating"]["high"].as_f64().expect("high"))
    };
    for (i, better) in order[..4].iter().enumerate() {
        for worse in &order[i + 1..4] {
            let ((_, better_high), (worse_low, _)) = (rating(better), rating(worse));
            assert!(better_high >= worse_low, "{better} above {worse} in the ladder, clearly below in the finals");
        }
    }
    check_export(&coordinator, &ladder, dir.path());
}

/// The ladder's export, with its replays, through the API: every match a line, in
/// schedule order, with ratings before and after; every replay there and matching its
/// checksum; a changed byte is caught by the re-import check.
fn check_export(coordinator: &CoordinatorProcess, ladder: &str, dir: &Path) {
    let out = dir.join("export");
    let out_text = out.to_str().expect("UTF-8");
    let (ok, stdout, stderr) = run(coordinator, &["export", ladder, "--out", out_text, "--replays"]);
    assert!(ok && stdout.contains("every checksum matches"), "{stdout}{stderr}");
    let progress = coordinator.progress(ladder);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).expect("manifest")).expect("JSON");
    assert_eq!(manifest["completed"], progress["done"], "{manifest}");
    assert_eq!(manifest["replays"], progress["done"]);
    let lines: Vec<serde_json::Value> = manifest["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .flat_map(|part| {
            let text = std::fs::read_to_string(out.join(part["path"].as_str().expect("path"))).expect("part");
            text.lines().map(|line| serde_json::from_str(line).expect("a JSON line")).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(lines.len() as u64, manifest["matches"].as_u64().expect("matches"));
    assert!(lines.windows(2).all(|pair| pair[0]["position"].as_u64() < pair[1]["position"].as_u64()), "in order");
    let done = lines.iter().find(|line| line["state"] == "done").expect("a completed match");
    for seat in done["seats"].as_array().expect("seats") {
        assert!(seat["rating_before"][0].is_f64() && seat["rating_after"][1].is_f64(), "{seat}");
        assert!(seat["score"].is_i64() && seat["status"].is_string(), "{seat}");
    }
    assert!(out.join(done["replay"].as_str().expect("its replay")).is_file());
    let checked = farm_coordinator::export::check(&out).expect("the re-import check");
    assert_eq!(checked.matches, lines.len() as u64);
    // One byte changed in a replay: the check names it.
    let replay = out.join(done["replay"].as_str().expect("replay"));
    let mut bytes = std::fs::read(&replay).expect("replay");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&replay, bytes).expect("write");
    let error = farm_coordinator::export::check(&out).expect_err("a changed replay").to_string();
    assert!(error.contains(done["replay"].as_str().expect("replay")), "{error}");
}
