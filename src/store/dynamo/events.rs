//! The DynamoDB store's run event logs: in the thread's partition, one item per batch of events
//! (newline-joined; a batch too large for one item is split into parts written together), keyed
//! by run, attempt and first sequence number, removed by TTL after the event retention.

use super::DynamoStore;
use super::items::*;
use crate::protocol::events::RecordedEvent;
use crate::store::{EventCursor, EventLog, EventPage, Lease, RunRef, StoreError};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{Put, ReturnConsumedCapacity, TransactWriteItem};
use bytes::Bytes;
use std::sync::atomic::Ordering;

use super::reads::SortKeys;

/// Event log items stay well under DynamoDB's 400 KB item limit; a larger batch (one huge
/// `MESSAGES_SNAPSHOT`) is split into parts written in one transaction.
const EVENT_PART_BYTES: usize = 350_000;

/// A batch of events as read back: its parts joined, and whether its last part was there.
struct Batch {
    started_at_ms: i64,
    first_seq: u64,
    text: String,
    complete: bool,
}

#[async_trait]
impl EventLog for DynamoStore {
    async fn append_events(
        &self,
        lease: &Lease,
        first_seq: u64,
        events: &[Bytes],
    ) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let puts = self.event_puts(lease, first_seq, events)?;
        self.write_parts(puts).await
    }

    async fn read_events(
        &self,
        run: &RunRef,
        from: Option<EventCursor>,
    ) -> Result<EventPage, StoreError> {
        let run_prefix = run_prefix(run.created_at_ms, run.run_id.as_str());
        let (from_sk, to_sk) = match from {
            Some(cursor) => {
                let prefix =
                    attempt_prefix(run.created_at_ms, run.run_id.as_str(), cursor.started_at_ms);
                (
                    format!("{prefix}{:010}", cursor.next_seq),
                    format!("{prefix}~"),
                )
            }
            None => (run_prefix.clone(), format!("{run_prefix}~")),
        };
        let items = self
            .query_range(&run.thread_id, SortKeys::Between(from_sk, to_sk), None)
            .await?;
        Ok(page_of(&parse_batches(&run_prefix, &items), from))
    }
}

impl DynamoStore {
    /// The items of one batch of events, newline-joined: one per part, the last carrying the
    /// count (a reader takes a batch without it as not written yet).
    pub(super) fn event_puts(
        &self,
        lease: &Lease,
        first_seq: u64,
        events: &[Bytes],
    ) -> Result<Vec<Put>, StoreError> {
        let text = join_events(events)?;
        let parts = split_text(&text, EVENT_PART_BYTES);
        let prefix = attempt_prefix(
            lease.created_at_ms,
            lease.run_id.as_str(),
            lease.started_at_ms,
        );
        let expires = n(now_ms() / 1000 + self.events_ttl_seconds);
        let count = i64::try_from(events.len()).unwrap_or(i64::MAX);
        let mut puts = Vec::with_capacity(parts.len());
        for (index, part) in parts.iter().enumerate() {
            let mut put = Put::builder()
                .table_name(&self.table)
                .item("pk", pk(&lease.thread_id))
                .item("sk", batch_sk(&prefix, first_seq, index))
                .item("ev", s(*part))
                .item("expiresAt", expires.clone());
            if index + 1 == parts.len() {
                put = put.item("count", n(count));
            }
            puts.push(put.build().map_err(unavailable)?);
        }
        Ok(puts)
    }

    /// Writes a batch's items: one PutItem, or a transaction for a batch in parts.
    async fn write_parts(&self, mut puts: Vec<Put>) -> Result<(), StoreError> {
        self.usage.writes.fetch_add(1, Ordering::Relaxed);
        let consumed = if puts.len() == 1 {
            let put = puts.remove(0);
            self.client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(put.item))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(unavailable)?
                .consumed_capacity
                .map(|capacity| milli(Some(&capacity)))
                .unwrap_or(0)
        } else {
            // All parts or none, so a reader never sees half of a batch.
            let output = self
                .client
                .transact_write_items()
                .set_transact_items(Some(
                    puts.into_iter()
                        .map(|put| TransactWriteItem::builder().put(put).build())
                        .collect(),
                ))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(unavailable)?;
            milli(output.consumed_capacity())
        };
        self.usage
            .write_milli_units
            .fetch_add(consumed, Ordering::Relaxed);
        Ok(())
    }
}

/// The events of a batch, one per line (their JSON holds no raw newline).
fn join_events(events: &[Bytes]) -> Result<String, StoreError> {
    let mut text = String::with_capacity(events.iter().map(|event| event.len() + 1).sum());
    for (index, event) in events.iter().enumerate() {
        if index > 0 {
            text.push('\n');
        }
        text.push_str(std::str::from_utf8(event).map_err(unavailable)?);
    }
    Ok(text)
}

/// Splits `text` into pieces of at most `max` bytes, on character boundaries.
fn split_text(text: &str, max: usize) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let mut cut = max;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (part, tail) = rest.split_at(cut);
        parts.push(part);
        rest = tail;
    }
    parts.push(rest);
    parts
}

/// Joins event log items into batches. Items come in sort-key order: attempt, first sequence
/// number, part; a part whose batch's first part is missing is passed over.
fn parse_batches(run_prefix: &str, items: &[Item]) -> Vec<Batch> {
    let mut batches: Vec<Batch> = Vec::new();
    for item in items {
        let Some(rest) = get_s(item, "sk").and_then(|sk| sk.strip_prefix(run_prefix)) else {
            continue;
        };
        // <started:13>#<first seq:10>.<part:3>
        let parsed = rest.split_once('#').and_then(|(started, key)| {
            let (first, part) = key.split_once('.')?;
            Some((
                started.parse::<i64>().ok()?,
                first.parse::<u64>().ok()?,
                part.parse::<usize>().ok()?,
            ))
        });
        let (Some((started_at_ms, first_seq, part)), Some(text)) = (parsed, get_s(item, "ev"))
        else {
            continue;
        };
        let complete = item.contains_key("count");
        match batches.last_mut() {
            Some(batch)
                if part > 0
                    && batch.started_at_ms == started_at_ms
                    && batch.first_seq == first_seq =>
            {
                batch.text.push_str(text);
                batch.complete = complete;
            }
            _ if part == 0 => batches.push(Batch {
                started_at_ms,
                first_seq,
                text: text.to_owned(),
                complete,
            }),
            _ => {}
        }
    }
    batches
}

/// The events of `batches` from `from` on, or the latest attempt's from its start when `from`
/// is `None`.
fn page_of(batches: &[Batch], from: Option<EventCursor>) -> EventPage {
    let attempt = match from {
        Some(cursor) => Some(cursor.started_at_ms),
        None => batches.last().map(|batch| batch.started_at_ms),
    };
    let Some(started_at_ms) = attempt else {
        return EventPage::default();
    };
    let mut next_seq = from.map_or(1, |cursor| cursor.next_seq);
    let mut events = Vec::new();
    for batch in batches
        .iter()
        .filter(|batch| batch.started_at_ms == started_at_ms)
    {
        // Batches are contiguous; one that is not complete yet, or leaves a gap, ends the page.
        if !batch.complete || batch.first_seq > next_seq {
            break;
        }
        for (offset, json) in batch.text.split('\n').enumerate() {
            let seq = batch.first_seq + offset as u64;
            if seq >= next_seq {
                events.push(RecordedEvent::stored(seq, Bytes::from(json.to_owned())));
                next_seq = seq + 1;
            }
        }
    }
    EventPage {
        events,
        next: Some(EventCursor {
            started_at_ms,
            next_seq,
        }),
    }
}
