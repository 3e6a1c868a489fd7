//! Cursor runs Claude Code's hooks too.
//!
//! By default ("Include third-party Plugins, Skills, and other configs"),
//! Cursor — the desktop app and the CLI — loads `~/.claude/settings.json`
//! and `.claude/settings*.json` and runs their hooks on its own events
//! (docs/HOST-FACTS.md §2, docs/DELIVERY.md §5), with its own payload (`cursor_version`,
//! lowerCamel event names) and `CURSOR_VERSION` in the environment. With
//! both `leanctx hooks install cursor` and `… claude-code` in place, one
//! Cursor event then runs `leanctx hook cursor` *and* `leanctx hook
//! claude-code`, the latter with Cursor's payload.
//!
//! `CURSOR_VERSION` is not used to tell them apart: Claude Code started
//! from Cursor's terminal may inherit it, and its own events must still be
//! recorded. The payload says who sent it.
//!
//! The hook handles it: `leanctx hook claude-code` given Cursor's payload
//! stands aside ([`claude_hook_run_by_cursor`], checked in `hook::run`), so
//! the cursor entry records each Cursor event exactly once. The cost: Cursor
//! is covered by the cursor entry only, so install it for Cursor.

use crate::base::host::Host;
use serde_json::Value;

/// The payload came from Cursor: Cursor sends `cursor_version` (current)
/// and `generation_id` (every version since 1.7) on every agent event;
/// Claude Code, Codex and CodeBuddy send neither. `conversation_id` alone is
/// not enough: a host adding a field of that name must not silently switch
/// off its own recording.
pub fn payload_is_cursors(payload: &Value) -> bool {
    payload.get("cursor_version").is_some_and(Value::is_string)
        || payload.get("generation_id").is_some_and(Value::is_string)
}

/// `leanctx hook <host>` with this payload is Cursor running a Claude Code
/// entry: the Cursor entry (when installed) records the same event, so
/// this run should record nothing and answer "no opinion".
pub fn claude_hook_run_by_cursor(host: Host, payload: &Value) -> bool {
    host == Host::ClaudeCode && payload_is_cursors(payload)
}

/// What install and status tell a user who has both.
pub const NOTE: &str = "Cursor also runs Claude Code hooks (by default: \"Include third-party Plugins, Skills, and \
     other configs\"). leanctx's claude-code entry recognises Cursor's payload and stands aside, so each Cursor \
     event is recorded once, by the cursor entry: keep the cursor hooks installed for Cursor.";

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    fn payload_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/payloads")
    }

    fn payloads(host_dir: &str) -> Vec<(PathBuf, Value)> {
        let mut out = Vec::new();
        let mut stack = vec![payload_dir().join(host_dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "json")
                    && !p.to_string_lossy().contains("mcp-tools-call")
                    && !p.to_string_lossy().contains("mcp-server-observed")
                {
                    let v = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                    out.push((p, v));
                }
            }
        }
        assert!(!out.is_empty(), "no {host_dir} payloads");
        out
    }

    #[test]
    fn every_cursor_payload_is_recognised() {
        for (p, v) in payloads("cursor").into_iter().chain(payloads("cursor-real")) {
            assert!(claude_hook_run_by_cursor(Host::ClaudeCode, &v), "{}", p.display());
            assert!(!claude_hook_run_by_cursor(Host::Cursor, &v), "the cursor entry records it");
        }
    }

    #[test]
    fn no_real_claude_codex_or_codebuddy_payload_is_taken_for_cursors() {
        for host in ["claude", "codex", "codebuddy"] {
            for (p, v) in payloads(host) {
                assert!(!payload_is_cursors(&v), "{}", p.display());
            }
        }
    }
}
