//! The runtime section: which tokio runtime the process runs on, chosen by where it runs unless
//! `RUNTIME_FLAVOR` says.

use super::vars::Vars;
use super::{ConfigError, Section};

/// Which tokio runtime the process runs on (`RUNTIME_FLAVOR`; unset: chosen by where it runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeFlavor {
    /// One thread: under Lambda an instance serves one invocation at a time, and a second
    /// worker only adds cross-thread wake-ups (docs/benchmarks.md).
    CurrentThread,
    /// Worker threads (`TOKIO_WORKER_THREADS`, default one per core): the local or container
    /// server with many streams at once, and Lambda with `AWS_LAMBDA_MAX_CONCURRENCY` > 1.
    MultiThread,
}

impl Section for RuntimeFlavor {
    const SETTINGS: &'static [&'static str] = &["RUNTIME_FLAVOR"];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        match vars.text("RUNTIME_FLAVOR").as_deref() {
            Some("current-thread") => Ok(Self::CurrentThread),
            Some("multi-thread") => Ok(Self::MultiThread),
            None => {
                let concurrent = vars.number::<u32>("AWS_LAMBDA_MAX_CONCURRENCY", 1)? > 1;
                if vars.under_lambda() && !concurrent {
                    Ok(Self::CurrentThread)
                } else {
                    Ok(Self::MultiThread)
                }
            }
            Some(other) => Err(ConfigError::Invalid {
                name: "RUNTIME_FLAVOR",
                expected: "current-thread or multi-thread",
                value: other.to_owned(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::config;

    #[test]
    fn lambda_gets_a_current_thread_runtime_unless_it_serves_concurrently() {
        let lambda = [("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")];
        assert_eq!(
            config(&lambda).unwrap().runtime,
            RuntimeFlavor::CurrentThread
        );
        let concurrent = [
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("AWS_LAMBDA_MAX_CONCURRENCY", "8"),
        ];
        assert_eq!(
            config(&concurrent).unwrap().runtime,
            RuntimeFlavor::MultiThread
        );
        let forced = [
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("RUNTIME_FLAVOR", "multi-thread"),
        ];
        assert_eq!(config(&forced).unwrap().runtime, RuntimeFlavor::MultiThread);
        assert_eq!(
            config(&[("RUNTIME_FLAVOR", "current-thread")])
                .unwrap()
                .runtime,
            RuntimeFlavor::CurrentThread
        );
    }
}
