//! A remote task's frames as the child events a delegating agent shows: text messages (an
//! artifact's chunks appended, `lastChunk` closing it; a status message's text whole), data
//! parts as activity content, and how the task stopped: completed, waiting for input or
//! authorization (an interrupt to raise), or failed, rejected or canceled (an error with a code).
//!
//! A stream read again after it broke (`SubscribeToTask`) may replay what was already shown
//! (this server replays the current run; others send the task with its artifacts so far): text
//! already emitted for an artifact is recognised and skipped, so nothing shows twice. A task
//! continued in a later delegation (a resume) starts from what the earlier one showed.

use crate::a2a::types::{Artifact, Message, Part, StreamResponse, Task, TaskState};
use crate::protocol::events::TokenUsage;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

/// One thing the remote agent did, for the child's event stream.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildEvent {
    /// The remote task's ids: kept for a resume, a cancel, and the next delegation's context.
    Task {
        task_id: String,
        context_id: String,
    },
    TextStart {
        message_id: String,
    },
    TextDelta {
        message_id: String,
        delta: String,
    },
    TextEnd {
        message_id: String,
    },
    /// A data part (an artifact's or a status message's): an activity snapshot's content.
    Data {
        message_id: String,
        data: Value,
    },
    /// The task waits for the user: `TASK_STATE_INPUT_REQUIRED` or `TASK_STATE_AUTH_REQUIRED`.
    /// The answer goes back with the same task and context ids.
    Interrupted {
        state: TaskState,
        task_id: String,
        context_id: String,
        /// The agent's question, as text.
        message: String,
        /// Its data parts (e.g. a schema of the expected answer).
        data: Vec<Value>,
    },
    /// The tokens the remote agent says its work took, just before the task stopped: A2A has
    /// no usage field; an agui-lambda agent reports it in the status update's metadata
    /// (`{"agui-lambda": {"usage": [...]}}`), most agents report none.
    Usage(Vec<TokenUsage>),
    Completed,
    /// `FAILED`, `REJECTED` or `CANCELED`: `code` is the state's (`A2A_TASK_FAILED`, …), or the
    /// remote's own code when its status message carries one.
    Failed {
        code: String,
        message: String,
    },
}

/// The stream's state: which artifacts are open, and the text each has shown.
#[derive(Default)]
pub(crate) struct ChildFrames {
    /// Text shown per artifact (or status message) id.
    shown: HashMap<String, String>,
    /// Artifacts streaming now, in the order they opened.
    open: Vec<String>,
    /// How far into each artifact's shown text the current stream has come: a stream that
    /// replays (after a resubscription) starts at 0 and only what goes past it is new.
    replayed: HashMap<String, usize>,
    task: Option<(String, String)>,
    /// Set once the task stopped (ended or interrupted).
    stopped: bool,
    /// Text an earlier delegation showed of a task continued now, in bytes per artifact (or
    /// message) id: a task snapshot's first that many bytes of it are not shown again.
    earlier: BTreeMap<String, usize>,
}

/// The code a terminal state's failure carries.
fn state_code(state: TaskState) -> &'static str {
    match state {
        TaskState::Rejected => "A2A_TASK_REJECTED",
        TaskState::Canceled => "A2A_TASK_CANCELED",
        _ => "A2A_TASK_FAILED",
    }
}

/// The usage an agui-lambda agent reports in a frame's metadata, if any.
fn usage_in(metadata: Option<&Map<String, Value>>) -> Vec<TokenUsage> {
    metadata
        .and_then(|metadata| metadata.get(crate::a2a::VENDOR_KEY))
        .and_then(|vendor| vendor.get("usage"))
        .and_then(|usage| serde_json::from_value(usage.clone()).ok())
        .unwrap_or_default()
}

impl ChildFrames {
    /// The frames of a task an earlier delegation followed, which showed `earlier` (bytes of
    /// text per artifact or message id).
    pub(crate) fn continuing(earlier: BTreeMap<String, usize>) -> Self {
        Self {
            earlier,
            ..Self::default()
        }
    }

    /// Whether the task has stopped (a terminal or interrupted state was seen).
    pub(crate) fn stopped(&self) -> bool {
        self.stopped
    }

    /// The remote task's `(task id, context id)`, once known.
    pub(crate) fn task(&self) -> Option<&(String, String)> {
        self.task.as_ref()
    }

