//! Activities kept with a tool call's result: the UI a call showed (an MCP App's view) is
//! stored in its `tool` message's metadata, under this server's key, and every
//! `MESSAGES_SNAPSHOT` shows it again as AG-UI's `activity` message right after that message,
//! so a reloaded thread paints it where it was. Models never see it.

use super::events::METADATA_KEY;
use super::message::Message;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Where in `metadata.agui-lambda` a kept activity lives.
const KEY: &str = "activity";

/// An activity as AG-UI's `activity` message carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct KeptActivity {
    pub(crate) message_id: String,
    pub(crate) activity_type: String,
    pub(crate) content: Value,
}

impl KeptActivity {
    /// Keeps this activity in a tool message's `metadata`, beside what is already there.
    pub(crate) fn keep_in(self, metadata: &mut Option<Value>) {
        let Ok(activity) = serde_json::to_value(self) else {
            return;
        };
        let metadata = metadata.get_or_insert_with(|| Value::Object(Map::new()));
        if !metadata.is_object() {
            *metadata = Value::Object(Map::new());
        }
        let ours = &mut metadata[METADATA_KEY];
        if !ours.is_object() {
            *ours = Value::Object(Map::new());
        }
        ours[KEY] = activity;
    }

    /// The activity kept with `message`, if it is a tool message that has one.
    pub(crate) fn of(message: &Message) -> Option<Self> {
        match message {
            Message::Tool { metadata, .. } => Self::in_metadata(metadata.as_ref()),
            _ => None,
        }
    }

    /// The activity kept in a tool message's `metadata`, if any.
    pub(crate) fn in_metadata(metadata: Option<&Value>) -> Option<Self> {
        serde_json::from_value(metadata?.get(METADATA_KEY)?.get(KEY)?.clone()).ok()
    }

    /// The activity as the event that shows it.
    pub(crate) fn snapshot_event(&self) -> Option<super::Event> {
        Some(super::Event::ActivitySnapshot {
            message_id: super::MessageId::parse(
                self.message_id.clone(),
                super::ids::MAX_ID_LEN * 2,
            )
            .ok()?,
            activity_type: self.activity_type.clone().into(),
            content: self.content.clone(),
        })
    }
}

/// One entry of a snapshot's `messages`.
#[derive(Serialize)]
#[serde(untagged)]
enum Entry<'a> {
    Message(Cow<'a, Message>),
    Activity(Value),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ActivityMessage {
    id: String,
    role: &'static str,
    activity_type: String,
    content: Value,
}

/// The `activity` message a snapshot shows right after `message`: the activity kept with a
/// tool message, as AG-UI's `ActivityMessage` (`{id, role: "activity", activityType, content}`).
pub(crate) fn shown_after(message: &Message) -> Option<Value> {
    let activity = KeptActivity::of(message)?;
    serde_json::to_value(ActivityMessage {
        id: activity.message_id,
        role: "activity",
        activity_type: activity.activity_type,
        content: activity.content,
    })
    .ok()
}

/// `message` as a snapshot sends it: a tool message without the activity it keeps (which
/// [`shown_after`] shows on its own).
pub(crate) fn as_shown(message: &Message) -> Cow<'_, Message> {
    if KeptActivity::of(message).is_some() {
        Cow::Owned(without_activity(message.clone()))
    } else {
        Cow::Borrowed(message)
    }
}

/// `messages` as a snapshot sends them: each kept activity as an `activity` message after its
/// tool message, which no longer carries it.
pub(crate) fn serialize_with_activities<S: Serializer>(
    messages: &[Message],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(messages.iter().flat_map(|message| {
        [Entry::Message(as_shown(message))]
            .into_iter()
            .chain(shown_after(message).map(Entry::Activity))
    }))
}

fn without_activity(mut message: Message) -> Message {
    if let Message::Tool { metadata, .. } = &mut message {
        if let Some(ours) = metadata
            .as_mut()
            .and_then(|metadata| metadata.get_mut(METADATA_KEY))
            .and_then(Value::as_object_mut)
        {
            ours.remove(KEY);
            if ours.is_empty()
                && let Some(all) = metadata.as_mut().and_then(Value::as_object_mut)
            {
                all.remove(METADATA_KEY);
            }
        }
        if metadata
            .as_ref()
            .is_some_and(|all| all.as_object().is_some_and(Map::is_empty))
        {
            *metadata = None;
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::events::Event;
    use crate::protocol::{MessageId, ToolCallId};
    use serde_json::json;

    fn tool_message(metadata: Option<Value>) -> Message {
        Message::Tool {
            id: MessageId::parse("t1", 128).unwrap(),
            tool_call_id: ToolCallId::parse("c1", 128).unwrap(),
            content: "4 °C".into(),
            error: None,
            metadata,
        }
    }

    #[test]
    fn a_kept_activity_follows_its_tool_message_in_a_snapshot() {
        let mut metadata = Some(json!({"agui-lambda": {"subagent": {"name": "x"}}}));
        KeptActivity {
            message_id: "c1-mcp-app".into(),
            activity_type: "mcp-apps".into(),
            content: json!({"resourceUri": "ui://w/v"}),
        }
        .keep_in(&mut metadata);
        let message = tool_message(metadata);
        assert_eq!(KeptActivity::of(&message).unwrap().message_id, "c1-mcp-app");
        let snapshot = serde_json::to_value(Event::MessagesSnapshot {
            messages: vec![message, tool_message(None)],
        })
        .unwrap();
        assert_eq!(
            snapshot["messages"],
            json!([
                {"role": "tool", "id": "t1", "toolCallId": "c1", "content": "4 °C",
                 "metadata": {"agui-lambda": {"subagent": {"name": "x"}}}},
                {"id": "c1-mcp-app", "role": "activity", "activityType": "mcp-apps",
                 "content": {"resourceUri": "ui://w/v"}},
                {"role": "tool", "id": "t1", "toolCallId": "c1", "content": "4 °C"},
            ])
        );
    }

    #[test]
    fn metadata_holding_only_the_activity_is_left_out_of_the_snapshot() {
        let mut metadata = None;
        KeptActivity {
            message_id: "a".into(),
            activity_type: "mcp-apps".into(),
            content: json!({}),
        }
        .keep_in(&mut metadata);
        assert_eq!(without_activity(tool_message(metadata)), tool_message(None));
    }
}
