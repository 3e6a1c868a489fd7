//! leanctx: daemon-less conversation identity for context-saving MCP servers.
//!
//! Hosts (Cursor, Claude Code, Codex CLI, CodeBuddy Code) run `leanctx hook
//! <host>` on their events; it records who is talking, and what the model
//! was shown, into shared state in the data dir. An MCP server asks this
//! library, before it answers a re-read with a short `[unchanged]` stub,
//! whether that stub is true for the caller of *this* call: the delivery
//! ledger ([`ReadPath::stub`], [`ReadPath::deliver`], [`ledger`]) answers
//! "serve the stub" only when the host confirmed that this caller's model
//! received this very content, whole, in its current context window
//! (docs/DELIVERY.md says what hosts really hand the model).
//!
//! # Depending on it
//!
//! leanctx is not on crates.io (`publish = false`: its state format is
//! shared with the `leanctx` binary the hosts run, so the two are meant to
//! be built from the same commit). Depend on it by git or path, without the
//! command line's crates (clap, the installers' JSON and TOML editors):
//!
//! ```toml
//! [dependencies]
//! leanctx = { git = "https://github.com/OWNER/leanctx", rev = "COMMIT", default-features = false }
//! ```
//!
//! The default feature `cli` is the binary's (the command line, the hook
//! handler, the installers, `status`); the read path, the ledger and
//! lean-ctx's functions below need none of it.
//!
//! # A server's read, end to end
//!
//! For every read: build the [`McpCall`] from the `tools/call` request you
//! are answering, digest the result you would send ([`ledger::sent_content`]),
//! and ask [`ReadPath::stub`]. `allow`: send your stub. Otherwise send the
//! content; the answer has recorded that it is being delivered to this
//! caller, and the host's hooks will confirm (or not) what the model got.
//!
//! ```
//! use leanctx::{McpCall, ReadPath, ledger};
//! use serde_json::json;
//!
//! # let tmp = tempfile::tempdir().unwrap();
//! # let data_dir = tmp.path();
//! // `ReadPath::from_process()` in a server: the data dir and environment
//! // the hooks use. Here, a data dir of our own.
//! let rp = ReadPath::new(data_dir, Default::default());
//! let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
//!     "name": "ctx_read", "arguments": {"path": "src/main.rs"},
//!     "_meta": {"sessionId": "0199a0c2-0000-7000-8000-000000000001", "callId": "call_1"}}});
//! let call = McpCall::from_json(&request).expect("a tools/call request");
//! let result = json!({"content": [{"type": "text", "text": "fn main() {}"}]});
//! let sent = ledger::sent_content(&result).expect("an MCP result");
//!
//! let answer = rp.stub(&call, "src/main.rs", "sha256:9f2c", Some(&sent)).expect("valid key and version");
//! if answer.decision.allow {
//!     // serve "[unchanged]"
//! } else {
//!     // send `result`; the delivery is recorded for this caller
//! }
//! // Nothing was delivered to this chat before: send the content.
//! assert!(!answer.decision.allow);
//! assert_eq!(answer.decision.reason.as_str(), "not-delivered");
//! assert!(answer.recorded.is_some_and(|r| r.recorded));
//! ```
//!
//! lean-ctx's own calls are the free functions re-exported here
//! ([`current_conversation_id`], [`conversation_allows_stub`],
//! [`stub_decision`], …): they answer only "is this the same caller, with no
//! compaction since", for servers that keep their own ledger.
//!
//! The other modules are the binary's layers (docs/ARCHITECTURE.md),
//! public only so the tests and benchmarks can reach them, and hidden from
//! these docs: `fsx` (file primitives) < `base` < `state` / `gate` <
//! `witness` < `identity` / `hosts` < `hook` / `install` < `status` / `serve` <
//! `cli`.

#![warn(missing_docs)]

#[doc(hidden)]
pub mod base;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
#[doc(hidden)]
pub mod fsx;
#[doc(hidden)]
pub mod gate;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod hook;
#[doc(hidden)]
pub mod hosts;
pub mod identity;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod install;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod serve;
pub mod state;
pub mod stats;
#[cfg(feature = "cli")]
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
