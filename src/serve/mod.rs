//! `leanctx serve`: an MCP server over stdio whose `read` tool asks the
//! delivery ledger in process, so a stub goes out only where the caller
//! provably holds the content. A layer above `identity` and `state`; the
//! command line starts it.
//!
//! One thread reads stdin ([`protocol::read_lines`]); this one answers each
//! message in order. A `notifications/cancelled` for a request still in the
//! queue drops it unanswered (MCP); one for a request already answered
//! changes nothing (its delivery stays recorded, and only the host's hooks
//! can confirm it, so a cancelled result never backs a stub).

pub mod bases;
pub mod diff;
pub mod guard;
pub mod page;
pub mod protocol;
pub mod read;
pub mod session;
pub mod workspace;

use crate::Host;
use crate::identity::mcp_call::McpCall;
use crate::identity::readpath::ReadPath;
use protocol::{Incoming, Message};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::Write;
use workspace::Workspace;

/// The MCP protocol versions this server speaks, newest first: those the
/// hosts send (Claude Code and Codex `2025-06-18`; Cursor and older clients
/// `2025-03-26`, `2024-11-05`), and the newest published.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// Cancellations remembered for requests not yet seen (bounded: a client
/// cancelling ids it never sends cannot grow the set).
const MAX_PENDING_CANCELS: usize = 1024;
/// The id of our `roots/list` requests.
const ROOTS_ID: &str = "leanctx-roots";

/// The server's state across messages.
pub struct Server {
    rp: ReadPath,
    ws: Workspace,
    /// The host, from `initialize`'s `clientInfo.name`.
    host: Option<Host>,
    client_roots: bool,
    roots_asked: u64,
    codex_budget: Option<u64>,
    cancelled: VecDeque<Value>,
    bases: bases::Bases,
    memory: session::Memory,
}

impl Server {
    pub fn new(rp: ReadPath, ws: Workspace) -> Server {
        Server {
            rp,
            ws,
            host: None,
            client_roots: false,
            roots_asked: 0,
            codex_budget: None,
            cancelled: VecDeque::new(),
            bases: bases::Bases::default(),
            memory: session::Memory::default(),
        }
    }

    /// Serve `input` (a line reader's messages) to `out` until the input
    /// ends or the client stops reading.
    pub fn run(&mut self, rx: std::sync::mpsc::Receiver<Incoming>, out: &mut impl Write) {
        let mut queue: VecDeque<Incoming> = VecDeque::new();
        loop {
            if queue.is_empty() {
                // Idle: the stats buffered so far reach the log.
                crate::stats::flush();
                match rx.recv() {
                    Ok(m) => queue.push_back(m),
                    Err(_) => return crate::stats::flush(),
                }
            }
            // Everything already waiting: a cancellation behind its request
            // must be seen before the request is answered.
            queue.extend(rx.try_iter());
            self.note_cancellations(&queue);
            let Some(next) = queue.pop_front() else { continue };
            let replies = match next {
                Incoming::End => return crate::stats::flush(),
                Incoming::TooLarge(n) => vec![protocol::error(
                    &Value::Null,
                    protocol::INVALID_REQUEST,
                    &format!("message of {n} bytes is over the {} bytes a line may have", protocol::MAX_LINE_BYTES),
                )],
                Incoming::Line(l) => self.line(&l),
            };
            for r in replies {
                if !protocol::send(out, &r) {
                    return;
                }
            }
        }
    }

    fn note_cancellations(&mut self, queue: &VecDeque<Incoming>) {
        for m in queue {
            let Incoming::Line(l) = m else { continue };
            // Cheap test first: most lines are not cancellations.
            if !l.windows(9).any(|w| w == b"cancelled") {
                continue;
            }
            if let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(l)
                && o.get("method").and_then(Value::as_str) == Some("notifications/cancelled")
                && let Some(id) = o.get("params").and_then(|p| p.get("requestId"))
                && !self.cancelled.contains(id)
            {
                if self.cancelled.len() >= MAX_PENDING_CANCELS {
                    self.cancelled.pop_front();
                }
                self.cancelled.push_back(id.clone());
            }
        }
    }

