//! The pure part of the witness: what one transcript line says, and what
//! the facts seen so far withdraw. No files, no clock: table-tested.
//!
//! The lines (Claude Code 2.1.328, measured offline; docs/DELIVERY.md §8,
//! fixtures in tests/fixtures/payloads/withdrawal/):
//! - `{"type":"attachment","attachment":{"type":"tool_results_cut","callIds":[…]}}`:
//!   the idle cut replaced those exact tool results with a placeholder;
//! - an assistant line whose `message.context_management.applied_edits`
//!   holds `clear_tool_uses_20250919`: the API cleared the oldest results,
//!   by count (which ones is not said), so every earlier delivery ends;
//! - `{"type":"last-prompt","rewound":true,"cutUuid":U}`: a rewind to the
//!   user message `U`; everything after it is gone from the context;
//! - `{"type":"system","subtype":"compact_boundary"}`: a compaction, whose
//!   hook may have been lost. With `"isSidechain":false` and no `agentId`
//!   it is the main thread's (a subagent writes its own boundary to its own
//!   transcript, `<session>/subagents/agent-<id>.jsonl`, docs/DELIVERY.md
//!   §8, "Subagents and compaction"): a subagent's context keeps its
//!   results.
//!
//! To place a rewind, the witness keeps where each prompt and each MCP
//! tool use was seen (uuids, tool-use ids and byte offsets; never content).

use super::ids::Ids;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Prompts remembered to place a rewind's cut (the newest).
pub const MAX_PROMPTS: usize = 256;
/// MCP tool uses remembered to know which a rewind removed (the newest).
pub const MAX_TOOL_USES: usize = 2048;
/// Withdrawn call ids remembered (the newest). An id pushed out would make
/// its delivery look present again, so overflowing ends every delivery.
pub const MAX_WITHDRAWN: usize = 4096;

/// What one transcript line says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fact {
    /// Nothing the witness needs.
    Nothing,
    /// Not a JSON object: the transcript cannot be read, so nothing in it
    /// can be ruled out.
    NotJson,
    /// `tool_results_cut`: these tool-use ids were withdrawn.
    Cut(Vec<String>),
    /// The API cleared an unnamed number of earlier results.
    Cleared,
    /// A rewind to the user message with this uuid (none: not said).
    Rewound(Option<String>),
    /// A compaction; `main`: the line says it is the main thread's
    /// (`isSidechain` false, no `agentId`), else whose is not known;
    /// `uuid`: the boundary line's, which its summary line names as parent.
    Compacted { main: bool, uuid: Option<String> },
    /// The summary a compaction writes right under its boundary (a user
    /// line with `"isCompactSummary":true`, whose `parentUuid` is the
    /// boundary's `uuid`), with the `promptId` the compacting host process
    /// writes on its user lines: its current prompt, the one its hooks name
    /// (`prompt_id`). Also a user line (a rewind's possible cut point).
    Summary { uuid: String, parent: Option<String>, prompt_id: Option<String> },
    /// A user prompt (a rewind's possible cut point).
    Prompt(String),
    /// The assistant called these MCP tools (their tool-use ids).
    ToolUses(Vec<String>),
    /// An assistant line, classified as such only while an idle return is
    /// [`Pending`]: the MCP tool uses it holds, and what its
    /// `message.context_management` says the host did to the request it
    /// answers: `cut`, its `client_cut_tool_uses` (results the client's cut
    /// records replaced in it; 0 when absent or null), and `edit`, whether
    /// a clearing edit was sent to the API (`client_sent_*` fields).
    Answer { tool_uses: Vec<String>, cut: u64, edit: bool },
}

/// Which markers a line holds, found in one pass over its quotes (a
/// marker starts with a quote; a 100 KB tool result has few unescaped
/// ones), not one scan of the line per marker.
#[derive(Default)]
struct Marks {
    cut: bool,
    clear: bool,
    applied: bool,
    rewound: bool,
    compacted: bool,
    summary: bool,
    replay: bool,
    user: bool,
    tool_result: bool,
    tool_use: bool,
    mcp: bool,
    assistant: bool,
}

