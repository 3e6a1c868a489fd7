//! The ledger's read path: `leanctx stub` and `leanctx deliver`, and the
//! library calls behind them ([`ReadPath::stub`], [`ReadPath::deliver`]).
//!
//! ```no_run
//! use leanctx::identity::mcp_call::McpCall;
//! use leanctx::identity::readpath::ReadPath;
//! # let request = serde_json::json!({});
//! # let result = serde_json::json!({"content": []});
//! let rp = ReadPath::from_process();
//! let call = McpCall::from_json(&request).expect("a tools/call");
//! let sent = leanctx::state::ledger::sent_content(&result).expect("an MCP result");
//! // On every read: may this caller get a stub? If not, the content goes out
//! // and its delivery is recorded (the host then confirms or not).
//! let ans = rp.stub(&call, "src/main.rs", "sha256:…", Some(&sent)).expect("key and version");
//! if ans.decision.allow { /* serve [unchanged] */ } else { /* return `result` */ }
//! ```

use crate::base::scope::ScopeKind;
use crate::identity::caller::{Caller, Source};
use crate::identity::decision::{Decision, Reason};
use crate::identity::delivery::{self, Question};
use crate::identity::mcp_call::{McpCall, PerCall};
use crate::identity::readpath::{Ask, READ_WAIT, ReadPath};
use crate::state::digest::Reader;
use crate::state::journal::{Journal, Record};
use crate::state::ledger::{self, Confirmation, Content, InputError, MAX_STEP_BACK};
use crate::stats::{Kind, Outcome, Via};
use crate::witness::{self, Check};
use serde::Serialize;
use std::time::{Duration, Instant};

/// Journal reads after the first one for one stub question, each after
/// the witness answered (see [`ReadPath::stub_with_base`]). A second read
/// settles it unless the newest delivery itself changed meanwhile.
const MAX_REDECIDE: usize = 2;

/// What the second witness said of the delivery an answer rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Witnessed {
    /// Not asked (no delivery, or a host whose transcript is not read).
    NotAsked,
    /// Nothing in the transcript withdraws it.
    Present,
    /// The host withdrew this very result (a rewind past it, a cut naming
    /// it), not every delivery: an earlier copy may still be held.
    WithdrawnThis,
    /// Withheld for another reason (the answer says which).
    Withheld,
}

/// How long a stub question waits for the host's transcript to show the
/// asking call ([`Check::NotYet`]), and how often it looks: Claude Code
/// drains its transcript queue every 100 ms, so a line is usually late by
/// less; past the wait the stub is withheld (docs/DELIVERY.md §8).
const CATCH_UP_WAIT: Duration = Duration::from_millis(1000);
const CATCH_UP_POLL: Duration = Duration::from_millis(10);

/// A journal reader's position ([`Reader::position`]).
type JournalAt = Option<((u64, u64), u64)>;

/// The answer to a stub question through the ledger.
#[derive(Clone, Debug, Serialize)]
pub struct LedgerAnswer {
    /// Allow (serve the stub) or withhold (send the content), and why.
    pub decision: Decision,
    /// The caller, as this call names it (never a guess from the slot).
    pub caller: Caller,
    /// Whether the call named its caller.
    pub per_call: PerCall,
    /// Codex `_meta.windowId` of this call.
    pub window: Option<String>,
    /// The newest delivery of the key to this caller, the one the decision read.
    pub delivery: Option<DeliverySeen>,
    /// Whether the result given with the question was recorded as delivered.
    pub recorded: Option<Recorded>,
    /// What the host's transcript said, when it took the stub away.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<String>,
    /// Results of other host processes the decision rests on, each loaded
    /// with the history by a process that resumed after its confirmation:
    /// (owner pid, loader pid, unix ms of the confirmation); the witness
    /// checks that no third process may have written the history loaded.
    #[serde(skip)]
    pub relied: Vec<(u32, u32, u64)>,
}

