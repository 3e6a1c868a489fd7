//! Property-based fuzzing (proptest) of everything that parses outside
//! input: each host's payload parser, the whole hook runner on arbitrary
//! bytes, the gate policy parser and globs, the journal line format, and the
//! installer's JSON reader and config merger. Corpora are seeded from the
//! captured host payloads (tests/fixtures/payloads), mutated.
//!
//! Cases per target: `PROPTEST_CASES` (default 256; 10,000 with
//! `LEANCTX_STRESS=1`), half from a fixed seed and half from a fresh one it
//! prints. `LEANCTX_SEED=S` replays seed S with all the cases (failures
//! print the minimal input and the seed).

use crate::rng;
use crate::support::payloads;
use leanctx::Host;
use leanctx::gate::policy;
use leanctx::gate::tool::ToolRef;
use leanctx::gate::{self, Loaded};
use leanctx::hook::payload::Input;
use leanctx::hook::{self, HookContext};
use leanctx::hosts::{self, HookEnv};
use leanctx::state::journal::{self, Call, Reach, Record};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::OnceLock;

/// The fixed seed every run starts with.
const FIXED_SEED: u64 = 16;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(if rng::stress() {
        10_000
    } else {
        256
    })
}

/// Run `test` on `cases()` inputs from `strategy`; print what ran.
fn fuzz<S: Strategy>(name: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    // The cases are shared between a fixed seed (reproducible in CI) and a
    // fresh one (`LEANCTX_SEED` replays one seed with all the cases).
    let seeds = rng::seeds(&format!("fuzz[{name}]"), &[FIXED_SEED]);
    let n = cases();
    let per_seed = n.div_ceil(seeds.len() as u32);
    let started = std::time::Instant::now();
    for &seed in &seeds {
        let config =
            Config { cases: per_seed, rng_seed: RngSeed::Fixed(seed), failure_persistence: None, ..Config::default() };
        let mut runner = TestRunner::new(config);
        if let Err(e) = runner.run(&strategy, &test) {
            panic!("fuzz[{name}] failed (replay: LEANCTX_SEED={seed} PROPTEST_CASES={per_seed}): {e}");
        }
    }
    println!(
        "fuzz[{name}]: {} inputs (seeds {seeds:?}), no crash, {:.2} s",
        per_seed as usize * seeds.len(),
        started.elapsed().as_secs_f64()
    );
}

/// Every captured payload (the seed corpus), with the host it came from.
fn corpus() -> &'static Vec<(Host, Value)> {
    static C: OnceLock<Vec<(Host, Value)>> = OnceLock::new();
    C.get_or_init(|| {
        let mut out = Vec::new();
        for (dir, host) in [
            ("claude", Host::ClaudeCode),
            ("codex", Host::Codex),
            ("cursor", Host::Cursor),
            ("codebuddy", Host::CodeBuddy),
        ] {
            let mut scen: Vec<_> =
                std::fs::read_dir(payloads().join(dir)).unwrap().flatten().map(|e| e.path()).collect();
            scen.sort();
            for s in scen {
                let mut files: Vec<_> = std::fs::read_dir(&s).unwrap().flatten().map(|e| e.path()).collect();
                files.sort();
                for f in files.iter().filter(|p| p.extension().is_some_and(|e| e == "json")) {
                    let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
                    out.push((host, v));
                }
            }
        }
        assert!(out.len() > 150, "corpus: only {} payloads", out.len());
        out
    })
}

const KEYS: &[&str] = &[
    "hook_event_name",
    "session_id",
    "conversation_id",
    "agent_id",
    "subagent_id",
    "parent_conversation_id",
    "tool_name",
    "tool_input",
    "tool_use_id",
    "transcript_path",
    "cwd",
    "workspace_roots",
    "source",
    "command",
    "url",
    "mcp_server",
    "prompt",
    "name",
    "arguments",
    "_meta",
    "rules",
    "tool",
    "server",
    "action",
    "message",
    "hooks",
    "matcher",
    "type",
    "version",
];

const WORDS: &[&str] = &[
    "",
    "-",
    "%",
    ".",
    "..",
    "a/b",
    "../../etc/passwd",
    "a\tb",
    "a\nb",
    "\u{0}",
    "\u{200b}",
    "d\u{435}lete_repo",
    "mcp__",
    "mcp__a",
    "mcp__a__",
    "mcp____b",
    "mcp__a__b__c",
    "MCP:",
    "MCP:x",
    "MCP::y",
    "MCP:x:y",
    "PreToolUse",
    "SessionStart",
    "SessionEnd",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "beforeMCPExecution",
    "sessionStart",
    "subagentStart",
    "subagentStop",
    "preCompact",
    "sessionEnd",
    "clear",
    "compact",
    "resume",
    "allow",
    "deny",
    "ask",
    "*",
    "?",
    "**",
    "leanctx hook claude",
    "/usr/bin/leanctx hook codex",
    "0e1f4ed8-d858-4557-9fc5-6cbf5298eb8b",
];

fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(WORDS).prop_map(str::to_string),
        2 => "[a-zA-Z0-9_:.@+=-]{0,24}",
        2 => any::<String>(),
        1 => (prop::sample::select(WORDS), 0usize..5000).prop_map(|(w, n)| w.repeat(n.min(2000) / w.len().max(1) + 1)),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        arb_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![3 => prop::sample::select(KEYS).prop_map(str::to_string), 1 => arb_string()];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..7).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

#[derive(Clone, Debug)]
enum Mutation {
    Set(String, Value),
    Remove(String),
    SetNested(String, String, Value),
}

fn arb_mutation() -> impl Strategy<Value = Mutation> {
    let key = || prop_oneof![4 => prop::sample::select(KEYS).prop_map(str::to_string), 1 => arb_string()];
    prop_oneof![
        3 => (key(), arb_json()).prop_map(|(k, v)| Mutation::Set(k, v)),
        3 => (key(), arb_string()).prop_map(|(k, s)| Mutation::Set(k, Value::String(s))),
        1 => key().prop_map(Mutation::Remove),
        1 => (key(), key(), arb_json()).prop_map(|(a, b, v)| Mutation::SetNested(a, b, v)),
    ]
}

fn mutate(mut v: Value, muts: &[Mutation]) -> Value {
    for m in muts {
        let Value::Object(map) = &mut v else { return v };
        match m {
            Mutation::Set(k, x) => {
                map.insert(k.clone(), x.clone());
            }
            Mutation::Remove(k) => {
                map.shift_remove(k);
            }
            Mutation::SetNested(a, b, x) => {
                let inner = map.entry(a.clone()).or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(m2) = inner {
                    m2.insert(b.clone(), x.clone());
                }
            }
        }
    }
    v
}

/// A payload: a mutated capture (most of the time) or arbitrary JSON.
fn arb_payload() -> impl Strategy<Value = (Host, Value)> {
    let host = prop::sample::select(Host::ALL.to_vec());
    prop_oneof![
        4 => (0..corpus().len(), prop::collection::vec(arb_mutation(), 0..6), any::<bool>()).prop_map(|(i, muts, keep_host)| {
            let (h, v) = corpus()[i].clone();
            let h = if keep_host { h } else { Host::ALL[i % 4] };
            (h, mutate(v, &muts))
        }),
        1 => (host, arb_json()),
    ]
}

#[derive(Clone, Debug)]
enum ByteMut {
    Flip(usize, u8),
    Cut(usize),
    Insert(usize, Vec<u8>),
}

/// Bytes: a captured payload with byte-level damage, or anything at all.
fn arb_bytes() -> impl Strategy<Value = (Host, Vec<u8>)> {
    let byte_mut = prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| ByteMut::Flip(i, b)),
        any::<usize>().prop_map(ByteMut::Cut),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 0..16)).prop_map(|(i, v)| ByteMut::Insert(i, v)),
    ];
    prop_oneof![
        3 => (0..corpus().len(), prop::collection::vec(byte_mut, 0..6)).prop_map(|(i, muts)| {
            let (h, v) = &corpus()[i];
            let mut b = serde_json::to_vec(v).unwrap();
            for m in muts {
                match m {
                    ByteMut::Flip(i, x) if !b.is_empty() => {
                        let n = b.len();
                        b[i % n] = x;
                    }
                    ByteMut::Cut(i) => b.truncate(i % (b.len() + 1)),
                    ByteMut::Insert(i, v) => {
                        let at = i % (b.len() + 1);
                        b.splice(at..at, v);
                    }
                    _ => {}
                }
            }
            (*h, b)
        }),
        1 => (prop::sample::select(Host::ALL.to_vec()), prop::collection::vec(any::<u8>(), 0..600)),
    ]
}

fn check_event(ev: &leanctx::hosts::event::Event) -> Result<(), TestCaseError> {
    for id in [&ev.conversation, &ev.call_id].into_iter().flatten() {
        prop_assert!(leanctx::base::ids::is_valid_id(id), "invalid id kept: {id:?}");
    }
    for a in [&ev.agent, &ev.started_agent].into_iter().flatten() {
        let raw = a.strip_prefix("agent:").or(a.strip_prefix("task:"));
        prop_assert!(raw.is_some_and(leanctx::base::ids::is_valid_id), "bad agent scope {a:?}");
    }
    if ev.is_mcp_call() {
        prop_assert!(ev.tool.is_some());
        let fp = ev.args_fingerprint.as_deref().unwrap_or("");
        prop_assert!(fp.len() == 64 && fp.bytes().all(|b| b.is_ascii_hexdigit()), "fingerprint {fp:?}");
    }
    if let Some(p) = &ev.transcript_path {
        prop_assert!(!p.chars().any(char::is_control));
    }
    Ok(())
}

/// Each host's payload parser, on mutated captures and arbitrary JSON.
#[test]
fn fuzz_host_payload_parsers() {
    const EVENTS: &[&str] = &["PreToolUse", "beforeMCPExecution", "SessionEnd", "nonsense"];
    fuzz("hosts::parse", (arb_payload(), prop::option::of(prop::sample::select(EVENTS))), |((host, v), ov)| {
        let env = HookEnv { cursor_task_id: Some("t1".into()), claude_pid: Some(42), codex_home: None };
        for h in [host, Host::ClaudeCode, Host::Cursor] {
            let ev = hosts::parse(h, &v, ov, &env);
            check_event(&ev)?;
            // Whatever the verdict, the answer is one JSON object or nothing.
            for verdict in [gate::Verdict::NoOpinion] {
                if let Some(a) = hosts::answer(h, &ev.name, ev.is_mcp_call(), &verdict) {
                    prop_assert!(serde_json::from_str::<Value>(&a).is_ok_and(|x| x.is_object()));
                }
            }
        }
        Ok(())
    });
}

