//! `leanctx serve` as a host runs it: the real process over pipes, one
//! JSON-RPC message a line, with the real hooks feeding the ledger.

use crate::support::Sandbox;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

/// A running `leanctx serve`, driven line by line.
pub struct Serve {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Serve {
    pub fn start(sb: &Sandbox) -> Serve {
        Serve::spawn(sb.cmd(["serve"]))
    }

    /// Start `leanctx serve` as `run` says (its environment).
    pub fn spawn(run: crate::support::Run) -> Serve {
        let mut child = run.spawn_open();
        let stdin = child.stdin.take();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { return };
                if tx.send(l).is_err() {
                    return;
                }
            }
        });
        Serve { child, stdin, lines, next_id: 100 }
    }

    /// Start and initialize as `client` would.
    pub fn init(sb: &Sandbox, client: &str) -> Serve {
        let mut s = Serve::start(sb);
        let r = s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": client, "version": "1"}}),
        );
        assert_eq!(r["result"]["serverInfo"]["name"], "leanctx", "{r}");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    pub fn raw(&mut self, bytes: &[u8]) {
        self.stdin.as_mut().unwrap().write_all(bytes).unwrap();
        self.stdin.as_mut().unwrap().flush().unwrap();
    }

    pub fn send(&mut self, v: &Value) {
        let mut l = v.to_string().into_bytes();
        l.push(b'\n');
        self.raw(&l);
    }

    pub fn recv(&mut self) -> Value {
        let l = self.lines.recv_timeout(Duration::from_secs(20)).expect("an answer from leanctx serve");
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))
    }

    /// Nothing more arrives within `ms`.
    pub fn silent(&mut self, ms: u64) -> bool {
        self.lines.recv_timeout(Duration::from_millis(ms)).is_err()
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let r = self.recv();
        assert_eq!(r["id"], id, "{r}");
        r
    }

    /// `read` with these arguments and `_meta`: the tool result.
    pub fn read(&mut self, args: Value, meta: Value) -> Value {
        let r = self.request("tools/call", json!({"name": "read", "arguments": args, "_meta": meta}));
        r["result"].clone()
    }

    /// Close stdin; the exit code and all the server wrote on stderr.
    pub fn finish_with_stderr(mut self) -> (i32, String) {
        let mut err = self.child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut err, &mut s).unwrap();
            s
        });
        (self.finish(), reader.join().unwrap())
    }

    /// Close stdin and wait for the exit code.
    pub fn finish(mut self) -> i32 {
        drop(self.stdin.take());
        let start = std::time::Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code().unwrap_or(-1);
            }
            assert!(start.elapsed() < Duration::from_secs(20), "leanctx serve did not exit at end of input");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {result}"))
}

pub fn is_stub(result: &Value) -> bool {
    text(result).starts_with("[unchanged]")
}

/// Claude Code's PreToolUse for a `read` call; the `_meta` its call carries.
pub fn claude_pre(sb: &Sandbox, session: &str, agent: Option<&str>, id: &str, path: &str) -> Value {
    // The turn's prompt hook names the session's transcript (the stub's second witness).
    let t = crate::ledger::claude_turn(sb, session);
    if agent.is_none() {
        crate::support::host_writes_call(&t, id);
    }
    let mut pre = json!({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "mcp__leanctx__read",
        "tool_input": {"path": path}, "tool_use_id": id, "transcript_path": "/t.jsonl", "cwd": "/p"});
    if let Some(a) = agent {
        pre["agent_id"] = json!(a);
    }
    sb.hook("claude-code", pre.to_string()).ok();
    json!({"claudecode/toolUseId": id})
}

/// Claude Code's PostToolBatch: the model got `result` for call `id`.
pub fn claude_batch(sb: &Sandbox, session: &str, id: &str, result: &Value) {
    let b = json!({"session_id": session, "hook_event_name": "PostToolBatch", "tool_calls": [
        {"tool_name": "mcp__leanctx__read", "tool_use_id": id, "tool_input": {}, "tool_response": result["content"]}]});
    sb.hook("claude-code", b.to_string()).ok();
}

