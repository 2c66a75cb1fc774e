//! OpenAI-compatible Chat Completions streaming over reqwest + eventsource-stream: one attempt
//! per call, its failure classified for the retry layer above ([`super::resilient`]).

mod chunk;
mod content;
pub(crate) mod responses;

pub use chunk::ChunkParser;
pub(crate) use responses::{ResponsesProvider, ResponsesSettings};

#[cfg(test)]
use super::ModelDelta;
use super::ReasoningEffort;
use super::artefact::Artefact;
use super::refusal::Refusal;
use super::{DeltaStream, ModelError, ModelProvider, ModelRequest, RetryHint, truncate};
use crate::protocol::{Message, UserContent, UserPart};
use async_trait::async_trait;
use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
pub(crate) struct OpenAiSettings {
    /// Up to and including `/v1`, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub api_key: Option<SecretString>,
    pub model: String,
    /// Send `prompt_cache_key` (api.openai.com takes it; other OpenAI-compatible servers may
    /// refuse an unknown field).
    pub prompt_cache_key: bool,
    /// `reasoning_effort`, sent only when set (compatible servers may refuse the field).
    pub reasoning_effort: Option<ReasoningEffort>,
    /// The provider's name in usage and traces: `openai`, or `gemini` for its compatible
    /// endpoint.
    pub provider_name: &'static str,
}

pub(crate) struct OpenAiProvider {
    http: reqwest::Client,
    settings: OpenAiSettings,
    endpoint: String,
}

impl OpenAiProvider {
    /// One client per cold start: its connection pool is what keeps warm runs fast.
    pub(crate) fn new(http: reqwest::Client, settings: OpenAiSettings) -> Self {
        let endpoint = format!(
            "{}/chat/completions",
            settings.base_url.trim_end_matches('/')
        );
        Self {
            http,
            settings,
            endpoint,
        }
    }

    fn body(&self, request: &ModelRequest) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = system_text(request) {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.extend(request.messages.iter().filter_map(to_openai_message));
        let mut body = json!({
            "model": self.settings.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        let sampling = &request.sampling;
        if let Some(temperature) = sampling.temperature {
            body["temperature"] = json!(temperature);
        }
        if let Some(top_p) = sampling.top_p {
            body["top_p"] = json!(top_p);
        }
        if let Some(max_tokens) = sampling.max_tokens {
            body["max_tokens"] = json!(max_tokens);
        }
        if !sampling.stop.is_empty() {
            body["stop"] = json!(sampling.stop);
        }
        if let Some(seed) = sampling.seed {
            body["seed"] = json!(seed);
        }
        if let Some(effort) = self.settings.reasoning_effort {
            body["reasoning_effort"] = json!(effort.as_str());
        }
        if self.settings.prompt_cache_key
            && let Some(key) = &request.cache_key
        {
            body["prompt_cache_key"] = json!(key);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|tool| {
                    json!({"type": "function", "function": {
                        "name": tool.name, "description": tool.description, "parameters": tool.parameters,
                    }})
                })
                .collect();
        }
        if let Some(name) = &request.tool_choice {
            body["tool_choice"] = json!({"type": "function", "function": {"name": name}});
        }
        body
    }

    async fn send(&self, body: &Value) -> Result<reqwest::Response, ModelError> {
        let mut builder = stream_request(&self.http, &self.endpoint, body);
        if let Some(key) = &self.settings.api_key {
            builder = builder.bearer_auth(key.expose_secret());
        }
        open_stream(builder).await
    }
}

/// A JSON POST that asks for an event stream: how every HTTP provider opens a model call.
pub(crate) fn stream_request(
    http: &reqwest::Client,
    endpoint: &str,
    body: &Value,
) -> reqwest::RequestBuilder {
    http.post(endpoint)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .body(Bytes::from(body.to_string()))
}

/// Sends a model call: the streaming response, or the provider's refusal as a [`ModelError`].
pub(crate) async fn open_stream(
    builder: reqwest::RequestBuilder,
) -> Result<reqwest::Response, ModelError> {
    let response = builder.send().await.map_err(|error| {
        tracing::warn!(%error, "model API unreachable");
        ModelError::Unreachable(if error.is_timeout() {
            "the connection timed out (MODEL_CONNECT_TIMEOUT_MS)".to_owned()
        } else {
            super::unreachable_cause(&error)
        })
    })?;
    if response.status().is_success() {
        return Ok(response);
    }
    Err(refused(response).await)
}

/// A non-success answer as a [`ModelError`]: the provider's overflow refusal, or its status
/// with what it said and what it asked about retrying.
pub(crate) async fn refused(response: reqwest::Response) -> ModelError {
    let status = response.status().as_u16();
    let retry = RetryHint::from_headers(response.headers());
    let body = response.text().await.unwrap_or_default();
    tracing::warn!(status, "model API refused the request");
    tracing::debug!(body = %truncate(&body, 500), "model API error body");
    let refusal = Refusal::from_body(&body);
    match refusal {
        Some(refusal) if refusal.is_context_overflow() => ModelError::ContextOverflow(refusal),
        refusal => ModelError::Status {
            status,
            refusal,
            retry,
        },
    }
}

#[async_trait]
impl ModelProvider for OpenAiProvider {
    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        let response = self.send(&self.body(request)).await?;
        Ok(delta_stream(response.bytes_stream()))
    }

