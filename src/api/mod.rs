//! HTTP: routing, request decoding, error responses and the two ways to serve (the Lambda
//! streaming runtime and a local HTTP server). The only module that knows `lambda_http`/hyper.

pub mod auth;
mod body;
mod dev_page;
pub mod dispatch;
mod error;
pub mod lambda;
pub mod local;
pub mod stream;
mod threads;
mod v1_agent;

pub use body::ResponseBody;
pub use error::ApiError;

use crate::agent::{Agent, RunSource};
use crate::dialects::{AguiEncoder, Encoder};
use crate::dialects::{agentscope, agkit};
use crate::protocol::{Limits, RunId, ThreadId, input, sse};
use crate::store::{CancelState, HistoryQuery, Principal, StoreError};
use crate::telemetry::TraceParent;
use auth::Authenticator;
use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use serde_json::json;
use std::time::Duration;
use tokio::time::Instant;
use tracing::Instrument;

/// Everything a request needs; built once per cold start.
pub struct App {
    agent: Agent,
    auth: Authenticator,
    cors_allowed_origins: Vec<String>,
    limits: Limits,
    ping_interval: Duration,
    run_timeout: Duration,
    deadline_margin: Duration,
    /// `DEV_UI`: `GET /` serves the dev chat page.
    dev_ui: bool,
    /// Where accepted detached runs go.
    dispatcher: dispatch::Dispatcher,
    /// Signed-URL image uploads, when a bucket is configured.
    blobs: Option<std::sync::Arc<crate::store::Blobs>>,
    /// This app, once shared: a local detached run holds it while it runs.
    this: std::sync::OnceLock<std::sync::Weak<App>>,
}

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    pub limits: Limits,
    pub ping_interval: Duration,
    pub run_timeout: Duration,
    pub deadline_margin: Duration,
    pub cors_allowed_origins: Vec<String>,
    /// `DEV_UI`: serve the dev chat page on `GET /` (and its files under `/dev/`).
    pub dev_ui: bool,
}

/// The protocol a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    AgUi,
    AgKit,
    /// AgentScope's Agent API (`/process`).
    AgentScope,
    /// `/send-message`: AG-Kit when the body names a `conversationId` and no `threadId`.
    SniffAgKit,
}

impl Dialect {
    /// The metrics' `dialect` dimension.
    fn label(self) -> &'static str {
        match self {
            Dialect::AgUi | Dialect::SniffAgKit => "ag-ui",
            Dialect::AgKit => "ag-kit",
            Dialect::AgentScope => "agentscope",
        }
    }
}

const HISTORY_PAGE_DEFAULT: usize = 100;
const HISTORY_PAGE_MAX: usize = 500;

impl App {
    pub fn new(agent: Agent, auth: Authenticator, settings: ApiSettings) -> Self {
        Self {
            agent,
            auth,
            cors_allowed_origins: settings.cors_allowed_origins,
            limits: settings.limits,
            ping_interval: settings.ping_interval,
            run_timeout: settings.run_timeout,
            deadline_margin: settings.deadline_margin,
            dev_ui: settings.dev_ui,
            dispatcher: dispatch::Dispatcher::Local,
            blobs: None,
            this: std::sync::OnceLock::new(),
        }
    }

    /// Detached runs go through `dispatcher` (the self-invocation on Lambda).
    pub fn with_dispatcher(mut self, dispatcher: dispatch::Dispatcher) -> Self {
        self.dispatcher = dispatcher;
        self
    }

    /// Image uploads through signed URLs into `blobs`' bucket.
    /// One EMF metrics record per run (`EMF_METRICS`).
    pub fn with_metrics(mut self, metrics: Option<crate::telemetry::emf::Emf>) -> Self {
        self.agent = self.agent.with_metrics(metrics);
        self
    }

