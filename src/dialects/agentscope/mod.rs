//! The AgentScope "Agent API" dialect (the AgentScope Agent API document, `agentscope_runtime.engine.schemas.agent_schemas`
//! 1.1.6): an `AgentRequest` decoded into the one validated [`RunInput`], and an encoder that
//! speaks a run's AG-UI events as the Agent API's `response` / `message` / `content` objects.
//!
//! Stream shape, per run:
//!
//! - `response` `created`, then `in_progress` (on `RUN_STARTED`; `session_id` is the thread id);
//! - per assistant text (`TEXT_MESSAGE_*`): a `message` of type `message`, role `assistant`,
//!   `created` → `in_progress`, text `content` objects with `delta: true`, `index: 0` and
//!   `msg_id`, then the `completed` content with the full text (`delta: false`) and the
//!   `completed` message carrying it;
//! - reasoning (`REASONING_MESSAGE_*`): the same, as a message of type `reasoning`;
//! - per tool call: a `function_call` message whose one `data` content is
//!   `{call_id, name, arguments}` (arguments streamed as `delta: true` data pieces
//!   `{arguments: piece}`, merged by string concatenation as the runtime's `ContentBuilder`
//!   does); parallel calls are serialised, one message after the other;
//! - per server tool result: a `function_call_output` message, role `tool`, whose data is
//!   `{call_id, name, output}`;
//! - `response` `completed` (with `usage`, `completed_at` and every completed message in
//!   `output`) or `failed` with `error {code, message}`.
//!
//! Every object carries an integer `sequence_number`, 0 first, one more per frame. Steps, state
//! and message snapshots have no Agent API form and are not sent: the thread keeps them, and
//! `GET /threads/{id}` shows the history.

use crate::dialects::{Encoder, data_frame};
use crate::protocol::events::{Event, RunErrorCode, RunUsage};
use crate::protocol::input::{
    InputError, Limits, RunInput, from_value, parse_json, strip_position,
};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};

/// A decoded `AgentRequest`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentScopeRequest {
    pub input: RunInput,
    /// `stream: false` asks for the completed response object as one JSON body.
    pub stream: bool,
    /// The client's `response_id` (or request `id`), used as the response's `id`.
    pub response_id: Option<String>,
}

/// Parses and validates an `AgentRequest`: the same limits and rules as `RunAgentInput`, with
/// errors naming the `AgentRequest` field at fault.
///
/// The sampling options `temperature`, `top_p`, `max_tokens`, `stop` and `seed` go to the model
/// as `forwardedProps` would, with the same checks (an error names the request's own field).
/// `model`, `n`, penalties and `user_id` are accepted and ignored: the server's configuration
/// picks the model, and authentication the owner.
pub fn parse_request(body: &[u8], limits: &Limits) -> Result<AgentScopeRequest, InputError> {
    from_json(parse_json(body, limits)?, limits)
}

/// [`parse_request`] for a body already parsed as JSON (by [`parse_json`], which checks the size
/// limit and the syntax for every dialect alike).
pub fn from_json(body: Value, limits: &Limits) -> Result<AgentScopeRequest, InputError> {
    let wire: WireRequest = serde_path_to_error::deserialize(body).map_err(|err| {
        let path = err.path().to_string();
        let field = if path == "." { "body".to_owned() } else { path };
        invalid(field, strip_position(&err.into_inner().to_string()))
    })?;
    if wire.input.len() > limits.max_messages {
        return Err(invalid(
            "input",
            format!("input exceeds limit of {} messages", limits.max_messages),
        ));
    }
    let stream = wire.stream.unwrap_or(true);
    let response_id = wire
        .response_id
        .clone()
        .or_else(|| wire.id.clone())
        .filter(|id| !id.is_empty());
    let (agui, origins) = wire.into_agui()?;
    let input = from_value(agui, limits).map_err(|err| origins.translate(err))?;
    Ok(AgentScopeRequest {
        input,
        stream,
        response_id,
    })
}

