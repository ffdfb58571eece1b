//! One simulated worker: it signs in to RabbitMQ as its own broker user and speaks the
//! farm's protocol as `farm-worker` does (one channel per slot at prefetch 1, an audit
//! lane, a confirm-mode publisher naming itself in `user_id`, an exclusive queue on
//! `farm.control`), but "plays" a match by waiting a drawn match length and answering
//! with a result of a real worker's size and shape, its replay written to the store.
//!
//! Like a real worker it gives a job back with a `returned` notice when it stops before
//! a match is over, and, after a lost connection, sends notices for the deliveries it
//! held once it is back. Audits of other workers' matches are checked against the
//! stored replay's hash; its own wait for another worker.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use farm_proto::{
    AUDITS_QUEUE, AuditEnvelope, AuditVerdict, JOBS_QUEUE, JobEnvelope, MatchResult, PlayerOutcome, PlayerResult,
    PlayerStatus, RESULTS_QUEUE, Reproduction, SCHEMA_VERSION, TimeSummary,
};
use farm_runtime::queue::{self, ConfirmedPublisher};
use farm_runtime::settle::{Settlement, settle};
use farm_runtime::storage::{AttemptKeys, Storage};
use farm_worker::control::Listeners;
use farm_worker::live::LiveBoard;
use farm_worker::quarantine::Quarantine;
use futures_util::StreamExt;
use lapin::message::Delivery;
use lapin::options::{BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, Consumer};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

/// Rounds an audit of its own match waits for another worker before it is skipped, as
/// `farm-worker` does.
const MAX_WAITING_ROUNDS: u64 = 150;
/// The longest replay an audit reads.
const MAX_REPLAY_BYTES: u64 = 64 << 20;
/// Connections being opened at once: thousands at once overflow the broker's listen
/// backlog (it resets them, and they retry).
const CONNECTING_AT_ONCE: usize = 64;
/// The frame size simulated workers ask for. lapin keeps 32 frames of buffer each way
/// per connection: 8 MiB at the broker's default of 128 KiB, which 10,000 connections
/// in one process cannot hold (real workers are a connection each); results are a few
/// KiB, in one or two frames of this size.
const FRAME_MAX: u32 = 8192;

/// How long simulated matches last: uniform in `mean × (1 ± spread)`.
#[derive(Debug, Clone, Copy)]
pub struct MatchLength {
    /// The mean.
    pub mean: Duration,
    /// The half-width of the interval, as a fraction of the mean (0 to 1).
    pub spread: f64,
}

impl MatchLength {
    /// One match's length.
    fn draw(&self, rng: &mut impl RngExt) -> Duration {
        let factor = 1.0 + self.spread * (rng.random::<f64>() * 2.0 - 1.0);
        self.mean.mul_f64(factor.max(0.0))
    }

    /// The longest a match can last.
    pub fn longest(&self) -> Duration {
        self.mean.mul_f64(1.0 + self.spread)
    }
}

/// What the whole fleet shares: the store, what to write, and what it counted.
pub struct Fleet {
    /// Where replays go; none: results name a replay key but nothing is written.
    pub storage: Storage,
    /// The share of matches whose replay is written (the rest are only named).
    pub replay_fraction: f64,
    /// Lines of play in each replay.
    pub replay_lines: usize,
    /// How long matches last.
    pub length: MatchLength,
    /// Replay keys deliberately not written: an audit of one confirms it unread.
    unwritten: Mutex<HashSet<String>>,
    /// Every job whose result a simulated worker published, with how often the broker
    /// confirmed it (more than once: a redelivery after a lost ack) and whether a publish
    /// of it was left unconfirmed (the broker may or may not have it).
    answered: Mutex<HashMap<String, Answered>>,
    /// Counters.
    pub counts: Counts,
    /// Permits to open a connection ([`CONNECTING_AT_ONCE`]).
    connecting: tokio::sync::Semaphore,
}

