mod lines_and_views {
    use crate::state::journal::record::{Fields, find_tab};
    use crate::state::journal::*;

    fn s(t: u64, conv: &str) -> Record<'_> {
        Record::Sighting { t, host: Host::ClaudeCode, conv, event: "PreToolUse" }
    }

    #[test]
    fn lines_round_trip() {
        let recs = vec![
            s(1, "a"),
            Record::SubagentStart { t: 2, host: Host::Codex, conv: "a", agent: "agent:x" },
            Record::SubagentStop { t: 3, host: Host::Cursor, conv: "a", agent: None },
            Record::Call(Call {
                t: 4,
                host: Host::Cursor,
                conv: "c",
                agent: None,
                server: Some("lean-ctx"),
                tool: "ctx_read",
                fp: "ab",
                call_id: None,
                key: "k1",
            }),
            Record::Claim { t: 5, key: "k1", claimant: Some("tok") },
            Record::Compaction { t: 6, host: Host::ClaudeCode, conv: "a", reach: Reach::All },
            Record::Compaction { t: 6, host: Host::ClaudeCode, conv: "a", reach: Reach::Main },
            Record::Compaction { t: 6, host: Host::ClaudeCode, conv: "a", reach: Reach::Agent("agent:x") },
            Record::End { t: 7, host: Host::ClaudeCode, conv: "a" },
            Record::Lineage { t: 8, host: Host::ClaudeCode, pid: 42, conv: "b" },
            Record::Floor { t: 9 },
        ];
        let mut text = String::new();
        for r in &recs {
            r.write_line(&mut text);
        }
        assert_eq!(parse(&text), recs);
    }

    /// A narrower compaction is a reach line and a plain `P` line: a reader
    /// that knows no reach line (each line alone, as `parse_line` reads it,
    /// and as every binary before it did) sees a compaction of the whole
    /// conversation, the stronger reading; a reach line that does not name
    /// the `P` line after it qualifies nothing.
    #[test]
    fn a_compactions_reach_is_its_own_line_and_old_readers_end_everything() {
        let mut text = String::new();
        Record::Compaction { t: 6, host: Host::ClaudeCode, conv: "a", reach: Reach::Main }.write_line(&mut text);
        assert_eq!(text, "p\t6\tclaude-code\ta\tmain\nP\t6\tclaude-code\ta\n");
        let alone: Vec<_> = text.lines().filter_map(parse_line).collect();
        assert_eq!(alone, [Record::Compaction { t: 6, host: Host::ClaudeCode, conv: "a", reach: Reach::All }]);
        #[rustfmt::skip]
        let rows: [(&str, Reach<'_>); 7] = [
            ("p\t6\tclaude-code\ta\tagent:x\nP\t6\tclaude-code\ta\n", Reach::Agent("agent:x")),
            ("p\t6\tclaude-code\tb\tmain\nP\t6\tclaude-code\ta\n",    Reach::All),
            ("p\t5\tclaude-code\ta\tmain\nP\t6\tclaude-code\ta\n",    Reach::All),
            ("p\t6\tcodex\ta\tmain\nP\t6\tclaude-code\ta\n",          Reach::All),
            ("p\t6\tclaude-code\ta\tmain\n#x\nP\t6\tclaude-code\ta\n", Reach::All),
            ("p\t6\tclaude-code\ta\tmain\tx\nP\t6\tclaude-code\ta\n", Reach::All),
            ("p\t6\tclaude-code\ta\tbogus\nP\t6\tclaude-code\ta\n",   Reach::All),
        ];
        for (text, reach) in rows {
            assert_eq!(
                parse(text),
                [Record::Compaction { t: 6, host: Host::ClaudeCode, conv: "a", reach }],
                "{text:?}"
            );
        }
    }

    /// Which deliveries a compaction after them ends, by scope: the main
    /// thread's compaction not a subagent's, a subagent's only its own
    /// (and scopes that may hold either), a plain one all of them; never
    /// another conversation's, nor one before the delivery.
    #[test]
    fn compacted_after_follows_the_reach() {
        let p = |conv, reach| Record::Compaction { t: 1, host: Host::ClaudeCode, conv, reach };
        #[rustfmt::skip]
        let rows: [(Record<'_>, &str, &str, bool); 10] = [
            (p("S", Reach::All),              "S", "S",        true),
            (p("S", Reach::All),              "S", "agent:A",  true),
            (p("S", Reach::Main),             "S", "S",        true),
            (p("S", Reach::Main),             "S", "agent:A",  false),
            (p("S", Reach::Main),             "S", "custom:c", true),
            (p("S", Reach::Agent("agent:A")), "S", "agent:A",  true),
            (p("S", Reach::Agent("agent:A")), "S", "agent:B",  false),
            (p("S", Reach::Agent("agent:A")), "S", "S",        false),
            (p("T", Reach::All),              "S", "S",        false),
            (p("T", Reach::Main),             "S", "agent:A",  false),
        ];
        for (rec, conv, scope, ended) in rows {
            let v = View { records: vec![s(0, "S"), rec.clone()] };
            assert_eq!(v.compacted_after(conv, scope, None, 0), ended, "{rec:?} {conv} {scope}");
            assert!(!v.compacted_after(conv, scope, None, 1), "{rec:?}: none after it");
        }
    }

    /// One process's compaction, written and read back: the main thread's
    /// deliveries end for every question but another process's about its
    /// own delivery; a reader that knows no `proc:` reach ends everything.
    #[test]
    fn a_process_compaction_round_trips_and_old_readers_end_everything() {
        let mut text = String::new();
        Record::Compaction { t: 6, host: Host::ClaudeCode, conv: "S", reach: Reach::MainOf(42) }.write_line(&mut text);
        assert_eq!(text, "p\t6\tclaude-code\tS\tproc:42\nP\t6\tclaude-code\tS\n");
        let alone: Vec<_> = text.lines().filter_map(parse_line).collect();
        assert_eq!(alone, [Record::Compaction { t: 6, host: Host::ClaudeCode, conv: "S", reach: Reach::All }]);
        let mut recs = vec![s(0, "S")];
        recs.extend(parse(&text));
        let v = View { records: recs };
        #[rustfmt::skip]
        let rows: [(&str, Option<u32>, bool); 5] = [
            ("S",       Some(7),  false),
            ("S",       Some(42), true),
            ("S",       None,     true),
            ("agent:A", None,     false),
            ("custom:c", Some(7), false),
        ];
        for (scope, own, ended) in rows {
            assert_eq!(v.compacted_after("S", scope, own, 0), ended, "{scope} {own:?}");
        }
    }

    #[test]
    fn hostile_fields_cannot_break_lines() {
        let r = Record::Sighting { t: 1, host: Host::Cursor, conv: "a\tb\nc", event: "-" };
        let mut text = String::new();
        r.write_line(&mut text);
        assert_eq!(text.matches('\n').count(), 1);
        let back = parse(&text);
        assert_eq!(back.len(), 1);
        assert!(matches!(back[0], Record::Sighting { conv: "a%09b%0Ac", event: "%2D", .. }));
    }

    #[test]
    fn find_tab_finds_the_first_tab() {
        let alphabet = [0x00u8, 0x01, 0x08, 0x09, 0x0a, 0x19, 0x80, 0x89, 0xff, b'a'];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for len in 0..40 {
            for _ in 0..200 {
                let v: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        alphabet[(x % alphabet.len() as u64) as usize]
                    })
                    .collect();
                assert_eq!(find_tab(&v), v.iter().position(|&b| b == b'\t'), "{v:?}");
                assert_eq!(find_byte(&v, b'\n'), v.iter().position(|&b| b == b'\n'), "{v:?}");
                assert_eq!(find_byte(&v, 0x89), v.iter().position(|&b| b == 0x89), "{v:?}");
            }
        }
    }

    #[test]
    fn fields_split_like_str_split() {
        let long = "0123456789abcdef\t01234567\t\t0123456789\u{e9}\u{3000}xyz\tend";
        for s in ["", "\t", "a", "a\tb", "a\t\tb\t", "\tS\t1\té\t-", "x\u{3000}\ty", long, &long[1..], &long[3..]] {
            assert_eq!(Fields { rest: Some(s) }.collect::<Vec<_>>(), s.split('\t').collect::<Vec<_>>(), "{s:?}");
        }
    }

    #[test]
    fn torn_last_line_is_ignored() {
        assert_eq!(parse("S\t1\tcursor\ta\tx\nS\t2\tcur").len(), 1);
        assert_eq!(parse("garbage\n\nS\t1\tcursor\ta\tx\n").len(), 1);
    }

    #[test]
    fn concurrency_table() {
        let now = 100_000;
        let cases: Vec<(Vec<Record>, bool)> = vec![
            (vec![], false),
            (vec![s(now - 1000, "a")], false),
            (vec![s(now - 1000, "a"), s(now - 2000, "a")], false),
            (vec![s(now - 1000, "a"), s(now - 2000, "b")], true),
            (vec![s(now - 1000, "a"), s(now - WINDOW_MS - 1, "b")], false),
            (
                vec![
                    s(now - 1000, "a"),
                    s(now - 2000, "b"),
                    Record::End { t: now - 1500, host: Host::ClaudeCode, conv: "b" },
                ],
                false,
            ),
            // A later event of the same id revives it (resume keeps the id).
            (
                vec![
                    s(now - 1000, "a"),
                    Record::End { t: now - 3000, host: Host::ClaudeCode, conv: "b" },
                    s(now - 2000, "b"),
                ],
                true,
            ),
            // A sighting from far in the future (clock went back) is not live.
            (vec![s(now - 1000, "a"), s(now + FUTURE_SKEW_MS + 1, "b")], false),
        ];
        for (i, (recs, want)) in cases.into_iter().enumerate() {
            assert_eq!(View { records: recs }.concurrent(now), want, "case {i}");
        }
    }

    #[test]
    fn subagents_open_and_close() {
        let now = 10_000;
        let v = View {
            records: vec![
                Record::SubagentStart { t: 1, host: Host::ClaudeCode, conv: "a", agent: "agent:1" },
                Record::SubagentStart { t: 2, host: Host::ClaudeCode, conv: "a", agent: "agent:2" },
                Record::SubagentStop { t: 3, host: Host::ClaudeCode, conv: "a", agent: Some("agent:1") },
                Record::SubagentStart { t: 4, host: Host::Cursor, conv: "c", agent: "task:1" },
                Record::SubagentStart { t: 5, host: Host::Cursor, conv: "c", agent: "task:2" },
                Record::SubagentStop { t: 6, host: Host::Cursor, conv: "c", agent: None },
            ],
        };
        assert_eq!(v.active_subagents("a", now), vec!["agent:2"]);
        // A stop that names none (an older Cursor) closes none.
        assert_eq!(v.active_subagents("c", now), vec!["task:1", "task:2"]);
        assert!(v.active_subagents("zzz", now).is_empty());
        // A subagent runs until its stop, however long; its session's end closes it.
        assert_eq!(v.active_subagents("a", now + STATE_TTL_MS + 10), vec!["agent:2"]);
        let mut ended = v.records.clone();
        ended.push(Record::End { t: 7, host: Host::ClaudeCode, conv: "a" });
        ended.push(Record::SubagentStart { t: 8, host: Host::ClaudeCode, conv: "a", agent: "agent:3" });
        assert_eq!(View { records: ended }.active_subagents("a", now), vec!["agent:3"]);
    }

    #[test]
    fn trim_keeps_what_matters_and_raises_the_floor() {
        let now = 10 * STATE_TTL_MS;
        let convs: Vec<String> = (0..300).map(|i| format!("c{i}")).collect();
        let mut recs = Vec::new();
        for (i, c) in convs.iter().enumerate() {
            recs.push(Record::Sighting { t: now - 300 + i as u64, host: Host::ClaudeCode, conv: c, event: "x" });
            recs.push(Record::Compaction {
                t: now - 300 + i as u64,
                host: Host::ClaudeCode,
                conv: c,
                reach: Reach::All,
            });
        }
        recs.push(Record::Compaction { t: now - STATE_TTL_MS - 5, host: Host::Codex, conv: "old", reach: Reach::All });
        let kept = trim(&recs, now);
        let v = View { records: kept };
        // The newest conversations survive, the verdict is unchanged.
        assert!(v.concurrent(now));
        assert_eq!(v.last_compaction("c299"), Some(now - 1));
        // Evicted compactions raise the floor to the newest evicted one.
        assert_eq!(v.last_compaction("c0"), None);
        assert_eq!(v.compaction_floor(), now - 300 + (300 - MAX_CONVERSATIONS as u64 - 1));
        let n = v.records.iter().filter(|r| matches!(r, Record::Sighting { .. })).count();
        assert_eq!(n, MAX_CONVERSATIONS);
    }

    /// Lines are appended in the order processes finish, not in the order
    /// of their clocks: a trim keeps each conversation's newest and oldest
    /// sighting by time (a tie: the later line), whatever the file order.
    #[test]
    fn trim_picks_newest_and_oldest_by_time_not_file_order() {
        let now = 10 * STATE_TTL_MS;
        let ev = |t: u64, event: &'static str| Record::Sighting { t, host: Host::ClaudeCode, conv: "a", event };
        let recs = vec![ev(now - 50, "mid"), ev(now - 10, "newest"), ev(now - 90, "oldest"), ev(now - 20, "late")];
        let kept = trim(&recs, now);
        let events: Vec<&str> = kept
            .iter()
            .filter_map(|r| match r {
                Record::Sighting { event, .. } => Some(*event),
                _ => None,
            })
            .collect();
        assert!(events.contains(&"newest") && events.contains(&"oldest"), "{events:?}");
        assert!(!events.contains(&"late") && !events.contains(&"mid"), "{events:?}");
        // A tie in time goes to the later line.
        let recs = vec![ev(now - 90, "first"), ev(now - 10, "tie-earlier"), ev(now - 10, "tie-later")];
        let kept = trim(&recs, now);
        let has = |e: &str| kept.iter().any(|r| matches!(r, Record::Sighting { event, .. } if *event == e));
        assert!(has("tie-later") && !has("tie-earlier") && has("first"), "{kept:?}");
        // Nothing evicted: no floor line.
        assert!(!kept.iter().any(|r| matches!(r, Record::Floor { .. })), "{kept:?}");
    }

    /// What a trim must keep besides sightings: each host's newest
    /// sighting however old (when the host last fired), a subagent's stop
    /// (else a finished subagent reads as running), and the claims of the
    /// call records it keeps (else a claimed record could be claimed again
    /// by another call, naming the wrong caller).
    #[test]
    fn trim_keeps_host_markers_subagent_stops_and_claims_of_kept_calls() {
        let now = 10 * STATE_TTL_MS;
        let old = now - STATE_TTL_MS - 1_000;
        let call = Call {
            t: now - 100,
            host: Host::Cursor,
            conv: "c",
            agent: None,
            server: None,
            tool: "ctx_read",
            fp: "fp",
            call_id: None,
            key: "k1",
        };
        let recs = vec![
            Record::Sighting { t: old, host: Host::Codex, conv: "x", event: "SessionStart" },
            Record::SubagentStart { t: now - 500, host: Host::ClaudeCode, conv: "a", agent: "agent:1" },
            Record::SubagentStop { t: now - 400, host: Host::ClaudeCode, conv: "a", agent: Some("agent:1") },
            Record::Call(call),
            Record::Claim { t: now - 90, key: "k1", claimant: Some("srv") },
        ];
        let v = View { records: trim(&recs, now) };
        assert!(
            v.records.iter().any(|r| matches!(r, Record::Sighting { host: Host::Codex, .. })),
            "the host's newest sighting: {:?}",
            v.records
        );
        assert!(v.active_subagents("a", now).is_empty(), "{:?}", v.records);
        assert_eq!(v.claimed_by("srv").map(|c| c.key), Some("k1"), "{:?}", v.records);
        assert!(v.claim_candidates("ctx_read", "fp", now).is_empty(), "{:?}", v.records);
    }
}

