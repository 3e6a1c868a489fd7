//! File primitives: every reader and writer of leanctx's files goes
//! through these. Atomic replacement ([`write_atomic`], [`write_recycled`],
//! [`replace_durable`]),
//! a lock with a bounded wait ([`lock()`]), mode and owner checks
//! ([`state_problem`]), reads that never block or run unbounded: every
//! file leanctx reads goes through [`read_file`] / [`open_file`] (state
//! files through [`read_state`], which uses them), stdin through
//! [`read_stdin`], a directory another program writes through [`list_dir`].
//!
//! Whatever depends on the platform (`libc`, `std::os::unix`, `/proc`;
//! Win32) is in one file per platform, `unix.rs` and `windows.rs`, with the
//! same functions, re-exported here; nothing else in the crate names the
//! platform. Each provides those in the `pub use sys::{…}` list (Unix's
//! [`lstat`] may stat a data dir's file relative to a handle of the dir,
//! see [`anchor`]; Windows' goes by the path), and
//! `keep_of`, `apply_keep`, `config_temp_in`, `persist`, `open`,
//! `sync_dir`, `state_options`, `special_kind`, `exchange`,
//! `open_rewritable`, `write_lease`, `link_count`, `read_append` and `read_stdin`, which the portable files here call as `sys::…`.

mod atomic;
mod bounded;
mod lock;
mod recycle;
mod state;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as sys;

pub use atomic::{Keep, TEMP_PREFIX, replace_durable, sync_dir, write_atomic, write_atomic_kept};
pub use bounded::{
    MAX_CONFIG_BYTES, READ_DEADLINE, ReadRule, file_problem, is_absent, list_dir, open_file, read_file, read_opened,
    read_text, read_up_to,
};
#[cfg(all(test, unix))]
pub(crate) use lock::MET_BUSY;
pub use lock::{Lock, LockError, LockKind, LockRef, lock, lock_ref};
pub use recycle::{spare_path, write_recycled, write_recycled_kept};
pub use state::{Kind, Meta, open_state, open_state_md, read_state, state_problem, untrusted};
pub use sys::{
    HOLD_OPEN, Stat, anchor, create_new, create_private_dir, current_uid, dir_lock_file, free_bytes, handle_id,
    is_symlink_refusal, lstat, may_create_in, mode_of, open_nonblocking, owner, parent_argv, parent_of, parent_pid,
    path_id, prepare_process, read_at, short_path, unanchor, under_wine,
};
#[cfg(all(test, unix))]
pub(crate) use unix::anchored;

use std::io;
use std::path::Path;
use std::time::Instant;

/// A file that is neither regular nor a directory nor a symlink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialFile {
    Fifo,
    Socket,
    Device,
    Other,
}

/// How a bounded read of stdin ended.
#[derive(Debug)]
pub enum Input {
    /// EOF reached within the bounds.
    Complete(Vec<u8>),
    /// More than the limit arrived; what was kept is not parsed.
    TooLarge {
        seen: usize,
    },
    /// The deadline passed before EOF. What arrived is kept: if it already
    /// holds a whole JSON payload it can still be used.
    TimedOut(Vec<u8>),
    Error(io::Error),
}

/// Read stdin until EOF, `max` bytes, or `deadline`: at most `max` bytes
/// kept, up to `max_drain` more drained (so the writer never blocks or
/// breaks), and never past the deadline (a stdin that never closes).
pub fn read_stdin(max: usize, max_drain: usize, deadline: Instant) -> Input {
    sys::read_stdin(max, max_drain, deadline)
}

/// Create `dir/name` as a private (0700) directory if it is missing.
pub fn ensure_private_subdir(dir: &Path, name: &str) -> io::Result<std::path::PathBuf> {
    let p = dir.join(name);
    match create_private_dir(&p, false) {
        Ok(()) => Ok(p),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(p),
        Err(e) => Err(e),
    }
}

/// The first executable file called `name` in one of `path`'s dirs (a
/// `PATH` value), as a shell would find it: on Windows also `name.exe`
/// and `name.cmd` (npm's shims), and any file counts there.
pub fn find_on_path(name: &str, path: &std::ffi::OsStr) -> Option<std::path::PathBuf> {
    let exts: &[&str] = if cfg!(windows) { &["", ".exe", ".cmd"] } else { &[""] };
    std::env::split_paths(path).filter(|d| !d.as_os_str().is_empty()).find_map(|d| {
        exts.iter()
            .map(|e| d.join(format!("{name}{e}")))
            .find(|p| std::fs::metadata(p).is_ok_and(|md| md.is_file() && (cfg!(windows) || mode_of(&md) & 0o111 != 0)))
    })
}

#[cfg(test)]
mod tests {
    /// The parent lookup, for real (`/proc` on Linux, Toolhelp on
    /// Windows): a child (this test binary again) finds this process as its
    /// parent.
    #[test]
    fn a_child_finds_this_process_as_its_parent() {
        let o = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "fsx::tests::print_parent", "--ignored", "--nocapture", "--test-threads=1"])
            .env("LEANCTX_TEST_PRINT_PARENT", "1")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        let seen =
            out.lines().find_map(|l| l.split_once("PARENT=").map(|(_, v)| v.trim())).unwrap_or_else(|| panic!("{out}"));
        assert_eq!(seen, format!("{} {}", std::process::id(), std::process::id()), "parent_pid, parent_of(self)");
    }

    #[test]
    #[ignore = "run by a_child_finds_this_process_as_its_parent in a child process"]
    fn print_parent() {
        if std::env::var_os("LEANCTX_TEST_PRINT_PARENT").is_some() {
            let me = std::process::id();
            println!("PARENT={} {}", super::parent_pid(), super::parent_of(me).unwrap_or(0));
        }
    }
}
