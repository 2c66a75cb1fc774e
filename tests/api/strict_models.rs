//! The strict model stand-ins of `tests/strict_models.py` (the OpenAI Responses API and Gemini's
//! OpenAI-compatible endpoint, each refusing what the real API refuses), one per test on a free
//! loopback port. Python, not Node: these tests run in the Node-less step too.

use super::helpers::{await_ready, free_port, repo_path};
use serde_json::Value;

pub(crate) struct StrictModels {
    _child: tokio::process::Child,
    pub url: String,
    http: reqwest::Client,
}

impl StrictModels {
    pub(crate) async fn start() -> Self {
        let port = free_port();
        let child = tokio::process::Command::new("python3")
            .arg(repo_path("tests/strict_models.py"))
            .args(["--port", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 starts tests/strict_models.py");
        let url = format!("http://127.0.0.1:{port}");
        await_ready(&format!("{url}/health"), "tests/strict_models.py").await;
        Self {
            _child: child,
            url,
            http: reqwest::Client::new(),
        }
    }

    /// The Responses API's base, as `OPENAI_BASE_URL` takes it.
    pub(crate) fn openai_base(&self) -> String {
        format!("{}/v1", self.url)
    }

    /// Gemini's OpenAI-compatible base, as `GEMINI_BASE_URL` takes it.
    pub(crate) fn gemini_base(&self) -> String {
        format!("{}/v1beta/openai", self.url)
    }

    /// Every request received, oldest first: `{path, at, body, headers}`.
    pub(crate) async fn journal(&self) -> Vec<Value> {
        self.http
            .get(format!("{}/__journal", self.url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The request bodies whose input mentions `text`, oldest first.
    pub(crate) async fn requests_about(&self, text: &str) -> Vec<Value> {
        self.journal()
            .await
            .into_iter()
            .filter(|entry| entry["body"].to_string().contains(text))
            .collect()
    }

    /// Posts `body` to `path` as a client would, for the tests that show what the stand-in
    /// refuses: the status and the JSON answer.
    pub(crate) async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .json(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}
