//! Replacing a small, often rewritten file atomically without a new inode
//! each time. [`super::write_atomic`] creates a temp file and unlinks the
//! old content on every write; every hook rewrites the slot, and on ext4
//! that create and unlink were the largest part of a hook beyond process
//! start (a gated MCP call: ~130 µs of its ~1.3 ms CPU at bench load, most
//! of it the inode allocator skipping the inodes freed in the last minutes).
//!
//! Here two files take turns: the content is written into a spare beside
//! the target (`.<name>.spare`), which is then exchanged with it
//! (`renameat2(RENAME_EXCHANGE)`); the old target becomes the next spare.
//! Rewriting a file in place is only safe while nobody reads it, and the
//! old target may still be open in a reader that opened it just before the
//! exchange. So the spare is rewritten only under a Linux write lease
//! ([`super::sys::write_lease`]), which the kernel grants only while no
//! other open of the file exists and which holds off (or, with
//! `O_NONBLOCK`, refuses) any open until it is dropped: a reader sees the
//! old bytes or the new ones, never a mix, as with a fresh file. Anything
//! else (a reader still holding the spare, another writer at it, no lease
//! support, no exchange, a spare that is not a plain file of ours, any
//! error) falls back to [`super::write_atomic`].

use super::{state_problem, sys, write_atomic, write_atomic_kept};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The spare of `path`: `.<name>.spare` beside it.
pub fn spare_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.spare"))
}

/// Replace `path` with `contents`, atomically for readers, reusing the
/// inode of its spare where it can (the module's docs), else as
/// [`write_atomic`]. No fsync, as [`write_atomic`].
pub fn write_recycled(path: &Path, contents: &[u8]) -> io::Result<()> {
    match recycle(path, contents) {
        Ok(Some(_)) => Ok(()),
        Ok(None) | Err(_) => write_atomic(path, contents),
    }
}

/// [`write_recycled`], and the file now at `path`, still open, as
/// [`write_atomic_kept`] gives it: no lease is granted on a file held open,
/// so while it is held it is never rewritten, and as long as `path` names
/// it, it holds what this call wrote.
pub fn write_recycled_kept(path: &Path, contents: &[u8]) -> io::Result<Option<fs::File>> {
    match recycle(path, contents) {
        Ok(Some(f)) => Ok(sys::HOLD_OPEN.then_some(f)),
        Ok(None) | Err(_) => write_atomic_kept(path, contents),
    }
}

