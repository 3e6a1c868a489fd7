//! `leanctx stats` for people: the totals, a table by the chosen group
//! (with a bar of bytes saved per day on a terminal, coloured unless
//! `NO_COLOR`), the withheld reasons ranked with what to do, and what
//! could not be read.

use crate::stats::report::{self, By, Report, Row};
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;

/// `leanctx status`'s line: bytes saved today and in the last 7 days.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Saved {
    pub today_bytes: u64,
    pub week_bytes: u64,
    pub today_tokens_est: u64,
    pub week_tokens_est: u64,
}

impl Saved {
    pub fn line(&self) -> String {
        format!(
            "{} today (about {} tokens), {} in the last 7 days (`leanctx stats`)",
            bytes(self.today_bytes),
            count(self.today_tokens_est),
            bytes(self.week_bytes)
        )
    }
}

/// What was saved, from the aggregates and the log not yet folded (read
/// only: `status` writes nothing).
pub fn saved(dir: &Path, now_ms: u64) -> Saved {
    let l = crate::stats::store::fold(dir, now_ms, false, std::time::Instant::now());
    let (today, week) = report::saved_recent(&l.agg, now_ms / 86_400_000);
    Saved {
        today_bytes: today,
        week_bytes: week,
        today_tokens_est: today / report::BYTES_PER_TOKEN,
        week_tokens_est: week / report::BYTES_PER_TOKEN,
    }
}

/// The widest bar, in cells.
const BAR: u64 = 24;
/// Rows shown for a group other than days (the rest are summed in one line).
const MAX_ROWS: usize = 20;

/// Bytes as people read them (1000-based, like the hosts' own limits).
pub fn bytes(n: u64) -> String {
    match n {
        n if n >= 10_000_000_000 => format!("{:.0} GB", n as f64 / 1e9),
        n if n >= 1_000_000_000 => format!("{:.1} GB", n as f64 / 1e9),
        n if n >= 10_000_000 => format!("{:.0} MB", n as f64 / 1e6),
        n if n >= 1_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        n if n >= 10_000 => format!("{:.0} kB", n as f64 / 1e3),
        n if n >= 1_000 => format!("{:.1} kB", n as f64 / 1e3),
        n => format!("{n} B"),
    }
}

/// Two decimals, or four significant digits below 1 (a week of small
/// savings is a fraction of a cent, and "0.00" says nothing).
fn money(v: f64) -> String {
    if v >= 1.0 || v == 0.0 {
        format!("{v:.2}")
    } else {
        // Four decimals below 1, one more for each leading zero. Compared,
        // not `log10`: that one call linked libm into the binary, a library
        // every hook process then loaded and searched for symbols.
        let zeros = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12]
            .iter()
            .take_while(|&&t| v.abs() < t)
            .count();
        format!("{:.*}", zeros + 4, v)
    }
}

fn count(n: u64) -> String {
    match n {
        n if n >= 1_000_000 => format!("{:.1}M", n as f64 / 1e6),
        n if n >= 10_000 => format!("{:.0}k", n as f64 / 1e3),
        n => n.to_string(),
    }
}

/// The report as text. `bars`: a bar of bytes saved per day (a terminal);
/// `color`: the bars in colour.
pub fn human(r: &Report, bars: bool, color: bool) -> String {
    let mut s = String::new();
    let range = match &r.from {
        Some(f) => format!("{f} to {}", r.to),
        None => format!("everything kept, to {}", r.to),
    };
    let t = &r.totals;
    let _ = writeln!(s, "leanctx stats, since {} ({range}; UTC days)", r.since);
    if t.reads == 0 {
        s.push_str(
            "  no read was answered in this range (only reads through `leanctx serve`, `leanctx stub`/`deliver`\n",
        );
        s.push_str("  and the library are counted)\n");
    } else {
        let _ = writeln!(
            s,
            "  {} reads: {} whole, {} stubs, {} diffs, {} withheld, {} errors",
            t.reads, t.whole, t.stubs, t.diffs, t.withheld, t.errors
        );
        let pct = if t.bytes_whole > 0 { t.bytes_saved as f64 * 100.0 / t.bytes_whole as f64 } else { 0.0 };
        let _ = writeln!(
            s,
            "  sent {} where whole files would have been {}: saved {} ({pct:.0}%), about {} tokens",
            bytes(t.bytes_sent),
            bytes(t.bytes_whole),
            bytes(t.bytes_saved),
            count(t.tokens_saved_est)
        );
        let _ = writeln!(s, "  tokens estimated as {}", r.tokens_estimated_as);
    }
    if let Some(c) = &r.cost {
        if let (Some(p), Some(v)) = (c.prices.input_per_mtok, c.saved_at_input) {
            let _ = writeln!(s, "  at {p} per million input tokens, sending them once would have cost {}", money(v));
        }
        if let (Some(p), Some(v)) = (c.prices.cache_read_per_mtok, c.saved_per_later_turn_at_cache_read) {
            let _ =
                writeln!(s, "  at {p} per million cache-read tokens, each later turn re-sending them: {}", money(v));
        }
    }
    if t.reads > 0 || r.by == By::Day.as_str() {
        s.push('\n');
        table(&mut s, r, bars && r.by == By::Day.as_str(), color);
    }
    if !r.withheld.is_empty() {
        s.push_str("\nwithheld stubs, most frequent first (what you can do):\n");
        for w in &r.withheld {
            let _ = writeln!(s, "  {:>6}  {}: {}", w.count, w.reason, w.what_to_do);
        }
    }
    if r.unreadable_lines > 0 {
        let _ = writeln!(
            s,
            "\n{} lines of the stats log could not be read (torn or not ours): not counted",
            r.unreadable_lines
        );
    }
    if !r.problems.is_empty() {
        s.push_str("\ncould not read everything:\n");
        for p in &r.problems {
            let _ = writeln!(s, "  {p}");
        }
    }
    s
}

