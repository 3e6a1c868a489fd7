//! The read path: per-call identity over the captured fixtures, stub
//! decisions, the CLI's exit codes, and the journal's bound.

use crate::support::{Sandbox, payload, payloads};
use leanctx::identity::caller::{ScopeEnv, Source};
use leanctx::identity::mcp_call::McpCall;
use leanctx::identity::readpath::{ReadPath, StubQuery};
use leanctx::state::journal::{self, Journal, Reach, Record, View};
use leanctx::{Host, Reason};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;

fn files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(payloads().join(dir)).unwrap().flatten().map(|e| e.path()).collect();
    v.sort();
    v
}

fn read_json(p: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The true scope of an MCP call, from the hook payload that preceded it.
fn true_scope(hook: &Value) -> String {
    match hook.get("agent_id").and_then(Value::as_str) {
        Some(a) => format!("agent:{a}"),
        None => hook["session_id"].as_str().unwrap().to_string(),
    }
}

struct Replay {
    resolved: usize,
    wrong_allowed: usize,
    right_allowed: usize,
    right_denied: usize,
}

/// Replay a captured scenario the way a server meets it: every hook payload
/// through the real binary in its captured order; at each MCP call's
/// PreToolUse the server resolves the call, asks for a stub against every
/// earlier delivery of the file (labelled, as a server must, with the
/// `delivery_scope` the read path gave it), and delivers; and just before a
/// session's `Stop` (both sessions of a concurrent run still live) it asks
/// again as a re-read of that session's calls. The oracle is what each
/// session was actually given: a delivery went to the true scope of the
/// call that received it (from the hook payloads), and a stub is safe only
/// for that scope with no compaction since. `env` is the MCP server's env.
fn replay(host: &str, scenario: &str, env: ScopeEnv) -> Replay {
    let sb = Sandbox::new();
    let dir = format!("{}/{scenario}", if host == "claude-code" { "claude" } else { host });
    let calls: Vec<Value> = files(&dir)
        .iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("mcp-tools-call"))
        .map(|p| read_json(p))
        .collect();
    let call_id_of = |c: &Value| -> String {
        let m = &c["params"]["_meta"];
        m["claudecode/toolUseId"].as_str().or(m["callId"].as_str()).unwrap().to_string()
    };
    let rp = ReadPath::new(&sb.data, env);
    let mut r = Replay { resolved: 0, wrong_allowed: 0, right_allowed: 0, right_denied: 0 };
    // (label the server stored, when, the true receiver, its session)
    let mut delivered: Vec<(Option<String>, u64, String, String)> = Vec::new();
    let mut compacted_at: HashMap<String, u64> = HashMap::new();
    let mut asked: Vec<(Value, String, String)> = Vec::new(); // (call, true scope, session)
    let ask = |r: &mut Replay,
               call: &Value,
               want: &str,
               delivered: &[(Option<String>, u64, String, String)],
               compacted_at: &HashMap<String, u64>| {
        let call = McpCall::from_json(call).unwrap();
        for (label, at, receiver, session) in delivered {
            let ans = rp.decide(&StubQuery {
                delivered: label.as_deref(),
                delivered_at_ms: Some(*at),
                cold: false,
                call: Some(&call),
            });
            let safe = receiver == want && compacted_at.get(session).is_none_or(|c| c < at);
            match (ans.decision.allow, safe) {
                (true, false) => r.wrong_allowed += 1,
                (true, true) => r.right_allowed += 1,
                (false, true) => r.right_denied += 1,
                (false, false) => {}
            }
        }
    };
    for f in files(&dir).iter().filter(|p| {
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        !n.starts_with("mcp-") && n != "model-received.json"
    }) {
        let v = read_json(f);
        let session = v["session_id"].as_str().unwrap_or_default().to_string();
        if matches!(v["hook_event_name"].as_str(), Some("Stop")) {
            // Re-reads by this session while every other session is still live.
            for (call, want, _) in asked.iter().filter(|(_, _, s)| *s == session) {
                ask(&mut r, call, want, &delivered, &compacted_at);
            }
        }
        sb.hook(host, v.to_string()).ok();
        if matches!(v["hook_event_name"].as_str(), Some("PreCompact" | "PostCompact"))
            || (v["hook_event_name"] == "SessionStart" && v["source"] == "compact")
        {
            compacted_at.insert(session.clone(), rp.now());
        }
        let Some(id) = v["tool_use_id"].as_str().filter(|_| v["hook_event_name"] == "PreToolUse") else { continue };
        let Some(call) = calls.iter().find(|c| call_id_of(c) == id) else { continue };
        let want = true_scope(&v);
        let mcp = McpCall::from_json(call).unwrap();
        let now = rp.now();
        let res = rp.resolve(Some(&mcp), now);
        assert!(res.caller.exact, "{dir}: call not resolved exactly: {res:?}");
        assert_eq!(res.caller.scope.as_deref(), Some(want.as_str()), "{dir}: wrong caller");
        r.resolved += 1;
        ask(&mut r, call, &want, &delivered, &compacted_at);
        // Deliver, labelled as a server must: with delivery_scope.
        let label = rp.delivery_scope(&res);
        delivered.push((label, now, want.clone(), session.clone()));
        asked.push((call.clone(), want, session));
    }
    r
}

#[test]
fn replay_captured_scenarios_zero_wrong_stubs() {
    let mut report = Vec::new();
    for (host, scen) in [
        ("claude-code", "concurrent"),
        ("claude-code", "subagent"),
        ("claude-code", "baseline"),
        ("codex", "concurrent"),
        ("codex", "subagent"),
        ("codex", "baseline"),
    ] {
        let r = replay(host, scen, ScopeEnv::default());
        assert_eq!(r.wrong_allowed, 0, "{host}/{scen}: wrong stubs allowed");
        assert!(r.right_allowed > 0, "{host}/{scen}: no safe stub allowed");
        report.push(format!(
            "{host}/{scen}: {} calls resolved, wrong stubs 0, safe stubs allowed {} (withheld {})",
            r.resolved, r.right_allowed, r.right_denied
        ));
    }
    println!("{}", report.join("\n"));
}

