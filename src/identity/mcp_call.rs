//! Per-call caller identity (README: "Who is calling", step 2): an MCP `tools/call`'s
//! name, arguments and `_meta`, matched to what the hooks recorded.

use crate::base::fingerprint::args_fingerprint;
use crate::base::host::Host;
use crate::base::ids;
use crate::base::scope::ScopeKind;
use crate::identity::caller::{Caller, Source};
use crate::state::journal::{CLAIM_WINDOW_MS, View, in_window};
use serde::Serialize;
use serde_json::Value;

/// The parts of an MCP `tools/call` that identify its caller.
#[derive(Clone, Debug, PartialEq)]
pub struct McpCall {
    /// The JSON-RPC request id, when the whole request was given.
    pub request_id: Option<String>,
    /// The tool's name as the server knows it.
    pub name: String,
    /// The call's arguments (`{}` when absent).
    pub arguments: Value,
    /// The call's `_meta` (`{}` when absent): where hosts put per-call ids.
    pub meta: Value,
}

impl McpCall {
    /// Accepts a whole JSON-RPC request (`{"method":"tools/call","params":…}`)
    /// or just its `params` (`{"name","arguments","_meta"}`).
    pub fn from_json(v: &Value) -> Option<McpCall> {
        let params = v.get("params").filter(|p| p.is_object()).unwrap_or(v);
        let name = params.get("name")?.as_str()?.to_string();
        let request_id = match v.get("id") {
            Some(Value::String(s)) if v.get("params").is_some() => Some(s.clone()),
            Some(Value::Number(n)) if v.get("params").is_some() => Some(n.to_string()),
            _ => None,
        };
        Some(McpCall {
            request_id,
            name,
            arguments: params.get("arguments").cloned().unwrap_or(Value::Null),
            meta: params.get("_meta").cloned().unwrap_or(Value::Null),
        })
    }

    /// SHA-256 of the tool name and canonical arguments: what a Cursor call record is matched by.
    pub fn fingerprint(&self) -> String {
        args_fingerprint(Some(&self.arguments))
    }

    fn meta_id(&self, key: &str) -> Option<&str> {
        field(&self.meta, key).and_then(Value::as_str).and_then(ids::valid_id)
    }

    /// Codex: `_meta.sessionId` names the session; `threadId` (or the turn
    /// metadata's `thread_id` under a `parent_thread_id`) names a subagent
    /// thread when it differs from the session.
    pub fn codex_caller(&self) -> Option<Caller> {
        let turn = field(&self.meta, "x-codex-turn-metadata");
        let tm = |k: &str| turn.and_then(|t| field(t, k)).and_then(Value::as_str).and_then(ids::valid_id);
        let session = self.meta_id("sessionId").or_else(|| tm("session_id"))?;
        let thread = self.meta_id("threadId").or_else(|| tm("thread_id"));
        let scope = match thread {
            Some(t) if t != session => ScopeKind::Agent.name(t),
            _ => session.to_string(),
        };
        Some(Caller::new(Source::MetaSession, Some(scope), Some(session.to_string()), Some(Host::Codex)))
    }

    /// Claude Code: `_meta["claudecode/toolUseId"]`.
    pub fn claude_tool_use_id(&self) -> Option<&str> {
        self.meta_id("claudecode/toolUseId")
    }

    /// Codex: `_meta.callId` (the hooks' `tool_use_id`).
    pub fn meta_call_id(&self) -> Option<&str> {
        self.meta_id("callId")
    }

    /// Codex: `_meta.windowId` (`<session>:<n>`, one up per compaction).
    pub fn window_id(&self) -> Option<&str> {
        self.meta_id("windowId")
    }

    /// The host's call id under any known key (Codex `callId` too).
    pub fn host_call_id(&self) -> Option<&str> {
        self.claude_tool_use_id().or_else(|| self.meta_id("callId"))
    }
}

/// Objects of at most this many keys are searched key by key ([`field`]).
const SCAN_KEYS: usize = 8;

/// `v.get(key)`: an object's keys are unique, so a scan finds what the map
/// would. A small object (`_meta` holds a few keys) is scanned: a stub
/// question asks `_meta` about nine times, and hashing the key (SipHash)
/// cost several times the comparisons (~270 instructions a lookup).
fn field<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    match v {
        Value::Object(m) if m.len() <= SCAN_KEYS => m.iter().find_map(|(k, x)| (k == key).then_some(x)),
        _ => v.get(key),
    }
}

