//! `farm-fuzz`: runs the fuzz targets of [`farm_fuzz::TARGETS`] for a time budget each.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use farm_fuzz::mutate::{Rng, mutate};
use farm_fuzz::{TARGETS, Target};
use sha2::{Digest, Sha256};

/// An input that takes longer than this is reported as slow: a parser an outsider can
/// hold up.
const SLOW: Duration = Duration::from_secs(1);
/// The most inputs a target's corpus grows by in one run: memory stays bounded.
const MAX_GROWN: usize = 10_000;

#[derive(Parser)]
#[command(
    name = "farm-fuzz",
    version,
    about = "Feeds every parser of outside input mutated inputs, starting from fuzz/corpus/TARGET/.",
    after_help = "Each target first runs every input of its corpus, then mutated ones until its time is up. An \
                  input that panics is written to --crashes and the run exits 1. Targets: --list."
)]
struct Args {
    /// Targets to run [default: all].
    targets: Vec<String>,
    /// Seconds of fuzzing per target.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Seed of the mutations (a run repeats from its seed).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the corpora are (one directory per target).
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus"))]
    corpus: PathBuf,
    /// Add inputs of a new class to the corpus directory (keep the small ones).
    #[arg(long)]
    save: bool,
    /// Where inputs that panic are written.
    #[arg(long, default_value = "target/fuzz-crashes")]
    crashes: PathBuf,
    /// List the targets and exit.
    #[arg(long)]
    list: bool,
    /// Print every class of outcome seen (what guides the fuzzing).
    #[arg(long)]
    show_classes: bool,
}

/// The last panic's message: the hook stores it instead of printing it.
static PANIC: Mutex<Option<String>> = Mutex::new(None);

/// What running one target found.
struct Report {
    execs: u64,
    classes: usize,
    seeds: usize,
    grown: usize,
    crashes: Vec<String>,
    slow: Vec<(Duration, PathBuf)>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.list {
        for target in TARGETS {
            println!("{:18} {}", target.name, target.about);
        }
        return Ok(());
    }
    let targets: Vec<&Target> = if args.targets.is_empty() {
        TARGETS.iter().collect()
    } else {
        args.targets
            .iter()
            .map(|name| farm_fuzz::target(name).with_context(|| format!("no target {name:?} (see --list)")))
            .collect::<anyhow::Result<_>>()?
    };
    std::panic::set_hook(Box::new(|info| {
        let location = info.location().map(|at| format!(" at {at}")).unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|text| (*text).to_owned()))
            .unwrap_or_default();
        *PANIC.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(format!("{message}{location}"));
    }));
    let mut failed = false;
    for target in targets {
        let report = fuzz(target, &args)?;
        let seconds = args.seconds.max(1) as f64;
        println!(
            "{:18} {:>9} execs ({:>7.0}/s) in {} s, {} classes, corpus {} + {} new, {} crashes, {} slow",
            target.name,
            report.execs,
            report.execs as f64 / seconds,
            args.seconds,
            report.classes,
            report.seeds,
            report.grown,
            report.crashes.len(),
            report.slow.len()
        );
        for crash in &report.crashes {
            println!("  crash: {crash}");
        }
        for (took, path) in &report.slow {
            println!("  slow ({:.1} s): {}", took.as_secs_f64(), path.display());
        }
        failed |= !report.crashes.is_empty();
    }
    if failed {
        bail!("inputs panicked: they are in {}", args.crashes.display());
    }
    Ok(())
}

fn fuzz(target: &Target, args: &Args) -> anyhow::Result<Report> {
    let dir = args.corpus.join(target.name);
    let mut corpus = read_corpus(&dir)?;
    let mut report =
        Report { execs: 0, classes: 0, seeds: corpus.len(), grown: 0, crashes: Vec::new(), slow: Vec::new() };
    let mut classes = HashSet::new();
    let mut crash_classes = HashSet::new();
    let mut rng = Rng::new(args.seed);
    let mut run = |input: &[u8], report: &mut Report| -> anyhow::Result<Option<String>> {
        report.execs += 1;
        let started = Instant::now();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| (target.run)(input)));
        let took = started.elapsed();
        if took > SLOW {
            report.slow.push((took, write_input(&args.crashes.join(target.name).join("slow"), input)?));
        }
        match outcome {
            Ok(class) => Ok(Some(class)),
            Err(_) => {
                let message = PANIC.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take().unwrap_or_default();
                if crash_classes.insert(message.clone()) {
                    let path = write_input(&args.crashes.join(target.name), input)?;
                    report.crashes.push(format!("{message} (input: {})", path.display()));
                }
                Ok(None)
            }
        }
    };
    for input in &corpus {
        if let Some(class) = run(input, &mut report)? {
            classes.insert(class);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    while Instant::now() < deadline {
        let mut input = corpus[rng.below(corpus.len())].clone();
        let other = rng.below(corpus.len());
        mutate(&mut input, &mut rng, target.dictionary, &corpus[other]);
        if let Some(class) = run(&input, &mut report)?
            && classes.insert(class)
            && report.grown < MAX_GROWN
        {
            if args.save && input.len() <= 4096 {
                write_input(&dir, &input)?;
            }
            report.grown += 1;
            corpus.push(input);
        }
    }
    report.classes = classes.len();
    if args.show_classes {
        let mut seen: Vec<&String> = classes.iter().collect();
        seen.sort();
        for class in seen {
            println!("  class: {class}");
        }
    }
    Ok(report)
}

/// Every file of `dir`, in name order (a run repeats from its seed).
fn read_corpus(dir: &Path) -> anyhow::Result<Vec<Vec<u8>>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading the corpus {}", dir.display()))?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<_, _>>()?;
    paths.sort();
    let inputs: Vec<Vec<u8>> = paths
        .iter()
        .map(|path| std::fs::read(path).with_context(|| format!("reading {}", path.display())))
        .collect::<Result<_, _>>()?;
    if inputs.is_empty() {
        bail!("the corpus {} is empty: a target needs at least one seed input", dir.display());
    }
    Ok(inputs)
}

/// Writes `input` into `dir`, named by its hash; returns the path.
fn write_input(dir: &Path, input: &[u8]) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name: String = Sha256::digest(input).iter().take(8).map(|byte| format!("{byte:02x}")).collect();
    let path = dir.join(name);
    std::fs::write(&path, input).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
