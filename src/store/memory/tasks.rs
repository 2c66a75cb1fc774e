//! The in-memory store's task records of detached runs, each kept for the event retention as
//! DynamoDB's TTL would.

use super::{MemoryStore, now_ms};
use crate::auth::Principal;
use crate::protocol::RunId;
use crate::store::{StoreError, TaskFailure, TaskRecord, TaskRecords, TaskState, task_message};
use async_trait::async_trait;

#[async_trait]
impl TaskRecords for MemoryStore {
    async fn create_task(&self, task: &TaskRecord) -> Result<(), StoreError> {
        let now = now_ms();
        let mut accounts = self.accounts();
        // Expired records are dropped here, as DynamoDB's TTL would, so their ids are free.
        accounts.tasks.retain(|_, (_, expires)| *expires > now);
        let key = (task.owner.clone(), task.run_id.clone());
        if accounts.tasks.contains_key(&key) {
            return Err(StoreError::Conflict);
        }
        let mut task = task.clone();
        if let TaskState::Failed { message, .. } = &mut task.state {
            *message = task_message(message);
        }
        accounts
            .tasks
            .insert(key, (task, now.saturating_add(self.events_ttl_ms)));
        Ok(())
    }

    async fn claim_task(&self, owner: &Principal, run_id: &RunId) -> Result<bool, StoreError> {
        let now = now_ms();
        let mut accounts = self.accounts();
        match accounts
            .tasks
            .get_mut(&(owner.clone(), run_id.clone()))
            .filter(|(_, expires)| *expires > now)
        {
            Some((task, _)) if task.state == TaskState::Accepted => {
                task.state = TaskState::Started;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn fail_task(&self, failure: TaskFailure<'_>) -> Result<(), StoreError> {
        let now = now_ms();
        let mut accounts = self.accounts();
        let (task, _) = accounts
            .tasks
            .get_mut(&(failure.owner.clone(), failure.run_id.clone()))
            .filter(|(_, expires)| *expires > now)
            .ok_or(StoreError::NotFound)?;
        if !matches!(task.state, TaskState::Failed { .. }) {
            task.state = TaskState::Failed {
                code: failure.code.to_owned(),
                message: task_message(failure.message),
            };
        }
        Ok(())
    }

    async fn task(
        &self,
        owner: &Principal,
        run_id: &RunId,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let now = now_ms();
        Ok(self
            .accounts()
            .tasks
            .get(&(owner.clone(), run_id.clone()))
            .filter(|(_, expires)| *expires > now)
            .map(|(task, _)| task.clone()))
    }
}
