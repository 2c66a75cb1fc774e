//! Remote MCP servers (streamable HTTP) as server tools: their settings (`MCP_SERVERS`), and,
//! with the `mcp` feature, the client that lists their tools once per cold start and calls them
//! during runs ([`McpTool`]), and the MCP Apps host their views' requests go through
//! ([`McpApps`]). Depends on `agent` (the tool trait), `genui` (MCP Apps' shapes) and `protocol`
//! (the tool-name rule) only; reading header secrets from Secrets Manager is `startup`'s.

#[cfg(feature = "mcp")]
mod apps;
#[cfg(feature = "mcp")]
mod client;

#[cfg(feature = "mcp")]
pub(crate) use apps::McpApps;
/// One server's MCP session, shared by its tools and its views' requests.
#[cfg(feature = "mcp")]
type Session = rmcp::service::RunningService<rmcp::service::RoleClient, rmcp::model::ClientConfig>;
#[cfg(feature = "mcp")]
pub(crate) use client::{ListedServer, list_server};

use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Longest server name: leaves 30 of the 64 characters of a tool name for the server's own
/// name after `{server}__`.
pub(crate) const MAX_SERVER_NAME_CHARS: usize = 32;
/// Most servers one deployment lists at cold start.
pub(crate) const MAX_SERVERS: usize = 16;
/// Between a server's name and its tool's in the name the model sees.
pub(crate) const NAMESPACE_SEPARATOR: &str = "__";

/// Remote MCP servers whose tools are offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct McpSettings {
    pub servers: Vec<McpServerSettings>,
    /// Each server's connection, handshake and tool listing at cold start must end within this;
    /// a server that does not is skipped (`MCP_CONNECT_TIMEOUT_MS`).
    pub list_timeout: Duration,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            list_timeout: Duration::from_secs(5),
        }
    }
}

/// One entry of `MCP_SERVERS`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerSettings {
    /// The namespace of its tools: the model sees `{name}__{tool}`.
    pub name: String,
    /// The streamable HTTP endpoint, e.g. `https://mcp.example.com/mcp`.
    pub url: String,
    /// Headers sent with every request. Never credentials: those come from
    /// [`headers_secret_id`](Self::headers_secret_id).
    pub headers: BTreeMap<String, String>,
    /// A Secrets Manager secret holding a JSON object of header names and values (an
    /// `Authorization` header, an API key), read once per cold start.
    pub headers_secret_id: Option<String>,
    /// The longest a call of one of its tools may take.
    pub timeout: Duration,
    /// Whether its tools annotated `destructiveHint: true` wait for a person's approval.
    pub approve_destructive: bool,
    /// Whether this host offers it MCP Apps: it is told the host shows views, its UI tools'
    /// views are shown next to their calls, and its views may call back. Off, its tools are
    /// plain tools (a tool only views may call is still never offered to the model).
    pub apps: bool,
}

/// Why `MCP_SERVERS` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpConfigError {
    #[error(
        "not a JSON list of servers ({0}); expected e.g. \
         [{{\"name\":\"docs\",\"url\":\"https://mcp.example.com/mcp\"}}]"
    )]
    Json(String),
    #[error("at most {MAX_SERVERS} servers, got {0}")]
    TooMany(usize),
    #[error("server name {0:?}: 1-{MAX_SERVER_NAME_CHARS} letters, digits, _ or -, without \"__\"")]
    BadName(String),
    #[error("server name {0:?} is used twice")]
    DuplicateName(String),
    #[error("server {server}: url {url:?} is not an http(s) URL")]
    BadUrl { server: String, url: String },
    #[error("server {server}: timeout_ms must be within 100..=900000, got {value}")]
    BadTimeout { server: String, value: u64 },
    #[error("server {server}: header {header:?}: {reason}")]
    BadHeader {
        server: String,
        header: String,
        reason: &'static str,
    },
}

/// An `MCP_SERVERS` entry as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerEntry {
    name: String,
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    headers_secret_id: Option<String>,
    timeout_ms: Option<u64>,
    approve_destructive: Option<bool>,
    apps: Option<bool>,
}

