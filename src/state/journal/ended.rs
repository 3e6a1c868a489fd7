//! One conversation's latest compaction of each reach, by position: what
//! `compacted_after` asks, answered without walking every compaction (the
//! digest's per-question answer; the trim's test of each delivery).

use super::Reach;
use crate::base::scope::ScopeKind;
use std::collections::HashMap;

/// One conversation's latest compactions (positions), by what they reached
/// ([`Reach`]).
#[derive(Clone, Debug, Default)]
pub struct CompactedAt {
    all: Option<usize>,
    main: Option<usize>,
    /// Of any one subagent.
    any_agent: Option<usize>,
    /// Per subagent scope (`agent:<id>`).
    agents: HashMap<String, usize>,
    /// Per host process, its main thread's ([`Reach::MainOf`]).
    procs: HashMap<u32, usize>,
    /// Per host process, all its contexts' ([`Reach::Proc`]).
    whole_procs: HashMap<u32, usize>,
}

impl CompactedAt {
    /// A compaction of `reach` at position `at`, later than any noted before.
    pub fn note(&mut self, reach: Reach<'_>, at: usize) {
        match reach {
            Reach::All => self.all = Some(at),
            Reach::Main => self.main = Some(at),
            Reach::Agent(a) => {
                self.any_agent = Some(at);
                match self.agents.get_mut(a) {
                    Some(e) => *e = at,
                    None => {
                        self.agents.insert(a.to_string(), at);
                    }
                }
            }
            Reach::MainOf(p) => {
                self.procs.insert(p, at);
            }
            Reach::Proc(p) => {
                self.whole_procs.insert(p, at);
            }
        }
    }

    /// [`super::View::compacted_after`] for this conversation: what
    /// [`Reach::ends_for`] says, by position.
    pub fn after(&self, scope: &str, own: Option<u32>, after: usize) -> bool {
        let later = |p: Option<usize>| p.is_some_and(|p| p > after);
        // A process's main thread: unless another process asks its own.
        let procs = || self.procs.iter().any(|(&p, &at)| at > after && own.is_none_or(|o| o == p));
        // A process's every context, likewise.
        let whole = self.whole_procs.iter().any(|(&p, &at)| at > after && own.is_none_or(|o| o == p));
        later(self.all)
            || whole
            || match ScopeKind::of(scope) {
                ScopeKind::Agent => later(self.agents.get(scope).copied()),
                ScopeKind::Conversation => later(self.main) || procs(),
                ScopeKind::Task | ScopeKind::Custom => later(self.main) || later(self.any_agent) || procs(),
            }
    }
}
