//! The DynamoDB store. One partition per thread: a `META` item (owner, version, state, lease,
//! title, message count, TTL) and one item per message, sorted by sequence number. A run reads the
//! partition with one consistent Query and writes with two transactions; each write is conditional
//! on the version it read, so concurrent runs can never interleave their messages.
//!
//! Per principal, two more partitions: `OWNER#<principal>` holds where each run ended (for forks,
//! `RUN#<runId>`) and the task records of detached runs (`TASK#<runId>`), `USAGE#<principal>` the
//! tokens per day and the runs per minute (for quotas). The caller's thread list is the sparse
//! index `byOwner` over the META items.
//!
//! Message items carry the time they were stored (`at`, epoch ms), so the history can be read
//! by day newest first (one Query with `ScanIndexForward=false`); those stored before times were
//! kept count as stored when their thread was created.

use super::{
    CancelState, DayUsage, Deletion, EventCursor, EventPage, HistoryPage, Lease, MAX_MESSAGE_BYTES,
    MAX_STATE_BYTES, ModelUsage, NewThread, Principal, Pulse, QuotaExceeded, QuotaLimits,
    Reservation, RunEnd, RunRef, RunStart, Settlement, StoreError, StoredThread, TaskRecord,
    TaskState, ThreadActivity, ThreadList, ThreadStore, ThreadSummary, TimedMessage, TimedPage,
    message_time, secs_to_next_day, secs_to_next_minute, task_message, usage_day,
};
use crate::protocol::events::RecordedEvent;
use crate::protocol::{Message, RunId, ThreadId};
use crate::store::meter::{self, Access};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConsumedCapacity, Put, PutRequest, ReturnConsumedCapacity, ReturnValue,
    ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update, WriteRequest,
};
use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

mod calls;
mod items;
mod table;

pub use table::{TableError, TableSetup};

use items::*;

pub struct DynamoStore {
    client: Client,
    table: String,
    /// Threads are deleted this long after they were created; `None` keeps them.
    ttl_seconds: Option<i64>,
    /// Run event logs are deleted this long after they were written.
    events_ttl_seconds: i64,
    usage: Usage,
}

/// Before a retry (any try but the first): waits about `delay`, then doubles it, up to 1 s.
async fn back_off(attempt: u32, delay: &mut Duration) {
    if attempt > 0 {
        tokio::time::sleep(jittered(*delay)).await;
        *delay = (*delay * 2).min(Duration::from_secs(1));
    }
}

/// Which sort keys of a partition a query reads.
enum SortKeys {
    Between(String, String),
    Prefix(String),
}

/// Messages a write stores, with their times: a copy (`copied_at_ms[i]`) keeps its original
/// time, the others get `at_ms`.
#[derive(Clone, Copy)]
struct NewMessages<'a> {
    messages: &'a [Message],
    at_ms: i64,
    copied_at_ms: &'a [i64],
}

impl<'a> NewMessages<'a> {
    /// Output and fresh input: no copies.
    fn at(messages: &'a [Message], at_ms: i64) -> Self {
        Self {
            messages,
            at_ms,
            copied_at_ms: &[],
        }
    }

    /// The messages from `skip` on, with their times.
    fn from(self, skip: usize) -> Self {
        Self {
            messages: self.messages.get(skip..).unwrap_or_default(),
            at_ms: self.at_ms,
            copied_at_ms: self.copied_at_ms.get(skip..).unwrap_or_default(),
        }
    }
}

/// Event log items stay well under DynamoDB's 400 KB item limit; a larger batch (one huge
/// `MESSAGES_SNAPSHOT`) is split into parts written in one transaction.
const EVENT_PART_BYTES: usize = 350_000;

/// Calls made and capacity consumed since the store was built, for benchmarks and logs.
#[derive(Default)]
struct Usage {
    reads: AtomicU64,
    writes: AtomicU64,
    /// Capacity units × 1000.
    read_milli_units: AtomicU64,
    write_milli_units: AtomicU64,
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StoreUsage {
    pub read_calls: u64,
    pub write_calls: u64,
    pub read_capacity_units: f64,
    pub write_capacity_units: f64,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>, ttl_days: u32) -> Self {
        let table = table.into();
        // Every call gets its span and counts into its run's meter.
        let client = Client::from_conf(
            client
                .config()
                .to_builder()
                .interceptor(calls::StoreCalls {
                    table: table.clone(),
                })
                .build(),
        );
        Self {
            client,
            table,
            ttl_seconds: (ttl_days > 0).then(|| i64::from(ttl_days) * 86_400),
            events_ttl_seconds: 24 * 3600,
            usage: Usage::default(),
        }
    }

    /// How long run event logs are kept (`RUN_EVENTS_TTL_HOURS`).
    pub fn with_events_ttl_hours(mut self, hours: u32) -> Self {
        self.events_ttl_seconds = i64::from(hours.max(1)) * 3600;
        self
    }

    fn meta_key(&self, thread_id: &ThreadId) -> [(String, AttributeValue); 2] {
        [("pk".to_owned(), pk(thread_id)), ("sk".to_owned(), s(META))]
    }