    pub fn with_blobs(mut self, blobs: Option<std::sync::Arc<crate::store::Blobs>>) -> Self {
        self.agent = self.agent.with_blobs(blobs.clone());
        self.blobs = blobs;
        self
    }

    /// Lets detached local runs hold the shared app; the servers call it (and tests that drive
    /// [`lambda::handle`] themselves).
    pub fn remember_self(self: &std::sync::Arc<Self>) {
        let _ = self.this.set(std::sync::Arc::downgrade(self));
    }

    fn blobs(&self) -> Result<&std::sync::Arc<crate::store::Blobs>, ApiError> {
        self.blobs.as_ref().ok_or(ApiError::AttachmentsOff)
    }

    pub fn max_payload_bytes(&self) -> usize {
        self.limits.max_payload_bytes
    }

    pub fn describe(&self) -> String {
        let attachments = match &self.blobs {
            Some(blobs) => format!("attachments in s3://{}", blobs.bucket()),
            None => "no attachments".to_owned(),
        };
        format!(
            "{}; auth {}; {}; {}",
            self.agent.describe(),
            self.auth.mode(),
            self.dispatcher.describe(),
            attachments
        )
    }

    /// The runs in flight in this process.
    pub fn live_runs(&self) -> &std::sync::Arc<crate::agent::live::LiveRuns> {
        self.agent.live_runs()
    }

