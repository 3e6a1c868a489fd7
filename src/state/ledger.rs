//! The delivery ledger: a stub is a claim about what the model received.
//!
//! An MCP server that answers a re-read with `[unchanged]` claims "you
//! already have this". What the server *sent* is not what the model *got*
//! (docs/DELIVERY.md): Claude Code shows a 2 KB preview of a result over
//! 50,000 characters, Codex cuts the middle out of one over its output
//! budget, an interrupted call reaches the model not at all, and a
//! compaction can swallow a result. So leanctx keeps the ledger itself, in
//! the journal:
//!
//! - `D` — a delivery: the server is returning this result (its digest and
//!   length, never its text) for version `ver` of `key` to the caller of one
//!   MCP call, named exactly per call (`scope`, `conv`), in context window
//!   `window` (Codex `_meta.windowId`), and the call's `ref` the host's hooks
//!   will name again.
//! - `A` — an acknowledgement: a host hook said what the model received for
//!   the call `ref` (digest and length), and whether it fits whole.
//!
//! A stub for `key`@`ver` is allowed only when the newest delivery of `key`
//! to this scope is of `ver`, in this window, acknowledged *after* it (file
//! order) with the same digest and whole, and no compaction of its
//! conversation follows it in the journal. Order, not clocks: "after" means
//! later in the journal, never a later timestamp.
//!
//! This module is the pure part: names, hashes, the records and the result
//! text rule. The journal stores the records; the stub rule itself is
//! [`crate::identity::delivery`]; the read path asks.

use crate::base::fingerprint::{canonical_json, sha256_hex};
use crate::base::host::Host;
use serde::Serialize;
use serde_json::Value;

/// Longest `--key` / `--version` accepted (a path or a hash; the journal
/// keeps only their hashes).
pub const MAX_KEY_BYTES: usize = 4096;
/// Largest `--result` read (the text is hashed, never kept).
pub const MAX_RESULT_BYTES: usize = 16 * 1024 * 1024;
/// Codex: budget used when the user's config sets no
/// `tool_output_token_limit`. Codex's own fallback kept 11,984 characters
/// of a 61,440-character result (2,500 tokens at the ~4.79 characters a
/// token its cuts show, docs/DELIVERY.md §1); real models carry their own
/// policy (gpt-5.5: 10,000 tokens). The smallest seen is the default.
pub const CODEX_DEFAULT_BUDGET_TOKENS: u64 = 2_500;
/// Bytes per 1,000 tokens of budget that a result may have and still count
/// as whole: the largest ratio verified whole (10,240 bytes arrived whole
/// under the 2,500-token fallback). Codex's cuts keep ~4,790 bytes per
/// 1,000 tokens; anything between is unverified and counts as cut.
pub const CODEX_WHOLE_BYTES_PER_1000_TOKENS: u64 = 4_096;
/// Cursor and CodeBuddy: what their hooks show is the server's copy, and
/// what the model receives of a large result is not verified. A result
/// counts as whole only up to this size: the conservative rule.
pub const UNVERIFIED_HOST_CAP_BYTES: u64 = 10_000;
/// Deliveries are kept this long (a conversation's context outlives the
/// 2 h of the slot); older ones are forgotten, which only means "deliver".
pub const DELIVERY_KEEP_MS: u64 = 24 * 60 * 60 * 1000;
/// At most this many keys (scope and key) keep deliveries through a trim:
/// those with the newest live ones (src/state/journal/trim.rs).
pub const MAX_DELIVERIES: usize = 512;
/// At most this many deliveries of one key (scope and key) survive a trim:
/// the newest of each window, the copies before it a rewind steps back to,
/// a diff's bases, and everything between (a trim keeps no gap).
pub const MAX_KEY_DELIVERIES: usize = 24;
/// At most this many deliveries survive a trim in all.
pub const MAX_KEPT_DELIVERIES: usize = 2048;
/// At most this many compaction records a trim keeps for the deliveries it
/// keeps (each after a kept delivery of its conversation); a
/// conversation's deliveries before one that does not fit are dropped.
pub const MAX_KEPT_COMPACTIONS: usize = 512;
/// The longest chain of diffs a stub may rest on (a diff against a diff
/// against …); a longer one withholds, and a trim keeps no more of it.
pub const MAX_BASE_CHAIN: usize = 8;

