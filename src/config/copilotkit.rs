//! The CopilotKit section: what the function's CopilotKit runtime (`/copilotkit`) serves beyond
//! runs and threads: dynamic suggestions (`COPILOTKIT_SUGGESTIONS`) and voice input through a
//! transcription model (`TRANSCRIPTION_*`, OpenAI's audio transcriptions API or one like it).

use super::vars::Vars;
use super::{ConfigError, Section};
use secrecy::SecretString;

/// OpenAI's API, where a transcription model is by default.
const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

#[derive(Debug, Clone)]
pub struct CopilotKitConfig {
    /// `COPILOTKIT_SUGGESTIONS`: `POST /copilotkit/agent/{id}/suggest` is answered (the model
    /// answers CopilotKit's suggestion tool, nothing stored). Off, CopilotKit runs its
    /// suggestions as runs on throwaway threads.
    pub suggestions: bool,
    /// `TRANSCRIPTION_MODEL` and its endpoint: voice input is served when set.
    pub transcription: Option<TranscriptionConfig>,
}

/// The transcription model behind `POST /copilotkit/transcribe`.
#[derive(Debug, Clone)]
pub struct TranscriptionConfig {
    /// `TRANSCRIPTION_MODEL`, e.g. `gpt-4o-mini-transcribe` or `whisper-1`.
    pub model: String,
    /// `TRANSCRIPTION_BASE_URL`, else `OPENAI_BASE_URL`, else OpenAI's API.
    pub base_url: String,
    /// `TRANSCRIPTION_API_KEY`; unset, the OpenAI key the model provider uses (`OPENAI_API_KEY`
    /// or its secret), when it has one.
    pub api_key: Option<SecretString>,
    /// `TRANSCRIPTION_MAX_BYTES`: the largest recording taken.
    pub max_bytes: usize,
}

impl Section for CopilotKitConfig {
    const SETTINGS: &'static [&'static str] = &[
        "COPILOTKIT_SUGGESTIONS",
        "TRANSCRIPTION_MODEL",
        "TRANSCRIPTION_BASE_URL",
        "TRANSCRIPTION_API_KEY",
        "TRANSCRIPTION_MAX_BYTES",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        let transcription = match vars.text("TRANSCRIPTION_MODEL") {
            None => None,
            Some(model) => Some(TranscriptionConfig {
                model,
                base_url: match vars.http_endpoint("TRANSCRIPTION_BASE_URL")? {
                    Some(url) => url,
                    None => vars
                        .http_endpoint("OPENAI_BASE_URL")?
                        .unwrap_or_else(|| OPENAI_BASE_URL.to_owned()),
                },
                api_key: vars.text("TRANSCRIPTION_API_KEY").map(SecretString::from),
                // 4 MiB: a Function URL takes a 6 MB request, a binary body base64-encoded.
                max_bytes: vars.bounded(
                    "TRANSCRIPTION_MAX_BYTES",
                    4 * 1024 * 1024,
                    1024..=25 * 1024 * 1024,
                )?,
            }),
        };
        Ok(Self {
            suggestions: vars.flag("COPILOTKIT_SUGGESTIONS", true)?,
            transcription,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::tests::config;

    #[test]
    fn suggestions_are_on_and_voice_input_off_unless_configured() {
        let defaults = config(&[]).unwrap().copilotkit;
        assert!(defaults.suggestions);
        assert!(defaults.transcription.is_none());
        let off = config(&[("COPILOTKIT_SUGGESTIONS", "false")]).unwrap();
        assert!(!off.copilotkit.suggestions);

        let voice = config(&[
            ("TRANSCRIPTION_MODEL", "gpt-4o-mini-transcribe"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ])
        .unwrap()
        .copilotkit
        .transcription
        .unwrap();
        assert_eq!(voice.model, "gpt-4o-mini-transcribe");
        assert_eq!(voice.base_url, "http://127.0.0.1:9/v1");
        assert!(voice.api_key.is_none());
        assert_eq!(voice.max_bytes, 4 * 1024 * 1024);
        let own = config(&[
            ("TRANSCRIPTION_MODEL", "whisper-1"),
            ("TRANSCRIPTION_BASE_URL", "https://api.groq.com/openai/v1"),
            ("TRANSCRIPTION_API_KEY", "gsk-1"),
            ("TRANSCRIPTION_MAX_BYTES", "2000000"),
        ])
        .unwrap()
        .copilotkit
        .transcription
        .unwrap();
        assert_eq!(own.base_url, "https://api.groq.com/openai/v1");
        assert!(own.api_key.is_some());
        assert_eq!(own.max_bytes, 2_000_000);
        let err = config(&[
            ("TRANSCRIPTION_MODEL", "whisper-1"),
            ("TRANSCRIPTION_MAX_BYTES", "100"),
        ])
        .unwrap_err();
        assert!(
            err.to_string().starts_with("TRANSCRIPTION_MAX_BYTES"),
            "{err}"
        );
    }
}
