//! The `vindinium-server` transport: the bot is a client of the original Vindinium
//! server's HTTP API, as every starter kit of the game is, and the worker plays that
//! server for it alone, for one match. The bot starts its game with `POST /api/arena`
//! or `/api/training` and its key; that request is held until its hero's turn and
//! answered with the state; each move is posted as `dir` to the state's `playUrl`,
//! and held in turn until the next state (or the last, `finished`). Routes, forms,
//! JSON, statuses and error texts are the original server's
//! (`bots/vindinium/original-server-api.md`), and so are its ids' shapes: a game id
//! of 8 characters (the match's, [`server_game_id`]), heroes without `userId` and
//! `elo` (a farm bot has no account on the server: the original renders every hero
//! without a user so, its training mode's bots among them), a form's query string
//! read before its body. The farm's match being fixed in advance makes three
//! differences:
//! - either mode joins the match the bot was started for: `turns` is read (one that
//!   is not a number is refused, as there) but the tournament's map and rules hold;
//! - a start request after the first (a kit asking for its next game) is held until
//!   the match is over, then refused: 503, `Vindinium - The match is over`; unless
//!   the client had given up waiting for its state (the original kits wait 15 s), in
//!   which case it rejoins its game where it is;
//! - a move is not held back until 60 ms after its state, as the original did to
//!   pace its viewers.
//!
//! Its secrets are longer: the key and the token are 128-bit ([`SECRET_LEN`]). As
//! the original, a move is taken on its token alone: `key` is not read on play.
//!
//! A move is judged by when its request began to arrive, as the original judged it
//! on arrival: one begun before its state (a second move posted while the first is
//! held) is answered `Wait, you're not supposed to play now` and not played, even
//! when a bot frozen between its turns only finishes sending it after that state.
//!
//! A local bot finds its server on a loopback port of the worker's host; a container
//! bot on port [`CONTAINER_PORT`] of its own loopback (it has no network), whose
//! listening socket its supervisor opened and handed to the worker.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use farm_engine::BotReply;
use farm_engine::vindinium::{parse_form_dir, server_document, server_game_id};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::{Duration, Instant, timeout};
use tokio_util::sync::CancellationToken;

use super::Received;
use super::cpu::CpuMeter;
use farm_proto::limits;

/// The port a container bot's server is on, inside the container (the original
/// server's own, in its development setup).
pub const CONTAINER_PORT: u16 = 9000;
/// The environment variable holding the server's URL, `http://127.0.0.1:PORT`.
pub const SERVER_VARIABLE: &str = "FARM_VINDINIUM_SERVER";
/// The environment variable holding the bot's key.
pub const KEY_VARIABLE: &str = "FARM_VINDINIUM_KEY";
/// The most connections the bot may hold open at once; more are closed at once.
const MAX_CONNECTIONS: usize = limits::VINDINIUM_CONNECTIONS;
/// The largest request body read (a form of a key and a direction is tens of bytes).
const MAX_BODY_BYTES: usize = limits::VINDINIUM_BODY_BYTES;
/// The most start requests after the first that are held; more are refused at once.
const MAX_LATER_STARTS: usize = 4;
/// How long, once the final state is sent, the bot has to take it (exit, or ask for
/// its next game) before the match ends it.
const FINAL_STATE_GRACE: Duration = Duration::from_secs(1);
/// How long to wait before accepting again after accepting failed.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);
/// How long the bot's connections may take to close once the match is over.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// The characters of the original's keys, tokens and ids, kept: a kit puts the
/// token in paths, and may check it.
const ID_CHARS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
/// How many characters of [`ID_CHARS`] the bot's key and its token have: 25, 129
/// bits (36^25 > 2^128), drawn from the OS's CSPRNG. The original's token had 4 (its
/// keys 8): a local bot's server is on a loopback port of the worker's host, where a
/// bot sharing the host could try all 1.7 million 4-character tokens in a match and
/// play its opponent's moves.
const SECRET_LEN: usize = 25;

/// A bot's server, bound and not yet serving: what the bot is told to reach it.
pub struct VindiniumServer {
    listener: TcpListener,
    /// `host:port`, as the bot reaches it: its URLs' host when a request has no `Host`.
    address: String,
    key: String,
    token: String,
}

