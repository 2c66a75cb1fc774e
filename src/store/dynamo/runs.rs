//! The DynamoDB store's run leases: the lease lives on the thread's META item (`leaseRun`,
//! `leaseUntil`, `cancelRun`), taken and released in the transactions that store the run's
//! input and output.

use super::DynamoStore;
use super::items::*;
use super::writes::{AppendEnd, NewMessages, cancelled_error};
use crate::auth::Principal;
use crate::protocol::{RunId, ThreadId};
use crate::store::{
    CancelState, Lease, LinkedRun, ParentStep, Pulse, RunFinish, RunLeases, RunStart, StoreError,
    StoredThread, ThreadLink,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Put, ReturnConsumedCapacity,
    ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use std::sync::atomic::Ordering;

/// What `begin_run`'s META write stores besides the lease.
pub(super) struct LeaseWrite<'a> {
    pub(super) start: &'a RunStart<'a>,
    pub(super) now: i64,
    pub(super) created_at_ms: i64,
    /// Messages in the thread once the first transaction is written.
    pub(super) msg_count: AttributeValue,
    pub(super) state: Option<AttributeValue>,
}

#[async_trait]
impl RunLeases for DynamoStore {
    async fn begin_run(&self, start: RunStart<'_>) -> Result<Lease, StoreError> {
        self.begin(start, None).await
    }

    async fn begin_linked_run(
        &self,
        start: RunStart<'_>,
        parent: &ThreadLink,
        step: Option<ParentStep<'_>>,
    ) -> Result<LinkedRun, StoreError> {
        if start.loaded.is_some() {
            return Err(StoreError::NotFound);
        }
        match step {
            Some(step) => self.begin_with_step(start, parent, step).await,
            None => Ok(LinkedRun {
                lease: self.begin(start, Some(parent)).await?,
                parent_version: None,
            }),
        }
    }

    async fn finish_run(&self, finish: RunFinish<'_>) -> Result<(), StoreError> {
        let output = NewMessages {
            first_seq: finish.lease.next_seq,
            messages: finish.new_messages,
            at_ms: finish.at_ms,
            copied_at_ms: &[],
        };
        let end = AppendEnd::Release {
            state: finish.state,
            interrupts: finish.interrupts,
            context: finish.context,
        };
        self.append_held(finish.lease, output, end)
            .await
            .map(|_| ())
    }

    async fn pulse(&self, lease: &Lease, renew_until_ms: Option<i64>) -> Result<Pulse, StoreError> {
        // The runner's epoch, not the thread's version: checkpoints move the version.
        let epoch = n(i64::try_from(lease.epoch).unwrap_or(i64::MAX));
        let Some(until) = renew_until_ms else {
            let item = self.meta_head(&lease.thread_id).await?;
            let item = item.ok_or(StoreError::LeaseLost)?;
            if !holds(&item, lease, &epoch) {
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
                "leaseRun = :run AND leaseEpoch = :epoch AND (attribute_not_exists(cancelRun) OR cancelRun <> :run)",
            )
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":run", s(lease.run_id.as_str()))
            .expression_attribute_values(":epoch", epoch.clone())
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
                // Refused while the lease still holds: only a cancel request refuses it then.
                UpdateItemError::ConditionalCheckFailedException(failed) => {
                    let old = failed.item().cloned().unwrap_or_default();
                    if holds(&old, lease, &epoch) {
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
            // A run between two runners (handed off, or stalled with its record) is stopped by
            // the runner that takes it over.
            .condition_expression(
                "#o = :owner AND leaseRun = :run AND (leaseUntil > :now OR liveRun = :run)",
            )
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
                UpdateItemError::ConditionalCheckFailedException(failed) => {
                    failed.item().cloned().unwrap_or_default()
                }
                other => return Err(unavailable(other)),
            },
        };
        if get_s(&old, "owner") != Some(owner.as_str()) || !is_present(&old) {
            return Err(StoreError::NotFound);
        }
        let created_at_ms = get_n(&old, "createdAt").ok_or(StoreError::NotFound)?;
        if self.has_run_log(thread_id, created_at_ms, run_id).await? {
            Ok(CancelState::Ended)
        } else {
            Err(StoreError::NotFound)
        }
    }
}

