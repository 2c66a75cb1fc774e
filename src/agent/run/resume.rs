//! A run taken over by a new runner: rebuilt from the thread and the run's record, its event
//! numbering going on after the last recorded event, what the last runner left open in the
//! stream closed (a crash mid-turn), and the calls it may have cut off answered: again for an
//! idempotent tool, with the result the event log holds when it has one, otherwise with an
//! error saying the call may or may not have happened.

use super::fit::ContextState;
use super::handoff::{Carried, Segment};
use super::outcome::{RunEnd, RunFailure};
use super::record::{self, Phase, RunRecord, ToolPlan};
use super::tool_calls::ToolResult;
use super::{Emitter, PreparedRun, RunProgress, RunRequest, RunTelemetry};
use crate::agent::Agent;
use crate::agent::approval::InterruptRecord;
use crate::protocol::events::RecordedEvent;
use crate::protocol::{Event, Message, MessageId, ToolCallId};
use crate::store::{ClaimedRun, Reservation};
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The error result of a call cut off before its result was stored, for a tool that does not
/// say it may run again.
pub(crate) const CUT_OFF: &str = "Error: this call was cut off before its result was stored \
     (its runner stopped): it may or may not have happened. Check before calling it again.";

/// A run as the agent hands it to its new runner.
pub(crate) struct TakeOver {
    pub(crate) claimed: ClaimedRun,
    pub(crate) record: RunRecord,
    /// The run's recorded events after the record's `events_through`: what the last runner
    /// sent after its last checkpoint (a crash mid-step leaves some).
    pub(crate) tail: Vec<RecordedEvent>,
}

/// How a run taken over goes on before its next step.
pub(crate) struct Resume {
    cancel_requested: bool,
    left: LeftOpen,
}

/// What the last runner's events left open after its last checkpoint.
#[derive(Debug, Default)]
struct LeftOpen {
    /// The events that close what was open (messages, calls, reasoning, steps).
    closing: Vec<Event>,
    /// Text streamed as assistant messages the last runner never stored, by message.
    texts: Vec<(MessageId, String)>,
    /// Results the last runner streamed (and recorded) but never stored, by call.
    results: HashMap<ToolCallId, (MessageId, String)>,
}

/// The next thing a run taken over does.
pub(super) enum Next {
    Step(u32),
    End(RunEnd),
}

impl PreparedRun {
    /// The run `take` hands over, for `agent`, its runner's part ending at `ends` (its
    /// invocation's deadline less the margin, when it has one). Returns it with the number of
    /// the run's last event before this runner's.
    pub(crate) fn taken_over(
        agent: Agent,
        take: TakeOver,
        telemetry: RunTelemetry,
        ends: Option<Instant>,
    ) -> (Self, u64) {
        let TakeOver {
            claimed,
            record,
            tail,
        } = take;
        let RunRecord {
            request: stored,
            progress: counted,
            phase,
        } = record;
        let base = tail
            .last()
            .map_or(counted.events_through, |event| event.seq);
        let now_ms = chrono::Utc::now().timestamp_millis();
        let left = |at_ms: i64| Duration::from_millis(u64::try_from(at_ms - now_ms).unwrap_or(0));
        let request = RunRequest {
            parent_run_id: stored.parent_run_id,
            client_tools: record::client_tools(stored.client_tools),
            system: stored.system,
            device_timezone: stored.device_timezone.and_then(|zone| zone.parse().ok()),
            deadline: Instant::now() + left(stored.ends_at_ms),
            ends_at_ms: stored.ends_at_ms,
            received_at_ms: Some(stored.received_at_ms),
            speaks_v1: stored.speaks_v1,
            encrypted_value_types: stored.encrypted_value_types,
            skipped_parts: Vec::new(),
            sampling: stored.sampling.into(),
            client_is_behind: false,
            snapshot: None,
            resolved: Vec::new(),
            delegated: Vec::new(),
            depth: stored.depth,
            visibility: stored.visibility,
            repeat_only: false,
            a2ui: stored.a2ui,
            said: None,
        };
        let (time_to_first_byte_ms, first_output_ms) =
            (counted.time_to_first_byte_ms, counted.first_output_ms);
        let progress = restored_progress(claimed.thread, counted, phase);
        let mut telemetry = telemetry;
        let received = std::time::Instant::now()
            .checked_sub(Duration::from_millis(
                u64::try_from(now_ms - stored.received_at_ms).unwrap_or(0),
            ))
            .unwrap_or_else(std::time::Instant::now);
        telemetry.observed = crate::agent::Observed {
            received,
            dialect: record::dialect_label(&stored.dialect),
        };
        telemetry.time_to_first_byte =
            Duration::from_secs_f64(time_to_first_byte_ms.max(0.0) / 1000.0);
        telemetry.first_output =
            first_output_ms.map(|ms| received + Duration::from_secs_f64(ms.max(0.0) / 1000.0));
        let reservation = Reservation {
            owner: claimed.lease.owner.clone(),
            day: stored.reserved_day,
            reserved_tokens: stored.reserved_tokens,
        };
        let mut run = PreparedRun {
            agent,
            lease: claimed.lease,
            reservation,
            request,
            progress,
            telemetry,
            segment: Segment::default(),
            resume: Some(Resume {
                cancel_requested: claimed.cancel_requested,
                left: left_open(&tail),
            }),
            end_hook: None,
        };
        if let Some(ends) = ends {
            run.end_invocation_at(ends);
        }
        (run, base)
    }

