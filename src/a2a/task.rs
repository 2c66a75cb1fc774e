//! A task as this server keeps it: a chain of runs on one thread. What the store holds beside
//! its keys ([`TaskBody`]), the task a client sees ([`view`]), and how a run's AG-UI events
//! become the task's frames and its end ([`RunFrames`]): text as artifact updates (the
//! message's id as the artifact's), an interrupt as `TASK_STATE_INPUT_REQUIRED`, success
//! `COMPLETED`, a run error `FAILED`, a cancel `CANCELED`.
//!
//! Events are read as their AG-UI JSON, so a run followed live and one read back from its
//! stored log fold the same way.

use super::types::{
    Artifact, Message, Part, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The artifacts' text a task keeps, in bytes: its record stays well inside a DynamoDB item
/// (400 KB) with its history. The thread keeps every message whole.
const MAX_ARTIFACT_BYTES: usize = 200_000;
/// The history's text a task keeps, in bytes; older messages go first.
const MAX_HISTORY_BYTES: usize = 100_000;

/// What the server keeps of a task besides its keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskBody {
    pub status: TaskStatus,
    /// The artifacts of the chain's ended runs.
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    /// The client's messages and the agent's status messages, oldest first.
    #[serde(default)]
    pub history: Vec<Message>,
    /// The chain's runs, the current one last.
    #[serde(default)]
    pub runs: Vec<String>,
    /// The interrupts the task waits on (AG-UI interrupt ids), while input is required.
    #[serde(default)]
    pub open_interrupts: Vec<String>,
    /// The agent profile (the request's `tenant`) that serves the task; none for the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

impl TaskBody {
    /// The current run.
    pub(crate) fn current_run(&self) -> Option<&str> {
        self.runs.last().map(String::as_str)
    }

    /// Keeps the body inside its budget: the oldest history first, then the artifacts' text
    /// from the end (marked `truncated`).
    pub(crate) fn fit(&mut self) {
        while self.history.len() > 1 && json_len(&self.history) > MAX_HISTORY_BYTES {
            self.history.remove(0);
        }
        let mut budget = MAX_ARTIFACT_BYTES;
        for artifact in &mut self.artifacts {
            for part in &mut artifact.parts {
                let Some(text) = part.text.as_mut() else {
                    continue;
                };
                if text.len() <= budget {
                    budget -= text.len();
                    continue;
                }
                let mut cut = budget;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                budget = 0;
                artifact
                    .metadata
                    .get_or_insert_with(Default::default)
                    .insert("truncated".to_owned(), Value::Bool(true));
            }
        }
    }
}

/// The size of `value` as JSON.
fn json_len<T: Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |bytes| bytes.len())
}

/// The task a client sees: `history_length` most recent history messages (all when `None`,
/// none and the field left out at 0), artifacts only when `with_artifacts`.
pub(crate) fn view(
    task_id: &str,
    context_id: &str,
    body: &TaskBody,
    history_length: Option<i32>,
    with_artifacts: bool,
) -> Task {
    let history = match history_length {
        Some(0) => None,
        Some(length) => {
            let keep = usize::try_from(length).unwrap_or(0);
            let skip = body.history.len().saturating_sub(keep);
            Some(body.history[skip..].to_vec())
        }
        None => Some(body.history.clone()),
    };
    Task {
        id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        status: body.status.clone(),
        artifacts: with_artifacts.then(|| body.artifacts.clone()),
        history,
        metadata: None,
    }
}

/// ISO 8601 UTC with milliseconds, as A2A's timestamps are.
pub(crate) fn timestamp(ms: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// A status of `state` now, with an optional message.
pub(crate) fn status(state: TaskState, message: Option<Message>) -> TaskStatus {
    TaskStatus {
        state,
        message,
        timestamp: Some(timestamp(chrono::Utc::now().timestamp_millis())),
    }
}

/// One run of a task, event by event: the frames a streaming client gets, and what the run
/// adds to the task when it ends.
pub(crate) struct RunFrames {
    task_id: String,
    context_id: String,
    /// The run's text messages as artifacts, in the order they started.
    artifacts: Vec<Artifact>,
    /// The artifact a message id streams into.
    open: Vec<String>,
    end: Option<RunEnd>,
}

/// How a run ended, for its task.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunEnd {
    pub status: TaskStatus,
    /// Interrupt ids a resume must answer (input required).
    pub open_interrupts: Vec<String>,
}

impl RunFrames {
    pub(crate) fn new(task_id: &str, context_id: &str) -> Self {
        Self {
            task_id: task_id.to_owned(),
            context_id: context_id.to_owned(),
            artifacts: Vec::new(),
            open: Vec::new(),
            end: None,
        }
    }

    /// How the run ended, once its terminal event was pushed.
    pub(crate) fn end(&self) -> Option<&RunEnd> {
        self.end.as_ref()
    }

    /// The run's artifacts so far.
    pub(crate) fn artifacts(&self) -> &[Artifact] {
        &self.artifacts
    }

