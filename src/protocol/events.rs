//! AG-UI events, serialised exactly as `@ag-ui/core` 1.0 parses them: absent optional fields are
//! omitted (never `null`), `timestamp` is integer epoch milliseconds.

use super::ids::{MessageId, RunId, ThreadId, ToolCallId};
use super::interrupt::Interrupt;
use super::message::Message;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

/// An event of a run. Terminal events (`RUN_FINISHED`, `RUN_ERROR`) are only built by the run
/// driver, which guarantees there is exactly one per run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    RunStarted {
        thread_id: ThreadId,
        run_id: RunId,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_run_id: Option<RunId>,
        /// The AG-UI version the stream speaks ([`super::version::declaration`]).
        #[serde(skip_serializing_if = "Option::is_none")]
        protocol_version: Option<&'static str>,
        /// The run's own `metadata` (under our key: the content parts it skipped); the event's
        /// place joins it.
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    RunFinished {
        thread_id: ThreadId,
        run_id: RunId,
        /// AG-UI 1.0's `outcome`; absent means success.
        #[serde(skip_serializing_if = "RunOutcome::unsent")]
        outcome: Option<RunOutcome>,
        #[serde(skip_serializing_if = "RunUsage::is_empty")]
        usage: RunUsage,
        /// What the run produced, for a client that asked a question rather than for a turn
        /// (an MCP App view's request answered with its MCP result).
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
    },
    RunError {
        message: String,
        code: RunErrorCode,
        #[serde(skip_serializing_if = "RunUsage::is_empty")]
        usage: RunUsage,
    },
    StepStarted {
        step_name: String,
    },
    StepFinished {
        step_name: String,
    },
    TextMessageStart {
        message_id: MessageId,
        role: TextRole,
    },
    TextMessageContent {
        message_id: MessageId,
        delta: String,
    },
    TextMessageEnd {
        message_id: MessageId,
    },
    ToolCallStart {
        tool_call_id: ToolCallId,
        tool_call_name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<MessageId>,
    },
    ToolCallArgs {
        tool_call_id: ToolCallId,
        delta: String,
    },
    ToolCallEnd {
        tool_call_id: ToolCallId,
    },
    ToolCallResult {
        message_id: MessageId,
        tool_call_id: ToolCallId,
        content: String,
        role: ToolRole,
    },
    ReasoningStart {
        message_id: MessageId,
    },
    ReasoningMessageStart {
        message_id: MessageId,
        role: ReasoningRole,
    },
    ReasoningMessageContent {
        message_id: MessageId,
        delta: String,
    },
    ReasoningMessageEnd {
        message_id: MessageId,
    },
    ReasoningEnd {
        message_id: MessageId,
    },
    /// A provider's opaque reasoning artefact (a signature, or redacted reasoning) that the
    /// client keeps with the message `entity_id` and sends back.
    ReasoningEncryptedValue {
        subtype: EncryptedValueSubtype,
        entity_id: String,
        encrypted_value: String,
        /// AG-UI 1.1: what the value is; sent only to clients that declared 1.1 or later.
        #[serde(skip_serializing_if = "Option::is_none")]
        encrypted_value_type: Option<&'static str>,
    },
    StateSnapshot {
        snapshot: Value,
    },
    StateDelta {
        delta: json_patch::Patch,
    },
    MessagesSnapshot {
        /// Activities kept with tool results follow their tool message as `activity` messages.
        #[serde(serialize_with = "super::activity::serialize_with_activities")]
        messages: Vec<Message>,
    },
    /// UI-only content of the server's own kind (`activityType`): the client shows it and does
    /// not send it back to the model.
    ActivitySnapshot {
        message_id: MessageId,
        activity_type: Cow<'static, str>,
        content: Value,
    },
    /// Changes to an activity already shown (a JSON Patch to its content), in order.
    ActivityDelta {
        message_id: MessageId,
        activity_type: Cow<'static, str>,
        patch: json_patch::Patch,
    },
    /// A sub-agent began: the events tagged with its `subagent_run_id` that follow are its work.
    SubagentStarted {
        subagent_run_id: String,
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_subagent_run_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<String>,
    },
    /// A sub-agent's part of this run is over: done, or suspended until interrupts are answered.
    SubagentFinished {
        subagent_run_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        outcome: Option<SubagentOutcome>,
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    /// A sub-agent failed; the run goes on.
    SubagentError {
        subagent_run_id: String,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
    /// Another agent's event as AG-UI JSON, already made this run's by whoever forwards it (its
    /// `type` first); sent as it is.
    #[serde(untagged)]
    Forwarded(serde_json::Map<String, Value>),
}

/// `SUBAGENT_FINISHED.outcome`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum SubagentOutcome {
    Success,
    /// Waiting for these interrupts (its own; none when a sub-agent of its own waits).
    Suspended {
        #[serde(skip_serializing_if = "Vec::is_empty")]
        interrupt_ids: Vec<String>,
    },
}

