//! Records of runs accepted to run detached (`POST /api/v1/agent/runs`): [`TaskRecords`] keeps
//! what the runner needs to find its run, and how far it got, for the run event logs' retention.

use super::StoreError;
use crate::auth::Principal;
use crate::protocol::{RunId, ThreadId};
use async_trait::async_trait;

/// A run accepted to run detached: what the runner needs to find its run, and how far it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    pub owner: Principal,
    pub run_id: RunId,
    pub thread_id: ThreadId,
    /// The request created the thread (the answer's `created`).
    pub created_thread: bool,
    pub accepted_at_ms: i64,
    pub state: TaskState,
}

/// Where a detached run is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskState {
    /// Accepted, not yet picked up by a runner.
    Accepted,
    /// A runner claimed it; from here on the run's own records (events, thread) tell the rest.
    Started,
    /// It failed before or while starting; terminal.
    Failed { code: String, message: String },
}

/// Why a task failed, as `fail_task` records it.
#[derive(Debug, Clone, Copy)]
pub struct TaskFailure<'a> {
    pub owner: &'a Principal,
    pub run_id: &'a RunId,
    pub code: &'a str,
    /// Stored cut at [`MAX_TASK_MESSAGE_CHARS`].
    pub message: &'a str,
}

/// The longest failure message a task record keeps, in characters: keeps the record far below
/// DynamoDB's item limit whatever error text it is given.
pub(crate) const MAX_TASK_MESSAGE_CHARS: usize = 2_000;

/// A task failure's message as stored: cut at [`MAX_TASK_MESSAGE_CHARS`].
pub(crate) fn task_message(message: &str) -> String {
    message.chars().take(MAX_TASK_MESSAGE_CHARS).collect()
}

#[async_trait]
pub trait TaskRecords: Send + Sync {
    /// Records an accepted task; `Conflict` if `owner` already has a task with this run id.
    async fn create_task(&self, task: &TaskRecord) -> Result<(), StoreError>;

    /// Accepted -> Started, once: `false` when the task is missing or not Accepted (a
    /// duplicate delivery must not run twice).
    async fn claim_task(&self, owner: &Principal, run_id: &RunId) -> Result<bool, StoreError>;

    /// Records why a task failed before or while starting (terminal): from Accepted or
    /// Started; a task that failed already keeps its first reason. `NotFound` when `owner` has
    /// no such task.
    async fn fail_task(&self, failure: TaskFailure<'_>) -> Result<(), StoreError>;

    /// `owner`'s task `run_id`, if the store holds it (expired ones count as gone).
    async fn task(
        &self,
        owner: &Principal,
        run_id: &RunId,
    ) -> Result<Option<TaskRecord>, StoreError>;
}
