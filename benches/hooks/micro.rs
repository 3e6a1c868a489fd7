//! The read path in process: what an MCP server pays per re-read, with 100,
//! 10,000 or 1,000,000 hook events written through `Journal::append`
//! before it. Each event is one append, as a hook makes it.

use crate::Config;
use crate::spawn::{Stats, fmt_dur};
use leanctx::Host;
use leanctx::identity::caller::{ScopeEnv, Source};
use leanctx::identity::mcp_call::McpCall;
use leanctx::identity::readpath::{ReadPath, StubQuery};
use leanctx::state::journal::{Call, Journal, Reach, Record, View};
use leanctx::state::ledger::{Ack, Content, Delivery};
use leanctx::state::slot::{self, Slot};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One event every 50 ms: twenty a second, about ten times a busy user
/// with four chats open. 100 events span 5 s, 10,000 span 8 min (inside
/// the 10 min call window), 1,000,000 span 14 h (far past every TTL).
const STEP_MS: u64 = 50;
/// Six conversations at a time (two Claude Code, two Codex, one Cursor, one
/// CodeBuddy); every 20,000 events (17 min) they end and six new ones
/// start, so a long history holds hundreds of conversations.
const LIVE: u64 = 6;
const GENERATION: u64 = 20_000;
/// Version and content digest of the history's deliveries (hashes as the
/// ledger keeps them).
const VER_H: &str = "0123456789abcdef0123456789abcdef";
const DIGEST: &str = "fedcba9876543210fedcba9876543210";

fn host_of(slot: u64) -> Host {
    match slot {
        0 | 1 => Host::ClaudeCode,
        2 | 3 => Host::Codex,
        4 => Host::Cursor,
        _ => Host::CodeBuddy,
    }
}

