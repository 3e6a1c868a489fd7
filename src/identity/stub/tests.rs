use super::*;
use crate::base::clock;
use crate::identity::caller::ScopeEnv;
use crate::state::journal::Call;
use crate::state::ledger::{Ack, Delivery};
use crate::state::secret::Secret;
use std::cell::Cell;
use std::io::Write as _;
use std::rc::Rc;

thread_local! {
    /// Runs between the ledger's journal read and the witness's lock:
    /// where another process's question can land.
    pub(super) static BEFORE_WITNESS: std::cell::RefCell<Option<Box<dyn Fn()>>> =
        const { std::cell::RefCell::new(None) };
}

const HOST_PID: u32 = 4242;

fn claude_call(id: &str) -> McpCall {
    let v = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ctx_read",
        "arguments": {"path": "a.rs"}, "_meta": {"claudecode/toolUseId": id}}});
    McpCall::from_json(&v).unwrap()
}

fn call_record(id: &str, t: u64) -> Record<'_> {
    Record::Call(Call {
        t,
        host: crate::Host::ClaudeCode,
        conv: "S",
        agent: None,
        server: Some("ctx"),
        tool: "ctx_read",
        fp: "0",
        call_id: Some(id),
        key: id,
    })
}

/// Journal Claude Code's call `toolu_1` at `t` (conversation `S`, from
/// [`HOST_PID`]), its delivery of `a.rs` v1 10 ms later and the host's
/// confirmation of it whole 10 ms after that.
fn journal_confirmed(dir: &std::path::Path, t: u64) {
    let host = crate::Host::ClaudeCode;
    let secret = Secret::load_or_create(dir).unwrap();
    let (key, version) = (secret.name("key", "a.rs"), secret.name("version", "v1"));
    let call_ref = ledger::id_ref("toolu_1");
    let window = format!("proc:{HOST_PID}");
    let d = Delivery {
        t: t + 10,
        host,
        conv: "S",
        scope: "S",
        window: Some(&window),
        call_ref: &call_ref,
        key: &key,
        version: &version,
        digest: "d",
        len: 10,
        base: None,
    };
    let a = Ack { t: t + 20, host, scope: "S", call_ref: &call_ref, digest: "d", len: 10, whole: true };
    Journal::new(dir).append(&[call_record("toolu_1", t), Record::Delivery(d), Record::Ack(a)], t + 20).unwrap();
}

/// A Claude Code conversation whose transcript the witness follows (it
/// holds `lines`), and whose call `toolu_1` delivered `a.rs` v1 whole,
/// confirmed; calls `toolu_2` and `toolu_3` journaled after it.
fn confirmed(dir: &std::path::Path, now: u64, lines: &[&str]) -> (std::path::PathBuf, ReadPath) {
    let transcript = dir.join("t.jsonl");
    std::fs::write(&transcript, "").unwrap();
    let host = crate::Host::ClaudeCode;
    let idle_ms = crate::hosts::profile::profile(host).idle_clear_ms;
    let b = witness::Boundary {
        host,
        conv: "S",
        transcript: transcript.to_str().unwrap(),
        turn: witness::Turn::Prompt,
        now: now - 100,
        pid: None,
        idle_ms,
        prompt: None,
    };
    witness::on_turn(dir, &b, Instant::now() + READ_WAIT, |_| Ok(())).unwrap();
    append(&transcript, lines);
    journal_confirmed(dir, now - 60);
    let j = Journal::new(dir);
    j.append(&[call_record("toolu_2", now - 20), call_record("toolu_3", now - 10)], now - 10).unwrap();
    (transcript, ReadPath::new(dir, ScopeEnv::default()).at(now).with_host_pid(HOST_PID).with_stats(None))
}

fn append(transcript: &std::path::Path, lines: &[&str]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(transcript).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

fn prompt(uuid: &str) -> String {
    format!(r#"{{"type":"user","uuid":"{uuid}","message":{{"role":"user","content":"read it"}}}}"#)
}

fn tool_use(id: &str) -> String {
    format!(
        r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"{id}","name":"mcp__ctx__ctx_read"}}]}}}}"#
    )
}

#[cfg(unix)]
const REWIND_TO_U1: &str = r#"{"type":"last-prompt","leafUuid":null,"rewound":true,"cutUuid":"u1"}"#;

