//! The layered configuration loader both services use: defaults, then a TOML file,
//! then `FARM_*` environment variables (`FARM_SLOTS=4`, `FARM_STORAGE__KIND=s3`: a double
//! underscore goes one table down), then command-line flags. Unknown keys are errors
//! that name the key. Each service's own keys live in its crate (`WorkerConfig`,
//! `CoordinatorConfig`); the object-storage flags both take are [`StorageArgs`].

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The object-storage flags both services' `serve` commands take, flattened into
/// their arguments; [`StorageArgs::overrides`] turns them into configuration keys.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StorageArgs {
    /// Store objects in this local directory [default: farm-data/objects].
    #[arg(long, value_name = "DIR", conflicts_with = "s3_bucket")]
    pub storage_dir: Option<String>,
    /// Store objects in this S3 bucket. Credentials come from the config file,
    /// FARM_STORAGE__ACCESS_KEY and FARM_STORAGE__SECRET_KEY, or AWS_* variables.
    #[arg(long, value_name = "BUCKET")]
    pub s3_bucket: Option<String>,
    /// The S3 endpoint URL, for S3-compatible services.
    #[arg(long, value_name = "URL", requires = "s3_bucket")]
    pub s3_endpoint: Option<String>,
    /// The S3 region [default: us-east-1].
    #[arg(long, requires = "s3_bucket")]
    pub s3_region: Option<String>,
    /// How long an S3 request retries before it counts as failed [default: 60].
    #[arg(long, value_name = "SECS", requires = "s3_bucket")]
    pub s3_retry_secs: Option<u64>,
}

impl StorageArgs {
    /// The flags that were given, as `storage.*` configuration keys: a directory
    /// selects local storage, a bucket S3.
    pub fn overrides(&self) -> Overrides {
        let mut overrides = Overrides::default();
        if let Some(dir) = &self.storage_dir {
            overrides.set("storage.kind", Some("local")).set("storage.path", Some(dir));
        }
        if let Some(bucket) = &self.s3_bucket {
            overrides
                .set("storage.kind", Some("s3"))
                .set("storage.bucket", Some(bucket))
                .set("storage.endpoint", self.s3_endpoint.as_ref())
                .set("storage.region", self.s3_region.as_ref())
                .set("storage.retry_secs", self.s3_retry_secs);
        }
        overrides
    }
}

/// The command-line flags a service was given, as `(key, value)` configuration pairs
/// for [`load_layered`]: a flag left out makes no pair, so the layers below it stand.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Overrides(Vec<(&'static str, String)>);

impl Overrides {
    /// `key` (dotted for a nested one) set to `value`, if the flag was given.
    pub fn set(&mut self, key: &'static str, value: Option<impl ToString>) -> &mut Self {
        if let Some(value) = value {
            self.0.push((key, value.to_string()));
        }
        self
    }

    /// The pairs, as [`load_layered`] takes them.
    pub fn pairs(&self) -> &[(&'static str, String)] {
        &self.0
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("configuration: {0}")]
pub struct ConfigError(#[from] config::ConfigError);

impl ConfigError {
    /// A value that parsed but cannot be used; `problem` names the key.
    pub fn invalid(problem: impl Into<String>) -> Self {
        ConfigError(config::ConfigError::Message(problem.into()))
    }
}

/// Layers a service's configuration `T`: its `Default`, then `file` (if any), then the
/// `FARM_*` entries of `env` that name one of its keys, then `overrides` (`(key, value)`
/// pairs from the command line, dotted for nested keys). Unknown keys are errors if
/// `T` denies them. A key named `storage` is a [`StorageConfig`](crate::storage::StorageConfig): see below.
pub fn load_layered<T: Serialize + DeserializeOwned + Default>(
    file: Option<&Path>,
    env: impl IntoIterator<Item = (String, String)>,
    overrides: &[(&str, String)],
) -> Result<T, ConfigError> {
    let mut defaults = match serde_json::to_value(T::default()) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let known: Vec<String> = defaults.keys().map(|key| key.to_uppercase()).collect();
    // Storage is one of several kinds with different keys, so it has no defaults
    // layer (a local default merged into an S3 table would leave a stray `path`):
    // the struct's default applies when no layer names storage, and layers that
    // do are merged, so `kind` must come with the other storage keys.
    defaults.remove("storage");
    // Only variables naming one of our keys: FARM_SEED, FARM_TEST_* and the like
    // belong to others.
    let env: HashMap<String, String> = env
        .into_iter()
        .filter(|(name, _)| {
            name.strip_prefix("FARM_")
                .is_some_and(|rest| known.iter().any(|key| rest == key || rest.starts_with(&format!("{key}__"))))
        })
        .collect();
    let mut builder = config::Config::builder().add_source(config::Config::try_from(&defaults)?);
    if let Some(path) = file {
        builder = builder.add_source(config::File::from(path).format(config::FileFormat::Toml).required(true));
    }
    builder = builder.add_source(
        config::Environment::with_prefix("FARM")
            .prefix_separator("_")
            .separator("__")
            // Values stay strings until deserialized, so FARM_WORKER_ID=007 stays "007".
            .source(Some(env)),
    );
    for (key, value) in overrides {
        builder = builder.set_override(*key, value.clone())?;
    }
    Ok(builder.build()?.try_deserialize()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_flags_select_the_kind_and_pass_only_what_was_given() {
        let local = StorageArgs { storage_dir: Some("/d".into()), ..StorageArgs::default() };
        assert_eq!(
            local.overrides().pairs(),
            [("storage.kind", "local".to_owned()), ("storage.path", "/d".to_owned())]
        );
        let s3 = StorageArgs { s3_bucket: Some("b".into()), s3_retry_secs: Some(5), ..StorageArgs::default() };
        assert_eq!(
            s3.overrides().pairs(),
            [
                ("storage.kind", "s3".to_owned()),
                ("storage.bucket", "b".to_owned()),
                ("storage.retry_secs", "5".to_owned())
            ]
        );
        assert!(StorageArgs::default().overrides().pairs().is_empty());
        let mut flags = Overrides::default();
        flags.set("slots", Some(3)).set("amqp_url", None::<&str>).set("sandbox", Some("local"));
        assert_eq!(flags.pairs(), [("slots", "3".to_owned()), ("sandbox", "local".to_owned())]);
    }
}
