//! Adversarial correctness: a randomized simulation of several chats of all
//! four hosts, with subagents, compactions, session ends, resumes and
//! `/clear`, whose hook events run through the real `leanctx hook` binary
//! (several at once), and whose MCP calls reach one shared MCP server that
//! asks the read path before serving an `[unchanged]` stub. An oracle knows
//! the true caller of every call and the true content of every context
//! window: a stub allowed for a file that is not in the caller's window is a
//! wrong stub, and there must be none. The share of safe stubs still
//! allowed is the savings.
//!
//! Time is virtual (`LEAN_CTX_NOW_MS` for hooks, `ReadPath::at` for the
//! server), so windows, claim windows and TTLs are exercised without sleeps.
//!
//! Seeds 1–6 every run, plus `LEANCTX_SIM_SEEDS=N` fresh ones (default 2,
//! 200 with `LEANCTX_STRESS=1`) from a printed base,
//! `LEANCTX_SIM_TICKS=N` (default 80), `LEANCTX_SEED=S` replays from seed S.

use crate::rng::{self, Rng};
use crate::support::Sandbox;
use leanctx::identity::caller::ScopeEnv;
use leanctx::identity::mcp_call::McpCall;
use leanctx::identity::readpath::{ReadPath, StubQuery};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const FILES: [&str; 6] = ["a.rs", "b.rs", "c.rs", "d.rs", "README.md", "Cargo.toml"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum H {
    Cursor,
    Claude,
    Codex,
    CodeBuddy,
}

impl H {
    fn cli(self) -> &'static str {
        match self {
            H::Cursor => "cursor",
            H::Claude => "claude",
            H::Codex => "codex",
            H::CodeBuddy => "codebuddy",
        }
    }
}

#[derive(Debug)]
struct Sub {
    raw: String,
    /// The scope stubs are keyed by: `agent:<id>`, `task:<id>`, or for a
    /// Cursor subagent as Cursor 3.x really runs it, its own conversation.
    scope: String,
    /// Cursor 3.x: the fresh `conversation_id` the subagent's own hooks
    /// carry (no parent field, no `CURSOR_TASK_ID`); `None` for a subagent
    /// modelled on `CURSOR_TASK_ID` (what lean-ctx reads).
    conv: Option<String>,
    window: HashSet<&'static str>,
}

#[derive(Debug)]
struct Chat {
    host: H,
    id: String,
    ended: bool,
    window: HashSet<&'static str>,
    subs: Vec<Sub>,
}

#[derive(Default, Debug, Clone)]
struct Stats {
    hooks: u64,
    calls: u64,
    stub_questions: u64,
    wrong: u64,
    safe_allowed: u64,
    safe_withheld: u64,
    unsafe_withheld: u64,
    exact: u64,
    compactions: u64,
    subagents: u64,
    ends: u64,
    wrong_detail: Vec<String>,
    misresolved: Vec<String>,
    reasons: HashMap<String, u64>,
    /// Why safe stubs were withheld (what the savings lose to).
    lost: HashMap<String, u64>,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.hooks += o.hooks;
        self.calls += o.calls;
        self.stub_questions += o.stub_questions;
        self.wrong += o.wrong;
        self.safe_allowed += o.safe_allowed;
        self.safe_withheld += o.safe_withheld;
        self.unsafe_withheld += o.unsafe_withheld;
        self.exact += o.exact;
        self.compactions += o.compactions;
        self.subagents += o.subagents;
        self.ends += o.ends;
        self.wrong_detail.extend(o.wrong_detail.iter().cloned());
        self.misresolved.extend(o.misresolved.iter().cloned());
        for (k, v) in &o.reasons {
            *self.reasons.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &o.lost {
            *self.lost.entry(k.clone()).or_default() += v;
        }
    }
}

/// The one MCP server all chats share (the hardest case: no process env
/// tells the chats apart). Its cache remembers, per file, whom the content
/// was last delivered to (as the read path resolved it) and when.
#[derive(Default)]
struct Server {
    cache: HashMap<&'static str, (Option<String>, u64)>,
}

struct Ctx<'a> {
    sb: &'a Sandbox,
    server: &'a Mutex<Server>,
    ids: &'a AtomicU64,
    seed: u64,
    /// Adversarial knobs.
    knobs: Knobs,
}

