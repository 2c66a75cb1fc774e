//! MCP Apps (SEP-1865, `ext-apps` 2026-01-26) as the browser sees them: what a tool's `_meta`
//! says about its view and who may call it, the `mcp-apps` activity shown next to a UI tool's
//! call, and the requests a view sends back (CopilotKit's proxied run, assistant-ui's JSON
//! route), parsed into the few calls a host allows. Pure: the MCP client lives in `mcp`.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// `activityType` of a tool's view.
pub(crate) const ACTIVITY_TYPE: &str = "mcp-apps";
/// The extension a host names in its MCP `initialize` capabilities.
pub(crate) const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The one content type of a view.
pub(crate) const MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The scheme of a view's resource.
pub(crate) const UI_SCHEME: &str = "ui://";

/// Who may call a tool (`_meta.ui.visibility`; absent means both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Visibility {
    /// Offered to the model.
    pub(crate) model: bool,
    /// Callable from its server's views.
    pub(crate) app: bool,
}

/// What a tool's `_meta` says about its view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolUi {
    /// The `ui://` resource its results are shown in, if any.
    pub(crate) resource_uri: Option<String>,
    pub(crate) visibility: Visibility,
}

impl ToolUi {
    /// Reads `_meta.ui.resourceUri` (or the older flat `_meta["ui/resourceUri"]`) and
    /// `_meta.ui.visibility`. A resource that is not `ui://` names no view; values of the
    /// wrong kind are read as absent.
    pub(crate) fn from_meta(meta: Option<&Map<String, Value>>) -> Self {
        let ui = meta
            .and_then(|meta| meta.get("ui"))
            .and_then(Value::as_object);
        let resource_uri = ui
            .and_then(|ui| ui.get("resourceUri"))
            .and_then(Value::as_str)
            .or_else(|| meta?.get("ui/resourceUri")?.as_str())
            .filter(|uri| uri.starts_with(UI_SCHEME) && uri.len() > UI_SCHEME.len())
            .map(str::to_owned);
        let visibility = match ui
            .and_then(|ui| ui.get("visibility"))
            .and_then(Value::as_array)
        {
            Some(who) => Visibility {
                model: who.iter().any(|entry| entry == "model"),
                app: who.iter().any(|entry| entry == "app"),
            },
            None => Visibility {
                model: true,
                app: true,
            },
        };
        Self {
            resource_uri,
            visibility,
        }
    }
}

/// The stable reference to a server that views send back: a digest of its name, so nothing
/// about its URL reaches the browser.
pub(crate) fn server_hash(server: &str) -> String {
    let digest = Sha256::digest(format!("agui-lambda mcp server {server}").as_bytes());
    digest
        .iter()
        .take(16)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A UI tool's call as its view: shown next to the call, kept with its result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AppActivity {
    pub(crate) tool_call_id: String,
    pub(crate) resource_uri: String,
    /// The server's name in `MCP_SERVERS`.
    pub(crate) server: String,
    /// The call's arguments (an object).
    pub(crate) tool_input: Value,
    /// The server's `CallToolResult`, as it sent it.
    pub(crate) result: Value,
}

impl AppActivity {
    /// The activity's message id: one per call, the same when a reloaded thread shows it again.
    pub(crate) fn message_id(&self) -> String {
        format!("{}-mcp-app", self.tool_call_id)
    }

    /// The activity's content as CopilotKit's renderer validates it (`result`, `resourceUri`,
    /// `serverHash`, `serverId`, `toolInput`) plus the `toolCallId` assistant-ui reads.
    pub(crate) fn content(&self) -> Value {
        let tool_input = if self.tool_input.is_object() {
            self.tool_input.clone()
        } else {
            json!({})
        };
        json!({
            "result": self.result,
            "resourceUri": self.resource_uri,
            "serverHash": server_hash(&self.server),
            "serverId": self.server,
            "toolInput": tool_input,
            "toolCallId": self.tool_call_id,
        })
    }
}

/// An MCP result that says the request failed: what a view gets for a refused or failed call.
pub(crate) fn error_result(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

/// How a view's request ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// The server's result, as it sent it (a tool's own `isError` result included).
    Result(Value),
    /// Refused here: a method, a server or a tool a view may not reach.
    Refused(String),
    /// The server failed, timed out or could not be reached.
    Failed(String),
}

impl Answer {
    /// The answer as an MCP result: refusals and failures as error results (`isError`).
    pub(crate) fn into_result(self) -> Value {
        match self {
            Answer::Result(result) => result,
            Answer::Refused(message) | Answer::Failed(message) => error_result(&message),
        }
    }
}

