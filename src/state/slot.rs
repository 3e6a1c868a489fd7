//! `active_transcript.json`: the last-writer-wins slot, format-compatible
//! with lean-ctx (`transcript_path`, `conversation_id`, `session_id`,
//! `updated_at` in unix seconds; extra keys allowed).
//!
//! Written with [`crate::fsx::write_recycled`]: a reader sees the old slot
//! or the new one, never a mix, however many writers race.

use crate::base::host::Host;
use crate::base::ids;
use crate::base::scope::ScopeKind;
use serde_json::Value;
use std::io;
use std::path::{Path, PathBuf};

/// Two hours: an older slot reads as absent.
pub const SLOT_TTL_MS: u64 = crate::base::clock::STATE_TTL_MS;
pub use crate::base::clock::FUTURE_SKEW_MS;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Slot {
    pub transcript_path: String,
    pub conversation_id: Option<String>,
    pub session_id: Option<String>,
    /// Unix seconds (lean-ctx's field).
    pub updated_at: u64,
    /// Unix milliseconds (ours; lean-ctx slots lack it).
    pub updated_at_ms: u64,
    pub host: Option<String>,
    pub event: Option<String>,
    /// Subagent scope (`agent:<id>` / `task:<id>`) when the writer was one.
    pub agent: Option<String>,
}

impl Slot {
    /// A slot for a conversation of `host`: Cursor fills `conversation_id`,
    /// the others `session_id`, as lean-ctx expects.
    pub fn new(
        host: Host,
        conversation: &str,
        transcript: Option<&str>,
        event: &str,
        agent: Option<&str>,
        now_ms: u64,
    ) -> Slot {
        let (conversation_id, session_id) = match host {
            Host::Cursor => (Some(conversation.to_string()), None),
            _ => (None, Some(conversation.to_string())),
        };
        Slot {
            transcript_path: transcript.unwrap_or("").to_string(),
            conversation_id,
            session_id,
            updated_at: now_ms / 1000,
            updated_at_ms: now_ms,
            host: Some(host.as_str().to_string()),
            event: Some(event.to_string()).filter(|e| ids::is_plain_name(e)),
            agent: agent.map(str::to_string),
        }
    }

    /// The top-level conversation the slot names.
    pub fn conversation(&self) -> Option<&str> {
        self.conversation_id.as_deref().or(self.session_id.as_deref())
    }

    /// The scope a caller identified by this slot has: the subagent if the
    /// last writer was one, else the conversation.
    pub fn scope(&self) -> Option<&str> {
        self.agent.as_deref().or(self.conversation())
    }

