//! Turns per second of each game with its built-in bots: whole matches, set up and
//! played through the public engine API the way the worker's runner drives them
//! ([`MatchSetup::new`], [`Match::new`], `to_act`, the bots' replies read from the
//! typed match, `submit`, the replay's header and footer lines). Each match is fixed: the game's default rules,
//! a fixed seed, and the map that seed gives (Ostibot's default map). Throughput is in
//! steps: `cargo bench -p farm-engine` reports steps per second.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use farm_engine::builtin::{self, BuiltinBot};
use farm_engine::{AnyGame, BotReply, GameKind, Match, MatchSetup};

/// The match seed of every benchmark: it fixes the generated maps and all randomness.
const SEED: u64 = 20_240_601;

/// The fixed setup of `game`: its smallest number of seats, default rules and map.
fn setup(game: GameKind) -> MatchSetup {
    let players = (0..*AnyGame::seats(game).start()).map(|seat| format!("p{seat}")).collect();
    MatchSetup::new(game, &serde_json::Value::Null, None, SEED, players).expect("the default setup is valid")
}

/// Plays `setup` to its end with the built-in bot `bot` in every seat; returns the
/// steps played and the replay's size in bytes (so that the lines are not optimised
/// away).
fn play(setup: &MatchSetup, bot: &str) -> (u64, usize) {
    let mut bots: Vec<Box<dyn BuiltinBot>> = (0..setup.players.len())
        .map(|seat| builtin::create(setup.game, bot, setup.seed, seat).expect("a built-in bot of the game"))
        .collect();
    let mut game = Match::new(setup.clone()).expect("a valid setup");
    let mut replay_bytes = game.header_line().len();
    while !game.is_over() {
        let replies =
            game.to_act().into_iter().map(|seat| (seat, BotReply::Line(bots[seat].reply(game.game(), seat)))).collect();
        replay_bytes += game.submit(replies).expect("one reply per seat asked").len();
    }
    replay_bytes += game.footer_line().len();
    (game.steps(), replay_bytes)
}

fn whole_matches(c: &mut Criterion) {
    let mut group = c.benchmark_group("match");
    // A match takes milliseconds to a second: few samples keep `cargo bench` short.
    group.sample_size(10);
    for game in GameKind::ALL {
        let setup = setup(game);
        for bot in builtin::names(game) {
            let (steps, _) = play(&setup, bot);
            group.throughput(Throughput::Elements(steps));
            group.bench_with_input(BenchmarkId::new(game.name(), bot), &setup, |b, setup| b.iter(|| play(setup, bot)));
        }
    }
    group.finish();
}

criterion_group!(benches, whole_matches);
criterion_main!(benches);
