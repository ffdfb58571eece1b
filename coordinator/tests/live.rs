//! Matches watched as they are played, against the real services: a `farm-coordinator
//! serve` process, a `farm-worker serve` process playing the games' example Python bots
//! as local processes, slowed by `tests/live/slowly.py` so that a match lasts seconds,
//! RabbitMQ and the S3 server; headless Chromium for the pages.
//!
//! - every line a viewer is sent is the stored replay's line of that number, from the
//!   first, with no gap and no repeat, for a viewer who comes late too;
//! - a viewer that reads nothing holds the coordinator's memory flat and slows neither
//!   the match nor the other viewers (it skips what the buffer let go, told so);
//! - frames from a worker the broker does not vouch for, or without the job's token,
//!   or from another worker than the one relaying the match, are refused;
//! - in Chromium, each game's match page plays its match live, then shows the stored
//!   replay, whose last frame is the last the live view showed.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use farm_testkit::{Vhost, WorkerProcess, eventually, http_get, repo, unique};
use support::chromium::{Chromium, LAPTOP, js, testid};
use support::{CoordinatorProcess, TOKEN, cli};

/// Each game's example Python bot, the rules and the seats of a match of it that lasts
/// seconds when each reply is held back `delay_ms`.
struct SlowMatch {
    game: &'static str,
    bot: &'static str,
    seats: usize,
    delay_ms: u64,
    settings: &'static str,
}

/// Vindinium plays every one of its turns (Botwars may end when a side is gone):
/// `maxTurns` frames, half of them the slowed bots' moves (the game's own random heroes
/// fill the other two seats).
const VINDINIUM: SlowMatch = SlowMatch {
    game: "vindinium",
    bot: "bots/vindinium/random_bot.py",
    seats: 2,
    delay_ms: 20,
    settings: "maps = [{ seed = 3 }]\n[rules]\nmaxTurns = 300\n",
};

const GAMES: [SlowMatch; 4] = [
    SlowMatch {
        game: "botwars",
        bot: "bots/botwars/random_bot.py",
        seats: 2,
        delay_ms: 100,
        settings: "[rules]\nmaxTurns = 200\n",
    },
    SlowMatch { delay_ms: 40, ..VINDINIUM },
    SlowMatch {
        game: "ostibot",
        bot: "bots/ostibot/random_bot.py",
        seats: 2,
        delay_ms: 60,
        settings: "maps = [{ file = \"MAPS/ostibot/classic-2.txt\" }]\n[rules]\nnbRounds = 1\nmaxTurnsPerRound = 40\n",
    },
    SlowMatch {
        game: "maze",
        bot: "bots/maze/explorer_bot.py",
        seats: 2,
        delay_ms: 60,
        settings: "maps = [{ seed = 3 }]\n[rules]\nmaxTurns = 80\nturnTimeoutMs = 2000\n",
    },
];

impl SlowMatch {
    /// A tournament file of this one match, named `name`.
    fn file(&self, dir: &Path, name: &str) -> PathBuf {
        let repo = repo();
        let slowly = repo.join("coordinator/tests/live/slowly.py");
        let mut text = format!("name = \"{name}\"\ngame = \"{}\"\nformat = \"single\"\nseed = 21\n", self.game);
        text.push_str(&self.settings.replace("MAPS", &repo.join("maps").display().to_string()));
        for seat in 0..self.seats {
            text.push_str(&format!(
                "\n[[bots]]\nname = \"slow-{seat}\"\ncommand = \"python3 {} {} python3 {}\"\n",
                slowly.display(),
                self.delay_ms,
                repo.join(self.bot).display()
            ));
        }
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, text).expect("write the tournament file");
        path
    }
}

/// A farm of one coordinator and one worker of local bots on a vhost of their own.
struct Farm {
    _vhost: Vhost,
    dir: tempfile::TempDir,
    coordinator: CoordinatorProcess,
    worker: WorkerProcess,
}

impl Farm {
    fn start(name: &str, coordinator_env: &[(&str, &str)]) -> Self {
        Self::start_with(name, coordinator_env, &[])
    }

