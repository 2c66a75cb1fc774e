//! Logs, traces and metrics. Logging: JSON lines under Lambda (or when
//! `AWS_LAMBDA_LOG_FORMAT=JSON`), readable text locally, each line inside its run's span; level
//! from `RUST_LOG`, else `AWS_LAMBDA_LOG_LEVEL`, default `info`. Traces: OpenTelemetry GenAI spans
//! exported over OTLP/HTTP when an endpoint is set ([`otel`]). Metrics: one EMF record per run
//! ([`emf`]). Prompts and keys are never logged; span content only with `OTEL_CAPTURE_CONTENT`.

pub(crate) mod emf;
pub(crate) mod otel;
mod spans;

pub(crate) use otel::TraceParent;
pub use otel::flush;
pub(crate) use spans::{attribute_int, record_error, trace_span};

use tracing_subscriber::filter::{FilterExt, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The target of every span meant for the trace exporter, and only for it: the log lines never
/// show them, and with no exporter they are disabled at their call site (near-zero cost).
pub(crate) const TRACE_TARGET: &str = "agui::trace";

/// What telemetry does, from the configuration.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Where spans are exported (the full `…/v1/traces` URL); none when no OTLP endpoint is set.
    pub traces_endpoint: Option<String>,
    /// `OTEL_SERVICE_NAME`: the resource's `service.name` and the metrics' `service`.
    pub service_name: String,
    /// `OTEL_CAPTURE_CONTENT`: prompts, answers and tool arguments on spans.
    pub capture_content: bool,
}

/// The filter: `RUST_LOG`, else Lambda's `AWS_LAMBDA_LOG_LEVEL` (`TRACE` … `FATAL`), else info.
fn filter(rust_log: Option<&str>, lambda_level: Option<&str>) -> EnvFilter {
    if let Some(filter) = rust_log.and_then(|value| EnvFilter::try_new(value).ok()) {
        return filter;
    }
    let level = match lambda_level.map(str::to_ascii_lowercase).as_deref() {
        Some("trace") => "trace",
        Some("debug") => "debug",
        Some("warn") => "warn",
        Some("error" | "fatal") => "error",
        // rmcp logs each MCP session's whole server description (its instructions can run to
        // pages) at info, once per server and cold start.
        _ => "info,rmcp=warn",
    };
    EnvFilter::new(level)
}

/// Installs logging and, when `settings` ask for it, the trace exporter. Call it inside the
/// tokio runtime: the exporter sends on it.
pub fn init(settings: &Settings) {
    let filter = filter(
        std::env::var("RUST_LOG").ok().as_deref(),
        std::env::var("AWS_LAMBDA_LOG_LEVEL").ok().as_deref(),
    );
    let under_lambda = std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some();
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT")
        .map(|format| format.eq_ignore_ascii_case("json"))
        .unwrap_or(under_lambda);
    let logs_only = filter.and(filter_fn(|metadata| metadata.target() != TRACE_TARGET));
    // Lambda adds its own timestamps; CloudWatch cannot render colours.
    let logs = tracing_subscriber::fmt::layer().with_target(false);
    let logs = if json {
        logs.json()
            .flatten_event(true)
            .without_time()
            .with_current_span(true)
            .with_span_list(false)
            .with_filter(logs_only)
            .boxed()
    } else if under_lambda {
        logs.with_ansi(false)
            .without_time()
            .with_filter(logs_only)
            .boxed()
    } else {
        logs.with_filter(logs_only).boxed()
    };
    otel::set_capture_content(settings.capture_content);
    let traces = settings
        .traces_endpoint
        .as_deref()
        .map(|endpoint| otel::layer(&settings.service_name, endpoint))
        .and_then(|built| match built {
            Ok(layer) => Some(layer),
            Err(error) => {
                eprintln!("traces are not exported: {error}");
                None
            }
        });
    let result = tracing_subscriber::registry()
        .with(logs)
        .with(traces)
        .try_init();
    if let Err(err) = result {
        eprintln!("logging was already initialised: {err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_log_wins_then_lambdas_level_then_info() {
        assert_eq!(filter(Some("debug"), Some("ERROR")).to_string(), "debug");
        assert_eq!(filter(None, Some("WARN")).to_string(), "warn");
        assert_eq!(filter(None, Some("FATAL")).to_string(), "error");
        assert_eq!(filter(None, None).to_string(), "rmcp=warn,info");
        assert_eq!(
            filter(Some("not a [filter"), None).to_string(),
            "rmcp=warn,info"
        );
    }
}
