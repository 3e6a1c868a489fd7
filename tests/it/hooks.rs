//! `leanctx hook <host>` through the real binary: every captured and
//! composed payload, each host's answer, bad input, bounds, secrets and
//! many processes at once.

use crate::support::{Sandbox, payload, payloads};
use leanctx::Host;
use leanctx::state::journal::Record;
use serde_json::{Value, json};
use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

fn host_of_dir(dir: &str) -> &'static str {
    match dir {
        "claude" => "claude-code",
        "codex" => "codex",
        "cursor" => "cursor",
        "codebuddy" => "codebuddy",
        other => panic!("unknown fixture dir {other}"),
    }
}

/// Every payload file, in order, per (host dir, scenario).
fn scenarios() -> Vec<(String, String, Vec<std::path::PathBuf>)> {
    let mut out = Vec::new();
    for host in ["claude", "codex", "cursor", "codebuddy"] {
        let hdir = payloads().join(host);
        let mut scen: Vec<_> = std::fs::read_dir(&hdir).unwrap().flatten().map(|e| e.path()).collect();
        scen.sort();
        for s in scen {
            let mut files: Vec<_> = std::fs::read_dir(&s)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let n = p.file_name().unwrap().to_string_lossy().into_owned();
                    // Hook payloads only: not the server's calls, nor what the model or server got.
                    n.ends_with(".json")
                        && !n.starts_with("mcp-tools-call")
                        && n != "model-received.json"
                        && n != "server-result.json"
                })
                .collect();
            files.sort();
            // A run captured without its hooks (codex/structured-ledger) has none to feed.
            if files.is_empty() {
                continue;
            }
            out.push((host.to_string(), s.file_name().unwrap().to_string_lossy().into_owned(), files));
        }
    }
    out
}

/// Check an answer is what the host accepts: nothing, or one JSON object
/// of the right dialect.
fn assert_dialect(host: &str, event: &str, stdout: &str) {
    match host {
        "cursor" => {
            let v: Value = serde_json::from_str(stdout.trim()).expect("cursor always gets JSON");
            assert!(v.is_object());
            if event == "beforeMCPExecution" || event == "preToolUse" {
                assert!(v.get("permission").is_some(), "{event}: {stdout}");
            }
        }
        _ => {
            if !stdout.trim().is_empty() {
                let v: Value = serde_json::from_str(stdout.trim()).expect("JSON answer");
                assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
            }
        }
    }
}

#[test]
fn every_fixture_is_accepted_and_answered_in_the_hosts_dialect() {
    let mut n = 0;
    for (hdir, scen, files) in scenarios() {
        let sb = Sandbox::new();
        let host = host_of_dir(&hdir);
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            let event = serde_json::from_str::<Value>(&text).unwrap()["hook_event_name"].as_str().unwrap().to_string();
            let o = sb.hook(host, &text).ok();
            assert!(o.stderr.is_empty(), "{hdir}/{scen}/{}: stderr {:?}", f.display(), o.stderr);
            assert_dialect(host, &event, &o.stdout);
            // No policy: Claude-style hosts print nothing at all.
            if host != "cursor" {
                assert_eq!(o.stdout, "", "{hdir}/{scen}/{event}");
            }
            n += 1;
        }
        let slot = sb.slot().unwrap_or_else(|| panic!("{hdir}/{scen}: no slot written"));
        let want_key = if host == "cursor" { "conversation_id" } else { "session_id" };
        assert!(slot[want_key].is_string(), "{hdir}/{scen}: {slot}");
        assert!(slot["transcript_path"].is_string());
        assert!(slot["updated_at"].is_u64());
        assert!(!sb.journal().is_empty(), "{hdir}/{scen}: nothing journaled");
    }
    assert!(n > 150, "only {n} fixtures found");
}

