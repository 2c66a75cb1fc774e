//! The one place a child's events become its parent's. Every id the child made (messages, tool
//! calls, reasoning, its own sub-agents, interrupts) is namespaced with the child's
//! `subagentRunId`, so it can never continue something its parent opened; then, as the run's
//! visibility says, each event is tagged with its producer (`attributed`), sent plain
//! (`inline`: step names namespaced too, since untagged steps share one scope) or dropped
//! (`hidden`: all but the calls that ask the client for approval). What the child left open
//! when it stops is closed here, so the parent's `RUN_FINISHED` finds nothing open.

use super::Visibility;
use super::record::Relayed;
use crate::protocol::ToolCallId;
use crate::protocol::events::{Event, SubagentOutcome};
use crate::protocol::ids::MAX_ID_LEN;
use crate::protocol::interrupt::Interrupt;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};

/// Events that describe a run, never forwarded: the parent's run is the only run on the wire,
/// and a child's state would replace the client's (the 1.0 client takes any `STATE_SNAPSHOT`).
const RUN_LEVEL: [&str; 6] = [
    "RUN_STARTED",
    "RUN_FINISHED",
    "RUN_ERROR",
    "MESSAGES_SNAPSHOT",
    "STATE_SNAPSHOT",
    "STATE_DELTA",
];

/// Id fields a child's events carry, all namespaced.
const ID_FIELDS: [&str; 5] = [
    "messageId",
    "toolCallId",
    "parentMessageId",
    "entityId",
    "parentToolCallId",
];

/// Namespaced ids longer than this are hashed: an id that nests again must still fit the
/// 128 characters a client may send back.
const MAX_NAMESPACED: usize = 100;

/// One child's events, made its parent's.
pub(crate) struct Retagger {
    /// The child's `subagentRunId`.
    id: String,
    /// Attributed, inline or hidden (`auto` already decided).
    shown: Visibility,
    /// The client's confirm tool: its calls reach the client even when the child is hidden.
    confirm_tool: Option<String>,
    /// What was sent and is still open, to close if the child stops.
    open: Vec<Opened>,
    /// The child's own text messages, in order: its answer is the last.
    texts: Vec<(String, String)>,
    /// Every tool call forwarded (namespaced id → its name and the child's own id) and those
    /// answered.
    calls: HashMap<String, (String, String)>,
    answered: HashSet<String>,
    /// Calls the child made in an earlier run, from its snapshot: the events that stream them.
    earlier_calls: HashMap<String, Vec<Map<String, Value>>>,
}

/// Something sent open, with the tag it was sent with.
#[derive(Debug, Clone, PartialEq)]
struct Opened {
    kind: &'static str,
    /// The id field's value, or the step name.
    id: String,
    tag: Option<String>,
}

