//! One model turn's assembly, without I/O: model deltas in, AG-UI events and the assembled
//! reasoning and assistant messages out. The run loop feeds it and sends what it returns.

mod preview;

use crate::genui::ogui;
use crate::model::artefact::Artefact;
use crate::model::reasoning::ReasoningArtefact;
use crate::model::{FinishReason, ModelDelta, Served, Usage};
use crate::protocol::events::{EncryptedValueSubtype, ReasoningRole, TextRole};
use crate::protocol::{Event, Message, MessageId, ToolCall, ToolCallId};
use preview::Preview;
use std::collections::HashSet;

/// A tool call of the current turn.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct TurnCall {
    pub(super) index: usize,
    pub(super) id: ToolCallId,
    pub(super) name: String,
    pub(super) arguments: String,
    /// The provider's opaque artefact for the call (a thought signature, an item id).
    pub(super) encrypted_value: Option<String>,
}

/// How a turn ended, from the model's finish reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TurnFault {
    /// Cut off at the token limit in the middle of a tool call.
    TruncatedToolCall,
    ContentFilter,
}

/// A reasoning block being streamed: one `REASONING_*` message, stored as one reasoning message.
struct OpenReasoning {
    id: MessageId,
    text: String,
    /// Set when the block is complete (a signature), or withheld (redacted).
    artefact: Option<ReasoningArtefact>,
}

pub(super) struct TurnAssembler {
    message_id: MessageId,
    text: String,
    text_open: bool,
    reasoning: Option<OpenReasoning>,
    /// The turn's closed reasoning blocks, in order.
    reasoned: Vec<Message>,
    calls: Vec<TurnCall>,
    finish: Option<FinishReason>,
    usage: Usage,
    /// The provider's opaque artefact for the turn's assistant message.
    message_artefact: Option<String>,
    /// Which model served the turn, when the resilience layer said.
    served: Option<Served>,
    /// The client reads AG-UI 1.1's `encryptedValueType`.
    value_types: bool,
    /// The client offers Open Generative UI's `generateSandboxedUi`: its calls stream as the
    /// activity that previews them.
    open_ui: bool,
    /// The turn's `generateSandboxedUi` calls being read, by call index.
    previews: Vec<Preview>,
}

impl TurnAssembler {
    pub(super) fn new(message_id: MessageId) -> Self {
        Self {
            message_id,
            text: String::new(),
            text_open: false,
            reasoning: None,
            reasoned: Vec::new(),
            calls: Vec::new(),
            finish: None,
            usage: Usage::default(),
            message_artefact: None,
            served: None,
            value_types: false,
            open_ui: false,
            previews: Vec::new(),
        }
    }

    /// Streams `generateSandboxedUi` calls as Open Generative UI's activity (the client offers
    /// the tool).
    pub(super) fn with_open_generative_ui(mut self, open_ui: bool) -> Self {
        self.open_ui = open_ui;
        self
    }

    /// Names each encrypted value's type (AG-UI 1.1's `encryptedValueType`), for clients that
    /// read it.
    pub(super) fn with_value_types(mut self, value_types: bool) -> Self {
        self.value_types = value_types;
        self
    }

    pub(super) fn usage(&self) -> Usage {
        self.usage
    }

    /// Which model served the turn, when the resilience layer said.
    pub(super) fn served(&self) -> Option<&Served> {
        self.served.as_ref()
    }

