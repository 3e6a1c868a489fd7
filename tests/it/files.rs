//! Part of the fault suite: nothing leanctx reads can hang it. For every
//! command and every file it opens — state in the data dir, the user's and
//! the workspace's gate policies, every host config it reads (user and
//! project scope, Codex's `config.toml` and profile files, the MCP server
//! registrations), and argument
//! files (`--call`, `--result`) — the file is planted as a FIFO, a symlink
//! to `/dev/zero`, a symlink to a FIFO, a huge (sparse, 1 GiB) file, and
//! (as root) a file of another user. Every command answers within
//! [`BOUND`]: hooks exit 0, the others with their documented codes, and a
//! file that cannot be read is named, never waited on. A FIFO at
//! `<cwd>/.codex/config.toml` blocked `hook codex` until the host killed
//! it, and `status`/`hooks status` hung on one at any project config path.

use crate::support::{Out, Sandbox};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Every command must answer well inside this.
const BOUND: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Fifo,
    Device,
    LinkToFifo,
    Huge,
    OtherOwner,
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

/// Put a `kind` file at `p` (replacing what is there); `good` is what a
/// well-formed file there would hold (another user's file holds it).
fn plant(p: &Path, kind: Kind, good: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(p);
    match kind {
        Kind::Fifo => mkfifo(p),
        Kind::Device => std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
        Kind::LinkToFifo => {
            let target = p.with_extension("fifo-target");
            let _ = std::fs::remove_file(&target);
            mkfifo(&target);
            std::os::unix::fs::symlink(&target, p).unwrap();
        }
        Kind::Huge => {
            let f = std::fs::File::create(p).unwrap();
            f.set_len(1 << 30).unwrap();
        }
        Kind::OtherOwner => {
            std::fs::write(p, good).unwrap();
            std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
        }
    }
}