/// A failed `AgentResponse`, the body of a refusal on `/process`.
pub fn error_response_body(code: &str, message: &str) -> Value {
    json!({
        "object": "response",
        "id": new_response_id(),
        "status": "failed",
        "created_at": now_secs(),
        "output": [],
        "error": {"code": code, "message": message},
    })
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> InputError {
    InputError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

fn new_response_id() -> String {
    format!("response_{}", uuid::Uuid::new_v4())
}

fn new_message_id() -> String {
    format!("msg_{}", uuid::Uuid::new_v4())
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

// ---- decoding ---------------------------------------------------------------------------------

#[derive(Deserialize)]
struct WireRequest {
    input: Vec<WireMessage>,
    #[serde(default)]
    stream: Option<bool>,
    /// The request's id: the run id, and the response id unless `response_id` is given.
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    response_id: Option<String>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
    #[serde(default)]
    temperature: Option<Value>,
    #[serde(default)]
    top_p: Option<Value>,
    #[serde(default)]
    max_tokens: Option<Value>,
    #[serde(default)]
    stop: Option<Value>,
    #[serde(default)]
    seed: Option<Value>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    id: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    content: Option<Value>,
}

/// Where an AG-UI message of the translated request came from, to name `AgentRequest` fields
/// in errors.
#[derive(Default)]
struct Origin {
    input: usize,
    /// For a tool message: the content part it came from.
    part: Option<usize>,
    /// For an assistant message: the (input, part) of each tool call.
    calls: Vec<(usize, usize)>,
}

#[derive(Default)]
struct Origins {
    messages: Vec<Origin>,
    /// Whether `tools[i]` came in `{type, function: {…}}` form.
    nested_tools: Vec<bool>,
}

impl Origins {
    /// Renames the AG-UI field of an error to the `AgentRequest` field it came from.
    fn translate(&self, err: InputError) -> InputError {
        let InputError::Invalid { field, message } = err else {
            return err;
        };
        invalid(self.field(&field), message)
    }

    fn field(&self, field: &str) -> String {
        match field {
            "threadId" => return "session_id".to_owned(),
            "runId" => return "id".to_owned(),
            "messages" => return "input".to_owned(),
            _ => {}
        }
        // The request's own sampling fields travel as `forwardedProps`.
        if let Some(own) = field.strip_prefix("forwardedProps.") {
            return own.to_owned();
        }
        if let Some((index, rest)) = indexed(field, "messages[") {
            let Some(origin) = self.messages.get(index) else {
                return "input".to_owned();
            };
            let base = format!("input[{}]", origin.input);
            if let (".toolCallId", Some(part)) = (rest, origin.part) {
                return format!("{base}.content[{part}].data.call_id");
            }
            if let Some((call, call_rest)) = indexed(rest, ".toolCalls[")
                && let Some((input, part)) = origin.calls.get(call)
            {
                let suffix = match call_rest {
                    ".id" => ".call_id",
                    ".function.name" => ".name",
                    _ => "",
                };
                return format!("input[{input}].content[{part}].data{suffix}");
            }
            // An image part's AG-UI source is the request's `image_url`.
            return match rest.find(".source") {
                Some(at) if &rest[at..] == ".source.value" => {
                    format!("{base}{}.image_url", &rest[..at])
                }
                Some(at) => format!("{base}{}", &rest[..at]),
                None => format!("{base}{rest}"),
            };
        }
        if let Some((index, rest)) = indexed(field, "tools[")
            && self.nested_tools.get(index).copied().unwrap_or(false)
            && !rest.is_empty()
        {
            return format!("tools[{index}].function{rest}");
        }
        field.to_owned()
    }
}

/// Splits `prefix<N>]rest` into `(N, rest)`.
fn indexed<'a>(field: &'a str, prefix: &str) -> Option<(usize, &'a str)> {
    let after = field.strip_prefix(prefix)?;
    let close = after.find(']')?;
    let index = after[..close].parse().ok()?;
    Some((index, &after[close + 1..]))
}

/// Consecutive assistant-side items (text messages, function calls; reasoning is skipped) are
/// one AG-UI assistant message, as the server stores a model turn: so a client that echoes a
/// streamed turn back sends a message id the thread already holds.
struct AssistantGroup {
    id: String,
    text: String,
    tool_calls: Vec<Value>,
    origin: Origin,
}

struct Builder {
    messages: Vec<Value>,
    origins: Origins,
    group: Option<AssistantGroup>,
}

impl Builder {
    fn group(&mut self, id: &Option<String>, input: usize) -> &mut AssistantGroup {
        self.group.get_or_insert_with(|| AssistantGroup {
            id: id.clone().unwrap_or_else(new_message_id),
            text: String::new(),
            tool_calls: Vec::new(),
            origin: Origin {
                input,
                ..Origin::default()
            },
        })
    }

    fn flush(&mut self) {
        if let Some(group) = self.group.take() {
            let mut message = json!({"id": group.id, "role": "assistant"});
            if !group.text.is_empty() {
                message["content"] = Value::String(group.text);
            }
            if !group.tool_calls.is_empty() {
                message["toolCalls"] = Value::Array(group.tool_calls);
            }
            self.push(message, group.origin);
        }
    }

    fn push(&mut self, message: Value, origin: Origin) {
        self.messages.push(message);
        self.origins.messages.push(origin);
    }
}

/// The text of a message's content: a string, or its `text` parts joined.
fn text_of(content: &Option<Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// The `data` objects of a message's `data` content parts, with their indices.
/// A data content part: its index and its `data` object.
type DataPart<'a> = (usize, &'a Map<String, Value>);

fn data_parts(content: &Option<Value>, input: usize) -> Result<Vec<DataPart<'_>>, InputError> {
    let Some(Value::Array(parts)) = content else {
        return Err(invalid(
            format!("input[{input}].content"),
            "must be a list of data content parts",
        ));
    };
    parts
        .iter()
        .enumerate()
        .map(|(index, part)| {
            part.get("data")
                .and_then(Value::as_object)
                .map(|data| (index, data))
                .ok_or_else(|| {
                    invalid(
                        format!("input[{input}].content[{index}].data"),
                        "must be an object",
                    )
                })
        })
        .collect()
}

fn text_value(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => Value::String(String::new()),
        Some(Value::String(text)) => Value::String(text.clone()),
        Some(other) => Value::String(other.to_string()),
    }
}

