//! Every hook command `hooks install` writes, run the way the host runs it
//! (`sh -c`, the command string from the installed config) with a payload it
//! cannot read: not JSON, over the 4 MiB bound, a stdin that never closes.
//! Each must give its event's fail-open answer, and exit 0. A Cursor hook
//! that cannot read its payload cannot learn the event from it: the
//! permission event must carry it on its command line (`--event`), because
//! `{}` there is undocumented and was seen to block every call
//! (docs/HOST-FACTS.md §7). Then: entries an older leanctx installed (the
//! plain `hook cursor`) are recognised and migrated byte-preservingly.

#[cfg(unix)]
use crate::support::HOSTS;
use crate::support::Sandbox;
use serde_json::{Value, json};
use std::fs;
#[cfg(unix)]
use std::io::Write;
#[cfg(unix)]
use std::process::{Command, Stdio};
#[cfg(unix)]
use std::time::{Duration, Instant};

/// How long a hook may take to answer here: its own stdin bound is 1 s
/// (`hook::payload::STDIN_DEADLINE`); the rest is headroom for a loaded
/// machine, not a wait the hook is allowed in production.
#[cfg(unix)]
const ANSWER_BOUND: Duration = Duration::from_secs(20);

/// What each event must answer when the payload cannot be read. Written out
/// here, not taken from the code under test: Cursor's `permission` events
/// defer to Cursor (`ask`), `beforeSubmitPrompt` lets the prompt through,
/// everything else of Cursor's is `{}`; Claude Code, Codex and CodeBuddy get
/// no output and exit 0 on every event (no opinion: the call proceeds).
fn fail_open(host: &str, event: &str) -> Option<Value> {
    match (host, event) {
        ("cursor", "beforeMCPExecution") => Some(json!({"permission": "ask"})),
        ("cursor", "beforeSubmitPrompt") => Some(json!({"continue": true})),
        ("cursor", _) => Some(json!({})),
        _ => None,
    }
}

/// Our (event, command) pairs in an installed config, flat or nested.
fn installed(v: &Value, host: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (event, list) in v["hooks"].as_object().expect("a hooks object") {
        for item in list.as_array().into_iter().flatten() {
            let handlers: Vec<&Value> = match item.get("hooks") {
                Some(Value::Array(hs)) => hs.iter().collect(),
                _ => vec![item],
            };
            for h in handlers {
                let Some(cmd) = h["command"].as_str() else { continue };
                if leanctx::install::command::parse_ours(cmd).is_some_and(|o| o.host.as_str() == host) {
                    out.push((event.clone(), cmd.to_string()));
                }
            }
        }
    }
    out
}

/// Start `cmd` as the host would, with nothing on stdin yet.
#[cfg(unix)]
fn start(sb: &Sandbox, cmd: &str) -> std::process::Child {
    let mut c = Command::new("sh");
    c.arg("-c").arg(cmd).env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
    c.env("HOME", &sb.home).env("LEAN_CTX_DATA_DIR", &sb.data).current_dir(&sb.project);
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.spawn().expect("sh")
}

/// Wait for the answer within [`ANSWER_BOUND`]: (stdout, stderr, how long).
#[cfg(unix)]
fn answer(mut child: std::process::Child, started: Instant, what: &str) -> (String, String, Duration) {
    crate::support::wait_within(&mut child, started, ANSWER_BOUND, what);
    let took = started.elapsed();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{what}: {}", String::from_utf8_lossy(&o.stderr));
    (String::from_utf8(o.stdout).unwrap(), String::from_utf8_lossy(&o.stderr).into_owned(), took)
}

#[cfg(unix)]
fn check(host: &str, event: &str, kind: &str, out: &str, err: &str) {
    let got: Option<Value> =
        (!out.trim().is_empty()).then(|| serde_json::from_str(out).unwrap_or_else(|e| panic!("{out:?}: {e}")));
    assert_eq!(got, fail_open(host, event), "{host} {event}, {kind}: stderr {err}");
    assert!(err.contains("answering without recording"), "{host} {event}, {kind}: says why on stderr: {err}");
}

#[cfg(unix)] // sh -c, as the hosts run hooks
#[test]
fn every_installed_command_answers_its_events_fail_open_answer_to_an_unreadable_payload() {
    let sb = Sandbox::new();
    let mut never_closing = Vec::new();
    for host in HOSTS {
        let p = sb.hooks_file(host);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        sb.cmd(["hooks", "install", host, "--no-server"]).ok();
        let entries = installed(&serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap(), host);
        assert!(entries.len() >= 9, "{host}: {entries:?}");
        for (event, cmd) in entries {
            // Not JSON; then over the size bound (the hook stops reading:
            // our write may fail, which is the host's business, not ours).
            for (kind, input) in
                [("not JSON", b"{\"hook_event_name\": ".to_vec()), ("too big", vec![b' '; (4 << 20) + 1])]
            {
                let mut child = start(&sb, &cmd);
                let mut stdin = child.stdin.take().unwrap();
                let writer = std::thread::spawn(move || {
                    let _ = stdin.write_all(&input);
                });
                let (out, err, _) = answer(child, Instant::now(), &format!("{host} {event} {kind}"));
                writer.join().unwrap();
                check(host, &event, kind, &out, &err);
            }
            // Stdin left open: all at once, so the 1 s waits overlap.
            let mut child = start(&sb, &cmd);
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(b"{\"hook_event_name\": \"").unwrap();
            never_closing.push((host, event, Instant::now(), child, stdin));
        }
    }
    for (host, event, started, child, stdin) in never_closing {
        let (out, err, took) = answer(child, started, &format!("{host} {event} open stdin"));
        drop(stdin);
        check(host, &event, "stdin never closes", &out, &err);
        assert!(took >= Duration::from_millis(900), "{host} {event}: answered before its stdin bound ({took:?})");
    }
    assert!(!sb.data.join("journal").exists(), "an unreadable payload recorded something");
}

