//! Dynamic suggestions (CopilotKit's `copilotkitSuggest`): one model call on the conversation the
//! client sends, forced to call the tool the client names, streamed as one run's AG-UI events.
//! Nothing is stored, no thread is taken, no tool runs: the client reads the call's arguments.

use super::{Agent, StartError};
use crate::model::{FailureKind, ModelDelta, ModelRequest, ToolSpec, Usage};
use crate::protocol::events::{Event, RunErrorCode, RunUsage, TextRole};
use crate::protocol::{InputError, MessageId, RunInput, ThreadId, ToolCallId, version};
use futures_util::{Stream, StreamExt};
use std::collections::HashSet;

/// What a suggestion call needs besides the agent.
pub(crate) struct Suggestion {
    pub input: RunInput,
    /// The tool the model must call: one of the input's tools.
    pub tool: String,
}

impl Agent {
    /// The model's answer to `suggestion`, as a run's events (`RUN_STARTED` … `RUN_FINISHED`,
    /// or `RUN_ERROR` when the model fails). Refused before anything streams when the forced
    /// tool is none of the input's, or the history does not hold together.
    pub(crate) fn suggest(
        &self,
        suggestion: Suggestion,
    ) -> Result<impl Stream<Item = Event> + Send + 'static, StartError> {
        let Suggestion { input, tool } = suggestion;
        if !input.tools.iter().any(|offered| offered.name == tool) {
            return Err(StartError::Input(InputError::Invalid {
                field: "forwardedProps.toolChoice".to_owned(),
                message: format!("{tool} is not one of the request's tools"),
            }));
        }
        let declared = version::declaration(input.speaks_v1(), input.speaks_at_least(1, 1));
        let thread_id = input.thread_id.clone().unwrap_or_else(ThreadId::new_uuid);
        let run_id = input.run_id.clone();
        // Pending calls of the history closed as unanswered, as a run would close them.
        let history =
            super::thread::merge_keeping_open(&[], input.messages, &HashSet::new())?.history;
        let request = ModelRequest {
            // Without CopilotKit's A2UI entries (about 56 KB), as a run's prompt is.
            system: self.system_prompt(&crate::genui::a2ui::client::model_context(&input.context)),
            messages: history,
            tools: input.tools.iter().map(ToolSpec::from).collect(),
            sampling: input.forwarded_props.sampling,
            tool_choice: Some(tool),
            ..ModelRequest::default()
        };
        let model = self.model.clone();
        Ok(async_stream::stream! {
            yield Event::RunStarted {
                thread_id: thread_id.clone(),
                run_id: run_id.clone(),
                parent_run_id: None,
                protocol_version: Some(declared),
                metadata: None,
            };
            let deltas = match model.stream(&request).await {
                Ok(deltas) => deltas,
                Err(error) => {
                    tracing::warn!(%error, "a suggestion's model call failed");
                    yield failed(&error);
                    return;
                }
            };
            let identity = model.identity();
            let mut answer = Answer::default();
            let mut deltas = Box::pin(deltas);
            while let Some(delta) = deltas.next().await {
                match delta {
                    Ok(delta) => {
                        for event in answer.add(delta) {
                            yield event;
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "a suggestion's model stream failed");
                        for event in answer.close() {
                            yield event;
                        }
                        yield failed(&error);
                        return;
                    }
                }
            }
            for event in answer.close() {
                yield event;
            }
            let usage = (answer.usage != Usage::default())
                .then(|| answer.usage.reported(&identity, false));
            yield Event::RunFinished {
                thread_id,
                run_id,
                outcome: None,
                usage: RunUsage(usage.into_iter().collect()),
                result: None,
            };
        })
    }
}