mod subagent_trim_tests {
    use crate::state::journal::*;

    #[test]
    fn a_subagent_is_witnessed_by_its_own_new_conversation_or_not_at_all() {
        let s = |t, conv| Record::Sighting { t, host: Host::Cursor, conv, event: "x" };
        let start = Record::SubagentStart { t: 10, host: Host::Cursor, conv: "P", agent: "task:h:1" };
        let now = 100;
        // Another chat seen before the start: no witness.
        let v = View { records: vec![s(5, "P"), s(6, "Q"), start.clone(), s(20, "Q")] };
        assert!(v.subagent_unwitnessed("P", Host::Cursor, now));
        // A conversation first seen after the start (Cursor 3.x's subagent): witnessed.
        let v = View { records: vec![s(5, "P"), start.clone(), s(12, "F")] };
        assert!(!v.subagent_unwitnessed("P", Host::Cursor, now));
        // A call of the parent's conversation made by the task itself: it
        // runs inside the parent, whatever else is seen.
        let call = Record::Call(Call {
            t: 13,
            host: Host::Cursor,
            conv: "P",
            agent: Some("task:h:1"),
            server: None,
            tool: "t",
            fp: "f",
            call_id: None,
            key: "k",
        });
        let v = View { records: vec![s(5, "P"), start.clone(), s(12, "F"), call] };
        assert!(v.subagent_unwitnessed("P", Host::Cursor, now));
        // No subagent: nothing to witness. Another host's new chat is no witness.
        assert!(!View { records: vec![s(5, "P")] }.subagent_unwitnessed("P", Host::Cursor, now));
        let other = Record::Sighting { t: 12, host: Host::ClaudeCode, conv: "F", event: "x" };
        assert!(View { records: vec![s(5, "P"), start.clone(), other] }.subagent_unwitnessed("P", Host::Cursor, now));
        // A trim keeps each kept conversation's first sighting: an old chat
        // does not look new after it.
        let recs: Vec<Record> = vec![s(1, "Q"), s(5, "P"), start.clone(), s(50, "Q")];
        let kept = trim(&recs, now);
        assert!(View { records: kept }.subagent_unwitnessed("P", Host::Cursor, now));
        // One new conversation witnesses one subagent: with two running (of
        // this chat or of another), one new conversation leaves one of them
        // unwitnessed; a second one witnesses both.
        let second = Record::SubagentStart { t: 11, host: Host::Cursor, conv: "P", agent: "task:h:2" };
        let v = View { records: vec![s(5, "P"), start.clone(), second, s(12, "F")] };
        assert!(v.subagent_unwitnessed("P", Host::Cursor, now));
        let v = View { records: vec![s(4, "Q"), s(5, "P"), start.clone(), other_sub(), s(12, "F")] };
        assert!(v.subagent_unwitnessed("P", Host::Cursor, now), "Q's subagent needs one too");
        let v = View { records: vec![s(4, "Q"), s(5, "P"), start.clone(), other_sub(), s(12, "F"), s(13, "G")] };
        assert!(!v.subagent_unwitnessed("P", Host::Cursor, now));
        fn other_sub() -> Record<'static> {
            Record::SubagentStart { t: 11, host: Host::Cursor, conv: "Q", agent: "task:h:9" }
        }
        // The counting rule itself: each start (latest first) needs one more
        // conversation first seen at or after it.
        assert!(each_has_its_own(vec![10, 11], vec![12, 13]));
        assert!(!each_has_its_own(vec![10, 11], vec![12, 9]));
        assert!(!each_has_its_own(vec![10, 11], vec![10, 10]));
        assert!(each_has_its_own(vec![10, 10], vec![10, 10]));
        assert!(each_has_its_own(vec![], vec![]));
    }

    #[test]
    fn an_open_subagent_survives_trims_however_old() {
        let now = 10 * STATE_TTL_MS;
        let old = now - 3 * STATE_TTL_MS;
        let recs = vec![
            Record::SubagentStart { t: old, host: Host::ClaudeCode, conv: "a", agent: "agent:long" },
            Record::SubagentStart { t: old, host: Host::ClaudeCode, conv: "a", agent: "agent:done" },
            Record::SubagentStop { t: old + 1, host: Host::ClaudeCode, conv: "a", agent: Some("agent:done") },
            Record::SubagentStart { t: old, host: Host::ClaudeCode, conv: "b", agent: "agent:ended" },
            Record::End { t: old + 2, host: Host::ClaudeCode, conv: "b" },
        ];
        let kept = trim(&recs, now);
        let v = View { records: kept };
        assert_eq!(v.active_subagents("a", now), vec!["agent:long"]);
        assert!(v.active_subagents("b", now).is_empty());
        assert_eq!(v.records.iter().filter(|r| matches!(r, Record::SubagentStart { .. })).count(), 1);
    }
}