    fn artifact_update(
        &self,
        artifact_id: &str,
        text: &str,
        append: bool,
        last: bool,
    ) -> StreamResponse {
        StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            artifact: Artifact {
                artifact_id: artifact_id.to_owned(),
                name: "response".to_owned(),
                parts: vec![Part::text(text)],
                ..Artifact::default()
            },
            append,
            last_chunk: last,
            metadata: None,
        })
    }

    /// The frames of one AG-UI event (its JSON), in order.
    pub(crate) fn push(&mut self, event: &Value) -> Vec<StreamResponse> {
        let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or_default();
        match text("type") {
            "TEXT_MESSAGE_CONTENT" => {
                let id = text("messageId");
                let delta = text("delta");
                let append = match self.artifacts.iter_mut().find(|a| a.artifact_id == id) {
                    Some(artifact) => {
                        if let Some(part) = artifact.parts.first_mut() {
                            part.text.get_or_insert_with(String::new).push_str(delta);
                        }
                        true
                    }
                    None => {
                        self.artifacts.push(Artifact {
                            artifact_id: id.to_owned(),
                            name: "response".to_owned(),
                            parts: vec![Part::text(delta)],
                            ..Artifact::default()
                        });
                        self.open.push(id.to_owned());
                        false
                    }
                };
                vec![self.artifact_update(id, delta, append, false)]
            }
            "TEXT_MESSAGE_END" => {
                let id = text("messageId");
                match self.open.iter().position(|open| open == id) {
                    Some(index) => {
                        self.open.remove(index);
                        vec![self.artifact_update(id, "", true, true)]
                    }
                    None => Vec::new(),
                }
            }
            "RUN_FINISHED" | "RUN_ERROR" => {
                let end = run_end(event, &self.context_id, &self.task_id);
                let mut frames: Vec<StreamResponse> = std::mem::take(&mut self.open)
                    .iter()
                    .map(|id| self.artifact_update(id, "", true, true))
                    .collect();
                frames.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                    task_id: self.task_id.clone(),
                    context_id: self.context_id.clone(),
                    status: end.status.clone(),
                    metadata: usage_metadata(event),
                }));
                self.end = Some(end);
                frames
            }
            _ => Vec::new(),
        }
    }
}

/// The run's token usage as the status update that ends it carries it (A2A has no field for
/// it): `{"agui-lambda": {"usage": [...]}}`, as AG-UI's terminal event has it.
fn usage_metadata(event: &Value) -> Option<serde_json::Map<String, Value>> {
    let usage = event
        .get("usage")
        .filter(|usage| usage.as_array().is_some_and(|entries| !entries.is_empty()))?;
    json!({crate::a2a::VENDOR_KEY: {"usage": usage}})
        .as_object()
        .cloned()
}

