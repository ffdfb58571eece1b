//! The HTTP API in process (`tower::ServiceExt::oneshot` on `api::app`): authorization,
//! body validation, submission, lookups, match lists, replays, logs, standings, metrics.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode, header};
use farm_coordinator::accounts::Quotas;
use farm_coordinator::api::{self, ApiState, Submissions};
use farm_coordinator::director::Director;
use farm_coordinator::ledger::{Answer, Ledger, VersionState};
use farm_coordinator::metrics;
use farm_coordinator::observations::{ObservationLimits, Observer};
use farm_coordinator::tournament::{TournamentFile, TournamentLimits};
use farm_coordinator::uploads::{UploadLimits, Uploads};
use farm_coordinator::webhooks::{self, Deliverer, WebhookSettings};
use farm_proto::{MatchResult, PlayerOutcome, PlayerResult, PlayerStatus, ResultEnvelope, SCHEMA_VERSION};
use farm_runtime::storage::{Storage, StorageConfig};
use farm_worker::SandboxKind;
use futures_util::FutureExt;
use http_body_util::BodyExt;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;
use tower::ServiceExt;

const TOKEN: &str = "a-test-token-0123456789";

/// Three builtin bots, round robin: 6 jobs.
const BOTWARS: &str = r#"
name = "api test"
game = "botwars"
format = "round-robin"
seed = 3
[[bots]]
name = "alpha"
builtin = "random"
[[bots]]
name = "beta"
builtin = "gatherer"
[[bots]]
name = "gamma"
builtin = "random"
"#;

/// An API over a fresh ledger and object store in a temporary directory.
struct Fixture {
    dir: tempfile::TempDir,
    state: ApiState,
}

fn fixture() -> Fixture {
    fixture_with(Submissions::Token(Arc::from(TOKEN)))
}

fn fixture_with(submissions: Submissions) -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = Ledger::open(&dir.path().join("ledger.sqlite")).expect("open the ledger");
    let storage = Storage::open(&StorageConfig::Local { path: dir.path().join("objects") }).expect("open storage");
    let wake_publisher = Arc::new(Notify::new());
    let director = Director::new(ledger.clone(), SandboxKind::Local, Arc::clone(&wake_publisher));
    let state = ApiState {
        ledger,
        storage,
        submissions,
        wake_publisher,
        director,
        tournament_limits: TournamentLimits::default(),
        observer: Observer::new(ObservationLimits::default()),
        uploads: Uploads::new(UploadLimits::default()),
        quotas: Quotas::default(),
        // Deliveries go to this test's own receiver on loopback, retried at once.
        webhooks: WebhookSettings { allow_private_addresses: true, first_retry_secs: 0, ..WebhookSettings::default() },
        wake_builds: Arc::new(Notify::new()),
        live: farm_coordinator::live::Live::new(farm_coordinator::live::LiveSettings::default()),
        views: farm_coordinator::api::Views::default(),
    };
    Fixture { dir, state }
}

/// A response, read whole.
struct Answered {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answered {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {}", String::from_utf8_lossy(&self.body)))
    }

    fn text(&self) -> String {
        String::from_utf8(self.body.to_vec()).expect("UTF-8 body")
    }

    /// Checks that this is a JSON error with `status` and `code`; returns its message.
    fn error(&self, status: StatusCode, code: &str) -> String {
        assert_eq!(self.status, status, "{}", String::from_utf8_lossy(&self.body));
        let content_type = self.headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok());
        assert_eq!(content_type, Some("application/json"), "errors are JSON");
        let body = self.json();
        assert_eq!(body["error"]["code"], code, "{body}");
        body["error"]["message"].as_str().expect("a message").to_owned()
    }
}

impl Fixture {
    async fn send(&self, request: Request<Body>) -> Answered {
        let response = api::app(self.state.clone()).oneshot(request).await.expect("the router never fails");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("read the body").to_bytes();
        Answered { status: parts.status, headers: parts.headers, body }
    }

    async fn get(&self, uri: &str) -> Answered {
        self.send(Request::get(uri).body(Body::empty()).expect("request")).await
    }

    async fn post(&self, authorization: Option<&str>, content_type: Option<&str>, body: impl Into<Body>) -> Answered {
        let mut request = Request::post("/api/tournaments");
        if let Some(authorization) = authorization {
            request = request.header(header::AUTHORIZATION, authorization);
        }
        if let Some(content_type) = content_type {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        self.send(request.body(body.into()).expect("request")).await
    }

    async fn submit(&self, text: &str) -> Answered {
        self.post(Some(&format!("Bearer {TOKEN}")), Some("application/toml"), text.to_owned()).await
    }

    /// Submits [`BOTWARS`]; returns its id.
    async fn submit_botwars(&self) -> String {
        let answer = self.submit(BOTWARS).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
        answer.json()["id"].as_str().expect("an id").to_owned()
    }

    /// The tournament's matches (JSON objects), filtered by `query`.
    async fn matches(&self, id: &str, query: &str) -> Vec<Value> {
        let answer = self.get(&format!("/api/tournaments/{id}/matches{query}")).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
        answer.json()["matches"].as_array().expect("a list").clone()
    }

    async fn tournament_count(&self) -> usize {
        let answer = self.get("/api/tournaments").await;
        assert_eq!(answer.status, StatusCode::OK);
        answer.json()["tournaments"].as_array().expect("a list").len()
    }

    /// Records `job` of tournament `id` as completed, with `replay` stored.
    async fn complete_with_replay(&self, id: &str, job: &str, replay: &str) {
        let replay_key = format!("tournaments/{id}/jobs/{job}/attempt-1-000000000000/replay.jsonl.zst");
        let mut upload = self.state.storage.replay_upload(&replay_key);
        upload.write_all(replay.as_bytes()).await.expect("write the replay");
        upload.shutdown().await.expect("finish the upload");
        self.state.ledger.record(vec![won_by_seat_0(id, job, &replay_key, None)]).await.expect("record");
    }

    /// `method` on `uri` with a JSON `body`, as the holder of `token` (none: no header).
    async fn call(&self, method: &str, uri: &str, body: &str, token: Option<&str>) -> Answered {
        let mut request = Request::builder().method(method).uri(uri).header(header::CONTENT_TYPE, "application/json");
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        self.send(request.body(Body::from(body.to_owned())).expect("request")).await
    }

    /// Makes user `name` as the operator; returns their token.
    async fn make_user(&self, name: &str) -> String {
        let made = self.call("POST", "/api/users", &format!(r#"{{"name": "{name}"}}"#), Some(TOKEN)).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
        made.json()["token"].as_str().expect("a token").to_owned()
    }

    /// Submits the tournament `text` as the holder of `token`.
    async fn submit_as(&self, token: &str, text: &str) -> Answered {
        let request = Request::post("/api/tournaments")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/toml");
        self.send(request.body(Body::from(text.to_owned())).expect("request")).await
    }

    /// Records every job of tournament `id` as won by seat 0.
    async fn complete_all(&self, id: &str) {
        let answers = self
            .matches(id, "?limit=1000")
            .await
            .iter()
            .map(|row| {
                let job = row["job_id"].as_str().expect("job id");
                let key = format!("tournaments/{id}/jobs/{job}/attempt-1-000000000000/replay.jsonl.zst");
                won_by_seat_0(id, job, &key, None)
            })
            .collect();
        self.state.ledger.record(answers).await.expect("record");
    }

    /// Whether a submission woke the publisher since the last call.
    fn woke_publisher(&self) -> bool {
        self.state.wake_publisher.notified().now_or_never().is_some()
    }
}

fn player(seat: usize, score: i64, rank: u32, log_key: Option<String>) -> PlayerResult {
    PlayerResult {
        seat,
        name: format!("seat-{seat}"),
        outcome: PlayerOutcome { score, rank, status: PlayerStatus::Ok },
        timeouts: 0,
        mean_reply_ms: 1.0,
        max_reply_ms: 3.0,
        p99_reply_ms: 0.0,
        cpu: None,
        exit_code: None,
        oom_killed: false,
        log_key,
        crash: None,
    }
}

/// Seat 0 beats seat 1.
fn won_by_seat_0(tournament_id: &str, job_id: &str, replay_key: &str, log_key: Option<String>) -> Answer {
    Answer::Result(ResultEnvelope {
        schema: SCHEMA_VERSION,
        job_id: job_id.to_owned(),
        tournament_id: tournament_id.to_owned(),
        worker_id: "worker-7".to_owned(),
        token: String::new(),
        instance: None,
        attempt: 1,
        result: MatchResult::Completed {
            steps: 100,
            players: vec![player(0, 12, 1, log_key), player(1, 3, 2, None)],
            replay_key: replay_key.to_owned(),
            replay_sha256: "0".repeat(64),
            duration_ms: 25,
            reproduction: None,
        },
    })
}

#[tokio::test]
async fn writes_need_the_bearer_token() {
    let fixture = fixture();
    let missing = fixture.post(None, None, BOTWARS).await;
    let message = missing.error(StatusCode::UNAUTHORIZED, "unauthorized");
    assert!(message.contains("Bearer"), "{message}");
    assert_eq!(missing.headers.get(header::WWW_AUTHENTICATE).map(|value| value.as_bytes()), Some(&b"Bearer"[..]));

    let wrong = fixture.post(Some("Bearer a-test-token-0123456780"), None, BOTWARS).await;
    wrong.error(StatusCode::FORBIDDEN, "forbidden");
    assert!(wrong.headers.get(header::WWW_AUTHENTICATE).is_none());
    let shorter = fixture.post(Some("Bearer a-test-token"), None, BOTWARS).await;
    shorter.error(StatusCode::FORBIDDEN, "forbidden");
    let longer = fixture.post(Some(&format!("Bearer {TOKEN}0")), None, BOTWARS).await;
    longer.error(StatusCode::FORBIDDEN, "forbidden");
    let empty = fixture.post(Some("Bearer "), None, BOTWARS).await;
    empty.error(StatusCode::FORBIDDEN, "forbidden");

    let basic = fixture.post(Some("Basic dXNlcjpwYXNz"), None, BOTWARS).await;
    basic.error(StatusCode::UNAUTHORIZED, "unauthorized");
    assert!(basic.headers.contains_key(header::WWW_AUTHENTICATE));
    let bare = fixture.post(Some(TOKEN), None, BOTWARS).await;
    bare.error(StatusCode::UNAUTHORIZED, "unauthorized");

    // Authorization comes before the body is even read: a bad body is still a 401.
    let unauthorized_garbage = fixture.post(None, None, vec![0xff_u8; 10]).await;
    unauthorized_garbage.error(StatusCode::UNAUTHORIZED, "unauthorized");

    assert_eq!(fixture.tournament_count().await, 0, "nothing was inserted");
    assert!(!fixture.woke_publisher());
}

#[tokio::test]
async fn bad_bodies_are_refused_with_what_is_wrong() {
    let fixture = fixture();
    let bearer = format!("Bearer {TOKEN}");
    let bearer = Some(bearer.as_str());

    let malformed = fixture.submit("name = \"x\"\ngame = = \"botwars\"\n").await;
    let message = malformed.error(StatusCode::BAD_REQUEST, "bad_request");
    assert!(message.contains("line 2"), "{message}");

    let unknown_key = fixture.submit(&BOTWARS.replace("seed = 3", "seed = 3\ncolour = \"red\"")).await;
    let message = unknown_key.error(StatusCode::BAD_REQUEST, "bad_request");
    assert!(message.contains("colour"), "{message}");

    let invalid = fixture.submit(&BOTWARS.replace("builtin = \"gatherer\"", "builtin = \"smart\"")).await;
    let message = invalid.error(StatusCode::BAD_REQUEST, "bad_request");
    assert!(message.starts_with("bots[1].builtin:"), "{message}");

    let map_file = fixture.submit(&BOTWARS.replace("seed = 3", "seed = 3\nmaps = [{ file = \"/etc/passwd\" }]")).await;
    map_file.error(StatusCode::BAD_REQUEST, "bad_request");

    let bad_json = fixture.post(bearer, Some("application/json"), "{\"name\": ").await;
    bad_json.error(StatusCode::BAD_REQUEST, "bad_request");
    // TOML sent as JSON is read as JSON, and refused.
    let toml_as_json = fixture.post(bearer, Some("application/json; charset=utf-8"), BOTWARS).await;
    toml_as_json.error(StatusCode::BAD_REQUEST, "bad_request");

    let huge = fixture.post(bearer, None, vec![b'#'; api::MAX_BODY + 1]).await;
    let message = huge.error(StatusCode::PAYLOAD_TOO_LARGE, "too_large");
    assert!(message.contains(&api::MAX_BODY.to_string()), "{message}");

    let not_utf8 = fixture.post(bearer, None, b"name = \"\xff\xfe\"\n".to_vec()).await;
    let message = not_utf8.error(StatusCode::BAD_REQUEST, "bad_request");
    assert!(message.contains("UTF-8"), "{message}");

    // Well-formed but over the farm's ceiling: 422, naming the key and the ceiling.
    let too_many = fixture.submit(&BOTWARS.replace("seed = 3", "seed = 3\ngames_per_pairing = 4000000000")).await;
    let message = too_many.error(StatusCode::UNPROCESSABLE_ENTITY, "over_limit");
    assert_eq!(
        message,
        "games_per_pairing: 6 fixtures × 1 maps × 4000000000 games per pairing make 24000000000 jobs, \
         above this farm's ceiling of 1000000 (max_tournament_jobs)"
    );

    assert_eq!(fixture.tournament_count().await, 0, "nothing was inserted");
    assert!(!fixture.woke_publisher());

    // Just under the limit is read (and then judged as TOML: comments only).
    let padded = format!("{BOTWARS}{}", "#".repeat(api::MAX_BODY - BOTWARS.len()));
    assert_eq!(padded.len(), api::MAX_BODY);
    assert_eq!(fixture.submit(&padded).await.status, StatusCode::CREATED);
}

#[tokio::test]
async fn a_tournament_is_created_once_and_wakes_the_publisher() {
    let fixture = fixture();
    assert!(!fixture.woke_publisher());
    let first = fixture.submit(BOTWARS).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());
    let submitted: api::Submitted = serde_json::from_slice(&first.body).expect("a submission answer");
    assert!(submitted.created);
    assert_eq!(submitted.jobs, 6);
    assert!(submitted.id.starts_with("t-"), "{}", submitted.id);
    assert!(fixture.woke_publisher(), "a new tournament wakes the publisher");

    let again = fixture.submit(BOTWARS).await;
    assert_eq!(again.status, StatusCode::OK);
    let resubmitted: api::Submitted = serde_json::from_slice(&again.body).expect("a submission answer");
    assert_eq!((resubmitted.id.as_str(), resubmitted.created, resubmitted.jobs), (submitted.id.as_str(), false, 6));
    assert!(!fixture.woke_publisher(), "nothing new: no wake-up");

    // The same tournament as JSON is the same tournament.
    let file = TournamentFile::from_toml(BOTWARS).expect("parses");
    let json = serde_json::to_string(&file).expect("JSON");
    let bearer = format!("Bearer {TOKEN}");
    let as_json = fixture.post(Some(&bearer), Some("application/json"), json).await;
    assert_eq!(as_json.status, StatusCode::OK, "{}", as_json.text());
    assert_eq!(as_json.json()["id"], submitted.id);

    let listed = fixture.get("/api/tournaments").await.json();
    let listed = listed["tournaments"].as_array().expect("a list").clone();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], submitted.id);
    assert_eq!(listed[0]["progress"]["total"], 6);

