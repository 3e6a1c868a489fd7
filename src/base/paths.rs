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
    let (home, data_local) = base_dirs().ok_or(DirProblem::NoHome)?;
    let legacy = home.join(".lean-ctx");
    if legacy.is_dir() {
        return Ok(legacy);
    }
    Ok(data_local.join("lean-ctx"))
}

/// A build linked statically against glibc (`crt-static`: how Linux builds
/// are installed, benches/README.md): it must never reach glibc's NSS
/// (`getpwuid_r`), which would load the system's `libnss_*.so` modules into
/// a static program, supported only with the exact glibc it was linked
/// against.
#[cfg(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static"))]
const NO_NSS: bool = true;
#[cfg(not(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static")))]
const NO_NSS: bool = false;

/// The user's home dir and the platform's local (not roaming) data dir:
/// `%LOCALAPPDATA%` on Windows, under the user's profile and its ACL; the
/// same dir as the data dir on Linux (`$XDG_DATA_HOME` if absolute, else
/// `~/.local/share`) and macOS (`~/Library/Application Support`).
fn base_dirs() -> Option<(PathBuf, PathBuf)> {
    if NO_NSS {
        // `directories`' Linux rule, with the home from [`home_dir`].
        let home = home_dir()?;
        let data = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".local/share"));
        return Some((home, data));
    }
    directories::BaseDirs::new().map(|b| (b.home_dir().to_path_buf(), b.data_local_dir().to_path_buf()))
}

/// The user's home dir, as `directories` finds it: `$HOME` when set and
/// not empty (Unix), else the platform's answer (the passwd entry through
/// NSS; the profile folder). A static glibc build reads this uid's line of
/// `/etc/passwd` itself instead of asking NSS (`NO_NSS`): a user known
/// only to another NSS source (LDAP, sssd) and without `$HOME` gets the
/// "no home directory" error, never a crash.
pub fn home_dir() -> Option<PathBuf> {
    if !NO_NSS {
        return directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf());
    }
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(h));
    }
    passwd_file_home()
}

/// Largest `/etc/passwd` read without `$HOME`; a larger one is refused.
#[cfg(unix)]
const MAX_PASSWD_BYTES: u64 = 16 << 20;

/// This uid's home in `/etc/passwd` (through fsx: bounded, no FIFO).
#[cfg(unix)]
pub fn passwd_file_home() -> Option<PathBuf> {
    let text = fsx::read_file(Path::new("/etc/passwd"), &fsx::ReadRule::any(MAX_PASSWD_BYTES)).ok()??;
    passwd_home(&text, fsx::current_uid())
}

#[cfg(not(unix))]
pub fn passwd_file_home() -> Option<PathBuf> {
    None
}

/// The home of `uid` in passwd(5) text, as glibc's files database answers
/// it: the first well-formed line (seven `:`-separated fields, the last
/// running to the line's end) whose uid field is `uid`, its sixth field.
/// Comment lines and NIS `+`/`-` lines (read by the `compat` source only)
/// are skipped. `None` when no line matches or its home is empty or not
/// absolute.
#[cfg(unix)]
pub fn passwd_home(text: &[u8], uid: u32) -> Option<PathBuf> {
    let want = uid.to_string();
    let home = text.split(|&b| b == b'\n').find_map(|l| {
        if matches!(l.first(), None | Some(b'#' | b'+' | b'-')) {
            return None;
        }
        let f: Vec<&[u8]> = l.splitn(7, |&b| b == b':').collect();
        (f.len() == 7 && f[2] == want.as_bytes()).then_some(f[5])
    })?;
    let home = PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(home));
    home.is_absolute().then_some(home)
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
    check_data_dir_md(path).map(drop)
}

/// [`check_data_dir`], with the metadata it checked (a `stat`: a symlinked
/// data dir's target).
pub fn check_data_dir_md(path: &Path) -> Result<fs::Metadata, DirProblem> {
    let md = fs::metadata(path).map_err(|err| DirProblem::Io { path: path.to_path_buf(), err })?;
    check_dir(path, &md)?;
    Ok(md)
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn passwd_home_reads_the_files_database_as_glibc_does() {
        let text = b"# comment:x:1000:1000::/comment:/bin/sh\n\
            +nis:x:1000:1000::/nis:/bin/sh\n\
            root:x:0:0:root:/root:/bin/bash\n\
            short:x:1000:1000::/short\n\
            me:x:1000:1000:Me,,,:/home/me:/bin/bash\n\
            again:x:1000:1000::/home/again:/bin/sh\n\
            rel:x:1001:1001::home/rel:/bin/sh\n\
            empty:x:1002:1002:::/bin/sh\n\
            colon:x:1003:1003::/home/c:/bin/odd:shell\n\
            last:x:1004:1004::/home/last:";
        let cases: [(u32, Option<&str>); 8] = [
            (0, Some("/root")),
            // The comment, the NIS line and the line cut short are skipped:
            // the first well-formed line wins.
            (1000, Some("/home/me")),
            (1001, None),
            (1002, None),
            (1003, Some("/home/c")),
            (1004, Some("/home/last")),
            (100, None),
            (10, None),
        ];
        for (uid, want) in cases {
            assert_eq!(passwd_home(text, uid), want.map(PathBuf::from), "uid {uid}");
        }
        assert_eq!(passwd_home(b"", 0), None);
        assert_eq!(passwd_home(b"root:x:0:0:root:/root:/bin/bash", 0), Some(PathBuf::from("/root")));
    }

    /// The reader against libc's own answer (this test binary is linked
    /// dynamically: NSS) on the real /etc/passwd, for root (in every Linux
    /// system's file) and for this user when the file has a line for it.
    #[cfg(target_os = "linux")]
    #[test]
    fn passwd_file_home_agrees_with_getpwuid_r() {
        fn libc_home(uid: u32) -> Option<PathBuf> {
            use std::os::unix::ffi::OsStrExt;
            let mut buf = vec![0 as libc::c_char; 1 << 16];
            // SAFETY: plain data, zero is valid; the pointers outlive the call.
            let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
            let mut res = std::ptr::null_mut();
            let r = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut res) };
            if r != 0 || res.is_null() {
                return None;
            }
            // SAFETY: getpwuid_r filled pw_dir with a C string inside buf.
            let dir = unsafe { std::ffi::CStr::from_ptr(pw.pw_dir) };
            Some(PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes())))
        }
        let text = std::fs::read("/etc/passwd").unwrap();
        assert_eq!(passwd_home(&text, 0), libc_home(0));
        assert!(passwd_home(&text, 0).is_some(), "no root line in /etc/passwd");
        let me = fsx::current_uid();
        if let Some(h) = passwd_home(&text, me) {
            assert_eq!(Some(h), libc_home(me));
            assert_eq!(passwd_file_home(), libc_home(me));
        }
    }
}
