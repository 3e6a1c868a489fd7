//! The delivery ledger under a randomized simulation: several chats of all
//! four hosts (subagents, compactions, session ends, resumes, `/clear`)
//! whose hooks run through the real `leanctx hook` binary, and one MCP
//! server shared by all of them that asks [`ReadPath::stub`] on every read
//! with the result it would send (one call per read: the stub question,
//! and the delivery recorded when the stub is withheld).
//!
//! The hosts deliver results the way they really do (docs/DELIVERY.md):
//!
//! - Claude Code: a result over 50,000 characters reaches the model as a
//!   ~2 KB `<persisted-output>` preview; `PostToolBatch` shows what the
//!   model got (text blocks when whole, the preview string when not),
//!   `PostToolUse` the server's copy. An interrupted call (Esc while the
//!   server works) fires `PreToolUse` and no post hook: the model never got
//!   it, though the server delivered it. Codex calls are interrupted too.
//! - Codex: a result over the output budget is middle-truncated (the
//!   budget is 2,500 tokens, or 10,000 from `config.toml` in some runs; the
//!   true cut is modeled at 4.79 characters a token, what Codex's own cuts
//!   keep); `PostToolUse` shows the full server copy. `_meta.windowId` is
//!   `<session>:<n>`, one up per compaction. A compaction right after a call
//!   can swallow its result (`PostToolUse` → `PreCompact` → `PostCompact` →
//!   `SessionStart(compact)`), and in some runs the compaction hooks never
//!   fire at all (untrusted or failed hooks) while the windowId still moves.
//! - Cursor: `beforeMCPExecution` (bare tool name, `tool_input` as JSON
//!   text) before the server call, `afterMCPExecution` (`result_json`) and
//!   `postToolUse` (`MCP:<tool>`, `tool_output`) after; the server gets no
//!   call id. What its model receives is modeled as whole up to
//!   [`CURSOR_WHOLE_UP_TO`] (50,000 bytes, like Claude Code), cut beyond.
//! - CodeBuddy: Claude-like payloads (`PreToolUse`, `PostToolUse` with
//!   `tool_response`), no call id for the server; its model gets a preview
//!   past 50,000 characters like Claude Code's.
//! - Claude Code withdraws results without a hook (docs/DELIVERY.md §8):
//!   a rewind to an earlier prompt (the context goes back to what it was
//!   then; the transcript gets `last-prompt` `rewound` with the prompt's
//!   uuid), and, in most chats, the idle cut: the first prompt after more
//!   than 3,900 s of silence clears a share of the main window's results
//!   (a `tool_results_cut` record naming every copy of them: a cut takes
//!   the oldest results). At such a return the host's writes are late in
//!   half the cases: the prompt line, the cut record and the first
//!   request's answers are on disk neither at `UserPromptSubmit` nor at the
//!   turn's first `PreToolUse` (docs/DELIVERY.md §8: the live `idle-cut`
//!   run; the host drains its write queue every 100 ms, in order). A real
//!   thread, the host's writer ([`LateWriter`]), appends them, in that
//!   order and in one write, while the turn's first question waits for
//!   them, 11–78 ms after it began (the waits measured on the real host,
//!   §8; a delay drawn from a hash of the time); a question that does not
//!   wait is never written under, and its lines reach the disk after it.
//!   One return in 16 ([`LATE_TAIL_IN`]) is a pessimistic tail: its lines
//!   come only after the question, which waits its whole 1 s for them
//!   (none of the 24 measured questions did). Each answer carries the
//!   `context_management` Claude
//!   Code stores (null, or the cut results in force). The user steps away now and
//!   then (after a Claude chat's step): every chat between steps falls
//!   silent for just under the product's 3,840 s, between it and the
//!   host's 3,900 s, or past (up to 3 h), and each Claude chat comes back
//!   with a prompt. A resume (`--resume`) is another host process, whose
//!   window is its own (its `SessionStart` names it by `CLAUDE_PID`);
//!   `SessionStart(resume)` carries `seconds_since_last_response`. A
//!   second terminal may also resume a session while its first process
//!   runs: two processes of one session, each with its own context (the
//!   history as it stood, then its own), both writing the one transcript.
//!   The transcript is a real file with the prompts and MCP tool uses the
//!   witness places a rewind by, and a `compact_boundary` at each Claude
//!   compaction, as the host writes one: after the compaction's hooks, with
//!   its summary line under it carrying the compacting process's prompt id
//!   (each process makes one at each prompt, or at a `/compact` outside a
//!   turn, and its hooks name it as `prompt_id`: docs/DELIVERY.md §8, "One
//!   session, two processes"). The oracle knows what the host withdrew
//!   (a rewind restores the window of its prompt; an idle cut removes the
//!   results it cut) and never asks the product.
//! - Claude Code compactions: the main thread compacts while subagents run
//!   (background subagents; the main agent reads meanwhile), and only the
//!   main window is replaced: a subagent's context is its own (measured on
//!   the real host, docs/DELIVERY.md §8, "Subagents and compaction"). A
//!   variant (`claude_sub_compaction`) also has subagents compact their
//!   own context: hooks with its `agent_id`, only its window replaced.
//!   Each Claude Code subagent has its own transcript, written where the
//!   host keeps it (`<session>/subagents/agent-<id>.jsonl`, lines marked
//!   `isSidechain` with its `agentId`, as in the fixtures
//!   `subagent-main-compact` and `subagent-own-compact`): its prompt as it
//!   starts, each MCP tool use before the call, and its own compaction's
//!   boundary and summary. A variant (`claude_sub_unwritten`) has some
//!   subagents whose transcript the host never writes: their stubs must be
//!   withheld (`transcript-unavailable`).
//! - Hooks that never fire: a share of post hooks is dropped, and a share of
//!   the other hook processes die before they record (not compaction hooks:
//!   a lost one cannot be detected without a window id; and in the main
//!   variant not the pre hooks of Cursor and CodeBuddy, nor their calls
//!   interrupted, nor Cursor task hooks without `CURSOR_TASK_ID`: each
//!   triggers an open bug, see the ignored tests at the end).
//!
//! The oracle knows what each context window holds, independently of any
//! hook: per file, the version of the window's *latest* copy of that file
//! when that copy arrived whole. A stub for file F at version V to caller X
//! is correct iff X's window's latest copy of F is V, received whole, in the
//! same window (not compacted or swallowed since). A window whose latest
//! copy is of a newer version makes a stub of the older one wrong, and a
//! preview, a truncation or a swallowed result of a newer version hides the
//! older whole copy too (the model's latest view of F is then not whole).
//! The server always asks at the file's current version, so an older-version
//! question never arises (and the product never allows one anyway).
//!
//! Execution is sequential and seeded (the host's writer thread above
//! writes only while the question it serves sleeps between its looks, so
//! what any question reads does not depend on timing, short of the writer
//! being starved past the question's 1 s wait, which the run reports and
//! fails on): each chat acts at its own virtual
//! times (milliseconds between the hooks and the server call of one step,
//! seconds to hours between steps), and the chats interleave at the level
//! of single hooks and server calls (a Cursor chat's `beforeMCPExecution`
//! can land between another chat's hook and server call). So
//! `LEANCTX_SEED=S` replays a run bit for bit: the same decisions, verdicts,
//! reason labels and counts (`ledger_simulation_replays_bit_for_bit`). A
//! label once moved with the trim point, which moved with the width of the
//! hook processes' pids in their call keys; keys now pad the pid.
//!
//! Episodes drawn from a stream of their own (so the schedule stays as it
//! was): a chat's server with scoping disabled (`scope-disabled`, counted
//! apart and not judged: the user switched scoping off), and questions
//! asked while the state cannot be read (`state-unavailable`).
//!
//! `cargo test --test it sim_ledger -- --nocapture` runs the 16 fixed seeds
//! and one fresh seed it prints (× 350 steps; two seeds at a time) and
//! asserts 0 wrong stubs on each, the issue's savings floors per host and
//! every ledger reason on the fixed seeds' total. `LEANCTX_STRESS=1`: 16
//! fixed + 184 fresh seeds × 700 steps, floors on the total too.
//! `LEANCTX_SIM_SEEDS=N` sets the number of fresh seeds; with
//! `LEANCTX_SEED=S` it replays seeds S..S+N (default 1) instead;
//! `LEANCTX_SIM_STEPS=N` sets the steps per seed; `LEANCTX_SIM_TRACE=1`
//! prints every hook and call. Each seed's line ends with every host's
//! allowed/safe stubs, wrong ones and safe ones lost to the size rule, so
//! a run's per-seed spread can be read off (RELIABILITY.md, "Seed bases").

use crate::rng::{self, Rng};
use crate::sim::{Fault, apply, restore};
use crate::support::Sandbox;
use leanctx::identity::caller::ScopeEnv;
use leanctx::identity::mcp_call::{McpCall, PerCall};
use leanctx::identity::readpath::ReadPath;
use leanctx::state::ledger;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The files of each project.
const FILES: [&str; 24] = [
    "a.rs",
    "b.rs",
    "c.rs",
    "d.rs",
    "e.rs",
    "f.rs",
    "g.rs",
    "h.rs",
    "i.rs",
    "j.rs",
    "k.rs",
    "l.rs",
    "m.rs",
    "n.rs",
    "o.rs",
    "p.rs",
    "lib.rs",
    "main.rs",
    "README.md",
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
    "mod.rs",
    "x.json",
];

/// Claude Code (and CodeBuddy): a result over this many characters reaches
/// the model as a `<persisted-output>` preview.
const CLAUDE_PREVIEW_OVER: usize = 50_000;
/// The preview keeps this much of the result.
const CLAUDE_PREVIEW_BYTES: usize = 2_000;
/// Cursor (modeled, not verified): its model receives a result whole up to
/// this size, cut beyond. The product counts only 10,000 bytes as whole.
const CURSOR_WHOLE_UP_TO: usize = 50_000;
/// Codex's true cut: characters per 1,000 tokens of budget it keeps.
const CODEX_TRUE_CHARS_PER_1000_TOKENS: usize = 4_790;

/// A safe stub withheld because the host acknowledged the result but its
/// size rule counts it as cut (the label in a host's `lost` counts).
const SIZE_RULE_LOSS: &str = "unconfirmed: acknowledged, over the size rule";

/// Projects the chats work in (paths, and so fingerprints, differ between
/// projects; chats in one project read the same files).
const PROJECTS: u32 = 3;

