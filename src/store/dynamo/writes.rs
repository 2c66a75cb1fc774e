//! The writes every capability shares: message items, a run's messages cut into transactions
//! that fit DynamoDB's limits (each conditional on the thread's version and lease), the record
//! of where a run ended, and batch writes with their retries.

use super::items::*;
use super::{DynamoStore, back_off};
use crate::protocol::{Message, RunId, ThreadId};
use crate::store::{
    Checkpoint, ContextMark, ContextUpdate, Lease, MAX_MESSAGE_BYTES, ParentStep, StoreError,
    message_time,
};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, Put, ReturnConsumedCapacity, TransactWriteItem, Update, WriteRequest,
};
use futures_util::{StreamExt, TryStreamExt};
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Messages a write stores from sequence number `first_seq` on, with their times: a copy
/// (`copied_at_ms[i]`) keeps its original time, the others get `at_ms`.
#[derive(Clone, Copy)]
pub(super) struct NewMessages<'a> {
    pub(super) first_seq: usize,
    pub(super) messages: &'a [Message],
    pub(super) at_ms: i64,
    pub(super) copied_at_ms: &'a [i64],
}

impl<'a> NewMessages<'a> {
    /// The messages from `skip` on, with their sequence numbers and times.
    pub(super) fn from(self, skip: usize) -> Self {
        Self {
            first_seq: self.first_seq + skip,
            messages: self.messages.get(skip..).unwrap_or_default(),
            at_ms: self.at_ms,
            copied_at_ms: self.copied_at_ms.get(skip..).unwrap_or_default(),
        }
    }
}

/// One message item to write.
pub(super) struct MessageItem<'a> {
    pub(super) thread_id: &'a ThreadId,
    /// The incarnation of the thread id it belongs to.
    pub(super) created_at_ms: i64,
    pub(super) seq: usize,
    pub(super) message: &'a Message,
    /// When it was stored (epoch ms).
    pub(super) at_ms: i64,
    /// The run that stores it; a fork's copies have none.
    pub(super) run: Option<&'a RunId>,
}

/// How an append under a held lease ends.
pub(super) enum AppendEnd<'a> {
    /// More of a run's input: the lease stays held.
    KeepLease,
    /// A step of the run: the last transaction also stores the state, the interrupt record and
    /// the context as the run leaves them now, replaces the run's record (the `LIVE#` item),
    /// renews the lease until `lease_until_ms`, and with `hand_off` lets the next runner take
    /// it at once.
    Checkpoint {
        state: Option<&'a Value>,
        interrupts: Option<&'a Value>,
        context: Option<&'a ContextUpdate>,
        record: &'a str,
        lease_until_ms: i64,
        hand_off: bool,
    },
    /// A run's output: the last transaction also stores the state, replaces the interrupt
    /// record (`None` removes it), frees the lease and records where the run ended (when the
    /// run stored any message: a fork from it has something to copy).
    Release {
        state: Option<&'a Value>,
        interrupts: Option<&'a Value>,
        context: Option<&'a ContextUpdate>,
    },
}

/// What the last transaction of a checkpoint or a release writes besides the messages,
/// serialised.
struct Closing {
    state: Option<AttributeValue>,
    interrupts: Option<AttributeValue>,
    mark: Option<ContextMark>,
    checkpoint: Option<Put>,
    kind: ClosingKind,
}

enum ClosingKind {
    /// The run's record replaced; the lease renewed, and handed off when `hand_off`.
    Checkpoint {
        live: Box<Put>,
        lease_until_ms: i64,
        hand_off: bool,
    },
    /// The lease freed (and the run's record, if it made one, removed).
    Release,
}

impl DynamoStore {
    /// A message item's Put, with its size for the transaction's budget.
    pub(super) fn message_put(&self, item: MessageItem<'_>) -> Result<(Put, usize), StoreError> {
        let body = serde_json::to_string(item.message)
            .map_err(|err| StoreError::Corrupt(format!("a message does not serialise: {err}")))?;
        if body.len() > MAX_MESSAGE_BYTES {
            return Err(StoreError::MessageTooLarge(body.len()));
        }
        let size = body.len() + 100;
        let mut put = Put::builder()
            .table_name(&self.table)
            .item("pk", pk(item.thread_id))
            .item("sk", message_sk(item.created_at_ms, item.seq))
            .item("id", s(item.message.id().as_str()))
            .item("body", s(body))
            .item(MESSAGE_AT, n(item.at_ms))
            .condition_expression("attribute_not_exists(pk)");
        if let Some(run) = item.run {
            put = put.item(RUN, s(run.as_str()));
        }
        if let Some(expires) = self.expires_at(item.created_at_ms) {
            put = put.item("expiresAt", expires);
        }
        Ok((put.build().map_err(unavailable)?, size))
    }

