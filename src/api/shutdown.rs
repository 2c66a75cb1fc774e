//! Stopping cleanly on `SIGTERM` or `SIGINT`: the app starts no new run (503 `shutting_down`
//! with `Retry-After`; every other route still answers, so followers can rejoin and cancel), lets
//! the runs in flight finish within the grace time, stops the rest as the cancel route does, and
//! waits for them to store what they produced. Under Lambda the signal only flushes the spans.

use super::app::App;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// After the grace time, how long runs told to stop may take to store their partial answer and
/// end their log (a DynamoDB call gives up after 12 s; a stopped run makes two or three).
const STOP_WAIT: Duration = Duration::from_secs(10);

/// Lambda gives the runtime 300 ms after `SIGTERM` (500 with an internal extension), then kills it.
const LAMBDA_FLUSH_BUDGET: Duration = Duration::from_millis(250);

/// How a drain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Drained {
    /// Runs in flight when the stop began (detached runs included).
    pub in_flight: usize,
    /// Runs still going at the deadline, stopped as a cancel stops them.
    pub stopped: usize,
    /// Whether every run had ended (and stored what it produced) before the drain returned.
    pub settled: bool,
}

impl App {
    pub(super) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Starts no new run from now on, lets the runs in flight finish within `grace` (or until
    /// `hurry` resolves: a second signal), then stops those still going and waits up to
    /// [`STOP_WAIT`] for them to end.
    pub(crate) async fn drain(
        &self,
        grace: Duration,
        hurry: impl std::future::Future<Output = ()>,
    ) -> Drained {
        self.draining.store(true, Ordering::Relaxed);
        let live = self.live_runs();
        let in_flight = live.len();
        tracing::info!(
            runs = in_flight,
            grace_secs = grace.as_secs(),
            "stopping: no new runs; the runs in flight may finish"
        );
        let finished = tokio::select! {
            finished = tokio::time::timeout(grace, live.idle()) => finished.is_ok(),
            () = hurry => false,
        };
        if finished {
            return Drained {
                in_flight,
                stopped: 0,
                settled: true,
            };
        }
        let stopped = live.stop_all();
        tracing::warn!(
            runs = stopped,
            "stopping the runs still in flight, as a cancel does"
        );
        let settled = tokio::time::timeout(STOP_WAIT, live.idle()).await.is_ok();
        if !settled {
            tracing::error!(
                runs = live.len(),
                "runs did not end after being stopped; their threads free themselves when their lease expires"
            );
        }
        Drained {
            in_flight,
            stopped,
            settled,
        }
    }
}

/// The signals that stop a server: `SIGTERM` (Docker, ECS, Kubernetes, systemd, AgentCore) and
/// `SIGINT` (Ctrl-C). Each call to [`StopSignals::next`] waits for the next one.
pub(crate) struct StopSignals {
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    /// Listens from now on: a signal that arrives before [`StopSignals::next`] is not lost.
    pub(crate) fn listen() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let catch = |kind: SignalKind, name: &str| {
                signal(kind)
                    .inspect_err(|error| tracing::warn!(%error, "{name} cannot be caught"))
                    .ok()
            };
            Self {
                terminate: catch(SignalKind::terminate(), "SIGTERM"),
                interrupt: catch(SignalKind::interrupt(), "SIGINT"),
            }
        }
        #[cfg(not(unix))]
        Self {}
    }

    /// The name of the next stop signal, once it arrives.
    pub(crate) async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            async fn recv(signal: Option<&mut tokio::signal::unix::Signal>) {
                match signal {
                    Some(signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            tokio::select! {
                () = recv(self.terminate.as_mut()) => "SIGTERM",
                () = recv(self.interrupt.as_mut()) => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}

/// Under Lambda, `SIGTERM` comes only when an extension is registered (the ADOT layer is one),
/// between invocations, once the environment is to be shut down: the spans still held are sent
/// within Lambda's budget, then the process exits 0.
pub(crate) fn exit_on_lambda_shutdown() {
    let mut signals = StopSignals::listen();
    tokio::spawn(async move {
        let signal = signals.next().await;
        tracing::info!(signal, "the Lambda environment is shutting down");
        if tokio::time::timeout(LAMBDA_FLUSH_BUDGET, crate::telemetry::flush())
            .await
            .is_err()
        {
            tracing::warn!("spans not all exported within Lambda's shutdown budget");
        }
        std::process::exit(0);
    });
}