/// How per-call resolution went, for `--json` output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PerCall {
    /// No call context was given.
    NotGiven,
    /// The call named its caller.
    Resolved,
    /// Claude call id given but no hook record has it (hooks missing or late).
    NoRecord,
    /// Several scopes made the same call in the claim window.
    Ambiguous,
    /// No unclaimed call record matches.
    NoMatch,
    /// The journal could not be read or locked.
    StateError,
}

/// Claude: the call record with this tool-use id gives session and agent.
pub fn caller_from_record(view: &View<'_>, call_id: &str) -> Option<Caller> {
    view.call_by_id(call_id).map(caller_from_call)
}

/// Claude: the caller a hook's call record names.
pub fn caller_from_call(c: &crate::state::journal::Call<'_>) -> Caller {
    let scope = c.agent.unwrap_or(c.conv).to_string();
    Caller::new(Source::ToolUseId, Some(scope), Some(c.conv.to_string()), Some(c.host))
}

/// Cursor: choose the claim for a fingerprint match. Returns the caller and
/// the key to claim (`None` when this request already holds its claim), or
/// why there is none. Pure: the caller appends the claim under the same lock.
///
/// `claimant` identifies the MCP request (server process + JSON-RPC id): a
/// request that resolves twice (check, then deliver) must get the same
/// caller both times, not fall back to the slot on the second.
pub fn choose_claim<'a>(
    view: &View<'a>,
    call: &McpCall,
    fp: &str,
    claimant: Option<&str>,
    now: u64,
) -> Result<(Caller, Option<&'a str>), PerCall> {
    let scope_of = |c: &crate::state::journal::Call<'_>| c.agent.unwrap_or(c.conv).to_string();
    let caller_of = |c: &crate::state::journal::Call<'_>| {
        Caller::new(Source::Fingerprint, Some(scope_of(c)), Some(c.conv.to_string()), Some(c.host))
    };
    let candidates = view.claim_candidates(&call.name, fp, now);
    // The same request asked again (a check, then the delivery) holds its
    // claim, but only inside the claim window, and only while no other
    // scope's hook recorded this same call: two chats behind one shared
    // server send requests with the same JSON-RPC id and arguments, and the
    // token cannot tell them apart (the second was resolved as the first and
    // got its stub).
    let held = claimant.and_then(|t| view.claimed_by(t)).filter(|c| in_window(c.t, now, CLAIM_WINDOW_MS));
    if let Some(held) = held {
        if candidates.iter().any(|c| scope_of(c) != scope_of(held)) {
            return Err(PerCall::Ambiguous);
        }
        return Ok((caller_of(held), None));
    }
    let Some(first) = candidates.first() else {
        return Err(PerCall::NoMatch);
    };
    // Claude Code and Codex name their calls to the server (tool-use id,
    // `_meta`), so a server resolves theirs by id and never claims them: such
    // a record stays claimable for the whole window. A call that reaches
    // fingerprint matching is not that call; with the same tool and
    // arguments in the window, whose it is cannot be told (a Cursor call
    // whose own hook died claimed a Claude session's record and got its
    // stubs; found by tests/it/sim_ledger.rs).
    if candidates.iter().any(|c| matches!(c.host, Host::ClaudeCode | Host::Codex)) {
        return Err(PerCall::Ambiguous);
    }
    let scope = scope_of(first);
    if candidates.iter().any(|c| scope_of(c) != scope) {
        return Err(PerCall::Ambiguous);
    }
    Ok((caller_of(first), Some(first.key)))
}

