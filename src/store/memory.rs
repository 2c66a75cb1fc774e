//! The in-memory store: local runs and tests. Same semantics as the DynamoDB store, lost on
//! restart.

use super::{HistoryPage, Lease, Principal, RunStart, StoreError, StoredThread, ThreadStore};
use crate::protocol::{Message, RunId, ThreadId};
use async_trait::async_trait;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

struct Record {
    owner: Principal,
    messages: Vec<Message>,
    state: Option<Value>,
    version: u64,
    created_at_ms: i64,
    lease: Option<(RunId, i64)>,
}

#[derive(Default)]
pub struct MemoryStore {
    threads: Mutex<HashMap<ThreadId, Record>>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
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
            }))
    }

    async fn begin_run(&self, start: RunStart<'_>) -> Result<Lease, StoreError> {
        super::check_sizes(start.new_messages, start.state)?;
        let mut threads = self.threads();
        let expected_version = start.loaded.map(|thread| thread.version);
        let record = match (threads.get_mut(start.thread_id), expected_version) {
            (None, None) => threads.entry(start.thread_id.clone()).or_insert(Record {
                owner: start.owner.clone(),
                messages: start.new_messages.to_vec(),
                state: start.state.cloned(),
                version: 1,
                created_at_ms: now_ms(),
                lease: Some((start.run_id.clone(), start.lease_expires_at_ms)),
            }),
            (Some(record), _) if &record.owner != start.owner => return Err(StoreError::NotFound),
            (Some(record), Some(expected)) if record.version == expected => {
                let leased = matches!(&record.lease, Some((_, expires)) if *expires > now_ms());
                if leased {
                    return Err(StoreError::Conflict);
                }
                record.messages.extend_from_slice(start.new_messages);
                if let Some(state) = start.state {
                    record.state = Some(state.clone());
                }
                record.version += 1;
                record.lease = Some((start.run_id.clone(), start.lease_expires_at_ms));
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
        })
    }

    async fn finish_run(
        &self,
        lease: &Lease,
        new_messages: &[Message],
        state: Option<&Value>,
    ) -> Result<(), StoreError> {
        super::check_sizes(new_messages, state)?;
        let mut threads = self.threads();
        let record = threads
            .get_mut(&lease.thread_id)
            .ok_or(StoreError::LeaseLost)?;
        let holds = record.version == lease.version
            && matches!(&record.lease, Some((run, _)) if run == &lease.run_id);
        if !holds {
            return Err(StoreError::LeaseLost);
        }
        record.messages.extend_from_slice(new_messages);
        if let Some(state) = state {
            record.state = Some(state.clone());
        }
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
            Some(cursor) => cursor.parse::<usize>().map_err(|_| StoreError::NotFound)?,
        };
        let end = (start + limit).min(record.messages.len());
        let messages = record.messages.get(start..end).unwrap_or_default().to_vec();
        Ok(HistoryPage {
            messages,
            state: record.state.clone(),
            next: (end < record.messages.len()).then(|| end.to_string()),
        })
    }

    fn describe(&self) -> String {
        "in-memory thread store (lost on restart; set THREADS_TABLE for DynamoDB)".to_owned()
    }
}