#[derive(Clone, Copy)]
struct Knobs {
    /// A Claude MCP call without `_meta["claudecode/toolUseId"]` (older host).
    claude_no_meta: f64,
    /// A Cursor subagent hook without `CURSOR_TASK_ID` (unreliable: docs/HOSTS.md §3).
    cursor_no_task_env: f64,
    /// Stub questions asked as cold (entry from a persisted index).
    cold: f64,
}

fn uid(ctx: &Ctx, prefix: &str) -> String {
    format!("{prefix}{:x}{}", ctx.seed & 0xffff, ctx.ids.fetch_add(1, Relaxed))
}

/// Run one hook of `chat` at virtual time `t`; `agent` is the acting
/// subagent, if any.
fn hook(ctx: &Ctx, st: &mut Stats, chat: &Chat, event: &str, t: u64, extra: Value, task_env: Option<&str>) {
    if std::env::var_os("LEANCTX_SIM_TRACE").is_some() {
        eprintln!("t={t} {:?} {} hook {event} {extra}", chat.host, chat.id);
    }
    let mut p = json!({"hook_event_name": event, "cwd": "/sim/project",
        "transcript_path": format!("/sim/{}.jsonl", chat.id)});
    if chat.host == H::Cursor {
        p["conversation_id"] = json!(chat.id);
        p["workspace_roots"] = json!(["/sim/project"]);
    } else {
        p["session_id"] = json!(chat.id);
    }
    if let Value::Object(m) = extra {
        for (k, v) in m {
            p[k] = v;
        }
    }
    let mut run = ctx.sb.hook(chat.host.cli(), p.to_string()).env("LEAN_CTX_NOW_MS", t.to_string());
    if let Some(task) = task_env {
        run = run.env("CURSOR_TASK_ID", task);
    }
    let o = run.run();
    assert_eq!(o.code, 0, "seed {}: hook {event} exit {}: {}", ctx.seed, o.code, o.stderr);
    assert!(o.stderr.is_empty(), "seed {}: hook {event}: {}", ctx.seed, o.stderr);
    st.hooks += 1;
}

