//! The witness's read progress as records in its lock file
//! (src/witness/progress.rs): a question that only read on writes one
//! record instead of a new state file, and a record that is torn, of an
//! older save or written by many processes at once never lets a withdrawal
//! go unseen.

use crate::support::{Sandbox, host_writes_call};
use crate::witness::{T0, W, prompt, tool_use};
use leanctx::Host;
use leanctx::witness::{Check, Turn};
use serde_json::json;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The witness's files: (state, lock).
fn files(w: &W) -> (PathBuf, PathBuf) {
    let mut state = None;
    let mut lock = None;
    for e in std::fs::read_dir(w.data.join("witness")).unwrap().flatten() {
        let p = e.path();
        match p.extension().and_then(|x| x.to_str()) {
            Some("json") => state = Some(p),
            Some("lock") => lock = Some(p),
            _ => {}
        }
    }
    (state.unwrap(), lock.unwrap())
}

/// The transcript's lines, as `W::append` takes them.
fn strs(lines: &[String]) -> Vec<&str> {
    lines.iter().map(String::as_str).collect()
}

fn harmless(n: usize) -> Vec<String> {
    (0..n).map(|i| json!({"type": "progress", "data": "x".repeat(100 + i)}).to_string()).collect()
}

fn ino(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().ino()
}

#[test]
fn a_question_that_only_reads_on_writes_a_record_and_keeps_the_state_file() {
    let w = W::new();
    w.turn(Turn::Prompt, T0);
    w.append(&[&prompt("u1"), &tool_use("t1")]);
    assert_eq!(w.ask("t1"), Check::Present);
    let (state, lock) = files(&w);
    let (before, log) = (ino(&state), std::fs::metadata(&lock).unwrap().len());
    for i in 2..6 {
        let mut lines = harmless(3);
        lines.push(tool_use(&format!("t{i}")));
        w.append(&strs(&lines));
        assert_eq!(w.ask("t1"), Check::Present);
    }
    assert_eq!(ino(&state), before, "reading on replaced the state file");
    assert!(std::fs::metadata(&lock).unwrap().len() > log, "no progress record was written");
    // What the records carry is the state's: a rewind to u1 withdraws the
    // tool uses after it, seen by questions whose progress is only records.
    w.append(&[&json!({"type": "last-prompt", "rewound": true, "cutUuid": "u1"}).to_string()]);
    assert!(matches!(w.ask("t4"), Check::Withdrawn(_)), "{:?}", w.ask("t4"));
    assert_ne!(ino(&state), before, "a withdrawal saves the state whole");
}

/// The lock file's last record is damaged (a torn write, a flipped byte)
/// or replaced by an older save's: the question reads again from the last
/// good record's offset, so the facts the lost record carried are seen
/// again, and a rewind to a prompt only that record held still withdraws.
#[test]
fn a_torn_or_foreign_record_reads_again_from_the_last_good_one() {
    type Damage = fn(&Path, &[u8], usize);
    let damages: [(&str, Damage); 4] = [
        ("cut short", |p, log, start| std::fs::write(p, &log[..start + (log.len() - start) / 2]).unwrap()),
        ("a flipped byte", |p, log, start| {
            let mut b = log.to_vec();
            b[start + 30] ^= 0x20;
            std::fs::write(p, b).unwrap();
        }),
        ("no newline", |p, log, _| std::fs::write(p, &log[..log.len() - 1]).unwrap()),
        ("junk appended", |p, log, _| std::fs::write(p, [log, b"0000000000000000 {\"g\":1}\n"].concat()).unwrap()),
    ];
    for (name, damage) in damages {
        let w = W::new();
        w.turn(Turn::Prompt, T0);
        w.append(&[&prompt("u1"), &tool_use("t1")]);
        assert_eq!(w.ask("t1"), Check::Present, "{name}");
        w.append(&[&tool_use("t2")]);
        assert_eq!(w.ask("t1"), Check::Present, "{name}");
        let (_, lock) = files(&w);
        let start = std::fs::read(&lock).unwrap().len();
        w.append(&[&prompt("u2"), &tool_use("t3")]);
        assert_eq!(w.ask("t1"), Check::Present, "{name}");
        let log = std::fs::read(&lock).unwrap();
        assert!(log.len() > start, "{name}: the last question wrote a record");
        damage(&lock, &log, start);
        w.append(&[&json!({"type": "last-prompt", "rewound": true, "cutUuid": "u2"}).to_string()]);
        assert!(matches!(w.ask("t3"), Check::Withdrawn(_)), "{name}: {:?}", w.ask("t3"));
        assert_eq!(w.ask("t2"), Check::Present, "{name}: before the cut point");
    }
}