    /// As [`Farm::start`], with the worker's extra environment too.
    fn start_with(name: &str, coordinator_env: &[(&str, &str)], worker_env: &[(&str, &str)]) -> Self {
        let vhost = Vhost::new(name);
        let dir = tempfile::tempdir().expect("temp dir");
        let mut env = vec![("FARM_BOT_LAUNCH", "local")];
        env.extend_from_slice(coordinator_env);
        let coordinator = CoordinatorProcess::start_with(&vhost, &dir.path().join("ledger.sqlite"), &env);
        let mut env = vec![("FARM_SANDBOX", "local")];
        env.extend_from_slice(worker_env);
        let worker = WorkerProcess::start_with(&vhost, &unique("live"), 2, 5, &env);
        Farm { _vhost: vhost, dir, coordinator, worker }
    }

    /// Submits `game`'s slow match as tournament `name`; returns its job id once the
    /// coordinator has published it.
    fn submit(&self, game: &SlowMatch, name: &str) -> String {
        let file = game.file(self.dir.path(), name);
        let url = self.coordinator.url();
        let id = cli(&["submit", file.to_str().expect("UTF-8 path"), "--url", &url, "--token", TOKEN]);
        let id = id.trim();
        let mut job = None;
        eventually(Duration::from_secs(30), "the match is published", || {
            let page = self.coordinator.get_json(&format!("/api/tournaments/{id}/matches"));
            job = page["matches"][0]["job_id"].as_str().map(str::to_owned);
            page["matches"][0]["state"] == "running"
        });
        job.expect("a match")
    }

    fn state(&self, job: &str) -> String {
        self.coordinator.get_json(&format!("/api/matches/{job}"))["match"]["state"].as_str().unwrap_or("").to_owned()
    }

    /// The stored replay of a match that is done, line by line.
    fn replay(&self, job: &str) -> Vec<String> {
        eventually(Duration::from_secs(60), "the match is done", || self.state(job) == "done");
        let detail = self.coordinator.get_json(&format!("/api/matches/{job}"));
        let key = detail["result"]["replay_key"].as_str().expect("a completed match's replay key").to_owned();
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        runtime.block_on(farm_testkit::replay_lines(&farm_testkit::s3(), &key))
    }
}

/// One Server-Sent Event: its type (`message` unless named), its id and its data.
#[derive(Debug, Clone, PartialEq)]
struct Event {
    kind: String,
    id: Option<u64>,
    data: String,
}

/// A viewer of `/api/matches/{job}/live`, reading the response as it comes (HTTP/1.0:
/// the body ends with the connection).
struct Viewer {
    reader: BufReader<TcpStream>,
}

impl Viewer {
    /// Connects and reads the head; returns the status and, for 200, the viewer.
    fn open(api: SocketAddr, job: &str) -> (u16, Option<Viewer>, String) {
        Self::open_with(TcpStream::connect(api).expect("connect to the coordinator"), job)
    }

    /// As [`Viewer::open`], with a receive buffer of 4 KiB, fixed (the kernel grows an
    /// unset one to megabytes): a viewer that reads nothing holds back almost at once.
    fn open_narrow(api: SocketAddr, job: &str) -> (u16, Option<Viewer>, String) {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("a socket");
        socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
        socket.connect(&api.into()).expect("connect to the coordinator");
        Self::open_with(socket.into(), job)
    }

