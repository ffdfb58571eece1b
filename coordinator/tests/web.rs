//! The coordinator's web pages in a real browser. Four tiny tournaments, one per game
//! (`tests/web/*.toml`: builtin bots and a Python bot that runs as a process, so
//! there are logs), are played with `farm-coordinator run` into one data directory,
//! which `farm-coordinator view` serves read-only. Headless Chromium (Debian's
//! `chromium`, named by `FARM_TEST_CHROMIUM`) then visits every page of every
//! tournament on a laptop screen: the tournament list, the standings against
//! `/api/.../standings`, the pairing matrix, the match list and its bot filter, a bot
//! page, and a match page whose replay steps, plays and scrubs (with Ostibot's fog of
//! war and Maze's side-by-side copies); then the same pages on a phone screen, where
//! nothing may be wider than the screen. No page may log a console error or throw.
//!
//! The pages are found through the `data-testid` hooks of `coordinator/web/README.md`.
//! A screenshot of every page on both screens is written to
//! `target/web-screenshots/{desktop,phone}/` (the test prints the path) for people to
//! look at. Every check runs, and the test fails at the end listing each one that
//! failed, so one run shows everything broken.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use farm_coordinator::tournament::TournamentFile;
use serde_json::Value;

use farm_testkit::{http_get, repo};
use support::chromium::{Chromium, DEADLINE, Findings, LAPTOP, PHONE, Screenshots, js, testid};
use support::{COORDINATOR, cli};

/// The games, each with its fixture `tests/web/{game}.toml`.
const GAMES: [&str; 4] = ["botwars", "vindinium", "ostibot", "maze"];

#[test]
fn the_pages_show_four_finished_tournaments_in_chromium() {
    let data = tempfile::tempdir().expect("temp dir");
    let tournaments: Vec<Tournament> = GAMES.iter().map(|game| Tournament::play(game, data.path())).collect();
    let sprt = repo().join("coordinator/tests/web/sprt.toml");
    cli(&["run", sprt.to_str().expect("UTF-8 path"), "--data", data.path().to_str().expect("UTF-8 path")]);
    let server = ViewServer::start(data.path());
    let screenshots = Screenshots::new();
    let chromium = Chromium::launch();
    let mut findings = Findings::default();

    chromium.use_screen(LAPTOP);
    let pages = visit_on_laptop(&chromium, &server, &tournaments, &screenshots, &mut findings);
    chromium.use_screen(PHONE);
    for (label, path) in &pages {
        let url = server.url(path);
        let shown = chromium.open(&url);
        let loaded = shown.is_ok();
        findings.check(&url, "phone: the page loads", shown);
        if loaded {
            findings.check(&url, "phone: nothing is wider than the screen", chromium.fits_the_screen());
            findings.check(&url, "phone: screenshot", chromium.screenshot(&screenshots.path(PHONE, label)));
        }
    }
    eprintln!("screenshots: {}", screenshots.root.display());

    let problems = chromium.problems();
    let mut failures = findings.0;
    failures.extend(problems.iter().map(|problem| format!("console: {problem}")));
    assert!(failures.is_empty(), "{} problems in the web pages:\n{}", failures.len(), failures.join("\n"));
}

