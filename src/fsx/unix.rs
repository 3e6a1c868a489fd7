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

/// `file_id` of what is at a path, from its metadata (`lstat`, or the
/// [`Stat`] of [`lstat`]).
#[inline]
pub fn path_id(_: &Path, md: &impl super::Meta) -> io::Result<(u64, u64)> {
    Ok(md.dev_ino())
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

/// What an `lstat` says of a file, enough for every check made on a state
/// file ([`super::Meta`]): std's `Metadata` cannot be built from the
/// `fstatat` a stat relative to the data dir's handle makes ([`lstat`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    len: u64,
    dev: u64,
    ino: u64,
    /// `st_mode`: the type bits and the permission bits.
    mode: u32,
    uid: u32,
}

// No `is_empty`: callers compare `len()` as they do on std's `Metadata`,
// which is what Windows' `Stat` is.
#[allow(clippy::len_without_is_empty)]
impl Stat {
    pub fn len(&self) -> u64 {
        self.len
    }

    fn of(md: &fs::Metadata) -> Stat {
        Stat { len: md.len(), dev: md.dev(), ino: md.ino(), mode: md.mode(), uid: md.uid() }
    }

    // The fields' widths differ across Unixes (macOS: a 16-bit mode, a
    // 32-bit device): casts that are no-ops on Linux.
    #[allow(clippy::unnecessary_cast)]
    fn of_raw(st: &libc::stat) -> Stat {
        Stat {
            len: st.st_size as u64,
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            mode: st.st_mode as u32,
            uid: st.st_uid as u32,
        }
    }
}

impl super::Meta for Stat {
    #[allow(clippy::unnecessary_cast)] // as in `Stat::of_raw`
    fn kind(&self) -> super::Kind {
        use super::Kind;
        match self.mode & libc::S_IFMT as u32 {
            m if m == libc::S_IFREG as u32 => Kind::File,
            m if m == libc::S_IFDIR as u32 => Kind::Dir,
            m if m == libc::S_IFLNK as u32 => Kind::Symlink,
            m if m == libc::S_IFIFO as u32 => Kind::Special(SpecialFile::Fifo),
            m if m == libc::S_IFSOCK as u32 => Kind::Special(SpecialFile::Socket),
            m if m == libc::S_IFCHR as u32 || m == libc::S_IFBLK as u32 => Kind::Special(SpecialFile::Device),
            _ => Kind::Special(SpecialFile::Other),
        }
    }
    fn uid_of(&self) -> u32 {
        self.uid
    }
    fn mode_bits(&self) -> u32 {
        self.mode & 0o7777
    }
    fn size(&self) -> u64 {
        self.len
    }
    fn dev_ino(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }
}

/// The data dir's handle: an `O_PATH` descriptor of the directory its path
/// named when opened, with that directory's (device, inode).
#[derive(Debug)]
struct Anchor {
    path: std::path::PathBuf,
    id: (u64, u64),
    fd: std::os::fd::OwnedFd,
}

/// What this thread knows of the one data dir it anchors (one: a bound;
/// another path or another directory there replaces it).
#[derive(Debug)]
enum Anchored {
    None,
    /// Checked once at `path` with this id: a second question there opens
    /// the handle (a one-shot process asks once and never pays the open).
    Seen(std::path::PathBuf, (u64, u64)),
    /// Tried and failed (no descriptor left, the dir replaced in between):
    /// not tried again for this path and id.
    Failed(std::path::PathBuf, (u64, u64)),
    /// The handle, and whether the question this thread is in checked it
    /// (its path named the handle's directory at the question's check).
    Open(Anchor, bool),
}

thread_local! {
    /// Per thread: a question runs on one, and a handle no other thread
    /// uses needs no lock (closed when the thread ends).
    static ANCHORED: std::cell::RefCell<Anchored> = const { std::cell::RefCell::new(Anchored::None) };
}

