//! Gate policy files: ordered rules that match an MCP server and tool by
//! glob and say allow, deny or ask.
//!
//! ```json
//! { "rules": [
//!     { "server": "github", "tool": "delete_*", "action": "deny", "message": "No deletes from agents" },
//!     { "tool": "ctx_*", "action": "allow" }
//! ] }
//! ```
//! In one file the first matching rule decides. Unknown keys are an error:
//! a typo must not silently turn a deny into nothing.

use crate::gate::Action;
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// A policy file larger than this is refused (it is not a hand-written policy).
pub const MAX_POLICY_BYTES: u64 = 1 << 20;

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Glob over the server name; absent = any server.
    #[serde(default)]
    pub server: Option<String>,
    /// Glob over the tool name; absent = any tool.
    #[serde(default)]
    pub tool: Option<String>,
    pub action: Action,
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    trusted_workspaces: Vec<PathBuf>,
    #[serde(default, rename = "$schema")]
    _schema: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Policy {
    pub path: PathBuf,
    pub rules: Vec<Rule>,
    /// Workspace roots whose `.lean-ctx/gate.json` may allow (bypass the
    /// host's permission prompt). Read from the user's own policy file only:
    /// a workspace file cannot trust itself.
    pub trusted_workspaces: Vec<PathBuf>,
    /// A workspace file whose workspace the user has not trusted: its allow
    /// rules are ignored (it may only tighten: deny, ask). Set by the gate.
    pub allow_ignored: bool,
}

/// A policy file that exists but cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}:{}: {}", self.path.display(), self.line, self.column, self.message)
        } else {
            write!(f, "{}: {}", self.path.display(), self.message)
        }
    }
}

/// A policy file is one JSON object in UTF-8, optionally after a UTF-8
/// byte-order mark (editors on Windows write one; serde_json would take it
/// for a stray character at 1:1 and every call would be asked or denied).
/// No comments: nothing in it is JSONC.
pub fn parse(text: &str, path: &Path) -> Result<Policy, PolicyError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match serde_json::from_str::<File>(text) {
        Ok(f) => Ok(Policy {
            path: path.to_path_buf(),
            rules: f.rules,
            trusted_workspaces: f.trusted_workspaces,
            allow_ignored: false,
        }),
        Err(e) => Err(PolicyError {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string().split(" at line ").next().unwrap_or("").to_string(),
        }),
    }
}

/// Load a policy file. `Ok(None)` if it does not exist (the fast path: one
/// failed open, no parsing).
pub fn load(path: &Path) -> Result<Option<Policy>, PolicyError> {
    load_checked(path, false)
}

/// Load the user's own policy file: as [`load`], and the file must also be
/// owned by this user and writable by nobody else (the rule for the data
/// dir and its state files): anyone else who can write it could change the
/// user's rules. Checked on the file opened, before it is read.
pub fn load_trusted(path: &Path) -> Result<Option<Policy>, PolicyError> {
    load_checked(path, true)
}

fn load_checked(path: &Path, trusted: bool) -> Result<Option<Policy>, PolicyError> {
    let err = |message: String| PolicyError { path: path.to_path_buf(), line: 0, column: 0, message };
    // The bounded read: a FIFO or device planted as a workspace's policy
    // must not hang the hook (and with it the host); not a regular file, too
    // large, not UTF-8: broken.
    let rule = crate::fsx::ReadRule::any(MAX_POLICY_BYTES);
    let (file, md) = match crate::fsx::open_file(path, &rule) {
        Ok(None) => return Ok(None),
        Ok(Some(opened)) => opened,
        Err(e) => return Err(err(problem_of(path, &e))),
    };
    // Owner and mode of the file opened, the one that is read (one stat
    // fewer on every gated call than checking the path first).
    if trusted {
        let (me, owner, mode) = (crate::fsx::current_uid(), crate::fsx::owner(&md), crate::fsx::mode_of(&md));
        if owner != me {
            return Err(err(format!("cannot be trusted: owned by uid {owner}, not by this user (uid {me})")));
        }
        if mode & 0o022 != 0 {
            return Err(err(format!(
                "cannot be trusted: mode {mode:o}, writable by group or others (chmod go-w the file)"
            )));
        }
    }
    let bytes = crate::fsx::read_opened(path, &file, &md, &rule).map_err(|e| err(problem_of(path, &e)))?;
    let text = String::from_utf8(bytes).map_err(|e| err(format!("not UTF-8: {e}")))?;
    parse(&text, path).map(Some)
}

