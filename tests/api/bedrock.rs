//! `MODEL_PROVIDER=bedrock` end to end: the real handler, the real `aws-sdk-bedrockruntime`
//! client (SigV4, HTTP, event-stream decoding) configured exactly as production configures it,
//! pointed at loopback.
//!
//! Two model servers:
//! - `@copilotkit/aimock`'s `/model/{id}/converse-stream`, with the same fixtures as the OpenAI
//!   tests, for the shared scenarios. aimock opens every text block with
//!   `contentBlockStart {"start": {}}`, which real Bedrock never sends and the SDK rejects
//!   ("Union did not contain a valid variant"); [`AimockTextStarts`] drops exactly those frames
//!   from the response so aimock streams what Bedrock streams. aimock's journal holds the
//!   request converted to OpenAI's shape, so [`Recorder`] keeps the Converse JSON the SDK sent.
//! - A replay server serving the event-stream frames of `tests/fixtures/bedrock/` (Bedrock's
//!   own framing: no start event for text, `p` padding, exceptions as exception frames) for the
//!   text path and the stop reasons and exceptions aimock cannot produce.
#![cfg(feature = "bedrock")]

use crate::helpers::*;
use agui_lambda::testing::config::{Config, ModelChoice};
use agui_lambda::testing::model::bedrock::{
    self, BedrockProvider, BedrockSettings, CachePoints, ClientSettings,
};
use agui_lambda::testing::startup;
use agui_lambda::testing::store::MemoryStore;
use aws_sdk_bedrockruntime::config::interceptors::{
    BeforeDeserializationInterceptorContextMut, BeforeTransmitInterceptorContextRef,
};
use aws_sdk_bedrockruntime::config::{
    ConfigBag, Credentials, Intercept, Region, RuntimeComponents,
};
use aws_sdk_bedrockruntime::error::BoxError;
use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder, write_message_to};
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MODEL_ID: &str = "us.anthropic.claude-sonnet-4-20250514-v1:0";

/// The Converse request bodies the SDK sent, with their paths.
#[derive(Debug, Default, Clone)]
struct Recorder(Arc<Mutex<Vec<(String, Value)>>>);

impl Intercept for Recorder {
    fn name(&self) -> &'static str {
        "test request recorder"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request();
        let body = request
            .body()
            .bytes()
            .and_then(|bytes| serde_json::from_slice(bytes).ok())
            .unwrap_or(Value::Null);
        self.0
            .lock()
            .unwrap()
            .push((request.uri().to_owned(), body));
        Ok(())
    }
}

impl Recorder {
    fn about(&self, user_text: &str) -> Vec<(String, Value)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, body)| body["messages"].to_string().contains(user_text))
            .cloned()
            .collect()
    }
}

/// Drops aimock's `contentBlockStart` frames with an empty `start` (see the module doc) and
/// passes every other byte through as it arrives, errors and cut-offs included.
#[derive(Debug)]
struct AimockTextStarts;

impl Intercept for AimockTextStarts {
    fn name(&self) -> &'static str {
        "aimock text-block starts removed"
    }

    fn modify_before_deserialization(
        &self,
        context: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let response = context.response_mut();
        if response.status().as_u16() != 200 {
            return Ok(());
        }
        let mut body = response.take_body();
        let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(16);
        tokio::spawn(async move {
            let mut decoder = MessageFrameDecoder::new();
            let mut buffer = BytesMut::new();
            loop {
                match body.frame().await {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            buffer.extend_from_slice(&data);
                        }
                    }
                    Some(Err(err)) => {
                        let _ = sender.send(Err(std::io::Error::other(err))).await;
                        return;
                    }
                    None => {
                        if !buffer.is_empty() {
                            let _ = sender.send(Ok(buffer.split().freeze())).await;
                        }
                        return;
                    }
                }
                while let Ok(DecodedFrame::Complete(message)) = decoder.decode_frame(&mut buffer) {
                    if is_empty_block_start(&message) {
                        continue;
                    }
                    let mut out = Vec::new();
                    write_message_to(&message, &mut out).unwrap();
                    if sender.send(Ok(Bytes::from(out))).await.is_err() {
                        return;
                    }
                }
            }
        });
        *response.body_mut() = SdkBody::from_body_1_x(ChannelBody(receiver));
        Ok(())
    }
}

fn is_empty_block_start(message: &Message) -> bool {
    let event_type = message
        .headers()
        .iter()
        .find(|h| h.name().as_str() == ":event-type")
        .and_then(|h| h.value().as_string().ok().map(|s| s.as_str().to_owned()));
    event_type.as_deref() == Some("contentBlockStart")
        && serde_json::from_slice::<Value>(message.payload())
            .is_ok_and(|payload| payload["start"] == json!({}))
}

struct ChannelBody(tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|item| item.map(|result| result.map(http_body::Frame::data)))
    }
}

