//! Registering `leanctx serve` as each host's MCP server, through the real
//! binary in a sandbox HOME: the counterpart of every safety case the hook
//! installer is tested for (tests/it/install.rs): bytes and comments kept,
//! bad files refused whole, backups, dry run, symlinks, the lock, and
//! uninstall giving the file back. `--server` forces the registration
//! whether or not this binary has `serve` yet.

use crate::support::{BIN, HOSTS, Out, Sandbox, backup_of as backup};
use serde_json::{Value, json};
use std::fs;
#[cfg(unix)]
use std::os::unix::fs::{PermissionsExt, symlink};

fn install(sb: &Sandbox, host: &str) -> Out {
    sb.cmd(["hooks", "install", host, "--server"]).ok()
}

fn uninstall(sb: &Sandbox, host: &str) -> Out {
    sb.cmd(["hooks", "uninstall", host]).ok()
}

/// The `command` the installer writes: the binary's canonical path as one
/// argv word in the platform's own form: on Windows `C:\…\leanctx.exe`,
/// backslashes, without the `\\?\` that canonicalize puts in front
/// (hosts start the server without a shell, so nothing is quoted).
fn bin() -> String {
    let p = fs::canonicalize(BIN).unwrap().to_str().unwrap().to_string();
    if cfg!(windows) {
        let p = p.strip_prefix(r"\\?\").expect("canonicalize gives a verbatim path on Windows").to_string();
        assert!(p.contains('\\') && !p.contains('/'), "{p}");
        p
    } else {
        p
    }
}

/// Our entry in a host's server file, as the host would read it.
fn entry(sb: &Sandbox, host: &str) -> Option<Value> {
    let text = fs::read_to_string(sb.server_file(host)).ok()?;
    let v: Value = if host == "codex" {
        let t: toml_edit::DocumentMut = text.parse().unwrap();
        let s = t.get("mcp_servers")?.get("leanctx")?;
        let args: Vec<Value> = s.get("args")?.as_array()?.iter().map(|a| Value::from(a.as_str().unwrap())).collect();
        let env: Vec<Value> = s.get("env_vars")?.as_array()?.iter().map(|a| Value::from(a.as_str().unwrap())).collect();
        json!({"command": s.get("command")?.as_str()?, "args": args, "env_vars": env})
    } else {
        serde_json::from_str::<Value>(&text).unwrap().get("mcpServers")?.get("leanctx")?.clone()
    };
    Some(v)
}

/// A file full of someone else's things, in the host's format.
fn foreign(host: &str) -> String {
    if host == "codex" {
        "# my codex\nmodel = \"o3\" # pinned\n\n[mcp_servers.docs]\ncommand = \"docs-server\"\nargs = [\"--x\"]\n\n\
         [features]\nhooks = true\n"
            .into()
    } else {
        "{\n  \"numStartups\": 7,\n  \"mcpServers\": {\n    \"docs\": {\"command\": \"docs-server\", \"args\": [\"--x\"]},\n    \
         \"lean-ctx\": {\"command\": \"/opt/lean-ctx\", \"args\": []}\n  },\n  \"z\": [1, 2.50, null]\n}\n"
            .into()
    }
}

#[test]
fn each_host_gets_its_entry_and_uninstall_gives_the_bytes_back() {
    for host in HOSTS {
        let sb = Sandbox::new();
        sb.host_dir(host);
        let p = sb.server_file(host);
        let text = foreign(host);
        fs::write(&p, &text).unwrap();
        let out = install(&sb, host);
        assert!(out.stdout.contains(&format!("MCP server (user): {}", p.display())), "{}", out.stdout);
        assert!(out.stdout.contains(&format!("the host runs {} serve\n", bin())), "{}", out.stdout);
        let e = entry(&sb, host).unwrap_or_else(|| panic!("{host}: no entry in {}", fs::read_to_string(&p).unwrap()));
        assert_eq!(e["command"], bin(), "{host}");
        assert_eq!(e["args"], json!(["serve"]), "{host}");
        match host {
            "claude-code" | "codebuddy" => assert_eq!(e["type"], "stdio"),
            "codex" => assert_eq!(e["env_vars"], json!(["LEAN_CTX_DATA_DIR", "XDG_DATA_HOME"])),
            _ => assert!(e.get("type").is_none()),
        }
        let installed = fs::read(&p).unwrap();
        assert!(String::from_utf8_lossy(&installed).contains("docs-server"), "{host}: the user's server stays");
        if host == "codex" {
            let s = String::from_utf8_lossy(&installed);
            assert!(s.contains("# my codex\nmodel = \"o3\" # pinned\n"), "comments kept: {s}");
        }
        // Idempotent: nothing written the second time.
        let again = install(&sb, host);
        assert!(again.stdout.contains("already up to date"), "{}", again.stdout);
        assert_eq!(fs::read(&p).unwrap(), installed, "{host}");
        let out = uninstall(&sb, host);
        assert!(out.stdout.contains("removed 1 ("), "{}", out.stdout);
        assert_eq!(fs::read_to_string(&p).unwrap(), text, "{host}: byte for byte");
        assert!(entry(&sb, host).is_none());
    }
}

#[test]
fn a_file_leanctx_created_is_removed_again_and_no_flag_means_hooks_only() {
    for host in HOSTS {
        let sb = Sandbox::new();
        sb.host_dir(host);
        let p = sb.server_file(host);
        sb.cmd(["hooks", "install", host, "--no-server"]).ok();
        assert!(!p.exists(), "{host}: --no-server writes no server file");
        install(&sb, host);
        assert!(entry(&sb, host).is_some(), "{host}");
        assert!(!backup(&p).exists(), "{host}: nothing to back up");
        uninstall(&sb, host);
        assert!(!p.exists(), "{host}: the file leanctx created is gone");
        let out = sb.cmd(["hooks", "install", host, "--server", "--no-server"]).run();
        assert_eq!(out.code, 2, "contradictory flags: {out:?}");
    }
}

#[test]
fn uninstall_no_server_keeps_the_registration() {
    let sb = Sandbox::new();
    sb.host_dir("claude-code");
    install(&sb, "claude-code");
    sb.cmd(["hooks", "uninstall", "claude-code", "--no-server"]).ok();
    assert!(entry(&sb, "claude-code").is_some());
}

#[test]
fn bad_files_are_refused_whole_with_position_and_left_byte_for_byte() {
    let cases: &[(&str, &[u8], &str)] = &[
        ("claude-code", b"{\n  \"numStartups\": 1,\n  \"mcpServers\": {\n}\n", ":5:1: not valid JSON"),
        ("cursor", b"{\n  \"mcpServers\": {} // mine\n}\n", ":2:20"),
        ("codebuddy", b"{\"mcpServers\": {}, \"mcpServers\": {}}", "duplicate key"),
        ("claude-code", b"{\"mcpServers\": [\n]}", ":1:16: \"mcpServers\" is an array"),
        ("cursor", b"{\"mcpServers\": {\"leanctx\": {\"command\": \"/usr/bin/other\"}}}", "is another server"),
        ("codex", b"model = \"x\"\n[mcp_servers\n", ":2:"),
        ("codex", b"mcp_servers = 3\n", "\"mcp_servers\" is a number"),
        ("claude-code", b"{\"a\": \"\xff\"}", ":1:8"),
    ];
    for (host, bytes, want) in cases {
        let sb = Sandbox::new();
        sb.host_dir(host);
        let p = sb.server_file(host);
        fs::write(&p, bytes).unwrap();
        let out = sb.cmd(["hooks", "install", host, "--server"]).run();
        assert_eq!(out.code, 1, "{host} {want}: {out:?}");
        assert!(out.stderr.contains(&p.display().to_string()) && out.stderr.contains(want), "{host}: {}", out.stderr);
        assert!(out.stderr.contains("nothing written"), "{}", out.stderr);
        assert_eq!(fs::read(&p).unwrap(), *bytes, "{host}: byte for byte");
        assert!(!backup(&p).exists(), "{host}: no backup");
        let hooks = sb.hooks_file(host);
        assert!(!hooks.exists(), "{host}: refused whole, the hooks were not written either");
        let un = sb.cmd(["hooks", "uninstall", host]).run();
        assert_eq!(fs::read(&p).unwrap(), *bytes, "{host}: uninstall leaves it too ({un:?})");
    }
}

#[test]
fn a_backup_is_made_the_first_time_only() {
    let sb = Sandbox::new();
    sb.host_dir("claude-code");
    let p = sb.server_file("claude-code");
    let original = "{\"numStartups\": 1}";
    fs::write(&p, original).unwrap();
    let out = install(&sb, "claude-code");
    assert!(out.stdout.contains(".claude.json.leanctx.bak"), "{}", out.stdout);
    assert_eq!(fs::read_to_string(backup(&p)).unwrap(), original);
    uninstall(&sb, "claude-code");
    fs::write(&p, "{\"numStartups\": 2}").unwrap();
    install(&sb, "claude-code");
    assert_eq!(fs::read_to_string(backup(&p)).unwrap(), original, "never overwritten");
}

#[cfg(unix)] // file modes
#[test]
fn the_files_mode_is_kept_and_the_backup_gets_it_too() {
    let sb = Sandbox::new();
    sb.host_dir("claude-code");
    let p = sb.server_file("claude-code");
    fs::write(&p, "{\"primaryApiKey\": \"not-a-real-key\"}").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
    install(&sb, "claude-code");
    assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o7777, 0o600);
    assert_eq!(fs::metadata(backup(&p)).unwrap().permissions().mode() & 0o7777, 0o600);
}