/// Another question lands between this one's journal read and its witness
/// lock: it reads the compaction the transcript shows, journals "every
/// delivery ended" and moves the witness's offset past that line. This
/// question's witness then reads nothing new; before the journal was read
/// again after the witness, the stub was served on a compacted delivery.
#[test]
fn an_end_journaled_between_the_journal_read_and_the_witness_is_seen() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let now = clock::now_ms();
    let host = crate::Host::ClaudeCode;
    let lines = [prompt("u1"), tool_use("toolu_1"), tool_use("toolu_2"), tool_use("toolu_3")];
    let (transcript, rp) = confirmed(&dir, now, &lines.each_ref().map(String::as_str));
    // The control: confirmed, and the transcript shows nothing.
    let ans = rp.stub(&claude_call("toolu_2"), "a.rs", "v1", None).unwrap();
    assert!(ans.decision.allow, "{ans:?}");
    // The host compacts; another server's question reads it first.
    let done = Rc::new(Cell::new(false));
    let (other_dir, flag) = (dir.clone(), done.clone());
    BEFORE_WITNESS.set(Some(Box::new(move || {
        if flag.replace(true) {
            return;
        }
        append(&transcript, &[r#"{"type":"system","subtype":"compact_boundary"}"#]);
        let q = witness::Question::catch_up(host, "S", now);
        let end = |reach: crate::state::journal::Reach<'_>| {
            Journal::new(&other_dir).append(&[Record::Compaction { t: now, host, conv: "S", reach }], now)
        };
        let c = witness::check(&other_dir, &q, Instant::now() + READ_WAIT, end);
        assert!(matches!(c, Check::EndedAll(_)), "{c:?}");
    })));
    let ans = rp.stub(&claude_call("toolu_3"), "a.rs", "v1", None).unwrap();
    BEFORE_WITNESS.set(None);
    assert!(done.get(), "the other question ran");
    assert!(!ans.decision.allow, "a stub on a delivery the host compacted away: {ans:?}");
    assert_eq!(ans.decision.reason, Reason::Compacted, "{ans:?}");
}

/// The race e2e `claude/serve` lost once in 25 runs: Claude Code queues a
/// rewind's record and writes it up to 100 ms later (more under load), and
/// the next turn's read asked before it was on disk. The transcript is
/// written in queue order, so the question waits for its own call's line,
/// written here by another process 200 ms after the question starts.
#[cfg(unix)]
#[test]
fn a_rewind_written_after_the_question_starts_is_waited_for() {
    let tmp = tempfile::tempdir().unwrap();
    let now = clock::now_ms();
    let (transcript, rp) = confirmed(tmp.path(), now, &[&prompt("u1"), &tool_use("toolu_1")]);
    let late = [REWIND_TO_U1, &prompt("u2"), &tool_use("toolu_2")].join("\n");
    let mut writer = std::process::Command::new("sh")
        .args(["-c", "sleep 0.2; printf '%s\\n' \"$1\" >> \"$2\"", "sh", &late, transcript.to_str().unwrap()])
        .spawn()
        .unwrap();
    let t = Instant::now();
    let ans = rp.stub(&claude_call("toolu_2"), "a.rs", "v1", None).unwrap();
    assert!(writer.wait().unwrap().success());
    assert!(!ans.decision.allow, "a stub on a result the rewind took: {ans:?}");
    assert_eq!(ans.decision.reason, Reason::Withdrawn, "{ans:?}");
    assert!(t.elapsed() < CATCH_UP_WAIT, "it answered once the line came: {:?}", t.elapsed());
}

/// A transcript that never shows the asking call withholds, within the
/// stated wait; one that does is answered at once.
#[test]
fn a_transcript_that_never_shows_the_call_withholds_within_the_wait() {
    let tmp = tempfile::tempdir().unwrap();
    let now = clock::now_ms();
    let (_, rp) = confirmed(tmp.path(), now, &[&prompt("u1"), &tool_use("toolu_1"), &tool_use("toolu_3")]);
    let t = Instant::now();
    let ans = rp.stub(&claude_call("toolu_2"), "a.rs", "v1", None).unwrap();
    let took = t.elapsed();
    assert!(!ans.decision.allow, "{ans:?}");
    assert_eq!(ans.decision.reason, Reason::TranscriptUnavailable, "{ans:?}");
    assert!(took >= CATCH_UP_WAIT && took < CATCH_UP_WAIT + 2 * READ_WAIT, "{took:?}");
    let t = Instant::now();
    let ans = rp.stub(&claude_call("toolu_3"), "a.rs", "v1", None).unwrap();
    assert!(ans.decision.allow, "{ans:?}");
    assert!(t.elapsed() < CATCH_UP_WAIT, "{:?}", t.elapsed());
}

