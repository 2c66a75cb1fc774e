//! The v1 agent API routes under `/api/v1/agent`: detached runs answered with
//! `TaskAcceptedResponse` and followed by run id, the History API by day, and signed-URL image
//! uploads. Their strict input rules and exact messages apply to these routes only.

use super::app::App;
use super::body::ResponseBody;
use super::dispatch::DetachedRequest;
use super::error::ApiError;
use super::request::{check_content_type, query_pairs};
use super::response::{json_response, sse_response};
use crate::agent::detached::DetachedStart;
use crate::agent::{RunSource, StartError};
use crate::auth::Principal;
use crate::dialects::v1_agent::{self, HistorySnapshot, TaskAccepted, V1AgentError, msg};
use crate::protocol::{RunId, ThreadId, sse};
use crate::store::TaskState;
use bytes::Bytes;
use http::{Response, StatusCode};
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;
use tokio::time::Instant;

/// How long the events route waits for an accepted run to start before following it.
const START_WAIT: Duration = Duration::from_secs(30);
/// How long a started run's thread may be missing before the run counts as deleted with it.
const THREAD_WAIT: Duration = Duration::from_secs(2);

/// `POST /api/v1/agent/attachments`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UploadRequest {
    #[serde(rename = "mimeType", alias = "mime_type")]
    mime_type: String,
    #[serde(alias = "sizeBytes", alias = "size_bytes")]
    size: u64,
}

