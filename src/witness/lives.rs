//! The host processes a Claude Code conversation has had, as its turn hooks
//! name them (`CLAUDE_PID`), and whether a process that resumed the session
//! may rely on a result another process delivered before: pure, no files,
//! no clock.
//!
//! `claude --resume` loads the chain of the transcript's last written line,
//! whichever process wrote it (Claude Code 2.1.328, docs/DELIVERY.md §8,
//! "One session, two processes"; fixture
//! tests/fixtures/payloads/withdrawal/claude/three-process-resume/): a
//! third process resumed while two ran and loaded the second's branch,
//! without the result the first had just read. So a result delivered to
//! process P backs a stub in a process Q that resumed after it was
//! confirmed only when no third process could have written the line Q
//! resumed from: every other process known had ended before the result
//! was confirmed, or started after Q. A hook that names no process, or
//! more processes than are kept, leaves that unknown: no reliance.

use serde::{Deserialize, Serialize};

/// Processes kept per conversation; past it reliance is refused.
pub const MAX_LIVES: usize = 32;
/// A process that ended this little before the result's confirmation may
/// still have had lines queued (Claude Code drains its transcript queue
/// every 100 ms: docs/DELIVERY.md §8, "A rewind's record is written late too").
pub const END_MARGIN_MS: u64 = 100;

/// One host process of the conversation, as its turn hooks showed it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Life {
    pub pid: u32,
    /// Unix ms of its first turn hook seen.
    pub first_ms: u64,
    /// That first hook was its `SessionStart`: it did not write before then.
    pub started: bool,
    /// Unix ms of its latest `SessionStart` (0: none seen): where it
    /// (re)loaded the history.
    pub start_ms: u64,
    /// Unix ms of its `SessionEnd` (0: not ended, or active again since).
    pub end_ms: u64,
}

/// The conversation's processes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lives {
    pub procs: Vec<Life>,
    /// A turn hook named no process: an unknown one may have written.
    pub anonymous: bool,
    /// More processes than [`MAX_LIVES`] were seen.
    pub crowded: bool,
}

/// What kind of turn hook was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    Start,
    Turn,
    End,
}

impl Lives {
    /// A turn hook of process `pid` (none: not named) at `now`.
    pub fn saw(&mut self, pid: Option<u32>, seen: Seen, now: u64) {
        let Some(pid) = pid else {
            self.anonymous = true;
            return;
        };
        let i = match self.procs.iter().position(|l| l.pid == pid) {
            Some(i) => i,
            None if self.procs.len() >= MAX_LIVES => {
                self.crowded = true;
                return;
            }
            None => {
                self.procs.push(Life { pid, first_ms: now, started: seen == Seen::Start, ..Life::default() });
                self.procs.len() - 1
            }
        };
        let l = &mut self.procs[i];
        match seen {
            Seen::Start => (l.start_ms, l.end_ms) = (now, 0),
            Seen::Turn => l.end_ms = 0,
            Seen::End => l.end_ms = now,
        }
    }

    /// May process `loader`, which (re)started after a result delivered to
    /// process `owner` was confirmed whole at `confirmed_ms`, rely on having
    /// loaded it? Only when no other process could have written the line it
    /// resumed from without holding the result itself (see the module doc).
    pub fn may_rely(&self, owner: u32, loader: u32, confirmed_ms: u64) -> bool {
        if self.anonymous || self.crowded {
            return false;
        }
        let Some(q) = self.procs.iter().find(|l| l.pid == loader).filter(|l| l.start_ms > 0) else { return false };
        // Whose branch holds the result: its owner, and each process that
        // resumed once, after the confirmation, when every other process
        // that could have written the line it loaded held it too (in order
        // of their starts, so an earlier holder counts for a later one).
        let mut holders = vec![owner];
        let mut later: Vec<&Life> = self
            .procs
            .iter()
            .filter(|r| r.pid != owner && r.pid != loader && r.started && r.start_ms == r.first_ms)
            .filter(|r| r.first_ms > confirmed_ms && r.first_ms < q.start_ms)
            .collect();
        later.sort_by_key(|r| r.first_ms);
        for r in later {
            if self.loaded_by(r.pid, r.first_ms, confirmed_ms, &holders) {
                holders.push(r.pid);
            }
        }
        self.loaded_by(loader, q.start_ms, confirmed_ms, &holders)
    }

