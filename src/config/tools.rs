//! The tools section: how much of a server tool's result reaches the model, the remote MCP
//! servers whose tools are offered, and whether CopilotKit is told to offer its sandboxed-UI
//! tool.

use super::vars::Vars;
use super::{ConfigError, Section};
use crate::mcp::{McpServerSettings, McpSettings};
use std::time::Duration;

/// Server tools beyond the agent's own settings: result size, and remote MCP servers.
#[derive(Debug, Clone)]
pub struct ToolsConfig {
    /// `TOOL_RESULT_MAX_BYTES`: server tool results (and error messages) are cut to this, with
    /// a note, before they reach the model and the thread.
    pub max_result_bytes: usize,
    /// `MCP_SERVERS` and `MCP_CONNECT_TIMEOUT_MS`.
    pub mcp: McpSettings,
    /// `OPEN_GENERATIVE_UI`: CopilotKit's runtime info says Open Generative UI is on, so its
    /// pages offer the `generateSandboxedUi` tool (whose calls stream as a preview whenever a
    /// client offers it, on or off).
    pub open_generative_ui: bool,
}

impl Section for ToolsConfig {
    const SETTINGS: &'static [&'static str] = &[
        "TOOL_RESULT_MAX_BYTES",
        "MCP_SERVERS",
        "MCP_CONNECT_TIMEOUT_MS",
        "OPEN_GENERATIVE_UI",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
            max_result_bytes: vars.bounded(
                "TOOL_RESULT_MAX_BYTES",
                crate::agent::tools::DEFAULT_MAX_RESULT_BYTES,
                1_024..=1_048_576,
            )?,
            mcp: McpSettings {
                servers: match vars.text("MCP_SERVERS") {
                    Some(json) => McpServerSettings::parse_list(&json)?,
                    None => Vec::new(),
                },
                list_timeout: Duration::from_millis(vars.bounded(
                    "MCP_CONNECT_TIMEOUT_MS",
                    5_000,
                    100..=60_000,
                )?),
            },
            open_generative_ui: vars.flag("OPEN_GENERATIVE_UI", false)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::tests::config;
    use std::time::Duration;

    #[test]
    fn tool_settings_have_defaults_and_read_mcp_servers() {
        let unset = config(&[]).unwrap();
        assert_eq!(unset.tools.max_result_bytes, 100_000);
        assert!(unset.tools.mcp.servers.is_empty());
        assert_eq!(unset.tools.mcp.list_timeout, Duration::from_secs(5));
        assert!(!unset.tools.open_generative_ui);
        let set = config(&[
            ("TOOL_RESULT_MAX_BYTES", "2048"),
            ("MCP_CONNECT_TIMEOUT_MS", "1500"),
            ("OPEN_GENERATIVE_UI", "true"),
            (
                "MCP_SERVERS",
                r#"[{"name":"docs","url":"https://mcp.example.com/mcp","timeout_ms":2000}]"#,
            ),
        ])
        .unwrap();
        assert_eq!(set.tools.max_result_bytes, 2048);
        assert_eq!(set.tools.mcp.list_timeout, Duration::from_millis(1500));
        assert_eq!(set.tools.mcp.servers[0].name, "docs");
        assert!(set.tools.open_generative_ui);
        assert_eq!(
            set.tools.mcp.servers[0].timeout,
            Duration::from_millis(2000)
        );
    }
}