impl VindiniumServer {
    /// A server on a free loopback port of the worker's host, for a local bot.
    pub async fn on_loopback() -> std::io::Result<Self> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let address = listener.local_addr()?.to_string();
        Self::new(listener, address)
    }

    /// A server on `listener`, which listens at [`CONTAINER_PORT`] of a container's
    /// loopback.
    pub fn in_container(listener: TcpListener) -> std::io::Result<Self> {
        Self::new(listener, format!("127.0.0.1:{CONTAINER_PORT}"))
    }

    fn new(listener: TcpListener, address: String) -> std::io::Result<Self> {
        Ok(VindiniumServer { listener, address, key: random_id(SECRET_LEN)?, token: random_id(SECRET_LEN)? })
    }

    /// What the bot finds in its environment: the server's URL and its key.
    pub fn environment(&self) -> [(&'static str, String); 2] {
        [(SERVER_VARIABLE, format!("http://{}", self.address)), (KEY_VARIABLE, self.key.clone())]
    }

    /// Starts serving; the bot's moves are timed with `meter` as they arrive.
    pub fn serve(self, meter: Option<Arc<CpuMeter>>) -> ServerChannel {
        let (moves_tx, moves) = mpsc::channel(1);
        let shared = Arc::new(Shared {
            key: self.key,
            token: self.token,
            address: self.address,
            seat: Mutex::new(SeatState::default()),
            moves: moves_tx,
            activity: Notify::new(),
            meter,
        });
        let closed = CancellationToken::new();
        tokio::spawn(accept(self.listener, Arc::clone(&shared), closed.clone()));
        ServerChannel { shared, moves, closed, exited: CancellationToken::new() }
    }
}

/// `length` random characters of [`ID_CHARS`], unbiased.
fn random_id(length: usize) -> std::io::Result<String> {
    let mut id = String::with_capacity(length);
    while id.len() < length {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|error| std::io::Error::other(error.to_string()))?;
        // 252 is the largest multiple of 36 in a byte: the bytes above it are dropped.
        id.extend(bytes.iter().filter(|&&byte| byte < 252).map(|&byte| char::from(ID_CHARS[usize::from(byte % 36)])));
        id.truncate(length);
    }
    Ok(id)
}

/// The worker's side of the bot's server: states go out as answers to the bot's held
/// requests, moves come in as its posts.
pub struct ServerChannel {
    shared: Arc<Shared>,
    moves: mpsc::Receiver<Received>,
    /// Ends the server: taken by no new connection, its held requests refused.
    closed: CancellationToken,
    /// Cancelled when the bot has exited: no move will come.
    exited: CancellationToken,
}

/// What the server's connections and the channel share.
struct Shared {
    key: String,
    token: String,
    address: String,
    seat: Mutex<SeatState>,
    /// The move posted for the state last sent; at most one waits.
    moves: mpsc::Sender<Received>,
    /// Told of every request and every closed connection: the bot is doing something.
    activity: Notify,
    meter: Option<Arc<CpuMeter>>,
}

/// Where the bot's game stands, as its server sees it.
#[derive(Default)]
struct SeatState {
    phase: Phase,
    /// The match's game id as the bot is given it, from the first state.
    game_id: Option<String>,
    /// How many states have been sent: a move is for the state that was the last sent
    /// when its request began to arrive.
    sent: u64,
    /// The last state sent, until a request of the bot's takes it.
    undelivered: Option<String>,
    /// The request waiting for the bot's next state: its start request, or its last move.
    held: Option<Held>,
    /// Start requests after the first, held until the match is over.
    later_starts: Vec<oneshot::Sender<Answer>>,
}