fn marks(line: &[u8]) -> Marks {
    let mut m = Marks::default();
    for i in crate::base::bytes::positions(b'"', line) {
        let r = &line[i..];
        match r.get(1) {
            Some(b't') => {
                m.cut |= r.starts_with(b"\"tool_results_cut\"");
                m.tool_result |= r.starts_with(b"\"tool_result\"");
                m.tool_use |= r.starts_with(b"\"tool_use\"");
            }
            Some(b'c') => {
                m.clear |= r.starts_with(b"\"clear_tool_uses_20250919\"");
                m.compacted |= r.starts_with(b"\"compact_boundary\"");
            }
            Some(b'a') => {
                m.applied |= r.starts_with(b"\"applied_edits\"");
                m.replay |= r.starts_with(b"\"api-request");
                m.assistant |= r.starts_with(b"\"assistant\"");
            }
            Some(b'r') => m.rewound |= r.starts_with(b"\"rewound\""),
            Some(b'i') => m.summary |= r.starts_with(b"\"isCompactSummary\""),
            Some(b'u') => m.user |= r.starts_with(b"\"user\""),
            Some(b'm') => m.mcp |= r.starts_with(b"\"mcp__"),
            _ => {}
        }
    }
    m
}

/// Classify one complete line (without its newline). Only lines that carry
/// one of the markers are parsed: a 100 KB tool result is scanned, never
/// parsed. A marker inside a string is escaped (`\"`), so a quoted marker
/// is JSON structure.
pub fn classify(line: &[u8]) -> Fact {
    classify_in(line, false)
}

