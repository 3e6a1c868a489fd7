//! The delivery ledger through the real binary: captured runs of real
//! Claude Code and Codex replayed the way an MCP server meets them, and the
//! CLI's contract (`stub`, `deliver`: exit codes, bad input, bounds).

use crate::support::{Sandbox, payloads};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn numbered(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().as_bytes()[0].is_ascii_digit())
        .collect();
    v.sort();
    v
}

fn calls(dir: &Path) -> Vec<Value> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("mcp-tools-call"))
        .collect();
    v.sort();
    v.iter().map(|p| read_json(p)).collect()
}

fn call_id(call: &Value) -> String {
    let m = &call["params"]["_meta"];
    m["claudecode/toolUseId"].as_str().or(m["callId"].as_str()).unwrap().to_string()
}

fn is_mcp(hook: &Value) -> bool {
    hook["tool_name"].as_str().is_some_and(|n| n.starts_with("mcp__"))
}

/// The true scope of a hook's call.
fn scope_of(hook: &Value) -> String {
    match hook.get("agent_id").and_then(Value::as_str) {
        Some(a) => format!("agent:{a}"),
        None => hook["session_id"].as_str().unwrap().to_string(),
    }
}

fn is_compaction(hook: &Value) -> bool {
    matches!(hook["hook_event_name"].as_str(), Some("PreCompact" | "PostCompact"))
        || (hook["hook_event_name"] == "SessionStart" && hook["source"] == "compact")
}

/// What the model really received, from the scenario's own record of the
/// model's next request (model-received.json) or what the capture shows
/// (docs/DELIVERY.md §4): not from any rule of the product.
fn received_whole(dir: &Path, path: &str) -> bool {
    let mr = dir.join("model-received.json");
    if mr.exists() {
        return read_json(&mr)["model_received"]["contains_original"].as_bool().unwrap();
    }
    // Interrupted while the server worked: never reached the model. An
    // error result carries no content.
    !matches!(path, "sleep-20" | "__error__")
}

/// What the server returns for a captured call: the result its PostToolUse
/// hook shows (the server's copy on both hosts), an error for a failed call,
/// and a result that never arrived for an interrupted one.
fn server_result(host: &str, dir: &Path, hooks: &[Value], id: &str) -> Value {
    // Where the hooks do not show it (Claude with `structuredContent`), the
    // scenario says what the server sent.
    let own = dir.join("server-result.json");
    if own.exists() {
        return read_json(&own);
    }
    for h in hooks {
        if h["tool_use_id"] != id {
            continue;
        }
        match h["hook_event_name"].as_str() {
            Some("PostToolUse") if host == "codex" => return h["tool_response"].clone(),
            // Past Claude's token limit even PostToolUse shows only the error
            // string: the server sent text of the recorded size.
            Some("PostToolUse") if h["tool_response"].is_string() => {
                let n = read_json(&dir.join("model-received.json"))["mcp_sent_bytes"].as_u64().unwrap();
                return json!({ "content": [{"type": "text", "text": "x".repeat(n as usize)}] });
            }
            Some("PostToolUse") => return json!({ "content": h["tool_response"] }),
            Some("PostToolUseFailure") => {
                return json!({ "content": [{"type": "text", "text": "error"}], "isError": true });
            }
            _ => {}
        }
    }
    json!({ "content": [{"type": "text", "text": "a result the host never took"}] })
}

#[derive(Clone, Debug)]
struct Truth {
    conv: String,
    whole: bool,
    compacted: bool,
}

#[derive(Default, Debug)]
struct Tally {
    questions: usize,
    safe: usize,
    safe_allowed: usize,
    wrong: Vec<String>,
    missed: Vec<String>,
    deliveries_recorded: usize,
}

/// A fresh call (a re-read) of the same caller: the captured call with a new
/// host call id and another path; for Codex, `window` in place of its windowId.
fn reread(call: &Value, new_id: &str, path: &str, window: Option<&str>) -> Value {
    let mut c = call.clone();
    let m = &mut c["params"]["_meta"];
    if m.get("claudecode/toolUseId").is_some() {
        m["claudecode/toolUseId"] = json!(new_id);
    } else {
        m["callId"] = json!(new_id);
        if let Some(w) = window {
            m["windowId"] = json!(w);
        }
    }
    c["params"]["arguments"] = json!({ "path": path });
    c
}

/// Codex: the window after `n` more compactions than `window` shows.
fn bump_window(window: &str, n: u64) -> String {
    let (s, k) = window.rsplit_once(':').unwrap();
    format!("{s}:{}", k.parse::<u64>().unwrap() + n)
}

struct Replayer<'a> {
    sb: Sandbox,
    host: &'a str,
    dir: PathBuf,
    tally: Tally,
    truth: HashMap<(String, String), Truth>,
    fresh: usize,
}

