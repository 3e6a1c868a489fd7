//! One hook invocation: payload in, state recorded, the host's answer out.
//!
//! Fail open, always: whatever goes wrong (bad input, unusable data dir,
//! busy lock, a panic) the host gets a well-formed "no opinion" answer and
//! exit 0, and the reason goes to stderr. The gate's own verdicts are the
//! only thing that ever blocks a call.

pub mod payload;

use crate::base::host::Host;
use crate::base::paths::{self, DirProblem};
use crate::base::scope::ScopeKind;
use crate::gate::{self, Verdict};
use crate::hook::payload::Input;
use crate::hosts::event::{Event, EventKind};
use crate::hosts::{self, HookEnv};
use crate::state::journal::{Call, Journal, Reach, Record};
use crate::state::slot::{self, Slot};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What the hook prints and says.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The answer for stdout (`None` = print nothing).
    pub stdout: Option<String>,
    /// Diagnostics for stderr, one line each.
    pub diagnostics: Vec<String>,
    /// The normalised event, when the payload could be read.
    pub event: Option<Event>,
}

/// Everything the hook needs from outside, so tests can drive it.
pub struct HookContext {
    pub host: Host,
    pub event_override: Option<String>,
    pub env: HookEnv,
    pub now_ms: u64,
    pub data_dir: Result<PathBuf, DirProblem>,
}

/// Run the hook on an already-read input.
pub fn run(ctx: &HookContext, input: Input) -> Outcome {
    let mut out = Outcome::default();
    let fallback_name = ctx.event_override.clone().unwrap_or_default();
    let bytes = match input {
        Input::Complete(b) => b,
        Input::TimedOut(b) if serde_json::from_slice::<Value>(&b).is_ok() => b,
        Input::TimedOut(b) => {
            out.diagnostics.push(format!(
                "stdin did not close within {} ms ({} bytes read); answering without recording",
                crate::hook::payload::STDIN_DEADLINE.as_millis(),
                b.len()
            ));
            return fail_open(ctx.host, &fallback_name, out);
        }
        Input::TooLarge { seen } => {
            out.diagnostics.push(format!(
                "payload larger than {} bytes ({seen} seen); answering without recording",
                crate::hook::payload::MAX_PAYLOAD_BYTES
            ));
            return fail_open(ctx.host, &fallback_name, out);
        }
        Input::Error(e) => {
            out.diagnostics.push(format!("cannot read stdin: {e}; answering without recording"));
            return fail_open(ctx.host, &fallback_name, out);
        }
    };
    let payload: Value = match serde_json::from_slice(&bytes) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            out.diagnostics.push("payload is not a JSON object; answering without recording".into());
            return fail_open(ctx.host, &fallback_name, out);
        }
        Err(e) if bytes.iter().all(u8::is_ascii_whitespace) => {
            let _ = e;
            out.diagnostics.push("empty payload; answering without recording".into());
            return fail_open(ctx.host, &fallback_name, out);
        }
        Err(e) => {
            out.diagnostics.push(format!("payload is not valid JSON ({e}); answering without recording"));
            return fail_open(ctx.host, &fallback_name, out);
        }
    };
    drop(bytes);
    // Cursor also runs Claude Code's hooks (third-party configs on), with its
    // own payload: the cursor entry records that event, so this run stands
    // aside rather than count it twice. Not a failure: nothing on stderr.
    if crate::hosts::overlap::claude_hook_run_by_cursor(ctx.host, &payload) {
        return fail_open(ctx.host, &fallback_name, out);
    }
    let event = hosts::parse(ctx.host, &payload, ctx.event_override.as_deref(), &ctx.env);
    drop(payload);

    let dir = match &ctx.data_dir {
        Ok(d) => match paths::ensure_data_dir(d) {
            Ok(()) => Some(d.as_path()),
            Err(p) => {
                out.diagnostics.push(format!("{p}; not recording"));
                None
            }
        },
        Err(p) => {
            out.diagnostics.push(format!("{p}; not recording"));
            None
        }
    };

    if event.kind != EventKind::Unknown
        && let Some(dir) = dir
        && let Err(e) = record(dir, &event, &ctx.env, ctx.now_ms)
    {
        out.diagnostics.push(format!("could not record {} event: {e}", event.name));
    }

    let gated = event.is_mcp_call();
    let verdict = if gated {
        let tool = event.tool.as_ref().expect("mcp call has a tool");
        // The data dir's path, trusted or not: whether its policy counts is
        // the gate's decision (`gate::sources`), the same as `gate check`'s.
        let roots: Vec<PathBuf> = event.roots.iter().map(PathBuf::from).collect();
        gate::evaluate(&gate::loaded(&gate::load_policies(&ctx.data_dir, &roots)), tool)
    } else {
        Verdict::NoOpinion
    };
    if let Verdict::Decide { message, broken: true, .. } = &verdict {
        out.diagnostics.push(format!("gate policy cannot be used (it does not parse or cannot be trusted): {message}"));
    }
    out.stdout = hosts::answer(ctx.host, &event.name, gated, &verdict);
    out.event = Some(event);
    out
}