    let shown = fixture.get(&format!("/api/tournaments/{}", submitted.id)).await;
    assert_eq!(shown.status, StatusCode::OK);
    let shown = shown.json();
    assert_eq!(shown["id"], submitted.id);
    assert_eq!(shown["name"], "api test");
    assert_eq!(shown["game"], "botwars");
    assert_eq!(shown["bots"], serde_json::json!(["alpha", "beta", "gamma"]));
    assert_eq!(shown["maps"], serde_json::json!(["default"]));
    assert_eq!(shown["progress"]["total"], 6);
    assert_eq!(shown["progress"]["pending"], 6);
    assert_eq!(shown["finished"], false);

    let standings = fixture.get(&format!("/api/tournaments/{}/standings", submitted.id)).await;
    assert_eq!(standings.status, StatusCode::OK);
    let rows = standings.json()["rows"].as_array().expect("rows").clone();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|row| row["played"] == 0), "{rows:?}");
}

#[tokio::test]
async fn unknown_things_are_404_and_bad_seats_400() {
    let fixture = fixture();
    let id = fixture.submit_botwars().await;
    let first_job = fixture.matches(&id, "?limit=1").await[0]["job_id"].as_str().expect("a job id").to_owned();

    let message = fixture.get("/api/tournaments/t-unknown").await.error(StatusCode::NOT_FOUND, "not_found");
    assert!(message.contains("t-unknown"), "{message}");
    fixture.get("/api/tournaments/t-unknown/standings").await.error(StatusCode::NOT_FOUND, "not_found");
    fixture.get("/api/tournaments/t-unknown/matches").await.error(StatusCode::NOT_FOUND, "not_found");
    let message = fixture.get("/api/matches/j-nope").await.error(StatusCode::NOT_FOUND, "not_found");
    assert!(message.contains("j-nope"), "{message}");
    fixture.get("/api/matches/j-nope/replay").await.error(StatusCode::NOT_FOUND, "not_found");
    fixture.get("/api/matches/j-nope/logs/0").await.error(StatusCode::NOT_FOUND, "not_found");

    let message =
        fixture.get(&format!("/api/matches/{first_job}/replay")).await.error(StatusCode::NOT_FOUND, "not_found");
    assert!(message.contains(&first_job) && message.contains("not completed"), "{message}");
    let message =
        fixture.get(&format!("/api/matches/{first_job}/logs/0")).await.error(StatusCode::NOT_FOUND, "not_found");
    assert!(message.contains("not completed"), "{message}");
    let message = fixture
        .get(&format!("/api/matches/{first_job}/logs/first"))
        .await
        .error(StatusCode::BAD_REQUEST, "bad_request");
    assert!(message.contains("first"), "{message}");
    fixture.get(&format!("/api/matches/{first_job}/logs/-1")).await.error(StatusCode::BAD_REQUEST, "bad_request");

    let detail = fixture.get(&format!("/api/matches/{first_job}")).await;
    assert_eq!(detail.status, StatusCode::OK);
    let detail = detail.json();
    assert_eq!(detail["tournament_id"], id);
    assert_eq!(detail["match"]["state"], "pending");
    assert_eq!(detail["match"]["position"], 0);
    assert_eq!(detail["result"], Value::Null);

    fixture.get("/api/nothing-here").await.error(StatusCode::NOT_FOUND, "not_found");
    fixture.get("/nothing-here").await.error(StatusCode::NOT_FOUND, "not_found");
    fixture.get("/static/nothing-here.js").await.error(StatusCode::NOT_FOUND, "not_found");

    // A known route with the wrong method: 405, as JSON, with the methods it takes.
    let delete = Request::delete("/api/tournaments").body(Body::empty()).expect("request");
    let wrong_method = fixture.send(delete).await;
    wrong_method.error(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    let allow = wrong_method.headers.get(header::ALLOW).and_then(|value| value.to_str().ok()).unwrap_or_default();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow:?}");
    let post = Request::post(format!("/api/matches/{first_job}")).body(Body::empty()).expect("request");
    fixture.send(post).await.error(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    assert_eq!(fixture.tournament_count().await, 1);
}

#[tokio::test]
async fn match_lists_filter_and_refuse_bad_queries() {
    let fixture = fixture();
    let id = fixture.submit_botwars().await;

    let every = fixture.matches(&id, "").await;
    assert_eq!(every.len(), 6);
    let positions: Vec<u64> = every.iter().map(|row| row["position"].as_u64().expect("position")).collect();
    assert_eq!(positions, [0, 1, 2, 3, 4, 5]);
    assert!(every.iter().all(|row| row["bots"].as_array().is_some_and(|bots| bots.len() == 2)));
    assert!(every.iter().all(|row| row["map"] == "default" && row["state"] == "pending"));

    let filtered = fixture.matches(&id, "?bot=beta&status=pending&limit=2").await;
    assert_eq!(filtered.len(), 2);
    assert!(filtered.iter().all(|row| row["bots"].as_array().is_some_and(|bots| bots.contains(&"beta".into()))));
    let with_beta: Vec<&Value> =
        every.iter().filter(|row| row["bots"].as_array().is_some_and(|bots| bots.contains(&"beta".into()))).collect();
    assert_eq!(with_beta.len(), 4);
    assert_eq!(filtered[0]["job_id"], with_beta[0]["job_id"]);
    assert_eq!(filtered[1]["job_id"], with_beta[1]["job_id"]);

    assert!(fixture.matches(&id, "?status=done").await.is_empty());
    assert_eq!(fixture.matches(&id, "?map=default").await.len(), 6);
    let page = fixture.matches(&id, "?offset=4&limit=1000").await;
    assert_eq!(page.iter().map(|row| row["position"].as_u64()).collect::<Vec<_>>(), [Some(4), Some(5)]);
    assert_eq!(fixture.matches(&id, "?bot=gamma&offset=3").await.len(), 1);

    let bad = |query: &'static str| {
        let fixture = &fixture;
        let id = &id;
        async move {
            fixture
                .get(&format!("/api/tournaments/{id}/matches{query}"))
                .await
                .error(StatusCode::BAD_REQUEST, "bad_request")
        }
    };
    let message = bad("?bot=zed").await;
    assert!(message.contains("zed"), "{message}");
    let message = bad("?status=finished").await;
    assert!(message.contains("finished") && message.contains("pending"), "{message}");
    let message = bad("?map=nowhere").await;
    assert!(message.contains("nowhere"), "{message}");
    for query in ["?limit=0", "?limit=5000", "?limit=1001"] {
        let message = bad(query).await;
        assert!(message.starts_with("limit:"), "{query}: {message}");
    }
    bad("?limit=ten").await;
    bad("?limit=-1").await;
    bad("?offset=-1").await;
    let message = bad("?colour=red").await;
    assert!(message.contains("colour"), "{message}");
    assert_eq!(fixture.matches(&id, "?limit=1000").await.len(), 6);
}

