//! `RunAgentInput` as sent by `@ag-ui/client` 1.0 and 0.0.59, CopilotKit and plain `fetch`,
//! parsed once into a [`RunInput`] of typed values. Every refusal names the field at fault.
//! Messages and their content are parsed in `messages.rs` and `content.rs`, the sampling options
//! of `forwardedProps` in [`sampling`]; this module checks the rest and puts them together.

pub(crate) mod content;
mod error;
mod limits;
mod messages;
pub(crate) mod sampling;
mod ui_action;
mod unrecognised;

pub(crate) use content::SkippedPart;
pub(crate) use error::InputError;
pub(crate) use error::deserialize_at;
pub use limits::Limits;
pub(crate) use limits::is_valid_tool_name;
pub(crate) use messages::{WireFunction, WireMessage, WireToolCall, check_new_messages};
pub(crate) use ui_action::UiAction;
pub(crate) use unrecognised::unrecognised;

use super::ids::{IdError, MAX_ID_LEN, RunId, ThreadId};
use super::interrupt::ResumeEntry;
use super::message::Message;
use super::version::Declared;
use content::value_to_text;
use messages::parse_messages;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;
use std::str::FromStr;

/// The most interrupts one input may answer.
pub(crate) const MAX_RESUME_ENTRIES: usize = 64;

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
    /// The AG-UI routes: `messages` were parsed without the limits on their number and
    /// content, which the start applies to those the thread does not hold yet. `None`: every
    /// message was held to them here.
    pub new_message_limits: Option<Limits>,
    /// Content parts left out while parsing (kinds or sources AG-UI does not describe, media in
    /// a tool result): the start reports those of messages the thread does not hold yet.
    pub skipped_parts: Vec<SkippedPart>,
    /// AG-UI's rule for a part the model cannot take: skip it and go on (the AG-UI routes).
    /// Other dialects refuse it, as their own protocols ask (A2A's unsupported content type).
    pub skips_unusable_parts: bool,
}

impl RunInput {
    /// What the client declared, read by the spec's versioning rules.
    pub(crate) fn declared(&self) -> Declared {
        Declared::read(self.protocol_version.as_deref())
    }

    /// Whether the client speaks AG-UI 1.0, and so parses 1.0-only fields such as
    /// `RUN_FINISHED.outcome`: any declaration of the 1.x line, a newer one, or one that cannot
    /// be read (served as the newest this server speaks).
    pub(crate) fn speaks_v1(&self) -> bool {
        self.declared().takes_1_0()
    }

    /// Whether the client takes AG-UI `major.minor`'s shapes (1.0's, or 1.1's).
    pub(crate) fn speaks_at_least(&self, major: u32, minor: u32) -> bool {
        let declared = self.declared();
        match (major, minor) {
            (0, _) => true,
            (1, 0) => declared.takes_1_0(),
            (1, 1) => declared.takes_1_1(),
            _ => matches!(declared, Declared::Newer(_) | Declared::Uninterpretable(_)),
        }
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
    pub sampling: sampling::Sampling,
    /// `forwardedProps.a2uiCatalogAvailable`: the client paints A2UI surfaces (CopilotKit with
    /// a catalog).
    pub a2ui_catalog_available: bool,
    /// `forwardedProps.a2uiAction`: a click on a surface.
    pub a2ui_action: Option<UiAction>,
}

#[cfg(any(test, feature = "test-utils"))]
/// Parses and validates a request body.
pub fn parse_run_input(body: &[u8], limits: &Limits) -> Result<RunInput, InputError> {
    from_value(parse_json(body, limits)?, limits)
}

/// The size limit and JSON syntax, shared by every dialect: a body over the limit or that is not
/// JSON is refused before any dialect looks at it.
pub(crate) fn parse_json(body: &[u8], limits: &Limits) -> Result<Value, InputError> {
    if body.len() > limits.max_payload_bytes {
        return Err(InputError::TooLarge {
            limit: limits.max_payload_bytes,
        });
    }
    parse_json_syntax(body)
}

/// [`parse_json`] for the AG-UI routes, whose clients may resend the whole thread: the larger
/// limit, and a refusal that says how to send less.
pub(crate) fn parse_agui_json(body: &[u8], limits: &Limits) -> Result<Value, InputError> {
    if body.len() > limits.agui_max_payload_bytes {
        return Err(InputError::HistoryTooLarge {
            limit: limits.agui_max_payload_bytes,
        });
    }
    parse_json_syntax(body)
}

fn parse_json_syntax(body: &[u8]) -> Result<Value, InputError> {
    serde_json::from_slice(body).map_err(|err| InputError::Syntax(err.to_string()))
}

/// Validates a `RunAgentInput` given as JSON; other dialects build one and come through here, so
/// limits and validation apply to all alike.
pub(crate) fn from_value(value: Value, limits: &Limits) -> Result<RunInput, InputError> {
    deserialize_at::<WireInput>(value, "")?.validate(limits)
}

/// [`from_value`] for the AG-UI routes: the messages' number and content are left for the
/// start to check against what the thread holds ([`RunInput::new_message_limits`]).
pub(crate) fn from_agui_value(value: Value, limits: &Limits) -> Result<RunInput, InputError> {
    let mut input = deserialize_at::<WireInput>(value, "")?.validate(&limits.lenient())?;
    input.new_message_limits = Some(limits.clone());
    input.skips_unusable_parts = true;
    Ok(input)
}

/// A `RunAgentInput` as sent, before any check. A dialect that speaks another shape may build
/// one itself and [`validate`](WireInput::validate) it like any other.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireInput {
    #[serde(default, alias = "thread_id")]
    pub(crate) thread_id: Option<String>,
    #[serde(default, alias = "run_id")]
    pub(crate) run_id: Option<String>,
    #[serde(default, alias = "parent_run_id")]
    pub(crate) parent_run_id: Option<String>,
    #[serde(default)]
    pub(crate) state: Option<Value>,
    pub(crate) messages: Vec<WireMessage>,
    #[serde(default)]
    pub(crate) tools: Option<Vec<WireTool>>,
    #[serde(default)]
    pub(crate) context: Option<Vec<WireContext>>,
    #[serde(default, alias = "forwarded_props")]
    pub(crate) forwarded_props: Option<Value>,
    #[serde(default, alias = "protocol_version")]
    pub(crate) protocol_version: Option<Value>,
    #[serde(default)]
    pub(crate) resume: Option<Vec<ResumeEntry>>,
}

