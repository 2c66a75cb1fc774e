//! The DynamoDB store's long-term memories: partition `MEMORY#<principal>`, one `MEM#<id>` item
//! per memory and a `VERSION` item whose number every write raises in the same transaction.
//! A run reads the version (one GetItem) and reads the memories again (one Query page per MB)
//! only when this warm process does not hold that version already.

use super::DynamoStore;
use super::items::*;
use super::reads::SortKeys;
use crate::auth::Principal;
use crate::protocol::ids::MAX_ID_LEN;
use crate::protocol::{RunId, ThreadId};
use crate::store::{Memories, Memory, MemoryEdit, MemoryId, MemorySet, NewMemory, StoreError};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, Put, ReturnConsumedCapacity, TransactWriteItem, Update,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const VERSION_SK: &str = "VERSION";
const MEMORY_PREFIX: &str = "MEM#";
/// Principals whose memories a warm process keeps; past this the cache starts over.
const CACHED_PRINCIPALS: usize = 1_024;
/// Saves retried after a concurrent write changed the version under them.
const SAVE_TRIES: u32 = 3;

/// The memories this warm process read last, per principal, with their version.
#[derive(Default)]
pub(super) struct MemoryCache(Mutex<HashMap<Principal, MemorySet>>);

impl MemoryCache {
    fn get(&self, owner: &Principal, version: u64) -> Option<MemorySet> {
        let cache = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .get(owner)
            .filter(|set| set.version == version)
            .cloned()
    }

    fn put(&self, owner: &Principal, set: MemorySet) {
        let mut cache = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.len() >= CACHED_PRINCIPALS && !cache.contains_key(owner) {
            cache.clear();
        }
        cache.insert(owner.clone(), set);
    }
}

fn memory_pk(owner: &Principal) -> AttributeValue {
    s(format!("MEMORY#{}", owner.as_str()))
}

fn memory_sk(id: &MemoryId) -> AttributeValue {
    s(format!("{MEMORY_PREFIX}{id}"))
}

#[async_trait]
impl Memories for DynamoStore {
    async fn memories(&self, owner: &Principal) -> Result<MemorySet, StoreError> {
        let version = self.memory_version(owner).await?;
        if let Some(set) = self.memory_cache.get(owner, version) {
            return Ok(set.live(now_ms()));
        }
        let items = self
            .query_partition(
                memory_pk(owner),
                SortKeys::Prefix(MEMORY_PREFIX.to_owned()),
                None,
            )
            .await?;
        let mut memories = items
            .iter()
            .map(parse_memory)
            .collect::<Result<Vec<_>, _>>()?;
        memories.sort_by(|a, b| b.id.cmp(&a.id));
        let set = MemorySet {
            version,
            memories: Arc::new(memories),
        };
        self.memory_cache.put(owner, set.clone());
        Ok(set.live(now_ms()))
    }

    async fn save_memory(
        &self,
        owner: &Principal,
        memory: NewMemory,
        max_items: u32,
    ) -> Result<Memory, StoreError> {
        for _ in 0..SAVE_TRIES {
            let current = self.memories(owner).await?;
            if current.memories.len() >= max_items as usize {
                return Err(StoreError::TooManyMemories(max_items));
            }
            let now = now_ms();
            let saved = Memory {
                id: MemoryId::new(now),
                text: memory.text.clone(),
                pinned: memory.pinned,
                created_at_ms: now,
                updated_at_ms: now,
                thread_id: memory.thread_id.clone(),
                run_id: memory.run_id.clone(),
                // TTL counts in seconds.
                expires_at_ms: memory.expires_at_ms.map(|at| at / 1000 * 1000),
            };
            let put = TransactWriteItem::builder()
                .put(self.memory_put(owner, &saved)?)
                .build();
            // The count was read at this version: a save in between makes this one try again.
            let bump = self.version_bump(owner, Some(current.version))?;
            if self.transact_memory(vec![put, bump]).await? {
                // The write was conditional on `current.version`: the set is now exactly this.
                let mut memories = Vec::with_capacity(current.memories.len() + 1);
                memories.push(saved.clone());
                memories.extend(current.memories.iter().cloned());
                let set = MemorySet {
                    version: current.version + 1,
                    memories: Arc::new(memories),
                };
                self.memory_cache.put(owner, set);
                return Ok(saved);
            }
        }
        Err(StoreError::Conflict)
    }