    /// Where a run taken over goes on: what the last runner left open closed, then its next
    /// model turn, or what is left of a turn's tool calls.
    pub(super) async fn go_on(
        &mut self,
        out: &Emitter<'_>,
        stop: &CancellationToken,
        resume: Resume,
    ) -> Result<Next, RunFailure> {
        let Resume {
            cancel_requested,
            mut left,
        } = resume;
        for event in left.closing.drain(..) {
            out.emit(event);
        }
        self.keep_cut_texts(&mut left);
        if cancel_requested || stop.is_cancelled() {
            return Err(RunFailure::Cancelled);
        }
        if self.request.depth > 0 {
            // A sub-agent's run is one step of its parent's and ends with it: the parent's
            // next runner answers the delegation as cut off, so this one stops as stopped.
            tracing::warn!(run_id = %self.lease.run_id, "a sub-agent's run is not taken over: it stops with its parent's runner");
            return Err(RunFailure::Cancelled);
        }
        match std::mem::replace(&mut self.progress.phase, Phase::Model { step: 1 }) {
            Phase::Model { step } => {
                self.progress.phase = Phase::Model { step };
                Ok(Next::Step(step))
            }
            Phase::Tools(plan) => {
                let mut plan = *plan;
                let next = plan.step + 1;
                self.answer_cut_calls(out, &mut plan, &mut left.results);
                match self.carry_out(out, plan, stop).await? {
                    Some(end) => Ok(Next::End(end)),
                    None => Ok(Next::Step(next)),
                }
            }
        }
    }

    /// Text the last runner streamed in a turn it never stored: kept as the client saw it.
    fn keep_cut_texts(&mut self, left: &mut LeftOpen) {
        let known: std::collections::HashSet<MessageId> = self
            .progress
            .history
            .iter()
            .map(|message| message.id().clone())
            .collect();
        for (id, text) in left.texts.drain(..) {
            if !known.contains(&id) && !text.is_empty() {
                self.progress.keep(Message::Assistant {
                    id,
                    content: Some(text),
                    tool_calls: Vec::new(),
                    name: None,
                    encrypted_value: None,
                });
            }
        }
    }