#[test]
fn claude_subagent_never_gets_parent_stubs_and_back() {
    let sb = Sandbox::new();
    for f in files("claude/subagent").iter().filter(|p| !p.to_string_lossy().contains("mcp-")) {
        sb.hook("claude", std::fs::read_to_string(f).unwrap()).ok();
    }
    let call = McpCall::from_json(&read_json(&payloads().join("claude/subagent/mcp-tools-call-1.json"))).unwrap();
    let parent = "40408dbc-2d7c-4bbf-ae56-3a16c119a3fe";
    let rp = ReadPath::new(&sb.data, ScopeEnv { claude_session_id: Some(parent.into()), ..ScopeEnv::default() });
    let ans =
        rp.decide(&StubQuery { delivered: Some(parent), delivered_at_ms: Some(1), cold: false, call: Some(&call) });
    assert!(!ans.decision.allow);
    assert_eq!(ans.decision.reason, Reason::OtherConversation);
    assert_eq!(ans.caller.scope.as_deref(), Some("agent:a715a3f764ed27d1d"));
    assert_eq!(ans.caller.source, Source::ToolUseId);
    // The parent (process env, no call context) never gets the subagent's.
    let ans = rp.decide(&StubQuery {
        delivered: Some("agent:a715a3f764ed27d1d"),
        delivered_at_ms: Some(1),
        ..Default::default()
    });
    assert!(!ans.decision.allow);
}

#[test]
fn claude_process_env_is_withheld_while_a_subagent_runs() {
    let sb = Sandbox::new();
    let parent = "40408dbc-2d7c-4bbf-ae56-3a16c119a3fe";
    // Up to SubagentStart: the subagent is running. The hooks carry the
    // Claude process's pid, the server's parent: the env is proven.
    for f in files("claude/subagent").iter().take(5) {
        sb.hook("claude", std::fs::read_to_string(f).unwrap()).env("CLAUDE_PID", "4242").ok();
    }
    let env = ScopeEnv { claude_session_id: Some(parent.into()), parent_pid: Some(4242), ..ScopeEnv::default() };
    let rp = ReadPath::new(&sb.data, env);
    let q = StubQuery { delivered: Some(parent), delivered_at_ms: Some(1), ..Default::default() };
    assert_eq!(rp.decide(&q).decision.reason, Reason::SubagentActive);
    // After SubagentStop the parent's own env identity is good again.
    sb.hook("claude", payload("claude/subagent/12-SubagentStop.json")).ok();
    assert!(rp.decide(&q).decision.allow);
}

#[test]
fn codex_compaction_invalidates_earlier_deliveries() {
    let sb = Sandbox::new();
    let sid = "01a228bd-d7ca-7821-a6fe-42c325e6147a";
    let all = files("codex/resume-compact");
    let hooks: Vec<_> = all.iter().filter(|p| !p.to_string_lossy().contains("mcp-")).collect();
    for f in &hooks[..10] {
        sb.hook("codex", std::fs::read_to_string(f).unwrap()).ok();
    }
    let call = McpCall::from_json(&read_json(&payloads().join("codex/resume-compact/mcp-tools-call-1.json"))).unwrap();
    let rp = ReadPath::new(&sb.data, ScopeEnv::default());
    let delivered_at = rp.now();
    let q = StubQuery { delivered: Some(sid), delivered_at_ms: Some(delivered_at), cold: false, call: Some(&call) };
    assert!(rp.decide(&q).decision.allow, "before compaction");
    std::thread::sleep(std::time::Duration::from_millis(5));
    for f in &hooks[10..] {
        sb.hook("codex", std::fs::read_to_string(f).unwrap()).ok();
    }
    let ans = rp.decide(&q);
    assert_eq!(ans.decision.reason, Reason::Compacted);
    assert!(!ans.decision.allow);
    // A delivery after the compaction is fine again.
    let later = StubQuery { delivered_at_ms: Some(rp.now() + 1), ..q.clone() };
    assert!(rp.decide(&later).decision.allow);
    // Cold stubs without a time withhold after any compaction.
    let cold = StubQuery { delivered_at_ms: None, cold: true, ..q };
    assert!(!rp.decide(&cold).decision.allow);
}

#[test]
fn claude_resume_compact_fixture_records_compaction() {
    let sb = Sandbox::new();
    for f in files("claude/resume-compact").iter().filter(|p| !p.to_string_lossy().contains("mcp-")) {
        sb.hook("claude", std::fs::read_to_string(f).unwrap()).ok();
    }
    let j = sb.journal();
    let sid = "7c6c8d75-58a6-4bd7-a186-c7ba1055881e";
    // PreCompact, SessionStart(compact), PostCompact.
    assert_eq!(j.lines().filter(|l| l.starts_with("P\t") && l.ends_with(sid)).count(), 3);
    // Compaction subagents (SubagentStop without start) leave nothing open.
    let text = sb.journal();
    let v = View::parse(&text);
    assert!(v.active_subagents(sid, leanctx::base::clock::now_ms()).is_empty());
}

/// Two Cursor chats interleaved. Different arguments: each MCP call claims
/// its own record (exact, stubs allowed under concurrency). The same
/// arguments in the same window: ambiguous, nothing claimed, withheld.
#[test]
fn cursor_two_chats_fingerprint_claims() {
    let sb = Sandbox::new();
    let ev = |conv: &str, name: &str, extra: Value| {
        let mut v = json!({"conversation_id": conv, "hook_event_name": name, "workspace_roots": ["/w"]});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v.to_string()
    };
    let (a, b) = ("conv-a", "conv-b");
    for c in [a, b] {
        sb.hook("cursor", ev(c, "sessionStart", json!({}))).ok();
        sb.hook("cursor", ev(c, "beforeSubmitPrompt", json!({"prompt": "x"}))).ok();
    }
    let mcp = |c: &str, path: &str| {
        ev(
            c,
            "beforeMCPExecution",
            json!({"tool_name": "ctx_read", "tool_input": format!("{{\"path\":\"{path}\"}}"), "command": "lean-ctx"}),
        )
    };
    let call = |path: &str| McpCall::from_json(&json!({"name": "ctx_read", "arguments": {"path": path}})).unwrap();
    let rp = ReadPath::new(&sb.data, ScopeEnv::default());
    assert!(rp.concurrent());

    sb.hook("cursor", mcp(a, "a.rs")).ok();
    sb.hook("cursor", mcp(b, "b.rs")).ok();
    let ra = rp.resolve(Some(&call("a.rs")), rp.now());
    let rb = rp.resolve(Some(&call("b.rs")), rp.now());
    assert_eq!((ra.caller.scope.as_deref(), ra.caller.source), (Some(a), Source::Fingerprint));
    assert_eq!(rb.caller.scope.as_deref(), Some(b));
    // Claimed once: a second server asking about the same call gets nothing.
    let again = rp.resolve(Some(&call("a.rs")), rp.now());
    assert_ne!(again.caller.source, Source::Fingerprint);

    // A re-read in chat A with an exact caller gets the stub despite concurrency.
    sb.hook("cursor", mcp(a, "a.rs")).ok();
    let ans =
        rp.decide(&StubQuery { delivered: Some(a), delivered_at_ms: Some(1), cold: false, call: Some(&call("a.rs")) });
    assert!(ans.decision.allow, "{ans:?}");

    // Same call from both chats inside the window: ambiguous → withheld.
    sb.hook("cursor", mcp(a, "same.rs")).ok();
    sb.hook("cursor", mcp(b, "same.rs")).ok();
    let ans = rp.decide(&StubQuery {
        delivered: Some(a),
        delivered_at_ms: Some(1),
        cold: false,
        call: Some(&call("same.rs")),
    });
    assert_eq!(ans.per_call, leanctx::identity::mcp_call::PerCall::Ambiguous);
    assert!(!ans.decision.allow);
    // A call that names nobody is never re-identified from the slot.
    assert_eq!(ans.decision.reason, Reason::UnknownCaller);
}