    /// The META item's small attributes, consistently read.
    async fn meta_head(&self, thread_id: &ThreadId) -> Result<Option<Item>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(self.meta_key(thread_id).into_iter().collect()))
            .projection_expression(
                "#o, createdAt, expiresAt, leaseRun, leaseUntil, cancelRun, #v, deletedAt",
            )
            .expression_attribute_names("#o", "owner")
            .expression_attribute_names("#v", "version")
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(unavailable)?;
        self.count_read(output.consumed_capacity.as_ref());
        Ok(output.item)
    }

    /// Every item of the thread's partition in `range`, all pages, read consistently; only the
    /// attributes `projection` names when it is given.
    async fn query_range(
        &self,
        thread_id: &ThreadId,
        range: SortKeys,
        projection: Option<&str>,
    ) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let mut query = self
                .client
                .query()
                .table_name(&self.table)
                .expression_attribute_values(":pk", pk(thread_id));
            query = match &range {
                SortKeys::Between(from, to) => query
                    .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                    .expression_attribute_values(":from", s(from.clone()))
                    .expression_attribute_values(":to", s(to.clone())),
                SortKeys::Prefix(prefix) => query
                    .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
                    .expression_attribute_values(":prefix", s(prefix.clone())),
            };
            if let Some(projection) = projection {
                query = query
                    .projection_expression(projection)
                    .expression_attribute_names("#run", RUN);
            }
            let page = query
                .consistent_read(true)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(unavailable)?;
            self.count_read(page.consumed_capacity.as_ref());
            items.extend(page.items.unwrap_or_default());
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        Ok(items)
    }

    pub fn usage(&self) -> StoreUsage {
        let units = |milli: &AtomicU64| milli.load(Ordering::Relaxed) as f64 / 1000.0;
        StoreUsage {
            read_calls: self.usage.reads.load(Ordering::Relaxed),
            write_calls: self.usage.writes.load(Ordering::Relaxed),
            read_capacity_units: units(&self.usage.read_milli_units),
            write_capacity_units: units(&self.usage.write_milli_units),
        }
    }

    /// One of `owner`'s own records (`pk=OWNER#<principal>`: run ends, tasks), read
    /// consistently; `None` when absent or expired.
    async fn owner_item(
        &self,
        owner: &Principal,
        sk: AttributeValue,
    ) -> Result<Option<Item>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", owner_pk(owner.as_str()))
            .key("sk", sk)
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(unavailable)?;
        self.count_read(output.consumed_capacity.as_ref());
        Ok(output.item.filter(is_present))
    }

    fn count_read(&self, capacity: Option<&ConsumedCapacity>) {
        let milli_units = milli(capacity);
        self.usage.reads.fetch_add(1, Ordering::Relaxed);
        self.usage
            .read_milli_units
            .fetch_add(milli_units, Ordering::Relaxed);
        meter::count_capacity(Access::Read, milli_units);
    }

    /// Counts a write call; its capacity once it answered (a failed call reports none).
    fn count_write(&self) {
        self.usage.writes.fetch_add(1, Ordering::Relaxed);
    }

    fn count_write_capacity<'a>(&self, capacity: impl IntoIterator<Item = &'a ConsumedCapacity>) {
        let milli_units = milli(capacity);
        self.usage
            .write_milli_units
            .fetch_add(milli_units, Ordering::Relaxed);
        meter::count_capacity(Access::Write, milli_units);
    }

    fn expires_at(&self, created_at_ms: i64) -> Option<AttributeValue> {
        self.ttl_seconds.map(|ttl| n(created_at_ms / 1000 + ttl))
    }

    /// A message item stored at `at_ms`; `run` names the run that stores it (a fork's copies
    /// have none).
    fn message_put(
        &self,
        thread_id: &ThreadId,
        (created_at_ms, seq): (i64, usize),
        message: &Message,
        at_ms: i64,
        run: Option<&RunId>,
    ) -> Result<(Put, usize), StoreError> {
        let body = serde_json::to_string(message)
            .map_err(|err| StoreError::Corrupt(format!("a message does not serialise: {err}")))?;
        if body.len() > MAX_MESSAGE_BYTES {
            return Err(StoreError::MessageTooLarge(body.len()));
        }
        let size = body.len() + 100;
        let mut put = Put::builder()
            .table_name(&self.table)
            .item("pk", pk(thread_id))
            .item("sk", message_sk(created_at_ms, seq))
            .item("id", s(message.id().as_str()))
            .item("body", s(body))
            .item(MESSAGE_AT, n(at_ms))
            .condition_expression("attribute_not_exists(pk)");
        if let Some(run) = run {
            put = put.item(RUN, s(run.as_str()));
        }
        if let Some(expires) = self.expires_at(created_at_ms) {
            put = put.item("expiresAt", expires);
        }
        Ok((put.build().map_err(unavailable)?, size))
    }

    /// Splits `messages` into transactions that fit DynamoDB's limits. Each transaction also
    /// carries the META update `meta(index, count, is_last)`, so every one is conditional on the
    /// version the previous one left.
    fn chunks(
        &self,
        thread_id: &ThreadId,
        created_at_ms: i64,
        first_seq: usize,
        new: NewMessages<'_>,
        run: &RunId,
    ) -> Result<Vec<Vec<Put>>, StoreError> {
        let mut chunks = vec![Vec::new()];
        let mut bytes = 0;
        for (offset, message) in new.messages.iter().enumerate() {
            let (put, size) = self.message_put(
                thread_id,
                (created_at_ms, first_seq + offset),
                message,
                message_time(new.copied_at_ms, offset, new.at_ms),
                Some(run),
            )?;
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

    async fn transact(&self, meta: TransactWriteItem, puts: Vec<Put>) -> Result<(), TransactError> {
        let items = std::iter::once(meta)
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

    fn state_value(state: &Value) -> Result<AttributeValue, StoreError> {
        let text = state.to_string();
        if text.len() > MAX_STATE_BYTES {
            return Err(StoreError::StateTooLarge(text.len()));
        }
        Ok(s(text))
    }

    /// Appends `messages` to a thread whose lease this run holds, in as many transactions as
    /// needed; the last one also stores the state and, when `release` is given, replaces the
    /// interrupt record (`None` removes it), frees the lease and records where the run ended
    /// (when the run stored any message: a fork from it has something to copy).
    async fn append_held(
        &self,
        lease: &Lease,
        created_at_ms: i64,
        first_seq: usize,
        new: NewMessages<'_>,
        state: Option<&Value>,
        release: Option<Option<&Value>>,
    ) -> Result<u64, StoreError> {
        let messages = new.messages;
        let state = state.map(Self::state_value).transpose()?;
        let interrupts = release.flatten().map(|record| s(record.to_string()));
        let chunks = self.chunks(
            &lease.thread_id,
            created_at_ms,
            first_seq,
            new,
            &lease.run_id,
        )?;
        let last = chunks.len() - 1;
        let end_seq = first_seq + messages.len();
        let mut run_end = match release {
            Some(_) if lease.input_messages + messages.len() > 0 => {
                Some(self.run_end_put(lease, created_at_ms, end_seq)?)
            }
            _ => None,
        };
        let mut version = lease.version;
        let mut seq = first_seq;
        for (index, mut puts) in chunks.into_iter().enumerate() {
            seq += puts.len();
            let mut set = vec!["#v = :next", "updatedAt = :now", "msgCount = :count"];
            let mut update = Update::builder()
                .table_name(&self.table)
                .key("pk", pk(&lease.thread_id))
                .key("sk", s(META))
                .condition_expression("#v = :expected AND leaseRun = :run")
                .expression_attribute_names("#v", "version")
                .expression_attribute_values(
                    ":expected",
                    n(i64::try_from(version).unwrap_or(i64::MAX)),
                )
                .expression_attribute_values(
                    ":next",
                    n(i64::try_from(version + 1).unwrap_or(i64::MAX)),
                )
                .expression_attribute_values(":run", s(lease.run_id.as_str()))
                .expression_attribute_values(":now", n(now_ms()))
                .expression_attribute_values(":count", n(i64::try_from(seq).unwrap_or(i64::MAX)));
            if index == last
                && let Some(record) = run_end.take()
            {
                // Chunks hold at most MESSAGES_PER_WRITE messages, which leaves it room.
                puts.push(record);
            }
            if index == last
                && let Some(state) = &state
            {
                set.push("#s = :state");
                update = update
                    .expression_attribute_names("#s", "state")
                    .expression_attribute_values(":state", state.clone());
            }
            let mut remove = Vec::new();
            if index == last && release.is_some() {
                remove.extend(["leaseRun", "leaseUntil", "cancelRun"]);
                match &interrupts {
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
            let update = update
                .update_expression(expression)
                .build()
                .map_err(unavailable)?;
            match self
                .transact(TransactWriteItem::builder().update(update).build(), puts)
                .await
            {
                Ok(()) => version += 1,
                Err(error) => {
                    return Err(match cancellation(error)? {
                        Cancelled::Meta(_) => StoreError::LeaseLost,
                        Cancelled::Other(reasons) => {
                            StoreError::unavailable(format!("transaction cancelled: {reasons}"))
                        }
                    });
                }
            }
        }
        Ok(version)
    }

    /// Writes `requests` with BatchWriteItem, [`BATCH_WRITE_ITEMS`] per call and
    /// [`BATCH_WRITES_IN_FLIGHT`] calls at once. Not atomic: callers make the writes visible (or
    /// harmless) through a META write of their own.
    async fn batch_write(&self, requests: Vec<WriteRequest>) -> Result<(), StoreError> {
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

    /// Deletes the items of one incarnation of a thread: its messages, its runs' event logs and
    /// the records of where its runs ended.
    async fn sweep(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        created_at_ms: i64,
    ) -> Result<(), StoreError> {
        let (messages, events) = futures_util::future::try_join(
            self.query_range(
                thread_id,
                SortKeys::Prefix(message_prefix(created_at_ms)),
                Some("sk, #run"),
            ),
            self.query_range(
                thread_id,
                SortKeys::Prefix(runs_prefix(created_at_ms)),
                Some("sk, #run"),
            ),
        )
        .await?;
        // Every run that ended with a record stored at least one message, which names it.
        let runs: BTreeSet<&str> = messages
            .iter()
            .filter_map(|item| get_s(item, RUN))
            .collect();
        let mut keys: Vec<(AttributeValue, AttributeValue)> = messages
            .iter()
            .chain(&events)
            .filter_map(|item| item.get("sk").cloned())
            .map(|sk| (pk(thread_id), sk))
            .collect();
        keys.extend(
            runs.into_iter()
                .map(|run| (owner_pk(owner.as_str()), run_end_sk(run))),
        );
        self.batch_write(delete_requests(keys)?).await
    }

    /// One UpdateItem of a usage item: `false` when its condition refused it. The item may be
    /// in a quota transaction of a concurrent run of the same caller (TransactionConflict,
    /// which the SDK does not retry); then it is tried again a few times.
    async fn update_if(&self, update: Update) -> Result<bool, StoreError> {
        const TRIES: u32 = 8;
        let mut delay = Duration::from_millis(20);
        for attempt in 0..TRIES {
            back_off(attempt, &mut delay).await;
            self.count_write();
            let result = self
                .client
                .update_item()
                .table_name(update.table_name.clone())
                .set_key(Some(update.key.clone()))
                .update_expression(update.update_expression.clone())
                .set_condition_expression(update.condition_expression.clone())
                .set_expression_attribute_names(update.expression_attribute_names.clone())
                .set_expression_attribute_values(update.expression_attribute_values.clone())
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await;
            match result {
                Ok(output) => {
                    self.count_write_capacity(output.consumed_capacity());
                    return Ok(true);
                }
                Err(error) => match error.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(_) => return Ok(false),
                    UpdateItemError::TransactionConflictException(_) => {}
                    other => return Err(unavailable(other)),
                },
            }
        }
        Err(StoreError::unavailable(
            "a usage record kept conflicting with concurrent quota transactions",
        ))
    }

    /// Both quotas' updates in one transaction: which quota refused, if one did. Concurrent
    /// reservations of one caller can collide on the same items (TransactionConflict); those
    /// are tried again a few times.
    async fn reserve_both(
        &self,
        day: Update,
        minute: Update,
    ) -> Result<Option<Refused>, StoreError> {
        const TRIES: u32 = 8;
        let mut delay = Duration::from_millis(20);
        for attempt in 0..TRIES {
            back_off(attempt, &mut delay).await;
            self.count_write();
            let result = self
                .client
                .transact_write_items()
                .transact_items(TransactWriteItem::builder().update(day.clone()).build())
                .transact_items(TransactWriteItem::builder().update(minute.clone()).build())
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await;
            let error = match result {
                Ok(output) => {
                    self.count_write_capacity(output.consumed_capacity());
                    return Ok(None);
                }
                Err(error) => error,
            };
            let codes = match error.into_service_error() {
                TransactWriteItemsError::TransactionCanceledException(cancelled) => cancelled
                    .cancellation_reasons()
                    .iter()
                    .map(|reason| reason.code().unwrap_or("None").to_owned())
                    .collect::<Vec<_>>(),
                other => return Err(unavailable(other)),
            };
            let failed = |index: usize| {
                codes.get(index).map(String::as_str) == Some("ConditionalCheckFailed")
            };
            if failed(0) {
                return Ok(Some(Refused::Tokens));
            }
            if failed(1) {
                return Ok(Some(Refused::Runs));
            }
            if !codes.iter().any(|code| code == "TransactionConflict") {
                return Err(StoreError::unavailable(format!(
                    "transaction cancelled: {codes:?}"
                )));
            }
        }
        Err(StoreError::unavailable(
            "the quota transaction kept conflicting with concurrent ones",
        ))
    }

    /// The thread's META item, parsed, when `owner` has the thread: `NotFound` for another
    /// principal's thread and for a missing, expired or deleted one.
    async fn live_meta(&self, owner: &Principal, thread_id: &ThreadId) -> Result<Meta, StoreError> {
        let meta_output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", pk(thread_id))
            .key("sk", s(META))
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(unavailable)?;
        self.count_read(meta_output.consumed_capacity.as_ref());
        let meta_item = meta_output.item.ok_or(StoreError::NotFound)?;
        let meta = Meta::parse(&meta_item)?;
        if meta.owner != owner.as_str() || !meta.is_live() {
            return Err(StoreError::NotFound);
        }
        Ok(meta)
    }

    /// One conditional UpdateItem of a task record: `Ok(None)` when it was made, the item as it
    /// was (if any) when the condition refused it.
    async fn update_task(&self, update: Update) -> Result<Option<Option<Item>>, StoreError> {
        self.count_write();
        let result = self
            .client
            .update_item()
            .table_name(update.table_name)
            .set_key(Some(update.key))
            .update_expression(update.update_expression)
            .set_condition_expression(update.condition_expression)
            .set_expression_attribute_names(update.expression_attribute_names)
            .set_expression_attribute_values(update.expression_attribute_values)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match result {
            Ok(output) => {
                self.count_write_capacity(output.consumed_capacity());
                Ok(None)
            }
            Err(error) => match error.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(failed) => {
                    Ok(Some(failed.item().cloned()))
                }
                other => Err(unavailable(other)),
            },
        }
    }

    /// The record of where a run ended, in its principal's partition: a fork from the run reads
    /// it. Replaced when the run id runs again (a repeated run id is a new attempt).
    fn run_end_put(
        &self,
        lease: &Lease,
        created_at_ms: i64,
        end_seq: usize,
    ) -> Result<Put, StoreError> {
        let mut put = Put::builder()
            .table_name(&self.table)
            .item("pk", owner_pk(lease.owner.as_str()))
            .item("sk", run_end_sk(lease.run_id.as_str()))
            .item("thread", s(lease.thread_id.as_str()))
            .item("createdAt", n(created_at_ms))
            .item("endSeq", n(i64::try_from(end_seq).unwrap_or(i64::MAX)));
        if let Some(expires) = self.expires_at(created_at_ms) {
            put = put.item("expiresAt", expires);
        }
        put.build().map_err(unavailable)
    }
}

#[async_trait]
impl ThreadStore for DynamoStore {
    async fn load(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<StoredThread>, StoreError> {
        // META and the messages; run event logs sort after them and are not read.
        let items = self
            .query_range(
                thread_id,
                SortKeys::Between(META.to_owned(), "MSG#~".to_owned()),
                None,
            )
            .await?;
        let Some(meta_item) = items.iter().find(|item| get_s(item, "sk") == Some(META)) else {
            return Ok(None);
        };
        let meta = Meta::parse(meta_item)?;
        if meta.owner != owner.as_str() || !meta.is_live() {
            return Ok(None);
        }
        let prefix = message_prefix(meta.created_at_ms);
        let message_items: Vec<&Item> = items
            .iter()
            .filter(|item| get_s(item, "sk").is_some_and(|sk| sk.starts_with(&prefix)))
            .collect();
        let messages = message_items
            .iter()
            .map(|item| parse_message(item))
            .collect::<Result<Vec<_>, _>>()?;
        let message_at_ms = message_items
            .iter()
            .map(|item| get_n(item, MESSAGE_AT).unwrap_or(meta.created_at_ms))
            .collect();
        Ok(Some(StoredThread {
            messages,
            message_at_ms,
            state: meta.state,
            version: meta.version,
            created_at_ms: meta.created_at_ms,
            active_run: meta
                .active_run
                .and_then(|run| RunId::parse(run, crate::protocol::ids::MAX_ID_LEN).ok()),
            interrupts: meta.interrupts,
            title: meta.title,
        }))
    }

    async fn begin_run(&self, start: RunStart<'_>) -> Result<Lease, StoreError> {
        let now = now_ms();
        let state = start.state.map(Self::state_value).transpose()?;
        let (created_at_ms, first_seq) = match start.loaded {
            Some(thread) => (thread.created_at_ms, thread.messages.len()),
            None => (now, 0),
        };
        let new = NewMessages {
            messages: start.new_messages,
            at_ms: start.at_ms,
            copied_at_ms: start.copied_at_ms,
        };
        let mut chunks = self
            .chunks(start.thread_id, created_at_ms, first_seq, new, start.run_id)?
            .into_iter();
        let first_puts = chunks.next().unwrap_or_default();
        let count = n(i64::try_from(first_seq + first_puts.len()).unwrap_or(i64::MAX));
        let rest = new.from(first_puts.len());

        let meta = match start.loaded {
            None => {
                let mut put = Put::builder()
                    .table_name(&self.table)
                    .item("pk", pk(start.thread_id))
                    .item("sk", s(META))
                    .item("owner", s(start.owner.as_str()))
                    .item("version", n(1))
                    .item("createdAt", n(created_at_ms))
                    .item("updatedAt", n(now))
                    .item("leaseRun", s(start.run_id.as_str()))
                    .item("leaseUntil", n(start.lease_expires_at_ms))
                    .item(MSG_COUNT, count)
                    // An expired thread not yet removed by TTL counts as absent.
                    .condition_expression("attribute_not_exists(pk) OR expiresAt < :now_s")
                    .expression_attribute_values(":now_s", n(now / 1000))
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    );
                if let Some(state) = &state {
                    put = put.item("state", state.clone());
                }
                if let Some(title) = start.title {
                    put = put.item(TITLE, s(title));
                }
                if let Some(expires) = self.expires_at(created_at_ms) {
                    put = put.item("expiresAt", expires);
                }
                TransactWriteItem::builder()
                    .put(put.build().map_err(unavailable)?)
                    .build()
            }
            Some(thread) => {
                let mut expression = "SET #v = :next, leaseRun = :run, leaseUntil = :until, \
                     updatedAt = :now, msgCount = :count"
                    .to_owned();
                let remove = " REMOVE cancelRun";
                let mut update = Update::builder()
                    .table_name(&self.table)
                    .key("pk", pk(start.thread_id))
                    .key("sk", s(META))
                    .condition_expression(
                        // Not while a delete is sweeping the thread (it does not bump the
                        // version a run loaded before it began).
                        "attribute_exists(pk) AND attribute_not_exists(deletedAt) AND #o = :owner AND #v = :expected AND (attribute_not_exists(leaseRun) OR leaseUntil < :now)",
                    )
                    .expression_attribute_names("#v", "version")
                    .expression_attribute_names("#o", "owner")
                    .expression_attribute_values(":owner", s(start.owner.as_str()))
                    .expression_attribute_values(":expected", n(i64::try_from(thread.version).unwrap_or(i64::MAX)))
                    .expression_attribute_values(":next", n(i64::try_from(thread.version + 1).unwrap_or(i64::MAX)))
                    .expression_attribute_values(":run", s(start.run_id.as_str()))
                    .expression_attribute_values(":until", n(start.lease_expires_at_ms))
                    .expression_attribute_values(":now", n(now))
                    .expression_attribute_values(":count", count)
                    .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
                if let Some(state) = &state {
                    expression.push_str(", #s = :state");
                    update = update
                        .expression_attribute_names("#s", "state")
                        .expression_attribute_values(":state", state.clone());
                }
                if let Some(title) = start.title {
                    // The first title a thread gets stays; `set_title` changes it.
                    expression.push_str(", title = if_not_exists(title, :title)");
                    update = update.expression_attribute_values(":title", s(title));
                }
                expression.push_str(remove);
                TransactWriteItem::builder()
                    .update(
                        update
                            .update_expression(expression)
                            .build()
                            .map_err(unavailable)?,
                    )
                    .build()
            }
        };
        if let Err(error) = self.transact(meta, first_puts).await {
            return Err(match cancellation(error)? {
                Cancelled::Meta(Some(old))
                    if get_s(&old, "owner") != Some(start.owner.as_str()) =>
                {
                    StoreError::NotFound
                }
                Cancelled::Meta(_) => StoreError::Conflict,
                Cancelled::Other(reasons) => {
                    StoreError::unavailable(format!("transaction cancelled: {reasons}"))
                }
            });
        }
        let mut lease = Lease {
            owner: start.owner.clone(),
            thread_id: start.thread_id.clone(),
            run_id: start.run_id.clone(),
            version: start.loaded.map_or(1, |thread| thread.version + 1),
            created_at_ms,
            next_seq: first_seq + start.new_messages.len(),
            started_at_ms: now,
            input_messages: start.new_messages.len(),
        };
        if !rest.messages.is_empty() {
            // Inputs too large for one transaction: the rest follows under the lease, and the
            // lease stays held (only `finish_run` releases it).
            let written = start.new_messages.len() - rest.messages.len();
            lease.version = self
                .append_held(&lease, created_at_ms, first_seq + written, rest, None, None)
                .await?;
        }
        Ok(lease)
    }

    async fn finish_run(
        &self,
        lease: &Lease,
        new_messages: &[Message],
        state: Option<&Value>,
        interrupts: Option<&Value>,
        at_ms: i64,
    ) -> Result<(), StoreError> {
        self.append_held(
            lease,
            lease.created_at_ms,
            lease.next_seq,
            NewMessages::at(new_messages, at_ms),
            state,
            Some(interrupts),
        )
        .await
        .map(|_| ())
    }

    async fn history(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, StoreError> {
        let meta = self.live_meta(owner, thread_id).await?;
        let from = match after {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .and_then(|seq| seq.checked_add(1))
                .filter(|seq| *seq < 10_000_000_000)
                .ok_or(StoreError::BadCursor)?,
        };
        let prefix = message_prefix(meta.created_at_ms);
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", pk(thread_id))
            .expression_attribute_values(":from", message_sk(meta.created_at_ms, from))
            .expression_attribute_values(":to", s(format!("{prefix}~")))
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .limit(i32::try_from(limit + 1).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(unavailable)?;
        self.count_read(page.consumed_capacity.as_ref());
        // A page also ends at DynamoDB's 1 MB response cap, with a LastEvaluatedKey.
        let cut_short = page
            .last_evaluated_key
            .as_ref()
            .is_some_and(|key| !key.is_empty());
        let items = page.items.unwrap_or_default();
        let more = items.len() > limit || cut_short;
        let messages = items
            .iter()
            .take(limit)
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
        })
    }

    async fn timed_messages(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        before_seq: Option<u64>,
        limit: usize,
    ) -> Result<TimedPage, StoreError> {
        let meta = self.live_meta(owner, thread_id).await?;
        let prefix = message_prefix(meta.created_at_ms);
        // Sort keys hold the sequence number in ten digits; a bound past them bounds nothing.
        let to = match before_seq.map(usize::try_from) {
            Some(Ok(0)) => return Ok(TimedPage::default()),
            Some(Ok(before)) if before <= 10_000_000_000 => {
                message_sk(meta.created_at_ms, before - 1)
            }
            _ => s(format!("{prefix}~")),
        };
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", pk(thread_id))
            .expression_attribute_values(":from", s(prefix.clone()))
            .expression_attribute_values(":to", to)
            .scan_index_forward(false)
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .limit(i32::try_from(limit.saturating_add(1)).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(unavailable)?;
        self.count_read(page.consumed_capacity.as_ref());
        // A page also ends at DynamoDB's 1 MB response cap, with a LastEvaluatedKey. The one
        // item read past `limit` only tells that there is more (with `limit` 0, all it does).
        let cut_short = page
            .last_evaluated_key
            .as_ref()
            .is_some_and(|key| !key.is_empty());
        let items = page.items.unwrap_or_default();
        let more = items.len() > limit || cut_short;
        let messages = items
            .iter()
            .take(limit)
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

    async fn activity(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<ThreadActivity, StoreError> {
        let Some(item) = self.meta_head(thread_id).await? else {
            return Ok(ThreadActivity::Missing);
        };
        let created_at_ms = get_n(&item, "createdAt")
            .ok_or_else(|| StoreError::Corrupt("a thread record has no createdAt".into()))?;
        if get_s(&item, "owner") != Some(owner.as_str()) || !is_present(&item) {
            return Ok(ThreadActivity::Missing);
        }
        let running = get_s(&item, "leaseRun")
            .filter(|_| get_n(&item, "leaseUntil").is_some_and(|until| until > now_ms()))
            .and_then(|run| RunId::parse(run, crate::protocol::ids::MAX_ID_LEN).ok());
        Ok(match running {
            Some(run_id) => ThreadActivity::Running {
                created_at_ms,
                run_id,
            },
            None => ThreadActivity::Idle { created_at_ms },
        })
    }

    async fn pulse(&self, lease: &Lease, renew_until_ms: Option<i64>) -> Result<Pulse, StoreError> {
        let version = n(i64::try_from(lease.version).unwrap_or(i64::MAX));
        let Some(until) = renew_until_ms else {
            let item = self.meta_head(&lease.thread_id).await?;
            let item = item.ok_or(StoreError::LeaseLost)?;
            let held = get_s(&item, "leaseRun") == Some(lease.run_id.as_str())
                && item.get("version") == Some(&version);
            if !held {
                return Err(StoreError::LeaseLost);
            }
            return Ok(Pulse {
                cancel_requested: get_s(&item, "cancelRun") == Some(lease.run_id.as_str()),
            });
        };
        self.usage.writes.fetch_add(1, Ordering::Relaxed);
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.meta_key(&lease.thread_id).into_iter().collect()))
            .update_expression("SET leaseUntil = :until")
            .condition_expression(
                "leaseRun = :run AND #v = :version AND (attribute_not_exists(cancelRun) OR cancelRun <> :run)",
            )
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":run", s(lease.run_id.as_str()))
            .expression_attribute_values(":version", version.clone())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match result {
            Ok(output) => {
                self.usage
                    .write_milli_units
                    .fetch_add(milli(output.consumed_capacity()), Ordering::Relaxed);
                Ok(Pulse {
                    cancel_requested: false,
                })
            }
            Err(error) => match error.into_service_error() {
                aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(failed) => {
                    let old = failed.item().cloned().unwrap_or_default();
                    let held = get_s(&old, "leaseRun") == Some(lease.run_id.as_str())
                        && old.get("version") == Some(&version);
                    if held {
                        Ok(Pulse {
                            cancel_requested: true,
                        })
                    } else {
                        Err(StoreError::LeaseLost)
                    }
                }
                other => Err(unavailable(other)),
            },
        }
    }

    async fn request_cancel(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        run_id: &RunId,
    ) -> Result<CancelState, StoreError> {
        self.usage.writes.fetch_add(1, Ordering::Relaxed);
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.meta_key(thread_id).into_iter().collect()))
            .update_expression("SET cancelRun = :run")
            .condition_expression("#o = :owner AND leaseRun = :run AND leaseUntil > :now")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":owner", s(owner.as_str()))
            .expression_attribute_values(":run", s(run_id.as_str()))
            .expression_attribute_values(":now", n(now_ms()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let old = match result {
            Ok(_) => return Ok(CancelState::Requested),
            Err(error) => match error.into_service_error() {
                aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(failed) => {
                    failed.item().cloned().unwrap_or_default()
                }
                other => return Err(unavailable(other)),
            },
        };
        if get_s(&old, "owner") != Some(owner.as_str()) || !is_present(&old) {
            return Err(StoreError::NotFound);
        }
        let created_at_ms = get_n(&old, "createdAt").ok_or(StoreError::NotFound)?;
        let prefix = run_prefix(created_at_ms, run_id.as_str());
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", pk(thread_id))
            .expression_attribute_values(":prefix", s(prefix))
            .projection_expression("sk")
            .limit(1)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(unavailable)?;
        self.count_read(page.consumed_capacity.as_ref());
        if page.items.is_some_and(|items| !items.is_empty()) {
            Ok(CancelState::Ended)
        } else {
            Err(StoreError::NotFound)
        }
    }

    async fn append_events(
        &self,
        lease: &Lease,
        first_seq: u64,
        events: &[Bytes],
    ) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut text = String::with_capacity(events.iter().map(|event| event.len() + 1).sum());
        for (index, event) in events.iter().enumerate() {
            if index > 0 {
                text.push('\n');
            }
            text.push_str(std::str::from_utf8(event).map_err(unavailable)?);
        }
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
        Ok(parse_batches(&run_prefix, &items, from))
    }

    async fn list_threads(
        &self,
        owner: &Principal,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ThreadList, StoreError> {
        let start = cursor
            .map(|cursor| decode_list_cursor(cursor, owner.as_str()))
            .transpose()?;
        let now = now_ms();
        // One Query per page: `Limit` counts the items read before the filter, so a page may
        // hold fewer threads than `limit` and still have a next one.
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(OWNER_INDEX)
            .key_condition_expression("#o = :owner")
            .filter_expression(
                "attribute_not_exists(deletedAt) AND \
                 (attribute_not_exists(expiresAt) OR expiresAt > :now_s)",
            )
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_values(":owner", s(owner.as_str()))
            .expression_attribute_values(":now_s", n(now / 1000))
            .scan_index_forward(false)
            .limit(i32::try_from(limit.max(1)).unwrap_or(i32::MAX))
            .set_exclusive_start_key(start)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(unavailable)?;
        self.count_read(page.consumed_capacity.as_ref());
        let threads = page
            .items
            .unwrap_or_default()
            .iter()
            .map(|item| summary(item, now))
            .collect::<Result<Vec<_>, _>>()?;
        let next = match page.last_evaluated_key {
            Some(key) if !key.is_empty() => Some(encode_list_cursor(&key).ok_or_else(|| {
                StoreError::Corrupt("the thread list's last key is not a thread's".to_owned())
            })?),
            _ => None,
        };
        Ok(ThreadList { threads, next })
    }

    async fn set_title(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        title: &str,
    ) -> Result<(), StoreError> {
        // Neither the version nor `updatedAt` moves: a rename does not disturb a run in flight,
        // nor reorder the list.
        self.count_write();
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.meta_key(thread_id).into_iter().collect()))
            .update_expression("SET title = :title")
            .condition_expression(
                "#o = :owner AND attribute_not_exists(deletedAt) AND \
                 (attribute_not_exists(expiresAt) OR expiresAt > :now_s)",
            )
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_values(":owner", s(owner.as_str()))
            .expression_attribute_values(":title", s(title))
            .expression_attribute_values(":now_s", n(now_ms() / 1000))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match result {
            Ok(output) => {
                self.count_write_capacity(output.consumed_capacity());
                Ok(())
            }
            Err(error) => match error.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(_) => Err(StoreError::NotFound),
                other => Err(unavailable(other)),
            },
        }
    }

    async fn delete_thread(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Deletion, StoreError> {
        let now = now_ms();
        // The tombstone first: from here on the thread counts as absent, no run can take it
        // (begin_run checks `deletedAt`), and a delete that fails halfway is resumed by the next
        // one (`if_not_exists` keeps the first tombstone). The version moves on too, so a run
        // still holding an expired lease can write nothing more.
        self.count_write();
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.meta_key(thread_id).into_iter().collect()))
            .update_expression("SET deletedAt = if_not_exists(deletedAt, :now), #v = #v + :one")
            .condition_expression(
                "#o = :owner AND (attribute_not_exists(leaseRun) OR leaseUntil < :now \
                 OR expiresAt < :now_s)",
            )
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":owner", s(owner.as_str()))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":now_s", n(now / 1000))
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        let meta = match result {
            Ok(output) => {
                self.count_write_capacity(output.consumed_capacity());
                output.attributes.unwrap_or_default()
            }
            Err(error) => {
                return match error.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(failed) => match failed.item()
                    {
                        None => Ok(Deletion::Absent),
                        Some(old) if get_s(old, OWNER) != Some(owner.as_str()) => {
                            Err(StoreError::NotFound)
                        }
                        Some(_) => Err(StoreError::Conflict),
                    },
                    other => Err(unavailable(other)),
                };
            }
        };
        let corrupt = || StoreError::Corrupt("a thread record is missing fields".to_owned());
        let created_at_ms = get_n(&meta, "createdAt").ok_or_else(corrupt)?;
        let tombstone = meta.get(DELETED_AT).cloned().ok_or_else(corrupt)?;
        // An expired thread's items are still the caller's data: swept all the same.
        let was_live = get_n(&meta, "expiresAt").is_none_or(|expires| expires * 1000 > now);
        self.sweep(owner, thread_id, created_at_ms).await?;
        self.count_write();
        let removed = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(self.meta_key(thread_id).into_iter().collect()))
            // Only our tombstone: a thread created on the id since (once an expired tombstone
            // no longer holds it) is never removed.
            .condition_expression("deletedAt = :tombstone")
            .expression_attribute_values(":tombstone", tombstone)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match removed {
            Ok(output) => self.count_write_capacity(output.consumed_capacity()),
            // Another delete finished first, or a new thread took the id: ours is gone either way.
            Err(error) => match error.into_service_error() {
                DeleteItemError::ConditionalCheckFailedException(_) => {}
                other => return Err(unavailable(other)),
            },
        }
        Ok(if was_live {
            Deletion::Deleted
        } else {
            Deletion::Absent
        })
    }

    async fn create_thread(&self, thread: NewThread<'_>) -> Result<(), StoreError> {
        let now = now_ms();
        let state = thread.state.map(Self::state_value).transpose()?;
        // Every message is checked before anything is written.
        let mut requests = Vec::with_capacity(thread.messages.len());
        let mut sort_keys = Vec::with_capacity(thread.messages.len());
        for (seq, message) in thread.messages.iter().enumerate() {
            let at_ms = message_time(thread.copied_at_ms, seq, thread.at_ms);
            let (put, _) = self.message_put(thread.thread_id, (now, seq), message, at_ms, None)?;
            sort_keys.push(message_sk(now, seq));
            let put = PutRequest::builder()
                .set_item(Some(put.item))
                .build()
                .map_err(unavailable)?;
            requests.push(WriteRequest::builder().put_request(put).build());
        }
        // The messages first, under this incarnation's prefix no reader looks at until META
        // names it: the thread appears whole when META lands.
        self.batch_write(requests).await?;
        let count = i64::try_from(thread.messages.len()).unwrap_or(i64::MAX);
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", pk(thread.thread_id))
            .item("sk", s(META))
            .item(OWNER, s(thread.owner.as_str()))
            .item("version", n(1))
            .item("createdAt", n(now))
            .item(UPDATED_AT, n(now))
            .item(MSG_COUNT, n(count))
            // An expired thread not yet removed by TTL counts as absent.
            .condition_expression("attribute_not_exists(pk) OR expiresAt < :now_s")
            .expression_attribute_values(":now_s", n(now / 1000))
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        if let Some(title) = thread.title {
            put = put.item(TITLE, s(title));
        }
        if let Some(state) = state {
            put = put.item("state", state);
        }
        if let Some(expires) = self.expires_at(now) {
            put = put.item("expiresAt", expires);
        }
        self.count_write();
        match put.send().await {
            Ok(output) => {
                self.count_write_capacity(output.consumed_capacity());
                Ok(())
            }
            Err(error) => match error.into_service_error() {
                PutItemError::ConditionalCheckFailedException(_) => {
                    // The copies are unreachable; TTL (when on) would remove them too.
                    let keys = sort_keys
                        .into_iter()
                        .map(|sk| (pk(thread.thread_id), sk))
                        .collect();
                    if let Err(error) = self.batch_write(delete_requests(keys)?).await {
                        tracing::warn!(
                            thread_id = %thread.thread_id,
                            error = %error,
                            "could not remove the messages of a fork that lost its thread id"
                        );
                    }
                    Err(StoreError::Conflict)
                }
                other => Err(unavailable(other)),
            },
        }
    }

    async fn run_end(
        &self,
        owner: &Principal,
        run_id: &RunId,
    ) -> Result<Option<RunEnd>, StoreError> {
        let Some(item) = self.owner_item(owner, run_end_sk(run_id.as_str())).await? else {
            return Ok(None);
        };
        let corrupt = || StoreError::Corrupt("a run-end record is missing fields".to_owned());
        Ok(Some(RunEnd {
            thread_id: get_s(&item, "thread")
                .and_then(|id| ThreadId::parse(id, crate::protocol::ids::MAX_ID_LEN).ok())
                .ok_or_else(corrupt)?,
            created_at_ms: get_n(&item, "createdAt").ok_or_else(corrupt)?,
            message_count: get_n(&item, "endSeq")
                .and_then(|count| usize::try_from(count).ok())
                .ok_or_else(corrupt)?,
        }))
    }

    async fn reserve(
        &self,
        owner: &Principal,
        limits: &QuotaLimits,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Reservation, StoreError> {
        use chrono::Timelike;
        let day = usage_day(now);
        let reservation = Reservation {
            owner: owner.clone(),
            day: day.clone(),
            reserved_tokens: limits.reservation(),
        };
        if limits.is_unlimited() {
            return Ok(reservation);
        }
        let tokens_refused = |limit| {
            StoreError::QuotaExceeded(QuotaExceeded::TokensPerDay {
                limit,
                retry_after_secs: secs_to_next_day(now),
            })
        };
        let runs_refused = |limit| {
            StoreError::QuotaExceeded(QuotaExceeded::RunsPerMinute {
                limit,
                retry_after_secs: secs_to_next_minute(now),
            })
        };
        let epoch = now.timestamp();
        let day_update = match limits.tokens_per_day {
            None => None,
            Some(limit) => {
                // Admitted while the day's spend leaves room for the reservation (for at least
                // one token when nothing is reserved); a quota of 0 never admits.
                let cap = i128::from(limit) - i128::from(reservation.reserved_tokens.max(1));
                if cap < 0 {
                    return Err(tokens_refused(limit));
                }
                let day_start = epoch - i64::from(now.num_seconds_from_midnight());
                Some(
                    Update::builder()
                        .table_name(&self.table)
                        .key("pk", usage_pk(owner.as_str()))
                        .key("sk", s(day_sk(&day)))
                        .update_expression(
                            "ADD spent :reserve SET expiresAt = if_not_exists(expiresAt, :exp)",
                        )
                        .condition_expression("attribute_not_exists(spent) OR spent <= :cap")
                        .expression_attribute_values(":reserve", num(reservation.reserved_tokens))
                        .expression_attribute_values(":cap", num(cap))
                        .expression_attribute_values(":exp", n(day_start + USAGE_RETENTION_SECS))
                        .build()
                        .map_err(unavailable)?,
                )
            }
        };
        let minute_update = match limits.runs_per_minute {
            None => None,
            Some(0) => return Err(runs_refused(0)),
            Some(limit) => {
                let minute_start = epoch - i64::from(now.second());
                Some(
                    Update::builder()
                        .table_name(&self.table)
                        .key("pk", usage_pk(owner.as_str()))
                        .key(
                            "sk",
                            s(minute_sk(&now.format("%Y-%m-%dT%H:%M").to_string())),
                        )
                        .update_expression("ADD runs :one SET expiresAt = :exp")
                        .condition_expression("attribute_not_exists(runs) OR runs < :limit")
                        .expression_attribute_values(":one", n(1))
                        .expression_attribute_values(":limit", num(limit))
                        .expression_attribute_values(
                            ":exp",
                            n(minute_start + MINUTE_RETENTION_SECS),
                        )
                        .build()
                        .map_err(unavailable)?,
                )
            }
        };
        let refused = match (day_update, minute_update) {
            (Some(day), Some(minute)) => self.reserve_both(day, minute).await?,
            (Some(update), None) => (!self.update_if(update).await?).then_some(Refused::Tokens),
            (None, Some(update)) => (!self.update_if(update).await?).then_some(Refused::Runs),
            (None, None) => None,
        };
        match refused {
            None => Ok(reservation),
            Some(Refused::Tokens) => Err(tokens_refused(limits.tokens_per_day.unwrap_or(0))),
            Some(Refused::Runs) => Err(runs_refused(limits.runs_per_minute.unwrap_or(0))),
        }
    }

    async fn settle(&self, settlement: Settlement<'_>) -> Result<(), StoreError> {
        let reservation = settlement.reservation;
        let used = settlement
            .run
            .map_or(0, |run| u128::from(run.input) + u128::from(run.output));
        let delta =
            i128::try_from(used).unwrap_or(i128::MAX) - i128::from(reservation.reserved_tokens);
        if settlement.run.is_none() && delta == 0 {
            return Ok(());
        }
        let day_start = chrono::NaiveDate::parse_from_str(&reservation.day, "%Y-%m-%d")
            .ok()
            .and_then(|day| day.and_hms_opt(0, 0, 0))
            .map(|midnight| midnight.and_utc().timestamp())
            .ok_or_else(|| {
                StoreError::Corrupt(format!("a reservation's day is {:?}", reservation.day))
            })?;
        let mut add = Vec::new();
        let mut update = Update::builder()
            .table_name(&self.table)
            .key("pk", usage_pk(reservation.owner.as_str()))
            .key("sk", s(day_sk(&reservation.day)))
            .expression_attribute_values(":exp", n(day_start + USAGE_RETENTION_SECS));
        if delta != 0 {
            add.push("spent :delta".to_owned());
            update = update.expression_attribute_values(":delta", num(delta));
        }
        if let Some(run) = settlement.run {
            let model = format!("{}/{}", run.provider, run.model);
            let counters = [1, run.input, run.output, run.reasoning, run.cached_input];
            // Model names hold `:`, `.` and `-`: always through name placeholders.
            for (index, (metric, value)) in USAGE_METRICS.iter().zip(counters).enumerate() {
                add.push(format!("#m{index} :m{index}"));
                update = update
                    .expression_attribute_names(format!("#m{index}"), format!("{metric}:{model}"))
                    .expression_attribute_values(format!(":m{index}"), num(value));
            }
        }
        // No condition: a run that ran is accounted for whatever the quota says by now.
        let expression = format!(
            "ADD {} SET expiresAt = if_not_exists(expiresAt, :exp)",
            add.join(", ")
        );
        let update = update
            .update_expression(expression)
            .build()
            .map_err(unavailable)?;
        self.update_if(update).await.map(|_| ())
    }

    async fn usage(
        &self,
        owner: &Principal,
        from: &str,
        to: &str,
    ) -> Result<Vec<DayUsage>, StoreError> {
        if from > to {
            // DynamoDB refuses a BETWEEN whose ends are reversed.
            return Ok(Vec::new());
        }
        let mut days = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":pk", usage_pk(owner.as_str()))
                .expression_attribute_values(":from", s(day_sk(from)))
                .expression_attribute_values(":to", s(day_sk(to)))
                .consistent_read(true)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(unavailable)?;
            self.count_read(page.consumed_capacity.as_ref());
            days.extend(
                page.items
                    .unwrap_or_default()
                    .iter()
                    .filter_map(day_usage)
                    .filter(|day| !day.models.is_empty()),
            );
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        Ok(days)
    }

    async fn create_task(&self, task: &TaskRecord) -> Result<(), StoreError> {
        let now = now_ms();
        let (state, failure) = match &task.state {
            TaskState::Accepted => ("accepted", None),
            TaskState::Started => ("started", None),
            TaskState::Failed { code, message } => ("failed", Some((code, message))),
        };
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", owner_pk(task.owner.as_str()))
            .item("sk", task_sk(task.run_id.as_str()))
            .item("thread", s(task.thread_id.as_str()))
            .item("createdThread", AttributeValue::Bool(task.created_thread))
            .item("acceptedAt", n(task.accepted_at_ms))
            .item(TASK_STATE, s(state))
            // Kept as long as the run's event log, which outlives any run it stands for.
            .item("expiresAt", n(now / 1000 + self.events_ttl_seconds))
            // An expired record not yet removed by TTL counts as absent.
            .condition_expression("attribute_not_exists(pk) OR expiresAt < :now_s")
            .expression_attribute_values(":now_s", n(now / 1000))
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        if let Some((code, message)) = failure {
            put = put
                .item("failCode", s(code.as_str()))
                .item("failMessage", s(task_message(message)));
        }
        self.count_write();
        match put.send().await {
            Ok(output) => {
                self.count_write_capacity(output.consumed_capacity());
                Ok(())
            }
            Err(error) => match error.into_service_error() {
                PutItemError::ConditionalCheckFailedException(_) => Err(StoreError::Conflict),
                other => Err(unavailable(other)),
            },
        }
    }

    async fn claim_task(&self, owner: &Principal, run_id: &RunId) -> Result<bool, StoreError> {
        let now = now_ms();
        // A missing item fails the condition too: `#st` is then absent.
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", owner_pk(owner.as_str()))
            .key("sk", task_sk(run_id.as_str()))
            .update_expression("SET #st = :started, startedAt = :now")
            .condition_expression(
                "#st = :accepted AND (attribute_not_exists(expiresAt) OR expiresAt > :now_s)",
            )
            .expression_attribute_names("#st", TASK_STATE)
            .expression_attribute_values(":started", s("started"))
            .expression_attribute_values(":accepted", s("accepted"))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":now_s", n(now / 1000))
            .build()
            .map_err(unavailable)?;
        Ok(self.update_task(update).await?.is_none())
    }

    async fn fail_task(
        &self,
        owner: &Principal,
        run_id: &RunId,
        code: &str,
        message: &str,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", owner_pk(owner.as_str()))
            .key("sk", task_sk(run_id.as_str()))
            .update_expression(
                "SET #st = :failed, failCode = :code, failMessage = :message, failedAt = :now",
            )
            .condition_expression(
                "attribute_exists(pk) AND #st <> :failed AND \
                 (attribute_not_exists(expiresAt) OR expiresAt > :now_s)",
            )
            .expression_attribute_names("#st", TASK_STATE)
            .expression_attribute_values(":failed", s("failed"))
            .expression_attribute_values(":code", s(code))
            .expression_attribute_values(":message", s(task_message(message)))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":now_s", n(now / 1000))
            .build()
            .map_err(unavailable)?;
        match self.update_task(update).await? {
            None => Ok(()),
            // Failed already: the first reason stays.
            Some(Some(old)) if is_present(&old) && get_s(&old, TASK_STATE) == Some("failed") => {
                Ok(())
            }
            Some(_) => Err(StoreError::NotFound),
        }
    }

    async fn task(
        &self,
        owner: &Principal,
        run_id: &RunId,
    ) -> Result<Option<TaskRecord>, StoreError> {
        match self.owner_item(owner, task_sk(run_id.as_str())).await? {
            Some(item) => parse_task(&item, owner, run_id).map(Some),
            None => Ok(None),
        }
    }

    fn describe(&self) -> String {
        format!("DynamoDB thread store (table {})", self.table)
    }
}