/// An unreadable policy's problem without its path (the error carries it).
fn problem_of(path: &Path, e: &std::io::Error) -> String {
    let text = e.to_string();
    let shown = path.display().to_string();
    match text.strip_prefix(&shown) {
        Some(rest) => rest.trim_start().to_string(),
        None => format!("cannot read: {text}"),
    }
}

/// Glob match, ASCII case-insensitive: `*` any run, `?` one character.
/// Names are compared without case so `Delete_Repo` cannot slip past a rule
/// on `delete_*`.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().map(|c| c.to_ascii_lowercase()).collect();
    let n: Vec<char> = name.chars().map(|c| c.to_ascii_lowercase()).collect();
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        // The star first: a `*` in the name must not be taken as the
        // pattern's `*` matched literally (that skipped the star's
        // backtracking, and `delete*` no longer matched `delete*x`).
        if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            pi += 1;
            mark = ni;
        } else if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Names longer than this (in characters) are not run through the lenient
/// matcher: a deny/ask rule is taken to match them (the conservative side).
pub const MAX_LENIENT_NAME_CHARS: usize = 1024;

/// `true` if `name` has a character outside printable ASCII (non-ASCII,
/// whitespace, control characters): a possible look-alike.
pub fn is_suspicious_name(name: &str) -> bool {
    !name.bytes().all(|b| b.is_ascii_graphic())
}

/// Could `name` stand for a name that `pattern` matches, if each run of
/// characters outside printable ASCII (non-ASCII, whitespace, controls) in
/// it were really some other text?
///
/// Why this and not a confusables table: a deny rule on `delete_*` must
/// catch `dеlete_repo` (Cyrillic `е`), `ｄｅｌｅｔｅ_repo` (full width),
/// `del\u{200B}ete_repo` (a zero-width space), `dele\u{301}te_repo` (a
/// combining mark) and ligatures like `ﬁle_delete` — substitutions,
/// insertions and 1:n replacements. A skeleton table covers only what it
/// lists and must be kept up to date with Unicode; treating every non-ASCII
/// run as "any text" covers all of them by construction. It is only ever
/// used to make a deny or ask rule match (see `gate::evaluate_file`), so a
/// look-alike can make the gate stricter, never an allow looser. The cost
/// falls only on names with non-ASCII characters, which MCP's naming
/// guidance (`[A-Za-z0-9_.-]`) does not produce: such a name may be denied
/// or asked by a rule written for another name. ASCII names are matched
/// exactly as by [`glob_match`].
///
/// Both sides are globs then (the name's non-ASCII runs act as `*`), and the
/// question is whether their languages meet: a dynamic programme over
/// (pattern position, name position), O(pattern × name).
pub fn glob_match_lenient(pattern: &str, name: &str) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum N {
        Lit(char),
        Wild,
    }
    let p: Vec<char> = pattern.chars().map(|c| c.to_ascii_lowercase()).collect();
    let mut n: Vec<N> = Vec::new();
    for c in name.chars() {
        if c.is_ascii_graphic() {
            n.push(N::Lit(c.to_ascii_lowercase()));
        } else if n.last() != Some(&N::Wild) {
            n.push(N::Wild);
        }
    }
    if n.len() > MAX_LENIENT_NAME_CHARS || p.len() > 4 * MAX_LENIENT_NAME_CHARS {
        return true;
    }
    let (pl, nl) = (p.len(), n.len());
    let w = nl + 1;
    // ok[i * w + j]: pattern[i..] and name[j..] can produce a common string.
    let mut ok = vec![false; (pl + 1) * w];
    for i in (0..=pl).rev() {
        for j in (0..=nl).rev() {
            let v = if i == pl && j == nl {
                true
            } else if i < pl && p[i] == '*' {
                // The star ends here, or it absorbs the name's next item.
                ok[(i + 1) * w + j] || (j < nl && ok[i * w + j + 1])
            } else if j < nl && n[j] == N::Wild {
                // The run ends here, or it produces the pattern's next char.
                ok[i * w + j + 1] || (i < pl && ok[(i + 1) * w + j])
            } else if i < pl && j < nl {
                let N::Lit(c) = n[j] else { unreachable!() };
                (p[i] == '?' || p[i] == c) && ok[(i + 1) * w + j + 1]
            } else {
                false
            };
            ok[i * w + j] = v;
        }
    }
    ok[0]
}

impl Rule {
    /// The rule matches this (server, tool) with look-alikes taken at their
    /// worst: non-ASCII runs in either name may stand for any text. Used for
    /// deny and ask rules only.
    pub fn matches_lenient(&self, server: Option<&str>, tool: &str) -> bool {
        self.matches_by(server, tool, glob_match_lenient)
    }