#[test]
fn dry_run_shows_the_change_and_writes_nothing() {
    let sb = Sandbox::new();
    sb.host_dir("codex");
    let p = sb.server_file("codex");
    let text = "model = \"x\"\n";
    fs::write(&p, text).unwrap();
    let out = sb.cmd(["hooks", "install", "codex", "--server", "--dry-run"]).ok();
    assert!(out.stdout.contains(&format!("--- {}", p.display())), "{}", out.stdout);
    assert!(out.stdout.contains("+[mcp_servers.leanctx]\n"), "{}", out.stdout);
    // A TOML string Codex reads back as the path: basic on Unix; on
    // Windows a literal string, so the backslashes are not escapes.
    let quoted = if cfg!(windows) { format!("'{}'", bin()) } else { format!("\"{}\"", bin()) };
    assert!(out.stdout.contains(&format!("+command = {quoted}\n")), "{}", out.stdout);
    assert_eq!(fs::read_to_string(&p).unwrap(), text);
    assert!(!backup(&p).exists());
    install(&sb, "codex");
    let installed = fs::read(&p).unwrap();
    let out = sb.cmd(["hooks", "uninstall", "codex", "--dry-run"]).ok();
    assert!(out.stdout.contains("-[mcp_servers.leanctx]\n"), "{}", out.stdout);
    assert_eq!(fs::read(&p).unwrap(), installed);
}

