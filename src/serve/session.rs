//! Tool `session`: what the calling chat holds, its next step, and a
//! proxy's compactions, in the ledger's terms. Paths, tasks and summaries
//! live in the server's memory only (the journal keeps hashes): a server
//! that restarts knows no paths, and lists none.

use super::{exact_scope, tool_result};
use crate::identity::decision::Reason;
use crate::identity::mcp_call::McpCall;
use crate::identity::readpath::ReadPath;
use crate::state::journal::{Journal, Reach, Record};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};

/// Chats remembered (least recently used out).
pub const MAX_SCOPES: usize = 256;
/// Files remembered per chat (the oldest delivery out).
pub const MAX_FILES: usize = 2048;
/// The longest `task` and `summary` kept (bytes).
pub const MAX_TEXT_BYTES: usize = 4096;
/// A compaction directive lives this long.
pub const DIRECTIVE_MS: u64 = 30 * 60 * 1000;
/// At most one new compaction per chat in this time.
pub const COMPACT_EVERY_MS: u64 = 5 * 60 * 1000;
pub const DEFAULT_KEEP_TURNS: u64 = 6;
pub const MIN_KEEP_TURNS: u64 = 4;

#[derive(Clone, Debug)]
struct FileMem {
    /// The whole file's key (a range's key names its lines too).
    file: String,
    shown: String,
    version: String,
    len: u64,
    /// A range: its first and last line; `None`: the whole file.
    lines: Option<(usize, usize)>,
    seq: u64,
}

/// One delivery the server recorded, as [`Memory::note`] keeps it.
pub struct Noted<'a> {
    /// The ledger key: the file's, or a range's (`file#L<first>-<last>`).
    pub key: &'a str,
    /// The whole file's key.
    pub file: &'a str,
    pub shown: &'a str,
    pub version: &'a str,
    pub len: u64,
    pub lines: Option<(usize, usize)>,
}

#[derive(Clone, Debug)]
struct Directive {
    at_ms: u64,
    keep_recent_turns: u64,
    summary: String,
}

#[derive(Clone, Debug, Default)]
struct ScopeMem {
    files: BTreeMap<String, FileMem>,
    task: Option<String>,
    directive: Option<Directive>,
    last_compact_ms: Option<u64>,
    used: u64,
}

/// The server's memory of each chat.
#[derive(Debug, Default)]
pub struct Memory {
    scopes: HashMap<String, ScopeMem>,
    seq: u64,
}

impl Memory {
    fn scope(&mut self, scope: &str) -> &mut ScopeMem {
        self.seq += 1;
        if !self.scopes.contains_key(scope) && self.scopes.len() >= MAX_SCOPES {
            let oldest = self.scopes.iter().min_by_key(|(_, m)| m.used).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.scopes.remove(&k);
            }
        }
        let m = self.scopes.entry(scope.to_string()).or_default();
        m.used = self.seq;
        m
    }

    /// A delivery recorded for `scope`.
    pub fn note(&mut self, scope: &str, n: &Noted<'_>) {
        let seq = self.seq + 1;
        let m = self.scope(scope);
        let f = FileMem {
            file: n.file.into(),
            shown: n.shown.into(),
            version: n.version.into(),
            len: n.len,
            lines: n.lines,
            seq,
        };
        m.files.insert(n.key.to_string(), f);
        if m.files.len() > MAX_FILES {
            let oldest = m.files.iter().min_by_key(|(_, f)| f.seq).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                m.files.remove(&k);
            }
        }
    }

    /// The ranges of `file` at `version` this server delivered to `scope`
    /// (key, first and last line), at most `max`, widest overlap with
    /// `want` first: candidates only, each still to be asked of the ledger.
    pub fn ranges(
        &self,
        scope: &str,
        file: &str,
        version: &str,
        want: (usize, usize),
        max: usize,
    ) -> Vec<(String, (usize, usize))> {
        let Some(m) = self.scopes.get(scope) else { return vec![] };
        let overlap = |(a, b): (usize, usize)| b.min(want.1).saturating_sub(a.max(want.0));
        let mut out: Vec<(String, (usize, usize))> = m
            .files
            .range(file.to_string()..)
            .take_while(|(k, _)| k.starts_with(file))
            .filter(|(_, f)| f.file == file && f.version == version)
            .filter_map(|(k, f)| Some((k.clone(), f.lines?)))
            .filter(|(_, (a, b))| *a <= want.1 && *b >= want.0)
            .collect();
        out.sort_by_key(|(_, l)| std::cmp::Reverse(overlap(*l)));
        out.truncate(max);
        out
    }

    pub fn files_of(&self, scope: &str) -> usize {
        self.scopes.get(scope).map_or(0, |m| m.files.len())
    }
}

