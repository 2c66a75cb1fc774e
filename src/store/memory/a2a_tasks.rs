//! The in-memory store's A2A tasks: kept per owner and task id, and counted as gone once their
//! thread (this incarnation of it) is, as DynamoDB's sweep and TTL make them.

use super::{MemoryStore, Record};
use crate::auth::Principal;
use crate::store::a2a_tasks::page_of;
use crate::store::{A2aTaskPage, A2aTaskQuery, A2aTaskRecord, A2aTasks, StoreError};
use async_trait::async_trait;
use std::collections::HashMap;

/// Whether `record`'s thread is still the one it was created on, and its owner's.
fn thread_holds(
    threads: &HashMap<crate::protocol::ThreadId, Record>,
    task: &A2aTaskRecord,
) -> bool {
    threads.get(&task.thread_id).is_some_and(|thread| {
        thread.owner == task.owner && thread.created_at_ms == task.thread_created_at_ms
    })
}

#[async_trait]
impl A2aTasks for MemoryStore {
    async fn create_a2a_task(&self, record: &A2aTaskRecord) -> Result<(), StoreError> {
        let threads = self.threads();
        if !thread_holds(&threads, record) {
            return Err(StoreError::NotFound);
        }
        let mut accounts = self.accounts();
        let key = (record.owner.clone(), record.task_id.clone());
        if accounts
            .a2a_tasks
            .get(&key)
            .is_some_and(|held| thread_holds(&threads, held))
        {
            return Err(StoreError::Conflict);
        }
        let mut record = record.clone();
        record.version = 1;
        accounts.a2a_tasks.insert(key, record);
        Ok(())
    }

    async fn save_a2a_task(&self, record: &A2aTaskRecord) -> Result<(), StoreError> {
        let threads = self.threads();
        let mut accounts = self.accounts();
        let key = (record.owner.clone(), record.task_id.clone());
        let Some(held) = accounts
            .a2a_tasks
            .get_mut(&key)
            .filter(|held| thread_holds(&threads, held))
        else {
            return Err(StoreError::NotFound);
        };
        if held.version + 1 != record.version {
            return Err(StoreError::Conflict);
        }
        *held = record.clone();
        Ok(())
    }

    async fn a2a_task(
        &self,
        owner: &Principal,
        task_id: &str,
    ) -> Result<Option<A2aTaskRecord>, StoreError> {
        let threads = self.threads();
        Ok(self
            .accounts()
            .a2a_tasks
            .get(&(owner.clone(), task_id.to_owned()))
            .filter(|held| thread_holds(&threads, held))
            .cloned())
    }

    async fn list_a2a_tasks(
        &self,
        owner: &Principal,
        query: &A2aTaskQuery,
    ) -> Result<A2aTaskPage, StoreError> {
        let threads = self.threads();
        let records: Vec<A2aTaskRecord> = self
            .accounts()
            .a2a_tasks
            .values()
            .filter(|held| &held.owner == owner && thread_holds(&threads, held))
            .cloned()
            .collect();
        Ok(page_of(records, query))
    }
}