/// Fixed seeds every CI run replays (plus one fresh seed).
const FIXED_SEEDS: [u64; 16] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum H {
    Claude,
    Codex,
    Cursor,
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

    fn name(self) -> &'static str {
        match self {
            H::Cursor => "Cursor",
            H::Claude => "Claude Code",
            H::Codex => "Codex",
            H::CodeBuddy => "CodeBuddy",
        }
    }

    /// Does the model receive a result of `len` bytes whole?
    fn whole(self, len: usize, codex_budget: u64) -> bool {
        match self {
            H::Claude | H::CodeBuddy => len <= CLAUDE_PREVIEW_OVER,
            H::Cursor => len <= CURSOR_WHOLE_UP_TO,
            H::Codex => len <= codex_budget as usize * CODEX_TRUE_CHARS_PER_1000_TOKENS / 1000,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Knobs {
    /// A post hook (PostToolBatch, PostToolUse, afterMCPExecution,
    /// postToolUse) never fires.
    drop_post: f64,
    /// Any other hook process (compaction hooks excepted) dies before it
    /// records.
    fail_hook: f64,
    /// Whether the pre hook of a Cursor or CodeBuddy call may die too (its
    /// call then claims another chat's record: see
    /// `a_cursor_call_whose_hook_died_claims_a_claude_record_and_its_stub`).
    fail_fingerprint_pre: bool,
    /// A call is interrupted: the server delivers, the model never gets it,
    /// no post hook fires. Claude Code.
    interrupt_claude: f64,
    /// The same on Codex.
    interrupt_codex: f64,
    /// The same on Cursor and CodeBuddy (whose calls the ledger names by
    /// fingerprint: see `a_subagents_acknowledgement_confirms_the_parents_interrupted_delivery`).
    interrupt_fingerprint: f64,
    /// A Codex compaction right after a read (the result is swallowed).
    codex_swallow: f64,
    /// Share of runs whose Codex compaction hooks never fire.
    codex_no_compaction_hooks: f64,
    /// Share of runs whose Codex config sets `tool_output_token_limit = 10000`.
    codex_big_budget: f64,
    /// A Cursor subagent hook without `CURSOR_TASK_ID` (unreliable: docs/HOST-FACTS.md §3).
    cursor_no_task_env: f64,
    /// A chat whose MCP server runs with `LEAN_CTX_CONVERSATION_SCOPE=0`
    /// (its own server; every stub allowed `scope-disabled`, counted apart:
    /// the user switched scoping off). Drawn from the episode stream.
    disabled_server: f64,
    /// The server asks while the state cannot be read (the data dir opened
    /// to everyone, or the journal replaced by a directory, back before the
    /// next hook). Drawn from the episode stream.
    faults: f64,
    /// A Claude Code prompt comes after a rewind to an earlier prompt of the
    /// context (no hook; the transcript records it). Episode stream.
    rewind: f64,
    /// Share of Claude Code chats whose host clears old results at the first
    /// prompt after more than 3,900 s of silence (the flag-gated idle cut),
    /// and the share of the window's results it clears. Episode stream.
    idle_cut_chats: f64,
    idle_cut_share: f64,
    /// A Claude Code step is a new turn (episode stream, besides the main
    /// schedule's prompts).
    claude_turn: f64,
    /// A Claude Code chat (no subagent running) falls silent for about the
    /// host's idle threshold or longer after a step, and comes back with a
    /// prompt. Episode stream.
    long_silence: f64,
    /// A second terminal resumes a running Claude Code session (`--resume`):
    /// two host processes of one session, each with its own context.
    /// Episode stream.
    second_process: f64,
    /// A Claude Code compaction is a running subagent's own (its hooks
    /// carry its `agent_id`; its boundary goes to its own transcript, not
    /// the session's; only its context is summarised: docs/DELIVERY.md §8,
    /// "Subagents and compaction"). 0 in the main variant (no draw: its
    /// schedule is unchanged).
    claude_sub_compaction: f64,
    /// Share of Claude Code subagents whose own transcript the host never
    /// writes where it keeps them (a host that keeps it elsewhere, or
    /// writes none): their stubs are withheld (`transcript-unavailable`).
    /// 0 in the main variant (no draw).
    claude_sub_unwritten: f64,
    /// Share of the reads of a chat with a subagent running (not Cursor's,
    /// always a subagent's) that a subagent makes. Main stream (one draw
    /// whatever its value).
    sub_read: f64,
}

const KNOBS: Knobs = Knobs {
    drop_post: 0.02,
    fail_hook: 0.01,
    fail_fingerprint_pre: false,
    interrupt_claude: 0.03,
    interrupt_codex: 0.02,
    interrupt_fingerprint: 0.0,
    codex_swallow: 0.05,
    codex_no_compaction_hooks: 0.3,
    codex_big_budget: 0.3,
    cursor_no_task_env: 0.0,
    disabled_server: 0.06,
    faults: 0.01,
    rewind: 0.3,
    claude_turn: 0.12,
    idle_cut_chats: 0.7,
    idle_cut_share: 0.6,
    long_silence: 0.05,
    second_process: 0.04,
    claude_sub_compaction: 0.0,
    claude_sub_unwritten: 0.0,
    sub_read: 0.4,
};

#[derive(Default, Debug, Clone, PartialEq, Eq)]
struct HostStats {
    questions: u64,
    safe: u64,
    safe_allowed: u64,
    wrong: u64,
    reasons: BTreeMap<&'static str, u64>,
    /// Why safe stubs were withheld.
    lost: BTreeMap<&'static str, u64>,
    recorded: u64,
    not_recorded: u64,
    /// Calls resolved exactly to another caller than their own.
    misresolved: u64,
    /// Bytes of the safe stubs' content, and of those allowed.
    safe_bytes: u64,
    safe_allowed_bytes: u64,
}

#[derive(Default, Debug, Clone, PartialEq, Eq)]
struct Stats {
    seeds: u64,
    /// Cursor task calls that no record can tell from the parent's (the
    /// task's start hook died and its hooks lack CURSOR_TASK_ID).
    unknowable: u64,
    hooks: u64,
    hooks_failed: u64,
    posts_dropped: u64,
    compactions: u64,
    /// Of them, a Claude Code subagent's own.
    sub_compactions: u64,
    /// Questions of Claude Code subagents whose transcript the host never
    /// wrote ([`Knobs::claude_sub_unwritten`]), the safe ones among them,
    /// and those allowed (must be none).
    unwritten_questions: u64,
    unwritten_safe: u64,
    unwritten_allowed: u64,
    /// Of them, withheld `transcript-unavailable`, and of the safe ones.
    unwritten_unavailable: u64,
    unwritten_safe_unavailable: u64,
    /// Each of them allowed: the answer.
    unwritten_detail: Vec<String>,
    swallowed: u64,
    interrupted: u64,
    subagents: u64,
    ends: u64,
    version_bumps: u64,
    hosts: BTreeMap<H, HostStats>,
    wrong_detail: Vec<String>,
    misresolved_detail: Vec<String>,
    /// Questions a scoping-disabled server answered, and the unsafe stubs
    /// among them (not judged wrong, not in the savings: the user's choice,
    /// lean-ctx's legacy answer).
    disabled: u64,
    disabled_unsafe: u64,
    /// Questions asked while the state could not be read.
    faults: u64,
    /// Claude Code withdrawals without a hook: rewinds, idle cuts (and the
    /// results they cut), resumes in a new host process.
    rewinds: u64,
    idle_cuts: u64,
    cut_results: u64,
    new_processes: u64,
    /// Silences of a Claude chat near or past the idle threshold, by band:
    /// under the product's 3,840 s, between it and the host's 3,900 s, past.
    silences: [u64; 3],
    /// Second processes of a running Claude session, and the questions
    /// asked while both ran (a delivery in one never backs the other).
    second_processes: u64,
    two_process_questions: u64,
    /// A return's queued lines written by the host's writer while a
    /// question waited for them, and returns whose lines came only after
    /// the question (the pessimistic tail: [`LATE_TAIL_IN`]).
    late_written: u64,
    late_tail: u64,
    /// A fold of every decision and oracle verdict, to check replays.
    trace: u64,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.seeds += o.seeds;
        self.hooks += o.hooks;
        self.hooks_failed += o.hooks_failed;
        self.posts_dropped += o.posts_dropped;
        self.compactions += o.compactions;
        self.sub_compactions += o.sub_compactions;
        self.unwritten_questions += o.unwritten_questions;
        self.unwritten_safe += o.unwritten_safe;
        self.unwritten_allowed += o.unwritten_allowed;
        self.unwritten_unavailable += o.unwritten_unavailable;
        self.unwritten_safe_unavailable += o.unwritten_safe_unavailable;
        self.swallowed += o.swallowed;
        self.interrupted += o.interrupted;
        self.subagents += o.subagents;
        self.ends += o.ends;
        self.version_bumps += o.version_bumps;
        self.disabled += o.disabled;
        self.disabled_unsafe += o.disabled_unsafe;
        self.faults += o.faults;
        self.rewinds += o.rewinds;
        self.idle_cuts += o.idle_cuts;
        self.unknowable += o.unknowable;
        self.cut_results += o.cut_results;
        self.new_processes += o.new_processes;
        for (a, b) in self.silences.iter_mut().zip(o.silences) {
            *a += b;
        }
        self.second_processes += o.second_processes;
        self.two_process_questions += o.two_process_questions;
        self.late_written += o.late_written;
        self.late_tail += o.late_tail;
        for (h, s) in &o.hosts {
            let m = self.hosts.entry(*h).or_default();
            m.questions += s.questions;
            m.safe += s.safe;
            m.safe_allowed += s.safe_allowed;
            m.wrong += s.wrong;
            m.recorded += s.recorded;
            m.not_recorded += s.not_recorded;
            m.misresolved += s.misresolved;
            m.safe_bytes += s.safe_bytes;
            m.safe_allowed_bytes += s.safe_allowed_bytes;
            for (k, v) in &s.reasons {
                *m.reasons.entry(k).or_default() += v;
            }
            for (k, v) in &s.lost {
                *m.lost.entry(k).or_default() += v;
            }
        }
        self.wrong_detail.extend(o.wrong_detail.iter().cloned());
        self.unwritten_detail.extend(o.unwritten_detail.iter().cloned());
        self.misresolved_detail.extend(o.misresolved_detail.iter().cloned());
        self.trace = self.trace.rotate_left(7) ^ o.trace;
    }

    fn wrong(&self) -> u64 {
        self.hosts.values().map(|h| h.wrong).sum()
    }

    fn reasons(&self) -> BTreeMap<&'static str, u64> {
        let mut m = BTreeMap::new();
        for h in self.hosts.values() {
            for (k, v) in &h.reasons {
                *m.entry(*k).or_default() += v;
            }
        }
        m
    }

    fn fold(&mut self, x: u64) {
        self.trace = (self.trace ^ x).wrapping_mul(0x100_0000_01b3).rotate_left(5);
    }
}

/// Per file: the version of the window's latest copy, when it arrived whole.
type Window = HashMap<&'static str, u32>;

#[derive(Debug)]
struct Sub {
    raw: String,
    window: Window,
    /// Cursor 3.x: the subagent's hooks carry a conversation id of its own
    /// (the captures), not the parent's with `CURSOR_TASK_ID` (lean-ctx's
    /// model). Half of the Cursor subagents run each way.
    fresh: Option<String>,
    /// Claude Code: the host writes its own transcript
    /// (`<session>/subagents/agent-<id>.jsonl`), as 2.1.328 does.
    writes: bool,
    /// Lines written to it so far (their uuids).
    lines: u64,
}

#[derive(Debug, Clone)]
enum Kind {
    Pre,
    Post,
    Compaction,
    Other,
}

#[derive(Debug)]
enum Op {
    Hook {
        event: &'static str,
        extra: Value,
        kind: Kind,
    },
    Pre(usize),
    Serve(usize),
    /// The host's per-call post hooks of a read.
    Post(usize),
    /// Claude Code's PostToolBatch for these reads.
    Batch(Vec<usize>),
    /// The compaction itself (the oracle's window is replaced).
    Compact,
    /// A Claude Code subagent's own compaction: its window alone is replaced.
    CompactSub(String),
    /// Claude Code: a prompt (its hook; an idle cut first when due).
    Prompt,
    /// Claude Code: a rewind to the chat's k-th remembered prompt.
    Rewind(usize),
    /// Claude Code: this chat is a second process of chat `.0`'s session,
    /// starting now (`--resume` while it runs): it loads the history as it
    /// stands, and its `SessionStart(resume)` fires.
    Resume(usize),
}

#[derive(Debug)]
struct Read {
    id: String,
    file: &'static str,
    /// The acting subagent's raw id (None: the main agent).
    sub: Option<String>,
    task_env: Option<String>,
    interrupted: bool,
    /// What the server returned (a stub or the content).
    sent: String,
    /// The model got `sent` whole.
    whole: bool,
}

