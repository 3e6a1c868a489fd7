//! What the model really got (issue 22): a stub stands in only for what the
//! host gave the model. `structuredContent` (docs/DELIVERY.md §7), every
//! spelling of Codex's output budget, and `stub --result` compared with the
//! confirmed delivery. Each test here failed before its fix.

use crate::support::{Sandbox, payloads};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn write(sb: &Sandbox, name: &str, v: &Value) -> PathBuf {
    let p = sb.tmp.path().join(name);
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `leanctx stub` for a call file, with an optional result file.
fn stub(sb: &Sandbox, call: &Path, key: &str, result: Option<&Path>) -> Value {
    let mut run = sb.cmd(["stub", "--call", s(call), "--key", key, "--version", "v1", "--json"]);
    if let Some(r) = result {
        run = run.arg("--result").arg(r);
    }
    let o = run.run();
    assert!(o.code == 0 || o.code == 1, "{o:?}");
    let j = o.json();
    assert_eq!(j["decision"]["allow"], o.code == 0, "{o:?}");
    j
}

fn reason(j: &Value) -> (&str, &str) {
    (j["decision"]["reason"].as_str().unwrap(), j["delivery"]["confirmation"].as_str().unwrap_or("-"))
}

/// A Codex re-read of `path` by session `sid` (a fresh call id, window `:0`).
fn codex_call(sb: &Sandbox, sid: &str, id: &str, path: &str) -> PathBuf {
    let c = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "ctx_read",
        "arguments": {"path": path}, "_meta": {"sessionId": sid, "threadId": sid, "callId": id, "windowId": format!("{sid}:0")}}});
    write(sb, &format!("{id}.json"), &c)
}

/// The real Codex 0.169.0 run with a result carrying `content` (the file)
/// and `structuredContent`: the model got only `{"path":…,"bytes":3000}`
/// (payloads/codex/structured/model-received.json), but `PostToolUse` shows
/// the content. Replayed hook by hook with the server's questions between:
/// the re-read is withheld (before: `allow confirmed-delivery`, as live).
#[test]
fn codex_structured_content_does_not_confirm_the_file() {
    let sb = Sandbox::new();
    let dir = payloads().join("codex/structured");
    assert_eq!(read_json(&dir.join("model-received.json"))["model_received"]["contains_original"], false);
    let hook = |name: &str| sb.hook("codex", std::fs::read(dir.join(name)).unwrap()).ok();
    for h in ["01-SessionStart.json", "02-UserPromptSubmit.json", "05-PreToolUse.json"] {
        hook(h);
    }
    let post = read_json(&dir.join("06-PostToolUse.json"));
    let server_result = post["tool_response"].clone();
    assert!(server_result["structuredContent"].is_object() && server_result["content"][0]["text"].is_string());
    let res = write(&sb, "result.json", &server_result);
    let call = dir.join("mcp-tools-call-1.json");
    let path = "structured-big-3000-s01";
    let first = stub(&sb, &call, path, Some(&res));
    assert_eq!((reason(&first).0, &first["recorded"]["recorded"]), ("not-delivered", &json!(true)), "{first}");
    hook("06-PostToolUse.json");
    let sid = post["session_id"].as_str().unwrap();
    let again = codex_call(&sb, sid, "call_reread", path);
    let j = stub(&sb, &again, path, Some(&res));
    assert_eq!(reason(&j), ("unconfirmed", "different-content"), "{j}");
    // A server that sends the file's text as the content only is confirmed as before.
    let text_only = write(&sb, "text.json", &json!({"content": server_result["content"]}));
    let c2 = codex_call(&sb, sid, "call_text", path);
    stub(&sb, &c2, path, Some(&text_only));
    let mut p2 = post.clone();
    p2["tool_use_id"] = json!("call_text");
    p2["tool_response"] = json!({"content": server_result["content"], "isError": false});
    sb.hook("codex", p2.to_string()).ok();
    let c3 = codex_call(&sb, sid, "call_3", path);
    assert_eq!(reason(&stub(&sb, &c3, path, Some(&text_only))), ("confirmed-delivery", "whole"));
}

