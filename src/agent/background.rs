//! The two companions of a running run, each on its own task: the recorder, which writes the
//! run's events to the store in batches off the streaming path, and the heartbeat, which keeps
//! the lease alive and notices a cancel requested from anywhere.

use super::live::LiveRun;
use crate::protocol::events::RecordedEvent;
use crate::store::{Lease, StoreError, ThreadStore};
use bytes::Bytes;
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// A batch is written early once it holds this much, to stay within one store item.
const FLUSH_BYTES: usize = 300_000;
/// Attempts at the last write of a run's log when the store fails.
const FINAL_ATTEMPTS: u32 = 3;

/// Writes the run's events as they come, at most one write per `interval`, and the last batch
/// as soon as the terminal event is in. The first batch (`RUN_STARTED`) is written at once, so
/// the run is known to other processes from its start.
pub(super) async fn record(
    store: Arc<dyn ThreadStore>,
    lease: Lease,
    run: Arc<LiveRun>,
    interval: Duration,
) {
    let mut events = Box::pin(run.clone().follow(0));
    let mut pending: Vec<Arc<RecordedEvent>> = Vec::new();
    let mut pending_bytes = 0;
    let mut next_write = Instant::now();
    let mut ended = false;
    while !ended {
        tokio::select! {
            batch = events.next() => match batch {
                Some(batch) => {
                    pending_bytes += batch.iter().map(|event| event.json.len()).sum::<usize>();
                    ended = batch.last().is_some_and(|event| event.terminal);
                    pending.extend(batch);
                }
                None => ended = true,
            },
            () = tokio::time::sleep_until(next_write), if !pending.is_empty() => {}
        }
        let due = ended || pending_bytes >= FLUSH_BYTES || Instant::now() >= next_write;
        if due && !pending.is_empty() {
            let attempts = if ended { FINAL_ATTEMPTS } else { 1 };
            if write(store.as_ref(), &lease, &pending, attempts).await {
                pending.clear();
                pending_bytes = 0;
            }
            next_write = Instant::now() + interval;
        }
    }
}

async fn write(
    store: &dyn ThreadStore,
    lease: &Lease,
    batch: &[Arc<RecordedEvent>],
    attempts: u32,
) -> bool {
    let Some(first_seq) = batch.first().map(|event| event.seq) else {
        return true;
    };
    let events: Vec<Bytes> = batch.iter().map(|event| event.json.clone()).collect();
    for attempt in 1..=attempts {
        match store.append_events(lease, first_seq, &events).await {
            Ok(()) => return true,
            Err(error) => {
                // The live stream is unaffected; the batch is kept and retried with the next.
                tracing::warn!(%error, attempt, run_id = %lease.run_id, "recording run events failed");
                if attempt < attempts {
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
                }
            }
        }
    }
    false
}

/// Every `poll`, asks the store whether the run was cancelled, and renews the lease a third of
/// the way through it. Runs until aborted; stops the run when the lease is lost.
pub(super) async fn heartbeat(
    store: Arc<dyn ThreadStore>,
    lease: Lease,
    run: Arc<LiveRun>,
    lease_duration: Duration,
    poll: Duration,
) {
    let renew_every = (lease_duration / 3).max(Duration::from_millis(100));
    let mut next_renewal = Instant::now() + renew_every;
    loop {
        tokio::time::sleep(poll.min(renew_every)).await;
        let renew = (Instant::now() >= next_renewal).then(|| {
            chrono::Utc::now().timestamp_millis()
                + i64::try_from(lease_duration.as_millis()).unwrap_or(i64::MAX)
        });
        match store.pulse(&lease, renew).await {
            Ok(pulse) => {
                if renew.is_some() {
                    next_renewal = Instant::now() + renew_every;
                }
                if pulse.cancel_requested {
                    tracing::info!(run_id = %lease.run_id, "cancel requested");
                    run.cancel();
                }
            }
            Err(StoreError::LeaseLost) => {
                tracing::warn!(run_id = %lease.run_id, "the run lost its lease");
                run.lose_lease();
                return;
            }
            // Transient: the lease outlives a few failed pulses.
            Err(error) => tracing::warn!(%error, run_id = %lease.run_id, "heartbeat failed"),
        }
    }
}
