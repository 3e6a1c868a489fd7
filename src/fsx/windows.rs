//! Everything in leanctx that is specific to Windows, the sibling of
//! `unix.rs` with the same functions.
//!
//! - No modes and no uids: the data dir lives in the user's profile
//!   (`%LOCALAPPDATA%`, or `~\.lean-ctx`), whose ACL admits the user, SYSTEM
//!   and Administrators only. [`current_uid`] and [`owner`] are both 0, so
//!   the owner checks always pass; [`mode_of`] reports 0o700 for a
//!   directory, 0o600 for a writable file and 0o400 for a read-only one, so
//!   a read-only state file is still refused.
//! - A symlink is opened as itself (`FILE_FLAG_OPEN_REPARSE_POINT`) and then
//!   refused by its metadata; there are no FIFOs to block on.
//! - No `renameat2`: the slot is replaced by `MoveFileExW`
//!   (`MOVEFILE_REPLACE_EXISTING`, what `tempfile::persist` does).
//! - No `/proc`: the parent process comes from a Toolhelp snapshot; the
//!   parent's command line is not read (empty, as on macOS).
//! - No `poll` on stdin: a thread reads it while the caller waits on a
//!   condition variable until the deadline.

use super::{Input, Keep, SpecialFile};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::{FileExt, OpenOptionsExt};
use std::os::windows::io::AsRawHandle;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;
use windows_sys::Win32::Foundation::{CloseHandle, INVALID_HANDLE_VALUE};
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, FILE_RENAME_INFO,
    FileRenameInfoEx, GetDiskFreeSpaceExW, GetFileInformationByHandle, GetShortPathNameW, SetFileInformationByHandle,
};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, PROCESSENTRY32W, Process32FirstW, Process32NextW, TH32CS_SNAPPROCESS,
};

/// A long-lived journal reader closes the file after each refresh:
/// Windows (and Wine) refuse to rename a new journal over a file another
/// process holds open, even one opened with delete sharing, so a trim
/// would fail for as long as any MCP server keeps a reader.
pub const HOLD_OPEN: bool = false;

/// No uids on Windows: the same value as [`owner`] (see the module doc).
pub fn current_uid() -> u32 {
    0
}

/// No uids on Windows (see the module doc).
pub fn owner(_: &fs::Metadata) -> u32 {
    0
}

/// Unix-like permission bits from what Windows has: a directory is 0o700,
/// a file 0o600, or 0o400 when read-only.
pub fn mode_of(md: &fs::Metadata) -> u32 {
    if md.is_dir() {
        0o700
    } else if md.permissions().readonly() {
        0o400
    } else {
        0o600
    }
}

fn wide(p: &Path) -> Vec<u16> {
    p.as_os_str().encode_wide().chain(Some(0)).collect()
}

/// Volume serial number and file index of an open file: the same pair
/// means the same file (Windows' device and inode).
pub fn handle_id(f: &File, _: &fs::Metadata) -> io::Result<(u64, u64)> {
    // SAFETY: a zeroed out-struct and a handle that lives as long as `f`.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    if unsafe { GetFileInformationByHandle(f.as_raw_handle() as _, &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((u64::from(info.dwVolumeSerialNumber), (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow)))
}

/// [`handle_id`] of what is at `path` itself (a symlink is not followed),
/// opened with no access rights, so nothing is locked or read.
pub fn path_id(path: &Path, md: &fs::Metadata) -> io::Result<(u64, u64)> {
    let f = OpenOptions::new()
        .access_mode(0)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    handle_id(&f, md)
}

/// Windows has no FIFOs, sockets or devices in a directory listing that
/// leanctx could meet as a state file: anything else is "other".
pub fn special_kind(_: &fs::FileType) -> SpecialFile {
    SpecialFile::Other
}

/// Create a directory; it inherits its parent's ACL (the user profile's).
pub fn create_private_dir(path: &Path, recursive: bool) -> io::Result<()> {
    fs::DirBuilder::new().recursive(recursive).create(path)
}

