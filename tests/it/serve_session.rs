//! `session compact` / `restore` through the real `leanctx serve`: a
//! compaction ends every earlier delivery, those of the most recent turns
//! too (the server cannot know which turns a proxy keeps:
//! docs/ARCHITECTURE.md, "The server"), and `restore` brings none back.

use crate::serve::{Serve, claude_batch, claude_pre, is_stub, text};
use crate::support::Sandbox;
use serde_json::{Value, json};

#[test]
fn compact_ends_even_the_last_turns_deliveries_and_restore_brings_none_back() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.join("old.rs"), "fn old() {}\n").unwrap();
    std::fs::write(sb.project.join("new.rs"), "fn new() {}\n").unwrap();
    let mut s = Serve::init(&sb, "claude-code");
    let mut n = 0;
    let mut call = |s: &mut Serve, tool: &str, args: Value| {
        n += 1;
        let id = format!("toolu_k{n:03}");
        let meta = claude_pre(&sb, "A", None, &id, "x");
        let r = s.request("tools/call", json!({"name": tool, "arguments": args, "_meta": meta}))["result"].clone();
        claude_batch(&sb, "A", &id, &r);
        r
    };
    call(&mut s, "read", json!({"path": "old.rs"}));
    // A turn later, the last turn before the compaction: held, a stub.
    call(&mut s, "read", json!({"path": "new.rs"}));
    assert!(is_stub(&call(&mut s, "read", json!({"path": "new.rs"}))));
    let r = call(&mut s, "session", json!({"action": "compact", "summary": "s", "keep_recent_turns": 4}));
    assert_eq!(r["isError"], false, "{r}");
    let r = call(&mut s, "session", json!({"action": "restore"}));
    assert!(text(&r).starts_with("compaction directive cleared"), "{r}");
    // Neither comes back: both whole (the kept turn's too).
    assert_eq!(text(&call(&mut s, "read", json!({"path": "new.rs"}))), "fn new() {}\n");
    assert_eq!(text(&call(&mut s, "read", json!({"path": "old.rs"}))), "fn old() {}\n");
    // Delivered after the compaction: stubs again.
    assert!(is_stub(&call(&mut s, "read", json!({"path": "old.rs"}))));
    // Restore again: nothing to clear, and still no delivery lost.
    let r = call(&mut s, "session", json!({"action": "restore"}));
    assert!(text(&r).starts_with("no compaction directive was active"), "{r}");
    assert!(is_stub(&call(&mut s, "read", json!({"path": "new.rs"}))));
}