#[test]
fn claude_baseline_records_sightings_call_and_end() {
    let sb = Sandbox::new();
    for i in 1..=12 {
        let f = std::fs::read_dir(payloads().join("claude/baseline"))
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with(&format!("{i:02}-")))
            .unwrap();
        sb.hook("claude", std::fs::read_to_string(f.path()).unwrap()).ok();
    }
    let j = sb.journal();
    let sid = "68bfdc56-c5ac-4f7e-b000-18c5bbb6c9d7";
    assert!(Sandbox::sightings(&j).iter().any(|s| s.1 == sid));
    let calls = Sandbox::calls(&j);
    let c = calls.first().expect("call record");
    assert_eq!((c.host, c.conv, c.agent, c.server, c.tool), (Host::ClaudeCode, sid, None, Some("ctx"), "ctx_read"));
    assert_eq!(c.fp.len(), 32, "the fingerprint, sealed with the data dir's secret");
    assert_eq!(c.call_id, Some("toolu_mock_3ea9fac1ab1948ea"));
    assert!(Sandbox::count(&j, |r| matches!(r, Record::End { conv, .. } if *conv == sid)) > 0);
    // ToolSearch is not an MCP tool: one call record only.
    assert_eq!(Sandbox::count(&j, |r| matches!(r, Record::Call(_))), 1);
    let st = sb.cmd(["status", "--json"]).report().json();
    assert_eq!(st["live"].as_array().unwrap().len(), 0, "ended session is not live");
    assert_eq!(st["hosts"][0]["host"], "claude-code");
    assert_eq!(st["hosts"][0]["last_event"], "Stop");
}

#[test]
fn cursor_events_normalise() {
    let sb = Sandbox::new();
    let conv = "0e1f4ed8-d858-4557-9fc5-6cbf5298eb8b";
    for f in [
        "01-sessionStart.json",
        "03-beforeMCPExecution-string-input.json",
        "05-beforeMCPExecution-http.json",
        "06-preToolUse-mcp.json",
        "07-preCompact.json",
        "08-subagentStart.json",
    ] {
        let o = sb.hook("cursor", payload(&format!("cursor/composed/{f}"))).ok();
        if f.contains("MCP") || f.contains("preToolUse") {
            assert_eq!(o.json(), json!({"permission": "ask"}), "no opinion defers to Cursor's approval");
        }
    }
    let j = sb.journal();
    let calls = Sandbox::calls(&j);
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0].server, Some("lean-ctx"), "server from mcp_server_name");
    assert_eq!(calls[1].server, Some("lean-ctx-http"), "mcp_server_name over the URL's host");
    assert_eq!(calls[2].server, None, "preToolUse `MCP:<tool>` names no server");
    // String (beforeMCPExecution) and object (preToolUse) tool_input give one fingerprint.
    assert_eq!(calls[1].fp, calls[2].fp);
    assert!(calls.iter().all(|c| c.tool == "ctx_read" && c.conv == conv));
    assert_eq!(calls[2].call_id, Some("5c0f3a9e-2b1d-4c7e-9a8f-6d5e4c3b2a19"), "preToolUse tool_use_id kept");
    assert!(
        Sandbox::count(&j, |r| matches!(r, Record::Compaction { conv: c, .. } if *c == conv)) > 0,
        "preCompact is a compaction"
    );
    // The subagent id (the parent's Task call id, with a newline) is kept hashed.
    let starts = Sandbox::subagent_starts(&j);
    assert_eq!(starts.len(), 1, "{j}");
    let agent = starts[0];
    assert!(agent.starts_with("task:h:") && agent.len() == "task:h:".len() + 32, "{agent}");
    assert_eq!(sb.slot().unwrap()["conversation_id"], conv);
    let o = sb.hook("cursor", payload("cursor/composed/02-beforeSubmitPrompt.json")).ok();
    assert_eq!(o.json(), json!({"continue": true}));
    // The stop names the same subagent: it is closed by its id.
    sb.hook("cursor", payload("cursor/composed/09-subagentStop.json")).ok();
    let j = sb.journal();
    assert!(j.lines().any(|l| l.starts_with("u\t") && l.ends_with(&format!("\t{conv}\t{agent}"))), "{j}");
    let o = sb.hook("cursor", payload("cursor/composed/10-stop.json")).ok();
    assert_eq!(o.json(), json!({}));
}

