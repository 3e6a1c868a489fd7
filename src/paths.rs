//! The data dir: where it is, and whether it is safe to use.
//!
//! `$LEAN_CTX_DATA_DIR` if set; else `~/.lean-ctx` if it exists; else the
//! platform data dir + `lean-ctx`. Created 0700. A dir owned by someone else
//! or writable by group/others is refused: another user could plant a slot
//! that names their conversation, or read our ids.

use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
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
    NotADirectory(PathBuf),
    WrongOwner { path: PathBuf, owner: u32, me: u32 },
    TooOpen { path: PathBuf, mode: u32 },
    Io { path: PathBuf, err: io::Error },
}

impl fmt::Display for DirProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirProblem::NoHome => write!(f, "no home directory and LEAN_CTX_DATA_DIR is not set"),
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
        return Ok(PathBuf::from(v));
    }
    let base = directories::BaseDirs::new().ok_or(DirProblem::NoHome)?;
    let legacy = base.home_dir().join(".lean-ctx");
    if legacy.is_dir() {
        return Ok(legacy);
    }
    Ok(base.data_dir().join("lean-ctx"))
}

/// Create the dir (0700) if missing, then check it is ours and closed.
pub fn ensure_data_dir(path: &Path) -> Result<(), DirProblem> {
    match fs::metadata(path) {
        Ok(md) => check_dir(path, &md),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(path)
                .map_err(|err| DirProblem::Io { path: path.to_path_buf(), err })?;
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
    let me = current_uid();
    if md.uid() != me {
        return Err(DirProblem::WrongOwner { path: path.to_path_buf(), owner: md.uid(), me });
    }
    if md.mode() & 0o022 != 0 {
        return Err(DirProblem::TooOpen { path: path.to_path_buf(), mode: md.mode() });
    }
    Ok(())
}

/// Create a subdirectory of the data dir, 0700.
pub fn ensure_subdir(dir: &Path, name: &str) -> io::Result<PathBuf> {
    let p = dir.join(name);
    match fs::DirBuilder::new().mode(0o700).create(&p) {
        Ok(()) => Ok(p),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(p),
        Err(e) => Err(e),
    }
}

pub fn current_uid() -> u32 {
    // Asked on every state file a reader opens: once per process (leanctx
    // never changes its uid).
    static UID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    // SAFETY: geteuid has no preconditions and cannot fail.
    *UID.get_or_init(|| unsafe { libc::geteuid() })
}

/// Mode bits of a path, for status and tests.
pub fn mode_of(path: &Path) -> Option<u32> {
    fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o7777)
}

/// A reader never reads more of the journal than this: real journals are
/// trimmed at max(16 KiB, 2 × what the last trim kept), far below it. A
/// bigger one is not trusted (readers withhold) and the next append trims
/// it from its last bytes.
pub const JOURNAL_MAX_BYTES: u64 = 4 << 20;
/// A slot is a few hundred bytes; a reader never reads more than this.
pub const SLOT_MAX_BYTES: u64 = 64 << 10;

/// Why a state file (journal, lock, slot) that exists is not what leanctx
/// writes there, from its metadata (`lstat` or `fstat`): only regular files
/// owned by this user, 0600-like (owner read and write, nobody else
/// writes), no larger than `max`, are state. `None`: it is.
pub fn state_problem(md: &fs::Metadata, max: u64) -> Option<String> {
    let ft = md.file_type();
    if ft.is_symlink() {
        return Some("is a symbolic link, not a regular file".into());
    }
    if !ft.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let what = if ft.is_dir() {
            "a directory"
        } else if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_socket() {
            "a socket"
        } else if ft.is_char_device() || ft.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Some(format!("is {what}, not a regular file"));
    }
    if md.uid() != current_uid() {
        return Some(format!("is owned by uid {}, not by this user (uid {})", md.uid(), current_uid()));
    }
    let mode = md.mode() & 0o7777;
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

/// Open a state file without ever blocking or following a symlink
/// (`O_NONBLOCK | O_NOFOLLOW`: a FIFO opens at once, a symlink to
/// `/dev/zero` does not open), then check what was opened ([`state_problem`]
/// on `fstat`). `write`: open it read-write, creating it 0600 if missing
/// (hooks); otherwise read-only, and `Ok(None)` when it does not exist.
pub fn open_state(path: &Path, write: bool, max: u64) -> io::Result<Option<fs::File>> {
    Ok(open_state_md(path, write, max)?.map(|(f, _)| f))
}

/// Read a whole state file ([`open_state`], read-only): `None` if missing;
/// an error if it is not state or grew past `max` while being read.
pub fn read_state(path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let Some((f, md)) = open_state_md(path, false, max)? else { return Ok(None) };
    // Room for all of it and the byte that says it grew: two reads.
    let mut bytes = Vec::with_capacity(md.len().min(max) as usize + 1);
    f.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(untrusted(path, &format!("is larger than {max} bytes")));
    }
    Ok(Some(bytes))
}

/// [`open_state`], with the metadata it checked.
pub fn open_state_md(path: &Path, write: bool, max: u64) -> io::Result<Option<(fs::File, fs::Metadata)>> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = fs::OpenOptions::new();
    o.read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC);
    if write {
        o.append(true).create(true).mode(0o600);
    }
    let f = match o.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound && !write => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
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
