//! The binary as a container runs it: stopped with `SIGTERM` during a run (a run that ends within
//! `SHUTDOWN_GRACE_SECS`, one that does not, a run asked for during the drain), and in AgentCore
//! Runtime mode (`/ping`, `/invocations`, the session as the thread, a session that goes on in a
//! second process on the same DynamoDB Local table). Each process is the built binary, its model
//! a slow OpenAI-compatible server on loopback, its traces sent to the OTLP receiver.

use crate::dynamo_local;
use crate::helpers::{new_thread, text_of, types};
use crate::slow_model::SlowModel;
use agui_lambda::testing::protocol::verify::{parse_sse, verify_run};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;
use tokio::time::Instant;

const SESSION_HEADER: &str = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id";

/// One process of the binary, serving on a free port; killed if the test drops it.
struct Process {
    child: tokio::process::Child,
    url: String,
    /// The line that said where it listens.
    listening: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Process {
    /// The binary on `table` of DynamoDB Local and `model`, with `extra` settings.
    async fn start(table: &str, model: &SlowModel, extra: &[(&str, &str)]) -> Self {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agui-lambda"));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("PORT", "0")
            .env("THREADS_TABLE", table)
            .env("AWS_ENDPOINT_URL_DYNAMODB", dynamo_local::endpoint().await)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "local")
            .env("AWS_SECRET_ACCESS_KEY", "local")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("OPENAI_BASE_URL", &model.url)
            .env("OPENAI_API_KEY", "test-key")
            .env("AGENT_MODEL", "test-model")
            .env("MODEL_MAX_RETRIES", "0")
            .env("RUST_LOG", "info");
        for (name, value) in extra {
            command.env(name, value);
        }
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let listening = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("listening on http://") {
                    return line;
                }
            }
            panic!("the binary exited before it listened");
        })
        .await
        .expect("the binary listens within 30 s");
        let at = listening.find("listening on http://").unwrap() + "listening on http://".len();
        let addr: std::net::SocketAddr = listening[at..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let collected = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                collected.lock().unwrap().push(line);
            }
        });
        Self {
            child,
            url: format!("http://127.0.0.1:{}", addr.port()),
            listening,
            log,
        }
    }

    fn sigterm(&self) {
        let pid = self.child.id().expect("still running").to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// The exit status, which must come within `limit`.
    async fn exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        tokio::time::timeout(limit, self.child.wait())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "still running after {limit:?}:\n{}",
                    self.log.lock().unwrap().join("\n")
                )
            })
            .unwrap()
    }

    fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        reqwest::Client::new()
            .post(format!("{}{path}", self.url))
            .json(body)
    }

    async fn get(&self, path: &str) -> Value {
        let response = reqwest::get(format!("{}{path}", self.url)).await.unwrap();
        assert_eq!(response.status(), 200, "GET {path}");
        response.json().await.unwrap()
    }
}

fn input(thread: &str, run: &str, text: &str) -> Value {
    json!({
        "threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "protocolVersion": "1.0",
        "messages": [{"id": format!("u-{run}"), "role": "user", "content": text}]
    })
}

/// A run's stream, read as it arrives.
struct Stream {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    text: String,
}

impl Stream {
    fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        Self {
            body: response.bytes_stream().boxed(),
            text: String::new(),
        }
    }

    /// Reads until the stream holds `needle` (a model word, an event type).
    async fn until(&mut self, needle: &str) {
        while !self.text.contains(needle) {
            let chunk = self.body.next().await.expect("the stream ended early");
            self.text
                .push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        }
    }

    /// The whole run, once the stream has ended, checked against AG-UI's ordering rules.
    async fn events(mut self) -> Vec<Value> {
        while let Some(chunk) = self.body.next().await {
            self.text
                .push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        }
        let events = parse_sse(&self.text).unwrap();
        verify_run(&events).unwrap_or_else(|err| panic!("{err}\n{}", self.text));
        events
    }
}

