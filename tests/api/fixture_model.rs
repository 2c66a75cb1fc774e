//! The scenarios of `tests/fixtures/aimock-openai.json`, played in process: the tests that are not
//! about the OpenAI wire format (auth, input errors, dialects, store, lifecycle) run on this model,
//! so `cargo test` needs no Node for them. It matches a request as aimock does (a substring of the
//! last user message, whether the current turn holds a tool result, the fixture's sequence index)
//! and records what it was asked. What aimock does on the wire (HTTP statuses, retries, a dropped
//! connection) becomes the error the OpenAI provider reports after its retries.

use agui_lambda::testing::model::Refusal;
use agui_lambda::testing::model::{
    DeltaStream, FinishReason, ModelDelta, ModelError, ModelProvider, ModelRequest, Usage,
};
use agui_lambda::testing::protocol::{Message, UserContent};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Mutex;
use std::time::Duration;

pub(crate) struct FixtureModel {
    fixtures: Vec<Value>,
    /// How many times each fixture has matched (aimock's `sequenceIndex`).
    matched: Mutex<Vec<usize>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl FixtureModel {
    pub(crate) fn load() -> Self {
        let path = super::helpers::repo_path("tests/fixtures/aimock-openai.json");
        let file: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let fixtures = file["fixtures"].as_array().unwrap().clone();
        Self {
            matched: Mutex::new(vec![0; fixtures.len()]),
            fixtures,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Every request the model received, oldest first.
    pub(crate) fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// The requests whose last user message contains `user_text`.
    pub(crate) fn requests_about(&self, user_text: &str) -> Vec<ModelRequest> {
        self.requests()
            .into_iter()
            .filter(|request| last_user_text(request).contains(user_text))
            .collect()
    }

    fn pick(&self, request: &ModelRequest) -> Option<Value> {
        let text = last_user_text(request);
        let tool_result = current_turn_has_tool_result(request);
        let mut matched = self.matched.lock().unwrap();
        let index = self.fixtures.iter().enumerate().position(|(i, fixture)| {
            let rule = &fixture["match"];
            rule["userMessage"]
                .as_str()
                .is_some_and(|wanted| text.contains(wanted))
                && rule["hasToolResult"]
                    .as_bool()
                    .is_none_or(|wanted| wanted == tool_result)
                && rule["sequenceIndex"]
                    .as_u64()
                    .is_none_or(|wanted| wanted == matched[i] as u64)
                && rule["toolResultContains"]
                    .as_str()
                    .is_none_or(|wanted| last_tool_result(request).contains(wanted))
        })?;
        matched[index] += 1;
        Some(self.fixtures[index].clone())
    }
}

fn last_user_text(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::User { content, .. } => Some(match content {
                UserContent::Text(text) => text.clone(),
                parts @ UserContent::Parts(_) => parts.text(),
            }),
            _ => None,
        })
        .unwrap_or_default()
}

/// The content of the request's last message when it is a tool result (aimock's
/// `toolResultContains` reads only that one).
fn last_tool_result(request: &ModelRequest) -> &str {
    match request.messages.last() {
        Some(Message::Tool { content, .. }) => content,
        _ => "",
    }
}

fn current_turn_has_tool_result(request: &ModelRequest) -> bool {
    request
        .messages
        .iter()
        .rev()
        .take_while(|message| !matches!(message, Message::User { .. }))
        .any(|message| matches!(message, Message::Tool { .. }))
}

/// `text` in chunks of `size` characters, as aimock streams it.
fn chunks(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|chunk| chunk.iter().collect())
        .collect()
}

#[async_trait]
impl ModelProvider for FixtureModel {
    fn identity(&self) -> agui_lambda::testing::model::ModelIdentity {
        agui_lambda::testing::model::ModelIdentity {
            provider: "openai".to_owned(),
            model: "aimock-fixture".to_owned(),
        }
    }

    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        let fixture = self.pick(request).ok_or(ModelError::Status {
            status: 404,
            refusal: None,
            retry: Default::default(),
        })?;
        let response = &fixture["response"];
        if let Some(status) = response["status"].as_u64() {
            // What the OpenAI provider makes of the same answer from aimock.
            let body = serde_json::json!({"error": response["error"]}).to_string();
            let refusal = Refusal::from_body(&body);
            if let Some(refusal) = refusal.as_ref().filter(|r| r.is_context_overflow()) {
                return Err(ModelError::ContextOverflow(refusal.clone()));
            }
            return Err(ModelError::Status {
                status: status as u16,
                refusal,
                retry: Default::default(),
            });
        }
        let size = fixture["chunkSize"].as_u64().unwrap_or(u64::MAX) as usize;
        let latency = Duration::from_millis(fixture["latency"].as_u64().unwrap_or(0));
        let mut deltas = Vec::new();
        if let Some(reasoning) = response["reasoning"].as_str() {
            deltas.extend(
                chunks(reasoning, size)
                    .into_iter()
                    .map(ModelDelta::Reasoning),
            );
        }
        if let Some(content) = response["content"].as_str() {
            deltas.extend(chunks(content, size).into_iter().map(ModelDelta::Text));
        }
        let calls = response["toolCalls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (index, call) in calls.iter().enumerate() {
            deltas.push(ModelDelta::ToolCallStart {
                index,
                id: call["id"].as_str().map(str::to_owned),
                name: call["name"].as_str().unwrap().to_owned(),
            });
            let arguments = match &call["arguments"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            deltas.extend(
                chunks(&arguments, size)
                    .into_iter()
                    .map(|delta| ModelDelta::ToolCallArgs { index, delta }),
            );
        }
        // aimock's cut connection: some chunks, then the stream ends before the model finished.
        let cut = fixture["truncateAfterChunks"].as_u64().map(|n| n as usize);
        if let Some(after) = cut {
            deltas.truncate(after);
        } else {
            let usage = &response["usage"];
            deltas.push(ModelDelta::Usage(Usage {
                input_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
                output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
                ..Default::default()
            }));
            deltas.push(ModelDelta::Finish(if calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            }));
        }
        let stream = async_stream::stream! {
            for delta in deltas {
                if !latency.is_zero() {
                    tokio::time::sleep(latency).await;
                }
                yield Ok(delta);
            }
            if cut.is_some() {
                yield Err(ModelError::Incomplete);
            }
        };
        Ok(Box::pin(stream))
    }

    fn describe(&self) -> String {
        "fixture model (tests/fixtures/aimock-openai.json, in process)".to_owned()
    }
}
