//! Hostile transcripts through the real binary (issue 22): a Claude Code
//! delivery is confirmed and its re-read stubbed, then the transcript the
//! second witness reads is made missing, unreadable, a FIFO, huge,
//! truncated, rewritten or not JSON. The next re-read must withhold, in
//! bounded time, through `leanctx stub` and through `leanctx serve` alike
//! (src/witness/, docs/DELIVERY.md §8).

use crate::serve::{Serve, claude_batch, is_stub};
use crate::support::Sandbox;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A re-read after the transcript turned hostile answers within this
/// (generous: a loaded 2-core machine; a hang is caught by the run's own
/// timeout long before the default 30 s).
const BOUND: Duration = Duration::from_secs(10);

/// What the host had written before the baseline re-read: the witness has
/// read up to its end.
fn lines(session: &str) -> String {
    let mut s = String::new();
    for i in 0..4 {
        s.push_str(&format!(
            "{{\"type\":\"user\",\"uuid\":\"{session}-u{i}\",\"message\":{{\"role\":\"user\",\"content\":\"go\"}}}}\n"
        ));
        s.push_str(&format!(
            "{{\"type\":\"assistant\",\"uuid\":\"{session}-a{i}\",\"message\":{{\"content\":[{{\"type\":\"text\",\"text\":\"ok {i}\"}}]}}}}\n"
        ));
    }
    s
}

