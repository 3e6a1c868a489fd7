//! What a compaction ended: every delivery of its conversation, or, on
//! Claude Code, one context of it. The main thread and each subagent hold
//! contexts of their own: a main-thread compaction (its hooks carry no
//! `agent_id`; its `compact_boundary` is in the session's transcript) left
//! a running subagent's earlier results whole in the subagent's next model
//! request, and a subagent's own compaction (its hooks carry its
//! `agent_id`; its boundary goes to the subagent's own transcript) left the
//! main thread's whole (Claude Code 2.1.328, docs/DELIVERY.md §8,
//! "Subagents and compaction"; fixtures in
//! tests/fixtures/payloads/withdrawal/claude/subagent-*).

use crate::base::scope::ScopeKind;

/// What a compaction record ended. A narrower reach than [`Reach::All`] is
/// written on a line of its own (`p t host conv reach`) just before the
/// unchanged `P` line (`record.rs`): an older reader skips that line as an
/// unknown tag and reads the `P` line as ending everything, the stronger
/// reading. [`Reach::field`] and [`Reach::parse`] are that line's last field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach<'a> {
    /// Every delivery of the conversation.
    All,
    /// Claude Code's main thread: every delivery of the conversation but a
    /// subagent's (`agent:` scope).
    Main,
    /// One Claude Code subagent (its scope, `agent:<id>`): its deliveries,
    /// and any of a scope that is neither the main thread nor a subagent
    /// (a custom or task scope may hold either).
    Agent(&'a str),
}

impl<'a> Reach<'a> {
    /// Whether a delivery to `scope` (of the record's conversation) ended.
    pub fn ends(self, scope: &str) -> bool {
        match self {
            Reach::All => true,
            Reach::Main => ScopeKind::of(scope) != ScopeKind::Agent,
            Reach::Agent(a) => {
                scope == a || !matches!(ScopeKind::of(scope), ScopeKind::Conversation | ScopeKind::Agent)
            }
        }
    }

    /// The reach line's last field (`None`: no reach line, [`Reach::All`]).
    pub fn field(self) -> Option<&'a str> {
        match self {
            Reach::All => None,
            Reach::Main => Some("main"),
            Reach::Agent(a) => Some(a),
        }
    }

    /// The reach line's last field read back. Anything unknown ends
    /// everything (a later format's reach this reader cannot judge).
    pub fn parse(field: Option<&'a str>) -> Reach<'a> {
        match field {
            Some("main") => Reach::Main,
            Some(a) if ScopeKind::of(a) == ScopeKind::Agent && a.len() > "agent:".len() => Reach::Agent(a),
            _ => Reach::All,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_each_reach_ends() {
        #[rustfmt::skip]
        let rows: [(Reach<'_>, &str, bool); 14] = [
            (Reach::All,              "S",          true),
            (Reach::All,              "agent:A",    true),
            (Reach::All,              "custom:c",   true),
            (Reach::Main,             "S",          true),
            (Reach::Main,             "custom:c",   true),
            (Reach::Main,             "task:t",     true),
            // The main thread's compaction leaves every subagent's context.
            (Reach::Main,             "agent:A",    false),
            (Reach::Main,             "agent:B",    false),
            (Reach::Agent("agent:A"), "agent:A",    true),
            (Reach::Agent("agent:A"), "agent:B",    false),
            (Reach::Agent("agent:A"), "S",          false),
            // Scopes that may hold any context: ended.
            (Reach::Agent("agent:A"), "custom:c",   true),
            (Reach::Agent("agent:A"), "task:t",     true),
            (Reach::Agent("agent:A"), "agent:",     false),
        ];
        for (reach, scope, ends) in rows {
            assert_eq!(reach.ends(scope), ends, "{reach:?} {scope}");
        }
    }

    #[test]
    fn fields_round_trip_and_unknown_ones_end_everything() {
        for r in [Reach::All, Reach::Main, Reach::Agent("agent:A")] {
            assert_eq!(Reach::parse(r.field()), r);
        }
        for f in ["", "MAIN", "agent:", "task:t", "custom:c", "S", "1234"] {
            assert_eq!(Reach::parse(Some(f)), Reach::All, "{f}");
        }
    }
}
