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
    /// The server the name claims when the host's own field names another
    /// (Cursor: `mcp_server_name: github`, tool `mcp__ok__delete_repo`).
    /// The host's field decides `server`; this reading may only tighten.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub named_server: Option<String>,
}

impl ToolRef {
    /// Parse a host tool name. `server_hint` is what the payload says about the
    /// server outside the name (Cursor `mcp_server_name`, `command`/`url`).
    pub fn parse(raw: &str, server_hint: Option<&str>) -> ToolRef {
        let mut t = Self::parse_name(raw, server_hint);
        if let (Some(hint), Some(named)) = (server_hint, t.server.as_deref())
            && !named.eq_ignore_ascii_case(hint)
        {
            t.named_server = t.server.replace(hint.to_string());
        }
        t
    }

    fn parse_name(raw: &str, server_hint: Option<&str>) -> ToolRef {
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
                named_server: None,
            };
        }
        if let Some(rest) = strip_prefix_ci(raw, "MCP:") {
            let (server, tool) = match rest.split_once(':') {
                Some((s, t)) if !s.is_empty() && !t.is_empty() => (Some(s.to_string()), t),
                _ => (server_hint.map(str::to_string), rest),
            };
            return ToolRef { raw: raw.to_string(), server, tool: tool.to_string(), is_mcp: true, named_server: None };
        }
        ToolRef {
            raw: raw.to_string(),
            server: server_hint.map(str::to_string),
            tool: raw.to_string(),
            is_mcp: false,
            named_server: None,
        }
    }

    /// Every (server, tool) reading of the call. For `mcp__a__b__c` that is
    /// (a, b__c) and (a__b, c); for other shapes just the one. When the
    /// host's field names another server than the name does, every reading
    /// is on the host's server, and the whole name is a reading of the tool
    /// too (a server may call a tool anything).
    pub fn candidates(&self) -> Vec<(Option<String>, String)> {
        let named = self.name_readings();
        if self.named_server.is_none() {
            return named;
        }
        let mut out: Vec<(Option<String>, String)> = Vec::new();
        for t in named.into_iter().map(|(_, t)| t).chain([self.raw.clone()]) {
            let c = (self.server.clone(), t);
            if !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }

    /// The readings the host's own server field contradicts: on the server
    /// the name claims. They may only make the gate stricter.
    pub fn tighten_only(&self) -> Vec<(Option<String>, String)> {
        if self.named_server.is_none() {
            return Vec::new();
        }
        let mut own = ToolRef::parse_name(&self.raw, None);
        own.server.clone_from(&self.named_server);
        own.name_readings()
    }

    fn name_readings(&self) -> Vec<(Option<String>, String)> {
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
/// or `url` (remote server): the program's file name, or the URL's host
/// (and port).
///
/// The name is stored in call records, and a command line or URL can carry
/// a secret anywhere: `API_TOKEN="a b" server` (a quoted value with
/// spaces), `--key …` arguments, a directory of the program's path, a
/// `user:token@` whose token holds `/`, `?`, `#` or `@`, a query string or
/// a fragment. So nothing is kept but a name that cannot hold a piece of
/// one: the command is split as a shell would split it (quotes and
/// escapes; unbalanced quotes: no name), `NAME=value` assignments and an
/// `env` prefix are skipped, and the program's file name is kept only if
/// it is a plain name (`[A-Za-z0-9._+-]`, at most 64 bytes). For a URL
/// only the host and a numeric port are kept, and only when the authority
/// is unambiguous: an `@` anywhere after it (a userinfo cut short by `/`,
/// `?` or `#`, or an `@` in the path or query) gives no name at all.
/// No name is the safe answer here: nothing reaches the disk.
pub fn server_from_cursor(command: Option<&str>, url: Option<&str>) -> Option<String> {
    command.and_then(program_name).or_else(|| url.and_then(url_host))
}

/// The file name of the program a shell command line runs, if it is a
/// plain name.
fn program_name(cmd: &str) -> Option<String> {
    let words = crate::base::shell::words(cmd, crate::base::shell::Extent::Words)?;
    let mut it = words.iter().map(String::as_str).peekable();
    loop {
        let w = *it.peek()?;
        if is_assignment(w) {
            it.next();
        } else if basename(w) == "env" {
            it.next();
            // env's own options, and the arguments of those that take one.
            while let Some(&o) = it.peek() {
                if o == "--" {
                    it.next();
                    break;
                }
                if o.starts_with("-S") || o.starts_with("--split-string") {
                    return None;
                }
                if !o.starts_with('-') || o == "-" {
                    break;
                }
                it.next();
                if matches!(o, "-u" | "--unset" | "-C" | "--chdir") {
                    it.next();
                }
            }
        } else {
            break;
        }
    }
    let base = basename(it.next()?);
    let base = base.strip_suffix(".exe").or_else(|| base.strip_suffix(".EXE")).unwrap_or(base);
    plain_name(base, 64).then(|| base.to_string())
}

fn basename(w: &str) -> &str {
    w.rsplit(['/', '\\']).next().unwrap_or(w)
}

/// `NAME=…` with a shell variable name.
fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(n, _)| {
        n.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// A name that cannot hold a piece of a credential's syntax: 1..=`max`
/// bytes of `[A-Za-z0-9._+-]`, not starting with `-` or `.`.
fn plain_name(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && !s.starts_with(['-', '.'])
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'-'))
}

/// The host (and numeric port) of a URL, if its authority is unambiguous.
fn url_host(url: &str) -> Option<String> {
    let url = url.trim();
    let rest = match url.find("://") {
        Some(i) => {
            let scheme = &url[..i];
            let ok = scheme.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
                && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'));
            if !ok {
                return None;
            }
            &url[i + 3..]
        }
        None => url,
    };
    let end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    if rest[end..].contains('@') {
        return None;
    }
    let authority = &rest[..end];
    let hostport = authority.rsplit('@').next().unwrap_or("");
    let (host, port) = match hostport.strip_prefix('[') {
        Some(v6) => {
            let (h, after) = v6.split_once(']')?;
            if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.') {
                return None;
            }
            let port = if after.is_empty() { "" } else { after.strip_prefix(':')? };
            (&hostport[..h.len() + 2], port)
        }
        None => match hostport.split_once(':') {
            Some((h, p)) => (h, p),
            None => (hostport, ""),
        },
    };
    let host_ok = host.starts_with('[')
        || (plain_name(host, 253)
            && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_')));
    let port_ok = port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
    if !host_ok || !port_ok || (hostport.contains(':') && !host.starts_with('[') && port.is_empty()) {
        return None;
    }
    Some(if port.is_empty() { host.to_string() } else { format!("{host}:{port}") })
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
        // The host's own field decides; the name's server may only tighten.
        let t = ToolRef::parse("MCP:lean-ctx:ctx_read", Some("x"));
        assert_eq!((t.server.as_deref(), t.tool.as_str()), (Some("x"), "ctx_read"));
        assert_eq!(t.named_server.as_deref(), Some("lean-ctx"));
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
    fn the_hosts_server_field_decides() {
        for raw in ["mcp__ok__delete_repo", "MCP:ok:delete_repo", "MCP__OK__delete_repo"] {
            let t = ToolRef::parse(raw, Some("github"));
            assert_eq!((t.server.as_deref(), t.tool.as_str()), (Some("github"), "delete_repo"), "{raw}");
            assert!(t.named_server.as_deref().is_some_and(|s| s.eq_ignore_ascii_case("ok")), "{raw}");
            let c = t.candidates();
            assert!(c.contains(&(Some("github".into()), "delete_repo".into())), "{raw}: {c:?}");
            assert!(c.contains(&(Some("github".into()), raw.into())), "{raw}: {c:?}");
            assert!(c.iter().all(|(s, _)| s.as_deref() == Some("github")), "{raw}: {c:?}");
            let tight = t.tighten_only();
            assert_eq!(tight.len(), 1, "{raw}: {tight:?}");
            assert_eq!(tight[0].1, "delete_repo");
        }
        // Agreeing (in any case), or no field: the name alone.
        let t = ToolRef::parse("mcp__GitHub__x", Some("github"));
        assert_eq!((t.server.as_deref(), t.named_server.as_deref()), (Some("GitHub"), None));
        assert!(t.tighten_only().is_empty());
        let t = ToolRef::parse("mcp__a__b__c", Some("h"));
        assert_eq!(t.tighten_only().len(), 2, "each reading of the name tightens");
        assert_eq!(t.candidates().len(), 3, "b__c, c and the whole name, on h");
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
        // Quoted values, tokens with / # ? @ in a userinfo, queries: no piece
        // of them is kept (found: `API_TOKEN="a b" srv` kept `b"`).
        let t = |c: Option<&str>, u: Option<&str>| server_from_cursor(c, u);
        assert_eq!(t(Some(r#"API_TOKEN="a b" /usr/bin/srv --k v"#), None).as_deref(), Some("srv"));
        assert_eq!(t(Some("API_TOKEN='a b c' srv"), None).as_deref(), Some("srv"));
        assert_eq!(t(Some(r"API_TOKEN=a\ b srv"), None).as_deref(), Some("srv"));
        assert_eq!(t(Some("env -i -u HOME -- TOKEN=x node srv.js"), None).as_deref(), Some("node"));
        assert_eq!(t(Some("API_TOKEN=\"a b srv"), None), None, "unbalanced quote");
        assert_eq!(t(Some("/opt/tok:en@x/bin/srv.exe"), None).as_deref(), Some("srv"));
        assert_eq!(t(Some("TOKEN=$(cat s3cret) srv"), None), None);
        assert_eq!(t(None, Some("https://user:to/ken@mcp.example.com/mcp")), None);
        assert_eq!(t(None, Some("https://user:12/34@mcp.example.com/mcp")), None);
        assert_eq!(t(None, Some("https://user:to#ken@mcp.example.com/")), None);
        assert_eq!(t(None, Some("https://user:to?ken@mcp.example.com/")), None);
        assert_eq!(t(None, Some("https://u@s:p@ss@mcp.example.com:99/x?t=y#z")).as_deref(), Some("mcp.example.com:99"));
        assert_eq!(t(None, Some("https://[::1]:8080/mcp")).as_deref(), Some("[::1]:8080"));
        assert_eq!(t(None, Some("mcp.example.com:80a/x")), None);
        assert_eq!(t(None, Some("user:pass@localhost:8080")).as_deref(), Some("localhost:8080"));
        assert_eq!(t(Some("TOKEN=x"), Some("http://localhost/x")).as_deref(), Some("localhost"));
    }
}
