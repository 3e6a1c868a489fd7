//! Security: modes of what we write, nothing secret on disk, ids that
//! cannot reach a path, and a gate that name tricks cannot get past.

use crate::support::{Sandbox, payloads};
use leanctx::state::journal::Record;
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
        ("gh", "delete\u{2060}_repo"),
        ("gh", "delete_*repo"), // a star in the name (once taken as the pattern's)                                   // word joiner
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
    assert!(j.lines().all(|l| leanctx::state::journal::is_known_line(l) || l.starts_with('#')), "{j}");
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
}

/// Every captured payload of every host, in order, with a secret-looking
/// value in every field that is not an id, a name or a path (prompts, tool
/// input and output, messages, summaries, e-mail, model, ...), credentials
/// in Cursor's `command` and `url`, and secrets as ids that are not valid
/// ids. Afterwards not one byte of any secret is in any file of the data
/// dir — through a trim too.
#[test]
fn no_secret_reaches_the_disk_on_any_host_or_event() {
    const KEEP: &[&str] = &[
        "hook_event_name",
        "session_id",
        "conversation_id",
        "agent_id",
        "subagent_id",
        "parent_conversation_id",
        "tool_name",
        // The server's key in mcp.json: a name, kept like tool_name (the
        // credentials are in `command` and `url`, injected below).
        "mcp_server_name",
        // Claude Code's `{name, source}` of the server: the same name, which
        // decides the server the gate matches (and the record keeps).
        "mcp_server",
        "tool_use_id",
        "transcript_path",
        "source",
    ];
    fn inject(v: &mut Value, n: &mut usize, top: bool) {
        match v {
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if top && KEEP.contains(&k.as_str()) {
                        continue;
                    }
                    match (k.as_str(), &*x) {
                        ("command", Value::String(c)) => {
                            *x = json!(format!("API_TOKEN=SECRET-{n}x {c} --key SECRET-{n}y"))
                        }
                        ("url", Value::String(_)) => {
                            *x = json!(format!("https://u:SECRET-{n}@mcp.example.com/p?t=SECRET-{n}"))
                        }
                        (_, Value::String(_)) => *x = json!(format!("SECRET-{n}")),
                        _ => inject(x, n, false),
                    }
                    *n += 1;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| inject(x, n, false)),
            Value::String(_) => {
                *v = json!(format!("SECRET-{n}"));
                *n += 1;
            }
            _ => {}
        }
    }
    let sb = Sandbox::new();
    let mut sent = 0;
    let mut n = 0;
    for (dir, host) in [("claude", "claude"), ("codex", "codex"), ("cursor", "cursor"), ("codebuddy", "codebuddy")] {
        let mut scen: Vec<_> = std::fs::read_dir(payloads().join(dir)).unwrap().flatten().map(|e| e.path()).collect();
        scen.sort();
        for s in scen {
            let mut files: Vec<_> = std::fs::read_dir(&s).unwrap().flatten().map(|e| e.path()).collect();
            files.sort();
            for f in files.iter().filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                !n.starts_with("mcp-") && n.ends_with(".json")
            }) {
                let mut v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
                inject(&mut v, &mut n, true);
                if host == "cursor" && v.get("command").is_none() {
                    v["url"] = json!(format!("https://u:SECRET-{n}@mcp.example.com/p"));
                }
                let mut run = sb.hook(host, v.to_string());
                if host == "cursor" && sent % 3 == 0 {
                    run = run.env("CURSOR_TASK_ID", "task-1");
                }
                run.ok();
                sent += 1;
            }
        }
        // Ids that are not valid ids are secrets too: never kept.
        for bad in ["SECRET id with spaces", "SECRET/slash", "SECRET\u{0}nul"] {
            let p = json!({"hook_event_name": "PreToolUse", "session_id": bad, "conversation_id": bad,
                "agent_id": bad, "tool_use_id": bad, "tool_name": "mcp__ctx__ctx_read", "tool_input": {}});
            sb.hook(host, p.to_string()).ok();
            sent += 1;
        }
    }
    // Force a trim: what is rewritten must be as clean.
    leanctx::state::journal::Journal::new(&sb.data).trim_now(leanctx::base::clock::now_ms()).unwrap();
    let files = walk(&sb.data);
    let mut bytes = 0;
    for f in files.iter().filter(|p| p.is_file()) {
        let b = std::fs::read(f).unwrap();
        bytes += b.len();
        let text = String::from_utf8_lossy(&b);
        assert!(!text.contains("SECRET"), "{} holds a secret:\n{text}", f.display());
    }
    assert!(sent > 150 && bytes > 1000, "{sent} payloads, {bytes} bytes");
    println!(
        "security: {sent} payloads with {n} secret fields, {} files / {bytes} bytes of state: no secret",
        files.len()
    );
}

