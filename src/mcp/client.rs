//! The MCP client (rmcp over streamable HTTP): one session per server, opened and listed at cold
//! start and kept for the warm instance; each listed tool becomes an [`McpTool`].

use async_trait::async_trait;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, ResourceContents, Tool,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::apps::ViewServer;
use super::{McpConfigError, McpServerSettings, Session, parse_secret_headers};
use crate::agent::tools::{ServerTool, ToolContext, ToolError, ToolOutput};
use crate::genui::mcp_apps::{self, AppActivity, ToolUi};
use crate::protocol::activity::KeptActivity;
use serde_json::json;

/// The largest UI tool result kept whole with its call (and shown to its view); a larger one
/// keeps its text only, as the model gets it.
const MAX_VIEW_RESULT_BYTES: usize = 256 * 1024;

/// A server's tools as listed at cold start: those offered to the model, and, when any of its
/// tools names a view, what its views may reach.
pub(crate) struct ListedServer {
    pub(crate) tools: Vec<McpTool>,
    pub(crate) views: Option<ViewServer>,
}

/// Why a server's tools could not be listed at cold start; the server is then skipped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum McpError {
    #[error(transparent)]
    Config(#[from] McpConfigError),
    #[error("no answer within {} ms", .0.as_millis())]
    Timeout(Duration),
    #[error("the MCP handshake failed: {0}")]
    Connect(String),
    #[error("listing its tools failed: {0}")]
    List(String),
}

/// Opens a session with `server` and lists its tools, all within `within`. Tools whose
/// visibility leaves out the model (`_meta.ui.visibility: ["app"]`) are kept for its views only;
/// tools whose name (`{server}__{tool}`) model APIs would refuse are left out, with a warning.
pub(crate) async fn list_server(
    server: &McpServerSettings,
    secret_headers: Option<&SecretString>,
    within: Duration,
) -> Result<ListedServer, McpError> {
    let mut headers = HashMap::new();
    for (name, value) in &server.headers {
        headers.insert(
            header_name(server, name)?,
            header_value(server, name, value)?,
        );
    }
    if let Some(secret) = secret_headers {
        for (name, value) in parse_secret_headers(&server.name, secret.expose_secret())? {
            let mut value = header_value(server, &name, &value)?;
            // Kept out of any debug output of the request.
            value.set_sensitive(true);
            headers.insert(header_name(server, &name)?, value);
        }
    }
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
            .custom_headers(headers)
            // A warm instance outlives the server's session (a restart, an idle expiry): open
            // a new one instead of failing every later call.
            .reinit_on_expired_session(true),
    );
    let identity = ClientConfig::new(
        host_capabilities(server.apps),
        Implementation::new("agui-lambda", env!("CARGO_PKG_VERSION")),
    );
    let listed = tokio::time::timeout(within, async {
        let session = identity
            .serve(transport)
            .await
            .map_err(|err| McpError::Connect(err.to_string()))?;
        let tools = session
            .list_all_tools()
            .await
            .map_err(|err| McpError::List(err.to_string()))?;
        Ok::<_, McpError>((session, tools))
    })
    .await
    .map_err(|_| McpError::Timeout(within))?;
    let (session, listed) = listed?;
    let session = Arc::new(session);
    let mut tools = Vec::with_capacity(listed.len());
    let mut views = ViewServer {
        name: server.name.clone(),
        session: session.clone(),
        app_tools: Default::default(),
        model_only: Default::default(),
        views: Default::default(),
        timeout: server.timeout,
    };
    for tool in listed {
        let mut ui = ToolUi::from_meta(tool.meta.as_ref().map(|meta| &meta.0));
        if !server.apps {
            ui.resource_uri = None;
        }
        let remote = tool.name.to_string();
        if ui.visibility.app {
            views.app_tools.insert(remote.clone());
        } else {
            views.model_only.insert(remote.clone());
        }
        if let Some(uri) = &ui.resource_uri {
            views.views.insert(uri.clone());
        }
        if !ui.visibility.model {
            continue;
        }
        if let Some(tool) = model_tool(server, &tool, &session, ui.resource_uri) {
            tools.push(tool);
        }
    }
    let views = (!views.views.is_empty()).then_some(views);
    Ok(ListedServer { tools, views })
}

/// What this host tells a server it can show: MCP Apps' HTML views, unless its entry says
/// `"apps": false`.
fn host_capabilities(apps: bool) -> ClientCapabilities {
    if !apps {
        return ClientCapabilities::default();
    }
    let mut settings = serde_json::Map::new();
    settings.insert(
        "mimeTypes".to_owned(),
        Value::from(vec![mcp_apps::MIME_TYPE]),
    );
    let mut capabilities = ClientCapabilities::default();
    capabilities.extensions = Some([(mcp_apps::EXTENSION_ID.to_owned(), settings)].into());
    capabilities
}