/// Many servers race to claim one record, as real processes: exactly one wins.
#[test]
fn a_claim_is_taken_exactly_once_across_processes() {
    let sb = Sandbox::new();
    sb.hook("cursor", payload("cursor/composed/03-beforeMCPExecution-string-input.json")).ok();
    let call = r#"{"name":"ctx_read","arguments":{"mode":"map","path":"src/main.rs"}}"#;
    let kids: Vec<_> =
        (0..12).map(|_| sb.cmd(["scope", "current", "--json", "--call", "-"]).stdin(call).spawn()).collect();
    let mut winners = 0;
    for k in kids {
        let o = k.wait_with_output().unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        if v["caller"]["source"] == "fingerprint" {
            winners += 1;
            assert_eq!(v["caller"]["scope"], "0e1f4ed8-d858-4557-9fc5-6cbf5298eb8b");
        }
    }
    assert_eq!(winners, 1);
}

/// Claims append through the claim reader's own handle while hooks append
/// through theirs, as real processes: every line stays whole, and no call
/// record is claimed twice.
#[test]
fn claims_and_hooks_appending_at_once_keep_every_line_whole() {
    let sb = Sandbox::new();
    let hook = |conv: usize, path: usize| {
        json!({"hook_event_name": "beforeMCPExecution", "conversation_id": format!("C{conv}"),
            "tool_name": "ctx_read", "tool_input": json!({"path": format!("{path}.rs")}).to_string()})
        .to_string()
    };
    // One record per path to start with, so early claims have something to take.
    for p in 0..6 {
        sb.hook("cursor", hook(p, p)).ok();
    }
    let mut kids = Vec::new();
    for i in 0..24 {
        let p = i % 6;
        kids.push(sb.cmd(["hook", "cursor"]).stdin(hook(p, p)).spawn());
        let request = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "ctx_read", "arguments": {"path": format!("{p}.rs")}}});
        kids.push(sb.cmd(["scope", "current", "--json", "--call", "-"]).stdin(request.to_string()).spawn());
    }
    let mut won = 0;
    for k in kids {
        let o = k.wait_with_output().unwrap();
        assert!(o.status.code().is_some_and(|c| c <= 1), "{o:?}");
        if let Ok(v) = serde_json::from_slice::<Value>(&o.stdout) {
            won += usize::from(v["caller"]["source"] == "fingerprint");
        }
    }
    let text = sb.journal();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(leanctx::state::journal::parse(&text).len(), lines.len(), "every line whole:\n{text}");
    let keys: Vec<&str> = leanctx::state::journal::parse(&text)
        .into_iter()
        .filter_map(|r| if let leanctx::state::journal::Record::Claim { key, .. } = r { Some(key) } else { None })
        .collect();
    let mut unique = keys.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!((keys.len(), unique.len()), (won, won), "one claim per winner, none twice: {keys:?}");
    assert!(won > 0, "some claims were taken");
}

#[test]
fn scope_check_cli_exit_codes_and_json() {
    let sb = Sandbox::new();
    let sid = "68bfdc56-c5ac-4f7e-b000-18c5bbb6c9d7";
    sb.hook("claude", payload("claude/baseline/01-SessionStart.json")).ok();
    let o = sb.cmd(["scope", "current"]).ok();
    assert_eq!(o.stdout.trim(), sid);
    let o = sb.cmd(["scope", "check", "--delivered", sid]).run();
    assert_eq!((o.code, o.stdout.trim()), (0, "allow same-conversation"));
    let o = sb.cmd(["scope", "check", "--delivered", "other"]).run();
    assert_eq!((o.code, o.stdout.trim()), (1, "withhold other-conversation"));
    let o = sb.cmd(["scope", "check"]).run();
    assert_eq!((o.code, o.stdout.trim()), (1, "withhold unknown-delivery"));
    let o = sb.cmd(["scope", "check", "--delivered", sid, "--json"]).run();
    let v = o.json();
    assert_eq!(v["decision"]["reason"], "same-conversation");
    assert_eq!(v["caller"]["source"], "slot");
    assert_eq!(v["caller"]["exact"], false);
    // Bad --call: exit 2 with a reason.
    let o = sb.cmd(["scope", "check", "--delivered", sid, "--call", "-"]).stdin("nope").run();
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("--call"));
    let o = sb.cmd(["scope", "check", "--delivered", sid, "--call", "/nonexistent"]).run();
    assert_eq!(o.code, 2);
    // Environment overrides.
    let o = sb.cmd(["scope", "check", "--delivered", "x"]).env("LEAN_CTX_CONVERSATION_SCOPE", "off").run();
    assert_eq!((o.code, o.stdout.trim()), (0, "allow scope-disabled"));
    let o = sb.cmd(["scope", "current", "--json"]).env("LEAN_CTX_SCOPE", "mine").run();
    assert_eq!(o.json()["caller"]["scope"], "custom:mine");
    let o = sb.cmd(["scope", "current"]).env("CURSOR_TASK_ID", "t9").run();
    assert_eq!(o.stdout.trim(), "task:t9");
    // The server's own CLAUDE_CODE_SESSION_ID, unproven (no Claude process's
    // hook recorded it): ignored, the slot decides.
    let o = sb.cmd(["scope", "current", "--json"]).env("CLAUDE_CODE_SESSION_ID", "proc-sess").run();
    assert_eq!(o.json()["caller"]["source"], "slot");
    // A stale slot (past the TTL) names nobody.
    let o = sb
        .cmd(["scope", "current"])
        .env("LEAN_CTX_NOW_MS", (leanctx::base::clock::now_ms() + 3 * 3_600_000).to_string())
        .run();
    assert_eq!(o.code, 1);
}