#[tokio::test]
async fn sigterm_lets_a_run_within_the_grace_finish_then_exports_its_spans_and_exits_0() {
    let model = SlowModel::start(20, Duration::from_millis(100)).await;
    let (_, table) = dynamo_local::new_table().await;
    let receiver = crate::observability::receiver().await;
    // The batch processor never exports on its own here: every span that arrives was flushed
    // by the stop.
    let mut server = Process::start(
        &table,
        &model,
        &[
            ("SHUTDOWN_GRACE_SECS", "10"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver),
            ("OTEL_SERVICE_NAME", "stopped-cleanly"),
            ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "8192"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "8192"),
        ],
    )
    .await;
    let thread = new_thread();
    let response = server
        .post("/agent", &input(&thread, "r1", "count to twenty"))
        .send()
        .await
        .unwrap();
    let trace_id = response.headers()["x-trace-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut stream = Stream::new(response);
    stream.until("word1 ").await;

    server.sigterm();
    let signalled = Instant::now();
    // The drain answer: a new run is refused with 503 and Retry-After; reads still answer.
    let refused = loop {
        let refused = server
            .post("/agent", &input(&new_thread(), "r2", "hello"))
            .send()
            .await
            .unwrap();
        if refused.status() == 503 {
            break refused;
        }
        // Sent before the signal was handled: a run that ends well within the grace.
        assert!(
            signalled.elapsed() < Duration::from_secs(2),
            "never refused"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(refused.headers()["retry-after"], "1");
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["code"], "shutting_down", "{error}");
    let history = server.get(&format!("/threads/{thread}")).await;
    assert_eq!(history["activeRunId"], "r1", "{history}");

    let events = stream.events().await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{events:?}");
    assert_eq!(
        text_of(&events).split_whitespace().count(),
        20,
        "the whole answer"
    );
    let status = server.exit(Duration::from_secs(11)).await;
    assert!(status.success(), "{status:?}");
    assert!(
        signalled.elapsed() < Duration::from_secs(11),
        "exited {:?} after SIGTERM; the grace is 10 s",
        signalled.elapsed()
    );

    let spans = crate::observability::trace(&trace_id).await;
    let run = spans
        .iter()
        .find(|span| span["name"].as_str().unwrap().starts_with("invoke_agent"))
        .unwrap();
    assert_eq!(run["attributes"]["agui.run.outcome"], "finished", "{run}");
    assert_eq!(run["resource"]["service.name"], "stopped-cleanly");
}

#[tokio::test]
async fn sigterm_stops_a_run_longer_than_the_grace_as_cancel_does_and_frees_its_thread_at_once() {
    // 60 words, one per 100 ms: six seconds, against a grace of two.
    let model = SlowModel::start(60, Duration::from_millis(100)).await;
    let (_, table) = dynamo_local::new_table().await;
    let mut first = Process::start(&table, &model, &[("SHUTDOWN_GRACE_SECS", "2")]).await;
    let second = Process::start(&table, &model, &[]).await;
    let thread = new_thread();
    let response = first
        .post("/agent", &input(&thread, "r1", "count to sixty"))
        .send()
        .await
        .unwrap();
    let mut stream = Stream::new(response);
    stream.until("word1 ").await;

    first.sigterm();
    let signalled = Instant::now();
    let events = stream.events().await;
    let ended = signalled.elapsed();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{events:?}");
    assert_eq!(last["outcome"], json!({"type": "cancelled"}));
    assert!(
        ended >= Duration::from_secs(2) && ended < Duration::from_secs(4),
        "the stream ended {ended:?} after SIGTERM; the deadline is at 2 s"
    );
    let partial = text_of(&events);
    let words = partial.split_whitespace().count();
    assert!((2..60).contains(&words), "{partial}");
    let status = first.exit(Duration::from_secs(10)).await;
    assert!(status.success(), "{status:?}");

    // The other process sees the partial answer stored and the thread free.
    let history = second.get(&format!("/threads/{thread}")).await;
    assert_eq!(history["activeRunId"], Value::Null, "{history}");
    let messages = history["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{history}");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"], partial.as_str());
    // A new run there starts at once: no lease to wait out (RUN_LEASE_SECS is 30).
    let asked = Instant::now();
    let mut next = Stream::new(
        second
            .post("/agent", &input(&thread, "r2", "go on"))
            .send()
            .await
            .unwrap(),
    );
    next.until("word0 ").await;
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "the next run started {:?} after it was asked",
        asked.elapsed()
    );
}