/// What the fleet published of one job.
#[derive(Debug, Default, Clone, Copy)]
pub struct Answered {
    /// Results of it the broker confirmed.
    pub confirmed: u32,
    /// Results of it whose publish failed unconfirmed.
    pub uncertain: u32,
}

/// What the fleet did, counted as it goes.
#[derive(Default)]
pub struct Counts {
    /// Results confirmed by the broker.
    pub results: AtomicU64,
    /// `returned` notices confirmed.
    pub notices: AtomicU64,
    /// Audit verdicts confirmed.
    pub verdicts: AtomicU64,
    /// Audit verdicts that found a mismatch (should stay 0).
    pub mismatches: AtomicU64,
    /// Objects written to the store.
    pub puts: AtomicU64,
    /// Objects read from the store (audits).
    pub gets: AtomicU64,
    /// Store requests that failed.
    pub storage_errors: AtomicU64,
    /// Connections lost and made again.
    pub reconnects: AtomicU64,
    /// Workers the coordinator quarantined.
    pub quarantined: AtomicU64,
}

impl Fleet {
    /// A fleet writing to `storage`.
    pub fn new(storage: Storage, replay_fraction: f64, replay_lines: usize, length: MatchLength) -> Self {
        Fleet {
            storage,
            replay_fraction,
            replay_lines,
            length,
            unwritten: Mutex::default(),
            answered: Mutex::default(),
            counts: Counts::default(),
            connecting: tokio::sync::Semaphore::new(CONNECTING_AT_ONCE),
        }
    }

    /// Every job the fleet answered, as it stands.
    pub fn answered(&self) -> HashMap<String, Answered> {
        self.answered.lock().map(|answered| answered.clone()).unwrap_or_default()
    }

    fn note(&self, job_id: &str, confirmed: bool) {
        if let Ok(mut answered) = self.answered.lock() {
            let entry = answered.entry(job_id.to_owned()).or_default();
            if confirmed {
                entry.confirmed += 1;
            } else {
                entry.uncertain += 1;
            }
        }
    }
}

/// One simulated worker: its broker identity and slots.
pub struct SimulatedWorker {
    /// Its name, which is its broker user.
    pub id: String,
    /// Its AMQP URL, signed in as itself.
    pub url: String,
    /// Matches it plays at once (one channel each).
    pub slots: u16,
    /// Its process instance, as a real worker names it in its answers.
    instance: String,
}

/// Why a session with the broker ended.
enum Ended {
    /// Told to stop (the fleet drains) or quarantined.
    Stopped,
    /// The connection failed: the jobs it held go back with a notice once it is back.
    Lost(Vec<(JobEnvelope, u32)>),
}

/// What one session's lanes share.
struct Session {
    worker: Arc<SimulatedWorker>,
    fleet: Arc<Fleet>,
    publisher: ConfirmedPublisher,
    /// Jobs held now, by job id (the envelope and its attempt).
    held: Mutex<HashMap<String, (JobEnvelope, u32)>>,
    drain: watch::Receiver<bool>,
}

impl SimulatedWorker {
    /// The worker `id` signing in with `url` (a query of its own aside), with `slots` slots.
    pub fn new(id: String, url: String, slots: u16, seed: u64) -> Self {
        let url = format!("{url}?frame_max={FRAME_MAX}");
        SimulatedWorker { instance: format!("{seed:012x}"), id, url, slots }
    }

