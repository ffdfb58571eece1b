//! Bots submitted by their authors, end to end: a `farm-coordinator serve` process, a
//! `farm-worker serve` process with the Docker sandbox and the farm's registry,
//! RabbitMQ, the S3 server and the registry (`scripts/services/registry.sh`). A user
//! submits a Python bot from a directory: a worker compiles it in a sandbox, assembles
//! and pushes it, it passes validation, joins a ladder and plays. A second version that
//! crashes is rejected, naming the match whose log shows why; a source whose compile
//! fails is reported with its build log; another user cannot submit a version of it
//! (403). Another user's Go bot builds and validates too, and a challenge plays a short
//! series between the two users' validated versions, within its quota; his own
//! tournament may enter hers only once she makes her bot public. On a farm that runs
//! commands, a user's command bot is refused; the operator's is not.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use farm_testkit::{Vhost, WorkerProcess, eventually, http_get, registry};
use support::chromium::{Chromium, LAPTOP, js};
use support::{COORDINATOR, CoordinatorProcess, TOKEN};

/// Runs the CLI with `token` against `coordinator`; (success, stdout, stderr).
fn run_as(coordinator: &CoordinatorProcess, token: &str, args: &[&str]) -> (bool, String, String) {
    let url = coordinator.url();
    let output = Command::new(COORDINATOR)
        .args(args)
        .args(["--url", &url, "--token", token])
        .output()
        .expect("farm-coordinator runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A directory holding `files` (path, contents).
fn source(root: &Path, name: &str, files: &[(&str, &str)]) -> String {
    let dir = root.join(name);
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write a source file");
    }
    dir.to_str().expect("UTF-8").to_owned()
}

/// The positions of the matches bot `name` of tournament `id` has been scheduled in.
/// As a forger holding worker credentials of its own: waits for the validation of
/// ada-bot's `version`, then reports each of its matches won cleanly by every seat,
/// with a guessed token. Returns how many it sent.
fn forge_validation(vhost: &Vhost, coordinator: &CoordinatorProcess, version: u64) -> usize {
    use farm_proto::{PlayerOutcome, PlayerResult, PlayerStatus, ResultEnvelope};
    let mut validation = String::new();
    eventually(Duration::from_secs(300), "the version's validation exists", || {
        let bot = coordinator.get_json("/api/bots/ada-bot");
        let row = bot["versions"].as_array().into_iter().flatten().find(|row| row["version"] == version);
        validation = row.and_then(|row| row["validation"].as_str()).unwrap_or_default().to_owned();
        !validation.is_empty()
    });
    let forger = farm_testkit::unique("forger");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let connection =
            lapin::Connection::connect(&vhost.worker_url(&forger), Default::default()).await.expect("connect");
        let results = farm_runtime::queue::ConfirmedPublisher::open_as(&connection, &forger).await.expect("publisher");
        let matches = coordinator.get_json(&format!("/api/tournaments/{validation}/matches?limit=1000"));
        let rows = matches["matches"].as_array().expect("matches").clone();
        for row in &rows {
            let job_id = row["job_id"].as_str().expect("a job id");
            let players = (0..2)
                .map(|seat| PlayerResult {
                    seat,
                    name: format!("seat-{seat}"),
                    outcome: PlayerOutcome { score: 1, rank: 1, status: PlayerStatus::Ok },
                    timeouts: 0,
                    mean_reply_ms: 1.0,
                    max_reply_ms: 1.0,
                    p99_reply_ms: 1.0,
                    cpu: None,
                    exit_code: None,
                    oom_killed: false,
                    log_key: None,
                    crash: None,
                })
                .collect();
            let result = farm_proto::MatchResult::Completed {
                steps: 100,
                players,
                replay_key: farm_runtime::storage::AttemptKeys::new(&validation, job_id, 1).replay(),
                replay_sha256: "0".repeat(64),
                duration_ms: 10,
                reproduction: None,
            };
            let guessed = support::forged_delivery(&validation, job_id, &"ab".repeat(32));
            let body = serde_json::to_vec(&ResultEnvelope::new(&guessed, &forger, 1, result)).expect("JSON");
            results.publish(farm_proto::RESULTS_QUEUE, &body).await.expect("publish");
        }
        rows.len()
    })
}