#[cfg(unix)] // sh stands in for the MCP server
#[test]
fn concurrency_makes_slot_callers_withhold_but_not_exact_ones() {
    let sb = Sandbox::new();
    for f in ["claude/concurrent/01-SessionStart.json", "claude/concurrent/04-SessionStart.json"] {
        sb.hook("claude", payload(f)).ok();
    }
    let latest = "f6ab2e21-73a7-4aaa-b76e-ef330b9f0de8";
    let o = sb.cmd(["scope", "check", "--delivered", latest]).run();
    assert_eq!((o.code, o.stdout.trim()), (1, "withhold concurrent"));
    // The server's env alone is not proof (a shared server has one env for
    // every chat): withheld like the slot.
    let o = sb.cmd(["scope", "check", "--delivered", latest]).env("CLAUDE_CODE_SESSION_ID", latest).run();
    assert_eq!((o.code, o.stdout.trim()), (1, "withhold concurrent"));
    // Proven: the server (a shell here) was started by the Claude process
    // (this test) whose SessionStart hook recorded that session.
    sb.hook("claude", payload("claude/concurrent/04-SessionStart.json"))
        .env("CLAUDE_PID", std::process::id().to_string())
        .ok();
    let o = as_claude_server(&sb, latest, &format!("scope check --delivered {latest}"));
    assert_eq!(o, "allow same-conversation");
    let st = sb.cmd(["status", "--json"]).report().json();
    assert_eq!(st["concurrent"], true);
    assert_eq!(st["live"].as_array().unwrap().len(), 2);
    let human = sb.cmd(["status"]).report().stdout;
    assert!(human.contains("2 active at once"), "{human}");
}

#[test]
fn claude_clear_lineage_moves_the_process_identity() {
    let sb = Sandbox::new();
    let s1 = "11111111-1111-4111-8111-111111111111";
    let s2 = "22222222-2222-4222-8222-222222222222";
    sb.hook("claude", json!({"hook_event_name":"SessionStart","session_id":s1,"source":"startup"}).to_string()).ok();
    // The hook env carries CLAUDE_PID; the MCP server's parent is that pid.
    let ppid = 424242u32;
    sb.hook("claude", json!({"hook_event_name":"SessionStart","session_id":s2,"source":"clear"}).to_string())
        .env("CLAUDE_PID", ppid.to_string())
        .ok();
    let env = ScopeEnv { claude_session_id: Some(s1.into()), parent_pid: Some(ppid), ..ScopeEnv::default() };
    let rp = ReadPath::new(&sb.data, env);
    let res = rp.resolve(None, rp.now());
    assert_eq!(res.caller.scope.as_deref(), Some(s2), "the stale env id moved to the new session");
    let ans = rp.decide(&StubQuery { delivered: Some(s1), delivered_at_ms: Some(1), ..Default::default() });
    assert!(!ans.decision.allow, "content delivered before /clear is gone");
}

/// The lean-ctx-compatible free functions read the process environment, so
/// they run in a child process of this test binary whose environment is the
/// sandbox's (never the real home), against known state, one and two chats.
#[test]
fn public_api_functions() {
    let sb = Sandbox::new();
    let a = "aaaaaaaa-1111-4111-8111-111111111111";
    let b = "bbbbbbbb-2222-4222-8222-222222222222";
    let child = |want: &str| {
        let o = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "readpath::public_api_functions_child", "--ignored", "--nocapture", "--test-threads=1"])
            .env_clear()
            // Where the temp dir is (the child checks the sandbox is in it).
            .envs(std::env::vars_os().filter(|(k, _)| ["TMPDIR", "TEMP", "TMP"].iter().any(|t| k == t)))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &sb.home)
            .env("LEAN_CTX_DATA_DIR", &sb.data)
            .env("LEANCTX_TEST_WANT", want)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success() && out.contains("1 passed"), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    };
    sb.hook("claude", json!({"hook_event_name":"UserPromptSubmit","session_id":a}).to_string()).ok();
    child(&format!("{a} single"));
    sb.hook("claude", json!({"hook_event_name":"UserPromptSubmit","session_id":b}).to_string()).ok();
    child(&format!("{b} concurrent"));
}

#[test]
#[ignore = "run by public_api_functions in a child process with the sandbox's environment"]
fn public_api_functions_child() {
    let want = std::env::var("LEANCTX_TEST_WANT").expect("run by public_api_functions");
    let (current, state) = want.split_once(' ').unwrap();
    let rp = ReadPath::from_process();
    assert!(rp.data_dir().is_some_and(|d| d.starts_with(std::env::temp_dir())), "not the sandbox: {:?}", rp.data_dir());
    let concurrent = state == "concurrent";
    assert_eq!(leanctx::multiple_conversations_recent(), concurrent);
    assert_eq!(leanctx::multiple_conversations_recent(), rp.concurrent());
    assert_eq!(leanctx::current_conversation_id_fresh().as_deref(), Some(current));
    assert_eq!(leanctx::current_conversation_id().as_deref(), Some(current));
    // The slot names the last writer: alone it may have its stubs, not with
    // another chat live; never another's, warm or cold.
    assert_eq!(leanctx::conversation_allows_stub(Some(current), Some(current)), !concurrent);
    assert_eq!(
        leanctx::conversation_allows_stub(Some(current), Some(current)),
        rp.decide_given(Some(current), Some(current), false).allow
    );
    assert_eq!(leanctx::conversation_allows_cold_stub(Some(current), Some(current)), !concurrent);
    assert!(!leanctx::conversation_allows_stub(Some(current), Some("someone-else")));
    assert!(!leanctx::conversation_allows_cold_stub(Some(current), Some("someone-else")));
    let ans = leanctx::stub_decision(Some(current), None, false, None);
    assert_eq!(ans.decision.allow, !concurrent, "{ans:?}");
}