    /// Splits `new` into transactions that fit DynamoDB's limits; each also carries a META
    /// write of its caller's, so every one is conditional on the version the previous one left.
    pub(super) fn chunks(
        &self,
        thread_id: &ThreadId,
        created_at_ms: i64,
        new: NewMessages<'_>,
        run: &RunId,
    ) -> Result<Vec<Vec<Put>>, StoreError> {
        let mut chunks = vec![Vec::new()];
        let mut bytes = 0;
        for (offset, message) in new.messages.iter().enumerate() {
            let (put, size) = self.message_put(MessageItem {
                thread_id,
                created_at_ms,
                seq: new.first_seq + offset,
                message,
                at_ms: message_time(new.copied_at_ms, offset, new.at_ms),
                run: Some(run),
            })?;
            let full = chunks.last().is_some_and(|chunk| {
                chunk.len() >= MESSAGES_PER_WRITE || bytes + size > BYTES_PER_WRITE
            });
            if full {
                chunks.push(Vec::new());
                bytes = 0;
            }
            bytes += size;
            if let Some(chunk) = chunks.last_mut() {
                chunk.push(put);
            }
        }
        Ok(chunks)
    }

    pub(super) async fn transact(
        &self,
        meta: TransactWriteItem,
        puts: Vec<Put>,
    ) -> Result<(), TransactError> {
        self.transact_with(meta, Vec::new(), puts).await
    }

    /// [`Self::transact`] with `extra` items between the META write and the message puts.
    pub(super) async fn transact_with(
        &self,
        meta: TransactWriteItem,
        extra: Vec<TransactWriteItem>,
        puts: Vec<Put>,
    ) -> Result<(), TransactError> {
        let items = extra.into_iter().chain(puts.into_iter().map(as_item));
        self.transact_items(meta, items.collect()).await
    }

    /// A transaction of the META write first (whose refusal `cancellation` reads) and `items`.
    pub(super) async fn transact_items(
        &self,
        meta: TransactWriteItem,
        items: Vec<TransactWriteItem>,
    ) -> Result<(), TransactError> {
        let items = std::iter::once(meta).chain(items).collect();
        self.usage.writes.fetch_add(1, Ordering::Relaxed);
        let output = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await?;
        self.usage
            .write_milli_units
            .fetch_add(milli(output.consumed_capacity()), Ordering::Relaxed);
        Ok(())
    }

    /// Appends `new` to a thread whose lease this run holds, in as many transactions as
    /// needed, ending as `end` says; the thread's version after the last one.
    pub(super) async fn append_held(
        &self,
        lease: &Lease,
        new: NewMessages<'_>,
        end: AppendEnd<'_>,
    ) -> Result<u64, StoreError> {
        let closing = self.closing(lease, end)?;
        let chunks = self.chunks(&lease.thread_id, lease.created_at_ms, new, &lease.run_id)?;
        let last = chunks.len() - 1;
        let end_seq = new.first_seq + new.messages.len();
        let mut closing_items = match &closing {
            Some(closing) => self.closing_items(lease, closing, end_seq, new.messages.len())?,
            None => Vec::new(),
        };
        let mut version = lease.version;
        let mut seq = new.first_seq;
        for (index, puts) in chunks.into_iter().enumerate() {
            seq += puts.len();
            let mut items: Vec<TransactWriteItem> = puts.into_iter().map(as_item).collect();
            let closes = closing.as_ref().filter(|_| index == last);
            if index == last {
                // Chunks hold at most MESSAGES_PER_WRITE messages, which leaves them room.
                items.append(&mut closing_items);
            }
            let update = self.held_meta_update(lease, version, seq, closes, false)?;
            self.transact_items(TransactWriteItem::builder().update(update).build(), items)
                .await
                .map_err(|error| cancelled_error(error, |_| StoreError::LeaseLost))?;
            version += 1;
        }
        Ok(version)
    }

