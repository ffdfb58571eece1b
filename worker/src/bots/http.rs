//! The `http` transport: the bot serves `POST /` and each request is one POST whose
//! response body is the reply. A container's bot serves on a port of its own loopback
//! (the container has no network) and is reached through its supervisor; a local
//! process serves on a loopback port of the worker's host.

use bytes::Bytes;
use farm_engine::BotReply;
use farm_engine::wire::{self, HttpBody, MAX_REPLY_BYTES};
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{Duration, Instant, timeout_at};

use super::Received;
use super::cpu::CpuMeter;
use super::supervisor::Supervisor;

/// The port an `http` bot listens on inside its container (also given as `FARM_PORT`).
pub const BOT_PORT: u16 = 8080;
/// How often to retry connecting while a bot is still starting its server.
const CONNECT_RETRY: Duration = Duration::from_millis(50);

/// Requests to one bot's HTTP server, over one kept-alive connection while the bot
/// keeps it open (a bot that closes it after each answer gets a new one per request).
pub struct HttpChannel {
    server: BotServer,
    body: HttpBody,
    /// The connection of the last answered request, ready for the next.
    idle: Option<Connection>,
    pending: Option<(oneshot::Receiver<Answered>, JoinHandle<()>)>,
    meter: Option<Arc<CpuMeter>>,
}

/// Where a bot's HTTP server is reached.
#[derive(Debug, Clone)]
pub enum BotServer {
    /// A port inside a container with no network, reached through the container's
    /// supervisor, which connects there and hands the socket over.
    Supervised {
        /// The container's supervisor.
        supervisor: Supervisor,
        /// The bot's port inside the container.
        port: u16,
    },
    /// A local process's server on a loopback port of the worker's host.
    Loopback(SocketAddr),
}

impl BotServer {
    /// The port the bot serves on, as it sees it (its `Host` header).
    fn port(&self) -> u16 {
        match self {
            BotServer::Supervised { port, .. } => *port,
            BotServer::Loopback(address) => address.port(),
        }
    }

    /// A connection to the bot's server; `None` while nothing listens there yet.
    async fn try_connect(&self) -> std::io::Result<Option<TcpStream>> {
        match self {
            BotServer::Supervised { supervisor, port } => supervisor.connect(*port).await,
            BotServer::Loopback(address) => match TcpStream::connect(address).await {
                Ok(stream) => Ok(Some(stream)),
                Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => Ok(None),
                Err(error) => Err(error),
            },
        }
    }
}

/// A reply, and the connection that carried it if it can carry the next request.
type Answered = (Received, Option<Connection>);

impl HttpChannel {
    /// A channel to the bot serving at `server`, sending requests encoded as `body`;
    /// the bot's CPU time is read from `meter` as each reply arrives.
    pub fn new(server: BotServer, body: HttpBody, meter: Option<Arc<CpuMeter>>) -> Self {
        HttpChannel { server, body, idle: None, pending: None, meter }
    }

    /// Starts posting `request`. A request still unanswered is abandoned with its
    /// connection: its reply would belong to an earlier turn.
    pub fn send(&mut self, request: &str) -> bool {
        self.abandon();
        let (reply_tx, reply_rx) = oneshot::channel();
        let body = wire::http_request(request, self.body);
        let (server, idle, meter) = (self.server.clone(), self.idle.take(), self.meter.clone());
        let task = tokio::spawn(async move {
            let (reply, connection) = post(&server, idle, body).await;
            let _ = reply_tx.send((Received::now(reply, meter.as_deref()), connection));
        });
        self.pending = Some((reply_rx, task));
        true
    }

    /// The reply to the last request, when it arrived and the bot's CPU time then, if
    /// it arrives by `until`; `None` if not, the request still pending: wait again, or
    /// [`HttpChannel::give_up`] on it.
    pub async fn receive_until(&mut self, until: Instant) -> Option<Received> {
        let Some((reply, _)) = &mut self.pending else {
            // Nothing asked: nothing comes.
            tokio::time::sleep_until(until).await;
            return None;
        };
        let answered = timeout_at(until, reply).await.ok()?;
        self.pending = None;
        Some(match answered {
            Ok((received, connection)) => {
                self.idle = connection;
                received
            }
            Err(_) => Received::now(BotReply::Crashed, self.meter.as_deref()),
        })
    }

    /// Abandons the pending request with its connection.
    pub fn give_up(&mut self) {
        self.abandon();
    }

    fn abandon(&mut self) {
        if let Some((_, task)) = self.pending.take() {
            task.abort();
        }
    }
}

impl Drop for HttpChannel {
    fn drop(&mut self) {
        self.abandon();
    }
}

