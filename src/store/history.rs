//! A thread's messages read page by page: [`History`] serves the history endpoint (oldest first,
//! from a cursor) and the day history (newest first, each message with its seq and time).

use super::StoreError;
use crate::auth::Principal;
use crate::protocol::{Message, RunId, ThreadId};
use async_trait::async_trait;
use serde_json::Value;

/// Which page of a thread's history to read.
#[derive(Debug, Clone, Copy)]
pub struct HistoryQuery<'a> {
    pub owner: &'a Principal,
    pub thread_id: &'a ThreadId,
    /// A previous page's `next`; `None` reads from the first message.
    pub after: Option<&'a str>,
    pub limit: usize,
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
    /// Where the active run is: which runner holds it, and whether it is between two.
    pub runner: Option<Runner>,
    pub title: Option<String>,
    /// The thread's latest compaction: which messages its summary stands for in the model's view.
    pub checkpoint: Option<super::Checkpoint>,
    /// For a sub-agent's thread: the thread, run and tool call that delegated to it.
    pub parent: Option<super::ThreadLink>,
}

/// The runner of a thread's active run, for the history endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runner {
    /// 1 for the runner that began the run, one more for each that took it over.
    pub epoch: u64,
    /// The run was handed off and waits for its next runner.
    pub handed_off: bool,
}

/// The messages of one incarnation of a thread after a cursor, read without its record: the
/// pages after the first of a read whose first page ([`History::history`]) found the thread
/// and checked its owner (the incarnation keys the items; no other owner's thread has it).
#[derive(Debug, Clone, Copy)]
pub struct AfterQuery<'a> {
    pub owner: &'a Principal,
    pub thread_id: &'a ThreadId,
    /// The incarnation the first page read (the thread's `created_at_ms`).
    pub created_at_ms: i64,
    /// The previous page's `next`.
    pub after: &'a str,
    pub limit: usize,
}

/// Messages after a cursor, and where the next page starts (`None` on the last).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MessagesAfter {
    pub messages: Vec<Message>,
    pub next: Option<String>,
}

/// Which of a thread's messages to read newest first.
#[derive(Debug, Clone, Copy)]
pub struct TimedQuery<'a> {
    pub owner: &'a Principal,
    pub thread_id: &'a ThreadId,
    /// Only messages with a smaller seq; `None` reads from the newest.
    pub before_seq: Option<u64>,
    pub limit: usize,
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

#[async_trait]
pub trait History: Send + Sync {
    /// History for the history endpoint, `limit` messages from after the cursor `after`.
    async fn history(&self, query: HistoryQuery<'_>) -> Result<HistoryPage, StoreError>;

    /// Up to `limit` messages after `query.after`, one Query of the message items alone (no
    /// record: a long thread's replay reads it once). A thread since deleted or recreated has no
    /// messages of that incarnation left: an empty last page.
    async fn messages_after(&self, query: AfterQuery<'_>) -> Result<MessagesAfter, StoreError>;

    /// Up to `limit` of the thread's messages with seq < `before_seq` (all when None), newest
    /// first, with their seq and time. `more`: older messages exist. `NotFound` for another
    /// principal's thread and for a missing or deleted one, as `history`.
    async fn timed_messages(&self, query: TimedQuery<'_>) -> Result<TimedPage, StoreError>;
}