    pub fn auth_mode(&self) -> &'static str {
        self.auth.mode()
    }

    /// Answers one request. `invocation_deadline` is the Lambda deadline when there is one.
    pub async fn handle(
        &self,
        mut request: Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Response<ResponseBody> {
        request
            .extensions_mut()
            .insert(Arrival(std::time::Instant::now()));
        let xray = request.extensions().get::<TraceParent>().cloned();
        let span = crate::telemetry::trace_span!(
            "request",
            "server",
            http.request.method = %request.method(),
            url.path = request.uri().path(),
            http.response.status_code = tracing::field::Empty,
        );
        span.record("otel.name", request.method().as_str());
        crate::telemetry::otel::set_parent(&span, xray.as_ref(), request.headers());
        let trace_id = crate::telemetry::otel::trace_id(&span, xray.as_ref());
        let mut response = self
            .answer(request, invocation_deadline)
            .instrument(span.clone())
            .await;
        if !span.is_disabled() {
            span.record(
                "http.response.status_code",
                i64::from(response.status().as_u16()),
            );
            if response.status().is_server_error() {
                span.record("otel.status_code", "ERROR");
            }
        }
        if let Some(value) = trace_id.and_then(|id| HeaderValue::from_str(&id).ok()) {
            response.headers_mut().insert("x-trace-id", value);
        }
        response
    }

    async fn answer(
        &self,
        request: Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Response<ResponseBody> {
        let origin = self.allowed_origin(request.headers());
        // Refusals on /process take the AgentScope response shape; every other route the
        // AG-UI one.
        let agentscope_route = Route::parse(request.method(), request.uri().path(), self.dev_ui)
            .is_ok_and(|route| route.is_agentscope());
        let mut response = if request.method() == Method::OPTIONS {
            preflight(origin.is_some())
        } else {
            match self.route(request, invocation_deadline).await {
                Ok(response) => response,
                Err(error) => {
                    if error.status().is_server_error() {
                        tracing::error!(%error, "request failed");
                    } else {
                        tracing::info!(
                            status = error.status().as_u16(),
                            code = error.code(),
                            "request refused"
                        );
                    }
                    if agentscope_route {
                        let body =
                            agentscope::error_response_body(error.code(), &error.to_string());
                        let mut response =
                            json_response(error.status(), Bytes::from(body.to_string()));
                        refusal_headers(&mut response, &error);
                        response
                    } else {
                        error_response(&error)
                    }
                }
            }
        };
        add_cors(&mut response, origin);
        response
    }

    /// The one door for refusals made before a request reaches [`App::handle`] (a body that
    /// cannot be read, or is too large): the same JSON error, with CORS headers.
    /// `path` is the request's: the v1 agent API's route answers an oversized body in its own words.
    pub fn refusal(
        &self,
        path: &str,
        headers: &http::HeaderMap,
        error: &ApiError,
    ) -> Response<ResponseBody> {
        if matches!(
            error,
            ApiError::Input(crate::protocol::InputError::TooLarge { .. })
        ) && matches!(
            Route::parse(&Method::POST, path, self.dev_ui),
            Ok(Route::AcceptRun)
        ) {
            return self.refusal(
                "",
                headers,
                &ApiError::V1Agent(crate::dialects::v1_agent::V1AgentError::TooLarge),
            );
        }
        tracing::info!(
            status = error.status().as_u16(),
            code = error.code(),
            "request refused"
        );
        let mut response = error_response(error);
        add_cors(&mut response, self.allowed_origin(headers));
        response
    }

    /// The request's `Origin`, when the server itself answers CORS for it.
    fn allowed_origin(&self, headers: &http::HeaderMap) -> Option<HeaderValue> {
        let origin = headers.get(header::ORIGIN)?;
        let text = origin.to_str().ok()?;
        self.cors_allowed_origins
            .iter()
            .any(|allowed| allowed == "*" || allowed.eq_ignore_ascii_case(text))
            .then(|| origin.clone())
    }

    async fn route(
        &self,
        request: Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let route = Route::parse(request.method(), request.uri().path(), self.dev_ui);
        // The dev page's files are the same for everyone and hold no data: a browser opening
        // the page sends no credentials yet (the page asks for them, then sends them itself).
        if let Ok(Route::DevPage(asset)) = route {
            return Ok(dev_page::response(asset, request.headers()));
        }
        // Authentication comes before routing, so an unauthenticated caller learns nothing.
        let principal = self.auth.authenticate(
            request.headers(),
            request.extensions().get::<auth::IamCaller>(),
        )?;
        match route? {
            Route::DevPage(asset) => Ok(dev_page::response(asset, request.headers())),
            Route::Run(dialect) => {
                self.run(principal, request, invocation_deadline, dialect)
                    .await
            }
            Route::Thread(thread) => {
                self.history(&principal, &thread, request.uri().query())
                    .await
            }
            Route::RunEvents { thread, run } => {
                self.run_events(&principal, &thread, &run, &request, invocation_deadline)
                    .await
            }
            Route::CancelRun { thread, run } => self.cancel_run(&principal, &thread, &run).await,
            Route::Capabilities => Ok(json_response(
                StatusCode::OK,
                Bytes::from(self.agent.capabilities(self.run_timeout).to_string()),
            )),
            Route::ListThreads => self.list_threads(&principal, request.uri().query()).await,
            Route::RenameThread(thread) => {
                self.rename_thread(&principal, &thread, request.headers(), request.body())
                    .await
            }
            Route::DeleteThread(thread) => self.delete_thread(&principal, &thread).await,
            Route::ForkThread(thread) => {
                self.fork_thread(&principal, &thread, request.headers(), request.body())
                    .await
            }
            Route::Usage => self.usage(&principal, request.uri().query()).await,
            Route::AcceptRun => {
                self.accept_run(principal, request.headers(), request.body())
                    .await
            }
            Route::TaskEvents(run) => {
                self.task_events(&principal, &run, &request, invocation_deadline)
                    .await
            }
            Route::HistoryDay => self.history_day(&principal, request.uri().query()).await,
            Route::CreateUpload => {
                self.create_upload(&principal, request.headers(), request.body())
                    .await
            }
        }
    }

    async fn run(
        &self,
        principal: Principal,
        request: Request<Bytes>,
        invocation_deadline: Option<Instant>,
        dialect: Dialect,
    ) -> Result<Response<ResponseBody>, ApiError> {
        check_content_type(request.headers())?;
        let body = input::parse_json(request.body(), &self.limits)?;
        let dialect = match dialect {
            Dialect::SniffAgKit if agkit::is_agkit_body(&body) => Dialect::AgKit,
            Dialect::SniffAgKit => Dialect::AgUi,
            other => other,
        };
        let mut buffered = None;
        let (input, encoder): (_, Box<dyn Encoder>) = match dialect {
            Dialect::AgKit => (
                agkit::from_json(body, &self.limits)?,
                Box::new(agkit::AgKitEncoder),
            ),
            Dialect::AgentScope => {
                let request = agentscope::from_json(body, &self.limits)?;
                let encoder = agentscope::AgentScopeEncoder::for_request(&request);
                if request.stream {
                    (request.input, Box::new(encoder))
                } else {
                    buffered = Some(encoder);
                    (request.input, Box::new(AguiEncoder))
                }
            }
            Dialect::AgUi | Dialect::SniffAgKit => (
                input::from_value(body, &self.limits)?,
                Box::new(AguiEncoder),
            ),
        };
        let deadline = self.run_deadline(invocation_deadline);
        let received = request
            .extensions()
            .get::<Arrival>()
            .map_or_else(std::time::Instant::now, |arrival| arrival.0);
        let mut run = match self.agent.start(principal, input, deadline).await {
            Ok(run) => run,
            // AG-UI's interrupt rules name RUN_ERROR for these: a stream that opens with it.
            Err(crate::agent::StartError::Interrupt(error))
                if dialect != Dialect::AgentScope && dialect != Dialect::AgKit =>
            {
                tracing::info!(code = ?error.code(), %error, "run refused by the interrupt rules");
                let refusal = crate::protocol::Event::RunError {
                    message: error.to_string(),
                    code: error.code(),
                    usage: Default::default(),
                };
                let frame = sse::encode_event(&refusal, sse::now_ms());
                let mut response =
                    Response::new(ResponseBody::stream(futures_util::stream::iter([frame])));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(sse::CONTENT_TYPE),
                );
                return Ok(response);
            }
            Err(error) => return Err(error.into()),
        };
        run.observe(crate::agent::Observed {
            received,
            dialect: dialect.label(),
        });
        let thread_id = run.thread_id().clone();
        let run_id = run.run_id().clone();
        if let Some(mut encoder) = buffered {
            // `stream: false`: the whole run, then the completed response object.
            let mut events = Box::pin(run.into_events());
            while let Some(event) = events.next().await {
                encoder.encode(&event);
            }
            let mut response =
                json_response(StatusCode::OK, Bytes::from(encoder.response().to_string()));
            if let Ok(value) = HeaderValue::from_str(thread_id.as_str()) {
                response.headers_mut().insert("x-thread-id", value);
            }
            return Ok(response);
        }
        // The run goes on by itself; this response is only its first follower.
        let frames = stream::frames(run.into_batches(), self.ping_interval, encoder);
        Ok(sse_response(
            frames,
            &thread_id,
            &run_id,
            dialect == Dialect::AgKit,
        ))
    }

    fn run_deadline(&self, invocation_deadline: Option<Instant>) -> Instant {
        let own = Instant::now() + self.run_timeout;
        match invocation_deadline {
            Some(lambda) => own.min(lambda.checked_sub(self.deadline_margin).unwrap_or(lambda)),
            None => own,
        }
    }

    async fn history(
        &self,
        principal: &Principal,
        thread_id: &str,
        query: Option<&str>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let thread_id = threads::path_thread(thread_id)?;
        let mut after = None;
        let mut limit = HISTORY_PAGE_DEFAULT;
        for (key, value) in query_pairs(query) {
            match key.as_ref() {
                "after" => after = Some(value.into_owned()),
                "limit" => limit = page_limit(&value, HISTORY_PAGE_MAX)?,
                _ => {}
            }
        }
        let page = self
            .agent
            .store()
            .history(HistoryQuery {
                owner: principal,
                thread_id: &thread_id,
                after: after.as_deref(),
                limit,
            })
            .await
            .map_err(ApiError::from_store)?;
        let mut body = json!({
            "threadId": thread_id,
            "messages": page.messages,
            "state": page.state,
            "title": page.title,
            "activeRunId": page.active_run,
        });
        if let Some(next) = page.next {
            body["next"] = json!(next);
        }
        Ok(json_response(StatusCode::OK, Bytes::from(body.to_string())))
    }

    /// `GET /threads/{threadId}/runs/{runId}/events`: the run's events after `Last-Event-ID`
    /// (or `?after=`), then live until its terminal event.
    async fn run_events(
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
        let source = self
            .agent
            .run_source(principal, &thread_id, &run_id)
            .await
            .map_err(ApiError::from_store)?
            .ok_or(ApiError::RunNotFound)?;
        let batches = match source {
            RunSource::Live(run) => {
                run.note_rejoin();
                run.follow(after).boxed()
            }
            RunSource::Stored { run, active } => {
                let first = self
                    .agent
                    .store()
                    .read_events(&run, None)
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
                    self.run_deadline(invocation_deadline),
                )
                .boxed()
            }
        };
        Ok(sse_response(
            stream::frames(batches, self.ping_interval, AguiEncoder),
            &thread_id,
            &run_id,
            false,
        ))
    }

    /// `POST /threads/{threadId}/runs/{runId}/cancel`.
    async fn cancel_run(
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

/// Ids in a run path; a malformed one names no run.
fn parse_run_ids(thread_id: &str, run_id: &str) -> Result<(ThreadId, RunId), ApiError> {
    let max = crate::protocol::ids::MAX_ID_LEN;
    match (ThreadId::parse(thread_id, max), RunId::parse(run_id, max)) {
        (Ok(thread_id), Ok(run_id)) => Ok((thread_id, run_id)),
        _ => Err(ApiError::RunNotFound),
    }
}

/// A page size from a `limit` query parameter: 1 to `max`.
fn page_limit(value: &str, max: usize) -> Result<usize, ApiError> {
    value
        .parse::<usize>()
        .ok()
        .filter(|limit| (1..=max).contains(limit))
        .ok_or_else(|| ApiError::BadQuery(format!("limit must be 1 to {max}")))
}

/// A query string's pairs, percent-decoded.
fn query_pairs(
    query: Option<&str>,
) -> impl Iterator<Item = (std::borrow::Cow<'_, str>, std::borrow::Cow<'_, str>)> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
}