    pub fn to_json(&self) -> String {
        // Serialized from borrowed fields, not built as a map of values and
        // then printed (every hook writes a slot: that was ~10k of its
        // instructions); the same keys, in the same order, nulls included.
        #[derive(serde::Serialize)]
        struct Out<'a> {
            transcript_path: &'a str,
            conversation_id: Option<&'a str>,
            session_id: Option<&'a str>,
            updated_at: u64,
            updated_at_ms: u64,
            host: Option<&'a str>,
            event: Option<&'a str>,
            agent: Option<&'a str>,
        }
        let out = Out {
            transcript_path: &self.transcript_path,
            conversation_id: self.conversation_id.as_deref(),
            session_id: self.session_id.as_deref(),
            updated_at: self.updated_at,
            updated_at_ms: self.updated_at_ms,
            host: self.host.as_deref(),
            event: self.event.as_deref(),
            agent: self.agent.as_deref(),
        };
        let mut s = serde_json::to_string(&out).expect("strings and integers always serialize");
        s.push('\n');
        s
    }

    /// Parse a slot, as we or lean-ctx wrote it. Ids that are not valid ids
    /// are dropped (a slot whose only id is bad names nobody).
    pub fn parse(text: &str) -> Option<Slot> {
        let v: Value = serde_json::from_str(text).ok()?;
        let s = |k: &str| v.get(k).and_then(Value::as_str);
        let id = |k: &str| s(k).and_then(ids::valid_id).map(str::to_string);
        let updated_at = v.get("updated_at").and_then(Value::as_u64)?;
        let updated_at_ms = v
            .get("updated_at_ms")
            .and_then(Value::as_u64)
            .filter(|ms| ms / 1000 == updated_at)
            .unwrap_or(updated_at.saturating_mul(1000));
        let agent = s("agent")
            .filter(|a| ScopeKind::Agent.id(a).or(ScopeKind::Task.id(a)).is_some_and(ids::is_valid_id))
            .map(str::to_string);
        Some(Slot {
            transcript_path: s("transcript_path").unwrap_or("").to_string(),
            conversation_id: id("conversation_id"),
            session_id: id("session_id"),
            updated_at,
            updated_at_ms,
            host: s("host").map(str::to_string),
            event: s("event").map(str::to_string),
            agent,
        })
    }

    /// Is the slot live at `now_ms` (inside the TTL, not from the future)?
    pub fn is_live(&self, now_ms: u64) -> bool {
        self.updated_at_ms <= now_ms.saturating_add(FUTURE_SKEW_MS)
            && now_ms.saturating_sub(self.updated_at_ms) <= SLOT_TTL_MS
    }

    /// Age in ms at `now_ms` (0 if from the future).
    pub fn age_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.updated_at_ms)
    }
}

pub fn slot_path(dir: &Path) -> PathBuf {
    dir.join(crate::base::paths::SLOT_FILE)
}

/// Every hook writes it: through [`crate::fsx::write_recycled`], which
/// reuses two inodes instead of creating and unlinking one per write.
pub fn write_slot(dir: &Path, slot: &Slot) -> io::Result<()> {
    crate::fsx::write_recycled(&slot_path(dir), slot.to_json().as_bytes())
}

/// The slot file of a Cursor task scope (`CURSOR_TASK_ID`): its own file,
/// named by a hash of the id, so the main slot is not overwritten and no id
/// reaches a path.
pub fn scope_slot_path(dir: &Path, scope: &str) -> PathBuf {
    let h = crate::base::fingerprint::sha256_hex(scope.as_bytes());
    dir.join(crate::base::paths::SCOPES_DIR).join(format!("{}.json", &h[..32]))
}

pub fn write_scope_slot(dir: &Path, scope: &str, slot: &Slot) -> io::Result<()> {
    crate::fsx::ensure_private_subdir(dir, crate::base::paths::SCOPES_DIR)?;
    crate::fsx::write_atomic(&scope_slot_path(dir, scope), slot.to_json().as_bytes())
}

/// How reading the slot went.
#[derive(Debug)]
pub enum SlotRead {
    Live(Slot),
    /// No slot file.
    Absent,
    /// A slot exists but is past its TTL or from the future.
    Expired(Slot),
    /// A slot file exists but does not parse.
    Invalid,
}