    /// A new stream of the same task begins (a resubscription): what it replays is skipped.
    pub(crate) fn resubscribed(&mut self) {
        self.replayed = self.shown.keys().map(|id| (id.clone(), 0)).collect();
    }

    fn note_task(&mut self, task_id: &str, context_id: &str, out: &mut Vec<ChildEvent>) {
        if task_id.is_empty() || self.task.is_some() {
            return;
        }
        self.task = Some((task_id.to_owned(), context_id.to_owned()));
        out.push(ChildEvent::Task {
            task_id: task_id.to_owned(),
            context_id: context_id.to_owned(),
        });
    }

    /// Text for artifact `id`: what is new of `chunk` (a replayed prefix is skipped).
    fn text(&mut self, id: &str, chunk: &str, out: &mut Vec<ChildEvent>) {
        let shown = self.shown.entry(id.to_owned()).or_default();
        let mut fresh = chunk;
        if let Some(at) = self.replayed.get_mut(id) {
            let already = &shown[(*at).min(shown.len())..];
            let common = already
                .char_indices()
                .zip(chunk.chars())
                .take_while(|((_, a), b)| a == b)
                .last()
                .map_or(0, |((index, a), _)| index + a.len_utf8());
            *at += common;
            fresh = &chunk[common..];
        } else {
            // From here on, this artifact's chunks are new unless a resubscription says not.
            self.replayed
                .insert(id.to_owned(), shown.len() + chunk.len());
        }
        if fresh.is_empty() {
            return;
        }
        if !self.open.iter().any(|open| open == id) {
            self.open.push(id.to_owned());
            out.push(ChildEvent::TextStart {
                message_id: id.to_owned(),
            });
        }
        shown.push_str(fresh);
        if let Some(at) = self.replayed.get_mut(id) {
            *at = shown.len();
        }
        out.push(ChildEvent::TextDelta {
            message_id: id.to_owned(),
            delta: fresh.to_owned(),
        });
    }

    fn close(&mut self, id: &str, out: &mut Vec<ChildEvent>) {
        if let Some(index) = self.open.iter().position(|open| open == id) {
            self.open.remove(index);
            out.push(ChildEvent::TextEnd {
                message_id: id.to_owned(),
            });
        }
    }

    fn close_all(&mut self, out: &mut Vec<ChildEvent>) {
        for id in std::mem::take(&mut self.open) {
            out.push(ChildEvent::TextEnd { message_id: id });
        }
    }

    fn parts(&mut self, id: &str, parts: &[Part], out: &mut Vec<ChildEvent>) {
        for part in parts {
            if let Some(text) = &part.text {
                self.text(id, text, out);
            }
            if let Some(data) = &part.data {
                out.push(ChildEvent::Data {
                    message_id: id.to_owned(),
                    data: data.clone(),
                });
            }
        }
    }

