//! Subagents and compaction on the real Claude Code 2.1.328, replayed
//! (fixtures: tests/fixtures/payloads/withdrawal/claude/subagent-*, from
//! the e2e scenarios in tests/e2e/sc_subcompact.py; docs/DELIVERY.md §8,
//! "Subagents and compaction"): every hook through the real binary at its
//! own time, the session's transcript growing as the host wrote it, and
//! every stub question the MCP server asked. The oracle reads only what the
//! mock model received: the request whose answer made the call (its tool
//! use id), and whether that request held the file whole.
//!
//! - `subagent-main-compact`: a background subagent read S; the main thread
//!   was compacted (`/compact`) while the subagent's next call ran; the
//!   subagent's re-read of S came from a request that still held S.
//! - `subagent-own-compact`: the main thread read M; a subagent compacted
//!   itself (its hooks carry its `agent_id`, its boundary is in its own
//!   transcript); the main thread's re-read of M came from a request that
//!   still held M.

use crate::support::Sandbox;
use crate::withdrawal::{
    ask_question, batch_results, dir, fixture_hooks, host_pid, jsonl, line_time, prompt_hook_times,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

enum Ev {
    Hook(Value),
    Question(Value),
    Line(String),
    /// A line of a subagent's own transcript (its file name).
    SubLine(String, String),
}

/// The replay's events: (unix ms, order among events at one ms, event).
type Events = Vec<(u64, usize, Ev)>;

/// The answers, in order: (reason, allowed, safe, what the witness said).
type Answers = Vec<(String, bool, bool, String)>;

/// Replay `scenario`; `hook` and `line` may change a hook payload or a
/// transcript line first (a variant the host did not write).
fn replay(scenario: &str, hook: &dyn Fn(&mut Value), line: &dyn Fn(&mut Value)) -> Answers {
    replay_with(scenario, hook, line, &|_| {})
}

/// [`replay`], with `events` changing the timed events (hooks, questions,
/// lines) before they run: a variant the host did not write.
fn replay_with(
    scenario: &str,
    hook: &dyn Fn(&mut Value),
    line: &dyn Fn(&mut Value),
    events: &dyn Fn(&mut Events),
) -> Answers {
    let d = dir(scenario);
    let sb = Sandbox::new();
    let transcript = sb.tmp.path().join("transcript.jsonl");
    std::fs::write(&transcript, "").unwrap();
    let mut hooks = fixture_hooks(&d, &transcript);
    hooks.iter_mut().for_each(|(_, h)| hook(h));
    let prompt_hooks = prompt_hook_times(&hooks);
    let mut evs: Events = hooks.into_iter().map(|(t, h)| (t, 1, Ev::Hook(h))).collect();
    for q in jsonl(&d.join("mcp-ledger.jsonl")) {
        evs.push(((q["ts"].as_f64().unwrap() * 1000.0) as u64, 2, Ev::Question(q)));
    }
    let mut last = 0;
    for l in std::fs::read_to_string(d.join("transcript.jsonl")).unwrap().lines() {
        let mut v: Value = serde_json::from_str(l).unwrap();
        let t = line_time(&v, last, &prompt_hooks);
        last = t;
        line(&mut v);
        evs.push((t, 0, Ev::Line(v.to_string())));
    }
    // Each subagent's own transcript, beside the session's as the host laid
    // it out (`<session>/subagents/agent-<id>.jsonl`, a workflow's agent's in
    // `subagents/workflows/<run id>/`), growing as it was written.
    let subs = transcript.with_extension("").join("subagents");
    for (f, name) in transcripts_under(&d.join("subagents")) {
        std::fs::create_dir_all(subs.join(&name).parent().unwrap()).unwrap();
        let mut last = 0;
        for l in std::fs::read_to_string(&f).unwrap().lines() {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let t = line_time(&v, last, &[]);
            last = t;
            line(&mut v);
            evs.push((t, 0, Ev::SubLine(name.clone(), v.to_string())));
        }
    }
    events(&mut evs);
    evs.sort_by_key(|(t, k, _)| (*t, *k));
    let requests = jsonl(&d.join("model-requests.jsonl"));
    // The request whose answer made each tool use, and what it held whole.
    let held: HashMap<&str, Vec<&str>> = requests
        .iter()
        .flat_map(|r| {
            let whole: Vec<&str> =
                r["context_whole"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            r["reply_tool_use_ids"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(move |id| (id, whole.clone()))
        })
        .collect();
    let shown = batch_results(evs.iter().filter_map(|(_, _, e)| match e {
        Ev::Hook(h) => Some(h),
        _ => None,
    }));
    let (mut out, mut delivered, mut sent) = (Vec::new(), Vec::<String>::new(), HashMap::<String, Value>::new());
    let mut file = std::fs::OpenOptions::new().append(true).open(&transcript).unwrap();
    for (i, (t, _, e)) in evs.iter().enumerate() {
        match e {
            Ev::Line(l) => writeln!(file, "{l}").unwrap(),
            Ev::SubLine(name, l) => {
                // A variant may name a directory of its own.
                std::fs::create_dir_all(subs.join(name).parent().unwrap()).unwrap();
                let mut f = std::fs::OpenOptions::new().create(true).append(true).open(subs.join(name)).unwrap();
                writeln!(f, "{l}").unwrap();
            }
            Ev::Hook(h) => {
                let o = sb
                    .hook("claude-code", h.to_string())
                    .env("LEAN_CTX_NOW_MS", t.to_string())
                    .env("CLAUDE_PID", host_pid().to_string())
                    .run();
                assert_eq!(o.code, 0, "{scenario}: {o:?}");
            }
            Ev::Question(q) => {
                let id = q["_meta"]["claudecode/toolUseId"].as_str().unwrap();
                let path = q["arguments"]["path"].as_str().unwrap();
                let (_, j) = ask_question(
                    &sb,
                    scenario,
                    i,
                    *t,
                    path,
                    &q["_meta"],
                    q["leanctx"]["version"].as_str().unwrap(),
                    &shown,
                    &mut sent,
                );
                let reread = delivered.iter().any(|p| p == path);
                let holds = held.get(id).is_some_and(|w| w.iter().any(|f| path.ends_with(f)));
                let reason = j["decision"]["reason"].as_str().unwrap().to_string();
                let witness = j["witness"].as_str().unwrap_or_default().to_string();
                out.push((reason, j["decision"]["allow"] == true, reread && holds, witness));
                delivered.push(path.to_string());
            }
        }
    }
    out
}

/// The `agent-*.jsonl` files under `dir`, at any depth, each with its path
/// relative to `dir`, sorted.
fn transcripts_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.file_name().unwrap().to_str().unwrap().starts_with("agent-") {
                out.push((p.clone(), p.strip_prefix(dir).unwrap().to_str().unwrap().to_string()));
            }
        }
    }
    out.sort();
    out
}

