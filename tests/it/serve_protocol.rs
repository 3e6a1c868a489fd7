//! Protocol robustness of the real `leanctx serve` (issue 23, "Done
//! when"): every protocol version the hosts send and a newer one, hostile
//! and malformed lines, pipelined and cancelled calls while hooks write the
//! journal from other processes: a clear JSON-RPC error for each bad
//! message, never a crash, never a lost delivery record.

use crate::serve::{Serve, claude_pre, text};
use crate::support::Sandbox;
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn deliveries(sb: &Sandbox) -> usize {
    Sandbox::count(&sb.journal(), |r| matches!(r, leanctx::state::journal::Record::Delivery(_)))
}

#[test]
fn every_protocol_version_the_hosts_send_and_a_newer_one() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.join("f"), "x\n").unwrap();
    // Claude Code 2.1.328's binary lists 2025-11-25, 2025-06-18 and
    // 2025-03-26 and knows a 2026-07-28 era; Codex 0.169.0's names the same
    // and 2026-07-28 too; 2024-11-05 is the oldest a client may still send
    // (Cursor and older clients). A version we do not speak gets the
    // newest we do (the MCP lifecycle: "SHOULD be the latest version
    // supported by the server"), never an error.
    for (n, (asked, got)) in [
        (json!("2024-11-05"), "2024-11-05"),
        (json!("2025-03-26"), "2025-03-26"),
        (json!("2025-06-18"), "2025-06-18"),
        (json!("2025-11-25"), "2025-11-25"),
        (json!("2026-07-28"), "2025-11-25"),
        (json!("1999-01-01"), "2025-11-25"),
        (json!(7), "2025-11-25"),
        (Value::Null, "2025-11-25"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut s = Serve::start(&sb);
        let r = s.request(
            "initialize",
            json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "claude-code", "version": "2"}}),
        );
        assert_eq!(r["result"]["protocolVersion"], got, "{asked}: {r}");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let meta = claude_pre(&sb, "A", None, &format!("toolu_v{n}"), "f");
        assert_eq!(text(&s.read(json!({"path": "f"}), meta)), "x\n", "{asked}");
        // The newer era's discovery call is a method this server lacks.
        assert_eq!(s.request("server/discover", json!({}))["error"]["code"], -32601);
        assert_eq!(s.finish(), 0);
    }
}