/// The first re-read after an idle return (docs/DELIVERY.md §8, "The idle
/// return, provisional"): Claude Code writes the returning prompt, any cut
/// record and the turn's first answer (this call's own tool use) through
/// its queue, and in the live run none of it was on disk at the turn's
/// first `PreToolUse`. The question waits for its call's line, which
/// settles the return: here nothing was cut, so the delivery from before
/// the return backs the stub. Before, a pending return withheld at once
/// (`transcript-unavailable`) and never waited.
#[cfg(unix)]
#[test]
fn an_idle_returns_lines_written_after_the_question_starts_are_waited_for() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let now = clock::now_ms();
    let host = crate::Host::ClaudeCode;
    let idle_ms = crate::hosts::profile::profile(host).idle_clear_ms;
    let before = now - idle_ms.unwrap() - 60_000;
    let transcript = dir.join("t.jsonl");
    std::fs::write(&transcript, "").unwrap();
    let path = transcript.to_str().unwrap();
    let turn = |turn, t| {
        let b = witness::Boundary {
            host,
            conv: "S",
            transcript: path,
            turn,
            now: t,
            pid: Some(HOST_PID),
            idle_ms,
            prompt: None,
        };
        let mut ended = false;
        witness::on_turn(dir, &b, Instant::now() + READ_WAIT, |e| {
            ended = !e.is_empty();
            Ok(())
        })
        .unwrap();
        ended
    };
    turn(witness::Turn::Prompt, before);
    append(&transcript, &[&prompt("u1"), &tool_use("toolu_1")]);
    journal_confirmed(dir, before + 10);
    let j = Journal::new(dir);
    turn(witness::Turn::Stop, before + 40);
    assert!(!turn(witness::Turn::Prompt, now - 10), "the return of the only process is provisional");
    j.append(&[call_record("toolu_2", now - 5)], now - 5).unwrap();
    let rp = ReadPath::new(dir, ScopeEnv::default()).at(now).with_host_pid(HOST_PID).with_stats(None);
    let late = [prompt("u2"), tool_use("toolu_2")].join("\n");
    let mut writer = std::process::Command::new("sh")
        .args(["-c", "sleep 0.05; printf '%s\\n' \"$1\" >> \"$2\"", "sh", &late, path])
        .spawn()
        .unwrap();
    let t = Instant::now();
    let ans = rp.stub(&claude_call("toolu_2"), "a.rs", "v1", None).unwrap();
    assert!(writer.wait().unwrap().success());
    assert!(ans.decision.allow, "the return settled with nothing cut: {ans:?}");
    assert_eq!(ans.decision.reason, Reason::ConfirmedDelivery, "{ans:?}");
    assert!(t.elapsed() < CATCH_UP_WAIT, "it answered once the lines came: {:?}", t.elapsed());
}

/// A process that asks again stats the data dir's files relative to a
/// handle of it (`fsx::lstat`), valid only while the path names the
/// directory the question's check found: a data dir replaced between
/// questions is read by its path (an empty one withholds, where the old
/// one's handle would have confirmed), and put back, answers as before.
#[cfg(unix)]
#[test]
fn a_data_dir_replaced_between_questions_answers_from_the_new_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    crate::fsx::create_private_dir(&dir, false).unwrap();
    let now = clock::now_ms();
    let (_, rp) = confirmed(&dir, now, &[&prompt("u1"), &tool_use("toolu_1"), &tool_use("toolu_2")]);
    let allowed = || rp.stub(&claude_call("toolu_2"), "a.rs", "v1", None).is_ok_and(|a| a.decision.allow);
    assert!(allowed(), "by path");
    assert_eq!(crate::fsx::anchored(), None, "one question opens no handle");
    assert!(allowed(), "the second question opens the handle");
    assert_eq!(crate::fsx::anchored(), Some((dir.clone(), false)), "kept, valid only within a question");
    assert!(allowed(), "through the handle");
    let old = tmp.path().join("old");
    std::fs::rename(&dir, &old).unwrap();
    crate::fsx::create_private_dir(&dir, false).unwrap();
    assert!(!allowed(), "an empty data dir confirms nothing");
    assert_eq!(crate::fsx::anchored(), None, "another directory at the path: the handle dropped");
    std::fs::remove_dir(&dir).unwrap();
    std::fs::rename(&old, &dir).unwrap();
    for _ in 0..3 {
        assert!(allowed(), "the data dir back");
    }
    assert_eq!(crate::fsx::anchored(), Some((dir.clone(), false)));
}
