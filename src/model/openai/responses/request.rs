//! A [`ModelRequest`] as a stateless Responses API request (`store: false`): the system prompt
//! and summary as `instructions`, the history as input items, and the output items of earlier
//! turns sent back as they came: each reasoning item (its encrypted content untouched) right
//! before the item it produced, message and function-call items under their own ids.

use super::ReasoningItem;
use crate::model::ModelRequest;
use crate::model::artefact::Artefact;
use crate::model::reasoning::ReasoningArtefact;
use crate::protocol::message::{FILE_HANDLE_UNUSED, is_file_handle};
use crate::protocol::{Message, PartSource, ToolCall, UserContent, UserPart};
use serde_json::{Value, json};

/// The request's `input` items, for `model`: reasoning items of another model are left out
/// (with the ids that would need them).
pub(super) fn input_items(request: &ModelRequest, model: &str) -> Vec<Value> {
    let mut items = Vec::with_capacity(request.messages.len() + 4);
    // The reasoning items waiting for the assistant message they belong to, and whether
    // reasoning of another model was left out before it.
    let mut reasoning: Vec<ReasoningItem> = Vec::new();
    let mut dropped_reasoning = false;
    for message in &request.messages {
        match message {
            Message::Reasoning {
                encrypted_value, ..
            } => match encrypted_value
                .as_deref()
                .and_then(ReasoningArtefact::decode)
                .and_then(|artefact| match artefact {
                    ReasoningArtefact::Item(text) => ReasoningItem::parse(&text),
                    _ => None,
                }) {
                Some(item) if item.model == model => reasoning.push(item),
                _ => dropped_reasoning = true,
            },
            Message::Assistant {
                content,
                tool_calls,
                encrypted_value,
                ..
            } => {
                let turn = AssistantTurn {
                    text: content.as_deref(),
                    calls: tool_calls,
                    message_id: item_id(encrypted_value.as_deref()),
                    with_ids: !dropped_reasoning,
                };
                turn.push_items(std::mem::take(&mut reasoning), &mut items);
                dropped_reasoning = false;
            }
            other => {
                reasoning.clear();
                dropped_reasoning = false;
                items.extend(plain_item(other));
            }
        }
    }
    items
}

/// One assistant message's output items.
struct AssistantTurn<'a> {
    text: Option<&'a str>,
    calls: &'a [ToolCall],
    /// The message item's id (`msg_…`), when the model gave one.
    message_id: Option<String>,
    /// Send the items' ids: only when none of the turn's reasoning was left out (an item id
    /// names its reasoning item, which must then come before it).
    with_ids: bool,
}

impl AssistantTurn<'_> {
    /// The turn's items in order, each reasoning item right before the item it produced;
    /// reasoning whose item is gone (a merged or edited message) opens the turn.
    fn push_items(&self, reasoning: Vec<ReasoningItem>, items: &mut Vec<Value>) {
        // Without ids nothing can follow a reasoning item: the turn goes without its reasoning.
        let reasoning = if self.with_ids { reasoning } else { Vec::new() };
        let mut outputs: Vec<(Option<String>, Value)> = Vec::new();
        if let Some(text) = self.text.filter(|text| !text.is_empty()) {
            let id = self.message_id.clone().filter(|_| self.with_ids);
            outputs.push((id.clone(), message_item(text, id.as_deref())));
        }
        for call in self.calls {
            let id = item_id(call.encrypted_value.as_deref()).filter(|_| self.with_ids);
            outputs.push((id.clone(), function_call_item(call, id.as_deref())));
        }
        let (placed, leading): (Vec<_>, Vec<_>) = reasoning.into_iter().partition(|item| {
            item.next
                .as_ref()
                .is_some_and(|next| outputs.iter().any(|(id, _)| id.as_ref() == Some(next)))
        });
        items.extend(leading.into_iter().map(|item| item.item));
        let mut placed = placed;
        for (id, output) in outputs {
            let (before, rest): (Vec<_>, Vec<_>) = placed
                .into_iter()
                .partition(|item| item.next.is_some() && item.next == id);
            placed = rest;
            items.extend(before.into_iter().map(|item| item.item));
            items.push(output);
        }
    }
}

/// A Responses item id kept on a message or call.
fn item_id(encrypted_value: Option<&str>) -> Option<String> {
    match encrypted_value.and_then(Artefact::decode) {
        Some(Artefact::OpenAiItem(id)) => Some(id),
        _ => None,
    }
}

