//! Detached runs (the v1 agent API's `POST /api/v1/agent/runs`): the caller is answered once the run is
//! admitted, and the run executes later, elsewhere (a self-invocation on Lambda, a task locally).
//! Admission and the one start per run id live here; the transport that carries a run is the
//! HTTP layer's.

use super::{Agent, StartError};
use crate::auth::Principal;
use crate::protocol::{RunId, RunInput, ThreadId};
use crate::store::{Reservation, StoreError, TaskFailure, TaskRecord, TaskState, ThreadActivity};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tokio::time::Instant;

/// What admission took for a run that has not started yet: carried to wherever it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Admission {
    /// The UTC day the reservation is accounted to.
    pub day: String,
    pub reserved_tokens: u64,
    /// The thread did not exist when the run was accepted.
    pub created: bool,
}

impl Admission {
    fn reservation(&self, owner: &Principal) -> Reservation {
        Reservation {
            owner: owner.clone(),
            day: self.day.clone(),
            reserved_tokens: self.reserved_tokens,
        }
    }
}

/// How a detached run ended its start.
pub(crate) enum DetachedStart {
    /// Running on its own task in this process.
    Started(Arc<super::live::LiveRun>),
    /// Another delivery of the same run started (or refused) it already.
    Duplicate,
    /// It could not start; the reason is recorded on its task.
    Failed,
}

impl Agent {
    /// Admits a run to be executed later, with the rules of a streamed run that can be checked
    /// now: a thread running another run is busy (the detached run would not interrupt it), the
    /// caller's quota is reserved, and the run id must be new for this caller. A run that loses
    /// a race for its thread after this fails at its start and says so on its task.
    pub(crate) async fn admit_detached(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        run_id: &RunId,
    ) -> Result<Admission, StartError> {
        let created = match self.store.activity(owner, thread_id).await? {
            ThreadActivity::Running { .. } => return Err(StartError::Busy),
            ThreadActivity::Missing => true,
            ThreadActivity::Idle { .. } | ThreadActivity::Stalled { .. } => false,
        };
        let reservation = self.reserve(owner).await?;
        let task = TaskRecord {
            owner: owner.clone(),
            run_id: run_id.clone(),
            thread_id: thread_id.clone(),
            created_thread: created,
            accepted_at_ms: chrono::Utc::now().timestamp_millis(),
            state: TaskState::Accepted,
        };
        if let Err(error) = self.store.create_task(&task).await {
            self.settle(&reservation, None).await;
            return Err(match error {
                StoreError::Conflict => StartError::RunIdTaken,
                other => other.into(),
            });
        }
        Ok(Admission {
            day: reservation.day,
            reserved_tokens: reservation.reserved_tokens,
            created,
        })
    }

    /// Starts an admitted run, once however often it is delivered. The reservation made at
    /// admission pays for it; a failure to start gives it back and is recorded on the task.
    /// `invocation_end`: this invocation's part of the run ends then (it goes on in the next).
    pub(crate) async fn start_detached(
        &self,
        owner: Principal,
        input: RunInput,
        admission: &Admission,
        deadline: Instant,
        invocation_end: Option<Instant>,
    ) -> DetachedStart {
        let run_id = input.run_id.clone();
        match self.store.claim_task(&owner, &run_id).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(%run_id, "a detached run was delivered again; not started twice");
                return DetachedStart::Duplicate;
            }
            Err(error) => {
                let error = StartError::from(error);
                self.abandon_detached(&owner, &run_id, admission, &error)
                    .await;
                return DetachedStart::Failed;
            }
        }
        let reservation = admission.reservation(&owner);
        match self
            .start_reserved(owner.clone(), input, deadline, Some(reservation))
            .await
        {
            Ok(mut prepared) => {
                // From the admission's answer, since the request arrived in another invocation.
                prepared.observe(super::Observed {
                    received: std::time::Instant::now(),
                    dialect: "v1-agent",
                });
                if let Some(ends) = invocation_end {
                    prepared.end_invocation_at(ends);
                }
                DetachedStart::Started(prepared.spawn())
            }
            Err(error) => {
                // `start_reserved` has given the reservation back.
                self.record_failure(&owner, &run_id, &error).await;
                DetachedStart::Failed
            }
        }
    }

    /// A run that was admitted but can never start (its delivery failed): the reservation goes
    /// back and the task says why.
    pub(crate) async fn abandon_detached(
        &self,
        owner: &Principal,
        run_id: &RunId,
        admission: &Admission,
        error: &StartError,
    ) {
        self.settle(&admission.reservation(owner), None).await;
        self.record_failure(owner, run_id, error).await;
    }

    async fn record_failure(&self, owner: &Principal, run_id: &RunId, error: &StartError) {
        tracing::info!(%run_id, %error, "a detached run failed to start");
        if let Err(store_error) = self
            .store
            .fail_task(TaskFailure {
                owner,
                run_id,
                code: error.run_error_code(),
                message: &error.to_string(),
            })
            .await
        {
            tracing::error!(%run_id, error = %store_error, "recording a detached run's failure failed");
        }
    }

    /// The caller's task for `run_id`, if any.
    pub(crate) async fn task(
        &self,
        owner: &Principal,
        run_id: &RunId,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.store.task(owner, run_id).await
    }
}

impl StartError {
    /// The `RUN_ERROR` code a detached run's failure to start is reported with.
    pub(crate) fn run_error_code(&self) -> &'static str {
        match self {
            StartError::Busy | StartError::RunIdTaken => "CONFLICT",
            StartError::NotFound => "THREAD_NOT_FOUND",
            StartError::QuotaExceeded(_) => "QUOTA_EXCEEDED",
            StartError::StoreUnavailable | StartError::StoreCorrupt => "STORE_ERROR",
            StartError::Interrupt(_) => "INTERRUPT_PENDING",
            StartError::Dispatch(_) => "DISPATCH_FAILED",
            StartError::Input(_)
            | StartError::Merge(_)
            | StartError::ToolNameClash(_)
            | StartError::TooLarge(_)
            | StartError::UnsupportedPart { .. }
            | StartError::UnknownParentRun => "INVALID_REQUEST",
        }
    }
}