#[test]
fn cursor_task_scope_writes_its_own_slot_and_sights_its_conversation() {
    let sb = Sandbox::new();
    sb.hook("cursor", payload("cursor/composed/01-sessionStart.json")).ok();
    let before = sb.slot().unwrap();
    sb.hook("cursor", payload("cursor/composed/03-beforeMCPExecution-string-input.json"))
        .env("CURSOR_TASK_ID", "task-77")
        .ok();
    assert_eq!(sb.slot().unwrap()["updated_at_ms"], before["updated_at_ms"], "main slot untouched");
    let scopes: Vec<_> = std::fs::read_dir(sb.data.join("scopes")).unwrap().flatten().collect();
    assert_eq!(scopes.len(), 1);
    let name = scopes[0].file_name().to_string_lossy().into_owned();
    assert!(!name.contains("task-77"), "ids never reach file names");
    let scope_slot: Value = serde_json::from_str(&std::fs::read_to_string(scopes[0].path()).unwrap()).unwrap();
    assert_eq!(scope_slot["agent"], "task:task-77");
    let j = sb.journal();
    // The task's hook sights the conversation it runs in (so a running task
    // is seen by the concurrency signal), never a second conversation.
    let sightings: Vec<&str> = j.lines().filter(|l| l.starts_with("S\t")).collect();
    assert_eq!(sightings.len(), 2);
    assert!(sightings.iter().all(|l| l.contains("\t0e1f4ed8-d858-4557-9fc5-6cbf5298eb8b\t")), "{j}");
    let st = sb.cmd(["status", "--json"]).report().json();
    assert_eq!(st["concurrent"], false);
    assert!(j.lines().any(|l| l.starts_with("C\t") && l.contains("\ttask:task-77\t")));
}

#[test]
fn unknown_events_are_accepted_and_ignored() {
    let sb = Sandbox::new();
    for host in ["claude", "codex", "codebuddy", "cursor"] {
        let p = json!({"hook_event_name": "SomethingNew", "session_id": "s1", "conversation_id": "c1"});
        let o = sb.hook(host, p.to_string()).ok();
        assert!(o.stderr.is_empty());
        if host == "cursor" {
            assert_eq!(o.json(), json!({}));
        } else {
            assert_eq!(o.stdout, "");
        }
    }
    assert_eq!(sb.journal(), "");
    assert!(sb.slot().is_none());
}

#[test]
fn event_override_wins() {
    let sb = Sandbox::new();
    let p = json!({"session_id": "s1", "hook_event_name": "Stop"});
    sb.cmd(["hook", "claude", "--event", "SessionEnd"]).stdin(p.to_string()).ok();
    assert!(sb.journal().starts_with("E\t"));
}