/// [`classify`], with assistant lines as [`Fact::Answer`] when `answers`
/// (an idle return is pending; parsed only then, so the hot path does not
/// parse every answer).
pub fn classify_in(line: &[u8], answers: bool) -> Fact {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Fact::Nothing;
    }
    if line.first() != Some(&b'{') || line.last() != Some(&b'}') {
        return Fact::NotJson;
    }
    // Lines without a marker are never parsed (a 100 KB result would cost
    // more than the question), but bytes JSON text never holds are seen:
    // a NUL (a crash's unwritten block) or invalid UTF-8. One pass says
    // whether the line has a control character or a byte over 0x7f, and
    // only then are those looked at closely.
    let (ctrl, high) = ctrl_and_high(line);
    if (ctrl && crate::base::bytes::find(0, line).is_some()) || (high && std::str::from_utf8(line).is_err()) {
        return Fact::NotJson;
    }
    let m = marks(line);
    let (cut, cleared, rewound, compacted) = (m.cut, m.clear && m.applied, m.rewound, m.compacted);
    // A prompt: a user line with no tool result in it; a tool use: an
    // assistant line naming an MCP tool. Request replays (`api-request*`)
    // repeat both and are not the conversation.
    let prompt = !m.replay && m.user && !m.tool_result;
    let tool = !m.replay && m.tool_use && m.mcp;
    let answer = answers && !m.replay && m.assistant;
    if !(cut || cleared || rewound || compacted || prompt || tool || answer) {
        return Fact::Nothing;
    }
    if prompt && !(cut || cleared || rewound || compacted || tool || answer || m.summary) {
        // By hand where it can answer (no control character), else serde.
        return (!ctrl).then(|| prompt::fact(line)).flatten().unwrap_or_else(|| prompt_of(line));
    }
    let Ok(v @ Value::Object(_)) = serde_json::from_slice::<Value>(line) else { return Fact::NotJson };
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let ty = s(&v, "type").unwrap_or_default();
    if cut
        && let Some(a) =
            v.get("attachment").filter(|a| a.get("type").and_then(Value::as_str) == Some("tool_results_cut"))
    {
        let ids = a.get("callIds").and_then(Value::as_array);
        return Fact::Cut(
            ids.map(|ids| ids.iter().filter_map(|i| i.as_str().map(str::to_string)).collect()).unwrap_or_default(),
        );
    }
    if cleared {
        let edits = v.pointer("/message/context_management/applied_edits").and_then(Value::as_array);
        if edits.is_some_and(|e| {
            e.iter().any(|e| e.get("type").and_then(Value::as_str) == Some("clear_tool_uses_20250919"))
        }) {
            return Fact::Cleared;
        }
    }
    if rewound && ty == "last-prompt" && v.get("rewound").and_then(Value::as_bool) == Some(true) {
        return Fact::Rewound(s(&v, "cutUuid"));
    }
    if compacted && ty == "system" && s(&v, "subtype").as_deref() == Some("compact_boundary") {
        let main = v.get("isSidechain") == Some(&Value::Bool(false)) && v.get("agentId").is_none();
        return Fact::Compacted { main, uuid: s(&v, "uuid") };
    }
    let blocks = v.pointer("/message/content");
    if prompt
        && ty == "user"
        && v.get("isCompactSummary") == Some(&Value::Bool(true))
        && let Some(u) = s(&v, "uuid")
    {
        return Fact::Summary { uuid: u, parent: s(&v, "parentUuid"), prompt_id: s(&v, "promptId") };
    }
    if prompt
        && ty == "user"
        && let Some(u) = s(&v, "uuid")
    {
        return Fact::Prompt(u);
    }
    if (tool || answer) && ty == "assistant" {
        let ids: Vec<String> = blocks
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
            .filter(|b| b.get("name").and_then(Value::as_str).is_some_and(|n| n.starts_with("mcp__")))
            .filter_map(|b| s(b, "id"))
            .collect();
        if answer {
            // Written by Claude Code on every answer once a cut or a
            // clearing edit is in force (docs/DELIVERY.md §8); null before.
            let cm = v.pointer("/message/context_management").and_then(Value::as_object);
            let cut = cm.and_then(|m| m.get("client_cut_tool_uses")).map_or(0, |c| c.as_u64().unwrap_or(u64::MAX));
            let edit = cm.is_some_and(|m| m.keys().any(|k| k.starts_with("client_sent_")));
            return Fact::Answer { tool_uses: ids, cut, edit };
        }
        if !ids.is_empty() {
            return Fact::ToolUses(ids);
        }
    }
    Fact::Nothing
}

/// Whether `line` has a byte under 0x20 and one over 0x7f: a fold with no
/// early exit, which the compiler makes a vector loop (std's `from_utf8`
/// and a NUL search were two passes of ~0.7 instructions a byte over every
/// line read; callgrind, benches/README.md).
fn ctrl_and_high(line: &[u8]) -> (bool, bool) {
    const W: usize = 32;
    let (mut lo, mut or) = ([u8::MAX; W], [0u8; W]);
    let mut chunks = line.chunks_exact(W);
    for c in &mut chunks {
        for j in 0..W {
            lo[j] = lo[j].min(c[j]);
            or[j] |= c[j];
        }
    }
    let (mut l, mut o) = (lo.into_iter().fold(u8::MAX, u8::min), or.into_iter().fold(0, |a, b| a | b));
    for &b in chunks.remainder() {
        l = l.min(b);
        o |= b;
    }
    (l < 0x20, o > 0x7f)
}

/// A line whose only marker is a prompt's: its `type` and `uuid` read, the
/// rest checked as JSON but not built (a prompt line can hold kilobytes of
/// text; building it as a map of values was most of a question's work).
/// A `type` or `uuid` that is not a string, or a key twice, reads as not
/// JSON (ends every delivery), where a built value would have ignored it.
fn prompt_of(line: &[u8]) -> Fact {
    use std::borrow::Cow;
    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(rename = "type", borrow)]
        ty: Option<Cow<'a, str>>,
        #[serde(borrow)]
        uuid: Option<Cow<'a, str>>,
    }
    match serde_json::from_slice::<Line<'_>>(line) {
        Ok(Line { ty: Some(t), uuid: Some(u) }) if t == "user" => Fact::Prompt(u.into_owned()),
        Ok(_) => Fact::Nothing,
        Err(_) => Fact::NotJson,
    }
}

