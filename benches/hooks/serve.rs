//! `leanctx serve`'s `read` in process (issue 23): a 100 KB file answered
//! through the server's own message handling, the ledger asked in
//! process, against reading the same file alone. Target: ≤ 1 ms p50
//! beyond the file read, for a first read (recorded as a delivery), a
//! re-read (a stub after a confirmed delivery) and a changed file (a diff).

use crate::Config;
use crate::spawn::{Stats, fmt_dur};
use leanctx::Host;
use leanctx::identity::caller::ScopeEnv;
use leanctx::identity::readpath::ReadPath;
use leanctx::serve::Server;
use leanctx::serve::workspace::Workspace;
use leanctx::state::journal::{Call, Journal, Record};
use leanctx::state::ledger::{self, Ack, Content};
use leanctx::state::secret::Secret;
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

const TARGET: Duration = Duration::from_millis(1);
const SESSION: &str = "5e55a0b1-0000-4000-8000-00000000be1c";
const FILE_BYTES: usize = 100 * 1024;

fn text(seed: usize) -> String {
    let mut s = String::with_capacity(FILE_BYTES + 64);
    let mut i = 0;
    while s.len() < FILE_BYTES {
        let _ = writeln!(s, "fn line_{i:05}() -> u64 {{ {} }}", i * 7 + if i == 500 { seed } else { 0 });
        i += 1;
    }
    s
}

fn call_line(id: usize, tool_use: &str) -> Vec<u8> {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "read",
        "arguments": {"path": "big.rs"}, "_meta": {"claudecode/toolUseId": tool_use}}})
    .to_string()
    .into_bytes()
}