fn deliveries(sb: &Sandbox) -> usize {
    if !sb.data.join("journal").exists() {
        return 0;
    }
    Sandbox::count(&sb.journal(), |r| matches!(r, leanctx::state::journal::Record::Delivery(_)))
}

#[test]
fn protocol_versions_and_errors() {
    let sb = Sandbox::new();
    let mut s = Serve::start(&sb);
    for (asked, got) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let r =
            s.request("initialize", json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "x"}}));
        assert_eq!(r["result"]["protocolVersion"], got, "{r}");
        assert_eq!(r["result"]["capabilities"]["tools"], json!({"listChanged": false}));
    }
    assert_eq!(s.request("ping", json!({}))["result"], json!({}));
    let tools = s.request("tools/list", json!({}))["result"]["tools"].clone();
    assert_eq!(tools[0]["name"], "read");
    assert_eq!(tools[0]["_meta"]["anthropic/maxResultSizeChars"], 500000);
    let r = s.request("resources/list", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let r = s.request("tools/call", json!({"name": "write", "arguments": {}}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().starts_with("name:"));
    // Malformed JSON, not JSON-RPC, an empty batch: each answered, in order.
    s.raw(b"{not json\n");
    assert_eq!(s.recv()["error"]["code"], -32700);
    s.raw(b"{\"id\":5,\"method\":\"ping\"}\n");
    let r = s.recv();
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (json!(5), json!(-32600)), "{r}");
    s.raw(b"[]\n");
    assert_eq!(s.recv()["error"]["code"], -32600);
    // Notifications get no answer, known or not; blank lines are skipped.
    s.raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}\n\n");
    assert!(s.silent(200));
    // A batch: one answer holding each request's.
    s.raw(b"[{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"method\":\"n\"},{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"nope\"}]\n");
    let b = s.recv();
    assert_eq!(b.as_array().unwrap().len(), 2, "{b}");
    assert_eq!((b[0]["id"].clone(), b[1]["error"]["code"].clone()), (json!("a"), json!(-32601)));
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_huge_line_is_refused_and_the_server_goes_on() {
    let sb = Sandbox::new();
    let mut s = Serve::start(&sb);
    let mut big = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"".to_vec();
    big.resize(leanctx::serve::protocol::MAX_LINE_BYTES + 10, b'a');
    big.extend_from_slice(b"\"}}\n");
    let n = big.len() - 1;
    s.raw(&big);
    let r = s.recv();
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains(&format!("{n} bytes")), "{r}");
    // Exactly at the cap is read (and answered: it is valid JSON-RPC).
    let mut at = b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"x\":\"".to_vec();
    at.resize(leanctx::serve::protocol::MAX_LINE_BYTES - 3, b'a');
    at.extend_from_slice(b"\"}}\n");
    s.raw(&at);
    assert_eq!(s.recv()["id"], 2);
    assert_eq!(s.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn read_errors_name_the_problem_and_record_nothing() {
    let sb = Sandbox::new();
    sb.hook("claude-code", json!({"session_id": "A", "hook_event_name": "SessionStart"}).to_string()).ok();
    std::fs::create_dir_all(sb.project.join("dir")).unwrap();
    std::fs::write(sb.project.join("bin"), b"ab\0cd").unwrap();
    std::fs::write(sb.tmp.path().join("outside.txt"), "secret").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(sb.tmp.path().join("outside.txt"), sb.project.join("link")).unwrap();
    let mut s = Serve::init(&sb, "claude-code");
    let cases = [
        (json!({"path": "dir"}), "directory"),
        (json!({"path": "bin"}), "binary"),
        (json!({"path": "../outside.txt"}), "outside the workspace"),
        (json!({"path": "missing"}), "no such file"),
        (json!({"path": 3}), "path:"),
        (json!({"path": "bin", "offset": 0}), "offset:"),
    ];
    for (i, (args, says)) in cases.into_iter().enumerate() {
        let meta = claude_pre(&sb, "A", None, &format!("toolu_e{i}"), "x");
        let r = s.read(args.clone(), meta);
        assert_eq!(r["isError"], true, "{args}: {r}");
        assert!(text(&r).contains(says), "{args}: {r}");
    }
    #[cfg(unix)]
    {
        let meta = claude_pre(&sb, "A", None, "toolu_link", "link");
        assert!(text(&s.read(json!({"path": "link"}), meta)).contains("outside the workspace"));
    }
    assert_eq!(deliveries(&sb), 0);
}

/// The ledger through the server, as Claude Code drives it: whole first, a
/// stub only after the host confirmed the model got it whole, and whole
/// again after an edit, a compaction, for a subagent and for another chat.
#[test]
fn claude_rereads_get_stubs_only_for_what_the_model_holds() {
    let sb = Sandbox::new();
    let a = sb.project.join("a.rs");
    std::fs::write(&a, "fn a() {}\n".repeat(50)).unwrap();
    let mut s = Serve::init(&sb, "claude-code");
    let mut n = 0;
    let mut read = |s: &mut Serve, session: &str, agent: Option<&str>, ack: bool| {
        n += 1;
        let id = format!("toolu_{n:03}");
        let meta = claude_pre(&sb, session, agent, &id, "a.rs");
        let r = s.read(json!({"path": "a.rs"}), meta);
        assert_eq!(r["isError"], false, "{r}");
        if ack {
            claude_batch(&sb, session, &id, &r);
        }
        r
    };
    let r1 = read(&mut s, "A", None, true);
    assert_eq!(text(&r1), std::fs::read_to_string(&a).unwrap());
    let r2 = read(&mut s, "A", None, true);
    assert!(is_stub(&r2), "{r2}");
    assert!(text(&r2).contains("a.rs") && text(&r2).contains("version blake3:"), "{r2}");
    // Another chat, and a subagent of A: each its own first read.
    assert!(!is_stub(&read(&mut s, "B", None, false)));
    assert!(!is_stub(&read(&mut s, "A", Some("sub1"), false)));
    // Unconfirmed (B's hook never said the model got it): whole again.
    assert!(!is_stub(&read(&mut s, "B", None, true)));
    assert!(is_stub(&read(&mut s, "B", None, true)));
    // Edited outside: the new version, then a stub of it.
    std::fs::write(&a, "fn a() { changed() }\n".repeat(50)).unwrap();
    let r = read(&mut s, "A", None, true);
    assert_eq!(text(&r), std::fs::read_to_string(&a).unwrap());
    assert!(is_stub(&read(&mut s, "A", None, true)));
    // A compaction of A: whole again.
    sb.hook("claude-code", json!({"session_id": "A", "hook_event_name": "PreCompact"}).to_string()).ok();
    assert!(!is_stub(&read(&mut s, "A", None, true)));
    assert!(is_stub(&read(&mut s, "A", None, true)));
    // A call no hook recorded: whole, and never a stub.
    let r = s.read(json!({"path": "a.rs"}), json!({"claudecode/toolUseId": "toolu_ghost"}));
    assert!(!is_stub(&r));
    assert!(!is_stub(&s.read(json!({"path": "a.rs"}), json!({"claudecode/toolUseId": "toolu_ghost"}))));
}

/// With scoping switched off (the legacy kill switch) the server still
/// stubs only confirmed deliveries: never a first read.
#[test]
fn the_kill_switch_never_stubs_a_first_read() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.join("f"), "x\n").unwrap();
    let mut c = sb.cmd(["serve"]).env("LEAN_CTX_CONVERSATION_SCOPE", "0").spawn_open();
    let mut sin = c.stdin.take().unwrap();
    writeln!(
        sin,
        "{}",
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"f"}}})
    )
    .unwrap();
    drop(sin);
    let o = c.wait_with_output().unwrap();
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(text(&r["result"]), "x\n");
}

