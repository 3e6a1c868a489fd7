//! Was the machine quiet enough for this run's ratios to be judged? The
//! targets are ratios to a floor process measured in the same rounds, so
//! steady load cancels out in part, but a busy machine stretches the tails
//! and the spawn cost unevenly (issue 25: a 2-core machine shared with other
//! work measured 1.27-1.46x where a quiet one measured 1.10-1.18x). Three
//! signs, each cheap and taken from the run itself:
//! - the 1-minute load average before the run, from other work;
//! - the floor's own spread (p90 / p50): a quiet machine gives a tight one;
//! - the floor measured again: the p50 of the first and the second half of
//!   its rounds (drift: something started or stopped during the run).

use std::time::Duration;

/// Load average (1 min) before the run above this share of the cores: busy.
pub const MAX_LOAD_PER_CORE: f64 = 0.5;
/// The floor's p90 / p50 above this: its samples are too spread.
pub const MAX_FLOOR_SPREAD: f64 = 1.30;
/// The floor's p50 moving by more than this between halves: drift.
pub const MAX_FLOOR_DRIFT: f64 = 0.05;

/// The 1-minute load average (`/proc/loadavg`), where there is one.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

fn p(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64()
}

fn sorted(s: &[Duration]) -> Vec<Duration> {
    let mut v = s.to_vec();
    v.sort();
    v
}

/// The verdict and the figures behind it, as one line for the summary.
/// `floor`: the floor's samples in the order they were taken.
pub fn judge(load_before: Option<f64>, cores: usize, floor: &[Duration]) -> (bool, String) {
    let mut why = Vec::new();
    let mut facts = Vec::new();
    if let Some(l) = load_before {
        facts.push(format!("load average {l:.2} before the run on {cores} cores"));
        if l > MAX_LOAD_PER_CORE * cores as f64 {
            why.push(format!(
                "the load average was {l:.2} (over {:.1} on {cores} cores)",
                MAX_LOAD_PER_CORE * cores as f64
            ));
        }
    }
    if floor.len() >= 8 {
        let all = sorted(floor);
        let spread = p(&all, 0.9) / p(&all, 0.5);
        let (a, b) = floor.split_at(floor.len() / 2);
        let drift = p(&sorted(a), 0.5) / p(&sorted(b), 0.5) - 1.0;
        facts.push(format!(
            "floor p90/p50 {spread:.2}, floor p50 {:+.1} % from the first half of the rounds to the second",
            -drift * 100.0
        ));
        if spread > MAX_FLOOR_SPREAD {
            why.push(format!("the floor's p90/p50 was {spread:.2} (over {MAX_FLOOR_SPREAD:.2})"));
        }
        if drift.abs() > MAX_FLOOR_DRIFT {
            why.push(format!(
                "the floor's p50 moved {:.1} % during the run (over {:.0} %)",
                drift.abs() * 100.0,
                MAX_FLOOR_DRIFT * 100.0
            ));
        }
    } else {
        why.push("too few floor samples to judge".into());
    }
    let facts = facts.join("; ");
    if why.is_empty() {
        (true, format!("Quiet enough to judge the targets: yes ({facts})"))
    } else {
        (
            false,
            format!(
                "Quiet enough to judge the targets: NO, {}: the ratios may be inflated; run again on an idle machine ({facts})",
                why.join(", ")
            ),
        )
    }
}
