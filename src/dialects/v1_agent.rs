//! The v1 agent API's `POST /api/v1/agent/runs` body, parsed strictly (for that route only: `input.rs`
//! stays lenient for HttpAgent and CopilotKit), and the bodies of its answer and of
//! `GET /api/v1/agent/history`. Check order and our own messages: see [`parse_run_request`].

use crate::protocol::ids::{IdError, MessageId, RunId, ThreadId};
use crate::protocol::input::{self, InputError, Limits, RunInput};
use crate::protocol::message::{Message, PartSource, UserContent, UserPart};
use chrono::{DateTime, FixedOffset, NaiveDate, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::str::FromStr;

/// Refusal messages. The first group is the contract's, word for word; the second is ours, for cases
/// the contract does not name.
pub(crate) mod msg {
    pub(crate) const TOO_LARGE: &str = "RunAgentInput payload exceeds size limit";
    pub(crate) const THREAD_ID_NOT_UUID: &str = "threadId must be a valid UUID";
    pub(crate) const RUN_ID_TOO_LONG: &str = "runId exceeds length limit";
    pub(crate) const TOO_MANY_MESSAGES: &str = "RunAgentInput.messages exceeds limit";
    pub(crate) const USER_TEXT_TOO_LONG: &str = "RunAgentInput user message text exceeds limit";
    pub(crate) const INVALID_FORWARDED_PROPS: &str = "invalid RunAgentInput.forwardedProps";
    pub(crate) const NOT_ONE_USER_MESSAGE: &str =
        "RunAgentInput.messages must contain exactly one user message";
    pub(crate) const FIRST_NOT_USER: &str = "RunAgentInput.messages[0].role must be user";
    pub(crate) const BINARY_NOT_IMAGE: &str = "binary content requires image mimeType";
    pub(crate) const BINARY_NO_URL: &str = "binary content requires url";
    pub(crate) const BINARY_DATA: &str = "binary content data is not allowed";
    pub(crate) const TOO_MANY_ATTACHMENTS: &str = "Too many attachments";
    pub(crate) const INVALID_DEVICE_TIMEZONE: &str = "invalid client_time.device_timezone";
    pub(crate) const INVALID_CLIENT_NOW: &str = "invalid client_time.client_now_iso";
    pub(crate) const INVALID_CLIENT_EPOCH_MS: &str = "invalid client_time.client_epoch_ms";

    // Ours.
    pub(crate) const NOT_JSON: &str = "RunAgentInput body is not valid JSON";
    pub(crate) const NOT_OBJECT: &str = "RunAgentInput body must be a JSON object";
    pub(crate) const THREAD_ID_REQUIRED: &str = "threadId is required";
    pub(crate) const RUN_ID_REQUIRED: &str = "runId is required";
    pub(crate) const RUN_ID_NOT_STRING: &str = "runId must be a string";
    pub(crate) const MESSAGES_REQUIRED: &str = "RunAgentInput.messages is required";
    pub(crate) const MESSAGES_NOT_ARRAY: &str = "RunAgentInput.messages must be an array";
    /// A binary part's url that `/api/v1/agent/attachments` did not sign for this caller (or
    /// whose image was never uploaded).
    pub(crate) const UNSIGNED_URL: &str = "binary content requires signed url";
    pub(crate) const ATTACHMENT_TOO_LARGE: &str = "binary content exceeds size limit";
    pub(crate) const ATTACHMENT_EMPTY: &str = "binary content is empty";

    /// The contract's messages that `input.rs` can also produce (with a field prefix or a suffix).
    pub(super) const SHARED_WITH_INPUT: [&str; 5] = [
        RUN_ID_TOO_LONG,
        TOO_MANY_MESSAGES,
        USER_TEXT_TOO_LONG,
        TOO_MANY_ATTACHMENTS,
        INVALID_DEVICE_TIMEZONE,
    ];
}

/// Image types a binary part may carry: what the model providers take as images.
pub(crate) const ACCEPTED_IMAGE_TYPES: [&str; 4] =
    ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// A refused request; `Display` is the contract's message exactly (or ours, see [`msg`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum V1AgentError {
    #[error("{}", msg::TOO_LARGE)]
    TooLarge,
    #[error("{0}")]
    Invalid(String),
}