/// Every file leanctx opens, relative to the sandbox, with well-formed
/// contents (for the other-owner case).
fn files(sb: &Sandbox) -> Vec<(PathBuf, &'static str)> {
    let (h, p, d) = (&sb.home, &sb.project, &sb.data);
    let hooks_json = r#"{"hooks": {}}"#;
    vec![
        (d.join("journal"), ""),
        (d.join("journal.lock"), ""),
        (d.join("active_transcript.json"), "{}"),
        (d.join("secret"), ""),
        (d.join("stats.log"), ""),
        (d.join("stats.json"), "{}"),
        (d.join("stats.lock"), ""),
        (d.join("gate.json"), r#"{"rules": [{"tool": "danger_zone", "action": "deny"}]}"#),
        (p.join(".lean-ctx/gate.json"), r#"{"rules": []}"#),
        (h.join(".claude/settings.json"), hooks_json),
        (h.join(".codex/config.toml"), "tool_output_token_limit = 100\n"),
        (h.join(".codex/work.config.toml"), "tool_output_token_limit = 100\n"),
        (h.join(".codex/hooks.json"), hooks_json),
        (h.join(".cursor/hooks.json"), r#"{"version": 1, "hooks": {}}"#),
        (h.join(".codebuddy/settings.json"), hooks_json),
        (h.join(".claude/.claude.json"), r#"{"mcpServers": {}}"#),
        (h.join(".cursor/mcp.json"), r#"{"mcpServers": {}}"#),
        (h.join(".codebuddy.json"), r#"{"mcpServers": {}}"#),
        (p.join(".claude/settings.json"), hooks_json),
        (p.join(".claude/settings.local.json"), hooks_json),
        (p.join(".codex/config.toml"), "tool_output_token_limit = 100\n"),
        (p.join(".codex/hooks.json"), hooks_json),
        (p.join(".cursor/hooks.json"), r#"{"version": 1, "hooks": {}}"#),
        (p.join(".codebuddy/settings.json"), hooks_json),
        (p.join(".codebuddy/settings.local.json"), hooks_json),
        (sb.tmp.path().join("transcript.jsonl"), ""),
        (sb.tmp.path().join("call.json"), ""),
        (sb.tmp.path().join("result.json"), ""),
    ]
}

fn call_file(sb: &Sandbox) -> PathBuf {
    sb.tmp.path().join("call.json")
}

fn result_file(sb: &Sandbox) -> PathBuf {
    sb.tmp.path().join("result.json")
}

/// A few chats' worth of state, the argument files, and a config dir for
/// every host (so every config path is one a command looks at).
fn prepare(sb: &Sandbox) {
    for dir in [".claude", ".codex", ".cursor", ".codebuddy"] {
        std::fs::create_dir_all(sb.home.join(dir)).unwrap();
    }
    let cwd = sb.project.to_str().unwrap();
    let transcript = sb.tmp.path().join("transcript.jsonl");
    std::fs::write(&transcript, "").unwrap();
    let turn =
        json!({"session_id": "A", "hook_event_name": "UserPromptSubmit", "cwd": cwd, "transcript_path": transcript});
    sb.hook("claude-code", turn.to_string()).ok();
    let pre = json!({"session_id": "A", "hook_event_name": "PreToolUse", "tool_name": "mcp__ctx__ctx_read",
        "tool_input": {"path": "a.rs"}, "tool_use_id": "toolu_1", "cwd": cwd});
    sb.hook("claude-code", pre.to_string()).ok();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "ctx_read", "arguments": {"path": "a.rs"}, "_meta": {"claudecode/toolUseId": "toolu_1"}}});
    std::fs::write(call_file(sb), call.to_string()).unwrap();
    std::fs::write(result_file(sb), json!({"content": [{"type": "text", "text": "fn a() {}"}]}).to_string()).unwrap();
}

/// Each command that opens files, with what its answer must be.
fn commands(sb: &Sandbox) -> Vec<(&'static str, Vec<String>, Option<String>)> {
    let cwd = sb.project.to_str().unwrap();
    let s = |p: PathBuf| p.to_str().unwrap().to_string();
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // The turn names the transcript the second witness reads.
    let transcript = sb.tmp.path().join("transcript.jsonl");
    let claude_turn = json!({"session_id": "A", "hook_event_name": "UserPromptSubmit", "cwd": cwd,
        "transcript_path": transcript});
    let claude_stop = json!({"session_id": "A", "hook_event_name": "Stop", "cwd": cwd, "transcript_path": transcript});
    let claude_pre = json!({"session_id": "A", "hook_event_name": "PreToolUse", "tool_name": "mcp__gh__danger_zone",
        "tool_input": {}, "tool_use_id": "toolu_2", "cwd": cwd});
    let claude_batch = json!({"session_id": "A", "hook_event_name": "PostToolBatch", "cwd": cwd, "tool_calls": [
        {"tool_name": "mcp__ctx__ctx_read", "tool_use_id": "toolu_1", "tool_input": {},
         "tool_response": [{"type": "text", "text": "fn a() {}"}]}]});
    let codex_pre = json!({"session_id": "C", "hook_event_name": "PreToolUse", "tool_name": "mcp__gh__danger_zone",
        "tool_input": {}, "tool_use_id": "call_1", "cwd": cwd, "turn_id": "t1"});
    let codex_post = json!({"session_id": "C", "hook_event_name": "PostToolUse", "tool_name": "mcp__ctx__ctx_read",
        "tool_input": {"path": "a.rs"}, "tool_use_id": "call_2", "cwd": cwd, "turn_id": "t1",
        "tool_response": {"content": [{"type": "text", "text": "fn a() {}"}], "isError": false}});
    let cursor = json!({"conversation_id": "K", "hook_event_name": "beforeMCPExecution", "tool_name": "danger_zone",
        "mcp_server_name": "gh", "tool_input": "{}", "workspace_roots": [cwd]});
    let codebuddy = json!({"session_id": "B", "hook_event_name": "PreToolUse", "tool_name": "mcp__gh__danger_zone",
        "tool_input": {}, "cwd": cwd});
    let stub = |extra: &[&str]| {
        let mut a = v(&["stub", "--call", &s(call_file(sb)), "--key", "a.rs", "--version", "v1"]);
        a.extend(v(extra));
        a
    };
    vec![
        ("hook claude-code UserPromptSubmit", v(&["hook", "claude-code"]), Some(claude_turn.to_string())),
        ("hook claude-code Stop", v(&["hook", "claude-code"]), Some(claude_stop.to_string())),
        ("hook claude-code PreToolUse", v(&["hook", "claude-code"]), Some(claude_pre.to_string())),
        ("hook claude-code PostToolBatch", v(&["hook", "claude-code"]), Some(claude_batch.to_string())),
        ("hook codex PreToolUse", v(&["hook", "codex"]), Some(codex_pre.to_string())),
        ("hook codex PostToolUse", v(&["hook", "codex"]), Some(codex_post.to_string())),
        ("hook cursor", v(&["hook", "cursor"]), Some(cursor.to_string())),
        ("hook codebuddy", v(&["hook", "codebuddy"]), Some(codebuddy.to_string())),
        ("stub --result", stub(&["--result", &s(result_file(sb))]), None),
        (
            "deliver",
            {
                let mut a = stub(&["--result", &s(result_file(sb))]);
                a[0] = "deliver".into();
                a
            },
            None,
        ),
        ("scope check --call", v(&["scope", "check", "--call", &s(call_file(sb)), "--json"]), None),
        ("scope current", v(&["scope", "current", "--json"]), None),
        ("stats", v(&["stats", "--json"]), None),
        ("status", v(&["status"]), None),
        ("status --json", v(&["status", "--json"]), None),
        ("hooks status", v(&["hooks", "status"]), None),
        ("hooks status --json", v(&["hooks", "status", "--json"]), None),
        ("gate check", v(&["gate", "check", "--host", "codex", "--tool", "mcp__gh__danger_zone", "--json"]), None),
        (
            "hooks install --dry-run",
            v(&["hooks", "install", "claude-code", "codex", "cursor", "codebuddy", "--dry-run"]),
            None,
        ),
        ("hooks install", v(&["hooks", "install", "claude-code", "codex", "cursor", "codebuddy"]), None),
        (
            "hooks install --server",
            v(&["hooks", "install", "claude-code", "codex", "cursor", "codebuddy", "--server"]),
            None,
        ),
        ("hooks uninstall", v(&["hooks", "uninstall", "claude-code", "codex", "cursor", "codebuddy"]), None),
        (
            "hooks install --local",
            v(&["hooks", "install", "claude-code", "codebuddy", "--project", cwd, "--local"]),
            None,
        ),
        ("hooks install --project", v(&["hooks", "install", "codex", "cursor", "--project", cwd]), None),
    ]
}

fn run(sb: &Sandbox, argv: &[String], stdin: &Option<String>) -> Out {
    let mut r = sb.cmd(argv).timeout(BOUND);
    if let Some(s) = stdin {
        r = r.stdin(s);
    }
    r.run()
}

/// Plant `kind` at each file in turn (a fresh sandbox each) and run every
/// command: each answers within the bound with a code it documents.
pub(crate) fn every_command_answers(kind: Kind) {
    let probe = Sandbox::new();
    let n = files(&probe).len();
    for i in 0..n {
        let sb = Sandbox::new();
        prepare(&sb);
        let (path, good) = files(&sb).swap_remove(i);
        plant(&path, kind, good);
        let t0 = Instant::now();
        for (name, argv, stdin) in commands(&sb) {
            let case = format!("{kind:?} at {} / {name}", path.strip_prefix(sb.tmp.path()).unwrap().display());
            let o = run(&sb, &argv, &stdin);
            assert!(o.elapsed < BOUND, "{case}: took {:?}", o.elapsed);
            if argv[0] == "hook" {
                assert_eq!(o.code, 0, "{case}: a hook always exits 0: {}", o.stderr);
                let answer = o.stdout.trim();
                assert!(
                    answer.is_empty() || serde_json::from_str::<serde_json::Value>(answer).is_ok(),
                    "{case}: not an answer: {answer}"
                );
            } else {
                assert!(matches!(o.code, 0..=2), "{case}: exit {} {}", o.code, o.stderr);
            }
            let is_arg = path == call_file(&sb) || path == result_file(&sb);
            if is_arg && kind != Kind::OtherOwner && argv.iter().any(|a| *a == path.to_str().unwrap()) {
                // An argument file that cannot be read is a clear error.
                assert_eq!(o.code, 2, "{case}: {o:?}");
                let want = if kind == Kind::Huge { "larger than" } else { "not a regular file" };
                assert!(o.stderr.contains(want) && o.stderr.contains(path.to_str().unwrap()), "{case}: {}", o.stderr);
            }
        }
        // The planted file is named where people look (not for the args,
        // which status never reads, nor Codex's budget files it never shows).
        let shown = path.extension().is_some_and(|e| e == "json")
            && !path.starts_with(sb.tmp.path().join("call.json"))
            && !path.starts_with(sb.tmp.path().join("result.json"));
        if shown && kind != Kind::OtherOwner && path.parent() != Some(sb.data.as_path()) {
            let o = sb.cmd(["status"]).timeout(BOUND).run();
            let hs = sb.cmd(["hooks", "status"]).timeout(BOUND).run();
            let name = path.file_name().unwrap().to_str().unwrap();
            assert!(
                o.stdout.contains(name) || hs.stdout.contains(name),
                "{kind:?} at {}: neither status names it:\n{}\n{}",
                path.display(),
                o.stdout,
                hs.stdout
            );
        }
        eprintln!("{kind:?} at {}: every command in {:?}", path.display(), t0.elapsed());
    }
}

#[test]
fn a_fifo_anywhere_leanctx_reads_never_blocks_it() {
    every_command_answers(Kind::Fifo);
}

#[test]
fn a_symlink_to_a_device_anywhere_leanctx_reads_is_refused_unopened() {
    every_command_answers(Kind::Device);
}

#[test]
fn a_symlink_to_a_fifo_anywhere_leanctx_reads_never_blocks_it() {
    every_command_answers(Kind::LinkToFifo);
}

#[test]
fn a_huge_file_anywhere_leanctx_reads_is_refused_not_read() {
    every_command_answers(Kind::Huge);
}

// Another user's file at each path: tests/privileged (only root can chown).

/// The reported case, exactly: a FIFO at `<cwd>/.codex/config.toml` and
/// Codex's PostToolUse (which reads it for the output budget). Before: the
/// hook blocked in `open(2)` until killed.
#[test]
fn a_fifo_at_the_projects_codex_config_does_not_block_hook_codex() {
    let sb = Sandbox::new();
    prepare(&sb);
    plant(&sb.project.join(".codex/config.toml"), Kind::Fifo, "");
    let cwd = sb.project.to_str().unwrap();
    let post = json!({"session_id": "C", "hook_event_name": "PostToolUse", "tool_name": "mcp__ctx__ctx_read",
        "tool_input": {"path": "a.rs"}, "tool_use_id": "call_2", "cwd": cwd, "turn_id": "t1",
        "tool_response": {"content": [{"type": "text", "text": "fn a() {}"}], "isError": false}});
    let o = sb.hook("codex", post.to_string()).timeout(BOUND).run();
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.elapsed < Duration::from_secs(2), "{:?}", o.elapsed);
}