    /// Runs until `drain` turns true: connects (retrying with backoff), serves, and
    /// connects again when the connection is lost. `kill` turning true ends it at once,
    /// as a killed process: its unacked jobs go back when the broker sees the connection
    /// gone.
    pub async fn run(
        self: Arc<Self>,
        fleet: Arc<Fleet>,
        connected: Arc<tokio::sync::Semaphore>,
        mut drain: watch::Receiver<bool>,
        mut kill: watch::Receiver<bool>,
    ) {
        let mut lost: Vec<(JobEnvelope, u32)> = Vec::new();
        let mut first = true;
        loop {
            let session = async {
                let mut stop = drain.clone();
                let _permit = fleet.connecting.acquire().await.ok()?;
                queue::connect_with_backoff(&self.url, &mut stop).await
            };
            let connection = tokio::select! {
                biased;
                _ = kill.wait_for(|kill| *kill) => return,
                connection = session => connection,
            };
            let Some(connection) = connection else { return };
            let connection = Arc::new(connection);
            if first {
                connected.add_permits(1);
                first = false;
            } else {
                fleet.counts.reconnects.fetch_add(1, Ordering::Relaxed);
            }
            let served = tokio::select! {
                biased;
                _ = kill.wait_for(|kill| *kill) => {
                    // Killed: the connection goes without a word.
                    drop(connection);
                    return;
                }
                ended = self.serve(&connection, &fleet, std::mem::take(&mut lost), drain.clone()) => ended,
            };
            match served {
                Ended::Stopped => {
                    let _ =
                        tokio::time::timeout(Duration::from_secs(5), connection.close(200, "draining".into())).await;
                    return;
                }
                Ended::Lost(held) => lost = held,
            }
            if *drain.borrow_and_update() {
                return;
            }
        }
    }

    /// One session on `connection`: notices for `lost` first, then the lanes.
    async fn serve(
        self: &Arc<Self>,
        connection: &Arc<Connection>,
        fleet: &Arc<Fleet>,
        lost: Vec<(JobEnvelope, u32)>,
        drain: watch::Receiver<bool>,
    ) -> Ended {
        let publisher = match ConfirmedPublisher::open_as(connection, &self.id).await {
            Ok(publisher) => publisher,
            Err(_) => return Ended::Lost(lost),
        };
        let session = Arc::new(Session {
            worker: Arc::clone(self),
            fleet: Arc::clone(fleet),
            publisher,
            held: Mutex::default(),
            drain,
        });
        for (job, attempt) in &lost {
            let reason = "the worker lost its broker connection while it held the job";
            if !session.notice(job, *attempt, reason).await {
                return Ended::Lost(lost);
            }
        }
        // The coordinator is heard as a real worker hears it: by the worker's own listener.
        let quarantine = Quarantine::default();
        let mut lanes = tokio::task::JoinSet::new();
        for lane in 0..self.slots {
            lanes.spawn(Arc::clone(&session).lane(Arc::clone(connection), lane, quarantine.subscribe()));
        }
        lanes.spawn(Arc::clone(&session).audit_lane(Arc::clone(connection), quarantine.subscribe()));
        let listeners =
            Listeners { worker_id: self.id.clone(), quarantine: quarantine.clone(), live: LiveBoard::new(0) };
        let control = farm_worker::control::listen(Arc::clone(connection), listeners);
        tokio::pin!(control);
        let mut failed = false;
        loop {
            tokio::select! {
                lane = lanes.join_next() => match lane {
                    None => break,
                    Some(Ok(true)) => {}
                    Some(_) => {
                        failed = true;
                        break;
                    }
                },
                _ = &mut control => {
                    failed = true;
                    break;
                }
            }
        }
        lanes.abort_all();
        while lanes.join_next().await.is_some() {}
        if quarantine.reason().is_some() {
            fleet.counts.quarantined.fetch_add(1, Ordering::Relaxed);
        }
        if failed {
            let held = session.held.lock().map(|held| held.values().cloned().collect()).unwrap_or_default();
            Ended::Lost(held)
        } else {
            Ended::Stopped
        }
    }
}

impl Session {
    /// Publishes `result` for `job`: `true` once the broker confirmed it.
    async fn publish(&self, job: &JobEnvelope, attempt: u32, result: MatchResult) -> bool {
        let envelope =
            farm_proto::ResultEnvelope::new(job, &self.worker.id, attempt, result).from_instance(&self.worker.instance);
        let Ok(body) = serde_json::to_vec(&envelope) else { return false };
        self.publisher.publish(RESULTS_QUEUE, &body).await.is_ok()
    }

