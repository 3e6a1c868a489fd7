//! The real Claude Code's withdrawals, replayed (fixtures:
//! tests/fixtures/payloads/withdrawal/claude/, from the runs of
//! docs/DELIVERY.md §8): every hook through the real binary at its own
//! time, the transcript growing line by line as the host wrote it, and
//! every stub question the MCP server asked, judged by an oracle that
//! reads only what the mock model received (`model-requests.jsonl`: the
//! tool results in the latest request, less those the emulated API
//! cleared), never a rule of the product.

use crate::support::Sandbox;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

pub(crate) fn dir(s: &str) -> PathBuf {
    crate::support::payloads().join("withdrawal/claude").join(s)
}

pub(crate) fn jsonl(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `2026-12-01T06:32:18.103Z` as unix ms.
pub(crate) fn iso_ms(s: &str) -> u64 {
    let n = |a: usize, b: usize| s[a..b].parse::<i64>().unwrap();
    let (y, m, d) = (n(0, 4), n(5, 7), n(8, 10));
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let days = 365 * y + y / 4 - y / 100 + y / 400 + (153 * m + 2) / 5 + d - 719_469;
    let secs = days * 86_400 + n(11, 13) * 3600 + n(14, 16) * 60 + n(17, 19);
    (secs * 1000 + n(20, 23)) as u64
}

enum Ev {
    Hook(Value),
    Question(Value),
    Line(String),
}

/// What the model held at `t`: per path, whether its latest request holds
/// a whole copy (the file's full size, not a placeholder) that the API did
/// not clear.
fn model_holds(requests: &[Value], t: f64, path: &str, bytes: u64) -> bool {
    let Some(i) = requests.iter().rposition(|r| r["mock"] == "request" && r["ts"].as_f64().unwrap() < t) else {
        return false;
    };
    let cleared: Vec<&str> = requests[i + 1..]
        .iter()
        .filter(|r| r["mock"] == "server_emulation" && r["ts"].as_f64().unwrap() < t)
        .flat_map(|r| r["view"]["cleared"].as_array().into_iter().flatten())
        .filter_map(|c| c["id"].as_str())
        .collect();
    requests[i]["tool_results"].as_array().into_iter().flatten().any(|tr| {
        tr["input"]["path"] == path
            && tr["chars"].as_u64() == Some(bytes)
            && !cleared.contains(&tr["tool_use_id"].as_str().unwrap_or(""))
    })
}

#[derive(Default, Debug)]
struct Tally {
    questions: usize,
    rereads: usize,
    safe: usize,
    allowed_safe: usize,
    wrong: Vec<String>,
    reasons: Vec<String>,
}

/// A fixture's hooks in file order (`hooks/NNN-<Event>.json`), each at its
/// start time from `hooks-index.jsonl` (unix ms), the transcript each names
/// replaced by `transcript` (the replay's own copy).
pub(crate) fn fixture_hooks(d: &Path, transcript: &Path) -> Vec<(u64, Value)> {
    let index = jsonl(&d.join("hooks-index.jsonl"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(d.join("hooks")).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let n: u64 = f.file_name().unwrap().to_str().unwrap()[..3].parse().unwrap();
            let row = index.iter().find(|r| r["n"] == n).unwrap();
            let t = (row["started_at"].as_f64().unwrap() * 1000.0) as u64;
            let mut h: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            if h.get("transcript_path").is_some() {
                h["transcript_path"] = json!(transcript);
            }
            (t, h)
        })
        .collect()
}

/// The times of the `UserPromptSubmit` hooks among `hooks`.
pub(crate) fn prompt_hook_times(hooks: &[(u64, Value)]) -> Vec<u64> {
    hooks.iter().filter(|(_, h)| h["hook_event_name"] == "UserPromptSubmit").map(|(t, _)| *t).collect()
}

/// When transcript line `v` reached the disk: its timestamp, never before
/// the line before it (at `last`). A prompt's line carries the time the
/// prompt was made, but reaches the disk after its `UserPromptSubmit` hook
/// ran (the hook can still block it): the transcript's size at the hook
/// ends before the line (hooks-index.jsonl: 1,418,411 bytes at the hook in
/// idle-cut-interactive, the prompt's line then up to the cut record at
/// 1,419,393; 1,384,808 and 1,385,855 in idle-cut). Placed after it.
pub(crate) fn line_time(v: &Value, last: u64, prompt_hooks: &[u64]) -> u64 {
    let t = v["timestamp"].as_str().map(iso_ms).unwrap_or(last).max(last);
    let prompt = v["type"] == "user" && v["message"]["content"].is_string();
    match prompt_hooks.iter().find(|&&h| h >= t && h <= t + 1000) {
        Some(h) if prompt => h + 1,
        _ => t,
    }
}

/// What each call's `PostToolBatch` among `hooks` showed the model, by
/// tool-use id: the server's result as the hook saw it.
pub(crate) fn batch_results<'a>(hooks: impl IntoIterator<Item = &'a Value>) -> HashMap<String, Value> {
    let mut shown = HashMap::new();
    for h in hooks.into_iter().filter(|h| h["hook_event_name"] == "PostToolBatch") {
        for c in h["tool_calls"].as_array().into_iter().flatten() {
            shown.insert(c["tool_use_id"].as_str().unwrap().to_string(), c["tool_response"].clone());
        }
    }
    shown
}

