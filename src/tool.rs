//! MCP tool names as each host spells them, normalised to (server, tool).
//!
//! Hosts disagree: Claude Code, Codex and CodeBuddy say `mcp__<server>__<tool>`;
//! Cursor's `beforeMCPExecution` says the bare tool name, with the server in
//! `mcp_server_name` (its key in mcp.json; else implied by `command`/`url`),
//! and its `preToolUse` says `MCP:<tool>` with no server at all (3.18
//! captures; `MCP:<server>:<tool>` is read too). A name can also be
//! ambiguous: in `mcp__a__b__c` the server could be `a` or `a__b`.
//! [`ToolRef::candidates`] lists every reading so the gate can apply the
//! strictest rule among them; an unknown server is every server (see
//! `gate::evaluate_file`).

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolRef {
    /// The name exactly as the host sent it.
    pub raw: String,
    /// The server, when the name or the payload says it.
    pub server: Option<String>,
    /// The tool name as the MCP server knows it (what `tools/call` carries).
    pub tool: String,
    /// Whether this is an MCP tool (as opposed to a host built-in like Bash).
    pub is_mcp: bool,
}

impl ToolRef {
    /// Parse a host tool name. `server_hint` is what the payload says about the
    /// server outside the name (Cursor `mcp_server_name`, `command`/`url`).
    pub fn parse(raw: &str, server_hint: Option<&str>) -> ToolRef {
        if let Some(rest) = strip_prefix_ci(raw, "mcp__")
            && let Some((server, tool)) = rest.split_once("__")
            && !server.is_empty()
            && !tool.is_empty()
        {
            return ToolRef {
                raw: raw.to_string(),
                server: Some(server.to_string()),
                tool: tool.to_string(),
                is_mcp: true,
            };
        }
        if let Some(rest) = strip_prefix_ci(raw, "MCP:") {
            let (server, tool) = match rest.split_once(':') {
                Some((s, t)) if !s.is_empty() && !t.is_empty() => (Some(s.to_string()), t),
                _ => (server_hint.map(str::to_string), rest),
            };
            return ToolRef { raw: raw.to_string(), server, tool: tool.to_string(), is_mcp: true };
        }
        ToolRef { raw: raw.to_string(), server: server_hint.map(str::to_string), tool: raw.to_string(), is_mcp: false }
    }

    /// Every (server, tool) reading of the name. For `mcp__a__b__c` that is
    /// (a, b__c) and (a__b, c); for other shapes just the one.
    pub fn candidates(&self) -> Vec<(Option<String>, String)> {
        let mut out = vec![(self.server.clone(), self.tool.clone())];
        if let Some(rest) = strip_prefix_ci(&self.raw, "mcp__") {
            let mut start = 0;
            while let Some(pos) = rest[start..].find("__") {
                let split = start + pos;
                let (s, t) = (&rest[..split], &rest[split + 2..]);
                if !s.is_empty() && !t.is_empty() {
                    let c = (Some(s.to_string()), t.to_string());
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
                start = split + 1;
            }
        }
        out
    }
}

/// Derive a server name from Cursor's `command` (stdio server command line)
/// or `url` (remote server): the program's file name, or the URL's host.
///
/// Only the program's name and the URL's host are kept: they are stored in
/// call records, and a command line or URL can carry a secret — an
/// `API_TOKEN=… server` env prefix, `user:password@` in the URL — which
/// must never reach the disk.
pub fn server_from_cursor(command: Option<&str>, url: Option<&str>) -> Option<String> {
    if let Some(cmd) = command {
        // Skip `NAME=value` assignments and an `env` prefix before the program.
        let mut words = cmd.split_whitespace().skip_while(|w| w.contains('=') || *w == "env");
        let prog = words.next()?;
        let base = prog.rsplit(['/', '\\']).next().unwrap_or(prog);
        let base = base.strip_suffix(".exe").unwrap_or(base);
        if !base.is_empty() {
            return Some(base.to_string());
        }
    }
    if let Some(url) = url {
        let after = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
        let authority = after.split(['/', '?', '#']).next().unwrap_or("");
        // Drop `user:password@`.
        let host = authority.rsplit('@').next().unwrap_or("");
        if !host.is_empty() {
            return Some(host.to_string());
        }
    }
    None
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    if s.len() >= prefix.len() && s.is_char_boundary(prefix.len()) && s[..prefix.len()].eq_ignore_ascii_case(prefix) {
        Some(&s[prefix.len()..])
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_shapes() {
        let t = ToolRef::parse("mcp__ctx__ctx_read", None);
        assert_eq!((t.server.as_deref(), t.tool.as_str(), t.is_mcp), (Some("ctx"), "ctx_read", true));
        let t = ToolRef::parse("MCP:lean-ctx:ctx_read", Some("x"));
        assert_eq!((t.server.as_deref(), t.tool.as_str()), (Some("lean-ctx"), "ctx_read"));
        let t = ToolRef::parse("MCP:ctx_read", Some("lean-ctx"));
        assert_eq!((t.server.as_deref(), t.tool.as_str(), t.is_mcp), (Some("lean-ctx"), "ctx_read", true));
        let t = ToolRef::parse("ctx_read", Some("lean-ctx"));
        assert_eq!((t.server.as_deref(), t.tool.as_str(), t.is_mcp), (Some("lean-ctx"), "ctx_read", false));
        let t = ToolRef::parse("Bash", None);
        assert!(!t.is_mcp);
        let t = ToolRef::parse("MCP__Srv__T", None);
        assert_eq!((t.server.as_deref(), t.tool.as_str(), t.is_mcp), (Some("Srv"), "T", true));
    }

    #[test]
    fn ambiguous_split_lists_every_reading() {
        let t = ToolRef::parse("mcp__a__b__c", None);
        let c = t.candidates();
        assert!(c.contains(&(Some("a".into()), "b__c".into())));
        assert!(c.contains(&(Some("a__b".into()), "c".into())));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn cursor_server_hint() {
        assert_eq!(
            server_from_cursor(Some("/home/dev/.cargo/bin/lean-ctx --stdio"), None).as_deref(),
            Some("lean-ctx")
        );
        assert_eq!(server_from_cursor(None, Some("http://127.0.0.1:8765/mcp")).as_deref(), Some("127.0.0.1:8765"));
        assert_eq!(server_from_cursor(None, None), None);
        // Secrets in a command line or a URL never make it into the name.
        assert_eq!(server_from_cursor(Some("API_TOKEN=s3cret X=1 /usr/bin/srv --k v"), None).as_deref(), Some("srv"));
        assert_eq!(server_from_cursor(Some("env TOKEN=s3cret npx -y srv"), None).as_deref(), Some("npx"));
        assert_eq!(server_from_cursor(Some("TOKEN=s3cret"), None), None);
        assert_eq!(
            server_from_cursor(None, Some("https://user:s3cret@mcp.example.com:8443/mcp?token=x")).as_deref(),
            Some("mcp.example.com:8443")
        );
    }
}
