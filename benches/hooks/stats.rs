//! The stats' costs (issue 24): recording one answered read in process
//! (target ≤ 2 µs, flushes to a real `stats.log` included), and `leanctx
//! stats`' fold and report over a year of aggregates at every bound plus a
//! log about to be folded (target ≤ 50 ms), and that year's size (< 1 MiB).

use crate::Config;
use leanctx::stats::agg::{self, Aggregates};
use leanctx::stats::line::Line;
use leanctx::stats::report::{self, By, Prices, Since};
use leanctx::stats::{Kind, Outcome, Sink, Via, store};
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

const RECORD_TARGET: Duration = Duration::from_micros(2);
const REPORT_TARGET: Duration = Duration::from_millis(50);

fn outcome(i: usize, file: &str) -> Outcome<'_> {
    Outcome {
        via: Via::Serve,
        host: Some(leanctx::Host::ClaudeCode),
        conversation: Some("7d4181fb-1c2d-4e5f-8a9b-0123456789ab"),
        file,
        kind: if i.is_multiple_of(3) { Kind::Whole } else { Kind::Stub },
        sent: Some(180),
        whole: 12_000,
        t_ms: None,
    }
}

/// A year of days at every bound: each day all hosts, tools and ten
/// reasons; the last [`agg::DETAIL_DAYS`] days 100 files and 50 sessions
/// with names at the length cap (the fold keeps the largest).
pub fn full_year(today: u64) -> Aggregates {
    let mut a = Aggregates::default();
    let reasons = [
        "compacted",
        "unconfirmed",
        "unknown-caller",
        "unrecorded-call",
        "window-changed",
        "state-unavailable",
        "subagent-active",
        "ambiguous-call",
        "concurrent",
        "other",
    ];
    let hosts = [leanctx::Host::ClaudeCode, leanctx::Host::Codex, leanctx::Host::Cursor, leanctx::Host::CodeBuddy];
    for d in 0..366u64 {
        let day = today - d;
        let detail = d < agg::DETAIL_DAYS;
        let n: u64 = if detail { 150 } else { 40 };
        for i in 0..n as usize {
            let file = format!("{}/{i:04}.rs", "d".repeat(agg_name_len() - 8));
            let kind = if i.is_multiple_of(4) { Kind::Withheld(reasons[i % reasons.len()]) } else { Kind::Stub };
            a.add(&Line {
                t: day * 86_400_000 + i as u64,
                via: [Via::Serve, Via::Cli, Via::Lib][i % 3],
                host: Some(hosts[i % 4]),
                conv: Some(format!("{:08x}-1c2d-4e5f-8a9b-{:012x}", d, i % 50)),
                kind,
                file,
                sent: 200,
                whole: 9_000 + i as u64,
                saved: 8_800 + i as u64,
            });
        }
        for r in reasons {
            let l = Line {
                t: day * 86_400_000,
                via: Via::Serve,
                host: None,
                conv: None,
                kind: Kind::Withheld(r),
                file: "x".into(),
                sent: 1,
                whole: 1,
                saved: 0,
            };
            a.add(&l);
        }
    }
    a.prune(today);
    a
}

fn agg_name_len() -> usize {
    leanctx::stats::line::MAX_FILE_CHARS
}

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Run the stats benchmarks into `out`; the targets missed.
pub fn run(cfg: &Config, root: &Path, out: &mut String) -> Vec<String> {
    let mut missed = Vec::new();
    let dir = root.join("data-stats");
    leanctx::fsx::create_private_dir(&dir, false).expect("data dir");
    // Recording: batches of records into a real sink (its flushes, one
    // O_APPEND write per 16 KiB, are inside the time).
    let batches = if cfg.smoke { 20 } else { 400 };
    let per = 1_000;
    let name = "src/identity/readpath/mod.rs";
    let mut sink = Sink::new(Some(dir.clone()));
    let (mut wall, mut samples) = (Vec::with_capacity(batches), Vec::with_capacity(batches));
    for b in 0..batches {
        let (t, c) = (Instant::now(), crate::cpu());
        for i in 0..per {
            sink.record(std::hint::black_box(&outcome(b * per + i, name)));
        }
        sink.flush();
        samples.push((crate::cpu() - c) / per as u32);
        wall.push(t.elapsed() / per as u32);
    }
    let (rec, rec_wall) = (p50(samples), p50(wall));
    // `stats`: a year at every bound in stats.json, plus a log just under
    // the fold threshold, folded and reported.
    let now = leanctx::base::clock::now_ms();
    let today = now / 86_400_000;
    let year = full_year(today);
    let bytes = serde_json::to_vec(&year).expect("json");
    let (mut reports, mut reports_wall) = (Vec::new(), Vec::new());
    let rounds = if cfg.smoke { 3 } else { 15 };
    for _ in 0..rounds {
        leanctx::fsx::write_atomic(&dir.join(leanctx::stats::AGG_FILE), &bytes).expect("write");
        let _ = std::fs::remove_file(dir.join(leanctx::stats::LOG_FILE));
        let mut s = Sink::new(Some(dir.clone()));
        let mut n = 0;
        while n < (leanctx::stats::FOLD_AT as usize) * 9 / 10 {
            let before = n;
            s.record(&outcome(n, name));
            n = before + 130;
        }
        drop(s);
        let (t, c) = (Instant::now(), crate::cpu());
        let l = store::fold(&dir, now, true, Instant::now() + Duration::from_millis(200));
        let r = report::build(&l.agg, today, Since::All, By::File, Prices::default(), l.problems);
        std::hint::black_box(serde_json::to_string(&r).expect("json"));
        reports.push(crate::cpu() - c);
        reports_wall.push(t.elapsed());
    }
    let (rep, rep_wall) = (p50(reports), p50(reports_wall));
    let ok = |b: bool| if b { "met" } else { "**missed**" };
    if rec > RECORD_TARGET {
        missed.push("stats: record".into());
    }
    if rep > REPORT_TARGET {
        missed.push("stats: fold and report".into());
    }
    if bytes.len() >= agg::MAX_AGG_BYTES {
        missed.push("stats: a year's size".into());
    }
    let _ = writeln!(
        out,
        "Judged on the thread's CPU time (wall time beside it: on a loaded machine it measures the scheduler).\n"
    );
    let _ = writeln!(out, "| what | CPU | wall | target | |\n|---|---|---|---|---|");
    let _ = writeln!(
        out,
        "| record one answered read (p50 of {batches} batches of {per}, flushes included) | {} ns | {} ns | ≤ 2 µs | {} |",
        rec.as_nanos(),
        rec_wall.as_nanos(),
        ok(rec <= RECORD_TARGET)
    );
    let _ = writeln!(
        out,
        "| `stats`: fold a ~460 KB log into a year at every bound, report by file (p50 of {rounds}) | {:.1} ms | {:.1} ms | ≤ 50 ms | {} |",
        rep.as_secs_f64() * 1e3,
        rep_wall.as_secs_f64() * 1e3,
        ok(rep <= REPORT_TARGET)
    );
    let _ = writeln!(
        out,
        "| a year of daily aggregates at every bound | {} bytes | | < 1 MiB | {} |",
        bytes.len(),
        ok(bytes.len() < agg::MAX_AGG_BYTES)
    );
    missed
}