fn append(t: &Path, bytes: &[u8]) {
    std::fs::OpenOptions::new().append(true).open(t).unwrap().write_all(bytes).unwrap();
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

fn is_root() -> bool {
    // SAFETY: no arguments, no memory.
    unsafe { libc::geteuid() == 0 }
}

/// A FIFO opened read-write by the test stays open (so a blocking read of it
/// would wait forever) until the cases end.
static HELD: std::sync::Mutex<Vec<std::fs::File>> = std::sync::Mutex::new(Vec::new());

/// A hostile transcript: its name, and how the test makes it.
type Case = (&'static str, fn(&Path));

fn cases() -> Vec<Case> {
    let mut v: Vec<Case> = vec![
        ("missing", |t| std::fs::remove_file(t).unwrap()),
        ("a directory", |t| {
            std::fs::remove_file(t).unwrap();
            std::fs::create_dir(t).unwrap();
        }),
        ("a symlink loop", |t| {
            std::fs::remove_file(t).unwrap();
            std::os::unix::fs::symlink(t, t).unwrap();
        }),
        ("a FIFO held open", |t| {
            std::fs::remove_file(t).unwrap();
            mkfifo(t);
            let f = std::fs::OpenOptions::new().read(true).write(true).open(t).unwrap();
            HELD.lock().unwrap().push(f);
        }),
        ("a link to /dev/zero", |t| {
            std::fs::remove_file(t).unwrap();
            std::os::unix::fs::symlink("/dev/zero", t).unwrap();
        }),
        ("huge: 9 MiB appended since the last question", |t| {
            let line = format!("{{\"type\":\"progress\",\"data\":\"{}\"}}\n", "x".repeat(64 * 1024));
            let mut f = std::fs::OpenOptions::new().append(true).open(t).unwrap();
            for _ in 0..(9 << 20) / line.len() + 1 {
                f.write_all(line.as_bytes()).unwrap();
            }
        }),
        ("huge: 1 GiB of NUL bytes (sparse) appended", |t| {
            let f = std::fs::OpenOptions::new().write(true).open(t).unwrap();
            let len = f.metadata().unwrap().len();
            f.set_len(len + (1 << 30)).unwrap();
        }),
        ("truncated below what was read", |t| {
            let len = std::fs::metadata(t).unwrap().len();
            std::fs::OpenOptions::new().write(true).open(t).unwrap().set_len(len / 2).unwrap();
        }),
        ("truncated to nothing, then written anew and longer", |t| {
            // The same file (inode), emptied and written again: another
            // conversation's lines, where the old ones were.
            let f = std::fs::OpenOptions::new().write(true).open(t).unwrap();
            f.set_len(0).unwrap();
            drop(f);
            append(t, format!("{}{}", lines("another"), lines("and-more")).as_bytes());
        }),
        ("rewritten in place: same length, different bytes", |t| {
            let mut b = std::fs::read(t).unwrap();
            let n = b.len();
            // The last line, rewritten: still JSON, still the same length.
            let i = b[..n - 1].iter().rposition(|&c| c == b'k').unwrap();
            b[i] = b'K';
            let mut f = std::fs::OpenOptions::new().write(true).open(t).unwrap();
            f.write_all(&b).unwrap();
        }),
        ("replaced by another file", |t| {
            let other = t.with_extension("new");
            std::fs::write(&other, format!("{}{}", lines("other"), lines("more"))).unwrap();
            std::fs::rename(other, t).unwrap();
        }),
        ("a line that is not JSON", |t| append(t, b"this is not json\n")),
        ("a line of invalid UTF-8 and NUL", |t| append(t, b"{\xff\xfe\x00}\n")),
        ("a JSON line that is not an object", |t| append(t, b"[\"compact_boundary\"]\n")),
    ];
    if !is_root() {
        v.push(("unreadable (mode 000)", |t| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(t, std::fs::Permissions::from_mode(0o000)).unwrap();
        }));
    }
    v
}

/// One session per case, its transcript a file of the sandbox with the
/// host's lines in it.
fn session(sb: &Sandbox, i: usize) -> (String, PathBuf) {
    let s = format!("S{i}");
    let t = crate::ledger::claude_turn(sb, &s);
    append(&t, lines(&s).as_bytes());
    // The baseline's calls, as the host writes them before making them.
    for id in ["toolu_1", "toolu_2"] {
        crate::support::host_writes_call(&t, id);
    }
    (s, t)
}

/// The host's next turn: its prompt hook names the (now hostile)
/// transcript, and must answer at once; then the read's PreToolUse. The
/// `_meta` its call carries.
fn turn_and_pre(sb: &Sandbox, session: &str, t: &Path, id: &str) -> Value {
    let p = json!({"session_id": session, "hook_event_name": "UserPromptSubmit", "transcript_path": t, "cwd": "/p"});
    let o = sb.hook("claude-code", p.to_string()).timeout(BOUND).run();
    assert_eq!(o.code, 0, "{o:?}");
    let pre = json!({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "mcp__leanctx__read",
        "tool_input": {"path": "a.rs"}, "tool_use_id": id, "transcript_path": t, "cwd": "/p"});
    sb.hook("claude-code", pre.to_string()).timeout(BOUND).ok();
    json!({"claudecode/toolUseId": id})
}

fn reason(v: &Value) -> String {
    v["decision"]["reason"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_hostile_transcript_withholds_through_leanctx_stub() {
    let sb = Sandbox::new();
    let result = sb.tmp.path().join("result.json");
    let text = "fn a() {}\n".repeat(50);
    let res = json!({"content": [{"type": "text", "text": text}]});
    std::fs::write(&result, res.to_string()).unwrap();
    let ask = |session: &str, t: &Path, id: &str| -> (i32, Value, Duration) {
        let meta = turn_and_pre(&sb, session, t, id);
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read", "arguments": {"path": "a.rs"}, "_meta": meta}});
        let c = sb.tmp.path().join(format!("{session}-{id}.json"));
        std::fs::write(&c, call.to_string()).unwrap();
        let started = Instant::now();
        let o = sb
            .cmd(["stub", "--call", c.to_str().unwrap(), "--key", "a.rs", "--version", "v1", "--json", "--result"])
            .arg(&result)
            .timeout(BOUND)
            .run();
        assert!(matches!(o.code, 0 | 1), "{o:?}");
        (o.code, o.json(), started.elapsed())
    };
    let mut failures = Vec::new();
    for (i, (name, make)) in cases().into_iter().enumerate() {
        let (s, t) = session(&sb, i);
        let (code, _, _) = ask(&s, &t, "toolu_1");
        assert_eq!(code, 1, "{name}: the first read delivers");
        claude_batch(&sb, &s, "toolu_1", &res);
        let (code, j, _) = ask(&s, &t, "toolu_2");
        assert_eq!((code, reason(&j)), (0, "confirmed-delivery".into()), "{name}: the baseline re-read: {j}");
        make(&t);
        let (code, j, took) = ask(&s, &t, "toolu_3");
        let r = reason(&j);
        if code != 1 || !matches!(r.as_str(), "withdrawn" | "transcript-unavailable") || took > BOUND {
            failures.push(format!("{name}: exit {code} {r} in {took:?}: {j}"));
        }
    }
    HELD.lock().unwrap().clear();
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_hostile_transcript_withholds_through_leanctx_serve() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.join("a.rs"), "fn a() {}\n".repeat(50)).unwrap();
    let mut srv = Serve::init(&sb, "claude-code");
    let mut failures = Vec::new();
    for (i, (name, make)) in cases().into_iter().enumerate() {
        let (s, t) = session(&sb, i);
        let read = |srv: &mut Serve, id: &str| {
            let meta = turn_and_pre(&sb, &s, &t, id);
            let started = Instant::now();
            let r = srv.read(json!({"path": "a.rs"}), meta);
            assert_eq!(r["isError"], false, "{name}: {r}");
            (r, started.elapsed())
        };
        let (r, _) = read(&mut srv, "toolu_1");
        assert!(!is_stub(&r), "{name}: the first read is whole");
        claude_batch(&sb, &s, "toolu_1", &r);
        assert!(is_stub(&read(&mut srv, "toolu_2").0), "{name}: the baseline re-read is a stub");
        make(&t);
        let (r, took) = read(&mut srv, "toolu_3");
        if is_stub(&r) || took > BOUND {
            failures.push(format!("{name}: {} in {took:?}", if is_stub(&r) { "a stub" } else { "whole" }));
        }
    }
    HELD.lock().unwrap().clear();
    // The server went on after every case, and ends cleanly.
    assert_eq!(srv.finish(), 0);
    assert!(failures.is_empty(), "{failures:#?}");
}
