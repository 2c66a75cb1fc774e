//! A2A 1.0 (the Agent2Agent protocol), beside AG-UI's `protocol`: its wire types and errors as
//! the JSON-RPC and HTTP+JSON bindings carry them, how a run's AG-UI events become a task's
//! frames, and the client this server's agents delegate with. Depends on `protocol` only; the
//! routes that serve it are `api`'s.

pub(crate) mod errors;
pub(crate) mod inbound;
pub(crate) mod task;
pub(crate) mod types;
// The sub-agent wiring (profiles naming an A2A card) calls the client; until it lands, its
// tests (and tests/api's peers) do.
#[allow(
    dead_code,
    reason = "the sub-agent wiring calls it; until then tests/api's peers do, through `testing`"
)]
pub(crate) mod client;