/// Bad lines between good reads: each answered with the right error code,
/// under its id where it has one, and every read around them recorded.
#[test]
fn hostile_lines_get_errors_and_lose_no_delivery() {
    let sb = Sandbox::new();
    for i in 0..4 {
        std::fs::write(sb.project.join(format!("f{i}")), format!("file {i}\n")).unwrap();
    }
    let mut s = Serve::init(&sb, "claude-code");
    let mut reads = 0;
    let mut read = |s: &mut Serve, i: usize| {
        reads += 1;
        let meta = claude_pre(&sb, "A", None, &format!("toolu_h{reads:02}"), "f");
        assert_eq!(text(&s.read(json!({"path": format!("f{}", i % 4)}), meta)), format!("file {}\n", i % 4));
    };
    let deep = format!("{}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let cases: Vec<(Vec<u8>, Value, i64)> = vec![
        (b"\xff\xfe{\"jsonrpc\":\"2.0\"}\n".to_vec(), Value::Null, -32700),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"\n".to_vec(), Value::Null, -32700),
        (deep.into_bytes(), Value::Null, -32700),
        (b"\"ping\"\n".to_vec(), Value::Null, -32600),
        (b"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}\n".to_vec(), Value::Null, -32600),
        (b"{\"jsonrpc\":\"2.0\",\"id\":\"m\",\"method\":[\"ping\"]}\n".to_vec(), json!("m"), -32600),
        (b"{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"tools/call\",\"params\":[]}\n".to_vec(), json!("p"), -32602),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"tools/call\",\"params\":\"read\"}\n".to_vec(),
            json!("q"),
            -32602,
        ),
        (b"{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"method\":\"prompts/get\"}\n".to_vec(), json!("u"), -32601),
        (b"{\"jsonrpc\":\"2.0\",\"id\":2.5,\"method\":\"nope\"}\n".to_vec(), json!(2.5), -32601),
    ];
    for (i, (line, id, code)) in cases.into_iter().enumerate() {
        read(&mut s, i);
        s.raw(&line);
        let r = s.recv();
        assert_eq!((&r["id"], r["error"]["code"].as_i64()), (&id, Some(code)), "case {i}: {r}");
        assert!(r["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{r}");
    }
    // A tool call whose arguments are not an object: a tool error naming them.
    let r = s.request("tools/call", json!({"name": "read", "arguments": [1]}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text(&r["result"]).starts_with("arguments:"), "{r}");
    // CRLF line ends (a Windows client) are read as lines.
    s.raw(b"{\"jsonrpc\":\"2.0\",\"id\":\"crlf\",\"method\":\"ping\"}\r\n");
    assert_eq!(s.recv()["id"], "crlf");
    read(&mut s, 0);
    assert_eq!(s.finish(), 0);
    assert_eq!(deliveries(&sb), reads);
}

/// Calls pipelined without waiting, some cancelled, while other processes
/// run hooks into the same journal: each request answered once under its
/// id or (cancelled while queued) not at all, and exactly the answered
/// reads recorded.
#[test]
fn pipelined_and_cancelled_calls_amid_hook_processes() {
    let sb = std::sync::Arc::new(Sandbox::new());
    for i in 0..8 {
        std::fs::write(sb.project.join(format!("f{i}")), format!("file {i}\n").repeat(50)).unwrap();
    }
    let mut s = Serve::init(&sb, "claude-code");
    let mut burst = Vec::new();
    let mut reads = Vec::new();
    for i in 0..40u64 {
        let req = if i % 5 == 4 {
            json!({"jsonrpc": "2.0", "id": i, "method": "ping"})
        } else {
            let meta = claude_pre(&sb, "A", None, &format!("toolu_p{i:02}"), "f");
            reads.push(i);
            json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": "read", "arguments": {"path": format!("f{}", i % 8)}, "_meta": meta}})
        };
        burst.extend(format!("{req}\n").into_bytes());
        if i % 3 == 0 {
            let c = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": i, "reason": "user pressed escape"}});
            burst.extend(format!("{c}\n").into_bytes());
        }
    }
    burst.extend(b"{\"jsonrpc\":\"2.0\",\"id\":\"end\",\"method\":\"ping\"}\n");
    // Hooks of other chats write the journal meanwhile, as processes.
    let writer = {
        let sb = sb.clone();
        std::thread::spawn(move || {
            for k in 0..15 {
                let p = json!({"session_id": format!("other{}", k % 3), "hook_event_name": "UserPromptSubmit",
                    "transcript_path": "/t.jsonl", "cwd": "/p"});
                sb.hook("claude-code", p.to_string()).ok();
            }
        })
    };
    s.raw(&burst);
    let mut answered: BTreeMap<String, Value> = BTreeMap::new();
    loop {
        let r = s.recv();
        let id = r["id"].to_string();
        assert!(!answered.contains_key(&id), "answered twice: {r}");
        if r["id"] == "end" {
            break;
        }
        assert!(r.get("error").is_none(), "{r}");
        answered.insert(id, r);
    }
    writer.join().unwrap();
    // Every request never cancelled is answered.
    for i in (0..40u64).filter(|i| i % 3 != 0) {
        assert!(answered.contains_key(&i.to_string()), "request {i} unanswered");
    }
    let read_answers = reads.iter().filter(|i| answered.contains_key(&i.to_string())).count();
    assert_eq!(s.finish(), 0);
    assert_eq!(deliveries(&sb), read_answers, "exactly the answered reads are recorded");
}