    /// Sends a `returned` notice for `job`: `true` once confirmed.
    async fn notice(&self, job: &JobEnvelope, attempt: u32, reason: &str) -> bool {
        let sent = self.publish(job, attempt, MatchResult::Returned { reason: reason.to_owned(), fault: false }).await;
        if sent {
            self.fleet.counts.notices.fetch_add(1, Ordering::Relaxed);
        }
        sent
    }

    /// A lane's next delivery, unless the worker drains or is quarantined first.
    async fn next(&self, consumer: &mut Consumer, quarantine: &mut watch::Receiver<Option<String>>) -> Next {
        let mut drain = self.drain.clone();
        tokio::select! {
            biased;
            _ = drain.wait_for(|stop| *stop) => Next::Stop,
            _ = quarantine.wait_for(Option::is_some) => Next::Stop,
            delivery = consumer.next() => match delivery {
                Some(Ok(delivery)) => Next::Delivery(Box::new(delivery)),
                _ => Next::Gone,
            },
        }
    }

    /// One slot: a channel at prefetch 1 on `farm.jobs`. `true` when it stopped as told,
    /// `false` when its channel could not be had (the connection is gone).
    async fn lane(
        self: Arc<Self>,
        connection: Arc<Connection>,
        lane: u16,
        mut quarantine: watch::Receiver<Option<String>>,
    ) -> bool {
        let tag = format!("{}-{}-{lane}", self.worker.id, self.worker.instance);
        let mut drain = self.drain.clone();
        let Some((_channel, mut consumer)) = consume(&connection, JOBS_QUEUE, &tag).await else { return false };
        let mut rng = ChaCha8Rng::seed_from_u64(seed_of(&tag));
        loop {
            let delivery = match self.next(&mut consumer, &mut quarantine).await {
                Next::Delivery(delivery) => delivery,
                Next::Stop => return true,
                Next::Gone => return false,
            };
            let attempt = queue::attempt(&delivery.properties);
            let job = match serde_json::from_slice::<JobEnvelope>(&delivery.data) {
                Ok(job) if job.schema == SCHEMA_VERSION => job,
                _ => {
                    let _ = settle(&delivery.acker, Settlement::Reject, drain.clone()).await;
                    continue;
                }
            };
            let job_id = job.job.job_id.clone();
            if let Ok(mut held) = self.held.lock() {
                held.insert(job_id.clone(), (job.clone(), attempt));
            }
            let length = self.fleet.length.draw(&mut rng);
            let played = tokio::select! {
                biased;
                _ = drain.wait_for(|stop| *stop) => false,
                () = tokio::time::sleep(length) => true,
            };
            let settlement = if !played {
                // Stopping before the match is over: it goes back, with a notice.
                self.notice(&job, attempt, "the worker stopped before the match ended").await;
                Settlement::REQUEUE
            } else {
                match self.answer(&job, attempt, length, &mut rng).await {
                    Ok(result) => {
                        let confirmed = self.publish(&job, attempt, result).await;
                        self.fleet.note(&job_id, confirmed);
                        if confirmed {
                            self.fleet.counts.results.fetch_add(1, Ordering::Relaxed);
                            Settlement::Ack
                        } else {
                            // Publishing failed: the connection is likely gone, and the
                            // job goes back with it.
                            return false;
                        }
                    }
                    Err(reason) => {
                        self.notice(&job, attempt, &reason).await;
                        Settlement::REQUEUE
                    }
                }
            };
            if settle(&delivery.acker, settlement, drain.clone()).await.is_err() {
                return false;
            }
            if let Ok(mut held) = self.held.lock() {
                held.remove(&job_id);
            }
        }
    }