/// Every page of every tournament on the laptop screen, with its checks; returns the
/// pages visited as `(label, path)` for the phone pass.
fn visit_on_laptop(
    chromium: &Chromium,
    server: &ViewServer,
    tournaments: &[Tournament],
    screenshots: &Screenshots,
    findings: &mut Findings,
) -> Vec<(String, String)> {
    let mut pages = Vec::new();
    let mut visit = |label: String, path: String, checks: &mut dyn FnMut(&mut Findings, &str)| {
        let url = server.url(&path);
        let shown = chromium.open(&url);
        let loaded = shown.is_ok();
        findings.check(&url, "the page loads", shown);
        if loaded {
            checks(findings, &url);
            findings.check(&url, "no unformatted values", chromium.shows_no_unformatted_values());
            findings.check(&url, "nothing is wider than the screen", chromium.fits_the_screen());
            findings.check(&url, "screenshot", chromium.screenshot(&screenshots.path(LAPTOP, &label)));
        }
        pages.push((label, path));
    };

    let listed = server.get_json("/api/tournaments");
    let sprt = listed["tournaments"].as_array().and_then(|all| {
        all.iter().find(|tournament| tournament["name"] == "web sprt").and_then(|tournament| tournament["id"].as_str())
    });
    let sprt = sprt.expect("the SPRT fixture is listed").to_owned();
    let view = server.get_json(&format!("/api/tournaments/{sprt}"));
    visit("sprt-tournament".to_owned(), format!("/tournaments/{sprt}"), &mut |findings, url| {
        findings.check(url, "the test's state equals the API's", check_sprt(chromium, &view));
    });
    let workers = server.get_json("/api/workers");
    visit("index".to_owned(), "/".to_owned(), &mut |findings, url| {
        findings.check(url, "one row per tournament", check_tournament_rows(chromium, tournaments, &sprt));
        findings.check(url, "one row per worker, with its matches", check_worker_rows(chromium, &workers));
        for tournament in tournaments {
            findings.check(url, &format!("lists {}", tournament.name), chromium.links_to(&tournament.page()));
        }
    });
    // The list a page at a time: the page after the newest, which links back to it.
    let ids: Vec<String> = listed["tournaments"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|tournament| tournament["id"].as_str().expect("an id").to_owned())
        .collect();
    visit("index-after-newest".to_owned(), format!("/?after={}", ids[0]), &mut |findings, url| {
        let rest = shown_tournament_ids(chromium).and_then(|shown| {
            (shown == ids[1..]).then_some(()).ok_or(format!("tournament-row data-id {shown:?}, not {:?}", &ids[1..]))
        });
        findings.check(url, "the tournaments after the newest, in order", rest);
        findings.check(url, "a link to the newest", chromium.missing_hooks(&["tournaments-newest"]));
    });
    for tournament in tournaments {
        let game = &tournament.game;
        let standings = server.get_json(&format!("/api/tournaments/{}/standings", tournament.id));
        let pairings = server.get_json(&format!("/api/tournaments/{}/pairings", tournament.id));
        let all_matches = server.get_json(&format!("/api/tournaments/{}/matches", tournament.id));
        let bot = &tournament.process_bot;
        let bot_matches = server.get_json(&format!("/api/tournaments/{}/matches?bot={bot}", tournament.id));

        visit(format!("{game}-tournament"), tournament.page(), &mut |findings, url| {
            findings.check(url, "standings equal the API's", check_standings(chromium, &standings));
            findings.check(url, "progress equals the API's", check_progress(chromium, &standings["progress"]));
            if tournament.players_per_match == 2 {
                findings.check(url, "pairing matrix equals the API's", check_pairings(chromium, &pairings));
            }
        });
        visit(format!("{game}-matches"), format!("{}/matches", tournament.page()), &mut |findings, url| {
            findings.check(url, "one row per match", check_match_rows(chromium, &all_matches, None));
        });
        visit(format!("{game}-matches-of-{bot}"), format!("{}/matches?bot={bot}", tournament.page()), &mut |f, url| {
            let narrower = bot_matches["total"].as_u64() < all_matches["total"].as_u64();
            f.check(
                url,
                "the fixture has matches without the bot",
                narrower.then_some(()).ok_or("every match has it".into()),
            );
            f.check(url, "only the bot's matches", check_match_rows(chromium, &bot_matches, Some(bot)));
        });
        visit(format!("{game}-bot-{bot}"), format!("{}/bots/{bot}", tournament.page()), &mut |findings, url| {
            findings.check(url, "names the bot", chromium.shows_text(bot));
            findings.check(url, "links to the bot's logs", chromium.links_to_logs());
        });
        let first = &bot_matches["matches"][0];
        let job_id = first["job_id"].as_str().expect("the fixture's bot played a match");
        visit(format!("{game}-match"), format!("/matches/{job_id}"), &mut |findings, url| {
            check_match_page(chromium, tournament, first, findings, url);
        });
    }
    pages
}

/// One tournament of the fixture, played to the end.
struct Tournament {
    id: String,
    name: String,
    game: String,
    /// The bot that runs as a process: its matches have logs.
    process_bot: String,
    players_per_match: usize,
}

