//! A [`ModelRequest`] as a Messages API request: the system prompt and summary as system blocks,
//! strictly alternating user/assistant messages opened by a user, tool uses with object inputs
//! answered by tool results first in the next user message, tools (those the history still
//! calls included), extended thinking, sampling, and `cache_control` breakpoints where Bedrock
//! places its cache points.
//!
//! Reasoning: a reasoning message's signed text or redacted data opens the next assistant
//! message, exactly as the model sent it; reasoning without a signature or redacted data this
//! server kept (a client's, or another provider's reasoning item) is dropped. Anthropic
//! documents Claude's signatures as valid across its API, Bedrock and Vertex, so a thread that
//! moved from Bedrock keeps its reasoning.

use super::AnthropicSettings;
use super::media;
use crate::model::reasoning::ReasoningArtefact;
use crate::model::{ModelRequest, Sampling, ToolSpec};
use crate::protocol::{Message, ToolCall, UserContent, UserPart};
use serde_json::{Map, Value, json};

/// Stands in for the user when a history starts with the assistant (the API requires a user
/// message first).
const OPENING: &str = "(The conversation continues.)";

/// A request body and whether it asks for extended thinking (its beta header goes with it).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct MessagesBody {
    pub body: Value,
    pub thinking: bool,
}

/// The body of `POST /v1/messages` for `request`.
pub(super) fn body(request: &ModelRequest, settings: &AnthropicSettings) -> MessagesBody {
    // Claude refuses a forced tool call while it thinks.
    let mut budget = settings
        .thinking_budget_tokens
        .filter(|_| request.tool_choice.is_none());
    let mut conversation = Conversation::build(request, budget.is_some());
    if budget.is_some() && !conversation.thinking_heads_its_tool_loop() {
        // Thinking cannot be turned on in the middle of a tool loop whose turn began without
        // it (another provider's turn, thinking just configured, a client that dropped the
        // reasoning): the API refuses "Expected `thinking` or `redacted_thinking`, but found
        // `tool_use`". This request goes without; the next turn thinks again.
        tracing::info!("extended thinking off for this call: its tool loop began without it");
        budget = None;
        conversation = Conversation::build(request, false);
    }
    let cache = settings.cache_control;
    if cache {
        conversation.mark_last_user_turn();
    }
    let answer = request.sampling.max_tokens.unwrap_or(settings.max_tokens);
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    // The budget is part of max_tokens, which must exceed it: the answer gets its own
    // allowance on top.
    let max_tokens = budget.map_or(answer, |budget| budget.saturating_add(answer));
    body.insert("max_tokens".into(), json!(max_tokens));
    let system = system_blocks(request, conversation.history_system.drain(..), cache);
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let tools = tools(&request.tools, &conversation.history_tools, cache);
    body.insert(
        "messages".into(),
        Value::Array(conversation.into_messages()),
    );
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(name) = &request.tool_choice {
        body.insert("tool_choice".into(), json!({"type": "tool", "name": name}));
    }
    if let Some(budget) = budget {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    sampling(&request.sampling, budget.is_some(), &mut body);
    body.insert("stream".into(), json!(true));
    MessagesBody {
        body: Value::Object(body),
        thinking: budget.is_some(),
    }
}

/// Temperature, top_p and stop sequences as the API takes them (it has no seed).
fn sampling(sampling: &Sampling, thinking: bool, body: &mut Map<String, Value>) {
    // Claude refuses a temperature with extended thinking; current models refuse temperature
    // and top_p together, so temperature (the more common knob) wins. Clients are checked to
    // OpenAI's range, 0 to 2: Claude's ends at 1.
    let temperature = sampling
        .temperature
        .filter(|_| !thinking)
        .map(|temperature| temperature.min(1.0));
    if let Some(temperature) = temperature {
        body.insert("temperature".into(), json!(temperature));
    } else if let Some(top_p) = sampling.top_p.filter(|top_p| !thinking || *top_p >= 0.95) {
        // With thinking, only 0.95 to 1 is accepted.
        body.insert("top_p".into(), json!(top_p));
    }
    let stop: Vec<&String> = sampling
        .stop
        .iter()
        .filter(|stop| !stop.trim().is_empty())
        .collect();
    if !stop.is_empty() {
        body.insert("stop_sequences".into(), json!(stop));
    }
}

/// The system prompt, the summary, then system and developer messages of the history. With
/// `cache`, a breakpoint ends the system prompt when a summary follows (a compaction changes
/// only the summary) and one ends the summary.
fn system_blocks(
    request: &ModelRequest,
    history: impl Iterator<Item = String>,
    cache: bool,
) -> Vec<Value> {
    let mut blocks = Vec::new();
    let system = request
        .system
        .as_deref()
        .filter(|text| !text.trim().is_empty());
    let summary = request
        .summary
        .as_deref()
        .filter(|text| !text.trim().is_empty());
    if let Some(system) = system {
        let mut block = text_block(system);
        if cache && summary.is_some() {
            block["cache_control"] = ephemeral();
        }
        blocks.push(block);
    }
    if let Some(summary) = summary {
        blocks.push(text_block(summary));
    }
    if cache && let Some(last) = blocks.last_mut() {
        last["cache_control"] = ephemeral();
    }
    blocks.extend(history.map(|text| text_block(&text)));
    blocks
}

/// The offered tools, then a stand-in for each tool the history calls that is no longer
/// offered (a request whose history holds tool blocks must define tools); with `cache`, a
/// breakpoint after the last.
fn tools(offered: &[ToolSpec], history: &[String], cache: bool) -> Vec<Value> {
    let mut tools: Vec<Value> = offered.iter().map(tool).collect();
    for name in history {
        if !offered.iter().any(|spec| &spec.name == name) {
            tools.push(json!({
                "name": name,
                "description": "A tool used earlier in this conversation; no longer available.",
                "input_schema": {"type": "object", "properties": {}},
            }));
        }
    }
    if cache && let Some(last) = tools.last_mut() {
        last["cache_control"] = ephemeral();
    }
    tools
}

fn tool(spec: &ToolSpec) -> Value {
    let mut schema = match &spec.parameters {
        Value::Object(map) => Value::Object(map.clone()),
        _ => json!({"type": "object", "properties": {}}),
    };
    if schema.get("type").is_none() {
        schema["type"] = json!("object");
    }
    let mut tool = json!({"name": spec.name, "input_schema": schema});
    if !spec.description.trim().is_empty() {
        tool["description"] = json!(spec.description);
    }
    tool
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
}

/// The messages as they are built, one history message at a time.
#[derive(Default)]
struct Conversation {
    turns: Vec<(Role, Vec<Value>)>,
    /// System and developer messages of the history, for the system blocks.
    history_system: Vec<String>,
    /// The tools the history calls, in the order first called.
    history_tools: Vec<String>,
    /// Reasoning blocks waiting for the assistant message they open.
    reasoning: Vec<Value>,
}

impl Conversation {
    /// `send_reasoning`: reasoning blocks go back (only with thinking on).
    fn build(request: &ModelRequest, send_reasoning: bool) -> Self {
        let mut conversation = Self::default();
        for message in &request.messages {
            conversation.add(message, send_reasoning);
        }
        conversation
    }

    fn add(&mut self, message: &Message, send_reasoning: bool) {
        if !matches!(
            message,
            Message::Assistant { .. } | Message::Reasoning { .. }
        ) {
            self.reasoning.clear();
        }
        match message {
            Message::Reasoning {
                content,
                encrypted_value,
                ..
            } => {
                if send_reasoning {
                    self.reasoning
                        .extend(reasoning_block(content, encrypted_value.as_deref()));
                }
            }
            Message::System { content, .. } | Message::Developer { content, .. } => {
                if !content.trim().is_empty() {
                    self.history_system.push(content.clone());
                }
            }
            Message::User { content, .. } => {
                let blocks = user_blocks(content);
                self.push(Role::User, blocks);
            }
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let blocks = self.assistant_blocks(content.as_deref(), tool_calls);
                self.push(Role::Assistant, blocks);
            }
            Message::Tool {
                tool_call_id,
                content,
                error,
                ..
            } => {
                let block = tool_result_block(tool_call_id.as_str(), content, error.as_deref());
                self.push(Role::User, vec![block]);
            }
        }
    }

    /// The pending reasoning, the text, then one tool use per call.
    fn assistant_blocks(&mut self, content: Option<&str>, calls: &[ToolCall]) -> Vec<Value> {
        let mut blocks = std::mem::take(&mut self.reasoning);
        if let Some(text) = content.filter(|text| !text.trim().is_empty()) {
            blocks.push(text_block(text));
        }
        for call in calls {
            if !self.history_tools.contains(&call.function.name) {
                self.history_tools.push(call.function.name.clone());
            }
            blocks.push(tool_use_block(call));
        }
        blocks
    }

    /// Appends blocks to the last turn when it has the same role (the API wants roles to
    /// alternate): a user turn keeps its tool results first, as the API requires.
    fn push(&mut self, role: Role, blocks: Vec<Value>) {
        if blocks.is_empty() {
            return;
        }
        match self.turns.last_mut() {
            Some((last, content)) if *last == role => {
                for block in blocks {
                    if is_tool_result(&block) {
                        let at = content.iter().take_while(|b| is_tool_result(b)).count();
                        content.insert(at, block);
                    } else {
                        content.push(block);
                    }
                }
            }
            _ => self.turns.push((role, blocks)),
        }
    }

    /// Whether the assistant turn the request continues, when it continues one through tool
    /// results, opens with a thinking block as the API requires with thinking on. That turn
    /// is every assistant message after the last user message with more than tool results.
    fn thinking_heads_its_tool_loop(&self) -> bool {
        let turn_start = self
            .turns
            .iter()
            .rposition(|(role, blocks)| *role == Role::User && !blocks.iter().all(is_tool_result))
            .map_or(0, |at| at + 1);
        let turn = &self.turns[turn_start..];
        let in_tool_loop = turn.iter().any(|(role, blocks)| {
            *role == Role::Assistant && blocks.iter().any(|block| block["type"] == "tool_use")
        });
        if !in_tool_loop {
            return true;
        }
        turn.iter()
            .find(|(role, _)| *role == Role::Assistant)
            .and_then(|(_, blocks)| blocks.first())
            .is_some_and(|block| {
                matches!(
                    block["type"].as_str(),
                    Some("thinking" | "redacted_thinking")
                )
            })
    }

    /// Ends the last user turn with a breakpoint: the next request, which repeats this one and
    /// adds to it, reads everything before it from the cache.
    fn mark_last_user_turn(&mut self) {
        if let Some(block) = self
            .turns
            .iter_mut()
            .rev()
            .find(|(role, _)| *role == Role::User)
            .and_then(|(_, blocks)| blocks.last_mut())
        {
            block["cache_control"] = ephemeral();
        }
    }

    /// The turns as messages, opened by a user turn as the API requires.
    fn into_messages(self) -> Vec<Value> {
        let opens_with_user = self
            .turns
            .first()
            .is_some_and(|(role, _)| *role == Role::User);
        let opening = (!opens_with_user).then(|| (Role::User, vec![text_block(OPENING)]));
        opening
            .into_iter()
            .chain(self.turns)
            .map(|(role, content)| {
                let role = match role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                };
                json!({"role": role, "content": content})
            })
            .collect()
    }
}

