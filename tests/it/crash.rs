//! Crash safety with real processes: `kill -9` hook processes (and CLI
//! readers that claim) at random points, hundreds of trials, while other
//! hooks and readers run. Afterwards every state file parses or is absent,
//! no record a finished hook reported is lost, no lock is held, stray temp
//! files are cleaned by a later write, and the next hook works.
//!
//! `LEANCTX_CRASH_TRIALS=N` (default 300, 3000 with `LEANCTX_STRESS=1`);
//! `LEANCTX_SEED=S` replays a run.

use crate::rng::{self, Rng};
use crate::support::Sandbox;
use leanctx::identity::caller::ScopeEnv;
use leanctx::identity::mcp_call::McpCall;
use leanctx::identity::readpath::{ReadPath, StubQuery};
use leanctx::state::journal::{self, Journal, Record};
use leanctx::state::slot::Slot;
use serde_json::json;
use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant, SystemTime};

const HOSTS: [&str; 4] = ["claude", "codex", "codebuddy", "cursor"];

/// One hook payload for a trial. Returns (host, payload, the call id a
/// finished hook must have journaled, CURSOR_TASK_ID).
fn payload(rng: &mut Rng, trial: u64, i: u64) -> (&'static str, String, Option<String>, Option<String>) {
    let host = *rng.pick(&HOSTS);
    let conv = format!("conv-{}", rng.below(6));
    let id = format!("toolu_{trial}_{i}");
    let cursor = host == "cursor";
    let kind = rng.below(10);
    let (event, gated) = match (kind, cursor) {
        (0, false) => ("SessionStart", false),
        (0, true) => ("sessionStart", false),
        (1, false) => ("PreCompact", false),
        (1, true) => ("preCompact", false),
        (2, false) => ("SubagentStart", false),
        (2, true) => ("subagentStart", false),
        (3, false) => ("SessionEnd", false),
        (3, true) => ("sessionEnd", false),
        (_, false) => ("PreToolUse", true),
        (_, true) => ("beforeMCPExecution", true),
    };
    let mut p = json!({"hook_event_name": event, "session_id": conv,
        "transcript_path": format!("/t/{conv}.jsonl"), "cwd": "/nonexistent-project"});
    // Only Cursor sends conversation_id (a Claude entry given one stands aside).
    if cursor {
        p["conversation_id"] = json!(conv);
    }
    if gated {
        p["tool_name"] = json!(if cursor { "ctx_read" } else { "mcp__ctx__ctx_read" });
        p["tool_input"] = if cursor { json!(format!("{{\"path\":\"{id}\"}}")) } else { json!({"path": id}) };
        p["tool_use_id"] = json!(id);
        if cursor {
            p["command"] = json!("lean-ctx");
        }
    }
    if event.starts_with("Subagent") || event == "subagentStart" {
        p["agent_id"] = json!(format!("ag{}", rng.below(4)));
        p["subagent_id"] = json!(format!("sa{}", rng.below(4)));
    }
    let task = (cursor && rng.chance(0.25)).then(|| format!("task{}", rng.below(3)));
    (host, p.to_string(), gated.then_some(id), task)
}

fn list_temps(data: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in [data.to_path_buf(), data.join("scopes")] {
        if let Ok(rd) = std::fs::read_dir(&d) {
            out.extend(
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".tmp-"))),
            );
        }
    }
    out
}

