//! What a new user meets (issue 13), through the real binary in a sandbox:
//! `leanctx status` naming every problem with its fix and exiting 1 on one,
//! `hooks status` / `hooks install` over several hosts and projects, and
//! the CLI conventions (help text, completions, suggestions).

use crate::support::{BIN, Out, Sandbox};
use serde_json::{Value, json};
use std::fs;
#[cfg(unix)]
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

fn prompt(session: &str) -> String {
    json!({"hook_event_name": "UserPromptSubmit", "session_id": session, "transcript_path": "/t.jsonl", "prompt": "x"})
        .to_string()
}

fn status(sb: &Sandbox) -> (Out, Value) {
    let o = sb.cmd(["status", "--json"]).report();
    let v = o.json();
    (o, v)
}

/// The problems' text, for assertions.
fn problems(v: &Value) -> String {
    v["problems"].to_string()
}

fn fixes(v: &Value) -> Vec<String> {
    v["issues"].as_array().unwrap().iter().map(|i| i["fix"].as_str().unwrap().to_string()).collect()
}

#[test]
fn status_on_a_brand_new_machine_names_the_one_thing_to_do() {
    let sb = Sandbox::new();
    let (o, v) = status(&sb);
    assert_eq!(o.code, 1, "nothing installed is a problem: {}", o.stdout);
    assert_eq!(v["data_dir_created"], false);
    let p = problems(&v);
    assert!(!p.contains("No such file"), "a data dir not created yet is not a problem: {p}");
    assert!(p.contains("no host has leanctx's hooks installed"), "{p}");
    assert!(fixes(&v)[0].contains("leanctx hooks install"), "{v:#}");
    let human = sb.cmd(["status"]).report().stdout;
    assert!(human.contains("not created yet"), "{human}");
    assert!(human.contains("problem") && human.contains("  fix "), "{human}");

    // Installed, not fired yet: waiting, a note with the host's advice (exit 0).
    sb.host_dir("claude-code");
    sb.host_dir("codebuddy");
    fs::remove_file(sb.home.join(".codebuddy/history.jsonl")).unwrap();
    let o = sb.cmd(["hooks", "install", "--all"]).ok();
    assert!(o.stdout.contains("codebuddy: skipped: codebuddy is not on PATH and") && o.stdout.contains("is empty"));
    assert!(o.stdout.contains("cursor: skipped: cursor or cursor-agent is not on PATH"), "{}", o.stdout);
    assert!(!sb.home.join(".codebuddy/settings.json").exists(), "an empty config dir is no host");
    let (o, v) = status(&sb);
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert!(v["notes"].to_string().contains("claude-code: waiting for the first event since you installed"), "{v:#}");
    assert!(v["notes"].to_string().contains("new Claude Code session"), "{v:#}");
    assert_eq!(v["host_states"][1]["state"], "waiting", "{v:#}");
    let human = sb.cmd(["status"]).ok().stdout;
    assert!(human.starts_with("Claude Code: installed "), "one plain line per host first: {human}");
    assert!(human.contains(", waiting for its first event"), "{human}");
    // Days later, still silent: a problem, with the host's fix.
    let later = (leanctx::base::clock::now_ms() + 3 * 86_400_000).to_string();
    let o = sb.cmd(["status", "--json"]).env("LEAN_CTX_NOW_MS", &later).report();
    let v = o.json();
    assert_eq!(o.code, 1);
    assert!(problems(&v).contains("claude-code: installed 3 days ago and never fired"), "{v:#}");
    assert!(fixes(&v).iter().any(|f| f.contains("new Claude Code session")), "{v:#}");
    let human = sb.cmd(["status"]).env("LEAN_CTX_NOW_MS", &later).report().stdout;
    assert!(human.starts_with("Claude Code: installed 3 days ago and never fired"), "{human}");

    // The host ran a hook: healthy, exit 0, and says so.
    sb.hook("claude", prompt("s1")).ok();
    let (o, v) = status(&sb);
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert_eq!(
        (v["healthy"].clone(), v["issues"].clone(), v["data_dir_created"].clone()),
        (json!(true), json!([]), json!(true))
    );
    let human = sb.cmd(["status"]).ok().stdout;
    assert!(human.starts_with("Claude Code: working, last event "), "{human}");
    assert!(human.contains("Not set up: Cursor, Codex, CodeBuddy Code"), "{human}");
    assert!(human.contains("OK: no problem found"), "{human}");
    assert!(sb.cmd(["doctor"]).ok().stdout.contains("no problem found"), "doctor is status");
    // One label column: "active chats" is the longest label.
    let col = |label: &str| {
        let line = human.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("{label}: {human}"));
        line.len() - line[label.len()..].trim_start().len()
    };
    assert_eq!(col("data dir"), col("active chats"), "{human}");
    assert_eq!(col("chat asking"), col("active chats"), "{human}");
    // The code's words stay out of the plain screen.
    for word in ["current", "slot", "single", "CONCURRENT", "unknown"] {
        assert!(!human.contains(word), "{word}: {human}");
    }

    // Every hook removed: a problem again, though hooks fired before.
    sb.cmd(["hooks", "uninstall", "claude-code"]).ok();
    let (o, v) = status(&sb);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(problems(&v).contains("no host has leanctx's hooks installed (hooks fired before"), "{v:#}");
    let human = sb.cmd(["status"]).report().stdout;
    assert!(human.starts_with("Claude Code: no hooks installed now (last event "), "{human}");
}