/// One MCP read of `file` by `actor` (None = the chat's main agent).
fn read(ctx: &Ctx, st: &mut Stats, rng: &mut Rng, chat: &mut Chat, actor: Option<usize>, t: u64) {
    let file = *rng.pick(&FILES);
    let call_id = uid(ctx, "call_");
    let host = chat.host;
    let (agent_raw, task) = match actor {
        Some(i) => {
            let s = &chat.subs[i];
            (Some(s.raw.clone()), (host == H::Cursor && s.conv.is_none()).then(|| s.raw.clone()))
        }
        None => (None, None),
    };
    let sub_conv = actor.and_then(|i| chat.subs[i].conv.clone());
    // PreToolUse (beforeMCPExecution): recorded before the call runs.
    let mut extra = if host == H::Cursor {
        json!({"tool_name": "ctx_read", "tool_input": json!({"path": file}).to_string(), "command": "lean-ctx",
            "tool_use_id": call_id})
    } else {
        json!({"tool_name": "mcp__ctx__ctx_read", "tool_input": {"path": file}, "tool_use_id": call_id})
    };
    if let (Some(a), false) = (&agent_raw, host == H::Cursor) {
        extra["agent_id"] = json!(a);
    }
    if let Some(c) = &sub_conv {
        // A Cursor 3.x subagent's own hook: its fresh conversation, no
        // transcript, nothing naming the parent.
        extra["conversation_id"] = json!(c);
        extra["session_id"] = json!(c);
        extra["transcript_path"] = Value::Null;
    }
    let task_env = task.as_deref().filter(|_| !rng.chance(ctx.knobs.cursor_no_task_env));
    let pre = if host == H::Cursor { "beforeMCPExecution" } else { "PreToolUse" };
    hook(ctx, st, chat, pre, t, extra.clone(), task_env);

    // The MCP call as the server receives it.
    let meta = match host {
        H::Claude if !rng.chance(ctx.knobs.claude_no_meta) => json!({"claudecode/toolUseId": call_id}),
        H::Codex => {
            let thread = agent_raw.clone().unwrap_or_else(|| chat.id.clone());
            json!({"sessionId": chat.id, "threadId": thread, "callId": call_id})
        }
        _ => json!({}),
    };
    let request = json!({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
        "params": {"name": "ctx_read", "arguments": {"path": file}, "_meta": meta}});
    let call = McpCall::from_json(&request).unwrap();
    let now = t + 1;
    let rp = ReadPath::new(&ctx.sb.data, ScopeEnv::default()).at(now);
    let truth_scope = match actor {
        Some(i) => chat.subs[i].scope.clone(),
        None => chat.id.clone(),
    };
    let window = match actor {
        Some(i) => &mut chat.subs[i].window,
        None => &mut chat.window,
    };
    st.calls += 1;
    {
        let mut server = ctx.server.lock().unwrap();
        let entry = server.cache.get(file).cloned();
        let (allowed, resolved, label) = match &entry {
            Some((delivered, at)) => {
                let cold = rng.chance(ctx.knobs.cold);
                let ans = rp.decide(&StubQuery {
                    delivered: delivered.as_deref(),
                    delivered_at_ms: Some(*at),
                    cold,
                    call: Some(&call),
                });
                st.stub_questions += 1;
                *st.reasons.entry(ans.decision.reason.as_str().to_string()).or_default() += 1;
                let safe = window.contains(file);
                match (ans.decision.allow, safe) {
                    (true, true) => st.safe_allowed += 1,
                    (true, false) => {
                        st.wrong += 1;
                        st.wrong_detail.push(format!(
                            "seed {}: t={now} {host:?} caller {truth_scope} got a stub of {file} delivered to \
                             {delivered:?} at {at} (cold {cold}): {:?}",
                            ctx.seed, ans
                        ));
                    }
                    (false, true) => {
                        st.safe_withheld += 1;
                        *st.lost.entry(ans.decision.reason.as_str().to_string()).or_default() += 1;
                    }
                    (false, false) => st.unsafe_withheld += 1,
                }
                (ans.decision.allow, ans.caller, ans.delivery_scope)
            }
            None => {
                let res = rp.resolve(Some(&call), now);
                let label = rp.delivery_scope(&res);
                (false, res.caller, label)
            }
        };
        if resolved.exact {
            st.exact += 1;
            // An exact resolution must name the true caller, except a Cursor
            // subagent whose hook lacked CURSOR_TASK_ID (its record names
            // the parent: the decision must then withhold for another reason).
            let excused = actor.is_some() && host == H::Cursor && task_env.is_none() && sub_conv.is_none();
            if !excused && resolved.scope.as_deref() != Some(truth_scope.as_str()) {
                st.misresolved.push(format!(
                    "seed {}: t={now} {host:?} {truth_scope} resolved exactly as {:?} via {:?} ({file}, call {call_id})",
                    ctx.seed, resolved.scope, resolved.source
                ));
            }
        }
        if std::env::var_os("LEANCTX_SIM_TRACE").is_some() {
            eprintln!(
                "t={now} {host:?} {truth_scope} reads {file}: entry {entry:?} allowed {allowed} resolved {:?} via {:?} label {label:?}",
                resolved.scope, resolved.source
            );
        }
        if !allowed {
            // Full content delivered: it is in the caller's window now.
            window.insert(file);
            server.cache.insert(file, (label, now));
        }
    }
    if rng.chance(0.7) {
        let post = if host == H::Cursor { "afterMCPExecution" } else { "PostToolUse" };
        hook(ctx, st, chat, post, t + 2, extra, task_env);
    }
}

/// A Cursor `subagentStop`: 3.x names the subagent and its parent.
fn cursor_stop(chat: &Chat, s: &Sub) -> Value {
    match s.conv {
        Some(_) => json!({"status": "completed", "subagent_id": s.raw, "parent_conversation_id": chat.id}),
        None => json!({"status": "completed"}),
    }
}