/// A delivery as the decision saw it.
#[derive(Clone, Debug, Serialize)]
pub struct DeliverySeen {
    /// When it was recorded (unix ms).
    pub delivered_at_ms: u64,
    /// The host of the call it was delivered on.
    pub host: crate::Host,
    /// The top-level conversation.
    pub conversation: String,
    /// The scope it was delivered to.
    pub scope: String,
    /// Codex `_meta.windowId`, if any.
    pub window: Option<String>,
    /// The call it was delivered on (`id:<call id>` or `fp:<tool>:<fingerprint>`).
    #[serde(rename = "ref")]
    pub call_ref: String,
    /// It was of the version asked about.
    pub same_version: bool,
    /// Its length in bytes.
    pub len: u64,
    /// What the host confirmed the model got (`whole`, `different-content`, `cut`, `none`).
    pub confirmation: Confirmation,
    /// A compaction of the conversation follows it.
    pub compacted_after: bool,
}

/// Whether a delivery was recorded, and if not, why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Recorded {
    /// The delivery was recorded.
    pub recorded: bool,
    /// Why not, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The call it was recorded on.
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub call_ref: Option<String>,
}

/// The caller of one call as the ledger needs it: exact, per call, with
/// the ref the host's hooks will name the call by.
struct LedgerCaller {
    caller: Caller,
    per_call: PerCall,
    call_ref: Option<String>,
    /// The caller was found by a source that cannot tell a conversation from
    /// its running subagent (a fingerprint), and one is running: neither a
    /// stub nor a label can be trusted.
    blind: bool,
}

impl LedgerAnswer {
    /// This answer as the stats count it, for `key` (the server's name),
    /// with `result_len` the length of the content the server would send
    /// instead of a stub (if it gave it; else the length of the delivery
    /// the ledger confirmed). A "no" for a first read or
    /// a changed version is a whole delivery; any other "no" is withheld,
    /// with its reason (`ambiguous-call` when two chats made the same call).
    pub fn outcome<'a>(&'a self, via: Via, key: &'a str, result_len: Option<u64>, now: u64) -> Outcome<'a> {
        let held = self.delivery.as_ref().filter(|d| d.same_version).map(|d| d.len);
        let (kind, whole) = match self.decision.reason {
            // What this answer would otherwise send: the result given, else
            // the backing delivery (a diff's, if a diff backs it: less).
            _ if self.decision.allow => (Kind::Stub, result_len.or(held).unwrap_or(0)),
            Reason::NotDelivered | Reason::VersionChanged => (Kind::Whole, result_len.unwrap_or(0)),
            _ if self.per_call == PerCall::Ambiguous => {
                (Kind::Withheld("ambiguous-call"), result_len.or(held).unwrap_or(0))
            }
            r => (Kind::Withheld(r.as_str()), result_len.or(held).unwrap_or(0)),
        };
        Outcome {
            via,
            host: self.caller.host,
            conversation: self.caller.conversation.as_deref().or(self.caller.scope.as_deref()),
            file: key,
            kind,
            sent: if kind == Kind::Stub { None } else { Some(whole) },
            whole,
            t_ms: Some(now),
        }
    }
}

impl ReadPath {
    /// Per-call identity only: the ledger never takes a caller from the
    /// environment or the slot, which name a process or the last writer, not
    /// the caller of this call.
    fn ledger_caller(
        &self,
        call: &McpCall,
        view: &dyn Ask,
        unavailable: bool,
        now: u64,
        deadline: Instant,
    ) -> LedgerCaller {
        if self.scoping_disabled() {
            return LedgerCaller {
                caller: Caller::disabled(),
                per_call: PerCall::NotGiven,
                call_ref: None,
                blind: false,
            };
        }
        // Unreadable state: no record can be found or ruled out.
        if unavailable {
            return LedgerCaller {
                caller: Caller::unknown(),
                per_call: PerCall::StateError,
                call_ref: None,
                blind: false,
            };
        }
        match self.per_call(call, view, now, deadline) {
            Ok(caller) => {
                let call_ref = match caller.source {
                    Source::MetaSession => call.meta_call_id().map(ledger::id_ref),
                    Source::ToolUseId => call.claude_tool_use_id().map(ledger::id_ref),
                    // Sealed as the hooks' acknowledgements are (a ref of
                    // raw arguments could be guessed back).
                    Source::Fingerprint => {
                        self.secret().map(|s| s.seal_ref(&ledger::fp_ref(&call.name, &call.fingerprint())))
                    }
                    _ => None,
                };
                // A Cursor task hook without CURSOR_TASK_ID records its call
                // under the parent: the claim names the parent, and the
                // task's delivery would become the parent's stub. (CodeBuddy's
                // subagent hooks name their agent, as Claude Code's do, so a
                // record without one is the main agent's.)
                let conv = caller.conversation.as_deref().or(caller.scope.as_deref()).unwrap_or_default();
                let narrow = caller
                    .scope
                    .as_deref()
                    .is_some_and(|s| matches!(ScopeKind::of(s), ScopeKind::Agent | ScopeKind::Task));
                let blind = caller.source.blind_to_subagents()
                    && caller.host == Some(crate::Host::Cursor)
                    && !narrow
                    && view.subagent_unwitnessed(conv, crate::Host::Cursor, now);
                LedgerCaller { caller, per_call: PerCall::Resolved, call_ref, blind }
            }
            Err(p) => LedgerCaller { caller: Caller::unknown(), per_call: p, call_ref: None, blind: false },
        }
    }

