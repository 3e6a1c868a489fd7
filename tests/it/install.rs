//! Installer tests (hooks install/uninstall/status) through the real binary,
//! in a sandbox HOME: every safety case of issue 4 item 3, the host caveats
//! of item 4 and installers/install.sh (item 5).

use crate::support::{BIN, HOSTS, Out, Sandbox, backup_of, payload};
#[cfg(unix)] // used by Unix-only tests
use leanctx::state::journal::Record;
use serde_json::{Value, json};
use std::fs;
#[cfg(unix)]
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::process::{Command, Stdio};

/// The user hooks config of a host in the sandbox, its dir created.
fn with_dir(sb: &Sandbox, host: &str) -> PathBuf {
    let c = sb.hooks_file(host);
    fs::create_dir_all(c.parent().unwrap()).unwrap();
    c
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap()
}

fn canonical_bin() -> String {
    // As the installer writes it (on Windows: forward slashes, no `\\?\`).
    leanctx::install::command::program_word(fs::canonicalize(BIN).unwrap().to_str().unwrap()).unwrap()
}

/// Every `command` string anywhere in a config.
fn commands(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("command", Value::String(s)) => out.push(s.clone()),
                        _ => walk(x, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}

/// Our commands for `host` (recognition itself is unit-tested in
/// src/install/command.rs; tests below also check exact strings).
fn ours(v: &Value, host: &str) -> Vec<String> {
    commands(v)
        .into_iter()
        .filter(|c| leanctx::install::command::parse_ours(c).is_some_and(|o| o.host.as_str() == host))
        .collect()
}

fn expected_entries(host: &str) -> usize {
    if host == "cursor" { 9 } else { 10 }
}

/// A config full of someone else's things, in the host's shape.
fn foreign(host: &str) -> Value {
    if host == "cursor" {
        json!({
            "version": 1,
            "zeta": {"keep": [1, 2.5, null]},
            "hooks": {
                "stop": [{"command": "say done", "loop_limit": 3}],
                "beforeShellExecution": [{"command": "/usr/bin/guard --strict", "matcher": "rm", "failClosed": true}],
                "sessionStart": [{"command": "/home/leanctx/bin/tool hook cursor"}]
            },
            "alpha": "last"
        })
    } else {
        let h = |c: &str| json!({"type": "command", "command": c, "timeout": 30});
        json!({
            "zeta": {"keep": [1, 2.5, null]},
            "permissions": {"allow": ["Bash(ls)"], "deny": []},
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [h("check-bash"), h("lean-ctx hook rewrite")]}],
                "Stop": [{"hooks": [h("notify-send done")]}],
                "Notification": [{"matcher": "", "hooks": [h("/home/leanctx/bin/tool hook claude-code")]}]
            },
            "alpha": "last"
        })
    }
}

fn write_json(p: &Path, v: &Value) {
    fs::write(p, serde_json::to_string_pretty(v).unwrap() + "\n").unwrap();
}

/// Hooks only: the MCP server's registration has its own tests
/// (tests/it/serverinstall.rs).
fn install(sb: &Sandbox, host: &str) -> Out {
    sb.cmd(["hooks", "install", host, "--no-server"]).ok()
}

/// Files in a dir other than the ones named (no temp or lock litter).
fn litter(dir: &Path, allowed: &[&str]) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !allowed.contains(&n.as_str()))
        .collect()
}

#[test]
fn reinstall_is_idempotent_and_writes_nothing() {
    let sb = Sandbox::new();
    for host in HOSTS {
        let p = with_dir(&sb, host);
        let first = install(&sb, host);
        assert!(first.stdout.contains("added"), "{}", first.stdout);
        if host == "codex" {
            assert!(first.stdout.contains("trust") && first.stdout.contains("/hooks"), "{}", first.stdout);
        }
        let v = read_json(&p);
        assert_eq!(ours(&v, host).len(), expected_entries(host), "{host}: {v:#}");
        let bytes = fs::read(&p).unwrap();
        let ino = crate::support::file_identity(&p);
        let again = install(&sb, host);
        assert!(again.stdout.contains("already up to date"), "{}", again.stdout);
        assert_eq!(fs::read(&p).unwrap(), bytes, "{host}");
        assert_eq!(crate::support::file_identity(&p), ino, "{host}: the file was not even replaced");
        let name = p.file_name().unwrap().to_str().unwrap();
        assert_eq!(litter(p.parent().unwrap(), &[name]), Vec::<String>::new(), "{host}: a new file gets no backup");
        // Cursor's events whose answer is not `{}` name themselves
        // (tests/it/hook_failopen.rs checks which).
        let base = format!("{} hook {host}", canonical_bin());
        for c in ours(&v, host) {
            let rest = c.strip_prefix(&base).unwrap_or_else(|| panic!("{c}"));
            assert!(rest.is_empty() || (host == "cursor" && rest.starts_with(" --event ")), "{c}");
        }
    }
}

#[test]
fn an_outdated_entry_is_upgraded_in_place_never_duplicated() {
    let sb = Sandbox::new();
    let p = with_dir(&sb, "claude-code");
    let old = |c: &str| json!({"type": "command", "command": c, "timeout": 60});
    write_json(
        &p,
        &json!({"hooks": {
            "Stop": [
                {"hooks": [old("notify-send done")]},
                {"hooks": [old("/old/place/leanctx hook claude-code")]},
                {"hooks": [old("'/older place/leanctx' hook claude")]}
            ],
            "PreToolUse": [{"matcher": "*", "hooks": [old("/old/place/leanctx hook claude-code")]}],
            "PostToolUse": [{"hooks": [old("/old/place/leanctx hook claude-code"), old("fmt")]}]
        }}),
    );
    let out = install(&sb, "claude-code");
    assert!(out.stdout.contains("updated") && out.stdout.contains("removed 1 (PostToolUse)"), "{}", out.stdout);
    let v = read_json(&p);
    let ours_now = ours(&v, "claude-code");
    assert_eq!(ours_now.len(), 10, "{v:#}");
    assert!(ours_now.iter().all(|c| c.starts_with(&canonical_bin())), "{ours_now:?}");
    let stop = v["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop.len(), 2);
    assert_eq!(stop[0]["hooks"][0]["command"], "notify-send done");
    assert_eq!(stop[1]["hooks"][0]["timeout"], 5, "upgraded where it was");
    assert_eq!(v["hooks"]["PreToolUse"].as_array().unwrap().len(), 1);
    assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "mcp__.*");
    assert_eq!(v["hooks"]["PostToolUse"], json!([{"hooks": [old("fmt")]}]));
}

