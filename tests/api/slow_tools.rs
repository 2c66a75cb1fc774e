//! A loopback MCP server (streamable HTTP, JSON answers) with slow tools that count their
//! executions by key: it lives in the test process, so it counts across the function's
//! processes, killed ones included. `step` and `charge` say nothing of idempotency (so a call
//! cut off must not run again); `fetch` says `idempotentHint: true`.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::broadcast;

pub(crate) struct SlowTools {
    pub url: String,
    executions: Arc<Mutex<HashMap<String, u32>>>,
    started: broadcast::Sender<String>,
    _server: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct State {
    executions: Arc<Mutex<HashMap<String, u32>>>,
    started: broadcast::Sender<String>,
    /// How long a call takes, unless its arguments say (`ms`).
    default_ms: u64,
}

impl SlowTools {
    pub(crate) async fn start(default_ms: u64) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let executions = Arc::new(Mutex::new(HashMap::new()));
        let (started, _) = broadcast::channel(256);
        let state = State {
            executions: executions.clone(),
            started: started.clone(),
            default_ms,
        };
        let server = crate::loopback::serve(listener, move |request| {
            let state = state.clone();
            async move { serve(state, request).await }
        });
        Self {
            url,
            executions,
            started,
            _server: server,
        }
    }

    /// `MCP_SERVERS` naming this server `slow`, calls bounded by `timeout_ms`.
    pub(crate) fn servers(&self, timeout_ms: u64) -> String {
        json!([{"name": "slow", "url": self.url, "timeout_ms": timeout_ms}]).to_string()
    }

    /// Executions by `tool:key`.
    pub(crate) fn executions(&self) -> HashMap<String, u32> {
        self.executions.lock().unwrap().clone()
    }

    /// Tells of every call as it starts (`tool:key`).
    pub(crate) fn starts(&self) -> broadcast::Receiver<String> {
        self.started.subscribe()
    }
}

fn json_response(status: u16, body: &Value) -> hyper::Response<Full<Bytes>> {
    hyper::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header("mcp-session-id", "slow-tools")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

async fn serve(
    state: State,
    request: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Full<Bytes>> {
    if request.method() != hyper::Method::POST {
        // No server-initiated stream.
        return hyper::Response::builder()
            .status(405)
            .body(Full::new(Bytes::new()))
            .unwrap();
    }
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = message["id"].clone();
    if id.is_null() {
        // A notification.
        return hyper::Response::builder()
            .status(202)
            .body(Full::new(Bytes::new()))
            .unwrap();
    }
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": message["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "slow-tools", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [
            tool("step", "One step of a long task", json!({})),
            tool("charge", "Charges a card (never twice)", json!({"destructiveHint": false})),
            tool("fetch", "Reads a page", json!({"idempotentHint": true})),
        ]}),
        "tools/call" => call(&state, &message["params"]).await,
        "ping" => json!({}),
        other => {
            return json_response(
                200,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("no method {other}")}}),
            );
        }
    };
    json_response(200, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn tool(name: &str, description: &str, annotations: Value) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {"key": {"type": "string"}, "ms": {"type": "integer"}},
            "required": ["key"],
        },
        "annotations": annotations,
    })
}

async fn call(state: &State, params: &Value) -> Value {
    let name = params["name"].as_str().unwrap_or_default();
    let key = params["arguments"]["key"].as_str().unwrap_or_default();
    let ms = params["arguments"]["ms"]
        .as_u64()
        .unwrap_or(state.default_ms);
    let counted = format!("{name}:{key}");
    *state
        .executions
        .lock()
        .unwrap()
        .entry(counted.clone())
        .or_default() += 1;
    let _ = state.started.send(counted.clone());
    tokio::time::sleep(Duration::from_millis(ms)).await;
    json!({"content": [{"type": "text", "text": format!("done {counted}")}]})
}
