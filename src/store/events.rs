//! Run event logs: [`EventLog`] keeps the AG-UI events a run emitted, so a caller can read a
//! run's stream again from any point while the store's event retention lasts.

use super::StoreError;
use super::runs::{Lease, RunRef};
use crate::protocol::events::RecordedEvent;
use async_trait::async_trait;
use bytes::Bytes;

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

#[async_trait]
pub trait EventLog: Send + Sync {
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
}
