//! HTTP: routing, request decoding, error responses and the two ways to serve (the Lambda
//! streaming runtime and a local HTTP server). The only module that knows `lambda_http`/hyper.
//! [`App`] is the door every request goes through; `routes.rs` holds the route table, and each
//! group of routes its own file of handlers.

mod a2a;
mod agentcore;
mod app;
mod body;
pub(crate) mod copilotkit;
mod dev_page;
pub(crate) mod dispatch;
mod error;
pub(crate) mod lambda;
pub(crate) mod local;
mod mcp_apps;
mod memories;
mod request;
mod response;
mod routes;
mod runs;
pub(crate) mod shutdown;
pub(crate) mod stream;
mod threads;
mod v1_agent;

/// What `/info` says of generative UI, filled at start-up from the features' settings.
pub(crate) use crate::dialects::copilotkit::GenerativeUi;
pub(crate) use app::ApiSettings;
pub use app::App;
pub(crate) use app::McpViews;
pub(crate) use copilotkit::CopilotKitSettings;
