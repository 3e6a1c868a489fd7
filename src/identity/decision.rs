//! The stub decisions (README: "Stub decisions and reason codes"), as pure
//! functions with reason codes.

use crate::base::scope::ScopeKind;
use crate::identity::caller::{Caller, Source};
use serde::Serialize;

/// Why a stub is allowed or withheld (README, "Stub decisions and reason codes").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// Scoping disabled: every stub allowed (legacy).
    ScopeDisabled,
    /// Caller and delivery are the same scope, no compaction since.
    SameConversation,
    /// Caller unknown but only one conversation is live (legacy behaviour).
    SingleConversation,
    /// Caller and delivery differ.
    OtherConversation,
    /// Several conversations are live and the caller is not exactly known
    /// (or the slot names a conversation while another one is live).
    Concurrent,
    /// The caller's conversation was compacted after the delivery.
    Compacted,
    /// Nothing names the caller, and a stub cannot be proven safe.
    UnknownCaller,
    /// The delivery was not scoped (entry from before scoping).
    UnknownDelivery,
    /// A subagent of the caller's conversation is running and the caller's
    /// source cannot tell them apart.
    SubagentActive,
    /// The state could not be read: nothing can be proven, so withhold.
    StateUnavailable,
    /// The call carried an exact per-call id (Claude Code's tool-use id)
    /// that names no call record: its hook could not record (disk full,
    /// read-only, lock busy) or did not run. Nothing else may stand in for
    /// an exact id, so withhold.
    UnrecordedCall,
    /// Ledger: the host confirmed this very content reached the model whole,
    /// in this context window, with no compaction since.
    ConfirmedDelivery,
    /// Ledger: nothing of this key was delivered to this scope (or it was
    /// forgotten, or swallowed by a compaction and trimmed).
    NotDelivered,
    /// Ledger: the newest delivery of the key to this scope is of another version.
    VersionChanged,
    /// Ledger: the delivery was made in another context window (Codex windowId).
    WindowChanged,
    /// Ledger: the host has not confirmed the delivery whole (a preview, a
    /// truncation, an interrupt, a hook that did not fire, not yet).
    Unconfirmed,
    /// Ledger: the result the server would send now (`--result`) is not the
    /// one confirmed for this key and version (an outline then, the full
    /// text now): the model has the other one.
    ResultChanged,
    /// Ledger: the host's transcript shows the result withdrawn from the
    /// model's context (an idle cut, the API's clearing, a rewind).
    Withdrawn,
    /// Ledger: the host's transcript, the second witness, could not be read
    /// (missing, not a regular file, not JSON lines, over the read budget).
    TranscriptUnavailable,
    /// Ledger: the newest delivery is a diff whose base the caller no longer
    /// provably holds (compacted, unconfirmed, another window, forgotten).
    BaseNotHeld,
}

impl Reason {
    /// The reason code as `--json` and the plain output print it (`same-conversation`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::ScopeDisabled => "scope-disabled",
            Reason::SameConversation => "same-conversation",
            Reason::SingleConversation => "single-conversation",
            Reason::OtherConversation => "other-conversation",
            Reason::Concurrent => "concurrent",
            Reason::Compacted => "compacted",
            Reason::UnknownCaller => "unknown-caller",
            Reason::UnknownDelivery => "unknown-delivery",
            Reason::SubagentActive => "subagent-active",
            Reason::StateUnavailable => "state-unavailable",
            Reason::UnrecordedCall => "unrecorded-call",
            Reason::ConfirmedDelivery => "confirmed-delivery",
            Reason::NotDelivered => "not-delivered",
            Reason::VersionChanged => "version-changed",
            Reason::WindowChanged => "window-changed",
            Reason::Unconfirmed => "unconfirmed",
            Reason::ResultChanged => "result-changed",
            Reason::Withdrawn => "withdrawn",
            Reason::TranscriptUnavailable => "transcript-unavailable",
            Reason::BaseNotHeld => "base-not-held",
        }
    }
}

/// A stub decision: allow or withhold, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// `true`: serve the stub; `false`: send the content.
    pub allow: bool,
    /// Why.
    pub reason: Reason,
}

