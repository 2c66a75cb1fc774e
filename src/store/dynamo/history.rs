//! The DynamoDB store's paged reads of a thread's messages: one Query over the message items'
//! sort keys each, oldest first from a cursor (the last message's seq) or newest first.

use super::DynamoStore;
use super::items::*;
use crate::protocol::{RunId, ThreadId};
use crate::store::page::cut_page;
use crate::store::{
    AfterQuery, History, HistoryPage, HistoryQuery, MessagesAfter, StoreError, TimedMessage,
    TimedPage, TimedQuery,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};

/// Sort keys hold the sequence number in ten digits; a bound past them bounds nothing.
const SEQ_BOUND: usize = 10_000_000_000;

/// The message items of one thread a page reads, between two sort keys (both included).
struct MessageRange<'a> {
    thread_id: &'a ThreadId,
    from: AttributeValue,
    to: AttributeValue,
    newest_first: bool,
}

#[async_trait]
impl History for DynamoStore {
    async fn history(&self, query: HistoryQuery<'_>) -> Result<HistoryPage, StoreError> {
        let (meta, checkpoint) = self.live_head(query.owner, query.thread_id).await?;
        let from = match query.after {
            None => 0,
            Some(cursor) => next_seq(cursor)?,
        };
        let range = MessageRange {
            thread_id: query.thread_id,
            from: message_sk(meta.created_at_ms, from),
            to: s(format!("{}~", message_prefix(meta.created_at_ms))),
            newest_first: false,
        };
        let (items, more) = self.message_page(range, query.limit).await?;
        let messages = items
            .iter()
            .map(parse_message)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(HistoryPage {
            next: (more && !messages.is_empty()).then(|| (from + messages.len() - 1).to_string()),
            messages,
            state: meta.state,
            title: meta.title,
            active_run: meta
                .active_run
                .and_then(|run| RunId::parse(run, crate::protocol::ids::MAX_ID_LEN).ok()),
            runner: meta.runner,
            checkpoint,
            parent: meta.parent,
        })
    }

    async fn messages_after(&self, query: AfterQuery<'_>) -> Result<MessagesAfter, StoreError> {
        let from = next_seq(query.after)?;
        let range = MessageRange {
            thread_id: query.thread_id,
            from: message_sk(query.created_at_ms, from),
            to: s(format!("{}~", message_prefix(query.created_at_ms))),
            newest_first: false,
        };
        let (items, more) = self.message_page(range, query.limit).await?;
        let messages = items
            .iter()
            .map(parse_message)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MessagesAfter {
            next: (more && !messages.is_empty()).then(|| (from + messages.len() - 1).to_string()),
            messages,
        })
    }

    async fn timed_messages(&self, query: TimedQuery<'_>) -> Result<TimedPage, StoreError> {
        let meta = self.live_meta(query.owner, query.thread_id).await?;
        let prefix = message_prefix(meta.created_at_ms);
        let to = match query.before_seq.map(usize::try_from) {
            Some(Ok(0)) => return Ok(TimedPage::default()),
            Some(Ok(before)) if before <= SEQ_BOUND => message_sk(meta.created_at_ms, before - 1),
            _ => s(format!("{prefix}~")),
        };
        let range = MessageRange {
            thread_id: query.thread_id,
            from: s(prefix.clone()),
            to,
            newest_first: true,
        };
        let (items, more) = self.message_page(range, query.limit).await?;
        let messages = items
            .iter()
            .map(|item| {
                let (seq, at_ms) = message_place(item, &prefix, meta.created_at_ms)?;
                Ok(TimedMessage {
                    seq,
                    at_ms,
                    message: parse_message(item)?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(TimedPage { messages, more })
    }
}

/// The seq after a cursor (the last message's seq a page read).
fn next_seq(cursor: &str) -> Result<usize, StoreError> {
    cursor
        .parse::<usize>()
        .ok()
        .and_then(|seq| seq.checked_add(1))
        .filter(|seq| *seq < SEQ_BOUND)
        .ok_or(StoreError::BadCursor)
}

impl DynamoStore {
    /// Up to `limit` message items of `range`, in one consistent Query, and whether more
    /// follow. The one item read past `limit` only tells that there is more (with `limit` 0,
    /// all it does); a page also ends at DynamoDB's 1 MB response cap, with a LastEvaluatedKey.
    async fn message_page(
        &self,
        range: MessageRange<'_>,
        limit: usize,
    ) -> Result<(Vec<Item>, bool), StoreError> {
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", pk(range.thread_id))
            .expression_attribute_values(":from", range.from)
            .expression_attribute_values(":to", range.to)
            .set_scan_index_forward(range.newest_first.then_some(false))
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .limit(i32::try_from(limit.saturating_add(1)).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(unavailable)?;
        self.count_read(page.consumed_capacity.as_ref());
        let cut_short = page
            .last_evaluated_key
            .as_ref()
            .is_some_and(|key| !key.is_empty());
        let (items, more) = cut_page(page.items.unwrap_or_default(), limit);
        Ok((items, more || cut_short))
    }
}
