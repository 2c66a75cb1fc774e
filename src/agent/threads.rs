//! What a caller does with its threads besides running them: list (our list, and the shelf a
//! thread list UI shows), rename, archive, delete (stopping a run first), fork; and its token
//! usage with the quotas a run is admitted under.

use super::{Agent, StartError};
use crate::auth::Principal;
use crate::protocol::{MessageId, RunId, ThreadId};
use crate::store::{
    AfterQuery, DayUsage, Deletion, EventCursor, EventPage, HistoryPage, HistoryQuery,
    MessagesAfter, NewThread, QuotaLimits, Reservation, RunRef, RunTokens, Settlement, ShelfPage,
    ShelfQuery, StoreError, ThreadActivity, ThreadList,
};
use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;

/// Per-principal quotas: the default and the principals configured otherwise.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Quotas {
    pub default: QuotaLimits,
    pub overrides: HashMap<String, QuotaOverride>,
}

/// What one principal's quotas change from the default; `Some(None)` lifts a quota.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuotaOverride {
    pub tokens_per_day: Option<Option<u64>>,
    pub runs_per_minute: Option<Option<u32>>,
}

impl Quotas {
    pub fn for_principal(&self, principal: &Principal) -> QuotaLimits {
        let mut limits = self.default;
        if let Some(custom) = self.overrides.get(principal.as_str()) {
            if let Some(tokens) = custom.tokens_per_day {
                limits.tokens_per_day = tokens;
            }
            if let Some(runs) = custom.runs_per_minute {
                limits.runs_per_minute = runs;
            }
        }
        limits
    }
}

/// Why a fork could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ForkError {
    #[error(transparent)]
    Start(#[from] StartError),
    #[error("message {0} is not a message of this thread")]
    UnknownMessage(MessageId),
}

impl From<StoreError> for ForkError {
    fn from(error: StoreError) -> Self {
        ForkError::Start(error.into())
    }
}

/// The thread a fork made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Forked {
    pub thread_id: ThreadId,
    pub message_count: usize,
    pub title: Option<String>,
}

