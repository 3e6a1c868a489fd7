//! Everything in leanctx that is specific to Unix: `libc` calls,
//! `std::os::unix` extensions and `/proc`. The rest of the crate reaches
//! the platform only through [`crate::fsx`], so a port adds a sibling of
//! this file and touches nothing else.

use super::{Input, Keep, SpecialFile};
use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::Instant;

/// A long-lived journal reader keeps the file open between refreshes: a
/// trim renames a new journal over it all the same.
pub const HOLD_OPEN: bool = true;

/// The effective uid. Asked on every state file a reader opens: once per
/// process (leanctx never changes its uid).
pub fn current_uid() -> u32 {
    static UID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    // SAFETY: geteuid has no preconditions and cannot fail.
    *UID.get_or_init(|| unsafe { libc::geteuid() })
}

/// Owner uid of a file.
pub fn owner(md: &fs::Metadata) -> u32 {
    md.uid()
}

/// Permission bits (with setuid/setgid/sticky) of a file.
pub fn mode_of(md: &fs::Metadata) -> u32 {
    md.mode() & 0o7777
}

/// What a file is, device and inode: the same pair means the same file.
pub fn file_id(md: &fs::Metadata) -> (u64, u64) {
    (md.dev(), md.ino())
}

/// How many names the file has.
pub fn link_count(md: &fs::Metadata) -> u64 {
    md.nlink()
}

/// `file_id` of an open file, from its metadata (`fstat`).
#[inline]
pub fn handle_id(_: &File, md: &fs::Metadata) -> io::Result<(u64, u64)> {
    Ok(file_id(md))
}

/// `file_id` of what is at a path, from its metadata (`lstat`).
#[inline]
pub fn path_id(_: &Path, md: &fs::Metadata) -> io::Result<(u64, u64)> {
    Ok(file_id(md))
}

/// What kind of non-regular, non-directory file this is.
pub fn special_kind(ft: &fs::FileType) -> SpecialFile {
    if ft.is_fifo() {
        SpecialFile::Fifo
    } else if ft.is_socket() {
        SpecialFile::Socket
    } else if ft.is_char_device() || ft.is_block_device() {
        SpecialFile::Device
    } else {
        SpecialFile::Other
    }
}

/// Create a directory readable only by its owner (0700).
pub fn create_private_dir(path: &Path, recursive: bool) -> io::Result<()> {
    fs::DirBuilder::new().recursive(recursive).mode(0o700).create(path)
}

/// Options that open a state file without ever blocking (a FIFO opens at
/// once) or following a symlink; `write`: append, creating it 0600.
pub fn state_options(write: bool) -> OpenOptions {
    let mut o = OpenOptions::new();
    o.read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC);
    if write {
        o.append(true).create(true).mode(0o600);
    }
    o
}

/// Open with `o`.
#[inline]
pub fn open(o: &OpenOptions, path: &Path) -> io::Result<File> {
    o.open(path)
}

/// Did an open fail because the last component is a symlink (`O_NOFOLLOW`)?
pub fn is_symlink_refusal(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Open a state file to rewrite in place: read and write, not appending,
/// created 0600 if missing, without blocking or following a symlink.
pub fn open_rewritable(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Open for reading without blocking (a FIFO must not hang the caller).
pub fn open_nonblocking(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
}

/// Create a new file (failing if anything is at `path`) with `mode`.
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).mode(mode).open(path)
}

/// A temp file in `dir` for a user's config file: 0666 less the umask,
/// what an editor would create (tempfile's default is 0600).
pub fn config_temp_in(dir: &Path) -> io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new().prefix(super::TEMP_PREFIX).permissions(fs::Permissions::from_mode(0o666)).tempfile_in(dir)
}

