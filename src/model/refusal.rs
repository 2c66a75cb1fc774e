//! What a provider said when it refused a request: its own error code and message (trimmed,
//! for the run's error), whether it refused because the prompt is longer than the model's
//! context window, however the provider words that, and the window it named, if it did.

/// The longest provider message a run's error repeats, in characters.
const MAX_MESSAGE_CHARS: usize = 300;

/// Phrases providers use for a prompt over the window, lower-cased: OpenAI (Chat Completions
/// and Responses), Anthropic, Gemini, Bedrock's models (its `ValidationException`), vLLM,
/// SGLang, llama.cpp and Ollama, and gateways that pass those on (LiteLLM names its own error).
const OVERFLOW_PHRASES: &[&str] = &[
    "maximum context length",
    "context length exceeded",
    "context_length_exceeded",
    "contextwindowexceedederror",
    "exceed_context_size_error",
    "exceeds the available context size",
    "exceeds the context",
    "exceed context limit",
    "exceeds the maximum number of tokens allowed",
    "longer than the maximum model length",
    "longer than the model's context length",
    "longer than the context length",
    "input tokens exceed the configured limit",
    "input is too long",
    "prompt is too long",
    "too many input tokens",
    "too many total text bytes",
];

/// Where providers name the window in an overflow message, lower-cased: the words before the
/// number and after it.
const WINDOW_WORDING: &[(&str, &str)] = &[
    // OpenAI, vLLM, OpenRouter, Bedrock's Llama: "maximum context length is 8192 tokens".
    ("maximum context length is ", " tokens"),
    // llama.cpp, Ollama with `truncate: false`: "exceeds the available context size (8192 tokens)".
    ("context size (", " tokens)"),
    // SGLang: "is longer than the model's context length (8192 tokens)".
    ("context length (", " tokens)"),
    // vLLM: "is longer than the maximum model length of 8192."
    ("maximum model length of ", "."),
    // Gemini: "exceeds the maximum number of tokens allowed (1048576)".
    ("tokens allowed (", ")"),
    // OpenAI: "Input tokens exceed the configured limit of 272000 tokens."
    ("configured limit of ", " tokens"),
    // Mistral: "too large for model with 32768 maximum context length".
    ("model with ", " maximum context length"),
];

/// A provider's refusal, as much as it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The provider's machine-readable code (`context_length_exceeded`, an exception name).
    pub code: Option<String>,
    /// Its message, trimmed to [`MAX_MESSAGE_CHARS`].
    pub message: String,
    /// The window its whole message named (read before the message was trimmed).
    window: Option<u32>,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.code {
            Some(code) if !self.message.is_empty() => write!(f, "{code}: {}", self.message),
            Some(code) => f.write_str(code),
            None => f.write_str(&self.message),
        }
    }
}

impl Refusal {
    pub fn new(code: Option<String>, message: &str) -> Self {
        let message = message.trim();
        let mut trimmed: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
        if trimmed.len() < message.len() {
            trimmed.push('…');
        }
        Self {
            code: code.filter(|code| !code.is_empty()),
            message: trimmed,
            window: named_window(message),
        }
    }

