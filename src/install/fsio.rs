//! File system side of an edit: follow symlinks to the real file, lock it
//! against a concurrent leanctx, back it up once, write it atomically.

use crate::fsx::{self, LockKind};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::fsx::Keep;

/// How long an install waits for another one to finish.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Suffix of the first-touch backup.
pub const BACKUP_SUFFIX: &str = ".leanctx.bak";

/// Follow a chain of symlinks to the file they name (which may not exist
/// yet), so we replace the target, not the link (a dotfiles repo's link
/// must stay a link).
pub fn real_path(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(md) if md.file_type().is_symlink() => {
                let to = fs::read_link(&p)?;
                p = if to.is_absolute() { to } else { p.parent().unwrap_or(Path::new("/")).join(to) };
            }
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(p),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!("{}: too many levels of symbolic links", path.display())))
}

/// A host config's text through the bounded read
/// ([`fsx::read_text`]): `Ok(None)` when absent; a FIFO, a device, a
/// directory, a file over [`fsx::MAX_CONFIG_BYTES`] or one that is not
/// UTF-8 is an error naming the path, at once.
pub fn read_config(path: &Path) -> io::Result<Option<String>> {
    fsx::read_text(path, &fsx::ReadRule::any(fsx::MAX_CONFIG_BYTES))
}

/// [`read_config`] as bytes (the editor reports where UTF-8 breaks).
pub fn read_config_bytes(path: &Path) -> io::Result<Option<Vec<u8>>> {
    fsx::read_file(path, &fsx::ReadRule::any(fsx::MAX_CONFIG_BYTES))
}

/// An exclusive lock on the directory holding the real file. The dir is
/// never replaced (the file is, by rename), so every installer locks the
/// same inode, and no lock file is left beside the user's config.
pub type DirLock = fsx::Lock;

pub fn lock_dir(dir: &Path) -> io::Result<DirLock> {
    let file = fsx::dir_lock_file(dir)?;
    fsx::lock(file, LockKind::Exclusive, Instant::now() + LOCK_WAIT).map_err(|e| match e {
        fsx::LockError::Busy { .. } => io::Error::new(
            io::ErrorKind::TimedOut,
            format!("another leanctx is editing {} (waited {} s)", dir.display(), LOCK_WAIT.as_secs()),
        ),
        fsx::LockError::Io(e) => e,
    })
}

/// `<file>.leanctx.bak` beside the path the user knows (not inside a
/// symlink's target dir, which may be a git repo).
pub fn backup_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(BACKUP_SUFFIX);
    file.with_file_name(name)
}

/// Keep the original bytes, once: an existing backup is never replaced
/// (it holds the file as it was before leanctx first touched it). Same mode
/// and owner as the original: a settings file can hold secrets.
pub fn backup_once(file: &Path, bytes: &[u8], keep: Keep) -> io::Result<Option<PathBuf>> {
    let bak = backup_path(file);
    let mut f = match fsx::create_new(&bak, 0o600) {
        Ok(f) => f,
        // A backup from an earlier install: keep it. Anything else in its
        // place (a planted symlink, a dir) means no backup can be made: say
        // so and stop, rather than edit the user's file without one.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return match fs::symlink_metadata(&bak) {
                Ok(md) if md.file_type().is_file() => Ok(None),
                _ => Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a regular file; refusing to edit without a backup", bak.display()),
                )),
            };
        }
        Err(e) => return Err(e),
    };
    f.write_all(bytes)?;
    keep.apply(&f)?;
    f.sync_all()?;
    Ok(Some(bak))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use crate::fsx::mode_of;
    use std::fs::TryLockError;
    #[cfg(unix)]
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    #[cfg(unix)] // symlinks, modes and owners
    fn real_path_follows_relative_and_dangling_links() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        fs::create_dir(&real).unwrap();
        let a = t.path().join("a.json");
        std::os::unix::fs::symlink("real/x.json", &a).unwrap();
        let b = t.path().join("b.json");
        std::os::unix::fs::symlink(&a, &b).unwrap();
        assert_eq!(real_path(&b).unwrap(), real.join("x.json"));
        let loop_ = t.path().join("loop");
        std::os::unix::fs::symlink(&loop_, &loop_).unwrap();
        assert!(real_path(&loop_).is_err());
    }

    #[test]
    #[cfg(unix)] // symlinks, modes and owners
    fn a_planted_symlink_at_the_backup_path_stops_the_edit() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("s.json");
        let target = t.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, t.path().join("s.json.leanctx.bak")).unwrap();
        let me = fs::metadata(t.path()).unwrap();
        let e = backup_once(&f, b"one", Keep { mode: 0o640, uid: me.uid(), gid: me.gid() }).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(!target.exists(), "the symlink's target is never written");
    }

    #[test]
    #[cfg(unix)] // symlinks, modes and owners
    fn backup_is_written_once_with_the_original_mode() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("s.json");
        let me = fs::metadata(t.path()).unwrap();
        let keep = |mode| Keep { mode, uid: me.uid(), gid: me.gid() };
        assert_eq!(backup_once(&f, b"one", keep(0o640)).unwrap(), Some(t.path().join("s.json.leanctx.bak")));
        assert_eq!(backup_once(&f, b"two", keep(0o644)).unwrap(), None);
        let bak = backup_path(&f);
        assert_eq!(fs::read(&bak).unwrap(), b"one");
        assert_eq!(mode_of(&fs::metadata(&bak).unwrap()), 0o640);
    }

    #[test]
    #[cfg(unix)] // symlinks, modes and owners
    fn atomic_write_keeps_the_mode() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("s.json");
        fs::write(&f, "old").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
        fsx::replace_durable(&f, b"new", Some(Keep::of(&fs::metadata(&f).unwrap()))).unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "new");
        assert_eq!(mode_of(&fs::metadata(&f).unwrap()), 0o640);
        let leftovers: Vec<_> = fs::read_dir(t.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers, ["s.json"]);
    }

    #[test]
    fn the_dir_lock_is_exclusive() {
        let t = tempfile::tempdir().unwrap();
        let held = lock_dir(t.path()).unwrap();
        let other = fsx::dir_lock_file(t.path()).unwrap();
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        drop(held);
        assert!(other.try_lock().is_ok());
    }
}
