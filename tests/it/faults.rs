//! Disk faults: the data dir replaced by a file, a symlink pointing
//! elsewhere, writable by group or others, state files replaced by
//! directories, and the journal lock held by a frozen process. Every hook still answers fail-open in
//! bounded time with exit 0, nothing half-written is left, and
//! `leanctx status` names the problem.
//!
//! Then the read path on state that exists but cannot be trusted (FIFOs,
//! symlinks to /dev/null and /dev/zero, a deleted or emptied journal, 0400
//! files, a slot that does not parse, a dangling data dir, a
//! 1 GiB journal, a lock held by another process, a call whose hook could
//! not record): every answer bounded, every stub withheld
//! (`state-unavailable`, `unrecorded-call`); and hook command lines with
//! arguments the hook does not know, which must never exit 2.
//!
//! The cases that need root (a read-only or full tmpfs, files of another
//! uid) are in tests/privileged, whose own harness reports them *ignored*,
//! with the reason, where they cannot run; they use the helpers here.

use crate::support::{Out, Sandbox};
use leanctx::state::journal;
use leanctx::state::slot::Slot;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Every hook must answer well inside this (the lock wait is 0.8 s and the
/// stdin bound 1 s; this leaves room for a loaded CI machine).
pub(crate) const BOUND: Duration = Duration::from_secs(5);

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

pub(crate) struct Stats {
    pub(crate) hooks: usize,
    pub(crate) max: Duration,
}

/// What the gate must say to the battery's gated calls.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Gate {
    /// The user policy (deny `danger_*`) is readable: it still denies.
    Deny,
    /// No policy it can find: no opinion.
    Open,
    /// A user policy in a data dir that cannot be trusted: fail closed,
    /// ask (Codex: deny) for every gated call.
    Closed,
}