/// A million events: the journal stays bounded and reading it costs the
/// same as after a hundred (counted in bytes and records, not seconds).
#[test]
fn journal_stays_bounded_after_a_million_events() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let j = Journal::new(dir);
    let t0 = leanctx::base::clock::now_ms();
    let convs: Vec<String> = (0..1000).map(|i| format!("conv-{i}")).collect();
    let keys: Vec<String> = (0..1000).map(|i| format!("k-{i}")).collect();
    let cost = |j: &Journal| {
        let text = j.read().unwrap();
        (text.len(), journal::parse(&text).len())
    };
    let mut small = (0, 0);
    let mut written = 0u64;
    let mut max_size = 0u64;
    let batch = 1000;
    while written < 1_000_000 {
        let t = t0 + written / 100; // 10 events per ms of fake time
        let recs: Vec<Record<'_>> = (0..batch)
            .map(|i| {
                let n = (written as usize + i) % 1000;
                match i % 4 {
                    0 => Record::Call(journal::Call {
                        t,
                        host: Host::Cursor,
                        conv: &convs[n],
                        agent: None,
                        server: Some("ctx"),
                        tool: "ctx_read",
                        fp: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                        call_id: None,
                        key: &keys[n],
                    }),
                    1 => Record::Compaction { t, host: Host::ClaudeCode, conv: &convs[n], reach: Reach::All },
                    _ => Record::Sighting { t, host: Host::ClaudeCode, conv: &convs[n], event: "PreToolUse" },
                }
            })
            .collect();
        j.append(&recs, t).unwrap();
        written += batch as u64;
        max_size = max_size.max(j.size());
        if written == 1000 {
            small = cost(&j);
        }
    }
    let big = cost(&j);
    let bound = 256 * 1024;
    assert!(max_size <= bound, "journal grew to {max_size} bytes");
    // Reading after 1,000,000 events costs no more than 1.5× reading after
    // the first 1,000 (the first trim happens within the first batches).
    assert!(big.0 as f64 <= 1.5 * small.0.max(16 * 1024) as f64, "bytes read: {} vs {}", big.0, small.0);
    assert!(big.1 <= 1000, "records parsed: {}", big.1);
    // And the verdicts are still right: all those conversations are live.
    let text = j.read().unwrap();
    let v = View::parse(&text);
    let now = t0 + written / 100;
    assert!(v.concurrent(now));
    // Evicted compactions are covered by the floor: any delivery before the
    // latest compaction of an evicted conversation is withheld.
    let evicted = convs.iter().find(|c| v.last_compaction(c).is_none()).expect("some conversation evicted");
    let _ = evicted;
    assert!(v.compaction_floor() >= t0);
    println!("journal after 1,000,000 events: {} bytes, {} records (after 1,000: {} bytes)", big.0, big.1, small.0);
}

/// A server that resolves one request twice (check, then record the
/// delivery) must get the same caller both times; another request must not
/// reuse the claim.
#[test]
fn a_request_resolving_twice_keeps_its_claim() {
    let sb = Sandbox::new();
    let conv = "0e1f4ed8-d858-4557-9fc5-6cbf5298eb8b";
    sb.hook("cursor", payload("cursor/composed/03-beforeMCPExecution-string-input.json")).ok();
    let rp = ReadPath::new(&sb.data, ScopeEnv::default()).with_server_pid(4242);
    let req = |id: u64| {
        McpCall::from_json(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"ctx_read","arguments":{"path":"src/main.rs","mode":"map"}}}))
        .unwrap()
    };
    let first = rp.resolve(Some(&req(7)), rp.now());
    assert_eq!((first.caller.scope.as_deref(), first.caller.source), (Some(conv), Source::Fingerprint));
    let again = rp.resolve(Some(&req(7)), rp.now());
    assert_eq!((again.caller.scope.as_deref(), again.caller.source), (Some(conv), Source::Fingerprint));
    let other = rp.resolve(Some(&req(8)), rp.now());
    assert_ne!(other.caller.source, Source::Fingerprint, "a different request cannot reuse the claim");
    let other_server = ReadPath::new(&sb.data, ScopeEnv::default()).with_server_pid(5151);
    assert_ne!(other_server.resolve(Some(&req(7)), rp.now()).caller.source, Source::Fingerprint);
    // Only one claim line was written.
    assert_eq!(Sandbox::count(&sb.journal(), |r| matches!(r, Record::Claim { .. })), 1);
}

/// The read path fails closed: state that exists but cannot be read (here a
/// lock held by a stuck writer; a journal that is a directory) withholds
/// every stub, where the hook path would fail open.
#[test]
fn unreadable_state_withholds() {
    let sb = Sandbox::new();
    let sid = "68bfdc56-c5ac-4f7e-b000-18c5bbb6c9d7";
    sb.hook("claude", payload("claude/baseline/01-SessionStart.json")).ok();
    let o = sb.cmd(["scope", "check", "--delivered", sid]).run();
    assert_eq!(o.code, 0);
    let lock = std::fs::OpenOptions::new().write(true).open(sb.data.join("journal.lock")).unwrap();
    lock.lock().unwrap();
    let o = sb.cmd(["scope", "check", "--delivered", sid]).run();
    assert_eq!((o.code, o.stdout.trim()), (1, "withhold state-unavailable"));
    let env = ScopeEnv { claude_session_id: Some(sid.into()), ..ScopeEnv::default() };
    let rp = ReadPath::new(&sb.data, env);
    assert!(rp.concurrent(), "unknown state reads as concurrent");
    // The hook still answers (fail open), and says why.
    let h = sb.hook("claude", payload("claude/baseline/07-PreToolUse.json")).run();
    assert_eq!((h.code, h.stdout.as_str()), (0, ""));
    assert!(h.stderr.contains("lock busy"), "{}", h.stderr);
    // Closing the handle releases the lock on every system. (Not
    // `unlock()`: std's second UnlockFile, meant to find nothing locked,
    // gets ERROR_LOCK_VIOLATION from Wine 8 where Windows says
    // ERROR_NOT_LOCKED, which std accepts; README "Platforms".)
    drop(lock);
    assert!(!rp.concurrent());

    std::fs::remove_file(sb.data.join("journal")).unwrap();
    std::fs::create_dir(sb.data.join("journal")).unwrap();
    let o = sb.cmd(["scope", "check", "--delivered", sid]).run();
    assert_eq!((o.code, o.stdout.trim()), (1, "withhold state-unavailable"));
}

/// Through the CLI, the `/clear` lineage is looked up for the host that
/// started the MCP server: the CLI's grandparent. Here a shell stands in for
/// the MCP server, and this test process for the host.
#[cfg(unix)] // sh stands in for the MCP server
#[test]
fn clear_lineage_through_the_cli_uses_the_servers_parent() {
    let sb = Sandbox::new();
    let s1 = "11111111-1111-4111-8111-111111111111";
    let s2 = "22222222-2222-4222-8222-222222222222";
    sb.hook("claude", json!({"hook_event_name":"SessionStart","session_id":s2,"source":"clear"}).to_string())
        .env("CLAUDE_PID", std::process::id().to_string())
        .ok();
    assert_eq!(as_claude_server(&sb, s1, "scope current"), s2);
}

