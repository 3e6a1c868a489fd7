//! Who is calling, and may they be served a stub: the caller's scope
//! chain ([`caller`]), the per-call identity an MCP call carries
//! ([`mcp_call`]), the pure stub rules ([`decision`]), and the read path
//! that gathers the facts for them from the state ([`readpath`], [`stub`]).

pub mod caller;
pub mod decision;
pub mod delivery;
pub mod mcp_call;
pub mod readpath;
pub mod stub;