/// Withdrawn deliveries a stub question steps back over, at most, to an
/// earlier copy of the same version (docs/DELIVERY.md §8, "A rewind that
/// leaves an earlier copy"); a journal trim keeps that many deliveries
/// before each kept one.
pub const MAX_STEP_BACK: usize = 4;

/// Why a `--result`, key or version was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputError {
    /// A name (`--key`, `--version`) is empty.
    Empty(&'static str),
    /// A name is longer than the limit (its name, the limit).
    TooLong(&'static str, usize),
    /// The result is not an MCP result (why).
    NotAResult(String),
    /// The result is an error (`isError`): it delivers no content.
    ErrorResult,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Empty(what) => write!(f, "{what} is empty"),
            InputError::TooLong(what, n) => write!(f, "{what} is {n} bytes, longer than {MAX_KEY_BYTES}"),
            InputError::NotAResult(why) => write!(f, "--result is not an MCP tools/call result: {why}"),
            InputError::ErrorResult => {
                write!(f, "--result is an error result (isError: true): it delivers no content to stub later")
            }
        }
    }
}

impl std::error::Error for InputError {}

/// Check a `--key` or `--version` value: 1 to [`MAX_KEY_BYTES`] bytes.
pub fn check_name(what: &'static str, s: &str) -> Result<(), InputError> {
    if s.is_empty() {
        return Err(InputError::Empty(what));
    }
    if s.len() > MAX_KEY_BYTES {
        return Err(InputError::TooLong(what, s.len()));
    }
    Ok(())
}

/// What a result shows, as one text, and its digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Content {
    /// BLAKE3 of the text, 32 hex digits.
    pub digest: String,
    /// Length of the text in bytes.
    pub len: u64,
}

impl Content {
    /// The digest and length of a text, as if it were a result's only content.
    pub fn of_text(text: &str) -> Content {
        Content { digest: hex32(blake3::hash(text.as_bytes()).as_bytes()), len: text.len() as u64 }
    }
}

/// The text of a list of MCP content blocks: each `text` block's text,
/// every other block (image, resource) as canonical JSON, joined by a
/// newline. The same rule on both sides (what the server sent, what the
/// host says the model got) gives the same digest exactly when the model
/// got the same blocks.
/// Hashed as it goes: the text is never copied out of the parsed JSON (a
/// 60 KB result arrives on every `PostToolBatch` that carries one).
fn blocks_content(blocks: &[Value]) -> Content {
    let mut h = blake3::Hasher::new();
    let mut len = 0u64;
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            h.update(b"\n");
            len += 1;
        }
        match (b.get("type").and_then(Value::as_str), b.get("text").and_then(Value::as_str)) {
            (Some("text"), Some(t)) => {
                h.update(t.as_bytes());
                len += t.len() as u64;
            }
            _ => {
                let j = canonical_json(b);
                h.update(j.as_bytes());
                len += j.len() as u64;
            }
        }
    }
    Content { digest: hex32(h.finalize().as_bytes()), len }
}

/// A result's `structuredContent`, when it has one (`null` is none).
fn structured(obj: &serde_json::Map<String, Value>) -> Option<&Value> {
    obj.get("structuredContent").filter(|v| !v.is_null())
}

/// The content blocks are one text block holding exactly the JSON value
/// `sc` (any spacing or key order): what the model gets of either is the same.
fn same_json(blocks: &[Value], sc: &Value) -> bool {
    match blocks {
        [b] if b.get("type").and_then(Value::as_str) == Some("text") => b
            .get("text")
            .and_then(Value::as_str)
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .is_some_and(|v| canonical_json(&v) == canonical_json(sc)),
        _ => false,
    }
}

/// The first 16 bytes of a digest as 32 lower-case hex digits.
pub(crate) fn hex32(d: &[u8]) -> String {
    hex32_str(&mut [0; 32], d).to_string()
}

/// [`hex32`] written into `buf` (no allocation), two digits a byte from
/// one table: a stub question writes a few seals.
pub(crate) fn hex32_str<'b>(buf: &'b mut [u8; 32], d: &[u8]) -> &'b str {
    const PAIRS: [[u8; 2]; 256] = {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut t = [[0u8; 2]; 256];
        let mut b = 0;
        while b < 256 {
            t[b] = [HEX[b >> 4], HEX[b & 15]];
            b += 1;
        }
        t
    };
    for (o, &b) in buf.chunks_exact_mut(2).zip(&d[..16]) {
        o.copy_from_slice(&PAIRS[b as usize]);
    }
    std::str::from_utf8(buf).expect("hex digits are ASCII")
}

