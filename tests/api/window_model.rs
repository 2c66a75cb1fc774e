//! An OpenAI-compatible Chat Completions server on loopback with a small context window, strict
//! as api.openai.com is: a request over the window gets OpenAI's `400 context_length_exceeded`
//! body, and a `tool` message that does not answer a call of the assistant message before it (or
//! a call left without its result) gets OpenAI's `400 invalid_request_error`. It counts tokens
//! as a tokenizer would roughly (four characters a token, four more per message), reports them
//! as `usage.prompt_tokens`, and records every request.
//!
//! Its answers: a summary request (the summariser's system prompt) is answered with every line
//! of the request that holds `[fact]`, one bullet each, whatever length it was asked for (as
//! models overshoot); a request to condense a summary with the same facts on one line, terse
//! (`[fact] a; b; c`), which is as short as it gets: a fact survives any number of summaries if
//! the server sends it to the summariser. A user message holding `[tool]` gets a call of
//! `fetch_report`; one holding `[recall]` an answer that names every fact the request holds (as
//! a model answers from what it was sent); anything else a short acknowledgement.
//!
//! Its refusal names the window as OpenAI's Chat Completions does, or, as OpenAI's Responses
//! API, Bedrock and Ollama do, names none ([`Wording::Unnamed`]).

use agui_lambda::testing::agent::{CONDENSE_MARKER, SUMMARY_MARKER};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request as the model received it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub body: Value,
    /// The request's size in this model's tokens.
    pub tokens: u64,
    /// What the model answered: `ok`, `summary`, `overflow`, `invalid` or `failed`.
    pub outcome: &'static str,
}

impl Seen {
    pub(crate) fn is_summary(&self) -> bool {
        system_text(&self.body).starts_with(SUMMARY_MARKER)
    }

    /// A request to condense a summary that outgrew its allowance.
    pub(crate) fn is_condense(&self) -> bool {
        self.is_summary() && self.text().contains(CONDENSE_MARKER)
    }

    /// Every text of the request (system prompt and messages), joined.
    pub(crate) fn text(&self) -> String {
        self.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|message| content_text(&message["content"]))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[derive(Default)]
struct Behaviour {
    fail_summaries: bool,
}

/// How the model words its refusal of a request over its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wording {
    /// OpenAI's Chat Completions: "This model's maximum context length is 8000 tokens. …".
    Named,
    /// OpenAI's Responses API: "Your input exceeds the context window of this model. …".
    Unnamed,
}

pub(crate) struct WindowModel {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    behaviour: Arc<Mutex<Behaviour>>,
    _server: tokio::task::JoinHandle<()>,
}

impl WindowModel {
    pub(crate) async fn start(window: u64) -> Self {
        Self::start_with(window, Wording::Named).await
    }

    /// A model whose refusals are worded as `wording` says.
    pub(crate) async fn start_with(window: u64, wording: Wording) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let behaviour = Arc::new(Mutex::new(Behaviour::default()));
        let server = tokio::spawn({
            let seen = seen.clone();
            let behaviour = behaviour.clone();
            async move {
                loop {
                    let (socket, _) = listener.accept().await.unwrap();
                    let seen = seen.clone();
                    let behaviour = behaviour.clone();
                    tokio::spawn(
                        async move { serve(socket, (window, wording), seen, behaviour).await },
                    );
                }
            }
        });
        Self {
            url,
            seen,
            behaviour,
            _server: server,
        }
    }

    /// Summary requests fail from now on (a 400 that is not an overflow).
    pub(crate) fn fail_summaries(&self) {
        self.behaviour.lock().unwrap().fail_summaries = true;
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: tokio::net::TcpStream,
    (window, wording): (u64, Wording),
    seen: Arc<Mutex<Vec<Seen>>>,
    behaviour: Arc<Mutex<Behaviour>>,
) {
    let Some(body) = read_request(&mut socket).await else {
        return;
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let tokens = count_tokens(&body);
    let summary = system_text(&body).starts_with(SUMMARY_MARKER);
    let fail_summaries = behaviour.lock().unwrap().fail_summaries;
    let (outcome, status, reply) = if let Some(error) = tool_order_error(&body) {
        ("invalid", 400, invalid_request(&error))
    } else if tokens > window {
        ("overflow", 400, overflow(window, tokens, wording))
    } else if summary && fail_summaries {
        ("failed", 400, json!({"error": {"message": "the summariser is down today", "type": "invalid_request_error", "code": "test_failure"}}).to_string())
    } else {
        ("ok", 200, answer(&body, tokens, summary))
    };
    seen.lock().unwrap().push(Seen {
        body,
        tokens,
        outcome,
    });
    let (reason, content_type) = if status == 200 {
        ("OK", "text/event-stream")
    } else {
        ("Bad Request", "application/json")
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        reply.len()
    );
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(reply.as_bytes()).await;
    let _ = socket.shutdown().await;
}

/// One HTTP/1.1 request's body: the head, then the body its `content-length` announces.
pub(crate) async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 65536];
    let body_start = loop {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..body_start]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    while buffer.len() < body_start + length {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    Some(buffer[body_start..body_start + length].to_vec())
}

fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

