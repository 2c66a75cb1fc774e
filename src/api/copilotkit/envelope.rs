//! `POST /copilotkit`: CopilotKit's single-route transport. Each envelope is answered by the
//! REST route it names, as if the client had called that route with the caller's headers.

use super::super::app::App;
use super::super::body::ResponseBody;
use super::super::error::ApiError;
use super::{CopilotKitRoute, PREFIX};
use crate::auth::Principal;
use crate::dialects::copilotkit::envelope::{self, Call, EnvelopeError};
use bytes::Bytes;
use http::{Method, Request, Response};
use tokio::time::Instant;

impl App {
    pub(super) async fn single_route(
        &self,
        principal: Principal,
        request: Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let call = match envelope::parse(request.body()) {
            Ok(call) => call,
            Err(EnvelopeError::Body(error)) => return Err(error.into()),
            Err(EnvelopeError::UnknownMethod(method)) => {
                return Err(ApiError::NotFound(format!("{PREFIX} method {method}")));
            }
        };
        let (method, path, body) = match call {
            Call::Info => return Ok(self.runtime_info(true)),
            Call::Agent {
                agent_id,
                action,
                body,
            } => (
                Method::POST,
                format!("/agent/{}/{}", encoded(&agent_id), action.segment()),
                Some(body),
            ),
            Call::Stop {
                agent_id,
                thread_id,
                body,
            } => (
                Method::POST,
                format!("/agent/{}/stop/{}", encoded(&agent_id), encoded(&thread_id)),
                body,
            ),
            Call::Transcribe { body } => (Method::POST, "/transcribe".to_owned(), Some(body)),
            Call::Resource { path, method, body } => {
                let method = Method::from_bytes(method.as_bytes())
                    .map_err(|_| ApiError::UnreadableBody("httpMethod is not an HTTP method"))?;
                (method, path, body)
            }
        };
        let (route, inner) = inner_request(&request, method, &path, body)?;
        // Boxed: an envelope's route is never the envelope itself, but the compiler cannot know.
        Box::pin(self.copilotkit(principal, route, inner, invocation_deadline)).await
    }
}

/// The REST request an envelope stands for: `path` (with its query) under the prefix, the
/// envelope's headers, `body` as JSON.
fn inner_request(
    outer: &Request<Bytes>,
    method: Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> Result<(CopilotKitRoute, Request<Bytes>), ApiError> {
    let uri: http::Uri = format!("{PREFIX}{path}")
        .parse()
        .map_err(|_| ApiError::NotFound(path.to_owned()))?;
    let segments: Vec<&str> = uri.path().split('/').skip(2).collect();
    let route = CopilotKitRoute::routes(&segments)
        .into_iter()
        .filter(|(_, route)| *route != CopilotKitRoute::Envelope)
        .find(|(allowed, _)| *allowed == method)
        .map(|(_, route)| route)
        .ok_or_else(|| ApiError::NotFound(path.to_owned()))?;
    let body = body.map_or_else(Bytes::new, |body| Bytes::from(body.to_string()));
    let mut inner = Request::new(body);
    *inner.method_mut() = method;
    *inner.uri_mut() = uri;
    *inner.headers_mut() = outer.headers().clone();
    // The envelope's content type is JSON, as every body here is.
    inner.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    *inner.extensions_mut() = outer.extensions().clone();
    Ok((route, inner))
}

/// An id as a path segment.
fn encoded(id: &str) -> String {
    percent_encoding::utf8_percent_encode(id, percent_encoding::NON_ALPHANUMERIC).to_string()
}
