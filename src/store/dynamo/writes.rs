//! The writes every capability shares: message items, a run's messages cut into transactions
//! that fit DynamoDB's limits (each conditional on the thread's version and lease), the record
//! of where a run ended, and batch writes with their retries.

use super::items::*;
use super::{DynamoStore, back_off};
use crate::protocol::{Message, RunId, ThreadId};
use crate::store::{
    Checkpoint, ContextMark, ContextUpdate, Lease, MAX_MESSAGE_BYTES, StoreError, message_time,
};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnConsumedCapacity, TransactWriteItem, Update, WriteRequest,
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
    /// A run's output: the last transaction also stores the state, replaces the interrupt
    /// record (`None` removes it), frees the lease and records where the run ended (when the
    /// run stored any message: a fork from it has something to copy).
    Release {
        state: Option<&'a Value>,
        interrupts: Option<&'a Value>,
        context: Option<&'a ContextUpdate>,
    },
}

/// [`AppendEnd::Release`]'s attributes, serialised.
struct Release {
    state: Option<AttributeValue>,
    interrupts: Option<AttributeValue>,
    mark: Option<ContextMark>,
    checkpoint: Option<Put>,
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
        let items = std::iter::once(meta)
            .chain(extra)
            .chain(
                puts.into_iter()
                    .map(|put| TransactWriteItem::builder().put(put).build()),
            )
            .collect();
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
        let release = match end {
            AppendEnd::KeepLease => None,
            AppendEnd::Release {
                state,
                interrupts,
                context,
            } => Some(Release {
                state: state.map(Self::state_value).transpose()?,
                interrupts: interrupts.map(|record| s(record.to_string())),
                mark: context.and_then(|context| context.mark),
                checkpoint: context
                    .and_then(|context| context.checkpoint.as_ref())
                    .map(|checkpoint| self.checkpoint_put(lease, checkpoint))
                    .transpose()?,
            }),
        };
        let chunks = self.chunks(&lease.thread_id, lease.created_at_ms, new, &lease.run_id)?;
        let last = chunks.len() - 1;
        let end_seq = new.first_seq + new.messages.len();
        let mut run_end = match release {
            Some(_) if lease.input_messages + new.messages.len() > 0 => {
                Some(self.run_end_put(lease, end_seq)?)
            }
            _ => None,
        };
        let mut version = lease.version;
        let mut seq = new.first_seq;
        for (index, mut puts) in chunks.into_iter().enumerate() {
            seq += puts.len();
            let closing = release.as_ref().filter(|_| index == last);
            if index == last {
                // Chunks hold at most MESSAGES_PER_WRITE messages, which leaves them room.
                puts.extend(run_end.take());
                puts.extend(
                    release
                        .as_ref()
                        .and_then(|release| release.checkpoint.clone()),
                );
            }
            let update = self.held_meta_update(lease, version, seq, closing)?;
            self.transact(TransactWriteItem::builder().update(update).build(), puts)
                .await
                .map_err(|error| cancelled_error(error, |_| StoreError::LeaseLost))?;
            version += 1;
        }
        Ok(version)
    }

    /// The META update of one of `append_held`'s transactions: from `version` on, with
    /// `msg_count` messages, and on the last of a run's output what it releases.
    fn held_meta_update(
        &self,
        lease: &Lease,
        version: u64,
        msg_count: usize,
        release: Option<&Release>,
    ) -> Result<Update, StoreError> {
        let mut set = vec!["#v = :next", "updatedAt = :now", "msgCount = :count"];
        let mut remove = Vec::new();
        let mut update = Update::builder()
            .table_name(&self.table)
            .key("pk", pk(&lease.thread_id))
            .key("sk", s(META))
            .condition_expression("#v = :expected AND leaseRun = :run")
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":expected", n(i64::try_from(version).unwrap_or(i64::MAX)))
            .expression_attribute_values(":next", n(i64::try_from(version + 1).unwrap_or(i64::MAX)))
            .expression_attribute_values(":run", s(lease.run_id.as_str()))
            .expression_attribute_values(":now", n(now_ms()))
            .expression_attribute_values(":count", n(i64::try_from(msg_count).unwrap_or(i64::MAX)));
        if let Some(release) = release {
            if let Some(state) = &release.state {
                set.push("#s = :state");
                update = update
                    .expression_attribute_names("#s", "state")
                    .expression_attribute_values(":state", state.clone());
            }
            remove.extend(["leaseRun", "leaseUntil", "cancelRun"]);
            if let Some(mark) = release.mark {
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
            match &release.interrupts {
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

/// A count as a DynamoDB number.
fn count(value: u64) -> AttributeValue {
    n(i64::try_from(value).unwrap_or(i64::MAX))
}