fn matches_of(coordinator: &CoordinatorProcess, id: &str, name: &str) -> Vec<serde_json::Value> {
    let page = coordinator.get_json(&format!("/api/tournaments/{id}/matches?bot={name}&limit=1000"));
    page["matches"].as_array().expect("matches").clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_submitted_python_bot_builds_validates_joins_a_ladder_and_a_broken_version_is_rejected() {
    let vhost = Vhost::new("submissions");
    let dir = tempfile::tempdir().expect("temp dir");
    let coordinator = CoordinatorProcess::start_with(
        &vhost,
        &dir.path().join("ledger.sqlite"),
        &[("FARM_MAX_OUTSTANDING", "100"), ("FARM_PUBLISH_BATCH", "20"), ("FARM_QUOTAS__MAX_CHALLENGES_PER_DAY", "1")],
    );
    let registry = registry();
    let worker = WorkerProcess::start_with(
        &vhost,
        &farm_testkit::unique("builder"),
        2,
        5,
        &farm_testkit::registry_environment().each_ref().map(|(name, value)| (*name, value.as_str())),
    );
    let operator = |args: &[&str]| {
        let (ok, stdout, stderr) = run_as(&coordinator, TOKEN, args);
        assert!(ok, "{args:?}: {stderr}");
        stdout.trim().to_owned()
    };
    let ada = operator(&["users", "add", "ada"]);
    let bob = operator(&["users", "add", "bob"]);

    // The operator's ladder, which submitted bots enter once validated.
    let ladder_file = dir.path().join("ladder.toml");
    std::fs::write(
        &ladder_file,
        "name = \"class ladder\"\ngame = \"botwars\"\nformat = \"ladder\"\nqueue_depth = 4\nseed = 3\n\
         open_to_submissions = true\n\
         [[bots]]\nname = \"gatherer\"\nbuiltin = \"gatherer\"\n[[bots]]\nname = \"random\"\nbuiltin = \"random\"\n",
    )
    .expect("write the ladder");
    let ladder = operator(&["submit", ladder_file.to_str().expect("UTF-8")]);

    // Version 1: the example random bot, in the Python starter layout.
    let random_bot = std::fs::read_to_string(farm_testkit::repo().join("bots/botwars/random_bot.py")).expect("bot");
    let good = source(dir.path(), "good", &[("bot.py", &random_bot), ("README.md", "my first bot\n")]);
    let submit = ["bots", "submit", &good, "--name", "ada-bot", "--game", "botwars", "--ladder", &ladder, "--wait"];
    let (ok, stdout, stderr) = run_as(&coordinator, &ada, &submit);
    assert!(ok, "version 1 is validated: {stdout}{stderr}");
    assert!(stdout.contains("ada-bot v1 submitted (python layout)"), "{stdout}");
    let bot = coordinator.get_json("/api/bots/ada-bot");
    assert_eq!(bot["owner"], "ada");
    let v1 = &bot["versions"][0];
    assert_eq!(v1["state"], "validated", "{bot}");
    let image = v1["image"].as_str().expect("an image");
    assert!(image.starts_with(&format!("{registry}/matchfarm-bots/ada-bot@sha256:")), "pulled by digest: {image}");
    // Its validation played every seat against each built-in bot, and every match cleanly.
    let validation = v1["validation"].as_str().expect("a validation tournament");
    let played = matches_of(&coordinator, validation, "ada-bot.v1");
    assert!(played.len() >= 4, "{played:?}");
    for seat in 0..2 {
        assert!(played.iter().any(|row| row["bots"][seat] == "ada-bot.v1"), "never in seat {seat}: {played:?}");
    }
    // Its build log is kept: the sandboxed compile and the farm's assembly.
    let (ok, log, stderr) = run_as(&coordinator, &ada, &["bots", "log", "ada-bot", "1"]);
    assert!(ok && log.contains("compiling the python layout in matchfarm/toolchain-python"), "{log}{stderr}");
    assert!(log.contains("COPY bot/ /bot/") && log.contains("scratch space used"), "{log}");

    // It joined the ladder and plays there.
    eventually(Duration::from_secs(120), "ada-bot.v1 plays 3 ladder matches", || {
        matches_of(&coordinator, &ladder, "ada-bot.v1").iter().filter(|row| row["state"] == "done").count() >= 3
    });

    // Version 2 crashes as it starts: rejected, naming the match and where its log is.
    let broken = source(
        dir.path(),
        "broken",
        &[("bot.py", "import sys\nprint('broken on purpose', file=sys.stderr)\nsys.exit(3)\n")],
    );
    let submit = ["bots", "submit", &broken, "--name", "ada-bot", "--game", "botwars", "--ladder", &ladder, "--wait"];
    // Meanwhile a forger with worker credentials of its own reports every match of its
    // validation won cleanly, as soon as they exist: it holds none of them.
    let (ok, stdout, stderr) = std::thread::scope(|scope| {
        let forging = scope.spawn(|| forge_validation(&vhost, &coordinator, 2));
        let answer = run_as(&coordinator, &ada, &submit);
        let forged = forging.join().expect("the forger");
        assert!(forged > 0, "the forger found the validation's matches");
        let sample = "farm_coordinator_forged_answers_total{reason=\"not_held\"} ";
        eventually(Duration::from_secs(30), "the forged results are refused and counted", || {
            let metrics = http_get(coordinator.api, "/metrics").expect("metrics").1;
            metrics
                .lines()
                .find_map(|line| line.strip_prefix(sample))
                .is_some_and(|count| count.trim() == forged.to_string())
        });
        answer
    });
    assert!(!ok, "version 2 is not validated: {stdout}{stderr}");
    let bot = coordinator.get_json("/api/bots/ada-bot");
    let v2 = &bot["versions"][0];
    assert_eq!((v2["version"].as_u64(), v2["state"].as_str()), (Some(2), Some("rejected")), "{bot}");
    let reason = v2["reason"].as_str().expect("a reason");
    assert!(reason.starts_with("crashed in match"), "{reason}");
    // Why in one line, from its crash report, which also has its stderr's end and the
    // request it did not answer.
    assert!(reason.contains(": exited with code 3 before its first reply; its log: "), "{reason}");
    let log_path = &reason[reason.find("/api/matches/").expect("a log path")..];
    let (job, seat) = log_path["/api/matches/".len()..].split_once("/logs/").expect("a job and seat");
    let detail = coordinator.get_json(&format!("/api/matches/{job}"));
    let crash = &detail["result"]["players"][seat.parse::<usize>().expect("a seat")]["crash"];
    assert_eq!(crash["reason"], "exited with code 3 before its first reply", "{detail}");
    assert_eq!(crash["stderr_tail"], serde_json::json!(["broken on purpose"]), "{crash}");
    assert!(crash["unanswered"].as_str().is_some_and(|request| !request.is_empty()), "{crash}");
    let seats = detail["match"]["outcomes"].as_array().expect("outcomes");
    assert!(seats.iter().any(|seat| seat["crash"] == *crash), "the match's seats carry it: {detail}");
    let (status, log) = http_get(coordinator.api, log_path).expect("the log is served");
    assert_eq!(status, 200, "{log}");
    assert!(log.contains("broken on purpose"), "{log}");
    // The ladder keeps version 1, never playing version 2.
    let view = coordinator.get_json(&format!("/api/tournaments/{ladder}"));
    let names: Vec<&str> = view["bots"].as_array().expect("bots").iter().filter_map(|bot| bot.as_str()).collect();
    assert!(names.contains(&"ada-bot.v1") && !names.contains(&"ada-bot.v2"), "{view}");

    // A source whose compile fails: build_failed, with the compiler's output in its log.
    let failing =
        source(dir.path(), "failing", &[("Makefile", "bot:\n\t@echo the compile fails on purpose; exit 7\n")]);
    let (ok, _, _) =
        run_as(&coordinator, &ada, &["bots", "submit", &failing, "--name", "ada-bot", "--game", "botwars", "--wait"]);
    assert!(!ok);
    let bot = coordinator.get_json("/api/bots/ada-bot");
    assert_eq!(bot["versions"][0]["state"], "build_failed", "{bot}");
    let (_, log, _) = run_as(&coordinator, &ada, &["bots", "log", "ada-bot", "3"]);
    assert!(log.contains("the compile fails on purpose") && log.contains("Error 7"), "{log}");

    // Bob may not submit a version of ada's bot: 403, naming its owner.
    let (ok, _, stderr) =
        run_as(&coordinator, &bob, &["bots", "submit", &good, "--name", "ada-bot", "--game", "botwars"]);
    assert!(!ok && stderr.contains("it is ada's"), "{stderr}");
    assert_eq!(coordinator.get_json("/api/bots/ada-bot")["versions"].as_array().map(Vec::len), Some(3));

    // Bob's own bot, in Go (the layout's example), then Ada's challenge: her newest validated version (v1) against
    // his, in both seats; one a day is all her quota allows, and Bob cannot challenge
    // with Ada's bot.
    let go_example = farm_testkit::repo().join("bots/botwars/layouts/go").to_str().expect("UTF-8").to_owned();
    let (ok, stdout, stderr) = run_as(
        &coordinator,
        &bob,
        &["bots", "submit", &go_example, "--name", "bob-bot", "--game", "botwars", "--wait"],
    );
    assert!(ok && stdout.contains("bob-bot v1 submitted (go layout)"), "{stdout}{stderr}");
    let (ok, series, stderr) = run_as(&coordinator, &ada, &["bots", "challenge", "ada-bot", "bob-bot", "--games", "4"]);
    assert!(ok, "{stderr}");
    let series = series.trim().to_owned();
    assert!(stderr.contains("\"ada-bot.v1\" vs \"bob-bot.v1\": 4 matches"), "{stderr}");
    eventually(Duration::from_secs(120), "the challenge is played", || {
        coordinator.get_json(&format!("/api/tournaments/{series}"))["finished"] == true
    });
    let played = matches_of(&coordinator, &series, "ada-bot.v1");
    assert_eq!(played.iter().filter(|row| row["state"] == "done").count(), 4, "{played:?}");
    assert!(played.iter().any(|row| row["bots"][1] == "ada-bot.v1"), "both seats: {played:?}");
    assert_eq!(coordinator.get_json(&format!("/api/tournaments/{series}"))["owner"], "ada");
    // Head to head: the challenge's 4 matches, every one won, lost or drawn, each
    // naming the versions that played.
    let versus = coordinator.get_json("/api/bots/ada-bot/versus/bob-bot");
    let record = &versus["record"];
    assert_eq!(record["matches"], 4, "{versus}");
    let decided = ["a_wins", "b_wins", "draws"].iter().map(|key| record[key].as_u64().expect("count")).sum::<u64>();
    assert_eq!(decided, 4, "{versus}");
    let places = versus["tournaments"].as_array().expect("tournaments");
    assert!(
        places
            .iter()
            .any(|place| place["id"] == series.as_str() && place["matches"].as_array().map(Vec::len) == Some(4))
    );
    for meeting in places.iter().flat_map(|place| place["matches"].as_array().expect("matches")) {
        assert_eq!(
            (meeting["a"].as_str(), meeting["b"].as_str()),
            (Some("ada-bot.v1"), Some("bob-bot.v1")),
            "{meeting}"
        );
    }
    let reversed = coordinator.get_json("/api/bots/bob-bot/versus/ada-bot");
    assert_eq!(
        (reversed["record"]["a_wins"].clone(), reversed["record"]["b_wins"].clone()),
        (record["b_wins"].clone(), record["a_wins"].clone())
    );
    let (ok, _, stderr) = run_as(&coordinator, &ada, &["bots", "challenge", "ada-bot", "bob-bot"]);
    assert!(!ok && stderr.contains("ada has 1 of quotas.max_challenges_per_day = 1 already"), "{stderr}");
    let (ok, _, stderr) = run_as(&coordinator, &bob, &["bots", "challenge", "ada-bot", "bob-bot"]);
    assert!(!ok && stderr.contains("it is ada's"), "{stderr}");

    // Bob enters Ada's validated version in a tournament of his own, under a name of
    // his: refused, naming the bot but not whose, until Ada makes her bot public; then
    // it plays there.
    let borrowed = dir.path().join("borrowed.toml");
    std::fs::write(
        &borrowed,
        format!(
            "name = \"borrowed\"\ngame = \"botwars\"\nformat = \"round-robin\"\n\
             [[bots]]\nname = \"mine\"\nimage = \"{image}\"\n[[bots]]\nname = \"random\"\nbuiltin = \"random\"\n"
        ),
    )
    .expect("write the tournament");
    let borrowed = borrowed.to_str().expect("UTF-8");
    let (ok, _, stderr) = run_as(&coordinator, &bob, &["submit", borrowed]);
    assert!(!ok && stderr.contains("is a version of bot ada-bot, which is not public"), "{stderr}");
    assert!(!stderr.contains("ada's") && !stderr.contains(" ada "), "the owner is not named: {stderr}");
    let as_ada = farm_coordinator::client::Client::new(&coordinator.url(), Some(ada.clone())).expect("a client");
    let made_public: serde_json::Value = as_ada
        .send(hyper::Method::PATCH, "/api/bots/ada-bot", Some(&serde_json::json!({ "public": true })))
        .await
        .expect("ada makes her bot public");
    assert_eq!(made_public["public"], true, "{made_public}");
    let (ok, id, stderr) = run_as(&coordinator, &bob, &["submit", borrowed]);
    assert!(ok, "{stderr}");
    let id = id.trim().to_owned();
    eventually(Duration::from_secs(120), "Bob's tournament is played", || {
        coordinator.get_json(&format!("/api/tournaments/{id}"))["finished"] == true
    });
    let played = matches_of(&coordinator, &id, "mine");
    assert_eq!(played.iter().filter(|row| row["state"] == "done").count(), 2, "{played:?}");
    assert_eq!(coordinator.get_json(&format!("/api/tournaments/{id}"))["owner"], "bob");

    // The web pages, in Chromium: Ada signs in with her token, submits a version from
    // the form, and follows her bot's versions, builds and validations.
    check_pages(&coordinator, &ada, dir.path(), &good);

    operator(&["stop", &ladder]);
    assert!(worker.terminate().success());
}

/// The bots pages against the farm as the test left it: ada-bot's three versions
/// (validated, rejected, build failed) and bob-bot's one. Fails listing every problem.
fn check_pages(coordinator: &CoordinatorProcess, ada: &str, dir: &Path, good: &str) {
    let chromium = Chromium::launch();
    chromium.use_screen(LAPTOP);
    let url = coordinator.url();
    let archive = dir.join("web-bot.tar");
    let source = farm_worker::build::Source::read_dir(Path::new(good), farm_worker::build::SourceLimits::default())
        .expect("the source");
    std::fs::write(&archive, source.archive()).expect("write the archive");
    let text_of = |selector: &str| format!("(document.querySelector({}) || {{}}).textContent || ''", js(selector));

    let mut problems = Vec::new();
    let mut check = |what: &str, result: Result<(), String>| {
        if let Err(problem) = result {
            problems.push(format!("{what}: {problem}"));
        }
    };
    check(
        "the tournament list links to the bots",
        chromium.open(&format!("{url}/")).and_then(|()| chromium.links_to("/bots")),
    );
    check("the bots page loads", chromium.open(&format!("{url}/bots")));
    check(
        "the form is hidden before signing in",
        chromium.poll("hidden", "document.getElementById('submit-section').hidden", |v| v == true).map(drop),
    );
    check("sign in", chromium.set_value("[data-testid=\"token\"]", ada).and_then(|()| chromium.click("sign-in")));
    check("signed in as ada", chromium.poll("signed in", &text_of("#who"), |who| who == "ada").map(drop));
    let submitted = chromium
        .set_value("[data-testid=\"bot-name\"]", "ada-web")
        .and_then(|()| chromium.set_value("[data-testid=\"bot-game\"]", "botwars"))
        .and_then(|()| chromium.set_file("bot-archive", &archive))
        .and_then(|()| chromium.click("submit-bot"))
        .and_then(|()| {
            chromium.poll("submitted", &text_of("[data-testid=\"submitted\"]"), |text| {
                text.as_str().is_some_and(|text| text.starts_with("ada-web v1 submitted (python layout)"))
            })
        });
    check("submit from the form", submitted.map(drop));
    check(
        "the list shows every bot",
        chromium
            .poll(
                "rows",
                "[...document.querySelectorAll('[data-testid=\"bot-row\"]')].map(r => r.dataset.bot).sort().join(',')",
                |rows| rows == "ada-bot,ada-web,bob-bot",
            )
            .map(drop),
    );
    eventually(Duration::from_secs(120), "ada-web is validated", || {
        coordinator.get_json("/api/bots/ada-web")["versions"][0]["state"] == "validated"
    });
    check("a bot's page loads", chromium.open(&format!("{url}/bots/ada-bot")));
    check(
        "one row per version, newest first, with its state",
        chromium
            .poll("rows", "[...document.querySelectorAll('[data-testid=\"version-row\"]')].map(r => r.dataset.version + ':' + r.dataset.state).join(',')", |rows| {
                rows == "3:build_failed,2:rejected,1:validated"
            })
            .map(drop),
    );
    check("the rejection links to the match's log", chromium.links_to_logs());
    check("the rejection says why in one line", chromium.shows_text("exited with code 3 before its first reply"));
    check("the validated version links to its ladder", chromium.shows_text("playing"));
    let log = chromium.click("build-log-3").and_then(|()| {
        chromium.poll("the build log", &text_of("[data-testid=\"build-log-text\"]"), |text| {
            text.as_str().is_some_and(|text| text.contains("the compile fails on purpose"))
        })
    });
    check("the failed build's log", log.map(drop));
    check("the page fits the screen", chromium.fits_the_screen());
    check(
        "the new version's page",
        chromium.open(&format!("{url}/bots/ada-web")).and_then(|()| chromium.shows_text("validated")),
    );
    let reason =
        coordinator.get_json("/api/bots/ada-bot")["versions"][1]["reason"].as_str().unwrap_or_default().to_owned();
    let job =
        reason.split("/api/matches/").nth(1).and_then(|rest| rest.split('/').next()).unwrap_or_default().to_owned();
    check("the rejected version's match page", chromium.open(&format!("{url}/matches/{job}")));
    check(
        "its seat shows the crash report: reason, stderr tail, request",
        chromium
            .shows_text("exited with code 3 before its first reply")
            .and_then(|()| {
                let tail = "(document.querySelector('[data-testid=\"stderr-tail\"]') || {}).textContent || ''";
                chromium.poll("the stderr tail", tail, |text| text == "broken on purpose").map(drop)
            })
            .and_then(|()| chromium.missing_hooks(&["crash-report", "unanswered"])),
    );
    check("the head-to-head page", chromium.open(&format!("{url}/bots/ada-bot/versus/bob-bot")));
    check(
        "it shows their record and every match of the challenge",
        chromium
            .poll("rows", "[document.getElementById('record').dataset.matches, document.querySelectorAll('[data-testid=\"versus-row\"]').length].join(',')", |rows| {
                rows == "4,4"
            })
            .map(drop),
    );
    check(
        "its matches link to their pages",
        chromium
            .evaluate("document.querySelector('[data-testid=\"versus-row\"] a').pathname.startsWith('/matches/')")
            .and_then(|v| if v == true { Ok(()) } else { Err(format!("{v}")) }),
    );
    problems.extend(chromium.problems().into_iter().map(|problem| format!("console: {problem}")));
    assert!(problems.is_empty(), "{} problems in the bots pages:\n{}", problems.len(), problems.join("\n"));
}

/// A farm whose workers run bots' commands (`bot_launch = local`): a user's tournament
/// or ladder entry with a command is refused through the CLI, naming the bot; the
/// operator's is taken. No worker: nothing is played.
#[test]
fn a_user_enters_no_command_bot_in_a_farm_that_runs_commands() {
    let vhost = Vhost::new("commands");
    let dir = tempfile::tempdir().expect("temp dir");
    let coordinator =
        CoordinatorProcess::start_with(&vhost, &dir.path().join("ledger.sqlite"), &[("FARM_BOT_LAUNCH", "local")]);
    let (ok, bob, stderr) = run_as(&coordinator, TOKEN, &["users", "add", "bob"]);
    assert!(ok, "{stderr}");
    let bob = bob.trim().to_owned();
    let file = dir.path().join("commands.toml");
    std::fs::write(
        &file,
        "name = \"commands\"\ngame = \"botwars\"\nformat = \"ladder\"\n\
         [[bots]]\nname = \"random\"\nbuiltin = \"random\"\n\
         [[bots]]\nname = \"reader\"\ncommand = \"cat /etc/passwd >&2\"\nimage = \"matchfarm/bot-botwars-random-py\"\n",
    )
    .expect("write the tournament");
    let file = file.to_str().expect("UTF-8");
    let (ok, _, stderr) = run_as(&coordinator, &bob, &["submit", file]);
    assert!(
        !ok && stderr.contains("403") && stderr.contains("bots[1].command: bot \"reader\" runs a command"),
        "{stderr}"
    );
    // His own ladder takes no command bot either.
    let own = file.replace("commands.toml", "own.toml");
    std::fs::write(
        &own,
        "name = \"own\"\ngame = \"botwars\"\nformat = \"ladder\"\n\
         [[bots]]\nname = \"a\"\nbuiltin = \"random\"\n[[bots]]\nname = \"b\"\nbuiltin = \"gatherer\"\n",
    )
    .expect("write the ladder");
    let (ok, ladder, stderr) = run_as(&coordinator, &bob, &["submit", &own]);
    assert!(ok, "{stderr}");
    let ladder = ladder.trim().to_owned();
    let (ok, _, stderr) = run_as(&coordinator, &bob, &["bots", "add", &ladder, "--name", "c", "--command", "id"]);
    assert!(!ok && stderr.contains("bot.command: bot \"c\" runs a command"), "{stderr}");
    // The operator's CLI is unaffected; what Bob sent was not stored.
    let (ok, _, stderr) = run_as(&coordinator, TOKEN, &["submit", file]);
    assert!(ok && stderr.starts_with("submitted: "), "new, not already submitted: {stderr}");
    let (ok, _, stderr) = run_as(&coordinator, TOKEN, &["bots", "add", &ladder, "--name", "c", "--command", "id"]);
    assert!(ok, "{stderr}");
}