/// The `RUN_ERROR` of a failed model call.
fn failed(error: &crate::model::ModelError) -> Event {
    let code = match error.kind() {
        FailureKind::RateLimited | FailureKind::QuotaExhausted => RunErrorCode::ModelRateLimited,
        FailureKind::Unavailable => RunErrorCode::ModelUnavailable,
        FailureKind::TimedOut => RunErrorCode::ModelTimeout,
        FailureKind::Refused => RunErrorCode::ModelRefused,
        FailureKind::Overflow | FailureKind::Broken => RunErrorCode::ModelError,
    };
    Event::RunError {
        message: error.to_string(),
        code,
        usage: Default::default(),
    }
}

/// The answer as it streams: one assistant message, its text and its tool calls.
#[derive(Default)]
struct Answer {
    message_id: Option<MessageId>,
    text_open: bool,
    /// Each call by the model's index, open until the answer closes.
    calls: Vec<(usize, ToolCallId)>,
    usage: Usage,
}

impl Answer {
    fn message_id(&mut self) -> MessageId {
        self.message_id
            .get_or_insert_with(MessageId::generate)
            .clone()
    }

    /// The events one delta adds.
    fn add(&mut self, delta: ModelDelta) -> Vec<Event> {
        match delta {
            ModelDelta::Text(delta) if !delta.is_empty() => {
                let message_id = self.message_id();
                let mut events = Vec::new();
                if !self.text_open {
                    self.text_open = true;
                    events.push(Event::TextMessageStart {
                        message_id: message_id.clone(),
                        role: TextRole::Assistant,
                    });
                }
                events.push(Event::TextMessageContent { message_id, delta });
                events
            }
            ModelDelta::ToolCallStart { index, id, name } => {
                let mut events = self.end_text();
                let tool_call_id = id
                    .and_then(|id| ToolCallId::parse(id, crate::protocol::ids::MAX_ID_LEN).ok())
                    .unwrap_or_else(ToolCallId::generate);
                self.calls.push((index, tool_call_id.clone()));
                events.push(Event::ToolCallStart {
                    tool_call_id,
                    tool_call_name: name,
                    parent_message_id: Some(self.message_id()),
                });
                events
            }
            ModelDelta::ToolCallArgs { index, delta } => self
                .calls
                .iter()
                .find(|(call, _)| *call == index)
                .map(|(_, tool_call_id)| Event::ToolCallArgs {
                    tool_call_id: tool_call_id.clone(),
                    delta,
                })
                .into_iter()
                .collect(),
            ModelDelta::Usage(usage) => {
                self.usage += usage;
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn end_text(&mut self) -> Vec<Event> {
        if !std::mem::take(&mut self.text_open) {
            return Vec::new();
        }
        vec![Event::TextMessageEnd {
            message_id: self.message_id(),
        }]
    }

    /// What closes the answer: its text, then each of its calls.
    fn close(&mut self) -> Vec<Event> {
        let mut events = self.end_text();
        events.extend(
            self.calls
                .drain(..)
                .map(|(_, tool_call_id)| Event::ToolCallEnd { tool_call_id }),
        );
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_closes_what_it_opened_in_order() {
        let mut answer = Answer::default();
        let mut events = answer.add(ModelDelta::Text("Try ".into()));
        events.extend(answer.add(ModelDelta::ToolCallStart {
            index: 0,
            id: Some("call_1".into()),
            name: "copilotkitSuggest".into(),
        }));
        events.extend(answer.add(ModelDelta::ToolCallArgs {
            index: 0,
            delta: "{}".into(),
        }));
        events.extend(answer.add(ModelDelta::ToolCallArgs {
            index: 7,
            delta: "lost".into(),
        }));
        events.extend(answer.close());
        let kinds: Vec<String> = events
            .iter()
            .map(|event| serde_json::to_value(event).unwrap()["type"].to_string())
            .collect();
        assert_eq!(
            kinds,
            [
                "\"TEXT_MESSAGE_START\"",
                "\"TEXT_MESSAGE_CONTENT\"",
                "\"TEXT_MESSAGE_END\"",
                "\"TOOL_CALL_START\"",
                "\"TOOL_CALL_ARGS\"",
                "\"TOOL_CALL_END\""
            ]
        );
    }
}
