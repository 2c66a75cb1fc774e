//! A remote AG-UI agent as a child: the call becomes a `RunAgentInput` POSTed to its URL (the
//! task as the user message, the child's thread id kept across a suspension), and its SSE
//! stream is read as the child's events. Stopping it closes the connection, which is what AG-UI
//! defines, and posts its cancel URL when it has one (agui-lambda's own runs outlive their
//! connection).

use super::child::{
    ChildAgent, ChildCall, ChildEnd, ChildError, ChildEvent, ChildStream, child_event,
};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// A remote AG-UI agent as `AGENT_PROFILES` declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteAgentSettings {
    /// Its AG-UI endpoint (`POST`, answers `text/event-stream`).
    pub url: String,
    /// Headers sent with every request; never credentials, which come from
    /// [`headers_secret_id`](Self::headers_secret_id).
    pub headers: BTreeMap<String, String>,
    /// A Secrets Manager secret holding a JSON object of header names and values, read once
    /// per cold start.
    pub headers_secret_id: Option<String>,
    /// Where to ask it to stop a run, `{threadId}` and `{runId}` filled in (agui-lambda's is
    /// `…/threads/{threadId}/runs/{runId}/cancel`); without one, stopping only closes the
    /// connection.
    pub cancel_url: Option<String>,
}

/// A remote AG-UI agent, ready to call: its headers (secret ones included) resolved once.
pub(crate) struct RemoteAgent {
    url: String,
    cancel_url: Option<String>,
    headers: Vec<(String, SecretString)>,
    http: reqwest::Client,
}

impl std::fmt::Debug for RemoteAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteAgent")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl RemoteAgent {
    /// The agent `settings` declare, with the headers of its secret, calling through `http`.
    pub(crate) fn new(
        settings: &RemoteAgentSettings,
        secret_headers: BTreeMap<String, SecretString>,
        http: reqwest::Client,
    ) -> Self {
        let headers = settings
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), SecretString::from(value.clone())))
            .chain(secret_headers)
            .collect();
        Self {
            url: settings.url.clone(),
            cancel_url: settings.cancel_url.clone(),
            headers,
            http,
        }
    }

    fn request(&self, url: &str) -> reqwest::RequestBuilder {
        self.headers
            .iter()
            .fold(self.http.post(url), |request, (name, value)| {
                let mut value = reqwest::header::HeaderValue::from_str(value.expose_secret())
                    .unwrap_or_else(|_| reqwest::header::HeaderValue::from_static(""));
                value.set_sensitive(true);
                request.header(name.as_str(), value)
            })
    }

    /// Asks the agent to stop the run, when it says how; never waits for the answer.
    fn cancel(&self, thread_id: &str, run_id: &str) {
        let Some(template) = &self.cancel_url else {
            return;
        };
        let url = template
            .replace("{threadId}", thread_id)
            .replace("{runId}", run_id);
        let request = self.request(&url).timeout(Duration::from_secs(5));
        tokio::spawn(async move {
            if let Err(error) = request.send().await {
                tracing::warn!(error = %error, "a remote sub-agent's cancel request failed");
            }
        });
    }
}

/// The `RunAgentInput` of a call.
fn input_of(call: &ChildCall) -> Value {
    let mut messages: Vec<Value> = call
        .task
        .iter()
        .map(|task| {
            json!({"id": crate::protocol::MessageId::generate(), "role": "user", "content": task})
        })
        .collect();
    messages.extend(
        call.answers
            .iter()
            .filter_map(|answer| serde_json::to_value(answer).ok()),
    );
    let tools: Vec<Value> = call
        .confirm_tool
        .iter()
        .map(|tool| {
            json!({"name": tool.name, "description": tool.description, "parameters": tool.parameters})
        })
        .collect();
    let mut input = json!({
        "threadId": call.thread_id,
        "runId": call.run_id,
        "state": {},
        "messages": messages,
        "tools": tools,
        "context": [],
        "forwardedProps": {},
    });
    if call.speaks_v1 {
        input["protocolVersion"] = json!(crate::protocol::events::PROTOCOL_VERSION);
    }
    if !call.resume.is_empty() {
        input["resume"] = call
            .resume
            .iter()
            .map(|entry| {
                let mut answer = json!({
                    "interruptId": entry.interrupt_id,
                    "status": match entry.status {
                        crate::protocol::interrupt::ResumeStatus::Resolved => "resolved",
                        crate::protocol::interrupt::ResumeStatus::Cancelled => "cancelled",
                    },
                });
                if let Some(payload) = &entry.payload {
                    answer["payload"] = payload.clone();
                }
                answer
            })
            .collect();
    }
    input
}

/// A failure before or while the stream runs.
fn unreachable_agent(message: String) -> ChildError {
    ChildError {
        code: "AGENT_UNAVAILABLE",
        message,
    }
}

#[async_trait::async_trait]
impl ChildAgent for std::sync::Arc<RemoteAgent> {
    async fn run(&self, call: ChildCall) -> Result<ChildStream, ChildError> {
        let sent = self
            .request(&self.url)
            .header("accept", "text/event-stream")
            .json(&input_of(&call));
        let response = tokio::select! {
            biased;
            () = call.stop.cancelled() => {
                return Ok(futures_util::stream::iter([ChildEvent::End(ChildEnd::Cancelled { usage: Vec::new() })]).boxed());
            }
            response = sent.send() => response.map_err(|error| unreachable_agent(format!("the agent could not be reached: {error}")))?,
        };
        let status = response.status();
        if !status.is_success() {
            return Err(unreachable_agent(format!(
                "the agent answered HTTP {status}"
            )));
        }
        let agent = self.clone();
        let (thread_id, run_id, stop) = (
            call.thread_id.to_string(),
            call.run_id.to_string(),
            call.stop,
        );
        Ok(async_stream::stream! {
            let mut events = response.bytes_stream().eventsource();
            loop {
                let next = tokio::select! {
                    biased;
                    () = stop.cancelled() => {
                        agent.cancel(&thread_id, &run_id);
                        yield ChildEvent::End(ChildEnd::Cancelled { usage: Vec::new() });
                        break;
                    }
                    next = events.next() => next,
                };
                let failed = |message: String| ChildEvent::End(ChildEnd::Failed {
                    code: "AGENT_UNAVAILABLE".to_owned(),
                    message,
                    usage: Vec::new(),
                });
                let frame = match next {
                    None => {
                        yield failed("the agent's stream ended before its run did".to_owned());
                        break;
                    }
                    Some(Err(error)) => {
                        yield failed(format!("the agent's stream broke: {error}"));
                        break;
                    }
                    Some(Ok(frame)) => frame,
                };
                let Ok(Value::Object(event)) = serde_json::from_str::<Value>(&frame.data) else {
                    continue;
                };
                let event = child_event(event);
                let ended = matches!(event, ChildEvent::End(_));
                yield event;
                if ended {
                    break;
                }
            }
        }
        .boxed())
    }
}
