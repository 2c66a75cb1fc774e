//! The application: everything a request needs, built once per cold start, and the door every
//! request goes through (its span, CORS, and refusals in the shape of the route they refuse).

use super::body::ResponseBody;
use super::dev_page;
use super::dispatch::{DetachedRequest, Dispatcher};
use super::error::ApiError;
use super::response::{add_cors, error_response, json_response, preflight, refusal_headers};
use super::routes::{Dialect, Optional, Route};
use crate::agent::Agent;
use crate::auth::{self, Authenticator};
use crate::dialects::agentscope;
use crate::protocol::{InputError, Limits};
use crate::telemetry::TraceParent;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use std::time::Duration;
use tokio::time::Instant;
use tracing::Instrument;

/// Everything a request needs; built once per cold start.
pub struct App {
    pub(super) agent: Agent,
    pub(super) auth: Authenticator,
    cors_allowed_origins: Vec<String>,
    pub(super) limits: Limits,
    pub(super) ping_interval: Duration,
    /// `RUN_MAX_SECS`.
    pub(super) run_max: Duration,
    /// `STREAM_MAX_SECS`.
    pub(super) stream_max: Option<Duration>,
    pub(super) deadline_margin: Duration,
    /// The routes settings turn on: the dev page, AgentCore Runtime's.
    routes: Optional,
    /// Set once the server is stopping: no new run starts.
    pub(super) draining: std::sync::atomic::AtomicBool,
    /// Where accepted detached runs go.
    dispatcher: Dispatcher,
    /// Signed-URL image uploads, when a bucket is configured.
    blobs: Option<std::sync::Arc<crate::store::Blobs>>,
    /// This app, once shared: a local detached run holds it while it runs.
    this: std::sync::OnceLock<std::sync::Weak<App>>,
    /// `A2A_PUBLIC_URL`: where A2A clients reach this deployment, for the agent card.
    pub(super) a2a_public_url: Option<String>,
    /// Where MCP Apps' views' requests go, when a listed MCP server has views.
    pub(super) views: Option<std::sync::Arc<dyn crate::genui::mcp_apps::ViewRequests>>,
    /// What CopilotKit's routes announce and serve beyond the agent.
    pub(super) copilotkit: super::copilotkit::CopilotKitSettings,
}

/// The way back for MCP Apps' views (their servers' sessions), as start-up found them.
#[derive(Clone, Default)]
pub(crate) struct McpViews(Option<std::sync::Arc<dyn crate::genui::mcp_apps::ViewRequests>>);

impl std::fmt::Debug for McpViews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "McpViews(some servers)"
        } else {
            "McpViews(none)"
        })
    }
}

impl McpViews {
    pub(crate) fn new(views: std::sync::Arc<dyn crate::genui::mcp_apps::ViewRequests>) -> Self {
        Self(Some(views))
    }
}

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub(crate) struct ApiSettings {
    pub limits: Limits,
    pub ping_interval: Duration,
    pub run_max: Duration,
    pub stream_max: Option<Duration>,
    pub deadline_margin: Duration,
    pub cors_allowed_origins: Vec<String>,
    /// `DEV_UI`: serve the dev chat page on `GET /` (and its files under `/dev/`).
    pub dev_ui: bool,
    /// `HOSTING=agentcore`: AgentCore Runtime's `POST /invocations` and `GET /ping`.
    pub agentcore: bool,
    /// `A2A_PUBLIC_URL`: the base URL the agent card names (else the request's host).
    pub a2a_public_url: Option<String>,
}

/// When the request arrived: a run's time to first byte and token count from it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Arrival(pub(super) std::time::Instant);

impl App {
    pub(crate) fn new(agent: Agent, auth: Authenticator, settings: ApiSettings) -> Self {
        Self {
            agent,
            auth,
            cors_allowed_origins: settings.cors_allowed_origins,
            limits: settings.limits,
            ping_interval: settings.ping_interval,
            run_max: settings.run_max,
            stream_max: settings.stream_max,
            deadline_margin: settings.deadline_margin,
            routes: Optional {
                dev_ui: settings.dev_ui,
                agentcore: settings.agentcore,
            },
            draining: std::sync::atomic::AtomicBool::new(false),
            dispatcher: Dispatcher::Local,
            blobs: None,
            this: std::sync::OnceLock::new(),
            a2a_public_url: settings.a2a_public_url,
            views: None,
            copilotkit: super::copilotkit::CopilotKitSettings::default(),
        }
    }

