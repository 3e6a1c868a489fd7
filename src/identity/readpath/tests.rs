use super::*;
use crate::base::clock;
use crate::state::journal::{Journal, Reach, Record};

thread_local! {
    /// Runs between the decision's first journal read and its slot read:
    /// where a hook of another process can land.
    pub(super) static BEFORE_SLOT: std::cell::RefCell<Option<Box<dyn Fn()>>> =
        const { std::cell::RefCell::new(None) };
}

/// A hook that lands between the journal read and the slot read (it
/// appends, then writes the slot naming its chat): the slot then names
/// a conversation the first read never saw. The decision's facts come
/// from a journal read after the slot, which sees both chats live:
/// withheld, not handed to the newcomer as "the only chat".
#[test]
fn a_hook_between_the_journal_and_the_slot_reads_is_seen() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let now = clock::now_ms();
    let sighting = |conv: &'static str, t: u64| Record::Sighting { t, host: Host::Codex, conv, event: "PreToolUse" };
    Journal::new(&dir).append(&[sighting("A", now - 10)], now - 10).unwrap();
    slot::write_slot(&dir, &slot::Slot::new(Host::Codex, "A", None, "PreToolUse", None, now - 10)).unwrap();
    let hook_dir = dir.clone();
    BEFORE_SLOT.set(Some(Box::new(move || {
        Journal::new(&hook_dir).append(&[sighting("B", now - 5)], now - 5).unwrap();
        slot::write_slot(&hook_dir, &slot::Slot::new(Host::Codex, "B", None, "PreToolUse", None, now - 5)).unwrap();
    })));
    let rp = ReadPath::new(&dir, ScopeEnv::default()).at(now);
    let q = StubQuery { delivered: Some("B"), delivered_at_ms: Some(now - 20), cold: false, call: None };
    let ans = rp.decide(&q);
    BEFORE_SLOT.set(None);
    assert_eq!(ans.caller.scope.as_deref(), Some("B"), "{ans:?}");
    assert!(ans.concurrent && !ans.decision.allow, "{ans:?}");
}

