//! Engine: turns per second of one core, each game played by its built-in bots
//! through the worker's runner (the path a worker slot takes for built-in bots:
//! `play_match` in the local sandbox, the replay written and hashed).

use std::time::{Duration, Instant};

use farm_engine::builtin;
use farm_engine::{AnyGame, GameKind, MatchSetup};
use farm_proto::{BotLaunch, BotSpec, MoveClock, Transport};
use farm_worker::bots::LocalSandbox;
use farm_worker::{MatchIo, RunnerOptions, play_match};

use crate::report::Figures;

/// The seed of every match: it fixes the generated maps and all randomness.
const SEED: u64 = 20_240_601;

/// Plays each game for about `budget` on a single-threaded runtime of its own (one
/// core), whole matches with the game's first built-in bot in every seat.
pub fn run(budget: Duration) -> anyhow::Result<Figures> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let options = RunnerOptions::default();
    let mut figures = Figures::default();
    for game in GameKind::ALL {
        let bot = builtin::names(game)[0];
        let seats = *AnyGame::seats(game).start();
        let players: Vec<String> = (0..seats).map(|seat| format!("{bot}-{seat}")).collect();
        let bots: Vec<_> = players
            .iter()
            .map(|name| BotSpec::new(name.as_str(), BotLaunch::Builtin(bot.to_owned()), Transport::Stdio))
            .collect();
        let setup = MatchSetup::new(game, &serde_json::Value::Null, None, SEED, players)?;
        let (mut matches, mut steps) = (0u64, 0u64);
        let started = Instant::now();
        while matches == 0 || started.elapsed() < budget {
            let io =
                MatchIo { replay: tokio::io::sink(), on_step: |_, _| {}, stop: std::future::pending(), live: None };
            let play =
                play_match(&LocalSandbox, "bench-engine", setup.clone(), MoveClock::default(), &bots, &options, io);
            steps += runtime.block_on(play)?.steps;
            matches += 1;
        }
        let seconds = started.elapsed().as_secs_f64();
        let name = game.name();
        figures.put(&format!("{name}.bot"), bot, bot.to_owned());
        figures.put(&format!("{name}.matches"), matches, matches.to_string());
        figures.number(&format!("{name}.turns_per_second"), steps as f64 / seconds, "turns/s");
    }
    Ok(figures)
}
