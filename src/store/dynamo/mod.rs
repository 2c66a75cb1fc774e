//! The DynamoDB store. One partition per thread: a `META` item (owner, version, state, lease,
//! TTL) and one item per message, sorted by sequence number. A run reads the partition with one
//! consistent Query and writes with two transactions; each write is conditional on the version
//! it read, so concurrent runs can never interleave their messages.

use super::{
    CancelState, EventCursor, EventPage, HistoryPage, Lease, MAX_MESSAGE_BYTES, MAX_STATE_BYTES,
    Principal, Pulse, RunRef, RunStart, StoreError, StoredThread, ThreadActivity, ThreadStore,
};
use crate::protocol::events::RecordedEvent;
use crate::protocol::{Message, RunId, ThreadId};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, ConsumedCapacity, KeySchemaElement, KeyType,
    Put, ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure, ScalarAttributeType,
    TimeToLiveSpecification, TransactWriteItem, Update,
};
use bytes::Bytes;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};

mod items;

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
        Self {
            client,
            table: table.into(),
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
            .projection_expression("#o, createdAt, expiresAt, leaseRun, leaseUntil, cancelRun, #v")
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

    /// Every item of the thread's partition with a sort key from `from_sk` to `to_sk`, all pages,
    /// read consistently.
    async fn query_range(
        &self,
        thread_id: &ThreadId,
        from_sk: String,
        to_sk: String,
    ) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":pk", pk(thread_id))
                .expression_attribute_values(":from", s(from_sk.clone()))
                .expression_attribute_values(":to", s(to_sk.clone()))
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
    /// needed; the last one also stores the state and, when `release` is given, replaces the
    /// interrupt record (`None` removes it) and frees the lease.
    async fn append_held(
        &self,
        lease: &Lease,
        created_at_ms: i64,
        first_seq: usize,
        messages: &[Message],
        state: Option<&Value>,
        release: Option<Option<&Value>>,
    ) -> Result<u64, StoreError> {
        let state = state.map(Self::state_value).transpose()?;
        let interrupts = release.flatten().map(|record| s(record.to_string()));
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

    /// Creates `table` as `template.yaml` declares it (on demand; `pk` HASH and `sk` RANGE, both
    /// strings; TTL on `expiresAt`), for tests and DynamoDB Local (`agui-lambda create-table`).
    /// Idempotent: a table that already has that key schema is kept as it is (its TTL switched on
    /// if it was off) and reported as [`TableSetup::Existed`]; a table with another key schema is
    /// [`TableError::Mismatch`]. Secondary indexes are not compared, only the primary key.
    pub async fn create_table(client: &Client, table: &str) -> Result<TableSetup, TableError> {
        let setup = match Self::check_table(client, table).await {
            Ok(()) => TableSetup::Existed,
            Err(TableError::Missing { .. }) => {
                let failed =
                    |err: &dyn std::fmt::Display| TableError::call("CreateTable", table, err);
                let key = |name: &str, kind: KeyType| {
                    KeySchemaElement::builder()
                        .attribute_name(name)
                        .key_type(kind)
                        .build()
                        .map_err(|err| failed(&err))
                };
                let attribute = |name: &str| {
                    AttributeDefinition::builder()
                        .attribute_name(name)
                        .attribute_type(ScalarAttributeType::S)
                        .build()
                        .map_err(|err| failed(&err))
                };
                let created = client
                    .create_table()
                    .table_name(table)
                    .billing_mode(BillingMode::PayPerRequest)
                    .key_schema(key("pk", KeyType::Hash)?)
                    .key_schema(key("sk", KeyType::Range)?)
                    .attribute_definitions(attribute("pk")?)
                    .attribute_definitions(attribute("sk")?)
                    .send()
                    .await;
                match created {
                    Ok(_) => TableSetup::Created,
                    // Created by someone else since the check: fine if it is the same table.
                    Err(err)
                        if err
                            .as_service_error()
                            .is_some_and(|err| err.is_resource_in_use_exception()) =>
                    {
                        Self::check_table(client, table).await?;
                        TableSetup::Existed
                    }
                    Err(err) => {
                        return Err(failed(&error_chain(&err)));
                    }
                }
            }
            Err(other) => return Err(other),
        };
        Self::wait_until_active(client, table).await?;
        Self::ensure_ttl(client, table).await?;
        Ok(setup)
    }

    /// Checks with one `DescribeTable` call that `table` exists with the key schema
    /// `template.yaml` declares (`pk` HASH, `sk` RANGE, both strings). Secondary indexes are
    /// not compared.
    pub async fn check_table(client: &Client, table: &str) -> Result<(), TableError> {
        let Some(described) = Self::describe_table(client, table).await? else {
            return Err(TableError::Missing {
                table: table.to_owned(),
            });
        };
        let type_of = |name: &str| {
            described
                .attribute_definitions()
                .iter()
                .find(|attribute| attribute.attribute_name() == name)
                .map_or("?", |attribute| attribute.attribute_type().as_str())
        };
        let found = described
            .key_schema()
            .iter()
            .map(|key| {
                let name = key.attribute_name();
                format!("{name} {} {}", key.key_type().as_str(), type_of(name))
            })
            .collect::<Vec<_>>()
            .join(", ");
        if found != TEMPLATE_KEY_SCHEMA {
            return Err(TableError::Mismatch {
                table: table.to_owned(),
                what: format!("its key schema is ({found}), not ({TEMPLATE_KEY_SCHEMA})"),
            });
        }
        Ok(())
    }

    /// The table's description, or `None` when it does not exist.
    async fn describe_table(
        client: &Client,
        table: &str,
    ) -> Result<Option<aws_sdk_dynamodb::types::TableDescription>, TableError> {
        match client.describe_table().table_name(table).send().await {
            Ok(output) => Ok(output.table),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|err| err.is_resource_not_found_exception()) =>
            {
                Ok(None)
            }
            Err(err) => Err(TableError::call("DescribeTable", table, &error_chain(&err))),
        }
    }

    /// A new table on AWS is `CREATING` for a few seconds (DynamoDB Local: never); its TTL can
    /// only be set once it is `ACTIVE`.
    async fn wait_until_active(client: &Client, table: &str) -> Result<(), TableError> {
        use aws_sdk_dynamodb::types::TableStatus;
        for _ in 0..120 {
            let status = Self::describe_table(client, table)
                .await?
                .and_then(|described| described.table_status);
            if matches!(status, None | Some(TableStatus::Active)) {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        Err(TableError::call(
            "DescribeTable",
            table,
            &"the table did not become ACTIVE within 60 s",
        ))
    }

    /// Switches TTL on `expiresAt` on, unless it is already.
    async fn ensure_ttl(client: &Client, table: &str) -> Result<(), TableError> {
        use aws_sdk_dynamodb::types::TimeToLiveStatus;
        let described = client
            .describe_time_to_live()
            .table_name(table)
            .send()
            .await
            .map_err(|err| TableError::call("DescribeTimeToLive", table, &error_chain(&err)))?;
        if let Some(ttl) = described.time_to_live_description()
            && matches!(
                ttl.time_to_live_status(),
                Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
            )
        {
            return match ttl.attribute_name() {
                Some(TTL_ATTRIBUTE) => Ok(()),
                other => Err(TableError::Mismatch {
                    table: table.to_owned(),
                    what: format!(
                        "its TTL attribute is {}, not {TTL_ATTRIBUTE}",
                        other.unwrap_or("unnamed")
                    ),
                }),
            };
        }
        let failed = |err: &dyn std::fmt::Display| TableError::call("UpdateTimeToLive", table, err);
        client
            .update_time_to_live()
            .table_name(table)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(TTL_ATTRIBUTE)
                    .enabled(true)
                    .build()
                    .map_err(|err| failed(&err))?,
            )
            .send()
            .await
            .map_err(|err| failed(&error_chain(&err)))?;
        Ok(())
    }
}