/// The server's side: a `tools/call` result as the server returns it — the
/// `result` object (`{"content": [...]}`) or the whole JSON-RPC response
/// (`{"jsonrpc", "id", "result": {...}}`). Anything else is refused: a
/// delivery is recorded only for what is certainly a result. The digest is
/// of the content (what a stub stands in for); with `structuredContent`
/// beside it, which is all the model gets, it can be confirmed only when the
/// content is that same JSON.
pub fn sent_content(v: &Value) -> Result<Content, InputError> {
    let result = match v.get("result") {
        Some(r) if v.get("jsonrpc").is_some() || v.get("id").is_some() => r,
        _ => v,
    };
    let Some(obj) = result.as_object() else {
        return Err(InputError::NotAResult("not a JSON object".into()));
    };
    if obj.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(InputError::ErrorResult);
    }
    match obj.get("content") {
        Some(Value::Array(blocks)) => Ok(match structured(obj) {
            // The model gets only the serialised `structuredContent`
            // (docs/DELIVERY.md §7). It got this result's content only when
            // that content *is* the same JSON (MCP asks servers to send it
            // as a text block too): then both sides digest its canonical
            // form. Otherwise the content's own digest, which no host's
            // acknowledgement (of the structured part) will match.
            Some(sc) if same_json(blocks, sc) => Content::of_text(&canonical_json(sc)),
            _ => blocks_content(blocks),
        }),
        Some(_) => Err(InputError::NotAResult("\"content\" is not a list of blocks".into())),
        None if v.get("error").is_some() => Err(InputError::NotAResult("a JSON-RPC error response".into())),
        None => Err(InputError::NotAResult("no \"content\"".into())),
    }
}

/// The host's side: what a hook payload says a tool returned, in any of the
/// shapes hosts use — a string (Claude's `<persisted-output>` preview, or
/// the serialised `structuredContent`), a list of blocks (Claude),
/// `{"content": [...]}` (Codex, Cursor's `result_json`), or a JSON string
/// holding one of those (Cursor). A result with `structuredContent` counts as
/// that, canonical: what Codex and Claude Code give the model (unverified
/// elsewhere, where it can only withhold more). `None` for an error result;
/// an unknown shape hashes its canonical JSON, which matches no delivery.
pub fn received_content(v: &Value) -> Option<Content> {
    match v {
        Value::String(s) => {
            // Cursor sends results as JSON text; Claude's preview is plain text.
            if s.starts_with('{')
                && let Ok(inner @ Value::Object(_)) = serde_json::from_str::<Value>(s)
            {
                return received_content(&inner);
            }
            Some(Content::of_text(s))
        }
        Value::Array(blocks) => Some(blocks_content(blocks)),
        Value::Object(o) => {
            if o.get("isError").and_then(Value::as_bool) == Some(true) {
                return None;
            }
            // Codex's `PostToolUse` shows the server's copy, but the model got
            // only the serialised `structuredContent` (docs/DELIVERY.md §7).
            if let Some(sc) = structured(o) {
                return Some(Content::of_text(&canonical_json(sc)));
            }
            match o.get("content") {
                Some(Value::Array(blocks)) => Some(blocks_content(blocks)),
                _ => Some(Content::of_text(&canonical_json(v))),
            }
        }
        _ => None,
    }
}

/// How a call is named in `D` and `A` records: the host's call id where the
/// MCP request carries it (Claude `claudecode/toolUseId`, Codex `callId`),
/// else the tool and argument fingerprint (Cursor, CodeBuddy), which only
/// matches within one conversation.
pub fn id_ref(call_id: &str) -> String {
    // Not `format!`: asked at every stub question, and its formatting
    // machinery cost several times the copy.
    let mut r = String::with_capacity(3 + call_id.len());
    r.push_str("id:");
    r.push_str(call_id);
    r
}

/// The reference of a call known only by its tool and argument fingerprint.
pub fn fp_ref(tool: &str, fp: &str) -> String {
    let mut h = sha256_hex(format!("{tool}\0{fp}").as_bytes());
    h.truncate(32);
    format!("fp:{h}")
}

