//! What a stream has opened and not yet closed (text messages, tool calls, reasoning messages
//! and spans, steps, sub-agents), so that a stream ending before its run closes them before the
//! notice that says where the run goes on: every AG-UI client verifies that nothing is open at a
//! `RUN_FINISHED`.

use super::events::{Event, RecordedEvent};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Who opened an item: the run's own agent (`None`) or the sub-agent invocation of that id.
type Owner = Option<String>;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Text,
    Call,
    Reasoning,
    Span,
    Step,
    Subagent,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Item {
    kind: Kind,
    /// The message, call or span id, the step's name, or the invocation's `subagentRunId`.
    id: String,
    owner: Owner,
}

/// The fields of an event that open and close items.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Head {
    #[serde(rename = "type")]
    kind: String,
    message_id: Option<String>,
    tool_call_id: Option<String>,
    step_name: Option<String>,
    subagent_run_id: Option<String>,
}

impl Head {
    fn of(recorded: &RecordedEvent) -> Option<Self> {
        match &recorded.event {
            Some(Event::Forwarded(fields)) => {
                serde_json::from_value(Value::Object(fields.clone())).ok()
            }
            Some(event) => Self::of_typed(event),
            None => serde_json::from_slice(&recorded.json).ok(),
        }
    }

    /// Our own events, without a round trip through JSON (the common case: a model streaming).
    fn of_typed(event: &Event) -> Option<Self> {
        let head = |kind: &str| Head {
            kind: kind.to_owned(),
            ..Head::default()
        };
        Some(match event {
            Event::TextMessageContent { .. }
            | Event::ToolCallArgs { .. }
            | Event::ReasoningMessageContent { .. } => return None,
            Event::TextMessageStart { message_id, .. } => Head {
                message_id: Some(message_id.to_string()),
                ..head("TEXT_MESSAGE_START")
            },
            Event::TextMessageEnd { message_id } => Head {
                message_id: Some(message_id.to_string()),
                ..head("TEXT_MESSAGE_END")
            },
            Event::ToolCallStart { tool_call_id, .. } => Head {
                tool_call_id: Some(tool_call_id.to_string()),
                ..head("TOOL_CALL_START")
            },
            Event::ToolCallEnd { tool_call_id } => Head {
                tool_call_id: Some(tool_call_id.to_string()),
                ..head("TOOL_CALL_END")
            },
            Event::ReasoningStart { message_id } => Head {
                message_id: Some(message_id.to_string()),
                ..head("REASONING_START")
            },
            Event::ReasoningEnd { message_id } => Head {
                message_id: Some(message_id.to_string()),
                ..head("REASONING_END")
            },
            Event::ReasoningMessageStart { message_id, .. } => Head {
                message_id: Some(message_id.to_string()),
                ..head("REASONING_MESSAGE_START")
            },
            Event::ReasoningMessageEnd { message_id } => Head {
                message_id: Some(message_id.to_string()),
                ..head("REASONING_MESSAGE_END")
            },
            Event::StepStarted { step_name } => Head {
                step_name: Some(step_name.clone()),
                ..head("STEP_STARTED")
            },
            Event::StepFinished { step_name } => Head {
                step_name: Some(step_name.clone()),
                ..head("STEP_FINISHED")
            },
            Event::SubagentStarted {
                subagent_run_id, ..
            } => Head {
                subagent_run_id: Some(subagent_run_id.clone()),
                ..head("SUBAGENT_STARTED")
            },
            Event::SubagentFinished {
                subagent_run_id, ..
            } => Head {
                subagent_run_id: Some(subagent_run_id.clone()),
                ..head("SUBAGENT_FINISHED")
            },
            Event::SubagentError {
                subagent_run_id, ..
            } => Head {
                subagent_run_id: Some(subagent_run_id.clone()),
                ..head("SUBAGENT_ERROR")
            },
            Event::RunFinished { .. } => head("RUN_FINISHED"),
            Event::RunError { .. } => head("RUN_ERROR"),
            _ => return None,
        })
    }
}

/// What one stream has opened, in the order it opened them.
#[derive(Debug, Default)]
pub(crate) struct OpenItems {
    open: Vec<Item>,
}

