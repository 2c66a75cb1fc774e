//! The reads every capability shares: a thread's META item (whole or its small attributes), a
//! range of a thread's partition, and a principal's own records.

use super::DynamoStore;
use super::items::*;
use crate::auth::Principal;
use crate::protocol::ThreadId;
use crate::store::StoreError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};

/// Which sort keys of a partition a query reads.
pub(super) enum SortKeys {
    Between(String, String),
    Prefix(String),
}

impl DynamoStore {
    pub(super) fn meta_key(&self, thread_id: &ThreadId) -> [(String, AttributeValue); 2] {
        [("pk".to_owned(), pk(thread_id)), ("sk".to_owned(), s(META))]
    }

    /// The META item's small attributes, consistently read.
    pub(super) async fn meta_head(&self, thread_id: &ThreadId) -> Result<Option<Item>, StoreError> {
        self.read_meta(thread_id, true).await
    }

    /// The META item, consistently read: whole, or only its small attributes (`head`).
    async fn read_meta(
        &self,
        thread_id: &ThreadId,
        head: bool,
    ) -> Result<Option<Item>, StoreError> {
        let mut get = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(self.meta_key(thread_id).into_iter().collect()));
        if head {
            get = get
                .projection_expression(
                    "#o, createdAt, expiresAt, leaseRun, leaseUntil, cancelRun, #v, deletedAt, \
                     leaseEpoch, liveRun, handoff",
                )
                .expression_attribute_names("#o", "owner")
                .expression_attribute_names("#v", "version");
        }
        let output = get
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(unavailable)?;
        self.count_read(output.consumed_capacity.as_ref());
        Ok(output.item)
    }

    /// The thread's META item, parsed, when `owner` has the thread: `NotFound` for another
    /// principal's thread and for a missing, expired or deleted one.
    pub(super) async fn live_meta(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Meta, StoreError> {
        let meta_item = self
            .read_meta(thread_id, false)
            .await?
            .ok_or(StoreError::NotFound)?;
        let meta = Meta::parse(&meta_item)?;
        if meta.owner != owner.as_str() || !meta.is_live() {
            return Err(StoreError::NotFound);
        }
        Ok(meta)
    }

    /// Every item of the thread's partition in `range`, all pages, read consistently; only the
    /// attributes `projection` names when it is given.
    pub(super) async fn query_range(
        &self,
        thread_id: &ThreadId,
        range: SortKeys,
        projection: Option<&str>,
    ) -> Result<Vec<Item>, StoreError> {
        self.query_partition(pk(thread_id), range, projection).await
    }

    /// Every item of partition `pk` in `range`, all pages, read consistently; only the
    /// attributes `projection` names when it is given.
    pub(super) async fn query_partition(
        &self,
        pk: AttributeValue,
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
                .expression_attribute_values(":pk", pk.clone());
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

    /// One of `owner`'s own records (`pk=OWNER#<principal>`: run ends, tasks), read
    /// consistently; `None` when absent or expired.
    pub(super) async fn owner_item(
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
}
