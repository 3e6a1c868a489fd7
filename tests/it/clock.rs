//! The wall clock jumping backwards and forwards, injected through the
//! library seam (`Journal::append(recs, now)`, `View::*(now)`,
//! `ReadPath::at(now)`) and `LEAN_CTX_NOW_MS` for hook processes — never the
//! system clock. TTL, windows and compaction ordering must stay sane: no
//! permanent "concurrent", no resurrected slot, no stub let through because
//! a record carries a time from before or after a jump.

use crate::support::Sandbox;
use leanctx::Host;
use leanctx::identity::caller::ScopeEnv;
use leanctx::identity::readpath::{ReadPath, StubQuery};
use leanctx::state::journal::{self, Journal, Record, View};
use leanctx::state::slot::{self, Slot, SlotRead};
use serde_json::json;

const T: u64 = 1_800_000_000_000;
const H: u64 = 3_600_000;

fn dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    crate::support::make_private(d.path());
    d
}

fn s(t: u64, conv: &str) -> Record<'_> {
    Record::Sighting { t, host: Host::ClaudeCode, conv, event: "PreToolUse" }
}

/// A sighting stamped while the clock ran an hour ahead must not hide the
/// conversation's real, current sightings once the clock is back: otherwise
/// two live chats look like one and the slot's caller gets the other's stub.
#[test]
fn a_sighting_from_the_future_does_not_hide_a_live_conversation() {
    let d = dir();
    let j = Journal::new(d.path());
    j.append(&[s(T + H, "A")], T + H).unwrap(); // clock an hour ahead
    j.append(&[s(T, "A")], T).unwrap(); // clock back
    j.append(&[s(T + 1000, "B")], T + 1000).unwrap();
    let text = j.read().unwrap();
    let v = View::parse(&text);
    assert!(v.concurrent(T + 2000), "A and B are both live");
    // The same after a trim (which keeps the newest sighting per conversation).
    j.trim_now(T + 2000).unwrap();
    let text = j.read().unwrap();
    assert!(View::parse(&text).concurrent(T + 2000), "after a trim: {text}");

    // Through the read path: the slot names B (last writer), the caller is
    // not exact, so with two live chats no slot-based stub may be served.
    slot::write_slot(d.path(), &Slot::new(Host::ClaudeCode, "B", None, "PreToolUse", None, T + 1000)).unwrap();
    let rp = ReadPath::new(d.path(), ScopeEnv::default()).at(T + 2000);
    let ans = rp.decide(&StubQuery { delivered: Some("B"), delivered_at_ms: Some(T + 500), cold: false, call: None });
    assert!(!ans.decision.allow, "{ans:?}");
}

/// An end stamped in the future does not end a conversation that is live now.
#[test]
fn an_end_from_the_future_does_not_end_a_live_conversation() {
    let recs = vec![Record::End { t: T + H, host: Host::ClaudeCode, conv: "A" }, s(T, "A"), s(T + 100, "B")];
    assert!(View { records: recs }.concurrent(T + 1000));
}

/// A subagent stop stamped in the future does not close a subagent that is
/// running now (a closed one would let a blind source serve the parent's stub).
#[test]
fn a_stop_from_the_future_does_not_close_a_running_subagent() {
    let recs = vec![
        Record::SubagentStart { t: T, host: Host::ClaudeCode, conv: "A", agent: "agent:x" },
        Record::SubagentStop { t: T + H, host: Host::ClaudeCode, conv: "A", agent: Some("agent:x") },
    ];
    assert_eq!(View { records: recs }.active_subagents("A", T + 1000), vec!["agent:x"]);
}

/// "Concurrent" is never permanent: whatever jumps happened, once only one
/// conversation fires events, the verdict clears within the window.
#[test]
fn concurrency_clears_within_the_window_whatever_the_jumps() {
    let d = dir();
    let j = Journal::new(d.path());
    // Two chats, the clock jumping around while they talk.
    let jumps: [i64; 8] = [0, 3_600_000, -7_200_000, 86_400_000, -86_400_000, 5_000, -5_000, 0];
    let mut last_b = 0;
    for (i, dj) in jumps.iter().enumerate() {
        let now = (T as i64 + dj + i as i64 * 1000) as u64;
        j.append(&[s(now, "A"), s(now + 1, "B")], now).unwrap();
        if now < T + 10_000 + journal::FUTURE_SKEW_MS {
            last_b = last_b.max(now + 1);
        }
    }
    // Back to true time T+10s; only A talks from now on.
    let mut checked = 0;
    for k in 0..120u64 {
        let now = T + 10_000 + k * 1000;
        j.append(&[s(now, "A")], now).unwrap();
        if k % 7 == 0 {
            j.trim_now(now).unwrap();
        }
        let text = j.read().unwrap();
        let v = View::parse(&text);
        // B's last sighting that is not from the future is past the window
        // by then. Future-stamped B sightings (up to a day ahead) must not
        // count now.
        if now > last_b + journal::WINDOW_MS {
            assert!(!v.concurrent(now), "still concurrent at +{} ms: {text}", now - T);
            checked += 1;
        }
    }
    assert!(checked > 80);
}