/// The host writes the call's tool use to its transcript before it makes
/// the call (a stub question waits until it shows: docs/DELIVERY.md §8).
fn host_writes(transcript: &Path, tool_use: &str) {
    use std::io::Write as _;
    let line = serde_json::json!({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": tool_use, "name": "mcp__leanctx__read", "input": {}}]}});
    let mut f = std::fs::OpenOptions::new().append(true).open(transcript).expect("transcript");
    writeln!(f, "{line}").expect("transcript");
}

fn record_call(j: &Journal, t: u64, tool_use: &str) {
    let key = format!("bench-{tool_use}");
    let rec = Record::Call(Call {
        t,
        host: Host::ClaudeCode,
        conv: SESSION,
        agent: None,
        server: Some("leanctx"),
        tool: "read",
        fp: "0",
        call_id: Some(tool_use),
        key: &key,
    });
    j.append(&[rec], t).expect("journal");
}

/// The model got this answer whole (Claude Code's PostToolBatch).
fn ack(j: &Journal, t: u64, tool_use: &str, answer: &serde_json::Value) {
    let text = answer["result"]["content"][0]["text"].as_str().expect("a text result");
    // Sealed with the data dir's secret, as the hook stores them.
    let secret = Secret::load_or_create(j.path().parent().expect("the data dir")).expect("secret");
    let c = secret.seal_content(&Content::of_text(text));
    let r = secret.seal_ref(&ledger::id_ref(tool_use));
    let a = Ack { t, host: Host::ClaudeCode, scope: SESSION, call_ref: &r, digest: &c.digest, len: c.len, whole: true };
    j.append(&[Record::Ack(a)], t).expect("journal");
}

pub fn run(cfg: &Config, root: &Path, out: &mut String) -> Vec<String> {
    let data = root.join("serve-data");
    let ws = root.join("serve-ws");
    leanctx::fsx::create_private_dir(&data, false).expect("data dir");
    std::fs::create_dir_all(&ws).expect("workspace");
    let file = ws.join("big.rs");
    let (v1, v2) = (text(1), text(2));
    std::fs::write(&file, &v1).expect("file");
    let j = Journal::new(&data);
    let t0 = leanctx::base::clock::now_ms();
    j.append(&[Record::Sighting { t: t0, host: Host::ClaudeCode, conv: SESSION, event: "SessionStart" }], t0)
        .expect("journal");
    // The session's transcript, as its SessionStart hook names it: Claude
    // Code's deliveries stand only where the second witness reads one.
    let transcript = root.join("serve-transcript.jsonl");
    std::fs::write(&transcript, "").expect("transcript");
    let deadline = Instant::now() + Duration::from_secs(1);
    let turn = leanctx::witness::file::Turn::Start { idle_s: None };
    let tp = transcript.to_str().expect("a UTF-8 temp path");
    let b = leanctx::witness::Boundary {
        host: Host::ClaudeCode,
        conv: SESSION,
        transcript: tp,
        turn,
        now: t0,
        pid: None,
        idle_ms: None,
    };
    leanctx::witness::on_turn(&data, &b, deadline, |_| Ok(())).expect("witness");
    let rp = ReadPath::new(&data, ScopeEnv::default()).with_stats(None);
    let mut server = Server::new(rp, Workspace::from_dirs([ws.clone()]));
    let iters = cfg.micro_iters.min(2000);
    let (mut first, mut stub, mut diff, mut plain) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..iters + 3 {
        // The file read alone.
        let s = Instant::now();
        black_box(std::fs::read_to_string(&file).expect("read"));
        let d_plain = s.elapsed();
        // A first read: a new chat's call, recorded as a delivery.
        std::fs::write(&file, &v1).expect("file");
        let id = format!("toolu_b{i}a");
        record_call(&j, t0, &id);
        host_writes(&transcript, &id);
        let s = Instant::now();
        let a = server.line(&call_line(i, &id));
        let d_first = s.elapsed();
        assert!(!a[0]["result"]["content"][0]["text"].as_str().unwrap_or("").starts_with("[unchanged]"));
        ack(&j, t0, &id, &a[0]);
        // A re-read: a stub.
        let id = format!("toolu_b{i}b");
        record_call(&j, t0, &id);
        host_writes(&transcript, &id);
        let s = Instant::now();
        let a = server.line(&call_line(i, &id));
        let d_stub = s.elapsed();
        assert!(a[0]["result"]["content"][0]["text"].as_str().unwrap_or("").starts_with("[unchanged]"), "{a:?}");
        // Changed outside: a diff.
        std::fs::write(&file, &v2).expect("file");
        let id = format!("toolu_b{i}c");
        record_call(&j, t0, &id);
        host_writes(&transcript, &id);
        let s = Instant::now();
        let a = server.line(&call_line(i, &id));
        let d_diff = s.elapsed();
        assert!(a[0]["result"]["content"][0]["text"].as_str().unwrap_or("").contains("@@"), "{a:?}");
        // The next round's first read is a new version for this chat:
        // a compaction makes it a first read again.
        j.append(&[Record::Compaction { t: t0, host: Host::ClaudeCode, conv: SESSION }], t0).expect("journal");
        if i >= 3 {
            plain.push(d_plain);
            first.push(d_first);
            stub.push(d_stub);
            diff.push(d_diff);
        }
    }
    let p = Stats::of(&plain).p50;
    let _ = writeln!(
        out,
        "A {} KB file, {} iterations; the file read alone: p50 {}.\n",
        FILE_BYTES / 1024,
        iters,
        fmt_dur(p)
    );
    let _ = writeln!(out, "| answer | p50 | p99 | p50 beyond the file read | target ≤ {} |", fmt_dur(TARGET));
    let _ = writeln!(out, "|---|---:|---:|---:|---|");
    let mut missed = Vec::new();
    for (name, v) in [("first read (whole, recorded)", &first), ("re-read (stub)", &stub), ("changed (diff)", &diff)] {
        let st = Stats::of(v);
        let beyond = st.p50.saturating_sub(p);
        let ok = beyond <= TARGET;
        if !ok {
            missed.push(format!("serve {name}: {} beyond the file read", fmt_dur(beyond)));
        }
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} |",
            fmt_dur(st.p50),
            fmt_dur(st.p99),
            fmt_dur(beyond),
            if ok { "met" } else { "**missed**" }
        );
    }
    missed
}