impl Decision {
    fn allow(reason: Reason) -> Decision {
        Decision { allow: true, reason }
    }
    fn deny(reason: Reason) -> Decision {
        Decision { allow: false, reason }
    }
}

/// What the state says around the caller (from the journal, at `now`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// More than one live top-level conversation in the window.
    pub concurrent: bool,
    /// Latest compaction of the caller's conversation.
    pub last_compaction: Option<u64>,
    /// Compactions at or before this may have been forgotten.
    pub compaction_floor: u64,
    /// A subagent of the caller's conversation is running (of any
    /// conversation, when the caller is unknown).
    pub subagent_active: bool,
    /// A subagent (of the caller's conversation; of any, for a caller that
    /// names none) was running when the content was delivered: the content
    /// may have been the subagent's, whatever the label says (a label given
    /// while the journal did not show it, e.g. moved aside for a moment).
    pub subagent_at_delivery: bool,
    /// The journal exists but could not be read (permissions, a busy lock):
    /// every other fact is unknown.
    pub unavailable: bool,
    /// The call's exact per-call id names no call record.
    pub unrecorded_call: bool,
    /// The caller came from the slot, and a conversation other than the
    /// slot's is live: the slot may not name the caller.
    pub slot_stale: bool,
    /// The caller is unknown and the state holds more than one
    /// conversation, live or not, or a subagent: the content may have gone
    /// to another.
    pub several_known: bool,
    /// A call was given, and named nobody (no unclaimed record, or two
    /// chats' records): the caller is unknown, and no legacy allow applies.
    pub call_unresolved: bool,
}

/// The scope a server may remember for content it delivers now to
/// `caller` — the `D` of every later stub question. Only a scope that
/// certainly names who received the content: a wrong label is a wrong stub
/// later, when the labelled scope asks *exactly* (per call) and matches.
/// `None` (an unscoped delivery, whose stubs are withheld) when the caller
/// is not exact and several conversations are live (the slot names the
/// last writer, maybe another chat), when the state could not be read, or
/// when the source cannot tell the conversation from a running subagent
/// of it (the slot, a fingerprint, the process env).
pub fn delivery_scope(caller: &Caller, facts: &Facts) -> Option<String> {
    let scope = caller.scope.as_ref()?;
    if caller.source == Source::Disabled {
        return None;
    }
    if !caller.exact && (facts.concurrent || facts.unavailable || facts.slot_stale) {
        return None;
    }
    if facts.subagent_active && blind(caller) {
        return None;
    }
    Some(scope.clone())
}

fn compacted_since(facts: &Facts, delivered_at: Option<u64>) -> bool {
    match delivered_at {
        // Equal times count as "after": when in doubt, withhold.
        Some(t_d) => {
            facts.last_compaction.is_some_and(|c| c >= t_d)
                || (facts.compaction_floor > 0 && t_d <= facts.compaction_floor)
        }
        None => false,
    }
}

/// Warm stub: the entry is in the server's live cache, delivered to scope
/// `delivered` at `delivered_at` (unix ms, if known).
pub fn warm(caller: &Caller, delivered: Option<&str>, delivered_at: Option<u64>, facts: &Facts) -> Decision {
    decide(caller, delivered, delivered_at, facts, false)
}

/// Cold stub: the entry comes from a persisted index (a new process). Both
/// sides must be known and equal, the caller exact or uncontested, and no
/// compaction since; no legacy escape. Without a delivery time any recorded
/// compaction of the conversation withholds (as for a warm stub).
pub fn cold(caller: &Caller, delivered: Option<&str>, delivered_at: Option<u64>, facts: &Facts) -> Decision {
    decide(caller, delivered, delivered_at, facts, true)
}