#[cfg(unix)] // file modes
#[test]
fn status_says_when_the_data_dir_cannot_be_created_and_does_not_blame_the_hooks() {
    let sb = Sandbox::new();
    fs::create_dir_all(sb.home.join(".claude")).unwrap();
    sb.cmd(["hooks", "install", "claude-code"]).ok();
    // Its parent is a file: the first hook could never create it.
    let file = sb.tmp.path().join("a-file");
    fs::write(&file, "x").unwrap();
    let dir = file.join("data");
    let o = sb.cmd(["status", "--json"]).env("LEAN_CTX_DATA_DIR", &dir).report();
    assert_eq!(o.code, 1);
    let v = o.json();
    let p = problems(&v);
    assert!(p.contains("cannot be created") && p.contains("is not a directory"), "{p}");
    assert!(!p.contains("never fired"), "hooks that cannot record may have fired: {p}");
    assert!(fixes(&v)[0].contains("LEAN_CTX_DATA_DIR"), "{v:#}");

    // A data dir that exists but is refused (writable by others): named with
    // its fix, and no "never fired" claim either.
    fs::create_dir_all(&sb.data).unwrap();
    fs::set_permissions(&sb.data, fs::Permissions::from_mode(0o777)).unwrap();
    let (o, v) = status(&sb);
    assert_eq!(o.code, 1);
    let p = problems(&v);
    assert!(p.contains("writable by group or others") && !p.contains("never fired"), "{p}");
    assert!(fixes(&v).iter().any(|f| f.contains("chmod 700")), "{v:#}");
    let human = sb.cmd(["status"]).report().stdout;
    assert!(!human.contains("no hook has fired yet"), "{human}");
    let hs = sb.cmd(["hooks", "status", "claude-code", "--json"]).ok().json();
    assert!(!hs["hosts"][0]["warnings"].to_string().contains("never fired"), "{hs:#}");
    assert!(hs["hosts"][0]["notes"].to_string().contains("cannot tell whether they fired"), "{hs:#}");
}

#[cfg(unix)] // file modes, setpriv
#[test]
fn status_says_permission_denied_when_the_parent_is_not_writable() {
    let sb = Sandbox::new();
    let ro = sb.tmp.path().join("ro");
    fs::create_dir(&ro).unwrap();
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
    // As root, run as a user the mode binds (root may write anywhere).
    let o = sb.cmd_unprivileged(["status", "--json"]).env("LEAN_CTX_DATA_DIR", ro.join("data")).report();
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o700)).unwrap();
    assert!(problems(&o.json()).contains("permission denied"), "{}", o.stdout);
}