mod ledger_trim_tests {
    use crate::state::journal::*;

    fn d<'a>(t: u64, conv: &'a str, key: &'a str, r: &'a str) -> Record<'a> {
        Record::Delivery(Delivery {
            t,
            host: Host::Codex,
            conv,
            scope: conv,
            window: None,
            call_ref: r,
            key,
            version: "v",
            digest: "dg",
            len: 1,
            base: None,
        })
    }

    fn a<'a>(t: u64, conv: &'a str, r: &'a str) -> Record<'a> {
        Record::Ack(Ack { t, host: Host::Codex, scope: conv, call_ref: r, digest: "dg", len: 1, whole: true })
    }

    #[test]
    fn trim_keeps_live_deliveries_in_file_order_and_drops_dead_ones() {
        let now = 10 * crate::state::ledger::DELIVERY_KEEP_MS;
        let recs = vec![
            a(now - 9, "x", "id:0"),       // before any delivery of its call: useless
            d(now - 8, "x", "k1", "id:1"), // superseded by the next delivery of k1: kept, an earlier copy
            a(now - 7, "x", "id:1"),       // its acknowledgement with it
            d(now - 6, "x", "k1", "id:2"), // kept
            d(now - 5, "y", "k1", "id:3"), // followed by y's compaction: dead
            Record::Compaction { t: now - 4, host: Host::Codex, conv: "y", reach: Reach::All },
            // A clock that went back: still after, by file order.
            a(now - 100, "x", "id:2"),                                              // kept
            d(now - crate::state::ledger::DELIVERY_KEEP_MS - 1, "z", "k9", "id:9"), // too old
            d(now - 3, "y", "k2", "id:4"),                                          // after the compaction: kept
        ];
        let kept = trim(&recs, now);
        let ledger: Vec<&Record> = kept.iter().filter(|r| matches!(r, Record::Delivery(_) | Record::Ack(_))).collect();
        assert_eq!(ledger, vec![&recs[1], &recs[2], &recs[3], &recs[6], &recs[8]]);
        let v = View { records: kept.clone() };
        let (at, dl) = v.latest_delivery("x", "k1").unwrap();
        assert_eq!(dl.call_ref, "id:2");
        assert_eq!(v.acks_after("id:2", at).len(), 1);
        assert!(v.latest_delivery("y", "k1").is_none(), "a dead delivery must not survive its compaction's eviction");
        // File order throughout: a trim of the trim changes nothing.
        assert_eq!(trim(&kept, now), kept);
    }

    /// A trim keeps the deliveries just before each kept one (up to
    /// MAX_STEP_BACK, ending at the first of another version), where the
    /// read path steps back to when the newer ones were withdrawn; and keeps
    /// them as a run, so that no earlier delivery of the version is reached
    /// across one of another version.
    #[test]
    fn trim_keeps_the_earlier_copies_a_withdrawn_delivery_steps_back_to() {
        let now = 10 * crate::state::ledger::DELIVERY_KEEP_MS;
        let dv = |t, version, r| {
            Record::Delivery(Delivery {
                t,
                host: Host::Codex,
                conv: "x",
                scope: "x",
                window: None,
                call_ref: r,
                key: "k",
                version,
                digest: "dg",
                len: 1,
                base: None,
            })
        };
        let recs = vec![
            dv(now - 9, "v1", "id:1"), // behind another version: dropped
            dv(now - 8, "v2", "id:2"), // ends the run: kept
            dv(now - 7, "v1", "id:3"), // kept
            dv(now - 6, "v1", "id:4"), // kept
            dv(now - 5, "v1", "id:5"), // the newest
        ];
        let kept = trim(&recs, now);
        let refs: Vec<&str> = kept
            .iter()
            .filter_map(|r| match r {
                Record::Delivery(d) => Some(d.call_ref),
                _ => None,
            })
            .collect();
        assert_eq!(refs, ["id:2", "id:3", "id:4", "id:5"]);
        assert_eq!(trim(&kept, now), kept);
        // A compaction between two copies: the earlier one is dead, not kept
        // (the read path would otherwise reach it once the compaction is
        // forgotten).
        let mut compacted = recs.clone();
        compacted.insert(4, Record::Compaction { t: now - 6, host: Host::Codex, conv: "x", reach: Reach::All });
        let refs: Vec<&str> = trim(&compacted, now)
            .iter()
            .filter_map(|r| match r {
                Record::Delivery(d) => Some(d.call_ref),
                _ => None,
            })
            .collect();
        assert_eq!(refs, ["id:5"]);
        // Nor a diff's base from before a compaction (the diff after it).
        let diff = Record::Delivery(Delivery {
            base: Some("v1"),
            version: "v2",
            call_ref: "id:6",
            ..match &recs[4] {
                Record::Delivery(d) => d.clone(),
                _ => unreachable!(),
            }
        });
        let based = vec![
            recs[4].clone(),
            Record::Compaction { t: now - 5, host: Host::Codex, conv: "x", reach: Reach::All },
            diff,
        ];
        let n = trim(&based, now).iter().filter(|r| matches!(r, Record::Delivery(_))).count();
        assert_eq!(n, 1, "only the diff");
        // At most MAX_STEP_BACK before the newest, all of its version.
        let many: Vec<Record> = (0..8)
            .map(|i| {
                dv(now - 20 + i, "v1", ["id:a", "id:b", "id:c", "id:d", "id:e", "id:f", "id:g", "id:h"][i as usize])
            })
            .collect();
        let n = trim(&many, now).iter().filter(|r| matches!(r, Record::Delivery(_))).count();
        assert_eq!(n, 1 + crate::state::ledger::MAX_STEP_BACK);
    }

    #[test]
    fn trim_keeps_what_a_diff_rests_on() {
        let now = 10 * crate::state::ledger::DELIVERY_KEEP_MS;
        let dv = |t, version, r, base| {
            let Record::Delivery(d) = d(t, "x", "k", r) else { unreachable!() };
            Record::Delivery(Delivery { version, base, ..d })
        };
        let recs = vec![
            dv(now - 9, "v0", "id:0", None),       // an older version nothing rests on: dropped
            dv(now - 8, "v1", "id:1", None),       // the base of the base: kept
            a(now - 7, "x", "id:1"),               // with its acknowledgement
            dv(now - 6, "v2", "id:2", Some("v1")), // the base, itself a diff: kept
            a(now - 5, "x", "id:2"),
            dv(now - 4, "v3", "id:3", Some("v2")), // the newest: kept
            a(now - 3, "x", "id:3"),
        ];
        let kept = trim(&recs, now);
        let ledger: Vec<&Record> = kept.iter().filter(|r| matches!(r, Record::Delivery(_) | Record::Ack(_))).collect();
        assert_eq!(ledger, recs[1..].iter().collect::<Vec<_>>());
        assert_eq!(trim(&kept, now), kept);
        // A base that is gone stays gone: the diff alone is kept.
        let kept = trim(&[recs[5].clone(), recs[6].clone()], now);
        assert_eq!(kept.iter().filter(|r| matches!(r, Record::Delivery(_))).count(), 1);
    }

    fn dp<'a>(conv: &'a str, window: &'a str, r: &'a str) -> Record<'a> {
        let Record::Delivery(d) = d(10 * crate::state::ledger::DELIVERY_KEEP_MS - 1, conv, "k", r) else {
            unreachable!()
        };
        Record::Delivery(Delivery { host: Host::ClaudeCode, window: Some(window), ..d })
    }

    fn refs<'a>(recs: &[Record<'a>]) -> Vec<&'a str> {
        recs.iter()
            .filter_map(|r| match r {
                Record::Delivery(d) => Some(d.call_ref),
                _ => None,
            })
            .collect()
    }

    /// A compaction ends a delivery for the trim only if it ends it for the
    /// process that received it; one that ended it only for others (a
    /// process relying on having loaded it) is kept with it, even when a
    /// later compaction of the conversation (the only one a trim kept
    /// before) would not end it for them. Before (b7a61a1) every delivery
    /// a compaction of its conversation followed was dropped.
    #[test]
    fn trim_keeps_a_delivery_only_another_processs_compaction_follows() {
        let now = 10 * crate::state::ledger::DELIVERY_KEEP_MS;
        let c = |reach| Record::Compaction { t: 2, host: Host::ClaudeCode, conv: "x", reach };
        let recs = vec![
            dp("x", "proc:1", "id:1"),
            c(Reach::MainOf(2)),
            dp("x", "proc:2", "id:2"),
            c(Reach::MainOf(2)),
            c(Reach::Agent("agent:a")),
        ];
        let full = View { records: recs.clone() };
        let kept = trim(&recs, now);
        // Process 2's own compaction ended its delivery, kept only as the
        // rest of the key after process 1's (no gap), its ending with it.
        assert_eq!(refs(&kept), ["id:1", "id:2"]);
        let v = View { records: kept.clone() };
        let (at2, _) = v.newest_in_window("x", "k", "proc:2").unwrap();
        assert!(v.compacted_after("x", "x", Some(2), at2));
        assert_eq!(refs(&trim(&recs[2..], now)), Vec::<&str>::new(), "alone, it goes");
        let (at, got) = v.newest_in_window("x", "k", "proc:1").unwrap();
        assert_eq!(got.call_ref, "id:1");
        for own in [None, Some(1), Some(2)] {
            assert_eq!(v.compacted_after("x", "x", own, at), full.compacted_after("x", "x", own, 0), "{own:?}");
        }
        assert!(!v.compacted_after("x", "x", Some(1), at), "its own process holds it");
        assert!(v.compacted_after("x", "x", None, at), "a loader does not");
        assert_eq!(trim(&kept, now), kept);
        // Its own process's compaction (or one of everything) ends it.
        for reach in [Reach::MainOf(1), Reach::All, Reach::Main] {
            let recs = vec![dp("x", "proc:1", "id:1"), c(reach)];
            assert!(refs(&trim(&recs, now)).is_empty(), "{reach:?}");
        }
        // A window that names no process: any compaction of its thread ends it.
        let Record::Delivery(plain) = dp("x", "proc:1", "id:1") else { unreachable!() };
        let recs = vec![Record::Delivery(Delivery { window: None, ..plain }), c(Reach::MainOf(2))];
        assert!(refs(&trim(&recs, now)).is_empty());
    }

    /// A process's own newest delivery of a key is kept though the other
    /// process delivered the key more often since than a rewind steps back
    /// over, and with everything after it (no gap: the newest of each
    /// window reads as on the whole file); a process's latest start (in
    /// file order) is kept with it. Before (b7a61a1) only the newest
    /// delivery of the key and the four before it were kept.
    #[test]
    fn trim_keeps_each_windows_newest_delivery_and_everything_after_it() {
        let now = 10 * crate::state::ledger::DELIVERY_KEEP_MS;
        let ids: Vec<String> = (0..40).map(|i| format!("id:{i}")).collect();
        let mut recs = vec![
            Record::Lineage { t: now - 5, host: Host::ClaudeCode, pid: 1, conv: "y" },
            // A later start stamped earlier (a clock that went back).
            Record::Lineage { t: now - 6, host: Host::ClaudeCode, pid: 1, conv: "x" },
            dp("x", "proc:1", "id:own"),
        ];
        recs.extend(ids[..8].iter().map(|r| dp("x", "proc:2", r)));
        let full = View { records: recs.clone() };
        let kept = trim(&recs, now);
        assert_eq!(refs(&kept).len(), 9, "{:?}", refs(&kept));
        let v = View { records: kept.clone() };
        assert_eq!(v.newest_in_window("x", "k", "proc:1").unwrap().1.call_ref, "id:own");
        assert_eq!(v.latest_delivery("x", "k").unwrap().1.call_ref, "id:7");
        let start = |v: &View<'_>| {
            let (at, conv) = v.latest_start(Host::ClaudeCode, 1).unwrap();
            (conv.to_string(), v.records[..at].iter().filter(|r| matches!(r, Record::Delivery(_))).count())
        };
        assert_eq!(start(&v), start(&full), "the latest start, by file order, before the delivery");
        assert_eq!(trim(&kept, now), kept);
        // Bounded: a key keeps at most MAX_KEY_DELIVERIES; an older own copy
        // beyond them goes (the newest then decides, as before).
        let mut many = recs[..3].to_vec();
        many.extend(ids.iter().map(|r| dp("x", "proc:2", r)));
        let kept = trim(&many, now);
        assert_eq!(refs(&kept).len(), crate::state::ledger::MAX_KEY_DELIVERIES);
        assert!(View { records: kept }.newest_in_window("x", "k", "proc:1").is_none());
        // An older window's copy behind another window's delivery of the
        // key stays unread: the newest in a window is read only across
        // other processes' deliveries.
        let mixed = vec![dp("x", "proc:1", "id:own"), dp("x", "w:0", "id:w")];
        assert!(View { records: trim(&mixed, now) }.newest_in_window("x", "k", "proc:1").is_none());
    }

    /// The compaction records kept for the deliveries are bounded; a
    /// conversation's deliveries before one that does not fit go.
    #[test]
    fn trim_bounds_the_compactions_kept_for_deliveries() {
        let now = 10 * crate::state::ledger::DELIVERY_KEEP_MS;
        let n = crate::state::ledger::MAX_KEPT_COMPACTIONS;
        let mut recs = vec![dp("x", "proc:1", "id:old")];
        recs.extend((0..n).map(|_| Record::Compaction {
            t: 2,
            host: Host::ClaudeCode,
            conv: "x",
            reach: Reach::MainOf(2),
        }));
        recs.push(dp("x", "proc:1", "id:mid"));
        recs.push(Record::Compaction { t: 3, host: Host::ClaudeCode, conv: "x", reach: Reach::MainOf(2) });
        let Record::Delivery(d) = dp("x", "proc:1", "id:new") else { unreachable!() };
        recs.push(Record::Delivery(Delivery { key: "k2", ..d }));
        let kept = trim(&recs, now);
        assert_eq!(refs(&kept), ["id:mid", "id:new"], "id:old's compactions did not all fit");
        let compactions = kept.iter().filter(|r| matches!(r, Record::Compaction { .. })).count();
        assert_eq!(compactions, n);
        let v = View { records: kept };
        let (at, _) = v.latest_delivery("x", "k").unwrap();
        assert!(v.compacted_after("x", "x", None, at));
    }

    #[test]
    fn trim_bounds_the_ledger() {
        let now = 10 * crate::state::ledger::DELIVERY_KEEP_MS;
        let keys: Vec<String> = (0..2000).map(|i| format!("k{i}")).collect();
        let refs: Vec<String> = (0..2000).map(|i| format!("id:{i}")).collect();
        let mut recs = Vec::new();
        for i in 0..2000 {
            recs.push(d(now - 5000 + i as u64, "x", &keys[i], &refs[i]));
            recs.push(a(now - 5000 + i as u64, "x", &refs[i]));
        }
        let kept = trim(&recs, now);
        let n = kept.iter().filter(|r| matches!(r, Record::Delivery(_))).count();
        assert_eq!(n, crate::state::ledger::MAX_DELIVERIES);
        // The newest survive, with their acknowledgements.
        let v = View { records: kept };
        assert!(v.latest_delivery("x", "k1999").is_some());
        assert!(v.latest_delivery("x", "k0").is_none());
        assert_eq!(
            v.records.iter().filter(|r| matches!(r, Record::Ack(_))).count(),
            crate::state::ledger::MAX_DELIVERIES
        );
    }
}