    fn open_with(mut stream: TcpStream, job: &str) -> (u16, Option<Viewer>, String) {
        write!(stream, "GET /api/matches/{job}/live HTTP/1.0\r\nAccept: text/event-stream\r\n\r\n").expect("send");
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("read the head");
            if line.trim_end().is_empty() {
                break;
            }
            head.push_str(&line);
        }
        let status = head.split_whitespace().nth(1).and_then(|code| code.parse().ok()).expect("a status");
        if status == 200 {
            (status, Some(Viewer { reader }), head)
        } else {
            let mut body = String::new();
            let _ = std::io::Read::read_to_string(&mut reader, &mut body);
            (status, None, body)
        }
    }

    /// Opens a viewer that must be let in.
    fn watch(api: SocketAddr, job: &str) -> Viewer {
        let (status, viewer, body) = Viewer::open(api, job);
        viewer.unwrap_or_else(|| panic!("{status}: {body}"))
    }

    /// The next event; `None` when the stream is over.
    fn next(&mut self) -> Option<Event> {
        let mut event = Event { kind: "message".to_owned(), id: None, data: String::new() };
        let mut fields = 0;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).expect("read an event") == 0 {
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if fields > 0 {
                    return Some(event);
                }
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "" => continue, // a comment: the keep-alive
                "event" => event.kind = value.to_owned(),
                "id" => event.id = value.parse().ok(),
                "data" => event.data.push_str(value),
                _ => {}
            }
            fields += 1;
        }
    }

    /// Every line until the stream ends with `end`, as (number, text); fails on a gap
    /// or a repeat, or another event.
    fn lines_to_the_end(&mut self, mut lines: Vec<(u64, String)>) -> Vec<(u64, String)> {
        while let Some(event) = self.next() {
            match event.kind.as_str() {
                "message" => {
                    let id = event.id.expect("a line has an id");
                    let expected = lines.last().map_or(0, |(last, _)| last + 1);
                    assert_eq!(id, expected, "line {id} after {:?}: a gap or a repeat", lines.last().map(|(n, _)| n));
                    lines.push((id, event.data));
                }
                "end" => return lines,
                other => panic!("unexpected event {other}: {event:?}"),
            }
        }
        panic!("the stream ended without `end` after {} lines", lines.len())
    }
}

#[test]
fn every_viewer_sees_every_line_from_the_first_as_stored_a_late_one_too() {
    let farm = Farm::start("live-late", &[]);
    let job = farm.submit(&VINDINIUM, "live late viewer");
    let mut early = Viewer::watch(farm.coordinator.api, &job);
    // The first viewer reads until the match is well under way.
    let mut early_lines = Vec::new();
    while early_lines.len() < 60 {
        let event = early.next().expect("the match goes on");
        if event.kind != "message" {
            let detail = farm.coordinator.get_json(&format!("/api/matches/{job}"));
            panic!("{event:?} after {} lines: {detail}", early_lines.len());
        }
        assert_eq!(event.id, Some(early_lines.len() as u64), "in order from line 0");
        early_lines.push((event.id.expect("an id"), event.data));
    }
    assert_eq!(farm.state(&job), "running", "the match is still being played");
    let mut late = Viewer::watch(farm.coordinator.api, &job);
    let late_lines = late.lines_to_the_end(Vec::new());
    let early_lines = early.lines_to_the_end(early_lines);
    let replay = farm.replay(&job);
    assert_eq!(replay.len(), 302, "a header, 300 frames and a footer");
    for (who, lines) in [("the first viewer", &early_lines), ("the late viewer", &late_lines)] {
        let texts: Vec<&str> = lines.iter().map(|(_, text)| text.as_str()).collect();
        assert_eq!(texts.len(), replay.len(), "{who} saw every line");
        let first_difference = texts.iter().zip(&replay).position(|(seen, stored)| seen != stored);
        assert_eq!(first_difference, None, "{who}: every line is the stored replay's");
    }
    assert!(farm.worker.metric("farm_worker_live_frames_sent_total") >= replay.len() as f64);
}

