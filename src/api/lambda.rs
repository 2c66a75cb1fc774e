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
    let iam_caller = iam_caller(&request);
    let (mut parts, body) = request.into_parts();
    if let Some(caller) = iam_caller {
        parts.extensions.insert(caller);
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

/// The caller of an `AWS_IAM` Function URL, as Lambda verified it.
fn iam_caller(request: &Request) -> Option<super::auth::IamCaller> {
    use lambda_http::RequestExt;
    use lambda_http::request::RequestContext;
    let Some(RequestContext::ApiGatewayV2(context)) = request.request_context_ref() else {
        return None;
    };
    let iam = context.authorizer.as_ref()?.iam.as_ref()?;
    iam.user_arn
        .clone()
        .or_else(|| iam.caller_id.clone())
        .map(super::auth::IamCaller)
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
}
