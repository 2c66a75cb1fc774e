//! `POST /agent/{agentId}/connect`: what a reload or a thread switch restores. A thread at rest
//! is replayed as one run (`RUN_STARTED`, `MESSAGES_SNAPSHOT`, `STATE_SNAPSHOT`, `RUN_FINISHED`),
//! its messages streamed page by page as the store reads them; a run in progress is joined: the
//! same replay, then that run's events (from this process's live log or the store's, across
//! invocations) up to its terminal event. The thread is read once: its record and first page,
//! then the messages alone. A thread the caller does not have is an empty stream:
//! CopilotKit asks on every mount, and an error would be reported there each time.

use super::super::app::App;
use super::super::body::ResponseBody;
use super::super::error::ApiError;
use super::super::request::check_content_type;
use super::super::response::sse_response;
use super::super::stream::{self, Batch};
use crate::agent::Agent;
use crate::auth::Principal;
use crate::dialects::AguiEncoder;
use crate::dialects::copilotkit::replay::{self, Snapshot, Tail};
use crate::protocol::events::{Event, RunErrorCode};
use crate::protocol::{RunId, ThreadId, input, sse, version};
use crate::store::{AfterQuery, HistoryPage, HistoryQuery, StoreError, ThreadActivity};
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{Stream, StreamExt};
use http::{HeaderValue, Request, Response, header};
use tokio::time::Instant;

/// Messages in the first page: small, so the replay starts soon.
const FIRST_PAGE: usize = 100;
/// Messages in each later page.
const PAGE: usize = 500;

/// What a replay continues with after its snapshot.
enum Ending {
    /// The thread is at rest: `RUN_FINISHED`.
    Finished,
    /// A run is in progress: its events.
    Join(BoxStream<'static, Batch>),
}

impl App {
    pub(super) async fn connect(
        &self,
        principal: &Principal,
        request: &Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        check_content_type(request.headers())?;
        let body = input::parse_agui_json(request.body(), &self.limits)?;
        let input = input::from_agui_value(body, &self.limits)?;
        let version = version::declaration(input.speaks_v1(), input.speaks_at_least(1, 1));
        let Some(thread_id) = input.thread_id else {
            return Ok(nothing());
        };
        let (created_at_ms, active) = match self
            .agent
            .activity(principal, &thread_id)
            .await
            .map_err(ApiError::from_store)?
        {
            ThreadActivity::Missing => return Ok(nothing()),
            ThreadActivity::Idle { created_at_ms } => (created_at_ms, None),
            ThreadActivity::Running {
                created_at_ms,
                run_id,
            }
            | ThreadActivity::Stalled {
                created_at_ms,
                run_id,
            } => (created_at_ms, Some(run_id)),
        };
        let first = match self
            .agent
            .history(HistoryQuery {
                owner: principal,
                thread_id: &thread_id,
                after: None,
                limit: FIRST_PAGE,
            })
            .await
        {
            Err(StoreError::NotFound) => return Ok(nothing()),
            page => page.map_err(ApiError::from_store)?,
        };
        let ending = match &active {
            None => Ending::Finished,
            Some(run_id) => match self
                .follow_run(principal, &thread_id, run_id, 0, invocation_deadline)
                .await
            {
                Ok(events) => Ending::Join(events),
                // It ended, and left no log to follow: the thread is at rest again.
                Err(ApiError::RunNotFound) => Ending::Finished,
                Err(error) => return Err(error),
            },
        };
        let run_id = match (&ending, active) {
            (Ending::Join(_), Some(run_id)) => run_id,
            _ => input.run_id,
        };
        let replay = Replay {
            agent: self.agent.clone(),
            principal: principal.clone(),
            thread_id: thread_id.clone(),
            created_at_ms,
            run_id: run_id.clone(),
            version,
        };
        let frames = replay.frames(first, ending, self.ping_interval);
        Ok(sse_response(frames, &thread_id, &run_id, false))
    }
}

/// A replay's parts besides its pages.
struct Replay {
    agent: Agent,
    principal: Principal,
    thread_id: ThreadId,
    /// The incarnation of the thread the first page read.
    created_at_ms: i64,
    run_id: RunId,
    /// The AG-UI version the replay declares.
    version: &'static str,
}

impl Replay {
    /// The replay's frames: its start, the snapshot as the pages are read, the state, then its
    /// end or the joined run's events.
    fn frames(
        self,
        first: HistoryPage,
        ending: Ending,
        ping_interval: std::time::Duration,
    ) -> impl Stream<Item = Bytes> + Send + 'static {
        let joining = matches!(ending, Ending::Join(_));
        async_stream::stream! {
            yield replay::run_started(&self.thread_id, &self.run_id, self.version);
            yield Snapshot::open();
            let mut snapshot = Snapshot::new(joining);
            let state = first.state.clone();
            let mut next = first.next.clone();
            yield snapshot.page(&first.messages);
            drop(first);
            let mut failed = None;
            while let Some(after) = next.take() {
                let query = AfterQuery {
                    owner: &self.principal,
                    thread_id: &self.thread_id,
                    created_at_ms: self.created_at_ms,
                    after: &after,
                    limit: PAGE,
                };
                match self.agent.messages_after(query).await {
                    Ok(page) => {
                        next = page.next;
                        yield snapshot.page(&page.messages);
                    }
                    Err(error) => failed = Some(error),
                }
            }
            tracing::debug!(thread_id = %self.thread_id, messages = snapshot.len(), "thread replayed");
            let (end, tail) = snapshot.close();
            yield end;
            if let Some(error) = failed {
                tracing::warn!(%error, thread_id = %self.thread_id, "a replay's page could not be read");
                yield lost(&error);
                return;
            }
            yield replay::state_snapshot(state);
            match ending {
                Ending::Finished => yield replay::run_finished(&self.thread_id, &self.run_id),
                Ending::Join(events) => {
                    let mut frames = Box::pin(stream::frames(kept(events, tail), ping_interval, AguiEncoder));
                    while let Some(frame) = frames.next().await {
                        yield frame;
                    }
                }
            }
        }
    }
}

/// The joined run's events that follow the snapshot.
fn kept(
    events: BoxStream<'static, Batch>,
    tail: Tail,
) -> impl Stream<Item = Batch> + Send + 'static {
    events.filter_map(move |mut batch| {
        batch.retain(|event| tail.keeps(&event.json));
        std::future::ready((!batch.is_empty()).then_some(batch))
    })
}

/// The `RUN_ERROR` that ends a replay whose store failed halfway.
fn lost(error: &StoreError) -> Bytes {
    let event = Event::RunError {
        message: format!("the thread could not be read to its end: {error}"),
        code: RunErrorCode::StoreError,
        usage: Default::default(),
    };
    sse::encode_event(&event, sse::now_ms())
}

/// The empty stream of a thread there is nothing to restore from.
fn nothing() -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(Bytes::new()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(sse::CONTENT_TYPE),
    );
    response
}
