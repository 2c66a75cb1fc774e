//! Speech to text for voice input: OpenAI's audio transcriptions API
//! (`POST {base}/audio/transcriptions`, a multipart form with the `file` and the `model`, answered
//! `{"text"}`), and any server that speaks it (Groq, a local Whisper server). The form is written
//! here: a file and two fields need no multipart library.

use bytes::Bytes;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use std::time::Duration;

/// The formats the transcriptions API takes, by the file name's extension it reads them from.
const FORMATS: [(&str, &str); 9] = [
    ("audio/webm", "webm"),
    ("audio/mpeg", "mp3"),
    ("audio/mp3", "mp3"),
    ("audio/mp4", "m4a"),
    ("audio/m4a", "m4a"),
    ("audio/x-m4a", "m4a"),
    ("audio/wav", "wav"),
    ("audio/ogg", "ogg"),
    ("audio/flac", "flac"),
];

/// How long a transcription may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Where the transcription model is and which one.
#[derive(Debug, Clone)]
pub struct TranscriptionSettings {
    /// Up to and including `/v1`, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub api_key: Option<SecretString>,
    /// `TRANSCRIPTION_MODEL`, e.g. `gpt-4o-mini-transcribe` or `whisper-1`.
    pub model: String,
}

/// A recording to transcribe.
#[derive(Debug, Clone)]
pub struct Audio {
    pub bytes: Bytes,
    /// Its media type without parameters, one [`Transcriber::takes`] accepts.
    pub mime_type: String,
}

/// Why a transcription failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranscriptionError {
    /// 400: the audio or the request (an unreadable file, a format it does not read).
    #[error("the transcription model refused the audio: {0}")]
    Refused(String),
    /// 413: longer or larger than the model takes.
    #[error("the audio is larger than the transcription model takes: {0}")]
    TooLarge(String),
    /// 401 or 403: the model's key.
    #[error("the transcription model refused this server's credentials")]
    AuthFailed,
    /// 429.
    #[error("the transcription model is rate limited; try again shortly")]
    RateLimited,
    /// 5xx, or an answer that is not a transcript.
    #[error("the transcription model failed: {0}")]
    Failed(String),
    /// No answer: the network, or the timeout.
    #[error("the transcription model could not be reached: {0}")]
    Unreachable(String),
}

/// The transcriptions API's answer, and its error body.
#[derive(Deserialize)]
struct Transcript {
    text: String,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    message: String,
}

/// A client of one transcription model.
pub struct Transcriber {
    http: reqwest::Client,
    settings: TranscriptionSettings,
    endpoint: String,
}

impl Transcriber {
    pub fn new(http: reqwest::Client, settings: TranscriptionSettings) -> Self {
        let endpoint = format!(
            "{}/audio/transcriptions",
            settings.base_url.trim_end_matches('/')
        );
        Self {
            http,
            settings,
            endpoint,
        }
    }

    /// Whether the model reads audio of `mime_type` (without parameters).
    pub fn takes(mime_type: &str) -> bool {
        extension(mime_type).is_some()
    }

    /// The media types the model reads, for a refusal to list.
    pub fn formats() -> Vec<&'static str> {
        FORMATS.iter().map(|(mime, _)| *mime).collect()
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "transcription by {} at {}",
            self.settings.model, self.endpoint
        )
    }

    /// The text spoken in `audio`.
    pub async fn transcribe(&self, audio: &Audio) -> Result<String, TranscriptionError> {
        let boundary = format!("agui-lambda-{}", uuid::Uuid::new_v4().simple());
        let body = form(&boundary, audio, &self.settings.model)?;
        let mut request = self
            .http
            .post(&self.endpoint)
            .header(
                reqwest::header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .timeout(TIMEOUT)
            .body(body);
        if let Some(key) = &self.settings.api_key {
            request = request.bearer_auth(key.expose_secret());
        }
        let response = request
            .send()
            .await
            .map_err(|error| TranscriptionError::Unreachable(error.to_string()))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|error| TranscriptionError::Unreachable(error.to_string()))?;
        if status.is_success() {
            return serde_json::from_slice::<Transcript>(&body)
                .map(|transcript| transcript.text)
                .map_err(|error| {
                    TranscriptionError::Failed(format!("its answer is not a transcript: {error}"))
                });
        }
        let message = serde_json::from_slice::<ErrorBody>(&body).map_or_else(
            |_| format!("HTTP {status}"),
            |refusal| refusal.error.message,
        );
        Err(match status.as_u16() {
            401 | 403 => TranscriptionError::AuthFailed,
            413 => TranscriptionError::TooLarge(message),
            429 => TranscriptionError::RateLimited,
            400..=499 => TranscriptionError::Refused(message),
            _ => TranscriptionError::Failed(message),
        })
    }
}

/// The file name's extension the API reads `mime_type` by.
fn extension(mime_type: &str) -> Option<&'static str> {
    FORMATS
        .iter()
        .find(|(mime, _)| mime.eq_ignore_ascii_case(mime_type))
        .map(|(_, extension)| *extension)
}

/// The multipart form: the recording as `file` (named so its extension tells the format) and
/// the `model`.
fn form(boundary: &str, audio: &Audio, model: &str) -> Result<Bytes, TranscriptionError> {
    let extension = extension(&audio.mime_type).ok_or_else(|| {
        TranscriptionError::Refused(format!(
            "{} is not an audio format it reads",
            audio.mime_type
        ))
    })?;
    let mut body = Vec::with_capacity(audio.bytes.len() + 512);
    let mut part = |headers: &str, content: &[u8]| {
        body.extend_from_slice(format!("--{boundary}\r\n{headers}\r\n\r\n").as_bytes());
        body.extend_from_slice(content);
        body.extend_from_slice(b"\r\n");
    };
    part(
        &format!(
            "Content-Disposition: form-data; name=\"file\"; filename=\"recording.{extension}\"\r\n\
             Content-Type: {}",
            audio.mime_type
        ),
        &audio.bytes,
    );
    part(
        "Content-Disposition: form-data; name=\"model\"",
        model.as_bytes(),
    );
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    Ok(Bytes::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_names_the_file_by_its_format() {
        let audio = Audio {
            bytes: Bytes::from_static(b"\x1aE\xdf\xa3 webm bytes"),
            mime_type: "audio/webm".into(),
        };
        let body = form("B", &audio, "gpt-4o-mini-transcribe").unwrap();
        let mut expected = b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"recording.webm\"\r\nContent-Type: audio/webm\r\n\r\n".to_vec();
        expected.extend_from_slice(b"\x1aE\xdf\xa3 webm bytes\r\n");
        expected.extend_from_slice(
            b"--B\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\ngpt-4o-mini-transcribe\r\n--B--\r\n",
        );
        assert_eq!(body.as_ref(), expected.as_slice());
        assert_eq!(extension("audio/mp4"), Some("m4a"));
        assert!(Transcriber::takes("AUDIO/MPEG"));
        assert!(!Transcriber::takes("video/webm"));
        assert!(matches!(
            form(
                "B",
                &Audio {
                    bytes: Bytes::new(),
                    mime_type: "text/plain".into()
                },
                "m"
            ),
            Err(TranscriptionError::Refused(_))
        ));
    }
}
