//! Generative UI as protocol material: A2UI surfaces (types, catalogs, validation), the Open
//! Generative UI patch stream and the MCP Apps activity. Pure: no I/O, no run loop; the agent
//! decides when a client can paint and offers the tools, the stream carries what this builds.

pub(crate) mod a2ui;