/// `/clear` then `/resume` back to the first session in one Claude process:
/// the lineage follows both ways, so the server (whose env still names the
/// first session) resolves to whichever the process serves now.
#[cfg(unix)] // sh stands in for the MCP server
#[test]
fn clear_then_resume_back_follows_the_lineage_both_ways() {
    let sb = Sandbox::new();
    let s1 = "11111111-1111-4111-8111-111111111111";
    let s2 = "22222222-2222-4222-8222-222222222222";
    let pid = std::process::id().to_string();
    let start = |sid: &str, source: &str, at: u64| {
        sb.hook("claude", json!({"hook_event_name":"SessionStart","session_id":sid,"source":source}).to_string())
            .env("CLAUDE_PID", &pid)
            .env("LEAN_CTX_NOW_MS", (leanctx::base::clock::now_ms() - 10_000 + at).to_string())
            .ok();
    };
    let current = || as_claude_server(&sb, s1, "scope current");
    start(s1, "startup", 0);
    assert_eq!(current(), s1);
    start(s2, "clear", 1_000);
    assert_eq!(current(), s2);
    start(s1, "resume", 2_000);
    assert_eq!(current(), s1, "resumed back: the first session again, not the cleared one");
}

/// A subagent running for more than 2 h still runs: a caller that cannot
/// tell the parent from it (the process env) is withheld until its stop.
#[test]
fn a_long_subagent_runs_until_its_stop() {
    let sb = Sandbox::new();
    let s1 = "11111111-1111-4111-8111-111111111111";
    let now = leanctx::base::clock::now_ms();
    let hook = |ev: Value, at: u64| sb.hook("claude", ev.to_string()).env("LEAN_CTX_NOW_MS", at.to_string()).ok();
    hook(json!({"hook_event_name":"SubagentStart","session_id":s1,"agent_id":"long1"}), now - 3 * 3_600_000);
    hook(json!({"hook_event_name":"UserPromptSubmit","session_id":s1}), now - 1_000);
    let at = (now - 10 * 3_600_000).to_string();
    let check = || sb.cmd(["scope", "check", "--delivered", s1, "--at", &at]).env("CLAUDE_CODE_SESSION_ID", s1).run();
    assert_eq!(check().stdout.trim(), "withhold subagent-active");
    // Many hooks later (trims included), it still runs.
    for i in 0..400 {
        hook(
            json!({"hook_event_name":"PreToolUse","session_id":s1,"tool_name":"Read","tool_use_id":format!("t{i}")}),
            now - 900 + i,
        );
    }
    assert_eq!(check().stdout.trim(), "withhold subagent-active");
    hook(json!({"hook_event_name":"SubagentStop","session_id":s1,"agent_id":"long1"}), now - 100);
    assert_eq!(check().stdout.trim(), "allow same-conversation");
}

/// A Cursor `subagentStart` that names no subagent still starts one: the
/// parent's stubs are withheld from sources that cannot tell them apart.
/// A stop that names none (an older Cursor) cannot say which one stopped,
/// nor whether a start went unrecorded, so it closes none: the parent stays
/// withheld until its session ends (a new session then starts clean).
#[test]
fn a_subagent_start_without_an_id_still_starts_one() {
    let sb = Sandbox::new();
    let conv = "0e1f4ed8-d858-4557-9fc5-6cbf5298eb8b";
    let at = (leanctx::base::clock::now_ms() - 5_000).to_string();
    let hook =
        |ev: &str, c: &str| sb.hook("cursor", json!({"hook_event_name": ev, "conversation_id": c}).to_string()).ok();
    hook("beforeSubmitPrompt", conv);
    let check = |c: &str| sb.cmd(["scope", "check", "--delivered", c, "--at", &at]).run();
    assert_eq!(check(conv).stdout.trim(), "allow same-conversation");
    hook("subagentStart", conv);
    assert_eq!(check(conv).stdout.trim(), "withhold subagent-active");
    hook("subagentStop", conv);
    assert_eq!(check(conv).stdout.trim(), "withhold subagent-active");
    hook("sessionEnd", conv);
    let next = "1f2e3d4c-0000-4557-9fc5-6cbf5298eb8b";
    hook("beforeSubmitPrompt", next);
    assert_eq!(check(next).stdout.trim(), "allow same-conversation");
}

/// A Cursor task's own compaction (`CURSOR_TASK_ID`) ends its window: its
/// earlier deliveries are no longer stubbable.
#[test]
fn a_cursor_tasks_compaction_is_its_own() {
    let sb = Sandbox::new();
    let conv = "0e1f4ed8-d858-4557-9fc5-6cbf5298eb8b";
    let at = (leanctx::base::clock::now_ms() - 5_000).to_string();
    sb.hook("cursor", json!({"hook_event_name":"beforeSubmitPrompt","conversation_id":conv}).to_string())
        .env("CURSOR_TASK_ID", "t1")
        .ok();
    let check = || sb.cmd(["scope", "check", "--delivered", "task:t1", "--at", &at]).env("CURSOR_TASK_ID", "t1").run();
    assert_eq!(check().stdout.trim(), "allow same-conversation");
    sb.hook("cursor", json!({"hook_event_name":"preCompact","conversation_id":conv}).to_string())
        .env("CURSOR_TASK_ID", "t1")
        .ok();
    assert_eq!(check().stdout.trim(), "withhold compacted");
}

/// `leanctx <args>` run by a shell standing in for an MCP server that this
/// test process (standing in for the Claude Code process, `CLAUDE_PID`)
/// started, with `CLAUDE_CODE_SESSION_ID` in the server's environment.
/// Returns stdout, trimmed.
#[cfg(unix)] // a POSIX shell stands in for the MCP server
fn as_claude_server(sb: &Sandbox, session_env: &str, args: &str) -> String {
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("'{}' {args}; true", crate::support::BIN))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &sb.home)
        .env("LEAN_CTX_DATA_DIR", &sb.data)
        .env("CLAUDE_CODE_SESSION_ID", session_env)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn cursor_real(name: &str) -> Value {
    serde_json::from_str(&payload(&format!("cursor-real/3.18.25-{name}.json"))).unwrap()
}

