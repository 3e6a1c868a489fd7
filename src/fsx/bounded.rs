//! The one way leanctx reads a file: opened without blocking (a FIFO opens
//! at once and is then refused), checked on the open handle (`fstat`) to be
//! a regular file of bounded size, read in chunks under a deadline. State
//! files add: no symlink followed, owned by this user, 0600-like
//! ([`super::state_problem`]). Host configs, policies and argument files
//! follow symlinks (dotfile managers link them), but a link to a device is
//! refused before it is opened (opening some devices acts).

use super::{state_problem, sys, untrusted};
use std::fs;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// Time a whole file read may take from its open, whatever the file: the
/// same bound as a hook's stdin.
pub const READ_DEADLINE: Duration = Duration::from_millis(1000);
/// Largest host config (settings.json, hooks.json, config.toml) read.
pub const MAX_CONFIG_BYTES: u64 = 8 << 20;

/// What a file must be to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRule {
    /// Largest size read; a larger file is refused, never cut.
    pub max: u64,
    /// A state file: no symlink followed, this user's, 0600-like.
    pub state: bool,
    /// Time allowed from the open to the end of the read.
    pub deadline: Duration,
}

impl ReadRule {
    /// A state file in the data dir.
    pub const fn state(max: u64) -> ReadRule {
        ReadRule { max, state: true, deadline: READ_DEADLINE }
    }

    /// Any other file: a host config, a policy, an argument file.
    pub const fn any(max: u64) -> ReadRule {
        ReadRule { max, state: false, deadline: READ_DEADLINE }
    }
}

/// Why a file that exists is not read, from its metadata: `None` if it is
/// a regular file within `rule` (owner and mode only for state files).
pub fn file_problem(md: &fs::Metadata, rule: &ReadRule) -> Option<String> {
    if rule.state {
        return state_problem(md, rule.max);
    }
    let ft = md.file_type();
    if !ft.is_file() {
        return Some(format!("is {}, not a regular file", super::state::kind_of(&ft)));
    }
    if md.len() > rule.max {
        return Some(format!("is {} bytes, larger than the {} bytes read", md.len(), rule.max));
    }
    None
}

/// No file there: the path or a parent is missing (a parent that is a file
/// counts as missing too).
pub fn is_absent(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
}

/// The names in the directory `dir`, at most `max`: `Ok(None)` when nothing
/// is there. Never cut: a directory with more entries is an error (the
/// caller cannot know what it missed), and so is anything there that is not
/// a directory, refused at the open without blocking (`opendir` opens with
/// `O_DIRECTORY`, so a FIFO is not opened for reading); a symlink loop fails
/// with `ELOOP`. A symlink to a directory is followed, as [`open_file`]
/// follows one to a file.
pub fn list_dir(dir: &Path, max: usize) -> io::Result<Option<Vec<std::ffi::OsString>>> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut names = Vec::new();
    for e in rd {
        if names.len() == max {
            return Err(untrusted(dir, &format!("holds more than {max} entries")));
        }
        names.push(e?.file_name());
    }
    Ok(Some(names))
}