/// An SSE response with the run's ids in headers.
fn sse_response(
    frames: impl futures_util::Stream<Item = Bytes> + Send + 'static,
    thread_id: &ThreadId,
    run_id: &RunId,
    agkit: bool,
) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::stream(frames));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(sse::CONTENT_TYPE),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(thread_id.as_str()) {
        if agkit {
            headers.insert("x-conversation-id", value.clone());
        }
        headers.insert("x-thread-id", value);
    }
    if let Ok(value) = HeaderValue::from_str(run_id.as_str()) {
        headers.insert("x-run-id", value);
    }
    response
}

/// Every route, parsed once from the method and the normalised path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    Run(Dialect),
    /// `GET /` and `GET /dev/{file}`: the dev chat page, when `DEV_UI` is on.
    DevPage(dev_page::Asset),
    /// `GET /threads/{threadId}`
    Thread(String),
    /// `GET /threads/{threadId}/runs/{runId}/events`
    RunEvents {
        thread: String,
        run: String,
    },
    /// `POST /threads/{threadId}/runs/{runId}/cancel`
    CancelRun {
        thread: String,
        run: String,
    },
    /// `GET /capabilities`: AG-UI's `AgentCapabilities` for this deployment.
    Capabilities,
    /// `GET /threads`: the caller's threads, newest first.
    ListThreads,
    /// `PATCH /threads/{threadId}`
    RenameThread(String),
    /// `DELETE /threads/{threadId}`
    DeleteThread(String),
    /// `POST /threads/{threadId}/fork`
    ForkThread(String),
    /// `GET /usage`: the caller's token usage by day and model.
    Usage,
    /// `POST /api/v1/agent/runs`: the v1 agent API's detached run.
    AcceptRun,
    /// `GET /api/v1/agent/runs/{runId}/events`
    TaskEvents(String),
    /// `GET /api/v1/agent/history`: the v1 agent API's history by day.
    HistoryDay,
    /// `POST /api/v1/agent/attachments`: a signed upload URL for an image.
    CreateUpload,
}