impl V1AgentError {
    fn invalid(message: impl Into<String>) -> Self {
        V1AgentError::Invalid(message.into())
    }

    /// Whether the body was not JSON at all, which house style answers with 400 (not 422).
    pub(crate) fn is_syntax(&self) -> bool {
        matches!(self, V1AgentError::Invalid(message) if message == msg::NOT_JSON)
    }
}

/// A request that passed every the v1 agent API check.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct V1RunRequest {
    /// The usual typed input; `thread_id` is always `Some` (a lowercase UUID).
    pub input: RunInput,
    /// `forwardedProps.agent_type`, never `memory`; whether it is registered is the caller's check.
    pub agent_type: String,
    pub client_time: Option<ClientTime>,
    /// Every url-sourced image part, in message and part order.
    pub attachments: Vec<AttachmentRef>,
}

/// `forwardedProps.client_time`: the device's clock and zone when the request was made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClientTime {
    pub device_timezone: chrono_tz::Tz,
    pub client_now: DateTime<FixedOffset>,
    pub client_epoch_ms: i64,
}

/// A binary part's url, where it sits in `input.messages` (indexes as parsed into RunInput).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AttachmentRef {
    pub message: usize,
    pub part: usize,
    /// Lowercase, without parameters: one of [`ACCEPTED_IMAGE_TYPES`].
    pub mime_type: String,
    pub url: String,
}

/// Parses a v1 agent API run request. Checks run in the contract's table order, and the first failure is
/// the answer:
///
/// 1. body size (`limits.max_payload_bytes`) → `TooLarge`;
/// 2. JSON syntax, then a top-level object (ours: [`msg::NOT_JSON`], [`msg::NOT_OBJECT`]);
/// 3. snake_case aliases renamed to camelCase; a key given both ways is refused (ours:
///    "`<camel>` and `<snake>` must not both be given");
/// 4. `threadId`: present (ours), a hyphenated UUID of either case, kept lowercase;
/// 5. `runId`: present and a string (ours), at most `limits.max_run_id_chars`, then the id
///    alphabet of `ids.rs` (ours: "runId may contain only letters, ...");
/// 6. `messages`: present and an array (ours), at most `limits.max_messages`;
/// 7. every user message's text (string content, or the sum of its text parts);
/// 8. `forwardedProps`: an object holding only `agent_type` (a non-empty string, not `memory`
///    in any case) and optionally `client_time` (`null` counts as absent), whose fields are
///    checked in the order of [`parse_client_time`];
/// 9. exactly one user message, then `messages[0]` is it;
/// 10. per part of the user message: `binary` and AG-UI 1.0 `image` parts need a type in
///     [`ACCEPTED_IMAGE_TYPES`], then a url, then no data (a `data` field, a `data` source or a
///     `data:` url); audio, video and document parts fail the first check; then at most
///     `limits.max_attachments_per_message` of them;
/// 11. everything else `input::from_value` checks (ids, tools, url scheme, ...): its message,
///     field first, unless it is one of the contract's.
pub(crate) fn parse_run_request(
    body: &[u8],
    limits: &Limits,
) -> Result<V1RunRequest, V1AgentError> {
    if body.len() > limits.max_payload_bytes {
        return Err(V1AgentError::TooLarge);
    }
    let value: Value =
        serde_json::from_slice(body).map_err(|_| V1AgentError::invalid(msg::NOT_JSON))?;
    let Value::Object(mut body) = value else {
        return Err(V1AgentError::invalid(msg::NOT_OBJECT));
    };
    normalise_aliases(&mut body)?;
    check_thread_id(&mut body)?;
    check_run_id(&body, limits)?;
    let messages = check_messages(&body, limits)?;
    check_user_text(messages, limits)?;
    let (agent_type, client_time) = check_forwarded_props(body.get("forwardedProps"))?;
    check_user_position(messages)?;
    for message in messages.iter().filter(|message| is_user(message)) {
        check_parts(message, limits)?;
    }
    let input = input::from_value(Value::Object(body), limits).map_err(from_input_error)?;
    let attachments = attachment_refs(&input);
    Ok(V1RunRequest {
        input,
        agent_type,
        client_time,
        attachments,
    })
}

