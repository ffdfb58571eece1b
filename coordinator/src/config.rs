//! The coordinator's configuration: defaults, then a TOML file, then `FARM_*`
//! environment variables (`FARM_API_TOKEN`, `FARM_STORAGE__KIND=s3`), then
//! command-line flags, layered as the worker's are. Unknown keys are errors.

use std::path::{Path, PathBuf};

use farm_runtime::config::{ConfigError, load_layered};
use farm_runtime::storage::StorageConfig;
use farm_worker::SandboxKind;
use serde::{Deserialize, Serialize};

use crate::accounts::Quotas;
use crate::audits::AuditSettings;
use crate::leases::LeaseSettings;
use crate::live::LiveSettings;
use crate::observations::ObservationLimits;
use crate::token;
use crate::uploads::UploadLimits;
use crate::versions::ValidationSettings;
use crate::webhooks::WebhookSettings;
use farm_proto::limits;

/// Everything `farm-coordinator serve` can be told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CoordinatorConfig {
    /// Address of the HTTP API, `/metrics` and `/healthz`.
    pub listen: String,
    /// The bearer token every write to the API must carry. Required: `serve` refuses
    /// to start without one, or with one weaker than 128 bits ([`token::check_strength`]). Prefer the `FARM_API_TOKEN` variable to a file.
    pub api_token: String,
    /// The RabbitMQ URL.
    pub amqp_url: String,
    /// Redeliveries of one job before it is dead-lettered (must match the workers';
    /// both default to [`limits::DELIVERY_LIMIT`]).
    pub delivery_limit: u32,
    /// The SQLite ledger.
    pub ledger_path: PathBuf,
    /// Where workers store replays and logs (the API streams them from there).
    pub storage: StorageConfig,
    /// Whether workers run bots from their `image` (docker) or their `command` (local).
    pub bot_launch: SandboxKind,
    /// Jobs published per confirm round trip.
    pub publish_batch: u32,
    /// The most jobs in the queue or being played at once: the rest wait in the
    /// ledger, so a million-job tournament costs neither the broker nor the
    /// coordinator memory.
    pub max_outstanding: u64,
    /// The most published jobs waiting in RabbitMQ for a worker to take them. The
    /// publisher shares the farm among users as it publishes ([`crate::fair_share`]),
    /// so what waits in the queue is played first whoever's it is: a short queue
    /// (a few times the jobs the workers take at once) lets shares act at once.
    pub queue_ahead: u64,
    /// The most jobs one submitted tournament may plan (fixtures × maps ×
    /// `games_per_pairing`); a bigger one is refused with 422, naming this key.
    pub max_tournament_jobs: u64,
    /// How much replay re-simulation the observations route does (`[observations]`:
    /// concurrent, cache_mib, deadline_secs).
    pub observations: ObservationLimits,
    /// How many bots' source uploads are taken at once, and how fast they must arrive
    /// (`[uploads]`: concurrent, per_user, min_bytes_per_sec, deadline_secs; see
    /// [`crate::uploads`]).
    pub uploads: UploadLimits,
    /// When a published job unanswered for too long is published again (`[leases]`:
    /// margin_secs, sweep_secs, batch; see [`crate::leases`]).
    pub leases: LeaseSettings,
    /// Which completed matches other workers audit, and when a worker is quarantined
    /// (`[audits]`: fraction, min_audits, max_mismatch_rate, min_matches,
    /// max_fault_rate, sweep_secs, batch; see [`crate::audits`]).
    pub audits: AuditSettings,
    /// What one user (not an admin) may have going at once (`[quotas]`:
    /// max_running_tournaments, max_queued_jobs, max_webhooks, max_tokens).
    pub quotas: Quotas,
    /// How webhooks are delivered (`[webhooks]`: allow_private_addresses, max_attempts,
    /// first_retry_secs, max_retry_secs, timeout_secs, sweep_secs; see [`crate::webhooks`]).
    pub webhooks: WebhookSettings,
    /// How submitted bots' new versions are validated (`[validation]`).
    pub validation: ValidationSettings,
    /// How many may watch matches live, and how much is kept for them (`[live]`:
    /// viewers_per_match, viewers, streams, buffer_mib; see [`crate::live`]).
    pub live: LiveSettings,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            listen: "127.0.0.1:8000".to_owned(),
            api_token: String::new(),
            amqp_url: "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned(),
            delivery_limit: limits::DELIVERY_LIMIT.default,
            ledger_path: PathBuf::from("farm-data/ledger.sqlite"),
            storage: StorageConfig::default(),
            bot_launch: SandboxKind::Docker,
            publish_batch: limits::PUBLISH_BATCH.default,
            max_outstanding: limits::MAX_OUTSTANDING.default,
            queue_ahead: limits::QUEUE_AHEAD.default,
            max_tournament_jobs: limits::MAX_TOURNAMENT_JOBS.default,
            observations: ObservationLimits::default(),
            uploads: UploadLimits::default(),
            leases: LeaseSettings::default(),
            audits: AuditSettings::default(),
            quotas: Quotas::default(),
            webhooks: WebhookSettings::default(),
            validation: ValidationSettings::default(),
            live: LiveSettings::default(),
        }
    }
}

