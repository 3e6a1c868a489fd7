//! The rolling daily aggregates (pure): per UTC day the totals, by host, by
//! answering tool, by withheld reason, and (for recent days) by file and by
//! session, each bounded, so a year of days stays well under
//! [`MAX_AGG_BYTES`].

use super::line::{Kind, Line};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Days kept at all (a year and a little).
pub const KEEP_DAYS: u64 = 400;
/// Days that keep their by-file and by-session detail.
pub const DETAIL_DAYS: u64 = 35;
/// Files and sessions kept per day (the largest savings; the rest are
/// summed under [`OTHER`]).
pub const MAX_FILES: usize = 48;
pub const MAX_SESSIONS: usize = 24;
/// The aggregates file never grows past this: the oldest days' detail,
/// then the oldest days, go first.
pub const MAX_AGG_BYTES: usize = 1024 * 1024;
/// Where what a bound dropped is summed.
pub const OTHER: &str = "(other)";
/// A host or conversation that was not known.
pub const UNKNOWN: &str = "(unknown)";

/// Counts and bytes. Serialized as one array (the aggregates stay small).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "[u64; 9]", into = "[u64; 9]")]
pub struct Tally {
    /// Questions answered.
    pub reads: u64,
    pub whole: u64,
    pub stubs: u64,
    pub diffs: u64,
    pub withheld: u64,
    pub errors: u64,
    /// Bytes sent.
    pub sent: u64,
    /// Bytes whole deliveries would have sent.
    pub would: u64,
    /// Bytes saved (each answer's saving capped, then summed).
    pub saved: u64,
}

impl From<[u64; 9]> for Tally {
    fn from(a: [u64; 9]) -> Tally {
        let [reads, whole, stubs, diffs, withheld, errors, sent, would, saved] = a;
        Tally { reads, whole, stubs, diffs, withheld, errors, sent, would, saved }
    }
}

impl From<Tally> for [u64; 9] {
    fn from(t: Tally) -> [u64; 9] {
        [t.reads, t.whole, t.stubs, t.diffs, t.withheld, t.errors, t.sent, t.would, t.saved]
    }
}

impl Tally {
    pub fn add_line(&mut self, l: &Line<'_>) {
        self.reads += 1;
        match l.kind {
            Kind::Whole => self.whole += 1,
            Kind::Stub => self.stubs += 1,
            Kind::Diff => self.diffs += 1,
            Kind::Withheld(_) => self.withheld += 1,
            Kind::Error => self.errors += 1,
        }
        self.sent += l.sent;
        self.would += l.whole;
        self.saved += l.saved;
    }

    pub fn merge(&mut self, o: &Tally) {
        let (a, b): ([u64; 9], [u64; 9]) = ((*self).into(), (*o).into());
        *self = std::array::from_fn(|i| a[i].saturating_add(b[i])).into();
    }
}

/// One UTC day.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Day {
    pub total: Tally,
    #[serde(default)]
    pub hosts: BTreeMap<String, Tally>,
    #[serde(default)]
    pub via: BTreeMap<String, Tally>,
    #[serde(default)]
    pub reasons: BTreeMap<String, Tally>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, Tally>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sessions: BTreeMap<String, Tally>,
}

/// How far the logs were folded: a file (by its device and inode) and the
/// offset after the last line folded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pos {
    pub id: (u64, u64),
    pub offset: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Folded {
    pub log: Option<Pos>,
    pub old: Option<Pos>,
}

/// The whole aggregates file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aggregates {
    pub version: u32,
    /// `YYYY-MM-DD` (UTC) → the day.
    pub days: BTreeMap<String, Day>,
    #[serde(default)]
    pub folded: Folded,
    /// Lines of the log that could not be read (torn by a crash or a full
    /// disk, or not ours), ever.
    #[serde(default)]
    pub unreadable_lines: u64,
}