impl DynamoStore {
    /// `begin_run`, and with `parent` `begin_linked_run`: the child's META carries the link,
    /// and the same transaction checks the parent and records the child in its partition.
    pub(super) async fn begin(
        &self,
        start: RunStart<'_>,
        parent: Option<&ThreadLink>,
    ) -> Result<Lease, StoreError> {
        let now = now_ms();
        let state = start.state.map(Self::state_value).transpose()?;
        let (created_at_ms, first_seq) = match start.loaded {
            Some(thread) => (thread.created_at_ms, thread.message_count()),
            None => (now, 0),
        };
        let new = NewMessages {
            first_seq,
            messages: start.new_messages,
            at_ms: start.at_ms,
            copied_at_ms: start.copied_at_ms,
        };
        let mut chunks = self
            .chunks(start.thread_id, created_at_ms, new, start.run_id)?
            .into_iter();
        let first_puts = chunks.next().unwrap_or_default();
        let rest = new.from(first_puts.len());
        let write = LeaseWrite {
            start: &start,
            now,
            created_at_ms,
            msg_count: n(i64::try_from(rest.first_seq).unwrap_or(i64::MAX)),
            state,
        };
        let meta = match start.loaded {
            None => self.create_leased(&write, parent)?,
            Some(thread) => self.lease_loaded(&write, thread)?,
        };
        let on_meta = |old: Option<Item>| match old {
            Some(old) if get_s(&old, "owner") != Some(start.owner.as_str()) => StoreError::NotFound,
            _ => StoreError::Conflict,
        };
        match parent {
            None => self
                .transact(meta, first_puts)
                .await
                .map_err(|error| cancelled_error(error, on_meta))?,
            Some(parent) => {
                let link = self.link_to_parent(start.owner, start.thread_id, parent)?;
                self.transact_with(meta, link, first_puts).await.map_err(
                    |error| match cancellation(error) {
                        Ok(Cancelled::Meta(old)) => on_meta(old),
                        // The parent's check: gone, another's, or being deleted.
                        Ok(Cancelled::Other(reasons))
                            if reasons.contains("ConditionalCheckFailed") =>
                        {
                            StoreError::NotFound
                        }
                        Ok(Cancelled::Other(reasons)) => {
                            StoreError::unavailable(format!("transaction cancelled: {reasons}"))
                        }
                        Err(error) => error,
                    },
                )?;
            }
        }
        let mut lease = Lease {
            owner: start.owner.clone(),
            thread_id: start.thread_id.clone(),
            run_id: start.run_id.clone(),
            version: start.loaded.map_or(1, |thread| thread.version + 1),
            epoch: 1,
            created_at_ms,
            next_seq: first_seq + start.new_messages.len(),
            started_at_ms: now,
            input_messages: start.new_messages.len(),
            checkpointed: false,
        };
        if !rest.messages.is_empty() {
            // Inputs too large for one transaction: the rest follows under the lease, and the
            // lease stays held (only `finish_run` releases it).
            lease.version = self.append_held(&lease, rest, AppendEnd::KeepLease).await?;
        }
        Ok(lease)
    }

    /// A child's link, in the transaction that creates it: a check that its parent thread
    /// (the owner's, that incarnation) exists and is not being deleted, and the parent's record
    /// of the child in the parent's partition.
    fn link_to_parent(
        &self,
        owner: &Principal,
        child: &ThreadId,
        parent: &ThreadLink,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let check = ConditionCheck::builder()
            .table_name(&self.table)
            .key("pk", pk(&parent.thread_id))
            .key("sk", s(META))
            .condition_expression(
                "#o = :owner AND createdAt = :created AND attribute_not_exists(deletedAt)",
            )
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_values(":owner", s(owner.as_str()))
            .expression_attribute_values(":created", n(parent.created_at_ms))
            .build()
            .map_err(unavailable)?;
        Ok(vec![
            TransactWriteItem::builder().condition_check(check).build(),
            self.child_record(child, parent)?,
        ])
    }

