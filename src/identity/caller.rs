//! Who is calling: the scope chain (README: "Who is calling"), as a pure function of
//! what the environment, the MCP call and the state say.

use crate::base::host::Host;
use crate::base::scope::ScopeKind;
use serde::Serialize;

/// How the caller was found. Serialized as the reason-style code the CLI
/// prints (`meta-session`, `tool-use-id`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// `LEAN_CTX_CONVERSATION_SCOPE=0|false|off`.
    Disabled,
    /// `LEAN_CTX_SCOPE=<s>`.
    Custom,
    /// Codex `_meta.sessionId` (+ `threadId`).
    MetaSession,
    /// Claude Code `_meta["claudecode/toolUseId"]` matched a hook call record.
    ToolUseId,
    /// Cursor: the unique unclaimed call record with this tool and arguments.
    Fingerprint,
    /// `CURSOR_TASK_ID`.
    TaskEnv,
    /// `CLAUDE_CODE_SESSION_ID` of the MCP server process.
    ProcessEnv,
    /// `active_transcript.json`.
    Slot,
    /// Nothing named the caller.
    None,
}

impl Source {
    /// The source's name as `--json` and status print it (`tool-use-id`, `slot`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Disabled => "disabled",
            Source::Custom => "custom",
            Source::MetaSession => "meta-session",
            Source::ToolUseId => "tool-use-id",
            Source::Fingerprint => "fingerprint",
            Source::TaskEnv => "task-env",
            Source::ProcessEnv => "process-env",
            Source::Slot => "slot",
            Source::None => "none",
        }
    }

    /// Sources that name this very call's caller. The server process's
    /// environment (`LEAN_CTX_SCOPE`, `CURSOR_TASK_ID`,
    /// `CLAUDE_CODE_SESSION_ID`) names whoever started the server, which is
    /// the caller only when the server provably serves one conversation: a
    /// shared daemon or an HTTP server serves many. So those are exact only
    /// when proven ([`env_after_call`]: a Claude process whose hooks say it
    /// serves that session started this server), else they count like the
    /// slot: withheld while another chat is live.
    pub fn is_exact(self) -> bool {
        matches!(self, Source::MetaSession | Source::ToolUseId | Source::Fingerprint)
    }

    /// Sources that cannot tell a conversation from its own subagents (they
    /// share the MCP server, the slot and, in Cursor, possibly the id).
    pub fn blind_to_subagents(self) -> bool {
        matches!(self, Source::Fingerprint | Source::ProcessEnv | Source::Slot)
    }
}

/// The resolved caller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Caller {
    /// The scope stubs are keyed by: a conversation id, `agent:<id>`,
    /// `task:<id>` or `custom:<s>`. `None` = unknown.
    pub scope: Option<String>,
    /// The top-level conversation behind the scope (for compaction and
    /// subagent checks), when known.
    pub conversation: Option<String>,
    /// Where the scope came from (the first match of the scope chain).
    pub source: Source,
    /// The source names this very call's caller (per call, or a proven process env): never a guess.
    pub exact: bool,
    /// The host the source belongs to, when it says.
    pub host: Option<Host>,
}

impl Caller {
    /// A caller from `source`; `exact` follows from the source.
    pub fn new(source: Source, scope: Option<String>, conversation: Option<String>, host: Option<Host>) -> Caller {
        let exact = source.is_exact() && scope.is_some();
        Caller { scope, conversation, source, exact, host }
    }

    /// Nothing named the caller.
    pub fn unknown() -> Caller {
        Caller::new(Source::None, None, None, None)
    }

    /// Scoping is switched off (`LEAN_CTX_CONVERSATION_SCOPE=0`).
    pub fn disabled() -> Caller {
        Caller::new(Source::Disabled, None, None, None)
    }
}

/// What the MCP server's environment says (read once at the edge).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopeEnv {
    /// `LEAN_CTX_CONVERSATION_SCOPE` set to 0/false/off.
    pub scoping_disabled: bool,
    /// `LEAN_CTX_SCOPE`, trimmed, if not blank.
    pub custom: Option<String>,
    /// `CURSOR_TASK_ID`, if a valid id.
    pub cursor_task_id: Option<String>,
    /// `CLAUDE_CODE_SESSION_ID`, if a valid id.
    pub claude_session_id: Option<String>,
    /// The parent process (the host that spawned the MCP server).
    pub parent_pid: Option<u32>,
}

impl ScopeEnv {
    /// Read the MCP server's own environment and parent process, once.
    pub fn from_process() -> ScopeEnv {
        ScopeEnv::from_vars(|k| std::env::var(k).ok(), Some(crate::fsx::parent_pid()))
    }

    /// What the variables `get` returns say (pure: `from_process` reads the
    /// process's own).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>, parent_pid: Option<u32>) -> ScopeEnv {
        let var = |k: &str| get(k).map(|s| s.trim().to_string());
        let valid = |k: &str| var(k).filter(|s| crate::base::ids::is_valid_id(s));
        ScopeEnv {
            scoping_disabled: var("LEAN_CTX_CONVERSATION_SCOPE")
                .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "0" | "false" | "off" | "no")),
            custom: var("LEAN_CTX_SCOPE")
                .filter(|s| !s.is_empty() && !s.chars().any(char::is_control) && s.len() <= 256),
            cursor_task_id: valid("CURSOR_TASK_ID"),
            claude_session_id: valid("CLAUDE_CODE_SESSION_ID"),
            parent_pid,
        }
    }
}

