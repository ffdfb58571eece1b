//! Workers' broker identities, issued and revoked by the operator through RabbitMQ's
//! management API (`farm-coordinator workers add|list|revoke`).
//!
//! A worker is known to the farm by the RabbitMQ user it signs in as: the coordinator
//! believes an answer only from the user the broker vouches for ([`crate::vouch`]), so
//! each worker has a user of its own, with the workers' rights
//! (`deploy/rabbitmq/permissions.json`, which `deploy/rabbitmq/users.py` reads too) and
//! the tag `farm-worker`. Revoking one deletes its user, which closes its connections:
//! its answers stop at once, and no other worker is touched. `list` counts connections
//! from the management API's statistics, which lag by a few seconds.

use serde::Deserialize;

use crate::client::percent_encode;

/// The tag every worker's user carries: what `list` and `revoke` look for.
pub const WORKER_TAG: &str = "farm-worker";

/// The rights of a worker's user (configure, write, read), as RabbitMQ's regular
/// expressions: one file for this and `users.py`.
const PERMISSIONS: &str = include_str!("../../deploy/rabbitmq/permissions.json");

/// A call to the management API that failed.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The name is not one a worker may have.
    #[error(
        "worker name {0:?}: 1 to 64 of lower-case letters, digits, '-', '_' and '.', starting with a letter or digit"
    )]
    BadName(String),
    /// A user of that name exists already.
    #[error("RabbitMQ has a user {0:?} already: revoke it first, or choose another name")]
    Exists(String),
    /// No worker of that name.
    #[error("RabbitMQ has no worker user {0:?} (workers list shows them)")]
    Missing(String),
    /// The user exists but is no worker's: revoke leaves it alone.
    #[error("RabbitMQ's user {0:?} is not a worker's (it lacks the tag farm-worker): left alone")]
    NotAWorker(String),
    /// The management API could not be reached.
    #[error("RabbitMQ's management API at {url}: {source}")]
    Unreachable {
        /// The URL called.
        url: String,
        /// Why.
        source: reqwest::Error,
    },
    /// The management API refused a call.
    #[error("RabbitMQ's management API refused {what}: HTTP {status}: {body}")]
    Refused {
        /// What was asked.
        what: String,
        /// The HTTP status.
        status: u16,
        /// What it said.
        body: String,
    },
}

/// A worker's user, as `list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerUser {
    /// Its name: the worker's id.
    pub name: String,
    /// Its open connections to the broker.
    pub connections: usize,
}

/// RabbitMQ's management API, called as an administrator, for one virtual host.
pub struct Management {
    base: String,
    user: String,
    password: String,
    vhost: String,
    client: reqwest::Client,
}

#[derive(Deserialize)]
struct User {
    name: String,
    #[serde(default)]
    tags: serde_json::Value,
}

#[derive(Deserialize)]
struct ConnectionRow {
    #[serde(default)]
    user: String,
}

impl Management {
    /// The API at `base` (`http://HOST:15672`), signed in as `user`, for `vhost`.
    pub fn new(base: &str, user: &str, password: &str, vhost: &str) -> Self {
        Management {
            base: base.trim_end_matches('/').to_owned(),
            user: user.to_owned(),
            password: password.to_owned(),
            vhost: vhost.to_owned(),
            client: reqwest::Client::new(),
        }
    }

    /// Makes the worker `name`: a user with a fresh random password (returned, shown
    /// nowhere else), the workers' rights on the virtual host and the tag `farm-worker`.
    pub async fn add_worker(&self, name: &str) -> Result<String, IdentityError> {
        check_name(name)?;
        if self.user_tags(name).await?.is_some() {
            return Err(IdentityError::Exists(name.to_owned()));
        }
        let password = crate::accounts::random_hex::<24>().map_err(|error| IdentityError::Refused {
            what: "a password".to_owned(),
            status: 0,
            body: error.to_string(),
        })?;
        let user = serde_json::json!({ "password": password, "tags": WORKER_TAG });
        self.call(reqwest::Method::PUT, &format!("users/{}", percent_encode(name)), Some(user)).await?;
        let rights: serde_json::Value = serde_json::from_str(PERMISSIONS).expect("permissions.json is JSON");
        let path = format!("permissions/{}/{}", percent_encode(&self.vhost), percent_encode(name));
        self.call(reqwest::Method::PUT, &path, Some(rights["worker"].clone())).await?;
        Ok(password)
    }

