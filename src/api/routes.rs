//! The route table: every route parsed once from the method and the normalised path; a path
//! with no route is 404, a method its path does not take 405.

use super::a2a::{self, A2aRoute};
use super::copilotkit::CopilotKitRoute;
use super::dev_page;
use super::error::ApiError;
use crate::dialects::agkit;
use http::Method;
use serde_json::Value;

/// The protocol a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    AgUi,
    AgKit,
    /// AgentScope's Agent API (`/process`).
    AgentScope,
    /// `/send-message`: AG-Kit when the body names a `conversationId` and no `threadId`.
    SniffAgKit,
}

impl Dialect {
    /// The metrics' `dialect` dimension.
    pub(super) fn label(self) -> &'static str {
        match self {
            Dialect::AgUi | Dialect::SniffAgKit => "ag-ui",
            Dialect::AgKit => "ag-kit",
            Dialect::AgentScope => "agentscope",
        }
    }

    /// `/send-message` speaks AG-Kit when the body says so, AG-UI otherwise.
    pub(super) fn sniffed(self, body: &Value) -> Self {
        match self {
            Dialect::SniffAgKit if agkit::is_agkit_body(body) => Dialect::AgKit,
            Dialect::SniffAgKit => Dialect::AgUi,
            other => other,
        }
    }
}

/// Every route, parsed once from the method and the normalised path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Route {
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
    /// `POST /threads/{threadId}/mcp-apps`: an MCP App view's request (assistant-ui's host).
    McpApps(String),
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
    /// `POST /invocations` (AgentCore Runtime): the AG-UI run, the session as its thread.
    Invocations,
    /// `GET /ping` (AgentCore Runtime): `Healthy`, or `HealthyBusy` while runs are in flight.
    Ping,
    /// `GET /memories`: the caller's memories, newest first, paged.
    ListMemories,
    /// `POST /memories`
    SaveMemory,
    /// `DELETE /memories`: all of the caller's memories.
    DeleteMemories,
    /// `PATCH /memories/{id}`
    EditMemory(String),
    /// `DELETE /memories/{id}`
    DeleteMemory(String),
    /// A2A 1.0: the agent card, the JSON-RPC endpoint, the HTTP+JSON paths.
    A2a(A2aRoute),
    /// CopilotKit's runtime protocol under `/copilotkit`.
    CopilotKit(CopilotKitRoute),
}

/// The routes that are there only when a setting turns them on.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Optional {
    /// `DEV_UI`: the dev page's routes.
    pub dev_ui: bool,
    /// `HOSTING=agentcore`: AgentCore Runtime's `POST /invocations` and `GET /ping`.
    pub agentcore: bool,
}