/// What the environment alone says (no per-call evidence). Returns `None`
/// when the environment names nobody (go on to the slot). `lineage` is the
/// session the server's host process serves now, from its hooks'
/// `SessionStart` records (moved along by `/clear` and `/resume`).
pub fn from_env(env: &ScopeEnv, lineage: Option<&str>) -> Option<Caller> {
    disabled(env).or_else(|| custom(env)).or_else(|| env_after_call(env, lineage))
}

/// Step 1: scoping disabled, before anything else.
pub fn disabled(env: &ScopeEnv) -> Option<Caller> {
    env.scoping_disabled.then(Caller::disabled)
}

/// `LEAN_CTX_SCOPE`: after per-call evidence, never over it; not exact (a
/// server shared by two chats gives both the same custom scope).
pub fn custom(env: &ScopeEnv) -> Option<Caller> {
    env.custom.as_ref().map(|c| Caller::new(Source::Custom, Some(ScopeKind::Custom.name(c)), None, None))
}

/// Steps 4 and 5 (after per-call identity).
pub fn env_after_call(env: &ScopeEnv, lineage: Option<&str>) -> Option<Caller> {
    if let Some(t) = &env.cursor_task_id {
        return Some(Caller::new(Source::TaskEnv, Some(ScopeKind::Task.name(t)), None, Some(Host::Cursor)));
    }
    if let Some(s) = &env.claude_session_id {
        let conv = lineage.unwrap_or(s).to_string();
        let mut c = Caller::new(Source::ProcessEnv, Some(conv.clone()), Some(conv), Some(Host::ClaudeCode));
        // Proven: the server's parent is a Claude process whose own hooks
        // recorded which session it serves.
        c.exact = lineage.is_some();
        return Some(c);
    }
    None
}

/// Step 6: a caller from the slot.
pub fn from_slot(slot: &crate::state::slot::Slot) -> Caller {
    let host = slot.host.as_deref().and_then(|h| h.parse().ok());
    Caller::new(Source::Slot, slot.scope().map(str::to_string), slot.conversation().map(str::to_string), host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_read() {
        let env = |pairs: &[(&str, &str)]| {
            let m: std::collections::HashMap<String, String> =
                pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            ScopeEnv::from_vars(|k| m.get(k).cloned(), Some(7))
        };
        assert_eq!(env(&[]), ScopeEnv { parent_pid: Some(7), ..ScopeEnv::default() });
        for off in ["0", "false", "OFF", " no "] {
            assert!(env(&[("LEAN_CTX_CONVERSATION_SCOPE", off)]).scoping_disabled, "{off}");
        }
        assert!(!env(&[("LEAN_CTX_CONVERSATION_SCOPE", "1")]).scoping_disabled);
        assert_eq!(env(&[("LEAN_CTX_SCOPE", " team a ")]).custom.as_deref(), Some("team a"));
        for bad in ["", "   ", "a\nb", "a\u{7}"] {
            assert_eq!(env(&[("LEAN_CTX_SCOPE", bad)]).custom, None, "{bad:?}");
        }
        assert_eq!(env(&[("LEAN_CTX_SCOPE", &"x".repeat(256))]).custom.map(|s| s.len()), Some(256));
        assert_eq!(env(&[("LEAN_CTX_SCOPE", &"x".repeat(257))]).custom, None);
        let e = env(&[("CURSOR_TASK_ID", "t1"), ("CLAUDE_CODE_SESSION_ID", "../etc")]);
        assert_eq!((e.cursor_task_id.as_deref(), e.claude_session_id), (Some("t1"), None));
    }

    #[test]
    fn source_codes_are_their_serde_names() {
        use Source::*;
        for s in [Disabled, Custom, MetaSession, ToolUseId, Fingerprint, TaskEnv, ProcessEnv, Slot, None] {
            assert_eq!(serde_json::to_value(s).unwrap(), serde_json::Value::String(s.as_str().into()));
        }
        assert_eq!(MetaSession.as_str(), "meta-session");
    }

    #[test]
    fn chain_order() {
        let mut env = ScopeEnv {
            scoping_disabled: true,
            custom: Some("x".into()),
            cursor_task_id: Some("t1".into()),
            claude_session_id: Some("s1".into()),
            parent_pid: Some(1),
        };
        assert_eq!(from_env(&env, None).unwrap().source, Source::Disabled);
        env.scoping_disabled = false;
        let c = from_env(&env, None).unwrap();
        assert_eq!((c.source, c.scope.as_deref(), c.exact), (Source::Custom, Some("custom:x"), false));
        env.custom = None;
        assert_eq!(from_env(&env, None).unwrap().scope.as_deref(), Some("task:t1"));
        env.cursor_task_id = None;
        let c = from_env(&env, None).unwrap();
        assert_eq!((c.source, c.scope.as_deref(), c.exact), (Source::ProcessEnv, Some("s1"), false), "unproven");
        let c = from_env(&env, Some("s2")).unwrap();
        assert_eq!(c.scope.as_deref(), Some("s2"), "a /clear lineage overrides the stale env id");
        assert!(c.exact, "proven by the host process's own hook record");
        env.claude_session_id = None;
        assert!(from_env(&env, None).is_none());
    }
}
