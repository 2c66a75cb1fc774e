//! Building responses: JSON bodies, refusals and their headers (CopilotKit's voice input's in
//! its own shape), SSE streams with the run's ids, CORS headers and the preflight answer.

use super::body::ResponseBody;
use super::error::ApiError;
use crate::dialects::copilotkit::{TranscriptionCode, transcription_error};
use crate::protocol::{RunId, ThreadId, sse};
use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};

pub(super) fn json_response(status: StatusCode, body: Bytes) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub(crate) fn error_response(error: &ApiError) -> Response<ResponseBody> {
    let mut response = json_response(error.status(), error.body());
    refusal_headers(&mut response, error);
    response
}

/// The headers a refusal carries whatever its body's shape.
pub(super) fn refusal_headers(response: &mut Response<ResponseBody>, error: &ApiError) {
    if matches!(error, ApiError::Unauthorized(_)) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if let Some(secs) = error.retry_after_secs() {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    if let Some(allow) = error
        .allowed_methods()
        .and_then(|methods| HeaderValue::from_str(&methods).ok())
    {
        response.headers_mut().insert(header::ALLOW, allow);
    }
}

pub(super) fn add_cors(response: &mut Response<ResponseBody>, origin: Option<HeaderValue>) {
    if let Some(origin) = origin {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("x-thread-id, x-run-id, x-trace-id, retry-after"),
        );
        headers.append(header::VARY, HeaderValue::from_static("origin"));
    }
}

pub(super) fn preflight(allowed: bool) -> Response<ResponseBody> {
    if !allowed {
        let error = ApiError::NotFound("OPTIONS".to_owned());
        return error_response(&error);
    }
    let mut response = Response::new(ResponseBody::full(Bytes::new()));
    *response.status_mut() = StatusCode::NO_CONTENT;
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, PATCH, DELETE, OPTIONS"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, accept, last-event-id"),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    response
}

/// An SSE response with the run's ids in headers.
pub(super) fn sse_response(
    frames: impl futures_util::Stream<Item = Bytes> + Send + 'static,
    thread_id: &ThreadId,
    run_id: &RunId,
    agkit: bool,
) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::stream(frames));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(sse::CONTENT_TYPE),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(thread_id.as_str()) {
        if agkit {
            headers.insert("x-conversation-id", value.clone());
        }
        headers.insert("x-thread-id", value);
    }
    if let Ok(value) = HeaderValue::from_str(run_id.as_str()) {
        headers.insert("x-run-id", value);
    }
    response
}

/// A refusal of the transcription route made before it is answered (authentication, a body
/// too large, a server stopping), in the shape CopilotKit's chat reads, at our status.
pub(crate) fn transcription_refusal(error: &ApiError) -> Response<ResponseBody> {
    let code = match error.status() {
        StatusCode::PAYLOAD_TOO_LARGE => TranscriptionCode::AudioTooLong,
        StatusCode::TOO_MANY_REQUESTS => TranscriptionCode::RateLimited,
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => TranscriptionCode::AuthFailed,
        status if status.is_server_error() => TranscriptionCode::ProviderError,
        _ => TranscriptionCode::InvalidRequest,
    };
    let body = transcription_error(code, &error.to_string());
    let mut response = json_response(error.status(), Bytes::from(body.to_string()));
    refusal_headers(&mut response, error);
    response
}
