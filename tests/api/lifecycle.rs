//! The run lifecycle over HTTP: runs that outlive their connection, resumable streams, cancel,
//! heartbeat leases and double-texting, on the in-memory store and on DynamoDB Local. The model
//! is the in-process demo model or a loopback OpenAI-compatible server that streams slowly.

use agui_lambda::testing::config::Config;
use agui_lambda::testing::model::DemoModel;
use agui_lambda::testing::model::ModelProvider;
use agui_lambda::testing::protocol::verify::{parse_sse_with_ids, verify_run};
use agui_lambda::testing::startup;
use agui_lambda::testing::store::{DynamoStore, MemoryStore, ThreadStore};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use crate::dynamo_local;
use crate::helpers::new_thread;
use crate::slow_model::SlowModel;

struct App {
    addr: SocketAddr,
    http: reqwest::Client,
    _server: tokio::task::JoinHandle<()>,
}

async fn app(
    vars: &[(&str, &str)],
    model: Arc<dyn ModelProvider>,
    store: Arc<dyn ThreadStore>,
) -> App {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let config = Config::from_map(&vars).unwrap();
    let built = startup::AppBuilder::new(&config)
        .model(model)
        .store(store)
        .build()
        .await
        .unwrap();
    let (addr, server) =
        agui_lambda::testing::api::bind(Arc::new(built), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
    App {
        addr,
        http: reqwest::Client::new(),
        _server: server,
    }
}

fn demo(word_delay_ms: u64) -> Arc<dyn ModelProvider> {
    Arc::new(DemoModel {
        word_delay: Duration::from_millis(word_delay_ms),
    })
}

fn memory() -> Arc<dyn ThreadStore> {
    Arc::new(MemoryStore::new())
}

/// A long question: the demo model repeats it, one word per delay.
fn long_text(words: usize) -> String {
    (0..words)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn input(thread: &str, run: &str, message_id: &str, text: &str) -> Value {
    json!({
        "threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "protocolVersion": "1.0",
        "messages": [{"id": message_id, "role": "user", "content": text}]
    })
}

impl App {
    fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap()
    }

    async fn get_json(&self, path: &str) -> (u16, Value) {
        let response = self.http.get(self.url(path)).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Waits until the thread has no active run.
    async fn wait_idle(&self, thread: &str, within: Duration) -> Duration {
        let began = Instant::now();
        loop {
            let (status, body) = self.get_json(&format!("/threads/{thread}")).await;
            if status == 200 && body["activeRunId"].is_null() {
                return began.elapsed();
            }
            assert!(began.elapsed() < within, "the thread is still busy: {body}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    async fn messages(&self, thread: &str) -> Vec<Value> {
        let (status, body) = self.get_json(&format!("/threads/{thread}?limit=500")).await;
        assert_eq!(status, 200, "{body}");
        body["messages"].as_array().unwrap().clone()
    }
}

/// Reads an SSE body frame by frame.
struct Reader {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
    raw: String,
}

impl Reader {
    fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        Self {
            body: response.bytes_stream().boxed(),
            buffer: String::new(),
            raw: String::new(),
        }
    }

    /// The next `count` events (fewer if the stream ends), with their ids.
    async fn take(&mut self, count: usize) -> Vec<(u64, Value)> {
        let mut events = Vec::new();
        while events.len() < count {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                for (id, event) in parse_sse_with_ids(&frame).unwrap() {
                    events.push((id.expect("every event frame has an id"), event));
                }
                continue;
            }
            match self.body.next().await {
                Some(chunk) => {
                    let text = String::from_utf8(chunk.unwrap().to_vec()).unwrap();
                    self.raw.push_str(&text);
                    self.buffer.push_str(&text);
                }
                None => break,
            }
        }
        events
    }

    async fn rest(&mut self) -> Vec<(u64, Value)> {
        self.take(usize::MAX).await
    }
}

fn kinds(events: &[(u64, Value)]) -> Vec<&str> {
    events
        .iter()
        .map(|(_, e)| e["type"].as_str().unwrap())
        .collect()
}

fn text(events: &[(u64, Value)]) -> String {
    events
        .iter()
        .filter(|(_, e)| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|(_, e)| e["delta"].as_str().unwrap())
        .collect()
}

fn assert_continuous(events: &[(u64, Value)]) {
    let ids: Vec<u64> = events.iter().map(|(id, _)| *id).collect();
    let expected: Vec<u64> = (1..=events.len() as u64).collect();
    assert_eq!(ids, expected, "ids are 1..n with no gap and no duplicate");
    let values: Vec<Value> = events.iter().map(|(_, e)| e.clone()).collect();
    verify_run(&values).unwrap_or_else(|err| panic!("{err}: {values:#?}"));
}

fn assistant_text(messages: &[Value]) -> String {
    messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("|")
}

#[tokio::test]
async fn a_run_goes_on_when_its_client_leaves_and_the_thread_is_free_as_soon_as_it_ends() {
    let app = app(&[], demo(15), memory()).await;
    let thread = new_thread();
    let question = long_text(40);
    let mut reader = Reader::new(
        app.post("/agent", &input(&thread, "r1", "u1", &question))
            .await,
    );
    let first = reader.take(4).await;
    assert_eq!(kinds(&first)[0], "RUN_STARTED");
    drop(reader);
    app.wait_idle(&thread, Duration::from_secs(10)).await;
    let messages = app.messages(&thread).await;
    assert_eq!(messages.len(), 2);
    assert!(
        assistant_text(&messages).ends_with(&format!("You said: {question}")),
        "the whole answer was stored: {messages:?}"
    );
    let mut next = Reader::new(
        app.post("/agent", &input(&thread, "r2", "u2", "again"))
            .await,
    );
    let events = next.rest().await;
    assert_continuous(&events);
    assert_eq!(kinds(&events).last(), Some(&"RUN_FINISHED"));
}

#[tokio::test]
async fn a_resumed_stream_gets_exactly_the_rest_with_continuous_ids() {
    let app = app(&[], demo(10), memory()).await;
    let thread = new_thread();
    let mut reader = Reader::new(
        app.post("/agent", &input(&thread, "r1", "u1", &long_text(30)))
            .await,
    );
    let head = reader.take(6).await;
    drop(reader);
    let last_id = head.last().unwrap().0;
    let response = app
        .http
        .get(app.url(&format!("/threads/{thread}/runs/r1/events")))
        .header("last-event-id", last_id.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "the follower is a stream"
    );
    let tail = Reader::new(response).rest().await;
    let mut whole = head.clone();
    whole.extend(tail);
    assert_continuous(&whole);
    assert_eq!(kinds(&whole).last(), Some(&"RUN_FINISHED"));
    let messages = app.messages(&thread).await;
    assert_eq!(text(&whole), assistant_text(&messages));

    // A finished run replays whole, and `?after=` works like the header.
    let replay = Reader::new(
        app.http
            .get(app.url(&format!("/threads/{thread}/runs/r1/events?after=0")))
            .send()
            .await
            .unwrap(),
    )
    .rest()
    .await;
    assert_eq!(replay, whole, "the replay equals what the live stream sent");
    let (status, body) = app
        .get_json(&format!("/threads/{thread}/runs/nope/events"))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("run_not_found"))
    );
    let bad = app
        .http
        .get(app.url(&format!("/threads/{thread}/runs/r1/events")))
        .header("last-event-id", "seven")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
}