    async fn edit_memory(
        &self,
        owner: &Principal,
        id: &MemoryId,
        edit: MemoryEdit,
    ) -> Result<Memory, StoreError> {
        let current = self.memories(owner).await?;
        let mut edited = current
            .memories
            .iter()
            .find(|memory| &memory.id == id)
            .cloned()
            .ok_or(StoreError::NotFound)?;
        if let Some(text) = edit.text {
            edited.text = text;
        }
        if let Some(pinned) = edit.pinned {
            edited.pinned = pinned;
        }
        edited.updated_at_ms = now_ms();
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", memory_pk(owner))
            .key("sk", memory_sk(id))
            .update_expression("SET #text = :text, pinned = :pinned, updatedAt = :now")
            .condition_expression(LIVE)
            .expression_attribute_names("#text", "text")
            .expression_attribute_values(":text", s(edited.text.clone()))
            .expression_attribute_values(":pinned", AttributeValue::Bool(edited.pinned))
            .expression_attribute_values(":now", n(edited.updated_at_ms))
            .expression_attribute_values(":now_s", n(edited.updated_at_ms / 1000))
            .build()
            .map_err(unavailable)?;
        let items = vec![
            TransactWriteItem::builder().update(update).build(),
            self.version_bump(owner, None)?,
        ];
        if self.transact_memory(items).await? {
            Ok(edited)
        } else {
            Err(StoreError::NotFound)
        }
    }

    async fn delete_memory(&self, owner: &Principal, id: &MemoryId) -> Result<(), StoreError> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .key("pk", memory_pk(owner))
            .key("sk", memory_sk(id))
            .condition_expression(LIVE)
            .expression_attribute_values(":now_s", n(now_ms() / 1000))
            .build()
            .map_err(unavailable)?;
        let items = vec![
            TransactWriteItem::builder().delete(delete).build(),
            self.version_bump(owner, None)?,
        ];
        if self.transact_memory(items).await? {
            Ok(())
        } else {
            Err(StoreError::NotFound)
        }
    }

    async fn delete_memories(&self, owner: &Principal) -> Result<usize, StoreError> {
        let items = self
            .query_partition(
                memory_pk(owner),
                SortKeys::Prefix(MEMORY_PREFIX.to_owned()),
                None,
            )
            .await?;
        let live = items.iter().filter(|item| is_present(item)).count();
        let keys = items
            .into_iter()
            .filter_map(|mut item| Some((item.remove("pk")?, item.remove("sk")?)))
            .collect();
        self.batch_write(delete_requests(keys)?).await?;
        // The version item stays and moves on, so no cached set of the old version is served.
        let bump = self.version_bump(owner, None)?;
        self.transact_memory(vec![bump]).await?;
        Ok(live)
    }
}

/// A live memory item: present and not past its expiry (TTL removes it later).
const LIVE: &str =
    "attribute_exists(pk) AND (attribute_not_exists(expiresAt) OR expiresAt > :now_s)";

