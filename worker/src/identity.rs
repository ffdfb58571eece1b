//! Which broker identity a worker signs in as, when it is given a directory of them
//! (`identity_dir`): each file is a worker's name, holding its password (made by
//! `farm-coordinator workers add`).
//!
//! A worker takes the identity named after its `worker_id` if there is one: a
//! Kubernetes StatefulSet's pods have stable names, and each has a file. Otherwise
//! it claims one: compose's replicas have names nobody knows ahead, so each takes the
//! first identity not claimed yet, by making the directory `.claims/NAME` (atomic:
//! exactly one replica makes it) and writing its own `worker_id` there, so that the
//! same container, restarted, takes the same identity again. The worker's id becomes
//! the identity's name; its `amqp_url` signs in with it.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::WorkerConfig;

/// Where claims are kept, in the identity directory.
const CLAIMS: &str = ".claims";
/// What a claim holds: the `worker_id` of the worker that made it.
const CLAIMANT: &str = "worker";

/// Why no identity could be taken.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The directory (or a file in it) cannot be read or written.
    #[error("identity_dir {path}: {source}")]
    Io {
        /// What was read or written.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Every identity is someone else's.
    #[error("identity_dir {dir}: every one of its {count} identities is claimed by another worker")]
    AllClaimed {
        /// The directory.
        dir: PathBuf,
        /// How many identities it holds.
        count: usize,
    },
    /// An identity's file holds no password a URL carries as it is.
    #[error(
        "identity_dir: {0} holds no password of letters, digits, '-', '_', '.' and '~' (farm-coordinator workers add \
         makes them)"
    )]
    Password(PathBuf),
    /// The AMQP URL cannot take a user.
    #[error("amqp_url is not an AMQP URL (amqp://HOST:PORT/VHOST)")]
    NotAnAmqpUrl,
}

/// Signs `config` in as an identity of its `identity_dir`, if it has one: its
/// `worker_id` becomes the identity's name and its `amqp_url` carries the identity's
/// user and password. Without a directory, nothing changes.
pub fn sign_in(config: &mut WorkerConfig) -> Result<(), IdentityError> {
    let Some(dir) = config.identity_dir.clone() else { return Ok(()) };
    let names = identities(&dir)?;
    let name = if names.contains(&config.worker_id) {
        config.worker_id.clone()
    } else {
        claim(&dir, &names, &config.worker_id)?
    };
    let path = dir.join(&name);
    let password = std::fs::read_to_string(&path).map_err(|source| IdentityError::Io { path: path.clone(), source })?;
    let password = password.trim();
    // What `workers add` makes (hex), or any password a URL carries as it is.
    if password.is_empty() || !password.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte)) {
        return Err(IdentityError::Password(path));
    }
    config.amqp_url = with_user(&config.amqp_url, &name, password)?;
    config.worker_id = name;
    Ok(())
}

/// The identities in `dir`: its files whose names a worker may have, sorted.
fn identities(dir: &Path) -> Result<Vec<String>, IdentityError> {
    let io = |source| IdentityError::Io { path: dir.to_owned(), source };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let Ok(name) = entry.file_name().into_string() else { continue };
        // Kubernetes mounts a Secret's keys as links into a hidden directory.
        let is_file = std::fs::metadata(entry.path()).is_ok_and(|metadata| metadata.is_file());
        if is_file && farm_proto::is_worker_name(&name) {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// The identity of `names` that `claimant` claimed before, or the first it can claim now.
fn claim(dir: &Path, names: &[String], claimant: &str) -> Result<String, IdentityError> {
    let claims = dir.join(CLAIMS);
    std::fs::create_dir_all(&claims).map_err(|source| IdentityError::Io { path: claims.clone(), source })?;
    // Its own claim first: a restarted worker keeps its identity.
    for name in names {
        if std::fs::read_to_string(claims.join(name).join(CLAIMANT)).is_ok_and(|who| who.trim() == claimant) {
            return Ok(name.clone());
        }
    }
    for name in names {
        let claim = claims.join(name);
        match std::fs::create_dir(&claim) {
            Ok(()) => {
                let path = claim.join(CLAIMANT);
                std::fs::write(&path, claimant).map_err(|source| IdentityError::Io { path, source })?;
                return Ok(name.clone());
            }
            Err(error) if error.kind() == ErrorKind::AlreadyExists => {}
            Err(source) => return Err(IdentityError::Io { path: claim, source }),
        }
    }
    Err(IdentityError::AllClaimed { dir: dir.to_owned(), count: names.len() })
}

/// `url` signed in as `user` with `password` (any user and password it had replaced).
fn with_user(url: &str, user: &str, password: &str) -> Result<String, IdentityError> {
    let (scheme, rest) = url.split_once("://").ok_or(IdentityError::NotAnAmqpUrl)?;
    if !scheme.starts_with("amqp") {
        return Err(IdentityError::NotAnAmqpUrl);
    }
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let host = match rest[..authority_end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    Ok(format!("{scheme}://{user}:{password}@{host}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, worker_id: &str) -> WorkerConfig {
        WorkerConfig {
            worker_id: worker_id.to_owned(),
            amqp_url: "amqp://rabbitmq:5672/%2f".to_owned(),
            identity_dir: Some(dir.to_owned()),
            ..WorkerConfig::default()
        }
    }

    #[test]
    fn a_worker_takes_its_named_identity_or_claims_one_and_keeps_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, password) in [("farm-worker-1", "p1\n"), ("farm-worker-2", "p~2"), ("not a name", "x")] {
            std::fs::write(dir.path().join(name), password).expect("write");
        }
        // Named: a StatefulSet's pod.
        let mut named = config(dir.path(), "farm-worker-2");
        sign_in(&mut named).expect("signed in");
        assert_eq!(named.amqp_url, "amqp://farm-worker-2:p~2@rabbitmq:5672/%2f");

        // Claimed: compose's replicas, one identity each, the same again after a restart.
        let mut first = config(dir.path(), "c0ffee");
        sign_in(&mut first).expect("claimed");
        assert_eq!(
            (first.worker_id.as_str(), first.amqp_url.as_str()),
            ("farm-worker-1", "amqp://farm-worker-1:p1@rabbitmq:5672/%2f")
        );
        let mut second = config(dir.path(), "beef");
        sign_in(&mut second).expect("claimed");
        assert_eq!(second.worker_id, "farm-worker-2");
        let mut restarted = config(dir.path(), "c0ffee");
        sign_in(&mut restarted).expect("its own claim");
        assert_eq!(restarted.worker_id, "farm-worker-1");
        let error = sign_in(&mut config(dir.path(), "third")).expect_err("none left");
        assert!(error.to_string().contains("every one of its 2 identities is claimed"), "{error}");

        // Without a directory, nothing changes.
        let mut plain = WorkerConfig { worker_id: "w".into(), ..WorkerConfig::default() };
        let before = plain.clone();
        sign_in(&mut plain).expect("nothing to do");
        assert_eq!(plain, before);
        assert_eq!(
            with_user("amqps://old:pw@broker:5671/farm", "w", "p").expect("url"),
            "amqps://w:p@broker:5671/farm"
        );
        assert!(with_user("http://x", "w", "p").is_err());
        std::fs::write(dir.path().join("farm-worker-3"), "p@ss/word").expect("write");
        let error = sign_in(&mut config(dir.path(), "farm-worker-3")).expect_err("a password a URL cannot carry");
        assert!(error.to_string().contains("holds no password of letters"), "{error}");
    }
}