impl Tournament {
    /// Plays `tests/web/{game}.toml` with `farm-coordinator run` into `data`.
    fn play(game: &str, data: &Path) -> Self {
        let file = repo().join(format!("coordinator/tests/web/{game}.toml"));
        let text = std::fs::read_to_string(&file).expect("the fixture");
        let parsed = TournamentFile::from_toml(&text).expect("the fixture parses");
        let process_bot = parsed.bots.iter().find(|bot| bot.command.is_some()).expect("a process bot").name.clone();
        let file = file.to_str().expect("UTF-8 path");
        let output = cli(&["run", file, "--data", data.to_str().expect("UTF-8 path"), "--format", "json"]);
        let standings: Value = serde_json::from_str(&output).expect("JSON standings");
        let progress = &standings["progress"];
        assert!(progress["done"] == progress["total"] && progress["failed"] == 0, "{game} fixture: {standings}");
        let rows = standings["rows"].as_array().expect("rows");
        let seats_played: u64 = rows.iter().filter_map(|row| row["played"].as_u64()).sum();
        let players_per_match = seats_played / progress["total"].as_u64().expect("total");
        Tournament {
            id: standings["tournament_id"].as_str().expect("tournament_id").to_owned(),
            name: standings["name"].as_str().expect("name").to_owned(),
            game: game.to_owned(),
            process_bot,
            players_per_match: players_per_match as usize,
        }
    }

    fn page(&self) -> String {
        format!("/tournaments/{}", self.id)
    }
}

/// `farm-coordinator view` over the fixture's data, on a port of its own choosing;
/// killed when dropped. Its output goes to the test's stderr.
struct ViewServer {
    address: SocketAddr,
    child: Child,
}

impl ViewServer {
    fn start(data: &Path) -> Self {
        let mut child = Command::new(COORDINATOR)
            .args(["view", "--data", data.to_str().expect("UTF-8 path"), "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("farm-coordinator view starts");
        let (lines, received) = mpsc::channel();
        let outputs: [Box<dyn Read + Send>; 2] = [
            Box::new(child.stdout.take().expect("piped stdout")),
            Box::new(child.stderr.take().expect("piped stderr")),
        ];
        for output in outputs {
            let lines = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(output).lines().map_while(Result::ok) {
                    eprintln!("farm-coordinator view: {line}");
                    let _ = lines.send(line);
                }
            });
        }
        let deadline = Instant::now() + DEADLINE;
        let address = loop {
            let line = received
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("farm-coordinator view prints \"listening on http://127.0.0.1:PORT\"");
            let announced =
                line.split_once("listening on http://").and_then(|(_, rest)| rest.split_whitespace().next());
            if let Some(address) = announced.and_then(|address| address.trim_end_matches('/').parse().ok()) {
                break address;
            }
        };
        ViewServer { address, child }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    fn get_json(&self, path: &str) -> Value {
        let (status, body) = http_get(self.address, path).expect("the view server answers");
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|error| panic!("GET {path}: {error}: {body}"))
    }
}

impl Drop for ViewServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The tournament list has a `tournament-row` for each tournament of the fixture and
/// no other.
fn check_tournament_rows(chromium: &Chromium, tournaments: &[Tournament], sprt: &str) -> Result<(), String> {
    let mut shown = shown_tournament_ids(chromium)?;
    let mut expected: Vec<String> = tournaments.iter().map(|tournament| tournament.id.clone()).collect();
    expected.push(sprt.to_owned());
    shown.sort();
    expected.sort();
    if shown == expected {
        Ok(())
    } else {
        Err(format!("tournament-row data-id {shown:?}, the fixture has {expected:?}"))
    }
}

/// The ids of the tournament rows shown, top to bottom.
fn shown_tournament_ids(chromium: &Chromium) -> Result<Vec<String>, String> {
    let shown = chromium.evaluate(
        r#"[...document.querySelectorAll('[data-testid="tournament-row"]')].map(row => row.dataset.id ?? null)"#,
    )?;
    Ok(shown
        .as_array()
        .ok_or("no tournament rows")?
        .iter()
        .map(|id| id.as_str().unwrap_or("(none)").to_owned())
        .collect())
}

/// The workers table shows every worker of `GET /api/workers` (the in-process workers
/// that played the fixture's tournaments), each with its matches.
fn check_worker_rows(chromium: &Chromium, workers: &Value) -> Result<(), String> {
    let shown = chromium.evaluate(
        r#"[...document.querySelectorAll('[data-testid="worker-row"]')].map(row => [row.dataset.worker, row.cells[1].innerText])"#,
    )?;
    let expected: Vec<Value> = workers["workers"]
        .as_array()
        .ok_or("no workers in the API")?
        .iter()
        .map(|worker| serde_json::json!([worker["worker_id"], worker["matches"].to_string()]))
        .collect();
    if expected.is_empty() {
        return Err("the API has no worker records: the fixture's matches were played by someone".to_owned());
    }
    if shown.as_array() == Some(&expected) {
        Ok(())
    } else {
        Err(format!("worker rows {shown}, the API has {expected:?}"))
    }
}

