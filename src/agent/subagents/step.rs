//! A delegating run's step carried into its child's start: the run's checkpoint (the delegation
//! marked started) and the events its log lacks, stored in the same write that creates the
//! child's thread (`store::ParentStep`), so the child's first event follows one write. The run
//! learns how that went through [`StepOutcome`]; if the step was not stored with the child, the
//! run stores it itself before any child starts.

use crate::protocol::Message;
use crate::store::{ContextUpdate, Lease, ParentStep};
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{OwnedMutexGuard, oneshot, watch};

/// What the step stores, owned (a checkpoint's fields and the pending events).
pub(crate) struct StepData {
    pub(crate) lease: Lease,
    pub(crate) new_messages: Vec<Message>,
    pub(crate) state: Option<Value>,
    pub(crate) interrupts: Option<Value>,
    pub(crate) context: Option<ContextUpdate>,
    /// The run's record, saying its events up to the last of `events` were sent.
    pub(crate) record: String,
    pub(crate) at_ms: i64,
    pub(crate) lease_until_ms: i64,
    /// The sequence number of `events[0]`.
    pub(crate) events_from: u64,
    pub(crate) events: Vec<Bytes>,
}

/// The step on its way into a child's start.
pub(crate) struct FoldedStep {
    pub(crate) data: StepData,
    /// The run's event log, locked where it was written up to: the recorder writes none of
    /// `data.events` while the step may.
    recording: Option<OwnedMutexGuard<u64>>,
    /// Tells the run: stored (its thread's version after), or not.
    outcome: Option<oneshot::Sender<Option<u64>>>,
    /// Opens once the run's step is stored, with a child's start or by the run itself.
    stored: watch::Receiver<bool>,
}

/// The run's side: how the step went, and the gate it opens once its step is stored either way.
pub(crate) struct StepOutcome {
    pub(crate) outcome: oneshot::Receiver<Option<u64>>,
    pub(crate) stored: watch::Sender<bool>,
}

impl FoldedStep {
    /// `data` for a child to store, the run's log locked at `recording`.
    pub(crate) fn new(data: StepData, recording: OwnedMutexGuard<u64>) -> (Self, StepOutcome) {
        let (told, outcome) = oneshot::channel();
        let (stored, opened) = watch::channel(false);
        let step = Self {
            data,
            recording: Some(recording),
            outcome: Some(told),
            stored: opened,
        };
        (step, StepOutcome { outcome, stored })
    }

    /// The step as the store writes it.
    pub(crate) fn as_store(&self) -> ParentStep<'_> {
        let data = &self.data;
        ParentStep {
            lease: &data.lease,
            new_messages: &data.new_messages,
            state: data.state.as_ref(),
            interrupts: data.interrupts.as_ref(),
            context: data.context.as_ref(),
            record: &data.record,
            at_ms: data.at_ms,
            lease_until_ms: data.lease_until_ms,
            events_from: data.events_from,
            events: &data.events,
        }
    }

    /// Stored with the child's start: the events are in the log (the run tells its followers),
    /// and the run's thread is at `parent_version`.
    pub(crate) fn stored(mut self, parent_version: u64) {
        let events = self.data.events.len() as u64;
        if let Some(mut recording) = self.recording.take()
            && events > 0
        {
            *recording = self.data.events_from + events - 1;
        }
        if let Some(outcome) = self.outcome.take() {
            let _ = outcome.send(Some(parent_version));
        }
    }

    /// Not stored with the child: the run stores its step itself; resolves once it has, after
    /// which the child may start alone.
    pub(crate) async fn not_stored(self) {
        let mut stored = self.stored.clone();
        drop(self);
        let _ = stored.wait_for(|stored| *stored).await;
    }
}

impl Drop for FoldedStep {
    fn drop(&mut self) {
        // The log first: the run's own checkpoint has the recorder flush it.
        self.recording.take();
        if let Some(outcome) = self.outcome.take() {
            let _ = outcome.send(None);
        }
    }
}

impl StepOutcome {
    /// A gate that opens once the run's step is stored: what a delegation without the step
    /// waits on before its child starts.
    pub(crate) fn gate(&self) -> watch::Receiver<bool> {
        self.stored.subscribe()
    }
}
