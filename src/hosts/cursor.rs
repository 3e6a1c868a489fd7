//! Cursor: lowerCamel event names, `conversation_id`, flat answers with
//! `permission` for the gating events.

use super::HookEnv;
use crate::base::fingerprint::args_fingerprint;
use crate::base::host::Host;
use crate::base::scope::ScopeKind;
use crate::gate::tool::{ToolRef, server_from_cursor};
use crate::gate::{Action, Verdict};
use crate::hosts::event::{Event, EventKind, Fields};
use crate::state::ledger::{self, AckOut, SizeRule};
use serde_json::{Value, json};

pub fn kind_of(name: &str) -> EventKind {
    match name {
        "sessionStart" => EventKind::SessionStart,
        "beforeSubmitPrompt" => EventKind::Prompt,
        "beforeMCPExecution" | "preToolUse" => EventKind::PreTool,
        "afterMCPExecution"
        | "postToolUse"
        | "postToolUseFailure"
        | "beforeShellExecution"
        | "afterShellExecution"
        | "beforeReadFile"
        | "afterFileEdit" => EventKind::PostTool,
        "stop" => EventKind::Stop,
        "subagentStart" => EventKind::SubagentStart,
        "subagentStop" => EventKind::SubagentStop,
        "preCompact" => EventKind::Compaction,
        "sessionEnd" => EventKind::SessionEnd,
        "afterAgentResponse" | "afterAgentThought" => EventKind::Activity,
        _ => EventKind::Unknown,
    }
}

/// Events where Cursor reads a `permission` from the answer.
fn is_gating(name: &str) -> bool {
    matches!(name, "beforeMCPExecution" | "preToolUse" | "beforeShellExecution" | "beforeReadFile")
}

/// The `permission` that leaves the decision to Cursor on a gating event.
pub fn no_opinion(event_name: &str) -> Action {
    if event_name == "beforeReadFile" { Action::Allow } else { Action::Ask }
}

pub fn parse(payload: &Value, event_override: Option<&str>, env: &HookEnv) -> Event {
    let f = Fields(payload);
    let name = event_override.or(f.str("hook_event_name")).unwrap_or("");
    let mut ev = Event::new(Host::Cursor, name, kind_of(name));
    // Cursor's ids are kept in a safe, stable form rather than dropped when
    // they are not valid ids: `subagent_id` (= `tool_call_id`, the parent's
    // Task call id) and `tool_use_id` of built-in tools hold a newline.
    ev.conversation = f.safe_id("conversation_id").or_else(|| f.safe_id("session_id"));
    if matches!(ev.kind, EventKind::SubagentStart | EventKind::SubagentStop) {
        // Both fire in the parent conversation and name it; the subagent is
        // opened and closed by its own id (a stop without one, from an older
        // Cursor, closes none: see `View::active_subagents`).
        if let Some(parent) = f.safe_id("parent_conversation_id") {
            ev.conversation = Some(parent);
        }
        ev.started_agent =
            f.safe_id("subagent_id").or_else(|| f.safe_id("tool_call_id")).map(|a| ScopeKind::Task.name(&a));
    }
    ev.agent = env.cursor_task_id.as_ref().map(|t| ScopeKind::Task.name(t));
    ev.transcript_path = f.path("transcript_path");
    ev.call_id = f.safe_id("tool_use_id");
    if let Some(Value::Array(roots)) = f.get("workspace_roots") {
        ev.roots.extend(
            roots.iter().filter_map(Value::as_str).filter(|s| !s.is_empty() && s.len() <= 4096).map(str::to_string),
        );
    }
    if let Some(cwd) = f.path("cwd")
        && !ev.roots.contains(&cwd)
    {
        ev.roots.push(cwd);
    }
    if let Some(raw) = f.tool_name() {
        // The server as mcp.json names it (`mcp_server_name`, on
        // before/afterMCPExecution), else what `command`/`url` give.
        // `preToolUse` says `MCP:<tool>`: no server at all.
        let hint = f
            .str("mcp_server_name")
            .filter(|n| crate::base::ids::is_plain_name(n))
            .map(str::to_string)
            .or_else(|| server_from_cursor(f.str("command"), f.str("url").or_else(|| f.str("mcp_server_url"))));
        let mut tool = ToolRef::parse(&raw, hint.as_deref());
        if name == "beforeMCPExecution" || name == "afterMCPExecution" {
            tool.is_mcp = true;
        }
        if ev.kind == EventKind::PreTool && tool.is_mcp {
            ev.args_fingerprint = Some(args_fingerprint(f.get("tool_input")));
        }
        // What an MCP call returned: `result_json` (afterMCPExecution) or
        // `tool_output` (postToolUse of `MCP:<tool>`), both the server's copy
        // as JSON text. What the model gets of a large result is not verified,
        // so only a small one counts as whole. The server names the call by
        // tool and arguments (it gets no call id from Cursor).
        let result = match name {
            "afterMCPExecution" => f.get("result_json"),
            "postToolUse" if tool.is_mcp => f.get("tool_output"),
            _ => None,
        };
        if let Some(content) = result.and_then(ledger::received_content) {
            ev.acks.push(AckOut {
                call_ref: ledger::fp_ref(&tool.tool, &args_fingerprint(f.get("tool_input"))),
                content,
                rule: SizeRule::Cap(ledger::UNVERIFIED_HOST_CAP_BYTES),
            });
        }
        ev.tool = Some(tool);
    }
    ev
}

/// Cursor wants JSON from every hook. Gating events get a `permission`;
/// `beforeSubmitPrompt` gets `continue: true`; the rest `{}`.
///
/// "No opinion" is `ask` where Cursor takes one (`beforeMCPExecution`,
/// `beforeShellExecution`, `preToolUse`): `allow` is what hook projects
/// answer to *skip* Cursor's own approval prompt, `ask` what they answer to
/// defer to it, and a missing `permission` has been seen to block
/// (docs/HOST-FACTS.md §7). So installing leanctx never makes Cursor's
/// approval weaker; the cost is that it may prompt where Cursor's auto-run
/// would not, which an explicit allow rule undoes. `beforeReadFile` takes
/// only allow or deny: there it stays `allow`.
pub fn answer(event_name: &str, gated: bool, verdict: &Verdict) -> Option<String> {
    let out = match verdict {
        Verdict::Decide { action, message, .. } if gated => {
            let mut o = json!({ "permission": action.as_str() });
            if *action != Action::Allow || !message.is_empty() {
                o["user_message"] = Value::String(message.clone());
                o["agent_message"] = Value::String(message.clone());
            }
            o
        }
        _ if is_gating(event_name) => json!({ "permission": no_opinion(event_name).as_str() }),
        _ if event_name == "beforeSubmitPrompt" => json!({ "continue": true }),
        _ => json!({}),
    };
    Some(out.to_string())
}