    /// The parent's record of a child, in the parent's partition.
    pub(super) fn child_record(
        &self,
        child: &ThreadId,
        parent: &ThreadLink,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut record = Put::builder()
            .table_name(&self.table)
            .item("pk", pk(&parent.thread_id))
            .item("sk", child_sk(parent.created_at_ms, child))
            .item("child", s(child.as_str()))
            .item("run", s(parent.run_id.as_str()));
        if let Some(expires) = self.expires_at(parent.created_at_ms) {
            record = record.item("expiresAt", expires);
        }
        Ok(TransactWriteItem::builder()
            .put(record.build().map_err(unavailable)?)
            .build())
    }

    /// `begin_run`'s META write for a thread it creates.
    pub(super) fn create_leased(
        &self,
        write: &LeaseWrite<'_>,
        parent: Option<&ThreadLink>,
    ) -> Result<TransactWriteItem, StoreError> {
        let start = write.start;
        let mut put = Put::builder()
            .table_name(&self.table)
            .item("pk", pk(start.thread_id))
            .item("sk", s(META))
            .item("owner", s(start.owner.as_str()))
            .item("version", n(1))
            .item("createdAt", n(write.created_at_ms))
            .item("updatedAt", n(write.now))
            .item("leaseRun", s(start.run_id.as_str()))
            .item("leaseUntil", n(start.lease_expires_at_ms))
            .item(LEASE_EPOCH, n(1))
            .item(MSG_COUNT, write.msg_count.clone())
            // An expired thread not yet removed by TTL counts as absent.
            .condition_expression("attribute_not_exists(pk) OR expiresAt < :now_s")
            .expression_attribute_values(":now_s", n(write.now / 1000))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if let Some(state) = &write.state {
            put = put.item("state", state.clone());
        }
        if let Some(title) = start.title {
            put = put.item(TITLE, s(title));
        }
        if let Some(expires) = self.expires_at(write.created_at_ms) {
            put = put.item("expiresAt", expires);
        }
        if let Some(parent) = parent {
            put = put
                .item(PARENT_THREAD, s(parent.thread_id.as_str()))
                .item("parentCreatedAt", n(parent.created_at_ms))
                .item("parentRun", s(parent.run_id.as_str()))
                .item("parentCall", s(parent.tool_call_id.as_str()))
                .item("parentAgent", s(&parent.agent));
        }
        Ok(TransactWriteItem::builder()
            .put(put.build().map_err(unavailable)?)
            .build())
    }

    /// `begin_run`'s META write for the thread it loaded: only while that is still the thread's
    /// version and no other run holds a live lease on it.
    fn lease_loaded(
        &self,
        write: &LeaseWrite<'_>,
        thread: &StoredThread,
    ) -> Result<TransactWriteItem, StoreError> {
        let start = write.start;
        let mut expression = "SET #v = :next, leaseRun = :run, leaseUntil = :until, \
             updatedAt = :now, msgCount = :count, leaseEpoch = :first"
            .to_owned();
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
            .expression_attribute_values(":now", n(write.now))
            .expression_attribute_values(":count", write.msg_count.clone())
            .expression_attribute_values(":first", n(1))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if let Some(state) = &write.state {
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
        // A run that stalled and was never taken over is abandoned: its hand-off goes.
        expression.push_str(" REMOVE cancelRun, handoff, liveRun");
        let update = update
            .update_expression(expression)
            .build()
            .map_err(unavailable)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// Whether the thread's incarnation holds an event log of `run_id`: the run existed.
    async fn has_run_log(
        &self,
        thread_id: &ThreadId,
        created_at_ms: i64,
        run_id: &RunId,
    ) -> Result<bool, StoreError> {
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
        Ok(page.items.is_some_and(|items| !items.is_empty()))
    }
}

/// Whether the META item (as read, or as a refused write found it) still carries `lease`'s
/// runner.
fn holds(item: &Item, lease: &Lease, epoch: &AttributeValue) -> bool {
    get_s(item, "leaseRun") == Some(lease.run_id.as_str()) && item.get(LEASE_EPOCH) == Some(epoch)
}