    /// The result a real worker would publish for `job`, its replay written first (or,
    /// for the share left unwritten, only named).
    async fn answer(
        &self,
        job: &JobEnvelope,
        attempt: u32,
        length: Duration,
        rng: &mut ChaCha8Rng,
    ) -> Result<MatchResult, String> {
        let keys = AttemptKeys::new(&job.job.tournament_id, &job.job.job_id, attempt);
        let lines = replay_lines(&job.job.job_id, self.fleet.replay_lines, rng);
        let replay_sha256 = farm_engine::replay::digest(lines.iter().map(String::as_str));
        if rng.random::<f64>() < self.fleet.replay_fraction {
            let mut upload = self.fleet.storage.replay_upload(&keys.replay());
            let written = async {
                for line in &lines {
                    upload.write_all(line.as_bytes()).await?;
                    upload.write_all(b"\n").await?;
                }
                upload.shutdown().await
            };
            if let Err(error) = written.await {
                self.fleet.counts.storage_errors.fetch_add(1, Ordering::Relaxed);
                return Err(format!("storing the replay failed: {error}"));
            }
            self.fleet.counts.puts.fetch_add(1, Ordering::Relaxed);
        } else if let Ok(mut unwritten) = self.fleet.unwritten.lock() {
            unwritten.insert(keys.replay());
        }
        let seats = job.job.bots.len();
        let scores: Vec<i64> = (0..seats).map(|_| rng.random_range(0..100)).collect();
        let players = job
            .job
            .bots
            .iter()
            .enumerate()
            .map(|(seat, bot)| {
                let rank = 1 + scores.iter().filter(|other| **other > scores[seat]).count() as u32;
                let mean_ms = rng.random_range(1.0..50.0);
                PlayerResult {
                    seat,
                    name: bot.name.clone(),
                    outcome: PlayerOutcome { score: scores[seat], rank, status: PlayerStatus::Ok },
                    timeouts: 0,
                    mean_reply_ms: mean_ms,
                    max_reply_ms: mean_ms * 3.0,
                    p99_reply_ms: mean_ms * 2.0,
                    cpu: Some(TimeSummary { mean_ms: mean_ms * 0.8, p99_ms: mean_ms * 1.8, max_ms: mean_ms * 2.9 }),
                    exit_code: Some(0),
                    oom_killed: false,
                    log_key: None,
                    crash: None,
                }
            })
            .collect();
        Ok(MatchResult::Completed {
            steps: self.fleet.replay_lines as u64,
            players,
            replay_key: keys.replay(),
            replay_sha256,
            duration_ms: length.as_millis() as u64,
            // As a real worker records it: the job whole, and no image for these seats.
            reproduction: Some(Box::new(Reproduction {
                engine: format!("farm-engine {}", env!("CARGO_PKG_VERSION")),
                job: job.job.clone(),
                images: vec![None; seats],
            })),
        })
    }

    /// The audit lane: verdicts on other workers' matches, from their stored replays.
    async fn audit_lane(
        self: Arc<Self>,
        connection: Arc<Connection>,
        mut quarantine: watch::Receiver<Option<String>>,
    ) -> bool {
        let tag = format!("{}-{}-audit", self.worker.id, self.worker.instance);
        let Some((_channel, mut consumer)) = consume(&connection, AUDITS_QUEUE, &tag).await else { return false };
        loop {
            let delivery = match self.next(&mut consumer, &mut quarantine).await {
                Next::Delivery(delivery) => delivery,
                Next::Stop => return true,
                Next::Gone => return false,
            };
            let settlement = match serde_json::from_slice::<AuditEnvelope>(&delivery.data) {
                Ok(envelope) if envelope.schema == SCHEMA_VERSION => self.audit(&delivery, envelope).await,
                _ => Settlement::Ack,
            };
            if settle(&delivery.acker, settlement, self.drain.clone()).await.is_err() {
                return false;
            }
        }
    }

