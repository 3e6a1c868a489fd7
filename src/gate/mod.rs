//! The MCP gate: evaluate policy files for one tool call and say what the
//! strictest of them decides (deny > ask > allow; no rule = no opinion).

pub mod policy;
pub mod sources;
pub mod tool;
pub mod verdict;

pub use sources::{Source, load_policies, loaded};
pub use verdict::{Action, Verdict};

use policy::{Policy, PolicyError};
use std::path::{Path, PathBuf};
use tool::ToolRef;

/// A policy file as loaded for one call.
#[derive(Clone, Debug)]
pub enum Loaded {
    Policy(Policy),
    Broken(PolicyError),
}

/// Mark `p` (if it is a workspace file, not the user's) whose workspace
/// root is not in `trusted`: its allow rules do not count.
pub(crate) fn mark_workspace(p: &mut Policy, user: Option<&Path>, trusted: &[PathBuf]) {
    if Some(p.path.as_path()) == user || !p.rules.iter().any(|r| r.action == Action::Allow) {
        return;
    }
    let root = p.path.parent().and_then(Path::parent).unwrap_or(Path::new(""));
    let canon = |x: &Path| std::fs::canonicalize(x).unwrap_or_else(|_| x.to_path_buf());
    let root = canon(root);
    p.allow_ignored = !trusted.iter().any(|t| t.is_absolute() && canon(t) == root);
}

/// Why a workspace file's allow did not count, for `gate check`.
#[cfg(feature = "cli")]
pub(crate) fn allow_ignored_note(user: Option<&Path>) -> String {
    let file = user.map(|u| u.display().to_string()).unwrap_or_else(|| "the user policy file".into());
    format!(
        "ignored: a workspace policy may only deny or ask; to let this workspace allow, list its root in \
         \"trusted_workspaces\" in {file}"
    )
}

/// One file's say: the first rule that matches any reading of the name; if
/// readings disagree, the strictest.
///
/// A name with non-ASCII characters (a possible look-alike: `dеlete_repo`
/// with a Cyrillic `е`) is also held against every deny and ask rule with
/// [`policy::glob_match_lenient`], where each non-ASCII run may stand for any
/// text; the strictest of those joins the verdict. First-match order is not
/// used for that part on purpose: a lenient match of an early ask rule must
/// not shadow a later deny the real name would hit. Allow rules are only
/// ever matched exactly, so a look-alike can make the gate stricter, never
/// looser. ASCII names are unaffected.
pub fn evaluate_file(policy: &Policy, tool: &ToolRef) -> Option<(Action, usize)> {
    let mut best: Option<(Action, usize)> = None;
    let mut consider = |a: Action, i: usize| {
        if best.is_none_or(|(b, _)| a > b) {
            best = Some((a, i));
        }
    };
    let candidates = tool.candidates();
    for (server, name) in &candidates {
        match server {
            Some(_) => {
                if let Some(i) = policy.rules.iter().position(|r| r.matches(server.as_deref(), name)) {
                    consider(policy.rules[i].action, i);
                }
            }
            None => {
                for (a, i) in unknown_server_says(policy, name) {
                    consider(a, i);
                }
            }
        }
    }
    // Readings the host's own server field contradicts (Cursor names the
    // server `github`, the tool name says `mcp__ok__…`): every deny and ask
    // rule they meet applies, never an allow.
    let tighten = tool.tighten_only();
    for (server, name) in &tighten {
        for (i, r) in policy.rules.iter().enumerate() {
            if r.action != Action::Allow && r.matches(server.as_deref(), name) {
                consider(r.action, i);
            }
        }
    }
    let suspicious = |s: &str| policy::is_suspicious_name(s);
    for (server, name) in candidates.iter().chain(&tighten) {
        if !suspicious(name) && !server.as_deref().is_some_and(suspicious) {
            continue;
        }
        for (i, r) in policy.rules.iter().enumerate() {
            // An unknown server could be any server: only the tool must match.
            let hit = match server {
                Some(_) => r.matches_lenient(server.as_deref(), name),
                None => r.tool.as_deref().is_none_or(|p| policy::glob_match_lenient(p, name)),
            };
            if r.action != Action::Allow && hit {
                consider(r.action, i);
            }
        }
    }
    best
}

