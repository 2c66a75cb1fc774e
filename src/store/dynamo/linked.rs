//! A sub-agent's start with its parent's step: the child's thread created, leased and linked, and
//! the parent's checkpoint and pending events, in one TransactWriteItems. When they do not fit
//! one (100 items, 4 MB: a parent that sent a large backlog of events, or stored many messages
//! since its last checkpoint), the events go first, then the rest in one transaction if it fits,
//! else the parent's checkpoint and then the child's start (the order a crash cannot reverse:
//! nothing says an event was sent before it is in the log, and no child starts before its
//! parent's record says it did).

use super::DynamoStore;
use super::items::*;
use super::runs::LeaseWrite;
use super::writes::{ITEM_OVERHEAD_BYTES, NewMessages, as_item};
use crate::store::{
    EventLog, Lease, LinkedRun, ParentStep, RunCheckpoints, RunStart, StoreError, ThreadLink,
};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem};

/// DynamoDB's limit on the items of one transaction.
const ITEMS_PER_TRANSACTION: usize = 100;
/// The most event bytes a write of the log carries on its own (as the recorder's do).
const EVENT_BATCH_BYTES: usize = 300_000;

impl DynamoStore {
    /// [`crate::store::RunLeases::begin_linked_run`] with the parent's step.
    pub(super) async fn begin_with_step(
        &self,
        start: RunStart<'_>,
        parent: &ThreadLink,
        step: ParentStep<'_>,
    ) -> Result<LinkedRun, StoreError> {
        let events = if step.events.is_empty() {
            Vec::new()
        } else {
            self.event_puts(step.lease, step.events_from, step.events)?
        };
        let event_bytes = step
            .events
            .iter()
            .map(|event| event.len() + 1)
            .sum::<usize>()
            + events.len() * ITEM_OVERHEAD_BYTES;
        if let Some(linked) = self
            .begin_in_one(&start, parent, &step, events, event_bytes)
            .await?
        {
            return Ok(linked);
        }
        // Too large for one transaction: the events first (nothing refers to them yet), in
        // batches the size the recorder writes.
        let mut first = 0;
        while first < step.events.len() {
            let mut end = first + 1;
            let mut bytes = step.events[first].len();
            while end < step.events.len() && bytes + step.events[end].len() <= EVENT_BATCH_BYTES {
                bytes += step.events[end].len();
                end += 1;
            }
            let from = step.events_from + first as u64;
            self.append_events(step.lease, from, &step.events[first..end])
                .await?;
            first = end;
        }
        if let Some(linked) = self
            .begin_in_one(&start, parent, &step, Vec::new(), 0)
            .await?
        {
            return Ok(linked);
        }
        let parent_version = self.checkpoint_run(step.into()).await?;
        Ok(LinkedRun {
            lease: self.begin(start, Some(parent)).await?,
            parent_version: Some(parent_version),
        })
    }

    /// The child's start with the parent's step and `events` in one transaction, when they fit
    /// one; `None` when they do not (nothing is written then).
    async fn begin_in_one(
        &self,
        start: &RunStart<'_>,
        parent: &ThreadLink,
        step: &ParentStep<'_>,
        events: Vec<Put>,
        event_bytes: usize,
    ) -> Result<Option<LinkedRun>, StoreError> {
        let Some((parent_items, parent_bytes)) = self.parent_step_items(step)? else {
            return Ok(None);
        };
        let now = now_ms();
        let new = NewMessages {
            first_seq: 0,
            messages: start.new_messages,
            at_ms: start.at_ms,
            copied_at_ms: start.copied_at_ms,
        };
        let mut chunks = self.chunks(start.thread_id, now, new, start.run_id)?;
        if chunks.len() > 1 {
            return Ok(None);
        }
        let child_messages = chunks.pop().unwrap_or_default();
        let child_bytes = start
            .new_messages
            .iter()
            .map(|message| serde_json::to_string(message).map_or(0, |body| body.len()))
            .sum::<usize>()
            + start.state.map_or(0, |state| state.to_string().len())
            + (child_messages.len() + 2) * ITEM_OVERHEAD_BYTES;
        let count = 2 + child_messages.len() + parent_items.len() + events.len();
        if count > ITEMS_PER_TRANSACTION
            || child_bytes + parent_bytes + event_bytes > BYTES_PER_WRITE
        {
            return Ok(None);
        }
        let write = LeaseWrite {
            start,
            now,
            created_at_ms: now,
            msg_count: n(i64::try_from(start.new_messages.len()).unwrap_or(i64::MAX)),
            state: start.state.map(Self::state_value).transpose()?,
        };
        // The child's META first, the parent's second: a refusal says whose it was.
        let mut parent_items = parent_items.into_iter();
        let mut items: Vec<TransactWriteItem> = parent_items.next().into_iter().collect();
        items.push(self.child_record(start.thread_id, parent)?);
        items.extend(child_messages.into_iter().map(as_item));
        items.extend(parent_items);
        items.extend(events.into_iter().map(as_item));
        let meta = self.create_leased(&write, Some(parent))?;
        self.transact_items(meta, items)
            .await
            .map_err(|error| refused(error, start))?;
        Ok(Some(LinkedRun {
            lease: Lease {
                owner: start.owner.clone(),
                thread_id: start.thread_id.clone(),
                run_id: start.run_id.clone(),
                version: 1,
                epoch: 1,
                created_at_ms: now,
                next_seq: start.new_messages.len(),
                started_at_ms: now,
                input_messages: start.new_messages.len(),
                checkpointed: false,
            },
            parent_version: Some(step.lease.version + 1),
        }))
    }
}

/// Why the transaction was refused: the child's META (its thread exists: another's, `NotFound`,
/// else `Conflict`), or the parent's (gone or being deleted: `NotFound`; another runner holds its
/// run: `LeaseLost`).
fn refused(error: TransactError, start: &RunStart<'_>) -> StoreError {
    let cancelled = match error.into_service_error() {
        TransactWriteItemsError::TransactionCanceledException(cancelled) => cancelled,
        other => return unavailable(other),
    };
    let reasons = cancelled.cancellation_reasons();
    let failed = |index: usize| {
        reasons
            .get(index)
            .filter(|reason| reason.code() == Some("ConditionalCheckFailed"))
    };
    if let Some(child) = failed(0) {
        return match child.item() {
            Some(old) if get_s(old, OWNER) != Some(start.owner.as_str()) => StoreError::NotFound,
            _ => StoreError::Conflict,
        };
    }
    if let Some(parent) = failed(1) {
        return match parent.item() {
            Some(old) if is_present(old) => StoreError::LeaseLost,
            _ => StoreError::NotFound,
        };
    }
    let codes: Vec<&str> = reasons
        .iter()
        .map(|reason| reason.code().unwrap_or("None"))
        .collect();
    StoreError::unavailable(format!("transaction cancelled: {codes:?}"))
}
