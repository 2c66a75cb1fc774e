//! Thread persistence: the [`ThreadStore`] trait and its in-memory implementation. A run costs
//! one consistent read ([`ThreadStore::load`]) and two writes ([`ThreadStore::begin_run`] takes
//! the lease and stores the input; [`ThreadStore::finish_run`] stores the output and releases it),
//! plus its usage ([`ThreadStore::settle`]) and, under a quota, [`ThreadStore::reserve`]. Also
//! here: the caller's thread list, deletion and forks, the newest-first timed reads of the history
//! by day, and the records of runs accepted to run detached ([`TaskRecord`]).
//!
//! Every stored message carries the time it was stored (epoch ms): a run's input at
//! [`RunStart::at_ms`], its output at `finish_run`'s `at_ms`, a fork's copies at their original
//! times. Messages stored before times were kept have none and count as stored when their thread
//! was created (`created_at_ms`).

mod blob_types;
#[cfg(feature = "aws")]
pub mod blobs;
#[cfg(not(feature = "aws"))]
pub use blob_types::Blobs;
pub use blob_types::{BlobError, StoredBlob, Upload};
#[cfg(feature = "aws")]
pub use blobs::Blobs;
#[cfg(feature = "aws")]
pub mod dynamo;
pub mod memory;
pub mod meter;

use crate::protocol::events::RecordedEvent;
use crate::protocol::{Message, RunId, ThreadId};
use async_trait::async_trait;
use bytes::Bytes;
use serde_json::Value;

#[cfg(feature = "aws")]
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
    /// The run holding a live lease on the thread, if any.
    pub active_run: Option<RunId>,
    /// The agent's record of the thread's interrupts (open and recently answered), opaque to
    /// the store; written by `finish_run`.
    pub interrupts: Option<Value>,
    pub title: Option<String>,
    /// When each message was stored (epoch ms), index-aligned with `messages`, so a fork can
    /// keep the times of what it copies.
    pub message_at_ms: Vec<i64>,
}

/// Whether a caller's thread has a run going.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadActivity {
    /// The caller has no such thread.
    Missing,
    Idle {
        created_at_ms: i64,
    },
    Running {
        created_at_ms: i64,
        run_id: RunId,
    },
}

/// A run's place in the store: its thread's incarnation and its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRef {
    pub thread_id: ThreadId,
    pub created_at_ms: i64,
    pub run_id: RunId,
}

/// Where a reader of a run's event log goes on: the run's attempt (a repeated run id is a new
/// attempt) and the next sequence number it has not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventCursor {
    pub started_at_ms: i64,
    pub next_seq: u64,
}

/// Events read from a run's log.
#[derive(Debug, Clone, Default)]
pub struct EventPage {
    pub events: Vec<RecordedEvent>,
    /// `None` when the store holds no event of the run.
    pub next: Option<EventCursor>,
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
    /// When this attempt of the run took the lease; keys its event log.
    pub started_at_ms: i64,
    /// How many input messages `begin_run` stored: with the output, whether `finish_run`
    /// records where the run ended (for forks from `parentRunId`).
    pub input_messages: usize,
}

impl Lease {
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

/// A thread created whole, with no run: a fork.
#[derive(Debug, Clone)]
pub struct NewThread<'a> {
    pub owner: &'a Principal,
    pub thread_id: &'a ThreadId,
    pub messages: &'a [Message],
    pub state: Option<&'a Value>,
    pub title: Option<&'a str>,
    /// When the fork was made (epoch ms): the time of the messages `copied_at_ms` has none for.
    pub at_ms: i64,
    /// The copied messages' original times, index-aligned with `messages`.
    pub copied_at_ms: &'a [i64],
}

/// The time stored with the `index`th message of a write: its original time when it is a copy,
/// else the write's.
pub fn message_time(copied_at_ms: &[i64], index: usize, at_ms: i64) -> i64 {
    copied_at_ms.get(index).copied().unwrap_or(at_ms)
}

/// A stored message with its place in the thread and the time it was stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedMessage {
    /// The message's sequence number in its thread (the first is 0).
    pub seq: u64,
    /// Epoch milliseconds; the thread's creation time for messages stored before times were kept.
    pub at_ms: i64,
    pub message: Message,
}

/// Messages read newest first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TimedPage {
    /// Newest first.
    pub messages: Vec<TimedMessage>,
    /// Older messages exist: read on with `before_seq` = the last message's seq.
    pub more: bool,
}

/// A run accepted to run detached (`POST /api/v1/agent/runs`): what the runner needs to find
/// its run, and how far it got. Kept for the run event logs' retention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    pub owner: Principal,
    pub run_id: RunId,
    pub thread_id: ThreadId,
    /// The request created the thread (the answer's `created`).
    pub created_thread: bool,
    pub accepted_at_ms: i64,
    pub state: TaskState,
}

