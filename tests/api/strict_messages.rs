//! A strict stand-in of Anthropic's Messages API (`POST /v1/messages`, streamed) on loopback,
//! refusing what the real API refuses, with its error shapes and statuses: no
//! `anthropic-version` or key (401 `authentication_error`), no `max_tokens`, a first message
//! that is not the user's or roles that do not alternate (the API combines them today; Bedrock's
//! and Vertex's Claude endpoints and older versions refuse them, so our requests alternate), a
//! blank text block, a `tool_use` whose input is not an object or that is not answered by a
//! `tool_result` in the next user message, a result that answers no call, tool blocks without
//! `tools`, over four `cache_control` breakpoints, and with thinking on: a temperature, a top_p
//! under 0.95, a budget not under `max_tokens`, a thinking block or redacted data that is not
//! byte for byte one it issued, and a tool loop whose assistant turn does not open with its
//! thinking ("Expected `thinking` or `redacted_thinking`, but found `tool_use`").
//!
//! What it answers is decided by a marker in the last user message with text, as
//! `tests/strict_models.py` does for the other providers: `[time]` calls get_current_time,
//! `[color]` calls change-background-color (a frontend tool), `[form]` renders an A2UI form
//! (`render_a2ui`), `[parallel]` makes two calls at once, a turn after tool results answers
//! `Done: <the last result>`, anything else `Hello from the strict model.`. With thinking on, every answer opens with a thinking block (signed) and a
//! redacted one. Failures: `[529]` an overloaded 529 and `[overload-in-stream]` an
//! `overloaded_error` event after the 200 before any output (each once per message); `[stall]`
//! the headers then silence (for any model but `fallback-model`), `[overload-after-output]`
//! some text then the error event, `[drop-after-output]` some text then the connection cut
//! (always). `ping` events come between blocks; usage reports cache reads and writes when the
//! request has breakpoints. Started with a window, a request longer than it gets the API's
//! "prompt is too long: N tokens > W maximum".
//!
//! Used by the integration tests (`StrictMessages::start`) and, through
//! `examples/strict_messages.rs`, by the Node suites (`GET /health`, `GET /__journal`).

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[path = "strict_messages_rules.rs"]
mod rules;

use rules::{Issued, Refusal, authenticate, blocks, check, invalid, thinking_on};

type Body = BoxBody<Bytes, std::io::Error>;

const THINKING_TEXT: &str = "Thinking about what the user asked.";

/// One request as the stand-in received it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// Lower-cased header names.
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: Value,
    /// The status it answered.
    pub(crate) status: u16,
    /// The refusal's message, when it refused.
    pub(crate) refusal: Option<String>,
}

#[derive(Default)]
struct State {
    key: String,
    /// The model's context window in tokens (four characters of the messages a token), when a
    /// test sets one: a longer request gets the API's "prompt is too long".
    window: Option<u64>,
    journal: Mutex<Vec<Seen>>,
    issued: Issued,
    /// Failure marker and message → times asked.
    asked: Mutex<HashMap<String, u32>>,
    counter: AtomicU64,
}

impl State {
    fn next_id(&self, prefix: &str) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!(
            "{prefix}_{n:04}{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        )
    }

    fn first_time(&self, key: String) -> bool {
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        let count = asked.entry(key).or_insert(0);
        *count += 1;
        *count == 1
    }
}

pub(crate) struct StrictMessages {
    /// The base URL, as `ANTHROPIC_BASE_URL` takes it (no `/v1`).
    pub(crate) url: String,
    state: Arc<State>,
    _server: tokio::task::JoinHandle<()>,
}

impl StrictMessages {
    /// On a free loopback port, accepting `key`.
    pub(crate) async fn start(key: &str) -> Self {
        Self::start_with_window(key, None).await
    }

    /// On a free loopback port, accepting `key`, for a model with a context window of `window`
    /// tokens.
    pub(crate) async fn start_with_window(key: &str, window: Option<u64>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|error| panic!("bind: {error}"));
        Self::serve(listener, key, window)
    }

    /// On `listener`, accepting `key`.
    pub(crate) fn serve(listener: tokio::net::TcpListener, key: &str, window: Option<u64>) -> Self {
        let url = listener
            .local_addr()
            .map(|addr| format!("http://{addr}"))
            .unwrap_or_default();
        let state = Arc::new(State {
            key: key.to_owned(),
            window,
            ..State::default()
        });
        let server = crate::loopback::serve(listener, {
            let state = state.clone();
            move |request| {
                let state = state.clone();
                async move { handle(state, request).await }
            }
        });
        Self {
            url,
            state,
            _server: server,
        }
    }

    /// Every request received, oldest first.
    pub(crate) fn journal(&self) -> Vec<Seen> {
        self.state
            .journal
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The requests whose body mentions `text`, oldest first.
    pub(crate) fn requests_about(&self, text: &str) -> Vec<Seen> {
        self.journal()
            .into_iter()
            .filter(|seen| seen.body.to_string().contains(text))
            .collect()
    }
}

