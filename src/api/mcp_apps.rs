//! MCP Apps' way back: an app view's requests, from CopilotKit (a run whose
//! `forwardedProps.__proxiedMCPRequest` names one, on any AG-UI run route) and from assistant-ui
//! (`POST /threads/{threadId}/mcp-apps`, `{method, params}`). Each is answered by the MCP
//! servers' host after one read that the thread is the caller's: no model, no lease, no write,
//! so a busy thread never refuses it.

use super::app::App;
use super::body::ResponseBody;
use super::error::ApiError;
use super::request::check_content_type;
use super::response::json_response;
use super::response::sse_response;
use super::threads::invalid;
use super::threads::path_thread;
use crate::agent::StartError;
use crate::auth::Principal;
use crate::genui::mcp_apps::{self, Answer, AppCall, AppRequest};
use crate::protocol::events::RecordedEvent;
use crate::protocol::version;
use crate::protocol::{Event, RunInput, ThreadId, input, sse};
use crate::store::ThreadActivity;
use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::Value;

impl App {
    /// `POST /threads/{threadId}/mcp-apps`: the MCP result as JSON (refusals and failures as
    /// error results, `isError`); a view's HTML (`mcp-apps/read-resource`) as
    /// `{uri, mimeType, html, meta?}`, or a 422/502 saying why there is none.
    pub(super) async fn mcp_apps(
        &self,
        principal: &Principal,
        thread: &str,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<Response<ResponseBody>, ApiError> {
        check_content_type(headers)?;
        let body = input::parse_json(body, &self.limits)?;
        self.check_thread(principal, &path_thread(thread)?).await?;
        let request = AppRequest::from_route_body(&body);
        let loads_view = matches!(
            request,
            Ok(AppRequest {
                call: AppCall::LoadView { .. },
                ..
            })
        );
        let answer = match &request {
            Ok(request) => self.answer_view(request).await,
            Err(refusal) => Answer::Refused(refusal.to_string()),
        };
        let result = match (loads_view, answer) {
            (true, Answer::Refused(message)) => {
                return Err(ApiError::McpView {
                    refused: true,
                    message,
                });
            }
            (true, Answer::Failed(message)) => {
                return Err(ApiError::McpView {
                    refused: false,
                    message,
                });
            }
            (_, answer) => answer.into_result(),
        };
        Ok(json_response(
            StatusCode::OK,
            Bytes::from(result.to_string()),
        ))
    }

    /// CopilotKit's proxied request (a run whose `forwardedProps.__proxiedMCPRequest` names
    /// it): `RUN_STARTED`, then `RUN_FINISHED` whose `result` is the MCP result. The run's
    /// messages are left as they are and nothing is stored.
    pub(super) async fn proxied_view_request(
        &self,
        principal: &Principal,
        input: &RunInput,
        request: &Value,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let thread_id = input
            .thread_id
            .clone()
            .ok_or_else(|| invalid("threadId", "a view's request names the thread it shows in"))?;
        let run_id = input.run_id.clone();
        self.check_thread(principal, &thread_id).await?;
        let result = match AppRequest::from_proxied(request) {
            Ok(request) => self.answer_view(&request).await.into_result(),
            Err(refusal) => mcp_apps::error_result(&refusal.to_string()),
        };
        let declared = input.declared();
        let now = sse::now_ms();
        let frames = [
            Event::RunStarted {
                thread_id: thread_id.clone(),
                run_id: run_id.clone(),
                parent_run_id: None,
                protocol_version: Some(version::declaration(
                    declared.takes_1_0(),
                    declared.takes_1_1(),
                )),
                metadata: None,
            },
            Event::RunFinished {
                thread_id: thread_id.clone(),
                run_id: run_id.clone(),
                outcome: None,
                usage: Default::default(),
                result: Some(result),
            },
        ]
        .into_iter()
        .zip(1..)
        // Each with its place, as every run's events are (nothing is recorded to resume from).
        .map(|(event, seq)| sse::encode_recorded(&RecordedEvent::new(seq, event, now)))
        .collect::<Vec<_>>();
        Ok(sse_response(
            futures_util::stream::iter(frames),
            &thread_id,
            &run_id,
            false,
        ))
    }

    /// What the MCP servers' host answers, or a refusal when no server has views.
    pub(super) async fn answer_view(&self, request: &AppRequest) -> Answer {
        match &self.views {
            Some(views) => views.answer(request).await,
            None => Answer::Refused("no MCP server with views is listed here".to_owned()),
        }
    }

    /// The one read a view's request costs: the thread exists and is the caller's (404
    /// otherwise, as for every thread route).
    pub(super) async fn check_thread(
        &self,
        principal: &Principal,
        thread_id: &ThreadId,
    ) -> Result<(), ApiError> {
        match self
            .agent
            .activity(principal, thread_id)
            .await
            .map_err(ApiError::from_store)?
        {
            ThreadActivity::Missing => Err(ApiError::Start(StartError::NotFound)),
            ThreadActivity::Idle { .. }
            | ThreadActivity::Running { .. }
            | ThreadActivity::Stalled { .. } => Ok(()),
        }
    }
}
