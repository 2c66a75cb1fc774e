//! The in-memory store's run checkpoints: a run's progress appended under its lease with its
//! record, and one claim at a time taking a run over.

use super::{LiveRecord, MemoryStore, Record, leased, now_ms};
use crate::protocol::ThreadId;
use crate::store::{
    Claim, ClaimedRun, Lease, RunCheckpoint, RunCheckpoints, RunClaim, StoreError, check_sizes,
};
use async_trait::async_trait;
use std::collections::HashMap;

#[async_trait]
impl RunCheckpoints for MemoryStore {
    async fn checkpoint_run(&self, checkpoint: RunCheckpoint<'_>) -> Result<u64, StoreError> {
        check_sizes(checkpoint.new_messages, checkpoint.state)?;
        checkpoint_locked(&mut self.threads(), checkpoint)
    }

    async fn claim_run(&self, claim: RunClaim<'_>) -> Result<Claim, StoreError> {
        let mut threads = self.threads();
        let Some(record) = threads
            .get_mut(claim.thread_id)
            .filter(|record| &record.owner == claim.owner)
        else {
            return Ok(Claim::Gone);
        };
        let now = now_ms();
        let resumable = record
            .live
            .as_ref()
            .is_some_and(|live| &live.run_id == claim.run_id);
        let Some(held) = record
            .lease
            .as_mut()
            .filter(|held| &held.run_id == claim.run_id && resumable)
        else {
            return Ok(Claim::Gone);
        };
        let handed_to_us = held.handed_off && claim.handed_off_by == Some(held.epoch);
        let expired = held.until_ms <= now;
        if !handed_to_us && !expired {
            return Ok(Claim::Held {
                epoch: held.epoch,
                until_ms: held.until_ms,
            });
        }
        held.epoch += 1;
        held.until_ms = claim.lease_expires_at_ms;
        held.handed_off = false;
        let (epoch, cancel_requested) = (held.epoch, held.cancel_requested);
        record.version += 1;
        Ok(Claim::Taken(Box::new(claimed(
            record,
            epoch,
            cancel_requested,
            !handed_to_us,
            &claim,
        ))))
    }
}

/// `checkpoint_run` on the locked threads (the sizes checked).
pub(super) fn checkpoint_locked(
    threads: &mut HashMap<ThreadId, Record>,
    checkpoint: RunCheckpoint<'_>,
) -> Result<u64, StoreError> {
    let RunCheckpoint {
        lease,
        new_messages,
        state,
        interrupts,
        context,
        record: run_record,
        at_ms,
        lease_until_ms,
        hand_off,
    } = checkpoint;
    let record = leased(threads, lease)?;
    record.apply_progress(new_messages, state, interrupts, context, at_ms);
    if let Some(held) = record.lease.as_mut() {
        held.until_ms = lease_until_ms;
        held.handed_off = hand_off;
    }
    record.live = Some(LiveRecord {
        run_id: lease.run_id.clone(),
        record: run_record.to_owned(),
        started_at_ms: lease.started_at_ms,
        stored_messages: lease.input_messages + new_messages.len(),
    });
    record.version += 1;
    record.updated_at_ms = now_ms();
    Ok(record.version)
}

/// The run as its new runner takes it: the lease of `epoch`, and the thread from its latest
/// compaction checkpoint on (what `load_recent` reads).
fn claimed(
    record: &Record,
    epoch: u64,
    cancel_requested: bool,
    recovered: bool,
    claim: &RunClaim<'_>,
) -> ClaimedRun {
    let first_seq = record
        .checkpoint
        .as_ref()
        .map_or(0, |checkpoint| checkpoint.covers);
    let (run_record, started_at_ms, stored) = record.live.as_ref().map_or_else(
        || (String::new(), 0, 0),
        |live| {
            (
                live.record.clone(),
                live.started_at_ms,
                live.stored_messages,
            )
        },
    );
    ClaimedRun {
        lease: Lease {
            owner: claim.owner.clone(),
            thread_id: claim.thread_id.clone(),
            run_id: claim.run_id.clone(),
            version: record.version,
            epoch,
            created_at_ms: record.created_at_ms,
            next_seq: record.messages.len(),
            started_at_ms,
            input_messages: stored,
            checkpointed: true,
        },
        thread: record.stored_from(first_seq),
        record: run_record,
        cancel_requested,
        recovered,
    }
}