    /// MCP Apps: views' requests (CopilotKit's proxied runs, assistant-ui's route) go to
    /// their servers through `views`.
    pub(crate) fn with_mcp_views(mut self, views: McpViews) -> Self {
        self.views = views.0;
        self
    }

    /// CopilotKit's routes with these descriptions and features.
    pub(crate) fn with_copilotkit(
        mut self,
        settings: super::copilotkit::CopilotKitSettings,
    ) -> Self {
        self.copilotkit = settings;
        self
    }

    /// Detached runs go through `dispatcher` (the self-invocation on Lambda), and runs go on in
    /// its next invocation when theirs ends.
    pub(crate) fn with_dispatcher(mut self, dispatcher: Dispatcher) -> Self {
        self.agent = self.agent.with_continuations(dispatcher.continuations());
        self.dispatcher = dispatcher;
        self
    }

    /// One EMF metrics record per run (`EMF_METRICS`).
    pub fn with_metrics(mut self, metrics: Option<crate::telemetry::emf::Emf>) -> Self {
        self.agent = self.agent.with_metrics(metrics);
        self
    }

    /// Image uploads through signed URLs into `blobs`' bucket.
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

    pub(super) fn blobs(&self) -> Result<&std::sync::Arc<crate::store::Blobs>, ApiError> {
        self.blobs.as_ref().ok_or(ApiError::AttachmentsOff)
    }

    /// The largest body a request to `path` may send, and the refusal of a larger one: the
    /// AG-UI routes take clients that resend the whole thread, the rest the smaller limit.
    pub(crate) fn body_limit(&self, method: &Method, path: &str) -> (usize, InputError) {
        match Route::parse(method, path, self.routes) {
            Ok(Route::Run(Dialect::AgUi | Dialect::SniffAgKit) | Route::Invocations) => {
                let limit = self.limits.agui_max_payload_bytes;
                (limit, InputError::HistoryTooLarge { limit })
            }
            Ok(Route::CopilotKit(route)) if route.carries_history() => {
                let limit = self.limits.agui_max_payload_bytes;
                (limit, InputError::HistoryTooLarge { limit })
            }
            Ok(Route::CopilotKit(route)) if route.body_limit(&self.copilotkit).is_some() => {
                let limit = route.body_limit(&self.copilotkit).unwrap_or_default();
                (limit, InputError::TooLarge { limit })
            }
            _ => {
                let limit = self.limits.max_payload_bytes;
                (limit, InputError::TooLarge { limit })
            }
        }
    }

