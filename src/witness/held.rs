//! What a long-lived process (an MCP server) keeps of a conversation's
//! witness between its questions: the state as it last read or wrote it,
//! with that state file and the transcript held open. A question then costs
//! one `stat` of each path, where it cost an open, a read, a parse and a
//! close of the state and an open, `fstat` and close of the transcript
//! (benches/README.md, "The witness between questions").
//!
//! Sound because a state file held open is never written to (it is replaced
//! whole: `fsx::write_recycled_kept` rewrites only a file nobody holds open,
//! under a lease the kernel refuses while anyone does), and a file held open
//! keeps its inode number: while the path names the (device, inode) of the
//! held file, it is the file this process read or wrote, and the state kept
//! is what it holds with the progress records it last read or wrote
//! (compared byte for byte with the lock file's, read under the lock at
//! each question). Any other answer reads them again. Where
//! files are not held open between calls (`fsx::HOLD_OPEN` is false:
//! Windows, where an open handle can stop a rename), nothing is kept.

use super::file::State;
use crate::fsx;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Conversations kept (a server serves a few at a time; the least recently
/// asked is dropped first).
pub const MAX_HELD: usize = 16;

/// One conversation's witness, as this process last saw it.
#[derive(Debug)]
pub struct Held {
    /// The state file's path (the key).
    pub path: PathBuf,
    /// The state, as read from or written to `file`.
    pub state: State,
    /// The state file it came from, open, and its (device, inode).
    pub file: Option<(File, (u64, u64))>,
    /// The transcript, open, and its (device, inode).
    pub transcript: Option<(File, (u64, u64))>,
    /// The read buffer, kept so a question does not fault in fresh pages.
    pub buf: Vec<u8>,
    /// What the lock file held of progress records when last read or
    /// written ([`super::progress`]), and its bytes: another process's
    /// record changes them, and the state is then read again.
    pub log: super::progress::Log,
    pub log_bytes: Vec<u8>,
}

static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());

/// Take what is kept for the state file `path` (the caller holds the
/// conversation's witness lock, so no other question changes it meanwhile).
pub fn take(path: &Path) -> Option<Held> {
    if !fsx::HOLD_OPEN {
        return None;
    }
    take_where(&HELD, |h| h.path == path)
}

/// Keep `h` for the next question (only with its state file held: without
/// it nothing proves the state current).
pub fn keep(h: Held) {
    if !fsx::HOLD_OPEN || h.file.is_none() {
        return;
    }
    keep_last(&HELD, h, |o| o.path.as_path());
}

/// Take the entry `is` finds out of `list`.
fn take_where<T>(list: &Mutex<Vec<T>>, is: impl Fn(&T) -> bool) -> Option<T> {
    let mut l = list.lock().unwrap_or_else(|e| e.into_inner());
    let i = l.iter().position(is)?;
    Some(l.remove(i))
}

/// Keep `v` last in `list` in place of the entry with the same `key`, the
/// least recently kept dropped past [`MAX_HELD`].
fn keep_last<T, K: PartialEq + ?Sized>(list: &Mutex<Vec<T>>, v: T, key: impl Fn(&T) -> &K) {
    let mut l = list.lock().unwrap_or_else(|e| e.into_inner());
    l.retain(|o| key(o) != key(&v));
    if l.len() >= MAX_HELD {
        l.remove(0);
    }
    l.push(v);
}

/// Whether the state file `held` came from is still the one at its path
/// (`md`: the path's `lstat`), so its state needs no read.
pub fn is_current(held: &Held, md: &fsx::Stat) -> bool {
    let Some((_, id)) = held.file.as_ref() else { return false };
    fsx::path_id(&held.path, md).is_ok_and(|now| now == *id)
        && fsx::state_problem(md, super::file::MAX_STATE_BYTES).is_none()
}

/// Conversations' lock files kept open between questions, with their
/// (device, inode): a question then finds its lock file with one `lstat`
/// instead of an open (`O_CREAT`), an `fstat` and a close.
static LOCKS: Mutex<Vec<KeptLock>> = Mutex::new(Vec::new());

/// A lock file's path, its open handle and its (device, inode).
type KeptLock = (PathBuf, File, (u64, u64));

/// Take the lock file kept open for `lock` (out of the list: a `flock` is
/// held per open file description, so two threads locking one handle would
/// not exclude each other; a thread that finds none opens its own).
pub fn take_lock(lock: &Path) -> Option<(File, (u64, u64))> {
    if !fsx::HOLD_OPEN {
        return None;
    }
    take_where(&LOCKS, |(p, _, _)| p == lock).map(|(_, f, id)| (f, id))
}

/// Keep the lock file `f` of `lock` open for the next question (once it is
/// unlocked: see [`take_lock`]).
pub fn keep_lock(lock: PathBuf, f: File, id: (u64, u64)) {
    if !fsx::HOLD_OPEN {
        return;
    }
    keep_last(&LOCKS, (lock, f, id), |(p, _, _)| p.as_path());
}

#[cfg(test)]
pub fn clear() {
    HELD.lock().unwrap_or_else(|e| e.into_inner()).clear();
    LOCKS.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound both lists keep (conversations' witnesses and their lock
    /// files): at most MAX_HELD, the least recently kept dropped first, a
    /// key kept again moved last, not doubled; taken out when found.
    #[test]
    fn kept_lists_are_bounded_least_recent_first() {
        let list: Mutex<Vec<(usize, u32)>> = Mutex::new(Vec::new());
        let keep = |k: usize, v: u32| keep_last(&list, (k, v), |(o, _)| o);
        for k in 0..MAX_HELD {
            keep(k, 0);
        }
        keep(0, 1); // 0 is now the most recent: 1 is dropped next
        keep(MAX_HELD, 0);
        let keys: Vec<usize> = list.lock().unwrap().iter().map(|e| e.0).collect();
        assert_eq!(keys.len(), MAX_HELD);
        assert!(!keys.contains(&1), "{keys:?}");
        assert_eq!(keys.iter().filter(|&&k| k == 0).count(), 1, "{keys:?}");
        assert_eq!(&keys[MAX_HELD - 2..], &[0, MAX_HELD], "{keys:?}");
        assert_eq!(take_where(&list, |e| e.0 == 0), Some((0, 1)));
        assert_eq!(take_where(&list, |e| e.0 == 0), None);
        assert_eq!(list.lock().unwrap().len(), MAX_HELD - 1);
    }
}
