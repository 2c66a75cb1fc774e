//! Thread persistence: the [`ThreadStore`] trait and its in-memory implementation. A run costs
//! one consistent read ([`ThreadStore::load`]) and two writes ([`ThreadStore::begin_run`] takes
//! the lease and stores the input; [`ThreadStore::finish_run`] stores the output and releases it).

pub mod dynamo;
pub mod memory;

use crate::protocol::{Message, RunId, ThreadId};
use async_trait::async_trait;
use serde_json::Value;

pub use dynamo::{DynamoStore, StoreUsage};
pub use memory::MemoryStore;

/// The largest message a store accepts, serialised (DynamoDB items are limited to 400 KB).
pub const MAX_MESSAGE_BYTES: usize = 390_000;
/// The largest state a store accepts, serialised; it shares an item with the thread record.
pub const MAX_STATE_BYTES: usize = 350_000;

/// Checks a run's writes against the limits every store shares.
pub fn check_sizes(messages: &[Message], state: Option<&Value>) -> Result<(), StoreError> {
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

/// Who a thread belongs to: the authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(String);

impl Principal {
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The caller when authentication is off (`AUTH_MODE=none`).
    pub fn anonymous() -> Self {
        Self("anonymous".to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A thread as loaded at the start of a run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredThread {
    pub messages: Vec<Message>,
    pub state: Option<Value>,
    /// Bumped by every write; `begin_run` is conditional on it.
    pub version: u64,
    /// When the thread was created (epoch milliseconds); identifies this incarnation of the
    /// thread id, so a thread recreated after expiry never sees the old one's leftovers.
    pub created_at_ms: i64,
}

/// Proof that a run holds a thread's lease.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    pub owner: Principal,
    pub thread_id: ThreadId,
    pub run_id: RunId,
    pub version: u64,
    pub created_at_ms: i64,
    /// Sequence number of the next message appended to the thread.
    pub next_seq: usize,
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
}

/// One page of a thread's history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPage {
    pub messages: Vec<Message>,
    pub state: Option<Value>,
    /// Pass back as `after` to get the next page; `None` on the last page.
    pub next: Option<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
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
    #[error("the thread store is unavailable")]
    Unavailable(String),
}

#[async_trait]
pub trait ThreadStore: Send + Sync {
    /// A consistent read of the whole thread, or `None` if `owner` has no such thread.
    async fn load(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<StoredThread>, StoreError>;

    /// Takes the run lease and stores the run's new input messages and state, atomically.
    async fn begin_run(&self, start: RunStart<'_>) -> Result<Lease, StoreError>;

    /// Appends the run's output, stores the state and releases the lease, atomically; only while
    /// the lease is still held.
    async fn finish_run(
        &self,
        lease: &Lease,
        new_messages: &[Message],
        state: Option<&Value>,
    ) -> Result<(), StoreError>;

    /// History for the history endpoint, `limit` messages from after the cursor `after`.
    async fn history(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, StoreError>;

    fn describe(&self) -> String;
}