    /// May the caller of `call` be served a stub for `version` of `key`?
    /// Allowed only for a delivery the host confirmed whole in the caller's
    /// current context window (see [`ledger`]), and, when `result` is given
    /// (what the server returns instead), only if it is that very result
    /// (else `result-changed`). When the answer is no and `result` is given,
    /// that delivery is recorded, for the host to confirm. Errors: an empty
    /// or overlong key or version.
    pub fn stub(
        &self,
        call: &McpCall,
        key: &str,
        version: &str,
        result: Option<&Content>,
    ) -> Result<LedgerAnswer, InputError> {
        self.stub_with_base(call, key, version, None, result)
    }

    /// [`ReadPath::stub`], where the `result` that would be recorded is a
    /// diff against version `base` of `key`: recorded with its base, it backs
    /// a later stub only while a delivery of `base` before it is still held.
    pub fn stub_with_base(
        &self,
        call: &McpCall,
        key: &str,
        version: &str,
        base: Option<&str>,
        result: Option<&Content>,
    ) -> Result<LedgerAnswer, InputError> {
        let _q = super::readpath::asking();
        let (keyh, verh, baseh, no_secret) = self.checked_names(key, version, base)?;
        let now = self.now();
        let window = self.window_of(call);
        let deadline = Instant::now() + READ_WAIT;
        // The result to compare with the confirmed delivery, as the journal
        // keeps it (sealed digest, coarse length).
        let sealed = result.and_then(|c| Some(self.secret()?.seal_content(c)));
        // `None`: the journal is where `seen` left it (the same digest).
        let decide = |seen: JournalAt| {
            self.with_journal(now, deadline, |view, unavailable| {
                let at = view.reader().and_then(Reader::position);
                if at.is_some() && at == seen {
                    return None;
                }
                let unavailable = unavailable || no_secret;
                let lc = self.ledger_caller(call, view, unavailable, now, deadline);
                let ans =
                    self.ledger_decide(&lc, view, unavailable, (&keyh, &verh, sealed.as_ref()), window.as_deref());
                Some((ans, lc, at))
            })
        };
        let Some((mut ans, mut lc, mut at)) = decide(None) else { unreachable!("a first read always decides") };
        // The witness's lock is taken after the journal was read: another
        // question may meanwhile have read a withdrawal in the transcript,
        // journaled "every delivery ended" and moved the offset past it, so
        // this one reads nothing new. Whatever ends every delivery is
        // journaled before the witness's lock is let go, so a journal read
        // after the witness answered sees it: decide again on that read,
        // and keep the stub only when it rests on the same delivery.
        for round in 0..=MAX_REDECIDE {
            if !ans.decision.allow {
                break;
            }
            #[cfg(test)]
            tests::BEFORE_WITNESS.with_borrow(|f| f.as_ref().map(|f| f()));
            let asked = ans.delivery.as_ref().map(|d| d.call_ref.clone());
            match self.ask_witness(&mut ans, call, window.as_deref(), now, deadline) {
                Witnessed::Present => {}
                Witnessed::WithdrawnThis
                    if self.earlier_copy(
                        &mut ans,
                        &lc,
                        call,
                        (&keyh, &verh, sealed.as_ref()),
                        window.as_deref(),
                        now,
                        deadline,
                    ) => {}
                _ => break,
            }
            let Some((again, lc_again, at_again)) = decide(at) else { break };
            let same = again.decision.allow && again.delivery.as_ref().map(|d| &d.call_ref) == asked.as_ref();
            if same {
                break;
            }
            (ans, lc, at) = (again, lc_again, at_again);
            if round == MAX_REDECIDE && ans.decision.allow {
                // Still moving: no stub rests on a delivery nobody witnessed.
                ans.decision = Decision { allow: false, reason: Reason::TranscriptUnavailable };
                ans.witness = Some("the journal kept changing while the transcript was read".into());
            }
        }
        if let Some(content) = result
            && !ans.decision.allow
        {
            ans.recorded =
                Some(self.record_delivery(&lc, window.as_deref(), (&keyh, &verh, baseh.as_deref()), content, now));
        }
        if let Some((via, dir)) = self.stats_sink() {
            crate::stats::record_in(Some(dir), &ans.outcome(via, key, result.map(|c| c.len), now));
        }
        Ok(ans)
    }