fn system_text(body: &Value) -> String {
    body["messages"][0]
        .as_object()
        .filter(|message| message["role"] == "system")
        .map(|message| content_text(&message["content"]))
        .unwrap_or_default()
}

/// Four characters a token, four tokens more per message and per call; the tools' JSON too.
pub(crate) fn count_tokens(body: &Value) -> u64 {
    let chars = |text: &str| text.chars().count() as u64;
    let mut tokens = 0;
    for message in body["messages"].as_array().into_iter().flatten() {
        tokens += 4 + chars(&content_text(&message["content"])).div_ceil(4);
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let function = &call["function"];
            tokens += 4
                + chars(function["name"].as_str().unwrap_or_default()).div_ceil(4)
                + chars(function["arguments"].as_str().unwrap_or_default()).div_ceil(4);
        }
    }
    if let Some(tools) = body.get("tools") {
        tokens += chars(&tools.to_string()).div_ceil(4);
    }
    tokens
}

/// What api.openai.com refuses: a tool message that answers no call of the assistant message
/// before it, and a call whose result does not follow.
fn tool_order_error(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let mut open: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        match message["role"].as_str() {
            Some("tool") => {
                let id = message["tool_call_id"].as_str().unwrap_or_default();
                let Some(position) = open.iter().position(|open| open == id) else {
                    return Some(format!(
                        "messages.[{index}].role: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
                    ));
                };
                open.remove(position);
            }
            _ if !open.is_empty() => {
                return Some(format!(
                    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {} (messages.[{index}])",
                    open.join(", ")
                ));
            }
            Some("assistant") => {
                open = message["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|call| call["id"].as_str().map(str::to_owned))
                    .collect();
            }
            _ => {}
        }
    }
    None
}

fn invalid_request(message: &str) -> String {
    json!({"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": null}}).to_string()
}

fn overflow(window: u64, tokens: u64, wording: Wording) -> String {
    let message = match wording {
        Wording::Named => format!(
            "This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."
        ),
        Wording::Unnamed => "Your input exceeds the context window of this model. Please adjust your input and try again.".to_owned(),
    };
    json!({"error": {
        "message": message,
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }})
    .to_string()
}

/// The streamed answer: a summary, a tool call or an acknowledgement, then usage and `[DONE]`.
fn answer(body: &Value, tokens: u64, summary: bool) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let mut frames = Vec::new();
    let finish = if summary {
        frames.push(json!({"content": summary_of(&messages)}));
        "stop"
    } else if last["role"] == "user" && content_text(&last["content"]).contains("[recall]") {
        frames
            .push(json!({"content": format!("You told me: {}.", facts_in(&messages).join("; "))}));
        "stop"
    } else if last["role"] == "user" && content_text(&last["content"]).contains("[tool]") {
        let call = format!("call_{}", messages.len());
        frames.push(json!({"tool_calls": [{"index": 0, "id": call, "type": "function", "function": {"name": "fetch_report", "arguments": "{\"topic\":\"weather\"}"}}]}));
        "tool_calls"
    } else {
        frames.push(json!({"content": format!("Noted ({} messages).", messages.len())}));
        "stop"
    };
    let mut out = String::new();
    for delta in frames {
        let chunk = json!({"id": "chatcmpl-w", "object": "chat.completion.chunk", "model": "window-8k", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    let end = json!({"id": "chatcmpl-w", "object": "chat.completion.chunk", "model": "window-8k", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]});
    out.push_str(&format!("data: {end}\n\n"));
    let usage = json!({"id": "chatcmpl-w", "object": "chat.completion.chunk", "model": "window-8k", "choices": [], "usage": {"prompt_tokens": tokens, "completion_tokens": 8, "total_tokens": tokens + 8}});
    out.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    out
}

/// The summariser's answer: every fact of the request, a bullet each; or, asked to condense, all
/// of them on one line.
fn summary_of(messages: &[Value]) -> String {
    let facts = facts_in(messages);
    let condense = messages
        .iter()
        .any(|message| content_text(&message["content"]).contains(CONDENSE_MARKER));
    if condense {
        format!("[fact] {}", facts.join("; "))
    } else {
        let bullets: Vec<String> = facts
            .iter()
            .map(|fact| format!("- [fact] {fact}"))
            .collect();
        format!("Facts:\n{}", bullets.join("\n"))
    }
}

/// Every fact the messages state, once each, in the order they come.
fn facts_in(messages: &[Value]) -> Vec<String> {
    let texts: Vec<String> = messages
        .iter()
        .map(|message| content_text(&message["content"]))
        .collect();
    let mut facts: Vec<String> = Vec::new();
    for line in texts.iter().flat_map(|text| text.lines()) {
        if !line.contains("[fact]") {
            continue;
        }
        for fact in fact_of(line)
            .split("[fact]")
            .flat_map(|part| part.split("; "))
        {
            let fact = fact.trim().to_owned();
            if !fact.is_empty() && !facts.contains(&fact) {
                facts.push(fact);
            }
        }
    }
    facts
}

/// The fact a line states, without the transcript's speaker or a bullet.
fn fact_of(line: &str) -> String {
    let start = line.find("[fact]").unwrap_or(0);
    line[start..].trim().to_owned()
}