/// The real Cursor 3.18.25 run (tests/fixtures/payloads/cursor-real), in
/// its order: the root chat's prompt and tools, its Task call, the
/// subagent's start in the root chat, the subagent's own MCP call (a fresh
/// `conversation_id`, `MCP:dump`), the stop of the subagent by its id and
/// the root's stop. No sessionStart (Cursor does not always send one). Two
/// MCP calls of the root chat are added, derived from the subagent's
/// capture with the root's ids (the capture has none on `preToolUse`): one
/// before the Task, one while the subagent runs, one after it.
///
/// Every event lands under the right conversation or subagent, the MCP
/// server (which gets only `_meta.progressToken`, as captured) resolves
/// each call to its own chat, and no stub crosses between the root and the
/// subagent, through `leanctx scope check` as a server would ask.
#[test]
fn replay_real_cursor_run_with_a_subagent() {
    let sb = Sandbox::new();
    let root = "b60ae0c1-2f85-4c4d-b3e5-b512f9b06e4c";
    let child = "9f26d535-5d39-4248-a9b2-2faaa07cd364";
    let raw_sub = cursor_real("subagentStart")["subagent_id"].as_str().unwrap().to_string();
    assert!(raw_sub.contains('\n'), "the real subagent id holds a newline");
    let agent = format!("task:{}", leanctx::base::ids::safe_id(&raw_sub).unwrap());
    let hook = |v: Value| {
        let o = sb.hook("cursor", v.to_string()).ok();
        assert!(o.stderr.is_empty(), "{}", o.stderr);
        o
    };
    // A root MCP call, derived from the subagent's capture.
    let root_mcp = |use_id: &str| {
        let mut v = cursor_real("preToolUse-MCP-in-subagent");
        v["conversation_id"] = json!(root);
        v["session_id"] = json!(root);
        v["tool_use_id"] = json!(use_id);
        v
    };
    // The request as the server receives it: name, arguments, and `_meta`
    // with a progress token only (mcp-server-observed-tools-call.json).
    let observed: Value =
        serde_json::from_str(&payload("cursor-real/3.18.25-mcp-server-observed-tools-call.json")).unwrap();
    assert_eq!(observed["observed"]["mcpReq"]["_meta"], json!({"progressToken": 4}));
    let request = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "dump", "arguments": {}, "_meta": {"progressToken": id}}})
        .to_string()
    };
    let check = |delivered: &str, id: u64| -> Value {
        let o = sb.cmd(["scope", "check", "--delivered", delivered, "--json", "--call", "-"]).stdin(request(id)).run();
        assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
        o.json()
    };
    let verdict =
        |v: &Value| (v["decision"]["allow"].as_bool().unwrap(), v["decision"]["reason"].as_str().unwrap().to_string());

    for name in ["beforeSubmitPrompt", "preToolUse-Read-root", "preToolUse-Shell-root", "postToolUse-Shell-root"] {
        hook(cursor_real(name));
    }
    // No sessionStart came: the chat is known all the same.
    assert_eq!(sb.slot().unwrap()["conversation_id"], root);
    assert_eq!(sb.cmd(["scope", "current"]).ok().stdout.trim(), root);

    // The root reads through the MCP server: delivered to the root.
    assert_eq!(hook(root_mcp("11111111-1111-4111-8111-111111111111")).json(), json!({"permission": "ask"}));
    let first = check(root, 1);
    assert_eq!(first["caller"]["scope"], root);
    assert_eq!(first["caller"]["source"], "fingerprint");
    assert_eq!(verdict(&first), (true, "same-conversation".into()));

    hook(cursor_real("preToolUse-Task-root"));
    hook(cursor_real("subagentStart"));
    // The subagent is open under the root, by its real (hashed) id.
    let st = sb.cmd(["status", "--json"]).report().json();
    assert_eq!(st["subagents"].as_array().unwrap().len(), 1, "{st}");
    assert_eq!(st["subagents"][0]["id"], agent.as_str());
    assert_eq!(st["subagents"][0]["parent"], root);
    assert_eq!(st["subagents"][0]["host"], "cursor");

    // The subagent's own MCP call: a fresh conversation id.
    assert_eq!(hook(cursor_real("preToolUse-MCP-in-subagent")).json(), json!({"permission": "ask"}));
    let sub = check(root, 2);
    assert_eq!(sub["caller"]["scope"], child, "the subagent's call resolves to its own conversation");
    assert_eq!(verdict(&sub), (false, "other-conversation".into()), "the root's stub never reaches the subagent");
    hook(cursor_real("postToolUse-MCP-in-subagent"));
    // Status shows the subagent and the fresh conversation seen since it started.
    let st = sb.cmd(["status", "--json"]).report().json();
    assert_eq!(st["subagents"][0]["conversations_since_start"], json!([child]), "{st}");
    assert_eq!(st["concurrent"], true, "the subagent's conversation is not linked: two live conversations");
    let human = sb.cmd(["status"]).report().stdout;
    assert!(human.contains(&format!("subagent      {agent} of {root} (cursor)")), "{human}");
    assert!(
        human.contains(&format!("maybe its own (not linked to the parent: counted as concurrent): {child}")),
        "{human}"
    );
    // Slot-based stubs (no call context) are withheld meanwhile.
    let o = sb.cmd(["scope", "check", "--delivered", root]).run();
    assert_eq!((o.code, o.stdout.trim()), (1, "withhold concurrent"));

    // The root calls while its subagent runs: a fingerprint cannot tell a
    // chat from its subagent, so its own stub is withheld (the safe side).
    hook(root_mcp("22222222-2222-4222-8222-222222222222"));
    let mid = check(root, 3);
    assert_eq!(mid["caller"]["scope"], root);
    assert_eq!(verdict(&mid), (false, "subagent-active".into()));

    hook(cursor_real("subagentStop"));
    hook(cursor_real("stop"));
    let st = sb.cmd(["status", "--json"]).report().json();
    assert_eq!(st["subagents"], json!([]), "closed by its id: {st}");

    // After the subagent: the root gets its own stub, never the subagent's.
    hook(root_mcp("33333333-3333-4333-8333-333333333333"));
    let after = check(child, 4);
    assert_eq!(after["caller"]["scope"], root);
    assert_eq!(verdict(&after), (false, "other-conversation".into()), "the subagent's stub never reaches the root");
    hook(root_mcp("44444444-4444-4444-8444-444444444444"));
    assert_eq!(verdict(&check(root, 5)), (true, "same-conversation".into()));

    // The journal: every event under the right conversation or subagent.
    let j = sb.journal();
    let records = leanctx::state::journal::parse(&j);
    let sightings = Sandbox::sightings(&j);
    let events = |conv: &str| sightings.iter().filter(|s| s.1 == conv).map(|s| s.2).collect::<Vec<_>>();
    assert_eq!(
        events(root),
        [
            "beforeSubmitPrompt",
            "preToolUse",
            "preToolUse",
            "postToolUse",
            "preToolUse",
            "preToolUse",
            "subagentStart",
            "preToolUse",
            "subagentStop",
            "stop",
            "preToolUse",
            "preToolUse"
        ]
    );
    assert_eq!(events(child), ["preToolUse", "postToolUse"]);
    assert_eq!(sightings.len(), 14, "no event was recorded under any other conversation:\n{j}");
    use leanctx::state::journal::Record;
    let starts: Vec<_> = records
        .iter()
        .filter_map(|r| if let Record::SubagentStart { conv, agent, .. } = r { Some((*conv, *agent)) } else { None })
        .collect();
    let stops: Vec<_> = records
        .iter()
        .filter_map(|r| if let Record::SubagentStop { conv, agent, .. } = r { Some((*conv, *agent)) } else { None })
        .collect();
    assert_eq!((starts.len(), stops.len()), (1, 1), "{j}");
    assert_eq!(starts[0], (root, agent.as_str()));
    assert_eq!(stops[0], (root, Some(agent.as_str())), "stopped by its id");
    let calls = Sandbox::calls(&j);
    let call_convs: Vec<&str> = calls.iter().map(|c| c.conv).collect();
    assert_eq!(call_convs, [root, child, root, root, root]);
    assert!(calls.iter().all(|c| c.server.is_none() && c.tool == "dump"), "`MCP:dump` names no server");
    assert!(!j.contains("call-7e307548"), "the raw subagent id is never stored");
}