    /// Takes one delta; the events it causes are appended to `out`. `used_call_ids` holds the
    /// thread's tool call ids: providers reuse ids across turns ("call_0") or send none, and a
    /// reused id would make a tool result answer the wrong call.
    pub(super) fn push(
        &mut self,
        delta: ModelDelta,
        used_call_ids: &mut HashSet<ToolCallId>,
        out: &mut Vec<Event>,
    ) {
        match delta {
            ModelDelta::Text(piece) if !piece.is_empty() => {
                self.close_reasoning(out);
                if !self.text_open {
                    // A reopened id appends to the same message in the client, matching what is
                    // stored: one assistant message per turn.
                    out.push(Event::TextMessageStart {
                        message_id: self.message_id.clone(),
                        role: TextRole::Assistant,
                    });
                    self.text_open = true;
                }
                self.text.push_str(&piece);
                out.push(Event::TextMessageContent {
                    message_id: self.message_id.clone(),
                    delta: piece,
                });
            }
            ModelDelta::Reasoning(piece) if !piece.is_empty() => {
                self.close_text(out);
                // Text after a signature is the next reasoning block.
                self.close_signed_reasoning(out);
                let open = self.open_reasoning(out);
                open.text.push_str(&piece);
                let message_id = open.id.clone();
                out.push(Event::ReasoningMessageContent {
                    message_id,
                    delta: piece,
                });
            }
            ModelDelta::ReasoningSignature(signature) if !signature.is_empty() => {
                self.close_text(out);
                self.close_signed_reasoning(out);
                self.open_reasoning(out).artefact = Some(ReasoningArtefact::Signature(signature));
            }
            ModelDelta::RedactedReasoning(bytes) if !bytes.is_empty() => {
                self.close_text(out);
                self.close_reasoning(out);
                self.open_reasoning(out).artefact = Some(ReasoningArtefact::Redacted(bytes));
                self.close_reasoning(out);
            }
            // The item closes the summary streamed before it: one block, complete.
            ModelDelta::ReasoningItem(item) if !item.is_empty() => {
                self.close_text(out);
                self.close_signed_reasoning(out);
                self.open_reasoning(out).artefact = Some(ReasoningArtefact::Item(item));
                self.close_reasoning(out);
            }
            ModelDelta::ToolCallArtefact { index, value } if !value.is_empty() => {
                self.set_call_artefact(index, value, out);
            }
            ModelDelta::MessageArtefact(value) if !value.is_empty() => {
                self.message_artefact = Some(value);
            }
            ModelDelta::Served(served) => self.served = Some(served),
            ModelDelta::ToolCallStart { index, id, name } => {
                self.start_call(index, id, name, used_call_ids, out);
            }
            ModelDelta::ToolCallArgs { index, delta } if !delta.is_empty() => {
                if let Some(call) = self.calls.iter_mut().rev().find(|call| call.index == index) {
                    call.arguments.push_str(&delta);
                    let shown = self
                        .previews
                        .iter_mut()
                        .rev()
                        .find(|preview| preview.index() == index)
                        .and_then(|preview| preview.read(&delta));
                    out.push(Event::ToolCallArgs {
                        tool_call_id: call.id.clone(),
                        delta,
                    });
                    out.extend(shown);
                }
            }
            ModelDelta::Usage(usage) => self.usage += usage,
            ModelDelta::Finish(reason) => self.finish = Some(reason),
            ModelDelta::Text(_)
            | ModelDelta::Reasoning(_)
            | ModelDelta::ReasoningSignature(_)
            | ModelDelta::RedactedReasoning(_)
            | ModelDelta::ReasoningItem(_)
            | ModelDelta::ToolCallArtefact { .. }
            | ModelDelta::MessageArtefact(_)
            | ModelDelta::ResponseId(_)
            | ModelDelta::ToolCallArgs { .. } => {}
        }
    }

    /// Opens tool call `index` of the turn, under the provider's id unless the thread has
    /// used it (or it has none).
    fn start_call(
        &mut self,
        index: usize,
        id: Option<String>,
        name: String,
        used_call_ids: &mut HashSet<ToolCallId>,
        out: &mut Vec<Event>,
    ) {
        self.close_reasoning(out);
        self.close_text(out);
        let id = id
            .and_then(|id| ToolCallId::parse(id, crate::protocol::ids::MAX_ID_LEN).ok())
            .filter(|id| !used_call_ids.contains(id))
            .unwrap_or_else(ToolCallId::generate);
        used_call_ids.insert(id.clone());
        if self.open_ui && name == ogui::TOOL_NAME {
            let (preview, opening) = Preview::open(index, &id);
            out.push(opening);
            self.previews.push(preview);
        }
        out.push(Event::ToolCallStart {
            tool_call_id: id.clone(),
            tool_call_name: name.clone(),
            parent_message_id: Some(self.message_id.clone()),
        });
        self.calls.push(TurnCall {
            index,
            id,
            name,
            arguments: String::new(),
            encrypted_value: None,
        });
    }