/// An HTTP/1.1 connection to a bot: the request side and the task driving it.
struct Connection {
    sender: SendRequest<Full<Bytes>>,
    driver: JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// Connects to the bot. A bot that is still starting refuses connections: that is
/// retried until the caller's deadline ends the attempt. `None` on any other failure.
async fn connect(server: &BotServer) -> Option<Connection> {
    let stream = loop {
        match server.try_connect().await {
            Ok(Some(stream)) => break stream,
            Ok(None) => tokio::time::sleep(CONNECT_RETRY).await,
            Err(_) => return None,
        }
    };
    let _ = stream.set_nodelay(true);
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.ok()?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    Some(Connection { sender, driver })
}

/// One POST, on `idle` if it is still open, else on a new connection; returns the
/// reply and the connection if it can carry the next request. A request the kept
/// connection did not take (the bot closed it meanwhile) is sent once more on a new
/// one: it never reached the bot. Transport errors and error statuses are `Crashed`
/// (the Botwars rules disqualify for both).
async fn post(
    server: &BotServer,
    idle: Option<Connection>,
    request: wire::HttpRequest,
) -> (BotReply, Option<Connection>) {
    let body = Bytes::from(request.body);
    let build = || {
        hyper::Request::post("/")
            .header(hyper::header::HOST, format!("localhost:{}", server.port()))
            .header(hyper::header::CONTENT_TYPE, request.content_type)
            .body(Full::new(body.clone()))
    };
    let mut reused = idle.is_some();
    let mut connection = match idle {
        Some(connection) => connection,
        None => match connect(server).await {
            Some(connection) => connection,
            None => return (BotReply::Crashed, None),
        },
    };
    let response = loop {
        let Ok(http_request) = build() else { return (BotReply::Crashed, None) };
        let sent = match connection.sender.ready().await {
            Ok(()) => connection.sender.try_send_request(http_request).await.map_err(|mut error| error.take_message()),
            Err(_) => Err(Some(http_request)),
        };
        match sent {
            Ok(response) => break response,
            // Not sent: the kept connection had closed. A new one, once.
            Err(Some(_)) if reused => {
                reused = false;
                connection = match connect(server).await {
                    Some(connection) => connection,
                    None => return (BotReply::Crashed, None),
                };
            }
            Err(_) => return (BotReply::Crashed, None),
        }
    };
    if !response.status().is_success() {
        return (BotReply::Crashed, None);
    }
    match Limited::new(response.into_body(), MAX_REPLY_BYTES).collect().await {
        Ok(body) => {
            let reply = wire::reply_from_bytes(&body.to_bytes());
            (reply, Some(connection).filter(|connection| !connection.sender.is_closed()))
        }
        Err(_) => (BotReply::Unreadable, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpListener;

    use farm_supervisor::fds::{LineReader, send_line};
    use farm_supervisor::protocol::{Reply, Request, SOCKET};
    use std::os::fd::AsFd;

    /// A stand-in for a container's supervisor, in a run directory of its own: it
    /// answers each `connect` with a socket connected to `address`.
    fn supervisor_of(address: SocketAddr) -> (tempfile::TempDir, Supervisor) {
        let run_dir = tempfile::tempdir().expect("a run directory");
        let listener = std::os::unix::net::UnixListener::bind(run_dir.path().join(SOCKET)).expect("listening");
        std::thread::spawn(move || {
            for connection in listener.incoming() {
                let Ok(connection) = connection else { return };
                let line = LineReader::default().read_line(&connection).expect("a request").expect("a line");
                assert!(matches!(Request::parse(&line), Ok(Request::Connect { port: 8080 })), "{line}");
                let stream = std::net::TcpStream::connect(address).expect("the bot listens");
                send_line(&connection, &Reply::Connected.to_string(), &[stream.as_fd()]).expect("answered");
            }
        });
        let supervisor = Supervisor::new(run_dir.path());
        (run_dir, supervisor)
    }

    /// A bot answering `POST /` with `ok`: on one connection for as long as the
    /// client keeps it (`close` false), or closing it after each answer, as HTTP/1.0
    /// servers do. Returns its address and a count of the connections it accepted.
    async fn bot(close: bool) -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let address = listener.local_addr().expect("bound");
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut stream = BufReader::new(stream);
                    loop {
                        let (mut line, mut length) = (String::new(), 0usize);
                        loop {
                            line.clear();
                            if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                                return;
                            }
                            if line == "\r\n" {
                                break;
                            }
                            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                                length = value.trim().parse().unwrap_or(0);
                            }
                        }
                        let mut body = vec![0u8; length];
                        stream.read_exact(&mut body).await.expect("the body");
                        let answer: &[u8] = if close {
                            b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"
                        } else {
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                        };
                        stream.get_mut().write_all(answer).await.expect("the answer");
                        if close {
                            return;
                        }
                    }
                });
            }
        });
        (address, accepted)
    }

    async fn ask(channel: &mut HttpChannel) -> BotReply {
        assert!(channel.send("{}"));
        channel.receive_until(Instant::now() + Duration::from_secs(10)).await.expect("an answer in time").reply
    }

    #[tokio::test]
    async fn requests_share_one_connection_while_the_bot_keeps_it() {
        let (address, accepted) = bot(false).await;
        let (_run_dir, supervisor) = supervisor_of(address);
        let mut channel = HttpChannel::new(BotServer::Supervised { supervisor, port: 8080 }, HttpBody::Json, None);
        for _ in 0..3 {
            assert_eq!(ask(&mut channel).await, BotReply::Line("ok".into()));
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_bot_that_closes_after_each_answer_gets_a_connection_per_request() {
        let (address, accepted) = bot(true).await;
        let (_run_dir, supervisor) = supervisor_of(address);
        let mut channel = HttpChannel::new(BotServer::Supervised { supervisor, port: 8080 }, HttpBody::Json, None);
        for _ in 0..3 {
            assert_eq!(ask(&mut channel).await, BotReply::Line("ok".into()));
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_timed_out_request_takes_its_connection_with_it() {
        // A bot that never answers its first connection, then answers at once.
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let address = listener.local_addr().expect("bound");
        let silent = listener.accept();
        let (_run_dir, supervisor) = supervisor_of(address);
        let mut channel = HttpChannel::new(BotServer::Supervised { supervisor, port: 8080 }, HttpBody::Json, None);
        assert!(channel.send("{}"));
        let _held = silent.await.expect("the first connection");
        assert_eq!(channel.receive_until(Instant::now() + Duration::from_millis(50)).await, None);
        channel.give_up();
        assert!(
            channel.idle.is_none() && channel.pending.is_none(),
            "the silent connection is not kept for the next turn"
        );
    }
}