#[tokio::test]
async fn a_completed_match_serves_its_replay_its_logs_and_counts_in_standings() {
    let fixture = fixture();
    let id = fixture.submit_botwars().await;
    let every = fixture.matches(&id, "").await;
    let job = every[0]["job_id"].as_str().expect("a job id").to_owned();
    let winner = every[0]["bots"][0].as_str().expect("a bot").to_owned();
    let loser = every[0]["bots"][1].as_str().expect("a bot").to_owned();

    // A replay large enough to arrive in several chunks, and seat 0's stderr.
    let prefix = format!("tournaments/{id}/jobs/{job}/attempt-1-000000000000");
    let replay_key = format!("{prefix}/replay.jsonl.zst");
    let log_key = format!("{prefix}/seat-0.stderr.log");
    let replay: String =
        (0..20_000).map(|step| format!("{{\"type\":\"frame\",\"step\":{step},\"cells\":[{}]}}\n", step % 97)).collect();
    let mut upload = fixture.state.storage.replay_upload(&replay_key);
    upload.write_all(replay.as_bytes()).await.expect("write the replay");
    upload.shutdown().await.expect("finish the upload");
    let log = b"thinking...\nmove 3\n\xe2\x9c\x93 done\n".to_vec();
    fixture.state.storage.create(&log_key, log.clone()).await.expect("store the log");

    let recorded =
        fixture.state.ledger.record(vec![won_by_seat_0(&id, &job, &replay_key, Some(log_key))]).await.expect("record");
    assert!(matches!(recorded[..], [farm_coordinator::ledger::Recorded::New { completed: true, .. }]), "{recorded:?}");

    let served = fixture.get(&format!("/api/matches/{job}/replay")).await;
    assert_eq!(served.status, StatusCode::OK);
    assert_eq!(served.headers.get(header::CONTENT_TYPE).map(|value| value.as_bytes()), Some(&b"application/jsonl"[..]));
    assert_eq!(served.body.len(), replay.len());
    assert!(served.body == replay.as_bytes(), "the replay comes back decompressed, byte for byte");

    let served = fixture.get(&format!("/api/matches/{job}/logs/0")).await;
    assert_eq!(served.status, StatusCode::OK);
    assert_eq!(served.body, log);
    let message = fixture.get(&format!("/api/matches/{job}/logs/1")).await.error(StatusCode::NOT_FOUND, "not_found");
    assert!(message.contains("builtin"), "{message}");
    let message = fixture.get(&format!("/api/matches/{job}/logs/9")).await.error(StatusCode::NOT_FOUND, "not_found");
    assert!(message.contains("seat 9"), "{message}");

    let detail = fixture.get(&format!("/api/matches/{job}")).await.json();
    assert_eq!(detail["match"]["state"], "done");
    assert_eq!(detail["match"]["attempts"], 1);
    assert_eq!(detail["worker_id"], "worker-7");
    assert_eq!(detail["result"]["status"], "completed");
    assert_eq!(detail["result"]["replay_key"], replay_key);
    assert_eq!(detail["result"]["players"][0]["score"], 12);

    let shown = fixture.get(&format!("/api/tournaments/{id}")).await.json();
    assert_eq!((shown["progress"]["done"].as_u64(), shown["progress"]["pending"].as_u64()), (Some(1), Some(5)));
    assert_eq!(shown["finished"], false);
    assert_eq!(fixture.matches(&id, "?status=done").await.len(), 1);

    let standings = fixture.get(&format!("/api/tournaments/{id}/standings")).await;
    assert_eq!(standings.status, StatusCode::OK);
    let standings = standings.json();
    assert_eq!(standings["tournament_id"], id);
    assert_eq!(standings["progress"]["done"], 1);
    let rows = standings["rows"].as_array().expect("rows");
    let row = |name: &str| rows.iter().find(|row| row["bot"] == name).expect("a row per bot").clone();
    assert_eq!((row(&winner)["played"].as_u64(), row(&winner)["wins"].as_u64()), (Some(1), Some(1)));
    assert_eq!((row(&loser)["played"].as_u64(), row(&loser)["losses"].as_u64()), (Some(1), Some(1)));
    let third = rows.iter().find(|row| row["bot"] != winner.as_str() && row["bot"] != loser.as_str()).expect("third");
    assert_eq!(third["played"], 0);
    assert_eq!(rows[0]["bot"], winner.as_str(), "the only winner leads");
    assert_eq!(rows[0]["place"], 1);

    // A result whose replay is not (or no longer) in storage: 404, naming no file path.
    let other = every[1]["job_id"].as_str().expect("a job id").to_owned();
    let missing_key = format!("tournaments/{id}/jobs/{other}/attempt-1-000000000000/replay.jsonl.zst");
    let missing_log = format!("tournaments/{id}/jobs/{other}/attempt-1-000000000000/seat-0.stderr.log");
    fixture
        .state
        .ledger
        .record(vec![won_by_seat_0(&id, &other, &missing_key, Some(missing_log))])
        .await
        .expect("record");
    let directory = fixture.dir.path().to_string_lossy().into_owned();
    for what in ["replay", "logs/0"] {
        let message =
            fixture.get(&format!("/api/matches/{other}/{what}")).await.error(StatusCode::NOT_FOUND, "not_found");
        assert!(message.contains("not in storage"), "{what}: {message}");
        assert!(!message.contains(&directory), "{what}: the server's paths stay private: {message}");
    }
}

/// One match's seat results (seat order: score, rank, status, timeouts).
fn played(tournament_id: &str, job_id: &str, seats: [(i64, u32, PlayerStatus, u64); 2]) -> Answer {
    let players = seats
        .iter()
        .enumerate()
        .map(|(seat, &(score, rank, status, timeouts))| PlayerResult {
            outcome: PlayerOutcome { score, rank, status },
            timeouts,
            ..player(seat, score, rank, None)
        })
        .collect();
    let replay_key = farm_runtime::storage::AttemptKeys::new(tournament_id, job_id, 1).replay();
    let Answer::Result(mut envelope) = won_by_seat_0(tournament_id, job_id, &replay_key, None) else {
        unreachable!("a result")
    };
    if let MatchResult::Completed { players: slots, .. } = &mut envelope.result {
        *slots = players;
    }
    Answer::Result(envelope)
}

