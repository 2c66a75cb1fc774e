//! Thread persistence, one trait per capability: [`Threads`], [`ThreadShelf`], [`History`], [`RunLeases`],
//! [`RunCheckpoints`], [`EventLog`], [`UsageLedger`], [`TaskRecords`], [`A2aTasks`] and [`Memories`], gathered by [`ThreadStore`] and implemented
//! by [`MemoryStore`] and `DynamoStore`. Shared here: who owns a thread, the errors, the limits.

mod a2a_tasks;
mod blob_types;
#[cfg(feature = "aws")]
pub(crate) mod blobs;
pub(crate) use blob_types::BlobError;
#[cfg(not(feature = "aws"))]
pub use blob_types::Blobs;
// Re-exported for the tests (`testing`); the crate itself names them through `Blobs`.
#[cfg(feature = "test-utils")]
pub use blob_types::{StoredBlob, Upload};
#[cfg(feature = "aws")]
pub use blobs::Blobs;
mod checkpoints;
#[cfg(feature = "aws")]
pub(crate) mod dynamo;
mod events;
mod history;
mod memories;
pub(crate) mod memory;
pub(crate) mod meter;
mod page;
mod runs;
mod tasks;
mod threads;
mod usage;

use crate::protocol::Message;
use serde_json::Value;

pub(crate) use a2a_tasks::MAX_TASK_ID_LEN;
pub(crate) use a2a_tasks::{A2aTaskCursor, A2aTaskPage, A2aTaskQuery, A2aTaskRecord, A2aTasks};
pub use checkpoints::{Claim, ClaimedRun, RunCheckpoint, RunCheckpoints, RunClaim};
#[cfg(feature = "aws")]
pub use dynamo::DynamoStore;
#[cfg(all(feature = "aws", any(test, feature = "test-utils")))]
pub use dynamo::StoreUsage;
pub use events::EventLog;
pub(crate) use events::{EventCursor, EventPage};
pub(crate) use history::HistoryPage;
pub use history::{
    AfterQuery, History, HistoryQuery, MessagesAfter, Runner, TimedMessage, TimedPage, TimedQuery,
};
pub use memories::{Memories, Memory, MemoryEdit, MemoryId, MemorySet, NewMemory};
pub use memory::MemoryStore;
pub use runs::CancelState;
pub use runs::{ContextUpdate, Lease, LinkedRun, ParentStep, RunFinish, RunLeases, RunStart};
pub(crate) use runs::{Pulse, RunRef};
pub(crate) use tasks::task_message;
pub use tasks::{TaskFailure, TaskRecord, TaskRecords, TaskState};
pub use threads::{
    Archived, Deletion, NewThread, ShelfPage, ShelfQuery, ShelvedThread, ThreadActivity,
    ThreadLink, ThreadShelf, Threads,
};
pub use threads::{Checkpoint, ContextMark};
pub(crate) use threads::{RunEnd, StoredThread, ThreadList, ThreadSummary};
pub(crate) use usage::{DayUsage, ModelUsage, Reservation, secs_to_next_day, secs_to_next_minute};
pub use usage::{QuotaExceeded, QuotaLimits, RunTokens, Settlement, UsageLedger, usage_day};

/// Every capability of a thread store, for the places that need them all (the agent, start-up):
/// any type with all of them is one.
pub trait ThreadStore:
    Threads
    + ThreadShelf
    + History
    + RunLeases
    + RunCheckpoints
    + EventLog
    + UsageLedger
    + TaskRecords
    + A2aTasks
    + Memories
{
}

impl<T> ThreadStore for T where
    T: Threads
        + ThreadShelf
        + History
        + RunLeases
        + RunCheckpoints
        + EventLog
        + UsageLedger
        + TaskRecords
        + A2aTasks
        + Memories
        + ?Sized
{
}

/// The largest message a store accepts, serialised (DynamoDB items are limited to 400 KB).
pub(crate) const MAX_MESSAGE_BYTES: usize = 390_000;
/// The largest state a store accepts, serialised; it shares an item with the thread record.
pub(crate) const MAX_STATE_BYTES: usize = 350_000;

/// Checks a run's writes against the limits every store shares.
pub(crate) fn check_sizes(messages: &[Message], state: Option<&Value>) -> Result<(), StoreError> {
    for message in messages {
        let size = serde_json::to_string(message)
            .map(|text| text.len())
            .unwrap_or(usize::MAX);
        if size > MAX_MESSAGE_BYTES {
            return Err(StoreError::MessageTooLarge(size));
        }
    }
    if let Some(state) = state {
        let size = state.to_string().len();
        if size > MAX_STATE_BYTES {
            return Err(StoreError::StateTooLarge(size));
        }
    }
    Ok(())
}

/// The time stored with the `index`th message of a write: its original time when it is a copy,
/// else the write's.
///
/// Every stored message carries the time it was stored (epoch ms): a run's input at
/// [`RunStart::at_ms`], its output at [`RunFinish::at_ms`], a fork's copies at their original
/// times. Messages stored before times were kept have none and count as stored when their
/// thread was created (`created_at_ms`).
pub(crate) fn message_time(copied_at_ms: &[i64], index: usize, at_ms: i64) -> i64 {
    copied_at_ms.get(index).copied().unwrap_or(at_ms)
}

/// What made a store call fail, kept as the error's source.
pub(crate) type StoreCause = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another run holds the lease, or the thread changed since it was loaded.
    #[error("the thread has an active run")]
    Conflict,
    /// Reported for a thread that does not exist and for one that belongs to someone else alike.
    #[error("thread not found")]
    NotFound,
    /// The run's lease expired and another run took the thread.
    #[error("the run lost its lease on the thread")]
    LeaseLost,
    #[error("the thread's state is too large to store ({0} bytes)")]
    StateTooLarge(usize),
    #[error("a message is too large to store ({0} bytes)")]
    MessageTooLarge(usize),
    /// A history cursor that this store never handed out.
    #[error("the cursor is not valid for this thread")]
    BadCursor,
    /// A quota refused the run before it started.
    #[error("{0}")]
    QuotaExceeded(QuotaExceeded),
    /// A stored item does not parse: written by something else, or by a bug. Never a client's
    /// mistake, and retrying will not help.
    #[error("a stored item is corrupt: {0}")]
    Corrupt(String),
    /// The principal keeps as many memories as `MEMORY_MAX_ITEMS` allows.
    #[error("no room for another memory: {0} are kept, the most allowed; delete one first")]
    TooManyMemories(u32),
    #[error("the thread store is unavailable")]
    Unavailable(#[source] StoreCause),
}

impl StoreError {
    /// A failure described by a message only.
    pub(crate) fn unavailable(reason: impl Into<String>) -> Self {
        StoreError::Unavailable(reason.into().into())
    }
}