impl Replayer<'_> {
    fn write(&self, name: &str, v: &Value) -> PathBuf {
        let p = self.sb.tmp.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    }

    /// Ask, as the server would on a re-read by the caller of `pre` (its
    /// PreToolUse) / `call`, for every path delivered so far.
    fn ask_rereads(&mut self, pre: &Value, call: &Value, window: Option<&str>) {
        let scope = scope_of(pre);
        let mut paths: Vec<String> = self.truth.keys().map(|(_, p)| p.clone()).collect();
        paths.sort();
        paths.dedup();
        for path in paths {
            self.fresh += 1;
            let id = format!("reread_{}", self.fresh);
            let mut hook = pre.clone();
            hook["tool_use_id"] = json!(id);
            hook["tool_input"] = json!({ "path": path });
            self.sb.hook(self.host, hook.to_string()).ok();
            if self.host == "claude-code"
                && let Some(t) = pre["transcript_path"].as_str()
            {
                match pre["agent_id"].as_str() {
                    None => crate::support::host_writes_call(Path::new(t), &id),
                    Some(a) => crate::support::host_writes_subagent_call(Path::new(t), a, &id),
                }
            }
            let c = self.write(&format!("q{}.json", self.fresh), &reread(call, &id, &path, window));
            let o = self.sb.cmd(["stub", "--call", c.to_str().unwrap(), "--key", &path, "--version", "v1"]).run();
            assert!(o.code == 0 || o.code == 1, "stub: {o:?}");
            let allowed = o.code == 0;
            let t = self.truth.get(&(scope.clone(), path.clone()));
            let safe = t.is_some_and(|t| t.whole && !t.compacted);
            let what = format!("{} {scope} {path}: {}", self.dir.display(), said(&o.stdout));
            self.tally.questions += 1;
            if safe {
                self.tally.safe += 1;
                if allowed {
                    self.tally.safe_allowed += 1;
                } else {
                    self.tally.missed.push(what.clone());
                }
            } else if allowed {
                self.tally.wrong.push(what.clone());
            }
            // A newer version never reuses the delivery.
            if allowed {
                let o = self.sb.cmd(["stub", "--call", c.to_str().unwrap(), "--key", &path, "--version", "v2"]).run();
                assert_eq!((o.code, said(&o.stdout)), (1, "send-content version-changed"), "{what}");
            }
        }
    }

    fn run(mut self) -> Tally {
        // Each session's transcript is a file of the sandbox (the captured
        // paths name the capturing machine's).
        let hooks: Vec<Value> = numbered(&self.dir)
            .iter()
            .map(|p| {
                let mut h = read_json(p);
                if h.get("transcript_path").is_some() {
                    let t = self.sb.tmp.path().join(format!("t-{}.jsonl", h["session_id"].as_str().unwrap_or("x")));
                    if !t.exists() {
                        std::fs::write(&t, "").unwrap();
                    }
                    h["transcript_path"] = json!(t);
                }
                h
            })
            .collect();
        let calls = calls(&self.dir);
        let by_id: HashMap<String, &Value> = calls.iter().map(|c| (call_id(c), c)).collect();
        let mut last: HashMap<String, (Value, Value, u64)> = HashMap::new(); // scope → (pre, call, compactions since)
        for h in &hooks {
            let id = h["tool_use_id"].as_str().unwrap_or("");
            if h["hook_event_name"] == "PreToolUse"
                && is_mcp(h)
                && let Some(call) = by_id.get(id)
            {
                let window = call["params"]["_meta"]["windowId"].as_str().map(str::to_string);
                self.ask_rereads(h, call, window.as_deref());
                self.sb.hook(self.host, h.to_string()).ok();
                // A subagent's own call, in its own transcript as the host writes it.
                if self.host == "claude-code"
                    && let (Some(a), Some(t)) = (h["agent_id"].as_str(), h["transcript_path"].as_str())
                {
                    crate::support::host_writes_subagent_call(Path::new(t), a, id);
                }
                // The server's own read: first of this path for this caller.
                let path = call["params"]["arguments"]["path"].as_str().unwrap().to_string();
                let res = self.write(&format!("r{id}.json"), &server_result(self.host, &self.dir, &hooks, id));
                let c = self.write(&format!("c{id}.json"), call);
                let o = self
                    .sb
                    .cmd(["stub", "--call", c.to_str().unwrap(), "--key", &path, "--version", "v1", "--result"])
                    .arg(&res)
                    .arg("--json")
                    .run();
                assert_eq!(o.code, 1, "{}: first read must deliver: {o:?}", self.dir.display());
                let j = o.json();
                if j["recorded"]["recorded"] == true {
                    self.tally.deliveries_recorded += 1;
                }
                let scope = scope_of(h);
                assert_eq!(j["caller"]["scope"], json!(scope), "{}: per-call caller", self.dir.display());
                let conv = h["session_id"].as_str().unwrap().to_string();
                let whole = received_whole(&self.dir, &path);
                self.truth.insert((scope.clone(), path), Truth { conv, whole, compacted: false });
                last.insert(scope, (h.clone(), (*call).clone(), 0));
                continue;
            }
            self.sb.hook(self.host, h.to_string()).ok();
            if is_compaction(h) {
                let conv = h["session_id"].as_str().unwrap();
                for t in self.truth.values_mut().filter(|t| t.conv == conv) {
                    t.compacted = true;
                }
                // One compaction raises Codex's window by one (three hooks fire for it).
                if h["hook_event_name"] == "PostCompact" {
                    for (pre, _, n) in last.values_mut() {
                        if pre["session_id"] == conv {
                            *n += 1;
                        }
                    }
                }
            }
        }
        // The end: every caller re-reads everything (as after a resume).
        let mut ends: Vec<_> = last.into_values().collect();
        ends.sort_by_key(|(pre, _, _)| scope_of(pre));
        for (pre, call, n) in ends {
            let window = call["params"]["_meta"]["windowId"].as_str().map(|w| bump_window(w, n));
            self.ask_rereads(&pre, &call, window.as_deref());
        }
        self.tally
    }
}

fn replay(host: &str, dir: &str) -> Tally {
    Replayer {
        sb: Sandbox::new(),
        host,
        dir: payloads().join(dir),
        tally: Tally::default(),
        truth: HashMap::new(),
        fresh: 0,
    }
    .run()
}