#[derive(Deserialize)]
pub(crate) struct WireTool {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
}

#[derive(Deserialize)]
pub(crate) struct WireContext {
    #[serde(default)]
    description: Option<String>,
    value: Value,
}

impl WireInput {
    /// The checked [`RunInput`]; a refusal names the first field at fault, in field order.
    pub(crate) fn validate(self, limits: &Limits) -> Result<RunInput, InputError> {
        let thread_id = self
            .thread_id
            .filter(|id| !id.is_empty())
            .map(|id| ThreadId::parse(id, MAX_ID_LEN))
            .transpose()
            .map_err(|err| InputError::of_id("threadId", err))?;
        let run_id = parse_run_id(self.run_id, limits)?;
        let parent_run_id = self
            .parent_run_id
            .filter(|id| !id.is_empty())
            .map(|id| RunId::parse(id, MAX_ID_LEN))
            .transpose()
            .map_err(|err| InputError::of_id("parentRunId", err))?;
        let mut skipped_parts = Vec::new();
        let messages: Vec<Message> = parse_messages(self.messages, limits, &mut skipped_parts)?;
        let tools = parse_tools(self.tools.unwrap_or_default())?;
        let resume = check_resume(self.resume.unwrap_or_default())?;
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
            protocol_version: parse_protocol_version(self.protocol_version)?,
            resume,
            new_message_limits: None,
            skipped_parts,
            skips_unusable_parts: false,
        })
    }
}

/// The client's run id, or a new one when it sends none.
fn parse_run_id(run_id: Option<String>, limits: &Limits) -> Result<RunId, InputError> {
    let Some(id) = run_id.filter(|id| !id.is_empty()) else {
        return Ok(RunId::generate());
    };
    RunId::parse(id, limits.max_run_id_chars).map_err(|err| match err {
        IdError::TooLong(_) => InputError::invalid(
            "runId",
            format!(
                "runId exceeds length limit of {} characters",
                limits.max_run_id_chars
            ),
        ),
        other => InputError::of_id("runId", other),
    })
}

/// Frontend tools, with names a model accepts and no two alike.
fn parse_tools(wire: Vec<WireTool>) -> Result<Vec<ClientTool>, InputError> {
    let mut tool_names = HashSet::new();
    let mut tools = Vec::with_capacity(wire.len());
    for (index, tool) in wire.into_iter().enumerate() {
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
    Ok(tools)
}

/// At most [`MAX_RESUME_ENTRIES`] answers, each to a different interrupt.
fn check_resume(resume: Vec<ResumeEntry>) -> Result<Vec<ResumeEntry>, InputError> {
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
    Ok(resume)
}

fn parse_protocol_version(version: Option<Value>) -> Result<Option<String>, InputError> {
    match version {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(version)) if version.len() <= 32 => Ok(Some(version)),
        Some(_) => Err(InputError::invalid(
            "protocolVersion",
            "must be a version string such as \"1.0\"",
        )),
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
        sampling: sampling::Sampling::from_fields(props.as_ref(), "forwardedProps")?,
        a2ui_catalog_available: props
            .as_ref()
            .and_then(|props| props.get("a2uiCatalogAvailable"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        a2ui_action: ui_action::parse(props.as_ref())?,
    })
}

#[cfg(test)]
mod tests;
