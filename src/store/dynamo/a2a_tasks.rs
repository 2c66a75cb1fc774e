//! The DynamoDB store's A2A tasks. A task is one item in its owner's partition,
//! `OWNER#<principal>` / `A2A#<taskId>` (found by id, listed by owner), and a marker in its
//! thread's partition, `THREAD#<threadId>` / `A2A#<taskId>`, by which deleting the thread finds
//! it. Both expire with the thread (its `expiresAt`).

use super::DynamoStore;
use super::items::*;
use crate::auth::Principal;
use crate::protocol::ThreadId;
use crate::store::a2a_tasks::page_of;
use crate::store::{A2aTaskPage, A2aTaskQuery, A2aTaskRecord, A2aTasks, StoreError};
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, KeysAndAttributes, Put, ReturnConsumedCapacity,
    TransactWriteItem,
};
use std::collections::HashMap;

/// The sort key of a task, in its owner's partition and (as its marker) in its thread's.
pub(super) const A2A_PREFIX: &str = "A2A#";

fn a2a_sk(task_id: &str) -> AttributeValue {
    AttributeValue::S(format!("{A2A_PREFIX}{task_id}"))
}

/// What a list reads of each task: everything but the body.
const SUMMARY: &str = "sk, thread, threadCreatedAt, #st, createdAt, statusAt, v, expiresAt";
/// A task's `TASK_STATE_*`.
const STATE: &str = "state";

impl DynamoStore {
    /// The owner item of `record`.
    fn a2a_item(&self, record: &A2aTaskRecord) -> aws_sdk_dynamodb::types::builders::PutBuilder {
        let mut put = Put::builder()
            .table_name(&self.table)
            .item("pk", owner_pk(record.owner.as_str()))
            .item("sk", a2a_sk(&record.task_id))
            .item("thread", s(record.thread_id.as_str()))
            .item("threadCreatedAt", n(record.thread_created_at_ms))
            .item(STATE, s(record.state.as_str()))
            .item("createdAt", n(record.created_at_ms))
            .item("statusAt", n(record.updated_at_ms))
            .item("v", num(record.version))
            .item("body", s(record.body.to_string()));
        if let Some(expires) = self.expires_at(record.thread_created_at_ms) {
            put = put.item("expiresAt", expires);
        }
        put
    }

    /// Deletes the tasks whose markers `markers` are (a thread's, while it is deleted).
    pub(super) fn a2a_task_keys(
        owner: &Principal,
        markers: &[Item],
    ) -> Vec<(AttributeValue, AttributeValue)> {
        markers
            .iter()
            .filter_map(|item| get_s(item, "sk"))
            .map(|sk| (owner_pk(owner.as_str()), AttributeValue::S(sk.to_owned())))
            .collect()
    }

    /// Every summary of `owner`'s tasks, all pages.
    async fn a2a_summaries(&self, owner: &Principal) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
                .expression_attribute_values(":pk", owner_pk(owner.as_str()))
                .expression_attribute_values(":prefix", s(A2A_PREFIX))
                .projection_expression(SUMMARY)
                .expression_attribute_names("#st", STATE)
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
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

    /// The bodies of `owner`'s tasks `ids`, by task id (BatchGetItem, 100 keys a call).
    async fn a2a_bodies(
        &self,
        owner: &Principal,
        ids: &[String],
    ) -> Result<HashMap<String, Item>, StoreError> {
        let mut found = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(100) {
            let keys: Vec<HashMap<String, AttributeValue>> = chunk
                .iter()
                .map(|id| {
                    HashMap::from([
                        ("pk".to_owned(), owner_pk(owner.as_str())),
                        ("sk".to_owned(), a2a_sk(id)),
                    ])
                })
                .collect();
            let mut pending = Some(
                KeysAndAttributes::builder()
                    .set_keys(Some(keys))
                    .consistent_read(true)
                    .build()
                    .map_err(unavailable)?,
            );
            // Unprocessed keys (throttling) are asked again, a bounded number of times.
            for attempt in 0..8 {
                let Some(request) = pending.take() else {
                    break;
                };
                if attempt > 0 {
                    tokio::time::sleep(jittered(std::time::Duration::from_millis(
                        50 << attempt.min(5),
                    )))
                    .await;
                }
                let output = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(unavailable)?;
                for capacity in output.consumed_capacity() {
                    self.count_read(Some(capacity));
                }
                for item in output
                    .responses
                    .and_then(|mut tables| tables.remove(&self.table))
                    .unwrap_or_default()
                {
                    if let Some(id) = get_s(&item, "sk").and_then(|sk| sk.strip_prefix(A2A_PREFIX))
                    {
                        found.insert(id.to_owned(), item);
                    }
                }
                pending = output
                    .unprocessed_keys
                    .and_then(|mut tables| tables.remove(&self.table))
                    .filter(|rest| !rest.keys().is_empty());
            }
            if pending.is_some() {
                return Err(StoreError::unavailable(
                    "DynamoDB left keys of a task list unread after eight tries",
                ));
            }
        }
        Ok(found)
    }
}

