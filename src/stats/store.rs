//! The stats files in the data dir: the log recorders append to, and the
//! fold that turns it into the aggregates.
//!
//! Recorders never lock: they append whole lines with `O_APPEND`. A fold
//! (under `stats.lock`) reads each log from the offset the aggregates say
//! was folded, up to its last newline (a line still being written waits for
//! the next fold), and replaces `stats.json` atomically with the new sums
//! and offsets together, so a crash folds nothing twice. Past [`FOLD_AT`]
//! the log is renamed `stats.log.1` (a recorder that opened it before the
//! rename writes there, and the next fold reads it); `stats.log.1` is
//! removed once folded to its end and untouched for [`OLD_GRACE_MS`]. The
//! one loss left: a recorder stopped for longer than that between opening
//! the log and writing its line.

use super::agg::{self, Aggregates, MAX_AGG_BYTES, Pos};
use super::line;
use super::{AGG_FILE, FOLD_AT, LOCK_FILE, LOG_FILE, OLD_LOG_FILE};
use crate::base::paths;
use crate::fsx::{self, LockKind};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Instant;

/// A log this large is not appended to (folds are failing: `stats` says why).
pub const MAX_LOG_BYTES: u64 = 64 * 1024 * 1024;
/// How long a folded `stats.log.1` is left for recorders that opened it
/// before the rotation.
pub const OLD_GRACE_MS: u64 = 10_000;

/// Append whole lines to the log (never creating the data dir). Past
/// [`FOLD_AT`], fold now if nobody else is.
pub fn append(dir: &Path, bytes: &[u8]) -> io::Result<()> {
    paths::check_data_dir(dir).map_err(|e| io::Error::other(e.to_string()))?;
    let (mut f, md) = fsx::open_state_md(&dir.join(LOG_FILE), true, MAX_LOG_BYTES)?.expect("created");
    f.write_all(bytes)?;
    drop(f);
    if fold_due(md.len(), bytes.len() as u64) {
        let _ = fold(dir, crate::base::clock::now_ms_env(), true, Instant::now());
    }
    Ok(())
}

/// An append folds when it takes the log across a multiple of [`FOLD_AT`]:
/// at `FOLD_AT` as always, and while the rotation waits for the last log's
/// [`OLD_GRACE_MS`], once per `FOLD_AT` more. Every append past `FOLD_AT`
/// folded before: for those 10 s each 16 KiB flush re-read its lines and
/// rewrote `stats.json`, and benches/hooks' 400,000 records in a second or
/// two spent most of their 3 µs each there (benches/README.md).
fn fold_due(before: u64, added: u64) -> bool {
    (before + added) / FOLD_AT > before / FOLD_AT
}

/// The aggregates, and what could not be read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub agg: Aggregates,
    /// Each file that could not be read or written, and what that means.
    pub problems: Vec<String>,
    /// The log was folded into `stats.json` (else the figures were summed
    /// in memory only).
    pub folded: bool,
}

/// Read the aggregates and every line not folded yet. `write`: fold them
/// into `stats.json` (under the lock, waited for until `deadline`); else,
/// or when the lock or the write fails, the sums are in memory only.
pub fn fold(dir: &Path, now_ms: u64, write: bool, deadline: Instant) -> Loaded {
    let mut out = Loaded::default();
    if let Err(e) = paths::check_data_dir(dir) {
        if std::fs::symlink_metadata(dir).is_ok() {
            out.problems.push(format!("the data dir cannot be used: {e}"));
        }
        return out;
    }
    let lock = if write { take_lock(dir, deadline, &mut out.problems) } else { None };
    let mut writable = lock.is_some();
    match fsx::read_state(&dir.join(AGG_FILE), MAX_AGG_BYTES as u64 * 2) {
        Ok(None) => {}
        Ok(Some(bytes)) => match serde_json::from_slice::<Aggregates>(&bytes) {
            Ok(a) => out.agg = a,
            Err(e) => {
                let kept = writable && std::fs::rename(dir.join(AGG_FILE), dir.join(BAD_AGG_FILE)).is_ok();
                out.problems.push(format!(
                    "{AGG_FILE} does not parse ({e}): the days it summed are not counted{}",
                    if kept { format!(" (kept as {BAD_AGG_FILE})") } else { String::new() }
                ));
            }
        },
        Err(e) => {
            out.problems.push(format!("{e}: the days it summed are not counted"));
            writable = false;
        }
    }
    let mut folded = agg::Folded::default();
    for (name, is_log) in [(OLD_LOG_FILE, false), (LOG_FILE, true)] {
        let was = [out.agg.folded.log, out.agg.folded.old];
        match read_new(dir, name, &was, &mut out.agg) {
            Ok(pos) if is_log => folded.log = pos,
            Ok(pos) => folded.old = pos,
            Err(e) => {
                out.problems.push(format!("{e}: its answers are not counted"));
                writable = false;
            }
        }
    }
    let today = now_ms / 86_400_000;
    out.agg.prune(today);
    out.agg.version = 1;
    if !writable {
        return out;
    }
    out.agg.folded = rotate(dir, folded, now_ms);
    out.agg.shrink_to_fit(|a| serde_json::to_vec(a).map_or(0, |v| v.len()));
    match serde_json::to_vec(&out.agg)
        .map_err(io::Error::other)
        .and_then(|v| fsx::write_atomic(&dir.join(AGG_FILE), &v))
    {
        Ok(()) => out.folded = true,
        Err(e) => out.problems.push(format!("{AGG_FILE} could not be written: {e}")),
    }
    drop(lock);
    out
}