    fn describe(&self) -> String {
        format!(
            "{} model {} at {} (chat completions)",
            self.settings.provider_name, self.settings.model, self.settings.base_url
        )
    }

    fn identity(&self) -> crate::model::ModelIdentity {
        crate::model::ModelIdentity {
            provider: self.settings.provider_name.to_owned(),
            model: self.settings.model.clone(),
        }
    }

    fn check_part(&self, part: &UserPart) -> Result<(), String> {
        content::check_part(part)
    }
}

/// The whole receive path from raw bytes to deltas; split points in the bytes never matter.
pub fn delta_stream<S, E>(bytes: S) -> DeltaStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let mut events = Box::pin(crate::protocol::sse::without_leading_bom(bytes).eventsource());
    Box::pin(async_stream::stream! {
        let mut parser = ChunkParser::new();
        let mut out = Vec::new();
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(err) => {
                    tracing::warn!(error = %err, "model stream broke off");
                    yield Err(ModelError::Stream);
                    return;
                }
            };
            if let Err(err) = parser.push(&event.data, &mut out) {
                yield Err(err);
                return;
            }
            for delta in out.drain(..) {
                yield Ok(delta);
            }
            if parser.is_done() {
                break;
            }
        }
        match parser.end(&mut out) {
            Ok(()) => {
                for delta in out.drain(..) {
                    yield Ok(delta);
                }
            }
            Err(err) => yield Err(err),
        }
    })
}

/// A message as Chat Completions takes it; `None` for reasoning, which compatible servers
/// (DeepSeek, Qwen) refuse when sent back and OpenAI never needs.
/// The system prompt, then the summary of the thread's older messages: one system message,
/// whose bytes change only when the thread is compacted.
fn system_text(request: &ModelRequest) -> Option<String> {
    match (&request.system, &request.summary) {
        (Some(system), Some(summary)) => Some(format!("{system}\n\n{summary}")),
        (Some(only), None) | (None, Some(only)) => Some(only.clone()),
        (None, None) => None,
    }
}

/// Whether `base_url` is OpenAI's own API: the one server known to take `prompt_cache_key`, and
/// where `MODEL_PROVIDER=openai` speaks the Responses API.
pub(crate) fn is_openai_itself(base_url: &str) -> bool {
    reqwest::Url::parse(base_url).is_ok_and(|url| url.host_str() == Some("api.openai.com"))
}

/// A stored call as Chat Completions takes it back, with Gemini's thought signature where the
/// call has one (Gemini refuses a replayed call without it).
fn tool_call(call: &crate::protocol::ToolCall) -> Value {
    let arguments = match call.function.arguments.as_str() {
        "" => "{}",
        arguments => arguments,
    };
    let mut value = json!({"id": call.id, "type": "function", "function": {
        "name": call.function.name,
        "arguments": arguments,
    }});
    if let Some(Artefact::GeminiSignature(signature)) =
        call.encrypted_value.as_deref().and_then(Artefact::decode)
    {
        value["extra_content"] = json!({"google": {"thought_signature": signature}});
    }
    value
}