    /// Answer one line: a message or a batch of them.
    pub fn line(&mut self, line: &[u8]) -> Vec<Value> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return vec![];
        }
        let v: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => return vec![protocol::error(&Value::Null, protocol::PARSE_ERROR, &format!("not JSON: {e}"))],
        };
        match v {
            Value::Array(items) if items.is_empty() => {
                vec![protocol::error(&Value::Null, protocol::INVALID_REQUEST, "an empty batch")]
            }
            // A batch (protocol 2025-03-26) is answered as one.
            Value::Array(items) => {
                let replies: Vec<Value> =
                    items.into_iter().filter_map(|m| self.guarded(protocol::classify(m))).collect();
                if replies.is_empty() { vec![] } else { vec![Value::Array(replies)] }
            }
            v => self.guarded(protocol::classify(v)).into_iter().collect(),
        }
    }

    /// [`Server::message`] with a panic in it caught ([`guard`]).
    fn guarded(&mut self, m: Message) -> Option<Value> {
        let (id, what) = match &m {
            Message::Request { id, method, .. } => (Some(id.clone()), format!("{method} request {id}")),
            Message::Notification { method, .. } => (None, format!("{method} notification")),
            Message::Response { id, .. } => (None, format!("the client's response {id}")),
            Message::Invalid { .. } => return self.message(m),
        };
        guard::handle(id.as_ref(), &what, || self.message(m))
    }

    fn message(&mut self, m: Message) -> Option<Value> {
        match m {
            Message::Invalid { id, why } => Some(protocol::error(&id, protocol::INVALID_REQUEST, &why)),
            Message::Response { id, result } => {
                if id.as_str().is_some_and(|s| s.starts_with(ROOTS_ID))
                    && let Some(r) = result
                {
                    let ws = Workspace::from_roots_result(&r);
                    // No usable root: keep the working directory.
                    if !ws.is_empty() {
                        self.ws = ws;
                    }
                }
                None
            }
            Message::Notification { method, .. } => match method.as_str() {
                "notifications/initialized" | "notifications/roots/list_changed" if self.client_roots => {
                    Some(self.ask_roots())
                }
                _ => None,
            },
            Message::Request { id, method, params } => {
                if let Some(i) = self.cancelled.iter().position(|c| *c == id) {
                    self.cancelled.remove(i);
                    return None;
                }
                Some(match self.request(&id, &method, &params) {
                    Ok(r) => protocol::result(&id, r),
                    Err((code, msg)) => protocol::error(&id, code, &msg),
                })
            }
        }
    }

    fn ask_roots(&mut self) -> Value {
        self.roots_asked += 1;
        json!({"jsonrpc": "2.0", "id": format!("{ROOTS_ID}-{}", self.roots_asked), "method": "roots/list"})
    }

    fn request(&mut self, id: &Value, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        match method {
            "initialize" => Ok(self.initialize(params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({"tools": tools()})),
            "tools/call" => self.call(id, params),
            _ => Err((protocol::METHOD_NOT_FOUND, format!("method not found: {method}"))),
        }
    }

    fn initialize(&mut self, params: &Value) -> Value {
        let asked = params.get("protocolVersion").and_then(Value::as_str);
        // One we do not speak gets our newest (MCP lifecycle: the server answers
        // "another protocol version it supports. This SHOULD be the latest").
        let version = asked.filter(|v| PROTOCOL_VERSIONS.contains(v)).unwrap_or(PROTOCOL_VERSIONS[0]);
        let client = params.get("clientInfo").and_then(|c| c.get("name")).and_then(Value::as_str).unwrap_or("");
        self.host = crate::hosts::profile::host_of_mcp_client(client);
        self.client_roots = params.get("capabilities").and_then(|c| c.get("roots")).is_some_and(Value::is_object);
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "leanctx", "version": env!("CARGO_PKG_VERSION")},
            "instructions": "Use the `read` tool to read files: it sends a file whole the first time, and after \
                that only what changed, or a short note when you already have this exact version.",
        })
    }

    fn call(&mut self, id: &Value, params: &Value) -> Result<Value, (i64, String)> {
        let name =
            params.get("name").and_then(Value::as_str).ok_or((protocol::INVALID_PARAMS, "name: missing".into()))?;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let call = McpCall::from_json(&request).ok_or((protocol::INVALID_PARAMS, "name: missing".into()))?;
        let path = call.arguments.get("path").and_then(Value::as_str).unwrap_or("");
        guard::test_panic("call", path, "");
        match name {
            "read" => {
                let host = self.call_host(&call);
                let limit = crate::hosts::profile::whole_delivery_limit(host, self.codex_budget(host));
                let mut r = read::Reader {
                    rp: &self.rp,
                    ws: &self.ws,
                    limit,
                    bases: &mut self.bases,
                    memory: &mut self.memory,
                };
                Ok(r.read(&call).1)
            }
            "session" => Ok(session::session(&self.rp, &mut self.memory, &call)),
            _ => {
                Err((protocol::INVALID_PARAMS, format!("name: unknown tool {name:?} (this server has: read, session)")))
            }
        }
    }

    /// The host of one call: its `_meta` says it best (Claude Code's tool-use
    /// id, Codex's call and window ids), else `initialize` told.
    fn call_host(&self, call: &McpCall) -> Option<Host> {
        if call.claude_tool_use_id().is_some() {
            Some(Host::ClaudeCode)
        } else if call.window_id().is_some() || call.meta_call_id().is_some() {
            Some(Host::Codex)
        } else {
            self.host
        }
    }

    /// Codex's output budget, read once (its config files and the command
    /// line of the Codex process that started this server).
    fn codex_budget(&mut self, host: Option<Host>) -> u64 {
        if host != Some(Host::Codex) {
            return crate::state::ledger::CODEX_DEFAULT_BUDGET_TOKENS;
        }
        *self.codex_budget.get_or_insert_with(|| {
            let home = crate::hosts::profile::profile(Host::Codex).user_dir(crate::install::target::home).ok();
            let cwd = self.ws.roots().first().map(|r| r.to_string_lossy().into_owned());
            crate::hosts::codex::budget_tokens(home.as_deref(), cwd.as_deref())
        })
    }
}