#[cfg(unix)] // a symlinked binary
#[test]
fn status_names_a_broken_gate_policy_a_deleted_binary_and_codex_hooks_off() {
    let sb = Sandbox::new();
    sb.host_dir("claude-code");
    sb.cmd(["hooks", "install", "claude-code"]).ok();
    sb.hook("claude", prompt("s1")).ok();
    assert_eq!(status(&sb).0.code, 0);

    // A policy file that does not parse: every gated call is answered "ask".
    fs::write(sb.data.join("gate.json"), "{\"rules\": [\n  {\"tool\": \"x\" \"action\": \"deny\"}\n]}\n").unwrap();
    let (o, v) = status(&sb);
    assert_eq!(o.code, 1);
    let p = problems(&v);
    assert!(p.contains("gate.json:2:") && p.contains("ask"), "{p}");
    fs::remove_file(sb.data.join("gate.json")).unwrap();
    // The workspace's too.
    fs::create_dir_all(sb.project.join(".lean-ctx")).unwrap();
    fs::write(sb.project.join(".lean-ctx/gate.json"), "{").unwrap();
    assert!(problems(&status(&sb).1).contains(".lean-ctx/gate.json"));
    fs::remove_file(sb.project.join(".lean-ctx/gate.json")).unwrap();
    assert_eq!(status(&sb).0.code, 0);

    // A hook entry whose binary was deleted.
    fs::create_dir_all(sb.home.join(".codex")).unwrap();
    let gone = sb.tmp.path().join("old/leanctx");
    fs::create_dir_all(gone.parent().unwrap()).unwrap();
    symlink(BIN, &gone).unwrap();
    sb.cmd(["hooks", "install", "codex"]).env("LEANCTX_HOOK_BINARY", &gone).ok();
    sb.hook("codex", json!({"hook_event_name": "SessionStart", "session_id": "c1", "source": "startup"}).to_string())
        .ok();
    assert_eq!(status(&sb).0.code, 0, "{}", sb.cmd(["status"]).run().stdout);
    fs::remove_file(&gone).unwrap();
    let (o, v) = status(&sb);
    assert_eq!(o.code, 1);
    assert!(problems(&v).contains("which does not exist"), "{v:#}");
    sb.cmd(["hooks", "install", "codex"]).ok();
    assert_eq!(status(&sb).0.code, 0);

    // [features] hooks = false in Codex's config.toml.
    fs::write(sb.home.join(".codex/config.toml"), "[features]\nhooks = false\n").unwrap();
    let (o, v) = status(&sb);
    assert_eq!(o.code, 1);
    assert!(problems(&v).contains("hooks = false"), "{v:#}");
    let human = sb.cmd(["status"]).report().stdout;
    assert!(human.contains("Codex runs no hooks at all") && human.contains("remove that setting"), "{human}");
    // A Codex switched off, whose hooks then never fire: the reason is said, not "trust them in /hooks".
    let fresh = Sandbox::new();
    fs::create_dir_all(fresh.home.join(".codex")).unwrap();
    fresh.cmd(["hooks", "install", "codex"]).ok();
    fs::write(fresh.home.join(".codex/config.toml"), "features.hooks = false\n").unwrap();
    let p = problems(&status(&fresh).1);
    assert!(p.contains("hooks = false") && !p.contains("never fired"), "{p}");
}

// --- hooks status / install / uninstall -----------------------------------

#[cfg(unix)] // Unix path text
#[test]
fn hooks_status_shows_project_files_plainly_and_takes_project() {
    let sb = Sandbox::new();
    fs::create_dir_all(sb.home.join(".claude")).unwrap();
    sb.cmd(["hooks", "install", "claude-code"]).ok();
    sb.cmd(["hooks", "install", "claude-code", "--project", "."]).ok();
    sb.cmd(["hooks", "install", "claude-code", "--project", ".", "--local"]).ok();
    let proj = fs::canonicalize(&sb.project).unwrap();
    let human = sb.cmd(["hooks", "status", "claude-code"]).ok().stdout;
    let file = proj.join(".claude/settings.json");
    let line = human.lines().find(|l| l.contains(file.to_str().unwrap())).unwrap_or_else(|| panic!("{human}"));
    assert_eq!(line.trim_start(), format!("project     {}: installed, 10/10 events", file.display()), "{human}");
    assert_eq!(line.matches(proj.to_str().unwrap()).count(), 1, "the project is said once: {line}");
    assert!(human.contains(&format!("local       {}", proj.join(".claude/settings.local.json").display())), "{human}");

    // --project from anywhere, as install takes it.
    let o = sb.cmd(["hooks", "status", "claude-code", "--project"]).arg(&sb.project).current_dir(&sb.home).ok();
    assert!(o.stdout.contains(file.to_str().unwrap()), "{}", o.stdout);
    let v = sb.cmd(["hooks", "status", "--project", ".", "--json"]).ok().json();
    let files = v["hosts"][1]["files"].to_string();
    assert!(files.contains(".claude/settings.local.json"), "{v:#}");
    let o = sb.cmd(["hooks", "status", "--project", "/nonexistent/dir"]).run();
    assert_eq!(o.code, 1, "{o:?}");
    assert!(o.stderr.contains("does not exist"), "{}", o.stderr);
}

