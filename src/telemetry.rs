//! Logging: JSON lines under Lambda (or when `AWS_LAMBDA_LOG_FORMAT=JSON`), readable text
//! locally. Level from `RUST_LOG`, default `info`; prompts and keys are never logged at info.

use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
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
            .with_current_span(false)
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
