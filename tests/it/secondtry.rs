//! A new user's second try (issue 25), through the real binary: every
//! command reports a failed write, `stub` speaks README's words, `--at`
//! in seconds and `--json` errors, hook help, host name completion, and a
//! user's empty `"hooks": {}` surviving install + uninstall.

use crate::support::Sandbox;
use serde_json::json;
use std::fs;

/// Run `args` in the sandbox with stdout to `out`: (exit code, stderr).
#[cfg(unix)]
fn run_to(sb: &Sandbox, args: &[&str], out: std::process::Stdio) -> (i32, String) {
    use std::process::Stdio;
    let mut r = sb.cmd(args);
    r.cmd.stdout(out).stderr(Stdio::piped()).stdin(Stdio::null());
    let o = r.cmd.output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[cfg(unix)] // /dev/full, a pipe closed by its reader
#[test]
fn every_command_reports_a_failed_write_and_never_aborts() {
    let sb = Sandbox::new();
    sb.host_dir("claude-code");
    sb.cmd(["hooks", "install", "claude-code"]).ok();
    let call = sb.tmp.path().join("call.json");
    fs::write(&call, json!({"name": "ctx_read", "arguments": {}}).to_string()).unwrap();
    let call = call.to_str().unwrap();
    let cmds: &[&[&str]] = &[
        &["status"],
        &["status", "--json"],
        &["stats"],
        &["stats", "--json"],
        &["completions", "bash"],
        &["completions", "zsh"],
        &["hooks", "status"],
        &["hooks", "install", "claude-code"],
        &["hooks", "uninstall", "claude-code", "--dry-run"],
        &["gate", "check", "--host", "codex", "--tool", "mcp__a__b"],
        &["scope", "current"],
        &["scope", "check", "--json"],
        &["stub", "--call", call, "--key", "k", "--version", "v"],
        &["--help"],
        &["--version"],
    ];
    for args in cmds {
        let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let (code, stderr) = run_to(&sb, args, full.into());
        assert!(code != 0 && code != 134 && code > 0, "{args:?} > /dev/full: exit {code}; {stderr}");
        assert!(stderr.contains("cannot write output") && !stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // A closed pipe: reported, exit 2, never a crash (134) or a trace.
    let (r, w) = std::io::pipe().unwrap();
    drop(r);
    let (code, stderr) = run_to(&sb, &["completions", "bash"], w.into());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("Broken pipe") && !stderr.contains("panicked"), "{stderr}");
    // The hook still exits 0 with its host gone (fail open), and says why.
    let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut r = sb.hook(
        "claude",
        json!({"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "mcp__a__b",
        "tool_input": {}, "tool_use_id": "t1"})
        .to_string(),
    );
    r.cmd.stdout(full);
    let o = r.run();
    assert_eq!(o.code, 0, "{}", o.stderr);
}

#[test]
fn stub_says_serve_or_send_and_that_the_delivery_was_recorded() {
    let sb = Sandbox::new();
    // Claude Code's turn hook names the transcript, the stub's second witness.
    let t = crate::ledger::claude_turn(&sb, "s1");
    crate::support::host_writes_call(&t, "toolu_1");
    let pre = json!({"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "mcp__ctx__ctx_read",
        "tool_input": {"path": "a.rs"}, "tool_use_id": "toolu_1", "transcript_path": "/t.jsonl", "cwd": "/p"});
    sb.hook("claude-code", pre.to_string()).ok();
    let call = sb.tmp.path().join("call.json");
    fs::write(
        &call,
        json!({"name": "ctx_read", "arguments": {"path": "a.rs"}, "_meta": {"claudecode/toolUseId": "toolu_1"}})
            .to_string(),
    )
    .unwrap();
    let result = sb.tmp.path().join("result.json");
    fs::write(&result, json!({"content": [{"type": "text", "text": "fn main() {}"}]}).to_string()).unwrap();
    let (call, result) = (call.to_str().unwrap(), result.to_str().unwrap());
    let o = sb.cmd(["stub", "--call", call, "--key", "a.rs", "--version", "v1", "--result", result]).run();
    assert_eq!((o.code, o.stdout.as_str()), (1, "send-content not-delivered; delivery recorded\n"), "{o:?}");
    let o = sb.cmd(["stub", "--call", call, "--key", "a.rs", "--version", "v1"]).run();
    assert_eq!(o.code, 1, "{o:?}");
    assert!(o.stdout.starts_with("send-content "), "no --result, nothing recorded, nothing claimed: {o:?}");
    // The host confirms the whole result: the next read is served a stub.
    let batch = json!({"session_id": "s1", "hook_event_name": "PostToolBatch", "tool_calls": [{"tool_name": "mcp__ctx__ctx_read",
        "tool_use_id": "toolu_1", "tool_input": {}, "tool_response": [{"type": "text", "text": "fn main() {}"}]}]});
    sb.hook("claude-code", batch.to_string()).ok();
    let o = sb.cmd(["stub", "--call", call, "--key", "a.rs", "--version", "v1"]).run();
    assert_eq!((o.code, o.stdout.as_str()), (0, "serve-stub confirmed-delivery\n"), "{o:?}");
}

#[test]
fn json_errors_reach_stdout_and_at_in_seconds_is_refused() {
    let sb = Sandbox::new();
    // Seconds read as milliseconds are 1970: "compacted" for ever. Refused.
    for (at, word) in [("1795979857", "seconds"), ("1795979857000000", "microseconds")] {
        let o = sb.cmd(["scope", "check", "--delivered", "s1", "--at", at, "--json"]).run();
        assert_eq!(o.code, 2, "{at}: {o:?}");
        assert!(o.stderr.contains(word), "{o:?}");
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
        assert!(v["error"].as_str().unwrap().contains(word), "{v}");
    }
    let o = sb.cmd(["scope", "check", "--delivered", "s1", "--at", "1795979857000"]).run();
    assert!(matches!(o.code, 0 | 1), "milliseconds are taken: {o:?}");
    let o = sb.cmd(["stub", "--call", "/nonexistent.json", "--key", "k", "--version", "v", "--json"]).run();
    assert_eq!(o.code, 2);
    assert!(serde_json::from_str::<serde_json::Value>(&o.stdout).unwrap()["error"].is_string(), "{o:?}");
    let o = sb.cmd(["stub", "--call", "/nonexistent.json", "--key", "k", "--version", "v"]).run();
    assert_eq!((o.code, o.stdout.as_str()), (2, ""), "without --json, stdout stays empty");
}

#[test]
fn hook_help_prints_help_and_records_nothing() {
    let sb = Sandbox::new();
    for args in [&["hook", "codex", "--help"][..], &["hook", "-h"][..], &["hook", "claude", "--event", "X", "-h"][..]] {
        let o = sb.cmd(args).stdin(json!({"hook_event_name": "SessionStart", "session_id": "s1"}).to_string()).run();
        assert_eq!(o.code, 0, "{args:?}: {o:?}");
        assert!(o.stdout.contains("Usage: leanctx hook"), "{args:?}: {o:?}");
    }
    assert_eq!(sb.journal(), "", "help records no event");
}

#[test]
fn completions_name_the_hosts() {
    let sb = Sandbox::new();
    for shell in ["bash", "fish", "zsh"] {
        let o = sb.cmd(["completions", shell]).ok();
        for h in ["cursor", "claude-code", "codex", "codebuddy"] {
            assert!(o.stdout.contains(h), "{shell}: {h}");
        }
    }
    // Any case and the other spellings still read.
    let v = sb.cmd(["hooks", "status", "CLAUDE", "--json"]).ok().json();
    assert_eq!(v["hosts"][0]["host"], "claude-code");
}

#[test]
fn a_users_empty_hooks_object_survives_install_and_uninstall() {
    let sb = Sandbox::new();
    let dir = sb.host_dir("claude-code");
    for text in ["{\n  \"model\": \"x\",\n  \"hooks\": {}\n}\n", "{\"hooks\": {\"Stop\": [], \"PreToolUse\": []}}"] {
        let file = dir.join("settings.json");
        let _ = fs::remove_file(dir.join("settings.json.leanctx.bak"));
        fs::write(&file, text).unwrap();
        sb.cmd(["hooks", "install", "claude-code"]).ok();
        assert_ne!(fs::read_to_string(&file).unwrap(), text);
        sb.cmd(["hooks", "uninstall", "claude-code"]).ok();
        assert_eq!(fs::read_to_string(&file).unwrap(), text, "byte for byte");
    }
}

/// install.sh puts the binary where `cargo install` would: under
/// `$CARGO_INSTALL_ROOT` when set (issue 25: it went to `~/.cargo` always).
#[cfg(unix)] // installers/install.sh
#[test]
fn install_sh_honours_cargo_install_root() {
    let sb = Sandbox::new();
    sb.host_dir("claude-code");
    let root = sb.tmp.path().join("install-root");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("installers/install.sh");
    let run = |args: &[&str]| {
        let mut c = std::process::Command::new("sh");
        c.arg(&script).args(args).env_clear();
        c.env("PATH", crate::support::path_without_hosts()).env("HOME", &sb.home).env("LEAN_CTX_DATA_DIR", &sb.data);
        c.env("CARGO_INSTALL_ROOT", &root).env("CARGO_HOME", sb.tmp.path().join("cargo-home"));
        c.env("CLAUDE_CONFIG_DIR", sb.home.join(".claude")).current_dir(&sb.project);
        c.output().unwrap()
    };
    let o = run(&["--binary", crate::support::BIN]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(root.join("bin/leanctx").is_file(), "{out}");
    assert!(!sb.tmp.path().join("cargo-home/bin/leanctx").exists());
    let o = run(&["--uninstall"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&format!("the binary {}", root.join("bin/leanctx").display())), "{out}");
}