fn data_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    crate::support::make_private(d.path());
    std::fs::write(
        d.path().join("gate.json"),
        json!({"rules":[{"tool":"delete_*","action":"deny"},{"server":"ctx","action":"allow"}]}).to_string(),
    )
    .unwrap();
    d
}

fn check_state(dir: &Path) -> Result<(), TestCaseError> {
    if let Ok(text) = std::fs::read_to_string(dir.join("journal")) {
        prop_assert!(text.is_empty() || text.ends_with('\n'));
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            prop_assert!(journal::is_known_line(l), "journal line does not parse: {l:?}");
        }
    }
    if let Ok(t) = std::fs::read_to_string(dir.join("active_transcript.json")) {
        prop_assert!(leanctx::state::slot::Slot::parse(&t).is_some(), "slot does not parse: {t:?}");
    }
    Ok(())
}

/// The whole hook runner (parse, record, gate, answer) on arbitrary bytes,
/// complete or cut off by the stdin deadline, at any time of the clock.
#[test]
fn fuzz_hook_runner_on_bytes() {
    let dir = data_dir();
    let now = prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>(), 1_700_000_000_000u64..1_900_000_000_000];
    let strategy = (arb_bytes(), any::<bool>(), now, prop::option::of(arb_string()), prop::option::of(arb_string()));
    fuzz("hook::run", strategy, |((host, bytes), complete, now_ms, ov, task)| {
        let ctx = HookContext {
            host,
            event_override: ov,
            env: HookEnv {
                cursor_task_id: task.filter(|t| leanctx::base::ids::is_valid_id(t)),
                claude_pid: Some(7),
                codex_home: None,
            },
            now_ms,
            data_dir: Ok(dir.path().to_path_buf()),
        };
        let input = if complete { Input::Complete(bytes) } else { Input::TimedOut(bytes) };
        let out = hook::run(&ctx, input);
        match &out.stdout {
            Some(s) => prop_assert!(serde_json::from_str::<Value>(s).is_ok_and(|v| v.is_object()), "{s:?}"),
            None => prop_assert!(host != Host::Cursor, "Cursor always gets an answer"),
        }
        if let Some(ev) = &out.event {
            check_event(ev)?;
        }
        check_state(dir.path())
    });
    // And the same for well-formed payloads (mutated captures), which reach
    // the recording and gating paths far more often.
    fuzz("hook::run(json)", (arb_payload(), any::<u64>()), |((host, v), now_ms)| {
        let ctx = HookContext {
            host,
            event_override: None,
            env: HookEnv::default(),
            now_ms: now_ms % 4_000_000_000_000,
            data_dir: Ok(dir.path().to_path_buf()),
        };
        let out = hook::run(&ctx, Input::Complete(serde_json::to_vec(&v).unwrap()));
        if let Some(s) = &out.stdout {
            prop_assert!(serde_json::from_str::<Value>(s).is_ok_and(|v| v.is_object()));
        }
        check_state(dir.path())
    });
}

fn arb_policy_text() -> impl Strategy<Value = String> {
    let rule = (
        prop::option::of(arb_string()),
        prop::option::of(arb_string()),
        prop::sample::select(vec!["allow", "deny", "ask", "block", ""]),
        prop::option::of(arb_string()),
    )
        .prop_map(|(server, tool, action, message)| {
            let mut r = json!({"action": action});
            if let Some(s) = server {
                r["server"] = json!(s);
            }
            if let Some(t) = tool {
                r["tool"] = json!(t);
            }
            if let Some(m) = message {
                r["message"] = json!(m);
            }
            r
        });
    prop_oneof![
        3 => prop::collection::vec(rule, 0..6).prop_map(|rules| json!({"rules": rules}).to_string()),
        1 => arb_json().prop_map(|v| v.to_string()),
        1 => any::<String>(),
        1 => (prop::collection::vec(rule_text(), 0..4), any::<usize>()).prop_map(|(r, cut)| {
            let t = format!("{{\"rules\": [{}]}}", r.join(","));
            let mut cut = cut % (t.len() + 1);
            while !t.is_char_boundary(cut) {
                cut -= 1;
            }
            t[..cut].to_string()
        }),
    ]
}

fn rule_text() -> impl Strategy<Value = String> {
    arb_string().prop_map(|t| format!("{{\"tool\": {}, \"action\": \"deny\"}}", json!(t)))
}

