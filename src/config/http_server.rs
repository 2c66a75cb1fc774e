//! The HTTP section: where the local server listens, the origins it answers CORS for, how often
//! a quiet stream is pinged, how long a run may take, and whether `GET /` serves the dev page.

use super::hosting::Hosting;
use super::vars::Vars;
use super::{ConfigError, Section};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub listen: SocketAddr,
    /// Origins the server itself answers CORS for; empty leaves CORS to the Function URL.
    pub cors_allowed_origins: Vec<String>,
    pub ping_interval: Duration,
    /// `RUN_MAX_SECS`: the longest a run may take, across invocations.
    pub run_max: Duration,
    /// `STREAM_MAX_SECS`: the longest a response stream lasts; one that reaches it while its
    /// run goes on ends with the notice that says where to follow the run.
    pub stream_max: Option<Duration>,
    /// How long before the Lambda deadline a runner lets its run go (to the next invocation),
    /// leaving time to store it.
    pub deadline_margin: Duration,
    /// `DEV_UI`: `GET /` serves the dev chat page; on by default locally, off under Lambda.
    pub dev_ui: bool,
    /// `A2A_PUBLIC_URL`: the base URL the A2A agent card names; else each request's own.
    pub a2a_public_url: Option<String>,
}

impl Section for HttpConfig {
    const SETTINGS: &'static [&'static str] = &[
        "PORT",
        "HOST",
        "CORS_ALLOWED_ORIGINS",
        "SSE_PING_INTERVAL_MS",
        "RUN_MAX_SECS",
        "RUN_TIMEOUT_SECS",
        "STREAM_MAX_SECS",
        "DEADLINE_MARGIN_MS",
        "DEV_UI",
        "A2A_PUBLIC_URL",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        let host = Hosting::from_vars(vars)?;
        Ok(Self {
            listen: listen(vars, host)?,
            cors_allowed_origins: cors_allowed_origins(vars),
            ping_interval: Duration::from_millis(vars.bounded(
                "SSE_PING_INTERVAL_MS",
                15_000,
                100..=300_000,
            )?),
            run_max: run_max(vars, host)?,
            stream_max: match vars.optional_bounded("STREAM_MAX_SECS", 1..=86_400)? {
                Some(secs) => Some(Duration::from_secs(secs)),
                None => host.default_stream_secs().map(Duration::from_secs),
            },
            deadline_margin: Duration::from_millis(vars.bounded(
                "DEADLINE_MARGIN_MS",
                3_000,
                0..=60_000,
            )?),
            dev_ui: vars.flag("DEV_UI", !vars.under_lambda())?,
            a2a_public_url: vars.http_endpoint("A2A_PUBLIC_URL")?,
        })
    }
}

/// `RUN_MAX_SECS`, or its former name `RUN_TIMEOUT_SECS` (not both).
fn run_max(vars: &Vars, host: Hosting) -> Result<Duration, ConfigError> {
    let bounds = 1..=host.max_run_secs();
    let name = match (vars.text("RUN_MAX_SECS"), vars.text("RUN_TIMEOUT_SECS")) {
        (Some(_), Some(old)) => {
            return Err(ConfigError::Invalid {
                name: "RUN_TIMEOUT_SECS",
                expected: "unset when RUN_MAX_SECS is set (it is RUN_MAX_SECS's former name)",
                value: old,
            });
        }
        (None, Some(_)) => "RUN_TIMEOUT_SECS",
        _ => "RUN_MAX_SECS",
    };
    Ok(Duration::from_secs(vars.bounded(
        name,
        host.default_run_secs(),
        bounds,
    )?))
}

/// `PORT` and `HOST`; AgentCore Runtime sends to `0.0.0.0:8080`, the default there.
fn listen(vars: &Vars, host: Hosting) -> Result<SocketAddr, ConfigError> {
    let agentcore = host == Hosting::AgentCore;
    let port: u16 = vars.number("PORT", if agentcore { 8080 } else { 8787 })?;
    let host: IpAddr = match vars.text("HOST") {
        Some(host) => host.parse().map_err(|_| ConfigError::Invalid {
            name: "HOST",
            expected: "an IP address",
            value: host,
        })?,
        None if agentcore => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        None => IpAddr::V4(Ipv4Addr::LOCALHOST),
    };
    Ok(SocketAddr::new(host, port))
}

/// `CORS_ALLOWED_ORIGINS`: comma-separated, each without a trailing slash.
fn cors_allowed_origins(vars: &Vars) -> Vec<String> {
    vars.text("CORS_ALLOWED_ORIGINS")
        .map(|origins| {
            origins
                .split(',')
                .map(|origin| origin.trim().trim_end_matches('/').to_owned())
                .filter(|o| !o.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use crate::config::tests::config;

    #[test]
    fn the_dev_page_is_on_locally_and_off_under_lambda_unless_asked() {
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        assert!(config(&[]).unwrap().http.dev_ui);
        assert!(!config(&[lambda]).unwrap().http.dev_ui);
        assert!(config(&[lambda, ("DEV_UI", "true")]).unwrap().http.dev_ui);
        assert!(!config(&[("DEV_UI", "false")]).unwrap().http.dev_ui);
        let err = config(&[("DEV_UI", "maybe")]).unwrap_err();
        assert!(
            err.to_string().starts_with("DEV_UI must be true or false"),
            "{err}"
        );
    }
}