    /// Record that `result` is being delivered for `version` of `key` to the
    /// caller of `call` (a first read, with no stub question). Not recorded
    /// (`recorded: false` and why) when the call does not name its caller
    /// exactly: such a delivery could never back a stub.
    pub fn deliver(&self, call: &McpCall, key: &str, version: &str, result: &Content) -> Result<Recorded, InputError> {
        self.deliver_with_base(call, key, version, None, result)
    }

    /// [`ReadPath::deliver`] of a diff against version `base` of `key` (see
    /// [`ReadPath::stub_with_base`]).
    pub fn deliver_with_base(
        &self,
        call: &McpCall,
        key: &str,
        version: &str,
        base: Option<&str>,
        result: &Content,
    ) -> Result<Recorded, InputError> {
        let _q = super::readpath::asking();
        let (keyh, verh, baseh, no_secret) = self.checked_names(key, version, base)?;
        let now = self.now();
        let deadline = Instant::now() + READ_WAIT;
        let lc = self.with_journal(now, deadline, |view, unavailable| {
            self.ledger_caller(call, view, unavailable || no_secret, now, deadline)
        });
        if let Some((via, dir)) = self.stats_sink() {
            let o = Outcome {
                via,
                host: lc.caller.host,
                conversation: lc.caller.conversation.as_deref().or(lc.caller.scope.as_deref()),
                file: key,
                kind: Kind::Whole,
                sent: Some(result.len),
                whole: result.len,
                t_ms: Some(now),
            };
            crate::stats::record_in(Some(dir), &o);
        }
        Ok(self.record_delivery(&lc, self.window_of(call).as_deref(), (&keyh, &verh, baseh.as_deref()), result, now))
    }

    /// The journal's names for `key` and `version` (keyed with the data
    /// dir's secret), and whether a usable data dir's secret is missing or
    /// unreadable: then no digest can be computed and every answer withholds
    /// (`state-unavailable`). No data dir at all: no record exists, so the
    /// names are placeholders nothing matches.
    /// The question's names checked and sealed: key, version, a diff's base
    /// (named as its version would be: the same seal), and whether the
    /// secret is missing from a usable data dir.
    fn checked_names(
        &self,
        key: &str,
        version: &str,
        base: Option<&str>,
    ) -> Result<(String, String, Option<String>, bool), InputError> {
        ledger::check_name("--key", key)?;
        ledger::check_name("--version", version)?;
        let (keyh, verh, no_secret) = self.sealed_names(key, version);
        let baseh = match base {
            Some(b) => {
                ledger::check_name("--base", b)?;
                Some(self.sealed_names(key, b).1)
            }
            None => None,
        };
        Ok((keyh, verh, baseh, no_secret))
    }

    fn sealed_names(&self, key: &str, version: &str) -> (String, String, bool) {
        match self.secret() {
            Some(s) => (s.name("key", key), s.name("version", version), false),
            None => ("-".into(), "-".into(), self.usable_dir().is_some()),
        }
    }