/// Where an aggregates file that did not parse is kept.
pub const BAD_AGG_FILE: &str = "stats.json.bad";

fn take_lock(dir: &Path, deadline: Instant, problems: &mut Vec<String>) -> Option<fsx::Lock> {
    let f = match fsx::open_state(&dir.join(LOCK_FILE), true, 0) {
        Ok(f) => f.expect("created"),
        Err(e) => {
            problems.push(format!("{e}: figures summed without folding"));
            return None;
        }
    };
    match fsx::lock(f, LockKind::Exclusive, deadline) {
        Ok(l) => Some(l),
        Err(_) => {
            problems.push(format!("{LOCK_FILE} is held by another fold: figures summed without folding"));
            None
        }
    }
}

/// Fold the lines of `name` after the offset recorded for it (matched by
/// file id; an unknown file is read from its start) into `agg`. Returns
/// where the fold ended (`None`: no such file).
fn read_new(dir: &Path, name: &str, was: &[Option<Pos>], agg: &mut Aggregates) -> io::Result<Option<Pos>> {
    let path = dir.join(name);
    let Some((mut f, md)) = fsx::open_state_md(&path, false, MAX_LOG_BYTES)? else { return Ok(None) };
    let id = fsx::handle_id(&f, &md)?;
    let start = was.iter().flatten().find(|p| p.id == id).map_or(0, |p| p.offset);
    // A file shorter than its offset was truncated: read it again.
    let start = if start > md.len() { 0 } else { start };
    f.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    f.take(MAX_LOG_BYTES).read_to_end(&mut bytes)?;
    let end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    for raw in bytes[..end].split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        match std::str::from_utf8(raw).ok().and_then(line::parse) {
            Some(l) => agg.add(&l),
            None => agg.unreadable_lines += 1,
        }
    }
    Ok(Some(Pos { id, offset: start + end as u64 }))
}