    /// The calls of `plan` that were started and have no stored result: the result the event
    /// log holds when the last runner streamed one; else run again for an idempotent tool;
    /// else answered with [`CUT_OFF`].
    fn answer_cut_calls(
        &mut self,
        out: &Emitter<'_>,
        plan: &mut ToolPlan,
        streamed: &mut HashMap<ToolCallId, (MessageId, String)>,
    ) {
        for id in std::mem::take(&mut plan.started) {
            let Some(at) = plan.pending.iter().position(|call| call.id == id) else {
                continue;
            };
            if let Some((message_id, content)) = streamed.remove(&id) {
                // Streamed already: the client saw it; stored now.
                plan.pending.remove(at);
                plan.unanswered.retain(|unanswered| unanswered != &id);
                let error = content
                    .starts_with("Error: ")
                    .then(|| "tool error".to_owned());
                self.progress.keep(Message::Tool {
                    id: message_id,
                    tool_call_id: id,
                    content,
                    error,
                    metadata: None,
                });
                continue;
            }
            if self.agent.tools.is_idempotent(&plan.pending[at].name) {
                tracing::info!(tool_call_id = %id, "a call cut off before its result was stored runs again (its tool is idempotent)");
                continue;
            }
            let call = plan.pending.remove(at);
            tracing::warn!(tool_call_id = %id, tool = %call.name, "a call cut off before its result was stored is not run again");
            plan.held.push(ToolResult {
                id: MessageId::generate(),
                tool_call_id: id,
                content: CUT_OFF.to_owned(),
                error: Some("cut off".to_owned()),
                metadata: None,
            });
        }
        self.stream_in_order(out, plan);
    }
}

/// The run's progress as its record and the thread (read at the claim) say.
fn restored_progress(
    thread: crate::store::StoredThread,
    counted: record::StoredProgress,
    phase: Phase,
) -> RunProgress {
    let interrupts = InterruptRecord::parse(thread.interrupts.as_ref()).unwrap_or_else(|error| {
        tracing::error!(%error, "a thread's interrupt record does not parse");
        InterruptRecord::default()
    });
    let mut progress = RunProgress::new(
        thread.messages,
        thread.state,
        interrupts,
        ContextState::new(thread.first_seq, thread.checkpoint, thread.context),
    );
    let summary = &mut progress.summary;
    summary.steps = counted.steps;
    summary.tool_calls = counted.tool_calls;
    summary.usage = counted.usage.into();
    summary.by_model = record::by_model(counted.by_model);
    summary.usage_reported = counted.usage_reported;
    summary.model_attempts = counted.model_attempts;
    summary.child_usage = counted.child_usage;
    summary.subagent_runs = counted.subagent_runs;
    progress.context.compactions = counted.compactions;
    progress.fallback_approvals = counted.fallback_approvals;
    progress.delegated = counted.delegated;
    progress.memory_block = counted.memory_block;
    progress.phase = phase;
    progress.longest_model_turn = Duration::from_millis(counted.longest_model_ms);
    progress.carried = Carried {
        handoffs: counted.handoffs,
        store: counted.store,
    };
    progress
}