#[cfg(unix)] // symlinks
#[test]
fn a_symlinked_server_file_is_written_through_to_its_target() {
    let sb = Sandbox::new();
    sb.host_dir("cursor");
    let dotfiles = sb.home.join("dotfiles");
    fs::create_dir_all(&dotfiles).unwrap();
    let real = dotfiles.join("mcp.json");
    fs::write(&real, "{\"mcpServers\": {\"d\": {\"url\": \"http://d\"}}}\n").unwrap();
    let link = sb.server_file("cursor");
    symlink("../dotfiles/mcp.json", &link).unwrap();
    let out = install(&sb, "cursor");
    assert!(out.stdout.contains("symlink"), "{}", out.stdout);
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
    assert!(entry(&sb, "cursor").is_some());
    assert_eq!(fs::read_dir(&dotfiles).unwrap().count(), 1, "nothing left beside the target");
    uninstall(&sb, "cursor");
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(
        fs::read_to_string(&real).unwrap(),
        "{\"mcpServers\": {\"d\": {\"url\": \"http://d\"}}}\n",
        "given back through the link"
    );
}

#[cfg(unix)] // symlinks make two hosts' files one
#[test]
fn concurrent_edits_of_one_file_lose_nothing() {
    // Claude Code's hooks file and Cursor's MCP file made one file: the
    // hook installs write `hooks`, the server installs `mcpServers`, each
    // a read-modify-write; without the lock one would drop the other's.
    let sb = Sandbox::new();
    sb.host_dir("cursor");
    sb.host_dir("claude-code");
    let shared = sb.server_file("cursor");
    symlink(&shared, sb.home.join(".claude/settings.json")).unwrap();
    for round in 0..6 {
        fs::write(&shared, "{\"mcpServers\": {\"docs\": {\"command\": \"d\"}}, \"z\": 1}\n").unwrap();
        let children: Vec<_> = (0..8)
            .map(|i| {
                if i % 2 == 0 {
                    sb.cmd(["hooks", "install", "claude-code", "--no-server"]).spawn()
                } else {
                    sb.cmd(["hooks", "install", "cursor", "--server"]).spawn()
                }
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "round {round}: {}", String::from_utf8_lossy(&o.stderr));
        }
        let v: Value = serde_json::from_str(&fs::read_to_string(&shared).unwrap()).unwrap();
        assert_eq!(v["hooks"].as_object().map(|h| h.len()), Some(10), "round {round}: {v:#}");
        assert_eq!(v["mcpServers"]["leanctx"]["args"], json!(["serve"]), "round {round}: {v:#}");
        assert_eq!(v["mcpServers"]["docs"]["command"], "d");
        let names: Vec<String> = fs::read_dir(sb.home.join(".cursor"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.starts_with(".tmp")), "no temp litter: {names:?}");
    }
}

