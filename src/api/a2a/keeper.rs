//! A task's bookkeeping beside its runs: the end hook that folds an ended run into its task,
//! the settling of a task whose run vanished (from the run's stored log), a run's events as the
//! task's frames, the list's page tokens, and a task record's body and next version.

use super::super::app::App;
use crate::a2a::errors::{A2aError, ErrorKind};
use crate::a2a::task::{self, RunFrames, TaskBody};
use crate::a2a::types::{StreamResponse, TaskState};
use crate::agent::{Agent, RunSource};
use crate::auth::Principal;
use crate::protocol::RunId;
use crate::store::{A2aTaskCursor, A2aTaskRecord, StoreError};
use futures_util::{Stream, StreamExt};
use std::sync::Arc;

/// How long a reader waits for an ended run's end hook.
const HOOK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl App {
    /// A working task whose run is no longer anywhere (its process stopped before the end hook
    /// wrote) takes its end from the run's stored log: the same fold as the hook's.
    pub(super) async fn settle(
        &self,
        record: A2aTaskRecord,
    ) -> Result<(A2aTaskRecord, TaskBody), A2aError> {
        let body = body_of(&record)?;
        let Some(run) = body
            .current_run()
            .filter(|_| body.status.state == TaskState::Working)
            .and_then(|run| RunId::parse(run, crate::protocol::ids::MAX_ID_LEN).ok())
        else {
            return Ok((record, body));
        };
        let source = self
            .agent
            .run_source(&record.owner, &record.thread_id, &run)
            .await
            .map_err(internal)?;
        let run_ref = match source {
            // Ended here, its end hook still storing it: a reader right after the stream's
            // last frame sees the task as the hook leaves it.
            Some(RunSource::Live(live)) if live.has_ended() => {
                let _ = tokio::time::timeout(HOOK_WAIT, live.done()).await;
                let fresh = self
                    .agent
                    .a2a_task(&record.owner, &record.task_id)
                    .await
                    .map_err(internal)?
                    .ok_or_else(|| A2aError::task_not_found(&record.task_id))?;
                let body = body_of(&fresh)?;
                return Ok((fresh, body));
            }
            Some(RunSource::Stored { run, active: false }) => run,
            // Live here, or holding its thread elsewhere: still working.
            Some(_) => return Ok((record, body)),
            None => return Err(A2aError::task_not_found(&record.task_id)),
        };
        let mut frames = RunFrames::new(&record.task_id, record.thread_id.as_str());
        let mut cursor = None;
        loop {
            let page = self
                .agent
                .run_events(&run_ref, cursor)
                .await
                .map_err(internal)?;
            for event in &page.events {
                if let Ok(json) = serde_json::from_slice(&event.json) {
                    frames.push(&json);
                }
            }
            match page.next {
                Some(next) if !page.events.is_empty() && frames.end().is_none() => {
                    cursor = Some(next);
                }
                _ => break,
            }
        }
        let end = frames
            .end()
            .cloned()
            .unwrap_or_else(|| task::lost_run(record.thread_id.as_str(), &record.task_id));
        let mut settled = body.clone();
        task::fold_run(&mut settled, &frames, end);
        let next = next_version(&record, &settled);
        match self.agent.save_a2a_task(&next).await {
            Ok(()) => Ok((next, settled)),
            // The end hook (or another reader) wrote first: theirs stands.
            Err(StoreError::Conflict) => {
                let fresh = self
                    .agent
                    .a2a_task(&record.owner, &record.task_id)
                    .await
                    .map_err(internal)?
                    .ok_or_else(|| A2aError::task_not_found(&record.task_id))?;
                let body = body_of(&fresh)?;
                Ok((fresh, body))
            }
            Err(StoreError::NotFound) => Err(A2aError::task_not_found(&record.task_id)),
            Err(other) => Err(internal(other)),
        }
    }
}