/// The server's own environment is not the caller: a shared server whose
/// env names a Claude session (or a custom scope) serves other chats too.
/// Per-call evidence wins; the env counts only when proven, and compactions
/// apply to every scope kind.
#[test]
fn the_servers_environment_is_not_the_caller() {
    let sb = Sandbox::new();
    let s = "11111111-1111-4111-8111-111111111111";
    let c1 = "0e1f4ed8-d858-4557-9fc5-6cbf5298eb8b";
    let c2 = "9f26d535-5d39-4248-a9b2-2faaa07cd364";
    let at = (leanctx::base::clock::now_ms() - 60_000).to_string();
    sb.hook("claude", json!({"hook_event_name":"UserPromptSubmit","session_id":s}).to_string()).ok();
    sb.hook("cursor", json!({"hook_event_name":"beforeSubmitPrompt","conversation_id":c1}).to_string()).ok();
    sb.hook(
        "cursor",
        json!({"hook_event_name":"beforeMCPExecution","conversation_id":c1,"tool_name":"ctx_read",
            "tool_input":"{\"path\":\"a.rs\"}","mcp_server_name":"ctx"})
        .to_string(),
    )
    .ok();
    let call = sb.tmp.path().join("call.json");
    std::fs::write(
        &call,
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ctx_read","arguments":{"path":"a.rs"}}})
            .to_string(),
    )
    .unwrap();
    // A shared daemon started from a Claude session: the Cursor call is the
    // Cursor chat's, by its record, not the env's session.
    let o = sb
        .cmd(["scope", "check", "--delivered", s, "--at", &at, "--call", call.to_str().unwrap(), "--json"])
        .env("CLAUDE_CODE_SESSION_ID", s)
        .run();
    let j = o.json();
    assert_eq!((j["caller"]["scope"].as_str(), j["decision"]["allow"].as_bool()), (Some(c1), Some(false)), "{j}");
    // With no record to claim (another request), the env (unproven) does not stand in.
    std::fs::write(
        &call,
        json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ctx_read","arguments":{"path":"a.rs"}}})
            .to_string(),
    )
    .unwrap();
    let o = sb
        .cmd(["scope", "check", "--delivered", s, "--at", &at, "--call", call.to_str().unwrap()])
        .env("CLAUDE_CODE_SESSION_ID", s)
        .run();
    assert_eq!(o.stdout.trim(), "withhold unknown-caller");
    // Two chats share a custom scope: not exact, withheld while both are live.
    sb.hook("cursor", json!({"hook_event_name":"beforeSubmitPrompt","conversation_id":c2}).to_string()).ok();
    let custom = |at: &str| {
        sb.cmd(["scope", "check", "--delivered", "custom:shared", "--at", at]).env("LEAN_CTX_SCOPE", "shared").run()
    };
    assert_eq!(custom(&at).stdout.trim(), "withhold concurrent");
    // Alone, a custom scope is served; a compaction of any chat ends it.
    let sb2 = Sandbox::new();
    sb2.hook("cursor", json!({"hook_event_name":"beforeSubmitPrompt","conversation_id":c1}).to_string()).ok();
    let check = || {
        sb2.cmd(["scope", "check", "--delivered", "custom:shared", "--at", &at])
            .env("LEAN_CTX_SCOPE", "shared")
            .run()
            .stdout
            .trim()
            .to_string()
    };
    assert_eq!(check(), "allow same-conversation");
    sb2.hook("cursor", json!({"hook_event_name":"preCompact","conversation_id":c1}).to_string()).ok();
    assert_eq!(check(), "withhold compacted");
}

/// One MCP request asked about by several CLI processes (a server that
/// runs `scope current`, then `stub`, one process each) is one claim: the
/// claimant is the server (the CLI's parent) and the request id, not the
/// CLI process, so the second process finds the first one's claim.
#[test]
fn one_request_asked_by_two_cli_processes_is_one_claim() {
    let sb = Sandbox::new();
    let hook = json!({"hook_event_name": "beforeMCPExecution", "conversation_id": "C1", "tool_name": "ctx_read",
        "tool_input": json!({"path": "a.rs"}).to_string()});
    sb.hook("cursor", hook.to_string()).ok();
    let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "ctx_read", "arguments": {"path": "a.rs"}}})
    .to_string();
    for round in 0..2 {
        let o = sb.cmd(["scope", "current", "--call", "-"]).stdin(&request).run();
        assert_eq!((o.code, o.stdout.trim()), (0, "C1"), "round {round}: {o:?}");
    }
    // Another request with the same arguments finds the record claimed.
    let other = request.replace("\"id\":7", "\"id\":8");
    let o = sb.cmd(["scope", "current", "--call", "-"]).stdin(&other).run();
    assert_ne!(o.stdout.trim(), "C1", "{o:?}");
}
