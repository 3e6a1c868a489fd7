//! A panic in one message's handler must not take the server down: the host
//! would lose its tools for the rest of the session. [`handle`] catches it,
//! answers that request with a JSON-RPC internal error, and the loop goes on.
//! What the panic itself prints is `cli::panics`' (its place, not its text).
//!
//! Why the ledger stays consistent: a read records its delivery *before* its
//! answer is written (the host's hook may fire as soon as the result is out,
//! and must find the record). A panic after the record and before the answer
//! leaves a delivery whose content never reached the host. It backs no stub:
//! a stub needs the host's hook to confirm that very content by its digest
//! (`state::ledger::confirmation`), and the host got an error instead, so
//! the delivery stays `unconfirmed` (no hook) or `different-content` (a hook
//! showing the error). The next read of that file sends it whole. What the
//! server keeps in memory (`bases`, `memory`) is only ever a hint checked
//! against the ledger; the process-wide journal readers a panic may have
//! left half-read start over (`identity::readpath`'s poisoned lock).

use super::protocol;
use serde_json::Value;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What the host is told: never the panic's message (it may quote a file).
pub const INTERNAL_MESSAGE: &str =
    "internal error: leanctx serve failed on this request (a bug; its stderr says where). The server goes on.";

/// Run the handler of one message (`what`, for stderr); a panic in it
/// becomes an internal error for a request (`id`), no answer for anything
/// else, and a line on stderr either way.
pub fn handle(id: Option<&Value>, what: &str, f: impl FnOnce() -> Option<Value>) -> Option<Value> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            let answer =
                if id.is_some() { "answered with an internal error (-32603)" } else { "not a request: no answer" };
            eprintln!("leanctx serve: {what} panicked; {answer}; serving on");
            id.map(|i| protocol::error(i, protocol::INTERNAL_ERROR, INTERNAL_MESSAGE))
        }
    }
}

/// Tests only, and only in debug builds: `LEANCTX_SERVE_PANIC=<point>:<path>`
/// makes the handler panic at `point` (`call`: as a `tools/call` starts;
/// `delivered`: right after a read recorded its delivery) for the `read` of
/// `path`, with a message quoting the file's first line, so the tests can
/// see the guard, the ledger and stderr through the real binary. A release
/// build has no such point: this compiles to nothing there.
#[cfg(debug_assertions)]
#[track_caller]
pub fn test_panic(point: &str, path: &str, text: &str) {
    let Ok(want) = std::env::var("LEANCTX_SERVE_PANIC") else { return };
    if want.split_once(':') == Some((point, path)) {
        panic!("LEANCTX_SERVE_PANIC at {point} for {path}: {}", text.lines().next().unwrap_or(""));
    }
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn test_panic(_point: &str, _path: &str, _text: &str) {}
