//! What the strict Messages API stand-in refuses, as the API words it: authentication and the
//! version header, the body's fields, roles, blocks and their pairing, breakpoints, and extended
//! thinking's rules (its blocks only as issued, and opening the tool loop they belong to).

use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

const MISSING_THINKING: &str = "When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking";

/// The thinking this stand-in streamed, which alone it accepts back.
#[derive(Default)]
pub(super) struct Issued {
    /// Signature → the thinking text it signs.
    pub(super) signatures: Mutex<HashMap<String, String>>,
    pub(super) redacted: Mutex<HashSet<String>>,
}

pub(super) type Refusal = (u16, &'static str, String);

pub(super) fn invalid(message: impl Into<String>) -> Refusal {
    (400, "invalid_request_error", message.into())
}

pub(super) fn authenticate(key: &str, headers: &HashMap<String, String>) -> Result<(), Refusal> {
    let bearer = headers
        .get("authorization")
        .and_then(|value| value.strip_prefix("Bearer "));
    let Some(presented) = headers.get("x-api-key").map(String::as_str).or(bearer) else {
        return Err((
            401,
            "authentication_error",
            "x-api-key header is required".into(),
        ));
    };
    if presented != key {
        return Err((401, "authentication_error", "invalid x-api-key".into()));
    }
    match headers.get("anthropic-version").map(String::as_str) {
        None => Err(invalid("anthropic-version: header is required")),
        Some("2023-06-01" | "2023-01-01") => Ok(()),
        Some(other) => Err(invalid(format!(
            "anthropic-version: invalid version {other}"
        ))),
    }
}

/// The request's checks, in the order the API reports them.
pub(super) fn check(body: &Value, issued: &Issued) -> Result<(), Refusal> {
    if !body.is_object() {
        return Err(invalid("The request body is not valid JSON."));
    }
    if !body["model"].is_string() {
        return Err(invalid("model: Field required"));
    }
    let Some(max_tokens) = body["max_tokens"].as_u64() else {
        return Err(invalid("max_tokens: Field required"));
    };
    if body["stream"] != true {
        return Err(invalid("stream: this stand-in only streams"));
    }
    check_sampling(body, max_tokens)?;
    let messages = body["messages"]
        .as_array()
        .filter(|messages| !messages.is_empty())
        .ok_or_else(|| invalid("messages: Field required"))?;
    check_roles(messages)?;
    check_blocks(
        messages,
        body["tools"].as_array().is_some_and(|t| !t.is_empty()),
    )?;
    check_cache_control(body)?;
    if thinking_on(body) {
        check_thinking(issued, messages)?;
    }
    Ok(())
}

pub(super) fn thinking_on(body: &Value) -> bool {
    body["thinking"]["type"] == "enabled"
}

fn check_sampling(body: &Value, max_tokens: u64) -> Result<(), Refusal> {
    if body.get("temperature").is_some() && body.get("top_p").is_some() {
        return Err(invalid(
            "`temperature` and `top_p` cannot both be specified for this model. Please use only one.",
        ));
    }
    if body["temperature"]
        .as_f64()
        .is_some_and(|t| !(0.0..=1.0).contains(&t))
    {
        return Err(invalid(
            "temperature: Input should be less than or equal to 1",
        ));
    }
    if !thinking_on(body) {
        return Ok(());
    }
    let budget = body["thinking"]["budget_tokens"].as_u64().unwrap_or(0);
    if budget < 1_024 {
        return Err(invalid(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        ));
    }
    if max_tokens <= budget {
        return Err(invalid(
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
        ));
    }
    if body["temperature"].as_f64().is_some_and(|t| t != 1.0) {
        return Err(invalid(
            "`temperature` may only be set to 1 when thinking is enabled or in interleaved thinking mode. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility",
        ));
    }
    if body["top_p"].as_f64().is_some_and(|p| p < 0.95) {
        return Err(invalid(
            "`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility",
        ));
    }
    Ok(())
}

fn check_roles(messages: &[Value]) -> Result<(), Refusal> {
    let mut last = "";
    for (index, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        if !matches!(role, "user" | "assistant") {
            return Err(invalid(format!(
                "messages.{index}.role: Input should be 'user' or 'assistant'"
            )));
        }
        if index == 0 && role != "user" {
            return Err(invalid(
                "messages: first message must use the \"user\" role",
            ));
        }
        if role == last {
            return Err(invalid(format!(
                "messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"{role}\" roles in a row"
            )));
        }
        last = role;
        if !message["content"].is_array() && !message["content"].is_string() {
            return Err(invalid(format!("messages.{index}.content: Field required")));
        }
    }
    Ok(())
}

pub(super) fn blocks(message: &Value) -> Vec<Value> {
    match &message["content"] {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.clone(),
        _ => Vec::new(),
    }
}

/// Text blocks, tool uses and results, and their pairing across consecutive messages.
fn check_blocks(messages: &[Value], tools_defined: bool) -> Result<(), Refusal> {
    let mut open: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let blocks = blocks(message);
        let mut answered: Vec<String> = Vec::new();
        let mut called: Vec<String> = Vec::new();
        for (position, block) in blocks.iter().enumerate() {
            let at = format!("messages.{index}.content.{position}");
            match block["type"].as_str().unwrap_or_default() {
                "text" => {
                    let text = block["text"].as_str().unwrap_or_default();
                    if text.is_empty() {
                        return Err(invalid(format!(
                            "{at}: text content blocks must be non-empty"
                        )));
                    }
                    if text.trim().is_empty() {
                        return Err(invalid(format!(
                            "{at}: text content blocks must contain non-whitespace text"
                        )));
                    }
                }
                "tool_use" => {
                    let id = block["id"].as_str().unwrap_or_default();
                    let valid_id = !id.is_empty()
                        && id
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                    if !valid_id {
                        return Err(invalid(format!(
                            "{at}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                        )));
                    }
                    if !block["input"].is_object() {
                        return Err(invalid(format!(
                            "{at}.tool_use.input: Input should be a valid dictionary"
                        )));
                    }
                    called.push(id.to_owned());
                }
                "tool_result" => {
                    let id = block["tool_use_id"].as_str().unwrap_or_default();
                    if !open.iter().any(|open| open == id) {
                        return Err(invalid(format!(
                            "messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        )));
                    }
                    answered.push(id.to_owned());
                }
                "thinking" | "redacted_thinking" | "image" | "document" => {}
                other => {
                    return Err(invalid(format!("{at}.type: unknown block type '{other}'")));
                }
            }
        }
        if (!called.is_empty() || !answered.is_empty()) && !tools_defined {
            return Err(invalid(
                "Requests which include `tool_use` or `tool_result` blocks must define tools.",
            ));
        }
        let unanswered: Vec<&String> = open.iter().filter(|id| !answered.contains(id)).collect();
        if !unanswered.is_empty() {
            let ids: Vec<&str> = unanswered.iter().map(|id| id.as_str()).collect();
            return Err(invalid(format!(
                "messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                ids.join(", ")
            )));
        }
        open = called;
    }
    Ok(())
}

fn check_cache_control(body: &Value) -> Result<(), Refusal> {
    let mut count = 0;
    let mut count_in = |blocks: &Value| {
        for block in blocks.as_array().into_iter().flatten() {
            if block.get("cache_control").is_some() {
                count += 1;
            }
        }
    };
    count_in(&body["system"]);
    count_in(&body["tools"]);
    for message in body["messages"].as_array().into_iter().flatten() {
        count_in(&message["content"]);
    }
    if count > 4 {
        return Err(invalid(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {count}."
        )));
    }
    Ok(())
}

/// Every thinking block byte for byte one this stand-in issued; the assistant turn a tool loop
/// continues opens with its thinking.
fn check_thinking(issued: &Issued, messages: &[Value]) -> Result<(), Refusal> {
    let signatures = issued.signatures.lock().unwrap_or_else(|e| e.into_inner());
    let redacted = issued.redacted.lock().unwrap_or_else(|e| e.into_inner());
    for (index, message) in messages.iter().enumerate() {
        for (position, block) in blocks(message).iter().enumerate() {
            let forged = match block["type"].as_str() {
                Some("thinking") => {
                    let signature = block["signature"].as_str().unwrap_or_default();
                    let text = block["thinking"].as_str().unwrap_or_default();
                    (signatures.get(signature).map(String::as_str) != Some(text))
                        .then_some("Invalid `signature` in `thinking` block")
                }
                Some("redacted_thinking") => (!redacted
                    .contains(block["data"].as_str().unwrap_or_default()))
                .then_some("Invalid `data` in `redacted_thinking` block"),
                _ => None,
            };
            if let Some(forged) = forged {
                return Err(invalid(format!(
                    "messages.{index}.content.{position}: {forged}"
                )));
            }
        }
    }
    // The turn a tool loop continues: the assistant messages after the last user message that
    // holds more than tool results.
    let is_result = |block: &Value| block["type"] == "tool_result";
    let start = messages
        .iter()
        .rposition(|m| m["role"] == "user" && !blocks(m).iter().all(is_result))
        .map_or(0, |at| at + 1);
    let turn = &messages[start..];
    let loops = turn
        .iter()
        .any(|m| m["role"] == "assistant" && blocks(m).iter().any(|b| b["type"] == "tool_use"));
    if let Some(offset) = turn.iter().position(|m| m["role"] == "assistant")
        && loops
    {
        let first = blocks(&turn[offset])
            .first()
            .cloned()
            .unwrap_or(Value::Null);
        let kind = first["type"].as_str().unwrap_or("nothing");
        if !matches!(kind, "thinking" | "redacted_thinking") {
            return Err(invalid(format!(
                "messages.{}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{kind}`. {MISSING_THINKING}",
                start + offset
            )));
        }
    }
    Ok(())
}