fn message_item(text: &str, id: Option<&str>) -> Value {
    match id {
        Some(id) => json!({
            "type": "message",
            "id": id,
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
        None => json!({"role": "assistant", "content": text}),
    }
}

fn function_call_item(call: &ToolCall, id: Option<&str>) -> Value {
    let arguments = match call.function.arguments.as_str() {
        "" => "{}",
        arguments => arguments,
    };
    let mut item = json!({
        "type": "function_call",
        "call_id": call.id,
        "name": call.function.name,
        "arguments": arguments,
    });
    if let Some(id) = id {
        item["id"] = json!(id);
    }
    item
}

/// A user, system, developer or tool message as an input item.
fn plain_item(message: &Message) -> Option<Value> {
    Some(match message {
        Message::User { content, .. } => match content {
            UserContent::Text(text) => json!({"role": "user", "content": text}),
            UserContent::Parts(parts) => {
                let parts: Vec<Value> = parts.iter().map(user_part).collect();
                json!({"role": "user", "content": parts})
            }
        },
        Message::System { content, .. } => json!({"role": "system", "content": content}),
        Message::Developer { content, .. } => json!({"role": "developer", "content": content}),
        Message::Tool {
            tool_call_id,
            content,
            error,
            ..
        } => {
            let output = match error {
                Some(error) if content.is_empty() => format!("Error: {error}"),
                _ => content.clone(),
            };
            json!({"type": "function_call_output", "call_id": tool_call_id, "output": output})
        }
        Message::Assistant { .. } | Message::Reasoning { .. } => return None,
    })
}

/// A user content part as a Responses input part, or a note when the API cannot take it.
fn user_part(part: &UserPart) -> Value {
    content_part(part).unwrap_or_else(|| {
        json!({"type": "input_text", "text": format!("[The user attached {} the model cannot take.]", part.noun())})
    })
}

fn content_part(part: &UserPart) -> Option<Value> {
    match part {
        UserPart::Text { text } => Some(json!({"type": "input_text", "text": text})),
        UserPart::Image(attachment) => {
            let url = match &attachment.source {
                PartSource::Url { value, .. } => value.clone(),
                PartSource::File { .. } => return None,
                PartSource::Data { value, .. } => {
                    let media_type = attachment.media_type()?;
                    if !matches!(
                        media_type.as_str(),
                        "image/png" | "image/jpeg" | "image/gif" | "image/webp"
                    ) {
                        return None;
                    }
                    format!("data:{media_type};base64,{value}")
                }
            };
            Some(json!({"type": "input_image", "image_url": url, "detail": "auto"}))
        }
        UserPart::Document(attachment) => {
            if attachment.media_type().as_deref() != Some("application/pdf") {
                return None;
            }
            let filename = attachment.filename().unwrap_or("document.pdf");
            Some(match &attachment.source {
                PartSource::Data { value, .. } => json!({
                    "type": "input_file",
                    "filename": filename,
                    "file_data": format!("data:application/pdf;base64,{value}"),
                }),
                PartSource::Url { value, .. } => {
                    json!({"type": "input_file", "file_url": value})
                }
                PartSource::File { .. } => return None,
            })
        }
        UserPart::Audio(_) | UserPart::Video(_) => None,
    }
}

/// Why the Responses API cannot take `part`, if it cannot.
pub(super) fn check_part(part: &UserPart) -> Result<(), String> {
    match (part, content_part(part)) {
        (_, Some(_)) => Ok(()),
        _ if is_file_handle(part) => Err(FILE_HANDLE_UNUSED.to_owned()),
        (UserPart::Image(_), None) => Err(
            "the OpenAI Responses API takes images as PNG, JPEG, GIF or WebP, or by URL".to_owned(),
        ),
        (UserPart::Document(_), None) => {
            Err("the OpenAI Responses API takes documents as PDF".to_owned())
        }
        (UserPart::Audio(_), None) => {
            Err("the OpenAI Responses API takes no audio input".to_owned())
        }
        (_, None) => Err(format!(
            "the OpenAI Responses API cannot take {}",
            part.noun()
        )),
    }
}

/// The function tools, flat as the Responses API takes them.
pub(super) fn tools(request: &ModelRequest) -> Vec<Value> {
    request
        .tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
                // Our schemas are JSON Schema as clients wrote them, not strict mode's subset.
                "strict": false,
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