/// `session`'s arguments, checked: bad input names the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Status,
    Task(String),
    Compact { summary: String, keep_recent_turns: u64 },
    Restore,
}

pub fn parse_args(v: &Value) -> Result<Action, String> {
    let Some(o) = v.as_object() else { return Err("arguments: expected an object with \"action\"".into()) };
    let allowed: &[&str] = match o.get("action").and_then(Value::as_str) {
        Some("status" | "restore") => &["action"],
        Some("task") => &["action", "task"],
        Some("compact") => &["action", "summary", "keep_recent_turns"],
        Some(a) => return Err(format!("action: unknown {a:?} (status, task, compact or restore)")),
        None => return Err("action: missing (status, task, compact or restore)".into()),
    };
    if let Some(k) = o.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("{k}: not an argument of this action"));
    }
    let text = |name: &str| -> Result<String, String> {
        match o.get(name) {
            Some(Value::String(s)) if s.trim().is_empty() => Err(format!("{name}: empty")),
            Some(Value::String(s)) if s.len() > MAX_TEXT_BYTES => {
                Err(format!("{name}: {} bytes, longer than {MAX_TEXT_BYTES}", s.len()))
            }
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("{name}: expected a string")),
            None => Err(format!("{name}: missing")),
        }
    };
    Ok(match o["action"].as_str() {
        Some("status") => Action::Status,
        Some("restore") => Action::Restore,
        Some("task") => Action::Task(text("task")?),
        _ => {
            let keep = match o.get("keep_recent_turns") {
                None | Some(Value::Null) => DEFAULT_KEEP_TURNS,
                Some(n) => match n.as_u64() {
                    Some(k) if k >= MIN_KEEP_TURNS => k,
                    _ => {
                        return Err(format!(
                            "keep_recent_turns: expected a whole number, at least {MIN_KEEP_TURNS} (got {n})"
                        ));
                    }
                },
            };
            Action::Compact { summary: text("summary")?, keep_recent_turns: keep }
        }
    })
}

/// Answer `session` for the request `call`.
pub fn session(rp: &ReadPath, memory: &mut Memory, call: &McpCall) -> Value {
    let action = match parse_args(&call.arguments) {
        Ok(a) => a,
        Err(e) => return tool_result(e, true),
    };
    // Who is calling, exactly as the ledger names callers (a question about
    // a key nobody delivers records nothing).
    let Ok(me) = rp.stub(call, "leanctx:session", "-", None) else {
        return tool_result("the caller could not be asked about".into(), true);
    };
    let Some(scope) = exact_scope(&me) else {
        return tool_result(
            format!(
                "this call does not name its caller ({}): leanctx keeps no session for it",
                me.decision.reason.as_str()
            ),
            true,
        );
    };
    let now = rp.now();
    match action {
        Action::Status => status(rp, memory, call, &scope, &me, now),
        Action::Task(t) => {
            memory.scope(&scope).task = Some(t);
            tool_result("task recorded: `session status` shows it, across compactions".into(), false)
        }
        Action::Restore => {
            let had = memory.scope(&scope).directive.take().is_some();
            let what = if had { "compaction directive cleared" } else { "no compaction directive was active" };
            tool_result(format!("{what}; no delivery comes back: files are sent whole again on their next read"), false)
        }
        Action::Compact { summary, keep_recent_turns } => {
            let m = memory.scope(&scope);
            if let Some(wait) = compact_wait_s(m.last_compact_ms, now) {
                return tool_result(format!("action: at most one compaction every 5 minutes (next in {wait} s)"), true);
            }
            let conv = me.caller.conversation.clone().unwrap_or_else(|| scope.clone());
            let host = me.caller.host.unwrap_or(crate::Host::ClaudeCode);
            let Some(dir) = rp.usable_dir() else {
                return tool_result("no usable data dir: the compaction could not be recorded".into(), true);
            };
            // Every delivery the dropped turns may hold ends: a compaction of
            // the conversation (the ledger cannot tell turns apart, so it ends
            // them all, the safe direction).
            if let Err(e) =
                Journal::new(dir).append(&[Record::Compaction { t: now, host, conv: &conv, reach: Reach::All }], now)
            {
                return tool_result(format!("the compaction could not be recorded: {e}"), true);
            }
            let m = memory.scope(&scope);
            m.last_compact_ms = Some(now);
            m.directive = Some(Directive { at_ms: now, keep_recent_turns, summary });
            tool_result(
                format!(
                    "compaction recorded: drop all but the last {keep_recent_turns} turns and put the summary in \
                     their place, for the next 30 minutes. Every file delivered before now is sent whole again \
                     on its next read."
                ),
                false,
            )
        }
    }
}

