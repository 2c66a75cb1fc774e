//! The in-memory store's run leases: taking a thread for a run with its input, letting it go
//! with the output, renewing the lease, and cancel requests.

use super::{HeldLease, MemoryStore, Record, leased, now_ms, owned_mut};
use crate::auth::Principal;
use crate::protocol::{RunId, ThreadId};
use crate::store::{
    CancelState, Lease, LinkedRun, ParentStep, Pulse, RunEnd, RunFinish, RunLeases, RunStart,
    StoreError, ThreadLink, check_sizes, message_time,
};
use async_trait::async_trait;
use std::collections::HashMap;

#[async_trait]
impl RunLeases for MemoryStore {
    async fn begin_run(&self, start: RunStart<'_>) -> Result<Lease, StoreError> {
        check_sizes(start.new_messages, start.state)?;
        begin(&mut self.threads(), &start)
    }

    async fn begin_linked_run(
        &self,
        start: RunStart<'_>,
        parent: &ThreadLink,
        step: Option<ParentStep<'_>>,
    ) -> Result<LinkedRun, StoreError> {
        check_sizes(start.new_messages, start.state)?;
        if let Some(step) = &step {
            check_sizes(step.new_messages, step.state)?;
        }
        // One lock for the whole step: every check before any change, so all of it is stored
        // or none.
        let mut threads = self.threads();
        let linked = threads.get(&parent.thread_id).is_some_and(|record| {
            &record.owner == start.owner && record.created_at_ms == parent.created_at_ms
        });
        if !linked || start.loaded.is_some() {
            return Err(StoreError::NotFound);
        }
        match threads.get(start.thread_id) {
            Some(record) if &record.owner != start.owner => return Err(StoreError::NotFound),
            Some(_) => return Err(StoreError::Conflict),
            None => {}
        }
        let parent_version = match step {
            Some(step) => {
                leased(&mut threads, step.lease)?;
                if step.events_from == 1 {
                    super::events::drop_expired_logs(&mut threads, self.events_ttl_ms);
                }
                super::events::append(&mut threads, step.lease, step.events_from, step.events)?;
                Some(super::checkpoints::checkpoint_locked(
                    &mut threads,
                    step.into(),
                )?)
            }
            None => None,
        };
        let lease = begin(&mut threads, &start)?;
        if let Some(parent_record) = threads.get_mut(&parent.thread_id) {
            parent_record.children.push(lease.thread_id.clone());
        }
        if let Some(child) = threads.get_mut(&lease.thread_id) {
            child.parent = Some(parent.clone());
        }
        Ok(LinkedRun {
            lease,
            parent_version,
        })
    }

    async fn finish_run(&self, finish: RunFinish<'_>) -> Result<(), StoreError> {
        let RunFinish {
            lease,
            new_messages,
            state,
            interrupts,
            at_ms,
            context,
        } = finish;
        check_sizes(new_messages, state)?;
        let mut threads = self.threads();
        let record = leased(&mut threads, lease)?;
        record.apply_progress(new_messages, state, interrupts, context, at_ms);
        record.version += 1;
        record.lease = None;
        record.live = None;
        record.updated_at_ms = now_ms();
        let end = RunEnd {
            thread_id: lease.thread_id.clone(),
            created_at_ms: record.created_at_ms,
            message_count: record.messages.len(),
        };
        drop(threads);
        if lease.input_messages + new_messages.len() > 0 {
            self.accounts()
                .run_ends
                .insert((lease.owner.clone(), lease.run_id.clone()), end);
        }
        Ok(())
    }

    async fn pulse(&self, lease: &Lease, renew_until_ms: Option<i64>) -> Result<Pulse, StoreError> {
        let mut threads = self.threads();
        // The runner, not the thread's version: checkpoints move the version under the lease.
        let held = threads
            .get_mut(&lease.thread_id)
            .and_then(|record| record.lease.as_mut())
            .filter(|held| held.run_id == lease.run_id && held.epoch == lease.epoch)
            .ok_or(StoreError::LeaseLost)?;
        if let Some(until) = renew_until_ms {
            held.until_ms = held.until_ms.max(until);
        }
        Ok(Pulse {
            cancel_requested: held.cancel_requested,
        })
    }

    async fn request_cancel(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        run_id: &RunId,
    ) -> Result<CancelState, StoreError> {
        let mut threads = self.threads();
        let record = owned_mut(&mut threads, owner, thread_id)?;
        let now = now_ms();
        let resumable = record
            .live
            .as_ref()
            .is_some_and(|live| &live.run_id == run_id);
        if let Some(held) = record
            .lease
            .as_mut()
            .filter(|held| &held.run_id == run_id && (held.until_ms > now || resumable))
        {
            held.cancel_requested = true;
            return Ok(CancelState::Requested);
        }
        if record.runs.contains_key(run_id) {
            Ok(CancelState::Ended)
        } else {
            Err(StoreError::NotFound)
        }
    }
}

/// `begin_run` on the locked threads.
fn begin(
    threads: &mut HashMap<ThreadId, Record>,
    start: &RunStart<'_>,
) -> Result<Lease, StoreError> {
    let now = now_ms();
    let held = HeldLease {
        run_id: start.run_id.clone(),
        until_ms: start.lease_expires_at_ms,
        cancel_requested: false,
        epoch: 1,
        handed_off: false,
    };
    let times = (0..start.new_messages.len())
        .map(|index| message_time(start.copied_at_ms, index, start.at_ms));
    let expected_version = start.loaded.map(|thread| thread.version);
    let record = match (threads.get_mut(start.thread_id), expected_version) {
        (None, None) => threads.entry(start.thread_id.clone()).or_insert(Record {
            messages: start.new_messages.to_vec(),
            message_at_ms: times.collect(),
            state: start.state.cloned(),
            title: start.title.map(str::to_owned),
            lease: Some(held),
            ..Record::new(start.owner.clone(), now)
        }),
        (Some(record), _) if &record.owner != start.owner => return Err(StoreError::NotFound),
        (Some(record), Some(expected)) if record.version == expected => {
            if record.live_lease().is_some() {
                return Err(StoreError::Conflict);
            }
            record.messages.extend_from_slice(start.new_messages);
            record.message_at_ms.extend(times);
            if let Some(state) = start.state {
                record.state = Some(state.clone());
            }
            record.version += 1;
            record.lease = Some(held);
            // A run that stalled and was never taken over is abandoned with its record.
            record.live = None;
            record.updated_at_ms = now;
            if record.title.is_none() {
                record.title = start.title.map(str::to_owned);
            }
            record
        }
        // Created or changed by someone else since our load.
        _ => return Err(StoreError::Conflict),
    };
    Ok(Lease {
        owner: start.owner.clone(),
        thread_id: start.thread_id.clone(),
        run_id: start.run_id.clone(),
        version: record.version,
        epoch: 1,
        created_at_ms: record.created_at_ms,
        next_seq: record.messages.len(),
        started_at_ms: now,
        input_messages: start.new_messages.len(),
        checkpointed: false,
    })
}