/// Modes: every dir 0700 and every file 0600, whatever the umask (here
/// 000), across all hosts, task scopes and a trimmed journal.
#[test]
fn modes_are_0700_and_0600_under_any_umask() {
    let sb = Sandbox::new();
    let run = |host: &str, p: Value, task: Option<&str>| {
        let mut c = std::process::Command::new("sh");
        c.arg("-c").arg(format!("umask 000; exec '{}' hook {host}", crate::support::BIN));
        c.env_clear().env("PATH", std::env::var_os("PATH").unwrap()).env("HOME", &sb.home);
        c.env("LEAN_CTX_DATA_DIR", &sb.data);
        if let Some(t) = task {
            c.env("CURSOR_TASK_ID", t);
        }
        c.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::null());
        let mut ch = c.spawn().unwrap();
        use std::io::Write;
        ch.stdin.take().unwrap().write_all(p.to_string().as_bytes()).unwrap();
        assert!(ch.wait().unwrap().success());
    };
    for i in 0..150 {
        for host in ["claude", "codex", "codebuddy", "cursor"] {
            let p = json!({"hook_event_name": if host == "cursor" {"beforeMCPExecution"} else {"PreToolUse"},
                "session_id": format!("s{}", i % 5), "conversation_id": format!("c{}", i % 5),
                "tool_name": if host == "cursor" {"ctx_read"} else {"mcp__ctx__ctx_read"}, "tool_input": {"i": i}});
            run(host, p, (host == "cursor" && i % 4 == 0).then_some("t1"));
        }
    }
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&sb.data), 0o700);
    assert!(
        leanctx::state::journal::read_head(&sb.data.join("journal"), 40).unwrap().starts_with("#leanctx-journal"),
        "trimmed"
    );
    let files = walk(&sb.data);
    for f in &files {
        let want = if f.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(f), want, "{}", f.display());
    }
    assert!(files.iter().any(|f| f.ends_with("scopes")));
    println!("security: {} state paths checked for 0700/0600 under umask 000", files.len() + 1);
}

