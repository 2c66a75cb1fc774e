//! [`ScriptedModel`], for tests (the `test-utils` feature): replays the turns a test gives it
//! and records the requests it received.

use super::{DeltaStream, FinishReason, ModelDelta, ModelError, ModelProvider, ModelRequest};
use async_trait::async_trait;
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
    /// The model it claims to be; `scripted:scripted` unless a test names it.
    name: Option<(String, String)>,
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
            name: None,
        }
    }

    /// The same script, claiming to be `provider`'s `model` (for tests with several models).
    pub fn named(mut self, provider: &str, model: &str) -> Self {
        self.name = Some((provider.to_owned(), model.to_owned()));
        self
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

    fn identity(&self) -> crate::model::ModelIdentity {
        let (provider, model) = self
            .name
            .clone()
            .unwrap_or_else(|| ("scripted".to_owned(), "scripted".to_owned()));
        crate::model::ModelIdentity { provider, model }
    }
}