    fn ledger_decide(
        &self,
        lc: &LedgerCaller,
        view: &dyn Ask,
        unavailable: bool,
        (keyh, verh, sent): (&str, &str, Option<&Content>),
        window: Option<&str>,
    ) -> LedgerAnswer {
        let answer = |decision, delivery| LedgerAnswer {
            decision,
            caller: lc.caller.clone(),
            per_call: lc.per_call.clone(),
            window: window.map(str::to_string),
            delivery,
            recorded: None,
            witness: None,
            relied: Vec::new(),
        };
        if lc.caller.source == Source::Disabled {
            return answer(Decision { allow: true, reason: Reason::ScopeDisabled }, None);
        }
        if unavailable {
            return answer(Decision { allow: false, reason: Reason::StateUnavailable }, None);
        }
        let Some(scope) = lc.caller.scope.as_deref().filter(|_| lc.per_call == PerCall::Resolved) else {
            let reason = if lc.per_call == PerCall::NoRecord { Reason::UnrecordedCall } else { Reason::UnknownCaller };
            return answer(Decision { allow: false, reason }, None);
        };
        if lc.blind {
            return answer(Decision { allow: false, reason: Reason::SubagentActive }, None);
        }
        let q = Question { scope, key: keyh, version: verh, window, sent };
        let facts = match delivery_read(view, scope, keyh, window) {
            Some((at, d)) => facts_of(view, keyh, at, d, window),
            None => delivery::Facts::default(),
        };
        let mut ans = answer(delivery::decide(&q, &facts), seen_of(&facts, verh));
        ans.relied = facts.relied;
        ans
    }

    /// The newest delivery of the key backed the stub, but the host
    /// withdrew it (a rewind past it, a cut naming it). The model may still
    /// hold an earlier copy of the same version: a rewind restores the
    /// context of its prompt. Step back over withdrawn deliveries, at most
    /// [`MAX_STEP_BACK`], to the newest earlier one that every rule allows
    /// ([`delivery::decide`] with [`delivery::Facts::withdrawn_newer`]: the
    /// same version and window, confirmed whole, no compaction after) and
    /// that the witness shows present: it backs the stub. Whether one did;
    /// if not, `ans` is as it was (`withdrawn`).
    #[allow(clippy::too_many_arguments)]
    fn earlier_copy(
        &self,
        ans: &mut LedgerAnswer,
        lc: &LedgerCaller,
        call: &McpCall,
        (keyh, verh, sent): (&str, &str, Option<&Content>),
        window: Option<&str>,
        now: u64,
        deadline: Instant,
    ) -> bool {
        let Some(scope) = lc.caller.scope.as_deref() else { return false };
        let Some(newest) = ans.delivery.as_ref().map(|d| d.call_ref.clone()) else { return false };
        // Each earlier delivery, newest first, decided as if every newer one
        // was withdrawn (the witness is asked in that order), in one read.
        let candidates = self.with_journal(now, deadline, |view, unavailable| {
            let mut out = Vec::new();
            let Some((mut at, latest)) = delivery_read(view, scope, keyh, window).filter(|_| !unavailable) else {
                return out;
            };
            // A newer delivery since: the next journal read decides on it.
            if latest.call_ref != newest {
                return out;
            }
            let q = Question { scope, key: keyh, version: verh, window, sent };
            let mut newer = vec![latest];
            while out.len() < MAX_STEP_BACK
                && let Some((bat, b)) = view.delivery_before(scope, keyh, None, at)
            {
                let mut facts = facts_of(view, keyh, bat, b.clone(), window);
                facts.withdrawn_newer = newer.clone();
                let decision = delivery::decide(&q, &facts);
                let allow = decision.allow;
                out.push((decision, seen_of(&facts, verh), facts.relied.clone()));
                if !allow {
                    break;
                }
                newer.push(b);
                at = bat;
            }
            out
        });
        let withdrawn = ans.clone();
        for (decision, seen, relied) in candidates {
            if !decision.allow {
                break;
            }
            (ans.decision, ans.delivery, ans.witness, ans.relied) = (decision, seen, None, relied);
            match self.ask_witness(ans, call, window, now, deadline) {
                Witnessed::Present => return true,
                Witnessed::WithdrawnThis => {}
                Witnessed::NotAsked | Witnessed::Withheld => break,
            }
        }
        *ans = withdrawn;
        false
    }