/// Every row's cells equal the API's row, in the API's order: each cell's
/// `data-value` is the API's value, and its text shows it (numbers to the precision
/// shown).
fn check_standings(chromium: &Chromium, standings: &Value) -> Result<(), String> {
    let shown = chromium.evaluate(
        r#"[...document.querySelectorAll('[data-testid="standings"] [data-testid="standing-row"]')].map(row =>
            Object.fromEntries([...row.querySelectorAll("[data-field]")].map(cell =>
                [cell.dataset.field, { value: cell.dataset.value ?? null, text: cell.textContent.trim() }])))"#,
    )?;
    let shown = shown.as_array().ok_or("no standing rows")?;
    let rows = standings["rows"].as_array().expect("API rows");
    if shown.len() != rows.len() {
        return Err(format!("{} standing-row rows, the API has {}", shown.len(), rows.len()));
    }
    let fields = [
        "place",
        "bot",
        "played",
        "wins",
        "draws",
        "losses",
        "points",
        "rating",
        "timeouts",
        "crashes",
        "disqualified",
    ];
    let mut wrong = Vec::new();
    for (index, (shown, row)) in shown.iter().zip(rows).enumerate() {
        for field in fields {
            let expected = if field == "rating" { &row["rating"]["value"] } else { &row[field] };
            let cell = &shown[field];
            if cell.is_null() {
                wrong.push(format!("row {index} has no data-field=\"{field}\" cell"));
                continue;
            }
            let (value, text) = (cell["value"].as_str().unwrap_or("(none)"), cell["text"].as_str().unwrap_or(""));
            let (value_agrees, text_agrees) = match expected {
                Value::String(name) => (value == name, text == name),
                number => {
                    let number = number.as_f64().expect("API numbers");
                    // serde_json's default float parsing may be an ulp off the
                    // browser's (which rounds correctly), so equal is within 1e-12.
                    let same = |value: f64| (value - number).abs() <= number.abs() * 1e-12;
                    (value.parse::<f64>().is_ok_and(same), shows_number(text, number))
                }
            };
            if !value_agrees {
                wrong.push(format!("row {index} {field}: data-value {value:?}, the API has {expected}"));
            }
            if !text_agrees {
                wrong.push(format!("row {index} {field}: shows {text:?}, the API has {expected}"));
            }
        }
    }
    if wrong.is_empty() { Ok(()) } else { Err(wrong.join("; ")) }
}

/// Whether the first number in `text` is `value` rounded to the decimals shown.
fn shows_number(text: &str, value: f64) -> bool {
    let text = text.replace('\u{2212}', "-");
    let Some(start) = text.find(|c: char| c.is_ascii_digit()) else { return false };
    let digits: String = text[start..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let digits = digits.trim_end_matches('.');
    let decimals = digits.split_once('.').map_or(0, |(_, fraction)| fraction.len());
    let Ok(magnitude) = digits.parse::<f64>() else { return false };
    let shown = if text[..start].ends_with('-') { -magnitude } else { magnitude };
    (shown - value).abs() <= 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9
}

fn check_progress(chromium: &Chromium, progress: &Value) -> Result<(), String> {
    let shown = chromium.evaluate(
        r#"(() => {
            const progress = document.querySelector('[data-testid="progress"]');
            return progress && { done: progress.dataset.done, failed: progress.dataset.failed, total: progress.dataset.total };
        })()"#,
    )?;
    let expected = serde_json::json!({
        "done": progress["done"].to_string(),
        "failed": progress["failed"].to_string(),
        "total": progress["total"].to_string(),
    });
    if shown == expected { Ok(()) } else { Err(format!("progress shows {shown}, the API has {expected}")) }
}

/// The SPRT section shows the API's log-likelihood ratio, bounds, verdict and pairs,
/// and how the test ended.
fn check_sprt(chromium: &Chromium, view: &Value) -> Result<(), String> {
    let status = &view["status"]["status"];
    let shown = chromium.evaluate(&format!(
        r#"(() => {{
            const section = document.querySelector({});
            const field = (name) => section.querySelector(`[data-field="${{name}}"]`)?.textContent ?? "";
            return {{ hidden: section.hidden, llr: field("llr"), pairs: field("pairs"),
                      conclusion: section.querySelector('[data-testid="conclusion"]').textContent }};
        }})()"#,
        js(&testid("format-status"))
    ))?;
    let llr = format!(
        "{:.3} in [{:.3}, {:.3}]: H1 accepted",
        status["llr"].as_f64().unwrap_or_default(),
        status["lower"].as_f64().unwrap_or_default(),
        status["upper"].as_f64().unwrap_or_default()
    );
    let pairs = view["status"]["pairs"].to_string();
    let conclusion = view["conclusion"].as_str().unwrap_or_default();
    let fine = shown["hidden"] == false
        && shown["llr"].as_str().is_some_and(|text| text.starts_with(&llr))
        && shown["pairs"].as_str().is_some_and(|text| text.starts_with(&pairs))
        && shown["conclusion"].as_str().is_some_and(|text| conclusion.starts_with("H1") && text.ends_with(conclusion));
    if fine { Ok(()) } else { Err(format!("the SPRT section shows {shown}; the API has {view}")) }
}

