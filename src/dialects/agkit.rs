//! AG-Kit's `send-message` dialect (the AG-Kit send-message protocol): id-less incremental messages keyed by
//! `conversationId`, and lower-case events `text`, `tool-call-start`, `tool-call-args`,
//! `tool-call-end`. Where that protocol is silent this server adds `tool-result` (a server tool's
//! result) and `error` (the run failed), and sends nothing else.

use super::{Encoder, data_frame};
use crate::protocol::events::Event;
use crate::protocol::ids::MessageId;
use crate::protocol::input::{InputError, Limits, RunInput, from_value};
use bytes::Bytes;
use serde_json::{Map, Value, json};

/// Whether a body on the shared `/send-message` route is AG-Kit's: it names a `conversationId`
/// and no `threadId`.
pub(crate) fn is_agkit_body(body: &Value) -> bool {
    let has = |key: &str| body.get(key).is_some_and(|value| !value.is_null());
    has("conversationId") && !has("threadId") && !has("thread_id")
}

/// Turns an AG-Kit request into a validated run. Messages carry no ids: each gets a fresh one,
/// so everything a request sends is new to the thread (AG-Kit sends only the increment).
pub(crate) fn from_json(body: Value, limits: &Limits) -> Result<RunInput, InputError> {
    let Value::Object(mut body) = body else {
        return Err(InputError::Invalid {
            field: "body".to_owned(),
            message: "must be a JSON object".to_owned(),
        });
    };
    let messages = match body.remove("messages") {
        Some(Value::Array(messages)) => messages,
        Some(_) => {
            return Err(InputError::Invalid {
                field: "messages".to_owned(),
                message: "must be an array".to_owned(),
            });
        }
        None => Vec::new(),
    };
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|message| match message {
            Value::Object(mut fields) => {
                fields
                    .entry("id")
                    .or_insert_with(|| json!(MessageId::generate()));
                Value::Object(fields)
            }
            other => other,
        })
        .collect();
    let mut input = Map::new();
    if let Some(thread) = body.remove("conversationId").filter(|id| !id.is_null()) {
        input.insert("threadId".to_owned(), thread);
    }
    input.insert("messages".to_owned(), Value::Array(messages));
    for key in ["tools", "state", "forwardedProps", "context"] {
        if let Some(value) = body.remove(key) {
            input.insert(key.to_owned(), value);
        }
    }
    from_value(Value::Object(input), limits)
}

/// Encodes a run as AG-Kit events.
#[derive(Default)]
pub(crate) struct AgKitEncoder;

impl Encoder for AgKitEncoder {
    fn encode(&mut self, event: &Event) -> Vec<Bytes> {
        let value = match event {
            Event::TextMessageContent { delta, .. } => json!({"type": "text", "content": delta}),
            Event::ToolCallStart {
                tool_call_id,
                tool_call_name,
                ..
            } => {
                json!({"type": "tool-call-start", "toolCallId": tool_call_id, "toolCallName": tool_call_name})
            }
            Event::ToolCallArgs {
                tool_call_id,
                delta,
            } => json!({"type": "tool-call-args", "toolCallId": tool_call_id, "delta": delta}),
            Event::ToolCallEnd { tool_call_id } => {
                json!({"type": "tool-call-end", "toolCallId": tool_call_id})
            }
            Event::ToolCallResult {
                tool_call_id,
                content,
                ..
            } => json!({"type": "tool-result", "toolCallId": tool_call_id, "content": content}),
            Event::RunError { message, code, .. } => {
                json!({"type": "error", "code": code, "message": message})
            }
            _ => return Vec::new(),
        };
        vec![data_frame(&value)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Message;

    #[test]
    fn a_seed_000_request_becomes_a_run() {
        let body = json!({
            "messages": [{"role": "user", "content": "Change background color to blue."}],
            "tools": [{"name": "change-background-color", "description": "d",
                       "parameters": r#"{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}"#}],
            "conversationId": "c7d334f7-d920-4dd3-91e0-53d695e79fc0"
        });
        assert!(is_agkit_body(&body));
        let input = from_json(body, &Limits::default()).unwrap();
        assert_eq!(
            input.thread_id.unwrap().as_str(),
            "c7d334f7-d920-4dd3-91e0-53d695e79fc0"
        );
        assert!(
            matches!(&input.messages[0], Message::User { id, .. } if id.as_str().starts_with("msg_"))
        );
        assert_eq!(input.tools[0].parameters["required"], json!(["color"]));
    }

    #[test]
    fn agui_bodies_on_send_message_stay_agui() {
        assert!(!is_agkit_body(
            &json!({"threadId": "t", "conversationId": "c", "messages": []})
        ));
        assert!(!is_agkit_body(&json!({"threadId": "t", "messages": []})));
    }

    #[test]
    fn bad_shapes_are_refused_with_the_field() {
        let err = from_json(json!({"messages": "hi"}), &Limits::default()).unwrap_err();
        assert_eq!(err.field(), Some("messages"));
        let err = from_json(
            json!({"messages": [{"role": "robot", "content": "x"}]}),
            &Limits::default(),
        )
        .unwrap_err();
        assert_eq!(err.field(), Some("messages[0].role"));
    }
}