/// Every state file parses or is absent; returns the journal's call ids.
fn check_state(data: &Path) -> HashSet<String> {
    let slot = data.join("active_transcript.json");
    if slot.exists() {
        let t = std::fs::read_to_string(&slot).unwrap();
        assert!(Slot::parse(&t).is_some(), "slot does not parse: {t:?}");
    }
    if let Ok(rd) = std::fs::read_dir(data.join("scopes")) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(".tmp-") {
                continue;
            }
            let t = std::fs::read_to_string(e.path()).unwrap();
            assert!(Slot::parse(&t).is_some(), "scope slot {n} does not parse: {t:?}");
        }
    }
    let text = std::fs::read_to_string(data.join("journal")).unwrap_or_default();
    assert!(text.is_empty() || text.ends_with('\n'), "journal ends in a torn line: {:?}", tail(&text));
    let mut ids = HashSet::new();
    for l in text.lines() {
        if l.starts_with('#') {
            continue;
        }
        match journal::parse_line(l) {
            Some(Record::Call(c)) => {
                if let Some(id) = c.call_id {
                    ids.insert(id.to_string());
                }
            }
            Some(_) => {}
            // A compaction's reach, on its own line before its `P` line.
            None if journal::is_known_line(l) => {}
            None => panic!("journal line does not parse: {l:?}"),
        }
    }
    ids
}

/// (tag, host (empty for compactions, which any host's line satisfies), conversation)
/// of every sighting, compaction, end and subagent start in the journal.
fn state_kinds(data: &Path) -> HashSet<(char, String, String)> {
    let text = std::fs::read_to_string(data.join("journal")).unwrap_or_default();
    journal::parse(&text)
        .into_iter()
        .filter_map(|r| match r {
            Record::Sighting { host, conv, .. } => Some(('S', host.to_string(), conv.to_string())),
            Record::Compaction { conv, .. } => Some(('P', String::new(), conv.to_string())),
            Record::End { host, conv, .. } => Some(('E', host.to_string(), conv.to_string())),
            Record::SubagentStart { host, conv, .. } => Some(('U', host.to_string(), conv.to_string())),
            _ => None,
        })
        .collect()
}