#[tokio::test]
async fn match_rows_carry_seat_outcomes_and_a_total_and_failures_can_be_listed() {
    let fixture = fixture();
    // gamma is an external bot: its seats have logs.
    let text =
        BOTWARS.replace("name = \"gamma\"\nbuiltin = \"random\"", "name = \"gamma\"\ncommand = \"python3 gamma.py\"");
    let answer = fixture.submit(&text).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    let id = answer.json()["id"].as_str().expect("an id").to_owned();
    let shown = fixture.get(&format!("/api/tournaments/{id}")).await.json();
    assert_eq!(shown["bots_per_match"], 2);

    let page = fixture.get(&format!("/api/tournaments/{id}/matches?limit=2")).await.json();
    assert_eq!(page["total"], 6, "the total ignores the limit");
    assert_eq!(page["matches"].as_array().map(Vec::len), Some(2));
    assert_eq!(page["matches"][0]["outcomes"], Value::Null, "no outcomes before the match is played");

    let every = fixture.matches(&id, "").await;
    let job = |index: usize| every[index]["job_id"].as_str().expect("a job id").to_owned();
    let bots = |index: usize| -> Vec<String> {
        every[index]["bots"]
            .as_array()
            .expect("bots")
            .iter()
            .map(|bot| bot.as_str().expect("a name").to_owned())
            .collect()
    };
    // Round robin order: alpha-beta both ways, then alpha-gamma both ways, then beta-gamma.
    assert_eq!(
        (bots(0), bots(2), bots(5)),
        (
            vec!["alpha".to_owned(), "beta".into()],
            vec!["alpha".into(), "gamma".into()],
            vec!["gamma".into(), "beta".into()]
        )
    );
    let ok = PlayerStatus::Ok;
    fixture
        .state
        .ledger
        .record(vec![
            played(&id, &job(0), [(12, 1, ok, 0), (3, 2, ok, 1)]),
            played(&id, &job(2), [(5, 1, ok, 0), (0, 2, PlayerStatus::Crashed, 2)]),
            played(&id, &job(3), [(4, 1, ok, 0), (4, 1, ok, 0)]),
            Answer::Failed { job_id: job(5), attempts: 3, reason: "poison".to_owned(), dead_letter: true },
        ])
        .await
        .expect("record");

    let done = fixture.matches(&id, "?status=done").await;
    assert_eq!(done.len(), 3);
    assert_eq!(
        done[0]["outcomes"],
        serde_json::json!([
            { "seat": 0, "bot": "alpha", "score": 12, "rank": 1, "status": "ok", "timeouts": 0, "log": null },
            { "seat": 1, "bot": "beta", "score": 3, "rank": 2, "status": "ok", "timeouts": 1, "log": null },
        ])
    );
    let crashed = &done[1]["outcomes"][1];
    assert_eq!((crashed["bot"].as_str(), crashed["status"].as_str()), (Some("gamma"), Some("crashed")));
    assert_eq!(crashed["log"], format!("/api/matches/{}/logs/1", job(2)));
    let detail = fixture.get(&format!("/api/matches/{}", job(2))).await.json();
    assert_eq!(detail["match"]["outcomes"], done[1]["outcomes"], "the match page has the same outcomes");

    let failures = |query: &'static str| {
        let fixture = &fixture;
        let id = &id;
        async move { fixture.get(&format!("/api/tournaments/{id}/matches?failures=true{query}")).await.json() }
    };
    let jobs_of = |page: &Value| -> Vec<String> {
        page["matches"]
            .as_array()
            .expect("matches")
            .iter()
            .map(|row| row["job_id"].as_str().expect("id").to_owned())
            .collect()
    };
    let all = failures("").await;
    assert_eq!((jobs_of(&all), all["total"].as_u64()), (vec![job(2), job(5)], Some(2)));
    assert_eq!(jobs_of(&failures("&bot=gamma").await), [job(2), job(5)], "its crash and the failed match it was in");
    assert_eq!(jobs_of(&failures("&bot=alpha").await), Vec::<String>::new(), "alpha never failed");
    assert_eq!(jobs_of(&failures("&bot=beta").await), [job(5)]);
    let limited = failures("&limit=1&offset=1").await;
    assert_eq!((jobs_of(&limited), limited["total"].as_u64()), (vec![job(5)], Some(2)));
    fixture
        .get(&format!("/api/tournaments/{id}/matches?failures=maybe"))
        .await
        .error(StatusCode::BAD_REQUEST, "bad_request");

    // Pairings: alpha beat beta once and drew gamma once; alpha beat gamma once (gamma
    // crashed); the failed match counts for nobody.
    let pairings = fixture.get(&format!("/api/tournaments/{id}/pairings")).await;
    assert_eq!(pairings.status, StatusCode::OK, "{}", pairings.text());
    let pairings = pairings.json();
    assert_eq!(pairings["bots"], serde_json::json!(["alpha", "beta", "gamma"]));
    let cell = |row: usize, column: usize| {
        let cell = &pairings["results"][row][column];
        (cell["wins"].as_u64(), cell["draws"].as_u64(), cell["losses"].as_u64())
    };
    assert_eq!(cell(0, 1), (Some(1), Some(0), Some(0)));
    assert_eq!(cell(1, 0), (Some(0), Some(0), Some(1)), "the same games from the other side");
    assert_eq!(cell(0, 2), (Some(1), Some(1), Some(0)));
    assert_eq!(cell(2, 0), (Some(0), Some(1), Some(1)));
    assert_eq!(cell(1, 2), (Some(0), Some(0), Some(0)));
    assert_eq!(cell(1, 1), (Some(0), Some(0), Some(0)));
    fixture.get("/api/tournaments/t-unknown/pairings").await.error(StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn a_read_only_api_refuses_submissions_and_serves_the_rest() {
    let fixture = fixture_with(Submissions::Closed);
    let tournament =
        TournamentFile::from_toml(BOTWARS).expect("parses").resolve(None, TournamentLimits::default()).expect("valid");
    fixture.state.ledger.insert_tournament(tournament.clone()).await.expect("insert");

    for authorization in [Some(format!("Bearer {TOKEN}")), None] {
        let refused = fixture.post(authorization.as_deref(), Some("application/toml"), BOTWARS).await;
        let message = refused.error(StatusCode::FORBIDDEN, "read_only");
        assert!(message.contains("no submissions"), "{message}");
    }
    assert!(!fixture.woke_publisher());

    let listed = fixture.get("/api/tournaments").await.json();
    assert_eq!(listed["tournaments"][0]["id"], tournament.id);
    assert_eq!(fixture.matches(&tournament.id, "").await.len(), 6);
    let page = fixture.get(&format!("/tournaments/{}", tournament.id)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text().contains("data-testid=\"standings\""), "the tournament page");
}

#[tokio::test]
async fn internal_errors_are_logged_not_shown() {
    let fixture = fixture();
    let id = fixture.submit_botwars().await;
    // Damage the stored tournament behind the ledger's back.
    let connection = rusqlite::Connection::open(fixture.dir.path().join("ledger.sqlite")).expect("open");
    connection
        .execute("UPDATE tournaments SET definition = 'not json' WHERE id = ?1", [&id])
        .expect("damage the ledger");
    drop(connection);
    let answer = fixture.get(&format!("/api/tournaments/{id}")).await;
    let message = answer.error(StatusCode::INTERNAL_SERVER_ERROR, "internal");
    assert!(!message.contains("parse") && !message.contains("ledger:"), "{message}");
    assert!(!message.contains("not json"), "{message}");
}

#[tokio::test]
async fn the_web_pages_are_served_beside_the_api() {
    let fixture = fixture();
    for path in [
        "/",
        "/tournaments/t-0000000000000000",
        "/tournaments/t-1/bots/alpha",
        "/tournaments/t-1/matches",
        "/matches/j-1",
    ] {
        let page = fixture.get(path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        let content_type = page.headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok());
        assert_eq!(content_type, Some("text/html; charset=utf-8"), "{path}");
        assert!(page.text().contains("/static/common.js"), "{path}");
    }
    let script = fixture.get("/static/common.js").await;
    assert_eq!(script.status, StatusCode::OK);
    assert!(script.text().contains("MatchFarm"));
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_healthz_answers() {
    let fixture = fixture();
    let id = fixture.submit_botwars().await;
    assert_eq!(fixture.get(&format!("/api/tournaments/{id}")).await.status, StatusCode::OK);
    fixture.get("/api/tournaments/t-metrics-unknown").await.error(StatusCode::NOT_FOUND, "not_found");
    fixture.get("/api/matches/j-metrics-unknown").await.error(StatusCode::NOT_FOUND, "not_found");
    fixture.get("/no/such/route/metrics-test").await.error(StatusCode::NOT_FOUND, "not_found");

    let healthz = fixture.get("/healthz").await;
    assert_eq!(healthz.status, StatusCode::OK);
    assert_eq!(healthz.json(), serde_json::json!({ "ok": true }));

    let metrics = fixture.get("/metrics").await;
    assert_eq!(metrics.status, StatusCode::OK);
    let content_type = metrics.headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok());
    assert!(content_type.is_some_and(|value| value.starts_with("text/plain")), "{content_type:?}");
    let text = metrics.text();
    let requests: Vec<&str> =
        text.lines().filter(|line| line.starts_with("farm_coordinator_api_requests_total{")).collect();
    let counted = |route: &str, method: &str, status: &str| {
        requests.iter().any(|line| {
            line.contains(&format!("route=\"{route}\""))
                && line.contains(&format!("method=\"{method}\""))
                && line.contains(&format!("status=\"{status}\""))
        })
    };
    assert!(counted("/api/tournaments/{id}", "GET", "200"), "{requests:#?}");
    assert!(counted("/api/tournaments/{id}", "GET", "404"), "{requests:#?}");
    assert!(counted("/api/matches/{job_id}", "GET", "404"), "{requests:#?}");
    assert!(counted("/api/tournaments", "POST", "201"), "{requests:#?}");
    assert!(counted("/healthz", "GET", "200"), "{requests:#?}");
    assert!(
        requests.iter().all(|line| !line.contains(&id) && !line.contains("unknown") && !line.contains("metrics-test")),
        "labels never carry ids or raw paths: {requests:#?}"
    );
    assert!(text.contains("farm_coordinator_api_request_duration_seconds"), "{text}");
}

/// Plays a Botwars match of builtin bots of at most `turns`; returns its replay and
/// what each seat was sent at each step (`None`: not asked).
fn botwars_replay(turns: u32) -> (String, Vec<Vec<Option<String>>>) {
    use farm_engine::{BotReply, GameKind, Match, MatchSetup, builtin};
    let players = vec!["alpha".to_owned(), "beta".to_owned()];
    let setup = MatchSetup::new(GameKind::Botwars, &serde_json::json!({ "maxTurns": turns }), None, 3, players)
        .expect("a valid setup");
    let mut bots: Vec<_> =
        (0..2).map(|seat| builtin::create(GameKind::Botwars, "random", 3, seat).expect("a builtin")).collect();
    let mut game = Match::new(setup).expect("starts");
    let mut replay = game.header_line() + "\n";
    let mut sent = vec![Vec::new(), Vec::new()];
    while !game.is_over() {
        let requests = game.requests();
        for (seat, steps) in sent.iter_mut().enumerate() {
            steps.push(requests.iter().find(|(asked, _)| *asked == seat).map(|(_, text)| text.clone()));
        }
        let replies =
            requests.into_iter().map(|(seat, _)| (seat, BotReply::Line(bots[seat].reply(game.game(), seat)))).collect();
        replay += game.submit(replies).expect("replies fit");
        replay += "\n";
    }
    replay += &(game.footer_line() + "\n");
    (replay, sent)
}

#[tokio::test]
async fn observations_are_what_each_seat_was_sent() {
    let fixture = fixture();
    let id = fixture.submit_botwars().await;
    let every = fixture.matches(&id, "").await;
    let job = every[0]["job_id"].as_str().expect("a job id").to_owned();
    let pending = every[1]["job_id"].as_str().expect("a job id").to_owned();

    let (replay, sent) = botwars_replay(20);
    fixture.complete_with_replay(&id, &job, &replay).await;

    for (seat, expected) in sent.iter().enumerate() {
        let served = fixture.get(&format!("/api/matches/{job}/observations/{seat}")).await;
        assert_eq!(served.status, StatusCode::OK, "{}", served.text());
        let content_type = served.headers.get(header::CONTENT_TYPE).map(|value| value.as_bytes());
        assert_eq!(content_type, Some(&b"application/jsonl"[..]));
        let lines: Vec<Value> =
            served.text().lines().map(|line| serde_json::from_str(line).expect("a JSON line")).collect();
        assert_eq!(lines.len(), expected.len(), "one line per frame");
        for (index, (line, sent)) in lines.iter().zip(expected).enumerate() {
            assert_eq!(line["index"], index);
            assert_eq!(line["step"], index + 1);
            assert_eq!(line["observation"].as_str(), sent.as_deref(), "seat {seat}, frame {index}");
        }
    }

    let message =
        fixture.get(&format!("/api/matches/{job}/observations/2")).await.error(StatusCode::NOT_FOUND, "not_found");
    assert!(message.contains("seat 2"), "{message}");
    fixture.get(&format!("/api/matches/{job}/observations/x")).await.error(StatusCode::BAD_REQUEST, "bad_request");
    let message =
        fixture.get(&format!("/api/matches/{pending}/observations/0")).await.error(StatusCode::NOT_FOUND, "not_found");
    assert!(message.contains("not completed"), "{message}");
    fixture.get("/api/matches/j-nope/observations/0").await.error(StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn observation_requests_past_the_concurrent_limit_get_429_and_finished_ones_are_cached() {
    let mut fixture = fixture();
    fixture.state.observer = Observer::new(ObservationLimits { concurrent: 2, ..Default::default() });
    let id = fixture.submit_botwars().await;
    let job = fixture.matches(&id, "").await[0]["job_id"].as_str().expect("a job id").to_owned();
    let (replay, sent) = botwars_replay(400);
    assert!(sent[0].len() > 40, "a replay longer than what is produced ahead: {}", sent[0].len());
    fixture.complete_with_replay(&id, &job, &replay).await;
    let uri = format!("/api/matches/{job}/observations/0");
    let count = |outcome: &str| metrics::OBSERVATIONS.with_label_values(&[outcome]).get();
    let (busy, cached) = (count("busy"), count("cached"));

    // Two clients hold both re-simulations: each has read one chunk and waits.
    let app = api::app(fixture.state.clone());
    let mut held = Vec::new();
    for _ in 0..2 {
        let response = app.clone().oneshot(Request::get(&uri).body(Body::empty()).expect("request")).await.expect("ok");
        assert_eq!(response.status(), StatusCode::OK);
        let mut body = response.into_body();
        let first = body.frame().await.expect("a chunk").expect("readable").into_data().expect("data");
        held.push((first, body));
    }

    // 48 more at once: every one is told to come back, none is queued.
    let rejected = futures_util::future::join_all((0..48).map(|_| fixture.get(&uri))).await;
    for answer in &rejected {
        let message = answer.error(StatusCode::TOO_MANY_REQUESTS, "busy");
        assert!(message.contains("2 observation requests"), "{message}");
        assert_eq!(answer.headers.get(header::RETRY_AFTER).map(|value| value.as_bytes()), Some(&b"1"[..]));
    }
    assert_eq!(count("busy") - busy, 48, "each 429 is counted");

    // The held answers are whole and right once read; the next request is served from the cache.
    let mut answers = Vec::new();
    for (first, body) in held {
        let rest = body.collect().await.expect("the rest").to_bytes();
        answers.push([first, rest].concat());
    }
    let again = fixture.get(&uri).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(count("cached") - cached, 1);
    for body in answers.iter().chain([&again.body.to_vec()]) {
        let observed: Vec<Option<String>> = String::from_utf8_lossy(body)
            .lines()
            .map(|line| {
                serde_json::from_str::<Value>(line).expect("a JSON line")["observation"].as_str().map(str::to_owned)
            })
            .collect();
        assert_eq!(observed, sent[0]);
    }
    let metrics = fixture.get("/metrics").await.text();
    assert!(metrics.contains("farm_coordinator_observations_total{outcome=\"busy\"}"), "{metrics}");
}

#[tokio::test]
async fn a_slow_observations_reader_is_cut_at_its_deadline_and_its_slot_is_free_again() {
    let mut fixture = fixture();
    fixture.state.observer = Observer::new(ObservationLimits { concurrent: 1, deadline_secs: 1, ..Default::default() });
    let id = fixture.submit_botwars().await;
    let job = fixture.matches(&id, "").await[0]["job_id"].as_str().expect("a job id").to_owned();
    let (replay, sent) = botwars_replay(400);
    fixture.complete_with_replay(&id, &job, &replay).await;
    let uri = format!("/api/matches/{job}/observations/0");

    // A reader of a line every 50 ms would take 20 s to read the answer whole.
    assert!(sent[0].len() > 40 + 16, "{} lines", sent[0].len());
    let request = Request::get(&uri).body(Body::empty()).expect("request");
    let response = api::app(fixture.state.clone()).oneshot(request).await.expect("the router never fails");
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut read = 0;
    let cut = loop {
        match body.frame().await {
            Some(Ok(_)) => read += 1,
            Some(Err(error)) => break error,
            None => panic!("the slow reader got the answer whole"),
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(cut.to_string().contains("observations.deadline_secs = 1 s"), "{cut}");
    assert!(read < sent[0].len(), "cut short: {read} lines of {}", sent[0].len());
    assert!(body.frame().await.is_none(), "nothing after the cut");

    // The answer's end came once its slot was free: the next reader, with one slot, is served.
    let again = fixture.get(&uri).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.text());
    assert_eq!(again.text().lines().count(), sent[0].len(), "whole");
}

#[tokio::test]
async fn a_retry_publishes_unanswered_and_failed_jobs_again_and_needs_the_token() {
    use farm_coordinator::ledger::{Progress, Recorded};
    let fixture = fixture();
    let id = fixture.submit_botwars().await;
    let jobs: Vec<String> =
        fixture.matches(&id, "").await.iter().map(|row| row["job_id"].as_str().expect("a job id").to_owned()).collect();
    assert_eq!(jobs.len(), 6);
    fixture.state.ledger.mark_running(jobs.iter().map(|job| (job.clone(), 60)).collect()).await.expect("published");
    let replay_key = farm_runtime::storage::AttemptKeys::new(&id, &jobs[0], 1).replay();
    let failed =
        Answer::Failed { job_id: jobs[1].clone(), attempts: 6, reason: "dead-lettered".to_owned(), dead_letter: true };
    fixture.state.ledger.record(vec![won_by_seat_0(&id, &jobs[0], &replay_key, None), failed]).await.expect("record");
    let progress = || async { fixture.state.ledger.progress(&id).await.expect("progress").expect("the tournament") };
    assert_eq!(progress().await, Progress { total: 6, running: 4, done: 1, failed: 1, ..Progress::default() });

    let retry = |uri: String, token: Option<&'static str>| {
        let mut request = Request::post(uri);
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        fixture.send(request.body(Body::empty()).expect("request"))
    };
    retry(format!("/api/tournaments/{id}/retry?failed=true"), None)
        .await
        .error(StatusCode::UNAUTHORIZED, "unauthorized");
    retry(format!("/api/tournaments/{id}/retry"), Some("not-the-token"))
        .await
        .error(StatusCode::FORBIDDEN, "forbidden");
    retry("/api/tournaments/t-none/retry".to_owned(), Some(TOKEN)).await.error(StatusCode::NOT_FOUND, "not_found");
    assert_eq!(progress().await.running, 4, "refused retries change nothing");

    let answer = retry(format!("/api/tournaments/{id}/retry"), Some(TOKEN)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.json(), serde_json::json!({ "unanswered": 4, "failed": 0 }));
    assert_eq!(progress().await, Progress { total: 6, pending: 4, done: 1, failed: 1, ..Progress::default() });

    let answer = retry(format!("/api/tournaments/{id}/retry?failed=true"), Some(TOKEN)).await;
    assert_eq!(answer.json(), serde_json::json!({ "unanswered": 0, "failed": 1 }));
    assert_eq!(progress().await, Progress { total: 6, pending: 5, done: 1, ..Progress::default() });
    assert!(fixture.matches(&id, "?status=failed").await.is_empty(), "the failure is gone");
    let replay_key = farm_runtime::storage::AttemptKeys::new(&id, &jobs[1], 7).replay();
    let mut second_try = won_by_seat_0(&id, &jobs[1], &replay_key, None);
    if let Answer::Result(envelope) = &mut second_try {
        envelope.attempt = 7;
    }
    let recorded = fixture.state.ledger.record(vec![second_try]).await.expect("record");
    assert!(
        matches!(recorded[..], [Recorded::New { completed: true, .. }]),
        "the retried job is answered anew: {recorded:?}"
    );
}

#[tokio::test]
async fn a_ladder_takes_and_retires_bots_and_any_tournament_can_be_stopped_once() {
    let fixture = fixture();
    let bearer = format!("Bearer {TOKEN}");
    let send = |method: &str, uri: &str, body: &str, token: bool| {
        let mut request = Request::builder().method(method).uri(uri).header(header::CONTENT_TYPE, "application/json");
        if token {
            request = request.header(header::AUTHORIZATION, bearer.as_str());
        }
        request.body(Body::from(body.to_owned())).expect("request")
    };
    let ladder = "name = \"l\"\ngame = \"botwars\"\nformat = \"ladder\"\nqueue_depth = 2\n\
                  [[bots]]\nname = \"a\"\nbuiltin = \"random\"\n[[bots]]\nname = \"b\"\nbuiltin = \"gatherer\"\n";
    let submitted = fixture.submit(ladder).await;
    assert_eq!(submitted.status, StatusCode::CREATED, "{}", submitted.text());
    assert_eq!(submitted.json()["jobs"], 0, "its director schedules as it goes");
    let id = submitted.json()["id"].as_str().expect("id").to_owned();
    let bots = format!("/api/tournaments/{id}/bots");
    let new_bot = r#"{"bot": {"name": "c", "builtin": "gatherer"}}"#;

    fixture.send(send("POST", &bots, new_bot, false)).await.error(StatusCode::UNAUTHORIZED, "unauthorized");
    let added = fixture.send(send("POST", &bots, new_bot, true)).await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text());
    assert_eq!(added.json()["index"], 2);
    let message = fixture.send(send("POST", &bots, new_bot, true)).await.error(StatusCode::BAD_REQUEST, "bad_request");
    assert!(message.contains("bot.name: \"c\" is used by an earlier bot"), "{message}");
    let unknown = r#"{"bot": {"name": "d", "builtin": "smart"}}"#;
    let message = fixture.send(send("POST", &bots, unknown, true)).await.error(StatusCode::BAD_REQUEST, "bad_request");
    assert!(message.contains("bot.builtin: botwars has no builtin \"smart\""), "{message}");
    let replacing = r#"{"bot": {"name": "b2", "builtin": "gatherer"}, "replaces": "b"}"#;
    assert_eq!(fixture.send(send("POST", &bots, replacing, true)).await.status, StatusCode::CREATED);

    let view = fixture.get(&format!("/api/tournaments/{id}")).await.json();
    assert_eq!(view["bots"], serde_json::json!(["a", "b", "c", "b2"]));
    assert_eq!(view["retired"], serde_json::json!(["b"]));
    assert_eq!(view["status"]["format"], "ladder");
    assert_eq!(view["status"]["queue_depth"], 2);

    let retired = fixture.send(send("DELETE", &format!("{bots}/a"), "", true)).await;
    assert_eq!(retired.status, StatusCode::OK, "{}", retired.text());
    let again =
        fixture.send(send("DELETE", &format!("{bots}/a"), "", true)).await.error(StatusCode::CONFLICT, "conflict");
    assert!(again.contains("a has retired already"), "{again}");
    // Two bots are left, the fewest a table seats: the last ones cannot go.
    let last =
        fixture.send(send("DELETE", &format!("{bots}/c"), "", true)).await.error(StatusCode::CONFLICT, "conflict");
    assert!(last.contains("add another before retiring it"), "{last}");
    fixture.send(send("DELETE", &format!("{bots}/nobody"), "", true)).await.error(StatusCode::CONFLICT, "conflict");

    // Every bot a ladder has had stays in its definition: that is bounded as a submission is.
    let big = |name: &str| format!(r#"{{"bot": {{"name": "{name}", "command": "{}"}}}}"#, "x".repeat(600 * 1024));
    assert_eq!(fixture.send(send("POST", &bots, &big("big1"), true)).await.status, StatusCode::CREATED);
    let message = fixture
        .send(send("POST", &bots, &big("big2"), true))
        .await
        .error(StatusCode::UNPROCESSABLE_ENTITY, "over_limit");
    assert!(message.contains("above the 1048576 a submission may be"), "{message}");
    let view = fixture.get(&format!("/api/tournaments/{id}")).await.json();
    assert!(!view["bots"].as_array().expect("bots").iter().any(|bot| bot == "big2"), "refused, not stored");

    // A round robin is not a ladder.
    let round_robin = fixture.submit_botwars().await;
    let message = fixture
        .send(send("POST", &format!("/api/tournaments/{round_robin}/bots"), new_bot, true))
        .await
        .error(StatusCode::CONFLICT, "conflict");
    assert!(message.contains("is not a ladder"), "{message}");

    // Stopping ends it once: its unpublished jobs are cancelled.
    let stop = format!("/api/tournaments/{round_robin}/stop");
    fixture.send(send("POST", &stop, "", false)).await.error(StatusCode::UNAUTHORIZED, "unauthorized");
    let stopped = fixture.send(send("POST", &stop, "", true)).await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.text());
    let cancelled = stopped.json()["cancelled"].as_u64().expect("cancelled");
    let view = fixture.get(&format!("/api/tournaments/{round_robin}")).await.json();
    assert_eq!(view["progress"]["cancelled"].as_u64(), Some(cancelled));
    assert!(cancelled > 0 && view["finished"] == true, "{view}");
    assert_eq!(view["conclusion"], "stopped by operator");
    fixture.send(send("POST", &stop, "", true)).await.error(StatusCode::CONFLICT, "conflict");
    fixture
        .send(send("POST", "/api/tournaments/t-nope/stop", "", true))
        .await
        .error(StatusCode::NOT_FOUND, "not_found");
    // A stopped ladder takes no more bots.
    fixture.send(send("POST", &format!("/api/tournaments/{id}/stop"), "", true)).await;
    let ended = fixture.send(send("POST", &bots, r#"{"bot": {"name": "e", "builtin": "random"}}"#, true)).await;
    assert!(ended.error(StatusCode::CONFLICT, "conflict").contains("has ended"));
}

#[tokio::test]
async fn users_change_only_their_own_tournaments_and_admins_everything() {
    let fixture = fixture();
    let ada = fixture.make_user("ada").await;
    let bob = fixture.make_user("bob").await;
    assert!(ada.starts_with("mft_") && ada != bob, "{ada}");

    // Only admins make users; names are checked and taken once.
    let message = fixture
        .call("POST", "/api/users", r#"{"name": "eve"}"#, Some(&ada))
        .await
        .error(StatusCode::FORBIDDEN, "denied");
    assert_eq!(message, "making users is for admins; ada is not one");
    let message = fixture
        .call("POST", "/api/users", r#"{"name": "ada"}"#, Some(TOKEN))
        .await
        .error(StatusCode::CONFLICT, "conflict");
    assert_eq!(message, "user ada exists already");
    for (body, expected) in [
        (r#"{"name": "Ada Lovelace"}"#, "user name \"Ada Lovelace\": 1 to 32 characters"),
        (r#"{"name": "operator"}"#, "is the configured api_token's"),
        (r#"{"name": "cy", "share": 0}"#, "share: must be 1 to 1000, not 0"),
        (r#"{"name": "cy", "role": "admin"}"#, "unknown field `role`"),
    ] {
        let message =
            fixture.call("POST", "/api/users", body, Some(TOKEN)).await.error(StatusCode::BAD_REQUEST, "bad_request");
        assert!(message.contains(expected), "{body}: {message}");
    }

    // Ada's tournament is hers: Bob can neither stop nor retry it; Ada and the operator can.
    let submitted = fixture.submit_as(&ada, BOTWARS).await;
    assert_eq!(submitted.status, StatusCode::CREATED, "{}", submitted.text());
    let id = submitted.json()["id"].as_str().expect("id").to_owned();
    assert_eq!(fixture.get(&format!("/api/tournaments/{id}")).await.json()["owner"], "ada");
    for path in [format!("/api/tournaments/{id}/stop"), format!("/api/tournaments/{id}/retry")] {
        let message = fixture.call("POST", &path, "", Some(&bob)).await.error(StatusCode::FORBIDDEN, "denied");
        assert_eq!(message, format!("tournament {id}: it is ada's, and bob is neither ada nor an admin"), "{path}");
    }
    assert_eq!(
        fixture.call("POST", &format!("/api/tournaments/{id}/retry"), "", Some(&ada)).await.status,
        StatusCode::OK
    );
    assert_eq!(
        fixture.call("POST", &format!("/api/tournaments/{id}/stop"), "", Some(TOKEN)).await.status,
        StatusCode::OK
    );
    let message = fixture
        .call("DELETE", "/api/workers/w1/quarantine", "", Some(&ada))
        .await
        .error(StatusCode::FORBIDDEN, "denied");
    assert_eq!(message, "releasing a worker is for admins; ada is not one");

    // Tokens: a user makes their own, not others'; a revoked one works no more.
    let me = fixture.call("GET", "/api/me", "", Some(&ada)).await.json();
    assert_eq!((me["name"].as_str(), me["admin"].as_bool(), me["share"].as_u64()), (Some("ada"), Some(false), Some(1)));
    let first_id = me["tokens"][0]["id"].as_str().expect("token id").to_owned();
    assert!(ada.starts_with(&format!("mft_{first_id}")));
    assert_eq!(me["usage"]["running_tournaments"], 0, "stopped, and nothing was running: {me}");
    let message =
        fixture.call("POST", "/api/users/ada/tokens", "", Some(&bob)).await.error(StatusCode::FORBIDDEN, "denied");
    assert_eq!(message, "a token of ada: it is ada's, and bob is neither ada nor an admin");
    let second = fixture.call("POST", "/api/users/ada/tokens", "", Some(&ada)).await;
    assert_eq!(second.status, StatusCode::CREATED, "{}", second.text());
    let second = second.json()["token"].as_str().expect("token").to_owned();
    let message = fixture
        .call("DELETE", &format!("/api/tokens/{first_id}"), "", Some(&bob))
        .await
        .error(StatusCode::FORBIDDEN, "denied");
    assert!(message.contains(&format!("token {first_id}: it is ada's")), "{message}");
    assert_eq!(
        fixture.call("DELETE", &format!("/api/tokens/{first_id}"), "", Some(&second)).await.status,
        StatusCode::OK
    );
    fixture.call("GET", "/api/me", "", Some(&ada)).await.error(StatusCode::FORBIDDEN, "forbidden");
    fixture
        .call("DELETE", &format!("/api/tokens/{first_id}"), "", Some(TOKEN))
        .await
        .error(StatusCode::CONFLICT, "conflict");
    fixture.call("DELETE", "/api/tokens/nope", "", Some(TOKEN)).await.error(StatusCode::NOT_FOUND, "not_found");
    // A token shaped as the farm's, but never issued.
    let forged = format!("mft_{}", "0".repeat(64));
    fixture.call("GET", "/api/me", "", Some(&forged)).await.error(StatusCode::FORBIDDEN, "forbidden");

    // Admins list users and set shares; the listing holds token ids, never tokens.
    fixture.call("GET", "/api/users", "", Some(&bob)).await.error(StatusCode::FORBIDDEN, "denied");
    let shared = fixture.call("PUT", "/api/users/bob/share", r#"{"share": 3}"#, Some(TOKEN)).await;
    assert_eq!(shared.status, StatusCode::OK, "{}", shared.text());
    let listed = fixture.call("GET", "/api/users", "", Some(TOKEN)).await;
    let text = listed.text();
    assert!(!text.contains(&ada[4..]) && !text.contains(&second[4..]) && !text.contains(&bob[4..]), "{text}");
    let users = listed.json()["users"].clone();
    assert_eq!(users[0]["name"], "ada");
    let tokens = users[0]["tokens"].as_array().expect("tokens");
    assert_eq!(tokens.len(), 2);
    // Made in the same second, they are listed in either order: each by its id.
    for token in tokens {
        assert_eq!(token["revoked_at"].is_i64(), token["id"] == first_id.as_str(), "{token}");
    }
    assert_eq!((users[1]["name"].as_str(), users[1]["share"].as_u64()), (Some("bob"), Some(3)));
    assert_eq!(users[1]["created_by"], "operator");
}

#[tokio::test]
async fn quotas_refuse_with_429_naming_the_quota() {
    let mut fixture = fixture();
    fixture.state.quotas =
        Quotas { max_running_tournaments: 1, max_queued_jobs: 10, max_webhooks: 1, max_tokens: 2, ..Quotas::default() };
    let ada = fixture.make_user("ada").await;
    let first = fixture.submit_as(&ada, BOTWARS).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());
    let id = first.json()["id"].as_str().expect("id").to_owned();
    let another = BOTWARS.replace("seed = 3", "seed = 4");
    let message = fixture.submit_as(&ada, &another).await.error(StatusCode::TOO_MANY_REQUESTS, "quota");
    assert_eq!(message, "ada has 1 of quotas.max_running_tournaments = 1 already");
    // The same tournament again makes nothing, so it is not refused; admins have no quotas.
    assert_eq!(fixture.submit_as(&ada, BOTWARS).await.status, StatusCode::OK);
    assert_eq!(fixture.submit(&another).await.status, StatusCode::CREATED);

    // Once it has finished, another may start, but not one of 12 jobs beside 6 queued.
    fixture.complete_all(&id).await;
    let twelve = BOTWARS.replace("seed = 3", "seed = 5\ngames_per_pairing = 2");
    let third = BOTWARS.replace("seed = 3", "seed = 6");
    assert_eq!(fixture.submit_as(&ada, &third).await.status, StatusCode::CREATED);
    let usage = fixture.call("GET", "/api/me", "", Some(&ada)).await.json();
    assert_eq!(
        (usage["usage"]["running_tournaments"].as_u64(), usage["usage"]["queued_jobs"].as_u64()),
        (Some(1), Some(6))
    );
    assert_eq!(usage["quotas"]["max_queued_jobs"], 10);
    fixture.state.quotas.max_running_tournaments = 5;
    let message = fixture.submit_as(&ada, &twelve).await.error(StatusCode::TOO_MANY_REQUESTS, "quota");
    assert_eq!(message, "ada has 6 of quotas.max_queued_jobs = 10 already, and this would add 12");

    let hook_body = r#"{"url": "http://127.0.0.1:9/hook"}"#;
    assert_eq!(fixture.call("POST", "/api/webhooks", hook_body, Some(&ada)).await.status, StatusCode::CREATED);
    let message = fixture
        .call("POST", "/api/webhooks", hook_body, Some(&ada))
        .await
        .error(StatusCode::TOO_MANY_REQUESTS, "quota");
    assert_eq!(message, "ada has 1 of quotas.max_webhooks = 1 already");
    // Removing it frees nothing for a day: registering and removing in a loop is bounded.
    let hooks = fixture.call("GET", "/api/webhooks", "", Some(&ada)).await.json();
    let hook = hooks["webhooks"][0]["id"].as_str().expect("id").to_owned();
    assert_eq!(fixture.call("DELETE", &format!("/api/webhooks/{hook}"), "", Some(&ada)).await.status, StatusCode::OK);
    fixture.call("POST", "/api/webhooks", hook_body, Some(&ada)).await.error(StatusCode::TOO_MANY_REQUESTS, "quota");

    // Tokens likewise: her first and one more; revoking one does not make room today.
    let second = fixture.call("POST", "/api/users/ada/tokens", "", Some(&ada)).await;
    assert_eq!(second.status, StatusCode::CREATED, "{}", second.text());
    let message = fixture
        .call("POST", "/api/users/ada/tokens", "", Some(&ada))
        .await
        .error(StatusCode::TOO_MANY_REQUESTS, "quota");
    assert_eq!(message, "ada has 2 of quotas.max_tokens = 2 already");
    let second_id = second.json()["token_id"].as_str().expect("id").to_owned();
    assert_eq!(
        fixture.call("DELETE", &format!("/api/tokens/{second_id}"), "", Some(&ada)).await.status,
        StatusCode::OK
    );
    fixture.call("POST", "/api/users/ada/tokens", "", Some(&ada)).await.error(StatusCode::TOO_MANY_REQUESTS, "quota");
    // An admin is not held to it.
    assert_eq!(fixture.call("POST", "/api/users/ada/tokens", "", Some(TOKEN)).await.status, StatusCode::CREATED);
}

/// What a webhook receiver was sent.
struct Received {
    signature: String,
    event: String,
    body: Vec<u8>,
}

#[tokio::test]
async fn webhooks_are_signed_retried_after_a_failure_and_their_history_shown() {
    // A receiver on loopback that fails its first request and takes the rest.
    let (sent, mut received) = tokio::sync::mpsc::unbounded_channel::<Received>();
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let receiver = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let (sent, calls) = (sent.clone(), Arc::clone(&calls));
            async move {
                let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                let _ = sent.send(Received {
                    signature: text(webhooks::SIGNATURE_HEADER),
                    event: text("x-matchfarm-event"),
                    body: body.to_vec(),
                });
                if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::NO_CONTENT
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, receiver).await });

    let fixture = fixture();
    let ada = fixture.make_user("ada").await;
    let bob = fixture.make_user("bob").await;
    for (body, expected) in [
        (r#"{"url": "ftp://example.com/"}"#.to_owned(), "only http and https URLs are posted to"),
        (
            format!(r#"{{"url": "http://{address}/hook", "events": ["match.played"]}}"#),
            "\"match.played\" is not one of",
        ),
    ] {
        let message = fixture
            .call("POST", "/api/webhooks", &body, Some(&ada))
            .await
            .error(StatusCode::BAD_REQUEST, "bad_request");
        assert!(message.contains(expected), "{message}");
    }
    let registered =
        fixture.call("POST", "/api/webhooks", &format!(r#"{{"url": "http://{address}/hook"}}"#), Some(&ada)).await;
    assert_eq!(registered.status, StatusCode::CREATED, "{}", registered.text());
    let registered = registered.json();
    let (hook, secret) = (registered["id"].as_str().expect("id"), registered["secret"].as_str().expect("secret"));
    assert_eq!(registered["events"], serde_json::json!(webhooks::EVENT_KINDS));
    let listed = fixture.call("GET", "/api/webhooks", "", Some(&ada)).await;
    assert!(!listed.text().contains(secret), "the secret is shown once");
    assert_eq!(fixture.call("GET", "/api/webhooks", "", Some(&bob)).await.json()["webhooks"], serde_json::json!([]));

    let submitted = fixture.submit_as(&ada, BOTWARS).await;
    let id = submitted.json()["id"].as_str().expect("id").to_owned();
    // Bob's tournament finishing is not Ada's event.
    let bobs = fixture.submit_as(&bob, &BOTWARS.replace("seed = 3", "seed = 9")).await;
    let bobs = bobs.json()["id"].as_str().expect("id").to_owned();
    let deliverer = Deliverer::new(fixture.state.ledger.clone(), fixture.state.webhooks);
    assert_eq!(deliverer.sweep().await.expect("sweep"), 0, "nothing has happened yet");
    fixture.complete_all(&bobs).await;
    fixture.complete_all(&id).await;

    // The first attempt fails, and says so in the history.
    assert_eq!(deliverer.sweep().await.expect("sweep"), 1);
    let first = received.recv().await.expect("a first delivery");
    let history = format!("/api/webhooks/{hook}/deliveries");
    let delivery = fixture.call("GET", &history, "", Some(&ada)).await.json()["deliveries"][0].clone();
    assert_eq!((delivery["state"].as_str(), delivery["attempts"].as_u64()), (Some("retrying"), Some(1)), "{delivery}");
    assert_eq!(delivery["last_outcome"], "answered 500 Internal Server Error");

    // The retry is the same delivery, signed again, and is taken.
    assert_eq!(deliverer.sweep().await.expect("sweep"), 1);
    let second = received.recv().await.expect("a retry");
    assert_eq!(first.body, second.body, "every attempt posts the same body");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("time").as_secs() as i64;
    assert!(webhooks::verify(secret, &second.signature, &second.body, now, 300), "{}", second.signature);
    assert!(!webhooks::verify("whsec_other", &second.signature, &second.body, now, 300));
    assert_eq!(second.event, "tournament.finished");
    let body: Value = serde_json::from_slice(&second.body).expect("JSON");
    assert_eq!(body["event"]["kind"], "tournament.finished");
    assert_eq!(
        (body["tournament"]["id"].as_str(), body["tournament"]["owner"].as_str()),
        (Some(id.as_str()), Some("ada"))
    );
    assert_eq!(body["tournament"]["jobs"]["done"], 6, "{body}");
    let delivery = fixture.call("GET", &history, "", Some(&ada)).await.json()["deliveries"][0].clone();
    assert_eq!((delivery["state"].as_str(), delivery["attempts"].as_u64()), (Some("delivered"), Some(2)), "{delivery}");
    assert_eq!(delivery["body"], body);
    assert_eq!(deliverer.sweep().await.expect("sweep"), 0, "delivered once");
    assert!(received.try_recv().is_err(), "and only Ada's event");

    // Bob sees neither Ada's webhook nor its deliveries; Ada removes it.
    fixture.call("GET", &history, "", Some(&bob)).await.error(StatusCode::FORBIDDEN, "denied");
    fixture
        .call("DELETE", &format!("/api/webhooks/{hook}"), "", Some(&bob))
        .await
        .error(StatusCode::FORBIDDEN, "denied");
    assert_eq!(fixture.call("DELETE", &format!("/api/webhooks/{hook}"), "", Some(&ada)).await.status, StatusCode::OK);
    fixture.call("GET", &history, "", Some(&ada)).await.error(StatusCode::NOT_FOUND, "not_found");
}

/// A tar of `entries` (path, data, symlink target), written raw: the tar crate's own
/// checks would refuse some of these paths.
fn tar_of(entries: &[(&str, &[u8], Option<&str>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, data, link) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(if link.is_some() { tar::EntryType::Symlink } else { tar::EntryType::Regular });
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        if let Some(link) = link {
            header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
        header.set_cksum();
        builder.append(&header, *data).expect("append");
    }
    builder.into_inner().expect("tar")
}

impl Fixture {
    /// Uploads `archive` to `POST /api/bots?QUERY` as the holder of `token`.
    async fn upload(&self, token: &str, query: &str, archive: Vec<u8>) -> Answered {
        let request = Request::post(format!("/api/bots?{query}"))
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/x-tar");
        self.send(request.body(Body::from(archive)).expect("request")).await
    }
}

#[tokio::test]
async fn uploads_are_checked_owned_bounded_and_become_versions() {
    let mut fixture = fixture();
    fixture.state.quotas.max_submissions_per_day = 3;
    let ada = fixture.make_user("ada").await;
    let bob = fixture.make_user("bob").await;
    let bot = tar_of(&[("bot.py", b"print('[]')", None)]);

    let made = fixture.upload(&ada, "name=ada-bot&game=botwars", bot.clone()).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    assert_eq!((made.json()["version"].as_u64(), made.json()["layout"].as_str()), (Some(1), Some("python")));
    let again = fixture.upload(&ada, "name=ada-bot&game=botwars", bot.clone()).await;
    assert_eq!(again.json()["version"], 2, "each upload is a new version");
    let shown = fixture.get("/api/bots/ada-bot").await.json();
    assert_eq!((shown["owner"].as_str(), shown["game"].as_str()), (Some("ada"), Some("botwars")));
    let states: Vec<&str> =
        shown["versions"].as_array().expect("versions").iter().filter_map(|v| v["state"].as_str()).collect();
    assert_eq!(states, ["building", "building"], "newest first, waiting for a worker");
    let stored = fixture.state.storage.list("sources/ada-bot").await.expect("list");
    assert_eq!(stored.len(), 1, "the same archive is stored once: {stored:?}");
    fixture.get("/api/bots/ada-bot/versions/1/build-log").await.error(StatusCode::NOT_FOUND, "not_found");

    // Another user's bot: 403 naming its owner; an admin may.
    let message =
        fixture.upload(&bob, "name=ada-bot&game=botwars", bot.clone()).await.error(StatusCode::FORBIDDEN, "denied");
    assert_eq!(message, "bot ada-bot: it is ada's, and bob is neither ada nor an admin");
    assert_eq!(fixture.upload(TOKEN, "name=ada-bot&game=botwars", bot.clone()).await.status, StatusCode::CREATED);
    // Its game is its first version's.
    let message =
        fixture.upload(&ada, "name=ada-bot&game=maze", bot.clone()).await.error(StatusCode::CONFLICT, "conflict");
    assert_eq!(message, "bot ada-bot plays botwars, not maze");

    // Archives that break the rules, each refused naming what is wrong.
    for (archive, expected) in [
        (tar_of(&[("bot.py", b"", None), ("../evil.py", b"", None)]), "must stay inside"),
        (tar_of(&[("bot.py", b"", None), ("passwd", b"", Some("/etc/passwd"))]), "out of the source"),
        (tar_of(&[("README", b"hello", None)]), "nothing says how to build it"),
        // An author's Dockerfile is no layout: the farm compiles and assembles itself.
        (
            tar_of(&[("Dockerfile", b"FROM matchfarm/base-debian\nADD http://127.0.0.1/x /x\n", None)]),
            "the layouts python (bot.py",
        ),
    ] {
        let message = fixture
            .upload(&bob, "name=bob-bot&game=botwars", archive)
            .await
            .error(StatusCode::BAD_REQUEST, "bad_request");
        assert!(message.starts_with("the archive: ") && message.contains(expected), "{expected}: {message}");
    }
    let too_large = vec![0u8; 80 << 20];
    fixture
        .upload(&bob, "name=bob-bot&game=botwars", too_large)
        .await
        .error(StatusCode::PAYLOAD_TOO_LARGE, "too_large");
    for (query, expected) in [
        ("name=Bob&game=botwars", "name: \"Bob\" must be"),
        ("name=bob-bot&game=chess", "game: "),
        ("name=bob-bot&game=botwars&ladder=t-0", "ladder: no tournament t-0"),
    ] {
        let answer = fixture.upload(&bob, query, bot.clone()).await;
        assert!(answer.status.is_client_error(), "{query}");
        assert!(
            answer.json()["error"]["message"].as_str().is_some_and(|m| m.contains(expected)),
            "{query}: {}",
            answer.text()
        );
    }
    let round_robin = fixture.submit_botwars().await;
    let message = fixture
        .upload(&bob, &format!("name=bob-bot&game=botwars&ladder={round_robin}"), bot.clone())
        .await
        .error(StatusCode::CONFLICT, "conflict");
    assert_eq!(message, format!("ladder: {round_robin} is not a ladder"));
    assert!(fixture.get("/api/bots/bob-bot").await.status == StatusCode::NOT_FOUND, "nothing refused was made");

    // A version plays nowhere before it has passed validation, whoever names its image.
    let image = format!("127.0.0.1:5055/matchfarm-bots/ada-bot@sha256:{}", "a".repeat(64));
    let naming = BOTWARS.replace("builtin = \"gatherer\"", &format!("image = \"{image}\""));
    let message = fixture.submit(&naming).await.error(StatusCode::CONFLICT, "conflict");
    assert_eq!(
        message,
        format!("bots[1].image: {image} is a submitted bot's image, and no version with it has passed validation")
    );
    let ledger = &fixture.state.ledger;
    assert!(ledger.version_built("ada-bot".into(), 1, image.clone(), "t-v".into()).await.expect("built"));
    assert!(ledger.decide_version("ada-bot".into(), 1, VersionState::Validated, None).await.expect("decided"));
    assert_eq!(fixture.submit(&naming).await.status, StatusCode::CREATED);
    // Validated, it still runs only as its author built it; and no user names an image by
    // its id (a rejected version's, a failed build's layer), though an admin may.
    let with_args = naming.replace(&format!("image = \"{image}\""), &format!("image = \"{image}\"\nargs = [\"sh\"]"));
    let message = fixture.submit_as(&bob, &with_args).await.error(StatusCode::CONFLICT, "conflict");
    assert!(message.ends_with("is a submitted bot's image: it runs as its author built it, without args"), "{message}");
    for id in ["sha256:0123456789abcdef", "0123456789ab"] {
        let by_id = BOTWARS.replace("builtin = \"gatherer\"", &format!("image = \"{id}\""));
        let message = fixture.submit_as(&bob, &by_id).await.error(StatusCode::CONFLICT, "conflict");
        assert_eq!(message, format!("bots[1].image: {id} names an image by its id, which only admins may"));
    }

    // A ladder takes submissions from its owner and admins, or from all when it says so.
    let ladder = |open: bool| {
        format!(
            "name = \"ladder {open}\"\ngame = \"botwars\"\nformat = \"ladder\"\nopen_to_submissions = {open}\n\
             [[bots]]\nname = \"a\"\nbuiltin = \"random\"\n[[bots]]\nname = \"b\"\nbuiltin = \"gatherer\"\n"
        )
    };
    let closed = fixture.submit(&ladder(false)).await.json()["id"].as_str().expect("id").to_owned();
    let open = fixture.submit(&ladder(true)).await.json()["id"].as_str().expect("id").to_owned();
    let message = fixture
        .upload(&bob, &format!("name=bob-bot&game=botwars&ladder={closed}"), bot.clone())
        .await
        .error(StatusCode::FORBIDDEN, "denied");
    assert!(message.ends_with("it is operator's and not open to submissions (open_to_submissions = true in its file)"));
    let entered = fixture.upload(&bob, &format!("name=bob-bot&game=botwars&ladder={open}"), bot.clone()).await;
    assert_eq!(entered.status, StatusCode::CREATED, "{}", entered.text());

    // Uploads a day are bounded: ada has made 2 (the admin's does not count to her).
    assert_eq!(fixture.upload(&ada, "name=ada-bot&game=botwars", bot.clone()).await.status, StatusCode::CREATED);
    let message =
        fixture.upload(&ada, "name=ada-two&game=botwars", bot).await.error(StatusCode::TOO_MANY_REQUESTS, "quota");
    assert_eq!(message, "ada has 3 of quotas.max_submissions_per_day = 3 already");
}

#[tokio::test]
async fn a_trickling_upload_holds_only_its_users_permit_and_is_cut_at_the_minimum_rate() {
    let mut fixture = fixture();
    let limits = UploadLimits { concurrent: 2, per_user: 1, min_bytes_per_sec: 1024, deadline_secs: 60 };
    fixture.state.uploads = Uploads::new(limits);
    let ada = fixture.make_user("ada").await;
    let bob = fixture.make_user("bob").await;
    let bot = tar_of(&[("bot.py", b"print('[]')", None)]);

    // Ada's upload sends 8 KiB, which buy it 8 s after the second of grace, then nothing.
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
    let trickle = Body::from_stream(futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx)));
    let request = Request::post("/api/bots?name=ada-bot&game=botwars")
        .header(header::AUTHORIZATION, format!("Bearer {ada}"))
        .body(trickle)
        .expect("request");
    let trickling = tokio::spawn(api::app(fixture.state.clone()).oneshot(request));
    sender.send(Ok(Bytes::from(vec![0; 8 << 10]))).await.expect("the upload reads");
    // Once it has taken those bytes, it holds its permit and waits for more.
    let more = sender.reserve().await.expect("the upload reads on");

    let message = fixture
        .upload(&ada, "name=ada-two&game=botwars", bot.clone())
        .await
        .error(StatusCode::TOO_MANY_REQUESTS, "busy");
    assert!(message.contains("ada has 1 upload(s) being received or checked (uploads.per_user = 1)"), "{message}");
    let made = fixture.upload(&bob, "name=bob-bot&game=botwars", bot.clone()).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    assert!(!trickling.is_finished() && !sender.is_closed(), "bob was answered while ada's body is still open");

    // Ada's trickle is cut once its bytes' time ran out, naming the limit, and her permit is back.
    let cut = trickling.await.expect("join").expect("the router never fails");
    let (parts, body) = cut.into_parts();
    let cut =
        Answered { status: parts.status, headers: parts.headers, body: body.collect().await.expect("read").to_bytes() };
    let message = cut.error(StatusCode::REQUEST_TIMEOUT, "too_slow");
    assert!(
        message.starts_with("the archive arrived slower than uploads.min_bytes_per_sec = 1024: 8192 bytes in "),
        "{message}"
    );
    assert!(sender.is_closed(), "the body is dropped");
    drop(more);
    assert_eq!(fixture.upload(&ada, "name=ada-bot&game=botwars", bot).await.status, StatusCode::CREATED);
}

#[tokio::test]
async fn tournaments_come_a_page_at_a_time_newest_first() {
    let fixture = fixture();
    let mut ids = Vec::new();
    for seed in 0..3 {
        let answer = fixture.submit(&BOTWARS.replace("seed = 3", &format!("seed = {seed}"))).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
        ids.push(answer.json()["id"].as_str().expect("an id").to_owned());
    }
    // The first is the oldest; the others were submitted in the same second.
    let connection = rusqlite::Connection::open(fixture.dir.path().join("ledger.sqlite")).expect("open");
    connection.execute("UPDATE tournaments SET created_at = 100 WHERE id = ?1", [&ids[0]]).expect("age it");
    connection.execute("UPDATE tournaments SET created_at = 200 WHERE id != ?1", [&ids[0]]).expect("age them");
    drop(connection);
    let mut newest_first = vec![ids[1].clone(), ids[2].clone()];
    newest_first.sort();
    newest_first.push(ids[0].clone());

    let listed = |page: &Value| -> Vec<String> {
        page["tournaments"]
            .as_array()
            .expect("a list")
            .iter()
            .map(|t| t["id"].as_str().expect("id").to_owned())
            .collect()
    };
    let whole = fixture.get("/api/tournaments").await.json();
    assert_eq!((listed(&whole), &whole["next"]), (newest_first.clone(), &Value::Null), "100 a page by default");
    let mut paged = Vec::new();
    let mut query = "?limit=1".to_owned();
    loop {
        let page = fixture.get(&format!("/api/tournaments{query}")).await.json();
        paged.extend(listed(&page));
        let Some(next) = page["next"].as_str() else { break };
        query = format!("?limit=1&after={next}");
    }
    assert_eq!(paged, newest_first, "one at a time, the same order");
    let first = fixture.get("/api/tournaments?limit=2").await.json();
    assert_eq!(first["next"], newest_first[1].as_str());

    for (query, expected) in [
        ("?limit=0", "limit: 1 to 1000, not 0"),
        ("?limit=1001", "limit: 1 to 1000, not 1001"),
        ("?after=t-nothing", "after: no tournament t-nothing"),
    ] {
        let message =
            fixture.get(&format!("/api/tournaments{query}")).await.error(StatusCode::BAD_REQUEST, "bad_request");
        assert_eq!(message, expected, "{query}");
    }
    fixture.get("/api/tournaments?offset=1").await.error(StatusCode::BAD_REQUEST, "bad_request");
}

#[tokio::test]
async fn the_workers_records_come_a_page_at_a_time() {
    let fixture = fixture();
    let id = fixture.submit_botwars().await;
    let jobs: Vec<String> =
        fixture.matches(&id, "").await.iter().map(|row| row["job_id"].as_str().expect("job id").to_owned()).collect();
    // Three workers answered a match each.
    let answers = ["w-a", "w-b", "w-c"]
        .iter()
        .zip(&jobs)
        .map(|(worker, job)| {
            let key = format!("tournaments/{id}/jobs/{job}/attempt-1-000000000000/replay.jsonl.zst");
            let Answer::Result(mut envelope) = won_by_seat_0(&id, job, &key, None) else { unreachable!() };
            envelope.worker_id = (*worker).to_owned();
            Answer::Result(envelope)
        })
        .collect();
    fixture.state.ledger.record(answers).await.expect("record");
    let page = |query: &str| {
        let fixture = &fixture;
        let query = query.to_owned();
        async move { fixture.get(&format!("/api/workers{query}")).await.json() }
    };
    let ids = |page: &Value| -> Vec<String> {
        page["workers"]
            .as_array()
            .expect("workers")
            .iter()
            .map(|w| w["worker_id"].as_str().expect("id").to_owned())
            .collect()
    };
    let first = page("?limit=2").await;
    assert_eq!((ids(&first), &first["next"]), (vec!["w-a".to_owned(), "w-b".to_owned()], &Value::from("w-b")));
    let second = page("?limit=2&after=w-b").await;
    assert_eq!((ids(&second), &second["next"]), (vec!["w-c".to_owned()], &Value::Null));
    assert_eq!(ids(&page("").await).len(), 3, "100 by default");
    let refused = fixture.get("/api/workers?limit=0").await;
    assert!(refused.error(StatusCode::BAD_REQUEST, "bad_request").contains("limit: 1 to 1000"));
}

/// [`fixture`], as a farm whose workers launch bots in Docker.
fn docker_fixture() -> Fixture {
    let mut fixture = fixture();
    let wake = Arc::clone(&fixture.state.wake_publisher);
    fixture.state.director = Director::new(fixture.state.ledger.clone(), SandboxKind::Docker, wake);
    fixture
}

/// A hostile user enters a command bot, which a farm launching bots outside Docker runs
/// on its workers, in a tournament and in a ladder of his own: refused, naming the bot,
/// though admins may; a farm launching bots in Docker runs no command, and takes it.
#[tokio::test]
async fn users_enter_no_command_bots_unless_the_farm_launches_bots_in_docker() {
    let fixture = fixture();
    let bob = fixture.make_user("bob").await;
    // In TOML, and in JSON beside an image (which a local farm ignores).
    let command = BOTWARS
        .replace("name = \"gamma\"\nbuiltin = \"random\"", "name = \"gamma\"\ncommand = \"cat /etc/farm/identity\"");
    let expected = "bots[2].command: bot \"gamma\" runs a command, which this farm's workers run outside Docker \
                    with their own access (bot_launch is not docker): only admins may enter one; submit its source \
                    instead (POST /api/bots)";
    assert_eq!(fixture.submit_as(&bob, &command).await.error(StatusCode::FORBIDDEN, "denied"), expected);
    let json = serde_json::json!({
        "name": "json", "game": "botwars", "format": "round-robin",
        "bots": [{ "name": "a", "builtin": "random" },
                 { "name": "sneaky", "image": "matchfarm/bot-botwars-random-py", "command": "id" }],
    });
    let message = fixture.call("POST", "/api/tournaments", &json.to_string(), Some(&bob)).await;
    let message = message.error(StatusCode::FORBIDDEN, "denied");
    assert!(message.starts_with("bots[1].command: bot \"sneaky\" runs a command"), "{message}");
    assert_eq!(fixture.tournament_count().await, 0, "nothing refused was stored");
    // Nor in a ladder of his own.
    let ladder = "name = \"l\"\ngame = \"botwars\"\nformat = \"ladder\"\n\
                  [[bots]]\nname = \"a\"\nbuiltin = \"random\"\n[[bots]]\nname = \"b\"\nbuiltin = \"gatherer\"\n";
    let ladder = fixture.submit_as(&bob, ladder).await.json()["id"].as_str().expect("id").to_owned();
    let bots = format!("/api/tournaments/{ladder}/bots");
    let entry = r#"{"bot": {"name": "c", "command": "id"}}"#;
    let message = fixture.call("POST", &bots, entry, Some(&bob)).await.error(StatusCode::FORBIDDEN, "denied");
    assert!(message.starts_with("bot.command: bot \"c\" runs a command"), "{message}");
    // The operator (its CLI) and admins may.
    assert_eq!(fixture.submit(&command).await.status, StatusCode::CREATED);
    assert_eq!(fixture.call("POST", &bots, entry, Some(TOKEN)).await.status, StatusCode::CREATED);
    // A farm that launches bots in Docker never runs a command: anyone's bot may have one.
    let docker = docker_fixture();
    let carol = docker.make_user("carol").await;
    let answer = docker.submit_as(&carol, &command).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
}

/// A hostile user names another's validated version, under a name of his own, in his
/// tournament and his ladder: refused, naming the bot but not whose, until its owner
/// (or an admin) makes her bot public; private again, it is refused again. Its owner's
/// and admins' tournaments always take it.
#[tokio::test]
async fn users_enter_other_users_validated_versions_only_once_their_bots_are_public() {
    let fixture = docker_fixture();
    let ada = fixture.make_user("ada").await;
    let bob = fixture.make_user("bob").await;
    let made = fixture.upload(&ada, "name=ada-bot&game=botwars", tar_of(&[("bot.py", b"print('[]')", None)])).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let image = format!("127.0.0.1:5055/matchfarm-bots/ada-bot@sha256:{}", "b".repeat(64));
    let ledger = &fixture.state.ledger;
    assert!(ledger.version_built("ada-bot".into(), 1, image.clone(), "t-v".into()).await.expect("built"));
    assert!(ledger.decide_version("ada-bot".into(), 1, VersionState::Validated, None).await.expect("decided"));
    let naming = |name: &str| {
        BOTWARS
            .replace("name = \"api test\"", &format!("name = \"{name}\""))
            .replace("name = \"beta\"\nbuiltin = \"gatherer\"", &format!("name = \"mine\"\nimage = \"{image}\""))
    };
    let refused = format!(
        "bots[1].image: {image} is a version of bot ada-bot, which is not public: only its owner's and admins' \
         tournaments enter it; challenge it (POST /api/challenges), or ask its owner to make it public"
    );
    assert_eq!(fixture.submit_as(&bob, &naming("bob's")).await.error(StatusCode::FORBIDDEN, "denied"), refused);
    let ladder = "name = \"l\"\ngame = \"botwars\"\nformat = \"ladder\"\n\
                  [[bots]]\nname = \"a\"\nbuiltin = \"random\"\n[[bots]]\nname = \"b\"\nbuiltin = \"gatherer\"\n";
    let ladder = fixture.submit_as(&bob, ladder).await.json()["id"].as_str().expect("id").to_owned();
    let bots = format!("/api/tournaments/{ladder}/bots");
    let entry = format!(r#"{{"bot": {{"name": "mine", "image": "{image}"}}}}"#);
    let message = fixture.call("POST", &bots, &entry, Some(&bob)).await.error(StatusCode::FORBIDDEN, "denied");
    assert_eq!(message, refused.replacen("bots[1]", "bot", 1));
    // Its owner's and admins' tournaments take it.
    assert_eq!(fixture.submit_as(&ada, &naming("ada's")).await.status, StatusCode::CREATED);
    assert_eq!(fixture.submit(&naming("the operator's")).await.status, StatusCode::CREATED);

    // Only its owner or an admin makes it public, with exactly that key.
    let patch = async |body: &str, token: Option<&str>| fixture.call("PATCH", "/api/bots/ada-bot", body, token).await;
    patch(r#"{"public": true}"#, None).await.error(StatusCode::UNAUTHORIZED, "unauthorized");
    let message = patch(r#"{"public": true}"#, Some(&bob)).await.error(StatusCode::FORBIDDEN, "denied");
    assert_eq!(message, "bot ada-bot: it is ada's, and bob is neither ada nor an admin");
    patch(r#"{"public": true, "owner": "bob"}"#, Some(&ada)).await.error(StatusCode::BAD_REQUEST, "bad_request");
    patch(r#"{"public": "yes"}"#, Some(&ada)).await.error(StatusCode::BAD_REQUEST, "bad_request");
    let message = fixture.call("PATCH", "/api/bots/nobody", r#"{"public": true}"#, Some(&ada)).await;
    assert_eq!(message.error(StatusCode::NOT_FOUND, "not_found"), "no bot nobody");
    assert_eq!(fixture.get("/api/bots/ada-bot").await.json()["public"], false);
    let made_public = patch(r#"{"public": true}"#, Some(&ada)).await;
    assert_eq!(made_public.status, StatusCode::OK, "{}", made_public.text());
    let shown = made_public.json();
    assert_eq!((shown["name"].as_str(), shown["public"].as_bool()), (Some("ada-bot"), Some(true)), "{shown}");
    assert_eq!(fixture.get("/api/bots/ada-bot").await.json()["public"], true);
    // Public: Bob's tournament and ladder take it.
    let answer = fixture.submit_as(&bob, &naming("bob's")).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    let answer = fixture.call("POST", &bots, &entry, Some(&bob)).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    // Private again (an admin may say so too): no new tournament of Bob's takes it.
    assert_eq!(patch(r#"{"public": false}"#, Some(TOKEN)).await.status, StatusCode::OK);
    let message = fixture.submit_as(&bob, &naming("bob's second")).await.error(StatusCode::FORBIDDEN, "denied");
    assert_eq!(message, refused);
}