/// The question's check of the data dir `dir` found `md` there (a `stat`,
/// following a symlink, as the check does): from now until [`unanchor`],
/// [`lstat`] of a path inside `dir` is made relative to a handle of that
/// directory when this thread holds one and it is the same (device,
/// inode). The handle is opened at the second question that finds the same
/// directory at the same path; anything else (another path, another
/// directory there, an open that fails) leaves the stats on the path.
pub fn anchor(dir: &Path, md: &fs::Metadata) {
    let id = file_id(md);
    ANCHORED.with_borrow_mut(|a| {
        let next = match std::mem::replace(a, Anchored::None) {
            Anchored::Open(h, _) if same_path(&h.path, dir) && h.id == id => Anchored::Open(h, true),
            Anchored::Failed(p, i) if same_path(&p, dir) && i == id => Anchored::Failed(p, i),
            Anchored::Seen(p, i) if same_path(&p, dir) && i == id => match open_anchor(dir, id) {
                Some(h) => Anchored::Open(h, true),
                None => Anchored::Failed(p, i),
            },
            _ => Anchored::Seen(dir.to_path_buf(), id),
        };
        *a = next;
    });
}

/// The same bytes (another spelling of the path is another path here).
fn same_path(a: &Path, b: &Path) -> bool {
    a.as_os_str() == b.as_os_str()
}

/// The question ended: stats go by path until the next one's check.
pub fn unanchor() {
    ANCHORED.with_borrow_mut(|a| {
        if let Anchored::Open(_, valid) = a {
            *valid = false;
        }
    });
}

/// Open `dir`'s handle (following a symlink, as the check did) and keep it
/// only if it is the directory the check found (`id`): the path may have
/// been replaced since.
fn open_anchor(dir: &Path, id: (u64, u64)) -> Option<Anchor> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let c = c_path(dir).ok()?;
    // SAFETY: a valid NUL-terminated path; the descriptor returned is owned
    // by the `OwnedFd` at once.
    let raw = unsafe { libc::open(c.as_ptr(), O_DIR_HANDLE | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if raw < 0 {
        return None;
    }
    // SAFETY: `raw` is a descriptor just opened and owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: a zeroed out-struct and a descriptor `fd` owns.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    (super::Meta::dev_ino(&Stat::of_raw(&st)) == id).then(|| Anchor { path: dir.to_path_buf(), id, fd })
}

/// `O_PATH` where there is one (Linux): the handle only names the
/// directory, it reads nothing. Elsewhere a read-only open of it.
#[cfg(any(target_os = "linux", target_os = "android"))]
const O_DIR_HANDLE: libc::c_int = libc::O_PATH;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const O_DIR_HANDLE: libc::c_int = libc::O_RDONLY;

/// `lstat` of `path` (a symlink is not followed): relative to the data
/// dir's handle when `path` is inside the dir the current question checked
/// and this thread holds a handle of it ([`anchor`]); by the path
/// otherwise, and whenever the relative stat fails (the answer, error or
/// not, is then the path's own, as before). The same file either way: the
/// handle is the directory the path named at the question's check, and the
/// rest of the path is walked from it as the kernel walks it from the path
/// (each name looked up again: a subdirectory replaced is seen).
pub fn lstat(path: &Path) -> io::Result<Stat> {
    let tried = ANCHORED.with_borrow(|a| match a {
        Anchored::Open(h, true) => lstat_at(h, path),
        _ => None,
    });
    if let Some(Err(e)) = &tried {
        // Answered by the path below, and so is the rest of the question;
        // a handle that fails for anything but a missing file is dropped
        // (a later question opens another).
        let missing = e.kind() == io::ErrorKind::NotFound;
        ANCHORED.with_borrow_mut(|a| match a {
            Anchored::Open(_, valid) if missing => *valid = false,
            _ => *a = Anchored::None,
        });
    }
    match tried {
        Some(Ok(st)) => Ok(st),
        _ => fs::symlink_metadata(path).map(|md| Stat::of(&md)),
    }
}

/// The longest path relative to the handle stat'ed from a buffer on the
/// stack (a data dir's files are far shorter); longer ones go by the path.
const MAX_RELATIVE: usize = 256;

/// `fstatat` of `path`'s part below the handle's directory, `None` when
/// `path` is not the handle's path (its bytes, as opened), a `/` and plain
/// names (no `.`, `..` or empty one). Bytes, not `Path::strip_prefix`: its
/// component parsing was ~2,000 instructions a stat (callgrind).
fn lstat_at(a: &Anchor, path: &Path) -> Option<io::Result<Stat>> {
    use std::os::fd::AsRawFd;
    let rest = below(a.path.as_os_str().as_bytes(), path.as_os_str().as_bytes())?;
    if rest.len() >= MAX_RELATIVE || rest.contains(&0) {
        return None;
    }
    // Neither the buffer nor the out-struct is zeroed first (~140
    // instructions of `memset` a stat): the name and its NUL are written,
    // and the struct is read only once the call has filled it.
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); MAX_RELATIVE];
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `rest` (shorter than the buffer, no NUL in it) and a NUL are
    // copied into `buf`, which then holds a NUL-terminated name; the
    // descriptor is the anchor's for the duration of the call; `st` is
    // read only after a successful `fstatat` wrote it whole.
    unsafe {
        std::ptr::copy_nonoverlapping(rest.as_ptr(), buf.as_mut_ptr().cast::<u8>(), rest.len());
        buf[rest.len()].write(0);
        if libc::fstatat(a.fd.as_raw_fd(), buf.as_ptr().cast(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) == 0 {
            Some(Ok(Stat::of_raw(st.assume_init_ref())))
        } else {
            Some(Err(io::Error::last_os_error()))
        }
    }
}

