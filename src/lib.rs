//! leanctx: daemon-less conversation identity for context-saving MCP servers.
//!
//! Hosts (Cursor, Claude Code, Codex CLI, CodeBuddy Code) run `leanctx hook
//! <host>` on their events; it records who is talking into shared state in
//! the data dir (an `active_transcript.json` slot and a bounded journal) and
//! gates MCP calls. MCP servers ask the read path ([`ReadPath`],
//! [`readpath`]) whether a re-read stub is true for the caller of this call
//! ([`McpCall`]), and the delivery ledger ([`ReadPath::stub`],
//! [`ReadPath::deliver`], [`ledger`]) whether the host confirmed the
//! model received that content whole in the caller's current context window
//! (docs/DELIVERY.md says what hosts really hand the model). lean-ctx's
//! own calls are the free functions re-exported here
//! ([`current_conversation_id`], [`conversation_allows_stub`], …).
//!
//! That is the library's API. The other modules are the binary's layers
//! (docs/ARCHITECTURE.md), public only so the tests and benchmarks can
//! reach them, and hidden from these docs:
//! `fsx` (file primitives) < `base` < `state` / `gate` < `witness` <
//! `identity` / `hosts` < `hook` / `install` < `status` / `serve` < `cli`.

#[doc(hidden)]
pub mod base;
#[doc(hidden)]
pub mod cli;
#[doc(hidden)]
pub mod fsx;
#[doc(hidden)]
pub mod gate;
#[doc(hidden)]
pub mod hook;
#[doc(hidden)]
pub mod hosts;
pub mod identity;
#[doc(hidden)]
pub mod install;
#[doc(hidden)]
pub mod serve;
pub mod state;
pub mod stats;
#[doc(hidden)]
pub mod status;
#[doc(hidden)]
pub mod witness;

// The library API at the paths it had before the layers were folders
// (`leanctx::readpath::ReadPath`, `leanctx::ledger::sent_content`, …).
pub use identity::{mcp_call, readpath, stub};
pub use state::ledger;

pub use base::host::Host;
pub use identity::caller::{Caller, Source};
pub use identity::decision::{Decision, Reason};
pub use identity::mcp_call::McpCall;
pub use identity::readpath::{
    ReadPath, StubAnswer, StubQuery, conversation_allows_cold_stub, conversation_allows_stub, current_conversation_id,
    current_conversation_id_fresh, multiple_conversations_recent, stub_decision,
};
pub use identity::stub::{LedgerAnswer, Recorded};