/// A fixture's stub question asked through the real binary at `t`: call
/// `i` for `path` with the host's `_meta`, and as its result the file's
/// content as its first read's hook showed it (`shown`, by tool-use id):
/// the server sends the same result for every read of a file (`sent`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn ask_question(
    sb: &Sandbox,
    scenario: &str,
    i: usize,
    t: u64,
    path: &str,
    meta: &Value,
    version: &str,
    shown: &HashMap<String, Value>,
    sent: &mut HashMap<String, Value>,
) -> (crate::support::Out, Value) {
    let id = meta["claudecode/toolUseId"].as_str().unwrap();
    let call = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
        "params": {"name": "ctx_read", "arguments": {"path": path}, "_meta": meta}});
    let cp = sb.tmp.path().join(format!("call-{i}.json"));
    std::fs::write(&cp, call.to_string()).unwrap();
    let blocks = sent
        .entry(path.to_string())
        .or_insert_with(|| match shown.get(id) {
            Some(Value::Array(b)) => json!(b),
            Some(Value::String(s)) => json!([{"type": "text", "text": s}]),
            _ => json!([{"type": "text", "text": format!("no result seen for {id}")}]),
        })
        .clone();
    let rp = sb.tmp.path().join(format!("result-{i}.json"));
    std::fs::write(&rp, json!({"content": blocks}).to_string()).unwrap();
    let o = sb
        .cmd(["stub", "--call", cp.to_str().unwrap(), "--key", path, "--version", version, "--json"])
        .arg("--result")
        .arg(&rp)
        .env("LEAN_CTX_NOW_MS", t.to_string())
        .run();
    assert!(o.code == 0 || o.code == 1, "{scenario}: {o:?}");
    let j = o.json();
    (o, j)
}

/// The process `leanctx stub` takes for the host: its caller's parent.
pub(crate) fn host_pid() -> u32 {
    #[cfg(unix)]
    return std::os::unix::process::parent_id();
    #[cfg(not(unix))]
    return 0;
}

/// Replay one scenario. `lag_ms`: the transcript's withdrawal records
/// (`tool_results_cut`, `applied_edits`) reach the disk this late (the
/// queued write of docs/DELIVERY.md §8, "the race"). `named`: the hooks
/// name their host process (`CLAUDE_PID`, as the live host does), the one
/// the stub questions come from (the test process's parent: `stub`'s
/// caller stands for the MCP server, its parent for the host). `queued`:
/// a rewind's record and every line after it are late by `lag_ms` too, as
/// Claude Code's transcript queue writes them (in order, same section).
fn replay(scenario: &str, lag_ms: u64, named: bool, queued: bool) -> Tally {
    let d = dir(scenario);
    let sb = Sandbox::new();
    let transcript = sb.tmp.path().join("transcript.jsonl");
    std::fs::write(&transcript, "").unwrap();
    let hooks = fixture_hooks(&d, &transcript);
    let prompt_hooks = prompt_hook_times(&hooks);
    let mut evs: Vec<(u64, usize, Ev)> = hooks.into_iter().map(|(t, h)| (t, 1, Ev::Hook(h))).collect();
    for q in jsonl(&d.join("mcp-ledger.jsonl")).into_iter().filter(|e| e["event"] == "ledger") {
        evs.push(((q["ts"].as_f64().unwrap() * 1000.0) as u64, 2, Ev::Question(q)));
    }
    let (mut last, mut behind) = (0, false);
    for line in std::fs::read_to_string(d.join("transcript.jsonl")).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let mut t = line_time(&v, last, &prompt_hooks);
        last = t;
        behind |= queued && line.contains("\"rewound\"");
        let late = line.contains("\"tool_results_cut\"") || line.contains("\"applied_edits\"") || behind;
        if late {
            t += lag_ms;
        }
        evs.push((t, 0, Ev::Line(line.to_string())));
    }
    // Stable: same-time events keep lines, then hooks, then questions.
    evs.sort_by_key(|(t, k, _)| (*t, *k));
    let requests = jsonl(&d.join("model-requests.jsonl"));
    // What each call's PostToolBatch showed the model: the server's result
    // as the hook saw it (the fixtures' long strings are shortened the same
    // way in both).
    let shown = batch_results(evs.iter().filter_map(|(_, _, e)| match e {
        Ev::Hook(h) => Some(h),
        _ => None,
    }));
    let mut tally = Tally::default();
    let mut delivered: Vec<String> = Vec::new();
    let mut sent: HashMap<String, Value> = HashMap::new();
    let mut out = std::fs::OpenOptions::new().append(true).open(&transcript).unwrap();
    for (i, (t, _, e)) in evs.iter().enumerate() {
        match e {
            Ev::Line(l) => writeln!(out, "{l}").unwrap(),
            Ev::Hook(h) => {
                let mut run = sb.hook("claude-code", h.to_string()).env("LEAN_CTX_NOW_MS", t.to_string());
                if named {
                    run = run.env("CLAUDE_PID", host_pid().to_string());
                }
                let o = run.run();
                assert_eq!(o.code, 0, "{scenario}: {o:?}");
            }
            Ev::Question(q) => {
                let path = q["path"].as_str().unwrap();
                let (o, j) = ask_question(
                    &sb,
                    scenario,
                    i,
                    *t,
                    path,
                    &q["meta"],
                    q["version"].as_str().unwrap(),
                    &shown,
                    &mut sent,
                );
                let allowed = j["decision"]["allow"] == true;
                tally.questions += 1;
                tally.reasons.push(j["decision"]["reason"].as_str().unwrap().to_string());
                let reread = delivered.iter().any(|p| p == path);
                let safe = reread && model_holds(&requests, *t as f64 / 1000.0, path, q["bytes"].as_u64().unwrap());
                tally.rereads += reread as usize;
                tally.safe += safe as usize;
                tally.allowed_safe += (safe && allowed) as usize;
                if allowed && !safe {
                    tally.wrong.push(format!("{scenario}: {path} at {t}: {}", o.stdout));
                }
                delivered.push(path.to_string());
            }
        }
    }
    tally
}

