//! `leanctx gate check` and the hook agree, always: one matrix of policy
//! setups (trusted and untrusted data dirs and files, a relative data dir,
//! a byte-order mark, a workspace policy above the cwd, a tool name naming
//! another server than the host's field) run through both, for every host.
//! Each setup also says what the gate must decide.

use crate::support::{Sandbox, payload};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const DENY: &str = r#"{"rules":[{"server":"ctx","tool":"ctx_read","action":"deny","message":"no reads"}]}"#;

/// What the host is told: `deny`, `ask`, `allow`, or `none` (no opinion:
/// nothing printed, or Cursor's bare ask that defers to its own approval).
fn told(host: &str, stdout: &str) -> String {
    if stdout.trim().is_empty() {
        return "none".into();
    }
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{host}: {e}: {stdout:?}"));
    if host == "cursor" {
        if v == json!({"permission": "ask"}) {
            return "none".into();
        }
        return v["permission"].as_str().unwrap_or("?").into();
    }
    v["hookSpecificOutput"]["permissionDecision"].as_str().unwrap_or("?").into()
}

/// One gated MCP call: `tool` as the host names it, `server` the host's own
/// field (Cursor `mcp_server_name`), in workspace `cwd`.
fn call(host: &str, tool: &str, server: Option<&str>, cwd: &Path) -> String {
    let mut v: Value = match host {
        "claude" => serde_json::from_str(&payload("claude/baseline/07-PreToolUse.json")).unwrap(),
        "codex" => serde_json::from_str(&payload("codex/baseline/05-PreToolUse.json")).unwrap(),
        "codebuddy" => serde_json::from_str(&payload("codebuddy/composed/03-PreToolUse-mcp.json")).unwrap(),
        _ => serde_json::from_str(&payload("cursor/composed/03-beforeMCPExecution-string-input.json")).unwrap(),
    };
    let m = v.as_object_mut().unwrap();
    for k in ["mcp_server", "mcp_server_name", "command", "url", "cwd", "workspace_roots"] {
        m.remove(k);
    }
    if host == "cursor" {
        v["workspace_roots"] = json!([cwd]);
        if let Some(s) = server {
            v["mcp_server_name"] = json!(s);
        }
    } else {
        v["cwd"] = json!(cwd);
        if let Some(s) = server {
            v["mcp_server"] = json!({"name": s, "source": "dynamic"});
        }
    }
    v["tool_name"] = json!(tool);
    v.to_string()
}

struct Case {
    name: &'static str,
    /// Prepares the sandbox; returns the workspace dir and the
    /// LEAN_CTX_DATA_DIR to run with.
    setup: fn(&Sandbox) -> (PathBuf, PathBuf),
    /// The tool as Cursor names it, and as the others do.
    tools: (&'static str, &'static str),
    server: Option<&'static str>,
    /// What the gate decides (Codex is told `deny` for `ask`).
    want: &'static str,
}