/// Claude Code shows the model's string in `PostToolBatch`; a result whose
/// content is that same JSON (MCP's advice: send structured content as text
/// too) reached the model, whatever the spacing and key order, on both hosts.
#[test]
fn structured_content_sent_as_its_own_text_is_confirmed() {
    let sb = Sandbox::new();
    let sc = json!({"path": "a.rs", "bytes": 3000});
    let result = json!({"content": [{"type": "text", "text": "{\"path\": \"a.rs\", \"bytes\": 3000}"}],
        "structuredContent": sc});
    let res = write(&sb, "r.json", &result);
    // Claude: the real capture's shape (payloads/claude/structured/09-PostToolBatch.json).
    let pre = |id: &str| {
        json!({"session_id": "C", "hook_event_name": "PreToolUse", "tool_name": "mcp__ctx__ctx_read",
            "tool_input": {"path": "a.rs"}, "tool_use_id": id, "cwd": "/p"})
    };
    let ccall = |id: &str| {
        write(
            &sb,
            &format!("{id}.json"),
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ctx_read",
                "arguments": {"path": "a.rs"}, "_meta": {"claudecode/toolUseId": id}}}),
        )
    };
    let t = crate::ledger::claude_turn(&sb, "C");
    crate::support::host_writes_call(&t, "toolu_1");
    crate::support::host_writes_call(&t, "toolu_2");
    sb.hook("claude-code", pre("toolu_1").to_string()).ok();
    stub(&sb, &ccall("toolu_1"), "a.rs", Some(&res));
    let batch = json!({"session_id": "C", "hook_event_name": "PostToolBatch", "tool_calls": [{"tool_name":
        "mcp__ctx__ctx_read", "tool_use_id": "toolu_1", "tool_input": {"path": "a.rs"},
        "tool_response": "{\"path\":\"a.rs\",\"bytes\":3000}"}]});
    sb.hook("claude-code", batch.to_string()).ok();
    sb.hook("claude-code", pre("toolu_2").to_string()).ok();
    assert_eq!(reason(&stub(&sb, &ccall("toolu_2"), "a.rs", Some(&res))), ("confirmed-delivery", "whole"));
    // Codex: PostToolUse shows both parts.
    sb.hook("codex", json!({"session_id": "X", "hook_event_name": "SessionStart", "source": "startup"}).to_string())
        .ok();
    stub(&sb, &codex_call(&sb, "X", "call_1", "a.rs"), "a.rs", Some(&res));
    let post = json!({"session_id": "X", "hook_event_name": "PostToolUse", "tool_name": "mcp__ctx__ctx_read",
        "tool_use_id": "call_1", "tool_input": {"path": "a.rs"},
        "tool_response": {"content": result["content"], "isError": false, "structuredContent": sc}});
    sb.hook("codex", post.to_string()).ok();
    assert_eq!(
        reason(&stub(&sb, &codex_call(&sb, "X", "call_2", "a.rs"), "a.rs", Some(&res))),
        ("confirmed-delivery", "whole")
    );
}

