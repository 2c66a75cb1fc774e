//! A profile of ours as a child: a real run of that profile's agent (its model, tools, memory,
//! context window and approvals) on a thread of its own, linked to its parent's, started without
//! a quota reservation of its own (its tokens are settled as its run ends) and followed through
//! its live log like any stream of a run.

use super::child::{ChildAgent, ChildCall, ChildEnd, ChildError, ChildEvent, ChildStream};
use crate::agent::Agent;
use crate::agent::start::ChildStart;
use crate::protocol::events::TokenUsage;
use crate::protocol::input::ForwardedProps;
use crate::protocol::interrupt::Interrupt;
use crate::protocol::{Message, MessageId, RunInput, UserContent};
use futures_util::StreamExt;
use serde_json::{Map, Value};

/// A profile of this deployment, run as a child.
pub(crate) struct ProfileChild {
    /// The profile's agent.
    pub(crate) agent: Agent,
}

#[async_trait::async_trait]
impl ChildAgent for ProfileChild {
    async fn run(&self, call: ChildCall) -> Result<ChildStream, ChildError> {
        let new_thread = call.task.is_some();
        let mut messages: Vec<Message> = call
            .task
            .map(|task| Message::User {
                id: MessageId::generate(),
                content: UserContent::Text(task),
                name: None,
            })
            .into_iter()
            .collect();
        messages.extend(call.answers);
        let input = RunInput {
            thread_id: Some(call.thread_id),
            run_id: call.run_id,
            parent_run_id: None,
            state: None,
            messages,
            tools: call.confirm_tool.into_iter().collect(),
            context: Vec::new(),
            forwarded_props: ForwardedProps::default(),
            protocol_version: call.speaks_v1.then(|| "1.0".to_owned()),
            resume: call.resume,
            new_message_limits: None,
        };
        // At the deepest level a child delegates no further.
        let agent = if call.depth >= self.agent.settings.subagents.max_depth {
            self.agent.without_subagents()
        } else {
            self.agent.clone()
        };
        let child = ChildStart {
            parent: new_thread.then_some(call.parent),
            depth: call.depth,
        };
        let began = std::time::Instant::now();
        let mut prepared = agent
            .start_child(call.owner, input, call.deadline, child)
            .await
            .map_err(|error| ChildError {
                code: error.run_error_code(),
                message: error.to_string(),
            })?;
        prepared.observe(crate::agent::Observed {
            received: began,
            dialect: "subagent",
        });
        let live = prepared.spawn();
        let (stop, watched) = (call.stop, live.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = stop.cancelled() => watched.cancel(),
                () = watched.ended() => {}
            }
        });
        Ok(live
            .follow(0)
            .flat_map(|batch| {
                futures_util::stream::iter(
                    batch
                        .into_iter()
                        .filter_map(|recorded| match serde_json::from_slice(&recorded.json) {
                            Ok(Value::Object(event)) => Some(child_event(event)),
                            _ => None,
                        })
                        .collect::<Vec<_>>(),
                )
            })
            .boxed())
    }
}

/// An AG-UI event of a child's: its end when it is the run's terminal event, content otherwise
/// (the re-tagger drops the run-level rest).
pub(crate) fn child_event(event: Map<String, Value>) -> ChildEvent {
    match event.get("type").and_then(Value::as_str) {
        Some("RUN_FINISHED") => ChildEvent::End(finished(&event)),
        Some("RUN_ERROR") => {
            let text = |field: &str| event.get(field).and_then(Value::as_str).unwrap_or("");
            let usage = usage_of(&event);
            ChildEvent::End(if text("code") == "CANCELLED" {
                ChildEnd::Cancelled { usage }
            } else {
                ChildEnd::Failed {
                    code: Some(text("code"))
                        .filter(|code| !code.is_empty())
                        .unwrap_or("AGENT_ERROR")
                        .to_owned(),
                    message: text("message").to_owned(),
                    usage,
                }
            })
        }
        _ => ChildEvent::Content(event),
    }
}

/// How a `RUN_FINISHED` ended its run: AG-UI 1.0's outcome, success without one.
fn finished(event: &Map<String, Value>) -> ChildEnd {
    let usage = usage_of(event);
    let outcome = event.get("outcome");
    match outcome
        .and_then(|outcome| outcome.get("type"))
        .and_then(Value::as_str)
    {
        Some("interrupt") => {
            let interrupts: Vec<Interrupt> = outcome
                .and_then(|outcome| outcome.get("interrupts"))
                .and_then(|interrupts| serde_json::from_value(interrupts.clone()).ok())
                .unwrap_or_default();
            if interrupts.is_empty() {
                return ChildEnd::Failed {
                    code: "AGENT_ERROR".to_owned(),
                    message: "the agent paused on interrupts it did not name".to_owned(),
                    usage,
                };
            }
            ChildEnd::Suspended { interrupts, usage }
        }
        Some("cancelled") => ChildEnd::Cancelled { usage },
        _ => ChildEnd::Finished { usage },
    }
}

/// A terminal event's `usage`, what of it parses.
fn usage_of(event: &Map<String, Value>) -> Vec<TokenUsage> {
    event
        .get("usage")
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .filter_map(|entry| serde_json::from_value(entry.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn end(event: Value) -> ChildEnd {
        match child_event(event.as_object().unwrap().clone()) {
            ChildEvent::End(end) => end,
            ChildEvent::Content(_) | ChildEvent::Remote(_) => panic!("not an end"),
        }
    }

    #[test]
    fn a_child_s_terminal_event_says_how_it_ended() {
        let usage = json!([{"model": "m", "inputTokens": 3, "outputTokens": 4, "totalTokens": 7}]);
        let done =
            end(json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "usage": usage}));
        assert!(matches!(&done, ChildEnd::Finished { usage } if usage[0].input_tokens == 3));
        let asked = end(
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
            "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "tool_call"}]}}),
        );
        assert!(
            matches!(asked, ChildEnd::Suspended { interrupts, .. } if interrupts[0].id == "i1")
        );
        let stopped = end(json!({"type": "RUN_ERROR", "message": "x", "code": "CANCELLED"}));
        assert!(matches!(stopped, ChildEnd::Cancelled { .. }));
        let failed = end(json!({"type": "RUN_ERROR", "message": "boom"}));
        assert!(
            matches!(failed, ChildEnd::Failed { code, message, .. } if code == "AGENT_ERROR" && message == "boom")
        );
        assert!(matches!(
            child_event(
                json!({"type": "TEXT_MESSAGE_START"})
                    .as_object()
                    .unwrap()
                    .clone()
            ),
            ChildEvent::Content(_)
        ));
    }
}
