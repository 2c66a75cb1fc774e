//! What `/connect` streams: a thread's history as one run that a verifying client accepts
//! (`RUN_STARTED`, `MESSAGES_SNAPSHOT`, `STATE_SNAPSHOT`, `RUN_FINISHED`; `@copilotkit/core` up
//! to 1.70 checks it as a run), written page by page as the store reads it; and, while a run is
//! in progress, that run's own events in place of the `RUN_FINISHED`, less those about messages
//! the snapshot already holds (the run stores its input and each finished step as it goes).

use crate::protocol::activity;
use crate::protocol::events::Event;
use crate::protocol::{Message, RunId, ThreadId, sse};
use bytes::{BufMut, Bytes, BytesMut};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;

/// `RUN_STARTED` of the replay (`run_id`: the client's for a thread at rest, the active run's
/// while one is in progress), declaring the version the stream speaks.
pub(crate) fn run_started(thread_id: &ThreadId, run_id: &RunId, version: &'static str) -> Bytes {
    let started = Event::RunStarted {
        thread_id: thread_id.clone(),
        run_id: run_id.clone(),
        parent_run_id: None,
        protocol_version: Some(version),
        metadata: None,
    };
    sse::encode_event(&started, sse::now_ms())
}

/// `RUN_FINISHED` of a replay of a thread at rest.
pub(crate) fn run_finished(thread_id: &ThreadId, run_id: &RunId) -> Bytes {
    let finished = Event::RunFinished {
        thread_id: thread_id.clone(),
        run_id: run_id.clone(),
        outcome: None,
        usage: Default::default(),
        result: None,
    };
    sse::encode_event(&finished, sse::now_ms())
}

/// `STATE_SNAPSHOT` of the thread's state (`{}` when it has none).
pub(crate) fn state_snapshot(state: Option<Value>) -> Bytes {
    let snapshot = state.unwrap_or_else(|| Value::Object(Default::default()));
    sse::encode_event(&Event::StateSnapshot { snapshot }, sse::now_ms())
}

/// One `MESSAGES_SNAPSHOT` frame written in pieces, so a long thread streams as its pages are
/// read and no page is held after it is sent. With `remember`, it keeps the ids the snapshot
/// names (messages and tool calls), for [`Tail`].
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    written: usize,
    known: Option<HashSet<String>>,
}

impl Snapshot {
    /// A snapshot that remembers the ids it names when `remember` is set.
    pub(crate) fn new(remember: bool) -> Self {
        Self {
            written: 0,
            known: remember.then(HashSet::new),
        }
    }

    /// The frame's start, up to its message array's `[`.
    pub(crate) fn open() -> Bytes {
        let mut frame = BytesMut::with_capacity(96);
        frame.put_slice(b"data: {\"type\":\"MESSAGES_SNAPSHOT\",\"timestamp\":");
        frame.put_slice(sse::now_ms().to_string().as_bytes());
        frame.put_slice(b",\"messages\":[");
        frame.freeze()
    }

    /// The next page's messages, each after a comma but the snapshot's first.
    pub(crate) fn page(&mut self, messages: &[Message]) -> Bytes {
        let mut piece = Vec::with_capacity(messages.len() * 256);
        for message in messages {
            if self.written > 0 {
                piece.push(b',');
            }
            // A stored message always serialises; a tool message without the activity it keeps,
            // which follows it as the `activity` message a reload shows (an MCP App's view, an
            // A2UI surface).
            let _ = serde_json::to_writer(&mut piece, &activity::as_shown(message));
            self.written += 1;
            let shown = activity::shown_after(message);
            if let Some(shown) = &shown {
                piece.push(b',');
                let _ = serde_json::to_writer(&mut piece, shown);
                self.written += 1;
            }
            if let Some(known) = &mut self.known {
                known.insert(message.id().as_str().to_owned());
                if let Message::Assistant { tool_calls, .. } = message {
                    known.extend(tool_calls.iter().map(|call| call.id.as_str().to_owned()));
                }
                if let Some(id) = shown.as_ref().and_then(|shown| shown["id"].as_str()) {
                    known.insert(id.to_owned());
                }
            }
        }
        Bytes::from(piece)
    }

    /// The frame's end; with the ids it named when it remembered them.
    pub(crate) fn close(self) -> (Bytes, Tail) {
        let tail = Tail {
            known: self.known.unwrap_or_default(),
        };
        (Bytes::from_static(b"]}\n\n"), tail)
    }

    /// How many messages were written.
    pub(crate) fn len(&self) -> usize {
        self.written
    }
}

/// The ids an event of the run names.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Names<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
    #[serde(default, borrow)]
    message_id: Option<&'a str>,
    #[serde(default, borrow)]
    tool_call_id: Option<&'a str>,
    #[serde(default, borrow)]
    entity_id: Option<&'a str>,
}

/// Which of a joined run's events follow the snapshot: not its `RUN_STARTED` (the replay opened
/// with one), and none about a message or tool call the snapshot holds whole; every other event
/// as the run sent it, its terminal one included.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    known: HashSet<String>,
}

