//! Amazon Bedrock AgentCore Runtime's contract (`HOSTING=agentcore`): `GET /ping` says whether
//! work is in flight, `POST /invocations` is the AG-UI run route, and a run whose input names no
//! thread continues the session's (`X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`).

use super::app::App;
use super::body::ResponseBody;
use super::error::ApiError;
use super::response::json_response;
use super::routes::Dialect;
use crate::auth::Principal;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::time::Instant;

/// The runtime session AgentCore routes the request to (a microVM per session).
pub(super) const SESSION_HEADER: &str = "x-amzn-bedrock-agentcore-runtime-session-id";

impl App {
    /// `GET /ping`: `HealthyBusy` while a run or a detached run is in flight (the session's
    /// microVM is then kept past its idle timeout), `Healthy` otherwise.
    /// `time_of_last_update` is when that last changed, in Unix seconds: stamped at the
    /// change, never per ping, which would keep an idle session alive until its max lifetime.
    pub(super) fn ping(&self) -> Response<ResponseBody> {
        let activity = self.live_runs().activity();
        let status = if activity.busy {
            "HealthyBusy"
        } else {
            "Healthy"
        };
        let body = json!({"status": status, "time_of_last_update": activity.since_secs});
        json_response(StatusCode::OK, Bytes::from(body.to_string()))
    }

    /// `POST /invocations`: the AG-UI run route (`/agent`), with the session as the thread of a
    /// run whose input names none.
    pub(super) async fn invocation(
        &self,
        principal: Principal,
        request: Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let request = session_thread(request);
        self.run(principal, request, invocation_deadline, Dialect::AgUi)
            .await
    }
}

/// The request with the session header's id as `threadId` when the body is a JSON object that
/// names no thread; the session is recorded on the request's span either way. A body that does
/// not parse is left for the run route to refuse in its own words.
fn session_thread(request: Request<Bytes>) -> Request<Bytes> {
    let Some(session) = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
    else {
        return request;
    };
    tracing::Span::current().record("session.id", session.as_str());
    let Ok(Value::Object(mut body)) = serde_json::from_slice::<Value>(request.body()) else {
        return request;
    };
    let names_a_thread = ["threadId", "thread_id"]
        .iter()
        .any(|key| body.get(*key).is_some_and(|value| !value.is_null()));
    if names_a_thread {
        return request;
    }
    tracing::info!(session = %session, "the AgentCore session is the run's thread");
    body.insert("threadId".to_owned(), Value::String(session));
    let (parts, _) = request.into_parts();
    Request::from_parts(parts, Bytes::from(Value::Object(body).to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_of(request: &Request<Bytes>) -> Value {
        serde_json::from_slice(request.body()).unwrap()
    }

    fn request(body: &str, session: Option<&str>) -> Request<Bytes> {
        let mut builder = Request::post("/invocations");
        if let Some(session) = session {
            builder = builder.header(SESSION_HEADER, session);
        }
        builder.body(Bytes::from(body.to_owned())).unwrap()
    }

    #[test]
    fn the_session_names_the_thread_only_when_the_input_names_none() {
        let session = "a1b2c3d4-e5f6-7890-abcd-ef1234567890-s1";
        let filled = session_thread(request(r#"{"runId":"r1","messages":[]}"#, Some(session)));
        assert_eq!(body_of(&filled)["threadId"], session);
        let null = session_thread(request(r#"{"threadId":null}"#, Some(session)));
        assert_eq!(body_of(&null)["threadId"], session);
        let own = session_thread(request(r#"{"threadId":"mine"}"#, Some(session)));
        assert_eq!(body_of(&own)["threadId"], "mine");
        let snake = session_thread(request(r#"{"thread_id":"mine"}"#, Some(session)));
        assert!(body_of(&snake).get("threadId").is_none());
        let none = session_thread(request(r#"{"runId":"r1"}"#, None));
        assert!(body_of(&none).get("threadId").is_none());
        let broken = session_thread(request("{not json", Some(session)));
        assert_eq!(broken.body().as_ref(), b"{not json");
    }
}
