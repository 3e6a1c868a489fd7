//! The read path: what an MCP server asks before serving an `[unchanged]`
//! stub. Library API here; the same decisions are CLI commands (`leanctx
//! scope …`) for servers not written in Rust.
//!
//! ```no_run
//! use leanctx::identity::readpath::{ReadPath, StubQuery};
//! let rp = ReadPath::from_process();
//! // At delivery: remember who got the content (only if certainly known:
//! // `delivery_scope`, never `caller.scope`), and when.
//! let who = rp.delivery_scope(&rp.resolve(None, leanctx::base::clock::now_ms()));
//! // At re-read: may this caller get the stub?
//! let ans = rp.decide(&StubQuery { delivered: who.as_deref(), delivered_at_ms: Some(0), cold: false, call: None });
//! if ans.decision.allow { /* serve the stub */ }
//! ```

use crate::base::host::Host;
use crate::base::paths;
use crate::base::scope::ScopeKind;
use crate::identity::caller::{self, Caller, ScopeEnv, Source};
use crate::identity::decision::{self, Decision, Facts};
use crate::identity::mcp_call::{self, McpCall, PerCall};
use crate::state::digest::{Digest, Reader};
use crate::state::journal::{Call, Journal, View};
use crate::state::ledger::{Ack, Delivery};
use crate::state::slot::{self, SlotRead};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod ask;
mod asking;
mod build;
mod compat;
mod readers;

pub(crate) use ask::Ask;
pub(crate) use asking::asking;
use asking::{check_dir, question};
pub use compat::*;
use readers::{READERS, claim, lock_readers, reader_for};

/// How long [`current_conversation_id`] trusts its last answer.
pub const CACHE_TTL: Duration = Duration::from_secs(3);
/// The most one answer of the read path waits for journal locks, all
/// reads and a claim together (a decision may read twice and claim once).
/// A lock still busy then (a hook frozen while it holds it) means the state
/// cannot be read: withhold.
pub const READ_WAIT: Duration = Duration::from_millis(500);
/// A delivery time further than this ahead of the reader's clock is not
/// trusted (microseconds passed for milliseconds, a clock that went back):
/// the compaction check then applies as without a time.
pub const DELIVERY_AHEAD_MS: u64 = 5_000;

/// A reader bound to one data dir and one environment.
#[derive(Clone, Debug)]
pub struct ReadPath {
    dir: Option<PathBuf>,
    env: ScopeEnv,
    /// Fixed "now" for tests; `None` = the clock.
    now_override: Option<u64>,
    /// The MCP server process: this one for the library, the parent for
    /// the CLI (the server that spawned `leanctx scope …`).
    server_pid: u32,
    /// Who records the ledger answers in the stats (`None`: the caller
    /// records its own final answer, as `leanctx serve` does).
    stats: Option<crate::stats::Via>,
    /// The data dir was named but refused (a relative `LEAN_CTX_DATA_DIR`):
    /// there is state somewhere that this process cannot find, so it is
    /// unavailable, not absent.
    dir_refused: bool,
    /// The host process the server runs under, when given (tests; else
    /// the server's parent, looked up once).
    host_pid: Option<u32>,
}

/// A stub question.
#[derive(Clone, Debug, Default)]
pub struct StubQuery<'a> {
    /// Scope the content was delivered to (`None` = unscoped delivery).
    pub delivered: Option<&'a str>,
    /// When it was delivered (unix ms), for the compaction check.
    pub delivered_at_ms: Option<u64>,
    /// Cold stub (entry from a persisted index) rather than warm.
    pub cold: bool,
    /// The MCP call being answered, for per-call identity.
    pub call: Option<&'a McpCall>,
}

/// The caller and how it was found.
#[derive(Clone, Debug, Serialize)]
pub struct Resolution {
    /// Who is asking, and from which source.
    pub caller: Caller,
    /// What per-call identity made of the call context.
    pub per_call: PerCall,
    /// State the resolution needed exists but cannot be trusted (a slot
    /// that is a FIFO, a symlink, too large, or does not parse): decisions
    /// on this resolution withhold (`state-unavailable`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_problem: Option<String>,
}

impl Resolution {
    fn new(caller: Caller, per_call: PerCall) -> Resolution {
        Resolution { caller, per_call, state_problem: None }
    }
}