fn keep(_: &mut Value) {}

fn reasons(a: &Answers) -> Vec<&str> {
    a.iter().map(|(r, ..)| r.as_str()).collect()
}

/// No stub the model's request did not back.
fn no_wrong(what: &str, a: &Answers) {
    let wrong: Vec<_> = a.iter().filter(|(_, allowed, safe, _)| *allowed && !safe).collect();
    assert!(wrong.is_empty(), "{what}: wrong stubs {wrong:?} in {a:?}");
}

/// The main thread's compaction, while a subagent ran, did not reach the
/// subagent's context: its re-read is a stub (the request still held S);
/// the main thread's re-read is withheld (its request held no M). Before
/// the compaction's reach was recorded, the subagent's re-read was
/// withheld `compacted` too (the run at d7a5226, docs/DELIVERY.md §8).
#[test]
fn the_main_threads_compaction_leaves_a_running_subagents_deliveries() {
    let a = replay("subagent-main-compact", &keep, &keep);
    no_wrong("as captured", &a);
    assert_eq!(
        reasons(&a),
        ["not-delivered", "not-delivered", "not-delivered", "confirmed-delivery", "compacted"],
        "{a:?}"
    );
    assert!(a[3].2, "the oracle backs the subagent's stub: {a:?}");
}

/// A subagent whose own transcript is in neither place the host keeps one
/// (`subagent-main-compact` replayed without its `subagents/` file, or with
/// it in a directory the host never makes): its re-read is withheld
/// `transcript-unavailable`, at once (the witness says why; no wait for a
/// line), and the main thread's answers are as captured. Before, the
/// re-read was a stub on hooks alone (`confirmed-delivery`): that
/// subagent's compaction with its hooks lost could not have been seen
/// (docs/DELIVERY.md §8, "A workflow's agents").
#[test]
fn a_subagent_whose_transcript_is_in_neither_place_is_withheld() {
    let want = ["not-delivered", "not-delivered", "not-delivered", "transcript-unavailable", "compacted"];
    let nowhere = |evs: &mut Events| evs.retain(|(_, _, e)| !matches!(e, Ev::SubLine(..)));
    let elsewhere = |evs: &mut Events| {
        for (_, _, e) in evs.iter_mut() {
            if let Ev::SubLine(name, _) = e {
                *name = format!("workflows/notes/{name}");
            }
        }
    };
    for (what, events) in [("nowhere", &nowhere as &dyn Fn(&mut Events)), ("elsewhere", &elsewhere)] {
        let a = replay_with("subagent-main-compact", &keep, &keep, events);
        no_wrong(what, &a);
        assert_eq!(reasons(&a), want, "{what}: {a:?}");
        assert!(a[3].3.contains("in neither place"), "{what}: withheld at once, not after a wait: {a:?}");
    }
    // As captured, the same re-read is a stub the oracle backs.
    let a = replay("subagent-main-compact", &keep, &keep);
    assert_eq!((a[3].0.as_str(), a[3].1, a[3].2), ("confirmed-delivery", true, true), "{a:?}");
}