async fn handle(state: Arc<State>, request: hyper::Request<Incoming>) -> hyper::Response<Body> {
    let path = request.uri().path().to_owned();
    match (request.method().as_str(), path.as_str()) {
        ("GET", "/health") => return json_response(200, &json!({"status": "ok"})),
        ("GET", "/__journal") => {
            let journal: Vec<Value> = state
                .journal
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .map(|seen| json!({"headers": seen.headers, "body": seen.body, "status": seen.status}))
                .collect();
            return json_response(200, &Value::Array(journal));
        }
        ("POST", "/v1/messages") => {}
        _ => return error(404, "not_found_error", &format!("Not found: {path}")),
    }
    let headers: HashMap<String, String> = request
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                value.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let bytes = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return error(400, "invalid_request_error", "the body could not be read"),
    };
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let outcome = authenticate(&state.key, &headers)
        .and_then(|()| check(&body, &state.issued))
        .and_then(|()| failure_before_stream(&state, &body));
    let (status, refusal) = match &outcome {
        Ok(()) => (200, None),
        Err((status, _, message)) => (*status, Some(message.clone())),
    };
    state
        .journal
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Seen {
            headers,
            body: body.clone(),
            status,
            refusal,
        });
    match outcome {
        Ok(()) => stream(state, body),
        Err((status, kind, message)) => error(status, kind, &message),
    }
}

/// The text of the last user message that has text: where the markers are.
fn marker_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .filter(|m| m["role"] == "user")
        .map(|m| {
            blocks(m)
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .find(|text| !text.is_empty())
        .unwrap_or_default()
}

/// The tool results after the last user message with text, oldest first.
fn answered(body: &Value) -> Vec<Value> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let start = messages
        .iter()
        .rposition(|m| m["role"] == "user" && blocks(m).iter().any(|b| b["type"] == "text"))
        .map_or(0, |at| at + 1);
    messages[start..]
        .iter()
        .flat_map(blocks)
        .filter(|b| b["type"] == "tool_result")
        .collect()
}

fn failure_before_stream(state: &State, body: &Value) -> Result<(), Refusal> {
    let tokens = (body["messages"].to_string().chars().count() as u64).div_ceil(4);
    if let Some(window) = state.window
        && tokens > window
    {
        return Err(invalid(format!(
            "prompt is too long: {tokens} tokens > {window} maximum"
        )));
    }
    let text = marker_text(body);
    if text.contains("[529]") && state.first_time(format!("529{text}")) {
        return Err((529, "overloaded_error", "Overloaded".into()));
    }
    Ok(())
}

enum Step {
    Text(String),
    Call(&'static str, Value),
}

fn plan(text: &str, answered: &[Value]) -> Vec<Step> {
    if let Some(last) = answered.last() {
        let content = match &last["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        return vec![Step::Text(format!(
            "Done: {}",
            content.chars().take(60).collect::<String>()
        ))];
    }
    if text.contains("[time]") {
        vec![Step::Call(
            "get_current_time",
            json!({"timezone": "Europe/Paris"}),
        )]
    } else if text.contains("[color]") {
        vec![Step::Call(
            "change-background-color",
            json!({"color": "green"}),
        )]
    } else if text.contains("[form]") {
        // A2UI's render tool, offered when the client paints surfaces: a name field and a button.
        let components = json!([
            {"id": "root", "component": "Column", "children": ["name", "send"]},
            {"id": "name", "component": "TextField", "label": "Your name", "value": {"path": "/name"}},
            {"id": "send", "component": "Button", "child": "send-label",
             "action": {"event": {"name": "submit", "context": {"name": {"path": "/name"}}}}},
            {"id": "send-label", "component": "Text", "text": "Send"}
        ]);
        vec![Step::Call(
            "render_a2ui",
            json!({"surfaceId": "signup", "components": components.to_string(),
                   "data": json!({"name": ""}).to_string()}),
        )]
    } else if text.contains("[parallel]") {
        vec![
            Step::Call("get_current_time", json!({"timezone": "UTC"})),
            Step::Call("get_current_time", json!({"timezone": "Asia/Tokyo"})),
        ]
    } else {
        vec![Step::Text("Hello from the strict model.".into())]
    }
}

fn event(data: &Value) -> Bytes {
    let kind = data["type"].as_str().unwrap_or("unknown");
    Bytes::from(format!("event: {kind}\ndata: {data}\n\n"))
}

/// Frames to send, or an instruction.
enum Out {
    Frame(Bytes),
    Stall,
    Cut,
}