/// One step of a chat at virtual time `t`.
fn step(ctx: &Ctx, rng: &mut Rng, chat: &mut Chat, t: u64) -> Stats {
    let mut st = Stats::default();
    let host = chat.host;
    let cursor = host == H::Cursor;
    if chat.ended {
        // Claude Code and Codex resume with the same id; the transcript (and
        // so the window) comes back. The others start a new chat.
        match host {
            H::Claude | H::Codex if rng.chance(0.6) => {
                chat.ended = false;
                hook(ctx, &mut st, chat, "SessionStart", t, json!({"source": "resume"}), None);
            }
            _ => {
                chat.id = uid(ctx, "chat-");
                chat.window.clear();
                chat.subs.clear();
                chat.ended = false;
                let ev = if cursor { "sessionStart" } else { "SessionStart" };
                hook(ctx, &mut st, chat, ev, t, json!({"source": "startup"}), None);
            }
        }
        return st;
    }
    let roll = rng.below(100);
    match roll {
        0..=54 => {
            // A read, by the main agent or a running subagent.
            let actor = (!chat.subs.is_empty() && rng.chance(0.5)).then(|| rng.below(chat.subs.len() as u64) as usize);
            read(ctx, &mut st, rng, chat, actor, t);
        }
        55..=64 => {
            let ev = if cursor { "beforeSubmitPrompt" } else { "UserPromptSubmit" };
            hook(ctx, &mut st, chat, ev, t, json!({"prompt": "SECRET-PROMPT"}), None);
        }
        65..=71 => {
            // Compaction: the main window is replaced by a summary.
            st.compactions += 1;
            chat.window.clear();
            match host {
                H::Cursor => hook(ctx, &mut st, chat, "preCompact", t, json!({}), None),
                H::Claude => {
                    hook(ctx, &mut st, chat, "PreCompact", t, json!({"trigger": "auto"}), None);
                    hook(ctx, &mut st, chat, "SessionStart", t + 1, json!({"source": "compact"}), None);
                    hook(ctx, &mut st, chat, "PostCompact", t + 2, json!({}), None);
                }
                H::Codex => {
                    hook(ctx, &mut st, chat, "PreCompact", t, json!({}), None);
                    hook(ctx, &mut st, chat, "PostCompact", t + 1, json!({}), None);
                }
                H::CodeBuddy => hook(ctx, &mut st, chat, "PreCompact", t, json!({}), None),
            }
        }
        72..=79 if chat.subs.len() < 3 => {
            st.subagents += 1;
            // Half the Cursor subagents as Cursor 3.x runs them: the id is
            // the parent's Task call id (with a newline), the subagent's
            // hooks carry a conversation of their own.
            let real = cursor && rng.chance(0.5);
            let raw = if real { format!("call-{}-40\nfc_{}_0", uid(ctx, "c"), uid(ctx, "f")) } else { uid(ctx, "sub") };
            let conv = real.then(|| uid(ctx, "chat-sub-"));
            let scope = match &conv {
                Some(c) => c.clone(),
                None if cursor => format!("task:{raw}"),
                None => format!("agent:{raw}"),
            };
            if cursor {
                let extra = json!({"subagent_id": raw, "tool_call_id": raw, "parent_conversation_id": chat.id,
                    "subagent_type": "explore"});
                hook(ctx, &mut st, chat, "subagentStart", t, extra, None);
            } else {
                hook(ctx, &mut st, chat, "SubagentStart", t, json!({"agent_id": raw, "agent_type": "general"}), None);
            }
            chat.subs.push(Sub { raw, scope, conv, window: HashSet::new() });
        }
        80..=86 if !chat.subs.is_empty() => {
            // A Cursor 3.x stop names its subagent (any may stop); an older
            // one names none, and the journal closes the oldest.
            let real: Vec<usize> = (0..chat.subs.len()).filter(|&i| chat.subs[i].conv.is_some()).collect();
            let i = match cursor {
                true if !real.is_empty() && rng.chance(0.5) => *rng.pick(&real),
                true => 0,
                false => rng.below(chat.subs.len() as u64) as usize,
            };
            let s = chat.subs.remove(i);
            if cursor {
                hook(ctx, &mut st, chat, "subagentStop", t, cursor_stop(chat, &s), None);
            } else {
                hook(ctx, &mut st, chat, "SubagentStop", t, json!({"agent_id": s.raw}), None);
            }
        }
        87..=90 => {
            // Ending a chat ends its subagents first.
            for s in std::mem::take(&mut chat.subs) {
                if cursor {
                    hook(ctx, &mut st, chat, "subagentStop", t, cursor_stop(chat, &s), None);
                } else {
                    hook(ctx, &mut st, chat, "SubagentStop", t, json!({"agent_id": s.raw}), None);
                }
            }
            st.ends += 1;
            chat.ended = true;
            let ev = if cursor { "sessionEnd" } else { "SessionEnd" };
            hook(ctx, &mut st, chat, ev, t + 1, json!({"reason": "other"}), None);
        }
        91..=93 if host == H::Claude && chat.subs.is_empty() => {
            // /clear: a new session id, an empty context.
            hook(ctx, &mut st, chat, "SessionEnd", t, json!({"reason": "clear"}), None);
            chat.id = uid(ctx, "chat-");
            chat.window.clear();
            hook(ctx, &mut st, chat, "SessionStart", t + 1, json!({"source": "clear"}), None);
        }
        _ => {
            let ev = if cursor { "stop" } else { "Stop" };
            hook(ctx, &mut st, chat, ev, t, json!({}), None);
        }
    }
    st
}