impl Agent {
    pub(crate) async fn list_threads(
        &self,
        owner: &Principal,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ThreadList, StoreError> {
        self.store.list_threads(owner, limit, cursor).await
    }

    /// A page of `owner`'s threads as a thread list UI shows them (CopilotKit's), archived ones
    /// left out unless asked for.
    pub(crate) async fn shelf(
        &self,
        owner: &Principal,
        query: ShelfQuery<'_>,
    ) -> Result<ShelfPage, StoreError> {
        self.store.shelf(owner, query).await
    }

    /// Archives `owner`'s thread, or brings it back.
    pub(crate) async fn set_archived(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        archived: bool,
    ) -> Result<(), StoreError> {
        self.store.set_archived(owner, thread_id, archived).await
    }

    /// The pages after the first of a whole thread's read: messages only, no record.
    pub(crate) async fn messages_after(
        &self,
        query: AfterQuery<'_>,
    ) -> Result<MessagesAfter, StoreError> {
        self.store.messages_after(query).await
    }

    /// A page of `owner`'s thread history (the history route).
    pub(crate) async fn history(&self, query: HistoryQuery<'_>) -> Result<HistoryPage, StoreError> {
        self.store.history(query).await
    }

    /// Whether `owner`'s thread exists and which run holds it.
    pub(crate) async fn activity(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<ThreadActivity, StoreError> {
        self.store.activity(owner, thread_id).await
    }

    /// A run's recorded events, from its start or from `from` on (following and replaying it).
    pub(crate) async fn run_events(
        &self,
        run: &RunRef,
        from: Option<EventCursor>,
    ) -> Result<EventPage, StoreError> {
        self.store.read_events(run, from).await
    }

    /// `owner`'s messages of one calendar day in `tz`, the day before `before` (the v1 agent
    /// API's history by day).
    pub async fn history_day(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        before: Option<chrono::NaiveDate>,
        tz: chrono_tz::Tz,
    ) -> Result<super::history_day::DaySlice, StoreError> {
        super::history_day::history_day(self.store.as_ref(), owner, thread_id, before, tz).await
    }

    pub(crate) async fn rename_thread(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
        title: &str,
    ) -> Result<(), StoreError> {
        self.store.set_title(owner, thread_id, title).await
    }

    /// Deletes `owner`'s thread. A run in flight on it is cancelled first, and the delete waits
    /// (up to the interrupt wait) for it to release the thread; `Busy` if it does not.
    pub(crate) async fn delete_thread(
        &self,
        owner: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Deletion, StartError> {
        let give_up = Instant::now() + self.settings.interrupt_wait;
        loop {
            match self.store.delete_thread(owner, thread_id).await {
                Err(StoreError::Conflict) if Instant::now() < give_up => {
                    if let ThreadActivity::Running { run_id, .. } =
                        self.store.activity(owner, thread_id).await?
                    {
                        self.interrupt(owner, thread_id, &run_id, give_up).await?;
                        // A run of this process writes its event log's last batch after it
                        // releases the thread: let it, or that batch would outlive the delete.
                        while self.live.get(thread_id, &run_id).is_some()
                            && Instant::now() < give_up
                        {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    } else {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                other => return other.map_err(StartError::from),
            }
        }
    }

    /// A new thread owned by `owner`, holding `source`'s history up to and including
    /// `message_id`, its state and its title; `new_id` names it, or a UUID does.
    pub(crate) async fn fork_thread(
        &self,
        owner: &Principal,
        source: &ThreadId,
        message_id: &MessageId,
        new_id: Option<ThreadId>,
    ) -> Result<Forked, ForkError> {
        let thread = self
            .store
            .load(owner, source)
            .await?
            .ok_or(ForkError::Start(StartError::NotFound))?;
        let end = thread
            .messages
            .iter()
            .position(|message| message.id() == message_id)
            .ok_or_else(|| ForkError::UnknownMessage(message_id.clone()))?;
        let thread_id = new_id.unwrap_or_else(ThreadId::new_uuid);
        let messages = &thread.messages[..=end];
        let title = thread
            .title
            .clone()
            .or_else(|| super::thread::derive_title(messages));
        self.store
            .create_thread(NewThread {
                owner,
                thread_id: &thread_id,
                messages,
                state: thread.state.as_ref(),
                title: title.as_deref(),
                at_ms: chrono::Utc::now().timestamp_millis(),
                // The copies keep their original times, so the history by day stays put.
                copied_at_ms: thread.message_at_ms.get(..=end).unwrap_or_default(),
            })
            .await?;
        tracing::info!(%source, forked = %thread_id, messages = messages.len(), "thread forked");
        Ok(Forked {
            thread_id,
            message_count: messages.len(),
            title,
        })
    }

    /// The history a new thread started from `parent` copies: the parent run's thread up to
    /// where the run left it. `UnknownParentRun` when the caller has no such finished run.
    pub(super) async fn parent_history(
        &self,
        owner: &Principal,
        parent: &RunId,
    ) -> Result<crate::store::StoredThread, StartError> {
        let end = self
            .store
            .run_end(owner, parent)
            .await?
            .ok_or(StartError::UnknownParentRun)?;
        let mut thread = self
            .store
            .load(owner, &end.thread_id)
            .await?
            .filter(|thread| thread.created_at_ms == end.created_at_ms)
            .ok_or(StartError::UnknownParentRun)?;
        thread.messages.truncate(end.message_count);
        thread.message_at_ms.truncate(end.message_count);
        thread.interrupts = None;
        thread.active_run = None;
        Ok(thread)
    }

    /// Takes a run from the caller's quotas (no store call when the caller has none).
    pub(super) async fn reserve(&self, owner: &Principal) -> Result<Reservation, StartError> {
        let limits = self.settings.quotas.for_principal(owner);
        match self.store.reserve(owner, &limits, chrono::Utc::now()).await {
            Ok(reservation) => Ok(reservation),
            Err(StoreError::QuotaExceeded(exceeded)) => {
                tracing::info!(principal = owner.as_str(), %exceeded, "run refused by a quota");
                Err(StartError::QuotaExceeded(exceeded))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Records a run's tokens on its day and gives back what it reserved; `run` is `None` for
    /// a run that did not start. A failure is logged: usage never fails a run.
    pub(super) async fn settle(&self, reservation: &Reservation, run: Option<&[RunTokens<'_>]>) {
        if let Err(error) = self.store.settle(Settlement { reservation, run }).await {
            tracing::error!(%error, principal = reservation.owner.as_str(), "recording usage failed");
        }
    }

    /// The caller's usage from `from` to `to` (UTC days, `YYYY-MM-DD`, both included).
    pub(crate) async fn usage(
        &self,
        owner: &Principal,
        from: &str,
        to: &str,
    ) -> Result<Vec<DayUsage>, StoreError> {
        self.store.usage(owner, from, to).await
    }
}