/// Rename the temp file over `path`.
#[inline]
pub fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> io::Result<()> {
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// Make a rename or removal in `dir` durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The file an installer locks to edit a config in `dir`: the directory
/// itself (never replaced: the config is, by rename), so no lock file is
/// left beside the user's config.
pub fn dir_lock_file(dir: &Path) -> io::Result<File> {
    File::open(dir)
}

/// Give `f` the kept mode, then owner. The owner matters when root edits a
/// user's file (`sudo -E`): the new file must not become root's. Changing
/// the owner is best effort: only root may, and then it works.
pub fn apply_keep(f: &File, keep: &Keep) -> io::Result<()> {
    let md = f.metadata()?;
    if md.uid() != keep.uid || md.gid() != keep.gid {
        let _ = std::os::unix::fs::fchown(f, Some(keep.uid), Some(keep.gid));
    }
    f.set_permissions(fs::Permissions::from_mode(keep.mode))
}

/// What a replacement keeps of an existing file.
pub fn keep_of(md: &fs::Metadata) -> Keep {
    Keep { mode: mode_of(md), uid: md.uid(), gid: md.gid() }
}

/// Wine runs Windows programs: never this one.
pub fn under_wine() -> bool {
    false
}

/// A path's 8.3 short name: a Windows notion, none here.
pub fn short_path(_: &Path) -> Option<std::path::PathBuf> {
    None
}

/// One `read` of `f` (from its cursor) of up to `room` bytes onto the end
/// of `buf`, straight into its spare capacity: how many came. Nothing is
/// zeroed first (a 77 KB journal's zero fill was 77k of a question's
/// instructions in callgrind).
pub fn read_append(f: &File, buf: &mut Vec<u8>, room: usize) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    buf.reserve(room);
    // SAFETY: at most `room` bytes into the vector's spare capacity, which
    // `reserve` made at least that large; only the bytes the read returned
    // are then counted as initialised.
    let n = unsafe { libc::read(f.as_raw_fd(), buf.as_mut_ptr().add(buf.len()).cast(), room) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the read initialised these `n` (at most `room`) bytes.
    unsafe { buf.set_len(buf.len() + n as usize) };
    Ok(n as usize)
}

/// Read at an offset without moving the file's cursor.
pub fn read_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    f.read_at(buf, offset)
}

fn c_path(p: &Path) -> io::Result<CString> {
    Ok(CString::new(p.as_os_str().as_bytes())?)
}

/// Atomically swap two paths (Linux `renameat2` with `RENAME_EXCHANGE`).
#[cfg(target_os = "linux")]
pub fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    let (a, b) = (c_path(a)?, c_path(b)?);
    // SAFETY: two valid NUL-terminated paths for the duration of the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

#[cfg(not(target_os = "linux"))]
pub fn exchange(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Take (`take`) or drop a write lease on `f` (Linux `F_SETLEASE`): the
/// kernel grants it only while no other open file description of the file
/// exists, and until it is dropped anyone else's open of the file waits
/// for it (or fails with `EWOULDBLOCK` under `O_NONBLOCK`; leanctx's
/// readers open so). A lease break signals the holder with SIGIO, whose
/// default action kills: the lease is taken only while SIGIO is ignored
/// (set here when it has its default action; a process that handles SIGIO
/// itself gets no lease). Unsupported elsewhere, and refused by some file
/// systems: callers then write another way.
#[cfg(target_os = "linux")]
pub fn write_lease(f: &File, take: bool) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    if take && !sigio_ignored() {
        return Err(io::ErrorKind::Unsupported.into());
    }
    let arg = if take { libc::F_WRLCK } else { libc::F_UNLCK };
    // SAFETY: an fcntl on a descriptor `f` owns.
    if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETLEASE, arg) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Is SIGIO ignored (made so if it had its default action)?
#[cfg(target_os = "linux")]
fn sigio_ignored() -> bool {
    static IGNORED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *IGNORED.get_or_init(|| {
        // SAFETY: sigaction with a null new action only reads the current
        // one into `old`, a zeroed plain C struct.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGIO, std::ptr::null(), &mut old) != 0 {
                return false;
            }
            match old.sa_sigaction {
                libc::SIG_IGN => true,
                libc::SIG_DFL => libc::signal(libc::SIGIO, libc::SIG_IGN) != libc::SIG_ERR,
                _ => false,
            }
        }
    })
}

#[cfg(not(target_os = "linux"))]
pub fn write_lease(_: &File, _: bool) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// May this process create entries in `dir` (write and search permission)?
pub fn may_create_in(dir: &Path) -> io::Result<bool> {
    let c = c_path(dir)?;
    // SAFETY: a valid NUL-terminated path.
    Ok(unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } == 0)
}

/// Bytes available to this user in the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    let c = c_path(dir).ok()?;
    // SAFETY: a valid NUL-terminated path and a zeroed out-struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// This process's parent.
pub fn parent_pid() -> u32 {
    // SAFETY: getppid has no preconditions and cannot fail.
    unsafe { libc::getppid() as u32 }
}

