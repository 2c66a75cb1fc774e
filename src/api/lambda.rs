//! Serving under the Lambda runtime: Function URL (payload 2.0) and API Gateway REST (1.0 proxy)
//! events in, streamed responses out; both fronts reach the same routes.

use super::app::App;
use super::body::ResponseBody;
use super::error::ApiError;
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyDataStream, BodyExt};
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, Request, RequestExt, service_fn};
use lambda_runtime::{LambdaEvent, MetadataPrelude, StreamResponse};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;
use tracing::Instrument;

pub(crate) async fn run(app: Arc<App>) -> Result<(), lambda_http::Error> {
    app.remember_self();
    let handler = service_fn(move |event: LambdaEvent<Value>| {
        let app = app.clone();
        async move { Ok::<_, lambda_http::Error>(into_stream_response(answer_event(&app, event).await)) }
    });
    // Concurrent invocations when the environment allows them (Lambda Managed Instances and
    // `cargo lambda watch` set AWS_LAMBDA_MAX_CONCURRENCY); one at a time otherwise.
    lambda_runtime::Runtime::new(handler)
        .layer(lambda_runtime::layers::TracingLayer::new())
        .layer(lambda_runtime::tower::layer::layer_fn(|inner| Settle {
            inner,
        }))
        .run_concurrent()
        .await
}

/// Ends an invocation only when its response is sent *and* the runs it started have ended.
/// Lambda may freeze the environment once the runtime asks for the next event, and a run must
/// never be frozen half done: if the runtime stops sending the body (the client left, as under
/// `cargo lambda watch`), the run still finishes, stores its answer and frees its thread first.
#[derive(Clone)]
struct Settle<S> {
    inner: S,
}

impl<S> lambda_runtime::tower::Service<lambda_runtime::LambdaInvocation> for Settle<S>
where
    S: lambda_runtime::tower::Service<lambda_runtime::LambdaInvocation, Response = ()>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = ();
    type Error = S::Error;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), S::Error>> + Send + 'static>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, invocation: lambda_runtime::LambdaInvocation) -> Self::Future {
        let answered = self.inner.call(invocation);
        Box::pin(async move {
            let (result, runs) = crate::agent::live::tracking_spawned(answered).await;
            for run in runs {
                if !run.has_ended() {
                    tracing::info!(run_id = %run.run_id, "the response has ended; the run goes on");
                }
                run.done().await;
            }
            // The environment may freeze once this invocation ends: its spans go out first.
            crate::telemetry::flush().await;
            result
        })
    }
}

/// Answers one raw HTTP event. `lambda_http` panics on a body flagged as base64 that is
/// not, so that case is refused here, before the event is converted.
pub async fn answer_event(app: &App, event: LambdaEvent<Value>) -> http::Response<ResponseBody> {
    let LambdaEvent { payload, context } = event;
    if let Some(detached) = payload.get(super::dispatch::EVENT_KEY) {
        // The invocation's own span: the detached run's trace hangs off it, in the X-Ray trace
        // Lambda continued from the accepting request.
        let span = crate::telemetry::trace_span!("detached run", "server");
        span.record("otel.name", "detached run");
        let xray = context
            .xray_trace_id
            .clone()
            .map(crate::telemetry::TraceParent);
        crate::telemetry::otel::set_parent(&span, xray.as_ref(), &http::HeaderMap::new());
        return run_detached(app, detached.clone(), context.deadline)
            .instrument(span)
            .await;
    }
    if let Some(continued) = payload.get(super::dispatch::CONTINUE_KEY) {
        // In the X-Ray trace Lambda continued from the invocation that handed the run off.
        let span = crate::telemetry::trace_span!("continued run", "server");
        span.record("otel.name", "continued run");
        let xray = context
            .xray_trace_id
            .clone()
            .map(crate::telemetry::TraceParent);
        crate::telemetry::otel::set_parent(&span, xray.as_ref(), &http::HeaderMap::new());
        return run_continuation(app, continued.clone(), context.deadline)
            .instrument(span)
            .await;
    }
    if let Some(error) = undecodable_body(&payload) {
        // Function URL events name the path `rawPath`, REST events `path`.
        let path = ["rawPath", "path"]
            .iter()
            .find_map(|key| payload.get(*key).and_then(Value::as_str))
            .unwrap_or_default();
        return app.refusal(path, &event_headers(&payload), &error);
    }
    match serde_json::from_value::<LambdaRequest>(payload) {
        Ok(request) => {
            handle(
                app,
                lambda_http::Request::from(request).with_lambda_context(context),
            )
            .await
        }
        Err(err) => {
            tracing::warn!(error = %err, "not an HTTP event (Function URL or API Gateway REST)");
            app.refusal(
                "",
                &http::HeaderMap::new(),
                &ApiError::UnreadableBody("the event is not an HTTP request"),
            )
        }
    }
}