/// Who answers views' requests: the MCP client, over each server's own session (so the
/// server's credentials never leave the function).
#[async_trait::async_trait]
pub(crate) trait ViewRequests: Send + Sync {
    async fn answer(&self, request: &AppRequest) -> Answer;
}

/// Which server a view's request is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServerRef {
    /// By name (`serverId`); a hash sent beside it is not needed.
    Named(String),
    /// By [`server_hash`] only.
    Hashed(String),
    /// Not said (assistant-ui without a `serverId`): the one server the request can mean.
    Unnamed,
}

/// What a view may ask its host for; anything else is refused.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AppCall {
    /// `tools/call` of one of the server's tools (its own name, not the namespaced one).
    CallTool {
        name: String,
        arguments: Option<Map<String, Value>>,
    },
    /// `resources/read`.
    ReadResource { uri: String },
    /// `resources/list`.
    ListResources { cursor: Option<String> },
    /// assistant-ui's `mcp-apps/read-resource`: a view's HTML as `{uri, mimeType, html, meta?}`.
    LoadView { uri: String },
}

/// A view's request, parsed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AppRequest {
    pub(crate) server: ServerRef,
    pub(crate) call: AppCall,
}

/// Why a view's request is refused (answered as an MCP error result).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AppRefusal {
    #[error("a view may not call {0:?}: only tools/call, resources/read and resources/list")]
    Method(String),
    #[error("{0}")]
    Params(&'static str),
    #[error("no MCP server {0:?} serves views here")]
    UnknownServer(String),
    #[error("{0} is not one of this server's tools a view may call")]
    NotForApps(String),
}

impl AppRequest {
    /// CopilotKit's `forwardedProps.__proxiedMCPRequest`: `{serverHash, serverId?, method,
    /// params?}`.
    pub(crate) fn from_proxied(request: &Value) -> Result<Self, AppRefusal> {
        let text = |key: &str| {
            request
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let server = match (text("serverId"), text("serverHash")) {
            (Some(name), _) => ServerRef::Named(name.to_owned()),
            (None, Some(hash)) => ServerRef::Hashed(hash.to_owned()),
            (None, None) => return Err(AppRefusal::Params("serverHash is required")),
        };
        let method = text("method").ok_or(AppRefusal::Params("method is required"))?;
        let params = params_of(request.get("params"))?;
        if method == "mcp-apps/read-resource" {
            return Err(AppRefusal::Method(method.to_owned()));
        }
        Ok(Self {
            server,
            call: AppCall::parse(method, &params)?,
        })
    }

    /// assistant-ui's JSON route: `{method, params}` with `params.serverId` naming the server.
    pub(crate) fn from_route_body(body: &Value) -> Result<Self, AppRefusal> {
        let method = body
            .get("method")
            .and_then(Value::as_str)
            .ok_or(AppRefusal::Params("method is required"))?;
        let mut params = params_of(body.get("params"))?;
        let server = match params.remove("serverId") {
            Some(Value::String(name)) if !name.is_empty() => ServerRef::Named(name),
            None | Some(Value::Null) => ServerRef::Unnamed,
            Some(_) => return Err(AppRefusal::Params("params.serverId must be a string")),
        };
        Ok(Self {
            server,
            call: AppCall::parse(method, &params)?,
        })
    }
}

fn params_of(params: Option<&Value>) -> Result<Map<String, Value>, AppRefusal> {
    match params {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(params)) => Ok(params.clone()),
        Some(_) => Err(AppRefusal::Params("params must be an object")),
    }
}

impl AppCall {
    fn parse(method: &str, params: &Map<String, Value>) -> Result<Self, AppRefusal> {
        let uri = || {
            params
                .get("uri")
                .and_then(Value::as_str)
                .filter(|uri| !uri.is_empty())
                .map(str::to_owned)
                .ok_or(AppRefusal::Params("params.uri is required"))
        };
        Ok(match method {
            "tools/call" => Self::CallTool {
                name: params
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|name| !name.is_empty())
                    .ok_or(AppRefusal::Params("params.name is required"))?
                    .to_owned(),
                arguments: match params.get("arguments") {
                    None | Some(Value::Null) => None,
                    Some(Value::Object(arguments)) => Some(arguments.clone()),
                    Some(_) => {
                        return Err(AppRefusal::Params("params.arguments must be an object"));
                    }
                },
            },
            "resources/read" => Self::ReadResource { uri: uri()? },
            "resources/list" => Self::ListResources {
                cursor: match params.get("cursor") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(cursor)) => Some(cursor.clone()),
                    Some(_) => return Err(AppRefusal::Params("params.cursor must be a string")),
                },
            },
            "mcp-apps/read-resource" => {
                let uri = uri()?;
                if !uri.starts_with(UI_SCHEME) {
                    return Err(AppRefusal::Params("a view's uri starts with ui://"));
                }
                Self::LoadView { uri }
            }
            other => return Err(AppRefusal::Method(other.to_owned())),
        })
    }
}