/// The window of Claude Code host process `pid` (`proc:<pid>`), the form
/// [`pid_of_window`] reads.
pub fn proc_window(pid: u32) -> String {
    let mut w = String::with_capacity(15);
    w.push_str("proc:");
    w.push_str(itoa::Buffer::new().format(pid));
    w
}

/// The Claude Code host process a delivery's window names (`proc:<pid>`).
pub fn pid_of_window(w: &str) -> Option<u32> {
    w.strip_prefix("proc:").and_then(pid_digits)
}

/// A host process id as the journal writes it after its prefix (a window's
/// `proc:`, a reach's `proc:` and `process:`): digits only, not 0 (`+7`,
/// which `u32::from_str` takes, is not one).
pub fn pid_digits(digits: &str) -> Option<u32> {
    // A digit loop: `str::parse` and a second pass cost ~100 instructions,
    // and a stub question reads a window's pid five times or so.
    if digits.is_empty() {
        return None;
    }
    let mut p: u32 = 0;
    for b in digits.bytes() {
        if !b.is_ascii_digit() {
            return None;
        }
        p = p.checked_mul(10)?.checked_add(u32::from(b - b'0'))?;
    }
    (p > 0).then_some(p)
}

/// A fingerprint ref names a call only within its scope.
pub fn ref_needs_conv(r: &str) -> bool {
    r.starts_with("fp:")
}

/// A delivery record (`D`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Delivery<'a> {
    /// When it was recorded (unix ms).
    pub t: u64,
    /// The host of the call.
    pub host: Host,
    /// The top-level conversation.
    pub conv: &'a str,
    /// The scope stubs are keyed by (`conv`, `agent:<id>`, …).
    pub scope: &'a str,
    /// Codex `_meta.windowId`.
    pub window: Option<&'a str>,
    /// The call it was delivered on (`id:…` or `fp:…`).
    #[serde(rename = "ref")]
    pub call_ref: &'a str,
    /// The key and version as [`Secret::name`](crate::state::secret::Secret::name)
    /// keys them.
    pub key: &'a str,
    /// The hash of the version.
    pub version: &'a str,
    /// BLAKE3 digest of the content sent.
    pub digest: &'a str,
    /// Length of the content sent, in bytes.
    pub len: u64,
    /// A diff: the hash of the version it is a diff against. It backs a
    /// stub only while a delivery of that version, before it, is still held
    /// (see [`crate::identity::delivery`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<&'a str>,
}

impl Delivery<'_> {
    /// Whether this is a delivery of `key` to `scope` (of `version`, when
    /// given): the one rule the journal's views and the digest's index
    /// look deliveries up by.
    pub fn is_of(&self, scope: &str, key: &str, version: Option<&str>) -> bool {
        self.scope == scope && self.key == key && version.is_none_or(|v| self.version == v)
    }
}

/// An acknowledgement record (`A`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ack<'a> {
    /// When the hook saw it (unix ms).
    pub t: u64,
    /// The host whose hook acknowledged it.
    pub host: Host,
    /// The scope of the acknowledging hook (its conversation, or the
    /// subagent's `agent:`/`task:` scope): a fingerprint names a call only
    /// within one scope (a subagent of the same session may make the same
    /// call and must not confirm the main agent's delivery).
    pub scope: &'a str,
    /// The call it acknowledges (`id:…` or `fp:…`).
    #[serde(rename = "ref")]
    pub call_ref: &'a str,
    /// BLAKE3 digest of what the model got.
    pub digest: &'a str,
    /// Length of what the model got, in bytes.
    pub len: u64,
    /// The host's rule says the model got it whole (size within budget).
    pub whole: bool,
}

/// How a host's hook tells whether the model got a result whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SizeRule {
    /// The hook shows what the model got (Claude `PostToolBatch`): the digest
    /// comparison decides.
    Shown,
    /// Codex: whole iff within the output budget ([`codex_whole`]).
    CodexBudget,
    /// Unverified hosts: whole iff at most this many bytes.
    Cap(u64),
}

/// An acknowledgement a hook saw, before it is journaled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AckOut {
    /// The call acknowledged.
    pub call_ref: String,
    /// What the model got.
    pub content: Content,
    /// How to tell whether it was whole.
    pub rule: SizeRule,
}