/// Each withdrawal of the real Claude Code, as it happened: every re-read
/// after it is withheld, with the reason the witness gave; the control run
/// (feature flags off, no cut), its hooks not naming their process, loses
/// its one re-read to the idle rule,
/// which cannot tell a cut from none (the cost docs/DELIVERY.md §8 names).
#[test]
fn every_withdrawal_fixture_replays_with_no_wrong_stub() {
    #[rustfmt::skip]
    let rows: [(&str, u64, bool, &str); 15] = [
        ("rewind", 0, false, "withdrawn"),
        // The rewind's record, and the next turn's lines queued after it,
        // reach the disk after the question: it waits for its own call's
        // line, then withholds (before, the stub was served: e2e claude/serve).
        ("rewind", 60_000, false, "transcript-unavailable"),
        ("idle-cut", 0, false, "compacted"),
        ("idle-cut-interactive", 0, false, "compacted"),
        ("idle-server-edit", 0, false, "compacted"),
        // The records reach the disk after the question: the idle rule
        // alone (the resume's seconds_since_last_response, the prompt after
        // 65 minutes of silence) must hold.
        ("idle-cut", 60_000, false, "compacted"),
        ("idle-cut-interactive", 60_000, false, "compacted"),
        ("idle-server-edit", 60_000, false, "compacted"),
        ("idle-cut-env-disable-feature-flags", 0, false, "compacted"),
        // The live session's one process named: the return is provisional,
        // settled by the cut record and the answer after it (the re-read's
        // own result was cut: withdrawn), or, with both still unwritten,
        // not yet (transcript-unavailable).
        ("idle-cut-interactive", 0, true, "withdrawn"),
        ("idle-cut-interactive", 60_000, true, "transcript-unavailable"),
        // Print mode, then `--resume`, named: the first process said
        // `SessionEnd`, so the resume is the only process and its return
        // is provisional too. The re-read's result was cut (withdrawn); with
        // the records late, not yet; the API's clearing ends everything;
        // and the control run (flags off, nothing cut) keeps its stub,
        // which the idle rule alone cost before.
        ("idle-cut", 0, true, "withdrawn"),
        ("idle-cut", 60_000, true, "transcript-unavailable"),
        ("idle-server-edit", 0, true, "withdrawn"),
        ("idle-cut-env-disable-feature-flags", 0, true, "confirmed-delivery"),
    ];
    for (scenario, lag, named, last_reason) in rows {
        if named && !cfg!(unix) {
            continue;
        }
        let t = replay(scenario, lag, named, scenario == "rewind");
        eprintln!("{scenario} (lag {lag} ms): {t:?}");
        assert!(t.wrong.is_empty(), "{scenario}: wrong stubs {:#?}", t.wrong);
        assert!(t.rereads >= 1, "{scenario}: {t:?}");
        assert_eq!(t.reasons.last().map(String::as_str), Some(last_reason), "{scenario}: {t:?}");
    }
}