/// The subagent's own compaction did not reach the main thread's context:
/// the main thread's re-read is a stub. Before, `compacted`.
#[test]
fn a_subagents_own_compaction_leaves_the_main_threads_deliveries() {
    let a = replay("subagent-own-compact", &keep, &keep);
    no_wrong("as captured", &a);
    assert_eq!(reasons(&a), ["not-delivered", "confirmed-delivery"], "{a:?}");
    assert!(a[1].2, "the oracle backs the stub: {a:?}");
}

/// What cannot be told apart still ends everything: compaction hooks with
/// no `agent_id` are the main thread's (the subagent's own compaction then
/// withholds the main thread's re-read, the safe side); a boundary line
/// that does not say it is the main thread's (`isSidechain` not false)
/// ends the subagent's deliveries too, even with every compaction hook lost.
#[test]
fn a_compaction_that_cannot_be_placed_ends_everything() {
    let no_agent = |h: &mut Value| {
        if matches!(h["hook_event_name"].as_str(), Some("PreCompact" | "PostCompact" | "SessionStart")) {
            h.as_object_mut().unwrap().remove("agent_id");
        }
    };
    let a = replay("subagent-own-compact", &no_agent, &keep);
    no_wrong("own compaction, hooks without agent_id", &a);
    assert_eq!(reasons(&a), ["not-delivered", "compacted"], "{a:?}");

    let lost = |h: &mut Value| {
        let compaction =
            matches!(h["hook_event_name"].as_str(), Some("PreCompact" | "PostCompact")) || h["source"] == "compact";
        if compaction {
            // A hook that dies before it records: replayed as a plain prompt-less event.
            *h = json!({"hook_event_name": "Notification", "session_id": h["session_id"]});
        }
    };
    let unplaced = |v: &mut Value| {
        if v["subtype"] == "compact_boundary" {
            v["isSidechain"] = json!(true);
        }
    };
    let a = replay("subagent-main-compact", &lost, &unplaced);
    no_wrong("main compaction, hooks lost, boundary not the main thread's", &a);
    assert!(!a[3].1 && !a[4].1, "{a:?}");
    // The boundary as written, hooks lost: the witness alone places it.
    let a = replay("subagent-main-compact", &lost, &keep);
    no_wrong("main compaction, hooks lost", &a);
    assert_eq!(reasons(&a)[3..], ["confirmed-delivery", "compacted"], "{a:?}");
}

