//! The in-memory store's run event logs, kept per thread and run attempt, dropped after the
//! store's event retention as DynamoDB's TTL would.

use super::{MemoryStore, Record, now_ms};
use crate::protocol::ThreadId;
use crate::protocol::events::RecordedEvent;
use crate::store::{EventCursor, EventLog, EventPage, Lease, RunRef, StoreError};
use async_trait::async_trait;
use bytes::Bytes;
use std::collections::HashMap;

#[async_trait]
impl EventLog for MemoryStore {
    async fn append_events(
        &self,
        lease: &Lease,
        first_seq: u64,
        events: &[Bytes],
    ) -> Result<(), StoreError> {
        let mut threads = self.threads();
        if first_seq == 1 {
            // A run's first write: once per run, drop every thread's expired logs.
            drop_expired_logs(&mut threads, self.events_ttl_ms);
        }
        append(&mut threads, lease, first_seq, events)
    }

    async fn read_events(
        &self,
        run: &RunRef,
        from: Option<EventCursor>,
    ) -> Result<EventPage, StoreError> {
        let threads = self.threads();
        let Some(attempts) = threads
            .get(&run.thread_id)
            .filter(|record| record.created_at_ms == run.created_at_ms)
            .and_then(|record| record.runs.get(&run.run_id))
        else {
            return Ok(EventPage::default());
        };
        let attempt = match from {
            Some(cursor) => attempts
                .iter()
                .find(|(started, _)| *started == cursor.started_at_ms),
            None => attempts.last(),
        };
        let Some((started_at_ms, log)) = attempt else {
            return Ok(EventPage::default());
        };
        let next_seq = from.map_or(1, |cursor| cursor.next_seq.max(1));
        let skip = usize::try_from(next_seq - 1).unwrap_or(usize::MAX);
        let events: Vec<RecordedEvent> = log
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(index, json)| RecordedEvent::stored(index as u64 + 1, json.clone()))
            .collect();
        Ok(EventPage {
            next: Some(EventCursor {
                started_at_ms: *started_at_ms,
                next_seq: log.len() as u64 + 1,
            }),
            events,
        })
    }
}

/// `append_events` on the locked threads.
pub(super) fn append(
    threads: &mut HashMap<ThreadId, Record>,
    lease: &Lease,
    first_seq: u64,
    events: &[Bytes],
) -> Result<(), StoreError> {
    let Some(record) = threads
        .get_mut(&lease.thread_id)
        .filter(|record| record.created_at_ms == lease.created_at_ms)
    else {
        return Err(StoreError::NotFound);
    };
    let attempts = record.runs.entry(lease.run_id.clone()).or_default();
    if attempts.last().map(|(started, _)| *started) != Some(lease.started_at_ms) {
        attempts.push((lease.started_at_ms, Vec::new()));
    }
    if let Some((_, log)) = attempts.last_mut() {
        // Sequence numbers are contiguous; a repeated batch (a retried write) is ignored.
        let have = log.len() as u64;
        let skip = have.saturating_sub(first_seq.saturating_sub(1));
        let skip = usize::try_from(skip).unwrap_or(usize::MAX);
        log.extend(events.iter().skip(skip).cloned());
    }
    Ok(())
}

/// Drops the run attempts that started longer ago than `events_ttl_ms`, in every thread.
pub(super) fn drop_expired_logs(threads: &mut HashMap<ThreadId, Record>, events_ttl_ms: i64) {
    let expired_before = now_ms().saturating_sub(events_ttl_ms);
    for record in threads.values_mut() {
        record.runs.retain(|_, attempts| {
            attempts.retain(|(started, _)| *started >= expired_before);
            !attempts.is_empty()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Principal;
    use crate::protocol::RunId;
    use crate::store::{RunLeases, RunStart};
    use std::time::Duration;

    async fn run_with_log(store: &MemoryStore, owner: &Principal, run: &str) -> RunRef {
        let thread = ThreadId::new_uuid();
        let lease = store
            .begin_run(RunStart {
                owner,
                thread_id: &thread,
                run_id: &RunId::parse(run, 128).unwrap(),
                loaded: None,
                lease_expires_at_ms: now_ms() + 60_000,
                new_messages: &[],
                state: None,
                title: None,
                at_ms: now_ms(),
                copied_at_ms: &[],
            })
            .await
            .unwrap();
        let events = [Bytes::from_static(br#"{"type":"RUN_STARTED"}"#)];
        store.append_events(&lease, 1, &events).await.unwrap();
        lease.run_ref()
    }

    #[tokio::test]
    async fn run_event_logs_expire_after_their_ttl() {
        let store = MemoryStore::new().with_events_ttl(Duration::from_millis(50));
        let owner = Principal::new("alice");
        let old = run_with_log(&store, &owner, "old").await;
        assert_eq!(store.read_events(&old, None).await.unwrap().events.len(), 1);
        tokio::time::sleep(Duration::from_millis(80)).await;
        // The next run's first write drops the logs older than the TTL, and keeps its own.
        let new = run_with_log(&store, &owner, "new").await;
        assert!(
            store
                .read_events(&old, None)
                .await
                .unwrap()
                .events
                .is_empty()
        );
        assert_eq!(store.read_events(&new, None).await.unwrap().events.len(), 1);
    }
}