/// Inputs no host should send: each must give exit 0, a well-formed
/// fail-open answer, a reason on stderr, and no bad slot.
#[test]
fn bad_input_fails_open_and_writes_no_bad_slot() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let long_id = "a".repeat(1 << 20);
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("empty", b"".to_vec(), true),
        ("whitespace", b"  \n".to_vec(), true),
        ("not json", b"{ not json".to_vec(), true),
        ("non-utf8", vec![b'{', 0xff, 0xfe, b'}'], true),
        ("array", b"[1,2]".to_vec(), true),
        ("string", b"\"x\"".to_vec(), true),
        ("deeply nested", deep.into_bytes(), true),
        ("wrong types", br#"{"hook_event_name": 5, "session_id": {"a": 1}, "tool_name": []}"#.to_vec(), false),
        ("slash id", br#"{"hook_event_name":"SessionStart","session_id":"a/b"}"#.to_vec(), false),
        ("dotdot id", br#"{"hook_event_name":"SessionStart","session_id":".."}"#.to_vec(), false),
        ("nul id", b"{\"hook_event_name\":\"SessionStart\",\"session_id\":\"a\\u0000b\"}".to_vec(), false),
        ("control id", b"{\"hook_event_name\":\"SessionStart\",\"session_id\":\"a\\nb\"}".to_vec(), false),
        (
            "megabyte id",
            format!(r#"{{"hook_event_name":"SessionStart","session_id":"{long_id}"}}"#).into_bytes(),
            false,
        ),
    ];
    for host in ["claude", "codex", "codebuddy", "cursor"] {
        let sb = Sandbox::new();
        for (name, input, says_why) in &cases {
            let o = sb.hook(host, input).run();
            assert_eq!(o.code, 0, "{host} {name}");
            if host == "cursor" {
                assert_eq!(o.json(), json!({}), "{host} {name}");
            } else {
                assert_eq!(o.stdout, "", "{host} {name}");
            }
            if *says_why {
                assert!(o.stderr.contains("leanctx hook"), "{host} {name}: stderr {:?}", o.stderr);
            }
            assert!(o.elapsed < Duration::from_secs(10), "{host} {name}");
        }
        assert!(sb.slot().is_none(), "{host}: a bad payload wrote a slot");
        assert_eq!(sb.journal(), "", "{host}: a bad payload was journaled");
    }
}

#[test]
fn gated_call_with_bad_input_on_cursor_still_answers_permission() {
    let sb = Sandbox::new();
    let o = sb.cmd(["hook", "cursor", "--event", "beforeMCPExecution"]).stdin("garbage").run();
    assert_eq!(o.code, 0);
    assert_eq!(o.json(), json!({"permission": "ask"}));
    let o = sb.cmd(["hook", "cursor", "--event", "beforeReadFile"]).stdin("garbage").run();
    assert_eq!(o.json(), json!({"permission": "allow"}), "beforeReadFile takes no ask");
}

#[test]
fn stdin_that_never_closes_is_bounded() {
    let sb = Sandbox::new();
    let mut child = sb.cmd(["hook", "codex"]).spawn_open();
    let mut sin = child.stdin.take().unwrap();
    sin.write_all(br#"{"hook_event_name":"SessionStart","session_id":"s1""#).unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(10), "hook hung on an open stdin");
        std::thread::sleep(Duration::from_millis(5));
    }
    let o = child.wait_with_output().unwrap();
    drop(sin);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did not close"));
    assert!(sb.slot().is_none());
}

#[test]
fn complete_payload_on_an_open_stdin_is_still_used() {
    let sb = Sandbox::new();
    let mut child = sb.cmd(["hook", "codex"]).spawn_open();
    let mut sin = child.stdin.take().unwrap();
    sin.write_all(br#"{"hook_event_name":"SessionStart","session_id":"s-open"}"#).unwrap();
    let o = child.wait_with_output().unwrap();
    drop(sin);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(sb.slot().unwrap()["session_id"], "s-open");
}

#[test]
fn huge_stdin_is_drained_and_fails_open() {
    let sb = Sandbox::new();
    // 12 MiB: over the 4 MiB payload bound. The writer must not get EPIPE
    // before the hook has read (drained) it all.
    let mut big =
        br#"{"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"mcp__a__b","tool_input":{"x":""#.to_vec();
    big.extend(std::iter::repeat_n(b'a', 12 << 20));
    big.extend_from_slice(b"\"}}");
    let mut child = sb.cmd(["hook", "claude"]).spawn_open();
    let mut sin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || sin.write_all(&big));
    let o = child.wait_with_output().unwrap();
    assert!(writer.join().unwrap().is_ok(), "host's write must complete");
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "");
    assert!(String::from_utf8_lossy(&o.stderr).contains("larger than"));
}

/// The payload buffer starts at 16 KiB and grows only when full: payloads
/// of every size around its growth points, and at the 4 MiB bound itself,
/// arrive whole; one byte over the bound is "too large".
#[test]
fn payloads_at_the_buffers_growth_points_and_the_bound_arrive_whole() {
    let sb = Sandbox::new();
    let payload = |len: usize, session: &str| {
        let head = format!(r#"{{"hook_event_name":"SessionStart","session_id":"{session}","pad":""#);
        let mut p = head.into_bytes();
        let pad = len - p.len() - 2;
        p.extend(std::iter::repeat_n(b'a', pad));
        p.extend_from_slice(b"\"}");
        assert_eq!(p.len(), len);
        p
    };
    let bound = leanctx::hook::payload::MAX_PAYLOAD_BYTES;
    for (i, len) in [16_383, 16_384, 16_385, 32_768, 65_535, 65_536, 65_537, 131_073, bound].into_iter().enumerate() {
        let session = format!("s{i}");
        let o = sb.hook("claude-code", payload(len, &session)).run();
        assert_eq!((o.code, o.stderr.as_str()), (0, ""), "{len} bytes: {o:?}");
        assert_eq!(sb.slot().unwrap()["session_id"], session.as_str(), "{len} bytes");
    }
    let o = sb.hook("claude-code", payload(bound + 1, "over")).run();
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stderr.contains("larger than"), "{o:?}");
    assert_ne!(sb.slot().unwrap()["session_id"], "over");
}

#[test]
fn nothing_secret_reaches_the_disk() {
    let sb = Sandbox::new();
    let secrets = ["SECRET-PROMPT-7f3a", "SECRET-ARG-91bc", "SECRET-CONTENT-2d4e", "SECRET-MSG-55aa"];
    let events = vec![
        ("claude", json!({"hook_event_name":"UserPromptSubmit","session_id":"s1","prompt":secrets[0]})),
        (
            "claude",
            json!({"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"mcp__ctx__ctx_read",
            "tool_input":{"path":secrets[1]},"tool_use_id":"toolu_1"}),
        ),
        (
            "claude",
            json!({"hook_event_name":"PostToolUse","session_id":"s1","tool_name":"mcp__ctx__ctx_read",
            "tool_input":{"path":secrets[1]},"tool_response":[{"type":"text","text":secrets[2]}]}),
        ),
        ("claude", json!({"hook_event_name":"Stop","session_id":"s1","last_assistant_message":secrets[3]})),
        (
            "cursor",
            json!({"hook_event_name":"beforeMCPExecution","conversation_id":"c1","tool_name":"ctx_read",
            "tool_input": format!("{{\"path\":\"{}\"}}", secrets[1]),"command":"lean-ctx"}),
        ),
        ("cursor", json!({"hook_event_name":"beforeSubmitPrompt","conversation_id":"c1","prompt":secrets[0]})),
        ("codex", json!({"hook_event_name":"PostCompact","session_id":"s2","compact_summary":secrets[2]})),
    ];
    for (host, p) in events {
        sb.hook(host, p.to_string()).ok();
    }
    let mut files = 0;
    for e in walk(&sb.data) {
        let bytes = std::fs::read(&e).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for s in secrets {
            assert!(!text.contains(s), "{} contains {s}", e.display());
        }
        files += 1;
    }
    assert!(files >= 3);
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[cfg(unix)] // file modes
#[test]
fn state_files_are_0600_and_dirs_0700() {
    let sb = Sandbox::new();
    sb.hook("cursor", payload("cursor/composed/01-sessionStart.json")).ok();
    sb.hook("cursor", payload("cursor/composed/01-sessionStart.json")).env("CURSOR_TASK_ID", "t1").ok();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&sb.data), 0o700);
    assert_eq!(mode(&sb.data.join("scopes")), 0o700);
    for f in walk(&sb.data) {
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
}

#[cfg(unix)] // file modes
#[test]
fn unsafe_data_dir_is_refused_but_the_hook_answers() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.data).unwrap();
    std::fs::set_permissions(&sb.data, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = sb.hook("cursor", payload("cursor/composed/03-beforeMCPExecution-string-input.json")).ok();
    assert_eq!(o.json(), json!({"permission": "ask"}));
    assert!(o.stderr.contains("refusing"), "{}", o.stderr);
    assert!(sb.slot().is_none());
    let st = sb.cmd(["status", "--json"]).report().json();
    assert!(st["problems"][0].as_str().unwrap().contains("writable by group or others"));

    // A data dir path that is a file.
    let sb = Sandbox::new();
    std::fs::write(&sb.data, "x").unwrap();
    let o = sb.hook("claude", payload("claude/baseline/01-SessionStart.json")).ok();
    assert!(o.stderr.contains("not a directory"), "{}", o.stderr);
    assert_eq!(std::fs::read_to_string(&sb.data).unwrap(), "x");
}