/// The one rule chain; warm and cold differ only for an unknown caller and
/// for a compaction check without a delivery time.
fn decide(caller: &Caller, delivered: Option<&str>, delivered_at: Option<u64>, facts: &Facts, cold: bool) -> Decision {
    if caller.source == Source::Disabled {
        return Decision::allow(Reason::ScopeDisabled);
    }
    if facts.unavailable {
        return Decision::deny(Reason::StateUnavailable);
    }
    if facts.unrecorded_call {
        return Decision::deny(Reason::UnrecordedCall);
    }
    let Some(current) = caller.scope.as_deref() else {
        return match (cold || facts.call_unresolved, facts.concurrent) {
            (true, _) => Decision::deny(Reason::UnknownCaller),
            (false, true) => Decision::deny(Reason::Concurrent),
            // The legacy allow assumes one caller and one recipient: not
            // while a subagent runs (it may be the caller), nor once the
            // state knows another conversation (it may have been the
            // recipient).
            (false, false) if facts.subagent_active => Decision::deny(Reason::SubagentActive),
            (false, false) if facts.several_known => Decision::deny(Reason::UnknownCaller),
            (false, false) => Decision::allow(Reason::SingleConversation),
        };
    };
    let Some(delivered) = delivered else {
        return Decision::deny(Reason::UnknownDelivery);
    };
    if !caller.exact && (facts.concurrent || facts.slot_stale) {
        return Decision::deny(Reason::Concurrent);
    }
    if current != delivered {
        return Decision::deny(Reason::OtherConversation);
    }
    if (facts.subagent_active || facts.subagent_at_delivery)
        && blind(caller)
        && (caller.source == Source::Custom || !is_subscope(current))
    {
        return Decision::deny(Reason::SubagentActive);
    }
    // Without a (trusted) delivery time, warm as cold: any recorded
    // compaction of the conversation withholds.
    let compacted = match delivered_at {
        None => facts.last_compaction.is_some(),
        _ => compacted_since(facts, delivered_at),
    };
    if compacted {
        return Decision::deny(Reason::Compacted);
    }
    Decision::allow(Reason::SameConversation)
}

/// A caller whose source cannot tell a conversation from its running
/// subagents. A `LEAN_CTX_SCOPE` server is one of them: the user names one
/// scope for the server, but the host's subagents call the same server
/// (found by tests/it/sim.rs: a subagent got the stub of what its parent
/// had been given through a `custom:` server asked without the call).
pub(crate) fn blind(caller: &Caller) -> bool {
    caller.source.blind_to_subagents() || caller.source == Source::Custom
}

