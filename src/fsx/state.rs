//! State files (journal, lock, slot): only regular files owned by this
//! user, 0600-like, no larger than a bound, opened without blocking or
//! following a symlink. Anything else found there (a FIFO, a symlink to
//! `/dev/zero`, a huge file, another user's file) is refused with the
//! reason, never taken for "no state".

use super::{SpecialFile, current_uid, mode_of, owner, sys};
use std::fs;
use std::io;
use std::path::Path;

/// What kind of file a metadata names, as the state checks tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Special(SpecialFile),
}

impl Kind {
    fn of(ft: &fs::FileType) -> Kind {
        if ft.is_file() {
            Kind::File
        } else if ft.is_dir() {
            Kind::Dir
        } else if ft.is_symlink() {
            Kind::Symlink
        } else {
            Kind::Special(sys::special_kind(ft))
        }
    }

    /// What a file that is not a regular file is, in words.
    fn words(self) -> &'static str {
        match self {
            Kind::File => "a regular file",
            Kind::Dir => "a directory",
            Kind::Symlink => "a symbolic link",
            Kind::Special(SpecialFile::Fifo) => "a FIFO",
            Kind::Special(SpecialFile::Socket) => "a socket",
            Kind::Special(SpecialFile::Device) => "a device",
            Kind::Special(SpecialFile::Other) => "not a regular file",
        }
    }
}

/// What the state checks read of a file's metadata: std's, or (Unix) the
/// [`super::Stat`] of a stat made relative to the data dir's handle
/// ([`super::lstat`]), so both are judged by the same code.
pub trait Meta {
    fn kind(&self) -> Kind;
    /// Owner uid ([`super::owner`]).
    fn uid_of(&self) -> u32;
    /// Permission bits ([`super::mode_of`]).
    fn mode_bits(&self) -> u32;
    fn size(&self) -> u64;
    /// Device and inode ([`super::path_id`]).
    #[cfg(unix)]
    fn dev_ino(&self) -> (u64, u64);
}

impl Meta for fs::Metadata {
    fn kind(&self) -> Kind {
        Kind::of(&self.file_type())
    }
    fn uid_of(&self) -> u32 {
        owner(self)
    }
    fn mode_bits(&self) -> u32 {
        mode_of(self)
    }
    fn size(&self) -> u64 {
        self.len()
    }
    #[cfg(unix)]
    fn dev_ino(&self) -> (u64, u64) {
        sys::file_id(self)
    }
}

/// What a file that is not a regular file is, in words.
pub(crate) fn kind_of(ft: &fs::FileType) -> &'static str {
    Kind::of(ft).words()
}

/// Why a state file that exists is not what leanctx writes there, from its
/// metadata (`lstat` or `fstat`): only regular files owned by this user,
/// 0600-like (owner read and write, nobody else writes), no larger than
/// `max`, are state. `None`: it is.
pub fn state_problem(md: &impl Meta, max: u64) -> Option<String> {
    match md.kind() {
        Kind::File => {}
        Kind::Symlink => return Some("is a symbolic link, not a regular file".into()),
        k => return Some(format!("is {}, not a regular file", k.words())),
    }
    let uid = md.uid_of();
    if uid != current_uid() {
        return Some(format!("is owned by uid {uid}, not by this user (uid {})", current_uid()));
    }
    let mode = md.mode_bits();
    if mode & 0o600 != 0o600 {
        return Some(format!("has mode {mode:o}, not readable and writable by its owner (hooks cannot record)"));
    }
    if mode & 0o022 != 0 {
        return Some(format!("has mode {mode:o}: writable by group or others"));
    }
    if md.size() > max {
        return Some(format!("is {} bytes, more than the {max} a reader reads", md.size()));
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
