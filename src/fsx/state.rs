//! State files (journal, lock, slot): only regular files owned by this
//! user, 0600-like, no larger than a bound, opened without blocking or
//! following a symlink. Anything else found there (a FIFO, a symlink to
//! `/dev/zero`, a huge file, another user's file) is refused with the
//! reason, never taken for "no state".

use super::{SpecialFile, current_uid, mode_of, owner, sys};
use std::fs;
use std::io;
use std::path::Path;

/// Why a state file that exists is not what leanctx writes there, from its
/// metadata (`lstat` or `fstat`): only regular files owned by this user,
/// 0600-like (owner read and write, nobody else writes), no larger than
/// `max`, are state. `None`: it is.
/// What a file that is not a regular file is, in words.
pub(crate) fn kind_of(ft: &fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        match sys::special_kind(ft) {
            SpecialFile::Fifo => "a FIFO",
            SpecialFile::Socket => "a socket",
            SpecialFile::Device => "a device",
            SpecialFile::Other => "not a regular file",
        }
    }
}

pub fn state_problem(md: &fs::Metadata, max: u64) -> Option<String> {
    let ft = md.file_type();
    if ft.is_symlink() {
        return Some("is a symbolic link, not a regular file".into());
    }
    if !ft.is_file() {
        return Some(format!("is {}, not a regular file", kind_of(&ft)));
    }
    if owner(md) != current_uid() {
        return Some(format!("is owned by uid {}, not by this user (uid {})", owner(md), current_uid()));
    }
    let mode = mode_of(md);
    if mode & 0o600 != 0o600 {
        return Some(format!("has mode {mode:o}, not readable and writable by its owner (hooks cannot record)"));
    }
    if mode & 0o022 != 0 {
        return Some(format!("has mode {mode:o}: writable by group or others"));
    }
    if md.len() > max {
        return Some(format!("is {} bytes, more than the {max} a reader reads", md.len()));
    }
    None
}

/// `io::Error` for a state file that exists but is not state.
pub fn untrusted(path: &Path, problem: &str) -> io::Error {
    io::Error::other(format!("{} {problem}", path.display()))
}

/// Open a state file without ever blocking or following a symlink (a FIFO
/// opens at once, a symlink to `/dev/zero` does not open), then check what
/// was opened ([`state_problem`] on `fstat`). `write`: open it for appending,
/// creating it 0600 if missing (hooks); otherwise read-only, and `Ok(None)`
/// when it does not exist.
pub fn open_state(path: &Path, write: bool, max: u64) -> io::Result<Option<fs::File>> {
    Ok(open_state_md(path, write, max)?.map(|(f, _)| f))
}

/// Read a whole state file ([`open_state`], read-only, under
/// [`super::READ_DEADLINE`]): `None` if missing; an error if it is not state
/// or grew past `max` while being read.
pub fn read_state(path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    super::read_file(path, &super::ReadRule::state(max))
}

/// [`open_state`], with the metadata it checked.
pub fn open_state_md(path: &Path, write: bool, max: u64) -> io::Result<Option<(fs::File, fs::Metadata)>> {
    if !write {
        return super::open_file(path, &super::ReadRule::state(max));
    }
    let f = match sys::open(&sys::state_options(true), path) {
        Ok(f) => f,
        Err(e) if sys::is_symlink_refusal(&e) => {
            return Err(untrusted(path, "is a symbolic link, not a regular file"));
        }
        Err(e) => return Err(e),
    };
    let md = f.metadata()?;
    match state_problem(&md, max) {
        Some(p) => Err(untrusted(path, &p)),
        None => Ok(Some((f, md))),
    }
}
