//! The DynamoDB store's run checkpoints: a step's messages and the run's record (the `LIVE#`
//! item) written in the transactions that append under the lease, and a run taken over by one
//! conditional update of META that moves the lease's epoch on, then the reads of `load_recent`.

use super::DynamoStore;
use super::items::*;
use super::reads::SortKeys;
use super::writes::{AppendEnd, NewMessages};
use crate::store::{
    Checkpoint, Claim, ClaimedRun, Lease, RunCheckpoint, RunCheckpoints, RunClaim, StoreError,
    StoredThread,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    ReturnConsumedCapacity, ReturnValue, ReturnValuesOnConditionCheckFailure,
};

#[async_trait]
impl RunCheckpoints for DynamoStore {
    async fn checkpoint_run(&self, checkpoint: RunCheckpoint<'_>) -> Result<u64, StoreError> {
        let lease = checkpoint.lease;
        let new = NewMessages {
            first_seq: lease.next_seq,
            messages: checkpoint.new_messages,
            at_ms: checkpoint.at_ms,
            copied_at_ms: &[],
        };
        // The record counts the messages stored with this write too.
        let mut after = lease.clone();
        after.input_messages += checkpoint.new_messages.len();
        let end = AppendEnd::Checkpoint {
            state: checkpoint.state,
            interrupts: checkpoint.interrupts,
            context: checkpoint.context,
            record: checkpoint.record,
            lease_until_ms: checkpoint.lease_until_ms,
            hand_off: checkpoint.hand_off,
        };
        self.append_held(&after, new, end).await
    }

    async fn claim_run(&self, claim: RunClaim<'_>) -> Result<Claim, StoreError> {
        let now = now_ms();
        let handed_off_by = claim
            .handed_off_by
            .map_or(-1, |epoch| i64::try_from(epoch).unwrap_or(i64::MAX));
        self.count_write();
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.meta_key(claim.thread_id).into_iter().collect()))
            .update_expression(
                "SET leaseEpoch = leaseEpoch + :one, leaseUntil = :until, #v = #v + :one \
                 REMOVE handoff",
            )
            .condition_expression(
                "#o = :owner AND leaseRun = :run AND liveRun = :run \
                 AND attribute_not_exists(deletedAt) \
                 AND (handoff = :from OR leaseUntil < :now)",
            )
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":owner", s(claim.owner.as_str()))
            .expression_attribute_values(":run", s(claim.run_id.as_str()))
            .expression_attribute_values(":from", n(handed_off_by))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":until", n(claim.lease_expires_at_ms))
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
                    UpdateItemError::ConditionalCheckFailedException(failed) => {
                        Ok(refused(failed.item(), &claim, now))
                    }
                    other => Err(unavailable(other)),
                };
            }
        };
        let recovered = get_n(&meta, LEASE_EPOCH).map(|epoch| epoch - 1) != Some(handed_off_by);
        let claimed = self.taken(&claim, &meta, recovered).await?;
        Ok(Claim::Taken(Box::new(claimed)))
    }
}

/// Why a claim was refused, from META as it was: a live runner holds the run, or there is no
/// run to take.
fn refused(old: Option<&Item>, claim: &RunClaim<'_>, now: i64) -> Claim {
    let Some(old) = old else {
        return Claim::Gone;
    };
    let run = claim.run_id.as_str();
    let held = get_s(old, OWNER) == Some(claim.owner.as_str())
        && !old.contains_key(DELETED_AT)
        && get_s(old, "leaseRun") == Some(run)
        && get_s(old, LIVE_RUN) == Some(run);
    match (held, get_n(old, "leaseUntil"), get_n(old, LEASE_EPOCH)) {
        (true, Some(until_ms), Some(epoch)) if until_ms >= now => Claim::Held {
            epoch: u64::try_from(epoch).unwrap_or(0),
            until_ms,
        },
        _ => Claim::Gone,
    }
}