/// What `tail` (the events after the last checkpoint) left open, and what it streamed that was
/// never stored.
fn left_open(tail: &[RecordedEvent]) -> LeftOpen {
    let mut left = LeftOpen::default();
    let mut open = OpenEntities::default();
    for recorded in tail {
        let Ok(event) = serde_json::from_slice::<Value>(&recorded.json) else {
            continue;
        };
        let field = |name: &str| event.get(name).and_then(Value::as_str).unwrap_or_default();
        // A sub-agent's event (attributed): its text and results are its own thread's.
        let tag = event
            .get("subagentRunId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let message = || MessageId::parse(field("messageId"), usize::MAX).ok();
        let call = || ToolCallId::parse(field("toolCallId"), usize::MAX).ok();
        let kind = field("type");
        match kind {
            "TEXT_MESSAGE_START" => {
                if let Some(id) = message() {
                    if tag.is_none() && !left.texts.iter().any(|(known, _)| known == &id) {
                        left.texts.push((id.clone(), String::new()));
                    }
                    open.texts.push((id, tag));
                }
            }
            "TEXT_MESSAGE_CONTENT" => {
                if let Some(id) = message()
                    && tag.is_none()
                    && let Some((_, text)) = left.texts.iter_mut().find(|(known, _)| known == &id)
                {
                    text.push_str(field("delta"));
                }
            }
            "TOOL_CALL_RESULT" => {
                if let (Some(call), Some(id), None) = (call(), message(), &tag) {
                    left.results.insert(call, (id, field("content").to_owned()));
                }
            }
            "TEXT_MESSAGE_END" => open.texts.retain(|(id, _)| Some(id) != message().as_ref()),
            "TOOL_CALL_START" => open.calls.extend(call().map(|id| (id, tag))),
            "TOOL_CALL_END" => open.calls.retain(|(id, _)| Some(id) != call().as_ref()),
            "REASONING_START" => open.spans.extend(message().map(|id| (id, tag))),
            "REASONING_END" => open.spans.retain(|(id, _)| Some(id) != message().as_ref()),
            "REASONING_MESSAGE_START" => open.reasoning.extend(message().map(|id| (id, tag))),
            "REASONING_MESSAGE_END" => {
                open.reasoning
                    .retain(|(id, _)| Some(id) != message().as_ref());
            }
            "STEP_STARTED" => open.steps.push((field("stepName").to_owned(), tag)),
            "STEP_FINISHED" => open
                .steps
                .retain(|step| step.0 != field("stepName") || step.1 != tag),
            "SUBAGENT_STARTED" => open.children.push(field("subagentRunId").to_owned()),
            "SUBAGENT_FINISHED" | "SUBAGENT_ERROR" => {
                open.children
                    .retain(|child| child != field("subagentRunId"));
            }
            _ => {}
        }
    }
    left.closing = open.closing();
    left
}

/// What the events after the last checkpoint left open, each with the sub-agent whose it is
/// (`None`: the run's own).
#[derive(Default)]
struct OpenEntities {
    texts: Vec<(MessageId, Option<String>)>,
    calls: Vec<(ToolCallId, Option<String>)>,
    reasoning: Vec<(MessageId, Option<String>)>,
    spans: Vec<(MessageId, Option<String>)>,
    steps: Vec<(String, Option<String>)>,
    /// Sub-agents started and not ended, in the order they started.
    children: Vec<String>,
}

impl OpenEntities {
    /// The events that close them: reasoning, texts and steps before calls (as a turn ends),
    /// then the sub-agents, the last started first, as having failed with their runner.
    fn closing(self) -> Vec<Event> {
        let mut closing: Vec<Event> = Vec::new();
        for (message_id, tag) in self.reasoning {
            closing.push(tagged(Event::ReasoningMessageEnd { message_id }, tag));
        }
        for (message_id, tag) in self.spans {
            closing.push(tagged(Event::ReasoningEnd { message_id }, tag));
        }
        for (message_id, tag) in self.texts {
            closing.push(tagged(Event::TextMessageEnd { message_id }, tag));
        }
        for (step_name, tag) in self.steps {
            closing.push(tagged(Event::StepFinished { step_name }, tag));
        }
        for (tool_call_id, tag) in self.calls {
            closing.push(tagged(Event::ToolCallEnd { tool_call_id }, tag));
        }
        for subagent_run_id in self.children.into_iter().rev() {
            closing.push(Event::SubagentError {
                subagent_run_id,
                message: "the sub-agent's runner stopped before it ended".to_owned(),
                code: Some("RUN_LOST".to_owned()),
            });
        }
        closing
    }
}

/// `event`, tagged as the sub-agent `tag`'s when it is one's (its ids are namespaced already).
fn tagged(event: Event, tag: Option<String>) -> Event {
    let Some(tag) = tag else {
        return event;
    };
    match serde_json::to_value(&event) {
        Ok(Value::Object(mut fields)) => {
            fields.insert("subagentRunId".to_owned(), Value::String(tag));
            Event::Forwarded(fields)
        }
        _ => event,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(seq: u64, json: Value) -> RecordedEvent {
        RecordedEvent::stored(seq, json.to_string())
    }

    #[test]
    fn what_a_crash_mid_turn_left_open_is_closed_and_its_text_kept() {
        let tail = [
            recorded(
                8,
                serde_json::json!({"type": "STEP_STARTED", "stepName": "model_turn_3"}),
            ),
            recorded(
                9,
                serde_json::json!({"type": "TEXT_MESSAGE_START", "messageId": "m3", "role": "assistant"}),
            ),
            recorded(
                10,
                serde_json::json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m3", "delta": "Half "}),
            ),
            recorded(
                11,
                serde_json::json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m3", "delta": "done"}),
            ),
            recorded(
                12,
                serde_json::json!({"type": "TOOL_CALL_START", "toolCallId": "c9", "toolCallName": "f"}),
            ),
        ];
        let left = left_open(&tail);
        let closing: Vec<Value> = left
            .closing
            .iter()
            .map(|event| serde_json::to_value(event).unwrap())
            .collect();
        let types: Vec<&str> = closing
            .iter()
            .map(|event| event["type"].as_str().unwrap())
            .collect();
        // The text and the step close before the call: the call closes last, as a turn ends.
        assert_eq!(
            types,
            ["TEXT_MESSAGE_END", "STEP_FINISHED", "TOOL_CALL_END"]
        );
        assert_eq!(
            left.texts,
            [(MessageId::parse("m3", 128).unwrap(), "Half done".to_owned())]
        );
        assert!(left.results.is_empty());
    }

    #[test]
    fn a_result_streamed_after_the_last_checkpoint_is_found() {
        let tail = [recorded(
            4,
            serde_json::json!({"type": "TOOL_CALL_RESULT", "messageId": "r1", "toolCallId": "c1", "content": "42", "role": "tool"}),
        )];
        let left = left_open(&tail);
        assert!(left.closing.is_empty());
        assert_eq!(
            left.results.get(&ToolCallId::parse("c1", 128).unwrap()),
            Some(&(MessageId::parse("r1", 128).unwrap(), "42".to_owned()))
        );
    }

    #[test]
    fn a_sub_agent_cut_off_mid_delegation_is_closed_and_its_text_stays_its_own() {
        let json = [
            serde_json::json!({"type": "STEP_STARTED", "stepName": "tools_2"}),
            serde_json::json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "researcher"}),
            serde_json::json!({"type": "TOOL_CALL_END", "toolCallId": "c1"}),
            serde_json::json!({"type": "SUBAGENT_STARTED", "subagentRunId": "sa1", "name": "researcher", "parentToolCallId": "c1"}),
            serde_json::json!({"type": "STEP_STARTED", "stepName": "tools_2", "subagentRunId": "sa1"}),
            serde_json::json!({"type": "TEXT_MESSAGE_START", "messageId": "sa1:m1", "role": "assistant", "subagentRunId": "sa1"}),
            serde_json::json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "sa1:m1", "delta": "The moon", "subagentRunId": "sa1"}),
        ];
        let tail: Vec<RecordedEvent> = json
            .iter()
            .zip(5..)
            .map(|(event, seq)| recorded(seq, event.clone()))
            .collect();
        let left = left_open(&tail);
        assert!(left.texts.is_empty(), "the child's text is its thread's");
        let closing: Vec<Value> = left
            .closing
            .iter()
            .map(|event| serde_json::to_value(event).unwrap())
            .collect();
        assert_eq!(
            closing,
            [
                serde_json::json!({"type": "TEXT_MESSAGE_END", "messageId": "sa1:m1", "subagentRunId": "sa1"}),
                serde_json::json!({"type": "STEP_FINISHED", "stepName": "tools_2"}),
                serde_json::json!({"type": "STEP_FINISHED", "stepName": "tools_2", "subagentRunId": "sa1"}),
                serde_json::json!({"type": "SUBAGENT_ERROR", "subagentRunId": "sa1", "message": "the sub-agent's runner stopped before it ended", "code": "RUN_LOST"}),
            ]
        );
        // The whole run as its followers see it is well formed.
        let mut run =
            vec![serde_json::json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})];
        run.extend(json);
        run.extend(closing);
        run.push(serde_json::json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}));
        crate::protocol::verify::verify_run(&run).unwrap();
    }
}