fn fail_open(host: Host, event_name: &str, mut out: Outcome) -> Outcome {
    out.stdout = hosts::answer(host, event_name, false, &Verdict::NoOpinion);
    out
}

/// The fail-open answer for a host when nothing else could run (a panic).
pub fn fail_open_answer(host: Host, event_name: &str) -> Option<String> {
    hosts::answer(host, event_name, false, &Verdict::NoOpinion)
}

/// Unique enough key for a call record: pid, time and a per-process counter.
/// The pid is zero-padded to a fixed width, so a record's length does not
/// depend on which pid the hook got: the journal's size, and so when it
/// trims, is the same whenever the same hooks run (a seeded simulation then
/// replays bit for bit; the trim point once moved with the pids' width).
/// A turn boundary of a top-level conversation on a host whose transcript
/// is a witness, or names the file of its history (its subagents' hooks
/// name the same conversation).
fn witness_turn(ev: &Event) -> Option<(&str, crate::witness::Turn)> {
    use crate::witness::Turn;
    let p = hosts::profile::profile(ev.host);
    if !(p.transcript_witness || p.history_file) || ev.agent.is_some() {
        return None;
    }
    let turn = match ev.kind {
        EventKind::SessionStart => Turn::Start { idle_s: ev.idle_s },
        EventKind::Prompt => Turn::Prompt,
        EventKind::Stop => Turn::Stop,
        EventKind::SessionEnd => Turn::End,
        // Only for the prompt id it names (a boundary's proof): Claude Code.
        EventKind::Compaction if p.transcript_witness => Turn::Compact,
        _ => return None,
    };
    Some((ev.transcript_path.as_deref()?, turn))
}

/// What a compaction hook's record ends. Claude Code: its main thread's
/// compaction (no `agent_id`) or one subagent's (that `agent_id`, whose
/// scope is `agent:<id>`): each context is its own (docs/DELIVERY.md §8,
/// "Subagents and compaction"). The main thread's, with the hook's host
/// process named (`CLAUDE_PID`): that process's main thread only; the
/// others of a session open in several keep their contexts (§8, "One
/// session, two processes"). Any other host, or an agent id that is not a
/// subagent's scope: everything.
fn compaction_reach(ev: &Event, pid: Option<u32>) -> Reach<'_> {
    if ev.host != Host::ClaudeCode {
        return Reach::All;
    }
    match ev.agent.as_deref() {
        None => pid.filter(|&p| p > 0).map_or(Reach::Main, Reach::MainOf),
        Some(a) if ScopeKind::Agent.id(a).is_some_and(|id| !id.is_empty()) => Reach::Agent(a),
        Some(_) => Reach::All,
    }
}