#[test]
fn a_viewer_that_reads_nothing_holds_no_memory_and_slows_nothing() {
    // A 1 MiB buffer for a match of 4,000 turns: more lines than the kernel's socket
    // buffers hold (their 4 MiB most, here), so that the idle viewer truly holds back.
    let farm = Farm::start("live-idle", &[("FARM_LIVE__BUFFER_MIB", "1")]);
    let long = SlowMatch { delay_ms: 1, settings: "maps = [{ seed = 3 }]\n[rules]\nmaxTurns = 4000\n", ..VINDINIUM };
    let job = farm.submit(&long, "live idle viewer");
    let mut reading = Viewer::watch(farm.coordinator.api, &job);
    let first = reading.next().expect("the header");
    // A viewer that asks and then never reads: the coordinator can only stop writing.
    let (status, idle, _) = Viewer::open_narrow(farm.coordinator.api, &job);
    assert_eq!(status, 200);
    let mut idle = idle.expect("let in");
    let memory_then = farm.coordinator.resident_bytes();
    let lines = reading.lines_to_the_end(vec![(first.id.expect("an id"), first.data)]);
    let memory_at_the_end = farm.coordinator.resident_bytes();
    let replay = farm.replay(&job);
    let bytes: usize = replay.iter().map(|line| line.len() + 1).sum();
    assert!(bytes > 6 << 20, "the match's lines are more than the buffers: {bytes} bytes");
    assert_eq!(lines.len(), replay.len(), "the reading viewer saw every line, with the idle one there");
    assert_eq!(farm.worker.metric("farm_worker_live_frames_skipped_total"), 0.0, "the relay never fell behind");
    let grown = memory_at_the_end.saturating_sub(memory_then);
    eprintln!(
        "coordinator resident memory: {memory_then} bytes when the idle viewer came, {memory_at_the_end} at the \
         match's end ({} lines, {bytes} bytes)",
        replay.len()
    );
    assert!(
        grown < 16 << 20,
        "the coordinator grew {grown} bytes while an idle viewer held {bytes} bytes of lines back"
    );
    // Reading now, the idle viewer skips what the buffer let go, is told how many, and
    // has the rest to the end.
    let mut skipped = 0;
    let mut last = None;
    let mut seen = Vec::new();
    while let Some(event) = idle.next() {
        if seen.len() < 5 || event.kind != "message" {
            seen.push((event.kind.clone(), event.id, event.data.len()));
        }
        match event.kind.as_str() {
            "skipped" => skipped += event.data.parse::<u64>().expect("a count"),
            "message" => last = event.id,
            "end" => break,
            other => panic!("unexpected {other}"),
        }
    }
    assert!(skipped > 0, "the idle viewer was behind the buffer: {seen:?}");
    assert_eq!(last, Some(replay.len() as u64 - 1), "and it has the last line");
    let metrics = http_get(farm.coordinator.api, "/metrics").expect("metrics").1;
    assert!(metrics.contains("farm_coordinator_live_frames_dropped_total{where=\"viewer\"}"), "counted");
}

#[test]
fn a_viewer_of_a_match_no_worker_relays_is_told_the_end_once_the_match_is_answered() {
    let farm = Farm::start_with("live-unrelayed", &[], &[("FARM_LIVE_BUFFER_MIB", "0")]);
    let job = farm.submit(&VINDINIUM, "live unrelayed");
    let mut viewer = Viewer::watch(farm.coordinator.api, &job);
    let event = viewer.next().expect("an event before the stream ends");
    assert_eq!(event.kind, "end", "no line came, and the end did once the match was answered: {event:?}");
    assert_eq!(farm.state(&job), "done");
    assert!(viewer.next().is_none(), "the stream is over");
}

#[test]
fn a_finished_match_is_not_live_and_viewers_past_the_limit_are_turned_away() {
    let farm = Farm::start("live-limits", &[("FARM_LIVE__VIEWERS_PER_MATCH", "1")]);
    let job = farm.submit(&VINDINIUM, "live limits");
    let mut first = Viewer::watch(farm.coordinator.api, &job);
    assert_eq!(first.next().expect("the header").id, Some(0));
    let (status, _, body) = Viewer::open(farm.coordinator.api, &job);
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("live.viewers_per_match is 1"), "{body}");
    first.lines_to_the_end(vec![(0, String::new())]);
    drop(first);
    farm.replay(&job);
    let (status, _, body) = Viewer::open(farm.coordinator.api, &job);
    assert_eq!(status, 409, "{body}");
    assert!(body.contains(&format!("/api/matches/{job}/replay")), "{body}");
    let (status, _, _) = Viewer::open(farm.coordinator.api, "no-such-job");
    assert_eq!(status, 404);
}