impl DynamoStore {
    /// `owner`'s memory version: 0 before their first write. One consistent GetItem.
    async fn memory_version(&self, owner: &Principal) -> Result<u64, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", memory_pk(owner))
            .key("sk", s(VERSION_SK))
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(unavailable)?;
        self.count_read(output.consumed_capacity.as_ref());
        Ok(output
            .item
            .and_then(|item| get_n(&item, "version"))
            .map_or(0, |version| u64::try_from(version).unwrap_or(0)))
    }

    fn memory_put(&self, owner: &Principal, memory: &Memory) -> Result<Put, StoreError> {
        let mut put = Put::builder()
            .table_name(&self.table)
            .item("pk", memory_pk(owner))
            .item("sk", memory_sk(&memory.id))
            .item("text", s(memory.text.clone()))
            .item("pinned", AttributeValue::Bool(memory.pinned))
            .item("createdAt", n(memory.created_at_ms))
            .item("updatedAt", n(memory.updated_at_ms))
            .condition_expression("attribute_not_exists(pk)");
        if let Some(thread) = &memory.thread_id {
            put = put.item("thread", s(thread.as_str()));
        }
        if let Some(run) = &memory.run_id {
            put = put.item(RUN, s(run.as_str()));
        }
        if let Some(at) = memory.expires_at_ms {
            put = put.item("expiresAt", n(at / 1000));
        }
        put.build().map_err(unavailable)
    }

    /// Raises `owner`'s memory version by one; only from `expected` when given.
    fn version_bump(
        &self,
        owner: &Principal,
        expected: Option<u64>,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut update = Update::builder()
            .table_name(&self.table)
            .key("pk", memory_pk(owner))
            .key("sk", s(VERSION_SK))
            .update_expression("ADD version :one")
            .expression_attribute_values(":one", n(1));
        if let Some(expected) = expected {
            let expected = i64::try_from(expected).unwrap_or(i64::MAX);
            update = if expected == 0 {
                update.condition_expression("attribute_not_exists(version)")
            } else {
                update
                    .condition_expression("version = :expected")
                    .expression_attribute_values(":expected", n(expected))
            };
        }
        Ok(TransactWriteItem::builder()
            .update(update.build().map_err(unavailable)?)
            .build())
    }

    /// One transaction of memory writes: `false` when a condition refused it.
    async fn transact_memory(&self, items: Vec<TransactWriteItem>) -> Result<bool, StoreError> {
        self.count_write();
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match result {
            Ok(output) => {
                self.count_write_capacity(output.consumed_capacity());
                Ok(true)
            }
            Err(error) => match cancellation(error)? {
                Cancelled::Meta(_) => Ok(false),
                Cancelled::Other(reasons)
                    if reasons.contains("ConditionalCheckFailed")
                        || reasons.contains("TransactionConflict") =>
                {
                    Ok(false)
                }
                Cancelled::Other(reasons) => Err(StoreError::unavailable(format!(
                    "transaction cancelled: {reasons}"
                ))),
            },
        }
    }
}

#[cfg(any(test, feature = "test-utils"))]
impl DynamoStore {
    /// Writes `texts` as `owner`'s memories straight into the table (BatchWriteItem, 25 a
    /// call) and moves their version on: benchmarks and tests seed thousands in seconds.
    pub async fn seed_memories(
        &self,
        owner: &Principal,
        texts: &[String],
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let mut requests = Vec::with_capacity(texts.len());
        for (index, text) in texts.iter().enumerate() {
            let at = now + i64::try_from(index).unwrap_or(0);
            let memory = Memory {
                id: MemoryId::new(at),
                text: text.clone(),
                pinned: false,
                created_at_ms: at,
                updated_at_ms: at,
                thread_id: None,
                run_id: None,
                expires_at_ms: None,
            };
            let put = self.memory_put(owner, &memory)?;
            let request = aws_sdk_dynamodb::types::PutRequest::builder()
                .set_item(Some(put.item))
                .build()
                .map_err(unavailable)?;
            requests.push(
                aws_sdk_dynamodb::types::WriteRequest::builder()
                    .put_request(request)
                    .build(),
            );
        }
        self.batch_write(requests).await?;
        self.transact_memory(vec![self.version_bump(owner, None)?])
            .await?;
        Ok(())
    }
}

impl MemorySet {
    /// The set without what expired since it was read.
    fn live(self, now_ms: i64) -> Self {
        if self.memories.iter().all(|memory| memory.is_live(now_ms)) {
            return self;
        }
        let memories = self
            .memories
            .iter()
            .filter(|memory| memory.is_live(now_ms))
            .cloned()
            .collect();
        Self {
            version: self.version,
            memories: Arc::new(memories),
        }
    }
}

fn parse_memory(item: &Item) -> Result<Memory, StoreError> {
    let corrupt = || StoreError::Corrupt("a memory item is missing fields".to_owned());
    let id = get_s(item, "sk")
        .and_then(|sk| sk.strip_prefix(MEMORY_PREFIX))
        .and_then(MemoryId::parse)
        .ok_or_else(corrupt)?;
    Ok(Memory {
        id,
        text: get_s(item, "text").ok_or_else(corrupt)?.to_owned(),
        pinned: matches!(item.get("pinned"), Some(AttributeValue::Bool(true))),
        created_at_ms: get_n(item, "createdAt").ok_or_else(corrupt)?,
        updated_at_ms: get_n(item, "updatedAt").ok_or_else(corrupt)?,
        thread_id: get_s(item, "thread").and_then(|id| ThreadId::parse(id, MAX_ID_LEN).ok()),
        run_id: get_s(item, RUN).and_then(|id| RunId::parse(id, MAX_ID_LEN).ok()),
        expires_at_ms: get_n(item, "expiresAt").map(|at| at * 1000),
    })
}