fn table(s: &mut String, r: &Report, bars: bool, color: bool) {
    let shown: Vec<&Row> = r.rows.iter().take(if r.by == "day" { usize::MAX } else { MAX_ROWS }).collect();
    let rest = r.rows.len() - shown.len();
    let w = shown.iter().map(|x| x.key.chars().count()).max().unwrap_or(0).clamp(r.by.len(), 48);
    let _ = writeln!(s, "{:<w$}  {:>6} {:>6} {:>6} {:>8} {:>9}", r.by, "reads", "stubs", "diffs", "withheld", "saved");
    let max = shown.iter().map(|x| x.figures.bytes_saved).max().unwrap_or(0).max(1);
    for x in &shown {
        let f = &x.figures;
        let key = cut(&x.key, w);
        let _ = write!(
            s,
            "{key:<w$}  {:>6} {:>6} {:>6} {:>8} {:>9}",
            f.reads,
            f.stubs,
            f.diffs,
            f.withheld,
            bytes(f.bytes_saved)
        );
        if bars && f.bytes_saved > 0 {
            let n = (f.bytes_saved * BAR).div_ceil(max) as usize;
            let bar = "█".repeat(n);
            let _ = if color { write!(s, "  \x1b[32m{bar}\x1b[0m") } else { write!(s, "  {bar}") };
        }
        s.push('\n');
    }
    if rest > 0 {
        let _ = writeln!(s, "… and {rest} more (--json lists them all)");
    }
    if matches!(r.by, "file" | "session") {
        let _ = writeln!(s, "(by {} is kept for the last {} days)", r.by, r.detail_days);
    }
}

/// The last `w` characters of a long key (a path's end says most).
fn cut(k: &str, w: usize) -> String {
    let n = k.chars().count();
    if n <= w { k.to_string() } else { format!("…{}", k.chars().skip(n - w + 1).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::agg::Aggregates;
    use crate::stats::line::{Kind, Line, Via};
    use crate::stats::report::{Prices, Since, build};

    fn sample() -> Aggregates {
        let mut a = Aggregates::default();
        for (day, kind, sent) in [(19_999, Kind::Stub, 200), (20_000, Kind::Withheld("unconfirmed"), 9000)] {
            a.add(&Line {
                t: day * 86_400_000,
                via: Via::Serve,
                host: None,
                conv: None,
                kind,
                file: "src/lib.rs".into(),
                sent,
                whole: 9000,
                saved: 9000 - sent,
            });
        }
        a
    }

    #[test]
    fn bars_only_on_a_terminal_and_colour_only_when_allowed() {
        let r = build(&sample(), 20_000, Since::Days(7), By::Day, Prices::default(), vec!["x is a FIFO".into()]);
        let plain = human(&r, false, false);
        assert!(!plain.contains('█') && !plain.contains('\x1b'), "{plain}");
        assert!(plain.contains("2 reads: 0 whole, 1 stubs, 0 diffs, 1 withheld"), "{plain}");
        assert!(plain.contains("saved 8.8 kB"), "{plain}");
        assert!(plain.contains("unconfirmed: the host did not confirm"), "{plain}");
        assert!(plain.contains("could not read everything:\n  x is a FIFO"), "{plain}");
        let tty = human(&r, true, false);
        assert!(tty.contains('█') && !tty.contains('\x1b'), "{tty}");
        assert!(human(&r, true, true).contains("\x1b[32m"));
    }

    #[test]
    fn byte_figures_read_well() {
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1_500), "1.5 kB");
        assert_eq!(bytes(25_000), "25 kB");
        assert_eq!(bytes(3_400_000), "3.4 MB");
        assert_eq!(cut("abcdefgh", 5), "…efgh");
        assert_eq!(
            (money(12.345), money(0.0021), money(0.5), money(0.0)),
            ("12.35".into(), "0.002100".into(), "0.5000".into(), "0.00".into())
        );
    }
}