    /// A delegating parent's step as items of the transaction that starts its child: its META
    /// update first (under its lease, and not while its thread is being deleted), then its new
    /// messages and what its checkpoint writes; with the bytes they take. `None` when its
    /// messages need a transaction of their own.
    pub(super) fn parent_step_items(
        &self,
        step: &ParentStep<'_>,
    ) -> Result<Option<(Vec<TransactWriteItem>, usize)>, StoreError> {
        // The record counts the messages stored with this write too, as a checkpoint's does.
        let mut lease = step.lease.clone();
        lease.input_messages += step.new_messages.len();
        let end = AppendEnd::Checkpoint {
            state: step.state,
            interrupts: step.interrupts,
            context: step.context,
            record: step.record,
            lease_until_ms: step.lease_until_ms,
            hand_off: false,
        };
        let closing = self.closing(&lease, end)?;
        let new = NewMessages {
            first_seq: lease.next_seq,
            messages: step.new_messages,
            at_ms: step.at_ms,
            copied_at_ms: &[],
        };
        let mut chunks = self.chunks(&lease.thread_id, lease.created_at_ms, new, &lease.run_id)?;
        if chunks.len() > 1 {
            return Ok(None);
        }
        let end_seq = new.first_seq + new.messages.len();
        let update =
            self.held_meta_update(&lease, lease.version, end_seq, closing.as_ref(), true)?;
        let mut items = vec![TransactWriteItem::builder().update(update).build()];
        items.extend(chunks.pop().unwrap_or_default().into_iter().map(as_item));
        if let Some(closing) = &closing {
            items.extend(self.closing_items(&lease, closing, end_seq, new.messages.len())?);
        }
        let bytes = step
            .new_messages
            .iter()
            .map(|message| serde_json::to_string(message).map_or(0, |body| body.len()))
            .sum::<usize>()
            + step.record.len()
            + step.state.map_or(0, |state| state.to_string().len())
            + step.interrupts.map_or(0, |record| record.to_string().len())
            + step
                .context
                .and_then(|context| context.checkpoint.as_ref())
                .and_then(|checkpoint| checkpoint.summary.as_ref())
                .map_or(0, String::len)
            + items.len() * ITEM_OVERHEAD_BYTES;
        Ok(Some((items, bytes)))
    }

    /// `end`'s attributes and items, serialised; `None` for more input.
    fn closing(&self, lease: &Lease, end: AppendEnd<'_>) -> Result<Option<Closing>, StoreError> {
        let (state, interrupts, context, kind) = match end {
            AppendEnd::KeepLease => return Ok(None),
            AppendEnd::Release {
                state,
                interrupts,
                context,
            } => (state, interrupts, context, ClosingKind::Release),
            AppendEnd::Checkpoint {
                state,
                interrupts,
                context,
                record,
                lease_until_ms,
                hand_off,
            } => (
                state,
                interrupts,
                context,
                ClosingKind::Checkpoint {
                    live: Box::new(self.live_put(lease, record)?),
                    lease_until_ms,
                    hand_off,
                },
            ),
        };
        Ok(Some(Closing {
            state: state.map(Self::state_value).transpose()?,
            interrupts: interrupts.map(|record| s(record.to_string())),
            mark: context.and_then(|context| context.mark),
            checkpoint: context
                .and_then(|context| context.checkpoint.as_ref())
                .map(|checkpoint| self.checkpoint_put(lease, checkpoint))
                .transpose()?,
            kind,
        }))
    }

    /// The items the last transaction writes besides META and the messages: the thread's
    /// compaction checkpoint, and the run's record (a checkpoint) or where the run ended and
    /// the removal of its record (a release).
    fn closing_items(
        &self,
        lease: &Lease,
        closing: &Closing,
        end_seq: usize,
        new_messages: usize,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let mut items: Vec<TransactWriteItem> =
            closing.checkpoint.iter().cloned().map(as_item).collect();
        match &closing.kind {
            ClosingKind::Checkpoint { live, .. } => items.push(as_item(live.as_ref().clone())),
            ClosingKind::Release => {
                if lease.input_messages + new_messages > 0 {
                    items.push(as_item(self.run_end_put(lease, end_seq)?));
                }
                if lease.checkpointed {
                    let delete = Delete::builder()
                        .table_name(&self.table)
                        .key("pk", pk(&lease.thread_id))
                        .key("sk", live_sk(lease.created_at_ms))
                        .build()
                        .map_err(unavailable)?;
                    items.push(TransactWriteItem::builder().delete(delete).build());
                }
            }
        }
        Ok(items)
    }

    /// The run's record: what the agent needs to go on from here, and the event log's attempt
    /// and the messages stored so far, which the next runner's lease carries.
    fn live_put(&self, lease: &Lease, record: &str) -> Result<Put, StoreError> {
        let mut put = Put::builder()
            .table_name(&self.table)
            .item("pk", pk(&lease.thread_id))
            .item("sk", live_sk(lease.created_at_ms))
            .item("run", s(lease.run_id.as_str()))
            .item("record", s(record))
            .item("started", n(lease.started_at_ms))
            .item(
                "stored",
                n(i64::try_from(lease.input_messages).unwrap_or(i64::MAX)),
            );
        if let Some(expires) = self.expires_at(lease.created_at_ms) {
            put = put.item("expiresAt", expires);
        }
        put.build().map_err(unavailable)
    }

