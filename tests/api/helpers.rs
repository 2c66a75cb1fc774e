use super::fixture_model::FixtureModel;
use agui_lambda::testing::config::Config;
use agui_lambda::testing::model::{ModelProvider, ModelRequest};
use agui_lambda::testing::protocol::verify::{parse_sse, verify_run};
use agui_lambda::testing::startup;
use agui_lambda::testing::store::{Blobs, ThreadStore};
use agui_lambda::tools::ToolRegistry;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The events of `kind` among `events`, in order.
pub(crate) fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

/// Waits until `url` answers with a success, as a loopback server a test started does once it
/// listens; panics naming `what` when it has not within 30 s.
pub(crate) async fn await_ready(url: &str, what: &str) {
    let http = reqwest::Client::new();
    for _ in 0..600 {
        if http
            .get(url)
            .send()
            .await
            .is_ok_and(|response| response.status().is_success())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not start at {url}");
}

/// A running aimock server with the scenario fixtures; killed when dropped.
pub(crate) struct Aimock {
    _child: tokio::process::Child,
    pub url: String,
    http: reqwest::Client,
}

impl Aimock {
    pub(crate) async fn start() -> Self {
        let bin = repo_path("tests/node/node_modules/.bin/llmock");
        assert!(
            bin.exists(),
            "aimock is not installed: run `npm ci` in tests/node (scripts/test.sh does)"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = tokio::process::Command::new(bin)
            .args([
                "-p",
                &port.to_string(),
                "-h",
                "127.0.0.1",
                "--log-level",
                "silent",
                "-f",
            ])
            .arg(repo_path("tests/fixtures/aimock-openai.json"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("aimock starts");
        let url = format!("http://127.0.0.1:{port}");
        await_ready(&format!("{url}/health"), "aimock").await;
        Self {
            _child: child,
            url,
            http: reqwest::Client::new(),
        }
    }

    /// The requests the model received, oldest first.
    pub(crate) async fn journal(&self) -> Vec<Value> {
        self.http
            .get(format!("{}/__aimock/journal", self.url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The chat completion request bodies that asked about `user_text`.
    pub(crate) async fn requests_about(&self, user_text: &str) -> Vec<Value> {
        self.journal()
            .await
            .into_iter()
            .filter(|entry| entry["body"]["messages"].to_string().contains(user_text))
            .collect()
    }
}

pub(crate) struct TestApp {
    pub addr: SocketAddr,
    model: TestModel,
    pub http: reqwest::Client,
    _server: tokio::task::JoinHandle<()>,
}

/// The model behind a test app: the fixtures in process, or aimock on loopback for the tests
/// about the OpenAI wire format (whose names start with `wire_`).
enum TestModel {
    Fixture(Arc<FixtureModel>),
    Aimock(Box<Aimock>),
    /// An OpenAI-compatible server the test started itself, named by `OPENAI_BASE_URL`.
    Loopback,
    /// A model the test scripts itself, in process.
    Scripted(Arc<dyn ModelProvider>),
}

pub(crate) struct Reply {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {}", self.body))
    }

    /// The SSE events, checked against the client's ordering rules.
    pub(crate) fn events(&self) -> Vec<Value> {
        assert_eq!(self.status, 200, "{}", self.body);
        assert_eq!(self.content_type, "text/event-stream");
        let events = parse_sse(&self.body).unwrap();
        verify_run(&events).unwrap_or_else(|err| panic!("{err}\n{}", self.body));
        events
    }
}

/// An app on the in-process fixture model and the in-memory store.
pub(crate) async fn spawn_app() -> TestApp {
    spawn_app_with(&[]).await
}

pub(crate) async fn spawn_app_with(overrides: &[(&str, &str)]) -> TestApp {
    spawn_app_on(overrides, None).await
}

/// An app on the in-process fixture model and the given store (`None`: the one the
/// configuration names).
pub(crate) async fn spawn_app_on(
    overrides: &[(&str, &str)],
    store: Option<Arc<dyn ThreadStore>>,
) -> TestApp {
    let model = Arc::new(FixtureModel::load());
    spawn(overrides, store, TestModel::Fixture(model)).await
}

/// An app on a model the test scripts itself (in process) and the given store.
pub(crate) async fn spawn_app_on_scripted(
    model: Arc<dyn ModelProvider>,
    overrides: &[(&str, &str)],
    store: Arc<dyn ThreadStore>,
) -> TestApp {
    spawn(overrides, Some(store), TestModel::Scripted(model)).await
}

/// An app whose model is aimock over HTTP: for the tests about the OpenAI wire format.
pub(crate) async fn spawn_wire_app() -> TestApp {
    spawn_wire_app_with(&[]).await
}

pub(crate) async fn spawn_wire_app_with(overrides: &[(&str, &str)]) -> TestApp {
    spawn(
        overrides,
        None,
        TestModel::Aimock(Box::new(Aimock::start().await)),
    )
    .await
}

/// An app whose model is aimock over HTTP, on the given store.
pub(crate) async fn spawn_wire_app_on(
    overrides: &[(&str, &str)],
    store: Arc<dyn ThreadStore>,
) -> TestApp {
    spawn(
        overrides,
        Some(store),
        TestModel::Aimock(Box::new(Aimock::start().await)),
    )
    .await
}

/// An app whose model is aimock over HTTP, with settings that name aimock's URL (another
/// provider's base URL): `vars` is given that URL.
pub(crate) async fn spawn_wire_app_at(
    vars: impl FnOnce(&str) -> Vec<(&'static str, String)>,
) -> TestApp {
    let aimock = Aimock::start().await;
    let vars = vars(&aimock.url);
    let overrides: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    spawn(&overrides, None, TestModel::Aimock(Box::new(aimock))).await
}

/// An app on the OpenAI-compatible server at `model_url`, the given store, `tools` and, when
/// given, an EMF metrics writer.
pub(crate) async fn spawn_app_on_model_url(
    model_url: &str,
    overrides: &[(&str, &str)],
    store: Arc<dyn ThreadStore>,
    tools: ToolRegistry,
    metrics: Option<agui_lambda::testing::telemetry::emf::Emf>,
) -> TestApp {
    let mut vars = vec![
        ("OPENAI_BASE_URL", model_url),
        ("OPENAI_API_KEY", "test-key"),
        ("MODEL_MAX_RETRIES", "0"),
    ];
    vars.extend_from_slice(overrides);
    spawn_full(
        &vars,
        Some(store),
        TestModel::Loopback,
        tools,
        None,
        metrics,
    )
    .await
}

/// An app on the in-process fixture model with `tools` (the built-ins plus a test's or an
/// example's own); the MCP servers `overrides` name are listed as at a cold start.
pub(crate) async fn spawn_app_with_tools(
    overrides: &[(&str, &str)],
    tools: ToolRegistry,
) -> TestApp {
    let model = Arc::new(FixtureModel::load());
    spawn_with_tools(overrides, None, TestModel::Fixture(model), tools).await
}

/// An app on the in-process fixture model, the given store and signed-URL uploads into `blobs`'
/// bucket (an S3-compatible server on loopback).
pub(crate) async fn spawn_app_with_blobs(
    overrides: &[(&str, &str)],
    store: Arc<dyn ThreadStore>,
    blobs: Blobs,
) -> TestApp {
    let model = Arc::new(FixtureModel::load());
    spawn_full(
        overrides,
        Some(store),
        TestModel::Fixture(model),
        ToolRegistry::with_builtins().unwrap(),
        Some(Arc::new(blobs)),
        None,
    )
    .await
}

/// An app on the in-process fixture model and the given store, writing its EMF records to
/// `metrics`.
pub(crate) async fn spawn_app_with_metrics(
    overrides: &[(&str, &str)],
    store: Arc<dyn ThreadStore>,
    metrics: agui_lambda::testing::telemetry::emf::Emf,
) -> TestApp {
    let model = Arc::new(FixtureModel::load());
    spawn_full(
        overrides,
        Some(store),
        TestModel::Fixture(model),
        ToolRegistry::with_builtins().unwrap(),
        None,
        Some(metrics),
    )
    .await
}

async fn spawn(
    overrides: &[(&str, &str)],
    store: Option<Arc<dyn ThreadStore>>,
    model: TestModel,
) -> TestApp {
    spawn_with_tools(
        overrides,
        store,
        model,
        ToolRegistry::with_builtins().unwrap(),
    )
    .await
}

async fn spawn_with_tools(
    overrides: &[(&str, &str)],
    store: Option<Arc<dyn ThreadStore>>,
    model: TestModel,
    tools: ToolRegistry,
) -> TestApp {
    spawn_full(overrides, store, model, tools, None, None).await
}

async fn spawn_full(
    overrides: &[(&str, &str)],
    store: Option<Arc<dyn ThreadStore>>,
    model: TestModel,
    tools: ToolRegistry,
    blobs: Option<Arc<Blobs>>,
    metrics: Option<agui_lambda::testing::telemetry::emf::Emf>,
) -> TestApp {
    let mut vars: HashMap<String, String> = HashMap::new();
    if let TestModel::Aimock(aimock) = &model {
        vars.extend(
            [
                ("OPENAI_BASE_URL", format!("{}/v1", aimock.url)),
                ("OPENAI_API_KEY", "test-key".to_owned()),
                ("AGENT_MODEL", "test-model".to_owned()),
                ("MODEL_MAX_RETRIES", "2".to_owned()),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
    }
    for (key, value) in overrides {
        vars.insert((*key).to_owned(), (*value).to_owned());
    }
    let config = Config::from_map(&vars).unwrap();
    // Over the wire, each AGENT_PROFILES profile gets its own model, as in production.
    let models: startup::Models = match &model {
        TestModel::Fixture(fixture) => {
            let fixture: Arc<dyn ModelProvider> = fixture.clone();
            fixture.into()
        }
        TestModel::Scripted(model) => model.clone().into(),
        TestModel::Aimock(_) | TestModel::Loopback => {
            startup::models_from_config(&config).await.unwrap()
        }
    };
    let store = match store {
        Some(store) => store,
        None => startup::store_from_config(&config).await.unwrap(),
    };
    let mut app = startup::AppBuilder::new(&config)
        .models(models)
        .store(store)
        .tools(tools);
    if let Some(blobs) = blobs {
        app = app.blobs(blobs);
    }
    if let Some(metrics) = metrics {
        app = app.metrics(metrics);
    }
    let app = app.build().await.unwrap();
    let (addr, server) =
        agui_lambda::testing::api::bind(Arc::new(app), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
    TestApp {
        addr,
        model,
        http: reqwest::Client::new(),
        _server: server,
    }
}

impl TestApp {
    /// aimock, for a wire test.
    pub(crate) fn aimock(&self) -> &Aimock {
        match &self.model {
            TestModel::Aimock(aimock) => aimock,
            TestModel::Fixture(_) | TestModel::Loopback | TestModel::Scripted(_) => {
                panic!("a wire test: start the app with spawn_wire_app")
            }
        }
    }

    /// How many model requests were made in all.
    pub(crate) async fn model_requests(&self) -> usize {
        match &self.model {
            TestModel::Fixture(fixture) => fixture.requests().len(),
            TestModel::Aimock(aimock) => aimock.journal().await.len(),
            TestModel::Loopback | TestModel::Scripted(_) => {
                panic!("the test's own model counts its requests")
            }
        }
    }

    /// The in-process model's requests, for tests that check what the model was asked.
    pub(crate) fn fixture_requests_about(&self, user_text: &str) -> Vec<ModelRequest> {
        match &self.model {
            TestModel::Fixture(fixture) => fixture.requests_about(user_text),
            TestModel::Aimock(_) | TestModel::Loopback | TestModel::Scripted(_) => {
                panic!("fixture_requests_about needs the fixture model")
            }
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub(crate) async fn post_raw(
        &self,
        path: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> Reply {
        let response = self
            .http
            .post(self.url(path))
            .header("content-type", content_type)
            .header("accept", "text/event-stream")
            .body(body)
            .send()
            .await
            .unwrap();
        into_reply(response).await
    }

    pub(crate) async fn run(&self, body: &Value) -> Reply {
        self.post_raw("/agent", "application/json", body.to_string())
            .await
    }

    pub(crate) async fn get(&self, path: &str) -> Reply {
        into_reply(self.http.get(self.url(path)).send().await.unwrap()).await
    }
}

async fn into_reply(response: reqwest::Response) -> Reply {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    Reply {
        status,
        content_type,
        body: response.text().await.unwrap(),
    }
}

pub(crate) fn frontend_tools() -> Value {
    json!([
        {"name": "search_local_files", "description": "Search the user's local files",
         "parameters": {"type": "object", "properties": {"keyword": {"type": "string"}}}},
        {"name": "confirmAction", "description": "Ask the user to confirm",
         "parameters": {"type": "object", "properties": {"action": {"type": "string"}, "count": {"type": "number"}}, "required": ["action"]}}
    ])
}

pub(crate) fn run_input(thread: &str, run: &str, messages: Value) -> Value {
    json!({"threadId": thread, "runId": run, "state": {}, "messages": messages, "tools": frontend_tools(), "context": [], "forwardedProps": {}})
}

pub(crate) fn new_thread() -> String {
    uuid::Uuid::new_v4().to_string()
}

pub(crate) fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

pub(crate) fn text_of(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect()
}

/// The assistant message a client builds from a run's events: its text and tool calls.
pub(crate) fn assistant_from(events: &[Value]) -> Value {
    let start = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap();
    let id = start["parentMessageId"].clone();
    let calls: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_START")
        .map(|s| {
            let args: String = events
                .iter()
                .filter(|e| e["type"] == "TOOL_CALL_ARGS" && e["toolCallId"] == s["toolCallId"])
                .map(|e| e["delta"].as_str().unwrap())
                .collect();
            json!({"id": s["toolCallId"], "type": "function", "function": {"name": s["toolCallName"], "arguments": args}})
        })
        .collect();
    let text = text_of(events);
    let mut message = json!({"id": id, "role": "assistant", "toolCalls": calls});
    if !text.is_empty() {
        message["content"] = json!(text);
    }
    message
}

/// A response to a call as some principal: status, headers and body.
pub(crate) struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Answer {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.body))
    }

    pub(crate) fn error_code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap().to_owned()
    }

    /// A refusal's message (on the v1 agent API's routes, the contract's wording).
    pub(crate) fn message(&self) -> String {
        self.json()["error"]["message"].as_str().unwrap().to_owned()
    }
}

/// `method path` with `key` as the bearer API key and an optional JSON body.
pub(crate) async fn call(
    app: &TestApp,
    key: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Answer {
    call_raw(app, key, method, path, body.map(|body| body.to_string())).await
}

/// [`call`] with the body as raw text (broken or oversized JSON).
pub(crate) async fn call_raw(
    app: &TestApp,
    key: &str,
    method: &str,
    path: &str,
    body: Option<String>,
) -> Answer {
    let mut request = app
        .http
        .request(method.parse().unwrap(), app.url(path))
        .bearer_auth(key);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body);
    }
    let response = request.send().await.unwrap();
    Answer {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.text().await.unwrap(),
    }
}

/// A free loopback port.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `command` (a shell command line) in the background under a watchdog shell that stops
/// it as soon as the test process is gone: a server for the whole test binary.
pub(crate) fn spawn_watched(command: &str) {
    let script = format!(
        "{command} >/dev/null 2>&1 & C=$!; \
         while kill -0 {parent} 2>/dev/null && kill -0 $C 2>/dev/null; do sleep 0.5; done; kill $C 2>/dev/null",
        parent = std::process::id(),
    );
    let mut watchdog = std::process::Command::new("sh")
        .args(["-c", &script])
        .stdin(std::process::Stdio::null())
        .spawn()
        .expect("sh starts");
    // Reaped in the background: it lives as long as the tests do.
    std::thread::spawn(move || watchdog.wait());
}
