//! An `AgentRequest` decoded into the AG-UI input it stands for, then checked as any
//! `RunAgentInput` is; a refusal names the `AgentRequest` field at fault ([`super::origins`]).

use super::origins::{Origin, Origins};
use crate::protocol::input::{self as agui, InputError, Limits, RunInput, deserialize_at};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// A decoded `AgentRequest`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AgentScopeRequest {
    pub input: RunInput,
    /// `stream: false` asks for the completed response object as one JSON body.
    pub stream: bool,
    /// The client's `response_id` (or request `id`), used as the response's `id`.
    pub response_id: Option<String>,
}

#[cfg(test)]
/// Parses and validates an `AgentRequest`: the same limits and rules as `RunAgentInput`, with
/// errors naming the `AgentRequest` field at fault.
///
/// The sampling options `temperature`, `top_p`, `max_tokens`, `stop` and `seed` go to the model
/// as `forwardedProps` would, with the same checks (an error names the request's own field).
/// `model`, `n`, penalties and `user_id` are accepted and ignored: the server's configuration
/// picks the model, and authentication the owner.
pub(crate) fn parse_request(body: &[u8], limits: &Limits) -> Result<AgentScopeRequest, InputError> {
    from_json(crate::protocol::input::parse_json(body, limits)?, limits)
}