fn run_seed(seed: u64, ticks: u64, knobs: Knobs) -> Stats {
    let mut rng = Rng::new(seed);
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.data).unwrap();
    crate::support::make_private(&sb.data);
    let server = Mutex::new(Server::default());
    let ids = AtomicU64::new(0);
    let ctx = Ctx { sb: &sb, server: &server, ids: &ids, seed, knobs };
    let hosts = [H::Cursor, H::Claude, H::Codex, H::CodeBuddy];
    let n = rng.range(2, 5) as usize;
    let mut chats: Vec<Chat> = (0..n)
        .map(|i| Chat {
            host: if i < 2 { hosts[rng.below(4) as usize] } else { *rng.pick(&hosts) },
            id: uid(&ctx, "chat-"),
            ended: false,
            window: HashSet::new(),
            subs: Vec::new(),
        })
        .collect();
    let mut total = Stats::default();
    let mut t: u64 = 1_800_000_000_000 + rng.below(1_000_000);
    for _ in 0..ticks {
        // Time between ticks: mostly busy, sometimes past the concurrency
        // or claim window, rarely past the slot TTL.
        t += match rng.below(100) {
            // (At least 60 ms: the per-chat offsets inside a tick stay under
            // that, so each chat's own time never runs backwards.)
            0..=69 => rng.range(60, 3_000),
            70..=94 => rng.range(3_000, 45_000),
            95..=98 => rng.range(45_000, 600_000),
            // Past the 2 h state TTL, subagents running or not: a subagent
            // runs until its stop however long (issue 17: a long subagent
            // once passed for stopped, and its parent got its stubs).
            _ => rng.range(2 * 3_600_000, 3 * 3_600_000),
        };
        // Some chats act at once: their hooks run concurrently.
        let k = rng.range(1, chats.len().min(3) as u64) as usize;
        let mut idx: Vec<usize> = (0..chats.len()).collect();
        for i in 0..idx.len() {
            let j = i + rng.below((idx.len() - i) as u64) as usize;
            idx.swap(i, j);
        }
        idx.truncate(k);
        let seeds: Vec<(usize, u64, u64)> = idx.iter().map(|&i| (i, rng.next_u64(), rng.below(20))).collect();
        let ctx = &ctx;
        let results: Vec<Stats> = std::thread::scope(|s| {
            let handles: Vec<_> = chats
                .iter_mut()
                .enumerate()
                .filter_map(|(i, c)| seeds.iter().find(|x| x.0 == i).map(|&(_, sd, off)| (c, sd, off)))
                .map(|(c, sd, off)| s.spawn(move || step(ctx, &mut Rng::new(sd), c, t + off * 3)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in &results {
            total.add(r);
        }
    }
    total
}

fn report(name: &str, seeds: u64, s: &Stats) -> String {
    let safe = s.safe_allowed + s.safe_withheld;
    let share = if safe == 0 { 0.0 } else { 100.0 * s.safe_allowed as f64 / safe as f64 };
    let mut reasons: Vec<_> = s.reasons.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1));
    let mut lost: Vec<_> = s.lost.iter().collect();
    lost.sort_by(|a, b| b.1.cmp(a.1));
    format!(
        "sim[{name}]: {seeds} seeds, {} hook processes, {} MCP calls ({} resolved exactly), {} stub questions, \
         {} compactions, {} subagents, {} ends: wrong stubs {}; safe stubs allowed {}/{} = {share:.1}% \
         (unsafe withheld {}); safe stubs withheld for {lost:?}; all reasons {reasons:?}",
        s.hooks,
        s.calls,
        s.exact,
        s.stub_questions,
        s.compactions,
        s.subagents,
        s.ends,
        s.wrong,
        s.safe_allowed,
        safe,
        s.unsafe_withheld
    )
}

/// Fixed seeds every run (CI's figures are reproducible), then
/// `LEANCTX_SIM_SEEDS` fresh ones from the printed base (`LEANCTX_SEED`
/// replays them; with `LEANCTX_SEED` set the fixed ones are skipped).
const FIXED_SEEDS: [u64; 6] = [1, 2, 3, 4, 5, 6];

fn run_many(name: &str, knobs: Knobs) -> Stats {
    let fresh = rng::count("LEANCTX_SIM_SEEDS", 2, 200);
    let ticks = rng::count("LEANCTX_SIM_TICKS", 80, 120);
    let base = rng::base_seed(&format!("sim[{name}]"));
    let replaying = std::env::var_os("LEANCTX_SEED").is_some();
    let fixed: &[u64] = if replaying { &[] } else { &FIXED_SEEDS };
    let all: Vec<u64> = fixed.iter().copied().chain((0..fresh).map(|i| base.wrapping_add(i))).collect();
    let seeds = all.len() as u64;
    let mut total = Stats::default();
    for seed in all {
        let s = run_seed(seed, ticks, knobs);
        assert!(
            s.misresolved.is_empty(),
            "sim[{name}]: exact resolutions that named the wrong caller, seed {seed}:\n{}",
            s.misresolved.join("\n")
        );
        assert!(
            s.wrong == 0,
            "sim[{name}]: {} wrong stubs with seed {seed} (replay: LEANCTX_SEED={seed} LEANCTX_SIM_SEEDS=1):\n{}",
            s.wrong,
            s.wrong_detail.join("\n")
        );
        total.add(&s);
    }
    println!("{}", report(name, seeds, &total));
    total
}

/// Per-call identity as the hosts give it (with an older Claude that sends
/// no tool-use id now and then, and Cursor subagent hooks that sometimes
/// lack `CURSOR_TASK_ID`): zero wrong stubs, and stubs still flow.
#[test]
fn simulation_zero_wrong_stubs() {
    let s = run_many("per-call", Knobs { claude_no_meta: 0.15, cursor_no_task_env: 0.1, cold: 0.2 });
    assert_eq!(s.wrong, 0);
    assert!(s.stub_questions > 100);
    // A savings floor (a product that always withholds passes `wrong == 0`):
    // measured 44 % on the fixed seeds; half of it, for the fresh seeds' spread.
    let share = s.safe_allowed as f64 / (s.safe_allowed + s.safe_withheld).max(1) as f64;
    assert!(share >= 0.22, "scope check: safe stubs allowed {:.1} %", share * 100.0);
    // The reason codes this setting must reach (the others need a server
    // environment, disabled scoping or bad state: the fault, clock and
    // read-path suites reach those).
    for r in ["same-conversation", "other-conversation", "unknown-delivery", "unknown-caller", "compacted"] {
        assert!(s.reasons.get(r).copied().unwrap_or(0) > 0, "reason {r} never reached: {:?}", s.reasons);
    }
}

/// No per-call identity at all from Claude (every call without its
/// tool-use id): the slot and the concurrency signal alone must still
/// never let a wrong stub through.
#[test]
fn simulation_zero_wrong_stubs_without_claude_meta() {
    let s = run_many("no-claude-meta", Knobs { claude_no_meta: 1.0, cursor_no_task_env: 0.3, cold: 0.5 });
    assert_eq!(s.wrong, 0);
    // Not a product that always withholds: measured 24 % on the fixed seeds.
    let share = s.safe_allowed as f64 / (s.safe_allowed + s.safe_withheld).max(1) as f64;
    assert!(share >= 0.10, "scope check without Claude ids: safe stubs allowed {:.1} %", share * 100.0);
}

// Deterministic regressions for what the simulation found.

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.data).unwrap();
    crate::support::make_private(&sb.data);
    sb
}

