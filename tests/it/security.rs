//! Security: modes of what we write, nothing secret on disk, ids that
//! cannot reach a path, and a gate that name tricks cannot get past.

use crate::support::{Sandbox, payload, payloads};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    for e in rd.flatten() {
        let p = e.path();
        let md = std::fs::symlink_metadata(&p).unwrap();
        if md.is_dir() {
            out.push(p.clone());
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn user_policy(sb: &Sandbox, rules: Value) {
    std::fs::create_dir_all(&sb.data).unwrap();
    std::fs::set_permissions(&sb.data, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(sb.data.join("gate.json"), json!({ "rules": rules }).to_string()).unwrap();
}

/// A gated MCP call on `host` with the tool `tool` of server `server`, in
/// each host's own spelling.
fn gated_call(host: &str, server: &str, tool: &str) -> String {
    match host {
        "cursor" => json!({"hook_event_name":"beforeMCPExecution","conversation_id":"c1",
            "tool_name": format!("MCP:{server}:{tool}"),"tool_input":"{}"}),
        _ => json!({"hook_event_name":"PreToolUse","session_id":"s1",
            "tool_name": format!("mcp__{server}__{tool}"),"tool_input":{},"tool_use_id":"toolu_x"}),
    }
    .to_string()
}

/// The decision a host was told: `deny`, `ask`, `allow`, or `none`.
fn told(host: &str, stdout: &str) -> String {
    if stdout.trim().is_empty() {
        return "none".into();
    }
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{host}: {e}: {stdout:?}"));
    let d = if host == "cursor" { &v["permission"] } else { &v["hookSpecificOutput"]["permissionDecision"] };
    d.as_str().unwrap_or("none").to_string()
}

/// Unicode look-alikes, zero-width characters, case and `mcp__a__b__c`
/// readings cannot get a denied tool past the gate, on any host.
#[test]
fn look_alike_names_do_not_bypass_a_deny() {
    let sb = Sandbox::new();
    user_policy(
        &sb,
        json!([
            {"tool": "ctx_*", "action": "allow"},
            {"server": "gh", "tool": "delete_*", "action": "deny", "message": "no deletes"},
            {"tool": "*", "action": "allow"}
        ]),
    );
    let tricks: &[(&str, &str)] = &[
        ("gh", "delete_repo"),
        ("gh", "Delete_Repo"),
        ("gh", "d\u{435}lete_repo"),                                     // Cyrillic е
        ("gh", "D\u{415}LETE_REPO"),                                     // Cyrillic Е
        ("gh", "del\u{200b}ete_repo"),                                   // zero-width space
        ("gh", "dele\u{301}te_repo"),                                    // combining acute
        ("gh", "\u{ff44}\u{ff45}\u{ff4c}\u{ff45}\u{ff54}\u{ff45}_repo"), // full width
        ("g\u{570}", "delete_repo"),                                     // Armenian հ in the server
        ("gh", "delete\u{2060}_repo"),                                   // word joiner
    ];
    for host in ["claude", "codex", "codebuddy", "cursor"] {
        for (server, tool) in tricks {
            let o = sb.hook(host, gated_call(host, server, tool)).ok();
            assert_eq!(told(host, &o.stdout), "deny", "{host} {server:?} {tool:?}: {}", o.stdout);
        }
        // The same trick on an allowed name is not looser than it: the
        // explicit ctx_* allow does not apply, the catch-all does.
        let o = sb.hook(host, gated_call(host, "ctx", "ctx_r\u{435}ad")).ok();
        let want = if host == "codex" { "none" } else { "allow" };
        assert_eq!(told(host, &o.stdout), want, "{host}");
    }
    // `mcp__a__b__c`: the strictest reading applies.
    user_policy(&sb, json!([{"server": "a__b", "tool": "c", "action": "deny"}, {"action": "allow"}]));
    for host in ["claude", "codex", "codebuddy"] {
        let o = sb.hook(host, gated_call(host, "a", "b__c")).ok();
        assert_eq!(told(host, &o.stdout), "deny", "{host}");
    }
    // The journal keeps such names escaped, one record a line.
    let j = sb.journal();
    assert!(j.lines().all(|l| leanctx::journal::parse_line(l).is_some() || l.starts_with('#')), "{j}");
    assert!(j.contains("d%D0%B5lete_repo"), "escaped look-alike in the journal");
}

/// A look-alike of an allowed name with no catch-all gets the strictest
/// of what it could stand for, never the allow.
#[test]
fn look_alike_of_an_allowed_name_is_not_allowed() {
    let sb = Sandbox::new();
    user_policy(&sb, json!([{"tool": "ctx_*", "action": "allow"}, {"action": "ask", "message": "confirm"}]));
    for host in ["claude", "codebuddy", "cursor"] {
        let o = sb.hook(host, gated_call(host, "ctx", "\u{441}tx_read")).ok();
        assert_eq!(told(host, &o.stdout), "ask", "{host}");
        let o = sb.hook(host, gated_call(host, "ctx", "ctx_read")).ok();
        assert_eq!(told(host, &o.stdout), "allow", "{host}");
    }
    let o = sb.hook("codex", gated_call("codex", "ctx", "\u{441}tx_read")).ok();
    assert_eq!(told("codex", &o.stdout), "deny", "Codex: ask becomes deny");
}

/// A tool name too long to keep whole is cut and still gated (conservatively).
#[test]
fn absurdly_long_tool_names_are_still_gated() {
    let sb = Sandbox::new();
    user_policy(&sb, json!([{"tool": "delete_*", "action": "deny"}]));
    let long = format!("delete_{}", "x".repeat(100_000));
    let o = sb.hook("claude", gated_call("claude", "gh", &long)).ok();
    assert_eq!(told("claude", &o.stdout), "deny");
    let _ = (payload, payloads);
}