/// Checks `client_time` (the run body's, or the history GET's decoded query parameter):
/// `device_timezone`, then `client_now_iso`, then `client_epoch_ms`, each required; other keys
/// are ignored. Not an object → the contract's forwardedProps message.
pub(crate) fn parse_client_time(value: &Value) -> Result<ClientTime, V1AgentError> {
    let Value::Object(time) = value else {
        return Err(V1AgentError::invalid(msg::INVALID_FORWARDED_PROPS));
    };
    let device_timezone = time
        .get("device_timezone")
        .and_then(Value::as_str)
        .and_then(|name| chrono_tz::Tz::from_str(name).ok())
        .ok_or_else(|| V1AgentError::invalid(msg::INVALID_DEVICE_TIMEZONE))?;
    // RFC 3339 always carries an offset (`Z` or ±hh:mm), so a parse proves one is there.
    let client_now = time
        .get("client_now_iso")
        .and_then(Value::as_str)
        .and_then(|text| DateTime::parse_from_rfc3339(text).ok())
        .ok_or_else(|| V1AgentError::invalid(msg::INVALID_CLIENT_NOW))?;
    // `as_i64` is `None` for 1.5 and for 1e3 alike: JSON numbers with a fraction or exponent
    // are not integer milliseconds.
    let client_epoch_ms = time
        .get("client_epoch_ms")
        .and_then(Value::as_i64)
        .filter(|ms| DateTime::from_timestamp_millis(*ms).is_some())
        .ok_or_else(|| V1AgentError::invalid(msg::INVALID_CLIENT_EPOCH_MS))?;
    Ok(ClientTime {
        device_timezone,
        client_now,
        client_epoch_ms,
    })
}

/// Replaces the url of the part `at` points to (the server swaps the signed URL for its internal
/// `s3://` path). `false`, changing nothing, when that part is gone or no longer holds `at.url`,
/// so a stale reference never overwrites another attachment.
pub(crate) fn set_attachment_url(input: &mut RunInput, at: &AttachmentRef, url: String) -> bool {
    let Some(Message::User {
        content: UserContent::Parts(parts),
        ..
    }) = input.messages.get_mut(at.message)
    else {
        return false;
    };
    let Some(UserPart::Image(attachment)) = parts.get_mut(at.part) else {
        return false;
    };
    match &mut attachment.source {
        PartSource::Url { value, .. } if *value == at.url => {
            *value = url;
            true
        }
        _ => false,
    }
}

const TOP_LEVEL_ALIASES: [(&str, &str); 5] = [
    ("thread_id", "threadId"),
    ("run_id", "runId"),
    ("parent_run_id", "parentRunId"),
    ("forwarded_props", "forwardedProps"),
    ("protocol_version", "protocolVersion"),
];
const MESSAGE_ALIASES: [(&str, &str); 3] = [
    ("tool_calls", "toolCalls"),
    ("tool_call_id", "toolCallId"),
    ("encrypted_value", "encryptedValue"),
];
const MIME_ALIAS: [(&str, &str); 1] = [("mime_type", "mimeType")];