/// Codex: the output budget bounds one delivery; a larger file comes in
/// ranges, each a delivery of its own, stubbed only while held.
#[test]
fn codex_large_files_come_in_ranges_within_the_budget() {
    let sb = Sandbox::new();
    let body: String = (0..2000).map(|i| format!("line {i:05} of the big file\n")).collect();
    std::fs::write(sb.project.join("big.txt"), &body).unwrap();
    sb.hook("codex", json!({"session_id": "S", "hook_event_name": "SessionStart", "source": "startup"}).to_string())
        .ok();
    let mut s = Serve::init(&sb, "codex-mcp-client");
    let mut n = 0;
    let mut read = |s: &mut Serve, args: Value, window: &str| {
        n += 1;
        let id = format!("call_{n}");
        let r = s.read(args.clone(), json!({"sessionId": "S", "threadId": "S", "callId": id, "windowId": window}));
        let post = json!({"session_id": "S", "hook_event_name": "PostToolUse", "tool_name": "mcp__leanctx__read",
            "tool_use_id": id, "tool_input": args, "tool_response": r});
        sb.hook("codex", post.to_string()).ok();
        r
    };
    let r = read(&mut s, json!({"path": "big.txt"}), "S:0");
    let t = text(&r);
    assert!(t.starts_with("[big.txt: lines 1-"), "{}", &t[..80]);
    assert!(t.len() as u64 <= leanctx::hosts::profile::whole_delivery_limit(Some(leanctx::Host::Codex), 2_500));
    let next: usize = t.rsplit("offset=").next().unwrap().trim_end_matches("]\n").parse().unwrap();
    // The page again: a stub; the next page: content.
    assert!(is_stub(&read(&mut s, json!({"path": "big.txt"}), "S:0")));
    let r2 = read(&mut s, json!({"path": "big.txt", "offset": next}), "S:0");
    assert!(text(&r2).starts_with(&format!("[big.txt: lines {next}-")), "{r2}");
    // A new window (a compaction): whole page again.
    assert!(!is_stub(&read(&mut s, json!({"path": "big.txt"}), "S:1")));
}