#[test]
fn each_games_match_plays_live_in_chromium_then_becomes_its_stored_replay() {
    let farm = Farm::start("live-web", &[]);
    let chromium = Chromium::launch();
    chromium.use_screen(LAPTOP);
    let mut failures = Vec::new();
    for game in &GAMES {
        if let Err(problem) = watch_in_chromium(&farm, &chromium, game) {
            failures.push(format!("{}: {problem}", game.game));
        }
    }
    failures.extend(chromium.problems().into_iter().map(|problem| format!("console: {problem}")));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Submits `game`'s slow match, opens its page at once, sees its frame counter move on
/// while the API says it is running, then the page show the stored replay, ending
/// where the live view ended.
fn watch_in_chromium(farm: &Farm, chromium: &Chromium, game: &SlowMatch) -> Result<(), String> {
    let job = farm.submit(game, &format!("live web {}", game.game));
    let tournament = farm.coordinator.get_json(&format!("/api/matches/{job}"))["tournament_id"].clone();
    let tournament = tournament.as_str().ok_or("a tournament id")?.to_owned();
    // The tournament page's "playing now" strip links the match.
    chromium.open(&format!("{}/tournaments/{tournament}", farm.coordinator.url()))?;
    let strip = format!("{}[data-job-id={}]", testid("playing-match"), js(&job));
    chromium.poll(
        "the playing-now strip links the match",
        &format!("!!document.querySelector({})", js(&strip)),
        |found| found == true,
    )?;
    chromium.open(&format!("{}/matches/{job}", farm.coordinator.url()))?;
    let mode = format!("document.querySelector({}).dataset.mode", js(&testid("viewer")));
    let shown_mode = chromium.evaluate(&mode)?;
    if shown_mode != "live" {
        return Err(format!("the page of a running match is in mode {shown_mode}, not live ({})", farm.state(&job)));
    }
    let first = chromium.wait_for_frame("a first live frame", |_| true)?;
    let later = chromium.wait_for_frame("the live frame counter moves on", |frame| frame > first + 2)?;
    if farm.state(&job) != "running" {
        return Err(format!("the match was over by frame {later}: too short to be seen live"));
    }
    chromium.poll("the page shows the stored replay", &mode, |mode| mode == "replay")?;
    let viewer = format!("document.querySelector({}).dataset", js(&testid("viewer")));
    let shown = chromium.poll("the replay's first frame is drawn", &format!("{viewer}.frames ?? null"), |frames| {
        frames.as_str().is_some_and(|frames| frames != "0")
    })?;
    let live_last = chromium.evaluate(&format!("{viewer}.liveLastFrame ?? null"))?;
    let replay_last = chromium.evaluate(&format!("{viewer}.lastFrame ?? null"))?;
    if live_last.is_null() || live_last != replay_last {
        return Err(format!("the live view ended on frame {live_last}, the replay ends on {replay_last}"));
    }
    let stored = farm.replay(&job);
    let frames = stored.len() - 2;
    if shown.as_str() != Some(frames.to_string().as_str()) {
        return Err(format!("the replay viewer has {shown} frames, the stored replay {frames}"));
    }
    Ok(())
}

/// The coordinator's relay (in this process) on a real broker, against a worker
/// relaying honestly through its own outlet and a forger signed in as another worker.
#[tokio::test(flavor = "multi_thread")]
async fn frames_are_believed_only_from_the_worker_relaying_the_match_with_its_token() {
    use farm_coordinator::live::{Live, LiveSettings, Shown, relay_from_broker};
    use farm_coordinator::metrics::LIVE_FRAMES_REFUSED;
    use farm_coordinator::vouch::{AnswerKey, Answerable};
    use farm_proto::{ATTEMPT_HEADER, CONTROL_EXCHANGE, LINE_HEADER, LIVE_EXCHANGE, TOKEN_HEADER};
    use farm_worker::live::{BrokerOutlet, FrameOutlet, LiveLines};
    use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, QueueBindOptions, QueueDeclareOptions};
    use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
    use lapin::{BasicProperties, Connection, ConnectionProperties};
    use std::sync::Arc;

    let vhost = Vhost::new("live-forged");
    let coordinator = vhost.connect().await;
    farm_runtime::queue::declare_topology(&coordinator.create_channel().await.expect("a channel"), 5)
        .await
        .expect("the topology");
    let key = AnswerKey::new([7; 32]);
    let live = Live::new(LiveSettings::default());
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = farm_coordinator::ledger::Ledger::open(&dir.path().join("ledger.sqlite")).expect("a ledger");
    let relaying = {
        let (live, key) = (live.clone(), key.clone());
        tokio::spawn(async move { relay_from_broker(&coordinator, &live, &key, &ledger, &mut stopped).await })
    };
    // The watch the workers hear says the relay's queue is bound (it binds, then tells).
    let listener = vhost.connect().await;
    let channel = listener.create_channel().await.expect("a channel");
    let own = QueueDeclareOptions { exclusive: true, ..Default::default() };
    let heard = channel.queue_declare("".into(), own, FieldTable::default()).await.expect("a queue");
    let bind = QueueBindOptions::default();
    channel
        .queue_bind(heard.name().clone(), CONTROL_EXCHANGE.into(), "".into(), bind, FieldTable::default())
        .await
        .expect("bound");
    let mut control = farm_testkit::consume(&listener, heard.name().as_str()).await;
    let mut viewer = live.join("j-1", 0, Duration::ZERO).expect("room");
    let watch = farm_testkit::next_message(&mut control, Duration::from_secs(30)).await;
    assert!(String::from_utf8_lossy(&watch).contains("\"job_id\":\"j-1\""), "{}", String::from_utf8_lossy(&watch));

    let token: Arc<str> = Arc::from(key.token(Answerable::Job("j-1")));
    let honest = Connection::connect(&vhost.worker_url("w-honest"), ConnectionProperties::default()).await.expect("in");
    let outlet = BrokerOutlet::open(&honest, "w-honest").await.expect("an outlet");
    let frame = |index: u64, line: &str| LiveLines {
        job_id: Arc::from("j-1"),
        token: Arc::clone(&token),
        attempt: 1,
        index,
        lines: vec![Arc::from(line)],
        end: false,
    };
    outlet.deliver(frame(0, "{\"type\":\"header\"}")).await.expect("sent");

    // The forger: a worker of this farm, who never held j-1, publishing with confirms so
    // that each message is in the relay's queue before the next honest one.
    let forger = Connection::connect(&vhost.worker_url("w-forger"), ConnectionProperties::default()).await.expect("in");
    let forged = forger.create_channel().await.expect("a channel");
    forged.confirm_select(ConfirmSelectOptions::default()).await.expect("confirms");
    let publish = |user: Option<&str>, token: &str, index: i64| {
        let mut headers = FieldTable::default();
        headers.insert(LINE_HEADER.into(), AMQPValue::LongLongInt(index));
        headers.insert(ATTEMPT_HEADER.into(), AMQPValue::LongLongInt(1));
        headers.insert(TOKEN_HEADER.into(), AMQPValue::LongString(LongString::from(token.as_bytes())));
        let mut properties = BasicProperties::default().with_headers(headers);
        if let Some(user) = user {
            properties = properties.with_user_id(ShortString::from(user));
        }
        let channel = forged.clone();
        async move {
            channel
                .basic_publish(
                    LIVE_EXCHANGE.into(),
                    "j-1".into(),
                    BasicPublishOptions::default(),
                    b"{\"forged\":1}",
                    properties,
                )
                .await?
                .await
        }
    };
    let refused = |reason: &str| LIVE_FRAMES_REFUSED.with_label_values(&[reason]).get();
    let before = ["unsigned", "token", "sender"].map(refused);
    publish(None, &token, 1).await.expect("the broker takes an unsigned message");
    publish(Some("w-forger"), &key.token(Answerable::Job("j-2")), 1).await.expect("taken: another job's token");
    publish(Some("w-forger"), &token, 1).await.expect("taken: the right token, from another worker");
    let malformed = refused("malformed");
    let too_many = format!("{{}}{}", "\n{}".repeat(farm_proto::MESSAGE_LINES));
    let mut headers = FieldTable::default();
    headers.insert(LINE_HEADER.into(), AMQPValue::LongLongInt(1));
    headers.insert(ATTEMPT_HEADER.into(), AMQPValue::LongLongInt(1));
    headers.insert(TOKEN_HEADER.into(), AMQPValue::LongString(LongString::from(token.as_bytes())));
    let properties = BasicProperties::default().with_headers(headers).with_user_id(ShortString::from("w-forger"));
    let options = BasicPublishOptions::default();
    let sent = forged.basic_publish(LIVE_EXCHANGE.into(), "j-1".into(), options, too_many.as_bytes(), properties);
    sent.await.expect("published").await.expect("taken: more lines than a message may carry");
    // Naming the honest worker as its sender is the broker's to refuse: it closes the channel.
    let impostor = publish(Some("w-honest"), &token, 1).await;
    assert!(impostor.is_err() || !forged.status().connected(), "RabbitMQ let a forged user_id through");

    outlet.deliver(frame(1, "{\"type\":\"frame\"}")).await.expect("sent");
    let mut shown = Vec::new();
    while shown.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(30), viewer.next()).await.expect("the honest lines come") {
            Shown::Lines(lines, 0) => shown.extend(lines),
            other => panic!("{other:?}"),
        }
    }
    let texts: Vec<&str> = shown.iter().map(|(_, line)| &**line).collect();
    assert_eq!(texts, ["{\"type\":\"header\"}", "{\"type\":\"frame\"}"], "only the honest worker's lines");
    let after = ["unsigned", "token", "sender"].map(refused);
    assert_eq!(
        [after[0] - before[0], after[1] - before[1], after[2] - before[2]],
        [1, 1, 1],
        "unsigned, token, sender"
    );
    assert_eq!(refused("malformed") - malformed, 1, "a message of more than MESSAGE_LINES lines");
    stop.send_replace(true);
    relaying.await.expect("the relay task").expect("the relay ends cleanly");
}