fn conv_id(generation: u64, slot: u64) -> String {
    format!("{:08x}-c0de-4bad-9e11-{:012x}", generation, slot)
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// What the history left for the benchmarks to ask about.
struct History {
    dir: PathBuf,
    n: usize,
    /// A live Claude Code conversation (the slot names it).
    claude_conv: String,
    /// The Claude conversation's transcript.
    transcript: std::path::PathBuf,
    /// The newest Claude tool-use id with a call record.
    claude_call_id: String,
    codex_conv: String,
    cursor_conv: String,
    setup: Duration,
    size: u64,
    lines: usize,
}

/// Write `n` events ending just before `now`.
fn write_history(dir: &Path, n: usize, now: u64) -> History {
    let started = Instant::now();
    let j = Journal::new(dir);
    let n64 = n as u64;
    let mut claude_call_id = String::new();
    let mut refs: Vec<(String, String)> = Vec::new();
    let mut claude_call_conv = String::new();
    for i in 0..n64 {
        let t = now - (n64 - i) * STEP_MS;
        let generation = i / GENERATION;
        let slot = i % LIVE;
        let host = host_of(slot);
        let conv = conv_id(generation, slot);
        let step = (i / LIVE) % 10;
        let last_of_generation = i % GENERATION >= GENERATION - LIVE;
        let agent = format!("agent:{:x}", mix(i / LIVE / 10) & 0xffff_ffff);
        let fp = format!("{:016x}{:016x}{:016x}{:016x}", mix(i), mix(i + 1), mix(i + 2), mix(i + 3));
        let call_id = match host {
            Host::ClaudeCode => Some(format!("toolu_bench_{i:x}")),
            Host::Codex => Some(format!("call_bench_{i:x}")),
            _ => None,
        };
        let key = format!("4242-{t}-{i}");
        let mut recs: Vec<Record<'_>> = Vec::with_capacity(2);
        if last_of_generation {
            recs.push(Record::End { t, host, conv: &conv });
        } else {
            let event = match step {
                0 => "UserPromptSubmit",
                1..=3 => "PreToolUse",
                4 => "PostToolUse",
                5 => "SubagentStart",
                6 => "SubagentStop",
                7 => "Stop",
                8 => "PreCompact",
                _ => "PostToolBatch",
            };
            recs.push(Record::Sighting { t, host, conv: &conv, event });
            match step {
                1..=3 => {
                    recs.push(Record::Call(Call {
                        t,
                        host,
                        conv: &conv,
                        agent: None,
                        server: Some("ctx"),
                        tool: "ctx_read",
                        fp: &fp,
                        call_id: call_id.as_deref(),
                        key: &key,
                    }));
                    if host == Host::ClaudeCode {
                        claude_call_id = call_id.clone().unwrap_or_default();
                        claude_call_conv.clone_from(&conv);
                    }
                    // A server on the ledger: each read delivered and acknowledged
                    // (in the same append, to keep one append per event).
                    if let Some(id) = call_id.as_deref() {
                        let call_ref = leanctx::state::ledger::id_ref(id);
                        let file = secret().name("key", &format!("src/f{}.rs", mix(i) % 200));
                        refs.push((call_ref, file));
                    }
                }
                5 => recs.push(Record::SubagentStart { t, host, conv: &conv, agent: &agent }),
                6 => recs.push(Record::SubagentStop { t, host, conv: &conv, agent: Some(&agent) }),
                // A compaction every 100 turns of a conversation.
                8 if (i / LIVE / 10).is_multiple_of(10) => {
                    recs.push(Record::Compaction { t, host, conv: &conv, reach: Reach::All })
                }
                _ => {}
            }
        }
        let ledger: Vec<Record<'_>> = refs
            .iter()
            .flat_map(|(call_ref, file)| {
                [
                    Record::Delivery(Delivery {
                        t,
                        host,
                        conv: &conv,
                        scope: &conv,
                        window: None,
                        call_ref,
                        key: file,
                        version: VER_H,
                        digest: DIGEST,
                        len: 4096,
                        base: None,
                    }),
                    Record::Ack(Ack { t, host, scope: &conv, call_ref, digest: DIGEST, len: 4096, whole: true }),
                ]
            })
            .collect();
        recs.extend(ledger);
        j.append(&recs, t).unwrap_or_else(|e| crate::fail(&format!("journal append: {e}")));
        refs.clear();
    }
    let generation = (n64.saturating_sub(1)) / GENERATION;
    let claude_conv = conv_id(generation, 0);
    // The file the ledger ops ask about: delivered to the last Claude call's
    // conversation and acknowledged whole.
    let t = now - STEP_MS / 2;
    // Claude Code stubs also ask the transcript (src/witness/): a 50 MB
    // transcript (sparse: the witness starts at its end and never reads
    // what was there), named by a prompt hook before the delivery. It ends
    // with a newline: a witness that starts inside a line skips the rest of
    // it, which would hide the call's tool use appended below.
    let transcript = dir.join("transcript.jsonl");
    std::fs::File::create(&transcript)
        .and_then(|f| {
            use std::io::{Seek as _, Write as _};
            let mut f = f;
            f.set_len((50 << 20) - 1)?;
            f.seek(std::io::SeekFrom::End(0))?;
            f.write_all(b"\n")
        })
        .unwrap_or_else(|e| crate::fail(&format!("transcript: {e}")));
    let b = leanctx::witness::Boundary {
        host: Host::ClaudeCode,
        conv: &claude_call_conv,
        transcript: transcript.to_str().expect("UTF-8 path"),
        turn: leanctx::witness::Turn::Prompt,
        now: t - 1,
        pid: None,
        idle_ms: leanctx::hosts::profile::profile(Host::ClaudeCode).idle_clear_ms,
        prompt: None,
    };
    leanctx::witness::on_turn(dir, &b, std::time::Instant::now() + Duration::from_secs(1), |_| Ok(()))
        .unwrap_or_else(|e| crate::fail(&format!("witness: {e}")));
    // The asking call's own tool use, as the host writes it before the call:
    // a stub question waits until the transcript shows it (docs/DELIVERY.md §8).
    {
        use std::io::Write as _;
        let line = serde_json::json!({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": claude_call_id, "name": "mcp__ctx__ctx_read", "input": {}}]}});
        let mut f = std::fs::OpenOptions::new().append(true).open(&transcript).expect("transcript");
        writeln!(f, "{line}").unwrap_or_else(|e| crate::fail(&format!("transcript: {e}")));
    }
    let window = format!("proc:{BENCH_HOST_PID}");
    let call_ref = leanctx::state::ledger::id_ref(&claude_call_id);
    let key = secret().name("key", "README.md");
    let d = Delivery {
        t,
        host: Host::ClaudeCode,
        conv: &claude_call_conv,
        scope: &claude_call_conv,
        window: Some(&window),
        call_ref: &call_ref,
        key: &key,
        version: &secret().name("version", "v1"),
        digest: DIGEST,
        len: 4096,
        base: None,
    };
    let a = Ack {
        t,
        host: Host::ClaudeCode,
        scope: &claude_call_conv,
        call_ref: &call_ref,
        digest: DIGEST,
        len: 4096,
        whole: true,
    };
    j.append(&[Record::Delivery(d), Record::Ack(a)], t)
        .unwrap_or_else(|e| crate::fail(&format!("journal append: {e}")));
    slot::write_slot(dir, &Slot::new(Host::ClaudeCode, &claude_conv, None, "PreToolUse", None, now - STEP_MS))
        .unwrap_or_else(|e| crate::fail(&format!("slot: {e}")));
    let text = j.read().unwrap_or_default();
    History {
        transcript,
        dir: dir.to_path_buf(),
        n,
        claude_conv,
        claude_call_id,
        codex_conv: conv_id(generation, 2),
        cursor_conv: conv_id(generation, 4),
        setup: started.elapsed(),
        size: j.size(),
        lines: text.lines().count(),
    }
}

/// One measured operation, per journal size.
struct Op {
    name: &'static str,
    /// Held to "p50 ≤ 25 µs and flat ≤ 1.5×".
    target: bool,
    samples: Vec<Vec<Duration>>,
    /// The same iterations' thread CPU time.
    cpu: Vec<Vec<Duration>>,
}

/// The host process the benchmark's Claude calls come from (their window).
const BENCH_HOST_PID: u32 = 4242;

fn rp(h: &History, now: u64) -> ReadPath {
    ReadPath::new(&h.dir, ScopeEnv::default()).at(now).with_host_pid(BENCH_HOST_PID)
}

fn codex_call(h: &History) -> McpCall {
    let v = serde_json::json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ctx_read",
        "arguments":{"path":"README.md"},"_meta":{"sessionId":h.codex_conv,"threadId":h.codex_conv,"callId":"call_bench","windowId":format!("{}:0", h.codex_conv)}}});
    McpCall::from_json(&v).expect("codex call")
}