fn is_tool_result(block: &Value) -> bool {
    block["type"] == "tool_result"
}

/// A stored reasoning message as the block Claude sent: thinking with its signature, or the
/// redacted data; `None` for anything else.
fn reasoning_block(text: &str, encrypted_value: Option<&str>) -> Option<Value> {
    match ReasoningArtefact::decode(encrypted_value?)? {
        ReasoningArtefact::Signature(signature) => Some(json!({
            "type": "thinking",
            "thinking": text,
            "signature": signature,
        })),
        // Claude's redacted data is text; bytes that are not are someone else's.
        ReasoningArtefact::Redacted(bytes) => String::from_utf8(bytes)
            .ok()
            .map(|data| json!({"type": "redacted_thinking", "data": data})),
        ReasoningArtefact::Item(_) => None,
    }
}

fn user_blocks(content: &UserContent) -> Vec<Value> {
    match content {
        UserContent::Text(text) => non_blank(text).into_iter().collect(),
        UserContent::Parts(parts) => parts
            .iter()
            .filter_map(|part| match part {
                UserPart::Text { text } => non_blank(text),
                media => Some(media::part_block(media)),
            })
            .collect(),
    }
}

/// The API refuses empty and whitespace-only text blocks.
fn non_blank(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| text_block(text))
}

