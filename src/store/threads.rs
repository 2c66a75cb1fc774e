//! Threads as wholes: [`Threads`] loads one at the start of a run, creates one (a fork), lists,
//! renames and deletes a caller's threads, and says where a finished run left its thread;
//! [`ThreadShelf`] lists them as a thread list UI shows them, archived ones apart.

use super::StoreError;
use crate::auth::Principal;
use crate::protocol::{Message, RunId, ThreadId, ToolCallId};
use async_trait::async_trait;
use serde_json::Value;

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
    /// The sequence number of `messages[0]`: 0 for a whole thread, the latest checkpoint's
    /// `covers` for [`Threads::load_recent`].
    pub first_seq: u64,
    /// What the latest compaction left the model's view with.
    pub checkpoint: Option<Checkpoint>,
    /// The provider's count of the thread's last model call.
    pub context: Option<ContextMark>,
}

impl StoredThread {
    /// How many messages the thread holds, those before `first_seq` included: the sequence
    /// number of the next one.
    pub fn message_count(&self) -> usize {
        usize::try_from(self.first_seq).unwrap_or(usize::MAX) + self.messages.len()
    }
}

/// What the thread's latest compaction says about its older messages: the model is sent
/// `summary` in place of messages `[0, covers)`, and tool results stored before
/// `cleared_before` as placeholders. The messages themselves stay stored and readable.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checkpoint {
    pub covers: u64,
    /// The running summary of messages `[0, covers)`; `None` while nothing is summarised.
    pub summary: Option<String>,
    pub cleared_before: u64,
    /// When it was made (epoch ms).
    pub at_ms: i64,
}

/// How large the thread's last model request was, as its provider counted it: its input
/// tokens, with the thread's first `seen` messages under the checkpoint that covered `covers`.
/// The next run estimates from it and what was added since.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextMark {
    pub input_tokens: u64,
    pub seen: u64,
    pub covers: u64,
    pub cleared_before: u64,
}

/// Where a sub-agent's thread comes from: the run and tool call of the thread that delegated to
/// it. A linked thread belongs to the same owner and is deleted with its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadLink {
    pub thread_id: ThreadId,
    /// The parent thread's incarnation (its `created_at_ms`).
    pub created_at_ms: i64,
    pub run_id: RunId,
    pub tool_call_id: ToolCallId,
    /// The sub-agent's name.
    pub agent: String,
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
    /// `run_id`'s lease expired while it still held the thread with a checkpoint: its runner
    /// stopped (a crash, an invocation's deadline) and the run can be taken over. A new run
    /// may also take the thread, as from an idle one.
    Stalled {
        created_at_ms: i64,
        run_id: RunId,
    },
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

/// Whether a shelf page shows the caller's archived threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Archived {
    /// Left out: the threads a user is working on.
    Hidden,
    /// Listed with the others, each with its flag.
    Shown,
}

/// Which page of a caller's shelf to read.
#[derive(Debug, Clone, Copy)]
pub struct ShelfQuery<'a> {
    pub limit: usize,
    /// A previous page's `next`; `None` reads from the newest thread.
    pub cursor: Option<&'a str>,
    pub archived: Archived,
}

/// One thread on a caller's shelf: its list entry and whether it is archived.
#[derive(Debug, Clone, PartialEq)]
pub struct ShelvedThread {
    pub summary: ThreadSummary,
    pub archived: bool,
}

/// A page of a caller's shelf, most recently updated first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShelfPage {
    pub threads: Vec<ShelvedThread>,
    /// Pass back as `cursor` for the next page; `None` on the last page. A page may hold fewer
    /// threads than asked for and still have a next one.
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

#[async_trait]
pub trait Threads: Send + Sync {
    /// A consistent read of the whole thread, or `None` if `owner` has no such thread.
    async fn load(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<StoredThread>, StoreError>;

    /// The thread as a run needs it: the latest checkpoint and the messages from the one it
    /// covers up to on, so the read does not grow with the thread once it has a checkpoint.
    async fn load_recent(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<StoredThread>, StoreError>;

    /// Whether `owner`'s thread exists and which run holds it; one small read.
    async fn activity(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<ThreadActivity, StoreError>;

    /// Creates a thread holding `messages`, with no run; `Conflict` if the id is taken.
    async fn create_thread(&self, thread: NewThread<'_>) -> Result<(), StoreError>;

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
    /// where its runs ended, the threads of its sub-agents whatever they are doing). `NotFound`
    /// for another principal's thread, `Conflict` while a run holds a live lease on it. After it
    /// returns, the id is free.
    async fn delete_thread(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Deletion, StoreError>;

    /// Where `owner`'s run `run_id` left its thread, if the store recorded it.
    async fn run_end(
        &self,
        owner: &Principal,
        run_id: &RunId,
    ) -> Result<Option<RunEnd>, StoreError>;

    /// Which store this is, for the start-up log.
    fn describe(&self) -> String;
}

/// A caller's threads as a thread list UI shows them (CopilotKit's `useThreads`): newest first,
/// archived threads left out unless asked for, and archiving. Neither archiving nor its undoing
/// moves a thread in the list or disturbs a run on it.
#[async_trait]
pub trait ThreadShelf: Send + Sync {
    /// A page of `owner`'s threads, most recently updated first.
    async fn shelf(
        &self,
        owner: &Principal,
        query: ShelfQuery<'_>,
    ) -> Result<ShelfPage, StoreError>;

    /// Archives `owner`'s thread, or brings it back; `NotFound` for another's or a missing
    /// thread. Archiving an archived thread (or the reverse) changes nothing.
    async fn set_archived(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        archived: bool,
    ) -> Result<(), StoreError>;
}