fn claude_call(h: &History) -> McpCall {
    let v = serde_json::json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ctx_read",
        "arguments":{"path":"README.md"},"_meta":{"claudecode/toolUseId":h.claude_call_id,"progressToken":2}}});
    McpCall::from_json(&v).expect("claude call")
}

fn cursor_call(iter: usize) -> McpCall {
    let v = serde_json::json!({"jsonrpc":"2.0","id":iter,"method":"tools/call","params":{"name":"bench_read",
        "arguments":{"path":"src/main.rs","mode":"map"}}});
    McpCall::from_json(&v).expect("cursor call")
}

/// Run one operation once on `h`, timed. `iter` makes claims unique.
fn run_op(op: usize, h: &History, now: u64, iter: usize) -> (Duration, Duration) {
    match op {
        0 => {
            let r = rp(h, now);
            let q = StubQuery {
                delivered: Some(&h.claude_conv),
                delivered_at_ms: Some(now - 60_000),
                cold: false,
                call: None,
            };
            let t = crate::Timer::start();
            let a = black_box(r.decide(black_box(&q)));
            let d = t.stop();
            if iter == 0 {
                assert_eq!(a.caller.source, Source::Slot, "decide: caller from the slot");
            }
            d
        }
        1 => {
            let r = rp(h, now);
            let c = codex_call(h);
            let t = crate::Timer::start();
            let res = black_box(r.resolve(Some(black_box(&c)), now));
            let d = t.stop();
            if iter == 0 {
                assert_eq!(res.caller.source, Source::MetaSession, "codex meta");
            }
            d
        }
        2 => {
            let r = rp(h, now);
            let c = claude_call(h);
            let t = crate::Timer::start();
            let res = black_box(r.resolve(Some(black_box(&c)), now));
            let d = t.stop();
            if iter == 0 {
                assert_eq!(res.caller.source, Source::ToolUseId, "claude tool-use id {}", h.claude_call_id);
            }
            d
        }
        3 => {
            // Untimed: the Cursor hook's call record for this very call, a
            // moment before it; one such call a second, each re-reading the
            // same file (same arguments, so every earlier call record is a
            // fingerprint twin). Each claim leaves two lines and trims
            // happen as they would.
            let now = now + iter as u64 * 1_000;
            let c = cursor_call(iter);
            // As the hook stores it: sealed with the data dir's secret.
            let fp = secret().seal_fp(&c.fingerprint());
            let key = format!("bench-{iter}");
            let t = now - 5;
            Journal::new(&h.dir)
                .append(
                    &[Record::Call(Call {
                        t,
                        host: Host::Cursor,
                        conv: &h.cursor_conv,
                        agent: None,
                        server: None,
                        tool: "bench_read",
                        fp: &fp,
                        call_id: None,
                        key: &key,
                    })],
                    t,
                )
                .expect("append call");
            let r = rp(h, now);
            let t = crate::Timer::start();
            let res = black_box(r.resolve(Some(black_box(&c)), now));
            let d = t.stop();
            assert_eq!(res.caller.source, Source::Fingerprint, "cursor claim (iteration {iter}, {} events)", h.n);
            d
        }
        4 => {
            let r = rp(h, now);
            let t = crate::Timer::start();
            black_box(r.concurrent());
            t.stop()
        }
        5 => {
            let j = Journal::new(&h.dir);
            let t = crate::Timer::start();
            black_box(j.read().ok());
            t.stop()
        }
        6 => {
            let text = Journal::new(&h.dir).read().unwrap_or_default();
            let t = crate::Timer::start();
            let v = View::parse(black_box(&text));
            black_box(v.concurrent(now));
            t.stop()
        }
        7 => {
            // Untimed: what a Claude Code hook appends for a gated call, so
            // the reader has new lines to take in (and, now and then, a
            // trim to start over from).
            let t = now - 2_000 + (iter as u64 % 1_000);
            let key = format!("after-{iter}");
            let id = format!("toolu_after_{iter}");
            Journal::new(&h.dir)
                .append(
                    &[
                        Record::Sighting { t, host: Host::ClaudeCode, conv: &h.claude_conv, event: "PreToolUse" },
                        Record::Call(Call {
                            t,
                            host: Host::ClaudeCode,
                            conv: &h.claude_conv,
                            agent: None,
                            server: Some("ctx"),
                            tool: "ctx_read",
                            fp: "0000000000000000000000000000000000000000000000000000000000000000",
                            call_id: Some(&id),
                            key: &key,
                        }),
                    ],
                    t,
                )
                .expect("append");
            run_op(0, h, now, iter)
        }
        8 => {
            let r = rp(h, now);
            let c = claude_call(h);
            let t = crate::Timer::start();
            let a = black_box(r.stub(black_box(&c), "README.md", "v1", None)).expect("stub");
            let d = t.stop();
            if iter == 0 {
                assert_eq!(a.decision.reason, leanctx::Reason::ConfirmedDelivery, "stub ({} events)", h.n);
            }
            d
        }
        9 => {
            // A first read on Codex: the caller from `_meta`, the delivery
            // appended (so the journal grows and gets trimmed as in use).
            let r = rp(h, now);
            let c = codex_call(h);
            let content = Content { digest: DIGEST.into(), len: 4096 };
            let key = format!("src/new{iter}.rs");
            let t = crate::Timer::start();
            let rec = black_box(r.deliver(black_box(&c), &key, "v1", &content)).expect("deliver");
            let d = t.stop();
            assert!(rec.recorded, "deliver ({} events): {rec:?}", h.n);
            d
        }
        10 => {
            // The host appended 100 KB of transcript since the last question
            // (untimed): the witness reads exactly those bytes.
            {
                use std::io::Write as _;
                let mut f = std::fs::OpenOptions::new().append(true).open(&h.transcript).expect("transcript");
                f.write_all(&GROWTH[..]).expect("grow");
            }
            let r = rp(h, now);
            let c = claude_call(h);
            let t = crate::Timer::start();
            let a = black_box(r.stub(black_box(&c), "README.md", "v1", None)).expect("stub");
            let d = t.stop();
            if iter == 0 {
                assert_eq!(
                    a.decision.reason,
                    leanctx::Reason::ConfirmedDelivery,
                    "stub +100 KB ({} events): {a:?}",
                    h.n
                );
            }
            d
        }
        _ => unreachable!(),
    }
}