/// The policy parser, the gate over it, and the globs (strict and lenient).
#[test]
fn fuzz_policy_parser_and_gate() {
    fuzz("policy::parse", (arb_policy_text(), arb_string(), prop::option::of(arb_string())), |(text, name, hint)| {
        match policy::parse(&text, Path::new("/p/gate.json")) {
            Ok(p) => {
                let tool = ToolRef::parse(&name, hint.as_deref());
                let v = gate::evaluate(&[Loaded::Policy(p.clone())], &tool);
                for h in Host::ALL {
                    if let Some(a) = hosts::answer(h, "PreToolUse", true, &v) {
                        prop_assert!(serde_json::from_str::<Value>(&a).is_ok());
                    }
                }
                for r in &p.rules {
                    for (server, n) in tool.candidates() {
                        // Lenient matching is only ever wider than strict.
                        if r.matches(server.as_deref(), &n) {
                            prop_assert!(r.matches_lenient(server.as_deref(), &n));
                        }
                    }
                }
            }
            Err(e) => {
                // A broken file names itself and a position (or why).
                prop_assert!(e.to_string().starts_with("/p/gate.json"), "{e}");
            }
        }
        Ok(())
    });
    fuzz("policy::glob", (arb_string(), arb_string()), |(p, n)| {
        let strict = policy::glob_match(&p, &n);
        let lenient = policy::glob_match_lenient(&p, &n);
        prop_assert!(!strict || lenient, "lenient narrower than strict: {p:?} {n:?}");
        if !policy::is_suspicious_name(&n) && n.chars().count() <= policy::MAX_LENIENT_NAME_CHARS {
            prop_assert_eq!(strict, lenient, "ASCII names must match exactly as before");
        }
        Ok(())
    });
}

fn arb_host() -> impl Strategy<Value = Host> {
    prop::sample::select(Host::ALL.to_vec())
}

/// Records with arbitrary fields (borrowing from a pool of strings).
#[derive(Clone, Debug)]
struct Rec {
    tag: u8,
    t: u64,
    host: Host,
    s: [String; 5],
    opt: [bool; 3],
    pid: u32,
}

fn arb_rec() -> impl Strategy<Value = Rec> {
    (
        0u8..11,
        any::<u64>(),
        arb_host(),
        [arb_string(), arb_string(), arb_string(), arb_string(), arb_string()],
        any::<[bool; 3]>(),
        any::<u32>(),
    )
        .prop_map(|(tag, t, host, s, opt, pid)| Rec { tag, t, host, s, opt, pid })
}

impl Rec {
    fn record(&self) -> Record<'_> {
        let (t, host, s) = (self.t, self.host, &self.s);
        fn o(flag: bool, v: &str) -> Option<&str> {
            flag.then_some(v)
        }
        match self.tag {
            0 => Record::Sighting { t, host, conv: &s[0], event: &s[1] },
            1 => Record::SubagentStart { t, host, conv: &s[0], agent: &s[1] },
            2 => Record::SubagentStop { t, host, conv: &s[0], agent: o(self.opt[0], &s[1]) },
            3 => Record::Call(Call {
                t,
                host,
                conv: &s[0],
                agent: o(self.opt[0], &s[1]),
                server: o(self.opt[1], &s[2]),
                tool: &s[3],
                fp: &s[4],
                call_id: o(self.opt[2], &s[1]),
                key: &s[2],
            }),
            4 => Record::Claim { t, key: &s[0], claimant: o(self.opt[0], &s[1]) },
            5 => Record::Compaction { t, host, conv: &s[0], reach: Reach::All },
            6 => Record::End { t, host, conv: &s[0] },
            7 => Record::Lineage { t, host, pid: self.pid, conv: &s[0] },
            8 => Record::Delivery(leanctx::state::ledger::Delivery {
                t,
                host,
                conv: &s[0],
                scope: &s[1],
                window: o(self.opt[0], &s[2]),
                call_ref: &s[3],
                key: &s[4],
                version: &s[2],
                digest: &s[1],
                len: u64::from(self.pid),
                base: o(self.opt[1], &s[4]),
            }),
            9 => Record::Ack(leanctx::state::ledger::Ack {
                t,
                host,
                scope: &s[0],
                call_ref: &s[1],
                digest: &s[2],
                len: u64::from(self.pid),
                whole: self.opt[1],
            }),
            _ => Record::Floor { t },
        }
    }
}

fn plain(s: &str) -> bool {
    s != "-" && !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic() && b != b'%')
}

/// The journal line format: any text parses without a panic; any record,
/// whatever its strings, writes exactly one line that parses back to the
/// same kind and time (and to the same record when its fields are plain).
#[test]
fn fuzz_journal_lines() {
    fuzz("journal::parse", prop_oneof![any::<String>(), arb_json().prop_map(|v| v.to_string())], |text| {
        let recs = journal::parse(&text);
        let view = journal::View { records: recs };
        let _ = view.concurrent(1_800_000_000_000);
        let _ = view.live_conversations(0);
        let _ = journal::trim(&view.records, u64::MAX);
        Ok(())
    });
    fuzz("journal::write_line", prop::collection::vec(arb_rec(), 1..8), |recs| {
        let mut text = String::new();
        for r in &recs {
            r.record().write_line(&mut text);
        }
        prop_assert_eq!(text.matches('\n').count(), recs.len(), "one line per record: {:?}", text);
        let back = journal::parse(&text);
        prop_assert_eq!(back.len(), recs.len(), "{:?}", text);
        for (r, b) in recs.iter().zip(&back) {
            let orig = r.record();
            prop_assert_eq!(std::mem::discriminant(&orig), std::mem::discriminant(b));
            prop_assert_eq!(orig.t(), b.t());
            if r.s.iter().all(|s| plain(s)) {
                prop_assert_eq!(&orig, b);
            }
        }
        // A trim of any records keeps only records (and parses back).
        let kept = journal::trim(&back, recs[0].t);
        let mut out = String::new();
        for r in &kept {
            r.write_line(&mut out);
        }
        prop_assert_eq!(journal::parse(&out).len(), kept.len());
        Ok(())
    });
}

