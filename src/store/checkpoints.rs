//! Run checkpoints: [`RunCheckpoints`] stores a run's progress as it goes (its messages, its
//! state and the agent's record of where it is) under its lease, hands the run over to the next
//! invocation, and lets exactly one runner take it over, fenced by the lease's epoch.

use super::StoreError;
use super::runs::{ContextUpdate, Lease, ParentStep};
use super::threads::StoredThread;
use crate::auth::Principal;
use crate::protocol::{Message, RunId, ThreadId};
use async_trait::async_trait;
use serde_json::Value;

/// What `checkpoint_run` writes, under `lease` (its version, run and epoch all checked).
#[derive(Debug, Clone)]
pub struct RunCheckpoint<'a> {
    pub lease: &'a Lease,
    /// Appended to the thread after what the run stored before.
    pub new_messages: &'a [Message],
    /// `Some` replaces the stored state.
    pub state: Option<&'a Value>,
    /// Replaces the thread's interrupt record; `None` removes it.
    pub interrupts: Option<&'a Value>,
    pub context: Option<&'a ContextUpdate>,
    /// The agent's record of the run (its request and where it is), opaque to the store.
    pub record: &'a str,
    /// When the messages were stored (epoch ms).
    pub at_ms: i64,
    /// The lease is renewed until then (epoch ms).
    pub lease_until_ms: i64,
    /// This runner lets go: the next runner may take the run over at once (`claim_run` with
    /// this lease's epoch), without waiting for the lease to expire.
    pub hand_off: bool,
}

impl<'a> From<ParentStep<'a>> for RunCheckpoint<'a> {
    fn from(step: ParentStep<'a>) -> Self {
        Self {
            lease: step.lease,
            new_messages: step.new_messages,
            state: step.state,
            interrupts: step.interrupts,
            context: step.context,
            record: step.record,
            at_ms: step.at_ms,
            lease_until_ms: step.lease_until_ms,
            hand_off: false,
        }
    }
}

/// What a runner asks to take a run over with.
#[derive(Debug, Clone)]
pub struct RunClaim<'a> {
    pub owner: &'a Principal,
    pub thread_id: &'a ThreadId,
    pub run_id: &'a RunId,
    /// The epoch that handed the run off (a continuation names it); `None` takes only a lease
    /// that expired (crash recovery).
    pub handed_off_by: Option<u64>,
    pub lease_expires_at_ms: i64,
}

/// A run taken over: the new lease (its epoch one past the last), the thread from its latest
/// compaction checkpoint on, and the agent's record as last checkpointed.
#[derive(Debug, Clone)]
pub struct ClaimedRun {
    pub lease: Lease,
    pub thread: StoredThread,
    pub record: String,
    /// A cancel was requested while the run was between runners.
    pub cancel_requested: bool,
    /// The previous runner did not hand the run off: its lease expired (it crashed, or was
    /// stopped by its invocation's deadline).
    pub recovered: bool,
}

/// The answer to a claim.
#[derive(Debug, Clone)]
pub enum Claim {
    Taken(Box<ClaimedRun>),
    /// A live runner holds the run (epoch `epoch`) until `until_ms`, and did not hand it to
    /// this claim.
    Held {
        epoch: u64,
        until_ms: i64,
    },
    /// The run is over, was replaced by another run, or never checkpointed: nothing to take.
    Gone,
}

#[async_trait]
pub trait RunCheckpoints: Send + Sync {
    /// Stores a step of a run, atomically with the record of where it is, and renews the lease;
    /// `LeaseLost` once another runner holds it. Returns the thread's version after the write.
    async fn checkpoint_run(&self, checkpoint: RunCheckpoint<'_>) -> Result<u64, StoreError>;

    /// Takes a run over: the run must still hold its thread with a record, and either name this
    /// claim's epoch as the one that handed it off or have let its lease expire. One claim wins.
    async fn claim_run(&self, claim: RunClaim<'_>) -> Result<Claim, StoreError>;
}
