//! The host side of MCP Apps: each listed server whose tools name a view keeps its session here,
//! and a view's requests (a tool it may call, a resource to read or list) go to it through the
//! same session the model's calls use, so the server's credentials never leave the function.

use super::Session;
use crate::genui::mcp_apps::{
    self, Answer, AppCall, AppRefusal, AppRequest, ServerRef, ViewRequests,
};
use rmcp::model::{CallToolRequestParams, PaginatedRequestParams, ReadResourceRequestParams};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// A server with at least one tool that names a view.
pub(crate) struct ViewServer {
    pub(super) name: String,
    pub(super) session: Arc<Session>,
    /// Its tools a view may call (their names on the server), `visibility` holding `"app"`.
    pub(super) app_tools: BTreeSet<String>,
    /// Its tools a view may not call: only the model may.
    pub(super) model_only: BTreeSet<String>,
    /// The `ui://` resources its tools name.
    pub(super) views: BTreeSet<String>,
    pub(super) timeout: Duration,
}

/// Every listed server with views, for the warm instance.
#[derive(Default)]
pub(crate) struct McpApps {
    servers: Vec<ViewServer>,
}

impl std::fmt::Debug for McpApps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.servers.iter().map(|server| &server.name))
            .finish()
    }
}

impl McpApps {
    pub(crate) fn add(&mut self, server: ViewServer) {
        self.servers.push(server);
    }

    /// Whether any server has views.
    pub(crate) fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The server a request is for. Unnamed, it is the one server the request can mean: the
    /// one whose tools name the view, or have the tool; or the only one with views.
    fn server(&self, reference: &ServerRef, call: &AppCall) -> Result<&ViewServer, AppRefusal> {
        let found = match reference {
            ServerRef::Named(name) => self.servers.iter().find(|server| &server.name == name),
            ServerRef::Hashed(hash) => self
                .servers
                .iter()
                .find(|server| mcp_apps::server_hash(&server.name) == *hash),
            ServerRef::Unnamed => {
                let fits = |server: &&ViewServer| match call {
                    AppCall::LoadView { uri } | AppCall::ReadResource { uri } => {
                        server.views.contains(uri)
                    }
                    AppCall::CallTool { name, .. } => {
                        server.app_tools.contains(name) || server.model_only.contains(name)
                    }
                    AppCall::ListResources { .. } => true,
                };
                let mut fitting = self.servers.iter().filter(fits);
                match (fitting.next(), fitting.next()) {
                    (Some(server), None) => Some(server),
                    (None, None) if self.servers.len() == 1 => self.servers.first(),
                    _ => None,
                }
            }
        };
        found.ok_or_else(|| {
            AppRefusal::UnknownServer(match reference {
                ServerRef::Named(name) => name.clone(),
                ServerRef::Hashed(hash) => hash.clone(),
                ServerRef::Unnamed => "(not named)".to_owned(),
            })
        })
    }
}

#[async_trait::async_trait]
impl ViewRequests for McpApps {
    /// The server's answer, or why there is none. Never an error of the transport.
    async fn answer(&self, request: &AppRequest) -> Answer {
        let server = match self.server(&request.server, &request.call) {
            Ok(server) => server,
            Err(refusal) => return refused(&refusal),
        };
        if let AppCall::CallTool { name, .. } = &request.call
            && !server.app_tools.contains(name)
        {
            return refused(&AppRefusal::NotForApps(name.clone()));
        }
        match tokio::time::timeout(server.timeout, server.send(&request.call)).await {
            Ok(Ok(result)) => Answer::Result(result),
            Ok(Err(SendError::View(problem))) => Answer::Failed(problem.to_owned()),
            Ok(Err(error)) => {
                tracing::warn!(server = %server.name, %error, "a view's MCP request failed");
                Answer::Failed(format!("the MCP server {} failed the request", server.name))
            }
            Err(_) => {
                tracing::warn!(server = %server.name, "a view's MCP request timed out");
                Answer::Failed(format!(
                    "the MCP server {} did not answer within {} ms",
                    server.name,
                    server.timeout.as_millis()
                ))
            }
        }
    }
}

fn refused(refusal: &AppRefusal) -> Answer {
    tracing::info!(%refusal, "a view's MCP request was refused");
    Answer::Refused(refusal.to_string())
}

/// Why a request the server was sent did not come back as a result.
#[derive(Debug, thiserror::Error)]
enum SendError {
    #[error(transparent)]
    Service(#[from] rmcp::ServiceError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    View(&'static str),
}

impl ViewServer {
    async fn send(&self, call: &AppCall) -> Result<Value, SendError> {
        Ok(match call {
            AppCall::CallTool { name, arguments } => {
                let mut params = CallToolRequestParams::new(name.clone());
                if let Some(arguments) = arguments {
                    params = params.with_arguments(arguments.clone());
                }
                serde_json::to_value(self.session.call_tool(params).await?)?
            }
            AppCall::ReadResource { uri } => serde_json::to_value(
                self.session
                    .read_resource(ReadResourceRequestParams::new(uri.clone()))
                    .await?,
            )?,
            AppCall::ListResources { cursor } => serde_json::to_value(
                self.session
                    .list_resources(Some(
                        PaginatedRequestParams::default().with_cursor(cursor.clone()),
                    ))
                    .await?,
            )?,
            AppCall::LoadView { uri } => {
                if !self.views.contains(uri) {
                    return Err(SendError::View(
                        "none of this server's tools names that view",
                    ));
                }
                let read = serde_json::to_value(
                    self.session
                        .read_resource(ReadResourceRequestParams::new(uri.clone()))
                        .await?,
                )?;
                mcp_apps::loaded_view(uri, &read).map_err(SendError::View)?
            }
        })
    }
}