/// A Cursor config as an older leanctx left it: the plain `hook cursor` on
/// every event, among the user's own entries, in the user's formatting.
#[test]
fn plain_cursor_entries_are_migrated_in_place_and_removed_byte_for_byte() {
    let sb = Sandbox::new();
    let p = sb.hooks_file("cursor");
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let foreign = "{\n\t\"version\": 1,\n\t\"hooks\": {\n\t\t\"stop\": [ {\"command\": \"say done\"} ],\n\t\t\
                   \"beforeMCPExecution\": [ {\"command\": \"/usr/bin/guard\", \"failClosed\": true} ]\n\t},\n\t\
                   \"x\": [1, 2.50, null]\n}\n";
    fs::write(&p, foreign).unwrap();
    sb.cmd(["hooks", "install", "cursor", "--no-server"]).ok();
    let new = fs::read_to_string(&p).unwrap();
    let with_event: Vec<(String, String)> = installed(&serde_json::from_str(&new).unwrap(), "cursor")
        .into_iter()
        .filter(|(_, c)| c.contains(" --event "))
        .collect();
    let mut events: Vec<&str> = with_event.iter().map(|(e, _)| e.as_str()).collect();
    events.sort_unstable();
    assert_eq!(events, ["beforeMCPExecution", "beforeSubmitPrompt"], "{new}");
    for (event, cmd) in &with_event {
        assert!(cmd.ends_with(&format!(" hook cursor --event {event}")), "{cmd}");
    }
    // What the older leanctx wrote: the same file with the plain command.
    let old = with_event.iter().fold(new.clone(), |t, (e, _)| t.replace(&format!(" --event {e}"), ""));
    assert_ne!(old, new);

    fs::write(&p, &old).unwrap();
    let st = sb.cmd(["hooks", "status", "cursor", "--json"]).ok().json();
    assert_eq!(st["hosts"][0]["files"][0]["state"], "outdated", "{st:#}");
    let out = sb.cmd(["hooks", "install", "cursor", "--no-server"]).ok();
    assert!(out.stdout.contains("beforeMCPExecution"), "says what it updated: {}", out.stdout);
    assert_eq!(fs::read_to_string(&p).unwrap(), new, "migrated in place, every other byte kept");
    let st = sb.cmd(["hooks", "status", "cursor", "--json"]).ok().json();
    assert_eq!(st["hosts"][0]["files"][0]["state"], "installed", "{st:#}");

    // Uninstall gives the user's file back, from the old entries and the new.
    for installed_text in [&old, &new] {
        fs::write(&p, installed_text).unwrap();
        sb.cmd(["hooks", "uninstall", "cursor", "--no-server"]).ok();
        assert_eq!(fs::read_to_string(&p).unwrap(), foreign);
    }
}

/// A panic in the hook (made by `LEANCTX_HOOK_PANIC`, which only debug
/// builds read; its message quotes the payload): every host still gets the
/// event's fail-open answer and exit 0, and stderr says where the panic was,
/// never its text.
#[test]
fn a_panicking_hook_answers_fail_open_and_keeps_its_payload_off_stderr() {
    const MARK: &str = "PIN-4821-never-on-stderr";
    let sb = Sandbox::new();
    let cases = [
        ("cursor", "beforeMCPExecution", true),
        ("cursor", "beforeSubmitPrompt", true),
        ("cursor", "stop", false),
        ("claude-code", "PreToolUse", false),
        ("codex", "PreToolUse", false),
        ("codebuddy", "PreToolUse", false),
    ];
    for (host, event, named) in cases {
        let payload = json!({"hook_event_name": event, "session_id": "s1", "conversation_id": "s1",
            "tool_name": "mcp__x__read", "tool_input": {"path": MARK}});
        let mut run = sb.cmd(["hook", host]);
        if named {
            run = run.arg("--event").arg(event);
        }
        let o = run.env("LEANCTX_HOOK_PANIC", "1").stdin(payload.to_string()).run();
        assert_eq!(o.code, 0, "{host} {event}: {}", o.stderr);
        let got: Option<Value> = (!o.stdout.trim().is_empty()).then(|| serde_json::from_str(&o.stdout).unwrap());
        assert_eq!(got, fail_open(host, event), "{host} {event}: {}", o.stderr);
        let err = o.stderr.replace('\\', "/"); // Windows: src\cli\hook.rs
        assert!(err.contains("leanctx hook: panic at src/cli/hook.rs:"), "{host} {event}: {err}");
        assert!(err.contains("internal error; answering without recording"), "{host} {event}: {err}");
        assert!(!err.contains(MARK), "{host} {event}: the panic's text quoted the payload onto stderr: {err}");
    }
}