/// Where a detached run is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskState {
    /// Accepted, not yet picked up by a runner.
    Accepted,
    /// A runner claimed it; from here on the run's own records (events, thread) tell the rest.
    Started,
    /// It failed before or while starting; terminal.
    Failed { code: String, message: String },
}

/// The longest failure message a task record keeps, in characters: keeps the record far below
/// DynamoDB's item limit whatever error text it is given.
pub const MAX_TASK_MESSAGE_CHARS: usize = 2_000;

/// A task failure's message as stored: cut at [`MAX_TASK_MESSAGE_CHARS`].
pub fn task_message(message: &str) -> String {
    message.chars().take(MAX_TASK_MESSAGE_CHARS).collect()
}

/// One entry of a caller's thread list.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadSummary {
    pub thread_id: ThreadId,
    pub title: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub message_count: u64,
    /// The run holding a live lease on the thread, if any.
    pub active_run: Option<RunId>,
}

/// A page of a caller's threads, most recently updated first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ThreadList {
    pub threads: Vec<ThreadSummary>,
    /// Pass back as `cursor` for the next page; `None` on the last page.
    pub next: Option<String>,
}

/// Where a finished run left its thread: a new thread forked from the run copies this much.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnd {
    pub thread_id: ThreadId,
    /// The incarnation of the thread id the run belonged to.
    pub created_at_ms: i64,
    pub message_count: usize,
}

/// What `delete_thread` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deletion {
    Deleted,
    /// There was nothing to delete (never created, expired, or deleted before).
    Absent,
}

/// A caller's quotas, as configured for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QuotaLimits {
    pub tokens_per_day: Option<u64>,
    pub runs_per_minute: Option<u32>,
    /// Tokens counted against the daily quota while a run is in flight, settled at its end.
    pub reserve_tokens: u64,
}

impl QuotaLimits {
    pub fn is_unlimited(&self) -> bool {
        self.tokens_per_day.is_none() && self.runs_per_minute.is_none()
    }

    /// The tokens a run reserves: never more than the quota, so a fresh day admits a run.
    pub fn reservation(&self) -> u64 {
        self.tokens_per_day
            .map_or(0, |limit| self.reserve_tokens.min(limit))
    }
}

/// Which quota refused a run, and when to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaExceeded {
    TokensPerDay { limit: u64, retry_after_secs: u64 },
    RunsPerMinute { limit: u32, retry_after_secs: u64 },
}

impl QuotaExceeded {
    pub fn retry_after_secs(&self) -> u64 {
        match self {
            QuotaExceeded::TokensPerDay {
                retry_after_secs, ..
            }
            | QuotaExceeded::RunsPerMinute {
                retry_after_secs, ..
            } => *retry_after_secs,
        }
    }
}

impl std::fmt::Display for QuotaExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuotaExceeded::TokensPerDay { limit, .. } => {
                write!(f, "the daily quota of {limit} tokens is used up")
            }
            QuotaExceeded::RunsPerMinute { limit, .. } => {
                write!(f, "the quota of {limit} runs per minute is reached")
            }
        }
    }
}

/// The UTC day (`YYYY-MM-DD`) a usage record belongs to.
pub fn usage_day(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%d").to_string()
}

/// Seconds from `at` to the next UTC midnight (at least 1).
pub fn secs_to_next_day(at: chrono::DateTime<chrono::Utc>) -> u64 {
    use chrono::Timelike;
    86_400 - u64::from(at.num_seconds_from_midnight()).min(86_399)
}

/// Seconds from `at` to the next UTC minute (at least 1).
pub fn secs_to_next_minute(at: chrono::DateTime<chrono::Utc>) -> u64 {
    use chrono::Timelike;
    60 - u64::from(at.second()).min(59)
}

/// What a run took from its caller's quota before it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub owner: Principal,
    /// The UTC day the run is accounted to: the day it started.
    pub day: String,
    pub reserved_tokens: u64,
}

/// One run's tokens, in AG-UI's accounting (reasoning and cached counts are parts of the
/// input and output totals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunTokens<'a> {
    pub provider: &'a str,
    pub model: &'a str,
    pub input: u64,
    pub output: u64,
    pub reasoning: u64,
    pub cached_input: u64,
}

/// A run's usage for the day's record: its real tokens replace what it reserved.
#[derive(Debug, Clone)]
pub struct Settlement<'a> {
    pub reservation: &'a Reservation,
    /// `None` for a run that never started: only the reservation is given back.
    pub run: Option<RunTokens<'a>>,
}

/// A model's usage on one day.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    pub provider: String,
    pub model: String,
    pub runs: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
    pub cached_input_tokens: u64,
}

/// A caller's usage on one UTC day, by model.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct DayUsage {
    pub day: String,
    pub models: Vec<ModelUsage>,
}