#[cfg(unix)] // a symlinked binary
#[test]
fn codex_entries_keep_their_positions_on_reinstall() {
    // Codex keys trust by (event, group index, handler index).
    let sb = Sandbox::new();
    let p = with_dir(&sb, "codex");
    let h = |c: &str| json!({"type": "command", "command": c});
    write_json(&p, &json!({"hooks": {"Stop": [{"hooks": [h("first")]}]}}));
    install(&sb, "codex");
    let mut v = read_json(&p);
    v["hooks"]["Stop"].as_array_mut().unwrap().push(json!({"hooks": [h("added later")]}));
    write_json(&p, &v);
    let moved = sb.tmp.path().join("moved");
    fs::create_dir(&moved).unwrap();
    symlink(BIN, moved.join("leanctx")).unwrap();
    sb.cmd(["hooks", "install", "codex"]).env("LEANCTX_HOOK_BINARY", moved.join("leanctx")).ok();
    let after = read_json(&p);
    let stop = after["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop.len(), 3);
    assert_eq!(stop[0]["hooks"][0]["command"], "first");
    assert_eq!(stop[1]["hooks"][0]["command"], format!("{} hook codex", moved.join("leanctx").display()));
    assert_eq!(stop[2]["hooks"][0]["command"], "added later");
}

#[test]
fn foreign_hooks_unknown_keys_and_key_order_survive() {
    let sb = Sandbox::new();
    for host in HOSTS {
        let p = with_dir(&sb, host);
        let before = foreign(host);
        write_json(&p, &before);
        install(&sb, host);
        let after = read_json(&p);
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&after), keys(&before), "{host}: top-level keys and their order");
        for (k, v) in before.as_object().unwrap() {
            if k != "hooks" {
                assert_eq!(&after[k], v, "{host}: {k}");
            }
        }
        let (bh, ah) = (before["hooks"].as_object().unwrap(), after["hooks"].as_object().unwrap());
        let event_keys: Vec<_> = ah.keys().take(bh.len()).collect();
        assert_eq!(event_keys, bh.keys().collect::<Vec<_>>(), "{host}: events already there keep their order");
        for (ev, arr) in bh {
            let now = ah[ev].as_array().unwrap();
            let old = arr.as_array().unwrap();
            assert_eq!(&now[..old.len()], &old[..], "{host} {ev}: foreign entries untouched and first");
        }
        assert_eq!(ours(&after, host).len(), expected_entries(host), "{host}");
    }
}

#[cfg(unix)] // Unix path text in messages
#[test]
fn unparseable_files_are_refused_with_position_and_left_byte_for_byte() {
    let sb = Sandbox::new();
    let cases: &[(&str, &[u8], &str)] = &[
        ("claude-code", b"{\n  \"model\": \"x\",\n  \"hooks\": {\n}\n", ":5:1: not valid JSON: EOF"),
        ("codex", b"{\n  \"hooks\": {},\n}\n", ":3:1"),
        ("cursor", b"{\n  \"version\": 1, // mine\n  \"hooks\": {}\n}\n", ":2:17"),
        ("codebuddy", b"{\"hooks\": {}, \"hooks\": {\"Stop\": []}}", "duplicate key"),
        ("claude-code", b"{\"a\": \"\xff\"}", ":1:8"),
        ("codex", b"\xef\xbb\xbf{\n  \"hooks\": []\n}", ":2:12: \"hooks\" is an array"),
    ];
    for (host, bytes, want) in cases {
        let p = with_dir(&sb, host);
        fs::write(&p, bytes).unwrap();
        let out = sb.cmd(["hooks", "install", host]).run();
        assert_eq!(out.code, 1, "{host} {want}: {out:?}");
        let shown = p.display().to_string();
        assert!(out.stderr.contains(&shown) && out.stderr.contains(want), "{host} {want}: {}", out.stderr);
        assert!(out.stderr.contains("nothing written"), "{}", out.stderr);
        assert_eq!(fs::read(&p).unwrap(), *bytes, "{host}: byte for byte");
        let name = p.file_name().unwrap().to_str().unwrap();
        assert_eq!(litter(p.parent().unwrap(), &[name]), Vec::<String>::new(), "{host}: no backup, no temp");
        let un = sb.cmd(["hooks", "uninstall", host]).run();
        assert_eq!(un.code, 1, "uninstall refuses too: {un:?}");
        assert_eq!(fs::read(&p).unwrap(), *bytes);
    }
}

#[test]
fn wrong_shapes_are_refused_with_position_and_left_byte_for_byte() {
    let sb = Sandbox::new();
    let cases: &[(&str, &str, &str)] = &[
        (
            "claude-code",
            "{\n  \"model\": \"x\",\n  \"hooks\": [\n  ]\n}\n",
            "settings.json:3:12: \"hooks\" is an array",
        ),
        ("codex", "{\"hooks\": {\"Stop\": {\"hooks\": []}}}", "hooks.json:1:20: \"hooks.Stop\" is an object"),
        ("cursor", "{\"version\": 1, \"hooks\": {\"stop\": \"x\"}}", "hooks.json:1:34: \"hooks.stop\" is a string"),
        ("codebuddy", "[1, 2]\n", "settings.json:1:1: the top level is an array"),
    ];
    for (host, text, want) in cases {
        let p = with_dir(&sb, host);
        fs::write(&p, text).unwrap();
        let out = sb.cmd(["hooks", "install", host]).run();
        assert_eq!(out.code, 1, "{out:?}");
        assert!(out.stderr.contains(want), "{host}: want {want:?} in {}", out.stderr);
        assert_eq!(fs::read_to_string(&p).unwrap(), *text);
        assert!(!backup_of(&p).exists());
    }
}