impl McpServerSettings {
    /// Reads `MCP_SERVERS`: a JSON list of `{name, url, headers?, headers_secret_id?,
    /// timeout_ms?, approve_destructive?, apps?}`; plain `headers` holding credentials are refused.
    pub fn parse_list(json: &str) -> Result<Vec<Self>, McpConfigError> {
        let entries: Vec<ServerEntry> =
            serde_json::from_str(json).map_err(|err| McpConfigError::Json(err.to_string()))?;
        if entries.len() > MAX_SERVERS {
            return Err(McpConfigError::TooMany(entries.len()));
        }
        let mut servers: Vec<Self> = Vec::with_capacity(entries.len());
        for entry in entries {
            let server = Self::from_entry(entry)?;
            if servers.iter().any(|other| other.name == server.name) {
                return Err(McpConfigError::DuplicateName(server.name));
            }
            servers.push(server);
        }
        Ok(servers)
    }

    fn from_entry(entry: ServerEntry) -> Result<Self, McpConfigError> {
        let name = entry.name;
        let name_ok = !name.is_empty()
            && name.chars().count() <= MAX_SERVER_NAME_CHARS
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && !name.contains(NAMESPACE_SEPARATOR);
        if !name_ok {
            return Err(McpConfigError::BadName(name));
        }
        let url_ok = reqwest::Url::parse(&entry.url)
            .is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.has_host());
        if !url_ok {
            return Err(McpConfigError::BadUrl {
                server: name,
                url: entry.url,
            });
        }
        for (header, value) in &entry.headers {
            check_header(&name, header, value)?;
            if looks_like_a_credential(header) {
                return Err(McpConfigError::BadHeader {
                    server: name,
                    header: header.clone(),
                    reason: "credentials go in the secret named by headers_secret_id, never in the environment",
                });
            }
        }
        let timeout_ms = entry.timeout_ms.unwrap_or(30_000);
        if !(100..=900_000).contains(&timeout_ms) {
            return Err(McpConfigError::BadTimeout {
                server: name,
                value: timeout_ms,
            });
        }
        Ok(Self {
            name,
            url: entry.url,
            headers: entry.headers,
            headers_secret_id: entry.headers_secret_id.filter(|id| !id.trim().is_empty()),
            timeout: Duration::from_millis(timeout_ms),
            approve_destructive: entry.approve_destructive.unwrap_or(true),
            apps: entry.apps.unwrap_or(true),
        })
    }

    /// The name the model sees for this server's tool `tool`.
    pub fn namespaced(&self, tool: &str) -> String {
        format!("{}{NAMESPACE_SEPARATOR}{tool}", self.name)
    }

    /// The URL's host, for logs (the URL itself may carry a key in its query).
    pub fn host(&self) -> String {
        reqwest::Url::parse(&self.url)
            .ok()
            .and_then(|url| url.host_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// A header name and value that HTTP accepts.
fn check_header(server: &str, header: &str, value: &str) -> Result<(), McpConfigError> {
    check_header_pair(header, value).map_err(|reason| McpConfigError::BadHeader {
        server: server.to_owned(),
        header: header.to_owned(),
        reason,
    })
}

/// Why HTTP would not take a header name and value, if it would not.
pub(crate) fn check_header_pair(header: &str, value: &str) -> Result<(), &'static str> {
    http::HeaderName::from_bytes(header.as_bytes()).map_err(|_| "not a header name")?;
    http::HeaderValue::from_str(value).map_err(|_| "its value is not a header value")?;
    Ok(())
}

/// Header names that carry credentials, refused in plain `headers`.
pub(crate) fn looks_like_a_credential(header: &str) -> bool {
    let header = header.to_ascii_lowercase();
    matches!(
        header.as_str(),
        "authorization" | "proxy-authorization" | "cookie"
    ) || ["token", "secret", "key", "password", "auth"]
        .iter()
        .any(|word| header.contains(word))
}

/// The header names and values of a `headers_secret_id` secret: a JSON object of strings.
pub(crate) fn parse_secret_headers(
    server: &str,
    secret: &str,
) -> Result<BTreeMap<String, String>, McpConfigError> {
    let headers: BTreeMap<String, String> = serde_json::from_str(secret).map_err(|_| {
        // Never the serde message: it may quote the secret.
        McpConfigError::Json(format!(
            "the headers secret of server {server} is not a JSON object of header names and string values"
        ))
    })?;
    for (header, value) in &headers {
        check_header(server, header, value)?;
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_server_list_parses_and_plain_credentials_are_refused() {
        let servers = McpServerSettings::parse_list(
            r#"[{"name": "docs", "url": "https://mcp.example.com/mcp",
                 "headers_secret_id": "agui/docs-mcp", "timeout_ms": 10000}]"#,
        )
        .unwrap();
        assert_eq!(servers[0].timeout.as_millis(), 10_000);
        assert!(servers[0].approve_destructive);
        // Credentials never sit in the environment as plain text:
        assert!(
            McpServerSettings::parse_list(
                r#"[{"name": "docs", "url": "https://mcp.example.com/mcp",
                     "headers": {"Authorization": "Bearer sk-live"}}]"#,
            )
            .is_err()
        );
    }

    use super::*;

    fn one(json: &str) -> Result<McpServerSettings, McpConfigError> {
        McpServerSettings::parse_list(json).map(|mut servers| servers.remove(0))
    }

    #[test]
    fn an_entry_with_defaults() {
        let server = one(r#"[{"name":"everything","url":"http://127.0.0.1:3001/mcp"}]"#).unwrap();
        assert_eq!(server.timeout, Duration::from_secs(30));
        assert!(server.approve_destructive);
        assert!(server.apps);
        assert!(server.headers.is_empty());
        assert_eq!(server.namespaced("echo"), "everything__echo");
        assert_eq!(server.host(), "127.0.0.1");
    }

    #[test]
    fn every_field_is_read() {
        let server = one(
            r#"[{"name":"docs-1","url":"https://mcp.example.com/mcp","headers":{"X-Tenant":"acme"},
                 "headers_secret_id":"arn:aws:secretsmanager:eu-west-1:1:secret:x","timeout_ms":100,
                 "approve_destructive":false,"apps":false}]"#,
        )
        .unwrap();
        assert_eq!(server.headers["X-Tenant"], "acme");
        assert_eq!(
            server.headers_secret_id.as_deref(),
            Some("arn:aws:secretsmanager:eu-west-1:1:secret:x")
        );
        assert_eq!(server.timeout, Duration::from_millis(100));
        assert!(!server.approve_destructive);
        assert!(!server.apps);
    }

    #[test]
    fn bad_entries_are_refused_with_what_is_wrong() {
        let url = r#""url":"http://127.0.0.1:1/mcp""#;
        for (json, expected) in [
            ("{}".to_owned(), "not a JSON list"),
            (
                format!(r#"[{{"name":"a b",{url}}}]"#),
                "server name \"a b\"",
            ),
            (format!(r#"[{{"name":"a__b",{url}}}]"#), "without \"__\""),
            (
                format!(r#"[{{"name":"{}",{url}}}]"#, "n".repeat(33)),
                "server name",
            ),
            (
                format!(r#"[{{"name":"a",{url}}},{{"name":"a",{url}}}]"#),
                "used twice",
            ),
            (
                r#"[{"name":"a","url":"file:///etc/passwd"}]"#.to_owned(),
                "not an http(s) URL",
            ),
            (
                format!(r#"[{{"name":"a",{url},"timeout_ms":99}}]"#),
                "timeout_ms",
            ),
            (
                format!(r#"[{{"name":"a",{url},"headers":{{"Authorization":"Bearer x"}}}}]"#),
                "credentials",
            ),
            (
                format!(r#"[{{"name":"a",{url},"headers":{{"X-Api-Key":"x"}}}}]"#),
                "credentials",
            ),
            (
                format!(r#"[{{"name":"a",{url},"headers":{{"bad header":"x"}}}}]"#),
                "not a header name",
            ),
            (
                format!(r#"[{{"name":"a",{url},"secret":"x"}}]"#),
                "unknown field",
            ),
        ] {
            let err = McpServerSettings::parse_list(&json)
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{json}: {err}");
        }
        let many = format!(
            "[{}]",
            (0..17)
                .map(|i| format!(r#"{{"name":"s{i}",{url}}}"#))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert!(matches!(
            McpServerSettings::parse_list(&many),
            Err(McpConfigError::TooMany(17))
        ));
    }

    #[test]
    fn secret_headers_are_an_object_of_strings_and_never_quoted_in_errors() {
        let headers =
            parse_secret_headers("docs", r#"{"Authorization":"Bearer sk-1","X-Key":"k"}"#).unwrap();
        assert_eq!(headers["Authorization"], "Bearer sk-1");
        let err = parse_secret_headers("docs", r#"{"Authorization": 7, "x": "sk-secret"}"#)
            .unwrap_err()
            .to_string();
        assert!(!err.contains("sk-secret") && err.contains("docs"), "{err}");
        assert!(parse_secret_headers("docs", "Bearer sk-1").is_err());
    }
}
