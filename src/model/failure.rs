//! What a model failure means for the next step: its kind (the `RUN_ERROR` code a run reports),
//! whether another attempt may succeed, and how long the provider asked to wait first
//! (`retry-after-ms`, `retry-after` in seconds or as an HTTP date, `x-should-retry`).

use super::ModelError;
use std::time::Duration;

/// What kind of failure a [`ModelError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    /// 429: too many requests for now.
    RateLimited,
    /// 429 `insufficient_quota`: the account is out of credit; no retry helps.
    QuotaExhausted,
    /// 5xx, 529, overloaded, or the API could not be reached.
    Unavailable,
    /// 408, or the stream went silent past the idle timeout.
    TimedOut,
    /// The provider refused the request (4xx): auth, a bad parameter, a model it does not serve.
    Refused,
    /// The prompt is longer than the model's window: the run compacts, nothing else helps.
    Overflow,
    /// The stream broke off, ended early or could not be parsed.
    Broken,
}

impl FailureKind {
    /// The name in logs, traces and attempt lists.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailureKind::RateLimited => "rate_limited",
            FailureKind::QuotaExhausted => "quota_exhausted",
            FailureKind::Unavailable => "unavailable",
            FailureKind::TimedOut => "timed_out",
            FailureKind::Refused => "refused",
            FailureKind::Overflow => "context_overflow",
            FailureKind::Broken => "broken",
        }
    }
}

/// What a provider said about retrying a refused request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetryHint {
    /// How long to wait before the next attempt.
    pub after: Option<Duration>,
    /// `x-should-retry`: the provider's own verdict, which overrides the status's.
    pub should_retry: Option<bool>,
}

impl RetryHint {
    /// From a response's headers.
    pub(crate) fn from_headers(headers: &reqwest::header::HeaderMap) -> Self {
        let text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        let after_ms = text("retry-after-ms")
            .and_then(|value| value.trim().parse::<f64>().ok())
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| Duration::from_secs_f64(ms / 1000.0));
        let after = after_ms.or_else(|| text("retry-after").and_then(parse_retry_after));
        let should_retry = match text("x-should-retry").map(str::trim) {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        };
        Self {
            after,
            should_retry,
        }
    }
}

/// `retry-after`: seconds (possibly fractional), or an HTTP date.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = at.signed_duration_since(chrono::Utc::now());
    // A date already past means "now".
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

/// The status an error a provider sends as data (inside its stream, or as a body's `type`)
/// would have had: Anthropic's `overloaded_error` is its 529, OpenAI's `server_error` a 500.
pub(crate) fn status_of_error_type(kind: &str) -> u16 {
    let kind = kind.to_ascii_lowercase();
    if kind.contains("overloaded") {
        529
    } else if kind.contains("rate_limit")
        || kind.contains("too_many_requests")
        || kind.contains("quota")
    {
        429
    } else if kind.contains("timeout") {
        408
    } else if kind.contains("server_error")
        || kind.contains("api_error")
        || kind.contains("internal")
        || kind.contains("unavailable")
    {
        500
    } else if kind.contains("authentication") || kind.contains("invalid_api_key") {
        401
    } else if kind.contains("permission") {
        403
    } else if kind.contains("not_found") {
        404
    } else {
        400
    }
}

impl ModelError {
    /// What kind of failure this is.
    pub(crate) fn kind(&self) -> FailureKind {
        match self {
            ModelError::Status {
                status, refusal, ..
            } => match status {
                429 if refusal
                    .as_ref()
                    .and_then(|refusal| refusal.code.as_deref())
                    .is_some_and(|code| code == "insufficient_quota") =>
                {
                    FailureKind::QuotaExhausted
                }
                429 => FailureKind::RateLimited,
                408 => FailureKind::TimedOut,
                409 => FailureKind::Unavailable,
                status if *status >= 500 => FailureKind::Unavailable,
                _ => FailureKind::Refused,
            },
            ModelError::ContextOverflow(_) => FailureKind::Overflow,
            ModelError::Unreachable(_) => FailureKind::Unavailable,
            ModelError::IdleTimeout(_) => FailureKind::TimedOut,
            ModelError::Stream | ModelError::Incomplete | ModelError::Malformed => {
                FailureKind::Broken
            }
            // An unusable answer (a guardrail, malformed output): the model's, not the request's.
            ModelError::Api(_) => FailureKind::Broken,
            ModelError::Exhausted { last, .. } => last.kind(),
            #[cfg(any(test, feature = "test-utils"))]
            ModelError::ScriptExhausted => FailureKind::Refused,
        }
    }

    /// Whether the same call may succeed if tried again (before any output): 408, 409, 429
    /// (not out of quota), 5xx and 529, a connection failure, a stream that broke off or went
    /// silent; `x-should-retry` has the last word.
    pub(crate) fn is_retryable(&self) -> bool {
        if let ModelError::Exhausted { last, .. } = self {
            return last.is_retryable();
        }
        if let ModelError::Status {
            retry:
                RetryHint {
                    should_retry: Some(verdict),
                    ..
                },
            ..
        } = self
        {
            return *verdict && self.kind() != FailureKind::Overflow;
        }
        match self.kind() {
            FailureKind::RateLimited | FailureKind::Unavailable | FailureKind::TimedOut => true,
            FailureKind::Broken => !matches!(self, ModelError::Malformed | ModelError::Api(_)),
            FailureKind::QuotaExhausted | FailureKind::Refused | FailureKind::Overflow => false,
        }
    }

