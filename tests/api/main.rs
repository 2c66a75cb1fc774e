//! Integration tests: the real handler over HTTP, the in-memory store, and a third-party
//! OpenAI-compatible mock model (`@copilotkit/aimock`) on loopback, one per test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod create_table;
mod dynamo_local;
mod dynamo_runs;
mod helpers;
mod hostile;
mod slow_model;

mod agent_runs;
mod agentscope;
mod agkit;
mod auth;
mod bedrock;
mod input_errors;
mod lambda_events;
mod lifecycle;
mod store_contract;
