//! The calls, on the interface a card offered: JSON-RPC 2.0 (`method` in the body) or
//! HTTP+JSON (a path per operation). Every request carries `A2A-Version: 1.0`, the interface's
//! `tenant` and the credentials the card asks for; streams are read as SSE.

use super::ClientError;
use super::card::{Binding, Endpoint};
use crate::a2a::errors::ErrorKind;
use crate::a2a::types::{
    PROTOCOL_VERSION, SendMessageRequest, StreamResponse, Task, TaskIdRequest, VERSION_HEADER,
};
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use serde_json::{Value, json};

/// What a blocking send answered.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum SendResponse {
    Task(Task),
    Message(crate::a2a::types::Message),
}

/// Where requests go and what they carry.
#[derive(Clone)]
pub(crate) struct Transport {
    pub http: reqwest::Client,
    pub endpoint: Endpoint,
    /// Headers the card's security scheme asks for, and query parameters (an API key `in: query`).
    pub headers: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
}

/// A2A's error in an answer: a JSON-RPC error object, or a `google.rpc.Status`.
fn answer_error(body: &Value, status: u16) -> ClientError {
    if let Some(error) = body.get("error").filter(|error| error.is_object()) {
        let message = error["message"].as_str().unwrap_or("an error").to_owned();
        let reason = error["details"]
            .as_array()
            .or_else(|| error["data"].as_array())
            .and_then(|details| details.iter().find_map(|d| d["reason"].as_str()))
            .map(str::to_owned);
        let kind = error["code"]
            .as_i64()
            .filter(|code| *code < 0)
            .and_then(ErrorKind::from_code);
        return ClientError::remote(kind, reason, status, message);
    }
    ClientError::remote(None, None, status, format!("HTTP {status}"))
}

