//! A loopback OpenAI-compatible Chat Completions server for long runs: its answer is a pure
//! function of the request (the number of tool results so far), so a model call repeated by a
//! run's next runner gets the same answer. It lives in the test process: it outlives the
//! function's processes that a test kills.

use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// What the model answers.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// One tool call.
    Call { name: String, arguments: Value },
    /// Text, one word every `every`.
    Text { words: Vec<String>, every: Duration },
}

/// What the model is asked: the step (tool results so far), the first user message, and how
/// many answers (assistant text) the conversation holds, a cut answer kept included.
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    pub step: usize,
    pub user: String,
    pub answered: usize,
}

type Script = dyn Fn(&Asked) -> Answer + Send + Sync;

pub(crate) struct StepModel {
    pub url: String,
    _server: tokio::task::JoinHandle<()>,
}

impl StepModel {
    /// Answers with `script(asked)`; each answer starts after `latency`.
    pub(crate) async fn start(
        latency: Duration,
        script: impl Fn(&Asked) -> Answer + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let script: Arc<Script> = Arc::new(script);
        let server = crate::loopback::serve(listener, move |request| {
            let script = script.clone();
            async move { serve(request, script.as_ref(), latency).await }
        });
        Self {
            url,
            _server: server,
        }
    }
}

type Body = http_body_util::StreamBody<
    futures_util::stream::BoxStream<'static, Result<hyper::body::Frame<bytes::Bytes>, Infallible>>,
>;

/// One completion: what the script answers, streamed as Chat Completions chunks.
async fn serve(
    request: hyper::Request<hyper::body::Incoming>,
    script: &Script,
    latency: Duration,
) -> hyper::Response<Body> {
    use http_body_util::BodyExt;
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let asked = Asked {
        step: messages.iter().filter(|m| m["role"] == "tool").count(),
        user: messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned(),
        answered: messages
            .iter()
            .filter(|m| {
                m["role"] == "assistant" && m["content"].as_str().is_some_and(|c| !c.is_empty())
            })
            .count(),
    };
    let answer = script(&asked);
    let step = asked.step;
    let frames = async_stream::stream! {
        tokio::time::sleep(latency).await;
        for (piece, pause) in pieces(answer, step) {
            yield Ok(hyper::body::Frame::data(bytes::Bytes::from(piece)));
            tokio::time::sleep(pause).await;
        }
    };
    hyper::Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(http_body_util::StreamBody::new(Box::pin(frames) as _))
        .unwrap()
}

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    let frame = json!({
        "id": "chatcmpl-step",
        "object": "chat.completion.chunk",
        "model": "step-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {frame}\n\n")
}

/// The SSE chunks of `answer`, each with the pause after it.
fn pieces(answer: Answer, step: usize) -> Vec<(String, Duration)> {
    let mut out = Vec::new();
    match answer {
        Answer::Call { name, arguments } => {
            let call = json!({"tool_calls": [{
                "index": 0,
                "id": format!("call_step_{step}"),
                "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()},
            }]});
            out.push((chunk(&call, None), Duration::ZERO));
            out.push((chunk(&json!({}), Some("tool_calls")), Duration::ZERO));
        }
        Answer::Text { words, every } => {
            for word in words {
                out.push((chunk(&json!({"content": word}), None), every));
            }
            out.push((chunk(&json!({}), Some("stop")), Duration::ZERO));
        }
    }
    let usage = json!({"id": "chatcmpl-step", "object": "chat.completion.chunk", "model": "step-model", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}});
    out.push((format!("data: {usage}\n\ndata: [DONE]\n\n"), Duration::ZERO));
    out
}
