//! The in-memory store's paged reads of a thread's messages: oldest first from a cursor (the
//! next message's index), and newest first with their seq and time.

use super::{MemoryStore, owned};
use crate::store::page::cut_page;
use crate::store::{
    AfterQuery, History, HistoryPage, HistoryQuery, MessagesAfter, StoreError, TimedMessage,
    TimedPage, TimedQuery,
};
use async_trait::async_trait;

#[async_trait]
impl History for MemoryStore {
    async fn history(&self, query: HistoryQuery<'_>) -> Result<HistoryPage, StoreError> {
        let threads = self.threads();
        let record = owned(&threads, query.owner, query.thread_id)?;
        let start = match query.after {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| StoreError::BadCursor)?,
        };
        let start = start.min(record.messages.len());
        let following = record.messages.get(start..).unwrap_or_default();
        let (messages, more) = cut_page(following.iter().cloned(), query.limit);
        Ok(HistoryPage {
            next: more.then(|| (start + messages.len()).to_string()),
            messages,
            state: record.state.clone(),
            active_run: record.active_run(),
            runner: record.runner(),
            title: record.title.clone(),
            checkpoint: record.checkpoint.clone(),
            parent: record.parent.clone(),
        })
    }

    async fn messages_after(&self, query: AfterQuery<'_>) -> Result<MessagesAfter, StoreError> {
        let threads = self.threads();
        let record = match owned(&threads, query.owner, query.thread_id) {
            Ok(record) if record.created_at_ms == query.created_at_ms => record,
            _ => return Ok(MessagesAfter::default()),
        };
        let start: usize = query.after.parse().map_err(|_| StoreError::BadCursor)?;
        let start = start.min(record.messages.len());
        let following = record.messages.get(start..).unwrap_or_default();
        let (messages, more) = cut_page(following.iter().cloned(), query.limit);
        Ok(MessagesAfter {
            next: more.then(|| (start + messages.len()).to_string()),
            messages,
        })
    }

    async fn timed_messages(&self, query: TimedQuery<'_>) -> Result<TimedPage, StoreError> {
        let threads = self.threads();
        let record = owned(&threads, query.owner, query.thread_id)?;
        let len = record.messages.len();
        let end = query.before_seq.map_or(len, |before| {
            usize::try_from(before).map_or(len, |before| before.min(len))
        });
        let newest_first = (0..end).rev().filter_map(|seq| {
            Some(TimedMessage {
                seq: seq as u64,
                at_ms: record
                    .message_at_ms
                    .get(seq)
                    .copied()
                    .unwrap_or(record.created_at_ms),
                message: record.messages.get(seq)?.clone(),
            })
        });
        let (messages, more) = cut_page(newest_first, query.limit);
        Ok(TimedPage { messages, more })
    }
}