impl AckOut {
    /// Whole under its rule, given Codex's budget in tokens.
    pub fn whole(&self, codex_budget_tokens: u64) -> bool {
        match self.rule {
            SizeRule::Shown => true,
            SizeRule::CodexBudget => codex_whole(self.content.len, codex_budget_tokens),
            SizeRule::Cap(cap) => self.content.len <= cap,
        }
    }
}

/// How the newest delivery stands with its host, for `--json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confirmation {
    /// The host acknowledged this very content, whole.
    Whole,
    /// The host acknowledged the call with other content (a preview, an
    /// error string in place of the result).
    DifferentContent,
    /// The host acknowledged this content but its size rule says cut.
    Cut,
    /// No acknowledgement (yet): interrupted, a hook that did not fire, or a
    /// host that never confirms.
    None,
}

/// The acknowledgement standing of a delivery.
pub fn confirmation(d: &Delivery<'_>, acks_after: &[Ack<'_>]) -> Confirmation {
    let mine =
        acks_after.iter().filter(|a| a.call_ref == d.call_ref && (!ref_needs_conv(d.call_ref) || a.scope == d.scope));
    let mut best = Confirmation::None;
    for a in mine {
        let c = match (a.digest == d.digest && a.len == d.len, a.whole) {
            (true, true) => return Confirmation::Whole,
            (true, false) => Confirmation::Cut,
            (false, _) => Confirmation::DifferentContent,
        };
        if best != Confirmation::Cut {
            best = c;
        }
    }
    best
}

