//! A panic in one request's handler, through the real `leanctx serve`: the
//! request gets a JSON-RPC internal error that quotes nothing of the file,
//! stderr says where it happened (not what the panic's text quoted), the
//! server goes on, and a delivery recorded before the panic never backs a
//! stub. The panics are made by `LEANCTX_SERVE_PANIC` (src/serve/guard.rs),
//! which only debug builds, the ones these tests run, honour.

use crate::serve::{Serve, claude_batch, claude_pre, is_stub, text};
use crate::support::Sandbox;
use leanctx::state::journal::Record;
use serde_json::{Value, json};

/// In the file's first line, which the injected panic's message quotes.
const MARK: &str = "PIN-4821-never-on-stderr";

fn deliveries(sb: &Sandbox) -> usize {
    Sandbox::count(&sb.journal(), |r| matches!(r, Record::Delivery(_)))
}

fn call(s: &mut Serve, meta: Value, path: &str) -> Value {
    s.request("tools/call", json!({"name": "read", "arguments": {"path": path}, "_meta": meta}))
}

/// The answer is the internal error, and says nothing of the file.
fn assert_internal_error(r: &Value) {
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert!(r.get("result").is_none(), "{r}");
    assert!(!r.to_string().contains(MARK), "{r}");
}

#[test]
fn a_panic_after_the_record_is_answered_and_backs_no_stub() {
    let sb = Sandbox::new();
    let body = format!("// {MARK}\n{}", "fn boom() {}\n".repeat(20));
    std::fs::write(sb.project.join("boom.rs"), &body).unwrap();
    std::fs::write(sb.project.join("ok.rs"), "fn ok() {}\n".repeat(20)).unwrap();
    let mut s = Serve::spawn(sb.cmd(["serve"]).env("LEANCTX_SERVE_PANIC", "delivered:boom.rs"));
    s.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "claude-code", "version": "1"}}),
    );

    // The read panics after its delivery was recorded: an error, not the file.
    let meta = claude_pre(&sb, "A", None, "toolu_001", "boom.rs");
    let r = call(&mut s, meta, "boom.rs");
    assert_internal_error(&r);
    assert_eq!(deliveries(&sb), 1, "the panic came after the record");
    // What the host got was the error: its hook shows that, and the
    // recorded delivery is not confirmed by it.
    let got = json!({"content": [{"type": "text", "text": r["error"]["message"]}]});
    claude_batch(&sb, "A", "toolu_001", &got);

    // Chat B's read panics too, and no hook follows (the host gave up on it).
    assert_internal_error(&call(&mut s, claude_pre(&sb, "B", None, "toolu_010", "boom.rs"), "boom.rs"));
    assert_eq!(deliveries(&sb), 2);

    // The server goes on: other files are read and stubbed as usual.
    for (n, want_stub) in [(2, false), (3, true)] {
        let id = format!("toolu_00{n}");
        let r = call(&mut s, claude_pre(&sb, "A", None, &id, "ok.rs"), "ok.rs");
        assert_eq!(is_stub(&r["result"]), want_stub, "{r}");
        claude_batch(&sb, "A", &id, &r["result"]);
    }
    // A batch: the panicking request gets its error, the other its answer.
    let meta = claude_pre(&sb, "A", None, "toolu_004", "boom.rs");
    s.send(&json!([
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "boom.rs"}, "_meta": meta}},
        {"jsonrpc": "2.0", "id": 8, "method": "ping"}
    ]));
    let b = s.recv();
    assert_internal_error(&b[0]);
    assert_eq!((&b[0]["id"], &b[1]["id"], &b[1]["result"]), (&json!(7), &json!(8), &json!({})), "{b}");
    let (code, stderr) = s.finish_with_stderr();
    let stderr = stderr.replace('\\', "/"); // Windows: src\serve\read.rs
    assert_eq!(code, 0);
    assert!(stderr.contains("leanctx serve: panic at src/serve/read.rs:"), "{stderr}");
    assert!(stderr.contains("tools/call request 7 panicked; answered with an internal error (-32603)"), "{stderr}");
    assert!(!stderr.contains(MARK), "the panic's message quoted the file onto stderr: {stderr}");

    // The same data dir, a server that does not panic: the delivery recorded
    // before the panic backs no stub; the file goes out whole, then as usual.
    let mut s = Serve::init(&sb, "claude-code");
    let r = call(&mut s, claude_pre(&sb, "A", None, "toolu_005", "boom.rs"), "boom.rs");
    assert_eq!(text(&r["result"]), body, "a delivery whose content never reached the host backed a stub");
    claude_batch(&sb, "A", "toolu_005", &r["result"]);
    assert!(is_stub(&call(&mut s, claude_pre(&sb, "A", None, "toolu_006", "boom.rs"), "boom.rs")["result"]));
    // B, whose hook never fired after its panicked read: whole too.
    let r = call(&mut s, claude_pre(&sb, "B", None, "toolu_011", "boom.rs"), "boom.rs");
    assert_eq!(text(&r["result"]), body);
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_panic_as_the_call_starts_records_nothing() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.join("boom.rs"), format!("// {MARK}\n")).unwrap();
    let mut s = Serve::spawn(sb.cmd(["serve"]).env("LEANCTX_SERVE_PANIC", "call:boom.rs"));
    s.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "claude-code", "version": "1"}}),
    );
    for n in 1..=3 {
        let id = format!("toolu_00{n}");
        assert_internal_error(&call(&mut s, claude_pre(&sb, "A", None, &id, "boom.rs"), "boom.rs"));
    }
    assert_eq!(deliveries(&sb), 0);
    assert_eq!(s.request("ping", json!({}))["result"], json!({}));
    let (code, stderr) = s.finish_with_stderr();
    let stderr = stderr.replace('\\', "/"); // Windows: src\serve\read.rs
    assert_eq!(code, 0);
    assert_eq!(stderr.matches("leanctx serve: panic at src/serve/mod.rs:").count(), 3, "{stderr}");
}