/// Renames snake_case keys where AG-UI has camelCase ones, only at the levels the protocol
/// defines: `state`, tool schemas and `forwardedProps` are the client's own and keep their keys.
fn normalise_aliases(body: &mut Map<String, Value>) -> Result<(), V1AgentError> {
    rename(body, &TOP_LEVEL_ALIASES)?;
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return Ok(());
    };
    for message in messages.iter_mut().filter_map(Value::as_object_mut) {
        rename(message, &MESSAGE_ALIASES)?;
        if let Some(Value::Array(calls)) = message.get_mut("toolCalls") {
            for call in calls.iter_mut().filter_map(Value::as_object_mut) {
                rename(call, &MESSAGE_ALIASES)?;
            }
        }
        if let Some(Value::Array(parts)) = message.get_mut("content") {
            for part in parts.iter_mut().filter_map(Value::as_object_mut) {
                rename(part, &MIME_ALIAS)?;
                if let Some(Value::Object(source)) = part.get_mut("source") {
                    rename(source, &MIME_ALIAS)?;
                }
            }
        }
    }
    Ok(())
}

fn rename(map: &mut Map<String, Value>, aliases: &[(&str, &str)]) -> Result<(), V1AgentError> {
    for (snake, camel) in aliases {
        if let Some(value) = map.remove(*snake) {
            // Two values for one field: picking either would silently drop the other.
            if map.contains_key(*camel) {
                return Err(V1AgentError::invalid(format!(
                    "{camel} and {snake} must not both be given"
                )));
            }
            map.insert((*camel).to_owned(), value);
        }
    }
    Ok(())
}

/// Hyphenated 8-4-4-4-12 hex, either case (the form `crypto.randomUUID()` and uuid libraries
/// print); braced, URN and unhyphenated forms are refused.
fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.bytes().enumerate().all(|(at, byte)| match at {
            8 | 13 | 18 | 23 => byte == b'-',
            _ => byte.is_ascii_hexdigit(),
        })
}

fn check_thread_id(body: &mut Map<String, Value>) -> Result<(), V1AgentError> {
    match body.get_mut("threadId") {
        None | Some(Value::Null) => Err(V1AgentError::invalid(msg::THREAD_ID_REQUIRED)),
        Some(Value::String(id)) if is_uuid(id) => {
            // One UUID is one thread whatever case the client printed it in.
            id.make_ascii_lowercase();
            Ok(())
        }
        Some(_) => Err(V1AgentError::invalid(msg::THREAD_ID_NOT_UUID)),
    }
}

fn check_run_id(body: &Map<String, Value>, limits: &Limits) -> Result<(), V1AgentError> {
    match body.get("runId") {
        None | Some(Value::Null) => Err(V1AgentError::invalid(msg::RUN_ID_REQUIRED)),
        Some(Value::String(id)) => match RunId::parse(id.as_str(), limits.max_run_id_chars) {
            Ok(_) => Ok(()),
            Err(IdError::Empty) => Err(V1AgentError::invalid(msg::RUN_ID_REQUIRED)),
            Err(IdError::TooLong(_)) => Err(V1AgentError::invalid(msg::RUN_ID_TOO_LONG)),
            Err(err) => Err(V1AgentError::invalid(format!("runId {err}"))),
        },
        Some(_) => Err(V1AgentError::invalid(msg::RUN_ID_NOT_STRING)),
    }
}

fn check_messages<'a>(
    body: &'a Map<String, Value>,
    limits: &Limits,
) -> Result<&'a [Value], V1AgentError> {
    match body.get("messages") {
        None | Some(Value::Null) => Err(V1AgentError::invalid(msg::MESSAGES_REQUIRED)),
        Some(Value::Array(messages)) if messages.len() > limits.max_messages => {
            Err(V1AgentError::invalid(msg::TOO_MANY_MESSAGES))
        }
        Some(Value::Array(messages)) => Ok(messages),
        Some(_) => Err(V1AgentError::invalid(msg::MESSAGES_NOT_ARRAY)),
    }
}