impl CoordinatorConfig {
    /// Layers defaults, `file`, the `FARM_*` entries of `env` and `overrides`.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        overrides: &[(&str, String)],
    ) -> Result<Self, ConfigError> {
        let config: CoordinatorConfig = load_layered(file, env, overrides)?;
        if let Err(weak) = token::check_strength(&config.api_token) {
            return Err(ConfigError::invalid(format!(
                "api_token (FARM_API_TOKEN or --api-token) must be set and strong: {weak}"
            )));
        }
        limits::PUBLISH_BATCH.check(config.publish_batch).map_err(ConfigError::invalid)?;
        limits::MAX_OUTSTANDING.check(config.max_outstanding).map_err(ConfigError::invalid)?;
        limits::QUEUE_AHEAD.check(config.queue_ahead).map_err(ConfigError::invalid)?;
        limits::MAX_TOURNAMENT_JOBS.check(config.max_tournament_jobs).map_err(ConfigError::invalid)?;
        limits::DELIVERY_LIMIT.check(config.delivery_limit).map_err(ConfigError::invalid)?;
        if farm_runtime::queue::broker_user(&config.amqp_url).is_none() {
            return Err(ConfigError::invalid("amqp_url must be an AMQP URL (amqp://USER:PASSWORD@HOST:PORT/VHOST)"));
        }
        farm_runtime::secrets::check_chosen_secrets(&config.amqp_url, &config.storage)?;
        config.webhooks.check().map_err(ConfigError::invalid)?;
        config.validation.check().map_err(ConfigError::invalid)?;
        config.observations.check().map_err(ConfigError::invalid)?;
        config.uploads.check().map_err(ConfigError::invalid)?;
        config.leases.check().map_err(ConfigError::invalid)?;
        config.audits.check().map_err(ConfigError::invalid)?;
        config.live.check().map_err(ConfigError::invalid)?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token as `openssl rand -hex 16` prints one.
    const TOKEN: &str = "9f2c4e1a7b3d8065c1e4f9a2b7d30e58";

    #[test]
    fn a_token_is_required_and_layers_apply() {
        let error = CoordinatorConfig::load(None, Vec::new(), &[]).expect_err("no token");
        assert!(error.to_string().contains("api_token (FARM_API_TOKEN or --api-token) must be set"), "{error}");
        for weak in ["0123456789abcdef", "change-me", "0123456789abcdef0123456789abcdef"] {
            let env = vec![("FARM_API_TOKEN".to_owned(), weak.to_owned())];
            let error = CoordinatorConfig::load(None, env, &[]).expect_err("a weak token");
            assert!(error.to_string().contains("must be set and strong"), "{weak}: {error}");
        }
        let env = vec![
            ("FARM_API_TOKEN".to_owned(), TOKEN.to_owned()),
            ("FARM_MAX_OUTSTANDING".to_owned(), "7".to_owned()),
            ("FARM_SLOTS".to_owned(), "3".to_owned()),
        ];
        let config = CoordinatorConfig::load(None, env, &[("bot_launch", "local".to_owned())]).expect("valid");
        assert_eq!(config.max_outstanding, 7);
        assert_eq!(config.bot_launch, SandboxKind::Local);
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("c.toml");
        std::fs::write(&file, format!("api_token = \"{TOKEN}\"\nlisten_on = 1\n")).expect("write");
        let error = CoordinatorConfig::load(Some(&file), Vec::new(), &[]).expect_err("unknown key");
        assert!(error.to_string().contains("listen_on"), "{error}");
    }

    #[test]
    fn the_example_file_holds_the_defaults() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/coordinator.toml");
        let token = ("FARM_API_TOKEN".to_owned(), TOKEN.to_owned());
        let config = CoordinatorConfig::load(Some(&file), vec![token], &[]).expect("the example loads");
        assert_eq!(config, CoordinatorConfig { api_token: TOKEN.into(), ..CoordinatorConfig::default() });
    }
}
