//! What each command does; `main.rs` has their arguments and picks one.

pub mod bots;
mod display;
pub mod run;
pub mod season;
pub mod serve;
pub mod tournaments;
pub mod users;
pub mod view;
pub mod webhooks;
pub mod workers;

use anyhow::Result;
use farm_coordinator::client::Client;

use crate::ApiArgs;

impl ApiArgs {
    /// A client of the coordinator at `--url`, with `--token` if given.
    fn client(&self) -> Result<Client> {
        Ok(Client::new(&self.url, self.token.clone())?)
    }
}