#[test]
fn codex_hooks_inline_in_config_toml_are_seen_and_not_duplicated() {
    // Issue 13 asked for this; fixed by the config-edits work: verified here.
    let sb = Sandbox::new();
    let dir = sb.home.join(".codex");
    fs::create_dir_all(&dir).unwrap();
    sb.cmd(["hooks", "install", "codex"]).ok();
    let json_text = fs::read_to_string(dir.join("hooks.json")).unwrap();
    // The user moves them inline into config.toml.
    let mut toml = String::from("model = \"o3\"\n");
    let bin = leanctx::install::command::program_word(fs::canonicalize(BIN).unwrap().to_str().unwrap()).unwrap();
    for ev in ["SessionStart", "Stop"] {
        toml.push_str(&format!(
            "\n[[hooks.{ev}]]\n[[hooks.{ev}.hooks]]\ntype = \"command\"\ncommand = \"{bin} hook codex\"\n"
        ));
    }
    fs::remove_file(dir.join("hooks.json")).unwrap();
    fs::write(dir.join("config.toml"), &toml).unwrap();
    let st = sb.cmd(["hooks", "status", "codex", "--json"]).ok().json();
    assert_eq!(st["hosts"][0]["installed"], true, "{st:#}");
    let out = sb.cmd(["hooks", "install", "codex"]).ok();
    assert!(out.stdout.contains("config.toml"), "{}", out.stdout);
    assert!(!dir.join("hooks.json").exists(), "no duplicate hooks.json: {json_text}");
    let text = fs::read_to_string(dir.join("config.toml")).unwrap();
    assert_eq!(text.matches("[[hooks.SessionStart]]").count(), 1, "{text}");
}

#[test]
fn install_and_uninstall_take_several_hosts_at_once() {
    let sb = Sandbox::new();
    for d in [".cursor", ".claude", ".codex"] {
        fs::create_dir_all(sb.home.join(d)).unwrap();
    }
    let o = sb.cmd(["hooks", "install", "cursor", "claude-code", "codex"]).ok();
    for f in [".cursor/hooks.json", ".claude/settings.json", ".codex/hooks.json"] {
        assert!(sb.home.join(f).is_file(), "{f}: {}", o.stdout);
    }
    assert_eq!(o.stdout.matches("Cursor also runs Claude Code hooks").count(), 1, "the note once: {}", o.stdout);
    // A host that fails does not stop the others; exit 1.
    fs::remove_file(sb.home.join(".codex/hooks.json")).unwrap();
    let o = sb.cmd(["hooks", "install", "codebuddy", "codex"]).run();
    assert_eq!(o.code, 1, "{o:?}");
    assert!(o.stderr.contains("codebuddy") && o.stderr.contains("--create"), "{}", o.stderr);
    assert!(sb.home.join(".codex/hooks.json").is_file(), "codex still installed: {}", o.stdout);

    let o = sb.cmd(["hooks", "uninstall", "cursor", "claude-code", "codex", "codebuddy"]).ok();
    assert_eq!(o.stdout.matches("binary stays").count(), 1, "{}", o.stdout);
    for f in [".cursor/hooks.json", ".claude/settings.json", ".codex/hooks.json"] {
        assert!(!sb.home.join(f).exists(), "{f}");
    }
    // Nothing removed: nothing said about the binary.
    let o = sb.cmd(["hooks", "uninstall", "cursor"]).ok();
    assert!(!o.stdout.contains("binary stays"), "{}", o.stdout);
}

