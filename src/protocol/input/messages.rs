//! `RunAgentInput.messages`: each message as sent, checked into a [`Message`] (an `activity`
//! message, UI state, is dropped), and the ids, tool names and message count the list must keep.

use super::content::{
    SkippedPart, check_user_content, parse_user_content, tool_content, value_to_text,
};
use super::error::InputError;
use super::limits::{Limits, is_valid_tool_name};
use crate::protocol::ids::{MAX_ID_LEN, MessageId, ToolCallId};
use crate::protocol::message::{Message, ToolCall};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;

/// The messages in order, within the limit and with distinct ids.
pub(crate) fn parse_messages(
    wire: Vec<WireMessage>,
    limits: &Limits,
    skipped: &mut Vec<SkippedPart>,
) -> Result<Vec<Message>, InputError> {
    if wire.len() > limits.max_messages {
        return Err(InputError::invalid(
            "messages",
            format!(
                "RunAgentInput.messages exceeds limit of {}",
                limits.max_messages
            ),
        ));
    }
    let mut seen = HashSet::new();
    let mut messages = Vec::with_capacity(wire.len());
    for (index, wire) in wire.into_iter().enumerate() {
        let before = skipped.len();
        if let Some(message) = wire.validate(index, limits, skipped)? {
            for part in &mut skipped[before..] {
                part.message_id = Some(message.id().clone());
            }
            if !seen.insert(message.id().clone()) {
                return Err(InputError::invalid(
                    format!("messages[{index}].id"),
                    format!("duplicate message id {}", message.id()),
                ));
            }
            messages.push(message);
        }
    }
    Ok(messages)
}

/// The limits the messages at `new` (indexes into `sent`, in order) keep: on the AG-UI routes,
/// where `sent` was parsed leniently, only what the thread does not hold yet counts.
pub(crate) fn check_new_messages(
    sent: &[Message],
    new: &[usize],
    limits: &Limits,
) -> Result<(), InputError> {
    if new.len() > limits.max_messages {
        return Err(InputError::invalid(
            "messages",
            format!(
                "RunAgentInput.messages holds {} messages the thread does not hold yet, over the limit of {}",
                new.len(),
                limits.max_messages
            ),
        ));
    }
    for &index in new {
        if let Some(Message::User { content, .. }) = sent.get(index) {
            check_user_content(content, &format!("messages[{index}].content"), limits)?;
        }
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(crate) enum WireMessage {
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
        /// A provider's artefact the client kept from a `REASONING_ENCRYPTED_VALUE`.
        #[serde(default, alias = "encrypted_value", rename = "encryptedValue")]
        encrypted_value: Option<String>,
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
pub(crate) struct WireToolCall {
    pub(crate) id: String,
    pub(crate) function: WireFunction,
    #[serde(default, alias = "encrypted_value", rename = "encryptedValue")]
    pub(crate) encrypted_value: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct WireFunction {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) arguments: Option<Value>,
}

fn parse_message_id(id: String, index: usize) -> Result<MessageId, InputError> {
    MessageId::parse(id, MAX_ID_LEN)
        .map_err(|err| InputError::of_id(&format!("messages[{index}].id"), err))
}

impl WireMessage {
    fn validate(
        self,
        index: usize,
        limits: &Limits,
        skipped: &mut Vec<SkippedPart>,
    ) -> Result<Option<Message>, InputError> {
        let field = |name: &str| format!("messages[{index}].{name}");
        Ok(Some(match self {
            WireMessage::User { id, content, name } => Message::User {
                id: parse_message_id(id, index)?,
                content: parse_user_content(content, &field("content"), limits, skipped)?,
                name,
            },
            WireMessage::Assistant {
                id,
                content,
                tool_calls,
                name,
                encrypted_value,
            } => {
                let tool_calls = parse_tool_calls(tool_calls.unwrap_or_default(), index)?;
                Message::Assistant {
                    id: parse_message_id(id, index)?,
                    content: content.map(value_to_text).filter(|text| !text.is_empty()),
                    tool_calls,
                    name,
                    encrypted_value: encrypted_value.filter(|value| !value.is_empty()),
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
                    .map_err(|err| InputError::of_id(&field("toolCallId"), err))?,
                content: tool_content(content, &field("content"), skipped),
                error: error.filter(|error| !error.is_empty()),
                metadata: None,
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

/// An assistant message's tool calls: ids and names checked, arguments kept as text.
fn parse_tool_calls(
    wire: Vec<WireToolCall>,
    message_index: usize,
) -> Result<Vec<ToolCall>, InputError> {
    let mut calls = Vec::with_capacity(wire.len());
    for (call_index, call) in wire.into_iter().enumerate() {
        let call_field = format!("messages[{message_index}].toolCalls[{call_index}]");
        let call_id = ToolCallId::parse(call.id, MAX_ID_LEN)
            .map_err(|err| InputError::of_id(&format!("{call_field}.id"), err))?;
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
        let encrypted_value = call.encrypted_value.filter(|value| !value.is_empty());
        calls.push(
            ToolCall::new(call_id, call.function.name, arguments)
                .with_encrypted_value(encrypted_value),
        );
    }
    Ok(calls)
}