fn status(
    rp: &ReadPath,
    memory: &mut Memory,
    call: &McpCall,
    scope: &str,
    me: &crate::LedgerAnswer,
    now: u64,
) -> Value {
    let m = memory.scope(scope).clone();
    let mut held = Vec::new();
    for (key, f) in &m.files {
        let Ok(a) = rp.stub(call, key, &f.version, None) else { continue };
        if a.decision.reason != Reason::ConfirmedDelivery {
            continue;
        }
        let d = a.delivery.as_ref();
        held.push(json!({
            "path": f.shown,
            "key": key,
            "version": f.version,
            "size": f.len,
            "delivered_ms": d.map(|d| d.delivered_at_ms),
            "confirmed_by": d.map(|d| confirmed_by(d.host)),
        }));
    }
    let q = crate::StubQuery { call: Some(call), ..Default::default() };
    let last_compaction_ms = rp.decide(&q).last_compaction_ms;
    let directive = m.directive.as_ref().filter(|d| directive_live(d.at_ms, now)).map(|d| {
        json!({"keep_recent_turns": d.keep_recent_turns, "summary": d.summary, "expires_ms": d.at_ms + DIRECTIVE_MS})
    });
    let out = json!({
        "scope": scope,
        "conversation": me.caller.conversation,
        "host": me.caller.host,
        "window": call.window_id(),
        "holds": held,
        "remembered_files": m.files.len(),
        "last_compaction_ms": last_compaction_ms,
        "withdrawals": "not tracked by this version",
        "task": m.task,
        "compaction_directive": directive,
    });
    tool_result(serde_json::to_string_pretty(&out).unwrap_or_default(), false)
}

/// How long (s) a chat whose last compaction was at `last` waits before
/// another, at `now`; `None`: it may compact now. A clock that went back
/// waits the whole interval.
pub fn compact_wait_s(last: Option<u64>, now: u64) -> Option<u64> {
    let since = now.saturating_sub(last?);
    (since < COMPACT_EVERY_MS).then(|| (COMPACT_EVERY_MS - since).div_ceil(1000))
}

/// Whether a compaction directive given at `at` still holds at `now`.
pub fn directive_live(at: u64, now: u64) -> bool {
    now.saturating_sub(at) < DIRECTIVE_MS
}