impl OpenItems {
    /// Notes what `recorded` opens or closes. What is not one of the run's events (the notice,
    /// closings) changes nothing.
    pub(crate) fn observe(&mut self, recorded: &RecordedEvent) {
        if recorded.notice {
            return;
        }
        let Some(head) = Head::of(recorded) else {
            return;
        };
        let owner = head.subagent_run_id.clone();
        let (kind, id, opens) = match head.kind.as_str() {
            "RUN_FINISHED" | "RUN_ERROR" => return self.open.clear(),
            "TEXT_MESSAGE_START" => (Kind::Text, head.message_id, true),
            "TEXT_MESSAGE_END" => (Kind::Text, head.message_id, false),
            "TOOL_CALL_START" => (Kind::Call, head.tool_call_id, true),
            "TOOL_CALL_END" => (Kind::Call, head.tool_call_id, false),
            "REASONING_MESSAGE_START" => (Kind::Reasoning, head.message_id, true),
            "REASONING_MESSAGE_END" => (Kind::Reasoning, head.message_id, false),
            "REASONING_START" => (Kind::Span, head.message_id, true),
            "REASONING_END" => (Kind::Span, head.message_id, false),
            "STEP_STARTED" => (Kind::Step, head.step_name, true),
            "STEP_FINISHED" => (Kind::Step, head.step_name, false),
            "SUBAGENT_STARTED" => return self.open_subagent(owner),
            "SUBAGENT_FINISHED" | "SUBAGENT_ERROR" => return self.end_subagent(owner),
            _ => return,
        };
        let Some(id) = id else {
            return;
        };
        // Steps are per owner; every other id names one item whoever tags it.
        let same = |item: &Item| {
            item.kind == kind && item.id == id && (kind != Kind::Step || item.owner == owner)
        };
        if opens {
            self.open.push(Item { kind, id, owner });
        } else if let Some(at) = self.open.iter().position(same) {
            self.open.remove(at);
        }
    }

    fn open_subagent(&mut self, id: Option<String>) {
        if let Some(id) = id {
            self.open.push(Item {
                kind: Kind::Subagent,
                id,
                owner: None,
            });
        }
    }