/// The app with `MODEL_PROVIDER=bedrock`, its Bedrock client built by the production builder
/// and pointed at `endpoint`.
struct BedrockApp {
    addr: SocketAddr,
    http: reqwest::Client,
    sent: Recorder,
    _server: tokio::task::JoinHandle<()>,
}

async fn spawn_bedrock_app(endpoint: &str, aimock_fix: bool) -> BedrockApp {
    spawn_bedrock_app_with(endpoint, aimock_fix, &[]).await
}

/// [`spawn_bedrock_app`] with settings added or overridden.
async fn spawn_bedrock_app_with(
    endpoint: &str,
    aimock_fix: bool,
    overrides: &[(&str, &str)],
) -> BedrockApp {
    let vars: HashMap<String, String> = [
        ("MODEL_PROVIDER", "bedrock"),
        ("AGENT_MODEL", MODEL_ID),
        ("MODEL_MAX_RETRIES", "2"),
        ("BEDROCK_MAX_TOKENS", "1024"),
    ]
    .iter()
    .chain(overrides)
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    let config = Config::from_map(&vars).unwrap();
    assert_eq!(config.model.provider, ModelChoice::Bedrock);
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("AKIDTEST", "secret", None, None, "tests"))
        .endpoint_url(endpoint)
        .load()
        .await;
    let sent = Recorder::default();
    let mut client_config = bedrock::client_config(
        &sdk,
        &ClientSettings {
            connect_timeout: config.model.connect_timeout,
        },
    )
    .interceptor(sent.clone());
    if aimock_fix {
        client_config = client_config.interceptor(AimockTextStarts);
    }
    let model = Arc::new(BedrockProvider::new(
        aws_sdk_bedrockruntime::Client::from_conf(client_config.build()),
        BedrockSettings {
            model_id: config.model.name.clone(),
            max_tokens: config.model.bedrock_max_tokens,
            reasoning_budget_tokens: config.model.bedrock_reasoning_budget_tokens,
            cache_points: match config.context.prompt_cache {
                agui_lambda::testing::config::PromptCache::Auto => {
                    CachePoints::for_model(&config.model.name)
                }
                agui_lambda::testing::config::PromptCache::Off => CachePoints::Off,
            },
        },
    ));
    let app = startup::AppBuilder::new(&config)
        .model(startup::with_retry_policy(&config, model))
        .store(Arc::new(MemoryStore::new()))
        .build()
        .await
        .unwrap();
    let (addr, server) =
        agui_lambda::testing::api::bind(Arc::new(app), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
    BedrockApp {
        addr,
        http: reqwest::Client::new(),
        sent,
        _server: server,
    }
}

impl BedrockApp {
    async fn run(&self, body: &Value) -> Reply {
        let response = self
            .http
            .post(format!("http://{}/agent", self.addr))
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        reply(response).await
    }

    async fn get(&self, path: &str) -> Reply {
        reply(
            self.http
                .get(format!("http://{}{path}", self.addr))
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    async fn ask(&self, text: &str) -> Vec<Value> {
        self.run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": text}]),
        ))
        .await
        .events()
    }
}

async fn reply(response: reqwest::Response) -> Reply {
    Reply {
        status: response.status().as_u16(),
        content_type: response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default(),
        body: response.text().await.unwrap(),
    }
}

/// aimock and an app on it.
async fn on_aimock() -> (Aimock, BedrockApp) {
    let aimock = Aimock::start().await;
    // aimock's Converse emulation reads text, tool and image blocks only: a `cachePoint` block
    // (which Bedrock takes, see the replay tests) leaves it with an empty answer.
    let app = spawn_bedrock_app_with(&aimock.url, true, &[("PROMPT_CACHE", "off")]).await;
    (aimock, app)
}

fn tool_names(body: &Value) -> Vec<&str> {
    body["toolConfig"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["toolSpec"]["name"].as_str().unwrap())
        .collect()
}

fn roles(body: &Value) -> Vec<&str> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect()
}

fn last(events: &[Value]) -> &Value {
    events.last().unwrap()
}

#[tokio::test]
async fn wire_bedrock_plain_chat_on_aimock() {
    let (aimock, app) = on_aimock().await;
    let events = app.ask("hello").await;
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    assert_eq!(last(&events)["type"], "RUN_FINISHED");
    let sent = app.sent.about("hello");
    assert_eq!(sent.len(), 1);
    let (uri, body) = &sent[0];
    assert!(uri.ends_with(&format!(
        "/model/{}/converse-stream",
        MODEL_ID.replace(':', "%3A")
    )));
    assert!(
        body["system"][0]["text"].is_string(),
        "system prompt as a system block"
    );
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"text": "hello"}]}])
    );
    assert_eq!(body["inferenceConfig"]["maxTokens"], 1024);
    assert_eq!(
        tool_names(body),
        ["get_current_time", "search_local_files", "confirmAction"]
    );
    assert_eq!(
        body["toolConfig"]["tools"][1]["toolSpec"]["inputSchema"]["json"],
        json!({"type": "object", "properties": {"keyword": {"type": "string"}}})
    );
    assert_eq!(aimock.requests_about("hello").await.len(), 1);
}

