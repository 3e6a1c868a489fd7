//! Codex CLI answers. Codex treats a bare `allow` or `ask` from PreToolUse as
//! a failed hook (docs/HOST-FACTS.md §4), so only a deny is ever printed: "no
//! opinion" and allow print nothing, and ask becomes a deny that says why.

use super::claude::pre_tool_use_output;
use crate::gate::{Action, Verdict};
use crate::state::ledger::CODEX_DEFAULT_BUDGET_TOKENS;

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

/// A config file's text, or `None` when it is missing or cannot be read
/// (a FIFO planted at `<cwd>/.codex/config.toml`, a device, a huge file: the
/// bounded read refuses it at once; it then sets nothing, as one that does
/// not parse).
fn read_config(path: &std::path::Path) -> Option<String> {
    crate::fsx::read_text(path, &crate::fsx::ReadRule::any(MAX_CONFIG_BYTES)).ok().flatten()
}

/// The output budget (tokens) Codex applies to tool results, read from every
/// place a user may set it (see [`codex_budget`]): the user's
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
    codex_budget(user.as_deref(), &others, &crate::fsx::parent_argv())
}

/// Codex's `tool_output_token_limit` from its `config.toml` text: the
/// top-level value, lowered by any profile's (a profile may be active, and
/// a smaller budget only withholds more). `None` when the file sets none or
/// does not parse (the caller then uses [`CODEX_DEFAULT_BUDGET_TOKENS`]).
pub fn codex_budget_from_config(text: &str) -> Option<u64> {
    let doc: toml_edit::Document<&str> = toml_edit::Document::parse(text).ok()?;
    let as_budget = |item: Option<&toml_edit::Item>| item.and_then(|i| i.as_integer()).map(|n| n.max(0) as u64);
    let top = as_budget(doc.get("tool_output_token_limit"));
    let profiles = doc
        .get("profiles")
        .and_then(|p| p.as_table_like())
        .map(|t| t.iter().filter_map(|(_, p)| as_budget(p.as_table_like()?.get("tool_output_token_limit"))).min())
        .unwrap_or(None);
    match (top, profiles) {
        (Some(t), Some(p)) => Some(t.min(p)),
        (Some(t), None) => Some(t),
        (None, Some(p)) => Some(p.min(CODEX_DEFAULT_BUDGET_TOKENS)),
        (None, None) => None,
    }
}

/// Codex's `-c tool_output_token_limit=N` (or `--config …`, `-c=…`) on its
/// command line, the smallest if several.
pub fn codex_budget_from_argv(argv: &[String]) -> Option<u64> {
    let mut found: Option<u64> = None;
    let mut it = argv.iter().peekable();
    while let Some(a) = it.next() {
        let value = match a.as_str() {
            "-c" | "--config" => it.next().map(String::as_str),
            _ => a.strip_prefix("--config=").or_else(|| a.strip_prefix("-c")),
        };
        let Some((k, v)) = value.and_then(|v| v.split_once('=')) else { continue };
        if k.trim().trim_matches('"') != "tool_output_token_limit" {
            continue;
        }
        if let Ok(n) = v.trim().trim_matches('"').replace('_', "").parse::<u64>() {
            found = Some(found.map_or(n, |f| f.min(n)));
        }
    }
    found
}

/// The budget a Codex result is judged by: the smallest of every place the
/// user may have set it — the user's `config.toml` (its top level, or the
/// default when it sets none, and every `[profiles.*]`), every profile file
/// (`<CODEX_HOME>/<name>.config.toml`), the project's `.codex/config.toml`,
/// and Codex's own command line. Which of them applies to this session is
/// not known to a hook; the smallest only withholds more.
pub fn codex_budget(user_config: Option<&str>, other_configs: &[String], argv: &[String]) -> u64 {
    let mut budget = user_config.and_then(codex_budget_from_config).unwrap_or(CODEX_DEFAULT_BUDGET_TOKENS);
    for text in other_configs {
        if let Some(b) = codex_budget_from_config(text) {
            budget = budget.min(b);
        }
    }
    if let Some(b) = codex_budget_from_argv(argv) {
        budget = budget.min(b);
    }
    budget
}

#[cfg(test)]
mod budget_tests {
    use super::*;
    use crate::state::ledger::codex_whole;

    #[test]
    fn codex_budget_from_every_toml_spelling() {
        let rows: &[(&str, Option<u64>)] = &[
            ("", None),
            ("model = \"gpt-5.5\"\n", None),
            ("tool_output_token_limit = 10000\n", Some(10_000)),
            ("tool_output_token_limit = 10_000 # comment\n", Some(10_000)),
            ("\"tool_output_token_limit\" = 50000\n", Some(50_000)),
            ("tool_output_token_limit = 50000\n[profiles.fast]\ntool_output_token_limit = 1000\n", Some(1_000)),
            ("[profiles.big]\ntool_output_token_limit = 90000\n", Some(CODEX_DEFAULT_BUDGET_TOKENS)),
            ("profiles = { a = { tool_output_token_limit = 700 } }\n", Some(700)),
            ("profiles.a.tool_output_token_limit = 800\n", Some(800)),
            ("[mcp_servers.x]\ntool_output_token_limit = 5\n", None),
            ("this is not toml", None),
        ];
        for (text, want) in rows {
            assert_eq!(codex_budget_from_config(text), *want, "{text:?}");
        }
        assert!(codex_whole(10_240, 2_500));
        assert!(!codex_whole(10_241, 2_500));
        assert!(!codex_whole(61_440, 10_000));
        assert!(codex_whole(153_600, 50_000));
    }

    #[test]
    fn codex_budget_from_every_place_the_smallest() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            codex_budget_from_argv(&argv(&["codex", "exec", "-c", "tool_output_token_limit=1000", "hi"])),
            Some(1000)
        );
        assert_eq!(
            codex_budget_from_argv(&argv(&["codex", "--config", "tool_output_token_limit = 2_000"])),
            Some(2000)
        );
        assert_eq!(codex_budget_from_argv(&argv(&["codex", "--config=tool_output_token_limit=300"])), Some(300));
        assert_eq!(
            codex_budget_from_argv(&argv(&["codex", "-ctool_output_token_limit=400", "-c", "model=x"])),
            Some(400)
        );
        assert_eq!(codex_budget_from_argv(&argv(&["codex", "-c", "model=x", "tool_output_token_limit=5"])), None);
        let small = "tool_output_token_limit = 1000\n".to_string();
        let big = "tool_output_token_limit = 90000\n".to_string();
        assert_eq!(codex_budget(None, &[], &[]), CODEX_DEFAULT_BUDGET_TOKENS);
        assert_eq!(codex_budget(Some("tool_output_token_limit = 50000\n"), &[], &[]), 50_000);
        assert_eq!(codex_budget(Some("tool_output_token_limit = 50000\n"), std::slice::from_ref(&small), &[]), 1_000);
        assert_eq!(codex_budget(None, std::slice::from_ref(&big), &[]), CODEX_DEFAULT_BUDGET_TOKENS);
        assert_eq!(
            codex_budget(
                Some(&big),
                std::slice::from_ref(&big),
                &argv(&["codex", "-c", "tool_output_token_limit=700"])
            ),
            700
        );
    }
}