/// Every cell of the pairing matrix (row bot against column bot) carries the API's
/// wins, draws and losses, for every pair of bots.
fn check_pairings(chromium: &Chromium, pairings: &Value) -> Result<(), String> {
    let shown = chromium.evaluate(
        r#"(() => {
            const table = document.querySelector('[data-testid="pairings"]');
            if (!table) return null;
            const columns = [...table.querySelectorAll("thead th")].slice(1).map(th => th.textContent.trim());
            const cells = {};
            for (const row of table.querySelectorAll("tbody tr")) {
                const bot = row.querySelector("th").textContent.trim();
                [...row.querySelectorAll("td")].forEach((cell, column) => {
                    if (cell.dataset.wins !== undefined)
                        cells[`${bot} ${columns[column]}`] = [cell.dataset.wins, cell.dataset.draws, cell.dataset.losses].join("-");
                });
            }
            return cells;
        })()"#,
    )?;
    if shown.is_null() {
        return Err("no pairings table".to_owned());
    }
    let bots: Vec<&str> = pairings["bots"].as_array().expect("API bots").iter().filter_map(Value::as_str).collect();
    let mut wrong = Vec::new();
    for (row, bot) in bots.iter().enumerate() {
        for (column, opponent) in bots.iter().enumerate().filter(|&(column, _)| column != row) {
            let result = &pairings["results"][row][column];
            let expected = format!("{}-{}-{}", result["wins"], result["draws"], result["losses"]);
            let key = format!("{bot} {opponent}");
            if shown[&key].as_str() != Some(expected.as_str()) {
                wrong.push(format!("{bot} against {opponent}: shows {}, the API has {expected}", shown[&key]));
            }
        }
    }
    if wrong.is_empty() { Ok(()) } else { Err(wrong.join("; ")) }
}

/// One `match-row` per match of `matches` (an API match list), in its order (their
/// `data-job-id`), each naming `bot` when given.
fn check_match_rows(chromium: &Chromium, matches: &Value, bot: Option<&str>) -> Result<(), String> {
    let rows = chromium.evaluate(
        r#"[...document.querySelectorAll('[data-testid="match-row"]')].map(row =>
            ({ job: row.dataset.jobId ?? null, text: row.innerText }))"#,
    )?;
    let rows = rows.as_array().ok_or("no match rows")?;
    let shown: Vec<&Value> = rows.iter().map(|row| &row["job"]).collect();
    let expected: Vec<&Value> =
        matches["matches"].as_array().expect("API matches").iter().map(|m| &m["job_id"]).collect();
    if shown != expected {
        return Err(format!("match-row data-job-id {shown:?}, the API lists {expected:?}"));
    }
    let Some(bot) = bot else { return Ok(()) };
    let without: Vec<usize> =
        (0..rows.len()).filter(|&row| !rows[row]["text"].as_str().is_some_and(|text| text.contains(bot))).collect();
    if without.is_empty() { Ok(()) } else { Err(format!("rows {without:?} do not name {bot}")) }
}

/// The match page: its hooks, log links and a replay that steps, plays, scrubs and
/// steps back, each change drawn; Ostibot's fog of war and Maze's copies.
fn check_match_page(chromium: &Chromium, tournament: &Tournament, details: &Value, findings: &mut Findings, url: &str) {
    let hooks = [
        "replay-canvas",
        "play",
        "pause",
        "step-back",
        "step-forward",
        "scrub",
        "speed",
        "turn",
        "replies",
        "events",
        "scores-chart",
    ];
    findings.check(url, "viewer hooks", chromium.missing_hooks(&hooks));
    for outcome in details["outcomes"].as_array().into_iter().flatten() {
        if let Some(log) = outcome["log"].as_str() {
            findings.check(url, &format!("links to seat {}'s log", outcome["seat"]), chromium.links_to(log));
        }
    }
    findings.check(url, "every seat's time per move is plotted", check_move_times(chromium, details));
    findings.check(url, "the replay steps, plays and scrubs", check_replay_controls(chromium));
    match tournament.game.as_str() {
        "ostibot" => findings.check(url, "View as a team hides what it does not see", check_fog_of_war(chromium)),
        "maze" => findings.check(
            url,
            "every copy of the maze is drawn",
            check_maze_copies(chromium, tournament.players_per_match),
        ),
        _ => {}
    }
}

