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

/// JSON text for the hand reader's tests: every kind of value, escapes
/// (good and bad), numbers at the grammar's edges, spaces between tokens.
fn json_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let sp = || prop_oneof![4 => Just(""), 1 => Just(" "), 1 => Just("  ")];
    let string = prop_oneof![
        "[a-z0-9 é✓-]{0,12}",
        Just(r#"a\"b"#.to_string()),
        Just(r#"\\"#.to_string()),
        Just(r#"\n\t\/\b\f\r"#.to_string()),
        Just(r#"\u00e9\uD800"#.to_string()),
        Just(r#"\uZZZZ"#.to_string()),
        Just(r#"\x"#.to_string()),
        Just(r#"\u12"#.to_string()),
        Just("user".to_string()),
        Just("type".to_string()),
        Just("uuid".to_string()),
    ]
    .prop_map(|s| format!("\"{s}\""));
    let number = prop_oneof![
        Just("0"),
        Just("-0"),
        Just("7"),
        Just("-12"),
        Just("01"),
        Just("1.5"),
        Just("1."),
        Just("-"),
        Just("1e5"),
        Just("1E+5"),
        Just("2e-3"),
        Just("1e"),
        Just("3.0e+"),
        Just(".5"),
        Just("1.2.3"),
    ]
    .prop_map(str::to_string);
    let leaf = prop_oneof![
        string.clone(),
        number,
        Just("null".to_string()),
        Just("true".to_string()),
        Just("false".to_string()),
        Just("nul".to_string()),
    ];
    // Now and then a comma too many, at either end of a list.
    let glitch = || prop_oneof![12 => Just(""), 1 => Just(","), 1 => Just(" , ")];
    let value = leaf.prop_recursive(4, 24, 4, move |inner| {
        let key = prop_oneof![string.clone(), Just(r#""typ\u0065""#.to_string())];
        prop_oneof![
            (glitch(), proptest::collection::vec((sp(), inner.clone(), sp()), 0..4), glitch()).prop_map(|(g, v, h)| {
                let items = v.into_iter().map(|(a, x, b)| format!("{a}{x}{b}")).collect::<Vec<_>>();
                format!("[{g}{}{h}]", items.join(","))
            }),
            (glitch(), proptest::collection::vec((key, sp(), inner), 0..4), glitch()).prop_map(|(g, v, h)| {
                let items = v.into_iter().map(|(k, s, x)| format!("{k}:{s}{x}")).collect::<Vec<_>>();
                format!("{{{g}{}{h}}}", items.join(","))
            }),
        ]
    });
    let member = prop_oneof![
        1 => Just(r#""type":"user""#.to_string()),
        1 => Just(r#""type": null"#.to_string()),
        1 => Just(r#""uuid":"u-1""#.to_string()),
        1 => Just(r#""uuid" : "u\"2""#.to_string()),
        1 => Just(r#""uuid":5"#.to_string()),
        1 => Just(r#""typ\u0065":"user""#.to_string()),
        3 => ("[a-z]{1,6}", value).prop_map(|(k, v)| format!("\"{k}\":{v}")),
    ];
    (glitch(), proptest::collection::vec((sp(), member, sp()), 0..6), glitch(), sp()).prop_map(|(g, m, h, end)| {
        let items = m.into_iter().map(|(a, x, b)| format!("{a}{x}{b}")).collect::<Vec<_>>();
        format!("{{{g}{}{h}}}{end}", items.join(","))
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
    /// On any line without a control character (written, or mutated at
    /// random), the hand reader answers as serde does, or leaves it to serde.
    #[test]
    fn a_prompt_line_by_hand_reads_as_serde_reads_it(
        line in json_text(),
        edits in proptest::collection::vec((proptest::prelude::any::<proptest::sample::Index>(), 0usize..23, 0u8..3), 0..3),
    ) {
        let mut b = line.into_bytes();
        for (at, byte, kind) in edits {
            let i = at.index(b.len() + 1);
            let byte = b"[]{}\",:0-.e\\ nul\xc3\xa9tfu9a"[byte];
            match kind {
                0 if i < b.len() => b[i] = byte,
                1 if i < b.len() => { b.remove(i); }
                _ => b.insert(i, byte),
            }
        }
        if std::str::from_utf8(&b).is_ok()
            && !b.iter().any(|&c| c < 0x20)
            && let Some(got) = super::prompt::fact(&b)
        {
            proptest::prop_assert_eq!(got, prompt_of(&b), "{}", String::from_utf8_lossy(&b));
        }
    }
}

#[test]
fn a_prompt_line_by_hand_table() {
    // (the line, the hand reader's answer: None = left to serde)
    let rows: [(&str, Option<Fact>); 17] = [
        (
            r#"{"type":"user","uuid":"u1","message":{"content":"a \"quoted\" \\ \u00e9 word"}}"#,
            Some(Fact::Prompt("u1".into())),
        ),
        (r#" { "uuid" : "u2" , "type" : "user" }  "#, Some(Fact::Prompt("u2".into()))),
        (r#"{"type":"user","uuid":null}"#, Some(Fact::Nothing)),
        (r#"{"type":"user","uuid":"u3","uuid":"u4"}"#, Some(Fact::NotJson)),
        (r#"{"type":null,"type":"user","uuid":"u3"}"#, Some(Fact::NotJson)),
        (r#"{"type":"user","uuid":"u\"5"}"#, None),
        (r#"{"typ\u0065":"user","uuid":"u6"}"#, None),
        (r#"{"type":"user","uuid":"u7","x":[1,]}"#, Some(Fact::NotJson)),
        (r#"{"type":"user","uuid":"u8","x":{"a":1,}}"#, Some(Fact::NotJson)),
        (r#"{"type":"user","uuid":"u9","x":01}"#, Some(Fact::NotJson)),
        (r#"{"type":"user","uuid":"u10","x":"\q"}"#, Some(Fact::NotJson)),
        (r#"{"type":"user","uuid":"u11"}{}"#, Some(Fact::NotJson)),
        (
            r#"{"type":"user","uuid":"u12","x":[[[{"a":[-1.5e+3,true,false,null,"\ud800"]}]]]}"#,
            Some(Fact::Prompt("u12".into())),
        ),
        (r#"{"type":"user",,"uuid":"u13"}"#, Some(Fact::NotJson)),
        (r#"{"type":"user","uuid":"u14","x":[,1]}"#, Some(Fact::NotJson)),
        (r#"{"type":"user","uuid":"u15","x":{,"a":1}}"#, Some(Fact::NotJson)),
        (r#"{,"type":"user","uuid":"u16"}"#, Some(Fact::NotJson)),
    ];
    for (line, want) in rows {
        assert_eq!(super::prompt::fact(line.as_bytes()), want, "{line}");
        if let Some(w) = want {
            assert_eq!(prompt_of(line.as_bytes()), w, "serde: {line}");
        }
    }
}

#[test]
fn control_and_high_bytes_are_seen_anywhere_in_a_line() {
    for len in [0usize, 1, 31, 32, 33, 64, 100] {
        for at in 0..len {
            for (b, want) in [
                (0u8, (true, false)),
                (0x1f, (true, false)),
                (0x20, (false, false)),
                (0x80, (false, true)),
                (0xff, (false, true)),
                (0x7f, (false, false)),
            ] {
                let mut line = vec![b'a'; len];
                line[at] = b;
                assert_eq!(super::ctrl_and_high(&line), want, "len {len} at {at} byte {b:#x}");
            }
        }
    }
}