/// A stub decision with everything that led to it.
#[derive(Clone, Debug, Serialize)]
pub struct StubAnswer {
    /// Allow or withhold, and why.
    pub decision: Decision,
    /// The caller the decision was made for.
    pub caller: Caller,
    /// Whether the call named its caller (`resolved`), named nobody, or was not given.
    pub per_call: PerCall,
    /// Several conversations are live (slot-based answers are withheld).
    pub concurrent: bool,
    /// The caller's conversation's last compaction (unix ms), if any.
    pub last_compaction_ms: Option<u64>,
    /// If the server delivers the full content to this caller now (the stub
    /// was withheld), the scope to remember for it: see
    /// [`decision::delivery_scope`]. Never label a delivery with
    /// `caller.scope` directly.
    pub delivery_scope: Option<String>,
}

impl ReadPath {
    /// Resolve the caller: the whole scope chain, per-call identity included
    /// when `call` is given. A Cursor fingerprint match is claimed here.
    pub fn resolve(&self, call: Option<&McpCall>, now: u64) -> Resolution {
        let _q = asking();
        let deadline = Instant::now() + READ_WAIT;
        self.with_journal(now, deadline, |j, _| self.resolve_with(call, j, now, deadline))
    }

    /// Run `f` on what the journal says now, and whether it could not be
    /// read. No usable data dir (no hook has run): an empty journal, the
    /// legacy rules apply. State that exists but cannot be read: an empty
    /// journal and `true`, and the decisions withhold.
    ///
    /// The journal is read through this process's [`Reader`] for the data
    /// dir: the shared lock, then only the bytes appended since the last
    /// call (a trim or any rewrite starts over). Reading and parsing the
    /// whole file instead cost every decision in proportion to the journal,
    /// ~250 µs at its bound; see benches/hooks. In the rare case the digest
    /// cannot answer exactly at `now` (a record stamped beyond the clock
    /// skew), the whole file is read as before.
    ///
    /// "No hook has run" is only believed of state that is truly empty: no
    /// data dir at all (a dangling symlink is not "none"), or a data dir
    /// without journal, lock file or a live slot that leanctx's hooks wrote
    /// (lean-ctx's own slot, without `host`, is the legacy setup). Lock
    /// waits end at `deadline`.
    pub(crate) fn with_journal<R>(&self, now: u64, deadline: Instant, f: impl FnOnce(&dyn Ask, bool) -> R) -> R {
        let empty = View { records: Vec::new() };
        let Some(d) = self.dir.as_deref() else { return f(&empty, self.dir_refused) };
        match check_dir(d) {
            Ok(()) => {}
            Err(paths::DirProblem::Io { err, .. })
                if err.kind() == std::io::ErrorKind::NotFound && std::fs::symlink_metadata(d).is_err() =>
            {
                return f(&empty, false);
            }
            Err(_) => return f(&empty, true),
        }
        let journal = Journal::new(d);
        let mut readers = lock_readers(&READERS);
        let reader = reader_for(&mut readers, d, Reader::default);
        // The second read of one question (after the slot, after the
        // witness) skips the lock when the journal did not change since the
        // first: see `Reader::refresh_in`.
        match reader.refresh_in(&journal, deadline, question()) {
            Err(_) => f(&empty, true),
            Ok(()) if reader.is_new() => {
                // No journal and no lock file: truly empty only if no
                // leanctx hook left a live slot either (else the journal
                // was deleted with its lock, and what it said is lost).
                let hooks_ran = match slot::read_slot(d, now) {
                    Ok(SlotRead::Absent | SlotRead::Expired(_)) => false,
                    Ok(SlotRead::Live(s)) => s.host.is_some(),
                    Ok(SlotRead::Invalid) | Err(_) => true,
                };
                f(&empty, hooks_ran)
            }
            Ok(()) if reader.digest().exact_at(now) => f(&*reader, false),
            Ok(()) => {
                drop(readers);
                match journal.read_until(deadline) {
                    Ok(text) => f(&View::parse(&text), false),
                    Err(_) => f(&empty, true),
                }
            }
        }
    }