/// What follows `dir` in `path` when `path` is `dir`, a `/` and one or more
/// plain names separated by single `/`s: the names, as the kernel would walk
/// them from `dir`.
fn below<'p>(dir: &[u8], path: &'p [u8]) -> Option<&'p [u8]> {
    let rest = path.strip_prefix(dir)?;
    let rest = if dir.ends_with(b"/") { rest } else { rest.strip_prefix(b"/")? };
    let plain = |n: &[u8]| !n.is_empty() && n != b"." && n != b"..";
    (!rest.is_empty() && rest.split(|&b| b == b'/').all(plain)).then_some(rest)
}

/// The data dir this thread holds a handle of, valid or not (tests).
#[cfg(test)]
pub(crate) fn anchored() -> Option<(std::path::PathBuf, bool)> {
    ANCHORED.with_borrow(|a| match a {
        Anchored::Open(h, valid) => Some((h.path.clone(), *valid)),
        _ => None,
    })
}

#[cfg(test)]
mod anchor_tests {
    //! The data dir's handle on real directories: the same answers as the
    //! path, the handle used only while the path names its directory. Each
    //! test runs on its own thread, and the handle is per thread.
    use super::*;
    use std::os::fd::AsRawFd;

    fn state_file(p: &Path, text: &str) {
        fs::write(p, text).unwrap();
        fs::set_permissions(p, fs::Permissions::from_mode(0o600)).unwrap();
    }

    fn data_dir(parent: &Path, name: &str) -> std::path::PathBuf {
        let d = parent.join(name);
        create_private_dir(&d, false).unwrap();
        fs::create_dir(d.join("witness")).unwrap();
        state_file(&d.join("journal"), "a\n");
        state_file(&d.join("witness/c.lock"), "");
        d
    }

    /// A data dir `data` in `parent`, through two questions: its handle open.
    fn data_dir_held(parent: &Path) -> std::path::PathBuf {
        let d = data_dir(parent, "data");
        question(&d);
        question(&d);
        d
    }

    /// One question's check of `d`, as `readpath::asking` makes it.
    fn question(d: &Path) {
        unanchor();
        anchor(d, &fs::metadata(d).unwrap());
    }

    fn by_path(p: &Path) -> io::Result<Stat> {
        fs::symlink_metadata(p).map(|m| Stat::of(&m))
    }

    fn ino(p: &Path) -> u64 {
        lstat(p).unwrap().ino
    }