impl Transport {
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut url = match self.endpoint.binding {
            Binding::JsonRpc => self.endpoint.url.clone(),
            Binding::HttpJson if self.endpoint.tenant.is_empty() => {
                format!("{}{path}", self.endpoint.url)
            }
            Binding::HttpJson => format!(
                "{}/{}{path}",
                self.endpoint.url,
                encode(&self.endpoint.tenant)
            ),
        };
        if !self.query.is_empty() {
            let query = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(&self.query)
                .finish();
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&query);
        }
        let mut request = self
            .http
            .request(method, url)
            .header(VERSION_HEADER, PROTOCOL_VERSION);
        for (name, value) in &self.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        request
    }

    /// One JSON-RPC call's request.
    fn rpc(&self, method: &str, params: Value) -> reqwest::RequestBuilder {
        let id = uuid::Uuid::new_v4().to_string();
        self.request(reqwest::Method::POST, "")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
            )
    }

    /// The request of `operation`, its JSON-RPC method and HTTP+JSON path.
    fn call(
        &self,
        method: &str,
        rest: (reqwest::Method, String),
        params: Value,
    ) -> reqwest::RequestBuilder {
        match self.endpoint.binding {
            Binding::JsonRpc => self.rpc(method, params),
            Binding::HttpJson => {
                let (verb, path) = rest;
                let body = verb == reqwest::Method::POST;
                let request = self.request(verb, &path);
                if body {
                    request
                        .header(reqwest::header::CONTENT_TYPE, "application/a2a+json")
                        .body(params.to_string())
                } else {
                    request
                }
            }
        }
    }

    /// Sends `request` and reads its JSON answer (a JSON-RPC answer's `result`).
    async fn answer(&self, request: reqwest::RequestBuilder) -> Result<Value, ClientError> {
        let response = request.send().await.map_err(ClientError::transport)?;
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap_or_else(|_| Value::Null);
        if status >= 400 || body.get("error").is_some() {
            return Err(answer_error(&body, status));
        }
        Ok(match self.endpoint.binding {
            Binding::JsonRpc => body.get("result").cloned().unwrap_or(Value::Null),
            Binding::HttpJson => body,
        })
    }

    fn with_tenant(&self, mut params: Value) -> Value {
        if !self.endpoint.tenant.is_empty() {
            params["tenant"] = json!(self.endpoint.tenant);
        }
        params
    }

    pub(crate) async fn send(
        &self,
        request: &SendMessageRequest,
    ) -> Result<SendResponse, ClientError> {
        let params = self.with_tenant(serde_json::to_value(request).unwrap_or_default());
        let answer = self
            .answer(self.call(
                "SendMessage",
                (reqwest::Method::POST, "/message:send".into()),
                params,
            ))
            .await?;
        serde_json::from_value(answer)
            .map_err(|error| ClientError::protocol(format!("SendMessage's answer: {error}")))
    }

    pub(crate) async fn get_task(&self, id: &str) -> Result<Task, ClientError> {
        let params = self.with_tenant(json!({"id": id}));
        let path = format!("/tasks/{}", encode(id));
        let answer = self
            .answer(self.call("GetTask", (reqwest::Method::GET, path), params))
            .await?;
        serde_json::from_value(answer)
            .map_err(|error| ClientError::protocol(format!("GetTask's answer: {error}")))
    }

    pub(crate) async fn cancel(&self, id: &str) -> Result<Task, ClientError> {
        let params = self.with_tenant(json!({"id": id}));
        let path = format!("/tasks/{}:cancel", encode(id));
        let answer = self
            .answer(self.call("CancelTask", (reqwest::Method::POST, path), params))
            .await?;
        serde_json::from_value(answer)
            .map_err(|error| ClientError::protocol(format!("CancelTask's answer: {error}")))
    }

    pub(crate) async fn stream(
        &self,
        request: &SendMessageRequest,
    ) -> Result<impl Stream<Item = Result<StreamResponse, ClientError>> + Send + 'static, ClientError>
    {
        let params = self.with_tenant(serde_json::to_value(request).unwrap_or_default());
        let call = self.call(
            "SendStreamingMessage",
            (reqwest::Method::POST, "/message:stream".into()),
            params,
        );
        self.frames(call).await
    }

    pub(crate) async fn subscribe(
        &self,
        id: &str,
    ) -> Result<impl Stream<Item = Result<StreamResponse, ClientError>> + Send + 'static, ClientError>
    {
        let request = TaskIdRequest {
            id: id.to_owned(),
            ..TaskIdRequest::default()
        };
        let params = self.with_tenant(serde_json::to_value(request).unwrap_or_default());
        let path = format!("/tasks/{}:subscribe", encode(id));
        self.frames(self.call("SubscribeToTask", (reqwest::Method::POST, path), params))
            .await
    }

    /// A streamed answer's frames; an error before the stream (a JSON answer) fails the call.
    async fn frames(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<impl Stream<Item = Result<StreamResponse, ClientError>> + Send + 'static, ClientError>
    {
        let response = request
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(ClientError::transport)?;
        let status = response.status().as_u16();
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if status >= 400 || !is_sse {
            let body: Value = response.json().await.unwrap_or(Value::Null);
            return Err(answer_error(&body, status));
        }
        let binding = self.endpoint.binding;
        let mut events = Box::pin(
            crate::protocol::sse::without_leading_bom(response.bytes_stream()).eventsource(),
        );
        Ok(async_stream::stream! {
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(error) => {
                        yield Err(ClientError::transport_text(format!("the stream broke off: {error}")));
                        return;
                    }
                };
                if event.data.trim().is_empty() {
                    continue;
                }
                let Ok(value) = serde_json::from_str::<Value>(&event.data) else {
                    yield Err(ClientError::protocol("a stream frame is not JSON"));
                    return;
                };
                if event.event == "error" || value.get("error").is_some() {
                    yield Err(answer_error(&value, 200));
                    return;
                }
                let frame = lenient_frame(match binding {
                    Binding::JsonRpc => value.get("result").cloned().unwrap_or(Value::Null),
                    Binding::HttpJson => value,
                });
                match serde_json::from_value::<StreamResponse>(frame) {
                    Ok(frame) => yield Ok(frame),
                    Err(error) => {
                        yield Err(ClientError::protocol(format!("a stream frame: {error}")));
                        return;
                    }
                }
            }
        })
    }
}

/// A frame as A2A 1.0 shapes it. aimock's A2A mock (1.43) streams an artifact as the task with
/// an `artifact` beside it (`{"task": {…}, "artifact": {parts, append, lastChunk}}`); that is
/// read as the artifact update it stands for.
fn lenient_frame(frame: Value) -> Value {
    let (Some(task), Some(artifact)) = (frame.get("task"), frame.get("artifact")) else {
        return frame;
    };
    let id = artifact["artifactId"]
        .as_str()
        .or_else(|| artifact["name"].as_str())
        .unwrap_or("artifact");
    json!({"artifactUpdate": {
        "taskId": task["id"], "contextId": task["contextId"],
        "artifact": {"artifactId": id, "parts": artifact["parts"]},
        "append": artifact["append"].as_bool().unwrap_or(false),
        "lastChunk": artifact["lastChunk"].as_bool().unwrap_or(false),
    }})
}

/// What a path segment keeps as it is: RFC 3986's unreserved characters.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn encode(id: &str) -> String {
    percent_encoding::utf8_percent_encode(id, SEGMENT).to_string()
}