/// Codex: is a result of `len` bytes shown whole under a budget of
/// `budget_tokens`?
pub fn codex_whole(len: u64, budget_tokens: u64) -> bool {
    len <= budget_tokens.saturating_mul(CODEX_WHOLE_BYTES_PER_1000_TOKENS) / 1000
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// Every byte value, two lower-case digits; the first 16 bytes only.
    #[test]
    fn hex32_is_the_first_16_bytes_in_lower_case() {
        let bytes: Vec<u8> = (0..=255u8).collect();
        for d in bytes.chunks(16).chain([[0u8; 16].as_slice(), [255u8; 20].as_slice()]) {
            let want: String = d[..16].iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex32(d), want);
        }
    }

    /// A window names a process the way a reach does: digits only, not 0.
    #[test]
    fn a_window_names_a_process_by_digits_only() {
        #[rustfmt::skip]
        let rows = [
            ("proc:7", Some(7)), ("proc:4294967295", Some(u32::MAX)),
            ("proc:+7", None), ("proc:0", None), ("proc:", None), ("proc:7x", None),
            ("proc:99999999999", None), ("process:7", None), ("fp:7", None),
        ];
        for (w, want) in rows {
            assert_eq!(pid_of_window(w), want, "{w}");
        }
        // As `str::parse` with digits only: leading zeros, overflow, signs.
        let parsed = |d: &str| d.parse::<u32>().ok().filter(|&p| p > 0 && d.bytes().all(|b| b.is_ascii_digit()));
        for d in [
            "",
            "0",
            "00",
            "1",
            "007",
            "00000000000042",
            "4294967295",
            "4294967296",
            "9999999999",
            "+1",
            "-1",
            "1 ",
            " 1",
            "1a",
            "٣",
        ] {
            assert_eq!(pid_digits(d), parsed(d), "{d:?}");
        }
        // Written as it is read, as `format!` wrote it.
        for p in [1, 7, 10, 4242, u32::MAX] {
            assert_eq!(proc_window(p), format!("proc:{p}"));
            assert_eq!(pid_of_window(&proc_window(p)), Some(p));
        }
        assert_eq!(id_ref("toolu_1"), "id:toolu_1");
    }

    pub(crate) fn d<'a>(version: &'a str, window: Option<&'a str>, digest: &'a str) -> Delivery<'a> {
        Delivery {
            t: 1,
            host: Host::ClaudeCode,
            conv: "S",
            scope: "S",
            window,
            call_ref: "id:c1",
            key: "K",
            version,
            digest,
            len: 10,
            base: None,
        }
    }

    pub(crate) fn ack<'a>(r: &'a str, scope: &'a str, digest: &'a str, len: u64, whole: bool) -> Ack<'a> {
        Ack { t: 2, host: Host::ClaudeCode, scope, call_ref: r, digest, len, whole }
    }

    #[test]
    fn a_delivery_is_of_its_scope_and_key_and_version() {
        let dl = d("v1", None, "dg");
        for (scope, key, version, want) in [
            ("S", "K", None, true),
            ("S", "K", Some("v1"), true),
            ("S", "K", Some("v2"), false),
            ("T", "K", None, false),
            ("S", "L", Some("v1"), false),
        ] {
            assert_eq!(dl.is_of(scope, key, version), want, "{scope} {key} {version:?}");
        }
    }

    #[test]
    fn fingerprint_refs_match_only_in_their_conversation() {
        let mut dl = d("v1", None, "dg");
        dl.call_ref = "fp:abc";
        assert_eq!(confirmation(&dl, &[ack("fp:abc", "T", "dg", 10, true)]), Confirmation::None);
        assert_eq!(confirmation(&dl, &[ack("fp:abc", "S", "dg", 10, true)]), Confirmation::Whole);
        assert_eq!(confirmation(&dl, &[ack("fp:abc", "S", "dg", 10, false)]), Confirmation::Cut);
        assert_eq!(confirmation(&dl, &[ack("fp:abc", "S", "zz", 10, true)]), Confirmation::DifferentContent);
    }

    #[test]
    fn sent_and_received_agree_on_every_host_shape() {
        let blocks =
            json!([{"type": "text", "text": "hello"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}]);
        let sent = sent_content(&json!({"content": blocks})).unwrap();
        let rpc = sent_content(&json!({"jsonrpc": "2.0", "id": 7, "result": {"content": blocks}})).unwrap();
        assert_eq!(sent, rpc);
        // Claude PostToolBatch: the list of blocks; Codex: {content, isError}; Cursor: JSON text.
        assert_eq!(received_content(&blocks).unwrap(), sent);
        assert_eq!(received_content(&json!({"content": blocks, "isError": false})).unwrap(), sent);
        let cursor = Value::String(json!({"content": blocks}).to_string());
        assert_eq!(received_content(&cursor).unwrap(), sent);
        // A preview is other text.
        assert_ne!(received_content(&json!("<persisted-output>\nOutput too large")).unwrap(), sent);
        let one = sent_content(&json!({"content": [{"type": "text", "text": "abc"}]})).unwrap();
        assert_eq!(one, Content::of_text("abc"));
        assert_eq!(received_content(&json!("abc")).unwrap(), one);
    }

    /// docs/DELIVERY.md §7: with `structuredContent`, Codex and Claude Code
    /// give the model only its serialisation, whatever `content` holds.
    #[test]
    fn structured_content_is_what_the_model_gets() {
        let file = json!([{"type": "text", "text": "MARK-START the file's text"}]);
        let sc = json!({"path": "a", "bytes": 3000});
        let server = json!({"content": file, "isError": false, "structuredContent": sc});
        let sent = sent_content(&server).unwrap();
        // Codex PostToolUse shows the server's copy; Claude PostToolBatch the string the model got.
        let codex = received_content(&server).unwrap();
        let claude = received_content(&json!("{\"path\":\"a\",\"bytes\":3000}")).unwrap();
        assert_eq!(codex, claude);
        assert_eq!(codex, Content::of_text(r#"{"bytes":3000,"path":"a"}"#));
        // The file's text never reached the model: the delivery is not confirmed.
        assert_eq!(sent, sent_content(&json!({ "content": file })).unwrap());
        assert_ne!(sent, codex);
        // Content that is the same JSON (any spacing, any key order) is what the model got.
        let echo = json!([{"type": "text", "text": "{\"path\": \"a\", \"bytes\": 3000}"}]);
        let both = sent_content(&json!({"content": echo, "structuredContent": sc})).unwrap();
        assert_eq!((&both, &both), (&codex, &claude));
        // Other JSON, two blocks, or a non-text block: not the same.
        for content in [
            json!([{"type": "text", "text": "{\"path\": \"a\", \"bytes\": 3001}"}]),
            json!([{"type": "text", "text": "{\"path\":\"a\",\"bytes\":3000}"}, {"type": "text", "text": ""}]),
            json!([{"type": "image", "text": "{\"path\":\"a\",\"bytes\":3000}"}]),
            json!([{"type": "text", "text": "not json"}]),
        ] {
            assert_ne!(
                sent_content(&json!({"content": content, "structuredContent": sc})).unwrap(),
                codex,
                "{content}"
            );
        }
        // `null` is no structured content.
        let null = json!({"content": file, "structuredContent": null});
        assert_eq!(sent_content(&null).unwrap(), sent);
        assert_eq!(received_content(&null).unwrap(), sent);
        assert!(received_content(&json!({"isError": true, "structuredContent": sc})).is_none());
    }

    #[test]
    fn bad_results_are_refused() {
        for (v, want) in [
            (json!("text"), "not a JSON object"),
            (json!([1]), "not a JSON object"),
            (json!({"content": "x"}), "not a list"),
            (json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -1}}), "error response"),
            (json!({"foo": 1}), "no \"content\""),
        ] {
            let e = sent_content(&v).unwrap_err().to_string();
            assert!(e.contains(want), "{v}: {e}");
        }
        assert_eq!(sent_content(&json!({"content": [], "isError": true})), Err(InputError::ErrorResult));
        assert!(received_content(&json!({"content": [], "isError": true})).is_none());
        assert!(check_name("--key", "").is_err());
        assert!(check_name("--key", &"x".repeat(MAX_KEY_BYTES + 1)).is_err());
        assert!(check_name("--key", &"x".repeat(MAX_KEY_BYTES)).is_ok());
    }

    #[test]
    fn the_text_rule_exactly() {
        // Blocks joined by one newline; a non-text block as canonical JSON.
        let blocks =
            json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}, {"type": "image", "data": "x"}]);
        let want = Content::of_text("a\nb\n{\"data\":\"x\",\"type\":\"image\"}");
        assert_eq!(received_content(&blocks).unwrap(), want);
        assert_eq!(sent_content(&json!({"content": blocks})).unwrap(), want);
        assert_eq!(want.len, 31);
        assert_eq!(want.digest, blake3::hash(b"a\nb\n{\"data\":\"x\",\"type\":\"image\"}").to_hex()[..32]);
        // A JSON-RPC response is unwrapped whether it says `jsonrpc` or only `id`;
        // a result that merely has a `result` field is not.
        let inner = json!({"content": [{"type": "text", "text": "in"}]});
        assert_eq!(sent_content(&json!({"id": 4, "result": inner})).unwrap(), Content::of_text("in"));
        assert_eq!(sent_content(&json!({"jsonrpc": "2.0", "result": inner})).unwrap(), Content::of_text("in"));
        let own = json!({"content": [{"type": "text", "text": "own"}], "result": inner});
        assert_eq!(sent_content(&own).unwrap(), Content::of_text("own"));
    }

    #[test]
    fn each_size_rule() {
        let ack = |len, rule| AckOut { call_ref: "id:1".into(), content: Content { digest: "d".into(), len }, rule };
        assert!(ack(1 << 30, SizeRule::Shown).whole(0));
        assert!(ack(10_240, SizeRule::CodexBudget).whole(2_500));
        assert!(!ack(10_241, SizeRule::CodexBudget).whole(2_500));
        assert!(ack(40_960, SizeRule::CodexBudget).whole(10_000));
        assert!(ack(10_000, SizeRule::Cap(10_000)).whole(0));
        assert!(!ack(10_001, SizeRule::Cap(10_000)).whole(u64::MAX));
    }

    #[test]
    fn refs_and_bounds_as_documented() {
        assert_eq!(id_ref("toolu_1"), "id:toolu_1");
        assert!(fp_ref("t", "f").starts_with("fp:") && fp_ref("t", "f").len() == 35);
        assert!(ref_needs_conv("fp:x") && !ref_needs_conv("id:x"));
        // README's bounds: 16 MiB results, 4 KiB keys, 24 h, 512 deliveries, 10,000 bytes.
        assert_eq!(MAX_RESULT_BYTES, 16 << 20);
        assert_eq!(MAX_KEY_BYTES, 4096);
        assert_eq!(DELIVERY_KEEP_MS, 86_400_000);
        assert_eq!((MAX_DELIVERIES, UNVERIFIED_HOST_CAP_BYTES), (512, 10_000));
    }

    #[test]
    fn refs_are_hashed_and_distinct() {
        assert_eq!(fp_ref("ctx_read", "ab"), fp_ref("ctx_read", "ab"));
        assert_ne!(fp_ref("ctx_read", "ab"), fp_ref("ctx_outline", "ab"));
    }
}