impl Event {
    pub(crate) fn is_terminal(&self) -> bool {
        matches!(self, Event::RunFinished { .. } | Event::RunError { .. })
    }
}

/// The AG-UI version this server declares as a consumer, to the remote AG-UI agents it runs as
/// sub-agents and on the runs an A2A request makes: what their streams may carry is 1.0's.
pub(crate) const PROTOCOL_VERSION: &str = "1.0";

/// How a finished run ended, in AG-UI 1.0's `RUN_FINISHED.outcome`. Only sent to clients that
/// speak 1.0: 0.0.59 rejects every form but a bare success.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum RunOutcome {
    /// Completed; `pending_tool_call_ids` names the frontend tool calls left for the client.
    Success {
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pending_tool_call_ids: Vec<ToolCallId>,
    },
    /// Paused until the client answers these in the next input's `resume`.
    Interrupt { interrupts: Vec<Interrupt> },
    /// Stopped by the cancel endpoint or by a newer run on the thread.
    Cancelled,
    /// Stopped, for a client that declares no version: 0.0.59 refuses a `cancelled` outcome, so
    /// none is sent and `metadata["agui-lambda"].outcome` says `"cancelled"` instead.
    #[serde(skip)]
    CancelledInMetadata,
}

impl RunOutcome {
    /// No `outcome` on the wire: success, or a cancel told only in the metadata.
    fn unsent(outcome: &Option<RunOutcome>) -> bool {
        matches!(outcome, None | Some(RunOutcome::CancelledInMetadata))
    }
}

/// `REASONING_ENCRYPTED_VALUE.subtype`: what `entityId` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EncryptedValueSubtype {
    #[serde(rename = "message")]
    Message,
    #[serde(rename = "tool-call")]
    ToolCall,
}

/// Our key in an event's `metadata` (AG-UI keeps `ag-ui` for itself; every other key is the
/// sender's, and AG-UI 1.x clients pass it on untouched).
pub(crate) const METADATA_KEY: &str = "agui-lambda";

/// An event as its run emitted it: its place in the run (`seq`, from 1) and its AG-UI JSON
/// with the timestamp and its place again in `metadata` (for clients that do not see SSE ids),
/// serialised once and shared by the live stream, followers and the event log. `event` is
/// `None` when the JSON was read back from the store.
#[derive(Debug, Clone)]
pub struct RecordedEvent {
    pub seq: u64,
    pub json: bytes::Bytes,
    pub terminal: bool,
    pub event: Option<Event>,
    /// Not one of the run's events: the notice that ends a stream while the run goes on (it
    /// ends the stream it is sent on), or what closes the stream's open items just before it.
    /// It carries no id and is never recorded.
    pub notice: bool,
}

#[derive(Serialize)]
pub(crate) struct Stamped<'a> {
    #[serde(flatten)]
    pub(crate) event: &'a Event,
    pub(crate) timestamp: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<Placed>,
}