    pub(crate) fn describe(&self) -> String {
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

    /// The runs in flight in this process (detached runs too).
    pub fn live_runs(&self) -> &std::sync::Arc<crate::agent::live::LiveRuns> {
        self.agent.live_runs()
    }

    pub(crate) fn auth_mode(&self) -> &'static str {
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
            session.id = tracing::field::Empty,
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
        let parsed = Route::parse(request.method(), request.uri().path(), self.routes);
        let agentscope_route = parsed.as_ref().is_ok_and(Route::is_agentscope);
        let transcription_route = parsed.as_ref().is_ok_and(Route::is_transcription);
        let a2a_binding = parsed.ok().and_then(|route| route.a2a_binding());
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
                    if transcription_route {
                        super::response::transcription_refusal(&error)
                    } else if let Some(binding) = a2a_binding {
                        let body = super::a2a::refusal_body(&error, binding);
                        let mut response =
                            json_response(error.status(), Bytes::from(body.to_string()));
                        refusal_headers(&mut response, &error);
                        response
                    } else if agentscope_route {
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
    pub(crate) fn refusal(
        &self,
        path: &str,
        headers: &http::HeaderMap,
        error: &ApiError,
    ) -> Response<ResponseBody> {
        if matches!(
            error,
            ApiError::Input(crate::protocol::InputError::TooLarge { .. })
        ) && matches!(
            Route::parse(&Method::POST, path, self.routes),
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
        let transcription = Route::parse(&Method::POST, path, self.routes)
            .is_ok_and(|route| route.is_transcription());
        let mut response = if transcription {
            super::response::transcription_refusal(error)
        } else {
            error_response(error)
        };
        add_cors(&mut response, self.allowed_origin(headers));
        response
    }

    /// Sends an accepted detached run on its way: a task of this process, or an asynchronous
    /// invocation of this function.
    pub(super) async fn dispatch(&self, request: DetachedRequest) -> Result<(), String> {
        match &self.dispatcher {
            Dispatcher::Local => {
                let app = self
                    .this
                    .get()
                    .and_then(std::sync::Weak::upgrade)
                    .ok_or_else(|| "the server is shutting down".to_owned())?;
                // Work in flight from here, until the run is (a live run that a stop waits for).
                let hold = self.agent.live_runs().hold();
                tokio::spawn(async move {
                    app.execute_detached(request, None).await;
                    drop(hold);
                });
                Ok(())
            }
            #[cfg(feature = "aws")]
            Dispatcher::Lambda(invoker) => invoker.send(&request).await,
        }
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

    /// The route table's handlers: each route to the method that answers it.
    async fn route(
        &self,
        request: Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let route = Route::parse(request.method(), request.uri().path(), self.routes);
        // The dev page's files are the same for everyone and hold no data: a browser opening
        // the page sends no credentials yet (the page asks for them, then sends them itself).
        if let Ok(Route::DevPage(asset)) = route {
            return Ok(dev_page::response(asset, request.headers()));
        }
        // AgentCore's health check carries no credentials.
        if let Ok(Route::Ping) = route {
            return Ok(self.ping());
        }
        // An A2A client reads the card before it has credentials; it holds no data.
        if let Ok(Route::A2a(super::a2a::A2aRoute::Card(tenant))) = &route {
            return self.agent_card(tenant.as_deref(), request.uri().path(), request.headers());
        }
        // Authentication comes before routing, so an unauthenticated caller learns nothing.
        let principal = self.auth.authenticate(
            request.headers(),
            request.extensions().get::<auth::IamCaller>(),
        )?;
        let route = route?;
        // Held until the run is live (or refused), so a stop that begins meanwhile waits for it.
        let _starting = route.starts_a_run().then(|| self.agent.live_runs().hold());
        if route.starts_a_run() && self.is_draining() {
            return Err(ApiError::ShuttingDown);
        }
        match route {
            Route::DevPage(asset) => Ok(dev_page::response(asset, request.headers())),
            Route::Ping => Ok(self.ping()),
            Route::Invocations => {
                self.invocation(principal, request, invocation_deadline)
                    .await
            }
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
                Bytes::from(self.agent.capabilities(self.run_max).to_string()),
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
            Route::McpApps(thread) => {
                self.mcp_apps(&principal, &thread, request.headers(), request.body())
                    .await
            }
            Route::Usage => self.usage(&principal, request.uri().query()).await,
            Route::ListMemories => self.list_memories(&principal, request.uri().query()).await,
            Route::SaveMemory => {
                self.save_memory(&principal, request.headers(), request.body())
                    .await
            }
            Route::EditMemory(id) => {
                self.edit_memory(&principal, &id, request.headers(), request.body())
                    .await
            }
            Route::DeleteMemory(id) => self.delete_memory(&principal, &id).await,
            Route::DeleteMemories => self.delete_memories(&principal).await,
            Route::AcceptRun => {
                self.accept_run(principal, request.headers(), request.body())
                    .await
            }
            Route::TaskEvents(run) => {
                self.task_events(&principal, &run, &request, invocation_deadline)
                    .await
            }
            Route::HistoryDay => self.history_day(&principal, request.uri().query()).await,
            Route::A2a(route) => {
                self.a2a(&principal, route, request, invocation_deadline)
                    .await
            }
            Route::CreateUpload => {
                self.create_upload(&principal, request.headers(), request.body())
                    .await
            }
            Route::CopilotKit(route) => {
                self.copilotkit(principal, route, request, invocation_deadline)
                    .await
            }
        }
    }
}