    /// How long the provider asked to wait before trying again, if it said.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::Status { retry, .. } => retry.after,
            ModelError::Exhausted { last, .. } => last.retry_after(),
            _ => None,
        }
    }
}

/// Backoff before retry `attempt` (from 0) when the provider named no wait: 0.5 s doubling to
/// 8 s, as the official SDKs do, with up to a quarter of jitter so parallel runs do not retry in
/// lock-step.
pub(crate) fn backoff_delay(attempt: u32) -> Duration {
    let base = 500u64.saturating_mul(1 << attempt.min(4)).min(8_000);
    let jitter = u64::from(uuid::Uuid::new_v4().as_bytes()[0]) % (base / 4 + 1);
    Duration::from_millis(base - jitter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Refusal;

    fn headers(pairs: &[(&'static str, &str)]) -> reqwest::header::HeaderMap {
        let mut map = reqwest::header::HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    fn status(status: u16, code: Option<&str>, retry: RetryHint) -> ModelError {
        ModelError::Status {
            status,
            refusal: code.map(|code| Refusal::new(Some(code.to_owned()), "said")),
            retry,
        }
    }

    #[test]
    fn retry_after_ms_wins_then_seconds_then_an_http_date() {
        let hint = RetryHint::from_headers(&headers(&[
            ("retry-after-ms", "1500"),
            ("retry-after", "9"),
        ]));
        assert_eq!(hint.after, Some(Duration::from_millis(1_500)));
        let hint = RetryHint::from_headers(&headers(&[("retry-after", "2.5")]));
        assert_eq!(hint.after, Some(Duration::from_millis(2_500)));
        let in_ten = (chrono::Utc::now() + chrono::Duration::seconds(10)).to_rfc2822();
        let hint = RetryHint::from_headers(&headers(&[("retry-after", &in_ten)]));
        let wait = hint.after.unwrap();
        assert!(
            wait > Duration::from_secs(8) && wait <= Duration::from_secs(10),
            "{wait:?}"
        );
        let hint = RetryHint::from_headers(&headers(&[(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT",
        )]));
        assert_eq!(hint.after, Some(Duration::ZERO));
        assert_eq!(
            RetryHint::from_headers(&headers(&[("retry-after", "soon")])).after,
            None
        );
    }

    #[test]
    fn statuses_are_classified_as_the_official_sdks_do() {
        let none = RetryHint::default();
        for (code, kind, retry) in [
            (408, FailureKind::TimedOut, true),
            (409, FailureKind::Unavailable, true),
            (429, FailureKind::RateLimited, true),
            (500, FailureKind::Unavailable, true),
            (503, FailureKind::Unavailable, true),
            (529, FailureKind::Unavailable, true),
            (400, FailureKind::Refused, false),
            (401, FailureKind::Refused, false),
            (404, FailureKind::Refused, false),
        ] {
            let error = status(code, None, none);
            assert_eq!(
                (error.kind(), error.is_retryable()),
                (kind, retry),
                "{code}"
            );
        }
        let quota = status(429, Some("insufficient_quota"), none);
        assert_eq!(quota.kind(), FailureKind::QuotaExhausted);
        assert!(!quota.is_retryable());
        assert!(ModelError::Unreachable("refused".into()).is_retryable());
        assert!(ModelError::Stream.is_retryable());
        assert!(ModelError::IdleTimeout(Duration::from_secs(1)).is_retryable());
        assert!(!ModelError::Malformed.is_retryable());
    }

    #[test]
    fn x_should_retry_overrides_the_status() {
        let yes = RetryHint {
            after: None,
            should_retry: Some(true),
        };
        let no = RetryHint {
            after: None,
            should_retry: Some(false),
        };
        assert!(status(400, None, yes).is_retryable());
        assert!(!status(503, None, no).is_retryable());
        let hint = RetryHint::from_headers(&headers(&[("x-should-retry", "false")]));
        assert_eq!(hint.should_retry, Some(false));
    }

    #[test]
    fn error_types_sent_as_data_get_their_status() {
        assert_eq!(status_of_error_type("overloaded_error"), 529);
        assert_eq!(status_of_error_type("rate_limit_error"), 429);
        assert_eq!(status_of_error_type("server_error"), 500);
        assert_eq!(status_of_error_type("api_error"), 500);
        assert_eq!(status_of_error_type("invalid_request_error"), 400);
        assert_eq!(status_of_error_type("authentication_error"), 401);
    }

    #[test]
    fn backoff_doubles_from_half_a_second_to_eight() {
        let waits: Vec<Duration> = (0..6).map(backoff_delay).collect();
        assert!(waits[0] <= Duration::from_millis(500) && waits[0] >= Duration::from_millis(375));
        assert!(waits[4] <= Duration::from_secs(8) && waits[4] >= Duration::from_secs(6));
        assert!(waits[5] <= Duration::from_secs(8));
    }
}
