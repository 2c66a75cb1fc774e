//! The driver around the loop: the run's recorder and heartbeat, then, once the loop is over,
//! its output stored, its log ended with the terminal event (written only after the thread
//! store accepted the output), its quota settled and the run reported.

use super::outcome::{RunEnd, RunFailure, RunOutcomeKind};
use super::{Emitter, PreparedRun};
use crate::agent::background;
use crate::agent::live::{LiveRun, StopReason};
use crate::store::meter::metered;
use crate::store::{RunFinish, StoreError};
use std::sync::Arc;
use tokio::task::JoinHandle;
use tracing::Instrument;

/// The tasks that run beside the loop.
struct Companions {
    /// Writes the run's events to the store; `None` when runs are not recorded.
    recorder: Option<JoinHandle<()>>,
    /// Keeps the lease and notices a cancel requested elsewhere.
    heartbeat: JoinHandle<()>,
}

impl PreparedRun {
    /// Runs the loop with its recorder and heartbeat, stores what it produced, and ends the
    /// log with the terminal event.
    pub(super) async fn drive(mut self, live: Arc<LiveRun>) {
        let began = std::time::Instant::now();
        let companions = self.start_companions(&live);
        let stop = live.stop_token().clone();
        let mut result = self.execute(&Emitter(&live), &stop).await;
        if matches!(result, Ok(RunEnd::HandedOff)) && live.stop_reason().is_none() {
            self.hand_off(&live, companions.recorder, companions.heartbeat)
                .await;
            return;
        }
        if matches!(result, Ok(RunEnd::HandedOff)) {
            // Stopped while letting go: it ends here, as stopped.
            result = Err(RunFailure::Cancelled);
        }
        companions.heartbeat.abort();
        // Gone (with its hold on the run's spans) before the run counts as done.
        let _ = companions.heartbeat.await;
        if live.stop_reason() == Some(StopReason::LeaseLost) {
            result = Err(RunFailure::Store(StoreError::LeaseLost));
        }
        self.save(&mut result).await;
        if let Some(failed) = self.abandoned_surface() {
            live.push(failed);
        }
        let terminal = self.terminal_event(&result);
        self.progress.summary.outcome = RunOutcomeKind::of(&result);
        live.push(terminal);
        // Usage is recorded after the terminal event, off the streaming path; the run is still
        // in flight (so a Lambda invocation does not end) until it is.
        self.settle_usage().await;
        // The run counts as in flight until its log is written: under Lambda the invocation
        // ends (and the environment may freeze) only after that.
        if let Some(recorder) = companions.recorder {
            let _ = recorder.await;
        }
        // Last, so that the store's usage counts every write of the run.
        self.report(began.elapsed(), live.rejoins());
    }

    /// The recorder (when runs are recorded) and the heartbeat, each on its own task, in the
    /// run's span and counted by its store meter.
    fn start_companions(&self, live: &Arc<LiveRun>) -> Companions {
        let store = &self.agent.store;
        let settings = &self.agent.settings;
        let meter = &self.telemetry.meter;
        let recorder = settings.record_events.then(|| {
            tokio::spawn(
                metered(
                    meter.clone(),
                    background::record(
                        store.clone(),
                        self.lease.clone(),
                        live.clone(),
                        settings.record_interval,
                    ),
                )
                .in_current_span(),
            )
        });
        let heartbeat = tokio::spawn(
            metered(
                meter.clone(),
                background::heartbeat(
                    store.clone(),
                    self.lease.clone(),
                    live.clone(),
                    settings.lease,
                    settings.cancel_poll,
                ),
            )
            .in_current_span(),
        );
        Companions {
            recorder,
            heartbeat,
        }
    }

    /// Stores what the run produced (what its checkpoints did not), its state if a tool changed
    /// it, and the thread's interrupts (with those the run opened). A run that did not fail
    /// otherwise fails when this does.
    async fn save(&mut self, result: &mut Result<RunEnd, RunFailure>) {
        let progress = &mut self.progress;
        let context = progress.context.update();
        let state_changed = progress.state != progress.saved_state;
        let mut interrupts = std::mem::take(&mut progress.interrupts);
        if let Ok(RunEnd::Interrupted(pending)) = &result {
            interrupts.open.extend(pending.iter().cloned());
        }
        interrupts
            .open
            .extend(std::mem::take(&mut progress.fallback_approvals));
        // Cloned: the terminal event names their interrupts too.
        interrupts
            .delegated
            .extend(progress.delegated.iter().cloned());
        let saved = self
            .agent
            .store
            .finish_run(RunFinish {
                lease: &self.lease,
                new_messages: progress.unstored(),
                state: if state_changed {
                    progress.state.as_ref()
                } else {
                    None
                },
                interrupts: interrupts.to_value().as_ref(),
                at_ms: chrono::Utc::now().timestamp_millis(),
                context: context.as_ref(),
            })
            .await;
        if let Err(error) = saved {
            tracing::error!(%error, thread_id = %self.lease.thread_id, "storing the run failed");
            if matches!(result, Ok(_) | Err(RunFailure::Cancelled)) {
                *result = Err(RunFailure::Store(error));
            }
        }
    }

    /// Records the run's tokens against its caller's quota, per model, and gives back what it
    /// reserved.
    async fn settle_usage(&self) {
        let summary = &self.progress.summary;
        let identity = self.agent.model.identity();
        let mut used: Vec<crate::store::RunTokens<'_>> = summary
            .by_model
            .iter()
            .map(|(model, usage)| crate::store::RunTokens {
                provider: &model.provider,
                model: &model.model,
                input: usage.input_tokens,
                output: usage.output_tokens,
                reasoning: usage.reasoning_tokens.unwrap_or(0),
                cached_input: usage.cached_input_tokens.unwrap_or(0),
            })
            .collect();
        if used.is_empty() {
            // A run that called no model still counts as a run of its model.
            used.push(crate::store::RunTokens {
                provider: &identity.provider,
                model: &identity.model,
                input: 0,
                output: 0,
                reasoning: 0,
                cached_input: 0,
            });
        }
        self.agent.settle(&self.reservation, Some(&used)).await;
    }
}