#[test]
fn status_says_registered_and_whether_the_server_was_called() {
    let sb = Sandbox::new();
    sb.host_dir("claude-code");
    let st = sb.cmd(["hooks", "status", "claude-code", "--json"]).ok().json();
    assert_eq!(st["hosts"][0]["server"]["state"], "absent", "{st:#}");
    install(&sb, "claude-code");
    let st = sb.cmd(["hooks", "status", "claude-code", "--json"]).ok().json();
    let s = &st["hosts"][0]["server"];
    assert_eq!(s["state"], "installed", "{st:#}");
    assert_eq!(s["names"], json!(["leanctx"]));
    assert_eq!(s["path"], sb.server_file("claude-code").to_str().unwrap());
    assert!(s["last_call_ms"].is_null(), "{st:#}");
    let plain = sb.cmd(["hooks", "status", "claude-code"]).ok().stdout;
    assert!(plain.contains("MCP server  registered in") && plain.contains("never called"), "{plain}");
    // `leanctx status` says it too, under each host that is set up.
    let st = sb.cmd(["status", "--json"]).run().json();
    let claude = st["host_states"].as_array().unwrap().iter().find(|h| h["host"] == "claude-code").unwrap().clone();
    assert_eq!(claude["server"]["state"], "installed", "{st:#}");
    let plain = sb.cmd(["status"]).run().stdout;
    assert!(plain.contains("\n  MCP server registered in") && plain.contains("never called"), "{plain}");

    // A call to the registered server, as Claude Code's PreToolUse hook records it.
    let pre = json!({
        "session_id": "0b6f5f7e-1d0c-4b59-9d0e-2f3c4a5b6c7d", "transcript_path": "/t.jsonl", "cwd": "/p",
        "hook_event_name": "PreToolUse", "tool_name": "mcp__leanctx__read",
        "tool_input": {"path": "a.rs"}, "tool_use_id": "toolu_01"
    });
    sb.hook("claude-code", pre.to_string()).env("LEAN_CTX_NOW_MS", "1800000000000").ok();
    let st = sb.cmd(["hooks", "status", "claude-code", "--json"]).env("LEAN_CTX_NOW_MS", "1800000060000").ok().json();
    assert_eq!(st["hosts"][0]["server"]["last_call_ms"], 1_800_000_000_000u64, "{st:#}");
    let plain = sb.cmd(["hooks", "status", "claude-code"]).env("LEAN_CTX_NOW_MS", "1800000060000").ok().stdout;
    assert!(plain.contains("last called 60 s ago"), "{plain}");

    // Another server's calls are not ours.
    let sb2 = Sandbox::new();
    sb2.host_dir("claude-code");
    install(&sb2, "claude-code");
    let other = json!({
        "session_id": "0b6f5f7e-1d0c-4b59-9d0e-2f3c4a5b6c7d", "transcript_path": "/t.jsonl", "cwd": "/p",
        "hook_event_name": "PreToolUse", "tool_name": "mcp__lean-ctx__ctx_read",
        "tool_input": {"path": "a.rs"}, "tool_use_id": "toolu_02"
    });
    sb2.hook("claude-code", other.to_string()).ok();
    let st = sb2.cmd(["hooks", "status", "claude-code", "--json"]).ok().json();
    assert!(st["hosts"][0]["server"]["last_call_ms"].is_null(), "{st:#}");
}
