//! The DynamoDB store. One partition per thread: a `META` item (owner, version, state, lease,
//! TTL) and one item per message, sorted by sequence number. A run reads the partition with one
//! consistent Query and writes with two transactions; each write is conditional on the version
//! it read, so concurrent runs can never interleave their messages.

use super::{
    HistoryPage, Lease, MAX_MESSAGE_BYTES, MAX_STATE_BYTES, Principal, RunStart, StoreError,
    StoredThread, ThreadStore,
};
use crate::protocol::{Message, ThreadId};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, ConsumedCapacity, KeySchemaElement, KeyType,
    Put, ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure, ScalarAttributeType,
    TimeToLiveSpecification, TransactWriteItem, Update,
};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};

mod items;

use items::*;

pub struct DynamoStore {
    client: Client,
    table: String,
    /// Threads are deleted this long after they were created; `None` keeps them.
    ttl_seconds: Option<i64>,
    usage: Usage,
}

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
        Self {
            client,
            table: table.into(),
            ttl_seconds: (ttl_days > 0).then(|| i64::from(ttl_days) * 86_400),
            usage: Usage::default(),
        }
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

    fn count_read(&self, capacity: Option<&ConsumedCapacity>) {
        self.usage.reads.fetch_add(1, Ordering::Relaxed);
        self.usage
            .read_milli_units
            .fetch_add(milli(capacity), Ordering::Relaxed);
    }

    fn expires_at(&self, created_at_ms: i64) -> Option<AttributeValue> {
        self.ttl_seconds.map(|ttl| n(created_at_ms / 1000 + ttl))
    }

    fn message_put(
        &self,
        thread_id: &ThreadId,
        created_at_ms: i64,
        seq: usize,
        message: &Message,
    ) -> Result<(Put, usize), StoreError> {
        let body = serde_json::to_string(message)
            .map_err(|err| StoreError::Unavailable(err.to_string()))?;
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
            .condition_expression("attribute_not_exists(pk)");
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
        messages: &[Message],
    ) -> Result<Vec<Vec<Put>>, StoreError> {
        let mut chunks = vec![Vec::new()];
        let mut bytes = 0;
        for (offset, message) in messages.iter().enumerate() {
            let (put, size) =
                self.message_put(thread_id, created_at_ms, first_seq + offset, message)?;
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
    /// needed; the last one also stores the state and, if `release`, frees the lease.
    async fn append_held(
        &self,
        lease: &Lease,
        created_at_ms: i64,
        first_seq: usize,
        messages: &[Message],
        state: Option<&Value>,
        release: bool,
    ) -> Result<u64, StoreError> {
        let state = state.map(Self::state_value).transpose()?;
        let chunks = self.chunks(&lease.thread_id, created_at_ms, first_seq, messages)?;
        let last = chunks.len() - 1;
        let mut version = lease.version;
        for (index, puts) in chunks.into_iter().enumerate() {
            let mut set = vec!["#v = :next", "updatedAt = :now"];
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
                .expression_attribute_values(":now", n(now_ms()));
            if index == last
                && let Some(state) = &state
            {
                set.push("#s = :state");
                update = update
                    .expression_attribute_names("#s", "state")
                    .expression_attribute_values(":state", state.clone());
            }
            let mut expression = format!("SET {}", set.join(", "));
            if index == last && release {
                expression.push_str(" REMOVE leaseRun, leaseUntil");
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
                            StoreError::Unavailable(format!("transaction cancelled: {reasons}"))
                        }
                    });
                }
            }
        }
        Ok(version)
    }

    /// Creates the table as `template.yaml` declares it: for tests and local DynamoDB.
    pub async fn create_table(client: &Client, table: &str) -> Result<(), StoreError> {
        let key = |name: &str, kind: KeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .map_err(unavailable)
        };
        let attribute = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(unavailable)
        };
        client
            .create_table()
            .table_name(table)
            .billing_mode(BillingMode::PayPerRequest)
            .key_schema(key("pk", KeyType::Hash)?)
            .key_schema(key("sk", KeyType::Range)?)
            .attribute_definitions(attribute("pk")?)
            .attribute_definitions(attribute("sk")?)
            .send()
            .await
            .map_err(unavailable)?;
        client
            .update_time_to_live()
            .table_name(table)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name("expiresAt")
                    .enabled(true)
                    .build()
                    .map_err(unavailable)?,
            )
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }
}

