//! The two companions of a running run, each on its own task: the recorder, which writes the
//! run's events to the store in batches off the streaming path, and the heartbeat, which keeps
//! the lease alive and notices a cancel requested from anywhere.

use super::live::LiveRun;
use crate::protocol::events::RecordedEvent;
use crate::store::{EventLog, Lease, RunLeases, StoreError};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The most event bytes one store write carries; a larger backlog takes several writes.
const WRITE_BYTES: usize = 300_000;
/// Attempts at the last write of a run's log when the store fails.
const FINAL_ATTEMPTS: u32 = 3;
/// How long, and how often, the last write waits for the lease to be known held.
const LEASE_WAIT: Duration = Duration::from_millis(100);
const LEASE_WAITS: u32 = 100;

/// Writes the run's events every `interval` (what arrived since the last write), and the rest as
/// soon as the terminal event is in (or the log is sealed for a hand-off), or when a checkpoint
/// asks for it. It wakes on the clock, on the run's end and on those requests only, never per
/// event, so a fast stream costs the recorder nothing between writes. A failed write is retried
/// with the next batch; the live stream never waits for it. It writes only while the run's lease
/// is known to be held (`LiveRun::lease_valid`), so a runner cut off from the store for longer
/// than its lease never writes over the runner that took its run over.
pub(super) async fn record(
    store: Arc<dyn EventLog>,
    lease: Lease,
    run: Arc<LiveRun>,
    interval: Duration,
) {
    // Waits for the lease to be known held again, at the end (the heartbeat renews it).
    let mut waits = 0;
    loop {
        tokio::select! {
            biased;
            () = run.ended() => {}
            () = run.flush_requested() => {}
            () = tokio::time::sleep(interval) => {}
        }
        let closing = run.closed();
        if run.stop_reason() == Some(super::live::StopReason::LeaseLost) {
            tracing::warn!(run_id = %lease.run_id, "the run lost its lease: its events are no longer recorded");
            return;
        }
        if !run.lease_valid() {
            if closing {
                waits += 1;
                if waits > LEASE_WAITS {
                    tracing::error!(run_id = %lease.run_id, "the run's last events were not recorded: its lease was not renewed");
                    return;
                }
                tokio::time::sleep(LEASE_WAIT).await;
            }
            continue;
        }
        // A delegation may be storing some of these with its child's start: after it, they are
        // written, and what follows is this write's.
        let mut written = run.recording().await;
        let (backlog, _) = run.since(*written);
        let backlog: Vec<_> = backlog.into_iter().filter(|event| !event.notice).collect();
        let attempts = if closing { FINAL_ATTEMPTS } else { 1 };
        for batch in by_size(&backlog, WRITE_BYTES) {
            if !write(store.as_ref(), &lease, batch, attempts).await {
                break;
            }
            *written = batch.last().map_or(*written, |event| event.seq);
        }
        run.note_recorded(*written);
        drop(written);
        if closing {
            return;
        }
    }
}

/// `events` cut into runs of at most `limit` bytes of JSON (an event larger than that alone).
fn by_size(events: &[Arc<RecordedEvent>], limit: usize) -> Vec<&[Arc<RecordedEvent>]> {
    let mut batches = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (index, event) in events.iter().enumerate() {
        if index > start && bytes + event.json.len() > limit {
            batches.push(&events[start..index]);
            (start, bytes) = (index, 0);
        }
        bytes += event.json.len();
    }
    if start < events.len() {
        batches.push(&events[start..]);
    }
    batches
}

async fn write(
    store: &dyn EventLog,
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
/// the way through it; each renewal moves how long the run may count on its lease
/// ([`LiveRun::hold_lease_until`]). Runs until aborted; stops the run when the lease is lost.
pub(super) async fn heartbeat(
    store: Arc<dyn RunLeases>,
    lease: Lease,
    run: Arc<LiveRun>,
    lease_duration: Duration,
    poll: Duration,
) {
    let renew_every = (lease_duration / 3).max(Duration::from_millis(100));
    let mut next_renewal = Instant::now() + renew_every;
    loop {
        tokio::time::sleep(poll.min(renew_every)).await;
        let asked = Instant::now();
        let renew = (asked >= next_renewal).then(|| super::lease_expiry(lease_duration));
        match store.pulse(&lease, renew).await {
            Ok(pulse) => {
                if renew.is_some() {
                    next_renewal = Instant::now() + renew_every;
                    run.hold_lease_until(asked + safe_share(lease_duration));
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

/// How long after asking for a lease of `duration` its holder may count on it: two thirds of
/// it, leaving a third for the clocks of the machines that compare expiries to differ.
pub(super) fn safe_share(duration: Duration) -> Duration {
    duration * 2 / 3
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::events::Event;

    fn events(sizes: &[usize]) -> Vec<Arc<RecordedEvent>> {
        sizes
            .iter()
            .enumerate()
            .map(|(index, size)| {
                let event = Event::TextMessageContent {
                    message_id: crate::protocol::MessageId::generate(),
                    delta: "x".repeat(*size),
                };
                Arc::new(RecordedEvent::new(index as u64 + 1, event, 0))
            })
            .collect()
    }

    #[test]
    fn a_backlog_is_cut_into_writes_of_bounded_size() {
        let backlog = events(&[100, 100, 100, 1_000, 100]);
        let limit = backlog[0].json.len() * 2 + 10;
        let batches = by_size(&backlog, limit);
        let seqs: Vec<Vec<u64>> = batches
            .iter()
            .map(|batch| batch.iter().map(|event| event.seq).collect())
            .collect();
        // Two small events fit; the large one goes alone; nothing is lost or repeated.
        assert_eq!(seqs, [vec![1, 2], vec![3], vec![4], vec![5]]);
        assert!(by_size(&[], limit).is_empty());
    }
}