/// Cancelled calls: whatever the timing, a read is answered exactly when
/// its delivery was recorded, and the server goes on.
#[test]
fn cancelled_reads_are_answered_exactly_when_recorded() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.join("f.txt"), "content\n").unwrap();
    let mut s = Serve::init(&sb, "claude-code");
    let mut batch = Vec::new();
    for i in 0..20 {
        let id = format!("toolu_c{i:02}");
        let meta = claude_pre(&sb, "A", None, &id, "f.txt");
        let req = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "read", "arguments": {"path": "f.txt"}, "_meta": meta}});
        batch.extend(format!("{req}\n").into_bytes());
        if i % 2 == 0 {
            let c = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}});
            batch.extend(format!("{c}\n").into_bytes());
        }
    }
    // A cancellation of a request never sent is harmless.
    batch.extend(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":999}}\n");
    batch.extend(b"{\"jsonrpc\":\"2.0\",\"id\":\"end\",\"method\":\"ping\"}\n");
    s.raw(&batch);
    let mut answered = 0;
    loop {
        let r = s.recv();
        if r["id"] == "end" {
            break;
        }
        assert_eq!(r["result"]["isError"], false, "{r}");
        answered += 1;
    }
    assert!(answered >= 10, "every uncancelled read is answered: {answered}");
    assert_eq!(deliveries(&sb), answered);
}

