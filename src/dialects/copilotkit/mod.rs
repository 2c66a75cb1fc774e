//! CopilotKit's runtime protocol (what `@copilotkit/core` sends to its `runtimeUrl`), as a
//! dialect of routes over AG-UI runs: `/info`'s body, the thread records and the bodies that
//! change them, the stop body, the inspector's messages and the transcription refusals; the
//! single-route envelope in `envelope`, the replay that `/connect` streams in `replay`. Pure: no
//! I/O, no store; the routes are `api`'s.

pub(crate) mod envelope;
pub(crate) mod replay;

use crate::protocol::{Message, RunId};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The agent id CopilotKit's components use when none is named: this deployment's default agent.
pub(crate) const DEFAULT_AGENT: &str = "default";

/// What the generative-UI features tell CopilotKit's client in `/info`: which of them this
/// deployment serves. All off until a feature sets them (its settings fill this one struct).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GenerativeUi {
    /// `a2ui.enabled`: the agents paint A2UI surfaces.
    pub a2ui: bool,
    /// `a2ui.agents`: the agents that do, when not all of them.
    pub a2ui_agents: Option<Vec<String>>,
    /// `openGenerativeUIEnabled`: the client registers its sandboxed-UI tool.
    pub open_generative_ui: bool,
}

/// The optional parts of CopilotKit's runtime this deployment serves, as `/info` announces them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Features {
    /// `POST /agent/{agentId}/suggest`: the model answers the suggestion tool, nothing stored.
    pub suggestions: bool,
    /// `POST /transcribe`: a transcription model is configured.
    pub transcription: bool,
    pub generative_ui: GenerativeUi,
}

/// One agent as `/info` lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AgentEntry {
    pub id: String,
    pub description: String,
    /// AG-UI's `AgentCapabilities`.
    pub capabilities: Value,
}

/// `GET /info`'s body (`RuntimeInfo` of `@copilotkit/shared`): the agents, `mode: "sse"`, every
/// `threadEndpoints` flag set (the client counts an absent one as supported), the features as
/// they are. Never `intelligence`, a license or entitlements. `single_route`: asked through the
/// single-route envelope, which then also takes the thread routes (`resource/request`).
pub(crate) fn runtime_info(
    agents: &[AgentEntry],
    features: &Features,
    single_route: bool,
) -> Value {
    let agents: serde_json::Map<String, Value> = agents
        .iter()
        .map(|agent| {
            let entry = json!({
                "name": agent.id,
                "className": "agui-lambda",
                "description": agent.description,
                "capabilities": agent.capabilities,
            });
            (agent.id.clone(), entry)
        })
        .collect();
    let thread_endpoints = json!({
        "list": true,
        "inspect": true,
        "mutations": true,
        "realtimeMetadata": false,
    });
    let generative_ui = &features.generative_ui;
    let a2ui = match &generative_ui.a2ui_agents {
        Some(agents) if generative_ui.a2ui => json!({"enabled": true, "agents": agents}),
        _ => json!({"enabled": generative_ui.a2ui}),
    };
    let mut info = json!({
        "version": concat!("agui-lambda ", env!("CARGO_PKG_VERSION")),
        "agents": agents,
        "mode": "sse",
        "threadEndpoints": thread_endpoints,
        "suggestions": features.suggestions,
        "audioFileTranscriptionEnabled": features.transcription,
        "a2ui": a2ui,
        // The flag older clients read instead of `a2ui`.
        "a2uiEnabled": generative_ui.a2ui,
        "openGenerativeUIEnabled": generative_ui.open_generative_ui,
    });
    if single_route {
        info["singleRoute"] = json!({
            "resourceOperations": true,
            "threadEndpoints": thread_endpoints,
        });
    }
    info
}

/// One thread as CopilotKit's thread list takes it (`ThreadRecord`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ThreadRecord<'a> {
    pub id: &'a str,
    pub agent_id: &'a str,
    pub name: Option<&'a str>,
    pub archived: bool,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

impl ThreadRecord<'_> {
    /// The record's JSON. There is no organisation or creator here: the caller owns every
    /// thread it sees, so both are empty, as CopilotKit's own runtime sends them.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "organizationId": "",
            "agentId": self.agent_id,
            "createdById": "",
            "name": self.name,
            "archived": self.archived,
            "createdAt": iso_ms(self.created_at_ms),
            "updatedAt": iso_ms(self.updated_at_ms),
        })
    }
}

fn iso_ms(ms: i64) -> Value {
    chrono::DateTime::from_timestamp_millis(ms).map_or(Value::Null, |at| {
        json!(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
    })
}

/// The tool a suggestion call forces, as CopilotKit's client names it in
/// `forwardedProps.toolChoice` (`{"type": "function", "function": {"name"}}`).
pub(crate) fn forced_tool(body: &Value) -> Option<String> {
    let choice = body.get("forwardedProps")?.get("toolChoice")?;
    if choice.get("type")?.as_str()? != "function" {
        return None;
    }
    choice
        .get("function")?
        .get("name")?
        .as_str()
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}

/// A body CopilotKit's client sends that is not what its runtime takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyError {
    #[error("the body is not JSON: {0}")]
    Syntax(String),
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
}

impl BodyError {
    fn invalid(field: &str, message: impl Into<String>) -> Self {
        BodyError::Invalid {
            field: field.to_owned(),
            message: message.into(),
        }
    }