/// One page of a thread's history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPage {
    pub messages: Vec<Message>,
    pub state: Option<Value>,
    /// Pass back as `after` to get the next page; `None` on the last page.
    pub next: Option<String>,
    /// The run holding a live lease on the thread, if any.
    pub active_run: Option<RunId>,
    pub title: Option<String>,
}

/// What made a store call fail, kept as the error's source.
pub type StoreCause = Box<dyn std::error::Error + Send + Sync>;

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
    #[error("the thread store is unavailable")]
    Unavailable(#[source] StoreCause),
}

impl StoreError {
    /// A failure described by a message only.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        StoreError::Unavailable(reason.into().into())
    }
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

    /// Appends the run's output (stored at `at_ms`, epoch ms), stores the state, replaces the
    /// interrupt record (`None` removes it) and releases the lease, atomically; only while the
    /// lease is still held.
    async fn finish_run(
        &self,
        lease: &Lease,
        new_messages: &[Message],
        state: Option<&Value>,
        interrupts: Option<&Value>,
        at_ms: i64,
    ) -> Result<(), StoreError>;

    /// History for the history endpoint, `limit` messages from after the cursor `after`.
    async fn history(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, StoreError>;

    /// Up to `limit` of the thread's messages with seq < `before_seq` (all when None), newest
    /// first, with their seq and time. `more`: older messages exist. `NotFound` for another
    /// principal's thread and for a missing or deleted one, as `history`.
    async fn timed_messages(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        before_seq: Option<u64>,
        limit: usize,
    ) -> Result<TimedPage, StoreError>;

    /// Whether `owner`'s thread exists and which run holds it; one small read.
    async fn activity(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<ThreadActivity, StoreError>;

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

    /// Appends a batch of a run's events (`events[i]` has sequence number `first_seq + i`), in
    /// the thread's partition, kept for the store's event retention.
    async fn append_events(
        &self,
        lease: &Lease,
        first_seq: u64,
        events: &[Bytes],
    ) -> Result<(), StoreError>;

    /// A run's recorded events: from the start of its latest attempt when `from` is `None`,
    /// else from the cursor on.
    async fn read_events(
        &self,
        run: &RunRef,
        from: Option<EventCursor>,
    ) -> Result<EventPage, StoreError>;

    /// The caller's threads, most recently updated first, `limit` per page.
    async fn list_threads(
        &self,
        owner: &Principal,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ThreadList, StoreError>;

    /// Sets the title of `owner`'s thread; `NotFound` for another's or a missing thread.
    async fn set_title(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        title: &str,
    ) -> Result<(), StoreError>;

    /// Removes `owner`'s thread and everything under it (messages, run event logs, interrupts,
    /// where its runs ended). `NotFound` for another principal's thread, `Conflict` while a run
    /// holds a live lease on it. After it returns, the id is free.
    async fn delete_thread(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Deletion, StoreError>;

    /// Creates a thread holding `messages`, with no run; `Conflict` if the id is taken.
    async fn create_thread(&self, thread: NewThread<'_>) -> Result<(), StoreError>;

    /// Where `owner`'s run `run_id` left its thread, if the store recorded it.
    async fn run_end(
        &self,
        owner: &Principal,
        run_id: &RunId,
    ) -> Result<Option<RunEnd>, StoreError>;

    /// Checks the caller's quotas and takes a run from them, in one conditional write:
    /// `QuotaExceeded` when a quota refuses, and then nothing is taken.
    async fn reserve(
        &self,
        owner: &Principal,
        limits: &QuotaLimits,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Reservation, StoreError>;

    /// Adds a run's tokens to its day and gives back its reservation, atomically.
    async fn settle(&self, settlement: Settlement<'_>) -> Result<(), StoreError>;

    /// The caller's usage by day (`YYYY-MM-DD`, both ends included), oldest first.
    async fn usage(
        &self,
        owner: &Principal,
        from: &str,
        to: &str,
    ) -> Result<Vec<DayUsage>, StoreError>;

    /// Records an accepted task; `Conflict` if `owner` already has a task with this run id.
    async fn create_task(&self, task: &TaskRecord) -> Result<(), StoreError>;

    /// Accepted -> Started, once: `false` when the task is missing or not Accepted (a
    /// duplicate delivery must not run twice).
    async fn claim_task(&self, owner: &Principal, run_id: &RunId) -> Result<bool, StoreError>;

    /// Records why a task failed before or while starting (terminal): from Accepted or
    /// Started; a task that failed already keeps its first reason. `NotFound` when `owner` has
    /// no such task.
    async fn fail_task(
        &self,
        owner: &Principal,
        run_id: &RunId,
        code: &str,
        message: &str,
    ) -> Result<(), StoreError>;

    /// `owner`'s task `run_id`, if the store holds it (expired ones count as gone).
    async fn task(
        &self,
        owner: &Principal,
        run_id: &RunId,
    ) -> Result<Option<TaskRecord>, StoreError>;

    fn describe(&self) -> String;
}