    /// The second witness: a confirmed delivery on a host that can withdraw
    /// results without a hook stands only if its transcript, read on from
    /// where the last question stopped, does not show it gone.
    /// What the witness said; unless present, `ans` withholds, saying why.
    /// `window`: the call's ([`ReadPath::window_of`]), found once a question.
    fn ask_witness(
        &self,
        ans: &mut LedgerAnswer,
        call: &McpCall,
        window: Option<&str>,
        now: u64,
        deadline: Instant,
    ) -> Witnessed {
        let Some(seen) = &ans.delivery else { return Witnessed::NotAsked };
        let profile = crate::hosts::profile::profile(seen.host);
        if !profile.transcript_witness {
            return Witnessed::NotAsked;
        }
        let Some(dir) = self.usable_dir() else { return Witnessed::NotAsked };
        let (host, conv) = (seen.host, seen.conversation.as_str());
        let call_id = seen.call_ref.strip_prefix("id:");
        let end_all = |reach: crate::state::journal::Reach<'_>| {
            Journal::new(dir).append(&[Record::Compaction { t: now, host, conv, reach }], now)
        };
        let q = witness::Question {
            host,
            conv,
            call_id,
            delivered_ms: seen.delivered_at_ms,
            now,
            idle_ms: profile.idle_clear_ms,
            proc: self.host_pid(),
            // A subagent's calls go to its own transcript, where it waits
            // for them (`agent` below).
            asking: call.claude_tool_use_id().filter(|_| {
                ans.caller.scope.as_deref().is_some_and(|s| {
                    matches!(ScopeKind::of(s), ScopeKind::Conversation | ScopeKind::Custom)
                        || (own_transcript(host, s).is_some() && s == seen.scope)
                })
            }),
            subagent: ScopeKind::of(&seen.scope) == ScopeKind::Agent,
            agent: own_transcript(host, &seen.scope),
            // Whether that process is one of the conversation's, the
            // witness checks (its hooks named it).
            own: seen.window.as_deref().filter(|w| Some(*w) == window).and_then(pid_of_window),
            relied: ans.relied.clone(),
        };
        let wait_end = Instant::now() + CATCH_UP_WAIT;
        let check = || witness::check(dir, &q, deadline.max(wait_end), end_all);
        let mut answer = check();
        while answer == Check::NotYet && Instant::now() < wait_end {
            std::thread::sleep(CATCH_UP_POLL);
            answer = check();
        }
        let (reason, why, said) = match answer {
            Check::Present => return Witnessed::Present,
            Check::NotYet => (
                Reason::TranscriptUnavailable,
                format!("the transcript did not show this call within {} ms", CATCH_UP_WAIT.as_millis()),
                Witnessed::Withheld,
            ),
            Check::Withdrawn(why) => (Reason::Withdrawn, why.to_string(), Witnessed::WithdrawnThis),
            Check::NotLoaded(why) => (Reason::WindowChanged, why, Witnessed::Withheld),
            Check::EndedAll(why) => (Reason::Withdrawn, why, Witnessed::Withheld),
            Check::Unavailable(why) => (Reason::TranscriptUnavailable, why, Witnessed::Withheld),
        };
        ans.decision = Decision { allow: false, reason };
        ans.witness = Some(why);
        said
    }

    /// Before a delivery is recorded, the second witness reads what the
    /// host appended to the conversation's transcript since the last
    /// question, so that an end it shows (a compaction between two turns)
    /// is journaled before this delivery, not after it. Read only at the
    /// next stub question, such an end was recorded late and ended the
    /// deliveries made after it too: every first re-read after a Claude Code
    /// compaction withheld (`withdrawn`, then `compacted`), found by
    /// benches/workload. Its answer is not needed here: a failure withholds
    /// at that next question, as before.
    fn catch_up_witness(&self, dir: &std::path::Path, host: crate::Host, conv: &str, scope: &str, now: u64) {
        if !crate::hosts::profile::profile(host).transcript_witness {
            return;
        }
        let q =
            witness::Question { agent: own_transcript(host, scope), ..witness::Question::catch_up(host, conv, now) };
        let end_all = |reach: crate::state::journal::Reach<'_>| {
            Journal::new(dir).append(&[Record::Compaction { t: now, host, conv, reach }], now)
        };
        let _ = witness::check(dir, &q, Instant::now() + READ_WAIT, end_all);
    }

    /// The context window a call is in: Codex's `_meta.windowId`; for a
    /// Claude Code call, the host process it came from (`proc:<pid>`), since
    /// one session open in two processes (`--resume` while the first still
    /// runs) is two contexts, and a delivery to one backs no stub in the
    /// other. The process is the MCP server's parent: Claude Code starts
    /// stdio servers as its children (docs/HOST-FACTS.md §3). Not known
    /// (no parent lookup on this system): no window, as before.
    fn window_of(&self, call: &McpCall) -> Option<String> {
        if let Some(w) = call.window_id() {
            return Some(w.to_string());
        }
        call.claude_tool_use_id()?;
        self.host_pid().map(ledger::proc_window)
    }

    fn record_delivery(
        &self,
        lc: &LedgerCaller,
        window: Option<&str>,
        (keyh, verh, baseh): (&str, &str, Option<&str>),
        content: &Content,
        now: u64,
    ) -> Recorded {
        let not = |why: &str| Recorded { recorded: false, why: Some(why.to_string()), call_ref: None };
        let (Some(scope), Some(call_ref)) = (lc.caller.scope.as_deref(), lc.call_ref.as_deref()) else {
            return not(match lc.per_call {
                PerCall::NoRecord => "the call's host id names no hook record (hooks missing or failed)",
                PerCall::Ambiguous => "several chats made this same call: the caller cannot be told",
                PerCall::StateError => "the state could not be read",
                _ if lc.caller.source == Source::Disabled => "scoping is disabled (LEAN_CTX_CONVERSATION_SCOPE)",
                _ => "the call does not name its caller (no per-call id, no matching hook record)",
            });
        };
        if lc.blind {
            return not("a subagent of this conversation is running, and a fingerprint cannot tell them apart");
        }
        let Some(dir) = self.usable_dir() else { return not("no usable data dir (has any hook run?)") };
        let Some(secret) = self.secret() else {
            return not("the data dir's secret (which keys every digest) cannot be read or created");
        };
        let content = secret.seal_content(content);
        let conv = lc.caller.conversation.as_deref().unwrap_or(scope);
        let host = lc.caller.host.unwrap_or(crate::Host::ClaudeCode);
        self.catch_up_witness(dir, host, conv, scope, now);
        let d = ledger::Delivery {
            t: now,
            host,
            conv,
            scope,
            window,
            call_ref,
            key: keyh,
            version: verh,
            digest: &content.digest,
            len: content.len,
            base: baseh,
        };
        match Journal::new(dir).append(&[Record::Delivery(d)], now) {
            Ok(()) => Recorded { recorded: true, why: None, call_ref: Some(call_ref.to_string()) },
            Err(e) => not(&format!("could not write the journal: {e}")),
        }
    }
}