/// Run the battery at once; check each answer against `gate`.
pub(crate) fn run_battery(sb: &Sandbox, case: &str, gate: Gate, stats: &mut Stats) -> Vec<Out> {
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
        let gated = event == "danger" || event.contains("MCP") || event == "PreToolUse";
        if event == "danger" && gate == Gate::Deny {
            assert_eq!(decision, Some("deny"), "{case}: {host}: the readable policy must still deny");
        } else if gated && gate == Gate::Closed {
            let want = if host == "codex" { Some("deny") } else { Some("ask") };
            assert_eq!(decision, want, "{case}: {host} {event}: an untrusted policy fails closed: {:?}", out.stdout);
        } else if gated {
            // Fail open: no opinion (Cursor: ask, its own approval decides).
            let want = if host == "cursor" { Some("ask") } else { None };
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
pub(crate) fn nothing_half_written(data: &Path, case: &str) -> usize {
    let mut records = 0;
    if let Ok(text) = std::fs::read_to_string(data.join("journal")) {
        assert!(text.is_empty() || text.ends_with('\n'), "{case}: torn journal tail");
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            assert!(journal::is_known_line(l), "{case}: journal line does not parse: {l:?}");
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

/// The data dir's problems: these sandboxes install no hooks, which status
/// names too ("no host has leanctx's hooks installed"), left out here.
pub(crate) fn status_problems(sb: &Sandbox) -> Vec<String> {
    let o = sb.cmd(["status", "--json"]).report();
    let all = o.json()["problems"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
    no_hooks_left_out(all)
}

fn no_hooks_left_out(problems: Vec<String>) -> Vec<String> {
    problems.into_iter().filter(|p| !p.starts_with("no host has leanctx's hooks installed")).collect()
}

pub(crate) fn assert_status_names(sb: &Sandbox, case: &str, words: &[&str]) {
    let problems = status_problems(sb);
    assert!(
        problems.iter().any(|p| words.iter().any(|w| p.contains(w))),
        "{case}: status does not name the problem ({words:?}): {problems:?}"
    );
    // The human form says it too.
    let human = sb.cmd(["status"]).report().stdout;
    assert!(human.contains("problem"), "{case}: {human}");
}

pub(crate) fn prepare(sb: &Sandbox) {
    // Some state and a user policy before the fault.
    std::fs::create_dir_all(&sb.data).unwrap();
    std::fs::set_permissions(&sb.data, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(
        sb.data.join("gate.json"),
        json!({"rules":[{"tool":"danger_*","action":"deny","message":"no danger"}]}).to_string(),
    )
    .unwrap();
    // The user policy is trusted only if nobody else may write it.
    std::fs::set_permissions(sb.data.join("gate.json"), std::fs::Permissions::from_mode(0o600)).unwrap();
    for i in 0..3 {
        let p = json!({"hook_event_name":"PreToolUse","session_id":format!("pre-{i}"),
            "tool_name":"mcp__ctx__ctx_read","tool_input":{"i":i},"tool_use_id":format!("toolu_pre_{i}")});
        sb.hook("claude", p.to_string()).ok();
    }
}

/// Faults that need no mount and no root (another user's dir:
/// tests/privileged).
#[test]
fn unusable_data_dirs_fail_open_and_status_names_them() {
    let mut st = Stats { hooks: 0, max: Duration::ZERO };
    let mut cases = 0;
    let other = tempfile::tempdir().unwrap();
    let check = |sb: &Sandbox, case: &str, words: &[&str], st: &mut Stats| {
        // A user policy left in a dir that cannot be trusted fails closed.
        let policy = std::fs::symlink_metadata(sb.data.join("gate.json")).is_ok();
        let outs = run_battery(sb, case, if policy { Gate::Closed } else { Gate::Open }, st);
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

    // Another user's data dir (a chown): tests/privileged, which needs root.

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
        run_battery(&sb, name, Gate::Deny, &mut st);
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
    let outs = run_battery(&sb, "lock held", Gate::Deny, &mut st);
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
            // (`--help` anywhere is help, issue 25: tests/it/secondtry.rs.)
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

/// Two live chats, A then B (so the slot names B), recorded by real hooks.
/// Sanity: a slot-based stub for B is withheld as `concurrent`.
pub(crate) fn two_chats(sb: &Sandbox) {
    prepare(sb);
    for conv in ["A", "B"] {
        let p = json!({"hook_event_name":"UserPromptSubmit","session_id":conv});
        sb.hook("claude", p.to_string()).ok();
    }
    let o = sb.cmd(["scope", "check", "--delivered", "B", "--json"]).run();
    assert_eq!(o.json()["decision"]["reason"], "concurrent", "{}", o.stdout);
}

/// The read path on faulted state: each command answers in bounded time
/// (a hang is a failure, not a 30 s wait), `scope check` withholds with
/// `reason`, `status` says the state is unavailable and names `words`.
pub(crate) fn assert_reads_withhold(sb: &Sandbox, case: &str, reason: &str, words: &[&str]) {
    let t0 = std::time::Instant::now();
    let o = sb.cmd(["scope", "check", "--delivered", "B", "--json"]).timeout(BOUND).run();
    assert_eq!((o.code, o.json()["decision"]["reason"].as_str()), (1, Some(reason)), "{case}: {}", o.stdout);
    let o = sb.cmd(["scope", "check", "--delivered", "B", "--cold", "--json"]).timeout(BOUND).run();
    assert_eq!((o.code, o.json()["decision"]["reason"].as_str()), (1, Some(reason)), "{case} cold: {}", o.stdout);
    let o = sb.cmd(["scope", "current", "--json"]).timeout(BOUND).run();
    assert!(matches!(o.code, 0 | 1), "{case}: scope current: {}", o.stderr);
    let o = sb.cmd(["status", "--json"]).timeout(BOUND).report();
    let v = o.json();
    assert_eq!(v["state_available"], json!(reason != "state-unavailable"), "{case}: {v}");
    let problems: Vec<String> =
        v["problems"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
    assert!(
        problems.iter().any(|p| words.iter().all(|w| p.contains(w))),
        "{case}: status does not name it ({words:?}): {problems:?}"
    );
    assert!(t0.elapsed() < BOUND, "{case}: reads took {:?}", t0.elapsed());
}

/// A hook on the faulted state: exit 0 within the bound, the policy's
/// deny still holds.
pub(crate) fn assert_hook_answers(sb: &Sandbox, case: &str) {
    let p = json!({"hook_event_name":"PreToolUse","session_id":"B","tool_name":"mcp__gh__danger_zone","tool_input":{}});
    let o = sb.hook("claude", p.to_string()).timeout(BOUND).run();
    assert_eq!(o.code, 0, "{case}: {}", o.stderr);
    assert!(o.stdout.contains("\"deny\""), "{case}: {}", o.stdout);
}

fn mkfifo(p: &Path) {
    let _ = std::fs::remove_file(p);
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

/// State files that exist but cannot be trusted: FIFOs (which hung every
/// reader, and a hung reader holding the shared lock cost every hook its
/// record), symlinks to /dev/null and /dev/zero, a slot that does not
/// parse, a journal deleted or emptied after two chats were seen, 0400
/// files, a journal larger than a reader reads (another user's file:
/// tests/privileged, which needs root to make one). Each
/// made `scope check` allow a stub (or hang) before; now every read
/// answers in bounded time and withholds `state-unavailable`, `status`
/// names the fault, and hooks still answer.
#[test]
fn untrusted_state_files_withhold_in_bounded_time() {
    type Fault = fn(&Path);
    let cases: Vec<(&str, Fault, &[&str])> = vec![
        ("journal is a FIFO", |d| mkfifo(&d.join("journal")), &["journal", "FIFO"]),
        ("journal.lock is a FIFO", |d| mkfifo(&d.join("journal.lock")), &["journal.lock", "FIFO"]),
        ("slot is a FIFO", |d| mkfifo(&d.join("active_transcript.json")), &["active_transcript.json", "FIFO"]),
        (
            "journal -> /dev/null",
            |d| {
                std::fs::remove_file(d.join("journal")).unwrap();
                std::os::unix::fs::symlink("/dev/null", d.join("journal")).unwrap();
            },
            &["journal", "symbolic link"],
        ),
        (
            "journal -> /dev/zero",
            |d| {
                std::fs::remove_file(d.join("journal")).unwrap();
                std::os::unix::fs::symlink("/dev/zero", d.join("journal")).unwrap();
            },
            &["journal", "symbolic link"],
        ),
        (
            "slot -> /dev/zero",
            |d| {
                std::fs::remove_file(d.join("active_transcript.json")).unwrap();
                std::os::unix::fs::symlink("/dev/zero", d.join("active_transcript.json")).unwrap();
            },
            &["active_transcript.json", "symbolic link"],
        ),
        (
            "slot does not parse",
            |d| std::fs::write(d.join("active_transcript.json"), "{\"session_id\":").unwrap(),
            &["active_transcript.json", "does not parse"],
        ),
        ("journal deleted", |d| std::fs::remove_file(d.join("journal")).unwrap(), &["journal", "missing"]),
        (
            "journal emptied",
            |d| std::fs::OpenOptions::new().write(true).open(d.join("journal")).unwrap().set_len(0).unwrap(),
            &["journal", "empty"],
        ),
        (
            "journal and lock deleted, the hooks' slot left",
            |d| {
                std::fs::remove_file(d.join("journal")).unwrap();
                std::fs::remove_file(d.join("journal.lock")).unwrap();
            },
            &["state-unavailable"],
        ),
        (
            "journal 0400",
            |d| std::fs::set_permissions(d.join("journal"), std::fs::Permissions::from_mode(0o400)).unwrap(),
            &["journal", "mode 400"],
        ),
        (
            "slot 0400",
            |d| {
                std::fs::set_permissions(d.join("active_transcript.json"), std::fs::Permissions::from_mode(0o400))
                    .unwrap()
            },
            &["active_transcript.json", "mode 400"],
        ),
        (
            "journal of 64 MiB",
            |d| std::fs::OpenOptions::new().write(true).open(d.join("journal")).unwrap().set_len(64 << 20).unwrap(),
            &["journal", "more than"],
        ),
    ];
    let n = cases.len();
    for (case, fault, words) in cases {
        let sb = Sandbox::new();
        two_chats(&sb);
        fault(&sb.data);
        assert_reads_withhold(&sb, case, "state-unavailable", words);
        assert_hook_answers(&sb, case);
    }
    println!("faults: {n} untrusted-state cases, every read bounded and withheld");
}

/// The data dir a dangling symlink: not "no hook ever ran" (which keeps the
/// legacy single-conversation allow) but state that cannot be read.
#[test]
fn a_dangling_data_dir_symlink_withholds() {
    let sb = Sandbox::new();
    std::os::unix::fs::symlink(sb.tmp.path().join("gone"), &sb.data).unwrap();
    let o = sb.cmd(["scope", "check", "--delivered", "B", "--json"]).timeout(BOUND).run();
    assert_eq!((o.code, o.json()["decision"]["reason"].as_str()), (1, Some("state-unavailable")), "{}", o.stdout);
    assert_eq!(sb.cmd(["status", "--json"]).report().json()["state_available"], false);
    // Truly empty (no data dir; an empty one; one with only lean-ctx's own
    // slot) keeps the legacy rules.
    let sb = Sandbox::new();
    let o = sb.cmd(["scope", "check", "--delivered", "B", "--json"]).run();
    assert_eq!((o.code, o.json()["decision"]["reason"].as_str()), (0, Some("single-conversation")), "{}", o.stdout);
    std::fs::create_dir(&sb.data).unwrap();
    std::fs::set_permissions(&sb.data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let o = sb.cmd(["scope", "check", "--delivered", "B", "--json"]).run();
    assert_eq!((o.code, o.json()["decision"]["reason"].as_str()), (0, Some("single-conversation")), "{}", o.stdout);
    let now = leanctx::base::clock::now_ms() / 1000;
    std::fs::write(
        sb.data.join("active_transcript.json"),
        json!({"transcript_path":"","session_id":"B","updated_at":now}).to_string(),
    )
    .unwrap();
    std::fs::set_permissions(sb.data.join("active_transcript.json"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = sb.cmd(["scope", "check", "--delivered", "B", "--json"]).run();
    assert_eq!((o.code, o.json()["decision"]["reason"].as_str()), (0, Some("same-conversation")), "{}", o.stdout);
    assert_eq!(sb.cmd(["status", "--json"]).report().json()["state_available"], true);
}

/// A child process holds the journal lock (flock(1), as a frozen hook
/// would): the read path gives up within its one bound for the whole answer
/// (it could wait 0.8 s per read, up to three times: 1.6-2.4 s measured)
/// and withholds; a hook that could not record meanwhile leaves its call id
/// unrecorded, and once the lock is free a call with that id withholds
/// `unrecorded-call` instead of being re-identified from the slot.
#[test]
fn a_process_holding_the_lock_bounds_the_read_path() {
    let sb = Sandbox::new();
    two_chats(&sb);
    // `-o`: the lock stays with flock itself (not its child); it lets go
    // when `cat` ends, at the end of its stdin.
    let mut holder = Command::new("flock")
        .args(["-x", "-o"])
        .arg(sb.data.join("journal.lock"))
        .arg("cat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("flock(1)");
    // Wait until it holds the lock.
    let probe = std::fs::File::open(sb.data.join("journal.lock")).unwrap();
    let t0 = std::time::Instant::now();
    while probe.try_lock_shared().is_ok() {
        let _ = probe.unlock();
        assert!(t0.elapsed() < BOUND, "flock never took the lock");
        std::thread::sleep(Duration::from_millis(5));
    }
    // The hook of a Claude call cannot record its call id.
    let p = json!({"hook_event_name":"PreToolUse","session_id":"B","tool_name":"mcp__ctx__ctx_read",
        "tool_input":{"path":"a"},"tool_use_id":"toolu_lost"});
    let o = sb.hook("claude", p.to_string()).timeout(BOUND).run();
    assert_eq!(o.code, 0);
    assert!(o.stderr.contains("lock busy"), "{}", o.stderr);
    let call = sb.tmp.path().join("call.json");
    std::fs::write(
        &call,
        json!({"name":"ctx_read","arguments":{"path":"a"},"_meta":{"claudecode/toolUseId":"toolu_lost"}}).to_string(),
    )
    .unwrap();
    let mut slowest = Duration::ZERO;
    for args in [
        vec!["scope", "check", "--delivered", "B", "--json"],
        vec!["scope", "check", "--delivered", "B", "--cold", "--json"],
        vec!["scope", "check", "--delivered", "B", "--json", "--call", call.to_str().unwrap()],
        vec!["scope", "current", "--json", "--call", call.to_str().unwrap()],
    ] {
        let o = sb.cmd(&args).timeout(BOUND).run();
        slowest = slowest.max(o.elapsed);
        assert!(o.elapsed < Duration::from_millis(1500), "{args:?} took {:?}", o.elapsed);
        if args[1] == "check" {
            assert_eq!((o.code, o.json()["decision"]["reason"].as_str()), (1, Some("state-unavailable")), "{args:?}");
        }
    }
    drop(holder.stdin.take());
    assert!(holder.wait().unwrap().success());
    // The lock is free again: the call whose hook could not record has no
    // caller; the chain does not go on to the slot (here B, concurrent).
    let o = sb.cmd(["scope", "check", "--delivered", "B", "--json", "--call", call.to_str().unwrap()]).run();
    assert_eq!((o.code, o.json()["decision"]["reason"].as_str()), (1, Some("unrecorded-call")), "{}", o.stdout);
    let o = sb.cmd(["scope", "current", "--call", call.to_str().unwrap()]).run();
    assert_eq!(o.code, 1, "an unrecorded call has no caller: {}", o.stdout);
    println!("faults: lock held by a process: slowest read {slowest:?}");
}

/// A per-call id that names no record, with a single live chat whose slot
/// the old fall-through would have used: withheld, `unrecorded-call`, on
/// every way of asking. A recorded id still resolves.
#[test]
fn an_exact_call_id_without_a_record_withholds() {
    let sb = Sandbox::new();
    let now = leanctx::base::clock::now_ms();
    let p = json!({"hook_event_name":"PreToolUse","session_id":"solo","tool_name":"mcp__ctx__ctx_read",
        "tool_input":{"path":"a"},"tool_use_id":"toolu_seen"});
    sb.hook("claude", p.to_string()).env("LEAN_CTX_NOW_MS", now.to_string()).ok();
    let ask = |id: &str, cold: bool| {
        let call = json!({"name":"ctx_read","arguments":{"path":"a"},"_meta":{"claudecode/toolUseId":id}});
        let mut args = vec!["scope", "check", "--delivered", "solo", "--json", "--call", "-"];
        if cold {
            args.push("--cold");
        }
        let o = sb.cmd(&args).stdin(call.to_string()).env("LEAN_CTX_NOW_MS", (now + 2000).to_string()).run();
        (o.code, o.json()["decision"]["reason"].as_str().unwrap().to_string())
    };
    // Without a call the slot names "solo", the only live chat: allowed.
    let o = sb.cmd(["scope", "check", "--delivered", "solo"]).env("LEAN_CTX_NOW_MS", (now + 2000).to_string()).run();
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert_eq!(ask("toolu_seen", false), (0, "same-conversation".into()));
    assert_eq!(ask("toolu_never_recorded", false), (1, "unrecorded-call".into()));
    assert_eq!(ask("toolu_never_recorded", true), (1, "unrecorded-call".into()));
}

/// A 1 GiB journal (sparse): a reader reads none of it and withholds; 8
/// hooks at once all answer quickly in little memory and all record (one
/// of them trims it from its last 4 MiB, with a floor at now); readers then
/// trust the small journal again.
#[test]
fn a_huge_journal_is_bounded_for_hooks_and_readers() {
    let sb = Sandbox::new();
    two_chats(&sb);
    let f = std::fs::OpenOptions::new().write(true).open(sb.data.join("journal")).unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    let (o, rss) = sb.cmd(["scope", "check", "--delivered", "B", "--json"]).timeout(BOUND).run_rusage();
    assert_eq!(o.json()["decision"]["reason"], "state-unavailable", "{}", o.stdout);
    assert!(rss < 32 * 1024, "a reader used {rss} KiB");
    let kids: Vec<_> = (0..8)
        .map(|i| {
            let p = json!({"hook_event_name":"UserPromptSubmit","session_id":format!("big-{i}")});
            std::thread::spawn({
                let run = sb.hook("claude", p.to_string()).timeout(BOUND);
                move || run.run_rusage()
            })
        })
        .collect();
    let mut worst = (Duration::ZERO, 0);
    for k in kids {
        let (o, rss) = k.join().unwrap();
        assert_eq!(o.code, 0);
        assert!(o.stderr.is_empty(), "a hook did not record: {}", o.stderr);
        worst = (worst.0.max(o.elapsed), worst.1.max(rss));
    }
    assert!(worst.0 < Duration::from_secs(2), "slowest hook {:?}", worst.0);
    assert!(worst.1 < 64 * 1024, "a hook used {} KiB", worst.1);
    let text = sb.journal();
    assert!(text.len() < 1 << 20, "trimmed: {} bytes", text.len());
    for i in 0..8 {
        assert!(text.contains(&format!("big-{i}")), "big-{i} lost:\n{text}");
    }
    assert!(text.lines().any(|l| l.starts_with("F\t")), "a floor for what the cut head held:\n{text}");
    let o = sb.cmd(["scope", "check", "--delivered", "B", "--json"]).run();
    assert_eq!(o.json()["decision"]["reason"], "concurrent", "{}", o.stdout);
    println!("faults: 1 GiB journal: 8 hooks, slowest {:?}, peak RSS {} KiB", worst.0, worst.1);
}

/// One live chat and a slot that is there but cannot be read: not "no
/// caller" (whose legacy single-conversation allow let the stub through),
/// but state-unavailable, warm and cold.
#[test]
fn a_slot_that_cannot_be_read_is_not_no_caller() {
    type Fault = fn(&Path);
    let cases: Vec<(&str, Fault)> = vec![
        ("does not parse", |p| std::fs::write(p, "{\"session_id\":").unwrap()),
        ("not UTF-8", |p| std::fs::write(p, b"{\"session_id\":\"\xff\"}").unwrap()),
        ("a FIFO", mkfifo),
        ("-> /dev/zero", |p| {
            std::fs::remove_file(p).unwrap();
            std::os::unix::fs::symlink("/dev/zero", p).unwrap();
        }),
        ("-> a slot elsewhere", |p| {
            let elsewhere = p.with_file_name("elsewhere.json");
            std::fs::rename(p, &elsewhere).unwrap();
            std::os::unix::fs::symlink(&elsewhere, p).unwrap();
        }),
        ("0400", |p| std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o400)).unwrap()),
        ("of 1 MiB", |p| {
            std::fs::write(p, format!("{{\"session_id\":\"A\",\"x\":\"{}\"}}", "x".repeat(1 << 20))).unwrap()
        }),
    ];
    for (case, fault) in cases {
        let sb = Sandbox::new();
        sb.hook("claude", r#"{"hook_event_name":"UserPromptSubmit","session_id":"A"}"#).ok();
        fault(&sb.data.join("active_transcript.json"));
        for cold in [false, true] {
            let mut args = vec!["scope", "check", "--delivered", "A", "--json"];
            if cold {
                args.push("--cold");
            }
            let o = sb.cmd(&args).timeout(BOUND).run();
            let v = o.json();
            assert_eq!((o.code, v["decision"]["reason"].as_str()), (1, Some("state-unavailable")), "slot {case}: {v}");
        }
        assert_eq!(
            sb.cmd(["status", "--json"]).timeout(BOUND).report().json()["state_available"],
            false,
            "slot {case}"
        );
    }
}
