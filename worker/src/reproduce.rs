//! `farm-worker reproduce`: plays a finished match again from its reproduction bundle
//! ([`Reproduction`]) with the very bots it had (each container bot by the image id it
//! ran, whatever its tag names now) and says whether the replay is identical.
//!
//! The bundle is a worker's word. Asked through the API, `reproduce` plays the job the
//! coordinator's ledger scheduled (the match detail's `job`), taking from the bundle
//! only the image ids its container bots ran, which play in a Docker sandbox; a bundle
//! naming another job is said to depart from it. A job that runs `command` bots
//! (processes on this machine, outside any container) is refused unless the operator
//! trusts them ([`CommandBots`]).

use std::path::Path;

use farm_proto::{BotLaunch, MatchJob, Reproduction};
use http_body_util::{BodyExt, Empty, Limited};

use crate::bots::{BotLaunchError, DockerError, DockerSandbox, LocalSandbox, Sandbox};
use crate::runner::{MatchIo, MatchReport, RunError, RunnerOptions, fill_seats, start_match};
use farm_proto::limits;

/// The most of a result document `reproduce` reads from the API.
const MAX_DOCUMENT_BYTES: usize = limits::MAX_API_DOCUMENT_BYTES;

/// A match to play again: its bundle and the replay hash it had.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The bundle.
    pub reproduction: Reproduction,
    /// The hash of its replay's play, as recorded.
    pub replay_sha256: String,
    /// The job as the coordinator's ledger scheduled it, when the document says (the
    /// API's match detail does): what is played, whatever the bundle says.
    pub scheduled: Option<MatchJob>,
}

/// Whether `reproduce` may run a job's `command` bots: programs started on this
/// machine as the operator's user, outside any container, whose command lines a
/// tournament's author wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandBots {
    /// Refused: the default.
    Refused,
    /// Run them (`--trust-commands`).
    Trusted,
}

/// Why a match cannot be played again.
#[derive(Debug, thiserror::Error)]
pub enum ReproduceError {
    /// The document holds no reproduction bundle.
    #[error(
        "{0} has no reproduction bundle: it is not a completed match's result, or a worker older than bundles \
         played it"
    )]
    NoBundle(String),
    /// The document cannot be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The document is not JSON.
    #[error("{what} is not JSON: {source}")]
    NotJson {
        /// Which document.
        what: String,
        /// Why.
        source: serde_json::Error,
    },
    /// The API could not be asked, or answered with an error.
    #[error("{url}: {problem}")]
    Api {
        /// What was asked.
        url: String,
        /// What went wrong.
        problem: String,
    },
    /// A container bot's recorded image is no longer on this machine.
    #[error(
        "seat {seat}'s image {image_id} (then named {tag}) is no longer on this machine: the match cannot be played \
         again with the bot it had"
    )]
    ImageGone {
        /// The seat.
        seat: usize,
        /// The image's id, as recorded.
        image_id: String,
        /// The image the job named.
        tag: String,
    },
    /// The Docker engine failed.
    #[error(transparent)]
    Docker(#[from] DockerError),
    /// Playing the match failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The job runs `command` bots and the operator did not trust them.
    #[error(
        "seat {seat} runs the command {command:?} on this machine, outside any container: reproduce runs \
         commands only with --trust-commands"
    )]
    UntrustedCommand {
        /// The first such seat.
        seat: usize,
        /// Its command line.
        command: String,
    },
}

impl Recorded {
    /// The bundle in a result document: a stored result (`{"result": {...}}`), the
    /// API's match detail (the same shape) or `farm-worker play`'s `result.json`
    /// (the bundle at the top). `what` names the document in errors.
    pub fn from_document(document: &[u8], what: &str) -> Result<Self, ReproduceError> {
        let value: serde_json::Value = serde_json::from_slice(document)
            .map_err(|source| ReproduceError::NotJson { what: what.to_owned(), source })?;
        let holder = if value.get("reproduction").is_some() { &value } else { &value["result"] };
        let reproduction = serde_json::from_value(holder["reproduction"].clone())
            .map_err(|_| ReproduceError::NoBundle(what.to_owned()))?;
        let replay_sha256 =
            holder["replay_sha256"].as_str().ok_or_else(|| ReproduceError::NoBundle(what.to_owned()))?.to_owned();
        let scheduled = match value.get("job") {
            None | Some(serde_json::Value::Null) => None,
            Some(job) => Some(
                serde_json::from_value(job.clone())
                    .map_err(|source| ReproduceError::NotJson { what: format!("{what}'s job"), source })?,
            ),
        };
        Ok(Recorded { reproduction, replay_sha256, scheduled })
    }

    /// The job as given: the ledger's when known, else the bundle's.
    pub fn given_job(&self) -> &MatchJob {
        self.scheduled.as_ref().unwrap_or(&self.reproduction.job)
    }

    /// Whether the worker's bundle names another job than the ledger scheduled.
    pub fn departs_from_schedule(&self) -> bool {
        self.scheduled.as_ref().is_some_and(|scheduled| *scheduled != self.reproduction.job)
    }

    /// `Ok` unless the job played again runs a `command` bot that `commands` does not
    /// trust; then the first such seat.
    pub fn check_commands(&self, commands: CommandBots) -> Result<(), ReproduceError> {
        if commands == CommandBots::Trusted {
            return Ok(());
        }
        let first = self.given_job().bots.iter().enumerate().find_map(|(seat, bot)| match &bot.launch {
            BotLaunch::Command(command) => Some((seat, command.clone())),
            _ => None,
        });
        match first {
            Some((seat, command)) => Err(ReproduceError::UntrustedCommand { seat, command }),
            None => Ok(()),
        }
    }