impl SeatState {
    /// Whether a start request joins the bot's game: its first, or one from a client
    /// that gave up waiting for its next state (the original kits wait 15 s for a
    /// move's answer, then ask for a new game; the other heroes' turns may take longer
    /// here), which rejoins the game where it is.
    fn takes_a_start(&self) -> bool {
        let nobody_waits = self.held.as_ref().is_none_or(|held| held.answer.is_closed());
        match self.phase {
            Phase::Starting | Phase::Waiting => nobody_waits,
            Phase::Thinking => self.undelivered.is_some(),
            Phase::TimedOut | Phase::Finished => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Phase {
    /// No state has reached the bot yet.
    #[default]
    Starting,
    /// It has its state and the farm waits for its move.
    Thinking,
    /// It has moved and waits for its next state.
    Waiting,
    /// Its move did not come in time: its hero crashed, for good.
    TimedOut,
    /// The match is over.
    Finished,
}

/// A held request: how to answer it, and the host it asked for (its URLs').
struct Held {
    answer: oneshot::Sender<Answer>,
    host: String,
}

type Answer = Response<Full<Bytes>>;

impl ServerChannel {
    /// Sends the bot `observation` (a Vindinium match's, see
    /// [`farm_engine::vindinium::server_document`]): the answer to its held request,
    /// or to its next. `false` once its hero has timed out or the match is over.
    pub fn send(&mut self, observation: &str) -> bool {
        while self.moves.try_recv().is_ok() {}
        let mut seat = self.shared.seat();
        if matches!(seat.phase, Phase::TimedOut | Phase::Finished) {
            return false;
        }
        if seat.game_id.is_none() {
            seat.game_id = server_game_id(observation).map(str::to_owned);
        }
        seat.sent += 1;
        if seat.phase != Phase::Starting || seat.held.is_some() {
            seat.phase = Phase::Thinking;
        }
        match seat.held.take() {
            Some(held) => self.shared.deliver(&mut seat, held, observation),
            None => seat.undelivered = Some(observation.to_owned()),
        }
        true
    }

    /// The bot's move for the last state if it arrives by `until`; `None` if not;
    /// `Crashed` once the bot has exited.
    pub async fn receive_until(&mut self, until: Instant) -> Option<Received> {
        tokio::select! {
            biased;
            posted = self.moves.recv() => posted,
            () = self.exited.cancelled() => Some(Received::now(BotReply::Crashed, self.shared.meter.as_deref())),
            () = tokio::time::sleep_until(until) => None,
        }
    }

    /// What tells the channel the bot has exited: its sandbox cancels it when the
    /// bot's process ends.
    pub fn exited(&self) -> CancellationToken {
        self.exited.clone()
    }

    /// The move did not come in time: the hero has crashed, and every post of the bot
    /// from now on (a late move among them) is told so.
    pub fn give_up(&mut self) {
        let mut seat = self.shared.seat();
        seat.phase = Phase::TimedOut;
        seat.undelivered = None;
        if let Some(held) = seat.held.take() {
            let _ = held.answer.send(text(StatusCode::BAD_REQUEST, "Vindinium - Time out! You must play faster"));
        }
        drop(seat);
        while self.moves.try_recv().is_ok() {}
    }

    /// The match is over and `observation` is its last state (`finished`): sent to a
    /// bot waiting for its next state, which then has [`FINAL_STATE_GRACE`] to take it
    /// (to exit, or to ask for its next game) before the match ends it.
    pub async fn conclude(&mut self, observation: &str) {
        let activity = self.shared.activity.notified();
        let mut activity = std::pin::pin!(activity);
        activity.as_mut().enable();
        {
            let mut seat = self.shared.seat();
            if seat.phase == Phase::TimedOut {
                return;
            }
            seat.phase = Phase::Finished;
            seat.undelivered = None;
            let Some(held) = seat.held.take() else { return };
            self.shared.deliver(&mut seat, held, observation);
        }
        let _ = timeout(FINAL_STATE_GRACE, activity).await;
    }
}

impl Drop for ServerChannel {
    /// Refuses what is still held and closes the server: no new connection is taken,
    /// and the open ones end once their answers are written.
    fn drop(&mut self) {
        let mut seat = self.shared.seat();
        let held = seat.held.take().map(|held| held.answer);
        for answer in held.into_iter().chain(seat.later_starts.drain(..)) {
            let _ = answer.send(match_over());
        }
        drop(seat);
        self.closed.cancel();
    }
}

impl Shared {
    fn seat(&self) -> MutexGuard<'_, SeatState> {
        self.seat.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Answers `held` with `observation` as the original sends it; if its client has
    /// gone, the state waits for the bot's next request.
    fn deliver(&self, seat: &mut SeatState, held: Held, observation: &str) {
        let answer = match server_document(observation, &self.token, &held.host) {
            Some(document) => respond(StatusCode::OK, "application/json; charset=utf-8", document.into()),
            None => text(StatusCode::INTERNAL_SERVER_ERROR, "Vindinium - the farm sent no Vindinium state"),
        };
        if held.answer.send(answer).is_err() && seat.phase != Phase::Finished {
            seat.undelivered = Some(observation.to_owned());
        }
    }

    /// Answers one request of the bot.
    async fn answer(self: Arc<Self>, request: Request<Incoming>) -> Answer {
        // Its head has come, not yet its body: what a move was posted after.
        let sent_before = self.seat().sent;
        self.activity.notify_waiters();
        let host = request
            .headers()
            .get(HOST)
            .and_then(|host| host.to_str().ok())
            .map_or_else(|| self.address.clone(), str::to_owned);
        let is_post = request.method() == Method::POST;
        let path = request.uri().path().to_owned();
        let query = request.uri().query().map(str::to_owned);
        let body = match Limited::new(request.into_body(), MAX_BODY_BYTES).collect().await {
            Ok(body) => body.to_bytes(),
            Err(_) => return text(StatusCode::PAYLOAD_TOO_LARGE, "Vindinium - the request is too large"),
        };
        let form = Form::read(query.as_deref(), &body);
        let parts: Vec<&str> = path.split('/').collect();
        match (is_post, parts.as_slice()) {
            (true, ["", "api", mode @ ("training" | "arena")]) => self.start(*mode == "training", &form, host).await,
            (true, ["", "api", game, token, "play"]) => self.play(game, token, &form, host, sent_before).await,
            _ => respond(
                StatusCode::NOT_FOUND,
                "text/html; charset=utf-8",
                Bytes::from_static(b"<!DOCTYPE html><title>Not found</title>Not found"),
            ),
        }
    }

    /// `POST /api/training` or `/api/arena`: the bot's game starts (it joins the match).
    async fn start(&self, training: bool, form: &Form, host: String) -> Answer {
        let turns_read =
            !training || form.get("turns").is_none_or(|turns| turns.is_empty() || turns.parse::<i32>().is_ok());
        let Some(key) = form.get("key").filter(|key| !java_trim(key).is_empty() && turns_read) else {
            return text(StatusCode::BAD_REQUEST, "Did you forget the key parameter?");
        };
        if key != self.key {
            return text(StatusCode::BAD_REQUEST, "Vindinium - Key not found");
        }
        let (answer, answered) = oneshot::channel();
        {
            let mut seat = self.seat();
            if seat.takes_a_start() {
                let held = Held { answer, host };
                match seat.undelivered.take() {
                    Some(observation) => {
                        seat.phase = Phase::Thinking;
                        self.deliver(&mut seat, held, &observation);
                    }
                    None => seat.held = Some(held),
                }
            } else if seat.later_starts.len() < MAX_LATER_STARTS {
                seat.later_starts.push(answer);
            } else {
                return match_over();
            }
        }
        answered.await.unwrap_or_else(|_| match_over())
    }

    /// `POST /api/GAME/TOKEN/play`: the bot's move, answered with its next state. It
    /// is played if the bot's last state had been sent when it began to arrive
    /// (`sent_before` states had).
    async fn play(&self, game: &str, token: &str, form: &Form, host: String, sent_before: u64) -> Answer {
        let Some(dir) = form.get("dir").filter(|dir| !java_trim(dir).is_empty()) else {
            return Response::builder().status(StatusCode::BAD_REQUEST).body(Full::default()).unwrap_or_default();
        };
        let (answer, answered) = oneshot::channel();
        {
            let mut seat = self.seat();
            if seat.game_id.as_deref() != Some(game) {
                return text(StatusCode::NOT_FOUND, &format!("Vindinium - Unknown game {game}"));
            }
            if token != self.token {
                return text(StatusCode::NOT_FOUND, "Vindinium - Wrong or expired token");
            }
            match seat.phase {
                Phase::Thinking if sent_before == seat.sent => {
                    let reply = BotReply::Line(parse_form_dir(dir).name().to_owned());
                    if self.moves.try_send(Received::now(reply, self.meter.as_deref())).is_err() {
                        return text(StatusCode::BAD_REQUEST, "Vindinium - Not your turn to move");
                    }
                    seat.phase = Phase::Waiting;
                    seat.held = Some(Held { answer, host });
                }
                Phase::Starting | Phase::Waiting | Phase::Thinking => {
                    return text(StatusCode::BAD_REQUEST, "Vindinium - Wait, you're not supposed to play now");
                }
                Phase::TimedOut => return text(StatusCode::BAD_REQUEST, "Vindinium - Time out! You must play faster"),
                Phase::Finished => return text(StatusCode::BAD_REQUEST, "Vindinium - The game is finished"),
            }
        }
        answered.await.unwrap_or_else(|_| match_over())
    }
}

/// Java's `String.trim`, as the original's forms trimmed: every character up to the
/// space, at both ends.
fn java_trim(text: &str) -> &str {
    text.trim_matches(|c: char| c <= ' ')
}

/// A request's form fields, the first value of each name: its query string's, then
/// its body's, as the original's forms read a request (Play's `bindFromRequest`
/// lays the query's fields over the body's).
struct Form(HashMap<String, String>);

impl Form {
    fn read(query: Option<&str>, body: &[u8]) -> Self {
        let mut fields = HashMap::new();
        for pairs in [form_urlencoded::parse(query.unwrap_or_default().as_bytes()), form_urlencoded::parse(body)] {
            for (name, value) in pairs {
                fields.entry(name.into_owned()).or_insert_with(|| value.into_owned());
            }
        }
        Form(fields)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

/// An answer of `status` with `body` of `content_type`.
fn respond(status: StatusCode, content_type: &'static str, body: Bytes) -> Answer {
    let mut answer = Response::new(Full::new(body));
    *answer.status_mut() = status;
    answer.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    answer
}

/// A plain-text answer, as the original's errors are.
fn text(status: StatusCode, body: &str) -> Answer {
    respond(status, "text/plain; charset=utf-8", Bytes::from(body.to_owned()))
}

/// The answer to a request held when the match ended.
fn match_over() -> Answer {
    text(StatusCode::SERVICE_UNAVAILABLE, "Vindinium - The match is over")
}

/// Takes the bot's connections until the server is closed, at most
/// [`MAX_CONNECTIONS`] at once; then lets the open ones finish their answers, for at
/// most [`CLOSE_GRACE`].
async fn accept(listener: TcpListener, shared: Arc<Shared>, closed: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = closed.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) if connections.len() < MAX_CONNECTIONS => {
                    connections.spawn(serve(stream, Arc::clone(&shared), closed.clone()));
                }
                Ok(_) => {}
                // Out of descriptors, most likely: the connection waits in the backlog.
                Err(_) => tokio::time::sleep(ACCEPT_RETRY).await,
            }
        }
    }
    drop(listener);
    let _ = timeout(CLOSE_GRACE, async { while connections.join_next().await.is_some() {} }).await;
}

/// Serves one connection of the bot's until it closes, or the server does.
async fn serve(stream: TcpStream, shared: Arc<Shared>, closed: CancellationToken) {
    let _ = stream.set_nodelay(true);
    let service_state = Arc::clone(&shared);
    let service = hyper::service::service_fn(move |request| {
        let shared = Arc::clone(&service_state);
        async move { Ok::<_, Infallible>(shared.answer(request).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        () = closed.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
    shared.activity.notify_waiters();
}

#[cfg(test)]
mod tests {
    use super::*;
    use farm_engine::{GameKind, Match, MatchSetup};
    use std::collections::HashSet;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An answer as a client reads it: status, content type, body.
    #[derive(Debug)]
    struct Got {
        status: u16,
        content_type: String,
        body: String,
    }

    /// A kit's post of `form` to `path` of the server at `address`; its connection
    /// kept open after the answer, or closed.
    fn post_request(address: &str, path: &str, form: &str, keep_alive: bool) -> String {
        let connection = if keep_alive { "keep-alive" } else { "close" };
        format!(
            "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
             Content-Length: {}\r\nConnection: {connection}\r\n\r\n{form}",
            form.len()
        )
    }

    /// Reads one answer from `stream`: its head, then as much body as it says.
    async fn read_answer(stream: &mut TcpStream) -> Got {
        let mut answer = Vec::new();
        let (head, length) = loop {
            let mut chunk = [0u8; 4096];
            let read = stream.read(&mut chunk).await.expect("an answer");
            assert!(read > 0, "the answer ends early: {:?}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&chunk[..read]);
            let Some(end) = answer.windows(4).position(|four| four == b"\r\n\r\n") else { continue };
            let head = String::from_utf8(answer.drain(..end + 4).collect()).expect("a text head");
            let length = head
                .lines()
                .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length: ")?.parse().ok())
                .expect("a length");
            break (head, length);
        };
        while answer.len() < length {
            let mut chunk = [0u8; 4096];
            let read = stream.read(&mut chunk).await.expect("a body");
            assert!(read > 0, "the body ends early");
            answer.extend_from_slice(&chunk[..read]);
        }
        let status = head.split(' ').nth(1).and_then(|code| code.parse().ok()).expect("a status");
        let content_type = head
            .lines()
            .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-type: ").map(str::to_owned))
            .unwrap_or_default();
        Got { status, content_type, body: String::from_utf8(answer).expect("a text body") }
    }

    /// Posts `form` to `path` of the server at `address`, as a kit does (a form, a
    /// connection per request), and reads the answer.
    async fn post(address: &str, path: &str, form: &str) -> Got {
        let mut stream = TcpStream::connect(address).await.expect("the server listens");
        stream.write_all(post_request(address, path, form, false).as_bytes()).await.expect("sent");
        read_answer(&mut stream).await
    }

    /// [`post`] on a task of its own, since the server may hold it.
    fn in_background(address: &str, path: &str, form: &str) -> tokio::task::JoinHandle<Got> {
        let (address, path, form) = (address.to_owned(), path.to_owned(), form.to_owned());
        tokio::spawn(async move { post(&address, &path, &form).await })
    }

    /// A four-hero match on m1 of four moves a hero.
    fn vindinium() -> Match {
        let map =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../maps/vindinium/m1.txt")).expect("m1");
        let players = ["kit", "b", "c", "d"].map(String::from).to_vec();
        let rules = serde_json::json!({ "maxTurns": 16 });
        Match::new(MatchSetup::new(GameKind::Vindinium, &rules, Some(map), 7, players).expect("a setup"))
            .expect("a match")
    }

    /// Plays the other seats' turns (they stay) until it is seat 0's turn or the end.
    fn others_play(game: &mut Match) {
        while !game.is_over() && !game.to_act().contains(&0) {
            let replies = game.to_act().into_iter().map(|seat| (seat, BotReply::Line("Stay".into()))).collect();
            game.submit(replies).expect("a step");
        }
    }

    async fn server() -> (ServerChannel, String, String) {
        let server = VindiniumServer::on_loopback().await.expect("a server");
        let [(_, url), (_, key)] = server.environment();
        let address = url.strip_prefix("http://").expect("an http URL").to_owned();
        (server.serve(None), address, key)
    }

    fn expect_state(got: &Got, game: &Match, token: &str, address: &str) -> serde_json::Value {
        assert_eq!((got.status, got.content_type.as_str()), (200, "application/json; charset=utf-8"), "{got:?}");
        assert_eq!(Some(got.body.clone()), server_document(&game.observation(0), token, address));
        serde_json::from_str(&got.body).expect("JSON")
    }

    async fn a_move(channel: &mut ServerChannel) -> String {
        match channel.receive_until(Instant::now() + Duration::from_secs(10)).await {
            Some(Received { reply: BotReply::Line(line), .. }) => line,
            other => panic!("no move: {other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn an_arena_client_plays_the_match_with_the_originals_documents_and_is_held_after_it() {
        let (mut channel, address, key) = server().await;
        let mut game = vindinium();
        // The start request is held until the hero's first turn.
        let start = in_background(&address, "/api/arena", &format!("key={key}"));
        assert!(channel.send(&game.observation(0)));
        let got = start.await.expect("answered");
        let mut state = expect_state(&got, &game, &channel.shared.token, &address);
        // The ids are shaped as the original's: a token and a key of its characters,
        // longer; the game's id of 8, the match's own.
        let token = state["token"].as_str().expect("a token").to_owned();
        for secret in [&token, &key] {
            assert!(secret.len() == SECRET_LEN && secret.bytes().all(|byte| ID_CHARS.contains(&byte)), "{secret}");
        }
        assert_ne!(token, key);
        let game_id = state["game"]["id"].as_str().expect("a game id").to_owned();
        assert!(game_id.len() == 8 && game_id.bytes().all(|byte| ID_CHARS.contains(&byte)), "{game_id}");
        let match_id = format!("{:016x}", game.setup().seed);
        assert_eq!(game_id, match_id[8..], "the match's id, {match_id}, ends with it");
        // Heroes with no account, rendered as the original rendered its training bots.
        let heroes = state["game"]["heroes"].as_array().expect("heroes");
        assert!(heroes.iter().all(|hero| hero.get("userId").is_none() && hero.get("elo").is_none()), "{heroes:?}");
        assert_eq!(state["viewUrl"], format!("http://{address}/{game_id}"));
        assert_eq!(state["playUrl"], format!("http://{address}/api/{game_id}/{token}/play"));
        // Every move is held until the next state; the last is answered `finished`.
        let play = format!("/api/{game_id}/{token}/play");
        for dir in ["north", "EAST", "jump", "south"] {
            let posted = in_background(&address, &play, &format!("dir={dir}"));
            let played = a_move(&mut channel).await;
            // Any case; anything else is Stay, answered 200 as any move.
            assert_eq!(played, parse_form_dir(dir).name());
            game.submit(vec![(0, BotReply::Line(played))]).expect("a step");
            others_play(&mut game);
            if game.is_over() {
                channel.conclude(&game.observation(0)).await;
            } else {
                assert!(channel.send(&game.observation(0)));
            }
            state = expect_state(&posted.await.expect("answered"), &game, &token, &address);
        }
        assert_eq!(state["game"]["finished"], true);
        let late = in_background(&address, &play, "dir=north").await.expect("answered");
        assert_eq!((late.status, late.body.as_str()), (400, "Vindinium - The game is finished"));
        // A kit asking for its next game is held until the match lets it go, then refused.
        let next = in_background(&address, "/api/arena", &format!("key={key}"));
        while channel.shared.seat().later_starts.is_empty() {
            tokio::task::yield_now().await;
        }
        drop(channel);
        let next = next.await.expect("answered");
        assert_eq!((next.status, next.body.as_str()), (503, "Vindinium - The match is over"));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn bad_requests_get_the_originals_answers_and_the_game_goes_on() {
        let (mut channel, address, key) = server().await;
        let mut game = vindinium();
        let plain = |got: Got, status: u16, body: &str| {
            assert_eq!((got.status, got.body.as_str()), (status, body), "{got:?}");
            if !body.is_empty() {
                assert_eq!(got.content_type, "text/plain; charset=utf-8");
            }
        };
        for (path, form, body) in [
            ("/api/training", String::new(), "Did you forget the key parameter?"),
            ("/api/training", "key=%20".to_owned(), "Did you forget the key parameter?"),
            ("/api/training", format!("key={key}&turns=ten"), "Did you forget the key parameter?"),
            ("/api/arena", "key=notmine1".to_owned(), "Vindinium - Key not found"),
        ] {
            plain(in_background(&address, path, &form).await.expect("answered"), 400, body);
        }
        let unknown = in_background(&address, "/api/nowhere", "").await.expect("answered");
        assert_eq!((unknown.status, unknown.content_type.as_str()), (404, "text/html; charset=utf-8"));

        // Training with the original's fields joins the match; the state was sent first.
        assert!(channel.send(&game.observation(0)));
        let got =
            in_background(&address, "/api/training", &format!("key={key}&turns=10&map=m1")).await.expect("answered");
        let state = expect_state(&got, &game, &channel.shared.token, &address);
        let (game_id, token) = (state["game"]["id"].as_str().expect("id"), state["token"].as_str().expect("token"));
        let play = format!("/api/{game_id}/{token}/play");

        // Nothing posted, a wrong token, another game: refused, the turn still open.
        plain(in_background(&address, &play, "").await.expect("answered"), 400, "");
        plain(in_background(&address, &play, "dir=%20%09").await.expect("answered"), 400, "");
        let wrong = format!("/api/{game_id}/zzzz/play");
        plain(
            in_background(&address, &wrong, "dir=north").await.expect("answered"),
            404,
            "Vindinium - Wrong or expired token",
        );
        plain(
            in_background(&address, &format!("/api/x1/{token}/play"), "dir=north").await.expect("answered"),
            404,
            "Vindinium - Unknown game x1",
        );
        let posted = in_background(&address, &play, "dir=west");
        assert_eq!(a_move(&mut channel).await, "West");
        // A second post while the first is held is not its turn.
        plain(
            in_background(&address, &play, "dir=north").await.expect("answered"),
            400,
            "Vindinium - Wait, you're not supposed to play now",
        );
        game.submit(vec![(0, BotReply::Line("West".into()))]).expect("a step");
        others_play(&mut game);
        assert!(channel.send(&game.observation(0)));
        expect_state(&posted.await.expect("answered"), &game, token, &address);

        // No move in time: the hero has crashed, and a late move is told so.
        channel.give_up();
        plain(
            in_background(&address, &play, "dir=north").await.expect("answered"),
            400,
            "Vindinium - Time out! You must play faster",
        );
        assert!(!channel.send(&game.observation(0)), "a crashed hero is sent nothing");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_client_that_gave_up_waiting_rejoins_its_game_with_a_new_start() {
        let (mut channel, address, key) = server().await;
        let game = vindinium();
        // A start request whose client hangs up before the hero's turn...
        let mut gone = TcpStream::connect(&address).await.expect("the server listens");
        let form = format!("key={key}");
        gone.write_all(post_request(&address, "/api/arena", &form, true).as_bytes()).await.expect("sent");
        while channel.shared.seat().held.is_none() {
            tokio::task::yield_now().await;
        }
        drop(gone);
        while !channel.shared.seat().held.as_ref().is_some_and(|held| held.answer.is_closed()) {
            tokio::task::yield_now().await;
        }
        assert!(channel.send(&game.observation(0)));
        // ...leaves the state to its next start request, which takes the game up.
        let got = in_background(&address, "/api/arena", &form).await.expect("answered");
        expect_state(&got, &game, &channel.shared.token, &address);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_has_exited_is_crashed_at_once() {
        let (mut channel, _, _) = server().await;
        assert!(channel.send(&vindinium().observation(0)));
        channel.exited().cancel();
        let received = channel.receive_until(Instant::now() + Duration::from_secs(3600)).await;
        assert_eq!(received.map(|received| received.reply), Some(BotReply::Crashed));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_move_posted_too_late_is_refused_with_its_held_request() {
        let (mut channel, address, key) = server().await;
        let game = vindinium();
        assert!(channel.send(&game.observation(0)));
        let state = expect_state(
            &in_background(&address, "/api/arena", &format!("key={key}")).await.expect("answered"),
            &game,
            &channel.shared.token,
            &address,
        );
        let play = format!(
            "/api/{}/{}/play",
            state["game"]["id"].as_str().expect("id"),
            state["token"].as_str().expect("token")
        );
        // The move arrives after the runner stopped waiting for it.
        assert_eq!(channel.receive_until(Instant::now()).await, None);
        let posted = in_background(&address, &play, "dir=north");
        while channel.shared.seat().held.is_none() {
            tokio::task::yield_now().await;
        }
        channel.give_up();
        let got = posted.await.expect("answered");
        assert_eq!((got.status, got.body.as_str()), (400, "Vindinium - Time out! You must play faster"));
    }

    #[test]
    fn the_key_and_the_token_are_128_bit_and_of_the_originals_characters() {
        assert!(SECRET_LEN as f64 * (ID_CHARS.len() as f64).log2() >= 128.0);
        let secrets: Vec<String> = (0..100).map(|_| random_id(SECRET_LEN).expect("the OS's randomness")).collect();
        for secret in &secrets {
            assert!(secret.len() == SECRET_LEN && secret.bytes().all(|byte| ID_CHARS.contains(&byte)), "{secret}");
        }
        assert_eq!(secrets.iter().collect::<HashSet<_>>().len(), secrets.len(), "each drawn afresh");
        // Over the whole alphabet: 2,500 fair draws miss one of 36 characters with a
        // chance of about 10^-29.
        for &character in ID_CHARS {
            let drawn = secrets.iter().any(|secret| secret.as_bytes().contains(&character));
            assert!(drawn, "{} never drawn", char::from(character));
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_forms_query_string_is_read_before_its_body_and_a_move_is_taken_on_its_token() {
        let (mut channel, address, key) = server().await;
        let game = vindinium();
        assert!(channel.send(&game.observation(0)));
        // The key in the query string is the one read, not the body's.
        let refused = post(&address, "/api/arena?key=notmine1", &format!("key={key}")).await;
        assert_eq!((refused.status, refused.body.as_str()), (400, "Vindinium - Key not found"));
        let got = post(&address, &format!("/api/arena?key={key}"), "key=notmine1").await;
        let state = expect_state(&got, &game, &channel.shared.token, &address);
        let play = format!(
            "/api/{}/{}/play",
            state["game"]["id"].as_str().expect("id"),
            state["token"].as_str().expect("token")
        );
        // So is the direction; and a key posted with a move is not read, as there.
        let posted = in_background(&address, &format!("{play}?dir=north"), "dir=south&key=notmine1");
        assert_eq!(a_move(&mut channel).await, "North");
        drop(channel);
        let over = posted.await.expect("answered");
        assert_eq!((over.status, over.body.as_str()), (503, "Vindinium - The match is over"));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_second_move_begun_before_its_state_is_refused_and_not_played_though_it_ends_after() {
        let (mut channel, address, key) = server().await;
        let mut game = vindinium();
        assert!(channel.send(&game.observation(0)));
        // One connection kept open for the start and the moves, as a kit's session.
        let mut session = TcpStream::connect(&address).await.expect("the server listens");
        session
            .write_all(post_request(&address, "/api/arena", &format!("key={key}"), true).as_bytes())
            .await
            .expect("sent");
        let state = expect_state(&read_answer(&mut session).await, &game, &channel.shared.token, &address);
        let token = state["token"].as_str().expect("token");
        let play = format!("/api/{}/{token}/play", state["game"]["id"].as_str().expect("id"));
        session.write_all(post_request(&address, &play, "dir=west", true).as_bytes()).await.expect("sent");
        assert_eq!(a_move(&mut channel).await, "West");

        // While that move is held, a second begins to arrive: its head, not yet its
        // body, as from a bot frozen between its turns in the middle of posting it.
        // Nothing else is under way: the next request the server sees is this one.
        let shared = Arc::clone(&channel.shared);
        let began = shared.activity.notified();
        let mut began = std::pin::pin!(began);
        began.as_mut().enable();
        let mut early = TcpStream::connect(&address).await.expect("the server listens");
        let second = post_request(&address, &play, "dir=north", false);
        let (head, body) = second.split_at(second.len() - "dir=north".len());
        early.write_all(head.as_bytes()).await.expect("sent");
        began.await;

        // The next state comes; then the rest of the second move.
        game.submit(vec![(0, BotReply::Line("West".into()))]).expect("a step");
        others_play(&mut game);
        assert!(channel.send(&game.observation(0)));
        expect_state(&read_answer(&mut session).await, &game, token, &address);
        early.write_all(body.as_bytes()).await.expect("sent");
        // Answered at once, not held as a move played.
        let refused = timeout(Duration::from_secs(10), read_answer(&mut early)).await.expect("answered at once");
        assert_eq!((refused.status, refused.body.as_str()), (400, "Vindinium - Wait, you're not supposed to play now"));
        // It was not played: the move for that state is the next one posted.
        assert_eq!(channel.receive_until(Instant::now()).await, None);
        session.write_all(post_request(&address, &play, "dir=south", true).as_bytes()).await.expect("sent");
        assert_eq!(a_move(&mut channel).await, "South");
    }
}