fn tail(s: &str) -> &str {
    let mut i = s.len().saturating_sub(200);
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

fn lock_is_free(data: &Path) {
    let f = std::fs::OpenOptions::new().read(true).write(true).open(data.join("journal.lock")).unwrap();
    f.try_lock().expect("journal.lock is still held after every process ended");
    f.unlock().unwrap();
}

#[test]
fn kill_nine_at_random_points_loses_nothing_reported() {
    let trials = rng::count("LEANCTX_CRASH_TRIALS", 300, 3000);
    // The trials are shared between a fixed seed (reproducible in CI) and a
    // fresh one; each seed's schedule (payloads, kill delays) replays with
    // `LEANCTX_SEED`, though where a kill lands in a process's life is up to
    // the machine.
    let seeds = rng::seeds("crash", &[1]);
    let per_seed = trials.div_ceil(seeds.len() as u64);
    let mut seed = seeds[0];
    let mut rng = Rng::new(seed);
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.data).unwrap();
    std::fs::set_permissions(&sb.data, std::fs::Permissions::from_mode(0o700)).unwrap();

    // Readers running all along: the library read path (shared lock, slot),
    // and raw reads of the slot, each must never see a torn state.
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let torn = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (stop, reads, torn, data) = (stop.clone(), reads.clone(), torn.clone(), sb.data.clone());
            std::thread::spawn(move || {
                let rp = ReadPath::new(&data, ScopeEnv::default());
                let call = McpCall::from_json(&json!({"name":"ctx_read","arguments":{"path":"x"},
                    "_meta":{"claudecode/toolUseId":"toolu_0_0"}}))
                .unwrap();
                let mut n = 0u64;
                while !stop.load(Relaxed) {
                    n += 1;
                    if r == 0 {
                        let _ = rp.decide(&StubQuery {
                            delivered: Some("conv-1"),
                            delivered_at_ms: Some(1),
                            cold: n.is_multiple_of(2),
                            call: Some(&call),
                        });
                        if let Ok(text) = Journal::new(&data).read() {
                            let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
                            if complete.lines().any(|l| !l.starts_with('#') && !journal::is_known_line(l)) {
                                torn.fetch_add(1, Relaxed);
                            }
                        }
                    } else if let Ok(t) = std::fs::read_to_string(data.join("active_transcript.json"))
                        && Slot::parse(&t).is_none()
                    {
                        torn.fetch_add(1, Relaxed);
                    }
                    reads.fetch_add(1, Relaxed);
                }
            })
        })
        .collect();

    let started = Instant::now();
    let (mut spawned, mut killed, mut finished, mut checked, mut cli_killed) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut stray_seen = 0usize;
    let mut checked_state = 0u64;
    for trial in 0..trials {
        if trial > 0 && trial % per_seed == 0 {
            seed = seeds[(trial / per_seed) as usize];
            rng = Rng::new(seed);
        }
        let k = rng.range(1, 4);
        let mut procs = Vec::new();
        for i in 0..k {
            let (host, p, id, task) = payload(&mut rng, trial, i);
            let v: serde_json::Value = serde_json::from_str(&p).unwrap();
            let what = (
                host,
                v["hook_event_name"].as_str().unwrap().to_string(),
                v["session_id"].as_str().unwrap().to_string(),
            );
            let mut run = sb.hook(host, p);
            if let Some(t) = &task {
                run = run.env("CURSOR_TASK_ID", t);
            }
            // A kill somewhere in the hook's life: before it read stdin,
            // while it holds the lock, between the journal and the slot...
            let kill_after = rng.chance(0.6).then(|| Duration::from_micros(rng.range(0, 5000)));
            procs.push((run.spawn(), id, kill_after, false, Some(what)));
            spawned += 1;
        }
        // Now and then a CLI reader that claims (an append under the lock).
        if rng.chance(0.3) {
            let call = json!({"jsonrpc":"2.0","id":trial,"method":"tools/call",
                "params":{"name":"ctx_read","arguments":{"path":format!("toolu_{trial}_0")}}});
            let child =
                sb.cmd(["scope", "check", "--delivered", "conv-1", "--call", "-"]).stdin(call.to_string()).spawn();
            procs.push((child, None, Some(Duration::from_micros(rng.range(0, 5000))), true, None));
        }
        let t0 = Instant::now();
        let mut order: Vec<usize> = (0..procs.len()).collect();
        order.sort_by_key(|&i| procs[i].2.unwrap_or(Duration::MAX));
        for i in order {
            if let Some(d) = procs[i].2 {
                if let Some(left) = d.checked_sub(t0.elapsed()) {
                    std::thread::sleep(left);
                }
                let _ = procs[i].0.kill(); // SIGKILL
            }
        }
        let mut reported = Vec::new();
        let mut reported_state = Vec::new();
        for (mut child, id, _, cli, what) in procs {
            let st = child.wait().unwrap();
            match st.code() {
                Some(0) => {
                    if !cli {
                        finished += 1;
                        // A hook that answered reported its record.
                        if let Some(id) = id {
                            reported.push(id);
                        }
                        reported_state.extend(what);
                        let mut err = String::new();
                        use std::io::Read;
                        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
                        assert!(err.is_empty(), "trial {trial}: a finished hook complained: {err}");
                    }
                }
                Some(1) if cli => {}
                None if cli => cli_killed += 1,
                None => killed += 1,
                other => panic!("trial {trial} (seed {seed}): unexpected exit {other:?}"),
            }
        }
        let ids = check_state(&sb.data);
        for id in &reported {
            assert!(ids.contains(id), "trial {trial} (seed {seed}): finished hook's record {id} lost");
            checked += 1;
        }
        // Not only call records: every finished hook's sighting, compaction,
        // end or subagent start is there (a trim keeps the newest of each
        // per conversation, so one of that kind must remain).
        let kinds = state_kinds(&sb.data);
        for (host, event, conv) in &reported_state {
            let host = if *host == "claude" { "claude-code" } else { host };
            let tag = match event.as_str() {
                "PreCompact" | "preCompact" => 'P',
                "SessionEnd" | "sessionEnd" => 'E',
                "SubagentStart" | "subagentStart" => 'U',
                _ => 'S',
            };
            // Cursor's subagentStart names the parent: recorded under it.
            if tag == 'U' && host == "cursor" {
                continue;
            }
            let key = (tag, if tag == 'P' { String::new() } else { host.to_string() }, conv.clone());
            assert!(kinds.contains(&key), "trial {trial} (seed {seed}): {host} {event} of {conv} lost");
            checked_state += 1;
        }
        stray_seen = stray_seen.max(list_temps(&sb.data).len());
    }
    stop.store(true, Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(torn.load(Relaxed), 0, "torn reads");
    // The run must have done what it claims: kills at every stage, and
    // records of both kinds checked (a run that killed or checked nothing
    // would pass every assertion above).
    assert!(killed > 0 && finished > 0, "killed {killed}, finished {finished}");
    assert!(checked > 0 && checked_state > 0, "checked {checked} call records, {checked_state} others");
    lock_is_free(&sb.data);

    // Stray temps: whatever the kills left, plus one planted in each dir (so
    // the cleanup is always exercised), are removed by a later write once
    // they are older than a minute.
    std::fs::create_dir_all(sb.data.join("scopes")).unwrap();
    for d in [sb.data.clone(), sb.data.join("scopes")] {
        std::fs::write(d.join(".tmp-planted"), b"{\"half\":").unwrap();
    }
    let strays = list_temps(&sb.data).len();
    // Two minutes pass for the leftovers: their mtime is set back (a temp's
    // age is measured on the system clock, so moving only the hooks' "now"
    // would not age it, by design).
    for p in list_temps(&sb.data) {
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(120)).unwrap();
    }
    // Enough later writes to pass the trim bound, so one of them trims.
    let mut n = 0;
    while list_temps(&sb.data).iter().any(|p| p.exists()) && n < 400 {
        let p = json!({"hook_event_name":"PreToolUse","session_id":format!("later-{}", n % 3),
            "tool_name":"mcp__ctx__ctx_read","tool_input":{"n":n},"tool_use_id":format!("toolu_later_{n}")});
        let run = sb.hook("claude", p.to_string());
        let o = run.ok();
        assert!(o.stderr.is_empty(), "{}", o.stderr);
        // A Cursor task hook writes its scope slot: that dir is cleaned too.
        let p = json!({"hook_event_name":"beforeMCPExecution","conversation_id":"later-c",
            "tool_name":"ctx_read","tool_input":format!("{{\"n\":{n}}}")});
        sb.hook("cursor", p.to_string()).env("CURSOR_TASK_ID", "later").ok();
        n += 1;
    }
    let left = list_temps(&sb.data);
    assert!(left.is_empty(), "stray temp files survive later writes: {left:?}");

    // The next hook of every host works and is recorded.
    for host in HOSTS {
        let id = format!("toolu_next_{host}");
        let mut p = json!({"hook_event_name": if host == "cursor" {"beforeMCPExecution"} else {"PreToolUse"},
            "session_id":"next",
            "tool_name": if host == "cursor" {"ctx_read"} else {"mcp__ctx__ctx_read"},
            "tool_input": {"next": host}, "tool_use_id": id});
        if host == "cursor" {
            p["conversation_id"] = json!("next");
        }
        let o = sb.hook(host, p.to_string()).ok();
        assert!(o.stderr.is_empty(), "{host}: {}", o.stderr);
        assert!(check_state(&sb.data).contains(&id), "{host}: next hook not recorded");
    }
    lock_is_free(&sb.data);
    println!(
        "crash: {trials} trials (seeds {seeds:?}), {spawned} hooks spawned, {killed} killed mid-run (+{cli_killed} claiming CLI readers), \
         {finished} finished, {checked} reported call records and {checked_state} other records checked present, {} concurrent reads, 0 torn; \
         up to {stray_seen} stray temps at once, {strays} cleaned after {n} later writes; {:.1} s",
        reads.load(Relaxed),
        started.elapsed().as_secs_f64()
    );
}
