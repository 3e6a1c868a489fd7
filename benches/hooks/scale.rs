//! Scale: 64 hook processes started at once (released by a barrier), the
//! same for the floor, alternately; readers (in process and through the
//! CLI) run during every burst. Checks that every hook answered, that no
//! call record was lost and that no reader saw a torn slot or journal.

use crate::Config;
use crate::spawn::{self, Spec, Stats, Tools, fmt_dur};
use leanctx::identity::caller::ScopeEnv;
use leanctx::identity::readpath::{ReadPath, StubQuery};
use leanctx::state::journal::{self, Journal, View};
use leanctx::state::slot::{self, SlotRead};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

pub const AT_ONCE: usize = 64;

#[derive(Default)]
struct Readers {
    decide: Vec<Duration>,
    cli: Vec<Duration>,
    slot_reads: usize,
    torn_slots: usize,
    journal_reads: usize,
    torn_journal: usize,
}

#[derive(Default)]
struct Tally {
    runs: usize,
    bad_exit: usize,
    diagnostics: usize,
    records_expected: usize,
    records_missing: usize,
}

/// Run `specs` at once; wall time of each.
fn burst(specs: Vec<Spec>) -> Vec<spawn::Outcome> {
    let barrier = Arc::new(Barrier::new(specs.len()));
    let handles: Vec<_> = specs
        .into_iter()
        .map(|s| {
            let b = Arc::clone(&barrier);
            std::thread::spawn(move || {
                b.wait();
                spawn::run_once(&s)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("burst thread").unwrap_or_else(|e| crate::fail(&format!("burst spawn: {e}"))))
        .collect()
}

/// Readers running until `stop`: an in-process decision loop that also
/// checks every slot and journal it reads, and a CLI `scope check` loop.
fn readers(
    data: &Path,
    cli: Spec,
    stop: Arc<AtomicBool>,
) -> (std::thread::JoinHandle<Readers>, std::thread::JoinHandle<Vec<Duration>>) {
    let dir = data.to_path_buf();
    let stop2 = Arc::clone(&stop);
    let in_proc = std::thread::spawn(move || {
        let mut r = Readers::default();
        let rp = ReadPath::new(&dir, ScopeEnv::default());
        while !stop.load(Ordering::Relaxed) {
            let now = leanctx::base::clock::now_ms();
            let q = StubQuery {
                delivered: Some("5ca1e000-0000-4000-8000-000000000000"),
                delivered_at_ms: Some(now - 60_000),
                cold: false,
                call: None,
            };
            let t = Instant::now();
            std::hint::black_box(rp.decide(&q));
            r.decide.push(t.elapsed());
            r.slot_reads += 1;
            match slot::read_slot(&dir, now) {
                Ok(SlotRead::Invalid) | Err(_) => r.torn_slots += 1,
                _ => {}
            }
            if let Ok(text) = Journal::new(&dir).read() {
                r.journal_reads += 1;
                let torn = (!text.is_empty() && !text.ends_with('\n'))
                    || text.lines().any(|l| !l.starts_with('#') && !journal::is_known_line(l));
                if torn {
                    r.torn_journal += 1;
                }
            }
        }
        r
    });
    let cli_loop = std::thread::spawn(move || {
        let mut v = Vec::new();
        while !stop2.load(Ordering::Relaxed) {
            if let Ok(o) = spawn::run_once(&cli) {
                v.push(o.wall);
            }
        }
        v
    });
    (in_proc, cli_loop)
}

fn hook_payload(template: &serde_json::Value, b: usize, i: usize) -> (Vec<u8>, String) {
    let mut v = template.clone();
    let id = format!("toolu_scale_{b}_{i}");
    v["session_id"] = format!("5ca1e000-0000-4000-8000-{:012x}", b * AT_ONCE + i).into();
    v["tool_use_id"] = id.clone().into();
    (serde_json::to_vec(&v).expect("payload"), id)
}

pub fn run(
    cfg: &Config,
    tools: &Tools,
    data: &Path,
    env: &[(OsString, OsString)],
    cwd: &Path,
    claude_mcp_payload: &[u8],
    out: &mut String,
) -> Vec<String> {
    let template: serde_json::Value = serde_json::from_slice(claude_mcp_payload).expect("claude payload");
    let spec = |program: PathBuf, args: &[&str], stdin: Vec<u8>| Spec {
        program,
        args: args.iter().map(OsString::from).collect(),
        env: env.to_vec(),
        cwd: cwd.to_path_buf(),
        stdin,
    };
    let cli =
        spec(crate::bin(), &["scope", "check", "--delivered", "5ca1e000-0000-4000-8000-000000000000"], Vec::new());
    let mut floor_walls = Vec::new();
    let mut hook_walls = Vec::new();
    let mut under_floor = Readers::default();
    let mut under_hooks = Readers::default();
    let mut tally = Tally::default();
    for b in 0..cfg.bursts {
        for kind in ["floor", "hook"] {
            let (specs, ids): (Vec<Spec>, Vec<String>) = (0..AT_ONCE)
                .map(|i| {
                    if kind == "floor" {
                        (spec(tools.floor.clone(), &[], claude_mcp_payload.to_vec()), String::new())
                    } else {
                        let (p, id) = hook_payload(&template, b, i);
                        (spec(crate::bin(), &["hook", "claude-code"], p), id)
                    }
                })
                .unzip();
            let stop = Arc::new(AtomicBool::new(false));
            let (r1, r2) = readers(data, cli.clone(), Arc::clone(&stop));
            let outcomes = burst(specs);
            stop.store(true, Ordering::Relaxed);
            let r = r1.join().expect("reader");
            let c = r2.join().expect("cli reader");
            let acc = if kind == "floor" { &mut under_floor } else { &mut under_hooks };
            acc.decide.extend(r.decide);
            acc.cli.extend(c);
            acc.slot_reads += r.slot_reads;
            acc.torn_slots += r.torn_slots;
            acc.journal_reads += r.journal_reads;
            acc.torn_journal += r.torn_journal;
            if kind == "floor" {
                floor_walls.extend(outcomes.iter().map(|o| o.wall));
                continue;
            }
            hook_walls.extend(outcomes.iter().map(|o| o.wall));
            for o in &outcomes {
                tally.runs += 1;
                if o.code != 0 {
                    tally.bad_exit += 1;
                }
                if !o.stderr.is_empty() {
                    tally.diagnostics += 1;
                    if tally.diagnostics <= 3 {
                        eprintln!("  hook under load said: {}", String::from_utf8_lossy(&o.stderr).trim());
                    }
                }
            }
            let text = Journal::new(data).read().unwrap_or_default();
            let view = View::parse(&text);
            tally.records_expected += ids.len();
            tally.records_missing += ids.iter().filter(|id| view.call_by_id(id).is_none()).count();
        }
    }

    let f = Stats::of(&floor_walls);
    let h = Stats::of(&hook_walls);
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    let _ = writeln!(out, "| while 64 processes run at once | n | p50 | p99 | p50 / floor | p99 / floor |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    let _ = writeln!(out, "| floor ×64 | {} | {} | {} | 1.00× | 1.00× |", f.n, fmt_dur(f.p50), fmt_dur(f.p99));
    let _ = writeln!(
        out,
        "| `leanctx hook claude-code`, gated MCP call ×64 (64 conversations) | {} | {} | {} | {:.2}× | {:.2}× |",
        h.n,
        fmt_dur(h.p50),
        fmt_dur(h.p99),
        ratio(h.p50, f.p50),
        ratio(h.p99, f.p99)
    );
    for (label, r) in [("floor", &under_floor), ("hook", &under_hooks)] {
        let d = Stats::of(&r.decide);
        let c = Stats::of(&r.cli);
        let _ = writeln!(
            out,
            "| in-process `ReadPath::decide`, during {label} bursts | {} | {} | {} | | |",
            d.n,
            fmt_dur(d.p50),
            fmt_dur(d.p99)
        );
        let _ = writeln!(
            out,
            "| CLI `scope check`, during {label} bursts | {} | {} | {} | | |",
            c.n,
            fmt_dur(c.p50),
            fmt_dur(c.p99)
        );
    }
    let torn_s = under_floor.torn_slots + under_hooks.torn_slots;
    let torn_j = under_floor.torn_journal + under_hooks.torn_journal;
    let _ = writeln!(
        out,
        "\n{} bursts of 64 `leanctx hook` processes (released together by a barrier), each \
         alternating with a burst of 64 floors. Hooks answered (exit 0): {}/{}; with a \
         diagnostic on stderr: {}; call records present in the journal after their burst: {}/{}; \
         torn slot reads: {torn_s} of {}; torn or malformed journal reads: {torn_j} of {}. Journal \
         after {} hook events: {:.1} KiB.",
        cfg.bursts,
        tally.runs - tally.bad_exit,
        tally.runs,
        tally.diagnostics,
        tally.records_expected - tally.records_missing,
        tally.records_expected,
        under_floor.slot_reads + under_hooks.slot_reads,
        under_floor.journal_reads + under_hooks.journal_reads,
        tally.runs,
        Journal::new(data).size() as f64 / 1024.0
    );
    let mut missed = Vec::new();
    if tally.bad_exit > 0 || tally.records_missing > 0 || torn_s > 0 || torn_j > 0 {
        missed.push("64 at once: all answer, no record lost, no torn read".to_string());
    }
    missed
}