/// 100 KB of transcript lines (assistant text, tool results, request
/// replays; no withdrawal record) appended before each question of op 10
/// (`LEANCTX_BENCH_GROWTH_KB`: another size, to see the cost per byte).
static GROWTH: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
    let kb: usize = std::env::var("LEANCTX_BENCH_GROWTH_KB").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let mut s = String::new();
    let mut i = 0u64;
    while s.len() < kb << 10 {
        i += 1;
        let kind = ["assistant", "user", "api-request-blob", "progress"][(i % 4) as usize];
        let len = 1000 + (i * 2654435761 % 7000) as usize;
        s.push_str(&format!(
            r#"{{"type":"{kind}","uuid":"u{i}","message":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
            "x".repeat(len)
        ));
        s.push('\n');
    }
    s.into_bytes()
});

const OPS: &[(&str, bool)] = &[
    ("fresh stub decision (`ReadPath::decide`, caller from the slot)", true),
    ("per-call: Codex `_meta.sessionId` (`ReadPath::resolve`)", true),
    ("per-call: Claude tool-use id → call record", true),
    ("per-call: Cursor fingerprint claim (exclusive lock + append)", true),
    ("`multiple_conversations_recent` (`ReadPath::concurrent`)", true),
    ("whole file: `Journal::read` (shared lock + read)", false),
    ("whole file: `View::parse` + `View::concurrent` (no I/O)", false),
    ("stub decision right after a hook appended (sighting + call)", true),
    ("ledger: `ReadPath::stub` (Claude tool-use id, confirmed delivery)", true),
    ("ledger: `ReadPath::deliver` (Codex `_meta`, one append)", true),
    // Issue 22: ≤ 25 µs plus the bytes appended: judged by reading its row
    // against op 8's (the same question, nothing appended), not by the 25 µs.
    ("ledger: `ReadPath::stub` (Claude, confirmed; transcript +100 KB since the last question)", false),
];