/// The installer's JSON reader and its config merger: any text is parsed
/// or refused with a position, never a panic, and an untouched parse
/// renders byte for byte; on any config that parses, install is
/// idempotent, keeps every foreign entry, and uninstall removes exactly
/// ours.
#[test]
fn fuzz_installer_reader_and_merger() {
    use leanctx::install::jsonfile::{self, Node};
    use leanctx::install::{cursor, nested, spec};
    let text = prop_oneof![
        any::<String>(),
        arb_json().prop_map(|v| v.to_string()),
        (arb_json(), any::<u64>()).prop_map(|(v, seed)| layout(&v, &Layout::random(seed, true)))
    ];
    fuzz("install::jsonfile::parse", (text, any::<bool>()), |(text, comments)| {
        match jsonfile::parse(&text, comments) {
            Ok(d) => {
                prop_assert_eq!(d.render(), text.clone(), "an untouched file renders as it was");
                if !comments {
                    let strict: Result<Value, _> = serde_json::from_str(text.trim_start_matches('\u{feff}'));
                    if !text.trim().is_empty() {
                        prop_assert_eq!(strict.ok(), Some(d.root.to_value()), "the same value serde_json reads");
                    }
                }
            }
            Err(e) => prop_assert!(e.pos.line >= 1, "{e:?}"),
        }
        Ok(())
    });

    // Configs: a real-looking hooks object with foreign entries, damaged.
    let foreign = (arb_string(), arb_string())
        .prop_map(|(m, c)| json!({"matcher": m, "hooks": [{"type": "command", "command": format!("/opt/other/{c}")}]}));
    let config = (
        prop::collection::vec((prop::sample::select(WORDS), prop::collection::vec(foreign, 0..3)), 0..5),
        prop::collection::vec(arb_mutation(), 0..3),
        arb_host(),
    )
        .prop_map(|(evs, muts, host)| {
            let mut hooks = Map::new();
            for (ev, list) in evs {
                hooks.insert(ev.to_string(), Value::Array(list));
            }
            (host, mutate(json!({"hooks": hooks, "other": {"keep": true}}), &muts))
        });
    static MERGED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    fuzz("install merger", config, |(host, doc)| {
        let sp = spec::Spec::for_host(host, "/usr/local/bin/leanctx");
        let flat = matches!(leanctx::hosts::profile::profile(host).shape, spec::Shape::Flat);
        let upsert = |d: &mut Node| if flat { cursor::upsert(d, &sp) } else { nested::upsert(d, &sp) };
        let none = leanctx::install::edit::Before::default();
        let remove = |d: &mut Node| if flat { cursor::remove(d, &none) } else { nested::remove(d, host, &none) };
        let find = |d: &Node| if flat { cursor::find(&d.to_value()) } else { nested::find(&d.to_value(), host) };
        let foreign_of = |d: &Value| -> Vec<String> {
            let mut v: Vec<String> = Vec::new();
            collect_commands(d, &mut v);
            v.retain(|c| !c.contains("leanctx"));
            v.sort();
            v
        };
        let mut d = Node::from_value(&doc);
        match upsert(&mut d) {
            Err(_) => {
                prop_assert_eq!(&d.to_value(), &doc, "a refused config is left as it was");
            }
            Ok(_) => {
                MERGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                prop_assert_eq!(find(&d).len(), sp.entries.len(), "every entry of ours is found");
                prop_assert_eq!(foreign_of(&d.to_value()), foreign_of(&doc), "foreign entries kept");
                prop_assert_eq!(&d.to_value()["other"], &doc["other"]);
                let mut d2 = d.clone();
                let ch = upsert(&mut d2).unwrap();
                prop_assert!(ch.is_empty(), "re-install is idempotent: {:?}", ch);
                prop_assert_eq!(&d2.to_value(), &d.to_value());
                remove(&mut d2).unwrap();
                prop_assert!(find(&d2).is_empty(), "uninstall removes ours");
                prop_assert_eq!(foreign_of(&d2.to_value()), foreign_of(&doc), "and only ours");
            }
        }
        Ok(())
    });
    let merged = MERGED.load(std::sync::atomic::Ordering::Relaxed);
    println!("fuzz[install merger]: {merged} configs merged (the rest refused with a shape error, left unchanged)");
    assert!(merged > 0);
}

/// How a generated config is written out: the formatting users have.
#[derive(Clone, Debug)]
struct Layout {
    /// `None`: all on one line.
    indent: Option<&'static str>,
    crlf: bool,
    bom: bool,
    /// `"a": 1` rather than `"a":1`.
    space: bool,
    /// Arrays of scalars on one line inside a pretty file.
    inline_scalars: bool,
    final_newline: bool,
    /// Comments (JSONC) sprinkled in, seeded.
    comments: Option<u64>,
}