/// Options that open a state file as itself, never through a symlink
/// (`FILE_FLAG_OPEN_REPARSE_POINT`: the link is opened and its metadata
/// refuses it); `write`: append, creating it. std shares read, write and
/// delete, so a writer can still replace the file while it is open.
pub fn state_options(write: bool) -> OpenOptions {
    let mut o = OpenOptions::new();
    o.read(true).custom_flags(FILE_FLAG_OPEN_REPARSE_POINT);
    if write {
        o.append(true).create(true);
    }
    o
}

/// Open with `o`. Windows refuses to open a file that a rename is
/// replacing at that moment ("access denied" on the name in between): that
/// is retried for up to 100 ms, as [`persist`] retries the rename.
pub fn open(o: &OpenOptions, path: &Path) -> io::Result<File> {
    let deadline = Instant::now() + std::time::Duration::from_millis(100);
    loop {
        match o.open(path) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            r => return r,
        }
    }
}

/// Windows opens the link itself instead of refusing it: never this error.
pub fn is_symlink_refusal(_: &io::Error) -> bool {
    false
}

/// Open for reading (nothing in a Windows directory blocks an open).
pub fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Create a new file (failing if anything is at `path`); read-only when
/// `mode` has no owner write bit.
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    let f = OpenOptions::new().write(true).create_new(true).open(path)?;
    if mode & 0o200 == 0 {
        let mut p = f.metadata()?.permissions();
        p.set_readonly(true);
        f.set_permissions(p)?;
    }
    Ok(f)
}

/// Give `f` the kept mode as far as Windows has one: read-only or not.
/// Owners are not changed (the ACL is inherited from the directory).
pub fn apply_keep(f: &File, keep: &Keep) -> io::Result<()> {
    let mut p = f.metadata()?.permissions();
    let readonly = keep.mode & 0o200 == 0;
    if p.readonly() != readonly {
        p.set_readonly(readonly);
        f.set_permissions(p)?;
    }
    Ok(())
}

/// What a replacement keeps of an existing file.
pub fn keep_of(md: &fs::Metadata) -> Keep {
    Keep { mode: mode_of(md), uid: 0, gid: 0 }
}

/// The 8.3 short name of an existing path (`GetShortPathNameW`): no
/// spaces, so a hook command can name it unquoted. `None` when the volume
/// keeps no short names.
pub fn short_path(p: &Path) -> Option<std::path::PathBuf> {
    use std::os::windows::ffi::OsStringExt;
    let w = wide(p);
    let mut buf = vec![0u16; 32_768];
    // SAFETY: a NUL-terminated input and an output buffer of the length given.
    let n = unsafe { GetShortPathNameW(w.as_ptr(), buf.as_mut_ptr(), buf.len() as u32) } as usize;
    (n > 0 && n < buf.len()).then(|| std::ffi::OsString::from_wide(&buf[..n]).into())
}

/// One read of `f` (from its cursor) of up to `room` bytes onto the end of
/// `buf`: how many came. The room is zeroed first (the Unix one reads into
/// spare capacity).
pub fn read_append(mut f: &File, buf: &mut Vec<u8>, room: usize) -> io::Result<usize> {
    let at = buf.len();
    buf.resize(at + room, 0);
    let r = f.read(&mut buf[at..]);
    buf.truncate(at + *r.as_ref().unwrap_or(&0));
    r
}

/// Read at an offset. Windows moves the file's cursor as it does so;
/// leanctx's appends go to the end whatever the cursor (append mode).
pub fn read_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    f.seek_read(buf, offset)
}

