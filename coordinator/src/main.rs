//! `farm-coordinator`: turns tournaments into matches and collects their results.

use clap::Parser;

#[derive(Parser)]
#[command(name = "farm-coordinator", version, about = "Runs bot tournaments on a matchfarm.")]
struct Cli {}

fn main() {
    Cli::parse();
    println!("farm-coordinator {}", farm_coordinator::VERSION);
}
