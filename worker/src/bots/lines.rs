//! A line-oriented conversation over any byte streams: the stdio transport, for a
//! local process's pipes and a container's attach streams.

use farm_engine::BotReply;
use farm_engine::wire::{self, MAX_REPLY_BYTES};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::Received;
use super::cpu::CpuMeter;
use farm_proto::limits;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout_at};

/// Bytes of requests written to the channel but not yet to the bot. A bot that stops
/// reading its input lets them pile up past this (a pipe holds 64 KiB) and then misses
/// its deadlines, instead of blocking the match. Counted in bytes, not requests: a
/// count of requests also filled up when the writer task had merely not run yet
/// between a few quick steps, and an attentive bot was then taken for one not reading.
const MAX_UNWRITTEN_BYTES: usize = 1 << 20;
/// Replies read ahead of being asked for; past this the bot blocks on its output. Each
/// may be [`MAX_REPLY_BYTES`]: this bounds what one bot's output holds in the worker
/// (32 MiB at worst).
const PENDING_REPLIES: usize = limits::REPLIES_AHEAD;

/// Both directions of a line conversation with one bot.
///
/// Requests are written by a task of their own, so a bot that never reads cannot
/// stall the caller; replies are read by another task, so reading never loses a
/// partial line to a timeout.
pub struct LineChannel {
    requests: mpsc::UnboundedSender<Vec<u8>>,
    /// Bytes sent to the writer task and not yet written to the bot.
    unwritten: Arc<AtomicUsize>,
    replies: mpsc::Receiver<Received>,
    /// Replies still owed for requests given up on: they are skipped when they arrive,
    /// so a slow bot's late answer is never taken for the next turn's.
    late: usize,
    meter: Option<Arc<CpuMeter>>,
}

impl LineChannel {
    /// Starts the reader and writer tasks over `output` (what the bot writes) and
    /// `input` (what it reads). The bot's CPU time is read from `meter` as each reply
    /// arrives.
    pub fn new(
        output: impl AsyncRead + Unpin + Send + 'static,
        input: impl AsyncWrite + Unpin + Send + 'static,
        meter: Option<Arc<CpuMeter>>,
    ) -> Self {
        let (request_tx, request_rx) = mpsc::unbounded_channel();
        let (reply_tx, reply_rx) = mpsc::channel(PENDING_REPLIES);
        let unwritten = Arc::new(AtomicUsize::new(0));
        tokio::spawn(write_requests(input, request_rx, Arc::clone(&unwritten)));
        tokio::spawn(read_replies(output, reply_tx, meter.clone()));
        LineChannel { requests: request_tx, unwritten, replies: reply_rx, late: 0, meter }
    }

    /// Queues one request line. Returns `false` when the bot is not keeping up with
    /// its input or is gone.
    pub fn send(&mut self, request: &str) -> bool {
        if self.unwritten.load(Ordering::Acquire) > MAX_UNWRITTEN_BYTES {
            return false;
        }
        let line = wire::stdio_request(request);
        self.unwritten.fetch_add(line.len(), Ordering::AcqRel);
        self.requests.send(line).is_ok()
    }

    /// The reply to the oldest unanswered request, when it arrived and the bot's CPU
    /// time then, if it arrives by `until` (`Crashed` once the bot has closed its
    /// output); `None` if not, the request still unanswered: wait again, or
    /// [`LineChannel::give_up`] on it.
    pub async fn receive_until(&mut self, until: Instant) -> Option<Received> {
        loop {
            match timeout_at(until, self.replies.recv()).await {
                Err(_) => return None,
                Ok(None) => {
                    let cpu = self.meter.as_ref().and_then(|meter| meter.used());
                    return Some(Received { reply: BotReply::Crashed, at: Instant::now(), cpu });
                }
                Ok(Some(_)) if self.late > 0 => self.late -= 1,
                Ok(Some(received)) => return Some(received),
            }
        }
    }

    /// Stops waiting for the reply to the oldest unanswered request: it is skipped
    /// when it comes.
    pub fn give_up(&mut self) {
        self.late += 1;
    }
}

async fn write_requests(
    mut input: impl AsyncWrite + Unpin,
    mut requests: mpsc::UnboundedReceiver<Vec<u8>>,
    unwritten: Arc<AtomicUsize>,
) {
    while let Some(line) = requests.recv().await {
        if input.write_all(&line).await.is_err() || input.flush().await.is_err() {
            return;
        }
        unwritten.fetch_sub(line.len(), Ordering::AcqRel);
    }
}