/// `metadata` with the event's place in its run: `{"agui-lambda":{"eventId":7}}`.
#[derive(Serialize)]
pub(crate) struct Placed {
    #[serde(rename = "agui-lambda")]
    place: Place,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Place {
    /// What `Last-Event-ID` resumes after.
    event_id: u64,
    /// How the run ended, where the event's own `outcome` cannot say it (a cancel, to a client
    /// that declares no version).
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<&'static str>,
}

/// `event`'s JSON with its timestamp and its place in `metadata`. An event with metadata of its
/// own (a sub-agent's end, a child's forwarded event) keeps it: the place joins our key there,
/// replacing a child's place in its own run.
fn placed_json(event: &Event, seq: u64, timestamp_ms: i64) -> serde_json::Result<Vec<u8>> {
    let own_metadata = match event {
        Event::SubagentFinished { metadata, .. } | Event::RunStarted { metadata, .. } => {
            metadata.is_some()
        }
        Event::Forwarded(fields) => fields.contains_key("metadata"),
        _ => false,
    };
    if !own_metadata {
        let outcome = matches!(
            event,
            Event::RunFinished {
                outcome: Some(RunOutcome::CancelledInMetadata),
                ..
            }
        )
        .then_some("cancelled");
        return serde_json::to_vec(&Stamped {
            event,
            timestamp: timestamp_ms,
            metadata: Some(Placed {
                place: Place {
                    event_id: seq,
                    outcome,
                },
            }),
        });
    }
    let mut json = serde_json::to_value(Stamped {
        event,
        timestamp: timestamp_ms,
        metadata: None,
    })?;
    if let Some(fields) = json.as_object_mut() {
        let metadata = fields
            .entry("metadata")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if !metadata.is_object() {
            *metadata = Value::Object(serde_json::Map::new());
        }
        if let Some(metadata) = metadata.as_object_mut() {
            let ours = metadata
                .entry(METADATA_KEY)
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            match ours.as_object_mut() {
                Some(ours) => {
                    ours.insert("eventId".to_owned(), Value::from(seq));
                }
                None => *ours = serde_json::json!({"eventId": seq}),
            }
        }
    }
    serde_json::to_vec(&json)
}

impl RecordedEvent {
    pub(crate) fn new(seq: u64, event: Event, timestamp_ms: i64) -> Self {
        let json = match placed_json(&event, seq, timestamp_ms) {
            Ok(json) => json,
            // Our event types always serialise; if one ever does not, the client must still
            // get a well-formed event rather than a torn frame.
            Err(err) => {
                tracing::error!(error = %err, "event serialisation failed");
                br#"{"type":"RUN_ERROR","message":"something went wrong","code":"INVALID_REQUEST"}"#
                    .to_vec()
            }
        };
        Self {
            seq,
            terminal: event.is_terminal(),
            json: bytes::Bytes::from(json),
            event: Some(event),
            notice: false,
        }
    }

    /// An event read back from the event log.
    pub(crate) fn stored(seq: u64, json: impl Into<bytes::Bytes>) -> Self {
        let json = json.into();
        let terminal = is_terminal_json(&json);
        Self {
            seq,
            json,
            terminal,
            event: None,
            notice: false,
        }
    }

    /// The notice that ends a stream while its run goes on (a hand-off to the next invocation,
    /// or the stream's own time limit): AG-UI's `RUN_FINISHED`, so a client that cannot follow
    /// the run sees a clean end, whose `result` and `metadata` say the run continues and where
    /// to follow it (`events`, after `lastEventId`). `after` is the last event sent.
    pub(crate) fn continues(
        thread_id: &ThreadId,
        run_id: &RunId,
        after: u64,
        events: &str,
        timestamp_ms: i64,
    ) -> Self {
        let place = serde_json::json!({
            "continues": true,
            "threadId": thread_id,
            "runId": run_id,
            "events": events,
            "lastEventId": after,
        });
        let json = serde_json::json!({
            "type": "RUN_FINISHED",
            "threadId": thread_id,
            "runId": run_id,
            "result": place,
            "timestamp": timestamp_ms,
            "metadata": {METADATA_KEY: {"continues": {"events": events, "lastEventId": after}}},
        });
        Self {
            seq: after + 1,
            json: bytes::Bytes::from(json.to_string()),
            terminal: true,
            // Dialects without resume get a plain finish.
            event: Some(Event::RunFinished {
                thread_id: thread_id.clone(),
                run_id: run_id.clone(),
                outcome: None,
                usage: RunUsage::default(),
                result: None,
            }),
            notice: true,
        }
    }
}

impl RecordedEvent {
    /// What closes an item a stream opened (`fields`: its AG-UI JSON), sent just before the
    /// notice that ends the stream while its run goes on ([`super::open_items`]).
    pub(crate) fn closing(fields: serde_json::Map<String, Value>) -> Self {
        let json = Value::Object(fields.clone()).to_string();
        Self {
            seq: 0,
            json: bytes::Bytes::from(json),
            terminal: false,
            event: Some(Event::Forwarded(fields)),
            notice: true,
        }
    }

