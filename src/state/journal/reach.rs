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
    /// The main thread of one Claude Code host process (`CLAUDE_PID`) of a
    /// session open in several (`--resume` while another runs): what
    /// [`Reach::Main`] ends, but not a delivery another process received
    /// and asks about itself (its context is its own: docs/DELIVERY.md §8,
    /// "One session, two processes"). Written `proc:<pid>`.
    MainOf(u32),
    /// Every context of one Claude Code host process, its main thread and
    /// its subagents (its idle return: the host cuts and clears only the
    /// requests of the process that returned, docs/DELIVERY.md §8): what
    /// [`Reach::All`] ends, but not a delivery another process received
    /// and asks about itself. Written `process:<pid>`.
    Proc(u32),
}

impl<'a> Reach<'a> {
    /// Whether a delivery to `scope` (of the record's conversation) ended,
    /// whoever asks.
    pub fn ends(self, scope: &str) -> bool {
        self.ends_for(scope, None)
    }

    /// Whether a delivery to `scope` ended for a question about it from
    /// `own`: the host process that received it, asking itself (none: not
    /// known, or another process relying on having loaded it, whose
    /// history may be the compacting process's).
    pub fn ends_for(self, scope: &str, own: Option<u32>) -> bool {
        match self {
            Reach::All => true,
            Reach::MainOf(p) => Reach::Main.ends(scope) && own.is_none_or(|o| o == p),
            Reach::Proc(p) => own.is_none_or(|o| o == p),
            Reach::Main => ScopeKind::of(scope) != ScopeKind::Agent,
            Reach::Agent(a) => {
                scope == a || !matches!(ScopeKind::of(scope), ScopeKind::Conversation | ScopeKind::Agent)
            }
        }
    }

    /// The reach line's last field (`None`: no reach line, [`Reach::All`]).
    pub fn field(self) -> Option<std::borrow::Cow<'a, str>> {
        match self {
            Reach::All => None,
            Reach::Main => Some("main".into()),
            Reach::Agent(a) => Some(a.into()),
            Reach::MainOf(p) => Some(format!("{PROC_PREFIX}{p}").into()),
            Reach::Proc(p) => Some(format!("{PROCESS_PREFIX}{p}").into()),
        }
    }

    /// The reach line's last field read back. Anything unknown ends
    /// everything (a later format's reach this reader cannot judge).
    pub fn parse(field: Option<&'a str>) -> Reach<'a> {
        match field {
            Some("main") => Reach::Main,
            // A reader before this reach reads `proc:<pid>` as unknown:
            // everything ends, the stronger reading.
            Some(p) if p.starts_with(PROC_PREFIX) => {
                crate::state::ledger::pid_digits(&p[PROC_PREFIX.len()..]).map_or(Reach::All, Reach::MainOf)
            }
            Some(p) if p.starts_with(PROCESS_PREFIX) => {
                crate::state::ledger::pid_digits(&p[PROCESS_PREFIX.len()..]).map_or(Reach::All, Reach::Proc)
            }
            Some(a) if ScopeKind::of(a) == ScopeKind::Agent && a.len() > "agent:".len() => Reach::Agent(a),
            _ => Reach::All,
        }
    }
}

/// The field prefix of [`Reach::MainOf`].
const PROC_PREFIX: &str = "proc:";
/// The field prefix of [`Reach::Proc`].
const PROCESS_PREFIX: &str = "process:";

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

    /// One process's compaction: the main thread's deliveries end, unless
    /// another process received the delivery and asks about it itself.
    #[test]
    fn a_process_compaction_spares_only_another_process_asking_its_own() {
        #[rustfmt::skip]
        let rows: [(Reach<'_>, &str, Option<u32>, bool); 12] = [
            (Reach::MainOf(2), "S",        Some(1), false),
            (Reach::MainOf(2), "S",        Some(2), true),
            // Not known whose, or another relying on having loaded it.
            (Reach::MainOf(2), "S",        None,    true),
            (Reach::MainOf(2), "custom:c", Some(1), false),
            (Reach::MainOf(2), "custom:c", None,    true),
            (Reach::MainOf(2), "agent:A",  None,    false),
            (Reach::MainOf(2), "agent:A",  Some(2), false),
            (Reach::Main,      "S",        Some(1), true),
            (Reach::All,       "S",        Some(1), true),
            (Reach::All,       "agent:A",  Some(1), true),
            (Reach::Agent("agent:A"), "agent:A", Some(1), true),
            (Reach::Agent("agent:A"), "S",  Some(1), false),
        ];
        for (reach, scope, own, ends) in rows {
            assert_eq!(reach.ends_for(scope, own), ends, "{reach:?} {scope} {own:?}");
        }
    }

    /// One process's idle return: every context of that process (its
    /// subagents too) and every delivery not known to be another's; only
    /// another process asking about its own delivery keeps it.
    #[test]
    fn a_process_idle_return_spares_only_another_process_asking_its_own() {
        #[rustfmt::skip]
        let rows: [(&str, Option<u32>, bool); 10] = [
            ("S",        Some(1), false),
            ("agent:A",  Some(1), false),
            ("custom:c", Some(1), false),
            ("task:t",   Some(1), false),
            ("S",        Some(2), true),
            ("agent:A",  Some(2), true),
            ("custom:c", Some(2), true),
            ("S",        None,    true),
            ("agent:A",  None,    true),
            ("task:t",   None,    true),
        ];
        for (scope, own, ends) in rows {
            assert_eq!(Reach::Proc(2).ends_for(scope, own), ends, "{scope} {own:?}");
        }
    }

    #[test]
    fn fields_round_trip_and_unknown_ones_end_everything() {
        for r in [Reach::All, Reach::Main, Reach::Agent("agent:A"), Reach::MainOf(7), Reach::Proc(7)] {
            assert_eq!(Reach::parse(r.field().as_deref()), r);
        }
        for f in [
            "",
            "MAIN",
            "agent:",
            "task:t",
            "custom:c",
            "S",
            "1234",
            "proc:",
            "proc:0",
            "proc:+1",
            "proc:x",
            "proc:99999999999",
            "process:",
            "process:0",
            "process:-1",
            "process:7x",
            "processes:7",
        ] {
            assert_eq!(Reach::parse(Some(f)), Reach::All, "{f}");
        }
    }
}