/// A subagent's own compaction whose three hooks were all lost is seen in
/// its own transcript: its re-read afterwards is withheld, and the main
/// thread's re-read is still a stub. A variant of `subagent-own-compact`
/// (the captured subagent compacted before any MCP read of its own): its
/// one tool call before the compaction, the ToolSearch (hooks 13–15 with its
/// `agent_id`, its transcript's tool-use line), made a `ctx_read` of S, the
/// shape of the main thread's read (hooks 6–8); and a re-read of S by the
/// subagent 50 ms after the compaction (its `PreToolUse` a copy of the
/// first one's), which the oracle judges from the subagent's request after
/// its compaction (held nothing whole: `model-requests.jsonl`, …645.10).
/// Before the witness read the subagent's transcript, the re-read was a
/// stub (`confirmed-delivery`): a wrong one.
#[test]
fn a_subagents_compaction_whose_hooks_were_all_lost_ends_its_deliveries() {
    lost_hooks_compaction("subagent-own-compact", &["confirmed-delivery"]);
}

/// The same for an agent a workflow ran (`workflow-own-compact`, captured
/// as `subagent-own-compact` was, the subagent an agent of a `Workflow`
/// run: its ToolSearch is hooks 15–18, its boundary in its own transcript,
/// which Claude Code 2.1.328 keeps in `subagents/workflows/<run id>/`,
/// docs/HOST-FACTS.md §9). Before the witness looked there, the file read
/// as not written yet: the re-read after its compaction was a stub
/// (`confirmed-delivery`), a wrong one, and a file never seen was not
/// waited for. After the run the main thread read S and another file, then
/// re-read M (hooks 24–41).
#[test]
fn a_workflow_agents_compaction_whose_hooks_were_all_lost_ends_its_deliveries() {
    lost_hooks_compaction("workflow-own-compact", &["not-delivered", "not-delivered", "confirmed-delivery"]);
}