#[tokio::test]
async fn wire_bedrock_server_tool_round_trip_on_aimock() {
    let (aimock, app) = on_aimock().await;
    let events = app.ask("what time is it").await;
    let kinds = types(&events);
    let start = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap();
    assert_eq!(start["toolCallName"], "get_current_time");
    let args: String = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_ARGS")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({"timezone": "Europe/Paris"})
    );
    let result_at = kinds.iter().position(|t| *t == "TOOL_CALL_RESULT").unwrap();
    assert!(kinds[..result_at].contains(&"TOOL_CALL_END"));
    let result: Value =
        serde_json::from_str(events[result_at]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["timezone"], "Europe/Paris");
    assert_eq!(
        text_of(&events),
        "Let me check the time.It is now the time shown in Paris."
    );
    assert_eq!(last(&events)["type"], "RUN_FINISHED");

    // What Bedrock received on the second turn: the call as a toolUse block, its result as a
    // toolResult block in the following user message, and the toolConfig.
    let sent = app.sent.about("what time is it");
    assert_eq!(sent.len(), 2);
    let second = &sent[1].1;
    assert_eq!(roles(second), ["user", "assistant", "user"]);
    let assistant = &second["messages"][1]["content"];
    assert_eq!(assistant[0]["text"], "Let me check the time.");
    assert_eq!(assistant[1]["toolUse"]["toolUseId"], "call_time_1");
    assert_eq!(assistant[1]["toolUse"]["name"], "get_current_time");
    assert_eq!(
        assistant[1]["toolUse"]["input"],
        json!({"timezone": "Europe/Paris"})
    );
    let tool_result = &second["messages"][2]["content"][0]["toolResult"];
    assert_eq!(tool_result["toolUseId"], "call_time_1");
    assert!(
        tool_result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Europe/Paris")
    );
    assert!(second["toolConfig"]["tools"].is_array());
    // aimock saw the same thing (in its OpenAI-shaped journal).
    let journal = aimock.requests_about("what time is it").await;
    assert_eq!(journal.len(), 2);
    assert!(
        journal[1]["path"]
            .as_str()
            .unwrap()
            .ends_with("/converse-stream")
    );
    let tool_message = journal[1]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(tool_message["tool_call_id"], "call_time_1");
}

