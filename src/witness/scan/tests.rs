use super::*;

#[test]
fn caught_up_table() {
    let mut t = Track::default();
    t.apply(Fact::Prompt("u1".into()), 0);
    t.apply(Fact::ToolUses(vec!["t1".into(), "t2".into()]), 10);
    #[rustfmt::skip]
    let rows: [(Option<&str>, bool); 4] = [
        // No asking call named: nothing to wait for (as before).
        (None, true),
        (Some("t1"), true),
        (Some("t2"), true),
        // Its line is not on disk yet: what precedes it may not be either.
        (Some("t3"), false),
    ];
    for (asking, want) in rows {
        assert_eq!(t.caught_up(asking), want, "{asking:?}");
    }
    // A rewind withdraws a call but its line was still written.
    t.apply(Fact::Rewound(Some("u1".into())), 20);
    assert!(t.caught_up(Some("t1")));
    // A replaced transcript forgets where lines were: wait for it again.
    t.reset_positions();
    assert!(!t.caught_up(Some("t1")));
}

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
        (r#"{"type":"system","subtype":"compact_boundary","compactMetadata":{}}"#, Fact::Compacted { main: false, uuid: None }),
        // The main thread's, as Claude Code 2.1.328 writes it to the session's transcript
        // (tests/fixtures/payloads/withdrawal/claude/subagent-main-compact/transcript.jsonl).
        (r#"{"parentUuid":null,"logicalParentUuid":"u0","isSidechain":false,"type":"system","subtype":"compact_boundary"}"#, Fact::Compacted { main: true, uuid: None }),
        (r#"{"parentUuid":null,"logicalParentUuid":"u0","isSidechain":false,"type":"system","subtype":"compact_boundary","uuid":"b1"}"#, Fact::Compacted { main: true, uuid: Some("b1".into()) }),
        // Its summary line (the two-process fixture, line 86): the boundary's
        // child, with the compacting process's prompt id.
        (r#"{"parentUuid":"b1","isSidechain":false,"promptId":"x","type":"user","message":{"role":"user","content":"This session is being continued"},"isVisibleInTranscriptOnly":true,"isCompactSummary":true,"uuid":"s1"}"#,
            Fact::Summary { uuid: "s1".into(), parent: Some("b1".into()), prompt_id: Some("x".into()) }),
        // A user line that only says the word, or says it is no summary: a prompt.
        (r#"{"type":"user","uuid":"u3","message":{"role":"user","content":"what is \"isCompactSummary\"?"}}"#, Fact::Prompt("u3".into())),
        (r#"{"parentUuid":"b1","promptId":"x","type":"user","isCompactSummary":false,"uuid":"u4"}"#, Fact::Prompt("u4".into())),
        // A subagent's (its own transcript's line): whose, not the main thread's.
        (r#"{"parentUuid":null,"isSidechain":true,"agentId":"a1","type":"system","subtype":"compact_boundary"}"#, Fact::Compacted { main: false, uuid: None }),
        (r#"{"isSidechain":false,"agentId":"a1","type":"system","subtype":"compact_boundary"}"#, Fact::Compacted { main: false, uuid: None }),
        (r#"{"isSidechain":"false","type":"system","subtype":"compact_boundary"}"#, Fact::Compacted { main: false, uuid: None }),
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
    assert_eq!(t.prompts.iter().map(|(u, _)| u).collect::<Vec<_>>(), ["u1"]);
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
        (vec![(Fact::Compacted { main: false, uuid: None }, 1)], Effect::All, &[], &[]),
        (vec![(Fact::Compacted { main: true, uuid: None }, 1)], Effect::Main, &[], &[]),
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
        (vec![(p("u"), 100), (Fact::Cut(vec!["a".into()]), 150), (answer(1, false), 200)], Effect::Some, false, &["a"]),
        // A cut counted but not recorded after the return: all.
        (vec![(p("u"), 100), (answer(18, false), 200)], Effect::All, false, &[]),
        (vec![(p("u"), 100), (Fact::Cut(vec!["a".into()]), 50), (answer(1, false), 200)], Effect::All, false, &["a"]),
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

#[test]
fn a_prompt_line_is_read_by_its_type_and_uuid_only() {
    let big = "y".repeat(20_000);
    let table: [(String, Fact); 7] = [
        (
            format!(r#"{{"type":"user","uuid":"u1","message":{{"role":"user","content":"{big}"}}}}"#),
            Fact::Prompt("u1".into()),
        ),
        (
            r#"{"uuid":"u\"2","type":"user","message":{"content":[{"type":"text","text":"hi"}]}}"#.into(),
            Fact::Prompt("u\"2".into()),
        ),
        (r#"{"type":"user","message":{"content":"no uuid"}}"#.into(), Fact::Nothing),
        (r#"{"type":"userx","uuid":"u3","x":"\"user\""}"#.into(), Fact::Nothing),
        (r#"{"type":"user","uuid":7,"message":"a number"}"#.into(), Fact::NotJson),
        (r#"{"type":"user","type":"user","uuid":"u4"}"#.into(), Fact::NotJson),
        (r#"{"type":"user","uuid":"u5","message":{"content":"cut short"}"#.to_string() + "}}", Fact::NotJson),
    ];
    for (line, want) in table {
        assert_eq!(classify(line.as_bytes()), want, "{}", &line[..line.len().min(80)]);
    }
}
