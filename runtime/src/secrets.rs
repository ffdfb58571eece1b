//! Secrets an operator must choose: a value holding a word of the project's own example
//! values (the deploy files' `PLACEHOLDER-...`, a README's `change-me`) was copied from a
//! document everyone can read, so it is no secret, whatever its length. Both services
//! refuse to start with one ([`check_chosen_secrets`]), and the coordinator's API token
//! check uses the same words.

use crate::config::ConfigError;
use crate::storage::StorageConfig;

/// Words of the placeholder values in the project's documents and deploy files
/// (`PLACEHOLDER-change-me-api-token` in deploy/k8s/secret.yaml). The farm's S3 server
/// (deploy/images/s3) refuses the same words.
pub const EXAMPLE_WORDS: &[&str] = &["placeholder", "change-me", "changeme", "change_me", "example"];

/// The example word `value` holds, if any (compared without case).
pub fn example_word(value: &str) -> Option<&'static str> {
    let lower = value.to_ascii_lowercase();
    EXAMPLE_WORDS.iter().copied().find(|word| lower.contains(word))
}

/// `Ok` unless the secret `value` holds an example word; the error names `what` (the
/// setting and where it is set) and the word.
pub fn check_chosen(what: &str, value: &str) -> Result<(), ConfigError> {
    match example_word(value) {
        None => Ok(()),
        Some(word) => Err(ConfigError::invalid(format!(
            "{what} holds \"{word}\", a word of the documents' example values: choose a secret of your own \
             (openssl rand -hex 24)"
        ))),
    }
}

/// The password of an AMQP URL (`amqp://USER:PASSWORD@HOST/VHOST`), percent-decoded.
fn amqp_password(url: &str) -> Option<String> {
    url.parse::<lapin::uri::AMQPUri>().ok().map(|uri| uri.authority.userinfo.password)
}

/// Checks the secrets both services hold: the broker password in `amqp_url` and, with
/// S3 storage, its secret key.
pub fn check_chosen_secrets(amqp_url: &str, storage: &StorageConfig) -> Result<(), ConfigError> {
    if let Some(password) = amqp_password(amqp_url) {
        check_chosen("amqp_url's password (FARM_AMQP_URL)", &password)?;
    }
    if let StorageConfig::S3 { secret_key, .. } = storage {
        check_chosen("storage.secret_key (FARM_STORAGE__SECRET_KEY)", secret_key)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(secret_key: &str) -> StorageConfig {
        StorageConfig::S3 {
            endpoint: "http://127.0.0.1:9000".to_owned(),
            bucket: "matchfarm".to_owned(),
            region: "us-east-1".to_owned(),
            access_key: "farm".to_owned(),
            secret_key: secret_key.to_owned(),
            retry_secs: 60,
        }
    }

    #[test]
    fn the_deploy_files_placeholders_are_refused_and_named() {
        let url = "amqp://farm-coordinator:coordinator-placeholder@rabbitmq:5672/%2f";
        let refused = check_chosen_secrets(url, &StorageConfig::default()).expect_err("a placeholder password");
        assert!(
            refused.to_string().contains("FARM_AMQP_URL") && refused.to_string().contains("placeholder"),
            "{refused}"
        );
        let refused = check_chosen_secrets("amqp://farm:9f2c4e1a@h/%2f", &s3("PLACEHOLDER-secret-key"))
            .expect_err("a placeholder S3 key");
        assert!(refused.to_string().contains("FARM_STORAGE__SECRET_KEY"), "{refused}");
        // Percent-encoded in the URL, decoded before the check.
        assert!(check_chosen_secrets("amqp://farm:change%2Dme@h/%2f", &StorageConfig::default()).is_err());
    }

    #[test]
    fn chosen_secrets_pass() {
        assert!(check_chosen_secrets("amqp://farm:9f2c4e1a7b3d@127.0.0.1:5672/%2f", &s3("farmtestsecret")).is_ok());
        assert!(check_chosen_secrets("amqp://guest:guest@127.0.0.1:5672/%2f", &StorageConfig::default()).is_ok());
    }
}