/// Every captured run with MCP calls, hooks and questions in their real
/// order: 0 wrong stubs, every safe re-read allowed. Both chats of the
/// concurrent runs re-read their own content; a re-read after resume
/// (result-interrupt, windowid) is allowed; a preview (Claude 60 KB, 150 KB),
/// a truncation (Codex 60 KB, 150 KB, and 60 KB under a 10,000-token
/// budget), an interrupt (tool-interrupt), an error, a compaction (windowid,
/// resume-compact, midturn-compact) all withhold.
#[test]
fn captured_runs_replay_with_no_wrong_stub_and_every_safe_one() {
    let mut total = Tally::default();
    let mut scenarios = 0;
    for (host, hdir) in [("claude-code", "claude"), ("codex", "codex")] {
        let mut dirs: Vec<PathBuf> =
            std::fs::read_dir(payloads().join(hdir)).unwrap().flatten().map(|e| e.path()).collect();
        dirs.sort();
        for d in dirs {
            // A run with no hooks (payloads/codex/structured-ledger: only the
            // server's calls and what the model got) has nothing to replay.
            if calls(&d).is_empty() || numbered(&d).is_empty() {
                continue;
            }
            let rel = format!("{hdir}/{}", d.file_name().unwrap().to_string_lossy());
            let t = replay(host, &rel);
            eprintln!(
                "{rel}: {} questions, {} safe, {} allowed, {} deliveries recorded",
                t.questions, t.safe, t.safe_allowed, t.deliveries_recorded
            );
            total.questions += t.questions;
            total.safe += t.safe;
            total.safe_allowed += t.safe_allowed;
            total.deliveries_recorded += t.deliveries_recorded;
            total.wrong.extend(t.wrong);
            total.missed.extend(t.missed);
            scenarios += 1;
        }
    }
    eprintln!(
        "ledger replay: {scenarios} runs, {} questions, {} safe re-reads, {} allowed, {} wrong",
        total.questions,
        total.safe,
        total.safe_allowed,
        total.wrong.len()
    );
    assert!(total.wrong.is_empty(), "wrong stubs: {:#?}", total.wrong);
    assert!(total.missed.is_empty(), "safe stubs withheld: {:#?}", total.missed);
    // The figures README.md and RELIABILITY.md quote.
    assert_eq!(scenarios, 29);
    assert_eq!((total.questions, total.safe, total.safe_allowed), (59, 29, 29), "{total:?}");
}

/// A Claude turn: the prompt hook that names the session's transcript (a
/// file in the sandbox), which the stub's second witness reads.
pub fn claude_turn(sb: &Sandbox, session: &str) -> PathBuf {
    let t = sb.tmp.path().join(format!("transcript-{session}.jsonl"));
    if !t.exists() {
        std::fs::write(&t, "").unwrap();
    }
    let p = json!({"session_id": session, "hook_event_name": "UserPromptSubmit", "transcript_path": t, "cwd": "/p"});
    sb.hook("claude-code", p.to_string()).ok();
    t
}

/// A Claude call with its PreToolUse recorded, ready for `stub`.
fn claude_call(sb: &Sandbox, session: &str, id: &str, path: &str) -> PathBuf {
    crate::support::host_writes_call(&claude_turn(sb, session), id);
    let pre = json!({
        "session_id": session, "hook_event_name": "PreToolUse", "tool_name": "mcp__ctx__ctx_read",
        "tool_input": {"path": path}, "tool_use_id": id, "transcript_path": "/t.jsonl", "cwd": "/p"
    });
    sb.hook("claude-code", pre.to_string()).ok();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "ctx_read", "arguments": {"path": path}, "_meta": {"claudecode/toolUseId": id}}});
    let p = sb.tmp.path().join(format!("{id}.json"));
    std::fs::write(&p, call.to_string()).unwrap();
    p
}

/// PostToolBatch for one call with `text` as what the model got.
fn claude_batch(sb: &Sandbox, session: &str, id: &str, response: Value) {
    let b = json!({"session_id": session, "hook_event_name": "PostToolBatch", "tool_calls": [
        {"tool_name": "mcp__ctx__ctx_read", "tool_use_id": id, "tool_input": {}, "tool_response": response}]});
    sb.hook("claude-code", b.to_string()).ok();
}

fn result_file(sb: &Sandbox, name: &str, text: &str) -> PathBuf {
    let p = sb.tmp.path().join(name);
    std::fs::write(&p, json!({"content": [{"type": "text", "text": text}]}).to_string()).unwrap();
    p
}

/// `leanctx stub --call CALL --key KEY --version VER [--result RESULT]`.
fn run_stub(sb: &Sandbox, call: &Path, key: &str, ver: &str, result: Option<&PathBuf>) -> crate::support::Out {
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let mut argv = vec!["stub".to_string(), "--call".into(), s(call), "--key".into(), key.into()];
    argv.extend(["--version".into(), ver.into()]);
    if let Some(r) = result {
        argv.extend(["--result".into(), s(r)]);
    }
    sb.cmd(&argv).run()
}

fn ledger_lines(sb: &Sandbox) -> usize {
    Sandbox::count(&sb.journal(), |r| {
        matches!(r, leanctx::state::journal::Record::Delivery(_) | leanctx::state::journal::Record::Ack(_))
    })
}