impl Route {
    /// `dev_ui` adds the dev page's routes; without it `GET /` is the 405 of a run path and
    /// `/dev/…` is 404, as before the page existed.
    fn parse(method: &Method, path: &str, dev_ui: bool) -> Result<Self, ApiError> {
        let path = normalise_path(path);
        let segments: Vec<&str> = path.split('/').skip(1).collect();
        let owned = |segment: &&str| (*segment).to_owned();
        // Each path's routes by method; a path with none is 404, a method not listed 405.
        let mut routes: Vec<(Method, Route)> = match segments.as_slice() {
            [""] | ["agent"] => vec![(Method::POST, Route::Run(Dialect::AgUi))],
            ["send-message"] => vec![(Method::POST, Route::Run(Dialect::SniffAgKit))],
            ["ag-kit", "send-message"] => vec![(Method::POST, Route::Run(Dialect::AgKit))],
            ["process"] => vec![(Method::POST, Route::Run(Dialect::AgentScope))],
            ["capabilities"] => vec![(Method::GET, Route::Capabilities)],
            ["usage"] => vec![(Method::GET, Route::Usage)],
            ["threads"] => vec![(Method::GET, Route::ListThreads)],
            ["threads", thread] => vec![
                (Method::GET, Route::Thread(owned(thread))),
                (Method::PATCH, Route::RenameThread(owned(thread))),
                (Method::DELETE, Route::DeleteThread(owned(thread))),
            ],
            ["threads", thread, "fork"] => vec![(Method::POST, Route::ForkThread(owned(thread)))],
            ["api", "v1", "agent", "runs"] => vec![(Method::POST, Route::AcceptRun)],
            ["api", "v1", "agent", "runs", run, "events"] => {
                vec![(Method::GET, Route::TaskEvents(owned(run)))]
            }
            ["api", "v1", "agent", "history"] => vec![(Method::GET, Route::HistoryDay)],
            ["api", "v1", "agent", "attachments"] => vec![(Method::POST, Route::CreateUpload)],
            ["threads", thread, "runs", run, "events"] => vec![(
                Method::GET,
                Route::RunEvents {
                    thread: owned(thread),
                    run: owned(run),
                },
            )],
            ["threads", thread, "runs", run, "cancel"] => vec![(
                Method::POST,
                Route::CancelRun {
                    thread: owned(thread),
                    run: owned(run),
                },
            )],
            _ => vec![],
        };
        if let Some(asset) = dev_ui
            .then(|| dev_page::Asset::from_segments(&segments))
            .flatten()
        {
            routes.push((Method::GET, Route::DevPage(asset)));
        }
        if routes.is_empty() {
            return Err(ApiError::NotFound(path));
        }
        routes
            .into_iter()
            .find(|(allowed, _)| allowed == method)
            .map(|(_, route)| route)
            .ok_or(ApiError::MethodNotAllowed)
    }

