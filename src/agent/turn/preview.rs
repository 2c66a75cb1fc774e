//! A turn's `generateSandboxedUi` call as the Open Generative UI activity that previews it: the
//! activity opens before the call, each piece of the call's arguments adds at most one patch
//! event, and generation ends before the call does.

use crate::genui::ogui::{self, OguiStream};
use crate::protocol::{Event, MessageId, ToolCallId};

/// One call being previewed.
pub(super) struct Preview {
    index: usize,
    id: ToolCallId,
    message_id: MessageId,
    stream: OguiStream,
}

impl Preview {
    /// The preview of call `index` (`id`), and the snapshot that opens it.
    pub(super) fn open(index: usize, id: &ToolCallId) -> (Self, Event) {
        // A call id near the id length limit leaves no room for the suffix: a fresh id then.
        let message_id = MessageId::parse(
            ogui::message_id(id.as_str()),
            crate::protocol::ids::MAX_ID_LEN * 2,
        )
        .unwrap_or_else(|_| MessageId::generate());
        let opening = Event::ActivitySnapshot {
            message_id: message_id.clone(),
            activity_type: ogui::ACTIVITY_TYPE.into(),
            content: ogui::opening_content(),
        };
        let preview = Self {
            index,
            id: id.clone(),
            message_id,
            stream: OguiStream::new(),
        };
        (preview, opening)
    }

    pub(super) fn index(&self) -> usize {
        self.index
    }

    pub(super) fn id(&self) -> &ToolCallId {
        &self.id
    }

    /// The one event a piece of the call's arguments adds, if it completes anything.
    pub(super) fn read(&mut self, piece: &str) -> Option<Event> {
        let ops = self.stream.push(piece);
        (!ops.is_empty()).then(|| self.patch(ops))
    }

    /// The event that ends generation, sent before the call's `TOOL_CALL_END`.
    pub(super) fn end(&self) -> Event {
        self.patch(self.stream.finish())
    }

    fn patch(&self, ops: Vec<json_patch::PatchOperation>) -> Event {
        Event::ActivityDelta {
            message_id: self.message_id.clone(),
            activity_type: ogui::ACTIVITY_TYPE.into(),
            patch: json_patch::Patch(ops),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::TurnAssembler;
    use crate::model::ModelDelta;
    use crate::protocol::{Event, MessageId};
    use std::collections::HashSet;

    /// The events of a turn calling `generateSandboxedUi` with its arguments in `pieces`.
    fn turn(offered: bool, pieces: &[&str]) -> Vec<serde_json::Value> {
        let mut turn = TurnAssembler::new(MessageId::parse("m", 128).unwrap())
            .with_open_generative_ui(offered);
        let mut used = HashSet::new();
        let mut out: Vec<Event> = Vec::new();
        turn.push(
            ModelDelta::ToolCallStart {
                index: 0,
                id: Some("call_ui".into()),
                name: "generateSandboxedUi".into(),
            },
            &mut used,
            &mut out,
        );
        for piece in pieces {
            turn.push(
                ModelDelta::ToolCallArgs {
                    index: 0,
                    delta: (*piece).to_owned(),
                },
                &mut used,
                &mut out,
            );
        }
        turn.close(&mut out);
        turn.end_calls(&mut out);
        out.iter()
            .map(|event| serde_json::to_value(event).unwrap())
            .collect()
    }

    fn kinds(events: &[serde_json::Value]) -> Vec<&str> {
        events.iter().map(|e| e["type"].as_str().unwrap()).collect()
    }

    #[test]
    fn an_offered_call_is_previewed_with_at_most_one_event_per_piece() {
        let events = turn(
            true,
            &[r#"{"css":"p{}","ht"#, r#"ml":"<p>a"#, "", r#"b</p>"}"#],
        );
        assert_eq!(
            kinds(&events),
            [
                "ACTIVITY_SNAPSHOT",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "ACTIVITY_DELTA",
                "TOOL_CALL_ARGS",
                "ACTIVITY_DELTA",
                "TOOL_CALL_ARGS",
                "ACTIVITY_DELTA",
                "ACTIVITY_DELTA",
                "TOOL_CALL_END",
            ]
        );
        assert_eq!(events[0]["messageId"], "call_ui-activity");
        assert_eq!(
            events[0]["content"],
            serde_json::json!({"generating": true})
        );
        assert_eq!(events[5]["patch"][1]["value"], "<p>a");
        assert_eq!(events[7]["patch"][0]["value"], "b</p>");
        assert_eq!(events[8]["patch"][0]["path"], "/generating");
    }

    #[test]
    fn a_call_the_client_did_not_offer_is_not_previewed() {
        let events = turn(false, &[r#"{"html":"<p>a</p>"}"#]);
        assert_eq!(
            kinds(&events),
            ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
        );
    }
}
