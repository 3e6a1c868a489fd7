//! Adversarial correctness: a randomized simulation of several chats of all
//! four hosts, with subagents, compactions, session ends, resumes and
//! `/clear`, whose hook events run through the real `leanctx hook` binary,
//! and whose MCP calls reach MCP servers that ask the read path before
//! serving an `[unchanged]` stub. An oracle knows the true caller of every
//! call and the true content of every context window: a stub allowed for a
//! file that is not in the caller's window is a wrong stub, and there must
//! be none. The share of safe stubs still allowed is the savings.
//!
//! The servers: one shared by all chats (the hardest case: nothing in its
//! environment tells the chats apart; in half the runs it carries a stale
//! `CLAUDE_CODE_SESSION_ID`, as a daemon started from a Claude Code shell
//! does), and per-chat servers with an environment of their own, as hosts
//! start stdio servers: a Claude Code child with `CLAUDE_CODE_SESSION_ID`,
//! proven by its host's hooks (`CLAUDE_PID`) or not, a `LEAN_CTX_SCOPE`
//! server, and a `LEAN_CTX_CONVERSATION_SCOPE=0` server (scoping disabled:
//! every stub allowed by the user's choice; counted apart, see
//! [`Stats::disabled_unsafe`]). Servers sometimes ask without the call
//! (`call: None`, a server that cannot pass it) or without the delivery
//! time, and now and then meet state that cannot be read at the moment
//! they ask ([`Fault`]: the data dir opened to everyone, the journal a
//! directory, the slot a FIFO or garbage, the slot deleted, the whole state
//! deleted). Claude Code and Codex pre hooks sometimes die before they
//! record. Now and then one chat works alone for a while (half the time
//! after the user closed the others): the stretches where the legacy
//! `single-conversation` answer may apply. The tests assert that every
//! reason code is reached (`SCOPE_REASONS`), a savings floor, and the
//! fixed seeds' figures that RELIABILITY.md cites.
//!
//! Time is virtual (`LEAN_CTX_NOW_MS` for hooks, `ReadPath::at` for the
//! server), so windows, claim windows and TTLs are exercised without sleeps.
//!
//! Replays: the figure runs are serial (the chats acting in one tick take
//! turns in the order of their virtual times), so `LEANCTX_SEED=S` replays a
//! seed bit for bit (`simulation_replays_bit_for_bit`). Hooks really running
//! at once are kept in their own variant
//! (`simulation_zero_wrong_stubs_with_concurrent_hooks`), whose counts are
//! not reproducible and are not cited: the slot is last-writer-wins, and
//! which chat's hook lands last changes what a later question is told.
//!
//! Seeds 1–6 every run, plus `LEANCTX_SIM_SEEDS=N` fresh ones (default 1,
//! 200 with `LEANCTX_STRESS=1`) from a printed base,
//! `LEANCTX_SIM_TICKS=N` (default 80), `LEANCTX_SEED=S` replays from seed S.

use crate::rng::{self, Rng};
use crate::support::Sandbox;
use leanctx::identity::caller::{ScopeEnv, Source};
use leanctx::identity::mcp_call::McpCall;
use leanctx::identity::readpath::{ReadPath, StubQuery};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const FILES: [&str; 6] = ["a.rs", "b.rs", "c.rs", "d.rs", "README.md", "Cargo.toml"];

/// Every reason code of the scope check (`decision::Reason` without the
/// ledger's own): the simulation must reach each one.
const SCOPE_REASONS: [&str; 11] = [
    "same-conversation",
    "other-conversation",
    "compacted",
    "unknown-delivery",
    "unknown-caller",
    "unrecorded-call",
    "concurrent",
    "subagent-active",
    "single-conversation",
    "state-unavailable",
    "scope-disabled",
];

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

/// What a server's process environment says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Env {
    /// The shared server: nothing, or (in half the runs) a stale
    /// `CLAUDE_CODE_SESSION_ID` of a session it does not serve alone.
    Shared,
    /// A Claude Code stdio child: `CLAUDE_CODE_SESSION_ID`, its parent the
    /// `claude` process whose hooks get `CLAUDE_PID` (proven).
    ClaudeProven,
    /// The same without `CLAUDE_PID` in the hooks (unproven: ignored).
    ClaudeUnproven,
    /// `LEAN_CTX_SCOPE` set for this chat's server.
    Custom,
    /// `LEAN_CTX_CONVERSATION_SCOPE=0`.
    Disabled,
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
    /// Its MCP server: 0 the shared one, else its own.
    server: usize,
    /// The `claude` process's pid its hooks see as `CLAUDE_PID` (proven
    /// per-process servers only).
    claude_pid: Option<u32>,
}

#[derive(Default, Debug, Clone, PartialEq, Eq)]
struct Stats {
    seeds: u64,
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
    clears: u64,
    /// Questions asked without the call, without the delivery time.
    no_call: u64,
    no_time: u64,
    /// Pre hooks that died before recording.
    pre_died: u64,
    /// Calls whose own pre hook died and that carried no per-call id, that
    /// claimed another chat's identical unclaimed record (RELIABILITY.md,
    /// "A hook that fails to record"): no record tells them apart.
    unknowable: u64,
    /// Questions asked while the state could not be read.
    faults: u64,
    /// Questions a scoping-disabled server answered (`scope-disabled`):
    /// not judged as wrong — the user switched scoping off, and the answer
    /// is lean-ctx's legacy one — and not in the savings. The unsafe ones
    /// are counted, to show what switching it off costs.
    disabled: u64,
    disabled_unsafe: u64,
    /// Stubs allowed on wiped state ([`Fault::Wiped`]: the legacy answer of
    /// an empty state, documented), and how many of them were unsafe.
    wiped_allowed: u64,
    wiped_unsafe: u64,
    wrong_detail: Vec<String>,
    misresolved: Vec<String>,
    reasons: BTreeMap<String, u64>,
    /// Why safe stubs were withheld (what the savings lose to).
    lost: BTreeMap<String, u64>,
    /// A fold of every decision and verdict, in order (replays compare it).
    trace: u64,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.seeds += o.seeds;
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
        self.clears += o.clears;
        self.no_call += o.no_call;
        self.no_time += o.no_time;
        self.pre_died += o.pre_died;
        self.unknowable += o.unknowable;
        self.faults += o.faults;
        self.disabled += o.disabled;
        self.disabled_unsafe += o.disabled_unsafe;
        self.wiped_allowed += o.wiped_allowed;
        self.wiped_unsafe += o.wiped_unsafe;
        self.wrong_detail.extend(o.wrong_detail.iter().cloned());
        self.misresolved.extend(o.misresolved.iter().cloned());
        for (k, v) in &o.reasons {
            *self.reasons.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &o.lost {
            *self.lost.entry(k.clone()).or_default() += v;
        }
        self.trace = self.trace.rotate_left(7) ^ o.trace;
    }