    /// Keeps the provider's artefact with call `index` and gives it to the client, whose
    /// history must carry it back (`REASONING_ENCRYPTED_VALUE` for a tool call).
    fn set_call_artefact(&mut self, index: usize, value: String, out: &mut Vec<Event>) {
        let Some(call) = self.calls.iter_mut().rev().find(|call| call.index == index) else {
            return;
        };
        out.push(Event::ReasoningEncryptedValue {
            subtype: EncryptedValueSubtype::ToolCall,
            entity_id: call.id.to_string(),
            encrypted_value: value.clone(),
            encrypted_value_type: self
                .value_types
                .then(|| Artefact::type_of(&value))
                .flatten(),
        });
        call.encrypted_value = Some(value);
    }

    /// Closes the open text and reasoning messages; the tool calls stay open for the caller to
    /// end after the step.
    pub(super) fn close(&mut self, out: &mut Vec<Event>) {
        self.close_reasoning(out);
        self.close_text(out);
        // After the text, so that the client holds the message it names.
        if let Some(value) = &self.message_artefact
            && (!self.text.is_empty() || !self.calls.is_empty())
        {
            out.push(Event::ReasoningEncryptedValue {
                subtype: EncryptedValueSubtype::Message,
                entity_id: self.message_id.to_string(),
                encrypted_value: value.clone(),
                encrypted_value_type: self.value_types.then(|| Artefact::type_of(value)).flatten(),
            });
        }
    }