    /// The notice's `metadata["agui-lambda"].continues`: where its run goes on.
    pub(crate) fn continues_at(&self) -> Value {
        serde_json::from_slice::<Value>(&self.json)
            .ok()
            .and_then(|json| {
                json.get("metadata")?
                    .get(METADATA_KEY)?
                    .get("continues")
                    .cloned()
            })
            .unwrap_or(Value::Null)
    }
}

/// Whether stored event JSON is a terminal event; the `type` field always comes first.
fn is_terminal_json(json: &[u8]) -> bool {
    json.starts_with(br#"{"type":"RUN_FINISHED""#) || json.starts_with(br#"{"type":"RUN_ERROR""#)
}

/// Tokens one provider and model used in a run, in AG-UI's `TokenUsage` shape. The optional
/// counts are parts of the totals and appear only where the provider reports them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TokenUsage {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// AG-UI 1.0 only: 0.0.59's schema has no such field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_input_tokens: Option<u64>,
}

/// `usage` on `RUN_FINISHED` / `RUN_ERROR`: one entry per provider and model; empty (and then
/// omitted) when the model reported nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(transparent)]
pub struct RunUsage(pub Vec<TokenUsage>);

impl RunUsage {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Input and output tokens summed over every entry.
    pub(crate) fn totals(&self) -> (u64, u64) {
        self.0.iter().fold((0, 0), |(input, output), entry| {
            (
                input.saturating_add(entry.input_tokens),
                output.saturating_add(entry.output_tokens),
            )
        })
    }
}

/// The only role the server gives text messages it streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TextRole {
    Assistant,
    /// A message the server made for the user (a click on a surface, in words).
    User,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolRole {
    Tool,
}

/// `REASONING_MESSAGE_START` without `role: "reasoning"` is fatal in the TS client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningRole {
    Reasoning,
}

