//! A profile of ours as a child: a real run of that profile's agent (its model, tools, memory,
//! context window and approvals) on a thread of its own, linked to its parent's, started without
//! a quota reservation of its own (its tokens are settled as its run ends) and followed through
//! its live log like any stream of a run. A client of the run loop: it starts the run through
//! the loop's face ([`Agent::start_child`](crate::agent::Agent), `PreparedRun`), and the loop
//! reaches it only as a [`ChildAgent`] (`subagents`).

use crate::agent::start::ChildStart;
use crate::agent::subagents::{
    ChildAgent, ChildCall, ChildError, ChildStream, ProfileChild, child_event,
};
use crate::protocol::input::ForwardedProps;
use crate::protocol::{Message, MessageId, RunInput, UserContent};
use futures_util::StreamExt;
use serde_json::Value;

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
            skipped_parts: Vec::new(),
            skips_unusable_parts: false,
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
            // Only a new thread's write can carry the parent's step.
            step: call.step.filter(|_| new_thread),
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

#[cfg(test)]
#[path = "profile_child_tests.rs"]
mod tests;