    /// One audit: its verdict published (then acked), or back to wait.
    async fn audit(&self, delivery: &Delivery, envelope: AuditEnvelope) -> Settlement {
        let audit = envelope.audit;
        let verdict = if audit.played_by == self.worker.id {
            let rounds = queue::rounds_through(&delivery.properties, AUDITS_QUEUE);
            if rounds < MAX_WAITING_ROUNDS {
                return Settlement::Reject;
            }
            AuditVerdict::Skipped { reason: format!("no other worker took it in {rounds} rounds") }
        } else if self.fleet.unwritten.lock().is_ok_and(|unwritten| unwritten.contains(&audit.replay_key)) {
            AuditVerdict::Confirmed
        } else {
            match self.fleet.storage.read_replay(&audit.replay_key, MAX_REPLAY_BYTES).await {
                Ok(text) => {
                    self.fleet.counts.gets.fetch_add(1, Ordering::Relaxed);
                    let text = String::from_utf8_lossy(&text);
                    if farm_engine::replay::digest(text.lines()) == audit.replay_sha256 {
                        AuditVerdict::Confirmed
                    } else {
                        self.fleet.counts.mismatches.fetch_add(1, Ordering::Relaxed);
                        AuditVerdict::Mismatch { reason: "the stored replay's hash differs".to_owned() }
                    }
                }
                Err(_) => {
                    self.fleet.counts.storage_errors.fetch_add(1, Ordering::Relaxed);
                    return Settlement::Reject;
                }
            }
        };
        let answer = farm_proto::ResultEnvelope {
            schema: SCHEMA_VERSION,
            job_id: audit.job_id.clone(),
            tournament_id: audit.tournament_id.clone(),
            worker_id: self.worker.id.clone(),
            token: envelope.token,
            instance: Some(self.worker.instance.clone()),
            attempt: 0,
            result: MatchResult::Audited { verdict },
        };
        let Ok(body) = serde_json::to_vec(&answer) else { return Settlement::Reject };
        if self.publisher.publish(RESULTS_QUEUE, &body).await.is_err() {
            return Settlement::Reject;
        }
        self.fleet.counts.verdicts.fetch_add(1, Ordering::Relaxed);
        Settlement::Ack
    }
}

/// What a lane's wait gave.
enum Next {
    /// A delivery to handle (boxed: a delivery is large, the other answers empty).
    Delivery(Box<Delivery>),
    /// The worker drains or is quarantined.
    Stop,
    /// The channel is gone (with the connection, as a rule).
    Gone,
}

/// Opens a lane on `queue`: a channel of its own at prefetch 1, consuming as `tag`. The
/// channel is returned with its consumer: dropping it closes the lane.
async fn consume(connection: &Connection, queue: &'static str, tag: &str) -> Option<(Channel, Consumer)> {
    let channel = connection.create_channel().await.ok()?;
    channel.basic_qos(1, BasicQosOptions::default()).await.ok()?;
    let options = BasicConsumeOptions::default();
    let consumer = channel.basic_consume(queue.into(), tag.into(), options, FieldTable::default()).await.ok()?;
    Some((channel, consumer))
}

/// A replay's lines of the size a real one has: a header, `frames` frames of play
/// (numbers a compressor cannot fold away), a footer.
fn replay_lines(job_id: &str, frames: usize, rng: &mut ChaCha8Rng) -> Vec<String> {
    let mut lines = Vec::with_capacity(frames + 2);
    lines.push(format!(r#"{{"kind":"header","job":"{job_id}","simulated":true}}"#));
    for step in 0..frames {
        let cells: Vec<String> = (0..12).map(|_| rng.random_range(0..400u32).to_string()).collect();
        lines.push(format!(r#"{{"step":{step},"actions":[{}],"scores":[{},{}]}}"#, cells.join(","), step, step / 2));
    }
    lines.push(r#"{"kind":"footer"}"#.to_owned());
    lines
}

/// A seed from a lane's tag: every lane draws its own lengths and scores.
fn seed_of(tag: &str) -> u64 {
    tag.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3))
}