    #[test]
    fn the_second_question_opens_the_handle_and_every_answer_is_the_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let d = data_dir(tmp.path(), "data");
        std::os::unix::fs::symlink("/dev/null", d.join("link")).unwrap();
        question(&d);
        assert_eq!(anchored(), None, "a first question opens nothing");
        question(&d);
        assert_eq!(anchored(), Some((d.clone(), true)));
        for name in ["journal", "witness/c.lock", "witness", "link"] {
            let p = d.join(name);
            assert_eq!(lstat(&p).unwrap(), by_path(&p).unwrap(), "{name}: device, inode, length, mode, owner");
        }
        let link = lstat(&d.join("link")).unwrap();
        assert_eq!(crate::fsx::Meta::kind(&link), crate::fsx::Kind::Symlink, "not followed");
        let e = lstat(&d.join("missing")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert_eq!(anchored(), Some((d.clone(), false)), "by the path for the rest of the question, still kept");
        question(&d);
        assert_eq!(anchored(), Some((d.clone(), true)), "valid again at the next check");
        unanchor();
        assert_eq!(anchored(), Some((d.clone(), false)), "not valid between questions");
    }

    #[test]
    fn a_data_dir_replaced_between_questions_is_read_by_its_path() {
        let tmp = tempfile::tempdir().unwrap();
        let d = data_dir_held(tmp.path());
        let j = d.join("journal");
        let old = ino(&j);
        fs::rename(&d, tmp.path().join("old")).unwrap();
        data_dir(tmp.path(), "data");
        let new = by_path(&j).unwrap().ino;
        assert_ne!(old, new);
        // Within the question the handle is the directory it checked...
        assert_eq!(ino(&j), old);
        unanchor();
        // ...outside any, and at the next question's check, the path.
        assert_eq!(ino(&j), new, "between questions");
        question(&d);
        assert_eq!(anchored(), None, "another directory at the path: the handle is dropped");
        assert_eq!(ino(&j), new);
        question(&d);
        assert_eq!(anchored(), Some((d.clone(), true)), "the new directory's handle");
        assert_eq!(ino(&j), new);
    }

    #[test]
    fn a_witness_dir_replaced_is_walked_again() {
        let tmp = tempfile::tempdir().unwrap();
        let d = data_dir_held(tmp.path());
        let lock = d.join("witness/c.lock");
        let old = ino(&lock);
        fs::rename(d.join("witness"), d.join("witness.old")).unwrap();
        fs::create_dir(d.join("witness")).unwrap();
        state_file(&lock, "");
        assert_ne!(ino(&lock), old);
        assert_eq!(lstat(&lock).unwrap(), by_path(&lock).unwrap());
        assert_eq!(anchored(), Some((d.clone(), true)), "through the handle");
    }

    #[test]
    fn a_file_missing_through_the_handle_is_answered_by_the_path() {
        let tmp = tempfile::tempdir().unwrap();
        let d = data_dir_held(tmp.path());
        fs::rename(&d, tmp.path().join("old")).unwrap();
        data_dir(tmp.path(), "data");
        state_file(&d.join("only-new"), "x");
        assert_eq!(lstat(&d.join("only-new")).unwrap(), by_path(&d.join("only-new")).unwrap());
        assert_eq!(anchored(), Some((d.clone(), false)));
    }

    #[test]
    fn a_failing_stat_through_the_handle_drops_it_and_the_path_answers() {
        let tmp = tempfile::tempdir().unwrap();
        let d = data_dir_held(tmp.path());
        let p = d.join("journal/x");
        let (e, want) = (lstat(&p).unwrap_err(), by_path(&p).unwrap_err());
        assert_eq!((e.kind(), e.raw_os_error()), (want.kind(), want.raw_os_error()));
        assert_eq!(want.raw_os_error(), Some(libc::ENOTDIR));
        assert_eq!(anchored(), None, "dropped");
        question(&d);
        question(&d);
        assert_eq!(anchored(), Some((d.clone(), true)), "opened again");
    }