impl Aggregates {
    pub fn add(&mut self, l: &Line<'_>) {
        let d = self.days.entry(day_of(l.t)).or_default();
        d.total.add_line(l);
        let host = l.host.map_or(UNKNOWN, |h| h.as_str());
        d.hosts.entry(host.to_string()).or_default().add_line(l);
        d.via.entry(l.via.as_str().to_string()).or_default().add_line(l);
        if let Kind::Withheld(r) = l.kind {
            d.reasons.entry(r.to_string()).or_default().add_line(l);
        }
        d.files.entry(l.file.clone()).or_default().add_line(l);
        d.sessions.entry(l.conv.clone().unwrap_or_else(|| UNKNOWN.to_string())).or_default().add_line(l);
    }

    /// Apply the bounds as of `today` (days since the epoch): files and
    /// sessions per day, detail only for recent days, days kept.
    pub fn prune(&mut self, today: u64) {
        self.days.retain(|k, _| day_index(k).is_some_and(|d| d + KEEP_DAYS > today));
        for (k, d) in self.days.iter_mut() {
            if day_index(k).is_some_and(|i| i + DETAIL_DAYS <= today) {
                d.files.clear();
                d.sessions.clear();
            }
            cap(&mut d.files, MAX_FILES);
            cap(&mut d.sessions, MAX_SESSIONS);
        }
    }

    /// Drop the oldest detail, then the oldest days, until `size` (the
    /// serialized length) says it fits in [`MAX_AGG_BYTES`].
    pub fn shrink_to_fit(&mut self, size: impl Fn(&Aggregates) -> usize) {
        while size(self) > MAX_AGG_BYTES {
            if let Some(d) = self.days.values_mut().find(|d| !d.files.is_empty() || !d.sessions.is_empty()) {
                d.files.clear();
                d.sessions.clear();
            } else if self.days.pop_first().is_none() {
                return;
            }
        }
    }
}

/// Keep the `max` largest (by bytes saved, then reads); sum the rest.
fn cap(m: &mut BTreeMap<String, Tally>, max: usize) {
    if m.len() <= max {
        return;
    }
    let mut v: Vec<(String, Tally)> = std::mem::take(m).into_iter().collect();
    v.sort_by(|a, b| (b.1.saved, b.1.reads, &a.0).cmp(&(a.1.saved, a.1.reads, &b.0)));
    let mut other = Tally::default();
    for (_, t) in v.drain(max - 1..) {
        other.merge(&t);
    }
    m.extend(v);
    m.entry(OTHER.to_string()).or_default().merge(&other);
}

