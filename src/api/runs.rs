//! Running and following runs: `POST` a run in any dialect (answered as the dialect's stream, or
//! as one response object), follow a run's events by id, and cancel it.

use super::app::{App, Arrival};
use super::body::ResponseBody;
use super::error::ApiError;
use super::request::{check_content_type, query_pairs};
use super::response::{json_response, sse_response};
use super::routes::Dialect;
use super::stream;
use crate::agent::{Agent, InterruptError, Observed, RunSource, StartError};
use crate::dialects::agentscope::AgentScopeEncoder;
use crate::dialects::{AguiEncoder, Encoder, agentscope, agkit};
use crate::protocol::events::Event;

use crate::auth::Principal;
use crate::protocol::{InputError, RunId, RunInput, ThreadId, input, sse};
use crate::store::{CancelState, StoreError};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http::{HeaderValue, Request, Response, StatusCode, header};
use serde_json::{Value, json};
use tokio::time::Instant;

/// A run to start, decoded from its request.
pub(super) struct RunRequest<'a> {
    /// The agent (or profile) that runs it.
    pub agent: &'a Agent,
    pub principal: Principal,
    pub input: RunInput,
    pub answer: RunAnswer,
    pub invocation_deadline: Option<Instant>,
    /// The metrics' `dialect` dimension.
    pub dialect: &'static str,
    /// Answered with AG-Kit's conversation header too.
    pub agkit: bool,
    /// An input the interrupt rules refuse is answered as a stream that opens with `RUN_ERROR`.
    pub interrupt_stream: bool,
}

/// How a run is answered: streamed through an encoder, or (AgentScope's `stream: false`) the
/// whole run encoded first and sent as the completed response object.
pub(super) enum RunAnswer {
    Stream(Box<dyn Encoder>),
    Buffered(Box<AgentScopeEncoder>),
}

impl App {
    /// `POST` a run: decoded in its dialect, started, and answered as [`RunAnswer`] says.
    pub(super) async fn run(
        &self,
        principal: Principal,
        request: Request<Bytes>,
        invocation_deadline: Option<Instant>,
        dialect: Dialect,
    ) -> Result<Response<ResponseBody>, ApiError> {
        check_content_type(request.headers())?;
        let body = match dialect {
            Dialect::AgUi | Dialect::SniffAgKit => {
                input::parse_agui_json(request.body(), &self.limits)?
            }
            Dialect::AgKit | Dialect::AgentScope => {
                input::parse_json(request.body(), &self.limits)?
            }
        };
        let dialect = dialect.sniffed(&body);
        if dialect == Dialect::AgKit && request.body().len() > self.limits.max_payload_bytes {
            return Err(InputError::TooLarge {
                limit: self.limits.max_payload_bytes,
            }
            .into());
        }
        let (input, answer) = self.decode_run(dialect, body)?;
        let run = RunRequest {
            agent: &self.agent,
            principal,
            input,
            answer,
            invocation_deadline,
            dialect: dialect.label(),
            agkit: dialect == Dialect::AgKit,
            // AG-UI's interrupt rules name RUN_ERROR for a refused input; the other dialects'
            // clients read no such stream.
            interrupt_stream: dialect != Dialect::AgentScope && dialect != Dialect::AgKit,
        };
        self.answer_run(run, &request).await
    }

    /// Starts a decoded run on `run.agent` and answers it as `run.answer` says: the one path of
    /// every run a client streams (`POST /agent` and the other dialects, CopilotKit's `/run`).
    pub(super) async fn answer_run(
        &self,
        run: RunRequest<'_>,
        request: &Request<Bytes>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        // An MCP App view's request riding on a run (CopilotKit's `/run`, the single route's
        // `agent/run`, `POST /agent`): answered without one.
        if let Some(view_request) = &run.input.forwarded_props.proxied_mcp_request {
            return self
                .proxied_view_request(&run.principal, &run.input, view_request)
                .await;
        }
        let deadline = self.run_deadline();
        let received = request
            .extensions()
            .get::<Arrival>()
            .map_or_else(std::time::Instant::now, |arrival| arrival.0);
        let mut started = match run.agent.start(run.principal, run.input, deadline).await {
            Ok(started) => started,
            Err(StartError::Interrupt(error)) if run.interrupt_stream => {
                return Ok(interrupt_refusal(&error));
            }
            Err(error) => return Err(error.into()),
        };
        started.observe(Observed {
            received,
            dialect: run.dialect,
        });
        if let Some(ends) = self.invocation_end(run.invocation_deadline) {
            started.end_invocation_at(ends);
        }
        let thread_id = started.thread_id().clone();
        let run_id = started.run_id().clone();
        match run.answer {
            RunAnswer::Buffered(encoder) => {
                Ok(whole_response(started.into_events(), encoder, &thread_id).await)
            }
            RunAnswer::Stream(encoder) => {
                // The run goes on by itself; this response is only its first follower.
                let batches = stream::until(
                    started.into_batches(),
                    self.stream_end(None),
                    &thread_id,
                    &run_id,
                    0,
                );
                let frames = stream::frames(batches, self.ping_interval, encoder);
                Ok(sse_response(frames, &thread_id, &run_id, run.agkit))
            }
        }
    }