/// A call's arguments as the tool use's input: an object, or `{}` when they are not one.
fn tool_use_block(call: &ToolCall) -> Value {
    let input = serde_json::from_str::<Value>(&call.function.arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    json!({
        "type": "tool_use",
        "id": tool_use_id(call.id.as_str()),
        "name": call.function.name,
        "input": input,
    })
}

fn tool_result_block(tool_call_id: &str, content: &str, error: Option<&str>) -> Value {
    let mut block = json!({"type": "tool_result", "tool_use_id": tool_use_id(tool_call_id)});
    let text = match error {
        Some(error) if content.trim().is_empty() => format!("Error: {error}"),
        _ => content.to_owned(),
    };
    // Empty text is refused; a result may have no content at all.
    if !text.trim().is_empty() {
        block["content"] = json!(text);
    }
    if error.is_some() {
        block["is_error"] = json!(true);
    }
    block
}

/// A call id as the API takes it (`^[a-zA-Z0-9_-]+$`): Claude's own and this server's ids
/// as they are, any other (a client's, another provider's) mapped to a stable stand-in, the
/// same for the call and its result.
pub(super) fn tool_use_id(id: &str) -> String {
    let valid = !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if valid {
        return id.to_owned();
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(id.as_bytes());
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("toolu_{hex}")
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