/// A tool result.
pub fn tool_result(text: String, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

/// The caller's scope, when the call names it exactly (the only callers
/// the ledger records deliveries for).
pub fn exact_scope(a: &crate::LedgerAnswer) -> Option<String> {
    (a.per_call == crate::identity::mcp_call::PerCall::Resolved).then(|| a.caller.scope.clone()).flatten()
}

/// The tools, as `tools/list` declares them.
pub fn tools() -> Value {
    json!([{
        "name": "read",
        "description": "Read a text file of the workspace. The first read of a file returns it whole; a re-read of \
            a file you already have returns a short [unchanged] note instead. `offset`/`limit` read a range of \
            lines; a large file comes in ranges (the answer says how to get the rest).",
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace root (or absolute inside it)"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)"},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read"}
            },
            "required": ["path"],
            "additionalProperties": false
        },
        "_meta": {"anthropic/maxResultSizeChars": crate::hosts::profile::CLAUDE_MAX_RESULT_CHARS}
    }, {
        "name": "session",
        "description": "This chat's session as leanctx sees it. action=status: the files you hold now (path, \
            version, size, when delivered, which hook confirmed it), compactions seen, your context window and \
            task. action=task (with `task`): record your next useful step; status shows it, across compactions. \
            action=compact (with `summary`, optional `keep_recent_turns`, default 6, at least 4): for a proxy \
            that drops old turns: every earlier delivery ends; at most one every 5 minutes, the directive lives \
            30 minutes. action=restore: clear the directive (no delivery comes back).",
        "inputSchema": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["status", "task", "compact", "restore"]},
                "task": {"type": "string", "description": "action=task: the next useful step"},
                "summary": {"type": "string", "description": "action=compact: what the dropped turns said"},
                "keep_recent_turns": {"type": "integer", "minimum": 4, "description": "action=compact: turns kept (default 6)"}
            },
            "required": ["action"],
            "additionalProperties": false
        }
    }])
}

/// `leanctx serve`: stdin and stdout of this process, until stdin ends.
pub fn serve_stdio() -> u8 {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        protocol::read_lines(std::io::stdin().lock(), tx, protocol::MAX_LINE_BYTES);
    });
    // The server records its own answers in the stats (one per read, a diff
    // as a diff), not each ledger question it asks on the way.
    let mut server = Server::new(ReadPath::from_process().with_stats(None), Workspace::from_cwd());
    server.run(rx, &mut std::io::stdout().lock());
    0
}