/// A rule that names no particular server (`server` absent or only `*`s).
pub(crate) fn any_server(r: &policy::Rule) -> bool {
    r.server.as_deref().is_none_or(|p| p.chars().all(|c| c == '*'))
}

/// What one file may say about a tool whose server is unknown (Cursor's
/// `preToolUse` says `MCP:<tool>`; a bare name in `gate check`): the call
/// could be on any server, so every reading counts, as for an ambiguous
/// `mcp__a__b__c`. In rule order, among the rules whose tool matches: a
/// rule for any server decides for every reading not yet decided, and
/// ends the walk; a deny or ask scoped to a server decides for the readings
/// on that server that no earlier rule took (taken conservatively: only an
/// earlier rule for any server or with the same server pattern shadows it);
/// an allow scoped to a server never applies, since nothing says the call
/// is on that server.
fn unknown_server_says(policy: &Policy, name: &str) -> Vec<(Action, usize)> {
    let mut out = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (i, r) in policy.rules.iter().enumerate() {
        if !r.tool.as_deref().is_none_or(|p| policy::glob_match(p, name)) {
            continue;
        }
        if any_server(r) {
            out.push((r.action, i));
            break;
        }
        let pattern = r.server.as_deref().unwrap_or_default().to_ascii_lowercase();
        if r.action != Action::Allow && !seen.contains(&pattern) {
            out.push((r.action, i));
        }
        seen.push(pattern);
    }
    out
}

/// The gate's verdict over all loaded files.
pub fn evaluate(loaded: &[Loaded], tool: &ToolRef) -> Verdict {
    let mut verdict = Verdict::NoOpinion;
    let mut rank: Option<Action> = None;
    for l in loaded {
        let (action, message, by, broken) = match l {
            Loaded::Policy(p) => match evaluate_file(p, tool) {
                // An untrusted workspace's allow is no opinion (its first
                // matching rule still shadows its own later rules).
                Some((Action::Allow, _)) if p.allow_ignored => continue,
                Some((action, i)) => {
                    let rule = &p.rules[i];
                    let msg = rule.message.clone().unwrap_or_else(|| default_message(action, tool, &p.path, i));
                    (action, msg, format!("{}#{}", p.path.display(), i + 1), false)
                }
                None => continue,
            },
            Loaded::Broken(e) => (
                Action::Ask,
                format!("leanctx gate: policy file {e} — fix it; until then MCP calls need confirmation"),
                e.path.display().to_string(),
                true,
            ),
        };
        if rank.is_none_or(|r| action > r) {
            rank = Some(action);
            verdict = Verdict::Decide { action, message, decided_by: by, broken };
        }
    }
    verdict
}

fn default_message(action: Action, tool: &ToolRef, path: &Path, i: usize) -> String {
    let what = match action {
        Action::Allow => "allowed",
        Action::Ask => "needs confirmation",
        Action::Deny => "blocked",
    };
    format!("{} {what} by leanctx gate rule #{} in {}", tool.raw, i + 1, path.display())
}