/// The subagent of `scenario`, its compaction hooks all lost, its one tool
/// call before the compaction made a read of S and a re-read added after
/// it: see the two tests above. `main_after`: the main thread's answers
/// after the subagent's two, the last a stub of M the oracle backs.
fn lost_hooks_compaction(scenario: &str, main_after: &[&str]) {
    const S: &str = "big-10240-s1";
    const AGAIN: &str = "toolu_variant_subagent_reread";
    // The subagent's first call (its ToolSearch in both captures).
    let first_id = fixture_hooks(&dir(scenario), Path::new("t"))
        .into_iter()
        .find_map(|(_, h)| {
            (h["hook_event_name"] == "PreToolUse" && h["agent_id"].is_string()).then(|| h["tool_use_id"].clone())
        })
        .unwrap();
    let first_id = first_id.as_str().unwrap();
    let read_s = |h: &mut Value| {
        if h["tool_use_id"] == first_id || h["tool_calls"][0]["tool_use_id"] == first_id {
            let text = json!([{"type": "text", "text": format!("MARK-START {S} size=10240\nvariant")}]);
            let call = if h["hook_event_name"] == "PostToolBatch" { &mut h["tool_calls"][0] } else { &mut *h };
            call["tool_name"] = json!("mcp__ctx__ctx_read");
            call["tool_input"] = json!({"path": S});
            if call.get("tool_response").is_some() {
                call["tool_response"] = text;
            }
        }
    };
    let lose = |h: &mut Value| {
        let compaction =
            matches!(h["hook_event_name"].as_str(), Some("PreCompact" | "PostCompact")) || h["source"] == "compact";
        if compaction {
            *h = json!({"hook_event_name": "Notification", "session_id": h["session_id"]});
        }
        read_s(h);
    };
    let mcp_line = |v: &mut Value| {
        for b in v["message"]["content"].as_array_mut().into_iter().flatten() {
            if b["id"] == first_id {
                b["name"] = json!("mcp__ctx__ctx_read");
                b["input"] = json!({"path": S});
            }
        }
    };
    let version = "sha256:2f6d4b1bb1a7d5d4b7c0f0e3a8d9c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9";
    let add = |evs: &mut Events| {
        let hook = |event: &str, id: &str| {
            evs.iter()
                .find_map(|(t, _, e)| match e {
                    Ev::Hook(h) if h["hook_event_name"] == event && (h["tool_use_id"] == id || h["agent_id"] == id) => {
                        Some((*t, h.clone()))
                    }
                    _ => None,
                })
                .unwrap()
        };
        let (pre, first) = hook("PreToolUse", first_id);
        let (post, _) = hook("SubagentStop", first["agent_id"].as_str().unwrap());
        // After the subagent's boundary (or the line in its place) is on disk, before it stops.
        let boundary = evs
            .iter()
            .find_map(|(t, _, e)| {
                matches!(e, Ev::SubLine(_, l) if l.contains("compact_boundary") || l.contains("informational"))
                    .then_some(*t)
            })
            .unwrap();
        let again_at = boundary.max(pre) + 50;
        assert!(again_at < post, "the re-read falls inside the subagent's run");
        let mut again = first;
        again["tool_use_id"] = json!(AGAIN);
        // The re-read's own tool-use line in the subagent's transcript (its
        // first call's line with the new id), on disk as the call is made.
        let line = evs
            .iter()
            .find_map(|(_, _, e)| match e {
                Ev::SubLine(name, l) if l.contains(first_id) && l.contains("\"tool_use\"") => {
                    Some(Ev::SubLine(name.clone(), l.replace(first_id, AGAIN)))
                }
                _ => None,
            })
            .unwrap();
        evs.push((again_at, 0, line));
        let question = |id: &str, ms: u64| {
            json!({"ts": ms as f64 / 1000.0, "_meta": {"claudecode/toolUseId": id}, "arguments": {"path": S},
                   "leanctx": {"version": version}})
        };
        evs.push((pre + 20, 2, Ev::Question(question(first_id, pre + 20))));
        evs.push((again_at, 1, Ev::Hook(again)));
        evs.push((again_at + 10, 2, Ev::Question(question(AGAIN, again_at + 10))));
    };
    let want = |reread: &'static str| [&["not-delivered", "not-delivered", reread][..], main_after].concat();
    let a = replay_with(scenario, &lose, &mcp_line, &add);
    no_wrong("a subagent's own compaction, its hooks lost", &a);
    // M read, S read by the subagent, S re-read after its compaction, then the main thread's.
    assert_eq!(reasons(&a), want("withdrawn"), "{a:?}");
    assert!(a.last().unwrap().2, "the oracle backs the main thread's stub: {a:?}");

    // The same with the subagent's transcript as written but no boundary in
    // it: its re-read is a stub (nothing withdrew S, as far as the host's
    // record goes), so what withholds above is the boundary.
    let no_boundary = |v: &mut Value| {
        mcp_line(v);
        if v["subtype"] == "compact_boundary" {
            *v = json!({"type": "system", "subtype": "informational", "isSidechain": true});
        }
    };
    let a = replay_with(scenario, &lose, &no_boundary, &add);
    assert_eq!(reasons(&a), want("confirmed-delivery"), "{a:?}");

    // The re-read's own line not on disk yet (seen live: 2 of 6 subagent
    // calls arrived before it, docs/DELIVERY.md §8): a boundary queued
    // before it may not be either, so the question waits for it, and past
    // the wait withholds. Before the wait, a stub.
    let late = |evs: &mut Events| {
        add(evs);
        evs.retain(|(_, _, e)| !matches!(e, Ev::SubLine(_, l) if l.contains(AGAIN)));
    };
    let a = replay_with(scenario, &lose, &no_boundary, &late);
    assert_eq!(reasons(&a), want("transcript-unavailable"), "{a:?}");
}
