//! One hook invocation, normalised across hosts.

use crate::base::host::Host;
use crate::base::ids;
use crate::gate::tool::ToolRef;
use serde::Serialize;
use serde_json::Value;

/// What an event means for the state, whatever the host called it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    SessionStart,
    Prompt,
    /// Before a tool runs: the gate's event (for MCP tools).
    PreTool,
    /// After a tool ran, or any other tool-related notice.
    PostTool,
    Stop,
    SubagentStart,
    SubagentStop,
    Compaction,
    SessionEnd,
    /// A known event that only shows the conversation is alive.
    Activity,
    /// Not an event we know: accepted and ignored.
    Unknown,
}

/// A hook event, host-neutral. Only ids, names, hashes and times: nothing
/// here may carry prompt text, tool input or file content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    pub host: Host,
    /// `hook_event_name` as sent (or the `--event` override).
    pub name: String,
    pub kind: EventKind,
    /// Top-level conversation (Cursor `conversation_id`) or session id.
    pub conversation: Option<String>,
    /// Subagent scope, already prefixed: `agent:<id>` or `task:<id>`.
    pub agent: Option<String>,
    /// For Cursor `subagentStart` / `subagentStop`: the subagent being
    /// started or stopped (`task:<id>`).
    pub started_agent: Option<String>,
    pub transcript_path: Option<String>,
    pub tool: Option<ToolRef>,
    /// The host's id for this tool call (`tool_use_id`).
    pub call_id: Option<String>,
    /// sha256 of the canonical tool arguments, for MCP pre-tool events.
    pub args_fingerprint: Option<String>,
    /// `source` of a SessionStart (`startup`, `resume`, `clear`, `compact`).
    pub source: Option<String>,
    /// `seconds_since_last_response` of a Claude Code `SessionStart(resume)`.
    pub idle_s: Option<u64>,
    /// Claude Code's `prompt_id`: the host process's current prompt (a
    /// random id it makes when a prompt or a slash command is submitted),
    /// which its transcript's user lines carry as `promptId`.
    pub prompt_id: Option<String>,
    /// `trigger` of a compaction hook (`manual`, `auto`).
    pub trigger: Option<String>,
    /// Where project policy is looked up: `cwd`, or Cursor's workspace roots.
    pub roots: Vec<String>,
    /// What the host says tool calls returned (ledger acknowledgements):
    /// refs, digests and lengths only.
    pub acks: Vec<crate::state::ledger::AckOut>,
}

impl Event {
    pub fn new(host: Host, name: &str, kind: EventKind) -> Event {
        Event {
            host,
            name: name.to_string(),
            kind,
            conversation: None,
            agent: None,
            started_agent: None,
            transcript_path: None,
            tool: None,
            call_id: None,
            args_fingerprint: None,
            source: None,
            idle_s: None,
            prompt_id: None,
            trigger: None,
            roots: Vec::new(),
            acks: Vec::new(),
        }
    }

    /// A pre-tool event on an MCP tool: what the gate sees and records.
    pub fn is_mcp_call(&self) -> bool {
        self.kind == EventKind::PreTool && self.tool.as_ref().is_some_and(|t| t.is_mcp)
    }

    /// This event is a compaction of its conversation (including
    /// `SessionStart` with source `compact`).
    pub fn is_compaction(&self) -> bool {
        self.kind == EventKind::Compaction
            || (self.kind == EventKind::SessionStart && self.source.as_deref() == Some("compact"))
    }
}

/// Longest tool name kept whole (real names are under 128 bytes).
pub const MAX_TOOL_NAME_BYTES: usize = 4096;

/// Lenient field access on a payload: wrong types read as absent.
pub(crate) struct Fields<'a>(pub &'a Value);

impl<'a> Fields<'a> {
    pub fn str(&self, key: &str) -> Option<&'a str> {
        self.0.get(key).and_then(Value::as_str)
    }

    /// A field that must be a valid id (see [`ids::is_valid_id`]).
    pub fn id(&self, key: &str) -> Option<String> {
        self.str(key).and_then(ids::valid_id).map(str::to_string)
    }

    /// A field that is an id, kept in a safe stable form when it is not a
    /// valid one (see [`ids::safe_id`]).
    pub fn safe_id(&self, key: &str) -> Option<String> {
        self.str(key).and_then(ids::safe_id)
    }

    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.get(key)
    }

    /// `tool_name`, for the gate and the call record. Not filtered like an
    /// id: a name the gate cannot see would be a name the gate cannot stop
    /// (a `dеlete_repo` with a Cyrillic `е` once went through ungated). Any
    /// non-empty string is kept; one longer than [`MAX_TOOL_NAME_BYTES`] is
    /// cut at a character boundary and marked with U+FFFD, which makes it a
    /// look-alike suspect that only deny/ask rules can match. The journal
    /// escapes whatever is not printable ASCII.
    pub fn tool_name(&self) -> Option<String> {
        let s = self.str("tool_name").filter(|s| !s.is_empty())?;
        if s.len() <= MAX_TOOL_NAME_BYTES {
            return Some(s.to_string());
        }
        let mut cut = MAX_TOOL_NAME_BYTES;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        Some(format!("{}\u{fffd}", &s[..cut]))
    }

    /// A path-like string field, bounded in length and free of control
    /// characters (it is stored in the slot).
    pub fn path(&self, key: &str) -> Option<String> {
        self.str(key)
            .filter(|s| !s.is_empty() && s.len() <= 4096 && !s.chars().any(char::is_control))
            .map(str::to_string)
    }
}