#[cfg(unix)] // Unix path text
#[test]
fn install_and_uninstall_json() {
    let sb = Sandbox::new();
    sb.host_dir("claude-code");
    let v = sb.cmd(["hooks", "install", "claude-code", "codex", "--if-present", "--json"]).ok().json();
    let a = v.as_array().unwrap();
    assert_eq!(a.len(), 2, "{v:#}");
    assert_eq!((a[0]["host"].as_str(), a[0]["ok"].as_bool()), (Some("claude-code"), Some(true)), "{v:#}");
    assert_eq!(a[0]["files"][0]["added"].as_array().unwrap().len(), 10, "{v:#}");
    assert!(a[0]["files"][0]["path"].as_str().unwrap().ends_with(".claude/settings.json"));
    assert_eq!((a[1]["host"].as_str(), a[1]["skipped"].as_bool()), (Some("codex"), Some(true)), "{v:#}");
    let v = sb.cmd(["hooks", "install", "claude-code", "--json"]).ok().json();
    assert_eq!(v[0]["files"][0]["unchanged"], true, "{v:#}");
    let v = sb.cmd(["hooks", "uninstall", "claude-code", "--dry-run", "--json"]).ok().json();
    assert_eq!(v[0]["dry_run"], true);
    assert!(v[0]["files"][0]["diff"].as_str().unwrap().contains("-"), "{v:#}");
    let o = sb.cmd(["hooks", "install", "codebuddy", "--json"]).run();
    assert_eq!(o.code, 1);
    let v = o.json();
    assert_eq!(v[0]["ok"], false);
    assert!(v[0]["error"].as_str().unwrap().contains("--create"), "{v:#}");
    let v = sb.cmd(["hooks", "uninstall", "claude-code", "--json"]).ok().json();
    assert_eq!(v[0]["files"][0]["removed"].as_array().unwrap().len(), 10, "{v:#}");
    assert_eq!(v[0]["files"][0]["deleted"], true, "{v:#}");
}

// --- CLI conventions ------------------------------------------------------

/// Every option and argument in every `--help` has a description.
#[test]
fn every_option_has_help_text() {
    let sb = Sandbox::new();
    let cmds: &[&[&str]] = &[
        &[],
        &["hook"],
        &["stub"],
        &["deliver"],
        &["scope", "current"],
        &["scope", "check"],
        &["status"],
        &["gate", "check"],
        &["hooks", "install"],
        &["hooks", "uninstall"],
        &["hooks", "status"],
        &["completions"],
    ];
    for c in cmds {
        let o = sb.cmd(c.iter().copied().chain(["--help"])).ok();
        for l in o.stdout.lines() {
            let t = l.trim();
            let item = t.starts_with('-') || (t.starts_with('<') && l.starts_with("  "));
            if !item || !l.starts_with("  ") {
                continue;
            }
            // "  --flag <V>   text": the description follows two spaces.
            assert!(t.contains("  "), "{c:?}: no help text for `{t}`:\n{}", o.stdout);
        }
    }
    let o = sb.cmd(["hooks", "uninstall", "--help"]).ok();
    assert!(!o.stdout.contains("--create") && !o.stdout.contains("--if-present"), "{}", o.stdout);
    let o = sb.cmd(["hooks", "install", "codex", "--create", "--if-present"]).run();
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("cannot be used with"), "{}", o.stderr);
}

#[test]
fn typos_get_a_suggestion() {
    let sb = Sandbox::new();
    let o = sb.cmd(["statu"]).run();
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("similar") && o.stderr.contains("'status'"), "{}", o.stderr);
    let o = sb.cmd(["hooks", "instal", "codex"]).run();
    assert!(o.stderr.contains("'install'"), "{}", o.stderr);
    let o = sb.cmd(["status", "--jsn"]).run();
    assert!(o.stderr.contains("--json"), "{}", o.stderr);
}