    /// The field a refusal names, if any.
    #[cfg(test)]
    pub(crate) fn field(&self) -> Option<&str> {
        match self {
            BodyError::Syntax(_) => None,
            BodyError::Invalid { field, .. } => Some(field),
        }
    }
}

/// A JSON object body with exactly the fields of `T`; an empty body is `{}`.
fn object_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, BodyError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}".as_slice()
    } else {
        body
    };
    let value: Value =
        serde_json::from_slice(body).map_err(|error| BodyError::Syntax(error.to_string()))?;
    if !value.is_object() {
        return Err(BodyError::invalid("body", "must be a JSON object"));
    }
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let field = if path == "." { "body" } else { path.as_str() };
        BodyError::invalid(field, error.into_inner().to_string())
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StopBody {
    run_id: Option<String>,
}

/// `POST /agent/{agentId}/stop/{threadId}`'s body: nothing (the thread's active run), or
/// `{"runId"}` (that run only). Anything else is refused: a misspelt key must not widen a stop.
pub(crate) fn stop_scope(body: &[u8]) -> Result<Option<RunId>, BodyError> {
    let StopBody { run_id } = object_body(body)?;
    run_id
        .map(|id| {
            RunId::parse(id, crate::protocol::ids::MAX_ID_LEN)
                .map_err(|error| BodyError::invalid("runId", error.to_string()))
        })
        .transpose()
}

/// `PATCH /threads/{id}`: a new name, archived or not, or both.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ThreadPatch {
    /// The agent whose list the client shows; threads are the caller's whatever agent ran them.
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub archived: Option<bool>,
}

/// The longest thread name, in characters (the same as our own titles').
pub(crate) const NAME_MAX_CHARS: usize = 200;

impl ThreadPatch {
    /// The patch a body asks for, its name with whitespace collapsed; nothing to change is
    /// refused.
    pub(crate) fn parse(body: &[u8]) -> Result<Self, BodyError> {
        let mut patch: ThreadPatch = object_body(body)?;
        if let Some(name) = &patch.name {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            if name.is_empty() {
                return Err(BodyError::invalid("name", "must not be empty"));
            }
            let chars = name.chars().count();
            if chars > NAME_MAX_CHARS {
                return Err(BodyError::invalid(
                    "name",
                    format!("is {chars} characters; the most is {NAME_MAX_CHARS}"),
                ));
            }
            patch.name = Some(name);
        }
        if patch.name.is_none() && patch.archived.is_none() {
            return Err(BodyError::invalid(
                "body",
                "names nothing to change (name, archived)",
            ));
        }
        Ok(patch)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ThreadAction {
    #[serde(default, rename = "agentId")]
    _agent_id: Option<String>,
}

/// The body of `POST /threads/{id}/archive` and `DELETE /threads/{id}`: nothing, or
/// `{"agentId"}`.
pub(crate) fn check_thread_action(body: &[u8]) -> Result<(), BodyError> {
    object_body::<ThreadAction>(body).map(|_| ())
}

/// One message as CopilotKit's inspector reads it (`GET /threads/{id}/messages`).
pub(crate) fn inspector_message(message: &Message) -> Value {
    match message {
        Message::Assistant {
            id,
            content,
            tool_calls,
            ..
        } => {
            let mut entry = json!({"id": id, "role": "assistant"});
            if let Some(content) = content {
                entry["content"] = json!(content);
            }
            if !tool_calls.is_empty() {
                entry["toolCalls"] = tool_calls
                    .iter()
                    .map(|call| {
                        json!({"id": call.id, "name": call.function.name, "args": call.function.arguments})
                    })
                    .collect();
            }
            entry
        }
        Message::Tool {
            id,
            tool_call_id,
            content,
            ..
        } => json!({"id": id, "role": "tool", "content": content, "toolCallId": tool_call_id}),
        Message::User { id, content, .. } => json!({"id": id, "role": "user", "content": content}),
        Message::System { id, content, .. } => {
            json!({"id": id, "role": "system", "content": content})
        }
        Message::Developer { id, content, .. } => {
            json!({"id": id, "role": "developer", "content": content})
        }
        Message::Reasoning { id, content, .. } => {
            json!({"id": id, "role": "reasoning", "content": content})
        }
    }
}

/// Why a transcription was refused, in the shape CopilotKit's client reads
/// (`TranscriptionErrorResponse`): its code decides what the chat tells the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TranscriptionCode {
    ServiceNotConfigured,
    InvalidAudioFormat,
    AudioTooLong,
    AudioTooShort,
    RateLimited,
    AuthFailed,
    ProviderError,
    NetworkError,
    InvalidRequest,
}

impl TranscriptionCode {
    /// Whether trying again later may succeed.
    pub(crate) fn retryable(self) -> bool {
        matches!(
            self,
            TranscriptionCode::RateLimited
                | TranscriptionCode::ProviderError
                | TranscriptionCode::NetworkError
        )
    }
}

/// A transcription refusal's body: `{"error": code, "message", "retryable"}`.
pub(crate) fn transcription_error(code: TranscriptionCode, message: &str) -> Value {
    json!({"error": code, "message": message, "retryable": code.retryable()})
}

#[cfg(test)]
mod tests;