    fn fold(&mut self, x: u64) {
        self.trace = (self.trace ^ x).wrapping_mul(0x100_0000_01b3).rotate_left(5);
    }

    fn reason(&self, r: &str) -> u64 {
        self.reasons.get(r).copied().unwrap_or(0)
    }

    fn share(&self) -> f64 {
        self.safe_allowed as f64 / (self.safe_allowed + self.safe_withheld).max(1) as f64
    }
}

/// An MCP server. Its cache remembers, per file, whom the content was last
/// delivered to (as the read path labelled it) and when.
struct Server {
    env: ScopeEnv,
    kind: Env,
    cache: HashMap<&'static str, (Option<String>, u64)>,
}

impl Server {
    /// A server process of `kind` for the chat `conv`; `parent` is the
    /// process that started it.
    fn new(kind: Env, conv: &str, parent: u32, stale_env: bool) -> Server {
        let mut vars: HashMap<&str, String> = HashMap::new();
        match kind {
            Env::Shared if stale_env => {
                vars.insert("CLAUDE_CODE_SESSION_ID", conv.to_string());
            }
            Env::Shared => {}
            Env::ClaudeProven | Env::ClaudeUnproven => {
                vars.insert("CLAUDE_CODE_SESSION_ID", conv.to_string());
            }
            Env::Custom => {
                vars.insert("LEAN_CTX_SCOPE", format!("work {conv}"));
            }
            Env::Disabled => {
                vars.insert("LEAN_CTX_CONVERSATION_SCOPE", "0".to_string());
            }
        }
        let env = ScopeEnv::from_vars(|k| vars.get(k).cloned(), Some(parent));
        Server { env, kind, cache: HashMap::new() }
    }
}

/// State that cannot be read at the moment a server asks (and is back
/// before the next hook runs, so no hook loses a record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The data dir opened to everyone (`chmod 777`).
    DirOpen,
    /// The journal replaced by a directory.
    JournalDir,
    /// The slot replaced by a FIFO.
    SlotFifo,
    /// The slot overwritten with garbage.
    SlotGarbage,
    /// The slot deleted (a cleanup), and the server asks without the call.
    SlotGone,
    /// The whole state deleted (journal, lock and slot), and the server
    /// asks without the call: as empty as a new install's, where the legacy
    /// single-conversation allow applies (README, RELIABILITY.md: "State
    /// deleted wholesale"). Its allows are counted apart
    /// ([`Stats::wiped_unsafe`]).
    Wiped,
}

/// The faults drawn (the slot deleted three times as often: it is the one
/// that reaches the legacy single-conversation answer).
const FAULTS: [Fault; 8] = [
    Fault::DirOpen,
    Fault::JournalDir,
    Fault::SlotFifo,
    Fault::SlotGarbage,
    Fault::SlotGone,
    Fault::SlotGone,
    Fault::SlotGone,
    Fault::Wiped,
];

pub(crate) struct Applied {
    fault: Fault,
    saved: Option<Vec<u8>>,
}

pub(crate) fn apply(data: &Path, fault: Fault) -> Applied {
    let slot = data.join("active_transcript.json");
    let journal = data.join("journal");
    let mut saved = None;
    match fault {
        Fault::DirOpen => std::fs::set_permissions(data, std::fs::Permissions::from_mode(0o777)).unwrap(),
        Fault::JournalDir => {
            if journal.exists() {
                std::fs::rename(&journal, data.join("journal.sim-aside")).unwrap();
            }
            std::fs::create_dir(&journal).unwrap();
        }
        Fault::Wiped => {
            let aside = data.join("sim-aside");
            std::fs::create_dir(&aside).unwrap();
            for f in ["journal", "journal.lock", "active_transcript.json"] {
                if data.join(f).exists() {
                    std::fs::rename(data.join(f), aside.join(f)).unwrap();
                }
            }
        }
        Fault::SlotFifo | Fault::SlotGarbage | Fault::SlotGone => {
            saved = std::fs::read(&slot).ok();
            let _ = std::fs::remove_file(&slot);
            match fault {
                Fault::SlotFifo => {
                    let c = std::ffi::CString::new(slot.to_str().unwrap()).unwrap();
                    // SAFETY: a valid NUL-terminated path.
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
                }
                Fault::SlotGarbage => {
                    std::fs::write(&slot, b"{\"transcript_path\": [garbage").unwrap();
                    std::fs::set_permissions(&slot, std::fs::Permissions::from_mode(0o600)).unwrap();
                }
                _ => {}
            }
        }
    }
    Applied { fault, saved }
}