fn is_user(message: &Value) -> bool {
    message.get("role").and_then(Value::as_str) == Some("user")
}

/// Counted as `input.rs` counts (characters, text parts summed), so both agree on the limit.
fn check_user_text(messages: &[Value], limits: &Limits) -> Result<(), V1AgentError> {
    for message in messages.iter().filter(|message| is_user(message)) {
        let chars: usize = match message.get("content") {
            Some(Value::String(text)) => text.chars().count(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .map(|text| text.chars().count())
                .sum(),
            _ => 0,
        };
        if chars > limits.max_user_text_chars {
            return Err(V1AgentError::invalid(msg::USER_TEXT_TOO_LONG));
        }
    }
    Ok(())
}

fn check_forwarded_props(
    props: Option<&Value>,
) -> Result<(String, Option<ClientTime>), V1AgentError> {
    let refused = || V1AgentError::invalid(msg::INVALID_FORWARDED_PROPS);
    let Some(Value::Object(props)) = props else {
        return Err(refused());
    };
    if props
        .keys()
        .any(|key| key != "agent_type" && key != "client_time")
    {
        return Err(refused());
    }
    let agent_type = props
        .get("agent_type")
        .and_then(Value::as_str)
        .filter(|agent| !agent.trim().is_empty())
        .ok_or_else(refused)?;
    // `memory` is the internal mode automated tasks run in; any spelling of it is refused here.
    if agent_type.trim().eq_ignore_ascii_case("memory") {
        return Err(refused());
    }
    let client_time = match props.get("client_time") {
        None | Some(Value::Null) => None,
        Some(time) => Some(parse_client_time(time)?),
    };
    Ok((agent_type.to_owned(), client_time))
}

fn check_user_position(messages: &[Value]) -> Result<(), V1AgentError> {
    if messages.iter().filter(|message| is_user(message)).count() != 1 {
        return Err(V1AgentError::invalid(msg::NOT_ONE_USER_MESSAGE));
    }
    if !messages.first().is_some_and(is_user) {
        return Err(V1AgentError::invalid(msg::FIRST_NOT_USER));
    }
    Ok(())
}

/// The attachment parts of one user message; text and unknown part types are left to `input.rs`.
fn check_parts(message: &Value, limits: &Limits) -> Result<(), V1AgentError> {
    let Some(Value::Array(parts)) = message.get("content") else {
        return Ok(());
    };
    let mut attachments = 0;
    for part in parts {
        match part.get("type").and_then(Value::as_str) {
            Some("binary") => {
                let has_data = part.get("data").is_some_and(|data| !data.is_null());
                check_media(part.get("mimeType"), part.get("url"), has_data)?;
            }
            Some("image") => {
                let source = part.get("source");
                let kind = source.and_then(|s| s.get("type")).and_then(Value::as_str);
                let value = source.and_then(|s| s.get("value"));
                let url = if kind == Some("url") { value } else { None };
                check_media(
                    source.and_then(|s| s.get("mimeType")),
                    url,
                    kind == Some("data"),
                )?;
            }
            Some("audio" | "video" | "document") => {
                return Err(V1AgentError::invalid(msg::BINARY_NOT_IMAGE));
            }
            _ => continue,
        }
        attachments += 1;
    }
    if attachments > limits.max_attachments_per_message {
        return Err(V1AgentError::invalid(msg::TOO_MANY_ATTACHMENTS));
    }
    Ok(())
}

/// Type, then url, then data: the contract's table order.
fn check_media(
    mime_type: Option<&Value>,
    url: Option<&Value>,
    has_data: bool,
) -> Result<(), V1AgentError> {
    let accepted = mime_type.and_then(Value::as_str).is_some_and(|mime| {
        let essence = mime.split(';').next().unwrap_or(mime).trim();
        ACCEPTED_IMAGE_TYPES
            .iter()
            .any(|accepted| essence.eq_ignore_ascii_case(accepted))
    });
    if !accepted {
        return Err(V1AgentError::invalid(msg::BINARY_NOT_IMAGE));
    }
    let Some(url) = url.and_then(Value::as_str).filter(|url| !url.is_empty()) else {
        return Err(V1AgentError::invalid(msg::BINARY_NO_URL));
    };
    // `input.rs` turns a `data:` url into inline data, which this route refuses.
    let data_url = url
        .get(..5)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("data:"));
    if has_data || data_url {
        return Err(V1AgentError::invalid(msg::BINARY_DATA));
    }
    Ok(())
}