/// A run's event batches as the task's frames, ending after the run's end.
pub(super) fn run_frames(
    record: &A2aTaskRecord,
    batches: impl Stream<Item = Vec<Arc<crate::protocol::events::RecordedEvent>>> + Send + 'static,
) -> impl Stream<Item = StreamResponse> + Send + 'static {
    let mut frames = RunFrames::new(&record.task_id, record.thread_id.as_str());
    let mut batches = Box::pin(batches);
    async_stream::stream! {
        while let Some(batch) = batches.next().await {
            for event in batch {
                if event.notice {
                    // The run goes on (another invocation runs it): the stream ends without a
                    // final status, and the client subscribes again.
                    return;
                }
                let Ok(json) = serde_json::from_slice::<serde_json::Value>(&event.json) else {
                    continue;
                };
                for frame in frames.push(&json) {
                    yield frame;
                }
                if frames.end().is_some() {
                    return;
                }
            }
        }
    }
}

/// The end hook of a task's run: folds the ended run into its task, unless a later run (or a
/// reader that settled it) got there first.
pub(super) async fn fold_on_end(
    agent: Agent,
    owner: Principal,
    task_id: String,
    live: Arc<crate::agent::live::LiveRun>,
) {
    let (events, _) = live.since(0);
    if events.last().is_some_and(|event| event.notice) {
        // Handed off: the run ends in another invocation, and the task's next reader
        // settles it from the run's log.
        return;
    }
    for _ in 0..5 {
        let record = match agent.a2a_task(&owner, &task_id).await {
            Ok(Some(record)) => record,
            Ok(None) => return,
            Err(error) => {
                tracing::error!(%error, task = %task_id, "A2A: the task's end was not stored");
                return;
            }
        };
        let Ok(mut body) = serde_json::from_value::<TaskBody>(record.body.clone()) else {
            return;
        };
        if body.status.state != TaskState::Working
            || body.current_run() != Some(live.run_id.as_str())
        {
            return;
        }
        let mut frames = RunFrames::new(&task_id, record.thread_id.as_str());
        for event in &events {
            if let Ok(json) = serde_json::from_slice(&event.json) {
                frames.push(&json);
            }
        }
        let end = frames
            .end()
            .cloned()
            .unwrap_or_else(|| task::lost_run(record.thread_id.as_str(), &task_id));
        task::fold_run(&mut body, &frames, end);
        match agent.save_a2a_task(&next_version(&record, &body)).await {
            Ok(()) | Err(StoreError::NotFound) => return,
            Err(StoreError::Conflict) => {}
            Err(error) => {
                tracing::error!(%error, task = %task_id, "A2A: the task's end was not stored");
                return;
            }
        }
    }
}

/// A store failure as an A2A error: `Internal`, the cause logged.
pub(super) fn internal(error: StoreError) -> A2aError {
    tracing::error!(%error, "A2A: the thread store failed");
    A2aError::new(ErrorKind::Internal, "the task store is unavailable")
}

pub(super) fn body_of(record: &A2aTaskRecord) -> Result<TaskBody, A2aError> {
    serde_json::from_value(record.body.clone()).map_err(|error| {
        tracing::error!(%error, task = %record.task_id, "A2A: a stored task does not parse");
        A2aError::new(ErrorKind::Internal, "the task's record could not be read")
    })
}

/// A record with `body`, its state and time taken from it, one version on.
pub(super) fn next_version(record: &A2aTaskRecord, body: &TaskBody) -> A2aTaskRecord {
    let mut next = record.clone();
    next.state = body.status.state.as_str().to_owned();
    next.updated_at_ms = chrono::Utc::now().timestamp_millis();
    next.version += 1;
    next.body = serde_json::to_value(body).unwrap_or_default();
    next
}

/// A list cursor as a page token: opaque to clients, checked when it comes back.
pub(super) fn page_token(cursor: &A2aTaskCursor) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("{}:{}", cursor.updated_at_ms, cursor.task_id))
}

pub(super) fn parse_page_token(token: &str) -> Result<A2aTaskCursor, A2aError> {
    use base64::Engine;
    let bad = || A2aError::invalid_params("pageToken is not one this server gave out");
    let text = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(bad)?;
    let (at, id) = text.split_once(':').ok_or_else(bad)?;
    Ok(A2aTaskCursor {
        updated_at_ms: at.parse().map_err(|_| bad())?,
        task_id: id.to_owned(),
    })
}