    /// The run input a body stands for in `dialect`, and how the run is answered.
    fn decode_run(&self, dialect: Dialect, body: Value) -> Result<(RunInput, RunAnswer), ApiError> {
        Ok(match dialect {
            Dialect::AgKit => (
                agkit::from_json(body, &self.limits)?,
                RunAnswer::Stream(Box::new(agkit::AgKitEncoder)),
            ),
            Dialect::AgentScope => {
                let request = agentscope::from_json(body, &self.limits)?;
                let encoder = AgentScopeEncoder::for_request(&request);
                let answer = if request.stream {
                    RunAnswer::Stream(Box::new(encoder))
                } else {
                    RunAnswer::Buffered(Box::new(encoder))
                };
                (request.input, answer)
            }
            Dialect::AgUi | Dialect::SniffAgKit => {
                let ignored = input::unrecognised(&body);
                let input = input::from_agui_value(body, &self.limits)?;
                note_input(&input, &ignored);
                (input, RunAnswer::Stream(Box::new(AguiEncoder)))
            }
        })
    }

    /// When a run that starts now must have ended (`RUN_MAX_SECS`), across invocations.
    pub(super) fn run_deadline(&self) -> Instant {
        Instant::now() + self.run_max
    }

    /// When an answer that waits for a run must be sent: the run's deadline, or this
    /// invocation's end (less the margin) if sooner.
    pub(super) fn answer_deadline(&self, invocation_deadline: Option<Instant>) -> Instant {
        let run = self.run_deadline();
        self.invocation_end(invocation_deadline)
            .map_or(run, |ends| ends.min(run))
    }

    /// When this invocation's part of a run must end: its deadline less the margin that
    /// leaves time to store the run and start the next invocation.
    pub(super) fn invocation_end(&self, invocation_deadline: Option<Instant>) -> Option<Instant> {
        invocation_deadline.map(|lambda| lambda.checked_sub(self.deadline_margin).unwrap_or(lambda))
    }

    /// When a response stream must end, with the notice that says where to follow its run if
    /// the run goes on: `STREAM_MAX_SECS` from now, and `invocation_end` for a stream that
    /// follows a run another process runs (a run this process runs hands off itself).
    pub(super) fn stream_end(&self, invocation_end: Option<Instant>) -> Option<Instant> {
        let own = self.stream_max.map(|max| Instant::now() + max);
        match (own, invocation_end) {
            (Some(own), Some(invocation)) => Some(own.min(invocation)),
            (own, invocation) => own.or(invocation),
        }
    }

    /// `GET /threads/{threadId}/runs/{runId}/events`: the run's events after `Last-Event-ID`
    /// (or `?after=`), then live until its terminal event.
    pub(super) async fn run_events(
        &self,
        principal: &Principal,
        thread_id: &str,
        run_id: &str,
        request: &Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let (thread_id, run_id) = parse_run_ids(thread_id, run_id)?;
        let mut after = match request.headers().get("last-event-id") {
            Some(value) => Some(
                value
                    .to_str()
                    .ok()
                    .and_then(|text| text.trim().parse::<u64>().ok())
                    .ok_or_else(|| {
                        ApiError::BadQuery("Last-Event-ID must be an event id of this run".into())
                    })?,
            ),
            None => None,
        };
        for (key, value) in query_pairs(request.uri().query()) {
            if key == "after" && after.is_none() {
                after = Some(value.parse::<u64>().map_err(|_| {
                    ApiError::BadQuery("after must be an event id of this run".into())
                })?);
            }
        }
        let after = after.unwrap_or(0);
        let batches = self
            .follow_run(principal, &thread_id, &run_id, after, invocation_deadline)
            .await?;
        Ok(sse_response(
            stream::frames(batches, self.ping_interval, AguiEncoder),
            &thread_id,
            &run_id,
            false,
        ))
    }