fn at(sb: &Sandbox, host: &str, t: u64, p: Value) {
    sb.hook(host, p.to_string()).env("LEAN_CTX_NOW_MS", t.to_string()).ok();
}

/// A call without per-call id (an older Claude Code) must not claim a
/// Cursor call record with the same arguments: the Claude hook's own record
/// makes the match ambiguous. Alone, a Claude record is not claimable either:
/// Claude Code names its calls to the server, so a call without an id may be
/// another host's whose own hook died (tests/it/sim_ledger.rs found a Cursor
/// call taking a Claude session's stubs that way).
#[test]
fn a_call_without_id_cannot_claim_another_hosts_record() {
    let sb = sandbox();
    let t = 1_800_000_000_000u64;
    at(
        &sb,
        "cursor",
        t,
        json!({"hook_event_name":"beforeMCPExecution","conversation_id":"cur",
        "tool_name":"ctx_read","tool_input":"{\"path\":\"a.rs\"}"}),
    );
    at(
        &sb,
        "claude",
        t + 5,
        json!({"hook_event_name":"PreToolUse","session_id":"cla",
        "tool_name":"mcp__ctx__ctx_read","tool_input":{"path":"a.rs"},"tool_use_id":"toolu_1"}),
    );
    let call = McpCall::from_json(&json!({"name":"ctx_read","arguments":{"path":"a.rs"}})).unwrap();
    let rp = ReadPath::new(&sb.data, ScopeEnv::default()).at(t + 10);
    let res = rp.resolve(Some(&call), t + 10);
    assert!(!res.caller.exact, "ambiguous, not the Cursor chat: {res:?}");
    // Alone, a Claude record is not claimed by a call without an id.
    let sb = sandbox();
    at(
        &sb,
        "claude",
        t,
        json!({"hook_event_name":"PreToolUse","session_id":"cla","agent_id":"x",
        "tool_name":"mcp__ctx__ctx_read","tool_input":{"path":"a.rs"},"tool_use_id":"toolu_1"}),
    );
    let rp = ReadPath::new(&sb.data, ScopeEnv::default()).at(t + 10);
    let res = rp.resolve(Some(&call), t + 10);
    assert_eq!(res.per_call, leanctx::identity::mcp_call::PerCall::Ambiguous, "{res:?}");
    assert!(!res.caller.exact, "{res:?}");
}