/// No atomic exchange on Windows: the caller replaces by rename.
pub fn exchange(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// How many names the file has: not asked on Windows, where nothing is
/// rewritten in place ([`open_rewritable`]).
pub fn link_count(_: &fs::Metadata) -> u64 {
    1
}

/// Nothing is rewritten in place on Windows ([`write_lease`]).
pub fn open_rewritable(_: &Path) -> io::Result<File> {
    Err(io::ErrorKind::Unsupported.into())
}

/// No file leases on Windows: [`super::write_recycled`] replaces by a
/// fresh file there.
pub fn write_lease(_: &File, _: bool) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// A temp file in `dir` for a user's config file (it inherits the dir's ACL).
pub fn config_temp_in(dir: &Path) -> io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new().prefix(super::TEMP_PREFIX).tempfile_in(dir)
}

/// Rename the temp file over `path`. First with POSIX semantics
/// (`FileRenameInfoEx`, `FILE_RENAME_FLAG_POSIX_SEMANTICS`: Windows 10
/// 1607+ on NTFS), which replaces a file that readers hold open, as a Unix
/// rename does; they keep the old file, new opens see the new one. Where
/// that is refused (older Windows, another file system, Wine 8), the
/// classic `MoveFileExW` with `MOVEFILE_REPLACE_EXISTING` (tempfile's
/// `persist`), which Windows refuses while any handle on the target is
/// open: retried for up to 100 ms, then reported.
pub fn persist(mut tmp: tempfile::NamedTempFile, path: &Path) -> io::Result<()> {
    if posix_rename(tmp.path(), path).is_ok() {
        // The temp name is gone; nothing for the guard to delete.
        let _ = tmp.into_temp_path().keep();
        return Ok(());
    }
    let deadline = Instant::now() + std::time::Duration::from_millis(100);
    loop {
        match tmp.persist(path) {
            Ok(_) => return Ok(()),
            Err(e) if e.error.kind() == io::ErrorKind::PermissionDenied && Instant::now() < deadline => {
                tmp = e.file;
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(e) => return Err(e.error),
        }
    }
}

/// `SetFileInformationByHandle(FileRenameInfoEx)` with
/// `REPLACE_IF_EXISTS | POSIX_SEMANTICS`, on a handle opened for delete.
fn posix_rename(from: &Path, to: &Path) -> io::Result<()> {
    const DELETE: u32 = 0x0001_0000;
    const SYNCHRONIZE: u32 = 0x0010_0000;
    const REPLACE_IF_EXISTS: u32 = 0x1;
    const POSIX_SEMANTICS: u32 = 0x2;
    let f = OpenOptions::new().access_mode(DELETE | SYNCHRONIZE).open(from)?;
    let target: Vec<u16> = std::path::absolute(to)?.as_os_str().encode_wide().collect();
    let head = std::mem::offset_of!(FILE_RENAME_INFO, FileName);
    let size = head + (target.len() + 1) * 2;
    // u64 storage: aligned for the struct, zeroed (the name ends in NUL).
    let mut storage = vec![0u64; size.div_ceil(8)];
    let info = storage.as_mut_ptr().cast::<FILE_RENAME_INFO>();
    // SAFETY: `storage` is large enough and aligned for the header and the
    // name written after it; the handle lives as long as `f`.
    let ok = unsafe {
        (*info).Anonymous.Flags = REPLACE_IF_EXISTS | POSIX_SEMANTICS;
        (*info).RootDirectory = std::ptr::null_mut();
        (*info).FileNameLength = (target.len() * 2) as u32;
        std::ptr::copy_nonoverlapping(
            target.as_ptr(),
            std::ptr::addr_of_mut!((*info).FileName).cast::<u16>(),
            target.len(),
        );
        SetFileInformationByHandle(f.as_raw_handle() as _, FileRenameInfoEx, info.cast(), size as u32)
    };
    if ok == 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Make a rename in `dir` durable: NTFS journals its metadata, and a
/// directory handle cannot be flushed without backup privileges: nothing
/// to do.
pub fn sync_dir(_: &Path) -> io::Result<()> {
    Ok(())
}

/// The file an installer locks to edit a config in `dir`. Windows cannot
/// lock a directory, so a lock file in the temp dir named by a hash of
/// `dir` (every leanctx of this user computes the same name; nothing is
/// left beside the user's config).
pub fn dir_lock_file(dir: &Path) -> io::Result<File> {
    let dir = fs::canonicalize(dir)?;
    // sha256 here, not `base::fingerprint` (fsx is the bottom layer); the
    // same hex, so the name is the one every leanctx computes.
    use sha2::Digest;
    let d = sha2::Sha256::digest(dir.as_os_str().to_string_lossy().to_lowercase().as_bytes());
    let h: String = d.iter().take(16).map(|b| format!("{b:02x}")).collect();
    let p = std::env::temp_dir().join(format!("leanctx-edit-{h}.lock"));
    OpenOptions::new().read(true).write(true).create(true).truncate(false).open(p)
}

/// May this process create entries in `dir`? Windows' answer is in the
/// ACL, so ask by doing it: create and remove a temp file.
pub fn may_create_in(dir: &Path) -> io::Result<bool> {
    match tempfile::Builder::new().prefix(super::TEMP_PREFIX).tempfile_in(dir) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Ok(false),
        Err(e) => Err(e),
    }
}

/// Bytes available to this user on the volume holding `dir`.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    let w = wide(dir);
    let mut avail = 0u64;
    // SAFETY: a NUL-terminated wide path and one out-value; the others may be null.
    let ok = unsafe { GetDiskFreeSpaceExW(w.as_ptr(), &mut avail, std::ptr::null_mut(), std::ptr::null_mut()) };
    (ok != 0).then_some(avail)
}