    /// A whole artifact (from a task snapshot): what of it was not shown yet, then closed.
    fn whole_artifact(&mut self, artifact: &Artifact, out: &mut Vec<ChildEvent>) {
        let id = &artifact.artifact_id;
        let mut text: String = artifact
            .parts
            .iter()
            .filter_map(|part| part.text.as_deref())
            .collect();
        // Shown by an earlier delegation: only what came after it is new, data parts included.
        let earlier = self.earlier.get(id).copied();
        if let Some(bytes) = earlier {
            let mut at = bytes.min(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            text.drain(..at);
        }
        let shown = self.shown.get(id).map_or("", String::as_str);
        if let Some(rest) = text.strip_prefix(shown)
            && !rest.is_empty()
        {
            let rest = rest.to_owned();
            self.replayed.remove(id);
            self.text(id, &rest, out);
        }
        for part in artifact.parts.iter().filter(|_| earlier.is_none()) {
            if let Some(data) = &part.data {
                out.push(ChildEvent::Data {
                    message_id: id.clone(),
                    data: data.clone(),
                });
            }
        }
        // Left open: a working task's artifact may go on; the task's end closes it.
    }

    /// A whole agent message (a status message, or a direct answer).
    fn message(&mut self, message: &Message, out: &mut Vec<ChildEvent>) {
        let id = message.message_id.clone();
        if self.shown.contains_key(&id) || self.earlier.contains_key(&id) {
            return;
        }
        self.parts(&id, &message.parts, out);
        self.close(&id, out);
    }

    fn status(
        &mut self,
        state: TaskState,
        message: Option<&Message>,
        (task_id, context_id): (&str, &str),
        usage: Vec<TokenUsage>,
        out: &mut Vec<ChildEvent>,
    ) {
        if self.stopped {
            return;
        }
        // Said just before the end, once what was open is closed.
        let usage = (!usage.is_empty()).then_some(ChildEvent::Usage(usage));
        if state.is_interrupted() {
            self.close_all(out);
            self.stopped = true;
            out.extend(usage);
            out.push(ChildEvent::Interrupted {
                state,
                task_id: task_id.to_owned(),
                context_id: context_id.to_owned(),
                message: message.map(Message::text).unwrap_or_default(),
                data: message
                    .map(|m| m.parts.iter().filter_map(|p| p.data.clone()).collect())
                    .unwrap_or_default(),
            });
            return;
        }
        if state.is_terminal() {
            self.close_all(out);
            self.stopped = true;
            if state == TaskState::Completed {
                if let Some(message) = message {
                    self.message(message, out);
                }
                out.extend(usage);
                out.push(ChildEvent::Completed);
            } else {
                let code = message
                    .and_then(|m| m.parts.iter().find_map(|p| p.data.as_ref()))
                    .and_then(|data| data.get("code"))
                    .and_then(Value::as_str)
                    .map_or_else(|| state_code(state).to_owned(), str::to_owned);
                let text = message.map(Message::text).unwrap_or_default();
                let message = if text.is_empty() {
                    format!("the remote task ended {}", state.as_str())
                } else {
                    text
                };
                out.extend(usage);
                out.push(ChildEvent::Failed { code, message });
            }
            return;
        }
        if let Some(message) = message {
            self.message(message, out);
        }
    }

    fn task_snapshot(&mut self, task: &Task, out: &mut Vec<ChildEvent>) {
        self.note_task(&task.id, &task.context_id, out);
        for artifact in task.artifacts.iter().flatten() {
            self.whole_artifact(artifact, out);
        }
        let status = &task.status;
        self.status(
            status.state,
            status.message.as_ref(),
            (&task.id, &task.context_id),
            usage_in(task.metadata.as_ref()),
            out,
        );
    }

    /// The child events of one frame.
    pub(crate) fn push(&mut self, frame: &StreamResponse) -> Vec<ChildEvent> {
        let mut out = Vec::new();
        match frame {
            StreamResponse::Task(task) => self.task_snapshot(task, &mut out),
            StreamResponse::Message(message) => {
                self.message(message, &mut out);
                self.close_all(&mut out);
                self.stopped = true;
                out.push(ChildEvent::Completed);
            }
            StreamResponse::ArtifactUpdate(update) => {
                self.note_task(&update.task_id, &update.context_id, &mut out);
                let id = update.artifact.artifact_id.clone();
                self.parts(&id, &update.artifact.parts, &mut out);
                if update.last_chunk {
                    self.close(&id, &mut out);
                }
            }
            StreamResponse::StatusUpdate(update) => {
                self.note_task(&update.task_id, &update.context_id, &mut out);
                self.status(
                    update.status.state,
                    update.status.message.as_ref(),
                    (&update.task_id, &update.context_id),
                    usage_in(update.metadata.as_ref()),
                    &mut out,
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::{TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent};

    fn chunk(id: &str, text: &str, append: bool, last: bool) -> StreamResponse {
        StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            artifact: Artifact {
                artifact_id: id.into(),
                parts: vec![Part::text(text)],
                ..Artifact::default()
            },
            append,
            last_chunk: last,
            metadata: None,
        })
    }

    fn status(state: TaskState, message: Option<Message>) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state,
                message,
                timestamp: None,
            },
            metadata: None,
        })
    }

    fn texts(events: &[ChildEvent]) -> String {
        events
            .iter()
            .filter_map(|event| match event {
                ChildEvent::TextDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn chunks_append_and_the_last_closes_the_message() {
        let mut frames = ChildFrames::default();
        let mut events = Vec::new();
        for frame in [
            chunk("a1", "Hel", false, false),
            chunk("a1", "lo", true, false),
            chunk("a1", "", true, true),
            status(TaskState::Completed, None),
        ] {
            events.extend(frames.push(&frame));
        }
        assert_eq!(
            events[0],
            ChildEvent::Task {
                task_id: "t".into(),
                context_id: "c".into()
            }
        );
        assert_eq!(
            events[1],
            ChildEvent::TextStart {
                message_id: "a1".into()
            }
        );
        assert_eq!(texts(&events), "Hello");
        assert_eq!(
            events[events.len() - 2],
            ChildEvent::TextEnd {
                message_id: "a1".into()
            }
        );
        assert_eq!(events.last(), Some(&ChildEvent::Completed));
    }

    #[test]
    fn a_replay_after_resubscribing_shows_nothing_twice() {
        let mut frames = ChildFrames::default();
        let mut events = Vec::new();
        events.extend(frames.push(&chunk("a1", "Hello ", false, false)));
        frames.resubscribed();
        // This server replays the run from its start; then the new text.
        events.extend(frames.push(&chunk("a1", "Hello ", false, false)));
        events.extend(frames.push(&chunk("a1", "world", true, false)));
        assert_eq!(texts(&events), "Hello world");
        frames.resubscribed();
        // Another server sends the task with its artifact so far.
        let snapshot = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Working,
                ..TaskStatus::default()
            },
            artifacts: Some(vec![Artifact {
                artifact_id: "a1".into(),
                parts: vec![Part::text("Hello world!")],
                ..Artifact::default()
            }]),
            ..Task::default()
        };
        events.extend(frames.push(&StreamResponse::Task(snapshot)));
        assert_eq!(texts(&events), "Hello world!");
    }

    #[test]
    fn input_required_interrupts_and_failures_carry_a_code() {
        let mut frames = ChildFrames::default();
        let question = Message::agent(
            vec![
                Part::text("Which city?"),
                Part::data(serde_json::json!({"type": "object"})),
            ],
            "c",
            "t",
        );
        let events = frames.push(&status(TaskState::InputRequired, Some(question)));
        let ChildEvent::Interrupted {
            state,
            message,
            data,
            ..
        } = events.last().unwrap()
        else {
            panic!("an interrupt")
        };
        assert_eq!(*state, TaskState::InputRequired);
        assert_eq!(message, "Which city?");
        assert_eq!(data.len(), 1);
        let mut frames = ChildFrames::default();
        frames.push(&chunk("a1", "partial", false, false));
        let events = frames.push(&status(TaskState::Rejected, None));
        assert_eq!(
            events[0],
            ChildEvent::TextEnd {
                message_id: "a1".into()
            }
        );
        assert!(
            matches!(&events[1], ChildEvent::Failed { code, .. } if code == "A2A_TASK_REJECTED")
        );
    }

    #[test]
    fn a_continued_task_shows_only_what_is_new_and_its_usage_before_the_end() {
        let earlier = BTreeMap::from([("a1".to_owned(), "Let me ".len())]);
        let mut frames = ChildFrames::continuing(earlier);
        let snapshot = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Working,
                ..TaskStatus::default()
            },
            artifacts: Some(vec![Artifact {
                artifact_id: "a1".into(),
                parts: vec![
                    Part::text("Let me check."),
                    Part::data(serde_json::json!({"x": 1})),
                ],
                ..Artifact::default()
            }]),
            ..Task::default()
        };
        let mut events = frames.push(&StreamResponse::Task(snapshot.clone()));
        assert_eq!(texts(&events), "check.");
        assert!(!events.iter().any(|e| matches!(e, ChildEvent::Data { .. })));
        // A second snapshot of the same task (a resubscription) adds only what is newer.
        frames.resubscribed();
        let mut later = snapshot;
        later.artifacts.as_mut().unwrap()[0].parts[0] = Part::text("Let me check. Done.");
        events.extend(frames.push(&StreamResponse::Task(later)));
        assert_eq!(texts(&events), "check. Done.");
        let usage = serde_json::json!({"agui-lambda": {"usage": [
            {"model": "m", "inputTokens": 3, "outputTokens": 4, "totalTokens": 7}]}});
        let StreamResponse::StatusUpdate(mut done) = status(TaskState::Completed, None) else {
            unreachable!()
        };
        done.metadata = usage.as_object().cloned();
        let end = frames.push(&StreamResponse::StatusUpdate(done));
        assert!(
            matches!(&end[end.len() - 2], ChildEvent::Usage(usage) if usage[0].total_tokens == 7),
            "{end:?}"
        );
        assert_eq!(end.last(), Some(&ChildEvent::Completed));
    }
}