/// The task's status after a run's terminal event.
fn run_end(event: &Value, context_id: &str, task_id: &str) -> RunEnd {
    let agent = |parts: Vec<Part>| Some(Message::agent(parts, context_id, task_id));
    if event["type"] == "RUN_ERROR" {
        let code = event["code"].as_str().unwrap_or("RUN_ERROR");
        let message = event["message"].as_str().unwrap_or("the run failed");
        let state = if code == "CANCELLED" {
            TaskState::Canceled
        } else {
            TaskState::Failed
        };
        return RunEnd {
            status: status(
                state,
                agent(vec![Part::text(message), Part::data(json!({"code": code}))]),
            ),
            open_interrupts: Vec::new(),
        };
    }
    match event["outcome"]["type"].as_str() {
        Some("interrupt") => {
            let interrupts = event["outcome"]["interrupts"].clone();
            let ids = interrupts
                .as_array()
                .map(|list| {
                    list.iter()
                        .filter_map(|interrupt| interrupt["id"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let asks: Vec<&str> = interrupts
                .as_array()
                .map(|list| list.iter().filter_map(|i| i["message"].as_str()).collect())
                .unwrap_or_default();
            let prompt = if asks.is_empty() {
                "The agent waits for your approval.".to_owned()
            } else {
                asks.join("\n")
            };
            let hint = " Answer yes or no (or send a data part {\"approved\": true|false, \"reason\"?: string}).";
            RunEnd {
                status: status(
                    TaskState::InputRequired,
                    agent(vec![
                        Part::text(format!("{prompt}{hint}")),
                        Part::data(json!({"interrupts": interrupts})),
                    ]),
                ),
                open_interrupts: ids,
            }
        }
        Some("cancelled") => RunEnd {
            status: status(TaskState::Canceled, None),
            open_interrupts: Vec::new(),
        },
        _ => RunEnd {
            status: status(TaskState::Completed, None),
            open_interrupts: Vec::new(),
        },
    }
}

/// A run that ended without a terminal event in its log (its process stopped).
pub(crate) fn lost_run(context_id: &str, task_id: &str) -> RunEnd {
    run_end(
        &json!({"type": "RUN_ERROR", "code": "RUN_LOST",
                "message": "the run stopped without finishing (its process ended)"}),
        context_id,
        task_id,
    )
}

/// Folds an ended run into its task: its artifacts, its end, its status message in the history.
pub(crate) fn fold_run(body: &mut TaskBody, frames: &RunFrames, end: RunEnd) {
    body.artifacts.extend(frames.artifacts().iter().cloned());
    if let Some(message) = &end.status.message {
        body.history.push(message.clone());
    }
    body.status = end.status;
    body.open_interrupts = end.open_interrupts;
    body.fit();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames_of(events: &[Value]) -> (RunFrames, Vec<Value>) {
        let mut frames = RunFrames::new("t1", "c1");
        let out = events
            .iter()
            .flat_map(|event| frames.push(event))
            .map(|frame| serde_json::to_value(frame).unwrap())
            .collect();
        (frames, out)
    }

    #[test]
    fn text_streams_as_one_artifact_per_message_closed_by_its_last_chunk() {
        let (frames, out) = frames_of(&[
            json!({"type": "RUN_STARTED"}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m1"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hel"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "lo"}),
            json!({"type": "TEXT_MESSAGE_END", "messageId": "m1"}),
            json!({"type": "RUN_FINISHED"}),
        ]);
        assert_eq!(out.len(), 4);
        assert_eq!(out[0]["artifactUpdate"]["artifact"]["artifactId"], "m1");
        assert!(out[0]["artifactUpdate"].get("append").is_none());
        assert_eq!(out[1]["artifactUpdate"]["append"], true);
        assert_eq!(out[2]["artifactUpdate"]["lastChunk"], true);
        assert_eq!(
            out[3]["statusUpdate"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
        assert_eq!(
            frames.artifacts()[0].parts[0].text.as_deref(),
            Some("Hello")
        );
        assert!(out[3]["statusUpdate"].get("metadata").is_none());
        // The run's usage rides on the status update that ends it.
        let usage = json!([{"model": "m", "inputTokens": 1, "outputTokens": 2, "totalTokens": 3}]);
        let (_, out) = frames_of(&[json!({"type": "RUN_FINISHED", "usage": usage})]);
        assert_eq!(
            out[0]["statusUpdate"]["metadata"]["agui-lambda"]["usage"],
            usage
        );
    }

    #[test]
    fn an_interrupt_asks_for_input_and_a_run_error_fails_the_task() {
        let (frames, out) = frames_of(&[
            json!({"type": "RUN_FINISHED", "outcome": {"type": "interrupt",
            "interrupts": [{"id": "int-1", "reason": "tool_call", "message": "Allow x?"}]}}),
        ]);
        let end = frames.end().unwrap();
        assert_eq!(end.status.state, TaskState::InputRequired);
        assert_eq!(end.open_interrupts, ["int-1"]);
        let message = &out[0]["statusUpdate"]["status"]["message"];
        assert_eq!(message["role"], "ROLE_AGENT");
        assert!(
            message["parts"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("Allow x?")
        );
        assert_eq!(message["parts"][1]["data"]["interrupts"][0]["id"], "int-1");
        let (frames, _) = frames_of(&[
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}),
            json!({"type": "RUN_ERROR", "code": "MODEL_ERROR", "message": "boom"}),
        ]);
        assert_eq!(frames.end().unwrap().status.state, TaskState::Failed);
        let (frames, _) =
            frames_of(&[json!({"type": "RUN_FINISHED", "outcome": {"type": "cancelled"}})]);
        assert_eq!(frames.end().unwrap().status.state, TaskState::Canceled);
    }

    #[test]
    fn a_body_past_its_budget_keeps_the_newest_history_and_cuts_artifacts() {
        let mut body = TaskBody {
            artifacts: vec![Artifact {
                artifact_id: "a".into(),
                parts: vec![Part::text("é".repeat(MAX_ARTIFACT_BYTES))],
                ..Artifact::default()
            }],
            history: (0..400)
                .map(|i| {
                    Message::agent(
                        vec![Part::text(format!("{i}{}", "x".repeat(500)))],
                        "c",
                        "t",
                    )
                })
                .collect(),
            ..TaskBody::default()
        };
        body.fit();
        assert!(serde_json::to_vec(&body.history).unwrap().len() <= MAX_HISTORY_BYTES);
        assert!(body.history.last().unwrap().text().starts_with("399"));
        assert_eq!(
            body.artifacts[0].parts[0].text.as_ref().unwrap().len(),
            MAX_ARTIFACT_BYTES
        );
        assert_eq!(
            body.artifacts[0].metadata.as_ref().unwrap()["truncated"],
            true
        );
        let view = view("t", "c", &body, Some(2), false);
        assert_eq!(view.history.unwrap().len(), 2);
        assert!(view.artifacts.is_none());
        assert!(
            super::view("t", "c", &body, Some(0), true)
                .history
                .is_none()
        );
    }
}