impl Tail {
    /// Whether the event `json` follows the snapshot.
    pub(crate) fn keeps(&self, json: &[u8]) -> bool {
        let Ok(names) = serde_json::from_slice::<Names<'_>>(json) else {
            return true;
        };
        if names.kind == "RUN_STARTED" {
            return false;
        }
        ![names.message_id, names.tool_call_id, names.entity_id]
            .into_iter()
            .flatten()
            .any(|id| self.known.contains(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::ToolCall;
    use crate::protocol::{MessageId, ToolCallId, UserContent};
    use serde_json::json;

    fn id(text: &str) -> MessageId {
        MessageId::parse(text, 128).unwrap()
    }

    fn messages() -> Vec<Message> {
        vec![
            Message::User {
                id: id("u1"),
                content: UserContent::Text("paint it".into()),
                name: None,
            },
            Message::Assistant {
                id: id("a1"),
                content: None,
                tool_calls: vec![ToolCall::new(
                    ToolCallId::parse("call1", 128).unwrap(),
                    "paint".into(),
                    "{}".into(),
                )],
                name: None,
                encrypted_value: None,
            },
            Message::Tool {
                id: id("t1"),
                tool_call_id: ToolCallId::parse("call1", 128).unwrap(),
                content: "done".into(),
                error: None,
                metadata: None,
            },
        ]
    }

    /// A tool message keeping an activity (an MCP App's view, an A2UI surface) is written
    /// without it, and the activity follows it as its own `activity` message, remembered too.
    #[test]
    fn a_kept_activity_follows_its_tool_message_in_the_snapshot() {
        let mut all = messages();
        if let Message::Tool { metadata, .. } = &mut all[2] {
            crate::protocol::activity::KeptActivity {
                message_id: "call1-mcp-app".into(),
                activity_type: "mcp-apps".into(),
                content: json!({"resourceUri": "ui://weather/view.html"}),
            }
            .keep_in(metadata);
        }
        let mut snapshot = Snapshot::new(true);
        let mut frame = Snapshot::open().to_vec();
        frame.extend_from_slice(&snapshot.page(&all));
        assert_eq!(snapshot.len(), 4);
        let (end, tail) = snapshot.close();
        frame.extend_from_slice(&end);
        let text = String::from_utf8(frame).unwrap();
        let event: Value = serde_json::from_str(text["data: ".len()..].trim_end()).unwrap();
        let shown = event["messages"].as_array().unwrap();
        assert_eq!(shown.len(), 4, "{event}");
        assert_eq!(shown[2]["role"], "tool");
        assert_eq!(shown[2]["id"], "t1");
        assert!(
            !shown[2].to_string().contains("call1-mcp-app"),
            "{}",
            shown[2]
        );
        assert_eq!(
            shown[3],
            json!({"id": "call1-mcp-app", "role": "activity", "activityType": "mcp-apps",
                   "content": {"resourceUri": "ui://weather/view.html"}})
        );
        assert!(tail.known.contains("call1-mcp-app"));
    }

    /// The snapshot's frame, written in two pages, parsed back.
    #[test]
    fn a_snapshot_written_in_pages_is_one_frame() {
        let all = messages();
        let mut snapshot = Snapshot::new(false);
        let mut frame = Snapshot::open().to_vec();
        frame.extend_from_slice(&snapshot.page(&all[..1]));
        frame.extend_from_slice(&snapshot.page(&all[1..]));
        assert_eq!(snapshot.len(), 3);
        let (end, _) = snapshot.close();
        frame.extend_from_slice(&end);
        let text = String::from_utf8(frame).unwrap();
        assert!(text.ends_with("\n\n") && text.matches("\n\n").count() == 1);
        let event: Value = serde_json::from_str(text["data: ".len()..].trim_end()).unwrap();
        assert_eq!(event["type"], "MESSAGES_SNAPSHOT");
        assert_eq!(event["messages"], serde_json::to_value(&all).unwrap());
        let mut empty = Snapshot::new(false);
        let mut frame = Snapshot::open().to_vec();
        frame.extend_from_slice(&empty.page(&[]));
        frame.extend_from_slice(&empty.close().0);
        let event: Value =
            serde_json::from_str(std::str::from_utf8(&frame[6..]).unwrap().trim_end()).unwrap();
        assert_eq!(event["messages"], json!([]));
    }

    #[test]
    fn the_tail_skips_what_the_snapshot_holds() {
        let mut snapshot = Snapshot::new(true);
        let _ = snapshot.page(&messages());
        let (_, tail) = snapshot.close();
        let keeps = |event: Value| tail.keeps(event.to_string().as_bytes());
        assert!(!keeps(
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
        ));
        assert!(!keeps(
            json!({"type": "TEXT_MESSAGE_START", "messageId": "a1", "role": "assistant"})
        ));
        assert!(!keeps(
            json!({"type": "TOOL_CALL_ARGS", "toolCallId": "call1", "delta": "{}"})
        ));
        assert!(!keeps(
            json!({"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "call1", "content": "done"})
        ));
        assert!(!keeps(
            json!({"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "call1", "encryptedValue": "x"})
        ));
        assert!(keeps(
            json!({"type": "TEXT_MESSAGE_START", "messageId": "a2", "role": "assistant"})
        ));
        assert!(keeps(
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "a2", "delta": "hi"})
        ));
        assert!(keeps(
            json!({"type": "STEP_STARTED", "stepName": "model_turn_2"})
        ));
        assert!(keeps(
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
        ));
        // A snapshot that did not remember keeps everything but the run's start.
        let (_, forgetful) = Snapshot::new(false).close();
        assert!(forgetful.keeps(br#"{"type":"TEXT_MESSAGE_START","messageId":"a1"}"#));
    }
}
