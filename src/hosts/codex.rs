//! Codex CLI answers. Codex treats a bare `allow` or `ask` from PreToolUse as
//! a failed hook (VERIFIED.md §7), so only a deny is ever printed: "no
//! opinion" and allow print nothing, and ask becomes a deny that says why.

use super::claude::pre_tool_use_output;
use crate::gate::{Action, Verdict};

pub fn answer(verdict: &Verdict) -> Option<String> {
    match verdict {
        Verdict::NoOpinion => None,
        Verdict::Decide { action: Action::Allow, .. } => None,
        Verdict::Decide { action: Action::Deny, message, .. } => {
            Some(pre_tool_use_output("deny", nonempty(message)).to_string())
        }
        Verdict::Decide { action: Action::Ask, message, .. } => {
            let reason = format!(
                "{} (leanctx: the policy says ask, and Codex cannot ask from a hook, so the call is denied)",
                nonempty(message)
            );
            Some(pre_tool_use_output("deny", &reason).to_string())
        }
    }
}

fn nonempty(message: &str) -> &str {
    if message.trim().is_empty() { "blocked by leanctx gate policy" } else { message }
}