/// The `promptId` of a prompt line (none: not there, or not a string).
/// Read only while a process's idle return waits for its prompt line
/// ([`super::idle::Return`]).
pub fn prompt_id_of(line: &[u8]) -> Option<String> {
    use std::borrow::Cow;
    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(rename = "promptId", borrow)]
        prompt_id: Option<Cow<'a, str>>,
    }
    serde_json::from_slice::<Line<'_>>(line.strip_suffix(b"\r").unwrap_or(line)).ok()?.prompt_id.map(Cow::into_owned)
}

/// An idle return (a prompt after the host's idle threshold) whose effect
/// the transcript has not shown yet. Claude Code writes, in this order, the
/// returning prompt, the `tool_results_cut` record of a cut made at its
/// turn's start, and the answer to the turn's first request, whose
/// `context_management` counts the cut results and names a clearing edit
/// sent to the API (docs/DELIVERY.md §8, "The idle return, provisional").
/// So once that answer is read the return is settled: its cut's exact ids
/// were withdrawn, a clearing or a cut not named ends everything, and
/// otherwise nothing was withdrawn. Until then, deliveries from before it
/// back no stub.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// The transcript's length when the prompt's hook ran: lines from here
    /// on were written after the return.
    pub from: u64,
    /// Unix ms of the returning prompt: deliveries before it are in doubt.
    pub at_ms: u64,
    /// The host process that returned.
    pub pid: u32,
    /// Its prompt hooks since `from` (the return's and any later one), and
    /// the prompt lines seen from `from` on: an answer before the last
    /// prompt's line is an earlier turn's (its queued write flushed late),
    /// which settles nothing (a later return's lines may still be queued).
    pub due: u32,
    pub seen: u32,
    /// A cut record was seen from `from` on (its ids are withdrawn).
    pub cut_seen: bool,
}

/// What the witness remembers of one conversation's transcript between
/// questions: ids and byte offsets only.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Track {
    /// Prompt uuids and where they were seen, oldest first.
    pub prompts: Ids<u64>,
    /// MCP tool-use ids and where they were seen, oldest first.
    pub tools: Ids<u64>,
    /// Tool-use ids the host withdrew.
    pub withdrawn: Ids<()>,
    /// An idle return not settled yet.
    #[serde(default)]
    pub pending: Option<Pending>,
}

/// What applying a fact means for the conversation's deliveries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing ends, or only the ids now in [`Track::withdrawn`].
    Some,
    /// Every delivery of the conversation so far ends.
    All,
    /// Every delivery of the conversation's main thread so far ends (not a
    /// subagent's: its context is its own).
    Main,
}

impl Track {
    /// Apply `fact`, seen on the line that starts at byte `at`.
    pub fn apply(&mut self, fact: Fact, at: u64) -> Effect {
        let effect = self.apply_fact(fact, at);
        if effect == Effect::All {
            // Every earlier delivery ends: the return is moot.
            self.pending = None;
        }
        effect
    }