/// Two servers and many chats at once, as separate processes: every read
/// answered, every delivery recorded, each chat's stubs its own.
#[test]
fn concurrent_servers_record_every_delivery() {
    let sb = Sandbox::new();
    for i in 0..4 {
        std::fs::write(sb.project.join(format!("f{i}")), format!("file {i}\n").repeat(20)).unwrap();
    }
    sb.hook("claude-code", json!({"session_id": "S0", "hook_event_name": "SessionStart"}).to_string()).ok();
    let sb = std::sync::Arc::new(sb);
    let workers: Vec<_> = (0..2)
        .map(|w| {
            let sb = sb.clone();
            std::thread::spawn(move || {
                let mut s = Serve::init(&sb, "claude-code");
                for i in 0..8 {
                    let id = format!("toolu_w{w}_{i}");
                    let meta = claude_pre(&sb, &format!("S{w}"), None, &id, "x");
                    let r = s.read(json!({"path": format!("f{}", i % 4)}), meta);
                    assert!(!is_stub(&r), "{r}");
                }
                s.finish()
            })
        })
        .collect();
    for w in workers {
        assert_eq!(w.join().unwrap(), 0);
    }
    assert_eq!(deliveries(&sb), 16);
}

/// MCP roots name the workspace: the server asks for them after
/// `initialized` (and again when they change) and resolves paths there.
#[test]
fn roots_from_the_client_are_the_workspace() {
    let sb = Sandbox::new();
    let ws = sb.tmp.path().join("ws dir");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("r.txt"), "in the root\n").unwrap();
    std::fs::write(sb.project.join("p.txt"), "in the cwd\n").unwrap();
    let mut s = Serve::start(&sb);
    s.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": true}},
        "clientInfo": {"name": "claude-code"}}),
    );
    // Before the roots arrive: the server's directory.
    assert_eq!(text(&s.read(json!({"path": "p.txt"}), json!({}))), "in the cwd\n");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let ask = s.recv();
    assert_eq!(ask["method"], "roots/list", "{ask}");
    let uri = format!("file://{}", ws.to_str().unwrap().replace(' ', "%20"));
    s.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": uri, "name": "ws"}]}}));
    assert_eq!(text(&s.read(json!({"path": "r.txt"}), json!({}))), "in the root\n");
    let r = s.read(json!({"path": sb.project.join("p.txt")}), json!({}));
    assert!(text(&r).contains("outside the workspace"), "{r}");
    // The roots change: asked again.
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    assert_eq!(s.recv()["method"], "roots/list");
}

/// An edit outside: a unified diff against the version the caller holds,
/// recorded with its base; a re-read of the new version is then a stub. A
/// caller that does not hold the old version (another chat, after a
/// compaction) gets the file whole; so does a change that is not clearly
/// smaller as a diff.
#[test]
fn edits_go_out_as_diffs_against_the_held_version() {
    let sb = Sandbox::new();
    let a = sb.project.join("a.rs");
    let v1: String = (0..200).map(|i| format!("fn f{i}() {{ {i} }}\n")).collect();
    std::fs::write(&a, &v1).unwrap();
    let mut s = Serve::init(&sb, "claude-code");
    let mut n = 0;
    let mut read = |s: &mut Serve, session: &str, ack: bool| {
        n += 1;
        let id = format!("toolu_d{n:03}");
        let r = s.read(json!({"path": "a.rs"}), claude_pre(&sb, session, None, &id, "a.rs"));
        if ack {
            claude_batch(&sb, session, &id, &r);
        }
        text(&r).to_string()
    };
    assert_eq!(read(&mut s, "A", true), v1);
    let v2 = v1.replace("fn f100() { 100 }", "fn f100() { changed }");
    std::fs::write(&a, &v2).unwrap();
    // B never read it: whole. A holds v1: the diff.
    assert_eq!(read(&mut s, "B", true), v2);
    let d = read(&mut s, "A", true);
    assert!(d.starts_with("[a.rs changed since you read it"), "{d}");
    assert!(d.contains("-fn f100() { 100 }\n+fn f100() { changed }\n"), "{d}");
    assert!(d.len() < v2.len() / 2);
    // The diff was confirmed and its base is held: a stub.
    assert!(read(&mut s, "A", true).starts_with("[unchanged]"));
    // An unconfirmed diff backs nothing: A's next change is whole again,
    // since the version A holds is not provable.
    let v3 = v2.replace("fn f5() { 5 }", "fn f5() { five }");
    std::fs::write(&a, &v3).unwrap();
    let d = read(&mut s, "A", false);
    assert!(d.starts_with("[a.rs changed"), "{d}");
    std::fs::write(&a, &v2).unwrap();
    assert_eq!(read(&mut s, "A", true), v2, "the diff to v3 was never confirmed: v2 is not provably held");
    // A compaction: whole, never a diff.
    std::fs::write(&a, &v1).unwrap();
    sb.hook("claude-code", json!({"session_id": "A", "hook_event_name": "PreCompact"}).to_string()).ok();
    assert_eq!(read(&mut s, "A", true), v1);
    // A rewrite: the diff would not be clearly smaller, so whole.
    let v4: String = (0..200).map(|i| format!("let x{i} = {i};\n")).collect();
    std::fs::write(&a, &v4).unwrap();
    assert_eq!(read(&mut s, "A", true), v4);
    // The stats count each answer once, as what it was (not each ledger
    // question the server asked on the way).
    assert_eq!(s.finish(), 0);
    let t = sb.cmd(["stats", "--json"]).ok().json()["totals"].clone();
    assert_eq!(
        (t["reads"].clone(), t["whole"].clone(), t["stubs"].clone(), t["diffs"].clone()),
        (json!(8), json!(5), json!(1), json!(2)),
        "{t}"
    );
}

