//! Integration tests: the real handler over HTTP, on the in-memory store or DynamoDB Local. The
//! model is the fixture scenarios played in process (`fixture_model`), except in the tests about
//! the OpenAI wire format (named `wire_…`), where it is a third-party OpenAI-compatible mock
//! (`@copilotkit/aimock`) on loopback, one per test. `cargo test -- --skip wire_` needs no Node.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod both_stores;
mod create_table;
mod dynamo_local;
mod dynamo_proxy;
mod dynamo_runs;
mod fixture_model;
mod helpers;
mod hostile;
mod hosting;
mod lambda_emulator;
mod loopback;
mod s3_local;
mod slow_model;
mod slow_tools;
mod sse_follow;
mod step_model;
mod strict_messages;
mod strict_models;
mod strict_transcriptions;
mod window_model;

mod a2a_client;
mod a2a_server;
mod a2a_subagents;
mod a2ui_surfaces;
mod agent_runs;
mod agentscope;
mod agkit;
mod anthropic;
mod attachments_store;
mod auth;
mod bedrock;
mod copilotkit;
mod copilotkit_dynamo;
mod copilotkit_extras;
mod copilotkit_runs;
mod dev_page;
mod example_agent;
mod full_history;
mod gemini;
mod helpful_errors;
mod incremental_clients;
mod input_errors;
mod interrupts;
mod lambda_events;
mod lifecycle;
mod long_conversation;
mod long_conversation_facts;
mod long_runs;
mod long_runs_a2a;
mod long_runs_cut;
mod mcp;
mod mcp_apps;
mod memories;
mod multimodal;
mod observability;
mod open_generative_ui;
mod resilience;
mod responses;
mod run_input_cases;
mod store_checkpoints;
mod store_context;
mod store_contract;
mod store_delegation;
mod store_history;
mod store_shelf;
mod store_threads;
mod subagents;
mod subagents_first_write;
mod threads;
mod transcription;
mod v1_agent;