mod append_tests {
    use crate::state::journal::*;

    #[test]
    fn a_torn_tail_does_not_swallow_the_next_record() {
        let tmp = tempfile::tempdir().unwrap();
        let j = Journal::new(tmp.path());
        fs::write(j.path(), "S\t1\tcursor\ta\tx\nS\t2\tcur").unwrap();
        j.append(&[Record::End { t: 3, host: Host::Cursor, conv: "a" }], 3).unwrap();
        let text = j.read().unwrap();
        let recs = parse(&text);
        assert_eq!(recs.len(), 2, "{text:?}");
        assert!(matches!(recs[1], Record::End { t: 3, .. }));
    }
}

mod numbers {
    use crate::state::journal::record::parse_u64;
    use proptest::prelude::*;

    /// The hand parse answers as `str::parse::<u64>` does, refusals included.
    #[test]
    fn parse_u64_is_std_parse() {
        let table = [
            "",
            "+",
            "-",
            "-0",
            "+0",
            "0",
            "00",
            "7",
            "+7",
            "++7",
            "1796249043592",
            " 1",
            "1 ",
            "1a",
            "a1",
            "1.5",
            "18446744073709551615", // u64::MAX
            "18446744073709551616", // one over
            "+18446744073709551615",
            "99999999999999999999",
            "9999999999999999999", // 19 digits
            "0000000000000000000018446744073709551615",
            "00000000000000000000000000000000000000001",
            "１", // a full-width digit
            "1\u{0}",
        ];
        for s in table {
            assert_eq!(parse_u64(s), s.parse::<u64>().ok(), "{s:?}");
        }
    }

    proptest! {
        #[test]
        fn parse_u64_is_std_parse_on_anything(s in "[+\\-]?[0-9a]{0,24}", n in any::<u64>()) {
            prop_assert_eq!(parse_u64(&s), s.parse::<u64>().ok());
            let t = n.to_string();
            prop_assert_eq!(parse_u64(&t), Some(n));
            let padded = format!("+000{t}");
            prop_assert_eq!(parse_u64(&padded), Some(n));
        }
    }
}