/// `agent:`/`task:`/`custom:` scopes are already narrower than a conversation.
fn is_subscope(scope: &str) -> bool {
    ScopeKind::of(scope).is_narrower()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::caller::Caller;

    /// caller, delivered, delivered at, facts → allow, reason.
    type Row = (Caller, Option<&'static str>, Option<u64>, Facts, bool, Reason);

    fn caller(source: Source, scope: Option<&str>) -> Caller {
        Caller::new(source, scope.map(str::to_string), scope.map(str::to_string), None)
    }

    /// A per-process source proven to serve one conversation.
    fn proven(source: Source, scope: Option<&str>) -> Caller {
        Caller { exact: true, ..caller(source, scope) }
    }

    #[test]
    fn warm_table() {
        use Reason::*;
        let quiet = Facts::default();
        let busy = Facts { concurrent: true, ..Facts::default() };
        let compacted = Facts { last_compaction: Some(200), ..Facts::default() };
        let floor = Facts { compaction_floor: 150, ..Facts::default() };
        let sub = Facts { subagent_active: true, ..Facts::default() };
        let gone = Facts { unavailable: true, ..Facts::default() };
        let a = Some("A");
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            (Caller::disabled(),                      Some("B"), None,      busy,      true,  ScopeDisabled),
            (caller(Source::MetaSession, a),          a,         Some(100), gone,      false, StateUnavailable),
            (Caller::unknown(),                       a,         Some(100), gone,      false, StateUnavailable),
            (caller(Source::MetaSession, a),          a,         Some(100), busy,      true,  SameConversation),
            (caller(Source::MetaSession, a),          Some("B"), Some(100), quiet,     false, OtherConversation),
            (caller(Source::MetaSession, a),          a,         Some(100), compacted, false, Compacted),
            (caller(Source::MetaSession, a),          a,         Some(200), compacted, false, Compacted),
            (caller(Source::MetaSession, a),          a,         Some(201), compacted, true,  SameConversation),
            (caller(Source::MetaSession, a),          a,         Some(100), floor,     false, Compacted),
            (caller(Source::MetaSession, a),          a,         Some(151), floor,     true,  SameConversation),
            (caller(Source::MetaSession, a),          a,         None,      compacted, false, Compacted),
            (caller(Source::MetaSession, a),          a,         None,      quiet,     true,  SameConversation),
            (caller(Source::MetaSession, a),          a,         Some(100), Facts { unrecorded_call: true, ..quiet }, false, UnrecordedCall),
            // No floor (0) is not a floor at 0.
            (caller(Source::MetaSession, a),          a,         Some(0),   quiet,     true,  SameConversation),
            // The server's env is exact only when proven (its host's hooks).
            (caller(Source::ProcessEnv, a),           a,         Some(100), busy,      false, Concurrent),
            (proven(Source::ProcessEnv, a),           a,         Some(100), busy,      true,  SameConversation),
            (caller(Source::Custom, Some("custom:x")), Some("custom:x"), Some(100), busy, false, Concurrent),
            (caller(Source::Custom, Some("custom:x")), Some("custom:x"), Some(100), quiet, true, SameConversation),
            (caller(Source::Custom, Some("custom:x")), Some("custom:x"), Some(100), sub, false, SubagentActive),
            // Delivered while a subagent ran (found by tests/it/sim.rs: a label
            // given on a journal moved aside, the parent's stub of its
            // subagent's read).
            (caller(Source::Custom, Some("custom:x")), Some("custom:x"), Some(100), Facts { subagent_at_delivery: true, ..quiet }, false, SubagentActive),
            (caller(Source::MetaSession, a),          a,         Some(100), Facts { subagent_at_delivery: true, ..quiet }, true,  SameConversation),
            // A call that named nobody: no legacy allow for the unknown caller.
            (Caller::unknown(),                       a,         Some(100), Facts { call_unresolved: true, ..quiet }, false, UnknownCaller),
            (caller(Source::ProcessEnv, a),           a,         Some(100), sub,       false, SubagentActive),
            (caller(Source::ToolUseId, a),            a,         Some(100), sub,       true,  SameConversation),
            (caller(Source::Slot, a),                 a,         Some(100), quiet,     true,  SameConversation),
            (caller(Source::Slot, a),                 a,         Some(100), busy,      false, Concurrent),
            (caller(Source::Slot, a),                 a,         Some(100), Facts { slot_stale: true, ..quiet }, false, Concurrent),
            (caller(Source::Slot, a),                 Some("B"), Some(100), quiet,     false, OtherConversation),
            (caller(Source::Slot, a),                 a,         Some(100), compacted, false, Compacted),
            (caller(Source::Slot, a),                 a,         Some(100), sub,       false, SubagentActive),
            (caller(Source::Slot, Some("agent:x")),   Some("agent:x"), Some(100), sub, true,  SameConversation),
            (Caller::unknown(),                       a,         Some(100), quiet,     true,  SingleConversation),
            (Caller::unknown(),                       a,         Some(100), sub,       false, SubagentActive),
            (Caller::unknown(),                       a,         Some(100), Facts { several_known: true, ..quiet }, false, UnknownCaller),
            (Caller::unknown(),                       a,         Some(100), busy,      false, Concurrent),
            (caller(Source::MetaSession, a),          None,      Some(100), quiet,     false, UnknownDelivery),
            (caller(Source::Slot, a),                 None,      Some(100), quiet,     false, UnknownDelivery),
        ];
        for (i, (c, d, t, f, allow, reason)) in table.into_iter().enumerate() {
            let got = warm(&c, d, t, &f);
            assert_eq!(got, Decision { allow, reason }, "row {i}: {c:?} {d:?} {t:?} {f:?}");
        }
    }

    #[test]
    fn reason_codes_are_their_serde_names() {
        use Reason::*;
        #[rustfmt::skip]
        let all = [ScopeDisabled, SameConversation, SingleConversation, OtherConversation, Concurrent, Compacted,
            UnknownCaller, UnknownDelivery, SubagentActive, StateUnavailable, UnrecordedCall, ConfirmedDelivery,
            NotDelivered, VersionChanged, WindowChanged, Unconfirmed, ResultChanged, Withdrawn, TranscriptUnavailable, BaseNotHeld];
        let mut seen = std::collections::HashSet::new();
        for r in all {
            assert_eq!(serde_json::to_value(r).unwrap(), serde_json::Value::String(r.as_str().into()));
            assert!(seen.insert(r.as_str()), "{r:?}");
            assert!(r.as_str().len() > 3 && r.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
        }
    }

    #[test]
    fn narrower_scopes_are_not_blind_to_subagents() {
        let sub = Facts { subagent_active: true, ..Facts::default() };
        for s in ["agent:x", "task:t", "custom:c"] {
            let c = caller(Source::Slot, Some(s));
            assert_eq!(warm(&c, Some(s), Some(100), &sub), Decision::allow(Reason::SameConversation), "{s}");
        }
        let c = caller(Source::Slot, Some("conv"));
        assert_eq!(warm(&c, Some("conv"), Some(100), &sub), Decision::deny(Reason::SubagentActive));
    }

    #[test]
    fn delivery_scope_table() {
        let quiet = Facts::default();
        let busy = Facts { concurrent: true, ..Facts::default() };
        let gone = Facts { unavailable: true, ..Facts::default() };
        let sub = Facts { subagent_active: true, ..Facts::default() };
        let a = Some("A");
        #[rustfmt::skip]
        let rows: Vec<(Caller, Facts, Option<&str>)> = vec![
            (Caller::unknown(),                       quiet, None),
            (Caller::disabled(),                      quiet, None),
            (caller(Source::Slot, a),                 quiet, a),
            (caller(Source::Slot, a),                 busy,  None),
            (caller(Source::Slot, a),                 gone,  None),
            (caller(Source::Slot, a),                 sub,   None),
            (caller(Source::MetaSession, a),          busy,  a),
            (caller(Source::MetaSession, a),          gone,  a),
            (caller(Source::ToolUseId, a),            sub,   a),
            (caller(Source::Fingerprint, a),          sub,   None),
            (caller(Source::Fingerprint, a),          busy,  a),
            (caller(Source::ProcessEnv, a),           sub,   None),
            (caller(Source::Custom, Some("custom:x")), sub,  None),
        ];
        for (i, (c, f, want)) in rows.into_iter().enumerate() {
            assert_eq!(delivery_scope(&c, &f).as_deref(), want, "row {i}: {c:?} {f:?}");
        }
    }

    #[test]
    fn cold_table() {
        use Reason::*;
        let quiet = Facts::default();
        let busy = Facts { concurrent: true, ..Facts::default() };
        let compacted = Facts { last_compaction: Some(200), ..Facts::default() };
        let a = Some("A");
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            (Caller::unknown(),                a,         Some(100), quiet,     false, UnknownCaller),
            (caller(Source::Slot, a),          a,         Some(100), quiet,     true,  SameConversation),
            (caller(Source::Slot, a),          a,         Some(100), busy,      false, Concurrent),
            (caller(Source::MetaSession, a),   a,         Some(100), busy,      true,  SameConversation),
            (caller(Source::MetaSession, a),   a,         None,      compacted, false, Compacted),
            (caller(Source::MetaSession, a),   a,         None,      quiet,     true,  SameConversation),
            (caller(Source::MetaSession, a),   None,      None,      quiet,     false, UnknownDelivery),
            (caller(Source::MetaSession, a),   Some("B"), None,      quiet,     false, OtherConversation),
            (Caller::disabled(),               None,      None,      busy,      true,  ScopeDisabled),
        ];
        for (i, (c, d, t, f, allow, reason)) in table.into_iter().enumerate() {
            assert_eq!(cold(&c, d, t, &f), Decision { allow, reason }, "row {i}");
        }
    }
}