impl Route {
    /// `optional.dev_ui` adds the dev page's routes; without it `GET /` is the 405 of a run path
    /// and `/dev/…` is 404, as before the page existed. `optional.agentcore` adds AgentCore's.
    pub(super) fn parse(method: &Method, path: &str, optional: Optional) -> Result<Self, ApiError> {
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
            ["memories"] => vec![
                (Method::GET, Route::ListMemories),
                (Method::POST, Route::SaveMemory),
                (Method::DELETE, Route::DeleteMemories),
            ],
            ["memories", id] => vec![
                (Method::PATCH, Route::EditMemory(owned(id))),
                (Method::DELETE, Route::DeleteMemory(owned(id))),
            ],
            ["threads"] => vec![(Method::GET, Route::ListThreads)],
            ["threads", thread] => vec![
                (Method::GET, Route::Thread(owned(thread))),
                (Method::PATCH, Route::RenameThread(owned(thread))),
                (Method::DELETE, Route::DeleteThread(owned(thread))),
            ],
            ["threads", thread, "fork"] => vec![(Method::POST, Route::ForkThread(owned(thread)))],
            ["threads", thread, "mcp-apps"] => vec![(Method::POST, Route::McpApps(owned(thread)))],
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
            ["copilotkit", rest @ ..] => CopilotKitRoute::routes(rest)
                .into_iter()
                .map(|(method, route)| (method, Route::CopilotKit(route)))
                .collect(),
            ["invocations"] if optional.agentcore => vec![(Method::POST, Route::Invocations)],
            ["ping"] if optional.agentcore => vec![(Method::GET, Route::Ping)],
            _ => a2a::routes(&segments)
                .unwrap_or_default()
                .into_iter()
                .map(|(method, route)| (method, Route::A2a(route)))
                .collect(),
        };
        if let Some(asset) = optional
            .dev_ui
            .then(|| dev_page::Asset::from_segments(&segments))
            .flatten()
        {
            routes.push((Method::GET, Route::DevPage(asset)));
        }
        if routes.is_empty() {
            return Err(ApiError::NotFound(path));
        }
        let dev_page_off = path == "/" && method == Method::GET && !optional.dev_ui;
        let allowed: Vec<Method> = routes.iter().map(|(allowed, _)| allowed.clone()).collect();
        routes
            .into_iter()
            .find(|(allowed, _)| allowed == method)
            .map(|(_, route)| route)
            .ok_or(if dev_page_off {
                ApiError::DevPageOff
            } else {
                ApiError::MethodNotAllowed {
                    method: method.clone(),
                    path,
                    allowed,
                }
            })
    }

    pub(super) fn is_agentscope(&self) -> bool {
        matches!(self, Route::Run(Dialect::AgentScope))
    }

    /// CopilotKit's voice input, whose refusals take CopilotKit's transcription shape.
    pub(super) fn is_transcription(&self) -> bool {
        matches!(self, Route::CopilotKit(route) if route.is_transcription())
    }

    /// Starts a run: refused while the server is stopping.
    pub(super) fn starts_a_run(&self) -> bool {
        match self {
            Route::Run(_) | Route::Invocations | Route::AcceptRun => true,
            Route::A2a(route) => route.may_start_a_run(),
            Route::CopilotKit(route) => route.starts_a_run(),
            _ => false,
        }
    }

    /// The A2A binding a route speaks, whose shape its refusals take.
    pub(super) fn a2a_binding(&self) -> Option<a2a::Binding> {
        match self {
            Route::A2a(route) => route.binding(),
            _ => None,
        }
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
    use crate::api::dev_page;

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
        let get = |path: &str, dev_ui: bool| {
            Route::parse(
                &Method::GET,
                path,
                Optional {
                    dev_ui,
                    agentcore: false,
                },
            )
        };
        assert_eq!(
            get("/", true).ok(),
            Some(Route::DevPage(dev_page::Asset::Index))
        );
        assert_eq!(
            get("/lambda-url/agui-lambda/dev/app.js", true).ok(),
            Some(Route::DevPage(dev_page::Asset::App))
        );
        assert_eq!(
            Route::parse(
                &Method::POST,
                "/",
                Optional {
                    dev_ui: true,
                    agentcore: false
                }
            )
            .ok(),
            Some(Route::Run(Dialect::AgUi))
        );
        // GET /agent stays what it was, on or off.
        assert!(matches!(
            get("/agent", true),
            Err(ApiError::MethodNotAllowed { .. })
        ));
        assert!(matches!(get("/", false), Err(ApiError::DevPageOff)));
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
    fn agentcore_routes_are_there_only_in_its_mode() {
        let agentcore = Optional {
            dev_ui: false,
            agentcore: true,
        };
        let parse = |method: Method, path: &str, optional| Route::parse(&method, path, optional);
        assert_eq!(
            parse(Method::POST, "/invocations", agentcore).ok(),
            Some(Route::Invocations)
        );
        assert_eq!(
            parse(Method::GET, "/ping", agentcore).ok(),
            Some(Route::Ping)
        );
        assert!(matches!(
            parse(Method::GET, "/invocations", agentcore),
            Err(ApiError::MethodNotAllowed { .. })
        ));
        assert!(matches!(
            parse(Method::GET, "/ping", Optional::default()),
            Err(ApiError::NotFound(_))
        ));
        assert!(matches!(
            parse(Method::POST, "/invocations", Optional::default()),
            Err(ApiError::NotFound(_))
        ));
    }
}