/// The event that closes each kind of opener: (opener, closer, the field naming it).
const CLOSERS: [(&str, &str, &str); 6] = [
    ("TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "messageId"),
    ("TOOL_CALL_START", "TOOL_CALL_END", "toolCallId"),
    (
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_END",
        "messageId",
    ),
    ("REASONING_START", "REASONING_END", "messageId"),
    ("STEP_STARTED", "STEP_FINISHED", "stepName"),
    ("SUBAGENT_STARTED", "SUBAGENT_ERROR", "subagentRunId"),
];

impl Retagger {
    pub(crate) fn new(id: String, shown: Visibility, confirm_tool: Option<String>) -> Self {
        Self {
            id,
            shown,
            confirm_tool,
            open: Vec::new(),
            texts: Vec::new(),
            calls: HashMap::new(),
            answered: HashSet::new(),
            earlier_calls: HashMap::new(),
        }
    }

    /// The child's `subagentRunId`.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// `id` of the child's, in the parent's stream.
    pub(crate) fn namespaced(&self, id: &str) -> String {
        let joined = format!("{}:{id}", self.id);
        let inert = id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
        if joined.len() <= MAX_NAMESPACED && inert {
            return joined;
        }
        let digest: String = Sha256::digest(id.as_bytes())
            .iter()
            .take(12)
            .map(|byte| format!("{byte:02x}"))
            .collect();
        format!("{}:h{digest}", self.id)
    }

    /// `SUBAGENT_STARTED`, when sub-agents are shown.
    pub(crate) fn started(
        &mut self,
        name: &str,
        description: &str,
        parent_tool_call_id: &str,
        parent_message_id: Option<&str>,
    ) -> Option<Event> {
        (self.shown == Visibility::Attributed).then(|| Event::SubagentStarted {
            subagent_run_id: self.id.clone(),
            name: name.to_owned(),
            description: (!description.is_empty()).then(|| description.to_owned()),
            parent_subagent_run_id: None,
            parent_tool_call_id: Some(parent_tool_call_id.to_owned()),
            parent_message_id: parent_message_id.map(str::to_owned),
        })
    }

    /// `SUBAGENT_FINISHED`, after what the child left open is closed.
    pub(crate) fn finished(
        &mut self,
        result: Option<String>,
        suspended_on: Option<Vec<String>>,
        metadata: Value,
    ) -> Vec<Event> {
        let mut events = self.close();
        if self.shown == Visibility::Attributed {
            events.push(Event::SubagentFinished {
                subagent_run_id: self.id.clone(),
                result: result.map(Value::String),
                outcome: Some(match suspended_on {
                    Some(interrupt_ids) => SubagentOutcome::Suspended { interrupt_ids },
                    None => SubagentOutcome::Success,
                }),
                metadata: Some(metadata),
            });
        }
        events
    }

    /// `SUBAGENT_ERROR`, after what the child left open is closed.
    pub(crate) fn failed(&mut self, code: &str, message: &str) -> Vec<Event> {
        let mut events = self.close();
        if self.shown == Visibility::Attributed {
            events.push(Event::SubagentError {
                subagent_run_id: self.id.clone(),
                message: message.to_owned(),
                code: Some(code.to_owned()),
            });
        }
        events
    }

    /// The child's answer: the text of its last text message.
    pub(crate) fn answer(&self) -> Option<&str> {
        self.texts
            .iter()
            .rev()
            .map(|(_, text)| text.as_str())
            .find(|text| !text.trim().is_empty())
    }

    /// The child's calls of the confirm tool that nothing answered (it waits for the client),
    /// as the client got them and as the child made them.
    pub(crate) fn unanswered_confirms(&self) -> Vec<Relayed> {
        let Some(confirm) = &self.confirm_tool else {
            return Vec::new();
        };
        let mut waiting: Vec<Relayed> = self
            .calls
            .iter()
            .filter(|(id, (name, _))| name == confirm && !self.answered.contains(*id))
            .map(|(id, (_, own))| Relayed {
                shown: id.clone(),
                own: own.clone(),
            })
            .collect();
        waiting.sort_by(|a, b| a.shown.cmp(&b.shown));
        waiting
    }

    /// The child's interrupts as the parent's client gets them, each with the child's own id.
    pub(crate) fn interrupts(&self, interrupts: Vec<Interrupt>) -> Vec<(Interrupt, String)> {
        interrupts
            .into_iter()
            .map(|interrupt| {
                let own = interrupt.id.clone();
                let owner = match &interrupt.subagent_run_id {
                    Some(tag) => self.namespaced(tag),
                    None => self.id.clone(),
                };
                let shown = Interrupt {
                    id: self.namespaced(&interrupt.id),
                    tool_call_id: interrupt
                        .tool_call_id
                        .filter(|_| self.shown != Visibility::Hidden)
                        .and_then(|call| {
                            ToolCallId::parse(self.namespaced(call.as_str()), MAX_ID_LEN).ok()
                        }),
                    subagent_run_id: (self.shown == Visibility::Attributed).then_some(owner),
                    ..interrupt
                };
                (shown, own)
            })
            .collect()
    }

    /// One of the child's events in the parent's stream: none when nothing of it is shown. A
    /// child that continues answers calls it made in an earlier run, which its own snapshot
    /// named: they are streamed again just before their result, since the parent's client
    /// never gets that snapshot.
    pub(crate) fn forward(&mut self, event: Map<String, Value>) -> Vec<Event> {
        let mut events = Vec::new();
        match event.get("type").and_then(Value::as_str) {
            Some("MESSAGES_SNAPSHOT") => {
                self.note_snapshot(&event);
                return events;
            }
            Some("TOOL_CALL_RESULT") if !event.contains_key("subagentRunId") => {
                let earlier = event
                    .get("toolCallId")
                    .and_then(Value::as_str)
                    .filter(|call| !self.calls.contains_key(&self.namespaced(call)))
                    .and_then(|call| self.earlier_calls.remove(call));
                for replayed in earlier.unwrap_or_default() {
                    events.extend(self.forward_one(replayed));
                }
            }
            _ => {}
        }
        events.extend(self.forward_one(event));
        events
    }

    /// The calls of the child's own messages in its snapshot, as the events that would stream
    /// them, by call id.
    fn note_snapshot(&mut self, event: &Map<String, Value>) {
        let messages = event.get("messages").and_then(Value::as_array);
        for message in messages.into_iter().flatten() {
            let Some(calls) = message.get("toolCalls").and_then(Value::as_array) else {
                continue;
            };
            for call in calls {
                let (Some(id), Some(name)) = (
                    call.get("id").and_then(Value::as_str),
                    call.pointer("/function/name").and_then(Value::as_str),
                ) else {
                    continue;
                };
                let mut start =
                    json!({"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": name});
                if let Some(parent) = message.get("id") {
                    start["parentMessageId"] = parent.clone();
                }
                let mut replay = vec![start];
                match call.pointer("/function/arguments").and_then(Value::as_str) {
                    Some(arguments) if !arguments.is_empty() => replay.push(
                        json!({"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": arguments}),
                    ),
                    _ => {}
                }
                replay.push(json!({"type": "TOOL_CALL_END", "toolCallId": id}));
                let replay = replay
                    .into_iter()
                    .filter_map(|event| match event {
                        Value::Object(event) => Some(event),
                        _ => None,
                    })
                    .collect();
                self.earlier_calls.insert(id.to_owned(), replay);
            }
        }
    }

    fn forward_one(&mut self, mut event: Map<String, Value>) -> Option<Event> {
        let kind = event.get("type")?.as_str()?.to_owned();
        if RUN_LEVEL.contains(&kind.as_str()) {
            return None;
        }
        event.remove("timestamp");
        if kind.starts_with("SUBAGENT_") {
            return self.descendant(&kind, event);
        }
        let owner = match event.remove("subagentRunId") {
            Some(Value::String(tag)) => self.namespaced(&tag),
            _ => self.id.clone(),
        };
        let own_call = event
            .get("toolCallId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        for field in ID_FIELDS {
            if let Some(Value::String(value)) = event.get(field) {
                let value = self.namespaced(value);
                event.insert(field.to_owned(), Value::String(value));
            }
        }
        if owner == self.id {
            self.note_text(&kind, &event);
        }
        self.note_call(&kind, &event, own_call);
        if !self.shows(&kind, &event) {
            return None;
        }
        let tag = match self.shown {
            Visibility::Attributed => {
                event.insert("subagentRunId".to_owned(), Value::String(owner.clone()));
                Some(owner)
            }
            _ => {
                if kind.starts_with("STEP_")
                    && let Some(Value::String(name)) = event.get("stepName")
                {
                    let name = format!("{owner}:{name}");
                    event.insert("stepName".to_owned(), Value::String(name));
                }
                None
            }
        };
        self.note_open(&kind, &event, tag);
        Some(Event::Forwarded(event))
    }

    /// A `SUBAGENT_*` event of the child's own sub-agents: their ids namespaced, their parent
    /// named; shown only when sub-agents are.
    fn descendant(&mut self, kind: &str, mut event: Map<String, Value>) -> Option<Event> {
        let id = self.namespaced(event.get("subagentRunId")?.as_str()?);
        event.insert("subagentRunId".to_owned(), Value::String(id.clone()));
        if kind == "SUBAGENT_STARTED" {
            let parent = match event.get("parentSubagentRunId").and_then(Value::as_str) {
                Some(parent) => self.namespaced(parent),
                None => self.id.clone(),
            };
            event.insert("parentSubagentRunId".to_owned(), Value::String(parent));
            for field in ["parentToolCallId", "parentMessageId"] {
                if let Some(Value::String(value)) = event.get(field) {
                    let value = self.namespaced(value);
                    event.insert(field.to_owned(), Value::String(value));
                }
            }
        }
        if let Some(Value::Array(ids)) = event
            .get_mut("outcome")
            .and_then(|outcome| outcome.get_mut("interruptIds"))
        {
            for interrupt_id in ids.iter_mut() {
                if let Value::String(text) = interrupt_id {
                    *text = self.namespaced(text);
                }
            }
        }
        if self.shown != Visibility::Attributed {
            return None;
        }
        self.note_open(kind, &event, None);
        Some(Event::Forwarded(event))
    }

    /// Whether the client sees this event: all of them but in `hidden`, where only the calls
    /// that ask the client for approval go out.
    fn shows(&self, kind: &str, event: &Map<String, Value>) -> bool {
        if self.shown != Visibility::Hidden {
            return true;
        }
        kind.starts_with("TOOL_CALL_")
            && kind != "TOOL_CALL_RESULT"
            && event
                .get("toolCallId")
                .and_then(Value::as_str)
                .and_then(|id| self.calls.get(id))
                .is_some_and(|(name, _)| Some(name) == self.confirm_tool.as_ref())
    }

    fn note_text(&mut self, kind: &str, event: &Map<String, Value>) {
        let id = event.get("messageId").and_then(Value::as_str);
        match (kind, id) {
            ("TEXT_MESSAGE_START", Some(id)) => self.texts.push((id.to_owned(), String::new())),
            ("TEXT_MESSAGE_CONTENT" | "TEXT_MESSAGE_CHUNK", id) => {
                let delta = event.get("delta").and_then(Value::as_str).unwrap_or("");
                let known = id.and_then(|id| self.texts.iter_mut().find(|(text, _)| text == id));
                match (known, id) {
                    (Some((_, text)), _) => text.push_str(delta),
                    (None, Some(id)) => self.texts.push((id.to_owned(), delta.to_owned())),
                    (None, None) => {
                        if let Some((_, text)) = self.texts.last_mut() {
                            text.push_str(delta);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn note_call(&mut self, kind: &str, event: &Map<String, Value>, own: Option<String>) {
        let id = event.get("toolCallId").and_then(Value::as_str);
        match (kind, id) {
            ("TOOL_CALL_START", Some(id)) => {
                let name = event.get("toolCallName").and_then(Value::as_str);
                let name = name.unwrap_or_default().to_owned();
                self.calls
                    .insert(id.to_owned(), (name, own.unwrap_or_default()));
            }
            ("TOOL_CALL_RESULT", Some(id)) => {
                self.answered.insert(id.to_owned());
            }
            _ => {}
        }
    }

    /// Keeps what a sent event opens, forgets what it closes.
    fn note_open(&mut self, kind: &str, event: &Map<String, Value>, tag: Option<String>) {
        for (opener, closer, field) in CLOSERS {
            let Some(id) = event.get(field).and_then(Value::as_str) else {
                continue;
            };
            if kind == opener {
                self.open.push(Opened {
                    kind: opener,
                    id: id.to_owned(),
                    tag: tag.clone(),
                });
            } else if (kind == closer
                || (opener == "SUBAGENT_STARTED" && kind.starts_with("SUBAGENT_")))
                && let Some(at) = self
                    .open
                    .iter()
                    .rposition(|open| open.kind == opener && open.id == id)
            {
                self.open.remove(at);
            }
        }
    }

    /// Closes what the child left open, innermost first.
    fn close(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some(open) = self.open.pop() {
            let Some((_, closer, field)) = CLOSERS.iter().find(|(opener, ..)| *opener == open.kind)
            else {
                continue;
            };
            let mut event = Map::new();
            event.insert("type".to_owned(), json!(closer));
            event.insert((*field).to_owned(), json!(open.id));
            if *closer == "SUBAGENT_ERROR" {
                event.insert(
                    "message".to_owned(),
                    json!("its parent agent ended before it did"),
                );
                event.insert("code".to_owned(), json!("PARENT_ENDED"));
            } else if let Some(tag) = &open.tag {
                event.insert("subagentRunId".to_owned(), json!(tag));
            }
            events.push(Event::Forwarded(event));
        }
        events
    }
}

#[cfg(test)]
#[path = "retag_tests.rs"]
mod tests;