    fn is_agentscope(&self) -> bool {
        matches!(self, Route::Run(Dialect::AgentScope))
    }
}

/// When the request arrived: a run's time to first byte and token count from it.
#[derive(Debug, Clone, Copy)]
struct Arrival(std::time::Instant);

fn add_cors(response: &mut Response<ResponseBody>, origin: Option<HeaderValue>) {
    if let Some(origin) = origin {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("x-thread-id, x-run-id, x-trace-id, retry-after"),
        );
        headers.append(header::VARY, HeaderValue::from_static("origin"));
    }
}

pub(crate) fn error_response(error: &ApiError) -> Response<ResponseBody> {
    let mut response = json_response(error.status(), error.body());
    refusal_headers(&mut response, error);
    response
}

/// The headers a refusal carries whatever its body's shape.
fn refusal_headers(response: &mut Response<ResponseBody>, error: &ApiError) {
    if matches!(error, ApiError::Unauthorized(_)) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if let Some(secs) = error.retry_after_secs() {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
}

fn preflight(allowed: bool) -> Response<ResponseBody> {
    if !allowed {
        let error = ApiError::NotFound("OPTIONS".to_owned());
        return error_response(&error);
    }
    let mut response = Response::new(ResponseBody::full(Bytes::new()));
    *response.status_mut() = StatusCode::NO_CONTENT;
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, PATCH, DELETE, OPTIONS"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, accept, last-event-id"),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    response
}

