//! Logging: JSON lines under Lambda (or when `AWS_LAMBDA_LOG_FORMAT=JSON`), readable text
//! locally, each line inside its run's span (`thread_id`, `run_id`). Level from `RUST_LOG`, else
//! `AWS_LAMBDA_LOG_LEVEL` (as the Lambda runtime reads it), default `info`; prompts and keys
//! are never logged at info.

use tracing_subscriber::EnvFilter;

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

pub fn init() {
    let filter = filter(
        std::env::var("RUST_LOG").ok().as_deref(),
        std::env::var("AWS_LAMBDA_LOG_LEVEL").ok().as_deref(),
    );
    let under_lambda = std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some();
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT")
        .map(|format| format.eq_ignore_ascii_case("json"))
        .unwrap_or(under_lambda);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    // Lambda adds its own timestamps; CloudWatch cannot render colours.
    let result = if json {
        builder
            .json()
            .flatten_event(true)
            .without_time()
            .with_current_span(true)
            .with_span_list(false)
            .try_init()
    } else if under_lambda {
        builder.with_ansi(false).without_time().try_init()
    } else {
        builder.try_init()
    };
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