/// A task item (or a summary with `body` absent: `Null`), parsed.
fn parse_record(item: &Item, owner: &Principal) -> Result<A2aTaskRecord, StoreError> {
    let corrupt = || StoreError::Corrupt("an A2A task record is missing fields".to_owned());
    let body = match get_s(item, "body") {
        Some(text) => serde_json::from_str(text).map_err(|_| corrupt())?,
        None => serde_json::Value::Null,
    };
    Ok(A2aTaskRecord {
        owner: owner.clone(),
        task_id: get_s(item, "sk")
            .and_then(|sk| sk.strip_prefix(A2A_PREFIX))
            .ok_or_else(corrupt)?
            .to_owned(),
        thread_id: get_s(item, "thread")
            .and_then(|id| ThreadId::parse(id, crate::protocol::ids::MAX_ID_LEN).ok())
            .ok_or_else(corrupt)?,
        thread_created_at_ms: get_n(item, "threadCreatedAt").ok_or_else(corrupt)?,
        state: get_s(item, STATE).ok_or_else(corrupt)?.to_owned(),
        created_at_ms: get_n(item, "createdAt").ok_or_else(corrupt)?,
        updated_at_ms: get_n(item, "statusAt").ok_or_else(corrupt)?,
        version: get_n(item, "v")
            .and_then(|v| u64::try_from(v).ok())
            .ok_or_else(corrupt)?,
        body,
    })
}

#[async_trait]
impl A2aTasks for DynamoStore {
    async fn create_a2a_task(&self, record: &A2aTaskRecord) -> Result<(), StoreError> {
        let now = now_ms();
        let mut record = record.clone();
        record.version = 1;
        // The thread is the owner's, this incarnation of it, and not being deleted.
        let thread = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(self.meta_key(&record.thread_id).into_iter().collect()))
            .condition_expression(
                "#o = :owner AND createdAt = :created AND attribute_not_exists(deletedAt)",
            )
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_values(":owner", s(record.owner.as_str()))
            .expression_attribute_values(":created", n(record.thread_created_at_ms))
            .build()
            .map_err(unavailable)?;
        // An expired task not yet removed by TTL counts as absent.
        let task = self
            .a2a_item(&record)
            .condition_expression("attribute_not_exists(pk) OR expiresAt < :now_s")
            .expression_attribute_values(":now_s", n(now / 1000))
            .build()
            .map_err(unavailable)?;
        let mut marker = Put::builder()
            .table_name(&self.table)
            .item("pk", pk(&record.thread_id))
            .item("sk", a2a_sk(&record.task_id));
        if let Some(expires) = self.expires_at(record.thread_created_at_ms) {
            marker = marker.item("expiresAt", expires);
        }
        let marker = marker.build().map_err(unavailable)?;
        let written = self
            .transact(
                TransactWriteItem::builder().condition_check(thread).build(),
                vec![task, marker],
            )
            .await;
        match written {
            Ok(()) => Ok(()),
            Err(error) => match error.into_service_error() {
                TransactWriteItemsError::TransactionCanceledException(cancelled) => {
                    let failed = |index: usize| {
                        cancelled
                            .cancellation_reasons()
                            .get(index)
                            .is_some_and(|reason| reason.code() == Some("ConditionalCheckFailed"))
                    };
                    if failed(0) {
                        Err(StoreError::NotFound)
                    } else if failed(1) {
                        Err(StoreError::Conflict)
                    } else {
                        Err(StoreError::unavailable(format!(
                            "the task's transaction was cancelled: {cancelled}"
                        )))
                    }
                }
                other => Err(unavailable(other)),
            },
        }
    }

    async fn save_a2a_task(&self, record: &A2aTaskRecord) -> Result<(), StoreError> {
        let now = now_ms();
        let put = self.a2a_item(record);
        self.count_write();
        let saved = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(put.build().map_err(unavailable)?.item))
            // The version read, on a task that has not expired (a deleted thread's are gone).
            .condition_expression(
                "v = :read AND (attribute_not_exists(expiresAt) OR expiresAt > :now_s)",
            )
            .expression_attribute_values(":read", num(record.version.saturating_sub(1)))
            .expression_attribute_values(":now_s", n(now / 1000))
            .return_values_on_condition_check_failure(
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            )
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match saved {
            Ok(output) => {
                self.count_write_capacity(output.consumed_capacity());
                Ok(())
            }
            Err(error) => match error.into_service_error() {
                PutItemError::ConditionalCheckFailedException(failed) => match failed.item() {
                    Some(old) if is_present(old) => Err(StoreError::Conflict),
                    _ => Err(StoreError::NotFound),
                },
                other => Err(unavailable(other)),
            },
        }
    }

    async fn a2a_task(
        &self,
        owner: &Principal,
        task_id: &str,
    ) -> Result<Option<A2aTaskRecord>, StoreError> {
        match self.owner_item(owner, a2a_sk(task_id)).await? {
            Some(item) => parse_record(&item, owner).map(Some),
            None => Ok(None),
        }
    }

    async fn list_a2a_tasks(
        &self,
        owner: &Principal,
        query: &A2aTaskQuery,
    ) -> Result<A2aTaskPage, StoreError> {
        let summaries = self
            .a2a_summaries(owner)
            .await?
            .iter()
            .filter(|item| is_present(item))
            .map(|item| parse_record(item, owner))
            .collect::<Result<Vec<_>, _>>()?;
        let mut page = page_of(summaries, query);
        let ids: Vec<String> = page.tasks.iter().map(|task| task.task_id.clone()).collect();
        let mut bodies = self.a2a_bodies(owner, &ids).await?;
        let mut tasks = Vec::with_capacity(page.tasks.len());
        for summary in page.tasks {
            // Deleted between the two reads: left out of the page.
            if let Some(item) = bodies.remove(&summary.task_id).filter(is_present) {
                tasks.push(parse_record(&item, owner)?);
            }
        }
        page.tasks = tasks;
        Ok(page)
    }
}