/// Is this hook its process's own submission of the prompt id it names?
/// Claude Code makes a prompt id when a prompt (`UserPromptSubmit`) or a
/// slash command such as `/compact` (a manual `PreCompact`) is submitted;
/// every later hook of that turn repeats it, and a process that resumed a
/// turn left waiting for a permission may repeat another's
/// (docs/DELIVERY.md §8, "One session, two processes"; `witness::owner`).
fn submits_prompt(ev: &Event) -> bool {
    match ev.kind {
        EventKind::Prompt => true,
        EventKind::Compaction => ev.name == "PreCompact" && ev.trigger.as_deref() == Some("manual"),
        _ => false,
    }
}

fn call_key(now: u64) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{:010}-{}-{}", std::process::id(), now, N.fetch_add(1, Ordering::Relaxed))
}

/// Write what the event says: journal records (one locked append), then
/// the slot. Called before the answer is printed.
pub fn record(dir: &Path, ev: &Event, env: &HookEnv, now: u64) -> std::io::Result<()> {
    let Some(conv) = ev.conversation.as_deref() else {
        return Ok(());
    };
    let host = ev.host;
    let in_task = ev.agent.as_deref().is_some_and(|a| ScopeKind::of(a) == ScopeKind::Task);
    let anonymous = if ev.kind == EventKind::SubagentStart {
        ScopeKind::Task.name(&format!("anon-{now}-{:010}", std::process::id()))
    } else {
        String::new()
    };
    let mut recs: Vec<Record<'_>> = Vec::with_capacity(3);
    // A Cursor task scope's hook sights the conversation its payload names
    // (the parent's, as Cursor sends it). Leaving no sighting let a task
    // run unseen by the concurrency signal: with the parent quiet for 30 s,
    // another chat looked alone, the slot (which task hooks do not write)
    // named it, and its stubs reached the task (found by tests/it/sim.rs).
    // Should Cursor ever give a task its own conversation_id, this counts a
    // second conversation: more withholding, never a wrong stub.
    if ev.kind != EventKind::SessionEnd {
        recs.push(Record::Sighting { t: now, host, conv, event: &ev.name });
    }
    if ev.is_compaction() {
        recs.push(Record::Compaction { t: now, host, conv, reach: compaction_reach(ev, env.claude_pid) });
        // A Cursor task's own compaction is its scope's too: its earlier
        // deliveries must not stay stubbable.
        if let Some(task) = ev.agent.as_deref().filter(|_| in_task) {
            recs.push(Record::Compaction { t: now, host, conv: task, reach: Reach::All });
        }
    }
    match ev.kind {
        EventKind::SessionEnd => recs.push(Record::End { t: now, host, conv }),
        EventKind::SubagentStart => {
            // A start that names no subagent still starts one: left out, the
            // parent looked alone and sources blind to subagents (slot,
            // fingerprint, process env) gave the subagent's calls the
            // parent's stubs. An id of its own, which no stop names: the
            // session's end closes it.
            let a = ev.started_agent.as_deref().or(ev.agent.as_deref()).unwrap_or(&anonymous);
            recs.push(Record::SubagentStart { t: now, host, conv, agent: a });
        }
        EventKind::SubagentStop => {
            // Cursor names the subagent it stops (`subagent_id`); a stop
            // without one (older versions) closes none.
            let agent = ev.started_agent.as_deref().or(if host == Host::Cursor { None } else { ev.agent.as_deref() });
            recs.push(Record::SubagentStop { t: now, host, conv, agent });
        }
        // Which session the Claude process serves now: after `/clear` (a new
        // id) and after `/resume` back to an earlier one, so the lineage
        // follows both ways (it once moved on `/clear` only, and a resumed
        // first session got the cleared one's stubs).
        // Recorded on every SessionStart: it also proves that a server whose
        // parent is this Claude process serves this session (its
        // CLAUDE_CODE_SESSION_ID may then be trusted as exact).
        EventKind::SessionStart => {
            if let Some(pid) = env.claude_pid {
                recs.push(Record::Lineage { t: now, host, pid, conv });
            }
        }
        _ => {}
    }
    // Every fingerprint, ref and digest goes into the journal keyed with the
    // data dir's secret. Without one (unreadable: a FIFO, another user's),
    // the call is recorded without a fingerprint (its id still names it)
    // and no acknowledgement is: both only withhold. Read only when needed.
    let secret = if ev.is_mcp_call() || !ev.acks.is_empty() {
        Some(crate::state::secret::Secret::load_or_create(dir))
    } else {
        None
    };
    let sealer = secret.as_ref().and_then(|s| s.as_ref().ok());
    let fp = sealer.zip(ev.args_fingerprint.as_deref()).map(|(s, fp)| s.seal_fp(fp));
    let key;
    if ev.is_mcp_call() {
        let tool = ev.tool.as_ref().expect("mcp call has a tool");
        key = call_key(now);
        recs.push(Record::Call(Call {
            t: now,
            host,
            conv,
            agent: ev.agent.as_deref(),
            server: tool.server.as_deref(),
            tool: &tool.tool,
            fp: fp.as_deref().unwrap_or("-"),
            call_id: ev.call_id.as_deref(),
            key: &key,
        }));
    }
    // Ledger acknowledgements: Codex's rule needs its budget from the user's
    // config, read only when a Codex MCP result is being acknowledged.
    let budget = if ev.acks.iter().any(|a| a.rule == crate::state::ledger::SizeRule::CodexBudget) {
        hosts::codex::budget_tokens(env.codex_home.as_deref(), ev.roots.first().map(String::as_str))
    } else {
        crate::state::ledger::CODEX_DEFAULT_BUDGET_TOKENS
    };
    let sealed: Vec<_> = match sealer {
        Some(s) => {
            ev.acks.iter().map(|a| (s.seal_ref(&a.call_ref), s.seal_content(&a.content), a.whole(budget))).collect()
        }
        None => Vec::new(),
    };
    for (call_ref, content, whole) in &sealed {
        recs.push(Record::Ack(crate::state::ledger::Ack {
            t: now,
            host,
            scope: ev.agent.as_deref().unwrap_or(conv),
            call_ref,
            digest: &content.digest,
            len: content.len,
            whole: *whole,
        }));
    }
    let journal = Journal::new(dir);
    let journal_result = match witness_turn(ev) {
        // The witness saves its state only once the records are written.
        Some((transcript, turn)) => {
            let profile = hosts::profile::profile(host);
            let deadline = std::time::Instant::now() + crate::state::journal::LOCK_WAIT;
            let pid = env.claude_pid;
            let prompt = ev.prompt_id.as_deref().map(|id| (id, submits_prompt(ev)));
            let b = crate::witness::Boundary {
                host,
                conv,
                transcript,
                turn,
                now,
                pid,
                idle_ms: profile.idle_clear_ms,
                prompt,
            };
            crate::witness::on_turn(dir, &b, deadline, |ends| {
                recs.extend(ends.iter().map(|&reach| Record::Compaction { t: now, host, conv, reach }));
                journal.append(&recs, now)
            })
        }
        None => journal.append(&recs, now),
    };
    let mut journal_result = journal_result;
    if let Some(Err(e)) = secret {
        journal_result = journal_result.and(Err(std::io::Error::other(format!(
            "recorded without fingerprints or acknowledgements: the data dir's secret: {e}"
        ))));
    }

    let slot_result = match ev.kind {
        EventKind::SessionEnd | EventKind::SubagentStop | EventKind::Unknown => Ok(()),
        _ => {
            let s = Slot::new(host, conv, ev.transcript_path.as_deref(), &ev.name, ev.agent.as_deref(), now);
            if in_task {
                slot::write_scope_slot(dir, ev.agent.as_deref().unwrap_or_default(), &s)
            } else {
                slot::write_slot(dir, &s)
            }
        }
    };
    journal_result.and(slot_result)
}