    /// A sub-agent's end ends whatever it still had open.
    fn end_subagent(&mut self, id: Option<String>) {
        self.open.retain(|item| {
            item.owner != id && !(item.kind == Kind::Subagent && Some(&item.id) == id.as_ref())
        });
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// The events that close everything open, innermost first: messages, calls and reasoning,
    /// then spans, steps, and last the sub-agents (suspended: their work goes on with the run).
    /// Like the notice they come before, they are not the run's events: no id, never recorded,
    /// and `metadata["agui-lambda"].continues` (`continues`) says where the run goes on.
    pub(crate) fn closings(&self, continues: &Value, timestamp_ms: i64) -> Vec<RecordedEvent> {
        let rank = |kind: &Kind| match kind {
            Kind::Text | Kind::Call | Kind::Reasoning => 0,
            Kind::Span => 1,
            Kind::Step => 2,
            Kind::Subagent => 3,
        };
        let mut items: Vec<&Item> = self.open.iter().rev().collect();
        items.sort_by_key(|item| rank(&item.kind));
        items
            .into_iter()
            .map(|item| closing(item, continues, timestamp_ms))
            .collect()
    }
}

fn closing(item: &Item, continues: &Value, timestamp_ms: i64) -> RecordedEvent {
    let (kind, field) = match item.kind {
        Kind::Text => ("TEXT_MESSAGE_END", "messageId"),
        Kind::Call => ("TOOL_CALL_END", "toolCallId"),
        Kind::Reasoning => ("REASONING_MESSAGE_END", "messageId"),
        Kind::Span => ("REASONING_END", "messageId"),
        Kind::Step => ("STEP_FINISHED", "stepName"),
        Kind::Subagent => ("SUBAGENT_FINISHED", "subagentRunId"),
    };
    let mut fields = Map::new();
    fields.insert("type".to_owned(), json!(kind));
    fields.insert(field.to_owned(), json!(item.id));
    if item.kind == Kind::Subagent {
        fields.insert("outcome".to_owned(), json!({"type": "suspended"}));
    } else if let Some(owner) = &item.owner {
        fields.insert("subagentRunId".to_owned(), json!(owner));
    }
    fields.insert("timestamp".to_owned(), json!(timestamp_ms));
    fields.insert(
        "metadata".to_owned(),
        json!({super::events::METADATA_KEY: {"continues": continues}}),
    );
    RecordedEvent::closing(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ids::{MessageId, ToolCallId};

    fn typed(event: Event) -> RecordedEvent {
        RecordedEvent::new(1, event, 5)
    }

    fn stored(json: Value) -> RecordedEvent {
        RecordedEvent::stored(1, json.to_string())
    }

    fn closing_json(items: &OpenItems) -> Vec<Value> {
        items
            .closings(&json!({"events": "/e", "lastEventId": 9}), 7)
            .iter()
            .map(|closing| serde_json::from_slice(&closing.json).unwrap())
            .collect()
    }

    #[test]
    fn closes_what_is_open_innermost_first_and_nothing_closed() {
        let mut items = OpenItems::default();
        let message = MessageId::parse("m1", 128).unwrap();
        for event in [
            Event::StepStarted {
                step_name: "model_turn_1".into(),
            },
            Event::ReasoningStart {
                message_id: MessageId::parse("r1", 128).unwrap(),
            },
            Event::TextMessageStart {
                message_id: message.clone(),
                role: crate::protocol::events::TextRole::Assistant,
            },
            Event::ToolCallStart {
                tool_call_id: ToolCallId::parse("c1", 128).unwrap(),
                tool_call_name: "f".into(),
                parent_message_id: Some(message.clone()),
            },
            Event::ToolCallEnd {
                tool_call_id: ToolCallId::parse("c1", 128).unwrap(),
            },
        ] {
            items.observe(&typed(event));
        }
        let closings = closing_json(&items);
        let kinds: Vec<&str> = closings
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["TEXT_MESSAGE_END", "REASONING_END", "STEP_FINISHED"]
        );
        assert_eq!(closings[0]["messageId"], "m1");
        assert_eq!(closings[2]["stepName"], "model_turn_1");
        assert_eq!(
            closings[0]["metadata"],
            json!({"agui-lambda": {"continues": {"events": "/e", "lastEventId": 9}}})
        );
        assert!(
            items
                .closings(&json!({}), 1)
                .iter()
                .all(|c| c.notice && !c.terminal)
        );
    }

    #[test]
    fn a_sub_agent_closes_with_its_own_tag_and_ends_suspended_after_its_items() {
        let mut items = OpenItems::default();
        for json in [
            json!({"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "researcher"}),
            json!({"type": "STEP_STARTED", "stepName": "model_turn_1", "subagentRunId": "s1"}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "s1:m", "role": "assistant", "subagentRunId": "s1"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "s1:m", "delta": "x", "subagentRunId": "s1"}),
        ] {
            items.observe(&stored(json));
        }
        let closings = closing_json(&items);
        assert_eq!(closings[0]["type"], "TEXT_MESSAGE_END");
        assert_eq!(closings[0]["subagentRunId"], "s1");
        assert_eq!(closings[1]["type"], "STEP_FINISHED");
        assert_eq!(closings[1]["subagentRunId"], "s1");
        assert_eq!(closings[2]["type"], "SUBAGENT_FINISHED");
        assert_eq!(closings[2]["outcome"], json!({"type": "suspended"}));
        // Once the sub-agent ends, nothing of it is left to close.
        items.observe(&stored(
            json!({"type": "SUBAGENT_ERROR", "subagentRunId": "s1", "message": "x"}),
        ));
        assert!(items.is_empty());
    }

    #[test]
    fn a_run_s_end_and_a_parent_and_child_step_of_one_name_are_told_apart() {
        let mut items = OpenItems::default();
        for json in [
            json!({"type": "STEP_STARTED", "stepName": "model_turn_1"}),
            json!({"type": "STEP_STARTED", "stepName": "model_turn_1", "subagentRunId": "s1"}),
            json!({"type": "STEP_FINISHED", "stepName": "model_turn_1", "subagentRunId": "s1"}),
        ] {
            items.observe(&stored(json));
        }
        let closings = closing_json(&items);
        assert_eq!(closings.len(), 1);
        assert!(closings[0].get("subagentRunId").is_none());
        items.observe(&stored(
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
        ));
        assert!(items.is_empty());
    }
}