    /// From an OpenAI-compatible error body: `{"error": {"message", "type", "code"}}` (OpenAI,
    /// llama.cpp, vLLM), the flat `{"message", "type", "code"}` of older vLLM, `{"error": "…"}`
    /// (Ollama), or plain text. `None` for an empty body.
    pub fn from_body(body: &str) -> Option<Self> {
        let body = body.trim();
        if body.is_empty() {
            return None;
        }
        let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
            return Some(Self::new(None, body));
        };
        // Gemini's OpenAI-compatible endpoint answers a list of one error.
        let value = match value {
            serde_json::Value::Array(mut errors) if !errors.is_empty() => errors.swap_remove(0),
            other => other,
        };
        let error = value.get("error").unwrap_or(&value);
        if let Some(text) = error.as_str() {
            return Some(Self::new(None, text));
        }
        let field = |name: &str| {
            error.get(name).and_then(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .or_else(|| v.as_u64().map(|n| n.to_string()))
            })
        };
        // OpenAI's `code` names the case; llama.cpp's is the HTTP status and its `type` does.
        let code = match (field("code"), field("type").or_else(|| field("status"))) {
            (Some(code), _) if code.parse::<u16>().is_err() => Some(code),
            (_, Some(kind)) => Some(kind),
            (code, None) => code,
        };
        Some(Self::new(code, &field("message").unwrap_or_default()))
    }

    /// The provider refused because the prompt does not fit the model's context window.
    pub fn is_context_overflow(&self) -> bool {
        let code = self
            .code
            .as_deref()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let message = self.message.to_ascii_lowercase();
        // "The maximum tokens you requested exceeds the model limit" is about the answer's cap.
        if message.contains("maximum tokens you requested") {
            return false;
        }
        OVERFLOW_PHRASES
            .iter()
            .any(|phrase| code.contains(phrase) || message.contains(phrase))
    }

    /// The window the provider named, when it did ("maximum context length is 8192 tokens",
    /// "… > 200000 maximum", llama.cpp's "context size (8192 tokens)").
    pub fn window(&self) -> Option<u32> {
        self.window
    }
}

/// The window an overflow message names, if it names one.
fn named_window(message: &str) -> Option<u32> {
    let message = message.to_ascii_lowercase();
    for (before, after) in WINDOW_WORDING {
        if let Some(number) = between(&message, before, after) {
            return Some(number);
        }
    }
    // Anthropic: "prompt is too long: 200049 tokens > 200000 maximum", and "input length and
    // `max_tokens` exceed context limit: 198437 + 8192 > 200000".
    let (_, rest) = message.split_once(" > ")?;
    rest.split(|c: char| !c.is_ascii_digit() && c != ',')
        .next()?
        .replace(',', "")
        .parse()
        .ok()
}