fn to_openai_message(message: &Message) -> Option<Value> {
    Some(match message {
        // Compatible servers (vLLM, Ollama, older gateways) reject the newer `developer` role.
        Message::System { content, .. } | Message::Developer { content, .. } => {
            json!({"role": "system", "content": content})
        }
        Message::User { content, .. } => match content {
            UserContent::Text(text) => json!({"role": "user", "content": text}),
            UserContent::Parts(parts) => {
                let parts: Vec<Value> = parts.iter().map(content::user_part).collect();
                json!({"role": "user", "content": parts})
            }
        },
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut value = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                value["tool_calls"] = tool_calls.iter().map(tool_call).collect();
            }
            value
        }
        Message::Tool {
            tool_call_id,
            content,
            error,
            ..
        } => {
            let content = match error {
                Some(error) if content.is_empty() => format!("Error: {error}"),
                _ => content.clone(),
            };
            json!({"role": "tool", "tool_call_id": tool_call_id, "content": content})
        }
        Message::Reasoning { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AssembledCall, ToolCallAccumulator};
    use proptest::prelude::*;

    const STREAM: &str = concat!(
        ": keep-alive\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Let me \"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"check \\u00e9t\u{e9} 北京\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"get_current_time\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"timez\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"one\\\":\\\"UTC\\\"}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"search\",\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":5}}\n\n",
        "data: [DONE]\n\n",
    );

    fn run(chunks: Vec<Bytes>) -> (String, Vec<AssembledCall>, Vec<ModelDelta>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let deltas: Vec<ModelDelta> = runtime.block_on(async {
            let source =
                futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
            delta_stream(source)
                .map(|delta| delta.unwrap())
                .collect()
                .await
        });
        let mut text = String::new();
        let mut calls = ToolCallAccumulator::default();
        for delta in &deltas {
            if let ModelDelta::Text(piece) = delta {
                text.push_str(piece);
            }
            calls.apply(delta);
        }
        (text, calls.into_calls(), deltas)
    }

    #[test]
    fn the_whole_stream_in_one_chunk() {
        let (text, calls, deltas) = run(vec![Bytes::from_static(STREAM.as_bytes())]);
        assert_eq!(text, "Let me check été 北京");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments, "{\"timezone\":\"UTC\"}");
        assert_eq!(calls[1].name, "search");
        assert!(deltas.contains(&ModelDelta::Usage(crate::model::Usage {
            input_tokens: 7,
            output_tokens: 5,
            ..Default::default()
        })));
    }

    proptest! {
        #[test]
        fn any_split_of_the_bytes_gives_the_same_text_and_calls(
            cuts in proptest::collection::vec(0usize..STREAM.len() + 3, 0..40),
            bom in proptest::bool::ANY,
        ) {
            let owned = if bom { [crate::protocol::sse::BOM, STREAM.as_bytes()].concat() } else { STREAM.as_bytes().to_vec() };
            let bytes = owned.as_slice();
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|cut| *cut <= bytes.len()).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let mut chunks = Vec::new();
            let mut last = 0;
            for cut in cuts.into_iter().chain(std::iter::once(bytes.len())) {
                chunks.push(Bytes::copy_from_slice(&bytes[last..cut]));
                last = cut;
            }
            let (text, calls, _) = run(chunks);
            let (expected_text, expected_calls, _) = run(vec![Bytes::from_static(STREAM.as_bytes())]);
            prop_assert_eq!(text, expected_text);
            prop_assert_eq!(calls, expected_calls);
        }
    }

    #[test]
    fn byte_order_marks_before_the_stream_are_dropped_not_a_panic() {
        let with_bom = [
            b"\xEF\xBB\xBF".as_slice(),
            b"\xEF\xBB\xBF".as_slice(),
            STREAM.as_bytes(),
        ]
        .concat();
        let (expected_text, expected_calls, _) = run(vec![Bytes::from_static(STREAM.as_bytes())]);
        for split in [1, 2, 3, 4, 5, 7, with_bom.len()] {
            let chunks = vec![
                Bytes::copy_from_slice(&with_bom[..split]),
                Bytes::copy_from_slice(&with_bom[split..]),
            ];
            let (text, calls, _) = run(chunks);
            assert_eq!(
                (text, calls),
                (expected_text.clone(), expected_calls.clone()),
                "split at {split}"
            );
        }
        // The fuzzer's minimal input: a mark, then only `[DONE]`.
        let (text, calls, deltas) = run(vec![Bytes::from_static(b"\xEF\xBB\xBFdata: [DONE]\n\n")]);
        assert!(text.is_empty() && calls.is_empty());
        assert_eq!(
            deltas,
            vec![ModelDelta::Finish(crate::model::FinishReason::Stop)]
        );
    }

    #[test]
    fn a_broken_byte_stream_is_a_stream_error() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let results: Vec<Result<ModelDelta, ModelError>> = runtime.block_on(async {
            let source = futures_util::stream::iter(vec![
                Ok(Bytes::from_static(
                    b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
                )),
                Err(std::io::Error::other("reset")),
            ]);
            delta_stream(source).collect().await
        });
        assert_eq!(
            results,
            vec![Ok(ModelDelta::Text("a".into())), Err(ModelError::Stream)]
        );
    }

    fn provider() -> OpenAiProvider {
        OpenAiProvider::new(
            reqwest::Client::new(),
            OpenAiSettings {
                base_url: "http://127.0.0.1:9/v1".into(),
                api_key: None,
                model: "m".into(),
                prompt_cache_key: true,
                reasoning_effort: None,
                provider_name: "openai",
            },
        )
    }

    fn mid(id: &str) -> crate::protocol::MessageId {
        crate::protocol::MessageId::parse(id, 128).unwrap()
    }

    #[test]
    fn the_body_carries_the_sampling_options_that_are_set() {
        let request = ModelRequest {
            messages: vec![Message::User {
                id: mid("u"),
                content: UserContent::Text("hi".into()),
                name: None,
            }],
            sampling: crate::model::Sampling {
                temperature: Some(0.2),
                top_p: Some(0.9),
                max_tokens: Some(300),
                stop: vec!["END".into(), "STOP".into()],
                seed: Some(7),
            },
            ..ModelRequest::default()
        };
        let body = provider().body(&request);
        assert_eq!(body["temperature"], json!(0.2));
        assert_eq!(body["top_p"], json!(0.9));
        assert_eq!(body["max_tokens"], json!(300));
        assert_eq!(body["stop"], json!(["END", "STOP"]));
        assert_eq!(body["seed"], json!(7));
        let plain = provider().body(&ModelRequest::default());
        for key in ["temperature", "top_p", "max_tokens", "stop", "seed"] {
            assert!(plain.get(key).is_none(), "{key} sent unset");
        }
    }

    #[test]
    fn a_forced_tool_is_named_in_tool_choice() {
        let request = ModelRequest {
            tools: vec![crate::model::ToolSpec {
                name: "copilotkitSuggest".into(),
                description: "Suggest what the user could say next".into(),
                parameters: json!({"type": "object", "properties": {}}),
            }],
            tool_choice: Some("copilotkitSuggest".into()),
            ..ModelRequest::default()
        };
        assert_eq!(
            provider().body(&request)["tool_choice"],
            json!({"type": "function", "function": {"name": "copilotkitSuggest"}})
        );
        assert!(
            provider()
                .body(&ModelRequest::default())
                .get("tool_choice")
                .is_none()
        );
    }

    #[test]
    fn the_summary_follows_the_system_prompt_and_the_cache_key_is_the_threads() {
        let request = ModelRequest {
            system: Some("Be brief.".into()),
            summary: Some("Summary: the user is Sam.".into()),
            cache_key: Some("thread-1".into()),
            ..ModelRequest::default()
        };
        let body = provider().body(&request);
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "Be brief.\n\nSummary: the user is Sam."})
        );
        assert_eq!(body["prompt_cache_key"], json!("thread-1"));
        let other_server = OpenAiProvider::new(
            reqwest::Client::new(),
            OpenAiSettings {
                prompt_cache_key: false,
                ..provider().settings
            },
        );
        assert!(
            other_server
                .body(&request)
                .get("prompt_cache_key")
                .is_none()
        );
        assert!(is_openai_itself("https://api.openai.com/v1"));
        assert!(!is_openai_itself("https://api.groq.com/openai/v1"));
        assert!(!is_openai_itself("http://127.0.0.1:8080/v1"));
    }

    #[test]
    fn reasoning_messages_are_not_sent_back_and_parts_are_mapped() {
        let request = ModelRequest {
            messages: vec![
                Message::User {
                    id: mid("u"),
                    content: UserContent::Parts(vec![
                        UserPart::Text {
                            text: "read this".into(),
                        },
                        UserPart::Document(crate::protocol::Attachment {
                            source: crate::protocol::PartSource::Data {
                                value: "JVBERi0=".into(),
                                mime_type: "application/pdf".into(),
                            },
                            metadata: None,
                        }),
                    ]),
                    name: None,
                },
                Message::Reasoning {
                    id: mid("r"),
                    content: "thinking".into(),
                    encrypted_value: Some("signature:x".into()),
                },
                Message::Assistant {
                    id: mid("a"),
                    content: Some("Done.".into()),
                    tool_calls: Vec::new(),
                    name: None,
                    encrypted_value: None,
                },
            ],
            ..ModelRequest::default()
        };
        let body = provider().body(&request);
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant"]);
        assert_eq!(
            body["messages"][0]["content"][1],
            json!({"type": "file", "file": {"filename": "document.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}})
        );
    }
}
