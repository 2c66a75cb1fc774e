//! The DynamoDB store's thread deletion: a tombstone (the thread counts as absent from then on),
//! a sweep of everything in its partition and what lives elsewhere under it (its A2A tasks, its
//! sub-agents' threads), then META.

use super::DynamoStore;
use super::items::*;
use super::reads::SortKeys;
use crate::auth::Principal;
use crate::protocol::ThreadId;
use crate::store::{Deletion, StoreError};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnConsumedCapacity, ReturnValue, ReturnValuesOnConditionCheckFailure,
};
use std::collections::BTreeSet;

/// What the first step of a delete found.
pub(super) enum Tombstone {
    /// The thread is marked deleted; its META item as it is now.
    Laid(Item),
    /// Nothing to delete, or not the caller's to delete: `delete_thread`'s answer.
    Refused(Result<Deletion, StoreError>),
}

impl DynamoStore {
    /// A delete's first step: the tombstone. From here on the thread counts as absent, no run
    /// can take it (begin_run checks `deletedAt`), and a delete that fails halfway is resumed
    /// by the next one (`if_not_exists` keeps the first tombstone). The version moves on too,
    /// so a run still holding an expired lease can write nothing more.
    pub(super) async fn tombstone(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        now: i64,
        whatever_runs: bool,
    ) -> Result<Tombstone, StoreError> {
        self.count_write();
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.meta_key(thread_id).into_iter().collect()))
            .update_expression("SET deletedAt = if_not_exists(deletedAt, :now), #v = #v + :one")
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":owner", s(owner.as_str()))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":one", n(1));
        update = if whatever_runs {
            // A sub-agent's thread goes with its parent, even with a run still on it.
            update.condition_expression("#o = :owner")
        } else {
            update
                .condition_expression(
                    "#o = :owner AND (attribute_not_exists(leaseRun) OR leaseUntil < :now \
                     OR expiresAt < :now_s)",
                )
                .expression_attribute_values(":now_s", n(now / 1000))
        };
        let result = update
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match result {
            Ok(output) => {
                self.count_write_capacity(output.consumed_capacity());
                Ok(Tombstone::Laid(output.attributes.unwrap_or_default()))
            }
            Err(error) => match error.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(failed) => {
                    Ok(Tombstone::Refused(match failed.item() {
                        None => Ok(Deletion::Absent),
                        Some(old) if get_s(old, OWNER) != Some(owner.as_str()) => {
                            Err(StoreError::NotFound)
                        }
                        Some(_) => Err(StoreError::Conflict),
                    }))
                }
                other => Err(unavailable(other)),
            },
        }
    }

    /// Deletes a sub-agent's thread (and its own sub-agents'), as its parent's delete does.
    fn delete_child<'a>(
        &'a self,
        owner: &'a Principal,
        thread_id: ThreadId,
    ) -> futures_util::future::BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let meta = match self.tombstone(owner, &thread_id, now_ms(), true).await? {
                Tombstone::Laid(meta) => meta,
                Tombstone::Refused(_) => return Ok(()),
            };
            let corrupt = || StoreError::Corrupt("a thread record is missing fields".to_owned());
            let created_at_ms = get_n(&meta, "createdAt").ok_or_else(corrupt)?;
            let tombstone = meta.get(DELETED_AT).cloned().ok_or_else(corrupt)?;
            self.sweep(owner, &thread_id, created_at_ms).await?;
            self.remove_tombstoned(&thread_id, tombstone).await
        })
    }

    /// Deletes the items of one incarnation of a thread: its messages, its runs' event logs,
    /// the records of where its runs ended, its A2A tasks, its archive marker, and its
    /// sub-agents' threads.
    pub(super) async fn sweep(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        created_at_ms: i64,
    ) -> Result<(), StoreError> {
        let (messages, events, tasks, children) = futures_util::future::try_join4(
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
            // A2A task markers are not per incarnation: an expired one's tasks are swept too.
            self.query_range(
                thread_id,
                SortKeys::Prefix(super::a2a_tasks::A2A_PREFIX.to_owned()),
                Some("sk, #run"),
            ),
            self.query_range(
                thread_id,
                SortKeys::Prefix(children_prefix(created_at_ms)),
                Some("sk, #run, child"),
            ),
        )
        .await?;
        for child in &children {
            if let Some(child) = get_s(child, "child")
                .and_then(|id| ThreadId::parse(id, crate::protocol::ids::MAX_ID_LEN).ok())
            {
                self.delete_child(owner, child).await?;
            }
        }
        // Every run that ended with a record stored at least one message, which names it.
        let runs: BTreeSet<&str> = messages
            .iter()
            .filter_map(|item| get_s(item, RUN))
            .collect();
        let mut keys: Vec<(AttributeValue, AttributeValue)> = messages
            .iter()
            .chain(&events)
            .chain(&children)
            .filter_map(|item| item.get("sk").cloned())
            .map(|sk| (pk(thread_id), sk))
            .collect();
        keys.extend(
            runs.into_iter()
                .map(|run| (owner_pk(owner.as_str()), run_end_sk(run))),
        );
        keys.extend(Self::a2a_task_keys(owner, &tasks));
        keys.extend(
            tasks
                .iter()
                .filter_map(|item| item.get("sk").cloned())
                .map(|sk| (pk(thread_id), sk)),
        );
        keys.push((pk(thread_id), checkpoint_sk(created_at_ms)));
        keys.push((pk(thread_id), live_sk(created_at_ms)));
        keys.push((pk(thread_id), archived_sk(created_at_ms)));
        self.batch_write(delete_requests(keys)?).await
    }

    /// A delete's last step: the META item, only while it carries our `tombstone`.
    pub(super) async fn remove_tombstoned(
        &self,
        thread_id: &ThreadId,
        tombstone: AttributeValue,
    ) -> Result<(), StoreError> {
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
        Ok(())
    }
}
