//! `POST /transcribe`: voice input, forwarded to the configured transcription model. Refusals
//! take CopilotKit's `TranscriptionErrorResponse` shape, whose code its chat turns into words.

use super::super::app::App;
use super::super::body::ResponseBody;
use super::super::error::ApiError;
use super::super::response::json_response;
use crate::dialects::copilotkit::{TranscriptionCode, transcription_error};
use bytes::Bytes;
use http::{Request, Response, StatusCode};

impl App {
    pub(super) async fn transcribe(
        &self,
        _request: &Request<Bytes>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let body = transcription_error(
            TranscriptionCode::ServiceNotConfigured,
            "Transcription service is not configured (TRANSCRIPTION_MODEL)",
        );
        Ok(json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            Bytes::from(body.to_string()),
        ))
    }
}