fn sighting(host: Host, conv: &'static str, t: u64) -> Record<'static> {
    Record::Sighting { t, host, conv, event: "PreToolUse" }
}

fn slot_naming(dir: &std::path::Path, conv: &str, t: u64) {
    slot::write_slot(dir, &slot::Slot::new(Host::Codex, conv, None, "PreToolUse", None, t)).unwrap();
}

fn ask(rp: &ReadPath, delivered: &str, at: u64, call: Option<&McpCall>) -> StubAnswer {
    rp.decide(&StubQuery { delivered: Some(delivered), delivered_at_ms: Some(at), cold: false, call })
}

/// A Cursor task found by its call record is bound to its
/// conversation: another chat's compaction is not its own (only a scope
/// that names no conversation takes every compaction).
#[test]
fn a_bound_task_scope_takes_only_its_own_conversations_compactions() {
    let tmp = tempfile::tempdir().unwrap();
    let now = clock::now_ms();
    let call = McpCall::from_json(&serde_json::json!({"name": "ctx_read", "arguments": {"path": "a.rs"}})).unwrap();
    // As a hook records it: sealed with the data dir's secret.
    let fp = crate::state::secret::Secret::load_or_create(tmp.path()).unwrap().seal_fp(&call.fingerprint());
    let rec = Record::Call(crate::state::journal::Call {
        t: now - 50,
        host: Host::Cursor,
        conv: "C",
        agent: Some("task:T"),
        server: None,
        tool: "ctx_read",
        fp: &fp,
        call_id: None,
        key: "k1",
    });
    let start = Record::SubagentStart { t: now - 90, host: Host::Cursor, conv: "C", agent: "task:T" };
    let other = Record::Compaction { t: now - 20, host: Host::Codex, conv: "Z", reach: Reach::All };
    Journal::new(tmp.path()).append(&[sighting(Host::Cursor, "C", now - 100), start, rec, other], now).unwrap();
    let ans = ask(&ReadPath::new(tmp.path(), ScopeEnv::default()).at(now), "task:T", now - 60, Some(&call));
    assert_eq!(ans.caller.scope.as_deref(), Some("task:T"), "{ans:?}");
    assert!(ans.decision.allow, "{ans:?}");
}

/// Another chat's running subagent is not this chat's: a slot caller
/// alone is not withheld for it (a `custom:` scope would be).
#[test]
fn another_chats_subagent_does_not_withhold_a_slot_caller() {
    let tmp = tempfile::tempdir().unwrap();
    let now = clock::now_ms();
    let recs = [
        sighting(Host::ClaudeCode, "B", now - 600_000),
        Record::SubagentStart { t: now - 590_000, host: Host::ClaudeCode, conv: "B", agent: "agent:x" },
        sighting(Host::Codex, "A", now - 5),
    ];
    Journal::new(tmp.path()).append(&recs, now).unwrap();
    slot_naming(tmp.path(), "A", now - 5);
    let ans = ask(&ReadPath::new(tmp.path(), ScopeEnv::default()).at(now), "A", now - 20, None);
    assert_eq!((ans.decision.allow, ans.decision.reason.as_str()), (true, "same-conversation"), "{ans:?}");
    let custom = ScopeEnv { custom: Some("x".into()), ..ScopeEnv::default() };
    let ans = ask(&ReadPath::new(tmp.path(), custom).at(now), "custom:x", now - 20, None);
    assert_eq!(ans.decision.reason.as_str(), "subagent-active", "{ans:?}");
}

/// The state as the read path finds it: a data dir that does not exist
/// yet is empty (no hook ran), one that is not a directory cannot be
/// read, and a live slot without its journal means the journal was
/// deleted: what it said is lost.
#[test]
fn missing_unreadable_and_deleted_state() {
    let tmp = tempfile::tempdir().unwrap();
    let now = clock::now_ms();
    let reason = |dir: &std::path::Path| {
        let rp = ReadPath::new(dir, ScopeEnv::default()).at(now);
        ask(&rp, "A", now - 20, None).decision.reason.as_str().to_string()
    };
    assert_ne!(reason(&tmp.path().join("nope")), "state-unavailable");
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").unwrap();
    assert_eq!(reason(&file), "state-unavailable");
    // A data dir that is a dangling symlink: not "no hook ran yet".
    #[cfg(unix)]
    {
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(tmp.path().join("gone"), &link).unwrap();
        assert_eq!(reason(&link), "state-unavailable");
    }
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    slot_naming(&dir, "A", now - 5);
    assert_eq!(reason(&dir), "state-unavailable");
    let rp = ReadPath::new(&dir, ScopeEnv::default()).at(now);
    let res = rp.resolve(None, now);
    assert_eq!(rp.delivery_scope(&res), None, "{res:?}");
}

/// A sighting from the future (a skewed clock) makes the long-lived
/// reader's digest inexact; the decision then reads the whole file,
/// which still sees the other chat live.
#[test]
fn an_inexact_digest_defers_to_the_whole_file() {
    let tmp = tempfile::tempdir().unwrap();
    let now = clock::now_ms();
    let recs = [
        sighting(Host::Codex, "A", now - 5),
        sighting(Host::ClaudeCode, "B", now - 3),
        sighting(Host::ClaudeCode, "B", now + 3_600_000),
    ];
    Journal::new(tmp.path()).append(&recs, now).unwrap();
    slot_naming(tmp.path(), "A", now - 5);
    let ans = ask(&ReadPath::new(tmp.path(), ScopeEnv::default()).at(now), "A", now - 20, None);
    assert!(ans.concurrent && !ans.decision.allow, "{ans:?}");
}

/// lean-ctx's `conversation_allows_stub(current, delivered)`: scoping
/// switched off allows (legacy), whatever `current` says.
#[test]
fn decide_given_with_scoping_disabled_allows() {
    let tmp = tempfile::tempdir().unwrap();
    let now = clock::now_ms();
    Journal::new(tmp.path()).append(&[sighting(Host::Codex, "A", now - 5)], now).unwrap();
    let off = ScopeEnv { scoping_disabled: true, ..ScopeEnv::default() };
    let d = ReadPath::new(tmp.path(), off).at(now).decide_given(Some("B"), Some("A"), false);
    assert_eq!((d.allow, d.reason.as_str()), (true, "scope-disabled"), "{d:?}");
    // A `current` the state does not name is taken like a slot's answer
    // (not the chain's): here another chat is the one live.
    slot_naming(tmp.path(), "A", now - 5);
    let d = ReadPath::new(tmp.path(), ScopeEnv::default()).at(now).decide_given(Some("B"), Some("B"), false);
    assert_eq!((d.allow, d.reason.as_str()), (false, "concurrent"), "{d:?}");
    let d = ReadPath::new(tmp.path(), ScopeEnv::default()).at(now).decide_given(Some("A"), Some("A"), false);
    assert_eq!((d.allow, d.reason.as_str()), (true, "same-conversation"), "{d:?}");
}

/// Another process (util-linux flock(1)) holding `lock` exclusively: the
/// command runs only once the lock is held, and says so (no sleep stands in
/// for "it has the lock by now"). `-o`: only flock keeps the lock's file
/// open, so killing it frees the lock at once.
#[cfg(unix)]
struct Holder(std::process::Child);

#[cfg(unix)]
impl Holder {
    fn hold(lock: &std::path::Path) -> Holder {
        use std::io::BufRead;
        let mut child = std::process::Command::new("flock")
            .args(["-x", "-o", lock.to_str().unwrap(), "-c", "echo held; exec cat >/dev/null"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("flock(1)");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "held", "flock(1) did not take the lock");
        Holder(child)
    }
}

#[cfg(unix)]
impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Ask `question` while another process holds the journal lock, and free
/// the lock only once the question has found it busy: it must wait, then
/// answer as if the lock had been free (`good`). On a loaded machine the
/// holder may take longer to die than the question's [`READ_WAIT`] allows
/// (the test kills it the moment the question meets the lock; the bound is
/// the product's, not the test's); a try that failed only after waiting
/// out the whole bound is tried again, 3 tries at most. A question that
/// does not wait fails at once; one that never gets the lock fails every try.
#[cfg(unix)]
fn waits_out<T: Send + std::fmt::Debug>(
    lock: &std::path::Path,
    what: &str,
    question: impl Fn() -> T + Sync,
    good: impl Fn(&T) -> bool,
) {
    let met = |id| crate::fsx::MET_BUSY.lock().unwrap().contains(&id);
    for attempt in 1..=3 {
        let holder = Holder::hold(lock);
        let (answer, took) = std::thread::scope(|s| {
            let q = s.spawn(|| {
                let t = Instant::now();
                (question(), t.elapsed())
            });
            let id = q.thread().id();
            let deadline = Instant::now() + std::time::Duration::from_secs(30);
            while !met(id) && !q.is_finished() {
                assert!(Instant::now() < deadline, "{what}: no answer and no lock met within 30 s");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            drop(holder);
            assert!(met(id), "{what}: answered without meeting the held lock");
            q.join().unwrap()
        });
        if good(&answer) {
            return;
        }
        assert!(took >= READ_WAIT && attempt < 3, "{what}: {answer:?} after {took:?} (try {attempt})");
        eprintln!("{what}: the lock was freed too late for the {READ_WAIT:?} bound (loaded machine?); again");
    }
}

/// Every question of the read path waits (boundedly) for a journal lock
/// another process holds for a moment: a busy lock is not bad state.
#[cfg(unix)]
#[test]
fn every_question_waits_out_a_briefly_held_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let now = clock::now_ms();
    Journal::new(tmp.path()).append(&[sighting(Host::Codex, "A", now - 5)], now).unwrap();
    slot_naming(tmp.path(), "A", now - 5);
    let lock = tmp.path().join("journal.lock");
    let rp = || ReadPath::new(tmp.path(), ScopeEnv::default()).at(now);
    let res = rp().resolve(None, now);
    let q = StubQuery { delivered: Some("A"), delivered_at_ms: Some(now - 20), cold: false, call: None };
    waits_out(&lock, "decide_resolved", || rp().decide_resolved(&res, &q), |a| a.decision.allow);
    waits_out(&lock, "delivery_scope", || rp().delivery_scope(&res), |s| s.as_deref() == Some("A"));
    waits_out(&lock, "decide_given", || rp().decide_given(Some("A"), Some("A"), false), |d| d.allow);
    waits_out(&lock, "decide", || rp().decide(&q), |a| a.decision.allow);
    waits_out(&lock, "concurrent", || rp().concurrent(), |busy| !busy);
    // A Claude call named by its tool-use id needs the journal's record.
    let rec = Record::Call(crate::state::journal::Call {
        t: now - 4,
        host: Host::ClaudeCode,
        conv: "S",
        agent: None,
        server: Some("ctx"),
        tool: "ctx_read",
        fp: "fp",
        call_id: Some("toolu_1"),
        key: "k1",
    });
    Journal::new(tmp.path()).append(&[rec], now).unwrap();
    let call = McpCall::from_json(&serde_json::json!({"name": "ctx_read", "arguments": {},
        "_meta": {"claudecode/toolUseId": "toolu_1"}}))
    .unwrap();
    waits_out(
        &lock,
        "resolve",
        || rp().resolve(Some(&call), now),
        |r| (r.caller.scope.as_deref(), r.caller.exact) == (Some("S"), true),
    );
}

/// The `/clear` lineage through the CLI's parent lookup, for real (this
/// test process stands in for the MCP server, its parent for the host):
/// `/proc` on Linux, Toolhelp on Windows. Then the same with the lookup
/// every other system has (none, as on macOS), forced here: the lineage
/// is not found, and the env's session id alone names nobody (unknown
/// withholds); never a wrong conversation.
#[test]
fn lineage_with_the_parent_lookup_and_with_the_fallback_without_one() {
    let tmp = tempfile::tempdir().unwrap();
    let host_pid = crate::fsx::parent_of(std::process::id()).expect("this process has a parent");
    assert_eq!(host_pid, crate::fsx::parent_pid());
    let now = clock::now_ms();
    let lineage = Record::Lineage { t: now, host: Host::ClaudeCode, pid: host_pid, conv: "s2" };
    Journal::new(tmp.path()).append(&[lineage], now).unwrap();
    let env =
        ScopeEnv { claude_session_id: Some("s1".into()), parent_pid: Some(std::process::id()), ..ScopeEnv::default() };
    let rp = ReadPath::new(tmp.path(), env.clone()).for_cli(crate::fsx::parent_of);
    assert_eq!(rp.env.parent_pid, Some(host_pid));
    let c = rp.resolve(None, now).caller;
    assert_eq!((c.scope.as_deref(), c.exact), (Some("s2"), true), "the lineage of the real parent");

    let rp = ReadPath::new(tmp.path(), env).for_cli(|_| None);
    assert_eq!(rp.env.parent_pid, None);
    let c = rp.resolve(None, now).caller;
    assert_eq!((c.scope.as_deref(), c.exact), (None, false), "no lookup: the env id alone proves nothing");
}

/// A panic while the readers were held (a server's guard caught it and it
/// serves on) may have left a reader half-refreshed: the next question
/// starts over on a new reader, and the lock is no longer poisoned.
#[test]
fn a_panic_while_the_readers_are_held_makes_them_start_over() {
    let tmp = tempfile::tempdir().unwrap();
    let now = clock::now_ms();
    let two = [sighting(Host::ClaudeCode, "A", now), sighting(Host::Codex, "B", now)];
    Journal::new(tmp.path()).append(&two, now).unwrap();
    let rp = ReadPath::new(tmp.path(), ScopeEnv::default()).at(now);
    let has_reader = || lock_readers(&READERS).iter().any(|(p, r)| p == tmp.path() && !r.is_new());
    assert!(rp.concurrent(), "two live chats, read through a reader");
    assert!(has_reader(), "a question keeps a reader for its data dir");
    let panicked = std::thread::spawn(|| {
        let _held = READERS.lock();
        panic!("a panic while the readers are held (expected by this test)");
    })
    .join();
    assert!(panicked.is_err());
    assert!(!has_reader(), "the poisoned readers were kept");
    assert!(!READERS.is_poisoned());
    assert!(rp.concurrent(), "the same answer from a new reader");
    assert!(has_reader());
}