/// Ids cannot steer a file name: hostile ids in every id field and in
/// CURSOR_TASK_ID leave only the known files, inside the data dir.
#[test]
fn ids_never_reach_a_path() {
    let sb = Sandbox::new();
    let hostile = [
        "../../escaped",
        "/tmp/escaped-abs",
        "..",
        "a/../../b",
        "scopes/../../x",
        "\u{0}x",
        "x\ny",
        "C:\\\\x",
        &"a".repeat(300),
        "%2e%2e%2fescaped",
        "-",
    ];
    for id in hostile {
        for host in ["claude", "codex", "codebuddy", "cursor"] {
            let p = json!({"hook_event_name": if host == "cursor" {"beforeMCPExecution"} else {"PreToolUse"},
                "session_id": id, "conversation_id": id, "agent_id": id, "subagent_id": id,
                "parent_conversation_id": id, "tool_use_id": id, "transcript_path": id,
                "tool_name": if host == "cursor" {"ctx_read"} else {"mcp__ctx__ctx_read"}, "tool_input": {}});
            let mut r = sb.hook(host, p.to_string());
            if host == "cursor" && !id.contains('\u{0}') {
                r = r.env("CURSOR_TASK_ID", id);
            }
            r.ok();
        }
        // A valid id that looks like a path piece still only names a hash.
        let p = json!({"hook_event_name":"beforeMCPExecution","conversation_id":"c","tool_name":"ctx_read","tool_input":{}});
        sb.hook("cursor", p.to_string()).env("CURSOR_TASK_ID", "..a..").ok();
    }
    // Nothing outside the data dir.
    let top: Vec<_> = std::fs::read_dir(sb.tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    let mut top: Vec<String> = top.iter().map(|n| n.to_string_lossy().into_owned()).collect();
    top.sort();
    assert_eq!(top, ["data", "home", "project"], "files appeared beside the data dir");
    assert!(walk(&sb.home).is_empty() && walk(&sb.project).is_empty());
    // Inside: only the names we write.
    for f in walk(&sb.data) {
        let rel = f.strip_prefix(&sb.data).unwrap().to_string_lossy().into_owned();
        let ok = matches!(
            rel.as_str(),
            "active_transcript.json"
                | ".active_transcript.json.spare"
                | "journal"
                | "journal.lock"
                | "scopes"
                | "secret"
        ) || rel
            .strip_prefix("scopes/")
            .and_then(|n| n.strip_suffix(".json"))
            .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(ok, "unexpected state file {rel:?}");
    }
    // The journal holds no hostile id (they were all dropped as invalid),
    // except the valid `..a..` task id.
    let j = sb.journal();
    for id in ["escaped", "%2e", "C:"] {
        assert!(!j.contains(id), "{id} in the journal:\n{j}");
    }
}

/// The installer never writes through a symlink it did not mean to follow:
/// a config that is a symlink is edited at its target (the link stays a
/// link), but a backup path planted as a symlink is never written through,
/// a symlink loop is refused, and nothing lands outside the config's place.
#[test]
fn installer_does_not_write_through_planted_symlinks() {
    let sb = Sandbox::new();
    let cfg = sb.home.join(".claude");
    std::fs::create_dir_all(&cfg).unwrap();
    let elsewhere = sb.tmp.path().join("dotfiles");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("settings.json"), "{\"theme\": \"dark\"}\n").unwrap();
    std::os::unix::fs::symlink(elsewhere.join("settings.json"), cfg.join("settings.json")).unwrap();
    let victim = sb.tmp.path().join("victim");
    std::fs::write(&victim, "VICTIM").unwrap();
    std::os::unix::fs::symlink(&victim, cfg.join("settings.json.leanctx.bak")).unwrap();
    // No backup can be made there: the install stops, says why, and
    // touches nothing.
    let o = sb.cmd(["hooks", "install", "claude-code"]).run();
    assert_eq!(o.code, 1, "{}{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("not a regular file"), "{}", o.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "VICTIM", "backup written through a planted symlink");
    assert_eq!(std::fs::read_to_string(elsewhere.join("settings.json")).unwrap(), "{\"theme\": \"dark\"}\n");
    // With the planted link gone, the install goes through the config's link.
    std::fs::remove_file(cfg.join("settings.json.leanctx.bak")).unwrap();
    let o = sb.cmd(["hooks", "install", "claude-code"]).run();
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "VICTIM");
    assert!(std::fs::symlink_metadata(cfg.join("settings.json")).unwrap().file_type().is_symlink(), "link kept");
    let real = std::fs::read_to_string(elsewhere.join("settings.json")).unwrap();
    assert!(real.contains("\"theme\"") && real.contains("hook claude-code"), "{real}");
    // Nothing new in the symlink's target dir but the edited file.
    let names: Vec<_> = std::fs::read_dir(&elsewhere).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(names.len(), 1, "{names:?}");

    // A symlink loop: refused, nothing written.
    let sb = Sandbox::new();
    let cfg = sb.home.join(".codebuddy");
    std::fs::create_dir_all(&cfg).unwrap();
    std::os::unix::fs::symlink(cfg.join("b.json"), cfg.join("settings.json")).unwrap();
    std::os::unix::fs::symlink(cfg.join("settings.json"), cfg.join("b.json")).unwrap();
    let o = sb.cmd(["hooks", "install", "codebuddy"]).run();
    assert_ne!(o.code, 0, "a symlink loop must be refused: {}", o.stdout);
    assert_eq!(std::fs::read_dir(&cfg).unwrap().count(), 2);
    assert!(std::fs::symlink_metadata(cfg.join("settings.json")).unwrap().file_type().is_symlink());
}

/// A gated call on `host` as it arrives from a workspace at `root`.
fn gated_call_in(host: &str, server: &str, tool: &str, root: &Path) -> String {
    let mut v: Value = serde_json::from_str(&gated_call(host, server, tool)).unwrap();
    if host == "cursor" {
        v["workspace_roots"] = json!([root]);
    } else {
        v["cwd"] = json!(root);
    }
    v.to_string()
}