/// `tool` as the model is offered it, unless model APIs would refuse its name.
fn model_tool(
    server: &McpServerSettings,
    tool: &Tool,
    session: &Arc<Session>,
    view: Option<String>,
) -> Option<McpTool> {
    let name = server.namespaced(&tool.name);
    if !crate::protocol::input::is_valid_tool_name(&name) {
        tracing::warn!(
            server = %server.name,
            tool = %tool.name,
            "MCP tool left out: {name:?} is not a tool name model APIs accept (1-64 letters, digits, _ or -)"
        );
        return None;
    }
    Some(McpTool {
        name,
        server: server.name.clone(),
        remote_name: tool.name.to_string(),
        description: tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .to_owned(),
        parameters: Value::Object((*tool.input_schema).clone()),
        requires_approval: requires_approval(server, tool),
        idempotent: idempotent(tool),
        timeout: server.timeout,
        session: session.clone(),
        view,
    })
}

/// Tools annotated `destructiveHint: true` wait for approval unless the server's entry says
/// `approve_destructive: false`. Only an explicit `true` counts: a hint left out is the
/// spec's default, not the server's claim.
fn requires_approval(server: &McpServerSettings, tool: &Tool) -> bool {
    let destructive = tool
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.destructive_hint)
        == Some(true);
    destructive && server.approve_destructive
}

/// A tool that says it is read-only (`readOnlyHint: true`) or idempotent (`idempotentHint:
/// true`) may run again when a call of it was cut off. Only an explicit `true` counts: the
/// spec's defaults are `false` for both.
fn idempotent(tool: &Tool) -> bool {
    tool.annotations.as_ref().is_some_and(|annotations| {
        annotations.read_only_hint == Some(true) || annotations.idempotent_hint == Some(true)
    })
}

fn header_name(server: &McpServerSettings, name: &str) -> Result<http::HeaderName, McpError> {
    http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
        McpError::Config(McpConfigError::BadHeader {
            server: server.name.clone(),
            header: name.to_owned(),
            reason: "not a header name",
        })
    })
}

fn header_value(
    server: &McpServerSettings,
    name: &str,
    value: &str,
) -> Result<http::HeaderValue, McpError> {
    http::HeaderValue::from_str(value).map_err(|_| {
        McpError::Config(McpConfigError::BadHeader {
            server: server.name.clone(),
            header: name.to_owned(),
            reason: "its value is not a header value",
        })
    })
}

/// A tool of a remote MCP server, offered to the model as `{server}__{tool}`.
pub(crate) struct McpTool {
    name: String,
    server: String,
    remote_name: String,
    description: String,
    parameters: Value,
    requires_approval: bool,
    idempotent: bool,
    timeout: Duration,
    session: Arc<Session>,
    /// The `ui://` view its results are shown in.
    view: Option<String>,
}

impl McpTool {
    /// Its name on its server.
    pub(crate) fn remote_name(&self) -> &str {
        &self.remote_name
    }
}

#[async_trait]
impl ServerTool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn requires_approval(&self) -> bool {
        self.requires_approval
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout)
    }

    fn idempotent(&self) -> bool {
        self.idempotent
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut request = CallToolRequestParams::new(self.remote_name.clone());
        let arguments = match arguments {
            Value::Object(arguments) => {
                request = request.with_arguments(arguments.clone());
                arguments
            }
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::Failed(format!(
                    "arguments must be a JSON object, not {other}"
                )));
            }
        };
        // Dropping the call (a timeout, the run stopped) tells the server with
        // `notifications/cancelled`.
        let result = tokio::select! {
            biased;
            () = context.cancelled() => {
                return Err(ToolError::Failed("the call was cancelled".to_owned()));
            }
            result = self.session.call_tool(request) => result,
        };
        let result = result.map_err(|err| {
            ToolError::Failed(format!("the MCP server {} failed: {err}", self.server))
        })?;
        let text = render(&result);
        if result.is_error == Some(true) {
            return Err(ToolError::Failed(text));
        }
        let output = ToolOutput::text(text);
        Ok(match (&self.view, &context.tool_call_id) {
            (Some(view), Some(call)) => {
                output.with_activity(self.view_of(view, call, arguments, &result))
            }
            _ => output,
        })
    }
}