/// One Claude Code session open in two processes (`--resume` in a second
/// terminal while the first runs): two contexts. A delivery confirmed in
/// one process backs stubs there only; the other, whose context never had
/// it, is withheld (`window-changed`). A process that resumes after the
/// confirmation loaded it with the history only if the line it resumed
/// from was on the delivering process's branch: `claude --resume` loads the
/// last written line's chain, whichever process wrote it (fixture
/// `three-process-resume`: a third process resumed while two ran, from the
/// second's line, and its model request lacked the first's latest read).
/// Each host is a real process whose children run the hooks (named by
/// `CLAUDE_PID`, as Claude Code names them) and, through a server process,
/// the stub question.
#[cfg(unix)]
#[test]
fn a_delivery_confirmed_in_one_claude_process_backs_no_stub_in_another() {
    use crate::support::FakeHost;
    let sb = Sandbox::new();
    let transcript = sb.tmp.path().join("S.jsonl");
    std::fs::write(&transcript, "").unwrap();
    let file = |name: &str, v: &Value| {
        let p = sb.tmp.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let text = "fn main() {}\n".repeat(50);
    let result = file("r.json", &json!({"content": [{"type": "text", "text": text}]}));
    let hook_file = |event: &str, extra: Value| {
        let mut v = json!({"session_id": "S", "hook_event_name": event, "transcript_path": transcript});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        file(&format!("{event}-{}.json", extra.to_string().len()), &v)
    };
    let start = hook_file("SessionStart", json!({"source": "startup"}));
    let resume = hook_file("SessionStart", json!({"source": "resume"}));
    let prompt = hook_file("UserPromptSubmit", json!({}));
    let end = hook_file("SessionEnd", json!({}));
    // Every hook names its host process, as Claude Code's do.
    let hook = |host: &mut FakeHost, payload: &Path| {
        let pid = host.pid().to_string();
        assert_eq!(host.run_env(&[("CLAUDE_PID", &pid)], &["hook", "claude-code"], Some(payload)).0, 0);
    };
    // A read of `path` by `host` as the server asks it: the pre hook, the
    // host's transcript line, then `stub` (`record`: with the result, as a
    // server asks, so a withheld answer records the delivery it sends;
    // without, a question only). The reason and the window it names.
    let ask = |host: &mut FakeHost, path: &str, id: &str, record: bool| {
        let pre = file(
            &format!("pre-{id}.json"),
            &json!({"session_id": "S", "hook_event_name": "PreToolUse",
            "tool_name": "mcp__ctx__ctx_read", "tool_input": {"path": path}, "tool_use_id": id, "transcript_path": transcript}),
        );
        let pid = host.pid().to_string();
        assert_eq!(host.run_env(&[("CLAUDE_PID", &pid)], &["hook", "claude-code"], Some(&pre)).0, 0);
        // The host's transcript shows the call before it is made.
        let line = json!({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": id, "name": "mcp__ctx__ctx_read", "input": {}}]}});
        let mut t = std::fs::OpenOptions::new().append(true).open(&transcript).unwrap();
        writeln!(t, "{line}").unwrap();
        let call = file(
            &format!("call-{id}.json"),
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ctx_read", "arguments": {"path": path}, "_meta": {"claudecode/toolUseId": id}}}),
        );
        let mut args = vec!["stub", "--call", call.to_str().unwrap(), "--key", path, "--version", "v1", "--json"];
        if record {
            args.extend(["--result", result.to_str().unwrap()]);
        }
        let (code, out) = host.run(&args, None);
        assert!(code == 0 || code == 1, "{out}");
        let j: Value = serde_json::from_str(&out).unwrap();
        (j["decision"]["reason"].as_str().unwrap().to_string(), j["window"].clone())
    };
    let read = |host: &mut FakeHost, id: &str| ask(host, "a.rs", id, true);
    let confirm = |host: &mut FakeHost, id: &str| {
        let batch = file(
            &format!("batch-{id}.json"),
            &json!({"session_id": "S", "hook_event_name": "PostToolBatch", "tool_calls": [
            {"tool_name": "mcp__ctx__ctx_read", "tool_use_id": id, "tool_input": {}, "tool_response": [{"type": "text", "text": text}]}]}),
        );
        let pid = host.pid().to_string();
        assert_eq!(host.run_env(&[("CLAUDE_PID", &pid)], &["hook", "claude-code"], Some(&batch)).0, 0);
    };

    // Two processes: `a` starts the session, `b` resumes it while `a` runs.
    let (mut a, mut b) = (FakeHost::start(&sb), FakeHost::start(&sb));
    hook(&mut a, &start);
    hook(&mut a, &prompt);
    let (reason, window) = read(&mut a, "toolu_1");
    assert_eq!((reason.as_str(), window), ("not-delivered", json!(format!("proc:{}", a.pid()))));
    confirm(&mut a, "toolu_1");
    assert_eq!(read(&mut a, "toolu_2").0, "confirmed-delivery", "the same process");
    std::thread::sleep(std::time::Duration::from_millis(5));
    hook(&mut b, &resume);
    // `b` resumed after the confirmation, with `a` the only other process:
    // it loaded `a`'s line.
    assert_eq!(read(&mut b, "toolu_3").0, "confirmed-delivery", "resumed after the confirmation");
    hook(&mut b, &prompt);

    // `a` reads another file after `b` resumed: `b` never had it.
    let (mut c, mut d) = (FakeHost::start(&sb), FakeHost::start(&sb));
    hook(&mut a, &prompt);
    let v2 = |host: &mut FakeHost, id: &str, record: bool| ask(host, "b.rs", id, record).0;
    assert_eq!(v2(&mut a, "toolu_5", true), "not-delivered");
    confirm(&mut a, "toolu_5");
    // `b`, running alongside since before that confirmation, never had it.
    assert_eq!(v2(&mut b, "toolu_6", false), "window-changed", "the other process never had it");
    // A third process resumes now, while `a` and `b` run: Claude Code loads
    // the last written line's chain, which may be `b`'s (it was, in the
    // fixture). Before the witness kept the processes, this was a stub on
    // `a`'s copy (`confirmed-delivery`): wrong when `b` wrote last.
    std::thread::sleep(std::time::Duration::from_millis(5));
    hook(&mut c, &resume);
    assert_eq!(v2(&mut c, "toolu_7", true), "window-changed", "a third process may have written the line resumed from");
    // Once `b` has ended before the confirmation of a newer delivery of
    // `a`'s, a process resuming after it loaded `a`'s line again.
    hook(&mut b, &end);
    hook(&mut c, &end);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    hook(&mut a, &prompt);
    // The newest delivery is `c`'s, made after `a`'s own, which `a` has held
    // since (it has not started or resumed since): `a`'s copy backs its
    // stub. Before (b7a61a1) the newest delivery of the scope decided:
    // `window-changed`.
    assert_eq!(v2(&mut a, "toolu_8", true), "confirmed-delivery", "a's own copy stands");
    // `a` resumes the session itself: it loaded the last written line's
    // chain, which need not hold its own copy. The newest delivery (`c`'s,
    // never confirmed) decides again, and `a` gets a fresh copy.
    hook(&mut a, &resume);
    assert_eq!(v2(&mut a, "toolu_8b", true), "window-changed", "a's fresh copy");
    confirm(&mut a, "toolu_8b");
    std::thread::sleep(std::time::Duration::from_millis(5));
    hook(&mut d, &resume);
    assert_eq!(v2(&mut d, "toolu_9", false), "confirmed-delivery", "every other process ended before the confirmation");
}

/// One Claude Code session in two processes, `b` compacting its context
/// while `a` runs: `b`'s context lost its results, `a`'s kept its own
/// (the `two-process` fixture: `a`'s next model requests still held its
/// reads, docs/DELIVERY.md §8). The compaction hooks name `b`
/// (`CLAUDE_PID`), and the boundary the host writes to the shared
/// transcript is proven `b`'s by its summary line's `promptId`, the prompt
/// id `b`'s own prompt hook named first. `a`'s re-read of its own delivery
/// is a stub; `b`'s of its own is withheld. Every hook and question through
/// the real binary from two real host processes. Returns the two reasons.
/// `lost`: `b`'s prompt and compaction hooks all died (its turn unseen):
/// the boundary then proves no process, and both are withheld. `adopted`:
/// the summary's prompt id was first named by `a`'s hooks (a turn `b`
/// took over): no proof either. `shared`: the hooks name host processes
/// that are not the server's parent (a server several processes share, not
/// their child): whose context a call is in cannot be told, and `a`'s
/// re-read is withheld too.
#[cfg(unix)]
fn one_process_compacts(conv: &str, lost: bool, adopted: bool, shared: bool) -> (String, String) {
    one_process_compacts_then(conv, (lost, adopted, shared), |_| {})
}

/// [`one_process_compacts`], running `between` on the data dir after the
/// compaction, before the two re-reads.
#[cfg(unix)]
fn one_process_compacts_then(
    conv: &str,
    (lost, adopted, shared): (bool, bool, bool),
    between: impl Fn(&Path),
) -> (String, String) {
    use crate::support::FakeHost;
    let sb = Sandbox::new();
    let transcript = sb.tmp.path().join(format!("{conv}.jsonl"));
    std::fs::write(&transcript, "").unwrap();
    let n = std::cell::Cell::new(0);
    let file = |v: &Value| {
        n.set(n.get() + 1);
        let p = sb.tmp.path().join(format!("f{}.json", n.get()));
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let line = |v: Value| {
        let mut t = std::fs::OpenOptions::new().append(true).open(&transcript).unwrap();
        writeln!(t, "{v}").unwrap();
    };
    let text = "fn main() {}\n".repeat(50);
    let result = file(&json!({"content": [{"type": "text", "text": text}]}));
    // A hook of `host` (named by `CLAUDE_PID`), its prompt id if any.
    let hook = |host: &mut FakeHost, event: &str, prompt_id: Option<&str>, extra: Value| {
        let mut v = json!({"session_id": conv, "hook_event_name": event, "transcript_path": transcript});
        if let Some(p) = prompt_id {
            v["prompt_id"] = json!(p);
        }
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        let pid = (host.pid() + if shared { 1_000_000 } else { 0 }).to_string();
        assert_eq!(host.run_env(&[("CLAUDE_PID", &pid)], &["hook", "claude-code"], Some(&file(&v))).0, 0);
    };
    let prompt = |host: &mut FakeHost, id: &str| {
        hook(host, "UserPromptSubmit", Some(id), json!({"prompt": "read it"}));
        line(json!({"parentUuid": null, "promptId": id, "type": "user", "uuid": format!("u-{id}"),
            "message": {"role": "user", "content": "read it"}}));
    };
    // A read as the server asks it: the pre hook, the call's line, `stub`
    // with the result (so a withheld answer records the delivery it sends).
    let read = |host: &mut FakeHost, pid: &str, path: &str, id: &str| -> String {
        hook(
            host,
            "PreToolUse",
            Some(pid),
            json!({"tool_name": "mcp__ctx__ctx_read", "tool_input": {"path": path}, "tool_use_id": id}),
        );
        line(json!({"type": "assistant", "uuid": format!("a-{id}"), "message": {"content": [
            {"type": "tool_use", "id": id, "name": "mcp__ctx__ctx_read", "input": {}}]}}));
        let call = file(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ctx_read", "arguments": {"path": path}, "_meta": {"claudecode/toolUseId": id}}}));
        let args = [
            "stub",
            "--call",
            call.to_str().unwrap(),
            "--key",
            path,
            "--version",
            "v1",
            "--json",
            "--result",
            result.to_str().unwrap(),
        ];
        let (code, out) = host.run(&args, None);
        assert!(code == 0 || code == 1, "{out}");
        let j: Value = serde_json::from_str(&out).unwrap();
        j["decision"]["reason"].as_str().unwrap().to_string()
    };
    let confirm = |host: &mut FakeHost, pid: &str, id: &str| {
        hook(
            host,
            "PostToolBatch",
            Some(pid),
            json!({"tool_calls": [{"tool_name": "mcp__ctx__ctx_read", "tool_use_id": id,
            "tool_input": {}, "tool_response": [{"type": "text", "text": text}]}]}),
        );
    };

    let (mut a, mut b) = (FakeHost::start(&sb), FakeHost::start(&sb));
    hook(&mut a, "SessionStart", None, json!({"source": "startup"}));
    prompt(&mut a, "pa1");
    assert_eq!(read(&mut a, "pa1", "a.rs", "toolu_1"), "not-delivered");
    confirm(&mut a, "pa1", "toolu_1");
    assert_eq!(read(&mut a, "pa1", "a.rs", "toolu_2"), "confirmed-delivery", "a's own delivery");
    hook(&mut b, "SessionStart", None, json!({"source": "resume"}));
    // `b`'s turn: the prompt id its compaction carries.
    let pb = if adopted { "pa1" } else { "pb1" };
    if !lost {
        hook(&mut b, "UserPromptSubmit", Some(pb), json!({"prompt": "read it"}));
    }
    line(
        json!({"parentUuid": null, "promptId": pb, "type": "user", "uuid": "u-b", "message": {"role": "user", "content": "x"}}),
    );
    assert_eq!(read(&mut b, pb, "b.rs", "toolu_3"), "not-delivered");
    confirm(&mut b, pb, "toolu_3");
    // `b` compacts: its three hooks, then (queued, as the host writes them)
    // the boundary and its summary (fixture `two-process`, lines 85-86).
    if !lost {
        hook(&mut b, "PreCompact", Some(pb), json!({"trigger": "auto"}));
        hook(&mut b, "SessionStart", Some(pb), json!({"source": "compact"}));
        hook(&mut b, "PostCompact", Some(pb), json!({"trigger": "auto"}));
    }
    line(json!({"parentUuid": null, "logicalParentUuid": "a-toolu_3", "isSidechain": false, "type": "system",
        "subtype": "compact_boundary", "content": "Conversation compacted", "uuid": "boundary-b"}));
    line(json!({"parentUuid": "boundary-b", "isSidechain": false, "promptId": pb, "type": "user",
        "message": {"role": "user", "content": "This session is being continued"}, "isVisibleInTranscriptOnly": true,
        "isCompactSummary": true, "uuid": "summary-b"}));
    between(&sb.data);
    prompt(&mut a, "pa2");
    let ra = read(&mut a, "pa2", "a.rs", "toolu_4");
    let rb = read(&mut b, pb, "b.rs", "toolu_5");
    (ra, rb)
}

/// [`one_process_compacts`]: proven, `a` keeps its stub and `b` is withheld.
/// Before (7d040d2) `a`'s re-read was withheld too (`compacted`): every
/// compaction of the session ended every process's main thread.
#[cfg(unix)]
#[test]
fn a_compaction_of_one_claude_process_leaves_the_others_deliveries() {
    let (a, b) = one_process_compacts("S", false, false, false);
    assert_eq!(a, "confirmed-delivery", "the other process's context is whole");
    assert_ne!(b, "confirmed-delivery", "the compacting process's context lost it");
}

/// [`one_process_compacts`] with a journal trim after `b`'s compaction:
/// `a`'s delivery, which that compaction left standing, is kept, and so is
/// the compaction that ended `b`'s. Before (b7a61a1) the trim dropped every
/// delivery any compaction of its conversation followed, and `a`'s re-read
/// was `not-delivered`.
#[cfg(unix)]
#[test]
fn a_trim_keeps_what_another_processs_compaction_left() {
    use leanctx::state::journal::{Journal, Record, View};
    let trim = |data: &Path| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
        let j = Journal::new(data);
        j.trim_now(now).unwrap();
        let text = j.read().unwrap();
        let v = View::parse(&text);
        // `a`'s delivery stays; `b`'s, which its own compaction ended, goes.
        let kept: Vec<&str> = v
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Delivery(d) => Some(d.call_ref),
                _ => None,
            })
            .collect();
        assert_eq!(kept, ["id:toolu_1"], "{text}");
        assert!(v.records.iter().any(|r| matches!(r, Record::Compaction { .. })), "{text}");
    };
    let (a, b) = one_process_compacts_then("S", (false, false, false), trim);
    assert_eq!(a, "confirmed-delivery", "the other process's context is whole, trimmed or not");
    assert_ne!(b, "confirmed-delivery", "the compacting process's context lost it, trimmed or not");
}

/// [`one_process_compacts`] with nothing that proves whose the boundary is:
/// every process's main thread ends, as before.
#[cfg(unix)]
#[test]
fn a_compaction_no_hook_proves_ends_every_processs_deliveries() {
    for (lost, adopted, shared) in [(true, false, false), (false, true, false), (false, false, true)] {
        let (a, b) = one_process_compacts("S", lost, adopted, shared);
        let what = format!("lost {lost} adopted {adopted} shared {shared}");
        assert_ne!(a, "confirmed-delivery", "{what}: whose compaction, not proven");
        assert_ne!(b, "confirmed-delivery", "{what}");
    }
}

/// One Claude Code session in two processes, `a` returning after more than
/// the host's idle threshold of its own silence while `b` works on: the
/// host cuts and clears only the requests of the process that returned
/// (its own in-memory context; docs/DELIVERY.md §8, "The idle return of
/// one process"), so `b`'s context keeps its results. `a`'s prompt ends
/// `a`'s earlier deliveries; `b`'s re-read of its own delivery is a stub.
/// Every hook and question through the real binary from two real host
/// processes, on a clock moved by `LEAN_CTX_NOW_MS`. `anonymous`: one of `b`'s turn hooks named no process (an
/// unknown writer cannot be ruled out): every delivery ends, as before.
/// `shared`: the hooks name host processes that are not the server's
/// parent: whose context a call is in cannot be told. `ids`: the prompt
/// hooks name their prompt ids, which the prompt lines carry (as the host
/// writes them): `a`'s return is then provisional for `a`, settled by its
/// own next call's line; else it ends `a`'s deliveries at once. Returns
/// `a`'s re-read of the file its return cut, `a`'s of a file it did not
/// cut, and `b`'s of its own.
#[cfg(unix)]
fn one_process_returns_idle(anonymous: bool, shared: bool, ids: bool) -> (String, String, String) {
    use crate::support::FakeHost;
    let sb = Sandbox::new();
    let conv = "S";
    let transcript = sb.tmp.path().join(format!("{conv}.jsonl"));
    std::fs::write(&transcript, "").unwrap();
    let n = std::cell::Cell::new(0);
    let file = |v: &Value| {
        n.set(n.get() + 1);
        let p = sb.tmp.path().join(format!("f{}.json", n.get()));
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let line = |v: Value| {
        let mut t = std::fs::OpenOptions::new().append(true).open(&transcript).unwrap();
        writeln!(t, "{v}").unwrap();
    };
    let text = "fn main() {}\n".repeat(50);
    let result = file(&json!({"content": [{"type": "text", "text": text}]}));
    let t0 = leanctx::base::clock::now_ms();
    let clock = std::cell::Cell::new(t0);
    // The virtual clock, moved on a little at every command.
    let now = || {
        clock.set(clock.get() + 10);
        clock.get().to_string()
    };
    let hook = |host: &mut FakeHost, event: &str, named: bool, extra: Value| {
        let mut v = json!({"session_id": conv, "hook_event_name": event, "transcript_path": transcript});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        let pid = (host.pid() + if shared { 1_000_000 } else { 0 }).to_string();
        let t = now();
        let env: Vec<(&str, &str)> =
            if named { vec![("CLAUDE_PID", &pid), ("LEAN_CTX_NOW_MS", &t)] } else { vec![("LEAN_CTX_NOW_MS", &t)] };
        assert_eq!(host.run_env(&env, &["hook", "claude-code"], Some(&file(&v))).0, 0);
    };
    let prompt = |host: &mut FakeHost, uuid: &str| {
        let id = format!("pid-{uuid}");
        let extra = if ids { json!({"prompt": "read it", "prompt_id": id}) } else { json!({"prompt": "read it"}) };
        hook(host, "UserPromptSubmit", true, extra);
        line(json!({"parentUuid": null, "type": "user", "uuid": uuid, "promptId": id,
            "message": {"role": "user", "content": "read it"}}));
    };
    let read = |host: &mut FakeHost, path: &str, id: &str| -> String {
        hook(
            host,
            "PreToolUse",
            true,
            json!({"tool_name": "mcp__ctx__ctx_read", "tool_input": {"path": path}, "tool_use_id": id}),
        );
        line(json!({"type": "assistant", "uuid": format!("a-{id}"), "message": {"content": [
            {"type": "tool_use", "id": id, "name": "mcp__ctx__ctx_read", "input": {}}]}}));
        let call = file(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ctx_read", "arguments": {"path": path}, "_meta": {"claudecode/toolUseId": id}}}));
        let args = ["stub", "--call", call.to_str().unwrap(), "--key", path, "--version", "v1", "--json", "--result"];
        let args: Vec<&str> = args.into_iter().chain([result.to_str().unwrap()]).collect();
        let (code, out) = host.run_env(&[("LEAN_CTX_NOW_MS", &now())], &args, None);
        assert!(code == 0 || code == 1, "{out}");
        let j: Value = serde_json::from_str(&out).unwrap();
        j["decision"]["reason"].as_str().unwrap().to_string()
    };
    let confirm = |host: &mut FakeHost, id: &str| {
        hook(
            host,
            "PostToolBatch",
            true,
            json!({"tool_calls": [{"tool_name": "mcp__ctx__ctx_read", "tool_use_id": id,
            "tool_input": {}, "tool_response": [{"type": "text", "text": text}]}]}),
        );
    };
    let (mut a, mut b) = (FakeHost::start(&sb), FakeHost::start(&sb));
    hook(&mut a, "SessionStart", true, json!({"source": "startup"}));
    prompt(&mut a, "ua1");
    assert_eq!(read(&mut a, "a.rs", "toolu_1"), "not-delivered");
    confirm(&mut a, "toolu_1");
    assert_eq!(read(&mut a, "a.rs", "toolu_2"), "confirmed-delivery", "a's own delivery");
    assert_eq!(read(&mut a, "c.rs", "toolu_1c"), "not-delivered");
    confirm(&mut a, "toolu_1c");
    hook(&mut a, "Stop", true, json!({}));
    hook(&mut b, "SessionStart", true, json!({"source": "resume", "seconds_since_last_response": 1}));
    prompt(&mut b, "ub1");
    assert_eq!(read(&mut b, "b.rs", "toolu_3"), "not-delivered");
    confirm(&mut b, "toolu_3");
    hook(&mut b, "Stop", !anonymous, json!({}));
    // `b` works on for an hour; `a` stays silent.
    clock.set(t0 + 3_600_000);
    prompt(&mut b, "ub2");
    assert_eq!(read(&mut b, "b.rs", "toolu_4"), "confirmed-delivery", "b's own delivery, before a's return");
    hook(&mut b, "Stop", true, json!({}));
    // `a` returns past the threshold (3,900 s of its own silence): the host
    // cuts one of `a`'s old results, as its record says, and its first
    // answer counts it (queued after the prompt, in this order).
    clock.set(t0 + 3_910_000);
    prompt(&mut a, "ua2");
    line(json!({"type": "attachment", "attachment": {"type": "tool_results_cut", "callIds": ["toolu_1"]}}));
    line(json!({"type": "assistant", "uuid": "a-first", "message": {"content": [{"type": "text", "text": "ok"}],
        "context_management": {"applied_edits": [], "client_cut_tool_uses": 1}}}));
    let rb = read(&mut b, "b.rs", "toolu_5");
    let cut = read(&mut a, "a.rs", "toolu_6");
    let kept = read(&mut a, "c.rs", "toolu_7");
    (cut, kept, rb)
}

/// [`one_process_returns_idle`]: `b` keeps its stub, `a` is withheld.
/// Before, `a`'s return ended every process's deliveries: `b`'s re-read
/// was withheld (`compacted`).
#[cfg(unix)]
#[test]
fn an_idle_return_of_one_claude_process_leaves_the_others_deliveries() {
    let (cut, kept, b) = one_process_returns_idle(false, false, false);
    assert_eq!(b, "confirmed-delivery", "the other process's context is whole");
    assert_ne!(cut, "confirmed-delivery", "the returning process's context was cut");
    assert_ne!(kept, "confirmed-delivery", "no prompt id ties the answer to the returning process");
}

/// [`one_process_returns_idle`] with the prompt ids the host writes: `a`'s
/// return is settled by its own next call's line, after its prompt line:
/// the cut result is withdrawn, the other one `a` read before the silence
/// is a stub again, and so is `b`'s. Before, the uncut one was withheld
/// (`compacted`): the return ended every delivery of `a`.
#[cfg(unix)]
#[test]
fn an_idle_return_of_one_claude_process_is_settled_by_its_own_next_call() {
    let (cut, kept, b) = one_process_returns_idle(false, false, true);
    assert_eq!(b, "confirmed-delivery", "the other process's context is whole");
    assert_eq!(cut, "withdrawn", "the cut named it");
    assert_eq!(kept, "confirmed-delivery", "the cut left it, and nothing cleared it");
}

/// [`one_process_returns_idle`] where whose context the return touched
/// cannot be told: every process's deliveries end, as before.
#[cfg(unix)]
#[test]
fn an_idle_return_not_attributable_ends_every_processs_deliveries() {
    for (anonymous, shared, ids) in
        [(true, false, false), (false, true, false), (true, false, true), (false, true, true)]
    {
        let (cut, kept, b) = one_process_returns_idle(anonymous, shared, ids);
        let what = format!("anonymous {anonymous} shared {shared} ids {ids}");
        assert_ne!(cut, "confirmed-delivery", "{what}");
        assert_ne!(kept, "confirmed-delivery", "{what}");
        assert_ne!(b, "confirmed-delivery", "{what}: whose return, not proven");
    }
}

/// One Claude Code session (`S`) reading one file, `a.rs` at `v1`, with
/// whole results: every hook and question through the real binary, the
/// transcript a real file. For the rewind tests below.
struct OneFileSession<'a> {
    sb: &'a Sandbox,
    transcript: PathBuf,
    text: String,
    result: PathBuf,
}

impl<'a> OneFileSession<'a> {
    fn new(sb: &'a Sandbox) -> Self {
        let transcript = sb.tmp.path().join("S.jsonl");
        std::fs::write(&transcript, "").unwrap();
        let text = "fn main() {}\n".repeat(50);
        let result = sb.tmp.path().join("r.json");
        std::fs::write(&result, json!({"content": [{"type": "text", "text": text}]}).to_string()).unwrap();
        OneFileSession { sb, transcript, text, result }
    }

    fn line(&self, v: Value) {
        let mut t = std::fs::OpenOptions::new().append(true).open(&self.transcript).unwrap();
        writeln!(t, "{v}").unwrap();
    }

    fn hook(&self, v: Value) {
        let o = self.sb.hook("claude-code", v.to_string()).run();
        assert_eq!(o.code, 0, "{o:?}");
    }

    /// A prompt: its hook, then its line.
    fn prompt(&self, uuid: &str) {
        self.hook(json!({"session_id": "S", "hook_event_name": "UserPromptSubmit", "prompt": "read it",
            "transcript_path": self.transcript}));
        self.line(json!({"type": "user", "uuid": uuid, "message": {"role": "user", "content": "read it"}}));
    }

    /// The call's `PreToolUse`, its tool use on the transcript, then the
    /// server: `stub` (a question: its reason) or `deliver` (sent whole, no
    /// question: recorded or not).
    fn read(&self, id: &str, verb: &str) -> String {
        self.hook(json!({"session_id": "S", "hook_event_name": "PreToolUse", "tool_name": "mcp__ctx__ctx_read",
            "tool_input": {"path": "a.rs"}, "tool_use_id": id, "transcript_path": self.transcript}));
        self.line(json!({"type": "assistant", "uuid": format!("a-{id}"), "message": {"content": [
            {"type": "tool_use", "id": id, "name": "mcp__ctx__ctx_read", "input": {}}]}}));
        let call = self.sb.tmp.path().join(format!("call-{id}.json"));
        let req = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ctx_read", "arguments": {"path": "a.rs"}, "_meta": {"claudecode/toolUseId": id}}});
        std::fs::write(&call, req.to_string()).unwrap();
        let o = self
            .sb
            .cmd([verb, "--call", call.to_str().unwrap(), "--key", "a.rs", "--version", "v1", "--json", "--result"])
            .arg(&self.result)
            .run();
        assert!(o.code == 0 || o.code == 1, "{o:?}");
        let j = o.json();
        j["decision"]["reason"]
            .as_str()
            .or(j["recorded"].as_bool().map(|r| if r { "recorded" } else { "not recorded" }))
            .unwrap()
            .to_string()
    }

    /// The call's `PostToolBatch`: the model got the text whole.
    fn batch(&self, id: &str) {
        self.hook(json!({"session_id": "S", "hook_event_name": "PostToolBatch", "tool_calls": [
            {"tool_name": "mcp__ctx__ctx_read", "tool_use_id": id, "tool_input": {"path": "a.rs"},
             "tool_response": [{"type": "text", "text": self.text}]}]}));
    }

    /// A rewind to the prompt `uuid`, as the host records it (no hook).
    fn rewind_to(&self, uuid: &str) {
        self.line(json!({"type": "last-prompt", "leafUuid": null, "rewound": true, "cutUuid": uuid}));
    }
}

/// A rewind withdraws the results after its cut prompt, not the copies the
/// context held before it (docs/DELIVERY.md §8, "A rewind that leaves an
/// earlier copy"). A file delivered whole twice, the second time sent again
/// without a question (`leanctx deliver`), then rewound past the second
/// delivery only: the model still holds the first, and the re-read is a
/// stub on it. Rewound past both: withheld (`withdrawn`). Before, the
/// ledger looked at the newest delivery only: the first re-read was
/// withheld (`withdrawn`).
#[test]
fn a_rewind_past_the_second_delivery_of_a_file_leaves_the_first_copy() {
    let sb = Sandbox::new();
    let s = OneFileSession::new(&sb);
    s.prompt("u1");
    assert_eq!(s.read("toolu_1", "stub"), "not-delivered");
    s.batch("toolu_1");
    s.prompt("u2");
    assert_eq!(s.read("toolu_2", "deliver"), "recorded");
    s.batch("toolu_2");
    s.prompt("u3");
    assert_eq!(s.read("toolu_3", "stub"), "confirmed-delivery", "the control: no rewind yet");
    // Back to u2: its turn's reads are gone, the first copy stays.
    s.rewind_to("u2");
    s.prompt("u4");
    assert_eq!(s.read("toolu_4", "stub"), "confirmed-delivery", "the first copy is still held");
    // Back to u1: both copies are gone.
    s.rewind_to("u1");
    s.prompt("u5");
    assert_eq!(s.read("toolu_5", "stub"), "withdrawn", "no copy is held");
}

/// The step back over withdrawn deliveries is bounded
/// (`state::ledger::MAX_STEP_BACK`, 4): a copy four deliveries back backs
/// the stub, one five back does not (withheld `withdrawn`, as if none were
/// held: the safe side).
#[test]
fn a_rewind_steps_back_over_at_most_four_withdrawn_deliveries() {
    let sb = Sandbox::new();
    let s = OneFileSession::new(&sb);
    s.prompt("u1");
    assert_eq!(s.read("toolu_1", "stub"), "not-delivered");
    s.batch("toolu_1");
    for n in 2..=6 {
        s.prompt(&format!("u{n}"));
        assert_eq!(s.read(&format!("toolu_{n}"), "deliver"), "recorded");
        s.batch(&format!("toolu_{n}"));
    }
    // Back to u3: toolu_3..6 are gone; toolu_2, four back, is held.
    s.rewind_to("u3");
    s.prompt("u7");
    assert_eq!(s.read("toolu_7", "stub"), "confirmed-delivery", "four back: within the bound");
    // Back to u2: toolu_2 is gone too; toolu_1, five back, is past the bound.
    s.rewind_to("u2");
    s.prompt("u8");
    assert_eq!(s.read("toolu_8", "stub"), "withdrawn", "five back: past the bound");
}
