//! Tournaments whose matches are decided as results come, played for real with the
//! built-in bots by `farm-coordinator run`: an SPRT between bots of clearly different
//! strength stops early and one between a bot and itself accepts H0, the N-player
//! SPRT on Vindinium, a Swiss tournament, and a round robin that stops once its
//! ranking settles. An SPRT interrupted half-way resumes to its verdict.

use std::path::Path;
use std::process::{Command, Output};

use farm_coordinator::director::{self, FormatStatus};
use farm_coordinator::ledger::{JobState, Ledger, MatchRow};
use farm_coordinator::tournament::Tournament;

const COORDINATOR: &str = env!("CARGO_BIN_EXE_farm-coordinator");

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Writes `text` as a tournament file in `dir` and runs it there to the end.
fn run(dir: &Path, text: &str) -> Output {
    let file = dir.join("tournament.toml");
    std::fs::write(&file, text).expect("write the tournament file");
    let output = Command::new(COORDINATOR)
        .args(["run", file.to_str().expect("UTF-8"), "--data", dir.join("data").to_str().expect("UTF-8")])
        .args(["--workers", "2", "--format", "json"])
        .current_dir(repo())
        .output()
        .expect("farm-coordinator runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output
}

/// What a finished run left in its ledger: the tournament, its jobs, its format's
/// state and how it ended.
struct Outcome {
    tournament: Tournament,
    jobs: Vec<MatchRow>,
    status: Option<FormatStatus>,
    conclusion: String,
}

async fn ended(dir: &Path) -> Outcome {
    let ledger = Ledger::open(&dir.join("data/ledger.sqlite")).expect("the ledger opens");
    let id = ledger.tournaments().await.expect("tournaments")[0].id.clone();
    let tournament = ledger.tournament(&id).await.expect("read").expect("the tournament");
    let jobs = ledger.schedule(&id).await.expect("its jobs");
    let progress = ledger.progress(&id).await.expect("progress").expect("the tournament");
    assert!(progress.finished(), "{progress:?}");
    assert_eq!(progress.failed, 0, "{progress:?}");
    let status = director::status(&tournament, &jobs);
    let conclusion = ledger.conclusion(&id).await.expect("conclusion").expect("the director ended it");
    Outcome { tournament, jobs, status, conclusion }
}

fn botwars_sprt(candidate: &str, baseline: &str, extra: &str) -> String {
    format!(
        "name = \"sprt\"\ngame = \"botwars\"\nformat = \"sprt\"\nseed = 3\ncandidate = \"candidate\"\n\
         baseline = \"baseline\"\n{extra}\n\
         [[bots]]\nname = \"baseline\"\nbuiltin = \"{baseline}\"\n[[bots]]\nname = \"candidate\"\nbuiltin = \"{candidate}\"\n"
    )
}

fn sprt_report(outcome: &Outcome) -> &director::sprt::SprtReport {
    match &outcome.status {
        Some(FormatStatus::Sprt(report)) => report,
        other => panic!("not an SPRT's status: {other:?}"),
    }
}

#[tokio::test]
async fn an_sprt_stops_early_for_a_stronger_bot_and_accepts_h0_for_a_bot_against_itself() {
    let dir = tempfile::tempdir().expect("temp dir");
    let stronger = dir.path().join("stronger");
    std::fs::create_dir(&stronger).expect("dir");
    let output = run(&stronger, &botwars_sprt("gatherer", "random", "elo0 = 0\nelo1 = 5\nmax_matches = 2000"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("ended: H1 accepted"), "{stderr}");
    let outcome = ended(&stronger).await;
    assert!(outcome.conclusion.starts_with("H1 accepted"), "{}", outcome.conclusion);
    let report = sprt_report(&outcome);
    eprintln!("gatherer against random: {} matches of a cap of 2000; {}", outcome.jobs.len(), report.lines()[0]);
    assert!(outcome.jobs.len() < 500, "stopped early: {} matches", outcome.jobs.len());
    assert!(report.status.expect("status").elo.low > 0.0);
    let pentanomial = report.pentanomial.expect("head to head");
    assert_eq!(pentanomial.iter().sum::<u64>(), report.pairs);
    // Each pair is one seed played from both sides.
    for pair in outcome.jobs.chunks(2) {
        assert_eq!(pair[0].seed, pair[1].seed);
        assert_eq!(pair[0].seats, [pair[1].seats[1], pair[1].seats[0]]);
    }

    let itself = dir.path().join("itself");
    std::fs::create_dir(&itself).expect("dir");
    let cap = 4000;
    let text = botwars_sprt("random", "random", &format!("elo0 = 0\nelo1 = 30\nmax_matches = {cap}"));
    run(&itself, &text);
    let outcome = ended(&itself).await;
    eprintln!(
        "random against itself: {} matches of a cap of {cap}; {}",
        outcome.jobs.len(),
        sprt_report(&outcome).lines()[0]
    );
    assert!(outcome.conclusion.starts_with("H0 accepted"), "{}", outcome.conclusion);
    assert!(outcome.jobs.len() < cap, "within the cap");
}

#[tokio::test]
async fn an_n_player_sprt_on_vindinium_pairs_the_candidate_and_the_baseline_in_the_same_seat() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut text = String::from(
        "name = \"paired\"\ngame = \"vindinium\"\nformat = \"sprt\"\nseed = 4\ncandidate = \"greedy\"\n\
         baseline = \"random\"\nelo0 = 0\nelo1 = 10\nmax_matches = 400\n[rules]\nmaxTurns = 120\n",
    );
    for (name, builtin) in
        [("random", "random"), ("greedy", "greedy"), ("x", "random"), ("y", "random"), ("z", "random")]
    {
        text.push_str(&format!("[[bots]]\nname = \"{name}\"\nbuiltin = \"{builtin}\"\n"));
    }
    run(dir.path(), &text);
    let outcome = ended(dir.path()).await;
    let report = sprt_report(&outcome);
    eprintln!("vindinium greedy against random, paired: {} matches; {}", outcome.jobs.len(), report.lines()[0]);
    assert!(outcome.conclusion.starts_with("H1 accepted"), "{}", outcome.conclusion);
    assert_eq!(report.design, director::sprt::Design::Paired);
    let trinomial = report.trinomial.expect("paired counts");
    assert!(trinomial[2] > trinomial[0], "the candidate mostly ranks above the baseline: {trinomial:?}");
    for pair in outcome.jobs.chunks(2) {
        let seat = pair[0].seats.iter().position(|&bot| bot == 1).expect("the candidate in the first");
        assert_eq!(pair[1].seats[seat], 0, "the baseline in its seat in the second");
        assert_eq!(pair[0].seed, pair[1].seed);
    }
}

#[tokio::test]
async fn a_swiss_tournament_plays_its_rounds_without_rematches_and_gives_byes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut text = String::from("name = \"swiss\"\ngame = \"botwars\"\nformat = \"swiss\"\nrounds = 4\nseed = 9\n");
    for bot in 0..5 {
        let builtin = if bot % 2 == 0 { "gatherer" } else { "random" };
        text.push_str(&format!("[[bots]]\nname = \"bot{bot}\"\nbuiltin = \"{builtin}\"\n"));
    }
    run(dir.path(), &text);
    let outcome = ended(dir.path()).await;
    assert_eq!(outcome.conclusion, "played its 4 rounds");
    assert_eq!(outcome.jobs.len(), 8, "two tables a round");
    let Some(FormatStatus::Swiss(report)) = &outcome.status else { panic!("{:?}", outcome.status) };
    assert_eq!((report.round, report.rounds), (4, 4));
    assert_eq!(report.scores.iter().map(|score| score.byes).sum::<u32>(), 4, "one bye a round");
    assert!(report.scores.iter().all(|score| score.byes <= 1));
    let mut met = std::collections::BTreeSet::new();
    for job in &outcome.jobs {
        assert!(met.insert((job.seats[0].min(job.seats[1]), job.seats[0].max(job.seats[1]))), "a rematch: {job:?}");
    }
    for bot in 0..5 {
        let firsts = outcome.jobs.iter().filter(|job| job.seats[0] == bot).count();
        let seconds = outcome.jobs.iter().filter(|job| job.seats[1] == bot).count();
        assert!(firsts.abs_diff(seconds) <= 1, "bot {bot}: {firsts} first, {seconds} second");
    }
    assert_eq!(outcome.tournament.bots.len(), 5);
}

#[tokio::test]
async fn a_round_robin_stops_once_its_ranking_settles() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = "name = \"settles\"\ngame = \"botwars\"\nformat = \"round-robin\"\ngames_per_pairing = 200\n\
                stop_when = \"ranking-settled\"\n[[bots]]\nname = \"gatherer\"\nbuiltin = \"gatherer\"\n\
                [[bots]]\nname = \"random\"\nbuiltin = \"random\"\n";
    run(dir.path(), text);
    let outcome = ended(dir.path()).await;
    assert!(outcome.conclusion.starts_with("ranking settled after"), "{}", outcome.conclusion);
    let cancelled = outcome.jobs.iter().filter(|job| job.state == JobState::Cancelled).count();
    let played = outcome.jobs.iter().filter(|job| job.state == JobState::Done).count();
    eprintln!("settled after {played} of 400 matches; {cancelled} cancelled");
    assert_eq!(outcome.jobs.len(), 400, "the schedule stays whole");
    assert!(cancelled > 200, "most were never played: {cancelled}");
    assert_eq!(played + cancelled, 400);
}