/// [`parse_request`] for a body already parsed as JSON (by [`parse_json`], which checks the size
/// limit and the syntax for every dialect alike).
pub(crate) fn from_json(body: Value, limits: &Limits) -> Result<AgentScopeRequest, InputError> {
    let wire: WireRequest = deserialize_at(body, "")?;
    if wire.input.len() > limits.max_messages {
        return Err(InputError::invalid(
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
    let input = agui
        .validate(limits)
        .map_err(|err| origins.translate(err))?;
    Ok(AgentScopeRequest {
        input,
        stream,
        response_id,
    })
}

fn new_message_id() -> String {
    format!("msg_{}", uuid::Uuid::new_v4())
}

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

impl WireRequest {
    /// The equivalent `RunAgentInput`, and where each of its parts came from.
    fn into_agui(self) -> Result<(agui::WireInput, Origins), InputError> {
        let mut builder = Builder::default();
        for (input, message) in self.input.into_iter().enumerate() {
            builder.add(input, message)?;
        }
        builder.flush();
        let Builder {
            messages,
            mut origins,
            ..
        } = builder;
        let (tools, nested_tools) = function_tools(self.tools.unwrap_or_default())?;
        origins.nested_tools = nested_tools;
        let tools =
            deserialize_at(Value::Array(tools), "tools").map_err(|err| origins.translate(err))?;
        let sampling = [
            ("temperature", self.temperature),
            ("top_p", self.top_p),
            ("max_tokens", self.max_tokens),
            ("stop", self.stop),
            ("seed", self.seed),
        ];
        let agui = agui::WireInput {
            thread_id: self.session_id.filter(|id| !id.is_empty()),
            run_id: self.id.filter(|id| !id.is_empty()),
            messages,
            tools: Some(tools),
            forwarded_props: Some(forwarded_props(sampling)),
            ..agui::WireInput::default()
        };
        Ok((agui, origins))
    }
}

/// The AG-UI messages being built, where each came from, and the assistant group open.
#[derive(Default)]
struct Builder {
    messages: Vec<agui::WireMessage>,
    origins: Origins,
    group: Option<AssistantGroup>,
}

/// Consecutive assistant-side items (text messages, function calls; reasoning is skipped) are
/// one AG-UI assistant message, as the server stores a model turn: so a client that echoes a
/// streamed turn back sends a message id the thread already holds.
struct AssistantGroup {
    id: String,
    text: String,
    tool_calls: Vec<agui::WireToolCall>,
    origin: Origin,
}

impl Builder {
    /// Adds `input[input]`, by its type.
    fn add(&mut self, input: usize, message: WireMessage) -> Result<(), InputError> {
        let id = message.id.filter(|id| !id.is_empty());
        match message.kind.as_deref().unwrap_or("message") {
            "message" => {
                let role = message.role.as_deref().unwrap_or("user");
                self.add_message(input, id, role, message.content)?;
            }
            "function_call" | "plugin_call" | "mcp_call" => {
                self.add_calls(input, id, &message.content)?;
            }
            "function_call_output" | "plugin_call_output" | "mcp_call_output" => {
                self.add_outputs(input, id, &message.content)?;
            }
            // Shown by UIs, never sent to a model (as AG-UI `reasoning` messages); server
            // frames a client may echo back.
            "reasoning" | "heartbeat" | "error" => {}
            other => {
                return Err(InputError::invalid(
                    format!("input[{input}].type"),
                    format!("unsupported message type {other:?}"),
                ));
            }
        }
        Ok(())
    }

    fn add_message(
        &mut self,
        input: usize,
        id: Option<String>,
        role: &str,
        content: Option<Value>,
    ) -> Result<(), InputError> {
        let message = match role {
            "assistant" => {
                let text = text_of(&content);
                self.group(id, input).text.push_str(&text);
                return Ok(());
            }
            "user" => {
                self.flush();
                let content = user_content(content, input)?;
                agui::WireMessage::User {
                    id: id.unwrap_or_else(new_message_id),
                    content,
                    name: None,
                }
            }
            "system" => {
                self.flush();
                agui::WireMessage::System {
                    id: id.unwrap_or_else(new_message_id),
                    content: Value::String(text_of(&content)),
                    name: None,
                }
            }
            "tool" => {
                return Err(InputError::invalid(
                    format!("input[{input}].type"),
                    "a tool result is a function_call_output message",
                ));
            }
            other => {
                return Err(InputError::invalid(
                    format!("input[{input}].role"),
                    format!("unknown role {other:?}"),
                ));
            }
        };
        self.push(message, Origin::of_input(input));
        Ok(())
    }

    /// A function call's data parts join the open assistant group as tool calls.
    fn add_calls(
        &mut self,
        input: usize,
        id: Option<String>,
        content: &Option<Value>,
    ) -> Result<(), InputError> {
        let parts = data_parts(content, input)?;
        let group = self.group(id, input);
        for (part, data) in parts {
            group.tool_calls.push(agui::WireToolCall {
                id: text_value(data.get("call_id")),
                function: agui::WireFunction {
                    name: text_value(data.get("name")),
                    arguments: Some(Value::String(text_value(data.get("arguments")))),
                },
                encrypted_value: None,
            });
            group.origin.calls.push((input, part));
        }
        Ok(())
    }

    /// Each data part of a function call's output is one AG-UI tool message.
    fn add_outputs(
        &mut self,
        input: usize,
        id: Option<String>,
        content: &Option<Value>,
    ) -> Result<(), InputError> {
        self.flush();
        let parts = data_parts(content, input)?;
        let base = id.unwrap_or_else(new_message_id);
        for (position, (part, data)) in parts.into_iter().enumerate() {
            // A derived id keeps a re-sent message idempotent.
            let id = if position == 0 {
                base.clone()
            } else {
                format!("{base}-{position}")
            };
            let message = agui::WireMessage::Tool {
                id,
                content: Value::String(text_value(data.get("output"))),
                tool_call_id: text_value(data.get("call_id")),
                error: None,
            };
            let origin = Origin {
                input,
                part: Some(part),
                calls: Vec::new(),
            };
            self.push(message, origin);
        }
        Ok(())
    }

    fn group(&mut self, id: Option<String>, input: usize) -> &mut AssistantGroup {
        self.group.get_or_insert_with(|| AssistantGroup {
            id: id.unwrap_or_else(new_message_id),
            text: String::new(),
            tool_calls: Vec::new(),
            origin: Origin::of_input(input),
        })
    }

    /// Ends the open assistant group, if any, as one assistant message.
    fn flush(&mut self) {
        if let Some(group) = self.group.take() {
            let message = agui::WireMessage::Assistant {
                id: group.id,
                content: (!group.text.is_empty()).then_some(Value::String(group.text)),
                tool_calls: (!group.tool_calls.is_empty()).then_some(group.tool_calls),
                name: None,
                encrypted_value: None,
            };
            self.push(message, group.origin);
        }
    }

    fn push(&mut self, message: agui::WireMessage, origin: Origin) {
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

/// A data content part: its index and its `data` object.
type DataPart<'a> = (usize, &'a Map<String, Value>);

/// The `data` objects of a message's `data` content parts, with their indices.
fn data_parts(content: &Option<Value>, input: usize) -> Result<Vec<DataPart<'_>>, InputError> {
    let Some(Value::Array(parts)) = content else {
        return Err(InputError::invalid(
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
                    InputError::invalid(
                        format!("input[{input}].content[{index}].data"),
                        "must be an object",
                    )
                })
        })
        .collect()
}

/// A data field as text: a string as it is, another value as its JSON, none as empty.
fn text_value(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// A user message's content parts in AG-UI form, index for index.
fn user_content(content: Option<Value>, input: usize) -> Result<Value, InputError> {
    let parts = match content {
        None | Some(Value::Null) => return Ok(Value::Array(Vec::new())),
        Some(Value::String(text)) => return Ok(Value::String(text)),
        Some(Value::Array(parts)) => parts,
        Some(_) => {
            return Err(InputError::invalid(
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
                    None => Err(InputError::invalid(
                        field,
                        "image content requires image_url",
                    )),
                },
                _ => Err(InputError::invalid(
                    field,
                    "only text and image content is supported",
                )),
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// The request's tools in AG-UI's flat form (`{name, description, parameters}`), and for each
/// whether it came nested as `{type: "function", function: {…}}`.
fn function_tools(tools: Vec<Value>) -> Result<(Vec<Value>, Vec<bool>), InputError> {
    let mut flat = Vec::with_capacity(tools.len());
    let mut nested = Vec::with_capacity(tools.len());
    for (index, tool) in tools.into_iter().enumerate() {
        let field = format!("tools[{index}]");
        let Value::Object(mut tool) = tool else {
            return Err(InputError::invalid(field, "must be a function tool object"));
        };
        if let Some(kind) = tool.get("type").and_then(Value::as_str)
            && kind != "function"
        {
            return Err(InputError::invalid(
                format!("{field}.type"),
                "only function tools are supported",
            ));
        }
        let (function, is_nested) = match tool.remove("function") {
            Some(Value::Object(function)) => (function, true),
            Some(_) => {
                return Err(InputError::invalid(
                    format!("{field}.function"),
                    "must be an object",
                ));
            }
            None => (tool, false),
        };
        let mut agui = Map::new();
        for key in ["name", "description", "parameters"] {
            if let Some(value) = function.get(key) {
                agui.insert(key.to_owned(), value.clone());
            }
        }
        flat.push(Value::Object(agui));
        nested.push(is_nested);
    }
    Ok((flat, nested))
}

/// The request's own sampling fields as `forwardedProps`, which check them as for AG-UI.
fn forwarded_props<const N: usize>(fields: [(&str, Option<Value>); N]) -> Value {
    let props: Map<String, Value> = fields
        .into_iter()
        .filter_map(|(name, value)| Some((name.to_owned(), value.filter(|v| !v.is_null())?)))
        .collect();
    Value::Object(props)
}