/// The frontend round trip: the run ends right after TOOL_CALL_END; the client posts the whole
/// history with its result, which reaches Bedrock as a toolResult block.
async fn frontend_round_trip(user_text: &str, tool: &str, args: Value, answer: &str, reply: &str) {
    let (_aimock, app) = on_aimock().await;
    let thread = new_thread();
    let user = json!({"id": "u1", "role": "user", "content": user_text});
    let first = app
        .run(&run_input(&thread, "run_a", json!([user.clone()])))
        .await
        .events();
    let kinds = types(&first);
    assert_eq!(
        &kinds[kinds.len() - 3..],
        ["STEP_FINISHED", "TOOL_CALL_END", "RUN_FINISHED"]
    );
    assert!(!kinds.contains(&"TOOL_CALL_RESULT"));
    let assistant = assistant_from(&first);
    assert_eq!(assistant["toolCalls"][0]["function"]["name"], tool);
    let sent_args: Value = serde_json::from_str(
        assistant["toolCalls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(sent_args, args);
    let call_id = assistant["toolCalls"][0]["id"].clone();
    let result = json!({"id": "t1", "role": "tool", "toolCallId": call_id, "content": answer});
    let second = app
        .run(&run_input(
            &thread,
            "run_b",
            json!([user, assistant, result]),
        ))
        .await
        .events();
    assert_eq!(text_of(&second), reply);

    let sent = app.sent.about(user_text);
    assert_eq!(sent.len(), 2);
    let body = &sent[1].1;
    assert_eq!(roles(body), ["user", "assistant", "user"]);
    let tool_result = &body["messages"][2]["content"][0]["toolResult"];
    assert_eq!(tool_result["toolUseId"], call_id);
    assert_eq!(tool_result["content"][0]["text"], answer);
    assert!(tool_names(body).contains(&tool));

    let history = app.get(&format!("/threads/{thread}")).await.json();
    let stored: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(stored, ["user", "assistant", "tool", "assistant"]);
}

#[tokio::test]
async fn wire_bedrock_frontend_tool_round_trip_on_aimock() {
    frontend_round_trip(
        "search my local files",
        "search_local_files",
        json!({"keyword": "report"}),
        r#"["annual-report.pdf"]"#,
        "I found 2 files: annual-report.pdf and q3-report.docx.",
    )
    .await;
}

#[tokio::test]
async fn wire_bedrock_human_in_the_loop_on_aimock() {
    frontend_round_trip(
        "delete the temporary files",
        "confirmAction",
        json!({"action": "delete temporary files", "count": 15}),
        "confirmed",
        "Deleted 15 temporary files.",
    )
    .await;
}

#[tokio::test]
async fn wire_bedrock_parallel_server_and_frontend_calls_on_aimock() {
    let (_aimock, app) = on_aimock().await;
    let events = app.ask("time and files").await;
    let starts: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_START")
        .map(|e| e["toolCallName"].as_str().unwrap())
        .collect();
    assert_eq!(starts, ["get_current_time", "search_local_files"]);
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT")
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["toolCallId"], "call_par_1");
    assert_eq!(last(&events)["type"], "RUN_FINISHED");
    assert_eq!(app.sent.about("time and files").len(), 1);
}

#[tokio::test]
async fn wire_bedrock_reasoning_on_aimock() {
    let (_aimock, app) = on_aimock().await;
    let events = app.ask("think step by step").await;
    let reasoning: String = events
        .iter()
        .filter(|e| e["type"] == "REASONING_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, "First I consider the question.");
    assert_eq!(text_of(&events), "The answer is 42.");
}

#[tokio::test]
async fn wire_bedrock_throttling_is_retried_then_reported_on_aimock() {
    let (aimock, app) = on_aimock().await;
    let thread = new_thread();
    let events = app
        .run(&run_input(
            &thread,
            "r",
            json!([{"id": "u1", "role": "user", "content": "rate limit me"}]),
        ))
        .await
        .events();
    assert_eq!(last(&events)["type"], "RUN_ERROR");
    assert_eq!(last(&events)["code"], "MODEL_RATE_LIMITED");
    assert!(last(&events)["message"].as_str().unwrap().contains("429"));
    assert_eq!(aimock.requests_about("rate limit me").await.len(), 3);
    let history = app.get(&format!("/threads/{thread}")).await.json();
    assert_eq!(history["messages"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn wire_bedrock_a_transient_429_is_retried_transparently_on_aimock() {
    let (aimock, app) = on_aimock().await;
    let events = app.ask("flaky once").await;
    assert_eq!(text_of(&events), "Recovered after a retry.");
    let statuses: Vec<u64> = aimock
        .requests_about("flaky once")
        .await
        .iter()
        .map(|e| e["response"]["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [429, 200]);
}

#[tokio::test]
async fn wire_bedrock_a_server_error_is_retried_then_reported_on_aimock() {
    let (aimock, app) = on_aimock().await;
    let events = app.ask("server error please").await;
    assert_eq!(last(&events)["code"], "MODEL_UNAVAILABLE");
    assert_eq!(aimock.requests_about("server error please").await.len(), 3);
}

#[tokio::test]
async fn wire_bedrock_a_connection_dropped_mid_stream_is_a_model_error_on_aimock() {
    let (aimock, app) = on_aimock().await;
    let thread = new_thread();
    let events = app
        .run(&run_input(
            &thread,
            "r",
            json!([{"id": "u1", "role": "user", "content": "drop the connection"}]),
        ))
        .await
        .events();
    assert_eq!(last(&events)["type"], "RUN_ERROR");
    assert_eq!(last(&events)["code"], "MODEL_ERROR");
    assert_eq!(
        aimock.requests_about("drop the connection").await.len(),
        1,
        "never retried after output was streamed"
    );
    let history = app.get(&format!("/threads/{thread}")).await.json();
    assert_eq!(history["messages"].as_array().unwrap().len(), 1);
}

// ---- Replayed Bedrock frames -------------------------------------------------------------

/// A loopback server answering `converse-stream` with the frames of the fixture whose key the
/// last user message with text contains; a fixture with several responses answers requests in
/// turn.
struct Replay {
    url: String,
    _task: tokio::task::JoinHandle<()>,
}

fn encode(events: &[Value]) -> Bytes {
    let mut out = Vec::new();
    for event in events {
        let payload = Bytes::from(event["payload"].to_string());
        let message = match event["message-type"].as_str().unwrap() {
            "event" => Message::new(payload)
                .add_header(Header::new(
                    ":message-type",
                    HeaderValue::String("event".into()),
                ))
                .add_header(Header::new(
                    ":event-type",
                    HeaderValue::String(event["event-type"].as_str().unwrap().to_owned().into()),
                ))
                .add_header(Header::new(
                    ":content-type",
                    HeaderValue::String("application/json".into()),
                )),
            _ => Message::new(payload)
                .add_header(Header::new(
                    ":message-type",
                    HeaderValue::String("exception".into()),
                ))
                .add_header(Header::new(
                    ":exception-type",
                    HeaderValue::String(
                        event["exception-type"].as_str().unwrap().to_owned().into(),
                    ),
                ))
                .add_header(Header::new(
                    ":content-type",
                    HeaderValue::String("application/json".into()),
                )),
        };
        write_message_to(&message, &mut out).unwrap();
    }
    Bytes::from(out)
}

impl Replay {
    async fn start() -> Self {
        let fixtures: Value = serde_json::from_str(
            &std::fs::read_to_string(repo_path("tests/fixtures/bedrock/converse-stream.json"))
                .unwrap(),
        )
        .unwrap();
        let served: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let fixtures = fixtures.clone();
                let served = served.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |request: http::Request<hyper::body::Incoming>| {
                            let fixtures = fixtures.clone();
                            let served = served.clone();
                            async move {
                                let body = request.into_body().collect().await.unwrap().to_bytes();
                                let body: Value = serde_json::from_slice(&body).unwrap();
                                let messages = body["messages"].as_array().unwrap();
                                // The question, also after a tool round (whose user message
                                // holds only tool results).
                                let last_user = messages
                                    .iter()
                                    .rev()
                                    .find(|m| {
                                        m["role"] == "user"
                                            && m["content"].as_array().is_some_and(|blocks| {
                                                blocks.iter().any(|b| b.get("text").is_some())
                                            })
                                    })
                                    .unwrap()["content"]
                                    .to_string();
                                let (key, responses) = fixtures
                                    .as_object()
                                    .unwrap()
                                    .iter()
                                    .find(|(key, _)| last_user.contains(key.as_str()))
                                    .unwrap_or_else(|| panic!("no replay fixture for {last_user}"));
                                let responses = responses.as_array().unwrap();
                                let turn = {
                                    let mut served = served.lock().unwrap();
                                    let count = served.entry(key.clone()).or_default();
                                    *count += 1;
                                    (*count - 1).min(responses.len() - 1)
                                };
                                let frames = encode(responses[turn].as_array().unwrap());
                                Ok::<_, std::convert::Infallible>(
                                    http::Response::builder()
                                        .header(
                                            "content-type",
                                            "application/vnd.amazon.eventstream",
                                        )
                                        .header("x-amzn-requestid", "replay")
                                        .body(http_body_util::Full::new(frames))
                                        .unwrap(),
                                )
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(socket), service)
                        .await;
                });
            }
        });
        Self { url, _task: task }
    }
}

async fn on_replay() -> (Replay, BedrockApp) {
    let replay = Replay::start().await;
    let app = spawn_bedrock_app(&replay.url, false).await;
    (replay, app)
}

#[tokio::test]
async fn bedrock_text_streams_from_replayed_bedrock_frames() {
    let (_replay, app) = on_replay().await;
    let thread = new_thread();
    let events = app
        .run(&run_input(
            &thread,
            "r",
            json!([{"id": "u1", "role": "user", "content": "hello"}]),
        ))
        .await
        .events();
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    assert!(
        events
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
            .count()
            > 1,
        "text arrives in pieces"
    );
    assert_eq!(last(&events)["type"], "RUN_FINISHED");
    let history = app.get(&format!("/threads/{thread}")).await.json();
    assert_eq!(
        history["messages"][1]["content"],
        "Hello! How can I help you today?"
    );
}

#[tokio::test]
async fn bedrock_reasoning_from_replayed_frames() {
    let (_replay, app) = on_replay().await;
    let events = app.ask("think step by step").await;
    let reasoning: String = events
        .iter()
        .filter(|e| e["type"] == "REASONING_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, "First I consider the question.");
    assert_eq!(text_of(&events), "The answer is 42.");
    let kinds = types(&events);
    assert!(
        kinds.iter().position(|t| *t == "REASONING_END")
            < kinds.iter().position(|t| *t == "TEXT_MESSAGE_START")
    );
}

#[tokio::test]
async fn bedrock_a_mid_stream_exception_is_a_model_error_and_nothing_is_stored() {
    let (_replay, app) = on_replay().await;
    let thread = new_thread();
    let events = app
        .run(&run_input(
            &thread,
            "r",
            json!([{"id": "u1", "role": "user", "content": "stream exception"}]),
        ))
        .await
        .events();
    assert_eq!(text_of(&events), "Partial ans");
    let end = last(&events);
    assert_eq!(end["type"], "RUN_ERROR");
    assert_eq!(end["code"], "MODEL_UNAVAILABLE");
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("ModelStreamErrorException")
    );
    assert_eq!(
        app.sent.about("stream exception").len(),
        1,
        "not retried after output"
    );
    let history = app.get(&format!("/threads/{thread}")).await.json();
    let roles: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user"], "the broken turn is not stored");
}

#[tokio::test]
async fn bedrock_a_throttling_exception_before_any_output_is_retried() {
    let (_replay, app) = on_replay().await;
    let events = app.ask("throttled once").await;
    assert_eq!(text_of(&events), "Recovered after a retry.");
    assert_eq!(last(&events)["type"], "RUN_FINISHED");
    assert_eq!(app.sent.about("throttled once").len(), 2);
}

#[tokio::test]
async fn bedrock_a_guardrail_stop_is_a_clear_model_error() {
    let (_replay, app) = on_replay().await;
    let events = app.ask("guardrail please").await;
    let end = last(&events);
    assert_eq!(end["type"], "RUN_ERROR");
    assert_eq!(end["code"], "MODEL_ERROR");
    assert!(end["message"].as_str().unwrap().contains("guardrail"));
}

#[tokio::test]
async fn bedrock_max_tokens_keeps_the_truncated_text() {
    let (_replay, app) = on_replay().await;
    let events = app.ask("long answer please").await;
    assert_eq!(text_of(&events), "This answer stops at the token li");
    assert_eq!(last(&events)["type"], "RUN_FINISHED");
}

#[tokio::test]
async fn bedrock_a_stream_without_message_stop_is_a_model_error() {
    let (_replay, app) = on_replay().await;
    let events = app.ask("cut off").await;
    assert_eq!(last(&events)["code"], "MODEL_ERROR");
    assert!(
        last(&events)["message"]
            .as_str()
            .unwrap()
            .contains("ended before")
    );
}

#[tokio::test]
async fn bedrock_is_built_from_the_configuration() {
    let config = Config::from_map(
        &[("MODEL_PROVIDER", "bedrock"), ("AGENT_MODEL", MODEL_ID)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    )
    .unwrap();
    let model = tokio::time::timeout(Duration::from_secs(20), startup::model_from_config(&config))
        .await
        .unwrap()
        .unwrap();
    assert!(model.describe().contains(MODEL_ID));
}

// ---- Extended thinking, attachments and sampling options ---------------------------------

const SIGNATURE: &str = "EqoBCkgIBhABGAIiQLfTeStSignatureOverTheThinkingBlock0123456789+/==";
const REDACTED: &str = "RXJUcmVkYWN0ZWRUaGlua2luZ0J5dGVz";

async fn on_replay_with(overrides: &[(&str, &str)]) -> (Replay, BedrockApp) {
    let replay = Replay::start().await;
    let app = spawn_bedrock_app_with(&replay.url, false, overrides).await;
    (replay, app)
}

fn v1_input(thread: &str, run: &str, messages: Value) -> Value {
    let mut input = run_input(thread, run, messages);
    input["protocolVersion"] = json!("1.0");
    input
}

#[tokio::test]
async fn bedrock_thinking_with_a_tool_call_sends_the_signed_reasoning_back() {
    let (_replay, app) = on_replay_with(&[("BEDROCK_REASONING_BUDGET_TOKENS", "2048")]).await;
    let thread = new_thread();
    let question = "think then check the time";
    let events = app
        .run(&v1_input(
            &thread,
            "r",
            json!([{"id": "u1", "role": "user", "content": question}]),
        ))
        .await
        .events();

    // Each reasoning block is one reasoning message; its artefact goes to the client on it.
    let starts: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "REASONING_START")
        .map(|e| &e["messageId"])
        .collect();
    let values: Vec<(&Value, &str)> = events
        .iter()
        .filter(|e| e["type"] == "REASONING_ENCRYPTED_VALUE")
        .map(|e| {
            assert_eq!(e["subtype"], "message");
            (&e["entityId"], e["encryptedValue"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        values,
        [
            (starts[0], format!("signature:{SIGNATURE}").as_str()),
            (starts[1], format!("redacted:{REDACTED}").as_str()),
        ]
    );
    let result = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap();
    assert_eq!(result["toolCallId"], "tooluse_clock_1");
    assert_eq!(text_of(&events), "It is noon in UTC.");
    let end = last(&events);
    assert_eq!(end["type"], "RUN_FINISHED");
    // Usage as Bedrock reported it over both turns, cache reads and writes in the input total.
    assert_eq!(end["usage"][0]["provider"], "bedrock");
    assert_eq!(end["usage"][0]["inputTokens"], 20 + 1000 + 500 + 40 + 1500);
    assert_eq!(end["usage"][0]["outputTokens"], 60 + 8);
    assert_eq!(end["usage"][0]["cachedInputTokens"], 1000 + 1500);

    let sent = app.sent.about(question);
    assert_eq!(sent.len(), 2);
    let first = &sent[0].1;
    assert_eq!(
        first["additionalModelRequestFields"],
        json!({"thinking": {"type": "enabled", "budget_tokens": 2048}})
    );
    assert_eq!(first["inferenceConfig"]["maxTokens"], 2048 + 1024);
    // The second request: the turn's reasoning blocks, signature and redacted bytes as
    // received, open the assistant message that made the call.
    let second = &sent[1].1;
    assert_eq!(roles(second), ["user", "assistant", "user"]);
    let assistant = &second["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"reasoningContent": {"reasoningText": {
            "text": "The user wants the time. I will ask the clock.",
            "signature": SIGNATURE,
        }}})
    );
    assert_eq!(
        assistant[1],
        json!({"reasoningContent": {"redactedContent": REDACTED}})
    );
    assert_eq!(assistant[2]["toolUse"]["toolUseId"], "tooluse_clock_1");
    assert_eq!(
        second["messages"][2]["content"][0]["toolResult"]["toolUseId"],
        "tooluse_clock_1"
    );

    // Stored and shown in the history in AG-UI's reasoning message shape.
    let history = app.get(&format!("/threads/{thread}")).await.json();
    let messages = history["messages"].as_array().unwrap();
    let stored: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        stored,
        [
            "user",
            "reasoning",
            "reasoning",
            "assistant",
            "tool",
            "assistant"
        ]
    );
    assert_eq!(
        messages[1],
        json!({"id": starts[0], "role": "reasoning",
               "content": "The user wants the time. I will ask the clock.",
               "encryptedValue": format!("signature:{SIGNATURE}")})
    );
    assert_eq!(
        messages[2]["encryptedValue"],
        format!("redacted:{REDACTED}")
    );
}

#[tokio::test]
async fn bedrock_reasoning_a_client_sends_back_reaches_the_request() {
    let (_replay, app) = on_replay_with(&[("BEDROCK_REASONING_BUDGET_TOKENS", "2048")]).await;
    // A client that keeps its own history, on a thread this server has never seen.
    let events = app
        .run(&v1_input(
            &new_thread(),
            "r",
            json!([
                {"id": "u1", "role": "user", "content": "recall the signed thought"},
                {"id": "r1", "role": "reasoning", "content": "Ask the clock.", "encryptedValue": "signature:client-sig"},
                {"id": "r2", "role": "reasoning", "content": "", "encryptedValue": "redacted:AAEC"},
                {"id": "r3", "role": "reasoning", "content": "Unsigned, not sent."},
                {"id": "a1", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "get_current_time", "arguments": "{}"}}]},
                {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "noon"},
            ]),
        ))
        .await
        .events();
    assert_eq!(text_of(&events), "The clock said noon.");
    let sent = app.sent.about("recall the signed thought");
    let assistant = &sent[0].1["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"reasoningContent": {"reasoningText": {"text": "Ask the clock.", "signature": "client-sig"}}})
    );
    assert_eq!(
        assistant[1],
        json!({"reasoningContent": {"redactedContent": "AAEC"}})
    );
    assert_eq!(assistant[2]["toolUse"]["toolUseId"], "c1");
    assert_eq!(assistant.as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn bedrock_without_thinking_sends_no_reasoning_back() {
    let (_replay, app) = on_replay().await;
    app.run(&run_input(
        &new_thread(),
        "r",
        json!([
            {"id": "u1", "role": "user", "content": "recall the signed thought"},
            {"id": "r1", "role": "reasoning", "content": "Ask the clock.", "encryptedValue": "signature:client-sig"},
            {"id": "a1", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "get_current_time", "arguments": "{}"}}]},
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "noon"},
        ]),
    ))
    .await
    .events();
    let body = &app.sent.about("recall the signed thought")[0].1;
    assert!(body.get("additionalModelRequestFields").is_none());
    let assistant = &body["messages"][1]["content"];
    assert_eq!(assistant.as_array().unwrap().len(), 1);
    assert!(assistant[0]["toolUse"].is_object());
}