/// One time-per-move plot per seat of the match, each over that seat's moves.
fn check_move_times(chromium: &Chromium, details: &Value) -> Result<(), String> {
    let plots = chromium.evaluate(
        r#"[...document.querySelectorAll('[data-testid="move-times"] [data-testid="move-time-plot"]')]
            .map(plot => [Number(plot.dataset.seat), Number(plot.dataset.moves), plot.querySelectorAll("polyline").length])"#,
    )?;
    let plots = plots.as_array().ok_or(format!("no plots: {plots}"))?;
    let seats = details["outcomes"].as_array().map_or(0, Vec::len);
    if plots.len() != seats {
        return Err(format!("{} plots for {seats} seats: {plots:?}", plots.len()));
    }
    match plots.iter().find(|plot| plot[1].as_u64().is_none_or(|moves| moves == 0) || plot[2] == 0) {
        Some(empty) => Err(format!("a plot without moves or lines: {empty}")),
        None => Ok(()),
    }
}

fn check_replay_controls(chromium: &Chromium) -> Result<(), String> {
    let first = chromium.canvas_digest()?;
    let frame = chromium.frame()?;
    if frame != 0 {
        return Err(format!("the replay opens on frame {frame}, not 0"));
    }
    chromium.click("step-forward")?;
    chromium.wait_for_frame("step-forward shows frame 1", |frame| frame == 1)?;
    let second = chromium.canvas_changes_from(&first, "step-forward")?;
    let replies = chromium.evaluate(r#"document.querySelector('[data-testid="replies"]')?.innerText.trim() ?? """#)?;
    if replies.as_str().is_none_or(str::is_empty) {
        return Err("frame 1 lists no replies".to_owned());
    }

    chromium.click("play")?;
    chromium.wait_for_frame("play moves past frame 1", |frame| frame > 1)?;
    chromium.click("pause")?;
    chromium.canvas_changes_from(&second, "play")?;

    let last = chromium.evaluate(r#"document.querySelector('[data-testid="scrub"]')?.max ?? null"#)?;
    let last: u64 = last.as_str().and_then(|last| last.parse().ok()).ok_or(format!("scrub has max {last}"))?;
    chromium.set_value(&testid("scrub"), &last.to_string())?;
    chromium.wait_for_frame("scrubbing to the end shows the last frame", |frame| frame == last)?;
    let end = chromium.canvas_digest()?;
    chromium.click("step-back")?;
    chromium.wait_for_frame("step-back from the end", |frame| frame + 1 == last)?;
    chromium.canvas_changes_from(&end, "step-back")?;
    Ok(())
}

/// The Ostibot renderer's "View as" control set to the first team draws that team's
/// view (the canvas's `data-view` says so once its observations are drawn, not merely
/// the placeholder shown while they load), and it differs from everyone's view.
fn check_fog_of_war(chromium: &Chromium) -> Result<(), String> {
    let control = r#"[data-testid="control-view"]"#;
    let everyone = chromium.canvas_digest()?;
    chromium.set_value(control, "0")?;
    chromium.poll(
        "the canvas drawn as team 0 sees it",
        r#"document.querySelector('[data-testid="replay-canvas"]')?.dataset.view ?? null"#,
        |view| view.as_str() == Some("0"),
    )?;
    chromium.canvas_changes_from(&everyone, "View as team 0")?;
    Ok(())
}

/// The Maze renderer draws one panel per seat (the canvas's `data-panels`).
fn check_maze_copies(chromium: &Chromium, seats: usize) -> Result<(), String> {
    let panels =
        chromium.evaluate(r#"document.querySelector('[data-testid="replay-canvas"]')?.dataset.panels ?? null"#)?;
    if panels.as_str() == Some(seats.to_string().as_str()) {
        Ok(())
    } else {
        Err(format!("replay-canvas has data-panels {panels}, the match seats {seats}"))
    }
}