/// `farm-coordinator run --web`, with no broker: its matches play live in its pages'
/// hub, relayed in process, line for line as stored.
#[test]
fn run_web_shows_its_own_matches_live_without_a_broker() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = VINDINIUM.file(dir.path(), "live run web");
    let data = dir.path().join("data");
    let mut run = std::process::Command::new(support::COORDINATOR)
        .arg("run")
        .arg(&file)
        .arg("--data")
        .arg(&data)
        .args(["--web", "127.0.0.1:0", "--keep-serving"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("farm-coordinator run starts");
    let stderr = BufReader::new(run.stderr.take().expect("piped stderr"));
    let mut lines = stderr.lines().map_while(Result::ok);
    let address: SocketAddr = lines
        .find_map(|line| {
            line.strip_prefix("watch the run at http://").map(|rest| rest.trim_end_matches('/').to_owned())
        })
        .expect("the run says where its pages are")
        .parse()
        .expect("an address");
    // The rest of its stderr is drained, so that it never waits on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    let get = |path: &str| -> serde_json::Value {
        let (status, body) = http_get(address, path).expect("the run's pages answer");
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).expect("JSON")
    };
    let mut job = None;
    eventually(Duration::from_secs(30), "the run's match is listed", || {
        let tournaments = get("/api/tournaments");
        let Some(id) = tournaments["tournaments"][0]["id"].as_str() else { return false };
        job = get(&format!("/api/tournaments/{id}/matches"))["matches"][0]["job_id"].as_str().map(str::to_owned);
        job.is_some()
    });
    let job = job.expect("a match");
    let seen = Viewer::watch(address, &job).lines_to_the_end(Vec::new());
    let mut key = None;
    eventually(Duration::from_secs(60), "the run records the match", || {
        key = get(&format!("/api/matches/{job}"))["result"]["replay_key"].as_str().map(str::to_owned);
        key.is_some()
    });
    let storage = farm_runtime::storage::Storage::open(&farm_runtime::storage::StorageConfig::Local {
        path: farm_coordinator::embedded::objects_path(&data),
    })
    .expect("the run's objects");
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let stored = runtime.block_on(farm_testkit::replay_lines(&storage, &key.expect("a replay key")));
    assert_eq!(stored.len(), 302, "a header, 300 frames and a footer");
    let texts: Vec<&String> = seen.iter().map(|(_, text)| text).collect();
    assert!(texts.iter().zip(&stored).all(|(seen, stored)| *seen == stored) && texts.len() == stored.len());
    run.kill().expect("stop the run's server");
    run.wait().expect("reap it");
}