#[tokio::test]
async fn bedrock_sampling_options_become_the_inference_config_capped_by_the_server() {
    let (_replay, app) = on_replay_with(&[("MAX_OUTPUT_TOKENS", "150")]).await;
    let mut input = run_input(
        &new_thread(),
        "r",
        json!([{"id": "u1", "role": "user", "content": "hello"}]),
    );
    input["forwardedProps"] =
        json!({"temperature": 0.5, "top_p": 0.75, "max_tokens": 200, "stop": ["END"], "seed": 5});
    app.run(&input).await.events();
    let body = &app.sent.about("hello")[0].1;
    assert_eq!(
        body["inferenceConfig"],
        json!({"maxTokens": 150, "temperature": 0.5, "topP": 0.75, "stopSequences": ["END"]})
    );
    assert!(!body.to_string().contains("seed"), "Bedrock has no seed");

    input["forwardedProps"] = json!({"top_p": 1.5});
    let refused = app.run(&input).await;
    assert_eq!(refused.status, 422);
    assert_eq!(refused.json()["error"]["field"], "forwardedProps.top_p");
}

#[tokio::test]
async fn bedrock_attachments_become_blocks_and_what_it_cannot_take_is_skipped() {
    let (_replay, app) = on_replay().await;
    let text = json!({"type": "text", "text": "describe the attachments"});
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": [
                text,
                {"type": "image", "source": {"type": "data", "value": "iVBORw0KGgo=", "mimeType": "image/png"}},
                {"type": "binary", "mimeType": "application/pdf", "data": "JVBERi0=", "filename": "q3 report.pdf"},
                {"type": "image", "source": {"type": "url", "value": "https://bucket.s3.us-east-1.amazonaws.com/cat.jpg"}},
            ]}]),
        ))
        .await
        .events();
    assert_eq!(text_of(&events), "A cat and a report.");
    let body = &app.sent.about("describe the attachments")[0].1;
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"text": "describe the attachments"},
            {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}},
            {"document": {"format": "pdf", "name": "q3 report", "source": {"bytes": "JVBERi0="}}},
            {"image": {"format": "jpeg", "source": {"s3Location": {"uri": "s3://bucket/cat.jpg"}}}},
            // Claude caches prompts: the last user turn ends with a cache point.
            {"cachePoint": {"type": "default"}},
        ])
    );

    for (part, says) in [
        (
            json!({"type": "image", "source": {"type": "url", "value": "https://example.com/cat.png"}}),
            "never fetches",
        ),
        (
            json!({"type": "audio", "source": {"type": "data", "value": "UklGRg==", "mimeType": "audio/wav"}}),
            "no audio",
        ),
        (
            json!({"type": "document", "source": {"type": "data", "value": "UEsDBA==", "mimeType": "application/zip"}}),
            "PDF, CSV",
        ),
    ] {
        let reply = app
            .run(&run_input(
                &new_thread(),
                "r",
                json!([
                    {"id": "u0", "role": "user", "content": "first"},
                    {"id": "a0", "role": "assistant", "content": "ok"},
                    {"id": "u1", "role": "user", "content": [text, part]},
                ]),
            ))
            .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let started = &reply.events()[0];
        let skipped = &started["metadata"]["agui-lambda"]["skippedParts"];
        assert_eq!(skipped[0]["field"], "messages[2].content[1]", "{started}");
        assert!(
            skipped[0]["reason"].as_str().unwrap().contains(says),
            "{skipped}"
        );
    }
}