fn write(p: &Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn data_dir(sb: &Sandbox, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(&sb.data).unwrap();
    std::fs::set_permissions(&sb.data, std::fs::Permissions::from_mode(mode)).unwrap();
}

const CASES: &[Case] = &[
    Case {
        name: "trusted user policy",
        setup: |sb| {
            data_dir(sb, 0o700);
            write(&sb.data.join("gate.json"), DENY, 0o600);
            (sb.project.clone(), sb.data.clone())
        },
        tools: ("ctx_read", "mcp__ctx__ctx_read"),
        server: Some("ctx"),
        want: "deny",
    },
    Case {
        // umask 002: the hook refuses to record there, and once dropped the
        // user's deny while `gate check` still said deny.
        name: "group-writable data dir",
        setup: |sb| {
            data_dir(sb, 0o700);
            write(&sb.data.join("gate.json"), DENY, 0o600);
            data_dir(sb, 0o775);
            (sb.project.clone(), sb.data.clone())
        },
        tools: ("ctx_read", "mcp__ctx__ctx_read"),
        server: Some("ctx"),
        want: "ask",
    },
    Case {
        name: "open data dir without a policy",
        setup: |sb| {
            data_dir(sb, 0o777);
            (sb.project.clone(), sb.data.clone())
        },
        tools: ("ctx_read", "mcp__ctx__ctx_read"),
        server: Some("ctx"),
        want: "none",
    },
    Case {
        name: "group-writable policy file",
        setup: |sb| {
            data_dir(sb, 0o700);
            write(&sb.data.join("gate.json"), r#"{"rules":[{"action":"allow"}]}"#, 0o664);
            (sb.project.clone(), sb.data.clone())
        },
        tools: ("ctx_read", "mcp__ctx__ctx_read"),
        server: Some("ctx"),
        want: "ask",
    },
    Case {
        // Each process would resolve it against its own cwd.
        name: "relative LEAN_CTX_DATA_DIR",
        setup: |sb| {
            write(&sb.project.join("rel-data/gate.json"), DENY, 0o600);
            (sb.project.clone(), PathBuf::from("rel-data"))
        },
        tools: ("ctx_read", "mcp__ctx__ctx_read"),
        server: Some("ctx"),
        want: "ask",
    },
    Case {
        name: "policy with a byte-order mark",
        setup: |sb| {
            data_dir(sb, 0o700);
            write(&sb.data.join("gate.json"), &format!("\u{feff}{DENY}"), 0o600);
            (sb.project.clone(), sb.data.clone())
        },
        tools: ("ctx_read", "mcp__ctx__ctx_read"),
        server: Some("ctx"),
        want: "deny",
    },
    Case {
        name: "workspace policy at the repository root, cwd below it",
        setup: |sb| {
            let repo = sb.project.join("repo");
            std::fs::create_dir_all(repo.join(".git")).unwrap();
            std::fs::create_dir_all(repo.join("packages/app")).unwrap();
            write(&repo.join(".lean-ctx/gate.json"), DENY, 0o644);
            (repo.join("packages/app"), sb.data.clone())
        },
        tools: ("ctx_read", "mcp__ctx__ctx_read"),
        server: Some("ctx"),
        want: "deny",
    },
    Case {
        name: "no project root: a policy above the cwd does not apply",
        setup: |sb| {
            std::fs::create_dir_all(sb.project.join("sub")).unwrap();
            write(&sb.project.join(".lean-ctx/gate.json"), DENY, 0o644);
            (sb.project.join("sub"), sb.data.clone())
        },
        tools: ("ctx_read", "mcp__ctx__ctx_read"),
        server: Some("ctx"),
        want: "none",
    },
    Case {
        // The host says ctx; the name says ok: ctx's deny applies.
        name: "a tool name naming another server",
        setup: |sb| {
            data_dir(sb, 0o700);
            write(&sb.data.join("gate.json"), DENY, 0o600);
            (sb.project.clone(), sb.data.clone())
        },
        tools: ("mcp__ok__ctx_read", "mcp__ok__ctx_read"),
        server: Some("ctx"),
        want: "deny",
    },
    Case {
        // ... and the name's server's deny applies too; its allow does not.
        name: "the name's server may only tighten",
        setup: |sb| {
            data_dir(sb, 0o700);
            write(
                &sb.data.join("gate.json"),
                r#"{"rules":[{"server":"ok","tool":"ctx_read","action":"allow"},
                    {"server":"ok","action":"deny","message":"not ok"}]}"#,
                0o600,
            );
            (sb.project.clone(), sb.data.clone())
        },
        tools: ("MCP:ok:ctx_read", "mcp__ok__ctx_read"),
        server: Some("ctx"),
        want: "deny",
    },
];

#[test]
fn gate_check_and_the_hook_agree_on_every_setup_and_host() {
    for case in CASES {
        let sb = Sandbox::new();
        let (cwd, data) = (case.setup)(&sb);
        for host in ["claude", "codex", "codebuddy", "cursor"] {
            let tool = if host == "cursor" { case.tools.0 } else { case.tools.1 };
            let hook = sb.hook(host, call(host, tool, case.server, &cwd)).env("LEAN_CTX_DATA_DIR", &data).ok();
            let mut check = sb.cmd(["gate", "check", "--host", host, "--tool", tool, "--json"]);
            check = check.arg("--cwd").arg(&cwd).env("LEAN_CTX_DATA_DIR", &data);
            if let Some(s) = case.server {
                check = check.arg("--server").arg(s);
            }
            let report = check.ok().json();
            let said = report["answer"].as_str().unwrap_or("");
            assert_eq!(hook.stdout.trim(), said.trim(), "{}: {host}: hook vs gate check\n{report:#}", case.name);
            let want = if host == "codex" && case.want == "ask" { "deny" } else { case.want };
            let want = if host == "codex" && want == "allow" { "none" } else { want };
            assert_eq!(told(host, &hook.stdout), want, "{}: {host}: {}\n{}", case.name, hook.stdout, hook.stderr);
            if case.want == "ask" {
                assert!(hook.stderr.contains("cannot be used"), "{}: {host}: {}", case.name, hook.stderr);
            }
        }
    }
}