impl DynamoStore {
    /// The run as its new runner takes it: META (as the claim left it), the checkpoint and the
    /// run's record in one Query, then the messages from the checkpoint on (`load_recent`).
    async fn taken(
        &self,
        claim: &RunClaim<'_>,
        meta_item: &Item,
        recovered: bool,
    ) -> Result<ClaimedRun, StoreError> {
        let meta = Meta::parse(meta_item)?;
        let head = self
            .query_range(
                claim.thread_id,
                SortKeys::Between(CHECKPOINT_PREFIX.to_owned(), LIVE_PREFIX.to_owned() + "~"),
                None,
            )
            .await?;
        let item_at = |sk| head.iter().find(|item| item.get("sk") == Some(&sk));
        let checkpoint = item_at(checkpoint_sk(meta.created_at_ms))
            .map(parse_checkpoint)
            .transpose()?;
        let live = item_at(live_sk(meta.created_at_ms))
            .filter(|live| get_s(live, "run") == Some(claim.run_id.as_str()))
            .ok_or_else(|| StoreError::Corrupt("a run's record is missing".to_owned()))?;
        let covers = checkpoint
            .as_ref()
            .map_or(0, |checkpoint| checkpoint.covers);
        let messages = self
            .query_range(
                claim.thread_id,
                SortKeys::Between(
                    sk_text(&message_sk(
                        meta.created_at_ms,
                        usize::try_from(covers).unwrap_or(usize::MAX),
                    )),
                    format!("{}~", message_prefix(meta.created_at_ms)),
                ),
                None,
            )
            .await?;
        let lease = claimed_lease(claim, meta_item, &meta, live, covers, messages.len())?;
        Ok(ClaimedRun {
            record: get_s(live, "record").unwrap_or_default().to_owned(),
            cancel_requested: get_s(meta_item, "cancelRun") == Some(claim.run_id.as_str()),
            thread: thread_of(meta, &messages, covers, checkpoint)?,
            lease,
            recovered,
        })
    }
}

/// The new runner's lease, from META as the claim left it and the run's record.
fn claimed_lease(
    claim: &RunClaim<'_>,
    meta_item: &Item,
    meta: &Meta,
    live: &Item,
    covers: u64,
    messages: usize,
) -> Result<Lease, StoreError> {
    let corrupt = || StoreError::Corrupt("a run's record is missing fields".to_owned());
    let count = |item: &Item, name: &str| {
        get_n(item, name)
            .and_then(|value| u64::try_from(value).ok())
            .ok_or_else(corrupt)
    };
    Ok(Lease {
        owner: claim.owner.clone(),
        thread_id: claim.thread_id.clone(),
        run_id: claim.run_id.clone(),
        version: meta.version,
        epoch: count(meta_item, LEASE_EPOCH)?,
        created_at_ms: meta.created_at_ms,
        next_seq: usize::try_from(covers).unwrap_or(usize::MAX) + messages,
        started_at_ms: get_n(live, "started").ok_or_else(corrupt)?,
        input_messages: usize::try_from(count(live, "stored")?).unwrap_or(usize::MAX),
        checkpointed: true,
    })
}

/// The thread `meta` heads, from message `first_seq` on (its message items).
fn thread_of(
    meta: Meta,
    items: &[Item],
    first_seq: u64,
    checkpoint: Option<Checkpoint>,
) -> Result<StoredThread, StoreError> {
    let messages = items
        .iter()
        .map(parse_message)
        .collect::<Result<Vec<_>, _>>()?;
    let message_at_ms = items
        .iter()
        .map(|item| get_n(item, MESSAGE_AT).unwrap_or(meta.created_at_ms))
        .collect();
    Ok(StoredThread {
        messages,
        message_at_ms,
        state: meta.state,
        version: meta.version,
        created_at_ms: meta.created_at_ms,
        active_run: None,
        interrupts: meta.interrupts,
        title: meta.title,
        first_seq,
        checkpoint,
        context: meta.context,
    })
}

fn sk_text(sk: &aws_sdk_dynamodb::types::AttributeValue) -> String {
    sk.as_s().cloned().unwrap_or_default()
}
