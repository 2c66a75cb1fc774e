//! `POST /transcribe`: voice input, forwarded to the configured transcription model. CopilotKit
//! sends the recording as the `audio` field of a multipart form (REST), or as base64 JSON
//! `{"audio", "mimeType", "filename"?}` (the single route). Answers `{"text", "size", "type"}`;
//! refusals take CopilotKit's `TranscriptionErrorResponse` shape, whose code its chat turns into
//! words, at our status.

use super::super::app::App;
use super::super::body::ResponseBody;
use super::super::error::ApiError;
use super::super::response::json_response;
// TEMPORARY until the agent holds the transcriber (src/agent/ is frozen for a refactor).
use crate::agent::{Audio, Transcriber, TranscriptionError};
use crate::dialects::copilotkit::{TranscriptionCode, transcription_error};
use base64::Engine;
use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use serde::Deserialize;
use serde_json::json;

/// A recording refused before it reaches the model, or the model's refusal.
struct Refusal {
    status: StatusCode,
    code: TranscriptionCode,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, code: TranscriptionCode, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    fn invalid(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            TranscriptionCode::InvalidRequest,
            message,
        )
    }

    fn response(&self) -> Response<ResponseBody> {
        let body = transcription_error(self.code, &self.message);
        json_response(self.status, Bytes::from(body.to_string()))
    }
}

/// The single route's JSON body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Base64Audio {
    audio: String,
    mime_type: String,
    #[serde(default, rename = "filename")]
    _filename: Option<String>,
}

impl App {
    pub(super) async fn transcribe(
        &self,
        request: &Request<Bytes>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let answer = match self.copilotkit.transcription_max_bytes {
            None => Err(Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                TranscriptionCode::ServiceNotConfigured,
                "Transcription service is not configured (TRANSCRIPTION_MODEL)",
            )),
            Some(max_bytes) => self.transcribed(request, max_bytes).await,
        };
        Ok(answer.unwrap_or_else(|refusal| {
            tracing::info!(code = ?refusal.code, message = %refusal.message, "transcription refused");
            refusal.response()
        }))
    }

    async fn transcribed(
        &self,
        request: &Request<Bytes>,
        max_bytes: usize,
    ) -> Result<Response<ResponseBody>, Refusal> {
        let audio = recording(request, max_bytes).await?;
        let size = audio.bytes.len();
        let kind = audio.mime_type.clone();
        let text = self
            .agent
            .transcribe(&audio)
            .await
            .map_err(|error| model_refusal(&error))?;
        let body = json!({"text": text, "size": size, "type": kind});
        Ok(json_response(StatusCode::OK, Bytes::from(body.to_string())))
    }
}

/// The recording a request carries, checked: present, not empty, not too large, of a format the
/// model reads.
async fn recording(request: &Request<Bytes>, max_bytes: usize) -> Result<Audio, Refusal> {
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let (bytes, mime_type) = match essence.as_str() {
        "multipart/form-data" => {
            form_audio(request.body().clone(), content_type, max_bytes).await?
        }
        "application/json" | "" => json_audio(request.body())?,
        _ => {
            return Err(Refusal::invalid(
                "Request must be multipart/form-data or application/json with base64 audio",
            ));
        }
    };
    if bytes.len() > max_bytes {
        return Err(too_long(max_bytes));
    }
    if bytes.is_empty() {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            TranscriptionCode::AudioTooShort,
            "The recording is empty",
        ));
    }
    // Browsers may send no type, or a generic one: CopilotKit records WebM.
    let mime_type = match mime_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
    {
        empty if empty.is_empty() || empty == "application/octet-stream" => "audio/webm".to_owned(),
        known if Transcriber::takes(&known) => known,
        other => {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                TranscriptionCode::InvalidAudioFormat,
                format!(
                    "Unsupported audio format: {other}. Supported: {}",
                    Transcriber::formats().join(", ")
                ),
            ));
        }
    };
    Ok(Audio { bytes, mime_type })
}

