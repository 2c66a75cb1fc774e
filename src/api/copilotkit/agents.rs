//! CopilotKit's agent routes but `/connect`: `/run` (a plain `RunAgentInput`, answered with the
//! run's AG-UI stream, the same path as `POST /agent`), `/stop/{threadId}` (the thread's active
//! run, or the one named, wherever it runs), and `/suggest`.

use super::super::app::App;
use super::super::body::ResponseBody;
use super::super::error::ApiError;
use super::super::request::check_content_type;
use super::super::response::{json_response, sse_response};
use super::super::runs::{RunAnswer, RunRequest};
use super::super::stream;
use super::super::threads::path_thread;
use crate::agent::{Agent, Suggestion};
use crate::auth::Principal;
use crate::dialects::{AguiEncoder, copilotkit};
use crate::protocol::events::RecordedEvent;
use crate::protocol::{InputError, RunId, ThreadId, input, sse};
use crate::store::{CancelState, StoreError, ThreadActivity};
use bytes::Bytes;
use futures_util::StreamExt;
use http::{Request, Response, StatusCode};
use serde_json::json;
use tokio::time::Instant;

/// The metrics' `dialect` dimension of runs started through CopilotKit's routes.
const DIALECT: &str = "copilotkit";

impl App {
    /// `POST /agent/{agentId}/run`: the run's AG-UI stream. The client does not close it on
    /// Stop: it waits for the stop to end the run, and the stream with it.
    pub(super) async fn copilotkit_run(
        &self,
        agent: &Agent,
        principal: Principal,
        request: &Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        check_content_type(request.headers())?;
        let body = input::parse_agui_json(request.body(), &self.limits)?;
        let input = input::from_agui_value(body, &self.limits)?;
        let run = RunRequest {
            agent,
            principal,
            input,
            answer: RunAnswer::Stream(Box::new(AguiEncoder)),
            invocation_deadline,
            dialect: DIALECT,
            agkit: false,
            interrupt_stream: true,
        };
        self.answer_run(run, request).await
    }

    /// `POST /agent/{agentId}/stop/{threadId}` with `{"runId"}` or no body: asks the run to stop
    /// wherever it runs (this process, another invocation). The run closes what it had open and
    /// ends its stream, keeping its partial answer in the thread. `{"stopped": false}` when
    /// nothing runs there (CopilotKit's client ignores the answer either way).
    pub(super) async fn stop(
        &self,
        principal: &Principal,
        thread_id: &str,
        body: &[u8],
    ) -> Result<Response<ResponseBody>, ApiError> {
        let scope = copilotkit::stop_scope(body)?;
        let thread_id = path_thread(thread_id)?;
        let run_id = match scope {
            Some(run_id) => Some(run_id),
            None => self.active_run(principal, &thread_id).await?,
        };
        let stopped = match &run_id {
            None => false,
            Some(run_id) => match self.agent.cancel(principal, &thread_id, run_id).await {
                Ok(CancelState::Requested) => true,
                Ok(CancelState::Ended) | Err(StoreError::NotFound) => false,
                Err(error) => return Err(ApiError::from_store(error)),
            },
        };
        tracing::info!(%thread_id, run_id = ?run_id.as_ref().map(RunId::as_str), stopped, "stop asked");
        let body = if stopped {
            json!({"stopped": true, "threadId": thread_id, "runId": run_id})
        } else {
            let message = match &run_id {
                Some(run_id) => format!("Run '{run_id}' is not running on thread '{thread_id}'."),
                None => format!("No active run for thread '{thread_id}'."),
            };
            json!({"stopped": false, "message": message})
        };
        Ok(json_response(StatusCode::OK, Bytes::from(body.to_string())))
    }

    /// The run that holds the caller's thread now, if any; `NotFound` for a thread the caller
    /// does not have.
    async fn active_run(
        &self,
        principal: &Principal,
        thread_id: &ThreadId,
    ) -> Result<Option<RunId>, ApiError> {
        match self
            .agent
            .activity(principal, thread_id)
            .await
            .map_err(ApiError::from_store)?
        {
            ThreadActivity::Missing => Err(ApiError::Start(crate::agent::StartError::NotFound)),
            ThreadActivity::Idle { .. } => Ok(None),
            ThreadActivity::Running { run_id, .. } | ThreadActivity::Stalled { run_id, .. } => {
                Ok(Some(run_id))
            }
        }
    }

    /// `POST /agent/{agentId}/suggest`: the model answers CopilotKit's suggestion tool (the
    /// request forces it), streamed as AG-UI; nothing is stored and no thread is made.
    pub(super) async fn suggest(
        &self,
        agent: &Agent,
        principal: &Principal,
        request: &Request<Bytes>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        if !self.copilotkit.suggestions {
            return Err(ApiError::NotFound(
                "suggestions: off on this server (COPILOTKIT_SUGGESTIONS)".to_owned(),
            ));
        }
        check_content_type(request.headers())?;
        let body = input::parse_agui_json(request.body(), &self.limits)?;
        let tool = copilotkit::forced_tool(&body).ok_or_else(|| InputError::Invalid {
            field: "forwardedProps.toolChoice".to_owned(),
            message: "must name the tool the model is to call: {\"type\": \"function\", \"function\": {\"name\"}}".to_owned(),
        })?;
        let input = input::from_agui_value(body, &self.limits)?;
        let thread_id = input.thread_id.clone().unwrap_or_else(ThreadId::new_uuid);
        let run_id = input.run_id.clone();
        tracing::info!(principal = principal.as_str(), %tool, "suggestions asked");
        let events = agent.suggest(Suggestion { input, tool })?;
        let mut seq = 0;
        let batches = events.map(move |event| {
            seq += 1;
            vec![std::sync::Arc::new(RecordedEvent::new(
                seq,
                event,
                sse::now_ms(),
            ))]
        });
        let frames = stream::frames(batches, self.ping_interval, AguiEncoder);
        Ok(sse_response(frames, &thread_id, &run_id, false))
    }
}