/// Rules in `policy` that can never match some or all of `host`'s calls.
pub fn never_matching(host: crate::base::host::Host, policy: &Policy) -> Vec<String> {
    let mut out = Vec::new();
    if host != crate::base::host::Host::Cursor {
        return out;
    }
    for (i, r) in policy.rules.iter().enumerate() {
        let Some(pattern) = r.server.as_deref().filter(|_| !crate::gate::any_server(r)) else { continue };
        let at = format!("{}#{}", policy.path.display(), i + 1);
        if pattern.chars().any(|c| c.is_whitespace() || c.is_control()) {
            out.push(format!(
                "{at}: server \"{pattern}\" can never match on cursor: a server name with spaces or control \
                 characters is not taken from mcp_server_name, the server is then named by its command or URL host"
            ));
        } else if r.action == Action::Allow {
            out.push(format!(
                "{at}: allow for server \"{pattern}\" never matches Cursor's preToolUse, which names MCP tools \
                 `MCP:<tool>` without the server; it matches beforeMCPExecution (mcp_server_name) only"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::policy::parse;

    fn pol(path: &str, json: &str) -> Loaded {
        Loaded::Policy(parse(json, Path::new(path)).unwrap())
    }

    fn act(v: &Verdict) -> Option<Action> {
        match v {
            Verdict::NoOpinion => None,
            Verdict::Decide { action, .. } => Some(*action),
        }
    }

    #[test]
    fn first_match_in_file_strictest_across_files() {
        let user = pol("u", r#"{"rules":[{"tool":"ctx_read","action":"allow"},{"tool":"*","action":"deny"}]}"#);
        let proj = pol("p", r#"{"rules":[{"server":"ctx","tool":"ctx_*","action":"ask","message":"confirm"}]}"#);
        let read = ToolRef::parse("mcp__ctx__ctx_read", None);
        let write = ToolRef::parse("mcp__ctx__ctx_write", None);
        assert_eq!(act(&evaluate(std::slice::from_ref(&user), &read)), Some(Action::Allow));
        assert_eq!(act(&evaluate(std::slice::from_ref(&user), &write)), Some(Action::Deny));
        let v = evaluate(&[user.clone(), proj.clone()], &read);
        assert_eq!(act(&v), Some(Action::Ask));
        assert!(
            matches!(&v, Verdict::Decide { message, decided_by, .. } if message == "confirm" && decided_by == "p#1")
        );
        assert_eq!(act(&evaluate(&[], &read)), None);
        let other = ToolRef::parse("mcp__gh__issues", None);
        assert_eq!(act(&evaluate(&[proj], &other)), None);
    }

    #[test]
    fn ambiguous_names_take_the_strictest_reading() {
        let p = pol("u", r#"{"rules":[{"server":"a__b","tool":"c","action":"deny"},{"tool":"*","action":"allow"}]}"#);
        let t = ToolRef::parse("mcp__a__b__c", None);
        assert_eq!(act(&evaluate(&[p], &t)), Some(Action::Deny));
    }

    #[test]
    fn look_alikes_only_ever_tighten() {
        let p = pol(
            "u",
            r#"{"rules":[{"tool":"ctx_*","action":"allow"},{"tool":"drop_*","action":"ask"},
                {"server":"gh","tool":"delete_*","action":"deny"},{"tool":"*","action":"allow"}]}"#,
        );
        let v = |name: &str| act(&evaluate(std::slice::from_ref(&p), &ToolRef::parse(name, None)));
        // ASCII: first match.
        assert_eq!(v("mcp__gh__delete_repo"), Some(Action::Deny));
        assert_eq!(v("mcp__gh__list_repos"), Some(Action::Allow));
        assert_eq!(v("mcp__ctx__ctx_read"), Some(Action::Allow));
        // Look-alikes of the denied name are denied, whatever the letter.
        for name in [
            "mcp__gh__d\u{435}lete_repo",
            "mcp__gh__D\u{415}LETE_REPO",
            "mcp__gh__del\u{200b}ete_repo",
            "mcp__gh__\u{ff44}\u{ff45}\u{ff4c}\u{ff45}\u{ff54}\u{ff45}_repo",
            "mcp__g\u{578}__delete_repo", // look-alike in the server name
        ] {
            assert_eq!(v(name), Some(Action::Deny), "{name:?}");
        }
        // An early lenient ask does not shadow the deny the real name hits.
        assert_eq!(v("mcp__gh__\u{435}\u{435}\u{435}_repo"), Some(Action::Deny));
        // A look-alike of an allowed name is not allowed by the allow rule:
        // here the catch-all allow still applies, but nothing looser.
        assert_eq!(v("mcp__ctx__ctx_r\u{435}ad"), Some(Action::Allow));
        let strict = pol("s", r#"{"rules":[{"tool":"ctx_*","action":"allow"},{"action":"ask"}]}"#);
        let t = ToolRef::parse("mcp__ctx__\u{441}tx_read", None);
        assert_eq!(act(&evaluate(&[strict], &t)), Some(Action::Ask), "look-alike of an allowed name asks");
    }

    #[test]
    fn an_unknown_server_is_every_server() {
        // Cursor's preToolUse: `MCP:<tool>`, no server.
        let t = ToolRef::parse("MCP:delete_repo", None);
        assert_eq!((t.server.as_deref(), t.tool.as_str(), t.is_mcp), (None, "delete_repo", true));
        let v = |json: &str, name: &str| act(&evaluate(&[pol("u", json)], &ToolRef::parse(name, None)));
        // A deny or ask scoped to a server applies: the call may be on it.
        let readme =
            r#"{"rules":[{"server":"github","tool":"delete_*","action":"deny"},{"tool":"ctx_*","action":"allow"}]}"#;
        assert_eq!(v(readme, "MCP:delete_repo"), Some(Action::Deny));
        assert_eq!(v(readme, "MCP:ctx_read"), Some(Action::Allow));
        assert_eq!(v(r#"{"rules":[{"server":"gh","action":"ask"}]}"#, "MCP:x"), Some(Action::Ask));
        // An allow scoped to a server does not: nothing says it is that server.
        assert_eq!(v(r#"{"rules":[{"server":"ctx","tool":"ctx_*","action":"allow"}]}"#, "MCP:ctx_read"), None);
        let allow_then_ask = r#"{"rules":[{"server":"ctx","action":"allow"},{"action":"ask"}]}"#;
        assert_eq!(v(allow_then_ask, "MCP:ctx_read"), Some(Action::Ask));
        assert_eq!(v(allow_then_ask, "MCP:ctx:ctx_read"), Some(Action::Allow), "server known");
        // Rule order still counts where it decides for every server.
        let any_first = r#"{"rules":[{"tool":"ctx_*","action":"allow"},{"server":"gh","action":"deny"}]}"#;
        assert_eq!(v(any_first, "MCP:ctx_read"), Some(Action::Allow));
        // ... and an earlier rule on the same server shadows a later one.
        let shadowed = r#"{"rules":[{"server":"gh","action":"allow"},{"server":"GH","action":"deny"}]}"#;
        assert_eq!(v(shadowed, "MCP:x"), None);
        assert_eq!(v(r#"{"rules":[{"server":"*","action":"deny"}]}"#, "MCP:x"), Some(Action::Deny));
        // A look-alike with an unknown server meets server-scoped denies too.
        assert_eq!(
            v(r#"{"rules":[{"server":"gh","tool":"delete_*","action":"deny"}]}"#, "MCP:d\u{435}lete_x"),
            Some(Action::Deny)
        );
    }

    #[test]
    fn cursor_warns_about_rules_it_cannot_match() {
        let Loaded::Policy(p) = pol(
            "u",
            r#"{"rules":[{"server":"ctx","action":"allow"},{"server":"my server","action":"deny"},
                {"server":"gh","action":"deny"},{"server":"*","action":"allow"},{"action":"allow"}]}"#,
        ) else {
            unreachable!()
        };
        let w = never_matching(crate::base::host::Host::Cursor, &p);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("u#1") && w[0].contains("preToolUse"), "{w:?}");
        assert!(w[1].starts_with("u#2") && w[1].contains("can never match"), "{w:?}");
        assert!(never_matching(crate::base::host::Host::ClaudeCode, &p).is_empty());
    }

    #[test]
    fn broken_file_asks() {
        let e = parse("{", Path::new("/x/gate.json")).unwrap_err();
        let v = evaluate(&[Loaded::Broken(e)], &ToolRef::parse("mcp__a__b", None));
        assert!(
            matches!(&v, Verdict::Decide { action: Action::Ask, message, .. } if message.contains("/x/gate.json:1:"))
        );
    }
}
