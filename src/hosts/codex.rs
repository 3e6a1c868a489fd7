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

/// Most ancestors of the session's cwd searched for a `.codex/config.toml`.
const MAX_PROJECT_DEPTH: usize = 64;

/// The output budget (tokens) Codex applies to tool results, read from every
/// place a user may set it (see [`codex_budget`]): the user's
/// `config.toml`, profile files beside it (every one, and the one
/// `--profile` names), the `.codex/config.toml` of the session's cwd and of
/// every directory above it (Codex reads those from its project root, the
/// nearest `.git` above, down to the cwd: docs/HOST-FACTS.md §5), and the
/// command line of the Codex process that runs this hook (its parent: Codex
/// starts hooks with `bash -c`, which execs).
pub fn budget_tokens(codex_home: Option<&std::path::Path>, cwd: Option<&str>) -> u64 {
    let argv = crate::fsx::parent_argv();
    let user = codex_home.and_then(|h| read_config(&h.join("config.toml")));
    let mut others = Vec::new();
    if let Some(home) = codex_home {
        if let Ok(rd) = std::fs::read_dir(home) {
            let profiles = rd
                .flatten()
                .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".config.toml")))
                .take(MAX_PROFILE_FILES);
            others.extend(profiles.filter_map(|e| read_config(&e.path())));
        }
        // The profile named on the command line, however many files sit there.
        for name in codex_profiles_from_argv(&argv) {
            others.extend(read_config(&home.join(format!("{name}.config.toml"))));
        }
    }
    if let Some(cwd) = cwd {
        let dirs = std::path::Path::new(cwd).ancestors().take(MAX_PROJECT_DEPTH);
        others.extend(dirs.filter_map(|d| read_config(&d.join(".codex/config.toml"))));
    }
    codex_budget(user.as_deref(), &others, &argv)
}

/// A TOML integer in any spelling (`1000`, `1_000`, `0x3e8`, `0o1750`,
/// `0b1111101000`, `+1000`), as Codex reads a `-c` value; a quoted number
/// too (Codex would keep it as a string and refuse it, but a budget read
/// where none applies only withholds more). Negative counts as 0.
fn toml_count(v: &str) -> Option<u64> {
    let v = v.trim();
    let n = match v.parse::<toml_edit::Value>().ok().and_then(|t| t.as_integer()) {
        Some(n) => n,
        None => v.trim_matches(|c| c == '"' || c == '\'').replace('_', "").parse::<i64>().ok()?,
    };
    Some(n.max(0) as u64)
}

/// Codex's `tool_output_token_limit` from its `config.toml` text: the
/// top-level value, lowered by any profile's (a profile may be active, and
/// a smaller budget only withholds more). `None` when the file sets none or
/// does not parse (the caller then uses [`CODEX_DEFAULT_BUDGET_TOKENS`]).
/// TOML's own integer forms (hex, octal, binary, underscores) are integers.
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

/// The `-c`/`--config` overrides on Codex's command line, as (key, value):
/// `-c K=V`, `-cK=V`, `--config K=V`, `--config=K=V`, `-c=K=V`.
fn config_overrides(argv: &[String]) -> impl Iterator<Item = (&str, &str)> {
    let mut it = argv.iter();
    std::iter::from_fn(move || {
        loop {
            let a = it.next()?;
            let value = match a.as_str() {
                "-c" | "--config" => it.next().map(String::as_str),
                _ => a
                    .strip_prefix("--config=")
                    .or_else(|| a.strip_prefix("-c").map(|v| v.strip_prefix('=').unwrap_or(v))),
            };
            if let Some((k, v)) = value.and_then(|v| v.split_once('=')) {
                return Some((k.trim(), v));
            }
        }
    })
}

/// Codex's `tool_output_token_limit` set on its command line, the smallest
/// if several: `-c tool_output_token_limit=N` and
/// `-c profiles.<p>.tool_output_token_limit=N` (Codex splits the key at
/// dots; any profile counts, active or not), in every `-c` spelling
/// (`config_overrides`) and every TOML integer form (`toml_count`).
pub fn codex_budget_from_argv(argv: &[String]) -> Option<u64> {
    let is_limit = |k: &str| {
        let parts: Vec<&str> = k.split('.').map(|p| p.trim().trim_matches('"')).collect();
        matches!(parts.as_slice(), ["tool_output_token_limit"] | ["profiles", _, "tool_output_token_limit"])
    };
    config_overrides(argv).filter(|(k, _)| is_limit(k)).filter_map(|(_, v)| toml_count(v)).min()
}

/// The profiles `-p`/`--profile` names on Codex's command line (each layers
/// `<CODEX_HOME>/<name>.config.toml`); a name that is not a plain file name
/// is left out.
pub fn codex_profiles_from_argv(argv: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let name = match a.as_str() {
            "-p" | "--profile" => it.next().map(String::as_str),
            _ => a.strip_prefix("--profile=").or_else(|| a.strip_prefix("-p").filter(|v| !v.is_empty())),
        };
        if let Some(n) = name.filter(|n| !n.is_empty() && !n.contains(['/', '\\']) && *n != "." && *n != "..") {
            out.push(n);
        }
    }
    out
}