/// A turn hook saves the state whole (a new save): the records of the
/// older one no longer apply, the next question replaces them, and the
/// hook's save carried their progress (a transcript truncated after it is
/// still caught, which the older offset alone would miss).
#[test]
fn a_turn_save_carries_the_records_progress_and_supersedes_them() {
    let w = W::new();
    w.turn(Turn::Prompt, T0);
    w.append(&[&prompt("u1"), &tool_use("t1")]);
    assert_eq!(w.ask("t1"), Check::Present);
    w.append(&strs(&harmless(20)));
    assert_eq!(w.ask("t1"), Check::Present);
    w.turn(Turn::Prompt, T0 + 1);
    let st = leanctx::witness::file::load(&w.data, Host::ClaudeCode, "S").unwrap().unwrap();
    assert_eq!(st.offset, std::fs::metadata(&w.transcript).unwrap().len(), "the turn saved the records' offset");
    w.append(&[&tool_use("t2")]);
    assert_eq!(w.ask("t1"), Check::Present);
    let (_, lock) = files(&w);
    let log = std::fs::read(&lock).unwrap();
    let records = log.strip_prefix(leanctx::witness::progress::HEADER).expect("the lock file keeps its header");
    assert_eq!(records.iter().filter(|&&b| b == b'\n').count(), 1, "the older records dropped");
    // Truncated to just past the turn's offset: a shrink below what was read.
    let f = std::fs::OpenOptions::new().write(true).open(&w.transcript).unwrap();
    f.set_len(st.offset + 3).unwrap();
    assert!(matches!(w.ask("t1"), Check::EndedAll(_)), "{:?}", w.ask("t1"));
}

/// Many `leanctx stub` processes ask at once while the transcript grows:
/// every answer is a stub until the host cuts the result, and withheld
/// from then on; the records they wrote stay whole.
#[test]
fn many_processes_asking_at_once_keep_the_progress_whole() {
    let sb = Sandbox::new();
    let t = crate::ledger::claude_turn(&sb, "S");
    host_writes_call(&t, "toolu_1");
    let result = sb.tmp.path().join("result.json");
    let res = json!({"content": [{"type": "text", "text": "fn a() {}\n".repeat(50)}]});
    std::fs::write(&result, res.to_string()).unwrap();
    let call = |id: &str| {
        let pre = json!({"session_id": "S", "hook_event_name": "PreToolUse", "tool_name": "mcp__leanctx__read",
            "tool_input": {"path": "a.rs"}, "tool_use_id": id, "transcript_path": t, "cwd": "/p"});
        sb.hook("claude-code", pre.to_string()).ok();
        let c = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read", "arguments": {"path": "a.rs"}, "_meta": {"claudecode/toolUseId": id}}});
        let p = sb.tmp.path().join(format!("{id}.json"));
        std::fs::write(&p, c.to_string()).unwrap();
        p
    };
    let stub = |c: &Path| {
        let o = sb.cmd(["stub", "--call", c.to_str().unwrap(), "--key", "a.rs", "--version", "v1", "--json"]).run();
        (o.code, o.json()["decision"]["reason"].as_str().unwrap_or_default().to_string())
    };
    let first = call("toolu_1");
    let o = sb
        .cmd(["stub", "--call", first.to_str().unwrap(), "--key", "a.rs", "--version", "v1", "--result"])
        .arg(&result)
        .run();
    assert_eq!(o.code, 1, "the first read delivers: {o:?}");
    crate::serve::claude_batch(&sb, "S", "toolu_1", &res);
    let calls: Vec<PathBuf> = (0..24).map(|i| call(&format!("toolu_r{i}"))).collect();
    for i in 0..calls.len() {
        host_writes_call(&t, &format!("toolu_r{i}"));
    }
    let mut grown = std::fs::OpenOptions::new().append(true).open(&t).unwrap();
    std::thread::scope(|s| {
        let hs: Vec<_> =
            calls.chunks(6).map(|cs| s.spawn(move || cs.iter().map(|c| stub(c)).collect::<Vec<_>>())).collect();
        for l in harmless(200) {
            writeln!(grown, "{l}").unwrap();
        }
        for h in hs {
            for (code, reason) in h.join().unwrap() {
                assert_eq!((code, reason.as_str()), (0, "confirmed-delivery"));
            }
        }
    });
    writeln!(
        grown,
        "{}",
        json!({"type": "attachment", "attachment": {"type": "tool_results_cut", "callIds": ["toolu_1"]}})
    )
    .unwrap();
    std::thread::scope(|s| {
        let hs: Vec<_> =
            calls.chunks(6).map(|cs| s.spawn(move || cs.iter().map(|c| stub(c)).collect::<Vec<_>>())).collect();
        for h in hs {
            for (code, reason) in h.join().unwrap() {
                assert_eq!((code, reason.as_str()), (1, "withdrawn"));
            }
        }
    });
}