#[cfg(unix)] // file modes, setpriv
#[test]
fn read_only_data_dir_fails_open() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.data).unwrap();
    // As root, as a user the mode binds (root ignores directory permissions).
    let run = sb.cmd_unprivileged(["hook", "claude"]).stdin(payload("claude/baseline/01-SessionStart.json"));
    std::fs::set_permissions(&sb.data, std::fs::Permissions::from_mode(0o500)).unwrap();
    let o = run.ok();
    assert!(o.stderr.contains("could not record"), "{}", o.stderr);
    assert!(!sb.data.join("journal").exists());
}

/// 64 hook processes at once, plus readers of the slot and the journal:
/// every answer well-formed, no record lost, no torn slot, no stuck lock.
#[test]
#[cfg_attr(windows, ignore = "Wine 8 refuses concurrent replacements of the slot; real Windows not run")]
fn sixty_four_hooks_at_once_with_readers() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.data).unwrap();
    crate::support::make_private(&sb.data);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let slot_path = sb.data.join("active_transcript.json");
    let torn = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let reader_threads: Vec<_> = (0..2)
        .map(|_| {
            let (stop, torn, reads, slot_path) = (stop.clone(), torn.clone(), reads.clone(), slot_path.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Ok(t) = std::fs::read_to_string(&slot_path) {
                        reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if serde_json::from_str::<Value>(&t).is_err() {
                            torn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    let mut cli_readers = Vec::new();
    let mut children = Vec::new();
    for i in 0..64 {
        let p = json!({"hook_event_name":"PreToolUse","session_id":format!("sess-{}", i % 8),
            "tool_name":"mcp__ctx__ctx_read","tool_input":{"path":format!("f{i}")},"tool_use_id":format!("toolu_{i}")});
        children.push(sb.hook("claude", p.to_string()).spawn());
        if i % 8 == 0 {
            cli_readers.push(sb.cmd(["scope", "check", "--delivered", "sess-1", "--json"]).spawn());
        }
    }
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0));
        assert!(o.stdout.is_empty());
        assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    for c in cli_readers {
        let o = c.wait_with_output().unwrap();
        assert!(matches!(o.status.code(), Some(0) | Some(1)));
        serde_json::from_slice::<Value>(&o.stdout).expect("reader output parses");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in reader_threads {
        t.join().unwrap();
    }
    assert_eq!(torn.load(std::sync::atomic::Ordering::Relaxed), 0, "torn slot reads");
    let j = sb.journal();
    for i in 0..64 {
        assert!(j.contains(&format!("\ttoolu_{i}\t")), "call record {i} lost");
    }
    // Not a stuck lock: it can be taken exclusively right away.
    let lock = std::fs::OpenOptions::new().write(true).open(sb.data.join("journal.lock")).unwrap();
    lock.try_lock().expect("journal lock is free");
    // No temp file left behind.
    assert!(walk(&sb.data).iter().all(|p| !p.file_name().unwrap().to_string_lossy().starts_with(".tmp")));
}

#[test]
fn broken_pipe_on_stdout_is_not_an_error() {
    let sb = Sandbox::new();
    let mut child = sb.hook("cursor", payload("cursor/composed/03-beforeMCPExecution-string-input.json")).spawn_open();
    drop(child.stdout.take());
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload("cursor/composed/03-beforeMCPExecution-string-input.json").as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("panick"));
}

/// The real Cursor payloads (tests/fixtures/payloads/cursor-real), hook
/// events only.
fn cursor_real_payloads() -> Vec<(String, Value)> {
    let mut files: Vec<_> =
        std::fs::read_dir(payloads().join("cursor-real")).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "json") && !p.to_string_lossy().contains("mcp-server-observed"))
        .map(|p| {
            let v = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (p.file_name().unwrap().to_string_lossy().into_owned(), v)
        })
        .collect()
}