/// Splits the bot's output into replies. A line over [`MAX_REPLY_BYTES`] is reported
/// as `Unreadable` as soon as it passes the cap (a bot writing endlessly without a
/// newline gets its answer at once) and the rest of it is skipped.
async fn read_replies(output: impl AsyncRead + Unpin, replies: mpsc::Sender<Received>, meter: Option<Arc<CpuMeter>>) {
    let mut output = BufReader::new(output);
    let mut line = Vec::new();
    let mut skipping = false;
    loop {
        let chunk = match output.fill_buf().await {
            Ok([]) | Err(_) => return,
            Ok(chunk) => chunk,
        };
        let (part, complete) = match chunk.iter().position(|&b| b == b'\n') {
            Some(end) => (&chunk[..end], true),
            None => (chunk, false),
        };
        let used = part.len() + usize::from(complete);
        if !skipping {
            line.extend_from_slice(part);
        }
        output.consume(used);
        let reply = if !skipping && line.len() > MAX_REPLY_BYTES {
            skipping = !complete;
            line.clear();
            Some(BotReply::Unreadable)
        } else if complete && skipping {
            skipping = false;
            None
        } else if complete {
            let reply = wire::reply_from_bytes(&line);
            line.clear();
            Some(reply)
        } else {
            None
        };
        if let Some(reply) = reply
            && replies.send(Received::now(reply, meter.as_deref())).await.is_err()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::duplex;

    async fn reply(channel: &mut LineChannel) -> BotReply {
        channel.receive_until(Instant::now() + Duration::from_secs(30)).await.expect("a reply in time").reply
    }

    #[tokio::test(start_paused = true)]
    async fn a_reply_not_given_up_on_is_still_the_one_waited_for() {
        let (bot_side, our_side) = duplex(1 << 16);
        let (our_read, our_write) = tokio::io::split(our_side);
        let mut channel = LineChannel::new(our_read, our_write, None);
        let (_bot_read, mut bot_write) = tokio::io::split(bot_side);
        assert_eq!(channel.receive_until(Instant::now() + Duration::from_millis(5)).await, None);
        bot_write.write_all(b"after a while\n").await.expect("write");
        assert_eq!(reply(&mut channel).await, BotReply::Line("after a while".into()));
    }

    #[tokio::test]
    async fn replies_come_back_in_order_and_eof_means_crashed() {
        let (bot_side, our_side) = duplex(1 << 16);
        let (our_read, our_write) = tokio::io::split(our_side);
        let mut channel = LineChannel::new(our_read, our_write, None);
        let (mut bot_read, mut bot_write) = tokio::io::split(bot_side);
        assert!(channel.send("hello"));
        let mut request = vec![0u8; 6];
        tokio::io::AsyncReadExt::read_exact(&mut bot_read, &mut request).await.expect("request arrives");
        assert_eq!(request, b"hello\n");
        bot_write.write_all(b"North\r\nSouth\n").await.expect("write");
        assert_eq!(reply(&mut channel).await, BotReply::Line("North".into()));
        assert_eq!(reply(&mut channel).await, BotReply::Line("South".into()));
        drop(bot_write);
        drop(bot_read);
        assert_eq!(reply(&mut channel).await, BotReply::Crashed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_reply_is_skipped_not_taken_for_the_next_turn() {
        let (bot_side, our_side) = duplex(1 << 16);
        let (our_read, our_write) = tokio::io::split(our_side);
        let mut channel = LineChannel::new(our_read, our_write, None);
        let (_bot_read, mut bot_write) = tokio::io::split(bot_side);
        assert_eq!(channel.receive_until(Instant::now() + Duration::from_millis(50)).await, None);
        channel.give_up();
        bot_write.write_all(b"late\nfresh\n").await.expect("write");
        assert_eq!(reply(&mut channel).await, BotReply::Line("fresh".into()));
    }

    #[tokio::test]
    async fn an_endless_line_is_unreadable_as_soon_as_it_passes_the_cap() {
        let (bot_side, our_side) = duplex(1 << 16);
        let (our_read, our_write) = tokio::io::split(our_side);
        let mut channel = LineChannel::new(our_read, our_write, None);
        let (_bot_read, mut bot_write) = tokio::io::split(bot_side);
        let writer = tokio::spawn(async move {
            let block = vec![b'x'; 64 * 1024];
            for _ in 0..(MAX_REPLY_BYTES / block.len() + 2) {
                bot_write.write_all(&block).await.expect("write");
            }
            bot_write.write_all(b"\nok\n").await.expect("write");
        });
        assert_eq!(reply(&mut channel).await, BotReply::Unreadable);
        assert_eq!(reply(&mut channel).await, BotReply::Line("ok".into()));
        writer.await.expect("writer finishes");
    }
}