fn too_long(max_bytes: usize) -> Refusal {
    Refusal::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        TranscriptionCode::AudioTooLong,
        format!("The recording is larger than {max_bytes} bytes"),
    )
}

/// The `audio` field of a multipart form: its bytes and its type.
async fn form_audio(
    body: Bytes,
    content_type: &str,
    max_bytes: usize,
) -> Result<(Bytes, String), Refusal> {
    let boundary = multer::parse_boundary(content_type)
        .map_err(|_| Refusal::invalid("The multipart form names no boundary"))?;
    let constraints = multer::Constraints::new()
        .allowed_fields(vec!["audio"])
        .size_limit(multer::SizeLimit::new().for_field("audio", max_bytes as u64));
    let stream = futures_util::stream::once(async move { Ok::<_, std::convert::Infallible>(body) });
    let mut form = multer::Multipart::with_constraints(stream, boundary, constraints);
    let mut audio = None;
    loop {
        let field = match form.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(multer::Error::FieldSizeExceeded { .. }) => return Err(too_long(max_bytes)),
            Err(error) => return Err(Refusal::invalid(format!("The multipart form: {error}"))),
        };
        let mime_type = field
            .content_type()
            .map(ToString::to_string)
            .unwrap_or_default();
        match field.bytes().await {
            Ok(bytes) => audio = Some((bytes, mime_type)),
            Err(multer::Error::FieldSizeExceeded { .. }) => return Err(too_long(max_bytes)),
            Err(error) => return Err(Refusal::invalid(format!("The multipart form: {error}"))),
        }
    }
    audio.ok_or_else(|| {
        Refusal::invalid("No audio file found in form data. Please include an 'audio' field.")
    })
}

/// The single route's base64 recording (a data URL's prefix taken off).
fn json_audio(body: &[u8]) -> Result<(Bytes, String), Refusal> {
    let audio: Base64Audio = serde_json::from_slice(body).map_err(|_| {
        Refusal::invalid("Request must include 'audio' (base64) and 'mimeType' (e.g. 'audio/webm')")
    })?;
    let data = audio
        .audio
        .split_once(',')
        .map_or(audio.audio.as_str(), |(_, data)| data);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|_| Refusal::invalid("Failed to decode base64 audio data"))?;
    Ok((Bytes::from(bytes), audio.mime_type))
}

/// The model's failure as CopilotKit's client reads it. Its own credentials are never the
/// caller's fault: a 502, not a 401.
fn model_refusal(error: &TranscriptionError) -> Refusal {
    let message = error.to_string();
    let (status, code) = match error {
        TranscriptionError::Refused(detail) if detail.to_lowercase().contains("too short") => {
            (StatusCode::BAD_REQUEST, TranscriptionCode::AudioTooShort)
        }
        TranscriptionError::Refused(detail) if detail.to_lowercase().contains("format") => (
            StatusCode::BAD_REQUEST,
            TranscriptionCode::InvalidAudioFormat,
        ),
        TranscriptionError::TooLarge(_) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            TranscriptionCode::AudioTooLong,
        ),
        TranscriptionError::RateLimited => (
            StatusCode::TOO_MANY_REQUESTS,
            TranscriptionCode::RateLimited,
        ),
        TranscriptionError::AuthFailed => (StatusCode::BAD_GATEWAY, TranscriptionCode::AuthFailed),
        TranscriptionError::Unreachable(_) => {
            (StatusCode::BAD_GATEWAY, TranscriptionCode::NetworkError)
        }
        TranscriptionError::Refused(_) | TranscriptionError::Failed(_) => {
            (StatusCode::BAD_GATEWAY, TranscriptionCode::ProviderError)
        }
    };
    tracing::warn!(%error, "the transcription model failed");
    Refusal::new(status, code, message)
}