/// Past [`FOLD_AT`], move the folded log aside (when the last one is gone
/// or may go), so the log stays bounded.
fn rotate(dir: &Path, mut folded: agg::Folded, now_ms: u64) -> agg::Folded {
    let Some(log) = folded.log.filter(|p| p.offset >= FOLD_AT) else { return folded };
    let old = dir.join(OLD_LOG_FILE);
    if let Ok(md) = std::fs::symlink_metadata(&old) {
        let done = folded.old.is_some_and(|p| p.offset >= md.len());
        let quiet = md
            .modified()
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .is_some_and(|m| (m.as_millis() as u64).saturating_add(OLD_GRACE_MS) <= now_ms);
        if !(done && quiet && md.is_file() && std::fs::remove_file(&old).is_ok()) {
            return folded;
        }
        folded.old = None;
    }
    if std::fs::rename(dir.join(LOG_FILE), &old).is_ok() {
        folded.old = Some(log);
        folded.log = None;
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{Kind, Outcome, Via};

    fn dir() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        fsx::create_private_dir(&t.path().join("d"), false).unwrap();
        t
    }

    fn now() -> u64 {
        crate::base::clock::now_ms()
    }

    fn today() -> String {
        agg::day_of(now())
    }

    fn lines(n: usize, t: u64) -> String {
        let mut s = String::new();
        for i in 0..n {
            let o = Outcome {
                via: Via::Cli,
                host: None,
                conversation: Some("c"),
                file: "src/a.rs",
                kind: if i % 2 == 0 { Kind::Stub } else { Kind::Whole },
                sent: Some(100),
                whole: 1000,
                t_ms: None,
            };
            line::write(&mut s, t, &o);
        }
        s
    }

    #[test]
    fn a_fold_counts_each_line_once_and_keeps_a_partial_line() {
        let t = dir();
        let d = t.path().join("d");
        let t0 = now();
        append(&d, lines(3, t0).as_bytes()).unwrap();
        append(&d, format!("R\t{t0}\tcli\t-\t-\tstub").as_bytes()).unwrap();
        let l = fold(&d, t0, true, Instant::now());
        assert!(l.folded && l.problems.is_empty(), "{:?}", l.problems);
        assert_eq!(l.agg.days[&today()].total.reads, 3);
        append(&d, b"\t-\tf\t1\t9\n").unwrap();
        let l = fold(&d, t0, true, Instant::now());
        assert_eq!(l.agg.days[&today()].total.reads, 4, "the finished line, once");
        assert_eq!(fold(&d, t0, false, Instant::now()).agg.days[&today()].total.reads, 4);
    }

    #[test]
    fn the_log_rotates_and_nothing_is_counted_twice() {
        let t = dir();
        let d = t.path().join("d");
        let chunk = lines(1000, now());
        let mut n = 0;
        while (n * chunk.len() as u64) < 3 * FOLD_AT {
            append(&d, chunk.as_bytes()).unwrap();
            n += 1;
        }
        let l = fold(&d, now() + 2 * OLD_GRACE_MS, true, Instant::now());
        assert!(l.problems.is_empty(), "{:?}", l.problems);
        assert_eq!(l.agg.days[&today()].total.reads, n * 1000);
        assert!(std::fs::metadata(d.join(LOG_FILE)).map_or(0, |m| m.len()) < FOLD_AT + chunk.len() as u64);
    }

    /// While the last log waits out its grace (not rotated), appends past
    /// FOLD_AT fold once per FOLD_AT crossed, not at every append.
    #[test]
    fn a_log_past_the_fold_point_folds_once_per_fold_at() {
        assert!(!fold_due(0, FOLD_AT - 1) && fold_due(0, FOLD_AT) && fold_due(FOLD_AT - 1, 1));
        assert!(!fold_due(FOLD_AT, 1) && !fold_due(FOLD_AT, FOLD_AT - 1) && fold_due(FOLD_AT + 1, FOLD_AT));
        let t = dir();
        let d = t.path().join("d");
        // An old log not folded yet: the rotation waits.
        std::fs::write(d.join(OLD_LOG_FILE), "").unwrap();
        let chunk = lines(300, now());
        let folded_at = || {
            std::fs::read(d.join(AGG_FILE))
                .ok()
                .and_then(|b| serde_json::from_slice::<Aggregates>(&b).ok())
                .and_then(|a| a.folded.log.map(|p| p.offset))
        };
        let (mut size, mut folds) = (0u64, Vec::new());
        while size < 3 * FOLD_AT + chunk.len() as u64 {
            let before = folded_at();
            append(&d, chunk.as_bytes()).unwrap();
            size += chunk.len() as u64;
            if folded_at() != before {
                folds.push(size);
            }
        }
        assert!(d.join(OLD_LOG_FILE).exists() && d.join(LOG_FILE).exists(), "not rotated");
        let crossings: Vec<u64> =
            (1..=3).map(|k| (k * FOLD_AT).div_ceil(chunk.len() as u64) * chunk.len() as u64).collect();
        assert_eq!(folds, crossings, "chunks of {} bytes", chunk.len());
    }

    #[test]
    fn a_corrupt_aggregates_file_is_kept_aside_and_said() {
        let t = dir();
        let d = t.path().join("d");
        fsx::write_atomic(&d.join(AGG_FILE), b"{not json").unwrap();
        append(&d, lines(2, now()).as_bytes()).unwrap();
        let l = fold(&d, now(), true, Instant::now());
        assert_eq!(l.agg.days[&today()].total.reads, 2);
        assert!(l.problems[0].contains("does not parse") && l.problems[0].contains(BAD_AGG_FILE), "{:?}", l.problems);
        assert!(d.join(BAD_AGG_FILE).exists());
        assert!(fold(&d, now(), true, Instant::now()).problems.is_empty());
    }
}
