//! A strict stand-in of OpenAI's audio transcriptions API on loopback
//! (`POST /v1/audio/transcriptions`): the bearer key, a multipart form with a `file` whose
//! extension names a format it reads and a `model` it serves, no field it does not know, and
//! OpenAI's own refusals (400 for a bad form or format, 401, 413 past its size limit, 429). It
//! transcribes nothing: the transcript says what it received, so a test sees what was sent.

use super::loopback;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// The formats the API reads, by the file name's extension.
const EXTENSIONS: [&str; 10] = [
    "flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm",
];
const MODELS: [&str; 3] = ["whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe"];
/// The fields the API takes besides `file` and `model`.
const OPTIONAL_FIELDS: [&str; 6] = [
    "language",
    "prompt",
    "response_format",
    "temperature",
    "timestamp_granularities[]",
    "chunking_strategy",
];
/// Audio that begins so is answered 429, to test the rate limit.
pub(crate) const RATE_LIMITED_AUDIO: &[u8] = b"RATE LIMIT ME";

/// One transcription the stand-in served.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Heard {
    pub filename: String,
    pub content_type: String,
    pub model: String,
    pub bytes: usize,
}

pub(crate) struct StrictTranscriptions {
    /// Up to and including `/v1`.
    pub base_url: String,
    pub heard: Arc<Mutex<Vec<Heard>>>,
    _server: tokio::task::JoinHandle<()>,
}

impl StrictTranscriptions {
    /// Serves with `key` as its API key and `max_bytes` as its upload limit (OpenAI's: 25 MB).
    pub(crate) async fn start(key: &str, max_bytes: usize) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let heard = Arc::new(Mutex::new(Vec::new()));
        let key = Arc::new(format!("Bearer {key}"));
        let log = heard.clone();
        let server = loopback::serve(listener, move |request: hyper::Request<Incoming>| {
            let (key, log) = (key.clone(), log.clone());
            async move {
                let (status, body) = answer(request, &key, max_bytes, &log).await;
                hyper::Response::builder()
                    .status(status)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(body.to_string())))
                    .unwrap()
            }
        });
        Self {
            base_url,
            heard,
            _server: server,
        }
    }
}

fn refusal(message: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}})
}

async fn answer(
    request: hyper::Request<Incoming>,
    key: &str,
    max_bytes: usize,
    log: &Mutex<Vec<Heard>>,
) -> (u16, Value) {
    if request.method() != hyper::Method::POST || request.uri().path() != "/v1/audio/transcriptions"
    {
        return (404, refusal("Invalid URL", None));
    }
    let authorized = request
        .headers()
        .get("authorization")
        .is_some_and(|value| value.as_bytes() == key.as_bytes());
    if !authorized {
        return (
            401,
            refusal("Incorrect API key provided.", Some("invalid_api_key")),
        );
    }
    let boundary = request
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| multer::parse_boundary(value).ok());
    let Some(boundary) = boundary else {
        return (400, refusal("Could not parse multipart form", None));
    };
    let body = request.into_body().collect().await.unwrap().to_bytes();
    if body.len() > max_bytes {
        return (
            413,
            refusal(
                &format!(
                    "Maximum content size limit ({max_bytes}) exceeded ({} bytes read)",
                    body.len()
                ),
                None,
            ),
        );
    }
    let form = match read_form(body, boundary).await {
        Ok(form) => form,
        Err(message) => return (400, refusal(&message, None)),
    };
    transcribe(form, log)
}

/// The form's file (name, type, bytes) and its model.
struct Form {
    file: Option<(String, String, Bytes)>,
    model: Option<String>,
}

async fn read_form(body: Bytes, boundary: String) -> Result<Form, String> {
    let stream = futures_util::stream::once(async move { Ok::<_, std::io::Error>(body) });
    let mut multipart = multer::Multipart::new(stream, boundary);
    let mut form = Form {
        file: None,
        model: None,
    };
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|_| "Could not parse multipart form".to_owned())?
    {
        let name = field.name().unwrap_or_default().to_owned();
        match name.as_str() {
            "file" => {
                let filename = field.file_name().unwrap_or_default().to_owned();
                let content_type = field
                    .content_type()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                let bytes = field.bytes().await.map_err(|error| error.to_string())?;
                form.file = Some((filename, content_type, bytes));
            }
            "model" => form.model = Some(field.text().await.map_err(|error| error.to_string())?),
            other if OPTIONAL_FIELDS.contains(&other) => {}
            other => return Err(format!("Unrecognized request argument supplied: {other}")),
        }
    }
    Ok(form)
}

fn transcribe(form: Form, log: &Mutex<Vec<Heard>>) -> (u16, Value) {
    let Some(model) = form.model else {
        return (400, refusal("you must provide a model parameter", None));
    };
    if !MODELS.contains(&model.as_str()) {
        return (
            404,
            refusal(
                &format!("The model `{model}` does not exist or you do not have access to it."),
                Some("model_not_found"),
            ),
        );
    }
    let Some((filename, content_type, bytes)) = form.file else {
        return (400, refusal("file is a required property", None));
    };
    let extension = filename
        .rsplit_once('.')
        .map(|(_, extension)| extension.to_owned());
    if !extension
        .as_deref()
        .is_some_and(|extension| EXTENSIONS.contains(&extension))
    {
        return (
            400,
            refusal(
                "Invalid file format. Supported formats: ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']",
                None,
            ),
        );
    }
    if bytes.len() < 8 {
        return (
            400,
            refusal(
                "Audio file is too short. Minimum audio length is 0.1 seconds.",
                Some("audio_too_short"),
            ),
        );
    }
    if bytes.starts_with(RATE_LIMITED_AUDIO) {
        return (
            429,
            refusal(
                "Rate limit reached for requests",
                Some("rate_limit_exceeded"),
            ),
        );
    }
    let heard = Heard {
        filename,
        content_type,
        model,
        bytes: bytes.len(),
    };
    let text = format!(
        "I heard {} bytes of {} audio.",
        heard.bytes,
        extension.unwrap_or_default()
    );
    log.lock().unwrap().push(heard);
    (
        200,
        json!({"text": text, "usage": {"type": "duration", "seconds": 1}}),
    )
}
