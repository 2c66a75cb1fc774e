//! Serving under the Lambda runtime: Function URL events in, streamed responses out.

use super::App;
use bytes::Bytes;
use lambda_http::{Body, Request, service_fn};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

pub async fn run(app: Arc<App>) -> Result<(), lambda_http::Error> {
    lambda_http::run_with_streaming_response(service_fn(move |request: Request| {
        let app = app.clone();
        async move { Ok::<_, lambda_http::Error>(handle(&app, request).await) }
    }))
    .await
}

/// Converts a Lambda request and answers it; public so tests can drive event files in-process.
pub async fn handle(app: &App, request: Request) -> http::Response<super::ResponseBody> {
    let deadline = request
        .extensions()
        .get::<lambda_http::Context>()
        .map(|context| context.deadline)
        .filter(|deadline| *deadline > 0)
        .map(deadline_instant);
    let (parts, body) = request.into_parts();
    let bytes = match body {
        Body::Empty => Bytes::new(),
        Body::Text(text) => Bytes::from(text),
        Body::Binary(bytes) => Bytes::from(bytes),
        _ => Bytes::new(),
    };
    app.handle(http::Request::from_parts(parts, bytes), deadline)
        .await
}

/// Lambda gives the deadline as epoch milliseconds; runs measure time on the monotonic clock.
fn deadline_instant(deadline_ms: u64) -> Instant {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|now| now.as_millis())
        .unwrap_or(0);
    let remaining = u128::from(deadline_ms).saturating_sub(now_ms);
    Instant::now() + Duration::from_millis(u64::try_from(remaining).unwrap_or(u64::MAX))
}
