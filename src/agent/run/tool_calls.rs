//! Server tool calls: run (those that may in parallel together, each in its `execute_tool`
//! span), their state changes applied, and their results streamed and kept as `tool` messages.

use super::outcome::RunFailure;
use super::{Emitter, PreparedRun};
use crate::agent::spans::ToolSpan;
use crate::agent::tools::{ToolContext, ToolError, ToolOutput, ToolRegistry};
use crate::agent::turn::TurnCall;
use crate::protocol::events::ToolRole;
use crate::protocol::{Event, Message, MessageId, ToolCallId};
use tokio::time::timeout_at;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// A tool call's answer, as its `tool` message will hold it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolResult {
    pub(super) id: MessageId,
    pub(super) tool_call_id: ToolCallId,
    pub(super) content: String,
    pub(super) error: Option<String>,
    /// Kept with the `tool` message, never sent to a model (a delegation's link).
    pub(super) metadata: Option<serde_json::Value>,
}

/// What running one call came to; `None` for a tool the registry does not know.
type CallOutcome = Option<Result<ToolOutput, ToolError>>;

impl PreparedRun {
    /// Runs server tools (and answers unknown ones): those that may run in parallel together,
    /// then the others one at a time, in call order; each sees the state as it was when they
    /// began. A2UI render calls are answered in place (checked, painted or refused).
    /// Results come back in call order as `tool` messages.
    pub(super) async fn run_tools(
        &mut self,
        calls: &[&TurnCall],
        stop: &CancellationToken,
    ) -> Result<Vec<ToolResult>, RunFailure> {
        if calls.iter().any(|call| self.renders(&call.name)) {
            let (renders, others): (Vec<&TurnCall>, Vec<&TurnCall>) =
                calls.iter().partition(|call| self.renders(&call.name));
            let mut ran = Box::pin(self.run_tools(&others, stop)).await?.into_iter();
            let mut rendered = renders.iter().filter_map(|call| self.render_result(call));
            return Ok(calls
                .iter()
                .filter_map(|call| {
                    if self.renders(&call.name) {
                        rendered.next()
                    } else {
                        ran.next()
                    }
                })
                .collect());
        }
        // A child: a tool can see the run stop, but cannot stop it.
        let context = ToolContext::new(
            self.lease.thread_id.clone(),
            self.lease.run_id.clone(),
            self.lease.owner.clone(),
        )
        .with_device_timezone(self.request.device_timezone)
        .with_state(
            self.progress
                .state
                .clone()
                .unwrap_or(serde_json::Value::Null),
        )
        .with_cancellation(stop.child_token());
        let registry = self.agent.tools.clone();
        let out_of_time = if self.limit_is_segment() {
            RunFailure::SegmentOver
        } else {
            RunFailure::Timeout
        };
        let outcomes = tokio::select! {
            biased;
            () = stop.cancelled() => return Err(RunFailure::Cancelled),
            ran = timeout_at(self.limit(), execute(&registry, calls, &context)) => {
                ran.map_err(|_| out_of_time)?
            }
        };
        let mut results = Vec::with_capacity(calls.len());
        for (call, outcome) in calls.iter().zip(outcomes) {
            results.push(self.tool_result(call, outcome)?);
        }
        Ok(results)
    }

    /// A call's outcome as its result, its state change applied; a fatal tool error, or a state
    /// change that does not apply, fails the run.
    fn tool_result(
        &mut self,
        call: &TurnCall,
        outcome: CallOutcome,
    ) -> Result<ToolResult, RunFailure> {
        let (content, error) = match outcome {
            None => {
                let message = format!("unknown tool {:?}", call.name);
                (format!("Error: {message}"), Some(message))
            }
            Some(Ok(output)) => {
                if let Some(patch) = output.state_patch {
                    self.apply_state_patch(&call.name, patch)?;
                }
                (output.content, None)
            }
            Some(Err(ToolError::Failed(message))) => (format!("Error: {message}"), Some(message)),
            Some(Err(ToolError::Fatal(message))) => {
                return Err(RunFailure::ToolFatal {
                    name: call.name.clone(),
                    message,
                });
            }
        };
        Ok(ToolResult {
            id: MessageId::generate(),
            tool_call_id: call.id.clone(),
            content,
            error,
            metadata: None,
        })
    }

    /// Applies a tool's state change, kept to stream as `STATE_DELTA` after the step's results.
    fn apply_state_patch(
        &mut self,
        tool_name: &str,
        patch: json_patch::Patch,
    ) -> Result<(), RunFailure> {
        let progress = &mut self.progress;
        let mut state = progress
            .state
            .clone()
            .unwrap_or_else(|| serde_json::json!({}));
        json_patch::patch(&mut state, &patch).map_err(|err| RunFailure::ToolFatal {
            name: tool_name.to_owned(),
            message: format!("its state change does not apply: {err}"),
        })?;
        progress.state = Some(state);
        progress.pending_deltas.push(patch);
        Ok(())
    }

    /// Streams a tool result (after what it paints, for a render call's) and adds it to the
    /// history.
    pub(super) fn record_result(&mut self, out: &Emitter<'_>, result: ToolResult) {
        let message = Message::Tool {
            id: result.id,
            tool_call_id: result.tool_call_id,
            content: result.content,
            error: result.error,
            metadata: result.metadata,
        };
        if let Some(shown) = Self::shown_with(&message) {
            out.emit(shown);
        }
        if let Message::Tool {
            id,
            tool_call_id,
            content,
            ..
        } = &message
        {
            out.emit(Event::ToolCallResult {
                message_id: id.clone(),
                tool_call_id: tool_call_id.clone(),
                content: content.clone(),
                role: ToolRole::Tool,
            });
        }
        self.progress.keep(message);
    }

    /// Streams the state changes the step's tools made.
    pub(super) fn emit_state_changes(&mut self, out: &Emitter<'_>) {
        for patch in self.progress.pending_deltas.drain(..) {
            out.emit(Event::StateDelta { delta: patch });
        }
    }
}

/// Runs `calls`: those that may run in parallel together, then the others one at a time, in
/// call order. The outcomes come back in call order.
async fn execute(
    registry: &ToolRegistry,
    calls: &[&TurnCall],
    context: &ToolContext,
) -> Vec<CallOutcome> {
    let mut outcomes: Vec<Option<CallOutcome>> = calls.iter().map(|_| None).collect();
    let parallel = calls
        .iter()
        .zip(outcomes.iter_mut())
        .filter(|(call, _)| registry.may_run_in_parallel(&call.name))
        .map(
            |(call, slot)| async move { *slot = Some(traced_call(registry, call, context).await) },
        );
    futures_util::future::join_all(parallel).await;
    let one_at_a_time = calls
        .iter()
        .zip(outcomes.iter_mut())
        .filter(|(call, _)| !registry.may_run_in_parallel(&call.name));
    for (call, slot) in one_at_a_time {
        *slot = Some(traced_call(registry, call, context).await);
    }
    // Every slot is filled by now.
    outcomes.into_iter().map(Option::flatten).collect()
}

/// A server tool's call inside its `execute_tool {name}` span.
async fn traced_call(
    registry: &ToolRegistry,
    call: &TurnCall,
    context: &ToolContext,
) -> CallOutcome {
    let span = ToolSpan::new(call);
    let outcome = registry
        .call(&call.name, &call.arguments, context)
        .instrument(span.span().clone())
        .await;
    span.end(&outcome);
    outcome
}