/// The slot: one stamped in the future reads as absent (a clock that went
/// back cannot keep it alive), an old one expires, and a clock that jumps
/// forward past the TTL and back never brings back a slot that a newer
/// writer replaced.
#[test]
fn slot_ttl_and_no_resurrection() {
    let d = dir();
    let live = |now: u64| match slot::read_slot(d.path(), now).unwrap() {
        SlotRead::Live(s) => Some(s.conversation().unwrap().to_string()),
        _ => None,
    };
    slot::write_slot(d.path(), &Slot::new(Host::Codex, "A", None, "SessionStart", None, T + 24 * H)).unwrap();
    assert_eq!(live(T), None, "a slot a day ahead is not live now");
    assert_eq!(live(T + 24 * H - slot::FUTURE_SKEW_MS - 1), None);
    slot::write_slot(d.path(), &Slot::new(Host::Codex, "B", None, "SessionStart", None, T)).unwrap();
    assert_eq!(live(T + 1), Some("B".into()));
    assert_eq!(live(T + slot::SLOT_TTL_MS), Some("B".into()));
    assert_eq!(live(T + slot::SLOT_TTL_MS + 1), None, "expired");
    // Forward past the TTL, then a writer (A) at the jumped time, then back:
    // A's slot is from the future and reads absent; B does not come back.
    slot::write_slot(d.path(), &Slot::new(Host::Codex, "A", None, "SessionStart", None, T + 3 * H)).unwrap();
    assert_eq!(live(T + 10), None, "neither the future A nor the replaced B");
}

/// Compaction ordering across a jump: a compaction hook that runs after a
/// delivery must count as after it even when the clock went back (or had
/// been ahead) in between. The hook stamps a compaction no earlier than the
/// newest record already in the journal (the delivering call's PostToolUse
/// among them), so a re-read after it is withheld.
#[test]
fn compaction_after_a_backward_jump_still_invalidates_earlier_deliveries() {
    for (name, jump) in [("backward 1 h", -(H as i64)), ("forward then corrected", 0)] {
        let sb = Sandbox::new();
        let hook = |event: &str, now: u64| {
            let p = json!({"hook_event_name": event, "session_id": "S", "tool_name": "mcp__ctx__ctx_read",
                "tool_input": {"path": "a.rs"}, "tool_use_id": format!("toolu_{now}")});
            sb.hook("codex", p.to_string()).env("LEAN_CTX_NOW_MS", now.to_string()).ok();
        };
        // Forward case: the delivery happens while the clock is an hour ahead.
        let t_d = if jump == 0 { T + H } else { T };
        hook("PreToolUse", t_d - 5);
        let delivered_at = t_d; // the server's clock at delivery
        hook("PostToolUse", t_d + 5);
        // The jump, then the compaction.
        let t_c = if jump == 0 { T + 10_000 } else { (T as i64 + jump + 10_000) as u64 };
        hook("PreCompact", t_c);
        let call = leanctx::identity::mcp_call::McpCall::from_json(
            &json!({"name":"ctx_read","arguments":{"path":"a.rs"},"_meta":{"sessionId":"S"}}),
        )
        .unwrap();
        let rp = ReadPath::new(&sb.data, ScopeEnv::default()).at(t_c + 1000);
        let ans = rp.decide(&StubQuery {
            delivered: Some("S"),
            delivered_at_ms: Some(delivered_at),
            cold: false,
            call: Some(&call),
        });
        assert!(!ans.decision.allow, "{name}: a stub from before the compaction was allowed: {ans:?}");
    }
}