#[derive(Debug)]
struct Chat {
    host: H,
    id: String,
    ended: bool,
    window: Window,
    subs: Vec<Sub>,
    /// Codex: compactions so far (`_meta.windowId` = `<id>:<n>`).
    win_n: u64,
    /// The project it works in (chats may share one).
    project: u32,
    /// When it acts next (virtual ms).
    ready: u64,
    /// Its MCP server runs with `LEAN_CTX_CONVERSATION_SCOPE=0` (its own).
    disabled: bool,
    /// That server's own cache: what it delivered (file, version).
    legacy: std::collections::HashSet<(&'static str, u32)>,
    /// Files it read lately (agents re-read their working set).
    history: Vec<&'static str>,
    queue: VecDeque<Op>,
    reads: Vec<Read>,
    /// Claude Code: the prompts of this context, each with the main window
    /// and who delivered each of its files as they stood then (a rewind
    /// to it restores them).
    prompts: Vec<(String, Window, Held)>,
    /// Claude Code: the read whose result is the main window's copy.
    /// Every read that gave it a whole copy still there, oldest first (a
    /// cut takes the oldest results: one that takes a copy takes the
    /// older copies of the file too, docs/DELIVERY.md §8).
    held: Held,
    /// When the chat last acted (virtual ms): the host's idle clock.
    last_active: u64,
    /// Its host clears old results after a long silence.
    idle_cuts: bool,
    /// Transcript lines the host has not written yet (its writes are
    /// queued), in order; `queue_lines`: lines now go behind them.
    queued: Vec<String>,
    queue_lines: bool,
    /// Results its cut records replaced that are still in force (every
    /// answer's `context_management.client_cut_tool_uses`).
    cuts_in_force: u64,
    /// Claude Code: its host process (a pseudo pid; a resume starts another).
    proc: u32,
    /// Back from a long silence: the next step is a prompt.
    returning: bool,
    /// The user stepped away: once this chat's step is done (and its
    /// subagents stopped), it is silent until then (virtual ms; 0: not).
    away_until: u64,
    /// Claude Code: the process's current prompt id (made at each prompt,
    /// or by a manual `/compact` outside a turn), which its hooks name as
    /// `prompt_id` and its user lines as `promptId`.
    prompt_id: Option<String>,
    /// Its session has had two processes at once. Such a session is not
    /// resumed again (a new chat starts instead): which process's chain a
    /// later `--resume` loads is not known (RELIABILITY.md, "What the
    /// suites do not prove").
    two_processes: bool,
}

/// Per file, the reads whose whole copies the main window holds.
type Held = HashMap<&'static str, Vec<String>>;

impl Chat {
    /// A host process's chat as it starts: an empty context, nothing read,
    /// queued or cut yet (a new chat, or a second process of a session).
    #[allow(clippy::too_many_arguments)]
    fn fresh(
        host: H,
        id: String,
        project: u32,
        ready: u64,
        disabled: bool,
        last_active: u64,
        idle_cuts: bool,
        proc: u32,
    ) -> Chat {
        Chat {
            host,
            id,
            ended: false,
            window: Window::new(),
            subs: Vec::new(),
            win_n: 0,
            project,
            ready,
            disabled,
            legacy: Default::default(),
            history: Vec::new(),
            queue: VecDeque::new(),
            reads: Vec::new(),
            prompts: Vec::new(),
            held: HashMap::new(),
            last_active,
            idle_cuts,
            queued: Vec::new(),
            queue_lines: false,
            cuts_in_force: 0,
            proc,
            returning: false,
            away_until: 0,
            prompt_id: None,
            two_processes: false,
        }
    }
}

struct World {
    sb: Sandbox,
    rng: Rng,
    /// The episodes' own stream (servers with scoping disabled, unreadable
    /// state), so they leave the main schedule as it was.
    episodes: Rng,
    seed: u64,
    t: u64,
    ids: u64,
    rpc_id: u64,
    knobs: Knobs,
    codex_hooks: bool,
    codex_budget: u64,
    /// Per project and file: the current version, and each version's size.
    versions: HashMap<(u32, &'static str), u32>,
    sizes: HashMap<(u32, &'static str, u32), usize>,
    chats: Vec<Chat>,
    st: Stats,
    trace: bool,
    /// Cursor subagents whose `subagentStart` hook died: with no
    /// `CURSOR_TASK_ID` either, their calls are the parent's by every record
    /// leanctx has (RELIABILITY.md, "What the suites do not prove").
    lost_starts: std::collections::HashSet<String>,
    /// Claude Code: each session's history as its last process left it,
    /// once that process's slot went on to another session: a second
    /// process resuming it later loads that ([`Op::Resume`]).
    left: HashMap<String, History>,
}

/// What a Claude Code process loads at a resume: the main window, who
/// delivered each file, the prompts, the files read lately, the last
/// response, the cut results in force.
type History = (Window, Held, Vec<(String, Window, Held)>, Vec<&'static str>, u64, u64);

/// One return in this many has its queued lines reach the disk only
/// after the question (which then waits the product's whole 1 s for them):
/// a pessimistic tail. Measured on the real host, none of 24 questions
/// waited that long (docs/DELIVERY.md §8); its writer is a timer that a
/// loaded machine can starve.
const LATE_TAIL_IN: u64 = 16;

/// Claude Code's transcript writer for a return's queued lines: a real
/// thread that appends them, in order and in one write (the host drains
/// its queue whole, docs/DELIVERY.md §8), `delay` after the question
/// began, and only while the question waits for the transcript: asleep
/// between its looks (`CATCH_UP_POLL`), read from `/proc`. A question that
/// does not wait (no stub to back) is never written under, so what it
/// reads does not depend on the machine's speed, and the replay stays
/// exact; its lines are written after it, as before. Linux only (`/proc`);
/// elsewhere every return's lines come after the question.
struct LateWriter {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<bool>,
}

impl LateWriter {
    #[cfg(target_os = "linux")]
    fn start(path: std::path::PathBuf, lines: String, delay: std::time::Duration) -> Option<LateWriter> {
        use std::sync::atomic::Ordering;
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = done.clone();
        let began = std::time::Instant::now();
        let thread = std::thread::spawn(move || {
            let sleeping = [libc::SYS_clock_nanosleep.to_string(), libc::SYS_nanosleep.to_string()];
            let asleep = || {
                std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall"))
                    .is_ok_and(|s| s.split(' ').next().is_some_and(|n| sleeping.iter().any(|x| x == n)))
            };
            loop {
                if stop.load(Ordering::Acquire) {
                    return false;
                }
                if began.elapsed() >= delay && asleep() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(lines.as_bytes()).unwrap();
            true
        });
        Some(LateWriter { done, thread })
    }

    #[cfg(not(target_os = "linux"))]
    fn start(_: std::path::PathBuf, _: String, _: std::time::Duration) -> Option<LateWriter> {
        None
    }

    /// The question answered: stop waiting; whether the lines were written.
    fn finish(self) -> bool {
        self.done.store(true, std::sync::atomic::Ordering::Release);
        self.thread.join().unwrap()
    }
}

fn size_draw(rng: &mut Rng) -> usize {
    // Most reads are small (78 % under 10 KB); some 10–50 KB (15 %); some
    // over Claude's 50,000 (7 %).
    (match rng.below(100) {
        0..=77 => rng.range(300, 9_999),
        78..=92 => rng.range(10_000, 50_000),
        _ => rng.range(50_001, 150_000),
    }) as usize
}

/// The text of `file`@`ver`, `len` bytes.
fn content(file: &str, ver: u32, len: usize) -> String {
    let mut s = String::with_capacity(len + 64);
    let mut i = 0;
    while s.len() < len {
        s.push_str(&format!("// {file} v{ver} line {i}: fn f{i}() {{ let x = {i}; }}\n"));
        i += 1;
    }
    s.truncate(len);
    s
}

fn blocks(text: &str) -> Value {
    json!([{"type": "text", "text": text}])
}

impl World {
    fn uid(&mut self, prefix: &str) -> String {
        self.ids += 1;
        format!("{prefix}{:x}x{}", self.seed & 0xffff, self.ids)
    }

    fn tick(&mut self, lo: u64, hi: u64) -> u64 {
        self.t += self.rng.range(lo, hi);
        self.t
    }

    /// Run one hook of chat `c` now, unless it is dropped (a post hook) or
    /// its process dies before recording. `agent` is the acting subagent.
    fn hook(&mut self, c: usize, event: &str, mut extra: Value, kind: Kind, task_env: Option<&str>) {
        let t = self.tick(1, 3);
        // Claude Code: a main-thread compaction outside any turn of its
        // process is a `/compact`, which gets a prompt id of its own.
        if self.chats[c].host == H::Claude
            && event == "PreCompact"
            && extra.get("agent_id").is_none()
            && self.chats[c].prompt_id.is_none()
        {
            self.chats[c].prompt_id = Some(self.uid("pid-"));
            extra["trigger"] = json!("manual");
        }
        match kind {
            Kind::Post if self.rng.chance(self.knobs.drop_post) => {
                self.st.posts_dropped += 1;
                if self.trace {
                    eprintln!("t={t} {:?} {} DROPPED hook {event}", self.chats[c].host, self.chats[c].id);
                }
                return;
            }
            Kind::Pre if matches!(self.chats[c].host, H::Cursor | H::CodeBuddy) && !self.knobs.fail_fingerprint_pre => {
            }
            Kind::Pre | Kind::Other if self.rng.chance(self.knobs.fail_hook) => {
                self.st.hooks_failed += 1;
                if event == "subagentStart"
                    && let Some(raw) = extra.get("subagent_id").and_then(Value::as_str)
                {
                    self.lost_starts.insert(raw.to_string());
                }
                return;
            }
            _ => {}
        }
        let chat = &self.chats[c];
        if self.trace {
            let mut shown = extra.to_string();
            shown.truncate(200);
            eprintln!("t={t} {:?} {} hook {event} {shown} (proc {})", chat.host, chat.id, chat.proc);
        }
        let mut p = json!({"hook_event_name": event, "cwd": "/sim/project",
            "transcript_path": format!("/sim/{}.jsonl", chat.id)});
        // Claude Code's transcript is a second witness the read path reads:
        // a real file.
        if chat.host == H::Claude {
            p["transcript_path"] = json!(self.transcript(c));
        }
        // `conv:<id>`: a Cursor 3.x subagent's hook, under its own conversation.
        let own_conv = task_env.and_then(|t| t.strip_prefix("conv:"));
        let task_env = task_env.filter(|t| !t.starts_with("conv:"));
        if let Some(conv) = own_conv {
            p["conversation_id"] = json!(conv);
            p["transcript_path"] = Value::Null;
        } else if chat.host == H::Cursor {
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
        // Claude Code's hooks name the process's current prompt (a fresh
        // process's start has none yet).
        let fresh_start = event == "SessionStart" && p["source"] != "compact";
        if chat.host == H::Claude
            && !fresh_start
            && let Some(id) = &chat.prompt_id
        {
            p["prompt_id"] = json!(id);
        }
        let mut run = self.sb.hook(chat.host.cli(), p.to_string()).env("LEAN_CTX_NOW_MS", t.to_string());
        // Claude Code names its process to its hooks.
        if chat.host == H::Claude {
            run = run.env("CLAUDE_PID", chat.proc.to_string());
        }
        if let Some(task) = task_env {
            run = run.env("CURSOR_TASK_ID", task);
        }
        let o = run.run();
        assert_eq!(o.code, 0, "seed {}: hook {event} exit {}: {}", self.seed, o.code, o.stderr);
        assert!(o.stderr.is_empty(), "seed {}: hook {event}: {}", self.seed, o.stderr);
        self.st.hooks += 1;
    }

    /// Append one line to a Claude chat's transcript (behind the queued
    /// ones while the host's writes are queued).
    fn write_line(&mut self, c: usize, line: &Value) {
        use std::io::Write;
        if self.trace {
            let mut shown = line.to_string();
            shown.truncate(160);
            eprintln!(
                "t={} line {} {}: {shown}",
                self.t,
                self.chats[c].id,
                if self.chats[c].queue_lines { "queued" } else { "written" }
            );
        }
        if self.chats[c].queue_lines {
            self.chats[c].queued.push(line.to_string());
            return;
        }
        let mut f = std::fs::OpenOptions::new().append(true).open(self.transcript(c)).unwrap();
        writeln!(f, "{line}").unwrap();
    }

    /// Plan a Claude Code turn: sometimes a rewind (no hook) to an earlier
    /// prompt of this context first, then the prompt.
    fn claude_turn(&mut self, c: usize, nsubs: usize) {
        let n = self.chats[c].prompts.len();
        if n > 0 && nsubs == 0 && self.episodes.chance(self.knobs.rewind) {
            let k = self.episodes.below(n as u64) as usize;
            self.push(c, Op::Rewind(k));
        }
        self.push(c, Op::Prompt);
    }

    /// A Claude Code prompt. After more than 3,900 s of silence a chat
    /// whose host cuts clears a share of the main window's results: the
    /// oracle's window loses them at once. At such a return the host's
    /// writes are queued in half the cases (docs/DELIVERY.md §8: in the live
    /// run nothing of the turn was on disk at its first `PreToolUse`; in the
    /// resumed run the cut record was): the prompt line, the cut record and
    /// the first request's answers then reach the disk in that order while
    /// the turn's first question waits for them, or after it
    /// ([`World::late_writer`]).
    fn prompt(&mut self, c: usize, idle_since: u64) {
        // An earlier turn's queued writes reached the disk long before
        // this prompt (within the turn, in the study's runs).
        self.flush(c);
        let now = self.t;
        let host_return = now.saturating_sub(idle_since) > 3_900_000;
        let mut cut = None;
        if self.chats[c].idle_cuts && host_return {
            let mut held: Vec<(&'static str, Vec<String>)> =
                self.chats[c].held.iter().map(|(f, i)| (*f, i.clone())).collect();
            held.sort();
            let mut ids = Vec::new();
            for (file, copies) in held {
                if self.episodes.chance(self.knobs.idle_cut_share) {
                    let chat = &mut self.chats[c];
                    chat.window.remove(file);
                    chat.held.remove(file);
                    ids.extend(copies);
                }
            }
            if !ids.is_empty() {
                self.st.idle_cuts += 1;
                self.st.cut_results += ids.len() as u64;
                self.chats[c].cuts_in_force += ids.len() as u64;
                cut = Some(json!({"type": "attachment", "attachment": {"type": "tool_results_cut", "callIds": ids,
                    "standIn": "[Old tool result content cleared]"}}));
            }
        }
        // The process makes the prompt's id as it is submitted.
        self.chats[c].prompt_id = Some(self.uid("pid-"));
        self.hook(c, "UserPromptSubmit", json!({"prompt": "SECRET-PROMPT"}), Kind::Other, None);
        // Late in half the cases: drawn from the episode stream after a
        // cut (as before returns without one were modeled), else from the
        // time, so the fixed seeds' episodes stay as they were.
        let late = match &cut {
            Some(_) => !self.episodes.chance(0.5),
            None => host_return && (now ^ self.seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 63 == 1,
        };
        self.chats[c].queue_lines |= late;
        let uuid = self.uid("prompt-");
        let chat = &self.chats[c];
        let line = json!({"type": "user", "uuid": uuid, "promptId": chat.prompt_id,
            "message": {"role": "user", "content": "SECRET-PROMPT"}});
        let snapshot = (uuid, chat.window.clone(), chat.held.clone());
        self.write_line(c, &line);
        self.chats[c].prompts.push(snapshot);
        if let Some(cut) = cut {
            self.write_line(c, &cut);
        }
    }

    /// The host's queued lines reach the disk.
    fn flush(&mut self, c: usize) {
        let chat = &mut self.chats[c];
        chat.queue_lines = false;
        for line in std::mem::take(&mut chat.queued) {
            self.write_line(c, &serde_json::from_str(&line).unwrap());
        }
    }

    /// The host's writer for chat `c`'s queued lines during the next
    /// question ([`LateWriter`]), after a delay in the measured 11–78 ms;
    /// none when nothing is queued, or for one return in [`LATE_TAIL_IN`]
    /// (the pessimistic tail: its lines come after the question). Both
    /// drawn from a hash of the time, so the episodes stay as they were.
    fn late_writer(&mut self, c: usize) -> Option<LateWriter> {
        if self.chats[c].queued.is_empty() {
            return None;
        }
        let h = (self.t ^ self.seed.rotate_left(23)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        if (h >> 32).is_multiple_of(LATE_TAIL_IN) {
            self.st.late_tail += 1;
            return None;
        }
        let delay = 11 + (h >> 40) % 68;
        let lines: String = self.chats[c].queued.iter().map(|l| format!("{l}\n")).collect();
        if self.trace {
            eprintln!("t={} {} lines queued, the host's writer writes them after {delay} ms", self.t, self.chats[c].id);
        }
        LateWriter::start(self.transcript(c), lines, std::time::Duration::from_millis(delay))
    }

    /// A Claude chat's transcript (created empty).
    fn transcript(&self, c: usize) -> std::path::PathBuf {
        let t = self.sb.tmp.path().join(format!("{}.jsonl", self.chats[c].id));
        if !t.exists() {
            std::fs::write(&t, "").unwrap();
        }
        t
    }

    /// A Claude Code subagent's own transcript, where the host keeps it:
    /// beside the session's (`<session>/subagents/agent-<id>.jsonl`).
    fn sub_transcript(&self, c: usize, raw: &str) -> std::path::PathBuf {
        self.sb.tmp.path().join(&self.chats[c].id).join("subagents").join(format!("agent-{raw}.jsonl"))
    }

    /// Append one line to running subagent `raw`'s own transcript, marked
    /// as the host marks them (`isSidechain`, its `agentId`, the session,
    /// a uuid); none for a subagent whose transcript the host never writes.
    fn write_sub_line(&mut self, c: usize, raw: &str, mut line: Value) {
        use std::io::Write;
        let chat = &mut self.chats[c];
        let Some(s) = chat.subs.iter_mut().find(|s| s.raw == raw).filter(|s| s.writes) else { return };
        s.lines += 1;
        line["uuid"] = line.get("uuid").cloned().unwrap_or_else(|| json!(format!("{raw}-l{}", s.lines)));
        line["isSidechain"] = json!(true);
        line["agentId"] = json!(raw);
        line["sessionId"] = json!(chat.id);
        let p = self.sub_transcript(c, raw);
        if self.trace {
            let mut shown = line.to_string();
            shown.truncate(160);
            eprintln!("t={} subagent line {}: {shown}", self.t, p.display());
        }
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&p).unwrap();
        writeln!(f, "{line}").unwrap();
    }

    /// A result reaches the model: the window's latest copy of `file` is
    /// `ver` when whole, else cut (a preview, a truncation).
    fn land(&mut self, c: usize, sub: Option<&str>, file: &'static str, ver: u32, whole: bool, id: &str) {
        let window = self.sub_window(c, sub);
        if whole {
            window.insert(file, ver);
        } else {
            window.remove(file);
        }
        if sub.is_none() {
            let held = &mut self.chats[c].held;
            if whole {
                held.entry(file).or_default().push(id.to_string());
            } else {
                held.remove(file);
            }
        }
    }

    fn sub_window(&mut self, c: usize, sub: Option<&str>) -> &mut Window {
        let chat = &mut self.chats[c];
        match sub {
            Some(raw) => &mut chat.subs.iter_mut().find(|s| s.raw == raw).expect("a running subagent").window,
            None => &mut chat.window,
        }
    }

    /// The read's argument: the file's absolute path in the chat's project.
    fn path(&self, c: usize, file: &str) -> String {
        format!("/sim/p{}/{file}", self.chats[c].project)
    }

    fn tool_input(&self, c: usize, file: &str) -> Value {
        let path = self.path(c, file);
        if self.chats[c].host == H::Cursor { json!(json!({"path": path}).to_string()) } else { json!({"path": path}) }
    }

    fn pre(&mut self, c: usize, r: usize) {
        let host = self.chats[c].host;
        let read = &self.chats[c].reads[r];
        let (task, id, file, sub) = (read.task_env.clone(), read.id.clone(), read.file, read.sub.clone());
        let input = self.tool_input(c, file);
        let extra = if host == H::Cursor {
            json!({"tool_name": "ctx_read", "tool_input": input, "command": "lean-ctx"})
        } else {
            let mut e = json!({"tool_name": "mcp__ctx__ctx_read", "tool_input": input, "tool_use_id": id});
            if let Some(a) = &sub {
                e["agent_id"] = json!(a);
            }
            e
        };
        let ev = if host == H::Cursor { "beforeMCPExecution" } else { "PreToolUse" };
        self.hook(c, ev, extra, Kind::Pre, task.as_deref());
        if host == H::Claude
            && let Some(raw) = &sub
        {
            // A subagent's call is in its own transcript, written through
            // its own recorder (not the session's queue) before the call
            // is made (fixture `subagent-main-compact`).
            let line = json!({"type": "assistant", "message": {"role": "assistant", "stop_reason": "tool_use",
                "content": [{"type": "tool_use", "id": id, "name": "mcp__ctx__ctx_read",
                "input": {"path": self.path(c, file)}}]}});
            self.write_sub_line(c, raw, line);
        }
        if host == H::Claude && sub.is_none() {
            // Claude Code 2.1.328 stores the request's context management
            // on each answer: null, or the results its cut records replaced
            // (tests/fixtures/payloads/withdrawal/claude/idle-cut*).
            let n = self.chats[c].cuts_in_force;
            let cm = if n == 0 { Value::Null } else { json!({"applied_edits": [], "client_cut_tool_uses": n}) };
            let line = json!({"type": "assistant", "uuid": self.uid("a-"), "message": {"role": "assistant",
                "content": [{"type": "tool_use", "id": id, "name": "mcp__ctx__ctx_read", "input": {}}],
                "context_management": cm}});
            self.write_line(c, &line);
        }
    }

    /// The shared server: one `ReadPath::stub` per read, with the result it
    /// would send; the oracle judges the answer.
    fn serve(&mut self, c: usize, r: usize) {
        let now = self.tick(1, 3);
        let host = self.chats[c].host;
        let (id, file, sub, interrupted) = {
            let rd = &self.chats[c].reads[r];
            (rd.id.clone(), rd.file, rd.sub.clone(), rd.interrupted)
        };
        let project = self.chats[c].project;
        let ver = self.versions[&(project, file)];
        let len = self.sizes[&(project, file, ver)];
        let text = content(file, ver, len);
        let result = json!({"content": blocks(&text)});
        let sent = ledger::sent_content(&result).unwrap();
        if self.chats[c].disabled && self.chats[c].legacy.insert((file, ver)) {
            // A server with scoping off keeps lean-ctx's own cache: it asks
            // only about content it delivered before (this version), and
            // delivers the rest without a question.
            let whole = host.whole(len, self.codex_budget);
            if !interrupted {
                self.land(c, sub.as_deref(), file, ver, whole, &id);
            }
            let rd = &mut self.chats[c].reads[r];
            rd.sent = text;
            rd.whole = whole;
            self.st.fold(now);
            return;
        }
        let chat = &self.chats[c];
        let meta = match host {
            H::Claude => json!({"claudecode/toolUseId": id}),
            H::Codex => {
                let (thread, window) = match &sub {
                    Some(s) => (s.clone(), format!("{s}:0")),
                    None => (chat.id.clone(), format!("{}:{}", chat.id, chat.win_n)),
                };
                json!({"sessionId": chat.id, "threadId": thread, "callId": id, "windowId": window})
            }
            H::Cursor | H::CodeBuddy => json!({}),
        };
        self.rpc_id += 1;
        let path = self.path(c, file);
        let request = json!({"jsonrpc": "2.0", "id": self.rpc_id, "method": "tools/call",
            "params": {"name": "ctx_read", "arguments": {"path": path}, "_meta": meta}});
        let call = McpCall::from_json(&request).unwrap();
        let env = ScopeEnv { scoping_disabled: chat.disabled, ..ScopeEnv::default() };
        let rp = ReadPath::new(&self.sb.data, env).at(now).with_host_pid(chat.proc);
        let fault = self.episodes.chance(self.knobs.faults).then(|| {
            self.st.faults += 1;
            let f = if self.episodes.chance(0.5) { Fault::DirOpen } else { Fault::JournalDir };
            apply(&self.sb.data, f)
        });
        let key = path;
        let version = format!("sha256:{file}:{ver}");
        // A return's queued lines: the host's writer puts them on disk
        // while the question waits for them (it may not: then after it).
        let writer = if host == H::Claude { self.late_writer(c) } else { None };
        let ans = rp.stub(&call, &key, &version, Some(&sent)).unwrap();
        match writer.map(LateWriter::finish) {
            Some(true) => {
                self.st.late_written += 1;
                let chat = &mut self.chats[c];
                (chat.queued, chat.queue_lines) = (Vec::new(), false);
            }
            // The question waited its whole second while the writer, due
            // within 78 ms, never got to run: the machine, not the model.
            Some(false) if ans.witness.as_deref().is_some_and(|w| w.contains("did not show this call")) => panic!(
                "seed {}: t={now}: the simulated host's writer thread was starved past the question's 1 s wait \
                 (machine load): this run does not replay",
                self.seed
            ),
            _ => {}
        }
        if let Some(a) = fault {
            restore(&self.sb.data, a);
        }
        // Any still queued reach the disk now.
        if host == H::Claude {
            self.flush(c);
        }
        let chat = &self.chats[c];
        let fresh = sub.as_deref().and_then(|s| chat.subs.iter().find(|x| x.raw == s)).and_then(|x| x.fresh.clone());
        let truth_scope = match &sub {
            Some(_) if fresh.is_some() => fresh.clone().unwrap_or_default(),
            Some(s) if host == H::Cursor => format!("task:{s}"),
            Some(s) => format!("agent:{s}"),
            None => chat.id.clone(),
        };
        let chat_id = chat.id.clone();
        let win_n = chat.win_n;
        let codex_budget = self.codex_budget;
        // Not judged with a server whose scoping is off (its own cache
        // answers: `scope-disabled`, counted apart).
        let unwritten = host == H::Claude
            && ans.decision.reason.as_str() != "scope-disabled"
            && sub.as_deref().is_some_and(|s| self.chats[c].subs.iter().any(|x| x.raw == s && !x.writes));
        let window = self.sub_window(c, sub.as_deref());
        let safe = window.get(file) == Some(&ver);
        let allow = ans.decision.allow;
        let reason = ans.decision.reason.as_str();
        if unwritten {
            self.st.unwritten_questions += 1;
            self.st.unwritten_safe += safe as u64;
            self.st.unwritten_allowed += allow as u64;
            self.st.unwritten_unavailable += (reason == "transcript-unavailable") as u64;
            self.st.unwritten_safe_unavailable += (safe && reason == "transcript-unavailable") as u64;
            if allow {
                let detail = format!("seed {}: t={now} {file}: {}", self.seed, serde_json::to_string(&ans).unwrap());
                self.st.unwritten_detail.push(detail);
            }
        }
        // A Cursor task whose hook lacks CURSOR_TASK_ID names its parent by
        // design (the record is under the parent): counted only if that
        // answer was not withheld as `subagent-active` (nothing recorded).
        let named_parent_withheld = reason == "subagent-active" && ans.recorded.as_ref().is_none_or(|r| !r.recorded);
        // A task whose hook lacks CURSOR_TASK_ID and whose `subagentStart`
        // hook died leaves no record that tells it from its parent: counted
        // apart (`unknowable`), not as a misresolution.
        let unknowable = host == H::Cursor
            && self.chats[c].reads[r].task_env.is_none()
            && sub.as_deref().is_some_and(|s| self.lost_starts.contains(s))
            && ans.caller.scope.as_deref() == Some(chat_id.as_str());
        self.st.unknowable += unknowable as u64;
        let misresolved = ans.caller.exact
            && ans.caller.scope.as_deref() != Some(truth_scope.as_str())
            && !named_parent_withheld
            && !unknowable;
        if misresolved {
            let detail = format!(
                "seed {}: t={now} {host:?} caller {truth_scope} ({file}) resolved exactly as {:?} ({:?} {:?})",
                self.seed, ans.caller.scope, ans.caller.host, ans.caller.source
            );
            self.st.misresolved_detail.push(detail);
        }
        let disabled = reason == "scope-disabled";
        if disabled {
            self.st.disabled += 1;
            self.st.disabled_unsafe += !safe as u64;
        }
        let chat = &self.chats[c];
        let two = host == H::Claude
            && self.chats.iter().any(|o| o.host == H::Claude && o.id == chat.id && o.proc != chat.proc && !o.ended);
        self.st.two_process_questions += two as u64;
        let hs = self.st.hosts.entry(host).or_default();
        hs.misresolved += misresolved as u64;
        hs.questions += 1;
        *hs.reasons.entry(reason).or_default() += 1;
        if !allow {
            match &ans.recorded {
                Some(rec) if rec.recorded => hs.recorded += 1,
                _ => hs.not_recorded += 1,
            }
        }
        if disabled {
            // Not judged: scoping switched off by the user (counted above).
        } else if safe {
            hs.safe += 1;
            hs.safe_bytes += len as u64;
            if allow {
                hs.safe_allowed += 1;
                hs.safe_allowed_bytes += len as u64;
            } else {
                *hs.lost.entry(reason).or_default() += 1;
                // The detail: what the host said, or why the caller was not known.
                let detail = match (&ans.delivery, reason) {
                    (Some(d), "unconfirmed") => Some(match d.confirmation {
                        ledger::Confirmation::None => "unconfirmed: no acknowledgement",
                        ledger::Confirmation::Cut => SIZE_RULE_LOSS,
                        ledger::Confirmation::DifferentContent => "unconfirmed: other content acknowledged",
                        ledger::Confirmation::Whole => "unconfirmed: whole?",
                    }),
                    (_, "unknown-caller") => Some(match ans.per_call {
                        PerCall::Ambiguous => "unknown-caller: another chat made the same call",
                        PerCall::NoMatch => "unknown-caller: no call record (its hook died)",
                        _ => "unknown-caller: other",
                    }),
                    _ => None,
                };
                if let Some(k) = detail {
                    *hs.lost.entry(k).or_default() += 1;
                }
            }
        } else if allow {
            hs.wrong += 1;
            let held = self.sub_window(c, sub.as_deref()).get(file).copied();
            let detail = format!(
                "seed {}: t={now} {host:?} chat {chat_id} (window {win_n}) caller {truth_scope} got a stub of \
                 {file}@{ver} ({len} B), whose window holds {:?}: {}",
                self.seed,
                held,
                serde_json::to_string(&ans).unwrap()
            );
            self.st.wrong_detail.push(detail);
        }
        // The trace folds every decision, verdict and reason label.
        let label = reason.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
        self.st.fold(now ^ ((allow as u64) << 1) ^ (safe as u64) ^ ((host as u64) << 3) ^ (label << 8));
        if self.trace {
            eprintln!(
                "t={now} {host:?} {truth_scope} {:?} reads {file}@{ver} ({len} B, call {id}): safe {safe}, {} {reason}{}",
                ans.per_call,
                if allow { "allow" } else { "withhold" },
                if interrupted { " (interrupted)" } else { "" }
            );
        }
        // What the server returns, and what of it the model receives.
        let (sent_text, whole) = if allow {
            (format!("[unchanged] {key} ({version})"), true)
        } else {
            let whole = host.whole(len, codex_budget);
            if !interrupted {
                self.land(c, sub.as_deref(), file, ver, whole, &id);
            }
            (text, whole)
        };
        let rd = &mut self.chats[c].reads[r];
        rd.sent = sent_text;
        rd.whole = whole;
    }

    fn post(&mut self, c: usize, r: usize) {
        let host = self.chats[c].host;
        let rd = &self.chats[c].reads[r];
        let (id, file, sub, task) = (rd.id.clone(), rd.file, rd.sub.clone(), rd.task_env.clone());
        let sent = rd.sent.clone();
        let input = self.tool_input(c, file);
        match host {
            H::Cursor => {
                let result_json = json!({"content": blocks(&sent)}).to_string();
                let extra = json!({"tool_name": "ctx_read", "tool_input": input, "command": "lean-ctx",
                    "result_json": result_json, "duration": 12});
                self.hook(c, "afterMCPExecution", extra, Kind::Post, task.as_deref());
                let extra = json!({"tool_name": "MCP:ctx_read", "tool_input": input, "tool_output": result_json,
                    "tool_use_id": id});
                self.hook(c, "postToolUse", extra, Kind::Post, task.as_deref());
            }
            H::Claude | H::CodeBuddy | H::Codex => {
                let response =
                    if host == H::Codex { json!({"content": blocks(&sent), "isError": false}) } else { blocks(&sent) };
                let mut extra = json!({"tool_name": "mcp__ctx__ctx_read", "tool_input": input, "tool_use_id": id,
                    "tool_response": response});
                if let Some(a) = &sub {
                    extra["agent_id"] = json!(a);
                }
                self.hook(c, "PostToolUse", extra, Kind::Post, None);
            }
        }
    }

    /// Claude Code's PostToolBatch: what the model got of each call.
    fn batch(&mut self, c: usize, rs: &[usize]) {
        let mut calls = Vec::new();
        let mut agent = None;
        for &r in rs {
            let rd = &self.chats[c].reads[r];
            let response = if rd.whole {
                blocks(&rd.sent)
            } else {
                // The real shape (tests/fixtures/payloads/claude/size-60k):
                // the first 2 KB of the blocks as pretty JSON.
                let full = serde_json::to_string_pretty(&blocks(&rd.sent)).unwrap();
                let mut cut = CLAUDE_PREVIEW_BYTES;
                while !full.is_char_boundary(cut) {
                    cut -= 1;
                }
                json!(format!(
                    "<persisted-output>\nOutput too large ({:.1}KB). Full output saved to: \
                     /sim/home/.claude/projects/-sim/{}/tool-results/{}.json\n\nPreview (first 2KB):\n{}\n...\n\
                     </persisted-output>",
                    full.len() as f64 / 1024.0,
                    self.chats[c].id,
                    rd.id,
                    &full[..cut]
                ))
            };
            calls.push(json!({"tool_name": "mcp__ctx__ctx_read", "tool_use_id": rd.id,
                "tool_input": {"path": self.path(c, rd.file)}, "tool_response": response}));
            agent = rd.sub.clone();
        }
        let mut extra = json!({"tool_calls": calls});
        if let Some(a) = agent {
            extra["agent_id"] = json!(a);
        }
        self.hook(c, "PostToolBatch", extra, Kind::Post, None);
    }

    fn exec(&mut self, c: usize, op: Op) {
        let idle_since = self.chats[c].last_active;
        // The host's idle clock runs from the last response: a start (a
        // resume loads the history) and a rewind are no response.
        let activity = !matches!(&op, Op::Hook { event: "SessionStart", .. } | Op::Rewind(_) | Op::Resume(_));
        match op {
            Op::Hook { event: "PostCompact", extra, kind }
                if self.chats[c].host == H::Claude && extra.get("agent_id").is_none() =>
            {
                self.hook(c, "PostCompact", extra, kind, None);
                // Claude Code records each compaction in the transcript too,
                // written by the compacting process after its hooks
                // (docs/DELIVERY.md §8, fixture `two-process`, lines 85-86:
                // a `compact_boundary`, then its summary, the boundary's
                // child, with the process's current prompt id).
                let (boundary, summary) = (self.uid("boundary-"), self.uid("summary-"));
                let prompt_id = self.chats[c].prompt_id.clone();
                let line = json!({"parentUuid": null, "logicalParentUuid": null, "isSidechain": false,
                    "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                    "uuid": boundary});
                self.write_line(c, &line);
                let line = json!({"parentUuid": boundary, "isSidechain": false, "promptId": prompt_id, "type": "user",
                    "message": {"role": "user", "content": "This session is being continued"},
                    "isVisibleInTranscriptOnly": true, "isCompactSummary": true, "uuid": summary});
                self.write_line(c, &line);
            }
            Op::Hook { event, extra, kind } => self.hook(c, event, extra, kind, None),
            Op::Pre(r) => self.pre(c, r),
            Op::Serve(r) => self.serve(c, r),
            Op::Post(r) => self.post(c, r),
            Op::Batch(rs) => self.batch(c, &rs),
            Op::Compact => {
                let chat = &mut self.chats[c];
                chat.window.clear();
                chat.held.clear();
                chat.prompts.clear();
                chat.win_n += 1;
            }
            Op::CompactSub(raw) => {
                // Stopped meanwhile: its context is gone anyway.
                if let Some(s) = self.chats[c].subs.iter_mut().find(|s| s.raw == raw) {
                    s.window.clear();
                }
                // Its boundary and summary go to its own transcript
                // (fixture `subagent-own-compact`: `"isSidechain":true`,
                // its `agentId`, `parentUuid` null), between its hooks.
                let boundary = format!("{raw}-boundary-{}", self.t);
                let line = json!({"parentUuid": null, "logicalParentUuid": null, "type": "system",
                    "subtype": "compact_boundary", "content": "Conversation compacted", "level": "info",
                    "compactMetadata": {"trigger": "auto"}, "uuid": boundary});
                self.write_sub_line(c, &raw, line);
                let line = json!({"parentUuid": boundary, "promptId": self.chats[c].prompt_id, "type": "user",
                    "message": {"role": "user", "content": "This session is being continued"},
                    "isVisibleInTranscriptOnly": true, "isCompactSummary": true});
                self.write_sub_line(c, &raw, line);
            }
            Op::Prompt => self.prompt(c, idle_since),
            Op::Resume(p) => {
                // The session as it stands: its first process's, or, once
                // that process's slot went on to another session (it ended
                // meanwhile), as that process left it.
                let (window, held, prompts, history, last, cuts) = if self.chats[p].id == self.chats[c].id {
                    self.history(p)
                } else {
                    self.left.get(&self.chats[c].id).cloned().expect("the session's history, left")
                };
                let chat = &mut self.chats[c];
                (chat.window, chat.held, chat.prompts, chat.history, chat.last_active, chat.cuts_in_force) =
                    (window, held, prompts, history, last, cuts);
                let silent = self.t.saturating_sub(last) / 1000;
                let extra = json!({"source": "resume", "seconds_since_last_response": silent});
                self.hook(c, "SessionStart", extra, Kind::Other, None);
            }
            Op::Rewind(k) => {
                self.st.rewinds += 1;
                let chat = &mut self.chats[c];
                let (uuid, window, held) = chat.prompts[k].clone();
                chat.prompts.truncate(k);
                chat.window = window;
                chat.held = held;
                let line = json!({"type": "last-prompt", "leafUuid": null, "explicit": true, "rewound": true,
                    "cutUuid": uuid, "sessionId": chat.id});
                self.write_line(c, &line);
            }
        }
        if activity {
            self.chats[c].last_active = self.t;
        }
    }

    /// Stop every running subagent of chat `c` (their stop hooks queued).
    fn stop_subs(&mut self, c: usize) {
        let cursor = self.chats[c].host == H::Cursor;
        for s in std::mem::take(&mut self.chats[c].subs) {
            if cursor {
                let id = self.chats[c].id.clone();
                let extra = json!({"subagent_id": s.raw, "parent_conversation_id": id, "status": "completed"});
                self.hook_op(c, "subagentStop", extra, Kind::Other);
            } else {
                self.hook_op(c, "SubagentStop", json!({"agent_id": s.raw}), Kind::Other);
            }
        }
    }

    /// Claude chat `c`'s history, as a process resuming its session loads it.
    fn history(&self, c: usize) -> History {
        let p = &self.chats[c];
        (p.window.clone(), p.held.clone(), p.prompts.clone(), p.history.clone(), p.last_active, p.cuts_in_force)
    }

    /// Chat `c`'s slot goes on to another session: its history is kept for
    /// a second process of its session that has not loaded it yet.
    fn leave(&mut self, c: usize) {
        if self.chats[c].host == H::Claude && self.chats[c].two_processes {
            let h = self.history(c);
            self.left.insert(self.chats[c].id.clone(), h);
        }
    }

    /// A second terminal resumes Claude chat `c`'s session while `c` runs:
    /// another host process (its own pid, its own MCP server), whose context
    /// is the history as it stands when it starts (`c`'s window, prompts
    /// and results: [`Op::Resume`]), and from then on its own. Both write
    /// the one transcript.
    fn second_process(&mut self, c: usize) {
        self.st.second_processes += 1;
        let proc = 500_000 + 10 * self.st.second_processes as u32;
        let ready = self.t + self.rng.range(1_000, 20_000);
        let p = &self.chats[c];
        let chat = Chat {
            two_processes: true,
            ..Chat::fresh(H::Claude, p.id.clone(), p.project, ready, p.disabled, p.last_active, p.idle_cuts, proc)
        };
        self.chats[c].two_processes = true;
        self.chats.push(chat);
        let n = self.chats.len() - 1;
        self.push(n, Op::Resume(c));
    }

    /// A new read of one file; `not` is a file already read in the same
    /// batch (a model does not read one file twice in one batch).
    fn new_read(&mut self, c: usize, sub: Option<usize>, not: Option<&'static str>) -> usize {
        let hist = &self.chats[c].history;
        let mut file = if !hist.is_empty() && self.rng.chance(0.7) {
            hist[self.rng.below(hist.len() as u64) as usize]
        } else {
            *self.rng.pick(&FILES)
        };
        while Some(file) == not {
            file = *self.rng.pick(&FILES);
        }
        let hist = &mut self.chats[c].history;
        hist.push(file);
        if hist.len() > 8 {
            hist.remove(0);
        }
        let id = self.uid(if self.chats[c].host == H::Codex { "call_" } else { "toolu_" });
        let host = self.chats[c].host;
        let raw = sub.map(|i| self.chats[c].subs[i].raw.clone());
        let fresh = sub.and_then(|i| self.chats[c].subs[i].fresh.clone());
        let task_env = match fresh {
            // A conversation id of its own is on every hook (no env to lose).
            Some(conv) => Some(format!("conv:{conv}")),
            None => raw.clone().filter(|_| host == H::Cursor && !self.rng.chance(self.knobs.cursor_no_task_env)),
        };
        let p = match host {
            H::Claude => self.knobs.interrupt_claude,
            H::Codex => self.knobs.interrupt_codex,
            H::Cursor | H::CodeBuddy => self.knobs.interrupt_fingerprint,
        };
        let interrupted = self.rng.chance(p);
        if interrupted {
            self.st.interrupted += 1;
        }
        let chat = &mut self.chats[c];
        chat.reads.push(Read { id, file, sub: raw, task_env, interrupted, sent: String::new(), whole: false });
        chat.reads.len() - 1
    }

    fn push(&mut self, c: usize, op: Op) {
        self.chats[c].queue.push_back(op);
    }

    fn hook_op(&mut self, c: usize, event: &'static str, extra: Value, kind: Kind) {
        self.push(c, Op::Hook { event, extra, kind });
    }

    fn compaction(&mut self, c: usize) {
        self.st.compactions += 1;
        match self.chats[c].host {
            H::Cursor => {
                self.hook_op(c, "preCompact", json!({"trigger": "auto"}), Kind::Compaction);
                self.push(c, Op::Compact);
            }
            H::Claude
                if self.knobs.claude_sub_compaction > 0.0
                    && !self.chats[c].subs.is_empty()
                    && self.rng.chance(self.knobs.claude_sub_compaction) =>
            {
                let n = self.chats[c].subs.len() as u64;
                let raw = self.chats[c].subs[self.rng.below(n) as usize].raw.clone();
                self.sub_compaction(c, raw);
            }
            H::Claude => {
                self.hook_op(c, "PreCompact", json!({"trigger": "auto"}), Kind::Compaction);
                self.push(c, Op::Compact);
                self.hook_op(c, "SessionStart", json!({"source": "compact"}), Kind::Compaction);
                self.hook_op(c, "PostCompact", json!({"trigger": "auto"}), Kind::Compaction);
            }
            H::Codex => {
                if self.codex_hooks {
                    self.hook_op(c, "PreCompact", json!({"trigger": "auto"}), Kind::Compaction);
                }
                self.push(c, Op::Compact);
                if self.codex_hooks {
                    self.hook_op(c, "PostCompact", json!({"trigger": "auto"}), Kind::Compaction);
                    self.hook_op(c, "SessionStart", json!({"source": "compact"}), Kind::Compaction);
                }
            }
            H::CodeBuddy => {
                self.hook_op(c, "PreCompact", json!({"trigger": "auto"}), Kind::Compaction);
                self.push(c, Op::Compact);
            }
        }
    }

    /// A Claude Code subagent compacts its own context: its three hooks
    /// carry its `agent_id` (as the real host's do), and only its window is
    /// replaced. Its boundary goes to its own transcript ([`Op::CompactSub`]).
    fn sub_compaction(&mut self, c: usize, raw: String) {
        self.st.sub_compactions += 1;
        let with = |mut v: Value| {
            v["agent_id"] = json!(raw);
            v["agent_type"] = json!("general");
            v
        };
        self.hook_op(c, "PreCompact", with(json!({"trigger": "auto"})), Kind::Compaction);
        self.push(c, Op::CompactSub(raw.clone()));
        self.hook_op(c, "SessionStart", with(json!({"source": "compact"})), Kind::Compaction);
        self.hook_op(c, "PostCompact", with(json!({"trigger": "auto"})), Kind::Compaction);
    }

    /// Plan a chat's next step (its queue is empty).
    fn plan(&mut self, c: usize) {
        self.chats[c].reads.clear();
        let host = self.chats[c].host;
        let cursor = host == H::Cursor;
        if self.chats[c].ended {
            // Claude Code and Codex resume with the same id; the transcript
            // (and so the window) comes back. The others start a new chat.
            if matches!(host, H::Claude | H::Codex) && self.rng.chance(0.6) && !self.chats[c].two_processes {
                self.chats[c].ended = false;
                // Claude Code: `--resume` is another host process (its own
                // window), and says how long the session was silent.
                let mut extra = json!({"source": "resume"});
                if host == H::Claude {
                    let chat = &mut self.chats[c];
                    chat.proc += 1_000;
                    chat.prompt_id = None;
                    extra["seconds_since_last_response"] = json!(self.t.saturating_sub(chat.last_active) / 1000);
                    self.st.new_processes += 1;
                }
                self.hook_op(c, "SessionStart", extra, Kind::Other);
            } else {
                self.leave(c);
                let id = self.uid("chat-");
                let chat = &mut self.chats[c];
                chat.id = id;
                chat.window.clear();
                chat.held.clear();
                chat.prompts.clear();
                (chat.queued, chat.queue_lines, chat.cuts_in_force) = (Vec::new(), false, 0);
                chat.two_processes = false;
                chat.proc += 1_000;
                chat.prompt_id = None;
                chat.subs.clear();
                chat.win_n = 0;
                chat.ended = false;
                let ev = if cursor { "sessionStart" } else { "SessionStart" };
                self.hook_op(c, ev, json!({"source": "startup"}), Kind::Other);
            }
            return;
        }
        let nsubs = self.chats[c].subs.len();
        // Back from a long silence: the user's prompt comes first.
        if host == H::Claude && self.chats[c].returning {
            self.chats[c].returning = false;
            self.claude_turn(c, nsubs);
            return;
        }
        if host == H::Claude
            && nsubs == 0
            && self.chats.len() < 9
            && !self.chats[c].two_processes
            && self.episodes.chance(self.knobs.second_process)
        {
            self.second_process(c);
            return;
        }
        // Claude Code: more turns (each a chance of a rewind or of a return
        // after a long silence), drawn from the episode stream.
        if host == H::Claude && self.episodes.chance(self.knobs.claude_turn) {
            self.claude_turn(c, nsubs);
            return;
        }
        match self.rng.below(100) {
            0..=59 => {
                // A read by the main agent or a running subagent; Claude's
                // main agent sometimes reads two files in one batch.
                // A Cursor main agent waits for its Task tool while the
                // subagent runs, so a Cursor chat with a subagent running
                // reads through a subagent; elsewhere the main agent may read
                // too (Claude Code's and Codex's subagents are told apart per
                // call anyway).
                let by_sub = nsubs > 0 && (cursor || self.rng.chance(self.knobs.sub_read));
                let sub = by_sub.then(|| self.rng.below(nsubs as u64) as usize);
                let n = if host == H::Claude && sub.is_none() && self.rng.chance(0.25) { 2 } else { 1 };
                let mut rs = vec![self.new_read(c, sub, None)];
                if n == 2 {
                    let first = self.chats[c].reads[rs[0]].file;
                    rs.push(self.new_read(c, sub, Some(first)));
                }
                for &r in &rs {
                    self.push(c, Op::Pre(r));
                }
                for &r in &rs {
                    self.push(c, Op::Serve(r));
                }
                let live: Vec<usize> = rs.iter().copied().filter(|&r| !self.chats[c].reads[r].interrupted).collect();
                for &r in &live {
                    self.push(c, Op::Post(r));
                }
                if host == H::Claude && !live.is_empty() {
                    self.push(c, Op::Batch(live));
                }
                // The subagent that read may compact its own context next
                // (the variant only: no draw when the knob is 0).
                if host == H::Claude
                    && self.knobs.claude_sub_compaction > 0.0
                    && let Some(s) = sub
                    && self.rng.chance(self.knobs.claude_sub_compaction)
                {
                    let raw = self.chats[c].subs[s].raw.clone();
                    self.st.compactions += 1;
                    self.sub_compaction(c, raw);
                }
                if host == H::Codex && sub.is_none() && self.rng.chance(self.knobs.codex_swallow) {
                    // The compaction swallows the result just returned.
                    self.st.swallowed += 1;
                    self.compaction(c);
                }
            }
            60..=67 => {
                if host == H::Claude {
                    self.claude_turn(c, nsubs);
                } else {
                    let ev = if cursor { "beforeSubmitPrompt" } else { "UserPromptSubmit" };
                    self.hook_op(c, ev, json!({"prompt": "SECRET-PROMPT"}), Kind::Other);
                }
            }
            68..=72 => self.compaction(c),
            73..=75 => {
                // A file changes on disk: every window's copy is now older.
                let f = *self.rng.pick(&FILES);
                let project = self.chats[c].project;
                let v = self.versions[&(project, f)] + 1;
                self.versions.insert((project, f), v);
                let len = size_draw(&mut self.rng);
                self.sizes.insert((project, f, v), len);
                self.st.version_bumps += 1;
            }
            76..=81 if nsubs < 3 => {
                self.st.subagents += 1;
                let raw = self.uid("sub");
                if cursor {
                    let id = self.chats[c].id.clone();
                    let extra = json!({"subagent_id": raw, "parent_conversation_id": id, "subagent_type": "explore"});
                    self.hook_op(c, "subagentStart", extra, Kind::Other);
                } else {
                    self.hook_op(c, "SubagentStart", json!({"agent_id": raw, "agent_type": "general"}), Kind::Other);
                }
                let fresh = (cursor && self.rng.chance(0.5)).then(|| self.uid("conv"));
                // The host writes a Claude Code subagent's prompt to its own
                // transcript as it starts (unless, in the variant, nowhere).
                let writes = host == H::Claude
                    && !(self.knobs.claude_sub_unwritten > 0.0
                        && self.episodes.chance(self.knobs.claude_sub_unwritten));
                self.chats[c].subs.push(Sub { raw: raw.clone(), window: Window::new(), fresh, writes, lines: 0 });
                if host == H::Claude {
                    let line = json!({"type": "user", "parentUuid": null, "promptId": self.chats[c].prompt_id,
                        "message": {"role": "user", "content": "SECRET-TASK"}});
                    self.write_sub_line(c, &raw, line);
                }
            }
            82..=86 if nsubs > 0 => {
                // Subagents stop in any order. Cursor 3.x names the one it
                // stops (`subagent_id`, as in the 3.18.25 capture); an older
                // Cursor names none, and the journal then closes none.
                let i = self.rng.below(nsubs as u64) as usize;
                let s = self.chats[c].subs.remove(i);
                if cursor {
                    let id = self.chats[c].id.clone();
                    let extra = if self.rng.chance(0.8) {
                        json!({"subagent_id": s.raw, "parent_conversation_id": id, "status": "completed"})
                    } else {
                        json!({"status": "completed"})
                    };
                    self.hook_op(c, "subagentStop", extra, Kind::Other);
                } else {
                    self.hook_op(c, "SubagentStop", json!({"agent_id": s.raw}), Kind::Other);
                }
            }
            87..=89 => {
                for s in std::mem::take(&mut self.chats[c].subs) {
                    if cursor {
                        self.hook_op(c, "subagentStop", json!({}), Kind::Other);
                    } else {
                        self.hook_op(c, "SubagentStop", json!({"agent_id": s.raw}), Kind::Other);
                    }
                }
                self.st.ends += 1;
                self.chats[c].ended = true;
                let ev = if cursor { "sessionEnd" } else { "SessionEnd" };
                self.hook_op(c, ev, json!({"reason": "other"}), Kind::Other);
            }
            90..=92 if host == H::Claude && nsubs == 0 => {
                // /clear: a new session id, an empty context.
                self.hook_op(c, "SessionEnd", json!({"reason": "clear"}), Kind::Other);
                self.leave(c);
                let id = self.uid("chat-");
                let chat = &mut self.chats[c];
                chat.id = id;
                chat.window.clear();
                chat.held.clear();
                chat.prompts.clear();
                (chat.queued, chat.queue_lines, chat.cuts_in_force) = (Vec::new(), false, 0);
                chat.two_processes = false;
                self.hook_op(c, "SessionStart", json!({"source": "clear"}), Kind::Other);
            }
            _ => {
                let ev = if cursor { "stop" } else { "Stop" };
                self.hook_op(c, ev, json!({"status": "completed"}), Kind::Other);
            }
        }
    }
}

fn run_seed(seed: u64, steps: u64, knobs: Knobs) -> Stats {
    let mut rng = Rng::new(seed);
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.data).unwrap();
    crate::support::make_private(&sb.data);
    let codex_hooks = !rng.chance(knobs.codex_no_compaction_hooks);
    let codex_budget = if rng.chance(knobs.codex_big_budget) {
        std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
        std::fs::write(sb.home.join(".codex/config.toml"), "model = \"gpt-5.5\"\ntool_output_token_limit = 10000\n")
            .unwrap();
        10_000
    } else {
        ledger::CODEX_DEFAULT_BUDGET_TOKENS
    };
    // One chat of every host, and up to two more.
    let mut hosts = vec![H::Claude, H::Codex, H::Cursor, H::CodeBuddy];
    for _ in 0..rng.below(3) {
        let h = *rng.pick(&[H::Claude, H::Codex, H::Cursor, H::CodeBuddy]);
        hosts.push(h);
    }
    let mut versions = HashMap::new();
    let mut sizes = HashMap::new();
    for p in 0..PROJECTS {
        for f in FILES {
            versions.insert((p, f), 1);
            sizes.insert((p, f, 1), size_draw(&mut rng));
        }
    }
    let t = 1_800_000_000_000 + rng.below(1_000_000);
    let mut w = World {
        sb,
        rng,
        episodes: Rng::new(seed ^ 0x5eed_e915_0de5),
        seed,
        t,
        ids: 0,
        rpc_id: 0,
        knobs,
        codex_hooks,
        codex_budget,
        versions,
        sizes,
        chats: Vec::new(),
        st: Stats { seeds: 1, ..Stats::default() },
        trace: std::env::var_os("LEANCTX_SIM_TRACE").is_some(),
        lost_starts: std::collections::HashSet::new(),
        left: HashMap::new(),
    };
    for host in hosts {
        let id = w.uid("chat-");
        let project = w.rng.below(PROJECTS as u64) as u32;
        let ready = w.t + w.rng.range(0, 5_000);
        let disabled = w.episodes.chance(knobs.disabled_server);
        let idle_cuts = w.episodes.chance(knobs.idle_cut_chats);
        let proc = 10_000 + w.chats.len() as u32;
        w.chats.push(Chat::fresh(host, id, project, ready, disabled, w.t, idle_cuts, proc));
        let c = w.chats.len() - 1;
        let ev = if host == H::Cursor { "sessionStart" } else { "SessionStart" };
        w.hook(c, ev, json!({"source": "startup"}), Kind::Compaction, None);
    }
    for _ in 0..steps {
        // The chat whose next action comes first (ties: the first chat).
        let c = (0..w.chats.len()).min_by_key(|&i| (w.chats[i].ready, i)).unwrap();
        w.t = w.t.max(w.chats[c].ready);
        match w.chats[c].queue.pop_front() {
            Some(op) => w.exec(c, op),
            None => w.plan(c),
        }
        // Within a step hooks and server calls follow each other within
        // milliseconds; between steps the model thinks (and the user
        // types), sometimes past the concurrency or claim window, rarely
        // past the slot TTL (only with no subagent of its own running:
        // the journal forgets starts older than the TTL).
        let pause = if !w.chats[c].queue.is_empty() {
            w.rng.range(5, 150)
        } else {
            let no_subs = w.chats[c].subs.is_empty();
            match w.rng.below(100) {
                0..=69 => w.rng.range(1_000, 15_000),
                70..=94 => w.rng.range(15_000, 120_000),
                95..=98 => w.rng.range(120_000, 900_000),
                _ if no_subs => {
                    // Left alone for hours: a Claude chat comes back with a
                    // prompt (its own idle clock, whatever the others did).
                    w.chats[c].returning = w.chats[c].host == H::Claude;
                    w.rng.range(2 * 3_600_000, 3 * 3_600_000)
                }
                _ => w.rng.range(120_000, 900_000),
            }
        };
        // The user steps away after a Claude chat's step: every chat, once
        // its step is done and its subagents stopped (a start older than the
        // journal's 2 h TTL is forgotten), falls silent for just under the
        // product's 3,840 s, between it and the host's 3,900 s, or past (up
        // to 3 h); each Claude chat comes back with a prompt. (A run is
        // otherwise shorter than the threshold: no idle cut happened.)
        let chat = &w.chats[c];
        if chat.queue.is_empty()
            && chat.host == H::Claude
            && chat.subs.is_empty()
            && w.episodes.chance(knobs.long_silence)
        {
            let band = w.episodes.below(6) as usize;
            w.st.silences[band.min(2)] += 1;
            let away = match band {
                0 => w.episodes.range(3_600_000, 3_839_999),
                1 => w.episodes.range(3_840_000, 3_900_000),
                _ => w.episodes.range(3_900_001, 3 * 3_600_000),
            };
            for i in 0..w.chats.len() {
                let late = if i == c { 0 } else { w.episodes.range(0, 60_000) };
                w.chats[i].away_until = w.t + away + late;
            }
        }
        let pause = match &w.chats[c] {
            ch if ch.queue.is_empty() && ch.away_until > w.t && !ch.subs.is_empty() => {
                w.stop_subs(c);
                w.rng.range(5, 150)
            }
            ch if ch.queue.is_empty() && ch.away_until > w.t => {
                let back = ch.away_until - w.t;
                let ch = &mut w.chats[c];
                ch.away_until = 0;
                ch.returning = ch.host == H::Claude;
                back
            }
            _ => pause,
        };
        w.chats[c].ready = w.t + pause;
    }
    // Let every chat finish what it started.
    for c in 0..w.chats.len() {
        while let Some(op) = w.chats[c].queue.pop_front() {
            w.exec(c, op);
        }
    }
    let mut st = w.st;
    st.trace ^= seed;
    st
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 { 100.0 } else { 100.0 * a as f64 / b as f64 }
}

fn report(name: &str, s: &Stats) -> String {
    let mut out = format!(
        "sim-ledger[{name}]: {} seeds, {} hook processes ({} died before recording, {} post hooks dropped), \
         {} compactions ({} swallowing a Codex result, {} a Claude subagent's own), {} interrupted calls, {} subagents, {} ends, \
         {} file changes, {} rewinds, {} idle cuts ({} results cut), {} resumes in a new process, \
         silences {:?} (under 3,840 s, to 3,900 s, past), {} second processes of a running session \
         ({} questions while both ran), {} returns' queued lines written while a question waited ({} after it: \
         the tail), {} task calls unknowable (start hook died, no task env), {} questions of Claude subagents whose \
         transcript the host never wrote ({} safe, {} allowed, {} withheld transcript-unavailable): wrong stubs {}",
        s.seeds,
        s.hooks,
        s.hooks_failed,
        s.posts_dropped,
        s.compactions,
        s.swallowed,
        s.sub_compactions,
        s.interrupted,
        s.subagents,
        s.ends,
        s.version_bumps,
        s.rewinds,
        s.idle_cuts,
        s.cut_results,
        s.new_processes,
        s.silences,
        s.second_processes,
        s.two_process_questions,
        s.late_written,
        s.late_tail,
        s.unknowable,
        s.unwritten_questions,
        s.unwritten_safe,
        s.unwritten_allowed,
        s.unwritten_unavailable,
        s.wrong()
    );
    for (h, hs) in &s.hosts {
        out.push_str(&format!(
            "\n  {}: {} questions, safe stubs allowed {}/{} = {:.1}% ({:.1}% of their bytes), wrong {}; deliveries \
             recorded {} (not {}); {} calls resolved exactly to another caller; safe withheld for {:?}; all reasons {:?}",
            h.name(),
            hs.questions,
            hs.safe_allowed,
            hs.safe,
            pct(hs.safe_allowed, hs.safe),
            pct(hs.safe_allowed_bytes, hs.safe_bytes),
            hs.wrong,
            hs.recorded,
            hs.not_recorded,
            hs.misresolved,
            hs.lost,
            hs.reasons
        ));
    }
    for d in s.misresolved_detail.iter().take(5) {
        out.push_str(&format!("\n  misresolved: {d}"));
    }
    out
}

/// One seed's figures per host (allowed/safe, wrong, and the safe stubs
/// withheld by the size rule), so a seed that moves a host's share shows
/// which, and why.
fn per_host(s: &Stats) -> String {
    s.hosts
        .iter()
        .map(|(h, hs)| {
            let size = hs.lost.get(SIZE_RULE_LOSS).copied().unwrap_or(0);
            format!(" {} {}/{} wrong {} size {size}", h.cli(), hs.safe_allowed, hs.safe, hs.wrong)
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The seeds of this run: fixed ones and one fresh seed (or 200 under
/// `LEANCTX_STRESS=1`), or `LEANCTX_SEED`..+`LEANCTX_SIM_SEEDS` to replay.
fn seeds(name: &str) -> Vec<u64> {
    if let Some(s) = std::env::var("LEANCTX_SEED").ok().and_then(|s| s.trim().parse::<u64>().ok()) {
        let n = rng::count("LEANCTX_SIM_SEEDS", 1, 1);
        println!("sim-ledger[{name}]: replaying seeds {s}..{}", s + n);
        return (0..n).map(|i| s.wrapping_add(i)).collect();
    }
    let base = rng::base_seed(&format!("sim-ledger[{name}]"));
    let fresh = rng::count("LEANCTX_SIM_SEEDS", 1, 200 - FIXED_SEEDS.len() as u64);
    FIXED_SEEDS.iter().copied().chain((0..fresh).map(|i| base.wrapping_add(i))).collect()
}

/// Run every seed: the total, and the total of the fixed seeds alone (when
/// they ran), which is what the floors are asserted on: deterministic, so
/// a fresh seed's luck cannot fail CI, while every seed must have 0 wrong.
/// `each_seed_clean`: stop at the first seed with a wrong stub (else run
/// every seed, for a variant that counts them).
fn run_many(name: &str, knobs: Knobs, each_seed_clean: bool) -> (Stats, Option<Stats>) {
    let steps = rng::count("LEANCTX_SIM_STEPS", 350, 700);
    let seeds = seeds(name);
    // Two seeds at a time (each is sequential and deterministic on its own).
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut runs: Vec<(u64, Stats)> = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                sc.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&seed) = seeds.get(i) else { break out };
                        out.push((seed, run_seed(seed, steps, knobs)));
                    }
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    runs.sort_by_key(|(seed, _)| seeds.iter().position(|s| s == seed));
    let mut total = Stats::default();
    let mut fixed = Stats::default();
    for (seed, s) in runs {
        println!(
            "sim-ledger[{name}] seed {seed}: {} hooks, {} questions, {} safe, {} allowed, trace {:016x};{}",
            s.hooks,
            s.hosts.values().map(|h| h.questions).sum::<u64>(),
            s.hosts.values().map(|h| h.safe).sum::<u64>(),
            s.hosts.values().map(|h| h.safe_allowed).sum::<u64>(),
            s.trace,
            per_host(&s)
        );
        assert!(
            !each_seed_clean || s.wrong() == 0,
            "sim-ledger[{name}]: {} wrong stubs with seed {seed} (replay: LEANCTX_SEED={seed}):\n{}",
            s.wrong(),
            s.wrong_detail.join("\n")
        );
        if FIXED_SEEDS.contains(&seed) {
            fixed.add(&s);
        }
        total.add(&s);
    }
    println!("{}", report(name, &total));
    (total, (fixed.seeds as usize == FIXED_SEEDS.len()).then_some(fixed))
}

/// The issue's floors: safe stubs allowed ≥ 90 % on Claude Code and Codex,
/// ≥ 75 % on Cursor and CodeBuddy.
fn assert_floors(what: &str, s: &Stats) {
    for (h, floor) in [(H::Claude, 90.0), (H::Codex, 90.0), (H::Cursor, 75.0), (H::CodeBuddy, 75.0)] {
        let hs = &s.hosts[&h];
        assert!(hs.safe >= 40, "{what}: {}: too few safe stubs to measure ({hs:?})", h.name());
        let share = pct(hs.safe_allowed, hs.safe);
        assert!(share >= floor, "{what}: {}: safe stubs allowed {share:.1}% < {floor}%: {hs:?}", h.name());
    }
}

/// The ledger in the shared-server setting: zero wrong stubs, the savings
/// floors of the issue per host, and every ledger reason reached.
#[test]
fn ledger_simulation_zero_wrong_stubs_and_savings_floors() {
    let (s, fixed) = run_many("shared", KNOBS, true);
    assert_eq!(s.wrong(), 0);
    if let Some(f) = &fixed {
        println!("{}", report("shared, fixed seeds", f));
        // The withdrawals are really exercised: rewinds, idle cuts (and
        // silences in each band around the thresholds), questions while two
        // processes of one session run.
        assert!(f.rewinds > 0 && f.idle_cuts > 0 && f.cut_results > 0, "{}", report("fixed seeds", f));
        assert!(f.silences.iter().all(|&n| n > 0), "{}", report("fixed seeds", f));
        assert!(f.second_processes > 0 && f.two_process_questions > 0, "{}", report("fixed seeds", f));
        // The issue's floors are asserted on 100 seeds or more (below): 16
        // seeds hold too few safe stubs per host (Claude Code: 93) for a
        // floor a few points under the mean, now that idle returns cost
        // what the idle rule costs.
        if rng::count("LEANCTX_SIM_STEPS", 350, 700) == 350 {
            // The CI run's figures (RELIABILITY.md), deterministic: floors
            // a little under what they measure.
            for (h, floor) in [(H::Claude, 94.0), (H::Codex, 94.0), (H::Cursor, 91.0), (H::CodeBuddy, 75.0)] {
                let hs = &f.hosts[&h];
                let share = pct(hs.safe_allowed, hs.safe);
                assert!(share >= floor && hs.questions >= 190, "fixed seeds: {}: {share:.1}% {hs:?}", h.name());
            }
            assert!(f.hooks >= 3_100 && f.compactions >= 80 && f.subagents >= 80 && f.ends >= 30, "{f:?}");
            assert!(f.disabled >= 25 && f.faults >= 5, "{f:?}");
            assert!(f.rewinds >= 15 && f.new_processes >= 2 && f.idle_cuts >= 3 && f.second_processes >= 10, "{f:?}");
        }
    }
    if s.seeds >= 100 {
        // The issue's floors. Claude Code's 90 % is met since a process's
        // own copy and one process's idle return (200 seeds: 92.7 %,
        // RELIABILITY.md "With withdrawals"). Cursor's 75 % is the draw's
        // on fresh seeds: a hundred's figure has a spread of about 3 points
        // around 77.8 %, and a stress run (184 fresh seeds) falls under
        // 75 % about one time in ten (RELIABILITY.md, "Seed bases"). The
        // floors are the issue's: kept.
        assert_floors("all seeds", &s);
    }
    // The large run RELIABILITY.md cites (seeds 1–200 × 700 steps: it
    // replays exactly): its figures, when it is the run being made.
    let published = std::env::var("LEANCTX_SEED").is_ok_and(|v| v.trim() == "1")
        && s.seeds == 200
        && rng::count("LEANCTX_SIM_STEPS", 350, 700) == 700;
    if published {
        for (h, floor) in [(H::Claude, 92.6), (H::Codex, 91.5), (H::Cursor, 80.6), (H::CodeBuddy, 79.1)] {
            let hs = &s.hosts[&h];
            assert!(pct(hs.safe_allowed, hs.safe) >= floor, "seeds 1-200: {}: {hs:?}", h.name());
        }
        let questions: u64 = s.hosts.values().map(|h| h.questions).sum();
        assert!(questions >= 23_231 && s.hooks >= 78_822 && s.compactions >= 2_197, "{}", report("seeds 1-200", &s));
        assert!(s.idle_cuts >= 151 && s.rewinds >= 425 && s.second_processes >= 177, "{}", report("seeds 1-200", &s));
    }
    let Some(s) = fixed else { return };
    let reasons = s.reasons();
    println!("{}", coverage("shared, fixed seeds", &s));
    for r in [
        "confirmed-delivery",
        "not-delivered",
        "version-changed",
        "window-changed",
        "unconfirmed",
        "compacted",
        "state-unavailable",
        "scope-disabled",
        "withdrawn",
    ] {
        assert!(reasons.get(r).copied().unwrap_or(0) > 0, "reason {r} never reached: {reasons:?}");
    }
    assert!(s.hosts[&H::Claude].reasons.contains_key("unrecorded-call"), "{reasons:?}");
    assert!(s.disabled > 0 && s.disabled == reasons["scope-disabled"], "{s:?}");
    assert!(s.faults > 0 && reasons["state-unavailable"] <= s.faults, "{s:?}");
}

/// `LEANCTX_SEED=S` replays a run exactly: the same seed twice gives the
/// same statistics, every decision, verdict, reason label and count.
#[test]
fn ledger_simulation_replays_bit_for_bit() {
    let a = run_seed(42, 250, KNOBS);
    let b = run_seed(42, 250, KNOBS);
    assert_eq!(a, b, "seed 42 does not replay");
    assert!(a.hosts.values().map(|h| h.questions).sum::<u64>() > 20, "{a:?}");
}

/// Claude Code subagents that compact their own context (half of the
/// Claude compactions while a subagent runs, and after half of a
/// subagent's reads): the hooks carry its
/// `agent_id`, so the record ends that subagent's deliveries and not the
/// main thread's nor another subagent's; the oracle replaces only that
/// subagent's window. 0 wrong stubs, and the compactions really happen.
#[test]
fn ledger_simulation_claude_subagents_compacting_themselves() {
    let (s, fixed) = run_many("subagent-compactions", Knobs { claude_sub_compaction: 0.5, ..KNOBS }, true);
    assert_eq!(s.wrong(), 0, "{}", report("subagent-compactions", &s));
    assert!(s.sub_compactions > 0, "{}", report("subagent-compactions", &s));
    if let Some(f) = &fixed {
        println!("{}", report("subagent-compactions, fixed seeds", f));
        assert!(f.sub_compactions >= 5, "{}", report("subagent-compactions, fixed seeds", f));
    }
}

/// Claude Code subagents whose own transcript the host never writes where
/// it keeps them (half of them; the rest as the host writes them, some
/// compacting themselves; subagents make most reads while they run): their
/// stubs are withheld, every one (`transcript-unavailable`: a compaction
/// there could not be seen), and no stub is wrong.
#[test]
fn ledger_simulation_claude_subagents_without_a_transcript() {
    let knobs = Knobs { claude_sub_unwritten: 0.5, claude_sub_compaction: 0.25, sub_read: 0.9, ..KNOBS };
    let (s, fixed) = run_many("subagents-unwritten", knobs, true);
    let r = report("subagents-unwritten", &s);
    assert_eq!(s.wrong(), 0, "{r}");
    assert_eq!(s.unwritten_allowed, 0, "{r}\n{}", s.unwritten_detail.join("\n"));
    let f = fixed.as_ref().unwrap_or(&s);
    println!("{}", report("subagents-unwritten, fixed seeds", f));
    // They were asked, and their safe re-reads were withheld for it.
    assert!(f.unwritten_questions >= 20 && f.unwritten_safe >= 3, "{r}");
    assert_eq!(f.unwritten_safe_unavailable, f.unwritten_safe, "{r}");
}

/// Hosts that name calls by fingerprint, with what the ledger gets wrong
/// there (each reproduced deterministically below): Cursor and CodeBuddy
/// calls interrupted, Cursor task hooks without `CURSOR_TASK_ID`, and more
/// hooks that die (a call without its own record claims another host's).
#[test]
fn ledger_simulation_fingerprint_hosts_with_interrupts_and_task_hooks_without_env() {
    let (s, fixed) = run_many(
        "fingerprint-faults",
        Knobs {
            interrupt_fingerprint: 0.05,
            cursor_no_task_env: 0.1,
            fail_hook: 0.05,
            fail_fingerprint_pre: true,
            ..KNOBS
        },
        false,
    );
    // Every seed runs (no stop at the first wrong stub): the report counts them all.
    let wrong: Vec<&String> = s.wrong_detail.iter().take(10).collect();
    assert!(
        s.wrong() == 0 && s.misresolved_detail.is_empty(),
        "{} wrong stubs, {} calls resolved exactly to another caller; first wrong stubs:\n{wrong:#?}\n{}",
        s.wrong(),
        s.misresolved_detail.len(),
        report("fingerprint-faults", &s)
    );
    // Its faults reach the ledger's two caller codes the main variant does
    // not: a call whose hook died (or that another chat made too), and a
    // Cursor task hook without its env while the task runs.
    let Some(f) = fixed else { return };
    println!("{}", coverage("fingerprint-faults, fixed seeds", &f));
    let reasons = f.reasons();
    for r in ["unknown-caller", "subagent-active", "unrecorded-call"] {
        assert!(reasons.get(r).copied().unwrap_or(0) > 0, "reason {r} never reached: {reasons:?}");
    }
}

/// Every reason code the ledger answers with (`ReadPath::stub`).
const LEDGER_REASONS: [&str; 13] = [
    "confirmed-delivery",
    "not-delivered",
    "version-changed",
    "window-changed",
    "unconfirmed",
    "compacted",
    "unrecorded-call",
    "unknown-caller",
    "subagent-active",
    "state-unavailable",
    "scope-disabled",
    "withdrawn",
    "transcript-unavailable",
];

fn coverage(name: &str, s: &Stats) -> String {
    let reasons = s.reasons();
    let mut out = format!(
        "sim-ledger[{name}] reason coverage (scoping disabled: {} answers, {} unsafe; {} questions on unreadable state):",
        s.disabled, s.disabled_unsafe, s.faults
    );
    for r in LEDGER_REASONS {
        out.push_str(&format!("\n  {r:<20} {:>6}", reasons.get(r).copied().unwrap_or(0)));
    }
    out
}

// Deterministic regressions for what this simulation found.

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.data).unwrap();
    crate::support::make_private(&sb.data);
    sb
}

fn at(sb: &Sandbox, host: &str, t: u64, p: Value, task_env: Option<&str>) {
    let mut run = sb.hook(host, p.to_string()).env("LEAN_CTX_NOW_MS", t.to_string());
    if let Some(task) = task_env {
        run = run.env("CURSOR_TASK_ID", task);
    }
    run.ok();
}

/// The shared server's read of `path` (no call id: Cursor, CodeBuddy):
/// one `stub` question with the result it would send.
fn server_read(sb: &Sandbox, t: u64, rpc: u64, path: &str, text: &str) -> leanctx::identity::stub::LedgerAnswer {
    let request = json!({"jsonrpc": "2.0", "id": rpc, "method": "tools/call",
        "params": {"name": "ctx_read", "arguments": {"path": path}, "_meta": {}}});
    let call = McpCall::from_json(&request).unwrap();
    let sent = ledger::sent_content(&json!({"content": blocks(text)})).unwrap();
    ReadPath::new(&sb.data, ScopeEnv::default()).at(t).stub(&call, path, "v1", Some(&sent)).unwrap()
}

/// CodeBuddy: the main agent's read is interrupted (the server delivered,
/// the model never got it, no PostToolUse). A subagent of the same session
/// then reads the same file, and its PostToolUse — named by tool and
/// arguments, which only the conversation qualifies — acknowledges the
/// *main agent's* delivery too. The main agent's next re-read is stubbed:
/// a stub of content it never received. (Found by
/// `ledger_simulation_fingerprint_hosts_with_interrupts_and_task_hooks_without_env`;
/// Cursor the same, with a task's afterMCPExecution.)
#[test]
fn a_subagents_acknowledgement_confirms_the_parents_interrupted_delivery() {
    let sb = sandbox();
    let t = 1_800_000_000_000u64;
    let path = "/p/a.rs";
    let text = "fn main() {}\n".repeat(50);
    let pre = |t: u64, id: &str, agent: Option<&str>| {
        let mut p = json!({"hook_event_name": "PreToolUse", "session_id": "S", "tool_name": "mcp__ctx__ctx_read",
            "tool_input": {"path": path}, "tool_use_id": id});
        if let Some(a) = agent {
            p["agent_id"] = json!(a);
        }
        at(&sb, "codebuddy", t, p, None);
    };
    at(&sb, "codebuddy", t, json!({"hook_event_name": "SessionStart", "session_id": "S", "source": "startup"}), None);
    // The main agent reads a.rs; the user interrupts: no PostToolUse.
    pre(t + 10, "toolu_1", None);
    let a = server_read(&sb, t + 11, 1, path, &text);
    assert_eq!(a.decision.reason.as_str(), "not-delivered");
    assert_eq!(a.recorded.as_ref().map(|r| r.recorded), Some(true), "{a:?}");
    // A subagent reads a.rs and gets it whole.
    at(&sb, "codebuddy", t + 20, json!({"hook_event_name": "SubagentStart", "session_id": "S", "agent_id": "A"}), None);
    pre(t + 30, "toolu_2", Some("A"));
    let b = server_read(&sb, t + 31, 2, path, &text);
    assert_eq!((b.caller.scope.as_deref(), b.decision.reason.as_str()), (Some("agent:A"), "not-delivered"));
    at(
        &sb,
        "codebuddy",
        t + 32,
        json!({"hook_event_name": "PostToolUse", "session_id": "S", "agent_id": "A", "tool_name": "mcp__ctx__ctx_read",
            "tool_input": {"path": path}, "tool_use_id": "toolu_2", "tool_response": blocks(&text)}),
        None,
    );
    // The main agent re-reads: it never received a.rs.
    pre(t + 40, "toolu_3", None);
    let c = server_read(&sb, t + 41, 3, path, &text);
    assert_eq!(c.caller.scope.as_deref(), Some("S"));
    assert!(!c.decision.allow, "a stub of content the main agent never got: {}", serde_json::to_string(&c).unwrap());
}

/// Cursor chat `C` starts at `t` and starts task `T` at `t + 10`; the
/// returned maker builds C's MCP hook payloads for a `ctx_read` of `path`.
fn cursor_chat_with_task(sb: &Sandbox, t: u64, path: &str) -> impl Fn(&str) -> Value {
    at(sb, "cursor", t, json!({"hook_event_name": "sessionStart", "conversation_id": "C"}), None);
    at(
        sb,
        "cursor",
        t + 10,
        json!({"hook_event_name": "subagentStart", "conversation_id": "C", "subagent_id": "T",
            "parent_conversation_id": "C", "subagent_type": "explore"}),
        None,
    );
    let input = json!({"path": path}).to_string();
    move |name: &str| {
        json!({"hook_event_name": name, "conversation_id": "C", "tool_name": "ctx_read",
        "tool_input": input, "command": "lean-ctx"})
    }
}

/// Cursor: a task's hook without `CURSOR_TASK_ID` (docs/HOST-FACTS.md §3: the env is
/// not reliable) records the call under the parent conversation, so the
/// task's delivery is labelled with the parent's scope, and the parent's
/// next read of that file is stubbed though the parent never got it. The
/// scope check withheld this case as `subagent-active`; the ledger has no
/// such guard. (Found by the simulation with `cursor_no_task_env`.)
#[test]
fn a_cursor_task_without_its_env_hands_its_delivery_to_the_parent() {
    let sb = sandbox();
    let t = 1_800_000_000_000u64;
    let path = "/p/b.rs";
    let text = "pub fn b() {}\n".repeat(40);
    let ev = cursor_chat_with_task(&sb, t, path);
    // The task reads b.rs; its hooks run without CURSOR_TASK_ID.
    at(&sb, "cursor", t + 20, ev("beforeMCPExecution"), None);
    let a = server_read(&sb, t + 21, 1, path, &text);
    // A fingerprint caller while a subagent runs could be the subagent:
    // no stub, and no delivery recorded under the parent.
    assert_eq!(a.decision.reason.as_str(), "subagent-active");
    assert_eq!(a.recorded.as_ref().map(|r| r.recorded), Some(false));
    let mut after = ev("afterMCPExecution");
    after["result_json"] = json!(json!({"content": blocks(&text)}).to_string());
    at(&sb, "cursor", t + 22, after, None);
    // The parent (the task still running) reads b.rs for the first time.
    at(&sb, "cursor", t + 5_000, ev("beforeMCPExecution"), None);
    let b = server_read(&sb, t + 5_001, 2, path, &text);
    assert!(!b.decision.allow, "a stub of content the parent never got: {}", serde_json::to_string(&b).unwrap());
}

/// A Cursor call whose `beforeMCPExecution` hook died (killed, disk full,
/// lock busy: it fails open) reaches the server with no record of its own.
/// Fingerprint claims take every host's records, so it claims the record of
/// a Claude Code chat that just read the same path (Claude's server
/// resolves by tool-use id and never claims it): the Cursor call resolves
/// *exactly* to the Claude session, whose delivery of the file is
/// confirmed, and the Cursor chat gets a stub of a file it never read.
/// (Seen in the 200-seed run as a Cursor `window-changed`: the same claim
/// of a Codex record, withheld only because Codex's windowId differed.)
#[test]
fn a_cursor_call_whose_hook_died_claims_a_claude_record_and_its_stub() {
    let sb = sandbox();
    let t = 1_800_000_000_000u64;
    let path = "/p/c.rs";
    let text = "pub fn c() {}\n".repeat(40);
    let sent = ledger::sent_content(&json!({"content": blocks(&text)})).unwrap();
    let claude_read = |t: u64, id: &str| {
        at(
            &sb,
            "claude",
            t,
            json!({"hook_event_name": "PreToolUse", "session_id": "A", "tool_name": "mcp__ctx__ctx_read",
                "tool_input": {"path": path}, "tool_use_id": id}),
            None,
        );
        let call = McpCall::from_json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "ctx_read", "arguments": {"path": path}, "_meta": {"claudecode/toolUseId": id}}}))
        .unwrap();
        ReadPath::new(&sb.data, ScopeEnv::default()).at(t + 1).stub(&call, path, "v1", Some(&sent)).unwrap()
    };
    let transcript = sb.tmp.path().join("A.jsonl");
    std::fs::write(&transcript, "").unwrap();
    at(
        &sb,
        "claude",
        t,
        json!({"hook_event_name": "SessionStart", "session_id": "A", "source": "startup", "transcript_path": transcript}),
        None,
    );
    for id in ["toolu_1", "toolu_2"] {
        crate::support::host_writes_call(&transcript, id);
    }
    at(&sb, "cursor", t, json!({"hook_event_name": "sessionStart", "conversation_id": "C"}), None);
    // Claude reads c.rs; PostToolBatch confirms it whole.
    assert_eq!(claude_read(t + 10, "toolu_1").decision.reason.as_str(), "not-delivered");
    at(
        &sb,
        "claude",
        t + 12,
        json!({"hook_event_name": "PostToolBatch", "session_id": "A", "tool_calls": [{"tool_name":
            "mcp__ctx__ctx_read", "tool_use_id": "toolu_1", "tool_input": {"path": path},
            "tool_response": blocks(&text)}]}),
        None,
    );
    // Claude re-reads it: a stub, rightly.
    let again = claude_read(t + 20_000, "toolu_2");
    assert!(again.decision.allow, "{again:?}");
    // The Cursor chat reads c.rs for the first time; its beforeMCPExecution died.
    let b = server_read(&sb, t + 20_500, 7, path, &text);
    assert_ne!(b.caller.scope.as_deref(), Some("A"), "the Cursor call named the Claude session exactly: {b:?}");
    assert!(!b.decision.allow, "a stub of a file the Cursor chat never read: {}", serde_json::to_string(&b).unwrap());
}

/// The other side of `subagent-active`: a Cursor task that names itself
/// (`CURSOR_TASK_ID` in its hooks' env) is told from its parent, so its own
/// delivery, confirmed by its own `afterMCPExecution`, backs its re-read
/// while it runs. Only the parent, whose fingerprint the task's calls
/// share, is withheld. (A mutation that treated every scope as the parent's
/// survived the suite.)
#[test]
fn a_cursor_task_that_names_itself_gets_its_own_stubs_while_it_runs() {
    let sb = sandbox();
    let t = 1_800_000_000_000u64;
    let path = "/p/t.rs";
    let text = "pub fn t() {}\n".repeat(40);
    let ev = cursor_chat_with_task(&sb, t, path);
    at(&sb, "cursor", t + 20, ev("beforeMCPExecution"), Some("T"));
    let a = server_read(&sb, t + 21, 1, path, &text);
    assert_eq!((a.caller.scope.as_deref(), a.decision.reason.as_str()), (Some("task:T"), "not-delivered"), "{a:?}");
    assert_eq!(a.recorded.as_ref().map(|r| r.recorded), Some(true), "{a:?}");
    let mut after = ev("afterMCPExecution");
    after["result_json"] = json!(json!({"content": blocks(&text)}).to_string());
    at(&sb, "cursor", t + 22, after, Some("T"));
    // The task re-reads: its own confirmed delivery.
    at(&sb, "cursor", t + 2_000, ev("beforeMCPExecution"), Some("T"));
    let b = server_read(&sb, t + 2_001, 2, path, &text);
    assert_eq!(b.caller.scope.as_deref(), Some("task:T"), "{b:?}");
    assert_eq!(b.decision.reason.as_str(), "confirmed-delivery", "{b:?}");
    assert!(b.decision.allow);
    // The parent, while the task runs, is withheld.
    at(&sb, "cursor", t + 5_000, ev("beforeMCPExecution"), None);
    let c = server_read(&sb, t + 5_001, 3, path, &text);
    assert_eq!(c.decision.reason.as_str(), "subagent-active", "{c:?}");
}