/// `stub --result R`: one key and version served as an outline and as the
/// full text. The confirmed outline backs no stub for the text, and the
/// other way round; without `--result` the newest confirmed delivery answers.
#[test]
fn a_different_result_under_one_key_and_version_withholds() {
    let sb = Sandbox::new();
    sb.hook("codex", json!({"session_id": "S", "hook_event_name": "SessionStart", "source": "startup"}).to_string())
        .ok();
    let body = |t: &str| json!({"content": [{"type": "text", "text": t}]});
    let outline = write(&sb, "outline.json", &body("fn main()\nfn helper()"));
    let full = write(&sb, "full.json", &body("fn main() { helper() }\nfn helper() {}\n"));
    let confirm = |id: &str, r: &Path| {
        let post = json!({"session_id": "S", "hook_event_name": "PostToolUse", "tool_name": "mcp__ctx__ctx_read",
            "tool_use_id": id, "tool_input": {"path": "m.rs"}, "tool_response": read_json(r)});
        sb.hook("codex", post.to_string()).ok();
    };
    stub(&sb, &codex_call(&sb, "S", "c1", "m.rs"), "m.rs", Some(&outline));
    confirm("c1", &outline);
    assert_eq!(reason(&stub(&sb, &codex_call(&sb, "S", "c2", "m.rs"), "m.rs", Some(&outline))).0, "confirmed-delivery");
    let j = stub(&sb, &codex_call(&sb, "S", "c3", "m.rs"), "m.rs", Some(&full));
    assert_eq!(reason(&j), ("result-changed", "whole"), "{j}");
    assert_eq!(j["recorded"]["recorded"], true, "the full text goes out and is recorded: {j}");
    confirm("c3", &full);
    assert_eq!(reason(&stub(&sb, &codex_call(&sb, "S", "c4", "m.rs"), "m.rs", Some(&full))).0, "confirmed-delivery");
    assert_eq!(reason(&stub(&sb, &codex_call(&sb, "S", "c5", "m.rs"), "m.rs", Some(&outline))).0, "result-changed");
    // The outline went out again (c5, recorded): the newest delivery, not yet confirmed.
    assert_eq!(reason(&stub(&sb, &codex_call(&sb, "S", "c6", "m.rs"), "m.rs", None)).0, "unconfirmed");
    confirm("c5", &outline);

    // The library: the same question with the content given.
    let dir = sb.data.clone();
    let rp = leanctx::ReadPath::new(&dir, leanctx::identity::caller::ScopeEnv::default());
    let call =
        leanctx::identity::mcp_call::McpCall::from_json(&read_json(&codex_call(&sb, "S", "c7", "m.rs"))).unwrap();
    let sent = |r: &Path| leanctx::ledger::sent_content(&read_json(r)).unwrap();
    let out = rp.stub(&call, "m.rs", "v1", Some(&sent(&full))).unwrap();
    assert_eq!((out.decision.allow, out.decision.reason.as_str()), (false, "result-changed"));
    let out = rp.stub(&call, "m.rs", "v1", Some(&sent(&outline))).unwrap();
    assert_eq!((out.decision.allow, out.decision.reason.as_str()), (false, "unconfirmed"), "the full text went out");
}

/// `leanctx hook codex` run as a child of a process whose command line is
/// `<BIN> <codex_argv…>` (through `bash -c`, which stays the parent), the
/// way Codex runs its hooks: the hook reads its parent's argv.
#[cfg(target_os = "linux")]
fn codex_hook_under(sb: &Sandbox, codex_argv: &[&str], payload: &Value, cwd: &Path) {
    let base = sb.hook("codex", payload.to_string()).current_dir(cwd);
    let mut c = std::process::Command::new("bash");
    // No '=' in the script: it must not read as a `-c KEY=VALUE` itself.
    c.args(["-c", "\"$0\" hook codex; exit 0", base.cmd.get_program().to_str().unwrap()]).args(codex_argv);
    c.env_clear();
    for (k, v) in base.cmd.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.current_dir(cwd);
    let mut run: crate::support::Run = base;
    run.cmd = c;
    run.ok();
}