/// A Cursor task's hook makes its conversation live: another chat that
/// talked a moment ago is not "alone", so the slot (which names it) cannot
/// hand its stub to the task, nor label the task's delivery with it.
#[test]
fn a_running_cursor_task_counts_its_conversation_live() {
    let sb = sandbox();
    let t = 1_800_000_000_000u64;
    at(
        &sb,
        "cursor",
        t,
        json!({"hook_event_name":"subagentStart","conversation_id":"cur",
        "subagent_id":"T","parent_conversation_id":"cur"}),
    );
    at(
        &sb,
        "codex",
        t + 40_000,
        json!({"hook_event_name":"PreToolUse","session_id":"cdx",
        "tool_name":"mcp__ctx__ctx_read","tool_input":{"path":"a.rs"}}),
    );
    let p = json!({"hook_event_name":"beforeMCPExecution","conversation_id":"cur",
        "tool_name":"ctx_read","tool_input":"{\"path\":\"b.rs\"}"});
    sb.hook("cursor", p.to_string()).env("LEAN_CTX_NOW_MS", (t + 41_000).to_string()).env("CURSOR_TASK_ID", "T").ok();
    let rp = ReadPath::new(&sb.data, ScopeEnv::default()).at(t + 41_001);
    // No call context: the slot names the Codex chat (tasks do not write it).
    let ans =
        rp.decide(&StubQuery { delivered: Some("cdx"), delivered_at_ms: Some(t + 40_001), cold: false, call: None });
    assert!(ans.concurrent, "{ans:?}");
    assert!(!ans.decision.allow, "{ans:?}");
    assert_eq!(ans.delivery_scope, None);
}

/// A temp file another writer is about to rename is never cleaned, however
/// far ahead the cleaner's (injected or jumped) clock is.
#[test]
fn an_in_flight_temp_survives_a_cleaner_with_a_clock_far_ahead() {
    let d = tempfile::tempdir().unwrap();
    let tmp = d.path().join(".tmp-inflight");
    std::fs::write(&tmp, "x").unwrap();
    leanctx::state::journal::clean_stray_temps(d.path(), 4_000_000_000_000);
    assert!(tmp.exists());
    let f = std::fs::OpenOptions::new().write(true).open(&tmp).unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(120)).unwrap();
    leanctx::state::journal::clean_stray_temps(d.path(), 4_000_000_000_000);
    assert!(!tmp.exists(), "a temp two minutes old is a leftover");
}