    /// The job played again: [`Recorded::given_job`], each container bot pinned to the
    /// image id the bundle says it ran.
    pub fn job_to_play(&self) -> MatchJob {
        Reproduction { job: self.given_job().clone(), ..self.reproduction.clone() }.pinned_job()
    }

    /// The bundle of match `job_id`, from the coordinator's API at `api` (`http://HOST:PORT`).
    pub async fn from_api(api: &str, job_id: &str) -> Result<Self, ReproduceError> {
        let url = format!("{}/api/matches/{job_id}", api.trim_end_matches('/'));
        let document = get(&url).await.map_err(|problem| ReproduceError::Api { url: url.clone(), problem })?;
        Recorded::from_document(&document, &url)
    }
}

/// One plain-HTTP GET, its body if the status is 200.
async fn get(url: &str) -> Result<Vec<u8>, String> {
    let uri: hyper::Uri = url.parse().map_err(|error| format!("not a URL: {error}"))?;
    if uri.scheme_str() != Some("http") {
        return Err("only http:// is supported (the API on its own network)".to_owned());
    }
    let authority = uri.authority().ok_or("the URL has no host")?.clone();
    let port = authority.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((authority.host(), port)).await.map_err(|error| error.to_string())?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .map_err(|error| error.to_string())?;
    tokio::spawn(connection);
    let request = hyper::Request::get(uri.path())
        .header(hyper::header::HOST, authority.as_str())
        .body(Empty::<bytes::Bytes>::new())
        .map_err(|error| error.to_string())?;
    let response = sender.send_request(request).await.map_err(|error| error.to_string())?;
    let status = response.status();
    let body = Limited::new(response.into_body(), MAX_DOCUMENT_BYTES)
        .collect()
        .await
        .map_err(|error| format!("reading the answer: {error}"))?
        .to_bytes();
    if status != hyper::StatusCode::OK {
        return Err(format!("{status}: {}", String::from_utf8_lossy(&body).trim()));
    }
    Ok(body.to_vec())
}

/// What playing the match again gave.
#[derive(Debug)]
pub struct Reproduced {
    /// The new play's report.
    pub report: MatchReport,
    /// Per seat, the image its tag names now, where that is another than the one it ran.
    pub moved_tags: Vec<(usize, String, Option<String>)>,
}

impl Reproduced {
    /// Whether the new replay's play is the recorded one.
    pub fn is_identical(&self, recorded: &Recorded) -> bool {
        self.report.replay_sha256 == recorded.replay_sha256
    }
}

/// Plays `recorded`'s match again ([`Recorded::job_to_play`]), writing its replay to
/// `replay`: its container bots by the image ids they ran (in a Docker sandbox with
/// `runtime`), built-in bots in this process, `command` bots only when `commands` trusts
/// them.
pub async fn reproduce(
    recorded: &Recorded,
    runtime: Option<String>,
    commands: CommandBots,
    options: &RunnerOptions,
    replay: impl tokio::io::AsyncWrite + Unpin,
) -> Result<Reproduced, ReproduceError> {
    recorded.check_commands(commands)?;
    let job = recorded.job_to_play();
    let io = MatchIo { replay, on_step: |_, _| {}, stop: std::future::pending(), live: None };
    if !job.bots.iter().any(|bot| matches!(bot.launch, BotLaunch::Image(_))) {
        let report = play(&LocalSandbox, &job, options, io).await?;
        return Ok(Reproduced { report, moved_tags: Vec::new() });
    }
    let settings = crate::bots::DockerSettings { runtime, ..crate::bots::DockerSettings::default() };
    let docker = DockerSandbox::connect(&format!("reproduce-{}", std::process::id()), &settings).await?;
    let mut moved_tags = Vec::new();
    for (seat, (given, image_id)) in recorded.given_job().bots.iter().zip(&recorded.reproduction.images).enumerate() {
        let (BotLaunch::Image(tag), Some(image_id)) = (&given.launch, image_id) else { continue };
        if docker.image_id(image_id).await?.is_none() {
            docker.shutdown().await?;
            return Err(ReproduceError::ImageGone { seat, image_id: image_id.clone(), tag: tag.clone() });
        }
        let now = docker.image_id(tag).await?;
        if now.as_ref() != Some(image_id) {
            moved_tags.push((seat, tag.clone(), now));
        }
    }
    let played = play(&docker, &job, options, io).await;
    docker.shutdown().await?;
    Ok(Reproduced { report: played?, moved_tags })
}

async fn play<S: Sandbox, W: tokio::io::AsyncWrite + Unpin>(
    sandbox: &S,
    job: &MatchJob,
    options: &RunnerOptions,
    io: MatchIo<W, impl FnMut(u64, u64), impl Future<Output = ()>>,
) -> Result<MatchReport, ReproduceError> {
    let bots = fill_seats(job.game, job.bots.clone());
    let players = bots.iter().map(|bot| bot.name.clone()).collect();
    let setup = farm_engine::MatchSetup::new(job.game, &job.rules, job.map.clone(), job.seed, players)
        .map_err(RunError::from)?;
    let started =
        start_match(sandbox, &job.job_id, job.isolation, job.clock, setup, &bots).await.map_err(
            |error| match error {
                RunError::Launch { seat, source: BotLaunchError::ImageMissing { image, .. } } => {
                    ReproduceError::ImageGone { seat, image_id: image.clone(), tag: image }
                }
                other => other.into(),
            },
        )?;
    Ok(started.play(options, io).await?)
}

/// Reads a result document from `path`.
pub fn read_document(path: &Path) -> Result<Recorded, ReproduceError> {
    let what = path.display().to_string();
    let document = std::fs::read(path).map_err(|source| ReproduceError::Read { path: what.clone(), source })?;
    Recorded::from_document(&document, &what)
}
