//! Scope names: a top-level conversation is named by its id; a narrower
//! scope inside it by a prefix and an id (`agent:<id>` a Claude Code or
//! Codex subagent, `task:<id>` a Cursor task, `custom:<name>` from
//! `LEAN_CTX_SCOPE`). This is the one place the prefixes are spelled.

/// What a scope name names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    Conversation,
    Agent,
    Task,
    Custom,
}

impl ScopeKind {
    fn prefix(self) -> &'static str {
        match self {
            ScopeKind::Conversation => "",
            ScopeKind::Agent => "agent:",
            ScopeKind::Task => "task:",
            ScopeKind::Custom => "custom:",
        }
    }

    /// The kind of scope `scope` names.
    pub fn of(scope: &str) -> ScopeKind {
        [ScopeKind::Agent, ScopeKind::Task, ScopeKind::Custom]
            .into_iter()
            .find(|k| scope.starts_with(k.prefix()))
            .unwrap_or(ScopeKind::Conversation)
    }

    /// The scope of this kind named `id`.
    pub fn name(self, id: &str) -> String {
        format!("{}{id}", self.prefix())
    }

    /// The id in `scope`, if it is a scope of this kind.
    pub fn id(self, scope: &str) -> Option<&str> {
        match self {
            ScopeKind::Conversation => (ScopeKind::of(scope) == ScopeKind::Conversation).then_some(scope),
            k => scope.strip_prefix(k.prefix()),
        }
    }

    /// Narrower than a conversation (a subagent, a task, a custom scope).
    pub fn is_narrower(self) -> bool {
        self != ScopeKind::Conversation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in [ScopeKind::Conversation, ScopeKind::Agent, ScopeKind::Task, ScopeKind::Custom] {
            let s = k.name("x1");
            assert_eq!((ScopeKind::of(&s), k.id(&s)), (k, Some("x1")), "{s}");
        }
        assert_eq!(ScopeKind::Agent.id("task:x"), None);
    }
}
