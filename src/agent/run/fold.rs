//! A delegation's first write: before a batch that starts a profile's child, the run does not
//! store its checkpoint (and flush its events) itself; the child's start carries them, so the
//! child's first event follows one write. The batch's other calls (server tools, other
//! delegations) wait until the step is stored, with that child or, when it was not, by the run
//! itself: a call never starts before the record that says it started.

use super::outcome::RunFailure;
use super::{Emitter, PreparedRun};
use crate::agent::subagents::{FoldedStep, StepData, StepOutcome, SubagentTarget};
use crate::agent::turn::TurnCall;
use crate::store::StoreError;
use bytes::Bytes;
use std::future::Future;
use std::pin::Pin;

/// The run's side of a step on its way into a child's start.
pub(super) struct Folding {
    outcome: StepOutcome,
    /// The messages the step stores.
    messages: usize,
    /// The last event it writes, if it writes any.
    last_event: Option<u64>,
}

impl Folding {
    /// What the batch's other delegations wait on before their children start.
    pub(super) fn gate(&self) -> tokio::sync::watch::Receiver<bool> {
        self.outcome.gate()
    }
}

impl PreparedRun {
    /// Whether a delegation of `batch` can carry the run's step: one starts a profile's child.
    pub(super) fn folds(&self, batch: &[TurnCall]) -> bool {
        batch.iter().any(|call| {
            self.agent
                .subagent(&call.name)
                .is_some_and(|subagent| matches!(subagent.target, SubagentTarget::Profile(_)))
        })
    }

    /// The checkpoint [`Self::checkpoint`] would store now, with the events the run's log
    /// lacks (the log stays locked for the child's start to write them), for a child's start.
    pub(super) async fn folded_step(
        &mut self,
        out: &Emitter<'_>,
    ) -> Result<(FoldedStep, Folding), RunFailure> {
        let live = out.0;
        let recording = live.recording().await;
        let events: Vec<Bytes> = if self.agent.settings.record_events {
            let (pending, _) = live.since(*recording);
            pending
                .iter()
                .filter(|event| !event.notice)
                .map(|event| event.json.clone())
                .collect()
        } else {
            Vec::new()
        };
        let events_from = *recording + 1;
        let last_event = (!events.is_empty()).then(|| *recording + events.len() as u64);
        let record = serde_json::to_string(&self.record(live.last_seq()))
            .map_err(|error| StoreError::Corrupt(format!("a run's record: {error}")))
            .map_err(RunFailure::Store)?;
        let progress = &self.progress;
        let data = StepData {
            lease: self.lease.clone(),
            new_messages: progress.unstored().to_vec(),
            state: progress
                .state
                .clone()
                .filter(|_| progress.state != progress.saved_state),
            interrupts: progress.interrupts.to_value(),
            context: progress.context.update(),
            record,
            at_ms: chrono::Utc::now().timestamp_millis(),
            lease_until_ms: crate::agent::lease_expiry(self.agent.settings.lease),
            events_from,
            events,
        };
        let messages = data.new_messages.len();
        let (step, outcome) = FoldedStep::new(data, recording);
        Ok((
            step,
            Folding {
                outcome,
                messages,
                last_event,
            },
        ))
    }

    /// Waits until the step is stored (with the child's start, or else by the run itself), the
    /// batch's delegations going on meanwhile; then opens the gate the others wait on. Returns
    /// the delegations' outcomes if they all ended meanwhile.
    pub(super) async fn step_stored<T>(
        &mut self,
        folding: Folding,
        delegations: &mut Pin<&mut impl Future<Output = T>>,
        out: &Emitter<'_>,
    ) -> Result<Option<T>, RunFailure> {
        let Folding {
            outcome:
                StepOutcome {
                    mut outcome,
                    stored,
                },
            messages,
            last_event,
        } = folding;
        let mut ended = None;
        let version = loop {
            tokio::select! {
                told = &mut outcome => break told.ok().flatten(),
                done = delegations.as_mut(), if ended.is_none() => ended = Some(done),
            }
        };
        match version {
            Some(version) => {
                self.checkpointed(version, messages);
                if let Some(last) = last_event {
                    out.0.note_recorded(last);
                }
            }
            // No child stored it: the run stores it alone, then the children start.
            None => self.checkpoint(out).await?,
        }
        let _ = stored.send(true);
        Ok(ended)
    }
}