impl Layout {
    fn random(seed: u64, comments: bool) -> Layout {
        let mut r = rng::Rng::new(seed);
        Layout {
            indent: *r.pick(&[None, Some("  "), Some("    "), Some("\t"), Some("  ")]),
            crlf: r.chance(0.3),
            bom: r.chance(0.2),
            space: r.chance(0.6),
            inline_scalars: r.chance(0.5),
            final_newline: r.chance(0.7),
            comments: (comments && r.chance(0.5)).then(|| r.next_u64()),
        }
    }
}

/// Write `v` as `l` says (a small pretty-printer of its own, so the layouts
/// are not the installer's).
fn layout(v: &Value, l: &Layout) -> String {
    fn go(v: &Value, l: &Layout, depth: usize, r: &mut Option<rng::Rng>, out: &mut String) {
        let nl = if l.crlf { "\r\n" } else { "\n" };
        let (open, close, items): (char, char, Vec<(Option<&String>, &Value)>) = match v {
            Value::Object(m) => ('{', '}', m.iter().map(|(k, v)| (Some(k), v)).collect()),
            Value::Array(a) => ('[', ']', a.iter().map(|v| (None, v)).collect()),
            s => {
                out.push_str(&s.to_string());
                return;
            }
        };
        let scalars = matches!(v, Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()));
        let pretty = match l.indent {
            Some(_) if !(items.is_empty() || l.inline_scalars && scalars) => l.indent,
            _ => None,
        };
        let comment = |r: &mut Option<rng::Rng>, out: &mut String, line_ok: bool| {
            if let Some(r) = r
                && r.chance(0.25)
            {
                if line_ok && r.chance(0.5) {
                    out.push_str(" // note, \"quoted\" {x}");
                } else {
                    out.push_str(" /* c, ] */");
                }
            }
        };
        out.push(open);
        for (i, (k, x)) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
                if pretty.is_none() && l.space {
                    out.push(' ');
                }
            }
            comment(r, out, pretty.is_some());
            if let Some(ind) = pretty {
                out.push_str(nl);
                out.push_str(&ind.repeat(depth + 1));
            }
            if let Some(k) = k {
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push_str(if l.space || pretty.is_some() { ": " } else { ":" });
            }
            go(x, l, depth + 1, r, out);
        }
        if let Some(ind) = pretty {
            comment(r, out, true);
            out.push_str(nl);
            out.push_str(&ind.repeat(depth));
        }
        out.push(close);
    }
    let mut out = String::new();
    if l.bom {
        out.push('\u{feff}');
    }
    let mut r = l.comments.map(rng::Rng::new);
    go(v, l, 0, &mut r, &mut out);
    if l.final_newline {
        out.push_str(if l.crlf { "\r\n" } else { "\n" });
    }
    out
}

/// A user's config in `host`'s shape: random keys and values around a
/// `hooks` object of foreign entries (never ours, never an empty `hooks` or
/// an empty array for an event leanctx registers: uninstall cannot tell
/// those from the ones an install emptied, README).
fn arb_user_config() -> impl Strategy<Value = (Host, Value)> {
    let handler = (arb_string(), prop::option::of(1u64..100), any::<bool>()).prop_map(|(c, t, args)| {
        let c = c.replace("leanctx", "lean-ctx"); // never ours
        let mut h = json!({"type": "command", "command": format!("/opt/other/{c}")});
        if let Some(t) = t {
            h["timeout"] = json!(t);
        }
        if args {
            h["args"] = json!(["x", c]);
        }
        h
    });
    let group = (prop::option::of(arb_string()), prop::collection::vec(handler, 1..3)).prop_map(|(m, hs)| {
        let mut g = Map::new();
        if let Some(m) = m {
            g.insert("matcher".into(), json!(m));
        }
        g.insert("hooks".into(), Value::Array(hs));
        Value::Object(g)
    });
    let entry = (arb_string(), prop::option::of(1u64..100)).prop_map(|(c, t)| {
        let c = c.replace("leanctx", "lean-ctx"); // never ours
        let mut e = json!({"command": format!("/opt/other/{c}")});
        if let Some(t) = t {
            e["timeout"] = json!(t);
        }
        e
    });
    let events = |words: &'static [&'static str]| prop::collection::vec(prop::sample::select(words), 1..4);
    let other = || prop::collection::vec((prop::sample::select(KEYS), arb_json()), 0..4);
    let nested_host = prop::sample::select(vec![Host::ClaudeCode, Host::Codex, Host::CodeBuddy]);
    prop_oneof![
        (
            nested_host,
            events(&["Stop", "PreToolUse", "Notification", "SessionStart", "PostToolUse"]),
            prop::collection::vec(prop::collection::vec(group, 1..3), 4),
            other(),
            any::<bool>()
        )
            .prop_map(|(host, evs, lists, other, hooks_first)| {
                let mut hooks = Map::new();
                for (ev, list) in evs.into_iter().zip(lists) {
                    hooks.insert(ev.to_string(), Value::Array(list));
                }
                (host, user_doc(hooks, other, hooks_first, false))
            }),
        (
            events(&["stop", "beforeShellExecution", "sessionStart", "afterFileEdit"]),
            prop::collection::vec(prop::collection::vec(entry, 1..3), 4),
            other(),
            any::<bool>()
        )
            .prop_map(|(evs, lists, other, hooks_first)| {
                let mut hooks = Map::new();
                for (ev, list) in evs.into_iter().zip(lists) {
                    hooks.insert(ev.to_string(), Value::Array(list));
                }
                (Host::Cursor, user_doc(hooks, other, hooks_first, true))
            }),
    ]
}