/// The ledger's base rule for every server (`deliver --base`): a diff
/// whose base this caller does not hold backs no stub, confirmed or not.
#[test]
fn a_diff_without_its_base_backs_no_stub() {
    let sb = Sandbox::new();
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let call = |id: &str| {
        let meta = claude_pre(&sb, "A", None, id, "m.rs");
        let p = sb.tmp.path().join(format!("{id}.json"));
        std::fs::write(&p, json!({"name": "read", "arguments": {"path": "m.rs"}, "_meta": meta}).to_string()).unwrap();
        p
    };
    let res = sb.tmp.path().join("diff.json");
    let diff = json!({"content": [{"type": "text", "text": "@@ -1 +1 @@\n-a\n+b\n"}]});
    std::fs::write(&res, diff.to_string()).unwrap();
    let c1 = call("toolu_b1");
    let o = sb
        .cmd(["deliver", "--call", &s(&c1), "--key", "m.rs", "--version", "v2", "--base", "v1", "--result", &s(&res)])
        .run();
    assert_eq!(o.code, 0, "{o:?}");
    claude_batch(&sb, "A", "toolu_b1", &diff);
    let c2 = call("toolu_b2");
    let o = sb.cmd(["stub", "--call", &s(&c2), "--key", "m.rs", "--version", "v2"]).run();
    assert_eq!((o.code, o.stdout.trim()), (1, "send-content base-not-held"));
    // With its base delivered and confirmed first, the same diff backs a stub.
    let whole = json!({"content": [{"type": "text", "text": "a\n"}]});
    let wres = sb.tmp.path().join("whole.json");
    std::fs::write(&wres, whole.to_string()).unwrap();
    let c3 = call("toolu_b3");
    sb.cmd(["deliver", "--call", &s(&c3), "--key", "m.rs", "--version", "v1", "--result", &s(&wres)]).ok();
    claude_batch(&sb, "A", "toolu_b3", &whole);
    let c4 = call("toolu_b4");
    sb.cmd(["stub", "--call", &s(&c4), "--key", "m.rs", "--version", "v2", "--base", "v1", "--result", &s(&res)]).run();
    claude_batch(&sb, "A", "toolu_b4", &diff);
    let o = sb.cmd(["stub", "--call", &s(&c2), "--key", "m.rs", "--version", "v2"]).run();
    assert_eq!((o.code, o.stdout.trim()), (0, "serve-stub confirmed-delivery"));
    // An empty --base is bad input, named.
    let o = sb
        .cmd(["deliver", "--call", &s(&c1), "--key", "m.rs", "--version", "v2", "--base=", "--result", &s(&res)])
        .run();
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("--base"), "{o:?}");
}