#[cfg(unix)] // file modes
#[test]
fn the_files_mode_is_kept() {
    let sb = Sandbox::new();
    let p = with_dir(&sb, "claude-code");
    write_json(&p, &json!({"env": {"SECRET": "x"}}));
    fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
    install(&sb, "claude-code");
    assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o7777, 0o640);
    assert_eq!(fs::metadata(backup_of(&p)).unwrap().permissions().mode() & 0o7777, 0o640, "backup too");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
    sb.cmd(["hooks", "uninstall", "claude-code"]).ok();
    assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o7777, 0o600);
}

#[cfg(unix)] // symlinks, file modes
#[test]
fn a_symlinked_config_is_written_through_to_its_target() {
    let sb = Sandbox::new();
    let dotfiles = sb.home.join("dotfiles/claude");
    fs::create_dir_all(&dotfiles).unwrap();
    let real = dotfiles.join("settings.json");
    write_json(&real, &json!({"model": "x"}));
    fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
    fs::create_dir_all(sb.home.join(".claude")).unwrap();
    let link = sb.hooks_file("claude-code");
    symlink("../dotfiles/claude/settings.json", &link).unwrap();
    let out = install(&sb, "claude-code");
    assert!(out.stdout.contains("symlink"), "{}", out.stdout);
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
    assert_eq!(fs::read_link(&link).unwrap(), Path::new("../dotfiles/claude/settings.json"));
    let v = read_json(&real);
    assert_eq!(v["model"], "x");
    assert_eq!(ours(&v, "claude-code").len(), 10);
    assert_eq!(fs::metadata(&real).unwrap().permissions().mode() & 0o7777, 0o600);
    assert_eq!(litter(&dotfiles, &["settings.json"]), Vec::<String>::new(), "nothing left in the dotfiles repo");
    assert!(backup_of(&link).is_file(), "the backup sits beside the path the user knows");
}

#[test]
fn a_backup_is_made_the_first_time_only() {
    let sb = Sandbox::new();
    let p = with_dir(&sb, "cursor");
    let original = "{\"version\": 1, \"hooks\": {\"stop\": [{\"command\": \"a\"}]}}";
    fs::write(&p, original).unwrap();
    let out = install(&sb, "cursor");
    assert!(out.stdout.contains(".leanctx.bak"), "{}", out.stdout);
    let bak = backup_of(&p);
    assert_eq!(fs::read_to_string(&bak).unwrap(), original);
    sb.cmd(["hooks", "uninstall", "cursor"]).ok();
    install(&sb, "cursor");
    assert_eq!(fs::read_to_string(&bak).unwrap(), original, "never overwritten");
}

#[test]
fn concurrent_installs_lose_nothing() {
    // Claude Code and CodeBuddy pointed at one settings.json: each install
    // rewrites the file with its own entries, so without the lock one
    // process's read-modify-write would drop the other's entries.
    let sb = Sandbox::new();
    let shared = sb.home.join("shared");
    fs::create_dir_all(&shared).unwrap();
    let p = shared.join("settings.json");
    for round in 0..10 {
        write_json(&p, &foreign("claude-code"));
        let children: Vec<_> = (0..8)
            .map(|i| {
                let host = if i % 2 == 0 { "claude-code" } else { "codebuddy" };
                sb.cmd(["hooks", "install", host, "--no-server"])
                    .env("CLAUDE_CONFIG_DIR", &shared)
                    .env("CODEBUDDY_CONFIG_DIR", &shared)
                    .spawn()
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "round {round}: {}", String::from_utf8_lossy(&o.stderr));
        }
        let v = read_json(&p);
        assert_eq!(ours(&v, "claude-code").len(), 10, "round {round}: {v:#}");
        assert_eq!(ours(&v, "codebuddy").len(), 10, "round {round}: {v:#}");
        assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["command"], "notify-send done");
        assert_eq!(v["alpha"], "last");
        assert_eq!(litter(&shared, &["settings.json", "settings.json.leanctx.bak"]), Vec::<String>::new());
    }
}

#[cfg(unix)] // Unix path text in the diff
#[test]
fn dry_run_shows_the_change_and_writes_nothing() {
    let sb = Sandbox::new();
    let p = with_dir(&sb, "claude-code");
    let text = "{\n  \"model\": \"x\"\n}\n";
    fs::write(&p, text).unwrap();
    let out = sb.cmd(["hooks", "install", "claude-code", "--dry-run"]).ok();
    assert!(out.stdout.contains(&format!("--- {}", p.display())), "{}", out.stdout);
    assert!(out.stdout.contains("+  \"hooks\": {"), "{}", out.stdout);
    assert!(out.stdout.contains(&format!("\"command\": \"{} hook claude-code\"", canonical_bin())), "{}", out.stdout);
    assert!(out.stdout.contains("dry run: nothing written"), "{}", out.stdout);
    assert_eq!(fs::read_to_string(&p).unwrap(), text);
    assert_eq!(litter(p.parent().unwrap(), &["settings.json"]), Vec::<String>::new());

    // A missing dir is not created by a dry run, even with --create.
    let out = sb.cmd(["hooks", "install", "codex", "--create", "--dry-run"]).ok();
    assert!(out.stdout.contains("would create") && out.stdout.contains("--- /dev/null"), "{}", out.stdout);
    assert!(!sb.home.join(".codex").exists());

    install(&sb, "claude-code");
    let installed = fs::read(&p).unwrap();
    let out = sb.cmd(["hooks", "uninstall", "claude-code", "--dry-run"]).ok();
    assert!(out.stdout.contains("\n-            \"type\": \"command\",\n"), "{}", out.stdout);
    assert_eq!(fs::read(&p).unwrap(), installed);
}