impl App {
    /// `POST /api/v1/agent/runs`: checks, admits and hands the run off; answers at once.
    pub(super) async fn accept_run(
        &self,
        principal: Principal,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<Response<ResponseBody>, ApiError> {
        check_content_type(headers)?;
        let request = v1_agent::parse_run_request(body, &self.limits)?;
        let agent = self.agent.profile(&request.agent_type).map_err(|_| {
            ApiError::V1Agent(V1AgentError::Invalid(
                msg::INVALID_FORWARDED_PROPS.to_owned(),
            ))
        })?;
        agent.check_client_tools(&request.input.tools)?;
        let mut attachments = Vec::with_capacity(request.attachments.len());
        let mut input = request.input;
        for at in &request.attachments {
            let path = self.resolve_attachment(&principal, &at.url).await?;
            v1_agent::set_attachment_url(&mut input, at, path.clone());
            attachments.push((at.message, at.part, path));
        }
        // The contract requires a UUID threadId, so the parser always gives one.
        let thread_id = input.thread_id.clone().ok_or_else(|| {
            ApiError::V1Agent(V1AgentError::Invalid(msg::THREAD_ID_NOT_UUID.to_owned()))
        })?;
        let run_id = input.run_id.clone();
        let admission = agent
            .admit_detached(&principal, &thread_id, &run_id)
            .await?;
        let accepted = TaskAccepted {
            task_id: run_id.to_string(),
            thread_id: thread_id.clone(),
            run_id: run_id.clone(),
            created: admission.created,
        };
        let detached = DetachedRequest {
            principal: principal.as_str().to_owned(),
            run_id: run_id.to_string(),
            agent_type: request.agent_type,
            body: String::from_utf8_lossy(body).into_owned(),
            attachments,
            admission: admission.clone(),
        };
        if let Err(error) = self.dispatch(detached).await {
            tracing::error!(%run_id, %error, "handing a detached run off failed");
            let error = StartError::Dispatch(error);
            agent
                .abandon_detached(&principal, &run_id, &admission, &error)
                .await;
            return Err(error.into());
        }
        tracing::info!(%thread_id, %run_id, created = admission.created, "detached run accepted");
        let mut response = json_response(
            StatusCode::ACCEPTED,
            Bytes::from(serde_json::to_vec(&accepted).unwrap_or_default()),
        );
        if let Ok(value) = http::HeaderValue::from_str(thread_id.as_str()) {
            response.headers_mut().insert("x-thread-id", value);
        }
        if let Ok(value) = http::HeaderValue::from_str(run_id.as_str()) {
            response.headers_mut().insert("x-run-id", value);
        }
        Ok(response)
    }

    /// Runs an accepted run where it was delivered (a task here, or the self-invocation on
    /// Lambda); returns when it has started, or failed to.
    pub(crate) async fn execute_detached(
        &self,
        request: DetachedRequest,
        invocation_deadline: Option<Instant>,
    ) -> DetachedStart {
        let principal = Principal::new(request.principal.clone());
        let parsed =
            v1_agent::parse_run_request(request.body.as_bytes(), &self.limits).map_err(|error| {
                StartError::Dispatch(format!("the accepted body no longer parses: {error}"))
            });
        let agent = self
            .agent
            .profile(&request.agent_type)
            .map_err(|error| StartError::Dispatch(format!("the agent profile is gone: {error}")));
        let (parsed, agent) = match (parsed, agent) {
            (Ok(parsed), Ok(agent)) => (parsed, agent),
            (Err(error), _) | (_, Err(error)) => {
                // Nothing else can record it: the run id is all that is known for sure.
                if let Ok(run_id) = RunId::parse(&request.run_id, crate::protocol::ids::MAX_ID_LEN)
                {
                    self.agent
                        .abandon_detached(&principal, &run_id, &request.admission, &error)
                        .await;
                }
                return DetachedStart::Failed;
            }
        };
        let mut input = parsed.input;
        // A detached run never interrupts another: admission refused a busy thread, and one
        // that became busy since makes this run fail (recorded) rather than stop that one.
        input.forwarded_props.busy_thread_policy =
            Some(crate::protocol::input::BusyThreadPolicy::Reject);
        for (at, (message, part, path)) in parsed.attachments.iter().zip(&request.attachments) {
            if at.message == *message && at.part == *part {
                v1_agent::set_attachment_url(&mut input, at, path.clone());
            }
        }
        let deadline = self.run_deadline();
        let ends = self.invocation_end(invocation_deadline);
        agent
            .start_detached(principal, input, &request.admission, deadline, ends)
            .await
    }

    /// `GET /api/v1/agent/runs/{runId}/events`: the run's events, found by its id alone among
    /// the caller's runs; a run that failed to start shows `RUN_STARTED` then its `RUN_ERROR`.
    pub(super) async fn task_events(
        &self,
        principal: &Principal,
        run_id: &str,
        request: &http::Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let run_id = RunId::parse(run_id, crate::protocol::ids::MAX_ID_LEN)
            .map_err(|_| ApiError::RunNotFound)?;
        let give_up = Instant::now() + START_WAIT;
        let mut pause = Duration::from_millis(25);
        let mut missing_since = None;
        loop {
            let task = self
                .agent
                .task(principal, &run_id)
                .await
                .map_err(ApiError::from_store)?
                .ok_or(ApiError::RunNotFound)?;
            match task.state {
                TaskState::Failed { code, message } => {
                    return Ok(failed_task_response(
                        &task.thread_id,
                        &run_id,
                        &code,
                        &message,
                    ));
                }
                TaskState::Accepted if Instant::now() < give_up => {}
                TaskState::Accepted => {
                    return Err(ApiError::Start(StartError::Dispatch(
                        "the run has not started yet; follow it again later".into(),
                    )));
                }
                TaskState::Started => {
                    let visible = self
                        .started_run_visible(
                            principal,
                            &task.thread_id,
                            &run_id,
                            task.created_thread,
                            &mut missing_since,
                        )
                        .await?;
                    if visible || Instant::now() >= give_up {
                        return self
                            .run_events(
                                principal,
                                task.thread_id.as_str(),
                                run_id.as_str(),
                                request,
                                invocation_deadline,
                            )
                            .await;
                    }
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }

    /// Whether a started run can be followed yet: between the claim and the lease it is neither
    /// live nor recorded. `missing_since` is when its thread was first found missing.
    async fn started_run_visible(
        &self,
        principal: &Principal,
        thread_id: &ThreadId,
        run_id: &RunId,
        created_thread: bool,
        missing_since: &mut Option<Instant>,
    ) -> Result<bool, ApiError> {
        let source = self
            .agent
            .run_source(principal, thread_id, run_id)
            .await
            .map_err(ApiError::from_store)?;
        Ok(match &source {
            Some(RunSource::Live(_)) | Some(RunSource::Stored { active: true, .. }) => true,
            Some(RunSource::Stored { run, .. }) => self
                .agent
                .run_events(run, None)
                .await
                .map_err(ApiError::from_store)?
                .next
                .is_some(),
            // A started run takes its thread within moments (it never waits for another run); a
            // thread that stays missing, or that existed when the run was accepted, was deleted.
            None => {
                let missing = *missing_since.get_or_insert_with(Instant::now);
                if !created_thread || missing.elapsed() > THREAD_WAIT {
                    return Err(ApiError::RunNotFound);
                }
                false
            }
        })
    }

    /// `GET /api/v1/agent/history?threadId=&before=&client_time=`.
    pub(super) async fn history_day(
        &self,
        principal: &Principal,
        query: Option<&str>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let HistoryDayQuery { thread, before, tz } = history_day_query(query)?;
        let thread = match thread {
            Some(thread) => Some(thread),
            None => self
                .agent
                .list_threads(principal, 1, None)
                .await
                .map_err(ApiError::from_store)?
                .threads
                .into_iter()
                .next()
                .map(|summary| summary.thread_id),
        };
        let Some(thread) = thread else {
            let empty = HistorySnapshot::empty(None);
            return Ok(json_response(
                StatusCode::OK,
                Bytes::from(serde_json::to_vec(&empty).unwrap_or_default()),
            ));
        };
        let slice = self
            .agent
            .history_day(principal, &thread, before, tz)
            .await
            .map_err(ApiError::from_store)?;
        let mut messages = Vec::with_capacity(slice.messages.len());
        for timed in &slice.messages {
            let Some(mut message) =
                v1_agent::history_message(timed.seq + 1, timed.at_ms, &timed.message)
            else {
                continue;
            };
            for url in message.attachment_urls_mut() {
                *url = self.signed_read_url(url).await?;
            }
            messages.push(message);
        }
        let snapshot = HistorySnapshot::new(Some(thread), slice.day, slice.has_more, messages);
        Ok(json_response(
            StatusCode::OK,
            Bytes::from(serde_json::to_vec(&snapshot).unwrap_or_default()),
        ))
    }

    /// `POST /api/v1/agent/attachments`: a presigned upload for one image of the caller's.
    pub(super) async fn create_upload(
        &self,
        principal: &Principal,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<Response<ResponseBody>, ApiError> {
        let request: UploadRequest = super::threads::typed_body(self, headers, body)?;
        let blobs = self.blobs()?;
        let upload = blobs
            .presign_upload(principal, &request.mime_type, request.size)
            .await
            .map_err(ApiError::Attachment)?;
        let headers: serde_json::Map<String, serde_json::Value> = upload
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), json!(value)))
            .collect();
        let body = json!({
            "uploadUrl": upload.upload_url,
            "method": upload.method,
            "headers": headers,
            "url": upload.url,
            "mimeType": request.mime_type,
            "maxBytes": upload.max_bytes,
            "expiresAt": chrono::DateTime::from_timestamp_millis(upload.expires_at_ms)
                .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        });
        Ok(json_response(
            StatusCode::CREATED,
            Bytes::from(body.to_string()),
        ))
    }

    /// A binary part's url, checked to be one this server signed for `principal`, as the
    /// internal path stored with the message.
    async fn resolve_attachment(
        &self,
        principal: &Principal,
        url: &str,
    ) -> Result<String, ApiError> {
        let Ok(blobs) = self.blobs() else {
            return Err(ApiError::V1Agent(V1AgentError::Invalid(
                msg::UNSIGNED_URL.to_owned(),
            )));
        };
        use crate::store::BlobError;
        let refuse = |message: &str| ApiError::V1Agent(V1AgentError::Invalid(message.to_owned()));
        let stored = blobs
            .resolve(principal, url)
            .await
            .map_err(|error| match error {
                BlobError::Unavailable(_) => ApiError::Attachment(error),
                BlobError::BadType(_) => refuse("binary content requires image mimeType"),
                BlobError::TooLarge { .. } => refuse(msg::ATTACHMENT_TOO_LARGE),
                BlobError::Empty => refuse(msg::ATTACHMENT_EMPTY),
                _ => refuse(msg::UNSIGNED_URL),
            })?;
        Ok(blobs.internal_path(&stored.key))
    }

    /// A stored attachment path as a fresh signed URL; other URLs as they are.
    async fn signed_read_url(&self, url: &str) -> Result<String, ApiError> {
        let Ok(blobs) = self.blobs() else {
            return Ok(url.to_owned());
        };
        match blobs.key_of_internal(url) {
            Some(key) => blobs.presign_get(key).await.map_err(ApiError::Attachment),
            None => Ok(url.to_owned()),
        }
    }
}

/// The stream of a detached run that failed before it started: what a follower of a run
/// that failed at once would have seen.
fn failed_task_response(
    thread_id: &ThreadId,
    run_id: &RunId,
    code: &str,
    message: &str,
) -> Response<ResponseBody> {
    let now = sse::now_ms();
    let started =
        json!({"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id, "timestamp": now});
    let error = json!({"type": "RUN_ERROR", "message": message, "code": code, "timestamp": now});
    let frames = [started, error]
        .into_iter()
        .map(|event| Bytes::from(format!("data: {event}\n\n")));
    sse_response(futures_util::stream::iter(frames), thread_id, run_id, false)
}

/// `GET /api/v1/agent/history`'s query: the thread (else the caller's latest), the day before
/// which to look (else today) and the caller's time zone (else UTC).
struct HistoryDayQuery {
    thread: Option<ThreadId>,
    before: Option<chrono::NaiveDate>,
    tz: chrono_tz::Tz,
}

fn history_day_query(query: Option<&str>) -> Result<HistoryDayQuery, ApiError> {
    let mut parsed = HistoryDayQuery {
        thread: None,
        before: None,
        tz: chrono_tz::UTC,
    };
    for (key, value) in query_pairs(query) {
        match key.as_ref() {
            "threadId" | "thread_id" => {
                parsed.thread = Some(
                    ThreadId::parse(value.as_ref(), crate::protocol::ids::MAX_ID_LEN)
                        .map_err(|_| ApiError::Start(StartError::NotFound))?,
                );
            }
            "before" => {
                parsed.before = Some(
                    chrono::NaiveDate::parse_from_str(&value, "%Y-%m-%d").map_err(|_| {
                        ApiError::BadQuery("before must be a date as YYYY-MM-DD".into())
                    })?,
                );
            }
            "client_time" | "clientTime" => {
                let value: serde_json::Value = serde_json::from_str(&value)
                    .map_err(|_| ApiError::BadQuery("client_time must be a JSON object".into()))?;
                parsed.tz = v1_agent::parse_client_time(&value)
                    .map_err(|error| ApiError::BadQuery(error.to_string()))?
                    .device_timezone;
            }
            _ => {}
        }
    }
    Ok(parsed)
}
