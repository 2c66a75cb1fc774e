//! agui-lambda: an AG-UI agent server that runs as one AWS Lambda function with a streaming
//! Function URL, or as a local HTTP server. Dependencies point one way:
//! `api` → `agent` → {`protocol`, `store`, `model`}.

pub mod agent;
pub mod api;
pub mod config;
pub mod model;
pub mod protocol;
pub mod startup;
pub mod store;
pub mod telemetry;
