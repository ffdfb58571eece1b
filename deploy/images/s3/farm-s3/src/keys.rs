//! The server's keys: at most one pair per role, read from the environment (never from
//! the command line, which every user of the machine sees in `ps`).

use std::collections::HashMap;
use std::env::VarError;

use s3s::S3Result;
use s3s::auth::{S3Auth, SecretKey};

/// What a key may do (the table is in policy.rs, which checks every request by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Everything: the operators' key, and the tests' own.
    Admin,
    /// The coordinator: reads and lists everything, writes bots' sources.
    Coordinator,
    /// A worker: writes its matches' objects and build logs, reads replays and sources.
    Worker,
}

impl Role {
    /// Every role, in the order their variables are read.
    pub const ALL: [Role; 3] = [Role::Admin, Role::Coordinator, Role::Worker];

    /// Its name, in logs.
    pub fn name(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Coordinator => "coordinator",
            Role::Worker => "worker",
        }
    }

    /// The variables of its pair: `S3_<ROLE>_ACCESS_KEY` and `S3_<ROLE>_SECRET_KEY`.
    pub fn variables(self) -> (&'static str, &'static str) {
        match self {
            Role::Admin => ("S3_ADMIN_ACCESS_KEY", "S3_ADMIN_SECRET_KEY"),
            Role::Coordinator => ("S3_COORDINATOR_ACCESS_KEY", "S3_COORDINATOR_SECRET_KEY"),
            Role::Worker => ("S3_WORKER_ACCESS_KEY", "S3_WORKER_SECRET_KEY"),
        }
    }
}

/// Words of the placeholder values in the farm's documents and deploy files: a secret
/// holding one was copied from a document everyone can read. This mirrors
/// `farm_runtime::secrets::EXAMPLE_WORDS` (runtime/src/secrets.rs), which the
/// coordinator and the workers refuse; keep the two lists the same.
const EXAMPLE_WORDS: &[&str] = &["placeholder", "change-me", "changeme", "change_me", "example"];

/// Why the keys in the environment are not usable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeysError {
    /// No role has a key.
    #[error(
        "no key is set: set at least one pair of S3_ADMIN_ACCESS_KEY/S3_ADMIN_SECRET_KEY, \
         S3_COORDINATOR_ACCESS_KEY/S3_COORDINATOR_SECRET_KEY or S3_WORKER_ACCESS_KEY/S3_WORKER_SECRET_KEY"
    )]
    None,
    /// One half of a pair is set (non-empty), the other is not.
    #[error("{set} is set but {missing} is not: a key is an access key and a secret key")]
    HalfPair {
        /// The variable that is set.
        set: &'static str,
        /// The one that is not.
        missing: &'static str,
    },
    /// A variable is not valid Unicode.
    #[error("{0} is not valid UTF-8")]
    NotUnicode(&'static str),
    /// A secret holds a word of the documents' example values.
    #[error(
        "{variable} holds \"{word}\", a word of the documents' example values: choose a secret of your own \
         (openssl rand -hex 24)"
    )]
    Placeholder {
        /// The variable.
        variable: &'static str,
        /// The word.
        word: &'static str,
    },
    /// Two roles were given the same access key: a request could not say which it is.
    #[error("{0} and {1} hold the same access key: each role needs its own")]
    SharedAccessKey(&'static str, &'static str),
}

/// A role's key.
#[derive(Debug, Clone)]
struct Key {
    role: Role,
    secret_key: SecretKey,
}

/// The keys the server accepts, by access key. As the server's [`S3Auth`] it gives s3s
/// the secret that checks a request's signature.
#[derive(Debug, Clone)]
pub struct Keys {
    by_access_key: HashMap<String, Key>,
}