/// Cursor runs `~/.claude/settings.json` hooks by default, with its own
/// payload (`cursor_version`, lowerCamel names) and `CURSOR_VERSION` set:
/// with both leanctx entries installed, one event runs `hook cursor` and
/// `hook claude-code`. Over every real capture (the CLI's sessionStart run
/// as a "claude-user" hook included), each event is recorded once, under
/// the conversation it names — whichever entry runs first.
#[test]
fn real_cursor_events_are_recorded_once_by_both_entries() {
    let all = cursor_real_payloads();
    assert!(all.len() >= 11, "{}", all.len());
    for order in [["cursor", "claude-code"], ["claude-code", "cursor"]] {
        let sb = Sandbox::new();
        for (name, v) in &all {
            let version = v["cursor_version"].as_str().unwrap();
            for host in order {
                let o = sb.hook(host, v.to_string()).env("CURSOR_VERSION", version).ok();
                assert!(o.stderr.is_empty(), "{name} via {host}: {}", o.stderr);
                assert_dialect(host, v["hook_event_name"].as_str().unwrap(), &o.stdout);
            }
        }
        let j = sb.journal();
        let sightings = Sandbox::sightings(&j);
        assert_eq!(sightings.len(), all.len(), "each event once:\n{j}");
        for ((name, v), s) in all.iter().zip(&sightings) {
            assert_eq!(s.0, Host::Cursor, "{name}");
            assert_eq!(s.2, v["hook_event_name"].as_str().unwrap(), "{name}");
            let conv = v["parent_conversation_id"].as_str().or(v["conversation_id"].as_str()).unwrap();
            if leanctx::base::ids::is_valid_id(conv) {
                assert_eq!(s.1, conv, "{name}");
            } else {
                // The CLI capture's redacted id is no valid id: kept hashed.
                assert_eq!(s.1, leanctx::base::ids::safe_id(conv).unwrap(), "{name}");
            }
        }
    }
    // Claude Code itself, started from Cursor's terminal (CURSOR_VERSION
    // may be inherited), is still recorded by its own entry.
    let sb = Sandbox::new();
    sb.hook("claude", payload("claude/baseline/01-SessionStart.json")).env("CURSOR_VERSION", "3.18.25").ok();
    assert_eq!(Sandbox::count(&sb.journal(), |r| matches!(r, Record::Sighting { .. })), 1);
}

/// `sessionStart` may never come (3.14.7, resume, `/new`, the CLI): the
/// first event of a chat makes it known, whatever it is.
#[test]
fn cursor_without_session_start_is_still_tracked() {
    let sb = Sandbox::new();
    let root = "b60ae0c1-2f85-4c4d-b3e5-b512f9b06e4c";
    sb.hook("cursor", payload("cursor-real/3.18.25-beforeSubmitPrompt.json")).ok();
    assert_eq!(sb.slot().unwrap()["conversation_id"], root);
    let st = sb.cmd(["status", "--json"]).report().json();
    assert_eq!(st["live"][0]["conversation"], root);
    assert_eq!(st["current"]["scope"], root);
}
