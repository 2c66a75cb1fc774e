//! In-process models that need no network. [`ScriptedModel`] replays turns given by a test and
//! records what it was asked; [`DemoModel`] is the offline demo that answers by simple rules.
//! Neither is ever chosen when a real model is configured.

use super::{
    DeltaStream, FinishReason, ModelDelta, ModelError, ModelProvider, ModelRequest, Usage,
};
use crate::protocol::{Message, UserContent};
use async_trait::async_trait;
use serde_json::json;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// One scripted turn.
#[derive(Debug, Clone)]
pub enum ScriptedTurn {
    /// Streams these deltas, then ends the stream normally.
    Stream(Vec<ModelDelta>),
    /// Streams these deltas, then fails mid-stream.
    StreamThenFail(Vec<ModelDelta>, ModelError),
    /// Fails before the first token.
    Refuse(ModelError),
    /// Waits before streaming (for deadline and ping tests).
    Delay(Duration, Vec<ModelDelta>),
}

impl ScriptedTurn {
    /// A plain text answer that finishes with `stop`.
    pub fn text(text: &str) -> Self {
        ScriptedTurn::Stream(vec![
            ModelDelta::Text(text.to_owned()),
            ModelDelta::Finish(FinishReason::Stop),
        ])
    }

    /// Optional text followed by tool calls `(id, name, arguments)`.
    pub fn tool_calls(text: Option<&str>, calls: &[(&str, &str, &str)]) -> Self {
        let mut deltas = Vec::new();
        if let Some(text) = text {
            deltas.push(ModelDelta::Text(text.to_owned()));
        }
        for (index, (id, name, arguments)) in calls.iter().enumerate() {
            deltas.push(ModelDelta::ToolCallStart {
                index,
                id: Some((*id).to_owned()),
                name: (*name).to_owned(),
            });
            deltas.push(ModelDelta::ToolCallArgs {
                index,
                delta: (*arguments).to_owned(),
            });
        }
        deltas.push(ModelDelta::Finish(FinishReason::ToolCalls));
        ScriptedTurn::Stream(deltas)
    }
}

/// Replays turns in order and records every request, so tests can assert what the model saw.
#[derive(Clone, Default)]
pub struct ScriptedModel {
    turns: Arc<Mutex<VecDeque<ScriptedTurn>>>,
    requests: Arc<Mutex<Vec<ModelRequest>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means another test thread panicked; the data is still usable.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ScriptedModel {
    pub fn new(turns: impl IntoIterator<Item = ScriptedTurn>) -> Self {
        Self {
            turns: Arc::new(Mutex::new(turns.into_iter().collect())),
            requests: Arc::default(),
        }
    }

    pub fn push(&self, turn: ScriptedTurn) {
        lock(&self.turns).push_back(turn);
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
        lock(&self.requests).clone()
    }
}

fn replay(deltas: Vec<ModelDelta>, failure: Option<ModelError>, delay: Duration) -> DeltaStream {
    Box::pin(async_stream::stream! {
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        for delta in deltas {
            yield Ok(delta);
        }
        if let Some(error) = failure {
            yield Err(error);
        }
    })
}

#[async_trait]
impl ModelProvider for ScriptedModel {
    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        lock(&self.requests).push(request.clone());
        let turn = lock(&self.turns)
            .pop_front()
            .ok_or(ModelError::ScriptExhausted)?;
        match turn {
            ScriptedTurn::Stream(deltas) => Ok(replay(deltas, None, Duration::ZERO)),
            ScriptedTurn::StreamThenFail(deltas, error) => {
                Ok(replay(deltas, Some(error), Duration::ZERO))
            }
            ScriptedTurn::Refuse(error) => Err(error),
            ScriptedTurn::Delay(delay, deltas) => Ok(replay(deltas, None, delay)),
        }
    }

    fn describe(&self) -> String {
        "scripted test model".to_owned()
    }
}

/// The offline demo: no API key, no network. It asks for the time when the user mentions it,
/// calls a frontend tool the user names, and otherwise says what it is.
#[derive(Clone, Default)]
pub struct DemoModel {
    pub word_delay: Duration,
}

impl DemoModel {
    fn answer(request: &ModelRequest) -> Vec<ModelDelta> {
        let last = request.messages.last();
        if let Some(Message::Tool { content, .. }) = last {
            return Self::speak(&format!("The tool answered: {content}"));
        }
        let text = match last {
            Some(Message::User { content, .. }) => match content {
                UserContent::Text(text) => text.clone(),
                parts @ UserContent::Parts(_) => parts.text(),
            },
            _ => String::new(),
        };
        let lower = text.to_lowercase();
        let frontend = request.tools.iter().find(|tool| {
            tool.name != "get_current_time" && lower.contains(&tool.name.to_lowercase())
        });
        if let Some(tool) = frontend {
            return Self::call(&tool.name, "{}");
        }
        let has_clock = request
            .tools
            .iter()
            .any(|tool| tool.name == "get_current_time");
        if has_clock && lower.contains("time") {
            return Self::call("get_current_time", &json!({}).to_string());
        }
        Self::speak(&format!(
            "This is agui-lambda's scripted demo model (no OPENAI_API_KEY is set). You said: {text}"
        ))
    }

    fn speak(text: &str) -> Vec<ModelDelta> {
        let mut deltas: Vec<ModelDelta> = text
            .split_inclusive(' ')
            .map(|word| ModelDelta::Text(word.to_owned()))
            .collect();
        deltas.push(ModelDelta::Finish(FinishReason::Stop));
        deltas.push(ModelDelta::Usage(Usage::default()));
        deltas
    }

    fn call(name: &str, arguments: &str) -> Vec<ModelDelta> {
        vec![
            ModelDelta::ToolCallStart {
                index: 0,
                id: None,
                name: name.to_owned(),
            },
            ModelDelta::ToolCallArgs {
                index: 0,
                delta: arguments.to_owned(),
            },
            ModelDelta::Finish(FinishReason::ToolCalls),
        ]
    }
}

#[async_trait]
impl ModelProvider for DemoModel {
    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        let deltas = Self::answer(request);
        let delay = self.word_delay;
        Ok(Box::pin(async_stream::stream! {
            for delta in deltas {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                yield Ok(delta);
            }
        }))
    }

    fn describe(&self) -> String {
        "scripted demo model (offline; set OPENAI_API_KEY or OPENAI_BASE_URL for a real model)"
            .to_owned()
    }
}