#[test]
fn install_then_uninstall_gives_back_an_equivalent_file() {
    let sb = Sandbox::new();
    for host in HOSTS {
        let p = with_dir(&sb, host);
        let text = serde_json::to_string_pretty(&foreign(host)).unwrap() + "\n";
        fs::write(&p, &text).unwrap();
        install(&sb, host);
        let out = sb.cmd(["hooks", "uninstall", host]).ok();
        assert!(out.stdout.contains(&format!("removed {}", expected_entries(host))), "{}", out.stdout);
        assert_eq!(fs::read_to_string(&p).unwrap(), text, "{host}: same value, key order and layout");
        let again = sb.cmd(["hooks", "uninstall", host]).ok();
        assert!(again.stdout.contains("no leanctx entries; nothing written"), "{}", again.stdout);
    }
    // A 4-space, no-final-newline file keeps its layout too, and an empty
    // array the user wrote (in an event we do not register) stays.
    let p = sb.hooks_file("codex");
    let text = "{\n    \"hooks\": {\n        \"Notification\": [],\n        \"Stop\": [\n            {\n                \"hooks\": [\n                    {\n                        \"type\": \"command\",\n                        \"command\": \"x\"\n                    }\n                ]\n            }\n        ]\n    }\n}";
    fs::write(&p, text).unwrap();
    install(&sb, "codex");
    assert_ne!(fs::read_to_string(&p).unwrap(), text);
    sb.cmd(["hooks", "uninstall", "codex"]).ok();
    assert_eq!(fs::read_to_string(&p).unwrap(), text);
}

#[test]
fn entries_are_recognised_by_program_not_by_substring() {
    let sb = Sandbox::new();
    let p = with_dir(&sb, "claude-code");
    let before = foreign("claude-code");
    write_json(&p, &before);
    install(&sb, "claude-code");
    let v = read_json(&p);
    let all = commands(&v);
    assert!(all.contains(&"/home/leanctx/bin/tool hook claude-code".to_string()));
    assert!(all.contains(&"lean-ctx hook rewrite".to_string()));
    assert_eq!(ours(&v, "claude-code").iter().filter(|c| c.starts_with(&canonical_bin())).count(), 10);
    sb.cmd(["hooks", "uninstall", "claude-code"]).ok();
    assert_eq!(read_json(&p), before);
}

#[test]
fn a_missing_config_dir_is_created_only_when_asked() {
    let sb = Sandbox::new();
    let out = sb.cmd(["hooks", "install", "claude-code"]).run();
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("does not look installed") && out.stderr.contains("--create"), "{}", out.stderr);
    assert!(!sb.home.join(".claude").exists());

    let out = sb.cmd(["hooks", "install", "cursor", "--if-present"]).ok();
    assert!(out.stdout.contains("skipped"), "{}", out.stdout);
    assert!(!sb.home.join(".cursor").exists());

    sb.cmd(["hooks", "install", "cursor", "--create"]).ok();
    assert_eq!(ours(&read_json(&sb.hooks_file("cursor")), "cursor").len(), 9);

    // A project is an explicit request: its .claude/ is created.
    let out = sb.cmd(["hooks", "install", "claude-code", "--project", ".", "--local"]).ok();
    let local = sb.project.join(".claude/settings.local.json");
    assert!(out.stdout.contains("project"), "{}", out.stdout);
    assert_eq!(ours(&read_json(&local), "claude-code").len(), 10);
    assert!(!sb.project.join(".claude/settings.json").exists());
    sb.cmd(["hooks", "install", "codex", "--project", sb.project.to_str().unwrap()]).ok();
    assert_eq!(ours(&read_json(&sb.project.join(".codex/hooks.json")), "codex").len(), 10);

    let out = sb.cmd(["hooks", "install", "codex", "--project", "/nonexistent/x"]).run();
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("does not exist"), "{}", out.stderr);
    let out = sb.cmd(["hooks", "install", "codex", "--project", ".", "--local"]).run();
    assert_eq!(out.code, 1, "codex has no local file");
    let out = sb.cmd(["hooks", "install", "claude-code", "--local"]).run();
    assert_eq!(out.code, 2, "--local needs --project: a usage error");
    assert!(out.stderr.contains("--project"), "{}", out.stderr);

    // Uninstall where nothing is: fine, and creates nothing.
    let out = sb.cmd(["hooks", "uninstall", "codebuddy"]).ok();
    assert!(out.stdout.contains("nothing to remove"), "{}", out.stdout);
    assert!(!sb.home.join(".codebuddy").exists());
}

