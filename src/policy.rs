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
    #[serde(default, rename = "$schema")]
    _schema: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Policy {
    pub path: PathBuf,
    pub rules: Vec<Rule>,
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

pub fn parse(text: &str, path: &Path) -> Result<Policy, PolicyError> {
    match serde_json::from_str::<File>(text) {
        Ok(f) => Ok(Policy { path: path.to_path_buf(), rules: f.rules }),
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
    use std::io::Read;
    let err = |message: String| PolicyError { path: path.to_path_buf(), line: 0, column: 0, message };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => return Ok(None),
        Err(e) => return Err(err(format!("cannot read: {e}"))),
    };
    let mut text = String::new();
    file.take(MAX_POLICY_BYTES + 1).read_to_string(&mut text).map_err(|e| err(format!("cannot read: {e}")))?;
    if text.len() as u64 > MAX_POLICY_BYTES {
        return Err(err(format!("larger than {MAX_POLICY_BYTES} bytes")));
    }
    parse(&text, path).map(Some)
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
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            pi += 1;
            mark = ni;
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

impl Rule {
    pub fn matches(&self, server: Option<&str>, tool: &str) -> bool {
        let server_ok = match (&self.server, server) {
            (None, _) => true,
            (Some(p), Some(s)) => glob_match(p, s),
            // A rule about a specific server cannot match a call whose server
            // is unknown — unless it is the catch-all `*`.
            (Some(p), None) => p.chars().all(|c| c == '*'),
        };
        server_ok && self.tool.as_deref().is_none_or(|p| glob_match(p, tool))
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
        ];
        for (p, n, want) in t {
            assert_eq!(glob_match(p, n), *want, "{p} ~ {n}");
        }
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
}