#[test]
fn completions_for_each_shell() {
    let sb = Sandbox::new();
    for (shell, marker) in [("bash", "complete -F"), ("zsh", "#compdef leanctx"), ("fish", "complete -c leanctx")] {
        let o = sb.cmd(["completions", shell]).ok();
        assert!(o.stdout.contains(marker), "{shell}: {}", &o.stdout[..o.stdout.len().min(300)]);
        assert!(o.stdout.contains("uninstall"), "{shell}: subcommands are completed");
    }
    let o = sb.cmd(["completions", "tcsh"]).run();
    assert_eq!(o.code, 2);
    if let Ok(bash) = which("bash") {
        // The bash script loads without error.
        let script = sb.cmd(["completions", "bash"]).ok().stdout;
        let f = sb.tmp.path().join("c.bash");
        fs::write(&f, script).unwrap();
        let st = std::process::Command::new(bash).arg("-c").arg(format!("source {}", f.display())).status().unwrap();
        assert!(st.success());
    }
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| Path::new(p).is_file())
        .ok_or(())
}

#[test]
fn scope_current_says_unknown() {
    let sb = Sandbox::new();
    let o = sb.cmd(["scope", "current"]).run();
    assert_eq!((o.code, o.stdout.as_str()), (1, "unknown\n"), "{o:?}");
    sb.hook("claude", prompt("s1")).ok();
    let o = sb.cmd(["scope", "current"]).run();
    assert_eq!((o.code, o.stdout.as_str()), (0, "s1\n"), "{o:?}");
}

// --- installers/install.sh ------------------------------------------------

#[cfg(unix)] // installers/install.sh
fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("installers/install.sh")
}