/// A repository cannot approve tools: its `.lean-ctx/gate.json` answering
/// `allow` (which bypasses the user's permission prompt on Claude Code,
/// CodeBuddy and Cursor) is ignored unless the user's own policy lists the
/// workspace in `trusted_workspaces`; a workspace's deny and ask always
/// apply; a workspace cannot trust itself; `gate check` says why.
#[test]
fn a_workspace_policy_cannot_allow_unless_the_user_trusts_it() {
    let sb = Sandbox::new();
    let repo = sb.tmp.path().join("cloned-repo");
    std::fs::create_dir_all(repo.join(".lean-ctx")).unwrap();
    let plant = |rules: Value, extra: Value| {
        let mut v = json!({ "rules": rules });
        if let Value::Object(m) = extra {
            v.as_object_mut().unwrap().extend(m);
        }
        std::fs::write(repo.join(".lean-ctx/gate.json"), v.to_string()).unwrap();
    };
    let hosts = ["claude", "codebuddy", "cursor", "codex"];
    let told_for = |host: &str, tool: &str| {
        let o = sb.hook(host, gated_call_in(host, "gh", tool, &repo)).ok();
        // Cursor's "no opinion" is a bare ask (Cursor's own approval); a
        // rule's answer carries a message.
        if host == "cursor" && told(host, &o.stdout) == "ask" && !o.stdout.contains("user_message") {
            return "none".to_string();
        }
        told(host, &o.stdout)
    };
    // The attack: auto-approve delete_repo (and everything else).
    plant(json!([{"tool": "delete_repo", "action": "allow"}, {"action": "allow"}]), json!({}));
    for host in hosts {
        assert_eq!(told_for(host, "delete_repo"), "none", "{host}: a workspace allow was honoured");
        assert_eq!(told_for(host, "list_repos"), "none", "{host}");
    }
    // It cannot trust itself.
    plant(json!([{"action": "allow"}]), json!({"trusted_workspaces": [repo]}));
    assert_eq!(told_for("claude", "delete_repo"), "none", "a workspace trusted itself");
    // Its deny and ask still apply, and an allow before them does not shadow
    // them into nothing but into no opinion for that name only.
    plant(
        json!([{"tool": "list_*", "action": "allow"}, {"tool": "delete_*", "action": "deny", "message": "repo says no"},
            {"tool": "drop_*", "action": "ask"}]),
        json!({}),
    );
    for host in hosts {
        assert_eq!(told_for(host, "delete_repo"), "deny", "{host}");
        assert_eq!(told_for(host, "list_repos"), "none", "{host}");
        assert_eq!(told_for(host, "drop_table"), if host == "codex" { "deny" } else { "ask" }, "{host}");
    }
    // gate check shows the ignored allow.
    let o = sb.cmd(["gate", "check", "--host", "claude", "--tool", "mcp__gh__list_repos"]).current_dir(&repo).ok();
    assert!(o.stdout.contains("ignored") && o.stdout.contains("trusted_workspaces"), "{}", o.stdout);
    assert!(o.stdout.contains("no opinion"), "{}", o.stdout);
    // The user opts this workspace in: its allows count.
    user_policy(&sb, json!([]));
    std::fs::write(sb.data.join("gate.json"), json!({"rules": [], "trusted_workspaces": [repo]}).to_string()).unwrap();
    for host in ["claude", "codebuddy", "cursor"] {
        assert_eq!(told_for(host, "list_repos"), "allow", "{host}: a trusted workspace allows");
        assert_eq!(told_for(host, "delete_repo"), "deny", "{host}");
    }
    let o = sb
        .cmd(["gate", "check", "--host", "claude", "--tool", "mcp__gh__list_repos", "--json"])
        .current_dir(&repo)
        .ok();
    assert_eq!(o.json()["verdict"]["action"], "allow", "{}", o.stdout);
    // Another workspace stays untrusted.
    let other = sb.tmp.path().join("other-repo");
    std::fs::create_dir_all(other.join(".lean-ctx")).unwrap();
    std::fs::write(other.join(".lean-ctx/gate.json"), json!({"rules": [{"action": "allow"}]}).to_string()).unwrap();
    let o = sb.hook("claude", gated_call_in("claude", "gh", "delete_repo", &other)).ok();
    assert_eq!(told("claude", &o.stdout), "none", "{}", o.stdout);
    // A FIFO planted as a workspace policy neither hangs the hook nor allows:
    // the file is broken, so the gate asks.
    let fifo_repo = sb.tmp.path().join("fifo-repo");
    std::fs::create_dir_all(fifo_repo.join(".lean-ctx")).unwrap();
    let c = std::ffi::CString::new(fifo_repo.join(".lean-ctx/gate.json").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let o = sb
        .hook("claude", gated_call_in("claude", "gh", "delete_repo", &fifo_repo))
        .timeout(std::time::Duration::from_secs(5))
        .ok();
    assert_eq!(told("claude", &o.stdout), "ask", "{}", o.stdout);
}

/// Cursor's `command` and `url`, in many generated shapes with secrets in
/// every place a credential goes: assignment values (bare, double- and
/// single-quoted with spaces and specials, backslash-escaped), `env`
/// prefixes, directories of the program's path, arguments, URLs with a
/// `user:token@` whose parts hold `/ ? # @ :` and percent escapes, paths,
/// queries and fragments. Every secret is made of pieces that start with
/// `SEC`. The derived server name never holds one: it is exactly the
/// program's file name or the URL's host and port, or nothing when the
/// URL is ambiguous. The library over many shapes, then a sample through
/// the real binary, whose data dir must not hold a byte of a secret.
#[test]
fn cursor_server_names_never_keep_a_credential() {
    use crate::rng::{Rng, count, seeds};
    const PROGRAMS: &[&str] = &["lean-ctx", "npx", "node", "python3", "uvx", "docker", "srv.exe", "mcp-server_v2"];
    const HOSTS: &[&str] = &["mcp.example.com", "127.0.0.1", "localhost", "[::1]", "api.github-mcp.io"];
    fn piece(r: &mut Rng) -> String {
        let abc = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let mut s = "SEC".to_string();
        for _ in 0..3 {
            s.push(abc[r.below(abc.len() as u64) as usize] as char);
        }
        s
    }
    fn secret(r: &mut Rng, seps: &[&str]) -> String {
        let mut s = piece(r);
        for _ in 0..r.below(4) {
            s.push_str(r.pick::<&str>(seps));
            s.push_str(&piece(r));
        }
        s
    }
    // A shell word holding a secret, quoted one of the ways a config does.
    fn word(r: &mut Rng) -> String {
        match r.below(4) {
            0 => secret(r, &["/", ":", "@", "#", "%40", "=", ",", "+", ".", "?"]),
            1 => format!("\"{}\"", secret(r, &[" ", "/", "#", "?", "@", ":", "'", "=", "\\\"", " & ", ";"])),
            2 => format!("'{}'", secret(r, &[" ", "/", "#", "?", "@", ":", "\"", "=", "\\", "$(", ")"])),
            _ => secret(r, &["\\ ", "\\\"", "/", ":"]),
        }
    }
    fn command(r: &mut Rng) -> (String, String) {
        let mut parts = Vec::new();
        for _ in 0..r.below(3) {
            parts.push(format!("{}={}", r.pick(&["API_TOKEN", "TOKEN", "GITHUB_PAT", "A_1"]), word(r)));
        }
        if r.chance(0.3) {
            parts.push("env".into());
            if r.chance(0.5) {
                parts.push("-i".into());
            }
            if r.chance(0.5) {
                parts.extend(["-u".into(), "HOME".into()]);
            }
            if r.chance(0.5) {
                parts.push("--".into());
            }
            for _ in 0..r.below(3) {
                parts.push(format!("{}={}", r.pick(&["KEY", "X_SECRET"]), word(r)));
            }
        }
        let program = *r.pick(PROGRAMS);
        let dir = match r.below(5) {
            0 => String::new(),
            1 => "/usr/local/bin/".into(),
            2 => format!("/opt/{}/bin/", secret(r, &[":", "@", "-", "."])),
            3 => format!("/home/u/.{}/", secret(r, &["_", "."])),
            _ => "./".into(),
        };
        parts.push(format!("{dir}{program}"));
        for _ in 0..r.below(5) {
            let arg = match r.below(6) {
                0 => format!("--token {}", word(r)),
                1 => format!("--token={}", word(r)),
                2 => word(r),
                3 => format!("https://u:{}@h.example/p?t={}#{}", piece(r), piece(r), piece(r)),
                4 => format!("-e KEY={}", word(r)),
                _ => "--stdio".into(),
            };
            parts.push(arg);
        }
        (parts.join(" "), program.trim_end_matches(".exe").to_string())
    }
    // A URL; the name it must give (None: ambiguous, either is fine).
    fn url(r: &mut Rng) -> (String, String, bool) {
        let hostile = ["/", "?", "#", "\\"];
        let mut ambiguous = false;
        let part = |r: &mut Rng, ambiguous: &mut bool| {
            let seps: &[&str] = &[
                "", ".", "-", "_", "~", "%40", "%2F", "!", "$", "&", "'", "(", ")", "*", "+", ",", ";", "=", "@", ":",
                "/", "?", "#", "\\",
            ];
            let s = secret(r, seps);
            *ambiguous |= hostile.iter().any(|h| s.contains(h));
            s
        };
        let scheme = *r.pick(&["https://", "http://", "ws://", ""]);
        let userinfo = match r.below(3) {
            0 => String::new(),
            1 => format!("{}@", part(r, &mut ambiguous)),
            _ => format!("{}:{}@", part(r, &mut ambiguous), part(r, &mut ambiguous)),
        };
        let host = *r.pick(HOSTS);
        let port = *r.pick(&["", ":443", ":8080"]);
        let path = match r.below(3) {
            0 => String::new(),
            1 => "/mcp".into(),
            _ => format!("/{}/x", piece(r)),
        };
        let query = match r.below(3) {
            0 => String::new(),
            1 => format!("?token={}", piece(r)),
            _ => {
                ambiguous = true;
                format!("?e=a@{}.example", piece(r))
            }
        };
        let fragment = if r.chance(0.3) { format!("#{}", piece(r)) } else { String::new() };
        (format!("{scheme}{userinfo}{host}{port}{path}{query}{fragment}"), format!("{host}{port}"), ambiguous)
    }

    // Half the shapes from a fixed seed (reproducible in CI), half from a
    // fresh one; `LEANCTX_SEED` replays one seed with all of them.
    let seeds = seeds("security[cursor-names]", &[1]);
    let n = count("LEANCTX_NAME_CASES", 20_000, 200_000);
    let per_seed = n.div_ceil(seeds.len() as u64);
    let mut seed = seeds[0];
    let mut r = Rng::new(seed);
    let (mut named, mut unnamed) = (0, 0);
    let mut sample = Vec::new();
    for i in 0..n {
        if i > 0 && i % per_seed == 0 {
            seed = seeds[(i / per_seed) as usize];
            r = Rng::new(seed);
        }
        let (cmd, url, want, ambiguous) = if r.chance(0.5) {
            let (c, p) = command(&mut r);
            (Some(c), None, p, false)
        } else {
            let (u, h, a) = url(&mut r);
            (None, Some(u), h, a)
        };
        let got = leanctx::gate::tool::server_from_cursor(cmd.as_deref(), url.as_deref());
        let ctx = format!("seed {seed} case {i}: command {cmd:?} url {url:?} -> {got:?}");
        assert!(!got.as_deref().unwrap_or("").contains("SEC"), "a secret in the name: {ctx}");
        match &got {
            Some(g) => assert_eq!(g, &want, "{ctx}"),
            None => assert!(ambiguous, "no name for an unambiguous shape: {ctx}"),
        }
        if got.is_some() {
            named += 1;
        } else {
            unnamed += 1;
        }
        if i % (n / 150).max(1) == 0 {
            sample.push((cmd, url));
        }
    }
    assert!(named > n / 2, "{named} named of {n}");
    // A sample through the real binary.
    let sb = Sandbox::new();
    for (i, (cmd, url)) in sample.iter().enumerate() {
        let mut p = json!({"hook_event_name":"beforeMCPExecution","conversation_id":"c1","tool_name":"ctx_read",
            "tool_input":{"i": i}});
        if let Some(c) = cmd {
            p["command"] = json!(c);
        }
        if let Some(u) = url {
            p["url"] = json!(u);
        }
        sb.hook("cursor", p.to_string()).ok();
    }
    let calls = Sandbox::count(&sb.journal(), |r| matches!(r, Record::Call(_)));
    assert_eq!(calls, sample.len(), "every call recorded");
    for f in walk(&sb.data).iter().filter(|p| p.is_file()) {
        let text = String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned();
        assert!(!text.contains("SEC"), "{} holds a secret:\n{text}", f.display());
    }
    println!(
        "security: {n} command/url shapes ({named} named, {unnamed} ambiguous URLs unnamed), {} through the binary: no secret",
        sample.len()
    );
}
