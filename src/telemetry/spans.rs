//! What every trace span shares: the exporter-only target, the OpenTelemetry name, kind, status
//! and error type, written once in [`trace_span!`], and the attribute helpers the spans' owners
//! use. Names no other module of the crate.

/// A span for the trace exporter only ([`TRACE_TARGET`](super::TRACE_TARGET)), of
/// OpenTelemetry kind `$kind`, with `otel.name`, `otel.status_code` and `error.type` declared for
/// later recording, then the span's own fields. Disabled, and near free, with no exporter.
macro_rules! trace_span {
    ($name:literal, $kind:literal $(, $($field:tt)+)?) => {
        ::tracing::info_span!(
            target: $crate::telemetry::TRACE_TARGET,
            $name,
            otel.name = ::tracing::field::Empty,
            otel.kind = $kind,
            otel.status_code = ::tracing::field::Empty,
            error.type = ::tracing::field::Empty
            $(, $($field)+)?
        )
    };
}
pub(crate) use trace_span;

/// Marks a [`trace_span!`] failed, `error_type` saying how.
pub(crate) fn record_error(span: &tracing::Span, error_type: &str) {
    span.record("otel.status_code", "ERROR");
    span.record("error.type", error_type);
}

/// A count as a span attribute: OpenTelemetry's integers are signed (the bridge would turn a
/// `u64` into a string).
pub(crate) fn attribute_int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}
