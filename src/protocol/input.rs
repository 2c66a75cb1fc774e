//! `RunAgentInput` as sent by `@ag-ui/client` 1.0 and 0.0.59, CopilotKit and plain `fetch`,
//! parsed once into a [`RunInput`] of typed values. Every refusal names the field at fault.

use super::ids::{IdError, MAX_ID_LEN, MessageId, RunId, ThreadId, ToolCallId};
use super::interrupt::ResumeEntry;
use super::message::{
    Attachment, Message, PartMetadata, PartSource, ToolCall, UserContent, UserPart,
};
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;
use std::str::FromStr;

/// Input limits; the defaults are the v1 agent API's contract.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub max_payload_bytes: usize,
    pub max_run_id_chars: usize,
    pub max_messages: usize,
    pub max_user_text_chars: usize,
    pub max_attachments_per_message: usize,
    /// Decoded bytes of one inline (`data`) attachment; 0 refuses inline data.
    pub max_inline_attachment_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_payload_bytes: 256 * 1024,
            max_run_id_chars: 128,
            max_messages: 200,
            max_user_text_chars: 10_000,
            max_attachments_per_message: 3,
            // 256 KiB is 342 KiB as base64: a message holding one still fits a DynamoDB item
            // (400 KB); the default payload limit binds first anyway.
            max_inline_attachment_bytes: 256 * 1024,
        }
    }
}

/// The most interrupts one input may answer.
pub const MAX_RESUME_ENTRIES: usize = 64;

/// A validated run request.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInput {
    /// `None` when the client starts a new thread without naming it.
    pub thread_id: Option<ThreadId>,
    pub run_id: RunId,
    pub parent_run_id: Option<RunId>,
    /// `None` when absent or `null`: the stored state stays as it is.
    pub state: Option<Value>,
    pub messages: Vec<Message>,
    /// Frontend tools: the client runs them.
    pub tools: Vec<ClientTool>,
    pub context: Vec<ContextEntry>,
    pub forwarded_props: ForwardedProps,
    /// `protocolVersion` as the client sent it (`@ag-ui/client` 1.0 sends `"1.0"`; 0.0.x none).
    pub protocol_version: Option<String>,
    /// Answers to the interrupts that ended the thread's last run.
    pub resume: Vec<ResumeEntry>,
}

impl RunInput {
    /// Whether the client speaks AG-UI 1.0, and so parses 1.0-only fields such as
    /// `RUN_FINISHED.outcome`.
    pub fn speaks_v1(&self) -> bool {
        self.protocol_version
            .as_deref()
            .and_then(|version| version.split('.').next())
            .and_then(|major| major.parse::<u32>().ok())
            .is_some_and(|major| major >= 1)
    }
}

/// What a new run does when its thread already has an active run (double-texting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BusyThreadPolicy {
    /// Cancel the active run, wait for it to release the thread, then run.
    #[default]
    Interrupt,
    /// Refuse with `409 thread_busy`.
    Reject,
}

impl std::str::FromStr for BusyThreadPolicy {
    type Err = ();