fn between(text: &str, before: &str, after: &str) -> Option<u32> {
    let start = text.find(before)? + before.len();
    let rest = &text[start..];
    let end = rest.find(after).unwrap_or(rest.len());
    rest[..end].trim().replace(',', "").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_names_the_overflow_by_its_code_and_the_window_in_its_message() {
        let refusal = Refusal::from_body(
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9100 tokens (8100 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        )
        .unwrap();
        assert_eq!(refusal.code.as_deref(), Some("context_length_exceeded"));
        assert!(refusal.is_context_overflow());
        assert_eq!(refusal.window(), Some(8_192));
        assert!(
            refusal
                .to_string()
                .starts_with("context_length_exceeded: This model's maximum")
        );
    }

    #[test]
    fn llama_cpp_vllm_and_bedrock_overflows_are_recognised() {
        let llama = Refusal::from_body(
            r#"{"error":{"code":400,"message":"request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":13392,"n_ctx":8192}}"#,
        )
        .unwrap();
        assert_eq!(llama.code.as_deref(), Some("exceed_context_size_error"));
        assert!(llama.is_context_overflow());
        assert_eq!(llama.window(), Some(8_192));
        let vllm = Refusal::from_body(
            r#"{"object":"error","message":"The decoder prompt (length 12324) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens.","type":"BadRequestError","code":400}"#,
        )
        .unwrap();
        assert!(vllm.is_context_overflow());
        assert_eq!(vllm.window(), Some(8_192));
        let bedrock = Refusal::new(
            Some("ValidationException".to_owned()),
            "The model returned the following errors: prompt is too long: 200049 tokens > 200000 maximum",
        );
        assert!(bedrock.is_context_overflow());
        assert_eq!(bedrock.window(), Some(200_000));
        assert!(Refusal::new(None, "Input is too long for requested model.").is_context_overflow());
    }

    #[test]
    fn each_providers_overflow_is_recognised_with_the_window_it_names() {
        let named = |body: &str| {
            let refusal = Refusal::from_body(body).unwrap();
            assert!(refusal.is_context_overflow(), "{body}");
            refusal.window()
        };
        // Gemini, with and without the count.
        assert_eq!(
            named(
                r#"[{"error":{"code":400,"message":"The input token count (3475108) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]"#
            ),
            Some(1_048_576)
        );
        assert_eq!(
            named(
                r#"{"error":{"code":400,"message":"The input token count exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#
            ),
            Some(1_048_576)
        );
        // OpenAI's Responses API names no window; its newer models name their input limit.
        assert_eq!(
            named(
                r#"{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}"#
            ),
            None
        );
        assert_eq!(
            named(
                r#"{"error":{"message":"Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 272399 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#
            ),
            Some(272_000)
        );
        // Anthropic when the answer's cap does not fit beside the prompt.
        assert_eq!(
            named(
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 179413 + 32768 > 200000, decrease input length or `max_tokens` and try again"}}"#
            ),
            Some(200_000)
        );
        // SGLang; Ollama (`truncate: false` passes llama.cpp's words on, `shift: false` its own).
        assert_eq!(
            named(
                r#"{"object":"error","message":"The input (9120 tokens) is longer than the model's context length (8192 tokens).","type":"BadRequestError","code":400}"#
            ),
            Some(8_192)
        );
        assert_eq!(
            named(
                r#"{"error":"{\"error\":{\"code\":400,\"message\":\"request (8889 tokens) exceeds the available context size (4096 tokens), try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":8889,\"n_ctx\":4096}}"}"#
            ),
            Some(4_096)
        );
        assert_eq!(
            named(
                r#"{"error":"the prompt is longer than the context length currently available to the model"}"#
            ),
            None
        );
        // LiteLLM's proxy wraps the provider's words in its own, past the trimmed message.
        let wrapped = format!(
            r#"{{"error":{{"message":"litellm.BadRequestError: litellm.ContextWindowExceededError: {}AnthropicError - prompt is too long: 209303 tokens > 200000 maximum","type":null,"param":null,"code":"400"}}}}"#,
            "Received Model Group=claude. ".repeat(12)
        );
        assert_eq!(named(&wrapped), Some(200_000));
        // Mistral on Bedrock.
        let mistral = Refusal::new(
            Some("ValidationException".to_owned()),
            "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
        );
        assert!(mistral.is_context_overflow());
        assert_eq!(mistral.window(), Some(32_768));
    }

    #[test]
    fn gemini_answers_a_list_and_its_status_names_the_case() {
        let refusal = Refusal::from_body(
            r#"[{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts.","status":"INVALID_ARGUMENT"}}]"#,
        )
        .unwrap();
        assert_eq!(
            refusal.message,
            "Function call is missing a thought_signature in functionCall parts."
        );
        assert_eq!(refusal.code.as_deref(), Some("INVALID_ARGUMENT"));
    }

    #[test]
    fn other_refusals_are_not_overflows_and_long_messages_are_trimmed() {
        let cap = Refusal::new(
            Some("ValidationException".to_owned()),
            "The maximum tokens you requested exceeds the model limit of 32768.",
        );
        assert!(!cap.is_context_overflow());
        let auth = Refusal::from_body(r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#).unwrap();
        assert!(!auth.is_context_overflow());
        assert_eq!(
            auth.to_string(),
            "invalid_api_key: Incorrect API key provided"
        );
        let long = Refusal::new(None, &"x".repeat(1_000));
        assert_eq!(long.message.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert_eq!(Refusal::from_body("  "), None);
        assert_eq!(
            Refusal::from_body("bad gateway").unwrap().message,
            "bad gateway"
        );
        assert_eq!(
            Refusal::from_body(r#"{"error":"the input length exceeds the context length"}"#)
                .unwrap()
                .code,
            None
        );
    }
}
