//! Claude Code. Codex and CodeBuddy send the same payload shape (session_id,
//! agent_id, tool_name `mcp__server__tool`, tool_use_id), so their payloads
//! are parsed here too; their answers differ and live in their own files.

use crate::base::fingerprint::args_fingerprint;
use crate::base::host::Host;
use crate::base::scope::ScopeKind;
use crate::gate::tool::ToolRef;
use crate::gate::{Action, Verdict};
use crate::hosts::event::{Event, EventKind, Fields};
use crate::state::ledger::{self, AckOut, SizeRule};
use serde_json::{Value, json};

/// Event names of the Claude-style hosts (Claude Code, Codex, CodeBuddy).
pub fn kind_of(name: &str) -> EventKind {
    match name {
        "SessionStart" => EventKind::SessionStart,
        "UserPromptSubmit" | "UserPromptExpansion" => EventKind::Prompt,
        "PreToolUse" => EventKind::PreTool,
        "PostToolUse" | "PostToolUseFailure" | "PostToolBatch" | "PermissionRequest" | "PermissionDenied" => {
            EventKind::PostTool
        }
        "Stop" | "StopFailure" => EventKind::Stop,
        "SubagentStart" => EventKind::SubagentStart,
        "SubagentStop" => EventKind::SubagentStop,
        "PreCompact" | "PostCompact" => EventKind::Compaction,
        "SessionEnd" => EventKind::SessionEnd,
        "Notification" | "MessageDisplay" | "InstructionsLoaded" | "PreModelRequest" | "PostModelRequest"
        | "Interrupt" | "ConfigChange" | "CwdChanged" | "FileChanged" | "DirectoryAdded" | "TaskCreated"
        | "TaskCompleted" | "TeammateIdle" | "PreModelSwitch" | "PostModelSwitch" | "Elicitation"
        | "ElicitationResult" | "WorktreeCreate" | "WorktreeRemove" | "Setup" => EventKind::Activity,
        _ => EventKind::Unknown,
    }
}

/// Parse a Claude-style payload for `host`.
pub fn parse(host: Host, payload: &Value, event_override: Option<&str>) -> Event {
    let f = Fields(payload);
    let name = event_override.or(f.str("hook_event_name")).unwrap_or("");
    let mut ev = Event::new(host, name, kind_of(name));
    ev.conversation = f.id("session_id");
    ev.agent = f.id("agent_id").map(|a| ScopeKind::Agent.name(&a));
    ev.transcript_path = f.path("transcript_path");
    ev.source = f.id("source");
    ev.idle_s = f.get("seconds_since_last_response").and_then(Value::as_f64).filter(|s| *s >= 0.0).map(|s| s as u64);
    ev.call_id = f.id("tool_use_id");
    ev.prompt_id = f.id("prompt_id");
    ev.trigger = f.id("trigger");
    if let Some(cwd) = f.path("cwd") {
        ev.roots.push(cwd);
    }
    if let Some(name) = f.tool_name() {
        // Only a plain name: it is stored in the call record, and now decides
        // the server over what the tool name says.
        let hint = f
            .get("mcp_server")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .filter(|n| crate::base::ids::is_plain_name(n));
        let tool = ToolRef::parse(&name, hint);
        if ev.kind == EventKind::PreTool && tool.is_mcp {
            ev.args_fingerprint = Some(args_fingerprint(f.get("tool_input")));
        }
        if ev.name == "PostToolUse" && tool.is_mcp {
            ev.acks.extend(post_tool_use_ack(host, &f, &tool));
        }
        ev.tool = Some(tool);
    }
    if host == Host::ClaudeCode && ev.name == "PostToolBatch" {
        ev.acks = post_tool_batch_acks(payload);
    }
    ev
}

/// Claude Code `PostToolBatch`: `tool_calls[].tool_response` is what the
/// model got (a `<persisted-output>` preview in place of a large result;
/// docs/DELIVERY.md §1), so each MCP call's digest is acknowledged as shown.
/// `PostToolUse` shows the server's copy and acknowledges nothing here.
fn post_tool_batch_acks(payload: &Value) -> Vec<AckOut> {
    let Some(Value::Array(calls)) = payload.get("tool_calls") else { return Vec::new() };
    calls
        .iter()
        .filter_map(|c| {
            let f = Fields(c);
            let id = f.id("tool_use_id")?;
            if !ToolRef::parse(f.tool_name()?.as_str(), None).is_mcp {
                return None;
            }
            let content = ledger::received_content(f.get("tool_response")?)?;
            Some(AckOut { call_ref: ledger::id_ref(&id), content, rule: SizeRule::Shown })
        })
        .collect()
}

/// `PostToolUse` of an MCP tool. Codex: the hook's `tool_use_id` is the
/// call's `_meta.callId`, and what the model gets is decided by the output
/// budget. CodeBuddy: the server cannot see a call id, so the call is named
/// by tool and arguments; what the model gets of a large result is not
/// verified, so only small results count as whole. Claude Code: nothing
/// (its `PostToolUse` shows the server's copy; `PostToolBatch` confirms).
fn post_tool_use_ack(host: Host, f: &Fields<'_>, tool: &ToolRef) -> Option<AckOut> {
    let (call_ref, rule) = match host {
        Host::Codex => (ledger::id_ref(&f.id("tool_use_id")?), SizeRule::CodexBudget),
        Host::CodeBuddy => (
            ledger::fp_ref(&tool.tool, &args_fingerprint(f.get("tool_input"))),
            SizeRule::Cap(ledger::UNVERIFIED_HOST_CAP_BYTES),
        ),
        Host::ClaudeCode | Host::Cursor => return None,
    };
    let content = ledger::received_content(f.get("tool_response")?)?;
    Some(AckOut { call_ref, content, rule })
}

/// `hookSpecificOutput` for a PreToolUse decision.
pub(crate) fn pre_tool_use_output(decision: &str, reason: &str) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    })
}

/// Claude Code: nothing for "no opinion" (an explicit allow would bypass the
/// user's own permission prompt); an explicit decision otherwise.
pub fn answer(verdict: &Verdict) -> Option<String> {
    match verdict {
        Verdict::NoOpinion => None,
        Verdict::Decide { action, message, .. } => Some(pre_tool_use_output(action.as_str(), message).to_string()),
    }
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        }
    }
}