/// The hook whose acknowledgement confirms a delivery on each host.
fn confirmed_by(host: crate::Host) -> &'static str {
    match host {
        crate::Host::ClaudeCode => "PostToolBatch",
        crate::Host::Codex => "PostToolUse",
        crate::Host::Cursor => "afterMCPExecution",
        crate::Host::CodeBuddy => "PostToolUse",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_name_the_bad_field() {
        assert_eq!(parse_args(&json!({"action": "status"})), Ok(Action::Status));
        assert_eq!(parse_args(&json!({"action": "task", "task": "fix x"})), Ok(Action::Task("fix x".into())));
        assert_eq!(
            parse_args(&json!({"action": "compact", "summary": "s"})),
            Ok(Action::Compact { summary: "s".into(), keep_recent_turns: 6 })
        );
        assert_eq!(
            parse_args(&json!({"action": "compact", "summary": "s", "keep_recent_turns": 4})),
            Ok(Action::Compact { summary: "s".into(), keep_recent_turns: 4 })
        );
        for (v, field) in [
            (json!([]), "arguments"),
            (json!({}), "action"),
            (json!({"action": "nap"}), "action"),
            (json!({"action": "task"}), "task"),
            (json!({"action": "task", "task": " "}), "task"),
            (json!({"action": "task", "task": 3}), "task"),
            (json!({"action": "task", "task": "x".repeat(MAX_TEXT_BYTES + 1)}), "task"),
            (json!({"action": "compact"}), "summary"),
            (json!({"action": "compact", "summary": "s", "keep_recent_turns": 3}), "keep_recent_turns"),
            (json!({"action": "compact", "summary": "s", "keep_recent_turns": "6"}), "keep_recent_turns"),
            (json!({"action": "status", "task": "x"}), "task"),
        ] {
            let e = parse_args(&v).unwrap_err();
            assert!(e.starts_with(&format!("{field}:")), "{v}: {e}");
        }
    }

    #[test]
    fn compaction_bounds_in_time() {
        let min = 60_000;
        for (last, now, wait) in [
            (None, 0, None),
            (Some(0), 0, Some(300)),
            (Some(0), 1, Some(300)),
            (Some(0), 4 * min + 59_001, Some(1)),
            (Some(0), 5 * min - 1, Some(1)),
            (Some(0), 5 * min, None),
            (Some(10 * min), 5 * min, Some(300)),
        ] {
            assert_eq!(compact_wait_s(last, now), wait, "{last:?} {now}");
        }
        assert!(directive_live(0, 0));
        assert!(directive_live(0, 30 * min - 1));
        assert!(!directive_live(0, 30 * min));
        assert!(directive_live(30 * min, 0), "a clock that went back keeps it");
    }

    #[test]
    fn memory_is_bounded() {
        let mut m = Memory::default();
        fn n(key: &str) -> Noted<'_> {
            Noted { key, file: key, shown: "p", version: "v", len: 1, lines: None }
        }
        for i in 0..MAX_FILES + 10 {
            m.note("s", &n(&format!("k{i}")));
        }
        assert_eq!(m.files_of("s"), MAX_FILES);
        assert!(!m.scopes["s"].files.contains_key("k0"));
        for i in 0..MAX_SCOPES + 5 {
            m.note(&format!("s{i}"), &n("k"));
        }
        assert_eq!(m.scopes.len(), MAX_SCOPES);
    }

    #[test]
    fn ranges_are_this_files_at_this_version() {
        let mut m = Memory::default();
        let mut note = |key: &str, file: &str, version: &str, lines| {
            m.note("s", &Noted { key, file, shown: file, version, len: 1, lines });
        };
        note("a", "a", "v1", None);
        note("a#L1-10", "a", "v1", Some((1, 10)));
        note("a#L5-40", "a", "v1", Some((5, 40)));
        note("a#L41-50", "a", "v1", Some((41, 50)));
        note("a#L60-70", "a", "v2", Some((60, 70)));
        note("a.bak#L1-10", "a.bak", "v1", Some((1, 10)));
        let keys = |want, max| m.ranges("s", "a", "v1", want, max).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(keys((1, 50), 8), ["a#L5-40", "a#L1-10", "a#L41-50"]);
        assert_eq!(keys((1, 50), 1), ["a#L5-40"]);
        assert_eq!(keys((45, 100), 8), ["a#L41-50"]);
        assert!(keys((51, 100), 8).is_empty());
        assert!(m.ranges("t", "a", "v1", (1, 50), 8).is_empty());
    }
}