#[test]
fn bad_input_is_a_clear_error_and_records_nothing() {
    let sb = Sandbox::new();
    let call = claude_call(&sb, "S1", "toolu_1", "a.rs");
    let good = result_file(&sb, "good.json", "hello");
    let write = |name: &str, body: &[u8]| {
        let p = sb.tmp.path().join(name);
        std::fs::write(&p, body).unwrap();
        p
    };
    let not_result = write("nr.json", br#"{"foo": 1}"#);
    let not_json = write("nj.json", b"{content");
    let blocks_not_list = write("bl.json", br#"{"content": "x"}"#);
    let huge = sb.tmp.path().join("huge.json");
    {
        let f = std::fs::File::create(&huge).unwrap();
        f.set_len(leanctx::state::ledger::MAX_RESULT_BYTES as u64 + 10).unwrap();
    }
    let no_name = write("nocall.json", br#"{"params": {"arguments": {}}}"#);
    let long = "k".repeat(leanctx::state::ledger::MAX_KEY_BYTES + 1);
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--key".into(), "".into(), "--version".into(), "v".into(), "--result".into(), s(&good)],
            "--key is empty",
        ),
        (
            vec!["--key".into(), "a".into(), "--version".into(), "".into(), "--result".into(), s(&good)],
            "--version is empty",
        ),
        (
            vec!["--key".into(), long.clone(), "--version".into(), "v".into(), "--result".into(), s(&good)],
            "longer than",
        ),
        (vec!["--key".into(), "a".into(), "--version".into(), long, "--result".into(), s(&good)], "longer than"),
        (
            vec!["--key".into(), "a".into(), "--version".into(), "v".into(), "--result".into(), s(&not_result)],
            "no \"content\"",
        ),
        (vec!["--key".into(), "a".into(), "--version".into(), "v".into(), "--result".into(), s(&not_json)], "not JSON"),
        (
            vec!["--key".into(), "a".into(), "--version".into(), "v".into(), "--result".into(), s(&blocks_not_list)],
            "not a list",
        ),
        (vec!["--key".into(), "a".into(), "--version".into(), "v".into(), "--result".into(), s(&huge)], "larger than"),
    ];
    for cmd in ["stub", "deliver"] {
        for (args, want) in &cases {
            let mut argv = vec![cmd.to_string(), "--call".into(), s(&call)];
            argv.extend(args.iter().cloned());
            let o = sb.cmd(&argv).run();
            assert_eq!(o.code, 2, "{cmd} {want}: {o:?}");
            assert!(o.stderr.contains(want), "{cmd}: want {want:?} in {:?}", o.stderr);
            assert!(o.stdout.is_empty(), "{o:?}");
        }
        let o = sb.cmd([cmd, "--call", &s(&no_name), "--key", "a", "--version", "v", "--result", &s(&good)]).run();
        assert_eq!(o.code, 2, "{o:?}");
        let o = sb.cmd([cmd, "--call", "-", "--key", "a", "--version", "v", "--result", "-"]).run();
        assert_eq!(o.code, 2, "{o:?}");
        assert!(o.stderr.contains("both"), "{o:?}");
    }
    assert_eq!(ledger_lines(&sb), 0, "nothing recorded: {}", sb.journal());
    // And the good one records.
    let o = sb.cmd(["deliver", "--call", &s(&call), "--key", "a", "--version", "v", "--result", &s(&good)]).run();
    assert_eq!((o.code, said(&o.stdout)), (0, "recorded"), "{o:?}");
    assert_eq!(ledger_lines(&sb), 1);
    // An error result is a result, but delivers nothing: exit 1, said why.
    let err = write("err.json", br#"{"content": [{"type":"text","text":"boom"}], "isError": true}"#);
    let o = sb.cmd(["deliver", "--call", &s(&call), "--key", "a", "--version", "v", "--result", &s(&err)]).run();
    assert_eq!(o.code, 1, "{o:?}");
    assert!(o.stdout.contains("not-recorded") && o.stdout.contains("isError"), "{o:?}");
    assert_eq!(ledger_lines(&sb), 1);
}

#[test]
fn a_stub_needs_the_hosts_confirmation_of_this_very_content() {
    let sb = Sandbox::new();
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let text = "fn main() {}\n".repeat(100);
    let res = result_file(&sb, "r.json", &text);
    let stub = |call: &PathBuf, key: &str, ver: &str, result: Option<&PathBuf>| run_stub(&sb, call, key, ver, result);
    // Chat A reads main.rs; the host shows the model a preview only.
    let c1 = claude_call(&sb, "A", "toolu_a1", "main.rs");
    assert_eq!(said(&stub(&c1, "main.rs", "v1", Some(&res)).stdout), "send-content not-delivered");
    claude_batch(&sb, "A", "toolu_a1", json!("<persisted-output>\nOutput too large (2KB preview)"));
    let c2 = claude_call(&sb, "A", "toolu_a2", "main.rs");
    assert_eq!(said(&stub(&c2, "main.rs", "v1", Some(&res)).stdout), "send-content unconfirmed");
    // The second delivery arrives whole: now a re-read may be stubbed.
    claude_batch(&sb, "A", "toolu_a2", json!([{"type": "text", "text": text}]));
    let c3 = claude_call(&sb, "A", "toolu_a3", "main.rs");
    let o = stub(&c3, "main.rs", "v1", None);
    assert_eq!((o.code, said(&o.stdout)), (0, "serve-stub confirmed-delivery"));
    // Chat B holds the same key: its own deliveries only.
    let b1 = claude_call(&sb, "B", "toolu_b1", "main.rs");
    assert_eq!(said(&stub(&b1, "main.rs", "v1", Some(&res)).stdout), "send-content not-delivered");
    let b2 = claude_call(&sb, "B", "toolu_b2", "main.rs");
    assert_eq!(said(&stub(&b2, "main.rs", "v1", None).stdout), "send-content unconfirmed");
    claude_batch(&sb, "B", "toolu_b1", json!([{"type": "text", "text": text}]));
    assert_eq!(said(&stub(&b2, "main.rs", "v1", None).stdout), "serve-stub confirmed-delivery");
    assert_eq!(said(&stub(&c3, "main.rs", "v1", None).stdout), "serve-stub confirmed-delivery");
    // A newer version never reuses the older delivery, even going back to it.
    let res2 = result_file(&sb, "r2.json", "changed");
    let c4 = claude_call(&sb, "A", "toolu_a4", "main.rs");
    assert_eq!(said(&stub(&c4, "main.rs", "v2", Some(&res2)).stdout), "send-content version-changed");
    let c5 = claude_call(&sb, "A", "toolu_a5", "main.rs");
    assert_eq!(said(&stub(&c5, "main.rs", "v1", None).stdout), "send-content version-changed");
    // A compaction of A ends its window: B keeps its stubs.
    claude_batch(&sb, "A", "toolu_a4", json!([{"type": "text", "text": "changed"}]));
    assert_eq!(said(&stub(&c5, "main.rs", "v2", None).stdout), "serve-stub confirmed-delivery");
    sb.hook("claude-code", json!({"session_id": "A", "hook_event_name": "PreCompact"}).to_string()).ok();
    assert_eq!(said(&stub(&c5, "main.rs", "v2", None).stdout), "send-content compacted");
    assert_eq!(said(&stub(&b2, "main.rs", "v1", None).stdout), "serve-stub confirmed-delivery");
    // A call id no hook recorded: withheld, never re-identified otherwise.
    let ghost = sb.tmp.path().join("ghost.json");
    std::fs::write(
        &ghost,
        json!({"name": "ctx_read", "arguments": {"path": "main.rs"}, "_meta": {"claudecode/toolUseId": "toolu_ghost"}})
            .to_string(),
    )
    .unwrap();
    let o = stub(&ghost, "main.rs", "v1", Some(&res));
    assert_eq!((o.code, said(&o.stdout)), (1, "send-content unrecorded-call"));
    let o = sb
        .cmd(["deliver", "--call", &s(&ghost), "--key", "main.rs", "--version", "v1", "--result", &s(&res), "--json"])
        .run();
    assert_eq!(o.code, 1, "{o:?}");
    assert_eq!(o.json()["recorded"], false);
    // Losing the journal loses the deliveries: deliver again.
    std::fs::remove_file(sb.data.join("journal")).unwrap();
    let c6 = claude_call(&sb, "B", "toolu_b6", "main.rs");
    assert_eq!(said(&stub(&c6, "main.rs", "v1", None).stdout), "send-content not-delivered");
}

/// A compaction the transcript shows before a delivery ends the deliveries
/// before it, not that one: the second witness reads on when a delivery is
/// recorded. Read only at the next stub question (as before), the compaction
/// between two turns was journaled after the next turn's first deliveries
/// and ended them too (benches/workload: the first re-reads after every
/// Claude Code compaction withheld, `withdrawn` then `compacted`).
#[test]
fn a_compaction_before_a_delivery_ends_only_what_came_before_it() {
    use std::io::Write;
    let sb = Sandbox::new();
    let text = "fn main() {}\n".repeat(100);
    let res = result_file(&sb, "r.json", &text);
    let stub = |call: &PathBuf, key: &str, result: Option<&PathBuf>| {
        said(&run_stub(&sb, call, key, "v1", result).stdout).to_string()
    };
    let whole = json!([{"type": "text", "text": text}]);
    // Turn 1: a.rs, confirmed whole.
    let a1 = claude_call(&sb, "A", "toolu_1", "a.rs");
    assert_eq!(stub(&a1, "a.rs", Some(&res)), "send-content not-delivered");
    claude_batch(&sb, "A", "toolu_1", whole.clone());
    // The chat is compacted: its transcript shows it (no compaction hook).
    let t = claude_turn(&sb, "A");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&t)
        .unwrap()
        .write_all(b"{\"type\":\"system\",\"subtype\":\"compact_boundary\"}\n")
        .unwrap();
    // Turn 2: b.rs is delivered after the compaction; its re-read is a stub.
    let b1 = claude_call(&sb, "A", "toolu_2", "b.rs");
    assert_eq!(stub(&b1, "b.rs", Some(&res)), "send-content not-delivered");
    claude_batch(&sb, "A", "toolu_2", whole);
    let b2 = claude_call(&sb, "A", "toolu_3", "b.rs");
    assert_eq!(stub(&b2, "b.rs", None), "serve-stub confirmed-delivery");
    // a.rs was delivered before it: gone with the compaction.
    let a2 = claude_call(&sb, "A", "toolu_4", "a.rs");
    assert_eq!(stub(&a2, "a.rs", None), "send-content compacted");
}

#[test]
fn codex_window_ends_a_delivery_without_any_compaction_hook() {
    let sb = Sandbox::new();
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let text = "x".repeat(2000);
    let res = result_file(&sb, "r.json", &text);
    let call = |id: &str, window: &str| {
        let c = json!({"name": "ctx_read", "arguments": {"path": "m.rs"},
            "_meta": {"sessionId": "S", "threadId": "S", "callId": id, "windowId": window}});
        let p = sb.tmp.path().join(format!("{id}.json"));
        std::fs::write(&p, c.to_string()).unwrap();
        p
    };
    let post = |id: &str, len: usize| {
        let p = json!({"session_id": "S", "hook_event_name": "PostToolUse", "tool_name": "mcp__ctx__ctx_read",
            "tool_use_id": id, "tool_input": {"path": "m.rs"},
            "tool_response": {"content": [{"type": "text", "text": "x".repeat(len)}], "isError": false}});
        sb.hook("codex", p.to_string()).ok();
    };
    let c1 = call("call_1", "S:0");
    // Before any hook ran there is no state to record into: not recorded.
    let o =
        sb.cmd(["stub", "--call", &s(&c1), "--key", "m.rs", "--version", "v", "--result", &s(&res), "--json"]).run();
    assert_eq!((o.code, &o.json()["recorded"]["recorded"]), (1, &json!(false)), "{o:?}");
    sb.hook("codex", json!({"session_id": "S", "hook_event_name": "SessionStart", "source": "startup"}).to_string())
        .ok();
    let o =
        sb.cmd(["stub", "--call", &s(&c1), "--key", "m.rs", "--version", "v", "--result", &s(&res), "--json"]).run();
    assert_eq!((o.code, &o.json()["recorded"]["recorded"]), (1, &json!(true)), "{o:?}");
    post("call_1", 2000);
    let c2 = call("call_2", "S:0");
    assert_eq!(sb.cmd(["stub", "--call", &s(&c2), "--key", "m.rs", "--version", "v"]).run().code, 0);
    // The next window: no compaction hook ever ran, the windowId alone says it.
    let c3 = call("call_3", "S:1");
    let o = sb.cmd(["stub", "--call", &s(&c3), "--key", "m.rs", "--version", "v"]).run();
    assert_eq!((o.code, said(&o.stdout)), (1, "send-content window-changed"));
    // Over the budget: the model got a truncated copy. The user's config
    // budget counts (here lower than the default).
    std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
    std::fs::write(sb.home.join(".codex/config.toml"), "tool_output_token_limit = 100\n").unwrap();
    let big = result_file(&sb, "big.json", &"x".repeat(2000));
    let c4 = call("call_4", "S:1");
    sb.cmd(["stub", "--call", &s(&c4), "--key", "m.rs", "--version", "v", "--result", &s(&big)]).run();
    post("call_4", 2000);
    let o = sb.cmd(["stub", "--call", &s(&c3), "--key", "m.rs", "--version", "v", "--json"]).run();
    assert_eq!(o.json()["decision"]["reason"], "unconfirmed", "{o:?}");
    assert_eq!(o.json()["delivery"]["confirmation"], "cut");
}

/// Codex's rewind (`thread/revert`, on its app server) replaces the
/// thread's history and goes on in a new rollout file, with the same
/// session id and `windowId`, and no hook but SessionEnd and SessionStart
/// `resume` (tests/e2e, scenario `serve`). A delivery from before it backs
/// no stub after it; a resume of the same rollout file keeps it.
#[test]
fn codex_history_in_a_new_rollout_file_ends_its_deliveries() {
    let sb = Sandbox::new();
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let (t1, t2) = (sb.tmp.path().join("rollout-S.jsonl"), sb.tmp.path().join("rollout-S_R.jsonl"));
    for t in [&t1, &t2] {
        std::fs::write(t, "").unwrap();
    }
    let hook = |event: &str, t: &Path, source: Option<&str>| {
        let mut p = json!({"session_id": "S", "hook_event_name": event, "transcript_path": t});
        if let Some(src) = source {
            p["source"] = json!(src);
        }
        sb.hook("codex", p.to_string()).ok();
    };
    let res = result_file(&sb, "r.json", &"x".repeat(2000));
    let ask = |id: &str| {
        let c = json!({"name": "ctx_read", "arguments": {"path": "m.rs"},
            "_meta": {"sessionId": "S", "threadId": "S", "callId": id, "windowId": "S:0"}});
        let p = sb.tmp.path().join(format!("{id}.json"));
        std::fs::write(&p, c.to_string()).unwrap();
        sb.cmd(["stub", "--call", &s(&p), "--key", "m.rs", "--version", "v", "--result", &s(&res), "--json"]).run()
    };
    hook("SessionStart", &t1, Some("startup"));
    hook("UserPromptSubmit", &t1, None);
    assert_eq!(ask("call_1").code, 1);
    let post = json!({"session_id": "S", "hook_event_name": "PostToolUse", "tool_name": "mcp__ctx__ctx_read",
        "transcript_path": t1, "tool_use_id": "call_1", "tool_input": {"path": "m.rs"},
        "tool_response": {"content": [{"type": "text", "text": "x".repeat(2000)}], "isError": false}});
    sb.hook("codex", post.to_string()).ok();
    assert_eq!(ask("call_2").code, 0, "a stub on the acknowledged delivery");
    // `codex exec resume`: the same rollout file, the same history.
    hook("SessionEnd", &t1, None);
    hook("SessionStart", &t1, Some("resume"));
    hook("UserPromptSubmit", &t1, None);
    assert_eq!(ask("call_3").code, 0, "a resume keeps the history");
    // The rewind: the history goes on in another file.
    hook("SessionEnd", &t1, None);
    hook("SessionStart", &t2, Some("resume"));
    let o = ask("call_4");
    assert_eq!((o.code, o.json()["decision"]["reason"].as_str()), (1, Some("compacted")), "{o:?}");
}

/// Identity under pressure: the hook's record of this very call (Codex
/// `callId`) names a subagent that `_meta` without `threadId` does not; the
/// most specific evidence wins, for the read path and the ledger alike.
#[test]
fn codex_call_record_beats_meta_shortcuts() {
    let sb = Sandbox::new();
    let pre = json!({"session_id": "S", "agent_id": "sub1", "hook_event_name": "PreToolUse",
        "tool_name": "mcp__ctx__ctx_read", "tool_input": {"path": "a.rs"}, "tool_use_id": "call_77"});
    sb.hook("codex", pre.to_string()).ok();
    let call = sb.tmp.path().join("call.json");
    std::fs::write(
        &call,
        json!({"name": "ctx_read", "arguments": {"path": "a.rs"},
        "_meta": {"sessionId": "S", "callId": "call_77", "windowId": "S:0"}})
        .to_string(),
    )
    .unwrap();
    let c = call.to_str().unwrap();
    let o = sb.cmd(["scope", "current", "--call", c]).run();
    assert_eq!((o.code, said(&o.stdout)), (0, "agent:sub1"), "{o:?}");
    let res = result_file(&sb, "r.json", "body");
    let o = sb
        .cmd(["stub", "--call", c, "--key", "a.rs", "--version", "v", "--result", res.to_str().unwrap(), "--json"])
        .run();
    assert_eq!(o.json()["caller"]["scope"], "agent:sub1", "{o:?}");
    assert!(sb.journal().lines().any(|l| l.starts_with("D\t") && l.contains("\tagent:sub1\t")), "{}", sb.journal());
    // Without a record, `_meta` alone names the session.
    std::fs::write(
        &call,
        json!({"name": "ctx_read", "arguments": {"path": "a.rs"},
        "_meta": {"sessionId": "S", "callId": "call_78"}})
        .to_string(),
    )
    .unwrap();
    let o = sb.cmd(["scope", "current", "--call", c]).run();
    assert_eq!(said(&o.stdout), "S");
}

/// Many servers record deliveries at once (real processes) while hooks
/// acknowledge them: every delivery and acknowledgement lands whole, and each
/// delivery is confirmed.
#[test]
fn concurrent_deliveries_and_acknowledgements_all_land() {
    let sb = Sandbox::new();
    sb.hook("codex", json!({"session_id": "S", "hook_event_name": "SessionStart", "source": "startup"}).to_string())
        .ok();
    let res = result_file(&sb, "r.json", "body");
    let n = 16;
    let mut children = Vec::new();
    for i in 0..n {
        let c = sb.tmp.path().join(format!("c{i}.json"));
        std::fs::write(
            &c,
            json!({"name": "ctx_read", "arguments": {"path": format!("f{i}")},
            "_meta": {"sessionId": "S", "callId": format!("call_{i}"), "windowId": "S:0"}})
            .to_string(),
        )
        .unwrap();
        let key = format!("f{i}");
        children.push(
            sb.cmd([
                "deliver",
                "--call",
                c.to_str().unwrap(),
                "--key",
                &key,
                "--version",
                "v",
                "--result",
                res.to_str().unwrap(),
            ])
            .spawn(),
        );
        let post = json!({"session_id": "S", "hook_event_name": "PostToolUse", "tool_name": "mcp__ctx__ctx_read",
            "tool_use_id": format!("call_{i}"), "tool_input": {"path": key},
            "tool_response": {"content": [{"type": "text", "text": "body"}]}});
        children.push(sb.hook("codex", post.to_string()).spawn());
    }
    for mut ch in children {
        assert!(ch.wait().unwrap().success());
    }
    let journal = sb.journal();
    let recs = leanctx::state::journal::parse(&journal);
    let d = recs.iter().filter(|r| matches!(r, leanctx::state::journal::Record::Delivery(_))).count();
    let a = recs.iter().filter(|r| matches!(r, leanctx::state::journal::Record::Ack(_))).count();
    assert_eq!((d, a), (n, n), "{journal}");
    assert!(journal.lines().all(|l| l.starts_with('#') || leanctx::state::journal::is_known_line(l)), "{journal}");
    // A hook may acknowledge before its delivery lands (racing here, never in
    // a real host): only the acknowledgements after a delivery count.
    let mut confirmed = 0;
    for i in 0..n {
        let c = sb.tmp.path().join(format!("q{i}.json"));
        std::fs::write(
            &c,
            json!({"name": "ctx_read", "arguments": {"path": format!("f{i}")},
            "_meta": {"sessionId": "S", "callId": format!("q_{i}"), "windowId": "S:0"}})
            .to_string(),
        )
        .unwrap();
        let o = sb.cmd(["stub", "--call", c.to_str().unwrap(), "--key", &format!("f{i}"), "--version", "v"]).run();
        assert!(o.code == 0 || said(&o.stdout) == "send-content unconfirmed", "{o:?}");
        confirmed += usize::from(o.code == 0);
    }
    use leanctx::state::journal::Record;
    let expected = (0..n)
        .filter(|i| {
            let r = format!("id:call_{i}");
            let d = recs.iter().position(|x| matches!(x, Record::Delivery(d) if d.call_ref == r)).unwrap();
            recs[d + 1..].iter().any(|x| matches!(x, Record::Ack(a) if a.call_ref == r))
        })
        .count();
    eprintln!("concurrent ledger: {confirmed} of {n} deliveries acknowledged after they landed");
    assert_eq!(confirmed, expected, "{journal}");
}

/// `--json` says which delivery the answer relied on, and whether it was of
/// this version.
#[test]
fn the_json_answer_names_the_delivery_and_its_version() {
    let sb = Sandbox::new();
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let res = result_file(&sb, "r.json", "text");
    let c1 = claude_call(&sb, "A", "toolu_1", "a.rs");
    let o = sb.cmd(["stub", "--call", &s(&c1), "--key", "a.rs", "--version", "v1", "--result", &s(&res)]).run();
    assert_eq!(o.code, 1, "{o:?}");
    claude_batch(&sb, "A", "toolu_1", json!([{"type": "text", "text": "text"}]));
    let c2 = claude_call(&sb, "A", "toolu_2", "a.rs");
    let ask = |ver: &str| sb.cmd(["stub", "--call", &s(&c2), "--key", "a.rs", "--version", ver, "--json"]).run();
    let o = ask("v1");
    assert_eq!(o.code, 0, "{o:?}");
    let j = o.json();
    assert_eq!(j["delivery"]["same_version"], true, "{j}");
    assert_eq!(j["delivery"]["confirmation"], "whole", "{j}");
    assert_eq!(j["delivery"]["ref"], "id:toolu_1", "{j}");
    let o = ask("v2");
    assert_eq!(o.code, 1, "{o:?}");
    let j = o.json();
    assert_eq!(j["decision"]["reason"], "version-changed", "{j}");
    assert_eq!(j["delivery"]["same_version"], false, "{j}");
}

/// A delivery that cannot be recorded says why, in the user's terms, for
/// each way the caller can be unknown.
#[test]
fn an_unrecorded_delivery_says_why() {
    let sb = Sandbox::new();
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let res = result_file(&sb, "r.json", "text");
    let write = |name: &str, v: Value| {
        let p = sb.tmp.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let why = |call: &PathBuf, env: &[(&str, &str)]| {
        let mut run = sb.cmd(["deliver", "--call", &s(call), "--key", "a.rs", "--version", "v1", "--result", &s(&res)]);
        run = run.arg("--json");
        for (k, v) in env {
            run = run.env(k, v);
        }
        let o = run.run();
        assert_eq!(o.code, 1, "{o:?}");
        let j = o.json();
        assert_eq!(j["recorded"], false, "{j}");
        j["why"].as_str().unwrap_or_default().to_string()
    };
    // A Claude call id no hook recorded.
    claude_call(&sb, "A", "toolu_seen", "x.rs");
    let ghost = write(
        "ghost.json",
        json!({"name": "ctx_read", "arguments": {"path": "a.rs"},
        "_meta": {"claudecode/toolUseId": "toolu_ghost"}}),
    );
    assert!(why(&ghost, &[]).contains("names no hook record"));
    // Two Cursor chats made this very call: ambiguous.
    for conv in ["C1", "C2"] {
        let p = json!({"hook_event_name": "beforeMCPExecution", "conversation_id": conv, "tool_name": "ctx_read",
            "tool_input": json!({"path": "a.rs"}).to_string()});
        sb.hook("cursor", p.to_string()).ok();
    }
    let bare = write("bare.json", json!({"name": "ctx_read", "arguments": {"path": "a.rs"}}));
    assert!(why(&bare, &[]).contains("several chats"));
    // Scoping switched off.
    assert!(why(&bare, &[("LEAN_CTX_CONVERSATION_SCOPE", "0")]).contains("scoping is disabled"));
    // A call no hook recorded and no id names.
    let unseen = write("unseen.json", json!({"name": "ctx_read", "arguments": {"path": "never.rs"}}));
    assert!(why(&unseen, &[]).contains("does not name its caller"));
    // State that cannot be read: the journal is a directory.
    std::fs::remove_file(sb.data.join("journal")).unwrap();
    std::fs::create_dir(sb.data.join("journal")).unwrap();
    let w = why(&ghost, &[]);
    assert!(w.contains("could not be read"), "{w}");
}

/// The read path waits (boundedly) for a journal lock another process holds
/// for a moment, as a hook does while it appends: a busy lock is not bad
/// state. (Unix: util-linux flock(1) is the other process.)
#[cfg(unix)]
#[test]
fn stub_and_deliver_wait_out_a_briefly_held_journal_lock() {
    let sb = Sandbox::new();
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let res = result_file(&sb, "r.json", "text");
    let c1 = claude_call(&sb, "A", "toolu_1", "a.rs");
    let o = sb.cmd(["deliver", "--call", &s(&c1), "--key", "a.rs", "--version", "v1", "--result", &s(&res)]).run();
    assert_eq!(o.code, 0, "{o:?}");
    claude_batch(&sb, "A", "toolu_1", json!([{"type": "text", "text": "text"}]));
    let c2 = claude_call(&sb, "A", "toolu_2", "a.rs");
    let lock = sb.data.join("journal.lock");
    assert!(lock.exists());
    for argv in [
        vec!["stub", "--call", &s(&c2), "--key", "a.rs", "--version", "v1"],
        vec!["deliver", "--call", &s(&c2), "--key", "b.rs", "--version", "v1", "--result", &s(&res)],
    ] {
        // Another process (util-linux flock(1)) holds the lock for 300 ms.
        let mut holder = std::process::Command::new("flock")
            .args(["-x", lock.to_str().unwrap(), "sleep", "0.3"])
            .spawn()
            .expect("flock(1) from util-linux");
        std::thread::sleep(std::time::Duration::from_millis(100));
        let o = sb.cmd(&argv).run();
        holder.wait().unwrap();
        assert_eq!(o.code, 0, "{argv:?} waited for the lock: {o:?}");
    }
}

/// `stub`'s plain answer without what follows `;` (whether the delivery
/// was recorded: tests/it/secondtry.rs checks that part).
fn said(stdout: &str) -> &str {
    stdout.split(';').next().unwrap_or_default().trim()
}
