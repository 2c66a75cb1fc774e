//! The DynamoDB store's shelf: the caller's threads as a thread list UI shows them, and archiving.
//!
//! An archived thread carries a small marker item in its partition (`ARCHIVED#<createdAt>`, one
//! per incarnation, swept with the thread), not an attribute of META: the `byOwner` index
//! projects a fixed set of META's attributes, and a new one would mean rebuilding that index on
//! every existing table. A shelf page is read from the index as the thread list is, then the
//! markers of the threads on it with one consistent BatchGetItem (small items: half a read unit
//! each).

use super::DynamoStore;
use super::items::*;
use super::threads::next_cursor;
use crate::auth::Principal;
use crate::protocol::ThreadId;
use crate::store::{
    Archived, ShelfPage, ShelfQuery, ShelvedThread, StoreError, ThreadShelf, ThreadSummary,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, KeysAndAttributes, Put, ReturnConsumedCapacity,
    TransactWriteItem,
};
use std::collections::{HashMap, HashSet};

/// Index Queries one shelf page may take to fill up past archived threads.
const QUERIES_PER_PAGE: usize = 4;
/// BatchGetItem takes at most 100 keys.
const KEYS_PER_BATCH: usize = 100;

#[async_trait]
impl ThreadShelf for DynamoStore {
    async fn shelf(
        &self,
        owner: &Principal,
        query: ShelfQuery<'_>,
    ) -> Result<ShelfPage, StoreError> {
        let mut start = query
            .cursor
            .map(|cursor| decode_list_cursor(cursor, owner.as_str()))
            .transpose()?;
        let mut threads = Vec::new();
        // Hidden archived threads would leave a page short: read on, a bounded number of times.
        for _ in 0..QUERIES_PER_PAGE {
            let wanted = query.limit.saturating_sub(threads.len()).max(1);
            let (page, last) = self.owner_page(owner, wanted, start).await?;
            let archived = self.archived_among(&page).await?;
            threads.extend(
                page.into_iter()
                    .map(|summary| {
                        let archived = archived.contains(summary.thread_id.as_str());
                        ShelvedThread { summary, archived }
                    })
                    .filter(|thread| query.archived == Archived::Shown || !thread.archived),
            );
            start = last;
            if start.is_none() || threads.len() >= query.limit {
                break;
            }
        }
        Ok(ShelfPage {
            threads,
            next: start.as_ref().map(next_cursor).transpose()?,
        })
    }

    async fn set_archived(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        archived: bool,
    ) -> Result<(), StoreError> {
        let head = self
            .meta_head(thread_id)
            .await?
            .filter(|item| get_s(item, OWNER) == Some(owner.as_str()) && is_present(item))
            .ok_or(StoreError::NotFound)?;
        let created_at_ms = get_n(&head, "createdAt")
            .ok_or_else(|| StoreError::Corrupt("a thread record has no createdAt".into()))?;
        // This incarnation of the owner's thread, not being deleted: a marker written after a
        // delete's sweep would outlive the thread.
        let thread = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(self.meta_key(thread_id).into_iter().collect()))
            .condition_expression(
                "#o = :owner AND createdAt = :created AND attribute_not_exists(deletedAt)",
            )
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_values(":owner", s(owner.as_str()))
            .expression_attribute_values(":created", n(created_at_ms))
            .build()
            .map_err(unavailable)?;
        let marker = if archived {
            let mut put = Put::builder()
                .table_name(&self.table)
                .item("pk", pk(thread_id))
                .item("sk", archived_sk(created_at_ms))
                .item("at", n(now_ms()));
            if let Some(expires) = self.expires_at(created_at_ms) {
                put = put.item("expiresAt", expires);
            }
            TransactWriteItem::builder()
                .put(put.build().map_err(unavailable)?)
                .build()
        } else {
            let delete = Delete::builder()
                .table_name(&self.table)
                .key("pk", pk(thread_id))
                .key("sk", archived_sk(created_at_ms))
                .build()
                .map_err(unavailable)?;
            TransactWriteItem::builder().delete(delete).build()
        };
        let written = self
            .transact_items(
                TransactWriteItem::builder().condition_check(thread).build(),
                vec![marker],
            )
            .await;
        match written {
            Ok(()) => Ok(()),
            Err(error) => match error.into_service_error() {
                TransactWriteItemsError::TransactionCanceledException(_) => {
                    Err(StoreError::NotFound)
                }
                other => Err(unavailable(other)),
            },
        }
    }
}

impl DynamoStore {
    /// Which of `threads` are archived: their markers, read in one consistent BatchGetItem per
    /// hundred (unprocessed keys asked again, a bounded number of times).
    async fn archived_among(
        &self,
        threads: &[ThreadSummary],
    ) -> Result<HashSet<String>, StoreError> {
        let mut archived = HashSet::new();
        for chunk in threads.chunks(KEYS_PER_BATCH) {
            let keys: Vec<HashMap<String, AttributeValue>> = chunk
                .iter()
                .map(|thread| {
                    HashMap::from([
                        ("pk".to_owned(), pk(&thread.thread_id)),
                        ("sk".to_owned(), archived_sk(thread.created_at_ms)),
                    ])
                })
                .collect();
            let mut pending = Some(
                KeysAndAttributes::builder()
                    .set_keys(Some(keys))
                    .projection_expression("pk")
                    .consistent_read(true)
                    .build()
                    .map_err(unavailable)?,
            );
            for attempt in 0..8u32 {
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
                archived.extend(
                    output
                        .responses
                        .and_then(|mut tables| tables.remove(&self.table))
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|item| get_s(item, "pk"))
                        .filter_map(|pk| pk.strip_prefix("THREAD#"))
                        .map(str::to_owned),
                );
                pending = output
                    .unprocessed_keys
                    .and_then(|mut tables| tables.remove(&self.table))
                    .filter(|rest| !rest.keys().is_empty());
            }
            if pending.is_some() {
                return Err(StoreError::unavailable(
                    "DynamoDB left archive markers of a thread list unread after eight tries",
                ));
            }
        }
        Ok(archived)
    }
}
