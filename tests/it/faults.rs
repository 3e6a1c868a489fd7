//! Disk faults: the data dir read-only (a read-only tmpfs: root ignores
//! chmod), full (a small tmpfs filled up, at several fill levels), replaced
//! by a file, a symlink pointing elsewhere, owned by another uid, writable
//! by group or others, state files replaced by directories, and the journal
//! lock held by a frozen process. Every hook still answers fail-open in
//! bounded time with exit 0, nothing half-written is left, and
//! `leanctx status` names the problem.
//!
//! Mounting needs root and a kernel that lets us; where it cannot, the
//! mount cases are skipped LOUDLY with the reason (set
//! `LEANCTX_REQUIRE_MOUNTS=1` to make that a failure instead).

use crate::support::{Out, Sandbox};
use leanctx::journal;
use leanctx::slot::Slot;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Every hook must answer well inside this (the lock wait is 0.8 s and the
/// stdin bound 1 s; this leaves room for a loaded CI machine).
const BOUND: Duration = Duration::from_secs(5);

/// A tmpfs mounted on a path, unmounted on drop (even when the test fails).
struct Mount {
    path: PathBuf,
}

impl Mount {
    fn tmpfs(path: &Path, size: &str) -> Result<Mount, String> {
        std::fs::create_dir_all(path).map_err(|e| e.to_string())?;
        let opts = format!("size={size},mode=0700");
        run(Command::new("mount").args(["-t", "tmpfs", "-o", &opts, "tmpfs"]).arg(path))?;
        Ok(Mount { path: path.to_path_buf() })
    }

    fn remount(&self, opts: &str) -> Result<(), String> {
        run(Command::new("mount").args(["-o", &format!("remount,{opts}")]).arg(&self.path))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount").arg(&self.path).status().is_ok_and(|s| s.success());
        if !ok {
            // Busy (a child still has it open): detach it lazily.
            let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        }
    }
}

fn run(c: &mut Command) -> Result<(), String> {
    match c.output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("{:?}: {}", c, String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Err(format!("{c:?}: {e}")),
    }
}

/// Skip a mount case loudly, or fail under `LEANCTX_REQUIRE_MOUNTS=1`.
fn skip(case: &str, why: &str) {
    let msg = format!("faults: SKIPPED {case}: cannot mount a tmpfs here ({why})");
    if std::env::var("LEANCTX_REQUIRE_MOUNTS").is_ok_and(|v| v == "1") {
        panic!("{msg} and LEANCTX_REQUIRE_MOUNTS=1");
    }
    eprintln!("\n!!!!! {msg} !!!!!\n");
    println!("{msg}");
}

/// The battery: a few events of every host, a gated call on an allowed tool
/// and one on a denied tool among them, run at once.
fn battery() -> Vec<(&'static str, &'static str, String)> {
    let mut out = Vec::new();
    for host in ["claude", "codex", "codebuddy"] {
        for (event, tool) in [
            ("SessionStart", None),
            ("UserPromptSubmit", None),
            ("PreToolUse", Some("mcp__ctx__ctx_read")),
            ("PreToolUse", Some("mcp__gh__danger_zone")),
            ("PreCompact", None),
            ("SubagentStart", None),
            ("SessionEnd", None),
        ] {
            let mut p = json!({"hook_event_name": event, "session_id": format!("s-{host}"), "agent_id": "a1",
                "tool_use_id": "toolu_f", "tool_input": {"path": "x"}});
            if let Some(t) = tool {
                p["tool_name"] = json!(t);
            }
            out.push((host, if tool == Some("mcp__gh__danger_zone") { "danger" } else { event }, p.to_string()));
        }
    }
    for (event, tool) in [
        ("sessionStart", None),
        ("beforeSubmitPrompt", None),
        ("beforeMCPExecution", Some("MCP:ctx:ctx_read")),
        ("beforeMCPExecution", Some("MCP:gh:danger_zone")),
        ("preCompact", None),
        ("sessionEnd", None),
    ] {
        let mut p = json!({"hook_event_name": event, "conversation_id": "c-cursor", "tool_input": "{}"});
        if let Some(t) = tool {
            p["tool_name"] = json!(t);
        }
        out.push(("cursor", if tool == Some("MCP:gh:danger_zone") { "danger" } else { event }, p.to_string()));
    }
    out
}

struct Stats {
    hooks: usize,
    max: Duration,
}

/// Run the battery at once; check each answer. `deny_expected`: the user
/// policy (deny `danger_*`) is readable, so the gate must still deny.
fn run_battery(sb: &Sandbox, case: &str, deny_expected: bool, stats: &mut Stats) -> Vec<Out> {
    let runs: Vec<_> = battery().into_iter().map(|(h, e, p)| (h, e, sb.hook(h, p))).collect();
    let kids: Vec<_> = runs.into_iter().map(|(h, e, r)| (h, e, std::time::Instant::now(), r.spawn())).collect();
    let mut outs = Vec::new();
    for (host, event, t0, child) in kids {
        let o = child.wait_with_output().unwrap();
        let elapsed = t0.elapsed();
        let out = Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            elapsed,
        };
        assert_eq!(out.code, 0, "{case}: {host} {event}: exit {}; {}", out.code, out.stderr);
        assert!(elapsed < BOUND, "{case}: {host} {event} took {elapsed:?}");
        stats.max = stats.max.max(elapsed);
        stats.hooks += 1;
        let said = if out.stdout.trim().is_empty() {
            None
        } else {
            Some(
                serde_json::from_str::<Value>(out.stdout.trim())
                    .unwrap_or_else(|e| panic!("{case}: {host} {event}: answer is not JSON ({e}): {:?}", out.stdout)),
            )
        };
        let decision = said.as_ref().and_then(|v| {
            v.get("permission").or_else(|| v["hookSpecificOutput"].get("permissionDecision")).and_then(Value::as_str)
        });
        if event == "danger" && deny_expected {
            assert_eq!(decision, Some("deny"), "{case}: {host}: the readable policy must still deny");
        } else if event == "danger" || event.contains("MCP") || event == "PreToolUse" {
            // Fail open: no opinion (Cursor: allow).
            let want = if host == "cursor" { Some("allow") } else { None };
            assert_eq!(decision, want, "{case}: {host} {event}: {:?}", out.stdout);
        } else if host == "cursor" {
            assert!(said.is_some_and(|v| v.is_object()), "{case}: cursor always gets a JSON object");
        } else {
            assert_eq!(out.stdout, "", "{case}: {host} {event}");
        }
        outs.push(out);
    }
    outs
}

