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
//!   hook may have been lost.
//!
//! To place a rewind, the witness keeps where each prompt and each MCP
//! tool use was seen (uuids, tool-use ids and byte offsets; never content).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::VecDeque;

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
    /// A compaction.
    Compacted,
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
    replay: bool,
    user: bool,
    tool_result: bool,
    tool_use: bool,
    mcp: bool,
    assistant: bool,
}

fn marks(line: &[u8]) -> Marks {
    let mut m = Marks::default();
    for i in memchr::memchr_iter(b'"', line) {
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
    // a NUL (a crash's unwritten block) or invalid UTF-8. Both are cheap
    // passes next to the quote scan.
    if memchr::memchr(0, line).is_some() || std::str::from_utf8(line).is_err() {
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
        return Fact::Compacted;
    }
    let blocks = v.pointer("/message/content");
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

/// An idle return (a prompt after the host's idle threshold) whose effect
/// the transcript has not shown yet. Claude Code writes, in this order, the
/// returning prompt, the `tool_results_cut` record of a cut made at its
/// turn's start, and the answer to the turn's first request, whose
/// `context_management` counts the cut results and names a clearing edit
/// sent to the API (docs/DELIVERY.md §8, "the idle return, provisional").
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
    pub prompts: VecDeque<(String, u64)>,
    /// MCP tool-use ids and where they were seen, oldest first.
    pub tools: VecDeque<(String, u64)>,
    /// Tool-use ids the host withdrew.
    pub withdrawn: VecDeque<String>,
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
            Fact::NotJson | Fact::Cleared | Fact::Compacted => Effect::All,
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
                let Some(from) = cut.and_then(|c| self.prompts.iter().find(|(u, _)| *u == c).map(|(_, o)| *o)) else {
                    self.prompts.clear();
                    return Effect::All;
                };
                let gone: Vec<String> = self.tools.iter().filter(|(_, o)| *o > from).map(|(i, _)| i.clone()).collect();
                self.prompts.retain(|(_, o)| *o < from);
                self.withdraw(gone)
            }
            Fact::Prompt(u) => {
                if after(&self.pending)
                    && let Some(p) = self.pending.as_mut()
                {
                    p.seen = p.seen.saturating_add(1);
                }
                push_bounded(&mut self.prompts, (u, at), MAX_PROMPTS);
                Effect::Some
            }
            Fact::ToolUses(ids) => {
                for i in ids {
                    push_bounded(&mut self.tools, (i, at), MAX_TOOL_USES);
                }
                Effect::Some
            }
        }
    }

    fn withdraw(&mut self, ids: Vec<String>) -> Effect {
        for i in ids {
            if !self.withdrawn.contains(&i) {
                self.withdrawn.push_back(i);
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
        self.withdrawn.iter().any(|w| w == call_id)
    }

    /// The transcript was replaced or cannot be followed: what is
    /// remembered of positions no longer holds (every delivery ends too).
    pub fn reset_positions(&mut self) {
        self.prompts.clear();
        self.tools.clear();
    }
}

fn push_bounded<T>(q: &mut VecDeque<T>, v: T, max: usize) {
    if q.len() == max {
        q.pop_front();
    }
    q.push_back(v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_table() {
        #[rustfmt::skip]
        let rows: Vec<(&str, Fact)> = vec![
            ("", Fact::Nothing),
            ("   ", Fact::Nothing),
            ("not json", Fact::NotJson),
            ("{\"type\":\"user\"", Fact::NotJson),
            ("[1,2]", Fact::NotJson),
            // Bytes JSON never holds, with no marker to make the line parse.
            ("{\"type\":\"progress\",\"data\":\"a\0b\"}", Fact::NotJson),
            ("{\0\0\0}", Fact::NotJson),
            // A marker makes the line parse; a broken one is not JSON.
            ("{\"type\":\"user\",\"uuid\":}", Fact::NotJson),
            (r#"{"type":"attachment","attachment":{"type":"tool_results_cut","callIds":["a","b"],"standIn":"x"}}"#, Fact::Cut(vec!["a".into(), "b".into()])),
            // Spaced JSON (as re-exported fixtures are) reads the same.
            (r#"{"type": "attachment", "attachment": {"type": "tool_results_cut", "callIds": ["a"]}}"#, Fact::Cut(vec!["a".into()])),
            // The marker inside a string is escaped: not a fact.
            (r#"{"type":"assistant","message":{"content":[{"type":"text","text":"say \"tool_results_cut\""}]}}"#, Fact::Nothing),
            (r#"{"type":"assistant","message":{"context_management":{"applied_edits":[{"type":"clear_tool_uses_20250919","cleared_tool_uses":20}]}}}"#, Fact::Cleared),
            // The edit as sent is not a clearing: the server clears only past its trigger.
            (r#"{"type":"api-request","params":{"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]}}}"#, Fact::Nothing),
            (r#"{"type":"assistant","message":{"context_management":{"applied_edits":[]}},"x":"clear_tool_uses_20250919"}"#, Fact::Nothing),
            (r#"{"type":"last-prompt","leafUuid":null,"rewound":true,"cutUuid":"u1"}"#, Fact::Rewound(Some("u1".into()))),
            (r#"{"type":"last-prompt","rewound":true}"#, Fact::Rewound(None)),
            (r#"{"type":"last-prompt","rewound":false,"cutUuid":"u1"}"#, Fact::Nothing),
            (r#"{"type":"system","subtype":"compact_boundary","compactMetadata":{}}"#, Fact::Compacted),
            (r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"read it"}}"#, Fact::Prompt("u1".into())),
            (r#"{"type":"user","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t"}]}}"#, Fact::Nothing),
            (r#"{"type":"assistant","uuid":"a","message":{"content":[{"type":"tool_use","id":"t1","name":"mcp__ctx__ctx_read"},{"type":"tool_use","id":"t2","name":"Read"}]}}"#, Fact::ToolUses(vec!["t1".into()])),
            (r#"{"type":"api-request-blob","message":{"content":[{"type":"tool_use","id":"t1","name":"mcp__ctx__ctx_read"}]}}"#, Fact::Nothing),
        ];
        for (i, (line, want)) in rows.into_iter().enumerate() {
            assert_eq!(classify(line.as_bytes()), want, "row {i}: {line}");
        }
        assert_eq!(classify(b"{\"type\":\"progress\",\"data\":\"\xff\xfe\"}"), Fact::NotJson, "invalid UTF-8");
    }

    fn track(facts: &[(Fact, u64)]) -> (Track, Vec<Effect>) {
        let mut t = Track::default();
        let e = facts.iter().map(|(f, at)| t.apply(f.clone(), *at)).collect();
        (t, e)
    }

    #[test]
    fn a_rewind_withdraws_the_tool_uses_from_its_cut_prompt_on() {
        let p = |u: &str| Fact::Prompt(u.into());
        let tu = |i: &str| Fact::ToolUses(vec![i.into()]);
        let (t, e) = track(&[
            (p("u1"), 0),
            (tu("t1"), 10),
            (p("u2"), 20),
            (tu("t2"), 30),
            (tu("t3"), 40),
            (Fact::Rewound(Some("u2".into())), 50),
        ]);
        assert_eq!(e.last(), Some(&Effect::Some));
        assert!(!t.is_withdrawn("t1"));
        assert!(t.is_withdrawn("t2") && t.is_withdrawn("t3"));
        // The cut prompt and later ones cannot be cut to again.
        assert_eq!(t.prompts.iter().map(|(u, _)| u.as_str()).collect::<Vec<_>>(), ["u1"]);
    }

    #[test]
    fn effects_table() {
        #[rustfmt::skip]
        type Row = (Vec<(Fact, u64)>, Effect, &'static [&'static str], &'static [&'static str]);
        let rows: Vec<Row> = vec![
            // A rewind to a prompt never seen (before the witness started): all.
            (
                vec![(Fact::ToolUses(vec!["t1".into()]), 5), (Fact::Rewound(Some("old".into())), 9)],
                Effect::All,
                &[],
                &["t1"],
            ),
            (vec![(Fact::Rewound(None), 9)], Effect::All, &[], &[]),
            (vec![(Fact::Cleared, 1)], Effect::All, &[], &[]),
            (vec![(Fact::Compacted, 1)], Effect::All, &[], &[]),
            (vec![(Fact::NotJson, 1)], Effect::All, &[], &[]),
            (vec![(Fact::Cut(vec!["a".into(), "a".into()]), 1)], Effect::Some, &["a"], &["b"]),
            (vec![(Fact::Nothing, 1)], Effect::Some, &[], &["a"]),
            // A rewind to the first prompt takes everything after it.
            (
                vec![
                    (Fact::Prompt("u".into()), 0),
                    (Fact::ToolUses(vec!["t".into(), "s".into()]), 3),
                    (Fact::Rewound(Some("u".into())), 9),
                ],
                Effect::Some,
                &["t", "s"],
                &[],
            ),
        ];
        for (i, (facts, effect, gone, kept)) in rows.into_iter().enumerate() {
            let (t, e) = track(&facts);
            assert_eq!(*e.last().unwrap(), effect, "row {i}");
            for g in gone {
                assert!(t.is_withdrawn(g), "row {i}: {g} withdrawn");
            }
            for k in kept {
                assert!(!t.is_withdrawn(k), "row {i}: {k} kept");
            }
        }
    }

    #[test]
    fn answers_are_classified_only_while_a_return_is_pending() {
        let null = r#"{"type":"assistant","uuid":"a","message":{"content":[{"type":"text","text":"ok"}],"context_management":null}}"#;
        let cut = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"mcp__ctx__ctx_read"}],"context_management":{"applied_edits":[],"client_cut_tool_uses":18,"client_estimated_cleared_input_tokens":161}}}"#;
        let sent = r#"{"type":"assistant","message":{"content":[],"context_management":{"applied_edits":[],"client_sent_trigger_tool_uses":29,"client_sent_keep_tool_uses":12}}}"#;
        let odd = r#"{"type":"assistant","message":{"content":[],"context_management":{"client_cut_tool_uses":"x"}}}"#;
        let replay = r#"{"type":"api-request-blob","message":{"role":"assistant","content":[]}}"#;
        #[rustfmt::skip]
        let rows: Vec<(&str, Fact, Fact)> = vec![
            (null, Fact::Nothing, Fact::Answer { tool_uses: vec![], cut: 0, edit: false }),
            (cut, Fact::ToolUses(vec!["t1".into()]), Fact::Answer { tool_uses: vec!["t1".into()], cut: 18, edit: false }),
            (sent, Fact::Nothing, Fact::Answer { tool_uses: vec![], cut: 0, edit: true }),
            // A count that is not one: a cut of unknown size.
            (odd, Fact::Nothing, Fact::Answer { tool_uses: vec![], cut: u64::MAX, edit: false }),
            (replay, Fact::Nothing, Fact::Nothing),
            // A clearing applied is a clearing, pending or not.
            (r#"{"type":"assistant","message":{"context_management":{"applied_edits":[{"type":"clear_tool_uses_20250919"}]}}}"#, Fact::Cleared, Fact::Cleared),
            (r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"x"}}"#, Fact::Prompt("u1".into()), Fact::Prompt("u1".into())),
        ];
        for (i, (line, idle, pending)) in rows.into_iter().enumerate() {
            assert_eq!(classify_in(line.as_bytes(), false), idle, "row {i}");
            assert_eq!(classify_in(line.as_bytes(), true), pending, "row {i}, pending");
        }
    }

    #[test]
    fn the_first_answer_after_an_idle_return_settles_it() {
        let answer = |cut: u64, edit: bool| Fact::Answer { tool_uses: vec![], cut, edit };
        let pending = || Track {
            pending: Some(Pending { from: 100, at_ms: 5, pid: 1, due: 1, seen: 0, cut_seen: false }),
            ..Track::default()
        };
        let p = |u: &str| Fact::Prompt(u.into());
        // Rows: facts from the return on (at offsets), the last effect,
        // still pending after, ids withdrawn.
        #[rustfmt::skip]
        type Row = (Vec<(Fact, u64)>, Effect, bool, &'static [&'static str]);
        let rows: Vec<Row> = vec![
            // The prompt, then an answer showing no cut and no edit: nothing withdrawn.
            (vec![(p("u"), 100), (answer(0, false), 200)], Effect::Some, false, &[]),
            // The cut record before the answer: its exact ids, nothing more.
            (
                vec![(p("u"), 100), (Fact::Cut(vec!["a".into()]), 150), (answer(1, false), 200)],
                Effect::Some,
                false,
                &["a"],
            ),
            // A cut counted but not recorded after the return: all.
            (vec![(p("u"), 100), (answer(18, false), 200)], Effect::All, false, &[]),
            (
                vec![(p("u"), 100), (Fact::Cut(vec!["a".into()]), 50), (answer(1, false), 200)],
                Effect::All,
                false,
                &["a"],
            ),
            // A clearing edit sent (the API may clear later, by count): all.
            (vec![(p("u"), 100), (answer(0, true), 200)], Effect::All, false, &[]),
            (vec![(p("u"), 100), (Fact::Cleared, 200)], Effect::All, false, &[]),
            // An answer before the return's prompt line is an earlier
            // turn's, written late: it settles nothing.
            (vec![(answer(0, false), 150)], Effect::Some, true, &[]),
            (vec![(p("u"), 50), (answer(0, false), 150)], Effect::Some, true, &[]),
            (vec![(p("u"), 100), (answer(0, false), 90)], Effect::Some, true, &[]),
            // Lines that settle nothing.
            (vec![(p("u"), 100), (Fact::ToolUses(vec!["t".into()]), 120)], Effect::Some, true, &[]),
        ];
        // Two prompt hooks since the return (a second return, or any
        // prompt): the first turn's answer, flushed after the second hook,
        // settles nothing; the one after the second prompt's line does.
        let mut t = pending();
        t.pending.as_mut().unwrap().due = 2;
        assert_eq!(t.apply(p("u1"), 100), Effect::Some);
        assert_eq!(t.apply(answer(0, false), 110), Effect::Some);
        assert!(t.pending.is_some(), "the first turn's answer");
        t.apply(p("u2"), 120);
        t.apply(Fact::Cut(vec!["c".into()]), 130);
        assert_eq!(t.apply(answer(1, false), 140), Effect::Some);
        assert!(t.pending.is_none() && t.is_withdrawn("c"));
        for (i, (facts, effect, still, gone)) in rows.into_iter().enumerate() {
            let mut t = pending();
            let e: Vec<Effect> = facts.into_iter().map(|(f, at)| t.apply(f, at)).collect();
            assert_eq!(*e.last().unwrap(), effect, "row {i}");
            assert_eq!(t.pending.is_some(), still, "row {i}");
            for g in gone {
                assert!(t.is_withdrawn(g), "row {i}: {g}");
            }
        }
        // With no return pending an answer is an ordinary line.
        let mut t = Track::default();
        assert_eq!(t.apply(answer(18, true), 1), Effect::Some);
    }

    #[test]
    fn every_bound_holds_and_overflowing_the_withdrawn_ids_ends_all() {
        let mut t = Track::default();
        for i in 0..MAX_PROMPTS + 5 {
            t.apply(Fact::Prompt(format!("u{i}")), i as u64);
            t.apply(
                Fact::ToolUses(vec![
                    format!("a{i}"),
                    format!("b{i}"),
                    format!("c{i}"),
                    format!("d{i}"),
                    format!("e{i}"),
                    format!("f{i}"),
                    format!("g{i}"),
                    format!("h{i}"),
                    format!("i{i}"),
                ]),
                i as u64,
            );
        }
        assert_eq!((t.prompts.len(), t.tools.len()), (MAX_PROMPTS, MAX_TOOL_USES));
        assert_eq!(t.apply(Fact::Cut((0..MAX_WITHDRAWN).map(|i| format!("x{i}")).collect()), 1), Effect::Some);
        assert_eq!(t.withdrawn.len(), MAX_WITHDRAWN);
        assert_eq!(t.apply(Fact::Cut(vec!["one-more".into()]), 2), Effect::All);
        assert!(t.withdrawn.is_empty());
    }
}