fn from_input_error(err: InputError) -> V1AgentError {
    match &err {
        InputError::TooLarge { .. } | InputError::HistoryTooLarge { .. } => V1AgentError::TooLarge,
        InputError::Syntax(_) => V1AgentError::invalid(msg::NOT_JSON),
        InputError::Invalid { message, .. } => {
            // The contract's message alone, without input.rs's field prefix or "of 200" suffix.
            match msg::SHARED_WITH_INPUT
                .iter()
                .find(|known| message.starts_with(**known))
            {
                Some(known) => V1AgentError::invalid(*known),
                None => V1AgentError::invalid(err.to_string()),
            }
        }
    }
}

fn attachment_refs(input: &RunInput) -> Vec<AttachmentRef> {
    let mut refs = Vec::new();
    for (message, parsed) in input.messages.iter().enumerate() {
        let Message::User {
            content: UserContent::Parts(parts),
            ..
        } = parsed
        else {
            continue;
        };
        for (part, parsed) in parts.iter().enumerate() {
            if let UserPart::Image(attachment) = parsed
                && let PartSource::Url { value, .. } = &attachment.source
            {
                refs.push(AttachmentRef {
                    message,
                    part,
                    mime_type: attachment.media_type().unwrap_or_default(),
                    url: value.clone(),
                });
            }
        }
    }
    refs
}

/// `TaskAcceptedResponse`: the answer to an accepted run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskAccepted {
    pub task_id: String,
    pub thread_id: ThreadId,
    pub run_id: RunId,
    /// Whether the run created its thread.
    pub created: bool,
}

/// `HistorySnapshotResponse`: one day of a thread's visible messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HistorySnapshot {
    pub scope: HistoryScope,
    pub thread_id: Option<ThreadId>,
    #[serde(with = "iso_day")]
    pub day: Option<NaiveDate>,
    pub has_more: bool,
    pub messages: Vec<HistoryMessage>,
}

impl HistorySnapshot {
    pub(crate) fn new(
        thread_id: Option<ThreadId>,
        day: Option<NaiveDate>,
        has_more: bool,
        messages: Vec<HistoryMessage>,
    ) -> Self {
        Self {
            scope: HistoryScope::HistoryDay,
            thread_id,
            day,
            has_more,
            messages,
        }
    }

    /// No thread, or a thread with nothing before the requested day.
    pub(crate) fn empty(thread_id: Option<ThreadId>) -> Self {
        Self::new(thread_id, None, false, Vec::new())
    }
}

/// The contract's only scope; a type so no other value can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) enum HistoryScope {
    #[default]
    #[serde(rename = "history_day")]
    HistoryDay,
}

/// `role: "user"`; a field of its own so the key comes where the contract puts it (after `seq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) enum UserRole {
    #[default]
    #[serde(rename = "user")]
    User,
}

/// `role: "assistant"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) enum AssistantRole {
    #[default]
    #[serde(rename = "assistant")]
    Assistant,
}

