//! A2A 1.0 (the Agent2Agent protocol), beside AG-UI's `protocol`: its wire types and errors as
//! the JSON-RPC and HTTP+JSON bindings carry them, how a run's AG-UI events become a task's
//! frames, and the client this server's agents delegate with. Depends on `protocol` only; the
//! routes that serve it are `api`'s.

pub(crate) mod client;
pub(crate) mod errors;
pub(crate) mod inbound;
pub(crate) mod task;
pub(crate) mod types;

/// The metadata key of what agui-lambda adds to A2A's frames: a run's token usage on the status
/// update that ends it (`{"agui-lambda": {"usage": [TokenUsage, …]}}`), which A2A has no field
/// for. Its client reads the same from an agui-lambda agent.
pub(crate) const VENDOR_KEY: &str = "agui-lambda";