/// Open `path` under `rule` and check what was opened: `Ok(None)` when
/// nothing is there; an error naming the path when something is there that
/// is not a file `rule` reads.
pub fn open_file(path: &Path, rule: &ReadRule) -> io::Result<Option<(fs::File, fs::Metadata)>> {
    if !rule.state {
        // `stat` first: a symlink to /dev/st0 or a serial port must not even
        // be opened. The check on the handle below is the one that counts
        // (the path may change between the two).
        match fs::metadata(path) {
            Ok(md) => {
                if let Some(p) = file_problem(&md, rule) {
                    return Err(untrusted(path, &p));
                }
            }
            Err(e) if is_absent(&e) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    let opened = if rule.state { sys::open(&sys::state_options(false), path) } else { sys::open_nonblocking(path) };
    let f = match opened {
        Ok(f) => f,
        // A state file's parent is the data dir, checked on its own.
        Err(e) if e.kind() == io::ErrorKind::NotFound || (!rule.state && is_absent(&e)) => return Ok(None),
        Err(e) if rule.state && sys::is_symlink_refusal(&e) => {
            return Err(untrusted(path, "is a symbolic link, not a regular file"));
        }
        Err(e) => return Err(e),
    };
    let md = f.metadata()?;
    match file_problem(&md, rule) {
        Some(p) => Err(untrusted(path, &p)),
        None => Ok(Some((f, md))),
    }
}

/// Read a whole file under `rule` ([`open_file`]): `Ok(None)` when nothing
/// is there; an error if it is not a file `rule` reads, grew past
/// `rule.max` while being read, or took longer than `rule.deadline`.
pub fn read_file(path: &Path, rule: &ReadRule) -> io::Result<Option<Vec<u8>>> {
    let deadline = Instant::now() + rule.deadline;
    let Some((f, md)) = open_file(path, rule)? else { return Ok(None) };
    read_open(path, &f, &md, rule, deadline).map(Some)
}

/// [`read_file`] as UTF-8 text; bytes that are not UTF-8 are an error
/// (`InvalidData`) naming the path.
pub fn read_text(path: &Path, rule: &ReadRule) -> io::Result<Option<String>> {
    match read_file(path, rule)? {
        None => Ok(None),
        Some(b) => String::from_utf8(b)
            .map(Some)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: not UTF-8: {e}", path.display()))),
    }
}

/// Chunk of one read: a deadline is looked at between chunks.
const CHUNK: usize = 64 << 10;

/// Read a file [`open_file`] opened and checked (`md`), whole, under
/// `rule`, keeping the handle (a reader that holds the file open).
pub fn read_opened(path: &Path, f: &fs::File, md: &fs::Metadata, rule: &ReadRule) -> io::Result<Vec<u8>> {
    read_open(path, f, md, rule, Instant::now() + rule.deadline)
}

fn read_open(path: &Path, f: &fs::File, md: &fs::Metadata, rule: &ReadRule, deadline: Instant) -> io::Result<Vec<u8>> {
    let size = md.len().min(rule.max) as usize;
    let limit = rule.max as usize + 1;
    let mut bytes = Vec::new();
    loop {
        // Room for the rest of what `fstat` said and the byte that says it
        // grew (a chunk at most, so the deadline is looked at between
        // chunks); past that, a chunk for whatever it grew by. Only that
        // room is reserved, nothing zeroed: a 64 KiB zero fill a round (and
        // a second that grew the buffer past malloc's mmap threshold) was
        // most of what reading a 250-byte state file cost a hook (200,000
        // instructions, 33 page faults: callgrind, perf stat).
        let room = if bytes.len() <= size { size + 1 - bytes.len() } else { limit - bytes.len() }.min(CHUNK);
        let n = read_once(f, &mut bytes, room)?;
        // A read of 0 is the end; so is a short read that brought the
        // file to the size `fstat` gave: a file that had grown by then
        // would have filled the byte of room past it. Not waiting for the
        // 0 saves a system call per file (the 9 KB witness state took three
        // reads, `std`'s `read_to_end` starting at 8 KiB a read).
        if n == 0 || bytes.len() >= limit || (n < room && bytes.len() == size) {
            break;
        }
        if Instant::now() > deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{} took longer than {} ms to read", path.display(), rule.deadline.as_millis()),
            ));
        }
    }
    if bytes.len() as u64 > rule.max {
        return Err(untrusted(path, &format!("is larger than {} bytes", rule.max)));
    }
    Ok(bytes)
}