/// The parent of `pid` from a Toolhelp process snapshot (the process that
/// created it; it may have exited since, as on Unix).
pub fn parent_of(pid: u32) -> Option<u32> {
    // SAFETY: a snapshot handle we close, and an out-struct whose size field
    // is set as the API requires.
    unsafe {
        let snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
        if snap == INVALID_HANDLE_VALUE || snap.is_null() {
            return None;
        }
        let mut e: PROCESSENTRY32W = std::mem::zeroed();
        e.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
        let mut found = None;
        let mut more = Process32FirstW(snap, &mut e) != 0;
        while more {
            if e.th32ProcessID == pid {
                found = Some(e.th32ParentProcessID);
                break;
            }
            more = Process32NextW(snap, &mut e) != 0;
        }
        CloseHandle(snap);
        found
    }
}

/// This process's parent (0 if it cannot be found).
pub fn parent_pid() -> u32 {
    parent_of(std::process::id()).unwrap_or(0)
}

/// The parent's command line is not read on Windows (it takes reading
/// another process's memory): empty, as on macOS.
pub fn parent_argv() -> Vec<String> {
    Vec::new()
}

/// Nothing to prepare: Windows has no SIGPIPE, and std treats a missing
/// standard handle as an empty stream.
pub fn prepare_process() {}

#[derive(Default)]
struct StdinState {
    buf: Vec<u8>,
    drained: usize,
    /// `Some` when the reader stopped: EOF, too large, or an error.
    end: Option<io::Result<()>>,
}