/// Run a command string the way a host does, with a payload on stdin.
#[cfg(unix)] // sh -c
fn run_through_shell(shell: &str, cmd: &str, sb: &Sandbox, stdin: &str) -> std::process::Output {
    let mut c = Command::new(shell);
    c.arg("-c").arg(cmd).env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
    c.env("HOME", &sb.home).env("LEAN_CTX_DATA_DIR", &sb.data).current_dir(&sb.project);
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[cfg(unix)] // sh and bash
#[test]
fn the_written_command_runs_through_sh_and_bash_from_a_path_with_spaces_and_quotes() {
    let sb = Sandbox::new();
    let dir = sb.tmp.path().join("it's a \"dir\" $HOME/bin dir");
    fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("leanctx");
    symlink(BIN, &bin).unwrap();
    let session = "68bfdc56-c5ac-4f7e-b000-18c5bbb6c9d7";
    let cases = [
        ("claude-code", "SessionStart", payload("claude/baseline/01-SessionStart.json")),
        ("codex", "SessionStart", payload("codex/baseline/01-SessionStart.json")),
        ("cursor", "sessionStart", payload("cursor/composed/01-sessionStart.json")),
        ("codebuddy", "SessionStart", payload("codebuddy/composed/01-SessionStart.json")),
    ];
    for (host, event, input) in cases {
        let p = with_dir(&sb, host);
        sb.cmd(["hooks", "install", host]).env("LEANCTX_HOOK_BINARY", &bin).ok();
        let v = read_json(&p);
        let cmd = ours(&v, host).into_iter().next().expect("an entry");
        assert!(cmd.starts_with('\''), "quoted: {cmd}");
        for shell in ["sh", "bash"] {
            let before = sb.journal().lines().count();
            let o = run_through_shell(shell, &cmd, &sb, &input);
            assert!(o.status.success(), "{shell} -c {cmd}: {}", String::from_utf8_lossy(&o.stderr));
            let journal = sb.journal();
            assert!(journal.lines().count() > before, "{host} via {shell}: nothing recorded\n{journal}");
            assert!(journal.lines().last().unwrap().contains(event), "{journal}");
        }
    }
    assert!(sb.journal().contains(session));
}

#[test]
fn status_reports_installed_never_fired_and_the_last_event() {
    let sb = Sandbox::new();
    with_dir(&sb, "codex");
    install(&sb, "codex");
    let st = sb.cmd(["hooks", "status", "codex", "--json"]).ok().json();
    let codex = &st["hosts"][0];
    assert_eq!(codex["host"], "codex");
    assert_eq!(codex["installed"], true);
    assert_eq!(codex["files"][0]["state"], "installed");
    assert_eq!(codex["files"][0]["entries"], 10);
    assert_eq!(codex["files"][0]["programs"][0], canonical_bin());
    assert!(codex["last_event"].is_null());
    // Just installed: waiting for its first event, a note.
    assert_eq!(codex["state"], "waiting");
    assert_eq!(codex["warnings"], json!([]), "{codex:#}");
    assert!(codex["notes"].to_string().contains("waiting for the first event"), "{codex:#}");
    // Two days on and still silent: a problem.
    let later = (leanctx::base::clock::now_ms() + 2 * 86_400_000).to_string();
    let st = sb.cmd(["hooks", "status", "codex", "--json"]).env("LEAN_CTX_NOW_MS", &later).ok().json();
    let codex = &st["hosts"][0];
    assert_eq!(codex["state"], "never-fired");
    let warnings = codex["warnings"].to_string();
    assert!(warnings.contains("installed 2 days ago and never fired") && warnings.contains("/hooks"), "{warnings}");
    let human = sb.cmd(["hooks", "status", "codex"]).env("LEAN_CTX_NOW_MS", &later).ok().stdout;
    assert!(human.contains("and never fired") && human.contains("trust"), "{human}");

    sb.hook("codex", payload("codex/baseline/01-SessionStart.json")).ok();
    let st = sb.cmd(["hooks", "status", "--json"]).ok().json();
    assert_eq!(st["hosts"].as_array().unwrap().len(), 4);
    let codex = st["hosts"].as_array().unwrap().iter().find(|h| h["host"] == "codex").unwrap().clone();
    assert_eq!(codex["last_event"]["event"], "SessionStart");
    assert!(!codex["warnings"].to_string().contains("never fired"), "{codex:#}");
    let claude = st["hosts"].as_array().unwrap().iter().find(|h| h["host"] == "claude-code").unwrap().clone();
    assert_eq!(claude["installed"], false);
    assert_eq!(claude["files"][0]["state"], "absent");

    // An entry of ours someone edited reads as outdated.
    let p = sb.hooks_file("codex");
    let text = fs::read_to_string(&p).unwrap().replacen("\"timeout\": 5", "\"timeout\": 50", 1);
    fs::write(&p, text).unwrap();
    let st = sb.cmd(["hooks", "status", "codex", "--json"]).ok().json();
    assert_eq!(st["hosts"][0]["files"][0]["state"], "outdated");
    assert!(st["hosts"][0]["warnings"].to_string().contains("outdated"));

    // Hooks switched off in config.toml are reported.
    fs::write(sb.home.join(".codex/config.toml"), "[features]\nhooks = false\n").unwrap();
    let st = sb.cmd(["hooks", "status", "codex", "--json"]).ok().json();
    assert!(st["hosts"][0]["warnings"].to_string().contains("hooks = false"));

    // A project file in the current dir is shown beside the user file.
    sb.cmd(["hooks", "install", "codex", "--project", "."]).ok();
    let st = sb.cmd(["hooks", "status", "codex", "--json"]).ok().json();
    let files = st["hosts"][0]["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files[1]["scope"].as_str().unwrap().starts_with("project"));
}

#[cfg(unix)] // sh -c
#[test]
fn cursor_running_claude_hooks_counts_one_conversation_not_two() {
    // Cursor with third-party configs on runs ~/.claude/settings.json too:
    // one Cursor event reaches both entries, with Cursor's payload.
    let sb = Sandbox::new();
    let cursor_cfg = with_dir(&sb, "cursor");
    let claude_cfg = with_dir(&sb, "claude-code");
    install(&sb, "cursor");
    let out = install(&sb, "claude-code");
    assert!(out.stdout.contains("third-party"), "install tells: {}", out.stdout);
    let cursor_cmd = ours(&read_json(&cursor_cfg), "cursor").remove(0);
    let claude_cmd = ours(&read_json(&claude_cfg), "claude-code").remove(0);
    let start = payload("cursor/composed/01-sessionStart.json");
    // Whether Cursor passes its own event name or Claude's to a Claude hook
    // is not documented: try both.
    let renamed = start.replace("\"sessionStart\"", "\"SessionStart\"");
    for (cmd, input) in [(&cursor_cmd, &start), (&claude_cmd, &start), (&claude_cmd, &renamed)] {
        let o = run_through_shell("sh", cmd, &sb, input);
        assert!(o.status.success());
    }
    let st = sb.cmd(["status", "--json"]).report().json();
    let live = st["live"].as_array().unwrap();
    let mut convs: Vec<&str> = live.iter().map(|l| l["conversation"].as_str().unwrap()).collect();
    convs.dedup();
    assert_eq!(convs, ["0e1f4ed8-d858-4557-9fc5-6cbf5298eb8b"], "{st:#}");
    assert_eq!(st["concurrent"], false, "{st:#}");
    // The claude-code entry stood aside: the event is Cursor's, recorded once.
    let hosts: Vec<&str> = st["hosts"].as_array().unwrap().iter().map(|h| h["host"].as_str().unwrap()).collect();
    assert_eq!(hosts, ["cursor"], "{st:#}");
    assert_eq!(Sandbox::count(&sb.journal(), |r| matches!(r, Record::Sighting { .. })), 1, "one sighting, not three");
    let hs = sb.cmd(["hooks", "status", "--json"]).ok().json();
    let claude = hs["hosts"].as_array().unwrap().iter().find(|h| h["host"] == "claude-code").unwrap().clone();
    assert!(claude["notes"].to_string().contains("third-party"), "{claude:#}");
}

#[cfg(unix)] // Unix absolute paths
#[test]
fn a_binary_not_named_leanctx_is_refused() {
    let sb = Sandbox::new();
    with_dir(&sb, "codex");
    let out = sb.cmd(["hooks", "install", "codex"]).env("LEANCTX_HOOK_BINARY", "/opt/bin/lctx").run();
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("not named leanctx"), "{}", out.stderr);
    let out = sb.cmd(["hooks", "install", "codex"]).env("LEANCTX_HOOK_BINARY", "bin/leanctx").run();
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("absolute"), "{}", out.stderr);
    assert!(!sb.hooks_file("codex").exists());
}