/// Tool `session`: what this chat holds (confirmed only), its task across
/// a compaction, a proxy's compaction ending every earlier delivery, at
/// most one every 5 minutes, and bad input naming the field.
#[test]
fn session_status_task_compact_restore() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.join("a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(sb.project.join("b.rs"), "fn b() {}\n").unwrap();
    let mut s = Serve::init(&sb, "claude-code");
    let mut n = 0;
    let mut call = |s: &mut Serve, tool: &str, args: Value| {
        n += 1;
        let id = format!("toolu_s{n:03}");
        let meta = claude_pre(&sb, "A", None, &id, "x");
        let r = s.request("tools/call", json!({"name": tool, "arguments": args, "_meta": meta}))["result"].clone();
        (id, r)
    };
    let (id, r) = call(&mut s, "read", json!({"path": "a.rs"}));
    claude_batch(&sb, "A", &id, &r);
    call(&mut s, "read", json!({"path": "b.rs"})); // never confirmed
    let (_, r) = call(&mut s, "session", json!({"action": "task", "task": "fix the parser next"}));
    assert_eq!(r["isError"], false, "{r}");
    let status = |s: &mut Serve, call: &mut dyn FnMut(&mut Serve, &str, Value) -> (String, Value)| {
        let (_, r) = call(s, "session", json!({"action": "status"}));
        serde_json::from_str::<Value>(text(&r)).unwrap()
    };
    let st = status(&mut s, &mut call);
    assert_eq!(st["scope"], "A");
    let holds = st["holds"].as_array().unwrap();
    assert_eq!(holds.len(), 1, "{st}");
    assert_eq!((holds[0]["path"].clone(), holds[0]["confirmed_by"].clone()), (json!("a.rs"), json!("PostToolBatch")));
    assert_eq!(holds[0]["size"], 10);
    assert_eq!(st["task"], "fix the parser next");
    assert_eq!(st["remembered_files"], 2);
    // A proxy compacts: every earlier delivery ends.
    let (_, r) = call(&mut s, "session", json!({"action": "compact", "summary": "we read a.rs"}));
    assert_eq!(r["isError"], false, "{r}");
    let st = status(&mut s, &mut call);
    assert_eq!(st["holds"], json!([]), "{st}");
    assert!(st["last_compaction_ms"].is_u64());
    assert_eq!(st["compaction_directive"]["keep_recent_turns"], 6);
    assert_eq!(st["task"], "fix the parser next", "the task outlives the compaction");
    let (_, r) = call(&mut s, "read", json!({"path": "a.rs"}));
    assert_eq!(text(&r), "fn a() {}\n", "after the compaction: whole");
    // At most one compaction every 5 minutes.
    let (_, r) = call(&mut s, "session", json!({"action": "compact", "summary": "again"}));
    assert_eq!(r["isError"], true);
    assert!(text(&r).starts_with("action: at most one compaction every 5 minutes"), "{r}");
    let (_, r) = call(&mut s, "session", json!({"action": "restore"}));
    assert!(text(&r).starts_with("compaction directive cleared"), "{r}");
    assert_eq!(status(&mut s, &mut call)["compaction_directive"], Value::Null);
    // Bad input names the field.
    let (_, r) = call(&mut s, "session", json!({"action": "compact", "summary": "s", "keep_recent_turns": 2}));
    assert!(text(&r).starts_with("keep_recent_turns:"), "{r}");
    let (_, r) = call(&mut s, "session", json!({}));
    assert!(text(&r).starts_with("action:"), "{r}");
    // A call that names no caller gets no session.
    let r = s.request(
        "tools/call",
        json!({"name": "session", "arguments": {"action": "status"},
        "_meta": {"claudecode/toolUseId": "toolu_ghost"}}),
    )["result"]
        .clone();
    assert_eq!(r["isError"], true);
    assert!(text(&r).contains("does not name its caller"), "{r}");
}