/// A message as `/history` shows it. Untagged, not tagged by `role`, because serde writes a tag
/// first and the contract's key order is id, seq, role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum HistoryMessage {
    User {
        id: MessageId,
        seq: u64,
        role: UserRole,
        content: String,
        attachments: Vec<HistoryAttachment>,
        #[serde(with = "utc_seconds")]
        timestamp: DateTime<Utc>,
    },
    Assistant {
        id: MessageId,
        seq: u64,
        role: AssistantRole,
        content: String,
        /// Always `null` from [`history_message`]: we do not compile `agent_output.ui_hints`.
        /// Sent even when `null`, as the contract's type has no `?`.
        ui_schema: Option<Value>,
        #[serde(with = "utc_seconds")]
        timestamp: DateTime<Utc>,
    },
}

impl HistoryMessage {
    /// A user message's attachments (empty for an assistant's), for re-signing their urls.
    pub(crate) fn attachments_mut(&mut self) -> &mut [HistoryAttachment] {
        match self {
            HistoryMessage::User { attachments, .. } => attachments,
            HistoryMessage::Assistant { .. } => &mut [],
        }
    }

    /// The urls of [`Self::attachments_mut`], for a caller that only re-signs.
    pub(crate) fn attachment_urls_mut(&mut self) -> impl Iterator<Item = &mut String> {
        self.attachments_mut()
            .iter_mut()
            .map(|attachment| &mut attachment.url)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HistoryAttachment {
    pub mime_type: String,
    pub url: String,
}

/// A stored message as `/history` shows it, or `None` for what it hides: tool, system,
/// developer and reasoning messages, assistant messages without text (tool calls only), and a
/// time chrono cannot represent. User text parts are joined with "\n"; image parts with a url
/// become attachments, url as stored (the caller re-signs through
/// [`HistoryMessage::attachments_mut`]); an image stored without a media type is `image/*`.
/// Inline (`data`) images, which this route never stores, are left out.
pub(crate) fn history_message(seq: u64, at_ms: i64, message: &Message) -> Option<HistoryMessage> {
    let timestamp = DateTime::from_timestamp_millis(at_ms)?;
    match message {
        Message::User { id, content, .. } => {
            let attachments = match content {
                UserContent::Text(_) => Vec::new(),
                UserContent::Parts(parts) => parts
                    .iter()
                    .filter_map(|part| match part {
                        UserPart::Image(attachment) => match &attachment.source {
                            PartSource::Url { value, .. } => Some(HistoryAttachment {
                                mime_type: attachment
                                    .media_type()
                                    .unwrap_or_else(|| "image/*".to_owned()),
                                url: value.clone(),
                            }),
                            PartSource::Data { .. } | PartSource::File { .. } => None,
                        },
                        _ => None,
                    })
                    .collect(),
            };
            Some(HistoryMessage::User {
                id: id.clone(),
                seq,
                role: UserRole::User,
                content: content.text(),
                attachments,
                timestamp,
            })
        }
        Message::Assistant {
            id,
            content: Some(text),
            ..
        } if !text.is_empty() => Some(HistoryMessage::Assistant {
            id: id.clone(),
            seq,
            role: AssistantRole::Assistant,
            content: text.clone(),
            ui_schema: None,
            timestamp,
        }),
        _ => None,
    }
}

/// ISO-8601 UTC to the whole second with `Z` ("2026-03-15T10:00:00Z"), as the contract shows.
mod utc_seconds {
    use super::*;

    pub(super) fn serialize<S: Serializer>(at: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&at.to_rfc3339_opts(SecondsFormat::Secs, true))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&text)
            .map(|at| at.with_timezone(&Utc))
            .map_err(serde::de::Error::custom)
    }
}

/// "YYYY-MM-DD" or null; by hand because chrono's `serde` feature is not enabled.
mod iso_day {
    use super::*;

    pub(super) fn serialize<S: Serializer>(
        day: &Option<NaiveDate>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match day {
            Some(day) => s.serialize_str(&day.format("%Y-%m-%d").to_string()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<NaiveDate>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|text| NaiveDate::parse_from_str(&text, "%Y-%m-%d"))
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
#[path = "v1_agent_tests.rs"]
mod tests;