    pub fn matches(&self, server: Option<&str>, tool: &str) -> bool {
        self.matches_by(server, tool, glob_match)
    }

    fn matches_by(&self, server: Option<&str>, tool: &str, glob: fn(&str, &str) -> bool) -> bool {
        let server_ok = match (&self.server, server) {
            (None, _) => true,
            (Some(p), Some(s)) => glob(p, s),
            // A rule about a specific server cannot match a call whose server
            // is unknown — unless it is the catch-all `*`.
            (Some(p), None) => p.chars().all(|c| c == '*'),
        };
        server_ok && self.tool.as_deref().is_none_or(|p| glob(p, tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let t: &[(&str, &str, bool)] = &[
            ("*", "anything", true),
            ("delete_*", "delete_repo", true),
            ("delete_*", "DELETE_REPO", true),
            ("delete_*", "undelete", false),
            ("*_read", "ctx_read", true),
            ("c?x", "ctx", true),
            ("c?x", "cx", false),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbY", false),
            ("", "", true),
            ("", "a", false),
            // A `*` or `?` in the name is just a character (found by the fuzzer).
            ("*", "**", true),
            ("delete*", "delete*x", true),
            ("delete_*", "delete_*_repo", true),
            ("a?", "a?", true),
            ("a*b", "a*", false),
        ];
        for (p, n, want) in t {
            assert_eq!(glob_match(p, n), *want, "{p} ~ {n}");
        }
    }

    #[test]
    fn lenient_globs_catch_look_alikes_and_leave_ascii_alone() {
        let t: &[(&str, &str, bool)] = &[
            ("delete_*", "d\u{435}lete_repo", true),             // Cyrillic е
            ("delete_*", "D\u{415}LETE_REPO", true),             // Cyrillic Е, upper case
            ("delete_*", "\u{ff44}\u{ff45}\u{ff4c}ete_x", true), // full width
            ("delete_*", "del\u{200b}ete_repo", true),           // zero-width space
            ("delete_*", "dele\u{301}te_repo", true),            // combining mark
            ("delete_*", "del\u{0}ete_repo", true),              // a control character
            ("delete_*", "del ete_repo", true),                  // a space
            ("delete_repo", "delete_rep\u{43e}", true),          // Cyrillic о at the end
            ("*file_delete", "\u{fb01}le_delete", true),         // ligature ﬁ
            ("delete_repo", "\u{430}dd_user", false),            // cannot be delete_repo
            ("delete_repo", "d\u{435}l_repo", false),            // too short around the run
            ("c?x", "c\u{442}x", true),
            ("", "\u{200b}", true), // a run may stand for nothing
            ("abc", "\u{200b}abd", false),
            // ASCII names: exactly glob_match.
            ("delete_*", "delete_repo", true),
            ("delete_*", "undelete", false),
            ("a*b*c", "aXbY", false),
        ];
        for (p, n, want) in t {
            assert_eq!(glob_match_lenient(p, n), *want, "{p} ~ {n:?}");
        }
        for (p, n) in [("a*b?c", "aXbYc"), ("x", "y"), ("*", ""), ("??", "a"), ("*_read", "ctx_read")] {
            assert_eq!(glob_match_lenient(p, n), glob_match(p, n), "{p} ~ {n}");
        }
        assert!(glob_match_lenient("delete_*", &format!("{}\u{435}", "x".repeat(2000))), "huge: conservative");
    }

    #[test]
    fn parse_errors_have_positions() {
        let e = parse("{\n  \"rules\": [ {\"tool\": \"x\", \"action\": \"block\"} ]\n}", Path::new("/p/gate.json"))
            .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("/p/gate.json:2:"), "{e}");
        let e = parse("{\"rules\": [ {\"tool\": \"x\", \"acton\": \"deny\"} ]}", Path::new("g")).unwrap_err();
        assert!(e.message.contains("acton"), "{e}");
        assert!(parse("{\"rules\": []}", Path::new("g")).unwrap().rules.is_empty());
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_policy() {
        let p = parse("\u{feff}{\"rules\": [{\"tool\": \"x\", \"action\": \"deny\"}]}", Path::new("g")).unwrap();
        assert_eq!(p.rules.len(), 1);
        // Only one, and only at the start: anything else is still an error.
        assert!(parse("\u{feff}\u{feff}{}", Path::new("g")).is_err());
        assert!(parse("{\"rules\": []}\u{feff}", Path::new("g")).is_err());
        assert!(parse("{} // no comments", Path::new("g")).is_err());
    }
}