/// Nothing half-written: every journal line parses and the journal ends
/// with a newline; the slot parses or is absent; no temp file is left.
fn nothing_half_written(data: &Path, case: &str) -> usize {
    let mut records = 0;
    if let Ok(text) = std::fs::read_to_string(data.join("journal")) {
        assert!(text.is_empty() || text.ends_with('\n'), "{case}: torn journal tail");
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            assert!(journal::parse_line(l).is_some(), "{case}: journal line does not parse: {l:?}");
            records += 1;
        }
    }
    let slot = data.join("active_transcript.json");
    if slot.is_file() {
        let t = std::fs::read_to_string(&slot).unwrap();
        assert!(Slot::parse(&t).is_some(), "{case}: slot does not parse: {t:?}");
    }
    if let Ok(rd) = std::fs::read_dir(data) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            assert!(!n.starts_with(".tmp-"), "{case}: temp file left: {n}");
        }
    }
    records
}

fn status_problems(sb: &Sandbox) -> Vec<String> {
    let o = sb.cmd(["status", "--json"]).ok();
    o.json()["problems"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect()
}

fn assert_status_names(sb: &Sandbox, case: &str, words: &[&str]) {
    let problems = status_problems(sb);
    assert!(
        problems.iter().any(|p| words.iter().any(|w| p.contains(w))),
        "{case}: status does not name the problem ({words:?}): {problems:?}"
    );
    // The human form says it too.
    let human = sb.cmd(["status"]).ok().stdout;
    assert!(human.contains("problem"), "{case}: {human}");
}

fn prepare(sb: &Sandbox) {
    // Some state and a user policy before the fault.
    std::fs::create_dir_all(&sb.data).unwrap();
    std::fs::set_permissions(&sb.data, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(
        sb.data.join("gate.json"),
        json!({"rules":[{"tool":"danger_*","action":"deny","message":"no danger"}]}).to_string(),
    )
    .unwrap();
    for i in 0..3 {
        let p = json!({"hook_event_name":"PreToolUse","session_id":format!("pre-{i}"),
            "tool_name":"mcp__ctx__ctx_read","tool_input":{"i":i},"tool_use_id":format!("toolu_pre_{i}")});
        sb.hook("claude", p.to_string()).ok();
    }
}

#[test]
fn read_only_data_dir() {
    let sb = Sandbox::new();
    let m = match Mount::tmpfs(&sb.data, "1m") {
        Ok(m) => m,
        Err(e) => return skip("read-only data dir", &e),
    };
    prepare(&sb);
    let slot_before = std::fs::read(sb.data.join("active_transcript.json")).unwrap();
    let journal_before = std::fs::read(sb.data.join("journal")).unwrap();
    if let Err(e) = m.remount("ro") {
        return skip("read-only data dir", &e);
    }
    let mut st = Stats { hooks: 0, max: Duration::ZERO };
    let outs = run_battery(&sb, "read-only", true, &mut st);
    assert!(outs.iter().any(|o| o.stderr.contains("could not record")), "the reason goes to stderr");
    assert_eq!(std::fs::read(sb.data.join("active_transcript.json")).unwrap(), slot_before);
    assert_eq!(std::fs::read(sb.data.join("journal")).unwrap(), journal_before);
    nothing_half_written(&sb.data, "read-only");
    assert_status_names(&sb, "read-only", &["not writable", "Read-only"]);
    // The read path still reads it.
    let o = sb.cmd(["scope", "current", "--json"]).run();
    assert!(matches!(o.code, 0 | 1), "{}", o.stderr);
    println!("faults: read-only: {} hooks, slowest {:?}", st.hooks, st.max);
    drop(m);
}

#[test]
fn full_data_dir_at_several_fill_levels() {
    let sb = Sandbox::new();
    let m = match Mount::tmpfs(&sb.data, "256k") {
        Ok(m) => m,
        Err(e) => return skip("full data dir", &e),
    };
    prepare(&sb);
    // A journal near its trim bound, so some appends also try to trim
    // (a rewrite through a temp file) on the full disk.
    for i in 0..120 {
        let p = json!({"hook_event_name":"UserPromptSubmit","session_id":format!("fill-{i}")});
        sb.hook("codex", p.to_string()).ok();
    }
    let filler = sb.data.join("filler");
    let mut st = Stats { hooks: 0, max: Duration::ZERO };
    let mut records = 0;
    // Fill completely, then leave 0..=3 pages free: appends that fit, that
    // are cut short and that cannot start at all.
    for free_pages in [0u64, 1, 2, 3, 0] {
        let _ = std::fs::remove_file(&filler);
        fill(&filler);
        if free_pages > 0 {
            let len = std::fs::metadata(&filler).unwrap().len();
            let f = std::fs::OpenOptions::new().write(true).open(&filler).unwrap();
            f.set_len(len.saturating_sub(free_pages * 4096)).unwrap();
        }
        let case = format!("full (+{free_pages} pages)");
        run_battery(&sb, &case, true, &mut st);
        records += nothing_half_written(&sb.data, &case);
    }
    fill(&filler);
    assert_status_names(&sb, "full", &["No space left", "nearly full"]);
    // Space comes back: the next hook records again.
    std::fs::remove_file(&filler).unwrap();
    let o = sb.hook("claude", r#"{"hook_event_name":"SessionStart","session_id":"after-full"}"#).ok();
    assert!(o.stderr.is_empty(), "{}", o.stderr);
    assert!(sb.journal().contains("after-full"));
    nothing_half_written(&sb.data, "after full");
    assert!(status_problems(&sb).is_empty(), "{:?}", status_problems(&sb));
    println!("faults: full: {} hooks at 5 fill levels, {records} records checked, slowest {:?}", st.hooks, st.max);
    drop(m);
}

fn fill(path: &Path) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    let chunk = vec![0u8; 4096];
    while f.write_all(&chunk).is_ok() {}
    // Byte by byte into the last partial page.
    while f.write_all(&[0]).is_ok() {}
}

/// Faults that need no mount.
#[test]
fn unusable_data_dirs_fail_open_and_status_names_them() {
    let mut st = Stats { hooks: 0, max: Duration::ZERO };
    let mut cases = 0;
    let other = tempfile::tempdir().unwrap();
    let check = |sb: &Sandbox, case: &str, words: &[&str], st: &mut Stats| {
        let outs = run_battery(sb, case, false, st);
        assert!(outs.iter().all(|o| !o.stderr.is_empty()), "{case}: every hook says why on stderr");
        assert_status_names(sb, case, words);
    };

    // Replaced by a file.
    let sb = Sandbox::new();
    std::fs::write(&sb.data, "not a dir").unwrap();
    check(&sb, "file", &["not a directory"], &mut st);
    assert_eq!(std::fs::read_to_string(&sb.data).unwrap(), "not a dir");
    cases += 1;

    // A dangling symlink.
    let sb = Sandbox::new();
    std::os::unix::fs::symlink(other.path().join("missing"), &sb.data).unwrap();
    check(&sb, "dangling symlink", &["No such file", "exists"], &mut st);
    assert!(!other.path().join("missing").exists(), "nothing created at the symlink's target");
    cases += 1;

    // A symlink to a file.
    let sb = Sandbox::new();
    let f = other.path().join("a-file");
    std::fs::write(&f, "x").unwrap();
    std::os::unix::fs::symlink(&f, &sb.data).unwrap();
    check(&sb, "symlink to a file", &["not a directory"], &mut st);
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "x");
    cases += 1;

    // A symlink to a world-writable dir (like /tmp).
    let sb = Sandbox::new();
    let open = other.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::os::unix::fs::symlink(&open, &sb.data).unwrap();
    check(&sb, "symlink to a world-writable dir", &["writable by group or others"], &mut st);
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0, "nothing written there");
    cases += 1;

    // A symlink to another user's dir.
    let sb = Sandbox::new();
    let theirs = other.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&theirs, Some(4242), Some(4242)).unwrap();
    std::os::unix::fs::symlink(&theirs, &sb.data).unwrap();
    check(&sb, "symlink to another user's dir", &["owned by uid 4242"], &mut st);
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
    cases += 1;

    // Owned by another uid.
    let sb = Sandbox::new();
    prepare(&sb);
    std::os::unix::fs::chown(&sb.data, Some(4242), None).unwrap();
    let before = sb.journal();
    check(&sb, "wrong owner", &["owned by uid 4242"], &mut st);
    assert_eq!(sb.journal(), before, "nothing written to a dir we do not own");
    cases += 1;

    // Group- or world-writable.
    for mode in [0o770, 0o720, 0o707, 0o777, 0o1777] {
        let sb = Sandbox::new();
        prepare(&sb);
        std::fs::set_permissions(&sb.data, std::fs::Permissions::from_mode(mode)).unwrap();
        let before = sb.journal();
        check(&sb, &format!("mode {mode:o}"), &["writable by group or others"], &mut st);
        assert_eq!(sb.journal(), before);
        cases += 1;
    }

    // A symlink to a dir of ours that is closed is simply used (a user may
    // keep ~/.lean-ctx elsewhere): state lands in the target, 0600.
    let sb = Sandbox::new();
    let mine = other.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&mine, &sb.data).unwrap();
    sb.hook("claude", r#"{"hook_event_name":"SessionStart","session_id":"mine"}"#).ok();
    let m = std::fs::metadata(mine.join("active_transcript.json")).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o600);
    assert!(status_problems(&sb).is_empty());
    println!("faults: {cases} unusable-dir cases, {} hooks, slowest {:?}", st.hooks, st.max);
}