#[cfg(windows)] // where the hosts keep their config on Windows
#[test]
fn on_windows_the_configs_are_under_the_profile_not_home() {
    // HOME (Git Bash sets one; a user may point it elsewhere) is read by no
    // host on Windows: Node's os.homedir() reads USERPROFILE (Claude Code,
    // Cursor, CodeBuddy), Codex the profile folder. The sandbox's
    // USERPROFILE is its home (support.rs).
    let sb = Sandbox::new();
    let elsewhere = sb.tmp.path().join("git-bash-home");
    fs::create_dir_all(&elsewhere).unwrap();
    for host in ["claude-code", "codex"] {
        sb.host_dir(host);
        sb.cmd(["hooks", "install", host, "--server"])
            .env("HOME", &elsewhere)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .ok();
        let st = sb
            .cmd(["hooks", "status", host, "--json"])
            .env("HOME", &elsewhere)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .ok()
            .json();
        assert_eq!(st["hosts"][0]["server"]["state"], "installed", "{host}: {st:#}");
    }
    assert!(sb.hooks_file("claude-code").is_file() && sb.hooks_file("codex").is_file());
    assert!(sb.home.join(".claude.json").is_file(), "Claude Code's MCP servers: in the profile dir");
    assert!(sb.server_file("codex").is_file());
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing under HOME");
}

// --- installers/install.sh ---------------------------------------------

#[cfg(unix)] // installers/install.sh
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("installers/install.sh")
}

/// Run install.sh with the already built binary (no cargo build).
#[cfg(unix)] // installers/install.sh
fn run_script(sb: &Sandbox, shell: &str, args: &[&str]) -> Out {
    let mut c = Command::new(shell);
    c.arg(script()).args(["--binary", BIN, "--prefix"]).arg(sb.tmp.path().join("prefix")).args(args);
    c.env_clear().env("PATH", crate::support::path_without_hosts());
    c.env("HOME", &sb.home).env("LEAN_CTX_DATA_DIR", &sb.data);
    c.env("CODEX_HOME", sb.home.join(".codex"));
    c.current_dir(&sb.project);
    let o = c.output().unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        elapsed: Default::default(),
    }
}