    fn resolve_with(&self, call: Option<&McpCall>, view: &dyn Ask, now: u64, deadline: Instant) -> Resolution {
        if let Some(c) = caller::disabled(&self.env) {
            return Resolution::new(c, PerCall::NotGiven);
        }
        // Per-call evidence first: the server's own environment names whoever
        // started the server, and a shared one serves many (issue: a shared
        // daemon with CLAUDE_CODE_SESSION_ID gave every caller that session).
        let mut per_call = PerCall::NotGiven;
        if let Some(call) = call {
            match self.per_call(call, view, now, deadline) {
                Ok(c) => return Resolution::new(c, PerCall::Resolved),
                // A per-call id names exactly one call: with no record of
                // it (its hook could not record, or never ran) nothing else
                // may stand in for it (the slot would name whoever wrote
                // last): unknown, and decisions withhold `unrecorded-call`.
                Err(PerCall::NoRecord) => return Resolution::new(Caller::unknown(), PerCall::NoRecord),
                Err(p) => per_call = p,
            }
        }
        let lineage = self.host_lineage(view, now);
        // The server's CLAUDE_CODE_SESSION_ID decides only when proven (its
        // host's own hooks recorded the session): unproven, it names one
        // session for every caller of a shared server, for ever, which is
        // less than the slot (the last writer, at least). So it is skipped.
        let env_caller = caller::custom(&self.env)
            .or_else(|| caller::env_after_call(&self.env, lineage))
            .filter(|c| c.exact || c.source != Source::ProcessEnv);
        // A call that was given but named nobody (no unclaimed record, two
        // chats made it, the state failed) may be any live chat's: only a
        // proven per-process identity may stand in, never a guess (the slot
        // names the last writer, maybe the other chat).
        let call_failed = !matches!(per_call, PerCall::NotGiven);
        match env_caller {
            Some(c) if c.exact || !call_failed => return Resolution::new(c, per_call),
            _ if call_failed => return Resolution::new(Caller::unknown(), per_call),
            _ => {}
        }
        let mut state_problem = None;
        #[cfg(test)]
        tests::BEFORE_SLOT.with_borrow(|f| f.as_ref().map(|f| f()));
        let caller = match self.usable_dir().map(|d| slot::read_slot(d, now)) {
            Some(Ok(SlotRead::Live(s))) => caller::from_slot(&s),
            // A slot that is there but cannot be read is not "no caller":
            // the legacy single-conversation allow must not apply.
            Some(Ok(SlotRead::Invalid)) => {
                state_problem = Some(format!("{} does not parse", paths::SLOT_FILE));
                Caller::unknown()
            }
            Some(Err(e)) => {
                state_problem = Some(e.to_string());
                Caller::unknown()
            }
            _ => Caller::unknown(),
        };
        Resolution { caller, per_call, state_problem }
    }