/// The parent of `pid`, from `/proc/<pid>/stat` (Linux; `None` elsewhere).
pub fn parent_of(pid: u32) -> Option<u32> {
    use std::io::Read as _;
    // One read into a buffer that holds the whole line (52 numeric fields
    // and a 16-byte name), not `read_to_string`'s fstat and growing reads
    // (six system calls on every Claude Code stub question).
    let mut f = fs::File::open(format!("/proc/{pid}/stat")).ok()?;
    let mut buf = [0u8; 2048];
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
        // procfs hands the whole line to one read.
        if buf[..n].ends_with(b"\n") {
            break;
        }
    }
    // "pid (comm) state ppid ...": comm may hold spaces, parentheses and
    // bytes that are not UTF-8; what follows its last ')' is ASCII.
    let close = buf[..n].iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&buf[close + 1..n]).ok()?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The parent process's command line (Linux `/proc`; empty elsewhere).
pub fn parent_argv() -> Vec<String> {
    fs::read(format!("/proc/{}/cmdline", parent_pid()))
        .map(|b| {
            b.split(|&c| c == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
        })
        .unwrap_or_default()
}

/// What std's runtime setup gave that leanctx needs, for a binary with its
/// own entry point: standard fds that are closed are opened on /dev/null
/// (else a state file could take fd 1 and receive the answer), and SIGPIPE
/// is ignored (a closed pipe is an error, not a death: ripgrep's rule).
pub fn prepare_process() {
    // SAFETY: plain libc calls on the standard fds and a constant path,
    // before any other code runs; no Rust object owns these fds yet.
    unsafe {
        for fd in 0..3 {
            // errno through std: glibc's `__errno_location` is `__error` on macOS.
            if libc::fcntl(fd, libc::F_GETFD) == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EBADF) {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Read stdin until EOF, `max` bytes, or `deadline` ([`super::read_stdin`]).
///
/// The payload is read straight into its own buffer, which starts at 16 KiB
/// and doubles; bytes past `max + 1` go to an uninitialised scratch buffer
/// and are only counted. (A zeroed 64 KiB chunk per call cost every hook 16
/// page faults and a 64 KiB memset for a payload of a few KiB.)
pub fn read_stdin(max: usize, max_drain: usize, deadline: Instant) -> Input {
    let fd = 0;
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    // Where what is past `max` goes, on the heap and only once there is
    // some: 64 KiB on the stack made every process probe 16 fresh stack
    // pages, 16 page faults (perf record -e page-faults), for a drain that
    // a payload within its bound never needs.
    let mut sink: Vec<u8> = Vec::new();
    let mut drained = 0usize;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return if buf.len() > max { Input::TooLarge { seen: buf.len() + drained } } else { Input::TimedOut(buf) };
        }
        let wait_ms = (deadline - now).as_millis().clamp(1, i32::MAX as u128) as i32;
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd for the duration of the call.
        let r = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Input::Error(e);
        }
        if r == 0 {
            continue; // deadline check at the top
        }
        let keeping = buf.len() <= max;
        let n = if keeping {
            // Grow only when full: a payload just under a power of two
            // (a 62 KB PostToolBatch) then fits its buffer instead of
            // moving to a fresh, page-faulting 128 KiB one before EOF.
            if buf.capacity() == buf.len() {
                buf.reserve(buf.capacity().max(4096));
            }
            // Never keep more than max + 1 bytes (one past the limit says
            // "too large").
            let room = (buf.capacity() - buf.len()).min(max + 1 - buf.len());
            // SAFETY: at most `room` bytes into the vector's spare capacity.
            unsafe { libc::read(fd, buf.as_mut_ptr().add(buf.len()).cast(), room) }
        } else {
            if sink.capacity() == 0 {
                sink.reserve_exact(64 * 1024);
            }
            // SAFETY: the scratch vector's allocation is valid for writes of
            // its capacity; what is read there is never read back.
            unsafe { libc::read(fd, sink.as_mut_ptr().cast(), sink.capacity()) }
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => continue,
                _ => return Input::Error(e),
            }
        }
        let n = n as usize;
        if n == 0 {
            return if buf.len() > max { Input::TooLarge { seen: buf.len() + drained } } else { Input::Complete(buf) };
        }
        if keeping {
            // SAFETY: the read initialised these `n` bytes.
            unsafe { buf.set_len(buf.len() + n) };
        } else {
            drained += n;
            if drained > max_drain {
                return Input::TooLarge { seen: buf.len() + drained };
            }
        }
    }
}