/// A user message's content parts in AG-UI form, index for index.
fn user_content(content: Option<Value>, input: usize) -> Result<Value, InputError> {
    let parts = match content {
        None | Some(Value::Null) => return Ok(Value::Array(Vec::new())),
        Some(Value::String(text)) => return Ok(Value::String(text)),
        Some(Value::Array(parts)) => parts,
        Some(_) => {
            return Err(invalid(
                format!("input[{input}].content"),
                "must be a list of content parts",
            ));
        }
    };
    parts
        .into_iter()
        .enumerate()
        .map(|(index, part)| {
            let field = format!("input[{input}].content[{index}]");
            match part.get("type").and_then(Value::as_str) {
                Some("text") => Ok(json!({"type": "text", "text": text_value(part.get("text"))})),
                Some("image") => match part.get("image_url").and_then(Value::as_str) {
                    Some(url) => {
                        Ok(json!({"type": "image", "source": {"type": "url", "value": url}}))
                    }
                    None => Err(invalid(field, "image content requires image_url")),
                },
                _ => Err(invalid(field, "only text and image content is supported")),
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

impl WireRequest {
    /// The equivalent `RunAgentInput`, and where each of its parts came from.
    fn into_agui(self) -> Result<(Value, Origins), InputError> {
        let mut builder = Builder {
            messages: Vec::new(),
            origins: Origins::default(),
            group: None,
        };
        for (input, message) in self.input.into_iter().enumerate() {
            let id = message.id.filter(|id| !id.is_empty());
            let kind = message.kind.as_deref().unwrap_or("message");
            match kind {
                "message" => match message.role.as_deref().unwrap_or("user") {
                    "assistant" => {
                        let text = text_of(&message.content);
                        builder.group(&id, input).text.push_str(&text);
                    }
                    "user" => {
                        builder.flush();
                        let content = user_content(message.content, input)?;
                        let id = id.unwrap_or_else(new_message_id);
                        builder.push(
                            json!({"id": id, "role": "user", "content": content}),
                            Origin {
                                input,
                                ..Origin::default()
                            },
                        );
                    }
                    "system" => {
                        builder.flush();
                        let id = id.unwrap_or_else(new_message_id);
                        let content = text_of(&message.content);
                        builder.push(
                            json!({"id": id, "role": "system", "content": content}),
                            Origin {
                                input,
                                ..Origin::default()
                            },
                        );
                    }
                    "tool" => {
                        return Err(invalid(
                            format!("input[{input}].type"),
                            "a tool result is a function_call_output message",
                        ));
                    }
                    other => {
                        return Err(invalid(
                            format!("input[{input}].role"),
                            format!("unknown role {other:?}"),
                        ));
                    }
                },
                "function_call" | "plugin_call" | "mcp_call" => {
                    let parts = data_parts(&message.content, input)?;
                    let group = builder.group(&id, input);
                    for (part, data) in parts {
                        group.tool_calls.push(json!({
                            "id": text_value(data.get("call_id")),
                            "type": "function",
                            "function": {
                                "name": text_value(data.get("name")),
                                "arguments": text_value(data.get("arguments")),
                            },
                        }));
                        group.origin.calls.push((input, part));
                    }
                }
                "function_call_output" | "plugin_call_output" | "mcp_call_output" => {
                    builder.flush();
                    let parts = data_parts(&message.content, input)?;
                    let base = id.unwrap_or_else(new_message_id);
                    for (position, (part, data)) in parts.into_iter().enumerate() {
                        // A derived id keeps a re-sent message idempotent.
                        let id = if position == 0 {
                            base.clone()
                        } else {
                            format!("{base}-{position}")
                        };
                        builder.push(
                            json!({
                                "id": id,
                                "role": "tool",
                                "toolCallId": text_value(data.get("call_id")),
                                "content": text_value(data.get("output")),
                            }),
                            Origin {
                                input,
                                part: Some(part),
                                calls: Vec::new(),
                            },
                        );
                    }
                }
                // Shown by UIs, never sent to a model (as AG-UI `reasoning` messages); server
                // frames a client may echo back.
                "reasoning" | "heartbeat" | "error" => {}
                other => {
                    return Err(invalid(
                        format!("input[{input}].type"),
                        format!("unsupported message type {other:?}"),
                    ));
                }
            }
        }
        builder.flush();

        let mut tools = Vec::new();
        for (index, tool) in self.tools.unwrap_or_default().into_iter().enumerate() {
            let field = format!("tools[{index}]");
            let Value::Object(mut tool) = tool else {
                return Err(invalid(field, "must be a function tool object"));
            };
            if let Some(kind) = tool.get("type").and_then(Value::as_str)
                && kind != "function"
            {
                return Err(invalid(
                    format!("{field}.type"),
                    "only function tools are supported",
                ));
            }
            let (function, nested) = match tool.remove("function") {
                Some(Value::Object(function)) => (function, true),
                Some(_) => return Err(invalid(format!("{field}.function"), "must be an object")),
                None => (tool, false),
            };
            let mut agui = Map::new();
            for key in ["name", "description", "parameters"] {
                if let Some(value) = function.get(key) {
                    agui.insert(key.to_owned(), value.clone());
                }
            }
            tools.push(Value::Object(agui));
            builder.origins.nested_tools.push(nested);
        }

        let mut forwarded = Map::new();
        for (name, value) in [
            ("temperature", self.temperature),
            ("top_p", self.top_p),
            ("max_tokens", self.max_tokens),
            ("stop", self.stop),
            ("seed", self.seed),
        ] {
            if let Some(value) = value.filter(|value| !value.is_null()) {
                forwarded.insert(name.to_owned(), value);
            }
        }
        let mut agui = json!({
            "messages": builder.messages,
            "tools": tools,
            "context": [],
            "forwardedProps": forwarded,
        });
        if let Some(session) = self.session_id.filter(|id| !id.is_empty()) {
            agui["threadId"] = Value::String(session);
        }
        if let Some(id) = self.id.filter(|id| !id.is_empty()) {
            agui["runId"] = Value::String(id);
        }
        Ok((agui, builder.origins))
    }
}

mod encoder;

pub use encoder::AgentScopeEncoder;

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
