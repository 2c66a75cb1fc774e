//! Runs that outlast their invocation: at each step boundary (before a model call or a tool
//! call) a runner with an invocation deadline starts the step only if it can finish in time,
//! and otherwise hands the run off: its events recorded, a checkpoint that lets the next runner
//! take over, a notice that ends this invocation's streams, and the next invocation started.
//! Checkpoints as the run goes (a turn's calls about to start, their results) live here too.

use super::{Emitter, PreparedRun};
use crate::agent::live::LiveRun;
use crate::agent::turn::TurnCall;
use crate::protocol::events::RecordedEvent;
use crate::store::{RunCheckpoint, StoreError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long a checkpoint waits for the recorder to write the events before it (a store that
/// does not answer must not hold the run).
const FLUSH_WAIT: Duration = Duration::from_secs(2);
/// Attempts at starting the next invocation.
const SEND_ATTEMPTS: u32 = 3;

/// The part of the run this process runs.
#[derive(Debug, Default)]
pub(crate) struct Segment {
    /// When this runner must have let the run go (its invocation's deadline less the margin);
    /// `None`: the run goes on here to its end.
    pub(super) ends: Option<Instant>,
    /// Steps (model turns, batches of tool calls) this runner took: every runner takes at
    /// least one, so a step longer than an invocation still runs (and is cut at its end).
    pub(super) steps: u32,
}

/// What the runners before this one counted, carried to the run's end.
#[derive(Debug, Clone, Default)]
pub(crate) struct Carried {
    pub(super) handoffs: u32,
    pub(super) store: super::record::StoredStoreFigures,
}

impl PreparedRun {
    /// The run is served by an invocation that ends at `ends` (its deadline less the margin):
    /// it hands off before then when the deployment can start its next invocation, and ends
    /// there otherwise.
    pub(crate) fn end_invocation_at(&mut self, ends: Instant) {
        if ends >= self.request.deadline {
            return;
        }
        if self.agent.continuations.is_some() {
            self.segment.ends = Some(ends);
        } else {
            self.request.deadline = ends;
        }
    }

    /// When the step in flight must stop: the run's deadline, or this runner's.
    pub(super) fn limit(&self) -> Instant {
        self.segment.ends.map_or(self.request.deadline, |ends| {
            ends.min(self.request.deadline)
        })
    }

    /// Whether reaching [`Self::limit`] ends this runner's part (and not the run).
    pub(super) fn limit_is_segment(&self) -> bool {
        self.segment
            .ends
            .is_some_and(|ends| ends < self.request.deadline)
    }

    /// Whether a step expected to take `needs` should go to the next runner instead.
    fn should_hand_off(&self, needs: Duration) -> bool {
        let Some(ends) = self.segment.ends else {
            return false;
        };
        self.segment.steps > 0 && Instant::now() + needs > ends
    }

    /// Before model turn `step`: hand off when it may not finish in time.
    pub(super) fn hand_off_before_turn(&mut self, step: u32) -> bool {
        let needs = self
            .agent
            .settings
            .step_estimate
            .max(self.progress.longest_model_turn);
        let hand_off = self.should_hand_off(needs);
        if hand_off {
            self.progress.phase = super::record::Phase::Model { step };
        }
        hand_off
    }

    /// Before a batch of tool calls: hand off when one of them may not finish in time (a tool's
    /// own timeout is how long it may take, a sub-agent's `timeoutMs` how long its delegation
    /// may; without one, the step estimate).
    pub(super) fn hand_off_before_calls(&self, batch: &[TurnCall]) -> bool {
        let agent = &self.agent;
        let estimate = agent.settings.step_estimate;
        let needs = batch
            .iter()
            .map(|call| {
                let own = match agent.subagent(&call.name) {
                    Some(subagent) => subagent.timeout,
                    None => agent.tools.timeout_of(&call.name),
                };
                own.unwrap_or(estimate)
            })
            .max()
            .unwrap_or_default();
        self.should_hand_off(needs)
    }

    /// Stores the run's progress: the messages it made since the last checkpoint, its state and
    /// interrupt record, and its record (with the phase as set). The events before it are
    /// recorded first, so a runner that takes over after a crash finds them.
    pub(super) async fn checkpoint(
        &mut self,
        out: &Emitter<'_>,
    ) -> Result<(), super::outcome::RunFailure> {
        let live = out.0;
        let events_through = if self.agent.settings.record_events {
            live.flush(FLUSH_WAIT).await;
            live.recorded_seq()
        } else {
            live.last_seq()
        };
        self.write_checkpoint(events_through, false)
            .await
            .map_err(super::outcome::RunFailure::Store)
    }

    /// [`Self::checkpoint`]'s write; with `hand_off`, the next runner may take over at once.
    async fn write_checkpoint(
        &mut self,
        events_through: u64,
        hand_off: bool,
    ) -> Result<(), StoreError> {
        let record = serde_json::to_string(&self.record(events_through))
            .map_err(|error| StoreError::Corrupt(format!("a run's record: {error}")))?;
        let progress = &self.progress;
        let new_messages = progress.unstored();
        let context = progress.context.update();
        let state_changed = progress.state != progress.saved_state;
        let interrupts = progress.interrupts.to_value();
        let version = self
            .agent
            .store
            .checkpoint_run(RunCheckpoint {
                lease: &self.lease,
                new_messages,
                state: progress.state.as_ref().filter(|_| state_changed),
                interrupts: interrupts.as_ref(),
                context: context.as_ref(),
                record: &record,
                at_ms: chrono::Utc::now().timestamp_millis(),
                lease_until_ms: super::super::lease_expiry(self.agent.settings.lease),
                hand_off,
            })
            .await?;
        self.checkpointed(version, new_messages.len());
        Ok(())
    }

    /// A checkpoint that stored `stored` messages left the thread at `version`.
    pub(super) fn checkpointed(&mut self, version: u64, stored: usize) {
        self.lease.version = version;
        self.lease.next_seq += stored;
        self.lease.input_messages += stored;
        self.lease.checkpointed = true;
        self.progress.stored += stored;
        self.progress.saved_state = self.progress.state.clone();
    }

    /// Lets the run go to its next runner: the events recorded, the checkpoint that lets the
    /// next runner take over, the notice that ends every stream of this invocation, and the
    /// next invocation started. The recorder and the heartbeat must still be running: the
    /// recorder writes while the lease is held.
    pub(super) async fn hand_off(
        &mut self,
        live: &Arc<LiveRun>,
        recorder: Option<tokio::task::JoinHandle<()>>,
        heartbeat: tokio::task::JoinHandle<()>,
    ) {
        live.seal();
        if let Some(recorder) = recorder {
            let _ = recorder.await;
        }
        heartbeat.abort();
        let _ = heartbeat.await;
        self.progress.carried.handoffs += 1;
        let events_through = if self.agent.settings.record_events {
            live.recorded_seq()
        } else {
            live.last_seq()
        };
        if events_through < live.last_seq() {
            // The next runner numbers on from the log: a client that saw the events the log
            // lacks gets the next runner's events under their ids.
            tracing::error!(run_id = %self.lease.run_id, recorded = events_through, sent = live.last_seq(), "the run's last events could not be recorded before its hand-off");
        }
        let written = self.write_checkpoint(events_through, true).await;
        if let Err(error) = &written {
            // The last checkpoint stands; the run is taken over once its lease expires.
            tracing::error!(%error, run_id = %self.lease.run_id, "storing the run's hand-off failed");
        }
        live.push_notice(RecordedEvent::continues(
            &self.lease.thread_id,
            &self.lease.run_id,
            live.last_seq(),
            &crate::agent::events_path(&self.lease.thread_id, &self.lease.run_id),
            chrono::Utc::now().timestamp_millis(),
        ));
        if written.is_ok() {
            self.send_continuation().await;
        }
        self.report_handoff();
    }

    /// Starts the next invocation, which takes the run over from this runner's epoch.
    async fn send_continuation(&self) {
        let Some(continuations) = &self.agent.continuations else {
            return;
        };
        let continuation = Continuation {
            principal: self.lease.owner.as_str().to_owned(),
            thread_id: self.lease.thread_id.to_string(),
            run_id: self.lease.run_id.to_string(),
            handed_off_by: Some(self.lease.epoch),
        };
        for attempt in 1..=SEND_ATTEMPTS {
            match continuations.send(&continuation).await {
                Ok(()) => return,
                Err(error) => {
                    tracing::warn!(%error, attempt, run_id = %self.lease.run_id, "starting the run's next invocation failed");
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
                }
            }
        }
        tracing::error!(run_id = %self.lease.run_id, "the run's next invocation could not be started: it is taken over once its lease expires");
    }

    /// This runner's log line and trace outcome; the run's metrics come at its end.
    fn report_handoff(&self) {
        let summary = &self.progress.summary;
        tracing::info!(
            thread_id = %self.lease.thread_id,
            run_id = %self.lease.run_id,
            runner = self.lease.epoch,
            handoffs = self.progress.carried.handoffs,
            steps = summary.steps,
            tool_calls = summary.tool_calls,
            "run handed off to its next invocation"
        );
        crate::agent::spans::end_run(&self.telemetry.trace, summary.usage, "handed_off", None);
    }
}

/// A turn's server calls and delegations in the batches they run in: those that may run in
/// parallel together with every delegation (sub-agents run side by side), then each of the
/// others alone, in call order.
pub(super) fn next_batch(pending: &[TurnCall], agent: &crate::agent::Agent) -> Vec<TurnCall> {
    let parallel: Vec<TurnCall> = pending
        .iter()
        .filter(|call| {
            agent.subagent(&call.name).is_some() || agent.tools.may_run_in_parallel(&call.name)
        })
        .cloned()
        .collect();
    if !parallel.is_empty() {
        return parallel;
    }
    pending.first().cloned().into_iter().collect()
}

/// What a new runner is asked to take over: sent by the runner that handed the run off
/// (`handed_off_by` its epoch), or by whoever found the run stalled (`None`: it is taken only
/// once its lease has expired).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Continuation {
    pub principal: String,
    pub thread_id: String,
    pub run_id: String,
    pub handed_off_by: Option<u64>,
}

/// Starts a run's next runner elsewhere (under Lambda, an asynchronous invocation of this
/// function carrying the [`Continuation`]).
#[async_trait::async_trait]
pub(crate) trait Continuations: Send + Sync {
    async fn send(&self, continuation: &Continuation) -> Result<(), String>;
}