#[cfg(unix)] // installers/install.sh
#[test]
fn install_sh_installs_for_hosts_found_idempotently_and_uninstalls() {
    let sb = Sandbox::new();
    sb.host_dir("claude-code");
    sb.host_dir("codex");
    // An empty config dir is no host (issue 25): skipped, and said why.
    fs::create_dir_all(sb.home.join(".codebuddy")).unwrap();
    // Claude Code's own state file, where the MCP server goes: backed up.
    fs::write(sb.home.join(".claude.json"), "{\"numStartups\": 1}").unwrap();
    let installed_bin = sb.tmp.path().join("prefix/bin/leanctx");
    let want = format!("{} hook", installed_bin.display());
    for shell in ["sh", "bash"] {
        let out = run_script(&sb, shell, &[]);
        assert_eq!(out.code, 0, "{shell}: {out:?}");
        assert!(installed_bin.is_file(), "{out:?}");
        for host in ["claude-code", "codex"] {
            let v = read_json(&sb.hooks_file(host));
            let c = ours(&v, host);
            assert_eq!(c.len(), 10, "{host}");
            assert!(c.iter().all(|c| c.starts_with(&want)), "{c:?}");
        }
        assert!(!sb.home.join(".cursor").exists(), "{out:?}");
        assert!(!sb.home.join(".codebuddy/settings.json").exists(), "{out:?}");
        assert!(
            out.stdout.contains("codebuddy: codebuddy is not on PATH and") && out.stdout.contains("is empty"),
            "{out:?}"
        );
    }
    let claude = fs::read(sb.hooks_file("claude-code")).unwrap();
    let out = run_script(&sb, "sh", &[]);
    assert!(out.stdout.contains("already up to date"), "{out:?}");
    assert_eq!(fs::read(sb.hooks_file("claude-code")).unwrap(), claude);

    // Named hosts: only those (and a named host's missing dir is an error).
    let out = run_script(&sb, "sh", &["cursor"]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("--create") || out.stdout.contains("--create"), "{out:?}");

    let out = run_script(&sb, "sh", &["--uninstall"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("cargo uninstall") || out.stdout.contains("rm "), "{out:?}");
    // What stays names the backups, the MCP server file's (a dotfile in HOME) too.
    let bak = backup_of(&sb.home.join(".claude.json"));
    assert!(bak.is_file() && out.stdout.contains(&format!(": {}\n", bak.display())), "{out:?}");
    for host in ["claude-code", "codex"] {
        assert!(!sb.hooks_file(host).exists(), "{host}: the script's install created it; uninstall removes it");
    }
}

/// The build mode's link flag and its note, with `cargo` and `rustc` stood in
/// by scripts that record what install.sh asked (a real `cargo install` is
/// minutes; the flag's effect on the binary is tests/it/startup.rs's).
#[cfg(unix)] // installers/install.sh
#[test]
fn install_sh_says_when_rustflags_take_the_static_flags_place() {
    let sb = Sandbox::new();
    let tools = sb.tmp.path().join("tools");
    fs::create_dir(&tools).unwrap();
    let args_file = sb.tmp.path().join("cargo-args");
    let fake = [
        ("rustc", "#!/bin/sh\necho 'host: x86_64-unknown-linux-gnu'\n".to_string()),
        (
            "cargo",
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nroot=; prev=\nfor a; do [ \"$prev\" = --root ] && root=$a; prev=$a; done\n\
                 mkdir -p \"$root/bin\" && cp '{}' \"$root/bin/leanctx\"\n",
                args_file.display(),
                fs::canonicalize(BIN).unwrap().display()
            ),
        ),
    ];
    for (name, text) in fake {
        fs::write(tools.join(name), text).unwrap();
        fs::set_permissions(tools.join(name), fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut path = vec![tools.clone()];
    path.extend(std::env::split_paths(&crate::support::path_without_hosts()));
    let path = std::env::join_paths(path).unwrap();
    const NOTE: &str = "cargo uses it instead of the static link flag";
    // (RUSTFLAGS, CARGO_ENCODED_RUSTFLAGS, the note expected)
    let cases: [(Option<&str>, Option<&str>, bool); 6] = [
        (None, None, false),
        (Some(""), None, true), // set empty still replaces the flag (cargo's rule)
        (Some("-C opt-level=3"), None, true),
        (Some("-C target-feature=+crt-static"), None, false),
        (None, Some(""), true),
        (None, Some("-C\u{1f}target-feature=+crt-static"), false),
    ];
    for (rustflags, encoded, note) in cases {
        let _ = fs::remove_file(&args_file);
        let mut c = Command::new("sh");
        c.arg(script()).arg("--prefix").arg(sb.tmp.path().join("prefix"));
        c.env_clear().env("PATH", &path).env("HOME", &sb.home).env("LEAN_CTX_DATA_DIR", &sb.data);
        c.env("CODEX_HOME", sb.home.join(".codex")).current_dir(&sb.project);
        if let Some(v) = rustflags {
            c.env("RUSTFLAGS", v);
        }
        if let Some(v) = encoded {
            c.env("CARGO_ENCODED_RUSTFLAGS", v);
        }
        let o = c.output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        let case = format!("RUSTFLAGS={rustflags:?} CARGO_ENCODED_RUSTFLAGS={encoded:?}\n{stdout}\n{stderr}");
        assert_eq!(o.status.code(), Some(0), "{case}");
        let args = fs::read_to_string(&args_file).unwrap_or_else(|e| panic!("cargo not run ({e}): {case}"));
        let args: Vec<&str> = args.lines().collect();
        assert!(args.starts_with(&["install", "--path"]), "{args:?}");
        assert!(args.windows(2).any(|w| w == ["--target", "x86_64-unknown-linux-gnu"]), "{args:?}");
        let config = r#"target.x86_64-unknown-linux-gnu.rustflags=["-C", "target-feature=+crt-static"]"#;
        assert!(args.windows(2).any(|w| w == ["--config", config]), "{args:?}");
        assert_eq!(stdout.contains(NOTE), note, "{case}");
    }
}

#[cfg(unix)] // installers/install.sh
#[test]
fn install_sh_rejects_unknown_options() {
    let sb = Sandbox::new();
    let out = run_script(&sb, "sh", &["--frobnicate"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(!sb.tmp.path().join("prefix").exists());
}

#[cfg(unix)] // installers/install.sh
#[test]
fn install_sh_without_cargo_or_binary_says_what_is_missing() {
    // A PATH with the script's tools but no cargo.
    let sb = Sandbox::new();
    let tools = sb.tmp.path().join("tools");
    fs::create_dir(&tools).unwrap();
    for t in ["sh", "dirname", "mkdir", "cp", "chmod", "mv", "cat"] {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join(t))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{t} not on PATH"));
        symlink(found, tools.join(t)).unwrap();
    }
    let o = Command::new(tools.join("sh"))
        .arg(script())
        .args(["--prefix"])
        .arg(sb.tmp.path().join("prefix"))
        .env_clear()
        .env("PATH", &tools)
        .env("HOME", &sb.home)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cargo not found") && err.contains("--binary"), "{err}");
    assert!(!sb.tmp.path().join("prefix").exists());
}

// Root keeping another user's owner on their config: tests/privileged.

// --- issue 15: byte for byte ---------------------------------------------

/// The same foreign config in the layouts people have.
fn layouts(host: &str) -> Vec<(&'static str, String)> {
    let v = foreign(host);
    let pretty2 = serde_json::to_string_pretty(&v).unwrap() + "\n";
    let tabs = pretty2.replace("  ", "\t");
    let crlf = pretty2.replace('\n', "\r\n");
    let compact = serde_json::to_string(&v).unwrap();
    let bom = format!("\u{feff}{pretty2}");
    // Hand-laid: compact arrays inside a pretty file, odd spacing, no final newline.
    let mut hand = pretty2.replace("[\n        1,\n        2.5,\n        null\n      ]", "[1,2.5,null]");
    hand = hand.replacen("\"alpha\": \"last\"\n}\n", "\"alpha\" :  \"last\"\n}", 1);
    assert!(!hand.contains("[\n        1,") && !hand.ends_with('\n'), "the hand layout differs: {hand}");
    vec![("pretty", pretty2), ("tabs", tabs), ("crlf", crlf), ("compact", compact), ("bom", bom), ("hand", hand)]
}

#[test]
fn install_then_uninstall_gives_back_the_file_byte_for_byte_in_any_layout() {
    let sb = Sandbox::new();
    for host in HOSTS {
        let p = with_dir(&sb, host);
        for (name, text) in layouts(host) {
            fs::write(&p, &text).unwrap();
            let _ = fs::remove_file(backup_of(&p));
            install(&sb, host);
            let installed = fs::read_to_string(&p).unwrap();
            // Everything that was there is still there, in the same bytes,
            // around our entries.
            let v: Value = serde_json::from_str(installed.trim_start_matches('\u{feff}')).unwrap();
            assert_eq!(ours(&v, host).len(), expected_entries(host), "{host} {name}");
            if name == "crlf" {
                assert!(!installed.replace("\r\n", "").contains('\n'), "{host}: CRLF kept throughout");
            }
            if name == "compact" {
                assert!(!installed.contains('\n'), "{host}: a one-line file stays one line");
            }
            let again = install(&sb, host);
            assert!(again.stdout.contains("already up to date"), "{host} {name}: {}", again.stdout);
            sb.cmd(["hooks", "uninstall", host]).ok();
            assert_eq!(fs::read_to_string(&p).unwrap(), text, "{host} {name}: byte for byte");
            assert_eq!(fs::read_to_string(backup_of(&p)).unwrap(), text, "{host} {name}: the backup");
        }
    }
}

#[cfg(unix)] // a symlinked binary
#[test]
fn an_upgrade_changes_only_the_bytes_that_differ() {
    let sb = Sandbox::new();
    let p = with_dir(&sb, "claude-code");
    install(&sb, "claude-code");
    let before = fs::read_to_string(&p).unwrap();
    let moved = sb.tmp.path().join("moved");
    fs::create_dir(&moved).unwrap();
    symlink(BIN, moved.join("leanctx")).unwrap();
    sb.cmd(["hooks", "install", "claude-code"]).env("LEANCTX_HOOK_BINARY", moved.join("leanctx")).ok();
    let after = fs::read_to_string(&p).unwrap();
    let new_bin = moved.join("leanctx").display().to_string();
    assert_eq!(after, before.replace(&canonical_bin(), &new_bin), "only the command strings changed");
}

#[test]
fn uninstall_from_a_file_leanctx_created_leaves_nothing() {
    let sb = Sandbox::new();
    for host in HOSTS {
        let p = with_dir(&sb, host);
        let out = install(&sb, host);
        assert!(!out.stdout.contains("backup"), "{host}: no original, no backup: {}", out.stdout);
        let out = sb.cmd(["hooks", "uninstall", host]).ok();
        assert!(out.stdout.contains("removed"), "{}", out.stdout);
        assert!(!p.exists(), "{host}: the file leanctx created is gone, not left as a skeleton");
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(litter(p.parent().unwrap(), &[&name]), Vec::<String>::new(), "{host}: no backup left either");
    }
    // A file leanctx created and the user then added to stays, and its
    // backup is labelled for what it is.
    let p = sb.hooks_file("codex");
    install(&sb, "codex");
    let mut v = read_json(&p);
    v["mine"] = json!(true);
    write_json(&p, &v);
    let out = sb.cmd(["hooks", "uninstall", "codex"]).ok();
    assert!(out.stdout.contains("backup of the file before this change"), "{}", out.stdout);
    assert!(!out.stdout.contains("original"), "{}", out.stdout);
    assert_eq!(read_json(&p), json!({"mine": true}));
}

const CODEX_TOML: &str = "model = \"o3\" # mine\n\n[features]\nhooks = true\n\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"notify-send done\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\" # keep\n";

#[test]
fn codex_hooks_kept_in_config_toml_are_installed_there_and_given_back() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".codex");
    fs::create_dir_all(&dir).unwrap();
    let toml = dir.join("config.toml");
    fs::write(&toml, CODEX_TOML).unwrap();
    let out = install(&sb, "codex");
    assert!(out.stdout.contains("config.toml"), "{}", out.stdout);
    assert!(!dir.join("hooks.json").exists(), "one representation per layer: no hooks.json beside it");
    let text = fs::read_to_string(&toml).unwrap();
    assert!(text.starts_with("model = \"o3\" # mine\n\n[features]\nhooks = true\n"), "{text}");
    assert!(text.contains("[[hooks.PreToolUse]]\nmatcher = \"mcp__.*\""), "{text}");
    let st = sb.cmd(["hooks", "status", "codex", "--json"]).ok().json();
    let files = st["hosts"][0]["files"].as_array().unwrap().clone();
    let t = files.iter().find(|f| f["path"].as_str().unwrap().ends_with("config.toml")).expect("config.toml shown");
    assert_eq!(t["state"], "installed", "{st:#}");
    assert_eq!(t["entries"], 10);
    let again = install(&sb, "codex");
    assert!(again.stdout.contains("already up to date"), "{}", again.stdout);
    assert!(!dir.join("hooks.json").exists());
    sb.cmd(["hooks", "uninstall", "codex"]).ok();
    assert_eq!(fs::read_to_string(&toml).unwrap(), CODEX_TOML, "byte for byte");
}

#[test]
fn codex_entries_are_never_in_both_files() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".codex");
    fs::create_dir_all(&dir).unwrap();
    // hooks.json exists: it is the target, and config.toml's own hooks stay.
    fs::write(dir.join("config.toml"), CODEX_TOML).unwrap();
    fs::write(dir.join("hooks.json"), "{}\n").unwrap();
    install(&sb, "codex");
    assert_eq!(fs::read_to_string(dir.join("config.toml")).unwrap(), CODEX_TOML);
    assert_eq!(ours(&read_json(&dir.join("hooks.json")), "codex").len(), 10);
    // Ours copied into config.toml by hand: install refuses, status warns,
    // uninstall takes them out of both.
    let bin = canonical_bin();
    let mut toml = String::from(CODEX_TOML);
    toml.push_str(&format!(
        "\n[[hooks.SessionStart]]\n[[hooks.SessionStart.hooks]]\ntype = \"command\"\ncommand = \"{bin} hook codex\"\n"
    ));
    fs::write(dir.join("config.toml"), &toml).unwrap();
    let out = sb.cmd(["hooks", "install", "codex"]).run();
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("in both") && out.stderr.contains("config.toml"), "{}", out.stderr);
    let st = sb.cmd(["hooks", "status", "codex", "--json"]).ok().json();
    assert!(st["hosts"][0]["warnings"].to_string().contains("in both"), "{st:#}");
    sb.cmd(["hooks", "uninstall", "codex"]).ok();
    assert_eq!(fs::read_to_string(dir.join("config.toml")).unwrap(), CODEX_TOML, "ours and only ours removed");
}

#[test]
fn codex_hooks_off_is_seen_in_every_toml_spelling() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".codex");
    fs::create_dir_all(&dir).unwrap();
    for (text, off) in [
        ("[features]\nhooks = false\n", true),
        ("features.hooks = false\n", true),
        ("features = { hooks = false }\n", true),
        ("[features]\ncodex_hooks = false # old name\n", true),
        ("[features]\nhooks = true\n", false),
        ("[profiles.x.features]\nhooks = false\n", false),
    ] {
        fs::write(dir.join("config.toml"), text).unwrap();
        let st = sb.cmd(["hooks", "status", "codex", "--json"]).ok().json();
        assert_eq!(st["hosts"][0]["warnings"].to_string().contains("hooks = false"), off, "{text}");
    }
}