    fn apply_fact(&mut self, fact: Fact, at: u64) -> Effect {
        let after = |p: &Option<Pending>| p.as_ref().is_some_and(|p| at >= p.from);
        match fact {
            Fact::Nothing => Effect::Some,
            Fact::NotJson | Fact::Cleared | Fact::Compacted { main: false, .. } => Effect::All,
            // An idle return still pending stays so: it may concern the
            // subagents' deliveries from before it too.
            Fact::Compacted { main: true, .. } => Effect::Main,
            Fact::Summary { uuid, .. } => self.apply_fact(Fact::Prompt(uuid), at),
            Fact::Cut(ids) => {
                if after(&self.pending)
                    && let Some(p) = self.pending.as_mut()
                {
                    p.cut_seen = true;
                }
                self.withdraw(ids)
            }
            Fact::Answer { tool_uses, cut, edit } => {
                let settles = after(&self.pending) && self.pending.as_ref().is_some_and(|p| p.seen >= p.due.max(1));
                let cut_seen = self.pending.as_ref().is_some_and(|p| p.cut_seen);
                let effect = self.apply_fact(Fact::ToolUses(tool_uses), at);
                if !settles {
                    return effect;
                }
                self.pending = None;
                // A clearing edit sent: the API may clear the oldest
                // results on any later request, by count. A cut counted
                // but not recorded after the return (or an older cut
                // still in force): which ids, the witness cannot say.
                if edit || (cut > 0 && !cut_seen) { Effect::All } else { effect }
            }
            Fact::Rewound(cut) => {
                // Only where the transcript shows the cut point: from that
                // prompt on. Unknown (not said, or older than remembered):
                // everything.
                let Some(from) = cut.and_then(|c| self.prompts.find(&c)) else {
                    self.prompts.clear();
                    return Effect::All;
                };
                let gone: Vec<String> =
                    self.tools.iter().filter(|(_, o)| *o > from).map(|(i, _)| i.to_owned()).collect();
                self.prompts.retain(|_, o| o < from);
                self.withdraw(gone)
            }
            Fact::Prompt(u) => {
                if after(&self.pending)
                    && let Some(p) = self.pending.as_mut()
                {
                    p.seen = p.seen.saturating_add(1);
                }
                self.prompts.push_bounded(&u, at, MAX_PROMPTS);
                Effect::Some
            }
            Fact::ToolUses(ids) => {
                for i in ids {
                    self.tools.push_bounded(&i, at, MAX_TOOL_USES);
                }
                Effect::Some
            }
        }
    }

    fn withdraw(&mut self, ids: Vec<String>) -> Effect {
        for i in ids {
            if !self.withdrawn.contains(&i) {
                self.withdrawn.push_back(&i, ());
            }
        }
        if self.withdrawn.len() > MAX_WITHDRAWN {
            // Forgetting an id would bring its delivery back: end them all
            // instead (the ids are then moot).
            self.withdrawn.clear();
            return Effect::All;
        }
        Effect::Some
    }

    /// Was the result of this tool-use id withdrawn?
    pub fn is_withdrawn(&self, call_id: &str) -> bool {
        self.withdrawn.contains(call_id)
    }

    /// Has the transcript caught up with the asking call, pure? Claude Code
    /// writes its transcript through one queue per file, drained every
    /// 100 ms, in the order the lines were queued (docs/DELIVERY.md §8,
    /// "The race"), so a rewind's record, queued before the next prompt,
    /// is on disk once a later line is. The asking call's own tool use is
    /// the latest line it can name: queued before the call is made, and
    /// after every withdrawal that could concern it. `None`: the call has
    /// no such line to wait for (not an MCP call of the main agent), as
    /// before.
    pub fn caught_up(&self, asking: Option<&str>) -> bool {
        asking.is_none_or(|id| self.tools.iter().rev().any(|(t, _)| t == id))
    }

    /// Where the line of this MCP tool use starts, if it was seen.
    pub fn tool_at(&self, id: &str) -> Option<u64> {
        self.tools.iter().rev().find(|(t, _)| *t == id).map(|(_, o)| o)
    }

    /// The transcript was replaced or cannot be followed: what is
    /// remembered of positions no longer holds (every delivery ends too).
    pub fn reset_positions(&mut self) {
        self.prompts.clear();
        self.tools.clear();
    }
}

mod prompt;
#[cfg(test)]
mod tests;