    /// The META update of one of `append_held`'s transactions: from `version` on, with
    /// `msg_count` messages, and on the last of a checkpoint or a release what it changes.
    /// `linking`: a child is linked to the thread in the same transaction, which it may not be
    /// while a delete is sweeping the thread.
    fn held_meta_update(
        &self,
        lease: &Lease,
        version: u64,
        msg_count: usize,
        closing: Option<&Closing>,
        linking: bool,
    ) -> Result<Update, StoreError> {
        let mut set = vec!["#v = :next", "updatedAt = :now", "msgCount = :count"];
        let mut remove = Vec::new();
        let held = "#v = :expected AND leaseRun = :run AND leaseEpoch = :epoch";
        let mut update = Update::builder()
            .table_name(&self.table)
            .key("pk", pk(&lease.thread_id))
            .key("sk", s(META))
            .condition_expression(if linking {
                format!("{held} AND attribute_not_exists(deletedAt)")
            } else {
                held.to_owned()
            })
            .return_values_on_condition_check_failure(
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            )
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":expected", n(i64::try_from(version).unwrap_or(i64::MAX)))
            .expression_attribute_values(":next", n(i64::try_from(version + 1).unwrap_or(i64::MAX)))
            .expression_attribute_values(":run", s(lease.run_id.as_str()))
            .expression_attribute_values(
                ":epoch",
                n(i64::try_from(lease.epoch).unwrap_or(i64::MAX)),
            )
            .expression_attribute_values(":now", n(now_ms()))
            .expression_attribute_values(":count", n(i64::try_from(msg_count).unwrap_or(i64::MAX)));
        if let Some(closing) = closing {
            if let Some(state) = &closing.state {
                set.push("#s = :state");
                update = update
                    .expression_attribute_names("#s", "state")
                    .expression_attribute_values(":state", state.clone());
            }
            match &closing.kind {
                ClosingKind::Release => remove.extend([
                    "leaseRun",
                    "leaseUntil",
                    "cancelRun",
                    LEASE_EPOCH,
                    HANDOFF,
                    LIVE_RUN,
                ]),
                ClosingKind::Checkpoint {
                    lease_until_ms,
                    hand_off,
                    ..
                } => {
                    set.extend(["leaseUntil = :until", "liveRun = :run"]);
                    update = update.expression_attribute_values(":until", n(*lease_until_ms));
                    if *hand_off {
                        set.push("handoff = :epoch");
                    }
                }
            }
            if let Some(mark) = closing.mark {
                set.extend([
                    "ctxTokens = :ctxTokens",
                    "ctxSeen = :ctxSeen",
                    "ctxCovers = :ctxCovers",
                    "ctxCleared = :ctxCleared",
                ]);
                update = update
                    .expression_attribute_values(":ctxTokens", count(mark.input_tokens))
                    .expression_attribute_values(":ctxSeen", count(mark.seen))
                    .expression_attribute_values(":ctxCovers", count(mark.covers))
                    .expression_attribute_values(":ctxCleared", count(mark.cleared_before));
            }
            match &closing.interrupts {
                Some(record) => {
                    set.push("interrupts = :interrupts");
                    update = update.expression_attribute_values(":interrupts", record.clone());
                }
                None => remove.push("interrupts"),
            }
        }
        let mut expression = format!("SET {}", set.join(", "));
        if !remove.is_empty() {
            expression.push_str(&format!(" REMOVE {}", remove.join(", ")));
        }
        update
            .update_expression(expression)
            .build()
            .map_err(unavailable)
    }

    /// The thread's checkpoint, replacing the one before (one per incarnation of the thread).
    fn checkpoint_put(&self, lease: &Lease, checkpoint: &Checkpoint) -> Result<Put, StoreError> {
        let mut put = Put::builder()
            .table_name(&self.table)
            .item("pk", pk(&lease.thread_id))
            .item("sk", checkpoint_sk(lease.created_at_ms))
            .item("covers", count(checkpoint.covers))
            .item("cleared", count(checkpoint.cleared_before))
            .item("at", n(checkpoint.at_ms));
        if let Some(summary) = &checkpoint.summary {
            put = put.item("summary", s(summary.clone()));
        }
        if let Some(expires) = self.expires_at(lease.created_at_ms) {
            put = put.item("expiresAt", expires);
        }
        put.build().map_err(unavailable)
    }

    /// The record of where a run ended, in its principal's partition: a fork from the run reads
    /// it. Replaced when the run id runs again (a repeated run id is a new attempt).
    fn run_end_put(&self, lease: &Lease, end_seq: usize) -> Result<Put, StoreError> {
        let mut put = Put::builder()
            .table_name(&self.table)
            .item("pk", owner_pk(lease.owner.as_str()))
            .item("sk", run_end_sk(lease.run_id.as_str()))
            .item("thread", s(lease.thread_id.as_str()))
            .item("createdAt", n(lease.created_at_ms))
            .item("endSeq", n(i64::try_from(end_seq).unwrap_or(i64::MAX)));
        if let Some(expires) = self.expires_at(lease.created_at_ms) {
            put = put.item("expiresAt", expires);
        }
        put.build().map_err(unavailable)
    }

    /// Sends a conditional PutItem: `false` when its condition refused it.
    pub(super) async fn put_if(&self, put: PutItemFluentBuilder) -> Result<bool, StoreError> {
        self.count_write();
        match put.send().await {
            Ok(output) => {
                self.count_write_capacity(output.consumed_capacity());
                Ok(true)
            }
            Err(error) => match error.into_service_error() {
                PutItemError::ConditionalCheckFailedException(_) => Ok(false),
                other => Err(unavailable(other)),
            },
        }
    }

    /// Writes `requests` with BatchWriteItem, [`BATCH_WRITE_ITEMS`] per call and
    /// [`BATCH_WRITES_IN_FLIGHT`] calls at once. Not atomic: callers make the writes visible (or
    /// harmless) through a META write of their own.
    pub(super) async fn batch_write(&self, requests: Vec<WriteRequest>) -> Result<(), StoreError> {
        let mut batches = Vec::with_capacity(requests.len().div_ceil(BATCH_WRITE_ITEMS));
        let mut requests = requests.into_iter().peekable();
        while requests.peek().is_some() {
            batches.push(
                requests
                    .by_ref()
                    .take(BATCH_WRITE_ITEMS)
                    .collect::<Vec<_>>(),
            );
        }
        futures_util::stream::iter(batches)
            .map(|batch| self.write_batch(batch))
            .buffer_unordered(BATCH_WRITES_IN_FLIGHT)
            .try_for_each(|()| std::future::ready(Ok(())))
            .await
    }

    /// One BatchWriteItem call, and its retries: what DynamoDB leaves unprocessed, or refuses
    /// whole when throttled, is sent again after an exponential backoff with jitter.
    async fn write_batch(&self, mut pending: Vec<WriteRequest>) -> Result<(), StoreError> {
        const TRIES: u32 = 10;
        let mut delay = Duration::from_millis(25);
        for attempt in 0..TRIES {
            back_off(attempt, &mut delay).await;
            self.count_write();
            // Cloned: a throttled call does not give its requests back.
            let result = self
                .client
                .batch_write_item()
                .request_items(&self.table, pending.clone())
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await;
            match result {
                Ok(output) => {
                    self.count_write_capacity(output.consumed_capacity());
                    pending = output
                        .unprocessed_items
                        .and_then(|mut left| left.remove(&self.table))
                        .unwrap_or_default();
                    if pending.is_empty() {
                        return Ok(());
                    }
                }
                Err(error) if error.as_service_error().is_some_and(throttled) => {}
                Err(error) => return Err(unavailable(error)),
            }
        }
        Err(StoreError::unavailable(format!(
            "DynamoDB left {} writes unprocessed after {TRIES} tries",
            pending.len()
        )))
    }
}

/// A cancelled transaction's error: what `on_meta` makes of its refused META write (with the
/// item as it was, when DynamoDB returned it), else the cancellation's reasons.
pub(super) fn cancelled_error(
    error: TransactError,
    on_meta: impl FnOnce(Option<Item>) -> StoreError,
) -> StoreError {
    match cancellation(error) {
        Ok(Cancelled::Meta(old)) => on_meta(old),
        Ok(Cancelled::Other(reasons)) => {
            StoreError::unavailable(format!("transaction cancelled: {reasons}"))
        }
        Err(error) => error,
    }
}

/// What an item of a transaction takes besides its own text, at most (keys, names, numbers).
pub(super) const ITEM_OVERHEAD_BYTES: usize = 1_000;

/// A Put as one item of a transaction.
pub(super) fn as_item(put: Put) -> TransactWriteItem {
    TransactWriteItem::builder().put(put).build()
}

/// A count as a DynamoDB number.
fn count(value: u64) -> AttributeValue {
    n(i64::try_from(value).unwrap_or(i64::MAX))
}
