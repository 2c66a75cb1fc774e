//! A loopback OpenAI-compatible Chat Completions server for long runs: its answer is a pure
//! function of the request (the number of tool results so far), so a model call repeated by a
//! run's next runner gets the same answer. It lives in the test process: it outlives the
//! function's processes that a test kills.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// What the model answers.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// One tool call.
    Call { name: String, arguments: Value },
    /// Text, one word every `every`.
    Text { words: Vec<String>, every: Duration },
}

/// What the model is asked: the step (tool results so far) and the first user message.
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    pub step: usize,
    pub user: String,
}

type Script = dyn Fn(&Asked) -> Answer + Send + Sync;

pub(crate) struct StepModel {
    pub url: String,
    requests: Arc<Mutex<u32>>,
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
        let requests = Arc::new(Mutex::new(0));
        let counted = requests.clone();
        let server = tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let script = script.clone();
                let counted = counted.clone();
                tokio::spawn(async move {
                    let Some(body) = super::window_model::read_request(&mut socket).await else {
                        return;
                    };
                    *counted.lock().unwrap() += 1;
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
                    };
                    tokio::time::sleep(latency).await;
                    let _ = answer(&mut socket, script(&asked), asked.step).await;
                });
            }
        });
        Self {
            url,
            requests,
            _server: server,
        }
    }

    /// How many completions were requested.
    pub(crate) fn requests(&self) -> u32 {
        *self.requests.lock().unwrap()
    }
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

async fn answer(
    socket: &mut tokio::net::TcpStream,
    answer: Answer,
    step: usize,
) -> std::io::Result<()> {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    socket.write_all(head.as_bytes()).await?;
    match answer {
        Answer::Call { name, arguments } => {
            let call = json!({"tool_calls": [{
                "index": 0,
                "id": format!("call_step_{step}"),
                "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()},
            }]});
            socket.write_all(chunk(&call, None).as_bytes()).await?;
            socket
                .write_all(chunk(&json!({}), Some("tool_calls")).as_bytes())
                .await?;
        }
        Answer::Text { words, every } => {
            for word in words {
                socket
                    .write_all(chunk(&json!({"content": word}), None).as_bytes())
                    .await?;
                socket.flush().await?;
                tokio::time::sleep(every).await;
            }
            socket
                .write_all(chunk(&json!({}), Some("stop")).as_bytes())
                .await?;
        }
    }
    let usage = json!({"id": "chatcmpl-step", "object": "chat.completion.chunk", "model": "step-model", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}});
    socket
        .write_all(format!("data: {usage}\n\ndata: [DONE]\n\n").as_bytes())
        .await?;
    socket.shutdown().await
}
