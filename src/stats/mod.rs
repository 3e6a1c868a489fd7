//! What the read path saved, honestly: one record per question answered
//! (whole, stub, diff, withheld with its reason, error), folded into
//! rolling daily aggregates that `leanctx stats` and `leanctx status` read.
//!
//! Recording is off the decision: a stats file that is missing, corrupt,
//! a FIFO or another user's never changes an answer, and recording never
//! fails a question (it is skipped; `stats` says what it could not read).
//!
//! Cost: [`Sink::record`] formats one line into memory (no I/O); a flush is
//! one `O_APPEND` write of whole lines to `stats.log`, with no lock (Linux
//! appends a write to a regular file whole, at the end, so concurrent
//! writers never interleave inside a line). `stats` (or a flush that finds
//! the log past [`FOLD_AT`]) folds the log into `stats.json` under
//! `stats.lock` ([`store`]).
//!
//! ```no_run
//! use leanctx::stats::{self, Kind, Outcome, Via};
//! // An MCP server that decides its own answer (a diff) records it once:
//! stats::record(&Outcome {
//!     via: Via::Serve, host: None, conversation: Some("7d4181fb-…"), file: "src/main.rs",
//!     kind: Kind::Diff, sent: Some(812), whole: 10_240, t_ms: None,
//! });
//! stats::flush(); // when idle, and before exiting
//! ```

// `leanctx stats`'s own parts, public for the CLI, tests and benches; a
// server records through `record` and `flush` alone.
#[doc(hidden)]
pub mod agg;
#[doc(hidden)]
pub mod line;
#[doc(hidden)]
pub mod report;
#[doc(hidden)]
pub mod store;

use crate::base::host::Host;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use agg::{Aggregates, Tally};
pub use line::{Kind, Via};

/// The log, appended to by every recorder.
pub const LOG_FILE: &str = "stats.log";
/// The log as it was at the last rotation, folded until it is removed.
pub const OLD_LOG_FILE: &str = "stats.log.1";
/// The daily aggregates (JSON), replaced atomically by a fold.
pub const AGG_FILE: &str = "stats.json";
/// Taken (exclusive) by a fold; recorders never take it.
pub const LOCK_FILE: &str = "stats.lock";
/// A flush that finds the log this large folds it (if no one else is).
pub const FOLD_AT: u64 = 512 * 1024;
/// A buffered record waits at most this long for a flush by the next
/// record (a server that stops asking should call [`flush`]).
pub const FLUSH_AFTER: Duration = Duration::from_secs(2);
/// A buffer this large is flushed by the record that fills it.
pub const FLUSH_BYTES: usize = 16 * 1024;
/// The size counted for a stub whose server did not say how large its
/// stub text was (`leanctx stub` is asked before the server writes it):
/// lean-ctx's `[unchanged]` stub line with a path is well under this.
pub const STUB_BYTES_ASSUMED: u64 = 200;

/// One answered question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome<'a> {
    /// Who answered: the `read` tool of `leanctx serve`, `leanctx stub`/
    /// `deliver`, or the library.
    pub via: Via,
    /// The host of the call, when known.
    pub host: Option<Host>,
    /// The caller's conversation (a host id), when known.
    pub conversation: Option<&'a str>,
    /// The server's name for the content (a path): names are stored, never
    /// content (README, "State").
    pub file: &'a str,
    /// What was answered: whole, stub, diff, withheld (with its reason), error.
    pub kind: Kind<'a>,
    /// Bytes this answer sent; `None`: a stub whose size the server did not
    /// give (counted as [`STUB_BYTES_ASSUMED`]). For whole and withheld
    /// answers, the whole delivery.
    pub sent: Option<u64>,
    /// Bytes a whole delivery would have sent (from the ledger's record of
    /// the delivery, or the result's length); 0 when unknown (then nothing
    /// is counted as saved).
    pub whole: u64,
    /// When; `None`: the wall clock now.
    pub t_ms: Option<u64>,
}

