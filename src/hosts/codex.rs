//! Codex CLI answers. Codex treats a bare `allow` or `ask` from PreToolUse as
//! a failed hook (docs/HOSTS.md §4), so only a deny is ever printed: "no
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
/// At most this many profile files are read.
const MAX_PROFILE_FILES: usize = 32;

fn read_config(path: &std::path::Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut s = String::new();
    f.take(MAX_CONFIG_BYTES).read_to_string(&mut s).ok()?;
    Some(s)
}

/// The output budget (tokens) Codex applies to tool results, read from every
/// place a user may set it (see [`crate::ledger::codex_budget`]): the user's
/// `config.toml`, profile files beside it, the project's
/// `<cwd>/.codex/config.toml`, and the command line of the Codex process that
/// runs this hook (its parent: Codex starts hooks with `bash -c`, which execs).
pub fn budget_tokens(codex_home: Option<&std::path::Path>, cwd: Option<&str>) -> u64 {
    let user = codex_home.and_then(|h| read_config(&h.join("config.toml")));
    let mut others = Vec::new();
    if let Some(home) = codex_home
        && let Ok(rd) = std::fs::read_dir(home)
    {
        let profiles = rd
            .flatten()
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".config.toml")))
            .take(MAX_PROFILE_FILES);
        others.extend(profiles.filter_map(|e| read_config(&e.path())));
    }
    if let Some(cwd) = cwd {
        others.extend(read_config(&std::path::Path::new(cwd).join(".codex/config.toml")));
    }
    crate::ledger::codex_budget(user.as_deref(), &others, &crate::fsx::parent_argv())
}