/// `GET /ping`'s status and `time_of_last_update`.
async fn ping(server: &Process) -> (String, i64) {
    let ping = server.get("/ping").await;
    (
        ping["status"].as_str().unwrap().to_owned(),
        ping["time_of_last_update"].as_i64().unwrap(),
    )
}

/// Pings until the status is `status`.
async fn ping_until(server: &Process, status: &str) -> i64 {
    for _ in 0..200 {
        let (now, since) = ping(server).await;
        if now == status {
            return since;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("/ping never said {status}");
}

#[tokio::test]
async fn agentcore_mode_pings_busy_while_work_is_in_flight_and_the_session_is_the_thread() {
    let model = SlowModel::start(20, Duration::from_millis(50)).await;
    let (_, table) = dynamo_local::new_table().await;
    let agentcore = [("HOSTING", "agentcore")];
    let mut server = Process::start(&table, &model, &agentcore).await;
    assert!(
        server.listening.contains("listening on http://0.0.0.0:"),
        "{}",
        server.listening
    );
    let (status, idle_since) = ping(&server).await;
    assert_eq!(status, "Healthy");
    // Stamped when the status changes, not per ping.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(ping(&server).await, ("Healthy".to_owned(), idle_since));

    let session = format!("{}-session", uuid::Uuid::new_v4());
    let mut body = input("unused", "r1", "hello from the session");
    body.as_object_mut().unwrap().remove("threadId");
    let mut stream = Stream::new(
        server
            .post("/invocations", &body)
            .header(SESSION_HEADER, &session)
            .send()
            .await
            .unwrap(),
    );
    stream.until("word1 ").await;
    let (status, busy_since) = ping(&server).await;
    assert_eq!(status, "HealthyBusy");
    assert!(busy_since > idle_since);
    let events = stream.events().await;
    assert_eq!(events[0]["threadId"], session.as_str());
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    ping_until(&server, "Healthy").await;
    let history = server.get(&format!("/threads/{session}")).await;
    assert_eq!(history["messages"][0]["content"], "hello from the session");

    // A detached run (the v1 agent API) is work in flight too.
    let detached = json!({
        "threadId": new_thread(), "runId": "detached-1", "state": {}, "tools": [], "context": [],
        "messages": [{"id": "d1", "role": "user", "content": "in the background"}],
        "forwardedProps": {"agent_type": "worker"}
    });
    let accepted = server
        .post("/api/v1/agent/runs", &detached)
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), 202);
    ping_until(&server, "HealthyBusy").await;
    ping_until(&server, "Healthy").await;

    // The session's microVM stops; the next one, on the same table, goes on with its thread.
    server.sigterm();
    assert!(server.exit(Duration::from_secs(10)).await.success());
    let next = Process::start(&table, &model, &agentcore).await;
    let mut body = input("unused", "r2", "and again");
    body.as_object_mut().unwrap().remove("threadId");
    let response = next
        .post("/invocations", &body)
        .header(SESSION_HEADER, &session)
        .send()
        .await
        .unwrap();
    let events = Stream::new(response).events().await;
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    let history = next.get(&format!("/threads/{session}")).await;
    let contents: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user")
        .map(|message| message["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["hello from the session", "and again"]);
}