pub(crate) fn restore(data: &Path, a: Applied) {
    let slot = data.join("active_transcript.json");
    let journal = data.join("journal");
    match a.fault {
        Fault::DirOpen => std::fs::set_permissions(data, std::fs::Permissions::from_mode(0o700)).unwrap(),
        Fault::JournalDir => {
            std::fs::remove_dir(&journal).unwrap();
            if data.join("journal.sim-aside").exists() {
                std::fs::rename(data.join("journal.sim-aside"), &journal).unwrap();
            }
        }
        Fault::Wiped => {
            let aside = data.join("sim-aside");
            for f in ["journal", "journal.lock", "active_transcript.json"] {
                if aside.join(f).exists() {
                    std::fs::rename(aside.join(f), data.join(f)).unwrap();
                }
            }
            std::fs::remove_dir(&aside).unwrap();
        }
        _ => {
            let _ = std::fs::remove_file(&slot);
            if let Some(bytes) = a.saved {
                std::fs::write(&slot, bytes).unwrap();
                std::fs::set_permissions(&slot, std::fs::Permissions::from_mode(0o600)).unwrap();
            }
        }
    }
}

#[derive(Clone, Copy)]
struct Ctx<'a> {
    sb: &'a Sandbox,
    /// Index 0: the shared server; `i + 1`: chat `i`'s own.
    servers: &'a [Mutex<Server>],
    ids: &'a AtomicU64,
    seed: u64,
    /// Adversarial knobs.
    knobs: Knobs,
}

#[derive(Clone, Copy, Debug)]
struct Knobs {
    /// A Claude MCP call without `_meta["claudecode/toolUseId"]` (older host).
    claude_no_meta: f64,
    /// A Cursor subagent hook without `CURSOR_TASK_ID` (unreliable: docs/HOST-FACTS.md §3).
    cursor_no_task_env: f64,
    /// Stub questions asked as cold (entry from a persisted index).
    cold: f64,
    /// A question asked without the call (a server that cannot pass it).
    no_call: f64,
    /// A question asked without the delivery time.
    no_time: f64,
    /// A Claude Code or Codex pre hook that dies before it records. (Not
    /// Cursor's or CodeBuddy's: their calls are named by that record, and
    /// a call without one may claim another chat's identical record, a
    /// known limit: RELIABILITY.md, "What the suites do not cover".)
    pre_dies: f64,
    /// A question asked while the state cannot be read ([`Fault`]).
    faults: f64,
    /// A chat gets a server of its own (the rest share one).
    own_server: f64,
    /// The chats acting in one tick run their hooks at once (threads): not
    /// reproducible. Else they take turns, in the order of their times.
    concurrent: bool,
}

const PER_CALL: Knobs = Knobs {
    claude_no_meta: 0.15,
    cursor_no_task_env: 0.1,
    cold: 0.2,
    no_call: 0.1,
    no_time: 0.1,
    pre_dies: 0.03,
    faults: 0.08,
    own_server: 0.4,
    concurrent: false,
};

const NO_CLAUDE_META: Knobs =
    Knobs { claude_no_meta: 1.0, cursor_no_task_env: 0.3, cold: 0.5, no_call: 0.2, ..PER_CALL };

fn uid(ctx: &Ctx, prefix: &str) -> String {
    format!("{prefix}{:x}{}", ctx.seed & 0xffff, ctx.ids.fetch_add(1, Relaxed))
}

/// Start `chat`'s own server process anew (a new session, a resume): a new
/// environment, an empty cache, and for Claude Code a new `claude` pid.
fn respawn_server(ctx: &Ctx, chat: &mut Chat) {
    if chat.server == 0 {
        return;
    }
    let mut s = ctx.servers[chat.server].lock().unwrap();
    let kind = s.kind;
    let pid = 100_000 + ctx.ids.fetch_add(1, Relaxed) as u32;
    chat.claude_pid = (kind == Env::ClaudeProven).then_some(pid);
    *s = Server::new(kind, &chat.id, pid, false);
}

/// Run one hook of `chat` at virtual time `t`.
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
    if let Some(pid) = chat.claude_pid {
        run = run.env("CLAUDE_PID", pid.to_string());
    }
    let o = run.run();
    assert_eq!(o.code, 0, "seed {}: hook {event} exit {}: {}", ctx.seed, o.code, o.stderr);
    assert!(o.stderr.is_empty(), "seed {}: hook {event}: {}", ctx.seed, o.stderr);
    st.hooks += 1;
}