/// The scope of a delivery made to a subagent that writes a transcript of
/// its own (Claude Code's: docs/DELIVERY.md §8, "Subagents and compaction"),
/// which the witness then reads on too.
fn own_transcript(host: crate::Host, scope: &str) -> Option<&str> {
    (host == crate::Host::ClaudeCode && ScopeKind::of(scope) == ScopeKind::Agent).then_some(scope)
}

/// What the journal says about delivery `d` (at position `at`) of `key`
/// to its scope, for [`delivery::decide`], asked from `window`.
fn facts_of<'v>(
    view: &'v dyn Ask,
    key: &str,
    at: usize,
    d: ledger::Delivery<'v>,
    window: Option<&str>,
) -> delivery::Facts<'v> {
    // One read of the acknowledgements serves both questions (each read
    // parses the lines again).
    let acks = view.acks_after_at(d.call_ref, at);
    let reload = reloaded_after(view, &d, window, &acks);
    let mut facts = delivery::Facts {
        acks_after: without_positions(acks),
        compacted_after: view.compacted_after(d.conv, d.scope, own_process(view, &d, window), at),
        ..delivery::Facts::default()
    };
    facts.reloaded_after = reload.is_some();
    facts.relied.extend(reload.filter(|_| d.window != window));
    // A diff: the deliveries it rests on, each before the last.
    let (mut want, mut before) = (d.base, at);
    while let Some(v) = want
        && facts.bases.len() < delivery::MAX_BASE_CHAIN
        && let Some((bat, b)) = view.delivery_before(d.scope, key, Some(v), before)
    {
        let acks = view.acks_after_at(b.call_ref, bat);
        let reload = reloaded_after(view, &b, d.window, &acks);
        facts.relied.extend(reload.filter(|_| b.window != d.window));
        facts.bases.push(delivery::Held {
            acks_after: without_positions(acks),
            compacted_after: view.compacted_after(b.conv, b.scope, own_process(view, &b, window), bat),
            reloaded_into_diff: reload.is_some(),
            delivery: b.clone(),
        });
        (want, before) = (b.base, bat);
    }
    facts.latest = Some(d);
    facts
}