/// A task item, parsed.
fn parse_task(item: &Item, owner: &Principal, run_id: &RunId) -> Result<TaskRecord, StoreError> {
    let corrupt = || StoreError::Corrupt("a task record is missing fields".to_owned());
    let state = match get_s(item, TASK_STATE) {
        Some("accepted") => TaskState::Accepted,
        Some("started") => TaskState::Started,
        Some("failed") => TaskState::Failed {
            code: get_s(item, "failCode").unwrap_or_default().to_owned(),
            message: get_s(item, "failMessage").unwrap_or_default().to_owned(),
        },
        _ => return Err(corrupt()),
    };
    Ok(TaskRecord {
        owner: owner.clone(),
        run_id: run_id.clone(),
        thread_id: get_s(item, "thread")
            .and_then(|id| ThreadId::parse(id, crate::protocol::ids::MAX_ID_LEN).ok())
            .ok_or_else(corrupt)?,
        created_thread: match item.get("createdThread") {
            Some(AttributeValue::Bool(created)) => *created,
            _ => return Err(corrupt()),
        },
        accepted_at_ms: get_n(item, "acceptedAt").ok_or_else(corrupt)?,
        state,
    })
}

/// Which quota refused a reservation.
enum Refused {
    Tokens,
    Runs,
}