fn reason_index(r: &str) -> u64 {
    SCOPE_REASONS.iter().position(|x| *x == r).map_or(99, |i| i as u64)
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
    let pre_died = matches!(host, H::Claude | H::Codex) && rng.chance(ctx.knobs.pre_dies);
    if pre_died {
        st.pre_died += 1;
    } else {
        hook(ctx, st, chat, pre, t, extra.clone(), task_env);
    }

    // The MCP call as the server receives it.
    let meta = match host {
        H::Claude if !rng.chance(ctx.knobs.claude_no_meta) => json!({"claudecode/toolUseId": call_id}),
        H::Codex => {
            let thread = agent_raw.clone().unwrap_or_else(|| chat.id.clone());
            json!({"sessionId": chat.id, "threadId": thread, "callId": call_id})
        }
        _ => json!({}),
    };
    let no_id = meta.as_object().is_some_and(|m| m.is_empty());
    let request = json!({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
        "params": {"name": "ctx_read", "arguments": {"path": file}, "_meta": meta}});
    let call = McpCall::from_json(&request).unwrap();
    // How the server asks: the state it meets, with or without the call
    // (never without it when the pre hook died: the slot would name the
    // last writer, a limit RELIABILITY.md states), with or without the time.
    let fault = (rng.chance(ctx.knobs.faults)).then(|| *rng.pick(&FAULTS));
    let no_call = !pre_died && (matches!(fault, Some(Fault::SlotGone | Fault::Wiped)) || rng.chance(ctx.knobs.no_call));
    let no_time = rng.chance(ctx.knobs.no_time);
    let cold = rng.chance(ctx.knobs.cold);
    let given = (!no_call).then_some(&call);
    let now = t + 1;
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
        let mut server = ctx.servers[chat.server].lock().unwrap();
        let rp = ReadPath::new(&ctx.sb.data, server.env.clone()).at(now);
        let applied = fault.map(|f| {
            st.faults += 1;
            apply(&ctx.sb.data, f)
        });
        let entry = server.cache.get(file).cloned();
        let (allowed, resolved, label) = match &entry {
            Some((delivered, at)) => {
                st.no_call += no_call as u64;
                st.no_time += no_time as u64;
                let ans = rp.decide(&StubQuery {
                    delivered: delivered.as_deref(),
                    delivered_at_ms: (!no_time).then_some(*at),
                    cold,
                    call: given,
                });
                st.stub_questions += 1;
                let reason = ans.decision.reason.as_str();
                *st.reasons.entry(reason.to_string()).or_default() += 1;
                let safe = window.contains(file);
                st.fold(now ^ ((ans.decision.allow as u64) << 1) ^ (safe as u64) ^ (reason_index(reason) << 8));
                match (ans.decision.allow, safe) {
                    _ if reason == "scope-disabled" => {
                        st.disabled += 1;
                        st.disabled_unsafe += !safe as u64;
                    }
                    (true, _) if fault == Some(Fault::Wiped) => {
                        st.wiped_allowed += 1;
                        st.wiped_unsafe += !safe as u64;
                    }
                    (true, true) => st.safe_allowed += 1,
                    (true, false) => {
                        st.wrong += 1;
                        st.wrong_detail.push(format!(
                            "seed {}: t={now} {host:?} caller {truth_scope} got a stub of {file} delivered to \
                             {delivered:?} at {at} (cold {cold}, call given {}, time given {}, fault {fault:?}, \
                             server {:?}): {:?}",
                            ctx.seed, !no_call, !no_time, server.kind, ans
                        ));
                    }
                    (false, true) => {
                        st.safe_withheld += 1;
                        *st.lost.entry(reason.to_string()).or_default() += 1;
                    }
                    (false, false) => st.unsafe_withheld += 1,
                }
                (ans.decision.allow, ans.caller, ans.delivery_scope)
            }
            None => {
                let res = rp.resolve(given, now);
                let label = rp.delivery_scope(&res);
                (false, res.caller, label)
            }
        };
        if let Some(a) = applied {
            restore(&ctx.sb.data, a);
        }
        if resolved.exact {
            st.exact += 1;
            // An exact resolution must name the true caller, except a Cursor
            // subagent whose hook lacked CURSOR_TASK_ID (its record names
            // the parent), and a proven process env asked by a subagent (the
            // env names the server's session): the decision must then
            // withhold for another reason (`subagent-active`).
            let excused = actor.is_some()
                && ((host == H::Cursor && task_env.is_none() && sub_conv.is_none())
                    || resolved.source == Source::ProcessEnv);
            // A call whose own pre hook died and that names no call of its
            // own (no per-call id) can claim another chat's identical record
            // made inside the claim window: the documented limit of a hook
            // that fails to record. Counted apart; a wrong stub from it still
            // fails the run (found by fresh seed 1796173845970677932).
            let unknowable = pre_died
                && resolved.source == Source::Fingerprint
                && no_id
                && resolved.scope.as_deref() != Some(truth_scope.as_str());
            st.unknowable += unknowable as u64;
            if !excused && !unknowable && resolved.scope.as_deref() != Some(truth_scope.as_str()) {
                st.misresolved.push(format!(
                    "seed {}: t={now} {host:?} {truth_scope} resolved exactly as {:?} via {:?} ({file}, call {call_id})",
                    ctx.seed, resolved.scope, resolved.source
                ));
            }
        }
        if std::env::var_os("LEANCTX_SIM_TRACE").is_some() {
            eprintln!(
                "t={now} {host:?} {truth_scope} reads {file}: entry {entry:?} allowed {allowed} resolved {:?} via {:?} \
                 label {label:?} (fault {fault:?}, call given {})",
                resolved.scope, resolved.source, !no_call
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

/// End a chat (its subagents first).
fn end_chat(ctx: &Ctx, st: &mut Stats, chat: &mut Chat, t: u64) {
    let cursor = chat.host == H::Cursor;
    for s in std::mem::take(&mut chat.subs) {
        if cursor {
            hook(ctx, st, chat, "subagentStop", t, cursor_stop(chat, &s), None);
        } else {
            hook(ctx, st, chat, "SubagentStop", t, json!({"agent_id": s.raw}), None);
        }
    }
    st.ends += 1;
    chat.ended = true;
    let ev = if cursor { "sessionEnd" } else { "SessionEnd" };
    hook(ctx, st, chat, ev, t + 1, json!({"reason": "other"}), None);
}

/// One step of a chat at virtual time `t`.
fn step(ctx: &Ctx, rng: &mut Rng, chat: &mut Chat, t: u64) -> Stats {
    let mut st = Stats::default();
    let host = chat.host;
    let cursor = host == H::Cursor;
    if chat.ended {
        // Claude Code and Codex resume with the same id; the transcript (and
        // so the window) comes back. The others start a new chat. Either
        // way a new host process starts a new stdio server.
        match host {
            H::Claude | H::Codex if rng.chance(0.6) => {
                chat.ended = false;
                respawn_server(ctx, chat);
                hook(ctx, &mut st, chat, "SessionStart", t, json!({"source": "resume"}), None);
            }
            _ => {
                chat.id = uid(ctx, "chat-");
                chat.window.clear();
                chat.subs.clear();
                chat.ended = false;
                respawn_server(ctx, chat);
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
            // one names none, and the journal closes none (the oracle still
            // counts the oldest as stopped: the product only withholds more).
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
        87..=90 => end_chat(ctx, &mut st, chat, t),
        91..=93 if host == H::Claude && chat.subs.is_empty() => {
            // /clear: a new session id, an empty context, the same claude
            // process (and stdio server, whose env keeps the old id: the
            // lineage its hooks record names the new one).
            st.clears += 1;
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
    std::fs::set_permissions(&sb.data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let ids = AtomicU64::new(0);
    let hosts = [H::Cursor, H::Claude, H::Codex, H::CodeBuddy];
    let n = rng.range(2, 5) as usize;
    let stale_env = rng.chance(0.5);
    // Chat i's server is i + 1 (unused when it shares server 0).
    let mut plan = Vec::new();
    for i in 0..n {
        let host = if i < 2 { hosts[rng.below(4) as usize] } else { *rng.pick(&hosts) };
        let kind = if rng.chance(knobs.own_server) {
            match (host, rng.below(10)) {
                (H::Claude, 0..=4) => Env::ClaudeProven,
                (H::Claude, 5..=6) => Env::ClaudeUnproven,
                (_, 0..=6) => Env::Custom,
                _ => Env::Disabled,
            }
        } else {
            Env::Shared
        };
        plan.push((host, kind));
    }
    let mut servers = vec![Mutex::new(Server::new(Env::Shared, "stale-session", 1, stale_env))];
    let mut chats = Vec::new();
    for (i, &(host, kind)) in plan.iter().enumerate() {
        let id = format!("chat-{:x}{}", seed & 0xffff, ids.fetch_add(1, Relaxed));
        let pid = 100_000 + ids.fetch_add(1, Relaxed) as u32;
        servers.push(Mutex::new(Server::new(kind, &id, pid, false)));
        let server = if kind == Env::Shared { 0 } else { i + 1 };
        let claude_pid = (kind == Env::ClaudeProven).then_some(pid);
        chats.push(Chat { host, id, ended: false, window: HashSet::new(), subs: Vec::new(), server, claude_pid });
    }
    let ctx = Ctx { sb: &sb, servers: &servers, ids: &ids, seed, knobs };
    let mut total = Stats::default();
    let mut t: u64 = 1_800_000_000_000 + rng.below(1_000_000);
    for chat in &chats {
        let ev = if chat.host == H::Cursor { "sessionStart" } else { "SessionStart" };
        hook(&ctx, &mut total, chat, ev, t, json!({"source": "startup"}), None);
        t += 1;
    }
    let mut solo: Option<(usize, u64)> = None;
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
        // Now and then one chat works alone for a while (the others idle
        // past the 30 s concurrency window): the stretches where the legacy
        // single-conversation answer can apply.
        if solo.is_none() && rng.chance(0.08) {
            let c = rng.below(chats.len() as u64) as usize;
            solo = Some((c, rng.range(4, 16)));
            // Half the time the user closed the other chats first.
            if rng.chance(0.5) && !knobs.concurrent {
                for (i, chat) in chats.iter_mut().enumerate() {
                    if i != c && !chat.ended {
                        end_chat(&ctx, &mut total, chat, t);
                    }
                }
            }
            t += rng.range(31_000, 90_000);
        }
        // Some chats act in this tick, each at its own offset.
        let k = rng.range(1, chats.len().min(3) as u64) as usize;
        let mut idx: Vec<usize> = (0..chats.len()).collect();
        for i in 0..idx.len() {
            let j = i + rng.below((idx.len() - i) as u64) as usize;
            idx.swap(i, j);
        }
        idx.truncate(k);
        let alone = solo.is_some();
        if let Some((c, left)) = solo {
            idx = vec![c];
            solo = (left > 1).then_some((c, left - 1));
        }
        let mut seeds: Vec<(usize, u64, u64)> = idx.iter().map(|&i| (i, rng.next_u64(), rng.below(20))).collect();
        // A chat working alone meets the slot-gone episode more often (a
        // cleanup removing it while one chat works).
        let solo_ctx = Ctx { knobs: Knobs { faults: knobs.faults * 4.0, ..knobs }, ..ctx };
        let ctx = if alone && !knobs.concurrent { &solo_ctx } else { &ctx };
        if knobs.concurrent {
            // Their hooks run at once.
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
        } else {
            // They take turns in the order of their times (ties: the chat
            // drawn first), so a seed replays exactly.
            seeds.sort_by_key(|&(_, _, off)| off);
            for (i, sd, off) in seeds {
                let r = step(ctx, &mut Rng::new(sd), &mut chats[i], t + off * 3);
                total.add(&r);
            }
        }
    }
    total.fold(seed);
    total.seeds = 1;
    total
}

/// The scope reasons reached, one line per code.
fn coverage(name: &str, s: &Stats) -> String {
    let mut out = format!("sim[{name}] reason coverage:");
    for r in SCOPE_REASONS {
        out.push_str(&format!("\n  {r:<20} {:>6}", s.reason(r)));
    }
    out
}

fn report(name: &str, seeds: u64, s: &Stats) -> String {
    let safe = s.safe_allowed + s.safe_withheld;
    let mut lost: Vec<_> = s.lost.iter().collect();
    lost.sort_by(|a, b| b.1.cmp(a.1));
    format!(
        "sim[{name}]: {seeds} seeds, {} hook processes, {} MCP calls ({} resolved exactly), {} stub questions \
         ({} without the call, {} without the delivery time, {} on unreadable state), {} pre hooks died \
         ({} calls then claimed another chat's record), \
         {} compactions, {} subagents, {} ends, {} /clear: wrong stubs {}; safe stubs allowed {}/{} = {:.1}% \
         (unsafe withheld {}); scoping disabled: {} answers, {} of them unsafe; wiped state: {} allowed, {} of them \
         unsafe; safe stubs withheld for {lost:?}",
        s.hooks,
        s.calls,
        s.exact,
        s.stub_questions,
        s.no_call,
        s.no_time,
        s.faults,
        s.pre_died,
        s.unknowable,
        s.compactions,
        s.subagents,
        s.ends,
        s.clears,
        s.wrong,
        s.safe_allowed,
        safe,
        100.0 * s.share(),
        s.unsafe_withheld,
        s.disabled,
        s.disabled_unsafe,
        s.wiped_allowed,
        s.wiped_unsafe,
    )
}

/// Fixed seeds every run (CI's figures are reproducible), then
/// `LEANCTX_SIM_SEEDS` fresh ones from the printed base (`LEANCTX_SEED`
/// replays them; with `LEANCTX_SEED` set the fixed ones are skipped).
const FIXED_SEEDS: [u64; 6] = [1, 2, 3, 4, 5, 6];
const TICKS: u64 = 80;

/// The total over every seed, and over the fixed seeds alone (`None` when
/// replaying): the figures and the coverage are asserted on the fixed
/// seeds, deterministic, so a fresh seed's luck cannot fail CI, while every
/// seed must have 0 wrong stubs.
fn run_many(name: &str, knobs: Knobs) -> (Stats, Option<Stats>) {
    let fresh = rng::count("LEANCTX_SIM_SEEDS", 1, 200);
    let ticks = rng::count("LEANCTX_SIM_TICKS", TICKS, 120);
    let base = rng::base_seed(&format!("sim[{name}]"));
    let replaying = std::env::var_os("LEANCTX_SEED").is_some();
    let fixed: &[u64] = if replaying { &[] } else { &FIXED_SEEDS };
    let all: Vec<u64> = fixed.iter().copied().chain((0..fresh).map(|i| base.wrapping_add(i))).collect();
    // Two seeds at a time (each on its own is serial and deterministic,
    // unless `knobs.concurrent`).
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut runs: Vec<(u64, Stats)> = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                sc.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Relaxed);
                        let Some(&seed) = all.get(i) else { break out };
                        out.push((seed, run_seed(seed, ticks, knobs)));
                    }
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    runs.sort_by_key(|(seed, _)| all.iter().position(|s| s == seed));
    let mut total = Stats::default();
    let mut fixed_total = Stats::default();
    for (seed, s) in &runs {
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
        if fixed.contains(seed) {
            fixed_total.add(s);
        }
        total.add(s);
    }
    println!("{}", report(name, all.len() as u64, &total));
    if replaying {
        return (total, None);
    }
    println!("{}", report(&format!("{name}, fixed seeds 1-6 x {ticks} ticks"), fixed.len() as u64, &fixed_total));
    println!("{}", coverage(&format!("{name}, fixed seeds"), &fixed_total));
    // The fixed seeds' figures are asserted only at the CI size.
    (total, (ticks == TICKS).then_some(fixed_total))
}

/// The large run RELIABILITY.md cites: seeds 1–200 × 80 ticks
/// (`LEANCTX_SEED=1 LEANCTX_SIM_SEEDS=200`). It replays exactly, so its
/// figures are asserted when it is the run being made.
fn published_run() -> bool {
    std::env::var("LEANCTX_SEED").is_ok_and(|v| v.trim() == "1")
        && rng::count("LEANCTX_SIM_SEEDS", 1, 200) == 200
        && rng::count("LEANCTX_SIM_TICKS", TICKS, 120) == TICKS
}

/// Per-call identity as the hosts give it (with an older Claude that sends
/// no tool-use id now and then, and Cursor subagent hooks that sometimes
/// lack `CURSOR_TASK_ID`), servers of every kind asking with and without
/// the call, and state that cannot be read now and then: zero wrong stubs,
/// every reason code reached, and stubs still flow.
#[test]
fn simulation_zero_wrong_stubs() {
    let (s, fixed) = run_many("per-call", PER_CALL);
    assert_eq!(s.wrong, 0);
    assert!(s.misresolved.is_empty());
    // A savings floor on the whole run (a product that always withholds
    // passes `wrong == 0`); not on a replay of a seed or two.
    if s.seeds >= 6 {
        assert!(s.stub_questions > 100, "{}", report("per-call", s.seeds, &s));
        assert!(s.share() >= 0.22, "scope check: safe stubs allowed {:.1} %", s.share() * 100.0);
    }
    if published_run() {
        let r = report("per-call, seeds 1-200", s.seeds, &s);
        assert!(s.calls >= 12_156 && s.exact >= 7_809 && s.stub_questions >= 8_431 && s.hooks >= 35_643, "{r}");
        assert!(s.compactions >= 1_456 && s.subagents >= 1_700 && s.ends >= 1_841 && s.clears >= 103, "{r}");
        assert!(s.safe_allowed >= 1_072 && s.share() >= 0.357, "{r}");
        assert!(s.disabled_unsafe <= 358 && s.wiped_unsafe <= 56, "{r}");
        for r in SCOPE_REASONS {
            assert!(s.reason(r) > 0, "reason {r} never reached in seeds 1-200: {:?}", s.reasons);
        }
    }
    let Some(f) = fixed else { return };
    // The fixed seeds replay exactly: their figures (RELIABILITY.md) are
    // asserted as floors a little under what they measure.
    let r = report("per-call fixed", 6, &f);
    assert_eq!(f.wrong, 0);
    assert!(f.stub_questions >= 250 && f.hooks >= 1_000 && f.calls >= 350 && f.exact >= 230, "{r}");
    assert!(f.compactions >= 40 && f.subagents >= 40 && f.ends >= 50 && f.clears >= 3, "{r}");
    assert!(f.no_call >= 40 && f.no_time >= 30 && f.faults >= 45 && f.pre_died >= 3, "{r}");
    assert!(f.share() >= 0.33, "scope check: safe stubs allowed {:.1} % on the fixed seeds", f.share() * 100.0);
    // Every reason code is reached.
    for r in SCOPE_REASONS {
        assert!(f.reason(r) > 0, "reason {r} never reached on the fixed seeds: {:?}", f.reasons);
    }
    assert!(f.disabled > 0 && f.disabled == f.reason("scope-disabled"), "{f:?}");
    assert!(f.wiped_allowed <= f.reason("single-conversation"), "{f:?}");
}

/// No per-call identity at all from Claude (every call without its
/// tool-use id): the slot and the concurrency signal alone must still
/// never let a wrong stub through.
#[test]
fn simulation_zero_wrong_stubs_without_claude_meta() {
    let (s, fixed) = run_many("no-claude-meta", NO_CLAUDE_META);
    assert_eq!(s.wrong, 0);
    // Not a product that always withholds.
    if s.seeds >= 6 {
        assert!(s.share() >= 0.10, "without Claude ids: safe stubs allowed {:.1} %", s.share() * 100.0);
    }
    if published_run() {
        assert!(s.safe_allowed >= 788 && s.share() >= 0.26, "{}", report("no-claude-meta, seeds 1-200", s.seeds, &s));
    }
    let Some(f) = fixed else { return };
    assert!(f.stub_questions >= 250, "{}", report("no-claude-meta fixed", 6, &f));
    assert!(f.share() >= 0.16, "without Claude ids: safe stubs allowed {:.1} % on the fixed seeds", f.share() * 100.0);
    for r in SCOPE_REASONS.iter().filter(|r| **r != "unrecorded-call") {
        assert!(f.reason(r) > 0, "reason {r} never reached: {:?}", f.reasons);
    }
    // No Claude call carries a tool-use id, so none can name no record.
    assert_eq!(f.reason("unrecorded-call"), 0, "{:?}", f.reasons);
}

/// The chats acting in one tick run their hooks at the same time (threads,
/// real processes racing for the journal lock and the slot). Not
/// reproducible — the slot is last-writer-wins — so only the verdict is
/// asserted: zero wrong stubs and every exact resolution right. (No
/// unreadable-state faults here: another chat's hook would meet them.)
#[test]
fn simulation_zero_wrong_stubs_with_concurrent_hooks() {
    let knobs = Knobs { concurrent: true, faults: 0.0, ..PER_CALL };
    let mut total = Stats::default();
    for seed in [7, 8] {
        let s = run_seed(seed, TICKS, knobs);
        assert!(s.misresolved.is_empty(), "seed {seed}:\n{}", s.misresolved.join("\n"));
        assert!(s.wrong == 0, "{} wrong stubs with seed {seed} (concurrent):\n{}", s.wrong, s.wrong_detail.join("\n"));
        total.add(&s);
    }
    println!("{}", report("concurrent hooks", 2, &total));
    assert!(total.stub_questions > 60, "{total:?}");
}

/// `LEANCTX_SEED=S` replays a run exactly: the same seed twice gives the
/// same statistics, every counter, every reason count and the fold of every
/// decision and verdict in order.
#[test]
fn simulation_replays_bit_for_bit() {
    let seed = FIXED_SEEDS[1];
    let a = run_seed(seed, TICKS, PER_CALL);
    let b = run_seed(seed, TICKS, PER_CALL);
    assert!(a.stub_questions > 30 && a.faults > 0 && a.no_call > 0, "{a:?}");
    assert_eq!(a, b, "seed {seed} does not replay");
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

/// The slot gone (a cleanup) and a server that asks without the call: the
/// caller is unknown. The legacy single-conversation allow handed a running
/// subagent a stub of what only its parent had been given, and the one live
/// chat the stub of a chat that had ended (found by the simulation's
/// slot-gone episodes, seed 2). It now needs one caller and one possible
/// recipient: no subagent running, no other conversation in the state.
#[test]
fn an_unknown_caller_while_a_subagent_runs_gets_no_legacy_stub() {
    let sb = sandbox();
    let t = 1_800_000_000_000u64;
    at(&sb, "claude", t, json!({"hook_event_name":"SessionStart","session_id":"cla","source":"startup"}));
    at(&sb, "claude", t + 10, json!({"hook_event_name":"SubagentStart","session_id":"cla","agent_id":"sub1"}));
    at(
        &sb,
        "claude",
        t + 20,
        json!({"hook_event_name":"PreToolUse","session_id":"cla","agent_id":"sub1",
        "tool_name":"mcp__ctx__ctx_read","tool_input":{"path":"a.rs"},"tool_use_id":"toolu_9"}),
    );
    std::fs::remove_file(sb.data.join("active_transcript.json")).unwrap();
    let rp = ReadPath::new(&sb.data, ScopeEnv::default()).at(t + 30);
    let ans = rp.decide(&StubQuery { delivered: Some("cla"), delivered_at_ms: Some(t + 5), cold: false, call: None });
    assert_eq!(ans.caller.source, Source::None, "{ans:?}");
    assert!(!ans.concurrent, "{ans:?}");
    assert_eq!((ans.decision.allow, ans.decision.reason.as_str()), (false, "subagent-active"), "{ans:?}");
    // Once it stops, it may still have been the recipient: no legacy stub.
    at(&sb, "claude", t + 40, json!({"hook_event_name":"SubagentStop","session_id":"cla","agent_id":"sub1"}));
    let rp = ReadPath::new(&sb.data, ScopeEnv::default()).at(t + 50);
    let ans = rp.decide(&StubQuery { delivered: Some("cla"), delivered_at_ms: Some(t + 5), cold: false, call: None });
    assert_eq!((ans.decision.allow, ans.decision.reason.as_str()), (false, "unknown-caller"), "{ans:?}");
    // One conversation and nothing else in the state: the legacy answer.
    let sb = sandbox();
    at(&sb, "claude", t, json!({"hook_event_name":"SessionStart","session_id":"cla","source":"startup"}));
    std::fs::remove_file(sb.data.join("active_transcript.json")).unwrap();
    let rp = ReadPath::new(&sb.data, ScopeEnv::default()).at(t + 10);
    let ans = rp.decide(&StubQuery { delivered: Some("cla"), delivered_at_ms: Some(t + 5), cold: false, call: None });
    assert_eq!((ans.decision.allow, ans.decision.reason.as_str()), (true, "single-conversation"), "{ans:?}");
    // Another chat that ended long ago (not live) may have been the
    // recipient: the one live chat gets no stub of what it may never have
    // seen (found by the simulation, seed 2: the chat closed, and its
    // content went to the one left).
    at(&sb, "codex", t + 60, json!({"hook_event_name":"SessionEnd","session_id":"cdx","reason":"other"}));
    at(&sb, "claude", t + 100_000, json!({"hook_event_name":"Stop","session_id":"cla"}));
    std::fs::remove_file(sb.data.join("active_transcript.json")).unwrap();
    let rp = ReadPath::new(&sb.data, ScopeEnv::default()).at(t + 100_010);
    let ans = rp.decide(&StubQuery { delivered: Some("cdx"), delivered_at_ms: Some(t + 5), cold: false, call: None });
    assert!(!ans.concurrent, "{ans:?}");
    assert_eq!((ans.decision.allow, ans.decision.reason.as_str()), (false, "unknown-caller"), "{ans:?}");
}

/// A `LEAN_CTX_SCOPE` server asked without the call: its subagents call
/// the same server, and the custom scope cannot tell them from the main
/// agent. The subagent got the stub of what only its parent had been given
/// (found by the simulation, seed 35), and a delivery labelled while a
/// subagent ran could later stub the parent with what only the subagent saw.
#[test]
fn a_custom_scope_server_withholds_while_a_subagent_runs() {
    let sb = sandbox();
    let t = 1_800_000_000_000u64;
    let env = ScopeEnv::from_vars(|k| (k == "LEAN_CTX_SCOPE").then(|| "work".to_string()), None);
    at(&sb, "codebuddy", t, json!({"hook_event_name":"SessionStart","session_id":"cb","source":"startup"}));
    // The main agent reads: the delivery is labelled `custom:work`.
    let rp = ReadPath::new(&sb.data, env.clone()).at(t + 10);
    let res = rp.resolve(None, t + 10);
    assert_eq!(rp.delivery_scope(&res).as_deref(), Some("custom:work"));
    // A subagent starts and asks for the same file.
    at(&sb, "codebuddy", t + 20, json!({"hook_event_name":"SubagentStart","session_id":"cb","agent_id":"s1"}));
    let rp = ReadPath::new(&sb.data, env.clone()).at(t + 30);
    let q = StubQuery { delivered: Some("custom:work"), delivered_at_ms: Some(t + 10), cold: false, call: None };
    let ans = rp.decide(&q);
    assert_eq!((ans.decision.allow, ans.decision.reason.as_str()), (false, "subagent-active"), "{ans:?}");
    assert_eq!(ans.delivery_scope, None, "what the subagent gets now is not labelled for the scope");
    // Once it stops, the main agent's stub is back.
    at(&sb, "codebuddy", t + 40, json!({"hook_event_name":"SubagentStop","session_id":"cb","agent_id":"s1"}));
    let rp = ReadPath::new(&sb.data, env).at(t + 50);
    assert!(rp.decide(&q).decision.allow);
}

/// A Cursor task's hooks (`CURSOR_TASK_ID`) do not write the slot, so the
/// slot still names the chat that wrote it last, now quiet. The task, asking
/// through a server that does not give the call, got that chat's stub: the
/// one live conversation was its parent's, not the slot's (found by the
/// simulation, seed 107). A slot naming a conversation while another one is
/// live withholds, like two live ones.
#[test]
fn a_slot_naming_a_quiet_chat_while_another_is_live_is_not_the_caller() {
    let sb = sandbox();
    let t = 1_800_000_000_000u64;
    at(
        &sb,
        "cursor",
        t,
        json!({"hook_event_name":"subagentStart","conversation_id":"par",
        "subagent_id":"T","parent_conversation_id":"par"}),
    );
    at(
        &sb,
        "cursor",
        t + 1_000,
        json!({"hook_event_name":"beforeMCPExecution","conversation_id":"other",
        "tool_name":"ctx_read","tool_input":"{\"path\":\"d.rs\"}"}),
    );
    // 39 s later the task reads: its hook sights its parent, not the slot.
    let p = json!({"hook_event_name":"beforeMCPExecution","conversation_id":"par",
        "tool_name":"ctx_read","tool_input":"{\"path\":\"d.rs\"}"});
    sb.hook("cursor", p.to_string()).env("LEAN_CTX_NOW_MS", (t + 40_000).to_string()).env("CURSOR_TASK_ID", "T").ok();
    assert_eq!(sb.slot().unwrap()["conversation_id"], "other");
    let rp = ReadPath::new(&sb.data, ScopeEnv::default()).at(t + 40_001);
    let q = StubQuery { delivered: Some("other"), delivered_at_ms: Some(t + 1_001), cold: false, call: None };
    let ans = rp.decide(&q);
    assert_eq!(ans.caller.source, Source::Slot, "{ans:?}");
    assert!(!ans.concurrent, "one live conversation: {ans:?}");
    assert_eq!((ans.decision.allow, ans.decision.reason.as_str()), (false, "concurrent"), "{ans:?}");
    assert_eq!(ans.delivery_scope, None);
    // With nobody else live, the slot's own chat still gets its stub.
    let sb = sandbox();
    at(
        &sb,
        "cursor",
        t + 1_000,
        json!({"hook_event_name":"beforeMCPExecution","conversation_id":"other",
        "tool_name":"ctx_read","tool_input":"{\"path\":\"d.rs\"}"}),
    );
    let rp = ReadPath::new(&sb.data, ScopeEnv::default()).at(t + 1_500);
    assert!(rp.decide(&q).decision.allow);
}
