//! The MCP gate through the real binary: each host's dialect, user and
//! project policy, strictest wins, broken policy, `gate check`.

use crate::support::{Sandbox, payload};
use leanctx::state::journal::Record;
use serde_json::{Value, json};

fn user_policy(sb: &Sandbox, rules: Value) {
    std::fs::create_dir_all(&sb.data).unwrap();
    std::fs::write(sb.data.join("gate.json"), json!({ "rules": rules }).to_string()).unwrap();
}

fn project_policy(dir: &std::path::Path, text: &str) {
    std::fs::create_dir_all(dir.join(".lean-ctx")).unwrap();
    std::fs::write(dir.join(".lean-ctx/gate.json"), text).unwrap();
}

/// A gated MCP call for `host`, with `cwd` (or Cursor workspace root) set.
fn mcp_call(host: &str, cwd: &std::path::Path) -> String {
    let mut v: Value = match host {
        "claude" => serde_json::from_str(&payload("claude/baseline/07-PreToolUse.json")).unwrap(),
        "codex" => serde_json::from_str(&payload("codex/baseline/05-PreToolUse.json")).unwrap(),
        "codebuddy" => serde_json::from_str(&payload("codebuddy/composed/03-PreToolUse-mcp.json")).unwrap(),
        "cursor" => serde_json::from_str(&payload("cursor/composed/03-beforeMCPExecution-string-input.json")).unwrap(),
        _ => unreachable!(),
    };
    if host == "cursor" {
        v["workspace_roots"] = json!([cwd]);
        // Cursor names the server by its key in mcp.json.
        v["mcp_server_name"] = json!("ctx");
    } else {
        v["cwd"] = json!(cwd);
    }
    // Same tool everywhere: server ctx, tool ctx_read.
    v["tool_name"] = json!(if host == "cursor" { "ctx_read" } else { "mcp__ctx__ctx_read" });
    v.to_string()
}

fn answer(sb: &Sandbox, host: &str) -> (String, String) {
    let o = sb.hook(host, mcp_call(host, &sb.project)).run();
    assert_eq!(o.code, 0, "the gate never exits non-zero");
    (o.stdout.trim().to_string(), o.stderr)
}

fn pre_tool(decision: &str, reason: &str) -> Value {
    json!({"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":decision,"permissionDecisionReason":reason}})
}

#[test]
fn no_policy_means_no_opinion_in_every_dialect() {
    let sb = Sandbox::new();
    for host in ["claude", "codex", "codebuddy"] {
        assert_eq!(answer(&sb, host).0, "", "{host}");
    }
    // Cursor: `ask` defers to Cursor's own approval; `allow` would skip it
    // (docs/HOST-FACTS.md §7).
    assert_eq!(serde_json::from_str::<Value>(&answer(&sb, "cursor").0).unwrap(), json!({"permission":"ask"}));
}

#[test]
fn deny_in_every_dialect_and_the_call_is_still_recorded() {
    let sb = Sandbox::new();
    user_policy(&sb, json!([{"server": "ctx", "tool": "ctx_read", "action": "deny", "message": "no reads today"}]));
    let j = |s: &str| serde_json::from_str::<Value>(s).unwrap();
    assert_eq!(j(&answer(&sb, "claude").0), pre_tool("deny", "no reads today"));
    assert_eq!(j(&answer(&sb, "codex").0), pre_tool("deny", "no reads today"));
    let mut cb = pre_tool("deny", "no reads today");
    cb["continue"] = json!(true);
    assert_eq!(j(&answer(&sb, "codebuddy").0), cb);
    assert_eq!(
        j(&answer(&sb, "cursor").0),
        json!({"permission":"deny","user_message":"no reads today","agent_message":"no reads today"})
    );
    let calls = Sandbox::count(&sb.journal(), |r| matches!(r, Record::Call(_)));
    assert_eq!(calls, 4, "a denied call is recorded before the answer");
}