/// The answer's events for `body`: thinking (when on), the plan's blocks, usage, the end.
fn answer(state: &State, body: &Value) -> Vec<Out> {
    let text = marker_text(body);
    let mut out = Vec::new();
    let cached = body.to_string().contains("cache_control");
    let (read, written) = if cached { (2_000, 1_000) } else { (0, 0) };
    out.push(Out::Frame(event(
        &json!({"type": "message_start", "message": {
        "id": state.next_id("msg"), "type": "message", "role": "assistant", "content": [],
        "model": body["model"], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 30, "cache_creation_input_tokens": written,
                  "cache_read_input_tokens": read, "output_tokens": 1}}}),
    )));
    out.push(Out::Frame(event(&json!({"type": "ping"}))));
    if text.contains("[stall]") && body["model"] != "fallback-model" {
        out.push(Out::Stall);
        return out;
    }
    if text.contains("[overload-in-stream]") && state.first_time(format!("in-stream{text}")) {
        out.push(Out::Frame(event(&json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))));
        return out;
    }
    let mut index = 0;
    let thinking = thinking_on(body);
    if thinking {
        let signature = base64_of(&state.next_id("sig"));
        let data = base64_of(&format!("redacted {}", state.next_id("rt")));
        state
            .issued
            .signatures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(signature.clone(), THINKING_TEXT.to_owned());
        state
            .issued
            .redacted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(data.clone());
        out.push(Out::Frame(event(&json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))));
        for piece in ["Thinking about ", "what the user asked."] {
            out.push(Out::Frame(event(&json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}}))));
        }
        out.push(Out::Frame(event(&json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}}))));
        out.push(Out::Frame(event(
            &json!({"type": "content_block_stop", "index": index}),
        )));
        index += 1;
        out.push(Out::Frame(event(&json!({"type": "content_block_start", "index": index, "content_block": {"type": "redacted_thinking", "data": data}}))));
        out.push(Out::Frame(event(
            &json!({"type": "content_block_stop", "index": index}),
        )));
        index += 1;
    }
    let steps = plan(&text, &answered(body));
    let calls = steps.iter().any(|step| matches!(step, Step::Call(..)));
    for step in steps {
        match step {
            Step::Text(answer) => {
                out.push(Out::Frame(event(&json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))));
                let chars: Vec<char> = answer.chars().collect();
                for piece in chars.chunks(8) {
                    let piece: String = piece.iter().collect();
                    out.push(Out::Frame(event(&json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}))));
                    if text.contains("[drop-after-output]") {
                        out.push(Out::Cut);
                        return out;
                    }
                    if text.contains("[overload-after-output]") {
                        out.push(Out::Frame(event(&json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))));
                        return out;
                    }
                }
                out.push(Out::Frame(event(
                    &json!({"type": "content_block_stop", "index": index}),
                )));
            }
            Step::Call(name, input) => {
                let id = state.next_id("toolu");
                out.push(Out::Frame(event(&json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}))));
                let input = input.to_string();
                let chars: Vec<char> = input.chars().collect();
                for piece in chars.chunks(10) {
                    let piece: String = piece.iter().collect();
                    out.push(Out::Frame(event(&json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}))));
                }
                out.push(Out::Frame(event(
                    &json!({"type": "content_block_stop", "index": index}),
                )));
                out.push(Out::Frame(event(&json!({"type": "ping"}))));
            }
        }
        index += 1;
    }
    let mut usage = json!({"output_tokens": 40});
    if thinking {
        usage["output_tokens_details"] = json!({"thinking_tokens": 16});
    }
    out.push(Out::Frame(event(&json!({"type": "message_delta", "delta": {"stop_reason": if calls { "tool_use" } else { "end_turn" }, "stop_sequence": null}, "usage": usage}))));
    out.push(Out::Frame(event(&json!({"type": "message_stop"}))));
    out
}

fn base64_of(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn stream(state: Arc<State>, body: Value) -> hyper::Response<Body> {
    let plan = answer(&state, &body);
    let frames = async_stream::stream! {
        for out in plan {
            match out {
                Out::Frame(bytes) => yield Ok(Frame::data(bytes)),
                Out::Stall => {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    return;
                }
                // An error in the body makes hyper abort the connection mid-answer.
                Out::Cut => {
                    yield Err(std::io::Error::other("cut"));
                    return;
                }
            }
            tokio::task::yield_now().await;
        }
    };
    hyper::Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .header("request-id", state.next_id("req"))
        .body(BodyExt::boxed(StreamBody::new(frames)))
        .unwrap_or_else(|_| hyper::Response::new(empty()))
}

fn empty() -> Body {
    Full::new(Bytes::new())
        .map_err(|never: Infallible| match never {})
        .boxed()
}

fn json_response(status: u16, value: &Value) -> hyper::Response<Body> {
    hyper::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(
            Full::new(Bytes::from(value.to_string()))
                .map_err(|never: Infallible| match never {})
                .boxed(),
        )
        .unwrap_or_else(|_| hyper::Response::new(empty()))
}

/// The API's error body: `{"type": "error", "error": {"type", "message"}, "request_id"}`.
fn error(status: u16, kind: &str, message: &str) -> hyper::Response<Body> {
    json_response(
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": format!("req_{}", uuid::Uuid::new_v4().simple())}),
    )
}
