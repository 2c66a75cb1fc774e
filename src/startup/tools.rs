//! Start-up's server tools: the MCP servers' tools, listed once per cold start beside yours.

use super::StartupError;
#[cfg(feature = "mcp")]
use super::read_secret;
use crate::agent::ToolRegistry;
use crate::config::Config;

/// Adds the tools of the MCP servers of `MCP_SERVERS` to `tools`: every server is listed at
/// once, each within `MCP_CONNECT_TIMEOUT_MS`. A server that cannot be reached or listed is
/// logged and skipped; a tool name already taken stops start-up.
pub(super) async fn add_mcp_tools(
    config: &Config,
    tools: &mut ToolRegistry,
) -> Result<(), StartupError> {
    let settings = &config.tools.mcp;
    if settings.servers.is_empty() {
        return Ok(());
    }
    #[cfg(not(feature = "mcp"))]
    {
        let _ = tools;
        Err(StartupError::NotBuilt {
            setting: "MCP_SERVERS",
        })
    }
    #[cfg(feature = "mcp")]
    {
        let began = std::time::Instant::now();
        let listings = settings.servers.iter().map(|server| async move {
            let secret = match &server.headers_secret_id {
                Some(secret_id) => Some(read_secret(secret_id).await?),
                None => None,
            };
            Ok::<_, StartupError>(
                crate::mcp::list_tools(server, secret.as_ref(), settings.list_timeout).await,
            )
        });
        let listings = futures_util::future::join_all(listings).await;
        for (server, listing) in settings.servers.iter().zip(listings) {
            let listed = match listing? {
                Ok(listed) => listed,
                Err(error) => {
                    tracing::warn!(
                        server = %server.name,
                        host = %server.host(),
                        %error,
                        "MCP server skipped: its tools are not offered until the next cold start"
                    );
                    continue;
                }
            };
            let mut offered = 0_usize;
            for tool in listed {
                use crate::agent::tools::ServerTool;
                let (name, remote) = (tool.name().to_owned(), tool.remote_name().to_owned());
                match tools.add(tool) {
                    Ok(()) => offered += 1,
                    Err(crate::agent::tools::RegistryError::Duplicate(_)) => {
                        return Err(StartupError::ToolNameTaken {
                            server: server.name.clone(),
                            remote,
                            name,
                        });
                    }
                    // A schema that does not compile: the server's other tools are still good.
                    Err(error) => {
                        tracing::warn!(server = %server.name, %error, "MCP tool left out")
                    }
                }
            }
            tracing::info!(server = %server.name, tools = offered, "MCP server's tools offered");
        }
        tracing::info!(
            servers = settings.servers.len(),
            elapsed_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
            "MCP servers listed"
        );
        Ok(())
    }
}

/// Whether `name` is `{server}__…` for a configured MCP server none of whose tools is offered.
pub(super) fn mcp_server_offers_nothing(config: &Config, tools: &ToolRegistry, name: &str) -> bool {
    config.tools.mcp.servers.iter().any(|server| {
        let prefix = server.namespaced("");
        name.starts_with(&prefix) && !tools.specs().any(|spec| spec.name.starts_with(&prefix))
    })
}