#[test]
fn ask_degrades_to_deny_on_codex_only() {
    let sb = Sandbox::new();
    user_policy(&sb, json!([{"tool": "ctx_*", "action": "ask", "message": "confirm reads"}]));
    let claude: Value = serde_json::from_str(&answer(&sb, "claude").0).unwrap();
    assert_eq!(claude, pre_tool("ask", "confirm reads"));
    let codex: Value = serde_json::from_str(&answer(&sb, "codex").0).unwrap();
    assert_eq!(codex["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = codex["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.starts_with("confirm reads") && reason.contains("cannot ask"), "{reason}");
    let cursor: Value = serde_json::from_str(&answer(&sb, "cursor").0).unwrap();
    assert_eq!(cursor["permission"], "ask");
}

#[test]
fn explicit_allow_is_printed_only_where_the_host_takes_it() {
    let sb = Sandbox::new();
    user_policy(&sb, json!([{"tool": "ctx_read", "action": "allow"}]));
    let claude: Value = serde_json::from_str(&answer(&sb, "claude").0).unwrap();
    assert_eq!(claude["hookSpecificOutput"]["permissionDecision"], "allow");
    assert_eq!(answer(&sb, "codex").0, "", "Codex fails a hook that says allow");
    let cursor: Value = serde_json::from_str(&answer(&sb, "cursor").0).unwrap();
    assert_eq!(cursor["permission"], "allow");
}

#[test]
fn project_policy_and_strictest_wins() {
    let sb = Sandbox::new();
    user_policy(&sb, json!([{"tool": "*", "action": "allow"}]));
    project_policy(&sb.project, r#"{"rules":[{"server":"ctx","action":"deny","message":"project says no"}]}"#);
    for host in ["claude", "codex", "codebuddy", "cursor"] {
        let (out, _) = answer(&sb, host);
        assert!(out.contains("project says no"), "{host}: {out}");
        assert!(out.contains("deny"), "{host}: {out}");
    }
    // First matching rule in a file decides: here the project's allow,
    // which (the workspace not trusted by the user) counts as no opinion,
    // not as its later deny; the user's allow decides.
    project_policy(&sb.project, r#"{"rules":[{"tool":"ctx_read","action":"allow"},{"server":"ctx","action":"deny"}]}"#);
    let claude: Value = serde_json::from_str(&answer(&sb, "claude").0).unwrap();
    assert_eq!(claude["hookSpecificOutput"]["permissionDecision"], "allow");
}

#[test]
fn broken_policy_asks_naming_file_and_position() {
    let sb = Sandbox::new();
    project_policy(&sb.project, "{\n  \"rules\": [\n    {\"tool\": \"x\", \"action\": \"block\"}\n  ]\n}\n");
    let (out, err) = answer(&sb, "claude");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap();
    let want = format!("{}:3:", sb.project.join(".lean-ctx/gate.json").display());
    assert!(reason.contains(&want), "{reason}");
    assert!(err.contains("does not parse"), "{err}");
    let (out, _) = answer(&sb, "codex");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "Codex cannot ask");
}

#[test]
fn non_mcp_tools_are_never_gated() {
    let sb = Sandbox::new();
    user_policy(&sb, json!([{"action": "deny"}]));
    let bash = json!({"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"Bash","tool_input":{"command":"ls"},"cwd":sb.project});
    assert_eq!(sb.hook("claude", bash.to_string()).ok().stdout, "");
    let search = payload("claude/baseline/04-PreToolUse.json");
    assert_eq!(sb.hook("claude", search).ok().stdout, "", "ToolSearch is not an MCP tool");
    // A post-tool event of an MCP tool is not gated either.
    assert_eq!(sb.hook("claude", payload("claude/baseline/08-PostToolUse.json")).ok().stdout, "");
}

#[test]
fn name_tricks_do_not_bypass_a_deny() {
    let sb = Sandbox::new();
    user_policy(&sb, json!([{"server": "gh", "tool": "delete_*", "action": "deny"}]));
    for name in ["mcp__gh__delete_repo", "mcp__GH__Delete_Repo", "MCP__gh__DELETE_REPO"] {
        let p =
            json!({"hook_event_name":"PreToolUse","session_id":"s1","tool_name":name,"tool_input":{},"cwd":sb.project});
        let out = sb.hook("claude", p.to_string()).ok().stdout;
        assert!(out.contains("\"deny\""), "{name}: {out:?}");
    }
    user_policy(&sb, json!([{"server": "a__b", "tool": "c", "action": "deny"}]));
    let p = json!({"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"mcp__a__b__c","tool_input":{},"cwd":sb.project});
    assert!(sb.hook("claude", p.to_string()).ok().stdout.contains("\"deny\""));
}

#[test]
fn gate_check_explains() {
    let sb = Sandbox::new();
    user_policy(
        &sb,
        json!([{"tool": "ctx_write", "action": "deny"}, {"tool": "ctx_*", "action": "ask", "message": "confirm"}]),
    );
    let o = sb.cmd(["gate", "check", "--host", "codex", "--tool", "mcp__ctx__ctx_read", "--json"]).ok();
    let v = o.json();
    assert_eq!(v["verdict"]["verdict"], "decide");
    assert_eq!(v["verdict"]["action"], "ask");
    assert!(v["verdict"]["decided_by"].as_str().unwrap().ends_with("gate.json#2"), "rules are numbered from 1");
    let user = v["files"].as_array().unwrap().iter().find(|f| f["status"] == "rule").unwrap();
    assert_eq!(user["rule"], 2, "the JSON counts from 1 too, as the text does: {v:#}");
    assert!(v["answer"].as_str().unwrap().contains("deny"), "Codex answer for ask is a deny");
    let o = sb.cmd(["gate", "check", "--host", "claude", "--tool", "mcp__ctx__ctx_write"]).ok();
    assert!(o.stdout.contains("rule #1 says deny"), "{}", o.stdout);
    assert!(o.stdout.contains("not present"), "project file absent: {}", o.stdout);
    let o = sb.cmd(["gate", "check", "--host", "cursor", "--tool", "other_tool"]).ok();
    assert!(o.stdout.contains("no opinion"), "{}", o.stdout);
}

/// Cursor's `beforeMCPExecution` names the server by its key in mcp.json
/// (`mcp_server_name`): README's own rule, scoped to `github`, decides on
/// Cursor. Without a usable name the server comes from `command` / `url`.
#[test]
fn cursor_rules_match_by_mcp_server_name() {
    let sb = Sandbox::new();
    user_policy(
        &sb,
        json!([{"server": "github", "tool": "delete_*", "action": "deny", "message": "No deletes from agents"},
               {"server": "npx", "tool": "*", "action": "ask", "message": "npx server"},
               {"tool": "ctx_*", "action": "allow"}]),
    );
    let before = |name: Option<&str>, tool: &str| {
        let mut v: Value =
            serde_json::from_str(&payload("cursor/composed/03-beforeMCPExecution-string-input.json")).unwrap();
        v["workspace_roots"] = json!([sb.project]);
        v["tool_name"] = json!(tool);
        v["command"] = json!("npx -y @modelcontextprotocol/server-github");
        match name {
            Some(n) => v["mcp_server_name"] = json!(n),
            None => {
                v.as_object_mut().unwrap().remove("mcp_server_name");
            }
        }
        let o = sb.hook("cursor", v.to_string()).ok();
        o.json()
    };
    assert_eq!(
        before(Some("github"), "delete_repo"),
        json!({"permission":"deny","user_message":"No deletes from agents","agent_message":"No deletes from agents"})
    );
    assert_eq!(before(Some("github"), "list_issues"), json!({"permission":"ask"}), "no rule: Cursor decides");
    // No name, or one that is not a plain name: the program of `command`.
    assert_eq!(before(None, "list_issues")["permission"], "ask");
    assert_eq!(before(Some("git hub"), "list_issues")["permission"], "ask");
    let journal = sb.journal();
    let servers: Vec<&str> = Sandbox::calls(&journal).iter().filter_map(|c| c.server).collect();
    assert_eq!(servers, ["github", "github", "npx", "npx"]);
}

/// Cursor's `preToolUse` names MCP tools `MCP:<tool>`, without the server:
/// a deny or ask scoped to any server applies to the tool, an allow scoped
/// to a server does not.
#[test]
fn cursor_pre_tool_use_mcp_names_have_no_server() {
    let sb = Sandbox::new();
    let pre = |tool: &str| {
        let mut v: Value =
            serde_json::from_str(&payload("cursor-real/3.18.25-preToolUse-MCP-in-subagent.json")).unwrap();
        v["workspace_roots"] = json!([sb.project]);
        v["tool_name"] = json!(tool);
        sb.hook("cursor", v.to_string()).ok().json()
    };
    user_policy(&sb, json!([{"server": "github", "tool": "delete_*", "action": "deny", "message": "no"}]));
    assert_eq!(pre("MCP:delete_repo")["permission"], "deny");
    assert_eq!(pre("MCP:dump"), json!({"permission":"ask"}), "no rule: Cursor decides");
    user_policy(&sb, json!([{"server": "ctx", "action": "allow"}, {"action": "ask", "message": "confirm"}]));
    assert_eq!(pre("MCP:ctx_read")["permission"], "ask", "the allow for server ctx does not apply");
    assert_eq!(pre("MCP:ctx:ctx_read")["permission"], "allow", "a name with its server");
    let c: Vec<String> = sb.journal().lines().filter(|l| l.starts_with("C\t")).map(str::to_string).collect();
    assert_eq!(c.len(), 4);
    assert!(c[0].contains("\t-\tdelete_repo\t"), "{}", c[0]);
}

/// `gate check --server` tests a server-scoped rule as Cursor's
/// beforeMCPExecution would; without it the server is unknown (as on
/// Cursor's preToolUse) and the check says so, and warns about rules that
/// can never match on the host.
#[test]
fn gate_check_server_and_warnings() {
    let sb = Sandbox::new();
    user_policy(
        &sb,
        json!([{"server": "github", "tool": "delete_*", "action": "deny"},
               {"server": "ctx", "tool": "ctx_*", "action": "allow"}]),
    );
    let check = |args: &[&str]| {
        let mut a = vec!["gate", "check", "--host", "cursor", "--json"];
        a.extend_from_slice(args);
        sb.cmd(a).ok().json()
    };
    let v = check(&["--tool", "ctx_read", "--server", "ctx"]);
    assert_eq!((v["verdict"]["action"].as_str(), v["tool"]["server"].as_str()), (Some("allow"), Some("ctx")));
    let v = check(&["--tool", "ctx_read"]);
    assert_eq!(v["verdict"]["verdict"], "no-opinion", "a server-scoped allow needs the server: {v}");
    let w = v["warnings"].to_string();
    assert!(w.contains("no server") && w.contains("--server"), "{w}");
    assert!(w.contains("#2") && w.contains("preToolUse"), "the allow for ctx never matches preToolUse: {w}");
    let v = check(&["--tool", "MCP:delete_repo"]);
    assert_eq!(v["verdict"]["action"], "deny", "a deny for github applies to an unknown server");
    let v = check(&["--tool", "delete_repo", "--server", "gitlab"]);
    assert_eq!(v["verdict"]["verdict"], "no-opinion");
    let o = sb.cmd(["gate", "check", "--host", "cursor", "--tool", "ctx_read"]).ok();
    assert!(o.stdout.contains("warning  "), "{}", o.stdout);
    // Hosts that name the server in the tool name get no Cursor warnings.
    let v = sb.cmd(["gate", "check", "--host", "claude", "--tool", "mcp__ctx__ctx_read", "--json"]).ok().json();
    assert_eq!(v["warnings"], json!([]));
    assert_eq!(v["verdict"]["action"], "allow");
}