/// The Claude Code host process that received delivery `d` (its window,
/// `proc:<pid>`), when it is the one asking from `asking` and its
/// `SessionStart` named it (`CLAUDE_PID`, a lineage record) a process of
/// the delivery's conversation: another process's compaction left its
/// context whole ([`crate::state::journal::Reach::MainOf`]). Another
/// process relying on having loaded it, a window that names no process, or
/// one that may be the parent of a server several processes share: none.
fn own_process(view: &dyn Ask, d: &ledger::Delivery<'_>, asking: Option<&str>) -> Option<u32> {
    let pid = d.window.filter(|w| Some(*w) == asking).and_then(pid_of_window)?;
    view.is_process_of(d.host, pid, d.conv).then_some(pid)
}

use crate::state::ledger::pid_of_window;

/// The delivery of `key` to `scope` a question from `window` is decided
/// on, with its position: the newest; but for a Claude Code process asking
/// from its own window (`proc:<pid>`), the newest it received itself when
/// only other processes received the key since and it has not started or
/// resumed since it received it ([`delivery::own_copy_stands`]): theirs
/// are not in its context (docs/DELIVERY.md §8, "One session, two
/// processes").
fn delivery_read<'v>(
    view: &'v dyn Ask,
    scope: &str,
    key: &str,
    window: Option<&str>,
) -> Option<(usize, ledger::Delivery<'v>)> {
    let newest = view.latest_delivery(scope, key)?;
    let Some((w, pid)) = window.and_then(|w| Some((w, pid_of_window(w)?))) else { return Some(newest) };
    if newest.1.window == Some(w) {
        return Some(newest);
    }
    let own = view.newest_in_window(scope, key, w).filter(|(at, d)| {
        let start = view.latest_start(d.host, pid).map(|(s, conv)| (s, conv == d.conv));
        delivery::own_copy_stands(*at, start)
    });
    own.or(Some(newest))
}

/// The delivery the facts rest on, as the answer shows it.
fn seen_of(f: &delivery::Facts<'_>, version: &str) -> Option<DeliverySeen> {
    let d = f.latest.as_ref()?;
    Some(DeliverySeen {
        delivered_at_ms: d.t,
        host: d.host,
        conversation: d.conv.to_string(),
        scope: d.scope.to_string(),
        window: d.window.map(str::to_string),
        call_ref: d.call_ref.to_string(),
        same_version: d.version == version,
        len: d.len,
        confirmation: ledger::confirmation(d, &f.acks_after),
        compacted_after: f.compacted_after,
    })
}

/// Claude Code: a delivery to another host process of the session backs a
/// stub for this one only when this process started or resumed the
/// session (its lineage record, written by its `SessionStart` hook with
/// `CLAUDE_PID`) after the host confirmed the delivery whole: it then
/// loaded the result with the history, provided no third process wrote
/// the line it resumed from (the witness's part: [`crate::witness::lives`]).
/// A process running alongside, which never had it, is withheld
/// (`window-changed`). `Some((owner, loader, confirmed at))` when it did.
/// `acks`: the delivery's acknowledgements after it, with their positions
/// ([`Ask::acks_after_at`]).
fn reloaded_after(
    view: &dyn Ask,
    d: &ledger::Delivery<'_>,
    window: Option<&str>,
    acks: &[(usize, ledger::Ack<'_>)],
) -> Option<(u32, u32, u64)> {
    let (loader, owner) = (window.and_then(pid_of_window)?, d.window.and_then(pid_of_window)?);
    let whole = acks.iter().find(|(_, a)| {
        a.whole && a.digest == d.digest && a.len == d.len && (!ledger::ref_needs_conv(d.call_ref) || a.scope == d.scope)
    });
    whole.filter(|(i, _)| view.started_after(d.host, loader, d.conv, *i)).map(|(_, a)| (owner, loader, a.t))
}

/// [`Ask::acks_after`] from [`Ask::acks_after_at`]'s answer.
fn without_positions(acks: Vec<(usize, ledger::Ack<'_>)>) -> Vec<ledger::Ack<'_>> {
    acks.into_iter().map(|(_, a)| a).collect()
}

#[cfg(test)]
mod tests;
