//! The matchfarm coordinator: tournaments, the ledger, ratings and the HTTP API.
//!
//! It only reports its version so far; tournaments arrive with the coordinator issue.
#![deny(missing_docs)]

/// This build's version, as the binary prints it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
