//! The data dir: where it is, and whether it is safe to use.
//!
//! `$LEAN_CTX_DATA_DIR` if set; else `~/.lean-ctx` if it exists; else the
//! platform data dir + `lean-ctx` (`%LOCALAPPDATA%\lean-ctx` on Windows).
//! Created 0700. A dir owned by someone else or writable by group/others is
//! refused: another user could plant a slot that names their conversation,
//! or read our ids. Windows has no modes or uids to check: there the dir's
//! protection is the user profile's ACL (see `fsx`).

use crate::fsx;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub const SLOT_FILE: &str = "active_transcript.json";
pub const JOURNAL_FILE: &str = "journal";
pub const JOURNAL_LOCK_FILE: &str = "journal.lock";
pub const SCOPES_DIR: &str = "scopes";
pub const POLICY_FILE: &str = "gate.json";
/// Project policy, relative to a workspace root.
pub const PROJECT_POLICY: &str = ".lean-ctx/gate.json";

/// Why the data dir cannot be used.
#[derive(Debug)]
pub enum DirProblem {
    NoHome,
    /// `LEAN_CTX_DATA_DIR` is not an absolute path: every process would
    /// resolve it against its own cwd (hooks run in the project, servers
    /// anywhere) and each would see other state.
    Relative(PathBuf),
    NotADirectory(PathBuf),
    WrongOwner {
        path: PathBuf,
        owner: u32,
        me: u32,
    },
    TooOpen {
        path: PathBuf,
        mode: u32,
    },
    Io {
        path: PathBuf,
        err: io::Error,
    },
}

impl fmt::Display for DirProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirProblem::NoHome => write!(f, "no home directory and LEAN_CTX_DATA_DIR is not set"),
            DirProblem::Relative(p) => write!(
                f,
                "LEAN_CTX_DATA_DIR={} is a relative path; refusing it (each process would resolve it against its \
                 own working directory): set an absolute path",
                p.display()
            ),
            DirProblem::NotADirectory(p) => write!(f, "data dir {} is not a directory", p.display()),
            DirProblem::WrongOwner { path, owner, me } => write!(
                f,
                "data dir {} is owned by uid {owner}, not by this user (uid {me}); refusing to use it",
                path.display()
            ),
            DirProblem::TooOpen { path, mode } => write!(
                f,
                "data dir {} has mode {:o}: writable by group or others; refusing to use it (chmod 700)",
                path.display(),
                mode & 0o7777
            ),
            DirProblem::Io { path, err } => write!(f, "data dir {}: {err}", path.display()),
        }
    }
}

impl std::error::Error for DirProblem {}

/// Where the data dir is, from the environment (does not touch the disk
/// beyond checking whether `~/.lean-ctx` exists).
pub fn data_dir_path() -> Result<PathBuf, DirProblem> {
    if let Some(v) = std::env::var_os("LEAN_CTX_DATA_DIR")
        && !v.is_empty()
    {
        let p = PathBuf::from(v);
        return if p.is_absolute() { Ok(p) } else { Err(DirProblem::Relative(p)) };
    }
    let base = directories::BaseDirs::new().ok_or(DirProblem::NoHome)?;
    let legacy = base.home_dir().join(".lean-ctx");
    if legacy.is_dir() {
        return Ok(legacy);
    }
    // The local (not roaming) data dir: `%LOCALAPPDATA%` on Windows, under
    // the user's profile and its ACL; the same dir as `data_dir` on Linux
    // (`~/.local/share`) and macOS (`~/Library/Application Support`).
    Ok(base.data_local_dir().join("lean-ctx"))
}

/// Create the dir (0700) if missing, then check it is ours and closed.
pub fn ensure_data_dir(path: &Path) -> Result<(), DirProblem> {
    match fs::metadata(path) {
        Ok(md) => check_dir(path, &md),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fsx::create_private_dir(path, true).map_err(|err| DirProblem::Io { path: path.to_path_buf(), err })?;
            let md = fs::metadata(path).map_err(|err| DirProblem::Io { path: path.to_path_buf(), err })?;
            check_dir(path, &md)
        }
        Err(err) => Err(DirProblem::Io { path: path.to_path_buf(), err }),
    }
}

/// Check an existing data dir without creating anything (readers, status).
pub fn check_data_dir(path: &Path) -> Result<(), DirProblem> {
    let md = fs::metadata(path).map_err(|err| DirProblem::Io { path: path.to_path_buf(), err })?;
    check_dir(path, &md)
}

fn check_dir(path: &Path, md: &fs::Metadata) -> Result<(), DirProblem> {
    if !md.is_dir() {
        return Err(DirProblem::NotADirectory(path.to_path_buf()));
    }
    let me = fsx::current_uid();
    if fsx::owner(md) != me {
        return Err(DirProblem::WrongOwner { path: path.to_path_buf(), owner: fsx::owner(md), me });
    }
    if fsx::mode_of(md) & 0o022 != 0 {
        return Err(DirProblem::TooOpen { path: path.to_path_buf(), mode: fsx::mode_of(md) });
    }
    Ok(())
}

/// Paths in JSON reports, as lossy UTF-8 (U+FFFD for bytes that are not
/// UTF-8): serde refuses a `Path` that is not UTF-8, which turned a whole
/// `--json` report into an error. Only what is shown is lossy; files are
/// opened by their exact bytes.
pub mod lossy {
    use std::path::Path;

    pub fn path<S: serde::Serializer, P: AsRef<Path>>(p: &P, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&p.as_ref().to_string_lossy())
    }

    pub fn opt<S: serde::Serializer, P: AsRef<Path>>(p: &Option<P>, s: S) -> Result<S::Ok, S::Error> {
        match p {
            Some(p) => s.serialize_some(&*p.as_ref().to_string_lossy()),
            None => s.serialize_none(),
        }
    }
}

/// A reader never reads more of the journal than this: real journals are
/// trimmed at max(16 KiB, 2 × what the last trim kept), far below it. A
/// bigger one is not trusted (readers withhold) and the next append trims
/// it from its last bytes.
pub const JOURNAL_MAX_BYTES: u64 = 4 << 20;
/// A slot is a few hundred bytes; a reader never reads more than this.
pub const SLOT_MAX_BYTES: u64 = 64 << 10;