/// One `read` of `f` (from its position, again when interrupted) onto the
/// end of `buf`, of at most `room` bytes ([`sys::read_append`]: into spare
/// capacity, nothing zeroed): how many came.
fn read_once(f: &fs::File, buf: &mut Vec<u8>, room: usize) -> io::Result<usize> {
    loop {
        match sys::read_append(f, buf, room) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// Append `want` bytes of `f` from its position to `buf`, or fewer at the
/// end of the file: as one `read` for a regular file that holds them,
/// where `read_to_end` on a `take` starts at 8 KiB a read and doubles (a
/// 77 KB journal took four).
pub fn read_up_to(f: &fs::File, buf: &mut Vec<u8>, want: usize) -> io::Result<usize> {
    let at = buf.len();
    while buf.len() - at < want {
        match read_once(f, buf, want - (buf.len() - at)) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                buf.truncate(at);
                return Err(e);
            }
        }
    }
    Ok(buf.len() - at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_reads_whole_and_a_missing_one_is_none() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        assert!(read_file(&p, &ReadRule::any(10)).unwrap().is_none());
        assert!(read_file(&p.join("under-a-missing"), &ReadRule::any(10)).unwrap().is_none());
        fs::write(&p, vec![b'x'; 200_000]).unwrap();
        assert_eq!(read_file(&p, &ReadRule::any(200_000)).unwrap().unwrap().len(), 200_000);
        let e = read_file(&p, &ReadRule::any(199_999)).unwrap_err().to_string();
        assert!(e.contains("larger than the 199999"), "{e}");
        // A file under a file: absent, not an error.
        assert!(read_file(&p.join("x"), &ReadRule::any(10)).unwrap().is_none());
    }

    #[test]
    fn text_that_is_not_utf8_is_an_error_naming_the_path() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        fs::write(&p, b"\xff\xfe").unwrap();
        let e = read_text(&p, &ReadRule::any(10)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }

    /// A listing is whole or an error, and never blocks: a FIFO, a file and
    /// a symlink loop where the directory should be are errors at once.
    #[test]
    fn a_directory_lists_whole_within_its_bound() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("d");
        assert!(list_dir(&d, 3).unwrap().is_none());
        fs::create_dir(&d).unwrap();
        assert_eq!(list_dir(&d, 3).unwrap().unwrap(), Vec::<std::ffi::OsString>::new());
        for n in ["a", "b", "c"] {
            fs::write(d.join(n), "").unwrap();
        }
        let mut names = list_dir(&d, 3).unwrap().unwrap();
        names.sort();
        assert_eq!(names, ["a", "b", "c"]);
        let e = list_dir(&d, 2).unwrap_err().to_string();
        assert!(e.contains("more than 2 entries"), "{e}");
        assert!(list_dir(&d.join("a"), 3).is_err(), "a file");
        #[cfg(unix)]
        {
            let fifo = t.path().join("fifo");
            assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
            let lp = t.path().join("loop");
            std::os::unix::fs::symlink(&lp, &lp).unwrap();
            for p in [&fifo, &lp] {
                let started = Instant::now();
                assert!(list_dir(p, 3).is_err(), "{p:?}");
                assert!(started.elapsed() < Duration::from_millis(500), "{p:?}");
            }
            let link = t.path().join("link");
            std::os::unix::fs::symlink(&d, &link).unwrap();
            assert_eq!(list_dir(&link, 3).unwrap().unwrap().len(), 3, "a symlink to a directory is followed");
        }
    }

    #[test]
    fn a_directory_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let e = read_file(t.path(), &ReadRule::any(10)).unwrap_err().to_string();
        assert!(e.contains("is a directory, not a regular file"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_and_a_device_are_refused_at_once() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let dev = t.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &dev).unwrap();
        for (p, what) in [(&fifo, "a FIFO"), (&dev, "a device")] {
            for rule in [ReadRule::any(1 << 20), ReadRule::state(1 << 20)] {
                let started = Instant::now();
                let e = read_file(p, &rule).unwrap_err().to_string();
                assert!(started.elapsed() < Duration::from_millis(500), "{p:?} {rule:?}");
                let want = if rule.state && p == &dev { "a symbolic link" } else { what };
                assert!(e.contains(want), "{p:?} {rule:?}: {e}");
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_followed_except_for_state() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        fs::write(&real, "x").unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(read_file(&link, &ReadRule::any(10)).unwrap().unwrap(), b"x");
        let e = read_file(&link, &ReadRule::state(10)).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
    }

    #[test]
    fn a_read_takes_the_room_the_file_needs() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        fs::write(&p, vec![b'x'; 250]).unwrap();
        let b = read_file(&p, &ReadRule::any(1 << 20)).unwrap().unwrap();
        // Not a 64 KiB chunk (or two) per read: a hook reads several small
        // files, and keeps some of them.
        assert_eq!(b.len(), 250);
        assert!(b.capacity() < 4096, "{}", b.capacity());
        // Several chunks, whole, and a file that grew past what was stat'ed.
        let big: Vec<u8> = (0..3 * CHUNK + 7).map(|i| (i % 251) as u8).collect();
        fs::write(&p, &big).unwrap();
        assert_eq!(read_file(&p, &ReadRule::any(1 << 20)).unwrap().unwrap(), big);
        let append = |n: usize| {
            use std::io::Write as _;
            fs::OpenOptions::new().append(true).open(&p).unwrap().write_all(&vec![1; n]).unwrap();
        };
        let (f, md) = open_file(&p, &ReadRule::any(1 << 20)).unwrap().unwrap();
        append(100);
        assert_eq!(read_opened(&p, &f, &md, &ReadRule::any(1 << 20)).unwrap().len(), big.len() + 100);
        let rule = ReadRule::any(fs::metadata(&p).unwrap().len() + 50);
        let (f, md) = open_file(&p, &rule).unwrap().unwrap();
        append(100);
        let e = read_opened(&p, &f, &md, &rule).unwrap_err().to_string();
        assert!(e.contains("is larger than"), "{e}");
    }

    /// The read sized from `fstat` stops at a short read only at that
    /// size: a file that shrank, grew by the byte of room, or grew past a
    /// chunk after the `fstat` is still read whole, as it is at the read.
    #[test]
    fn a_file_changed_after_its_fstat_reads_as_it_is() {
        use std::io::Write as _;
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        let rule = ReadRule::any(1 << 20);
        for (was, now) in [(0, 0), (0, 1), (10, 0), (10, 3), (10, 11), (10, 12), (100, CHUNK + 5), (CHUNK, CHUNK + 1)] {
            fs::write(&p, vec![b'a'; was]).unwrap();
            let (f, md) = open_file(&p, &rule).unwrap().unwrap();
            let want: Vec<u8> = (0..now).map(|i| (i % 251) as u8).collect();
            // Rewritten in place (same inode), as an append or a truncation would.
            let mut w = fs::OpenOptions::new().write(true).truncate(true).open(&p).unwrap();
            w.write_all(&want).unwrap();
            drop(w);
            assert_eq!(read_opened(&p, &f, &md, &rule).unwrap(), want, "{was} -> {now}");
        }
    }

    #[test]
    fn read_up_to_takes_what_is_asked_or_the_rest() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        let all: Vec<u8> = (0..3 * CHUNK + 7).map(|i| (i % 251) as u8).collect();
        fs::write(&p, &all).unwrap();
        let f = fs::File::open(&p).unwrap();
        let mut buf = b"kept".to_vec();
        assert_eq!(read_up_to(&f, &mut buf, 10).unwrap(), 10);
        assert_eq!(read_up_to(&f, &mut buf, all.len()).unwrap(), all.len() - 10, "the rest, at the end");
        assert_eq!(read_up_to(&f, &mut buf, 5).unwrap(), 0);
        assert_eq!(&buf[..4], b"kept");
        assert_eq!(buf[4..], all[..]);
    }

    #[test]
    fn a_deadline_already_spent_stops_the_read() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        fs::write(&p, vec![0u8; 3 * CHUNK]).unwrap();
        let rule = ReadRule { deadline: Duration::ZERO, ..ReadRule::any(1 << 20) };
        let e = read_file(&p, &rule).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(read_file(&p, &ReadRule::any(1 << 20)).unwrap().is_some());
    }
}
