//! The CLI's side of the HTTP API (`submit`, `status`, `standings`): plain HTTP/1.1
//! requests over one connection each, JSON in and out.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Method, Request, StatusCode, header};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;

use crate::api::{NewBot, Submitted};
use crate::ledger::Retried;
use crate::tournament::{TournamentError, TournamentFile};
use farm_proto::limits;

/// The longest any request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest answer read.
const MAX_ANSWER: usize = limits::MAX_API_DOCUMENT_BYTES;

/// A request that did not get the answer it wanted.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL is not `http://host:port`.
    #[error("bad coordinator URL {0:?}: expected http://HOST:PORT (the CLI speaks plain HTTP)")]
    Url(String),
    /// The coordinator cannot be reached.
    #[error("cannot reach the coordinator at {address}: {source}")]
    Connect {
        /// Where.
        address: String,
        /// Why.
        source: std::io::Error,
    },
    /// The request failed on the wire.
    #[error("talking to the coordinator: {0}")]
    Http(#[from] hyper::Error),
    /// The coordinator did not answer in time.
    #[error("the coordinator did not answer within {0:?}")]
    Timeout(Duration),
    /// The coordinator answered with an error.
    #[error("the coordinator answered {status}: {message}")]
    Status {
        /// The status.
        status: StatusCode,
        /// Its error message.
        message: String,
    },
    /// The answer is not what was expected.
    #[error("unexpected answer from the coordinator: {0}")]
    Decode(String),
    /// A download could not be written here.
    #[error("writing the answer: {0}")]
    Write(std::io::Error),
    /// The tournament file is wrong.
    #[error(transparent)]
    Tournament(#[from] TournamentError),
}

/// `text` as one URL path segment or query value: every byte but the unreserved ones
/// (RFC 3986) percent-encoded.
pub fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => char::from(byte).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// A coordinator's API.
#[derive(Debug, Clone)]
pub struct Client {
    authority: String,
    token: Option<String>,
}

impl Client {
    /// A client of the coordinator at `url` (`http://host:port`), sending `token` as
    /// the bearer token if given.
    pub fn new(url: &str, token: Option<String>) -> Result<Self, ClientError> {
        let authority = url
            .strip_prefix("http://")
            .map(|rest| rest.trim_end_matches('/'))
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
            .ok_or_else(|| ClientError::Url(url.to_owned()))?;
        Ok(Client { authority: authority.to_owned(), token })
    }

    /// Sends the tournament file at `path`, its map files inlined.
    pub async fn submit(&self, path: &Path) -> Result<Submitted, ClientError> {
        self.submit_with_priority(path, 0).await
    }

    /// [`Client::submit`], placed by `priority` among the submitter's own tournaments.
    pub async fn submit_with_priority(&self, path: &Path, priority: i32) -> Result<Submitted, ClientError> {
        let mut file = TournamentFile::read(path)?;
        file.inline_maps(path.parent().unwrap_or(Path::new(".")))?;
        let body = serde_json::to_vec(&file).map_err(|error| ClientError::Decode(error.to_string()))?;
        self.request(Method::POST, &format!("/api/tournaments?priority={priority}"), Some(body)).await
    }

    /// Sends `method` to `path` with `body` as JSON, and decodes the JSON answer.
    pub async fn send<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T, ClientError> {
        let body = body.map(|body| body.to_string().into_bytes());
        self.request(method, path, body).await
    }

    /// Asks the coordinator to publish tournament `id`'s unanswered jobs again, and its
    /// failed ones too with `failed`.
    pub async fn retry(&self, id: &str, failed: bool) -> Result<Retried, ClientError> {
        self.request(Method::POST, &format!("/api/tournaments/{id}/retry?failed={failed}"), None).await
    }

    /// Ends tournament `id` now: its jobs not yet published are cancelled.
    pub async fn stop(&self, id: &str) -> Result<serde_json::Value, ClientError> {
        self.request(Method::POST, &format!("/api/tournaments/{id}/stop"), None).await
    }

    /// Adds a bot to ladder `id` (as `replaces`' new version, if given).
    pub async fn add_bot(&self, id: &str, bot: &NewBot) -> Result<serde_json::Value, ClientError> {
        let body = serde_json::to_vec(bot).map_err(|error| ClientError::Decode(error.to_string()))?;
        self.request(Method::POST, &format!("/api/tournaments/{id}/bots"), Some(body)).await
    }

    /// Retires bot `name` of ladder `id`.
    pub async fn retire_bot(&self, id: &str, name: &str) -> Result<serde_json::Value, ClientError> {
        let name = percent_encode(name);
        self.request(Method::DELETE, &format!("/api/tournaments/{id}/bots/{name}"), None).await
    }

    /// Uploads `archive` (a tar) as bot `name`'s next version, for `game`, to enter
    /// `ladder` once validated.
    pub async fn submit_bot(
        &self,
        name: &str,
        game: &str,
        ladder: Option<&str>,
        archive: Vec<u8>,
    ) -> Result<serde_json::Value, ClientError> {
        let mut path = format!("/api/bots?name={}&game={}", percent_encode(name), percent_encode(game));
        if let Some(ladder) = ladder {
            path.push_str(&format!("&ladder={}", percent_encode(ladder)));
        }
        let bytes = self.exchange(Method::POST, &path, Some(archive), "application/x-tar").await?;
        serde_json::from_slice(&bytes).map_err(|error| ClientError::Decode(error.to_string()))
    }

    /// GETs `path`, a text answer (a log).
    pub async fn get_text(&self, path: &str) -> Result<String, ClientError> {
        let bytes = self.exchange(Method::GET, path, None, "application/json").await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// GETs `path` and decodes its JSON.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.request(Method::GET, path, None).await
    }

    async fn request<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T, ClientError> {
        let bytes = self.exchange(method, path, body, "application/json").await?;
        serde_json::from_slice(&bytes).map_err(|error| ClientError::Decode(error.to_string()))
    }

    /// Sends `method` to `path` with `body` of `content_type`; the response once its
    /// head came, within [`REQUEST_TIMEOUT`].
    async fn open(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        content_type: &str,
    ) -> Result<hyper::Response<hyper::body::Incoming>, ClientError> {
        let open = async {
            let stream = tokio::net::TcpStream::connect(&self.authority)
                .await
                .map_err(|source| ClientError::Connect { address: self.authority.clone(), source })?;
            let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(connection);
            let mut request = Request::builder()
                .method(method)
                .uri(path)
                .header(header::HOST, &self.authority)
                .header(header::CONTENT_TYPE, content_type);
            if let Some(token) = &self.token {
                request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
            }
            let request = request
                .body(Full::new(Bytes::from(body.unwrap_or_default())))
                .map_err(|error| ClientError::Decode(error.to_string()))?;
            Ok::<_, ClientError>(sender.send_request(request).await?)
        };
        tokio::time::timeout(REQUEST_TIMEOUT, open).await.map_err(|_| ClientError::Timeout(REQUEST_TIMEOUT))?
    }

    /// Sends `method` to `path` with `body` of `content_type`; the answer's body when
    /// its status is a success, its error message otherwise.
    async fn exchange(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        content_type: &str,
    ) -> Result<Bytes, ClientError> {
        let response = self.open(method, path, body, content_type).await?;
        let status = response.status();
        let bytes = tokio::time::timeout(REQUEST_TIMEOUT, Limited::new(response.into_body(), MAX_ANSWER).collect())
            .await
            .map_err(|_| ClientError::Timeout(REQUEST_TIMEOUT))?
            .map_err(|error| ClientError::Decode(error.to_string()))?
            .to_bytes();
        if !status.is_success() {
            return Err(status_error(status, &bytes));
        }
        Ok(bytes)
    }

    /// GETs `path`, a long answer (an export), into `to` as it comes, however long it
    /// takes while data keeps coming (each piece within [`REQUEST_TIMEOUT`]). Returns
    /// the bytes written.
    pub async fn download(
        &self,
        path: &str,
        to: &mut (impl tokio::io::AsyncWrite + Unpin),
    ) -> Result<u64, ClientError> {
        use tokio::io::AsyncWriteExt;
        let response = self.open(Method::GET, path, None, "application/json").await?;
        let status = response.status();
        let mut body = response.into_body();
        if !status.is_success() {
            let bytes = Limited::new(body, MAX_ANSWER).collect().await.map(|body| body.to_bytes()).unwrap_or_default();
            return Err(status_error(status, &bytes));
        }
        let mut written = 0u64;
        loop {
            let frame = tokio::time::timeout(REQUEST_TIMEOUT, body.frame())
                .await
                .map_err(|_| ClientError::Timeout(REQUEST_TIMEOUT))?;
            let Some(frame) = frame else { break };
            if let Ok(data) = frame?.into_data() {
                to.write_all(&data).await.map_err(ClientError::Write)?;
                written += data.len() as u64;
            }
        }
        to.flush().await.map_err(ClientError::Write)?;
        Ok(written)
    }
}

/// The error of an answer with `status` and `bytes`: the API's message, or the text.
fn status_error(status: StatusCode, bytes: &[u8]) -> ClientError {
    let message = serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|value| value["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(bytes).into_owned());
    ClientError::Status { status, message }
}