/// Read stdin until EOF, `max` bytes, or `deadline` ([`super::read_stdin`]).
/// Windows has no `poll` for a pipe: a thread reads, the caller waits for it
/// on a condition variable until the deadline, then takes what arrived. A
/// reader still blocked then is ended with the process.
pub fn read_stdin(max: usize, max_drain: usize, deadline: Instant) -> Input {
    let shared = Arc::new((Mutex::new(StdinState::default()), Condvar::new()));
    let theirs = Arc::clone(&shared);
    let spawned = std::thread::Builder::new().name("stdin".into()).spawn(move || {
        let (lock, cv) = &*theirs;
        let mut stdin = io::stdin().lock();
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let r = stdin.read(&mut chunk);
            let mut st = lock.lock().unwrap_or_else(|p| p.into_inner());
            match r {
                Ok(0) => st.end = Some(Ok(())),
                Ok(n) => {
                    // Keep at most max + 1 bytes (one past says "too large").
                    let keep = n.min((max + 1).saturating_sub(st.buf.len()));
                    st.buf.extend_from_slice(&chunk[..keep]);
                    st.drained += n - keep;
                    if st.drained > max_drain {
                        st.end = Some(Ok(()));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // A closed or broken pipe is the end of the input.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => st.end = Some(Ok(())),
                Err(e) => st.end = Some(Err(e)),
            }
            let done = st.end.is_some();
            drop(st);
            cv.notify_all();
            if done {
                return;
            }
        }
    });
    if let Err(e) = spawned {
        return Input::Error(e);
    }
    let (lock, cv) = &*shared;
    let mut st = lock.lock().unwrap_or_else(|p| p.into_inner());
    while st.end.is_none() {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        st = cv.wait_timeout(st, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
    }
    let st = &mut *st;
    let buf = std::mem::take(&mut st.buf);
    let seen = buf.len() + st.drained;
    match st.end.take() {
        Some(Err(e)) => Input::Error(e),
        _ if buf.len() > max => Input::TooLarge { seen },
        Some(Ok(())) => Input::Complete(buf),
        None => Input::TimedOut(buf),
    }
}

/// Is this Wine rather than Windows (ntdll exports `wine_get_version`)?
/// For the tests that check where the two differ, and say so.
pub fn under_wine() -> bool {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleA, GetProcAddress};
    // SAFETY: constant NUL-terminated names; a null module is checked.
    unsafe {
        let ntdll = GetModuleHandleA(c"ntdll.dll".as_ptr().cast());
        !ntdll.is_null() && GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_some()
    }
}

/// What [`lstat`] gives: the path's own metadata (no handle-relative stats
/// here, see the Unix `Stat`).
pub type Stat = fs::Metadata;

/// `lstat` of `path`: by the path, always (Windows keeps no data dir handle).
pub fn lstat(path: &Path) -> io::Result<Stat> {
    fs::symlink_metadata(path)
}

/// Nothing to anchor on Windows ([`lstat`] goes by the path).
pub fn anchor(_: &Path, _: &fs::Metadata) {}

/// Nothing anchored on Windows.
pub fn unanchor() {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file a reader holds open is replaced, the reader keeps the old
    /// content, new opens see the new one: what the slot and a journal trim
    /// need. Windows does it with the POSIX-semantics rename. Wine 8 has
    /// none, and its `MoveFileExW` refuses while the target is open: there
    /// the replacement fails after its retries, and this test checks that
    /// instead of passing as if it worked (README "Platforms").
    #[test]
    fn a_file_a_reader_holds_open_is_replaced() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("slot");
        fs::write(&p, "old").unwrap();
        let mut reader = File::open(&p).unwrap();
        let mut tmp = tempfile::NamedTempFile::new_in(t.path()).unwrap();
        tmp.write_all(b"new").unwrap();
        let r = persist(tmp, &p);
        if under_wine() {
            eprintln!("Wine: a file open elsewhere cannot be replaced ({r:?}); Windows 10 1607+ can");
            assert!(r.is_err(), "Wine learnt POSIX-semantics renames: update README \"Platforms\"");
            return;
        }
        r.unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        let mut old = String::new();
        reader.read_to_string(&mut old).unwrap();
        assert_eq!(old, "old");
    }

    #[test]
    fn file_ids_tell_files_apart() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        fs::write(&a, "a").unwrap();
        fs::write(&b, "b").unwrap();
        let md = fs::metadata(&a).unwrap();
        let ia = path_id(&a, &md).unwrap();
        assert_eq!(handle_id(&File::open(&a).unwrap(), &md).unwrap(), ia);
        assert_ne!(path_id(&b, &md).unwrap(), ia);
    }
}