impl Outcome<'_> {
    /// Bytes sent, with the stub assumption applied.
    pub fn sent_bytes(&self) -> u64 {
        match (self.sent, self.kind) {
            (Some(s), _) => s,
            (None, Kind::Stub) => STUB_BYTES_ASSUMED.min(self.whole),
            (None, Kind::Whole | Kind::Withheld(_)) => self.whole,
            (None, _) => 0,
        }
    }

    /// Bytes saved, honest by construction: a stub or a diff saves the
    /// whole delivery less what it sent (never more than the whole it
    /// replaces, never below zero); whole, withheld and errors save nothing.
    pub fn saved_bytes(&self) -> u64 {
        match self.kind {
            Kind::Stub | Kind::Diff => self.whole.saturating_sub(self.sent_bytes()),
            _ => 0,
        }
    }
}

/// A buffer of record lines for one data dir.
#[derive(Debug)]
pub struct Sink {
    dir: Option<PathBuf>,
    buf: String,
    since: Option<Instant>,
}

impl Sink {
    /// A sink writing to the data dir `dir` (none: records nothing).
    pub const fn new(dir: Option<PathBuf>) -> Sink {
        Sink { dir, buf: String::new(), since: None }
    }

    /// Buffer one record (no I/O); flush when the buffer is full or old.
    pub fn record(&mut self, o: &Outcome<'_>) {
        // The read path passes its own "now" (which honours the tests'
        // clock override); the wall clock otherwise, without an env lookup.
        let t = o.t_ms.unwrap_or_else(crate::base::clock::now_ms);
        line::write(&mut self.buf, t, o);
        let since = *self.since.get_or_insert_with(Instant::now);
        if self.buf.len() >= FLUSH_BYTES || since.elapsed() >= FLUSH_AFTER {
            self.flush();
        }
    }

    /// Append what is buffered to the log (one write). Errors are dropped:
    /// a figure is lost, never an answer.
    pub fn flush(&mut self) {
        self.since = None;
        if self.buf.is_empty() {
            return;
        }
        if let Some(dir) = self.dir.as_deref() {
            let _ = store::append(dir, self.buf.as_bytes());
        }
        self.buf.clear();
    }

