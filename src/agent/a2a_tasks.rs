//! The A2A tasks of a principal, as the API layer reads and writes them: the store's records,
//! owner-only like every thread read.

use super::Agent;
use crate::auth::Principal;
use crate::store::{A2aTaskPage, A2aTaskQuery, A2aTaskRecord, StoreError};

impl Agent {
    pub(crate) async fn a2a_task(
        &self,
        owner: &Principal,
        task_id: &str,
    ) -> Result<Option<A2aTaskRecord>, StoreError> {
        self.store.a2a_task(owner, task_id).await
    }

    pub(crate) async fn create_a2a_task(&self, record: &A2aTaskRecord) -> Result<(), StoreError> {
        self.store.create_a2a_task(record).await
    }

    pub(crate) async fn save_a2a_task(&self, record: &A2aTaskRecord) -> Result<(), StoreError> {
        self.store.save_a2a_task(record).await
    }

    pub(crate) async fn list_a2a_tasks(
        &self,
        owner: &Principal,
        query: &A2aTaskQuery,
    ) -> Result<A2aTaskPage, StoreError> {
        self.store.list_a2a_tasks(owner, query).await
    }
}