// ---- Prompt caching and the model's window -------------------------------------------------

#[tokio::test]
async fn bedrock_requests_carry_cache_points_for_claude_and_none_when_off() {
    let (_replay, app) = on_replay().await;
    app.run(&run_input(
        &new_thread(),
        "r",
        json!([{"id": "u1", "role": "user", "content": "hello"}]),
    ))
    .await
    .events();
    let body = &app.sent.about("hello")[0].1;
    let point = json!({"cachePoint": {"type": "default"}});
    assert_eq!(
        body["system"].as_array().unwrap().last().unwrap(),
        &point,
        "after the system prompt: {}",
        body["system"]
    );
    assert_eq!(
        body["toolConfig"]["tools"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        &point,
        "after the tools"
    );
    assert_eq!(
        body["messages"][0]["content"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        &point,
        "on the last user turn"
    );

    let (_replay, app) = on_replay_with(&[("PROMPT_CACHE", "off")]).await;
    app.run(&run_input(
        &new_thread(),
        "r",
        json!([{"id": "u1", "role": "user", "content": "hello"}]),
    ))
    .await
    .events();
    let body = &app.sent.about("hello")[0].1;
    assert!(!body.to_string().contains("cachePoint"), "{body}");
}

#[tokio::test]
async fn bedrock_too_long_is_compacted_and_retried_within_the_run() {
    let (_replay, app) = on_replay().await;
    let thread = new_thread();
    let mut messages = Vec::new();
    for turn in 0..6 {
        messages.push(json!({"id": format!("u{turn}"), "role": "user", "content": format!("earlier chatter number {turn} about the garden and its many plants")}));
        let events = app
            .run(&run_input(&thread, &format!("r{turn}"), json!(messages)))
            .await
            .events();
        let id = events
            .iter()
            .find(|event| event["type"] == "TEXT_MESSAGE_START")
            .unwrap()["messageId"]
            .clone();
        messages.push(json!({"id": id, "role": "assistant", "content": text_of(&events)}));
    }
    messages.push(json!({"id": "u-archive", "role": "user", "content": "paste the whole archive"}));
    let events = app
        .run(&run_input(&thread, "r-archive", json!(messages)))
        .await
        .events();
    assert_eq!(last(&events)["type"], "RUN_FINISHED", "{events:?}");
    assert_eq!(text_of(&events), "Read it after compaction.");
    let compaction = events
        .iter()
        .find(|event| event["type"] == "ACTIVITY_SNAPSHOT")
        .unwrap();
    assert_eq!(compaction["activityType"], "context-compaction");
    assert_eq!(
        compaction["content"]["strategy"], "summarized",
        "{compaction}"
    );
    let sent = app.sent.about("paste the whole archive");
    assert_eq!(sent.len(), 2, "refused once, then sent compacted");
    let count = |body: &Value| body["messages"].as_array().unwrap().len();
    assert!(count(&sent[1].1) < count(&sent[0].1));
    assert!(
        sent[1].1["system"]
            .to_string()
            .contains("the user chatted about gardens"),
        "the summary follows the system prompt: {}",
        sent[1].1["system"]
    );
    // The thread keeps every message.
    let history = app.get(&format!("/threads/{thread}")).await.json();
    assert_eq!(history["messages"].as_array().unwrap().len(), 14);
}
