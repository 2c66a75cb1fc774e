//! The DynamoDB store's threads as wholes: load (one Query of META and the messages), forks
//! (messages first, META last), the caller's list (the `byOwner` index), titles, deletion (its
//! steps are in `deletion.rs`), and the records of where runs ended.

use super::DynamoStore;
use super::deletion::Tombstone;
use super::items::*;
use super::reads::SortKeys;
use super::writes::MessageItem;
use crate::auth::Principal;
use crate::protocol::{RunId, ThreadId};
use crate::store::{
    Checkpoint, Deletion, NewThread, RunEnd, StoreError, StoredThread, ThreadActivity, ThreadList,
    ThreadSummary, Threads, message_time,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, ReturnConsumedCapacity, WriteRequest};

#[async_trait]
impl Threads for DynamoStore {
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
        let Some(meta) = owned_meta(&items, owner)? else {
            return Ok(None);
        };
        thread_from(meta, &items, 0, None)
    }

    async fn load_recent(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<StoredThread>, StoreError> {
        // The checkpoint sorts just before META: one Query reads both, a second the messages
        // it does not cover, however long the thread.
        let Some((meta, checkpoint)) = self.head(owner, thread_id).await? else {
            return Ok(None);
        };
        let covers = checkpoint
            .as_ref()
            .map_or(0, |checkpoint| checkpoint.covers);
        let first = usize::try_from(covers).unwrap_or(usize::MAX);
        let messages = self
            .query_range(
                thread_id,
                SortKeys::Between(
                    sk_text(&message_sk(meta.created_at_ms, first)),
                    format!("{}~", message_prefix(meta.created_at_ms)),
                ),
                None,
            )
            .await?;
        thread_from(meta, &messages, covers, checkpoint)
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
        Ok(match (live_lease(&item, now_ms()), stalled_run(&item)) {
            (Some(run_id), _) => ThreadActivity::Running {
                created_at_ms,
                run_id,
            },
            (None, Some(run_id)) => ThreadActivity::Stalled {
                created_at_ms,
                run_id,
            },
            (None, None) => ThreadActivity::Idle { created_at_ms },
        })
    }

    async fn create_thread(&self, thread: NewThread<'_>) -> Result<(), StoreError> {
        let now = now_ms();
        let state = thread.state.map(Self::state_value).transpose()?;
        // Every message is checked before anything is written.
        let (requests, sort_keys) = self.copy_requests(&thread, now)?;
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
        if self.put_if(put).await? {
            return Ok(());
        }
        self.remove_lost_copies(thread.thread_id, sort_keys).await?;
        Err(StoreError::Conflict)
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
        let (threads, last) = self.owner_page(owner, limit, start).await?;
        Ok(ThreadList {
            threads,
            next: last.as_ref().map(next_cursor).transpose()?,
        })
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
        let meta = match self.tombstone(owner, thread_id, now, false).await? {
            Tombstone::Laid(meta) => meta,
            Tombstone::Refused(refusal) => return refusal,
        };
        let corrupt = || StoreError::Corrupt("a thread record is missing fields".to_owned());
        let created_at_ms = get_n(&meta, "createdAt").ok_or_else(corrupt)?;
        let tombstone = meta.get(DELETED_AT).cloned().ok_or_else(corrupt)?;
        // An expired thread's items are still the caller's data: swept all the same.
        let was_live = get_n(&meta, "expiresAt").is_none_or(|expires| expires * 1000 > now);
        self.sweep(owner, thread_id, created_at_ms).await?;
        self.remove_tombstoned(thread_id, tombstone).await?;
        Ok(if was_live {
            Deletion::Deleted
        } else {
            Deletion::Absent
        })
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

    fn describe(&self) -> String {
        format!("DynamoDB thread store (table {})", self.table)
    }
}

impl DynamoStore {
    /// A fork's message items, all checked, with their sort keys (to remove them again if the
    /// fork loses its thread id).
    fn copy_requests(
        &self,
        thread: &NewThread<'_>,
        created_at_ms: i64,
    ) -> Result<(Vec<WriteRequest>, Vec<AttributeValue>), StoreError> {
        let mut requests = Vec::with_capacity(thread.messages.len());
        let mut sort_keys = Vec::with_capacity(thread.messages.len());
        for (seq, message) in thread.messages.iter().enumerate() {
            let (put, _) = self.message_put(MessageItem {
                thread_id: thread.thread_id,
                created_at_ms,
                seq,
                message,
                at_ms: message_time(thread.copied_at_ms, seq, thread.at_ms),
                run: None,
            })?;
            sort_keys.push(message_sk(created_at_ms, seq));
            let put = PutRequest::builder()
                .set_item(Some(put.item))
                .build()
                .map_err(unavailable)?;
            requests.push(WriteRequest::builder().put_request(put).build());
        }
        Ok((requests, sort_keys))
    }

    /// Removes the copies of a fork whose META write lost the thread id: nothing reaches them,
    /// and TTL (when on) would remove them too, so a failure is only logged.
    async fn remove_lost_copies(
        &self,
        thread_id: &ThreadId,
        sort_keys: Vec<AttributeValue>,
    ) -> Result<(), StoreError> {
        let keys = sort_keys
            .into_iter()
            .map(|sk| (pk(thread_id), sk))
            .collect();
        if let Err(error) = self.batch_write(delete_requests(keys)?).await {
            tracing::warn!(
                thread_id = %thread_id,
                error = %error,
                "could not remove the messages of a fork that lost its thread id"
            );
        }
        Ok(())
    }
}

/// The run holding a live lease, from a META item (whole, projected or from the index).
fn live_lease(item: &Item, now_ms: i64) -> Option<RunId> {
    get_s(item, "leaseRun")
        .filter(|_| get_n(item, "leaseUntil").is_some_and(|until| until > now_ms))
        .and_then(|run| RunId::parse(run, crate::protocol::ids::MAX_ID_LEN).ok())
}

/// The run whose lease expired (`live_lease` found none) while it held the thread with its
/// record: it can be taken over.
fn stalled_run(item: &Item) -> Option<RunId> {
    get_s(item, "leaseRun")
        .filter(|run| get_s(item, LIVE_RUN) == Some(*run))
        .and_then(|run| RunId::parse(run, crate::protocol::ids::MAX_ID_LEN).ok())
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
        active_run: live_lease(item, now_ms),
    })
}

