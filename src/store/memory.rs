//! The in-memory store: local runs and tests. Same semantics as the DynamoDB store, lost on
//! restart.

use super::{
    CancelState, EventCursor, EventPage, HistoryPage, Lease, Principal, Pulse, RunRef, RunStart,
    StoreError, StoredThread, ThreadActivity, ThreadStore,
};
use crate::protocol::events::RecordedEvent;
use crate::protocol::{Message, RunId, ThreadId};
use async_trait::async_trait;
use bytes::Bytes;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

struct Record {
    owner: Principal,
    messages: Vec<Message>,
    state: Option<Value>,
    interrupts: Option<Value>,
    version: u64,
    created_at_ms: i64,
    lease: Option<HeldLease>,
    /// Event logs by run id: each attempt's start time and its events in order.
    runs: HashMap<RunId, Vec<(i64, Vec<Bytes>)>>,
}

struct HeldLease {
    run_id: RunId,
    until_ms: i64,
    cancel_requested: bool,
}

impl Record {
    fn live_lease(&self) -> Option<&HeldLease> {
        self.lease
            .as_ref()
            .filter(|lease| lease.until_ms > now_ms())
    }
}

pub struct MemoryStore {
    threads: Mutex<HashMap<ThreadId, Record>>,
    /// Run event logs are dropped this long after their run started (DynamoDB's TTL, here), so
    /// a long-lived local server does not keep every run's events.
    events_ttl_ms: i64,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self {
            threads: Mutex::new(HashMap::new()),
            events_ttl_ms: 24 * 3_600_000,
        }
    }
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// `RUN_EVENTS_TTL_HOURS`.
    pub fn with_events_ttl_hours(self, hours: u32) -> Self {
        self.with_events_ttl(std::time::Duration::from_secs(u64::from(hours) * 3600))
    }

    fn with_events_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.events_ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        self
    }

    fn threads(&self) -> MutexGuard<'_, HashMap<ThreadId, Record>> {
        self.threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Whether `lease` still holds `record`.
fn holds(record: &Record, lease: &Lease) -> bool {
    record.version == lease.version
        && matches!(&record.lease, Some(held) if held.run_id == lease.run_id)
}

/// The thread `lease` is held on, while it is held.
fn leased<'a>(
    threads: &'a mut HashMap<ThreadId, Record>,
    lease: &Lease,
) -> Result<&'a mut Record, StoreError> {
    threads
        .get_mut(&lease.thread_id)
        .filter(|record| holds(record, lease))
        .ok_or(StoreError::LeaseLost)
}

#[async_trait]
impl ThreadStore for MemoryStore {
    async fn load(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<StoredThread>, StoreError> {
        Ok(self
            .threads()
            .get(thread_id)
            .filter(|record| &record.owner == owner)
            .map(|record| StoredThread {
                messages: record.messages.clone(),
                state: record.state.clone(),
                version: record.version,
                created_at_ms: record.created_at_ms,
                active_run: record.live_lease().map(|lease| lease.run_id.clone()),
                interrupts: record.interrupts.clone(),
            }))
    }

    async fn begin_run(&self, start: RunStart<'_>) -> Result<Lease, StoreError> {
        super::check_sizes(start.new_messages, start.state)?;
        let now = now_ms();
        let mut threads = self.threads();
        let expected_version = start.loaded.map(|thread| thread.version);
        let held = HeldLease {
            run_id: start.run_id.clone(),
            until_ms: start.lease_expires_at_ms,
            cancel_requested: false,
        };
        let record = match (threads.get_mut(start.thread_id), expected_version) {
            (None, None) => threads.entry(start.thread_id.clone()).or_insert(Record {
                owner: start.owner.clone(),
                messages: start.new_messages.to_vec(),
                state: start.state.cloned(),
                interrupts: None,
                version: 1,
                created_at_ms: now,
                lease: Some(held),
                runs: HashMap::new(),
            }),
            (Some(record), _) if &record.owner != start.owner => return Err(StoreError::NotFound),
            (Some(record), Some(expected)) if record.version == expected => {
                if record.live_lease().is_some() {
                    return Err(StoreError::Conflict);
                }
                record.messages.extend_from_slice(start.new_messages);
                if let Some(state) = start.state {
                    record.state = Some(state.clone());
                }
                record.version += 1;
                record.lease = Some(held);
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
            created_at_ms: record.created_at_ms,
            next_seq: record.messages.len(),
            started_at_ms: now,
        })
    }

    async fn finish_run(
        &self,
        lease: &Lease,
        new_messages: &[Message],
        state: Option<&Value>,
        interrupts: Option<&Value>,
    ) -> Result<(), StoreError> {
        super::check_sizes(new_messages, state)?;
        let mut threads = self.threads();
        let record = leased(&mut threads, lease)?;
        record.messages.extend_from_slice(new_messages);
        if let Some(state) = state {
            record.state = Some(state.clone());
        }
        record.interrupts = interrupts.cloned();
        record.version += 1;
        record.lease = None;
        Ok(())
    }

    async fn history(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, StoreError> {
        let threads = self.threads();
        let record = threads
            .get(thread_id)
            .filter(|record| &record.owner == owner)
            .ok_or(StoreError::NotFound)?;
        let start = match after {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| StoreError::BadCursor)?,
        };
        let start = start.min(record.messages.len());
        let end = start.saturating_add(limit).min(record.messages.len());
        let messages = record.messages.get(start..end).unwrap_or_default().to_vec();
        Ok(HistoryPage {
            messages,
            state: record.state.clone(),
            next: (end < record.messages.len()).then(|| end.to_string()),
            active_run: record.live_lease().map(|lease| lease.run_id.clone()),
        })
    }

    async fn activity(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<ThreadActivity, StoreError> {
        let threads = self.threads();
        Ok(
            match threads
                .get(thread_id)
                .filter(|record| &record.owner == owner)
            {
                None => ThreadActivity::Missing,
                Some(record) => match record.live_lease() {
                    Some(lease) => ThreadActivity::Running {
                        created_at_ms: record.created_at_ms,
                        run_id: lease.run_id.clone(),
                    },
                    None => ThreadActivity::Idle {
                        created_at_ms: record.created_at_ms,
                    },
                },
            },
        )
    }

    async fn pulse(&self, lease: &Lease, renew_until_ms: Option<i64>) -> Result<Pulse, StoreError> {
        let mut threads = self.threads();
        let record = leased(&mut threads, lease)?;
        let held = record.lease.as_mut().ok_or(StoreError::LeaseLost)?;
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
        let record = threads
            .get_mut(thread_id)
            .filter(|record| &record.owner == owner)
            .ok_or(StoreError::NotFound)?;
        let now = now_ms();
        if let Some(held) = record
            .lease
            .as_mut()
            .filter(|held| &held.run_id == run_id && held.until_ms > now)
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

    async fn append_events(
        &self,
        lease: &Lease,
        first_seq: u64,
        events: &[Bytes],
    ) -> Result<(), StoreError> {
        let mut threads = self.threads();
        if first_seq == 1 {
            // A run's first write: once per run, drop every thread's expired logs.
            let expired_before = now_ms().saturating_sub(self.events_ttl_ms);
            for record in threads.values_mut() {
                record.runs.retain(|_, attempts| {
                    attempts.retain(|(started, _)| *started >= expired_before);
                    !attempts.is_empty()
                });
            }
        }
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

    fn describe(&self) -> String {
        "in-memory thread store (lost on restart; set THREADS_TABLE for DynamoDB)".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