fn json_response(status: StatusCode, body: Bytes) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// JSON bodies arrive as `application/json` (HttpAgent), without a type, or as `text/plain`
/// (browser `fetch` with a string body). Form and multipart bodies are a client mistake.
fn check_content_type(headers: &http::HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let accepted = essence.is_empty()
        || essence == "application/json"
        || essence.ends_with("+json")
        || essence == "text/plain";
    if accepted {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType)
    }
}

/// `cargo lambda watch` and some proxies leave a prefix such as `/lambda-url/<function>`; a
/// trailing slash is not a different route.
fn normalise_path(path: &str) -> String {
    let path = match path.strip_prefix("/lambda-url/") {
        Some(rest) => rest.find('/').map_or("/", |slash| &rest[slash..]),
        None => path,
    };
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        "/".to_owned()
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalise() {
        assert_eq!(normalise_path("/"), "/");
        assert_eq!(normalise_path("/agent/"), "/agent");
        assert_eq!(normalise_path("/lambda-url/agui-lambda/agent"), "/agent");
        assert_eq!(normalise_path("/lambda-url/agui-lambda"), "/");
        assert_eq!(normalise_path("/lambda-url/agui-lambda/"), "/");
    }

    #[test]
    fn the_dev_page_is_routed_only_when_on() {
        let get = |path: &str, dev_ui: bool| Route::parse(&Method::GET, path, dev_ui);
        assert_eq!(
            get("/", true).ok(),
            Some(Route::DevPage(dev_page::Asset::Index))
        );
        assert_eq!(
            get("/lambda-url/agui-lambda/dev/app.js", true).ok(),
            Some(Route::DevPage(dev_page::Asset::App))
        );
        assert_eq!(
            Route::parse(&Method::POST, "/", true).ok(),
            Some(Route::Run(Dialect::AgUi))
        );
        // GET /agent stays what it was, on or off.
        assert!(matches!(
            get("/agent", true),
            Err(ApiError::MethodNotAllowed)
        ));
        assert!(matches!(get("/", false), Err(ApiError::MethodNotAllowed)));
        assert!(matches!(
            get("/dev/app.js", false),
            Err(ApiError::NotFound(_))
        ));
        assert!(matches!(
            get("/dev/nope.js", true),
            Err(ApiError::NotFound(_))
        ));
    }

    #[test]
    fn content_types() {
        let mut headers = http::HeaderMap::new();
        assert!(check_content_type(&headers).is_ok());
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "text/plain;charset=UTF-8",
        ] {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(ok));
            assert!(check_content_type(&headers).is_ok(), "{ok}");
        }
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        assert!(matches!(
            check_content_type(&headers),
            Err(ApiError::UnsupportedMediaType)
        ));
    }
}
