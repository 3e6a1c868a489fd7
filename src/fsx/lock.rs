//! An advisory lock on an open file, waited for until a deadline at most:
//! a busy lock is polled with a short, growing pause, never waited on
//! without bound (a hook must answer its host).

use std::fs::{File, TryLockError};
use std::io;
use std::time::{Duration, Instant};

/// Shared (readers) or exclusive (writers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    Shared,
    Exclusive,
}

/// A held lock; released on drop (and by the kernel if the process dies,
/// so a crash cannot leave it stuck).
#[derive(Debug)]
pub struct Lock {
    file: File,
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// Why a lock was not taken.
#[derive(Debug)]
pub enum LockError {
    /// Someone else held it until the deadline.
    Busy {
        waited: Duration,
    },
    Io(io::Error),
}

/// Lock `file`, waiting until `deadline` at most. The pause between tries
/// starts at 50 µs (a hook holds the lock for tens of µs) and doubles up to
/// 2 ms.
pub fn lock(file: File, kind: LockKind, deadline: Instant) -> Result<Lock, LockError> {
    wait(&file, kind, deadline)?;
    Ok(Lock { file })
}

/// A held lock on a file the caller keeps open (a reader that holds its
/// lock file between reads); released on drop.
#[derive(Debug)]
pub struct LockRef<'f> {
    file: &'f File,
}

impl Drop for LockRef<'_> {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// [`lock`] a file the caller keeps.
pub fn lock_ref(file: &File, kind: LockKind, deadline: Instant) -> Result<LockRef<'_>, LockError> {
    wait(file, kind, deadline)?;
    Ok(LockRef { file })
}

/// Tests: the threads that found a lock busy (and so waited or gave up), so
/// a test can tell a question that met a held lock from one that ran before
/// or after it.
#[cfg(test)]
pub(crate) static MET_BUSY: std::sync::Mutex<Vec<std::thread::ThreadId>> = std::sync::Mutex::new(Vec::new());

fn wait(file: &File, kind: LockKind, deadline: Instant) -> Result<(), LockError> {
    let started = Instant::now();
    let mut pause = Duration::from_micros(50);
    loop {
        let tried = match kind {
            LockKind::Exclusive => file.try_lock(),
            LockKind::Shared => file.try_lock_shared(),
        };
        match tried {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                #[cfg(test)]
                MET_BUSY.lock().unwrap_or_else(|e| e.into_inner()).push(std::thread::current().id());
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(2));
            }
            Err(TryLockError::WouldBlock) => return Err(LockError::Busy { waited: started.elapsed() }),
            Err(TryLockError::Error(e)) => return Err(LockError::Io(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exclusive_lock_excludes_until_dropped() {
        // A regular file, as journal.lock is (Windows cannot lock a directory).
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("lock");
        File::create(&p).unwrap();
        let held = lock(File::open(&p).unwrap(), LockKind::Exclusive, Instant::now()).unwrap();
        let busy = lock(File::open(&p).unwrap(), LockKind::Shared, Instant::now());
        assert!(matches!(busy, Err(LockError::Busy { .. })));
        drop(held);
        assert!(lock(File::open(&p).unwrap(), LockKind::Shared, Instant::now()).is_ok());
    }
}