    /// A run's events after `after`, then live until its terminal event (or the notice that ends
    /// a stream while the run goes on), wherever the run is: from this process's live log, else
    /// from its log in the store. `RunNotFound` for a run that has no events and holds no thread.
    pub(super) async fn follow_run(
        &self,
        principal: &Principal,
        thread_id: &ThreadId,
        run_id: &RunId,
        after: u64,
        invocation_deadline: Option<Instant>,
    ) -> Result<futures_util::stream::BoxStream<'static, stream::Batch>, ApiError> {
        let source = self
            .agent
            .run_source(principal, thread_id, run_id)
            .await
            .map_err(ApiError::from_store)?
            .ok_or(ApiError::RunNotFound)?;
        let invocation_end = self.invocation_end(invocation_deadline);
        Ok(match source {
            // From the live log, unless the client needs events another runner sent.
            RunSource::Live(run) if after >= run.base() => {
                run.note_rejoin();
                stream::until(
                    run.follow(after),
                    self.stream_end(None),
                    thread_id,
                    run_id,
                    after,
                )
                .boxed()
            }
            RunSource::Live(_) => self
                .follow_stored(principal, thread_id, run_id, after, invocation_end)
                .await?
                .boxed(),
            RunSource::Stored { run, active } => {
                let first = self
                    .agent
                    .run_events(&run, None)
                    .await
                    .map_err(ApiError::from_store)?;
                // Not recorded yet is fine while the run holds its thread.
                if first.next.is_none() && !active {
                    return Err(ApiError::RunNotFound);
                }
                stream::follow_stored(
                    self.agent.clone(),
                    principal.clone(),
                    run,
                    first,
                    after,
                    self.stream_end(invocation_end),
                )
                .boxed()
            }
        })
    }

    /// A run's events from its log in the store after `after`, then as they are written.
    async fn follow_stored(
        &self,
        principal: &Principal,
        thread_id: &ThreadId,
        run_id: &RunId,
        after: u64,
        invocation_end: Option<Instant>,
    ) -> Result<impl futures_util::Stream<Item = stream::Batch> + Send + 'static, ApiError> {
        let created_at_ms = match self
            .agent
            .activity(principal, thread_id)
            .await
            .map_err(ApiError::from_store)?
        {
            crate::store::ThreadActivity::Missing => return Err(ApiError::RunNotFound),
            crate::store::ThreadActivity::Idle { created_at_ms }
            | crate::store::ThreadActivity::Running { created_at_ms, .. }
            | crate::store::ThreadActivity::Stalled { created_at_ms, .. } => created_at_ms,
        };
        let run = crate::store::RunRef {
            thread_id: thread_id.clone(),
            created_at_ms,
            run_id: run_id.clone(),
        };
        let first = self
            .agent
            .run_events(&run, None)
            .await
            .map_err(ApiError::from_store)?;
        Ok(stream::follow_stored(
            self.agent.clone(),
            principal.clone(),
            run,
            first,
            after,
            self.stream_end(invocation_end),
        ))
    }

    /// `POST /threads/{threadId}/runs/{runId}/cancel`.
    pub(super) async fn cancel_run(
        &self,
        principal: &Principal,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let (thread_id, run_id) = parse_run_ids(thread_id, run_id)?;
        let (status, state) = match self.agent.cancel(principal, &thread_id, &run_id).await {
            Ok(CancelState::Requested) => (StatusCode::ACCEPTED, "cancelling"),
            Ok(CancelState::Ended) => (StatusCode::OK, "ended"),
            Err(StoreError::NotFound) => return Err(ApiError::RunNotFound),
            Err(error) => return Err(ApiError::from_store(error)),
        };
        let body = json!({"threadId": thread_id, "runId": run_id, "status": state});
        Ok(json_response(status, Bytes::from(body.to_string())))
    }
}

/// A stream that opens with the `RUN_ERROR` of a run the interrupt rules refused.
fn interrupt_refusal(error: &InterruptError) -> Response<ResponseBody> {
    tracing::info!(code = ?error.code(), %error, "run refused by the interrupt rules");
    let refusal = Event::RunError {
        message: error.to_string(),
        code: error.code(),
        usage: Default::default(),
    };
    let frame = sse::encode_event(&refusal, sse::now_ms());
    let mut response = Response::new(ResponseBody::stream(futures_util::stream::iter([frame])));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(sse::CONTENT_TYPE),
    );
    response
}

/// `stream: false`: the whole run, then the completed response object.
async fn whole_response(
    events: impl Stream<Item = Event>,
    mut encoder: Box<AgentScopeEncoder>,
    thread_id: &ThreadId,
) -> Response<ResponseBody> {
    let mut events = Box::pin(events);
    while let Some(event) = events.next().await {
        encoder.encode(&event);
    }
    let mut response = json_response(StatusCode::OK, Bytes::from(encoder.response().to_string()));
    if let Ok(value) = HeaderValue::from_str(thread_id.as_str()) {
        response.headers_mut().insert("x-thread-id", value);
    }
    response
}

/// Ids in a run path; a malformed one names no run.
fn parse_run_ids(thread_id: &str, run_id: &str) -> Result<(ThreadId, RunId), ApiError> {
    let max = crate::protocol::ids::MAX_ID_LEN;
    match (ThreadId::parse(thread_id, max), RunId::parse(run_id, max)) {
        (Ok(thread_id), Ok(run_id)) => Ok((thread_id, run_id)),
        _ => Err(ApiError::RunNotFound),
    }
}

/// What AG-UI's processing model has a producer warn about in a run input it serves anyway: a
/// declared version newer than ours or unreadable, and members no schema definition describes.
fn note_input(input: &RunInput, ignored: &[String]) {
    if let Some(warning) = input.declared().warning() {
        tracing::warn!(run_id = %input.run_id, "{warning}");
    }
    if !ignored.is_empty() {
        tracing::warn!(run_id = %input.run_id, members = ?ignored, "run input members AG-UI does not describe were ignored");
    }
}