    /// The turn's reasoning messages, closed by [`Self::close`]; they go before its assistant
    /// message in the thread.
    pub(super) fn take_reasoning(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.reasoned)
    }

    /// `TOOL_CALL_END` for every call of the turn, a preview's end of generation before its
    /// call's.
    pub(super) fn end_calls(&self, out: &mut Vec<Event>) {
        for call in &self.calls {
            if let Some(preview) = self
                .previews
                .iter()
                .find(|preview| preview.id() == &call.id)
            {
                out.push(preview.end());
            }
            out.push(Event::ToolCallEnd {
                tool_call_id: call.id.clone(),
            });
        }
    }

    /// The completed turn: the assistant message to store (if the model said or called
    /// anything) and its tool calls.
    pub(super) fn finish(self) -> Result<(Option<Message>, Vec<TurnCall>), TurnFault> {
        match self.finish {
            Some(FinishReason::Length) if !self.calls.is_empty() => {
                return Err(TurnFault::TruncatedToolCall);
            }
            Some(FinishReason::ContentFilter) => return Err(TurnFault::ContentFilter),
            _ => {}
        }
        if self.text.is_empty() && self.calls.is_empty() {
            return Ok((None, self.calls));
        }
        let message = Message::Assistant {
            id: self.message_id,
            content: (!self.text.is_empty()).then_some(self.text),
            tool_calls: self
                .calls
                .iter()
                .map(|call| {
                    ToolCall::new(call.id.clone(), call.name.clone(), call.arguments.clone())
                        .with_encrypted_value(call.encrypted_value.clone())
                })
                .collect(),
            name: None,
            encrypted_value: self.message_artefact,
        };
        Ok((Some(message), self.calls))
    }

    /// What the model answered so far, as an OpenAI-style assistant message (for traces).
    pub(super) fn preview(&self) -> serde_json::Value {
        let calls: Vec<serde_json::Value> = self
            .calls
            .iter()
            .map(|call| {
                serde_json::json!({"id": call.id, "name": call.name, "arguments": call.arguments})
            })
            .collect();
        serde_json::json!([{"role": "assistant", "content": self.text, "tool_calls": calls}])
    }

    /// Whether the turn has streamed anything a client saw.
    pub(super) fn has_output(&self) -> bool {
        !self.text.is_empty()
            || self.reasoning.is_some()
            || !self.reasoned.is_empty()
            || !self.calls.is_empty()
    }

    /// What a stopped turn leaves: the text streamed so far. Tool calls whose arguments may be
    /// cut are dropped, so the stored history never holds a call nobody can answer.
    pub(super) fn partial(self) -> Option<Message> {
        (!self.text.is_empty()).then(|| Message::Assistant {
            id: self.message_id,
            content: Some(self.text),
            tool_calls: Vec::new(),
            name: None,
            encrypted_value: None,
        })
    }

    fn close_text(&mut self, out: &mut Vec<Event>) {
        if std::mem::take(&mut self.text_open) {
            out.push(Event::TextMessageEnd {
                message_id: self.message_id.clone(),
            });
        }
    }

    /// Closes the open reasoning block if its signature came: it is complete.
    fn close_signed_reasoning(&mut self, out: &mut Vec<Event>) {
        if self
            .reasoning
            .as_ref()
            .is_some_and(|open| open.artefact.is_some())
        {
            self.close_reasoning(out);
        }
    }

    /// The open reasoning block, opened (and announced) if there is none.
    fn open_reasoning(&mut self, out: &mut Vec<Event>) -> &mut OpenReasoning {
        self.reasoning.get_or_insert_with(|| {
            let id = MessageId::generate();
            out.push(Event::ReasoningStart {
                message_id: id.clone(),
            });
            out.push(Event::ReasoningMessageStart {
                message_id: id.clone(),
                role: ReasoningRole::Reasoning,
            });
            OpenReasoning {
                id,
                text: String::new(),
                artefact: None,
            }
        })
    }

    /// Ends the open reasoning block; its artefact goes to clients that keep their own history
    /// as `REASONING_ENCRYPTED_VALUE` on the reasoning message, before `REASONING_END`.
    fn close_reasoning(&mut self, out: &mut Vec<Event>) {
        if let Some(open) = self.reasoning.take() {
            out.push(Event::ReasoningMessageEnd {
                message_id: open.id.clone(),
            });
            let encrypted_value = open.artefact.as_ref().map(ReasoningArtefact::encode);
            if let (Some(value), Some(artefact)) = (&encrypted_value, &open.artefact) {
                out.push(Event::ReasoningEncryptedValue {
                    subtype: EncryptedValueSubtype::Message,
                    entity_id: open.id.to_string(),
                    encrypted_value: value.clone(),
                    encrypted_value_type: self.value_types.then(|| artefact.value_type()),
                });
            }
            out.push(Event::ReasoningEnd {
                message_id: open.id.clone(),
            });
            self.reasoned.push(Message::Reasoning {
                id: open.id,
                content: open.text,
                encrypted_value,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .map(|event| {
                serde_json::to_value(event).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }

    fn feed(deltas: Vec<ModelDelta>) -> (TurnAssembler, Vec<Event>) {
        let mut turn = TurnAssembler::new(MessageId::parse("m", 128).unwrap());
        let mut used = HashSet::new();
        let mut out = Vec::new();
        for delta in deltas {
            turn.push(delta, &mut used, &mut out);
        }
        turn.close(&mut out);
        (turn, out)
    }

    #[test]
    fn text_reasoning_and_calls_become_closed_blocks_and_one_message() {
        let (turn, events) = feed(vec![
            ModelDelta::Reasoning("hm".into()),
            ModelDelta::Text("Hel".into()),
            ModelDelta::Text("lo".into()),
            ModelDelta::ToolCallStart {
                index: 0,
                id: Some("call_0".into()),
                name: "f".into(),
            },
            ModelDelta::ToolCallArgs {
                index: 0,
                delta: "{\"a\":".into(),
            },
            ModelDelta::ToolCallArgs {
                index: 0,
                delta: "1}".into(),
            },
            ModelDelta::Usage(Usage {
                input_tokens: 3,
                output_tokens: 4,
                ..Default::default()
            }),
            ModelDelta::Finish(FinishReason::ToolCalls),
        ]);
        assert_eq!(
            kinds(&events),
            [
                "REASONING_START",
                "REASONING_MESSAGE_START",
                "REASONING_MESSAGE_CONTENT",
                "REASONING_MESSAGE_END",
                "REASONING_END",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_ARGS",
            ]
        );
        assert_eq!(turn.usage().output_tokens, 4);
        let (message, calls) = turn.finish().unwrap();
        let Some(Message::Assistant {
            content,
            tool_calls,
            ..
        }) = message
        else {
            panic!("no assistant message")
        };
        assert_eq!(content.as_deref(), Some("Hello"));
        assert_eq!(tool_calls.len(), 1);
        assert_eq!(calls[0].arguments, "{\"a\":1}");
        assert_eq!(calls[0].id.as_str(), "call_0");
    }

    #[test]
    fn a_reused_provider_id_is_replaced() {
        let mut turn = TurnAssembler::new(MessageId::parse("m", 128).unwrap());
        let mut used = HashSet::from([ToolCallId::parse("call_0", 128).unwrap()]);
        let mut out = Vec::new();
        turn.push(
            ModelDelta::ToolCallStart {
                index: 0,
                id: Some("call_0".into()),
                name: "f".into(),
            },
            &mut used,
            &mut out,
        );
        let (_, calls) = turn.finish().unwrap();
        assert_ne!(calls[0].id.as_str(), "call_0");
        assert_eq!(used.len(), 2);
    }

    #[test]
    fn a_truncated_tool_call_and_a_filtered_answer_are_faults() {
        let (turn, _) = feed(vec![
            ModelDelta::ToolCallStart {
                index: 0,
                id: None,
                name: "f".into(),
            },
            ModelDelta::Finish(FinishReason::Length),
        ]);
        assert_eq!(turn.finish().unwrap_err(), TurnFault::TruncatedToolCall);
        let (turn, _) = feed(vec![
            ModelDelta::Text("x".into()),
            ModelDelta::Finish(FinishReason::ContentFilter),
        ]);
        assert_eq!(turn.finish().unwrap_err(), TurnFault::ContentFilter);
    }

    #[test]
    fn a_stopped_turn_keeps_its_text_and_drops_its_calls() {
        let (turn, _) = feed(vec![
            ModelDelta::Text("partial ans".into()),
            ModelDelta::ToolCallStart {
                index: 0,
                id: None,
                name: "f".into(),
            },
        ]);
        let Some(Message::Assistant {
            content,
            tool_calls,
            ..
        }) = turn.partial()
        else {
            panic!("no partial message")
        };
        assert_eq!(content.as_deref(), Some("partial ans"));
        assert!(tool_calls.is_empty());
        let (empty, _) = feed(vec![]);
        assert!(empty.partial().is_none());
    }

    #[test]
    fn signed_and_redacted_reasoning_become_reasoning_messages_with_encrypted_values() {
        let (mut turn, events) = feed(vec![
            ModelDelta::Reasoning("Check ".into()),
            ModelDelta::Reasoning("the clock.".into()),
            ModelDelta::ReasoningSignature("sig-1".into()),
            ModelDelta::RedactedReasoning(vec![7, 8]),
            ModelDelta::Reasoning("Then answer.".into()),
            ModelDelta::ReasoningSignature("sig-2".into()),
            ModelDelta::ToolCallStart {
                index: 0,
                id: Some("c".into()),
                name: "f".into(),
            },
            ModelDelta::Finish(FinishReason::ToolCalls),
        ]);
        let expected = [
            // The signed block.
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_ENCRYPTED_VALUE",
            "REASONING_END",
            // The redacted block: no text.
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_END",
            "REASONING_ENCRYPTED_VALUE",
            "REASONING_END",
            // Text after a redacted block starts the next block.
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_ENCRYPTED_VALUE",
            "REASONING_END",
            "TOOL_CALL_START",
        ];
        assert_eq!(kinds(&events), expected);

        let reasoning = turn.take_reasoning();
        let values: Vec<Option<&str>> = reasoning
            .iter()
            .map(|message| match message {
                Message::Reasoning {
                    encrypted_value, ..
                } => encrypted_value.as_deref(),
                _ => panic!("not reasoning: {message:?}"),
            })
            .collect();
        assert_eq!(
            values,
            [
                Some("signature:sig-1"),
                Some("redacted:Bwg="),
                Some("signature:sig-2")
            ]
        );
        let Message::Reasoning { id, content, .. } = &reasoning[0] else {
            unreachable!()
        };
        assert_eq!(content, "Check the clock.");
        // The event names the stored reasoning message, whose id the REASONING_* events carry.
        let value_event = serde_json::to_value(
            events
                .iter()
                .find(|event| matches!(event, Event::ReasoningEncryptedValue { .. }))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(value_event["subtype"], "message");
        assert_eq!(value_event["entityId"], id.as_str());
        assert_eq!(value_event["encryptedValue"], "signature:sig-1");
        assert!(turn.take_reasoning().is_empty());
        let (message, _) = turn.finish().unwrap();
        assert!(matches!(message, Some(Message::Assistant { .. })));
    }
}