/// Codex's budget in every spelling the issue names (and the others Codex
/// reads): a 10,240-byte result under 1,000 tokens reached the model cut
/// (docs/DELIVERY.md §1: 4,784 characters), so the re-read withholds.
/// Before the fix each of these was missed and the re-read allowed.
#[cfg(target_os = "linux")]
#[test]
fn every_codex_budget_spelling_cuts() {
    #[derive(Clone, Copy)]
    enum Place {
        Argv(&'static [&'static str]),
        /// `.codex/config.toml` at the repository root, Codex run in `repo/src`.
        RepoRoot(&'static str),
        /// `<CODEX_HOME>/<name>.config.toml` named with `-p`, among more files than are scanned.
        ProfileFile,
        None,
    }
    // (what, where, result size, reaches the model whole)
    let cases: &[(&str, Place, usize, bool)] = &[
        ("no budget set: 10 KB fits the default", Place::None, 10_240, true),
        (
            "-c profiles.p.tool_output_token_limit --profile p",
            Place::Argv(&["exec", "-c", "profiles.p.tool_output_token_limit=1000", "--profile", "p", "hi"]),
            10_240,
            false,
        ),
        ("--config=", Place::Argv(&["exec", "--config=tool_output_token_limit=1000", "hi"]), 10_240, false),
        ("-c hex", Place::Argv(&["exec", "-c", "tool_output_token_limit=0x3e8", "hi"]), 10_240, false),
        ("-c octal", Place::Argv(&["exec", "-c", "tool_output_token_limit=0o1750", "hi"]), 10_240, false),
        ("-c binary", Place::Argv(&["exec", "-c", "tool_output_token_limit=0b1111101000", "hi"]), 10_240, false),
        ("-c=", Place::Argv(&["-c=tool_output_token_limit=1000", "exec", "hi"]), 10_240, false),
        (
            "repo root .codex/config.toml, run in a subdirectory",
            Place::RepoRoot("tool_output_token_limit = 0x3e8\n"),
            10_240,
            false,
        ),
        ("-p names a profile file", Place::ProfileFile, 10_240, false),
        // Codex reads no $CODEX_HOME/config.toml then (`codex exec --help`): the default
        // budget cuts 20 KB, whatever the user's file says.
        (
            "--ignore-user-config with a big user budget",
            Place::Argv(&["exec", "--ignore-user-config", "hi"]),
            20_000,
            false,
        ),
        ("the same big user budget read", Place::Argv(&["exec", "hi"]), 20_000, true),
    ];
    for (i, &(what, place, size, whole)) in cases.iter().enumerate() {
        let result = json!({"content": [{"type": "text", "text": "x".repeat(size)}]});
        let sb = Sandbox::new();
        let codex_home = sb.home.join(".codex");
        std::fs::create_dir_all(&codex_home).unwrap();
        let repo = sb.project.join("repo");
        let cwd = repo.join("src");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        let mut argv: Vec<&str> = vec!["exec", "hi"];
        match place {
            Place::Argv(a) => argv = a.to_vec(),
            Place::RepoRoot(toml) => {
                std::fs::create_dir_all(repo.join(".codex")).unwrap();
                std::fs::write(repo.join(".codex/config.toml"), toml).unwrap();
            }
            Place::ProfileFile => {
                // More profile files than are scanned, the small one last by name.
                for n in 0..200 {
                    std::fs::write(codex_home.join(format!("a{n:03}.config.toml")), "model = \"m\"\n").unwrap();
                }
                std::fs::write(codex_home.join("zz-small.config.toml"), "tool_output_token_limit = 1000\n").unwrap();
                argv = vec!["exec", "-p", "zz-small", "hi"];
            }
            Place::None => {}
        }
        if what.contains("big user budget") {
            std::fs::write(codex_home.join("config.toml"), "tool_output_token_limit = 50000\n").unwrap();
        }
        let sid = format!("0199aaaa-0000-7000-8000-00000000000{i}");
        let start = json!({"session_id": sid, "hook_event_name": "SessionStart", "source": "startup", "cwd": s(&cwd)});
        codex_hook_under(&sb, &argv, &start, &cwd);
        let res = write(&sb, "r.json", &result);
        let first = stub(&sb, &codex_call(&sb, &sid, "call_1", "big.rs"), "big.rs", Some(&res));
        assert_eq!(first["recorded"]["recorded"], true, "{what}: {first}");
        let post = json!({"session_id": sid, "hook_event_name": "PostToolUse", "tool_name": "mcp__ctx__ctx_read",
            "tool_use_id": "call_1", "tool_input": {"path": "big.rs"}, "cwd": s(&cwd),
            "tool_response": {"content": result["content"], "isError": false}});
        codex_hook_under(&sb, &argv, &post, &cwd);
        let j = stub(&sb, &codex_call(&sb, &sid, "call_2", "big.rs"), "big.rs", Some(&res));
        let want = if whole { ("confirmed-delivery", "whole") } else { ("unconfirmed", "cut") };
        assert_eq!(reason(&j), want, "{what}: {j}");
    }
}