/// install.sh with `args`, in the sandbox, with `path` as PATH.
#[cfg(unix)] // installers/install.sh
fn run_script(sb: &Sandbox, path: &std::ffi::OsStr, args: &[&str]) -> Out {
    let mut c = std::process::Command::new("sh");
    c.arg(script()).arg("--prefix").arg(sb.tmp.path().join("prefix")).args(args);
    c.env_clear().env("PATH", path).env("HOME", &sb.home).env("LEAN_CTX_DATA_DIR", &sb.data);
    c.env("CODEX_HOME", sb.home.join(".codex")).env("CLAUDE_CONFIG_DIR", sb.home.join(".claude"));
    c.env("CODEBUDDY_CONFIG_DIR", sb.home.join(".codebuddy"));
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
fn path_env() -> std::ffi::OsString {
    crate::support::path_without_hosts()
}

#[cfg(unix)] // installers/install.sh
#[test]
fn install_sh_dry_run_changes_nothing_and_shows_the_change() {
    let sb = Sandbox::new();
    sb.host_dir("claude-code");
    let o = run_script(&sb, &path_env(), &["--binary", BIN, "--dry-run"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(!sb.tmp.path().join("prefix").exists(), "no binary copied: {o:?}");
    assert!(!sb.home.join(".claude/settings.json").exists(), "no config written: {o:?}");
    assert!(o.stdout.contains("+++") && o.stdout.contains("dry run"), "{}", o.stdout);
    let want = sb.tmp.path().join("prefix/bin/leanctx");
    assert!(
        o.stdout.contains(&format!("{} hook claude-code", want.display())),
        "the diff shows the installed path: {}",
        o.stdout
    );
    assert!(o.stdout.contains("Summary") && o.stdout.contains("claude-code"), "{}", o.stdout);
    let o = run_script(&sb, &path_env(), &["--binary", BIN, "--dry-run", "--uninstall"]);
    assert_eq!(o.code, 0, "{o:?}");
}

#[cfg(unix)] // installers/install.sh
#[test]
fn install_sh_says_what_it_found_and_what_to_do_when_nothing_was() {
    let sb = Sandbox::new();
    let o = run_script(&sb, &path_env(), &["--binary", BIN]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.contains("Summary") && o.stdout.contains("hooks for: none"), "{}", o.stdout);
    assert!(o.stdout.contains("No host was found") && o.stdout.contains("--create"), "{}", o.stdout);
    // --create for a named host whose config dir does not exist yet.
    let o = run_script(&sb, &path_env(), &["--binary", BIN, "--create", "codex"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(sb.home.join(".codex/hooks.json").is_file(), "{o:?}");
    assert!(o.stdout.contains("hooks for: codex") && o.stdout.contains("status"), "{}", o.stdout);
    // Found hosts and skipped ones, both said, the skipped ones with why.
    sb.host_dir("claude-code");
    let o = run_script(&sb, &path_env(), &["--binary", BIN]);
    assert!(o.stdout.contains("hooks for: claude-code codex"), "{}", o.stdout);
    assert!(o.stdout.contains("not found: cursor codebuddy"), "{}", o.stdout);
    assert!(o.stdout.contains("    codebuddy: codebuddy is not on PATH and there is no "), "{}", o.stdout);
    // Uninstall says once what stays, each with its path: the binary it
    // installed, the backups of the configs, the data dir (issue 25: two
    // removal hints, one naming a binary that did not exist).
    sb.hook("claude", prompt("s1")).ok();
    let o = run_script(&sb, &path_env(), &["--binary", BIN, "--uninstall"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(!o.stdout.contains("binary stays"), "{}", o.stdout);
    assert_eq!(o.stdout.matches("What stays").count(), 1, "{}", o.stdout);
    let bin = sb.tmp.path().join("prefix/bin/leanctx");
    assert!(o.stdout.contains(&format!("the binary {}: rm '{}'", bin.display(), bin.display())), "{}", o.stdout);
    let bak = sb.home.join(".claude/settings.json.leanctx.bak");
    let data = sb.data.display().to_string();
    assert!(o.stdout.contains(&data) && o.stdout.contains("leanctx's state"), "{}", o.stdout);
    assert_eq!(o.stdout.contains(&bak.display().to_string()), bak.exists(), "{}", o.stdout);
}

#[cfg(unix)] // installers/install.sh
#[test]
fn install_sh_uses_a_leanctx_already_on_path() {
    let sb = Sandbox::new();
    sb.host_dir("claude-code");
    // A PATH with a leanctx and the script's tools, but no cargo.
    let tools = sb.tmp.path().join("tools");
    fs::create_dir(&tools).unwrap();
    for t in ["sh", "dirname", "mkdir", "cp", "chmod", "mv", "cat"] {
        let found = std::env::split_paths(&path_env()).map(|d| d.join(t)).find(|p| p.is_file());
        symlink(found.unwrap_or_else(|| panic!("{t} not on PATH")), tools.join(t)).unwrap();
    }
    symlink(BIN, tools.join("leanctx")).unwrap();
    let o = run_script(&sb, tools.as_os_str(), &[]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.contains("leanctx on your PATH"), "{}", o.stdout);
    assert!(!sb.tmp.path().join("prefix").exists(), "nothing built or copied: {o:?}");
    assert!(sb.home.join(".claude/settings.json").is_file(), "{o:?}");
    // --no-build says the same with cargo around.
    let o = run_script(
        &sb,
        &std::env::join_paths([tools.clone()].into_iter().chain(std::env::split_paths(&path_env()))).unwrap(),
        &["--no-build"],
    );
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.contains("already up to date") && !sb.tmp.path().join("prefix").exists(), "{o:?}");
}

#[cfg(unix)] // a symlinked binary on PATH
#[test]
fn a_hook_installed_by_hand_as_a_bare_name_on_path_is_not_missing() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".codex");
    fs::create_dir_all(&dir).unwrap();
    let bin_dir = sb.tmp.path().join("bin");
    fs::create_dir_all(&bin_dir).unwrap();
    symlink(BIN, bin_dir.join("leanctx")).unwrap();
    let text = leanctx::install::spec::data(leanctx::Host::Codex).replace("{{LEANCTX}}", "leanctx");
    fs::write(dir.join("hooks.json"), text).unwrap();
    let path = std::env::join_paths([bin_dir.clone()]).unwrap();
    let v = sb.cmd(["hooks", "status", "codex", "--json"]).env("PATH", &path).ok().json();
    assert!(!v["hosts"][0]["warnings"].to_string().contains("does not exist"), "{v:#}");
    let v = sb.cmd(["hooks", "status", "codex", "--json"]).env("PATH", "/nonexistent").ok().json();
    assert!(v["hosts"][0]["warnings"].to_string().contains("does not exist"), "not on PATH: {v:#}");
}