/// The fast path: the file now at `path`, holding `contents`; `Ok(None)`
/// or an error when `path` was not touched (the spare may have been).
fn recycle(path: &Path, contents: &[u8]) -> io::Result<Option<fs::File>> {
    let spare = spare_path(path);
    let f = sys::open_rewritable(&spare)?;
    let md = f.metadata()?;
    if state_problem(&md, u64::MAX).is_some() || sys::link_count(&md) != 1 {
        return Ok(None);
    }
    // The lease first: then no reader has the spare open, and no other
    // writer can take it until this one closes it.
    if sys::write_lease(&f, true).is_err() {
        return Ok(None);
    }
    // Still the spare? A writer that opened it just before another one
    // exchanged it in holds the target now: writing that and exchanging
    // would put the older content back.
    let at_name = fs::symlink_metadata(&spare).and_then(|m| sys::path_id(&spare, &m)).ok();
    if at_name != Some(sys::handle_id(&f, &md)?) {
        let _ = sys::write_lease(&f, false);
        return Ok(None);
    }
    let written = (&f)
        .write_all(contents)
        .and_then(|()| if md.len() > contents.len() as u64 { f.set_len(contents.len() as u64) } else { Ok(()) });
    // Dropped before the exchange: once the spare is the target, new
    // readers open it, and under a lease they would wait or fail.
    sys::write_lease(&f, false)?;
    written?;
    // The file is kept open until the exchange is done, so no other writer
    // takes the spare in between (its lease would be refused).
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => sys::exchange(&spare, path)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::rename(&spare, path)?,
        _ => return Ok(None),
    }
    Ok(Some(f))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;

    fn ino(p: &Path) -> u64 {
        fs::symlink_metadata(p).unwrap().ino()
    }

    #[test]
    fn two_inodes_take_turns() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("slot.json");
        let mut seen = HashSet::new();
        for i in 0..20u8 {
            // Longer and shorter contents: a shorter one is cut to length.
            let body = vec![b'a' + i; 300 - 10 * usize::from(i % 3)];
            write_recycled(&p, &body).unwrap();
            assert_eq!(fs::read(&p).unwrap(), body);
            seen.insert(ino(&p));
        }
        assert_eq!(seen.len(), 2, "each write took a fresh inode");
        let names: HashSet<_> = fs::read_dir(t.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, HashSet::from(["slot.json".into(), ".slot.json.spare".into()]));
    }

    /// A reader that opened the target keeps reading what it opened: the
    /// file it holds, now the spare, is not rewritten (the lease is
    /// refused) and a fresh file takes the write.
    #[test]
    fn a_held_file_is_never_rewritten() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("slot.json");
        write_recycled(&p, b"one").unwrap();
        write_recycled(&p, b"two").unwrap();
        let mut held = fs::File::open(&p).unwrap();
        let held_ino = held.metadata().unwrap().ino();
        write_recycled(&p, b"three").unwrap(); // `held`'s file is the spare now
        write_recycled(&p, b"four!").unwrap(); // must not write into it
        let mut s = String::new();
        held.read_to_string(&mut s).unwrap();
        assert_eq!(s, "two");
        assert_eq!(fs::read(&p).unwrap(), b"four!");
        assert_ne!(ino(&p), held_ino);
        drop(held);
        // Once it is closed, turns resume with two inodes.
        let mut seen = HashSet::new();
        for body in [&b"5"[..], b"6", b"7", b"8"] {
            write_recycled(&p, body).unwrap();
            assert_eq!(fs::read(&p).unwrap(), body);
            seen.insert(ino(&p));
        }
        assert_eq!(seen.len(), 2);
    }

    /// While the spare is leased, an open of it fails at once under
    /// O_NONBLOCK (leanctx's readers) instead of reading a half-written
    /// file; a second writer then takes the fresh-file path.
    #[test]
    fn a_leased_spare_refuses_other_opens() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("slot.json");
        write_recycled(&p, b"one").unwrap();
        let spare = spare_path(&p);
        let f = sys::open_rewritable(&spare).unwrap();
        sys::write_lease(&f, true).unwrap();
        let e = sys::open_rewritable(&spare).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EWOULDBLOCK));
        assert!(crate::fsx::read_state(&spare, 1 << 20).is_err());
        // Another writer meanwhile: done, by a fresh file.
        write_recycled(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        sys::write_lease(&f, false).unwrap();
    }

    /// A spare that is not a plain file of ours is never written through:
    /// the write still lands, by a fresh file.
    #[test]
    fn a_planted_spare_is_left_alone() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("slot.json");
        let other = t.path().join("other");
        fs::write(&other, b"keep").unwrap();
        let spare = spare_path(&p);
        // A symlink to another file, a hard link to it, a directory.
        std::os::unix::fs::symlink(&other, &spare).unwrap();
        write_recycled(&p, b"one").unwrap();
        fs::remove_file(&spare).unwrap();
        fs::hard_link(&other, &spare).unwrap();
        write_recycled(&p, b"two").unwrap();
        fs::remove_file(&spare).unwrap();
        fs::create_dir(&spare).unwrap();
        write_recycled(&p, b"three").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"three");
        assert_eq!(fs::read(&other).unwrap(), b"keep");
        // A target that is not a regular file is not swapped away.
        fs::remove_dir(&spare).unwrap();
        let d = t.path().join("dir");
        fs::create_dir(&d).unwrap();
        assert!(write_recycled(&d, b"x").is_err());
        assert!(d.is_dir());
    }
}