    #[test]
    fn a_symlinked_data_dir_is_anchored_at_its_target() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (data_dir(tmp.path(), "a"), data_dir(tmp.path(), "b"));
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let j = link.join("journal");
        question(&link);
        question(&link);
        assert_eq!(anchored(), Some((link.clone(), true)));
        assert_eq!(ino(&j), by_path(&a.join("journal")).unwrap().ino);
        fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&b, &link).unwrap();
        question(&link);
        assert_eq!(anchored(), None, "the link names another directory");
        assert_eq!(ino(&j), by_path(&b.join("journal")).unwrap().ino);
    }

    #[test]
    fn only_plain_names_below_the_handle_go_through_it() {
        let tmp = tempfile::tempdir().unwrap();
        let other = data_dir(tmp.path(), "other");
        let d = data_dir_held(tmp.path());
        let h = ANCHORED.with_borrow(|a| match a {
            Anchored::Open(h, _) => Anchor { path: h.path.clone(), id: h.id, fd: h.fd.try_clone().unwrap() },
            _ => panic!("no handle"),
        });
        assert!(lstat_at(&h, &d.join("journal")).is_some());
        for p in [
            d.clone(),
            d.join("../other/journal"),
            d.join("./journal"),
            other.join("journal"),
            tmp.path().join("data2"),
        ] {
            assert!(lstat_at(&h, &p).is_none(), "{}", p.display());
            assert_eq!(lstat(&p).map_err(|e| e.kind()), by_path(&p).map_err(|e| e.kind()), "{}", p.display());
        }
        for (dir, path, want) in [
            ("/d", "/d/journal", Some("journal")),
            ("/d", "/d/witness/c.lock", Some("witness/c.lock")),
            ("/d/", "/d/journal", Some("journal")),
            ("/d", "/d", None),
            ("/d", "/d/", None),
            ("/d", "/dx/journal", None),
            ("/d", "/d//journal", None),
            ("/d", "/d/./journal", None),
            ("/d", "/d/../journal", None),
            ("/d", "/d/witness/", None),
            ("d", "d/journal", Some("journal")),
        ] {
            assert_eq!(below(dir.as_bytes(), path.as_bytes()), want.map(str::as_bytes), "{dir} {path}");
        }
        let long = d.join("x".repeat(MAX_RELATIVE));
        assert!(lstat_at(&h, &long).is_none(), "too long for the stack buffer");
    }

    #[test]
    fn a_handle_of_another_directory_is_not_kept() {
        // The check found one directory, the open another (the path
        // replaced in between): nothing is anchored, and not tried again.
        let tmp = tempfile::tempdir().unwrap();
        let (d, other) = (data_dir(tmp.path(), "data"), data_dir(tmp.path(), "other"));
        let md = fs::metadata(&other).unwrap();
        anchor(&d, &md);
        anchor(&d, &md);
        assert_eq!(anchored(), None);
        assert!(ANCHORED.with_borrow(|a| matches!(a, Anchored::Failed(..))));
        anchor(&d, &md);
        assert!(ANCHORED.with_borrow(|a| matches!(a, Anchored::Failed(..))), "not tried again");
        question(&d);
        question(&d);
        assert_eq!(anchored(), Some((d.clone(), true)), "the directory itself, once its id is the one checked");
    }

    #[test]
    fn the_handle_names_the_directory_and_is_closed_on_exec() {
        let tmp = tempfile::tempdir().unwrap();
        let d = data_dir_held(tmp.path());
        assert_eq!(anchored(), Some((d.clone(), true)));
        let fd = ANCHORED.with_borrow(|a| match a {
            Anchored::Open(h, _) => h.fd.as_raw_fd(),
            _ => panic!("no handle"),
        });
        // SAFETY: fcntl queries on a descriptor the thread's anchor owns.
        let (fdflags, flags) = unsafe { (libc::fcntl(fd, libc::F_GETFD), libc::fcntl(fd, libc::F_GETFL)) };
        assert_ne!(fdflags & libc::FD_CLOEXEC, 0, "close-on-exec");
        assert_eq!(flags & O_DIR_HANDLE, O_DIR_HANDLE);
        #[cfg(target_os = "linux")]
        assert_eq!(fs::read_link(format!("/proc/self/fd/{fd}")).unwrap(), fs::canonicalize(&d).unwrap());
    }
}