/// Hook processes with `LEAN_CTX_NOW_MS` jumping: every answer well-formed,
/// the journal parses, and the state reads sanely at true time afterwards.
#[test]
fn hooks_with_a_jumping_clock() {
    let sb = Sandbox::new();
    let times = [T, T + H, T - H, T + 30 * 24 * H, 0, u64::MAX / 2, T + 1000, T + 2000];
    for (i, now) in times.iter().enumerate() {
        for host in ["claude", "codex", "codebuddy", "cursor"] {
            let p = json!({"hook_event_name": if host == "cursor" {"beforeMCPExecution"} else {"PreToolUse"},
                "session_id": format!("s-{host}"), "conversation_id": format!("c-{host}"),
                "tool_name": if host == "cursor" {"ctx_read"} else {"mcp__ctx__ctx_read"},
                "tool_input": {"i": i}});
            let o = sb.hook(host, p.to_string()).env("LEAN_CTX_NOW_MS", now.to_string()).ok();
            assert!(o.stderr.is_empty(), "{host} at {now}: {}", o.stderr);
        }
    }
    let text = sb.journal();
    assert!(text.lines().all(|l| l.starts_with('#') || journal::is_known_line(l)));
    let v = View::parse(&text);
    // At true time T+3s the four hosts' chats were sighted at T+2000: concurrent.
    assert!(v.concurrent(T + 3000));
    // A minute later nothing is live, despite the far-future stamps.
    assert!(!v.concurrent(T + 60_000));
    assert!(v.live_conversations(T + 60_000).is_empty());
}

/// The reader's clock behind the hooks' (a few seconds, or up to the minute
/// the slot tolerates): the hooks' sightings are "from the future" for it,
/// and must still count, or two live chats look like none and the slot's
/// last writer gets the stub. Through the real binary.
#[test]
fn a_reader_behind_the_hooks_still_sees_both_chats() {
    let sb = Sandbox::new();
    for (i, conv) in ["A", "B"].iter().enumerate() {
        let p = json!({"hook_event_name": "UserPromptSubmit", "session_id": conv});
        sb.hook("claude", p.to_string()).env("LEAN_CTX_NOW_MS", (T + i as u64 * 100).to_string()).ok();
    }
    for lag in [0u64, 1_000, 3_000, 4_999, 5_001, 10_000, 30_000, 59_000] {
        let o = sb
            .cmd(["scope", "check", "--delivered", "B", "--json"])
            .env("LEAN_CTX_NOW_MS", (T - lag).to_string())
            .run();
        let v = o.json();
        assert_eq!(o.code, 1, "reader {lag} ms behind: {v}");
        assert_eq!(v["decision"]["reason"], "concurrent", "reader {lag} ms behind: {v}");
        let o = sb.cmd(["status", "--json"]).env("LEAN_CTX_NOW_MS", (T - lag).to_string()).report();
        assert_eq!(o.json()["concurrent"], true, "status, reader {lag} ms behind");
    }
}

/// `--at` that is not a delivery time of ours: microseconds are refused
/// (exit 2, saying why); a time ahead of the reader is not trusted, so a
/// recorded compaction still withholds; and without `--at` any recorded
/// compaction of the conversation withholds, warm as cold.
#[test]
fn delivery_times_that_cannot_be_trusted_still_apply_the_compaction() {
    let sb = Sandbox::new();
    let hook = |event: &str, now: u64| {
        let p = json!({"hook_event_name": event, "session_id": "S"});
        sb.hook("claude", p.to_string()).env("LEAN_CTX_NOW_MS", now.to_string()).ok();
    };
    hook("UserPromptSubmit", T);
    let check = |at: Option<u64>, cold: bool| {
        let mut args = vec!["scope".to_string(), "check".into(), "--delivered".into(), "S".into(), "--json".into()];
        if let Some(at) = at {
            args.extend(["--at".into(), at.to_string()]);
        }
        if cold {
            args.push("--cold".into());
        }
        sb.cmd(&args).env("LEAN_CTX_NOW_MS", (T + 20_000).to_string()).run()
    };
    // Before any compaction: allowed with or without a time.
    for (at, cold) in [(Some(T + 1000), false), (None, false), (None, true)] {
        let o = check(at, cold);
        assert_eq!((o.code, o.json()["decision"]["reason"].clone()), (0, json!("same-conversation")), "{at:?} {cold}");
    }
    hook("PreCompact", T + 10_000);
    for (at, cold) in [
        (Some(T + 1000), false),      // delivered before the compaction
        (None, false),                // no time: warm as cold
        (None, true),                 //
        (Some(T + 3_600_000), false), // ahead of the reader: untrusted
        (Some(T + 20_000 + 5_001), true),
    ] {
        let o = check(at, cold);
        assert_eq!((o.code, o.json()["decision"]["reason"].clone()), (1, json!("compacted")), "{at:?} {cold}");
    }
    // Delivered after the compaction, by the reader's clock: allowed.
    let o = check(Some(T + 15_000), false);
    assert_eq!(o.code, 0, "{}", o.stdout);
    // Microseconds (or nanoseconds) for milliseconds: an error, exit 2.
    for at in [(T + 1000) * 1000, (T + 1000) * 1_000_000] {
        let o = check(Some(at), false);
        assert_eq!(o.code, 2, "{at}: {}", o.stdout);
        assert!(o.stderr.contains("milliseconds"), "{}", o.stderr);
    }
}