/// The UTC day of a unix-ms time, `YYYY-MM-DD`.
pub fn day_of(t_ms: u64) -> String {
    let (y, m, d) = civil((t_ms / 86_400_000) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since the epoch of a `YYYY-MM-DD`.
pub fn day_index(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d): (i64, u32, u32) = (s[..4].parse().ok()?, s[5..7].parse().ok()?, s[8..].parse().ok()?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    u64::try_from(era * 146_097 + doe - 719_468).ok()
}

/// Howard Hinnant's civil_from_days.
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::line::Via;

    fn l(t: u64, file: &str, conv: &str, kind: Kind<'static>, whole: u64, sent: u64) -> Line<'static> {
        let saved = if matches!(kind, Kind::Stub | Kind::Diff) { whole.saturating_sub(sent) } else { 0 };
        Line {
            t,
            via: Via::Serve,
            host: Some(crate::Host::Codex),
            conv: Some(conv.into()),
            kind,
            file: file.into(),
            sent,
            whole,
            saved,
        }
    }

    #[test]
    fn days_are_utc_calendar_days() {
        assert_eq!(day_of(0), "1970-01-01");
        assert_eq!(day_of(1_796_083_200_000 - 1), "2026-11-30");
        assert_eq!(day_of(1_796_083_200_000), "2026-12-01");
        assert_eq!(day_of(951_782_400_000), "2000-02-29");
        for d in [0u64, 59, 60, 365, 10_957, 20_000, 20_423, 40_000] {
            assert_eq!(day_index(&day_of(d * 86_400_000)), Some(d));
        }
        assert_eq!(day_index("2026-13-01"), None);
        assert_eq!(day_index("garbage!!!"), None);
    }

    #[test]
    fn a_day_sums_by_host_tool_reason_file_and_session() {
        let mut a = Aggregates::default();
        a.add(&l(5, "a", "c1", Kind::Whole, 100, 100));
        a.add(&l(6, "a", "c1", Kind::Stub, 100, 10));
        a.add(&l(7, "b", "c2", Kind::Withheld("compacted"), 50, 50));
        let d = &a.days["1970-01-01"];
        assert_eq!(d.total, Tally::from([3, 1, 1, 0, 1, 0, 160, 250, 90]));
        assert_eq!(d.hosts["codex"], d.total);
        assert_eq!(d.via["serve"], d.total);
        assert_eq!(d.reasons["compacted"].withheld, 1);
        assert_eq!(d.files["a"].saved, 90);
        assert_eq!(d.sessions["c2"].reads, 1);
    }

    /// A year at every bound (names at their length cap, more files and
    /// sessions than kept, every host, tool and reason) stays under the
    /// 1 MiB the aggregates may take, without [`Aggregates::shrink_to_fit`].
    #[test]
    fn a_year_at_every_bound_is_under_a_mebibyte() {
        let mut a = Aggregates::default();
        let today = 20_000;
        let reasons = ["compacted", "unconfirmed", "unknown-caller", "unrecorded-call", "window-changed", "other"];
        let long = "d".repeat(crate::stats::line::MAX_FILE_CHARS - 8);
        for d in 0..366 {
            for i in 0..120u64 {
                let kind = if i.is_multiple_of(4) { Kind::Withheld(reasons[i as usize % 6]) } else { Kind::Stub };
                let mut x =
                    l((today - d) * 86_400_000, &format!("{long}/{i:04}.rs"), &format!("c{i:036}"), kind, 9000, 1);
                x.host = Some(
                    [crate::Host::ClaudeCode, crate::Host::Codex, crate::Host::Cursor, crate::Host::CodeBuddy]
                        [i as usize % 4],
                );
                x.via = [Via::Serve, Via::Cli, Via::Lib][i as usize % 3];
                a.add(&x);
            }
        }
        a.prune(today);
        let n = serde_json::to_vec(&a).unwrap().len();
        assert!(n < MAX_AGG_BYTES, "{n} bytes");
        assert_eq!(a.days.len(), 366);
        let mut b = a.clone();
        b.shrink_to_fit(|_| 0);
        assert_eq!(a, b);
        // Whatever the size, shrinking drops the oldest detail first.
        b.shrink_to_fit(|x| if x.days.values().any(|d| !d.files.is_empty()) { usize::MAX } else { 0 });
        assert_eq!(b.days.len(), 366);
        assert!(b.days.values().all(|d| d.files.is_empty()));
    }

    #[test]
    fn the_bounds_keep_the_largest_and_sum_the_rest() {
        let mut a = Aggregates::default();
        for i in 0..(MAX_FILES as u64 + 20) {
            a.add(&l(1, &format!("f{i}"), &format!("c{i}"), Kind::Stub, 1000 + i, 0));
        }
        let before = a.days["1970-01-01"].total;
        a.prune(0);
        let d = &a.days["1970-01-01"];
        assert_eq!(d.files.len(), MAX_FILES);
        assert_eq!(d.sessions.len(), MAX_SESSIONS);
        let sum = d.files.values().fold(Tally::default(), |mut s, t| {
            s.merge(t);
            s
        });
        assert_eq!(sum, before, "nothing lost, only summed");
        assert!(d.files.contains_key(&format!("f{}", MAX_FILES + 19)), "the largest kept");
        a.prune(DETAIL_DAYS);
        assert!(a.days["1970-01-01"].files.is_empty());
        assert_eq!(a.days["1970-01-01"].total, before);
        a.prune(KEEP_DAYS);
        assert!(a.days.is_empty());
    }
}
