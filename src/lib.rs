//! leanctx: daemon-less conversation identity for context-saving MCP servers.
//!
//! Hosts (Cursor, Claude Code, Codex CLI, CodeBuddy Code) run `leanctx hook
//! <host>` on their events; it records who is talking into shared state in
//! the data dir (an `active_transcript.json` slot and a bounded journal) and
//! gates MCP calls. MCP servers ask the read path ([`readpath`]) whether a
//! re-read stub is true for the caller of this call, and the delivery ledger
//! ([`ledger`], [`stub`]) whether the host confirmed the model received that
//! content whole in the caller's current context window
//! (docs/DELIVERY.md says what hosts really hand the model).

pub mod clock;
pub mod decision;
pub mod digest;
pub mod event;
pub mod fingerprint;
pub mod fsx;
pub mod gate;
pub mod hook;
pub mod host;
pub mod hosts;
pub mod identity;
pub mod ids;
pub mod install;
pub mod journal;
pub mod ledger;
pub mod mcp_call;
pub mod paths;
pub mod policy;
pub mod readpath;
pub mod slot;
pub mod status;
pub mod stdin;
pub mod stub;
pub mod tool;

pub use decision::{Decision, Reason};
pub use host::Host;
pub use identity::{Caller, Source};
pub use readpath::{
    ReadPath, StubAnswer, StubQuery, conversation_allows_cold_stub, conversation_allows_stub, current_conversation_id,
    current_conversation_id_fresh, multiple_conversations_recent, stub_decision,
};
pub use stub::{LedgerAnswer, Recorded};