/// Read the slot: a regular file of ours, at most
/// [`SLOT_MAX_BYTES`](crate::base::paths::SLOT_MAX_BYTES), opened without
/// blocking or following a symlink. Anything else there (a FIFO, a symlink
/// to `/dev/zero`, a huge file, another user's file) is an error: the read
/// path then withholds rather than take it for "no slot".
pub fn read_slot(dir: &Path, now_ms: u64) -> io::Result<SlotRead> {
    let Some(bytes) = crate::fsx::read_state(&slot_path(dir), crate::base::paths::SLOT_MAX_BYTES)? else {
        return Ok(SlotRead::Absent);
    };
    let Ok(text) = String::from_utf8(bytes) else { return Ok(SlotRead::Invalid) };
    Ok(match Slot::parse(&text) {
        Some(s) if s.is_live(now_ms) => SlotRead::Live(s),
        Some(s) => SlotRead::Expired(s),
        None => SlotRead::Invalid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every hook writes the slot: two inodes take turns instead of a new
    /// one created and the old one unlinked per write (fsx::write_recycled).
    #[cfg(target_os = "linux")]
    #[test]
    fn slot_writes_reuse_two_inodes() {
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir().unwrap();
        let mut inodes = std::collections::HashSet::new();
        for i in 0..6 {
            let s = Slot::new(Host::ClaudeCode, &format!("s{i}"), Some("/t.jsonl"), "PreToolUse", None, 1_000 + i);
            write_slot(t.path(), &s).unwrap();
            let SlotRead::Live(back) = read_slot(t.path(), 1_000 + i).unwrap() else { panic!("slot not live") };
            assert_eq!(back, s);
            inodes.insert(std::fs::metadata(slot_path(t.path())).unwrap().ino());
        }
        assert_eq!(inodes.len(), 2);
    }

    #[test]
    fn lean_ctx_slot_parses() {
        let t = r#"{"transcript_path": "/x.jsonl", "conversation_id": "0e1f4ed8-d858", "updated_at": 1795979857}"#;
        let s = Slot::parse(t).unwrap();
        assert_eq!(s.conversation(), Some("0e1f4ed8-d858"));
        assert_eq!(s.updated_at_ms, 1795979857000);
        assert!(s.is_live(1795979857000 + SLOT_TTL_MS));
        assert!(!s.is_live(1795979857000 + SLOT_TTL_MS + 1));
        assert!(!s.is_live(1795979857000 - FUTURE_SKEW_MS - 1));
    }

    #[test]
    fn round_trip_and_keys() {
        let s = Slot::new(Host::ClaudeCode, "sess-1", Some("/t.jsonl"), "PreToolUse", Some("agent:a1"), 1_000_123);
        let j = s.to_json();
        let v: Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["session_id"], "sess-1");
        assert_eq!(v["conversation_id"], Value::Null);
        assert_eq!(v["updated_at"], 1000);
        assert_eq!(Slot::parse(&j).unwrap(), s);
        assert_eq!(s.scope(), Some("agent:a1"));
    }

    /// The bytes lean-ctx and older leanctx builds wrote: a JSON object
    /// printed from a map in this key order, nulls for what is absent.
    #[test]
    fn written_as_before() {
        let opt = |v: &Option<String>| v.as_ref().map(|s| Value::String(s.clone())).unwrap_or(Value::Null);
        let slots = [
            Slot::new(Host::ClaudeCode, "sess-1", Some("/t.jsonl"), "PreToolUse", Some("agent:a1"), 1_000_123),
            Slot::new(Host::Cursor, "conv", None, "sessionStart", None, 0),
            Slot {
                transcript_path: "C:\\x\"y\u{1}\u{e9}\u{2028}".into(),
                event: Some("\"\n".into()),
                ..Slot::new(Host::Codex, "c", None, "e", Some("task:t"), u64::MAX)
            },
        ];
        for s in slots {
            let mut m = serde_json::Map::new();
            m.insert("transcript_path".into(), Value::String(s.transcript_path.clone()));
            m.insert("conversation_id".into(), opt(&s.conversation_id));
            m.insert("session_id".into(), opt(&s.session_id));
            m.insert("updated_at".into(), Value::from(s.updated_at));
            m.insert("updated_at_ms".into(), Value::from(s.updated_at_ms));
            m.insert("host".into(), opt(&s.host));
            m.insert("event".into(), opt(&s.event));
            m.insert("agent".into(), opt(&s.agent));
            assert_eq!(s.to_json(), format!("{}\n", Value::Object(m)));
        }
    }

    #[test]
    fn bad_ids_are_dropped() {
        let t = r#"{"transcript_path": "", "session_id": "../../etc", "updated_at": 5}"#;
        assert_eq!(Slot::parse(t).unwrap().conversation(), None);
        assert!(Slot::parse("{").is_none());
        assert!(Slot::parse(r#"{"session_id":"a"}"#).is_none());
    }
}