/// Two Cursor chats behind one shared server, whose requests carry the same
/// JSON-RPC id, progress token and arguments (each chat numbers its own):
/// chat B's request must not be resolved as chat A's, whose claim the same
/// token holds, nor get A's stub. Before the fix B was answered `allow
/// confirmed-delivery` with A's delivery.
#[test]
fn two_cursor_chats_cannot_share_a_claim() {
    let sb = Sandbox::new();
    let path = "/p/a.rs";
    let text = "fn main() {}\n".repeat(20);
    let result = json!({"content": [{"type": "text", "text": text}]});
    let input = json!({"path": path}).to_string();
    let cursor = |conv: &str, event: &str, extra: Value| {
        let mut p = json!({"hook_event_name": event, "conversation_id": conv, "session_id": conv,
            "cursor_version": "3.18.25", "workspace_roots": ["/p"], "tool_name": "ctx_read",
            "tool_input": input, "command": "lean-ctx"});
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        sb.hook("cursor", p.to_string()).ok();
    };
    let request = |id: u64, progress: u64| {
        let r = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "ctx_read",
            "arguments": {"path": path}, "_meta": {"progressToken": progress}}});
        write(&sb, &format!("rpc-{id}-{progress}.json"), &r)
    };
    let res = write(&sb, "r.json", &result);
    // Chat A: read, acknowledged whole, re-read stubbed.
    cursor("A", "beforeMCPExecution", json!({}));
    let a1 = stub(&sb, &request(5, 1), path, Some(&res));
    assert_eq!((a1["caller"]["scope"].as_str(), reason(&a1).0), (Some("A"), "not-delivered"), "{a1}");
    cursor("A", "afterMCPExecution", json!({"result_json": result.to_string()}));
    cursor("A", "beforeMCPExecution", json!({}));
    let a2 = stub(&sb, &request(6, 2), path, Some(&res));
    assert_eq!((a2["caller"]["scope"].as_str(), reason(&a2).0), (Some("A"), "confirmed-delivery"), "{a2}");
    // Chat B, in another window on the same server: its first read is the
    // same request as A's first (id 5, progress token 1, same arguments).
    cursor("B", "beforeMCPExecution", json!({}));
    let b1 = stub(&sb, &request(5, 1), path, Some(&res));
    assert_eq!(b1["decision"]["allow"], false, "B never had a.rs: {b1}");
    assert_ne!(b1["caller"]["scope"].as_str(), Some("A"), "{b1}");
    // (One request asked again, with no other chat's record of it, keeps its
    // claim: tests/it/readpath.rs, one request asked by two CLI processes.)
}

/// The one case the rule above cannot see: chat B's hook did not record its
/// call, and B sends A's very request inside the claim window. A server that
/// knows its clients makes the request id unique across them (README, "Who
/// is calling"): then B is nobody, and withheld.
#[test]
fn a_client_qualified_request_id_is_never_anothers_claim() {
    let sb = Sandbox::new();
    let path = "/p/b.rs";
    let result = json!({"content": [{"type": "text", "text": "fn b() {}\n"}]});
    let input = json!({"path": path}).to_string();
    let before = |conv: &str| {
        let p = json!({"hook_event_name": "beforeMCPExecution", "conversation_id": conv, "session_id": conv,
            "cursor_version": "3.18.25", "workspace_roots": ["/p"], "tool_name": "ctx_read",
            "tool_input": input, "command": "lean-ctx"});
        sb.hook("cursor", p.to_string()).ok();
    };
    let request = |id: &str| {
        let r = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "ctx_read",
            "arguments": {"path": path}, "_meta": {"progressToken": 1}}});
        write(&sb, &format!("rpc-{}.json", id.replace('/', "-")), &r)
    };
    let res = write(&sb, "r.json", &result);
    before("A");
    let a = stub(&sb, &request("client-a/5"), path, Some(&res));
    assert_eq!(a["caller"]["scope"].as_str(), Some("A"), "{a}");
    // A's request asked again: still A.
    assert_eq!(stub(&sb, &request("client-a/5"), path, None)["caller"]["scope"].as_str(), Some("A"));
    // B's hook never ran; B's request differs only in its client.
    let b = stub(&sb, &request("client-b/5"), path, Some(&res));
    assert_eq!((b["decision"]["allow"].as_bool(), b["caller"]["scope"].as_str()), (Some(false), None), "{b}");
    assert_eq!(b["recorded"]["recorded"], false, "{b}");
}