fn user_doc(hooks: Map<String, Value>, other: Vec<(&str, Value)>, hooks_first: bool, cursor: bool) -> Value {
    let mut m = Map::new();
    if cursor {
        m.insert("version".into(), json!(1));
    }
    if hooks_first && !hooks.is_empty() {
        m.insert("hooks".into(), Value::Object(hooks.clone()));
    }
    for (k, v) in other {
        if k != "hooks" && k != "version" {
            m.insert(k.to_string(), v);
        }
    }
    if !hooks_first && !hooks.is_empty() {
        m.insert("hooks".into(), Value::Object(hooks));
    }
    Value::Object(m)
}

/// The promise of issue 15: on a user's file in any layout (indentation,
/// one line, CRLF, BOM, comments where allowed), install then uninstall
/// gives the file back byte for byte, install twice is install once, and
/// the installed file is valid JSON (plain JSON when the original was)
/// holding every entry of ours.
#[test]
fn fuzz_install_uninstall_round_trip_is_byte_for_byte() {
    use leanctx::install::jsonfile;
    use leanctx::install::{cursor, nested, spec};
    let case = (arb_user_config(), any::<u64>(), any::<bool>(), prop::option::of(arb_json()));
    fuzz("install round trip", case, |((host, doc), seed, comments, root)| {
        let doc = match root {
            // Sometimes not an object at all, or an empty file: refused or
            // created, never damaged.
            Some(v) if !v.is_object() => v,
            _ => doc,
        };
        let text = layout(&doc, &Layout::random(seed, comments));
        let sp = spec::Spec::for_host(host, "'/opt/my tools/leanctx'");
        let flat = matches!(leanctx::hosts::profile::profile(host).shape, spec::Shape::Flat);
        let install = |t: &str| -> Option<(String, usize)> {
            let mut d = jsonfile::parse(t, comments).expect("a generated file parses");
            let ch = if flat { cursor::upsert(&mut d.root, &sp) } else { nested::upsert(&mut d.root, &sp) }.ok()?;
            Some((d.render(), ch.added.len() + ch.updated.len() + ch.removed.len()))
        };
        let uninstall = |t: &str| -> String {
            let mut d = jsonfile::parse(t, comments).expect("an installed file parses");
            // What the original held, as its backup would show it.
            let before = leanctx::install::edit::Before::of(&text);
            if flat { cursor::remove(&mut d.root, &before) } else { nested::remove(&mut d.root, host, &before) }
                .unwrap();
            d.render()
        };
        let Some((installed, n)) = install(&text) else {
            prop_assert!(!doc.is_object(), "only a non-object is refused: {text}");
            return Ok(());
        };
        prop_assert_eq!(n, sp.entries.len(), "every entry added");
        let plain = installed.trim_start_matches('\u{feff}');
        let value: Value = if comments {
            jsonfile::parse(&installed, true).map_err(|e| TestCaseError::fail(format!("{e:?}")))?.root.to_value()
        } else {
            serde_json::from_str(plain).map_err(|e| TestCaseError::fail(format!("{e}: {installed}")))?
        };
        let found = if flat { cursor::find(&value) } else { nested::find(&value, host) };
        prop_assert_eq!(found.len(), sp.entries.len());
        prop_assert_eq!(install(&installed), Some((installed.clone(), 0)), "install twice = install once");
        prop_assert_eq!(uninstall(&installed), text.clone(), "install then uninstall = the original, byte for byte");
        Ok(())
    });
}

fn collect_commands(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "command"
                    && let Value::String(s) = x
                {
                    out.push(s.clone());
                }
                collect_commands(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_commands(x, out)),
        _ => {}
    }
}

/// Found by the fuzzer when the installer re-serialised files: a number in
/// a user's config came back different (`-4.852405375003185e-17` was
/// re-read as `…31845e-17`). Now numbers are never re-printed at all.
#[test]
fn installer_rewrite_keeps_every_number() {
    use leanctx::install::{jsonfile, nested, spec};
    for text in
        ["{\"x\": [-4.852405375003185e-17]}", "{\"x\": 0.1, \"y\": 1e300, \"z\": 2.2250738585072014e-308, \"w\": 1E3}"]
    {
        let mut d = jsonfile::parse(text, false).unwrap();
        nested::upsert(&mut d.root, &spec::Spec::for_host(Host::Codex, "/x/leanctx")).unwrap();
        let installed = d.render();
        assert!(installed.starts_with(&text[..text.len() - 1]), "{installed}");
        let mut d = jsonfile::parse(&installed, false).unwrap();
        nested::remove(&mut d.root, Host::Codex, &Default::default()).unwrap();
        assert_eq!(d.render(), text);
    }
}