    /// The data dir it writes to, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Write to `dir` from now on (none: record nothing).
    pub fn set_dir(&mut self, dir: Option<&Path>) {
        if self.dir.as_deref() != dir {
            self.flush();
            self.dir = dir.map(Path::to_path_buf);
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Sinks, one per data dir. One per dir, not one switched between dirs: a
/// switch flushed at every answer of a process asking about two dirs in
/// turn (an open, a write and a close each time; benches/hooks measured
/// about 10 µs an answer).
#[derive(Debug, Default)]
pub struct Sinks(Vec<Sink>);

/// Data dirs buffered at once (the least recently added is flushed first).
pub const MAX_SINKS: usize = 4;

impl Sinks {
    /// Buffer `o` in the sink for `dir`.
    pub fn record_in(&mut self, dir: &Path, o: &Outcome<'_>) {
        let i = match self.0.iter().position(|s| s.dir() == Some(dir)) {
            Some(i) => i,
            None => {
                if self.0.len() >= MAX_SINKS {
                    // Dropped: flushed.
                    self.0.remove(0);
                }
                self.0.push(Sink::new(Some(dir.to_path_buf())));
                self.0.len() - 1
            }
        };
        self.0[i].record(o);
    }

    /// Flush every sink.
    pub fn flush(&mut self) {
        self.0.iter_mut().for_each(Sink::flush);
    }
}

/// The process's sinks (statics are never dropped: call [`flush`]).
static SINKS: Mutex<Sinks> = Mutex::new(Sinks(Vec::new()));

/// `LEANCTX_STATS=0|off|false`: record nothing (read once a process).
fn disabled() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| std::env::var("LEANCTX_STATS").is_ok_and(|v| matches!(v.trim(), "0" | "off" | "false")))
}

/// Record `o` in the process's sink for the process's data dir.
pub fn record(o: &Outcome<'_>) {
    record_in(crate::base::paths::data_dir_path().ok().as_deref(), o);
}

/// Record `o` in the process's sink for `dir` (none: nothing is recorded).
pub fn record_in(dir: Option<&Path>, o: &Outcome<'_>) {
    let Some(dir) = dir.filter(|_| !disabled()) else { return };
    SINKS.lock().unwrap_or_else(|e| e.into_inner()).record_in(dir, o);
}

/// Write what the process buffered. Call it when idle and before exit.
pub fn flush() {
    SINKS.lock().unwrap_or_else(|e| e.into_inner()).flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(kind: Kind<'static>, sent: Option<u64>, whole: u64) -> Outcome<'static> {
        Outcome { via: Via::Cli, host: None, conversation: None, file: "f", kind, sent, whole, t_ms: Some(0) }
    }

    /// The savings table: a stub saves at most the whole delivery it
    /// replaces; withheld and whole save nothing; a diff saves whole − diff.
    #[test]
    fn savings_are_capped_by_construction() {
        let r = Kind::Withheld("compacted");
        let cases = [
            (o(Kind::Stub, Some(100), 5000), 100, 4900),
            (o(Kind::Stub, None, 5000), STUB_BYTES_ASSUMED, 5000 - STUB_BYTES_ASSUMED),
            (o(Kind::Stub, None, 50), 50, 0),
            (o(Kind::Stub, Some(900), 500), 900, 0),
            (o(Kind::Stub, Some(10), 0), 10, 0),
            (o(Kind::Diff, Some(300), 5000), 300, 4700),
            (o(Kind::Diff, Some(6000), 5000), 6000, 0),
            (o(Kind::Whole, None, 5000), 5000, 0),
            (o(r, None, 5000), 5000, 0),
            (o(Kind::Error, None, 0), 0, 0),
        ];
        for (c, sent, saved) in cases {
            assert_eq!((c.sent_bytes(), c.saved_bytes()), (sent, saved), "{c:?}");
        }
    }

    #[test]
    fn a_sink_buffers_and_flushes_whole_lines() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Sink::new(Some(t.path().to_path_buf()));
        s.record(&o(Kind::Stub, Some(1), 10));
        assert!(!t.path().join(LOG_FILE).exists(), "no I/O before a flush");
        s.record(&o(Kind::Whole, None, 10));
        drop(s);
        let text = std::fs::read_to_string(t.path().join(LOG_FILE)).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.ends_with('\n'));
    }

    /// Answers for two data dirs in turn stay buffered, each in its own
    /// sink (one switched between them wrote at every answer); past
    /// MAX_SINKS dirs the oldest is flushed, and a flush writes them all.
    #[test]
    fn answers_for_several_dirs_stay_buffered_each_in_its_own_sink() {
        let dirs: Vec<_> = (0..=MAX_SINKS).map(|_| tempfile::tempdir().unwrap()).collect();
        let log = |i: usize| std::fs::read_to_string(dirs[i].path().join(LOG_FILE)).unwrap_or_default();
        let mut s = Sinks::default();
        for _ in 0..3 {
            s.record_in(dirs[0].path(), &o(Kind::Stub, Some(1), 10));
            s.record_in(dirs[1].path(), &o(Kind::Whole, None, 10));
        }
        assert_eq!((log(0), log(1)), (String::new(), String::new()), "no I/O before a flush");
        for d in &dirs[2..] {
            s.record_in(d.path(), &o(Kind::Whole, None, 10));
        }
        assert_eq!((log(0).lines().count(), log(1)), (3, String::new()), "the oldest flushed");
        s.flush();
        assert_eq!(log(1).lines().count(), 3);
        assert_eq!(log(MAX_SINKS).lines().count(), 1);
    }
}