/// Run the in-process benchmarks; append the table to `out`; return the
/// targets missed.
pub fn run(cfg: &Config, root: &Path, out: &mut String) -> Vec<String> {
    let now = leanctx::base::clock::now_ms();
    let mut hist = Vec::new();
    for &n in cfg.micro_sizes {
        let dir = root.join(format!("micro-{n}"));
        leanctx::fsx::create_private_dir(&dir, false).expect("micro dir");
        write_secret(&dir);
        let h = write_history(&dir, n, now);
        eprintln!("  {n} events written in {:.1} s; journal {} bytes", h.setup.as_secs_f64(), h.size);
        hist.push(h);
    }
    let now = now + 1;
    let mut ops: Vec<Op> = OPS
        .iter()
        .map(|&(name, target)| Op {
            name,
            target,
            samples: vec![Vec::new(); hist.len()],
            cpu: vec![Vec::new(); hist.len()],
        })
        .collect();
    let warm = (cfg.micro_iters / 10).max(3);
    // `LEANCTX_BENCH_MICRO_OPS=0,8,10`: only those rows (while working on them).
    let only: Option<Vec<usize>> = std::env::var("LEANCTX_BENCH_MICRO_OPS")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).filter(|&k| k < OPS.len()).collect());
    // The two that append last, the claim before the one that appends newer calls.
    for k in [0, 1, 2, 8, 10, 4, 5, 6, 3, 7, 9] {
        if only.as_ref().is_some_and(|o| !o.contains(&k)) {
            continue;
        }
        let op = &mut ops[k];
        for iter in 0..warm + cfg.micro_iters {
            // Interleave the journal sizes so drift hits them alike.
            for (hi, h) in hist.iter().enumerate() {
                let (d, c) = run_op(k, h, now, iter);
                if iter >= warm {
                    op.samples[hi].push(d);
                    op.cpu[hi].push(c);
                }
            }
        }
    }

    let label = |n: usize| match n {
        1_000_000 => "1,000,000".to_string(),
        10_000 => "10,000".to_string(),
        1_000 => "1,000".to_string(),
        n => n.to_string(),
    };
    let mut missed = Vec::new();
    let _ = write!(out, "| operation |");
    for h in &hist {
        let _ = write!(out, " {} events: p50 (p99) |", label(h.n));
    }
    let first = label(hist[0].n);
    let last = label(hist[hist.len() - 1].n);
    let _ = writeln!(out, " p50 {last} / {first} | target p50 ≤ 25 µs, flat ≤ 1.5× | CPU p50 at {first} / {last} |");
    let _ = write!(out, "|---|");
    for _ in &hist {
        let _ = write!(out, "---:|");
    }
    let _ = writeln!(out, "---:|---|---:|");
    for op in ops.iter().filter(|o| !o.samples[0].is_empty()) {
        let stats: Vec<Stats> = op.samples.iter().map(|s| Stats::of(s)).collect();
        let cpu: Vec<Stats> = op.cpu.iter().map(|s| Stats::of(s)).collect();
        let _ = write!(out, "| {} |", op.name);
        for s in &stats {
            let _ = write!(out, " {} ({}) |", fmt_dur(s.p50), fmt_dur(s.p99));
        }
        let flat = stats[stats.len() - 1].p50.as_secs_f64() / stats[0].p50.as_secs_f64();
        let worst = stats.iter().map(|s| s.p50).max().unwrap_or_default();
        let verdict = if op.target {
            let ok = worst <= Duration::from_micros(25) && flat <= 1.5;
            if !ok {
                missed.push(format!("read path: {}", op.name));
            }
            if ok { "met" } else { "**missed**" }
        } else {
            ""
        };
        let _ =
            writeln!(out, " {flat:.2}× | {verdict} | {} / {} |", fmt_dur(cpu[0].p50), fmt_dur(cpu[cpu.len() - 1].p50));
    }

    secret_cost(cfg, root, warm, out);

    // Reference: the file read a stub saves.
    let file = root.join("reference-32k.rs");
    let body: String = (0..32 * 1024).map(|i| if i % 64 == 63 { '\n' } else { 'x' }).collect();
    let _ = std::fs::write(&file, body);
    let mut refs = Vec::new();
    for i in 0..warm + cfg.micro_iters {
        let t = Instant::now();
        black_box(std::fs::read(black_box(&file)).ok());
        if i >= warm {
            refs.push(t.elapsed());
        }
    }
    let r = Stats::of(&refs);
    let _ = writeln!(
        out,
        "\nReference: `fs::read` of a 32 KiB source file (page cache, no hashing) p50 {} (p99 {}).",
        fmt_dur(r.p50),
        fmt_dur(r.p99)
    );
    let _ = writeln!(
        out,
        "{} timed iterations per cell after {warm} warm-up, sizes interleaved. One event = one \
         `Journal::append` as a hook makes it (1–2 records), one every {STEP_MS} ms across {LIVE} \
         live conversations that are replaced every {GENERATION} events. The read path keeps a \
         per-process journal reader that takes in only what was appended since its last call; the \
         \"whole file\" rows are what every decision paid before it (read and parse all). The \
         decision \"right after a hook appended\" and the Cursor claim append between iterations \
         (untimed), so their journals grow and get trimmed as in use.\n",
        cfg.micro_iters
    );
    let _ = writeln!(out, "| events written | time to write | journal size after | journal lines after |");
    let _ = writeln!(out, "|---:|---:|---:|---:|");
    for h in &hist {
        let _ = writeln!(
            out,
            "| {} | {:.1} s ({:.1} µs/event) | {:.1} KiB | {} |",
            label(h.n),
            h.setup.as_secs_f64(),
            h.setup.as_secs_f64() * 1e6 / h.n as f64,
            h.size as f64 / 1024.0,
            h.lines
        );
    }
    missed
}