    fn from_str(value: &str) -> Result<Self, ()> {
        match value {
            "interrupt" => Ok(Self::Interrupt),
            "reject" => Ok(Self::Reject),
            _ => Err(()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClientTool {
    pub name: String,
    pub description: String,
    /// A JSON Schema object.
    pub parameters: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContextEntry {
    pub description: String,
    pub value: String,
}

/// The parts of `forwardedProps` the server understands (the v1 agent API); the rest is ignored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ForwardedProps {
    pub device_timezone: Option<chrono_tz::Tz>,
    /// `forwardedProps.busy_thread_policy`: overrides `BUSY_THREAD_POLICY` for this request.
    pub busy_thread_policy: Option<BusyThreadPolicy>,
    /// `forwardedProps.temperature`, `top_p`, `max_tokens`, `stop`, `seed`.
    pub sampling: super::sampling::Sampling,
}

/// A client mistake, found before any streaming.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("request body is not valid JSON: {0}")]
    Syntax(String),
    #[error("RunAgentInput payload exceeds size limit of {limit} bytes")]
    TooLarge { limit: usize },
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
}

impl InputError {
    fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The offending field, where one is known.
    pub fn field(&self) -> Option<&str> {
        match self {
            InputError::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }
}

/// Tool names as OpenAI-style APIs accept them; refusing others here beats a model error later.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Parses and validates a request body.
pub fn parse_run_input(body: &[u8], limits: &Limits) -> Result<RunInput, InputError> {
    from_value(parse_json(body, limits)?, limits)
}

/// The size limit and JSON syntax, shared by every dialect: a body over the limit or that is not
/// JSON is refused before any dialect looks at it.
pub fn parse_json(body: &[u8], limits: &Limits) -> Result<Value, InputError> {
    if body.len() > limits.max_payload_bytes {
        return Err(InputError::TooLarge {
            limit: limits.max_payload_bytes,
        });
    }
    serde_json::from_slice(body).map_err(|err| InputError::Syntax(err.to_string()))
}

/// Validates a `RunAgentInput` given as JSON; other dialects build one and come through here, so
/// limits and validation apply to all alike.
pub fn from_value(value: Value, limits: &Limits) -> Result<RunInput, InputError> {
    let wire: WireInput = serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let field = if path == "." { "body".to_owned() } else { path };
        InputError::invalid(field, strip_position(&err.into_inner().to_string()))
    })?;
    wire.validate(limits)
}

/// serde_json appends "at line 1 column 42", which says nothing to an API caller.
pub(crate) fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireInput {
    #[serde(default, alias = "thread_id")]
    thread_id: Option<String>,
    #[serde(default, alias = "run_id")]
    run_id: Option<String>,
    #[serde(default, alias = "parent_run_id")]
    parent_run_id: Option<String>,
    #[serde(default)]
    state: Option<Value>,
    messages: Vec<WireMessage>,
    #[serde(default)]
    tools: Option<Vec<WireTool>>,
    #[serde(default)]
    context: Option<Vec<WireContext>>,
    #[serde(default, alias = "forwarded_props")]
    forwarded_props: Option<Value>,
    #[serde(default, alias = "protocol_version")]
    protocol_version: Option<Value>,
    #[serde(default)]
    resume: Option<Vec<ResumeEntry>>,
}

#[derive(Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage {
    User {
        id: String,
        content: Value,
        #[serde(default)]
        name: Option<String>,
    },
    Assistant {
        id: String,
        #[serde(default)]
        content: Option<Value>,
        #[serde(default, alias = "tool_calls", rename = "toolCalls")]
        tool_calls: Option<Vec<WireToolCall>>,
        #[serde(default)]
        name: Option<String>,
    },
    System {
        id: String,
        content: Value,
        #[serde(default)]
        name: Option<String>,
    },
    Developer {
        id: String,
        content: Value,
        #[serde(default)]
        name: Option<String>,
    },
    Tool {
        id: String,
        content: Value,
        #[serde(alias = "tool_call_id", rename = "toolCallId")]
        tool_call_id: String,
        #[serde(default)]
        error: Option<String>,
    },
    /// AG-UI's reasoning message; its `encryptedValue` goes back to providers that need it.
    Reasoning {
        id: String,
        #[serde(default)]
        content: Option<Value>,
        #[serde(default, alias = "encrypted_value", rename = "encryptedValue")]
        encrypted_value: Option<String>,
    },
    /// UI state, never sent to a model.
    Activity {},
}

#[derive(Deserialize)]
struct WireToolCall {
    id: String,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireTool {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
}

#[derive(Deserialize)]
struct WireContext {
    #[serde(default)]
    description: Option<String>,
    value: Value,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum WirePart {
    Text {
        text: String,
    },
    /// Before AG-UI 1.0 every attachment was a `binary` part.
    Binary {
        #[serde(alias = "mime_type", rename = "mimeType")]
        mime_type: String,
        #[serde(default)]
        url: Option<String>,
        #[serde(default)]
        data: Option<String>,
        #[serde(default)]
        filename: Option<String>,
    },
    Image(WireMedia),
    Audio(WireMedia),
    Video(WireMedia),
    Document(WireMedia),
}

#[derive(Deserialize)]
struct WireMedia {
    source: WireSource,
    #[serde(default)]
    metadata: Option<Value>,
}

#[derive(Deserialize)]
struct WireSource {
    #[serde(rename = "type")]
    kind: String,
    value: String,
    #[serde(default, alias = "mime_type", rename = "mimeType")]
    mime_type: Option<String>,
}

/// What a media part is, which its media type must agree with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MediaKind {
    Image,
    Audio,
    Video,
    Document,
}

impl MediaKind {
    /// A legacy `binary` part's kind, by its media type.
    fn of_media_type(mime_type: &str) -> Self {
        let lower = mime_type.trim().to_ascii_lowercase();
        if lower.starts_with("image/") {
            MediaKind::Image
        } else if lower.starts_with("audio/") {
            MediaKind::Audio
        } else if lower.starts_with("video/") {
            MediaKind::Video
        } else {
            MediaKind::Document
        }
    }