/// `RUN_ERROR` codes (the AG-UI summary), plus the server's own where none of those fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RunErrorCode {
    InvalidRequest,
    #[allow(
        dead_code,
        reason = "in AG-UI's list; an unknown tool is a tool result here, not a run error"
    )]
    ToolNotFound,
    ToolExecutionError,
    /// The model's stream broke off or could not be read, or its answer was unusable.
    ModelError,
    /// The provider said too many requests (or no quota left), after the retries and fallbacks.
    ModelRateLimited,
    /// The provider was down, overloaded or unreachable, after the retries and fallbacks.
    ModelUnavailable,
    /// The provider did not answer in time, or its stream went silent.
    ModelTimeout,
    /// The provider refused the request (a bad parameter, auth, a model it does not serve).
    ModelRefused,
    Timeout,
    /// The model kept calling server tools past the configured step bound.
    MaxStepsExceeded,
    /// The thread store failed after streaming began.
    StoreError,
    /// Another run took the thread over (its lease expired and was taken).
    Conflict,
    /// The run was cancelled; sent instead of `RUN_FINISHED` with a cancelled outcome to
    /// clients that do not speak AG-UI 1.0.
    Cancelled,
    /// A follower saw the run's thread released with no terminal event in its log: the
    /// process running it stopped.
    RunLost,
    /// The thread has open interrupts the input does not answer in `resume`.
    InterruptPending,
    /// A `resume` entry resolves an interrupt past its `expiresAt`.
    InterruptExpired,
    /// A `resume` entry names no open interrupt, or its payload does not match the
    /// interrupt's `responseSchema`.
    InvalidResume,
    /// The new message alone is more than the model's context window can take.
    ContextTooLong,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_serialise_with_agui_field_names_and_no_nulls() {
        let id = MessageId::parse("m1", 128).unwrap();
        let call = ToolCallId::parse("c1", 128).unwrap();
        let cases = [
            (
                Event::RunStarted {
                    thread_id: ThreadId::parse("t", 128).unwrap(),
                    run_id: RunId::parse("r", 128).unwrap(),
                    parent_run_id: None,
                    protocol_version: None,
                    metadata: None,
                },
                json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
            ),
            (
                Event::TextMessageStart {
                    message_id: id.clone(),
                    role: TextRole::Assistant,
                },
                json!({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}),
            ),
            (
                Event::ToolCallStart {
                    tool_call_id: call.clone(),
                    tool_call_name: "f".into(),
                    parent_message_id: Some(id.clone()),
                },
                json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "m1"}),
            ),
            (
                Event::ToolCallResult {
                    message_id: id.clone(),
                    tool_call_id: call,
                    content: "ok".into(),
                    role: ToolRole::Tool,
                },
                json!({"type": "TOOL_CALL_RESULT", "messageId": "m1", "toolCallId": "c1", "content": "ok", "role": "tool"}),
            ),
            (
                Event::ReasoningMessageStart {
                    message_id: id,
                    role: ReasoningRole::Reasoning,
                },
                json!({"type": "REASONING_MESSAGE_START", "messageId": "m1", "role": "reasoning"}),
            ),
            (
                Event::RunError {
                    message: "boom".into(),
                    code: RunErrorCode::ModelError,
                    usage: RunUsage::default(),
                },
                json!({"type": "RUN_ERROR", "message": "boom", "code": "MODEL_ERROR"}),
            ),
            (
                Event::StepStarted {
                    step_name: "model_turn_1".into(),
                },
                json!({"type": "STEP_STARTED", "stepName": "model_turn_1"}),
            ),
            (
                Event::ActivityDelta {
                    message_id: MessageId::parse("c1-activity", 128).unwrap(),
                    activity_type: "open-generative-ui".into(),
                    patch: serde_json::from_value(
                        json!([{"op": "add", "path": "/html/-", "value": "<p>"}]),
                    )
                    .unwrap(),
                },
                json!({"type": "ACTIVITY_DELTA", "messageId": "c1-activity", "activityType": "open-generative-ui",
                       "patch": [{"op": "add", "path": "/html/-", "value": "<p>"}]}),
            ),
        ];
        for (event, expected) in cases {
            assert_eq!(serde_json::to_value(&event).unwrap(), expected);
        }
    }

    #[test]
    fn an_event_with_metadata_of_its_own_keeps_it_beside_its_place() {
        let text = |recorded: &RecordedEvent| String::from_utf8(recorded.json.to_vec()).unwrap();
        let finished = RecordedEvent::new(
            7,
            Event::SubagentFinished {
                subagent_run_id: "sa1".into(),
                result: None,
                outcome: None,
                metadata: Some(json!({"agui-lambda": {"threadId": "child"}, "other": 1})),
            },
            5,
        );
        assert_eq!(text(&finished).matches("\"metadata\"").count(), 1);
        let json: Value = serde_json::from_slice(&finished.json).unwrap();
        assert_eq!(
            json["metadata"],
            json!({"agui-lambda": {"threadId": "child", "eventId": 7}, "other": 1})
        );
        // A child's event forwarded with the child's place: the parent's replaces it.
        let forwarded = json!({"type": "TEXT_MESSAGE_END", "messageId": "sa1:m", "metadata": {"agui-lambda": {"eventId": 2}}});
        let Value::Object(fields) = forwarded else {
            unreachable!()
        };
        let forwarded = RecordedEvent::new(9, Event::Forwarded(fields), 5);
        assert_eq!(text(&forwarded).matches("\"metadata\"").count(), 1);
        let json: Value = serde_json::from_slice(&forwarded.json).unwrap();
        assert_eq!(json["metadata"], json!({"agui-lambda": {"eventId": 9}}));
    }
}