    /// The workers' users, by name, with their open connections.
    pub async fn workers(&self) -> Result<Vec<WorkerUser>, IdentityError> {
        let users: Vec<User> = self.get_json("users").await?;
        let connections = self.connections().await?;
        let mut workers: Vec<WorkerUser> = users
            .into_iter()
            .filter(|user| has_worker_tag(&user.tags))
            .map(|user| WorkerUser {
                connections: connections.iter().filter(|connection| connection.user == user.name).count(),
                name: user.name,
            })
            .collect();
        workers.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(workers)
    }

    /// Revokes the worker `name`: deletes its user, and with it (RabbitMQ does so since
    /// 3.7) its connections, so nothing more of it is believed and it cannot sign in
    /// again.
    pub async fn revoke_worker(&self, name: &str) -> Result<(), IdentityError> {
        match self.user_tags(name).await? {
            None => return Err(IdentityError::Missing(name.to_owned())),
            Some(tags) if !has_worker_tag(&tags) => return Err(IdentityError::NotAWorker(name.to_owned())),
            Some(_) => {}
        }
        self.call(reqwest::Method::DELETE, &format!("users/{}", percent_encode(name)), None).await?;
        Ok(())
    }

    /// The tags of the user `name`, or `None` if there is no such user.
    async fn user_tags(&self, name: &str) -> Result<Option<serde_json::Value>, IdentityError> {
        match self.get_json::<User>(&format!("users/{}", percent_encode(name))).await {
            Ok(user) => Ok(Some(user.tags)),
            Err(IdentityError::Refused { status: 404, .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    async fn connections(&self) -> Result<Vec<ConnectionRow>, IdentityError> {
        self.get_json(&format!("vhosts/{}/connections", percent_encode(&self.vhost))).await
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, IdentityError> {
        let body = self.call(reqwest::Method::GET, path, None).await?;
        serde_json::from_str(&body).map_err(|error| IdentityError::Refused {
            what: format!("GET /api/{path}"),
            status: 200,
            body: format!("an answer that is not the JSON expected: {error}"),
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<String, IdentityError> {
        let url = format!("{}/api/{path}", self.base);
        let what = format!("{method} /api/{path}");
        let mut request = self
            .client
            .request(method, &url)
            .basic_auth(&self.user, Some(&self.password))
            .timeout(std::time::Duration::from_secs(30));
        if let Some(body) = body {
            request = request.header(reqwest::header::CONTENT_TYPE, "application/json").body(body.to_string());
        }
        let response = request.send().await.map_err(|source| IdentityError::Unreachable { url, source })?;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        if (200..300).contains(&status) { Ok(text) } else { Err(IdentityError::Refused { what, status, body: text }) }
    }
}

/// `Ok` for a name a worker may have ([`farm_proto::is_worker_name`]).
pub fn check_name(name: &str) -> Result<(), IdentityError> {
    if farm_proto::is_worker_name(name) { Ok(()) } else { Err(IdentityError::BadName(name.to_owned())) }
}

/// Whether RabbitMQ's `tags` (a list, or a comma-separated string in older versions)
/// hold [`WORKER_TAG`].
fn has_worker_tag(tags: &serde_json::Value) -> bool {
    match tags {
        serde_json::Value::Array(tags) => tags.iter().any(|tag| tag.as_str() == Some(WORKER_TAG)),
        serde_json::Value::String(tags) => tags.split(',').any(|tag| tag.trim() == WORKER_TAG),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_names_are_checked_and_paths_escaped() {
        for good in ["w1", "farm-worker-3", "gpu.node_7"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "-w", "W1", "a b", "w/1", &"w".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(has_worker_tag(&serde_json::json!(["farm-worker"])));
        assert!(has_worker_tag(&serde_json::json!("management,farm-worker")));
        assert!(!has_worker_tag(&serde_json::json!(["administrator"])));
        let rights: serde_json::Value = serde_json::from_str(PERMISSIONS).expect("JSON");
        assert!(rights["worker"]["write"].as_str().is_some_and(|write| write.contains("farm\\.results")));
    }
}