/// A thread list entry from a `byOwner` index item.
fn summary(item: &Item, now_ms: i64) -> Result<ThreadSummary, StoreError> {
    let corrupt = || StoreError::Corrupt("a thread record is missing fields".to_owned());
    Ok(ThreadSummary {
        thread_id: get_s(item, "pk")
            .and_then(|pk| pk.strip_prefix("THREAD#"))
            .and_then(|id| ThreadId::parse(id, crate::protocol::ids::MAX_ID_LEN).ok())
            .ok_or_else(corrupt)?,
        title: get_s(item, TITLE).map(str::to_owned),
        created_at_ms: get_n(item, "createdAt").ok_or_else(corrupt)?,
        updated_at_ms: get_n(item, UPDATED_AT).ok_or_else(corrupt)?,
        // Threads written before the count was kept have none.
        message_count: get_n(item, MSG_COUNT)
            .and_then(|count| u64::try_from(count).ok())
            .unwrap_or(0),
        active_run: get_s(item, "leaseRun")
            .filter(|_| get_n(item, "leaseUntil").is_some_and(|until| until > now_ms))
            .and_then(|run| RunId::parse(run, crate::protocol::ids::MAX_ID_LEN).ok()),
    })
}

/// A usage day item's per-model counters (`<metric>:<provider>/<model>`), models sorted by
/// provider, then model; `None` for an item that is not a day's.
fn day_usage(item: &Item) -> Option<DayUsage> {
    let day = get_s(item, "sk")?.strip_prefix("DAY#")?.to_owned();
    let mut models: BTreeMap<(String, String), ModelUsage> = BTreeMap::new();
    for (name, value) in item {
        let Some((metric, model)) = name
            .split_once(':')
            .filter(|(metric, _)| USAGE_METRICS.contains(metric))
        else {
            continue;
        };
        let (Some((provider, model)), AttributeValue::N(value)) = (model.split_once('/'), value)
        else {
            continue;
        };
        let Ok(value) = value.parse::<u64>() else {
            continue;
        };
        let entry = models
            .entry((provider.to_owned(), model.to_owned()))
            .or_insert_with(|| ModelUsage {
                provider: provider.to_owned(),
                model: model.to_owned(),
                ..ModelUsage::default()
            });
        match metric {
            "runs" => entry.runs = value,
            "in" => entry.input_tokens = value,
            "out" => entry.output_tokens = value,
            "rsn" => entry.reasoning_tokens = value,
            "cch" => entry.cached_input_tokens = value,
            _ => {}
        }
    }
    Some(DayUsage {
        day,
        models: models.into_values().collect(),
    })
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

/// Turns event log items into events: the latest attempt when `from` is `None`. Items come in
/// sort-key order: attempt, first sequence number, part.
fn parse_batches(run_prefix: &str, items: &[Item], from: Option<EventCursor>) -> EventPage {
    struct Batch {
        started_at_ms: i64,
        first_seq: u64,
        text: String,
        complete: bool,
    }
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