impl Keys {
    /// Reads every role's pair through `lookup` (`std::env::var` in the server). An empty
    /// variable counts as unset, so that compose can pass an optional one through.
    pub fn from_env(lookup: impl Fn(&str) -> Result<String, VarError>) -> Result<Keys, KeysError> {
        let read = |variable: &'static str| match lookup(variable) {
            Ok(value) if !value.is_empty() => Ok(Some(value)),
            Ok(_) | Err(VarError::NotPresent) => Ok(None),
            Err(VarError::NotUnicode(_)) => Err(KeysError::NotUnicode(variable)),
        };
        let mut by_access_key: HashMap<String, Key> = HashMap::new();
        for role in Role::ALL {
            let (access_variable, secret_variable) = role.variables();
            let (access_key, secret_key) = match (read(access_variable)?, read(secret_variable)?) {
                (None, None) => continue,
                (Some(access_key), Some(secret_key)) => (access_key, secret_key),
                (Some(_), None) => return Err(KeysError::HalfPair { set: access_variable, missing: secret_variable }),
                (None, Some(_)) => return Err(KeysError::HalfPair { set: secret_variable, missing: access_variable }),
            };
            let lower = secret_key.to_ascii_lowercase();
            if let Some(word) = EXAMPLE_WORDS.iter().copied().find(|word| lower.contains(word)) {
                return Err(KeysError::Placeholder { variable: secret_variable, word });
            }
            if let Some(other) = by_access_key.get(&access_key) {
                return Err(KeysError::SharedAccessKey(other.role.variables().0, access_variable));
            }
            by_access_key.insert(access_key, Key { role, secret_key: SecretKey::from(secret_key) });
        }
        if by_access_key.is_empty() {
            return Err(KeysError::None);
        }
        Ok(Keys { by_access_key })
    }

    /// The role of `access_key`, if it is one of the keys.
    pub fn role(&self, access_key: &str) -> Option<Role> {
        self.by_access_key.get(access_key).map(|key| key.role)
    }

    /// The roles that have a key, for the start-up log (no key or secret in it).
    pub fn roles(&self) -> Vec<&'static str> {
        Role::ALL
            .into_iter()
            .filter(|role| self.by_access_key.values().any(|key| key.role == *role))
            .map(Role::name)
            .collect()
    }
}

#[async_trait::async_trait]
impl S3Auth for Keys {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        match self.by_access_key.get(access_key) {
            Some(key) => Ok(key.secret_key.clone()),
            None => {
                tracing::warn!(access_key, "refused: no such access key");
                Err(s3s::s3_error!(InvalidAccessKeyId))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(&str, &str)]) -> Result<Keys, KeysError> {
        let environment: HashMap<String, String> =
            pairs.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect();
        Keys::from_env(|name| environment.get(name).cloned().ok_or(VarError::NotPresent))
    }

    #[test]
    fn each_pair_set_is_a_key_of_its_role() {
        let keys = keys(&[
            ("S3_COORDINATOR_ACCESS_KEY", "farm-coordinator"),
            ("S3_COORDINATOR_SECRET_KEY", "9f2c4e1a7b3d"),
            ("S3_WORKER_ACCESS_KEY", "farm-worker"),
            ("S3_WORKER_SECRET_KEY", "0b8d6e2f4a1c"),
            ("S3_ADMIN_ACCESS_KEY", ""),
            ("S3_ADMIN_SECRET_KEY", ""),
        ])
        .expect("keys");
        assert_eq!(keys.role("farm-coordinator"), Some(Role::Coordinator));
        assert_eq!(keys.role("farm-worker"), Some(Role::Worker));
        assert_eq!(keys.role(""), None, "empty variables are unset");
        assert_eq!(keys.roles(), ["coordinator", "worker"]);
    }

    #[test]
    fn no_key_half_a_key_a_placeholder_or_a_shared_access_key_is_refused_and_named() {
        assert_eq!(keys(&[]).expect_err("no key"), KeysError::None);
        assert_eq!(
            keys(&[("S3_WORKER_ACCESS_KEY", "w")]).expect_err("half"),
            KeysError::HalfPair { set: "S3_WORKER_ACCESS_KEY", missing: "S3_WORKER_SECRET_KEY" }
        );
        let placeholder = keys(&[("S3_ADMIN_ACCESS_KEY", "a"), ("S3_ADMIN_SECRET_KEY", "PLACEHOLDER-secret")])
            .expect_err("placeholder");
        assert_eq!(placeholder, KeysError::Placeholder { variable: "S3_ADMIN_SECRET_KEY", word: "placeholder" });
        assert!(placeholder.to_string().starts_with("S3_ADMIN_SECRET_KEY holds \"placeholder\""), "{placeholder}");
        for word in ["Change-Me", "changeme", "change_me", "my-example-key"] {
            assert!(keys(&[("S3_WORKER_ACCESS_KEY", "w"), ("S3_WORKER_SECRET_KEY", word)]).is_err(), "{word}");
        }
        assert_eq!(
            keys(&[
                ("S3_COORDINATOR_ACCESS_KEY", "same"),
                ("S3_COORDINATOR_SECRET_KEY", "9f2c4e1a7b3d"),
                ("S3_WORKER_ACCESS_KEY", "same"),
                ("S3_WORKER_SECRET_KEY", "0b8d6e2f4a1c"),
            ])
            .expect_err("shared"),
            KeysError::SharedAccessKey("S3_COORDINATOR_ACCESS_KEY", "S3_WORKER_ACCESS_KEY")
        );
    }
}