/// An SDK error with its causes, `outer: inner: …` ("dispatch failure: io error: … Connection
/// refused"), without the Debug dump `DisplayErrorContext` appends.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The primary key `template.yaml` declares, as [`DynamoStore::check_table`] prints one.
const TEMPLATE_KEY_SCHEMA: &str = "pk HASH S, sk RANGE S";
/// The attribute `template.yaml` names for TTL.
const TTL_ATTRIBUTE: &str = "expiresAt";

/// What [`DynamoStore::create_table`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableSetup {
    Created,
    /// The table was there already, with the expected key schema.
    Existed,
}

/// Why the threads table cannot be created or used.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("table {table} does not exist")]
    Missing { table: String },
    #[error(
        "table {table} exists but does not match template.yaml: {what}. Delete it \
         (aws dynamodb delete-table --table-name {table}) or set THREADS_TABLE to another name"
    )]
    Mismatch { table: String, what: String },
    #[error("DynamoDB {call} on table {table} failed: {reason}")]
    Call {
        call: &'static str,
        table: String,
        reason: String,
    },
}

impl TableError {
    fn call(call: &'static str, table: &str, reason: &dyn std::fmt::Display) -> Self {
        TableError::Call {
            call,
            table: table.to_owned(),
            reason: reason.to_string(),
        }
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
            .query_range(thread_id, META.to_owned(), "MSG#~".to_owned())
            .await?;
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
            active_run: meta
                .active_run
                .and_then(|run| RunId::parse(run, crate::protocol::ids::MAX_ID_LEN).ok()),
            interrupts: meta.interrupts,
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
                let remove = " REMOVE cancelRun";
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
                    None,
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
        interrupts: Option<&Value>,
    ) -> Result<(), StoreError> {
        self.append_held(
            lease,
            lease.created_at_ms,
            lease.next_seq,
            new_messages,
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
            active_run: meta
                .active_run
                .and_then(|run| RunId::parse(run, crate::protocol::ids::MAX_ID_LEN).ok()),
        })
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
        let live = get_n(&item, "expiresAt").is_none_or(|expires| expires * 1000 > now_ms());
        if get_s(&item, "owner") != Some(owner.as_str()) || !live {
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
        let live = get_n(&old, "expiresAt").is_none_or(|expires| expires * 1000 > now_ms());
        if get_s(&old, "owner") != Some(owner.as_str()) || !live {
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
        let items = self.query_range(&run.thread_id, from_sk, to_sk).await?;
        Ok(parse_batches(&run_prefix, &items, from))
    }

    fn describe(&self) -> String {
        format!("DynamoDB thread store (table {})", self.table)
    }
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