/// The claimant token of one MCP request: the server process, the
/// request's JSON-RPC id, its progress token (Cursor numbers them per chat)
/// and the call, its arguments as the sealed fingerprint `fp` (so they
/// cannot be guessed back from the token; hashed; `None` without an id).
/// Two chats of one shared server can still send the same of all of these:
/// [`choose_claim`] does not let a token's claim stand for another scope's
/// recorded call.
pub fn claimant_token(server_pid: u32, call: &McpCall, fp: &str) -> Option<String> {
    let id = call.request_id.as_deref()?;
    let progress = call.meta.get("progressToken").map(Value::to_string).unwrap_or_default();
    let h =
        crate::base::fingerprint::sha256_hex(format!("{server_pid}\0{id}\0{progress}\0{}\0{fp}", call.name).as_bytes());
    Some(h[..32].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The scan answers as the map does, small objects and large, keys
    /// present and absent, and a non-object has no field.
    #[test]
    fn a_field_is_found_as_the_map_finds_it() {
        for n in 0..=2 * SCAN_KEYS + 1 {
            let mut m = serde_json::Map::new();
            for i in 0..n {
                m.insert(format!("k{i}"), json!(i));
            }
            let v = Value::Object(m);
            for i in 0..=n + 1 {
                let k = format!("k{i}");
                assert_eq!(field(&v, &k), v.get(&k), "{n} keys, {k}");
            }
            assert_eq!(field(&v, ""), None);
        }
        // A duplicate key in the text: the map keeps one value, the scan finds it.
        let dup: Value = serde_json::from_str(r#"{"callId":"a","callId":"b"}"#).unwrap();
        assert_eq!(field(&dup, "callId"), dup.get("callId"));
        for v in [json!(null), json!("callId"), json!(["callId"]), json!(1)] {
            assert_eq!(field(&v, "callId"), None);
        }
    }

    #[test]
    fn call_parts() {
        let whole = McpCall::from_json(&json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{
            "name":"ctx_read","arguments":{"path":"a"},"_meta":{"callId":"call_1","windowId":"S:2"}}}))
        .unwrap();
        assert_eq!(whole.request_id.as_deref(), Some("7"));
        let sid = McpCall::from_json(&json!({"id":"r-1","params":{"name":"x"}})).unwrap();
        assert_eq!(sid.request_id.as_deref(), Some("r-1"));
        // Bare params: an `id` there is not the JSON-RPC id.
        let bare = McpCall::from_json(&json!({"id": 9, "name":"ctx_read","arguments":{"path":"a"}})).unwrap();
        assert_eq!(bare.request_id, None);
        let bare = McpCall::from_json(&json!({"id": "s", "name":"ctx_read"})).unwrap();
        assert_eq!(bare.request_id, None);
        assert_eq!(whole.fingerprint(), args_fingerprint(Some(&json!({"path":"a"}))));
        assert_eq!(
            (whole.meta_call_id(), whole.window_id(), whole.host_call_id()),
            (Some("call_1"), Some("S:2"), Some("call_1"))
        );
        let claude = McpCall::from_json(&json!({"name":"x","_meta":{"claudecode/toolUseId":"toolu_9"}})).unwrap();
        assert_eq!((claude.host_call_id(), claude.meta_call_id(), claude.window_id()), (Some("toolu_9"), None, None));
        // Tokens: one per request of one server, none without a request id.
        let t = |pid, c: &McpCall| claimant_token(pid, c, &c.fingerprint());
        assert_eq!(t(1, &bare), None);
        assert_eq!(t(1, &whole), t(1, &whole));
        assert_ne!(t(1, &whole), t(2, &whole));
        assert_ne!(t(1, &whole), t(1, &sid));
        assert_eq!(t(1, &whole).unwrap().len(), 32);
        let progress = |n: u64| {
            McpCall::from_json(&json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{
                "name":"ctx_read","arguments":{"path":"a"},"_meta":{"progressToken": n}}}))
            .unwrap()
        };
        assert_ne!(t(1, &progress(1)), t(1, &progress(2)));
        assert_eq!(t(1, &progress(1)), t(1, &progress(1)));
    }

    #[test]
    fn claims_choose_one_scope_or_none() {
        use crate::state::journal::{Call, Record, View};
        let call = |conv: &'static str,
                    agent: Option<&'static str>,
                    host: Host,
                    key: &'static str,
                    fp: &'static str| {
            Record::Call(Call { t: 1_000, host, conv, agent, server: None, tool: "ctx_read", fp, call_id: None, key })
        };
        let c = McpCall::from_json(&json!({"name":"ctx_read","arguments":{"path":"a"}})).unwrap();
        let fp: &'static str = Box::leak(c.fingerprint().into_boxed_str());
        let one = View { records: vec![call("A", None, Host::Cursor, "k1", fp)] };
        let (caller, key) = choose_claim(&one, &c, fp, None, 2_000).unwrap();
        assert_eq!((caller.scope.as_deref(), key), (Some("A"), Some("k1")));
        let same_scope =
            View { records: vec![call("A", None, Host::Cursor, "k1", fp), call("A", None, Host::Cursor, "k2", fp)] };
        assert_eq!(choose_claim(&same_scope, &c, fp, None, 2_000).unwrap().1, Some("k1"));
        let two =
            View { records: vec![call("A", None, Host::Cursor, "k1", fp), call("B", None, Host::Cursor, "k2", fp)] };
        assert_eq!(choose_claim(&two, &c, fp, None, 2_000).unwrap_err(), PerCall::Ambiguous);
        let sub = View {
            records: vec![call("A", None, Host::Cursor, "k1", fp), call("A", Some("task:t"), Host::Cursor, "k2", fp)],
        };
        assert_eq!(choose_claim(&sub, &c, fp, None, 2_000).unwrap_err(), PerCall::Ambiguous);
        let claude = View { records: vec![call("A", None, Host::ClaudeCode, "k1", fp)] };
        assert_eq!(choose_claim(&claude, &c, fp, None, 2_000).unwrap_err(), PerCall::Ambiguous);
        // A held claim: the same request asked again, unless another scope
        // recorded the same call since (two chats, one server, one request id).
        let claim = |key: &'static str| Record::Claim { t: 1_500, key, claimant: Some("tok") };
        let held = View { records: vec![call("A", None, Host::Cursor, "k1", fp), claim("k1")] };
        let got = choose_claim(&held, &c, fp, Some("tok"), 2_000).unwrap();
        assert_eq!((got.0.scope.as_deref(), got.1), (Some("A"), None));
        let mut again = held.records.clone();
        again.push(call("A", None, Host::Cursor, "k2", fp));
        assert_eq!(choose_claim(&View { records: again }, &c, fp, Some("tok"), 2_000).unwrap().1, None);
        let mut other = held.records.clone();
        other.push(call("B", None, Host::Cursor, "k2", fp));
        assert_eq!(choose_claim(&View { records: other }, &c, fp, Some("tok"), 2_000).unwrap_err(), PerCall::Ambiguous);
        // Another token, or the held record past the claim window: no claim is held.
        let other_token = choose_claim(&held, &c, fp, Some("tik"), 2_000).unwrap_err();
        assert_eq!(other_token, PerCall::NoMatch);
        assert_eq!(
            choose_claim(&held, &c, fp, Some("tok"), 1_000 + CLAIM_WINDOW_MS + 1).unwrap_err(),
            PerCall::NoMatch
        );
        let other_args = View { records: vec![call("A", None, Host::Cursor, "k1", "00")] };
        assert_eq!(choose_claim(&other_args, &c, fp, None, 2_000).unwrap_err(), PerCall::NoMatch);
        let rec = View {
            records: vec![Record::Call(Call {
                t: 1,
                host: Host::ClaudeCode,
                conv: "S",
                agent: Some("agent:x"),
                server: None,
                tool: "t",
                fp: "f",
                call_id: Some("toolu_1"),
                key: "k",
            })],
        };
        let got = caller_from_record(&rec, "toolu_1").unwrap();
        assert_eq!(
            (got.scope.as_deref(), got.conversation.as_deref(), got.source),
            (Some("agent:x"), Some("S"), Source::ToolUseId)
        );
        assert!(caller_from_record(&rec, "toolu_2").is_none());
    }

    #[test]
    fn codex_meta_main_and_subagent() {
        let main = McpCall::from_json(
            &json!({"method":"tools/call","params":{"name":"ctx_read","arguments":{"path":"README.md"},
            "_meta":{"sessionId":"S","threadId":"S","callId":"call_1"}}}),
        )
        .unwrap();
        let c = main.codex_caller().unwrap();
        assert_eq!((c.scope.as_deref(), c.source, c.exact), (Some("S"), Source::MetaSession, true));
        let sub = McpCall::from_json(&json!({"name":"ctx_read","_meta":{"sessionId":"S","threadId":"T"}})).unwrap();
        assert_eq!(sub.codex_caller().unwrap().scope.as_deref(), Some("agent:T"));
        assert_eq!(sub.codex_caller().unwrap().conversation.as_deref(), Some("S"));
        let claude = McpCall::from_json(
            &json!({"name":"ctx_read","_meta":{"claudecode/toolUseId":"toolu_1","progressToken":2}}),
        )
        .unwrap();
        assert!(claude.codex_caller().is_none());
        assert_eq!(claude.claude_tool_use_id(), Some("toolu_1"));
        let bad = McpCall::from_json(&json!({"name":"x","_meta":{"sessionId":"../etc"}})).unwrap();
        assert!(bad.codex_caller().is_none());
    }
}