/// State files replaced by directories: hooks answer, status says so.
#[test]
fn state_files_replaced_by_directories() {
    let mut st = Stats { hooks: 0, max: Duration::ZERO };
    for (name, words) in [
        ("active_transcript.json", &["active_transcript.json"][..]),
        ("journal", &["journal"][..]),
        ("journal.lock", &["journal"][..]),
    ] {
        let sb = Sandbox::new();
        prepare(&sb);
        let p = sb.data.join(name);
        let _ = std::fs::remove_file(&p);
        std::fs::create_dir(&p).unwrap();
        // The user policy is intact, so the gate still denies.
        run_battery(&sb, name, true, &mut st);
        assert!(p.is_dir(), "{name}: left as it was");
        assert_status_names(&sb, name, words);
    }
    println!("faults: state files replaced by dirs: {} hooks, slowest {:?}", st.hooks, st.max);
}

/// A hook frozen while it holds the journal lock (here: the test holds it):
/// every other hook gives up after the lock wait and answers; readers too.
#[test]
fn journal_lock_held_by_a_frozen_process() {
    let sb = Sandbox::new();
    prepare(&sb);
    let lock = std::fs::OpenOptions::new().read(true).write(true).open(sb.data.join("journal.lock")).unwrap();
    lock.lock().unwrap();
    let mut st = Stats { hooks: 0, max: Duration::ZERO };
    let outs = run_battery(&sb, "lock held", true, &mut st);
    assert!(outs.iter().any(|o| o.stderr.contains("lock busy")), "the reason goes to stderr");
    nothing_half_written(&sb.data, "lock held");
    let t0 = std::time::Instant::now();
    let o = sb.cmd(["scope", "check", "--delivered", "pre-1", "--json"]).run();
    assert!(t0.elapsed() < BOUND);
    assert_eq!(o.code, 1, "a reader that cannot read the journal withholds: {}", o.stdout);
    assert_status_names(&sb, "lock held", &["lock busy"]);
    lock.unlock().unwrap();
    sb.hook("claude", r#"{"hook_event_name":"SessionStart","session_id":"after-lock"}"#).ok();
    assert!(sb.journal().contains("after-lock"));
    println!("faults: lock held: {} hooks, slowest {:?}", st.hooks, st.max);
}

/// Arguments a hook does not know (a typo'd host, an unknown flag, a flag
/// from a newer config run by an older binary, extra words) never make it
/// exit 2, which every host takes as "block". With a host it can tell, the
/// hook answers in that host's dialect, still gates (the user policy's deny
/// holds) and still records the event; without one, it prints nothing
/// (no opinion) and says why on stderr.
#[test]
fn hook_arguments_it_does_not_know_never_block() {
    let sb = Sandbox::new();
    prepare(&sb);
    let mut answered = 0;
    for host in ["cursor", "claude", "codex", "codebuddy"] {
        let payload = if host == "cursor" {
            json!({"hook_event_name":"beforeMCPExecution","conversation_id":"c-args","tool_name":"MCP:gh:danger_zone","tool_input":"{}"})
        } else {
            json!({"hook_event_name":"PreToolUse","session_id":"s-args","tool_name":"mcp__gh__danger_zone","tool_input":{},"tool_use_id":format!("toolu_args_{host}")})
        };
        let variants: Vec<Vec<&str>> = vec![
            vec!["hook", host, "--frobnicate"],
            vec!["hook", host, "--timeout", "5"],
            vec!["hook", host, "--timeout=5", "--event"],
            vec!["hook", host, "extra", "words"],
            vec!["hook", "--future-flag", host],
            vec!["--verbose", "hook", host],
            vec!["hook", host, "--help"],
            vec!["hook", host, "--version"],
        ];
        for argv in variants {
            let before = sb.journal().lines().filter(|l| l.starts_with("C\t")).count();
            let o = sb.cmd(&argv).stdin(payload.to_string()).run();
            assert_eq!(o.code, 0, "{argv:?}: {}", o.stderr);
            assert!(o.elapsed < BOUND, "{argv:?}: {:?}", o.elapsed);
            let v: Value =
                serde_json::from_str(o.stdout.trim()).unwrap_or_else(|e| panic!("{argv:?}: {e}: {:?}", o.stdout));
            let decision = v.get("permission").or_else(|| v["hookSpecificOutput"].get("permissionDecision"));
            assert_eq!(decision.and_then(Value::as_str), Some("deny"), "{argv:?}: the gate still applies: {v}");
            assert!(o.stderr.contains("ignoring arguments"), "{argv:?}: says why: {}", o.stderr);
            let after = sb.journal().lines().filter(|l| l.starts_with("C\t")).count();
            assert_eq!(after, before + 1, "{argv:?}: the call is still recorded");
            answered += 1;
        }
    }
    // No host it can tell: no answer (no opinion), a reason, exit 0, and
    // nothing recorded.
    let before = sb.journal();
    for argv in [
        &["hook"][..],
        &["hook", "cursr"],
        &["hook", "cursor-agent", "--event", "beforeMCPExecution"],
        &["hook", "--frobnicate"],
        &["hook", "claude_code"],
        &["--verbose", "hook"],
    ] {
        let o = sb.cmd(argv).stdin(r#"{"hook_event_name":"PreToolUse","session_id":"s-nohost"}"#).run();
        assert_eq!(o.code, 0, "{argv:?}: {}", o.stderr);
        assert_eq!(o.stdout, "", "{argv:?}");
        assert!(o.stderr.contains("no host"), "{argv:?}: {}", o.stderr);
        answered += 1;
    }
    assert_eq!(sb.journal(), before, "nothing recorded without a host");
    // A bare `hook --help` is still help (exit 0).
    let o = sb.cmd(["hook", "--help"]).run();
    assert_eq!(o.code, 0);
    assert!(o.stdout.contains("Usage"), "{}", o.stdout);
    println!("faults: {answered} hooks with arguments they do not know, all answered with exit 0");
}