#[async_trait]
impl ThreadStore for DynamoStore {
    async fn load(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<StoredThread>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", pk(thread_id))
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
        let Some(meta_item) = items.iter().find(|item| get_s(item, "sk") == Some(META)) else {
            return Ok(None);
        };
        let meta = Meta::parse(meta_item)?;
        if meta.owner != owner.as_str() || !meta.is_live() {
            return Ok(None);
        }
        let prefix = message_prefix(meta.created_at_ms);
        let messages = items
            .iter()
            .filter(|item| get_s(item, "sk").is_some_and(|sk| sk.starts_with(&prefix)))
            .map(parse_message)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(StoredThread {
            messages,
            state: meta.state,
            version: meta.version,
            created_at_ms: meta.created_at_ms,
        }))
    }

    async fn begin_run(&self, start: RunStart<'_>) -> Result<Lease, StoreError> {
        let now = now_ms();
        let state = start.state.map(Self::state_value).transpose()?;
        let (created_at_ms, first_seq) = match start.loaded {
            Some(thread) => (thread.created_at_ms, thread.messages.len()),
            None => (now, 0),
        };
        let mut chunks = self
            .chunks(
                start.thread_id,
                created_at_ms,
                first_seq,
                start.new_messages,
            )?
            .into_iter();
        let first_puts = chunks.next().unwrap_or_default();
        let rest: Vec<Message> = start
            .new_messages
            .iter()
            .skip(first_puts.len())
            .cloned()
            .collect();

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
                    // An expired thread not yet removed by TTL counts as absent.
                    .condition_expression("attribute_not_exists(pk) OR expiresAt < :now_s")
                    .expression_attribute_values(":now_s", n(now / 1000))
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    );
                if let Some(state) = &state {
                    put = put.item("state", state.clone());
                }
                if let Some(expires) = self.expires_at(created_at_ms) {
                    put = put.item("expiresAt", expires);
                }
                TransactWriteItem::builder()
                    .put(put.build().map_err(unavailable)?)
                    .build()
            }
            Some(thread) => {
                let mut expression =
                    "SET #v = :next, leaseRun = :run, leaseUntil = :until, updatedAt = :now"
                        .to_owned();
                let mut update = Update::builder()
                    .table_name(&self.table)
                    .key("pk", pk(start.thread_id))
                    .key("sk", s(META))
                    .condition_expression(
                        "attribute_exists(pk) AND #o = :owner AND #v = :expected AND (attribute_not_exists(leaseRun) OR leaseUntil < :now)",
                    )
                    .expression_attribute_names("#v", "version")
                    .expression_attribute_names("#o", "owner")
                    .expression_attribute_values(":owner", s(start.owner.as_str()))
                    .expression_attribute_values(":expected", n(i64::try_from(thread.version).unwrap_or(i64::MAX)))
                    .expression_attribute_values(":next", n(i64::try_from(thread.version + 1).unwrap_or(i64::MAX)))
                    .expression_attribute_values(":run", s(start.run_id.as_str()))
                    .expression_attribute_values(":until", n(start.lease_expires_at_ms))
                    .expression_attribute_values(":now", n(now))
                    .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
                if let Some(state) = &state {
                    expression.push_str(", #s = :state");
                    update = update
                        .expression_attribute_names("#s", "state")
                        .expression_attribute_values(":state", state.clone());
                }
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
                    StoreError::Unavailable(format!("transaction cancelled: {reasons}"))
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
        };
        if !rest.is_empty() {
            // Inputs too large for one transaction: the rest follows under the lease, and the
            // lease stays held (only `finish_run` releases it).
            let written = start.new_messages.len() - rest.len();
            lease.version = self
                .append_held(
                    &lease,
                    created_at_ms,
                    first_seq + written,
                    &rest,
                    None,
                    false,
                )
                .await?;
        }
        Ok(lease)
    }

    async fn finish_run(
        &self,
        lease: &Lease,
        new_messages: &[Message],
        state: Option<&Value>,
    ) -> Result<(), StoreError> {
        self.append_held(
            lease,
            lease.created_at_ms,
            lease.next_seq,
            new_messages,
            state,
            true,
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
        let from = match after {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| StoreError::NotFound)? + 1,
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
        })
    }

    fn describe(&self) -> String {
        format!("DynamoDB thread store (table {})", self.table)
    }
}