    /// The session the server's host process serves now, from that Claude
    /// process's own SessionStart hooks (`None`: not proven).
    fn host_lineage<'v>(&self, view: &'v dyn Ask, now: u64) -> Option<&'v str> {
        self.env
            .parent_pid
            .filter(|_| self.env.claude_session_id.is_some())
            .and_then(|pid| view.lineage_for(Host::ClaudeCode, pid, now))
            .map(|(_, c)| c)
    }

    pub(crate) fn per_call(
        &self,
        call: &McpCall,
        view: &dyn Ask,
        now: u64,
        deadline: Instant,
    ) -> Result<Caller, PerCall> {
        if let Some(c) = call.codex_caller() {
            // The hook's record of this very call (Codex `callId` is the hook's
            // `tool_use_id`) is more specific than `_meta`: it names a subagent
            // (`agent_id`) that a `_meta` without `threadId` does not.
            if let Some(rec) = call.meta_call_id().and_then(|id| view.call_by_id(id))
                && rec.host == Host::Codex
            {
                let scope = rec.agent.unwrap_or(rec.conv).to_string();
                return Ok(Caller::new(c.source, Some(scope), Some(rec.conv.to_string()), Some(Host::Codex)));
            }
            return Ok(c);
        }
        if let Some(id) = call.claude_tool_use_id() {
            return view.call_by_id(id).map(|c| mcp_call::caller_from_call(&c)).ok_or(PerCall::NoRecord);
        }
        // Fingerprint matching is for hosts that give the server no per-call
        // id (Cursor, CodeBuddy). A server that Claude Code provably started
        // (its host's hooks recorded the session) must not claim their
        // records, whatever its calls look like; a server that merely has
        // the env (a shared daemon) serves them too.
        if self.env.claude_session_id.is_some() && self.host_lineage(view, now).is_some() {
            return Err(PerCall::NoMatch);
        }
        // Fingerprint: decide and claim under one exclusive lock, so a call
        // record is claimed exactly once across processes.
        // Call records keep the fingerprint sealed with the data dir's
        // secret: without it no record can be found or ruled out.
        let Some(dir) = self.usable_dir() else { return Err(PerCall::StateError) };
        let Some(secret) = self.secret() else { return Err(PerCall::StateError) };
        let fp = secret.seal_fp(&call.fingerprint());
        let token = mcp_call::claimant_token(self.server_pid, call, &fp);
        claim(dir, call, &fp, token.as_deref(), now, view.reader(), deadline).unwrap_or(Err(PerCall::StateError))
    }

    /// What the journal says around `caller` at `now`.
    pub fn facts(&self, view: &View<'_>, caller: &Caller, now: u64) -> Facts {
        self.facts_of(view, caller, now)
    }

    fn facts_of(&self, view: &dyn Ask, caller: &Caller, now: u64) -> Facts {
        let conv = caller.conversation.as_deref().or(caller.scope.as_deref());
        // A scope that names no conversation (`custom:`, `task:` from the
        // env) may be any chat's: every compaction applies to it.
        let unbound = caller.conversation.is_none()
            && caller.scope.as_deref().is_some_and(|s| matches!(ScopeKind::of(s), ScopeKind::Custom | ScopeKind::Task));
        let last_compaction = conv.and_then(|c| view.last_compaction(c));
        let last_compaction = if unbound { last_compaction.max(view.latest_compaction_any()) } else { last_compaction };
        Facts {
            unavailable: false,
            concurrent: view.concurrent(now),
            last_compaction,
            compaction_floor: view.compaction_floor(),
            subagent_active: Self::subagent_running(view, caller, now),
            subagent_at_delivery: false,
            several_known: conv.is_none() && view.several_conversations(),
            // The slot names its last writer; a Cursor task's hooks do not
            // write it. A live conversation other than the one it names
            // (found by tests/it/sim.rs: a task asking without the call
            // got the stub of the chat that had written the slot 39 s
            // before) means the slot may not name the caller.
            slot_stale: caller.source == Source::Slot && conv.is_some_and(|c| view.live_other_than(c, now)),
            unrecorded_call: false,
            call_unresolved: false,
        }
    }

    /// Whether a subagent that may be `caller` ran at `t`. An unknown caller
    /// may be any running subagent, or the one live chat that never got what
    /// another one did (found by tests/it/sim.rs: with the slot gone, the
    /// legacy single-conversation allow gave a subagent its parent's stub,
    /// and a chat the stub of a chat that had ended). A `custom:` scope may
    /// be any chat's: any running subagent applies to it, as any compaction
    /// does.
    fn subagent_running(view: &dyn Ask, caller: &Caller, t: u64) -> bool {
        match caller.conversation.as_deref().or(caller.scope.as_deref()) {
            Some(_) if caller.source == Source::Custom => view.any_subagent_active(t),
            Some(c) => view.subagent_active(c, t),
            None => view.any_subagent_active(t),
        }
    }

    /// The full decision for one stub question.
    pub fn decide(&self, q: &StubQuery<'_>) -> StubAnswer {
        let _q = asking();
        let now = self.now();
        let deadline = Instant::now() + READ_WAIT;
        // One read serves both: a claim appended by resolution changes no fact.
        let first = self.with_journal(now, deadline, |view, unavailable| {
            let res = self.resolve_with(q.call, view, now, deadline);
            if slot_dependent(&res) { Err(res) } else { Ok(self.decide_for(&res, view, unavailable, q, now)) }
        });
        match first {
            Ok(answer) => answer,
            Err(res) => self.decide_after_slot(&res, q, now, deadline),
        }
    }

    /// Decide for a caller found through the slot (or not at all) on a view
    /// read *after* the slot. Hooks append to the journal before they write
    /// the slot, so a journal read after the slot holds the sighting of
    /// whoever wrote it. With the journal read first, a hook landing between
    /// the two reads made the slot name a conversation the facts had not
    /// seen: "not concurrent", and its stub (or a delivery labelled with it)
    /// went to another chat (found by tests/it/sim.rs).
    fn decide_after_slot(&self, res: &Resolution, q: &StubQuery<'_>, now: u64, deadline: Instant) -> StubAnswer {
        self.with_journal(now, deadline, |view, unavailable| self.decide_for(res, view, unavailable, q, now))
    }

    /// Decide for a caller already resolved (resolve once per MCP call,
    /// then use the same resolution to decide and to label a delivery).
    /// `q.call` is ignored.
    pub fn decide_resolved(&self, res: &Resolution, q: &StubQuery<'_>) -> StubAnswer {
        let _q = asking();
        let now = self.now();
        let deadline = Instant::now() + READ_WAIT;
        self.with_journal(now, deadline, |view, unavailable| self.decide_for(res, view, unavailable, q, now))
    }

    fn decide_for(
        &self,
        res: &Resolution,
        view: &dyn Ask,
        unavailable: bool,
        q: &StubQuery<'_>,
        now: u64,
    ) -> StubAnswer {
        // A delivery time ahead of our clock is not one we gave: untrusted,
        // so the compaction check applies as without a time.
        let at = q.delivered_at_ms.filter(|t| *t <= now.saturating_add(DELIVERY_AHEAD_MS));
        let facts = Facts {
            unavailable: unavailable || res.state_problem.is_some(),
            unrecorded_call: res.per_call == PerCall::NoRecord,
            call_unresolved: res.caller.scope.is_none()
                && matches!(res.per_call, PerCall::NoMatch | PerCall::Ambiguous | PerCall::StateError),
            // Asked only where it can change the answer (a caller blind to
            // subagents): a per-call caller pays no second subagent scan.
            subagent_at_delivery: decision::blind(&res.caller)
                && at.is_some_and(|t| Self::subagent_running(view, &res.caller, t)),
            ..self.facts_of(view, &res.caller, now)
        };
        let decision = if q.cold {
            decision::cold(&res.caller, q.delivered, at, &facts)
        } else {
            decision::warm(&res.caller, q.delivered, at, &facts)
        };
        StubAnswer {
            decision,
            caller: res.caller.clone(),
            per_call: res.per_call.clone(),
            concurrent: facts.concurrent,
            last_compaction_ms: facts.last_compaction,
            delivery_scope: decision::delivery_scope(&res.caller, &facts),
        }
    }

    /// The scope to remember for content delivered now to the caller of
    /// `res` (a first read: no stub question was asked). `None` when the
    /// caller is not certainly known: see [`decision::delivery_scope`].
    pub fn delivery_scope(&self, res: &Resolution) -> Option<String> {
        let _q = asking();
        let now = self.now();
        self.with_journal(now, Instant::now() + READ_WAIT, |view, unavailable| {
            let unavailable = unavailable || res.state_problem.is_some();
            let facts = Facts { unavailable, ..self.facts_of(view, &res.caller, now) };
            decision::delivery_scope(&res.caller, &facts)
        })
    }

    /// A decision where the caller's scope was given by the server (lean-ctx's
    /// `conversation_allows_stub(current, delivered)`): if `current` is what
    /// the chain resolves now, its source and exactness apply; otherwise it
    /// is treated like a slot answer (not exact).
    pub fn decide_given(&self, current: Option<&str>, delivered: Option<&str>, cold: bool) -> Decision {
        let _q = asking();
        let now = self.now();
        let q = StubQuery { delivered, delivered_at_ms: None, cold, call: None };
        let deadline = Instant::now() + READ_WAIT;
        let first = self.with_journal(now, deadline, |view, unavailable| {
            let res = self.resolve_with(None, view, now, deadline);
            let caller = if res.caller.source == Source::Disabled || res.caller.scope.as_deref() == current {
                res.caller
            } else {
                Caller::new(Source::Slot, current.map(str::to_string), current.map(str::to_string), None)
            };
            let r = Resolution { caller, per_call: PerCall::NotGiven, state_problem: res.state_problem };
            if slot_dependent(&r) { Err(r) } else { Ok(self.decide_for(&r, view, unavailable, &q, now).decision) }
        });
        match first {
            Ok(d) => d,
            Err(r) => self.decide_after_slot(&r, &q, now, deadline).decision,
        }
    }

    /// More than one live top-level conversation in the window. When the
    /// state cannot be read the answer is `true`: callers withhold.
    pub fn concurrent(&self) -> bool {
        let _q = asking();
        let now = self.now();
        self.with_journal(now, Instant::now() + READ_WAIT, |view, unavailable| unavailable || view.concurrent(now))
    }
}

/// A caller whose identity came from the slot, or who is unknown: the
/// facts must then come from a journal read after the slot. (Not a call
/// whose per-call id named no record: that answer needs no slot.)
fn slot_dependent(res: &Resolution) -> bool {
    matches!(res.caller.source, Source::Slot | Source::None) && res.per_call != PerCall::NoRecord
}

#[cfg(test)]
mod tests;