impl DynamoStore {
    /// One Query of the `byOwner` index: up to `limit` of `owner`'s live threads after `start`,
    /// newest first, and the last key read when more may follow. `Limit` counts the items read
    /// before the filter, so a page may hold fewer threads than `limit` and still have a next.
    pub(super) async fn owner_page(
        &self,
        owner: &Principal,
        limit: usize,
        start: Option<Item>,
    ) -> Result<(Vec<ThreadSummary>, Option<Item>), StoreError> {
        let now = now_ms();
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
        let last = page.last_evaluated_key.filter(|key| !key.is_empty());
        Ok((threads, last))
    }
}

/// The list cursor of the index key a page ended at.
pub(super) fn next_cursor(key: &Item) -> Result<String, StoreError> {
    encode_list_cursor(key).ok_or_else(|| {
        StoreError::Corrupt("the thread list's last key is not a thread's".to_owned())
    })
}

/// The META item among `items`, when it is `owner`'s live thread.
impl DynamoStore {
    /// The caller's live thread's META and latest checkpoint, in one Query.
    async fn head(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<(Meta, Option<Checkpoint>)>, StoreError> {
        let head = self
            .query_range(
                thread_id,
                SortKeys::Between(CHECKPOINT_PREFIX.to_owned(), META.to_owned()),
                None,
            )
            .await?;
        let Some(meta) = owned_meta(&head, owner)? else {
            return Ok(None);
        };
        let checkpoint = head
            .iter()
            .find(|item| item.get("sk") == Some(&checkpoint_sk(meta.created_at_ms)))
            .map(parse_checkpoint)
            .transpose()?;
        Ok(Some((meta, checkpoint)))
    }

    /// [`Self::head`] of a thread that must exist: `NotFound` otherwise.
    pub(super) async fn live_head(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<(Meta, Option<Checkpoint>), StoreError> {
        self.head(owner, thread_id)
            .await?
            .ok_or(StoreError::NotFound)
    }
}

fn owned_meta(items: &[Item], owner: &Principal) -> Result<Option<Meta>, StoreError> {
    let Some(item) = items.iter().find(|item| get_s(item, "sk") == Some(META)) else {
        return Ok(None);
    };
    let meta = Meta::parse(item)?;
    Ok((meta.owner == owner.as_str() && meta.is_live()).then_some(meta))
}

/// The thread `meta` heads, with the messages of its incarnation among `items` (the first of
/// them numbered `first_seq`).
fn thread_from(
    meta: Meta,
    items: &[Item],
    first_seq: u64,
    checkpoint: Option<Checkpoint>,
) -> Result<Option<StoredThread>, StoreError> {
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
        first_seq,
        checkpoint,
        context: meta.context,
    }))
}

fn sk_text(sk: &AttributeValue) -> String {
    sk.as_s().cloned().unwrap_or_default()
}