    fn part(self, attachment: Attachment) -> UserPart {
        match self {
            MediaKind::Image => UserPart::Image(attachment),
            MediaKind::Audio => UserPart::Audio(attachment),
            MediaKind::Video => UserPart::Video(attachment),
            MediaKind::Document => UserPart::Document(attachment),
        }
    }

    /// The top-level media type a part of this kind must have, if any.
    fn required_top_level(self) -> Option<&'static str> {
        match self {
            MediaKind::Image => Some("image"),
            MediaKind::Audio => Some("audio"),
            MediaKind::Video => Some("video"),
            MediaKind::Document => None,
        }
    }
}

/// Some clients send structured values where AG-UI expects text; keep them as JSON text.
fn value_to_text(value: Value) -> String {
    match value {
        Value::String(text) => text,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn id_error(field: &str, err: IdError) -> InputError {
    InputError::invalid(field, err.to_string())
}

impl WireInput {
    fn validate(self, limits: &Limits) -> Result<RunInput, InputError> {
        let thread_id = self
            .thread_id
            .filter(|id| !id.is_empty())
            .map(|id| ThreadId::parse(id, MAX_ID_LEN))
            .transpose()
            .map_err(|err| id_error("threadId", err))?;
        let run_id = match self.run_id.filter(|id| !id.is_empty()) {
            Some(id) => RunId::parse(id, limits.max_run_id_chars).map_err(|err| match err {
                IdError::TooLong(_) => InputError::invalid(
                    "runId",
                    format!(
                        "runId exceeds length limit of {} characters",
                        limits.max_run_id_chars
                    ),
                ),
                other => id_error("runId", other),
            })?,
            None => RunId::generate(),
        };
        let parent_run_id = self
            .parent_run_id
            .filter(|id| !id.is_empty())
            .map(|id| RunId::parse(id, MAX_ID_LEN))
            .transpose()
            .map_err(|err| id_error("parentRunId", err))?;

        if self.messages.len() > limits.max_messages {
            return Err(InputError::invalid(
                "messages",
                format!(
                    "RunAgentInput.messages exceeds limit of {}",
                    limits.max_messages
                ),
            ));
        }
        let mut seen = HashSet::new();
        let mut messages = Vec::with_capacity(self.messages.len());
        for (index, wire) in self.messages.into_iter().enumerate() {
            if let Some(message) = wire.validate(index, limits)? {
                if !seen.insert(message.id().clone()) {
                    return Err(InputError::invalid(
                        format!("messages[{index}].id"),
                        format!("duplicate message id {}", message.id()),
                    ));
                }
                messages.push(message);
            }
        }

        let mut tool_names = HashSet::new();
        let mut tools = Vec::new();
        for (index, tool) in self.tools.unwrap_or_default().into_iter().enumerate() {
            let field = format!("tools[{index}]");
            if !is_valid_tool_name(&tool.name) {
                return Err(InputError::invalid(
                    format!("{field}.name"),
                    "tool names must be 1-64 letters, digits, _ or -",
                ));
            }
            if !tool_names.insert(tool.name.clone()) {
                return Err(InputError::invalid(
                    format!("{field}.name"),
                    format!("duplicate tool name {}", tool.name),
                ));
            }
            let parameters = parse_parameters(tool.parameters, &format!("{field}.parameters"))?;
            tools.push(ClientTool {
                name: tool.name,
                description: tool.description.unwrap_or_default(),
                parameters,
            });
        }

        let resume = self.resume.unwrap_or_default();
        if resume.len() > MAX_RESUME_ENTRIES {
            return Err(InputError::invalid(
                "resume",
                format!("at most {MAX_RESUME_ENTRIES} resume entries"),
            ));
        }
        let mut answered = HashSet::new();
        for (index, entry) in resume.iter().enumerate() {
            if entry.interrupt_id.is_empty() || entry.interrupt_id.len() > MAX_ID_LEN {
                return Err(InputError::invalid(
                    format!("resume[{index}].interruptId"),
                    format!("must be 1 to {MAX_ID_LEN} bytes"),
                ));
            }
            if !answered.insert(entry.interrupt_id.as_str()) {
                return Err(InputError::invalid(
                    format!("resume[{index}].interruptId"),
                    format!("interrupt {} is answered twice", entry.interrupt_id),
                ));
            }
        }

        let context = self
            .context
            .unwrap_or_default()
            .into_iter()
            .map(|entry| ContextEntry {
                description: entry.description.unwrap_or_default(),
                value: value_to_text(entry.value),
            })
            .collect();

        Ok(RunInput {
            thread_id,
            run_id,
            parent_run_id,
            state: self.state.filter(|state| !state.is_null()),
            messages,
            tools,
            context,
            forwarded_props: parse_forwarded_props(self.forwarded_props)?,
            protocol_version: match self.protocol_version {
                None | Some(Value::Null) => None,
                Some(Value::String(version)) if version.len() <= 32 => Some(version),
                Some(_) => {
                    return Err(InputError::invalid(
                        "protocolVersion",
                        "must be a version string such as \"1.0\"",
                    ));
                }
            },
            resume,
        })
    }
}

/// The AG-Kit send-message protocol sends `parameters` as a JSON string; AG-UI sends an object.
fn parse_parameters(parameters: Option<Value>, field: &str) -> Result<Value, InputError> {
    let value = match parameters {
        None | Some(Value::Null) => {
            return Ok(serde_json::json!({"type": "object", "properties": {}}));
        }
        Some(Value::String(text)) => serde_json::from_str(&text)
            .map_err(|_| InputError::invalid(field, "a string must hold a JSON Schema object"))?,
        Some(other) => other,
    };
    if !value.is_object() {
        return Err(InputError::invalid(field, "must be a JSON Schema object"));
    }
    if jsonschema::meta::validate(&value).is_err() {
        return Err(InputError::invalid(field, "is not a valid JSON Schema"));
    }
    Ok(value)
}

fn parse_forwarded_props(props: Option<Value>) -> Result<ForwardedProps, InputError> {
    let timezone = props
        .as_ref()
        .and_then(|props| props.get("client_time").or_else(|| props.get("clientTime")))
        .and_then(|time| {
            time.get("device_timezone")
                .or_else(|| time.get("deviceTimezone"))
        });
    let device_timezone = match timezone {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(chrono_tz::Tz::from_str(name).map_err(|_| {
            InputError::invalid(
                "forwardedProps.client_time.device_timezone",
                "invalid client_time.device_timezone",
            )
        })?),
        Some(_) => {
            return Err(InputError::invalid(
                "forwardedProps.client_time.device_timezone",
                "invalid client_time.device_timezone",
            ));
        }
    };
    let busy_thread_policy = match props
        .as_ref()
        .and_then(|props| props.get("busy_thread_policy"))
    {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_str()
                .and_then(|text| text.parse().ok())
                .ok_or_else(|| {
                    InputError::invalid(
                        "forwardedProps.busy_thread_policy",
                        "must be \"interrupt\" or \"reject\"",
                    )
                })?,
        ),
    };
    Ok(ForwardedProps {
        device_timezone,
        busy_thread_policy,
        sampling: super::sampling::Sampling::from_fields(props.as_ref(), "forwardedProps")?,
    })
}

fn parse_message_id(id: String, index: usize) -> Result<MessageId, InputError> {
    MessageId::parse(id, MAX_ID_LEN).map_err(|err| id_error(&format!("messages[{index}].id"), err))
}

impl WireMessage {
    fn validate(self, index: usize, limits: &Limits) -> Result<Option<Message>, InputError> {
        let field = |name: &str| format!("messages[{index}].{name}");
        Ok(Some(match self {
            WireMessage::User { id, content, name } => Message::User {
                id: parse_message_id(id, index)?,
                content: parse_user_content(content, &field("content"), limits)?,
                name,
            },
            WireMessage::Assistant {
                id,
                content,
                tool_calls,
                name,
            } => {
                let mut calls = Vec::new();
                for (call_index, call) in tool_calls.unwrap_or_default().into_iter().enumerate() {
                    let call_field = field(&format!("toolCalls[{call_index}]"));
                    let call_id = ToolCallId::parse(call.id, MAX_ID_LEN)
                        .map_err(|err| id_error(&format!("{call_field}.id"), err))?;
                    if !is_valid_tool_name(&call.function.name) {
                        return Err(InputError::invalid(
                            format!("{call_field}.function.name"),
                            "tool names must be 1-64 letters, digits, _ or -",
                        ));
                    }
                    let arguments = call
                        .function
                        .arguments
                        .map(value_to_text)
                        .unwrap_or_default();
                    calls.push(ToolCall::new(call_id, call.function.name, arguments));
                }
                Message::Assistant {
                    id: parse_message_id(id, index)?,
                    content: content.map(value_to_text).filter(|text| !text.is_empty()),
                    tool_calls: calls,
                    name,
                }
            }
            WireMessage::System { id, content, name } => Message::System {
                id: parse_message_id(id, index)?,
                content: value_to_text(content),
                name,
            },
            WireMessage::Developer { id, content, name } => Message::Developer {
                id: parse_message_id(id, index)?,
                content: value_to_text(content),
                name,
            },
            WireMessage::Tool {
                id,
                content,
                tool_call_id,
                error,
            } => Message::Tool {
                id: parse_message_id(id, index)?,
                tool_call_id: ToolCallId::parse(tool_call_id, MAX_ID_LEN)
                    .map_err(|err| id_error(&field("toolCallId"), err))?,
                content: value_to_text(content),
                error: error.filter(|error| !error.is_empty()),
            },
            WireMessage::Reasoning {
                id,
                content,
                encrypted_value,
            } => Message::Reasoning {
                id: parse_message_id(id, index)?,
                content: content.map(value_to_text).unwrap_or_default(),
                encrypted_value: encrypted_value.filter(|value| !value.is_empty()),
            },
            WireMessage::Activity {} => return Ok(None),
        }))
    }
}

fn parse_user_content(
    content: Value,
    field: &str,
    limits: &Limits,
) -> Result<UserContent, InputError> {
    let text_limit_error =
        || InputError::invalid(field, "RunAgentInput user message text exceeds limit");
    match content {
        Value::String(text) => {
            if text.chars().count() > limits.max_user_text_chars {
                return Err(text_limit_error());
            }
            Ok(UserContent::Text(text))
        }
        Value::Array(items) => {
            let mut parts = Vec::with_capacity(items.len());
            let mut text_chars = 0;
            let mut attachments = 0;
            for (index, item) in items.into_iter().enumerate() {
                let part_field = format!("{field}[{index}]");
                let wire: WirePart = serde_json::from_value(item).map_err(|err| {
                    InputError::invalid(&part_field, strip_position(&err.to_string()))
                })?;
                let part = match wire {
                    WirePart::Text { text } => {
                        text_chars += text.chars().count();
                        UserPart::Text { text }
                    }
                    WirePart::Binary {
                        mime_type,
                        url,
                        data,
                        filename,
                    } => {
                        let kind = MediaKind::of_media_type(&mime_type);
                        let source = match (data, url) {
                            (Some(data), _) => WireSource {
                                kind: "data".to_owned(),
                                value: data,
                                mime_type: Some(mime_type),
                            },
                            (None, Some(url)) => WireSource {
                                kind: "url".to_owned(),
                                value: url,
                                mime_type: Some(mime_type),
                            },
                            (None, None) => {
                                return Err(InputError::invalid(
                                    &part_field,
                                    "binary content requires url or data",
                                ));
                            }
                        };
                        let filename = check_filename(filename, &format!("{part_field}.filename"))?;
                        media_part(kind, source, filename, &part_field, limits)?
                    }
                    WirePart::Image(media) => {
                        media.into_part(MediaKind::Image, &part_field, limits)?
                    }
                    WirePart::Audio(media) => {
                        media.into_part(MediaKind::Audio, &part_field, limits)?
                    }
                    WirePart::Video(media) => {
                        media.into_part(MediaKind::Video, &part_field, limits)?
                    }
                    WirePart::Document(media) => {
                        media.into_part(MediaKind::Document, &part_field, limits)?
                    }
                };
                if part.attachment().is_some() {
                    attachments += 1;
                    if attachments > limits.max_attachments_per_message {
                        return Err(InputError::invalid(field, "Too many attachments"));
                    }
                }
                parts.push(part);
            }
            if text_chars > limits.max_user_text_chars {
                return Err(text_limit_error());
            }
            Ok(UserContent::Parts(parts))
        }
        _ => Err(InputError::invalid(
            field,
            "must be a string or an array of content parts",
        )),
    }
}

impl WireMedia {
    fn into_part(
        self,
        kind: MediaKind,
        field: &str,
        limits: &Limits,
    ) -> Result<UserPart, InputError> {
        let filename = match self.metadata.as_ref().and_then(|m| m.get("filename")) {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => {
                check_filename(Some(name.clone()), &format!("{field}.metadata.filename"))?
            }
            Some(_) => {
                return Err(InputError::invalid(
                    format!("{field}.metadata.filename"),
                    "must be a string",
                ));
            }
        };
        media_part(kind, self.source, filename, field, limits)
    }
}

/// The longest file name kept.
const MAX_FILENAME_CHARS: usize = 255;

fn check_filename(filename: Option<String>, field: &str) -> Result<Option<String>, InputError> {
    match filename.filter(|name| !name.is_empty()) {
        Some(name)
            if name.chars().count() > MAX_FILENAME_CHARS || name.chars().any(char::is_control) =>
        {
            Err(InputError::invalid(
                field,
                format!(
                    "a file name has at most {MAX_FILENAME_CHARS} characters and no control characters"
                ),
            ))
        }
        other => Ok(other),
    }
}

/// A media part from its source: an http(s) URL (never fetched), inline base64 data, or a
/// `data:` URL, which becomes inline data.
fn media_part(
    kind: MediaKind,
    source: WireSource,
    filename: Option<String>,
    field: &str,
    limits: &Limits,
) -> Result<UserPart, InputError> {
    let source_field = format!("{field}.source");
    let source = match source.kind.as_str() {
        "url" if source.value.starts_with("data:") => {
            let (mime_type, data) = split_data_url(&source.value).ok_or_else(|| {
                InputError::invalid(
                    format!("{source_field}.value"),
                    "a data: URL must be base64: data:<mimeType>;base64,<data>",
                )
            })?;
            inline_data(data.to_owned(), mime_type.to_owned(), &source_field, limits)?
        }
        "url" => {
            let url = source.value;
            let is_web_url = url.starts_with("https://") || url.starts_with("http://");
            if !is_web_url || url.len() > 4096 || url.chars().any(char::is_whitespace) {
                return Err(InputError::invalid(
                    field,
                    "attachment url must be an http(s) URL",
                ));
            }
            if let Some(mime_type) = &source.mime_type {
                check_media_type(mime_type, &format!("{source_field}.mimeType"))?;
            }
            PartSource::Url {
                value: url,
                mime_type: source.mime_type,
            }
        }
        "data" => {
            let mime_type = source.mime_type.ok_or_else(|| {
                InputError::invalid(
                    format!("{source_field}.mimeType"),
                    "a data source needs its mimeType",
                )
            })?;
            inline_data(source.value, mime_type, &source_field, limits)?
        }
        "file" => {
            return Err(InputError::invalid(
                format!("{source_field}.type"),
                "file sources (provider file handles) are not supported: send the bytes as data or a url",
            ));
        }
        other => {
            return Err(InputError::invalid(
                format!("{source_field}.type"),
                format!("unknown source type {other:?}: expected url or data"),
            ));
        }
    };
    let attachment = Attachment {
        source,
        metadata: filename.map(|filename| PartMetadata {
            filename: Some(filename),
        }),
    };
    if let (Some(top), Some(media_type)) = (kind.required_top_level(), attachment.media_type())
        && media_type.split('/').next() != Some(top)
    {
        return Err(InputError::invalid(
            format!("{source_field}.mimeType"),
            format!("a {top} part needs a {top}/* mimeType, not {media_type}"),
        ));
    }
    Ok(kind.part(attachment))
}

/// `data:<mimeType>;base64,<data>` into its media type and data.
fn split_data_url(url: &str) -> Option<(&str, &str)> {
    let (head, data) = url.strip_prefix("data:")?.split_once(',')?;
    let mime_type = head.strip_suffix(";base64")?;
    Some((mime_type, data))
}

fn inline_data(
    value: String,
    mime_type: String,
    field: &str,
    limits: &Limits,
) -> Result<PartSource, InputError> {
    check_media_type(&mime_type, &format!("{field}.mimeType"))?;
    let limit = limits.max_inline_attachment_bytes;
    let too_large = || {
        InputError::invalid(
            format!("{field}.value"),
            format!("inline attachment data exceeds the limit of {limit} bytes"),
        )
    };
    // Checked before decoding, so an oversized value costs no allocation.
    if value.len() > limit.div_ceil(3).saturating_mul(4) {
        return Err(too_large());
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&value)
        .map_err(|_| InputError::invalid(format!("{field}.value"), "must be standard base64"))?;
    if bytes.is_empty() {
        return Err(InputError::invalid(
            format!("{field}.value"),
            "inline data is empty",
        ));
    }
    if bytes.len() > limit {
        return Err(too_large());
    }
    Ok(PartSource::Data { value, mime_type })
}

/// A media type as RFC 6838 names them (`type/subtype`, parameters allowed after `;`): what
/// providers are told the bytes are, so nothing else passes.
fn check_media_type(mime_type: &str, field: &str) -> Result<(), InputError> {
    let token = |text: &str| {
        !text.is_empty()
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&^_.+-".contains(c))
    };
    let (essence, parameters) = mime_type.split_once(';').unwrap_or((mime_type, ""));
    let valid = mime_type.len() <= 255
        && essence
            .trim()
            .split_once('/')
            .is_some_and(|(top, sub)| token(top) && token(sub))
        && parameters
            .chars()
            .all(|c| c.is_ascii() && !c.is_ascii_control());
    if valid {
        Ok(())
    } else {
        Err(InputError::invalid(
            field,
            "must be a media type such as image/png",
        ))
    }
}

#[cfg(test)]
#[path = "input_tests.rs"]
mod tests;