    /// Did process `pid`, loading the history at `at`, load a branch that
    /// holds the result: was every other process that may have written the
    /// line it loaded a holder, ended before the confirmation, or not yet
    /// started?
    fn loaded_by(&self, pid: u32, at: u64, confirmed_ms: u64, holders: &[u32]) -> bool {
        self.procs.iter().filter(|r| r.pid != pid && !holders.contains(&r.pid)).all(|r| {
            let ended_before = r.end_ms != 0 && r.end_ms.saturating_add(END_MARGIN_MS) < confirmed_ms;
            let started_after = r.started && r.first_ms > at;
            ended_before || started_after
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reliance_table() {
        use Seen::*;
        // (name, the hooks seen as (pid, kind, t), owner, loader, confirmed, may rely)
        type Row = (&'static str, Vec<(Option<u32>, Seen, u64)>, u32, u32, u64, bool);
        #[rustfmt::skip]
        let rows: Vec<Row> = vec![
            ("two processes: the second resumed after the confirmation",
                vec![(Some(1), Start, 0), (Some(1), Turn, 10), (Some(2), Start, 5_000)], 1, 2, 2_000, true),
            ("the owner ended, then a resume",
                vec![(Some(1), Start, 0), (Some(1), End, 3_000), (Some(2), Start, 5_000)], 1, 2, 2_000, true),
            ("a third process ran alongside, not ended (it may have written last)",
                vec![(Some(1), Start, 0), (Some(3), Start, 100), (Some(2), Start, 5_000)], 1, 2, 2_000, false),
            ("a third process ended before the confirmation",
                vec![(Some(3), Start, 0), (Some(3), End, 500), (Some(1), Start, 600), (Some(2), Start, 5_000)], 1, 2, 2_000, true),
            ("... but within the margin: lines may still have been queued",
                vec![(Some(3), Start, 0), (Some(3), End, 1_950), (Some(1), Start, 600), (Some(2), Start, 5_000)], 1, 2, 2_000, false),
            ("a third process ended after the confirmation",
                vec![(Some(1), Start, 0), (Some(3), Start, 100), (Some(3), End, 4_000), (Some(2), Start, 5_000)], 1, 2, 2_000, false),
            ("a third process that started after the loader does not matter",
                vec![(Some(1), Start, 0), (Some(2), Start, 5_000), (Some(3), Start, 6_000)], 1, 2, 2_000, true),
            ("... unless its start was not seen (first seen by a prompt)",
                vec![(Some(1), Start, 0), (Some(2), Start, 5_000), (Some(3), Turn, 6_000)], 1, 2, 2_000, false),
            ("a third process active again after its end",
                vec![(Some(3), Start, 0), (Some(3), End, 500), (Some(3), Turn, 900), (Some(1), Start, 600), (Some(2), Start, 5_000)], 1, 2, 2_000, false),
            ("a hook that names no process",
                vec![(Some(1), Start, 0), (None, Turn, 10), (Some(2), Start, 5_000)], 1, 2, 2_000, false),
            ("the loader's start was not seen",
                vec![(Some(1), Start, 0), (Some(2), Turn, 5_000)], 1, 2, 2_000, false),
            ("the loader is not known at all",
                vec![(Some(1), Start, 0)], 1, 2, 2_000, false),
            ("a third process that resumed after the confirmation, from the owner's line, holds it too",
                vec![(Some(1), Start, 0), (Some(1), End, 3_000), (Some(3), Start, 4_000), (Some(2), Start, 5_000)], 1, 2, 2_000, true),
            ("... also while the owner still ran",
                vec![(Some(1), Start, 0), (Some(3), Start, 4_000), (Some(2), Start, 5_000)], 1, 2, 2_000, true),
            ("... but not when yet another, running since before, may have written the line it loaded",
                vec![(Some(1), Start, 0), (Some(4), Start, 100), (Some(3), Start, 4_000), (Some(2), Start, 5_000)], 1, 2, 2_000, false),
            ("... nor when it resumed before the confirmation",
                vec![(Some(1), Start, 0), (Some(3), Start, 1_000), (Some(2), Start, 5_000)], 1, 2, 2_000, false),
            ("... nor when it started again since (a compaction or an in-process resume)",
                vec![(Some(1), Start, 0), (Some(3), Start, 4_000), (Some(3), Start, 4_500), (Some(2), Start, 5_000)], 1, 2, 2_000, false),
            ("a chain of resumes: each held it",
                vec![(Some(1), Start, 0), (Some(1), End, 2_500), (Some(3), Start, 3_000), (Some(3), End, 3_500), (Some(4), Start, 4_000), (Some(2), Start, 5_000)], 1, 2, 2_000, true),
            ("the loader restarted (/resume in process) after a third appeared: its latest start counts",
                vec![(Some(1), Start, 0), (Some(2), Start, 5_000), (Some(3), Start, 6_000), (Some(2), Start, 7_000)], 1, 2, 2_000, false),
        ];
        for (name, seen, owner, loader, confirmed, want) in rows {
            let mut l = Lives::default();
            for (pid, s, t) in seen {
                l.saw(pid, s, t);
            }
            assert_eq!(l.may_rely(owner, loader, confirmed), want, "{name}");
        }
        let mut l = Lives::default();
        for p in 0..=MAX_LIVES as u32 {
            l.saw(Some(p), Start, 0);
        }
        l.saw(Some(1000), Start, 5_000);
        assert!(l.crowded && !l.may_rely(0, 1000, 1), "more processes than kept");
    }
}