/// A relative `LEAN_CTX_DATA_DIR` is refused everywhere, with the reason:
/// hooks answer and do not record, `status` names it and exits 1, the read
/// path withholds (state-unavailable), and nothing is created relative to
/// any cwd.
#[test]
fn a_relative_data_dir_is_refused_by_every_command() {
    let sb = Sandbox::new();
    let rel = "rel-data";
    let o = sb.hook("claude", payload("claude/baseline/01-SessionStart.json")).env("LEAN_CTX_DATA_DIR", rel).ok();
    assert!(o.stderr.contains("relative path"), "{}", o.stderr);
    assert!(!sb.project.join(rel).exists(), "created relative to the hook's cwd");
    let st = sb.cmd(["status", "--json"]).env("LEAN_CTX_DATA_DIR", rel).report();
    assert_eq!(st.code, 1);
    assert!(st.json()["problems"].to_string().contains("relative path"), "{}", st.stdout);
    let sc = sb.cmd(["scope", "check", "--delivered", "x", "--json"]).env("LEAN_CTX_DATA_DIR", rel).run();
    assert_eq!(sc.code, 1, "{}", sc.stdout);
    assert_eq!(sc.json()["decision"]["reason"], "state-unavailable", "{}", sc.stdout);
}

/// Paths that are not UTF-8: every `--json` report is JSON (the path shown
/// lossily), the exit code is the command's own, and the files are found by
/// their exact bytes. `gate check` in such a workspace finds its deny
/// (it once said "no opinion"); `status --json` and `hooks install --json`
/// once printed `{"error": …}` and exited 0.
#[test]
fn paths_that_are_not_utf8_work_in_every_json_report() {
    use std::os::unix::ffi::OsStrExt;
    let sb = Sandbox::new();
    let odd = |base: &Path, name: &[u8]| base.join(std::ffi::OsStr::from_bytes(name));
    let ws = odd(sb.tmp.path(), b"work-\xff-space");
    write(&ws.join(".lean-ctx/gate.json"), DENY, 0o644);
    let check = sb.cmd(["gate", "check", "--host", "claude", "--tool", "mcp__ctx__ctx_read", "--json", "--cwd"]);
    let v = check.arg(&ws).ok().json();
    assert_eq!(v["verdict"]["action"], "deny", "{v:#}");
    assert!(v["files"].to_string().contains("work-\u{fffd}-space"), "{v:#}");
    // The hook, in the same workspace (a payload's cwd is JSON, so UTF-8:
    // the lossy name is another dir, and says nothing about this one).
    let data = odd(sb.tmp.path(), b"data-\xfe");
    let st = sb.cmd(["status", "--json"]).env("LEAN_CTX_DATA_DIR", &data).report();
    let sv = st.json();
    assert!(sv["data_dir"].as_str().unwrap().contains("data-\u{fffd}"), "{}", st.stdout);
    sb.hook("claude", payload("claude/baseline/01-SessionStart.json")).env("LEAN_CTX_DATA_DIR", &data).ok();
    assert!(data.join("journal").is_file(), "the hook records in the exact dir");
    let st = sb.cmd(["status", "--json"]).env("LEAN_CTX_DATA_DIR", &data).report();
    assert!(st.json()["data_dir_created"].as_bool().unwrap(), "{}", st.stdout);
    let proj = odd(sb.tmp.path(), b"proj-\xfd");
    std::fs::create_dir_all(&proj).unwrap();
    let o = sb.cmd(["hooks", "install", "claude-code", "--json", "--project"]).arg(&proj).run();
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let iv: Value = serde_json::from_str(&o.stdout).unwrap();
    assert!(iv.to_string().contains("proj-\u{fffd}"), "{iv:#}");
    assert!(proj.join(".claude/settings.json").is_file());
    let o = sb.cmd(["hooks", "status", "claude-code", "--json", "--project"]).arg(&proj).ok();
    assert!(serde_json::from_str::<Value>(&o.stdout).is_ok(), "{}", o.stdout);
}
