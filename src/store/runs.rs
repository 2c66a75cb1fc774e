//! Run leases: [`RunLeases`] lets one run at a time hold a thread, storing its input when it
//! takes the lease and its output when it lets go, renewing the lease while it runs, and
//! passing it a caller's request to stop.

use super::StoreError;
use super::threads::{Checkpoint, ContextMark, StoredThread, ThreadLink};
use crate::auth::Principal;
use crate::protocol::{Message, RunId, ThreadId};
use async_trait::async_trait;
use bytes::Bytes;
use serde_json::Value;

/// A run's place in the store: its thread's incarnation and its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRef {
    pub thread_id: ThreadId,
    pub created_at_ms: i64,
    pub run_id: RunId,
}

/// Proof that a run holds a thread's lease.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    pub owner: Principal,
    pub thread_id: ThreadId,
    pub run_id: RunId,
    pub version: u64,
    /// Which runner of the run holds the lease: 1 for the one that began it, one more for each
    /// runner that took it over. Every write under the lease checks it, so a runner that lost
    /// the run can change nothing.
    pub epoch: u64,
    pub created_at_ms: i64,
    /// Sequence number of the next message appended to the thread.
    pub next_seq: usize,
    /// When this attempt of the run took the lease; keys its event log.
    pub started_at_ms: i64,
    /// How many messages the run stored so far (its input, then its checkpoints): with the
    /// output, whether `finish_run` records where the run ended (for forks from `parentRunId`).
    pub input_messages: usize,
    /// The run stored a record of its progress (a checkpoint): `finish_run` removes it.
    pub checkpointed: bool,
}

impl Lease {
    #[cfg(any(test, feature = "test-utils"))]
    pub fn run_ref(&self) -> RunRef {
        RunRef {
            thread_id: self.thread_id.clone(),
            created_at_ms: self.created_at_ms,
            run_id: self.run_id.clone(),
        }
    }
}

/// What `begin_run` writes.
#[derive(Debug, Clone)]
pub struct RunStart<'a> {
    pub owner: &'a Principal,
    pub thread_id: &'a ThreadId,
    pub run_id: &'a RunId,
    /// The thread as `load` returned it; `None` creates the thread.
    pub loaded: Option<&'a StoredThread>,
    /// Epoch milliseconds after which another run may take the thread over.
    pub lease_expires_at_ms: i64,
    pub new_messages: &'a [Message],
    /// `Some` replaces the stored state.
    pub state: Option<&'a Value>,
    /// The thread's title, stored unless it has one already.
    pub title: Option<&'a str>,
    /// When the input arrived (epoch ms): the time stored with each new message.
    pub at_ms: i64,
    /// The original times of the leading `new_messages` when they are copies (a fork from
    /// `parentRunId`), index-aligned; the messages past its end are stored at `at_ms`.
    pub copied_at_ms: &'a [i64],
}

/// What a delegating run stores in the write that starts its child ([`RunLeases::begin_linked_run`]):
/// its checkpoint, which marks the delegation started, and the events it sent that its event log
/// lacks. Stored together with the child's start, or not at all, so a crash never leaves a child
/// its parent does not know it started, nor a parent that says it started a child that never was.
/// Its checkpoint holds what a [`RunCheckpoint`](super::RunCheckpoint) does (never a hand-off).
#[derive(Debug, Clone, Copy)]
pub struct ParentStep<'a> {
    /// The parent run's lease (its version, run and epoch all checked).
    pub lease: &'a Lease,
    /// Appended to the parent's thread after what the run stored before.
    pub new_messages: &'a [Message],
    /// `Some` replaces the stored state.
    pub state: Option<&'a Value>,
    /// Replaces the parent thread's interrupt record; `None` removes it.
    pub interrupts: Option<&'a Value>,
    pub context: Option<&'a ContextUpdate>,
    /// The agent's record of the parent run.
    pub record: &'a str,
    /// When the messages were stored (epoch ms).
    pub at_ms: i64,
    /// The parent's lease is renewed until then (epoch ms).
    pub lease_until_ms: i64,
    /// The sequence number of `events[0]` in the parent's event log.
    pub events_from: u64,
    pub events: &'a [Bytes],
}

/// A child's run begun by [`RunLeases::begin_linked_run`].
#[derive(Debug, Clone)]
pub struct LinkedRun {
    pub lease: Lease,
    /// The parent's thread version after its step, when one was stored with the start.
    pub parent_version: Option<u64>,
}

/// What `finish_run` writes.
#[derive(Debug, Clone)]
pub struct RunFinish<'a> {
    pub lease: &'a Lease,
    /// The run's output, appended to the thread.
    pub new_messages: &'a [Message],
    /// `Some` replaces the stored state.
    pub state: Option<&'a Value>,
    /// Replaces the thread's interrupt record; `None` removes it.
    pub interrupts: Option<&'a Value>,
    /// When the output was stored (epoch ms): the time stored with each new message.
    pub at_ms: i64,
    /// What the run learned about the model's view: a new checkpoint, the provider's count.
    pub context: Option<&'a ContextUpdate>,
}

/// What a run leaves for the next run's estimate and view.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContextUpdate {
    /// A compaction the run made; it replaces the thread's checkpoint.
    pub checkpoint: Option<Checkpoint>,
    /// The provider's count of the run's last model call.
    pub mark: Option<ContextMark>,
}

/// What the run's heartbeat learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pulse {
    pub cancel_requested: bool,
}

/// The answer to a cancel request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelState {
    /// The run holds its lease; it has been asked to stop.
    Requested,
    /// The run exists but has already ended.
    Ended,
}

/// A run costs one consistent read ([`Threads::load`](super::Threads::load)) and two writes:
/// `begin_run` takes the lease and stores the input, `finish_run` stores the output and releases
/// it; plus its usage and, under a quota, its reservation ([`UsageLedger`](super::UsageLedger)).
#[async_trait]
pub trait RunLeases: Send + Sync {
    /// Takes the run lease and stores the run's new input messages and state, atomically.
    async fn begin_run(&self, start: RunStart<'_>) -> Result<Lease, StoreError>;

    /// [`begin_run`](Self::begin_run) for a sub-agent's new thread (`start.loaded` is `None`),
    /// linked to `parent` in the same write: only while `parent`'s thread (the same owner's, that
    /// incarnation) exists and is not being deleted, else `NotFound`. With `step`, the parent's
    /// checkpoint and pending events are stored atomically with it (under the parent's lease:
    /// `LeaseLost` once another runner holds the parent's run): one write when they fit one
    /// transaction; otherwise the events first, then the rest (see the DynamoDB store).
    async fn begin_linked_run(
        &self,
        start: RunStart<'_>,
        parent: &ThreadLink,
        step: Option<ParentStep<'_>>,
    ) -> Result<LinkedRun, StoreError>;

    /// Appends the run's output, stores the state, replaces the interrupt record and releases
    /// the lease, atomically; only while the lease is still held.
    async fn finish_run(&self, finish: RunFinish<'_>) -> Result<(), StoreError>;

    /// Renews the lease until `renew_until_ms` (epoch ms), or only reads when `None`, and
    /// reports whether a cancel was requested. `LeaseLost` once another run holds the thread.
    async fn pulse(&self, lease: &Lease, renew_until_ms: Option<i64>) -> Result<Pulse, StoreError>;

    /// Asks `run_id` of `owner`'s thread to stop. `NotFound` for an unknown run or thread.
    async fn request_cancel(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        run_id: &RunId,
    ) -> Result<CancelState, StoreError>;
}
