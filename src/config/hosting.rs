//! The hosting section: what serves the binary (the Lambda runtime, a plain server in a
//! container or on a desk, or Amazon Bedrock AgentCore Runtime) and how long a stop lets the
//! runs in progress finish. The HTTP section reads the host for its defaults and bounds.

use super::vars::Vars;
use super::{ConfigError, Section};
use std::time::Duration;

/// What serves the binary. Under the Lambda runtime (`AWS_LAMBDA_RUNTIME_API` set) it is
/// always [`Hosting::Lambda`]; elsewhere `HOSTING` chooses, because AgentCore sets no variable
/// of its own that would reveal it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hosting {
    Lambda,
    /// The local HTTP server: a desk, a container (ECS, Kubernetes, App Runner), systemd.
    Server,
    /// The local HTTP server with Amazon Bedrock AgentCore Runtime's contract: `POST
    /// /invocations`, `GET /ping`, the session header as the thread, `0.0.0.0:8080`.
    AgentCore,
}

impl Hosting {
    /// The most a run may last here (`RUN_MAX_SECS`): under Lambda a run outlasts its
    /// invocations (it goes on in the next), up to a day, as long as run events are kept by
    /// default; AgentCore keeps a session 8 hours at most.
    pub(crate) fn max_run_secs(self) -> u64 {
        match self {
            Hosting::Lambda | Hosting::Server => 86_400,
            Hosting::AgentCore => 28_800,
        }
    }

    /// `RUN_MAX_SECS` unset: an hour.
    pub(crate) fn default_run_secs(self) -> u64 {
        3_600
    }

    /// `STREAM_MAX_SECS` unset: AgentCore streams a response for 60 minutes at most; a plain
    /// server's streams last as long as their runs; under Lambda the invocation bounds them.
    pub(crate) fn default_stream_secs(self) -> Option<u64> {
        match self {
            Hosting::AgentCore => Some(3_540),
            Hosting::Lambda | Hosting::Server => None,
        }
    }

    /// `HOSTING`, or the Lambda runtime when it is there.
    pub(crate) fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        let chosen = vars.text("HOSTING");
        match (vars.under_lambda(), chosen.as_deref()) {
            (true, None | Some("lambda")) => Ok(Hosting::Lambda),
            (false, None | Some("server")) => Ok(Hosting::Server),
            (false, Some("agentcore")) => Ok(Hosting::AgentCore),
            (true, Some(other)) => Err(ConfigError::Invalid {
                name: "HOSTING",
                expected: "unset under the Lambda runtime (AWS_LAMBDA_RUNTIME_API is set)",
                value: other.to_owned(),
            }),
            (false, Some(other)) => Err(ConfigError::Invalid {
                name: "HOSTING",
                expected: "server or agentcore",
                value: other.to_owned(),
            }),
        }
    }
}

#[derive(Debug, Clone)]
pub struct HostingConfig {
    pub mode: Hosting,
    /// `SHUTDOWN_GRACE_SECS`: after `SIGTERM`, how long runs in progress may go on before they
    /// are stopped as a cancel stops them.
    pub shutdown_grace: Duration,
}

impl Section for HostingConfig {
    const SETTINGS: &'static [&'static str] = &["HOSTING", "SHUTDOWN_GRACE_SECS"];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
            mode: Hosting::from_vars(vars)?,
            // ECS and Kubernetes send SIGKILL 30 s after SIGTERM: 20 s for the runs leaves time
            // to store the ones stopped at the deadline and to export their spans.
            shutdown_grace: Duration::from_secs(vars.bounded(
                "SHUTDOWN_GRACE_SECS",
                20,
                0..=3_600,
            )?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::config;

    #[test]
    fn the_host_is_lambda_under_its_runtime_and_chosen_elsewhere() {
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        assert_eq!(config(&[lambda]).unwrap().hosting.mode, Hosting::Lambda);
        assert_eq!(config(&[]).unwrap().hosting.mode, Hosting::Server);
        let agentcore = config(&[("HOSTING", "agentcore")]).unwrap();
        assert_eq!(agentcore.hosting.mode, Hosting::AgentCore);
        assert_eq!(agentcore.http.listen.to_string(), "0.0.0.0:8080");
        assert_eq!(agentcore.http.run_max, Duration::from_secs(3_600));
        assert_eq!(agentcore.http.stream_max, Some(Duration::from_secs(3_540)));
        let err = config(&[lambda, ("HOSTING", "agentcore")]).unwrap_err();
        assert!(
            err.to_string().starts_with("HOSTING must be unset"),
            "{err}"
        );
        assert!(config(&[("HOSTING", "ecs")]).is_err());
    }

    #[test]
    fn the_run_bound_follows_the_host_and_outlasts_an_invocation() {
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        let under_lambda = config(&[lambda]).unwrap();
        assert_eq!(under_lambda.http.run_max, Duration::from_secs(3_600));
        assert_eq!(under_lambda.http.stream_max, None);
        assert!(config(&[lambda, ("RUN_MAX_SECS", "86400")]).is_ok());
        let err = config(&[lambda, ("RUN_MAX_SECS", "86401")]).unwrap_err();
        assert!(err.to_string().starts_with("RUN_MAX_SECS"), "{err}");
        let agentcore = [("HOSTING", "agentcore"), ("RUN_MAX_SECS", "28801")];
        assert!(config(&agentcore).is_err());
        assert!(config(&[("RUN_MAX_SECS", "0")]).is_err());
        // The former name still works, alone.
        let old = config(&[("RUN_TIMEOUT_SECS", "600")]).unwrap();
        assert_eq!(old.http.run_max, Duration::from_secs(600));
        let both = config(&[("RUN_TIMEOUT_SECS", "600"), ("RUN_MAX_SECS", "700")]).unwrap_err();
        assert!(both.to_string().starts_with("RUN_TIMEOUT_SECS"), "{both}");
        let stream = config(&[("STREAM_MAX_SECS", "540")]).unwrap();
        assert_eq!(stream.http.stream_max, Some(Duration::from_secs(540)));
        assert!(config(&[("STREAM_MAX_SECS", "0")]).is_err());
    }

    #[test]
    fn the_shutdown_grace_is_bounded_and_below_the_orchestrators_30_s() {
        assert_eq!(
            config(&[]).unwrap().hosting.shutdown_grace,
            Duration::from_secs(20)
        );
        assert_eq!(
            config(&[("SHUTDOWN_GRACE_SECS", "0")])
                .unwrap()
                .hosting
                .shutdown_grace,
            Duration::ZERO
        );
        let err = config(&[("SHUTDOWN_GRACE_SECS", "3601")]).unwrap_err();
        assert!(err.to_string().starts_with("SHUTDOWN_GRACE_SECS"), "{err}");
    }
}