/// A Codex config.toml as users write it: other settings, comments, blank
/// lines, tables after the hooks, the features flag in some spelling, and
/// foreign hooks in one of the three forms Codex reads.
fn codex_toml(seed: u64) -> String {
    let mut r = rng::Rng::new(seed);
    let q = |s: &str| Value::String(s.to_string()).to_string();
    let mut top = Vec::new();
    let mut tables = Vec::new();
    if r.chance(0.7) {
        let model = *r.pick(&["o3", "gpt-5", "a \"b\""]);
        top.push(format!("model = {}{}", q(model), *r.pick(&["", " # mine", "   "])));
    }
    if r.chance(0.4) {
        top.push(format!("tool_output_token_limit = {}", r.range(1, 100_000)));
    }
    match r.below(4) {
        0 => tables.push(format!("[features]\nhooks = {}", r.pick(&["true", "false"]))),
        1 => top.push("features.hooks = true".into()),
        2 => top.push("features = { hooks = true, other = 1 }".into()),
        _ => {}
    }
    let handler = |r: &mut rng::Rng| {
        format!(
            "type = \"command\"\ncommand = {}{}",
            q(&format!("/opt/other/{}", r.pick(WORDS).replace("leanctx", "lean-ctx"))),
            if r.chance(0.5) { format!("\ntimeout = {}", r.range(1, 60)) } else { String::new() },
        )
    };
    let events: Vec<&str> = (0..r.range(0, 3)).map(|_| *r.pick(&["Stop", "PreToolUse", "Notification"])).collect();
    let mut events = events;
    events.sort_unstable();
    events.dedup();
    let form = r.below(3);
    let inline = |r: &mut rng::Rng| -> String {
        let h = handler(r).replace('\n', ", ");
        format!("{{ hooks = [{{ {h} }}] }}")
    };
    match form {
        0 => {
            for ev in &events {
                for _ in 0..r.range(1, 2) {
                    let m = if r.chance(0.5) {
                        format!("matcher = {}\n", q(WORDS[r.below(WORDS.len() as u64) as usize]))
                    } else {
                        String::new()
                    };
                    tables.push(format!("[[hooks.{ev}]]\n{m}\n[[hooks.{ev}.hooks]]\n{}", handler(&mut r)));
                }
            }
        }
        1 if !events.is_empty() => {
            let mut t = String::from("[hooks]");
            for ev in &events {
                if r.chance(0.5) {
                    t.push_str(&format!("\n{ev} = [\n  {},\n]", inline(&mut r)));
                } else {
                    t.push_str(&format!("\n{ev} = [{}]", inline(&mut r)));
                }
            }
            tables.push(t);
        }
        _ => {
            for ev in &events {
                top.push(format!("hooks.{ev} = [{}]", inline(&mut r)));
            }
        }
    }
    if r.chance(0.6) {
        tables.push("[mcp_servers.docs]\ncommand = \"docs-mcp\" # keep\nargs = [\"a\",  \"b\"]".into());
    }
    if tables.len() > 1 && r.chance(0.3) {
        let last = tables.len() - 1;
        tables.swap(0, last);
    }
    let mut out = String::new();
    if r.chance(0.3) {
        out.push_str("# my codex config\n\n");
    }
    for l in top {
        out.push_str(&l);
        out.push('\n');
    }
    for t in tables {
        out.push_str(if r.chance(0.7) { "\n" } else { "" });
        out.push_str(&t);
        out.push('\n');
    }
    if r.chance(0.3) {
        out.push_str("\n# the end\n");
    }
    if r.chance(0.2) {
        out = out.replace('\n', "\r\n");
    }
    out
}

/// The same promise for Codex's config.toml: install is idempotent and
/// install then uninstall is the identity on bytes, whatever form the
/// user's hooks (and the rest of the file) take.
#[test]
fn fuzz_codex_config_toml_round_trip_is_byte_for_byte() {
    use leanctx::install::{nested, spec, tomlfile};
    let sp = spec::Spec::for_host(Host::Codex, "'/opt/my tools/leanctx'");
    fuzz("codex config.toml round trip", any::<u64>(), |seed| {
        let text = codex_toml(seed);
        let edit = |t: &str, install: bool| -> Result<String, TestCaseError> {
            let mut d = tomlfile::parse(t).map_err(|e| TestCaseError::fail(format!("{e:?}\n{t}")))?;
            let mut tree = d.tree();
            if install {
                nested::upsert(&mut tree, &sp)
            } else {
                nested::remove(&mut tree, Host::Codex, &Default::default())
            }
            .map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            d.apply(&tree);
            Ok(d.render())
        };
        let installed = edit(&text, true)?;
        let v = tomlfile::parse(&installed).map_err(|e| TestCaseError::fail(format!("{e:?}\n{installed}")))?;
        prop_assert_eq!(nested::find(&v.tree().to_value(), Host::Codex).len(), sp.entries.len(), "{}", installed);
        prop_assert_eq!(edit(&installed, true)?, installed.clone(), "install twice = install once");
        prop_assert_eq!(edit(&installed, false)?, text, "install then uninstall = the original\n{}", installed);
        Ok(())
    });
}