#[tokio::test]
async fn cancel_stops_the_model_stores_the_partial_answer_and_ends_every_stream() {
    let model = SlowModel::start(400, Duration::from_millis(40)).await;
    let base = model.url.clone();
    let app = app(
        &[
            ("OPENAI_BASE_URL", base.as_str()),
            ("OPENAI_API_KEY", "k"),
            ("AGENT_EMIT_STEPS", "true"),
        ],
        startup_model(&base).await,
        memory(),
    )
    .await;
    let thread = new_thread();
    let mut reader = Reader::new(
        app.post("/agent", &input(&thread, "r1", "u1", "talk"))
            .await,
    );
    let head = reader.take(8).await;
    let follower = tokio::spawn({
        let http = app.http.clone();
        let url = app.url(&format!("/threads/{thread}/runs/r1/events"));
        async move {
            Reader::new(http.get(url).send().await.unwrap())
                .rest()
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let asked = Instant::now();
    let response = app
        .post(&format!("/threads/{thread}/runs/r1/cancel"), &json!({}))
        .await;
    assert_eq!(response.status(), 202);
    assert_eq!(
        response.json::<Value>().await.unwrap()["status"],
        "cancelling"
    );

    let mut events = head;
    events.extend(reader.rest().await);
    assert_continuous(&events);
    let last = &events.last().unwrap().1;
    assert_eq!(last["type"], "RUN_FINISHED");
    assert_eq!(last["outcome"], json!({"type": "cancelled"}));
    let followed = follower.await.unwrap();
    assert_eq!(
        followed, events,
        "the follower ends with the same terminal event"
    );

    assert_eq!(model.requests(), 1);
    let hangups = model.hangups();
    assert_eq!(
        hangups.len(),
        1,
        "the model server saw the connection close"
    );
    assert!(
        hangups[0] - asked < Duration::from_secs(1),
        "the model saw the hang-up {:?} after the cancel",
        hangups[0] - asked
    );
    app.wait_idle(&thread, Duration::from_secs(1)).await;
    let messages = app.messages(&thread).await;
    assert_eq!(
        assistant_text(&messages),
        text(&events),
        "the stored partial answer is what the client saw"
    );
    assert!(!text(&events).is_empty());
    let again = app
        .post(&format!("/threads/{thread}/runs/r1/cancel"), &json!({}))
        .await;
    assert_eq!(again.status(), 200, "cancel is idempotent");
    assert_eq!(again.json::<Value>().await.unwrap()["status"], "ended");
    let next = Reader::new(
        app.post("/agent", &input(&thread, "r2", "u2", "more"))
            .await,
    );
    drop(next);
}

async fn startup_model(base: &str) -> Arc<dyn ModelProvider> {
    let vars: HashMap<String, String> = [
        ("OPENAI_BASE_URL", base),
        ("OPENAI_API_KEY", "k"),
        ("MODEL_MAX_RETRIES", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    startup::model_from_config(&Config::from_map(&vars).unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_client_without_protocol_version_gets_a_finished_run_saying_cancelled_in_metadata() {
    let app = app(&[], demo(20), memory()).await;
    let thread = new_thread();
    let mut body = input(&thread, "r1", "u1", &long_text(60));
    body.as_object_mut().unwrap().remove("protocolVersion");
    let mut reader = Reader::new(app.post("/agent", &body).await);
    let mut events = reader.take(5).await;
    let response = app
        .post(&format!("/threads/{thread}/runs/r1/cancel"), &json!({}))
        .await;
    assert_eq!(response.status(), 202);
    events.extend(reader.rest().await);
    assert_continuous(&events);
    // 0.0.59 refuses the cancelled outcome, and CopilotKit shows a RUN_ERROR as a failed run.
    let last = &events.last().unwrap().1;
    assert_eq!(last["type"], "RUN_FINISHED");
    assert!(last.get("outcome").is_none(), "{last}");
    assert_eq!(last["metadata"]["agui-lambda"]["outcome"], "cancelled");
}

#[tokio::test]
async fn a_new_run_interrupts_the_active_one_or_is_refused_under_reject() {
    let app = app(&[], demo(20), memory()).await;
    let thread = new_thread();
    let mut first = Reader::new(
        app.post("/agent", &input(&thread, "r1", "u1", &long_text(80)))
            .await,
    );
    let mut seen = first.take(6).await;

    let mut refused = input(&thread, "r2", "u2", "wait your turn");
    refused["forwardedProps"] = json!({"busy_thread_policy": "reject"});
    let response = app.post("/agent", &refused).await;
    assert_eq!(response.status(), 409);
    assert_eq!(
        response.json::<Value>().await.unwrap()["error"]["code"],
        "thread_busy"
    );

    let second = app
        .post("/agent", &input(&thread, "r3", "u3", "new question"))
        .await;
    let second = Reader::new(second).rest().await;
    seen.extend(first.rest().await);
    assert_continuous(&seen);
    assert_eq!(
        seen.last().unwrap().1["outcome"],
        json!({"type": "cancelled"})
    );
    assert_continuous(&second);
    assert_eq!(kinds(&second).last(), Some(&"RUN_FINISHED"));
    let messages = app.messages(&thread).await;
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert_eq!(
        messages[1]["content"].as_str().unwrap(),
        text(&seen),
        "the interrupted partial answer is in the new run's history"
    );
    let ids: Vec<&str> = messages.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert!(!ids.contains(&"u2"), "the refused run changed nothing");
}

#[tokio::test]
async fn another_principal_gets_404_on_events_and_cancel() {
    use sha2::Digest;
    let hash = |key: &str| hex(&sha2::Sha256::digest(key.as_bytes()));
    let keys = format!("alice={},bob={}", hash("alice-key"), hash("bob-key"));
    let app = app(
        &[("AUTH_MODE", "api-key"), ("API_KEYS", &keys)],
        demo(20),
        memory(),
    )
    .await;
    let thread = new_thread();
    let response = app
        .http
        .post(app.url("/agent"))
        .bearer_auth("alice-key")
        .header("content-type", "application/json")
        .body(input(&thread, "r1", "u1", &long_text(30)).to_string())
        .send()
        .await
        .unwrap();
    let mut reader = Reader::new(response);
    reader.take(3).await;
    for (method, path) in [
        ("GET", format!("/threads/{thread}/runs/r1/events")),
        ("POST", format!("/threads/{thread}/runs/r1/cancel")),
        ("GET", format!("/threads/{thread}")),
    ] {
        let request = match method {
            "GET" => app.http.get(app.url(&path)),
            _ => app.http.post(app.url(&path)),
        };
        let response = request.bearer_auth("bob-key").send().await.unwrap();
        assert_eq!(response.status(), 404, "{method} {path}");
    }
    let rest = reader.rest().await;
    assert_eq!(
        rest.last().unwrap().1["type"],
        "RUN_FINISHED",
        "bob's cancel did not stop alice's run"
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn dynamo_store(client: &aws_sdk_dynamodb::Client, table: &str) -> Arc<dyn ThreadStore> {
    Arc::new(DynamoStore::new(client.clone(), table.to_owned(), 0))
}

#[tokio::test]
async fn a_second_process_follows_and_cancels_a_run_through_dynamodb() {
    let (client, table) = dynamo_local::new_table().await;
    let first = app(&[], demo(15), dynamo_store(&client, &table).await).await;
    let second = app(&[], demo(15), dynamo_store(&client, &table).await).await;
    let thread = new_thread();

    // Resume from the second process while the first still runs the run.
    let mut reader = Reader::new(
        first
            .post("/agent", &input(&thread, "r1", "u1", &long_text(40)))
            .await,
    );
    let head = reader.take(5).await;
    let response = second
        .http
        .get(second.url(&format!("/threads/{thread}/runs/r1/events")))
        .header("last-event-id", head.last().unwrap().0.to_string())
        .send()
        .await
        .unwrap();
    let mut follower = Reader::new(response);
    let (tail, live) = tokio::join!(follower.rest(), reader.rest());
    let mut resumed = head.clone();
    resumed.extend(tail);
    let mut uninterrupted = head;
    uninterrupted.extend(live);
    assert_continuous(&resumed);
    assert_eq!(
        kinds(&resumed),
        kinds(&uninterrupted),
        "the resumed stream has the same events as the live one"
    );
    assert_eq!(text(&resumed), text(&uninterrupted));
    assert_eq!(
        assistant_text(&second.messages(&thread).await),
        text(&resumed)
    );

    // Cancel from the second process: the run's heartbeat sees it within a second.
    let mut reader = Reader::new(
        first
            .post("/agent", &input(&thread, "r2", "u2", &long_text(200)))
            .await,
    );
    let mut events = reader.take(5).await;
    let asked = Instant::now();
    let response = second
        .post(&format!("/threads/{thread}/runs/r2/cancel"), &json!({}))
        .await;
    assert_eq!(response.status(), 202);
    events.extend(reader.rest().await);
    let stopped_after = asked.elapsed();
    assert_continuous(&events);
    assert_eq!(
        events.last().unwrap().1["outcome"],
        json!({"type": "cancelled"})
    );
    assert!(
        stopped_after < Duration::from_millis(1500),
        "stopped {stopped_after:?} after the cancel"
    );
    first.wait_idle(&thread, Duration::from_secs(2)).await;
}