/// A self-invocation carrying an accepted run (only callers allowed to invoke the function can
/// send one; a Function URL event never has the key at its top). The invocation lasts until
/// the run ends; its answer goes nowhere, so it only says what happened.
async fn run_detached(
    app: &App,
    detached: Value,
    deadline_ms: u64,
) -> http::Response<ResponseBody> {
    use crate::agent::detached::DetachedStart;
    let deadline = (deadline_ms > 0).then(|| deadline_instant(deadline_ms));
    let outcome = match serde_json::from_value::<super::dispatch::DetachedRequest>(detached) {
        Ok(request) => match app.execute_detached(request, deadline).await {
            DetachedStart::Started(run) => {
                tracing::info!(run_id = %run.run_id, "detached run started");
                "started"
            }
            DetachedStart::Duplicate => "duplicate",
            DetachedStart::Failed => "failed",
        },
        Err(error) => {
            tracing::error!(%error, "a detached run's event does not parse");
            "unreadable"
        }
    };
    let mut response = http::Response::new(ResponseBody::full(Bytes::from(
        serde_json::json!({ "detachedRun": outcome }).to_string(),
    )));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// A self-invocation that takes a run over from the invocation before (or from one that
/// stopped). The invocation lasts as long as its part of the run; its answer goes nowhere, so it
/// only says what happened: `continued`, or `held`, `gone` and `failed` when it did nothing.
async fn run_continuation(
    app: &App,
    continued: Value,
    deadline_ms: u64,
) -> http::Response<ResponseBody> {
    let ends = (deadline_ms > 0).then(|| {
        let deadline = deadline_instant(deadline_ms);
        deadline
            .checked_sub(app.deadline_margin)
            .unwrap_or(deadline)
    });
    let outcome =
        match serde_json::from_value::<crate::agent::continuation::Continuation>(continued) {
            Ok(continuation) => {
                let continued = app.agent.continue_run(&continuation, ends).await;
                if let crate::agent::continuation::Continued::Started(run) = &continued {
                    tracing::info!(run_id = %run.run_id, "the run goes on in this invocation");
                }
                continued.label()
            }
            Err(error) => {
                tracing::error!(%error, "a continued run's event does not parse");
                "unreadable"
            }
        };
    let mut response = http::Response::new(ResponseBody::full(Bytes::from(
        serde_json::json!({ "continuedRun": outcome }).to_string(),
    )));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// The headers of a raw HTTP event, for refusals made before it is converted.
fn event_headers(event: &Value) -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    if let Some(map) = event.get("headers").and_then(Value::as_object) {
        for (name, value) in map {
            if let (Ok(name), Some(Ok(value))) = (
                http::HeaderName::from_bytes(name.as_bytes()),
                value.as_str().map(http::HeaderValue::from_str),
            ) {
                headers.append(name, value);
            }
        }
    }
    headers
}

fn undecodable_body(event: &Value) -> Option<ApiError> {
    let flagged = event
        .get("isBase64Encoded")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let body = event.get("body").and_then(Value::as_str)?;
    let broken = flagged
        && base64::engine::general_purpose::STANDARD
            .decode(body)
            .is_err();
    broken.then_some(ApiError::UnreadableBody(
        "the request body is not valid base64",
    ))
}

/// The response as the streaming prelude and body. API Gateway REST takes one value per name in
/// the prelude's `headers` (a repeated name would be a JSON array), so a repeated header is sent
/// as one comma-joined value, and `Set-Cookie` goes to `cookies`, as Function URLs also take it.
fn into_stream_response(
    response: http::Response<ResponseBody>,
) -> StreamResponse<BodyDataStream<ResponseBody>> {
    let (parts, body) = response.into_parts();
    let (headers, cookies) = single_valued(parts.headers);
    let metadata_prelude = MetadataPrelude {
        status_code: parts.status,
        headers,
        cookies,
    };
    StreamResponse {
        metadata_prelude,
        stream: body.into_data_stream(),
    }
}

fn single_valued(headers: http::HeaderMap) -> (http::HeaderMap, Vec<String>) {
    let mut single = http::HeaderMap::with_capacity(headers.keys_len());
    let mut cookies = Vec::new();
    for name in headers.keys() {
        let values: Vec<&str> = headers
            .get_all(name)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .collect();
        if name == http::header::SET_COOKIE {
            cookies.extend(values.iter().map(|value| (*value).to_owned()));
        } else if let Ok(value) = http::HeaderValue::from_str(&values.join(", ")) {
            single.insert(name.clone(), value);
        }
    }
    (single, cookies)
}

/// Converts a Lambda request and answers it; public so tests can drive event files in-process.
pub async fn handle(app: &App, request: Request) -> http::Response<ResponseBody> {
    let deadline = request
        .extensions()
        .get::<lambda_http::Context>()
        .map(|context| context.deadline)
        .filter(|deadline| *deadline > 0)
        .map(deadline_instant);
    let iam_caller = iam_caller(&request);
    let xray = request
        .extensions()
        .get::<lambda_http::Context>()
        .and_then(|context| context.xray_trace_id.clone())
        .map(crate::telemetry::TraceParent);
    let rest_path = rest_path(&request);
    let (mut parts, body) = request.into_parts();
    if let Some(uri) = rest_path {
        parts.uri = uri;
    }
    if let Some(caller) = iam_caller {
        parts.extensions.insert(caller);
    }
    if let Some(xray) = xray {
        parts.extensions.insert(xray);
    }
    let bytes = match body {
        Body::Empty => Bytes::new(),
        Body::Text(text) => Bytes::from(text),
        Body::Binary(bytes) => Bytes::from(bytes),
        _ => Bytes::new(),
    };
    app.handle(http::Request::from_parts(parts, bytes), deadline)
        .await
}

/// The caller of an `AWS_IAM` Function URL or REST method, as Lambda or API Gateway verified it.
fn iam_caller(request: &Request) -> Option<crate::auth::IamCaller> {
    use lambda_http::request::RequestContext;
    let caller = match request.request_context_ref()? {
        RequestContext::ApiGatewayV2(context) => {
            let iam = context.authorizer.as_ref()?.iam.as_ref()?;
            iam.user_arn.clone().or_else(|| iam.caller_id.clone())
        }
        RequestContext::ApiGatewayV1(context) => context
            .identity
            .user_arn
            .clone()
            .or_else(|| context.identity.caller.clone()),
        _ => None,
    };
    caller.map(crate::auth::IamCaller)
}

/// A REST event's path as the client sent it: `lambda_http` puts the stage in front (`/prod/agent`),
/// which is no route of ours, unless `AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH` is set.
fn rest_path(request: &Request) -> Option<http::Uri> {
    use lambda_http::request::RequestContext;
    let Some(RequestContext::ApiGatewayV1(_)) = request.request_context_ref() else {
        return None;
    };
    let path = request.raw_http_path();
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    let mut parts = request.uri().clone().into_parts();
    parts.path_and_query = Some(path_and_query.parse().ok()?);
    http::Uri::from_parts(parts).ok()
}

/// Lambda gives the deadline as epoch milliseconds; runs measure time on the monotonic clock.
/// `cargo lambda watch` sends the timeout itself (e.g. `600000`) instead: a value too small to
/// be a date this century is read as milliseconds from now.
fn deadline_instant(deadline_ms: u64) -> Instant {
    const YEAR_2001_MS: u64 = 978_307_200_000;
    let remaining_ms = if deadline_ms < YEAR_2001_MS {
        deadline_ms
    } else {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|now| u64::try_from(now.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        deadline_ms.saturating_sub(now_ms)
    };
    tracing::debug!(deadline_ms, remaining_ms, "invocation deadline");
    Instant::now() + Duration::from_millis(remaining_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_deadlines_and_emulator_durations_both_give_the_time_left() {
        let now_ms = u64::try_from(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis(),
        )
        .unwrap();
        let left = deadline_instant(now_ms + 60_000) - Instant::now();
        assert!(
            left > Duration::from_secs(55) && left <= Duration::from_secs(60),
            "{left:?}"
        );
        let emulator = deadline_instant(600_000) - Instant::now();
        assert!(emulator > Duration::from_secs(595), "{emulator:?}");
        assert!(
            deadline_instant(now_ms - 1_000) <= Instant::now(),
            "a passed deadline leaves no time"
        );
    }

    #[test]
    fn the_prelude_has_one_value_per_header_and_cookies_apart() {
        let mut headers = http::HeaderMap::new();
        headers.append("vary", "origin".parse().unwrap());
        headers.append("vary", "accept".parse().unwrap());
        headers.append("set-cookie", "a=1".parse().unwrap());
        headers.append("set-cookie", "b=2".parse().unwrap());
        headers.insert("content-type", "text/event-stream".parse().unwrap());
        let (single, cookies) = single_valued(headers);
        assert_eq!(single.get_all("vary").iter().count(), 1);
        assert_eq!(single["vary"], "origin, accept");
        assert_eq!(single["content-type"], "text/event-stream");
        assert!(single.get("set-cookie").is_none());
        assert_eq!(cookies, ["a=1", "b=2"]);
    }
}