/// A view's HTML from the server's `resources/read` result, as assistant-ui loads it:
/// `{uri, mimeType, html, meta?}` (`meta` is the content's `_meta.ui`: its CSP, border).
pub(crate) fn loaded_view(uri: &str, read: &Value) -> Result<Value, &'static str> {
    use base64::Engine;
    let contents = read
        .get("contents")
        .and_then(Value::as_array)
        .ok_or("the server sent no contents")?;
    let content = contents
        .iter()
        .find(|content| content.get("uri").and_then(Value::as_str) == Some(uri))
        .or_else(|| contents.first())
        .ok_or("the server sent no contents")?;
    if let Some(mime) = content.get("mimeType").and_then(Value::as_str)
        && !mime
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("text/html")
    {
        return Err("the resource is not HTML");
    }
    let html = match (content.get("text"), content.get("blob")) {
        (Some(Value::String(text)), _) => text.clone(),
        (_, Some(Value::String(blob))) => base64::engine::general_purpose::STANDARD
            .decode(blob)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or("the resource's blob is not base64 UTF-8 text")?,
        _ => return Err("the resource has no text"),
    };
    if html.trim().is_empty() {
        return Err("the resource is empty");
    }
    let mut view = json!({"uri": uri, "mimeType": MIME_TYPE, "html": html});
    if let Some(meta) = content.pointer("/_meta/ui").filter(|meta| meta.is_object()) {
        view["meta"] = meta.clone();
    }
    Ok(view)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_tools_view_and_visibility_come_from_its_meta() {
        let both = ToolUi::from_meta(Some(&meta(json!({"ui": {"resourceUri": "ui://s/view"}}))));
        assert_eq!(both.resource_uri.as_deref(), Some("ui://s/view"));
        assert_eq!(
            both.visibility,
            Visibility {
                model: true,
                app: true
            }
        );

        let app_only = ToolUi::from_meta(Some(&meta(
            json!({"ui": {"resourceUri": "ui://s/view", "visibility": ["app"]}}),
        )));
        assert_eq!(
            app_only.visibility,
            Visibility {
                model: false,
                app: true
            }
        );

        let legacy = ToolUi::from_meta(Some(&meta(json!({"ui/resourceUri": "ui://s/old"}))));
        assert_eq!(legacy.resource_uri.as_deref(), Some("ui://s/old"));

        let model_only = ToolUi::from_meta(Some(&meta(json!({"ui": {"visibility": ["model"]}}))));
        assert_eq!(
            (model_only.resource_uri, model_only.visibility.app),
            (None, false)
        );

        // Not a ui:// resource: no view. No _meta: a plain tool both may call.
        let https = ToolUi::from_meta(Some(&meta(json!({"ui": {"resourceUri": "https://x/y"}}))));
        assert_eq!(https.resource_uri, None);
        assert_eq!(
            ToolUi::from_meta(None),
            ToolUi {
                resource_uri: None,
                visibility: Visibility {
                    model: true,
                    app: true
                }
            }
        );
    }

    #[test]
    fn the_activity_carries_what_both_renderers_read_and_no_url() {
        let activity = AppActivity {
            tool_call_id: "call_1".into(),
            resource_uri: "ui://weather/view".into(),
            server: "weather".into(),
            tool_input: json!({"city": "Oslo"}),
            result: json!({"content": [{"type": "text", "text": "4 °C"}]}),
        };
        let content = activity.content();
        assert_eq!(content["serverId"], "weather");
        assert_eq!(content["serverHash"], server_hash("weather"));
        assert_eq!(content["serverHash"].as_str().unwrap().len(), 32);
        assert_eq!(content["toolCallId"], "call_1");
        assert_eq!(content["toolInput"], json!({"city": "Oslo"}));
        assert_eq!(content["result"]["content"][0]["text"], "4 °C");
        assert_eq!(activity.message_id(), "call_1-mcp-app");
        assert_ne!(server_hash("weather"), server_hash("docs"));
    }

    #[test]
    fn copilotkits_proxied_request_parses_into_an_allowed_call() {
        let proxied = json!({
            "serverHash": server_hash("weather"), "serverId": "weather",
            "method": "tools/call", "params": {"name": "refresh", "arguments": {"n": 1}}
        });
        let request = AppRequest::from_proxied(&proxied).unwrap();
        assert_eq!(request.server, ServerRef::Named("weather".into()));
        assert_eq!(
            request.call,
            AppCall::CallTool {
                name: "refresh".into(),
                arguments: Some(meta(json!({"n": 1})))
            }
        );
        let by_hash =
            json!({"serverHash": "abc", "method": "resources/read", "params": {"uri": "ui://w/v"}});
        let request = AppRequest::from_proxied(&by_hash).unwrap();
        assert_eq!(request.server, ServerRef::Hashed("abc".into()));
        assert_eq!(
            request.call,
            AppCall::ReadResource {
                uri: "ui://w/v".into()
            }
        );
    }

    #[test]
    fn other_methods_and_bad_params_are_refused() {
        for (props, expected) in [
            (
                json!({"serverHash": "h", "method": "sampling/createMessage"}),
                "may not call",
            ),
            (
                json!({"serverHash": "h", "method": "mcp-apps/read-resource", "params": {"uri": "ui://x"}}),
                "may not call",
            ),
            (
                json!({"method": "tools/call", "params": {"name": "x"}}),
                "serverHash",
            ),
            (
                json!({"serverHash": "h", "method": "tools/call", "params": {}}),
                "params.name",
            ),
            (
                json!({"serverHash": "h", "method": "tools/call", "params": {"name": "x", "arguments": [1]}}),
                "arguments",
            ),
            (
                json!({"serverHash": "h", "method": "resources/read", "params": "ui://x"}),
                "params must be an object",
            ),
        ] {
            let refusal = AppRequest::from_proxied(&props).unwrap_err();
            assert!(refusal.to_string().contains(expected), "{refusal}");
        }
    }

    #[test]
    fn assistant_uis_route_names_the_server_in_params() {
        let request = AppRequest::from_route_body(&json!({
            "method": "mcp-apps/read-resource", "params": {"uri": "ui://w/v", "serverId": "weather"}
        }))
        .unwrap();
        assert_eq!(request.server, ServerRef::Named("weather".into()));
        assert_eq!(
            request.call,
            AppCall::LoadView {
                uri: "ui://w/v".into()
            }
        );
        let request = AppRequest::from_route_body(&json!({"method": "resources/list"})).unwrap();
        assert_eq!(request.server, ServerRef::Unnamed);
        assert_eq!(request.call, AppCall::ListResources { cursor: None });
        // The server's name never travels on to the server as an argument.
        let request = AppRequest::from_route_body(&json!({
            "method": "tools/call", "params": {"name": "refresh", "arguments": {}, "serverId": "weather"}
        }))
        .unwrap();
        assert_eq!(
            request.call,
            AppCall::CallTool {
                name: "refresh".into(),
                arguments: Some(Map::new())
            }
        );
        assert!(
            AppRequest::from_route_body(
                &json!({"method": "mcp-apps/read-resource", "params": {"uri": "https://x"}})
            )
            .is_err()
        );
        assert!(AppRequest::from_route_body(&json!({"method": "ping"})).is_err());
    }

    #[test]
    fn a_view_loads_from_text_or_blob_with_its_ui_meta() {
        let read = json!({"contents": [{
            "uri": "ui://w/v", "mimeType": MIME_TYPE, "text": "<p>hi</p>",
            "_meta": {"ui": {"prefersBorder": true, "csp": {"connectDomains": []}}}
        }]});
        let view = loaded_view("ui://w/v", &read).unwrap();
        assert_eq!(view["html"], "<p>hi</p>");
        assert_eq!(view["mimeType"], MIME_TYPE);
        assert_eq!(view["meta"]["prefersBorder"], true);
        let blob = json!({"contents": [{"uri": "ui://w/v", "blob": "PHA+aGk8L3A+"}]});
        assert_eq!(loaded_view("ui://w/v", &blob).unwrap()["html"], "<p>hi</p>");
        let json_doc = json!({"contents": [{"uri": "ui://w/v", "mimeType": "application/json", "text": "{}"}]});
        assert!(loaded_view("ui://w/v", &json_doc).is_err());
        assert!(loaded_view("ui://w/v", &json!({"contents": []})).is_err());
    }

    #[test]
    fn an_error_result_is_an_mcp_result_with_is_error() {
        let result = error_result("no");
        assert_eq!(result["isError"], true);
        assert_eq!(result["content"][0], json!({"type": "text", "text": "no"}));
    }
}
