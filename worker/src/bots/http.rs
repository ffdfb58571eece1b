//! The `http` transport: the bot serves `POST /` and each request is one POST whose
//! response body is the reply.

use std::net::SocketAddr;

use bytes::Bytes;
use farm_engine::BotReply;
use farm_engine::wire::{self, HttpBody, MAX_REPLY_BYTES};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{Duration, Instant, timeout_at};

use super::Received;

/// The port an `http` bot listens on inside its container (also given as `FARM_PORT`).
pub const BOT_PORT: u16 = 8080;
/// How often to retry connecting while a bot is still starting its server.
const CONNECT_RETRY: Duration = Duration::from_millis(50);

/// Requests to one bot's HTTP server.
pub struct HttpChannel {
    address: SocketAddr,
    body: HttpBody,
    pending: Option<(oneshot::Receiver<Received>, JoinHandle<()>)>,
}

impl HttpChannel {
    /// A channel to the bot serving at `address`, sending requests encoded as `body`.
    pub fn new(address: SocketAddr, body: HttpBody) -> Self {
        HttpChannel { address, body, pending: None }
    }

    /// Starts posting `request`. A request still unanswered is abandoned: its reply
    /// would belong to an earlier turn.
    pub fn send(&mut self, request: &str) -> bool {
        self.abandon();
        let (reply_tx, reply_rx) = oneshot::channel();
        let body = wire::http_request(request, self.body);
        let address = self.address;
        let task = tokio::spawn(async move {
            let reply = post(address, body).await;
            let _ = reply_tx.send(Received { reply, at: Instant::now() });
        });
        self.pending = Some((reply_rx, task));
        true
    }

    /// The reply to the last request and when it arrived, or `Timeout` at `deadline`.
    pub async fn receive(&mut self, deadline: Instant) -> Received {
        let Some((reply, task)) = self.pending.take() else {
            return Received { reply: BotReply::Timeout, at: deadline };
        };
        match timeout_at(deadline, reply).await {
            // Arrived after the deadline, while the runner was reading another seat.
            Ok(Ok(received)) if received.at > deadline => Received { reply: BotReply::Timeout, at: deadline },
            Ok(Ok(received)) => received,
            Ok(Err(_)) => Received { reply: BotReply::Crashed, at: Instant::now() },
            Err(_) => {
                task.abort();
                Received { reply: BotReply::Timeout, at: deadline }
            }
        }
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

/// One POST. A bot that is still starting refuses connections: that is retried until
/// the caller's deadline ends the attempt. Transport errors and error statuses are
/// `Crashed` (the Botwars rules disqualify for both).
async fn post(address: SocketAddr, request: wire::HttpRequest) -> BotReply {
    let stream = loop {
        match TcpStream::connect(address).await {
            Ok(stream) => break stream,
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => {
                tokio::time::sleep(CONNECT_RETRY).await;
            }
            Err(_) => return BotReply::Crashed,
        }
    };
    let _ = stream.set_nodelay(true);
    let Ok((mut sender, connection)) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await else {
        return BotReply::Crashed;
    };
    let driver = tokio::spawn(connection);
    let built = hyper::Request::post("/")
        .header(hyper::header::HOST, address.to_string())
        .header(hyper::header::CONTENT_TYPE, request.content_type)
        .body(Full::new(Bytes::from(request.body)));
    let Ok(http_request) = built else { return BotReply::Crashed };
    let reply = match sender.send_request(http_request).await {
        Ok(response) if response.status().is_success() => {
            match Limited::new(response.into_body(), MAX_REPLY_BYTES).collect().await {
                Ok(body) => wire::reply_from_bytes(&body.to_bytes()),
                Err(_) => BotReply::Unreadable,
            }
        }
        _ => BotReply::Crashed,
    };
    driver.abort();
    reply
}