impl McpTool {
    /// A UI tool's call as its view: the `mcp-apps` activity, with the server's whole result
    /// (structured content and `_meta` included) unless that is too large to keep.
    fn view_of(
        &self,
        view: &str,
        call: &crate::protocol::ToolCallId,
        arguments: serde_json::Map<String, Value>,
        result: &CallToolResult,
    ) -> KeptActivity {
        let whole = serde_json::to_value(result).unwrap_or(Value::Null);
        let result = if whole.to_string().len() <= MAX_VIEW_RESULT_BYTES {
            whole
        } else {
            tracing::warn!(
                server = %self.server,
                tool = %self.remote_name,
                limit = MAX_VIEW_RESULT_BYTES,
                "an MCP App's result is too large to keep: its view gets the text only"
            );
            json!({"content": [{"type": "text", "text": render(result)}]})
        };
        let activity = AppActivity {
            tool_call_id: call.to_string(),
            resource_uri: view.to_owned(),
            server: self.server.clone(),
            tool_input: Value::Object(arguments),
            result,
        };
        KeptActivity {
            message_id: activity.message_id(),
            activity_type: mcp_apps::ACTIVITY_TYPE.to_owned(),
            content: activity.content(),
        }
    }
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.name)
            .field("requires_approval", &self.requires_approval)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// A tool result as text for the model: text parts as they are, other parts named (binary data
/// is not sent to the model), structured content when there is nothing else.
fn render(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!(
                "[image {}: {} bytes of base64, not shown]",
                image.mime_type,
                image.data.len()
            ),
            ContentBlock::Audio(audio) => format!(
                "[audio {}: {} bytes of base64, not shown]",
                audio.mime_type,
                audio.data.len()
            ),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[resource {uri}]\n{text}")
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => format!(
                    "[resource {uri} ({}): {} bytes of base64, not shown]",
                    mime_type.as_deref().unwrap_or("binary"),
                    blob.len()
                ),
                _ => "[a resource of a kind this client does not know]".to_owned(),
            },
            ContentBlock::ResourceLink(link) => {
                format!("[resource link {} ({})]", link.uri, link.name)
            }
            _ => "[a content part of a kind this client does not know]".to_owned(),
        })
        .collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_parts_are_kept_and_binary_parts_named() {
        let rendered = render(&result(json!({
            "content": [
                {"type": "text", "text": "Here it is:"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "demo://r/1", "text": "body"}},
                {"type": "resource", "resource": {"uri": "demo://r/2", "blob": "AAAA", "mimeType": "application/gzip"}},
                {"type": "resource_link", "uri": "demo://r/3", "name": "three"},
            ]
        })));
        assert_eq!(
            rendered,
            "Here it is:\n[image image/png: 8 bytes of base64, not shown]\n[resource demo://r/1]\nbody\n\
             [resource demo://r/2 (application/gzip): 4 bytes of base64, not shown]\n\
             [resource link demo://r/3 (three)]"
        );
    }

    #[test]
    fn destructive_tools_need_approval_unless_the_server_entry_says_otherwise() {
        let tool = |annotations: Value| -> Tool {
            serde_json::from_value(json!({
                "name": "delete_file",
                "inputSchema": {"type": "object"},
                "annotations": annotations,
            }))
            .unwrap()
        };
        let mut server =
            McpServerSettings::parse_list(r#"[{"name":"fs","url":"http://127.0.0.1:1/mcp"}]"#)
                .unwrap()
                .remove(0);
        assert!(requires_approval(
            &server,
            &tool(json!({"destructiveHint": true}))
        ));
        assert!(!requires_approval(
            &server,
            &tool(json!({"destructiveHint": false}))
        ));
        assert!(!requires_approval(
            &server,
            &tool(json!({"readOnlyHint": true}))
        ));
        server.approve_destructive = false;
        assert!(!requires_approval(
            &server,
            &tool(json!({"destructiveHint": true}))
        ));
    }

    #[test]
    fn only_tools_that_say_so_run_again_after_a_cut_off_call() {
        let tool = |annotations: Value| -> Tool {
            serde_json::from_value(json!({
                "name": "fetch",
                "inputSchema": {"type": "object"},
                "annotations": annotations,
            }))
            .unwrap()
        };
        assert!(idempotent(&tool(json!({"idempotentHint": true}))));
        assert!(idempotent(&tool(json!({"readOnlyHint": true}))));
        assert!(!idempotent(&tool(json!({"idempotentHint": false}))));
        assert!(!idempotent(&tool(json!({"destructiveHint": false}))));
        assert!(!idempotent(&tool(json!({}))), "the spec's default is false");
    }

    #[test]
    fn structured_content_answers_when_there_is_no_content() {
        let rendered = render(&result(
            json!({"content": [], "structuredContent": {"t": 21}}),
        ));
        assert_eq!(rendered, r#"{"t":21}"#);
    }
}
