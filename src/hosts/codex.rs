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

/// Largest `config.toml` read for the output budget.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The output budget (tokens) Codex applies to tool results: the user's
/// `tool_output_token_limit` when `config.toml` sets one (see
/// [`crate::ledger::codex_budget_from_config`]), else the conservative
/// default. A budget set only on Codex's command line (`-c`) is not seen.
pub fn budget_tokens(codex_home: Option<&std::path::Path>) -> u64 {
    use std::io::Read;
    let text = codex_home.and_then(|h| {
        let f = std::fs::File::open(h.join("config.toml")).ok()?;
        if !f.metadata().ok()?.is_file() {
            return None;
        }
        let mut s = String::new();
        f.take(MAX_CONFIG_BYTES).read_to_string(&mut s).ok()?;
        Some(s)
    });
    text.as_deref()
        .and_then(crate::ledger::codex_budget_from_config)
        .unwrap_or(crate::ledger::CODEX_DEFAULT_BUDGET_TOKENS)
}