/// The budget a Codex result is judged by: the smallest of every place the
/// user may have set it — the user's `config.toml` (its top level, or the
/// default when it sets none, and every `[profiles.*]`), every profile file
/// (`<CODEX_HOME>/<name>.config.toml`), the projects' `.codex/config.toml`,
/// and Codex's own command line. Which of them applies to this session is
/// not known to a hook; the smallest only withholds more. Under
/// `--ignore-user-config` the user's file cannot raise the budget above the
/// default: Codex does not read it then.
pub fn codex_budget(user_config: Option<&str>, other_configs: &[String], argv: &[String]) -> u64 {
    let user = user_config.filter(|_| !argv.iter().any(|a| a == "--ignore-user-config"));
    let mut budget = user.and_then(codex_budget_from_config).unwrap_or(CODEX_DEFAULT_BUDGET_TOKENS);
    for text in other_configs.iter().map(String::as_str).chain(user_config.filter(|_| user.is_none())) {
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
            // TOML's other integer forms.
            ("tool_output_token_limit = 0x3e8\n", Some(1_000)),
            ("tool_output_token_limit = 0o1750\n", Some(1_000)),
            ("tool_output_token_limit = 0b1111101000\n", Some(1_000)),
            ("tool_output_token_limit = +1_000\n", Some(1_000)),
            ("tool_output_token_limit = -5\n", Some(0)),
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

    /// Codex run in a subdirectory reads `.codex/config.toml` from its project
    /// root down (docs/HOST-FACTS.md §5); the hook's `cwd` is the subdirectory.
    #[test]
    fn project_configs_above_the_cwd_count() {
        let t = tempfile::tempdir().unwrap();
        let sub = t.path().join("repo/src/deep");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(t.path().join("repo/.codex")).unwrap();
        let cwd = sub.to_str().unwrap();
        assert_eq!(budget_tokens(None, Some(cwd)), CODEX_DEFAULT_BUDGET_TOKENS);
        std::fs::write(t.path().join("repo/.codex/config.toml"), "tool_output_token_limit = 0x3e8\n").unwrap();
        assert_eq!(budget_tokens(None, Some(cwd)), 1000);
        // And a profile file named by nothing still counts, as does CODEX_HOME's own file.
        let home = t.path().join("codex-home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("tiny.config.toml"), "tool_output_token_limit = 300\n").unwrap();
        assert_eq!(budget_tokens(Some(&home), Some(cwd)), 300);
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
        // Every `-c` spelling, profiles' keys, every TOML integer form.
        for (args, want) in [
            (&["-c", "tool_output_token_limit=0x3e8"][..], Some(1000)),
            (&["-c", "tool_output_token_limit=0o1750"], Some(1000)),
            (&["-c", "tool_output_token_limit=0b1111101000"], Some(1000)),
            (&["-c", "tool_output_token_limit=1_000"], Some(1000)),
            (&["-c", "tool_output_token_limit=\"1000\""], Some(1000)),
            (&["-c=tool_output_token_limit=600"], Some(600)),
            (&["--config=tool_output_token_limit = 0x3e8"], Some(1000)),
            (&["-c", "profiles.small.tool_output_token_limit=1000", "--profile", "small"], Some(1000)),
            (&["-c", "profiles.\"small\".tool_output_token_limit=900"], Some(900)),
            (&["--config", " profiles.a.tool_output_token_limit = 800 "], Some(800)),
            (&["-c", "profiles.a.b.tool_output_token_limit=5"], None),
            (&["-c", "mcp_servers.x.tool_output_token_limit=5"], None),
            (&["-c", "tool_output_token_limit=lots"], None),
            (&["-c", "tool_output_token_limit=50000", "-c", "tool_output_token_limit=0x10"], Some(16)),
        ] {
            let mut a = vec!["codex", "exec"];
            a.extend_from_slice(args);
            assert_eq!(codex_budget_from_argv(&argv(&a)), want, "{args:?}");
        }
        // -p / --profile name the profile files to read.
        assert_eq!(
            codex_profiles_from_argv(&argv(&[
                "codex",
                "-p",
                "a",
                "--profile",
                "b",
                "--profile=c",
                "-pd",
                "-p",
                "../x"
            ])),
            vec!["a", "b", "c", "d"]
        );
        // --ignore-user-config: the user's file cannot raise the budget.
        let big_user = "tool_output_token_limit = 50000\n";
        assert_eq!(
            codex_budget(Some(big_user), &[], &argv(&["codex", "--ignore-user-config"])),
            CODEX_DEFAULT_BUDGET_TOKENS
        );
        assert_eq!(
            codex_budget(Some("tool_output_token_limit = 10\n"), &[], &argv(&["codex", "--ignore-user-config"])),
            10
        );
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