/// The records are bounded: questions that only read on fill the lock file
/// up to its bound (`MAX_LOG_BYTES`), and then one saves the state whole (a new inode) and
/// the records start over; a question that saw too many ids for one record
/// (over 4 KiB) saves whole at once. A rewind after either is still seen.
#[test]
fn the_records_are_bounded_and_a_full_log_saves_whole() {
    use leanctx::witness::progress::{MAX_LOG_BYTES as LOG_BOUND, MAX_RECORD_BYTES as RECORD_BOUND};
    let w = W::new();
    w.turn(Turn::Prompt, T0);
    w.append(&[&prompt("u1"), &tool_use("t1")]);
    assert_eq!(w.ask("t1"), Check::Present);
    let (state, lock) = files(&w);
    let first = ino(&state);
    let (mut saved_whole, mut longest) = (false, 0);
    for i in 0..400 {
        w.append(&[&tool_use(&format!("tool-use-id-{i:04}-padding-to-grow-each-record"))]);
        assert_eq!(w.ask("t1"), Check::Present, "question {i}");
        let len = std::fs::metadata(&lock).unwrap().len();
        longest = longest.max(len);
        saved_whole |= ino(&state) != first;
    }
    assert!(longest <= LOG_BOUND, "the lock file grew to {longest} bytes");
    assert!(longest > LOG_BOUND / 2, "the records never filled the log ({longest} bytes)");
    assert!(saved_whole, "a full log never saved the state whole");
    // One question that sees more ids than a record may carry.
    let many: Vec<String> = (0..120).map(|i| tool_use(&format!("burst-{i:03}-an-id-long-enough-to-matter"))).collect();
    let before = ino(&state);
    let log_before = std::fs::metadata(&lock).unwrap().len();
    w.append(&strs(&many));
    assert_eq!(w.ask("t1"), Check::Present);
    let log_after = std::fs::metadata(&lock).unwrap().len();
    assert!(
        ino(&state) != before || log_after <= log_before,
        "a record over {RECORD_BOUND} bytes was written ({log_before} -> {log_after})"
    );
    w.append(&[&json!({"type": "last-prompt", "rewound": true, "cutUuid": "u1"}).to_string()]);
    assert!(matches!(w.ask("burst-000-an-id-long-enough-to-matter"), Check::Withdrawn(_)));
}

/// A long-lived process keeps the conversation's lock file open between
/// questions, and its lock there excludes others as a fresh handle's does.
/// One deleted (old witnesses are, past a bound) and made again is another
/// file: a question locks the one at the path, whose holder it waits for,
/// not the one it kept.
#[test]
fn a_question_locks_the_lock_file_at_the_path_not_the_one_it_kept() {
    use leanctx::witness::{Question, check};
    use std::os::unix::fs::OpenOptionsExt;
    use std::time::{Duration, Instant};
    let w = W::new();
    w.turn(Turn::Prompt, T0);
    w.append(&[&prompt("u1"), &tool_use("t1")]);
    assert_eq!(w.ask("t1"), Check::Present);
    let (_, lock) = files(&w);
    let ask_soon = || {
        let q =
            Question { call_id: Some("t1"), delivered_ms: T0 + 1, ..Question::catch_up(Host::ClaudeCode, "S", T0 + 2) };
        check(&w.data, &q, Instant::now() + Duration::from_millis(50), |_| Ok(()))
    };
    let busy = |c: &Check| matches!(c, Check::Unavailable(why) if why.contains("busy"));
    assert_eq!(ask_soon(), Check::Present);
    let holder = std::fs::OpenOptions::new().append(true).open(&lock).unwrap();
    holder.lock().unwrap();
    let a = ask_soon();
    assert!(busy(&a), "{a:?}: the kept handle did not wait for the holder");
    drop(holder);
    assert_eq!(ask_soon(), Check::Present);

    std::fs::remove_file(&lock).unwrap();
    let holder = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(&lock).unwrap();
    holder.lock().unwrap();
    let a = ask_soon();
    assert!(busy(&a), "{a:?}: the kept file was locked, not the one at the path");
    drop(holder);
    assert_eq!(ask_soon(), Check::Present);
}