/// A fixed key for the names the journals here hold.
fn secret() -> leanctx::state::secret::Secret {
    leanctx::state::secret::Secret::from_bytes([7; 32])
}

/// The data dir's secret file holding [`secret`]'s key, so the read path
/// keys its questions as the history was keyed.
fn write_secret(dir: &Path) {
    use std::io::Write as _;
    let mut f = leanctx::fsx::create_new(&dir.join(leanctx::state::secret::SECRET_FILE), 0o600)
        .unwrap_or_else(|e| crate::fail(&format!("secret: {e}")));
    f.write_all(&[7; 32]).unwrap_or_else(|e| crate::fail(&format!("secret: {e}")));
}

/// What keying costs (issue 21): a process's first read of the secret (a
/// fresh data dir each time, so nothing is cached), and sealing what a
/// `PostToolBatch` hook or a `stub --result` stores (a ref, a content
/// digest, a length; the names of key and version).
fn secret_cost(cfg: &Config, root: &Path, warm: usize, out: &mut String) {
    use leanctx::state::ledger::Content;
    use leanctx::state::secret::Secret;
    let n = warm + cfg.micro_iters;
    let dirs: Vec<PathBuf> = (0..n)
        .map(|i| {
            let d = root.join(format!("secret-{i}"));
            leanctx::fsx::create_private_dir(&d, false).expect("secret dir");
            write_secret(&d);
            d
        })
        .collect();
    let (mut load, mut seal) = (Vec::new(), Vec::new());
    let raw = Content { digest: "fedcba9876543210fedcba9876543210".into(), len: 61_440 };
    let s = secret();
    for (i, d) in dirs.iter().enumerate() {
        let t = Instant::now();
        black_box(Secret::load(black_box(d)).ok());
        let dl = t.elapsed();
        let t = Instant::now();
        black_box(s.seal_content(black_box(&raw)));
        black_box(s.seal_ref(black_box("fp:0123456789abcdef0123456789abcdef")));
        black_box(s.name("key", black_box("src/main.rs")));
        black_box(s.name("version", black_box("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")));
        let ds = t.elapsed();
        if i >= warm {
            load.push(dl);
            seal.push(ds);
        }
    }
    let (l, k) = (Stats::of(&load), Stats::of(&seal));
    let _ = writeln!(
        out,
        "\nKeyed digests (issue 21): the first read of a data dir's `secret` in a process (open, fstat, \
         32 bytes; a fresh dir each time) p50 {} (p99 {}); sealing what one delivery stores (its \
         digest and length, a ref, the key's and the version's names: 4 keyed BLAKE3 of ≤ 64 bytes) \
         p50 {} (p99 {}). The result's own BLAKE3 is unchanged (unkeyed in memory, then sealed).",
        fmt_dur(l.p50),
        fmt_dur(l.p99),
        fmt_dur(k.p50),
        fmt_dur(k.p99)
    );
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}
